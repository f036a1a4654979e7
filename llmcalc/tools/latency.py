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
import textwrap

from ..cli import (OneLineErrorParser, add_model_args, add_output_args, bounded_int, check_ranges,
    finite_float, parse_tool_args, print_result, ranges_epilog, run_tool)
from ..model.kinds import attention_kind, layer_groups, mlp_kind
from ..model.spec import resolve_model_spec, spec_summary
from ..precision import NVFP4_BITS, PRECISIONS
from ..serve.engine import layout_problem, serve_steady_state
from .latency_capacity import add_capacity_args, run_capacity, validate_capacity
from .latency_mix import add_mix_args, mix_text, validate_speculative, validate_workload
from ..serve.forward import forward_pass
from ..serve.memory import (cache_bytes_per_gpu, layer_cache_bytes, layer_weight_bytes,
    weight_bytes_per_gpu)
from ..serve.stacks import (ALLOWED_BITS, DEFAULT_ALLREDUCE_EFFICIENCY,
    DEFAULT_ALLREDUCE_LATENCY_US, DEFAULT_COMPUTE_EFFICIENCY, DEFAULT_KERNEL_OVERHEAD_US,
    DEFAULT_MEMORY_EFFICIENCY, DEFAULT_SERVING_STACK, FLAG_RANGES, FP4_SHAPE_PENALTY,
    LOW_BIT_EFFICIENCY_RATIO, ROOFLINE_CORNER_P, SERVING_STACKS, resolve_hardware)
from ..serve.steady import critical_batch, decode_total_s, mixed_step


# --- output --------------------------------------------------------------------------------------
def fmt_s(t):
    """Seconds -> ms or s text."""
    return f"{t * 1e3:,.2f} ms" if t < 1 else f"{t:,.3f} s"


def gpu_line(hw):
    """The first line of a report: the accelerator, and for the default how to change it."""
    default = " (the default GPU; --gpu NAME for another)" if hw.get("gpu_default") else ""
    return f"GPU: {hw['gpu']}{default}; serving stack {hw['serving_stack']}"


def format_report(res):
    """Aligned human-readable report of the dict main returns."""
    r, hw = res, res["hardware"]
    lines = [gpu_line(hw), f"Model: {r['model']['described']}"] + textwrap.wrap(
        f"mode: {r['mode']}", width=100, subsequent_indent="      ")
    lines += [f"WARNING: {w}" for w in r["warnings"]]
    sp = r.get("speculative")
    if sp:
        rates = ", ".join(f"{a:g}" for a in sp["acceptance_rates"])
        lines += textwrap.wrap(
            f"speculative decoding: {sp['method']} draft, K = {sp['k']} tokens per step, acceptance {rates} "
            f"({sp['acceptance_source']}): {sp['tokens_per_step']:.3f} tokens per verification step; a decode step "
            f"below verifies K + 1 tokens per sequence and runs the draft's passes, TPOT = step / tokens per step",
            width=100, subsequent_indent="      ")
    if r["serving"]:
        lines += serving_report_lines(r)
    else:
        lines += static_report_lines(r)
    pc, dc = r["prefill_components_s"], r["decode_first_step_components_s"]
    head = ("prompt step", "decode step") if r["serving"] else ("prefill", "decode step")
    lines += ["", f"{'component':<22}{head[0]:>14}{'%':>7}{head[1]:>14}{'%':>7}"]
    for name in pc:
        lines.append(f"{name:<22}{fmt_s(pc[name]):>14}{100 * pc[name] / r['prefill_s']:>6.1f}%"
                     f"{fmt_s(dc[name]):>14}{100 * dc[name] / r['decode_first_step_s']:>6.1f}%")
    return lines_tail(r, lines)


