"""Family readers for the decoders whose layers keep a state instead of (or beside) keys and values
and that transformers 5.24 builds: Mamba, Falcon-Mamba, Mamba-2, Bamba, Zamba 1/2 (a transformer
block the hybrid layers share), LFM2 (short convolution), MiniMax-01 (lightning attention), RWKV,
RecurrentGemma (Griffin's RG-LRU), Lara-mini (Gated DeltaNet), Bailing hybrid and GLM-5-Next (Kimi
Delta Attention). Each turns its config into the flat spec's fields, checked against the meta-device
build (tests/test_all_types.py); their caches and FLOPs against transformers' own (VALIDATION.md)."""

from ..errors import CalcError
from .families_hybrid import _granite_mamba2, _mamba2_mixer
from .families_more import _llama
from .families_moe import _hyper_connection_layer_fields, _mlp_pattern, _note_mtp, _read_dsa_every_layer, _read_mla, _read_one_shared_expert, _read_routed_shared
from .kinds import GDN_CHUNK
from .reader import _layer_pattern


def _read_lfm2(r, s, ll, notes, warnings, adjust=True):
    """LFM2: short-convolution blocks (in_proj h -> 3h, a depthwise conv of conv_L_cache taps,
    out_proj; biases with conv_bias) and attention layers (per-head q/k RMSNorms, no biases) as
    layer_types lists them (else full_attn_idxs), each with a gated MLP whose width, with
    block_auto_adjust_ff_dim, is int(2 f / 3) x block_ffn_dim_multiplier rounded up to
    block_multiple_of (Lfm2MLP); 2 norms per layer; the final norm is `embedding_norm`."""
    L, h = s["num_layers"], s["hidden_size"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    lt = r.str_list("layer_types", choices={"conv", "full_attention"}, length=L)
    if lt is None:
        full = set(r.int_list("full_attn_idxs", default=[]))
        lt = ["full_attention" if i in full else "conv" for i in range(L)]
    r.used.add("full_attn_idxs")
    s["layer_types"] = ["full" if t == "full_attention" else "linear" for t in lt]
    f = ll["ffn_hidden_size"]
    if adjust and r.bool("block_auto_adjust_ff_dim", default=True):
        f = int(2 * f / 3)
        mult = r.num("block_ffn_dim_multiplier", default=1.0)
        if mult:
            f = int(mult * f)
        m = r.int("block_multiple_of", default=256)
        f = m * ((f + m - 1) // m)
    s["ffn_hidden_size"] = f
    s["linear_mixer"] = {"kind": "shortconv", "heads": h, "kv_heads": h, "head_dim": 1, "v_head_dim": 1,
                         "conv_kernel": r.int("conv_L_cache", default=3), "state_chunk": 0,
                         "conv_bias": r.bool("conv_bias", default=False)}


def _read_lfm2_moe(r, s, ll, notes, warnings):
    """LFM2-MoE (lfm2_moe): LFM2's short-convolution and attention layers; a gated MLP of
    intermediate_size as given (Lfm2MoeMLP: no auto-adjust) in the first num_dense_layers, then
    num_experts routed experts of moe_intermediate_size, top num_experts_per_tok, behind a
    bias-free router whose expert_bias is a buffer (not a parameter); no shared expert
    (Lfm2MoeDecoderLayer, transformers 5.24)."""
    _read_lfm2(r, s, ll, notes, warnings, adjust=False)
    _read_routed_shared(r, s, s["num_layers"], dense=range(r.int("num_dense_layers", lo=0, default=2)))
    r.used.update({"use_expert_bias", "routed_scaling_factor", "norm_topk_prob"})


def _read_mamba(r, s, ll, notes, warnings):
    """Mamba and Falcon-Mamba (attention-free): every layer one RMSNorm and a Mamba-1 mixer of inner
    width intermediate_size (else expand x h), dt rank time_step_rank ("auto": ceil(h / 16)),
    state_size N, a conv of conv_kernel taps (bias with use_conv_bias), in/out projection biases
    with use_bias; no MLP. Falcon-Mamba's B, C, dt RMSNorms have no weights."""
    L, h = s["num_layers"], s["hidden_size"]
    E = r.int("intermediate_size", default=int(r.num("expand", default=2) * h))
    rank = r.cfg.get("time_step_rank")  # null: unset, the class default "auto"
    R = -(-h // 16) if rank in (None, "auto") else r.int("time_step_rank")
    r.used.add("time_step_rank")
    bias = r.bool("use_bias", default=False)
    s.update(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="none", norms_per_layer=1, layer_types=["linear"] * L,
             layer_blocks=["mixer"] * L, num_kv_heads=s["num_attention_heads"], head_dim=1, ffn_hidden_size=1)
    s["linear_mixer"] = {"kind": "mamba1", "heads": E, "kv_heads": E, "head_dim": 1, "v_head_dim": 1,
                         "state_size": r.int("state_size", default=16), "dt_rank": R,
                         "conv_kernel": r.int("conv_kernel", default=4), "state_chunk": 0,
                         "in_bias": bias, "mixer_out_bias": bias,
                         "conv_bias": r.bool("use_conv_bias", default=True), "dt_norms": False}


def _read_mamba2(r, s, ll, notes, warnings):
    """Mamba-2 (attention-free): every layer one RMSNorm and a Mamba-2 mixer of num_heads heads of
    head_dim (inner width = their product), n_groups groups of state_size, a conv of conv_kernel
    taps (bias with use_conv_bias), projection biases with use_bias, a gated RMSNorm; no MLP."""
    L = s["num_layers"]
    H, P = r.int("num_heads", default=128), r.int("head_dim", default=64)
    bias = r.bool("use_bias", default=False)
    s.update(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="none", norms_per_layer=1, layer_types=["linear"] * L,
             layer_blocks=["mixer"] * L, num_kv_heads=s["num_attention_heads"], head_dim=1, ffn_hidden_size=1)
    _mamba2_mixer(r, s, d_in=H * P, heads=H, head_dim=P, groups=r.int("n_groups", default=8),
                  state=r.int("state_size", default=128), conv=r.int("conv_kernel", default=4),
                  chunk=r.int("chunk_size", default=256), in_bias=bias, out_bias=bias,
                  conv_bias=r.bool("use_conv_bias", default=True), gated_norm=True)
    r.used.update(("expand", "time_step_rank"))


def _read_bamba(r, s, ll, notes, warnings):
    """Bamba: a Mamba-2 mixer (Granite 4's) on every layer but attn_layer_indices (attention: no
    biases), then a gated dense MLP; 2 norms per layer."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", mlp_bias=r.bool("mlp_bias", default=False))
    attn = set(r.int_list("attn_layer_indices", default=[]))
    s["layer_types"] = ["full" if i in attn else "linear" for i in range(L)]
    _granite_mamba2(r, s)


def _read_lara(r, s, ll, notes, warnings):
    """Lara-mini: Gated DeltaNet layers (Qwen3-Next's mixer: linear_* heads and dims), sliding and
    full attention layers with per-head q/k RMSNorms and no output gate, as layer_types lists
    them; every layer a MoE with one ungated shared expert of shared_expert_intermediate_size."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    # absent or null: LaraMiniConfig's defaults (tests/fixtures/all_types/lara_mini.json)
    Hv, Hk = r.int("linear_num_value_heads", default=16), r.int("linear_num_key_heads", default=8)
    if Hv % Hk:
        r.fail("linear_num_value_heads", f"must be a multiple of linear_num_key_heads = {Hk}", Hv)
    s["linear_mixer"] = {"kind": "gdn", "heads": Hv, "kv_heads": Hk,
                         "head_dim": r.int("linear_key_head_dim", default=128),
                         "v_head_dim": r.int("linear_value_head_dim", default=128),
                         "conv_kernel": r.int("linear_conv_kernel_dim", default=4), "state_chunk": GDN_CHUNK}
    s["layer_types"] = _layer_pattern(r, L, s) or ["full"] * L
    _read_one_shared_expert(r, s, _mlp_pattern(r, L, default_dense=()))


def _read_minimax01(r, s, ll, notes, warnings):
    """MiniMax-01 (MiniMax-Text-01): lightning-attention layers (linear attention with a per-head
    decay over blocks of block_size: qkv and a sigmoid output gate from the input, an RMSNorm, no
    positions; a H x d x d state per sequence) and softmax attention layers, as layer_types lists
    them; every layer a MoE of num_local_experts gated experts (Mixtral's block)."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "mixtral")
    s["linear_mixer"] = {"kind": "lightning", "heads": s["num_attention_heads"],
                         "kv_heads": s["num_attention_heads"], "head_dim": s["head_dim"],
                         "v_head_dim": s["head_dim"], "conv_kernel": 0,
                         "state_chunk": r.int("block_size", default=256),
                         "state_dtype": "model"}  # MiniMaxCache keeps the state at the model's dtype
    s["layer_types"] = _layer_pattern(r, L, s) or ["full"] * L
    r.used.update(k for k in r.cfg if k.endswith(("_alpha_factor", "_beta_factor")))


def _read_rwkv(r, s, ll, notes, warnings):
    """RWKV (v4, transformers' RwkvForCausalLM; Peng et al. 2023, arXiv 2305.13048): no positions,
    every layer a time-mixing block (key, value, receptance h -> D, output D -> h, per-channel decay
    and bonus, three token-shift mixes; D = attention_hidden_size) and a channel-mixing block (key
    h -> f with squared ReLU, value f -> h, a receptance gate h -> h, two token-shift mixes; f =
    intermediate_size, else 4 h), LayerNorms (two per layer, one more before layer 0), a final
    LayerNorm, an untied head. State per sequence: the two shifted inputs and num, den, max."""
    L, h = s["num_layers"], s["hidden_size"]
    D = r.int("attention_hidden_size", default=h)
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="none", norms_per_layer=2, layer_types=["linear"] * L,
             num_kv_heads=s["num_attention_heads"], head_dim=1,
             ffn_hidden_size=r.int("intermediate_size", default=4 * h), mlp_act_params=2 * h,
             extra_params_per_layer=h * h,  # the channel mix's receptance gate: a matmul every token runs
             layer_overrides={0: {"norms": 3}})
    s["linear_mixer"] = {"kind": "rwkv", "heads": D, "kv_heads": D, "head_dim": 1, "v_head_dim": 1,
                         "conv_kernel": 0, "state_chunk": 0, "model_width": h}
    r.used.update(("context_length", "rescale_every"))


def _read_recurrent_gemma(r, s, ll, notes, warnings):
    """RecurrentGemma (Griffin, De et al. 2024): block_types repeated over the layers, a recurrent
    block (x and gate branches h -> W with biases, a conv of conv1d_width taps, the RG-LRU with
    block-diagonal input and recurrence gates of num_attention_heads blocks, W -> h with a bias;
    W = lru_width) or local attention within attention_window_size (MHA or GQA of head_dim, biased
    output only); a gated GELU MLP of intermediate_size / 2 with biases; two RMSNorms per layer."""
    L, h = s["num_layers"], s["hidden_size"]
    kinds = r.str_list("block_types", choices={"recurrent", "attention"}) or ["recurrent", "recurrent", "attention"]
    if not kinds:
        r.fail("block_types", "must list at least one block", kinds)
    _llama(r, s, ll, notes, warnings, "llama", mlp_bias=True, qkv_bias=False, attn_out_bias=True,
           ffn_hidden_size=ll["ffn_hidden_size"] // 2, head_dim=r.int("head_dim", default=h // s["num_attention_heads"]))
    s["layer_types"] = ["linear" if kinds[i % len(kinds)] == "recurrent" else "sliding" for i in range(L)]
    s["sliding_window"] = r.int("attention_window_size", default=2048)
    W = r.int("lru_width", default=h)
    s["linear_mixer"] = {"kind": "rglru", "heads": W, "kv_heads": W, "head_dim": 1, "v_head_dim": 1,
                         "conv_kernel": r.int("conv1d_width", default=4), "state_chunk": 0,
                         "gate_blocks": s["num_attention_heads"]}
    r.used.update(("logits_soft_cap", "w_init_variance_scale", "final_w_init_variance_scale"))


def _read_bailing_hybrid(r, s, ll, notes, warnings):
    """Bailing hybrid (Ling 2.5 / Ring): Kimi Delta Attention layers with full-rank decay and output
    gate projections (h -> D each; linear_num_heads of linear_head_dim, conv of
    linear_conv_kernel_dim) and MLA layers (no query bottleneck) with a per-head sigmoid gate
    (g_proj h -> a), as layer_types lists them; dense then MoE layers (mlp_layer_types) with
    num_shared_experts shared experts; the MTP layer is not built."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", attn_output_gate="headwise")
    _read_mla(r, s)
    H, d = r.int("linear_num_heads", default=32), r.int("linear_head_dim", default=128)  # BailingHybridConfig's
    s["linear_mixer"] = {"kind": "kda", "heads": H, "kv_heads": H, "head_dim": d, "v_head_dim": d,
                         "conv_kernel": r.int("linear_conv_kernel_dim", "short_conv_kernel_size", default=4),
                         "state_chunk": GDN_CHUNK, "full_rank_gates": True}
    s["layer_types"] = _layer_pattern(r, L, s) or ["full"] * L
    n_sh = r.int("num_shared_experts", lo=0, default=0)
    f_e = r.int("moe_intermediate_size")
    s.update(moe=True, num_experts=r.int("num_experts"), topk=r.int("num_experts_per_token", "num_experts_per_tok"),
             moe_ffn_hidden_size=f_e, num_shared_experts=n_sh, shared_expert_ffn_hidden_size=n_sh * f_e,
             moe_layer_set=_mlp_pattern(r, L, default_dense=range(r.int("first_k_dense_replace", lo=0, default=0))))
    r.used.update(("layer_group_size", "kda_safe_gate", "kda_lower_bound", "num_expert_group", "moe_renormalize",
                   "model_max_length", "mtp_loss_scaling_factor"))
    _note_mtp(r, s)


def _read_zamba(r, s, ll, notes, warnings):
    """Zamba 1 and 2: Mamba layers (Zamba: Mamba-1 of inner width mamba_expand x h, n_mamba_heads
    heads that split x_proj / dt_proj without changing their size; Zamba 2: Mamba-2) with, on the
    hybrid layers (layers_block_type), a transformer block whose weights all hybrid layers share
    (num_mem_blocks of them, used in turn): attention over the layer input concatenated with the
    embedding (q, k, v read 2 h; attention_hidden_size wide, head attention_head_dim), an RMSNorm
    over 2 h, a gated MLP with its norm; then a per-layer h x h linear; Zamba 2 adds a LoRA of rank
    adapter_rank on the shared MLP's gate/up projection per hybrid layer. The shared blocks' weights
    are counted on their first use (tied after), their FLOPs and K/V cache on every hybrid layer."""
    L, h, mt = s["num_layers"], s["hidden_size"], s["model_type"]
    blocks = r.str_list("layers_block_type", choices={"mamba", "linear_attention", "hybrid"}, length=L)
    if blocks is None:
        r.fail("layers_block_type", "is needed to place the shared blocks", None)
    A = r.int("attention_hidden_size", default=2 * h)
    a = s["num_attention_heads"]
    d = r.int("attention_head_dim", default=A // a)
    n_mem = r.int("num_mem_blocks", default=1) if mt == "zamba2" else 1
    if mt == "zamba2" and r.bool("use_shared_attention_adapter", default=False):
        raise CalcError(f"{r.where}: use_shared_attention_adapter (LoRA on the shared attention) is not counted "
                         "by this script yet")
    _llama(r, s, ll, notes, warnings, "llama", head_dim=d, num_kv_heads=r.int("num_key_value_heads", default=a),
           norms_per_layer=1, layer_types=["hybrid" if b == "hybrid" else "linear" for b in blocks],
           layer_blocks=["both" if b == "hybrid" else "mixer" for b in blocks])
    E = int(r.num("mamba_expand", default=2) * h)
    if mt == "zamba":
        s["linear_mixer"] = {"kind": "mamba1", "heads": E, "kv_heads": E, "head_dim": 1, "v_head_dim": 1,
                             "state_size": r.int("mamba_d_state", default=16),
                             "dt_rank": r.int("mamba_dt_rank", default=-(-h // 16)),
                             "conv_kernel": r.int("mamba_d_conv", default=4), "state_chunk": 0,
                             "in_bias": r.bool("mamba_proj_bias", default=False),
                             "mixer_out_bias": r.bool("mamba_proj_bias", default=False),
                             "conv_bias": r.bool("mamba_conv_bias", default=True), "dt_norms": False}
        r.int("n_mamba_heads", default=2)
    else:
        H = r.int("n_mamba_heads", default=8)
        bias = r.bool("add_bias_linear", default=False)
        _mamba2_mixer(r, s, d_in=E, heads=H, head_dim=r.int("mamba_headdim", default=E // H),
                      groups=r.int("mamba_ngroups", default=1), state=r.int("mamba_d_state", default=64),
                      conv=r.int("mamba_d_conv", default=4), chunk=r.int("chunk_size", default=256),
                      in_bias=bias, out_bias=bias, conv_bias=r.bool("use_conv_bias", default=True), gated_norm=True)
    rank = r.int("adapter_rank", default=128) if mt == "zamba2" else 0
    f = ll["ffn_hidden_size"]
    over, seen = {}, 0
    for i, b in enumerate(blocks):
        if b != "hybrid":
            continue
        tied = seen >= n_mem
        over[i] = {"attention": {"in_width": 2 * h, "tied": tied}, "mlp": {"tied": tied},
                   "norms": 1 + (0 if tied else 3),  # the Mamba layer's, and the shared block's 2 h + h
                   "extra_params": h * h + rank * (h + 2 * f)}
        seen += 1
    s["layer_overrides"] = over
    r.used.update(("hybrid_layer_ids", "attn_layer_period", "attn_layer_offset", "use_mamba_kernels",
                   "use_mem_rope", "use_long_context", "kv_channels", "num_query_groups", "num_logits_to_keep",
                   "hidden_mamba_act", "use_mem_eff_path", "use_associative_scan"))


def _read_glm5_next(r, s, ll, notes, warnings):
    """GLM-5-Next's text model: Kimi Delta Attention layers (linear_num_heads of linear_head_dim,
    low-rank decay and gate) and GLM-5's sparse-attention layers (MLA with a lightning indexer whose
    keys are pooled over index_kpool positions: a learned position table index_kpool x d_I and a gate
    h -> d_I; index_kpool on the attention: formulas.indexer_params, the cache's packed 2 d_I + 1 per
    token, pool-level scores), as layer_types lists them; dense then MoE layers (mlp_layer_types);
    DeepSeek-V4's hyper-connections over hc_mult streams (two mixing modules per layer)."""
    L, h = s["num_layers"], s["hidden_size"]
    lt = r.str_list("layer_types", choices={"linear_attention", "indexed_attention"}, length=L)
    if lt is None:
        r.fail("layer_types", "must list linear_attention and indexed_attention layers", None)
    _read_dsa_every_layer(r, s, ll, notes, warnings)
    H, d = r.int("linear_num_heads", default=64), r.int("linear_head_dim", default=128)  # Glm5NextTextConfig's
    s["linear_mixer"] = {"kind": "kda", "heads": H, "kv_heads": H, "head_dim": d, "v_head_dim": d,
                         "conv_kernel": r.int("linear_conv_kernel_dim", default=4), "state_chunk": GDN_CHUNK}
    s["layer_types"] = ["linear" if t == "linear_attention" else "full" for t in lt]
    hc, kp = r.int("hc_mult", default=4, hi=1024), r.int("index_kpool", default=16)
    over = s.get("layer_overrides") or {}
    for i in range(L):
        if lt[i] == "indexed_attention" and not over.get(i, {}).get("attention", {}).get("index_heads") == 0:
            o = over.setdefault(i, {})
            o["attention"] = dict(o.get("attention", {}), index_kpool=kp)  # its gate and position table
    s.update(layer_overrides=over, **_hyper_connection_layer_fields(hc=hc, h=h))
    r.used.update(("hc_eps", "hc_sinkhorn_iters", "swiglu_limit", "linear_lower_bound", "index_kpool_always_select_tail"))


def _read_xlstm(r, s, ll, notes, warnings):
    """xLSTM (attention-free; transformers' modeling_xlstm, Beck et al. 2025, arXiv 2503.13427, the
    xLSTM 7B block): every layer an RMSNorm, an mLSTM mixer and an RMSNorm, a gated FFN. The mLSTM:
    q, k (h -> h qk_dim_factor), v and the output gate (h -> h v_dim_factor), input and forget gates
    per head (h -> H, with biases), a per-head LayerNorm's weight over the v width, out_proj v -> h;
    biases on every projection and norm with use_bias. The FFN's width: h ffn_proj_factor rounded up
    to ffn_round_up_to_multiple_of. A head of its own (tie_word_embeddings false)."""
    L, h = s["num_layers"], s["hidden_size"]
    if r.int("num_blocks", default=L) != r.int("num_hidden_layers", default=L) and not s.get("_layers_from_flag"):
        r.fail("num_blocks", "must equal num_hidden_layers (transformers builds num_blocks blocks)", r.cfg.get("num_blocks"))
    if r.int("embedding_dim", default=h) != h:
        r.fail("embedding_dim", f"must equal hidden_size {h}", r.cfg.get("embedding_dim"))
    H = s["num_attention_heads"]
    qk, v = int(h * r.num("qk_dim_factor", default=0.5)), int(h * r.num("v_dim_factor", default=1.0))
    if qk % H or v % H or not qk or not v:
        r.fail("num_heads", f"must divide the q/k width {qk} and the v width {v}", H)
    m, pf = r.int("ffn_round_up_to_multiple_of", default=64), r.num("ffn_proj_factor", default=2.667)
    f = int(((h * pf + m - 1) // m) * m)  # transformers' round_up_to_next_multiple_of, on the float h x factor
    bias = r.bool("use_bias", default=False)
    r.str("weight_mode", choices={"single", "fused"}, default="single")  # the same weights, fused or not
    s.update(norm="layernorm" if bias else "rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False,
             mlp_bias=bias, position_embedding="none", norms_per_layer=2, layer_types=["linear"] * L,
             num_kv_heads=H, head_dim=1, ffn_hidden_size=f)
    s["linear_mixer"] = {"kind": "mlstm", "heads": H, "kv_heads": H, "head_dim": qk // H, "v_head_dim": v // H,
                         "conv_kernel": 0, "state_chunk": r.int("chunk_size", default=64), "mixer_bias": bias,
                         "state_dtype": "model"}  # transformers' xLSTMCache holds (C, n, m) at the model's dtype
    r.used.update(("add_out_norm", "autocast_kernel_dtype", "chunkwise_kernel", "sequence_kernel", "step_kernel",
                   "mode", "gate_soft_cap", "output_logit_soft_cap", "inference_state_dtype", "eps", "norm_eps",
                   "norm_reduction_force_float32", "max_inference_chunksize", "return_last_states"))


# model_type -> reader, for config.py's registry
STATE_READERS = {
    "mamba": _read_mamba, "falcon_mamba": _read_mamba, "mamba2": _read_mamba2, "bamba": _read_bamba,
    "zamba": _read_zamba, "zamba2": _read_zamba, "lfm2": _read_lfm2, "lfm2_vl_text": _read_lfm2, "lfm2_moe": _read_lfm2_moe,
    "minimax": _read_minimax01, "rwkv": _read_rwkv, "recurrent_gemma": _read_recurrent_gemma,
    "lara_mini": _read_lara, "bailing_hybrid": _read_bailing_hybrid, "glm5_next_text": _read_glm5_next,
    "xlstm": _read_xlstm,
}
# Attention-free families: their configs have no attention-head field.
ATTENTION_FREE = {"mamba", "falcon_mamba", "rwkv", "xlstm"}
