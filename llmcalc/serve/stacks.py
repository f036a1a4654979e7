"""Serving stacks (vLLM, SGLang, TensorRT-LLM and its PyTorch backend, Triton, FasterTransformer,
plain transformers, the kernels-only model), one ServingStack record each: the constants they set,
their scheduler defaults and their launch command (launch.py); and the hardware a serving run
resolves to (ServingHardware: the GPU record the tool gives, the flags over it, the layout's links
and the stack's costs). Nothing here reads a GPU's or a stack's name to decide: the GPU's facts
are its record's fields, the stack's its record's."""

import math

from ..comm.collectives import (ALPHA_HOP_S, ALPHA_LAUNCH_S, NVLS_EFFICIENCY,
    PCIE_PEER_EFFICIENCY, PCIE_SERVER_GPUS, SCALE_OUT_EFFICIENCY, SCALE_UP_EFFICIENCY, build_net)
from ..errors import CalcError
from ..records import Record
from .launch import (fastertransformer_command, fastertransformer_triton_command,
    hf_generate_command, no_server_command, sglang_command, trtllm_engine_command,
    trtllm_pre_xqa_command, trtllm_pytorch_command, trtllm_triton_command, vllm_command)
from .offload import host_link_bytes_per_s


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
# Its value is (5177.3 / 7627.6) / (2834.6 / 2906.9) (tests/test_calibration_registry.py reads it).
FP4_SHAPE_PENALTY = 0.6960713040071491  # calibrated: fp4_shape_penalty
# --gpu scales a measured best-shape MAMF by the same gap the 0.70 default keeps below the A100's
# (271.2 of 312 = 0.869): forward-pass GEMM shapes run below the best shape mamf-finder finds.
MAMF_SHAPE_FACTOR = DEFAULT_COMPUTE_EFFICIENCY / (271.2 / 312.0)
# A weight matmul near the ridge runs slower than both roofs: neither its math nor its loads hide
# the other completely. Its time is the p-norm (t_math^p + t_mem^p)^(1/p); p = 2.15 is the least-
# squares fit (log time) to the 28 FP8 GEMMs (dense, contiguous and masked grouped) that DeepGEMM's
# README (first release, a6d97a1, H800) measured, given this script's own H100 FP8 rates (1,130
# TFLOP/s, 2,345 GB/s): rms error 14.8% against 19.2% for the sharp max. tools/fit_roofline_corner.py
# redoes the fit. No serving row set it.
ROOFLINE_CORNER_P = 2.15  # calibrated: roofline_corner_p
# gpt-fast: 1397.31 GB/s of 2039 on A100-80GB at batch 1;
DEFAULT_MEMORY_EFFICIENCY = 0.70  # calibrated: memory_efficiency
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
# All-reduce defaults: comm/collectives.py's NCCL call cost (8.9 us per call: 10.14 us
# all_reduce_perf floor on 2 x A100 less 2 hops) and scale-up efficiency (0.80: ring busbw / NVLink
# line rate, A100 235/300, H100 370/450), taken from there, not copied (named here for the presets
# and the help; a test checks both are the collectives block's own objects and calc_comm's defaults)
DEFAULT_ALLREDUCE_LATENCY_US = round(ALPHA_LAUNCH_S * 1e6, 6)
DEFAULT_ALLREDUCE_EFFICIENCY = SCALE_UP_EFFICIENCY
# The link assumed for a GPU hardware.py gives no scale-up link (read by no single-GPU cost):
# NVLink 3, per GPU per direction (600 GB/s bidirectional). Without --gpu the hardware is the
# default accelerator (accelerator.py), exactly as --gpu h100-sxm reads it.
DEFAULT_LINK_GBPS = 300.0
# --serving-stack presets: what a serving stack adds to the kernels' own time, and how it is
# launched. Every value names its source (notes in VALIDATION.md, which also lists the published
# rows each one came from; those rows are not used to judge it). Fields: ServingStack.FIELDS.
# No stack publishes its own matmul or bandwidth fraction, so every stack runs at the hardware's.
class ServingStack(Record):
    """One serving stack: what it adds to the kernels' time, its scheduler defaults and its launch
    command. A rule (token_budget, max_num_seqs) is a number, None, or a list of (bound, value)
    tried in order: a number bound matches a GPU with less memory (GiB), a text bound a GPU whose
    kernel_family it is (accelerator record), None any GPU (stack_rule)."""

    __slots__ = ()

    FIELDS = {
        "name": "the --serving-stack key",
        "kernel_overhead_us": "gap per kernel, us (ATTENTION_KERNELS + MLP_KERNELS per layer; no "
                              "source separates CUDA-graph replay from eager launches, so decode "
                              "and prompt steps pay the same)",
        "allreduce_us": "fixed cost per TP all-reduce call, us",
        "allreduce_gbps": "None: NCCL's ring (the calc_comm model: hops and link bandwidth); else "
                          "a custom one-shot kernel costed as allreduce_us + (n-1)/n x bytes / "
                          "this effective rate (GB/s), or NCCL's ring when that is faster",
        "step_overhead_ms": "host time per engine step the GPU waits for (scheduling, sampling), "
                            "ms",
        "request_overhead_ms": "per request outside the engine (HTTP server, tokenizer, IPC), ms",
        "token_budget": "tokens per engine step, a rule (None: a whole batch's prompts in one "
                        "pass)",
        "max_num_seqs": "requests the scheduler runs at once per data-parallel engine, a rule "
                        "(vLLM's max_num_seqs, TensorRT-LLM's max_batch_size, SGLang's "
                        "max_running_requests); None: only the KV pool limits it; past it "
                        "requests wait in the server's queue",
        "memory_utilization": "share of GPU memory for weights plus the KV pool",
        "pool_of_free": "memory_utilization is a share of the memory the weights leave "
                        "(TensorRT-LLM's free_gpu_memory_fraction; kvCacheManager.cpp)",
        "per_head_kv_decode": "the decode attention reads a GQA/MQA block's cache once per query "
                              "head (TensorRT-LLM's masked MHA before XQA)",
        "moe_factor": "multiplier on our per-kernel account of a MoE block's time (1.0: none)",
        "launch": "launch(plan) -> the command lines that start one replica (serve/launch.py); "
                  "a line starting '#' says what to run where the stack has no server command",
    }
    REQUIRED = tuple(FIELDS)


