#!/usr/bin/env python3
"""Inference latency of a decoder-only transformer from first principles: time to first token
(prefill), time per output token (decode), end-to-end latency and tokens/s per user, per GPU and
in total, for a batch, a prompt and an output length on given hardware and a TP x PP layout.

Model: a roofline per operation. Every matmul, attention step, elementwise pass and the output head
costs max(FLOPs / (peak FLOP/s x compute efficiency), bytes moved / (memory bandwidth x memory
efficiency)) plus a fixed per-kernel overhead, layer by layer; prefill runs the prompt in one pass
(compute-bound at length), each decode step reads every weight shard and the whole KV cache once.
Tensor parallelism (tp) adds two all-reduces of the activations per layer (ring, alpha-beta; the
same model as calc_comm.py); pipeline parallelism (pp) runs the stages one after the other for a
batch (one batch in flight, no micro-batch interleaving) and adds pp-1 point-to-point hand-offs.

Symbols: b batch, s prompt tokens, o output tokens, c context length of a decode step, h hidden,
L layers, a query heads, kv key/value heads, d head dim, f MLP width, V vocab, E routed experts,
k experts per token, tp/pp tensor/pipeline parallel sizes.

Conventions and assumptions:
  * The first output token comes out of prefill (TTFT = prefill, plus --request-overhead-ms when
    given: a server's fixed cost per request, 0 by default); the other o-1 tokens take one
    decode step each; step j attends over c = s + j tokens. TPOT is reported for the first and the
    last decode step and as their mean over the o-1 steps (summed exactly).
  * Weights: 2 FLOPs per weight per token (biases counted as weights); weight bytes at
    --weight-bits, except the token embedding and output head, which stay at 16 bits when fewer
    bits are asked for (GPTQ/AWQ/FP8 checkpoints keep them so). Matmul inputs at
    --activation-bits, whose peak sets the matmul rate (a16: bf16, a8: fp8/int8, a4: fp4); the
    residual stream, norms and the attention math stay 16-bit (rate = peak x a/16 below 16 bits).
  * Attention: causal prefill does s(s+1)/2 query-key pairs (4 d FLOPs per pair and head); the KV
    cache is read once per decode step (FlashAttention/PagedAttention-style, no recompute). GQA/MQA
    store kv heads (replicated when kv < tp); MLA stores the latent (r_kv + d_rope) per token,
    replicated on every TP rank, and decodes in the absorbed form (DeepSeek-V2 sec. 2.1.2).
  * Sliding-window layers (window w from the config, or --sliding-window; 0 turns it off): each
    query attends to at most w keys, its own included, so prefill does sum over i=1..s of min(i, w)
    pairs, a decode step reads at most w - 1 cached tokens, and the cache memory counts at most
    w tokens per sequence (rolling buffer, Mistral 7B sec. 2; HF's sliding caches). Which layers
    slide follows the config: Mistral v0.1 all, Gemma 2 the even ones, `layer_types` where given,
    Qwen only with use_sliding_window (Qwen2/3 from max_window_layers up, Qwen2-MoE even layers
    below it, as their HF configs derive layer_types).
  * MoE: experts are tensor-sharded (no expert parallelism). A decode step reads the weights of the
    distinct experts its n = b tokens touch: E (1 - (1 - k/E)^n) of them in expectation under
    uniform independent routing; FLOPs follow the k experts per token.
  * The logits are computed for the last position only (b rows per pass). No speculative
    decoding, no continuous batching, no CPU/scheduler overhead beyond the per-kernel constant.
  * Throughput per GPU divides by tp x pp; with pp > 1 and one batch in flight the stages idle in
    turn, so it is the lower bound of what pipelined serving would reach.

Default efficiencies (state and override them; --gpu uses hardware.py's measured figures):
  compute 0.70 for 16-bit matmuls: the maximum achievable matmul FLOP/s measured by Bekman's
    mamf-finder (ML Engineering book) is 271 TFLOP/s on A100 SXM (0.87 of 312) and 795 on H100
    SXM bf16 (0.80); the GEMM shapes of a forward pass sit below those best shapes. Below 16 bits
    the same measurements reach a smaller fraction of the (doubled) peak: H100 fp8 1403 of 1979
    (0.71), 0.883 of the bf16 fraction (GH200: 0.927), so 8- and 4-bit matmuls default to
    0.70 x 0.883 = 0.62 (4-bit: no measurement; the 8-bit ratio is assumed). --gpu takes the
    table's measured MAMF for the dtype and keeps the same gap below it as the default keeps below
    the A100's (x 0.805 = 0.70 / 0.869), so --gpu a100 equals the default. Attention math runs at
    the 16-bit rate and efficiency whatever the matmul precision.
  memory 0.70: gpt-fast (pytorch-labs/gpt-fast README) decodes Llama-2-7B at batch 1 on an
    A100-80GB moving 1397 GB/s of 2039 (0.69), all kernels and overheads included. Checked, not
    refitted, against independent batch-1 decode data: Databricks/MosaicML ("LLM Inference
    Performance Engineering: Best Practices", 2023) measure MBU 0.55 for Llama-2-70B on 4x
    A100-40GB and 0.60 on 2x H100 with TensorRT-LLM (ours 0.60, 0.60); gpt-fast's tensor-parallel
    table (Llama-2-7B TP 1-8, 70B TP 2-8) runs 11-18% faster than ours (22% at 7B TP 8). Per-GPU
    bandwidth falling with TP, which both report, comes out of the fixed per-layer costs below
    (kernel overhead, all-reduce); no TP-dependent bandwidth factor is added on top.
  kernel overhead 4 us per kernel (11 per layer): the launch-to-launch gap of small dependent
    kernels without CUDA graphs (a few microseconds each on A100/H100).
  all-reduce: calc_comm.py's intra-node ring (8.9 us per call, 0.6/3.4 us per hop LL/Simple,
    LL at 1/4 bandwidth, 0.80 of the NVLink line rate; see allreduce_time_s).
  Hardware without --gpu: A100-SXM4-80GB datasheet (312 TFLOP/s dense bf16, 2039 GB/s, 80 GB,
    NVLink 300 GB/s per direction).

Examples:
  python calc_inference_latency.py --hf_model_name_or_path path/to/Llama-2-7b/config.json -s 2048 -o 1
  python calc_inference_latency.py -l 96 -hs 12288 -a 96 -v 51200 -tp 8 -s 512 -o 32   # GPT-175B
  python calc_inference_latency.py --hf_model_name_or_path llama-3-8b.json --gpu h100 --precision fp8 -b 64
  python calc_inference_latency.py --hf_model_name_or_path mixtral.json --weight-bits 4 -b 16 --json
  python calc_inference_latency.py -l 80 -hs 8192 -a 64 --num-kv-heads 8 -tp 4 -pp 2 --peak-tflops 989 \\
      --memory-bandwidth-gbps 3350 --gpu-memory-gib 80

References:
  Williams, Waterman, Patterson 2009, "Roofline" (CACM 52(4)).
  Pope et al. 2022, "Efficiently Scaling Transformer Inference", sec. 2-3 (prefill/decode costs).
  Shoeybi et al. 2019, "Megatron-LM", sec. 3 (two all-reduces per layer under TP).
  Dao et al. 2022, "FlashAttention" (attention reads Q, K, V once); Kwon et al. 2023, "vLLM".
  DeepSeek-AI 2024, "DeepSeek-V2", sec. 2.1 (MLA cache); Patarasuk & Yuan 2009 (ring all-reduce).
  Jiang et al. 2023, "Mistral 7B", sec. 2 (sliding window, rolling buffer cache); Gemma Team 2024,
  "Gemma 2", sec. 2 (local sliding-window and global attention on alternating layers).
  Validation: FasterTransformer docs/gpt_guide.md tables; TensorRT-LLM docs/source/performance.md.
"""