def benchmark_report_lines(r):
    """The simulated benchmark's part of the report: per-request statistics, the run, the pool."""
    sv = r["serving"]
    gib = 2 ** 30
    mix = sv.get("mix")
    stats = ("_s", "_median_s", "_p90_s", "_p99_s") if mix else ("_s", "_median_s", "_p99_s")
    rows = [(name, [fmt_s(sv[key + suffix]) for suffix in stats])
            for name, key in (("TTFT (waiting included)", "ttft"), ("TPOT (time per output token)", "tpot"),
                              ("End-to-end" + (" (the mix)" if mix else f" ({r['output_tokens']} output tokens)"),
                               "e2e"))]
    w = max(12, 2 + max(len(c) for _, cells in rows for c in cells))  # columns apart at any magnitude
    heads = ("mean", "median", "p90", "p99") if mix else ("mean", "median", "p99")
    lines = ["", f"{'per request' + (' (over the mix)' if mix else ''):<34}" + "".join(f"{x:>{w}}" for x in heads)]
    for name, cells in rows:
        lines.append(f"{name:<34}" + "".join(f"{c:>{w}}" for c in cells))
    lines += ["", f"{'the run':<34}{'':>12}",
              f"{'duration (first sent, last answered)':<40}{fmt_s(sv['duration_s']):>14}",
              f"{'output tokens/s, total':<40}{sv['output_tokens_per_s']:>14,.1f}",
              f"{'output tokens/s per GPU':<40}{sv['output_tokens_per_s_per_gpu']:>14,.1f}",
              f"{'requests/s':<40}{sv['requests_per_s']:>14,.3f}"]
    if mix:
        a, b = mix["input_tokens"], mix["output_tokens"]
        lines += ["", f"{'the mix (tokens)':<34}{'mean':>10}{'median':>10}{'p99':>10}{'min':>10}{'max':>10}"]
        for name, x in (("input (prompt)", a), ("output", b)):
            lines.append(f"{name:<34}{x['mean']:>10,.1f}{x['median']:>10,}{x['p99']:>10,}{x['min']:>10,}{x['max']:>10,}")
        done = sv["prompt_tokens_computed"] + sv["prompt_tokens_cached"]
        if sv["prompt_tokens_cached"] or mix["prefix_tokens"] or mix["shared_prefix_requests"]:
            lines.append(f"prefix cache: {sv['prefix_hits']:,} hits, {sv['prompt_tokens_cached']:,} of {done:,} prompt "
                         f"tokens cached ({100 * sv['prompt_tokens_cached'] / max(done, 1):.1f}%, not computed), "
                         f"{sv['prefix_evictions']:,} evictions, at most {sv['prefix_tokens_held_most']:,} tokens "
                         "of cached prefixes held in one group's pool of "
                         f"{sv['kv_pool_tokens'] / max(1, r['data_parallel_size']):,.0f}")
        ht = mix.get("host_tier")
        if ht:
            lines.append(f"host KV tier: {ht['host_bytes_per_gpu'] / 2**30:,.1f} GiB per GPU ({ht['host_tokens']:,.0f} "
                         f"tokens) at {ht['host_bytes_per_s'] / 1e9:,.1f} GB/s: {sv['host_hits']:,} prefixes brought back "
                         f"({sv['host_tokens_loaded']:,} tokens, {fmt_s(sv['host_load_s'])} of loading); a token loads in "
                         f"{ht['load_s_per_token'] * 1e6:,.2f} us against {ht['recompute_s_per_token'] * 1e6:,.2f} us to "
                         f"compute it again: the tier {'pays' if ht['pays'] else 'does not pay'}")
    lines += ["", f"engine: {sv['engine_steps']:,} steps of {sv['decodes_per_step']:.1f} decodes and "
              f"{sv['prompt_tokens_per_step']:.0f} prompt tokens on average; {sv['mean_in_flight']:.1f} requests "
              f"in the server on average, at most {sv['most_running']:,} running at once",
              f"KV pool: {sv['kv_pool_bytes_per_gpu'] / gib:,.2f} GiB per GPU holds "
              f"{sv['kv_pool_max_concurrency']:,} requests of s + o tokens "
              f"({sv['kv_bytes_per_request_per_gpu'] / gib:,.3f} GiB each; reserved whole on admission)"
              + (f"; the stack runs at most {sv['max_num_seqs']:,} at once (--max-num-seqs)"
                 if sv["max_num_seqs"] else "")]
    return lines


def serving_report_lines(r):
    """The continuous-batching part of the report: mean times, the mean step, the KV pool."""
    sv = r["serving"]
    if sv.get("benchmark"):
        return benchmark_report_lines(r)
    gib = 2 ** 30
    lines = ["", f"{'per request (means)':<40}{'time':>14}",
             f"{'TTFT (waiting included)':<40}{fmt_s(sv['ttft_s']):>14}",
             f"{'TPOT (time per output token)':<40}{fmt_s(sv['tpot_s']):>14}",
             f"{'End-to-end (%d output tokens)' % r['output_tokens']:<40}{fmt_s(sv['e2e_s']):>14}",
             "", f"{'throughput':<40}{'tokens/s':>14}",
             f"{'per user (1/TPOT)':<40}{sv['tokens_per_s_per_user']:>14,.1f}",
             f"{'total (C x o / end-to-end)':<40}{sv['output_tokens_per_s']:>14,.1f}",
             f"{'per GPU':<40}{sv['output_tokens_per_s_per_gpu']:>14,.1f}",
             f"{'requests/s':<40}{sv['requests_per_s']:>14,.3f}",
             "", f"mean engine step: {sv['decodes_per_step']:.1f} decodes + {sv['prompt_tokens_per_step']:.0f} "
             f"prompt tokens of others; a request's own prompt spans {sv['prompt_steps']:.2f} step(s)"
             + (" (the token budget is full: requests queue)" if sv["budget_bound"] else "")
             + f"; an arrival waits {fmt_s(sv['arrival_wait_s'])} for the running step"
             + (f" and {sv['queue_steps']:.1f} steps for the budget" if sv["queue_steps"] > 1e-9 else "")
             + (f"; its prompt waits {fmt_s(sv['prompt_queue_wait_s'])} for the others' prefills ahead of it"
                if sv.get("prompt_queue_wait_s", 0.0) > 1e-9 else ""),
             f"KV pool: {sv['kv_pool_bytes_per_gpu'] / gib:,.2f} GiB per GPU holds "
             f"{sv['kv_pool_max_concurrency']:,} requests of s + o tokens "
             f"({sv['kv_bytes_per_request_per_gpu'] / gib:,.3f} GiB each)"
             + (f"; the stack runs at most {sv['max_num_seqs']:,} at once (--max-num-seqs)"
                if sv["max_num_seqs"] else "")]
    if sv["queued_requests"]:
        why = ("the stack's running cap" if sv["max_num_seqs"] and sv["max_num_seqs"] < sv["kv_pool_max_concurrency"]
               else "the KV pool")
        lines.append(f"queue: {sv['queued_requests']:,} of the {sv['concurrency']:,} requests wait in the server's "
                     f"queue past {why}, {fmt_s(sv['queue_wait_s'])} each on average (in TTFT and end-to-end)")
    return lines


