"""Family readers for attention decoders whose layers add short causal convolutions and a
relative-position bias around softmax attention: Inkling, Inkling 2 and Inkling 2 Loop
(transformers' modeling_inkling, modeling_inkling2, modeling_inkling2_loop), and ZAYA's compressed
convolutional attention (modeling_zaya); and Dory (modeling_dory: an nGPT-style block whose released
configs list attention and MLP as separate entries of layer_types). Each
reader says what its modeling file builds, checked against the meta-device build
(tests/test_all_types.py)."""

from ..errors import CalcError
from .families_moe import _mlp_pattern


def _inkling_layer_types(r, L):
    """Inkling / Inkling 2's layer_types ("hybrid": full attention, "hybrid_sliding": sliding) as our
    kinds; absent, their configs' default: every 6th layer full."""
    lt = r.str_list("layer_types", choices={"hybrid", "hybrid_sliding"}, length=L)
    if lt is None:
        lt = ["hybrid" if (i + 1) % 6 == 0 else "hybrid_sliding" for i in range(L)]
    return ["sliding" if t == "hybrid_sliding" else "full" for t in lt[:L]]


def _read_inkling(r, s, ll, notes, warnings):
    """Inkling (text model and the multimodal wrapper's language model): layer_types "hybrid"
    (full attention) and "hybrid_sliding" (sliding_window_size window, swa_* heads and head size);
    no rotary (a relative-logit bias instead: r_proj h -> a d_rel, a matmul every token runs, and a
    d_rel x rel_extent bank, rel_extent = the window on sliding layers); per-head q/k RMSNorms;
    depthwise causal convolutions of conv_kernel_size taps (no bias) on k and v and on the
    attention's and the MLP's outputs; an RMSNorm on the embedding. MoE layers of mlp_layer_types:
    n_routed_experts of moe_intermediate_size, n_shared_experts of the same width, a router over
    routed and shared experts (h x (E + S)) with a learned global scale; a dense layer's MLP of
    intermediate_size has a global scale (1 weight). The cache keeps each convolution's last K inputs
    (fp32) beside the K/V: constant per sequence (state_elements)."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll, qk_norm="head", position_embedding="none", embedding_norm=True, mlp_act_params=1)
    K, d_rel = r.int("conv_kernel_size", default=4), r.int("d_rel", default=16)
    ext = r.int("rel_extent", default=1024)
    window = r.int("sliding_window_size", default=512)
    swa = {"heads": r.int("swa_num_attention_heads", default=64),
           "kv_heads": r.int("swa_num_key_value_heads", default=16), "head_dim": r.int("swa_head_dim", default=128)}
    s["layer_types"] = _inkling_layer_types(r, L)
    s["sliding_window"] = window
    E, S, f_e = r.int("n_routed_experts"), r.int("n_shared_experts", lo=0, default=0), r.int("moe_intermediate_size")
    moe = _mlp_pattern(r, L, default_dense=())
    s.update(moe=bool(moe), num_experts=E, topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=f_e,
             num_shared_experts=S, shared_expert_ffn_hidden_size=S * f_e, moe_layer_set=moe)
    over = {}
    for i in range(L):
        sliding = s["layer_types"][i] == "sliding"
        a, kv, d = ((swa["heads"], swa["kv_heads"], swa["head_dim"]) if sliding else
                    (s["num_attention_heads"], s["num_kv_heads"], s["head_dim"]))
        # k and v convolutions (kv d channels each), the relative-logit bank, the two residual convolutions
        attn = {"heads": a, "kv_heads": kv, "head_dim": d,
                "extra_weights": 2 * kv * d * K + d_rel * (window if sliding else ext) + 2 * h * K,
                "kv_conv_taps": K, "residual_conv_state": 2 * h * K}  # the convolutions' windows (fp32)
        over[i] = {"attention": attn, "extra_params": h * a * d_rel,
                   "mlp": {"router_extra": S * h + 1} if i in moe else {}}
    s["layer_overrides"] = over
    r.used.update(("local_layer_ids", "number_of_conv_states", "log_scaling_n_floor", "log_scaling_alpha",
                   "route_scale", "shared_expert_sink", "mtp_hidden_states_first", "rms_norm_eps_moe_gate", "logits_mup_width_multiplier", "unpadded_vocab_size"))


def _read_inkling2(r, s, ll, notes, warnings):
    """Inkling 2 and Inkling 2 Loop (text models and the wrappers' language models): layer_types
    "hybrid" (full attention) and "hybrid_sliding" (sliding_window_size window, swa_* heads). Every
    attention: q with a learned per-head scale (a d; k's L2 clip and v's RMSNorm have no weights), an
    elementwise sigmoid output gate (gate_proj h -> a d), a per-token sink logit per head (sink_proj
    h -> a), a relative-logit bias (h -> a d_rel with a per-head scale a d_rel, a d_rel x rel_extent
    bank; rel_extent = the window on sliding layers), no rotary. k and v run through depthwise causal
    convolutions of conv_kernel_size taps (full layers add per-token taps from h -> kv K per
    convolution). Per layer: block attention-residual queries (h before the MLP; h before attention
    on a sliding layer, 3 h on a full one, none on layer 0), the RMSNorms (one before attention on a
    sliding layer, one per q, k, v on a full one; one after), the convolutions on attention's and the
    MLP's outputs (h K each); every layer an MoE of n_routed_experts (router h x E); an RMSNorm on the
    embedding, a final attention-residual query (h), a head of unpadded_vocab_size rows. Inkling 2
    Loop: layers loop_layer_index_start to loop_layer_index_end run loop_num_passes times and have
    four message gates each (2 h -> r -> h, h; r = loop_gate_rank), plus message queries (4 h per
    looped layer) on the model. The cache keeps each convolution's last K inputs (fp32) beside the
    K/V (state_elements)."""
    L, h, V = s["num_layers"], s["hidden_size"], s["vocab_size"]
    s.update(ll, qk_norm="none", position_embedding="none", embedding_norm=True,
             attn_output_gate="elementwise")
    K, d_rel = r.int("conv_kernel_size", default=4), r.int("d_rel", default=16)
    ext, window = r.int("rel_extent", default=1024), r.int("sliding_window_size", default=1024)
    swa = (r.int("swa_num_attention_heads", default=s["num_attention_heads"]),
           r.int("swa_num_key_value_heads", default=s["num_kv_heads"]), r.int("swa_head_dim", default=s["head_dim"]))
    s["layer_types"] = _inkling_layer_types(r, L)
    s["sliding_window"] = window
    s.update(moe=True, num_experts=r.int("n_routed_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=r.int("moe_intermediate_size"), moe_layer_set=list(range(L)))
    loop, rank = range(0), 0
    if s["model_type"] == "inkling2_loop_text":
        start, end = r.int("loop_layer_index_start", lo=0, default=6), r.int("loop_layer_index_end", default=18)
        passes, rank = r.int("loop_num_passes", default=3), r.int("loop_gate_rank", default=64)
        loop = range(start, min(end, L))
        s["other_params"] = {"message_queries": 4 * h * len(loop)}
        if passes > 1 and loop:
            warnings.append(f"layers {start}-{loop[-1]} run {passes} passes per token (Inkling 2 Loop): the weights "
                            "are counted once, as stored; the per-token FLOPs, activations and cache here count "
                            "one pass")
    s["other_params"] = dict(s.get("other_params", {}), final_attention_residual_query=h)
    s["head_vocab_size"] = r.int("unpadded_vocab_size", default=V)
    over = {}
    for i in range(L):
        full = s["layer_types"][i] == "full"
        a, kv, d = (s["num_attention_heads"], s["num_kv_heads"], s["head_dim"]) if full else swa
        queries = h + (3 * h if full else h) * (i > 0)
        attn = {"heads": a, "kv_heads": kv, "head_dim": d,
                "extra_weights": a * d + a * d_rel + d_rel * (ext if full else window) + 2 * kv * d * K
                + 2 * h * K + queries, "kv_conv_taps": K, "residual_conv_state": 2 * h * K}
        extra = h * a * d_rel + h * a + 2 * h * kv * K * full + 16 * h * rank * (i in loop)
        over[i] = {"attention": attn, "extra_params": extra, "norms": 4 if full else 2}
    s["layer_overrides"] = over
    r.used.update(("log_scaling_n_floor", "log_scaling_alpha", "route_scale", "qk_l2_clip_threshold",
                   "rel_l2_clip_threshold", "n_layers_per_attn_res_block", "mlp_gate_softcap", "mlp_up_softcap",
                   "final_logit_softcapping", "scoring_func", "loop_num_passes"))


def _read_zaya(r, s, ll, notes, warnings):
    """ZAYA (compressed convolutional attention, arXiv 2510.04476, as transformers' modeling_zaya
    builds it): q (h -> a d), k (h -> kv d) and v as a current and a delayed half (h -> kv d / 2
    each); q and k mixed by a depthwise causal convolution of cca_time0 taps and a grouped one of
    cca_time1 taps (one group per q and k head, d -> d; both with biases) over C = (a + kv) d
    channels; a temperature per kv head; no bias by default; partial rotary. Per layer: two RMSNorms
    and two residual scalings (scale and bias on the branch and on the residual, 4 h each). Every
    layer an MoE of num_experts experts of moe_intermediate_size, top num_experts_per_tok, and a
    skip expert without weights; the router runs an MLP: h -> R (+ bias), an RMSNorm over R, two
    R x R layers with biases, R -> E + 1; from layer 1 a learned scale R on the previous layer's
    router state. Weights the routed expert count here: top-k real experts (the skip expert, when
    chosen, runs none: an upper bound). The convolutions' weights and the router MLP's matmuls beyond
    h x E are the layer's extra matmuls (their FLOPs 2 per weight per token); the model has an input
    scale and bias (2 h). The cache keeps the q/k convolution's window and the delayed value half beside
    the K/V (state_elements)."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll, qkv_bias=r.bool("attention_bias", default=False))
    s["attn_out_bias"] = s["qkv_bias"]
    a, kv, d = s["num_attention_heads"], s["num_kv_heads"], s["head_dim"]
    E, R = r.int("num_experts"), r.int("router_hidden_size", default=256)
    t0, t1 = r.int("cca_time0", default=2), r.int("cca_time1", default=2)
    C = (a + kv) * d
    lt = r.str_list("layer_types", choices={"hybrid", "hybrid_sliding"}, length=L)
    if lt is not None:
        s["layer_types"] = ["sliding" if t == "hybrid_sliding" else "full" for t in lt[:L]]
    s.update(moe=True, num_experts=E, topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=r.int("moe_intermediate_size"), moe_layer_set=list(range(L)))
    s["other_params"] = {"input_scale_and_bias": 2 * h}
    if r.bool("lm_head_bias", default=False) and not s["tied_embeddings"]:
        s["other_params"]["head_bias"] = s["vocab_size"]
    router_matmuls = h * R + 2 * R * R + R * (E + 1)
    over = {}
    for i in range(L):
        router_other = R + R + 2 * R + R * (i > 0)  # down_proj bias, norm, fc biases, state scale
        over[i] = {"attention": {"extra_weights": 2 * C + kv + 8 * h,  # conv biases, temperatures, residual scalings
                                 "qk_conv_taps": t0 + t1 - 2, "delayed_value_state": True},  # the cache's window, v half
                   "extra_params": C * t0 + C * d * t1 + router_matmuls - h * E,
                   "mlp": {"router_extra": router_other}}
    s["layer_overrides"] = over
    notes.append("ZAYA's router may pick its skip expert (no weights): the active count takes top-k real "
                 "experts, an upper bound")


def _read_dory(r, s, ll, notes, warnings):
    """Dory: a layer is attention then MLP on the unit sphere (nGPT; weightless L2 norms, no final
    norm): GQA with L2-normed q and k (no weights), a per-channel query scale and output-gate scale
    (a d each) and an elementwise sigmoid output gate (gate_proj h -> a d); a gated MLP with two
    per-channel scales (2 f); two per-channel residual rates (2 h); a head with a per-row logit scale
    (V). A config whose layer_types lists "mlp" entries lists each (attention, MLP) pair as two
    entries: transformers folds them (layer_types[::2], num_hidden_layers // 2, and the input,
    recurrent and output layer counts halved), as read here. The recurrent layers run
    n_recurrent_loops times per token."""
    s.update(ll, qk_norm="l2", attn_output_gate="elementwise", norm="none", final_norm=False)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=r.bool("mlp_bias", default=False))
    names = {"full_attention": "full", "sliding_attention": "sliding", "mlp": "mlp"}
    lt = r.str_list("layer_types", choices=set(names), default=None)
    half = lt is not None and "mlp" in lt
    # -l counts the folded layers (as transformers builds them); the config's count is halved
    L = s["num_layers"] // 2 if half and not s.get("_layers_from_flag") else s["num_layers"]
    if half:
        lt = lt[::2]
        if "mlp" in lt:
            raise CalcError(f"{r.where}: layer_types lists 'mlp' where an attention entry belongs (pairs of "
                             "attention, mlp)")
        if L > len(lt):
            raise CalcError(f"--num-layers {L} is more than the {len(lt)} layers (attention, mlp pairs) the "
                             "config's layer_types describes")
        s["num_layers"] = L = max(1, L)
    if lt is None:
        lt = ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention" for i in range(L)]
    s["layer_types"] = [names[x] for x in lt[:L]]
    a, d, h = s["num_attention_heads"], s["head_dim"], s["hidden_size"]
    s.update(attn_extra_weights=2 * a * d + 2 * h, mlp_act_params=2 * s["ffn_hidden_size"],
             other_params={"logit_scale": s["vocab_size"]})
    div = 2 if half else 1
    n_in, n_out = r.int("n_input_layers", lo=0, default=8 * div) // div, r.int("n_output_layers", lo=0, default=8 * div) // div
    n_rec = r.int("n_recurrent_layers", lo=0, default=None)
    n_rec = L - n_in - n_out if n_rec is None else n_rec // div
    loops = r.int("n_recurrent_loops", default=2)
    n_rec = min(n_rec, L - n_in)
    if loops > 1 and n_rec > 0:
        warnings.append(f"layers {n_in}-{n_in + n_rec - 1} run {loops} loops per token (Dory): the weights are counted "
                        "once, as stored; the per-token FLOPs, activations and cache here count one loop")
    r.used.update(("ngpt_alpha_init", "recurrent_kv_cache_mode"))


SCONV_READERS = {"dory": _read_dory, "zaya": _read_zaya, "inkling_text": _read_inkling, "inkling2_text": _read_inkling2,
                 "inkling2_loop_text": _read_inkling2}