import argparse
import json
import math
import os
import sys

# --- constants (each with its source; see the module docstring) --------------------------------
DEFAULT_COMPUTE_EFFICIENCY = 0.70  # 16-bit matmuls; mamf-finder maxima 0.80-0.87; real shapes lower
# Below 16 bits the best achievable fraction of peak is lower: Bekman's mamf-finder on H100 SXM
# gives fp8 1402.6 of 1979 (0.709) vs bf16 794.5 of 989.4 (0.803), a ratio of 0.883 (GH200: 0.927).
LOW_BIT_EFFICIENCY_RATIO = (1402.6 / 1979.0) / (794.5 / 989.4)
# --gpu scales a measured best-shape MAMF by the same gap the 0.70 default keeps below the A100's
# (271.2 of 312 = 0.869): forward-pass GEMM shapes run below the best shape mamf-finder finds.
MAMF_SHAPE_FACTOR = DEFAULT_COMPUTE_EFFICIENCY / (271.2 / 312.0)
DEFAULT_MEMORY_EFFICIENCY = 0.70   # gpt-fast: 1397.31 GB/s of 2039 on A100-80GB at batch 1;
# Databricks MBU 0.55-0.60 at batch 1, TP 2-4 (TensorRT-LLM), matched within 10% (VALIDATION.md)
DEFAULT_KERNEL_OVERHEAD_US = 4.0   # per kernel, launch-to-launch gap of small dependent kernels
KERNELS_PER_LAYER = 11  # norm, qkv, rope, attention, o-proj, add, norm, mlp-in, act, mlp-out, add
# TP all-reduce constants, mirrored from calc_comm.py (ALPHA_LAUNCH_S, ALPHA_HOP_S,
# LL_BANDWIDTH_FRACTION, SCALE_UP_EFFICIENCY) so both scripts give the same intra-node ring time:
DEFAULT_ALLREDUCE_LATENCY_US = 8.9  # per call: 10.14 us all_reduce_perf floor on 2 x A100 less 2 hops
ALLREDUCE_HOP_S = {"ll": 0.6e-6, "simple": 3.4e-6}  # per ring step on NVLink, NCCL tuning.cc hwLat
LL_BANDWIDTH_FRACTION = 0.25  # NCCL's LL protocol: 1/4 of the bus bandwidth (tuning.cc)
DEFAULT_ALLREDUCE_EFFICIENCY = 0.80  # ring busbw / NVLink line rate: A100 235/300, H100 370/450
# Hardware defaults without --gpu: NVIDIA A100 SXM4 80GB datasheet.
DEFAULT_PEAK_TFLOPS = 312.0        # dense FP16/BF16 tensor core
DEFAULT_MEMORY_BANDWIDTH_GBPS = 2039.0
DEFAULT_GPU_MEMORY_GIB = 80.0   # A100-SXM4-80GB: the driver reports 81920 MiB
DEFAULT_LINK_GBPS = 300.0          # NVLink 3, per GPU per direction (600 GB/s bidirectional)
PRECISIONS = {  # --precision shorthand -> (weight bits, activation bits, kv-cache bits)
    "fp32": (32, 32, 32), "fp16": (16, 16, 16), "bf16": (16, 16, 16), "fp8": (8, 8, 8),
    "int8": (8, 8, 16), "w8a8": (8, 8, 16), "w8a16": (8, 16, 16), "w4a16": (4, 16, 16),
    "w4a8": (4, 8, 8), "fp4": (4, 4, 8), "w4a4": (4, 4, 8),
}
ALLOWED_BITS = (4, 8, 16, 32)
# activation bits -> hardware.py dtype keys, first present wins
COMPUTE_DTYPE = {32: ("tf32", "fp32"), 16: ("bf16", "fp16"), 8: ("fp8", "int8"), 4: ("fp4",)}

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


# --- formulas ------------------------------------------------------------------------------------
def roofline_time_s(*, flops, bytes_moved, flops_per_s, bytes_per_s):
    """Roofline time of one kernel: the slower of its math and its memory traffic
    (Williams et al. 2009); overlap of the two inside the kernel is assumed perfect."""
    return max(flops / flops_per_s, bytes_moved / bytes_per_s)


def allreduce_time_s(*, size_bytes, num_gpus, bandwidth_bytes_per_s, latency_s, efficiency):
    """Intra-node ring all-reduce, alpha-beta (Patarasuk & Yuan 2009; Thakur et al. 2005 sec. 4):
    2(n-1) steps, each GPU moving 2(n-1)/n x size over its link at bandwidth x efficiency; latency
    = the call's fixed cost + one hop per step. Costed with NCCL's LL protocol (0.6 us hops, 1/4
    of the bandwidth) and Simple (3.4 us hops, full bandwidth), the faster taken. Mirrors
    calc_comm.py ring_time_s(op='all_reduce') inside one node. n = 1 costs nothing."""
    n = num_gpus
    if n <= 1 or size_bytes <= 0:
        return 0.0
    wire = 2 * (n - 1) / n * size_bytes
    return min(latency_s + 2 * (n - 1) * ALLREDUCE_HOP_S[p]
               + wire / (bandwidth_bytes_per_s * efficiency * frac)
               for p, frac in (("ll", LL_BANDWIDTH_FRACTION), ("simple", 1.0)))


def p2p_time_s(*, size_bytes, bandwidth_bytes_per_s, latency_s, efficiency):
    """One point-to-point send (a pipeline hand-off) over one link: call cost + one hop + bytes /
    bandwidth, the faster of the LL and Simple protocols (calc_comm.py's sendrecv, intra-node)."""
    return min(latency_s + ALLREDUCE_HOP_S[p] + size_bytes / (bandwidth_bytes_per_s * efficiency * frac)
               for p, frac in (("ll", LL_BANDWIDTH_FRACTION), ("simple", 1.0)))


