"""Family readers for the attention decoders transformers 5.24 builds beyond the first families:
Llama-style blocks with other norms, biases, MLPs, gates or q/k norms (GLM, GLM-4, OLMo, OLMoE,
FlexOlmo, Hunyuan, HyperCLOVA X, Granite SWA, Arcee, Jais 2, Nemotron, Apertus, Cohere, StableLM,
Persimmon, Phi-1/2, GPT-J, CodeGen, GPT-Neo, MPT, XGLM, ...), MoE and MLA variants (MiMo-V2-Flash,
MiniMax-M3, EXAONE MoE, AFMoE, Hunyuan V4, Gemma 3n, ...), and the text models of the
vision-language wrappers that reuse a text family (Qwen2-VL, Qwen3-VL, GLM-4V, ...); the
state-space and linear-attention families are in families_state.py. Each reader
is a few lines: the switches its modeling_<family>.py sets (checked against the meta-device build,
tests/test_all_types.py)."""

from ..errors import CalcError
from .families_dense import _read_gemma4, _read_generic_moe, _read_gpt2, _read_llama_like
from .reader import ConfigReader, _layer_pattern
from .families_moe import _mlp_pattern, _read_dsa, _read_dsa_every_layer, _read_glm4_moe, _read_granitemoe, _read_mla, _read_one_shared_expert, _read_routed_shared


def _llama(r, s, ll, notes, warnings, base, **over):
    """The Llama-style reading of `base` (a model_type _read_llama_like knows), then `over`."""
    mt = s["model_type"]
    s["model_type"] = base
    _read_llama_like(r, s, ll, notes, warnings)
    s["model_type"] = mt
    s.update(over)


def _read_glm(r, s, ll, notes, warnings):
    """GLM / GLM-4 (and GLM-4V's text model): biased q/k/v, unbiased o, a fused gate/up MLP; GLM-4
    adds a norm after attention and after the MLP (4 per layer)."""
    _llama(r, s, ll, notes, warnings, "llama", attn_out_bias=False,
           qkv_bias=r.bool("attention_bias", default=s["model_type"] != "glm_ocr_text"))  # GlmOcrTextConfig: no biases
    if s["model_type"] != "glm":
        s["norms_per_layer"] = 4
    s["fused_projections"] = ["gate_up"]  # GlmMLP / Glm4MLP: one gate_up_proj, chunked


def _read_glm4v_moe(r, s, ll, notes, warnings):
    """GLM-4.5V's text model: GLM-4.5's MoE block with biased q/k/v (attention_bias)."""
    _read_glm4_moe(r, s, ll, notes, warnings)
    s["qkv_bias"] = r.bool("attention_bias", default=True)


def _read_olmoe(r, s, ll, notes, warnings):
    """OLMoE / FlexOlmo: q/k RMSNorms over all heads, every layer a MoE of num_experts gated experts
    of width intermediate_size (FlexOlmo: OLMo-2's post-norms, the same count of norms)."""
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="full")
    _read_generic_moe(r, s, notes)
    notes.pop()


def _read_hunyuan(r, s, ll, notes, warnings):
    """Hunyuan V1 dense and MoE: per-head q/k RMSNorms (query_layernorm / key_layernorm with
    use_qk_norm); the MoE layer has num_experts experts of width moe_intermediate_size (else
    intermediate_size), a router h -> E (no bias), and num_shared_expert shared MLPs of width
    intermediate_size. Per-layer lists are read when every layer has the same value."""
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head" if r.bool("use_qk_norm", default=True) else "none")
    if s["model_type"] != "hunyuan_v1_moe":
        return
    f = s["ffn_hidden_size"]
    E = _same_int(r, "num_experts", 1)
    k = _same_int(r, "moe_topk", 1)
    n_sh = _same_int(r, "num_shared_expert", 1)
    f_e = _same_int(r, "moe_intermediate_size", f)
    s.update(moe=True, num_experts=E, topk=k, moe_ffn_hidden_size=f_e, num_shared_experts=n_sh,
             shared_expert_ffn_hidden_size=n_sh * f)


def _same_int(r, key, default):
    """An integer field that a family may also write as a per-layer list of one value."""
    v = r.cfg.get(key)
    if isinstance(v, list) and v and all(x == v[0] for x in v):
        r.used.add(key)
        v = v[0]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            r.fail(key, "must list non-negative integers", r.cfg.get(key))
        return v
    if isinstance(v, list):
        r.fail(key, "differs between layers, which this script does not describe", v)
    return r.int(key, default=default, lo=0)


def _read_post_norm(r, s, ll, notes, warnings):
    """HyperCLOVA X: a Llama block with a norm after attention and after the MLP (use_post_norm)."""
    _llama(r, s, ll, notes, warnings, "llama")
    if r.bool("use_post_norm", default=True):
        s["norms_per_layer"] = 4


def _read_sinks(r, s, ll, notes, warnings):
    """Granite SWA (dense and MoE): a Granite block with a learned sink logit per head, sliding and full layers
    as layer_types lists them."""
    if s["model_type"] == "granitemoe_swa":
        _read_granitemoe(r, s, ll, notes, warnings)
    else:
        _llama(r, s, ll, notes, warnings, "llama")
    s["attention_sinks"] = True
    r.used.add("layer_rope_theta")


def _read_two_linear(r, s, ll, notes, warnings):
    """Llama-style blocks whose MLP is two matrices (up, down; ReLU^2 or xIELU): Arcee, Nemotron
    (LayerNorm1p, weight and bias), Jais 2 (LayerNorm, biases on attention with attention_bias and
    on the MLP with mlp_bias), Apertus (per-head q/k RMSNorms, two learned xIELU scalars per MLP)."""
    mt = s["model_type"]
    _llama(r, s, ll, notes, warnings, "llama", num_mlp_linears=2)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=r.bool("mlp_bias", default=False))
    if mt in ("nemotron", "jais2"):  # (Cosmos 3 Edge's text model: RMSNorms, no biases)
        s["norm"] = "layernorm"
    if mt in ("apertus", "apertus1p5_text"):
        s.update(qk_norm="head", mlp_act_params=2)


