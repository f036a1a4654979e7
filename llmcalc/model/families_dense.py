"""Family readers for dense and sliding-window decoders (GPT-2, NeoX, OPT, BLOOM, Falcon,
StarCoder2, the Llama-style families and their MoE variants, Qwen, Gemma 3/4, OLMo 3, SmolLM3,
Seed-OSS, EXAONE 4, Cohere 2): each turns its config into the flat spec's fields."""

from ..errors import CalcError
from .families_moe import _nope_from_interval, _read_deepseek
from .reader import ConfigReader, _layer_pattern


def _read_generic_moe(r, s, notes):
    E = r.int("num_local_experts", "num_experts", "n_routed_experts")
    if E and E > 1:
        s.update(moe=True, num_experts=E, topk=r.int("num_experts_per_tok", default=1),
                 moe_ffn_hidden_size=r.int("moe_intermediate_size", default=s.get("ffn_hidden_size")))
        sh = r.int("shared_expert_intermediate_size", lo=0, default=0)
        n_sh = r.int("n_shared_experts", "num_shared_experts", lo=0, default=0)
        if sh or n_sh:
            s.update(num_shared_experts=n_sh or 1, shared_expert_ffn_hidden_size=sh or n_sh * s["moe_ffn_hidden_size"])
        notes.append("read the routed experts from the expert count and moe_intermediate_size "
                     "(or intermediate_size)")


def _read_gpt2(r, s, ll, notes, warnings):
    h = s["hidden_size"]
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="learned",
             position_embedding_rows=r.int("n_positions", "max_position_embeddings"),
             ffn_hidden_size=r.int("n_inner", default=4 * h))
    if s["position_embedding_rows"] is None:
        raise CalcError(f"{r.where}: config lacks n_positions for GPT-2's learned position table")


def _read_gpt_neox(r, s, ll, notes, warnings):
    bias = r.bool("attention_bias", default=True)
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias, mlp_bias=True,
             position_embedding="rope", ffn_hidden_size=r.int("intermediate_size"))


def _read_opt(r, s, ll, notes, warnings):
    h = s["hidden_size"]
    bias = r.bool("enable_bias", default=True)
    pre = r.bool("do_layer_norm_before", default=True)
    rows = r.int("max_position_embeddings", hi=2**31 - 2)
    if rows is None:
        raise CalcError(f"{r.where}: config lacks max_position_embeddings for OPT's position table")
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias,
             position_embedding="learned", position_embedding_rows=rows + 2,  # OPT offsets by 2
             ffn_hidden_size=r.int("ffn_dim"),
             word_embed_proj_dim=r.int("word_embed_proj_dim", default=h),
             final_norm=pre and not r.bool("_remove_final_layer_norm", default=False))
    if not r.bool("layer_norm_elementwise_affine", default=True):
        s["norm"] = "none"


def _read_bloom(r, s, ll, notes, warnings):
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="alibi", ffn_hidden_size=4 * s["hidden_size"], embedding_norm=True)


def _read_falcon(r, s, ll, notes, warnings):
    a = s["num_attention_heads"]
    if r.bool("new_decoder_architecture", default=False):
        kv = r.int("num_kv_heads", default=a)
        n_ln = 2 if r.int("num_ln_in_parallel_attn", default=2, hi=2) == 2 else 1
    else:
        kv = 1 if r.bool("multi_query", default=True) else a
        n_ln = 1 if r.bool("parallel_attn", default=True) else 2
    bias = r.bool("bias", default=False)
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias,
             position_embedding="alibi" if r.bool("alibi", default=False) else "rope",
             num_kv_heads=kv, norms_per_layer=n_ln, parallel_attention=r.bool("parallel_attn", default=True),
             ffn_hidden_size=r.int("ffn_hidden_size", default=4 * s["hidden_size"]))


def _read_starcoder2(r, s, ll, notes, warnings):
    bias = r.bool("use_bias", default=True)
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias,
             position_embedding="rope", num_kv_heads=ll["num_kv_heads"], head_dim=ll["head_dim"],
             ffn_hidden_size=ll["ffn_hidden_size"])
    s["slides_every_layer"] = True