def expected_distinct_experts(*, num_experts, topk, num_tokens):
    """Expected number of distinct routed experts that num_tokens tokens touch when each picks
    k of E uniformly and independently: E (1 - (1 - k/E)^n) (a balls-in-bins expectation;
    with real, skewed routers it is fewer)."""
    E, k, n = num_experts, topk, num_tokens
    if E <= 0 or k <= 0 or n <= 0:
        return 0.0
    return E * (1.0 - (1.0 - k / E) ** n)


def kv_cache_bytes_per_token_per_layer(spec, *, tp, kv_bits):
    """KV-cache bytes one token adds to one layer on one TP rank. MHA/GQA/MQA: K and V of the
    rank's kv heads, ceil(kv/tp) (replicated when kv < tp). MLA (DeepSeek-V2 sec. 2.1.2): the
    latent r_kv plus the shared rotary key d_rope, replicated on every rank."""
    if spec.get("kv_lora_rank"):
        return (spec["kv_lora_rank"] + spec["qk_rope_head_dim"]) * kv_bits / 8
    kv_local = math.ceil(spec["num_kv_heads"] / tp)
    return 2 * kv_local * spec["head_dim"] * kv_bits / 8


def causal_pairs(*, context_before, new_tokens, window=None):
    """Query-key pairs of causal attention for new_tokens queries after context_before cached
    tokens: the query at position p (1-based) sees p keys, or min(p, w) under a sliding window of
    w keys, its own included (Mistral 7B, Jiang et al. 2023 sec. 2; HF's mask q - k < w)."""
    def upto(m):  # sum over p = 1..m of min(p, w)
        if not window or m <= window:
            return m * (m + 1) // 2
        return window * (window + 1) // 2 + (m - window) * window
    return upto(context_before + new_tokens) - upto(context_before)


def cached_tokens_read(*, context_before, window=None):
    """Cached tokens one sequence's attention reads: all context_before of them, or under a
    window of w keys the newest w - 1 (the query's own key is the w-th; a rolling buffer of w
    slots, Mistral 7B sec. 2, holds them)."""
    return min(context_before, window - 1) if window else context_before


def attention_core_costs(spec, *, tp, pairs, new_tokens, kv_tokens_read, kv_bits, act_bits,
                         absorbed):
    """FLOPs and bytes of QK^T, softmax and PV on one TP rank. pairs: query-key pairs;
    new_tokens: queries (their q in, output out, new K/V written); kv_tokens_read: cached tokens
    read. MHA/GQA: 4 d FLOPs per pair and head (2 d for QK^T, 2 d for PV). MLA absorbed (decode):
    2 (r_kv + d_rope) + 2 r_kv per pair and head; MLA naive (prefill): 2 (d_nope + d_rope) + 2 d_v."""
    a_local = spec["num_attention_heads"] / tp
    ab = act_bits / 8
    kv_tok = kv_cache_bytes_per_token_per_layer(spec, tp=tp, kv_bits=kv_bits)
    if spec.get("kv_lora_rank"):
        r, dr, dv = spec["kv_lora_rank"], spec["qk_rope_head_dim"], spec["v_head_dim"]
        per_pair = 2 * (r + dr) + 2 * r if absorbed else 2 * spec["head_dim"] + 2 * dv
        q_width, o_width = a_local * ((r + dr) if absorbed else spec["head_dim"]), a_local * (r if absorbed else dv)
        kv_in = 0 if absorbed else new_tokens * a_local * (spec["head_dim"] + dv) * ab
    else:
        d = spec["head_dim"]
        per_pair = 4 * d
        q_width, o_width = a_local * d, a_local * d
        kv_in = new_tokens * 2 * math.ceil(spec["num_kv_heads"] / tp) * d * ab
    flops = pairs * a_local * per_pair
    bytes_moved = (new_tokens * (q_width + o_width) * ab + kv_in + new_tokens * kv_tok
                   + kv_tokens_read * kv_tok)
    return flops, bytes_moved


def layer_costs(spec, *, moe_layer, tp, num_tokens, w_bits, a_bits):
    """Per-kernel (FLOPs, bytes) of one layer's weight matmuls and elementwise passes on one TP
    rank for num_tokens = b x new tokens. Matmul: 2 FLOPs per weight per token; bytes = weight
    shard + activations in and out. Elementwise: norms and residual adds move 10 h values per
    token, the activation function 2 f (3 f gated), rotary 2 (a + kv) d. Returns a dict of
    name -> (flops, bytes)."""
    h, nl = spec["hidden_size"], spec["num_mlp_linears"]
    n, wb, ab = num_tokens, w_bits / 8, a_bits / 8
    a, kv, d = spec["num_attention_heads"], spec["num_kv_heads"], spec["head_dim"]
    attn_w = attention_params(spec) / tp
    q_out = a * d if not spec.get("kv_lora_rank") else a * spec["head_dim"]
    attn_io = n * (h + q_out + 2 * kv * d + a * d + h) / tp * ab  # in/out of qkv and o-proj
    out = {"attention_linear": (2 * n * attn_w, attn_w * wb + attn_io)}
    if moe_layer:
        m = moe_params(spec)
        f_e = spec["moe_ffn_hidden_size"]
        E, k = spec["num_experts"], spec["topk"]
        touched = expected_distinct_experts(num_experts=E, topk=k, num_tokens=n)
        expert_w = m["one_expert"] / tp
        f_sh = spec["shared_expert_ffn_hidden_size"]
        shared_w = m["shared_experts"] / tp
        router_w = m["router"]  # replicated on every rank
        flops = 2 * n * (k * expert_w + shared_w + router_w)
        io = n * (k * (h + (nl - 1) * f_e / tp + h) + (h + (nl - 1) * f_sh / tp + h) * bool(f_sh)
                  + h + E) * ab
        out["mlp"] = (flops, (touched * expert_w + shared_w + router_w) * wb + io)
        f_act = (k * f_e + f_sh) / tp
    else:
        f = spec["ffn_hidden_size"]
        mlp_w = mlp_params(h=h, f=f, num_linears=nl, bias=spec["mlp_bias"]) / tp
        out["mlp"] = (2 * n * mlp_w, mlp_w * wb + n * (h + (nl - 1) * f / tp + f / tp + h) * ab)
        f_act = f / tp
    rope = 2 * (a + kv) * d / tp if spec["position_embedding"] == "rope" else 0
    eb = max(a_bits, 16) / 8  # the residual stream stays 16-bit even with 8-bit matmul inputs
    elem = n * (10 * h + (nl if nl >= 3 else 2) * f_act + rope) * eb
    out["elementwise"] = (n * (10 * h + 4 * f_act), elem)
    return out