def _stack(name, *, launch, allreduce_us=DEFAULT_ALLREDUCE_LATENCY_US, allreduce_gbps=None,
           kernel_overhead_us=DEFAULT_KERNEL_OVERHEAD_US, step_overhead_ms=0.0,
           request_overhead_ms=0.0, token_budget=None, max_num_seqs=None, memory_utilization=1.0,
           pool_of_free=False, per_head_kv_decode=False, moe_factor=1.0):
    """A ServingStack with the kernels-only defaults for every value the stack does not set."""
    return ServingStack(
        name=name, kernel_overhead_us=kernel_overhead_us, allreduce_us=allreduce_us,
        allreduce_gbps=allreduce_gbps, step_overhead_ms=step_overhead_ms,
        request_overhead_ms=request_overhead_ms, token_budget=token_budget,
        max_num_seqs=max_num_seqs, memory_utilization=memory_utilization, pool_of_free=pool_of_free,
        per_head_kv_decode=per_head_kv_decode, moe_factor=moe_factor, launch=launch)


TRTLLM_PYTORCH_MOE_FACTOR = 2.31  # tools/fit_trtllm_moe_factor.py (see tensorrt-llm-pytorch below)
# TensorRT-LLM behind Triton: ms per request (see tensorrt-llm-triton below)
TRTLLM_TRITON_REQUEST_MS = 2.25  # calibrated: trtllm_triton_request_overhead_ms
# FasterTransformer: host ms per generation step, us per in-place all-reduce call, and ms per
# request behind Triton (below); tools/fit_ft_constants.py derives the three in that order
FT_STEP_OVERHEAD_MS = 1.11  # calibrated: ft_step_overhead_ms
FT_ALLREDUCE_US = 30.9  # calibrated: ft_allreduce_us
FT_TRITON_REQUEST_MS = 88.2  # calibrated: ft_triton_request_overhead_ms
# TensorRT-LLM's values (sources at "tensorrt-llm" below)
_TRTLLM = dict(allreduce_us=4.4, allreduce_gbps=31.0, step_overhead_ms=0.58, token_budget=8192,
               max_num_seqs=2048, memory_utilization=0.9, pool_of_free=True)
