"""spec_from_hf_config: a config.json, or the text model of a multimodal wrapper, read by its
family's reader (the registry below) into a flat spec; the checkpoint's quantization format
(compressed-tensors, FP8 blocks, MXFP4, ModelOpt NVFP4/FP8/AWQ) and the bits each weight is stored at."""

from ..errors import CalcError
from .families_dense import (_read_bloom, _read_cohere2, _read_exaone4, _read_falcon, _read_gemma3,
    _read_gemma4, _read_generic_moe, _read_gpt2, _read_gpt_neox, _read_llama_like, _read_olmo3,
    _read_opt, _read_seed_oss, _read_smollm3, _read_starcoder2)
from .families_hybrid import (_nemotron_blocks, _read_falcon_h1, _read_granitemoehybrid,
    _read_jamba, _read_kimi_linear, _read_lfm3, _read_nemotron_h, _read_olmo_hybrid,
    _read_qwen_gdn)
from .families_moe import (_read_axk2, _read_dbrx, _read_deepseek_v4, _read_dsa, _read_ernie45_moe, _read_glm4_moe,
    _read_gpt_oss, _read_granitemoe, _read_hy_v3, _read_llama4, _read_longcat, _read_minimax_m2,
    _read_mistral_large4, _read_phimoe, _read_step3p5)
from .families_more import ALIASED, FIELD_ALIASES, MORE_READERS, SAME_AS
from .families_moa import MOA_READERS
from .families_sconv import SCONV_READERS
from .families_state import ATTENTION_FREE, STATE_READERS
from .reader import ConfigReader, _layer_pattern


# Hugging Face config classes whose tie_word_embeddings default is True when config.json omits it
# (PretrainedConfig's default); the others pass tie_word_embeddings=False in their constructors.
_TIED_BY_DEFAULT = set("gpt2 opt bloom falcon gemma gemma2 starcoder2 gemma3_text gemma4_text "
                       "cohere2 exaone4 smollm3 granitemoe olmo3 seed_oss llama4_text lfm3".split())

# model_types that transformers builds but these readers do not describe: exit 2 with the reason
# (one line each) rather than print a Llama-style count. tests/test_all_types.py holds every type
# transformers 5.24 builds to this list.
_SSM = "has linear-attention or state-space layers, which this script does not count yet"
# Checked on the meta device (transformers 5.24, VALIDATION.md): the BERT-style causal-LM classes build with
# is_decoder False (bidirectional, no cross-attention) from their defaults; the encoder-decoder families'
# causal-LM classes are their decoders, every layer with cross-attention to the encoder's states.
_ENCODER = "is an encoder (bidirectional, BERT-style) model; this script counts decoder-only LMs"
_ENC_DEC = ("is an encoder-decoder model (its causal-LM class is the decoder, cross-attending to the encoder's "
            "states); this script counts decoder-only LMs")
_NOT_YET = {
    "plamo2": _SSM,  # PLaMo 2 (Mamba + attention) is not in transformers 5.24: a hub config of it exits here
    **dict.fromkeys("bert bert-generation big_bird camembert data2vec-text electra ernie megatron-bert rembert "
                    "roberta roberta-prelayernorm roc_bert roformer xlm xlm-roberta xlm-roberta-xl xmod "
                    "blip_text_model".split(), _ENCODER),
    **dict.fromkeys("bart bigbird_pegasus blenderbot blenderbot-small marian mbart mvp pegasus plbart "
                    "prophetnet trocr whisper pix2struct_text_model".split(), _ENC_DEC),
    "xlnet": "is XLNet's two-stream permutation LM (relative attention, segment biases), not a decoder-only LM",
    "blt": "is a byte-level latent transformer (local encoder and decoder around a global model), which "
           "this script does not count yet",
}
# Config fields that only layers of those kinds have: an unknown model_type showing them exits 2.
_FOREIGN_LAYER_FIELDS = tuple("linear_num_key_heads linear_num_value_heads linear_key_head_dim "
                              "linear_conv_kernel_dim mamba_d_state mamba_n_heads mamba_d_conv "
                              "ssm_state_size state_size conv_kernel layers_block_type "
                              "hybrid_override_pattern attn_layer_period attn_layer_offset "
                              "block_types layer_block_types full_attn_idxs linear_attn_config "
                              "short_conv".split())