def _read_llama_like(r, s, ll, notes, warnings):
    """Llama-style families: RMSNorm, gated MLP, rotary; their quirks below."""
    mt = s["model_type"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    if mt == "llama":
        s["mlp_bias"] = r.bool("mlp_bias", default=False)
    if mt in ("qwen2", "qwen2_moe"):
        s["qkv_bias"], s["attn_out_bias"] = True, False  # Qwen2Attention: q/k/v biased, o not
        if mt == "qwen2_moe":
            s["qkv_bias"] = r.bool("qkv_bias", default=True)
    if mt == "mistral" and "sliding_window" not in r.cfg:
        s["sliding_window"] = 4096  # MistralConfig's default when config.json has no such key
    if mt in ("qwen3", "qwen3_moe"):
        s["qk_norm"] = "head"
    if mt == "olmo2":
        s["qk_norm"] = "full"
    if mt == "gemma2":
        s["norms_per_layer"] = 4  # input, post-attention, pre-feedforward, post-feedforward
    if mt in ("gemma", "gemma2"):
        s["head_dim"] = r.int("head_dim", default=256)  # the config classes' default
    if mt in ("mistral", "mixtral", "phi3"):
        s["slides_every_layer"] = True
    if mt == "phi3":  # Phi3Attention.qkv_proj, Phi3MLP.gate_up_proj (transformers models/phi3)
        s["fused_projections"] = ["qkv", "gate_up"]
    if mt in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):
        _read_qwen_sliding(r, s)
    if mt == "gemma2" and not r.has("layer_types"):
        s["layer_types"] = ["sliding" if i % 2 == 0 else "full" for i in range(s["num_layers"])]
    if mt == "mixtral":
        s.update(moe=True, num_experts=r.int("num_local_experts", "num_experts"),
                 topk=r.int("num_experts_per_tok"),
                 moe_ffn_hidden_size=ll["ffn_hidden_size"])
    if mt in ("qwen2_moe", "qwen3_moe"):
        L = s["num_layers"]
        step = r.int("decoder_sparse_step", default=1)
        only = set(r.int_list("mlp_only_layers", default=[]))
        s.update(moe=True, num_experts=r.int("num_experts", "num_local_experts"),
                 topk=r.int("num_experts_per_tok"),
                 moe_ffn_hidden_size=r.int("moe_intermediate_size"),
                 moe_layer_set=[i for i in range(L) if i not in only and (i + 1) % step == 0])
        if mt == "qwen2_moe":
            sh = r.int("shared_expert_intermediate_size", lo=0, default=0)
            s.update(num_shared_experts=1 if sh else 0, shared_expert_ffn_hidden_size=sh,
                     shared_expert_gate=bool(sh))
    if mt in ("deepseek_v2", "deepseek_v3", "mistral4"):  # Mistral4ForCausalLM is DeepSeek-V3's block
        _read_deepseek(r, s)


def _read_qwen_sliding(r, s):
    """Qwen2/Qwen3 slide only with use_sliding_window (off by default), on layers i >=
    max_window_layers (default 28; Qwen2-MoE: even i < max_window_layers; Qwen3-MoE: every
    layer), unless layer_types lists them."""
    L, mt = s["num_layers"], s["model_type"]
    if r.has("layer_types"):
        lt = _layer_pattern(r, L, s)
        if not r.bool("use_sliding_window", default=False):
            lt = ["full" if t == "sliding" else t for t in lt]
        s["layer_types"] = lt
        return
    if not r.bool("use_sliding_window", default=False) or not (r.int("sliding_window", lo=0) or None):
        s["layer_types"] = None
        s["sliding_window"] = None
        return
    mwl = r.int("max_window_layers", lo=0, default=28)  # the config classes' default
    if mt == "qwen3_moe":
        s["layer_types"] = ["sliding"] * L
    elif mt == "qwen2_moe":  # Qwen2MoeConfig: (i + 1) % 2 and i < max_window_layers
        s["layer_types"] = ["sliding" if i < mwl and i % 2 == 0 else "full" for i in range(L)]
    else:
        s["layer_types"] = ["sliding" if i >= mwl else "full" for i in range(L)]


def _gemma_layer_types(r, L, force_last_full):
    if r.has("layer_types"):
        return None
    pattern = r.int("sliding_window_pattern", "_sliding_window_pattern", default=6)
    lt = ["sliding" if (i + 1) % pattern else "full" for i in range(L)]
    if force_last_full and L:
        lt[-1] = "full"
    return lt