# vLLM's get_batch_defaults (vllm/engine/arg_utils.py) keeps the small defaults (2048 tokens, 256
# requests) unless `device_memory >= 70 GiB and "a100" not in device_name`: an A100 80GB keeps
# them. The rule is read here on the record's kernel_family: "ampere" is the A100 rows' family and
# no other row's (accelerator.py), so it answers as vLLM's name test does for every GPU in the
# table (the other Ampere cards, A10/A10G/RTX 3090, have under 70 GiB either way).
_VLLM_A100_RULE = "ampere"
SERVING_STACKS = {s["name"]: s for s in (
    # today's defaults: kernels only (gpt-fast-like CUDA-graph decode; see the constants above)
    _stack("kernels", launch=no_server_command),
    # FasterTransformer (C++ runtime, static batch, no CUDA graphs, NCCL: its custom all-reduce is
    # off by default, custom_ar_comm.cc). 1.11 ms of host time per generation step that the GPU
    # waits for (each step's loop copies the finished flags and lengths back and synchronises
    # before the next step's launches; no graph hides them): FT's GPT-350M TP 1 batch 1 table
    # (512/32 minus 128/8 over 24 steps, docs/gpt_guide.md; those two rows are calibration).
    # 30.9 us per in-place all-reduce call: its GPT-20B TP 8 table (60/20 minus 20/8 over 12
    # steps; those rows are calibration)
    _stack("fastertransformer", allreduce_us=FT_ALLREDUCE_US, step_overhead_ms=FT_STEP_OVERHEAD_MS,
           launch=fastertransformer_command),
    # the same behind Triton Inference Server: + 88.2 ms per request, FT's GPT-89B TP 8 128/8 row
    # (measured through Triton per gpt_guide.md; that row is calibration)
    _stack("fastertransformer-triton", allreduce_us=FT_ALLREDUCE_US,
           step_overhead_ms=FT_STEP_OVERHEAD_MS, request_overhead_ms=FT_TRITON_REQUEST_MS,
           launch=fastertransformer_triton_command),
    # TensorRT-LLM: custom one-shot all-reduce (FT's kernels' descendant) 4.4 us + 31 GB/s
    # effective, from SGLang PR #2904's H100 table of that kernel (TP 2/4/8, 4 KB - 1 MB);
    # 0.58 ms exposed host time per iteration (TensorRT-LLM issue #13957, overlap scheduler on);
    # max_num_tokens 8192 (perf-best-practices.md, since v0.11) and max_batch_size 2048 (BuildConfig's
    # defaults, tensorrt_llm/builder.py); free_gpu_memory_fraction 0.9
    _stack("tensorrt-llm", **_TRTLLM, launch=trtllm_engine_command),
    # TensorRT-LLM before its XQA kernel (v0.5-v0.7; the XQA blog, docs/source/blogs/XQA-kernel.md:
    # "will be included in the v0.8 releases"): the same, with the generation step's masked MHA
    # kernel reading a GQA/MQA block's cache once per query head (a block per query head). The
    # blog's own pair checks it, not fitted: Llama-70B FP8 on one H200, 128/2048, 1,227 tok/s/GPU
    # without XQA against 2,941 with it (tests/test_calc_inference_latency.py)
    _stack("tensorrt-llm-mmha", **_TRTLLM, per_head_kv_decode=True, launch=trtllm_pre_xqa_command),
    # TensorRT-LLM's PyTorch backend (trtllm-serve, trtllm-bench --backend pytorch; the default since
    # 0.19): as tensorrt-llm, and its MoE blocks (CUTLASS MoE backend by default, routing and
    # permutation in the PyTorch module) take TRTLLM_PYTORCH_MOE_FACTOR x our per-kernel account of
    # them. An empirical stack constant, cause not identified (flashinfer's measured trtllm-gen fused
    # MoE kernel is matched without it), set by tools/fit_trtllm_moe_factor.py from the later
    # perf-overview's 106 MoE rows (developer-guide/perf-overview.md @585c756; those rows are
    # calibration) and judged on the v1.0 table's 110 MoE rows
    _stack("tensorrt-llm-pytorch", **_TRTLLM, moe_factor=TRTLLM_PYTORCH_MOE_FACTOR,
           launch=trtllm_pytorch_command),
    # TensorRT-LLM behind Triton's tensorrtllm_backend (HTTP/gRPC, the ensemble's pre- and
    # post-processing models): as tensorrt-llm, plus 2.25 ms per request, the median of published
    # TTFT less ours at the lightest load of perf-overview.md's v0.14 online table on H100 (QPS 2:
    # Llama-3.1-8B 202/214, 467/16, 467/256 and 70B TP 4 the same: 3.8, 2.1, 2.4, 5.6, -0.8, 0.6
    # ms; those six rows are calibration), judged on its other 140 (its 202/214 rows not run)
    _stack("tensorrt-llm-triton", **dict(_TRTLLM, request_overhead_ms=TRTLLM_TRITON_REQUEST_MS),
           launch=trtllm_triton_command),
    # vLLM V1: custom all-reduce 9.0 us + 26 GB/s (the vLLM column of SGLang PR #2904, H100);
    # max_num_batched_tokens 8192 and max_num_seqs 1024 for the OpenAI server on >= 70 GiB GPUs
    # other than A100, else 2048 and 256 (vllm/engine/arg_utils.py, get_batch_defaults; the A100
    # test on the record's kernel_family, _VLLM_A100_RULE above);
    # gpu_memory_utilization 0.9; 4 ms per request online vs
    # offline (HTTP + ZMQ, tenstorrent/tt-inference-server#190); per-step host time: no V1 figure
    # was found, TensorRT-LLM's 0.58 ms stands in (stated)
    _stack("vllm", allreduce_us=9.0, allreduce_gbps=26.0, step_overhead_ms=0.58,
           request_overhead_ms=4.0,
           token_budget=[(_VLLM_A100_RULE, 2048), (70, 2048), (None, 8192)],
           max_num_seqs=[(_VLLM_A100_RULE, 256), (70, 256), (None, 1024)], memory_utilization=0.9,
           launch=vllm_command),
    # SGLang: TensorRT-LLM-derived custom all-reduce (PR #2904, as tensorrt-llm); the overlap
    # scheduler hides host work (v0.4 blog: no idle time between decode batches): 0 per step;
    # chunked_prefill_size 2048 below 35 GB, 8192 below 160 GB, else 16384 (ServerArgs defaults);
    # max_running_requests unset: derived from the KV token pool (no cap here beyond the pool);
    # per-request cost assumed vLLM's (no SGLang figure found)
    _stack("sglang", allreduce_us=4.4, allreduce_gbps=31.0, request_overhead_ms=4.0,
           token_budget=[(35, 2048), (160, 8192), (None, 16384)], memory_utilization=0.9,
           launch=sglang_command),
    # plain transformers generate, eager PyTorch, no CUDA graphs: 40 us per kernel of ours, from
    # arXiv 2605.30571 (Qwen-2.5-7B bf16 batch 1 on H100 at 0.27 of the bandwidth floor: 17.0 ms
    # per token against 4.6 ms, the gap over 28 layers x 11 kernels); NCCL through torch.distributed
    _stack("hf-eager", kernel_overhead_us=40.0, launch=hf_generate_command),
)}
# the default: vLLM, the open-source engine most serving deployments run today; its `vllm serve`
# defaults are what a user gets without tuning
DEFAULT_SERVING_STACK = "vllm"
ALLOWED_BITS = (4, 8, 16, 32)
# The range of each script flag (its dest: (lo, hi), both inclusive): far past any real
# request or accelerator (1e6 TFLOP/s and 1e6 GB/s ~ 500 x an H100; 1e9 tokens ~ 100 x the
# longest context), and tight enough that no time overflows to inf, divides by ~0 or turns
# negative. The bit widths take ALLOWED_BITS; the model flags have their caps in model/spec.py (_CAPS).
FLAG_RANGES = {
    "batch_size": (1, 10 ** 9), "prompt_tokens": (1, 10 ** 9), "output_tokens": (0, 10 ** 9),
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
    "random_range_ratio": (0, 0.999999), "prefix_tokens": (0, 10 ** 9), "prefix_hit_rate": (0, 1),
    "speculative_tokens": (1, 64), "target_request_rate": (1e-6, 1e7), "host_kv_cache_gib": (1e-3, 1e7), "num_scheduler_steps": (1, 1024),
    "host_kv_bandwidth_gbps": (1e-3, 1e6),
    "gpu_memory_utilization": (1e-3, 1)}
