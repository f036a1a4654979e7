"""Inference latency of a decoder-only transformer from first principles: time to first token
(prefill), time per output token (decode), end-to-end latency and tokens/s per user, per GPU and
in total, for a batch, a prompt and an output length on given hardware and a TP x PP layout.

Model: a roofline per operation. Every matmul, attention step, elementwise pass and the output head
costs max(FLOPs / (peak FLOP/s x compute efficiency), bytes moved / (memory bandwidth x memory
efficiency)) plus a fixed per-kernel overhead, layer by layer; weight matmuls turn the corner
softly, (t_math^p + t_mem^p)^(1/p) with p = ROOFLINE_CORNER_P (fitted to DeepGEMM's measured FP8
GEMMs, tools/fit_roofline_corner.py), so near the ridge they run below both roofs; prefill runs
the prompt in one pass (compute-bound at length), each decode step reads every weight shard and the whole KV cache once.
Tensor parallelism (tp) adds an all-reduce of the activations after each attention and MLP block,
two per ordinary layer (ring, alpha-beta; the same model as calc_comm.py); pipeline parallelism
(pp) runs the stages one after the other for a batch and adds pp-1 point-to-point hand-offs; a
static batch is one batch in flight, continuous batching keeps up to pp micro-batches in flight.

Symbols: b batch (concurrent sequences run as one batch), s prompt tokens, o output tokens, c
tokens cached before a decode step, h hidden, L layers, a query heads, kv key/value heads, d head
dim, f MLP width, V vocab, E routed experts, k experts per token, Z zero-computation experts, w
sliding window, C attention chunk, tp/pp tensor/pipeline parallel sizes.

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
  * The model is the package's list of layers (llmcalc.model); costs are summed over its distinct layer
    kinds (layer_groups), each with its own attention (MHA/GQA/MQA or MLA; full, sliding or
    chunked span; an optional DSA lightning indexer; two attentions in LongCat-Flash) and MLP
    (dense or MoE, per layer: DeepSeek's leading dense layers stay dense).
  * Attention: causal prefill does the block's query_key_pairs(causal) pairs: s(s+1)/2 for full
    layers, sum over i = 1..s of min(i, w) for sliding ones, each query within its chunk for
    chunked ones, at most top-k keys per query for the DSA core (whose indexer scores all s(s+1)/2);
    4 d FLOPs per pair and head. A decode step at c cached tokens attends to decode_keys_read at
    c + 1 (its own key included) and reads the rest from the cache once (FlashAttention/
    PagedAttention-style, no recompute): c (full), min(c, w - 1) (sliding: what HF's sliding
    cache holds before the step), c mod C (chunked: 0 .. C-1 in turn), min(c, k - 1) for the DSA
    core, and all c keys of the indexer's own d_I-wide cache. GQA/MQA store kv heads (replicated
    when kv < tp); MLA stores the latent (r_kv + d_rope) per token, replicated on every TP rank,
    and decodes in the absorbed form (DeepSeek-V2 sec. 2.1.2); the indexer is replicated on every
    rank (vLLM/SGLang build it from ReplicatedLinear). Layers that reuse another layer's K/V
    (Gemma 4) read it but cache nothing. The memory check keeps cached_tokens per layer (the
    block's rule: at most the window on sliding layers, a rolling buffer, Mistral 7B sec. 2) at
    context s + o. Which layers slide, chunk or index is the config reader's (layer_types first,
    then each family's rule); --sliding-window W sets the sliding layers' window (every layer when
    the model comes from flags), 0 turns sliding off.
  * MoE, on the layers the config makes MoE: by default the experts are tensor-sharded with the
    rest of the layer. -ep (= tp x dp) spreads whole experts over the GPUs of a stage: two
    all-to-alls per MoE block (dispatch at the activation bits, combine at 16; k copies per token,
    as DeepEP's low-latency kernels and NCCL's all-to-all send them), the busiest GPU's expert work
    scaled by uniform routing's balls-into-bins maximum (Raab & Steger 1998; --ep-imbalance sets
    it). -dp runs dp groups of tp GPUs with their own requests and a copy of the attention
    (data-parallel attention), the MoE layers taking every group's tokens.
    A decode step reads the weights of the distinct experts its n = b tokens touch: E (1 - (1 -
    k/E)^n) of them in expectation under uniform independent routing (with Z zero-computation
    experts, LongCat-Flash: E (1 - (1 - k/(E+Z))^n)); FLOPs follow the k (k E / (E + Z)) real
    experts per token.
  * The logits are computed for the last position only (b rows per pass; a speculative
    verification adds K rows per sequence).
  * --serving-stack (default vllm, the open-source engine most deployments run) sets what the
    stack adds to the kernels: launch gap per kernel, the all-reduce kernel (NCCL ring, or a
    custom one-shot kernel: fixed cost + bytes at its measured rate), host time per engine step,
    a fixed cost per request, the tokens per step (chunked prefill) and the memory share of the KV
    pool; SERVING_STACKS names the source of each value, `kernels` is the kernels-only model.
  * --concurrency C (or --request-rate R): continuous batching in steady state (steady_state): a
    step runs every decode and prompt chunks up to the stack's token budget (Sarathi-Serve's
    chunked prefill); Little's law ties C, the cycle of a request (its prompt steps, any waiting,
    o - 1 decodes) and the throughput; TPOT is the mean step a decoding request shares with the
    others, TTFT its own prompt steps plus the waiting. The KV pool (memory share less weights)
    caps C: past it, exit 2 with what fits. A fluid mean, no simulation of the randomness.
  * --num-requests N with --request-rate R (Poisson or evenly spaced arrivals, or inf: all at
    once) or -c C (C clients, each sending when its last request returns): the finite benchmark
    run a client such as vLLM's benchmark_serving.py, trtllm-bench or Triton's measures, stepped
    through (simulate_benchmark): the same scheduler and step costs, with the ramp-up, the queue
    past what the engine sustains (no steady state needed) and the drain; mean, median and p99
    TTFT/TPOT/end-to-end, and throughput over the run's duration as those clients report it.
    Admission reserves a request's whole cache (TensorRT-LLM's GUARANTEED_NO_EVICT).
  * Mixes (workload.py, simulate_requests): --dataset random (vLLM's RandomDataset: uniform within
    --random-range-ratio of --random-input-len / --random-output-len), --dataset sharegpt (a
    lognormal mix with the means of vLLM's ShareGPT runs, sigma 1.0 assumed) or --trace FILE (JSON
    lines or CSV: arrival_s, input_tokens, output_tokens, optional prefix_id / prefix_tokens) run
    request by request, the pool counted in tokens; mean, median, p90 and p99 over the mix.
    --prefix-tokens N: the prompt's first N tokens shared and, once computed, cached (prefix
    caching): a request that finds them computes only the rest over that context; cached prefixes
    hold pool tokens until evicted, least recently used first; --prefix-hit-rate the share that
    finds them. With -b the prefix's cache is taken as there (prefill of s - N tokens).
    --host-kv-cache-gib G (offload.py): evicted prefixes move to a host tier and come back over the
    host link (hardware.py's PCIe x16 or NVLink-C2C, at 0.70 of line rate: LMCache's measured
    reload) on a hit.
  * --speculative-tokens K (speculative.py): each decoding sequence verifies K draft tokens in one
    pass of K + 1 and keeps 1 + a_1 + a_1 a_2 + ... of them (Leviathan et al. 2023); the draft
    costs K passes of the model's MTP layer (mtp, read from num_nextn_predict_layers), of an
    EAGLE head (one layer of the target's shape), of a --draft-model, or nothing (ngram); TPOT =
    (verification + draft) / tokens per step. --acceptance-rate defaults for mtp (0.875,
    DeepSeek-V3's 85-90%) and eagle (0.75, EAGLE-3's acceptance lengths in vLLM issue #20780).
    A decode's context grows one token per step (not K): stated.
  * --search: every layout of --num-gpus GPUs (tp, pp, dp attention, ep, replicas) and
    concurrency at the fewest bits the GPU runs (or the --precision given), (1, 2, 4, ... up to the KV pool) under --max-ttft-ms / --max-tpot-ms, the Pareto
    front of tokens/s per GPU against tokens/s per user; --disaggregated adds prefill and decode
    pools (DistServe: decode-only steps, prefill batches queued M/D/1, the KV cache sent between
    the pools), split over the budget in whole replicas.
  * Throughput per GPU divides by tp x dp x pp. A static batch (-b) runs one batch through the
    pipeline stages in turn (the lower bound of pipelined serving); under --concurrency the requests
    split over min(pp, C) micro-batches in flight (vLLM's virtual engines), one per stage at a time.

Default efficiencies (state and override them; --gpu uses hardware.py's measured figures):
  compute 0.70 for 16-bit matmuls: the maximum achievable matmul FLOP/s measured by Bekman's
    mamf-finder (ML Engineering book) is 271 TFLOP/s on A100 SXM (0.87 of 312) and 795 on H100
    SXM bf16 (0.80); the GEMM shapes of a forward pass sit below those best shapes. Below 16 bits
    the same measurements reach a smaller fraction of the (doubled) peak: H100 fp8 1403 of 1979
    (0.71), 0.883 of the bf16 fraction (GH200: 0.927), so 8- and 4-bit matmuls default to
    0.70 x 0.883 = 0.62 (4-bit: no measurement; the 8-bit ratio is assumed). --gpu takes the
    table's measured MAMF for the dtype and keeps the same gap below it as the default keeps below
    the A100's (x 0.805 = 0.70 / 0.869), so --gpu a100 equals the default. FP4 matmuls then take
    x 0.696 more: at 4096^3 Azure's cuBLASLt run on a GB200 reaches 0.679 of its best FP4 rate
    but 0.975 of its best FP8 one (FP4 needs larger shapes to fill the GPU), so the B200 runs
    FP4 at 3,870 TFLOP/s (flashinfer measured 3,371-3,841 NVFP4 at 1024x7168x4608; not used to
    set it). Attention math runs at the 16-bit rate and efficiency whatever the matmul precision.
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
  all-reduce and the other collectives: calc_comm.py's model, copied as the shared collectives
    block (8.9 us per call, 0.6/3.4 us per hop LL/Simple, LL at 1/4 bandwidth, 0.80 of the NVLink
    line rate). Inside a node NCCL's ring (or the stack's custom all-reduce); a group wider than a
    node (--gpu's scale-up domain, --gpus-per-node) crosses the network at the NIC per GPU x 0.94
    with NCCL's fastest algorithm (ring, tree, two-level): costed, not refused.
  Hardware without --gpu: the default accelerator every script shares, hardware.py's h100-sxm
    record (NVIDIA H100 SXM5 80GB: 989.4 TFLOP/s dense bf16, 3.35 TB/s, 81,559 MiB, NVLink 450 GB/s
    per direction, 8 per node, a 400 Gb/s NIC per GPU), exactly what --gpu h100-sxm reads.

Examples:
  python calc_inference_latency.py --hf_model_name_or_path path/to/Llama-2-7b/config.json -s 2048 -o 1
  python calc_inference_latency.py -l 96 -hs 12288 -a 96 -v 51200 -tp 8 -s 512 -o 32   # GPT-175B
  python calc_inference_latency.py --hf_model_name_or_path llama-3-8b.json --gpu h100 --precision fp8 -b 64
  python calc_inference_latency.py --hf_model_name_or_path mixtral.json --weight-bits 4 -b 16 --json
  python calc_inference_latency.py --hf_model_name_or_path llama-3.1-8b.json --gpu h100 -s 467 -o 256 -c 32
  python calc_inference_latency.py --hf_model_name_or_path llama-3.1-8b.json --gpu h100 --request-rate 8 \\
      --serving-stack tensorrt-llm
  python calc_inference_latency.py --hf_model_name_or_path llama-3.1-8b.json --gpu h100 -s 467 -o 256 \\
      --request-rate 32 --num-requests 500 --serving-stack tensorrt-llm   # a benchmark run past capacity
  python calc_inference_latency.py --hf_model_name_or_path llama-3.1-8b.json --gpu h100 --dataset random \\
      --random-range-ratio 0.5 --num-requests 1000 --request-rate 8 --prefix-tokens 512
  python calc_inference_latency.py --hf_model_name_or_path llama-3.1-8b.json --gpu h100 --trace requests.jsonl
  python calc_inference_latency.py --hf_model_name_or_path deepseek-v3.json --gpu h800 --precision fp8 -tp 1 \\
      -dp 32 -ep 32 -b 2048 --speculative-tokens 1   # MTP at DeepSeek's 85-90% acceptance
  python calc_inference_latency.py -l 80 -hs 8192 -a 64 --num-kv-heads 8 -tp 4 -pp 2 --peak-tflops 989 \\
      --memory-bandwidth-gbps 3350 --gpu-memory-gib 80
  python calc_inference_latency.py --hf_model_name_or_path llama-3.1-8b.json --gpu h100 --search --num-gpus 8 \\
      -s 2000 -o 200 --max-ttft-ms 300 --max-tpot-ms 20 --disaggregated
  python calc_inference_latency.py --hf_model_name_or_path deepseek-v3.json --gpu h100 -tp 1 -dp 16 -ep 16 \\
      --serving-stack sglang -c 1024 -s 2000 -o 200

References:
  Williams, Waterman, Patterson 2009, "Roofline" (CACM 52(4)).
  Pope et al. 2022, "Efficiently Scaling Transformer Inference", sec. 2-3 (prefill/decode costs).
  Shoeybi et al. 2019, "Megatron-LM", sec. 3 (two all-reduces per layer under TP).
  Dao et al. 2022, "FlashAttention" (attention reads Q, K, V once); Kwon et al. 2023, "vLLM".
  DeepSeek-AI 2024, "DeepSeek-V2", sec. 2.1 (MLA cache); Patarasuk & Yuan 2009 (ring all-reduce).
  Jiang et al. 2023, "Mistral 7B", sec. 2 (sliding window, rolling buffer cache); Gemma Team 2024,
  "Gemma 2", sec. 2 (local sliding-window and global attention on alternating layers); Meta 2025,
  Llama 4 (chunked attention: transformers' Llama4TextConfig attention_chunk_size); DeepSeek-AI 2025, "DeepSeek-V3.2", sec. 2.1
  (lightning indexer, top-k sparse attention); Meituan 2025, "LongCat-Flash", sec. 2.1 (zero-
  computation experts).
  Zhong et al. 2024, "DistServe" (disaggregated prefill and decode); Kleinrock 1975, "Queueing
  Systems" vol. 1 (M/D/1 waiting, residual service time); Raab & Steger 1998, "Balls into Bins";
  Lepikhin et al. 2021, "GShard" (expert all-to-all); DeepSeek-AI, DeepEP README (dispatch/combine).
  Agrawal et al. 2024, "Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve"
  (chunked prefill); Little 1961 (L = lambda W); Wolff 1982 (Poisson arrivals see time averages).
  Validation: FasterTransformer docs/gpt_guide.md tables; TensorRT-LLM docs/source/performance.md
  and performance/perf-overview.md; vLLM's CI performance dashboard; NVIDIA NIM benchmarks.
"""