def _read_olmo(r, s, ll, notes, warnings):
    """OLMo (1): LayerNorms without weights or bias; no biases."""
    _llama(r, s, ll, notes, warnings, "llama", norm="none")


def _read_cohere(r, s, ll, notes, warnings):
    """Cohere (Command R): one weight-only LayerNorm per layer feeding attention and MLP in
    parallel; per-head q/k LayerNorms (weights only) with use_qk_norm; Cohere 2 MoE: every layer a
    MoE of num_experts gated experts."""
    _llama(r, s, ll, notes, warnings, "llama", norms_per_layer=1, parallel_attention=True)
    if r.bool("use_qk_norm", default=False):
        s["qk_norm"] = "full"  # one weight per head and channel
    if s["model_type"] == "cohere2_moe":
        _read_generic_moe(r, s, notes)
        notes.pop()


def _read_stablelm(r, s, ll, notes, warnings):
    """StableLM: LayerNorms, q/k/v biases with use_qkv_bias, a gated MLP without biases; one norm
    with use_parallel_residual."""
    bias = r.bool("use_qkv_bias", default=False)
    par = r.bool("use_parallel_residual", default=False)
    _llama(r, s, ll, notes, warnings, "llama", norm="layernorm", qkv_bias=bias, attn_out_bias=False,
           parallel_attention=par, norms_per_layer=1 if par else 2)
    if r.bool("qk_layernorm", default=False):
        s.update(qk_norm="full", attn_norm="layernorm")  # a LayerNorm per head


def _read_persimmon(r, s, ll, notes, warnings):
    """Persimmon (and Fuyu's text model): LayerNorms, biases everywhere, a two-matrix ReLU^2 MLP,
    per-head q/k LayerNorms with qk_layernorm."""
    _llama(r, s, ll, notes, warnings, "llama", norm="layernorm", num_mlp_linears=2, qkv_bias=True,
           attn_out_bias=True, mlp_bias=True, attn_norm="layernorm",
           qk_norm="head" if r.bool("qk_layernorm", default=True) else "none")


def _read_phi(r, s, ll, notes, warnings):
    """Phi-1/1.5/2: one LayerNorm per layer feeding attention and MLP in parallel, biases
    everywhere, a two-matrix GELU MLP, per-head q/k LayerNorms with qk_layernorm."""
    _llama(r, s, ll, notes, warnings, "llama", norm="layernorm", num_mlp_linears=2, qkv_bias=True,
           attn_out_bias=True, mlp_bias=True, norms_per_layer=1, parallel_attention=True,
           attn_norm="layernorm", qk_norm="head" if r.bool("qk_layernorm", default=False) else "none",
           other_params={"lm_head_bias": s["vocab_size"]})


def _read_gptj(r, s, ll, notes, warnings):
    """GPT-J / CodeGen: one LayerNorm per layer feeding attention and MLP in parallel, no
    attention biases, a two-matrix GELU MLP of n_inner (default 4 h) with biases, rotary on
    rotary_dim of each head, an untied biased head."""
    h = s["hidden_size"]
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=False, attn_out_bias=False, mlp_bias=True,
             position_embedding="rope", norms_per_layer=1, parallel_attention=True,
             num_kv_heads=s["num_attention_heads"], head_dim=h // s["num_attention_heads"],
             ffn_hidden_size=r.int("n_inner", default=4 * h),
             other_params={"lm_head_bias": s["vocab_size"]})
    r.int("rotary_dim", default=None)
    r.used.update(("n_positions", "n_ctx"))


def _read_gpt_neo(r, s, ll, notes, warnings):
    """GPT-Neo: GPT-2's block (learned positions, LayerNorms, MLP of intermediate_size, default 4 h)
    with unbiased q/k/v, a biased output, and local layers attending within window_size
    (attention_layers: global / local)."""
    h, L = s["hidden_size"], s["num_layers"]
    rows = r.int("max_position_embeddings")
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=False, attn_out_bias=True, mlp_bias=True,
             position_embedding="learned", position_embedding_rows=rows, num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"], ffn_hidden_size=r.int("intermediate_size", default=4 * h))
    kinds = r.str_list("attention_layers", choices={"global", "local"}, length=L)
    r.used.add("attention_types")
    if kinds and "local" in kinds:
        s["layer_types"] = ["sliding" if k == "local" else "full" for k in kinds]
        s["sliding_window"] = r.int("window_size", default=256)


