#!/usr/bin/env python3
"""Per-GPU memory for training and inference of a decoder-only transformer, on the most-loaded rank.

Training: weights, gradients and optimizer states (mixed precision, optimizer, ZeRO/FSDP stage,
tensor/pipeline/expert/context parallel sharding), activations after Korthikanti et al. 2022
(recompute mode, sequence parallelism, flash attention, dropout, GQA, SwiGLU, MoE, 1F1B and
interleaved pipelines, logits on the last stage), ZeRO buffers, LoRA/QLoRA fine-tuning.
Inference (--infer): weights at any bit width, KV cache (MHA/GQA/MQA/MLA, sliding windows), the
activation working set of one forward. With --gpu or --gpu-memory-gib: fits or not, headroom,
and the largest micro-batch (training) or batch and context (inference) that fit.

Symbols: b micro-batch (per GPU), s sequence, h hidden, a heads, kv kv heads, d head dim, f MLP
width, L layers, V vocab, E experts, k top-k, tp pp dp ep cp parallel degrees, v virtual stages.
dp = gpus / (tp*pp*cp); ZeRO shards non-expert states over dp*cp (those ranks hold the same
weights, as Megatron's distributed optimizer does) and expert states over the expert-data-parallel
group gpus / (pp*etp*ep).

Assumptions (each printed with the result):
  * Mixed precision: weights at --low-prec-bytes-per-val (2), gradients at --bytes-per-grad-ele
    (4, Megatron's fp32 main grads), optimizer = fp32 master copy + states (Adam: 4+4+4 = 12 B).
  * Activations are stored at the low-precision width; dropout masks 1 byte; logits fp32 (4 B).
    Defaults: --flash-attention ON (no s^2 scores stored), --no-dropout (Llama/NeoX/Pythia train
    without dropout). Korthikanti's setup is --no-flash-attention --dropout.
  * --recompute full (cookbook -ca) stores each layer's input and adds one layer's recompute
    working set; selective drops the attention-score terms (Korthikanti sec. 5).
  * 1F1B: stage i holds min(pp - i, m) micro-batches in flight (m = global batch / (b*dp));
    interleaved (v>1): stage 0 holds pp + (pp-1)/v stage-equivalents (Korthikanti sec. 4.2.3).
  * Pipeline split: L/(pp*v) layers per model chunk, or Megatron-LM's uneven split
    (--decoder-first/last-pipeline-num-layers, --account-for-embedding/loss-in-pipeline-split),
    checked by Megatron's rules; every stage is computed and the heaviest one reported. With v>1
    and a chunk one layer short, the in-flight count uses the stage's mean chunk.
  * MoE: balanced routing; routed-expert tokens are not split by tensor parallelism.
  * Framework allowance --framework-mem-gib (default 1.0 GiB: CUDA context, cuBLAS workspace,
    NCCL buffers) plus --misc-mem-gib (cookbook, default 0). Allocator fragmentation and temporary
    gradient-of-activation buffers are not modelled.

Examples:
  python calc_transformer_mem.py --num-layers=32 --sequence-length=2048 --num-attention-heads=32 --hidden-size=4096 --batch-size-per-gpu=8 --checkpoint-activations --zero-stage=1 --partition-activations --pipeline-parallel-size=1 --tensor-parallel-size=2 --num-gpus=128
  python calc_transformer_mem.py -l 96 -hs 12288 -a 96 -s 2048 -b 1 -tp 8 -pp 8 --virtual-pipeline-size 3 --num-gpus 64 --global-batch-size 64 --zero-stage 0 --recompute selective --sequence-parallel --no-flash-attention --dropout
  python calc_transformer_mem.py --hf_model_name_or_path path/to/Llama-3-8B --infer -s 8192 -o 1024 -b 16 --gpu h100
  python calc_transformer_mem.py --hf_model_name_or_path path/to/Llama-3-8B --finetune qlora --lora-rank 16 -s 4096 -ca --gpu-memory-gib 24
  python calc_transformer_mem.py --hf_model_name_or_path path/to/DeepSeek-V2-Lite --infer -s 32768 -b 8 --json

References:
  Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
    Table 2 and sec. 4-5 (activation bytes per layer; pipeline in-flight micro-batches).
  Rajbhandari et al. 2019, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
    sec. 3.1 and 5 (K = 12 for mixed-precision Adam; P_os, P_os+g, P_os+g+p), Table 1.
  Dettmers et al. 2023, "QLoRA" sec. 3 (NF4, double quantization: 0.127 bits/param of constants).
  DeepSeek-AI 2024, "DeepSeek-V2" sec. 2.1.3 (MLA caches (d_c + d_h^R) per token per layer).
  Megatron-LM megatron/training/theoretical_memory_usage.py (rank and stage conventions);
    megatron/core/transformer/transformer_block.py get_num_layers_to_build (uneven stages).
  Llama Team 2024, "The Llama 3 Herd of Models" sec. 3.3.2 (one layer fewer on each edge stage).
"""

import argparse
import json
import math
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


GIB = 2 ** 30

# Optimizer state bytes per trainable parameter, EXCLUDING the fp32 master copy that mixed
# precision adds (it is added separately, at --high-prec-bytes-per-val).
OPTIMIZER_STATE_BYTES = {
    "adam": 8,           # fp32 first and second moments (Kingma & Ba 2015): 4 + 4
    "adamw": 8,          # same states as Adam (Loshchilov & Hutter 2019)
    "adam8bit": 2,       # bitsandbytes 8-bit moments: 1 + 1 (block constants ~0.4%, ignored)
    "adamw8bit": 2,
    "sgd": 4,            # SGD with momentum: one fp32 buffer
    "sgd-nomomentum": 0,
    "lion": 4,           # Lion keeps one momentum buffer (Chen et al. 2023)
    "adafactor": 0,      # factored second moment: O(rows + cols) per matrix, ~0 per parameter
}

FSDP_TO_ZERO = {"no_shard": 0, "shard_grad_op": 2, "full_shard": 3, "hybrid_shard": 3}

LORA_MATRICES = ("q", "k", "v", "o", "gate", "up", "down")

QLORA_NF4_DQ_BITS = 4 + 8 / 64 + 32 / (64 * 256)  # Dettmers et al. 2023 sec. 3: 4.127 bits


# ------------------------------------------------------------------------------------------------
# Model states
# ------------------------------------------------------------------------------------------------

def optimizer_bytes_per_param(*, optimizer, mixed_precision, master_bytes):
    """Optimizer bytes per trainable parameter: states (table above) plus, in mixed precision,
    the fp32 master weights (ZeRO paper sec. 3.1: Adam's K = 4 + 4 + 4 = 12)."""
    return OPTIMIZER_STATE_BYTES[optimizer] + (master_bytes if mixed_precision else 0)


def zero_model_state_bytes(*, params, weight_bytes, grad_bytes, optimizer_bytes, zero_stage,
                           shard_degree):
    """Per-GPU (weights, gradients, optimizer) bytes for `params` parameters replicated over
    `shard_degree` ranks under ZeRO stage 0-3 (Rajbhandari et al. 2019, sec. 5.1-5.3): stage 1
    shards optimizer states, 2 also gradients, 3 also weights."""
    n = shard_degree
    return (params * weight_bytes / (n if zero_stage >= 3 else 1),
            params * grad_bytes / (n if zero_stage >= 2 else 1),
            params * optimizer_bytes / (n if zero_stage >= 1 else 1))


def _kv_heads_per_rank(kv, tp):
    """kv heads one tensor-parallel rank holds: kv/tp, or 1 replicated head when kv < tp
    (Megatron-LM and vLLM replicate kv heads when there are fewer than tp)."""
    return kv // tp if kv >= tp else 1