# activation bits -> hardware.py dtype keys, first present wins
COMPUTE_DTYPE = {32: ("tf32", "fp32"), 16: ("bf16", "fp16"), 8: ("fp8", "int8"), 4: ("fp4",)}


def stack_rule(rule, memory_bytes, kernel_family):
    """A stack default that depends on the GPU (token budget, running-request cap): a number,
    None, or the value of the first (bound, value) pair that matches: a number bound when the GPU
    has less memory (GiB), a text bound when it is the GPU record's kernel_family (vLLM's A100
    exception, _VLLM_A100_RULE), None always."""
    if not isinstance(rule, list):
        return rule
    gib = memory_bytes / 2 ** 30
    return next(b for bound, b in rule
                if bound is None
                or (bound == kernel_family if isinstance(bound, str) else gib < bound))


# --- hardware ------------------------------------------------------------------------------------
class HardwareFlags(Record):
    """What the command line sets over the GPU record and the stack (None: not given, the record's
    or the stack's value stands). Built once by the tool from its flags."""

    __slots__ = ()

    FIELDS = {
        "serving_stack": "the SERVING_STACKS key",
        "peak_tflops": "dense peak TFLOP/s at the activation bits",
        "memory_bandwidth_gbps": "HBM bandwidth, GB/s", "gpu_memory_gib": "memory per GPU, GiB",
        "compute_efficiency": "fraction of peak FLOP/s matmuls reach",
        "memory_efficiency": "fraction of peak bandwidth reached",
        "kernel_overhead_us": "fixed cost per kernel, us",
        "tp_bandwidth_gbps": "link per GPU for TP/PP, GB/s one direction",
        "gpus_per_node": "GPUs per scale-up domain",
        "scale_out_gbps": "network per GPU beyond the node, GB/s one direction",
        "tp_latency_us": "fixed cost per all-reduce call, us",
        "tp_efficiency": "fraction of the link bandwidth reached",
        "request_overhead_ms": "fixed cost per request, ms",
        "step_overhead_ms": "host cost per step, ms",
        "max_num_batched_tokens": "tokens per engine step", "max_num_seqs": "running-request cap",
        "gpu_memory_utilization": "memory share for weights and the KV pool",
        "ep_imbalance": "busiest expert-parallel rank's load over the mean",
    }

    @classmethod
    def from_flags(cls, flags):
        """The overrides as the flags give them (the parsed flags, or any object with them)."""
        return cls({k: getattr(flags, k) for k in cls.FIELDS})


