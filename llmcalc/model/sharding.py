"""What one tensor-parallel rank holds of an attention or MLP block (kv heads replicated when
fewer than tp), as the per-kind functions take it."""


def _kv_heads_per_rank(kv, tp):
    """kv heads one tensor-parallel rank holds: kv/tp, or 1 replicated head when kv < tp
    (Megatron-LM and vLLM replicate kv heads when there are fewer than tp)."""
    return kv // tp if kv >= tp else 1


def attention_on_rank(attn, *, tp):
    """The share of one attention block that one tensor-parallel rank holds, as an attention dict
    the block's per-kind functions take: a/tp query heads and kv/tp kv heads (one replicated head
    when kv < tp). What is not per head stays whole on every rank: MLA's down-projections and their
    norms, the output bias, and a lightning indexer (DeepSeek-V3.2's reference model.py builds it
    from plain, replicated Linear layers so every rank picks the same top-k keys)."""
    if tp == 1:
        return attn
    return dict(attn, heads=attn["heads"] // tp, kv_heads=_kv_heads_per_rank(attn["kv_heads"], tp))


def mlp_on_rank(mlp, *, tp, etp):
    """The share of one MLP block that one rank holds, as an MLP dict: a dense MLP and the shared
    experts split their width over tp (Megatron column-parallel input matrices, row-parallel output
    matrix, its bias replicated), each routed expert its width over etp; the router stays whole.
    The routed experts themselves are split over ep by layer_params_per_rank."""
    if mlp["kind"] == "dense":
        return mlp if tp == 1 else dict(mlp, width=mlp["width"] // tp)
    return dict(mlp, width=mlp["width"] // etp, shared_width=mlp["shared_width"] // tp)
