"""Per-kind formulas: for each attention and MLP kind, its parameters, matmul FLOPs per token,
query-key pairs and core FLOPs, keys read in decode, KV cache and state elements; param_breakdown
sums them over the layer list. Every tool's numbers come from these."""

from .kinds import attention_kind, layer_groups, mlp_kind


# --- per-kind formulas ---------------------------------------------------------------------------

def norm_params(*, width, norm):
    """Weights of one norm over `width` features: LayerNorm has gain and bias (2 w), RMSNorm a gain
    (w), a non-affine norm none (Ba et al. 2016; Zhang & Sennrich 2019)."""
    return {"layernorm": 2 * width, "rmsnorm": width, "none": 0}[norm]


def indexer_params(attn, *, h):
    """DeepSeek-V3.2's lightning indexer (DeepSeek-AI 2025, sec. 2.1), as transformers builds it:
    q from the query latent (r_q -> H_I d_I), one shared key head (h -> d_I) with a LayerNorm
    (2 d_I), and per-head weights (h -> H_I). Mistral Large 4's adds a LayerNorm on its input
    (2 h) and, with per-head position scaling, a scale and a bias per indexer head (2 H_I)
    (transformers' modeling_mistral_large4). GLM-5-Next's pools its keys over index_kpool = P
    positions: a pooling gate h -> d_I and a position table P x d_I (modeling_glm5_next)."""
    H, dI = attn["index_heads"], attn["index_head_dim"]
    if not attn["index_topk"] or not H:
        return 0
    q_in = attn["q_lora_rank"] or h
    extra = 2 * h * attn["indexer_input_norm"] + 2 * H * attn["position_scaling"]  # Mistral Large 4
    P = attn.get("index_kpool", 0)
    return q_in * H * dI + h * dI + 2 * dI + h * H + extra + (h * dI + P * dI if P else 0)


def mixer_widths(attn):
    """(in_proj output width, out_proj input width, conv channels) of a linear mixer. Gated
    DeltaNet: q, k, v, z, beta, a = 2 H_k d_k + 2 H_v d_v + 2 H_v; H_v d_v; 2 H_k d_k + H_v d_v.
    Mamba-2 (Dao & Gu 2024, arXiv 2405.21060 sec. 7; heads H of P, G groups of state N): z, x,
    B, C, dt = 2 H P + 2 G N + H; H P; H P + 2 G N. Mamba-1 (Gu & Dao 2023, arXiv 2312.00752;
    E inner channels, "heads" here): x, z = 2 E; E; E. A short convolution (LFM2/3; D channels):
    B, C, x = 3 D; D; D. Kimi Delta Attention (KDA; H heads of d, D = H d): q, k, v, the low-rank
    inputs of the decay and the output gate, beta = 3 D + 2 d + H; D; 3 D. Lightning attention
    (MiniMax-01, arXiv 2501.08313; H heads of d, D = H d): q, k, v and the sigmoid output gate from
    the layer input = 4 D; D; no conv. Griffin's recurrent block (De et al. 2024, arXiv 2402.19427
    sec. 2.4; RecurrentGemma; W = lru_width): x and gate branches 2 W; W; W. RWKV-4 time mixing (Peng et al. 2023, arXiv 2305.13048; D =
    attention_hidden_size): key, value, receptance = 3 D; D; no conv."""
    if attn["kind"] == "lightning":
        D = attn["heads"] * attn["head_dim"]
        return 4 * D, D, 0
    if attn["kind"] == "mlstm":  # q, k (H d_k each), v and the output gate (H d_v each), input and forget gates
        H, dk, dv = attn["heads"], attn["head_dim"], attn["v_head_dim"]
        return 2 * H * dk + 2 * H * dv + 2 * H, H * dv, 0
    if attn["kind"] == "rwkv":  # RWKV-4 time mixing: key, value, receptance (D each); output D -> h
        return 3 * attn["heads"], attn["heads"], 0
    if attn["kind"] == "rglru":  # Griffin's recurrent block: x and gate branches (W each); W -> h; conv over x
        return 2 * attn["heads"], attn["heads"], attn["heads"]
    if attn["kind"] == "kda":  # q, k, v (3 D), the decay's and the gate's low-rank inputs (2 d), beta
        D = attn["heads"] * attn["head_dim"]  # (full-rank decay and gate, Bailing: 2 D)
        r = D if attn.get("full_rank_gates") else attn["head_dim"]
        return 3 * D + 2 * r + attn["heads"], D, 3 * D
    if attn["kind"] in ("mamba1", "shortconv"):
        E = attn["heads"]
        return (2 if attn["kind"] == "mamba1" else 3) * E, E, E
    if attn["kind"] == "mamba2":
        d_in, gn = attn["heads"] * attn["head_dim"], attn["kv_heads"] * attn["state_size"]
        return 2 * d_in + 2 * gn + attn["heads"], d_in, d_in + 2 * gn
    Hk, Hv, dk, dv = attn["kv_heads"], attn["heads"], attn["head_dim"], attn["v_head_dim"]
    return 2 * Hk * dk + 2 * Hv * dv + 2 * Hv, Hv * dv, 2 * Hk * dk + Hv * dv


