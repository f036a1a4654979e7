"""Family readers for hybrids with linear-attention or state-space layers (Qwen3-Next/3.5 Gated
DeltaNet, OLMo hybrid, Mamba-2 mixers of Nemotron-H, GraniteMoeHybrid, Falcon-H1 and Jamba, LFM,
Kimi Linear's KDA)."""

from ..errors import CalcError
from .families_moe import _mlp_pattern, _note_mtp, _read_mla
from .kinds import GDN_CHUNK
from .reader import ConfigReader, _layer_pattern


def _read_qwen_gdn(r, s, ll, notes, warnings):
    """Qwen3-Next and Qwen3.5 (dense and MoE): Gated DeltaNet layers with full-attention layers
    every full_attention_interval-th (default 4), as layer_types lists them. The attention layers
    have an elementwise output gate (q_proj twice as wide) and per-head q/k norms; MoE layers have
    one gated shared expert (Qwen3-Next: on layers (i + 1) % decoder_sparse_step == 0 not in
    mlp_only_layers; Qwen3.5-MoE: every layer, transformers reads neither field)."""
    mt, L = s["model_type"], s["num_layers"]
    s.update(ll, head_dim=r.int("head_dim", default=256), qk_norm="head",
             attn_output_gate="elementwise")
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    r.bool("attn_output_gate", default=True)  # Qwen3.5 writes it; its modeling gates either way
    s["linear_mixer"] = {
        "kind": "gdn", "heads": r.int("linear_num_value_heads", default=32),
        "kv_heads": r.int("linear_num_key_heads", default=16),
        "head_dim": r.int("linear_key_head_dim", default=128),
        "v_head_dim": r.int("linear_value_head_dim", default=128),
        "conv_kernel": r.int("linear_conv_kernel_dim", default=4),
        "state_chunk": GDN_CHUNK}
    if s["linear_mixer"]["heads"] % s["linear_mixer"]["kv_heads"]:
        raise CalcError(f"{r.where}: linear_num_value_heads {s['linear_mixer']['heads']} is not a multiple "
                         f"of linear_num_key_heads {s['linear_mixer']['kv_heads']}")
    if r.has("layer_types"):
        s["layer_types"] = _layer_pattern(r, L, s)
        if "sliding" in s["layer_types"] or "chunked" in s["layer_types"]:
            raise CalcError(f"{r.where}: layer_types of a {mt} model lists only linear_attention and "
                             "full_attention layers")
    else:
        n = r.int("full_attention_interval", default=4)
        s["layer_types"] = ["linear" if (i + 1) % n else "full" for i in range(L)]
    r.used.update(("full_attention_interval", "use_sliding_window", "sliding_window", "max_window_layers"))
    s["sliding_window"] = None
    if mt in ("qwen3_next", "qwen3_5_moe_text"):
        E = r.int("num_experts", "num_local_experts", lo=0, default=512 if mt == "qwen3_next" else 256)
        if mt == "qwen3_next":
            step = r.int("decoder_sparse_step", default=1)
            only = set(r.int_list("mlp_only_layers", default=[]))
            moe = [i for i in range(L) if E and i not in only and (i + 1) % step == 0]
        else:
            r.used.update(("decoder_sparse_step", "mlp_only_layers"))
            moe = list(range(L)) if E else []
        sh = r.int("shared_expert_intermediate_size", lo=0, default=512)
        s.update(moe=bool(moe), num_experts=E, topk=r.int("num_experts_per_tok", default=10 if mt == "qwen3_next" else 8),
                 moe_ffn_hidden_size=r.int("moe_intermediate_size", default=512),
                 num_shared_experts=1 if sh else 0, shared_expert_ffn_hidden_size=sh,
                 shared_expert_gate=bool(sh), moe_layer_set=moe)
    n_mtp = r.int("mtp_num_hidden_layers", lo=0, default=0)
    if n_mtp:
        s["mtp_layers_not_built"] = n_mtp
        warnings.append(f"{n_mtp} multi-token-prediction layer(s) (mtp_num_hidden_layers) are in the "
                        "checkpoint but not counted: transformers does not build them in the model")
    r.used.update(("mtp_use_dedicated_embeddings", "mamba_ssm_dtype"))


