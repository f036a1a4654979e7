"""Forward, backward and recompute FLOPs of training, by component; calc_training_time.py's MFU and
HFU count exactly these."""

from ..model.formulas import (_causal_pairs_capped, _sum_floor_capped, attention_core_flops,
    attention_linear_flops_per_token, indexer_linear_flops_per_token, mlp_flops_per_token,
    query_key_pairs)
from ..model.kinds import layer_groups


SECONDS_PER_DAY = 86400.0


# --- formulas (forward FLOPs; 2 FLOPs per multiply-accumulate, matmuls only) -------------------
# One function per kind and quantity lives in model/formulas.py (attention_linear_flops_per_token,
# query_key_pairs, attention_core_flops, decode_keys_read, mlp_flops_per_token); the functions below
# sum them over one layer's blocks, then over the layer list, once per distinct kind (layer_groups).

LINEAR_KEYS = ("attention_projections", "indexer_projections", "dense_mlp", "routed_experts", "shared_experts", "router",
               "per_layer_inputs", "hyper_connections")
CORE_KEYS = ("attention_scores", "attention_context", "indexer_scores", "state_core")
# the s-squared part selective recompute recomputes (a linear mixer's core grows with s, not s^2)
SCORE_KEYS = ("attention_scores", "attention_context", "indexer_scores")


def layer_linear_flops_per_token(layer, *, h):
    """Forward FLOPs per token of one layer's matmuls other than the attention core, by component:
    its attention projections, a lightning indexer's projections and its MLP blocks (dense, or MoE:
    top-k routed experts, in expectation with zero-computation experts; shared experts; router)."""
    out = dict.fromkeys(LINEAR_KEYS, 0)
    for attn in layer["attention"]:
        indexer = indexer_linear_flops_per_token(attn, h=h)
        out["attention_projections"] += attention_linear_flops_per_token(attn, h=h) - indexer
        out["indexer_projections"] += indexer
    for mlp in layer["mlp"]:
        for k, v in mlp_flops_per_token(mlp, h=h).items():
            out[k] += v
    if layer.get("extra_flops") is not None:  # DeepSeek-V4's hyper-connections (their own count)
        out["hyper_connections"] = layer["extra_flops"]
    else:
        out["per_layer_inputs"] = 2 * layer["extra_params"] + layer.get("weightless_flops", 0)  # Gemma 4's per-layer
        # input gate/projection (Gemma 3n: + AltUp's coefficient product and its router's second run)
    return out


def layer_core_flops(layer, *, seq_len, attention):
    """Forward FLOPs of one layer's attention core over one sequence of s tokens: scores, context
    and indexer scores over the query-key pairs of each attention block's span under the
    convention (`full`: all s x s, masked or not; `causal`: the pairs a masked kernel executes)."""
    out = dict.fromkeys(CORE_KEYS, 0)
    for attn in layer["attention"]:
        pairs = query_key_pairs(attn, seq_len=seq_len, attention=attention)
        for k, v in attention_core_flops(attn, pairs=pairs).items():
            out[k] += v
    return out