def linear_mixer_params(attn, *, h):
    """A linear mixer's weights, by kind (Mamba-2 below). One Gated DeltaNet mixer's weights (Yang et al. 2024, arXiv 2412.06464), as transformers'
    Qwen3-Next/Qwen3.5 build it: with H_k key heads of d_k and H_v value heads of d_v, an input
    projection to q, k (H_k d_k each), v and the output gate z (H_v d_v each) and per value head
    beta and the decay's a (h x (2 H_k d_k + 2 H_v d_v + 2 H_v)); a depthwise causal conv of K taps
    over q, k, v (no bias); per value head dt_bias and A_log; a gated RMSNorm over d_v shared by the
    heads; out_proj H_v d_v x h. Mamba-2 as transformers builds it (NemotronH, GraniteMoeHybrid,
    FalconH1): in_proj h x (2 d_in + 2 G N + H) (+ bias), a depthwise conv of K taps over x, B, C
    (+ bias), per head dt_bias, A_log and D, a gated RMSNorm over d_in where the family has one,
    out_proj d_in x h (+ bias). Mamba-1 as transformers' Jamba builds it: in_proj h x 2E, a conv of
    K taps (+ bias), x_proj E x (R + 2N) to dt's rank-R input and B, C, dt_proj R x E with a bias,
    A_log E x N, D, out_proj E x h, and Jamba's RMSNorms on dt, B and C (R + 2N). A short
    convolution (LFM3): in_proj h x 3h, a depthwise conv of K taps, out_proj h x h, biases on all
    three with conv_bias. KDA as transformers' Kimi Linear builds it (Kimi Team 2025, arXiv
    2510.26692): q, k, v projections, one depthwise conv of K taps over q, k, v (no bias), a low-rank
    per-channel decay (h -> d -> D, dt_bias D, A_log per head), beta per head, a low-rank sigmoid
    output gate (h -> d -> D), a gated RMSNorm over d shared by the heads, o_proj D x h."""
    w_in, w_out, conv_dim = mixer_widths(attn)
    K = attn["conv_kernel"]
    if attn["kind"] == "lightning":  # + the RMSNorm over the D-wide output (MiniMaxLightningAttention)
        return h * w_in + w_out * h + w_out
    if attn["kind"] == "mlstm":  # + the gates' biases (2 H), the per-head norm's weight (v), use_bias's biases
        b = attn["mixer_bias"]
        return h * w_in + 2 * attn["heads"] + w_out + w_out * h + b * (w_in - 2 * attn["heads"] + w_out + h)
    if attn["kind"] == "rwkv":  # + time_decay and time_first (D each), the three time_mix vectors (h each)
        return h * w_in + w_out * h + 2 * w_out + 3 * h
    if attn["kind"] == "rglru":  # biases on x, gate, out and conv; the RG-LRU's block-diagonal input and
        W, G = attn["heads"], attn["gate_blocks"]  # recurrence gates (G blocks of W/G, + biases) and its a
        return h * w_in + w_in + conv_dim * K + conv_dim + w_out * h + h + 2 * (W * W // G + W) + W
    if attn["kind"] == "shortconv":
        return h * w_in + conv_dim * K + w_out * h + attn["conv_bias"] * (w_in + conv_dim + h)
    if attn["kind"] == "kda":  # + the decay's and gate's d -> D up-projections, dt_bias D, A_log H, norm d
        H, d = attn["heads"], attn["head_dim"]
        ups = 0 if attn.get("full_rank_gates") else 2 * d * H * d
        return h * w_in + ups + conv_dim * K + H * d + H + d + w_out * h
    if attn["kind"] == "mamba1":
        E, R, N = attn["heads"], attn["dt_rank"], attn["state_size"]
        return (h * w_in + attn["in_bias"] * w_in + conv_dim * K + attn["conv_bias"] * conv_dim
                + E * (R + 2 * N) + R * E + E + E * N + E + w_out * h + attn["mixer_out_bias"] * h
                + attn["dt_norms"] * (R + 2 * N))
    if attn["kind"] == "mamba2":
        return (h * w_in + attn["in_bias"] * w_in + conv_dim * K + attn["conv_bias"] * conv_dim
                + 3 * attn["heads"] + attn["gated_norm"] * w_out + w_out * h + attn["mixer_out_bias"] * h)
    Hv, dv = attn["heads"], attn["v_head_dim"]
    return h * w_in + conv_dim * K + 2 * Hv + dv + w_out * h


def dsv4_attention_params(attn, *, h):
    """One DeepSeek-V4 attention block's weights, as transformers 5.23's modeling_deepseek_v4 builds
    it (verified on the meta device, tests/test_layer_families.py): a sink logit per head,
    q through a rank-r_q bottleneck with its norm (the per-head q norm has no weights), one shared
    K = V head (h -> d) with its norm, the output through o_groups grouped low-rank projections
    (a d -> r_o per group, then g r_o -> h), plus the layer's compressor: kv and gate projections
    (h -> d each; 2 d each with the overlapping windows of compressed sparse attention), a
    position bias per slot of its window and a norm; and for compressed sparse attention a
    lightning indexer over the compressed keys (its own compressor at width d_I, q from the query
    latent r_q -> H_I d_I, per-head weights h -> H_I)."""
    a, d, rq = attn["heads"], attn["head_dim"], attn["q_lora_rank"]
    g, ro, m = attn["o_groups"], attn["o_lora_rank"], attn["compress"]
    base = a + h * rq + rq + rq * a * d + h * d + d + a * d * ro + g * ro * h
    if attn["compress_kind"] == "hca":
        return base + 2 * h * d + m * d + d
    if attn["compress_kind"] == "csa":
        HI, dI = attn["c_index_heads"], attn["c_index_head_dim"]
        return (base + 4 * h * d + 2 * m * d + d
                + 4 * h * dI + 2 * m * dI + dI + rq * HI * dI + h * HI)
    return base


def dsv4_non_matmul_params(attn):
    """The weights of a DeepSeek-V4 attention block that no token multiplies through: sinks, norms
    and the compressors' position biases."""
    a, d, rq, m = attn["heads"], attn["head_dim"], attn["q_lora_rank"], attn["compress"]
    out = a + rq + d
    if attn["compress_kind"] == "hca":
        out += m * d + d
    if attn["compress_kind"] == "csa":
        dI = attn["c_index_head_dim"]
        out += 2 * m * d + d + 2 * m * dI + dI
    return out


def mla_q_macs_per_token(attn, *, h):
    """Multiply-adds per token of MLA's query path (DeepSeek-V2 sec. 2.1): q directly from h
    (h x a d_qk) or through the rank-r_q bottleneck (h x r_q, then r_q x a d_qk). A.X K2
    (transformers' modeling_axk2 q_gate_proj) reads [norm(c_q), c_q], 2 r_q wide
    ("q_latent_concat"), and with an elementwise output gate also writes the gate (a d_v)."""
    a, r_q = attn["heads"], attn["q_lora_rank"]
    d_qk = attn["qk_nope_head_dim"] + attn["qk_rope_head_dim"]
    out = a * (d_qk + attn["v_head_dim"] * (attn["output_gate"] == "elementwise"))
    if not r_q:
        return h * out
    return h * r_q + r_q * (2 if attn.get("q_latent_concat") else 1) * out


def attention_params(attn, *, h):
    """One attention block's weights. MHA/GQA/MQA: q (h x a d; twice as wide with an elementwise
    output gate, Qwen3-Next), k and v (h x kv d; k alone when K = V, none on a layer that reuses
    another's K/V, Gemma 4), o (a d x h), optional biases, q/k norms (per head, d each; or over all
    heads; Llama 4's L2 norm has no weights), a sink logit per head (gpt-oss), a per-head sigmoid
    output gate h -> a (LFM3's g_proj, "headwise"). MLA (DeepSeek-V2 sec. 2.1): q
    directly or via a rank-r_q bottleneck with a norm, a joint kv down-projection to r_kv + d_rope
    with a norm (none on a layer that reuses an earlier layer's latent), an up-projection to
    a (d_nope + d_v), and o (a d_v x h); a learned scale and bias per head with position scaling
    (Mistral Large 4); plus any indexer. extra_weights: a family's non-matmul weights in the block
    (DiffLlama's lambdas, BitNet's norm before o_proj). in_width: the width q, k and v read (2 h in
    Zamba's shared block); tied: the weights belong to a block an earlier layer holds (0 here)."""
    if attn["span"] == "state":
        return linear_mixer_params(attn, h=h)
    if attn["kind"] == "dsv4":
        return dsv4_attention_params(attn, h=h)
    a, kv, d, nm = attn["heads"], attn["kv_heads"], attn["head_dim"], attn["norm"]
    qkv_b, o_b = attn["qkv_bias"], attn["out_bias"]
    if attn["kind"] == "mla":
        r_q, r_kv = attn["q_lora_rank"], attn["kv_lora_rank"]
        d_nope, d_rope, d_v = attn["qk_nope_head_dim"], attn["qk_rope_head_dim"], attn["v_head_dim"]
        q = mla_q_macs_per_token(attn, h=h) + (qkv_b * r_q + norm_params(width=r_q, norm=nm) if r_q else 0)
        kv_down = 0 if attn["kv_shared"] else (h * (r_kv + d_rope) + qkv_b * (r_kv + d_rope)
                                                + norm_params(width=r_kv, norm=nm))
        kv_up = r_kv * a * (d_nope + d_v)
        return (q + kv_down + kv_up + a * d_v * h + o_b * h + a * attn["sinks"] + 2 * a * attn["position_scaling"]
                + h * a * (attn["output_gate"] == "headwise")  # Bailing's per-head gate on MLA
                + attn.get("extra_weights", 0)
                + indexer_params(attn, h=h))
    q_out = a * d * (2 if attn["output_gate"] == "elementwise" else 1)
    gate = a * (attn["output_gate"] == "headwise")  # LFM3's g_proj: h -> a, no bias
    dv = attn.get("v_dim", d)  # value heads narrower than key heads (MiMo-V2-Flash)
    kv_out = kv * (d + dv if attn["kv_proj"] == 2 else d * attn["kv_proj"])
    has_k = attn["kv_proj"] > 0  # a layer that reuses another's K/V has no k norm either
    qk = {"none": 0, "l2": 0, "head": d * (1 + has_k), "full": (a + kv * has_k) * d}[attn["qk_norm"]]
    if attn.get("tied"):  # a block shared with an earlier layer (Zamba): its weights counted there
        return 0
    h_in = attn.get("in_width", h)  # Zamba's shared attention reads [hidden, embedding], 2 h wide
    return (h_in * (q_out + kv_out + gate) + qkv_b * (q_out + kv_out) + a * dv * h + o_b * h
            + attention_expert_params(attn, qo=h_in * q_out + a * dv * h, h=h)
            + norm_params(width=qk, norm=nm) + a * attn["sinks"] + attn.get("extra_weights", 0))


def attention_expert_params(attn, *, qo, h):
    """Mixture of attention heads (JetMoE's MoA, Shen et al. 2024, arXiv 2404.07413 sec. 2.2, as
    transformers' JetMoeMoA builds it): E experts, each a query projection h -> kv d and an output
    projection kv d -> h, k of them per token (a = k kv query heads over the shared K/V), and a
    router h x E. qo: the q and o weights of the k experts a token runs; returns the weights beyond
    them (the other E - k experts and the router); 0 without attention experts."""
    E, k = attn.get("attn_experts", 0), attn.get("attn_topk", 0)
    if not E:
        return 0
    return qo * (E - k) // k + h * E


def attention_inactive_params(attn, *, h):
    """The attention-expert weights a token does not run: (E - k) experts' q and o (MoA), i.e.
    attention_expert_params less its router; 0 else."""
    E = attn.get("attn_experts", 0)
    if not E or attn["span"] == "state" or attn["kind"] != "mha":
        return 0
    a, d = attn["heads"], attn["head_dim"]
    return attention_expert_params(attn, qo=h * a * d + a * attn.get("v_dim", d) * h, h=h) - h * E


def mlp_params(*, h, f, num_linears, bias):
    """One MLP: num_linears matrices of h x f (2 for GELU; 3 for gated GLU variants, Shazeer 2020),
    plus biases: f per input projection and h on the output projection."""
    return num_linears * h * f + (bias and (num_linears - 1) * f + h)


def mlp_block_params(mlp, *, h):
    """One MLP block by part. Dense: mlp_params. MoE (Shazeer et al. 2017; DeepSeekMoE, Dai et al.
    2024): E routed experts of width f_e (biases if the family has them, gpt-oss), shared experts
    as one MLP of their total width (+ an h -> 1 gate, Qwen-MoE), router h x E (+ E bias where it
    is a parameter; + router_extra, Gemma 4's router scale h and per-expert scale E, transformers'
    Gemma4TextRouter). Zero-computation experts (LongCat-Flash) have no weights."""
    if mlp.get("tied"):  # a block shared with an earlier layer (Zamba): its weights counted there
        return {"dense": 0, "routed_experts": 0, "one_expert": 0, "shared_experts": 0, "router": 0}
    if mlp["kind"] == "dense":  # + a learned activation's scalars (Apertus' xIELU: 2)
        return {"dense": mlp_params(h=h, f=mlp["width"], num_linears=mlp["linears"], bias=mlp["bias"])
                + mlp.get("act_params", 0),
                "routed_experts": 0, "one_expert": 0, "shared_experts": 0, "router": 0}
    one = mlp_params(h=h, f=mlp["width"], num_linears=mlp["linears"], bias=mlp["bias"])
    f_sh = mlp["shared_width"]
    shared = mlp_params(h=h, f=f_sh, num_linears=mlp["linears"], bias=mlp["shared_bias"]) if f_sh else 0
    E = mlp["num_experts"]
    return {"dense": 0, "routed_experts": E * one, "one_expert": one,
            "shared_experts": shared + h * bool(mlp["shared_gate"]),
            "router": h * (E + mlp["zero_experts"]) + (E + mlp["zero_experts"]) * bool(mlp["router_bias"])
            + mlp.get("router_extra", 0)}


def expected_real_experts(mlp):
    """Routed experts with weights that one token runs: k, or with Z zero-computation experts among
    the E + Z a router picks from, k E / (E + Z) in expectation under uniform routing (LongCat-Flash
    tech report, sec. 2.1, adjusts its expert bias so the real count averages about this)."""
    if mlp["kind"] != "moe":
        return 0
    k, E, Z = mlp["topk"], mlp["num_experts"], mlp["zero_experts"]
    return k * E / (E + Z) if Z else k


def layer_params(layer, *, h, norm):
    """All weights of one layer, by part ("attention": every token mixer, softmax or linear;
    "linear_mixer": the linear-attention and state-space ones among them): the per-kind functions
    above summed over the layer's blocks, plus its norms and extra weights; "inactive" is the
    routed-expert weight a token does not run (expected_real_experts)."""
    out = {"attention": sum(attention_params(x, h=h) for x in layer["attention"]),
           "linear_mixer": sum(attention_params(x, h=h) for x in layer["attention"] if x["span"] == "state"),
           "norms": layer["norms"] * norm_params(width=h, norm=norm), "extra": layer["extra_params"],
           "dense": 0, "routed_experts": 0, "one_expert": 0, "shared_experts": 0, "router": 0,
           "inactive": 0}
    for m in layer["mlp"]:
        p = mlp_block_params(m, h=h)
        for k in ("dense", "routed_experts", "shared_experts", "router"):
            out[k] += p[k]
        out["one_expert"] = max(out["one_expert"], p["one_expert"])
        out["inactive"] += p["routed_experts"] - expected_real_experts(m) * p["one_expert"]
    out["inactive"] += sum(attention_inactive_params(x, h=h) for x in layer["attention"])
    out["total"] = sum(out[k] for k in ("attention", "norms", "extra", "dense", "routed_experts",
                                        "shared_experts", "router"))
    return out


def attention_head_dims(attn):
    """(d_qk, d_v): per-head width of the score product and of the context product: head_dim for
    MHA/GQA/MQA, d_nope + d_rope and d_v for MLA (DeepSeek-V2 sec. 2.1.2); a linear mixer's key and
    value head widths."""
    if attn["kind"] == "mla":
        return attn["qk_nope_head_dim"] + attn["qk_rope_head_dim"], attn["v_head_dim"]
    if attn["span"] == "state":
        return attn["head_dim"], attn.get("v_head_dim") or attn["head_dim"]
    return attn["head_dim"], attn.get("v_dim", attn["head_dim"])


def attention_linear_flops_per_token(attn, *, h):
    """Forward FLOPs (2 per multiply-add) of one attention block's projections for one token;
    biases, norms and sinks are not matmuls. MHA/GQA: q (with its gate), k, v, o. MLA (DeepSeek-V2
    sec. 2.1): q directly or via rank r_q, kv down to r_kv + d_rope, up to a (d_nope + d_v), o.
    A lightning indexer adds its q (r_q -> H_I d_I), key (h -> d_I) and head weights (h -> H_I).
    A Gated DeltaNet mixer: its input and output projections, and its depthwise conv (K taps per
    channel per token, 2 x its weights like a matmul's)."""
    a, kv, d = attn["heads"], attn["kv_heads"], attn["head_dim"]
    if attn["kind"] == "dsv4":  # every weight matrix once per token; sinks, biases, norms are not matmuls
        return 2 * (dsv4_attention_params(attn, h=h) - dsv4_non_matmul_params(attn))
    if attn["span"] == "state":
        w_in, w_out, conv_dim = mixer_widths(attn)
        E = attn["heads"]
        inner = E * (attn["dt_rank"] + 2 * attn["state_size"]) + attn["dt_rank"] * E if attn["kind"] == "mamba1" else 0
        if attn["kind"] == "kda" and not attn.get("full_rank_gates"):  # the decay's and gate's d -> D ups
            inner = 2 * attn["head_dim"] * attn["heads"] * attn["head_dim"]
        if attn["kind"] == "rglru":  # the RG-LRU's two block-diagonal gates (baddbmm)
            inner = 2 * attn["heads"] * attn["heads"] // attn["gate_blocks"]
        return 2 * (h * w_in + conv_dim * attn["conv_kernel"] + w_out * h + inner)  # mamba1: x_proj, dt_proj
    if attn["kind"] == "mla":
        r_kv = attn["kv_lora_rank"]
        d_nope, d_rope, d_v = attn["qk_nope_head_dim"], attn["qk_rope_head_dim"], attn["v_head_dim"]
        q = mla_q_macs_per_token(attn, h=h)
        kv_down = 0 if attn["kv_shared"] else h * (r_kv + d_rope)
        macs = q + kv_down + r_kv * a * (d_nope + d_v) + a * d_v * h + h * a * (attn["output_gate"] == "headwise")
    else:
        q_out = a * d * (2 if attn["output_gate"] == "elementwise" else 1) + a * (attn["output_gate"] == "headwise")
        dv = attn.get("v_dim", d)
        kv_out = kv * (d + dv if attn["kv_proj"] == 2 else d * attn["kv_proj"])
        macs = attn.get("in_width", h) * (q_out + kv_out) + a * dv * h + h * attn.get("attn_experts", 0)  # + MoA router
    return 2 * macs + indexer_linear_flops_per_token(attn, h=h)


def indexer_linear_flops_per_token(attn, *, h):
    """Forward FLOPs per token of a lightning indexer's projections (DeepSeek-AI 2025, DeepSeek-V3.2
    sec. 2.1): its queries from the query latent (r_q -> H_I d_I), its key (h -> d_I) and its
    per-head weights (h -> H_I), and a pooled indexer's gate (h -> d_I, GLM-5-Next); 0 for an
    attention block without an indexer."""
    if attn["kind"] == "dsv4":  # DeepSeek-V4's indexer: its compressor (kv, gate: 2 d_I each), q, weights
        HI, dI = attn["c_index_heads"], attn["c_index_head_dim"]
        return 2 * (4 * h * dI + attn["q_lora_rank"] * HI * dI + h * HI) if HI else 0
    if not attn["index_topk"]:
        return 0
    H, dI = attn["index_heads"], attn["index_head_dim"]
    gate = h * dI if attn.get("index_kpool") and H else 0
    return 2 * ((attn["q_lora_rank"] or h) * H * dI + h * dI + h * H + gate)


def _causal_pairs_capped(s, cap):
    """sum over p = 1..s of min(p, cap): causal query-key pairs when no query sees more than cap keys."""
    if cap >= s:
        return s * (s + 1) // 2
    return cap * (cap + 1) // 2 + (s - cap) * cap


def query_key_pairs(attn, *, seq_len, attention):
    """Query-key pairs one sequence's attention block scores, {"core", "indexer"}. `full`: every
    score of the s x s matrix, masked or not, as eager attention computes it (sliding, chunked and
    top-k masks too). `causal`: the pairs a kernel that skips masked blocks executes: p keys for the
    query at position p, at most the window (sliding), its position in its chunk (chunked), or the
    indexer's top-k (the indexer itself scores all p; a pooled indexer, GLM-5-Next, scores the
    pools of P keys: s x floor(s / P) under `full`, floor(p / P) complete pools for query p). A
    linear mixer pairs nothing: its "state" entry is the s tokens its chunked algorithm runs (the
    same under both conventions)."""
    s = seq_len
    if attn["span"] == "state":
        return {"core": 0, "indexer": 0, "state": s}
    if attn["kind"] == "dsv4":
        return _dsv4_pairs(attn, seq_len=s, attention=attention)
    P = attn.get("index_kpool", 0) if attn["index_topk"] else 0
    if attention == "full":
        return {"core": s * s, "indexer": (s * (s // P) if P else s * s) if attn["index_topk"] else 0}
    if attn["span"] == "sliding":
        core = _causal_pairs_capped(s, attn["window"])
    elif attn["span"] == "chunked":
        c = attn["chunk"]
        n, rem = divmod(s, c)
        core = n * c * (c + 1) // 2 + rem * (rem + 1) // 2
    else:
        core = s * (s + 1) // 2
    if attn["index_topk"]:
        return {"core": min(core, _causal_pairs_capped(s, attn["index_topk"])),
                "indexer": _sum_floor_capped(s, P) if P else s * (s + 1) // 2}
    return {"core": core, "indexer": 0}


def _sum_floor_capped(n, m, cap=None):
    """sum over p = 1..n of min(floor(p / m), cap): compressed entries the p-th query can see when one
    closes every m tokens (at most cap of them)."""
    def f(k):  # sum over p = 1..k of floor(p / m)
        q, r = divmod(k, m)
        return m * q * (q - 1) // 2 + q * (r + 1) if k > 0 else 0
    if cap is None or cap >= n // m:
        return f(n)
    return f(cap * m - 1) + cap * (n - cap * m + 1)


def _dsv4_pairs(attn, *, seq_len, attention):
    """DeepSeek-V4 query-key pairs: each query sees the sliding window's keys and the compressed
    entries closed before it (one per compress_rate tokens; a compressed sparse layer's indexer
    scores them all and its core takes the top-k). `full`: the s x (s + floor(s / m)) matrix
    transformers' eager attention computes (the window, causality and the top-k are masks);
    `causal`: min(p, W) window keys and floor(p / m) entries (at most top-k) per query."""
    s, m, W = seq_len, attn["compress"], attn["window"]
    K = attn["c_index_topk"] or None
    csa = attn["compress_kind"] == "csa"
    if attention == "full":
        c = s * (s // m) if m else 0
        return {"core": s * s + c, "indexer": c if csa else 0}
    comp = _sum_floor_capped(s, m, K) if m else 0
    return {"core": _causal_pairs_capped(s, W) + comp, "indexer": _sum_floor_capped(s, m) if csa else 0}


def decode_keys_read(attn, *, context):
    """Keys one decode step's query attends to at `context` tokens (its own included), and keys the
    indexer scores: all of them; at most the window (sliding); those of its own chunk (chunked, a
    chunk holding `chunk` tokens); the top-k the indexer picks (DeepSeek-V3.2 sec. 2.1). A linear
    mixer reads no keys: one recurrent step of its state ("state_steps")."""
    c = context
    if attn["span"] == "state":
        return {"core": 0, "indexer": 0, "state_steps": 1}
    if attn["kind"] == "dsv4":  # the window, and the compressed entries closed so far (top-k of them)
        m = attn["compress"]
        comp = c // m if m else 0
        csa = attn["compress_kind"] == "csa"
        return {"core": min(c, attn["window"]) + (min(comp, attn["c_index_topk"]) if csa else comp),
                "indexer": comp if csa else 0}
    if attn["span"] == "sliding":
        core = min(c, attn["window"])
    elif attn["span"] == "chunked":
        core = (c - 1) % attn["chunk"] + 1 if c else 0
    else:
        core = c
    if attn["index_topk"]:  # a pooled indexer scores the c // P complete pools (reading their pooled keys)
        P = attn.get("index_kpool", 0)
        return {"core": min(core, attn["index_topk"]), "indexer": c // P if P else c}
    return {"core": core, "indexer": 0}


def attention_core_flops(attn, *, pairs):
    """Forward FLOPs of one attention block's core for pairs {"core", "indexer"}: scores Q K^T
    (2 a d_qk per pair) and context P V (2 a d_v per pair); GQA shares k/v but still scores every
    query head (Narayanan et al. 2021 sec. 5.1). The indexer scores H_I heads of d_I per pair and
    sums them with per-head weights, I = sum_j w_j ReLU(q_j . k) (DeepSeek-AI 2025 sec. 2.1):
    2 H_I (d_I + 1) per pair, as transformers' eager indexer runs it (two bmm's). A linear mixer's
    core ("state_core"): linear_core_flops over pairs["state"] tokens run chunked and
    pairs["state_steps"] recurrent steps."""
    a = attn["heads"]
    d_qk, d_v = attention_head_dims(attn)
    state = 0
    if attn["span"] == "state":
        state = linear_core_flops(attn, chunked_tokens=pairs.get("state", 0), steps=pairs.get("state_steps", 0))
    HI, dI = ((attn["c_index_heads"], attn["c_index_head_dim"]) if attn["kind"] == "dsv4"
              else (attn["index_heads"], attn["index_head_dim"]))
    return {"attention_scores": 2 * a * d_qk * pairs["core"],
            "attention_context": 2 * a * d_v * pairs["core"],
            "indexer_scores": 2 * HI * (dI + 1) * pairs["indexer"],
            "state_core": state}


def linear_core_flops(attn, *, chunked_tokens, steps):
    """A linear mixer's core FLOPs by kind: gdn_core_flops or mamba2_core_flops; Mamba-1's selective
    scan (Gu & Dao 2023 sec. 3.3) per token and channel updates an N-wide state with dt x B and
    reads it with C, 4 E N (the discretisation is elementwise, not counted); a short convolution
    has no core beyond its conv (counted with the projections)."""
    if attn["kind"] in ("shortconv", "rwkv", "rglru"):  # RWKV's WKV and the RG-LRU recurrence are elementwise
        return 0
    if attn["kind"] == "lightning":
        return lightning_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)
    if attn["kind"] == "kda":
        return kda_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)
    if attn["kind"] == "mlstm":
        return mlstm_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)
    if attn["kind"] == "mamba1":
        return (chunked_tokens + steps) * 4 * attn["heads"] * attn["state_size"]
    if attn["kind"] == "mamba2":
        return mamba2_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)
    return gdn_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)


def lightning_core_flops(attn, *, chunked_tokens, steps):
    """FLOPs of a lightning-attention core (MiniMax-01, arXiv 2501.08313 sec. 2.2, its Algorithm 1;
    transformers' MiniMaxLightningAttention), blocks of B positions (the last one shorter), H heads
    of d: per block of b positions the intra-block Q K^T and its decayed product with V (4 H b^2 d)
    and the inter-block read-out of the d x d state by Q and the state's update K^T V (4 H b d^2);
    per decode step the update and the read-out (4 H d^2). The decays are elementwise, not counted."""
    H, d, B = attn["heads"], attn["head_dim"], attn["state_chunk"]
    n, r = divmod(chunked_tokens, B)
    return 4 * H * d * (n * B * B + r * r) + 4 * H * d * d * chunked_tokens + steps * 4 * H * d * d


def mlstm_core_flops(attn, *, chunked_tokens, steps):
    """FLOPs of an mLSTM core (Beck et al. 2025, arXiv 2503.13427, the chunkwise-parallel form as
    transformers' mlstm_chunkwise_native_autograd runs it), chunks of C positions, H heads, keys of
    d_k and values of d_v: per chunk the intra-chunk Q K^T (2 C^2 d_k) and its product with V
    (2 C^2 d_v), the read-out of the d_k x d_v memory by Q (2 C d_k d_v) and of the normaliser
    (2 C d_k), and the memory's update K^T V (2 C d_k d_v). Per decode step: the update (an outer
    product, 2 d_k d_v), the read-outs (2 d_k d_v + 2 d_k). Gates and decays are elementwise."""
    H, dk, dv, C = attn["heads"], attn["head_dim"], attn["v_head_dim"], attn["state_chunk"]
    n, r = divmod(chunked_tokens, C)
    per_pos = 4 * dk * dv + 2 * dk  # the memory's read-out and update, the normaliser's read-out
    return H * (2 * (dk + dv) * (n * C * C + r * r) + chunked_tokens * per_pos + steps * (4 * dk * dv + 2 * dk))


def mamba2_core_flops(attn, *, chunked_tokens, steps):
    """FLOPs of a Mamba-2 SSD core (Dao & Gu 2024, arXiv 2405.21060 sec. 6, the chunked algorithm of
    its Listing 1 as mamba_ssm's kernels run it), chunks of Q positions (the last one padded), H
    heads of P, G groups of state N: per chunk the group-shared C B^T (2 G Q^2 N), the masked
    product with x (2 H Q^2 P), the chunk states B^T x (2 H Q P N), their pass to the next chunk
    (a multiply-add per state element, 2 H P N) and the states' read-out by C (2 H Q P N). Per
    decode step: the state update with x B^T and its read-out by C (4 H P N; the decay is
    elementwise, not counted)."""
    H, P, G, N, Q = attn["heads"], attn["head_dim"], attn["kv_heads"], attn["state_size"], attn["state_chunk"]
    chunks = -(-chunked_tokens // Q)
    per_chunk = 2 * G * Q * Q * N + 2 * H * Q * Q * P + 4 * H * Q * P * N + 2 * H * P * N
    return chunks * per_chunk + steps * 4 * H * P * N


def kda_core_flops(attn, *, chunked_tokens, steps):
    """FLOPs of a Kimi Delta Attention core (Kimi Team 2025, arXiv 2510.26692: Gated DeltaNet's
    chunked WY algorithm, Yang et al. 2024 arXiv 2412.06464, with a per-channel decay), per chunk
    of C positions (the last padded) and head of d_k = d_v = d: the UT-transform matrix and the
    intra-chunk q k^T, each a C x C product with the decay inside the d_k contraction (2 C^2 d_k
    each), the products of the transform with v and with the decayed k (2 C^2 (d_v + d_k)), the
    forward substitution that inverts it ((C - 1) C (2 C - 1) / 3), the intra-chunk product with the
    new values (2 C^2 d_v) and three products with the d x d state (6 C d_k d_v). Per decode step
    the three state products, 6 d^2 per head."""
    H, d, C = attn["heads"], attn["head_dim"], attn["state_chunk"]
    chunks = -(-chunked_tokens // C)
    per_chunk = 2 * C * C * (3 * d + 2 * d) + 6 * C * d * d + (C - 1) * C * (2 * C - 1) // 3
    return H * (chunks * per_chunk + steps * 6 * d * d)


def gdn_core_flops(attn, *, chunked_tokens, steps):
    """FLOPs of a Gated DeltaNet core, per value head (q and k shared by H_v / H_k value heads are
    repeated to H_v). Chunked (Yang et al. 2024, arXiv 2406.06484 sec. 3 and arXiv 2412.06464
    sec. 3.3; transformers' torch_chunk_gated_delta_rule), per chunk of C positions (the last one
    padded to C): the two C x C products k_beta k^T and q k^T (2 C^2 d_k each); two unit-lower-
    triangular solves of the UT transform, C (C - 1) (d_v + d_k); the intra-chunk product A v
    (2 C^2 d_v); and three products with the d_k x d_v state (read by k_cumdecay and by q, and
    the update k^T v: 2 C d_k d_v each). Recurrent, per step: the same three state products for one
    token, 6 d_k d_v (the state's decay is elementwise, not counted)."""
    Hv, dk, dv, C = attn["heads"], attn["head_dim"], attn["v_head_dim"], attn["state_chunk"]
    chunks = -(-chunked_tokens // C)
    per_chunk = 4 * C * C * dk + 2 * C * C * dv + C * (C - 1) * (dk + dv) + 6 * C * dk * dv
    return Hv * (chunks * per_chunk + steps * 6 * dk * dv)


def mlp_flops_per_token(mlp, *, h):
    """Forward FLOPs of one MLP block per token: a dense MLP (num_linears h x f matrices); or k
    routed experts of width f_e (k E / (E + Z) with zero-computation experts), the shared experts
    plus their h -> 1 gate, and the router over E (+ Z) experts (Shazeer et al. 2017)."""
    nl = mlp["linears"]
    if mlp["kind"] == "dense":
        return {"dense_mlp": 2 * nl * h * mlp["width"], "routed_experts": 0, "shared_experts": 0, "router": 0}
    return {"dense_mlp": 0,
            "routed_experts": expected_real_experts(mlp) * 2 * nl * h * mlp["width"],
            "shared_experts": 2 * nl * h * mlp["shared_width"] + 2 * h * bool(mlp["shared_gate"]),
            "router": 2 * h * (mlp["num_experts"] + mlp["zero_experts"])}


def cache_elements_per_token(attn, *, mla_cache="latent"):
    """Cached numbers per token per sequence for one attention block, {"kv", "indexer"}. MHA/GQA/
    MQA: K and V, 2 kv d (kv (d + d_v) where value heads are narrower, MiMo-V2-Flash). MLA: the compressed latent r_kv + d_rope (DeepSeek-V2 sec. 2.1.3; what
    vLLM and SGLang keep) or, with mla_cache="expanded", per-head keys a (d_nope + d_rope) and values
    a d_v (what transformers' cache holds for DeepSeek-V2/V3). Layers that reuse another layer's
    K/V or latent hold none of it. A lightning indexer caches one d_I key per token (its own, also
    on a layer that reuses another's latent: Mistral Large 4); a pooled one (GLM-5-Next) its key,
    its pooling-gate score and a valid flag, 2 d_I + 1, as transformers' cache packs them. A linear
    mixer caches nothing per
    token (state_elements: its constant state)."""
    if attn["span"] == "state":
        return {"kv": 0, "indexer": 0}
    if attn["kind"] == "dsv4":  # one K = V head of the window; transformers' plain sliding layer keeps K and V
        return {"kv": attn["head_dim"] * (2 if attn["compress_kind"] == "none" else 1), "indexer": 0}
    ind = attn["index_head_dim"] if attn["index_topk"] else 0
    if ind and attn.get("index_kpool"):  # GLM-5-Next's packed state: key, pooling-gate score, valid flag
        ind = 2 * ind + 1
    if attn["kv_shared"]:
        return {"kv": 0, "indexer": ind}
    if attn["kind"] == "mla":
        if mla_cache == "latent":
            return {"kv": attn["kv_lora_rank"] + attn["qk_rope_head_dim"], "indexer": ind}
        a = attn["heads"]
        return {"kv": a * (attn["qk_nope_head_dim"] + attn["qk_rope_head_dim"]) + a * attn["v_head_dim"],
                "indexer": ind}
    return {"kv": attn["kv_heads"] * (attn["head_dim"] + attn.get("v_dim", attn["head_dim"])), "indexer": ind}


def cached_tokens(attn, *, context):
    """Tokens one sequence's cache holds for this block at `context` tokens: all of them on a full
    layer; at most W on a sliding layer, a rolling buffer of W (Mistral 7B sec. 2; transformers'
    DynamicSlidingWindowLayer shows W - 1 between steps but keeps storage for W after a decode
    step, tests/fixtures/README.md); at most C on a chunked layer (transformers keeps Llama 4's
    chunked layers in the same sliding cache with W = attention_chunk_size). Assumes steady-state
    decoding: right after a prefill of N > W, transformers still holds all N until the next step.
    A linear mixer holds no tokens (its state is constant: state_elements)."""
    if attn["span"] == "state":
        return 0
    if attn["span"] == "sliding":
        return min(context, attn["window"])
    if attn["span"] == "chunked":
        return min(context, attn["chunk"])
    return context


def compressed_cache_elements(attn, *, context):
    """Numbers one sequence's DeepSeek-V4 cache holds for a layer's compressor at `context` tokens,
    {"kv", "indexer"}, beside its window (cached_tokens x cache_elements_per_token), as transformers'
    DeepseekV4HCACache / CSACache hold them: floor(t / m) compressed entries of d (and of d_I for the
    indexer on a compressed sparse layer), the projections of the t mod m tokens of the window still
    open (kv and gate: d each, 2 d each with the overlapping windows, 2 d_I each for the indexer),
    and on a compressed sparse layer once t >= m the previous window's overlap half (kv and gate,
    m x d and m x d_I). Other kinds: none."""
    if attn["kind"] != "dsv4" or not attn["compress"]:
        return {"kv": 0, "indexer": 0}
    t, m, d = context, attn["compress"], attn["head_dim"]
    q, r = divmod(t, m)
    if attn["compress_kind"] == "hca":
        return {"kv": q * d + 2 * r * d, "indexer": 0}
    dI = attn["c_index_head_dim"]
    overlap = m if t >= m else 0
    return {"kv": q * d + 2 * r * 2 * d + 2 * overlap * d, "indexer": q * dI + 2 * r * 2 * dI + 2 * overlap * dI}


def state_elements(attn):
    """Numbers one sequence's cache holds for a linear mixer, whatever its length, {"conv",
    "recurrent"}: the conv window, K positions of the 2 H_k d_k + H_v d_v conv channels (what
    transformers' LinearAttentionLayer keeps; vLLM keeps K - 1), and the H_v x d_k x d_v recurrent
    state (Yang et al. 2024, arXiv 2412.06464 eq. 10); Mamba-2: the conv window over x, B, C and
    the H x P x N state. Softmax attention: none, except the convolution windows some families
    keep beside the K/V (transformers' LinearAttentionAnd*AttentionLayer): Inkling / Inkling 2's
    depthwise convolutions on k and v (kv d channels each) and on the attention's and the MLP's
    outputs (h each, "residual_conv_state" = 2 h K), K taps each, in fp32 (counted under
    "recurrent", the numbers kept at state precision); ZAYA's q/k convolution window ((a + kv) d
    channels, cca_time0 + cca_time1 - 2 taps) and its delayed value half (kv d / 2), in the model
    dtype ("conv")."""
    if attn["span"] != "state":
        kvd = attn["kv_heads"] * attn["head_dim"]
        return {"conv": attn.get("qk_conv_taps", 0) * (attn["heads"] * attn["head_dim"] + kvd)
                + kvd // 2 * bool(attn.get("delayed_value_state")),
                "recurrent": attn.get("kv_conv_taps", 0) * 2 * kvd + attn.get("residual_conv_state", 0)}
    conv = mixer_widths(attn)[2] * attn["conv_kernel"]
    if attn["kind"] == "shortconv":
        return {"conv": conv, "recurrent": 0}
    if attn["kind"] == "rglru":  # the conv's last K - 1 inputs (model dtype) and the W-wide state (fp32)
        return {"conv": attn["heads"] * (attn["conv_kernel"] - 1), "recurrent": attn["heads"]}
    if attn["kind"] == "mlstm":  # the matrix memory C (H d_k d_v), the normaliser n (H d_k) and the max state m (H)
        H, dk = attn["heads"], attn["head_dim"]
        return {"conv": 0, "recurrent": H * dk * attn["v_head_dim"] + H * dk + H}
    if attn["kind"] == "rwkv":  # the two token-shift vectors (time and channel mixing, h each, model dtype)
        return {"conv": 2 * attn["model_width"], "recurrent": 3 * attn["heads"]}  # and num, den, max (fp32)
    if attn["kind"] in ("kda", "lightning"):  # H x d x d
        return {"conv": conv, "recurrent": attn["heads"] * attn["head_dim"] ** 2}
    if attn["kind"] == "mamba1":  # E x N (Gu & Dao 2023 sec. 3)
        return {"conv": conv, "recurrent": attn["heads"] * attn["state_size"]}
    if attn["kind"] == "mamba2":  # H x P x N (Dao & Gu 2024 sec. 7)
        return {"conv": conv, "recurrent": attn["heads"] * attn["head_dim"] * attn["state_size"]}
    return {"conv": conv, "recurrent": attn["heads"] * attn["head_dim"] * attn["v_head_dim"]}


def param_breakdown(spec):
    """Exact parameter counts by component for a resolved spec, summed over its layer list (see
    the module docstring for the conventions of 'non-embedding' and 'active')."""
    V, h, nm = spec["vocab_size"], spec["hidden_size"], spec["norm"]
    p = spec["word_embed_proj_dim"]
    sums = dict.fromkeys(("attention", "linear_mixer", "norms", "extra", "dense", "routed_experts",
                          "shared_experts", "router", "inactive"), 0)
    kinds = []
    for layer, count, first in layer_groups(spec):
        lp = layer_params(layer, h=h, norm=nm)
        for k in sums:
            sums[k] += count * lp[k]
        kinds.append({"layers": count, "first_layer": first,
                      "attention": " + ".join(attention_kind(x) for x in layer["attention"]) or "-",
                      "mlp": " + ".join(mlp_kind(x) for x in layer["mlp"]) or "-", "params_per_layer": lp["total"],
                      "attention_params": lp["attention"], "one_expert_params": lp["one_expert"]})
    out = {
        "embedding_params": V * p,
        "position_embedding_params": spec["position_embedding_rows"] * h,
        "embedding_norm_params": norm_params(width=h, norm=nm) if spec["embedding_norm"] else 0,
        "embedding_projection_params": 2 * p * h if p != h else 0,
        "per_layer_embedding_params": spec["per_layer_embedding_params"],
        "attention_params": sums["attention"] - sums["linear_mixer"],
        "linear_mixer_params": sums["linear_mixer"],
        "mlp_params": sums["dense"],
        "routed_expert_params": sums["routed_experts"],
        "shared_expert_params": sums["shared_experts"],
        "router_params": sums["router"],
        "layer_norm_params": sums["norms"],
        "layer_extra_params": sums["extra"],
        "other_params": sum(spec["other_params"].values()),
        "final_norm_params": norm_params(width=h, norm=nm) if spec["final_norm"] else 0,
        # a head of fewer rows than the embedding where the family says so (Inkling 2's unpadded_vocab_size)
        "output_head_params": 0 if spec["tied_embeddings"] else spec.get("head_vocab_size", V) * p,
    }
    total = sum(out.values())
    inactive = int(round(sums["inactive"]))
    emb = (out["embedding_params"] + out["position_embedding_params"] + out["output_head_params"]
           + out["per_layer_embedding_params"])
    moe_layers = set(spec["moe_layers"])
    first = layer_params(next((x for x in spec["layers"] if any(a["span"] != "state" for a in x["attention"])),
                              spec["layers"][0]), h=h, norm=nm)
    first_linear = next((layer_params(x, h=h, norm=nm) for x in spec["layers"]
                         if any(a["span"] == "state" for a in x["attention"])), None)
    moe0 = layer_params(spec["layers"][min(moe_layers)], h=h, norm=nm) if moe_layers else None
    dense0 = next((layer_params(x, h=h, norm=nm) for i, x in enumerate(spec["layers"])
                   if i not in moe_layers and x["mlp"]), None)
    out.update({
        "per_layer": {"attention": first["attention"] - first["linear_mixer"],
                      "linear_mixer": first_linear["linear_mixer"] if first_linear else 0, "norms": first["norms"],
                      "dense_mlp": dense0["dense"] if dense0 else 0,
                      "moe_routed_experts": moe0["routed_experts"] if moe0 else 0,
                      "moe_one_expert": moe0["one_expert"] if moe0 else 0,
                      "moe_shared_experts": moe0["shared_experts"] if moe0 else 0,
                      "moe_router": moe0["router"] if moe0 else 0,
                      "dense_layer_total": dense0["total"] if dense0 else 0,
                      "moe_layer_total": moe0["total"] if moe0 else 0},
        "layer_kinds": kinds,
        "num_dense_layers": spec["num_layers"] - len(moe_layers), "num_moe_layers": len(moe_layers),
        "num_attention_layers": sum(any(a["span"] != "state" for a in x["attention"]) for x in spec["layers"]),
        "total_params": total, "non_embedding_params": total - emb,
        "active_params": total - inactive, "active_non_embedding_params": total - inactive - emb,
    })
    return out
