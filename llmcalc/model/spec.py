"""resolve_model_spec: values read from a config, then explicit flags (which win on every layer they
apply to), then defaults; validated and built into the list of layers (build_layers). The result
is a ModelSpec, a declared record: every field it may hold is named and explained below, and it is
built in one place (the end of resolve_model_spec). Each layer of its list is a Layer record; the
attention and MLP dicts inside a layer are per-kind vocabularies, described in model/kinds.py.
spec_summary is what the reports show of it."""

from ..errors import CalcError
from ..records import Record
from .kinds import layer_groups


class ModelSpec(Record):
    """The model every formula reads: its shape, its layer list, and how it was described. Symbols
    as the tools' docstrings: V h L a kv d f E k."""

    FIELDS = {
        # -- where it came from
        "model_type": "the config's model_type (None for a model from flags)",
        "multimodal": "a vision-language wrapper's {wrapper_model_type, towers_not_counted}: only "
                      "its language model is counted",
        "checkpoint_format": "the checkpoint's quantization as read from its config or sidecar "
                             "(bits per weight group), None when stored at the compute dtype",
        "trained_context": "the context the model was trained or configured for (tokens), when the "
                           "config says",
        "described": "the model in words, for the first line of every report",
        "warnings": "what the result should show: fields read generically or not read",
        # -- the shape (the dense defaults)
        "vocab_size": "V, token embedding rows",
        "head_vocab_size": "rows of the output head when it differs from V (an unpadded vocab)",
        "hidden_size": "h, the residual width",
        "word_embed_proj_dim": "width of the token embedding when projected to h (OPT); else h",
        "num_layers": "L, decoder layers",
        "num_attention_heads": "a, query heads",
        "num_kv_heads": "kv, key/value heads (a for MLA, whose latent expands to a heads)",
        "head_dim": "d, per-head width of queries and keys (MLA: nope + rope part)",
        "ffn_hidden_size": "f, the dense MLP width",
        "num_mlp_linears": "matrices of an MLP: 2 (up, down) or 3 (gated: gate, up, down)",
        "expert_interval": "an MoE layer every this many layers (-ei), past num_dense_layers",
        "topk": "k, routed experts per token (0 for a dense model)",
        # -- norms, biases, positions
        "norm": "layernorm (weight and bias), rmsnorm (weight), or none",
        "attn_norm": "the q/k norm's kind when it differs from norm's (a LayerNorm per head)",
        "norms_per_layer": "norms in a layer (2: before attention and before the MLP)",
        "qk_norm": "norm on queries and keys: none, head (per head width), full (over all "
                   "heads), l2",
        "qkv_bias": "q/k/v projections carry a bias",
        "attn_out_bias": "the attention output projection carries a bias",
        "mlp_bias": "the MLP's matrices carry biases",
        "parallel_attention": "attention and MLP read the same normed input (GPT-J, Falcon)",
        "tied_embeddings": "the output head is the token embedding (counted once)",
        "embedding_norm": "a norm right after the token embedding",
        "final_norm": "a norm before the output head",
        "position_embedding": "rope, learned (a table), or none",
        "position_embedding_rows": "rows of a learned position table (0 unless learned)",
        # -- attention's extras
        "attention_sinks": "a learned per-head sink logit (gpt-oss)",
        "attn_output_gate": "a gate on attention's output: none, headwise or elementwise",
        "attn_position_scaling": "per-head position scaling weights (Mistral Large 4)",
        "attn_extra_weights": "a family's non-matmul attention weights per layer (DiffLlama's "
                              "lambdas)",
        "fused_projections": "the projections transformers computes as one matmul: qkv (Phi-3's "
                             "qkv_proj), gate_up (Phi-3's and GLM's gate_up_proj); absent: none",
        "layer_types": "each layer's span: full, sliding, chunked, linear (a state mixer), hybrid "
                       "(attention beside a mixer); None: all full",
        "sliding_window": "keys a sliding layer sees (tokens); None: no sliding layers",
        "attention_chunk_size": "tokens of a chunked layer's chunk (Llama 4)",
        "slides_every_layer": "the family slides on every layer when the config sets a window and "
                              "no pattern",
        "nope_layers": "indices of layers without rotary positions",
        "linear_mixer": "the linear-attention or state-space mixer's dict (kinds.py), for linear "
                        "and hybrid layers",
        "layer_blocks": "per layer: both, mixer or mlp (Nemotron-H: a layer is one block); None: "
                        "both",
        # -- MLA (DeepSeek's latent attention), None unless MLA
        "q_lora_rank": "rank of the query's low-rank projection (None: full-rank queries)",
        "kv_lora_rank": "width of the cached K/V latent; set means MLA",
        "qk_nope_head_dim": "per-head query/key width without rotary positions",
        "qk_rope_head_dim": "per-head query/key width with rotary positions (0 in a NoPE MLA)",
        "v_head_dim": "per-head value width",
        # -- the lightning indexer (DeepSeek-V3.2's sparse attention), 0 without one
        "index_n_heads": "the indexer's heads",
        "index_head_dim": "the indexer's head width",
        "index_topk": "keys each query keeps after the indexer",
        "indexer_input_norm": "a norm on the indexer's input (Mistral Large 4)",
        # -- MoE (0 or False for a dense model)
        "moe": "some layers route tokens to experts",
        "num_experts": "E, routed experts per MoE layer",
        "moe_ffn_hidden_size": "f_e, one expert's width",
        "num_shared_experts": "experts every token runs through",
        "shared_expert_ffn_hidden_size": "the shared experts' total width",
        "shared_expert_gate": "a sigmoid gate on the shared experts' output (Qwen2-MoE)",
        "router_bias": "the router's linear layer carries a bias",
        "router_has_bias": "the router holds a bias vector the config implies (gpt-oss)",
        "expert_bias": "the experts' matrices carry biases, when not as mlp_bias; None: as "
                       "mlp_bias",
        "zero_experts": "zero-computation experts a token may route to (LongCat-Flash)",
        "num_dense_layers": "leading layers with a dense MLP before the MoE layers",
        "moe_layers": "indices of the MoE layers",
        # -- weights outside the layer kinds
        "extra_params_per_layer": "weights per layer outside attention, MLP and norms",
        "extra_flops_per_layer": "FLOPs per token per layer outside the matmuls "
                                 "(hyper-connections)",
        "residual_streams": "copies of the residual stream (hyper-connections); absent: 1",
        "per_layer_embedding_params": "per-layer embedding tables (Gemma 3n/4)",
        "input_matmul_params": "matmul weights every token's embedding runs through once",
        "mlp_act_params": "a learned activation's or inner norm's weights per MLP (Apertus, "
                          "BitNet)",
        "other_params": "{name: count} of any other model weights",
        "mtp_layers_not_built": "multi-token-prediction layers the config has and transformers "
                                "does not build (not counted; the report says so)",
        # -- the layer list
        "layer_overrides": "{layer index: what differs there} from the config's family reader, "
                           "applied by build_layers",
        "layers": "the list of L Layer records (layers of the same kinds share one object)",
        "_layer_groups": "kinds.layer_groups' memo of the distinct layers (not reported)",
    }
    REQUIRED = ("vocab_size", "hidden_size", "num_layers", "num_attention_heads", "num_kv_heads",
                "head_dim", "ffn_hidden_size", "num_mlp_linears", "layers", "warnings", "described")


