"""calc_training_time.py -- the step time of an LLM training layout from first principles, its MFU,
and the fastest layout that fits.

One layout (tensor, pipeline, context, expert and data parallel sizes, ZeRO stage, micro-batch,
recompute) is costed kernel by kernel for every layer kind of the model (the shared layer list):
each matmul at a shape-dependent efficiency (tile and wave quantization against the GPU's measured
best matmul rate, a memory roofline and a launch floor), attention at the flash-attention kernel's
published rate (or as eager batched matmuls plus softmax), memory-bound work at achievable
bandwidth, the collectives with calc_comm.py's model (the same llmcalc.comm code), the 1F1B /
interleaved pipeline with its bubble and uneven edge stages, data-parallel gradient reduction
overlapped with the last backward, the optimizer step, and ZeRO / CPU offload. Memory per GPU is
calc_transformer_mem.py's model and model FLOPs for MFU calc_transformer_flops.py's count (the same
package code).

Usage:
  python calc_training_time.py --gpu a100 --num-gpus 64 -l 96 -hs 12288 -a 96 -s 2048 \\
      --global-batch-size 64 -b 1 -tp 8 -pp 8 --recompute selective --sequence-parallel --dropout
  python calc_training_time.py --hf_model_name_or_path ./Llama-3.1-70B --gpu h100 --num-gpus 256 \\
      --global-batch-size 512 -s 8192 --search --top 5
  python calc_training_time.py --hf_model_name_or_path ./Llama-3.1-8B --gpu h100 --num-gpus 64 \\
      --global-batch-size 256 -s 8192 --search --tokens 2e12 --cost-per-gpu-hour 2.5 --json
  python calc_training_time.py --hf_model_name_or_path ./Llama-3.1-8B --gpu h100,h200,b200,mi300x \\
      --num-gpus 64,128 --global-batch-size 256 -s 8192 --search --tokens 2e12 \\
      --cost-per-gpu-hour 2.5,3.5,5,2.2 --rank-by cost --deadline-days 30

References:
  Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
  (sequence parallelism, selective recompute, Tables 4-5); Narayanan et al. 2021, "Efficient
  Large-Scale Language Model Training on GPU Clusters Using Megatron-LM" (pipeline schedules, eq. 3);
  Shoeybi et al. 2019 (tensor parallelism); Rajbhandari et al. 2020 (ZeRO); Ren et al. 2021
  (ZeRO-Offload); Dao 2023 (FlashAttention-2) and Shah et al. 2024 (FlashAttention-3) for attention
  kernel rates; S. Bekman, ml-engineering (maximum achievable matmul FLOPS); NVIDIA's A100/H100
  architecture whitepapers (SM counts); Lee et al. 2025 (compute slowdown under overlapped
  communication). VALIDATION.md lists every comparison and which measurement set which constant.

Frameworks (--framework): megatron (default) costs Megatron-LM's fused kernels; pytorch costs an
eager torchtitan / HF Llama stack (RMSNorm upcast to fp32 as several kernels, rotary, SiLU and the
gate product apart, residual and gradient-sum adds, bias-gradient sums, the loss in fp32) and
llm-foundry an eager MPT stack (LayerNorm, GELU, flash-attn's varlen pad/unpad copies, the fused
loss); both with PyTorch FSDP's per-layer gradient cat, fp32 cast and pre-divide kernels and its
per-micro-batch gathers and reduce-scatters (-z 2 = SHARD_GRAD_OP, -z 3 = FULL_SHARD). megatron-2021
costs Megatron-LM as Narayanan et al. 2021 ran it (the sc21 artifact, NVIDIA/Megatron-LM de7dc40):
TP all-reduces unoverlapped, no distributed optimizer, apex's LayerNorm at its measured rates, 16-bit
gradients accumulated by autograd and reduced by local DDP's flatten / all-reduce / copy-back after
the backward, the unfused QKV bias add and context copy, fp32 cross-entropy; flags it lacked exit 2. megatron-2022
costs the code of Korthikanti et al. 2022 (NVIDIA/Megatron-LM d898a8991d): sequence parallelism and
selective recompute, backward TP overlap, fused fp32 gradient accumulation, but still no distributed
optimizer or flash kernel, the unfused QKV bias add and context copy, the embedding all-reduce, fp32
cross-entropy, and local DDP dividing the gradient buffer by dp after the backward, dp = 1 included.
Each kernel is counted from the module's source (the eager_* functions cite the file), none fitted:
  python calc_training_time.py -l 32 -hs 4096 -a 32 -v 50368 --bias --tied-embeddings \
      --position-embedding learned --norm layernorm --gpu h100 --num-gpus 8 -b 6 \
      --global-batch-size 48 -z 3 --recompute none --framework llm-foundry
"""

import argparse
import bisect
import math
import sys
import time

from ..cli import (OneLineErrorParser, add_model_args, add_output_args,
    bounded_int, calc_errors, check_ranges, count_float, finite_float, parse_tool_args,
    print_warnings, ranges_epilog, run_tool, script_command,
    Progress, brief_number, dollars, plural, print_brief)
from ..model.spec import resolve_model_spec, spec_summary
from ..model.kinds import layer_groups
from ..train.context_parallel import CP_COMM_TYPES, a2a_head_error
from ..train.attention_rates import (ATTENTION_KERNEL_NAMES, ATTENTION_KERNELS, SCALED_KERNELS,
    default_attention_kernel, has_attention_rates, kernel_and_rate)
from ..train.flops import SECONDS_PER_DAY
from ..train.kernels import (APEX_LAYERNORM_2021, FP8_CAST_BYTES_PER_ELEMENT, FP8_RECIPES, FRAMEWORKS,
    GEMM_TILE, KERNEL_FLOOR_S, MEM_BW_FRACTION, OVERLAP_SLOWDOWN, eager_framework)
from ..train.fit import layout_host_memory
from ..train.memory import PIPELINE_SPLIT_KEYS, implied_pipeline_split, memory_defaults
from ..train.deepspeed import DEEPSPEED
from ..train.moe import DEEPEP_NVLINK_FRACTION, MOE_DISPATCHERS
from ..train.recompute import RECOMPUTE_MODES, RECOMPUTE_MODULES, recompute_text
from ..train.layout import Layout, complete_layout
from ..train.search import (_divisors, check_layout, layout_shape, limiter, search_layouts,
    sequence_flops)
from ..train.offload import evaluate_layout
from .gpu import distinct_gpus
from .training_framework import resolve_framework_defaults
from .finetune_flags import (FRAMEWORK_HELP_DEFAULT, add_finetune_time_args,
    finetune_assumptions, finetune_knobs, finetune_layout, framework_default)
from .training_hardware import job_gpus_per_node, kernel_family, resolve_hardware


# Expert load imbalance: the busiest expert-parallel rank's tokens over the mean. 1.0 = balanced
# routing (DeepSeek-V3's auxiliary-loss-free balancing reports near-even loads); --moe-imbalance.
MOE_IMBALANCE = 1.0


GIB_ = 2 ** 30


# The range of each script flag (argparse dest: (lo, hi), both inclusive).
FLAG_RANGES = {
    "lora_rank": (1, 10 ** 6), "lora_dropout": (0, 0.999),  # tools/finetune_flags.py's
    "num_gpus": (1, 10 ** 7), "tensor_parallel_size": (1, 4096), "pipeline_parallel_size": (1, 1024),
    "virtual_pipeline_size": (1, 1024),
    "decoder_first_pipeline_num_layers": (1, 100_000), "decoder_last_pipeline_num_layers": (1, 100_000),
    "context_parallel_size": (1, 4096), "expert_parallelism": (1, 10 ** 5), "expert_tensor_parallel_size": (1, 4096),
    "micro_batch_size": (1, 10 ** 6), "global_batch_size": (1, 10 ** 9), "sequence_length": (1, 10 ** 8),
    "tokens": (1, 1e18), "top": (1, 10 ** 4), "peak_tflops": (1e-3, 1e6), "hbm_bandwidth_GBps": (1e-3, 1e7),
    "intra_node_bw_GBps": (1e-3, 1e6), "inter_node_bw_GBps": (1e-3, 1e6), "gpus_per_node": (1, 4096),
    "gpu_memory_gib": (1e-3, 1e6), "cost_per_gpu_hour": (0, 1e6), "moe_imbalance": (1, 100),
    "matmul_ceiling": (1e-3, 1), "overlap_slowdown": (0, 1), "framework_mem_gib": (0, 1e6),
    "dp_bucket_mparams": (1e-3, 1e6), "recompute_every": (1, 10 ** 6), "nvme_gbps": (1e-3, 1e5),
    "deadline_days": (1e-6, 1e6)}