def _read_mellum(r, s, ll, notes, warnings):
    """Mellum: a Qwen3-MoE block (per-head q/k RMSNorms) whose MoE and dense layers
    mlp_layer_types lists (sparse / dense), experts of moe_intermediate_size."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    moe = _mlp_pattern(r, L, default_dense=())
    s.update(moe=bool(moe), num_experts=r.int("num_local_experts", "num_experts"),
             topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=r.int("moe_intermediate_size"),
             moe_layer_set=moe)


def _read_mla_family(r, s, ll, notes, warnings):
    """MLA decoders outside DeepSeek's own types (GLM-4.7-Flash `glm4_moe_lite`, Youtu, MiniCPM3):
    DeepSeek-V2's latent attention (kv_lora_rank, q_lora_rank), and where experts are given,
    routed + shared experts on the MoE layers of mlp_layer_types (else from first_k_dense_replace)."""
    _llama(r, s, ll, notes, warnings, "llama")
    _read_mla(r, s)
    if r.has("n_routed_experts") or r.has("num_experts"):
        _read_routed_shared(r, s, s["num_layers"], dense=range(r.int("first_k_dense_replace", lo=0, default=0)))


def _read_routed_moe(r, s, ll, notes, warnings):
    """Llama-style MoE decoders with per-head q/k norms, dense layers first and routed + shared
    experts (EXAONE MoE, AFMoE): the MoE layers from mlp_layer_types, else after
    first_k_dense_replace / num_dense_layers; AFMoE's attention has a sigmoid output gate (h -> a d),
    four norms per layer and a per-expert bias parameter in its router."""
    mt = s["model_type"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    n_dense = r.int("first_k_dense_replace", "num_dense_layers", lo=0, default=0)
    _read_routed_shared(r, s, s["num_layers"], dense=range(n_dense))
    if mt == "afmoe":  # + norms after attention and MLP, and a learned per-expert routing bias
        s.update(attn_output_gate="elementwise", norms_per_layer=4, router_has_bias=True)
        r.used.update(("global_attn_every_n_layers", "mup_enabled"))


def _read_bitnet(r, s, ll, notes, warnings):
    """BitNet b1.58: a Llama block with an RMSNorm before o_proj (h) and before down_proj (f)."""
    _llama(r, s, ll, notes, warnings, "llama", attn_extra_weights=s["hidden_size"],
           mlp_act_params=ll["ffn_hidden_size"])


def _read_diffllama(r, s, ll, notes, warnings):
    """DiffLlama (differential attention): a Llama block with four learned lambda vectors of
    head_dim per attention (lambda_q1, k1, q2, k2)."""
    _llama(r, s, ll, notes, warnings, "llama")
    s["attn_extra_weights"] = 4 * s["head_dim"]


def _read_phi4mm(r, s, ll, notes, warnings):
    """Phi-4-multimodal's language model: Phi-3's block (fused qkv and gate/up, no biases); its
    causal-LM class also holds the image and audio embedders (embed_tokens_extend), not counted."""
    _llama(r, s, ll, notes, warnings, "phi3")
    warnings.append("multimodal 'phi4_multimodal': the language model is counted; the image and audio "
                    "embedders (embed_tokens_extend) are not counted")


def _read_mllama(r, s, ll, notes, warnings):
    """Llama 3.2 Vision's text model: a Llama block, and on cross_attention_layers a cross-attention
    block of the same projections with per-head q/k RMSNorms and two tanh gates (attention, MLP);
    the token table has 8 more rows than the head (vocab_size + 8, MllamaTextModel)."""
    L, h = s["num_layers"], s["hidden_size"]
    _llama(r, s, ll, notes, warnings, "llama")
    cross = [i for i in r.int_list("cross_attention_layers", default=[]) if i < L]
    s["layer_overrides"] = {i: {"attention": {"qk_norm": "head", "extra_weights": 2}} for i in cross}
    s["other_params"] = {"image_token_rows": 8 * h}
    if cross:
        warnings.append(f"{len(cross)} cross-attention layers (cross_attention_layers) attend to the image "
                        "tokens: counted as weights; their FLOPs and cache are taken as self-attention's")


def _read_ernie45_vl(r, s, ll, notes, warnings):
    """ERNIE-4.5-VL MoE's text model: on the sparse layers of mlp_layer_types a text MoE and a vision
    MoE side by side (moe_num_experts each, widths moe_intermediate_size [text, vision], top
    moe_k, routers with a learned score-correction bias), shared experts of the text width; gated
    dense MLPs elsewhere; tied head."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama")
    widths = r.int_list("moe_intermediate_size", lo=1, length=2)
    E, k, n_sh = r.int("moe_num_experts"), r.int("moe_k"), r.int("moe_num_shared_experts", lo=0, default=0)
    moe = _mlp_pattern(r, L, default_dense=(0,))
    s.update(moe=bool(moe), num_experts=E, topk=k, moe_ffn_hidden_size=widths[0], num_shared_experts=n_sh,
             shared_expert_ffn_hidden_size=n_sh * widths[0], router_has_bias=True, moe_layer_set=moe)
    vision = {"kind": "moe", "width": widths[1], "linears": 3, "bias": False, "num_experts": E, "topk": k,
              "zero_experts": 0, "shared_width": 0, "shared_bias": False, "shared_gate": False, "router_bias": True}
    s["layer_overrides"] = {i: {"more_mlp": (vision,)} for i in moe}
    r.bool("use_bias", default=False)
    if moe:
        warnings.append("ERNIE-4.5-VL: each sparse layer also holds a vision MoE (counted); active counts k of "
                        "its experts, as an image token runs them (a text token runs none)")


def _read_molmo2(r, s, ll, notes, warnings):
    """Molmo 2's text model: a Llama block with per-head q/k RMSNorms (qk_norm_type qwen3; over all
    heads for olmo) and additional_vocab_size more token rows than the head."""
    _llama(r, s, ll, notes, warnings, "llama",
           qk_norm="full" if r.str("qk_norm_type", default="qwen3") == "olmo" else "head")
    extra = r.int("additional_vocab_size", lo=0, default=0)
    if extra:
        s["other_params"] = {"additional_vocab": extra * s["hidden_size"]}
    r.used.update(("rope_scaling_layers", "norm_after"))


def _read_mpt(r, s, ll, notes, warnings):
    """MPT: ALiBi (or learned positions with learned_pos_emb and no alibi), a fused q/k/v and an
    output projection, a two-matrix GELU MLP of expansion_ratio x d_model, LayerNorms; no biases
    and weight-only norms with no_bias; attention settings in attn_config (qk_ln: LayerNorms over
    q and k of width d_model each)."""
    h = s["hidden_size"]
    sub = r.sub("attn_config") or {}
    alibi = sub.get("alibi", False) is True
    no_bias = r.bool("no_bias", default=True)
    s.update(norm="rmsnorm" if no_bias else "layernorm", num_mlp_linears=2, qkv_bias=not no_bias,
             attn_out_bias=not no_bias, mlp_bias=not no_bias, num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"],
             ffn_hidden_size=int(r.num("expansion_ratio", default=4) * h),
             position_embedding="alibi" if alibi else "learned")
    if not alibi:
        s["position_embedding_rows"] = r.int("max_seq_len", default=2048)
    if sub.get("qk_ln"):
        s.update(qk_norm="full", attn_norm="layernorm" if not no_bias else "rmsnorm")
    r.used.update(("learned_pos_emb", "max_seq_len", "norm_type"))