import math
import sys

from ..accelerator import default_accelerator
from ..cli import (OneLineErrorParser, add_model_args, add_output_args,
    bounded_int, calc_errors, check_ranges, finite_float, parse_tool_args, print_result,
    ranges_epilog, run_tool, brief_number, print_brief, with_warnings)
from .gpu import accelerator_record
from ..model.kinds import attention_kind, layer_groups, mlp_kind
from ..model.spec import resolve_model_spec, spec_summary
from ..precision import NVFP4_BITS, PRECISIONS
from ..serve.engine import layout_problem, serve_steady_state
from .latency_capacity import add_capacity_args, run_capacity, validate_capacity
from .latency_mix import add_mix_args, validate_speculative, validate_workload
from .latency_report import (attention_convention, format_report, layout_text, mode_text,
    serving_mode_text)
from ..serve.forward import forward_pass
from ..serve.memory import (cache_bytes_per_gpu, layer_cache_bytes, layer_weight_bytes,
    weight_bytes_per_gpu)
from ..serve.stacks import (ALLOWED_BITS, DEFAULT_ALLREDUCE_EFFICIENCY,
    DEFAULT_ALLREDUCE_LATENCY_US, DEFAULT_COMPUTE_EFFICIENCY, DEFAULT_KERNEL_OVERHEAD_US,
    DEFAULT_MEMORY_EFFICIENCY, DEFAULT_SERVING_STACK, FLAG_RANGES, FP4_SHAPE_PENALTY,
    LOW_BIT_EFFICIENCY_RATIO, ROOFLINE_CORNER_P, SERVING_STACKS, HardwareFlags, resolve_hardware)