# The hardware figures that describe one accelerator: refused beside a list of --gpu
ONE_GPU_FLAGS = ("peak_tflops", "matmul_ceiling", "hbm_bandwidth_GBps", "intra_node_bw_GBps", "inter_node_bw_GBps",
                 "gpu_memory_gib")


def count_list(text):
    """argparse type: one count or a comma-separated list of them (--num-gpus 256,512)."""
    parts = str(text).split(",")
    if any(not x.strip() for x in parts):
        raise argparse.ArgumentTypeError(f"invalid list of counts: {text!r}")
    return tuple(bounded_int(x) for x in parts)


def price_list(text):
    """argparse type: one price or a comma-separated list (--cost-per-gpu-hour 2.5,3.5)."""
    parts = str(text).split(",")
    if any(not x.strip() for x in parts):
        raise argparse.ArgumentTypeError(f"invalid list of prices: {text!r}")
    return tuple(finite_float(x) for x in parts)


# ------------------------------------------------------------------------------------------------
# Hardware, FLOPs, layouts
# ------------------------------------------------------------------------------------------------


def cp_layout_error(spec, lay):
    """None if the layout's context parallelism can run as --cp-comm-type asks, else a one-line reason
    (a2a splits every attention layer's heads over cp on each tensor-parallel rank)."""
    if lay["cp"] > 1 and lay.get("cp_comm_type") == "a2a":
        for layer, _, _ in layer_groups(spec):
            for x in layer["attention"]:
                if x["span"] != "state":
                    why = a2a_head_error(x["heads"], x["kv_heads"], tp=lay["tp"], cp=lay["cp"])
                    if why:
                        return why
    return None


def build_parser():
    p = OneLineErrorParser(
        description="Step time, MFU and the fastest layout of LLM training, from first principles.")
    add_model_args(p)
    add_hardware_flags(p)
    add_layout_flags(p)
    add_framework_flags(p)
    add_finetune_time_args(p)
    add_question_flags(p)
    p.epilog = lambda: ranges_epilog(p, FLAG_RANGES)  # built only for --help
    return p


def add_hardware_flags(p):
    """The accelerator: --gpu (a list with --search), or its figures one by one."""
    h = p.add_argument_group("hardware")
    h.add_argument("--gpu", default=None, help="accelerator name from hardware.py (e.g. a100, h100, b200); with "
                   "--search a comma-separated list (h100,h200,b200,mi300x) to compare clusters")
    h.add_argument("--num-gpus", type=count_list, default=None,
                   help="GPUs in the job (default tp x pp x cp); with --search a list (256,512,1024)")
    h.add_argument("--gpus-per-node", type=bounded_int, default=None, help="GPUs per scale-up domain (default: the GPU's, else 8)")
    h.add_argument("--dtype", choices=("bf16", "fp16", "fp8"), default="bf16",
                   help="matmul precision (fp16 adds loss scaling to the optimizer step; fp8: matmuls at the "
                        "fp8 rate, attention and activations bf16)")
    h.add_argument("--peak-tflops", type=finite_float, default=None, help="dense peak TFLOP/s at --dtype (overrides --gpu)")
    h.add_argument("--matmul-ceiling", type=finite_float, default=None,
                   help="best matmul fraction of peak (default: hardware.py's measured MAMF / peak)")
    h.add_argument("--hbm-bandwidth-GBps", "--memory-bandwidth-gbps", dest="hbm_bandwidth_GBps", type=finite_float, default=None,
                   help="memory bandwidth, GB/s (x %.2f achievable)" % MEM_BW_FRACTION)
    h.add_argument("--intra-node-bw-GBps", "--tp-bandwidth-gbps", dest="intra_node_bw_GBps", type=finite_float, default=None,
                   help="scale-up bandwidth per GPU per direction, GB/s")
    h.add_argument("--inter-node-bw-GBps", "--scale-out-gbps", dest="inter_node_bw_GBps", type=finite_float, default=None,
                   help="scale-out bandwidth per GPU per direction, GB/s")
    h.add_argument("--gpu-memory-gib", type=finite_float, default=None, help="capacity per GPU (overrides --gpu)")
    h.add_argument("--framework-mem-gib", type=finite_float, default=1.0,
                   help="CUDA context, cuBLAS workspace, NCCL buffers (default 1.0)")


def add_layout_flags(p):
    """One layout's parallel sizes, pipeline split, ZeRO stage, batch, recompute and offloads."""
    bo = argparse.BooleanOptionalAction
    lay = p.add_argument_group("layout")
    lay.add_argument("--tensor-parallel-size", "-tp", type=bounded_int, default=1)
    lay.add_argument("--pipeline-parallel-size", "-pp", type=bounded_int, default=1)
    lay.add_argument("--virtual-pipeline-size", "-vp", type=bounded_int, default=1,
                     help="model chunks per pipeline rank (interleaved 1F1B)")
    lay.add_argument("--decoder-first-pipeline-num-layers", type=bounded_int, default=None,
                     help="Megatron-LM uneven pipeline: layers on the first stage (the stages without a stated "
                          "count share the rest evenly; as calc_transformer_mem.py)")
    lay.add_argument("--decoder-last-pipeline-num-layers", type=bounded_int, default=None,
                     help="Megatron-LM uneven pipeline: layers on the last stage")
    lay.add_argument("--account-for-embedding-in-pipeline-split", action="store_true",
                     help="Megatron-LM: the embedding counts as one layer when splitting L+1 over pp*vp chunks; "
                          "the first chunk holds one transformer layer fewer")
    lay.add_argument("--account-for-loss-in-pipeline-split", action="store_true",
                     help="Megatron-LM: the head and loss count as one layer; the last chunk holds one "
                          "transformer layer fewer")
    lay.add_argument("--context-parallel-size", "-cp", type=bounded_int, default=1)
    lay.add_argument("--cp-comm-type", choices=CP_COMM_TYPES, default="p2p",
                     help="how context parallelism exchanges attention's inputs (Megatron-Core's --cp-comm-type, "
                          "Transformer Engine's implementations): p2p, the K/V ring overlapped with per-chunk kernels "
                          "(default); a2a, all-to-alls of Q, K, V and the output around one kernel over the whole "
                          "sequence on heads / cp (DeepSpeed-Ulysses' scheme; needs heads divisible by tp x cp)")
    lay.add_argument("--expert-parallelism", "-ep", "--expert-parallel-size", type=bounded_int, default=1)
    lay.add_argument("--expert-tensor-parallel-size", "-etp", type=bounded_int, default=None,
                     help="tensor parallelism inside each expert (default tp, as Megatron-LM)")
    lay.add_argument("--sequence-parallel", "-sp", action=bo, default=None,
                     help="Megatron sequence parallelism with tp (Korthikanti et al. 2022)")
    lay.add_argument("--zero-stage", "-z", type=bounded_int, choices=[0, 1, 2, 3], default=None,
                     help="ZeRO stage / FSDP (1 = Megatron's distributed optimizer, 3 = full sharding; "
                          "default 1, 0 under --framework megatron-2021 / megatron-2022)")
    lay.add_argument("--micro-batch-size", "-b", type=bounded_int, default=None,
                     help="sequences per micro-batch per replica (default: the fastest that fits)")
    lay.add_argument("--global-batch-size", "-gbs", type=bounded_int, default=None,
                     help="sequences per step (default: dp x micro-batch)")
    lay.add_argument("--sequence-length", "-s", type=bounded_int, default=2048)
    lay.add_argument("--recompute", choices=RECOMPUTE_MODES, default=None,
                     help="activation recompute (default selective; full under --framework megatron-2021): "
                          "selective = Megatron-LM's --recompute-modules (default core_attn), op-sac = torchtitan's "
                          "per-op selective checkpointing (every second matmul and all elementwise work again)")
    lay.add_argument("--recompute-modules", nargs="+", choices=RECOMPUTE_MODULES, default=None, metavar="MODULE",
                     help="with --recompute selective: Megatron-LM's modules to recompute (default core_attn; one of " + ", ".join(RECOMPUTE_MODULES) + ")")
    lay.add_argument("--recompute-every", type=bounded_int, default=None, metavar="K",
                     help="apply --recompute to every k-th layer only, the others none (torchtitan's "
                          "selective_ac_option = k)")
    lay.add_argument("--offload", action=bo, default=None,
                     help="optimizer states on the CPU (ZeRO-Offload): PCIe transfers and CPU-Adam")
    lay.add_argument("--offload-params", action=bo, default=None,
                     help="the layers' 16-bit weights in host memory, copied in over PCIe before each layer's "
                          "forward and backward, two layers on the GPU (ZeRO-Infinity; not with -z 3); under "
                          "--framework deepspeed ZeRO-3's offload_param (needs -z 3; --offload-device)")
    lay.add_argument("--offload-activations", action=bo, default=None,
                     help="what each layer stores for its backward in host memory, two layers' worth on the GPU")