# The text model a multimodal wrapper holds, when its text_config does not name its own type.
_WRAPPED_TEXT_TYPE = {"gemma3": "gemma3_text", "gemma4": "gemma4_text", "llama4": "llama4_text",
                      "mistral3": "mistral", "kimi_k25": "deepseek_v3",
                      "mistral_large4": "mistral_large4_text", "qwen3_5": "qwen3_5_text",
                      "qwen3_5_moe": "qwen3_5_moe_text", "step3p7": "step3p5"}
# Fields transformers' text config classes fill in when a wrapper's text_config omits them (Gemma 3's
# published configs list only a few): the class defaults of transformers 5.23.
_TEXT_CLASS_DEFAULTS = {
    "gemma3_text": {"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
                    "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
                    "head_dim": 256, "sliding_window": 4096},
    "gemma4_text": {"vocab_size": 262144, "hidden_size": 2304, "intermediate_size": 9216,
                    "num_hidden_layers": 30, "num_attention_heads": 8, "num_key_value_heads": 4,
                    "head_dim": 256, "sliding_window": 512},
    "llama4_text": {"vocab_size": 202048, "hidden_size": 5120, "intermediate_size": 8192,
                    "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8,
                    "head_dim": 128},
    "mistral": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128},
}
_WRAPPER_TIED = {"gemma3": True, "gemma4": True, "llama4": False, "mistral3": True, "kimi_k25": True,
                 "mistral_large4": False}


def _read_multimodal(cfg, where, warnings):
    """Unwrap a vision-language config to its text model. Returns (text_cfg, wrapper_info)."""
    top = ConfigReader(cfg, where)
    mt = top.str("model_type", default=None)
    text = top.sub("text_config")
    if text is None or top.has("hidden_size") and not top.has("vision_config"):
        return cfg, None
    text = dict(text)
    text.setdefault("model_type", _WRAPPED_TEXT_TYPE.get(mt, mt))
    # transformers 5 ties the head by the wrapper's own switch (class defaults differ from the text's)
    # transformers 5 ties the head by the wrapper's own switch; a published config that sets only the
    # text's switch describes a checkpoint whose head is its own tensor (from_pretrained keeps it so)
    text_tie = ConfigReader(text, where).bool("tie_word_embeddings", default=None)
    top_tie = top.bool("tie_word_embeddings", default=None)
    if text.get("model_type") == "kimi_k2":
        text["model_type"] = "deepseek_v3"  # transformers reads Kimi's text model as DeepSeek-V3
    filled = [k for k in _TEXT_CLASS_DEFAULTS.get(text["model_type"], {}) if k not in text]
    for key in filled:
        text[key] = _TEXT_CLASS_DEFAULTS[text["model_type"]][key]
    if filled:
        warnings.append(f"text_config omits {', '.join(filled)}: transformers' {text['model_type']} class "
                        "defaults used, as transformers does")
    text_default = text["model_type"] in _TIED_BY_DEFAULT
    text["tie_word_embeddings"] = (top_tie if top_tie is not None else
                                   text_tie if text_tie is not None else text_default)
    if top_tie is None and text_tie is None and _WRAPPER_TIED.get(mt, False) != text_default:
        warnings.append(f"no tie_word_embeddings in the config: transformers 5 builds {mt!r} with "
                        f"{'a tied' if _WRAPPER_TIED.get(mt) else 'an untied'} head (its class default), "
                        f"but the checkpoint's {text['model_type']} head is {'tied' if text_default else 'its own tensor'}, "
                        "as counted here")
    parts = [k for k in ("vision_config", "audio_config", "projector_config") if isinstance(cfg.get(k), dict)]
    if parts:
        warnings.append(f"multimodal {mt!r}: the language model is counted; the "
                        + " and ".join(p.replace("_config", " tower") for p in parts)
                        + " and the multimodal projector are not counted")
    return text, {"wrapper_model_type": mt, "towers_not_counted": parts}