def static_report_lines(r):
    """The static-batch part of the report: prefill, decode steps, throughput."""
    lines = ["", f"{'phase':<34}{'time':>14}   bound",
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
              f"{'per GPU (total / tp x pp)':<34}{r['output_tokens_per_s_per_gpu']:>14,.1f}"]
    return lines


def lines_tail(r, lines):
    """The report's layer kinds, memory, hardware and convention lines."""
    hw = r["hardware"]
    lines += ["", f"{'layers':>7}{'first':>7}{'decode step':>14}{'% of step':>10}   layer kind "
                  "(attention | mlp); time per layer, its kernels and all-reduces included"]
    for k in r["layer_kinds"]:
        lines.append(f"{k['layers']:>7}{k['first_layer']:>7}{fmt_s(k['decode_first_step_s_per_layer']):>14}"
                     f"{100 * k['decode_first_step_s'] / r['decode_first_step_s']:>9.1f}%   "
                     f"{k['attention']} | {k['mlp']}")
    cb, cm = r["critical_batch_size"], r["critical_batch_size_matmuls"]
    gib = 2 ** 30
    lines += ["", f"decode turns compute-bound at batch: weight matmuls {cm if cm else 'never'}, whole "
              f"step {cb if cb else 'never (KV-cache reads grow with b as fast as the math)'}"
              f" (context {r['prompt_tokens']})",
              "", f"{'memory per GPU (most-loaded stage)':<40}{'GiB':>12}",
              f"{'  weights':<40}{r['weight_bytes_per_gpu'] / gib:>12,.2f}",
              f"{'  KV cache at s + o tokens':<40}{r['kv_cache_bytes_per_gpu'] / gib:>12,.2f}"]
    if r["indexer_cache_bytes_per_gpu"]:
        lines.append(f"{'  indexer keys (DSA) at s + o tokens':<40}"
                     f"{r['indexer_cache_bytes_per_gpu'] / gib:>12,.2f}")
    if r["state_bytes_per_gpu"]:
        lines.append(f"{'  linear-attention state (constant)':<40}{r['state_bytes_per_gpu'] / gib:>12,.2f}")
    lines += [f"{'  total':<40}{r['memory_bytes_per_gpu'] / gib:>12,.2f} of "
              f"{hw['gpu_memory_bytes'] / gib:,.2f} GiB" + ("" if r["fits_in_memory"] else "  ** DOES NOT FIT **"),
              "", f"hardware: {hw['peak_flops_per_s'] / 1e12:,.1f} TFLOP/s x {hw['compute_efficiency']:.2f}, "
              f"{hw['memory_bandwidth_bytes_per_s'] / 1e9:,.0f} GB/s x {hw['memory_efficiency']:.2f}, "
              f"link {hw['link_bytes_per_s'] / 1e9:,.0f} GB/s, tp {r['tensor_parallel_size']} "
              f"pp {r['pipeline_parallel_size']}, w{r['weight_bits']}a{r['activation_bits']} "
              f"kv{r['kv_cache_bits']}" + (f" ({hw['gpu']})" if hw["gpu"] else "")
              + f"; stack {hw['serving_stack']}: {hw['kernel_overhead_s'] * 1e6:g} us per kernel, "
              f"{hw['link_latency_s'] * 1e6:g} us per all-reduce call, {hw['step_overhead_s'] * 1e3:g} ms "
              f"per step, {hw['request_overhead_s'] * 1e3:g} ms per request"
              + (f", MoE blocks x {hw['moe_factor']:g}" if hw.get("moe_factor", 1.0) != 1.0 else "")
              + (f", sliding window {r['sliding_window']} on {len(r['sliding_layers'])} of "
                 f"{r['model']['num_layers']} layers" if r["sliding_window"] else ""),
              "convention: " + r["convention"]]
    fmt = r.get("checkpoint_format")
    if fmt:
        lines.insert(-1, f"weights as the checkpoint stores them ({fmt['method']}, scales included): routed "
                         f"experts at {fmt['expert_bits']:.4g} bits, other layer matrices at "
                         f"{fmt['linear_bits']:.4g} (--weight-bits overrides)"
                         + (f"; its KV cache format is {fmt['kv_cache_format']} (kv_cache_quant_algo), counted "
                            f"here at {r['kv_cache_bits']} bits" + ("" if r["kv_cache_bits"] == 8 else
                                                                   ": TensorRT-LLM follows it by default, pass "
                                                                   "--kv-cache-bits 8 for that")
                            if fmt.get("kv_cache_format") else ""))
    return "\n".join(lines)


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
                   default=512, help="s prompt tokens per sequence (default 512)")
    g.add_argument("--output-tokens", "-o", type=bounded_int, default=128, help="o output tokens (default 128)")
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
    g.add_argument("--concurrency", "-c", type=bounded_int, default=None,
                   help="C requests in flight under continuous batching (steady state, chunked "
                        "prefill) instead of one static batch of -b")
    g.add_argument("--request-rate", type=rate_float, default=None,
                   help="requests per second arriving (open loop): the concurrency that rate keeps "
                        "in flight, instead of -c; inf (with --num-requests) sends them all at once")
    g.add_argument("--num-requests", type=bounded_int, default=None,
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


def validate(args, parser, spec):
    """One-line errors (exit 2) for values the model cannot take."""
    if args.concurrency is not None and args.request_rate is not None:
        parser.error("--concurrency and --request-rate both set the load; give one")
    if args.batch_size is not None and (args.concurrency is not None or args.request_rate is not None):
        parser.error("-b is a static batch; with --concurrency or --request-rate leave it out")
    args.batch_size_given = args.batch_size is not None
    args.batch_size = 1 if args.batch_size is None else args.batch_size
    for name in ("batch_size", "prompt_tokens", "output_tokens", "tensor_parallel_size",
                 "pipeline_parallel_size", "data_parallel_size", "expert_parallel_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    for name in ("weight_bits", "activation_bits", "kv_cache_bits"):
        if getattr(args, name) not in ALLOWED_BITS:
            parser.error(f"--{name.replace('_', '-')} must be one of {ALLOWED_BITS}, got {getattr(args, name)}")
    for name in ("peak_tflops", "memory_bandwidth_gbps", "gpu_memory_gib", "tp_bandwidth_gbps"):
        v = getattr(args, name)
        if v is not None and not (v > 0 and math.isfinite(v)):
            parser.error(f"--{name.replace('_', '-')} must be positive, got {v}")
    for name in ("kernel_overhead_us", "tp_latency_us", "request_overhead_ms"):
        v = getattr(args, name)
        if v is not None and not (v >= 0 and math.isfinite(v)):
            parser.error(f"--{name.replace('_', '-')} must not be negative, got {v}")
    all_at_once = args.request_rate is not None and math.isinf(args.request_rate)  # needs --num-requests (below)
    check_ranges(args, parser, {k: v for k, v in FLAG_RANGES.items() if not (all_at_once and k == "request_rate")})
    if (args.num_requests is not None and args.concurrency is None and args.request_rate is None
            and not args.trace and args.target_request_rate is None):
        parser.error("--num-requests runs a benchmark at a load; add --request-rate R (or inf) or -c C")
    if args.request_rate is not None and math.isinf(args.request_rate) and args.num_requests is None:
        parser.error("--request-rate inf sends every request at once: add --num-requests N (a steady "
                     "state needs a finite rate)")
    why = layout_problem(spec, tp=args.tensor_parallel_size, pp=args.pipeline_parallel_size,
                         dp=args.data_parallel_size, ep=args.expert_parallel_size)
    if why:
        parser.error(why)
    if args.search:
        if (args.concurrency is not None or args.request_rate is not None or args.batch_size_given
                or args.num_requests is not None):
            parser.error("--search picks the concurrency and the layout itself; leave out -c, --request-rate, "
                         "--num-requests and -b")
        fixed = [f for f, v in (("-tp", args.tensor_parallel_size), ("-pp", args.pipeline_parallel_size),
                                ("-dp", args.data_parallel_size), ("-ep", args.expert_parallel_size)) if v != 1]
        if fixed:
            parser.error(f"--search picks the layout itself; leave out {', '.join(fixed)} (--num-gpus sets the budget)")
        for name in ("max_ttft_ms", "max_tpot_ms"):
            v = getattr(args, name)
            if v is not None and not v > 0:
                parser.error(f"--{name.replace('_', '-')} must be positive, got {v}")
    elif args.plot or args.disaggregated:
        parser.error(f"{'--plot' if args.plot else '--disaggregated'} belongs to --search; add --search")
    if args.plot is not None:
        check_plot_path(args.plot, parser)
    validate_capacity(args, parser)
    validate_workload(args, parser)
    validate_speculative(args, parser, spec)
    args.flag_notes = []  # flags that do nothing in this mode: said, not dropped silently
    unused = [f for f, v in (("--seed", args.seed), ("--arrivals", args.arrivals)) if v is not None]
    if args.capacity and args.arrivals is not None:
        args.flag_notes.append("--arrivals: a capacity plan sizes each layout on Poisson arrivals (its convention)")
    if args.trace:  # a trace's arrivals are drawn only at a --request-rate (or in a capacity plan's runs);
        unused = [f for f in unused if args.request_rate is None and not args.capacity  # --seed: also a hit rate's
                  and not (f == "--seed" and args.prefix_hit_rate is not None)]
        if unused:
            args.flag_notes.append(f"{' and '.join(unused)} draw{'s' if len(unused) == 1 else ''} arrivals at a "
                                   "--request-rate; without it the trace's requests come at their own times "
                                   "(or from the -c clients)")
    elif unused and args.num_requests is None:
        args.flag_notes.append(f"{' and '.join(unused)} draw{'s' if len(unused) == 1 else ''} the arrivals of a "
                               "--num-requests benchmark; without it there are none to draw")
    targets = [f for f, v in (("--max-ttft-ms", args.max_ttft_ms), ("--max-tpot-ms", args.max_tpot_ms)) if v is not None]
    if targets and not args.search and not args.capacity:
        args.flag_notes.append(f"{' and '.join(targets)} {'is a target' if len(targets) == 1 else 'are targets'} of "
                               "--search or a capacity plan (--target-request-rate R); nothing here is held to "
                               f"{'it' if len(targets) == 1 else 'them'}")
    args.seed = 0 if args.seed is None else args.seed
    args.arrivals = args.arrivals or "poisson"


def mode_text(*, b, s, o, tp, pp, gpus=None):
    """The regime the numbers are for, in words (the report's first line)."""
    return (f"b = {b} concurrent sequence{'s' if b > 1 else ''} run as one batch (static batching: "
            f"they start and end together), each with s = {s} prompt and o = {o} output tokens; "
            f"tp {tp} = tensor parallel (every layer's weights split over {tp} GPU{'s' if tp > 1 else ''}, "
            f"an all-reduce after each block), pp {pp} = pipeline parallel ({pp} stage{'s' if pp > 1 else ''} "
            f"of consecutive layers run one after the other, one batch in flight); {gpus or tp * pp} "
            f"GPU{'s' if (gpus or tp * pp) > 1 else ''} in all; times are per request, memory is the most-loaded GPU's")


def serving_mode_text(sv, *, s, o, tp, pp, stack, gpus=None):
    """The continuous-batching regime in words (the report's first line)."""
    budget = sv["token_budget"]
    if sv.get("benchmark"):
        rate = sv["request_rate"]
        load = ("all sent at once" if sv["sent_at_once"] else
                f"{sv['concurrency']} clients, each sending its next request when the last returns"
                if rate is None else f"sent at {rate:g} requests/s ({sv['arrivals']} arrivals, seed {sv['seed']})")
        mix = sv.get("mix")
        if mix and mix["trace_arrivals"]:
            load = f"sent at the trace's own times ({mix['trace']})"
        lengths = f"each with s = {s} prompt and o = {o} output tokens"
        if mix:
            lengths = (mix_text(mix) + f" (means s = {mix['input_tokens']['mean']:,.1f}, o = "
                       f"{mix['output_tokens']['mean']:,.1f})")
        return (f"a benchmark run of {sv['num_requests']:,} requests simulated step by step, {stack} stack: "
                f"{load}, {lengths}; an engine step runs every decode "
                "and " + (f"prompt chunks up to {budget} tokens in all" if budget else "every waiting prompt whole")
                + f"; tp {tp} pp {pp}" + (f" ({sv['micro_batches']} micro-batches in flight, one per stage at a "
                                         "time)" if pp > 1 else "")
                + f" ({gpus or tp * pp} GPU{'s' if (gpus or tp * pp) > 1 else ''} per replica); times are means "
                "per request, throughput is over the run's duration (ramp-up and drain included), memory is the "
                "most-loaded GPU's with the most requests that ran at once")
    load = (f"{sv['request_rate']:g} requests/s arriving (open loop; {sv['concurrency']:.1f} in flight "
            "on average)" if sv["request_rate"] is not None else f"C = {sv['concurrency']} requests in flight "
            "(closed loop: a finished request is replaced at once)")
    return (f"continuous batching in steady state, {stack} stack: {load}, each with s = {s} prompt and "
            f"o = {o} output tokens; an engine step runs every decode and "
            + (f"prompt chunks up to {budget} tokens in all" if budget else "every waiting prompt whole")
            + f"; tp {tp} pp {pp}" + (f" ({min(pp, max(1, math.floor(sv['concurrency'])))} micro-batches in "
                                         "flight, one per stage at a time)" if pp > 1 else "")
            + f" ({gpus or tp * pp} GPU{'s' if (gpus or tp * pp) > 1 else ''} per replica); times are "
            "means per request, memory is the most-loaded GPU's with C requests at s + o tokens")


def layout_text(*, dp, ep, tp, pp, hw, imbalance):
    """What data-parallel attention, expert parallelism and nodes add to the mode line ('' if none)."""
    parts = []
    if dp > 1:
        parts.append(f"dp {dp} = data-parallel attention ({dp} groups of tp {tp}, each with 1/{dp} of "
                     "the requests and its own KV cache; the MoE layers take every group's tokens)")
    if ep > 1:
        parts.append(f"ep {ep} = expert parallel (whole experts spread over the {ep} GPUs of a stage, "
                     f"tokens sent and returned by two all-to-alls per MoE layer; the busiest GPU "
                     f"carries {imbalance:.2f} x the mean expert work)")
    elif dp > 1:
        parts.append(f"experts split over all {tp * dp} GPUs of a stage (tokens all-gathered before and "
                     "reduce-scattered after each MoE layer)")
    g = hw.get("gpus_per_node")
    if g and tp * dp * pp > g:
        parts.append(f"{g} GPUs per node: groups beyond it use the network at "
                     f"{hw['scale_out_bytes_per_s'] / 1e9:g} GB/s per GPU")
    return "".join("; " + x for x in parts)


def attention_convention(spec):
    """What the layer kinds' spans and indexers do to the work, for the convention line."""
    counts = {}
    for layer, cnt, _ in layer_groups(spec):
        for attn in layer["attention"]:
            texts = []
            if attn["span"] == "sliding":
                texts.append(f"sliding-window attention (w = {attn['window']}): a query attends to at "
                             "most w keys, a decode step reads at most w - 1 cached tokens")
            elif attn["span"] == "chunked":
                texts.append(f"chunked attention (C = {attn['chunk']}): a query attends within its "
                             "chunk, a decode step reads 0 .. C-1 cached tokens in turn")
            if attn["index_topk"]:
                texts.append(f"DSA (top-{attn['index_topk']}): the core attends to at most "
                             f"{attn['index_topk']} keys")
            if attn["index_topk"] and attn["index_heads"]:
                texts.append("a lightning indexer scores every cached key")
            if attn["kind"] == "dsv4" and attn["compress"]:
                texts.append(f"DeepSeek-V4 compression (1/{attn['compress']}): a query also attends to the compressed "
                             "entries closed before it" + (f" (the indexer scores them all, the core its top-"
                                                           f"{attn['c_index_topk']})" if attn["compress_kind"] == "csa" else ""))
            if attn["span"] == "state":
                texts.append(f"Gated DeltaNet: no KV cache; prefill runs the chunked algorithm (chunks of "
                             f"{attn['state_chunk']}), a decode step one recurrent update, reading and "
                             "writing its constant state (recurrent state at --state-bits)")
            for text in texts:
                counts[text] = counts.get(text, 0) + cnt
    L = spec["num_layers"]
    return "".join(f"; {text} on {n} of {L} layers" for text, n in counts.items())


def main(argv=None):
    parser = build_parser()
    args = parse_tool_args(parser, argv)
    try:
        spec, notes = resolve_model_spec(args, defaults={"num_experts": 8})
    except ValueError as exc:
        parser.error(str(exc))
    wb, abits, kvb = PRECISIONS[args.precision] if args.precision else (16, 16, None)
    weight_bits_given = args.weight_bits is not None
    args.bits_given = bool(args.precision or weight_bits_given or args.activation_bits is not None
                           or args.kv_cache_bits is not None)
    args.weight_bits = wb if args.weight_bits is None else args.weight_bits
    args.activation_bits = abits if args.activation_bits is None else args.activation_bits
    if args.kv_cache_bits is None:
        args.kv_cache_bits = kvb if kvb is not None else max(args.activation_bits, 8)
    validate(args, parser, spec)
    args.requests = None
    if args.num_requests is not None or args.trace:
        from ..serve.engine import workload_requests  # only a benchmark run
        args.requests = workload_requests(args, parser)
    if args.requests:  # the mean request stands for s and o in the breakdown and the memory check
        args.prompt_tokens = max(1, round(sum(r[1] for r in args.requests) / len(args.requests)))
        args.output_tokens = max(1, round(sum(r[2] for r in args.requests) / len(args.requests)))
    hw, hw_notes = resolve_hardware(args, parser)
    if args.speculative:
        hw["speculative"] = args.speculative
    # notes and warnings go to stderr once the answer stands: an input refused further on gets
    # its one error line alone
    trained = spec.get("trained_context")
    if trained and args.prompt_tokens + args.output_tokens > trained:
        spec["warnings"].append(f"context {args.prompt_tokens + args.output_tokens:,} tokens is past the model's "
                                f"trained context ({trained:,}: max_position_embeddings or its rope scaling)")
    pending = ([f"note: {note}" for note in notes + hw_notes + args.flag_notes]
               + [f"warning: {w}" for w in spec["warnings"] if args.json])

    def flush_pending():
        for line in pending:
            print(line, file=sys.stderr)
        pending.clear()
    h = spec["hidden_size"]
    win_layers = [i for i, layer in enumerate(spec["layers"])
                  if any(a["span"] == "sliding" for a in layer["attention"])]
    win = (next(a["window"] for a in spec["layers"][win_layers[0]]["attention"] if a["span"] == "sliding")
           if win_layers else None)

    b, s, o = args.batch_size, args.prompt_tokens, args.output_tokens
    tp, pp = args.tensor_parallel_size, args.pipeline_parallel_size
    dp, ep = args.data_parallel_size, args.expert_parallel_size
    etp = tp * dp // ep  # ranks each routed expert is split over
    gpus = tp * dp * pp
    fmt = spec.get("checkpoint_format") if not (weight_bits_given or args.precision) else None
    args.weight_store_bits = (NVFP4_BITS if args.precision == "fp4" and not weight_bits_given
                              else args.weight_bits)
    if args.weight_store_bits != args.weight_bits:
        pending.insert(0, f"note: fp4 weights stored as NVFP4, {NVFP4_BITS:g} bits each with their "
                          "scales (--weight-bits 4 counts bare values)")
    w_store = fmt["linear_bits"] if fmt else args.weight_store_bits  # bits per stored weight, scales in
    bits = dict(w_bits=w_store, a_bits=args.activation_bits, kv_bits=args.kv_cache_bits,
                e_bits=fmt["expert_bits"] if fmt else None, state_bits=args.state_bits)
    if args.capacity:
        flush_pending()
        return run_capacity(spec, args, parser, bits=bits)
    if args.search:
        from ..serve.search import plot_front, search_report, search_serving  # only --search
        res = search_serving(spec, args, parser, fmt)
        flush_pending()
        res["warnings"] = list(spec["warnings"])
        res["serving_stack"] = hw["serving_stack"]
        res["model_described"] = spec["described"]
        note = plot_front(res, args.plot, parser=parser, precision=args.precision) if args.plot else None
        if note:
            print(f"note: {note}", file=sys.stderr)
        if args.brief:  # the front's best tokens/s per GPU
            print(f"{res['best']['tokens_per_s_per_gpu']:,.0f} tokens/s per GPU")
        elif args.json:
            import json
            print(json.dumps({k: v for k, v in res.items() if k not in ("points", "missed")}, indent=2))
        else:
            print(search_report(res, s=s, o=o, stack=hw["serving_stack"], top=args.top))
        return res
    w_bytes = weight_bytes_per_gpu(spec, tp=tp, pp=pp, w_bits=w_store, e_bits=bits["e_bits"], ep=ep, etp=etp)
    serving = None
    if args.concurrency is not None or args.request_rate is not None or args.requests:
        serving = serve_steady_state(spec, hw, args, parser, tp=tp, pp=pp, s=s, o=o, bits=bits,
                                     w_bytes=w_bytes)
        # the memory check holds the requests in service (queued ones hold no KV cache)
        b = max(1, math.ceil(serving["running_requests"]))
    step_s = hw["step_overhead_s"]  # the stack's host cost per engine step (0 for kernels only)

    def with_step(r):
        return dict(r, time_s=r["time_s"] + step_s,
                    components_s=dict(r["components_s"], step_overhead=step_s))

    if serving:  # the steady state's two steps stand for prefill and decode in the breakdown
        pre, first = serving.pop("prompt_step"), serving.pop("decode_step")
        last, dec_total = first, first["time_s"] * (o - 1)
        tpot, ttft, total = serving["tpot_s"], serving["ttft_s"], serving["e2e_s"]
        req_s = hw["request_overhead_s"]
    else:
        lay = dict(tp=tp, pp=pp, dp=dp, ep=ep)
        cached = args.prefix_tokens or 0  # -b with --prefix-tokens: the prefix's cache is there already
        pre = with_step(forward_pass(spec, hw, batch=b, new_tokens=s - cached, context_before=cached, absorbed=False,
                                     **lay, **bits))
        sp = args.speculative
        if sp:  # a verification pass of K + 1 tokens and the draft's K passes per step (mixed_step)
            def spec_step(ctx):
                return mixed_step(spec, hw, decodes=b, decode_context=ctx, prefill_tokens=0, prompt_tokens=s,
                                  bits=bits, **lay)
            first, last = spec_step(s), spec_step(s + max(o - 2, 0))
            pre = dict(pre, components_s=dict(pre["components_s"], speculative_draft=0.0))
            dec_total = (o - 1) * (first["time_s"] + last["time_s"]) / 2 / sp["tokens_per_step"]
        else:
            first = with_step(forward_pass(spec, hw, batch=b, new_tokens=1, context_before=s, absorbed=True,
                                           **lay, **bits))
            last = with_step(forward_pass(spec, hw, batch=b, new_tokens=1, context_before=s + max(o - 2, 0),
                                          absorbed=True, **lay, **bits))
            dec_total = (decode_total_s(spec, hw, batch=b, prompt_tokens=s, output_tokens=o, **lay, **bits)
                         + step_s * (o - 1))
        tpot = dec_total / (o - 1) if o > 1 else first["time_s"]
        req_s = hw["request_overhead_s"]
        ttft = req_s + pre["time_s"]
        total = ttft + dec_total
    flush_pending()
    steps = {}  # decode steps by batch: the two searches share their forward passes
    crit = critical_batch(spec, hw, tp=tp, pp=pp, dp=dp, ep=ep, context=s, matmuls_only=False,
                          steps=steps, **bits)
    crit_mm = critical_batch(spec, hw, tp=tp, pp=pp, dp=dp, ep=ep, context=s, matmuls_only=True,
                             steps=steps, **bits)
    b_group = math.ceil(b / dp)  # the requests of the most-loaded data-parallel group
    cache = cache_bytes_per_gpu(spec, tp=tp, pp=pp, batch=b_group, context=s + o, kv_bits=args.kv_cache_bits,
                                a_bits=args.activation_bits, state_bits=args.state_bits)
    mem = w_bytes + cache["kv"] + cache["indexer"] + cache["state"]
    fits = mem <= hw["gpu_memory_bytes"]
    if not fits:
        print(f"warning: weights {w_bytes / 2**30:.2f} GiB + KV cache {cache['kv'] / 2**30:.2f} GiB"
              + (f" + indexer keys {cache['indexer'] / 2**30:.2f} GiB" if cache["indexer"] else "")
              + (f" + linear-attention state {cache['state'] / 2**30:.2f} GiB" if cache["state"] else "")
              + f" per GPU exceed its {hw['gpu_memory_bytes'] / 2**30:.2f} GiB; raise -tp/-pp or cut "
              "bits, b, s+o", file=sys.stderr)
    kinds = []
    for (layer, cnt, first_i), pk, dk in zip(layer_groups(spec), pre["layer_kinds"], first["layer_kinds"]):
        lc = layer_cache_bytes(layer, tp=tp, batch=b_group, context=s + o, kv_bits=args.kv_cache_bits,
                               a_bits=args.activation_bits, state_bits=args.state_bits)
        kinds.append({
            "layers": cnt, "first_layer": first_i,
            "attention": " + ".join(attention_kind(a) for a in layer["attention"]) or "-",
            "mlp": " + ".join(mlp_kind(m) for m in layer["mlp"]),
            "prefill_s_per_layer": pk["time_s_per_layer"],
            "decode_first_step_s_per_layer": dk["time_s_per_layer"],
            "decode_first_step_s": cnt * dk["time_s_per_layer"],
            "weight_bytes_per_layer_per_gpu": layer_weight_bytes(layer, h=h, norm=spec["norm"], tp=tp,
                                                                 w_bits=w_store, e_bits=bits["e_bits"],
                                                                 ep=ep, etp=etp),
            "kv_cache_bytes_per_layer_per_gpu": lc["kv"],
            "indexer_cache_bytes_per_layer_per_gpu": lc["indexer"],
            "state_bytes_per_layer_per_gpu": lc["state"]})
    res = {
        "mode": (serving_mode_text(serving, s=s, o=o, tp=tp, pp=pp, stack=hw["serving_stack"], gpus=gpus)
                 if serving else mode_text(b=b, s=s, o=o, tp=tp, pp=pp, gpus=gpus))
                + layout_text(dp=dp, ep=ep, tp=tp, pp=pp, hw=hw, imbalance=first["ep_imbalance"]),
        "warnings": list(spec["warnings"]),
        "model": spec_summary(spec), "batch_size": b, "prompt_tokens": s, "output_tokens": o,
        "tensor_parallel_size": tp, "pipeline_parallel_size": pp, "data_parallel_size": dp,
        "expert_parallel_size": ep, "ep_imbalance": first["ep_imbalance"], "num_gpus": gpus,
        "weight_bits": args.weight_bits, "weight_storage_bits": w_store, "activation_bits": args.activation_bits,
        "checkpoint_format": fmt,
        "kv_cache_bits": args.kv_cache_bits, "sliding_window": win, "sliding_layers": win_layers,
        "hardware": {k: v for k, v in hw.items() if k != "speculative"},
        "speculative": ({k: v for k, v in args.speculative.items() if k not in ("draft_spec", "target_spec")}
                        if args.speculative else None),
        "prefill_s": pre["time_s"], "ttft_s": ttft, "request_overhead_s": req_s, "prefill_bound": pre["bound"],
        "prefill_components_s": pre["components_s"], "prefill_flops_per_gpu": pre["flops"],
        "prefill_bytes_per_gpu": pre["bytes"],
        "decode_per_token_s": tpot, "decode_first_step_s": first["time_s"],
        "decode_last_step_s": last["time_s"] if o > 1 else first["time_s"],
        "decode_bound": first["bound"], "decode_first_step_components_s": first["components_s"],
        "decode_step_flops_per_gpu": first["flops"], "decode_step_bytes_per_gpu": first["bytes"],
        "decode_step_weight_bytes_read_per_gpu": first["weight_bytes"],
        "decode_step_cache_bytes_read_per_gpu": first["cache_read_bytes"],
        "decode_total_s": dec_total, "total_s": total,
        "output_tokens_per_s": serving["output_tokens_per_s"] if serving else b * o / total,
        "output_tokens_per_s_per_gpu": (serving["output_tokens_per_s_per_gpu"] if serving
                                        else b * o / total / gpus),
        "tokens_per_s_per_user": 1.0 / tpot, "serving_stack": hw["serving_stack"], "serving": serving,
        "critical_batch_size": crit, "critical_batch_size_matmuls": crit_mm,
        "weight_bytes_per_gpu": w_bytes, "kv_cache_bytes_per_gpu": cache["kv"],
        "indexer_cache_bytes_per_gpu": cache["indexer"], "state_bytes_per_gpu": cache["state"],
        "state_bits": args.state_bits,
        "memory_bytes_per_gpu": mem, "fits_in_memory": fits,
        "layer_kinds": kinds,
        "convention": "TTFT = one prefill pass over the prompt (the first token comes from it); "
                      "o-1 decode steps, each reading every weight shard and the KV cache; per-op "
                      f"roofline (weight matmuls: soft corner, p = {ROOFLINE_CORNER_P}) + fixed per-kernel overhead, "
                      "summed over the layer list; TP ring "
                      "all-reduce after each attention and MLP block; PP stages sequential (a static "
                      "batch one in flight, continuous batching up to pp micro-batches); memory per GPU on the most-loaded stage (weights + KV at s+o, no "
                      "activations/workspace)" + attention_convention(spec),
    }
    print_result(res, as_json=args.json, report=format_report,
                 brief=(lambda r: f"TTFT {r['ttft_s'] * 1e3:.2f} ms TPOT {r['decode_per_token_s'] * 1e3:.2f} ms")
                 if args.brief else None)
    return res


if __name__ == "__main__":
    run_tool(main)
