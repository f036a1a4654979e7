"""Serving stack presets (vLLM, SGLang, TensorRT-LLM and its PyTorch backend) with the constants
they set, and the hardware a serving run resolves to (--gpu or explicit flags)."""

import math

from ..accelerator import default_accelerator
from ..cli import accelerator_record
from ..comm.collectives import (ALPHA_HOP_S, NVLS_EFFICIENCY, PCIE_PEER_EFFICIENCY,
    PCIE_SERVER_GPUS, SCALE_OUT_EFFICIENCY, build_net)


# --- constants (each with its source; see the module docstring) --------------------------------
DEFAULT_COMPUTE_EFFICIENCY = 0.70  # 16-bit matmuls; mamf-finder maxima 0.80-0.87; real shapes lower
# Below 16 bits the best achievable fraction of peak is lower: Bekman's mamf-finder on H100 SXM
# gives fp8 1402.6 of 1979 (0.709) vs bf16 794.5 of 989.4 (0.803), a ratio of 0.883 (GH200: 0.927).
LOW_BIT_EFFICIENCY_RATIO = (1402.6 / 1979.0) / (794.5 / 989.4)
# FP4 falls further below its best shape than FP8 at the shapes serving runs (a step's tokens x
# weights of 4-30k): Azure's cuBLASLt table for one GB200 (Azure/AI-benchmarking-guide,
# Azure_Results/ND_GB200_v6_results.md @2a370be6) gives FP4 5177.3 TFLOP/s at 4096^3 against
# 7627.6 at 16384^3, FP8 2834.6 against 2906.9, same GPU and tool. The ratio of the two falls
# scales every FP4 matmul rate. Checked, not fitted: flashinfer PR #1979 measured NVFP4 on a B200
# at 1024x7168x4608 at 3,371 (CUDA 12) and 3,841 TFLOP/s (CUDA 13); the B200 gets 3,870 here.
FP4_SHAPE_PENALTY = (5177.3 / 7627.6) / (2834.6 / 2906.9)
# --gpu scales a measured best-shape MAMF by the same gap the 0.70 default keeps below the A100's
# (271.2 of 312 = 0.869): forward-pass GEMM shapes run below the best shape mamf-finder finds.
MAMF_SHAPE_FACTOR = DEFAULT_COMPUTE_EFFICIENCY / (271.2 / 312.0)
# A weight matmul near the ridge runs slower than both roofs: neither its math nor its loads hide
# the other completely. Its time is the p-norm (t_math^p + t_mem^p)^(1/p); p = 2.15 is the least-
# squares fit (log time) to the 28 FP8 GEMMs (dense, contiguous and masked grouped) that DeepGEMM's
# README (first release, a6d97a1, H800) measured, given this script's own H100 FP8 rates (1,130
# TFLOP/s, 2,345 GB/s): rms error 14.8% against 19.2% for the sharp max. tools/fit_roofline_corner.py
# redoes the fit. No serving row set it.
ROOFLINE_CORNER_P = 2.15
DEFAULT_MEMORY_EFFICIENCY = 0.70   # gpt-fast: 1397.31 GB/s of 2039 on A100-80GB at batch 1;
# Databricks MBU 0.55-0.60 at batch 1, TP 2-4 (TensorRT-LLM), matched within 10% (VALIDATION.md)
# A decode attention kernel streams the KV cache (long contiguous pages, no kernel-launch gaps
# inside) closer to peak than a step's weight reads and small ops, which the 0.70 above covers
# end to end. 0.93 = our own H200 graph-mode decode steps (validation/h200/results/decode.jsonl,
# Llama-3-8B shape, bf16, SDPA with the query heads packed per KV head): going from 1,024 to 4,096
# cached tokens adds 2.878 ms at batch 32 (12.9 GB more K/V read: 4.48 TB/s) and 5.695 ms at batch
# 64 (25.8 GB: 4.53 TB/s) of 4.8 TB/s. The cache reads of the attention core run at it on the
# GPUs of that measurement's chip (GH100: H100, H200, GH200, H800, H20; unless --memory-efficiency
# is given), elsewhere at the memory efficiency; no serving row set it (VALIDATION.md judges it).
# The value and the GPUs it applies to are the record's kv_stream_efficiency (accelerator.py).
DEFAULT_KERNEL_OVERHEAD_US = 4.0   # per kernel, launch-to-launch gap of small dependent kernels
# PCIe cards without NVLink reach their peers over the slot at the collectives block's
# PCIE_PEER_EFFICIENCY (nccl-tests on 8 PCIe Gen4 GPUs), in servers of PCIE_SERVER_GPUS; the
# custom all-reduce kernels need NVLink peers (vLLM turns its own off on PCIe-only GPUs beyond two).
# kernels per block (11 for an ordinary layer, as before the layer list):
ATTENTION_KERNELS = 6  # norm, qkv, rope, attention, o-proj, add
MLP_KERNELS = 5        # norm, mlp-in, act, mlp-out, add
# a MoE block adds the router's top-k, the dispatch permute and the combine (TensorRT-LLM's MoE
# runner: topkGatingSoftmax, expandInputRowsKernel, finalizeMoeRoutingKernel, kernels/
# mixtureOfExperts/moe_kernels.cu; vLLM: topk_softmax, moe_align_block_size, moe_sum)
MOE_EXTRA_KERNELS = 3
INDEXER_KERNELS = 3    # a lightning indexer's projections, its scores, the top-k selection
# a Gated DeltaNet block as vLLM's Qwen3-Next runs it: norm, in_proj_qkvz, in_proj_ba, conv,
# gating (g, beta), the delta-rule kernel, gated norm, out_proj, add; assumed for every linear
# mixer (KDA, Mamba-1/2 and short convolutions launch a similar 6-9; not measured)
LINEAR_MIXER_KERNELS = 9
# DeepSeek-V4 adds per layer its compressor's projections and pooling (2) and two hyper-connection
# mixes (2 each: the projection and one fused Sinkhorn / mix kernel), fused as a serving stack would
DSV4_EXTRA_KERNELS = 6
# All-reduce defaults, equal to comm/collectives.py's ALPHA_LAUNCH_S and
# SCALE_UP_EFFICIENCY (named here for the presets and the help; a test keeps them equal):
DEFAULT_ALLREDUCE_LATENCY_US = 8.9  # per call: 10.14 us all_reduce_perf floor on 2 x A100 less 2 hops
DEFAULT_ALLREDUCE_EFFICIENCY = 0.80  # ring busbw / NVLink line rate: A100 235/300, H100 370/450
# The link assumed for a GPU hardware.py gives no scale-up link (read by no single-GPU cost):
# NVLink 3, per GPU per direction (600 GB/s bidirectional). Without --gpu the hardware is the
# default accelerator (accelerator.py), exactly as --gpu h100-sxm reads it.
DEFAULT_LINK_GBPS = 300.0
# --serving-stack presets: what a serving stack adds to the kernels' own time. Every value names
# its source (notes in VALIDATION.md, which also lists the published rows each one came from; those
# rows are not used to judge it). Keys:
#   kernel_overhead_us: gap per kernel (ATTENTION_KERNELS + MLP_KERNELS per layer; no source
#     separates CUDA-graph replay from eager launches, so decode and prompt steps pay the same);
#   allreduce_us: fixed cost per TP all-reduce call; allreduce_gbps: None = NCCL's ring (the
#     calc_comm model: hops and link bandwidth), else a custom one-shot kernel costed as
#     allreduce_us + (n-1)/n x bytes / that effective rate, or NCCL's ring when that is faster;
#   step_overhead_ms: host time per engine step the GPU waits for (scheduling, sampling);
#   request_overhead_ms: per request outside the engine (HTTP server, tokenizer, IPC);
#   token_budget: tokens per engine step (None: a whole batch's prompts in one pass), or a list of
#     (bound, budget) tried in order, the stack's own rule: a number bound matches a GPU with less
#     memory (GiB), a text bound a GPU whose name holds it, None any GPU;
#   max_num_seqs: requests the scheduler runs at once (vLLM's max_num_seqs, TensorRT-LLM's
#     max_batch_size, SGLang's max_running_requests) per data-parallel engine, a rule as for
#     token_budget; None: only the KV pool limits it; past it requests wait in the server's queue;
#   memory_utilization: share of GPU memory for weights plus the KV pool (pool_of_free: share of
#     the memory the weights leave, TensorRT-LLM's free_gpu_memory_fraction; kvCacheManager.cpp).
# No stack publishes its own matmul or bandwidth fraction, so every stack runs at the hardware's.
_NCCL = dict(allreduce_us=DEFAULT_ALLREDUCE_LATENCY_US, allreduce_gbps=None)
TRTLLM_PYTORCH_MOE_FACTOR = 2.31  # tools/fit_trtllm_moe_factor.py (see tensorrt-llm-pytorch below)
# TensorRT-LLM's values (sources at "tensorrt-llm" below)
_TRTLLM = dict(allreduce_us=4.4, allreduce_gbps=31.0, kernel_overhead_us=DEFAULT_KERNEL_OVERHEAD_US,
               step_overhead_ms=0.58, request_overhead_ms=0.0, token_budget=8192, max_num_seqs=2048,
               memory_utilization=0.9, pool_of_free=True)