class ServingHardware(Record):
    """The hardware a serving run costs on: the GPU record's rates at the efficiencies that apply,
    the links of the layout, and the stack's costs and scheduler caps (resolve_hardware builds it;
    the forward pass, the steady state and the simulation read it). Rates in bytes/s and FLOP/s."""

    __slots__ = ()

    FIELDS = {
        "gpu": "the GPU record's name", "gpu_default": "True when no --gpu was given",
        "peak_flops_per_s": "dense matmul peak at the activation bits",
        "compute_efficiency": "fraction of that peak the matmuls reach",
        "flops_per_s": "peak x compute efficiency",
        "attention_flops_per_s": "the attention math's rate (16-bit peak x its efficiency)",
        "memory_bandwidth_bytes_per_s": "peak HBM bandwidth",
        "memory_efficiency": "fraction of it weight reads and small ops reach",
        "bytes_per_s": "bandwidth x memory efficiency",
        "gpu_memory_bytes": "memory per GPU (driver-reported usable, or --gpu-memory-gib)",
        "cache_bytes_per_s": "the rate the decode attention streams the KV cache at",
        "link_bytes_per_s": "what one rank drives over the scale-up link (mesh: its share)",
        "p2p_cross_node": "whether pipeline hand-offs leave the node",
        "gpus_per_node": "GPUs per scale-up domain", "scale_out_bytes_per_s": "NIC per GPU; None",
        "peer_link": "False: a GPU whose peers are not modelled (no scale-up link, no PCIe P2P: "
                     "GeForce cards) without --tp-bandwidth-gbps",
        "ep_imbalance": "busiest expert-parallel rank's load over the mean; None: balls-into-bins",
        "link_latency_s": "fixed cost per TP all-reduce call",
        "link_efficiency": "fraction of the link's line rate collectives reach",
        "kernel_overhead_s": "gap per kernel", "serving_stack": "the stack's name",
        "nccl_latency_s": "NCCL's call cost: pipeline hand-offs, and all-reduces too large for a "
                          "custom kernel",
        "step_overhead_s": "host time per engine step",
        "request_overhead_s": "fixed cost per request",
        "allreduce_custom_bytes_per_s": "the stack's custom all-reduce's effective rate; None: "
                                        "NCCL",
        "token_budget": "tokens per engine step; None: every waiting prompt whole",
        "max_num_seqs": "running-request cap per data-parallel engine; None: the pool's",
        "memory_utilization": "memory share for weights plus the KV pool",
        "moe_factor": "multiplier on a MoE block's time (the stack's)",
        "per_head_kv_decode": "decode reads a GQA block's cache once per query head",
        "pool_of_free": "memory_utilization is a share of what the weights leave",
        "net": "the collectives' network (comm/collectives.build_net)",
        "host_kv_bytes_per_s": "the host link a KV reload reaches (offload.host_link_bytes_per_s); "
                               "None: not listed. Not reported (--json)",
        "speculative": "the speculative-decoding setup a run adds, or None. Not reported",
    }
    NOT_REPORTED = ("host_kv_bytes_per_s", "speculative")  # left out of the --json hardware

    def reported(self):
        """The fields --json prints under "hardware"."""
        return {k: v for k, v in self.items() if k not in self.NOT_REPORTED}