def _read_olmo_hybrid(r, s, ll, notes, warnings):
    """Olmo-Hybrid: Gated DeltaNet layers and OLMo-2-style attention layers (q/k norms over all
    heads, post-norms; NoPE without rope_theta: no weights either way), a dense SwiGLU MLP on every
    layer, 2 norms per layer. Defaults as OlmoHybridConfig derives them: key and value heads =
    num_attention_heads, d_k = int(0.75 h / H_k), d_v = 2 d_k; full attention where i % 4 == 3
    (the last layer if none is)."""
    L, a, h = s["num_layers"], s["num_attention_heads"], s["hidden_size"]
    s.update(ll, qk_norm="full")
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    hk = r.int("linear_num_key_heads", default=a)
    dk = r.int("linear_key_head_dim", default=int(0.75 * h / hk))
    s["linear_mixer"] = {"kind": "gdn", "heads": r.int("linear_num_value_heads", default=a),
                         "kv_heads": hk, "head_dim": dk,
                         "v_head_dim": r.int("linear_value_head_dim", default=2 * dk),
                         "conv_kernel": r.int("linear_conv_kernel_dim", default=4),
                         "state_chunk": GDN_CHUNK}
    if s["linear_mixer"]["heads"] % hk:
        raise CalcError(f"{r.where}: linear_num_value_heads {s['linear_mixer']['heads']} is not a multiple "
                         f"of linear_num_key_heads {hk}")
    r.bool("linear_allow_neg_eigval", default=True)  # beta in (0, 2): no weights
    if r.has("layer_types"):
        s["layer_types"] = _layer_pattern(r, L, s)
        if "sliding" in s["layer_types"] or "chunked" in s["layer_types"]:
            raise CalcError(f"{r.where}: layer_types of an olmo_hybrid model lists only linear_attention "
                             "and full_attention layers")
    else:
        lt = ["full" if i % 4 == 3 else "linear" for i in range(L)]
        if "full" not in lt:
            lt[-1] = "full"
        s["layer_types"] = lt
    s["sliding_window"] = None
    r.used.add("sliding_window")


def _mamba2_mixer(r, s, *, d_in, heads, head_dim, groups, state, conv, chunk, in_bias, out_bias,
                  conv_bias, gated_norm):
    """The spec's linear_mixer for a family's Mamba-2 layers; the head width must tile d_in."""
    if heads * head_dim != d_in:
        raise CalcError(f"{r.where}: Mamba-2 heads {heads} x head dim {head_dim} must equal its inner width {d_in}")
    if heads % groups:
        raise CalcError(f"{r.where}: Mamba-2 heads {heads} are not a multiple of its {groups} groups")
    s["linear_mixer"] = {"kind": "mamba2", "heads": heads, "kv_heads": groups, "head_dim": head_dim,
                         "v_head_dim": head_dim, "state_size": state, "conv_kernel": conv, "state_chunk": chunk,
                         "in_bias": in_bias, "mixer_out_bias": out_bias, "conv_bias": conv_bias,
                         "gated_norm": gated_norm}


def _mamba_head_dim(r, key, d_in, heads):
    """Granite/Falcon's mamba_d_head: a number, or "auto" (d_in // heads, as their configs derive it)."""
    if r.cfg.get(key) == "auto" or not r.has(key):
        r.used.add(key)
        return d_in // heads
    return r.int(key, hi=2**20)


_NEMOTRON_BLOCKS = {"M": "mamba", "E": "moe", "*": "attention", "-": "mlp", "linear_attention": "mamba",
                    "mamba": "mamba", "moe": "moe", "full_attention": "attention", "attention": "attention",
                    "mlp": "mlp"}