from ..serve.request import ServingRequest
from ..serve.simulate import SHOW_PROGRESS
from ..serve.speculative import draft_weight_bytes, expected_verification_steps
from ..serve.steady import critical_batch, decode_total_s, mixed_step


# -s and -o when not given (a trace or a --dataset gives each request its own lengths instead)
DEFAULT_PROMPT_TOKENS = 512
DEFAULT_OUTPUT_TOKENS = 128


def rate_float(text):
    """argparse type for --request-rate: a finite number, or inf (all requests at once)."""
    if str(text).strip().lower() in ("inf", "infinity"):
        return math.inf
    return finite_float(text)


def build_parser():
    parser = OneLineErrorParser(description=__doc__)
    add_model_args(parser)  # includes --sliding-window (the window of the sliding layers; 0 = off)
    g = parser.add_argument_group("workload and layout")
    g.add_argument("--batch-size", "-b", type=bounded_int, default=None,
                   help="b concurrent sequences decoded together as one batch (default 1)")
    g.add_argument("--prompt-tokens", "--sequence-length", "-s", dest="prompt_tokens", type=bounded_int,
                   default=None,
                   help=f"s prompt tokens per sequence (default {DEFAULT_PROMPT_TOKENS})")
    g.add_argument("--output-tokens", "-o", type=bounded_int, default=None,
                   help=f"o output tokens (default {DEFAULT_OUTPUT_TOKENS}; 0 with -b: the "
                        "prompt's pass alone, nothing decoded)")
    g.add_argument("--tensor-parallel-size", "-tp", type=bounded_int, default=1,
                   help="tp GPUs that split every layer's weights (default 1)")
    g.add_argument("--pipeline-parallel-size", "-pp", type=bounded_int, default=1,
                   help="pp stages of consecutive layers (default 1)")
    g.add_argument("--data-parallel-size", "-dp", type=bounded_int, default=1,
                   help="dp groups of tp GPUs per stage, each with its own requests and a copy of the "
                        "attention (data-parallel attention; MoE layers take every group's tokens; "
                        "default 1)")
    g.add_argument("--expert-parallel-size", "-ep", "--expert-parallelism", type=bounded_int, default=1,
                   help="1: routed experts split over the tp x dp GPUs like the rest; tp x dp: whole "
                        "experts spread over them, tokens sent by all-to-all (default 1)")
    g.add_argument("--ep-imbalance", type=finite_float, default=None,
                   help="busiest expert-parallel rank's load over the mean (default: uniform routing's "
                        "balls-into-bins figure)")
    g.add_argument("--precision", choices=sorted(PRECISIONS), default=None,
                   help="shorthand for the three bit widths (explicit --*-bits win); fp4 weights are "
                        "stored as NVFP4, 4.5 bits with their scales")
    g.add_argument("--weight-bits", type=bounded_int, default=None, help="weight bits (default 16)")
    g.add_argument("--activation-bits", type=bounded_int, default=None,
                   help="activation bits; sets the compute precision (default 16)")
    g.add_argument("--kv-cache-bits", type=bounded_int, default=None, help="KV-cache bits (default: activation bits)")
    g.add_argument("--state-bits", type=bounded_int, default=32,
                   help="bits per element of a linear-attention layer's recurrent state (default 32: fp32, as "
                   "transformers' cache and flash-linear-attention keep it; its conv window is at the "
                   "activation bits)")
    g = parser.add_argument_group("hardware (explicit flags win over --gpu)")
    g.add_argument("--gpu", default=None,
                   help="accelerator name from hardware.py (e.g. a100, h200; default h100-sxm)")
    g.add_argument("--peak-tflops", type=finite_float, default=None,
                   help="dense peak TFLOP/s at the activation precision (default: --gpu's)")
    g.add_argument("--memory-bandwidth-gbps", "--hbm-bandwidth-GBps", type=finite_float, default=None,
                   help="HBM bandwidth, GB/s (default: --gpu's)")
    g.add_argument("--gpu-memory-gib", type=finite_float, default=None, help="memory per GPU, GiB (default: --gpu's usable memory)")
    g.add_argument("--compute-efficiency", type=finite_float, default=None,
                   help=f"fraction of peak FLOP/s reached by matmuls (default {DEFAULT_COMPUTE_EFFICIENCY} at 16 bits, "
                        f"{DEFAULT_COMPUTE_EFFICIENCY * LOW_BIT_EFFICIENCY_RATIO:.2f} at 8, "
                        f"{DEFAULT_COMPUTE_EFFICIENCY * LOW_BIT_EFFICIENCY_RATIO * FP4_SHAPE_PENALTY:.2f} at 4; "
                        "--gpu: from its measured matmul rate)")
    g.add_argument("--memory-efficiency", type=finite_float, default=None,
                   help=f"fraction of peak bandwidth reached (default {DEFAULT_MEMORY_EFFICIENCY})")
    g.add_argument("--kernel-overhead-us", type=finite_float, default=None,
                   help=f"fixed cost per kernel, us (default {DEFAULT_KERNEL_OVERHEAD_US}; 0 = pure roofline)")
    g.add_argument("--tp-bandwidth-gbps", "--intra-node-bw-GBps", type=finite_float, default=None,
                   help="per-GPU link bandwidth for TP/PP, GB/s one direction (default: --gpu's scale-up link)")
    g.add_argument("--gpus-per-node", type=bounded_int, default=None,
                   help="GPUs per scale-up (NVLink) domain; collectives past it cross the network "
                        "(default: --gpu's domain)")
    g.add_argument("--scale-out-gbps", "--inter-node-bw-GBps", type=finite_float, default=None,
                   help="network bandwidth per GPU beyond the node, GB/s one direction (default: --gpu's NIC)")
    g.add_argument("--tp-latency-us", type=finite_float, default=None,
                   help=f"fixed cost per all-reduce call, us, before NCCL's per-hop latency "
                        f"(default {DEFAULT_ALLREDUCE_LATENCY_US}, the nccl-tests floor; stacks without "
                        "CUDA graphs pay more in place, see VALIDATION.md)")
    g.add_argument("--request-overhead-ms", type=finite_float, default=None,
                   help="fixed cost per request outside the kernels (server, tokenizer, engine call), "
                        "ms, added once to TTFT and end-to-end (default: the serving stack's)")
    g.add_argument("--tp-efficiency", type=finite_float, default=None,
                   help=f"fraction of link bandwidth reached (default {DEFAULT_ALLREDUCE_EFFICIENCY})")
    g = parser.add_argument_group("serving stack and continuous batching")
    g.add_argument("--serving-stack", choices=sorted(SERVING_STACKS), default=DEFAULT_SERVING_STACK,
                   help=f"preset of what the serving stack adds to the kernels (launch gaps, all-reduce "
                        f"and per-step costs, chunk size, memory share; default {DEFAULT_SERVING_STACK}; "
                        "the flags below and above override its values)")
    g.add_argument("--concurrency", "-c", "--max-concurrency", type=bounded_int, default=None,
                   help="C requests in flight under continuous batching (steady state, chunked "
                        "prefill) instead of one static batch of -b (--max-concurrency: vllm "
                        "bench serve's spelling, whose default rate is inf: its clients are this "
                        "closed loop)")
    g.add_argument("--request-rate", type=rate_float, default=None,
                   help="requests per second arriving (open loop): the concurrency that rate keeps "
                        "in flight, instead of -c; inf (with --num-requests) sends them all at once")
    g.add_argument("--num-requests", "--num-prompts", type=bounded_int, default=None,
                   help="simulate a finite benchmark run of N requests step by step (ramp-up, queue and "
                        "drain included, throughput over the run's duration, as benchmark clients report "
                        "it) instead of the steady state; with --request-rate or -c")
    g.add_argument("--arrivals", choices=("poisson", "uniform"), default=None,
                   help="--num-requests at a --request-rate: Poisson arrivals (vLLM's benchmark_serving "
                        "default) or evenly spaced (default poisson)")
    g.add_argument("--seed", type=bounded_int, default=None, help="seed of the Poisson arrivals (default 0)")
    g.add_argument("--max-num-batched-tokens", type=bounded_int, default=None,
                   help="tokens per engine step, decodes first, prompt chunks fill the rest (default: "
                        "the stack's)")
    g.add_argument("--max-num-seqs", type=bounded_int, default=None,
                   help="requests the engine runs at once per data-parallel engine (vLLM's max_num_seqs, "
                        "TensorRT-LLM's max_batch_size, SGLang's max_running_requests); more wait in the "
                        "server's queue (default: the stack's)")
    g.add_argument("--step-overhead-ms", type=finite_float, default=None,
                   help="fixed host cost per engine step (scheduling, sampling), ms (default: the stack's)")
    g.add_argument("--queue-past-pool", action="store_true",
                   help="kept for old commands: a --concurrency past what the KV pool holds waits in the "
                        "server's queue (as vLLM, TensorRT-LLM and NIM queue it), now the default")
    g.add_argument("--refuse-past-pool", action="store_true",
                   help="exit 2 when a --concurrency does not fit the KV pool instead of queueing the rest")
    g.add_argument("--gpu-memory-utilization", type=finite_float, default=None,
                   help="share of GPU memory the engine takes for weights and the KV pool (default: "
                        "the stack's)")
    add_mix_args(parser)
    add_capacity_args(parser)
    g = parser.add_argument_group("search for the serving layout")
    g.add_argument("--search", action="store_true",
                   help="every layout of --num-gpus GPUs (tp, pp, dp attention, ep, replicas), weight and "
                        "KV-cache bits and concurrency that meets --max-ttft-ms and --max-tpot-ms; prints "
                        "the Pareto front of tokens/s per GPU against tokens/s per user")
    g.add_argument("--num-gpus", type=bounded_int, default=8, help="GPU budget for --search (default 8)")
    g.add_argument("--max-ttft-ms", type=finite_float, default=None, help="TTFT target, ms (mean; default none)")
    g.add_argument("--max-tpot-ms", type=finite_float, default=None,
                   help="time-per-output-token target, ms (mean; default none)")
    g.add_argument("--disaggregated", action="store_true",
                   help="also try prefill and decode on separate GPU pools, the KV cache sent between them")
    g.add_argument("--max-replica-gpus", type=bounded_int, default=256,
                   help="largest replica --search builds (default 256; the budget beyond it is filled "
                        "with replicas)")
    g.add_argument("--top", type=bounded_int, default=10, help="rows of the front printed (default 10)")
    g.add_argument("--plot", default=None, metavar="FILE.png",
                   help="draw the front with matplotlib (only if installed)")
    add_output_args(parser)
    add_verbose_arg(parser)
    parser.epilog = lambda: ranges_epilog(parser, FLAG_RANGES)  # built only for --help
    return parser