def sum_max_linear(*, a0, a1, b0, b1, c_lo, c_hi):
    """Exact sum over integers c in [c_lo, c_hi] of max(a0 + a1 c, b0 + b1 c) (a convex piecewise
    linear function: one crossing at most), so decode totals need no per-step loop."""
    if c_hi < c_lo:
        return 0.0

    def lin_sum(p0, p1, lo, hi):
        cnt = hi - lo + 1
        return p0 * cnt + p1 * (lo + hi) * cnt / 2 if cnt > 0 else 0.0

    if a1 == b1:
        return lin_sum(max(a0, b0), a1, c_lo, c_hi)
    x = (b0 - a0) / (a1 - b1)  # where the lines cross
    lo_line, hi_line = ((b0, b1), (a0, a1)) if a1 > b1 else ((a0, a1), (b0, b1))
    split = min(max(math.floor(x), c_lo - 1), c_hi)  # c <= split: lo_line's rival wins
    return lin_sum(*lo_line, c_lo, split) + lin_sum(*hi_line, split + 1, c_hi)


def forward_pass(spec, hw, *, tp, pp, batch, new_tokens, context_before, w_bits, a_bits, kv_bits,
                 absorbed, window=None, num_sliding_layers=0):
    """One forward pass of the whole pipeline for `batch` sequences, each adding new_tokens after
    context_before cached tokens: time by component (seconds), total FLOPs and bytes per rank, and
    the time-weighted bound. Stages run one after the other (one batch in flight).
    num_sliding_layers of the L layers attend within a window of `window` keys (causal_pairs,
    cached_tokens_read); the others attend to the whole context."""
    F, B = hw["flops_per_s"], hw["bytes_per_s"]
    ovh = hw["kernel_overhead_s"]
    n = batch * new_tokens
    L, h = spec["num_layers"], spec["hidden_size"]
    ab = a_bits / 8
    moe_set = set(spec["moe_layers"])
    comp = {"attention_linear": 0.0, "attention_core": 0.0, "mlp": 0.0, "elementwise": 0.0,
            "output_head": 0.0, "tp_allreduce": 0.0, "pp_handoff": 0.0, "kernel_overhead": 0.0}
    compute_s = memory_s = mm_compute_s = mm_memory_s = 0.0
    flops_total = bytes_total = 0.0
    n_slide = num_sliding_layers if window else 0
    cores = []  # (FLOPs, bytes, layers) of attention over the whole context, then in the window
    for win, cnt in ((None, L - n_slide), (window, n_slide)):
        if cnt:
            fl, by = attention_core_costs(
                spec, tp=tp, pairs=batch * causal_pairs(context_before=context_before,
                                                        new_tokens=new_tokens, window=win),
                new_tokens=n, kv_tokens_read=batch * cached_tokens_read(context_before=context_before,
                                                                        window=win),
                kv_bits=kv_bits, act_bits=a_bits, absorbed=absorbed)
            cores.append(("attention_core", fl, by, cnt))
    per_type = {}
    for is_moe in (False, True):
        per_type[is_moe] = layer_costs(spec, moe_layer=is_moe, tp=tp, num_tokens=n, w_bits=w_bits,
                                       a_bits=a_bits)
    counts = {True: len(moe_set), False: L - len(moe_set)}
    ops = []
    for is_moe, cnt in counts.items():
        if not cnt:
            continue
        for name, (fl, by) in per_type[is_moe].items():
            ops.append((name, fl, by, cnt))
    ops += cores
    hb = max(w_bits, 16) / 8  # embedding/head kept at >= 16 bits
    head_w = spec["word_embed_proj_dim"] * spec["vocab_size"] / tp
    ops.append(("output_head", 2 * batch * head_w, head_w * hb + batch * spec["vocab_size"] / tp * 4
                + n * h * ab * 2, 1))  # head shard, fp32 logits out, final norm and embedding rows
    F16 = hw["attention_flops_per_s"]  # attention math runs at the 16-bit rate
    for name, fl, by, cnt in ops:
        f_rate = F16 if name == "attention_core" else F
        t = roofline_time_s(flops=fl, bytes_moved=by, flops_per_s=f_rate, bytes_per_s=B)
        comp[name] += cnt * t
        compute_s += cnt * fl / f_rate
        if name in ("attention_linear", "mlp"):
            mm_compute_s += cnt * fl / F
            mm_memory_s += cnt * by / B
        memory_s += cnt * by / B
        flops_total += cnt * fl
        bytes_total += cnt * by
    comp["kernel_overhead"] = (L * KERNELS_PER_LAYER + 2) * ovh
    act_bytes = n * h * max(ab, 2)  # the residual stream, and so TP/PP traffic, stays 16-bit
    comp["tp_allreduce"] = 2 * L * allreduce_time_s(
        size_bytes=act_bytes, num_gpus=tp, bandwidth_bytes_per_s=hw["link_bytes_per_s"],
        latency_s=hw["link_latency_s"], efficiency=hw["link_efficiency"])
    comp["pp_handoff"] = (pp - 1) * p2p_time_s(
        size_bytes=act_bytes, bandwidth_bytes_per_s=hw.get("p2p_link_bytes_per_s") or hw["link_bytes_per_s"],
        latency_s=hw["link_latency_s"], efficiency=hw["link_efficiency"]) if pp > 1 else 0.0
    return {"time_s": sum(comp.values()), "components_s": comp, "compute_s": compute_s,
            "memory_s": memory_s, "flops": flops_total, "bytes": bytes_total,
            "matmul_compute_s": mm_compute_s, "matmul_memory_s": mm_memory_s,
            "bound": "compute" if compute_s >= memory_s else "memory"}


def decode_total_s(spec, hw, *, tp, pp, batch, prompt_tokens, output_tokens, w_bits, a_bits,
                   kv_bits, window=None, num_sliding_layers=0):
    """Exact sum of the o-1 decode steps: step j (1..o-1) finds c = s + j - 1 tokens cached and
    adds its own. Only attention depends on c and its roofline is the max of two lines in c, so
    the sum is closed-form (sum_max_linear); the rest of a step is the same every step. A sliding
    layer's attention grows with min(c, w - 1) (cached_tokens_read): linear below c = w - 1,
    constant from there, so its sum splits at the window; full and sliding layers sum apart."""
    steps = output_tokens - 1
    if steps <= 0:
        return 0.0
    c_lo, c_hi = prompt_tokens, prompt_tokens + steps - 1  # cached tokens before each step
    kw = dict(w_bits=w_bits, a_bits=a_bits, kv_bits=kv_bits)
    base = forward_pass(spec, hw, tp=tp, pp=pp, batch=batch, new_tokens=1, context_before=0,
                        absorbed=True, **kw)
    fixed = base["time_s"] - base["components_s"]["attention_core"]
    B = hw["bytes_per_s"]
    L = spec["num_layers"]
    n_slide = num_sliding_layers if window else 0
    f0, m0 = attention_core_costs(spec, tp=tp, pairs=batch, new_tokens=batch, kv_tokens_read=0,
                                  kv_bits=kv_bits, act_bits=a_bits, absorbed=True)
    f1, m1 = attention_core_costs(spec, tp=tp, pairs=2 * batch, new_tokens=batch,
                                  kv_tokens_read=batch, kv_bits=kv_bits, act_bits=a_bits,
                                  absorbed=True)
    df, dm = f1 - f0, m1 - m0  # per cached token
    F16 = hw["attention_flops_per_s"]
    line = dict(a0=f0 / F16, a1=df / F16, b0=m0 / B, b1=dm / B)
    full = sum_max_linear(**line, c_lo=c_lo, c_hi=c_hi)
    attn = (L - n_slide) * full
    if n_slide:
        cap = window - 1  # from c = w - 1 on, a step reads w - 1 cached tokens and attends to w
        grow = sum_max_linear(**line, c_lo=c_lo, c_hi=min(c_hi, cap - 1))
        flat = max(0, c_hi - max(c_lo, cap) + 1) * max((f0 + df * cap) / F16, (m0 + dm * cap) / B)
        attn += n_slide * (grow + flat)
    return steps * fixed + attn