def decode_keys_read_sum(attn, *, first_context, last_context):
    """Sum of decode_keys_read(attn, context=c) over c = first..last, {"core", "indexer"}, in closed
    form (a 128k-token generation is a handful of integer operations, not 128k calls): sum min(c,
    cap) is a capped triangle; a chunked layer repeats the triangle of its chunk; the indexer's
    top-k caps the span's keys, and the indexer itself reads every key. A linear mixer: one
    recurrent step per context, last - first + 1 of them. DeepSeek-V4: the window's capped
    triangle plus floor(c / m) compressed entries per step (at most top-k in the core)."""
    if attn["span"] == "state":
        return {"core": 0, "indexer": 0, "state_steps": max(last_context - first_context + 1, 0)}
    if attn["kind"] == "dsv4":
        def pre(n):
            if n <= 0:
                return {"core": 0, "indexer": 0}
            m, csa = attn["compress"], attn["compress_kind"] == "csa"
            comp = _sum_floor_capped(n, m, attn["c_index_topk"] if csa else None) if m else 0
            return {"core": _causal_pairs_capped(n, attn["window"]) + comp,
                    "indexer": _sum_floor_capped(n, m) if csa else 0}
        hi, lo = pre(last_context), pre(first_context - 1)
        return {k: hi[k] - lo[k] for k in hi}

    def prefix(n):  # sum over c = 1..n
        if n <= 0:
            return {"core": 0, "indexer": 0}
        K = attn["index_topk"]
        if attn["span"] == "chunked":
            C = attn["chunk"]
            cap = min(C, K) if K else C
            q, r = divmod(n, C)
            core = q * _causal_pairs_capped(C, cap) + _causal_pairs_capped(r, cap)
        else:
            cap = attn["window"] if attn["span"] == "sliding" else n
            core = _causal_pairs_capped(n, min(cap, K) if K else cap)
        P = attn.get("index_kpool", 0)  # a pooled indexer scores the complete pools (GLM-5-Next)
        return {"core": core, "indexer": (_sum_floor_capped(n, P) if P else n * (n + 1) // 2) if K else 0}
    hi, lo = prefix(last_context), prefix(first_context - 1)
    return {k: hi[k] - lo[k] for k in hi}


def layers_linear_flops_per_token(spec):
    """Forward FLOPs per token of all L layers' matmuls other than the attention core, by
    component: each distinct layer kind's count x its per-token FLOPs (MoE only where a layer is)."""
    h, out = spec["hidden_size"], dict.fromkeys(LINEAR_KEYS, 0)
    for layer, count, _ in layer_groups(spec):
        for k, v in layer_linear_flops_per_token(layer, h=h).items():
            out[k] += count * v
    return out


def output_head_flops_per_token(spec):
    """Forward FLOPs of the output head per position: 2 p V (p = h, or OPT-350m's word_embed_proj_dim,
    whose project_in/project_out matmuls add 2 x 2 p h), and of matmuls every token's embedding
    runs through outside the layers (Gemma 4's per-layer input projection, h x L p; DeepSeek-V4's
    hyper-connection head, hc^2 h); 2 FLOPs per weight per token (Kaplan et al. 2020 sec. 2.1).
    The embedding lookup is not a matmul."""
    V, h, p = spec["vocab_size"], spec["hidden_size"], spec["word_embed_proj_dim"]
    return {"output_head": 2 * p * V, "embedding_projection": (4 * p * h if p != h else 0)
            + 2 * spec["input_matmul_params"]}


def token_matmul_flops(spec):
    """Forward FLOPs of one token's matmuls that do not grow with context: every layer's
    projections and MLP, and the output head (plus any embedding projections) once."""
    return sum(layers_linear_flops_per_token(spec).values()) + sum(output_head_flops_per_token(spec).values())


def sequence_forward_flops(spec, *, seq_len, attention, head_positions=None):
    """Forward FLOPs of one sequence of s tokens, by component: every matmul of the L layers, the
    attention core over each layer's query-key pairs under the convention (indexer scores on their
    own line), and the output head at `head_positions` positions (default: all s, as in training
    and in FlopCounterMode's count of an HF forward)."""
    s, h = seq_len, spec["hidden_size"]
    out = dict.fromkeys(LINEAR_KEYS + CORE_KEYS, 0)
    for layer, count, _ in layer_groups(spec):
        for k, v in layer_linear_flops_per_token(layer, h=h).items():
            out[k] += count * s * v
        for k, v in layer_core_flops(layer, seq_len=s, attention=attention).items():
            out[k] += count * v
    n_head = s if head_positions is None else head_positions
    out.update({k: n_head * v if k == "output_head" else s * v
                for k, v in output_head_flops_per_token(spec).items()})
    return out


def backward_flops(fwd):
    """Backward FLOPs from the forward breakdown: 2 x forward, a grad-input and a grad-weight matmul
    per forward matmul (Narayanan et al. 2021 sec. 5.1). A lightning indexer is trained apart from
    the model, from its own KL loss on an input detached from the graph (DeepSeek-AI 2025,
    DeepSeek-V3.2 sec. 2.1): its projections take weight gradients only (1 x forward), its scores
    (a product of two activations) both (2 x). transformers runs the indexer under no_grad (0 x):
    its backward is ours less these two terms, tests/test_calc_transformer_flops.py."""
    indexer = fwd.get("indexer_projections", 0) + 2 * fwd.get("indexer_scores", 0)
    return 2 * (sum(fwd.values()) - fwd.get("indexer_projections", 0) - fwd.get("indexer_scores", 0)) + indexer


def recompute_flops(fwd, *, recompute):
    """Forward FLOPs done again in the backward pass: none; selective = the attention core (scores,
    context and any indexer scores: the s-squared part whose activations selective recompute
    avoids storing; Korthikanti et al. 2022 sec. 5, the 4 B s^2 h per layer of their sec. 6.3 text);
    full = every layer's forward, not the output head (Narayanan et al. 2021 eq. 3: head x3, layers x4).
    A linear mixer's core (state_core) is linear in s and is not part of selective recompute."""
    if recompute == "none":
        return 0
    if recompute == "selective":
        return sum(fwd.get(k, 0) for k in SCORE_KEYS)
    return sum(v for k, v in fwd.items() if k not in ("output_head", "embedding_projection"))