# What matplotlib's Agg backend writes, by file extension (Figure.savefig's formats).
PLOT_FORMATS = ("png", "svg", "pdf", "jpg", "jpeg", "webp", "eps", "ps", "tif", "tiff")


def check_plot_path(path, parser):
    """--plot's file, checked before any work: a file name (not a folder) with an extension
    matplotlib writes, in a folder that exists and can be written to; one-line exit 2 otherwise."""
    import os  # only --plot needs it
    if not path:
        parser.error("--plot needs a file name (FILE.png, FILE.svg or FILE.pdf)")
    if os.path.isdir(path):
        parser.error(f"--plot {path} is a folder; give a file in it, such as {os.path.join(path, 'front.png')}")
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in PLOT_FORMATS:
        parser.error(f"--plot {path}: give a file name ending .png, .svg or .pdf (matplotlib also writes "
                     f"{', '.join('.' + e for e in PLOT_FORMATS[3:])})")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        parser.error(f"--plot {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        parser.error(f"--plot {path}: {folder if not os.access(folder, os.W_OK) else path} is not writable")


def validate(args, parser, spec, req):
    """One-line errors (exit 2) for values the model cannot take; fills the request's defaults and
    returns the notes on flags that do nothing in this mode."""
    if req.concurrency is not None and req.request_rate is not None:
        parser.error("--concurrency and --request-rate both set the load; give one")
    if req.batch_size is not None and (req.concurrency is not None or req.request_rate is not None):
        parser.error("-b is a static batch; with --concurrency or --request-rate leave it out")
    req.batch_size_given = req.batch_size is not None
    req.batch_size = 1 if req.batch_size is None else req.batch_size
    for name in ("batch_size", "prompt_tokens", "output_tokens", "tensor_parallel_size",
                 "pipeline_parallel_size", "data_parallel_size", "expert_parallel_size"):
        if req[name] < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {req[name]}")
    for name in ("weight_bits", "activation_bits", "kv_cache_bits"):
        if req[name] not in ALLOWED_BITS:
            parser.error(f"--{name.replace('_', '-')} must be one of {ALLOWED_BITS}, got "
                         f"{req[name]}")
    for name in ("peak_tflops", "memory_bandwidth_gbps", "gpu_memory_gib", "tp_bandwidth_gbps"):
        v = getattr(args, name)
        if v is not None and not (v > 0 and math.isfinite(v)):
            parser.error(f"--{name.replace('_', '-')} must be positive, got {v}")
    for name in ("kernel_overhead_us", "tp_latency_us", "request_overhead_ms"):
        v = getattr(args, name)
        if v is not None and not (v >= 0 and math.isfinite(v)):
            parser.error(f"--{name.replace('_', '-')} must not be negative, got {v}")
    # inf sends every request at once; it needs --num-requests (below)
    all_at_once = req.request_rate is not None and math.isinf(req.request_rate)
    check_ranges(args, parser, {k: v for k, v in FLAG_RANGES.items()
                                if not (all_at_once and k == "request_rate")})
    if (req.num_requests is not None and req.concurrency is None and req.request_rate is None
            and not req.trace and args.target_request_rate is None):
        parser.error("--num-requests runs a benchmark at a load; add --request-rate R (or inf) or -c C")
    if req.request_rate is not None and math.isinf(req.request_rate) and req.num_requests is None:
        parser.error("--request-rate inf sends every request at once: add --num-requests N (a steady "
                     "state needs a finite rate)")
    why = layout_problem(spec, tp=req.tensor_parallel_size, pp=req.pipeline_parallel_size,
                         dp=req.data_parallel_size, ep=req.expert_parallel_size)
    if why:
        parser.error(why)
    if args.search:
        if (req.concurrency is not None or req.request_rate is not None or req.batch_size_given
                or req.num_requests is not None):
            parser.error("--search picks the concurrency and the layout itself; leave out -c, --request-rate, "
                         "--num-requests and -b")
        fixed = [f for f, v in (("-tp", req.tensor_parallel_size),
                                ("-pp", req.pipeline_parallel_size),
                                ("-dp", req.data_parallel_size), ("-ep", req.expert_parallel_size))
                 if v != 1]
        if fixed:
            parser.error(f"--search picks the layout itself; leave out {', '.join(fixed)} (--num-gpus sets the budget)")
        for name in ("max_ttft_ms", "max_tpot_ms"):
            v = req[name]
            if v is not None and not v > 0:
                parser.error(f"--{name.replace('_', '-')} must be positive, got {v}")
    elif args.plot or req.disaggregated:
        parser.error(f"{'--plot' if args.plot else '--disaggregated'} belongs to --search; add --search")
    if args.plot is not None:
        check_plot_path(args.plot, parser)
    validate_capacity(args, parser, req)
    validate_workload(args, parser, req)
    validate_speculative(args, parser, spec, req)
    notes = unused_flag_notes(req, search=args.search)
    req.seed = 0 if req.seed is None else req.seed
    req.arrivals = req.arrivals or "poisson"
    return notes


def unused_flag_notes(req, *, search):
    """Flags that do nothing in this mode: said, not dropped silently (notes on stderr)."""
    flag_notes = []
    unused = [f for f, v in (("--seed", req.seed), ("--arrivals", req.arrivals)) if v is not None]
    if req.capacity and req.arrivals is not None:
        flag_notes.append("--arrivals: a capacity plan sizes each layout on Poisson arrivals (its "
                          "convention)")
    # a trace's arrivals are drawn only at a --request-rate (or in a capacity plan's runs);
    # --seed also draws a hit rate's
    if req.trace:
        unused = [f for f in unused if req.request_rate is None and not req.capacity
                  and not (f == "--seed" and req.prefix_hit_rate is not None)]
        if unused:
            flag_notes.append(f"{' and '.join(unused)} draw{'s' if len(unused) == 1 else ''} "
                              "arrivals at a --request-rate; without it the trace's requests come "
                              "at their own times (or from the -c clients)")
    elif unused and req.num_requests is None:
        flag_notes.append(f"{' and '.join(unused)} draw{'s' if len(unused) == 1 else ''} the "
                          "arrivals of a --num-requests benchmark; without it there are none to "
                          "draw")
    targets = [f for f, v in (("--max-ttft-ms", req.max_ttft_ms),
                              ("--max-tpot-ms", req.max_tpot_ms)) if v is not None]
    if targets and not search and not req.capacity:
        flag_notes.append(f"{' and '.join(targets)} "
                          f"{'is a target' if len(targets) == 1 else 'are targets'} of --search or "
                          "a capacity plan (--target-request-rate R); nothing here is held to "
                          f"{'it' if len(targets) == 1 else 'them'}")
    return flag_notes


def resolve_lengths(args, parser, req):
    """-s and -o: the defaults filled (req.lengths_given says which were given), refused beside a
    trace or a --dataset (which give each request its own lengths), -o 0 (the prompt's pass
    alone) answered as the pass that yields the first token with -b and refused under a load (a
    served request generates at least one token: vLLM's max_tokens >= 1), --prefix-tokens 0 read
    as no shared prefix. args is left as parsed."""
    given = (args.prompt_tokens is not None, args.output_tokens is not None)
    req.lengths_given = given
    if args.trace is not None and not args.trace.strip():
        parser.error("--trace is empty: give a trace file (.jsonl or .csv)")
    if args.gpu is not None and not args.gpu.strip():  # also before a capacity plan's GPU list
        parser.error("--gpu is empty: give a GPU name from hardware.py (e.g. h100, h200), or "
                     "leave it out for the default h100-sxm")
    mix = "--trace" if args.trace else f"--dataset {args.dataset}" if args.dataset else None
    if mix and any(given):
        flags = " and ".join(f for f, g in zip(("-s", "-o"), given) if g)
        own = ("its rows' input_tokens and output_tokens" if args.trace else
               "--random-input-len and --random-output-len" if args.dataset == "random"
               else "its own drawn lengths")
        parser.error(f"{flags} would do nothing beside {mix}: the lengths are {own}; leave "
                     f"{'them' if all(given) else 'it'} out")
    if args.prefix_tokens is not None and args.trace:
        parser.error("--prefix-tokens would do nothing beside --trace: a trace shares prefixes "
                     "row by row (its prefix_id and prefix_tokens columns); leave it out")
    req.prompt_tokens = DEFAULT_PROMPT_TOKENS if args.prompt_tokens is None else args.prompt_tokens
    req.output_tokens = DEFAULT_OUTPUT_TOKENS if args.output_tokens is None else args.output_tokens
    if args.prefix_tokens == 0:
        req.prefix_tokens = None  # nothing shared
    if args.output_tokens == 0:
        load = [f for f, v in (("-c", args.concurrency), ("--request-rate", args.request_rate),
                               ("--num-requests", args.num_requests), ("--search", args.search),
                               ("--target-request-rate", args.target_request_rate))
                if v not in (None, False)]
        if load:
            parser.error(f"-o 0 under {load[0]}: a served request generates at least one token "
                         "(vLLM's max_tokens >= 1); give -o 1 or more, or ask for the prompt's "
                         "pass alone with -b")
        req.output_tokens = 1  # the prompt's pass; its logits are the first token's


def check_trace_rows(args, parser, req):
    """The flags that need a trace's rows, checked once they are read: --prefix-hit-rate and the
    host tier need rows sharing a prefix_id, --num-requests at most the trace's rows."""
    if not req.trace:
        return
    n = len(req.requests)
    if args.num_requests is not None and args.num_requests > req.trace_rows:
        parser.error(f"--num-requests {args.num_requests:,} is more than the trace's "
                     f"{req.trace_rows:,} requests; leave it out (every row is served) or give "
                     f"at most {req.trace_rows:,}")
    if any(r[3] is not None for r in req.requests) or n == 0:
        return
    flags = [f for f, v in (("--prefix-hit-rate", args.prefix_hit_rate),
                            ("--host-kv-cache-gib", args.host_kv_cache_gib)) if v is not None]
    if flags:
        parser.error(f"{' and '.join(flags)} would do nothing: no row of --trace {req.trace} has "
                     "a prefix_id (the rows that share a cached prefix)")


def resolve_request(args, parser, spec):
    """The serving request from the flags (args is left as parsed): the bits (--precision, then
    each --*-bits), the checks (validate), a mix drawn or read, its means standing for s and o in
    the breakdown and the memory check. Returns (ServingRequest, notes on unused flags)."""
    req = ServingRequest.from_flags(args)
    resolve_lengths(args, parser, req)
    wb, abits, kvb = PRECISIONS[args.precision] if args.precision else (16, 16, None)
    req.bits_given = bool(args.precision or args.weight_bits is not None
                          or args.activation_bits is not None or args.kv_cache_bits is not None)
    req.weight_bits = wb if args.weight_bits is None else args.weight_bits
    req.activation_bits = abits if args.activation_bits is None else args.activation_bits
    if args.kv_cache_bits is None:
        req.kv_cache_bits = kvb if kvb is not None else max(req.activation_bits, 8)
    req.weight_store_bits = (NVFP4_BITS if args.precision == "fp4" and args.weight_bits is None
                             else req.weight_bits)
    if not req.bits_given and checkpoint_serves_fp8(spec.get("checkpoint_format")):
        req.weight_bits = req.weight_store_bits = req.activation_bits = 8  # the KV cache stays 16
    notes = validate(args, parser, spec, req)
    if args.output_tokens == 0:
        notes.append("-o 0: the prompt's pass alone, answered as -o 1 (the pass computes the "
                     "first token's logits; no decode step runs)")
    req.requests = req.trace_rows = None
    if req.num_requests is not None or req.trace:
        from ..serve.engine import workload_requests  # only a benchmark run
        from ..serve.workload import trace_requests
        if req.trace:
            try:
                req.requests = trace_requests(req)
            except ValueError as exc:  # the trace's own line: its file, line and field
                parser.error(str(exc))
        else:
            with calc_errors(parser):
                req.requests = workload_requests(req)
    check_trace_rows(args, parser, req)
    if req.requests:
        req.prompt_tokens = max(1, round(sum(r[1] for r in req.requests) / len(req.requests)))
        req.output_tokens = max(1, round(sum(r[2] for r in req.requests) / len(req.requests)))
    return req, notes


def checkpoint_serves_fp8(fmt):
    """Whether a checkpoint's own format is FP8 weights that the engines run as FP8 matmuls (W8A8):
    quant_method fp8 (DeepSeek-V3's 128 x 128 blocks: vLLM's Fp8LinearMethod and SGLang quantize
    the activations per token group of 128 and run FP8 GEMMs) and ModelOpt FP8 (TensorRT-LLM's
    and vLLM's FP8 path). The KV cache keeps the model's 16 bits (kv_cache_dtype auto) unless the
    checkpoint or a flag says otherwise."""
    return bool(fmt) and fmt["method"] in ("fp8", "modelopt FP8") \
        and fmt["linear_bits"] < 9 and fmt["expert_bits"] < 9


def serving_gpu(name, parser):
    """(the accelerator record the run costs on, whether it was named): hardware.py's record for
    the name, else the default accelerator (exactly the record --gpu h100-sxm reads)."""
    if name is not None and not name.strip():
        parser.error("--gpu is empty: give a GPU name from hardware.py (e.g. h100, h200), or leave "
                     "it out for the default h100-sxm")
    if not name:
        return default_accelerator(), False
    without = ("without it pass --peak-tflops, --memory-bandwidth-gbps, --gpu-memory-gib and "
               "--tp-bandwidth-gbps")
    return accelerator_record(name, parser, without=without), True


def hardware_from_flags(args, parser):
    """(ServingHardware, notes) of a parsed command line at its own layout and --activation-bits
    (16 when not set): for scripts and tests that cost single passes."""
    gpu, gpu_given = serving_gpu(args.gpu, parser)
    with calc_errors(parser):
        return resolve_hardware(gpu, HardwareFlags.from_flags(args), gpu_given=gpu_given,
                                tp=args.tensor_parallel_size, pp=args.pipeline_parallel_size,
                                dp=args.data_parallel_size,
                                activation_bits=args.activation_bits or 16)


def run_bits(spec, req, args, pending):
    """(the checkpoint's own format or None, the bits forward_pass takes): a quantized checkpoint's
    stored bits unless a bits flag or --precision overrides them."""
    own = args.weight_bits is None and not args.precision  # no bits flag: the checkpoint's own
    fmt = spec.get("checkpoint_format") if own else None
    if req.weight_store_bits != req.weight_bits:
        pending.insert(0, f"note: fp4 weights stored as NVFP4, {NVFP4_BITS:g} bits each with their "
                          "scales (--weight-bits 4 counts bare values)")
    w_store = fmt["linear_bits"] if fmt else req.weight_store_bits  # per stored weight, scales in
    return fmt, dict(w_bits=w_store, a_bits=req.activation_bits, kv_bits=req.kv_cache_bits,
                     e_bits=fmt["expert_bits"] if fmt else None, state_bits=req.state_bits)


def add_verbose_arg(parser):
    """--verbose: how the hardware rates were derived, on stderr (rate_notes)."""
    parser.add_argument("--verbose", action="store_true",
                        help="also say on stderr how each hardware rate was derived (compute and "
                        "memory efficiency, links); the report's hardware line gives the rates")


def rate_notes(hw_notes, args):
    """The hardware rates' derivations (resolve_hardware's notes): with --verbose only, as the
    report's `hardware:` line already states each rate, so a plain run's stderr stays empty."""
    return list(hw_notes) if args.verbose else []


def flush(pending):
    """Print the notes and warnings held back until the answer stood."""
    for line in pending:
        print(line, file=sys.stderr)
    pending.clear()


def main(argv=None):
    parser = build_parser()
    args = parse_tool_args(parser, argv)
    # progress lines (simulations, searches, plans past a second) only for a person at a terminal
    SHOW_PROGRESS["on"] = sys.stderr.isatty() and not (args.json or args.brief)
    try:
        spec, notes = resolve_model_spec(vars(args), defaults={"num_experts": 8})
    except ValueError as exc:
        parser.error(str(exc))
    req, flag_notes = resolve_request(args, parser, spec)
    gpu, gpu_given = serving_gpu(req.capacity_gpus[0] if req.capacity else args.gpu, parser)
    flags = HardwareFlags.from_flags(args)
    with calc_errors(parser):
        hw, hw_notes = resolve_hardware(gpu, flags, gpu_given=gpu_given,
                                        tp=req.tensor_parallel_size, pp=req.pipeline_parallel_size,
                                        dp=req.data_parallel_size,
                                        activation_bits=req.activation_bits)
        if req.speculative:
            hw["speculative"] = req.speculative
        # notes and warnings go to stderr once the answer stands: an input refused further on gets
        # its one error line alone
        trained = spec.get("trained_context")
        # the context asked about: -s + -o, or -s alone when -o is the default (a "128k context"
        # question, -s 131072, is not past a 131,072-token model)
        asked = req.prompt_tokens + (req.output_tokens if req.lengths_given[1] else 0)
        if trained and asked > trained:
            spec["warnings"].append(f"context {asked:,} tokens is "
                                    f"past the model's trained context ({trained:,}: "
                                    "max_position_embeddings or its rope scaling)")
        pending = ([f"note: {note}" for note in notes + rate_notes(hw_notes, args) + flag_notes]
                   + [f"warning: {w}" for w in spec["warnings"] if args.json or args.brief])
        fmt, bits = run_bits(spec, req, args, pending)
        if req.capacity:
            flush(pending)
            return run_capacity(spec, req, args, parser, bits=bits, flags=flags)
        if args.search:
            return run_search(spec, req, args, hw, fmt=fmt, pending=pending,
                              gpu=gpu, gpu_given=gpu_given, flags=flags)
        return run_layout(spec, req, args, hw, bits=bits, fmt=fmt, pending=pending)


def run_search(spec, req, args, hw, *, fmt, pending, gpu, gpu_given, flags):
    """--search: the Pareto front, printed (table, --json or --brief) and returned."""
    from ..serve.search import plot_front, search_report, search_serving  # only --search
    res = search_serving(spec, req, fmt, gpu=gpu, gpu_given=gpu_given, flags=flags)
    flush(pending)
    res["warnings"] = list(spec["warnings"])
    res["serving_stack"] = hw["serving_stack"]
    res["model_described"] = spec["described"]
    note = plot_front(res, args.plot, precision=args.precision) if args.plot else None
    if note:
        print(f"note: {note}", file=sys.stderr)
    if args.brief:  # the front's best tokens/s per GPU
        print(f"{brief_number(res['best']['tokens_per_s_per_gpu'])} tokens/s per GPU")
    elif args.json:
        import json
        print(json.dumps({k: v for k, v in res.items() if k not in ("points", "missed")}, indent=2))
    else:
        text = search_report(res, s=req.prompt_tokens, o=req.output_tokens,
                             stack=hw["serving_stack"], top=args.top)
        print(with_warnings(text, res["warnings"]))
    return res


def static_times(spec, hw, req, *, b, bits):
    """A static batch of b: (prompt pass, first and last decode steps, decode seconds in all),
    each step with the stack's host cost; speculative decoding verifies K + 1 tokens per step."""
    s, o = req.prompt_tokens, req.output_tokens
    lay = dict(tp=req.tensor_parallel_size, pp=req.pipeline_parallel_size,
               dp=req.data_parallel_size, ep=req.expert_parallel_size)
    step_s = hw["step_overhead_s"]  # the stack's host cost per engine step (0 for kernels only)

    def with_step(r):
        return dict(r, time_s=r["time_s"] + step_s,
                    components_s=dict(r["components_s"], step_overhead=step_s))
    cached = req.prefix_tokens or 0  # -b with --prefix-tokens: the prefix's cache is there already
    pre = with_step(forward_pass(spec, hw, batch=b, new_tokens=s - cached, context_before=cached,
                                 absorbed=False, **lay, **bits))
    sp = req.speculative
    if sp:  # a verification pass of K + 1 tokens and the draft's K passes per step (mixed_step)
        def spec_step(ctx):
            return mixed_step(spec, hw, decodes=b, decode_context=ctx, prefill_tokens=0,
                              prompt_tokens=s, bits=bits, **lay)
        first, last = spec_step(s), spec_step(s + max(o - 2, 0))
        pre = dict(pre, components_s=dict(pre["components_s"], speculative_draft=0.0))
        # whole verification steps: a short output cannot use all of a step's tokens
        steps = expected_verification_steps(tokens=o - 1, rates=sp["acceptance_rates"])
        dec_total = steps * (first["time_s"] + last["time_s"]) / 2
        return pre, first, last, dec_total
    first = with_step(forward_pass(spec, hw, batch=b, new_tokens=1, context_before=s, absorbed=True,
                                   **lay, **bits))
    last = with_step(forward_pass(spec, hw, batch=b, new_tokens=1, context_before=s + max(o - 2, 0),
                                  absorbed=True, **lay, **bits))
    dec_total = (decode_total_s(spec, hw, batch=b, prompt_tokens=s, output_tokens=o, **lay, **bits)
                 + step_s * (o - 1))
    return pre, first, last, dec_total


def layout_times(spec, hw, req, *, bits, w_bytes):
    """The times of one layout: the steady state or simulated run under a load (serve_steady_state,
    its two steps standing for prefill and decode in the breakdown), else a static batch. Returns
    {serving, b (requests held in memory), pre, first, last, dec_total, tpot, ttft, total}."""
    b, o = req.batch_size, req.output_tokens
    if req.concurrency is not None or req.request_rate is not None or req.requests:
        serving = serve_steady_state(spec, hw, req, tp=req.tensor_parallel_size,
                                     pp=req.pipeline_parallel_size, s=req.prompt_tokens, o=o,
                                     bits=bits, w_bytes=w_bytes)
        pre, first = serving.pop("prompt_step"), serving.pop("decode_step")
        # the memory check holds the requests in service (queued ones hold no KV cache)
        return dict(serving=serving, b=max(1, math.ceil(serving["running_requests"])), pre=pre,
                    first=first, last=first, dec_total=first["time_s"] * (o - 1),
                    tpot=serving["tpot_s"], ttft=serving["ttft_s"], total=serving["e2e_s"])
    pre, first, last, dec_total = static_times(spec, hw, req, b=b, bits=bits)
    ttft = hw["request_overhead_s"] + pre["time_s"]
    return dict(serving=None, b=b, pre=pre, first=first, last=last, dec_total=dec_total,
                tpot=dec_total / (o - 1) if o > 1 else first["time_s"], ttft=ttft,
                total=ttft + dec_total)


def memory_use(spec, req, *, b, w_bytes):
    """Weights plus the cache of the most-loaded data-parallel group's b / dp requests at s + o,
    per GPU: (cache dict, bytes in all); a warning on stderr when it exceeds the GPU."""
    cache = cache_bytes_per_gpu(spec, tp=req.tensor_parallel_size, pp=req.pipeline_parallel_size,
                                batch=math.ceil(b / req.data_parallel_size),
                                context=req.prompt_tokens + req.output_tokens,
                                kv_bits=req.kv_cache_bits, a_bits=req.activation_bits,
                                state_bits=req.state_bits)
    return cache, w_bytes + cache["kv"] + cache["indexer"] + cache["state"]


def memory_warning(cache, *, w_bytes, gpu_memory_bytes):
    """The one-line warning when the weights and caches exceed the GPU's memory."""
    print(f"warning: weights {w_bytes / 2**30:.2f} GiB + KV cache {cache['kv'] / 2**30:.2f} GiB"
          + (f" + indexer keys {cache['indexer'] / 2**30:.2f} GiB" if cache["indexer"] else "")
          + (f" + linear-attention state {cache['state'] / 2**30:.2f} "
             "GiB" if cache["state"] else "")
          + f" per GPU exceed its {gpu_memory_bytes / 2**30:.2f} GiB; raise -tp/-pp or cut "
          "bits, b, s+o", file=sys.stderr)


def layer_kind_rows(spec, req, t, *, bits):
    """One row per distinct layer kind: its count, time per layer in the prompt pass and the first
    decode step, and its weights and caches per GPU."""
    tp, dp, ep = req.tensor_parallel_size, req.data_parallel_size, req.expert_parallel_size
    b_group = math.ceil(t["b"] / dp)  # the requests of the most-loaded data-parallel group
    kinds = []
    for (layer, cnt, first_i), pk, dk in zip(layer_groups(spec), t["pre"]["layer_kinds"],
                                             t["first"]["layer_kinds"]):
        lc = layer_cache_bytes(layer, tp=tp, batch=b_group,
                               context=req.prompt_tokens + req.output_tokens,
                               kv_bits=req.kv_cache_bits, a_bits=req.activation_bits,
                               state_bits=req.state_bits)
        kinds.append({
            "layers": cnt, "first_layer": first_i,
            "attention": " + ".join(attention_kind(a) for a in layer["attention"]) or "-",
            "mlp": " + ".join(mlp_kind(m) for m in layer["mlp"]),
            "prefill_s_per_layer": pk["time_s_per_layer"],
            "decode_first_step_s_per_layer": dk["time_s_per_layer"],
            "decode_first_step_s": cnt * dk["time_s_per_layer"],
            "weight_bytes_per_layer_per_gpu": layer_weight_bytes(
                layer, h=spec["hidden_size"], norm=spec["norm"], tp=tp, w_bits=bits["w_bits"],
                e_bits=bits["e_bits"], ep=ep, etp=tp * dp // ep),
            "kv_cache_bytes_per_layer_per_gpu": lc["kv"],
            "indexer_cache_bytes_per_layer_per_gpu": lc["indexer"],
            "state_bytes_per_layer_per_gpu": lc["state"]})
    return kinds


def run_layout(spec, req, args, hw, *, bits, fmt, pending):
    """One layout's answer (a static batch, a steady state or a simulated run), printed and
    returned as the result dict."""
    tp, pp = req.tensor_parallel_size, req.pipeline_parallel_size
    dp, ep = req.data_parallel_size, req.expert_parallel_size
    w_bytes = weight_bytes_per_gpu(spec, tp=tp, pp=pp, w_bits=bits["w_bits"], e_bits=bits["e_bits"],
                                   ep=ep, etp=tp * dp // ep)
    d_bytes = (draft_weight_bytes(req.speculative, tp=tp, dp=dp, ep=ep, w_bits=bits["w_bits"],
                                  e_bits=bits["e_bits"]) if req.speculative else 0)
    t = layout_times(spec, hw, req, bits=bits, w_bytes=w_bytes + d_bytes)  # the draft's share too
    plain = speculation_baseline(spec, hw, req, bits=bits, w_bytes=w_bytes, t=t)
    flush(pending)
    steps = {}  # decode steps by batch: the two searches share their forward passes
    crit = [critical_batch(spec, hw, tp=tp, pp=pp, dp=dp, ep=ep, context=req.prompt_tokens,
                           matmuls_only=mm, steps=steps, **bits) for mm in (False, True)]
    cache, mem = memory_use(spec, req, b=t["b"], w_bytes=w_bytes + d_bytes)
    if mem > hw["gpu_memory_bytes"]:
        memory_warning(cache, w_bytes=w_bytes + d_bytes, gpu_memory_bytes=hw["gpu_memory_bytes"])
    res = result_dict(spec, req, hw, t, bits=bits, fmt=fmt, crit=crit, w_bytes=w_bytes, cache=cache,
                      mem=mem)
    if req.speculative:
        res.update(speculative_result(req, t, plain, draft_bytes=d_bytes))
    if t["serving"]:
        t["serving"].update(overload(spec, hw, req, t["serving"], bits=bits,
                                     w_bytes=w_bytes + d_bytes))
    if args.brief:
        print_layout_brief(res, hw)
    else:
        print_result(res, as_json=args.json, report=format_report)
    return res


def overload(spec, hw, req, sv, *, bits, w_bytes):
    """Whether a simulated open-loop run was sent more than the engine sustains (issue 46: sent
    6/s, served 4.53/s, TTFT 8.6 s, and no word of it): the offered rate (--request-rate, or a
    trace's own (n - 1) / its span) above the layout's saturation rate (capacity.saturation_rate,
    the rate the steady state refuses past) and the run serving under 95% of it. Returns
    {offered_requests_per_s, sustained_requests_per_s, overloaded}."""
    from ..serve.capacity import saturation_rate  # only a simulated run asks
    out = {"offered_requests_per_s": None, "sustained_requests_per_s": None, "overloaded": False}
    if not sv.get("benchmark") or req.concurrency is not None:
        return out  # the steady state refuses an overload itself; closed-loop clients wait
    offered = req.request_rate
    if offered is None and req.requests and len(req.requests) > 1:
        span = max(r[0] for r in req.requests) - min(r[0] for r in req.requests)
        offered = (len(req.requests) - 1) / span if span > 0 else None
    if offered is None or math.isinf(offered):
        return out  # all at once: a burst to drain, not a rate
    top = saturation_rate(spec, hw, tp=req.tensor_parallel_size, pp=req.pipeline_parallel_size,
                          dp=req.data_parallel_size, ep=req.expert_parallel_size,
                          prompt_tokens=req.prompt_tokens, output_tokens=req.output_tokens,
                          bits=bits, w_bytes=w_bytes)
    out.update(offered_requests_per_s=offered, sustained_requests_per_s=top,
               overloaded=bool(top and offered > top and sv["requests_per_s"] < 0.95 * offered))
    return out


def speculation_baseline(spec, hw, req, *, bits, w_bytes, t):
    """The same layout and load without speculative decoding (layout_times with no draft), for
    the speedup line; None without --speculative-tokens."""
    if not req.speculative:
        return None
    hw0, req0 = hw.copy(), req.copy()
    hw0["speculative"] = req0.speculative = None
    return layout_times(spec, hw0, req0, bits=bits, w_bytes=w_bytes)


def speculative_result(req, t, plain, *, draft_bytes):
    """The result keys of a speculative run: the verification steps a request runs, the time per
    token at the first and the last steps (a step's time over the tokens it yields), TPOT without
    speculation and the speedup, and the draft's weights (in the memory total)."""
    sp, o = req.speculative, req.output_tokens
    steps = expected_verification_steps(tokens=o - 1, rates=sp["acceptance_rates"])
    per = max(o - 1, 1) / steps if steps else 1.0  # tokens per step this output length gets
    return {"speculative_verification_steps": steps, "speculative_tokens_per_step_used": per,
            "decode_first_token_s": t["first"]["time_s"] / per,
            "decode_last_token_s": t["last"]["time_s"] / per,
            "decode_per_token_s_without_speculation": plain["tpot"],
            "speculative_speedup": plain["tpot"] / t["tpot"],
            "draft_weight_bytes_per_gpu": draft_bytes}


def print_layout_brief(res, hw):
    """--brief for one layout: TTFT and TPOT, and whether weights and cache fit (exit 3: not)."""
    print_brief(f"TTFT {res['ttft_s'] * 1e3:.2f} ms TPOT {res['decode_per_token_s'] * 1e3:.2f} ms",
                {"fits": res["fits_in_memory"], "memory_bytes": hw["gpu_memory_bytes"]})


def sliding_layers(spec):
    """(the sliding layers' window or None, the indices of the sliding layers)."""
    win_layers = [i for i, layer in enumerate(spec["layers"])
                  if any(a["span"] == "sliding" for a in layer["attention"])]
    win = (next(a["window"] for a in spec["layers"][win_layers[0]]["attention"]
                if a["span"] == "sliding") if win_layers else None)
    return win, win_layers


def result_dict(spec, req, hw, t, *, bits, fmt, crit, w_bytes, cache, mem):
    """The dict main returns (and --json prints) for one layout."""
    b, s, o = t["b"], req.prompt_tokens, req.output_tokens
    tp, pp = req.tensor_parallel_size, req.pipeline_parallel_size
    dp, ep = req.data_parallel_size, req.expert_parallel_size
    gpus = tp * dp * pp
    serving, pre, first, last, total = t["serving"], t["pre"], t["first"], t["last"], t["total"]
    win, win_layers = sliding_layers(spec)
    return {
        "mode": (serving_mode_text(serving, s=s, o=o, tp=tp, pp=pp, stack=hw["serving_stack"], gpus=gpus)
                 if serving else mode_text(b=b, s=s, o=o, tp=tp, pp=pp, gpus=gpus))
                + layout_text(dp=dp, ep=ep, tp=tp, pp=pp, hw=hw, imbalance=first["ep_imbalance"],
                              moe=any(m["kind"] != "dense" for x in spec["layers"]
                                      for m in x["mlp"])),
        "warnings": list(spec["warnings"]),
        "model": spec_summary(spec), "batch_size": b, "prompt_tokens": s, "output_tokens": o,
        "tensor_parallel_size": tp, "pipeline_parallel_size": pp, "data_parallel_size": dp,
        "expert_parallel_size": ep, "ep_imbalance": first["ep_imbalance"], "num_gpus": gpus,
        "weight_bits": req.weight_bits, "weight_storage_bits": bits["w_bits"],
        "activation_bits": req.activation_bits, "checkpoint_format": fmt,
        "kv_cache_bits": req.kv_cache_bits, "sliding_window": win, "sliding_layers": win_layers,
        "hardware": hw.reported(),
        "speculative": ({k: v for k, v in req.speculative.items()
                         if k not in ("draft_spec", "target_spec")} if req.speculative else None),
        "prefill_s": pre["time_s"], "ttft_s": t["ttft"],
        "request_overhead_s": hw["request_overhead_s"],
        "prefill_bound": pre["bound"],
        "prefill_components_s": pre["components_s"], "prefill_flops_per_gpu": pre["flops"],
        "prefill_bytes_per_gpu": pre["bytes"],
        "decode_per_token_s": t["tpot"], "decode_first_step_s": first["time_s"],
        "decode_last_step_s": last["time_s"] if o > 1 else first["time_s"],
        "decode_bound": first["bound"], "decode_first_step_components_s": first["components_s"],
        "decode_step_flops_per_gpu": first["flops"], "decode_step_bytes_per_gpu": first["bytes"],
        "decode_step_weight_bytes_read_per_gpu": first["weight_bytes"],
        "decode_step_cache_bytes_read_per_gpu": first["cache_read_bytes"],
        "decode_total_s": t["dec_total"], "total_s": total,
        "output_tokens_per_s": serving["output_tokens_per_s"] if serving else b * o / total,
        "output_tokens_per_s_per_gpu": (serving["output_tokens_per_s_per_gpu"] if serving
                                        else b * o / total / gpus),
        "tokens_per_s_per_user": 1.0 / t["tpot"], "serving_stack": hw["serving_stack"],
        "serving": serving,
        "critical_batch_size": crit[0], "critical_batch_size_matmuls": crit[1],
        "weight_bytes_per_gpu": w_bytes, "kv_cache_bytes_per_gpu": cache["kv"],
        "indexer_cache_bytes_per_gpu": cache["indexer"], "state_bytes_per_gpu": cache["state"],
        "state_bits": req.state_bits,
        "memory_bytes_per_gpu": mem, "fits_in_memory": mem <= hw["gpu_memory_bytes"],
        "layer_kinds": layer_kind_rows(spec, req, t, bits=bits),
        "convention": "TTFT = one prefill pass over the prompt (the first token comes from it); "
                      "o-1 decode steps, each reading every weight shard and the KV cache; per-op "
                      f"roofline (weight matmuls: soft corner, p = {ROOFLINE_CORNER_P}) + fixed "
                      "per-kernel overhead, summed over the layer list; TP ring all-reduce after "
                      "each attention and MLP block; PP stages sequential (a static batch one in "
                      "flight, continuous batching up to pp micro-batches); memory per GPU on the "
                      "most-loaded stage (weights + KV at s+o, no "
                      "activations/workspace)" + attention_convention(spec),
    }


if __name__ == "__main__":
    run_tool(main)