def critical_batch(spec, hw, *, tp, pp, context, w_bits, a_bits, kv_bits, matmuls_only,
                   limit=1 << 24, window=None, num_sliding_layers=0):
    """Smallest batch at which a decode step at `context` cached tokens has as much math time as
    memory time. matmuls_only: the weight matmuls (about F/B x 8/w_bits tokens, Pope et al. 2022
    sec. 3; later for MoE, whose touched experts grow with b); else the whole step, which with
    long contexts never turns (the KV-cache read grows with b as fast as the math): None."""
    def is_compute(b):
        r = forward_pass(spec, hw, tp=tp, pp=pp, batch=b, new_tokens=1, context_before=context,
                         w_bits=w_bits, a_bits=a_bits, kv_bits=kv_bits, absorbed=True,
                         window=window, num_sliding_layers=num_sliding_layers)
        if matmuls_only:
            return r["matmul_compute_s"] >= r["matmul_memory_s"]
        return r["compute_s"] >= r["memory_s"]
    lo, hi = 0, 1
    while not is_compute(hi):
        lo, hi = hi, hi * 2
        if hi > limit:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if is_compute(mid) else (mid, hi)
    return hi


def weight_bytes_per_gpu(spec, *, tp, pp, w_bits):
    """Weight bytes on the most-loaded rank (Megatron-style sharding, Shoeybi et al. 2019 sec. 3):
    ceil(L/pp) layers' tp shards of attention/MLP/experts, norms and routers whole on every rank
    (replicated, >= 16 bits), plus the vocab-parallel embedding (first stage) or head (last
    stage), whichever is larger, at >= 16 bits."""
    pb = param_breakdown(spec)
    per = pb["per_layer"]
    L = spec["num_layers"]
    wbytes = w_bits / 8
    # per layer: tensor-parallel shards (attention, MLP, experts) and replicated weights (norms,
    # router), the latter kept at >= 16 bits as quantizers leave them
    dense = (per["attention"] + per["dense_mlp"]) / tp * wbytes + per["norms"] * max(wbytes, 2)
    moe = ((per["attention"] + per["moe_routed_experts"] + per["moe_shared_experts"]) / tp * wbytes
           + (per["norms"] + per["moe_router"]) * max(wbytes, 2))
    if pp == 1:
        layers_bytes = pb["num_dense_layers"] * dense + pb["num_moe_layers"] * moe
    else:
        big = max(dense if pb["num_dense_layers"] else 0, moe if pb["num_moe_layers"] else 0)
        layers_bytes = math.ceil(L / pp) * big
    hb = max(w_bits, 16) / 8
    emb = (pb["embedding_params"] + pb["position_embedding_params"]
           + pb["embedding_projection_params"]) / tp * hb
    head = (pb["output_head_params"] / tp + pb["final_norm_params"]) * hb
    ends = emb + head if pp == 1 else max(emb, head)
    return layers_bytes + ends


def kv_cache_bytes_per_gpu(spec, *, tp, pp, batch, context, kv_bits, window=None,
                           sliding_layers=()):
    """KV cache on the most-loaded rank: stages of ceil(L/pp) consecutive layers, each layer
    holding b x tokens x kv_cache_bytes_per_token_per_layer, where tokens = context, or at most w
    for a sliding-window layer (Mistral 7B sec. 2 rolling buffer; HF's sliding caches keep w)."""
    L = spec["num_layers"]
    per_layer = [batch * (min(context, window) if window and i in sliding_layers else context)
                 for i in range(L)]
    q = math.ceil(L / pp)
    tokens = max(sum(per_layer[st * q:(st + 1) * q]) for st in range(pp))
    return tokens * kv_cache_bytes_per_token_per_layer(spec, tp=tp, kv_bits=kv_bits)


# --- config helpers ------------------------------------------------------------------------------
# A copy of calc_transformer_mem.py's (tests/test_shared_copies.py checks the two are identical).
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