class Layer(Record):
    """One decoder layer: its attention (and mixer) dicts, its MLP dicts (model/kinds.py), and what
    it holds besides. Layers of the same kinds are one object (build_layers shares them)."""

    FIELDS = {
        "attention": "tuple of attention or mixer dicts (empty for an MLP-only layer)",
        "mlp": "tuple of MLP dicts, dense or moe (empty for a mixer-only layer)",
        "norms": "norms in the layer",
        "extra_params": "matmul weights every token runs through once in the layer outside its "
                        "attention and MLP (Gemma 4's per-layer inputs)",
        "extra_flops": "FLOPs per token outside the matmuls (None: none)",
        "weightless_flops": "matmul FLOPs per token without weights outside attention (Gemma 3n's "
                            "AltUp)",
    }
    REQUIRED = ("attention", "mlp", "norms", "extra_params")


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
         ("num_experts", 2**20), ("topk", 2**20), ("moe_ffn_hidden_size", 2**31),
         ("head_dim", 2**20),
         ("kv_lora_rank", 2**24), ("q_lora_rank", 2**24), ("qk_nope_head_dim", 2**20),
         ("qk_rope_head_dim", 2**20), ("v_head_dim", 2**20), ("norms_per_layer", 64),
         ("max_position_embeddings", 2**31), ("num_mlp_linears", 64), ("expert_interval", 100_000),
         ("num_shared_experts", 2**20), ("shared_expert_ffn_hidden_size", 2**31),
         ("num_dense_layers", 100_000), ("sliding_window", 2**31))


