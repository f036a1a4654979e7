"""resolve_model_spec: values read from a config, then explicit flags (which win on every layer they
apply to), then defaults; validated and built into the list of layers (build_layers).
spec_summary is what the reports show of it."""

from .kinds import layer_groups


MODEL_DEFAULTS = {
    # The cookbook's calc_transformer_params.py defaults; other scripts override some of them.
    "vocab_size": 51200, "hidden_size": 6144, "num_layers": 44, "num_experts": 8,
    "expert_interval": 1, "topk": 1, "ffn_expansion_factor": 4.0, "num_mlp_linears": 2,
    "kv_size_ratio": 1.0,
}


_GLOBAL_FLAGS = tuple("vocab_size hidden_size num_attention_heads head_dim ffn_hidden_size "
                      "num_mlp_linears tied_embeddings norm norms_per_layer qk_norm qkv_bias "
                      "attn_out_bias mlp_bias position_embedding embedding_norm final_norm "
                      "num_experts expert_interval topk moe_ffn_hidden_size num_shared_experts "
                      "shared_expert_ffn_hidden_size shared_expert_gate num_dense_layers "
                      "router_bias q_lora_rank kv_lora_rank qk_nope_head_dim qk_rope_head_dim "
                      "v_head_dim parallel_attention".split())
_POSITIVE = tuple("vocab_size hidden_size num_layers num_attention_heads num_kv_heads head_dim "
                  "ffn_hidden_size num_mlp_linears num_experts expert_interval topk "
                  "moe_ffn_hidden_size kv_lora_rank q_lora_rank qk_nope_head_dim qk_rope_head_dim "
                  "v_head_dim norms_per_layer max_position_embeddings".split())
_CAPS = (("num_layers", 100_000), ("vocab_size", 2**31), ("hidden_size", 2**24),
         ("num_attention_heads", 2**20), ("num_kv_heads", 2**20), ("ffn_hidden_size", 2**31),
         ("num_experts", 2**20), ("topk", 2**20), ("moe_ffn_hidden_size", 2**31), ("head_dim", 2**20),
         ("kv_lora_rank", 2**24), ("q_lora_rank", 2**24), ("qk_nope_head_dim", 2**20),
         ("qk_rope_head_dim", 2**20), ("v_head_dim", 2**20), ("norms_per_layer", 64),
         ("max_position_embeddings", 2**31), ("num_mlp_linears", 64), ("expert_interval", 100_000),
         ("num_shared_experts", 2**20), ("shared_expert_ffn_hidden_size", 2**31),
         ("num_dense_layers", 100_000), ("sliding_window", 2**31))