# --- hardware ------------------------------------------------------------------------------------
def resolve_hardware(args, parser):
    """Peak FLOP/s, bandwidths and memory: explicit flags win, then hardware.py (--gpu, using
    its achievable figures when present and no efficiency flag overrides them), then the A100
    defaults. Returns (hw dict, notes)."""
    notes = []
    rec = None
    if args.gpu:
        try:
            import hardware  # optional table beside this script, only for --gpu
        except ImportError:
            parser.error("--gpu needs hardware.py beside this script; without it pass --peak-tflops, "
                         "--memory-bandwidth-gbps, --gpu-memory-gib and --tp-bandwidth-gbps")
        try:
            rec = hardware.get_accelerator(args.gpu)
        except KeyError as exc:
            parser.error(str(exc.args[0]) if exc.args else f"unknown accelerator {args.gpu!r}")
    a_bits = args.activation_bits
    ce, me = args.compute_efficiency, args.memory_efficiency
    # 16-bit rate for the attention math: (peak, efficiency); filled below when a_bits < 16
    peak16 = ce16 = None
    if args.peak_tflops is not None:
        peak = args.peak_tflops * 1e12
    elif rec is not None:
        peaks = rec["peak_flops_per_s"] or {}
        achs = rec.get("achievable_matmul_flops_per_s") or {}
        keys = COMPUTE_DTYPE[a_bits]
        key = next((k for k in keys if peaks.get(k)), None)
        if key is None:
            parser.error(f"{rec['name']} has no {'/'.join(keys)} peak for --activation-bits {a_bits}; "
                         "pass --peak-tflops")
        peak = peaks[key]
        if achs.get(key) and ce is None:
            ce = MAMF_SHAPE_FACTOR * achs[key] / peak
            notes.append(f"compute efficiency {ce:.3f} = {MAMF_SHAPE_FACTOR:.3f} x achievable {key} "
                         f"matmul {achs[key] / 1e12:.1f} / peak {peak / 1e12:.1f} TFLOP/s ({rec['name']})")
        key16 = next((k for k in COMPUTE_DTYPE[16] if peaks.get(k)), None)
        if a_bits < 16 and key16:
            peak16 = peaks[key16]
            if achs.get(key16) and args.compute_efficiency is None:
                ce16 = MAMF_SHAPE_FACTOR * achs[key16] / peak16
    else:
        peak = DEFAULT_PEAK_TFLOPS * 1e12
        if a_bits != 16:
            notes.append(f"--activation-bits {a_bits} with the default A100 bf16 peak "
                         f"({DEFAULT_PEAK_TFLOPS:g} TFLOP/s); pass --peak-tflops for that precision")
    if args.memory_bandwidth_gbps is not None:
        bw = args.memory_bandwidth_gbps * 1e9
    elif rec is not None:
        bw = rec["memory_bandwidth_bytes_per_s"]
        ach = rec.get("achievable_memory_bandwidth_bytes_per_s")
        if ach and me is None:
            me = ach / bw
            notes.append(f"memory efficiency {me:.3f} = achievable / peak bandwidth ({rec['name']})")
    else:
        bw = DEFAULT_MEMORY_BANDWIDTH_GBPS * 1e9
    if args.gpu_memory_gib is not None:
        mem = args.gpu_memory_gib * 2 ** 30
    elif rec is not None:  # driver-reported capacity; older hardware.py: vendor GB
        mem = rec.get("memory_usable_bytes") or rec["memory_bytes"]
    else:
        mem = DEFAULT_GPU_MEMORY_GIB * 2 ** 30
    tp, pp = args.tensor_parallel_size, args.pipeline_parallel_size
    link = p2p_link = None
    if args.tp_bandwidth_gbps is not None:
        link = p2p_link = args.tp_bandwidth_gbps * 1e9
    elif rec is None:
        link = p2p_link = DEFAULT_LINK_GBPS * 1e9
    elif tp * pp > 1:
        agg, dom = rec.get("scale_up_bandwidth_bytes_per_s"), rec.get("scale_up_domain_size")
        if not agg or (dom and tp > dom):
            why = "has no scale-up link" if not agg else f"has a scale-up domain of {dom}"
            parser.error(f"--gpu {rec['name']} {why}, so -tp {tp} would cross a slower network; "
                         "pass --tp-bandwidth-gbps (GB/s per GPU, one direction)")
        link = p2p_link = agg
        if rec.get("scale_up_topology") == "mesh" and dom and dom > 1:
            # full mesh (xGMI, Gaudi RoCE): tp ranks use tp-1 of the dom-1 peer links, a
            # pipeline hand-off one link (same rule as calc_comm.group_intra_bytes_per_s)
            link, p2p_link = agg * max(1, tp - 1) / (dom - 1), agg / (dom - 1)
        if dom and tp * pp > dom:  # stage hand-offs leave the scale-up domain
            p2p_link = rec.get("scale_out_bandwidth_bytes_per_s")
            if not p2p_link:
                parser.error(f"-tp {tp} x -pp {pp} spans more than one {rec['name']} scale-up "
                             "domain and its record has no scale-out bandwidth; pass "
                             "--tp-bandwidth-gbps")
            notes.append(f"pipeline hand-offs cross nodes: {p2p_link / 1e9:g} GB/s per GPU")
    else:  # one GPU: no link is used; report the table's
        link = rec.get("scale_up_bandwidth_bytes_per_s")
    link = link or DEFAULT_LINK_GBPS * 1e9
    p2p_link = p2p_link or link
    if ce is None:  # no flag, no measured figure: 0.70 at 16 bits, lower below (see constants)
        ce = DEFAULT_COMPUTE_EFFICIENCY * (LOW_BIT_EFFICIENCY_RATIO if a_bits < 16 else 1.0)
    if a_bits < 16:  # attention at 16 bits: the table's 16-bit peak, else half the rate per halving
        peak16 = peak16 or peak * a_bits / 16
        ce16 = ce16 or (ce if args.compute_efficiency is not None else DEFAULT_COMPUTE_EFFICIENCY)
    else:
        peak16, ce16 = peak, ce
    me = DEFAULT_MEMORY_EFFICIENCY if me is None else me
    ovh = DEFAULT_KERNEL_OVERHEAD_US if args.kernel_overhead_us is None else args.kernel_overhead_us
    lat = DEFAULT_ALLREDUCE_LATENCY_US if args.tp_latency_us is None else args.tp_latency_us
    leff = DEFAULT_ALLREDUCE_EFFICIENCY if args.tp_efficiency is None else args.tp_efficiency
    hw = {"gpu": rec["name"] if rec else None, "peak_flops_per_s": peak, "compute_efficiency": ce,
          "flops_per_s": peak * ce, "attention_flops_per_s": peak16 * ce16,
          "memory_bandwidth_bytes_per_s": bw, "memory_efficiency": me,
          "bytes_per_s": bw * me, "gpu_memory_bytes": mem, "link_bytes_per_s": link,
          "p2p_link_bytes_per_s": p2p_link,
          "link_latency_s": lat * 1e-6, "link_efficiency": leff, "kernel_overhead_s": ovh * 1e-6}
    return hw, notes


# --- output --------------------------------------------------------------------------------------
def fmt_s(t):
    """Seconds -> ms or s text."""
    return f"{t * 1e3:,.2f} ms" if t < 1 else f"{t:,.3f} s"