def _nemotron_blocks(r):
    """Nemotron-H's per-layer block kinds: layers_block_type (alias layer_types), else the legacy
    hybrid_override_pattern string, else NemotronHConfig's default 4 layers."""
    if r.has("layers_block_type") or r.has("layer_types"):
        key = "layers_block_type" if r.has("layers_block_type") else "layer_types"
        pat = r.str_list(key, choices=set(_NEMOTRON_BLOCKS) - {"M", "E", "*", "-"})
    elif r.has("hybrid_override_pattern"):
        text = r.str("hybrid_override_pattern")
        if not text or any(ch not in "ME*-" for ch in text):
            r.fail("hybrid_override_pattern", "must be a string of M, E, * and -", text)
        pat = list(text)
    else:
        pat = ["M", "E", "*", "-"]
    if not pat:
        raise CalcError(f"{r.where}: the layer pattern is empty")
    return [_NEMOTRON_BLOCKS[x] for x in pat]


def _read_nemotron_h(r, s, ll, notes, warnings):
    """Nemotron-H (Nemotron 3): each layer is ONE block after its norm, a Mamba-2 mixer, an
    attention (no biases, no positions), a non-gated ReLU^2 MLP or a MoE (non-gated ReLU^2 experts,
    one shared expert of moe_shared_expert_intermediate_size, a router with a score-correction
    buffer that is not a weight), from layers_block_type (or the legacy hybrid_override_pattern
    M/E/*/-). Mamba inner width = mamba_num_heads x mamba_head_dim (expand is not read); in/out
    projection biases from use_bias. transformers never ties the head; MTP layers are not built."""
    blocks = _nemotron_blocks(r)
    if s["_layers_from_flag"]:
        if s["num_layers"] > len(blocks):
            raise CalcError(f"--num-layers {s['num_layers']} is more than the {len(blocks)} layers the "
                             "config's layer pattern describes")
        blocks = blocks[:s["num_layers"]]
    elif len(blocks) != s["num_layers"]:
        warnings.append(f"num_hidden_layers {s['num_layers']} differs from the {len(blocks)} layers of the "
                        "pattern: the pattern's count is used, as transformers does")
    s["num_layers"] = len(blocks)
    s.update(ll, num_mlp_linears=2, qkv_bias=False, attn_out_bias=False, norms_per_layer=1,
             head_dim=r.int("head_dim", default=128), tied_embeddings=False,
             mlp_bias=r.bool("mlp_bias", default=False))
    r.bool("tie_word_embeddings", default=False)
    r.bool("attention_bias", default=False)  # read, not used: NemotronHAttention has no biases
    s["layer_types"] = ["linear" if b == "mamba" else "full" for b in blocks]
    s["layer_blocks"] = ["mlp" if b in ("moe", "mlp") else "mixer" for b in blocks]
    H = r.int("mamba_num_heads", default=128)
    P = r.int("mamba_head_dim", default=64)
    bias = r.bool("use_bias", default=False)
    _mamba2_mixer(r, s, d_in=H * P, heads=H, head_dim=P, groups=r.int("n_groups", "mamba_n_groups", default=8),
                  state=r.int("ssm_state_size", default=128), conv=r.int("conv_kernel", "mamba_d_conv", default=4),
                  chunk=r.int("chunk_size", "mamba_chunk_size", default=128), in_bias=bias, out_bias=bias,
                  conv_bias=r.bool("use_conv_bias", "mamba_conv_bias", default=True), gated_norm=True)
    r.used.update(("expand", "mamba_proj_bias", "n_shared_experts", "mamba_ssm_cache_dtype"))
    if r.int("moe_latent_size", default=0, lo=0):
        raise CalcError(f"{r.where}: moe_latent_size (latent MoE projections) is not described by this script yet")
    moe = [i for i, b in enumerate(blocks) if b == "moe"]
    if moe:
        f_e = r.int("moe_intermediate_size", default=2688)
        sh = r.int("moe_shared_expert_intermediate_size", lo=0, default=5376)
        s.update(moe=True, num_experts=r.int("n_routed_experts", default=128),
                 topk=r.int("num_experts_per_tok", default=6), moe_ffn_hidden_size=f_e,
                 num_shared_experts=1 if sh else 0, shared_expert_ffn_hidden_size=sh, shared_expert_gate=False,
                 router_bias=False, expert_bias=False, moe_layer_set=moe)
    _note_mtp(r, s)


