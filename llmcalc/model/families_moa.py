"""Family readers for decoders whose attention itself is routed: JetMoE's mixture of attention
heads (transformers' modeling_jetmoe; Shen et al. 2024, arXiv 2404.07413). The attention-expert
formulas are in formulas.py (attention_expert_params, attention_inactive_params); each reader says
what its modeling file builds, checked against the meta-device build (tests/test_all_types.py)."""

from .families_more import _llama


def _read_jetmoe(r, s, ll, notes, warnings):
    """JetMoE (modeling_jetmoe): mixture of attention heads (MoA) and MoE MLPs on every layer. The
    attention's E = num_local_experts experts each project q (h -> kv d) and o (kv d -> h); a token
    runs num_experts_per_tok = k of them (a = k kv query heads of d = kv_channels over one shared
    k/v projection h -> 2 kv d, K/V repeated k times); the MLP's E gated experts of
    intermediate_size; a router h x E and an output bias h in each."""
    # absent or null: JetMoeConfig's defaults (tests/fixtures/all_types/jetmoe.json)
    kv, d = r.int("num_key_value_heads", default=16), r.int("kv_channels", default=128)
    E = r.int("num_local_experts", default=8)
    k = r.int("num_experts_per_tok", default=2, hi=E)
    a = s["num_attention_heads"]
    if a != k * kv:
        r.fail("num_attention_heads", f"must be num_experts_per_tok x num_key_value_heads = {k * kv} "
               "(JetMoE's query heads are the k chosen experts' kv heads)", a)
    _llama(r, s, ll, notes, warnings, "llama", num_kv_heads=kv, head_dim=d, qkv_bias=False, attn_out_bias=False,
           mlp_bias=False, num_mlp_linears=3, attn_extra_weights=2 * s["hidden_size"])
    L = s["num_layers"]
    s.update(moe=True, num_experts=E, topk=k, moe_ffn_hidden_size=r.int("intermediate_size", default=5632),
             moe_layer_set=list(range(L)),
             layer_overrides={i: {"attention": {"attn_experts": E, "attn_topk": k}} for i in range(L)})
    r.used.update(("activation_function", "aux_loss_coef"))


MOA_READERS = {"jetmoe": _read_jetmoe}