def format_report(res):
    """Aligned human-readable report of the dict main returns."""
    r, hw = res, res["hardware"]
    lines = [f"{'phase':<34}{'time':>14}   bound",
             f"{'TTFT (prefill, %d x %d tokens)' % (r['batch_size'], r['prompt_tokens']):<34}"
             f"{fmt_s(r['ttft_s']):>14}   {r['prefill_bound']}"
             + (f" (incl. {fmt_s(r['request_overhead_s'])} per request)" if r["request_overhead_s"] else ""),
             f"{'TPOT first decode step':<34}{fmt_s(r['decode_first_step_s']):>14}   {r['decode_bound']}",
             f"{'TPOT last decode step':<34}{fmt_s(r['decode_last_step_s']):>14}",
             f"{'TPOT mean over %d steps' % max(r['output_tokens'] - 1, 0):<34}"
             f"{fmt_s(r['decode_per_token_s']):>14}",
             f"{'End-to-end (%d output tokens)' % r['output_tokens']:<34}{fmt_s(r['total_s']):>14}",
             "", f"{'throughput':<34}{'tokens/s':>14}",
             f"{'per user (decode, 1/TPOT)':<34}{r['tokens_per_s_per_user']:>14,.1f}",
             f"{'total (b x o / end-to-end)':<34}{r['output_tokens_per_s']:>14,.1f}",
             f"{'per GPU (total / tp x pp)':<34}{r['output_tokens_per_s_per_gpu']:>14,.1f}",
             "", f"{'component':<22}{'prefill':>14}{'%':>7}{'decode step':>14}{'%':>7}"]
    pc, dc = r["prefill_components_s"], r["decode_first_step_components_s"]
    for name in pc:
        lines.append(f"{name:<22}{fmt_s(pc[name]):>14}{100 * pc[name] / r['prefill_s']:>6.1f}%"
                     f"{fmt_s(dc[name]):>14}{100 * dc[name] / r['decode_first_step_s']:>6.1f}%")
    cb, cm = r["critical_batch_size"], r["critical_batch_size_matmuls"]
    lines += ["", f"decode turns compute-bound at batch: weight matmuls {cm if cm else 'never'}, whole "
              f"step {cb if cb else 'never (KV-cache reads grow with b as fast as the math)'}"
              f" (context {r['prompt_tokens']})",
              f"memory per GPU: weights {r['weight_bytes_per_gpu'] / 2**30:,.2f} GiB + KV cache "
              f"{r['kv_cache_bytes_per_gpu'] / 2**30:,.2f} GiB = {r['memory_bytes_per_gpu'] / 2**30:,.2f}"
              f" GiB of {hw['gpu_memory_bytes'] / 2**30:,.2f} GiB"
              + ("" if r["fits_in_memory"] else "  ** DOES NOT FIT **"),
              f"hardware: {hw['peak_flops_per_s'] / 1e12:,.1f} TFLOP/s x {hw['compute_efficiency']:.2f}, "
              f"{hw['memory_bandwidth_bytes_per_s'] / 1e9:,.0f} GB/s x {hw['memory_efficiency']:.2f}, "
              f"link {hw['link_bytes_per_s'] / 1e9:,.0f} GB/s, tp {r['tensor_parallel_size']} "
              f"pp {r['pipeline_parallel_size']}, w{r['weight_bits']}a{r['activation_bits']} "
              f"kv{r['kv_cache_bits']}" + (f" ({hw['gpu']})" if hw["gpu"] else "")
              + (f", sliding window {r['sliding_window']} on {len(r['sliding_layers'])} of "
                 f"{r['model']['num_layers']} layers" if r["sliding_window"] else ""),
              "convention: " + r["convention"]]
    return "\n".join(lines)


def build_parser():
    parser = OneLineErrorParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_args(parser)
    g = parser.add_argument_group("workload and layout")
    g.add_argument("--batch-size", "-b", type=int, default=1, help="b sequences (default 1)")
    g.add_argument("--prompt-tokens", "--sequence-length", "-s", dest="prompt_tokens", type=int,
                   default=512, help="s prompt tokens per sequence (default 512)")
    g.add_argument("--output-tokens", "-o", type=int, default=128, help="o output tokens (default 128)")
    g.add_argument("--tensor-parallel-size", "-tp", type=int, default=1, help="tp (default 1)")
    g.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1, help="pp (default 1)")
    g.add_argument("--precision", choices=sorted(PRECISIONS), default=None,
                   help="shorthand for the three bit widths (explicit --*-bits win)")
    g.add_argument("--weight-bits", type=int, default=None, help="weight bits (default 16)")
    g.add_argument("--activation-bits", type=int, default=None,
                   help="activation bits; sets the compute precision (default 16)")
    g.add_argument("--kv-cache-bits", type=int, default=None, help="KV-cache bits (default: activation bits)")
    g.add_argument("--sliding-window", type=int, default=None,
                   help="window of sliding-window layers (default from the config; 0 turns it off)")
    g = parser.add_argument_group("hardware (explicit flags win over --gpu)")
    g.add_argument("--gpu", default=None, help="accelerator name from hardware.py (e.g. a100, h100)")
    g.add_argument("--peak-tflops", type=finite_float, default=None,
                   help="dense peak TFLOP/s at the activation precision (default 312, A100 bf16)")
    g.add_argument("--memory-bandwidth-gbps", type=finite_float, default=None,
                   help="HBM bandwidth, GB/s (default 2039, A100-80GB)")
    g.add_argument("--gpu-memory-gib", type=finite_float, default=None, help="memory per GPU, GiB (default 80 GB)")
    g.add_argument("--compute-efficiency", type=finite_float, default=None,
                   help=f"fraction of peak FLOP/s reached by matmuls (default {DEFAULT_COMPUTE_EFFICIENCY})")
    g.add_argument("--memory-efficiency", type=finite_float, default=None,
                   help=f"fraction of peak bandwidth reached (default {DEFAULT_MEMORY_EFFICIENCY})")
    g.add_argument("--kernel-overhead-us", type=finite_float, default=None,
                   help=f"fixed cost per kernel, us (default {DEFAULT_KERNEL_OVERHEAD_US}; 0 = pure roofline)")
    g.add_argument("--tp-bandwidth-gbps", type=finite_float, default=None,
                   help="per-GPU link bandwidth for TP/PP, GB/s one direction (default 300, NVLink 3)")
    g.add_argument("--tp-latency-us", type=finite_float, default=None,
                   help=f"fixed cost per all-reduce call, us, before NCCL's per-hop latency "
                        f"(default {DEFAULT_ALLREDUCE_LATENCY_US}, the nccl-tests floor; stacks without "
                        "CUDA graphs pay more in place, see VALIDATION.md)")
    g.add_argument("--request-overhead-ms", type=finite_float, default=0.0,
                   help="fixed cost per request outside the kernels (server, scheduler, tokenizer, "
                        "host sync), ms, added once to TTFT and end-to-end (default 0: kernels only)")
    g.add_argument("--tp-efficiency", type=finite_float, default=None,
                   help=f"fraction of link bandwidth reached (default {DEFAULT_ALLREDUCE_EFFICIENCY})")
    parser.add_argument("--json", action="store_true", help="print the result dict as JSON")
    return parser