def add_framework_flags(p):
    """The training stack's kernels and execution knobs (training_framework.py's defaults)."""
    bo = argparse.BooleanOptionalAction
    k = p.add_argument_group("framework")
    k.add_argument("--framework", choices=FRAMEWORKS + (DEEPSPEED,), default=None,
                   help="kernels of the training stack: megatron (fused), megatron-2021 "
                        "(Megatron-LM as Narayanan et al. 2021 ran it: no TP-overlap, no distributed "
                        "optimizer, apex LayerNorm, 16-bit gradients), megatron-2022 (as Korthikanti et al. "
                        "2022 ran it: no distributed optimizer or flash kernel, fp32 cross-entropy, local "
                        "DDP's divide at any dp), pytorch (eager "
                        "torchtitan / HF Llama modules: unfused norms, rope, activations, fp32 loss, FSDP's "
                        "gradient casts and copies), llm-foundry (eager MPT modules: flash-attn varlen "
                        "pad/unpad copies, fused loss); -z 2/3 = FSDP SHARD_GRAD_OP / FULL_SHARD; deepspeed "
                        "(DeepSpeed's engine over Megatron-DeepSpeed's fused kernels: ZeRO 0-3 with its bucket, "
                        "overlap and gather rules, the pipeline engine's blocking 1F1B without interleaving, "
                        "offload to CPU or NVMe); " + FRAMEWORK_HELP_DEFAULT)
    k.add_argument("--offload-device", choices=("cpu", "nvme"), default=None,
                   help="under --framework deepspeed: where --offload's optimizer states and --offload-params' "
                        "weights live (offload_optimizer.device / offload_param.device, default cpu; nvme needs "
                        "--nvme-gbps)")
    k.add_argument("--nvme-gbps", type=finite_float, default=None,
                   help="NVMe read/write bandwidth per GPU, GB/s (no default: your drives' measured rate)")
    k.add_argument("--grad-reduce-dtype", choices=("fp32", "bf16", "fp16"), default=None,
                   help="dtype gradients are accumulated and reduced in (default fp32; bf16 = composer's FSDP "
                        "PURE; megatron-2021: the 16-bit --dtype for fp16, fp32 = its "
                        "--accumulate-allreduce-grads-in-fp32, fp32 for bf16; megatron-2022: fp32 = that flag, "
                        "which its gradient-accumulation fusion needs, fp16 = without it, unfused)")
    k.add_argument("--flash-attention", action=bo, default=None,
                   help="fused attention kernel (default on, off under megatron-2021/2022); off: eager matmuls + "
                        "softmax over s x s")
    k.add_argument("--attention-kernel", choices=ATTENTION_KERNELS, default=None,
                   help="fused attention kernel: fa2 (FlashAttention-2), cudnn (cuDNN's, SDPA's default and "
                        "Transformer Engine's on Hopper and Blackwell) or cudnn-9.1 (cuDNN of early-2024 "
                        "containers, Hopper); rates by head dim and sequence measured on an H200 and published "
                        "for a B200 (default: cudnn on Hopper and Blackwell under megatron and pytorch, else fa2)")
    k.add_argument("--compile", action=bo, default=False,
                   help="torch.compile of each block (--framework pytorch): the non-matmul kernels at the "
                        "share of their eager time measured on an H200 (0.46 per layer, 0.26 for the loss)")
    k.add_argument("--fp8-recipe", choices=FP8_RECIPES, default=None,
                   help="with --dtype fp8, the scaling recipe: under --framework pytorch torchao's tensorwise "
                        "(default) or rowwise, their casts at the bytes per operand element measured on an H200; "
                        "under --framework megatron Transformer Engine's delayed (default, Megatron-Core's), "
                        "tensorwise (current scaling) or mxfp8 (Blackwell), their quantize kernels counted from "
                        "TE's source")
    k.add_argument("--dropout", action=bo, default=False, help="dropout after attention and each block")
    k.add_argument("--tp-comm-overlap", choices=("none", "backward", "full"), default=None,
                   help="which TP collectives hide behind matmuls (default backward, Megatron-LM's; none "
                        "under megatron-2021; full under --framework pytorch is torch's async TP, its staging "
                        "copies and partial sums exposed)")
    k.add_argument("--dp-overlap", action=bo, default=None,
                   help="gradient reduction bucketed under the last backward (default on; off under "
                        "megatron-2021/2022, whose local DDP reduces after the backward: pass --dp-overlap for "
                        "its --DDP-impl torch)")
    k.add_argument("--dp-bucket-mparams", type=finite_float, default=None,
                   help="gradient bucket, millions of parameters (default 40, Megatron-LM's; 500 under "
                        "--framework deepspeed, its reduce_bucket_size)")
    k.add_argument("--moe-dispatcher", choices=MOE_DISPATCHERS, default="alltoall",
                   help="MoE token dispatch (Megatron-Core --moe-token-dispatcher-type): alltoall (NCCL all-to-all of "
                        "each token's k copies, default) or flex (DeepEP: once per destination GPU and node, FP8 "
                        "dispatch under --dtype fp8, at DeepEP's measured bandwidths)")
    k.add_argument("--moe-a2a-overlap", action=bo, default=False,
                   help="Megatron-Core's EP all-to-all overlap (--overlap-moe-expert-parallel-comm): one "
                        "micro-batch's forward all-to-alls hide behind another's backward compute and the "
                        "other way round (default off)")
    k.add_argument("--moe-imbalance", type=finite_float, default=MOE_IMBALANCE,
                   help="busiest expert rank's tokens / mean (default 1.0)")
    k.add_argument("--overlap-slowdown", type=finite_float, default=OVERLAP_SLOWDOWN,
                   help="compute slowdown while a collective overlaps it (default 0.19, Lee et al. 2025)")


def add_question_flags(p):
    """What to answer: a run's time and cost, a deadline, the search and its ranking."""
    o = p.add_argument_group("question")
    o.add_argument("--tokens", type=count_float, default=None,
                   help="training tokens (2e12, 2T, 300B): time, GPU-hours, cost")
    o.add_argument("--cost-per-gpu-hour", type=price_list, default=None,
                   help="price of one GPU-hour in dollars; with a list of --gpu, one price or one per GPU in the "
                   "same order")
    o.add_argument("--deadline-days", type=finite_float, default=None,
                   help="with --tokens: whether the run finishes within this many days; with a list of "
                        "clusters, the ones that do rank first")
    o.add_argument("--search", action="store_true", help="rank every layout of --num-gpus")
    o.add_argument("--top", type=bounded_int, default=5, help="layouts to print with --search (default 5)")
    o.add_argument("--rank-by", choices=("time", "cost"), default="time",
                   help="order of --search (at a fixed --num-gpus, cost per sequence = time per sequence x "
                        "GPUs x price: the same order)")
    add_output_args(o, json_help="print the result dict as JSON only")


def fmt_s(t):
    if t >= 1:
        return f"{t:.3f} s"
    if t >= 1e-3:
        return f"{t * 1e3:.2f} ms"
    return f"{t * 1e6:.1f} us"