def resolve_model_spec(flags, defaults=None):
    """Merge a model spec: values read from the config at flags["hf_model_name_or_path"], then
    explicit flags (which win, on every layer they apply to), then `defaults` (MODEL_DEFAULTS
    updated by the calling tool). `flags` is {flag dest: value, None when not given}: a tool
    passes vars() of what it parsed. Validates, builds the layer list and returns (ModelSpec,
    notes); the spec's "warnings" say what the result should show. Raises a CalcError (a
    ValueError) with a one-line message."""
    flag = flags.get
    d = dict(MODEL_DEFAULTS, **(defaults or {}))
    s, notes, warnings = _from_config(flag("hf_model_name_or_path"), flag("num_layers"))
    _check_flag_sizes(s, flag)
    _apply_flags(s, flag, d)
    _check_flag_values(flag, s)
    _attention_shape(s, flag, d)
    _mlp_width(s, flag, d)
    _fill_defaults(s)
    _position_rows(s, flag)
    _moe_layout(s, d)
    _apply_sliding_flag(s, flag("sliding_window"),
                        explicit_config=bool(flag("hf_model_name_or_path")))
    s["layers"] = build_layers(s)
    _check_mlps(s["layers"])
    s["warnings"] = warnings
    s["described"] = _described(s, flag)
    return ModelSpec(s), notes


def _from_config(path, num_layers):
    """The flat spec, notes and warnings read from the config at path (all empty without one)."""
    if path is None:
        return {}, [], []
    from .config import spec_from_hf_config  # the config readers load only for a config
    from .hub import load_hf_config
    cfg = load_hf_config(path)
    try:
        return spec_from_hf_config(cfg, num_layers=num_layers)
    except (TypeError, KeyError, IndexError, AttributeError, ZeroDivisionError,
            OverflowError) as exc:
        # a field a family reader needs is missing or of a shape it cannot use (the readers
        # check the fields they know; this catches the combinations they do not)
        raise CalcError(f"{cfg.get('_config_path') or 'config'}: cannot read this "
                        f"{cfg.get('model_type')!s:.40} config: a needed field is missing or "
                        f"malformed ({type(exc).__name__}: {str(exc)[:120]})") from None


def _check_flag_sizes(s, flag):
    """Refuse a flag past its cap, and a head flag the config sets layer by layer."""
    for name, cap in _CAPS:
        val = flag(name)
        if val is not None and val > cap:
            raise CalcError(f"--{name.replace('_', '-')} {val} is implausibly large "
                            f"(at most {cap:,})")
    per_layer = {k for ov in (s.get("layer_overrides") or {}).values()
                 for k in ov.get("attention", {})}
    for name, key in (("head_dim", "head_dim"), ("num_kv_heads", "kv_heads")):
        if flag(name) is not None and key in per_layer:
            raise CalcError(f"--{name.replace('_', '-')}: this config sets it layer by layer "
                            f"({s.get('model_type')}); edit the config instead")


def _apply_flags(s, flag, d):
    """The explicit flags over the config's values, then the defaults of the basic shape."""
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
    for name in ("vocab_size", "hidden_size", "num_layers", "num_mlp_linears", "expert_interval",
                 "topk"):
        s.setdefault(name, d[name])