def _read_granitemoehybrid(r, s, ll, notes, warnings):
    """Granite 4 hybrids: every layer a mixer (Mamba-2 on linear_attention / mamba layers, attention
    elsewhere; all Mamba-2 when layer_types is absent, the config's default) and, after the second
    norm, a MoE of gated experts of width intermediate_size plus an ungated shared MLP of
    shared_intermediate_size (a dense gated MLP of that width when num_local_experts is 0). Mamba
    inner width int(mamba_expand x h); the multipliers are scalars, not weights."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    key = "layer_types" if r.has("layer_types") else "layers_block_type"
    lt = r.str_list(key, choices={"linear_attention", "mamba", "full_attention", "attention"}, length=L)
    s["layer_types"] = (["linear" if t in ("linear_attention", "mamba") else "full" for t in lt] if lt
                        else ["linear"] * L)
    _granite_mamba2(r, s)
    E = r.int("num_local_experts", "num_experts", lo=0, default=8)
    sh = r.int("shared_intermediate_size", default=1024)
    if E:
        s.update(moe=True, num_experts=E, topk=r.int("num_experts_per_tok", default=2),
                 moe_ffn_hidden_size=ll["ffn_hidden_size"], num_shared_experts=1,
                 shared_expert_ffn_hidden_size=sh, shared_expert_gate=False, moe_layer_set=list(range(L)))
    else:
        s["ffn_hidden_size"] = sh  # the shared MLP is the layer's only MLP
    r.used.add("intermediate_size")


def _granite_mamba2(r, s):
    """The Mamba-2 mixer of Granite 4 hybrids and Bamba: inner width int(mamba_expand x h) in
    mamba_n_heads heads of mamba_d_head, mamba_n_groups groups of mamba_d_state, projection biases
    with mamba_proj_bias, a gated RMSNorm."""
    d_in = int(r.num("mamba_expand", default=2) * s["hidden_size"])
    H = r.int("mamba_n_heads", default=128)
    pb = r.bool("mamba_proj_bias", default=False)
    _mamba2_mixer(r, s, d_in=d_in, heads=H, head_dim=_mamba_head_dim(r, "mamba_d_head", d_in, H),
                  groups=r.int("mamba_n_groups", default=1), state=r.int("mamba_d_state", default=256),
                  conv=r.int("mamba_d_conv", default=4), chunk=r.int("mamba_chunk_size", default=256),
                  in_bias=pb, out_bias=pb, conv_bias=r.bool("mamba_conv_bias", default=True), gated_norm=True)


def _read_falcon_h1(r, s, ll, notes, warnings):
    """Falcon-H1: every layer runs attention and a Mamba-2 mixer side by side on the same normed
    input, then a gated MLP (2 norms). Mamba inner width mamba_d_ssm (or int(mamba_expand x h)),
    in_proj bias mamba_proj_bias, out_proj bias projectors_bias, a gated RMSNorm only with
    mamba_rms_norm. The muP multipliers are scalars; mup_vector is a buffer, not a weight."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll, mlp_bias=r.bool("mlp_bias", default=False))
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    # mamba_d_ssm (FalconH1Config's default 1024 when absent), or int(mamba_expand x h) when null
    d_in = (r.int("mamba_d_ssm") or int(r.num("mamba_expand", default=2) * h)
            if "mamba_d_ssm" in r.cfg else 1024)
    H = r.int("mamba_n_heads", default=128)
    _mamba2_mixer(r, s, d_in=d_in, heads=H, head_dim=_mamba_head_dim(r, "mamba_d_head", d_in, H),
                  groups=r.int("mamba_n_groups", default=1), state=r.int("mamba_d_state", default=256),
                  conv=r.int("mamba_d_conv", default=4), chunk=r.int("mamba_chunk_size", default=256),
                  in_bias=r.bool("mamba_proj_bias", default=False), out_bias=r.bool("projectors_bias", default=False),
                  conv_bias=r.bool("mamba_conv_bias", default=True),
                  gated_norm=r.bool("mamba_rms_norm", default=False))
    r.bool("mamba_norm_before_gate", default=True)
    s["layer_types"] = ["hybrid"] * L