def spec_from_hf_config(cfg, num_layers=None):
    """Translate a Hugging Face config dict into the spec's model fields, per family, as
    transformers 5's modeling_<family>.py builds the weights. Returns (fields, notes, warnings):
    notes say what was assumed, warnings go into the result (an unknown model_type read
    generically, a count-changing field not read, towers not counted). `num_layers` cuts the
    config's layer pattern to its first layers (for -l)."""
    where = cfg.get("_config_path") or "config"
    notes, warnings = [], []
    ConfigReader(cfg, where).str("model_type", default=None)  # a list or number here is an error
    top_qc = cfg.get("quantization_config") or (cfg.get("text_config") or {}).get("quantization_config") \
        if isinstance(cfg.get("text_config") or {}, dict) else cfg.get("quantization_config")
    if isinstance(top_qc, dict) and cfg.get("expert_dtype") is not None and "expert_dtype" not in top_qc:
        top_qc = dict(top_qc, expert_dtype=cfg["expert_dtype"])  # as DeepseekV4Config moves it there
    if top_qc is not None and not isinstance(top_qc, dict):
        raise CalcError(f"{where}: field 'quantization_config' must be an object (a dict of quant_method, "
                         f"bits, ...), got {str(top_qc)[:40]!r}; transformers refuses it too")
    _check_dtype(cfg, where, warnings)
    cfg, mm = _read_multimodal(cfg, where, warnings)
    r = ConfigReader(cfg, where if mm is None else f"{where} (text_config)", warnings)
    mt = r.str("model_type", default=None)
    if mt in ALIASED:  # XGLM / Kosmos-2 name the basic sizes otherwise
        cfg = {**{FIELD_ALIASES[k]: v for k, v in cfg.items() if k in FIELD_ALIASES}, **cfg}
        r = ConfigReader(cfg, r.where, warnings)
        r.used.update(k for k in FIELD_ALIASES if k in cfg)
    if mt in _NOT_YET:
        raise CalcError(f"{where}: model_type {mt!r} {_NOT_YET[mt]}")
    known = mt in _FAMILY_READERS
    if not known:
        foreign = [k for k in _FOREIGN_LAYER_FIELDS if r.has(k)]
        if foreign:
            raise CalcError(f"{where}: unknown model_type {mt!r} has layers a Llama-style reading "
                             f"cannot describe (fields {', '.join(foreign)})")
    h = r.int("hidden_size", "n_embd", "n_embed", "d_model")
    if mt == "longcat_flash":  # num_hidden_layers = 2 x num_layers there (two blocks a layer): not a clash
        L_cfg = r.int("num_layers") or (r.int("num_hidden_layers", hi=200_000) or 0) // 2 or None
    else:
        L_cfg = r.int("num_hidden_layers", "n_layer", "num_layers", "n_layers")
    if L_cfg is None and mt == "nemotron_h":  # a property of the pattern there, not always written
        L_cfg = len(_nemotron_blocks(r))
    a = r.int("num_attention_heads", "n_head", "num_heads", "n_heads", default=1 if mt in ATTENTION_FREE else None)
    if a is None and mt == "jetmoe":  # JetMoeConfig derives it (k experts' kv heads) and takes no such argument
        a = r.int("num_key_value_heads", default=16) * r.int("num_experts_per_tok", default=2)
    missing = [k for k, v in (("vocab_size", r.int("vocab_size")), ("hidden_size", h),
                              ("num_layers", L_cfg), ("num_attention_heads", a)) if v is None]
    if missing:
        raise CalcError(f"{where}: config lacks integer field(s) for {', '.join(missing)}")
    # transformers refuses a layer pattern of another length; checkpoints that pad it with their
    # multi-token-prediction layers (Step 3.5/3.7) are cut to the layers
    mtp = next((v for k in ("num_nextn_predict_layers", "num_mtp_layers", "mtp_num_hidden_layers")
                if isinstance(v := cfg.get(k), int) and not isinstance(v, bool) and v > 0), 0)
    for key in ("layer_types", "mlp_layer_types"):
        if isinstance(cfg.get(key), list) and len(cfg[key]) not in (L_cfg, L_cfg + mtp):
            raise CalcError(f"{r.where}: field {key!r} lists {len(cfg[key])} layers, but the model has {L_cfg} "
                             "(num_hidden_layers); transformers refuses such a config")
    if num_layers is not None and num_layers > L_cfg and (r.has("layer_types") or r.has("mlp_layer_types")):
        raise CalcError(f"--num-layers {num_layers} is more than the {L_cfg} layers the config's "
                         "layer pattern describes")
    L = num_layers or L_cfg
    s = {"model_type": mt, "vocab_size": r.int("vocab_size"), "hidden_size": h,
         "num_layers": L, "num_attention_heads": a,
         "tied_embeddings": r.bool("tie_word_embeddings", default=mt in _TIED_BY_DEFAULT)}
    if mm:
        s["multimodal"] = mm
    llama_like = dict(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False,
                      mlp_bias=False, position_embedding="rope",
                      num_kv_heads=r.int("num_key_value_heads", "num_kv_heads", default=a),
                      head_dim=r.int("head_dim", lo=0) or h // a,  # 0: unset (GLM-5-Next's MLA writes it so)
                      # a per-layer list (Gemma 3n) is left to the family's reader
                      ffn_hidden_size=None if known and isinstance(cfg.get("intermediate_size"), list)
                      else r.int("intermediate_size", "ffn_hidden_size"))
    if not r.has("head_dim") and h % a:
        notes.append(f"no head_dim in the config and hidden_size {h} is not a multiple of {a} heads: "
                     f"head_dim {h // a} (h // a), as transformers computes it")
    s["_layers_from_flag"] = num_layers is not None
    read = _FAMILY_READERS.get(mt)
    if read is None:
        s.update(llama_like)
        bias = r.bool("attention_bias", default=False)
        s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=r.bool("mlp_bias", default=False))
        _read_generic_moe(r, s, notes)
    else:
        s["model_type"] = SAME_AS.get(mt, mt)  # a wrapper's text model read as its family
        read(r, s, llama_like, notes, warnings)
        s["model_type"] = mt
    if "layer_types" not in s:
        s["layer_types"] = _layer_pattern(r, L, s)
    s["sliding_window"] = s.get("sliding_window", (r.int("sliding_window", lo=0) or None))
    s["attention_chunk_size"] = s.get("attention_chunk_size", r.int("attention_chunk_size"))
    if s["layer_types"] is None and s["sliding_window"] and s.get("slides_every_layer"):
        s["layer_types"] = ["sliding"] * L
    if s["layer_types"] and "sliding" in s["layer_types"] and not s["sliding_window"]:
        raise CalcError(f"{where}: layer_types has sliding layers but sliding_window is not set")
    if s["layer_types"] and "chunked" in s["layer_types"] and not s["attention_chunk_size"]:
        raise CalcError(f"{where}: layer_types has chunked layers but attention_chunk_size is not set")
    if s.get("moe"):
        s["expert_interval"] = 1  # a config's MoE layout is explicit, never a script's -ei default
        # (also when --num-dense-layers redraws it: the layers past the dense ones are all MoE)
    if s.get("moe") and s.get("topk") is None:
        raise CalcError(f"{where}: MoE config lacks num_experts_per_tok")
    if s.get("moe") and r.has("n_group") and r.has("topk_group"):  # group-limited routing (DeepSeek-V2/V3)
        _check_router_groups(r, s, warnings)
    s.pop("_layers_from_flag", None)
    s["trained_context"] = _trained_context(r)
    s["checkpoint_format"] = _checkpoint_format(top_qc, where, warnings)
    if not known:
        skipped = _unread_fields(r)
        warnings.append(f"model_type {mt!r} is not one this script knows; read as Llama-style "
                        "(RMSNorm, gated 3-matrix MLP, no biases, rotary, num_key_value_heads/"
                        "head_dim/intermediate_size as given): the count may be wrong"
                        + (f"; fields not read: {', '.join(skipped)}" if skipped else ""))
    unread = r.unread_count_fields()
    if unread:
        warnings.append("config field(s) not read, which may change the count: " + ", ".join(unread))
    return {k: v for k, v in s.items() if v is not None}, notes, warnings