def validate(args, parser, spec):
    """One-line errors (exit 2) for values the model cannot take."""
    for name in ("batch_size", "prompt_tokens", "output_tokens", "tensor_parallel_size",
                 "pipeline_parallel_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    for name in ("weight_bits", "activation_bits", "kv_cache_bits"):
        if getattr(args, name) not in ALLOWED_BITS:
            parser.error(f"--{name.replace('_', '-')} must be one of {ALLOWED_BITS}, got {getattr(args, name)}")
    for name in ("compute_efficiency", "memory_efficiency", "tp_efficiency"):
        v = getattr(args, name)
        if v is not None and not 0 < v <= 1:
            parser.error(f"--{name.replace('_', '-')} must be in (0, 1], got {v}")
    for name in ("peak_tflops", "memory_bandwidth_gbps", "gpu_memory_gib", "tp_bandwidth_gbps"):
        v = getattr(args, name)
        if v is not None and not (v > 0 and math.isfinite(v)):
            parser.error(f"--{name.replace('_', '-')} must be positive, got {v}")
    for name in ("kernel_overhead_us", "tp_latency_us", "request_overhead_ms"):
        v = getattr(args, name)
        if v is not None and not (v >= 0 and math.isfinite(v)):
            parser.error(f"--{name.replace('_', '-')} must not be negative, got {v}")
    if args.sliding_window is not None and args.sliding_window < 0:
        parser.error(f"--sliding-window must not be negative (0 turns it off), got {args.sliding_window}")
    tp, pp = args.tensor_parallel_size, args.pipeline_parallel_size
    a, kv = spec["num_attention_heads"], spec["num_kv_heads"]
    if a % tp:
        parser.error(f"--num-attention-heads {a} is not divisible by --tensor-parallel-size {tp}")
    if not spec.get("kv_lora_rank") and kv % tp and tp % kv:
        parser.error(f"kv heads {kv} and --tensor-parallel-size {tp}: one must divide the other")
    if pp > spec["num_layers"]:
        parser.error(f"--pipeline-parallel-size {pp} is larger than --num-layers {spec['num_layers']}")


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.hf_model_name_or_path == "":  # resolve_model_spec would read '' as "no config"
        parser.error("--hf_model_name_or_path is empty: give a folder with config.json, a "
                     "config.json path or a hub id")
    try:
        spec, notes = resolve_model_spec(args, defaults={"num_experts": 8})
    except ValueError as exc:
        parser.error(str(exc))
    wb, abits, kvb = PRECISIONS[args.precision] if args.precision else (16, 16, None)
    args.weight_bits = wb if args.weight_bits is None else args.weight_bits
    args.activation_bits = abits if args.activation_bits is None else args.activation_bits
    if args.kv_cache_bits is None:
        args.kv_cache_bits = kvb if kvb is not None else max(args.activation_bits, 8)
    validate(args, parser, spec)
    hw, hw_notes = resolve_hardware(args, parser)
    # the window is not in the model spec: read it from the raw config, as calc_transformer_mem does
    L = spec["num_layers"]
    try:
        cfg = load_hf_config(args.hf_model_name_or_path) if args.hf_model_name_or_path else {}
    except ValueError as exc:
        parser.error(str(exc))
    win, win_layers = sliding_window_from_config(cfg, L) if cfg else (None, [])
    if args.sliding_window is not None:
        win = args.sliding_window or None
        win_layers = win_layers if (win and win_layers) else (list(range(L)) if win else [])
    win_layers = [i for i in win_layers if i < L] if win else []
    win = win if win_layers else None
    swa = dict(window=win, num_sliding_layers=len(win_layers))
    for note in notes + hw_notes:
        print(f"note: {note}", file=sys.stderr)

    b, s, o = args.batch_size, args.prompt_tokens, args.output_tokens
    tp, pp = args.tensor_parallel_size, args.pipeline_parallel_size
    bits = dict(w_bits=args.weight_bits, a_bits=args.activation_bits, kv_bits=args.kv_cache_bits)
    pre = forward_pass(spec, hw, tp=tp, pp=pp, batch=b, new_tokens=s, context_before=0,
                       absorbed=False, **bits, **swa)
    first = forward_pass(spec, hw, tp=tp, pp=pp, batch=b, new_tokens=1, context_before=s,
                         absorbed=True, **bits, **swa)
    last = forward_pass(spec, hw, tp=tp, pp=pp, batch=b, new_tokens=1,
                        context_before=s + max(o - 2, 0), absorbed=True, **bits, **swa)
    dec_total = decode_total_s(spec, hw, tp=tp, pp=pp, batch=b, prompt_tokens=s, output_tokens=o,
                               **bits, **swa)
    tpot = dec_total / (o - 1) if o > 1 else first["time_s"]
    req_s = args.request_overhead_ms * 1e-3
    ttft = req_s + pre["time_s"]
    total = ttft + dec_total
    crit = critical_batch(spec, hw, tp=tp, pp=pp, context=s, matmuls_only=False, **bits, **swa)
    crit_mm = critical_batch(spec, hw, tp=tp, pp=pp, context=s, matmuls_only=True, **bits, **swa)
    w_bytes = weight_bytes_per_gpu(spec, tp=tp, pp=pp, w_bits=args.weight_bits)
    kv_bytes = kv_cache_bytes_per_gpu(spec, tp=tp, pp=pp, batch=b, context=s + o,
                                      kv_bits=args.kv_cache_bits, window=win,
                                      sliding_layers=set(win_layers))
    mem = w_bytes + kv_bytes
    fits = mem <= hw["gpu_memory_bytes"]
    if not fits:
        print(f"warning: weights {w_bytes / 2**30:.2f} GiB + KV cache {kv_bytes / 2**30:.2f} GiB per GPU "
              f"exceed its {hw['gpu_memory_bytes'] / 2**30:.2f} GiB; raise -tp/-pp or cut bits, b, s+o",
              file=sys.stderr)
    res = {
        "model": spec, "batch_size": b, "prompt_tokens": s, "output_tokens": o,
        "tensor_parallel_size": tp, "pipeline_parallel_size": pp, "num_gpus": tp * pp,
        "weight_bits": args.weight_bits, "activation_bits": args.activation_bits,
        "kv_cache_bits": args.kv_cache_bits, "sliding_window": win, "sliding_layers": win_layers,
        "hardware": hw,
        "prefill_s": pre["time_s"], "ttft_s": ttft, "request_overhead_s": req_s, "prefill_bound": pre["bound"],
        "prefill_components_s": pre["components_s"], "prefill_flops_per_gpu": pre["flops"],
        "prefill_bytes_per_gpu": pre["bytes"],
        "decode_per_token_s": tpot, "decode_first_step_s": first["time_s"],
        "decode_last_step_s": last["time_s"] if o > 1 else first["time_s"],
        "decode_bound": first["bound"], "decode_first_step_components_s": first["components_s"],
        "decode_step_flops_per_gpu": first["flops"], "decode_step_bytes_per_gpu": first["bytes"],
        "decode_total_s": dec_total, "total_s": total,
        "output_tokens_per_s": b * o / total,
        "output_tokens_per_s_per_gpu": b * o / total / (tp * pp),
        "tokens_per_s_per_user": 1.0 / tpot,
        "critical_batch_size": crit, "critical_batch_size_matmuls": crit_mm,
        "weight_bytes_per_gpu": w_bytes, "kv_cache_bytes_per_gpu": kv_bytes,
        "memory_bytes_per_gpu": mem, "fits_in_memory": fits,
        "convention": "TTFT = one prefill pass over the prompt (the first token comes from it); "
                      "o-1 decode steps, each reading every weight shard and the KV cache; per-op "
                      "roofline + fixed per-kernel overhead; TP ring all-reduce x2 per layer; PP "
                      "stages sequential, one batch in flight; memory per GPU on the most-loaded "
                      "stage (weights + KV at s+o, no activations/workspace)"
                      + (f"; sliding-window attention on {len(win_layers)} of {L} layers: each "
                         f"query attends to at most w = {win} keys, so those layers read and keep "
                         f"at most w tokens per sequence" if win else ""),
    }
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