def _read_jamba(r, s, ll, notes, warnings):
    """Jamba: attention on layers i % attn_layer_period == attn_layer_offset (no biases, no
    positions, head_dim h / a), Mamba-1 elsewhere (inner width mamba_expand x h, dt rank "auto" =
    ceil(h / 16), RMSNorms on dt, B and C); a MoE of gated experts on layers i % expert_layer_period
    == expert_layer_offset when num_experts > 1 (router without bias, no shared expert), a gated
    dense MLP elsewhere; 2 norms per layer."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll, qkv_bias=False, attn_out_bias=False)
    ap, ao = r.int("attn_layer_period", default=8), r.int("attn_layer_offset", lo=0, default=4)
    ep, eo = r.int("expert_layer_period", default=2), r.int("expert_layer_offset", lo=0, default=1)
    if ao >= ap or eo >= ep:
        raise CalcError(f"{r.where}: attn_layer_offset / expert_layer_offset must be below their period")
    s["layer_types"] = ["full" if i % ap == ao else "linear" for i in range(L)]
    E = int(r.num("mamba_expand", default=2) * h)
    rank = r.cfg.get("mamba_dt_rank", "auto")
    R = -(-h // 16) if rank == "auto" else r.int("mamba_dt_rank")
    if R is None:  # null: JambaConfig keeps None and the model cannot be built
        r.fail("mamba_dt_rank", 'must be an integer or "auto"', rank)
    r.used.add("mamba_dt_rank")
    pb = r.bool("mamba_proj_bias", default=False)
    s["linear_mixer"] = {"kind": "mamba1", "heads": E, "kv_heads": E, "head_dim": 1, "v_head_dim": 1,
                         "state_size": r.int("mamba_d_state", default=16), "dt_rank": R,
                         "conv_kernel": r.int("mamba_d_conv", default=4), "state_chunk": 0,
                         "in_bias": pb, "mixer_out_bias": pb, "conv_bias": r.bool("mamba_conv_bias", default=True),
                         "dt_norms": True}
    n_exp = r.int("num_experts", "num_local_experts", default=16)
    if n_exp > 1:
        s.update(moe=True, num_experts=n_exp, topk=r.int("num_experts_per_tok", default=2),
                 moe_ffn_hidden_size=ll["ffn_hidden_size"], moe_layer_set=[i for i in range(L) if i % ep == eo])
    r.used.update(("use_mamba_kernels", "use_mambapy", "use_associative_scan"))


def _read_lfm3(r, s, ll, notes, warnings):
    """LFM3: per layer_types a short-convolution block (in_proj h -> 3h for B, C, x, a depthwise conv
    of conv_L_cache taps, out_proj; biases with conv_bias) or attention (full, or sliding within
    sliding_window), each followed by a gated dense MLP. Attention: per-head q/k norms, a per-head
    sigmoid output gate (g_proj h -> a) with use_attention_gate, biases with attention_bias.
    4 norms per layer with use_sandwich_norm (2 without). Default pattern: full where i % 4 == 2,
    sliding where i % 4 == 0 and i > 0, conv elsewhere."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll, qk_norm="head", head_dim=r.int("head_dim", default=128),
             norms_per_layer=4 if r.bool("use_sandwich_norm", default=True) else 2,
             attn_output_gate="headwise" if r.bool("use_attention_gate", default=True) else "none")
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    lt = r.str_list("layer_types", choices={"conv", "full_attention", "sliding_attention"}, length=L)
    if lt is None:
        lt = ["full_attention" if i % 4 == 2 else "sliding_attention" if i % 4 == 0 and i > 0 else "conv"
              for i in range(L)]
    s["layer_types"] = [{"conv": "linear", "full_attention": "full", "sliding_attention": "sliding"}[t] for t in lt]
    if "sliding" in s["layer_types"]:
        s["sliding_window"] = r.int("sliding_window", default=256)
    s["linear_mixer"] = {"kind": "shortconv", "heads": h, "kv_heads": h, "head_dim": 1, "v_head_dim": 1,
                         "conv_kernel": r.int("conv_L_cache", default=7), "state_chunk": 0,
                         "conv_bias": r.bool("conv_bias", default=False)}