def _read_gemma3(r, s, ll, notes, warnings):
    """Gemma 3: 5 sliding : 1 full layers (sliding_window_pattern), head_dim 256 by default,
    per-head q/k norms, four norms per layer, gated GELU MLP, tied head."""
    L = s["num_layers"]
    s.update(ll)
    s.update(head_dim=r.int("head_dim", default=256), qk_norm="head", norms_per_layer=4,
             layer_types=_gemma_layer_types(r, L, force_last_full=False))
    if s["layer_types"] is None:
        del s["layer_types"]


def _read_gemma4(r, s, ll, notes, warnings):
    """Gemma 4 (transformers' Gemma4TextConfig): sliding layers of head_dim d and full layers of
    global_head_dim (512) with K = V when attention_k_eq_v; the last num_kv_shared_layers layers
    reuse an earlier layer's K/V (no k/v weights, no cache; MLP twice as wide with
    use_double_wide_mlp); per-layer embeddings (hidden_size_per_layer_input); optional MoE block
    beside the dense MLP in every layer."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll)
    d = r.int("head_dim", default=256)
    s.update(head_dim=d, qk_norm="head", norms_per_layer=4)
    L_cfg = r.int("num_hidden_layers", "num_layers") or L  # -l keeps the first L of them
    lt = _gemma_layer_types(r, L_cfg, force_last_full=True)
    if lt is None:
        lt = _layer_pattern(r, L_cfg, s)
        lt[-1] = "full"  # the config's last layer is global, as Gemma4TextConfig makes it
    lt = lt[:L]
    s["layer_types"] = lt
    d_g = r.int("global_head_dim", default=512)
    k_eq_v = r.bool("attention_k_eq_v", default=False)
    kv_g = r.int("num_global_key_value_heads", default=s["num_kv_heads"]) if k_eq_v else s["num_kv_heads"]
    n_shared = r.int("num_kv_shared_layers", lo=0, default=0)  # the config's last layers
    if n_shared >= L_cfg:
        r.fail("num_kv_shared_layers", f"leaves none of the {L_cfg} layers to hold the K/V it shares", n_shared)
    wide = r.bool("use_double_wide_mlp", default=False)
    p = r.int("hidden_size_per_layer_input", lo=0, default=256)
    r.used.add("vocab_size_per_layer_input")
    f = ll["ffn_hidden_size"]
    moe_block = r.bool("enable_moe_block", default=False)
    moe = None
    if moe_block:
        moe = {"kind": "moe", "width": r.int("moe_intermediate_size"), "linears": 3, "bias": False,
               "num_experts": r.int("num_experts"), "topk": r.int("top_k_experts"),
               "zero_experts": 0, "shared_width": 0, "shared_bias": False, "shared_gate": False,
               "router_bias": False}  # + router_extra below: its scale (h) and per-expert scale (E)
        if None in moe.values():
            raise CalcError(f"{r.where}: enable_moe_block needs num_experts, top_k_experts and moe_intermediate_size")
        moe["router_extra"] = h + moe["num_experts"]
    plc = r.sub("per_layer_config")  # written by transformers: {"05": {"head_dim": 512}, ...}
    per = {}
    if plc is not None:
        for key, val in plc.items():
            if not (isinstance(key, str) and key.isdigit() and isinstance(val, dict)):
                r.fail("per_layer_config", "must map layer numbers to objects", plc)
            sub = ConfigReader(val, f"{r.where} (per_layer_config {key})")
            per[int(key)] = {"head_dim": sub.int("head_dim"),
                             "kv_heads": sub.int("num_key_value_heads")}
    ov = {}
    for i in range(L):
        full = lt[i] == "full"
        shared = i >= L_cfg - n_shared  # with -l, the first L layers of the config
        if plc is not None:
            d_i = per.get(i, {}).get("head_dim") or d
            kv_i = per.get(i, {}).get("kv_heads") or s["num_kv_heads"]
        else:
            d_i, kv_i = (d_g, kv_g) if full else (d, s["num_kv_heads"])
        att = {"head_dim": d_i, "kv_heads": kv_i,
               "kv_proj": 0 if shared else (1 if full and k_eq_v else 2), "kv_shared": shared}
        o = {"attention": att, "norms": 4 + bool(p) + 3 * bool(moe)}  # + post-per-layer-input norm,
        if shared and wide:                                             # + the MoE branch's three
            o["mlp"] = {"width": 2 * f}
        if p:
            o["extra_params"] = 2 * p * h  # per-layer input gate (h -> p) and projection (p -> h)
        if moe:
            o["more_mlp"] = (moe,)
        ov[i] = o
    s["layer_overrides"] = ov
    if p:
        V_pl = r.int("vocab_size_per_layer_input", default=s["vocab_size"])
        s["per_layer_embedding_params"] = V_pl * L * p
        s["other_params"] = {"per_layer_model_projection": L * p * h, "per_layer_projection_norm": p}
        s["input_matmul_params"] = L * p * h  # every token's embedding runs through it once


def _read_olmo3(r, s, ll, notes, warnings):
    """OLMo 3: OLMo 2's block (post-norms only, q/k RMSNorms over all heads) with 3 sliding : 1 full
    layers."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, qk_norm="full")
    if not r.has("layer_types"):
        s["layer_types"] = ["full" if (i + 1) % 4 == 0 else "sliding" for i in range(L)]