def _check_flag_values(flag, s):
    """Refuse a size that is not positive, a fraction out of range, a count below zero."""
    for name in _POSITIVE:
        val = flag(name) if flag(name) is not None else s.get(name)
        if val is not None and val <= 0 and not (name == "qk_rope_head_dim" and val == 0
                                                 and flag(name) is None):
            # (a config's NoPE MLA: 0)
            raise CalcError(f"--{name.replace('_', '-')} must be positive, got {val}")
    ff = flag("ffn_expansion_factor")
    if ff is not None and not 0 < ff <= 1024:
        raise CalcError(f"--ffn-expansion-factor must be in (0, 1024], got {ff}")
    if flag("kv_size_ratio") is not None and not 0 < flag("kv_size_ratio") <= 1:
        raise CalcError(f"--kv-size-ratio must be in (0, 1], got {flag('kv_size_ratio')}")
    for name in ("num_shared_experts", "shared_expert_ffn_hidden_size", "num_dense_layers",
                 "sliding_window"):
        if flag(name) is not None and flag(name) < 0:
            raise CalcError(f"--{name.replace('_', '-')} must not be negative, got {flag(name)}")


COOKBOOK_HEADS = 64  # EleutherAI cookbook calc/calc_transformer_mem.py's default -a (@827ee3b)


def default_heads(h, *, head_dim=None):
    """Query heads when neither a flag nor a config gives them, one rule for every tool: the
    cookbook mem script's 64 where they split h into heads of at least 64 (h 6144: 64 heads of 96),
    else heads of 128 or of 64 where they divide, else one; with --head-dim, h / head_dim."""
    if head_dim and h % head_dim == 0:
        return h // head_dim
    if h % COOKBOOK_HEADS == 0 and h // COOKBOOK_HEADS >= 64:
        return COOKBOOK_HEADS
    return h // 128 if h % 128 == 0 else (h // 64 if h % 64 == 0 else 1)


def _attention_shape(s, flag, d):
    """Query heads, head width and key/value heads: MLA's from its parts, else from h / a and the
    kv flags."""
    h = s["hidden_size"]
    if "num_attention_heads" not in s:
        s["num_attention_heads"] = default_heads(h, head_dim=s.get("head_dim"))
    a = s["num_attention_heads"]
    if s.get("kv_lora_rank"):
        for name in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            if s.get(name) is None or (not s[name] and name != "qk_rope_head_dim"):
                raise CalcError(f"MLA (--kv-lora-rank) needs --{name.replace('_', '-')}")
        s["head_dim"] = s["qk_nope_head_dim"] + s["qk_rope_head_dim"]
        s["num_kv_heads"] = a  # MLA expands the latent into a full set of heads
        return
    if s.get("head_dim") is None:
        if h % a:
            raise CalcError(f"--hidden-size {h} is not divisible by --num-attention-heads {a} "
                            "(give --head-dim if the head size is not h/a)")
        s["head_dim"] = h // a
    if flag("num_kv_heads") is not None:
        s["num_kv_heads"] = flag("num_kv_heads")
    elif flag("kv_size_ratio") is not None:
        kv = a * flag("kv_size_ratio")
        if abs(kv - round(kv)) > 1e-6 or round(kv) < 1:
            raise CalcError(f"--kv-size-ratio {flag('kv_size_ratio')} x {a} heads is not a "
                            "whole number of kv heads")
        s["num_kv_heads"] = int(round(kv))
    s.setdefault("num_kv_heads", int(round(a * d["kv_size_ratio"])) or 1)
    if a % s["num_kv_heads"]:
        path = flag("hf_model_name_or_path")  # name the field or flag each came from
        heads = ("--num-attention-heads" if flag("num_attention_heads") is not None
                 else "num_attention_heads")
        kv = ("--num-kv-heads" if flag("num_kv_heads") is not None
              else "--kv-size-ratio" if flag("kv_size_ratio") is not None
              else "num_key_value_heads" if path else "the default kv heads (= heads)")
        raise CalcError(f"{heads} {a} is not divisible by {kv} {s['num_kv_heads']}"
                        + (f" ({path})" if path else ""))