def _read_mimo_v2(r, s, ll, notes, warnings):
    """MiMo-V2-Flash: keys of head_dim and values of v_head_dim (narrower); sliding layers have twice
    num_key_value_heads and a sink logit per head (modeling_mimo_v2_flash); dense layers and MoE
    layers (routed experts, a router whose score correction is a buffer) from mlp_layer_types."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama")
    dv = r.int("v_head_dim", default=s["head_dim"])
    _read_routed_shared(r, s, L, dense=())
    lt = s["layer_types"] = _layer_pattern(r, L, s) or ["full"] * L
    over = {}
    for i in range(L):
        a = {"v_dim": dv}
        if lt[i] == "sliding":
            a.update(kv_heads=2 * s["num_kv_heads"], sinks=True)
        over[i] = {"attention": a}
    s["layer_overrides"] = over
    r.used.add("attention_value_scale")


def _read_minimax_m3(r, s, ll, notes, warnings):
    """MiniMax-M3 (VL text model): per-head q/k RMSNorms; MoE layers of mlp_layer_types with
    num_local_experts experts of intermediate_size and one shared expert of
    shared_intermediate_size; dense layers of dense_intermediate_size. Layers listed as
    indexed_attention are refused (their indexer is not described)."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    lt = r.str_list("layer_types", choices={"full_attention", "sliding_attention", "indexed_attention"}, length=L)
    if lt and "indexed_attention" in lt:
        raise CalcError(f"{r.where}: indexed_attention layers (a top-k block indexer) are not counted by this "
                         "script yet")
    moe = _mlp_pattern(r, L, default_dense=())
    sh = r.int("shared_intermediate_size", lo=0, default=0)
    s.update(moe=bool(moe), num_experts=r.int("num_local_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=ll["ffn_hidden_size"], num_shared_experts=1 if sh else 0,
             shared_expert_ffn_hidden_size=sh, moe_layer_set=moe,
             ffn_hidden_size=r.int("dense_intermediate_size", default=ll["ffn_hidden_size"]))
    r.used.update(("rotary_dim", "swiglu_alpha", "swiglu_limit") + tuple(k for k in r.cfg if k.startswith("index_")))


def _read_gpt1_family(r, s, ll, notes, warnings):
    """GPT-2's block read from GPT-2's fields, with a family's changes: GPT-BigCode (StarCoder 1,
    SantaCoder) one K/V head with multi_query; GPT-1 (openai-gpt) norms after each block and no
    final norm, MLP 4 h."""
    _read_gpt2(r, s, ll, notes, warnings)
    mt = s["model_type"]
    if mt == "gpt_bigcode" and r.bool("multi_query", default=True):
        s["num_kv_heads"] = 1
        r.used.add("num_key_value_heads")
    if mt == "openai-gpt":
        s.update(final_norm=False, ffn_hidden_size=4 * s["hidden_size"])
        r.used.update(("afn",) + tuple(k for k in r.cfg if k.startswith("summary_")))


def _read_biogpt(r, s, ll, notes, warnings):
    """BioGPT: OPT's block (learned positions offset by 2 rows, LayerNorms, biases everywhere, a
    two-matrix GELU MLP, a final LayerNorm), tied head."""
    rows = r.int("max_position_embeddings", default=1024)
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="learned", position_embedding_rows=rows + 2,
             num_kv_heads=s["num_attention_heads"], head_dim=s["hidden_size"] // s["num_attention_heads"],
             ffn_hidden_size=ll["ffn_hidden_size"])


def _read_nanochat(r, s, ll, notes, warnings):
    """nanochat: RMSNorms without weights, a two-matrix ReLU^2 MLP, no biases (attention_bias)."""
    _llama(r, s, ll, notes, warnings, "llama", norm="none", num_mlp_linears=2)
    r.used.add("final_logit_softcapping")


def _read_kolibri(r, s, ll, notes, warnings):
    """Kolibri 1: per-head q/k RMSNorms, norms after attention and MLP (4 per layer), every layer a
    MoE of num_local_experts experts of moe_intermediate_size with one shared expert of
    shared_expert_intermediate_size; sliding and full layers as layer_types lists them."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head", norms_per_layer=4)
    sh = r.int("shared_expert_intermediate_size", lo=0, default=0)
    s.update(moe=True, num_experts=r.int("num_local_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=r.int("moe_intermediate_size"), num_shared_experts=1 if sh else 0,
             shared_expert_ffn_hidden_size=sh, moe_layer_set=_mlp_pattern(r, L, default_dense=()))


def _read_axk1(r, s, ll, notes, warnings):
    """A.X K1: DeepSeek-V3's block (MLA, routed + shared experts on the sparse layers of
    mlp_layer_types) with one more RMSNorm after each MoE block (post_mlp_layernorm)."""
    _read_mla_family(r, s, ll, notes, warnings)
    s["layer_overrides"] = {i: {"norms": 3} for i in s.get("moe_layer_set") or ()}


def _read_laguna(r, s, ll, notes, warnings):
    """Laguna: per-head q/k RMSNorms and a per-head sigmoid output gate (g_proj h -> a, with
    gating); dense and MoE layers from mlp_layer_types, experts of moe_intermediate_size, one shared
    expert of shared_expert_intermediate_size, a learned score-correction bias in the router."""
    L = s["num_layers"]
    heads = r.int_list("num_attention_heads_per_layer", lo=1, length=L, default=None)
    if heads and any(x != s["num_attention_heads"] for x in heads):
        raise CalcError(f"{r.where}: num_attention_heads_per_layer differs between layers, which this "
                         "script does not describe yet")
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head",
           attn_output_gate="headwise" if r.bool("gating", default=True) else "none")
    _read_one_shared_expert(r, s, _mlp_pattern(r, L, default_dense=()), router_has_bias=True)
    r.used.update(("moe_routed_scaling_factor", "moe_apply_router_weight_on_input", "moe_router_logit_softcapping"))


def _read_flint(r, s, ll, notes, warnings):
    """Flint: a Qwen3-MoE block (per-head q/k RMSNorms) with a sink logit per head, dense layers
    mlp_only_layers, MoE on the others every decoder_sparse_step-th with one ungated shared expert
    of shared_expert_intermediate_size."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head", attention_sinks=True)
    step = r.int("decoder_sparse_step", default=1)
    only = set(r.int_list("mlp_only_layers", default=[]))
    _read_one_shared_expert(r, s, [i for i in range(L) if i not in only and (i + 1) % step == 0])