def resolve_model_spec(args, defaults=None):
    """Merge a model spec: values read from --hf_model_name_or_path, then explicit flags (which
    win, on every layer they apply to), then `defaults` (MODEL_DEFAULTS updated by the calling
    script). Validates, builds the layer list and returns (spec, notes); the spec's "warnings"
    list says what the result should show. Raises ValueError with a one-line message."""
    d = dict(MODEL_DEFAULTS, **(defaults or {}))
    flag = lambda name: getattr(args, name, None)  # noqa: E731
    s, notes, warnings = {}, [], []
    if getattr(args, "hf_model_name_or_path", None) is not None:
        from .config import spec_from_hf_config  # the config readers load only for a config
        from .hub import load_hf_config
        cfg = load_hf_config(args.hf_model_name_or_path)
        try:
            s, notes, warnings = spec_from_hf_config(cfg, num_layers=flag("num_layers"))
        except (TypeError, KeyError, IndexError, AttributeError, ZeroDivisionError, OverflowError) as exc:
            # a field a family reader needs is missing or of a shape it cannot use (the readers
            # check the fields they know; this catches the combinations they do not)
            raise ValueError(f"{cfg.get('_config_path') or 'config'}: cannot read this "
                             f"{cfg.get('model_type')!s:.40} config: a needed field is missing or malformed "
                             f"({type(exc).__name__}: {str(exc)[:120]})") from None
    for name, cap in _CAPS:
        val = flag(name)
        if val is not None and val > cap:
            raise ValueError(f"--{name.replace('_', '-')} {val} is implausibly large (at most {cap:,})")
    per_layer = {k for ov in (s.get("layer_overrides") or {}).values() for k in ov.get("attention", {})}
    for name, key in (("head_dim", "head_dim"), ("num_kv_heads", "kv_heads")):
        if flag(name) is not None and key in per_layer:
            raise ValueError(f"--{name.replace('_', '-')}: this config sets it layer by layer "
                             f"({s.get('model_type')}); edit the config instead")
    for name in _GLOBAL_FLAGS:
        if flag(name) is not None:
            s[name] = flag(name)
    if flag("num_layers") is not None:
        s["num_layers"] = flag("num_layers")
    if flag("bias") is not None:
        for name in ("qkv_bias", "attn_out_bias", "mlp_bias"):
            if flag(name) is None:
                s[name] = flag("bias")
    if flag("swiglu"):
        s["num_mlp_linears"] = 3
    if flag("moe") or (flag("num_experts") is not None and flag("num_experts") > 1):
        s["moe"] = True
    if flag("num_dense_layers") or flag("expert_interval"):
        s.setdefault("moe", False)
        s.pop("moe_layer_set", None)  # the flags describe the MoE layout now
    for name in ("vocab_size", "hidden_size", "num_layers", "num_mlp_linears", "expert_interval", "topk"):
        s.setdefault(name, d[name])
    h, L = s["hidden_size"], s["num_layers"]
    for name in _POSITIVE:
        val = flag(name) if flag(name) is not None else s.get(name)
        if val is not None and val <= 0 and not (name == "qk_rope_head_dim" and val == 0 and flag(name) is None):
            raise ValueError(f"--{name.replace('_', '-')} must be positive, got {val}")  # (a config's NoPE MLA: 0)
    if flag("ffn_expansion_factor") is not None and not 0 < flag("ffn_expansion_factor") <= 1024:
        raise ValueError(f"--ffn-expansion-factor must be in (0, 1024], got {flag('ffn_expansion_factor')}")
    if flag("kv_size_ratio") is not None and not 0 < flag("kv_size_ratio") <= 1:
        raise ValueError(f"--kv-size-ratio must be in (0, 1], got {flag('kv_size_ratio')}")
    for name in ("num_shared_experts", "shared_expert_ffn_hidden_size", "num_dense_layers", "sliding_window"):
        if flag(name) is not None and flag(name) < 0:
            raise ValueError(f"--{name.replace('_', '-')} must not be negative, got {flag(name)}")
    if "num_attention_heads" not in s:
        s["num_attention_heads"] = h // 128 if h % 128 == 0 else (h // 64 if h % 64 == 0 else 1)
    a = s["num_attention_heads"]
    if s.get("kv_lora_rank"):
        for name in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            if s.get(name) is None or (not s[name] and name != "qk_rope_head_dim"):
                raise ValueError(f"MLA (--kv-lora-rank) needs --{name.replace('_', '-')}")
        s["head_dim"] = s["qk_nope_head_dim"] + s["qk_rope_head_dim"]
        s["num_kv_heads"] = a  # MLA expands the latent into a full set of heads
    else:
        if s.get("head_dim") is None:
            if h % a:
                raise ValueError(f"--hidden-size {h} is not divisible by --num-attention-heads {a} "
                                 "(give --head-dim if the head size is not h/a)")
            s["head_dim"] = h // a
        if flag("num_kv_heads") is not None:
            s["num_kv_heads"] = flag("num_kv_heads")
        elif flag("kv_size_ratio") is not None:
            kv = a * flag("kv_size_ratio")
            if abs(kv - round(kv)) > 1e-6 or round(kv) < 1:
                raise ValueError(f"--kv-size-ratio {flag('kv_size_ratio')} x {a} heads is not a "
                                 "whole number of kv heads")
            s["num_kv_heads"] = int(round(kv))
        s.setdefault("num_kv_heads", int(round(a * d["kv_size_ratio"])) or 1)
        if a % s["num_kv_heads"]:
            path = getattr(args, "hf_model_name_or_path", None)  # name the field or flag each came from
            heads = "--num-attention-heads" if flag("num_attention_heads") is not None else "num_attention_heads"
            kv = ("--num-kv-heads" if flag("num_kv_heads") is not None
                  else "--kv-size-ratio" if flag("kv_size_ratio") is not None
                  else "num_key_value_heads" if path else "the default kv heads (= heads)")
            raise ValueError(f"{heads} {a} is not divisible by {kv} {s['num_kv_heads']}"
                             + (f" ({path})" if path else ""))
    if flag("ffn_expansion_factor") is not None and flag("ffn_hidden_size") is None:
        s["ffn_hidden_size"] = int(round(flag("ffn_expansion_factor") * h))
    s.setdefault("ffn_hidden_size", int(round(d["ffn_expansion_factor"] * h)))
    if s["ffn_hidden_size"] <= 0:
        raise ValueError("the MLP width (-ff x h or --ffn-hidden-size) must be positive")
    s.setdefault("norm", "layernorm")
    s.setdefault("parallel_attention", False)
    s.setdefault("norms_per_layer", 1 if s["parallel_attention"] else 2)
    s.setdefault("qk_norm", "none")
    for name in ("qkv_bias", "attn_out_bias", "mlp_bias"):
        s.setdefault(name, True)
    for name, val in (("tied_embeddings", False), ("embedding_norm", False), ("final_norm", True),
                      ("position_embedding", "rope"), ("word_embed_proj_dim", h), ("moe", False),
                      ("attention_sinks", False), ("attn_output_gate", "none"), ("model_type", None),
                      ("layer_types", None), ("sliding_window", None), ("attention_chunk_size", None),
                      ("nope_layers", ()), ("layer_overrides", {}), ("extra_params_per_layer", 0),
                      ("per_layer_embedding_params", 0), ("other_params", {}), ("mtp_layers_not_built", 0),
                      ("index_n_heads", 0), ("index_head_dim", 0), ("index_topk", 0),
                      ("zero_experts", 0), ("expert_bias", None), ("router_has_bias", False),
                      ("checkpoint_format", None), ("input_matmul_params", 0),
                      ("attn_position_scaling", False), ("indexer_input_norm", False),
                      ("linear_mixer", None), ("layer_blocks", None)):
        s.setdefault(name, val)
    if s["position_embedding"] == "learned":
        if flag("max_position_embeddings") is not None:
            s["position_embedding_rows"] = flag("max_position_embeddings")
        s.setdefault("position_embedding_rows", getattr(args, "sequence_length", None) or 2048)
    else:
        s["position_embedding_rows"] = 0
    if s["moe"]:
        s.setdefault("num_experts", d["num_experts"])
        s.setdefault("moe_ffn_hidden_size", s["ffn_hidden_size"])
        E, k = s["num_experts"], s["topk"]
        if E < 1:
            raise ValueError("--num-experts must be at least 1 for a MoE model")
        if k > E + s["zero_experts"]:
            raise ValueError(f"--topk {k} is larger than --num-experts {E}")
        s.setdefault("num_shared_experts", 0)
        s.setdefault("shared_expert_ffn_hidden_size", s["num_shared_experts"] * s["moe_ffn_hidden_size"])
        s.setdefault("shared_expert_gate", False)
        s.setdefault("router_bias", False)
        s.setdefault("num_dense_layers", 0)
        if s.get("moe_layer_set") is not None:
            s["moe_layers"] = [i for i in s["moe_layer_set"] if i < L]
        else:
            ei, fd = s["expert_interval"], s["num_dense_layers"]
            s["moe_layers"] = [i for i in range(L) if i >= fd and (i - fd) % ei == ei - 1]
    else:
        for name in ("num_experts", "moe_ffn_hidden_size", "num_shared_experts",
                     "shared_expert_ffn_hidden_size"):
            s[name] = 0
        s.update(topk=0, shared_expert_gate=False, router_bias=False, moe_layers=[])
    s.setdefault("num_dense_layers", 0)
    s.pop("moe_layer_set", None)
    for name in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
        s.setdefault(name, None)
    _apply_sliding_flag(s, flag("sliding_window"), explicit_config=bool(getattr(args, "hf_model_name_or_path", None)))
    s["layers"] = build_layers(s)
    for layer in s["layers"]:
        for m in layer["mlp"]:
            if m["width"] is None or m["width"] < 1:
                raise ValueError(f"an MLP width is missing from the config ({m['kind']} block)")
            if m["kind"] == "moe" and not 1 <= m["topk"] <= m["num_experts"] + m["zero_experts"]:
                raise ValueError(f"top-k {m['topk']} must be between 1 and the {m['num_experts'] + m['zero_experts']} "
                                 "experts of an MoE layer")
    s["warnings"] = warnings
    s["described"] = _described(args, s, flag)
    return s, notes