def _mlp_width(s, flag, d):
    """f: --ffn-hidden-size or the config's, else -ff x h."""
    h = s["hidden_size"]
    if flag("ffn_expansion_factor") is not None and flag("ffn_hidden_size") is None:
        s["ffn_hidden_size"] = int(round(flag("ffn_expansion_factor") * h))
    s.setdefault("ffn_hidden_size", int(round(d["ffn_expansion_factor"] * h)))
    if s["ffn_hidden_size"] <= 0:
        raise CalcError("the MLP width (-ff x h or --ffn-hidden-size) must be positive")


def _fill_defaults(s):
    """What neither the config nor a flag said: a GPT-NeoX-style block, none of the extras."""
    s.setdefault("norm", "layernorm")
    s.setdefault("parallel_attention", False)
    s.setdefault("norms_per_layer", 1 if s["parallel_attention"] else 2)
    s.setdefault("qk_norm", "none")
    for name in ("qkv_bias", "attn_out_bias", "mlp_bias"):
        s.setdefault(name, True)
    for name, val in (("tied_embeddings", False), ("embedding_norm", False), ("final_norm", True),
                      ("position_embedding", "rope"), ("word_embed_proj_dim", s["hidden_size"]),
                      ("moe", False), ("attention_sinks", False), ("attn_output_gate", "none"),
                      ("model_type", None), ("layer_types", None), ("sliding_window", None),
                      ("attention_chunk_size", None), ("nope_layers", ()), ("layer_overrides", {}),
                      ("extra_params_per_layer", 0), ("per_layer_embedding_params", 0),
                      ("other_params", {}), ("mtp_layers_not_built", 0), ("index_n_heads", 0),
                      ("index_head_dim", 0), ("index_topk", 0), ("zero_experts", 0),
                      ("expert_bias", None), ("router_has_bias", False),
                      ("checkpoint_format", None), ("input_matmul_params", 0),
                      ("attn_position_scaling", False), ("indexer_input_norm", False),
                      ("linear_mixer", None), ("layer_blocks", None)):
        s.setdefault(name, val)


def _position_rows(s, flag):
    """Rows of a learned position table: --max-position-embeddings, the config's, else -s (2048)."""
    if s["position_embedding"] == "learned":
        if flag("max_position_embeddings") is not None:
            s["position_embedding_rows"] = flag("max_position_embeddings")
        s.setdefault("position_embedding_rows", flag("sequence_length") or 2048)
    else:
        s["position_embedding_rows"] = 0


def _moe_layout(s, d):
    """The experts and which layers hold them (zeros for a dense model); MLA's widths None when
    not MLA."""
    L = s["num_layers"]
    if s["moe"]:
        s.setdefault("num_experts", d["num_experts"])
        s.setdefault("moe_ffn_hidden_size", s["ffn_hidden_size"])
        E, k = s["num_experts"], s["topk"]
        if E < 1:
            raise CalcError("--num-experts must be at least 1 for a MoE model")
        if k > E + s["zero_experts"]:
            raise CalcError(f"--topk {k} is larger than --num-experts {E}")
        s.setdefault("num_shared_experts", 0)
        s.setdefault("shared_expert_ffn_hidden_size",
                     s["num_shared_experts"] * s["moe_ffn_hidden_size"])
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
    for name in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                 "v_head_dim"):
        s.setdefault(name, None)


def _check_mlps(layers):
    """Refuse a layer list whose MLP lacks a width or routes to more experts than it has."""
    for layer in layers:
        for m in layer["mlp"]:
            if m["width"] is None or m["width"] < 1:
                raise CalcError(f"an MLP width is missing from the config ({m['kind']} block)")
            if m["kind"] == "moe" and not 1 <= m["topk"] <= m["num_experts"] + m["zero_experts"]:
                raise CalcError(f"top-k {m['topk']} must be between 1 and the "
                                f"{m['num_experts'] + m['zero_experts']} experts of an MoE layer")


