#!/usr/bin/env python3
"""Parameter count of a decoder-only transformer: total, per component, and active per token (MoE).

Counts every weight the Hugging Face implementation allocates, exactly: token and position
embeddings, per-layer attention (MHA/GQA/MQA or DeepSeek's MLA, with q/k norms and biases), dense
MLP (2 or 3 matrices) or MoE block (routed experts, shared experts and their gate, router), the
layer norms, the final norm and the output head (tied or not). Tied weights are counted once.

Symbols: V vocab, h hidden, L layers, a query heads, kv key/value heads, d head dim, f MLP width,
E routed experts, k experts per token (top-k), f_e expert width.

Defaults (no flags): the cookbook's defaults (V 51200, h 6144, L 44) on a GPT-NeoX-style block:
LayerNorm with bias, biased linear layers, rotary positions (no learned position table), untied
output head. That is GPT-NeoX-20B's layout (with its V 50432 it gives its exact 20,554,567,680).

Conventions: "non-embedding" excludes the token embedding, any learned position table and an untied
output head (Kaplan et al. 2020, sec. 2.1). "active" is what one token's forward touches under
top-k routing: all dense weights, the shared experts, the router and k of the E routed experts per
MoE layer (embeddings and output head included, as model cards count it).

Examples:
  python calc_transformer_params.py
  python calc_transformer_params.py -l 96 -hs 12288                 # GPT-3 175B shape
  python calc_transformer_params.py -l 12 -hs 768 --moe -e 512       # cookbook MoE example
  python calc_transformer_params.py --hf_model_name_or_path path/to/Mixtral-8x7B/config.json
  python calc_transformer_params.py -l 32 -hs 4096 -a 32 --num-kv-heads 8 --ffn-hidden-size 14336 \\
      --swiglu --norm rmsnorm --no-bias -v 128256 --json           # Llama-3-8B from flags

References:
  Kaplan et al. 2020, "Scaling Laws for Neural Language Models", sec. 2.1 (12 L h^2 counting).
  Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters", sec. 5.1.
  DeepSeek-AI 2024, "DeepSeek-V2", sec. 2.1 (MLA) and 2.2 (DeepSeekMoE); Shazeer 2020 (GLU MLPs).
  Hugging Face transformers modeling_*.py of each family (the counts are checked against them).
"""

import argparse
import json
import os
import sys

# === shared model spec: begin ===
# This block is repeated on purpose in every calc_*.py script that needs a model (each file stands
# alone); tests/test_shared_copies.py keeps the copies identical. Edit it here, then copy it over.

MODEL_DEFAULTS = {
    # The cookbook's calc_transformer_params.py defaults; other scripts override some of them.
    "vocab_size": 51200, "hidden_size": 6144, "num_layers": 44, "num_experts": 8,
    "expert_interval": 1, "topk": 1, "ffn_expansion_factor": 4.0, "num_mlp_linears": 2,
    "kv_size_ratio": 1.0,
}

SUPPORTED_MODEL_TYPES = (
    "gpt2", "gpt_neox", "opt", "bloom", "falcon", "llama", "mistral", "mixtral", "qwen2",
    "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2", "phi3", "starcoder2", "olmo2",
    "deepseek_v2", "deepseek_v3",
)