# Config fields that never describe weights: bookkeeping transformers writes into every config.
_BOOKKEEPING = set("architectures auto_map bos_token_id eos_token_id pad_token_id sep_token_id "
                   "decoder_start_token_id id2label label2id dtype torch_dtype transformers_version "
                   "output_attentions output_hidden_states return_dict use_cache initializer_range "
                   "chunk_size_feed_forward is_encoder_decoder is_decoder problem_type tie_encoder_decoder "
                   "add_cross_attention cross_attention_hidden_size tokenizer_class prefix task_specific_params "
                   "finetuning_task torchscript pruned_heads tf_legacy_loss use_bfloat16 "
                   "max_position_embeddings rope_parameters rope_scaling rope_theta model_type "
                   "tie_word_embeddings pretraining_tp".split())


def _unread_fields(r):
    """Every field of the config the generic reading did not read, less bookkeeping, dropouts,
    epsilons and initialiser scales (none of them describes a weight): what a family reader
    would have to look at."""
    return sorted(k for k, v in r.cfg.items() if k not in r.used and k not in _BOOKKEEPING
                  and not k.startswith("_") and v is not None
                  and not any(x in k for x in ("dropout", "_eps", "epsilon", "initializer", "_pdrop")))


# The dtype names transformers writes as a config's dtype / torch_dtype (torch's, with "auto").
_DTYPES = {"float32", "float16", "bfloat16", "float64", "float8_e4m3fn", "float8_e5m2", "int8", "uint8",
           "float", "half", "double", "auto"}