def layout_text(lay, knobs=True):
    """One line of a layout; knobs: with its TP-overlap mode and a DP reduction left exposed (what
    a search chooses besides the parallel shape)."""
    first, last = lay.get("decoder_first_pipeline_num_layers"), lay.get("decoder_last_pipeline_num_layers")
    split = (f" (layers: first {first or '-'}, last {last or '-'})" if first or last else
             " (embedding/loss as layers)" if lay.get("account_for_embedding_in_pipeline_split")
             or lay.get("account_for_loss_in_pipeline_split") else "")
    return (f"tp {lay['tp']} pp {lay['pp']}{split} vp {lay['vp']} dp {lay['dp']} cp {lay['cp']} ep {lay['ep']}"
            f"{' sp' if lay['sp'] else ''} zero {lay['zero_stage']} mbs {lay['micro_batch_size']} "
            f"recompute {lay['recompute']}{' offload' if lay['offload'] else ''}"
            f"{' offload-params' if lay.get('offload_params') else ''}"
            f"{' offload-activations' if lay.get('offload_activations') else ''} gbs {lay['global_batch_size']}"
            + (f" tp-overlap {lay['tp_comm_overlap']}" if knobs and lay["tp"] > 1 else "")
            + ("" if not knobs or lay.get("dp_overlap", True) or lay["dp"] * lay["cp"] == 1 else " no-dp-overlap"))


def format_report(res):
    lines = []
    lay, r = res["layout"], res
    default = " (the default GPU; --gpu NAME for another)" if res.get("gpu_default") else ""
    lines.append(f"Training step on {res['num_gpus']} x {res['gpu']}{default} ({res['dtype']}): "
                 f"{layout_text(lay, knobs=res.get('layouts') is not None)}")
    lines.append(f"  model: {res['model']['described']}")
    lines.append(f"  {plural(lay['num_microbatches'], 'micro-batch', 'micro-batches')} of {lay['micro_batch_size']} x {lay['sequence_length']} "
                 f"tokens per replica, global batch {lay['global_batch_size']}")
    for w in res["warnings"]:
        lines.append(f"WARNING: {w}")
    lines.append(f"Step time          {fmt_s(r['step_time_s'])}")
    lines.append(f"MFU / HFU          {r['mfu']:.1%} / {r['hfu']:.1%}  ({r['model_tflops_per_gpu']:.1f} model TFLOP/s per GPU)")
    lines.append(f"Tokens/s           {r['tokens_per_s']:,.0f} total, {r['tokens_per_s_per_gpu']:,.0f} per GPU")
    mem = r["total_bytes"] / GIB_
    cap = res["memory_bytes"]
    fit = "" if cap is None else (f"  fits {cap / GIB_:.1f} GiB, headroom {r['headroom_bytes'] / GIB_:.1f} GiB"
                                  if r["fits"] else f"  DOES NOT FIT {cap / GIB_:.1f} GiB")
    lines.append(f"Memory per GPU     {mem:.2f} GiB on stage {r['memory']['stage']}{fit}")
    if res.get("pipeline_split_applied"):
        lines.append(f"  pipeline split: {res['pipeline_split_applied']}")
    hm = res.get("host_memory")
    if hm:
        parts = (("optimizer states and 16-bit gradients", hm["optimizer_bytes_per_gpu"]),
                 ("offloaded weights and/or activations", hm["layers_bytes_per_gpu"]))
        what = ", ".join(w for w, v in parts if v)
        lines.append(f"Host memory        {hm['bytes_per_gpu'] / 1e9:,.1f} GB per GPU, "
                     f"{hm['bytes_per_host'] / 1e9:,.1f} GB per host of {hm['gpus_per_host']} GPUs "
                     f"({what}; host capacity not checked)")
    if res.get("next_step"):
        lines.append("  the fastest layout of these GPUs that fits (ZeRO stages, recompute, offload, tp/pp/cp; or none "
                     f"does): {res['next_step']['search_command']}")
        lines.append(f"  what fits on how many GPUs, and the host memory offload needs: {res['next_step']['memory_command']}")
    lines.append("Breakdown of the step (slowest stage x micro-batches, then what the schedule adds):")
    step = r["step_time_s"]
    for k, v in sorted(r["breakdown_s"].items(), key=lambda kv: -kv[1]):
        if v > 0:
            lines.append(f"  {k:<36}{fmt_s(v):>12}{v / step:>8.1%}")
    if res.get("training"):
        t = res["training"]
        cost = f", cost {dollars(t['cost'])}" if t.get("cost") is not None else ""
        due = (f"; {'meets' if t['meets_deadline'] else 'misses'} the {t['deadline_days']:g}-day deadline"
               if "meets_deadline" in t else "")
        lines.append(f"{t['tokens']:.3g} tokens: {t['steps']:,.0f} steps, {t['days']:.2f} days, "
                     f"{t['gpu_hours']:,.0f} GPU-hours{cost}{due}")
    if res.get("clusters"):
        lines.extend(cluster_table(res))
    if res.get("layouts") is not None:
        lines.append(f"Search: {res['layouts_evaluated']} layouts costed ({res['layout_groups']} parallel "
                     f"shapes) in {res['search_time_s']:.2f} s; best first:")
        lines.append(f"  {'#':>2} {'layout':<66}{'step':>10}{'MFU':>7}{'GiB':>7}  limited by")
        for i, x in enumerate(res["layouts"]):
            where = f"{x['num_gpus']} x {x['gpu']}: " if res.get("clusters") else ""
            lines.append(f"  {i + 1:>2} {where + layout_text(x):<66}{fmt_s(x['step_time_s']):>10}{x['mfu']:>7.1%}"
                         f"{x['total_bytes'] / GIB_:>7.1f}  {x['limited_by']}")
        if res.get("why"):
            lines.append("Why the winner wins: " + res["why"])
    lines.append("Assumes: " + "; ".join(res["assumptions"]))
    return "\n".join(lines)


def cluster_table(res):
    """The clusters a search compared, best first: each one's best layout, and with --tokens its
    days, GPU-hours and cost."""
    order = "cheapest" if res["rank_by"] == "cost" else "soonest"
    w = max(len(c["gpu"]) for c in res["clusters"]) + 2
    lines = [f"Clusters compared ({order} first; each with its best layout"
             + ("" if res.get("training") else "; --tokens adds days, GPU-hours and cost") + "):",
             f"  {'GPUs':>6} {'accelerator':<{w}}{'step':>10}{'MFU':>7}{'days':>10}{'GPU-hours':>13}{'cost':>14}  layout"]
    for c in res["clusters"]:
        if not c["fits"]:
            lines.append(f"  {c['num_gpus']:>6} {c['gpu']:<{w}}  no layout fits")
            continue
        days = f"{c['days']:,.1f}" if c.get("days") is not None else "-"
        gh = f"{c['gpu_hours']:,.0f}" if c.get("gpu_hours") is not None else "-"
        cost = dollars(c["cost"]) if c.get("cost") is not None else "-"
        late = "  misses the deadline" if c.get("meets_deadline") is False else ""
        lines.append(f"  {c['num_gpus']:>6} {c['gpu']:<{w}}{fmt_s(c['step_time_s']):>10}{c['mfu']:>7.1%}{days:>10}"
                     f"{gh:>13}{cost:>14}  {c['layout']}{late}")
    return lines