def _read_beam(r, s, ll, notes, warnings):
    """Beam: per-head q/k RMSNorms, an elementwise sigmoid output gate (gate_proj h -> a d) with a
    learned bias per head, four norms per layer; dense and MoE layers from mlp_layer_types (routed
    experts only)."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head", attn_output_gate="elementwise",
           norms_per_layer=4)
    s["attn_extra_weights"] = s["num_attention_heads"]
    s.update(moe=True, num_experts=r.int("num_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=r.int("moe_intermediate_size"), moe_layer_set=_mlp_pattern(r, L, default_dense=()))
    r.used.add("final_logit_softcapping")


def _read_xglm(r, s, ll, notes, warnings):
    """XGLM and the Kosmos-2 / 2.5 text models: sinusoidal positions (no weights), LayerNorms,
    biases everywhere, a two-matrix GELU MLP of ffn_dim, a final LayerNorm, tied head. Kosmos-2
    adds a LayerNorm inside attention (over h) and inside the MLP (over ffn_dim); Kosmos-2.5 the
    LayerNorm inside the MLP and a 2-row segment embedding."""
    mt, h = s["model_type"], s["hidden_size"]
    f = r.int("ffn_dim")
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="none", num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"], ffn_hidden_size=f)
    if mt == "kosmos_2_text_model":
        s.update(attn_extra_weights=2 * h, mlp_act_params=2 * f)
    if mt == "kosmos_2_5_text_model":
        s.update(mlp_act_params=2 * f, other_params={"segment_embedding": 2 * h})
    r.used.update(("scale_embedding", "activation_function"))


def _read_ctrl(r, s, ll, notes, warnings):
    """CTRL: sinusoidal positions, LayerNorms, biases everywhere, a two-matrix ReLU MLP of dff, a
    final LayerNorm, a tied head with its own bias (V)."""
    h = s["hidden_size"]
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="none", num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"], ffn_hidden_size=r.int("dff"),
             other_params={"lm_head_bias": s["vocab_size"]})
    r.used.add("n_positions")


def _read_neox_japanese(r, s, ll, notes, warnings):
    """GPT-NeoX-Japanese: GPT-NeoX's block without biases but on the last layer's attention output,
    an MLP of intermediate_multiple_size x h, LayerNorms, rotary."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="rope", num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"],
             ffn_hidden_size=r.int("intermediate_multiple_size", default=4) * h)
    s["layer_overrides"] = {L - 1: {"attention": {"out_bias": True}}}


def _read_aria(r, s, ll, notes, warnings):
    """Aria's text model: every layer a MoE of moe_num_experts experts of intermediate_size (top
    moe_topk) and moe_num_shared_experts shared experts of that width, router without bias."""
    L, f = s["num_layers"], ll["ffn_hidden_size"]
    _llama(r, s, ll, notes, warnings, "llama")
    n_sh = r.int("moe_num_shared_experts", lo=0, default=2)
    s.update(moe=True, num_experts=r.int("moe_num_experts"), topk=r.int("moe_topk"), moe_ffn_hidden_size=f,
             num_shared_experts=n_sh, shared_expert_ffn_hidden_size=n_sh * f, moe_layer_set=list(range(L)))


def _read_gemma4_unified(r, s, ll, notes, warnings):
    """Gemma 4 unified's text model: Gemma 4's block (per_layer_config head dims) without per-layer
    embeddings unless hidden_size_per_layer_input says so."""
    r.cfg = {**r.cfg, "hidden_size_per_layer_input": r.cfg.get("hidden_size_per_layer_input") or 0}
    _read_gemma4(r, s, ll, notes, warnings)
    r.used.add("use_bidirectional_attention")