def layer_params_per_rank(spec, *, tp, etp, ep, moe_layer):
    """One layer's parameters on one rank, split into (non_expert, expert). Megatron TP layout:
    column-parallel q/k/v and MLP input matrices (weights and biases /tp), row-parallel output
    matrices (weights /tp, bias replicated), norms and routers replicated; MLA down-projections
    replicated; routed experts E/ep per rank, each split over etp."""
    h, a, kv, d, nm = (spec[k] for k in ("hidden_size", "num_attention_heads", "num_kv_heads",
                                        "head_dim", "norm"))
    qb, ob, mb = spec["qkv_bias"], spec["attn_out_bias"], spec["mlp_bias"]
    nl = spec["num_mlp_linears"]
    at = a // tp
    norms = spec["norms_per_layer"] * norm_params(width=h, norm=nm)
    if spec.get("kv_lora_rank"):
        r_q, r_kv = spec["q_lora_rank"], spec["kv_lora_rank"]
        dn, dr, dv = spec["qk_nope_head_dim"], spec["qk_rope_head_dim"], spec["v_head_dim"]
        qn = "rmsnorm" if nm == "layernorm" else nm
        q = (h * r_q + qb * r_q + norm_params(width=r_q, norm=qn) + r_q * at * d) if r_q else h * at * d
        attn = (q + h * (r_kv + dr) + qb * (r_kv + dr) + norm_params(width=r_kv, norm=qn)
                + r_kv * at * (dn + dv) + at * dv * h + ob * h)
    else:
        kvt = _kv_heads_per_rank(kv, tp)
        qk = {"none": 0, "head": 2 * d, "full": (at + kvt) * d}[spec["qk_norm"]]
        attn = (h * (at + 2 * kvt) * d + qb * (at + 2 * kvt) * d + at * d * h + ob * h
                + norm_params(width=qk, norm="rmsnorm" if nm == "layernorm" else nm))
    if not moe_layer:
        f = spec["ffn_hidden_size"]
        mlp = nl * h * f // tp + (mb and (nl - 1) * f // tp + h)
        return attn + norms + mlp, 0
    fe, fsh, E = spec["moe_ffn_hidden_size"], spec["shared_expert_ffn_hidden_size"], spec["num_experts"]
    expert = (E // ep) * (nl * h * fe // etp + (mb and (nl - 1) * fe // etp + h))
    shared = (nl * h * fsh // tp + (mb and (nl - 1) * fsh // tp + h)) if fsh else 0
    shared += h * bool(spec["shared_expert_gate"])
    router = h * E + E * bool(spec["router_bias"])
    return attn + norms + shared + router, expert


def pipeline_chunk_layers(*, num_layers, pp, vp, first=None, last=None, embedding_in_split=False,
                          loss_in_split=False):
    """Transformer layers in each model chunk, counts[rank][chunk], as Megatron-LM builds them
    (megatron/core/transformer/transformer_block.py get_num_layers_to_build): even, L/(pp*vp);
    with --decoder-first/last-pipeline-num-layers the first/last rank holds that many (over its vp
    chunks) and the other ranks split the rest evenly; --account-for-embedding/loss-in-pipeline-split
    count the embedding/loss as one layer of L+1 (+2), taken from the first/last chunk. Validated
    by resolve() first: every count here divides exactly."""
    if first is not None or last is not None:
        mid_stages = pp - (first is not None) - (last is not None)
        per_mid = (num_layers - (first or 0) - (last or 0)) // mid_stages if mid_stages else 0
        per_rank = [per_mid] * pp
        if first is not None:
            per_rank[0] = first
        if last is not None:
            per_rank[-1] = last
        return [[n // vp] * vp for n in per_rank]
    k = (num_layers + embedding_in_split + loss_in_split) // (pp * vp)
    counts = [[k] * vp for _ in range(pp)]
    counts[0][0] -= int(embedding_in_split)
    counts[-1][-1] -= int(loss_in_split)
    return counts


def stage_layers(*, num_layers, pp, vp, stage, chunk_layers=None):
    """Layer indices held by pipeline stage `stage`: model chunk c of rank i is virtual stage
    c*pp + i and virtual stages hold consecutive layers (Narayanan et al. 2021, sec. 2.2.2; Megatron
    get_transformer_layer_offset). chunk_layers: counts[rank][chunk] (default: the even split)."""
    if chunk_layers is None:
        chunk_layers = pipeline_chunk_layers(num_layers=num_layers, pp=pp, vp=vp)
    out, start = [], 0
    for c in range(vp):
        for i in range(pp):
            n = chunk_layers[i][c]
            if i == stage:
                out += range(start, start + n)
            start += n
    return out


def suggest_pipeline_split(*, num_layers, pp, vp):
    """(first, middle, last) layers for --decoder-first/last-pipeline-num-layers that Megatron-LM
    accepts (each a positive multiple of vp, middle stages equal) with the fewest layers on the
    fullest stage; ties go to fuller middle stages, and the two edges share what is left (the
    first holds the embedding and the most in-flight micro-batches, the last the head and logits;
    the Llama 3 paper, sec. 3.3.2, takes one layer from each edge). None if no split fits."""
    best = None
    mids = range(vp, num_layers // (pp - 2) + 1, vp) if pp > 2 else [0]
    for q in mids:
        rest = num_layers - (pp - 2) * q
        if rest < 2 * vp or rest % vp:
            continue
        first = rest // (2 * vp) * vp
        score = (max(q, rest - first), -q)
        if best is None or score < best[0]:
            best = (score, (first, q, rest - first))
    return best and best[1]


def stage_params_per_rank(spec, *, tp, pp, vp, etp, ep, stage, chunk_layers=None):
    """(non_expert, expert, embedding_and_head) parameters on one rank of pipeline stage `stage`.
    Stage 0 holds the token embedding (/tp), position table, embedding norm and projections; the
    last stage the final norm and the head (/tp) -- with tied embeddings and pp > 1 a second copy
    of the embedding, as Megatron-LM keeps it. The third number is included in the first."""
    V, h, p = spec["vocab_size"], spec["hidden_size"], spec["word_embed_proj_dim"]
    moe = set(spec["moe_layers"])
    dense = expert = 0
    for i in stage_layers(num_layers=spec["num_layers"], pp=pp, vp=vp, stage=stage,
                          chunk_layers=chunk_layers):
        ne, ex = layer_params_per_rank(spec, tp=tp, etp=etp, ep=ep, moe_layer=i in moe)
        dense, expert = dense + ne, expert + ex
    emb = 0
    if stage == 0:
        emb += V * p // tp + spec["position_embedding_rows"] * h + (2 * p * h if p != h else 0)
        emb += norm_params(width=h, norm=spec["norm"]) if spec["embedding_norm"] else 0
    if stage == pp - 1:
        emb += norm_params(width=h, norm=spec["norm"]) if spec["final_norm"] else 0
        if not spec["tied_embeddings"] or pp > 1:
            emb += V * p // tp
    return dense + emb, expert, emb


def lora_params_per_layer(spec, *, rank, targets, tp, moe_layer):
    """LoRA adapter parameters in one layer on one tp rank: r * (d_in + d_out) per adapted matrix
    (Hu et al. 2021, sec. 4.1). Attention q/k/v/o and dense-MLP gate/up/down; routed experts are
    not adapted. Split over tp like the matrix they adapt (an approximation for r)."""
    h, a, kv, d = (spec[k] for k in ("hidden_size", "num_attention_heads", "num_kv_heads", "head_dim"))
    dv = spec.get("v_head_dim") or d
    f = spec["ffn_hidden_size"] if not moe_layer else spec["shared_expert_ffn_hidden_size"]
    shapes = {"q": (h, a * d), "k": (h, kv * d), "v": (h, kv * dv), "o": (a * dv, h),
              "gate": (h, f) if spec["num_mlp_linears"] == 3 else None, "up": (h, f), "down": (f, h)}
    n = 0
    for t in targets:
        shp = shapes[t]
        if shp and shp[0] and shp[1]:
            n += rank * (shp[0] + shp[1])
    return n // tp


# ------------------------------------------------------------------------------------------------
# Activations (Korthikanti et al. 2022)
# ------------------------------------------------------------------------------------------------

def layer_activation_bytes(*, s, b, h, a, kv, d, d_v, f, num_linears, tp, sp, flash, dropout,
                           act_bytes, moe=None, mla=None):
    """Bytes one layer stores for backward for one micro-batch on one tp rank, with no recompute,
    split as {"outside", "inside", "scores"} (Korthikanti et al. 2022, sec. 4.1, Table 2):
    outside = 2 norm inputs + attention and MLP inputs + 2 dropout masks (replicated under TP,
    /tp with sequence parallelism) -- 10 sbh in fp16; inside = Q, K, V, attention output, MLP
    internals (/tp) -- 24 sbh/t for MHA and f = 4h; scores = softmax output, its dropout mask and
    output, 5 a s^2 b / t (2 a s^2 b / t without dropout; none with flash attention, which stores
    an fp32 log-sum-exp per row instead). GQA stores K and V at kv heads; a gated MLP stores its
    fused gate|up output (2 f) and the product (f); MoE: see moe_activation_bytes."""
    B = act_bytes
    sb = s * b
    at, kvt = a // tp, _kv_heads_per_rank(kv, tp)
    mask = 1 if dropout else 0
    outside = sb * h * (4 * B + 2 * mask)
    if mla:
        outside += B * sb * (mla["q_lora_rank"] + mla["kv_lora_rank"] + mla["qk_rope_head_dim"])
        kvt = at
    inside = B * sb * (at * d + kvt * d + kvt * d_v + at * d_v)
    if flash:
        scores = 4 * sb * at
    else:
        scores = at * s * s * b * (B + (mask + B if dropout else 0))
    if moe is None:
        inside += B * sb * f * (2 if num_linears == 2 else 3) // tp
    else:
        m = moe_activation_bytes(s=s, b=b, h=h, num_linears=num_linears, tp=tp, act_bytes=B, **moe)
        outside += m["replicated"]
        inside += m["sharded"]
    return {"outside": outside / (tp if sp else 1), "inside": inside, "scores": scores}


def moe_activation_bytes(*, s, b, h, num_linears, tp, act_bytes, num_experts, topk, f_expert,
                         f_shared, etp):
    """A MoE block's stored bytes per micro-batch under balanced routing: fp32 router logits and
    probabilities (2 x 4 s b E), each token's k copies dispatched to experts and their k outputs
    kept for the weighted combine (2 k s b h, not split by tp), expert internals as a dense MLP of
    width f_e for k s b tokens (/etp), and the shared experts as one MLP (/tp)."""
    B, sb = act_bytes, s * b
    per_f = 2 if num_linears == 2 else 3
    replicated = 8 * sb * num_experts + 2 * topk * B * sb * h
    sharded = B * topk * sb * f_expert * per_f // etp + B * sb * f_shared * per_f // tp
    return {"replicated": replicated, "sharded": sharded}


def stored_layer_bytes(parts, *, recompute, sp_or_pa, tp, s, b, h, act_bytes):
    """What one layer keeps per micro-batch under a recompute mode (Korthikanti Table 2): none
    keeps everything; selective drops the score terms (recomputed in backward, sec. 5); full keeps
    only the layer input, 2 sbh (/tp with sequence parallelism or partitioned activations)."""
    if recompute == "full":
        return act_bytes * s * b * h / (tp if sp_or_pa else 1)
    if recompute == "selective":
        return parts["outside"] + parts["inside"]
    return parts["outside"] + parts["inside"] + parts["scores"]


def in_flight_microbatches(*, pp, vp, stage, num_microbatches):
    """Micro-batches' worth of one stage's activations held at the peak: 1F1B keeps pp - stage
    (Narayanan et al. 2021 sec. 2.2.1); the interleaved schedule keeps (2 (pp-stage-1) + (vp-1) pp
    + 1) chunks of 1/vp stage, i.e. pp + (pp-1)/vp on stage 0 (Korthikanti sec. 4.2.3); both are
    capped by the micro-batches there are."""
    if vp == 1:
        return min(pp - stage, num_microbatches)
    return min((2 * (pp - stage - 1) + (vp - 1) * pp + 1) / vp, num_microbatches)


def output_layer_activation_bytes(*, s, b, h, V, tp, sp, act_bytes):
    """Last stage, per micro-batch (Korthikanti sec. 4.3): final norm input and head input (2 sbh
    each, /tp with sequence parallelism) and fp32 logits kept for the cross-entropy, 4 s b V / tp."""
    return 2 * act_bytes * s * b * h / (tp if sp else 1) + 4 * s * b * V / tp


# ------------------------------------------------------------------------------------------------
# Inference
# ------------------------------------------------------------------------------------------------

def kv_cache_bytes_per_token_per_layer(*, kv, d, d_v, tp, kv_bytes, mla=None, mla_cache="latent"):
    """KV cache bytes per token per layer on one tp rank. MHA/GQA/MQA: K and V, kv heads each
    (kv/tp per rank, one replicated head when kv < tp): (d + d_v) x heads x bytes. MLA latent:
    (kv_lora_rank + qk_rope_head_dim) x bytes, the same on every tp rank (DeepSeek-V2 sec.
    2.1.3; vLLM's MLA cache). MLA expanded: a/tp heads of K (d) and V (d_v), as HF's cache stores."""
    if mla and mla_cache == "latent":
        return (mla["kv_lora_rank"] + mla["qk_rope_head_dim"]) * kv_bytes
    heads = kv // tp if mla else _kv_heads_per_rank(kv, tp)
    return heads * (d + d_v) * kv_bytes


def kv_cache_bytes(*, per_token_per_layer, layers_tokens):
    """Total KV cache: sum over this rank's layers of (tokens cached in that layer) x bytes per
    token per layer; a sliding-window layer caches at most its window per sequence."""
    return sum(per_token_per_layer * t for t in layers_tokens)


def inference_activation_bytes(*, s, b, h, a, kv, d, f, num_linears, V, tp, flash, act_bytes):
    """Working set of one prefill forward over b x s tokens on one tp rank: the residual stream
    and normed input (2 h), plus the larger of attention (q, k, v and, without flash attention,
    a/tp x s scores per token) and the MLP intermediate (f or 2f + f gated, /tp), plus fp32 logits
    for the last position of each sequence (4 b V / tp). An estimate: one layer's peak."""
    at, kvt = a // tp, _kv_heads_per_rank(kv, tp)
    attn = (at + 2 * kvt) * d + (0 if flash else at * s)
    mlp = f * (2 if num_linears == 2 else 3) // tp
    return act_bytes * s * b * (2 * h + max(attn, mlp)) + 4 * b * V / tp


# ------------------------------------------------------------------------------------------------
# Config helpers
# ------------------------------------------------------------------------------------------------

def sliding_window_from_config(cfg, num_layers):
    """(window, layer indices using it) from a HF config: `layer_types` when given; Gemma 2 slides
    on even layers (Gemma2DecoderLayer is_sliding = not layer_idx % 2); the Qwen families only with
    use_sliding_window (HF's default is off), Qwen2/Qwen3 on layers i >= max_window_layers and
    Qwen2-MoE on even i < max_window_layers (their configs' layer_types rules); other families
    (and Qwen3-MoE) with sliding_window set slide on every layer."""
    if isinstance(cfg.get("text_config"), dict) and "hidden_size" not in cfg:
        cfg = cfg["text_config"]
    w, mt = cfg.get("sliding_window"), str(cfg.get("model_type", ""))
    if not w or not cfg.get("use_sliding_window", not mt.startswith("qwen")):
        return None, []
    if isinstance(cfg.get("layer_types"), list):
        return w, [i for i, t in enumerate(cfg["layer_types"]) if t == "sliding_attention"]
    if mt == "gemma2":
        return w, [i for i in range(num_layers) if i % 2 == 0]
    mwl = cfg.get("max_window_layers")
    if mt in ("qwen2", "qwen3") and mwl is not None:
        return w, [i for i in range(num_layers) if i >= mwl]
    if mt == "qwen2_moe" and mwl is not None:
        return w, [i for i in range(num_layers) if i % 2 == 0 and i < mwl]
    return w, list(range(num_layers))


# ------------------------------------------------------------------------------------------------
# Putting it together
# ------------------------------------------------------------------------------------------------

def _mla(spec):
    """MLA ranks of a spec (DeepSeek-V2 sec. 2.1), or None for ordinary attention."""
    if not spec.get("kv_lora_rank"):
        return None
    return {k: spec[k] or 0 for k in ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim")}


def training_memory(spec, c, b):
    """Per-stage training memory for micro-batch b; returns the heaviest stage's breakdown and the
    list of per-stage totals. `c` is the resolved configuration dict built in main. Sums the
    formulas above: model states after ZeRO (Rajbhandari et al. 2020, sec. 5) sharded as in
    Megatron-LM (Narayanan et al. 2021), activations after Korthikanti et al. 2022, Table 2."""
    tp, pp, vp, cp, ep, etp = (c[k] for k in ("tp", "pp", "vp", "cp", "ep", "etp"))
    s = c["sequence_length"] // cp
    h, a, L = spec["hidden_size"], spec["num_attention_heads"], spec["num_layers"]
    d = spec["head_dim"]
    d_v = spec.get("v_head_dim") or d
    ab = c["act_bytes"]
    moe_set = set(spec["moe_layers"])
    m = c["num_microbatches"] if c["num_microbatches"] else pp
    common = dict(s=s, b=b, h=h, a=a, kv=spec["num_kv_heads"], d=d, d_v=d_v,
                  num_linears=spec["num_mlp_linears"], tp=tp, sp=c["sequence_parallel"],
                  flash=c["flash_attention"], dropout=c["dropout"], act_bytes=ab, mla=_mla(spec))
    dense_parts = layer_activation_bytes(f=spec["ffn_hidden_size"], **common)
    moe_parts = None
    if moe_set:
        moe_parts = layer_activation_bytes(
            f=0, moe=dict(num_experts=spec["num_experts"], topk=spec["topk"],
                          f_expert=spec["moe_ffn_hidden_size"],
                          f_shared=spec["shared_expert_ffn_hidden_size"], etp=etp), **common)
    sp_or_pa = c["sequence_parallel"] or c["partition_activations"]
    stages = []
    chunks = c["chunk_layers"]
    for st in range(pp):
        layers = stage_layers(num_layers=L, pp=pp, vp=vp, stage=st, chunk_layers=chunks)
        ne, ex, emb = stage_params_per_rank(spec, tp=tp, pp=pp, vp=vp, etp=etp, ep=ep, stage=st,
                                            chunk_layers=chunks)
        lora = c["lora"]
        if lora:  # frozen base: quantized (QLoRA) or low-precision linear weights, no grads/states
            base_w = (ne + ex - emb) * lora["base_bits"] / 8 + emb * c["weight_bytes"]
            ad = sum(lora_params_per_layer(spec, rank=lora["rank"], targets=lora["targets"], tp=tp,
                                           moe_layer=i in moe_set) for i in layers)
            w, g, o = zero_model_state_bytes(params=ad, weight_bytes=lora["adapter_bytes"],
                                             grad_bytes=lora["adapter_bytes"],
                                             optimizer_bytes=OPTIMIZER_STATE_BYTES[c["optimizer"]],
                                             zero_stage=c["zero_stage"], shard_degree=c["zero_shard"])
            w += base_w / (c["zero_shard"] if c["zero_stage"] >= 3 else 1)
            trainable = ad
        else:
            w1, g1, o1 = zero_model_state_bytes(params=ne, weight_bytes=c["weight_bytes"],
                                                grad_bytes=c["grad_bytes"], optimizer_bytes=c["opt_bytes"],
                                                zero_stage=c["zero_stage"], shard_degree=c["zero_shard"])
            w2, g2, o2 = zero_model_state_bytes(params=ex, weight_bytes=c["weight_bytes"],
                                                grad_bytes=c["grad_bytes"], optimizer_bytes=c["opt_bytes"],
                                                zero_stage=c["zero_stage"], shard_degree=c["expert_zero_shard"])
            w, g, o = w1 + w2, g1 + g2, o1 + o2
            trainable = ne + ex
        buffers = 0
        if c["zero_stage"] >= 1 and c["zero_shard"] > 1:
            buffers += c["zbs"] * c["weight_bytes"]
        if c["zero_stage"] == 3 and c["zero_shard"] > 1:
            buffers += min(c["zmlp"], ne + ex) * c["weight_bytes"]
        per_mb = 0
        for i in layers:
            parts = moe_parts if i in moe_set else dense_parts
            per_mb += stored_layer_bytes(parts, recompute=c["recompute"], sp_or_pa=sp_or_pa, tp=tp,
                                         s=s, b=b, h=h, act_bytes=ab)
        emb_mb = 0
        if st == 0 and c["dropout"]:  # embedding dropout mask, 1 byte (Korthikanti sec. 4.3)
            emb_mb = s * b * h / (tp if c["sequence_parallel"] else 1)
        flight = in_flight_microbatches(pp=pp, vp=vp, stage=st, num_microbatches=m)
        stored = (per_mb + emb_mb) * flight
        worst = moe_parts if moe_set else dense_parts
        if c["recompute"] == "full":  # one layer rebuilt during its backward
            working = worst["outside"] + worst["inside"] + worst["scores"]
        elif c["recompute"] == "selective":
            working = worst["scores"]
        else:
            working = 0
        logits = 0
        if st == pp - 1:
            logits = output_layer_activation_bytes(s=s, b=b, h=h, V=spec["vocab_size"], tp=tp,
                                                   sp=c["sequence_parallel"], act_bytes=ab)
        act = stored + working + logits
        total = w + g + o + buffers + act + c["overhead_bytes"]
        stages.append({"stage": st, "stage_layers": len(layers), "params_per_gpu": ne + ex,
                       "trainable_params_per_gpu": trainable,
                       "expert_params_per_gpu": ex, "weights_bytes": w, "gradients_bytes": g,
                       "optimizer_bytes": o, "zero_buffers_bytes": buffers,
                       "activations_stored_bytes": stored,
                       "activations_layers_bytes": per_mb * flight,
                       "activations_embedding_bytes": emb_mb * flight,
                       "activations_recompute_bytes": working,
                       "activations_logits_bytes": logits, "activations_bytes": act,
                       "in_flight_microbatches": flight, "total_bytes": total})
    worst_stage = max(stages, key=lambda x: x["total_bytes"])
    return worst_stage, stages


def inference_memory(spec, c, b, ctx):
    """Per-GPU inference memory for batch b and context ctx tokens (prompt + output) on the
    heaviest pipeline stage: weights at their bit width, the KV cache (kv_cache_bytes_per_token_
    per_layer; sliding-window layers capped at the window, as HF's sliding caches do) and one
    prefill forward's working set (inference_activation_bytes: one layer's peak)."""
    tp, pp = c["tp"], c["pp"]
    h, a, L = spec["hidden_size"], spec["num_attention_heads"], spec["num_layers"]
    d = spec["head_dim"]
    d_v = spec.get("v_head_dim") or d
    per_tok = kv_cache_bytes_per_token_per_layer(kv=spec["num_kv_heads"], d=d, d_v=d_v, tp=tp,
                                                 kv_bytes=c["kv_bytes"], mla=_mla(spec),
                                                 mla_cache=c["mla_cache"])
    win, win_layers = c["sliding_window"], set(c["sliding_layers"])
    f = spec["ffn_hidden_size"]
    if spec["moe_layers"]:
        f = max(f, spec["topk"] * spec["moe_ffn_hidden_size"] + spec["shared_expert_ffn_hidden_size"])
    prompt = min(c["sequence_length"], ctx)
    if c["prefill_chunk"]:  # chunked prefill: one forward sees at most this many tokens
        b_eff = max(1, min(b, c["prefill_chunk"] // prompt)) if c["prefill_chunk"] >= prompt else 1
        prompt = min(prompt, c["prefill_chunk"])
    else:
        b_eff = b
    act = inference_activation_bytes(s=prompt, b=b_eff, h=h, a=a, kv=spec["num_kv_heads"], d=d, f=f,
                                     num_linears=spec["num_mlp_linears"], V=spec["vocab_size"],
                                     tp=tp, flash=c["flash_attention"], act_bytes=c["act_bytes"])
    chunks = [[sum(row)] for row in c["chunk_layers"]]  # no interleaving: one chunk per rank
    stages = []
    for st in range(pp):
        layers = stage_layers(num_layers=L, pp=pp, vp=1, stage=st, chunk_layers=chunks)
        ne, ex, emb = stage_params_per_rank(spec, tp=tp, pp=pp, vp=1, etp=c["etp"], ep=c["ep"],
                                            stage=st, chunk_layers=chunks)
        w = (ne + ex - emb) * c["weight_bits"] / 8 + emb * c["weight_bytes"]
        toks = [b * (min(ctx, win) if (win and i in win_layers) else ctx) for i in layers]
        kvc = kv_cache_bytes(per_token_per_layer=per_tok, layers_tokens=toks)
        total = w + kvc + act + c["overhead_bytes"]
        stages.append({"stage": st, "stage_layers": len(layers), "params_per_gpu": ne + ex,
                       "weights_bytes": w,
                       "gradients_bytes": 0, "optimizer_bytes": 0, "zero_buffers_bytes": 0,
                       "kv_cache_bytes": kvc, "activations_bytes": act, "total_bytes": total})
    return max(stages, key=lambda x: x["total_bytes"]), stages, per_tok


def _largest(fn, limit, hi_cap=1 << 24):
    """Largest positive integer x with fn(x) <= limit (fn increasing); 0 if none."""
    if fn(1) > limit:
        return 0
    lo, hi = 1, 2
    while hi < hi_cap and fn(hi) <= limit:
        lo, hi = hi, hi * 2
    if hi >= hi_cap and fn(hi_cap) <= limit:
        return hi_cap
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fn(mid) <= limit else (lo, mid)
    return lo


# ------------------------------------------------------------------------------------------------
# Output
# ------------------------------------------------------------------------------------------------

def format_report(res):
    """Aligned per-GPU breakdown for the heaviest stage, with totals, fit and assumptions."""
    total = res["total_bytes"]
    rows = [("Weights", res["weights_bytes"])]
    if res["mode"] == "training":
        rows += [("Gradients", res["gradients_bytes"]), ("Optimizer states", res["optimizer_bytes"]),
                 ("ZeRO buffers (all-gather bucket, live params)", res["zero_buffers_bytes"]),
                 ("Activations: stored for backward", res["activations_stored_bytes"]),
                 ("Activations: recompute working set", res["activations_recompute_bytes"]),
                 ("Activations: final norm, head input, fp32 logits", res["activations_logits_bytes"])]
    else:
        rows += [("KV cache", res["kv_cache_bytes"]), ("Activations (one forward)", res["activations_bytes"])]
    rows += [("Framework allowance + misc", res["overhead_bytes"])]
    lines = [f"Per-GPU memory, {res['mode']}, heaviest rank: pipeline stage {res['stage']} of "
             f"{res['parallelism']['pp']} ({res['parallelism_text']})",
             f"Model: {res['total_params']:,} params ({res['total_params'] / 1e9:.2f} B); "
             f"on this GPU {res['params_per_gpu']:,}",
             f"{'component':<52}{'GiB':>10}{'bytes':>20}{'% total':>9}"]
    for name, v in rows:
        lines.append(f"{name:<52}{v / GIB:>10.2f}{int(round(v)):>20,}{100 * v / total if total else 0:>8.1f}%")
    lines.append("-" * 91)
    lines.append(f"{'Total per GPU':<52}{total / GIB:>10.2f}{int(round(total)):>20,}")
    if res["parallelism"]["pp"] > 1:
        lines.append("per stage total GiB: " + ", ".join(f"{x['total_bytes'] / GIB:.2f}"
                                                      for x in res["stages"]))
        lines.append("per stage layers: " + ", ".join(str(x["stage_layers"]) for x in res["stages"]))
    if res["mode"] == "inference":
        lines.append(f"KV cache: {res['kv_cache_bytes_per_token']:,} B per token per GPU "
                     f"({res['kv_cache_bytes_per_token_per_layer']:,} per layer)")
    fit = res.get("fit")
    if fit:
        lines.append(f"GPU {fit['gpu']}: {fit['memory_bytes'] / GIB:.2f} GiB -> "
                     f"{'FITS' if fit['fits'] else 'DOES NOT FIT'}, headroom "
                     f"{fit['headroom_bytes'] / GIB:.2f} GiB")
        for k, v in fit.items():
            if k.startswith("max_"):
                lines.append(f"  {k.replace('_', ' ')}: {v}")
    for a in res["assumptions"]:
        lines.append(f"assumes: {a}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------------------

def build_parser():
    p = OneLineErrorParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_args(p)
    bo = argparse.BooleanOptionalAction
    g = p.add_argument_group("parallelism (cookbook flags first)")
    g.add_argument("--num-gpus", type=int, default=None, help="GPUs in the job (default 1)")
    g.add_argument("--tensor-parallel-size", "-tp", type=int, default=None, help="tp (default 1)")
    g.add_argument("--pipeline-parallel-size", "-pp", type=int, default=None, help="pp (default 1)")
    g.add_argument("--virtual-pipeline-size", "-vp", type=int, default=1,
                   help="interleaved schedule: model chunks per pipeline rank (default 1)")
    g.add_argument("--decoder-first-pipeline-num-layers", type=int, default=None,
                   help="Megatron-LM uneven pipeline: layers on the first stage (the stages without "
                   "a stated count share the rest evenly)")
    g.add_argument("--decoder-last-pipeline-num-layers", type=int, default=None,
                   help="Megatron-LM uneven pipeline: layers on the last stage")
    g.add_argument("--account-for-embedding-in-pipeline-split", action="store_true",
                   help="Megatron-LM: the embedding counts as one layer when splitting L+1 over "
                   "pp*vp chunks; the first chunk holds one transformer layer fewer")
    g.add_argument("--account-for-loss-in-pipeline-split", action="store_true",
                   help="Megatron-LM: the head and loss count as one layer; the last chunk holds "
                   "one transformer layer fewer")
    g.add_argument("--context-parallel-size", "-cp", type=int, default=1,
                   help="cp: the sequence split over cp ranks (ring attention; default 1)")
    g.add_argument("--expert-parallelism", "-ep", type=int, default=None,
                   help="ep: routed experts split over ep ranks (default 1)")
    g.add_argument("--expert-tensor-parallel-size", "-etp", type=int, default=None,
                   help="tensor parallelism inside each expert (default tp)")
    g.add_argument("--sequence-parallel", "-sp", action=bo, default=False,
                   help="Megatron sequence parallelism: norms/dropout activations /tp (default off)")
    g.add_argument("--partition-activations", "-pa", action="store_true",
                   help="DeepSpeed ZeRO-R: checkpointed layer inputs split over tp (with full recompute)")
    g.add_argument("--zero-stage", "-z", type=int, default=None, choices=[0, 1, 2, 3],
                   help="ZeRO stage over the dp*cp group (cookbook default 1)")
    g.add_argument("--fsdp", choices=sorted(FSDP_TO_ZERO), default=None,
                   help="FSDP sharding strategy, read as its ZeRO equivalent (no_shard 0, "
                   "shard_grad_op 2, full_shard/hybrid_shard 3)")
    g.add_argument("--zero-allgather-bucket-size", "-zbs", type=finite_float, default=None,
                   help="ZeRO all-gather bucket in elements, held at weight precision (default 5e8)")
    g.add_argument("--zero3-max-live-params", "-zmlp", type=finite_float, default=None,
                   help="ZeRO-3 parameters kept gathered at once (default 1e9)")
    t = p.add_argument_group("training")
    t.add_argument("--checkpoint-activations", "-ca", action="store_true",
                   help="full activation recomputation (same as --recompute full)")
    t.add_argument("--recompute", choices=("none", "selective", "full"), default=None,
                   help="activation recomputation (default none; -ca means full)")
    t.add_argument("--batch-size-per-gpu", "-b", type=int, default=None,
                   help="micro-batch per GPU, or the inference batch (default 1)")
    t.add_argument("--global-batch-size", "-gbs", type=int, default=None,
                   help="global batch; gives the micro-batch count m = gbs/(b*dp) (default: m = pp)")
    t.add_argument("--sequence-length", "-s", type=int, default=None,
                   help="training sequence, or the inference prompt (default 2048)")
    t.add_argument("--flash-attention", action=bo, default=True,
                   help="fused attention: no s^2 scores stored (default on)")
    t.add_argument("--dropout", action=bo, default=False,
                   help="dropout masks stored (default off; Korthikanti's setup has it on)")
    t.add_argument("--optimizer", choices=sorted(OPTIMIZER_STATE_BYTES), default="adamw",
                   help="optimizer (default adamw: 12 B/param with the fp32 master copy)")
    t.add_argument("--finetune", choices=("full", "lora", "qlora"), default="full",
                   help="full training, or LoRA/QLoRA adapters on a frozen base (default full)")
    t.add_argument("--lora-rank", type=int, default=16, help="LoRA rank r (default 16)")
    t.add_argument("--adapter-bytes-per-val", type=int, default=None,
                   help="LoRA adapter weights and grads (default 4: PEFT keeps adapters in fp32; "
                   "the QLoRA paper's code casts them to bf16: 2)")
    t.add_argument("--lora-targets", default="all-linear",
                   help="comma list of q,k,v,o,gate,up,down, or all-linear (default)")
    pr = p.add_argument_group("precision")
    pr.add_argument("--disable-mixed-precision", action="store_false", dest="is_mixed_precision",
                    help="train in high precision: no master copy, weights and activations at "
                    "--high-prec-bytes-per-val")
    pr.add_argument("--high-prec-bytes-per-val", type=int, default=None, help="default 4")
    pr.add_argument("--low-prec-bytes-per-val", type=int, default=None, help="default 2")
    pr.add_argument("--bytes-per-grad-ele", type=int, default=None, help="default 4")
    pr.add_argument("--weight-bits", type=finite_float, default=None,
                   help="bits per quantized layer weight for inference and QLoRA (default: 16 for "
                   "inference, 4.127 = NF4 with double quantization for QLoRA); embeddings, head "
                   "stay at the low-precision width")
    pr.add_argument("--kv-cache-bytes-per-val", type=finite_float, default=None,
                   help="KV cache element bytes (default: --low-prec-bytes-per-val)")
    i = p.add_argument_group("inference")
    i.add_argument("--infer", action="store_true", help="inference instead of training")
    i.add_argument("--output-tokens", "-o", type=int, default=None, help="generated tokens (default 1)")
    i.add_argument("--sliding-window", type=int, default=None,
                   help="window of sliding-window layers (default from the config; 0 turns it off)")
    i.add_argument("--prefill-chunk", type=int, default=None,
                   help="tokens one prefill forward processes (vLLM-style chunked prefill; default: "
                   "the whole batch's prompts at once)")
    i.add_argument("--mla-cache", choices=("latent", "expanded"), default="latent",
                   help="MLA cache: the compressed latent (vLLM/SGLang, DeepSeek paper) or HF's "
                   "expanded per-head K/V (default latent)")
    f = p.add_argument_group("fit and overheads")
    f.add_argument("--gpu", default=None, help="accelerator name from hardware.py (e.g. h100)")
    f.add_argument("--gpu-memory-gib", type=finite_float, default=None, help="memory per GPU in GiB")
    f.add_argument("--misc-mem-gib", type=finite_float, default=None,
                   help="extra per-GPU memory you know of (cookbook; default 0)")
    f.add_argument("--framework-mem-gib", type=finite_float, default=1.0,
                   help="CUDA context, cuBLAS workspace, NCCL buffers (default 1.0)")
    p.add_argument("--json", action="store_true", help="print the result dict as JSON only")
    return p


def _pos(parser, name, val):
    if val is not None and val <= 0:
        parser.error(f"--{name} must be positive, got {val}")


def _split_hint(L, pp, vp):
    """The flags to suggest for L layers on pp*vp chunks, as one clause."""
    sug = suggest_pipeline_split(num_layers=L, pp=pp, vp=vp)
    hints = []
    if sug:
        f, q, la = sug
        hints.append(f"--decoder-first-pipeline-num-layers {f} --decoder-last-pipeline-num-layers {la}"
                     + (f" ({q} on each middle stage)" if pp > 2 else ""))
    for extra, flags in ((1, "--account-for-embedding-in-pipeline-split"),
                         (2, "--account-for-embedding-in-pipeline-split "
                             "--account-for-loss-in-pipeline-split")):
        if (L + extra) % (pp * vp) == 0:
            hints.append(flags)
            break
    return ", or ".join(hints)


def check_pipeline_split(args, parser, L, pp, vp):
    """Megatron-LM's rules for the layers of each pipeline stage (TransformerConfig.__post_init__
    and megatron/training/arguments.py validate_args), one parser.error each; returns the
    counts[rank][chunk] of pipeline_chunk_layers."""
    first, last = args.decoder_first_pipeline_num_layers, args.decoder_last_pipeline_num_layers
    emb, loss = args.account_for_embedding_in_pipeline_split, args.account_for_loss_in_pipeline_split
    if first is None and last is None:
        total = L + emb + loss
        if total % (pp * vp):
            if emb or loss:
                parser.error(f"--num-layers {L} + {emb + loss} (embedding/loss counted as layers) = "
                             f"{total} is not divisible by pp*vp = {pp}*{vp}")
            if pp == 1:
                parser.error(f"--num-layers {L} is not divisible by pp*vp = {pp}*{vp}")
            hint = _split_hint(L, pp, vp)
            parser.error(f"--num-layers {L} is not divisible by pp*vp = {pp}*{vp}; "
                         + (f"Megatron-LM needs the uneven split stated, e.g. {hint}" if hint else
                            f"no uneven split Megatron-LM accepts fits either (every stage needs a "
                            f"positive multiple of vp = {vp} layers)"))
        return pipeline_chunk_layers(num_layers=L, pp=pp, vp=vp, embedding_in_split=emb,
                                     loss_in_split=loss)
    if emb or loss:
        parser.error("--decoder-first/last-pipeline-num-layers cannot be combined with "
                     "--account-for-embedding/loss-in-pipeline-split (Megatron-LM refuses both)")
    if pp == 1:
        parser.error("--decoder-first/last-pipeline-num-layers need --pipeline-parallel-size > 1")
    for name, n in (("first", first), ("last", last)):
        if n is not None and n % vp:
            parser.error(f"--decoder-{name}-pipeline-num-layers {n} is not divisible by "
                         f"--virtual-pipeline-size {vp}")
    mid_stages = pp - (first is not None) - (last is not None)
    middle = L - (first or 0) - (last or 0)
    given = " + ".join(str(n) for n in (first, last) if n is not None)
    if middle < 0:
        parser.error(f"first/last stage layers {given} exceed --num-layers {L}")
    if mid_stages == 0 and middle:
        parser.error(f"first + last stage layers {given} must add up to --num-layers {L} "
                     f"with pp {pp} (no middle stage)")
    if mid_stages and middle % mid_stages:
        hint = _split_hint(L, pp, vp)
        parser.error(f"the {middle} middle layers are not divisible by the {mid_stages} middle "
                     "pipeline stages" + (f"; e.g. {hint}" if hint else ""))
    if mid_stages and (middle // mid_stages) % vp:
        parser.error(f"{middle // mid_stages} layers on each middle pipeline stage are not "
                     f"divisible by --virtual-pipeline-size {vp}")
    return pipeline_chunk_layers(num_layers=L, pp=pp, vp=vp, first=first, last=last)


def resolve(args, parser):
    """Resolve the model and configuration; every check is a one-line parser.error (exit 2)."""
    for name in ("num_gpus", "tensor_parallel_size", "pipeline_parallel_size", "virtual_pipeline_size",
                 "context_parallel_size", "expert_parallelism", "expert_tensor_parallel_size",
                 "batch_size_per_gpu", "global_batch_size", "sequence_length",
                 "high_prec_bytes_per_val", "low_prec_bytes_per_val", "bytes_per_grad_ele",
                 "weight_bits", "kv_cache_bytes_per_val", "gpu_memory_gib", "prefill_chunk",
                 "adapter_bytes_per_val", "lora_rank",
                 "zero_allgather_bucket_size", "zero3_max_live_params",
                 "decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers"):
        _pos(parser, name.replace("_", "-"), getattr(args, name))
    for name in ("misc_mem_gib", "framework_mem_gib"):
        if getattr(args, name) is not None and getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must not be negative")
    for name in ("sliding_window", "output_tokens"):
        if getattr(args, name) is not None and getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must not be negative")
    if args.num_attention_heads is None and not args.hf_model_name_or_path:
        if (args.hidden_size or 6144) % 64 == 0 and args.head_dim is None:
            args.num_attention_heads = 64  # the cookbook mem script's default
    try:
        spec, notes = resolve_model_spec(args, defaults={"num_experts": 0})
    except ValueError as exc:
        parser.error(str(exc))
    cfg = load_hf_config(args.hf_model_name_or_path) if args.hf_model_name_or_path else {}
    n = args.num_gpus or 1
    tp, pp = args.tensor_parallel_size or 1, args.pipeline_parallel_size or 1
    vp, cp = args.virtual_pipeline_size, args.context_parallel_size
    ep = args.expert_parallelism or 1
    etp = args.expert_tensor_parallel_size or tp
    a, kv, L = spec["num_attention_heads"], spec["num_kv_heads"], spec["num_layers"]
    if n % (tp * pp * cp):
        parser.error(f"--num-gpus {n} is not divisible by tp*pp*cp = {tp}*{pp}*{cp} = {tp * pp * cp}")
    if a % tp:
        parser.error(f"--num-attention-heads {a} is not divisible by --tensor-parallel-size {tp}")
    if kv % tp and tp % kv:
        parser.error(f"kv heads {kv} and --tensor-parallel-size {tp}: one must divide the other")
    chunk_layers = check_pipeline_split(args, parser, L, pp, vp)
    if spec["ffn_hidden_size"] % tp:
        parser.error(f"MLP width {spec['ffn_hidden_size']} is not divisible by --tensor-parallel-size {tp}")
    if vp > 1 and pp == 1:
        parser.error("--virtual-pipeline-size > 1 needs --pipeline-parallel-size > 1")
    if spec["moe_layers"]:
        E = spec["num_experts"]
        if E % ep:
            parser.error(f"--num-experts {E} is not divisible by --expert-parallelism {ep}")
        if (n // pp) % (ep * etp):
            parser.error(f"gpus per pipeline stage {n // pp} are not divisible by ep*etp = {ep}*{etp}")
        if spec["moe_ffn_hidden_size"] % etp:
            parser.error(f"expert width {spec['moe_ffn_hidden_size']} is not divisible by etp {etp}")
    elif ep > 1:
        parser.error("--expert-parallelism > 1 needs a MoE model (--moe or --num-experts > 1)")
    dp = n // (tp * pp * cp)
    zero = FSDP_TO_ZERO[args.fsdp] if args.fsdp else (1 if args.zero_stage is None else args.zero_stage)
    if args.fsdp and args.zero_stage is not None and args.zero_stage != zero:
        parser.error(f"--fsdp {args.fsdp} is ZeRO stage {zero}, but --zero-stage {args.zero_stage} was given")
    if zero == 3 and pp > 1 and not args.infer:
        parser.error("ZeRO-3 / FSDP full sharding with --pipeline-parallel-size > 1 is not supported "
                     "(DeepSpeed's pipeline engine allows ZeRO stages 0-1)")
    if zero == 2 and pp > 1 and not args.infer:
        notes.append("ZeRO-2 with pipeline parallelism is rejected by DeepSpeed's pipeline engine; "
                     "counted as if gradients were sharded")
    s = args.sequence_length or 2048
    if cp > 1 and s % cp:
        parser.error(f"--sequence-length {s} is not divisible by --context-parallel-size {cp}")
    b = args.batch_size_per_gpu or 1
    m = None
    if args.global_batch_size is not None:
        if args.global_batch_size % (b * dp):
            parser.error(f"--global-batch-size {args.global_batch_size} is not divisible by "
                         f"b*dp = {b}*{dp}")
        m = args.global_batch_size // (b * dp)
        if vp > 1 and m % pp:
            parser.error(f"the interleaved schedule needs micro-batches ({m}) divisible by pp {pp}")
    recompute = args.recompute or ("full" if args.checkpoint_activations else "none")
    if args.checkpoint_activations and args.recompute not in (None, "full"):
        parser.error(f"--checkpoint-activations means full recompute, but --recompute {args.recompute} was given")
    if args.partition_activations and recompute != "full":
        notes.append("--partition-activations splits checkpointed layer inputs; it changes "
                     "nothing without --recompute full")
    mixed = args.is_mixed_precision
    high = args.high_prec_bytes_per_val or 4
    low = args.low_prec_bytes_per_val or 2
    wbytes = low if mixed else high
    lora = None
    if args.finetune != "full":
        if args.infer:
            parser.error("--finetune applies to training, not --infer")
        targets = (list(LORA_MATRICES) if args.lora_targets == "all-linear"
                   else [x.strip() for x in args.lora_targets.split(",") if x.strip()])
        bad = [x for x in targets if x not in LORA_MATRICES]
        if bad or not targets:
            parser.error(f"--lora-targets: unknown {bad or 'empty'}; use q,k,v,o,gate,up,down or all-linear")
        bits = args.weight_bits or (QLORA_NF4_DQ_BITS if args.finetune == "qlora" else 8 * wbytes)
        lora = {"rank": args.lora_rank, "targets": targets, "base_bits": bits,
                "adapter_bytes": args.adapter_bytes_per_val or 4}
    weight_bits = args.weight_bits or 8 * wbytes
    win, win_layers = sliding_window_from_config(cfg, L) if cfg else (None, [])
    if args.sliding_window is not None:
        win = args.sliding_window or None
        win_layers = win_layers if (win and win_layers) else (list(range(L)) if win else [])
    mem = None
    gpu = None
    mem_field = None
    if args.gpu:
        try:
            import hardware  # optional, beside this script
        except ImportError:
            parser.error("--gpu needs hardware.py beside this script; pass --gpu-memory-gib "
                         "(e.g. 80 for an H100 80GB) instead")
        try:
            rec = hardware.get_accelerator(args.gpu)
        except KeyError as exc:
            parser.error(exc.args[0])
        # driver-reported capacity (nvidia-smi total) where this hardware.py has it, else the
        # vendor's printed GB (an older hardware.py): the assumptions line says which
        mem_field = "memory_usable_bytes" if rec.get("memory_usable_bytes") else "memory_bytes"
        mem, gpu = rec[mem_field], rec["name"]
    if args.gpu_memory_gib is not None:
        if mem is not None:
            parser.error("give --gpu or --gpu-memory-gib, not both")
        mem, gpu = args.gpu_memory_gib * GIB, f"{args.gpu_memory_gib:g} GiB"
        mem_field = "--gpu-memory-gib"
    overhead = ((args.misc_mem_gib or 0) + args.framework_mem_gib) * GIB
    c = {"tp": tp, "pp": pp, "vp": vp, "cp": cp, "ep": ep, "etp": etp, "dp": dp, "num_gpus": n,
         "chunk_layers": chunk_layers,
         "decoder_first_pipeline_num_layers": args.decoder_first_pipeline_num_layers,
         "decoder_last_pipeline_num_layers": args.decoder_last_pipeline_num_layers,
         "account_for_embedding_in_pipeline_split": args.account_for_embedding_in_pipeline_split,
         "account_for_loss_in_pipeline_split": args.account_for_loss_in_pipeline_split,
         "zero_stage": zero, "zero_shard": dp * cp, "expert_zero_shard": n // (pp * etp * ep),
         "zbs": args.zero_allgather_bucket_size or 5e8, "zmlp": args.zero3_max_live_params or 1e9,
         "sequence_length": s, "batch_size": b, "num_microbatches": m, "recompute": recompute,
         "sequence_parallel": args.sequence_parallel and tp > 1,
         "partition_activations": args.partition_activations, "flash_attention": args.flash_attention,
         "dropout": args.dropout, "mixed_precision": mixed, "high_bytes": high,
         "weight_bytes": wbytes, "act_bytes": wbytes, "grad_bytes": args.bytes_per_grad_ele or 4,
         "optimizer": args.optimizer,
         "opt_bytes": optimizer_bytes_per_param(optimizer=args.optimizer, mixed_precision=mixed,
                                                master_bytes=high),
         "lora": lora, "weight_bits": weight_bits,
         "kv_bytes": args.kv_cache_bytes_per_val or low, "output_tokens": 1 if args.output_tokens is None else args.output_tokens,
         "sliding_window": win, "sliding_layers": win_layers, "prefill_chunk": args.prefill_chunk, "mla_cache": args.mla_cache,
         "overhead_bytes": overhead, "memory_bytes": mem, "gpu": gpu,
         "memory_field": mem_field}
    return spec, c, notes


def assumptions(c, spec):
    """The convention strings printed with (and returned in) every result."""
    out = [f"per GPU on the most-loaded rank; dp = {c['dp']}, ZeRO stage {c['zero_stage']} shards over "
           f"dp*cp = {c['zero_shard']} (experts over {c['expert_zero_shard']})",
           f"framework allowance + misc = {c['overhead_bytes'] / GIB:.2f} GiB; fragmentation not modelled"]
    if c.get("memory_field") == "memory_usable_bytes":
        out.append(f"GPU capacity {c['memory_bytes'] / GIB:.2f} GiB from hardware.py's memory_usable_bytes "
                   "(driver-reported total, e.g. nvidia-smi; torch's total_memory is ~0.5 GiB less)")
    elif c.get("memory_field") == "memory_bytes":
        out.append(f"GPU capacity {c['memory_bytes'] / GIB:.2f} GiB from hardware.py's memory_bytes "
                   "(vendor GB, decimal; this hardware.py has no memory_usable_bytes)")
    if c["infer"]:
        out.append(f"weights: layer matrices at {c['weight_bits']:g} bits, embeddings/head/norms at "
                   f"{8 * c['weight_bytes']} bits; KV cache at {c['kv_bytes']:g} B/element"
                   + ("; MLA cache = " + c["mla_cache"] if spec.get("kv_lora_rank") else "")
                   + (f"; sliding window {c['sliding_window']} on {len(c['sliding_layers'])} layers"
                      if c["sliding_window"] else ""))
        out.append("activations: one prefill forward's working set (flash attention "
                   + ("on" if c["flash_attention"] else "off") + ")")
        return out
    opt = (f"{c['optimizer']}: {c['opt_bytes']} B/param incl. fp32 master" if c["mixed_precision"]
           else f"{c['optimizer']}: {c['opt_bytes']} B/param, no master copy")
    if not c["lora"]:
        out.append(f"mixed precision {'on' if c['mixed_precision'] else 'off'}: weights "
                   f"{c['weight_bytes']} B, grads {c['grad_bytes']} B, {opt}")
    out.append(f"activations (Korthikanti 2022): recompute {c['recompute']}, sequence parallel "
               f"{'on' if c['sequence_parallel'] else 'off'}, flash attention "
               f"{'on' if c['flash_attention'] else 'off'}, dropout {'on' if c['dropout'] else 'off'}, "
               f"{c['act_bytes']} B/element, "
               + (f"{c['num_microbatches']} micro-batches" if c["num_microbatches"] else
                  "micro-batches = pp (no --global-batch-size)")
               + (f", interleaved v={c['vp']}" if c["vp"] > 1 else ""))
    split = [(k, c[k]) for k in ("decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers",
                                 "account_for_embedding_in_pipeline_split",
                                 "account_for_loss_in_pipeline_split") if c[k]]
    if split:
        out.append("pipeline layers per stage " + "/".join(str(sum(r)) for r in c["chunk_layers"])
                   + " (Megatron-LM " + ", ".join(f"--{k.replace('_', '-')}" + (
                       f" {v}" if v is not True else "") for k, v in split) + ")")
    if c["lora"]:
        lo = c["lora"]
        out.append(f"LoRA r={lo['rank']} on {','.join(lo['targets'])} (routed experts not adapted); "
                   f"frozen base layers at {lo['base_bits']:.3f} bits; adapters and their grads at "
                   f"{lo['adapter_bytes']} B, {c['optimizer']} states fp32, no master copy; "
                   "activations as for full training")
    return out


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.hf_model_name_or_path == "":  # resolve_model_spec would read '' as "no config"
        parser.error("--hf_model_name_or_path is empty: give a folder with config.json, a "
                     "config.json path or a hub id")
    spec, c, notes = resolve(args, parser)
    c["infer"] = args.infer
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    pb = param_breakdown(spec)
    b, s, o = c["batch_size"], c["sequence_length"], c["output_tokens"]
    fit = None
    if args.infer:
        ctx = s + o
        worst, stages, per_tok = inference_memory(spec, c, b, ctx)
        res_extra = {"kv_cache_bytes": worst["kv_cache_bytes"],
                     "kv_cache_bytes_per_token_per_layer": per_tok,
                     "kv_cache_bytes_per_token": per_tok * worst["stage_layers"],
                     "context_tokens": ctx}
        if c["memory_bytes"] is not None:
            lim = c["memory_bytes"]
            fit = {"max_batch_size": _largest(lambda x: inference_memory(spec, c, x, ctx)[0]["total_bytes"], lim),
                   "max_context_tokens": _largest(lambda x: inference_memory(spec, c, b, x)[0]["total_bytes"], lim)}
    else:
        worst, stages = training_memory(spec, c, b)
        res_extra = {"kv_cache_bytes": 0}
        if c["memory_bytes"] is not None:
            fit = {"max_micro_batch_size": _largest(
                lambda x: training_memory(spec, c, x)[0]["total_bytes"], c["memory_bytes"], 1 << 16)}
    res = {"mode": "inference" if args.infer else "training", "model": spec,
           "total_params": pb["total_params"], "active_params": pb["active_params"],
           "parallelism": {k: c[k] for k in ("num_gpus", "tp", "pp", "vp", "cp", "ep", "etp", "dp",
                                             "zero_stage", "zero_shard", "expert_zero_shard")},
           "parallelism_text": f"tp {c['tp']}, pp {c['pp']}, dp {c['dp']}, cp {c['cp']}, ep {c['ep']}, "
                               f"ZeRO {c['zero_stage']}",
           "config": {k: v for k, v in c.items() if k not in ("lora",)}, "lora": c["lora"],
           **{k: v for k, v in worst.items()}, **res_extra,
           "overhead_bytes": c["overhead_bytes"], "stages": stages}
    if fit is not None:
        lim = c["memory_bytes"]
        fit = {"gpu": c["gpu"], "memory_bytes": lim, "fits": res["total_bytes"] <= lim,
               "headroom_bytes": lim - res["total_bytes"], **fit}
    res["fit"] = fit
    res["assumptions"] = assumptions(c, spec)
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