def _matmul_rates(gpu, flags, a_bits, notes):
    """(peak, efficiency or None, 16-bit peak or None, 16-bit efficiency or None) of the matmuls:
    --peak-tflops, else the record's peak for the activation bits and its measured MAMF (scaled by
    MAMF_SHAPE_FACTOR) unless --compute-efficiency is given."""
    ce = flags.compute_efficiency
    if flags.peak_tflops is not None:
        return flags.peak_tflops * 1e12, ce, None, None
    peaks = gpu["peak_flops_per_s"] or {}
    achs = gpu.get("achievable_matmul_flops_per_s") or {}
    keys = COMPUTE_DTYPE[a_bits]
    key = next((k for k in keys if peaks.get(k)), None)
    if key is None:
        raise CalcError(f"{gpu['name']} has no {'/'.join(keys)} peak for --activation-bits "
                        f"{a_bits}; pass --peak-tflops")
    peak = peaks[key]
    if achs.get(key) and ce is None:
        ce = MAMF_SHAPE_FACTOR * achs[key] / peak
        notes.append(f"compute efficiency {ce:.3f} = {MAMF_SHAPE_FACTOR:.3f} x achievable {key} "
                     f"matmul {achs[key] / 1e12:.1f} / peak {peak / 1e12:.1f} TFLOP/s "
                     f"({gpu['name']})")
    peak16 = ce16 = None  # the attention math's 16-bit rate, when the matmuls run below 16 bits
    key16 = next((k for k in COMPUTE_DTYPE[16] if peaks.get(k)), None)
    if a_bits < 16 and key16:
        peak16 = peaks[key16]
        if achs.get(key16) and flags.compute_efficiency is None:
            ce16 = MAMF_SHAPE_FACTOR * achs[key16] / peak16
            if ce is None and a_bits == 8:  # no measured 8-bit figure: the GPU's own 16-bit
                # one, lowered as the default is (LOW_BIT_EFFICIENCY_RATIO, H100's fp8/bf16), not
                # the default 0.70 itself (4 bits keep the default and FP4_SHAPE_PENALTY)
                ce = ce16 * LOW_BIT_EFFICIENCY_RATIO
                notes.append(f"compute efficiency {ce:.3f} = {ce16:.3f} (the 16-bit one: "
                             f"achievable {key16} matmul {achs[key16] / 1e12:.1f} / peak "
                             f"{peak16 / 1e12:.1f} TFLOP/s, x {MAMF_SHAPE_FACTOR:.3f}) x "
                             f"{LOW_BIT_EFFICIENCY_RATIO:.3f} below 16 bits ({gpu['name']})")
    return peak, ce, peak16, ce16


def _compute(rates, flags, a_bits, notes):
    """The matmul and attention rates from _matmul_rates': {peak_flops_per_s, compute_efficiency,
    flops_per_s, attention_flops_per_s}, the defaults below 16 bits and FP4's shape penalty in."""
    peak, ce, peak16, ce16 = rates
    if ce is None:  # no flag, no measured figure: 0.70 at 16 bits, lower below (see constants)
        ce = DEFAULT_COMPUTE_EFFICIENCY * (LOW_BIT_EFFICIENCY_RATIO if a_bits < 16 else 1.0)
    if a_bits == 4 and flags.compute_efficiency is None:  # FP4 reaches its best shape later
        ce *= FP4_SHAPE_PENALTY
        notes.append(f"fp4 matmuls x {FP4_SHAPE_PENALTY:.3f} (FP4 falls further below its best "
                     f"shape than FP8 at 4096^3, Azure GB200 cuBLASLt): efficiency {ce:.3f}")
    if a_bits < 16:  # attention at 16 bits: the table's 16-bit peak, else half the rate per halving
        peak16 = peak16 or peak * a_bits / 16
        ce16 = ce16 or (ce if flags.compute_efficiency is not None else DEFAULT_COMPUTE_EFFICIENCY)
    else:
        peak16, ce16 = peak, ce
    return {"peak_flops_per_s": peak, "compute_efficiency": ce, "flops_per_s": peak * ce,
            "attention_flops_per_s": peak16 * ce16}