def assumptions(hw, lay):
    ff, fb = hw["flash"]
    out = [f"matmuls at {hw['matmul_ceiling']:.3f} of peak ({hw['ceiling_source']}) x tile/wave quantization "
           f"({GEMM_TILE[0]}x{GEMM_TILE[1]} tiles over {hw['sms'] or 'unknown (no wave term)'} SMs), "
           f"kernel floor {KERNEL_FLOOR_S * 1e6:.1f} us",
           (f"attention: {lay['attention_kernel']} kernel, "
            + (f"{ATTENTION_KERNEL_NAMES[lay['attention_kernel']]}'s rate by head dim and sequence (measured on an H200)"
               if hw["family"] == "hopper" and kernel_and_rate(lay["attention_kernel"])[0] != "cudnn-9.1" else
               "cuDNN 9.1's rate by sequence (NVIDIA's 2024 H200 run, head dim 128; other head dims by today's cuDNN trend)"
               if hw["family"] == "hopper" else
               f"{ATTENTION_KERNEL_NAMES[lay['attention_kernel']]}'s rate by sequence (published B200 run, head dim 128; "
               "other head dims by the H200 trend)" if has_attention_rates(lay["attention_kernel"], family=hw["family"])
               else f"FlashAttention-2's published {ff:.3f} of the 16-bit peak"
               + ("" if lay["attention_kernel"] in ("fa2", "fa2-varlen")
                  else f" (no {lay['attention_kernel']} rate measured for this GPU)"))
            + (f" x {SCALED_KERNELS[lay['attention_kernel']][1]} ({lay['attention_kernel']}: "
               "fitted, validation/calibration.py)"
               if lay["attention_kernel"] in SCALED_KERNELS else "")
            + ", causal pairs"
            if lay["flash_attention"] else "attention: eager matmuls over the full s x s plus softmax"
            + (" and dropout" if lay["dropout"] else "")),
           f"memory-bound work at {hw['mem_bw'] / 1e9:,.0f} GB/s achievable",
           f"TP comm overlap: {lay['tp_comm_overlap']}; DP gradient reduction "
           + ("per layer under FSDP (see framework)" if eager_framework(lay)
              and lay["zero_stage"] >= 2 and lay["dp"] * lay["cp"] > 1
              else "bucketed under the last backward" if lay["dp_overlap"] else "after the backward, exposed"),
           f"overlapped compute slowed by {lay['overlap_slowdown']:.0%} of the overlapped time",
           f"MoE load imbalance {lay['moe_imbalance']:g}"
           + (", dispatch DeepEP (flex): once per destination GPU/node at its measured H800 bandwidth fractions "
              f"({DEEPEP_NVLINK_FRACTION[0]:.2f} NVLink)" if lay.get("moe_dispatcher") == "flex" else "")
           + ("; EP all-to-alls beside another micro-batch's compute (--moe-a2a-overlap)" if lay.get("moe_a2a_overlap")
              else ", exposed" if lay.get("moe_dispatcher") == "flex" else ""),
           *([("context parallel p2p: the K/V ring (Transformer Engine's, 2 x cp chunks for causal balance) hidden "
               "behind per-chunk kernels at s / cp, plus each step's half copies and output/gradient merges"
               if lay.get("cp_comm_type", "p2p") == "p2p" else
               "context parallel a2a: all-to-alls of Q, K, V and the output (and their gradients) exposed, one "
               "kernel over the whole sequence on heads / cp, plus the reorder copies")] if lay["cp"] > 1 else []),
           *([f"{' and '.join(x for x, on in (('layer weights', lay.get('offload_params')), ('stored activations', lay.get('offload_activations'))) if on)} "
              f"in host memory, copied over the host link at {hw['pcie'] / 1e9:.1f} GB/s per GPU beside each layer's compute "
              "(copy engines, no slowdown), two layers on the GPU; host memory not checked"]
             if lay.get("offload_params") or lay.get("offload_activations") else []),
           "pipeline: 1F1B" + (f" interleaved x{lay['vp']}" if lay["vp"] > 1 else "")
           + ", slowest stage sets the pace, embedding on the first stage and the head and loss on the last",
           "mixed-precision Adam (fp32 grads, master weights and moments), memory from calc_transformer_mem.py's model",
           recompute_text(lay)]
    fw = lay.get("framework", "megatron")
    if fw == "pytorch":
        out.append("memory: calc_transformer_mem.py's eager rule (what autograd saves in transformers' modules; "
                   + ("fp32 weights under autocast with a 16-bit copy of each weight, " if lay["zero_stage"] <= 1 else "")
                   + "peak at the backward's start or end)")
    if fw == "megatron":
        out.append("framework megatron: fused bias-activation, norm and softmax kernels, fused fp32 gradient accumulation")
    elif fw == "megatron-2021":
        out.append("framework megatron-2021: Megatron-LM of 2021 (sc21 artifact): fused bias-activation and softmax, "
                   f"apex LayerNorm at its measured {APEX_LAYERNORM_2021[0]:.2f} / {APEX_LAYERNORM_2021[1]:.2f} of "
                   "achievable bandwidth, unfused QKV bias add and context copy, "
                   + ("16-bit gradients accumulated by autograd, flattened, divided and copied back around the "
                      "all-reduce" if lay["grad_bytes"] == 2 else "fp32 gradients accumulated into main_grad by "
                      "a hook and divided before the all-reduce")
                   + ", fp32 cross-entropy over .float() logits")
    elif fw == "megatron-2022":
        out.append("framework megatron-2022: Megatron-LM of May 2022 (d898a8991d, Korthikanti et al. 2022): fused "
                   "bias-activation, softmax and persistent LayerNorm, unfused QKV bias add and context copy, "
                   "embedding all-reduce, fp32 cross-entropy over .float() logits, "
                   + ("fp32 main gradients (fused accumulation)" if lay["grad_bytes"] == 4 else
                      "16-bit main gradients added by local DDP's hook and cast to fp32 at the step")
                   + ", local DDP dividing the buffer by dp after the backward (dp = 1 too), no distributed "
                   "optimizer; host syncs of its timers not costed")
    elif fw == DEEPSPEED:
        z = lay["zero_stage"]
        out.append("framework deepspeed: DeepSpeed's engine over Megatron-DeepSpeed's fused kernels; "
                   + ("pipeline engine: blocking sends and receives (each stage waits out both), gradients "
                      "all-reduced after the last backward" if lay["pp"] > 1 else
                      f"ZeRO {z}: gradients reduced in {lay['dp_bucket_params'] / 1e6:g}M-element buckets "
                      + ("every micro-batch" if z >= 2 else "on the last micro-batch")
                      + (" beside the backward (overlap_comm)" if lay["dp_overlap"] else " on the compute stream, exposed"))
                   + ("; updated 16-bit weights all-gathered after the step" if z in (1, 2) else "")
                   + (f"; optimizer on the {lay['offload_device']} (CPU-Adam"
                      + (f", NVMe at {lay['nvme_bytes_per_s'] / 1e9:g} GB/s, not overlapped" if lay["offload_device"] == "nvme" else "")
                      + ")" if lay["offload"] else "")
                   + (f"; weights on the {lay['offload_param']}, fetched per layer over PCIe" if lay.get("offload_param") else ""))
    else:
        out.append(f"framework {fw}: eager PyTorch, each unfused kernel of the modules' source at achievable bandwidth "
                   "and at least the kernel floor; FSDP (-z 2/3) gathers and reduce-scatters every layer every "
                   f"micro-batch, gradients reduced in {'fp32' if lay['grad_bytes'] == 4 else 'bf16'}; "
                   "CPU launch overhead and host syncs not costed"
                   + ("; torch.compile'd blocks: their non-matmul kernels at 0.46 of eager, the loss's at 0.26 "
                      "(measured on an H200)" if lay.get("compile") else ""))
    if lay["matmul_bytes"] == 1:
        if lay["framework"] == "pytorch":
            r = lay.get("fp8_recipe") or "tensorwise"
            out.append(f"fp8: matmuls at the fp8 rate and ceiling, the output layer in bf16; torchao {r} casts at "
                       f"{FP8_CAST_BYTES_PER_ELEMENT[r]:g} B per operand element (measured on an H200)")
        elif lay["framework"] == "megatron":
            r = lay.get("fp8_recipe") or "delayed"
            out.append(f"fp8: matmuls at the fp8 rate and ceiling, the output layer in bf16; Transformer Engine's {r} "
                       "recipe quantizes each linear's input and output gradient (amax, cast"
                       + (", transposed copy" if hw["family"] != "blackwell" else "")
                       + ", counted from its source) at achievable bandwidth; weights once per step, not costed")
        else:
            out.append("fp8: matmuls at the fp8 rate and ceiling, the output layer in bf16; casts not costed")
    out += finetune_assumptions(lay)
    return out