def _described(args, s, flag):
    """What model this is, in words, for the first lines of every report."""
    shape = f"L={s['num_layers']} h={s['hidden_size']} V={s['vocab_size']}"
    path = getattr(args, "hf_model_name_or_path", None)
    if path is not None:
        return f"{path} ({s.get('model_type') or 'no model_type'}, {shape})"
    given = [n for n in _GLOBAL_FLAGS + ("num_layers", "num_kv_heads", "kv_size_ratio", "ffn_expansion_factor",
                                          "swiglu", "moe", "bias", "sliding_window") if flag(n) is not None
             and not (n == "num_attention_heads" and getattr(args, "heads_defaulted", False))]
    if given:
        return f"the model the flags describe ({shape})"
    return (f"the cookbook's default shape ({shape}, GPT-NeoX-20B-like); pass --hf_model_name_or_path "
            "or -l/-hs for yours")


def _apply_sliding_flag(s, w, *, explicit_config):
    """--sliding-window W: sets the window of the config's sliding layers (every layer when the
    model comes from flags); 0 turns sliding off (those layers attend to everything)."""
    L = s["num_layers"]
    if s["layer_types"] is not None:
        s["layer_types"] = list(s["layer_types"][:L])
    if w is None:
        return
    if w == 0:
        s["sliding_window"] = None
        if s["layer_types"]:
            s["layer_types"] = ["full" if t == "sliding" else t for t in s["layer_types"]]
        return
    s["sliding_window"] = w
    if not s["layer_types"] or "sliding" not in s["layer_types"]:
        if explicit_config and s["layer_types"]:
            return  # a config with no sliding layers keeps them all full
        s["layer_types"] = ["sliding"] * L