def _read_kimi_linear(r, s, ll, notes, warnings):
    """Kimi Linear: KDA layers and NoPE MLA layers (layer_types, else linear_attn_config's 1-based
    kda_layers / full_attn_layers, else MLA where i > 0 and i % 4 == 0), a dense first layer
    (mlp_layer_types, else first_k_dense_replace, default 1) and MoE (gated experts, num_shared_experts
    shared, a router whose score correction is a buffer); the head is never tied. KDA's heads, head
    dim and conv kernel from linear_attn_config where it has them, else linear_num_heads /
    linear_head_dim / linear_conv_kernel_dim."""
    L = s["num_layers"]
    s.update(ll, tied_embeddings=False)
    r.bool("tie_word_embeddings", default=False)  # KimiLinearForCausalLM ties nothing
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, position_embedding="none")
    lac = r.sub("linear_attn_config") or {}
    sub = ConfigReader(lac, f"{r.where} (linear_attn_config)")
    H = sub.int("num_heads", default=None) or r.int("linear_num_heads", default=32)
    d = sub.int("head_dim", default=None) or r.int("linear_head_dim", default=128)
    K = sub.int("short_conv_kernel_size", default=None) or r.int("linear_conv_kernel_dim", default=4)
    s["linear_mixer"] = {"kind": "kda", "heads": H, "kv_heads": H, "head_dim": d, "v_head_dim": d,
                         "conv_kernel": K, "state_chunk": GDN_CHUNK}
    if r.has("layer_types"):
        s["layer_types"] = _layer_pattern(r, L, s)
    elif "full_attn_layers" in lac and "kda_layers" in lac:
        n = r.int("num_hidden_layers")  # the lists number the config's layers; -l cuts after
        full = sub.int_list("full_attn_layers", lo=1, hi=n)
        kda = sub.int_list("kda_layers", lo=1, hi=n)
        lt = [None] * n
        for i in full:
            lt[i - 1] = "full"
        for i in kda:
            lt[i - 1] = "linear"
        if None in lt:
            raise CalcError(f"{r.where}: linear_attn_config's kda_layers and full_attn_layers leave layer "
                             f"{lt.index(None) + 1} (1-based) without a kind")
        s["layer_types"] = lt[:L]
    else:
        s["layer_types"] = ["full" if i and i % 4 == 0 else "linear" for i in range(L)]
    if any(t not in ("full", "linear") for t in s["layer_types"]):
        raise CalcError(f"{r.where}: a kimi_linear model has only linear_attention and full_attention layers")
    s["sliding_window"] = None
    E = r.int("num_experts", "num_local_experts", default=256)
    f_e = r.int("moe_intermediate_size", default=1024)
    n_sh = r.int("num_shared_experts", "n_shared_experts", lo=0, default=1)
    dense = [i for i in range(r.int("first_k_dense_replace", lo=0, default=1))]
    s.update(moe=True, num_experts=E, topk=r.int("num_experts_per_token", "num_experts_per_tok", default=8),
             moe_ffn_hidden_size=f_e, num_shared_experts=n_sh, shared_expert_ffn_hidden_size=n_sh * f_e,
             router_bias=False, moe_layer_set=_mlp_pattern(r, L, dense))
    _read_mla(r, s)
    r.used.update(("moe_layer_freq", "mla_use_nope", "use_grouped_topk", "moe_router_activation_func", "head_dim"))