def _memory(gpu, flags, notes):
    """The HBM rates and the memory: {memory_bandwidth_bytes_per_s, memory_efficiency,
    bytes_per_s, gpu_memory_bytes, cache_bytes_per_s}."""
    me = flags.memory_efficiency
    if flags.memory_bandwidth_gbps is not None:
        bw = flags.memory_bandwidth_gbps * 1e9
    else:
        bw = gpu["memory_bandwidth_bytes_per_s"]
        ach = gpu.get("achievable_memory_bandwidth_bytes_per_s")
        if ach and me is None:
            me = ach / bw
            notes.append(f"memory efficiency {me:.3f} = achievable / peak bandwidth "
                         f"({gpu['name']})")
    if flags.gpu_memory_gib is not None:
        mem = flags.gpu_memory_gib * 2 ** 30
    else:  # driver-reported capacity; older hardware.py: vendor GB
        mem = gpu.get("memory_usable_bytes") or gpu["memory_bytes"]
    me = DEFAULT_MEMORY_EFFICIENCY if me is None else me
    kv = gpu.get("kv_stream_efficiency")  # the decode attention's KV streaming (accelerator.py)
    return {"memory_bandwidth_bytes_per_s": bw, "memory_efficiency": me, "bytes_per_s": bw * me,
            "gpu_memory_bytes": mem,
            "cache_bytes_per_s": bw * (max(me, kv) if flags.memory_efficiency is None and kv
                                       else me)}


def _scale_up(gpu, flags, *, gpu_given, stages, notes):
    """The scale-up link per GPU (one direction), its domain, whether it is a mesh, whether its
    switch reduces in the network, and whether the peers are PCIe cards (NCCL's ring over the slot,
    in servers of PCIE_SERVER_GPUS). stages: GPUs of the layout (tp x dp x pp)."""
    agg, dom = gpu.get("scale_up_bandwidth_bytes_per_s"), gpu.get("scale_up_domain_size")
    mesh = gpu.get("scale_up_topology") == "mesh" and bool(dom and dom > 1)
    # in-network reduction is the record's switch; a link of your own without --gpu has none
    in_net = (bool(gpu.get("scale_up_in_network_reduction"))
              and not (not gpu_given and flags.tp_bandwidth_gbps))
    pcie = False
    if not agg and gpu.get("pcie_peer_bandwidth_bytes_per_s") and flags.tp_bandwidth_gbps is None:
        agg, dom, pcie = gpu["pcie_peer_bandwidth_bytes_per_s"], PCIE_SERVER_GPUS, True
        if stages > 1:
            notes.append(f"{gpu['name']}: no NVLink; peers over PCIe at {agg / 1e9:.1f} GB/s x "
                         f"{PCIE_PEER_EFFICIENCY:.3f} (NCCL's ring; no custom all-reduce), servers "
                         f"of {PCIE_SERVER_GPUS} GPUs")
    if not agg and stages > 1 and flags.tp_bandwidth_gbps is None:
        raise CalcError(f"--gpu {gpu['name']} has no scale-up link and no peer-to-peer over PCIe; "
                        "pass --tp-bandwidth-gbps (GB/s per GPU, one direction)")
    if flags.tp_bandwidth_gbps is not None:  # the user's link; without a domain it joins every GPU
        agg, mesh = flags.tp_bandwidth_gbps * 1e9, False
        dom = dom if gpu.get("scale_up_bandwidth_bytes_per_s") else None
    agg = agg or DEFAULT_LINK_GBPS * 1e9  # no scale-up link: a stand-in no single-GPU cost reads
    return agg, flags.gpus_per_node or dom or stages, mesh, in_net, pcie


def _links(gpu, flags, *, gpu_given, tp, pp, dp, notes):
    """The layout's links: (scale-up dict, its line rate, in-network reduction, mesh domain,
    whether the peers are PCIe cards); exit 2 when the layout leaves a node and no network is
    known."""
    width = tp * dp  # GPUs of one pipeline stage
    agg, dom, mesh, in_net, pcie = _scale_up(gpu, flags, gpu_given=gpu_given, stages=width * pp,
                                             notes=notes)
    out = gpu.get("scale_out_bandwidth_bytes_per_s")
    if flags.scale_out_gbps is not None:
        out = flags.scale_out_gbps * 1e9
    if width * pp > dom and not out:
        raise CalcError(f"-tp {tp} x -dp {dp} x -pp {pp} spans more than one {gpu['name']} node of "
                        f"{dom} GPUs and no scale-out bandwidth is known; pass --scale-out-gbps "
                        "(GB/s per GPU, one direction)")
    if width > dom:
        notes.append(f"-tp {tp} x -dp {dp} spans {math.ceil(width / dom)} nodes of "
                     f"{dom} GPUs: collectives cross the network at {out / 1e9:g} GB/s per GPU "
                     f"(x {SCALE_OUT_EFFICIENCY})")
    # what one rank drives: a full mesh (xGMI, Gaudi RoCE) gives a group of g its g-1 of the dom-1
    # peer links (calc_comm.group_intra_bytes_per_s), a switch the whole link
    link = agg * max(1, min(tp, dom) - 1) / (dom - 1) if mesh else agg
    p2p_cross = width * pp > dom and pp > 1  # stage hand-offs leave the node
    if p2p_cross:
        notes.append(f"pipeline hand-offs cross nodes: {out / 1e9:g} GB/s per GPU")
    links = {"link_bytes_per_s": link, "p2p_cross_node": p2p_cross, "gpus_per_node": dom,
             "scale_out_bytes_per_s": out,
             "peer_link": not (not gpu.get("scale_up_bandwidth_bytes_per_s")
                               and not pcie and flags.tp_bandwidth_gbps is None)}
    return links, agg, in_net, (dom if mesh else None), pcie