# Hugging Face config classes whose tie_word_embeddings default is True when config.json omits it
# (PretrainedConfig's default); the others pass tie_word_embeddings=False in their constructors.
_TIED_BY_DEFAULT = {"gpt2", "opt", "bloom", "falcon", "gemma", "gemma2", "starcoder2"}


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (no usage dump) and exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def finite_float(text):
    """argparse type for a real number: rejects nan and inf with a one-line usage error."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if value != value or abs(value) == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def add_model_args(parser):
    """Model-shape flags shared by every script (cookbook spellings kept; defaults are None so a
    flag the user gave is visible, and MODEL_DEFAULTS fill in what neither flag nor config set)."""
    g = parser.add_argument_group("model (flags override values read from a config)")
    bo = argparse.BooleanOptionalAction
    g.add_argument("--hf_model_name_or_path", "--hf-model-name-or-path", dest="hf_model_name_or_path",
                   default=None, help="local folder with config.json, a config.json path, or a hub "
                   "id (hub ids need `transformers`; never trust_remote_code)")
    g.add_argument("--vocab-size", "-v", type=int, default=None, help="V (default 51200)")
    g.add_argument("--hidden-size", "-hs", type=int, default=None, help="h (default 6144)")
    g.add_argument("--num-layers", "-l", type=int, default=None, help="L (default 44)")
    g.add_argument("--num-attention-heads", "-a", type=int, default=None,
                   help="a (default: h/128, or h/64, when it divides)")
    g.add_argument("--num-kv-heads", type=int, default=None, help="kv heads (GQA/MQA; default a)")
    g.add_argument("--kv-size-ratio", "-kv", type=finite_float, default=None,
                   help="kv heads / query heads (cookbook; 1.0 = MHA)")
    g.add_argument("--head-dim", type=int, default=None, help="d (default h/a)")
    g.add_argument("--ffn-expansion-factor", "-ff", type=finite_float, default=None,
                   help="f = ff * h when --ffn-hidden-size is not given (default 4)")
    g.add_argument("--ffn-hidden-size", type=int, default=None, help="f, the dense MLP width")
    g.add_argument("--num-mlp-linears", "-nl", type=int, default=None,
                   help="matrices per MLP: 2 (GELU) or 3 (gated, e.g. SwiGLU) (default 2)")
    g.add_argument("--swiglu", action="store_true", default=None,
                   help="gated MLP with 3 matrices (same as -nl 3)")
    g.add_argument("--tied-embeddings", action=bo, default=None,
                   help="output head shares the token embedding (default: not tied)")
    g.add_argument("--norm", choices=("layernorm", "rmsnorm"), default=None,
                   help="norm type: layernorm has weight+bias, rmsnorm weight only (default layernorm)")
    g.add_argument("--norms-per-layer", type=int, default=None,
                   help="norms in each block (default 2; 1 with --parallel-attention; Gemma 2: 4)")
    g.add_argument("--parallel-attention", action=bo, default=None,
                   help="attention and MLP read one shared norm (GPT-J/Falcon-7B): 1 norm per layer")
    g.add_argument("--qk-norm", choices=("none", "head", "full"), default=None,
                   help="q/k norms: per head dim (Qwen3) or over all heads (OLMo 2) (default none)")
    g.add_argument("--bias", action=bo, default=None,
                   help="biases in all linear layers (default on, GPT-NeoX style); the three "
                   "switches below override it")
    g.add_argument("--qkv-bias", action=bo, default=None, help="bias on q, k, v projections")
    g.add_argument("--attn-out-bias", action=bo, default=None, help="bias on the attention output")
    g.add_argument("--mlp-bias", action=bo, default=None, help="biases in the MLP/experts")
    g.add_argument("--position-embedding", choices=("rope", "learned", "alibi", "none"), default=None,
                   help="learned adds a (max positions x h) table; rope/alibi/none add no weights "
                   "(default rope)")
    g.add_argument("--max-position-embeddings", type=int, default=None,
                   help="rows of a learned position table (default: the sequence length)")
    g.add_argument("--embedding-norm", action=bo, default=None,
                   help="a norm right after the token embedding (BLOOM)")
    g.add_argument("--final-norm", action=bo, default=None, help="final norm before the head (default on)")
    g.add_argument("--moe", action="store_true", default=None, help="mixture of experts MLPs")
    g.add_argument("--num-experts", "-e", type=int, default=None, help="E routed experts (default 8)")
    g.add_argument("--expert-interval", "-ei", type=int, default=None,
                   help="every ei-th layer is MoE (default 1)")
    g.add_argument("--topk", "-t", type=int, default=None, help="k experts per token (default 1)")
    g.add_argument("--moe-ffn-hidden-size", type=int, default=None, help="f_e (default f)")
    g.add_argument("--num-shared-experts", type=int, default=None, help="shared experts (default 0)")
    g.add_argument("--shared-expert-ffn-hidden-size", type=int, default=None,
                   help="total width of the shared experts (default num_shared * f_e)")
    g.add_argument("--shared-expert-gate", action=bo, default=None,
                   help="sigmoid gate (h -> 1) on the shared expert (Qwen-MoE)")
    g.add_argument("--num-dense-layers", type=int, default=None,
                   help="leading dense layers before the MoE layers (DeepSeek first_k_dense_replace)")
    g.add_argument("--router-bias", action=bo, default=None,
                   help="count a per-expert router bias (DeepSeek-V3's checkpoint stores one; HF "
                   "keeps it as a buffer, so it is off when reading a config)")
    g.add_argument("--q-lora-rank", type=int, default=None, help="MLA query rank (none: full q_proj)")
    g.add_argument("--kv-lora-rank", type=int, default=None, help="MLA kv latent rank (turns MLA on)")
    g.add_argument("--qk-nope-head-dim", type=int, default=None, help="MLA non-rotary q/k head dim")
    g.add_argument("--qk-rope-head-dim", type=int, default=None, help="MLA rotary q/k head dim")
    g.add_argument("--v-head-dim", type=int, default=None, help="MLA value head dim")
    return g


def load_hf_config(name_or_path):
    """Return a Hugging Face config as a dict: from a local folder or config.json with `json`
    alone, else from the hub through transformers.AutoConfig (imported only here, never with
    trust_remote_code). Raises ValueError with a one-line message."""
    if not name_or_path.strip():
        raise ValueError("--hf_model_name_or_path is empty: give a folder with config.json, a "
                         "config.json path or a hub id")
    path = os.path.expanduser(name_or_path)
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
        if not os.path.isfile(path):
            raise ValueError(f"no config.json in folder {name_or_path!r}")
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as fh:
                cfg = json.load(fh)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read {path!r}: {exc}".replace("\n", " ")) from None
        if not isinstance(cfg, dict):
            raise ValueError(f"{path!r} is not a JSON object")
        return cfg
    if os.path.exists(path):  # /dev/null, a pipe, a socket: never read, never a hub id
        raise ValueError(f"{name_or_path!r} is not a config file (neither a regular file nor a folder)")
    parts = name_or_path.split("/")  # a hub id is `name` or `org/name`; anything else is a path
    if name_or_path.endswith(".json") or name_or_path.startswith((".", "~")) or len(parts) > 2 \
            or "" in parts:
        raise ValueError(f"config file {name_or_path!r} not found")
    return _hub_config(name_or_path)


def _hub_config(repo_id):
    """A hub id's config through transformers.AutoConfig (never trust_remote_code), offline-first:
    the local Hugging Face cache; else one metadata request, given HF_HUB_ETAG_TIMEOUT (default 1 s)
    plus 0.5 s and no retries, then the download. Without network this fails in about a second, not
    after huggingface_hub's ~25 s of retries. transformers' advisories, the hub's warnings and
    progress bars stay off the screen. Raises ValueError with a one-line message."""
    import contextlib, importlib.util, io, logging, threading, warnings  # noqa: E401
    if importlib.util.find_spec("transformers") is None:
        raise ValueError(f"{repo_id!r} is not a local folder or file, and reading a hub id needs "
                         "`pip install transformers` (or pass a local config.json)")
    try:
        timeout_s = float(os.environ.get("HF_HUB_ETAG_TIMEOUT") or 1)
    except ValueError:
        timeout_s = 1.0
    timeout_s = timeout_s if 0 < timeout_s <= 600 else 1.0


    def first_line(exc):
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0]

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import huggingface_hub as hub
        for logger in ("huggingface_hub", "transformers"):  # loggers bound to the real stderr
            logging.getLogger(logger).setLevel(logging.ERROR)
        try:  # the cache alone: files, no request (hf_hub_download would send one even so)
            path = hub.try_to_load_from_cache(repo_id, "config.json")
        except Exception as exc:  # HFValidationError: not a repo id, which no request can fix
            raise ValueError(f"cannot load config {repo_id!r}: {first_line(exc)}") from None
        if not isinstance(path, str):  # not cached (None), or cached as missing from the repo
            url, answer = hub.hf_hub_url(repo_id, "config.json"), []

            def probe():  # in a thread, so that a DNS look-up that hangs cannot hold us
                try:
                    answer.append(hub.get_hf_file_metadata(url, timeout=timeout_s))
                except Exception as exc:
                    answer.append(exc)
            thread = threading.Thread(target=probe, daemon=True)
            thread.start()
            thread.join(timeout_s + 0.5)
            err = answer[0] if answer else TimeoutError(f"no answer within {timeout_s:g} s")
            status = getattr(getattr(err, "response", None), "status_code", None)
            if status is not None:  # the hub answered: no such repo or file, or no access
                raise ValueError(f"cannot load config {repo_id!r} from the hub: {type(err).__name__} "
                                 f"(HTTP {status}); check the id; a private or gated repo needs a "
                                 "token (HF_TOKEN)")
            if isinstance(err, Exception):  # no network, a firewall, HF_HUB_OFFLINE=1
                raise ValueError(
                    f"cannot load config {repo_id!r}: the hub is unreachable ({type(err).__name__}: "
                    f"{first_line(err)}) and it is not in the local cache; to work offline, download "
                    f"{url} and pass that file or its folder to --hf_model_name_or_path")
            try:
                path = hub.hf_hub_download(repo_id, "config.json")
            except Exception as exc:
                raise ValueError(f"cannot load config {repo_id!r} from the hub: "
                                 f"{first_line(exc)}") from None
        try:
            from transformers import AutoConfig
            logging.getLogger("transformers").setLevel(logging.ERROR)  # its import set WARNING
            return AutoConfig.from_pretrained(path, trust_remote_code=False).to_dict()
        except Exception as exc:  # e.g. a model_type this transformers does not know
            raise ValueError(f"cannot load config {repo_id!r} ({path}): {first_line(exc)}") from None


def spec_from_hf_config(cfg):
    """Translate a Hugging Face config dict into this block's model spec fields, per family, as
    transformers' modeling_<family>.py builds the weights. Returns (fields, notes); notes list what
    was assumed. Unknown model_type: a Llama-style best-effort reading, with the assumption noted."""
    if isinstance(cfg.get("text_config"), dict) and "hidden_size" not in cfg:
        cfg = cfg["text_config"]
    mt = cfg.get("model_type")
    notes = []

    def get(*keys, default=None):
        for key in keys:
            if cfg.get(key) is not None:
                return cfg[key]
        return default

    s = {"model_type": mt,
         "vocab_size": get("vocab_size"),
         "hidden_size": get("hidden_size", "n_embd", "n_embed", "d_model"),
         "num_layers": get("num_hidden_layers", "n_layer", "num_layers"),
         "num_attention_heads": get("num_attention_heads", "n_head", "num_heads"),
         "tied_embeddings": bool(get("tie_word_embeddings", default=mt in _TIED_BY_DEFAULT))}
    h, a = s["hidden_size"], s["num_attention_heads"]
    if mt not in SUPPORTED_MODEL_TYPES:
        notes.append(f"model_type {mt!r} is not one of {', '.join(SUPPORTED_MODEL_TYPES)}; read as "
                     "Llama-style (RMSNorm, gated 3-matrix MLP, no biases, rotary, "
                     "num_key_value_heads/head_dim/intermediate_size as given)")
    llama_like = dict(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False,
                      mlp_bias=False, position_embedding="rope",
                      num_kv_heads=get("num_key_value_heads", default=a),
                      head_dim=get("head_dim"), ffn_hidden_size=get("intermediate_size"))
    if mt == "gpt2":
        s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True,
                 mlp_bias=True, position_embedding="learned",
                 position_embedding_rows=get("n_positions", "max_position_embeddings"),
                 ffn_hidden_size=get("n_inner", default=4 * h))
    elif mt == "gpt_neox":
        bias = bool(get("attention_bias", default=True))
        s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias,
                 mlp_bias=True, position_embedding="rope", ffn_hidden_size=get("intermediate_size"))
    elif mt == "opt":
        bias = bool(get("enable_bias", default=True))
        pre = bool(get("do_layer_norm_before", default=True))
        s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias,
                 mlp_bias=bias, position_embedding="learned",
                 position_embedding_rows=get("max_position_embeddings") + 2,  # OPT offsets by 2
                 ffn_hidden_size=get("ffn_dim"), word_embed_proj_dim=get("word_embed_proj_dim", default=h),
                 final_norm=pre and not get("_remove_final_layer_norm", default=False))
        if not get("layer_norm_elementwise_affine", default=True):
            s["norm"] = "none"
    elif mt == "bloom":
        s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True,
                 mlp_bias=True, position_embedding="alibi", ffn_hidden_size=4 * h, embedding_norm=True)
    elif mt == "falcon":
        new_arch = bool(get("new_decoder_architecture", default=False))
        if new_arch:
            kv = get("num_kv_heads", default=a)
            n_ln = 2 if get("num_ln_in_parallel_attn", default=2) == 2 else 1
        else:
            kv = 1 if get("multi_query", default=True) else a
            n_ln = 1 if get("parallel_attn", default=True) else 2
        bias = bool(get("bias", default=False))
        s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias,
                 position_embedding="alibi" if get("alibi", default=False) else "rope",
                 num_kv_heads=kv, norms_per_layer=n_ln, parallel_attention=bool(get("parallel_attn", default=True)),
                 ffn_hidden_size=get("ffn_hidden_size", default=4 * h))
    elif mt in ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma",
                "gemma2", "phi3", "olmo2", "deepseek_v2", "deepseek_v3") or mt not in SUPPORTED_MODEL_TYPES:
        s.update(llama_like)
        if mt == "llama" or mt not in SUPPORTED_MODEL_TYPES:
            bias = bool(get("attention_bias", default=False))
            s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=bool(get("mlp_bias", default=False)))
        if mt in ("qwen2", "qwen2_moe"):
            s["qkv_bias"] = True  # Qwen2Attention: q/k/v with bias, o without
        if mt in ("qwen3", "qwen3_moe"):
            bias = bool(get("attention_bias", default=False))
            s.update(qkv_bias=bias, attn_out_bias=bias, qk_norm="head")
        if mt == "olmo2":
            bias = bool(get("attention_bias", default=False))
            s.update(qkv_bias=bias, attn_out_bias=bias, qk_norm="full")
        if mt == "gemma2":
            s["norms_per_layer"] = 4  # input, post-attention, pre-feedforward, post-feedforward
        if mt == "gemma" and s["head_dim"] is None:
            s["head_dim"] = 256
        if mt in ("mixtral",):
            s.update(moe=True, num_experts=get("num_local_experts"), topk=get("num_experts_per_tok"),
                     moe_ffn_hidden_size=get("intermediate_size"))
        if mt in ("qwen2_moe", "qwen3_moe"):
            s.update(moe=True, num_experts=get("num_experts"), topk=get("num_experts_per_tok"),
                     moe_ffn_hidden_size=get("moe_intermediate_size"),
                     expert_interval=get("decoder_sparse_step", default=1),
                     dense_layers=list(get("mlp_only_layers", default=[]) or []))
            if mt == "qwen2_moe":
                sh = get("shared_expert_intermediate_size", default=0)
                s.update(num_shared_experts=1 if sh else 0, shared_expert_ffn_hidden_size=sh,
                         shared_expert_gate=bool(sh))
        if mt in ("deepseek_v2", "deepseek_v3"):
            bias = bool(get("attention_bias", default=False))
            n_sh = get("n_shared_experts", default=0) or 0
            fkd = get("first_k_dense_replace", default=0)
            freq = get("moe_layer_freq", default=1)
            s.update(qkv_bias=bias, attn_out_bias=bias, moe=bool(get("n_routed_experts")),
                     num_experts=get("n_routed_experts"), topk=get("num_experts_per_tok"),
                     moe_ffn_hidden_size=get("moe_intermediate_size"), num_shared_experts=n_sh,
                     shared_expert_ffn_hidden_size=n_sh * get("moe_intermediate_size", default=0),
                     num_dense_layers=fkd, router_bias=False,  # V3's correction bias is a buffer in HF
                     q_lora_rank=get("q_lora_rank"), kv_lora_rank=get("kv_lora_rank"),
                     qk_nope_head_dim=get("qk_nope_head_dim"), qk_rope_head_dim=get("qk_rope_head_dim"),
                     v_head_dim=get("v_head_dim"), head_dim=None)
            if freq != 1:
                s["dense_layers"] = [i for i in range(s["num_layers"]) if i >= fkd and i % freq]
    elif mt == "starcoder2":
        bias = bool(get("use_bias", default=True))
        s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias,
                 position_embedding="rope", num_kv_heads=get("num_key_value_heads", default=a),
                 head_dim=get("head_dim"), ffn_hidden_size=get("intermediate_size"))
    if mt not in SUPPORTED_MODEL_TYPES:
        for key in ("num_local_experts", "num_experts", "n_routed_experts"):
            if get(key):
                s.update(moe=True, num_experts=get(key), topk=get("num_experts_per_tok", default=1),
                         moe_ffn_hidden_size=get("moe_intermediate_size", "intermediate_size"))
                notes.append(f"read {key} as routed experts, each of width moe_intermediate_size "
                             "(or intermediate_size); shared experts, if any, were not read")
                break
    if s.get("moe"):
        s.setdefault("expert_interval", 1)  # a config's MoE layout is explicit, never a script default
    missing = [k for k in ("vocab_size", "hidden_size", "num_layers", "num_attention_heads")
               if not isinstance(s.get(k), int) or isinstance(s.get(k), bool)]
    if missing:
        raise ValueError(f"config lacks integer field(s) for {', '.join(missing)}")
    return {k: v for k, v in s.items() if v is not None}, notes


def resolve_model_spec(args, defaults=None):
    """Merge a model spec: values read from --hf_model_name_or_path, then explicit flags (which
    win), then `defaults` (MODEL_DEFAULTS updated by the calling script). Validates and returns
    (spec, notes); raises ValueError with a one-line message on bad input."""
    d = dict(MODEL_DEFAULTS, **(defaults or {}))
    s, notes = {}, []
    if getattr(args, "hf_model_name_or_path", None):
        s, notes = spec_from_hf_config(load_hf_config(args.hf_model_name_or_path))
    flag = lambda name: getattr(args, name, None)  # noqa: E731
    for name in ("vocab_size", "hidden_size", "num_layers", "num_attention_heads", "head_dim",
                 "ffn_hidden_size", "num_mlp_linears", "tied_embeddings", "norm", "norms_per_layer",
                 "qk_norm", "qkv_bias", "attn_out_bias", "mlp_bias", "position_embedding",
                 "embedding_norm", "final_norm", "num_experts", "expert_interval", "topk",
                 "moe_ffn_hidden_size", "num_shared_experts", "shared_expert_ffn_hidden_size",
                 "shared_expert_gate", "num_dense_layers", "router_bias", "q_lora_rank",
                 "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                 "parallel_attention"):
        if flag(name) is not None:
            s[name] = flag(name)
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
    for name in ("vocab_size", "hidden_size", "num_layers", "num_mlp_linears", "expert_interval",
                 "topk"):
        s.setdefault(name, d[name])
    V, h, L = s["vocab_size"], s["hidden_size"], s["num_layers"]
    for name in ("vocab_size", "hidden_size", "num_layers", "num_attention_heads", "num_kv_heads",
                 "head_dim", "ffn_hidden_size", "num_mlp_linears", "num_experts", "expert_interval",
                 "topk", "moe_ffn_hidden_size", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim",
                 "qk_rope_head_dim", "v_head_dim", "norms_per_layer", "max_position_embeddings"):
        val = flag(name) if flag(name) is not None else s.get(name)
        if val is not None and val <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be positive, got {val}")
    for name, cap in (("num_layers", 100_000), ("vocab_size", 2**31), ("hidden_size", 2**24),
                      ("num_attention_heads", 2**20), ("ffn_hidden_size", 2**31), ("num_experts", 2**20),
                      ("moe_ffn_hidden_size", 2**31), ("head_dim", 2**20), ("kv_lora_rank", 2**24),
                      ("q_lora_rank", 2**24), ("qk_nope_head_dim", 2**20), ("qk_rope_head_dim", 2**20),
                      ("v_head_dim", 2**20), ("norms_per_layer", 64), ("max_position_embeddings", 2**31)):
        val = flag(name) if flag(name) is not None else s.get(name)
        if val is not None and val > cap:
            raise ValueError(f"--{name.replace('_', '-')} {val} is implausibly large (at most {cap:,})")
    if flag("ffn_expansion_factor") is not None and flag("ffn_expansion_factor") > 1024:
        raise ValueError(f"--ffn-expansion-factor {flag('ffn_expansion_factor')} is implausibly large")
    for name in ("ffn_expansion_factor", "kv_size_ratio"):
        if flag(name) is not None and flag(name) <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be positive, got {flag(name)}")
    for name in ("num_shared_experts", "shared_expert_ffn_hidden_size", "num_dense_layers"):
        if s.get(name) is not None and s[name] < 0:
            raise ValueError(f"--{name.replace('_', '-')} must not be negative, got {s[name]}")
    if "num_attention_heads" not in s:
        s["num_attention_heads"] = h // 128 if h % 128 == 0 else (h // 64 if h % 64 == 0 else 1)
    a = s["num_attention_heads"]
    mla = bool(s.get("kv_lora_rank"))
    if mla:
        for name in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            if not s.get(name):
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
            raise ValueError(f"--num-attention-heads {a} is not divisible by kv heads {s['num_kv_heads']}")
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
    s.setdefault("tied_embeddings", False)
    s.setdefault("embedding_norm", False)
    s.setdefault("final_norm", True)
    s.setdefault("position_embedding", "rope")
    if s["position_embedding"] == "learned":
        if flag("max_position_embeddings") is not None:
            s["position_embedding_rows"] = flag("max_position_embeddings")
        s.setdefault("position_embedding_rows", getattr(args, "sequence_length", None) or 2048)
    else:
        s["position_embedding_rows"] = 0
    s.setdefault("word_embed_proj_dim", h)
    s.setdefault("moe", False)
    if s["moe"]:
        s.setdefault("num_experts", d["num_experts"])
        s.setdefault("moe_ffn_hidden_size", s["ffn_hidden_size"])
        E, k = s["num_experts"], s["topk"]
        if E < 1:
            raise ValueError("--num-experts must be at least 1 for a MoE model")
        if k > E:
            raise ValueError(f"--topk {k} is larger than --num-experts {E}")
        s.setdefault("num_shared_experts", 0)
        s.setdefault("shared_expert_ffn_hidden_size", s["num_shared_experts"] * s["moe_ffn_hidden_size"])
        s.setdefault("shared_expert_gate", False)
        s.setdefault("router_bias", False)
        s.setdefault("num_dense_layers", 0)
        dense = set(s.get("dense_layers", []))
        ei, fd = s["expert_interval"], s["num_dense_layers"]
        s["moe_layers"] = [i for i in range(L) if i >= fd and i not in dense and (i - fd) % ei == ei - 1]
    else:
        for name in ("num_experts", "moe_ffn_hidden_size", "num_shared_experts",
                     "shared_expert_ffn_hidden_size"):
            s[name] = 0
        s.update(topk=0, shared_expert_gate=False, router_bias=False, moe_layers=[])
    s.setdefault("num_dense_layers", 0)
    s.pop("dense_layers", None)
    for name in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
        s.setdefault(name, None)
    s.setdefault("model_type", None)
    return s, notes


def norm_params(*, width, norm):
    """Weights of one norm over `width` features: LayerNorm has gain and bias (2 w), RMSNorm a gain
    (w), a non-affine norm none (Ba et al. 2016; Zhang & Sennrich 2019)."""
    return {"layernorm": 2 * width, "rmsnorm": width, "none": 0}[norm]


def attention_params(spec):
    """One layer's attention weights. MHA/GQA/MQA: q (h x a d), k and v (h x kv d), o (a d x h),
    optional biases and q/k norms (Qwen3: per head, d each; OLMo 2: over all heads). MLA (DeepSeek-V2
    sec. 2.1): q directly or via a rank-r_q bottleneck with a norm, a joint kv down-projection to
    r_kv + d_rope with a norm, an up-projection to a (d_nope + d_v), and o (a d_v x h)."""
    h, a, kv, d, nm = (spec[k] for k in ("hidden_size", "num_attention_heads", "num_kv_heads",
                                        "head_dim", "norm"))
    qkv_b, o_b = spec["qkv_bias"], spec["attn_out_bias"]
    if spec.get("kv_lora_rank"):
        r_q, r_kv = spec["q_lora_rank"], spec["kv_lora_rank"]
        d_nope, d_rope, d_v = spec["qk_nope_head_dim"], spec["qk_rope_head_dim"], spec["v_head_dim"]
        qn = "rmsnorm" if nm == "layernorm" else nm
        if r_q:
            q = h * r_q + qkv_b * r_q + norm_params(width=r_q, norm=qn) + r_q * a * d
        else:
            q = h * a * d
        kv_down = h * (r_kv + d_rope) + qkv_b * (r_kv + d_rope) + norm_params(width=r_kv, norm=qn)
        kv_up = r_kv * a * (d_nope + d_v)
        return q + kv_down + kv_up + a * d_v * h + o_b * h
    qk = {"none": 0, "head": 2 * d, "full": (a + kv) * d}[spec["qk_norm"]]
    qk_nrm = norm_params(width=qk, norm="rmsnorm" if nm == "layernorm" else nm)
    return h * (a + 2 * kv) * d + qkv_b * (a + 2 * kv) * d + a * d * h + o_b * h + qk_nrm


def mlp_params(*, h, f, num_linears, bias):
    """One MLP: num_linears matrices of h x f (2 for GELU; 3 for gated GLU variants, Shazeer 2020),
    plus biases: f per input projection and h on the output projection."""
    return num_linears * h * f + (bias and (num_linears - 1) * f + h)


def moe_params(spec):
    """One MoE block (Shazeer et al. 2017; DeepSeekMoE, Dai et al. 2024): E routed experts of width
    f_e, shared experts as one MLP of their total width (+ an h -> 1 gate, Qwen-MoE), router
    h x E (+ E bias, DeepSeek-V3)."""
    h, nl, b = spec["hidden_size"], spec["num_mlp_linears"], spec["mlp_bias"]
    one_expert = mlp_params(h=h, f=spec["moe_ffn_hidden_size"], num_linears=nl, bias=b)
    f_sh = spec["shared_expert_ffn_hidden_size"]
    shared = mlp_params(h=h, f=f_sh, num_linears=nl, bias=b) if f_sh else 0
    shared += h * bool(spec["shared_expert_gate"])
    E = spec["num_experts"]
    return {"routed_experts": E * one_expert, "one_expert": one_expert, "shared_experts": shared,
            "router": h * E + E * bool(spec["router_bias"])}


def param_breakdown(spec):
    """Exact parameter counts by component for a resolved spec (see the module docstring for the
    conventions of 'non-embedding' and 'active')."""
    V, h, L, nm = spec["vocab_size"], spec["hidden_size"], spec["num_layers"], spec["norm"]
    p = spec["word_embed_proj_dim"]
    attn = attention_params(spec)
    norms = spec["norms_per_layer"] * norm_params(width=h, norm=nm)
    dense_mlp = mlp_params(h=h, f=spec["ffn_hidden_size"], num_linears=spec["num_mlp_linears"],
                           bias=spec["mlp_bias"])
    n_moe = len(spec["moe_layers"])
    n_dense = L - n_moe
    moe = moe_params(spec) if n_moe else {"routed_experts": 0, "one_expert": 0, "shared_experts": 0,
                                          "router": 0}
    moe_layer = moe["routed_experts"] + moe["shared_experts"] + moe["router"]
    out = {
        "embedding_params": V * p,
        "position_embedding_params": spec["position_embedding_rows"] * h,
        "embedding_norm_params": norm_params(width=h, norm=nm) if spec["embedding_norm"] else 0,
        "embedding_projection_params": 2 * p * h if p != h else 0,
        "attention_params": L * attn,
        "mlp_params": n_dense * dense_mlp,
        "routed_expert_params": n_moe * moe["routed_experts"],
        "shared_expert_params": n_moe * moe["shared_experts"],
        "router_params": n_moe * moe["router"],
        "layer_norm_params": L * norms,
        "final_norm_params": norm_params(width=h, norm=nm) if spec["final_norm"] else 0,
        "output_head_params": 0 if spec["tied_embeddings"] else V * p,
    }
    total = sum(out.values())
    inactive = n_moe * (spec["num_experts"] - spec["topk"]) * moe["one_expert"]
    emb = out["embedding_params"] + out["position_embedding_params"] + out["output_head_params"]
    out.update({
        "per_layer": {"attention": attn, "norms": norms, "dense_mlp": dense_mlp,
                      "moe_routed_experts": moe["routed_experts"], "moe_one_expert": moe["one_expert"],
                      "moe_shared_experts": moe["shared_experts"], "moe_router": moe["router"],
                      "dense_layer_total": attn + norms + dense_mlp,
                      "moe_layer_total": attn + norms + moe_layer if n_moe else 0},
        "num_dense_layers": n_dense, "num_moe_layers": n_moe,
        "total_params": total, "non_embedding_params": total - emb,
        "active_params": total - inactive, "active_non_embedding_params": total - inactive - emb,
    })
    return out

# === shared model spec: end ===


def human_count(n):
    """12345678 -> '12.35 M' (decimal: K=1e3, M=1e6, B=1e9, T=1e12)."""
    for div, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n}"


def format_report(res):
    """Aligned human-readable table of the breakdown returned by main."""
    spec, total = res["model"], res["total_params"]
    rows = [("Token embedding", res["embedding_params"]),
            ("Position embedding (learned)", res["position_embedding_params"]),
            ("Embedding norm", res["embedding_norm_params"]),
            ("Embedding projections (in/out)", res["embedding_projection_params"]),
            (f"Attention ({spec['num_layers']} layers)", res["attention_params"]),
            (f"Dense MLP ({res['num_dense_layers']} layers)", res["mlp_params"]),
            (f"Routed experts ({res['num_moe_layers']} layers x {spec['num_experts']})",
             res["routed_expert_params"]),
            ("Shared experts", res["shared_expert_params"]),
            ("Routers", res["router_params"]),
            ("Layer norms", res["layer_norm_params"]),
            ("Final norm", res["final_norm_params"]),
            ("Output head" + (" (tied: counted in embedding)" if spec["tied_embeddings"] else ""),
             res["output_head_params"])]
    lines = [f"{'component':<44}{'params':>18}{'':>10}{'% total':>9}"]
    for name, n in rows:
        if n or name.startswith(("Token", "Attention", "Output")):
            lines.append(f"{name:<44}{n:>18,}{human_count(n):>10}{100 * n / total:>8.2f}%")
    pl = res["per_layer"]
    lines.append("per layer: attention {:,}, norms {:,}".format(pl["attention"], pl["norms"])
                 + (", dense MLP {:,}".format(pl["dense_mlp"]) if res["num_dense_layers"] else "")
                 + (", one expert {:,}".format(pl["moe_one_expert"]) if res["num_moe_layers"] else ""))
    lines.append("-" * 81)
    lines.append(f"{'Total':<44}{total:>18,}{human_count(total):>10}")
    lines.append(f"{'Non-embedding':<44}{res['non_embedding_params']:>18,}"
                 f"{human_count(res['non_embedding_params']):>10}")
    if res["num_moe_layers"]:
        lines.append(f"{'Active per token (top-%d of %d)' % (spec['topk'], spec['num_experts']):<44}"
                     f"{res['active_params']:>18,}{human_count(res['active_params']):>10}")
    lines.append("Convention: exact weight count as Hugging Face allocates it, tied weights once; "
                 "non-embedding excludes token/position embeddings and an untied head; active = "
                 "dense weights + shared experts + router + top-k routed experts.")
    return "\n".join(lines)


def build_parser():
    parser = OneLineErrorParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_args(parser)
    parser.add_argument("--sequence-length", "-s", type=int, default=2048,
                        help="rows of a learned position table when no config or "
                        "--max-position-embeddings says (cookbook flag; default 2048)")
    parser.add_argument("--json", action="store_true", help="print the result dict as JSON")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.hf_model_name_or_path == "":  # resolve_model_spec would read '' as "no config"
        parser.error("--hf_model_name_or_path is empty: give a folder with config.json, a "
                     "config.json path or a hub id")
    if args.sequence_length <= 0:
        parser.error(f"--sequence-length must be positive, got {args.sequence_length}")
    try:
        spec, notes = resolve_model_spec(args)
    except ValueError as exc:
        parser.error(str(exc))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    res = {"model": spec, **param_breakdown(spec),
           "convention": "exact weight count, tied weights once; non-embedding excludes token and "
                         "position embeddings and an untied output head; active counts top-k routed "
                         "experts plus all dense weights, shared experts and routers"}
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(format_report(res))
    return res


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:  # output piped into `head` or a pager that quit early
        sys.stdout = None
        sys.exit(141)