def _read_smollm3(r, s, ll, notes, warnings):
    """SmolLM3: Llama block; every 4th layer without rotary positions (no_rope_layers), and with
    use_sliding_window those NoPE layers slide."""
    L = s["num_layers"]
    s.update(ll)
    s.update(num_kv_heads=r.int("num_key_value_heads", default=4),
             qkv_bias=r.bool("attention_bias", default=False), attn_out_bias=r.bool("attention_bias", default=False),
             mlp_bias=r.bool("mlp_bias", default=False), nope_layers=_nope_from_interval(r, L))
    if not r.has("layer_types"):
        slide = r.bool("use_sliding_window", default=False) and r.has("sliding_window")
        nope = set(s["nope_layers"])
        s["layer_types"] = ["sliding" if slide and i in nope else "full" for i in range(L)]


def _read_seed_oss(r, s, ll, notes, warnings):
    """Seed-OSS: biased q/k/v (attention_bias), o biased only with attention_out_bias."""
    s.update(ll)
    s.update(num_kv_heads=r.int("num_key_value_heads", default=8),
             head_dim=r.int("head_dim", default=128),
             qkv_bias=r.bool("attention_bias", default=True), attn_out_bias=r.bool("attention_out_bias", default=False),
             mlp_bias=r.bool("mlp_bias", default=False))


def _read_exaone4(r, s, ll, notes, warnings):
    """EXAONE 4: post-norms only, per-head q/k norms, no biases; 3 sliding : 1 full layers
    (sliding_window_pattern), the full layers without rotary positions when sliding is on."""
    L = s["num_layers"]
    s.update(ll)
    s.update(num_kv_heads=r.int("num_key_value_heads", default=32), qk_norm="head")
    w = (r.int("sliding_window", lo=0) or None)
    if not r.has("layer_types") and w:
        p = r.pick("sliding_window_pattern")[1]
        if isinstance(p, str):
            raise CalcError(f"{r.where}: sliding_window_pattern {p!r} needs layer_types (transformers "
                             "cannot derive them from a string either)")
        p = r.int("sliding_window_pattern", default=4)
        s["layer_types"] = ["sliding" if (i + 1) % p else "full" for i in range(L)]
    lt = s.get("layer_types") or _layer_pattern(r, L, s)
    if w and lt:
        s["nope_layers"] = [i for i in range(L) if lt[i] != "sliding"]


def _read_cohere2(r, s, ll, notes, warnings):
    """Cohere2 (Command R7B / A): one weight-only LayerNorm per layer feeding attention and MLP in
    parallel, 3 sliding : 1 full layers, rotary positions on the sliding layers only."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, norms_per_layer=1, parallel_attention=True,
             norm="rmsnorm")  # Cohere's LayerNorm has a weight and no bias: h weights, as RMSNorm
    w = (r.int("sliding_window", lo=0) or None)
    if not r.has("layer_types"):
        p = r.int("sliding_window_pattern", default=4)
        s["layer_types"] = ["sliding" if (i + 1) % p else "full" for i in range(L)] if w else None
    lt = s.get("layer_types") or _layer_pattern(r, L, s)
    s["nope_layers"] = [i for i in range(L) if not w or (lt and lt[i] != "sliding")]