def _stack_costs(stack, flags, *, pcie, memory_bytes, kernel_family):
    """What the stack adds, each flag over the stack's value: the call costs of the collectives,
    the kernel gap, the host costs and the scheduler's caps (stack_rule)."""
    def given(flag, default):
        return default if flag is None else flag
    lat = given(flags.tp_latency_us,  # PCIe peers: NCCL's own call cost (no custom kernel)
                DEFAULT_ALLREDUCE_LATENCY_US if pcie else stack.allreduce_us)
    leff = given(flags.tp_efficiency,
                 PCIE_PEER_EFFICIENCY if pcie else DEFAULT_ALLREDUCE_EFFICIENCY)
    return {
        "link_latency_s": lat * 1e-6, "link_efficiency": leff,
        "kernel_overhead_s": given(flags.kernel_overhead_us, stack.kernel_overhead_us) * 1e-6,
        "serving_stack": stack.name,
        "nccl_latency_s": given(flags.tp_latency_us, DEFAULT_ALLREDUCE_LATENCY_US) * 1e-6,
        "step_overhead_s": given(flags.step_overhead_ms, stack.step_overhead_ms) * 1e-3,
        "request_overhead_s": given(flags.request_overhead_ms, stack.request_overhead_ms) * 1e-3,
        "allreduce_custom_bytes_per_s": (stack.allreduce_gbps * 1e9 if stack.allreduce_gbps and
                                         flags.tp_bandwidth_gbps is None and not pcie else None),
        "token_budget": given(flags.max_num_batched_tokens,
                              stack_rule(stack.token_budget, memory_bytes, kernel_family)),
        "max_num_seqs": given(flags.max_num_seqs,
                              stack_rule(stack.max_num_seqs, memory_bytes, kernel_family)),
        "memory_utilization": given(flags.gpu_memory_utilization, stack.memory_utilization),
        "moe_factor": stack.moe_factor, "per_head_kv_decode": stack.per_head_kv_decode,
        "pool_of_free": stack.pool_of_free}


def resolve_hardware(gpu, flags, *, gpu_given, tp, pp, dp, activation_bits):
    """Peak FLOP/s, bandwidths, memory, links and the stack's costs for one layout: explicit flags
    (a HardwareFlags) win, then the accelerator's record (the tool's --gpu, else the default
    accelerator; its achievable figures when present and no efficiency flag overrides them).
    Returns (ServingHardware, notes); CalcError (one line) when the record cannot answer."""
    notes = []
    rates = _matmul_rates(gpu, flags, activation_bits, notes)
    mem = _memory(gpu, flags, notes)
    links, agg, in_net, mesh_domain, pcie = _links(gpu, flags, gpu_given=gpu_given, tp=tp, pp=pp,
                                                   dp=dp, notes=notes)
    hw = {"gpu": gpu["name"], "gpu_default": not gpu_given}
    hw.update(_compute(rates, flags, activation_bits, notes))  # its fp4 note after the links'
    hw.update(mem)
    hw.update(links)
    hw["ep_imbalance"] = flags.ep_imbalance
    hw.update(_stack_costs(SERVING_STACKS[flags.serving_stack], flags, pcie=pcie,
                           memory_bytes=mem["gpu_memory_bytes"],
                           kernel_family=gpu.get("kernel_family")))
    hw["net"] = build_net(intra_bytes_per_s=agg, inter_bytes_per_s=links["scale_out_bytes_per_s"],
                          in_network_reduction=in_net, intra_efficiency=hw["link_efficiency"],
                          inter_efficiency=SCALE_OUT_EFFICIENCY, nvls_efficiency=NVLS_EFFICIENCY,
                          launch_s=hw["nccl_latency_s"], intra_hop_ll_s=ALPHA_HOP_S["ll"]["intra"],
                          inter_hop_ll_s=ALPHA_HOP_S["ll"]["inter"], mesh_domain=mesh_domain)
    hw["host_kv_bytes_per_s"] = host_link_bytes_per_s(gpu)
    return ServingHardware(hw), notes