def _shared(cache, d):
    """One dict object per distinct kind, so layers of the same kind share it."""
    key = tuple(sorted((k, tuple(map(id, v)) if isinstance(v, tuple) else v) for k, v in d.items()))
    return cache.setdefault(key, d)


# What a linear-attention or state-space mixer does not have of softmax attention's extras.
_NO_SOFTMAX_EXTRAS = {"window": 0, "chunk": 0, "rope": False, "qkv_bias": False, "out_bias": False,
                      "qk_norm": "none", "sinks": False, "output_gate": "none", "q_lora_rank": 0,
                      "kv_lora_rank": 0, "qk_nope_head_dim": 0, "qk_rope_head_dim": 0, "index_heads": 0,
                      "index_head_dim": 0, "index_topk": 0, "kv_proj": 0, "kv_shared": False,
                      "position_scaling": False, "indexer_input_norm": False}


def build_layers(s):
    """The layer list of a resolved spec: per layer an attention dict, an MLP dict, its norm count
    and any extra weights, objects shared between layers of the same kinds."""
    L, cache, layers = s["num_layers"], {}, []
    moe_set = set(s["moe_layers"])
    types = s["layer_types"] or ["full"] * L
    blocks = s.get("layer_blocks") or ["both"] * L  # Nemotron-H: a layer is a mixer or an MLP
    mla = bool(s.get("kv_lora_rank"))
    nope = set(s["nope_layers"])
    by_inputs = {}  # what varies per layer -> the layer built for it (no rebuild for identical inputs)
    for i in range(L):
        ov = s["layer_overrides"].get(i, {})
        span = types[i]
        key = (span, i in nope, i in moe_set, blocks[i], id(ov) if ov else None)
        if key in by_inputs and not ov:
            layers.append(by_inputs[key])
            continue
        parallel = span == "hybrid"  # Falcon-H1: attention and a linear mixer side by side
        span = "full" if parallel else span
        attn = {"kind": "mla" if mla else "mha", "span": span,
                "window": s["sliding_window"] if span == "sliding" else 0,
                "chunk": s["attention_chunk_size"] if span == "chunked" else 0,
                "rope": s["position_embedding"] == "rope" and i not in nope,
                "heads": s["num_attention_heads"], "kv_heads": s["num_kv_heads"],
                "head_dim": s["head_dim"], "qkv_bias": s["qkv_bias"], "out_bias": s["attn_out_bias"],
                "qk_norm": s["qk_norm"],
                "norm": s.get("attn_norm") or ("rmsnorm" if s["norm"] == "layernorm" else s["norm"]),
                "sinks": s["attention_sinks"], "output_gate": s["attn_output_gate"],
                "q_lora_rank": s["q_lora_rank"] or 0, "kv_lora_rank": s["kv_lora_rank"] or 0,
                "qk_nope_head_dim": s["qk_nope_head_dim"] or 0, "qk_rope_head_dim": s["qk_rope_head_dim"] or 0,
                "v_head_dim": s["v_head_dim"] or s["head_dim"],
                "index_heads": s["index_n_heads"], "index_head_dim": s["index_head_dim"],
                "index_topk": s["index_topk"], "kv_proj": 2, "kv_shared": False,
                "position_scaling": s["attn_position_scaling"], "indexer_input_norm": s["indexer_input_norm"]}
        if s.get("attn_extra_weights"):  # a family's non-matmul attention weights (DiffLlama's lambdas)
            attn["extra_weights"] = s["attn_extra_weights"]
        if span == "linear":
            # a linear-attention (state-space) mixer: no K/V cache, a constant state per sequence
            attn.update(dict(_NO_SOFTMAX_EXTRAS, span="state", **s["linear_mixer"]))
        attn.update(ov.get("attention", {}))
        if i in moe_set:
            mlp = {"kind": "moe", "width": s["moe_ffn_hidden_size"], "linears": s["num_mlp_linears"],
                   "bias": s["mlp_bias"] if s["expert_bias"] is None else s["expert_bias"],
                   "num_experts": s["num_experts"], "topk": s["topk"], "zero_experts": s["zero_experts"],
                   "shared_width": s["shared_expert_ffn_hidden_size"], "shared_bias": s["mlp_bias"],
                   "shared_gate": s["shared_expert_gate"],
                   "router_bias": s["router_bias"] or s["router_has_bias"]}
        else:
            mlp = {"kind": "dense", "width": s["ffn_hidden_size"], "linears": s["num_mlp_linears"],
                   "bias": s["mlp_bias"]}
            if s.get("mlp_act_params"):  # a learned activation's or inner norm's weights (Apertus, BitNet)
                mlp["act_params"] = s["mlp_act_params"]
        mlp.update(ov.get("mlp", {}))
        attn, mlp = _shared(cache, attn), _shared(cache, mlp)
        extra_attn = tuple(_shared(cache, dict(attn, **x)) for x in ov.get("more_attention", ()))
        if parallel:
            extra_attn += (_shared(cache, dict(attn, **dict(_NO_SOFTMAX_EXTRAS, span="state", **s["linear_mixer"]))),)
        extra_mlp = tuple(_shared(cache, dict(x)) for x in ov.get("more_mlp", ()))
        layer = {"attention": () if blocks[i] == "mlp" else (attn,) + extra_attn,
                 "mlp": () if blocks[i] == "mixer" else (mlp,) + extra_mlp,
                 "norms": ov.get("norms", s["norms_per_layer"]),
                 "extra_params": ov.get("extra_params", s["extra_params_per_layer"]),
                 "extra_flops": s.get("extra_flops_per_layer")}
        if ov.get("weightless_flops"):  # matmuls without weights outside attention (Gemma 3n's AltUp), per token
            layer["weightless_flops"] = ov["weightless_flops"]
        layers.append(_shared(cache, layer))
        by_inputs[key] = layers[-1]
    return layers


def spec_summary(spec):
    """The spec for --json: every resolved field, the layer list as distinct kinds plus the kind
    index of each layer (the layer dicts themselves repeat)."""
    out = {k: v for k, v in spec.items() if k not in ("layers", "layer_overrides") and not k.startswith("_")}
    groups = layer_groups(spec)
    index = {id(g[0]): n for n, g in enumerate(groups)}
    out["layer_kinds"] = [{"attention": [dict(x) for x in g[0]["attention"]],
                           "mlp": [dict(x) for x in g[0]["mlp"]], "norms": g[0]["norms"],
                           "extra_params": g[0]["extra_params"], "layers": g[1]} for g in groups]
    out["layer_kind_of_layer"] = [index[id(x)] for x in spec["layers"]]
    out["nope_layers"] = sorted(spec.get("nope_layers", ()))
    return out