SERVING_STACKS = {
    # today's defaults: kernels only (gpt-fast-like CUDA-graph decode; see the constants above)
    "kernels": dict(_NCCL, kernel_overhead_us=DEFAULT_KERNEL_OVERHEAD_US, step_overhead_ms=0.0,
                    request_overhead_ms=0.0, token_budget=None, max_num_seqs=None, memory_utilization=1.0),
    # FasterTransformer (C++ runtime, static batch, NCCL: its custom all-reduce is off by default,
    # custom_ar_comm.cc). 47.9 us per in-place all-reduce call: FT's own GPT-20B TP 8 table
    # (60/20 minus 20/8 over 12 steps, docs/gpt_guide.md; that row is calibration)
    "fastertransformer": dict(allreduce_us=47.9, allreduce_gbps=None,
                              kernel_overhead_us=DEFAULT_KERNEL_OVERHEAD_US, step_overhead_ms=0.0,
                              request_overhead_ms=0.0, token_budget=None, max_num_seqs=None,
                              memory_utilization=1.0),
    # the same behind Triton Inference Server: + 88.1 ms per request, FT's GPT-89B TP 8 128/8 row
    # (measured through Triton per gpt_guide.md; that row is calibration)
    "fastertransformer-triton": dict(allreduce_us=47.9, allreduce_gbps=None,
                                     kernel_overhead_us=DEFAULT_KERNEL_OVERHEAD_US, step_overhead_ms=0.0,
                                     request_overhead_ms=88.1, token_budget=None, max_num_seqs=None,
                                     memory_utilization=1.0),
    # TensorRT-LLM: custom one-shot all-reduce (FT's kernels' descendant) 4.4 us + 31 GB/s
    # effective, from SGLang PR #2904's H100 table of that kernel (TP 2/4/8, 4 KB - 1 MB);
    # 0.58 ms exposed host time per iteration (TensorRT-LLM issue #13957, overlap scheduler on);
    # max_num_tokens 8192 (perf-best-practices.md, since v0.11) and max_batch_size 2048 (BuildConfig's
    # defaults, tensorrt_llm/builder.py); free_gpu_memory_fraction 0.9
    "tensorrt-llm": _TRTLLM,
    # TensorRT-LLM before its XQA kernel (v0.5-v0.7; the XQA blog, docs/source/blogs/XQA-kernel.md:
    # "will be included in the v0.8 releases"): the same, with the generation step's masked MHA
    # kernel reading a GQA/MQA block's cache once per query head (a block per query head). The
    # blog's own pair checks it, not fitted: Llama-70B FP8 on one H200, 128/2048, 1,227 tok/s/GPU
    # without XQA against 2,941 with it (tests/test_calc_inference_latency.py)
    "tensorrt-llm-mmha": dict(_TRTLLM, per_head_kv_decode=True),
    # TensorRT-LLM's PyTorch backend (trtllm-serve, trtllm-bench --backend pytorch; the default since
    # 0.19): as tensorrt-llm, and its MoE blocks (CUTLASS MoE backend by default, routing and
    # permutation in the PyTorch module) take TRTLLM_PYTORCH_MOE_FACTOR x our per-kernel account of
    # them. An empirical stack constant, cause not identified (flashinfer's measured trtllm-gen fused
    # MoE kernel is matched without it), set by tools/fit_trtllm_moe_factor.py from the later
    # perf-overview's 106 MoE rows (developer-guide/perf-overview.md @585c756; those rows are
    # calibration) and judged on the v1.0 table's 110 MoE rows
    "tensorrt-llm-pytorch": dict(_TRTLLM, moe_factor=True),
    # TensorRT-LLM behind Triton's tensorrtllm_backend (HTTP/gRPC, the ensemble's pre- and
    # post-processing models): as tensorrt-llm, plus 2.25 ms per request, the median of published
    # TTFT less ours at the lightest load of perf-overview.md's v0.14 online table on H100 (QPS 2:
    # Llama-3.1-8B 202/214, 467/16, 467/256 and 70B TP 4 the same: 3.8, 2.1, 2.4, 5.6, -0.8, 0.6
    # ms; those six rows are calibration), judged on the table's other 210 rows (H200, QPS 4-inf)
    "tensorrt-llm-triton": dict(_TRTLLM, request_overhead_ms=2.25),
    # vLLM V1: custom all-reduce 9.0 us + 26 GB/s (the vLLM column of SGLang PR #2904, H100);
    # max_num_batched_tokens 8192 and max_num_seqs 1024 for the OpenAI server on >= 70 GiB GPUs
    # other than A100, else 2048 and 256 (vllm/engine/arg_utils.py, get_batch_defaults);
    # gpu_memory_utilization 0.9; 4 ms per request online vs
    # offline (HTTP + ZMQ, tenstorrent/tt-inference-server#190); per-step host time: no V1 figure
    # was found, TensorRT-LLM's 0.58 ms stands in (stated)
    "vllm": dict(allreduce_us=9.0, allreduce_gbps=26.0, kernel_overhead_us=DEFAULT_KERNEL_OVERHEAD_US,
                 step_overhead_ms=0.58, request_overhead_ms=4.0,
                 token_budget=[("a100", 2048), (70, 2048), (None, 8192)],
                 max_num_seqs=[("a100", 256), (70, 256), (None, 1024)], memory_utilization=0.9),
    # SGLang: TensorRT-LLM-derived custom all-reduce (PR #2904, as tensorrt-llm); the overlap
    # scheduler hides host work (v0.4 blog: no idle time between decode batches): 0 per step;
    # chunked_prefill_size 2048 below 35 GB, 8192 below 160 GB, else 16384 (server_args.py);
    # max_running_requests unset: derived from the KV token pool (no cap here beyond the pool);
    # per-request cost assumed vLLM's (no SGLang figure found)
    "sglang": dict(allreduce_us=4.4, allreduce_gbps=31.0, kernel_overhead_us=DEFAULT_KERNEL_OVERHEAD_US,
                   step_overhead_ms=0.0, request_overhead_ms=4.0,
                   token_budget=[(35, 2048), (160, 8192), (None, 16384)], max_num_seqs=None,
                   memory_utilization=0.9),
    # plain transformers generate, eager PyTorch, no CUDA graphs: 40 us per kernel of ours, from
    # arXiv 2605.30571 (Qwen-2.5-7B bf16 batch 1 on H100 at 0.27 of the bandwidth floor: 17.0 ms
    # per token against 4.6 ms, the gap over 28 layers x 11 kernels); NCCL through torch.distributed
    "hf-eager": dict(_NCCL, kernel_overhead_us=40.0, step_overhead_ms=0.0, request_overhead_ms=0.0,
                     token_budget=None, max_num_seqs=None, memory_utilization=1.0),
}
# the default: vLLM, the open-source engine most serving deployments run today; its `vllm serve`
# defaults are what a user gets without tuning
DEFAULT_SERVING_STACK = "vllm"
ALLOWED_BITS = (4, 8, 16, 32)
# The range of each script flag (argparse dest: (lo, hi), both inclusive): far past any real
# request or accelerator (1e6 TFLOP/s and 1e6 GB/s ~ 500 x an H100; 1e9 tokens ~ 100 x the
# longest context), and tight enough that no time overflows to inf, divides by ~0 or turns
# negative. The bit widths take ALLOWED_BITS; the model flags have their caps in model/spec.py (_CAPS).
FLAG_RANGES = {
    "batch_size": (1, 10 ** 9), "prompt_tokens": (1, 10 ** 9), "output_tokens": (1, 10 ** 9),
    "tensor_parallel_size": (1, 10 ** 7), "pipeline_parallel_size": (1, 10 ** 7),
    "data_parallel_size": (1, 10 ** 7), "expert_parallel_size": (1, 10 ** 7), "ep_imbalance": (1, 1e6),
    "gpus_per_node": (1, 10 ** 7), "scale_out_gbps": (1e-3, 1e6), "num_gpus": (1, 4096),
    "max_ttft_ms": (1e-6, 1e9), "max_tpot_ms": (1e-6, 1e9), "top": (1, 10 ** 6),
    "max_replica_gpus": (1, 4096),
    "peak_tflops": (1e-3, 1e6), "memory_bandwidth_gbps": (1e-3, 1e6), "gpu_memory_gib": (1e-3, 1e6),
    "tp_bandwidth_gbps": (1e-3, 1e6), "compute_efficiency": (1e-3, 1), "memory_efficiency": (1e-3, 1),
    "tp_efficiency": (1e-3, 1), "kernel_overhead_us": (0, 1e6), "tp_latency_us": (0, 1e6),
    "request_overhead_ms": (0, 1e6), "state_bits": (1, 64), "concurrency": (1, 10 ** 7),
    "request_rate": (1e-6, 1e7), "num_requests": (1, 10 ** 6), "seed": (0, 10 ** 9),
    "max_num_batched_tokens": (1, 10 ** 9), "max_num_seqs": (1, 10 ** 7),
    "step_overhead_ms": (0, 1e6), "random_input_len": (1, 10 ** 9), "random_output_len": (1, 10 ** 9),
    "random_range_ratio": (0, 0.999999), "prefix_tokens": (1, 10 ** 9), "prefix_hit_rate": (0, 1),
    "speculative_tokens": (1, 64), "target_request_rate": (1e-6, 1e7), "host_kv_cache_gib": (1e-3, 1e7), "num_scheduler_steps": (1, 1024),
    "host_kv_bandwidth_gbps": (1e-3, 1e6),
    "gpu_memory_utilization": (1e-3, 1)}