def resolve_clusters(args, parser):
    """(GPU names (None: the default), GPU counts, one price per GPU name (None without one)): the
    lists a search compares. Each count and price is range-checked as the single flag is, then
    every other flag's range (FLAG_RANGES), before the rules between flags."""
    names = [x.strip() for x in args.gpu.split(",")] if args.gpu is not None else [None]
    if args.gpu is not None and not all(names):
        parser.error(f"--gpu {args.gpu!r}: an empty name in the list")
    if len(names) > 1:
        distinct_gpus(names, parser, without="a list of --gpu needs hardware.py's table")
    counts = list(args.num_gpus or (None,))
    prices = list(args.cost_per_gpu_hour or (None,))
    for dest, vals in (("num_gpus", counts), ("cost_per_gpu_hour", prices)):
        for v in vals:
            check_ranges(argparse.Namespace(**{dest: v}), parser, {dest: FLAG_RANGES[dest]})
    listed = ("num_gpus", "cost_per_gpu_hour")  # checked above, value by value
    check_ranges(args, parser, {k: v for k, v in FLAG_RANGES.items() if k not in listed})
    if (len(names) > 1 or len(counts) > 1) and not args.search:
        parser.error("a list of --gpu or --num-gpus needs --search (one layout runs on one cluster)")
    if len(prices) not in (1, len(names)):
        parser.error(f"--cost-per-gpu-hour has {len(prices)} prices for {len(names)} GPUs: give one, or one per "
                     "--gpu in the same order")
    if len(names) > 1:
        given = [f for f in ONE_GPU_FLAGS if getattr(args, f) is not None]
        if given:
            parser.error(f"--{given[0].replace('_', '-')} describes one accelerator: pass one --gpu with it")
    if args.deadline_days is not None and not args.tokens:
        parser.error("--deadline-days needs --tokens (the run's length)")
    return names, counts, prices * len(names) if len(prices) == 1 else prices


def gpu_flags(args, name):
    """The flags as tools/training_hardware.resolve_hardware reads them for GPU `name` (one of a
    --gpu list; None: the default accelerator): a copy, `args` left as parsed."""
    return argparse.Namespace(**dict(vars(args), gpu=name))


def resolve_run(args, parser):
    """Everything the answer needs from the flags, checked in order, as a dict: the clusters
    (names, counts, prices), the knobs a search keeps (pinned), the framework's knobs, the model
    (spec, notes, model_args), the first GPU's hardware (hw, net, hw_notes) and the memory base."""
    names, counts, prices = resolve_clusters(args, parser)
    # the execution knobs a search keeps as given (it searches the ones left out)
    pinned = {k for k, d in (("tp_comm_overlap", "tp_comm_overlap"), ("dp_overlap", "dp_overlap"),
                             ("offload", "offload"), ("sp", "sequence_parallel"),
                             ("offload_params", "offload_params"), ("offload_activations", "offload_activations"))
              if getattr(args, d) is not None}
    sp = args.sequence_parallel
    if sp is None and args.framework == "pytorch":
        # torchtitan's tensor parallelism always shards the norms over the sequence (SequenceParallel
        # on attention_norm, ffn_norm and norm in models/llama3/infra/parallelize.py apply_tp)
        sp = True
    if args.rank_by == "cost" and prices[0] is None:
        parser.error("--rank-by cost needs --cost-per-gpu-hour (on one GPU count it ranks as time does; the price "
                     "adds the cost column)")
    model_args = args  # the default heads are the model reader's, the same in every tool
    try:
        spec, notes = resolve_model_spec(vars(model_args))
    except ValueError as exc:
        parser.error(str(exc))
    knobs = resolve_framework_defaults(args, parser)
    knobs.update(finetune_knobs(args, parser, spec, knobs))
    knobs.update(sequence_parallel=bool(sp), offload=bool(args.offload),
                 offload_params=bool(args.offload_params),
                 offload_activations=bool(args.offload_activations))
    check_recompute_and_offload(args, parser, knobs)
    hw, net, hw_notes = resolve_hardware(gpu_flags(args, names[0]), parser, counts=counts)
    if knobs["fp8_recipe"] == "mxfp8":  # MXFP8's block-scaled GEMMs are Blackwell's (TE: sm100+)
        not_bw = [x or hw["name"] for x in names if kernel_family(x, parser) != "blackwell"]
        if not_bw:
            parser.error(f"--fp8-recipe mxfp8 needs a Blackwell GPU (b200, gb200, b300), "
                         f"not {not_bw[0]}")
    return {"names": names, "counts": counts, "prices": prices, "pinned": pinned, "knobs": knobs,
            "model_args": model_args, "spec": spec, "notes": notes, "hw": hw, "net": net,
            "hw_notes": list(hw_notes),
            "c0": memory_defaults(overhead_bytes=args.framework_mem_gib * GIB_),
            "flops": sequence_flops(spec, seq_len=args.sequence_length)}


def check_recompute_and_offload(args, parser, knobs):
    """The recompute flags' rules (modules need selective; a search picks the mode itself) and
    layer offload's (Megatron-LM's kernels only)."""
    if args.recompute_modules and knobs["recompute"] != "selective":
        parser.error(f"--recompute-modules needs --recompute selective, not --recompute "
                     f"{knobs['recompute']}")
    if args.search and (args.recompute_modules or (args.recompute_every or 1) > 1
                        or knobs["recompute"] == "op-sac"):
        parser.error("--search chooses among --recompute none, selective and full itself: drop --recompute-modules, "
                     "--recompute-every and --recompute op-sac, or drop --search")
    layer_offload = knobs["offload_params"] or knobs["offload_activations"]
    if layer_offload and eager_framework({"framework": args.framework}):
        parser.error(f"--offload-params / --offload-activations are costed for Megatron-LM's kernels only, not "
                     f"--framework {args.framework} (FSDP's CPUOffload moves weights, gradients and optimizer "
                     "together: not modelled)")


def layout_base(args, knobs, hw, n):
    """The layout every candidate starts from: the flags and the framework's knobs, n GPUs of hw."""
    tp, pp, cp = args.tensor_parallel_size, args.pipeline_parallel_size, args.context_parallel_size
    k = knobs
    return Layout({"num_gpus": n, "tp": tp, "pp": pp, "vp": args.virtual_pipeline_size, "cp": cp,
            "cp_comm_type": args.cp_comm_type,
            "ep": args.expert_parallelism, "etp": args.expert_tensor_parallel_size or tp,
            "sp": bool(k["sequence_parallel"] and tp > 1), "zero_stage": k["zero_stage"],
            "sequence_length": args.sequence_length, "recompute": k["recompute"],
            "offload": k["offload"],
            "recompute_modules": tuple(dict.fromkeys(args.recompute_modules)) if args.recompute_modules else None,
            "recompute_every": args.recompute_every or 1,
            # under deepspeed the weights' offload is ZeRO-3's offload_param, costed by its engine
            "offload_params": k["offload_params"] and args.framework != DEEPSPEED,
            "offload_activations": k["offload_activations"],
            "flash_attention": k["flash_attention"], "dropout": args.dropout,
            "attention_kernel": args.attention_kernel or default_attention_kernel(
                args.framework, hopper_or_newer=hw["family"] in ("hopper", "blackwell")),
            "tp_comm_overlap": k["tp_comm_overlap"], "dp_overlap": k["dp_overlap"],
            "dp_bucket_params": k["dp_bucket_mparams"] * 1e6, "moe_imbalance": args.moe_imbalance,
            "overlap_slowdown": args.overlap_slowdown,
            "gpus_per_node": job_gpus_per_node(gpus_per_node=hw["gpus_per_node"], num_gpus=n),
            "matmul_bytes": 1 if args.dtype == "fp8" else 2,
            "grad_bytes": 4 if k["grad_reduce_dtype"] == "fp32" else 2,
            "framework": args.framework, "compile": args.compile, "fp8_recipe": k["fp8_recipe"],
            "moe_dispatcher": args.moe_dispatcher, "moe_a2a_overlap": args.moe_a2a_overlap,
            "offload_device": (args.offload_device or "cpu") if k["offload"] else None,
            "offload_param": k["offload_param"],
            "nvme_bytes_per_s": args.nvme_gbps * 1e9 if args.nvme_gbps else None,
            "precision16": "fp16" if args.dtype == "fp16" else "bf16",
            "decoder_first_pipeline_num_layers": args.decoder_first_pipeline_num_layers,
            "decoder_last_pipeline_num_layers": args.decoder_last_pipeline_num_layers,
            "account_for_embedding_in_pipeline_split": args.account_for_embedding_in_pipeline_split,
            "account_for_loss_in_pipeline_split": args.account_for_loss_in_pipeline_split,
            **finetune_layout(k)})