def _read_reference_sliding(r, s, ll, notes, warnings):
    """Unlimited-OCR's text model: DeepSeek-V2's MoE layout without MLA (routed + shared experts on
    the sparse layers of mlp_layer_types), reference_sliding_attention layers counted as sliding
    ones (same weights; their cache and FLOPs as a sliding window's, stated)."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama")
    _read_routed_shared(r, s, L, dense=(0,))
    lt = r.str_list("layer_types", choices={"reference_sliding_attention", "sliding_attention", "full_attention"},
                    length=L)
    if lt:
        s["layer_types"] = ["full" if t == "full_attention" else "sliding" for t in lt]
        if "reference_sliding_attention" in lt:
            warnings.append("reference_sliding_attention layers: weights counted; their cache and FLOPs are "
                            "taken as a sliding window's (the reference tokens they also see are not modelled)")


def _read_modernbert_decoder(r, s, ll, notes, warnings):
    """ModernBERT decoder: bias-free LayerNorms (weights only) after the embedding, before attention
    (not on layer 0) and before the MLP; a fused gated MLP (Wi h -> 2 f, Wo f -> h); no biases;
    sliding and full layers (layer_types); a head transform (dense h x h and a norm) before the tied
    decoder, which has a bias (V)."""
    h = s["hidden_size"]
    _llama(r, s, ll, notes, warnings, "llama", embedding_norm=True, layer_overrides={0: {"norms": 1}},
           other_params={"head_dense": h * h, "head_norm": h, "decoder_bias": s["vocab_size"] * r.bool("decoder_bias", default=True)})
    if r.bool("norm_bias", default=False):
        s["norm"] = "layernorm"
    r.used.update(("local_attention", "classifier_bias", "classifier_activation", "initializer_cutoff_factor"))


def _read_muse_glimmer(r, s, ll, notes, warnings):
    """Muse Glimmer's text model: an elementwise sigmoid output gate (gate_proj h -> a d), norms
    before and after attention and MLP (4 per layer), sliding and full layers (layer_types)."""
    _llama(r, s, ll, notes, warnings, "llama", attn_output_gate="elementwise", norms_per_layer=4)
    r.used.update(("layer_rope_theta", "qk_scale_factor", "output_multiplier", "final_logit_softcapping"))


def _read_muse_spark(r, s, ll, notes, warnings):
    """Muse Spark's text model: an elementwise sigmoid output gate, three norms and two learned
    residual gates (h each) per layer, sliding and full layers; MoE layers (mlp_layer_types) whose
    experts work in a latent of moe_hidden_size m: a projection h -> m with a norm, E gated experts
    m -> f -> m, a norm and a projection m -> h; the router reads h. The experts' weights 3 m f equal
    a gated expert of width m f / h on h (so counted, FLOPs alike); the latent projections are
    matmuls every token runs (extra_params); the latent norms and residual gates are counted with
    the attention block's weights."""
    L, h = s["num_layers"], s["hidden_size"]
    m, f = r.int("moe_hidden_size"), r.int("moe_intermediate_size")
    if (m * f) % h:
        raise CalcError(f"{r.where}: moe_hidden_size x moe_intermediate_size is not a multiple of hidden_size")
    _llama(r, s, ll, notes, warnings, "llama", attn_output_gate="elementwise", norms_per_layer=3)
    moe = _mlp_pattern(r, L, default_dense=())
    s.update(moe=bool(moe), num_experts=r.int("num_local_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=m * f // h, moe_layer_set=moe, attn_extra_weights=2 * h,
             layer_overrides={i: {"extra_params": 2 * h * m, "attention": {"extra_weights": 2 * h + 2 * m}}
                              for i in moe})
    r.used.update(("layer_rope_theta", "qk_scale_factor", "output_multiplier", "final_logit_softcapping",
                   "residual_gate_temperature"))


def _read_hy_v4(r, s, ll, notes, warnings):
    """Hunyuan V4: GLM-5's sparse attention (MLA with a lightning indexer, shared-indexer layers from
    indexer_types) with a sink logit per head and an elementwise sigmoid output gate (gate_proj
    h -> a d_v); dense then MoE layers (mlp_layer_types, one shared expert); hyper-connections over
    hc_mult streams without DeepSeek-V4's combination matrix (HYV4HyperConnection: per module a
    projection 4 h x 2 hc, 2 hc biases and 2 scales; one head module, hc x hc h + hc + 1). The gate
    and the hyper-connection projections are matmuls every token runs (extra_params, their FLOPs
    counted: 2 per weight for the gate, 2 x 2 hc x hc h per module)."""
    h = s["hidden_size"]
    _read_dsa(r, s, ll, notes, warnings)
    a, dv, hc = s["num_attention_heads"], s["v_head_dim"], r.int("hc_mult", default=4, hi=1024)
    s["attention_sinks"] = True
    gate = h * a * dv
    s.update(extra_params_per_layer=gate + 2 * (2 * hc * hc * h + 2 * hc + 2),
             extra_flops_per_layer=2 * gate + 2 * (2 * 2 * hc * hc * h),
             other_params={"hc_head": hc * hc * h + hc + 1}, input_matmul_params=hc * hc * h,
             residual_streams=hc)
    r.used.update(("hc_magnitude", "hc_eps", "learnable_sink_init", "swiglu_limit"))


def _read_moshi(r, s, ll, notes, warnings):
    """Moshi's temporal transformer (MoshiForCausalLM): a Llama block whose MLP fuses gate and up
    (fc1 h -> ffn_dim, fc2 ffn_dim / 2 -> h), no biases, a token table one row longer than the head;
    the audio codec and depth decoder of the full Moshi are not part of this class."""
    _llama(r, s, ll, notes, warnings, "llama", ffn_hidden_size=r.int("ffn_dim") // 2,
           other_params={"extra_token_row": s["hidden_size"]})
    r.used.update(("audio_vocab_size", "num_codebooks", "audio_encoder_config"))


def _read_gemma3n(r, s, ll, notes, warnings):
    """Gemma 3n's text model: Gemma 4's block with one head_dim on every layer (per-layer inputs,
    the last num_kv_shared_layers reusing earlier K/V), plus per layer AltUp over altup_num_inputs
    n streams (a modality router n x h and its norm, prediction n^2 x n and correction n x n
    coefficients, an output scale h) and a Laurel low-rank residual (h -> laurel_rank -> h, a norm);
    n - 1 AltUp projections in and n - 1 out (h x h each) for the model. The MLP width per layer
    (intermediate_size, a list) must be one value. Activation sparsity has no weights. FLOPs add per
    token AltUp's prediction product (n x n coefficients per channel, 2 n^2 h) and its router's second
    run in the correction (2 n h), matmuls transformers' Gemma3nTextAltUp runs (FlopCounterMode)."""
    h = s["hidden_size"]
    f = r.cfg.get("intermediate_size")
    if isinstance(f, list):
        r.used.add("intermediate_size")
        if not f or any(x != f[0] for x in f) or isinstance(f[0], bool) or not isinstance(f[0], int):
            r.fail("intermediate_size", "differs between layers, which this script does not describe yet", f)
        ll = dict(ll, ffn_hidden_size=f[0])
    r.cfg = {**r.cfg, "global_head_dim": r.cfg.get("head_dim") or 256, "attention_k_eq_v": False,
             "use_double_wide_mlp": False}
    _read_gemma4(r, s, ll, notes, warnings)
    n, rank = r.int("altup_num_inputs", default=4), r.int("laurel_rank", default=64)
    for o in s["layer_overrides"].values():
        o["norms"] += 2  # AltUp's router norm, Laurel's post norm
        o["extra_params"] = o.get("extra_params", 0) + 2 * rank * h + n * h + n ** 3 + n * n
        o["weightless_flops"] = 2 * (n * n * h + n * h)  # AltUp's prediction (n x n per channel), router rerun
        o["attention"] = dict(o["attention"], extra_weights=h)  # AltUp's correct_output_scale
    s["other_params"] = dict(s.get("other_params") or {}, altup_projections=2 * (n - 1) * h * h)
    s["input_matmul_params"] = s.get("input_matmul_params", 0) + 2 * (n - 1) * h * h
    r.used.update(("altup_active_idx", "altup_coef_clip", "altup_correct_scale", "activation_sparsity_pattern",
                   "final_logit_softcapping"))


def _read_git(r, s, ll, notes, warnings):
    """GIT's text decoder (GitForCausalLM; its image encoder is not counted): BERT's post-norm block
    (LayerNorms after attention and after the MLP, biases everywhere, a two-matrix GELU MLP), learned
    positions and a LayerNorm on the embeddings, no final norm, an untied head with a bias."""
    h = s["hidden_size"]
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="learned", position_embedding_rows=r.int("max_position_embeddings", default=1024),
             embedding_norm=True, final_norm=False, num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"], ffn_hidden_size=ll["ffn_hidden_size"],
             other_params={"lm_head_bias": s["vocab_size"]})
    if isinstance(r.cfg.get("vision_config"), dict):
        warnings.append("GIT: the text decoder is counted; the image encoder and its projection are not counted")
    r.used.update(("num_image_with_embedding", "vision_config"))