def _described(s, flag):
    """What model this is, in words, for the first lines of every report."""
    shape = f"L={s['num_layers']} h={s['hidden_size']} V={s['vocab_size']}"
    path = flag("hf_model_name_or_path")
    if path is not None:
        return f"{path} ({s.get('model_type') or 'no model_type'}, {shape})"
    given = [n for n in _GLOBAL_FLAGS + ("num_layers", "num_kv_heads", "kv_size_ratio",
                                         "ffn_expansion_factor", "swiglu", "moe", "bias",
                                         "sliding_window")
             if flag(n) is not None]
    if given:
        return f"the model the flags describe ({shape})"
    return (f"the cookbook's default shape ({shape}, GPT-NeoX-20B-like); pass "
            "--hf_model_name_or_path or -l/-hs for yours")


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
                      "kv_lora_rank": 0, "qk_nope_head_dim": 0, "qk_rope_head_dim": 0,
                      "index_heads": 0, "index_head_dim": 0, "index_topk": 0, "kv_proj": 0,
                      "kv_shared": False, "position_scaling": False, "indexer_input_norm": False}


def build_layers(s):
    """The layer list of a resolved spec: per layer an attention dict, an MLP dict, its norm count
    and any extra weights, objects shared between layers of the same kinds."""
    L, cache, layers = s["num_layers"], {}, []
    moe_set = set(s["moe_layers"])
    types = s["layer_types"] or ["full"] * L
    blocks = s.get("layer_blocks") or ["both"] * L  # Nemotron-H: a layer is a mixer or an MLP
    nope = set(s["nope_layers"])
    by_inputs = {}  # what varies per layer -> the layer built for it (built once per inputs)
    for i in range(L):
        ov = s["layer_overrides"].get(i, {})
        key = (types[i], i in nope, i in moe_set, blocks[i], id(ov) if ov else None)
        if key in by_inputs and not ov:
            layers.append(by_inputs[key])
            continue
        layers.append(_shared(cache, _layer(s, cache, ov, span=types[i], rope=i not in nope,
                                            moe=i in moe_set, block=blocks[i])))
        by_inputs[key] = layers[-1]
    return layers


def _layer(s, cache, ov, *, span, rope, moe, block):
    """One Layer: its attention and MLP dicts (shared through cache), its norms and extras, with
    the config's overrides for it (ov)."""
    parallel = span == "hybrid"  # Falcon-H1: attention and a linear mixer side by side
    span = "full" if parallel else span
    attn = _shared(cache, _layer_attention(s, ov, span=span, rope=rope))
    mlp = _shared(cache, _layer_mlp(s, ov, moe=moe))
    extra_attn = tuple(_shared(cache, dict(attn, **x)) for x in ov.get("more_attention", ()))
    if parallel:
        mixer = dict(_NO_SOFTMAX_EXTRAS, span="state", **s["linear_mixer"])
        extra_attn += (_shared(cache, dict(attn, **mixer)),)
    extra_mlp = tuple(_shared(cache, dict(x)) for x in ov.get("more_mlp", ()))
    layer = Layer(attention=() if block == "mlp" else (attn,) + extra_attn,
                  mlp=() if block == "mixer" else (mlp,) + extra_mlp,
                  norms=ov.get("norms", s["norms_per_layer"]),
                  extra_params=ov.get("extra_params", s["extra_params_per_layer"]),
                  extra_flops=s.get("extra_flops_per_layer"))
    if ov.get("weightless_flops"):
        # matmuls without weights outside attention (Gemma 3n's AltUp), per token
        layer["weightless_flops"] = ov["weightless_flops"]
    return layer