def search_clusters(args, parser, run, base):
    """--search: every layout of every cluster (GPU kind x count), best first. Returns (found: one
    entry per cluster with its rows, layouts costed, parallel shapes, seconds taken)."""
    names, counts, prices, memo = run["names"], run["counts"], run["prices"], {}
    hw, net, spec, c0, flops = run["hw"], run["net"], run["spec"], run["c0"], run["flops"]
    t0 = time.perf_counter()
    show = Progress(args)  # on a terminal, once the search has run a second
    found, evaluated, ngroups = [], 0, 0
    many = len(names) * len(counts) > 1
    best_keys = []  # the --top best rank keys over all clusters so far, ascending
    for gi, name in enumerate(names):
        if len(names) > 1:
            hw, net, hw_notes_g = resolve_hardware(gpu_flags(args, name), parser, counts=counts)
            run["hw_notes"] += [x for x in hw_notes_g if x not in run["hw_notes"]]
        for count in counts:
            c = {"hw": hw, "net": net, "name": name, "num_gpus": count, "price": prices[gi]}
            b = base.replace(num_gpus=count,  # each GPU its default kernel
                     gpus_per_node=job_gpus_per_node(gpus_per_node=hw["gpus_per_node"],
                                                     num_gpus=count),
                     attention_kernel=args.attention_kernel or default_attention_kernel(
                         args.framework, hopper_or_newer=hw["family"] in ("hopper", "blackwell")))
            wanted = (lambda t, c=c: list_bound_s(c, t, best_keys, args)) if many else None
            rows, ev, ng = search_layouts(spec, b, hw=hw, net=net, c0=c0, flops=flops,
                                          progress=show, pinned=run["pinned"], keep=args.top,
                                          memo=memo, wanted=wanted)
            evaluated, ngroups = evaluated + ev, ngroups + ng
            found.append(dict(c, rows=rows, base=b))
    show.done()
    run["memo"] = memo
    return found, evaluated, ngroups, time.perf_counter() - t0


def search_answer(args, parser, run, base, res):
    """--search's answer into `res` (the layouts, and with several clusters their ranking);
    returns (hw, net, GPUs, layout, its result, price per GPU-hour) of the winner."""
    if args.cp_comm_type == "a2a":
        parser.error("--cp-comm-type a2a is costed one layout at a time: --search places context "
                     "parallelism as the p2p ring (drop one of the two)")
    if not run["counts"][0] or not args.global_batch_size:
        parser.error("--search needs --num-gpus and --global-batch-size")
    split = [k for k in PIPELINE_SPLIT_KEYS if base[k]]
    if split:
        parser.error(f"--{split[0].replace('_', '-')} describes one layout's pipeline: --search "
                     "chooses the split itself (uneven where the layers do not divide)")
    base["global_batch_size"] = args.global_batch_size
    found, evaluated, ngroups, elapsed = search_clusters(args, parser, run, base)
    names, counts = run["names"], run["counts"]
    if not any(c["rows"] for c in found):
        pinned = run["pinned"]
        streamed = {"offload", "offload_params", "offload_activations"} & pinned
        tried = ("full recompute and offload" if not streamed
                 else "full recompute and the offloads given")
        if len(found) > 1:
            kinds = names if names != [None] else [run["hw"]["name"]]
            parser.error(f"no layout of any cluster ({', '.join(kinds)} "
                         f"x {', '.join(map(str, counts))} GPUs) fits for global batch "
                         f"{args.global_batch_size}, even with {tried}")
        parser.error(f"no layout of {base['num_gpus']} GPUs fits "
                     f"{run['hw']['memory_bytes'] / GIB_:.1f} GiB per GPU for global batch "
                     f"{args.global_batch_size}, even with {tried}")
    clusters = rank_clusters(found, args)
    win = next(c for c in found if c["rows"] and c["rows"][0] is clusters[0]["row"])
    if len(found) > 1 and len({layout_shape(x[1]) for x in win["rows"]}) < 2:
        # the report's runner-up shape
        win["rows"] = search_layouts(run["spec"], win["base"], hw=win["hw"], net=win["net"],
                                     c0=run["c0"], flops=run["flops"], pinned=run["pinned"],
                                     keep=args.top, memo=run["memo"])[0]
    hw, n = win["hw"], win["num_gpus"]
    _, lay, r = win["rows"][0]
    res.update(gpu=hw["name"], gpu_default=hw["default"], num_gpus=n,
               memory_bytes=hw["memory_bytes"])
    res.update(layouts=top_layouts(found, args), layouts_evaluated=evaluated, layout_groups=ngroups,
               search_time_s=elapsed, why=why_winner(win["rows"]))
    if len(found) > 1:
        res["clusters"] = [{k: v for k, v in c.items() if k != "row"} for c in clusters]
        res["rank_by"] = args.rank_by
    return hw, win["net"], n, lay, r, win["price"]


# A layout's fields in the search's table of the best (--json's "layouts")
TOP_LAYOUT_KEYS = ("tp", "pp", "vp", "dp", "cp", "ep", "etp", "zero_stage", "micro_batch_size",
                   "recompute", "offload", "offload_params", "offload_activations",
                   "num_microbatches",
                   "global_batch_size", "sequence_length", "tp_comm_overlap", "dp_overlap",
                   *PIPELINE_SPLIT_KEYS)


def top_layouts(found, args):
    """The --top best layouts over every cluster, as the report's table lists them."""
    merged = sorted(((rank_key(c, row, args), c, row) for c in found
                     for row in c["rows"][:args.top]), key=lambda x: x[0])
    top = []
    for _, c, (_, ly, rr) in merged[:args.top]:
        top.append(dict({k: ly[k] for k in TOP_LAYOUT_KEYS},
                        sequence_parallel=ly["sp"], sp=ly["sp"], gpu=c["hw"]["name"],
                        num_gpus=c["num_gpus"],
                        step_time_s=rr["step_time_s"],
                        tokens_per_s_per_gpu=rr["tokens_per_s_per_gpu"], mfu=rr["mfu"],
                        total_bytes=rr["total_bytes"], headroom_bytes=rr["headroom_bytes"],
                        limited_by=limiter(rr)))
    return top