def _check_dtype(cfg, where, warnings):
    """A stated warning for a dtype transformers would not know, or torch_dtype and dtype that
    disagree (transformers 5 reads dtype); the counts do not depend on it."""
    vals = {k: cfg.get(k) for k in ("dtype", "torch_dtype") if cfg.get(k) is not None}
    for k, v in vals.items():
        if not isinstance(v, str) or v.replace("torch.", "") not in _DTYPES:
            warnings.append(f"{where}: {k} {str(v)[:40]!r} is not a dtype transformers knows; not used here "
                            "(weights are counted at the flags' precision)")
    if len(vals) == 2 and vals["dtype"] != vals["torch_dtype"]:
        warnings.append(f"{where}: torch_dtype {str(vals['torch_dtype'])[:20]!r} and dtype {str(vals['dtype'])[:20]!r} "
                        "disagree; transformers 5 reads dtype")


def _check_router_groups(r, s, warnings):
    """Group-limited routing picks topk_group of n_group expert groups, then top-k experts among
    them (DeepSeek-V2 sec. 2.1.2, device-limited routing; transformers' DeepseekV3TopkRouter): a
    stated warning when the config's numbers cannot do that. The counts do not depend on it."""
    groups, picked, E, k = r.int("n_group"), r.int("topk_group"), s.get("num_experts") or 0, s["topk"]
    if picked > groups:
        warnings.append(f"{r.where}: the router cannot pick topk_group {picked} of n_group {groups} groups")
    elif E % groups:
        warnings.append(f"{r.where}: n_group {groups} does not divide the {E} routed experts into equal groups")
    elif k > picked * (E // groups):
        warnings.append(f"{r.where}: num_experts_per_tok {k} is more than the {picked * (E // groups)} experts "
                        f"of the topk_group {picked} groups the router picks")


def _trained_context(r):
    """The longest context the model was trained or extended to, in tokens: max_position_embeddings
    (n_positions; max_seq_len in MPT and DBRX), or a rope scaling's original length x factor when that is longer (YaRN, dynamic
    NTK and LongRoPE stretch a shorter trained window; transformers' rope_scaling, rope_parameters
    in 5.x). None when the config states neither. A field or rope block not understood is left out
    (the counts do not depend on it; only the context checks use it)."""
    r.used.update(("max_position_embeddings", "n_positions", "max_seq_len"))
    n = next((v for v in (r.cfg.get("max_position_embeddings"), r.cfg.get("n_positions"), r.cfg.get("max_seq_len"))
              if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 2**31), None)
    rope = r.cfg.get("rope_parameters") or r.cfg.get("rope_scaling")
    if isinstance(rope, dict) and rope.get("rope_type", rope.get("type")) in ("yarn", "dynamic", "longrope"):
        factor, orig = rope.get("factor"), rope.get("original_max_position_embeddings") or n
        if (isinstance(factor, (int, float)) and not isinstance(factor, bool) and 1 <= factor <= 1e4
                and isinstance(orig, int) and not isinstance(orig, bool) and 0 < orig <= 2**31):
            n = max(n or 0, int(factor * orig))
    return n


def _checkpoint_format(qc, where, warnings):
    """The checkpoint's weight format from quantization_config, as bits per weight, scales
    included: {"method", "linear_bits", "expert_bits"} for the layers' matrices (other weights:
    16). MXFP4 (gpt-oss): 4 bits + an 8-bit scale per 32 = 4.25, routed experts only (OCP MX spec
    v1.0). FP8 block-quantized (DeepSeek-V3): 8 bits + an fp32 scale per b1 x b2 block (DeepSeek-V4's
    experts with expert_dtype fp4: 4 bits + a scale per 32 weights, 1 byte with scale_fmt ue8m0). AWQ/GPTQ:
    w bits + an fp16 scale and a w-bit zero per group. compressed-tensors: w bits + a 16-bit scale
    per group (+ a zero when asymmetric). ModelOpt (quant_method modelopt, or hf_quant_config.json
    beside config.json): _modelopt_weight_bits. The modules a config leaves out stay 16-bit."""
    if not isinstance(qc, dict):
        return None
    label = f"{where} (quantization_config)"
    if isinstance(qc.get("quantization"), dict) and "quant_method" not in qc:
        qc = dict(qc["quantization"], quant_method="modelopt")  # hf_quant_config.json's layout
        label = f"the hf_quant_config.json beside {where} (quantization)"  # errors name that file
    q = ConfigReader(qc, label)
    method = q.str("quant_method", default="")
    skip = " ".join(str(x) for x in (qc.get("modules_to_not_convert") or qc.get("ignore")
                                     or qc.get("exclude_modules") or []))
    experts_only = "self_attn" in skip  # attention left in 16 bits: only the MLP/expert matrices
    dense_skipped = "shared_experts" in skip or ("mlp" in skip and "down_proj" in skip)
    if method == "mxfp4":
        bits = 4 + 8 / 32
        lin, exp = (16, bits) if experts_only else (bits, bits)
    elif method == "fp8":
        block = q.int_list("weight_block_size", lo=1, default=None)
        bits = 8 + (32 / (block[0] * block[1]) if block and len(block) == 2 else 0)
        lin, exp = (16 if experts_only else bits), bits
        if q.str("expert_dtype", default="fp8", choices=("fp8", "fp4")) == "fp4":
            # DeepSeek-V4's experts: two e2m1 values per byte and a scale per 32 (transformers'
            # finegrained_fp8), 1-byte ue8m0 scales with scale_fmt ue8m0
            exp = 4 + (8 if q.str("scale_fmt", default="float") == "ue8m0" else 32) / 32
    elif method in ("awq", "gptq"):
        w = q.int("bits", "w_bit", default=4, hi=16)
        g = q.int("group_size", "q_group_size", lo=-1, default=128)
        g = g if g > 0 else 1 << 30
        lin = exp = w + (16 + w) / g
    elif method == "compressed-tensors":
        groups = q.sub("config_groups") or {}
        wt = next((v.get("weights") for v in groups.values() if isinstance(v, dict) and isinstance(v.get("weights"), dict)), None)
        if not wt:
            warnings.append("quantization_config compressed-tensors without weight groups: weights "
                            "counted at 16 bits; pass --weight-bits")
            return None
        w = ConfigReader(wt, f"{where} (quantization_config weights)")
        nb, g = w.int("num_bits", default=8, hi=16), w.int("group_size", default=0, lo=0)
        bits = nb + ((16 + (0 if w.bool("symmetric", default=True) else nb)) / g if g else 0)
        lin, exp = (16 if experts_only or dense_skipped else bits), bits
    elif method == "modelopt":
        algo = q.str("quant_algo", default="")
        bits = _modelopt_weight_bits(algo.upper(), q.int("group_size", default=None))
        if bits is None:
            warnings.append(f"quantization_config modelopt quant_algo {algo!r} is not modelled: weights "
                            "counted at 16 bits; pass --weight-bits")
            return None
        lin, exp = (16 if experts_only else bits), bits
        method = f"modelopt {algo.upper()}"
        # the KV cache format the checkpoint carries scales for (ModelOpt's kv_cache_quant_algo):
        # reported, not applied; whether the cache is stored so is the serving stack's choice
        kv = (q.str("kv_cache_quant_algo", default="") or "").upper()
        if kv and kv != "NONE":
            return {"method": method, "linear_bits": lin, "expert_bits": exp, "kv_cache_format": kv}
    else:
        warnings.append(f"quantization_config quant_method {method!r} is not modelled: weights counted "
                        "at 16 bits; pass --weight-bits")
        return None
    return {"method": method, "linear_bits": lin, "expert_bits": exp}


def _modelopt_weight_bits(algo, group):
    """Bits per weight, scales included, of a ModelOpt (NVIDIA Model Optimizer) checkpoint's
    quant_algo, or None when not modelled. NVFP4 (also weight-only W4A16_NVFP4, NVFP4_AWQ and
    W4A8_NVFP4_FP8): e2m1 values with an E4M3 scale per 16 (NVIDIA's NVFP4 format; the fp32 scale
    per tensor is left out); FP8 and FP8_PER_CHANNEL_PER_TOKEN: 8 bits with a per-tensor or
    per-channel scale (left out); FP8_PB_WO: an fp32 scale per 128 x 128 block (ModelOpt's
    default block); MXFP8: an 8-bit scale per 32 (OCP MX spec v1.0); INT4_AWQ / W4A8_AWQ / W4A16_AWQ:
    int4 with an fp16 scale per group of 128 (ModelOpt's AWQ default)."""
    if algo in ("NVFP4", "W4A16_NVFP4", "NVFP4_AWQ", "W4A8_NVFP4_FP8"):
        return 4 + 8 / (group or 16)
    if algo in ("FP8", "FP8_PER_CHANNEL_PER_TOKEN"):
        return 8
    if algo == "FP8_PB_WO":
        return 8 + 32 / (128 * 128)
    if algo == "MXFP8":
        return 8 + 8 / 32
    if algo in ("INT4_AWQ", "W4A8_AWQ", "W4A16_AWQ"):
        return 4 + 16 / (group or 128)
    return None


# Every model_type the package reads, and its reader (the Llama-style families share one).
_FAMILY_READERS = {
    **dict.fromkeys(("llama mistral mixtral qwen2 qwen2_moe qwen3 qwen3_moe gemma gemma2 phi3 olmo2 "
                     "deepseek_v2 deepseek_v3 mistral4").split(), _read_llama_like),
    "gpt2": _read_gpt2, "gpt_neox": _read_gpt_neox, "opt": _read_opt, "bloom": _read_bloom,
    "falcon": _read_falcon, "starcoder2": _read_starcoder2, "gpt_oss": _read_gpt_oss,
    "llama4_text": _read_llama4, "gemma3_text": _read_gemma3, "gemma4_text": _read_gemma4,
    "glm4_moe": _read_glm4_moe, "glm_moe_dsa": _read_dsa, "deepseek_v32": _read_dsa, "axk2": _read_axk2,
    "mistral_large4_text": _read_mistral_large4,
    "minimax_m2": _read_minimax_m2, "ernie4_5_moe": _read_ernie45_moe, "hy_v3": _read_hy_v3,
    "longcat_flash": _read_longcat, "olmo3": _read_olmo3, "smollm3": _read_smollm3,
    "seed_oss": _read_seed_oss, "exaone4": _read_exaone4, "cohere2": _read_cohere2,
    "granitemoe": _read_granitemoe, "phimoe": _read_phimoe, "qwen3_next": _read_qwen_gdn,
    "qwen3_5_text": _read_qwen_gdn, "qwen3_5_moe_text": _read_qwen_gdn,
    "olmo_hybrid": _read_olmo_hybrid, "nemotron_h": _read_nemotron_h,
    "granitemoehybrid": _read_granitemoehybrid, "falcon_h1": _read_falcon_h1,
    "jamba": _read_jamba, "lfm3": _read_lfm3, "kimi_linear": _read_kimi_linear,
    "deepseek_v4": _read_deepseek_v4, "step3p5": _read_step3p5, "dbrx": _read_dbrx, **MORE_READERS, **STATE_READERS,
    **SCONV_READERS, **MOA_READERS}
_FAMILY_READERS.update({mt: _FAMILY_READERS[base] for mt, base in SAME_AS.items()})