def _layer_attention(s, ov, *, span, rope):
    """A layer's attention dict (a linear mixer's for a linear layer), before sharing."""
    attn = {"kind": "mla" if s.get("kv_lora_rank") else "mha", "span": span,
            "window": s["sliding_window"] if span == "sliding" else 0,
            "chunk": s["attention_chunk_size"] if span == "chunked" else 0,
            "rope": s["position_embedding"] == "rope" and rope,
            "heads": s["num_attention_heads"], "kv_heads": s["num_kv_heads"],
            "head_dim": s["head_dim"], "qkv_bias": s["qkv_bias"], "out_bias": s["attn_out_bias"],
            "qk_norm": s["qk_norm"],
            "norm": s.get("attn_norm") or ("rmsnorm" if s["norm"] == "layernorm" else s["norm"]),
            "sinks": s["attention_sinks"], "output_gate": s["attn_output_gate"],
            "q_lora_rank": s["q_lora_rank"] or 0, "kv_lora_rank": s["kv_lora_rank"] or 0,
            "qk_nope_head_dim": s["qk_nope_head_dim"] or 0,
            "qk_rope_head_dim": s["qk_rope_head_dim"] or 0,
            "v_head_dim": s["v_head_dim"] or s["head_dim"],
            "index_heads": s["index_n_heads"], "index_head_dim": s["index_head_dim"],
            "index_topk": s["index_topk"], "kv_proj": 2, "kv_shared": False,
            "position_scaling": s["attn_position_scaling"],
            "indexer_input_norm": s["indexer_input_norm"]}
    if s.get("attn_extra_weights"):
        # a family's non-matmul attention weights (DiffLlama's lambdas)
        attn["extra_weights"] = s["attn_extra_weights"]
    if "qkv" in s.get("fused_projections", ()) and attn["kind"] == "mha":
        attn["fused"] = True  # one qkv matmul; q, k and v are slices of its output
    if span == "linear":
        # a linear-attention (state-space) mixer: no K/V cache, a constant state per sequence
        attn.update(dict(_NO_SOFTMAX_EXTRAS, span="state", **s["linear_mixer"]))
    attn.update(ov.get("attention", {}))
    return attn


def _layer_mlp(s, ov, *, moe):
    """A layer's MLP dict, routed experts or dense, before sharing."""
    if moe:
        mlp = {"kind": "moe", "width": s["moe_ffn_hidden_size"], "linears": s["num_mlp_linears"],
               "bias": s["mlp_bias"] if s["expert_bias"] is None else s["expert_bias"],
               "num_experts": s["num_experts"], "topk": s["topk"],
               "zero_experts": s["zero_experts"],
               "shared_width": s["shared_expert_ffn_hidden_size"], "shared_bias": s["mlp_bias"],
               "shared_gate": s["shared_expert_gate"],
               "router_bias": s["router_bias"] or s["router_has_bias"]}
    else:
        mlp = {"kind": "dense", "width": s["ffn_hidden_size"], "linears": s["num_mlp_linears"],
               "bias": s["mlp_bias"]}
        if s.get("mlp_act_params"):
            # a learned activation's or inner norm's weights (Apertus, BitNet)
            mlp["act_params"] = s["mlp_act_params"]
        if "gate_up" in s.get("fused_projections", ()) and mlp["linears"] == 3:
            mlp["fused"] = True  # one gate|up matmul whose output is chunked in two
    mlp.update(ov.get("mlp", {}))
    return mlp


def spec_summary(spec):
    """The spec for --json: every resolved field, the layer list as distinct kinds plus the kind
    index of each layer (the layer dicts themselves repeat)."""
    out = {k: v for k, v in spec.items()
           if k not in ("layers", "layer_overrides") and not k.startswith("_")}
    groups = layer_groups(spec)
    index = {id(g[0]): n for n, g in enumerate(groups)}
    out["layer_kinds"] = [{"attention": [dict(x) for x in g[0]["attention"]],
                           "mlp": [dict(x) for x in g[0]["mlp"]], "norms": g[0]["norms"],
                           "extra_params": g[0]["extra_params"], "layers": g[1]} for g in groups]
    out["layer_kind_of_layer"] = [index[id(x)] for x in spec["layers"]]
    out["nope_layers"] = sorted(spec.get("nope_layers", ()))
    return out