def one_layout_answer(args, parser, run, base, res):
    """One layout on --num-gpus: the given micro-batch, or the fastest that fits of those dividing
    the per-replica batch (the smallest when none fits). Returns (layout, its result)."""
    spec, n = run["spec"], base["num_gpus"]
    tp, pp, cp = base["tp"], base["pp"], base["cp"]
    dp = n // (tp * pp * cp) if n % (tp * pp * cp) == 0 else 0
    if not dp:
        parser.error(f"--num-gpus {n} is not divisible by tp x pp x cp = {tp * pp * cp}")
    b = args.micro_batch_size
    gbs = args.global_batch_size or dp * (b or 1)
    base["global_batch_size"] = gbs
    cands = [b] if b else _divisors(gbs // dp, 64) if gbs % dp == 0 else [1]
    best = None
    for x in cands:
        lay = base.replace(micro_batch_size=x)
        why = check_layout(spec, lay) or cp_layout_error(spec, lay)
        if why:
            if b or x == cands[-1] and best is None:
                parser.error(why)
            continue
        lay = complete_layout(lay)
        r = evaluate_layout(spec, lay, hw=run["hw"], net=run["net"], c0=run["c0"],
                            flops=run["flops"])
        key = (not r["fits"], r["step_time_s"] if r["fits"] else x)
        if best is None or key < best[0]:
            best = (key, lay, r)
    res["micro_batch_size_source"] = "--micro-batch-size" if b else "the fastest that fits"
    return best[1], best[2]


def next_step(args, parser, run, lay, n):
    """A layout that does not fit: the search over every layout of these GPUs, and the memory
    script's command for this one (what fits on how many GPUs)."""
    flags = gpu_flags(run["model_args"], run["names"][0])  # as given, with the heads the model read
    s = f"-s {lay['sequence_length']} --num-gpus {n}"
    search = [s, f"--global-batch-size {lay['global_batch_size']}"]
    fw = args.framework
    last = [*([f"--framework {fw}"] if fw != "megatron" else []), "--search"]
    memory = [s, f"-tp {lay['tp']} -pp {lay['pp']} -b {lay['micro_batch_size']} "
                 f"-z {lay['zero_stage']} --recompute {lay['recompute']}",
              # Megatron's optimizer shards in place
              *(["-zbs 0"] if lay["zero_stage"] < 3 else []),
              *(["--framework pytorch"] if fw == "pytorch" else [])]
    return {"search_command": script_command("calc_training_time.py", parser, flags, words=search,
                                             last=last),
            "memory_command": script_command("calc_transformer_mem.py", parser, flags,
                                             words=memory)}


def training_totals(args, lay, r, n, price):
    """--tokens: steps, days, GPU-hours and cost of the run; whether it meets --deadline-days."""
    steps = args.tokens / (lay["global_batch_size"] * lay["sequence_length"])
    wall = steps * r["step_time_s"]
    gh = wall * n / 3600
    out = {"tokens": args.tokens, "steps": steps, "time_s": wall, "days": wall / SECONDS_PER_DAY,
           "gpu_hours": gh, "cost_per_gpu_hour": price,
           "cost": gh * price if price is not None else None}
    if args.deadline_days is not None:  # this run against it (a list of clusters also ranks by it)
        out.update(deadline_days=args.deadline_days,
                   meets_deadline=wall / SECONDS_PER_DAY <= args.deadline_days)
    return out


def main(argv=None):
    parser = build_parser()
    args = parse_tool_args(parser, argv)
    with calc_errors(parser):  # a CalcError from below the tools: one line, exit 2
        return training_answer(args, parser)


def training_answer(args, parser):
    """The step (or the search's best layouts) for the parsed flags: resolve, cost, print; returns
    the result dict."""
    args, said = framework_default(args)
    run = resolve_run(args, parser)
    run["notes"] = ([said] if said else []) + run["notes"]
    spec, hw, net = run["spec"], run["hw"], run["net"]
    tp, pp, cp = args.tensor_parallel_size, args.pipeline_parallel_size, args.context_parallel_size
    n = run["counts"][0] or tp * pp * cp
    base = layout_base(args, run["knobs"], hw, n)
    res = {"model": spec_summary(spec), "warnings": list(spec["warnings"]), "gpu": hw["name"],
           "gpu_default": hw["default"], "num_gpus": n, "dtype": args.dtype,
           "memory_bytes": hw["memory_bytes"]}
    price = run["prices"][0]
    if args.search:
        hw, net, n, lay, r, price = search_answer(args, parser, run, base, res)
    else:
        split, said = implied_pipeline_split(spec["num_layers"], base)
        if split:  # the uneven split Megatron-LM needs, applied and said (the flags still win)
            base, res["pipeline_split_applied"] = base.replace(**split), said
        lay, r = one_layout_answer(args, parser, run, base, res)
    res.update({k: r[k] for k in ("step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "mfu", "hfu",
                                  "model_tflops_per_gpu", "total_bytes", "fits", "headroom_bytes",
                                  "breakdown_s", "memory", "slowest_stage", "stage_time_s")})
    res["layout"] = dict(lay, sequence_parallel=lay["sp"])
    res["host_memory"] = layout_host_memory(spec, lay, run["c0"],
                                            layers_bytes=r["memory"].get("host_bytes") or 0.0)
    if not r["fits"] and not args.search:  # the way out: the search over every layout of these GPUs
        res["next_step"] = next_step(args, parser, run, lay, n)
    res["flops_per_step"] = {"model": lay["global_batch_size"] * run["flops"]["model"],
                             "hardware": r["hardware_flops_per_step"]}
    if args.tokens:
        res["training"] = training_totals(args, lay, r, n, price)
    res["assumptions"] = assumptions(hw, lay)
    for note in [*run["hw_notes"], *run["notes"]]:
        print(f"note: {note}", file=sys.stderr)
    print_warnings(res["warnings"], as_json=args.json or args.brief)
    if args.brief:  # the run's time with --tokens, else the step's; the verdict (exit 3: no fit)
        print_brief(f"{brief_number(res['training']['days'])} days" if res.get("training")
                    else f"{brief_number(res['step_time_s'])} s per step", res)
    elif args.json:
        import json  # only --json needs it (start-up time)
        print(json.dumps(res, indent=2, default=str))
    else:
        print(format_report(res))
    return res


def rank_key(cluster, row, args):
    """Sort key of one layout of one cluster: a deadline met first (when given), then time per
    sequence (--rank-by time: the soonest; a run's days are its tokens / s x this) or GPU-hours per
    sequence x the price (--rank-by cost: the cheapest)."""
    t = row[0]
    late = False
    if args.deadline_days is not None:
        late = args.tokens / row[1]["sequence_length"] * t / SECONDS_PER_DAY > args.deadline_days
    if args.rank_by == "cost":
        return (late, t * cluster["num_gpus"] * cluster["price"] / 3600, t)
    return (late, t, t * cluster["num_gpus"])


def list_bound_s(cluster, t, best_keys, args):
    """For a search among clusters: record a layout of `cluster` found at t seconds per sequence
    among the --top best rank keys (best_keys, ascending), and return the time per sequence below
    which another layout of this cluster would still enter them (inf while fewer are known)."""
    key = rank_key(cluster, (t, {"sequence_length": args.sequence_length}), args)
    bisect.insort(best_keys, key)
    del best_keys[args.top:]
    if len(best_keys) < args.top:
        return math.inf
    late, value = best_keys[-1][:2]
    bound = value if args.rank_by == "time" else value * 3600 / (cluster["num_gpus"] * cluster["price"]) \
        if cluster["price"] else math.inf
    if args.deadline_days is not None:  # on time (t <= due) passes a late one; late passes late on value
        due = args.deadline_days * SECONDS_PER_DAY * args.sequence_length / args.tokens
        bound = max(bound, due) if late else min(bound, due)
    return bound


def rank_clusters(found, args):
    """One entry per cluster (GPU kind x count) with its best layout: step time, MFU, and with
    --tokens days, GPU-hours and cost (with a price), whether it meets --deadline-days; ranked by
    rank_key, clusters where nothing fits last."""
    out = []
    for c in found:
        e = {"gpu": c["hw"]["name"], "gpu_key": c["name"], "num_gpus": c["num_gpus"], "cost_per_gpu_hour": c["price"],
             "fits": bool(c["rows"])}
        if c["rows"]:
            t, ly, r = c["rows"][0]
            e.update(layout=layout_text(ly), step_time_s=r["step_time_s"], time_per_sequence_s=t, mfu=r["mfu"],
                     global_batch_size=ly["global_batch_size"], row=c["rows"][0], key=rank_key(c, c["rows"][0], args))
            if args.tokens:
                wall = args.tokens / ly["sequence_length"] * t
                gh = wall * c["num_gpus"] / 3600
                e.update(days=wall / SECONDS_PER_DAY, gpu_hours=gh,
                         cost=gh * c["price"] if c["price"] is not None else None,
                         meets_deadline=None if args.deadline_days is None else
                         wall / SECONDS_PER_DAY <= args.deadline_days)
        out.append(e)
    out.sort(key=lambda e: (not e["fits"], e.get("key", ())))
    for e in out:
        e.pop("key", None)
    return out


def why_winner(rows):
    """One sentence on what the best layout gains over the runner-up of another parallel shape."""
    best = rows[0]
    shape = lambda ly: (ly["tp"], ly["pp"], ly["vp"], ly["cp"], ly["ep"], ly["zero_stage"])  # noqa: E731
    other = next((r for r in rows[1:] if shape(r[1]) != shape(best[1])), None)
    if other is None:
        return "it is the only parallel shape that fits"
    b, o = best[2]["breakdown_s"], other[2]["breakdown_s"]
    diffs = {k: o.get(k, 0) - b.get(k, 0) for k in set(b) | set(o)}
    k = max(diffs, key=diffs.get)
    if other[2]["step_time_s"] - best[2]["step_time_s"] <= 1e-9 * best[2]["step_time_s"]:
        return (f"it ties with {layout_text(other[1])} "
                f"({fmt_s(other[2]['step_time_s'])} per step); either runs as fast")
    return (f"against the best {layout_text(other[1])} ({fmt_s(other[2]['step_time_s'])} per step), it saves "
            f"{fmt_s(diffs[k])} of {k.replace('_', ' ')} per step")


if __name__ == "__main__":
    run_tool(main)