def _read_cpmant(r, s, ll, notes, warnings):
    """CPM-Ant: weight-only LayerNorms before attention and MLP, q/k/v/o without biases (heads of
    dim_head), a gated GELU MLP of dim_ff, a final norm; the token table also holds
    prompt_types x prompt_length prompt rows, a segment table (segment_types rows) and a relative
    position bias per head over segment_types^2 + position_bias_num_buckets buckets; the head is its
    own tensor of vocab_size rows."""
    h, a = s["hidden_size"], s["num_attention_heads"]
    seg = r.int("segment_types", default=32)
    s.update(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="none", num_kv_heads=a, head_dim=r.int("dim_head", default=h // a),
             ffn_hidden_size=r.int("dim_ff"), tied_embeddings=False,
             other_params={"prompt_rows": r.int("prompt_types", default=32) * r.int("prompt_length", default=32) * h,
                           "segment_embedding": seg * h,
                           "position_bias": (seg * seg + r.int("position_bias_num_buckets", default=512)) * a})
    r.bool("tie_word_embeddings", default=True)  # the head cannot be tied: the tables differ in rows
    r.used.update(("position_bias_max_distance",))


def _read_dots3(r, s, ll, notes, warnings):
    """dots3: MLA on every layer with a per-head sigmoid gate (g_proj h -> a) and a norm on the rotary
    key slice (d_rope); indexed_attention layers add DeepSeek-V3.2's lightning indexer, sliding
    layers (window sliding_window) have none; per_layer_config changes a layer's heads, latent rank
    and d_nope; dense then MoE layers (mlp_layer_types) with n_shared_experts shared experts of
    shared_experts_intermediate_size."""
    L = s["num_layers"]
    lt = r.str_list("layer_types", choices={"indexed_attention", "sliding_attention"}, length=L)
    if lt is None:
        r.fail("layer_types", "must list indexed_attention and sliding_attention layers", None)
    _read_dsa_every_layer(r, s, ll, notes, warnings)
    f_sh = r.int("shared_experts_intermediate_size", "moe_shared_expert_intermediate_size",
                 default=s["moe_ffn_hidden_size"])  # x n_shared_experts (modeling_dots3_note)
    s["shared_expert_ffn_hidden_size"] = f_sh * s["num_shared_experts"]
    s.update(attn_output_gate="headwise", attn_extra_weights=s["qk_rope_head_dim"],
             layer_types=["sliding" if t == "sliding_attention" else "full" for t in lt],
             sliding_window=r.int("sliding_window", default=512))
    plc = r.sub("per_layer_config") or {}
    over = s.get("layer_overrides") or {}
    for i in range(L):
        a = {}
        cfg_i = plc.get(f"{i:02d}", plc.get(str(i)))
        if cfg_i is not None and not isinstance(cfg_i, dict):
            r.fail("per_layer_config", f"entry {i} must be a JSON object", cfg_i)
        if cfg_i is not None:
            sub = ConfigReader(cfg_i, f"{r.where} (per_layer_config {i})")
            heads = sub.int("num_attention_heads", default=s["num_attention_heads"])
            a.update(heads=heads, kv_heads=heads, kv_lora_rank=sub.int("kv_lora_rank", default=s["kv_lora_rank"]),
                     qk_nope_head_dim=sub.int("qk_nope_head_dim", default=s["qk_nope_head_dim"]))
        if lt[i] == "sliding_attention":
            a.update(index_heads=0, index_head_dim=0, index_topk=0)
        if a:
            o = over.setdefault(i, {})
            o["attention"] = dict(o.get("attention", {}), **a)
    s["layer_overrides"] = over
    r.used.add("use_sliding_window")


def _read_doge(r, s, ll, notes, warnings):
    """Doge (dense; modeling_doge): Llama-style attention with per-head q/k RMSNorms and a dynamic
    mask from the values (dt_proj kv d -> kv, a matmul every token runs, + bias with
    attention_bias; a learned A per kv head), learned per-channel residual scales before attention
    and before the MLP (2 h). Its cross-domain MoE (is_moe: product-key retrieval experts) is
    refused."""
    if r.bool("is_moe", default=False):
        raise CalcError(f"{r.where}: Doge with is_moe (product-key retrieval experts) is not counted by this "
                         "script yet")
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    kv, d, h = s["num_kv_heads"], s["head_dim"], s["hidden_size"]
    s.update(attn_extra_weights=kv + kv * s["qkv_bias"] + 2 * h, extra_params_per_layer=kv * d * kv)
    r.used.update(("keep_window_size", "num_experts", "num_experts_per_tok"))


def _read_hrm_text(r, s, ll, notes, warnings):
    """HRM text (modeling_hrm_text): a low-level and a high-level stack of num_layers_per_stack
    layers each (attention with an elementwise sigmoid output gate h -> a d, a gated MLP, weightless
    RMSNorms), run as num_hidden_layers = num_layers_per_stack x H_cycles x (L_cycles + 1) slots: per
    high cycle, L_cycles passes of the low stack, then one of the high stack (each slot its own
    cache layer). The layer list here is the slots; a slot whose stack layer an earlier slot ran
    holds no weights of its own (tied), so weights count once and FLOPs and cache per slot. The
    frozen initial low-level state z_L_init (h) is a parameter."""
    _llama(r, s, ll, notes, warnings, "llama", attn_output_gate="elementwise", norm="none", final_norm=False)
    n, H, Lc = r.int("num_layers_per_stack"), r.int("H_cycles", default=2), r.int("L_cycles", default=3)
    L = s["num_layers"]
    if not s.get("_layers_from_flag") and L != n * H * (Lc + 1):
        raise CalcError(f"{r.where}: num_hidden_layers {L} is not num_layers_per_stack x H_cycles x (L_cycles + 1) "
                         f"= {n * H * (Lc + 1)}; transformers' cache would not match it")
    first_high = Lc * n  # the high stack first runs after L_cycles passes of the low one
    s["layer_overrides"] = {i: {"attention": {"tied": True}, "mlp": {"tied": True}} for i in range(L)
                            if not (i < n or first_high <= i < first_high + n)}
    s["other_params"] = {"z_L_init": s["hidden_size"]}
    r.used.update(("L_bp_cycles", "embedding_scale", "prefix_lm"))


# model_type -> reader, for config.py's registry; the wrappers' text models read as their family.
MORE_READERS = {
    "dots3_note_text": _read_dots3,
    "cpmant": _read_cpmant,
    "git": _read_git,
    "glm": _read_glm, "glm4": _read_glm, "glm4v_text": _read_glm, "glm_ocr_text": _read_glm,
    "glm4v_moe_text": _read_glm4v_moe, "olmoe": _read_olmoe, "flex_olmo": _read_olmoe,
    "hunyuan_v1_dense": _read_hunyuan, "hunyuan_v1_moe": _read_hunyuan, "hunyuan_vl_text": _read_hunyuan,
    "hyperclovax": _read_post_norm, "granite_swa": _read_sinks, "granitemoe_swa": _read_sinks,
    "arcee": _read_two_linear, "nemotron": _read_two_linear, "jais2": _read_two_linear,
    "apertus": _read_two_linear, "olmo": _read_olmo, "cohere": _read_cohere, "cohere2_moe": _read_cohere,
    "stablelm": _read_stablelm, "persimmon": _read_persimmon, "phi": _read_phi, "gptj": _read_gptj,
    "codegen": _read_gptj, "gpt_neo": _read_gpt_neo, "mellum": _read_mellum, "glm4_moe_lite": _read_mla_family,
    "youtu": _read_mla_family, "minicpm3": _read_mla_family, "exaone_moe": _read_routed_moe,
    "afmoe": _read_routed_moe, "bitnet": _read_bitnet, "diffllama": _read_diffllama,
    "ernie4_5_vl_moe_text": _read_ernie45_vl, "molmo2_text": _read_molmo2, "phi4_multimodal": _read_phi4mm,
    "mllama_text_model": _read_mllama, "mimo_v2_flash": _read_mimo_v2, "minimax_m3_vl_text": _read_minimax_m3,
    "apertus1p5_text": _read_two_linear, "gpt_bigcode": _read_gpt1_family, "openai-gpt": _read_gpt1_family,
    "biogpt": _read_biogpt, "nanochat": _read_nanochat, "kolibri1": _read_kolibri, "axk1": _read_axk1,
    "laguna": _read_laguna, "flint": _read_flint, "beam": _read_beam, "xglm": _read_xglm,
    "kosmos_2_text_model": _read_xglm, "kosmos_2_5_text_model": _read_xglm, "ctrl": _read_ctrl,
    "gpt_neox_japanese": _read_neox_japanese, "aria_text": _read_aria,
    "gemma4_unified_text": _read_gemma4_unified, "unlimited_ocr_text": _read_reference_sliding,
    "cosmos3_edge_text": _read_two_linear, "muse_glimmer_text": _read_muse_glimmer,
    "muse_spark_text": _read_muse_spark, "hy_v4": _read_hy_v4, "moshi": _read_moshi,
    "gemma3n_text": _read_gemma3n, "doge": _read_doge, "hrm_text": _read_hrm_text, "modernbert-decoder": _read_modernbert_decoder, "mpt": _read_mpt,
}
# Families whose configs name the basic sizes otherwise: read as the usual names.
FIELD_ALIASES = {"attention_heads": "num_attention_heads", "layers": "num_hidden_layers",
                 "embed_dim": "hidden_size"}
ALIASED = {"xglm", "kosmos_2_text_model", "kosmos_2_5_text_model"}


# Text models of wrappers (and renamed families) that transformers builds with a known family's
# block: read as that family.
SAME_AS = {"qwen2_vl_text": "qwen2", "qwen2_5_vl_text": "qwen2", "qwen2_5_omni_text": "qwen2",
           "qwen3_vl_text": "qwen3", "qwen3_vl_moe_text": "qwen3_moe", "qwen3_omni_moe_text": "qwen3_moe",
           "sarvam_moe": "glm4_moe", "sarvam_mla": "deepseek_v3", "hy_v4_vl_text": "hy_v4"}