# activation bits -> hardware.py dtype keys, first present wins
COMPUTE_DTYPE = {32: ("tf32", "fp32"), 16: ("bf16", "fp16"), 8: ("fp8", "int8"), 4: ("fp4",)}


def stack_rule(rule, memory_bytes, gpu_name):
    """A stack default that depends on the GPU (token budget, running-request cap): a number,
    None, or the value of the first (bound, value) pair that matches: a number bound when the GPU
    has less memory (GiB), a text bound when the GPU's name holds it (vLLM's A100 exception),
    None always."""
    if not isinstance(rule, list):
        return rule
    gib, name = memory_bytes / 2 ** 30, (gpu_name or "a100-80gb").lower()
    return next(b for bound, b in rule
                if bound is None or (bound in name if isinstance(bound, str) else gib < bound))


# --- hardware ------------------------------------------------------------------------------------
def resolve_hardware(args, parser):
    """Peak FLOP/s, bandwidths and memory: explicit flags win, then the accelerator's record (--gpu
    from hardware.py, else the default accelerator; its achievable figures when present and no
    efficiency flag overrides them). Returns (hw dict, notes)."""
    notes = []
    if args.gpu:
        rec = accelerator_record(args.gpu, parser, without="without it pass --peak-tflops, "
                                 "--memory-bandwidth-gbps, --gpu-memory-gib and --tp-bandwidth-gbps")
    else:  # the default accelerator: exactly the record --gpu h100-sxm reads
        rec = default_accelerator()
    a_bits = args.activation_bits
    ce, me = args.compute_efficiency, args.memory_efficiency
    # 16-bit rate for the attention math: (peak, efficiency); filled below when a_bits < 16
    peak16 = ce16 = None
    if args.peak_tflops is not None:
        peak = args.peak_tflops * 1e12
    else:
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
    if args.memory_bandwidth_gbps is not None:
        bw = args.memory_bandwidth_gbps * 1e9
    else:
        bw = rec["memory_bandwidth_bytes_per_s"]
        ach = rec.get("achievable_memory_bandwidth_bytes_per_s")
        if ach and me is None:
            me = ach / bw
            notes.append(f"memory efficiency {me:.3f} = achievable / peak bandwidth ({rec['name']})")
    if args.gpu_memory_gib is not None:
        mem = args.gpu_memory_gib * 2 ** 30
    else:  # driver-reported capacity; older hardware.py: vendor GB
        mem = rec.get("memory_usable_bytes") or rec["memory_bytes"]
    tp, pp = args.tensor_parallel_size, args.pipeline_parallel_size
    width = tp * args.data_parallel_size  # GPUs of one pipeline stage
    # the scale-up link per GPU (one direction), the NVLink domain, the NIC per GPU beyond it
    pcie_peers = False
    agg, dom = rec.get("scale_up_bandwidth_bytes_per_s"), rec.get("scale_up_domain_size")
    out = rec.get("scale_out_bandwidth_bytes_per_s")
    mesh = rec.get("scale_up_topology") == "mesh" and bool(dom and dom > 1)
    # in-network reduction is the record's switch; a link of your own without --gpu has none
    in_net = bool(rec.get("scale_up_in_network_reduction")) and not (not args.gpu and args.tp_bandwidth_gbps)
    if not agg and rec.get("pcie_peer_bandwidth_bytes_per_s") and args.tp_bandwidth_gbps is None:
        # PCIe cards with peer-to-peer: NCCL's ring over the slot, a server of PCIE_SERVER_GPUS
        agg, dom, pcie_peers = rec["pcie_peer_bandwidth_bytes_per_s"], PCIE_SERVER_GPUS, True
        if width * pp > 1:
            notes.append(f"{rec['name']}: no NVLink; peers over PCIe at {agg / 1e9:.1f} GB/s x "
                         f"{PCIE_PEER_EFFICIENCY:.3f} (NCCL's ring; no custom all-reduce), servers of "
                         f"{PCIE_SERVER_GPUS} GPUs")
    if not agg and width * pp > 1 and args.tp_bandwidth_gbps is None:
        parser.error(f"--gpu {rec['name']} has no scale-up link and no peer-to-peer over PCIe; pass "
                     "--tp-bandwidth-gbps (GB/s per GPU, one direction)")
    if args.tp_bandwidth_gbps is not None:  # the user's link; without a domain it joins every GPU
        agg, mesh = args.tp_bandwidth_gbps * 1e9, False
        dom = dom if rec.get("scale_up_bandwidth_bytes_per_s") else None
    agg = agg or DEFAULT_LINK_GBPS * 1e9  # no scale-up link: a stand-in no single-GPU cost reads
    dom = args.gpus_per_node or dom or width * pp
    if args.scale_out_gbps is not None:
        out = args.scale_out_gbps * 1e9
    if width * pp > dom and not out:
        parser.error(f"-tp {tp} x -dp {args.data_parallel_size} x -pp {pp} spans more than one "
                     f"{rec['name']} node of {dom} GPUs and no scale-out bandwidth is known; pass "
                     "--scale-out-gbps (GB/s per GPU, one direction)")
    if width > dom:
        notes.append(f"-tp {tp} x -dp {args.data_parallel_size} spans {math.ceil(width / dom)} nodes of "
                     f"{dom} GPUs: collectives cross the network at {out / 1e9:g} GB/s per GPU "
                     f"(x {SCALE_OUT_EFFICIENCY})")
    # what one rank drives: a full mesh (xGMI, Gaudi RoCE) gives a group of g its g-1 of the dom-1
    # peer links (calc_comm.group_intra_bytes_per_s), a switch the whole link
    link = agg * max(1, min(tp, dom) - 1) / (dom - 1) if mesh else agg
    p2p_cross = width * pp > dom and pp > 1  # stage hand-offs leave the node
    if p2p_cross:
        notes.append(f"pipeline hand-offs cross nodes: {out / 1e9:g} GB/s per GPU")
    if ce is None:  # no flag, no measured figure: 0.70 at 16 bits, lower below (see constants)
        ce = DEFAULT_COMPUTE_EFFICIENCY * (LOW_BIT_EFFICIENCY_RATIO if a_bits < 16 else 1.0)
    if a_bits == 4 and args.compute_efficiency is None:  # FP4 reaches its best shape later
        ce *= FP4_SHAPE_PENALTY
        notes.append(f"fp4 matmuls x {FP4_SHAPE_PENALTY:.3f} (FP4 falls further below its best shape than "
                     f"FP8 at 4096^3, Azure GB200 cuBLASLt): efficiency {ce:.3f}")
    if a_bits < 16:  # attention at 16 bits: the table's 16-bit peak, else half the rate per halving
        peak16 = peak16 or peak * a_bits / 16
        ce16 = ce16 or (ce if args.compute_efficiency is not None else DEFAULT_COMPUTE_EFFICIENCY)
    else:
        peak16, ce16 = peak, ce
    me = DEFAULT_MEMORY_EFFICIENCY if me is None else me
    stack = SERVING_STACKS[args.serving_stack]
    ovh = stack["kernel_overhead_us"] if args.kernel_overhead_us is None else args.kernel_overhead_us
    lat = ((DEFAULT_ALLREDUCE_LATENCY_US if pcie_peers else stack["allreduce_us"]) if args.tp_latency_us is None
           else args.tp_latency_us)  # PCIe peers: NCCL's own call cost (no custom kernel)
    leff = ((PCIE_PEER_EFFICIENCY if pcie_peers else DEFAULT_ALLREDUCE_EFFICIENCY) if args.tp_efficiency is None
            else args.tp_efficiency)
    hw = {"gpu": rec["name"], "gpu_default": not args.gpu, "peak_flops_per_s": peak, "compute_efficiency": ce,
          "flops_per_s": peak * ce, "attention_flops_per_s": peak16 * ce16,
          "memory_bandwidth_bytes_per_s": bw, "memory_efficiency": me,
          "bytes_per_s": bw * me, "gpu_memory_bytes": mem,
          "cache_bytes_per_s": bw * (max(me, rec["kv_stream_efficiency"]) if args.memory_efficiency is None
                                     and rec.get("kv_stream_efficiency") else me), "link_bytes_per_s": link,
          "p2p_cross_node": p2p_cross, "gpus_per_node": dom, "scale_out_bytes_per_s": out,
          # False: a GPU whose peers are not modelled (no scale-up link, no PCIe P2P: GeForce cards)
          # without --tp-bandwidth-gbps
          "peer_link": not (not rec.get("scale_up_bandwidth_bytes_per_s")
                            and not pcie_peers and args.tp_bandwidth_gbps is None),
          "ep_imbalance": args.ep_imbalance,
          "link_latency_s": lat * 1e-6, "link_efficiency": leff, "kernel_overhead_s": ovh * 1e-6,
          "serving_stack": args.serving_stack,
          # NCCL's call cost: pipeline hand-offs, and all-reduces too large for a custom kernel
          "nccl_latency_s": (DEFAULT_ALLREDUCE_LATENCY_US if args.tp_latency_us is None else args.tp_latency_us) * 1e-6,
          "step_overhead_s": (stack["step_overhead_ms"] if args.step_overhead_ms is None
                              else args.step_overhead_ms) * 1e-3,
          "request_overhead_s": (stack["request_overhead_ms"] if args.request_overhead_ms is None
                                 else args.request_overhead_ms) * 1e-3,
          "allreduce_custom_bytes_per_s": (stack["allreduce_gbps"] * 1e9 if stack["allreduce_gbps"]
                                           and args.tp_bandwidth_gbps is None and not pcie_peers else None),
          "token_budget": (stack_rule(stack["token_budget"], mem, rec["name"])
                           if args.max_num_batched_tokens is None else args.max_num_batched_tokens),
          "max_num_seqs": (stack_rule(stack["max_num_seqs"], mem, rec["name"])
                           if args.max_num_seqs is None else args.max_num_seqs),
          "memory_utilization": (stack["memory_utilization"] if args.gpu_memory_utilization is None
                                 else args.gpu_memory_utilization),
          "moe_factor": TRTLLM_PYTORCH_MOE_FACTOR if stack.get("moe_factor") else 1.0,
          "per_head_kv_decode": bool(stack.get("per_head_kv_decode")),
          "pool_of_free": bool(stack.get("pool_of_free"))}
    hw["net"] = build_net(intra_bytes_per_s=agg, inter_bytes_per_s=out, in_network_reduction=in_net,
                          intra_efficiency=leff, inter_efficiency=SCALE_OUT_EFFICIENCY,
                          nvls_efficiency=NVLS_EFFICIENCY, launch_s=hw["nccl_latency_s"],
                          intra_hop_ll_s=ALPHA_HOP_S["ll"]["intra"], inter_hop_ll_s=ALPHA_HOP_S["ll"]["inter"],
                          mesh_domain=dom if mesh else None)
    return hw, notes
