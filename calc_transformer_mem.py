#!/usr/bin/env python3
"""Per-GPU memory for training and inference of a decoder-only transformer, on the most-loaded rank.

Training: weights, gradients and optimizer states (mixed precision, optimizer, ZeRO/FSDP stage,
tensor/pipeline/expert/context parallel sharding), activations after Korthikanti et al. 2022
(recompute mode, sequence parallelism, flash attention, dropout, GQA, SwiGLU, MoE, 1F1B and
interleaved pipelines, logits on the last stage), ZeRO buffers, LoRA/QLoRA fine-tuning.
Inference (--infer): weights at any bit width, KV cache (MHA/GQA/MQA/MLA; sliding-window layers
capped at their window, chunked layers keeping every token, layers that reuse another layer's cache
holding none, DeepSeek-V3.2's indexer keys as their own line), the activation working set of one
forward. With --gpu or --gpu-memory-gib: fits or not, headroom, and the largest micro-batch
(training) or batch and context (inference) that fit.

The model is the package's list of layers (llmcalc.model): every sum runs over the layers of each pipeline
stage with the block's per-kind functions (layer_params, cache_elements_per_token, cached_tokens),
so a model mixing attention kinds, dense and MoE layers is counted layer by layer.

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
  * -b is the micro-batch per GPU (training) or the batch of sequences (inference). -ca /
    --checkpoint-activations turns recompute ON (the cookbook's meaning: --recompute full): it
    stores each layer's input and adds the stage's largest layer's recompute working set;
    selective drops the attention-score terms (Korthikanti sec. 5). The default is no recompute.
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
# @generated by tools/build_scripts.py from llmcalc/records.py, llmcalc/accelerator.py,
# llmcalc/errors.py, llmcalc/cli.py, llmcalc/model/kinds.py, llmcalc/model/formulas.py,
# llmcalc/model/hub.py, llmcalc/model/reader.py, llmcalc/model/families_moe.py,
# llmcalc/model/families_dense.py, llmcalc/model/families_hybrid.py, llmcalc/model/families_more.py,
# llmcalc/model/families_moa.py, llmcalc/model/families_sconv.py, llmcalc/model/families_state.py,
# llmcalc/model/config.py, llmcalc/model/spec.py, llmcalc/precision.py, llmcalc/model/sharding.py,
# llmcalc/serve/cache.py, llmcalc/train/recompute.py, llmcalc/train/memory.py,
# llmcalc/serve/footprint.py, llmcalc/train/fit.py, llmcalc/tools/mem.py. Do not edit this file:
# edit the source and run `python3 tools/build_scripts.py`.

import argparse
import os
import sys


# ======== llmcalc/records.py ======================================================================
# The records that flow between modules, declared once each.
#
# A record is a dict whose keys are declared in one place, its class's FIELDS (name: meaning, with
# units), so that a reader finds what a record holds without tracing who wrote which key, and a key
# nobody declared is refused where it is written (TypeError: a programming error, not bad input).
# Fields read as attributes too (`hw.sms` is `hw["sms"]`). Records stay dicts so that `--json`
# prints them as they are. Not dataclasses or TypedDicts: `dataclasses` costs ~15 ms and `typing`
# ~10 ms of start-up (python -X importtime, Python 3.11), against a budget of tens of milliseconds
# for a whole answer.
#
# Each record is declared beside the code that builds it: the accelerator (accelerator.Accelerator),
# the network (comm/collectives.Network), the model spec (model/spec.ModelSpec), a layer's costs and
# the memory config (train/). A subclass sets FIELDS and, where every field must be given, REQUIRED.

class Record(dict):
    """A dict with declared keys (FIELDS); REQUIRED ones must be given when it is built."""

    __slots__ = ()
    FIELDS = {}    # name -> meaning (units in the name or the text)
    REQUIRED = ()  # names that must be present at construction

    def __init__(self, *args, **fields):
        super().__init__(*args, **fields)
        unknown = [k for k in self if k not in self.FIELDS]
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {unknown[0]!r} (declared: "
                            f"{', '.join(self.FIELDS)})")
        missing = [k for k in self.REQUIRED if k not in self]
        if missing:
            raise TypeError(f"{type(self).__name__} needs {missing[0]!r}")

    def __setitem__(self, key, value):
        if key not in self.FIELDS:
            raise TypeError(f"{type(self).__name__} has no field {key!r}")
        super().__setitem__(key, value)

    def update(self, *args, **fields):
        for k, v in dict(*args, **fields).items():
            self[k] = v

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            if name in type(self).FIELDS:
                return None  # a declared field not set: absent, as .get() says
            raise AttributeError(f"{type(self).__name__} has no field {name!r}") from None

    def copy(self):
        return type(self)(self)


# ======== llmcalc/accelerator.py ==================================================================
# The accelerator record, and the default accelerator of every script.
#
# Owns the record format of hardware.py's table (row: datasheet units in, SI units out; the
# driver-reported usable memory; the scale-up topology) and the one default accelerator, the NVIDIA
# H100 SXM5 80GB: the row hardware.py lists as h100-sxm, written here once, so that every script, with
# or without hardware.py beside it, runs on exactly the numbers `--gpu h100-sxm` gives. Sources: per
# row (vendor datasheets; measured matmul rates from S. Bekman's ml-engineering MAMF table).

DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")



class Accelerator(Record):
    """One accelerator: every fact the models read, in SI units, each with its source (source,
    notes, and the *_source fields). Built once per row by accelerator_row; hardware.py's table
    and the default accelerator below are lists of these. Fields that may be None say so."""

    FIELDS = {
        "name": "the table's key (h100-sxm)", "full_name": "vendor's product name",
        "vendor": "NVIDIA, AMD, Google, Intel, AWS", "aliases": "other names --gpu accepts",
        "memory_bytes": "capacity as the vendor prints it (decimal GB -> bytes)",
        "memory_usable_bytes": "what the driver reports to programs (bytes): the 'will it fit' figure",
        "memory_usable_source": "where memory_usable_bytes was read, or 'derived, not measured'",
        "memory_bandwidth_bytes_per_s": "peak HBM bandwidth",
        "peak_flops_per_s": "dense peak per dtype (fp64 ... fp4); int8 in ops/s; only supported dtypes",
        "scale_up_link": "NVLink / xGMI / ICI / ... in words; None: no scale-up fabric",
        "scale_up_topology": "switch, mesh, torus, pair or hybrid-cube-mesh; None: no fabric",
        "scale_up_bandwidth_bytes_per_s": "scale-up link per device, one direction; None: none",
        "scale_up_domain_size": "devices one scale-up fabric joins (8 on HGX, 72 on NVL72)",
        "scale_up_in_network_reduction": "whether the fabric reduces in the switch (NVLink SHARP)",
        "scale_out_bandwidth_bytes_per_s": "NIC bandwidth per device, one direction; None: not listed",
        "pcie_peer_bandwidth_bytes_per_s": "PCIe peer-to-peer per direction on cards without a "
                                           "scale-up link; None: a scale-up link, or no P2P",
        "host_link": "the link to host memory in words (PCIe 5.0 x16, NVLink-C2C); None: not listed",
        "host_link_bandwidth_bytes_per_s": "host link line rate per direction; None: not listed",
        "tdp_w": "board power limit (W)",
        "achievable_matmul_flops_per_s": "measured best-shape matmul rate (MAMF) per dtype; None",
        "achievable_memory_bandwidth_bytes_per_s": "measured streaming bandwidth; None",
        "achievable_source": "where the achievable figures were measured",
        "sms": "streaming multiprocessors (AMD: compute units) for wave quantization; None: not listed",
        "kernel_family": "whose measured kernel rates apply: hopper, blackwell, ampere; None: none",
        "flash_attention_fraction": "FlashAttention-2's forward, backward rate / 16-bit peak",
        "sustained_matmul_fraction": "a training loop's sustained matmul rate / MAMF, {bf16, fp8, "
                                     "source}; None: not measured (taken as 1)",
        "kv_stream_efficiency": "share of peak bandwidth a decode attention kernel streams the KV "
                                "cache at; None: the serving memory efficiency",
        "source": "datasheets and pages the row was typed from", "notes": "caveats, in words",
    }
    REQUIRED = tuple(FIELDS)


RECORD_KEYS = tuple(Accelerator.FIELDS)

TERA = 1e12
GIGA = 1e9
GIB = 2 ** 30

# --- the host link: GPU <-> CPU memory, per GPU and direction ----------------------------------
# PCIe x16 line data rate: GT/s x 16 lanes x 128/130 (the 128b/130b encoding of PCIe 3.0-5.0) / 8
# bits (PCI-SIG, PCI Express Base Specification 3.0, 4.0, 5.0): 15.75, 31.5, 63.0 GB/s.
PCIE3_X16_GB_S = 8 * 16 * 128 / 130 / 8
PCIE4_X16_GB_S = 16 * 16 * 128 / 130 / 8
PCIE5_X16_GB_S = 32 * 16 * 128 / 130 / 8
# NVLink-C2C between a Grace CPU and its Hopper/Blackwell GPU: 900 GB/s in both directions, 450
# each way (NVIDIA GH200 Grace Hopper Superchip and GB200 NVL72 pages)
NVLINK_C2C_GB_S = 450.0
# Share of the line rate a bulk pinned host<->device copy reaches: assumed (copy engines on PCIe
# commonly reach 80-90% of it); ZeRO-Offload's weight and optimizer copies in training
# (train/offload.py, train/deepspeed.py). The serving KV tier's paged reloads reach less: measured,
# serve/offload.KV_RELOAD_EFFICIENCY.
HOST_LINK_EFFICIENCY = 0.8

# --- shared source strings -------------------------------------------------------------------
MAMF_SOURCE = ("S. Bekman, ml-engineering, compute/accelerator/README.md, 'Maximum Achievable Matmul "
         "FLOPS comparison table' https://github.com/stas00/ml-engineering/blob/master/compute/"
         "accelerator/README.md")
NV_H100_SOURCE = ("NVIDIA H100 datasheet https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-"
            "gpu-datasheet ; https://www.nvidia.com/en-us/data-center/h100/")

# --- usable (driver-reported) memory -------------------------------------------------------------
# name -> (MiB the driver reports, where it was published). nvidia-smi memory.total unless said.
_MODAL_2797 = ("nvidia-smi totals listed in https://github.com/modal-labs/modal-client/pull/2797 "
               "(2025-01)")
_USABLE_MIB = {
    "a100-40gb": (40960, _MODAL_2797 + "; also https://github.com/bottlerocket-os/"
                  "bottlerocket-core-kit/pull/834 (driver 580.126.09). Older drivers showed "
                  "40536 MiB (https://github.com/nanopool/phoenix-miner/issues/17, driver 470)"),
    "a100-80gb": (81920, _MODAL_2797),
    "a10": (23028, _MODAL_2797 + "; NVML total 24146608128 B in https://github.com/mayooot/"
            "detect-gpu/issues/3"),
    "a10g": (23028, "nvidia-smi in https://github.com/NVIDIA/DCGM/issues/232 (driver 535.247.01)"),
    "l4": (23034, _MODAL_2797),
    "l40s": (46068, _MODAL_2797 + "; also https://github.com/akash-network/provider-configs/"
             "pull/99 (driver 595.71.05)"),
    "h100-sxm": (81559, _MODAL_2797 + "; also https://github.com/NVIDIA/nccl/issues/1264 (driver "
                 "550.54.15). torch total_memory 81082-81090 MiB (public logs, torch 2.0-2.7)"),
    "h100-nvl": (95330, "DRM dedicated total 99961274368 B reported by the driver in "
                 "https://github.com/fastfetch-cli/fastfetch/issues/1658 (driver 570.86.15)"),
    "h800": (81559, "nvidia-smi in https://github.com/NVIDIA/DCGM/issues/183 (driver 535.183.01)"),
    "h20": (97871, "nvidia-smi in https://github.com/NVIDIA/nvtrust/issues/128 (driver 580.95.05)"),
    "h200": (143771, "nvidia-smi 143771 MiB in many public GitHub logs (e.g. 8x H200, driver "
             "570.158.01; repository not recorded); torch total_memory 143156 MiB in a public "
             "vLLM example comment"),
    "b200": (183359, "nvidia-smi in https://github.com/NVIDIA/TensorRT-LLM/issues/10278 (driver "
             "580.95.05); torch total_memory 182631-182642 MiB in public logs"),
    "rtx-3090": (24576, "nvidia-smi in https://github.com/noonghunna/club-3090/issues/1128 "
                 "(driver 595.84)"),
    "rtx-4090": (24564, "nvidia-smi in https://github.com/RLinf/RLinf/issues/255 (driver "
                 "550.163.01); torch total_memory 24563 MiB in a public log"),
    "rtx-5090": (32607, "nvidia-smi in https://github.com/noonghunna/club-3090/issues/617 "
                 "(driver 595.71.05)"),
}


def _usable_memory(name, memory_gb, memory_bytes):
    """(usable bytes, source): the published driver reading, else the vendor figure read as GiB.

    Derived rows assume the vendor's decimal GB is really that many GiB (HBM stacks are binary:
    H100 80GB = 5 x 16 GiB), an upper bound: real readings sit 0-2% below it.
    """
    if name in _USABLE_MIB:
        mib, src = _USABLE_MIB[name]
        return mib * 2 ** 20, f"measured {mib} MiB, {src}"
    if memory_gb is None:  # the vendor already prints GiB (TPU v4, Trainium)
        gib = memory_bytes / GIB
        return int(memory_bytes), f"derived, not measured: the vendor's {gib:g} GiB"
    return int(round(memory_gb * GIB)), (f"derived, not measured: vendor {memory_gb:g} GB read "
                                         f"as {memory_gb:g} GiB")


# --- facts of a GPU's kernels: SMs, the family whose measured kernel rates apply, sustained matmul
# and KV streaming. Read by the training step (train/) and serving (serve/) through the record's
# fields (sms, kernel_family, flash_attention_fraction, sustained_matmul_fraction,
# kv_stream_efficiency), never by GPU name.
# Streaming multiprocessors per GPU, for wave quantization: NVIDIA A100 whitepaper (108 SMs on
# A100 SXM/PCIe), H100 whitepaper (132 on SXM5, 114 on PCIe; H200 and GH200 are the SXM5 die),
# B200 (148, NVIDIA Blackwell datasheet), L40S (142, Ada datasheet); AMD MI300X/MI325X 304 CUs
# (CDNA 3 whitepaper). Other GPUs: no wave term (said in the assumptions).
_SM_COUNT = {"a100-40gb": 108, "a100-80gb": 108, "a100-40gb-pcie": 108, "a100-80gb-pcie": 108,
            "h100-sxm": 132, "h100-pcie": 114, "h100-nvl": 132, "h800": 132, "h200": 132, "h200-nvl": 132,
            "gh200": 132, "b200": 148, "l40s": 142, "mi300x": 304, "mi325x": 304}

# Flash-attention kernel rates as a fraction of the dense 16-bit peak, forward and backward
# (FLOPs counted as flash-attn's benchmark counts them: 4 s^2 d h forward, halved when causal,
# 2.5x that backward). The published forward+backward rate of FlashAttention-2, causal, head dim
# 128, 8k tokens (Dao 2023, arXiv 2307.08691, Fig. 4 and the H100 figure of the flash-attention
# repo): A100-80GB 182 TFLOP/s (0.583 of 312), H100 SXM 308 (0.311 of 989), used for both
# passes. FlashAttention-3's H100 forward (602, 0.61) has no published backward beside it, so
# H100 keeps the measured FA2 pair. Blackwell: the flash-attn 2.7.4 package on a B200, causal,
# head dim 128, 8k tokens, forward 399.9 and backward 318.0 TFLOP/s of 2,250 (NVIDIA/cudnn-frontend
# @bb37575d, sdpa_bf16_benchmark_results_NVIDIA_B200.csv; train/attention_rates.py). Other GPUs
# take the A100 fraction (an assumption).
FLASH_ATTENTION_FRACTION = {"ampere": (0.583, 0.583), "hopper": (0.311, 0.311),
                            "blackwell": (399.9 / 2250, 318.0 / 2250)}
FLASH_ATTENTION_FALLBACK = "ampere"  # the family whose fraction a GPU without its own takes

# A training loop keeps the GPU busy for minutes, and its matmuls do not all have the best shape:
# they run below the maximum a shape search finds in a short burst (MAMF). Measured here on one
# H100 SXM 80GB (700 W, torch 2.11 + CUDA 13.0, validation/h100/measure_training.py, 2026-11-24;
# raw rows in validation/h100/results/gemm.jsonl): back-to-back torch.matmul (bf16) and
# torch._scaled_mm (fp8 e4m3, per-tensor scales) over 51 shapes with m, n, k >= 2048 (squares
# and Llama-3 8B / 70B layer and weight-gradient shapes at 2k-16k tokens), random inputs rotated
# past L2, 20 s of continuous work: median 693 TFLOP/s bf16 and 1,234 fp8, where MAMF reports
# 794.5 and 1,402.6. The factor makes gemm_time_s's median over those 51 shapes equal the
# measured one (bf16 0.9125, fp8 0.9209); set from that grid alone and judged on the training
# steps measured beside it (VALIDATION.md). The 700 W SXM Hopper parts take it (H100 SXM; H200
# SXM, the same die and power limit: "H200 is the same", MAMF); the PCIe and NVL cards (other
# power limits), GH200 (its own MAMF) and other GPUs do not (not measured).
_SUSTAINED_H100 = {"bf16": 0.9125, "fp8": 0.9209, "source": "our H100 grid"}

# Blackwell: Azure's cuBLASLt FP8 GEMM run on one GB200 (Azure/AI-benchmarking-guide,
# Azure_Results/ND_GB200_v6_results.md @2a370be6: random inputs, 10,000 warm-up iterations, CUDA
# 12.8) reaches 2,834.6 / 2,876.6 / 2,906.9 / 2,825.6 TFLOP/s on the squares 4096^3 to 32768^3,
# mean 2,860.9, where MAMF gives the GB200 3,615.6: 0.791. The same method on an H200 (the
# file ND_H200_v5_results.md @7f20e5fa: 1,249.1 / 1,300.6 / 1,366.3 / 1,349.5, mean 1,316.4 over
# the Hopper fp8 MAMF 1,453.4) gives 0.906, within 2% of our own Hopper grid's 0.921, so the two
# methods agree where both exist. Taken for bf16 too (no bf16 row in the file) and for the B200
# and B300 (the same Blackwell compute at 1,000 / 1,100 W: assumptions, not measured).
_SUSTAINED_BLACKWELL = {"bf16": 2860.9 / 3615.6, "fp8": 2860.9 / 3615.6, "source": "Azure GB200 cuBLASLt run"}




# The family whose measured kernel rates (FlashAttention, cuDNN attention, the sustained-loop matmul
# factor) a GPU takes: the Hopper SXM/PCIe/NVL and Grace Hopper parts and the H800 (the GH100 die,
# 132 SMs at 700 W like the H100 SXM: the same kernels), the datacenter Blackwell parts, the A100s.
# Other GPUs: None (FlashAttention-2's A100 fraction stands in; said in the report).
_KERNEL_FAMILY = {"a100-40gb": "ampere", "a100-80gb": "ampere", "a100-40gb-pcie": "ampere",
                  "a100-80gb-pcie": "ampere", "h100-sxm": "hopper", "h100-pcie": "hopper",
                  "h100-nvl": "hopper", "h800": "hopper", "h200": "hopper", "gh200": "hopper",
                  "gh200-96gb": "hopper", "b200": "blackwell", "gb200": "blackwell", "b300": "blackwell"}
# the sustained-loop factor: measured on the 700 W SXM Hopper parts (H100 SXM; the H200 and H800 are
# the same die at the same limit), and Blackwell (above)
_SUSTAINED = {"h100-sxm": _SUSTAINED_H100, "h200": _SUSTAINED_H100, "h800": _SUSTAINED_H100,
              "b200": _SUSTAINED_BLACKWELL, "gb200": _SUSTAINED_BLACKWELL, "b300": _SUSTAINED_BLACKWELL}
# A decode attention kernel streams the KV cache at 0.93 of peak bandwidth on the GH100 chip (our
# H200 graph-mode decode steps; serve/stacks.py says how it was measured): H100, H200, GH200, H800, H20.
KV_STREAM_EFFICIENCY = 0.93
_KV_STREAM_CHIPS = ("h100", "h200", "gh200", "h800", "h20")


# How the scale-up domain is wired, which decides what one rank gets from a collective over part
# of it. "switch": NVSwitch-style, every device drives its whole scale-up bandwidth to any peer.
# "mesh": a point-to-point full mesh (AMD xGMI: 7 peers x 64 GB/s per direction on MI300X;
# Intel Gaudi: 3 RoCE ports per peer), so a group of G of the D devices reaches (G-1)/(D-1) of the
# aggregate and one peer 1/(D-1). "torus": TPU ICI / NeuronLink neighbours. "pair": an NVLink
# bridge between two PCIe cards. "hybrid-cube-mesh": DGX-1 V100. None: no scale-up fabric.
_TOPOLOGY = {"mi300x": "mesh", "mi325x": "mesh", "mi355x": "mesh", "gaudi2": "mesh",
             "gaudi3": "mesh", "mi250x": "mesh", "tpu-v4": "torus", "tpu-v5e": "torus",
             "tpu-v5p": "torus", "tpu-v6e": "torus", "trainium1": "torus", "trainium2": "torus",
             "v100-16gb": "hybrid-cube-mesh", "v100-32gb": "hybrid-cube-mesh"}


def accelerator_row(name, full_name, vendor, aliases, *, memory_gb, memory_tb_per_s, tflops,
         scale_up_link, scale_up_gb_per_s_unidir, domain, in_network_reduction,
         scale_out_gbit_per_s, tdp_w, source, notes, memory_bytes=None,
         achievable_tflops=None, achievable_memory_tb_per_s=None, achievable_source=None,
         pcie_peer_gb_per_s_unidir=None, host_link=None, host_link_gb_per_s_unidir=None):
    """Build one record from datasheet units (GB, TB/s, TFLOP/s, GB/s, Gb/s) into SI base units.

    Table rows are typed in the units the datasheets print so each figure can be checked against
    its source by eye; conversion to bytes, bytes/s and FLOP/s happens only here.
    """
    mem = int(memory_bytes if memory_bytes is not None else round(memory_gb * GIGA))
    usable, usable_src = _usable_memory(name, memory_gb, mem)
    flops = {dt: tflops[dt] * TERA for dt in DTYPES if tflops.get(dt) is not None}
    ach = None
    if achievable_tflops:
        ach = {dt: v * TERA for dt, v in achievable_tflops.items()}
    return Accelerator({
        "name": name,
        "full_name": full_name,
        "vendor": vendor,
        "aliases": list(aliases),
        "memory_bytes": mem,
        "memory_usable_bytes": usable,
        "memory_usable_source": usable_src,
        "memory_bandwidth_bytes_per_s": memory_tb_per_s * TERA,
        "peak_flops_per_s": flops,
        "scale_up_link": scale_up_link,
        "scale_up_topology": (None if scale_up_gb_per_s_unidir is None else
                              _TOPOLOGY.get(name, "pair" if domain == 2 else "switch")),
        "scale_up_bandwidth_bytes_per_s": (None if scale_up_gb_per_s_unidir is None
                                           else scale_up_gb_per_s_unidir * GIGA),
        "scale_up_domain_size": domain,
        "scale_up_in_network_reduction": in_network_reduction,
        "scale_out_bandwidth_bytes_per_s": (None if scale_out_gbit_per_s is None
                                            else scale_out_gbit_per_s * GIGA / 8),
        # cards without a scale-up link that reach their peers over PCIe (peer-to-peer DMA):
        # the slot's line rate per direction; None where there is a scale-up link or no P2P
        "pcie_peer_bandwidth_bytes_per_s": (None if pcie_peer_gb_per_s_unidir is None
                                            else pcie_peer_gb_per_s_unidir * GIGA),
        # the GPU's link to host memory (PCIe x16 or NVLink-C2C), line rate per direction; None
        # where not listed (TPU, Gaudi, Trainium hosts: not modelled)
        "host_link": host_link,
        "host_link_bandwidth_bytes_per_s": (None if host_link_gb_per_s_unidir is None
                                            else host_link_gb_per_s_unidir * GIGA),
        "tdp_w": tdp_w,
        "achievable_matmul_flops_per_s": ach,
        "achievable_memory_bandwidth_bytes_per_s": (None if achievable_memory_tb_per_s is None
                                                    else achievable_memory_tb_per_s * TERA),
        "achievable_source": achievable_source,
        # streaming multiprocessors (AMD: compute units), for wave quantization; None: not listed
        "sms": _SM_COUNT.get(name),
        # whose measured kernel rates apply: "hopper", "blackwell", "ampere", or None
        "kernel_family": _KERNEL_FAMILY.get(name),
        # FlashAttention-2's forward and backward rates as fractions of the 16-bit peak
        "flash_attention_fraction": list(FLASH_ATTENTION_FRACTION[_KERNEL_FAMILY.get(name) or
                                                                  FLASH_ATTENTION_FALLBACK]),
        # a training loop's sustained matmul rate over MAMF, {"bf16", "fp8", "source"}; None: 1
        "sustained_matmul_fraction": dict(_SUSTAINED[name]) if name in _SUSTAINED else None,
        # share of peak bandwidth a decode attention kernel streams the KV cache at; None: the
        # serving memory efficiency
        "kv_stream_efficiency": KV_STREAM_EFFICIENCY if name.startswith(_KV_STREAM_CHIPS) else None,
        "source": source,
        "notes": f"{notes} Usable memory: {usable_src}.",
    })


# --- the default accelerator --------------------------------------------------------------------
# tflops: dense TFLOP/s (int8: TOPS); the H100 SXM's column, shared with the H800/H200 rows.
HOPPER_SXM_TFLOPS = dict(fp64=67, fp32=67, tf32=494.7, bf16=989.4, fp16=989.4, fp8=1978.9,
                          int8=1978.9)

# Today's most common training and serving GPU; hardware.py's table holds this same record.
H100_SXM = accelerator_row(
    "h100-sxm", "NVIDIA H100 SXM5 80GB", "NVIDIA",
    ["h100", "h100-sxm5", "h100-sxm5-80gb", "h100-80gb", "h100-sxm-80gb", "h100-hgx"],
    memory_gb=80, memory_tb_per_s=3.35, tflops=HOPPER_SXM_TFLOPS,
    scale_up_link="NVLink 4 (18 links) via NVSwitch gen3", scale_up_gb_per_s_unidir=450,
    domain=8, in_network_reduction=True, scale_out_gbit_per_s=400, tdp_w=700,
    host_link="PCIe 5.0 x16", host_link_gb_per_s_unidir=PCIE5_X16_GB_S,
    source=NV_H100_SOURCE + " ; dense values: NVIDIA H100 Tensor Core GPU Architecture whitepaper",
    notes="Datasheet starred figures are sparse (BF16 1,979*, FP8 3,958*); dense halves. "
          "fp64 = tensor 67 (vector 34). NVLink 900 GB/s bidirectional. HGX H100: 8 GPUs, "
          "NVSwitch gen3 with NVLink SHARP; one 400 Gb/s ConnectX-7 per GPU (DGX H100).",
    achievable_tflops=dict(bf16=794.5, fp8=1402.6),
    achievable_source=MAMF_SOURCE + " (v2 table; torch 2.7.0+cu126; bf16 2048x2048x13312, fp8 "
                                    "e4m3 1024x9216x14336)")
DEFAULT_ACCELERATOR = H100_SXM["name"]


def default_accelerator():
    """A copy of the default accelerator's record, as hardware.get_accelerator('h100-sxm') gives it."""
    return Accelerator({k: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v)
                        for k, v in H100_SXM.items()})


# ======== llmcalc/errors.py =======================================================================
# The one error type below the tools.
#
# `serve/`, `train/`, `model/` and `comm/` take keyword arguments and never see argparse; when an input
# cannot be answered they raise CalcError with one line saying what was wrong and what would be right.
# The tools turn it into `prog: error: <message>` on stderr and exit status 2 (cli.calc_errors).

class CalcError(ValueError):
    """Bad input found below the tools: one line, what was wrong and what would be right."""


# ======== llmcalc/cli.py ==========================================================================
# The parser pieces every tool shares: the parser whose usage error is one line and exit 2, the
# bounded number types, the model flags, and the flag-range table each tool checks its flags against
# (with the --help line that lists it).

def terminal_columns():
    """The width help is wrapped to, as shutil.get_terminal_size() finds it (COLUMNS, else the
    terminal's, else 80) without importing shutil, which with bz2 and lzma is ~2 ms of start-up."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns


class DescriptionFormatter(argparse.RawDescriptionHelpFormatter):
    """The description as written (its line breaks kept), help wrapped to terminal_columns().
    argparse builds a formatter for every add_argument (to check the metavar), so the width it
    would look up through shutil is read here instead."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None, **kwargs):
        if width is None:
            width = terminal_columns() - 2  # argparse's own margin
        super().__init__(prog, indent_increment, max_help_position, width, **kwargs)


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (no usage dump) and exit status 2, and an
    epilog may be a function, called only when --help is printed (a run that answers never builds
    it: start-up time). Help keeps the description's line breaks (DescriptionFormatter)."""

    def __init__(self, *args, formatter_class=DescriptionFormatter, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, **kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")

    def format_help(self):
        if callable(self.epilog):
            self.epilog = self.epilog()
        return super().format_help()


class calc_errors:
    """`with calc_errors(parser):` around a tool's work: a CalcError raised below the tools (one line,
    errors.py) becomes the parser's one-line error and exit status 2, as a flag's own check does."""

    def __init__(self, parser):
        self.parser = parser

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is not None and issubclass(kind, CalcError):
            self.parser.error(str(exc))
        return False


def finite_float(text):
    """argparse type for a real number: rejects nan and inf with a one-line usage error."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if value != value or abs(value) == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


# Counts take SI suffixes (powers of 1000: 4k, 300B or 300G, 2T) and binary ones (powers of 1024:
# 8Ki = 8192, 1Mi); sizes in bytes (calc_comm.py --size) keep nccl-tests' binary K/M/G instead.
COUNT_UNITS = {"k": 10 ** 3, "m": 10 ** 6, "b": 10 ** 9, "g": 10 ** 9, "t": 10 ** 12, "p": 10 ** 15,
               "ki": 2 ** 10, "mi": 2 ** 20, "gi": 2 ** 30, "ti": 2 ** 40}


def parse_count(text):
    """A count as a user types it: 4096, 4_096, 1e12, 300B, 2T, 1.5k, 8Ki (COUNT_UNITS) -> a
    finite float or int. ArgumentTypeError (one line) for anything else."""
    t = str(text).strip().replace("_", "")
    i = len(t)
    while i > 0 and t[i - 1].isalpha():
        i -= 1
    num, unit = t[:i], t[i:].lower()
    if unit and unit not in COUNT_UNITS or not num:
        raise argparse.ArgumentTypeError(f"invalid count: {text!r} (use 4096, 1e12, or a suffix: "
                                         "4k, 300B, 2T = powers of 1000; 8Ki = 8192)")
    if not unit and num.lstrip("+-").isdigit():
        return int(num)
    try:
        value = float(num) * COUNT_UNITS.get(unit, 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid count: {text!r}") from None
    if value != value or abs(value) == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def count_float(text):
    """argparse type for a count that may be fractional or large (--tokens 2T): parse_count, as a
    finite float (a 400-digit count is refused, not overflowed)."""
    try:
        return float(parse_count(text))
    except OverflowError:
        raise argparse.ArgumentTypeError(f"{str(text)[:24]}... is too large") from None


def bounded_int(text):
    """argparse type for an integer flag: at most 18 digits, so no 400-digit size reaches a formula;
    suffixes as parse_count (-s 8Ki, --num-gpus 1k); the value must be whole."""
    text = str(text).strip()
    if len(text.lstrip("+-")) > 18:
        raise argparse.ArgumentTypeError(f"{text[:24]}... is too large (at most 18 digits)")
    try:
        value = parse_count(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"invalid integer: {text!r}") from None
    if isinstance(value, int):
        return value
    if abs(value) >= 1e18:
        raise argparse.ArgumentTypeError(f"{text[:24]} is too large (at most 18 digits)")
    if value != int(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    return int(value)


def add_model_args(parser):
    """Model-shape flags shared by every script (cookbook spellings kept; defaults are None so a
    flag the user gave is visible, and MODEL_DEFAULTS fill in what neither flag nor config set).
    Flags build a uniform stack; given with a config they override every layer they apply to."""
    g = parser.add_argument_group("model (flags override values read from a config)")
    bo, n = argparse.BooleanOptionalAction, bounded_int
    g.add_argument("--hf_model_name_or_path", "--hf-model-name-or-path", dest="hf_model_name_or_path",
                   default=None, help="local folder with config.json, a config.json path, or a hub "
                   "id (hub ids need `transformers`; never trust_remote_code)")
    g.add_argument("--vocab-size", "-v", type=n, default=None, help="V (default 51200)")
    g.add_argument("--hidden-size", "-hs", type=n, default=None, help="h (default 6144)")
    g.add_argument("--num-layers", "-l", type=n, default=None,
                   help="L (default 44); with a config, the first L layers of its pattern")
    g.add_argument("--num-attention-heads", "-a", type=n, default=None,
                   help="a (default: h/128, or h/64, when it divides)")
    g.add_argument("--num-kv-heads", type=n, default=None, help="kv heads (GQA/MQA; default a)")
    g.add_argument("--kv-size-ratio", "-kv", type=finite_float, default=None,
                   help="kv heads / query heads (cookbook; 1.0 = MHA)")
    g.add_argument("--head-dim", type=n, default=None, help="d (default h/a)")
    g.add_argument("--ffn-expansion-factor", "-ff", type=finite_float, default=None,
                   help="f = ff * h when --ffn-hidden-size is not given (default 4)")
    g.add_argument("--ffn-hidden-size", type=n, default=None, help="f, the dense MLP width")
    g.add_argument("--num-mlp-linears", "-nl", type=n, default=None,
                   help="matrices per MLP: 2 (GELU) or 3 (gated, e.g. SwiGLU) (default 2)")
    g.add_argument("--swiglu", action="store_true", default=None,
                   help="gated MLP with 3 matrices (same as -nl 3)")
    g.add_argument("--tied-embeddings", action=bo, default=None,
                   help="output head shares the token embedding (default: not tied)")
    g.add_argument("--norm", choices=("layernorm", "rmsnorm"), default=None,
                   help="norm type: layernorm has weight+bias, rmsnorm weight only (default layernorm)")
    g.add_argument("--norms-per-layer", type=n, default=None,
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
    g.add_argument("--max-position-embeddings", type=n, default=None,
                   help="rows of a learned position table (default: the sequence length)")
    g.add_argument("--embedding-norm", action=bo, default=None,
                   help="a norm right after the token embedding (BLOOM)")
    g.add_argument("--final-norm", action=bo, default=None, help="final norm before the head (default on)")
    g.add_argument("--sliding-window", type=n, default=None,
                   help="window of the sliding-window layers (default from the config; with no "
                   "config, every layer slides; 0 turns sliding off)")
    g.add_argument("--moe", action="store_true", default=None, help="mixture of experts MLPs")
    g.add_argument("--num-experts", "-e", type=n, default=None, help="E routed experts (default 8)")
    g.add_argument("--expert-interval", "-ei", type=n, default=None,
                   help="every ei-th layer is MoE (default 1)")
    g.add_argument("--topk", "-t", type=n, default=None, help="k experts per token (default 1)")
    g.add_argument("--moe-ffn-hidden-size", type=n, default=None, help="f_e (default f)")
    g.add_argument("--num-shared-experts", type=n, default=None, help="shared experts (default 0)")
    g.add_argument("--shared-expert-ffn-hidden-size", type=n, default=None,
                   help="total width of the shared experts (default num_shared * f_e)")
    g.add_argument("--shared-expert-gate", action=bo, default=None,
                   help="sigmoid gate (h -> 1) on the shared expert (Qwen-MoE)")
    g.add_argument("--num-dense-layers", type=n, default=None,
                   help="leading dense layers before the MoE layers (DeepSeek first_k_dense_replace)")
    g.add_argument("--router-bias", action=bo, default=None,
                   help="count a per-expert router bias (DeepSeek-V3's checkpoint stores one; HF "
                   "keeps it as a buffer, so it is off when reading a config)")
    g.add_argument("--q-lora-rank", type=n, default=None, help="MLA query rank (none: full q_proj)")
    g.add_argument("--kv-lora-rank", type=n, default=None, help="MLA kv latent rank (turns MLA on)")
    g.add_argument("--qk-nope-head-dim", type=n, default=None, help="MLA non-rotary q/k head dim")
    g.add_argument("--qk-rope-head-dim", type=n, default=None, help="MLA rotary q/k head dim")
    g.add_argument("--v-head-dim", type=n, default=None, help="MLA value head dim")
    parser.model_flags = g._group_actions  # for model_flag_words
    return g


def shell_word(value):
    """One word of a shell command: as it is when plain, else single-quoted."""
    text = str(value)
    if text and all(c.isalnum() or c in "-_./:=+" for c in text):
        return text
    return "'" + text.replace("'", "'\\''") + "'"


def model_flag_words(parser, args):
    """The model flags the user gave (or a config path), as words of a command another script of
    this family runs with the same meaning (one meaning per flag)."""
    words = []
    for a in parser.model_flags:
        v = getattr(args, a.dest)
        if v is None:
            continue
        name = next((o for o in a.option_strings if o.startswith("--")), a.option_strings[0])
        if isinstance(v, bool):
            if v or any(o.startswith("--no-") for o in a.option_strings):
                words.append(name if v else "--no-" + name[2:])
        else:
            words.append(f"{name} {shell_word(v)}")
    return words


def script_command(script, parser, args, *, words=(), last=()):
    """`python3 SCRIPT` with the model flags the user gave, `words`, --gpu as given, then `last`: a
    command another script of this family answers with the same meaning (one meaning per flag)."""
    gpu = [f"--gpu {shell_word(args.gpu)}"] if getattr(args, "gpu", None) else []
    return " ".join([f"python3 {script}"] + model_flag_words(parser, args) + list(words) + gpu + list(last))


def _num(x):
    """A bound or value as a user types it: 4096, 0.001, 1e18 (no '+', no zero-padded exponent)."""
    if isinstance(x, int) and abs(x) < 10 ** 6:
        return str(x)
    text = f"{x:g}" if float(f"{x:g}") == x else repr(float(x))  # 1.0000001 stays itself
    mant, _, exp = text.partition("e")
    return f"{mant}e{int(exp)}" if exp else mant


def _flag(parser, dest):
    return next(a.option_strings[0] for a in parser._actions if a.dest == dest)


def ranges_epilog(parser, ranges):
    """The --help line that lists each flag's range (from the table the checks use)."""
    import textwrap  # only --help needs it: build_parser passes this as a function (start-up time)
    return textwrap.fill("ranges (exit 2 outside): " + ", ".join(
        f"{_flag(parser, d)} {_num(lo)}..{_num(hi)}" for d, (lo, hi) in ranges.items()),
        100, break_on_hyphens=False)


def check_ranges(args, parser, ranges):
    """One parser.error (exit 2) for the first flag outside its (lo, hi) range, naming the bounds."""
    for dest, (lo, hi) in ranges.items():
        val = getattr(args, dest)
        if val is not None and not lo <= val <= hi:
            got = val if isinstance(val, int) else _num(val)
            parser.error(f"{_flag(parser, dest)} must be between {_num(lo)} and {_num(hi)}, got {got}")


def parse_tool_args(parser, argv):
    """parse_args, then refuse an empty --hf_model_name_or_path in one line (resolve_model_spec
    would read '' as "no config")."""
    args = parser.parse_args(argv)
    if args.hf_model_name_or_path == "":
        parser.error("--hf_model_name_or_path is empty: give a folder with config.json, a "
                     "config.json path or a hub id")
    return args


def add_output_args(parser, *, json_help="print the result dict as JSON"):
    """--json (the result dict) and --brief (one line: the headline number and its unit, for shell
    one-liners), one or the other."""
    g = parser.add_mutually_exclusive_group()
    g.add_argument("--json", action="store_true", help=json_help)
    g.add_argument("--brief", action="store_true",
                   help="print only the headline number and its unit, on one line (shell one-liners)")


def print_warnings(warnings, *, as_json):
    """A result's warnings, said once: in the report (its WARNING lines), or with --json, whose
    stdout is for machines, on stderr too (the JSON's "warnings" carries them as well)."""
    if as_json:
        for w in warnings:
            print(f"warning: {w}", file=sys.stderr)


def print_result(res, *, as_json, report, brief=None):
    """--json prints the result dict as indented JSON (json imported only then: start-up time),
    --brief the tool's one line (`brief`: the result to that line), else the tool's report."""
    if brief is not None:
        print(brief(res))
    elif as_json:
        import json
        print(json.dumps(res, indent=2))
    else:
        print(report(res))


def run_tool(main):
    """Run a tool's main() as a command; output piped into `head` or a pager that quit early ends
    the run quietly with status 141 (128 + SIGPIPE), as a shell tool does; stdout that cannot be
    written (a full disk, /dev/full, a closed file) is one line on stderr and exit 2."""
    try:
        main()
        sys.stdout.flush()
    except BrokenPipeError:
        sys.stdout = None
        sys.exit(141)
    except OSError as exc:
        import errno  # a stdout that cannot be written: a full disk or quota, an I/O error, a bad descriptor
        if exc.filename is not None or exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EBADF,
                                                          errno.EFBIG):
            raise  # not the output's failure
        sys.stdout = None  # nothing more to flush at exit
        prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "llmcalc"
        print(f"{prog}: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        sys.exit(2)


def load_hardware():
    """The accelerator table: the package's own hardware module when this runs from the installed
    package, else hardware.py beside the built script (ImportError when there is none)."""
    if __package__:
        import importlib
        return importlib.import_module(__package__.partition(".")[0] + ".hardware")
    import hardware
    return hardware


def accelerator_record(name, parser, *, without):
    """hardware.py's record for --gpu NAME. One-line exit 2 when the table is missing (`without`
    says which explicit flags to pass instead) or the name is unknown (the table's message)."""
    try:
        hardware = load_hardware()
    except ImportError:
        parser.error(f"--gpu needs hardware.py beside this script; {without}")
    try:
        return hardware.get_accelerator(name)
    except KeyError as exc:
        parser.error(str(exc.args[0]) if exc.args else f"unknown accelerator {name!r}")


# ======== llmcalc/model/kinds.py ==================================================================
# The vocabulary of layer kinds. A model is a list of layers. Each layer is a small dict
# {"attention": [attn, ...], "mlp": [mlp, ...], "norms": n, "extra_params": p} (p: matmul weights every
# token runs through once in that layer outside its attention and MLP, Gemma 4's per-layer inputs):
# usually one attention and one MLP, two of each in LongCat-Flash's shortcut-connected block. Layers
# of the same kinds share one dict object, so layer_groups() finds the distinct kinds quickly.
#
# An attention dict says what its weights are ("kind": mha covers MHA/GQA/MQA, mla is DeepSeek's
# latent attention), which keys a query sees ("span": full, sliding within "window", chunked within
# "chunk"), and its extras (rope, sinks, output gate, q/k norms, biases, a lightning "indexer" that
# picks top-k keys, with its own weights or none when it reuses an earlier layer's top-k,
# "kv_shared" when it reuses an earlier layer's K/V or latent, Mistral Large 4's per-head
# "position_scaling" and "indexer_input_norm", "v_dim" for values narrower than keys (MiMo-V2-Flash),
# "in_width" for q/k/v reading 2 h and "tied" for a block whose weights an earlier layer holds
# (Zamba's shared block), "extra_weights" for a family's non-matmul weights, "attn_experts" /
# "attn_topk" for JetMoE's routed q/o experts). Linear mixers by
# "kind": gdn, kda, mamba1, mamba2, shortconv, lightning (MiniMax-01), rwkv (RWKV-4), rglru (Griffin),
# mlstm (xLSTM). An MLP dict is "dense" (width, matrices, bias) or
# "moe" (routed experts, top-k, shared experts, router, zero experts). Per kind there is one
# function per quantity (model/formulas.py): attention_params, mlp_block_params,
# attention_linear_flops_per_token, attention_core_flops, query_key_pairs, mlp_flops_per_token,
# cache_elements_per_token, cached_tokens, decode_keys_read; totals are sums over the list.

# Chunk length of the chunked Gated DeltaNet algorithm: transformers' torch_chunk_gated_delta_rule
# and flash-linear-attention's chunk_gated_delta_rule both use 64 (Yang et al. 2024, arXiv 2412.06464).
GDN_CHUNK = 64


def layer_groups(spec):
    """[(layer, count, first_index)] for each distinct layer kind, in order of first appearance;
    kept on the spec for its layer list (scripts call this per pass: O(L) once, not per call)."""
    memo = spec.get("_layer_groups")
    if memo is not None and memo[0] is spec["layers"]:
        return memo[1]
    seen = {}
    for i, layer in enumerate(spec["layers"]):
        g = seen.get(id(layer))
        if g is None:
            seen[id(layer)] = [layer, 1, i]
        else:
            g[1] += 1
    out = [tuple(g) for g in seen.values()]
    spec["_layer_groups"] = (spec["layers"], out)
    return out


def attention_kind(attn):
    """A short label: full, sliding(4096), chunked(8192), mla, +nope, +sinks, +gate, +dsa(topk);
    a linear mixer by its kind and heads, gdn(16k/32v)."""
    if attn["kind"] == "mamba2":
        return f"mamba2({attn['heads']}x{attn['head_dim']}, N={attn['state_size']})"
    if attn["kind"] == "rwkv":
        return f"rwkv(D={attn['heads']})"
    if attn["kind"] == "mlstm":
        return f"mlstm({attn['heads']}x{attn['head_dim']}/{attn['v_head_dim']})"
    if attn["kind"] == "rglru":
        return f"rglru(W={attn['heads']}, K={attn['conv_kernel']})"
    if attn["kind"] in ("kda", "lightning"):
        return f"{attn['kind']}({attn['heads']}x{attn['head_dim']})"
    if attn["kind"] == "mamba1":
        return f"mamba(E={attn['heads']}, N={attn['state_size']})"
    if attn["kind"] == "shortconv":
        return f"shortconv(K={attn['conv_kernel']})"
    if attn["span"] == "state":
        return f"{attn['kind']}({attn['kv_heads']}k/{attn['heads']}v)"
    if attn["kind"] == "dsv4":
        c = {"csa": f" +csa(1/{attn['compress']}, top{attn['c_index_topk']})",
             "hca": f" +hca(1/{attn['compress']})"}.get(attn["compress_kind"], "")
        return f"dsv4 sliding({attn['window']}){c}"
    label = "mla" if attn["kind"] == "mla" else ("mha" if attn["kv_heads"] == attn["heads"] else
                                                 "mqa" if attn["kv_heads"] == 1 else "gqa")
    span = {"full": "", "sliding": f" sliding({attn['window']})", "chunked": f" chunked({attn['chunk']})"}
    label += span[attn["span"]]
    if not attn["rope"]:
        label += " nope"
    if attn["kv_shared"]:
        label += " kv-shared"
    if attn["sinks"]:
        label += " sinks"
    if attn["output_gate"] != "none":
        label += " gate"
    if attn.get("attn_experts"):
        label += f" moa({attn['attn_topk']}/{attn['attn_experts']})"
    if attn["index_topk"]:
        label += f" dsa(top{attn['index_topk']})" + ("" if attn["index_heads"] else " shared-topk")
    return label


def mlp_kind(mlp):
    if mlp["kind"] == "moe":
        z = f"+{mlp['zero_experts']}zero" if mlp["zero_experts"] else ""
        sh = " +shared" if mlp["shared_width"] else ""
        return f"moe {mlp['topk']}/{mlp['num_experts']}{z}{sh}"
    return f"dense {mlp['width']}"


# ======== llmcalc/model/formulas.py ===============================================================
# Per-kind formulas: for each attention and MLP kind, its parameters, matmul FLOPs per token,
# query-key pairs and core FLOPs, keys read in decode, KV cache and state elements; param_breakdown
# sums them over the layer list. Every tool's numbers come from these.

# --- per-kind formulas ---------------------------------------------------------------------------

def norm_params(*, width, norm):
    """Weights of one norm over `width` features: LayerNorm has gain and bias (2 w), RMSNorm a gain
    (w), a non-affine norm none (Ba et al. 2016; Zhang & Sennrich 2019)."""
    return {"layernorm": 2 * width, "rmsnorm": width, "none": 0}[norm]


def indexer_params(attn, *, h):
    """DeepSeek-V3.2's lightning indexer (DeepSeek-AI 2025, sec. 2.1), as transformers builds it:
    q from the query latent (r_q -> H_I d_I), one shared key head (h -> d_I) with a LayerNorm
    (2 d_I), and per-head weights (h -> H_I). Mistral Large 4's adds a LayerNorm on its input
    (2 h) and, with per-head position scaling, a scale and a bias per indexer head (2 H_I)
    (transformers' modeling_mistral_large4). GLM-5-Next's pools its keys over index_kpool = P
    positions: a pooling gate h -> d_I and a position table P x d_I (modeling_glm5_next)."""
    H, dI = attn["index_heads"], attn["index_head_dim"]
    if not attn["index_topk"] or not H:
        return 0
    q_in = attn["q_lora_rank"] or h
    extra = 2 * h * attn["indexer_input_norm"] + 2 * H * attn["position_scaling"]  # Mistral Large 4
    P = attn.get("index_kpool", 0)
    return q_in * H * dI + h * dI + 2 * dI + h * H + extra + (h * dI + P * dI if P else 0)


def mixer_widths(attn):
    """(in_proj output width, out_proj input width, conv channels) of a linear mixer. Gated
    DeltaNet: q, k, v, z, beta, a = 2 H_k d_k + 2 H_v d_v + 2 H_v; H_v d_v; 2 H_k d_k + H_v d_v.
    Mamba-2 (Dao & Gu 2024, arXiv 2405.21060 sec. 7; heads H of P, G groups of state N): z, x,
    B, C, dt = 2 H P + 2 G N + H; H P; H P + 2 G N. Mamba-1 (Gu & Dao 2023, arXiv 2312.00752;
    E inner channels, "heads" here): x, z = 2 E; E; E. A short convolution (LFM2/3; D channels):
    B, C, x = 3 D; D; D. Kimi Delta Attention (KDA; H heads of d, D = H d): q, k, v, the low-rank
    inputs of the decay and the output gate, beta = 3 D + 2 d + H; D; 3 D. Lightning attention
    (MiniMax-01, arXiv 2501.08313; H heads of d, D = H d): q, k, v and the sigmoid output gate from
    the layer input = 4 D; D; no conv. Griffin's recurrent block (De et al. 2024, arXiv 2402.19427
    sec. 2.4; RecurrentGemma; W = lru_width): x and gate branches 2 W; W; W. RWKV-4 time mixing (Peng et al. 2023, arXiv 2305.13048; D =
    attention_hidden_size): key, value, receptance = 3 D; D; no conv."""
    if attn["kind"] == "lightning":
        D = attn["heads"] * attn["head_dim"]
        return 4 * D, D, 0
    if attn["kind"] == "mlstm":  # q, k (H d_k each), v and the output gate (H d_v each), input and forget gates
        H, dk, dv = attn["heads"], attn["head_dim"], attn["v_head_dim"]
        return 2 * H * dk + 2 * H * dv + 2 * H, H * dv, 0
    if attn["kind"] == "rwkv":  # RWKV-4 time mixing: key, value, receptance (D each); output D -> h
        return 3 * attn["heads"], attn["heads"], 0
    if attn["kind"] == "rglru":  # Griffin's recurrent block: x and gate branches (W each); W -> h; conv over x
        return 2 * attn["heads"], attn["heads"], attn["heads"]
    if attn["kind"] == "kda":  # q, k, v (3 D), the decay's and the gate's low-rank inputs (2 d), beta
        D = attn["heads"] * attn["head_dim"]  # (full-rank decay and gate, Bailing: 2 D)
        r = D if attn.get("full_rank_gates") else attn["head_dim"]
        return 3 * D + 2 * r + attn["heads"], D, 3 * D
    if attn["kind"] in ("mamba1", "shortconv"):
        E = attn["heads"]
        return (2 if attn["kind"] == "mamba1" else 3) * E, E, E
    if attn["kind"] == "mamba2":
        d_in, gn = attn["heads"] * attn["head_dim"], attn["kv_heads"] * attn["state_size"]
        return 2 * d_in + 2 * gn + attn["heads"], d_in, d_in + 2 * gn
    Hk, Hv, dk, dv = attn["kv_heads"], attn["heads"], attn["head_dim"], attn["v_head_dim"]
    return 2 * Hk * dk + 2 * Hv * dv + 2 * Hv, Hv * dv, 2 * Hk * dk + Hv * dv


def linear_mixer_params(attn, *, h):
    """A linear mixer's weights, by kind (Mamba-2 below). One Gated DeltaNet mixer's weights (Yang et al. 2024, arXiv 2412.06464), as transformers'
    Qwen3-Next/Qwen3.5 build it: with H_k key heads of d_k and H_v value heads of d_v, an input
    projection to q, k (H_k d_k each), v and the output gate z (H_v d_v each) and per value head
    beta and the decay's a (h x (2 H_k d_k + 2 H_v d_v + 2 H_v)); a depthwise causal conv of K taps
    over q, k, v (no bias); per value head dt_bias and A_log; a gated RMSNorm over d_v shared by the
    heads; out_proj H_v d_v x h. Mamba-2 as transformers builds it (NemotronH, GraniteMoeHybrid,
    FalconH1): in_proj h x (2 d_in + 2 G N + H) (+ bias), a depthwise conv of K taps over x, B, C
    (+ bias), per head dt_bias, A_log and D, a gated RMSNorm over d_in where the family has one,
    out_proj d_in x h (+ bias). Mamba-1 as transformers' Jamba builds it: in_proj h x 2E, a conv of
    K taps (+ bias), x_proj E x (R + 2N) to dt's rank-R input and B, C, dt_proj R x E with a bias,
    A_log E x N, D, out_proj E x h, and Jamba's RMSNorms on dt, B and C (R + 2N). A short
    convolution (LFM3): in_proj h x 3h, a depthwise conv of K taps, out_proj h x h, biases on all
    three with conv_bias. KDA as transformers' Kimi Linear builds it (Kimi Team 2025, arXiv
    2510.26692): q, k, v projections, one depthwise conv of K taps over q, k, v (no bias), a low-rank
    per-channel decay (h -> d -> D, dt_bias D, A_log per head), beta per head, a low-rank sigmoid
    output gate (h -> d -> D), a gated RMSNorm over d shared by the heads, o_proj D x h."""
    w_in, w_out, conv_dim = mixer_widths(attn)
    K = attn["conv_kernel"]
    if attn["kind"] == "lightning":  # + the RMSNorm over the D-wide output (MiniMaxLightningAttention)
        return h * w_in + w_out * h + w_out
    if attn["kind"] == "mlstm":  # + the gates' biases (2 H), the per-head norm's weight (v), use_bias's biases
        b = attn["mixer_bias"]
        return h * w_in + 2 * attn["heads"] + w_out + w_out * h + b * (w_in - 2 * attn["heads"] + w_out + h)
    if attn["kind"] == "rwkv":  # + time_decay and time_first (D each), the three time_mix vectors (h each)
        return h * w_in + w_out * h + 2 * w_out + 3 * h
    if attn["kind"] == "rglru":  # biases on x, gate, out and conv; the RG-LRU's block-diagonal input and
        W, G = attn["heads"], attn["gate_blocks"]  # recurrence gates (G blocks of W/G, + biases) and its a
        return h * w_in + w_in + conv_dim * K + conv_dim + w_out * h + h + 2 * (W * W // G + W) + W
    if attn["kind"] == "shortconv":
        return h * w_in + conv_dim * K + w_out * h + attn["conv_bias"] * (w_in + conv_dim + h)
    if attn["kind"] == "kda":  # + the decay's and gate's d -> D up-projections, dt_bias D, A_log H, norm d
        H, d = attn["heads"], attn["head_dim"]
        ups = 0 if attn.get("full_rank_gates") else 2 * d * H * d
        return h * w_in + ups + conv_dim * K + H * d + H + d + w_out * h
    if attn["kind"] == "mamba1":
        E, R, N = attn["heads"], attn["dt_rank"], attn["state_size"]
        return (h * w_in + attn["in_bias"] * w_in + conv_dim * K + attn["conv_bias"] * conv_dim
                + E * (R + 2 * N) + R * E + E + E * N + E + w_out * h + attn["mixer_out_bias"] * h
                + attn["dt_norms"] * (R + 2 * N))
    if attn["kind"] == "mamba2":
        return (h * w_in + attn["in_bias"] * w_in + conv_dim * K + attn["conv_bias"] * conv_dim
                + 3 * attn["heads"] + attn["gated_norm"] * w_out + w_out * h + attn["mixer_out_bias"] * h)
    Hv, dv = attn["heads"], attn["v_head_dim"]
    return h * w_in + conv_dim * K + 2 * Hv + dv + w_out * h


def dsv4_attention_params(attn, *, h):
    """One DeepSeek-V4 attention block's weights, as transformers 5.23's modeling_deepseek_v4 builds
    it (verified on the meta device, tests/test_layer_families.py): a sink logit per head,
    q through a rank-r_q bottleneck with its norm (the per-head q norm has no weights), one shared
    K = V head (h -> d) with its norm, the output through o_groups grouped low-rank projections
    (a d -> r_o per group, then g r_o -> h), plus the layer's compressor: kv and gate projections
    (h -> d each; 2 d each with the overlapping windows of compressed sparse attention), a
    position bias per slot of its window and a norm; and for compressed sparse attention a
    lightning indexer over the compressed keys (its own compressor at width d_I, q from the query
    latent r_q -> H_I d_I, per-head weights h -> H_I)."""
    a, d, rq = attn["heads"], attn["head_dim"], attn["q_lora_rank"]
    g, ro, m = attn["o_groups"], attn["o_lora_rank"], attn["compress"]
    base = a + h * rq + rq + rq * a * d + h * d + d + a * d * ro + g * ro * h
    if attn["compress_kind"] == "hca":
        return base + 2 * h * d + m * d + d
    if attn["compress_kind"] == "csa":
        HI, dI = attn["c_index_heads"], attn["c_index_head_dim"]
        return (base + 4 * h * d + 2 * m * d + d
                + 4 * h * dI + 2 * m * dI + dI + rq * HI * dI + h * HI)
    return base


def dsv4_non_matmul_params(attn):
    """The weights of a DeepSeek-V4 attention block that no token multiplies through: sinks, norms
    and the compressors' position biases."""
    a, d, rq, m = attn["heads"], attn["head_dim"], attn["q_lora_rank"], attn["compress"]
    out = a + rq + d
    if attn["compress_kind"] == "hca":
        out += m * d + d
    if attn["compress_kind"] == "csa":
        dI = attn["c_index_head_dim"]
        out += 2 * m * d + d + 2 * m * dI + dI
    return out


def mla_q_macs_per_token(attn, *, h):
    """Multiply-adds per token of MLA's query path (DeepSeek-V2 sec. 2.1): q directly from h
    (h x a d_qk) or through the rank-r_q bottleneck (h x r_q, then r_q x a d_qk). A.X K2
    (transformers' modeling_axk2 q_gate_proj) reads [norm(c_q), c_q], 2 r_q wide
    ("q_latent_concat"), and with an elementwise output gate also writes the gate (a d_v)."""
    a, r_q = attn["heads"], attn["q_lora_rank"]
    d_qk = attn["qk_nope_head_dim"] + attn["qk_rope_head_dim"]
    out = a * (d_qk + attn["v_head_dim"] * (attn["output_gate"] == "elementwise"))
    if not r_q:
        return h * out
    return h * r_q + r_q * (2 if attn.get("q_latent_concat") else 1) * out


def attention_params(attn, *, h):
    """One attention block's weights. MHA/GQA/MQA: q (h x a d; twice as wide with an elementwise
    output gate, Qwen3-Next), k and v (h x kv d; k alone when K = V, none on a layer that reuses
    another's K/V, Gemma 4), o (a d x h), optional biases, q/k norms (per head, d each; or over all
    heads; Llama 4's L2 norm has no weights), a sink logit per head (gpt-oss), a per-head sigmoid
    output gate h -> a (LFM3's g_proj, "headwise"). MLA (DeepSeek-V2 sec. 2.1): q
    directly or via a rank-r_q bottleneck with a norm, a joint kv down-projection to r_kv + d_rope
    with a norm (none on a layer that reuses an earlier layer's latent), an up-projection to
    a (d_nope + d_v), and o (a d_v x h); a learned scale and bias per head with position scaling
    (Mistral Large 4); plus any indexer. extra_weights: a family's non-matmul weights in the block
    (DiffLlama's lambdas, BitNet's norm before o_proj). in_width: the width q, k and v read (2 h in
    Zamba's shared block); tied: the weights belong to a block an earlier layer holds (0 here)."""
    if attn["span"] == "state":
        return linear_mixer_params(attn, h=h)
    if attn["kind"] == "dsv4":
        return dsv4_attention_params(attn, h=h)
    a, kv, d, nm = attn["heads"], attn["kv_heads"], attn["head_dim"], attn["norm"]
    qkv_b, o_b = attn["qkv_bias"], attn["out_bias"]
    if attn["kind"] == "mla":
        r_q, r_kv = attn["q_lora_rank"], attn["kv_lora_rank"]
        d_nope, d_rope, d_v = attn["qk_nope_head_dim"], attn["qk_rope_head_dim"], attn["v_head_dim"]
        q = mla_q_macs_per_token(attn, h=h) + (qkv_b * r_q + norm_params(width=r_q, norm=nm) if r_q else 0)
        kv_down = 0 if attn["kv_shared"] else (h * (r_kv + d_rope) + qkv_b * (r_kv + d_rope)
                                                + norm_params(width=r_kv, norm=nm))
        kv_up = r_kv * a * (d_nope + d_v)
        return (q + kv_down + kv_up + a * d_v * h + o_b * h + a * attn["sinks"] + 2 * a * attn["position_scaling"]
                + h * a * (attn["output_gate"] == "headwise")  # Bailing's per-head gate on MLA
                + attn.get("extra_weights", 0)
                + indexer_params(attn, h=h))
    q_out = a * d * (2 if attn["output_gate"] == "elementwise" else 1)
    gate = a * (attn["output_gate"] == "headwise")  # LFM3's g_proj: h -> a, no bias
    dv = attn.get("v_dim", d)  # value heads narrower than key heads (MiMo-V2-Flash)
    kv_out = kv * (d + dv if attn["kv_proj"] == 2 else d * attn["kv_proj"])
    has_k = attn["kv_proj"] > 0  # a layer that reuses another's K/V has no k norm either
    qk = {"none": 0, "l2": 0, "head": d * (1 + has_k), "full": (a + kv * has_k) * d}[attn["qk_norm"]]
    if attn.get("tied"):  # a block shared with an earlier layer (Zamba): its weights counted there
        return 0
    h_in = attn.get("in_width", h)  # Zamba's shared attention reads [hidden, embedding], 2 h wide
    return (h_in * (q_out + kv_out + gate) + qkv_b * (q_out + kv_out) + a * dv * h + o_b * h
            + attention_expert_params(attn, qo=h_in * q_out + a * dv * h, h=h)
            + norm_params(width=qk, norm=nm) + a * attn["sinks"] + attn.get("extra_weights", 0))


def attention_expert_params(attn, *, qo, h):
    """Mixture of attention heads (JetMoE's MoA, Shen et al. 2024, arXiv 2404.07413 sec. 2.2, as
    transformers' JetMoeMoA builds it): E experts, each a query projection h -> kv d and an output
    projection kv d -> h, k of them per token (a = k kv query heads over the shared K/V), and a
    router h x E. qo: the q and o weights of the k experts a token runs; returns the weights beyond
    them (the other E - k experts and the router); 0 without attention experts."""
    E, k = attn.get("attn_experts", 0), attn.get("attn_topk", 0)
    if not E:
        return 0
    return qo * (E - k) // k + h * E


def attention_inactive_params(attn, *, h):
    """The attention-expert weights a token does not run: (E - k) experts' q and o (MoA), i.e.
    attention_expert_params less its router; 0 else."""
    E = attn.get("attn_experts", 0)
    if not E or attn["span"] == "state" or attn["kind"] != "mha":
        return 0
    a, d = attn["heads"], attn["head_dim"]
    return attention_expert_params(attn, qo=h * a * d + a * attn.get("v_dim", d) * h, h=h) - h * E


def mlp_params(*, h, f, num_linears, bias):
    """One MLP: num_linears matrices of h x f (2 for GELU; 3 for gated GLU variants, Shazeer 2020),
    plus biases: f per input projection and h on the output projection."""
    return num_linears * h * f + (bias and (num_linears - 1) * f + h)


def mlp_block_params(mlp, *, h):
    """One MLP block by part. Dense: mlp_params. MoE (Shazeer et al. 2017; DeepSeekMoE, Dai et al.
    2024): E routed experts of width f_e (biases if the family has them, gpt-oss), shared experts
    as one MLP of their total width (+ an h -> 1 gate, Qwen-MoE), router h x E (+ E bias where it
    is a parameter; + router_extra, Gemma 4's router scale h and per-expert scale E, transformers'
    Gemma4TextRouter). Zero-computation experts (LongCat-Flash) have no weights."""
    if mlp.get("tied"):  # a block shared with an earlier layer (Zamba): its weights counted there
        return {"dense": 0, "routed_experts": 0, "one_expert": 0, "shared_experts": 0, "router": 0}
    if mlp["kind"] == "dense":  # + a learned activation's scalars (Apertus' xIELU: 2)
        return {"dense": mlp_params(h=h, f=mlp["width"], num_linears=mlp["linears"], bias=mlp["bias"])
                + mlp.get("act_params", 0),
                "routed_experts": 0, "one_expert": 0, "shared_experts": 0, "router": 0}
    one = mlp_params(h=h, f=mlp["width"], num_linears=mlp["linears"], bias=mlp["bias"])
    f_sh = mlp["shared_width"]
    shared = mlp_params(h=h, f=f_sh, num_linears=mlp["linears"], bias=mlp["shared_bias"]) if f_sh else 0
    E = mlp["num_experts"]
    return {"dense": 0, "routed_experts": E * one, "one_expert": one,
            "shared_experts": shared + h * bool(mlp["shared_gate"]),
            "router": h * (E + mlp["zero_experts"]) + (E + mlp["zero_experts"]) * bool(mlp["router_bias"])
            + mlp.get("router_extra", 0)}


def expected_real_experts(mlp):
    """Routed experts with weights that one token runs: k, or with Z zero-computation experts among
    the E + Z a router picks from, k E / (E + Z) in expectation under uniform routing (LongCat-Flash
    tech report, sec. 2.1, adjusts its expert bias so the real count averages about this)."""
    if mlp["kind"] != "moe":
        return 0
    k, E, Z = mlp["topk"], mlp["num_experts"], mlp["zero_experts"]
    return k * E / (E + Z) if Z else k


def layer_params(layer, *, h, norm):
    """All weights of one layer, by part ("attention": every token mixer, softmax or linear;
    "linear_mixer": the linear-attention and state-space ones among them): the per-kind functions
    above summed over the layer's blocks, plus its norms and extra weights; "inactive" is the
    routed-expert weight a token does not run (expected_real_experts)."""
    out = {"attention": sum(attention_params(x, h=h) for x in layer["attention"]),
           "linear_mixer": sum(attention_params(x, h=h) for x in layer["attention"] if x["span"] == "state"),
           "norms": layer["norms"] * norm_params(width=h, norm=norm), "extra": layer["extra_params"],
           "dense": 0, "routed_experts": 0, "one_expert": 0, "shared_experts": 0, "router": 0,
           "inactive": 0}
    for m in layer["mlp"]:
        p = mlp_block_params(m, h=h)
        for k in ("dense", "routed_experts", "shared_experts", "router"):
            out[k] += p[k]
        out["one_expert"] = max(out["one_expert"], p["one_expert"])
        out["inactive"] += p["routed_experts"] - expected_real_experts(m) * p["one_expert"]
    out["inactive"] += sum(attention_inactive_params(x, h=h) for x in layer["attention"])
    out["total"] = sum(out[k] for k in ("attention", "norms", "extra", "dense", "routed_experts",
                                        "shared_experts", "router"))
    return out


def attention_head_dims(attn):
    """(d_qk, d_v): per-head width of the score product and of the context product: head_dim for
    MHA/GQA/MQA, d_nope + d_rope and d_v for MLA (DeepSeek-V2 sec. 2.1.2); a linear mixer's key and
    value head widths."""
    if attn["kind"] == "mla":
        return attn["qk_nope_head_dim"] + attn["qk_rope_head_dim"], attn["v_head_dim"]
    if attn["span"] == "state":
        return attn["head_dim"], attn.get("v_head_dim") or attn["head_dim"]
    return attn["head_dim"], attn.get("v_dim", attn["head_dim"])


def attention_linear_flops_per_token(attn, *, h):
    """Forward FLOPs (2 per multiply-add) of one attention block's projections for one token;
    biases, norms and sinks are not matmuls. MHA/GQA: q (with its gate), k, v, o. MLA (DeepSeek-V2
    sec. 2.1): q directly or via rank r_q, kv down to r_kv + d_rope, up to a (d_nope + d_v), o.
    A lightning indexer adds its q (r_q -> H_I d_I), key (h -> d_I) and head weights (h -> H_I).
    A Gated DeltaNet mixer: its input and output projections, and its depthwise conv (K taps per
    channel per token, 2 x its weights like a matmul's)."""
    a, kv, d = attn["heads"], attn["kv_heads"], attn["head_dim"]
    if attn["kind"] == "dsv4":  # every weight matrix once per token; sinks, biases, norms are not matmuls
        return 2 * (dsv4_attention_params(attn, h=h) - dsv4_non_matmul_params(attn))
    if attn["span"] == "state":
        w_in, w_out, conv_dim = mixer_widths(attn)
        E = attn["heads"]
        inner = E * (attn["dt_rank"] + 2 * attn["state_size"]) + attn["dt_rank"] * E if attn["kind"] == "mamba1" else 0
        if attn["kind"] == "kda" and not attn.get("full_rank_gates"):  # the decay's and gate's d -> D ups
            inner = 2 * attn["head_dim"] * attn["heads"] * attn["head_dim"]
        if attn["kind"] == "rglru":  # the RG-LRU's two block-diagonal gates (baddbmm)
            inner = 2 * attn["heads"] * attn["heads"] // attn["gate_blocks"]
        return 2 * (h * w_in + conv_dim * attn["conv_kernel"] + w_out * h + inner)  # mamba1: x_proj, dt_proj
    if attn["kind"] == "mla":
        r_kv = attn["kv_lora_rank"]
        d_nope, d_rope, d_v = attn["qk_nope_head_dim"], attn["qk_rope_head_dim"], attn["v_head_dim"]
        q = mla_q_macs_per_token(attn, h=h)
        kv_down = 0 if attn["kv_shared"] else h * (r_kv + d_rope)
        macs = q + kv_down + r_kv * a * (d_nope + d_v) + a * d_v * h + h * a * (attn["output_gate"] == "headwise")
    else:
        q_out = a * d * (2 if attn["output_gate"] == "elementwise" else 1) + a * (attn["output_gate"] == "headwise")
        dv = attn.get("v_dim", d)
        kv_out = kv * (d + dv if attn["kv_proj"] == 2 else d * attn["kv_proj"])
        macs = attn.get("in_width", h) * (q_out + kv_out) + a * dv * h + h * attn.get("attn_experts", 0)  # + MoA router
    return 2 * macs + indexer_linear_flops_per_token(attn, h=h)


def indexer_linear_flops_per_token(attn, *, h):
    """Forward FLOPs per token of a lightning indexer's projections (DeepSeek-AI 2025, DeepSeek-V3.2
    sec. 2.1): its queries from the query latent (r_q -> H_I d_I), its key (h -> d_I) and its
    per-head weights (h -> H_I), and a pooled indexer's gate (h -> d_I, GLM-5-Next); 0 for an
    attention block without an indexer."""
    if attn["kind"] == "dsv4":  # DeepSeek-V4's indexer: its compressor (kv, gate: 2 d_I each), q, weights
        HI, dI = attn["c_index_heads"], attn["c_index_head_dim"]
        return 2 * (4 * h * dI + attn["q_lora_rank"] * HI * dI + h * HI) if HI else 0
    if not attn["index_topk"]:
        return 0
    H, dI = attn["index_heads"], attn["index_head_dim"]
    gate = h * dI if attn.get("index_kpool") and H else 0
    return 2 * ((attn["q_lora_rank"] or h) * H * dI + h * dI + h * H + gate)


def _causal_pairs_capped(s, cap):
    """sum over p = 1..s of min(p, cap): causal query-key pairs when no query sees more than cap keys."""
    if cap >= s:
        return s * (s + 1) // 2
    return cap * (cap + 1) // 2 + (s - cap) * cap


def query_key_pairs(attn, *, seq_len, attention):
    """Query-key pairs one sequence's attention block scores, {"core", "indexer"}. `full`: every
    score of the s x s matrix, masked or not, as eager attention computes it (sliding, chunked and
    top-k masks too). `causal`: the pairs a kernel that skips masked blocks executes: p keys for the
    query at position p, at most the window (sliding), its position in its chunk (chunked), or the
    indexer's top-k (the indexer itself scores all p; a pooled indexer, GLM-5-Next, scores the
    pools of P keys: s x floor(s / P) under `full`, floor(p / P) complete pools for query p). A
    linear mixer pairs nothing: its "state" entry is the s tokens its chunked algorithm runs (the
    same under both conventions)."""
    s = seq_len
    if attn["span"] == "state":
        return {"core": 0, "indexer": 0, "state": s}
    if attn["kind"] == "dsv4":
        return _dsv4_pairs(attn, seq_len=s, attention=attention)
    P = attn.get("index_kpool", 0) if attn["index_topk"] else 0
    if attention == "full":
        return {"core": s * s, "indexer": (s * (s // P) if P else s * s) if attn["index_topk"] else 0}
    if attn["span"] == "sliding":
        core = _causal_pairs_capped(s, attn["window"])
    elif attn["span"] == "chunked":
        c = attn["chunk"]
        n, rem = divmod(s, c)
        core = n * c * (c + 1) // 2 + rem * (rem + 1) // 2
    else:
        core = s * (s + 1) // 2
    if attn["index_topk"]:
        return {"core": min(core, _causal_pairs_capped(s, attn["index_topk"])),
                "indexer": _sum_floor_capped(s, P) if P else s * (s + 1) // 2}
    return {"core": core, "indexer": 0}


def _sum_floor_capped(n, m, cap=None):
    """sum over p = 1..n of min(floor(p / m), cap): compressed entries the p-th query can see when one
    closes every m tokens (at most cap of them)."""
    def f(k):  # sum over p = 1..k of floor(p / m)
        q, r = divmod(k, m)
        return m * q * (q - 1) // 2 + q * (r + 1) if k > 0 else 0
    if cap is None or cap >= n // m:
        return f(n)
    return f(cap * m - 1) + cap * (n - cap * m + 1)


def _dsv4_pairs(attn, *, seq_len, attention):
    """DeepSeek-V4 query-key pairs: each query sees the sliding window's keys and the compressed
    entries closed before it (one per compress_rate tokens; a compressed sparse layer's indexer
    scores them all and its core takes the top-k). `full`: the s x (s + floor(s / m)) matrix
    transformers' eager attention computes (the window, causality and the top-k are masks);
    `causal`: min(p, W) window keys and floor(p / m) entries (at most top-k) per query."""
    s, m, W = seq_len, attn["compress"], attn["window"]
    K = attn["c_index_topk"] or None
    csa = attn["compress_kind"] == "csa"
    if attention == "full":
        c = s * (s // m) if m else 0
        return {"core": s * s + c, "indexer": c if csa else 0}
    comp = _sum_floor_capped(s, m, K) if m else 0
    return {"core": _causal_pairs_capped(s, W) + comp, "indexer": _sum_floor_capped(s, m) if csa else 0}


def decode_keys_read(attn, *, context):
    """Keys one decode step's query attends to at `context` tokens (its own included), and keys the
    indexer scores: all of them; at most the window (sliding); those of its own chunk (chunked, a
    chunk holding `chunk` tokens); the top-k the indexer picks (DeepSeek-V3.2 sec. 2.1). A linear
    mixer reads no keys: one recurrent step of its state ("state_steps")."""
    c = context
    if attn["span"] == "state":
        return {"core": 0, "indexer": 0, "state_steps": 1}
    if attn["kind"] == "dsv4":  # the window, and the compressed entries closed so far (top-k of them)
        m = attn["compress"]
        comp = c // m if m else 0
        csa = attn["compress_kind"] == "csa"
        return {"core": min(c, attn["window"]) + (min(comp, attn["c_index_topk"]) if csa else comp),
                "indexer": comp if csa else 0}
    if attn["span"] == "sliding":
        core = min(c, attn["window"])
    elif attn["span"] == "chunked":
        core = (c - 1) % attn["chunk"] + 1 if c else 0
    else:
        core = c
    if attn["index_topk"]:  # a pooled indexer scores the c // P complete pools (reading their pooled keys)
        P = attn.get("index_kpool", 0)
        return {"core": min(core, attn["index_topk"]), "indexer": c // P if P else c}
    return {"core": core, "indexer": 0}


def attention_core_flops(attn, *, pairs):
    """Forward FLOPs of one attention block's core for pairs {"core", "indexer"}: scores Q K^T
    (2 a d_qk per pair) and context P V (2 a d_v per pair); GQA shares k/v but still scores every
    query head (Narayanan et al. 2021 sec. 5.1). The indexer scores H_I heads of d_I per pair and
    sums them with per-head weights, I = sum_j w_j ReLU(q_j . k) (DeepSeek-AI 2025 sec. 2.1):
    2 H_I (d_I + 1) per pair, as transformers' eager indexer runs it (two bmm's). A linear mixer's
    core ("state_core"): linear_core_flops over pairs["state"] tokens run chunked and
    pairs["state_steps"] recurrent steps."""
    a = attn["heads"]
    d_qk, d_v = attention_head_dims(attn)
    state = 0
    if attn["span"] == "state":
        state = linear_core_flops(attn, chunked_tokens=pairs.get("state", 0), steps=pairs.get("state_steps", 0))
    HI, dI = ((attn["c_index_heads"], attn["c_index_head_dim"]) if attn["kind"] == "dsv4"
              else (attn["index_heads"], attn["index_head_dim"]))
    return {"attention_scores": 2 * a * d_qk * pairs["core"],
            "attention_context": 2 * a * d_v * pairs["core"],
            "indexer_scores": 2 * HI * (dI + 1) * pairs["indexer"],
            "state_core": state}


def linear_core_flops(attn, *, chunked_tokens, steps):
    """A linear mixer's core FLOPs by kind: gdn_core_flops or mamba2_core_flops; Mamba-1's selective
    scan (Gu & Dao 2023 sec. 3.3) per token and channel updates an N-wide state with dt x B and
    reads it with C, 4 E N (the discretisation is elementwise, not counted); a short convolution
    has no core beyond its conv (counted with the projections)."""
    if attn["kind"] in ("shortconv", "rwkv", "rglru"):  # RWKV's WKV and the RG-LRU recurrence are elementwise
        return 0
    if attn["kind"] == "lightning":
        return lightning_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)
    if attn["kind"] == "kda":
        return kda_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)
    if attn["kind"] == "mlstm":
        return mlstm_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)
    if attn["kind"] == "mamba1":
        return (chunked_tokens + steps) * 4 * attn["heads"] * attn["state_size"]
    if attn["kind"] == "mamba2":
        return mamba2_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)
    return gdn_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)


def lightning_core_flops(attn, *, chunked_tokens, steps):
    """FLOPs of a lightning-attention core (MiniMax-01, arXiv 2501.08313 sec. 2.2, its Algorithm 1;
    transformers' MiniMaxLightningAttention), blocks of B positions (the last one shorter), H heads
    of d: per block of b positions the intra-block Q K^T and its decayed product with V (4 H b^2 d)
    and the inter-block read-out of the d x d state by Q and the state's update K^T V (4 H b d^2);
    per decode step the update and the read-out (4 H d^2). The decays are elementwise, not counted."""
    H, d, B = attn["heads"], attn["head_dim"], attn["state_chunk"]
    n, r = divmod(chunked_tokens, B)
    return 4 * H * d * (n * B * B + r * r) + 4 * H * d * d * chunked_tokens + steps * 4 * H * d * d


def mlstm_core_flops(attn, *, chunked_tokens, steps):
    """FLOPs of an mLSTM core (Beck et al. 2025, arXiv 2503.13427, the chunkwise-parallel form as
    transformers' mlstm_chunkwise_native_autograd runs it), chunks of C positions, H heads, keys of
    d_k and values of d_v: per chunk the intra-chunk Q K^T (2 C^2 d_k) and its product with V
    (2 C^2 d_v), the read-out of the d_k x d_v memory by Q (2 C d_k d_v) and of the normaliser
    (2 C d_k), and the memory's update K^T V (2 C d_k d_v). Per decode step: the update (an outer
    product, 2 d_k d_v), the read-outs (2 d_k d_v + 2 d_k). Gates and decays are elementwise."""
    H, dk, dv, C = attn["heads"], attn["head_dim"], attn["v_head_dim"], attn["state_chunk"]
    n, r = divmod(chunked_tokens, C)
    per_pos = 4 * dk * dv + 2 * dk  # the memory's read-out and update, the normaliser's read-out
    return H * (2 * (dk + dv) * (n * C * C + r * r) + chunked_tokens * per_pos + steps * (4 * dk * dv + 2 * dk))


def mamba2_core_flops(attn, *, chunked_tokens, steps):
    """FLOPs of a Mamba-2 SSD core (Dao & Gu 2024, arXiv 2405.21060 sec. 6, the chunked algorithm of
    its Listing 1 as mamba_ssm's kernels run it), chunks of Q positions (the last one padded), H
    heads of P, G groups of state N: per chunk the group-shared C B^T (2 G Q^2 N), the masked
    product with x (2 H Q^2 P), the chunk states B^T x (2 H Q P N), their pass to the next chunk
    (a multiply-add per state element, 2 H P N) and the states' read-out by C (2 H Q P N). Per
    decode step: the state update with x B^T and its read-out by C (4 H P N; the decay is
    elementwise, not counted)."""
    H, P, G, N, Q = attn["heads"], attn["head_dim"], attn["kv_heads"], attn["state_size"], attn["state_chunk"]
    chunks = -(-chunked_tokens // Q)
    per_chunk = 2 * G * Q * Q * N + 2 * H * Q * Q * P + 4 * H * Q * P * N + 2 * H * P * N
    return chunks * per_chunk + steps * 4 * H * P * N


def kda_core_flops(attn, *, chunked_tokens, steps):
    """FLOPs of a Kimi Delta Attention core (Kimi Team 2025, arXiv 2510.26692: Gated DeltaNet's
    chunked WY algorithm, Yang et al. 2024 arXiv 2412.06464, with a per-channel decay), per chunk
    of C positions (the last padded) and head of d_k = d_v = d: the UT-transform matrix and the
    intra-chunk q k^T, each a C x C product with the decay inside the d_k contraction (2 C^2 d_k
    each), the products of the transform with v and with the decayed k (2 C^2 (d_v + d_k)), the
    forward substitution that inverts it ((C - 1) C (2 C - 1) / 3), the intra-chunk product with the
    new values (2 C^2 d_v) and three products with the d x d state (6 C d_k d_v). Per decode step
    the three state products, 6 d^2 per head."""
    H, d, C = attn["heads"], attn["head_dim"], attn["state_chunk"]
    chunks = -(-chunked_tokens // C)
    per_chunk = 2 * C * C * (3 * d + 2 * d) + 6 * C * d * d + (C - 1) * C * (2 * C - 1) // 3
    return H * (chunks * per_chunk + steps * 6 * d * d)


def gdn_core_flops(attn, *, chunked_tokens, steps):
    """FLOPs of a Gated DeltaNet core, per value head (q and k shared by H_v / H_k value heads are
    repeated to H_v). Chunked (Yang et al. 2024, arXiv 2406.06484 sec. 3 and arXiv 2412.06464
    sec. 3.3; transformers' torch_chunk_gated_delta_rule), per chunk of C positions (the last one
    padded to C): the two C x C products k_beta k^T and q k^T (2 C^2 d_k each); two unit-lower-
    triangular solves of the UT transform, C (C - 1) (d_v + d_k); the intra-chunk product A v
    (2 C^2 d_v); and three products with the d_k x d_v state (read by k_cumdecay and by q, and
    the update k^T v: 2 C d_k d_v each). Recurrent, per step: the same three state products for one
    token, 6 d_k d_v (the state's decay is elementwise, not counted)."""
    Hv, dk, dv, C = attn["heads"], attn["head_dim"], attn["v_head_dim"], attn["state_chunk"]
    chunks = -(-chunked_tokens // C)
    per_chunk = 4 * C * C * dk + 2 * C * C * dv + C * (C - 1) * (dk + dv) + 6 * C * dk * dv
    return Hv * (chunks * per_chunk + steps * 6 * dk * dv)


def mlp_flops_per_token(mlp, *, h):
    """Forward FLOPs of one MLP block per token: a dense MLP (num_linears h x f matrices); or k
    routed experts of width f_e (k E / (E + Z) with zero-computation experts), the shared experts
    plus their h -> 1 gate, and the router over E (+ Z) experts (Shazeer et al. 2017)."""
    nl = mlp["linears"]
    if mlp["kind"] == "dense":
        return {"dense_mlp": 2 * nl * h * mlp["width"], "routed_experts": 0, "shared_experts": 0, "router": 0}
    return {"dense_mlp": 0,
            "routed_experts": expected_real_experts(mlp) * 2 * nl * h * mlp["width"],
            "shared_experts": 2 * nl * h * mlp["shared_width"] + 2 * h * bool(mlp["shared_gate"]),
            "router": 2 * h * (mlp["num_experts"] + mlp["zero_experts"])}


def cache_elements_per_token(attn, *, mla_cache="latent"):
    """Cached numbers per token per sequence for one attention block, {"kv", "indexer"}. MHA/GQA/
    MQA: K and V, 2 kv d (kv (d + d_v) where value heads are narrower, MiMo-V2-Flash). MLA: the compressed latent r_kv + d_rope (DeepSeek-V2 sec. 2.1.3; what
    vLLM and SGLang keep) or, with mla_cache="expanded", per-head keys a (d_nope + d_rope) and values
    a d_v (what transformers' cache holds for DeepSeek-V2/V3). Layers that reuse another layer's
    K/V or latent hold none of it. A lightning indexer caches one d_I key per token (its own, also
    on a layer that reuses another's latent: Mistral Large 4); a pooled one (GLM-5-Next) its key,
    its pooling-gate score and a valid flag, 2 d_I + 1, as transformers' cache packs them. A linear
    mixer caches nothing per
    token (state_elements: its constant state)."""
    if attn["span"] == "state":
        return {"kv": 0, "indexer": 0}
    if attn["kind"] == "dsv4":  # one K = V head of the window; transformers' plain sliding layer keeps K and V
        return {"kv": attn["head_dim"] * (2 if attn["compress_kind"] == "none" else 1), "indexer": 0}
    ind = attn["index_head_dim"] if attn["index_topk"] else 0
    if ind and attn.get("index_kpool"):  # GLM-5-Next's packed state: key, pooling-gate score, valid flag
        ind = 2 * ind + 1
    if attn["kv_shared"]:
        return {"kv": 0, "indexer": ind}
    if attn["kind"] == "mla":
        if mla_cache == "latent":
            return {"kv": attn["kv_lora_rank"] + attn["qk_rope_head_dim"], "indexer": ind}
        a = attn["heads"]
        return {"kv": a * (attn["qk_nope_head_dim"] + attn["qk_rope_head_dim"]) + a * attn["v_head_dim"],
                "indexer": ind}
    return {"kv": attn["kv_heads"] * (attn["head_dim"] + attn.get("v_dim", attn["head_dim"])), "indexer": ind}


def cached_tokens(attn, *, context):
    """Tokens one sequence's cache holds for this block at `context` tokens: all of them on a full
    layer; at most W on a sliding layer, a rolling buffer of W (Mistral 7B sec. 2; transformers'
    DynamicSlidingWindowLayer shows W - 1 between steps but keeps storage for W after a decode
    step, tests/fixtures/README.md); at most C on a chunked layer (transformers keeps Llama 4's
    chunked layers in the same sliding cache with W = attention_chunk_size). Assumes steady-state
    decoding: right after a prefill of N > W, transformers still holds all N until the next step.
    A linear mixer holds no tokens (its state is constant: state_elements)."""
    if attn["span"] == "state":
        return 0
    if attn["span"] == "sliding":
        return min(context, attn["window"])
    if attn["span"] == "chunked":
        return min(context, attn["chunk"])
    return context


def compressed_cache_elements(attn, *, context):
    """Numbers one sequence's DeepSeek-V4 cache holds for a layer's compressor at `context` tokens,
    {"kv", "indexer"}, beside its window (cached_tokens x cache_elements_per_token), as transformers'
    DeepseekV4HCACache / CSACache hold them: floor(t / m) compressed entries of d (and of d_I for the
    indexer on a compressed sparse layer), the projections of the t mod m tokens of the window still
    open (kv and gate: d each, 2 d each with the overlapping windows, 2 d_I each for the indexer),
    and on a compressed sparse layer once t >= m the previous window's overlap half (kv and gate,
    m x d and m x d_I). Other kinds: none."""
    if attn["kind"] != "dsv4" or not attn["compress"]:
        return {"kv": 0, "indexer": 0}
    t, m, d = context, attn["compress"], attn["head_dim"]
    q, r = divmod(t, m)
    if attn["compress_kind"] == "hca":
        return {"kv": q * d + 2 * r * d, "indexer": 0}
    dI = attn["c_index_head_dim"]
    overlap = m if t >= m else 0
    return {"kv": q * d + 2 * r * 2 * d + 2 * overlap * d, "indexer": q * dI + 2 * r * 2 * dI + 2 * overlap * dI}


def state_elements(attn):
    """Numbers one sequence's cache holds for a linear mixer, whatever its length, {"conv",
    "recurrent"}: the conv window, K positions of the 2 H_k d_k + H_v d_v conv channels (what
    transformers' LinearAttentionLayer keeps; vLLM keeps K - 1), and the H_v x d_k x d_v recurrent
    state (Yang et al. 2024, arXiv 2412.06464 eq. 10); Mamba-2: the conv window over x, B, C and
    the H x P x N state. Softmax attention: none, except the convolution windows some families
    keep beside the K/V (transformers' LinearAttentionAnd*AttentionLayer): Inkling / Inkling 2's
    depthwise convolutions on k and v (kv d channels each) and on the attention's and the MLP's
    outputs (h each, "residual_conv_state" = 2 h K), K taps each, in fp32 (counted under
    "recurrent", the numbers kept at state precision); ZAYA's q/k convolution window ((a + kv) d
    channels, cca_time0 + cca_time1 - 2 taps) and its delayed value half (kv d / 2), in the model
    dtype ("conv")."""
    if attn["span"] != "state":
        kvd = attn["kv_heads"] * attn["head_dim"]
        return {"conv": attn.get("qk_conv_taps", 0) * (attn["heads"] * attn["head_dim"] + kvd)
                + kvd // 2 * bool(attn.get("delayed_value_state")),
                "recurrent": attn.get("kv_conv_taps", 0) * 2 * kvd + attn.get("residual_conv_state", 0)}
    conv = mixer_widths(attn)[2] * attn["conv_kernel"]
    if attn["kind"] == "shortconv":
        return {"conv": conv, "recurrent": 0}
    if attn["kind"] == "rglru":  # the conv's last K - 1 inputs (model dtype) and the W-wide state (fp32)
        return {"conv": attn["heads"] * (attn["conv_kernel"] - 1), "recurrent": attn["heads"]}
    if attn["kind"] == "mlstm":  # the matrix memory C (H d_k d_v), the normaliser n (H d_k) and the max state m (H)
        H, dk = attn["heads"], attn["head_dim"]
        return {"conv": 0, "recurrent": H * dk * attn["v_head_dim"] + H * dk + H}
    if attn["kind"] == "rwkv":  # the two token-shift vectors (time and channel mixing, h each, model dtype)
        return {"conv": 2 * attn["model_width"], "recurrent": 3 * attn["heads"]}  # and num, den, max (fp32)
    if attn["kind"] in ("kda", "lightning"):  # H x d x d
        return {"conv": conv, "recurrent": attn["heads"] * attn["head_dim"] ** 2}
    if attn["kind"] == "mamba1":  # E x N (Gu & Dao 2023 sec. 3)
        return {"conv": conv, "recurrent": attn["heads"] * attn["state_size"]}
    if attn["kind"] == "mamba2":  # H x P x N (Dao & Gu 2024 sec. 7)
        return {"conv": conv, "recurrent": attn["heads"] * attn["head_dim"] * attn["state_size"]}
    return {"conv": conv, "recurrent": attn["heads"] * attn["head_dim"] * attn["v_head_dim"]}


def param_breakdown(spec):
    """Exact parameter counts by component for a resolved spec, summed over its layer list (see
    the module docstring for the conventions of 'non-embedding' and 'active')."""
    V, h, nm = spec["vocab_size"], spec["hidden_size"], spec["norm"]
    p = spec["word_embed_proj_dim"]
    sums = dict.fromkeys(("attention", "linear_mixer", "norms", "extra", "dense", "routed_experts",
                          "shared_experts", "router", "inactive"), 0)
    kinds = []
    for layer, count, first in layer_groups(spec):
        lp = layer_params(layer, h=h, norm=nm)
        for k in sums:
            sums[k] += count * lp[k]
        kinds.append({"layers": count, "first_layer": first,
                      "attention": " + ".join(attention_kind(x) for x in layer["attention"]) or "-",
                      "mlp": " + ".join(mlp_kind(x) for x in layer["mlp"]) or "-", "params_per_layer": lp["total"],
                      "attention_params": lp["attention"], "one_expert_params": lp["one_expert"]})
    out = {
        "embedding_params": V * p,
        "position_embedding_params": spec["position_embedding_rows"] * h,
        "embedding_norm_params": norm_params(width=h, norm=nm) if spec["embedding_norm"] else 0,
        "embedding_projection_params": 2 * p * h if p != h else 0,
        "per_layer_embedding_params": spec["per_layer_embedding_params"],
        "attention_params": sums["attention"] - sums["linear_mixer"],
        "linear_mixer_params": sums["linear_mixer"],
        "mlp_params": sums["dense"],
        "routed_expert_params": sums["routed_experts"],
        "shared_expert_params": sums["shared_experts"],
        "router_params": sums["router"],
        "layer_norm_params": sums["norms"],
        "layer_extra_params": sums["extra"],
        "other_params": sum(spec["other_params"].values()),
        "final_norm_params": norm_params(width=h, norm=nm) if spec["final_norm"] else 0,
        # a head of fewer rows than the embedding where the family says so (Inkling 2's unpadded_vocab_size)
        "output_head_params": 0 if spec["tied_embeddings"] else spec.get("head_vocab_size", V) * p,
    }
    total = sum(out.values())
    inactive = int(round(sums["inactive"]))
    emb = (out["embedding_params"] + out["position_embedding_params"] + out["output_head_params"]
           + out["per_layer_embedding_params"])
    moe_layers = set(spec["moe_layers"])
    first = layer_params(next((x for x in spec["layers"] if any(a["span"] != "state" for a in x["attention"])),
                              spec["layers"][0]), h=h, norm=nm)
    first_linear = next((layer_params(x, h=h, norm=nm) for x in spec["layers"]
                         if any(a["span"] == "state" for a in x["attention"])), None)
    moe0 = layer_params(spec["layers"][min(moe_layers)], h=h, norm=nm) if moe_layers else None
    dense0 = next((layer_params(x, h=h, norm=nm) for i, x in enumerate(spec["layers"])
                   if i not in moe_layers and x["mlp"]), None)
    out.update({
        "per_layer": {"attention": first["attention"] - first["linear_mixer"],
                      "linear_mixer": first_linear["linear_mixer"] if first_linear else 0, "norms": first["norms"],
                      "dense_mlp": dense0["dense"] if dense0 else 0,
                      "moe_routed_experts": moe0["routed_experts"] if moe0 else 0,
                      "moe_one_expert": moe0["one_expert"] if moe0 else 0,
                      "moe_shared_experts": moe0["shared_experts"] if moe0 else 0,
                      "moe_router": moe0["router"] if moe0 else 0,
                      "dense_layer_total": dense0["total"] if dense0 else 0,
                      "moe_layer_total": moe0["total"] if moe0 else 0},
        "layer_kinds": kinds,
        "num_dense_layers": spec["num_layers"] - len(moe_layers), "num_moe_layers": len(moe_layers),
        "num_attention_layers": sum(any(a["span"] != "state" for a in x["attention"]) for x in spec["layers"]),
        "total_params": total, "non_embedding_params": total - emb,
        "active_params": total - inactive, "active_non_embedding_params": total - inactive - emb,
    })
    return out


# ======== llmcalc/model/hub.py ====================================================================
# Loading a model's config.json: a local folder or file, or a hub id (through transformers,
# imported lazily, never with trust_remote_code), with ModelOpt's hf_quant_config.json beside it.
# A file too large or too deeply nested to be a config is refused in one line.

CONFIG_MAX_BYTES = 16 << 20  # a config.json is a few KiB; anything past 16 MiB is not one
CONFIG_MAX_DEPTH = 64        # nesting deeper than this is not a model config


def _json_depth_ok(obj, limit):
    """True when `obj` nests at most `limit` containers deep (iterative: no recursion limit)."""
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, (dict, list)))
    return True


def load_hf_config(name_or_path):
    """Return a Hugging Face config as a dict: from a local folder or config.json with `json`
    alone, else from the hub through transformers.AutoConfig (imported only here, never with
    trust_remote_code). Raises ValueError with a one-line message. A local file must be a JSON
    object of at most CONFIG_MAX_BYTES, nested at most CONFIG_MAX_DEPTH deep."""
    if not str(name_or_path).strip():
        raise ValueError("--hf_model_name_or_path is empty: give a folder with config.json, a "
                         "config.json path or a hub id")
    path = os.path.expanduser(name_or_path)
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
        if not os.path.isfile(path):
            raise ValueError(f"no config.json in folder {name_or_path!r}")
    if os.path.isfile(path):
        import json  # imported where it is used: a run without a config never needs it
        try:
            if os.path.getsize(path) > CONFIG_MAX_BYTES:
                raise ValueError(f"{path!r} is over {CONFIG_MAX_BYTES >> 20} MiB: not a model config")
            with open(path, encoding="utf-8") as fh:
                cfg = json.load(fh)  # NaN/Infinity parse (transformers writes Infinity for some
                # unbounded limits); the typed reader refuses them in any field it reads
        except RecursionError:
            raise ValueError(f"{path!r} nests too deep to be a model config") from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            msg = str(exc).replace("\n", " ")
            raise ValueError(msg if msg.startswith(repr(path)) else f"cannot read {path!r}: {msg}") from None
        if not isinstance(cfg, dict):
            raise ValueError(f"{path!r} is not a JSON object")
        if not _json_depth_ok(cfg, CONFIG_MAX_DEPTH):
            raise ValueError(f"{path!r} nests more than {CONFIG_MAX_DEPTH} deep: not a model config")
        cfg.setdefault("_config_path", path)
        side = os.path.join(os.path.dirname(path), "hf_quant_config.json")
        if "quantization_config" not in cfg and os.path.isfile(side):
            cfg["quantization_config"] = _sidecar_quant_config(side)
        return cfg
    if os.path.exists(path):  # /dev/null, a pipe, a socket: never read, never a hub id
        raise ValueError(f"{name_or_path!r} is not a config file (neither a regular file nor a folder)")
    parts = name_or_path.split("/")  # a hub id is `name` or `org/name`; anything else is a path
    if name_or_path.endswith(".json") or name_or_path.startswith((".", "~")) or len(parts) > 2 \
            or "" in parts:
        raise ValueError(f"config file {name_or_path!r} not found")
    return _hub_config(name_or_path)


def _sidecar_quant_config(path):
    """ModelOpt's hf_quant_config.json beside a config.json that has no quantization_config
    (NVIDIA's *-FP8 / *-FP4 / *-NVFP4 checkpoints): {"producer": ..., "quantization": {"quant_algo",
    "group_size", "exclude_modules", ...}}, read as that checkpoint's weight format."""
    import json
    try:
        if os.path.getsize(path) > CONFIG_MAX_BYTES:
            raise ValueError("too large")
        with open(path, encoding="utf-8") as fh:
            qc = json.load(fh)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        msg = str(exc).replace("\n", " ")
        raise ValueError(f"cannot read {path!r} (the checkpoint's quantization): {msg}") from None
    if not isinstance(qc, dict) or not isinstance(qc.get("quantization"), dict) \
            or not _json_depth_ok(qc, CONFIG_MAX_DEPTH):
        raise ValueError(f"{path!r} has no \"quantization\" object: not ModelOpt's hf_quant_config.json")
    return qc


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
            fetched = True
        else:
            fetched = False
        # ModelOpt checkpoints (nvidia/*-FP8, *-NVFP4) may keep their format only in
        # hf_quant_config.json beside config.json: from the cache (a snapshot download holds it),
        # else fetched along with a config.json fetched now; the hub's 404 is cached as "absent",
        # so a later offline run knows. A config.json cached alone by another tool leaves it unknown
        # (read as absent, as a local folder without the file is).
        try:
            side = hub.try_to_load_from_cache(repo_id, "hf_quant_config.json")
            if side is None and fetched:
                side = hub.hf_hub_download(repo_id, "hf_quant_config.json")
        except Exception as exc:  # the hub's 404: no sidecar; anything else leaves the format unknown
            if getattr(getattr(exc, "response", None), "status_code", None) != 404:
                raise ValueError(f"cannot load {repo_id!r}'s hf_quant_config.json (the checkpoint's "
                                 f"quantization) from the hub: {first_line(exc)}") from None
            side = None
        try:
            from transformers import AutoConfig
            logging.getLogger("transformers").setLevel(logging.ERROR)  # its import set WARNING
            cfg = AutoConfig.from_pretrained(path, trust_remote_code=False).to_dict()
        except Exception as exc:  # e.g. a model_type this transformers does not know
            raise ValueError(f"cannot load config {repo_id!r} ({path}): {first_line(exc)}") from None
    if "quantization_config" not in cfg and isinstance(side, str):
        cfg["quantization_config"] = _sidecar_quant_config(side)
    cfg.setdefault("_config_path", repo_id)
    return cfg


def _short(value):
    import json  # imported where it is used: a run without a config never needs it
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ======== llmcalc/model/reader.py =================================================================
# ConfigReader reads a config one field at a time, checking each field's type and range and
# naming the field and the file in its one-line error; the fields it did not read that could change
# a count become warnings. Also the layer_types pattern every family may state.

# Fields whose presence can change a count; an unread one becomes a warning in the result.
_COUNT_FIELD_HINTS = tuple("expert moe lora_rank head_dim intermediate num_hidden_layers "
                           "num_attention_heads key_value vocab hidden_size sliding window chunk "
                           "layer_types dense shared nextn mtp index_ sink gate per_layer kv_ "
                           "_layers ffn n_embd n_head n_layer".split())
_NEVER_COUNTS = set("max_position_embeddings num_labels use_cache output_router_logits "
                    "router_aux_loss_coef router_jitter_noise moe_aux_loss_coef aux_loss_alpha "
                    "seq_aux norm_topk_prob routed_scaling_factor topk_group n_group topk_method "
                    "scoring_func router_z_loss_coef moe_router_enable_expert_bias moe_capacity "
                    "moe_gate hidden_act hidden_activation mlp_only_layers_ initializer_range "
                    "use_sliding_window max_window_layers sliding_window_pattern "
                    "_sliding_window_pattern mlp_layer_types rope_interleave moe_norm_topk_prob "
                    "first_k_dense_replace router_temperature layer_norm_eps rms_norm_eps head_dim "
                    "gate_type final_logit_softcapping attn_logit_softcapping "
                    "query_pre_attn_scalar expert_capacity num_nextn_predict_layers moe_k "
                    "moe_num_experts moe_intermediate_size use_qk_norm interleave_moe_layer_step "
                    "moe_layer_freq decoder_sparse_step".split())


# The largest value ConfigReader accepts in a config field (a call's hi= wins): far past any real
# model, small enough that no count overflows into nonsense. Unlisted fields (widths, vocabularies,
# token counts) may hold up to 2^31, numbers read with num() up to 1e12.
_FIELD_MAX = {
    **dict.fromkeys((  # heads, head and state dims, experts, top-k, groups, chunk lengths
        "num_attention_heads n_head num_heads num_key_value_heads num_kv_heads num_attention_groups "
        "num_global_key_value_heads num_sliding_attention_heads head_dim global_head_dim "
        "qk_nope_head_dim qk_rope_head_dim v_head_dim index_n_heads index_head_dim num_local_experts "
        "num_experts n_routed_experts moe_num_experts num_shared_experts n_shared_experts "
        "moe_num_shared_experts zero_expert_num num_experts_per_tok num_experts_per_token moe_top_k "
        "top_k_experts moe_k moe_topk linear_num_key_heads linear_num_value_heads linear_key_head_dim "
        "linear_value_head_dim linear_num_heads linear_head_dim mamba_num_heads mamba_n_heads "
        "mamba_head_dim mamba_dt_rank mamba_d_state ssm_state_size n_groups mamba_n_groups chunk_size "
        "mamba_chunk_size hidden_size_per_layer_input compress_rate_csa compress_rate_hca o_groups "
        "compress_ratios group_size q_group_size weight_block_size").split(), 2**20),
    **dict.fromkeys((  # layer counts, layer indices and layer-pattern periods
        "num_hidden_layers n_layer num_layers first_k_dense_replace moe_layer_freq decoder_sparse_step "
        "interleave_moe_layer_step moe_layer_start_index moe_layer_end_index moe_layer_interval "
        "num_hash_layers num_kv_shared_layers max_window_layers full_attention_interval "
        "no_rope_layer_interval sliding_window_pattern _sliding_window_pattern attn_layer_period "
        "attn_layer_offset expert_layer_period expert_layer_offset index_topk_freq "
        "index_skip_topk_offset mlp_only_layers moe_layers kv_source_layers").split(), 100_000),
    **dict.fromkeys(("hidden_size n_embd n_embed d_model word_embed_proj_dim q_lora_rank kv_lora_rank "
                     "o_lora_rank moe_latent_size").split(), 2**24),
    **dict.fromkeys("conv_kernel linear_conv_kernel_dim mamba_d_conv conv_L_cache short_conv_kernel_size".split(),
                    4096),
    **dict.fromkeys("num_nextn_predict_layers num_mtp_layers mtp_num_layers mtp_num_hidden_layers".split(), 1000),
    "mamba_expand": 1e6,
}


class ConfigReader:
    """Typed, range-checked access to one config dict. Every field is checked as it is read (an
    integer where a count is meant, a boolean where a switch is meant, a finite number where a
    size is meant, at most its _FIELD_MAX); an error is one line naming the field and the file.
    Past the reader, the code can assume clean numbers. `used` records which fields were read."""

    def __init__(self, cfg, where, warnings_out=None):
        self.cfg, self.where, self.used = cfg, where, set()
        self.warnings_out = [] if warnings_out is None else warnings_out

    def fail(self, key, what, value):
        raise ValueError(f"{self.where}: field {key!r} {what}, got {_short(value)}")

    def has(self, key):
        return self.cfg.get(key) is not None

    def pick(self, *keys):
        """(key, value) of the first given non-null key; two given spellings that disagree are an
        error naming both."""
        self.used.update(keys)
        found = [(k, self.cfg[k]) for k in keys if self.cfg.get(k) is not None]
        if not found:
            return None, None
        k0, v0 = found[0]
        for k, v in found[1:]:
            if v != v0:
                raise ValueError(f"{self.where}: fields {k0!r} ({_short(v0)}) and {k!r} ({_short(v)}) "
                                 "disagree; keep one")
        return k0, v0

    def int(self, *keys, default=None, lo=1, hi=None):
        k, v = self.pick(*keys)
        if k is None:
            return default
        hi = _FIELD_MAX.get(k, 2**31) if hi is None else hi
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail(k, "must be an integer", v)
        if not lo <= v <= hi:
            self.fail(k, f"must be between {lo:,} and {hi:,}", v)
        return v

    def num(self, *keys, default=None, lo=0.0, hi=None):
        k, v = self.pick(*keys)
        if k is None:
            return default
        hi = _FIELD_MAX.get(k, 1e12) if hi is None else hi
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or not lo <= v <= hi:
            self.fail(k, f"must be a finite number between {lo:g} and {hi:g}", v)
        return v

    def bool(self, *keys, default=None):
        k, v = self.pick(*keys)
        if k is None:
            return default
        if not isinstance(v, bool):
            self.fail(k, "must be true or false", v)
        return v

    def str(self, *keys, default=None, choices=None):
        k, v = self.pick(*keys)
        if k is None:
            return default
        if not isinstance(v, str) or (choices is not None and v not in choices):
            self.fail(k, "must be " + (f"one of {', '.join(choices)}" if choices else "a string"), v)
        return v

    def int_list(self, key, *, lo=0, hi=None, length=None, default=None):
        k, v = self.pick(key)
        if k is None:
            return default
        hi = _FIELD_MAX.get(k, 2**31) if hi is None else hi
        if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int) or not lo <= x <= hi
                                          for x in v):
            self.fail(k, f"must be a list of integers between {lo} and {hi:,}", v)
        if length is not None and len(v) != length:
            self.fail(k, f"must list {length} values", v)
        return list(v)

    def str_list(self, key, *, choices, length=None, default=None):
        k, v = self.pick(key)
        if k is None:
            return default
        if not isinstance(v, list) or any(not isinstance(x, str) for x in v):
            self.fail(k, "must be a list of strings", v)
        bad = sorted({x for x in v if x not in choices})
        if bad:
            self.fail(k, f"has layer kinds this script does not know ({', '.join(bad)}); known: "
                      + ", ".join(sorted(choices)), v)
        if length is not None and len(v) < length:
            self.fail(k, f"lists {len(v)} layers, fewer than the {length} needed", v)
        return list(v[:length] if length is not None else v)

    def sub(self, key):
        """A nested config dict (text_config, quantization_config, rope_parameters), or None."""
        k, v = self.pick(key)
        if k is None:
            return None
        if not isinstance(v, dict):
            self.fail(k, "must be a JSON object", v)
        return v

    def unread_count_fields(self):
        """Fields present in the config, never read, whose name suggests they change a count."""
        out = []
        for key, val in self.cfg.items():
            if key in self.used or key in _NEVER_COUNTS or key.startswith("_") or val in (None, False, 0, [], {}):
                continue
            if any(hint in key for hint in _COUNT_FIELD_HINTS) and not key.endswith(("_eps", "_dropout")):
                out.append(key)
        return sorted(out)


_LAYER_TYPE_NAMES = {"full_attention": "full", "sliding_attention": "sliding",
                     "chunked_attention": "chunked", "attention": "full", "linear_attention": "linear"}


def _layer_pattern(r, L, s):
    """Per-layer attention span list (full/sliding/chunked) from transformers 5's layer_types, or
    None when every layer is alike."""
    names = dict(_LAYER_TYPE_NAMES)
    if not s.get("linear_mixer"):
        del names["linear_attention"]  # only a family whose reader knows its linear layers has them
    lt = r.str_list("layer_types", choices=set(names), length=L)
    if lt is None:
        return None
    return [names[t] for t in lt]


# ======== llmcalc/model/families_moe.py ===========================================================
# Family readers for MoE and latent-attention decoders (DeepSeek-V2/V3/V3.2/V4 and MLA, gpt-oss,
# Llama 4, GLM-4.5/5 with DSA, Mistral Large 4, MiniMax-M2, ERNIE 4.5, Hunyuan, LongCat-Flash,
# Step-3.5, GraniteMoE, PhiMoE), and the helpers they share (MLA fields, MTP layers, MoE patterns).

_DSV4_RATIO = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}


def _hyper_connection_layer_fields(*, hc, h):
    """Per layer, DeepSeek-V4's manifold-constrained hyper-connections over hc residual streams of
    width h (transformers' modeling_deepseek_v4; GLM-5-Next's layers have the same): two mixing
    modules, each a projection of the hc h concatenated streams to (2 + hc) hc mixing weights, its
    (2 + hc) hc biases and 3 scales. FLOPs per token and module: that projection (2 (2 + hc) hc^2 h)
    and comb^T @ streams (2 hc^2 h). The spec fields a reader sets from them."""
    return {"extra_params_per_layer": 2 * ((2 + hc) * hc * hc * h + (2 + hc) * hc + 3),
            "extra_flops_per_layer": 2 * (2 * (2 + hc) * hc * hc * h + 2 * hc * hc * h),
            "residual_streams": hc}


def _read_deepseek_v4(r, s, ll, notes, warnings):
    """DeepSeek-V4: every layer sliding-window attention over one shared K = V head with sinks,
    and, per layer_types (else the legacy per-layer compress_ratios 0 / 4 / 128, else two heavily
    compressed layers then compressed sparse and heavily compressed alternating), a compressor
    of rate compress_rates[kind] (4 and 128 by default) with, on compressed sparse layers, a
    lightning indexer. Every layer MoE with one shared expert of moe_intermediate_size
    (n_shared_experts is not read by transformers), the first num_hash_layers hash-routed (their
    router still has weights; the hash table is a buffer). Manifold-constrained hyper-connections:
    hc_mult residual streams, two mixing modules per layer and one before the head. The head is
    tied only with tie_word_embeddings; the MTP layer is not built."""
    L, h = s["num_layers"], s["hidden_size"]
    n_cfg = r.int("num_hidden_layers")
    s.update(ll, qkv_bias=False, attn_out_bias=False, mlp_bias=r.bool("mlp_bias", default=False),
             norms_per_layer=2, head_dim=r.int("head_dim", default=512), num_kv_heads=1)
    r.bool("attention_bias", default=False)  # read, not used by transformers
    rates = dict(r.sub("compress_rates") or {})
    csa_rate = r.int("compress_rate_csa", default=None) or rates.get("compressed_sparse_attention", 4)
    hca_rate = r.int("compress_rate_hca", default=None) or rates.get("heavily_compressed_attention", 128)
    for v in (csa_rate, hca_rate):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 2**20:
            raise ValueError(f"{r.where}: compress_rates must hold positive integers, got {_short(v)}")
    names = {"sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"}
    if r.has("layer_types"):
        lt = r.str_list("layer_types", choices=names, length=L)
    elif r.has("compress_ratios"):
        ratios = r.int_list("compress_ratios")
        bad = sorted({x for x in ratios if x not in _DSV4_RATIO})
        if bad:
            r.fail("compress_ratios", f"may hold only 0, 4 and 128 (transformers' legacy map; {bad} is not)",
                   ratios)
        if len(ratios) < L:
            r.fail("compress_ratios", f"lists {len(ratios)} layers, fewer than the {L} needed", ratios)
        lt = [_DSV4_RATIO[x] for x in ratios[:L]]
    else:
        lt = ["heavily_compressed_attention"] * min(n_cfg, 2) + [
            "compressed_sparse_attention" if i % 2 else "heavily_compressed_attention" for i in range(max(n_cfg - 2, 0))]
        lt = lt[:L]
    W = r.int("sliding_window", default=128)
    base = {"kind": "dsv4", "kv_proj": 1, "sinks": True, "q_lora_rank": r.int("q_lora_rank", default=1024),
            "o_groups": r.int("o_groups", default=8), "o_lora_rank": r.int("o_lora_rank", default=1024),
            "c_index_heads": 0, "c_index_head_dim": 0, "c_index_topk": 0, "compress": 0, "compress_kind": "none"}
    if (s["num_attention_heads"] * s["head_dim"]) % base["o_groups"]:
        raise ValueError(f"{r.where}: num_attention_heads x head_dim is not divisible by o_groups {base['o_groups']}")
    kinds = {"sliding_attention": {"attention": dict(base)},
             "heavily_compressed_attention": {"attention": dict(base, compress=hca_rate, compress_kind="hca")},
             "compressed_sparse_attention": {"attention": dict(
                 base, compress=csa_rate, compress_kind="csa",
                 c_index_heads=r.int("index_n_heads", default=64),
                 c_index_head_dim=r.int("index_head_dim", default=128),
                 c_index_topk=r.int("index_topk", default=512))}}
    hc = r.int("hc_mult", default=4, hi=1024)
    s.update(layer_types=["sliding"] * L, sliding_window=W,
             layer_overrides={i: kinds[t] for i, t in enumerate(lt)},
             **_hyper_connection_layer_fields(hc=hc, h=h),
             other_params={"hc_head": hc * hc * h + hc + 1}, input_matmul_params=hc * hc * h)
    f_e = r.int("moe_intermediate_size", default=2048)
    r.str_list("mlp_layer_types", choices={"moe", "hash_moe"}, length=L)  # checked: every layer MoE
    r.int("num_hash_layers", lo=0, default=3)  # hash routing: same weights as top-k routing
    r.int("n_shared_experts", lo=0, default=1)  # not read by transformers: one shared expert
    s.update(moe=True, num_experts=r.int("n_routed_experts", default=256),
             topk=r.int("num_experts_per_tok", default=6), moe_ffn_hidden_size=f_e,
             num_shared_experts=1, shared_expert_ffn_hidden_size=f_e, router_bias=False, expert_bias=False,
             moe_layer_set=list(range(L)))
    r.used.update(("compress_ratios", "qk_rope_head_dim", "partial_rotary_factor", "expert_dtype", "swiglu_limit",
                   "hc_sinkhorn_iters"))
    _note_mtp(r, s)


def _read_step3p5(r, s, ll, notes, warnings):
    """Step 3.5/3.7 (transformers' step3p5 text model, inside the step3p7 wrapper): full and sliding
    attention layers (layer_types; sliding layers may have more query heads: num_sliding_attention_heads,
    the legacy attention_other_setting, or per_layer_config), per-head q/k RMSNorms and a head-wise
    sigmoid output gate (g_proj h -> heads) on every layer; dense gated MLPs on the first layers and MoE
    after them (mlp_layer_types, the legacy moe_layers_enum, else MoE from layer 3 on) with one ungated
    shared expert of share_expert_dim; the router's correction bias is a buffer. Per-layer lists
    padded with the MTP layers (num_nextn_predict_layers) are cut to the layers; the MTP layers are
    not built."""
    L = s["num_layers"]
    n_cfg = r.int("num_hidden_layers") or L
    a = s["num_attention_heads"]
    s.update(ll, qk_norm="head", attn_output_gate="headwise",
             num_kv_heads=r.int("num_key_value_heads", "num_attention_groups", default=a),
             head_dim=r.int("head_dim", default=128))
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=r.bool("mlp_bias", default=False))
    n_mtp = r.int("num_nextn_predict_layers", "num_mtp_layers", lo=0, default=0)
    lt = r.str_list("layer_types", choices={"full_attention", "sliding_attention"}, length=n_cfg)
    lt = (lt or ["full_attention"] * n_cfg)[:L]
    s["layer_types"] = ["sliding" if t == "sliding_attention" else "full" for t in lt]
    if "sliding" in s["layer_types"]:
        s["sliding_window"] = r.int("sliding_window")
    other = r.sub("attention_other_setting") or {}
    n_slide = (r.int("num_sliding_attention_heads", default=None)
               or ConfigReader(other, f"{r.where} (attention_other_setting)").int("num_attention_heads", default=a))
    plc = r.sub("per_layer_config") or {}
    over, by_heads = {}, {}
    for i, t in enumerate(lt):
        heads = n_slide if t == "sliding_attention" else a
        key = str(i) if str(i) in plc else next((k for k in plc if isinstance(k, str) and k.isdigit() and int(k) == i), None)
        if key is not None:
            if not isinstance(plc[key], dict):
                r.fail("per_layer_config", "must map layer numbers to objects", plc)
            heads = ConfigReader(plc[key], f"{r.where} (per_layer_config {key})").int("num_attention_heads",
                                                                                         default=heads)
        if heads != a:  # one override object per head count, so layers of a kind stay one layer dict
            over[i] = by_heads.setdefault(heads, {"attention": {"heads": heads}})
    if any(v["attention"]["heads"] % s["num_kv_heads"] for v in over.values()):
        raise ValueError(f"{r.where}: sliding layers' query heads are not a multiple of the kv heads")
    s["layer_overrides"] = over
    if r.has("mlp_layer_types"):
        mlt = r.str_list("mlp_layer_types", choices={"dense", "sparse"}, length=n_cfg)[:L]
        moe = [i for i, t in enumerate(mlt) if t == "sparse"]
    elif r.has("moe_layers_enum"):
        raw = r.cfg["moe_layers_enum"]
        items = raw.split(",") if isinstance(raw, str) else raw
        if not isinstance(items, list) or any(not str(x).strip().isdigit() for x in items if str(x).strip()):
            r.fail("moe_layers_enum", "must list layer numbers", raw)
        r.used.add("moe_layers_enum")
        moe = sorted({int(x) for x in items if str(x).strip()} & set(range(L)))
    else:
        moe = list(range(3, L))
    E = r.int("n_routed_experts", "moe_num_experts", default=288)
    sh = r.int("share_expert_dim", "share_expert_dims", lo=0, default=1280)
    s.update(moe=bool(moe), num_experts=E, topk=r.int("num_experts_per_tok", "moe_top_k", default=8),
             moe_ffn_hidden_size=r.int("moe_intermediate_size", default=1280),
             num_shared_experts=1 if sh else 0, shared_expert_ffn_hidden_size=sh, shared_expert_gate=False,
             router_bias=False, expert_bias=False, moe_layer_set=moe)
    r.used.update(("num_local_experts", "num_attention_heads"))  # a stale class field: transformers reads n_routed_experts
    if n_mtp:
        s["mtp_layers_not_built"] = n_mtp
        warnings.append(f"{n_mtp} multi-token-prediction layer(s) (num_nextn_predict_layers) are in the "
                        "checkpoint but not counted: transformers does not build them in the model")
    r.used.update(("sparse_attention_config", "mtp_layer_types", "mtp_mlp_layer_types", "swiglu_limits",
                   "swiglu_limits_shared", "partial_rotary_factors", "query_pre_attn_scalar"))


def _read_deepseek(r, s):
    """DeepSeek-V2/V3 (and the families built on them): MLA when kv_lora_rank is set, routed and
    shared experts on every layer from first_k_dense_replace on (transformers 5 does not read
    moe_layer_freq)."""
    L = s["num_layers"]
    E = r.int("n_routed_experts", "num_local_experts", "num_experts")
    f_e = r.int("moe_intermediate_size")
    n_sh = r.int("n_shared_experts", lo=0, default=0)
    fkd = r.int("first_k_dense_replace", lo=0, default=0)
    r.int("moe_layer_freq", default=1)  # checked, but transformers 5 builds MoE on every i >= fkd
    s.update(moe=bool(E), num_experts=E, topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=f_e, num_shared_experts=n_sh,
             shared_expert_ffn_hidden_size=n_sh * (f_e or 0), router_bias=False,
             moe_layer_set=[i for i in range(L) if i >= fkd] if E else None)
    _read_mla(r, s)
    _note_mtp(r, s)


def _read_mla(r, s):
    r_kv = r.int("kv_lora_rank")
    if r_kv:
        s.update(kv_lora_rank=r_kv, q_lora_rank=r.int("q_lora_rank"),
                 qk_nope_head_dim=r.int("qk_nope_head_dim"),
                 qk_rope_head_dim=r.int("qk_rope_head_dim", lo=0),  # 0: no rotary slice (GLM-5-Next)
                 v_head_dim=r.int("v_head_dim"), head_dim=None)
        r.used.add("qk_head_dim")  # derived: qk_nope_head_dim + qk_rope_head_dim


def _note_mtp(r, s):
    n = r.int("num_nextn_predict_layers", "num_mtp_layers", "mtp_num_layers", lo=0, default=0)
    if n:
        s["mtp_layers_not_built"] = n
        r.warnings_out.append(f"{n} multi-token-prediction layer(s) (num_nextn_predict_layers) are in the "
                              "checkpoint but not counted: transformers does not build them in the model")


def _mlp_pattern(r, L, default_dense):
    """MoE layer indices from transformers 5's mlp_layer_types ("dense"/"sparse"), else the family's
    default rule (a list of dense indices)."""
    mlt = r.str_list("mlp_layer_types", choices={"dense", "sparse", "moe"}, length=L)
    if mlt is not None:
        return [i for i, t in enumerate(mlt) if t != "dense"]
    return [i for i in range(L) if i not in set(default_dense)]


def _read_gpt_oss(r, s, ll, notes, warnings):
    """gpt-oss: every layer MoE (router with bias, experts with biases), biased attention with a
    sink logit per head, alternating sliding (even) and full (odd) layers."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=True)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=True, attention_sinks=True, router_has_bias=True,
             head_dim=r.int("head_dim", default=64), moe=True,
             num_experts=r.int("num_local_experts", "num_experts"),
             topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=ll["ffn_hidden_size"],
             moe_layer_set=list(range(L)))
    r.used.add("experts_per_token")  # HF reads num_experts_per_tok only
    if not r.has("layer_types"):
        s["layer_types"] = ["sliding" if i % 2 == 0 else "full" for i in range(L)]


def _read_llama4(r, s, ll, notes, warnings):
    """Llama 4: chunked attention on rotary layers, every 4th layer NoPE and full; MoE layers every
    interleave_moe_layer_step-th (or `moe_layers`), each with one shared expert of the expert width;
    dense layers of width intermediate_size_mlp; q/k L2 norms without weights."""
    L = s["num_layers"]
    s.update(ll)
    f = ll["ffn_hidden_size"]
    s.update(ffn_hidden_size=r.int("intermediate_size_mlp", default=f),
             qk_norm="l2" if r.bool("use_qk_norm", default=True) else "none",
             attention_chunk_size=r.int("attention_chunk_size"))
    nrl = r.int_list("no_rope_layers", lo=0, hi=1, default=None)
    interval = r.int("no_rope_layer_interval", default=4)
    if not nrl:
        nrl = [int((i + 1) % interval != 0) for i in range(L)]
    elif len(nrl) < L:
        r.fail("no_rope_layers", f"must list {L} layers", nrl)
    s["nope_layers"] = [i for i in range(L) if not nrl[i]]
    if not r.has("layer_types"):
        span = "chunked" if s["attention_chunk_size"] else "full"
        s["layer_types"] = [span if nrl[i] else "full" for i in range(L)]
    E = r.int("num_local_experts", "num_experts")
    step = r.int("interleave_moe_layer_step", default=1)
    moe = r.int_list("moe_layers", default=None)
    s.update(moe=bool(E), num_experts=E, topk=r.int("num_experts_per_tok", default=1),
             moe_ffn_hidden_size=f, num_shared_experts=1, shared_expert_ffn_hidden_size=f,
             moe_layer_set=moe if moe is not None else list(range(step - 1, L, step)))


def _read_glm4_moe(r, s, ll, notes, warnings):
    """GLM-4.5 (glm4_moe): head_dim as given, biased q/k/v (never o), optional per-head q/k norms,
    dense layers before first_k_dense_replace, then routed + shared experts (moe_layer_freq is not
    read by transformers)."""
    L = s["num_layers"]
    s.update(ll)
    s.update(qkv_bias=r.bool("attention_bias", default=False), attn_out_bias=False,
             qk_norm="head" if r.bool("use_qk_norm", default=False) else "none")
    _read_routed_shared(r, s, L, dense=range(r.int("first_k_dense_replace", lo=0, default=1)))
    r.used.add("moe_layer_freq")
    _note_mtp(r, s)


def _read_routed_shared(r, s, L, dense):
    E = r.int("n_routed_experts", "num_local_experts", "num_experts")
    f_e = r.int("moe_intermediate_size")
    n_sh = r.int("n_shared_experts", "num_shared_experts", lo=0, default=0)
    s.update(moe=bool(E), num_experts=E, topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=f_e,
             num_shared_experts=n_sh, shared_expert_ffn_hidden_size=n_sh * (f_e or 0),
             moe_layer_set=_mlp_pattern(r, L, dense) if E else None)


def _read_one_shared_expert(r, s, moe_layer_set, **extra):
    """Routed experts (num_experts of moe_intermediate_size, top num_experts_per_tok) with at most one
    ungated shared expert of shared_expert_intermediate_size (absent or 0: none) on moe_layer_set's
    layers (Laguna, Flint, Lara-mini); `extra`: the family's other MoE fields."""
    sh = r.int("shared_expert_intermediate_size", lo=0, default=0)
    s.update(moe=True, num_experts=r.int("num_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=r.int("moe_intermediate_size"), num_shared_experts=1 if sh else 0,
             shared_expert_ffn_hidden_size=sh, moe_layer_set=moe_layer_set, **extra)


def _read_dsa_every_layer(r, s, ll, notes, warnings):
    """_read_dsa for a family whose layer_types mixes indexed layers with its own kinds (dots3,
    GLM-5-Next): read the MLA and indexer fields as if every layer were indexed; the caller then
    sets the layer kinds from its own layer_types."""
    orig = r.cfg
    r.cfg = {**orig, "layer_types": ["indexed_attention"] * s["num_layers"]}
    try:
        _read_dsa(r, s, ll, notes, warnings)
    finally:
        r.cfg = orig


def _read_dsa(r, s, ll, notes, warnings):
    """DeepSeek-V3.2 (deepseek_v32) and GLM-5 (glm_moe_dsa): MLA with a lightning indexer that picks
    index_topk keys per query (DeepSeek-AI 2025, sec. 2.1); GLM-5's `indexer_types` "shared" layers
    reuse the previous layer's top-k and have no indexer weights or keys of their own."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    _read_routed_shared(r, s, L, dense=range(r.int("first_k_dense_replace", lo=0, default=3)))
    _read_mla(r, s)
    if not s.get("q_lora_rank"):
        raise ValueError(f"{r.where}: {s['model_type']} needs q_lora_rank (the indexer reads the query latent)")
    r.str_list("layer_types", choices={"indexed_attention", "deepseek_sparse_attention", "full_attention"},
               length=L)
    s["layer_types"] = None
    H, dI, k = (r.int("index_n_heads", hi=2**16), r.int("index_head_dim"), r.int("index_topk"))
    if None in (H, dI, k):
        raise ValueError(f"{r.where}: sparse attention needs index_n_heads, index_head_dim and index_topk")
    s.update(index_n_heads=H, index_head_dim=dI, index_topk=k)
    shared = _indexer_shared_layers(r, s, L)
    if shared is not None:
        s["layer_overrides"] = {i: {"attention": {"index_heads": 0, "index_head_dim": 0}} for i in shared}
    _note_mtp(r, s)


def _read_axk2(r, s, ll, notes, warnings):
    """A.X K2 (transformers' modeling_axk2): DeepSeek-V3.2's indexed attention (MLA, a lightning
    indexer on every layer) whose query up-projection (q_gate_proj) reads [norm(c_q), c_q] (2 r_q)
    and also writes an elementwise sigmoid output gate (a d_v); gated RMSNorms: the norm's weight
    (h) and a low-rank gate MLP h -> gated_norm_rank -> h, before attention on every layer and
    before the MLP on MoE layers (a plain RMSNorm before a dense MLP). The gate MLPs are matmuls
    every token runs (extra_params: 2 FLOPs per weight). mlp_layer_types picks dense and MoE
    layers (one shared expert; the router's correction bias is a buffer, not a weight)."""
    _read_dsa(r, s, ll, notes, warnings)
    L, h, g = s["num_layers"], s["hidden_size"], r.int("gated_norm_rank", default=16)  # AXK2Config default
    s["attn_output_gate"] = "elementwise"
    moe = set(s.get("moe_layer_set") or ())
    over = s.get("layer_overrides") or {}
    for i in range(L):
        o = over.setdefault(i, {})
        o["attention"] = dict(o.get("attention", {}), q_latent_concat=True)
        o["extra_params"] = 2 * h * g * (2 if i in moe else 1)
    s["layer_overrides"] = over


def _indexer_shared_layers(r, s, L):
    """Layers whose attention reuses the previous layer's top-k (no indexer of their own): from
    indexer_types, else index_topk_pattern ("F"/"S" per layer), else GLM-5's index_topk_freq /
    index_skip_topk_offset rule; None when every layer has its own indexer."""
    it = r.pick("indexer_types")[1]
    pattern = r.pick("index_topk_pattern")[1]
    if it is None and pattern is not None:
        it = ["full" if c in "Ff" else "shared" for c in pattern] if isinstance(pattern, str) else pattern
    if it is None and s["model_type"] in ("glm_moe_dsa", "mistral_large4_text"):
        freq = max(r.int("index_topk_freq", default=1), 1)
        off = r.int("index_skip_topk_offset", lo=0, default=2)
        it = ["full" if max(i - off + 1, 0) % freq == 0 else "shared" for i in range(L)]
    if it is not None:
        if not isinstance(it, list) or len(it) < L or any(x not in ("full", "shared") for x in it[:L]):
            r.fail("indexer_types", f"must list 'full' or 'shared' for each of the {L} layers", it)
        if it[0] == "shared":
            r.fail("indexer_types", "layer 0 has no earlier layer to share top-k indices with", it)
        return [i for i in range(L) if it[i] == "shared"]
    return None


def _read_mistral_large4(r, s, ll, notes, warnings):
    """Mistral Large 4 (mistral_large4_text): DSA as GLM-5's, with changes. MLA without a query
    bottleneck (q directly from h); the indexer's queries come from the hidden state through a
    LayerNorm (2 h); attention and indexer queries get a learned scale and bias per head (2 per
    head, scaled by log position); NoPE layers (no_rope_layers: 0) have no rotary slice, so their
    kv down-projection and latent drop d_rope and their up-projection adds it to the no-position
    keys; a layer whose kv_source_layers entry names an earlier layer reuses that layer's latent
    (no kv down-projection, norm or latent cache of its own; its indexer keeps its own keys)."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    _read_routed_shared(r, s, L, dense=range(r.int("first_k_dense_replace", lo=0, default=1)))
    _read_mla(r, s)
    if s.get("q_lora_rank"):
        r.fail("q_lora_rank", "Mistral Large 4 has no query bottleneck (transformers builds q_proj from h)",
               s["q_lora_rank"])
    r.str_list("layer_types", choices={"indexed_attention", "full_attention"}, length=L)
    s["layer_types"] = None
    H, dI, k = (r.int("index_n_heads", default=32, hi=2**16), r.int("index_head_dim", default=128),
                r.int("index_topk", default=2048))
    s.update(index_n_heads=H, index_head_dim=dI, index_topk=k, attn_position_scaling=True,
             indexer_input_norm=True, nope_layers=_nope_from_interval(r, L))
    L_cfg = r.int("num_hidden_layers", "num_layers") or L  # -l keeps the first L of them
    src = (r.int_list("kv_source_layers", lo=0, length=L_cfg) or list(range(L_cfg)))[:L]
    for i, j in enumerate(src):
        if j > i or src[j] != j:
            r.fail("kv_source_layers", f"layer {i} must reuse an earlier layer that owns its cache, got {j}", src)
    r.used.update(("final_logit_softcapping", "qk_head_dim"))
    shared_index = set(_indexer_shared_layers(r, s, L) or ())
    nope = set(s["nope_layers"])
    d_nope, d_rope = s["qk_nope_head_dim"], s["qk_rope_head_dim"]
    over = {}
    for i in range(L):
        a = {}
        if i in nope:
            a.update(qk_rope_head_dim=0, qk_nope_head_dim=d_nope + d_rope)
        if src[i] != i:
            a["kv_shared"] = True
        if i in shared_index:
            a.update(index_heads=0, index_head_dim=0)
        if a:
            over[i] = {"attention": a}
    s["layer_overrides"] = over
    # LeRoPE (transformers 5.24): a learned log-scale per rotary frequency, d_rope / 2 of them, one
    # table for the model (MistralLarge4TextRotaryEmbedding.alpha)
    s["other_params"] = {"rotary_alpha": d_rope // 2}
    _note_mtp(r, s)


def _read_minimax_m2(r, s, ll, notes, warnings):
    """MiniMax-M2: every layer MoE with experts of width intermediate_size, no shared expert, q/k
    RMSNorms over the whole projection width, no biases; full attention on every layer."""
    L = s["num_layers"]
    s.update(ll)
    s.update(qk_norm="full", moe=True, head_dim=r.int("head_dim", default=128), num_experts=r.int("num_local_experts", "num_experts"),
             topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=ll["ffn_hidden_size"],
             moe_layer_set=list(range(L)), layer_types=None)
    r.used.update(("sliding_window", "attn_type_list", "rotary_dim"))
    s["sliding_window"] = None


def _read_ernie45_moe(r, s, ll, notes, warnings):
    """ERNIE-4.5 MoE: MoE on layers moe_layer_start_index..end every moe_layer_interval-th, shared
    experts, biases everywhere with use_bias (the head's bias too, even when tied), and an expert
    score-correction bias that transformers keeps as a parameter."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("use_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias)
    E = r.int("moe_num_experts", "num_experts")
    start = r.int("moe_layer_start_index", lo=-1, default=1)
    end = r.int("moe_layer_end_index", lo=-1, default=-1)
    end = L - 1 if end == -1 else end
    step = r.int("moe_layer_interval", default=1)
    f_e = r.int("moe_intermediate_size", default=ll["ffn_hidden_size"])
    n_sh = r.int("moe_num_shared_experts", lo=0, default=0)
    s.update(moe=bool(E), num_experts=E, topk=r.int("moe_k", "num_experts_per_tok"),
             moe_ffn_hidden_size=f_e, num_shared_experts=n_sh, shared_expert_ffn_hidden_size=n_sh * f_e,
             expert_bias=False, router_has_bias=bool(E),
             moe_layer_set=[i for i in range(L) if (i + 1) % step == 0 and start <= i <= end] if E else None)
    if bias:
        s["other_params"] = {"lm_head_bias": s["vocab_size"]}


def _read_hy_v3(r, s, ll, notes, warnings):
    """HY-V3: per-head q/k norms, layer 0 dense then MoE (mlp_layer_types), a shared expert whose
    width is num_shared_experts x moe_intermediate_size, or intermediate_size when that is 0."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=r.bool("mlp_bias", default=False), qk_norm="head",
             head_dim=r.int("head_dim", default=128), expert_bias=False)
    E = r.int("num_experts", "num_local_experts")
    f_e = r.int("moe_intermediate_size")
    n_sh = r.int("num_shared_experts", lo=0, default=1)
    s.update(moe=bool(E), num_experts=E, topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=f_e,
             num_shared_experts=max(n_sh, 1), shared_expert_ffn_hidden_size=n_sh * f_e if n_sh else ll["ffn_hidden_size"],
             moe_layer_set=_mlp_pattern(r, L, [0]) if E else None)
    _note_mtp(r, s)


def _read_longcat(r, s, ll, notes, warnings):
    """LongCat-Flash: each of num_layers layers holds two MLA blocks, two dense MLPs and one MoE of
    E real experts plus Z zero-computation experts that a router over E + Z picks k from (LongCat-
    Flash tech report, sec. 2). transformers allocates gate_up_proj rows for the zero experts too
    (E + Z of them, never used); the count here is the weights the checkpoint holds."""
    h = s["hidden_size"]
    L_cfg = r.int("num_layers")
    if r.has("num_hidden_layers"):  # transformers: num_hidden_layers = 2 x num_layers, and it wins
        L_hf = r.int("num_hidden_layers", hi=200_000)
        if L_cfg and L_hf != 2 * L_cfg:
            warnings.append(f"num_hidden_layers {L_hf} is not 2 x num_layers {L_cfg}; transformers takes "
                            f"num_hidden_layers // 2 = {L_hf // 2} layers, and so does this count")
        L_cfg = L_hf // 2
    L = s["num_layers"] if s.get("_layers_from_flag") else L_cfg
    s["num_layers"] = L
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    E = r.int("n_routed_experts", "num_local_experts")
    Z = r.int("zero_expert_num", lo=0, default=0) or 0
    f_e = r.int("expert_ffn_hidden_size", "moe_intermediate_size")
    f = r.int("ffn_hidden_size", "intermediate_size")
    s.update(qkv_bias=bias, attn_out_bias=bias, ffn_hidden_size=f, moe=True, num_experts=E, zero_experts=Z,
             topk=r.int("moe_topk", "num_experts_per_tok"), moe_ffn_hidden_size=f_e,
             router_has_bias=r.bool("router_bias", default=False), moe_layer_set=list(range(L)))
    _read_mla(r, s)
    dense = {"kind": "dense", "width": f, "linears": 3, "bias": False}
    s["layer_overrides"] = {i: {"more_attention": ({},), "more_mlp": (dense, dense), "norms": 4}
                            for i in range(L)}
    r.used.update(("num_layers", "zero_expert_type"))
    if Z:
        phantom = L * Z * 2 * f_e * h
        warnings.append(f"zero-computation experts: active counts k E / (E + Z) = {s['topk'] * E / (E + Z):g} "
                        f"real experts per token (uniform routing); transformers also allocates {phantom:,} "
                        "unused gate_up_proj weights for the zero experts, not counted here")
    _note_mtp(r, s)


def _nope_from_interval(r, L):
    nrl = r.int_list("no_rope_layers", lo=0, hi=1, default=None)
    if not nrl:
        interval = r.int("no_rope_layer_interval", default=4)
        nrl = [int((i + 1) % interval != 0) for i in range(L)]
    if len(nrl) < L:
        r.fail("no_rope_layers", f"must list {L} layers", nrl)
    return [i for i in range(L) if not nrl[i]]


def _read_granitemoe(r, s, ll, notes, warnings):
    """GraniteMoE: every layer MoE, experts of width intermediate_size, no shared expert; the
    embedding/residual/attention/logit multipliers are scalars, not weights."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, moe=True,
             num_experts=r.int("num_local_experts", "num_experts"),
             topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=ll["ffn_hidden_size"],
             moe_layer_set=list(range(L)))


def _read_phimoe(r, s, ll, notes, warnings):
    """Phi-3.5-MoE: LayerNorms with bias, biased attention (attention_bias), every layer MoE; its
    sparsemixer router always picks 2 experts whatever num_experts_per_tok says; optional head bias."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    k = r.int("num_experts_per_tok", default=2)
    if k != 2:
        warnings.append(f"num_experts_per_tok {k} is not read by PhiMoE's router, which picks 2 experts: "
                        "active parameters use 2")
    s.update(norm="layernorm", qkv_bias=bias, attn_out_bias=bias, num_kv_heads=r.int("num_key_value_heads", default=8),
             moe=True, num_experts=r.int("num_local_experts", "num_experts"), topk=2,
             moe_ffn_hidden_size=ll["ffn_hidden_size"], moe_layer_set=list(range(L)), slides_every_layer=True)
    if r.bool("lm_head_bias", default=False):
        s["other_params"] = {"lm_head_bias": s["vocab_size"]}


def _read_dbrx(r, s, ll, notes, warnings):
    """DBRX (modeling_dbrx): every layer a MoE of ffn_config.moe_num_experts gated experts (w1, v1,
    w2 of ffn_hidden_size), top moe_top_k, a router h -> E without bias, no shared expert; a fused
    q/k/v of attn_config.kv_n_heads key/value heads of d_model / n_heads, rotary positions; weight-only
    LayerNorms (LayerNorm(bias=False): h weights each, counted as RMSNorm's); no biases; an untied
    head by default. attn_config.clip_qkv clamps activations and adds no weight. The nested blocks
    are read field by field like the top level."""
    s.update(ll)
    attn = ConfigReader(r.sub("attn_config") or {}, f"{r.where} (attn_config)", warnings)
    ffn = ConfigReader(r.sub("ffn_config") or {}, f"{r.where} (ffn_config)", warnings)
    for key, what in (("attn_config", "kv_n_heads 1"), ("ffn_config", "4 experts of width 3584, top 1")):
        if r.sub(key) is None:  # transformers builds DbrxAttentionConfig() / DbrxFFNConfig() then
            notes.append(f"no {key} in the config: transformers' defaults taken ({what})")
    a, h = s["num_attention_heads"], s["hidden_size"]
    kv = attn.int("kv_n_heads", default=1)
    if a % kv:
        attn.fail("kv_n_heads", f"must divide n_heads = {a}", kv)
    E, k = ffn.int("moe_num_experts", default=4), ffn.int("moe_top_k", default=1)
    if k > E:
        ffn.fail("moe_top_k", f"must be at most moe_num_experts = {E}", k)
    f = ffn.int("ffn_hidden_size", default=3584)
    s.update(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="rope", num_kv_heads=kv, head_dim=h // a, ffn_hidden_size=f,
             tied_embeddings=r.bool("tie_word_embeddings", default=False))
    if E > 1:
        s.update(moe=True, num_experts=E, topk=k, moe_ffn_hidden_size=f)
    r.used.update(("max_seq_len", "emb_pdrop", "resid_pdrop", "output_router_logits", "router_aux_loss_coef"))


# ======== llmcalc/model/families_dense.py =========================================================
# Family readers for dense and sliding-window decoders (GPT-2, NeoX, OPT, BLOOM, Falcon,
# StarCoder2, the Llama-style families and their MoE variants, Qwen, Gemma 3/4, OLMo 3, SmolLM3,
# Seed-OSS, EXAONE 4, Cohere 2): each turns its config into the flat spec's fields.

def _read_generic_moe(r, s, notes):
    E = r.int("num_local_experts", "num_experts", "n_routed_experts")
    if E and E > 1:
        s.update(moe=True, num_experts=E, topk=r.int("num_experts_per_tok", default=1),
                 moe_ffn_hidden_size=r.int("moe_intermediate_size", default=s.get("ffn_hidden_size")))
        sh = r.int("shared_expert_intermediate_size", lo=0, default=0)
        n_sh = r.int("n_shared_experts", "num_shared_experts", lo=0, default=0)
        if sh or n_sh:
            s.update(num_shared_experts=n_sh or 1, shared_expert_ffn_hidden_size=sh or n_sh * s["moe_ffn_hidden_size"])
        notes.append("read the routed experts from the expert count and moe_intermediate_size "
                     "(or intermediate_size)")


def _read_gpt2(r, s, ll, notes, warnings):
    h = s["hidden_size"]
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="learned",
             position_embedding_rows=r.int("n_positions", "max_position_embeddings"),
             ffn_hidden_size=r.int("n_inner", default=4 * h))
    if s["position_embedding_rows"] is None:
        raise ValueError(f"{r.where}: config lacks n_positions for GPT-2's learned position table")


def _read_gpt_neox(r, s, ll, notes, warnings):
    bias = r.bool("attention_bias", default=True)
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias, mlp_bias=True,
             position_embedding="rope", ffn_hidden_size=r.int("intermediate_size"))


def _read_opt(r, s, ll, notes, warnings):
    h = s["hidden_size"]
    bias = r.bool("enable_bias", default=True)
    pre = r.bool("do_layer_norm_before", default=True)
    rows = r.int("max_position_embeddings", hi=2**31 - 2)
    if rows is None:
        raise ValueError(f"{r.where}: config lacks max_position_embeddings for OPT's position table")
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias,
             position_embedding="learned", position_embedding_rows=rows + 2,  # OPT offsets by 2
             ffn_hidden_size=r.int("ffn_dim"),
             word_embed_proj_dim=r.int("word_embed_proj_dim", default=h),
             final_norm=pre and not r.bool("_remove_final_layer_norm", default=False))
    if not r.bool("layer_norm_elementwise_affine", default=True):
        s["norm"] = "none"


def _read_bloom(r, s, ll, notes, warnings):
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="alibi", ffn_hidden_size=4 * s["hidden_size"], embedding_norm=True)


def _read_falcon(r, s, ll, notes, warnings):
    a = s["num_attention_heads"]
    if r.bool("new_decoder_architecture", default=False):
        kv = r.int("num_kv_heads", default=a)
        n_ln = 2 if r.int("num_ln_in_parallel_attn", default=2, hi=2) == 2 else 1
    else:
        kv = 1 if r.bool("multi_query", default=True) else a
        n_ln = 1 if r.bool("parallel_attn", default=True) else 2
    bias = r.bool("bias", default=False)
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias,
             position_embedding="alibi" if r.bool("alibi", default=False) else "rope",
             num_kv_heads=kv, norms_per_layer=n_ln, parallel_attention=r.bool("parallel_attn", default=True),
             ffn_hidden_size=r.int("ffn_hidden_size", default=4 * s["hidden_size"]))


def _read_starcoder2(r, s, ll, notes, warnings):
    bias = r.bool("use_bias", default=True)
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias,
             position_embedding="rope", num_kv_heads=ll["num_kv_heads"], head_dim=ll["head_dim"],
             ffn_hidden_size=ll["ffn_hidden_size"])
    s["slides_every_layer"] = True


def _read_llama_like(r, s, ll, notes, warnings):
    """Llama-style families: RMSNorm, gated MLP, rotary; their quirks below."""
    mt = s["model_type"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    if mt == "llama":
        s["mlp_bias"] = r.bool("mlp_bias", default=False)
    if mt in ("qwen2", "qwen2_moe"):
        s["qkv_bias"], s["attn_out_bias"] = True, False  # Qwen2Attention: q/k/v biased, o not
        if mt == "qwen2_moe":
            s["qkv_bias"] = r.bool("qkv_bias", default=True)
    if mt == "mistral" and "sliding_window" not in r.cfg:
        s["sliding_window"] = 4096  # MistralConfig's default when config.json has no such key
    if mt in ("qwen3", "qwen3_moe"):
        s["qk_norm"] = "head"
    if mt == "olmo2":
        s["qk_norm"] = "full"
    if mt == "gemma2":
        s["norms_per_layer"] = 4  # input, post-attention, pre-feedforward, post-feedforward
    if mt in ("gemma", "gemma2"):
        s["head_dim"] = r.int("head_dim", default=256)  # the config classes' default
    if mt in ("mistral", "mixtral", "phi3"):
        s["slides_every_layer"] = True
    if mt in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):
        _read_qwen_sliding(r, s)
    if mt == "gemma2" and not r.has("layer_types"):
        s["layer_types"] = ["sliding" if i % 2 == 0 else "full" for i in range(s["num_layers"])]
    if mt == "mixtral":
        s.update(moe=True, num_experts=r.int("num_local_experts", "num_experts"),
                 topk=r.int("num_experts_per_tok"),
                 moe_ffn_hidden_size=ll["ffn_hidden_size"])
    if mt in ("qwen2_moe", "qwen3_moe"):
        L = s["num_layers"]
        step = r.int("decoder_sparse_step", default=1)
        only = set(r.int_list("mlp_only_layers", default=[]))
        s.update(moe=True, num_experts=r.int("num_experts", "num_local_experts"),
                 topk=r.int("num_experts_per_tok"),
                 moe_ffn_hidden_size=r.int("moe_intermediate_size"),
                 moe_layer_set=[i for i in range(L) if i not in only and (i + 1) % step == 0])
        if mt == "qwen2_moe":
            sh = r.int("shared_expert_intermediate_size", lo=0, default=0)
            s.update(num_shared_experts=1 if sh else 0, shared_expert_ffn_hidden_size=sh,
                     shared_expert_gate=bool(sh))
    if mt in ("deepseek_v2", "deepseek_v3", "mistral4"):  # Mistral4ForCausalLM is DeepSeek-V3's block
        _read_deepseek(r, s)


def _read_qwen_sliding(r, s):
    """Qwen2/Qwen3 slide only with use_sliding_window (off by default), on layers i >=
    max_window_layers (default 28; Qwen2-MoE: even i < max_window_layers; Qwen3-MoE: every
    layer), unless layer_types lists them."""
    L, mt = s["num_layers"], s["model_type"]
    if r.has("layer_types"):
        lt = _layer_pattern(r, L, s)
        if not r.bool("use_sliding_window", default=False):
            lt = ["full" if t == "sliding" else t for t in lt]
        s["layer_types"] = lt
        return
    if not r.bool("use_sliding_window", default=False) or not (r.int("sliding_window", lo=0) or None):
        s["layer_types"] = None
        s["sliding_window"] = None
        return
    mwl = r.int("max_window_layers", lo=0, default=28)  # the config classes' default
    if mt == "qwen3_moe":
        s["layer_types"] = ["sliding"] * L
    elif mt == "qwen2_moe":  # Qwen2MoeConfig: (i + 1) % 2 and i < max_window_layers
        s["layer_types"] = ["sliding" if i < mwl and i % 2 == 0 else "full" for i in range(L)]
    else:
        s["layer_types"] = ["sliding" if i >= mwl else "full" for i in range(L)]


def _gemma_layer_types(r, L, force_last_full):
    if r.has("layer_types"):
        return None
    pattern = r.int("sliding_window_pattern", "_sliding_window_pattern", default=6)
    lt = ["sliding" if (i + 1) % pattern else "full" for i in range(L)]
    if force_last_full and L:
        lt[-1] = "full"
    return lt


def _read_gemma3(r, s, ll, notes, warnings):
    """Gemma 3: 5 sliding : 1 full layers (sliding_window_pattern), head_dim 256 by default,
    per-head q/k norms, four norms per layer, gated GELU MLP, tied head."""
    L = s["num_layers"]
    s.update(ll)
    s.update(head_dim=r.int("head_dim", default=256), qk_norm="head", norms_per_layer=4,
             layer_types=_gemma_layer_types(r, L, force_last_full=False))
    if s["layer_types"] is None:
        del s["layer_types"]


def _read_gemma4(r, s, ll, notes, warnings):
    """Gemma 4 (transformers' Gemma4TextConfig): sliding layers of head_dim d and full layers of
    global_head_dim (512) with K = V when attention_k_eq_v; the last num_kv_shared_layers layers
    reuse an earlier layer's K/V (no k/v weights, no cache; MLP twice as wide with
    use_double_wide_mlp); per-layer embeddings (hidden_size_per_layer_input); optional MoE block
    beside the dense MLP in every layer."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll)
    d = r.int("head_dim", default=256)
    s.update(head_dim=d, qk_norm="head", norms_per_layer=4)
    L_cfg = r.int("num_hidden_layers", "num_layers") or L  # -l keeps the first L of them
    lt = _gemma_layer_types(r, L_cfg, force_last_full=True)
    if lt is None:
        lt = _layer_pattern(r, L_cfg, s)
        lt[-1] = "full"  # the config's last layer is global, as Gemma4TextConfig makes it
    lt = lt[:L]
    s["layer_types"] = lt
    d_g = r.int("global_head_dim", default=512)
    k_eq_v = r.bool("attention_k_eq_v", default=False)
    kv_g = r.int("num_global_key_value_heads", default=s["num_kv_heads"]) if k_eq_v else s["num_kv_heads"]
    n_shared = r.int("num_kv_shared_layers", lo=0, default=0)  # the config's last layers
    if n_shared >= L_cfg:
        r.fail("num_kv_shared_layers", f"leaves none of the {L_cfg} layers to hold the K/V it shares", n_shared)
    wide = r.bool("use_double_wide_mlp", default=False)
    p = r.int("hidden_size_per_layer_input", lo=0, default=256)
    r.used.add("vocab_size_per_layer_input")
    f = ll["ffn_hidden_size"]
    moe_block = r.bool("enable_moe_block", default=False)
    moe = None
    if moe_block:
        moe = {"kind": "moe", "width": r.int("moe_intermediate_size"), "linears": 3, "bias": False,
               "num_experts": r.int("num_experts"), "topk": r.int("top_k_experts"),
               "zero_experts": 0, "shared_width": 0, "shared_bias": False, "shared_gate": False,
               "router_bias": False}  # + router_extra below: its scale (h) and per-expert scale (E)
        if None in moe.values():
            raise ValueError(f"{r.where}: enable_moe_block needs num_experts, top_k_experts and moe_intermediate_size")
        moe["router_extra"] = h + moe["num_experts"]
    plc = r.sub("per_layer_config")  # written by transformers: {"05": {"head_dim": 512}, ...}
    per = {}
    if plc is not None:
        for key, val in plc.items():
            if not (isinstance(key, str) and key.isdigit() and isinstance(val, dict)):
                r.fail("per_layer_config", "must map layer numbers to objects", plc)
            sub = ConfigReader(val, f"{r.where} (per_layer_config {key})")
            per[int(key)] = {"head_dim": sub.int("head_dim"),
                             "kv_heads": sub.int("num_key_value_heads")}
    ov = {}
    for i in range(L):
        full = lt[i] == "full"
        shared = i >= L_cfg - n_shared  # with -l, the first L layers of the config
        if plc is not None:
            d_i = per.get(i, {}).get("head_dim") or d
            kv_i = per.get(i, {}).get("kv_heads") or s["num_kv_heads"]
        else:
            d_i, kv_i = (d_g, kv_g) if full else (d, s["num_kv_heads"])
        att = {"head_dim": d_i, "kv_heads": kv_i,
               "kv_proj": 0 if shared else (1 if full and k_eq_v else 2), "kv_shared": shared}
        o = {"attention": att, "norms": 4 + bool(p) + 3 * bool(moe)}  # + post-per-layer-input norm,
        if shared and wide:                                             # + the MoE branch's three
            o["mlp"] = {"width": 2 * f}
        if p:
            o["extra_params"] = 2 * p * h  # per-layer input gate (h -> p) and projection (p -> h)
        if moe:
            o["more_mlp"] = (moe,)
        ov[i] = o
    s["layer_overrides"] = ov
    if p:
        V_pl = r.int("vocab_size_per_layer_input", default=s["vocab_size"])
        s["per_layer_embedding_params"] = V_pl * L * p
        s["other_params"] = {"per_layer_model_projection": L * p * h, "per_layer_projection_norm": p}
        s["input_matmul_params"] = L * p * h  # every token's embedding runs through it once


def _read_olmo3(r, s, ll, notes, warnings):
    """OLMo 3: OLMo 2's block (post-norms only, q/k RMSNorms over all heads) with 3 sliding : 1 full
    layers."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, qk_norm="full")
    if not r.has("layer_types"):
        s["layer_types"] = ["full" if (i + 1) % 4 == 0 else "sliding" for i in range(L)]


def _read_smollm3(r, s, ll, notes, warnings):
    """SmolLM3: Llama block; every 4th layer without rotary positions (no_rope_layers), and with
    use_sliding_window those NoPE layers slide."""
    L = s["num_layers"]
    s.update(ll)
    s.update(num_kv_heads=r.int("num_key_value_heads", default=4),
             qkv_bias=r.bool("attention_bias", default=False), attn_out_bias=r.bool("attention_bias", default=False),
             mlp_bias=r.bool("mlp_bias", default=False), nope_layers=_nope_from_interval(r, L))
    if not r.has("layer_types"):
        slide = r.bool("use_sliding_window", default=False) and r.has("sliding_window")
        nope = set(s["nope_layers"])
        s["layer_types"] = ["sliding" if slide and i in nope else "full" for i in range(L)]


def _read_seed_oss(r, s, ll, notes, warnings):
    """Seed-OSS: biased q/k/v (attention_bias), o biased only with attention_out_bias."""
    s.update(ll)
    s.update(num_kv_heads=r.int("num_key_value_heads", default=8),
             head_dim=r.int("head_dim", default=128),
             qkv_bias=r.bool("attention_bias", default=True), attn_out_bias=r.bool("attention_out_bias", default=False),
             mlp_bias=r.bool("mlp_bias", default=False))


def _read_exaone4(r, s, ll, notes, warnings):
    """EXAONE 4: post-norms only, per-head q/k norms, no biases; 3 sliding : 1 full layers
    (sliding_window_pattern), the full layers without rotary positions when sliding is on."""
    L = s["num_layers"]
    s.update(ll)
    s.update(num_kv_heads=r.int("num_key_value_heads", default=32), qk_norm="head")
    w = (r.int("sliding_window", lo=0) or None)
    if not r.has("layer_types") and w:
        p = r.pick("sliding_window_pattern")[1]
        if isinstance(p, str):
            raise ValueError(f"{r.where}: sliding_window_pattern {p!r} needs layer_types (transformers "
                             "cannot derive them from a string either)")
        p = r.int("sliding_window_pattern", default=4)
        s["layer_types"] = ["sliding" if (i + 1) % p else "full" for i in range(L)]
    lt = s.get("layer_types") or _layer_pattern(r, L, s)
    if w and lt:
        s["nope_layers"] = [i for i in range(L) if lt[i] != "sliding"]


def _read_cohere2(r, s, ll, notes, warnings):
    """Cohere2 (Command R7B / A): one weight-only LayerNorm per layer feeding attention and MLP in
    parallel, 3 sliding : 1 full layers, rotary positions on the sliding layers only."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, norms_per_layer=1, parallel_attention=True,
             norm="rmsnorm")  # Cohere's LayerNorm has a weight and no bias: h weights, as RMSNorm
    w = (r.int("sliding_window", lo=0) or None)
    if not r.has("layer_types"):
        p = r.int("sliding_window_pattern", default=4)
        s["layer_types"] = ["sliding" if (i + 1) % p else "full" for i in range(L)] if w else None
    lt = s.get("layer_types") or _layer_pattern(r, L, s)
    s["nope_layers"] = [i for i in range(L) if not w or (lt and lt[i] != "sliding")]


# ======== llmcalc/model/families_hybrid.py ========================================================
# Family readers for hybrids with linear-attention or state-space layers (Qwen3-Next/3.5 Gated
# DeltaNet, OLMo hybrid, Mamba-2 mixers of Nemotron-H, GraniteMoeHybrid, Falcon-H1 and Jamba, LFM,
# Kimi Linear's KDA).

def _read_qwen_gdn(r, s, ll, notes, warnings):
    """Qwen3-Next and Qwen3.5 (dense and MoE): Gated DeltaNet layers with full-attention layers
    every full_attention_interval-th (default 4), as layer_types lists them. The attention layers
    have an elementwise output gate (q_proj twice as wide) and per-head q/k norms; MoE layers have
    one gated shared expert (Qwen3-Next: on layers (i + 1) % decoder_sparse_step == 0 not in
    mlp_only_layers; Qwen3.5-MoE: every layer, transformers reads neither field)."""
    mt, L = s["model_type"], s["num_layers"]
    s.update(ll, head_dim=r.int("head_dim", default=256), qk_norm="head",
             attn_output_gate="elementwise")
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    r.bool("attn_output_gate", default=True)  # Qwen3.5 writes it; its modeling gates either way
    s["linear_mixer"] = {
        "kind": "gdn", "heads": r.int("linear_num_value_heads", default=32),
        "kv_heads": r.int("linear_num_key_heads", default=16),
        "head_dim": r.int("linear_key_head_dim", default=128),
        "v_head_dim": r.int("linear_value_head_dim", default=128),
        "conv_kernel": r.int("linear_conv_kernel_dim", default=4),
        "state_chunk": GDN_CHUNK}
    if s["linear_mixer"]["heads"] % s["linear_mixer"]["kv_heads"]:
        raise ValueError(f"{r.where}: linear_num_value_heads {s['linear_mixer']['heads']} is not a multiple "
                         f"of linear_num_key_heads {s['linear_mixer']['kv_heads']}")
    if r.has("layer_types"):
        s["layer_types"] = _layer_pattern(r, L, s)
        if "sliding" in s["layer_types"] or "chunked" in s["layer_types"]:
            raise ValueError(f"{r.where}: layer_types of a {mt} model lists only linear_attention and "
                             "full_attention layers")
    else:
        n = r.int("full_attention_interval", default=4)
        s["layer_types"] = ["linear" if (i + 1) % n else "full" for i in range(L)]
    r.used.update(("full_attention_interval", "use_sliding_window", "sliding_window", "max_window_layers"))
    s["sliding_window"] = None
    if mt in ("qwen3_next", "qwen3_5_moe_text"):
        E = r.int("num_experts", "num_local_experts", lo=0, default=512 if mt == "qwen3_next" else 256)
        if mt == "qwen3_next":
            step = r.int("decoder_sparse_step", default=1)
            only = set(r.int_list("mlp_only_layers", default=[]))
            moe = [i for i in range(L) if E and i not in only and (i + 1) % step == 0]
        else:
            r.used.update(("decoder_sparse_step", "mlp_only_layers"))
            moe = list(range(L)) if E else []
        sh = r.int("shared_expert_intermediate_size", lo=0, default=512)
        s.update(moe=bool(moe), num_experts=E, topk=r.int("num_experts_per_tok", default=10 if mt == "qwen3_next" else 8),
                 moe_ffn_hidden_size=r.int("moe_intermediate_size", default=512),
                 num_shared_experts=1 if sh else 0, shared_expert_ffn_hidden_size=sh,
                 shared_expert_gate=bool(sh), moe_layer_set=moe)
    n_mtp = r.int("mtp_num_hidden_layers", lo=0, default=0)
    if n_mtp:
        s["mtp_layers_not_built"] = n_mtp
        warnings.append(f"{n_mtp} multi-token-prediction layer(s) (mtp_num_hidden_layers) are in the "
                        "checkpoint but not counted: transformers does not build them in the model")
    r.used.update(("mtp_use_dedicated_embeddings", "mamba_ssm_dtype"))


def _read_olmo_hybrid(r, s, ll, notes, warnings):
    """Olmo-Hybrid: Gated DeltaNet layers and OLMo-2-style attention layers (q/k norms over all
    heads, post-norms; NoPE without rope_theta: no weights either way), a dense SwiGLU MLP on every
    layer, 2 norms per layer. Defaults as OlmoHybridConfig derives them: key and value heads =
    num_attention_heads, d_k = int(0.75 h / H_k), d_v = 2 d_k; full attention where i % 4 == 3
    (the last layer if none is)."""
    L, a, h = s["num_layers"], s["num_attention_heads"], s["hidden_size"]
    s.update(ll, qk_norm="full")
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    hk = r.int("linear_num_key_heads", default=a)
    dk = r.int("linear_key_head_dim", default=int(0.75 * h / hk))
    s["linear_mixer"] = {"kind": "gdn", "heads": r.int("linear_num_value_heads", default=a),
                         "kv_heads": hk, "head_dim": dk,
                         "v_head_dim": r.int("linear_value_head_dim", default=2 * dk),
                         "conv_kernel": r.int("linear_conv_kernel_dim", default=4),
                         "state_chunk": GDN_CHUNK}
    if s["linear_mixer"]["heads"] % hk:
        raise ValueError(f"{r.where}: linear_num_value_heads {s['linear_mixer']['heads']} is not a multiple "
                         f"of linear_num_key_heads {hk}")
    r.bool("linear_allow_neg_eigval", default=True)  # beta in (0, 2): no weights
    if r.has("layer_types"):
        s["layer_types"] = _layer_pattern(r, L, s)
        if "sliding" in s["layer_types"] or "chunked" in s["layer_types"]:
            raise ValueError(f"{r.where}: layer_types of an olmo_hybrid model lists only linear_attention "
                             "and full_attention layers")
    else:
        lt = ["full" if i % 4 == 3 else "linear" for i in range(L)]
        if "full" not in lt:
            lt[-1] = "full"
        s["layer_types"] = lt
    s["sliding_window"] = None
    r.used.add("sliding_window")


def _mamba2_mixer(r, s, *, d_in, heads, head_dim, groups, state, conv, chunk, in_bias, out_bias,
                  conv_bias, gated_norm):
    """The spec's linear_mixer for a family's Mamba-2 layers; the head width must tile d_in."""
    if heads * head_dim != d_in:
        raise ValueError(f"{r.where}: Mamba-2 heads {heads} x head dim {head_dim} must equal its inner width {d_in}")
    if heads % groups:
        raise ValueError(f"{r.where}: Mamba-2 heads {heads} are not a multiple of its {groups} groups")
    s["linear_mixer"] = {"kind": "mamba2", "heads": heads, "kv_heads": groups, "head_dim": head_dim,
                         "v_head_dim": head_dim, "state_size": state, "conv_kernel": conv, "state_chunk": chunk,
                         "in_bias": in_bias, "mixer_out_bias": out_bias, "conv_bias": conv_bias,
                         "gated_norm": gated_norm}


def _mamba_head_dim(r, key, d_in, heads):
    """Granite/Falcon's mamba_d_head: a number, or "auto" (d_in // heads, as their configs derive it)."""
    if r.cfg.get(key) == "auto" or not r.has(key):
        r.used.add(key)
        return d_in // heads
    return r.int(key, hi=2**20)


_NEMOTRON_BLOCKS = {"M": "mamba", "E": "moe", "*": "attention", "-": "mlp", "linear_attention": "mamba",
                    "mamba": "mamba", "moe": "moe", "full_attention": "attention", "attention": "attention",
                    "mlp": "mlp"}


def _nemotron_blocks(r):
    """Nemotron-H's per-layer block kinds: layers_block_type (alias layer_types), else the legacy
    hybrid_override_pattern string, else NemotronHConfig's default 4 layers."""
    if r.has("layers_block_type") or r.has("layer_types"):
        key = "layers_block_type" if r.has("layers_block_type") else "layer_types"
        pat = r.str_list(key, choices=set(_NEMOTRON_BLOCKS) - {"M", "E", "*", "-"})
    elif r.has("hybrid_override_pattern"):
        text = r.str("hybrid_override_pattern")
        if not text or any(ch not in "ME*-" for ch in text):
            r.fail("hybrid_override_pattern", "must be a string of M, E, * and -", text)
        pat = list(text)
    else:
        pat = ["M", "E", "*", "-"]
    if not pat:
        raise ValueError(f"{r.where}: the layer pattern is empty")
    return [_NEMOTRON_BLOCKS[x] for x in pat]


def _read_nemotron_h(r, s, ll, notes, warnings):
    """Nemotron-H (Nemotron 3): each layer is ONE block after its norm, a Mamba-2 mixer, an
    attention (no biases, no positions), a non-gated ReLU^2 MLP or a MoE (non-gated ReLU^2 experts,
    one shared expert of moe_shared_expert_intermediate_size, a router with a score-correction
    buffer that is not a weight), from layers_block_type (or the legacy hybrid_override_pattern
    M/E/*/-). Mamba inner width = mamba_num_heads x mamba_head_dim (expand is not read); in/out
    projection biases from use_bias. transformers never ties the head; MTP layers are not built."""
    blocks = _nemotron_blocks(r)
    if s["_layers_from_flag"]:
        if s["num_layers"] > len(blocks):
            raise ValueError(f"--num-layers {s['num_layers']} is more than the {len(blocks)} layers the "
                             "config's layer pattern describes")
        blocks = blocks[:s["num_layers"]]
    elif len(blocks) != s["num_layers"]:
        warnings.append(f"num_hidden_layers {s['num_layers']} differs from the {len(blocks)} layers of the "
                        "pattern: the pattern's count is used, as transformers does")
    s["num_layers"] = len(blocks)
    s.update(ll, num_mlp_linears=2, qkv_bias=False, attn_out_bias=False, norms_per_layer=1,
             head_dim=r.int("head_dim", default=128), tied_embeddings=False,
             mlp_bias=r.bool("mlp_bias", default=False))
    r.bool("tie_word_embeddings", default=False)
    r.bool("attention_bias", default=False)  # read, not used: NemotronHAttention has no biases
    s["layer_types"] = ["linear" if b == "mamba" else "full" for b in blocks]
    s["layer_blocks"] = ["mlp" if b in ("moe", "mlp") else "mixer" for b in blocks]
    H = r.int("mamba_num_heads", default=128)
    P = r.int("mamba_head_dim", default=64)
    bias = r.bool("use_bias", default=False)
    _mamba2_mixer(r, s, d_in=H * P, heads=H, head_dim=P, groups=r.int("n_groups", "mamba_n_groups", default=8),
                  state=r.int("ssm_state_size", default=128), conv=r.int("conv_kernel", "mamba_d_conv", default=4),
                  chunk=r.int("chunk_size", "mamba_chunk_size", default=128), in_bias=bias, out_bias=bias,
                  conv_bias=r.bool("use_conv_bias", "mamba_conv_bias", default=True), gated_norm=True)
    r.used.update(("expand", "mamba_proj_bias", "n_shared_experts", "mamba_ssm_cache_dtype"))
    if r.int("moe_latent_size", default=0, lo=0):
        raise ValueError(f"{r.where}: moe_latent_size (latent MoE projections) is not described by this script yet")
    moe = [i for i, b in enumerate(blocks) if b == "moe"]
    if moe:
        f_e = r.int("moe_intermediate_size", default=2688)
        sh = r.int("moe_shared_expert_intermediate_size", lo=0, default=5376)
        s.update(moe=True, num_experts=r.int("n_routed_experts", default=128),
                 topk=r.int("num_experts_per_tok", default=6), moe_ffn_hidden_size=f_e,
                 num_shared_experts=1 if sh else 0, shared_expert_ffn_hidden_size=sh, shared_expert_gate=False,
                 router_bias=False, expert_bias=False, moe_layer_set=moe)
    _note_mtp(r, s)


def _read_granitemoehybrid(r, s, ll, notes, warnings):
    """Granite 4 hybrids: every layer a mixer (Mamba-2 on linear_attention / mamba layers, attention
    elsewhere; all Mamba-2 when layer_types is absent, the config's default) and, after the second
    norm, a MoE of gated experts of width intermediate_size plus an ungated shared MLP of
    shared_intermediate_size (a dense gated MLP of that width when num_local_experts is 0). Mamba
    inner width int(mamba_expand x h); the multipliers are scalars, not weights."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    key = "layer_types" if r.has("layer_types") else "layers_block_type"
    lt = r.str_list(key, choices={"linear_attention", "mamba", "full_attention", "attention"}, length=L)
    s["layer_types"] = (["linear" if t in ("linear_attention", "mamba") else "full" for t in lt] if lt
                        else ["linear"] * L)
    _granite_mamba2(r, s)
    E = r.int("num_local_experts", "num_experts", lo=0, default=8)
    sh = r.int("shared_intermediate_size", default=1024)
    if E:
        s.update(moe=True, num_experts=E, topk=r.int("num_experts_per_tok", default=2),
                 moe_ffn_hidden_size=ll["ffn_hidden_size"], num_shared_experts=1,
                 shared_expert_ffn_hidden_size=sh, shared_expert_gate=False, moe_layer_set=list(range(L)))
    else:
        s["ffn_hidden_size"] = sh  # the shared MLP is the layer's only MLP
    r.used.add("intermediate_size")


def _granite_mamba2(r, s):
    """The Mamba-2 mixer of Granite 4 hybrids and Bamba: inner width int(mamba_expand x h) in
    mamba_n_heads heads of mamba_d_head, mamba_n_groups groups of mamba_d_state, projection biases
    with mamba_proj_bias, a gated RMSNorm."""
    d_in = int(r.num("mamba_expand", default=2) * s["hidden_size"])
    H = r.int("mamba_n_heads", default=128)
    pb = r.bool("mamba_proj_bias", default=False)
    _mamba2_mixer(r, s, d_in=d_in, heads=H, head_dim=_mamba_head_dim(r, "mamba_d_head", d_in, H),
                  groups=r.int("mamba_n_groups", default=1), state=r.int("mamba_d_state", default=256),
                  conv=r.int("mamba_d_conv", default=4), chunk=r.int("mamba_chunk_size", default=256),
                  in_bias=pb, out_bias=pb, conv_bias=r.bool("mamba_conv_bias", default=True), gated_norm=True)


def _read_falcon_h1(r, s, ll, notes, warnings):
    """Falcon-H1: every layer runs attention and a Mamba-2 mixer side by side on the same normed
    input, then a gated MLP (2 norms). Mamba inner width mamba_d_ssm (or int(mamba_expand x h)),
    in_proj bias mamba_proj_bias, out_proj bias projectors_bias, a gated RMSNorm only with
    mamba_rms_norm. The muP multipliers are scalars; mup_vector is a buffer, not a weight."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll, mlp_bias=r.bool("mlp_bias", default=False))
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    # mamba_d_ssm (FalconH1Config's default 1024 when absent), or int(mamba_expand x h) when null
    d_in = (r.int("mamba_d_ssm") or int(r.num("mamba_expand", default=2) * h)
            if "mamba_d_ssm" in r.cfg else 1024)
    H = r.int("mamba_n_heads", default=128)
    _mamba2_mixer(r, s, d_in=d_in, heads=H, head_dim=_mamba_head_dim(r, "mamba_d_head", d_in, H),
                  groups=r.int("mamba_n_groups", default=1), state=r.int("mamba_d_state", default=256),
                  conv=r.int("mamba_d_conv", default=4), chunk=r.int("mamba_chunk_size", default=256),
                  in_bias=r.bool("mamba_proj_bias", default=False), out_bias=r.bool("projectors_bias", default=False),
                  conv_bias=r.bool("mamba_conv_bias", default=True),
                  gated_norm=r.bool("mamba_rms_norm", default=False))
    r.bool("mamba_norm_before_gate", default=True)
    s["layer_types"] = ["hybrid"] * L


def _read_jamba(r, s, ll, notes, warnings):
    """Jamba: attention on layers i % attn_layer_period == attn_layer_offset (no biases, no
    positions, head_dim h / a), Mamba-1 elsewhere (inner width mamba_expand x h, dt rank "auto" =
    ceil(h / 16), RMSNorms on dt, B and C); a MoE of gated experts on layers i % expert_layer_period
    == expert_layer_offset when num_experts > 1 (router without bias, no shared expert), a gated
    dense MLP elsewhere; 2 norms per layer."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll, qkv_bias=False, attn_out_bias=False)
    ap, ao = r.int("attn_layer_period", default=8), r.int("attn_layer_offset", lo=0, default=4)
    ep, eo = r.int("expert_layer_period", default=2), r.int("expert_layer_offset", lo=0, default=1)
    if ao >= ap or eo >= ep:
        raise ValueError(f"{r.where}: attn_layer_offset / expert_layer_offset must be below their period")
    s["layer_types"] = ["full" if i % ap == ao else "linear" for i in range(L)]
    E = int(r.num("mamba_expand", default=2) * h)
    rank = r.cfg.get("mamba_dt_rank", "auto")
    R = -(-h // 16) if rank == "auto" else r.int("mamba_dt_rank")
    if R is None:  # null: JambaConfig keeps None and the model cannot be built
        r.fail("mamba_dt_rank", 'must be an integer or "auto"', rank)
    r.used.add("mamba_dt_rank")
    pb = r.bool("mamba_proj_bias", default=False)
    s["linear_mixer"] = {"kind": "mamba1", "heads": E, "kv_heads": E, "head_dim": 1, "v_head_dim": 1,
                         "state_size": r.int("mamba_d_state", default=16), "dt_rank": R,
                         "conv_kernel": r.int("mamba_d_conv", default=4), "state_chunk": 0,
                         "in_bias": pb, "mixer_out_bias": pb, "conv_bias": r.bool("mamba_conv_bias", default=True),
                         "dt_norms": True}
    n_exp = r.int("num_experts", "num_local_experts", default=16)
    if n_exp > 1:
        s.update(moe=True, num_experts=n_exp, topk=r.int("num_experts_per_tok", default=2),
                 moe_ffn_hidden_size=ll["ffn_hidden_size"], moe_layer_set=[i for i in range(L) if i % ep == eo])
    r.used.update(("use_mamba_kernels", "use_mambapy", "use_associative_scan"))


def _read_lfm3(r, s, ll, notes, warnings):
    """LFM3: per layer_types a short-convolution block (in_proj h -> 3h for B, C, x, a depthwise conv
    of conv_L_cache taps, out_proj; biases with conv_bias) or attention (full, or sliding within
    sliding_window), each followed by a gated dense MLP. Attention: per-head q/k norms, a per-head
    sigmoid output gate (g_proj h -> a) with use_attention_gate, biases with attention_bias.
    4 norms per layer with use_sandwich_norm (2 without). Default pattern: full where i % 4 == 2,
    sliding where i % 4 == 0 and i > 0, conv elsewhere."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll, qk_norm="head", head_dim=r.int("head_dim", default=128),
             norms_per_layer=4 if r.bool("use_sandwich_norm", default=True) else 2,
             attn_output_gate="headwise" if r.bool("use_attention_gate", default=True) else "none")
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    lt = r.str_list("layer_types", choices={"conv", "full_attention", "sliding_attention"}, length=L)
    if lt is None:
        lt = ["full_attention" if i % 4 == 2 else "sliding_attention" if i % 4 == 0 and i > 0 else "conv"
              for i in range(L)]
    s["layer_types"] = [{"conv": "linear", "full_attention": "full", "sliding_attention": "sliding"}[t] for t in lt]
    if "sliding" in s["layer_types"]:
        s["sliding_window"] = r.int("sliding_window", default=256)
    s["linear_mixer"] = {"kind": "shortconv", "heads": h, "kv_heads": h, "head_dim": 1, "v_head_dim": 1,
                         "conv_kernel": r.int("conv_L_cache", default=7), "state_chunk": 0,
                         "conv_bias": r.bool("conv_bias", default=False)}


def _read_kimi_linear(r, s, ll, notes, warnings):
    """Kimi Linear: KDA layers and NoPE MLA layers (layer_types, else linear_attn_config's 1-based
    kda_layers / full_attn_layers, else MLA where i > 0 and i % 4 == 0), a dense first layer
    (mlp_layer_types, else first_k_dense_replace, default 1) and MoE (gated experts, num_shared_experts
    shared, a router whose score correction is a buffer); the head is never tied. KDA's heads, head
    dim and conv kernel from linear_attn_config where it has them, else linear_num_heads /
    linear_head_dim / linear_conv_kernel_dim."""
    L = s["num_layers"]
    s.update(ll, tied_embeddings=False)
    r.bool("tie_word_embeddings", default=False)  # KimiLinearForCausalLM ties nothing
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, position_embedding="none")
    lac = r.sub("linear_attn_config") or {}
    sub = ConfigReader(lac, f"{r.where} (linear_attn_config)")
    H = sub.int("num_heads", default=None) or r.int("linear_num_heads", default=32)
    d = sub.int("head_dim", default=None) or r.int("linear_head_dim", default=128)
    K = sub.int("short_conv_kernel_size", default=None) or r.int("linear_conv_kernel_dim", default=4)
    s["linear_mixer"] = {"kind": "kda", "heads": H, "kv_heads": H, "head_dim": d, "v_head_dim": d,
                         "conv_kernel": K, "state_chunk": GDN_CHUNK}
    if r.has("layer_types"):
        s["layer_types"] = _layer_pattern(r, L, s)
    elif "full_attn_layers" in lac and "kda_layers" in lac:
        n = r.int("num_hidden_layers")  # the lists number the config's layers; -l cuts after
        full = sub.int_list("full_attn_layers", lo=1, hi=n)
        kda = sub.int_list("kda_layers", lo=1, hi=n)
        lt = [None] * n
        for i in full:
            lt[i - 1] = "full"
        for i in kda:
            lt[i - 1] = "linear"
        if None in lt:
            raise ValueError(f"{r.where}: linear_attn_config's kda_layers and full_attn_layers leave layer "
                             f"{lt.index(None) + 1} (1-based) without a kind")
        s["layer_types"] = lt[:L]
    else:
        s["layer_types"] = ["full" if i and i % 4 == 0 else "linear" for i in range(L)]
    if any(t not in ("full", "linear") for t in s["layer_types"]):
        raise ValueError(f"{r.where}: a kimi_linear model has only linear_attention and full_attention layers")
    s["sliding_window"] = None
    E = r.int("num_experts", "num_local_experts", default=256)
    f_e = r.int("moe_intermediate_size", default=1024)
    n_sh = r.int("num_shared_experts", "n_shared_experts", lo=0, default=1)
    dense = [i for i in range(r.int("first_k_dense_replace", lo=0, default=1))]
    s.update(moe=True, num_experts=E, topk=r.int("num_experts_per_token", "num_experts_per_tok", default=8),
             moe_ffn_hidden_size=f_e, num_shared_experts=n_sh, shared_expert_ffn_hidden_size=n_sh * f_e,
             router_bias=False, moe_layer_set=_mlp_pattern(r, L, dense))
    _read_mla(r, s)
    r.used.update(("moe_layer_freq", "mla_use_nope", "use_grouped_topk", "moe_router_activation_func", "head_dim"))


# ======== llmcalc/model/families_more.py ==========================================================
# Family readers for the attention decoders transformers 5.24 builds beyond the first families:
# Llama-style blocks with other norms, biases, MLPs, gates or q/k norms (GLM, GLM-4, OLMo, OLMoE,
# FlexOlmo, Hunyuan, HyperCLOVA X, Granite SWA, Arcee, Jais 2, Nemotron, Apertus, Cohere, StableLM,
# Persimmon, Phi-1/2, GPT-J, CodeGen, GPT-Neo, MPT, XGLM, ...), MoE and MLA variants (MiMo-V2-Flash,
# MiniMax-M3, EXAONE MoE, AFMoE, Hunyuan V4, Gemma 3n, ...), and the text models of the
# vision-language wrappers that reuse a text family (Qwen2-VL, Qwen3-VL, GLM-4V, ...); the
# state-space and linear-attention families are in families_state.py. Each reader
# is a few lines: the switches its modeling_<family>.py sets (checked against the meta-device build,
# tests/test_all_types.py).

def _llama(r, s, ll, notes, warnings, base, **over):
    """The Llama-style reading of `base` (a model_type _read_llama_like knows), then `over`."""
    mt = s["model_type"]
    s["model_type"] = base
    _read_llama_like(r, s, ll, notes, warnings)
    s["model_type"] = mt
    s.update(over)


def _read_glm(r, s, ll, notes, warnings):
    """GLM / GLM-4 (and GLM-4V's text model): biased q/k/v, unbiased o, a fused gate/up MLP; GLM-4
    adds a norm after attention and after the MLP (4 per layer)."""
    _llama(r, s, ll, notes, warnings, "llama", attn_out_bias=False,
           qkv_bias=r.bool("attention_bias", default=s["model_type"] != "glm_ocr_text"))  # GlmOcrTextConfig: no biases
    if s["model_type"] != "glm":
        s["norms_per_layer"] = 4


def _read_glm4v_moe(r, s, ll, notes, warnings):
    """GLM-4.5V's text model: GLM-4.5's MoE block with biased q/k/v (attention_bias)."""
    _read_glm4_moe(r, s, ll, notes, warnings)
    s["qkv_bias"] = r.bool("attention_bias", default=True)


def _read_olmoe(r, s, ll, notes, warnings):
    """OLMoE / FlexOlmo: q/k RMSNorms over all heads, every layer a MoE of num_experts gated experts
    of width intermediate_size (FlexOlmo: OLMo-2's post-norms, the same count of norms)."""
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="full")
    _read_generic_moe(r, s, notes)
    notes.pop()


def _read_hunyuan(r, s, ll, notes, warnings):
    """Hunyuan V1 dense and MoE: per-head q/k RMSNorms (query_layernorm / key_layernorm with
    use_qk_norm); the MoE layer has num_experts experts of width moe_intermediate_size (else
    intermediate_size), a router h -> E (no bias), and num_shared_expert shared MLPs of width
    intermediate_size. Per-layer lists are read when every layer has the same value."""
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head" if r.bool("use_qk_norm", default=True) else "none")
    if s["model_type"] != "hunyuan_v1_moe":
        return
    f = s["ffn_hidden_size"]
    E = _same_int(r, "num_experts", 1)
    k = _same_int(r, "moe_topk", 1)
    n_sh = _same_int(r, "num_shared_expert", 1)
    f_e = _same_int(r, "moe_intermediate_size", f)
    s.update(moe=True, num_experts=E, topk=k, moe_ffn_hidden_size=f_e, num_shared_experts=n_sh,
             shared_expert_ffn_hidden_size=n_sh * f)


def _same_int(r, key, default):
    """An integer field that a family may also write as a per-layer list of one value."""
    v = r.cfg.get(key)
    if isinstance(v, list) and v and all(x == v[0] for x in v):
        r.used.add(key)
        v = v[0]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            r.fail(key, "must list non-negative integers", r.cfg.get(key))
        return v
    if isinstance(v, list):
        r.fail(key, "differs between layers, which this script does not describe", v)
    return r.int(key, default=default, lo=0)


def _read_post_norm(r, s, ll, notes, warnings):
    """HyperCLOVA X: a Llama block with a norm after attention and after the MLP (use_post_norm)."""
    _llama(r, s, ll, notes, warnings, "llama")
    if r.bool("use_post_norm", default=True):
        s["norms_per_layer"] = 4


def _read_sinks(r, s, ll, notes, warnings):
    """Granite SWA (dense and MoE): a Granite block with a learned sink logit per head, sliding and full layers
    as layer_types lists them."""
    if s["model_type"] == "granitemoe_swa":
        _read_granitemoe(r, s, ll, notes, warnings)
    else:
        _llama(r, s, ll, notes, warnings, "llama")
    s["attention_sinks"] = True
    r.used.add("layer_rope_theta")


def _read_two_linear(r, s, ll, notes, warnings):
    """Llama-style blocks whose MLP is two matrices (up, down; ReLU^2 or xIELU): Arcee, Nemotron
    (LayerNorm1p, weight and bias), Jais 2 (LayerNorm, biases on attention with attention_bias and
    on the MLP with mlp_bias), Apertus (per-head q/k RMSNorms, two learned xIELU scalars per MLP)."""
    mt = s["model_type"]
    _llama(r, s, ll, notes, warnings, "llama", num_mlp_linears=2)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=r.bool("mlp_bias", default=False))
    if mt in ("nemotron", "jais2"):  # (Cosmos 3 Edge's text model: RMSNorms, no biases)
        s["norm"] = "layernorm"
    if mt in ("apertus", "apertus1p5_text"):
        s.update(qk_norm="head", mlp_act_params=2)


def _read_olmo(r, s, ll, notes, warnings):
    """OLMo (1): LayerNorms without weights or bias; no biases."""
    _llama(r, s, ll, notes, warnings, "llama", norm="none")


def _read_cohere(r, s, ll, notes, warnings):
    """Cohere (Command R): one weight-only LayerNorm per layer feeding attention and MLP in
    parallel; per-head q/k LayerNorms (weights only) with use_qk_norm; Cohere 2 MoE: every layer a
    MoE of num_experts gated experts."""
    _llama(r, s, ll, notes, warnings, "llama", norms_per_layer=1, parallel_attention=True)
    if r.bool("use_qk_norm", default=False):
        s["qk_norm"] = "full"  # one weight per head and channel
    if s["model_type"] == "cohere2_moe":
        _read_generic_moe(r, s, notes)
        notes.pop()


def _read_stablelm(r, s, ll, notes, warnings):
    """StableLM: LayerNorms, q/k/v biases with use_qkv_bias, a gated MLP without biases; one norm
    with use_parallel_residual."""
    bias = r.bool("use_qkv_bias", default=False)
    par = r.bool("use_parallel_residual", default=False)
    _llama(r, s, ll, notes, warnings, "llama", norm="layernorm", qkv_bias=bias, attn_out_bias=False,
           parallel_attention=par, norms_per_layer=1 if par else 2)
    if r.bool("qk_layernorm", default=False):
        s.update(qk_norm="full", attn_norm="layernorm")  # a LayerNorm per head


def _read_persimmon(r, s, ll, notes, warnings):
    """Persimmon (and Fuyu's text model): LayerNorms, biases everywhere, a two-matrix ReLU^2 MLP,
    per-head q/k LayerNorms with qk_layernorm."""
    _llama(r, s, ll, notes, warnings, "llama", norm="layernorm", num_mlp_linears=2, qkv_bias=True,
           attn_out_bias=True, mlp_bias=True, attn_norm="layernorm",
           qk_norm="head" if r.bool("qk_layernorm", default=True) else "none")


def _read_phi(r, s, ll, notes, warnings):
    """Phi-1/1.5/2: one LayerNorm per layer feeding attention and MLP in parallel, biases
    everywhere, a two-matrix GELU MLP, per-head q/k LayerNorms with qk_layernorm."""
    _llama(r, s, ll, notes, warnings, "llama", norm="layernorm", num_mlp_linears=2, qkv_bias=True,
           attn_out_bias=True, mlp_bias=True, norms_per_layer=1, parallel_attention=True,
           attn_norm="layernorm", qk_norm="head" if r.bool("qk_layernorm", default=False) else "none",
           other_params={"lm_head_bias": s["vocab_size"]})


def _read_gptj(r, s, ll, notes, warnings):
    """GPT-J / CodeGen: one LayerNorm per layer feeding attention and MLP in parallel, no
    attention biases, a two-matrix GELU MLP of n_inner (default 4 h) with biases, rotary on
    rotary_dim of each head, an untied biased head."""
    h = s["hidden_size"]
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=False, attn_out_bias=False, mlp_bias=True,
             position_embedding="rope", norms_per_layer=1, parallel_attention=True,
             num_kv_heads=s["num_attention_heads"], head_dim=h // s["num_attention_heads"],
             ffn_hidden_size=r.int("n_inner", default=4 * h),
             other_params={"lm_head_bias": s["vocab_size"]})
    r.int("rotary_dim", default=None)
    r.used.update(("n_positions", "n_ctx"))


def _read_gpt_neo(r, s, ll, notes, warnings):
    """GPT-Neo: GPT-2's block (learned positions, LayerNorms, MLP of intermediate_size, default 4 h)
    with unbiased q/k/v, a biased output, and local layers attending within window_size
    (attention_layers: global / local)."""
    h, L = s["hidden_size"], s["num_layers"]
    rows = r.int("max_position_embeddings")
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=False, attn_out_bias=True, mlp_bias=True,
             position_embedding="learned", position_embedding_rows=rows, num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"], ffn_hidden_size=r.int("intermediate_size", default=4 * h))
    kinds = r.str_list("attention_layers", choices={"global", "local"}, length=L)
    r.used.add("attention_types")
    if kinds and "local" in kinds:
        s["layer_types"] = ["sliding" if k == "local" else "full" for k in kinds]
        s["sliding_window"] = r.int("window_size", default=256)


def _read_mellum(r, s, ll, notes, warnings):
    """Mellum: a Qwen3-MoE block (per-head q/k RMSNorms) whose MoE and dense layers
    mlp_layer_types lists (sparse / dense), experts of moe_intermediate_size."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    moe = _mlp_pattern(r, L, default_dense=())
    s.update(moe=bool(moe), num_experts=r.int("num_local_experts", "num_experts"),
             topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=r.int("moe_intermediate_size"),
             moe_layer_set=moe)


def _read_mla_family(r, s, ll, notes, warnings):
    """MLA decoders outside DeepSeek's own types (GLM-4.7-Flash `glm4_moe_lite`, Youtu, MiniCPM3):
    DeepSeek-V2's latent attention (kv_lora_rank, q_lora_rank), and where experts are given,
    routed + shared experts on the MoE layers of mlp_layer_types (else from first_k_dense_replace)."""
    _llama(r, s, ll, notes, warnings, "llama")
    _read_mla(r, s)
    if r.has("n_routed_experts") or r.has("num_experts"):
        _read_routed_shared(r, s, s["num_layers"], dense=range(r.int("first_k_dense_replace", lo=0, default=0)))


def _read_routed_moe(r, s, ll, notes, warnings):
    """Llama-style MoE decoders with per-head q/k norms, dense layers first and routed + shared
    experts (EXAONE MoE, AFMoE): the MoE layers from mlp_layer_types, else after
    first_k_dense_replace / num_dense_layers; AFMoE's attention has a sigmoid output gate (h -> a d),
    four norms per layer and a per-expert bias parameter in its router."""
    mt = s["model_type"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    n_dense = r.int("first_k_dense_replace", "num_dense_layers", lo=0, default=0)
    _read_routed_shared(r, s, s["num_layers"], dense=range(n_dense))
    if mt == "afmoe":  # + norms after attention and MLP, and a learned per-expert routing bias
        s.update(attn_output_gate="elementwise", norms_per_layer=4, router_has_bias=True)
        r.used.update(("global_attn_every_n_layers", "mup_enabled"))


def _read_bitnet(r, s, ll, notes, warnings):
    """BitNet b1.58: a Llama block with an RMSNorm before o_proj (h) and before down_proj (f)."""
    _llama(r, s, ll, notes, warnings, "llama", attn_extra_weights=s["hidden_size"],
           mlp_act_params=ll["ffn_hidden_size"])


def _read_diffllama(r, s, ll, notes, warnings):
    """DiffLlama (differential attention): a Llama block with four learned lambda vectors of
    head_dim per attention (lambda_q1, k1, q2, k2)."""
    _llama(r, s, ll, notes, warnings, "llama")
    s["attn_extra_weights"] = 4 * s["head_dim"]


def _read_phi4mm(r, s, ll, notes, warnings):
    """Phi-4-multimodal's language model: Phi-3's block (fused qkv and gate/up, no biases); its
    causal-LM class also holds the image and audio embedders (embed_tokens_extend), not counted."""
    _llama(r, s, ll, notes, warnings, "phi3")
    warnings.append("multimodal 'phi4_multimodal': the language model is counted; the image and audio "
                    "embedders (embed_tokens_extend) are not counted")


def _read_mllama(r, s, ll, notes, warnings):
    """Llama 3.2 Vision's text model: a Llama block, and on cross_attention_layers a cross-attention
    block of the same projections with per-head q/k RMSNorms and two tanh gates (attention, MLP);
    the token table has 8 more rows than the head (vocab_size + 8, MllamaTextModel)."""
    L, h = s["num_layers"], s["hidden_size"]
    _llama(r, s, ll, notes, warnings, "llama")
    cross = [i for i in r.int_list("cross_attention_layers", default=[]) if i < L]
    s["layer_overrides"] = {i: {"attention": {"qk_norm": "head", "extra_weights": 2}} for i in cross}
    s["other_params"] = {"image_token_rows": 8 * h}
    if cross:
        warnings.append(f"{len(cross)} cross-attention layers (cross_attention_layers) attend to the image "
                        "tokens: counted as weights; their FLOPs and cache are taken as self-attention's")


def _read_ernie45_vl(r, s, ll, notes, warnings):
    """ERNIE-4.5-VL MoE's text model: on the sparse layers of mlp_layer_types a text MoE and a vision
    MoE side by side (moe_num_experts each, widths moe_intermediate_size [text, vision], top
    moe_k, routers with a learned score-correction bias), shared experts of the text width; gated
    dense MLPs elsewhere; tied head."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama")
    widths = r.int_list("moe_intermediate_size", lo=1, length=2)
    E, k, n_sh = r.int("moe_num_experts"), r.int("moe_k"), r.int("moe_num_shared_experts", lo=0, default=0)
    moe = _mlp_pattern(r, L, default_dense=(0,))
    s.update(moe=bool(moe), num_experts=E, topk=k, moe_ffn_hidden_size=widths[0], num_shared_experts=n_sh,
             shared_expert_ffn_hidden_size=n_sh * widths[0], router_has_bias=True, moe_layer_set=moe)
    vision = {"kind": "moe", "width": widths[1], "linears": 3, "bias": False, "num_experts": E, "topk": k,
              "zero_experts": 0, "shared_width": 0, "shared_bias": False, "shared_gate": False, "router_bias": True}
    s["layer_overrides"] = {i: {"more_mlp": (vision,)} for i in moe}
    r.bool("use_bias", default=False)
    if moe:
        warnings.append("ERNIE-4.5-VL: each sparse layer also holds a vision MoE (counted); active counts k of "
                        "its experts, as an image token runs them (a text token runs none)")


def _read_molmo2(r, s, ll, notes, warnings):
    """Molmo 2's text model: a Llama block with per-head q/k RMSNorms (qk_norm_type qwen3; over all
    heads for olmo) and additional_vocab_size more token rows than the head."""
    _llama(r, s, ll, notes, warnings, "llama",
           qk_norm="full" if r.str("qk_norm_type", default="qwen3") == "olmo" else "head")
    extra = r.int("additional_vocab_size", lo=0, default=0)
    if extra:
        s["other_params"] = {"additional_vocab": extra * s["hidden_size"]}
    r.used.update(("rope_scaling_layers", "norm_after"))


def _read_mpt(r, s, ll, notes, warnings):
    """MPT: ALiBi (or learned positions with learned_pos_emb and no alibi), a fused q/k/v and an
    output projection, a two-matrix GELU MLP of expansion_ratio x d_model, LayerNorms; no biases
    and weight-only norms with no_bias; attention settings in attn_config (qk_ln: LayerNorms over
    q and k of width d_model each)."""
    h = s["hidden_size"]
    sub = r.sub("attn_config") or {}
    alibi = sub.get("alibi", False) is True
    no_bias = r.bool("no_bias", default=True)
    s.update(norm="rmsnorm" if no_bias else "layernorm", num_mlp_linears=2, qkv_bias=not no_bias,
             attn_out_bias=not no_bias, mlp_bias=not no_bias, num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"],
             ffn_hidden_size=int(r.num("expansion_ratio", default=4) * h),
             position_embedding="alibi" if alibi else "learned")
    if not alibi:
        s["position_embedding_rows"] = r.int("max_seq_len", default=2048)
    if sub.get("qk_ln"):
        s.update(qk_norm="full", attn_norm="layernorm" if not no_bias else "rmsnorm")
    r.used.update(("learned_pos_emb", "max_seq_len", "norm_type"))


def _read_mimo_v2(r, s, ll, notes, warnings):
    """MiMo-V2-Flash: keys of head_dim and values of v_head_dim (narrower); sliding layers have twice
    num_key_value_heads and a sink logit per head (modeling_mimo_v2_flash); dense layers and MoE
    layers (routed experts, a router whose score correction is a buffer) from mlp_layer_types."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama")
    dv = r.int("v_head_dim", default=s["head_dim"])
    _read_routed_shared(r, s, L, dense=())
    lt = s["layer_types"] = _layer_pattern(r, L, s) or ["full"] * L
    over = {}
    for i in range(L):
        a = {"v_dim": dv}
        if lt[i] == "sliding":
            a.update(kv_heads=2 * s["num_kv_heads"], sinks=True)
        over[i] = {"attention": a}
    s["layer_overrides"] = over
    r.used.add("attention_value_scale")


def _read_minimax_m3(r, s, ll, notes, warnings):
    """MiniMax-M3 (VL text model): per-head q/k RMSNorms; MoE layers of mlp_layer_types with
    num_local_experts experts of intermediate_size and one shared expert of
    shared_intermediate_size; dense layers of dense_intermediate_size. Layers listed as
    indexed_attention are refused (their indexer is not described)."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    lt = r.str_list("layer_types", choices={"full_attention", "sliding_attention", "indexed_attention"}, length=L)
    if lt and "indexed_attention" in lt:
        raise ValueError(f"{r.where}: indexed_attention layers (a top-k block indexer) are not counted by this "
                         "script yet")
    moe = _mlp_pattern(r, L, default_dense=())
    sh = r.int("shared_intermediate_size", lo=0, default=0)
    s.update(moe=bool(moe), num_experts=r.int("num_local_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=ll["ffn_hidden_size"], num_shared_experts=1 if sh else 0,
             shared_expert_ffn_hidden_size=sh, moe_layer_set=moe,
             ffn_hidden_size=r.int("dense_intermediate_size", default=ll["ffn_hidden_size"]))
    r.used.update(("rotary_dim", "swiglu_alpha", "swiglu_limit") + tuple(k for k in r.cfg if k.startswith("index_")))


def _read_gpt1_family(r, s, ll, notes, warnings):
    """GPT-2's block read from GPT-2's fields, with a family's changes: GPT-BigCode (StarCoder 1,
    SantaCoder) one K/V head with multi_query; GPT-1 (openai-gpt) norms after each block and no
    final norm, MLP 4 h."""
    _read_gpt2(r, s, ll, notes, warnings)
    mt = s["model_type"]
    if mt == "gpt_bigcode" and r.bool("multi_query", default=True):
        s["num_kv_heads"] = 1
        r.used.add("num_key_value_heads")
    if mt == "openai-gpt":
        s.update(final_norm=False, ffn_hidden_size=4 * s["hidden_size"])
        r.used.update(("afn",) + tuple(k for k in r.cfg if k.startswith("summary_")))


def _read_biogpt(r, s, ll, notes, warnings):
    """BioGPT: OPT's block (learned positions offset by 2 rows, LayerNorms, biases everywhere, a
    two-matrix GELU MLP, a final LayerNorm), tied head."""
    rows = r.int("max_position_embeddings", default=1024)
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="learned", position_embedding_rows=rows + 2,
             num_kv_heads=s["num_attention_heads"], head_dim=s["hidden_size"] // s["num_attention_heads"],
             ffn_hidden_size=ll["ffn_hidden_size"])


def _read_nanochat(r, s, ll, notes, warnings):
    """nanochat: RMSNorms without weights, a two-matrix ReLU^2 MLP, no biases (attention_bias)."""
    _llama(r, s, ll, notes, warnings, "llama", norm="none", num_mlp_linears=2)
    r.used.add("final_logit_softcapping")


def _read_kolibri(r, s, ll, notes, warnings):
    """Kolibri 1: per-head q/k RMSNorms, norms after attention and MLP (4 per layer), every layer a
    MoE of num_local_experts experts of moe_intermediate_size with one shared expert of
    shared_expert_intermediate_size; sliding and full layers as layer_types lists them."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head", norms_per_layer=4)
    sh = r.int("shared_expert_intermediate_size", lo=0, default=0)
    s.update(moe=True, num_experts=r.int("num_local_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=r.int("moe_intermediate_size"), num_shared_experts=1 if sh else 0,
             shared_expert_ffn_hidden_size=sh, moe_layer_set=_mlp_pattern(r, L, default_dense=()))


def _read_axk1(r, s, ll, notes, warnings):
    """A.X K1: DeepSeek-V3's block (MLA, routed + shared experts on the sparse layers of
    mlp_layer_types) with one more RMSNorm after each MoE block (post_mlp_layernorm)."""
    _read_mla_family(r, s, ll, notes, warnings)
    s["layer_overrides"] = {i: {"norms": 3} for i in s.get("moe_layer_set") or ()}


def _read_laguna(r, s, ll, notes, warnings):
    """Laguna: per-head q/k RMSNorms and a per-head sigmoid output gate (g_proj h -> a, with
    gating); dense and MoE layers from mlp_layer_types, experts of moe_intermediate_size, one shared
    expert of shared_expert_intermediate_size, a learned score-correction bias in the router."""
    L = s["num_layers"]
    heads = r.int_list("num_attention_heads_per_layer", lo=1, length=L, default=None)
    if heads and any(x != s["num_attention_heads"] for x in heads):
        raise ValueError(f"{r.where}: num_attention_heads_per_layer differs between layers, which this "
                         "script does not describe yet")
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head",
           attn_output_gate="headwise" if r.bool("gating", default=True) else "none")
    _read_one_shared_expert(r, s, _mlp_pattern(r, L, default_dense=()), router_has_bias=True)
    r.used.update(("moe_routed_scaling_factor", "moe_apply_router_weight_on_input", "moe_router_logit_softcapping"))


def _read_flint(r, s, ll, notes, warnings):
    """Flint: a Qwen3-MoE block (per-head q/k RMSNorms) with a sink logit per head, dense layers
    mlp_only_layers, MoE on the others every decoder_sparse_step-th with one ungated shared expert
    of shared_expert_intermediate_size."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head", attention_sinks=True)
    step = r.int("decoder_sparse_step", default=1)
    only = set(r.int_list("mlp_only_layers", default=[]))
    _read_one_shared_expert(r, s, [i for i in range(L) if i not in only and (i + 1) % step == 0])


def _read_beam(r, s, ll, notes, warnings):
    """Beam: per-head q/k RMSNorms, an elementwise sigmoid output gate (gate_proj h -> a d) with a
    learned bias per head, four norms per layer; dense and MoE layers from mlp_layer_types (routed
    experts only)."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head", attn_output_gate="elementwise",
           norms_per_layer=4)
    s["attn_extra_weights"] = s["num_attention_heads"]
    s.update(moe=True, num_experts=r.int("num_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=r.int("moe_intermediate_size"), moe_layer_set=_mlp_pattern(r, L, default_dense=()))
    r.used.add("final_logit_softcapping")


def _read_xglm(r, s, ll, notes, warnings):
    """XGLM and the Kosmos-2 / 2.5 text models: sinusoidal positions (no weights), LayerNorms,
    biases everywhere, a two-matrix GELU MLP of ffn_dim, a final LayerNorm, tied head. Kosmos-2
    adds a LayerNorm inside attention (over h) and inside the MLP (over ffn_dim); Kosmos-2.5 the
    LayerNorm inside the MLP and a 2-row segment embedding."""
    mt, h = s["model_type"], s["hidden_size"]
    f = r.int("ffn_dim")
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="none", num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"], ffn_hidden_size=f)
    if mt == "kosmos_2_text_model":
        s.update(attn_extra_weights=2 * h, mlp_act_params=2 * f)
    if mt == "kosmos_2_5_text_model":
        s.update(mlp_act_params=2 * f, other_params={"segment_embedding": 2 * h})
    r.used.update(("scale_embedding", "activation_function"))


def _read_ctrl(r, s, ll, notes, warnings):
    """CTRL: sinusoidal positions, LayerNorms, biases everywhere, a two-matrix ReLU MLP of dff, a
    final LayerNorm, a tied head with its own bias (V)."""
    h = s["hidden_size"]
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="none", num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"], ffn_hidden_size=r.int("dff"),
             other_params={"lm_head_bias": s["vocab_size"]})
    r.used.add("n_positions")


def _read_neox_japanese(r, s, ll, notes, warnings):
    """GPT-NeoX-Japanese: GPT-NeoX's block without biases but on the last layer's attention output,
    an MLP of intermediate_multiple_size x h, LayerNorms, rotary."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="rope", num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"],
             ffn_hidden_size=r.int("intermediate_multiple_size", default=4) * h)
    s["layer_overrides"] = {L - 1: {"attention": {"out_bias": True}}}


def _read_aria(r, s, ll, notes, warnings):
    """Aria's text model: every layer a MoE of moe_num_experts experts of intermediate_size (top
    moe_topk) and moe_num_shared_experts shared experts of that width, router without bias."""
    L, f = s["num_layers"], ll["ffn_hidden_size"]
    _llama(r, s, ll, notes, warnings, "llama")
    n_sh = r.int("moe_num_shared_experts", lo=0, default=2)
    s.update(moe=True, num_experts=r.int("moe_num_experts"), topk=r.int("moe_topk"), moe_ffn_hidden_size=f,
             num_shared_experts=n_sh, shared_expert_ffn_hidden_size=n_sh * f, moe_layer_set=list(range(L)))


def _read_gemma4_unified(r, s, ll, notes, warnings):
    """Gemma 4 unified's text model: Gemma 4's block (per_layer_config head dims) without per-layer
    embeddings unless hidden_size_per_layer_input says so."""
    r.cfg = {**r.cfg, "hidden_size_per_layer_input": r.cfg.get("hidden_size_per_layer_input") or 0}
    _read_gemma4(r, s, ll, notes, warnings)
    r.used.add("use_bidirectional_attention")


def _read_reference_sliding(r, s, ll, notes, warnings):
    """Unlimited-OCR's text model: DeepSeek-V2's MoE layout without MLA (routed + shared experts on
    the sparse layers of mlp_layer_types), reference_sliding_attention layers counted as sliding
    ones (same weights; their cache and FLOPs as a sliding window's, stated)."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama")
    _read_routed_shared(r, s, L, dense=(0,))
    lt = r.str_list("layer_types", choices={"reference_sliding_attention", "sliding_attention", "full_attention"},
                    length=L)
    if lt:
        s["layer_types"] = ["full" if t == "full_attention" else "sliding" for t in lt]
        if "reference_sliding_attention" in lt:
            warnings.append("reference_sliding_attention layers: weights counted; their cache and FLOPs are "
                            "taken as a sliding window's (the reference tokens they also see are not modelled)")


def _read_modernbert_decoder(r, s, ll, notes, warnings):
    """ModernBERT decoder: bias-free LayerNorms (weights only) after the embedding, before attention
    (not on layer 0) and before the MLP; a fused gated MLP (Wi h -> 2 f, Wo f -> h); no biases;
    sliding and full layers (layer_types); a head transform (dense h x h and a norm) before the tied
    decoder, which has a bias (V)."""
    h = s["hidden_size"]
    _llama(r, s, ll, notes, warnings, "llama", embedding_norm=True, layer_overrides={0: {"norms": 1}},
           other_params={"head_dense": h * h, "head_norm": h, "decoder_bias": s["vocab_size"] * r.bool("decoder_bias", default=True)})
    if r.bool("norm_bias", default=False):
        s["norm"] = "layernorm"
    r.used.update(("local_attention", "classifier_bias", "classifier_activation", "initializer_cutoff_factor"))


def _read_muse_glimmer(r, s, ll, notes, warnings):
    """Muse Glimmer's text model: an elementwise sigmoid output gate (gate_proj h -> a d), norms
    before and after attention and MLP (4 per layer), sliding and full layers (layer_types)."""
    _llama(r, s, ll, notes, warnings, "llama", attn_output_gate="elementwise", norms_per_layer=4)
    r.used.update(("layer_rope_theta", "qk_scale_factor", "output_multiplier", "final_logit_softcapping"))


def _read_muse_spark(r, s, ll, notes, warnings):
    """Muse Spark's text model: an elementwise sigmoid output gate, three norms and two learned
    residual gates (h each) per layer, sliding and full layers; MoE layers (mlp_layer_types) whose
    experts work in a latent of moe_hidden_size m: a projection h -> m with a norm, E gated experts
    m -> f -> m, a norm and a projection m -> h; the router reads h. The experts' weights 3 m f equal
    a gated expert of width m f / h on h (so counted, FLOPs alike); the latent projections are
    matmuls every token runs (extra_params); the latent norms and residual gates are counted with
    the attention block's weights."""
    L, h = s["num_layers"], s["hidden_size"]
    m, f = r.int("moe_hidden_size"), r.int("moe_intermediate_size")
    if (m * f) % h:
        raise ValueError(f"{r.where}: moe_hidden_size x moe_intermediate_size is not a multiple of hidden_size")
    _llama(r, s, ll, notes, warnings, "llama", attn_output_gate="elementwise", norms_per_layer=3)
    moe = _mlp_pattern(r, L, default_dense=())
    s.update(moe=bool(moe), num_experts=r.int("num_local_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=m * f // h, moe_layer_set=moe, attn_extra_weights=2 * h,
             layer_overrides={i: {"extra_params": 2 * h * m, "attention": {"extra_weights": 2 * h + 2 * m}}
                              for i in moe})
    r.used.update(("layer_rope_theta", "qk_scale_factor", "output_multiplier", "final_logit_softcapping",
                   "residual_gate_temperature"))


def _read_hy_v4(r, s, ll, notes, warnings):
    """Hunyuan V4: GLM-5's sparse attention (MLA with a lightning indexer, shared-indexer layers from
    indexer_types) with a sink logit per head and an elementwise sigmoid output gate (gate_proj
    h -> a d_v); dense then MoE layers (mlp_layer_types, one shared expert); hyper-connections over
    hc_mult streams without DeepSeek-V4's combination matrix (HYV4HyperConnection: per module a
    projection 4 h x 2 hc, 2 hc biases and 2 scales; one head module, hc x hc h + hc + 1). The gate
    and the hyper-connection projections are matmuls every token runs (extra_params, their FLOPs
    counted: 2 per weight for the gate, 2 x 2 hc x hc h per module)."""
    h = s["hidden_size"]
    _read_dsa(r, s, ll, notes, warnings)
    a, dv, hc = s["num_attention_heads"], s["v_head_dim"], r.int("hc_mult", default=4, hi=1024)
    s["attention_sinks"] = True
    gate = h * a * dv
    s.update(extra_params_per_layer=gate + 2 * (2 * hc * hc * h + 2 * hc + 2),
             extra_flops_per_layer=2 * gate + 2 * (2 * 2 * hc * hc * h),
             other_params={"hc_head": hc * hc * h + hc + 1}, input_matmul_params=hc * hc * h,
             residual_streams=hc)
    r.used.update(("hc_magnitude", "hc_eps", "learnable_sink_init", "swiglu_limit"))


def _read_moshi(r, s, ll, notes, warnings):
    """Moshi's temporal transformer (MoshiForCausalLM): a Llama block whose MLP fuses gate and up
    (fc1 h -> ffn_dim, fc2 ffn_dim / 2 -> h), no biases, a token table one row longer than the head;
    the audio codec and depth decoder of the full Moshi are not part of this class."""
    _llama(r, s, ll, notes, warnings, "llama", ffn_hidden_size=r.int("ffn_dim") // 2,
           other_params={"extra_token_row": s["hidden_size"]})
    r.used.update(("audio_vocab_size", "num_codebooks", "audio_encoder_config"))


def _read_gemma3n(r, s, ll, notes, warnings):
    """Gemma 3n's text model: Gemma 4's block with one head_dim on every layer (per-layer inputs,
    the last num_kv_shared_layers reusing earlier K/V), plus per layer AltUp over altup_num_inputs
    n streams (a modality router n x h and its norm, prediction n^2 x n and correction n x n
    coefficients, an output scale h) and a Laurel low-rank residual (h -> laurel_rank -> h, a norm);
    n - 1 AltUp projections in and n - 1 out (h x h each) for the model. The MLP width per layer
    (intermediate_size, a list) must be one value. Activation sparsity has no weights. FLOPs add per
    token AltUp's prediction product (n x n coefficients per channel, 2 n^2 h) and its router's second
    run in the correction (2 n h), matmuls transformers' Gemma3nTextAltUp runs (FlopCounterMode)."""
    h = s["hidden_size"]
    f = r.cfg.get("intermediate_size")
    if isinstance(f, list):
        r.used.add("intermediate_size")
        if not f or any(x != f[0] for x in f) or isinstance(f[0], bool) or not isinstance(f[0], int):
            r.fail("intermediate_size", "differs between layers, which this script does not describe yet", f)
        ll = dict(ll, ffn_hidden_size=f[0])
    r.cfg = {**r.cfg, "global_head_dim": r.cfg.get("head_dim") or 256, "attention_k_eq_v": False,
             "use_double_wide_mlp": False}
    _read_gemma4(r, s, ll, notes, warnings)
    n, rank = r.int("altup_num_inputs", default=4), r.int("laurel_rank", default=64)
    for o in s["layer_overrides"].values():
        o["norms"] += 2  # AltUp's router norm, Laurel's post norm
        o["extra_params"] = o.get("extra_params", 0) + 2 * rank * h + n * h + n ** 3 + n * n
        o["weightless_flops"] = 2 * (n * n * h + n * h)  # AltUp's prediction (n x n per channel), router rerun
        o["attention"] = dict(o["attention"], extra_weights=h)  # AltUp's correct_output_scale
    s["other_params"] = dict(s.get("other_params") or {}, altup_projections=2 * (n - 1) * h * h)
    s["input_matmul_params"] = s.get("input_matmul_params", 0) + 2 * (n - 1) * h * h
    r.used.update(("altup_active_idx", "altup_coef_clip", "altup_correct_scale", "activation_sparsity_pattern",
                   "final_logit_softcapping"))


def _read_git(r, s, ll, notes, warnings):
    """GIT's text decoder (GitForCausalLM; its image encoder is not counted): BERT's post-norm block
    (LayerNorms after attention and after the MLP, biases everywhere, a two-matrix GELU MLP), learned
    positions and a LayerNorm on the embeddings, no final norm, an untied head with a bias."""
    h = s["hidden_size"]
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="learned", position_embedding_rows=r.int("max_position_embeddings", default=1024),
             embedding_norm=True, final_norm=False, num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"], ffn_hidden_size=ll["ffn_hidden_size"],
             other_params={"lm_head_bias": s["vocab_size"]})
    if isinstance(r.cfg.get("vision_config"), dict):
        warnings.append("GIT: the text decoder is counted; the image encoder and its projection are not counted")
    r.used.update(("num_image_with_embedding", "vision_config"))


def _read_cpmant(r, s, ll, notes, warnings):
    """CPM-Ant: weight-only LayerNorms before attention and MLP, q/k/v/o without biases (heads of
    dim_head), a gated GELU MLP of dim_ff, a final norm; the token table also holds
    prompt_types x prompt_length prompt rows, a segment table (segment_types rows) and a relative
    position bias per head over segment_types^2 + position_bias_num_buckets buckets; the head is its
    own tensor of vocab_size rows."""
    h, a = s["hidden_size"], s["num_attention_heads"]
    seg = r.int("segment_types", default=32)
    s.update(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="none", num_kv_heads=a, head_dim=r.int("dim_head", default=h // a),
             ffn_hidden_size=r.int("dim_ff"), tied_embeddings=False,
             other_params={"prompt_rows": r.int("prompt_types", default=32) * r.int("prompt_length", default=32) * h,
                           "segment_embedding": seg * h,
                           "position_bias": (seg * seg + r.int("position_bias_num_buckets", default=512)) * a})
    r.bool("tie_word_embeddings", default=True)  # the head cannot be tied: the tables differ in rows
    r.used.update(("position_bias_max_distance",))


def _read_dots3(r, s, ll, notes, warnings):
    """dots3: MLA on every layer with a per-head sigmoid gate (g_proj h -> a) and a norm on the rotary
    key slice (d_rope); indexed_attention layers add DeepSeek-V3.2's lightning indexer, sliding
    layers (window sliding_window) have none; per_layer_config changes a layer's heads, latent rank
    and d_nope; dense then MoE layers (mlp_layer_types) with n_shared_experts shared experts of
    shared_experts_intermediate_size."""
    L = s["num_layers"]
    lt = r.str_list("layer_types", choices={"indexed_attention", "sliding_attention"}, length=L)
    if lt is None:
        r.fail("layer_types", "must list indexed_attention and sliding_attention layers", None)
    _read_dsa_every_layer(r, s, ll, notes, warnings)
    f_sh = r.int("shared_experts_intermediate_size", "moe_shared_expert_intermediate_size",
                 default=s["moe_ffn_hidden_size"])  # x n_shared_experts (modeling_dots3_note)
    s["shared_expert_ffn_hidden_size"] = f_sh * s["num_shared_experts"]
    s.update(attn_output_gate="headwise", attn_extra_weights=s["qk_rope_head_dim"],
             layer_types=["sliding" if t == "sliding_attention" else "full" for t in lt],
             sliding_window=r.int("sliding_window", default=512))
    plc = r.sub("per_layer_config") or {}
    over = s.get("layer_overrides") or {}
    for i in range(L):
        a = {}
        cfg_i = plc.get(f"{i:02d}", plc.get(str(i)))
        if cfg_i is not None and not isinstance(cfg_i, dict):
            r.fail("per_layer_config", f"entry {i} must be a JSON object", cfg_i)
        if cfg_i is not None:
            sub = ConfigReader(cfg_i, f"{r.where} (per_layer_config {i})")
            heads = sub.int("num_attention_heads", default=s["num_attention_heads"])
            a.update(heads=heads, kv_heads=heads, kv_lora_rank=sub.int("kv_lora_rank", default=s["kv_lora_rank"]),
                     qk_nope_head_dim=sub.int("qk_nope_head_dim", default=s["qk_nope_head_dim"]))
        if lt[i] == "sliding_attention":
            a.update(index_heads=0, index_head_dim=0, index_topk=0)
        if a:
            o = over.setdefault(i, {})
            o["attention"] = dict(o.get("attention", {}), **a)
    s["layer_overrides"] = over
    r.used.add("use_sliding_window")


def _read_doge(r, s, ll, notes, warnings):
    """Doge (dense; modeling_doge): Llama-style attention with per-head q/k RMSNorms and a dynamic
    mask from the values (dt_proj kv d -> kv, a matmul every token runs, + bias with
    attention_bias; a learned A per kv head), learned per-channel residual scales before attention
    and before the MLP (2 h). Its cross-domain MoE (is_moe: product-key retrieval experts) is
    refused."""
    if r.bool("is_moe", default=False):
        raise ValueError(f"{r.where}: Doge with is_moe (product-key retrieval experts) is not counted by this "
                         "script yet")
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    kv, d, h = s["num_kv_heads"], s["head_dim"], s["hidden_size"]
    s.update(attn_extra_weights=kv + kv * s["qkv_bias"] + 2 * h, extra_params_per_layer=kv * d * kv)
    r.used.update(("keep_window_size", "num_experts", "num_experts_per_tok"))


def _read_hrm_text(r, s, ll, notes, warnings):
    """HRM text (modeling_hrm_text): a low-level and a high-level stack of num_layers_per_stack
    layers each (attention with an elementwise sigmoid output gate h -> a d, a gated MLP, weightless
    RMSNorms), run as num_hidden_layers = num_layers_per_stack x H_cycles x (L_cycles + 1) slots: per
    high cycle, L_cycles passes of the low stack, then one of the high stack (each slot its own
    cache layer). The layer list here is the slots; a slot whose stack layer an earlier slot ran
    holds no weights of its own (tied), so weights count once and FLOPs and cache per slot. The
    frozen initial low-level state z_L_init (h) is a parameter."""
    _llama(r, s, ll, notes, warnings, "llama", attn_output_gate="elementwise", norm="none", final_norm=False)
    n, H, Lc = r.int("num_layers_per_stack"), r.int("H_cycles", default=2), r.int("L_cycles", default=3)
    L = s["num_layers"]
    if not s.get("_layers_from_flag") and L != n * H * (Lc + 1):
        raise ValueError(f"{r.where}: num_hidden_layers {L} is not num_layers_per_stack x H_cycles x (L_cycles + 1) "
                         f"= {n * H * (Lc + 1)}; transformers' cache would not match it")
    first_high = Lc * n  # the high stack first runs after L_cycles passes of the low one
    s["layer_overrides"] = {i: {"attention": {"tied": True}, "mlp": {"tied": True}} for i in range(L)
                            if not (i < n or first_high <= i < first_high + n)}
    s["other_params"] = {"z_L_init": s["hidden_size"]}
    r.used.update(("L_bp_cycles", "embedding_scale", "prefix_lm"))


# model_type -> reader, for config.py's registry; the wrappers' text models read as their family.
MORE_READERS = {
    "dots3_note_text": _read_dots3,
    "cpmant": _read_cpmant,
    "git": _read_git,
    "glm": _read_glm, "glm4": _read_glm, "glm4v_text": _read_glm, "glm_ocr_text": _read_glm,
    "glm4v_moe_text": _read_glm4v_moe, "olmoe": _read_olmoe, "flex_olmo": _read_olmoe,
    "hunyuan_v1_dense": _read_hunyuan, "hunyuan_v1_moe": _read_hunyuan, "hunyuan_vl_text": _read_hunyuan,
    "hyperclovax": _read_post_norm, "granite_swa": _read_sinks, "granitemoe_swa": _read_sinks,
    "arcee": _read_two_linear, "nemotron": _read_two_linear, "jais2": _read_two_linear,
    "apertus": _read_two_linear, "olmo": _read_olmo, "cohere": _read_cohere, "cohere2_moe": _read_cohere,
    "stablelm": _read_stablelm, "persimmon": _read_persimmon, "phi": _read_phi, "gptj": _read_gptj,
    "codegen": _read_gptj, "gpt_neo": _read_gpt_neo, "mellum": _read_mellum, "glm4_moe_lite": _read_mla_family,
    "youtu": _read_mla_family, "minicpm3": _read_mla_family, "exaone_moe": _read_routed_moe,
    "afmoe": _read_routed_moe, "bitnet": _read_bitnet, "diffllama": _read_diffllama,
    "ernie4_5_vl_moe_text": _read_ernie45_vl, "molmo2_text": _read_molmo2, "phi4_multimodal": _read_phi4mm,
    "mllama_text_model": _read_mllama, "mimo_v2_flash": _read_mimo_v2, "minimax_m3_vl_text": _read_minimax_m3,
    "apertus1p5_text": _read_two_linear, "gpt_bigcode": _read_gpt1_family, "openai-gpt": _read_gpt1_family,
    "biogpt": _read_biogpt, "nanochat": _read_nanochat, "kolibri1": _read_kolibri, "axk1": _read_axk1,
    "laguna": _read_laguna, "flint": _read_flint, "beam": _read_beam, "xglm": _read_xglm,
    "kosmos_2_text_model": _read_xglm, "kosmos_2_5_text_model": _read_xglm, "ctrl": _read_ctrl,
    "gpt_neox_japanese": _read_neox_japanese, "aria_text": _read_aria,
    "gemma4_unified_text": _read_gemma4_unified, "unlimited_ocr_text": _read_reference_sliding,
    "cosmos3_edge_text": _read_two_linear, "muse_glimmer_text": _read_muse_glimmer,
    "muse_spark_text": _read_muse_spark, "hy_v4": _read_hy_v4, "moshi": _read_moshi,
    "gemma3n_text": _read_gemma3n, "doge": _read_doge, "hrm_text": _read_hrm_text, "modernbert-decoder": _read_modernbert_decoder, "mpt": _read_mpt,
}
# Families whose configs name the basic sizes otherwise: read as the usual names.
FIELD_ALIASES = {"attention_heads": "num_attention_heads", "layers": "num_hidden_layers",
                 "embed_dim": "hidden_size"}
ALIASED = {"xglm", "kosmos_2_text_model", "kosmos_2_5_text_model"}


# Text models of wrappers (and renamed families) that transformers builds with a known family's
# block: read as that family.
SAME_AS = {"qwen2_vl_text": "qwen2", "qwen2_5_vl_text": "qwen2", "qwen2_5_omni_text": "qwen2",
           "qwen3_vl_text": "qwen3", "qwen3_vl_moe_text": "qwen3_moe", "qwen3_omni_moe_text": "qwen3_moe",
           "sarvam_moe": "glm4_moe", "sarvam_mla": "deepseek_v3", "hy_v4_vl_text": "hy_v4"}


# ======== llmcalc/model/families_moa.py ===========================================================
# Family readers for decoders whose attention itself is routed: JetMoE's mixture of attention
# heads (transformers' modeling_jetmoe; Shen et al. 2024, arXiv 2404.07413). The attention-expert
# formulas are in formulas.py (attention_expert_params, attention_inactive_params); each reader says
# what its modeling file builds, checked against the meta-device build (tests/test_all_types.py).

def _read_jetmoe(r, s, ll, notes, warnings):
    """JetMoE (modeling_jetmoe): mixture of attention heads (MoA) and MoE MLPs on every layer. The
    attention's E = num_local_experts experts each project q (h -> kv d) and o (kv d -> h); a token
    runs num_experts_per_tok = k of them (a = k kv query heads of d = kv_channels over one shared
    k/v projection h -> 2 kv d, K/V repeated k times); the MLP's E gated experts of
    intermediate_size; a router h x E and an output bias h in each."""
    # absent or null: JetMoeConfig's defaults (tests/fixtures/all_types/jetmoe.json)
    kv, d = r.int("num_key_value_heads", default=16), r.int("kv_channels", default=128)
    E = r.int("num_local_experts", default=8)
    k = r.int("num_experts_per_tok", default=2, hi=E)
    a = s["num_attention_heads"]
    if a != k * kv:
        r.fail("num_attention_heads", f"must be num_experts_per_tok x num_key_value_heads = {k * kv} "
               "(JetMoE's query heads are the k chosen experts' kv heads)", a)
    _llama(r, s, ll, notes, warnings, "llama", num_kv_heads=kv, head_dim=d, qkv_bias=False, attn_out_bias=False,
           mlp_bias=False, num_mlp_linears=3, attn_extra_weights=2 * s["hidden_size"])
    L = s["num_layers"]
    s.update(moe=True, num_experts=E, topk=k, moe_ffn_hidden_size=r.int("intermediate_size", default=5632),
             moe_layer_set=list(range(L)),
             layer_overrides={i: {"attention": {"attn_experts": E, "attn_topk": k}} for i in range(L)})
    r.used.update(("activation_function", "aux_loss_coef"))


MOA_READERS = {"jetmoe": _read_jetmoe}


# ======== llmcalc/model/families_sconv.py =========================================================
# Family readers for attention decoders whose layers add short causal convolutions and a
# relative-position bias around softmax attention: Inkling, Inkling 2 and Inkling 2 Loop
# (transformers' modeling_inkling, modeling_inkling2, modeling_inkling2_loop), and ZAYA's compressed
# convolutional attention (modeling_zaya); and Dory (modeling_dory: an nGPT-style block whose released
# configs list attention and MLP as separate entries of layer_types). Each
# reader says what its modeling file builds, checked against the meta-device build
# (tests/test_all_types.py).

def _inkling_layer_types(r, L):
    """Inkling / Inkling 2's layer_types ("hybrid": full attention, "hybrid_sliding": sliding) as our
    kinds; absent, their configs' default: every 6th layer full."""
    lt = r.str_list("layer_types", choices={"hybrid", "hybrid_sliding"}, length=L)
    if lt is None:
        lt = ["hybrid" if (i + 1) % 6 == 0 else "hybrid_sliding" for i in range(L)]
    return ["sliding" if t == "hybrid_sliding" else "full" for t in lt[:L]]


def _read_inkling(r, s, ll, notes, warnings):
    """Inkling (text model and the multimodal wrapper's language model): layer_types "hybrid"
    (full attention) and "hybrid_sliding" (sliding_window_size window, swa_* heads and head size);
    no rotary (a relative-logit bias instead: r_proj h -> a d_rel, a matmul every token runs, and a
    d_rel x rel_extent bank, rel_extent = the window on sliding layers); per-head q/k RMSNorms;
    depthwise causal convolutions of conv_kernel_size taps (no bias) on k and v and on the
    attention's and the MLP's outputs; an RMSNorm on the embedding. MoE layers of mlp_layer_types:
    n_routed_experts of moe_intermediate_size, n_shared_experts of the same width, a router over
    routed and shared experts (h x (E + S)) with a learned global scale; a dense layer's MLP of
    intermediate_size has a global scale (1 weight). The cache keeps each convolution's last K inputs
    (fp32) beside the K/V: constant per sequence (state_elements)."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll, qk_norm="head", position_embedding="none", embedding_norm=True, mlp_act_params=1)
    K, d_rel = r.int("conv_kernel_size", default=4), r.int("d_rel", default=16)
    ext = r.int("rel_extent", default=1024)
    window = r.int("sliding_window_size", default=512)
    swa = {"heads": r.int("swa_num_attention_heads", default=64),
           "kv_heads": r.int("swa_num_key_value_heads", default=16), "head_dim": r.int("swa_head_dim", default=128)}
    s["layer_types"] = _inkling_layer_types(r, L)
    s["sliding_window"] = window
    E, S, f_e = r.int("n_routed_experts"), r.int("n_shared_experts", lo=0, default=0), r.int("moe_intermediate_size")
    moe = _mlp_pattern(r, L, default_dense=())
    s.update(moe=bool(moe), num_experts=E, topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=f_e,
             num_shared_experts=S, shared_expert_ffn_hidden_size=S * f_e, moe_layer_set=moe)
    over = {}
    for i in range(L):
        sliding = s["layer_types"][i] == "sliding"
        a, kv, d = ((swa["heads"], swa["kv_heads"], swa["head_dim"]) if sliding else
                    (s["num_attention_heads"], s["num_kv_heads"], s["head_dim"]))
        # k and v convolutions (kv d channels each), the relative-logit bank, the two residual convolutions
        attn = {"heads": a, "kv_heads": kv, "head_dim": d,
                "extra_weights": 2 * kv * d * K + d_rel * (window if sliding else ext) + 2 * h * K,
                "kv_conv_taps": K, "residual_conv_state": 2 * h * K}  # the convolutions' windows (fp32)
        over[i] = {"attention": attn, "extra_params": h * a * d_rel,
                   "mlp": {"router_extra": S * h + 1} if i in moe else {}}
    s["layer_overrides"] = over
    r.used.update(("local_layer_ids", "number_of_conv_states", "log_scaling_n_floor", "log_scaling_alpha",
                   "route_scale", "shared_expert_sink", "mtp_hidden_states_first", "rms_norm_eps_moe_gate", "logits_mup_width_multiplier", "unpadded_vocab_size"))


def _read_inkling2(r, s, ll, notes, warnings):
    """Inkling 2 and Inkling 2 Loop (text models and the wrappers' language models): layer_types
    "hybrid" (full attention) and "hybrid_sliding" (sliding_window_size window, swa_* heads). Every
    attention: q with a learned per-head scale (a d; k's L2 clip and v's RMSNorm have no weights), an
    elementwise sigmoid output gate (gate_proj h -> a d), a per-token sink logit per head (sink_proj
    h -> a), a relative-logit bias (h -> a d_rel with a per-head scale a d_rel, a d_rel x rel_extent
    bank; rel_extent = the window on sliding layers), no rotary. k and v run through depthwise causal
    convolutions of conv_kernel_size taps (full layers add per-token taps from h -> kv K per
    convolution). Per layer: block attention-residual queries (h before the MLP; h before attention
    on a sliding layer, 3 h on a full one, none on layer 0), the RMSNorms (one before attention on a
    sliding layer, one per q, k, v on a full one; one after), the convolutions on attention's and the
    MLP's outputs (h K each); every layer an MoE of n_routed_experts (router h x E); an RMSNorm on the
    embedding, a final attention-residual query (h), a head of unpadded_vocab_size rows. Inkling 2
    Loop: layers loop_layer_index_start to loop_layer_index_end run loop_num_passes times and have
    four message gates each (2 h -> r -> h, h; r = loop_gate_rank), plus message queries (4 h per
    looped layer) on the model. The cache keeps each convolution's last K inputs (fp32) beside the
    K/V (state_elements)."""
    L, h, V = s["num_layers"], s["hidden_size"], s["vocab_size"]
    s.update(ll, qk_norm="none", position_embedding="none", embedding_norm=True,
             attn_output_gate="elementwise")
    K, d_rel = r.int("conv_kernel_size", default=4), r.int("d_rel", default=16)
    ext, window = r.int("rel_extent", default=1024), r.int("sliding_window_size", default=1024)
    swa = (r.int("swa_num_attention_heads", default=s["num_attention_heads"]),
           r.int("swa_num_key_value_heads", default=s["num_kv_heads"]), r.int("swa_head_dim", default=s["head_dim"]))
    s["layer_types"] = _inkling_layer_types(r, L)
    s["sliding_window"] = window
    s.update(moe=True, num_experts=r.int("n_routed_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=r.int("moe_intermediate_size"), moe_layer_set=list(range(L)))
    loop, rank = range(0), 0
    if s["model_type"] == "inkling2_loop_text":
        start, end = r.int("loop_layer_index_start", lo=0, default=6), r.int("loop_layer_index_end", default=18)
        passes, rank = r.int("loop_num_passes", default=3), r.int("loop_gate_rank", default=64)
        loop = range(start, min(end, L))
        s["other_params"] = {"message_queries": 4 * h * len(loop)}
        if passes > 1 and loop:
            warnings.append(f"layers {start}-{loop[-1]} run {passes} passes per token (Inkling 2 Loop): the weights "
                            "are counted once, as stored; the per-token FLOPs, activations and cache here count "
                            "one pass")
    s["other_params"] = dict(s.get("other_params", {}), final_attention_residual_query=h)
    s["head_vocab_size"] = r.int("unpadded_vocab_size", default=V)
    over = {}
    for i in range(L):
        full = s["layer_types"][i] == "full"
        a, kv, d = (s["num_attention_heads"], s["num_kv_heads"], s["head_dim"]) if full else swa
        queries = h + (3 * h if full else h) * (i > 0)
        attn = {"heads": a, "kv_heads": kv, "head_dim": d,
                "extra_weights": a * d + a * d_rel + d_rel * (ext if full else window) + 2 * kv * d * K
                + 2 * h * K + queries, "kv_conv_taps": K, "residual_conv_state": 2 * h * K}
        extra = h * a * d_rel + h * a + 2 * h * kv * K * full + 16 * h * rank * (i in loop)
        over[i] = {"attention": attn, "extra_params": extra, "norms": 4 if full else 2}
    s["layer_overrides"] = over
    r.used.update(("log_scaling_n_floor", "log_scaling_alpha", "route_scale", "qk_l2_clip_threshold",
                   "rel_l2_clip_threshold", "n_layers_per_attn_res_block", "mlp_gate_softcap", "mlp_up_softcap",
                   "final_logit_softcapping", "scoring_func", "loop_num_passes"))


def _read_zaya(r, s, ll, notes, warnings):
    """ZAYA (compressed convolutional attention, arXiv 2510.04476, as transformers' modeling_zaya
    builds it): q (h -> a d), k (h -> kv d) and v as a current and a delayed half (h -> kv d / 2
    each); q and k mixed by a depthwise causal convolution of cca_time0 taps and a grouped one of
    cca_time1 taps (one group per q and k head, d -> d; both with biases) over C = (a + kv) d
    channels; a temperature per kv head; no bias by default; partial rotary. Per layer: two RMSNorms
    and two residual scalings (scale and bias on the branch and on the residual, 4 h each). Every
    layer an MoE of num_experts experts of moe_intermediate_size, top num_experts_per_tok, and a
    skip expert without weights; the router runs an MLP: h -> R (+ bias), an RMSNorm over R, two
    R x R layers with biases, R -> E + 1; from layer 1 a learned scale R on the previous layer's
    router state. Weights the routed expert count here: top-k real experts (the skip expert, when
    chosen, runs none: an upper bound). The convolutions' weights and the router MLP's matmuls beyond
    h x E are the layer's extra matmuls (their FLOPs 2 per weight per token); the model has an input
    scale and bias (2 h). The cache keeps the q/k convolution's window and the delayed value half beside
    the K/V (state_elements)."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll, qkv_bias=r.bool("attention_bias", default=False))
    s["attn_out_bias"] = s["qkv_bias"]
    a, kv, d = s["num_attention_heads"], s["num_kv_heads"], s["head_dim"]
    E, R = r.int("num_experts"), r.int("router_hidden_size", default=256)
    t0, t1 = r.int("cca_time0", default=2), r.int("cca_time1", default=2)
    C = (a + kv) * d
    lt = r.str_list("layer_types", choices={"hybrid", "hybrid_sliding"}, length=L)
    if lt is not None:
        s["layer_types"] = ["sliding" if t == "hybrid_sliding" else "full" for t in lt[:L]]
    s.update(moe=True, num_experts=E, topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=r.int("moe_intermediate_size"), moe_layer_set=list(range(L)))
    s["other_params"] = {"input_scale_and_bias": 2 * h}
    if r.bool("lm_head_bias", default=False) and not s["tied_embeddings"]:
        s["other_params"]["head_bias"] = s["vocab_size"]
    router_matmuls = h * R + 2 * R * R + R * (E + 1)
    over = {}
    for i in range(L):
        router_other = R + R + 2 * R + R * (i > 0)  # down_proj bias, norm, fc biases, state scale
        over[i] = {"attention": {"extra_weights": 2 * C + kv + 8 * h,  # conv biases, temperatures, residual scalings
                                 "qk_conv_taps": t0 + t1 - 2, "delayed_value_state": True},  # the cache's window, v half
                   "extra_params": C * t0 + C * d * t1 + router_matmuls - h * E,
                   "mlp": {"router_extra": router_other}}
    s["layer_overrides"] = over
    notes.append("ZAYA's router may pick its skip expert (no weights): the active count takes top-k real "
                 "experts, an upper bound")


def _read_dory(r, s, ll, notes, warnings):
    """Dory: a layer is attention then MLP on the unit sphere (nGPT; weightless L2 norms, no final
    norm): GQA with L2-normed q and k (no weights), a per-channel query scale and output-gate scale
    (a d each) and an elementwise sigmoid output gate (gate_proj h -> a d); a gated MLP with two
    per-channel scales (2 f); two per-channel residual rates (2 h); a head with a per-row logit scale
    (V). A config whose layer_types lists "mlp" entries lists each (attention, MLP) pair as two
    entries: transformers folds them (layer_types[::2], num_hidden_layers // 2, and the input,
    recurrent and output layer counts halved), as read here. The recurrent layers run
    n_recurrent_loops times per token."""
    s.update(ll, qk_norm="l2", attn_output_gate="elementwise", norm="none", final_norm=False)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=r.bool("mlp_bias", default=False))
    names = {"full_attention": "full", "sliding_attention": "sliding", "mlp": "mlp"}
    lt = r.str_list("layer_types", choices=set(names), default=None)
    half = lt is not None and "mlp" in lt
    # -l counts the folded layers (as transformers builds them); the config's count is halved
    L = s["num_layers"] // 2 if half and not s.get("_layers_from_flag") else s["num_layers"]
    if half:
        lt = lt[::2]
        if "mlp" in lt:
            raise ValueError(f"{r.where}: layer_types lists 'mlp' where an attention entry belongs (pairs of "
                             "attention, mlp)")
        if L > len(lt):
            raise ValueError(f"--num-layers {L} is more than the {len(lt)} layers (attention, mlp pairs) the "
                             "config's layer_types describes")
        s["num_layers"] = L = max(1, L)
    if lt is None:
        lt = ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention" for i in range(L)]
    s["layer_types"] = [names[x] for x in lt[:L]]
    a, d, h = s["num_attention_heads"], s["head_dim"], s["hidden_size"]
    s.update(attn_extra_weights=2 * a * d + 2 * h, mlp_act_params=2 * s["ffn_hidden_size"],
             other_params={"logit_scale": s["vocab_size"]})
    div = 2 if half else 1
    n_in, n_out = r.int("n_input_layers", lo=0, default=8 * div) // div, r.int("n_output_layers", lo=0, default=8 * div) // div
    n_rec = r.int("n_recurrent_layers", lo=0, default=None)
    n_rec = L - n_in - n_out if n_rec is None else n_rec // div
    loops = r.int("n_recurrent_loops", default=2)
    n_rec = min(n_rec, L - n_in)
    if loops > 1 and n_rec > 0:
        warnings.append(f"layers {n_in}-{n_in + n_rec - 1} run {loops} loops per token (Dory): the weights are counted "
                        "once, as stored; the per-token FLOPs, activations and cache here count one loop")
    r.used.update(("ngpt_alpha_init", "recurrent_kv_cache_mode"))


SCONV_READERS = {"dory": _read_dory, "zaya": _read_zaya, "inkling_text": _read_inkling, "inkling2_text": _read_inkling2,
                 "inkling2_loop_text": _read_inkling2}


# ======== llmcalc/model/families_state.py =========================================================
# Family readers for the decoders whose layers keep a state instead of (or beside) keys and values
# and that transformers 5.24 builds: Mamba, Falcon-Mamba, Mamba-2, Bamba, Zamba 1/2 (a transformer
# block the hybrid layers share), LFM2 (short convolution), MiniMax-01 (lightning attention), RWKV,
# RecurrentGemma (Griffin's RG-LRU), Lara-mini (Gated DeltaNet), Bailing hybrid and GLM-5-Next (Kimi
# Delta Attention). Each turns its config into the flat spec's fields, checked against the meta-device
# build (tests/test_all_types.py); their caches and FLOPs against transformers' own (VALIDATION.md).

def _read_lfm2(r, s, ll, notes, warnings, adjust=True):
    """LFM2: short-convolution blocks (in_proj h -> 3h, a depthwise conv of conv_L_cache taps,
    out_proj; biases with conv_bias) and attention layers (per-head q/k RMSNorms, no biases) as
    layer_types lists them (else full_attn_idxs), each with a gated MLP whose width, with
    block_auto_adjust_ff_dim, is int(2 f / 3) x block_ffn_dim_multiplier rounded up to
    block_multiple_of (Lfm2MLP); 2 norms per layer; the final norm is `embedding_norm`."""
    L, h = s["num_layers"], s["hidden_size"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    lt = r.str_list("layer_types", choices={"conv", "full_attention"}, length=L)
    if lt is None:
        full = set(r.int_list("full_attn_idxs", default=[]))
        lt = ["full_attention" if i in full else "conv" for i in range(L)]
    r.used.add("full_attn_idxs")
    s["layer_types"] = ["full" if t == "full_attention" else "linear" for t in lt]
    f = ll["ffn_hidden_size"]
    if adjust and r.bool("block_auto_adjust_ff_dim", default=True):
        f = int(2 * f / 3)
        mult = r.num("block_ffn_dim_multiplier", default=1.0)
        if mult:
            f = int(mult * f)
        m = r.int("block_multiple_of", default=256)
        f = m * ((f + m - 1) // m)
    s["ffn_hidden_size"] = f
    s["linear_mixer"] = {"kind": "shortconv", "heads": h, "kv_heads": h, "head_dim": 1, "v_head_dim": 1,
                         "conv_kernel": r.int("conv_L_cache", default=3), "state_chunk": 0,
                         "conv_bias": r.bool("conv_bias", default=False)}


def _read_lfm2_moe(r, s, ll, notes, warnings):
    """LFM2-MoE (lfm2_moe): LFM2's short-convolution and attention layers; a gated MLP of
    intermediate_size as given (Lfm2MoeMLP: no auto-adjust) in the first num_dense_layers, then
    num_experts routed experts of moe_intermediate_size, top num_experts_per_tok, behind a
    bias-free router whose expert_bias is a buffer (not a parameter); no shared expert
    (Lfm2MoeDecoderLayer, transformers 5.24)."""
    _read_lfm2(r, s, ll, notes, warnings, adjust=False)
    _read_routed_shared(r, s, s["num_layers"], dense=range(r.int("num_dense_layers", lo=0, default=2)))
    r.used.update({"use_expert_bias", "routed_scaling_factor", "norm_topk_prob"})


def _read_mamba(r, s, ll, notes, warnings):
    """Mamba and Falcon-Mamba (attention-free): every layer one RMSNorm and a Mamba-1 mixer of inner
    width intermediate_size (else expand x h), dt rank time_step_rank ("auto": ceil(h / 16)),
    state_size N, a conv of conv_kernel taps (bias with use_conv_bias), in/out projection biases
    with use_bias; no MLP. Falcon-Mamba's B, C, dt RMSNorms have no weights."""
    L, h = s["num_layers"], s["hidden_size"]
    E = r.int("intermediate_size", default=int(r.num("expand", default=2) * h))
    rank = r.cfg.get("time_step_rank")  # null: unset, the class default "auto"
    R = -(-h // 16) if rank in (None, "auto") else r.int("time_step_rank")
    r.used.add("time_step_rank")
    bias = r.bool("use_bias", default=False)
    s.update(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="none", norms_per_layer=1, layer_types=["linear"] * L,
             layer_blocks=["mixer"] * L, num_kv_heads=s["num_attention_heads"], head_dim=1, ffn_hidden_size=1)
    s["linear_mixer"] = {"kind": "mamba1", "heads": E, "kv_heads": E, "head_dim": 1, "v_head_dim": 1,
                         "state_size": r.int("state_size", default=16), "dt_rank": R,
                         "conv_kernel": r.int("conv_kernel", default=4), "state_chunk": 0,
                         "in_bias": bias, "mixer_out_bias": bias,
                         "conv_bias": r.bool("use_conv_bias", default=True), "dt_norms": False}


def _read_mamba2(r, s, ll, notes, warnings):
    """Mamba-2 (attention-free): every layer one RMSNorm and a Mamba-2 mixer of num_heads heads of
    head_dim (inner width = their product), n_groups groups of state_size, a conv of conv_kernel
    taps (bias with use_conv_bias), projection biases with use_bias, a gated RMSNorm; no MLP."""
    L = s["num_layers"]
    H, P = r.int("num_heads", default=128), r.int("head_dim", default=64)
    bias = r.bool("use_bias", default=False)
    s.update(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="none", norms_per_layer=1, layer_types=["linear"] * L,
             layer_blocks=["mixer"] * L, num_kv_heads=s["num_attention_heads"], head_dim=1, ffn_hidden_size=1)
    _mamba2_mixer(r, s, d_in=H * P, heads=H, head_dim=P, groups=r.int("n_groups", default=8),
                  state=r.int("state_size", default=128), conv=r.int("conv_kernel", default=4),
                  chunk=r.int("chunk_size", default=256), in_bias=bias, out_bias=bias,
                  conv_bias=r.bool("use_conv_bias", default=True), gated_norm=True)
    r.used.update(("expand", "time_step_rank"))


def _read_bamba(r, s, ll, notes, warnings):
    """Bamba: a Mamba-2 mixer (Granite 4's) on every layer but attn_layer_indices (attention: no
    biases), then a gated dense MLP; 2 norms per layer."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", mlp_bias=r.bool("mlp_bias", default=False))
    attn = set(r.int_list("attn_layer_indices", default=[]))
    s["layer_types"] = ["full" if i in attn else "linear" for i in range(L)]
    _granite_mamba2(r, s)


def _read_lara(r, s, ll, notes, warnings):
    """Lara-mini: Gated DeltaNet layers (Qwen3-Next's mixer: linear_* heads and dims), sliding and
    full attention layers with per-head q/k RMSNorms and no output gate, as layer_types lists
    them; every layer a MoE with one ungated shared expert of shared_expert_intermediate_size."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    # absent or null: LaraMiniConfig's defaults (tests/fixtures/all_types/lara_mini.json)
    Hv, Hk = r.int("linear_num_value_heads", default=16), r.int("linear_num_key_heads", default=8)
    if Hv % Hk:
        r.fail("linear_num_value_heads", f"must be a multiple of linear_num_key_heads = {Hk}", Hv)
    s["linear_mixer"] = {"kind": "gdn", "heads": Hv, "kv_heads": Hk,
                         "head_dim": r.int("linear_key_head_dim", default=128),
                         "v_head_dim": r.int("linear_value_head_dim", default=128),
                         "conv_kernel": r.int("linear_conv_kernel_dim", default=4), "state_chunk": GDN_CHUNK}
    s["layer_types"] = _layer_pattern(r, L, s) or ["full"] * L
    _read_one_shared_expert(r, s, _mlp_pattern(r, L, default_dense=()))


def _read_minimax01(r, s, ll, notes, warnings):
    """MiniMax-01 (MiniMax-Text-01): lightning-attention layers (linear attention with a per-head
    decay over blocks of block_size: qkv and a sigmoid output gate from the input, an RMSNorm, no
    positions; a H x d x d state per sequence) and softmax attention layers, as layer_types lists
    them; every layer a MoE of num_local_experts gated experts (Mixtral's block)."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "mixtral")
    s["linear_mixer"] = {"kind": "lightning", "heads": s["num_attention_heads"],
                         "kv_heads": s["num_attention_heads"], "head_dim": s["head_dim"],
                         "v_head_dim": s["head_dim"], "conv_kernel": 0,
                         "state_chunk": r.int("block_size", default=256),
                         "state_dtype": "model"}  # MiniMaxCache keeps the state at the model's dtype
    s["layer_types"] = _layer_pattern(r, L, s) or ["full"] * L
    r.used.update(k for k in r.cfg if k.endswith(("_alpha_factor", "_beta_factor")))


def _read_rwkv(r, s, ll, notes, warnings):
    """RWKV (v4, transformers' RwkvForCausalLM; Peng et al. 2023, arXiv 2305.13048): no positions,
    every layer a time-mixing block (key, value, receptance h -> D, output D -> h, per-channel decay
    and bonus, three token-shift mixes; D = attention_hidden_size) and a channel-mixing block (key
    h -> f with squared ReLU, value f -> h, a receptance gate h -> h, two token-shift mixes; f =
    intermediate_size, else 4 h), LayerNorms (two per layer, one more before layer 0), a final
    LayerNorm, an untied head. State per sequence: the two shifted inputs and num, den, max."""
    L, h = s["num_layers"], s["hidden_size"]
    D = r.int("attention_hidden_size", default=h)
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="none", norms_per_layer=2, layer_types=["linear"] * L,
             num_kv_heads=s["num_attention_heads"], head_dim=1,
             ffn_hidden_size=r.int("intermediate_size", default=4 * h), mlp_act_params=2 * h,
             extra_params_per_layer=h * h,  # the channel mix's receptance gate: a matmul every token runs
             layer_overrides={0: {"norms": 3}})
    s["linear_mixer"] = {"kind": "rwkv", "heads": D, "kv_heads": D, "head_dim": 1, "v_head_dim": 1,
                         "conv_kernel": 0, "state_chunk": 0, "model_width": h}
    r.used.update(("context_length", "rescale_every"))


def _read_recurrent_gemma(r, s, ll, notes, warnings):
    """RecurrentGemma (Griffin, De et al. 2024): block_types repeated over the layers, a recurrent
    block (x and gate branches h -> W with biases, a conv of conv1d_width taps, the RG-LRU with
    block-diagonal input and recurrence gates of num_attention_heads blocks, W -> h with a bias;
    W = lru_width) or local attention within attention_window_size (MHA or GQA of head_dim, biased
    output only); a gated GELU MLP of intermediate_size / 2 with biases; two RMSNorms per layer."""
    L, h = s["num_layers"], s["hidden_size"]
    kinds = r.str_list("block_types", choices={"recurrent", "attention"}) or ["recurrent", "recurrent", "attention"]
    if not kinds:
        r.fail("block_types", "must list at least one block", kinds)
    _llama(r, s, ll, notes, warnings, "llama", mlp_bias=True, qkv_bias=False, attn_out_bias=True,
           ffn_hidden_size=ll["ffn_hidden_size"] // 2, head_dim=r.int("head_dim", default=h // s["num_attention_heads"]))
    s["layer_types"] = ["linear" if kinds[i % len(kinds)] == "recurrent" else "sliding" for i in range(L)]
    s["sliding_window"] = r.int("attention_window_size", default=2048)
    W = r.int("lru_width", default=h)
    s["linear_mixer"] = {"kind": "rglru", "heads": W, "kv_heads": W, "head_dim": 1, "v_head_dim": 1,
                         "conv_kernel": r.int("conv1d_width", default=4), "state_chunk": 0,
                         "gate_blocks": s["num_attention_heads"]}
    r.used.update(("logits_soft_cap", "w_init_variance_scale", "final_w_init_variance_scale"))


def _read_bailing_hybrid(r, s, ll, notes, warnings):
    """Bailing hybrid (Ling 2.5 / Ring): Kimi Delta Attention layers with full-rank decay and output
    gate projections (h -> D each; linear_num_heads of linear_head_dim, conv of
    linear_conv_kernel_dim) and MLA layers (no query bottleneck) with a per-head sigmoid gate
    (g_proj h -> a), as layer_types lists them; dense then MoE layers (mlp_layer_types) with
    num_shared_experts shared experts; the MTP layer is not built."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", attn_output_gate="headwise")
    _read_mla(r, s)
    H, d = r.int("linear_num_heads", default=32), r.int("linear_head_dim", default=128)  # BailingHybridConfig's
    s["linear_mixer"] = {"kind": "kda", "heads": H, "kv_heads": H, "head_dim": d, "v_head_dim": d,
                         "conv_kernel": r.int("linear_conv_kernel_dim", "short_conv_kernel_size", default=4),
                         "state_chunk": GDN_CHUNK, "full_rank_gates": True}
    s["layer_types"] = _layer_pattern(r, L, s) or ["full"] * L
    n_sh = r.int("num_shared_experts", lo=0, default=0)
    f_e = r.int("moe_intermediate_size")
    s.update(moe=True, num_experts=r.int("num_experts"), topk=r.int("num_experts_per_token", "num_experts_per_tok"),
             moe_ffn_hidden_size=f_e, num_shared_experts=n_sh, shared_expert_ffn_hidden_size=n_sh * f_e,
             moe_layer_set=_mlp_pattern(r, L, default_dense=range(r.int("first_k_dense_replace", lo=0, default=0))))
    r.used.update(("layer_group_size", "kda_safe_gate", "kda_lower_bound", "num_expert_group", "moe_renormalize",
                   "model_max_length", "mtp_loss_scaling_factor"))
    _note_mtp(r, s)


def _read_zamba(r, s, ll, notes, warnings):
    """Zamba 1 and 2: Mamba layers (Zamba: Mamba-1 of inner width mamba_expand x h, n_mamba_heads
    heads that split x_proj / dt_proj without changing their size; Zamba 2: Mamba-2) with, on the
    hybrid layers (layers_block_type), a transformer block whose weights all hybrid layers share
    (num_mem_blocks of them, used in turn): attention over the layer input concatenated with the
    embedding (q, k, v read 2 h; attention_hidden_size wide, head attention_head_dim), an RMSNorm
    over 2 h, a gated MLP with its norm; then a per-layer h x h linear; Zamba 2 adds a LoRA of rank
    adapter_rank on the shared MLP's gate/up projection per hybrid layer. The shared blocks' weights
    are counted on their first use (tied after), their FLOPs and K/V cache on every hybrid layer."""
    L, h, mt = s["num_layers"], s["hidden_size"], s["model_type"]
    blocks = r.str_list("layers_block_type", choices={"mamba", "linear_attention", "hybrid"}, length=L)
    if blocks is None:
        r.fail("layers_block_type", "is needed to place the shared blocks", None)
    A = r.int("attention_hidden_size", default=2 * h)
    a = s["num_attention_heads"]
    d = r.int("attention_head_dim", default=A // a)
    n_mem = r.int("num_mem_blocks", default=1) if mt == "zamba2" else 1
    if mt == "zamba2" and r.bool("use_shared_attention_adapter", default=False):
        raise ValueError(f"{r.where}: use_shared_attention_adapter (LoRA on the shared attention) is not counted "
                         "by this script yet")
    _llama(r, s, ll, notes, warnings, "llama", head_dim=d, num_kv_heads=r.int("num_key_value_heads", default=a),
           norms_per_layer=1, layer_types=["hybrid" if b == "hybrid" else "linear" for b in blocks],
           layer_blocks=["both" if b == "hybrid" else "mixer" for b in blocks])
    E = int(r.num("mamba_expand", default=2) * h)
    if mt == "zamba":
        s["linear_mixer"] = {"kind": "mamba1", "heads": E, "kv_heads": E, "head_dim": 1, "v_head_dim": 1,
                             "state_size": r.int("mamba_d_state", default=16),
                             "dt_rank": r.int("mamba_dt_rank", default=-(-h // 16)),
                             "conv_kernel": r.int("mamba_d_conv", default=4), "state_chunk": 0,
                             "in_bias": r.bool("mamba_proj_bias", default=False),
                             "mixer_out_bias": r.bool("mamba_proj_bias", default=False),
                             "conv_bias": r.bool("mamba_conv_bias", default=True), "dt_norms": False}
        r.int("n_mamba_heads", default=2)
    else:
        H = r.int("n_mamba_heads", default=8)
        bias = r.bool("add_bias_linear", default=False)
        _mamba2_mixer(r, s, d_in=E, heads=H, head_dim=r.int("mamba_headdim", default=E // H),
                      groups=r.int("mamba_ngroups", default=1), state=r.int("mamba_d_state", default=64),
                      conv=r.int("mamba_d_conv", default=4), chunk=r.int("chunk_size", default=256),
                      in_bias=bias, out_bias=bias, conv_bias=r.bool("use_conv_bias", default=True), gated_norm=True)
    rank = r.int("adapter_rank", default=128) if mt == "zamba2" else 0
    f = ll["ffn_hidden_size"]
    over, seen = {}, 0
    for i, b in enumerate(blocks):
        if b != "hybrid":
            continue
        tied = seen >= n_mem
        over[i] = {"attention": {"in_width": 2 * h, "tied": tied}, "mlp": {"tied": tied},
                   "norms": 1 + (0 if tied else 3),  # the Mamba layer's, and the shared block's 2 h + h
                   "extra_params": h * h + rank * (h + 2 * f)}
        seen += 1
    s["layer_overrides"] = over
    r.used.update(("hybrid_layer_ids", "attn_layer_period", "attn_layer_offset", "use_mamba_kernels",
                   "use_mem_rope", "use_long_context", "kv_channels", "num_query_groups", "num_logits_to_keep",
                   "hidden_mamba_act", "use_mem_eff_path", "use_associative_scan"))


def _read_glm5_next(r, s, ll, notes, warnings):
    """GLM-5-Next's text model: Kimi Delta Attention layers (linear_num_heads of linear_head_dim,
    low-rank decay and gate) and GLM-5's sparse-attention layers (MLA with a lightning indexer whose
    keys are pooled over index_kpool positions: a learned position table index_kpool x d_I and a gate
    h -> d_I; index_kpool on the attention: formulas.indexer_params, the cache's packed 2 d_I + 1 per
    token, pool-level scores), as layer_types lists them; dense then MoE layers (mlp_layer_types);
    DeepSeek-V4's hyper-connections over hc_mult streams (two mixing modules per layer)."""
    L, h = s["num_layers"], s["hidden_size"]
    lt = r.str_list("layer_types", choices={"linear_attention", "indexed_attention"}, length=L)
    if lt is None:
        r.fail("layer_types", "must list linear_attention and indexed_attention layers", None)
    _read_dsa_every_layer(r, s, ll, notes, warnings)
    H, d = r.int("linear_num_heads", default=64), r.int("linear_head_dim", default=128)  # Glm5NextTextConfig's
    s["linear_mixer"] = {"kind": "kda", "heads": H, "kv_heads": H, "head_dim": d, "v_head_dim": d,
                         "conv_kernel": r.int("linear_conv_kernel_dim", default=4), "state_chunk": GDN_CHUNK}
    s["layer_types"] = ["linear" if t == "linear_attention" else "full" for t in lt]
    hc, kp = r.int("hc_mult", default=4, hi=1024), r.int("index_kpool", default=16)
    over = s.get("layer_overrides") or {}
    for i in range(L):
        if lt[i] == "indexed_attention" and not over.get(i, {}).get("attention", {}).get("index_heads") == 0:
            o = over.setdefault(i, {})
            o["attention"] = dict(o.get("attention", {}), index_kpool=kp)  # its gate and position table
    s.update(layer_overrides=over, **_hyper_connection_layer_fields(hc=hc, h=h))
    r.used.update(("hc_eps", "hc_sinkhorn_iters", "swiglu_limit", "linear_lower_bound", "index_kpool_always_select_tail"))


def _read_xlstm(r, s, ll, notes, warnings):
    """xLSTM (attention-free; transformers' modeling_xlstm, Beck et al. 2025, arXiv 2503.13427, the
    xLSTM 7B block): every layer an RMSNorm, an mLSTM mixer and an RMSNorm, a gated FFN. The mLSTM:
    q, k (h -> h qk_dim_factor), v and the output gate (h -> h v_dim_factor), input and forget gates
    per head (h -> H, with biases), a per-head LayerNorm's weight over the v width, out_proj v -> h;
    biases on every projection and norm with use_bias. The FFN's width: h ffn_proj_factor rounded up
    to ffn_round_up_to_multiple_of. A head of its own (tie_word_embeddings false)."""
    L, h = s["num_layers"], s["hidden_size"]
    if r.int("num_blocks", default=L) != r.int("num_hidden_layers", default=L) and not s.get("_layers_from_flag"):
        r.fail("num_blocks", "must equal num_hidden_layers (transformers builds num_blocks blocks)", r.cfg.get("num_blocks"))
    if r.int("embedding_dim", default=h) != h:
        r.fail("embedding_dim", f"must equal hidden_size {h}", r.cfg.get("embedding_dim"))
    H = s["num_attention_heads"]
    qk, v = int(h * r.num("qk_dim_factor", default=0.5)), int(h * r.num("v_dim_factor", default=1.0))
    if qk % H or v % H or not qk or not v:
        r.fail("num_heads", f"must divide the q/k width {qk} and the v width {v}", H)
    m, pf = r.int("ffn_round_up_to_multiple_of", default=64), r.num("ffn_proj_factor", default=2.667)
    f = int(((h * pf + m - 1) // m) * m)  # transformers' round_up_to_next_multiple_of, on the float h x factor
    bias = r.bool("use_bias", default=False)
    r.str("weight_mode", choices={"single", "fused"}, default="single")  # the same weights, fused or not
    s.update(norm="layernorm" if bias else "rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False,
             mlp_bias=bias, position_embedding="none", norms_per_layer=2, layer_types=["linear"] * L,
             num_kv_heads=H, head_dim=1, ffn_hidden_size=f)
    s["linear_mixer"] = {"kind": "mlstm", "heads": H, "kv_heads": H, "head_dim": qk // H, "v_head_dim": v // H,
                         "conv_kernel": 0, "state_chunk": r.int("chunk_size", default=64), "mixer_bias": bias,
                         "state_dtype": "model"}  # transformers' xLSTMCache holds (C, n, m) at the model's dtype
    r.used.update(("add_out_norm", "autocast_kernel_dtype", "chunkwise_kernel", "sequence_kernel", "step_kernel",
                   "mode", "gate_soft_cap", "output_logit_soft_cap", "inference_state_dtype", "eps", "norm_eps",
                   "norm_reduction_force_float32", "max_inference_chunksize", "return_last_states"))


# model_type -> reader, for config.py's registry
STATE_READERS = {
    "mamba": _read_mamba, "falcon_mamba": _read_mamba, "mamba2": _read_mamba2, "bamba": _read_bamba,
    "zamba": _read_zamba, "zamba2": _read_zamba, "lfm2": _read_lfm2, "lfm2_vl_text": _read_lfm2, "lfm2_moe": _read_lfm2_moe,
    "minimax": _read_minimax01, "rwkv": _read_rwkv, "recurrent_gemma": _read_recurrent_gemma,
    "lara_mini": _read_lara, "bailing_hybrid": _read_bailing_hybrid, "glm5_next_text": _read_glm5_next,
    "xlstm": _read_xlstm,
}
# Attention-free families: their configs have no attention-head field.
ATTENTION_FREE = {"mamba", "falcon_mamba", "rwkv", "xlstm"}


# ======== llmcalc/model/config.py =================================================================
# spec_from_hf_config: a config.json, or the text model of a multimodal wrapper, read by its
# family's reader (the registry below) into a flat spec; the checkpoint's quantization format
# (compressed-tensors, FP8 blocks, MXFP4, ModelOpt NVFP4/FP8/AWQ) and the bits each weight is stored at.

# Hugging Face config classes whose tie_word_embeddings default is True when config.json omits it
# (PretrainedConfig's default); the others pass tie_word_embeddings=False in their constructors.
_TIED_BY_DEFAULT = set("gpt2 opt bloom falcon gemma gemma2 starcoder2 gemma3_text gemma4_text "
                       "cohere2 exaone4 smollm3 granitemoe olmo3 seed_oss llama4_text lfm3".split())

# model_types that transformers builds but these readers do not describe: exit 2 with the reason
# (one line each) rather than print a Llama-style count. tests/test_all_types.py holds every type
# transformers 5.24 builds to this list.
_SSM = "has linear-attention or state-space layers, which this script does not count yet"
# Checked on the meta device (transformers 5.24, VALIDATION.md): the BERT-style causal-LM classes build with
# is_decoder False (bidirectional, no cross-attention) from their defaults; the encoder-decoder families'
# causal-LM classes are their decoders, every layer with cross-attention to the encoder's states.
_ENCODER = "is an encoder (bidirectional, BERT-style) model; this script counts decoder-only LMs"
_ENC_DEC = ("is an encoder-decoder model (its causal-LM class is the decoder, cross-attending to the encoder's "
            "states); this script counts decoder-only LMs")
_NOT_YET = {
    "plamo2": _SSM,  # PLaMo 2 (Mamba + attention) is not in transformers 5.24: a hub config of it exits here
    **dict.fromkeys("bert bert-generation big_bird camembert data2vec-text electra ernie megatron-bert rembert "
                    "roberta roberta-prelayernorm roc_bert roformer xlm xlm-roberta xlm-roberta-xl xmod "
                    "blip_text_model".split(), _ENCODER),
    **dict.fromkeys("bart bigbird_pegasus blenderbot blenderbot-small marian mbart mvp pegasus plbart "
                    "prophetnet trocr whisper pix2struct_text_model".split(), _ENC_DEC),
    "xlnet": "is XLNet's two-stream permutation LM (relative attention, segment biases), not a decoder-only LM",
    "blt": "is a byte-level latent transformer (local encoder and decoder around a global model), which "
           "this script does not count yet",
}
# Config fields that only layers of those kinds have: an unknown model_type showing them exits 2.
_FOREIGN_LAYER_FIELDS = tuple("linear_num_key_heads linear_num_value_heads linear_key_head_dim "
                              "linear_conv_kernel_dim mamba_d_state mamba_n_heads mamba_d_conv "
                              "ssm_state_size state_size conv_kernel layers_block_type "
                              "hybrid_override_pattern attn_layer_period attn_layer_offset "
                              "block_types layer_block_types full_attn_idxs linear_attn_config "
                              "short_conv".split())


# The text model a multimodal wrapper holds, when its text_config does not name its own type.
_WRAPPED_TEXT_TYPE = {"gemma3": "gemma3_text", "gemma4": "gemma4_text", "llama4": "llama4_text",
                      "mistral3": "mistral", "kimi_k25": "deepseek_v3",
                      "mistral_large4": "mistral_large4_text", "qwen3_5": "qwen3_5_text",
                      "qwen3_5_moe": "qwen3_5_moe_text", "step3p7": "step3p5"}
# Fields transformers' text config classes fill in when a wrapper's text_config omits them (Gemma 3's
# published configs list only a few): the class defaults of transformers 5.23.
_TEXT_CLASS_DEFAULTS = {
    "gemma3_text": {"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
                    "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
                    "head_dim": 256, "sliding_window": 4096},
    "gemma4_text": {"vocab_size": 262144, "hidden_size": 2304, "intermediate_size": 9216,
                    "num_hidden_layers": 30, "num_attention_heads": 8, "num_key_value_heads": 4,
                    "head_dim": 256, "sliding_window": 512},
    "llama4_text": {"vocab_size": 202048, "hidden_size": 5120, "intermediate_size": 8192,
                    "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8,
                    "head_dim": 128},
    "mistral": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128},
}
_WRAPPER_TIED = {"gemma3": True, "gemma4": True, "llama4": False, "mistral3": True, "kimi_k25": True,
                 "mistral_large4": False}


def _read_multimodal(cfg, where, warnings):
    """Unwrap a vision-language config to its text model. Returns (text_cfg, wrapper_info)."""
    top = ConfigReader(cfg, where)
    mt = top.str("model_type", default=None)
    text = top.sub("text_config")
    if text is None or top.has("hidden_size") and not top.has("vision_config"):
        return cfg, None
    text = dict(text)
    text.setdefault("model_type", _WRAPPED_TEXT_TYPE.get(mt, mt))
    # transformers 5 ties the head by the wrapper's own switch (class defaults differ from the text's)
    # transformers 5 ties the head by the wrapper's own switch; a published config that sets only the
    # text's switch describes a checkpoint whose head is its own tensor (from_pretrained keeps it so)
    text_tie = ConfigReader(text, where).bool("tie_word_embeddings", default=None)
    top_tie = top.bool("tie_word_embeddings", default=None)
    if text.get("model_type") == "kimi_k2":
        text["model_type"] = "deepseek_v3"  # transformers reads Kimi's text model as DeepSeek-V3
    filled = [k for k in _TEXT_CLASS_DEFAULTS.get(text["model_type"], {}) if k not in text]
    for key in filled:
        text[key] = _TEXT_CLASS_DEFAULTS[text["model_type"]][key]
    if filled:
        warnings.append(f"text_config omits {', '.join(filled)}: transformers' {text['model_type']} class "
                        "defaults used, as transformers does")
    text_default = text["model_type"] in _TIED_BY_DEFAULT
    text["tie_word_embeddings"] = (top_tie if top_tie is not None else
                                   text_tie if text_tie is not None else text_default)
    if top_tie is None and text_tie is None and _WRAPPER_TIED.get(mt, False) != text_default:
        warnings.append(f"no tie_word_embeddings in the config: transformers 5 builds {mt!r} with "
                        f"{'a tied' if _WRAPPER_TIED.get(mt) else 'an untied'} head (its class default), "
                        f"but the checkpoint's {text['model_type']} head is {'tied' if text_default else 'its own tensor'}, "
                        "as counted here")
    parts = [k for k in ("vision_config", "audio_config", "projector_config") if isinstance(cfg.get(k), dict)]
    if parts:
        warnings.append(f"multimodal {mt!r}: the language model is counted; the "
                        + " and ".join(p.replace("_config", " tower") for p in parts)
                        + " and the multimodal projector are not counted")
    return text, {"wrapper_model_type": mt, "towers_not_counted": parts}


def spec_from_hf_config(cfg, num_layers=None):
    """Translate a Hugging Face config dict into the spec's model fields, per family, as
    transformers 5's modeling_<family>.py builds the weights. Returns (fields, notes, warnings):
    notes say what was assumed, warnings go into the result (an unknown model_type read
    generically, a count-changing field not read, towers not counted). `num_layers` cuts the
    config's layer pattern to its first layers (for -l)."""
    where = cfg.get("_config_path") or "config"
    notes, warnings = [], []
    ConfigReader(cfg, where).str("model_type", default=None)  # a list or number here is an error
    top_qc = cfg.get("quantization_config") or (cfg.get("text_config") or {}).get("quantization_config") \
        if isinstance(cfg.get("text_config") or {}, dict) else cfg.get("quantization_config")
    if isinstance(top_qc, dict) and cfg.get("expert_dtype") is not None and "expert_dtype" not in top_qc:
        top_qc = dict(top_qc, expert_dtype=cfg["expert_dtype"])  # as DeepseekV4Config moves it there
    if top_qc is not None and not isinstance(top_qc, dict):
        raise ValueError(f"{where}: field 'quantization_config' must be an object (a dict of quant_method, "
                         f"bits, ...), got {str(top_qc)[:40]!r}; transformers refuses it too")
    _check_dtype(cfg, where, warnings)
    cfg, mm = _read_multimodal(cfg, where, warnings)
    r = ConfigReader(cfg, where if mm is None else f"{where} (text_config)", warnings)
    mt = r.str("model_type", default=None)
    if mt in ALIASED:  # XGLM / Kosmos-2 name the basic sizes otherwise
        cfg = {**{FIELD_ALIASES[k]: v for k, v in cfg.items() if k in FIELD_ALIASES}, **cfg}
        r = ConfigReader(cfg, r.where, warnings)
        r.used.update(k for k in FIELD_ALIASES if k in cfg)
    if mt in _NOT_YET:
        raise ValueError(f"{where}: model_type {mt!r} {_NOT_YET[mt]}")
    known = mt in _FAMILY_READERS
    if not known:
        foreign = [k for k in _FOREIGN_LAYER_FIELDS if r.has(k)]
        if foreign:
            raise ValueError(f"{where}: unknown model_type {mt!r} has layers a Llama-style reading "
                             f"cannot describe (fields {', '.join(foreign)})")
    h = r.int("hidden_size", "n_embd", "n_embed", "d_model")
    if mt == "longcat_flash":  # num_hidden_layers = 2 x num_layers there (two blocks a layer): not a clash
        L_cfg = r.int("num_layers") or (r.int("num_hidden_layers", hi=200_000) or 0) // 2 or None
    else:
        L_cfg = r.int("num_hidden_layers", "n_layer", "num_layers", "n_layers")
    if L_cfg is None and mt == "nemotron_h":  # a property of the pattern there, not always written
        L_cfg = len(_nemotron_blocks(r))
    a = r.int("num_attention_heads", "n_head", "num_heads", "n_heads", default=1 if mt in ATTENTION_FREE else None)
    if a is None and mt == "jetmoe":  # JetMoeConfig derives it (k experts' kv heads) and takes no such argument
        a = r.int("num_key_value_heads", default=16) * r.int("num_experts_per_tok", default=2)
    missing = [k for k, v in (("vocab_size", r.int("vocab_size")), ("hidden_size", h),
                              ("num_layers", L_cfg), ("num_attention_heads", a)) if v is None]
    if missing:
        raise ValueError(f"{where}: config lacks integer field(s) for {', '.join(missing)}")
    # transformers refuses a layer pattern of another length; checkpoints that pad it with their
    # multi-token-prediction layers (Step 3.5/3.7) are cut to the layers
    mtp = next((v for k in ("num_nextn_predict_layers", "num_mtp_layers", "mtp_num_hidden_layers")
                if isinstance(v := cfg.get(k), int) and not isinstance(v, bool) and v > 0), 0)
    for key in ("layer_types", "mlp_layer_types"):
        if isinstance(cfg.get(key), list) and len(cfg[key]) not in (L_cfg, L_cfg + mtp):
            raise ValueError(f"{r.where}: field {key!r} lists {len(cfg[key])} layers, but the model has {L_cfg} "
                             "(num_hidden_layers); transformers refuses such a config")
    if num_layers is not None and num_layers > L_cfg and (r.has("layer_types") or r.has("mlp_layer_types")):
        raise ValueError(f"--num-layers {num_layers} is more than the {L_cfg} layers the config's "
                         "layer pattern describes")
    L = num_layers or L_cfg
    s = {"model_type": mt, "vocab_size": r.int("vocab_size"), "hidden_size": h,
         "num_layers": L, "num_attention_heads": a,
         "tied_embeddings": r.bool("tie_word_embeddings", default=mt in _TIED_BY_DEFAULT)}
    if mm:
        s["multimodal"] = mm
    llama_like = dict(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False,
                      mlp_bias=False, position_embedding="rope",
                      num_kv_heads=r.int("num_key_value_heads", "num_kv_heads", default=a),
                      head_dim=r.int("head_dim", lo=0) or h // a,  # 0: unset (GLM-5-Next's MLA writes it so)
                      # a per-layer list (Gemma 3n) is left to the family's reader
                      ffn_hidden_size=None if known and isinstance(cfg.get("intermediate_size"), list)
                      else r.int("intermediate_size", "ffn_hidden_size"))
    if not r.has("head_dim") and h % a:
        notes.append(f"no head_dim in the config and hidden_size {h} is not a multiple of {a} heads: "
                     f"head_dim {h // a} (h // a), as transformers computes it")
    s["_layers_from_flag"] = num_layers is not None
    read = _FAMILY_READERS.get(mt)
    if read is None:
        s.update(llama_like)
        bias = r.bool("attention_bias", default=False)
        s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=r.bool("mlp_bias", default=False))
        _read_generic_moe(r, s, notes)
    else:
        s["model_type"] = SAME_AS.get(mt, mt)  # a wrapper's text model read as its family
        read(r, s, llama_like, notes, warnings)
        s["model_type"] = mt
    if "layer_types" not in s:
        s["layer_types"] = _layer_pattern(r, L, s)
    s["sliding_window"] = s.get("sliding_window", (r.int("sliding_window", lo=0) or None))
    s["attention_chunk_size"] = s.get("attention_chunk_size", r.int("attention_chunk_size"))
    if s["layer_types"] is None and s["sliding_window"] and s.get("slides_every_layer"):
        s["layer_types"] = ["sliding"] * L
    if s["layer_types"] and "sliding" in s["layer_types"] and not s["sliding_window"]:
        raise ValueError(f"{where}: layer_types has sliding layers but sliding_window is not set")
    if s["layer_types"] and "chunked" in s["layer_types"] and not s["attention_chunk_size"]:
        raise ValueError(f"{where}: layer_types has chunked layers but attention_chunk_size is not set")
    if s.get("moe"):
        s["expert_interval"] = 1  # a config's MoE layout is explicit, never a script's -ei default
        # (also when --num-dense-layers redraws it: the layers past the dense ones are all MoE)
    if s.get("moe") and s.get("topk") is None:
        raise ValueError(f"{where}: MoE config lacks num_experts_per_tok")
    if s.get("moe") and r.has("n_group") and r.has("topk_group"):  # group-limited routing (DeepSeek-V2/V3)
        _check_router_groups(r, s, warnings)
    s.pop("_layers_from_flag", None)
    s["trained_context"] = _trained_context(r)
    s["checkpoint_format"] = _checkpoint_format(top_qc, where, warnings)
    if not known:
        skipped = _unread_fields(r)
        warnings.append(f"model_type {mt!r} is not one this script knows; read as Llama-style "
                        "(RMSNorm, gated 3-matrix MLP, no biases, rotary, num_key_value_heads/"
                        "head_dim/intermediate_size as given): the count may be wrong"
                        + (f"; fields not read: {', '.join(skipped)}" if skipped else ""))
    unread = r.unread_count_fields()
    if unread:
        warnings.append("config field(s) not read, which may change the count: " + ", ".join(unread))
    return {k: v for k, v in s.items() if v is not None}, notes, warnings


# Config fields that never describe weights: bookkeeping transformers writes into every config.
_BOOKKEEPING = set("architectures auto_map bos_token_id eos_token_id pad_token_id sep_token_id "
                   "decoder_start_token_id id2label label2id dtype torch_dtype transformers_version "
                   "output_attentions output_hidden_states return_dict use_cache initializer_range "
                   "chunk_size_feed_forward is_encoder_decoder is_decoder problem_type tie_encoder_decoder "
                   "add_cross_attention cross_attention_hidden_size tokenizer_class prefix task_specific_params "
                   "finetuning_task torchscript pruned_heads tf_legacy_loss use_bfloat16 "
                   "max_position_embeddings rope_parameters rope_scaling rope_theta model_type "
                   "tie_word_embeddings pretraining_tp".split())


def _unread_fields(r):
    """Every field of the config the generic reading did not read, less bookkeeping, dropouts,
    epsilons and initialiser scales (none of them describes a weight): what a family reader
    would have to look at."""
    return sorted(k for k, v in r.cfg.items() if k not in r.used and k not in _BOOKKEEPING
                  and not k.startswith("_") and v is not None
                  and not any(x in k for x in ("dropout", "_eps", "epsilon", "initializer", "_pdrop")))


# The dtype names transformers writes as a config's dtype / torch_dtype (torch's, with "auto").
_DTYPES = {"float32", "float16", "bfloat16", "float64", "float8_e4m3fn", "float8_e5m2", "int8", "uint8",
           "float", "half", "double", "auto"}


def _check_dtype(cfg, where, warnings):
    """A stated warning for a dtype transformers would not know, or torch_dtype and dtype that
    disagree (transformers 5 reads dtype); the counts do not depend on it."""
    vals = {k: cfg.get(k) for k in ("dtype", "torch_dtype") if cfg.get(k) is not None}
    for k, v in vals.items():
        if not isinstance(v, str) or v.replace("torch.", "") not in _DTYPES:
            warnings.append(f"{where}: {k} {str(v)[:40]!r} is not a dtype transformers knows; not used here "
                            "(weights are counted at the flags' precision)")
    if len(vals) == 2 and vals["dtype"] != vals["torch_dtype"]:
        warnings.append(f"{where}: torch_dtype {str(vals['torch_dtype'])[:20]!r} and dtype {str(vals['dtype'])[:20]!r} "
                        "disagree; transformers 5 reads dtype")


def _check_router_groups(r, s, warnings):
    """Group-limited routing picks topk_group of n_group expert groups, then top-k experts among
    them (DeepSeek-V2 sec. 2.1.2, device-limited routing; transformers' DeepseekV3TopkRouter): a
    stated warning when the config's numbers cannot do that. The counts do not depend on it."""
    groups, picked, E, k = r.int("n_group"), r.int("topk_group"), s.get("num_experts") or 0, s["topk"]
    if picked > groups:
        warnings.append(f"{r.where}: the router cannot pick topk_group {picked} of n_group {groups} groups")
    elif E % groups:
        warnings.append(f"{r.where}: n_group {groups} does not divide the {E} routed experts into equal groups")
    elif k > picked * (E // groups):
        warnings.append(f"{r.where}: num_experts_per_tok {k} is more than the {picked * (E // groups)} experts "
                        f"of the topk_group {picked} groups the router picks")


def _trained_context(r):
    """The longest context the model was trained or extended to, in tokens: max_position_embeddings
    (n_positions; max_seq_len in MPT and DBRX), or a rope scaling's original length x factor when that is longer (YaRN, dynamic
    NTK and LongRoPE stretch a shorter trained window; transformers' rope_scaling, rope_parameters
    in 5.x). None when the config states neither. A field or rope block not understood is left out
    (the counts do not depend on it; only the context checks use it)."""
    r.used.update(("max_position_embeddings", "n_positions", "max_seq_len"))
    n = next((v for v in (r.cfg.get("max_position_embeddings"), r.cfg.get("n_positions"), r.cfg.get("max_seq_len"))
              if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 2**31), None)
    rope = r.cfg.get("rope_parameters") or r.cfg.get("rope_scaling")
    if isinstance(rope, dict) and rope.get("rope_type", rope.get("type")) in ("yarn", "dynamic", "longrope"):
        factor, orig = rope.get("factor"), rope.get("original_max_position_embeddings") or n
        if (isinstance(factor, (int, float)) and not isinstance(factor, bool) and 1 <= factor <= 1e4
                and isinstance(orig, int) and not isinstance(orig, bool) and 0 < orig <= 2**31):
            n = max(n or 0, int(factor * orig))
    return n


def _checkpoint_format(qc, where, warnings):
    """The checkpoint's weight format from quantization_config, as bits per weight, scales
    included: {"method", "linear_bits", "expert_bits"} for the layers' matrices (other weights:
    16). MXFP4 (gpt-oss): 4 bits + an 8-bit scale per 32 = 4.25, routed experts only (OCP MX spec
    v1.0). FP8 block-quantized (DeepSeek-V3): 8 bits + an fp32 scale per b1 x b2 block (DeepSeek-V4's
    experts with expert_dtype fp4: 4 bits + a scale per 32 weights, 1 byte with scale_fmt ue8m0). AWQ/GPTQ:
    w bits + an fp16 scale and a w-bit zero per group. compressed-tensors: w bits + a 16-bit scale
    per group (+ a zero when asymmetric). ModelOpt (quant_method modelopt, or hf_quant_config.json
    beside config.json): _modelopt_weight_bits. The modules a config leaves out stay 16-bit."""
    if not isinstance(qc, dict):
        return None
    label = f"{where} (quantization_config)"
    if isinstance(qc.get("quantization"), dict) and "quant_method" not in qc:
        qc = dict(qc["quantization"], quant_method="modelopt")  # hf_quant_config.json's layout
        label = f"the hf_quant_config.json beside {where} (quantization)"  # errors name that file
    q = ConfigReader(qc, label)
    method = q.str("quant_method", default="")
    skip = " ".join(str(x) for x in (qc.get("modules_to_not_convert") or qc.get("ignore")
                                     or qc.get("exclude_modules") or []))
    experts_only = "self_attn" in skip  # attention left in 16 bits: only the MLP/expert matrices
    dense_skipped = "shared_experts" in skip or ("mlp" in skip and "down_proj" in skip)
    if method == "mxfp4":
        bits = 4 + 8 / 32
        lin, exp = (16, bits) if experts_only else (bits, bits)
    elif method == "fp8":
        block = q.int_list("weight_block_size", lo=1, default=None)
        bits = 8 + (32 / (block[0] * block[1]) if block and len(block) == 2 else 0)
        lin, exp = (16 if experts_only else bits), bits
        if q.str("expert_dtype", default="fp8", choices=("fp8", "fp4")) == "fp4":
            # DeepSeek-V4's experts: two e2m1 values per byte and a scale per 32 (transformers'
            # finegrained_fp8), 1-byte ue8m0 scales with scale_fmt ue8m0
            exp = 4 + (8 if q.str("scale_fmt", default="float") == "ue8m0" else 32) / 32
    elif method in ("awq", "gptq"):
        w = q.int("bits", "w_bit", default=4, hi=16)
        g = q.int("group_size", "q_group_size", lo=-1, default=128)
        g = g if g > 0 else 1 << 30
        lin = exp = w + (16 + w) / g
    elif method == "compressed-tensors":
        groups = q.sub("config_groups") or {}
        wt = next((v.get("weights") for v in groups.values() if isinstance(v, dict) and isinstance(v.get("weights"), dict)), None)
        if not wt:
            warnings.append("quantization_config compressed-tensors without weight groups: weights "
                            "counted at 16 bits; pass --weight-bits")
            return None
        w = ConfigReader(wt, f"{where} (quantization_config weights)")
        nb, g = w.int("num_bits", default=8, hi=16), w.int("group_size", default=0, lo=0)
        bits = nb + ((16 + (0 if w.bool("symmetric", default=True) else nb)) / g if g else 0)
        lin, exp = (16 if experts_only or dense_skipped else bits), bits
    elif method == "modelopt":
        algo = q.str("quant_algo", default="")
        bits = _modelopt_weight_bits(algo.upper(), q.int("group_size", default=None))
        if bits is None:
            warnings.append(f"quantization_config modelopt quant_algo {algo!r} is not modelled: weights "
                            "counted at 16 bits; pass --weight-bits")
            return None
        lin, exp = (16 if experts_only else bits), bits
        method = f"modelopt {algo.upper()}"
        # the KV cache format the checkpoint carries scales for (ModelOpt's kv_cache_quant_algo):
        # reported, not applied; whether the cache is stored so is the serving stack's choice
        kv = (q.str("kv_cache_quant_algo", default="") or "").upper()
        if kv and kv != "NONE":
            return {"method": method, "linear_bits": lin, "expert_bits": exp, "kv_cache_format": kv}
    else:
        warnings.append(f"quantization_config quant_method {method!r} is not modelled: weights counted "
                        "at 16 bits; pass --weight-bits")
        return None
    return {"method": method, "linear_bits": lin, "expert_bits": exp}


def _modelopt_weight_bits(algo, group):
    """Bits per weight, scales included, of a ModelOpt (NVIDIA Model Optimizer) checkpoint's
    quant_algo, or None when not modelled. NVFP4 (also weight-only W4A16_NVFP4, NVFP4_AWQ and
    W4A8_NVFP4_FP8): e2m1 values with an E4M3 scale per 16 (NVIDIA's NVFP4 format; the fp32 scale
    per tensor is left out); FP8 and FP8_PER_CHANNEL_PER_TOKEN: 8 bits with a per-tensor or
    per-channel scale (left out); FP8_PB_WO: an fp32 scale per 128 x 128 block (ModelOpt's
    default block); MXFP8: an 8-bit scale per 32 (OCP MX spec v1.0); INT4_AWQ / W4A8_AWQ / W4A16_AWQ:
    int4 with an fp16 scale per group of 128 (ModelOpt's AWQ default)."""
    if algo in ("NVFP4", "W4A16_NVFP4", "NVFP4_AWQ", "W4A8_NVFP4_FP8"):
        return 4 + 8 / (group or 16)
    if algo in ("FP8", "FP8_PER_CHANNEL_PER_TOKEN"):
        return 8
    if algo == "FP8_PB_WO":
        return 8 + 32 / (128 * 128)
    if algo == "MXFP8":
        return 8 + 8 / 32
    if algo in ("INT4_AWQ", "W4A8_AWQ", "W4A16_AWQ"):
        return 4 + 16 / (group or 128)
    return None


# Every model_type the package reads, and its reader (the Llama-style families share one).
_FAMILY_READERS = {
    **dict.fromkeys(("llama mistral mixtral qwen2 qwen2_moe qwen3 qwen3_moe gemma gemma2 phi3 olmo2 "
                     "deepseek_v2 deepseek_v3 mistral4").split(), _read_llama_like),
    "gpt2": _read_gpt2, "gpt_neox": _read_gpt_neox, "opt": _read_opt, "bloom": _read_bloom,
    "falcon": _read_falcon, "starcoder2": _read_starcoder2, "gpt_oss": _read_gpt_oss,
    "llama4_text": _read_llama4, "gemma3_text": _read_gemma3, "gemma4_text": _read_gemma4,
    "glm4_moe": _read_glm4_moe, "glm_moe_dsa": _read_dsa, "deepseek_v32": _read_dsa, "axk2": _read_axk2,
    "mistral_large4_text": _read_mistral_large4,
    "minimax_m2": _read_minimax_m2, "ernie4_5_moe": _read_ernie45_moe, "hy_v3": _read_hy_v3,
    "longcat_flash": _read_longcat, "olmo3": _read_olmo3, "smollm3": _read_smollm3,
    "seed_oss": _read_seed_oss, "exaone4": _read_exaone4, "cohere2": _read_cohere2,
    "granitemoe": _read_granitemoe, "phimoe": _read_phimoe, "qwen3_next": _read_qwen_gdn,
    "qwen3_5_text": _read_qwen_gdn, "qwen3_5_moe_text": _read_qwen_gdn,
    "olmo_hybrid": _read_olmo_hybrid, "nemotron_h": _read_nemotron_h,
    "granitemoehybrid": _read_granitemoehybrid, "falcon_h1": _read_falcon_h1,
    "jamba": _read_jamba, "lfm3": _read_lfm3, "kimi_linear": _read_kimi_linear,
    "deepseek_v4": _read_deepseek_v4, "step3p5": _read_step3p5, "dbrx": _read_dbrx, **MORE_READERS, **STATE_READERS,
    **SCONV_READERS, **MOA_READERS}
_FAMILY_READERS.update({mt: _FAMILY_READERS[base] for mt, base in SAME_AS.items()})


# ======== llmcalc/model/spec.py ===================================================================
# resolve_model_spec: values read from a config, then explicit flags (which win on every layer they
# apply to), then defaults; validated and built into the list of layers (build_layers).
# spec_summary is what the reports show of it.

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


# ======== llmcalc/precision.py ====================================================================
# The precision presets every script that costs serving takes (--precision): weight, activation
# and KV-cache bits at once, and how NVFP4 stores its 4-bit weights. Source of the NVFP4 layout:
# NVIDIA technical blog, "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference", 2025.

PRECISIONS = {  # --precision shorthand -> (weight bits, activation bits, kv-cache bits)
    "fp32": (32, 32, 32), "fp16": (16, 16, 16), "bf16": (16, 16, 16), "fp8": (8, 8, 8),
    "int8": (8, 8, 16), "w8a8": (8, 8, 16), "w8a16": (8, 16, 16), "w4a16": (4, 16, 16),
    "w4a8": (4, 8, 8), "fp4": (4, 4, 8), "w4a4": (4, 4, 8),
}
# --precision fp4 stores weights as NVFP4, the format NVIDIA's FP4 checkpoints (TensorRT Model
# Optimizer, nvidia/*-FP4) and Blackwell's FP4 matmuls use: 4-bit E2M1 values with one 8-bit E4M3
# scale per 16 (and one fp32 per tensor, ignored), 4.5 bits per weight (NVIDIA technical blog,
# "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference", 2025). MXFP4 (32 per
# 8-bit scale, 4.25) comes from a checkpoint's quantization_config; --weight-bits 4 counts bare values.
NVFP4_BITS = 4 + 8 / 16


# ======== llmcalc/model/sharding.py ===============================================================
# What one tensor-parallel rank holds of an attention or MLP block (kv heads replicated when
# fewer than tp), as the per-kind functions take it.

def _kv_heads_per_rank(kv, tp):
    """kv heads one tensor-parallel rank holds: kv/tp, or 1 replicated head when kv < tp
    (Megatron-LM and vLLM replicate kv heads when there are fewer than tp)."""
    return kv // tp if kv >= tp else 1


def attention_on_rank(attn, *, tp):
    """The share of one attention block that one tensor-parallel rank holds, as an attention dict
    the block's per-kind functions take: a/tp query heads and kv/tp kv heads (one replicated head
    when kv < tp). What is not per head stays whole on every rank: MLA's down-projections and their
    norms, the output bias, and a lightning indexer (DeepSeek-V3.2's reference model.py builds it
    from plain, replicated Linear layers so every rank picks the same top-k keys)."""
    if tp == 1:
        return attn
    return dict(attn, heads=attn["heads"] // tp, kv_heads=_kv_heads_per_rank(attn["kv_heads"], tp))


def mlp_on_rank(mlp, *, tp, etp):
    """The share of one MLP block that one rank holds, as an MLP dict: a dense MLP and the shared
    experts split their width over tp (Megatron column-parallel input matrices, row-parallel output
    matrix, its bias replicated), each routed expert its width over etp; the router stays whole.
    The routed experts themselves are split over ep by layer_params_per_rank."""
    if mlp["kind"] == "dense":
        return mlp if tp == 1 else dict(mlp, width=mlp["width"] // tp)
    return dict(mlp, width=mlp["width"] // etp, shared_width=mlp["shared_width"] // tp)


# ======== llmcalc/serve/cache.py ==================================================================
# What each layer keeps per sequence on one tensor-parallel rank while serving: the KV cache (and a
# lightning indexer's keys) by layer kind, and the constant state of linear-attention, state-space
# and convolution layers, as transformers 5's cache classes hold them. The one formula both
# calc_transformer_mem.py --infer (serve/footprint.py) and calc_inference_latency.py
# (serve/memory.py) read. Reference: Pope et al. 2022, "Efficiently Scaling Transformer Inference"
# (the KV cache); tests/fixtures/hf_cache_bytes.json and hf_state_bytes.json (transformers' caches
# measured).

def layer_cache_bytes_per_token(layer, *, tp, kv_bytes, mla_cache="latent"):
    """{"kv", "indexer"} bytes one token of one sequence takes in one layer's cache on one tp rank:
    the block's cache_elements_per_token on the rank's share of each attention block
    (attention_on_rank): K and V at kv/tp heads, one replicated head when kv < tp; MLA's latent
    (r_kv + d_rope, DeepSeek-V2 sec. 2.1.3) whole on every rank, or with mla_cache="expanded" a/tp
    heads of K and V as transformers' cache holds them; a lightning indexer's key (d_I) whole on
    every rank; nothing for a layer that reuses another layer's cache."""
    out = {"kv": 0, "indexer": 0}
    for attn in layer["attention"]:
        n = cache_elements_per_token(attention_on_rank(attn, tp=tp), mla_cache=mla_cache)
        out["kv"] += n["kv"] * kv_bytes
        out["indexer"] += n["indexer"] * kv_bytes
    return out


def layer_kv_cache_bytes(layer, *, tp, kv_bytes, mla_cache, batch, context):
    """{"kv", "indexer"} bytes one layer's cache holds on one tp rank for `batch` sequences of
    `context` tokens: per attention block, bytes per token (layer_cache_bytes_per_token) x the
    block's cached_tokens -- min(context, window) on a sliding layer (Mistral 7B sec. 2's rolling
    buffer; transformers keeps window - 1 between steps, so a decode step peaks at the window),
    every token on full and chunked layers (transformers' cache for chunked layers keeps them all),
    none on a layer that reuses another layer's cache; a DeepSeek-V4 layer its window plus its
    compressor's entries and open window (compressed_cache_elements)."""
    out = {"kv": 0, "indexer": 0}
    for attn in layer["attention"]:
        n = cache_elements_per_token(attention_on_rank(attn, tp=tp), mla_cache=mla_cache)
        t = batch * cached_tokens(attn, context=context)
        c = compressed_cache_elements(attn, context=context)  # DeepSeek-V4: one shared head, whole on every rank
        out["kv"] += n["kv"] * kv_bytes * t + batch * c["kv"] * kv_bytes
        out["indexer"] += n["indexer"] * kv_bytes * t + batch * c["indexer"] * kv_bytes
    return out


def layer_state_bytes(layer, *, tp, conv_bytes, state_bytes, batch):
    """{"conv", "recurrent"} bytes one layer's linear mixers hold on one tp rank for `batch`
    sequences, whatever their length: state_elements on the rank's share of the heads
    (attention_on_rank), the conv window at conv_bytes (the model's dtype in transformers' cache)
    and the recurrent state at state_bytes (fp32 in transformers' cache and flash-linear-attention;
    tests/fixtures/hf_cache_bytes.json). Softmax attention layers: none, except the convolution
    windows Inkling and ZAYA keep beside their K/V (state_elements)."""
    out = {"conv": 0, "recurrent": 0}
    for attn in layer["attention"]:
        n = state_elements(attention_on_rank(attn, tp=tp))
        out["conv"] += batch * n["conv"] * conv_bytes
        out["recurrent"] += batch * n["recurrent"] * state_bytes
    return out


# ======== llmcalc/train/recompute.py ==============================================================
# Activation recompute modes: which forward work each mode runs again in the backward, which
# layers it applies to, and the FLOPs that adds (calc_training_time.py's HFU, the step model's
# recompute column, calc_transformer_mem.py's stored activations).
#
# Modes (--recompute), per checkpointed layer:
#   none       nothing recomputed, everything autograd needs is kept.
#   full       the whole layer again from its input (Megatron-LM --recompute-granularity full,
#              torchtitan FullAC, transformers' gradient checkpointing).
#   selective  Megatron-LM's --recompute-granularity selective with --recompute-modules (default
#              core_attn; megatron/core/transformer/transformer_config.py, recompute_modules):
#                core_attn       the attention core (scores, softmax, context). Under a fused
#                                kernel the kernel's forward runs again and almost nothing is saved
#                                (the config warns so), but it is recomputed all the same.
#                mlp             the dense MLP (its matmuls and activation); its input is kept.
#                moe             the whole MoE layer: router, dispatch and combine (all-to-all
#                                again under ep), routed and shared experts.
#                moe_act         the routed experts' activation function (output discarded).
#                shared_experts  the shared experts' MLP.
#                layernorm       each block's norm (output discarded, recomputed from its input).
#                mla_up_proj     MLA's up-projections and rope (q, k, v at all heads discarded).
#   op-sac     torchtitan's per-op selective checkpointing (SelectiveAC; before 2026-03
#              selective_ac_option = "op"): in each block the outputs of compute-intensive ops are
#              saved -- attention (SDPA/flash) outputs and every odd-numbered matmul, counting
#              the block's matmuls in forward order -- and everything else is recomputed: every
#              even-numbered matmul, all elementwise work (norms, rope, activations, residual
#              adds), and the router matmul (force_recompute_mm_shapes_by_fqns: moe.router.gate).
#              Routed experts run grouped_mm, outside the save list: recomputed (an assumption
#              where a stack saves them). torchtitan/distributed/activation_checkpoint.py.
# --recompute-every k applies the mode to every k-th layer only, counting from the first layer,
# the others recomputing nothing (torchtitan's selective_ac_option = "k" before 2026-03: layers
# k, 2k, ... checkpointed; _apply_layer_sac).

RECOMPUTE_MODES = ("none", "selective", "full", "op-sac")
RECOMPUTE_MODULES = ("core_attn", "mlp", "moe", "moe_act", "shared_experts", "layernorm", "mla_up_proj")
DEFAULT_RECOMPUTE_MODULES = ("core_attn",)  # Megatron-LM's default


def layer_checkpointed(index, *, every):
    """True when layer `index` (0-based over the whole model) is checkpointed under
    --recompute-every k: layers k-1, 2k-1, ... (torchtitan counts blocks from 1 and checkpoints
    the k-th, 2k-th, ...)."""
    return (index + 1) % every == 0


def layer_mode(lay, index):
    """The recompute mode layer `index` runs under: the layout's mode on checkpointed layers,
    none on the others."""
    every = lay.get("recompute_every") or 1
    return lay["recompute"] if layer_checkpointed(index, every=every) else "none"


def layer_modes(lay, indices):
    """layer_mode of each layer in `indices` (a stage's), the layout read once."""
    every = lay.get("recompute_every") or 1
    mode = lay["recompute"]
    return [mode if layer_checkpointed(i, every=every) else "none" for i in indices]


def modules_of(lay):
    """The selective modules in force ((), unless the mode is selective)."""
    if lay["recompute"] != "selective":
        return ()
    return tuple(lay.get("recompute_modules") or DEFAULT_RECOMPUTE_MODULES)


def recompute_key(lay):
    """A hashable name of the recompute setting: the mode alone for the default setting (the key
    sequence_flops's hardware FLOPs use), else mode, modules and every."""
    mods, every = modules_of(lay), lay.get("recompute_every") or 1
    if every == 1 and mods in ((), DEFAULT_RECOMPUTE_MODULES):
        return lay["recompute"]
    return (lay["recompute"], mods, every)


def attention_linear_shapes(attn_r, *, h):
    """(input width, output width) of one rank's attention projections as two matmuls with k = h
    and n = h: the output projection's input width (query heads x value dim, or a mixer's out_proj
    width), and everything else the block counts for the layer (q/k/v, gates, MLA's down and up
    projections, a lightning indexer's projections) folded into one matmul of the same FLOPs
    (attention_linear_flops_per_token). Exact in FLOPs; the shape of the folded part is approximate
    (MLA's up-projections reduce over their latent rank, not h)."""
    flops = attention_linear_flops_per_token(attn_r, h=h)
    if attn_r["span"] == "state":
        out = mixer_widths(attn_r)[1]
    else:
        out = attn_r["heads"] * attention_head_dims(attn_r)[1]
    n_in = flops / (2 * h) - out
    if n_in <= 0:
        return flops / (2 * h), 0
    return n_in, out


def block_matmuls(layer, *, h, tp, etp):
    """The matmuls of one layer on one tensor-parallel rank that op-SAC counts, in forward order,
    as (k, n, recomputed, owner) per token: n the output width on the rank, k the
    reduction. MHA/GQA/MQA: q (with any output gate), k, v, o as separate projections
    (torchtitan's and transformers' modules); other attention kinds as attention_linear_shapes's
    two folded matmuls; a gated MLP gate, up, down (w1, w3, w2), a 2-matrix MLP up, down; an MoE
    block's shared experts likewise (routed experts and router are recomputed whole, not here).
    Every second one in the layer (the 2nd, 4th, ...) is recomputed."""
    mms = []  # (k, n, owner)
    for attn in layer["attention"]:
        ar = attention_on_rank(attn, tp=tp)
        if ar["kind"] == "mha" and ar["span"] != "state":
            a, kv = ar["heads"], ar["kv_heads"]
            d, dv = attention_head_dims(ar)
            gate = ar.get("output_gate", "none")
            q = a * d * (2 if gate == "elementwise" else 1) + (a if gate == "headwise" else 0)
            kvp = ar.get("kv_proj", 2)  # 2: k and v; 1: one projection for both (k = v); 0: reused K/V
            proj = [(h, q)] + [(h, kv * d), (h, kv * dv)][:kvp] + [(a * dv, h)]
        else:
            n_in, n_out = attention_linear_shapes(ar, h=h)
            proj = [(h, n_in)] + ([(n_out, h)] if n_out else [])
        mms += [(k, n, "attention_linear") for k, n in proj]
    for mlp in layer["mlp"]:
        mr = mlp_on_rank(mlp, tp=tp, etp=etp)
        w = mr["width"] if mlp["kind"] == "dense" else mr["shared_width"]
        if not w:
            continue
        proj = ([(h, w), (h, w)] if mlp["linears"] == 3 else [(h, w)]) + [(w, h)]
        mms += [(k, n, "mlp") for k, n in proj]
    return [(k, n, i % 2 == 1, owner) for i, (k, n, owner) in enumerate(mms)]


def layer_recompute_flops(layer, *, h, seq_len, mode, modules):
    """Forward FLOPs of one sequence that one layer runs again under a mode (module list for
    selective), counted as calc_transformer_flops.py counts the forward (attention over the full
    s x s, as sequence_flops): full the whole layer; selective the modules' matmuls (core_attn the
    s-squared scores and context, mla_up_proj the up-projections, mlp, moe, shared_experts;
    moe_act and layernorm are not matmuls); op-sac the recomputed matmuls of block_matmuls plus
    the routed experts and router."""
    s = seq_len
    if mode == "none":
        return 0
    core = 0
    for attn in layer["attention"]:
        pairs = query_key_pairs(attn, seq_len=s, attention="full")
        c = attention_core_flops(attn, pairs=pairs)
        core += c.get("attention_scores", 0) + c.get("attention_context", 0) + c.get("indexer_scores", 0)
    mlp = {}
    for m in layer["mlp"]:
        for k, v in mlp_flops_per_token(m, h=h).items():
            mlp[k] = mlp.get(k, 0) + v
    if mode == "full":
        lin = sum(attention_linear_flops_per_token(a, h=h) for a in layer["attention"]) + sum(mlp.values())
        state = sum(v for a in layer["attention"] if a["span"] == "state"
                    for v in attention_core_flops(a, pairs=query_key_pairs(a, seq_len=s, attention="full")).values())
        extra = (layer.get("extra_flops") if layer.get("extra_flops") is not None
                 else 2 * layer["extra_params"] + layer.get("weightless_flops", 0))
        return s * (lin + extra) + core + state
    if mode == "op-sac":
        mm = sum(2 * k * n for k, n, rec, _ in block_matmuls(layer, h=h, tp=1, etp=1) if rec)
        return s * (mm + mlp.get("routed_experts", 0) + mlp.get("router", 0))
    out = 0
    if "core_attn" in modules:
        out += core
    if "mla_up_proj" in modules:
        for a in layer["attention"]:
            if a["kind"] == "mla":
                d_nope, d_v = a["qk_nope_head_dim"], a["v_head_dim"]
                up = a["kv_lora_rank"] * a["heads"] * (d_nope + d_v)
                up += mla_q_macs_per_token(a, h=h) - h * a["q_lora_rank"] if a["q_lora_rank"] else 0
                out += s * 2 * up
    if "mlp" in modules:
        out += s * mlp.get("dense_mlp", 0)
    if "moe" in modules:
        out += s * (mlp.get("routed_experts", 0) + mlp.get("shared_experts", 0) + mlp.get("router", 0))
    elif "shared_experts" in modules:
        out += s * mlp.get("shared_experts", 0)
    return out


def sequence_recompute_flops(spec, *, seq_len, lay):
    """Forward FLOPs of one sequence recomputed in the backward under the layout's recompute
    setting (mode, modules, every k-th layer), summed over the model's layers (not the head)."""
    h, mods = spec["hidden_size"], modules_of(lay)
    seen, total = {}, 0
    for i, layer in enumerate(spec["layers"]):
        mode = layer_mode(lay, i)
        key = (id(layer), mode)
        if key not in seen:
            seen[key] = layer_recompute_flops(layer, h=h, seq_len=seq_len, mode=mode, modules=mods)
        total += seen[key]
    return total



RECOMPUTE_WHAT = {"none": "nothing", "full": "each layer's whole forward from its input",
                  "op-sac": "every second matmul of each layer, routed experts and router, and all memory-bound work "
                            "(torchtitan per-op SAC; attention outputs and the other matmuls kept)",
                  "core_attn": "the attention core", "mlp": "the dense MLP", "moe": "the MoE layer (all-to-all included)",
                  "moe_act": "the experts' activation", "shared_experts": "the shared experts",
                  "layernorm": "the norms", "mla_up_proj": "MLA's up-projections"}


def recompute_text(lay, *, brief=False):
    """One line saying what the layout's recompute setting runs again in the backward; brief: the
    mode's name alone for none, full and the default selective."""
    mode, every = lay["recompute"], lay.get("recompute_every") or 1
    if brief and every == 1 and mode in ("none", "full", "selective") and modules_of(lay) in ((), DEFAULT_RECOMPUTE_MODULES):
        return f"recompute {mode}"
    if mode == "selective":
        what = "selective: " + ", ".join(RECOMPUTE_WHAT[m] for m in modules_of(lay))
    else:
        what = f"{mode}: {RECOMPUTE_WHAT[mode]}"
    return f"recompute {what}" + (f", on one layer in {every} (layers 0, {every}, {2 * every}, ...; the others none)"
                                  if every > 1 and mode != "none" else "")


# ======== llmcalc/train/memory.py =================================================================
# Training memory per GPU on the most-loaded rank: model states (mixed precision, optimizer,
# ZeRO/FSDP), activations (Korthikanti et al. 2022's fused count and the eager PyTorch rule),
# pipeline stages and LoRA.

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


class MemoryConfig(Record):
    """The configuration training_memory reads (and train/fit.py's ways out), one layout's: built by
    memory_config from a calc_training_time.py layout, or by calc_transformer_mem.py from its flags
    (which extends it with its inference and capacity fields). Counts per GPU, bytes per value."""

    FIELDS = {
        "tp": "tensor-parallel size", "pp": "pipeline stages",
        "vp": "model chunks per pipeline rank",
        "cp": "context-parallel size (the sequence split over cp ranks)",
        "ep": "expert-parallel size",
        "etp": "tensor-parallel size inside each expert", "dp": "data-parallel size",
        "num_gpus": "GPUs in the job (train/fit.py scales it)",
        "chunk_layers": "counts[rank][chunk] of an uneven pipeline split, None for the even one",
        "decoder_first_pipeline_num_layers": "Megatron-LM's layers on the first stage, or None",
        "decoder_last_pipeline_num_layers": "Megatron-LM's layers on the last stage, or None",
        "account_for_embedding_in_pipeline_split": "the embedding counted as a layer of the split",
        "account_for_loss_in_pipeline_split": "the head and loss counted as one layer of the split",
        "zero_stage": "ZeRO stage 0-3 (FSDP's read as its equivalent)",
        "zero_shard": "ranks the dense model states are sharded over (dp x cp; zero_shards)",
        "expert_zero_shard": "ranks the expert states are sharded over (zero_shards)",
        "zbs": "ZeRO all-gather bucket, elements at the weight width (0: sharded in place)",
        "zmlp": "ZeRO-3 parameters kept gathered at once",
        "sequence_length": "tokens per sequence (before the cp split)",
        "batch_size": "micro-batch per GPU (calc_transformer_mem.py's -b)",
        "num_microbatches": "micro-batches per step, None: as many as pipeline stages",
        "recompute": "activation recompute: none, selective, full or op-sac",
        "recompute_modules": "selective recompute's modules (None: the default core_attn)",
        "recompute_every": "recompute on one layer in k (1: every layer)",
        "sequence_parallel": "Megatron sequence parallelism (norms and dropouts / tp)",
        "partition_activations": "DeepSpeed's checkpointed inputs split over tp",
        "flash_attention": "a fused attention kernel (no s x s scores stored)",
        "dropout": "dropout masks stored",
        "mixed_precision": "16-bit training with an fp32 master copy",
        "high_bytes": "bytes of a high-precision value (the master copy)",
        "weight_bytes": "bytes per weight held", "act_bytes": "bytes per stored activation",
        "grad_bytes": "bytes per gradient", "optimizer": "optimizer name (OPTIMIZER_STATE_BYTES)",
        "opt_bytes": "optimizer bytes per trainable parameter on the GPU (0 offloaded)",
        "host_opt_bytes": "optimizer bytes per parameter held on the host (--offload)",
        "activation_rule": "fused (Korthikanti et al. 2022) or eager (what autograd saves)",
        "autocast": "fp32 weights under torch.autocast (the eager rule's mixed precision)",
        "framework": "the training stack whose activations are counted",
        "lora": "LoRA: {rank, targets, base_bits, adapter_bytes}, or None for full training",
        "overhead_bytes": "framework allowance and misc per GPU",
        "memory_bytes": "the GPU's capacity, or None (train/fit.py's limit)",
        "offload": "optimizer states on the host (ZeRO-Offload)",
        "offload_param": "DeepSpeed ZeRO-3 offload_param: the 16-bit weights on the host",
        "offload_params": "the layers' 16-bit weights in host memory, two layers on the GPU",
        "offload_activations": "stored activations in host memory, two layers' worth on the GPU",
    }

    def replace(self, **changes):
        """A copy with `changes` (each checked as declared; the rest already was), as the ways
        out try one change each and memory_config adds a layout's sizes."""
        return self.extended(changes)

    def extended(self, changes):
        """replace() with the changes as a dict (no keyword repacking: memory_config's thirty)."""
        if not changes.keys() <= self.FIELDS.keys():
            MemoryConfig(changes)  # raises TypeError naming the undeclared field
        new = dict.__new__(type(self))
        dict.update(new, self)
        dict.update(new, changes)
        return new


def memory_defaults(*, overhead_bytes):
    """The part of calc_training_time.py's memory config no layout sets: Megatron-LM's mixed
    precision (16-bit weights and activations, fp32 gradients, Adam with the fp32 master copy),
    no LoRA, no ZeRO bucket (its distributed optimizer shards in place) and the allowance."""
    adam = optimizer_bytes_per_param(optimizer="adam", mixed_precision=True, master_bytes=4)
    return MemoryConfig(act_bytes=2, partition_activations=False, lora=None, weight_bytes=2,
                        grad_bytes=4, opt_bytes=adam, zbs=0, zmlp=1e9,
                        overhead_bytes=overhead_bytes)


def memory_config(spec, lay, base):
    """calc_training_time.py's memory config for a layout (training_memory's `c`): `base`
    (memory_defaults) with the layout's sizes; under --framework pytorch the eager activation
    rule, with autocast's fp32 weights at ZeRO 0-1."""
    dp, cp, tp, pp, ep, etp = lay["dp"], lay["cp"], lay["tp"], lay["pp"], lay["ep"], lay["etp"]
    fields = {}  # the record built once below (a search builds one per layout it costs)
    if lay["framework"] == "pytorch":  # eager transformers-style modules; autocast without sharding
        autocast = lay["zero_stage"] <= 1
        fields.update(activation_rule="eager", autocast=autocast)
        if autocast:  # fp32 weights are the master copy: Adam's two fp32 moments only
            fields.update(weight_bytes=4, opt_bytes=optimizer_bytes_per_param(
                optimizer="adam", mixed_precision=False, master_bytes=4))
    opt_bytes = fields.get("opt_bytes", base["opt_bytes"])
    fields.update(
        tp=tp, pp=pp, vp=lay["vp"], cp=cp, ep=ep, etp=etp, dp=dp,
        chunk_layers=layout_chunk_layers(spec["num_layers"], lay), zero_stage=lay["zero_stage"],
        **zero_shards(dp=dp, cp=cp, tp=tp, pp=pp, etp=etp, ep=ep),
        sequence_length=lay["sequence_length"],
        num_microbatches=lay["num_microbatches"], recompute=lay["recompute"],
        recompute_modules=modules_of(lay), recompute_every=lay.get("recompute_every") or 1,
        sequence_parallel=lay["sp"], flash_attention=lay["flash_attention"],
        dropout=lay["dropout"], opt_bytes=0 if lay["offload"] else opt_bytes,
        offload_param=bool(lay.get("offload_param")),
        # Megatron-LM's distributed optimizer (ZeRO-1/2) shards in place; ZeRO-3 keeps
        # DeepSpeed's all-gather bucket (5e8 elements, calc_transformer_mem.py's default)
        zbs=5e8 if lay["zero_stage"] == 3 else 0)
    return base.extended(fields)


# ------------------------------------------------------------------------------------------------
# Model states
# ------------------------------------------------------------------------------------------------

def zero_shards(*, dp, cp, tp, pp, etp, ep):
    """ZeRO's shard counts, as the memory config's zero_shard and expert_zero_shard: dense states
    split over the dp x cp ranks that hold the same layers; expert states over the ranks that hold
    copies of the same expert shard, all GPUs / (pp x etp x ep) (Megatron-LM's expert data parallel
    group). Assumes every size divides."""
    return {"zero_shard": dp * cp, "expert_zero_shard": dp * cp * tp * pp // (pp * etp * ep)}


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


def layer_params_per_rank(layer, *, h, norm, tp, etp, ep):
    """One layer's parameters on one rank, split into (non_expert, expert): the block's layer_params
    on the rank's share of each attention (attention_on_rank) and MLP block (mlp_on_rank); norms,
    per-layer extra weights and routers replicated; routed experts E/ep per rank (resolve() checks
    that every split divides exactly). The split is Megatron-LM's (Shoeybi et al. 2019 sec. 3 for
    tp; its expert parallelism and --expert-tensor-parallel-size for ep and etp)."""
    share = {"attention": tuple(attention_on_rank(x, tp=tp) for x in layer["attention"]),
             "mlp": tuple(mlp_on_rank(m, tp=tp, etp=etp) for m in layer["mlp"]),
             "norms": layer["norms"], "extra_params": layer["extra_params"]}
    p = layer_params(share, h=h, norm=norm)
    return p["total"] - p["routed_experts"], p["routed_experts"] // ep


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
    return all_stage_layers(num_layers=num_layers, pp=pp, vp=vp, chunk_layers=chunk_layers)[stage]


def all_stage_layers(*, num_layers, pp, vp, chunk_layers=None):
    """stage_layers for every stage at once, out[stage]: one pass over the pp*vp chunks, so that a
    loop over the stages costs O(pp*vp + L), not O(pp^2 * vp)."""
    if chunk_layers is None:
        chunk_layers = pipeline_chunk_layers(num_layers=num_layers, pp=pp, vp=vp)
    out, start = [[] for _ in range(pp)], 0
    for c in range(vp):
        for i in range(pp):
            n = chunk_layers[i][c]
            out[i] += range(start, start + n)
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


def pipeline_split_hint(*, num_layers, pp, vp):
    """The Megatron-LM flags to suggest for num_layers layers on pp*vp chunks, as one clause
    (suggest_pipeline_split's uneven split, or counting the embedding/loss as layers), "" if none."""
    L = num_layers
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


def pipeline_split_error(*, num_layers, pp, vp, first=None, last=None, embedding_in_split=False,
                         loss_in_split=False):
    """None if Megatron-LM accepts this split of the layers over pp ranks x vp chunks, else a
    one-line reason (TransformerConfig.__post_init__ and megatron/training/arguments.py
    validate_args): even, L (+1 embedding, +1 loss) divisible by pp*vp; or the first/last
    stage's count given, each a multiple of vp, the middle stages sharing the rest evenly in
    multiples of vp; the two styles not combined. The same rules for calc_transformer_mem.py and
    calc_training_time.py (pipeline_chunk_layers builds the split)."""
    L, emb, loss = num_layers, bool(embedding_in_split), bool(loss_in_split)
    if first is None and last is None:
        total = L + emb + loss
        if total % (pp * vp) == 0:
            return None
        if emb or loss:
            return (f"--num-layers {L} + {emb + loss} (embedding/loss counted as layers) = "
                    f"{total} is not divisible by pp*vp = {pp}*{vp}")
        if pp == 1:
            return f"--num-layers {L} is not divisible by pp*vp = {pp}*{vp}"
        hint = pipeline_split_hint(num_layers=L, pp=pp, vp=vp)
        return (f"--num-layers {L} is not divisible by pp*vp = {pp}*{vp}; "
                + (f"Megatron-LM needs the uneven split stated, e.g. {hint}" if hint else
                   f"no uneven split Megatron-LM accepts fits either (every stage needs a "
                   f"positive multiple of vp = {vp} layers)"))
    if emb or loss:
        return ("--decoder-first/last-pipeline-num-layers cannot be combined with "
                "--account-for-embedding/loss-in-pipeline-split (Megatron-LM refuses both)")
    if pp == 1:
        return "--decoder-first/last-pipeline-num-layers need --pipeline-parallel-size > 1"
    for name, n in (("first", first), ("last", last)):
        if n is not None and n % vp:
            return f"--decoder-{name}-pipeline-num-layers {n} is not divisible by --virtual-pipeline-size {vp}"
    mid_stages = pp - (first is not None) - (last is not None)
    middle = L - (first or 0) - (last or 0)
    given = " + ".join(str(n) for n in (first, last) if n is not None)
    if middle < 0:
        return f"first/last stage layers {given} exceed --num-layers {L}"
    if mid_stages == 0 and middle:
        return f"first + last stage layers {given} must add up to --num-layers {L} with pp {pp} (no middle stage)"
    if mid_stages and middle % mid_stages:
        hint = pipeline_split_hint(num_layers=L, pp=pp, vp=vp)
        return (f"the {middle} middle layers are not divisible by the {mid_stages} middle "
                "pipeline stages" + (f"; e.g. {hint}" if hint else ""))
    if mid_stages and (middle // mid_stages) % vp:
        return (f"{middle // mid_stages} layers on each middle pipeline stage are not "
                f"divisible by --virtual-pipeline-size {vp}")
    return None


# A layout's pipeline split: the keys calc_training_time.py's layouts carry (None/False: even)
PIPELINE_SPLIT_KEYS = ("decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers",
                       "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split")


def layout_split(lay):
    """(first, last, embedding_in_split, loss_in_split) of a layout dict, for cache keys."""
    g = lay.get
    return (g("decoder_first_pipeline_num_layers"), g("decoder_last_pipeline_num_layers"),
            bool(g("account_for_embedding_in_pipeline_split")), bool(g("account_for_loss_in_pipeline_split")))


def layout_chunk_layers(num_layers, lay):
    """counts[rank][chunk] of a layout's split (pipeline_chunk_layers), None for the even one."""
    first, last, emb, loss = layout_split(lay)
    if first is None and last is None and not emb and not loss:
        return None
    return pipeline_chunk_layers(num_layers=num_layers, pp=lay["pp"], vp=lay["vp"], first=first, last=last,
                                 embedding_in_split=emb, loss_in_split=loss)


def stage_params_per_rank(spec, *, tp, pp, vp, etp, ep, stage, chunk_layers=None, layers_held=None):
    """(non_expert, expert, embedding_and_head) parameters on one rank of pipeline stage `stage`,
    summed over the stage's layers (layer_params_per_rank, once per distinct layer kind). Stage 0
    holds the token embedding (/tp), any per-layer embedding table (/tp, vocab-parallel like it),
    position table, embedding norm, projections and other model-level weights; the last stage the
    final norm and the head (/tp) -- with tied embeddings and pp > 1 a second copy of the embedding,
    as Megatron-LM keeps it. The third number is included in the first. layers_held: the stage's
    layer indices when the caller has them (all_stage_layers), else computed here."""
    V, h, p = spec["vocab_size"], spec["hidden_size"], spec["word_embed_proj_dim"]
    layers, per_kind = spec["layers"], {}
    dense = expert = 0
    if layers_held is None:
        layers_held = stage_layers(num_layers=spec["num_layers"], pp=pp, vp=vp, stage=stage,
                                   chunk_layers=chunk_layers)
    for i in layers_held:
        key = id(layers[i])
        if key not in per_kind:
            per_kind[key] = layer_params_per_rank(layers[i], h=h, norm=spec["norm"], tp=tp, etp=etp, ep=ep)
        ne, ex = per_kind[key]
        dense, expert = dense + ne, expert + ex
    emb = 0
    if stage == 0:
        emb += V * p // tp + spec["position_embedding_rows"] * h + (2 * p * h if p != h else 0)
        emb += norm_params(width=h, norm=spec["norm"]) if spec["embedding_norm"] else 0
        emb += spec["per_layer_embedding_params"] // tp + sum(spec["other_params"].values())
    if stage == pp - 1:
        emb += norm_params(width=h, norm=spec["norm"]) if spec["final_norm"] else 0
        if not spec["tied_embeddings"] or pp > 1:
            emb += V * p // tp
    return dense + emb, expert, emb


def lora_params_per_layer(layer, *, h, rank, targets, tp):
    """LoRA adapter parameters in one layer on one tp rank: r * (d_in + d_out) per adapted matrix
    (Hu et al. 2021, sec. 4.1). Each attention block's q/k/v/o (a layer reusing another layer's
    k/v projections has none to adapt) and each dense MLP's (MoE: the shared experts') gate/up/down;
    routed experts are not adapted. Split over tp like the matrix they adapt (an approximation for r)."""
    n = 0
    for attn in layer["attention"]:
        a, kv = attn["heads"], attn["kv_heads"]
        d, dv = attention_head_dims(attn)
        shapes = {"q": (h, a * d), "k": (h, kv * d) if attn["kv_proj"] >= 1 else None,
                  "v": (h, kv * dv) if attn["kv_proj"] >= 2 else None, "o": (a * dv, h)}
        n += sum(rank * sum(shapes[t]) for t in targets if shapes.get(t) and all(shapes[t]))
    for m in layer["mlp"]:
        f = m["width"] if m["kind"] == "dense" else m["shared_width"]
        shapes = {"gate": (h, f) if m["linears"] == 3 else None, "up": (h, f), "down": (f, h)}
        n += sum(rank * sum(shapes[t]) for t in targets if shapes.get(t) and all(shapes[t]))
    return n // tp


# ------------------------------------------------------------------------------------------------
# Activations (Korthikanti et al. 2022)
# ------------------------------------------------------------------------------------------------

def mlp_stored_widths(num_linears):
    """Widths an MLP keeps per token, in units of f: its input matmul output(s) and the product fed
    to the output matrix: 2 f for a 2-matrix MLP (up, activation output: Korthikanti et al. 2022
    sec. 4.1's 8 sbh for f = 4h, counted in units of f), 3 f for a gated one (fused gate|up 2 f,
    product f; the same rule applied to SwiGLU, Shazeer 2020)."""
    return 2 if num_linears == 2 else 3


def layer_activation_bytes(layer, *, s, b, h, tp, etp, sp, flash, dropout, act_bytes, streams=1):
    """Bytes one layer stores for backward for one micro-batch on one tp rank, with no recompute,
    split as {"outside", "inside", "scores"} (Korthikanti et al. 2022, sec. 4.1, Table 2), summed
    over the layer's attention and MLP blocks. outside: per block its norm input and its own input
    (2 sbh) and a dropout mask (sbh, 1 B) -- 10 sbh per layer in fp16, replicated under TP, /tp
    with sequence parallelism. inside (/tp): per attention block on its rank's heads
    (attention_on_rank) Q and the output at a/tp heads, K and V at kv/tp heads (MLA: the a/tp heads
    its up-projection expands, plus its q and kv latents r_q + r_kv + d_rope, counted outside); a
    lightning indexer's q, key and head weights (H_I d_I + d_I + H_I; its score matrix is not
    modelled); a linear mixer linear_mixer_activation_bytes (no scores); per MLP block dense internals (2 f or 3 f, /tp) or moe_activation_bytes -- 24 sbh/t
    for MHA with f = 4h. scores: softmax output, its dropout mask and output, 5 a s^2 b / t (2 a s^2
    b / t without dropout); eager attention computes the whole s x s matrix on sliding and chunked
    layers too; with flash attention an fp32 log-sum-exp per row and head instead. DeepSeek-V4: its
    attention as MQA plus its q latent and grouped output latent (r_q + g r_o), and with its
    hyper-connections each block's mixing module keeps its hc_mult input streams (streams h)."""
    B, sb = act_bytes, s * b
    mask = 1 if dropout else 0
    outside = inside = scores = 0
    # what each of Megatron-LM's selective recompute modules drops (train/recompute.py)
    by = dict.fromkeys(("norm_out", "mla_up", "mlp_inside", "moe_outside", "moe_inside", "moe_act",
                        "shared_inside"), 0)
    # DeepSeek-V4's hyper-connections: each block's mixing module also keeps its hc_mult input streams
    hc_in = sb * streams * h * B if streams > 1 else 0
    for attn in layer["attention"]:
        x = attention_on_rank(attn, tp=tp)
        at, kvt = x["heads"], x["kv_heads"]
        d, d_v = attention_head_dims(x)
        outside += sb * h * (2 * B + mask) + hc_in
        by["norm_out"] += B * sb * h
        if x["span"] == "state":
            inside += linear_mixer_activation_bytes(x, sb=sb, act_bytes=B)
            continue
        if x["kind"] == "mla":
            outside += B * sb * (x["q_lora_rank"] + x["kv_lora_rank"] + x["qk_rope_head_dim"])
        inside += B * sb * (at * d + kvt * d + kvt * d_v + at * d_v)
        if x["kind"] == "mla":  # q, k, v at every head, rebuilt from the latents
            by["mla_up"] += B * sb * (at * d + kvt * d + kvt * d_v)
        if x["kind"] == "dsv4":  # its q latent and grouped output latent
            inside += B * sb * (x["q_lora_rank"] + x["o_groups"] * x["o_lora_rank"])
        if x["index_topk"]:
            H, d_i = x["index_heads"], x["index_head_dim"]
            inside += B * sb * (H * d_i + d_i + H)
        if flash:
            scores += 4 * sb * at
        else:
            scores += at * s * s * b * (B + (mask + B if dropout else 0))
    for m in layer["mlp"]:
        outside += sb * h * (2 * B + mask) + hc_in
        by["norm_out"] += B * sb * h
        if m["kind"] == "dense":
            inside += B * sb * m["width"] * mlp_stored_widths(m["linears"]) // tp
            by["mlp_inside"] += B * sb * m["width"] * mlp_stored_widths(m["linears"]) // tp
        else:
            mo = moe_activation_bytes(m, s=s, b=b, h=h, tp=tp, etp=etp, act_bytes=B)
            outside += mo["replicated"]
            inside += mo["sharded"]
            shared = B * sb * m["shared_width"] * mlp_stored_widths(m["linears"]) // tp
            by["moe_outside"] += mo["replicated"]
            by["moe_inside"] += mo["sharded"]
            by["shared_inside"] += shared
            by["moe_act"] += B * expected_real_experts(m) * sb * m["width"] // etp  # the product fed to fc2
    div = tp if sp else 1
    by["norm_out"] /= div
    by["moe_outside"] /= div
    return {"outside": outside / div, "inside": inside, "scores": scores, **by}


def linear_mixer_activation_bytes(attn, *, sb, act_bytes):
    """What a linear mixer (on its rank's heads) stores for backward per micro-batch of sb tokens.
    Gated DeltaNet, following what flash-linear-attention's chunk_gated_delta_rule saves (its
    autograd Function keeps q, k, v, g, beta and the UT-transform matrix A, and recomputes the
    per-chunk states in backward): the conv's input and output (2 (2 H_k d_k + H_v d_v)), the gate z
    and the core output fed to the gated norm, and its output fed to out_proj (3 H_v d_v), at the
    activation width; the per-head decay and beta (fp32, 2 x 4 H_v) and A (fp32, C per head per
    token). Mamba-2, following mamba_ssm's mamba_chunk_scan_combined (it saves x, dt, B, C, z and
    recomputes the chunk states): the in_proj output and the conv output (in + conv widths), the
    core output and the gated norm's output (2 d_in), and dt in fp32 (4 H)."""
    w_in, w_out, conv_dim = mixer_widths(attn)
    if attn["kind"] == "mamba2":
        return sb * (act_bytes * (w_in + conv_dim + 2 * w_out) + 4 * attn["heads"])
    Hv = attn["heads"]
    return sb * (act_bytes * (2 * conv_dim + 3 * w_out) + 4 * Hv * (2 + attn["state_chunk"]))


def moe_activation_bytes(mlp, *, s, b, h, tp, etp, act_bytes):
    """A MoE block's stored bytes per micro-batch under balanced routing: fp32 router logits and
    probabilities over its E (+ Z zero) experts (2 x 4 s b (E + Z)), each token's k copies dispatched
    to experts and their k outputs kept for the weighted combine (2 k s b h, not split by tp), the
    experts' internals as a dense MLP of width f_e for the k s b tokens that reach real experts (k E
    / (E + Z) with zero experts, expected_real_experts; /etp), and the shared experts as one MLP (/tp).
    Korthikanti et al. 2022's per-block accounting (sec. 4.1) applied to a GShard-style MoE layer
    (Lepikhin et al. 2020: router softmax, dispatch and combine)."""
    B, sb = act_bytes, s * b
    per_f = mlp_stored_widths(mlp["linears"])
    k = mlp["topk"]
    replicated = 8 * sb * (mlp["num_experts"] + mlp["zero_experts"]) + 2 * k * B * sb * h
    sharded = (B * expected_real_experts(mlp) * sb * mlp["width"] * per_f // etp
               + B * sb * mlp["shared_width"] * per_f // tp)
    return {"replicated": replicated, "sharded": sharded}


def selective_dropped_bytes(parts, modules):
    """Bytes of one layer's stored activations (layer_activation_bytes) that Megatron-LM's selective
    recompute modules drop: core_attn the score terms (Korthikanti sec. 5; under a fused kernel its
    fp32 log-sum-exp only), layernorm each block's norm output, mla_up_proj MLA's q, k, v at all
    heads, mlp the dense MLP's internals, moe the whole MoE block's (router, dispatched copies,
    experts, shared experts), moe_act the routed experts' activation output, shared_experts the
    shared experts' internals. Each module keeps its input."""
    out = parts["scores"] if "core_attn" in modules else 0
    keys = {"layernorm": "norm_out", "mla_up_proj": "mla_up", "mlp": "mlp_inside"}
    out += sum(parts[v] for k, v in keys.items() if k in modules)
    if "moe" in modules:
        out += parts["moe_outside"] + parts["moe_inside"]
    else:
        out += (parts["moe_act"] if "moe_act" in modules else 0) + (
            parts["shared_inside"] if "shared_experts" in modules else 0)
    return out


def op_sac_layer_bytes(layer, *, s, b, h, tp, etp, sp_or_pa, flash, act_bytes, residual_bytes, streams=1):
    """What one layer keeps per micro-batch under torchtitan's per-op selective checkpointing
    (train/recompute.py): the checkpoint's input (the residual, in its dtype; /tp with sequence
    parallelism), the outputs of the matmuls it saves (block_matmuls: every odd-numbered one) at the
    activation width, and each attention block's kernel outputs (SDPA/flash: the output and an fp32
    log-sum-exp per head; eager attention its s x s score matmul output too). Routed experts and the
    router are recomputed and keep nothing (an assumption under ep > 1, where the all-to-all
    outputs are saved as communication ops)."""
    B, sb = act_bytes, s * b
    out = residual_bytes * sb * h * streams / (tp if sp_or_pa else 1)
    out += B * sb * sum(n for _, n, rec, _ in block_matmuls(layer, h=h, tp=tp, etp=etp) if not rec)
    for attn in layer["attention"]:
        x = attention_on_rank(attn, tp=tp)
        if x["span"] == "state":
            continue
        out += B * sb * x["heads"] * attention_head_dims(x)[1] + 4 * sb * x["heads"]
        if not flash:
            out += B * x["heads"] * s * s * b
    return out


def stored_layer_bytes(parts, *, recompute, sp_or_pa, tp, s, b, h, act_bytes, streams=1, modules=("core_attn",)):
    """What one layer keeps per micro-batch under a recompute mode (Korthikanti Table 2): none
    keeps everything; selective drops what its modules recompute (selective_dropped_bytes; the
    default core_attn the score terms, sec. 5); full keeps only the layer input, 2 sbh (/tp with
    sequence parallelism or partitioned activations)."""
    if recompute == "full":  # the layer input: hc_mult streams with DeepSeek-V4's hyper-connections
        return act_bytes * s * b * h * streams / (tp if sp_or_pa else 1)
    if recompute == "selective":
        return parts["outside"] + parts["inside"] + parts["scores"] - selective_dropped_bytes(parts, modules)
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


# Eager PyTorch (transformers' modules): what autograd itself saves. The counts follow the modules'
# source (LlamaRMSNorm, LlamaAttention with SDPA, LlamaMLP, ForCausalLMLoss in transformers 5.x)
# and torch's autograd formulas; tests/fixtures/measure_saved.py checks them byte for byte against
# saved_tensors_hooks on transformers' own models.

# fp32 log-softmax output (saved), its incoming gradient and its input gradient, alive together when
# the backward starts at the loss (ForCausalLMLoss upcasts the logits with .float())
EAGER_LOSS_BYTES_PER_LOGIT = 12


# model_types whose MoE block the eager rule was derived for (transformers 5.x: softmax router, top-k,
# the grouped_mm experts; Qwen2-MoE's sigmoid-gated shared expert); a spec read from flags has none
EAGER_MOE_MODEL_TYPES = ("mixtral", "qwen2_moe", "qwen3_moe")


def eager_rule_covers(layer, *, norm, model_type=None):
    """True when the eager rule below was derived for every block of this layer: RMSNorm, full
    causal softmax attention through SDPA (no mask, so no repeat_kv copies; MHA, GQA, MQA, with or
    without q/k norms), dense MLPs, and the MoE blocks of EAGER_MOE_MODEL_TYPES (or of a model
    described by flags). Sliding, chunked and sparse attention (SDPA with a mask), MLA, linear
    mixers, other routers (sigmoid, biased, grouped, zero experts), experts with biases and
    LayerNorm are not."""
    if norm != "rmsnorm":
        return False
    for a in layer["attention"]:
        if (a["kind"] != "mha" or a["span"] != "full" or a["sinks"] or a["output_gate"] != "none"
                or a["index_topk"] or a["kv_shared"]):
            return False
    for m in layer["mlp"]:
        if m["kind"] == "moe":
            if (model_type not in EAGER_MOE_MODEL_TYPES + (None,) or m["zero_experts"] or m["router_bias"]
                    or m["bias"] or m["shared_bias"]):
                return False
        elif m["kind"] != "dense":
            return False
    return True


def eager_layer_activation_bytes(layer, *, s, b, h, tp, sp, act_bytes, autocast):
    """Bytes autograd saves for one layer and micro-batch in eager PyTorch, transformers' modules
    (eager_rule_covers), per tp rank. autocast: fp32 parameters under torch.autocast (the Hugging
    Face Trainer's --bf16), so the residual stream is fp32 and every linear casts its own input to
    16 bits; else parameters and activations at act_bytes. Per token: each RMSNorm its fp32 input
    (the upcast) and its normalised output in the input's dtype, and an fp32 1/rms; each linear
    reading a norm its input (one cast per linear under autocast, one shared tensor otherwise); q/k
    norms the same per head; SDPA q, k, v, its output (o_proj reads it) and an fp32 log-sum-exp
    per head; a gated MLP its gate and up outputs, the activation and the product (4 f), a
    2-matrix MLP 2 f. Rotary embeddings save only cos and sin; residual adds nothing. An MoE block
    (transformers 5.x's grouped_mm experts, the default: integrations/moe.py) saves per token its
    router's fp32 probabilities (4 E), top-k indices (8 k), the renormalisation (4 k + 4) and the
    routing weights (4 k, fp32 as Mixtral keeps them; Qwen's routers save up to 6 k + 4 B less),
    three int64 permutations (24 k), and per routed copy its gathered input, the gate/up output,
    activation, product and down output (2 h + 4 f, 2 h + 2 f without a gate) in the experts'
    dtype -- fp32 under autocast, which grouped_mm does not join; a shared expert is a dense MLP,
    its sigmoid gate (Qwen2-MoE) keeping the expert's output and the gate (h + 1); plus 4 E bytes
    of int32 offsets per micro-batch."""
    A, R = act_bytes, 4 if autocast else act_bytes  # 16-bit compute; the residual in the weights' dtype
    blocks = len(layer["attention"]) + len(layer["mlp"])
    extra_norms = max(layer["norms"] - blocks, 0)  # sandwich norms read a block's 16-bit output
    norms = blocks * (4 * h + R * h + 4) + extra_norms * (4 * h + A * h + 4)
    copies = inside = 0
    for attn in layer["attention"]:
        x = attention_on_rank(attn, tp=tp)
        at, kvt = x["heads"], x["kv_heads"]
        d, d_v = attention_head_dims(x)
        copies += A * h * ((1 + x["kv_proj"]) if autocast else 1)
        if x["qk_norm"] != "none":
            inside += (at + kvt) * (4 * d + A * d + 4)
        inside += A * (at * d + kvt * d + kvt * d_v + at * d_v) + 4 * at
    offsets = 0
    for m in layer["mlp"]:
        gated = 4 if m["linears"] == 3 else 2
        if m["kind"] != "moe":
            copies += A * h * ((m["linears"] - 1) if autocast else 1)
            inside += A * (m["width"] // tp) * gated
            continue
        k, E, X = m["topk"], m["num_experts"], 4 if autocast else A
        fs = m["shared_width"] // tp
        copies += A * h * ((1 + ((m["linears"] - 1) if fs else 0) + bool(m["shared_gate"])) if autocast else 1)
        router = 4 * E + 8 * k + (4 * k + 4) + 4 * k  # probabilities, indices, renormalisation, weights
        inside += router + 24 * k + k * X * (2 * h + gated * (m["width"] // tp))  # permutations; routed copies
        if fs:
            inside += A * fs * gated + (A * (h + 1) if m["shared_gate"] else 0)
        offsets += 4 * E
    return s * b * ((norms + copies) / (tp if sp else 1) + inside) + offsets


def eager_checkpointed_layer_bytes(*, s, b, h, tp, sp_or_pa, act_bytes, autocast):
    """A checkpointed layer in eager PyTorch (torch.utils.checkpoint, non-reentrant, as
    transformers' gradient_checkpointing_enable runs it): its input only, in the residual's dtype
    (fp32 under autocast), /tp with sequence parallelism or partitioned activations."""
    return (4 if autocast else act_bytes) * s * b * h / (tp if sp_or_pa else 1)


def eager_output_layer_bytes(*, s, b, h, V, tp, sp, act_bytes, autocast):
    """Last stage, per micro-batch, eager: the final RMSNorm (as above) and the head's 16-bit input,
    and the loss at the start of backward, EAGER_LOSS_BYTES_PER_LOGIT per logit (/tp)."""
    R = 4 if autocast else act_bytes
    return s * b * ((4 * h + R * h + 4 + act_bytes * h) / (tp if sp else 1) + EAGER_LOSS_BYTES_PER_LOGIT * V / tp)


def once_per_kind(layers, indices, fn):
    """fn(layer) for each of layers[i], i in indices, computed once per distinct layer dict (a
    model's layers of one kind are one shared dict): the per-kind sums of training and serving
    memory."""
    seen, out = {}, []
    for i in indices:
        layer = layers[i]
        if id(layer) not in seen:
            seen[id(layer)] = fn(layer)
        out.append(seen[id(layer)])
    return out


def training_memory(spec, c, b):
    """Per-stage training memory for micro-batch b; returns the heaviest stage's breakdown and the
    list of per-stage totals. `c` is the MemoryConfig. Sums the formulas above over each stage's
    layers: model states after ZeRO (Rajbhandari et al. 2020, sec. 5) sharded as in Megatron-LM
    (Narayanan et al. 2021), activations after Korthikanti et al. 2022, Table 2, per layer kind.
    With c["activation_rule"] == "eager" (eager PyTorch, transformers' modules) the layers
    eager_rule_covers store what autograd saves, the loss keeps its fp32 log-softmax tensors,
    autocast keeps a 16-bit copy of each linear weight whose forward is not recomputed, and
    gradients exist only from the backward to the optimizer step (zeroed with set_to_none, as
    torch's optimizers do), so the peak is the larger of two moments: the backward's start
    (states, gradients only under accumulation, every saved activation, the loss) and its end
    (states and all gradients, plus a tied embedding's second dense gradient or the rebuilt layer
    under full recompute)."""
    pp, vp = c["pp"], c["vp"]
    ctx = _ActivationRules(spec, c, b)
    by_stage = all_stage_layers(num_layers=spec["num_layers"], pp=pp, vp=vp,
                                chunk_layers=c["chunk_layers"])
    stages = [_stage_memory(spec, c, ctx, st, layers) for st, layers in enumerate(by_stage)]
    worst_stage = max(stages, key=lambda x: x["total_bytes"])
    return worst_stage, stages


class _ActivationRules:
    """What training_memory reads once per call: the shard sizes and widths every layer's
    activation formula takes, and, per distinct layer kind, its fused-rule parts, eager bytes
    and op-SAC bytes (computed on first use)."""

    __slots__ = ("c", "spec", "s", "b", "h", "tp", "etp", "ab", "m", "sp", "sp_or_pa", "eager",
                 "autocast", "mods", "streams")

    def __init__(self, spec, c, b):
        self.spec, self.c, self.b = spec, c, b
        self.s = c["sequence_length"] // c["cp"]
        self.h, self.tp, self.etp = spec["hidden_size"], c["tp"], c["etp"]
        self.ab = c["act_bytes"]
        self.m = c["num_microbatches"] if c["num_microbatches"] else c["pp"]
        self.sp = c["sequence_parallel"]
        self.sp_or_pa = c["sequence_parallel"] or c["partition_activations"]
        self.eager = c.get("activation_rule") == "eager"
        self.autocast = self.eager and c.get("autocast", False)
        self.mods = tuple(c.get("recompute_modules") or DEFAULT_RECOMPUTE_MODULES)
        self.streams = spec.get("residual_streams", 1)

    def parts_of(self, layer):
        c = self.c
        return layer_activation_bytes(layer, s=self.s, b=self.b, h=self.h, tp=self.tp, etp=self.etp,
                                      sp=self.sp, flash=c["flash_attention"], dropout=c["dropout"],
                                      act_bytes=self.ab, streams=self.streams)

    def eager_of(self, layer):
        """None: a layer the eager rule does not cover (and selective recompute)."""
        spec = self.spec
        if self.c["recompute"] == "selective" or not eager_rule_covers(
                layer, norm=spec["norm"], model_type=spec.get("model_type")):
            return None
        return eager_layer_activation_bytes(layer, s=self.s, b=self.b, h=self.h, tp=self.tp,
                                            sp=self.sp, act_bytes=self.ab, autocast=self.autocast)

    def sac_of(self, layer):
        return op_sac_layer_bytes(layer, s=self.s, b=self.b, h=self.h, tp=self.tp, etp=self.etp,
                                  sp_or_pa=self.sp_or_pa, flash=self.c["flash_attention"],
                                  act_bytes=self.ab, residual_bytes=4 if self.autocast else self.ab,
                                  streams=self.streams)


def _stage_model_states(spec, c, *, layers, ne, ex, emb, tp):
    """(weights, gradients, optimizer, trainable parameters, ZeRO buffers) bytes of one stage's
    rank: LoRA's frozen base and adapters, or every parameter's states after ZeRO."""
    lora = c["lora"]
    if lora:  # frozen base: quantized (QLoRA) or low-precision linear weights, no grads/states
        base_w = (ne + ex - emb) * lora["base_bits"] / 8 + emb * c["weight_bytes"]
        ad = sum(once_per_kind(spec["layers"], layers, lambda x: lora_params_per_layer(
            x, h=spec["hidden_size"], rank=lora["rank"], targets=lora["targets"], tp=tp)))
        w, g, o = zero_model_state_bytes(params=ad, weight_bytes=lora["adapter_bytes"],
                                         grad_bytes=lora["adapter_bytes"],
                                         optimizer_bytes=OPTIMIZER_STATE_BYTES[c["optimizer"]],
                                         zero_stage=c["zero_stage"], shard_degree=c["zero_shard"])
        w += base_w / (c["zero_shard"] if c["zero_stage"] >= 3 else 1)
        trainable = ad
    else:
        wb, gb, ob, z = c["weight_bytes"], c["grad_bytes"], c["opt_bytes"], c["zero_stage"]
        w1, g1, o1 = zero_model_state_bytes(params=ne, weight_bytes=wb, grad_bytes=gb,
                                            optimizer_bytes=ob, zero_stage=z,
                                            shard_degree=c["zero_shard"])
        w2, g2, o2 = zero_model_state_bytes(params=ex, weight_bytes=wb, grad_bytes=gb,
                                            optimizer_bytes=ob, zero_stage=z,
                                            shard_degree=c["expert_zero_shard"])
        w, g, o = w1 + w2, g1 + g2, o1 + o2
        if c.get("offload_param"):  # DeepSpeed ZeRO-3 offload_param: the 16-bit weights on the host
            w = 0
        trainable = ne + ex
    buffers = 0
    if c["zero_stage"] >= 1 and c["zero_shard"] > 1:
        buffers += c["zbs"] * c["weight_bytes"]
    if c["zero_stage"] == 3 and c["zero_shard"] > 1:
        buffers += min(c["zmlp"], ne + ex) * c["weight_bytes"]
    return w, g, o, trainable, buffers


def _stage_layer_activations(ctx, layers):
    """(stored bytes of one micro-batch, the recompute working set, each layer's eager bytes or
    None) of one stage's layers: per layer by its recompute mode (--recompute-every leaves the
    others keeping everything) and rule; the working set is the stage's largest layer rebuilt in
    its backward: all of it under full, what op-SAC did not keep, what the selective modules
    dropped."""
    all_layers, s, b, h, tp, ab = ctx.spec["layers"], ctx.s, ctx.b, ctx.h, ctx.tp, ctx.ab
    parts = once_per_kind(all_layers, layers, ctx.parts_of)
    eager_parts = (once_per_kind(all_layers, layers, ctx.eager_of) if ctx.eager
                   else [None] * len(parts))
    modes = layer_modes(ctx.c, layers)
    sacs = once_per_kind(all_layers, layers, ctx.sac_of) if "op-sac" in modes else [0] * len(parts)
    per_mb = 0
    for x, e, md, sac in zip(parts, eager_parts, modes, sacs):
        if md == "op-sac":
            per_mb += sac
        elif e is None:
            per_mb += stored_layer_bytes(x, recompute=md, sp_or_pa=ctx.sp_or_pa, tp=tp, s=s, b=b,
                                         h=h, act_bytes=ab, streams=ctx.streams, modules=ctx.mods)
        elif md == "full":
            per_mb += eager_checkpointed_layer_bytes(s=s, b=b, h=h, tp=tp, sp_or_pa=ctx.sp_or_pa,
                                                     act_bytes=ab, autocast=ctx.autocast)
        else:
            per_mb += e
    working = 0
    for x, e, md, sac in zip(parts, eager_parts, modes, sacs):
        whole = x["outside"] + x["inside"] + x["scores"] if e is None else e
        if md == "full":
            working = max(working, whole)
        elif md == "op-sac":
            working = max(working, whole - sac)
        elif md == "selective":
            working = max(working, selective_dropped_bytes(x, ctx.mods))
    return per_mb, working, eager_parts


def _stage_memory(spec, c, ctx, st, layers):
    """One pipeline stage's breakdown (training_memory's list entry)."""
    tp, pp, s, b, h, ab = ctx.tp, c["pp"], ctx.s, ctx.b, ctx.h, ctx.ab
    ne, ex, emb = stage_params_per_rank(spec, tp=tp, pp=pp, vp=c["vp"], etp=ctx.etp, ep=c["ep"],
                                        stage=st, layers_held=layers)
    w, g, o, trainable, buffers = _stage_model_states(spec, c, layers=layers, ne=ne, ex=ex, emb=emb,
                                                      tp=tp)
    per_mb, working, eager_parts = _stage_layer_activations(ctx, layers)
    emb_mb = 0
    if st == 0 and c["dropout"]:  # embedding dropout mask, 1 byte (Korthikanti sec. 4.3)
        emb_mb = s * b * h / (tp if c["sequence_parallel"] else 1)
    flight = in_flight_microbatches(pp=pp, vp=c["vp"], stage=st, num_microbatches=ctx.m)
    stored = (per_mb + emb_mb) * flight
    logits = casts = 0
    if st == pp - 1:
        if ctx.eager:
            logits = eager_output_layer_bytes(s=s, b=b, h=h, V=spec["vocab_size"], tp=tp,
                                              sp=c["sequence_parallel"], act_bytes=ab,
                                              autocast=ctx.autocast)
        else:
            logits = output_layer_activation_bytes(s=s, b=b, h=h, V=spec["vocab_size"], tp=tp,
                                                   sp=c["sequence_parallel"], act_bytes=ab)
    phase = None
    if ctx.eager:  # the larger of the backward's start and end (training_memory's docstring)
        if ctx.autocast:
            # 16-bit weight copies saved by the linears whose forward is kept, and the head's
            # (routed experts run grouped_mm, which autocast does not cast: their weights stay fp32)
            casts = ab * ((ne - emb) if c["recompute"] not in ("full", "op-sac") else 0)
            casts += (ab * spec["vocab_size"] * spec["word_embed_proj_dim"] / tp
                      if st == pp - 1 else 0)
        g_start = g if ctx.m > 1 else 0  # accumulation: the earlier micro-batches' gradients
        tied = (spec["vocab_size"] * spec["word_embed_proj_dim"] / tp * c["grad_bytes"]
                if spec["tied_embeddings"] and pp == 1 else 0)
        if g_start + casts + stored + logits >= g + max(tied, working):
            phase, g = "backward start", g_start
            working = 0
        else:
            phase, casts, stored, logits, per_mb, emb_mb = "backward end", 0, 0, 0, 0, 0
            g, working = (g + tied, 0) if tied >= working else (g, working)
    act = stored + working + logits
    total = w + g + o + buffers + casts + act + c["overhead_bytes"]
    return {"stage": st, "stage_layers": len(layers), "params_per_gpu": ne + ex,
            "trainable_params_per_gpu": trainable,
            "expert_params_per_gpu": ex, "weights_bytes": w, "gradients_bytes": g,
            "optimizer_bytes": o, "zero_buffers_bytes": buffers,
            "activations_stored_bytes": stored,
            "activations_layers_bytes": per_mb * flight,
            "activations_embedding_bytes": emb_mb * flight,
            "activations_recompute_bytes": working,
            "activations_logits_bytes": logits, "activations_bytes": act,
            "weight_casts_bytes": casts, "peak_phase": phase,
            "eager_rule_layers": sum(e is not None for e in eager_parts),
            "in_flight_microbatches": flight, "total_bytes": total}


OFFLOAD_WEIGHT_BYTES = 2  # offloaded 16-bit weights are what the layers read (the fp32 master copy is the optimizer's)


def offloaded_stage_memory(stage, *, emb_params, offload_params, offload_activations):
    """One stage's training_memory breakdown with its layer weights and/or stored activations in
    host memory: two layers' weights stay (the embedding and head's stay whole), and two layers'
    stored activations of one micro-batch. Returns a new dict with the moved bytes as
    host_bytes."""
    st = dict(stage)
    n = max(st["stage_layers"], 1)
    moved = 0.0
    if offload_params and st["params_per_gpu"]:
        per_param = st["weights_bytes"] / st["params_per_gpu"]
        layers_w = st["weights_bytes"] - emb_params * per_param
        kept = min(n, 2) * layers_w / n
        moved += layers_w - kept
        st["weights_bytes"] -= layers_w - kept
    if offload_activations and st["activations_layers_bytes"]:
        per_layer = st["activations_layers_bytes"] / (n * max(st["in_flight_microbatches"], 1))
        kept = min(st["activations_layers_bytes"], 2 * per_layer)
        moved += st["activations_layers_bytes"] - kept
        st["activations_stored_bytes"] -= st["activations_layers_bytes"] - kept
        st["activations_bytes"] -= st["activations_layers_bytes"] - kept
        st["activations_layers_bytes"] = kept
    st["total_bytes"] -= moved
    st["host_bytes"] = moved
    return st


def offloaded_stages(spec, cfg, stages):
    """offloaded_stage_memory on every stage of training_memory's list. cfg: a layout or mem's
    configuration (tp, pp, vp, etp, ep, offload_params, offload_activations, and chunk_layers when
    the pipeline split is uneven)."""
    chunks = cfg["chunk_layers"] if "chunk_layers" in cfg else layout_chunk_layers(spec["num_layers"], cfg)
    by_stage = all_stage_layers(num_layers=spec["num_layers"], pp=cfg["pp"], vp=cfg["vp"], chunk_layers=chunks)
    out = []
    for st in stages:
        emb = stage_params_per_rank(spec, tp=cfg["tp"], pp=cfg["pp"], vp=cfg["vp"], etp=cfg["etp"], ep=cfg["ep"],
                                    stage=st["stage"], layers_held=by_stage[st["stage"]])[2]
        out.append(offloaded_stage_memory(st, emb_params=emb, offload_params=cfg.get("offload_params"),
                                          offload_activations=cfg.get("offload_activations")))
    return out


def offloaded_memory(spec, cfg, stages):
    """The heaviest stage of offloaded_stages."""
    return max(offloaded_stages(spec, cfg, stages), key=lambda x: x["total_bytes"])


# ======== llmcalc/serve/footprint.py ==============================================================
# Per-GPU memory to serve, as calc_transformer_mem.py --infer reports it: each layer kind's KV
# cache (and DeepSeek's indexer keys) per token and per batch, linear-attention and state-space
# layers' constant state, one prefill's activations, and the heaviest pipeline stage's total.
# References: Pope et al. 2022, "Efficiently Scaling Transformer Inference" (the KV cache);
# transformers 5's cache classes (what each layer kind keeps); Korthikanti et al. 2022 (activations).

def kv_cache_bytes(spec, layer_indices, *, tp, kv_bytes, mla_cache, batch, context):
    """{"kv", "indexer"}: the cache on one rank holding `layer_indices` of a spec's layer list, the
    sum of layer_kv_cache_bytes over those layers (once per distinct layer kind, times its count)."""
    counts = {}
    for i in layer_indices:
        layer = spec["layers"][i]
        counts[id(layer)] = (layer, counts.get(id(layer), (layer, 0))[1] + 1)
    out = {"kv": 0, "indexer": 0}
    for layer, n in counts.values():
        c = layer_kv_cache_bytes(layer, tp=tp, kv_bytes=kv_bytes, mla_cache=mla_cache, batch=batch,
                              context=context)
        out["kv"] += n * c["kv"]
        out["indexer"] += n * c["indexer"]
    return out


def state_cache_bytes(spec, layer_indices, *, tp, conv_bytes, state_bytes, batch):
    """{"conv", "recurrent"}: the linear mixers' state on one rank holding `layer_indices`, the sum
    of layer_state_bytes over those layers (once per distinct layer kind)."""
    out = {"conv": 0, "recurrent": 0}
    for x in once_per_kind(spec["layers"], layer_indices, lambda layer: layer_state_bytes(
            layer, tp=tp, conv_bytes=conv_bytes, state_bytes=state_bytes, batch=batch)):
        out["conv"] += x["conv"]
        out["recurrent"] += x["recurrent"]
    return out


def all_attention_layers(spec):
    """The spec's layer list with every linear mixer replaced by the model's first softmax attention
    block (its full-attention kind): the same model counted as if every layer were attention, for
    the hybrid's saving. None when the model has no linear mixer or no attention layer."""
    attn = next((x for layer in spec["layers"] for x in layer["attention"]
                 if x["span"] == "full" and not x["kv_shared"]), None)
    if attn is None or not any_attn(spec, lambda x: x["span"] == "state"):
        return None
    swapped = {}
    out = []
    for layer in spec["layers"]:
        if id(layer) not in swapped:
            swapped[id(layer)] = dict(layer, attention=tuple(attn if x["span"] == "state" else x
                                                             for x in layer["attention"]))
        out.append(swapped[id(layer)])
    return out


def inference_activation_bytes(layers, *, s, b, h, V, tp, flash, act_bytes, etp=None):
    """Working set of one prefill forward over b x s tokens on one tp rank: the residual stream
    and normed input (2 h per token), plus the largest block of any of `layers` (distinct layer
    dicts): attention -- q, k, v on the rank's heads and, without flash attention, a/tp x s scores
    per token (eager attention scores all s keys on sliding and chunked layers too); a lightning
    indexer's q and key (H_I d_I + d_I) and its fp32 logits over s keys -- or an MLP's intermediate
    (f, or 2 f + f gated; /tp; MoE: the k routed experts' f_e /etp plus the shared width /tp); plus fp32
    logits for the last position of each sequence (4 b V / tp). A Gated DeltaNet mixer: its
    in_proj's output, the conv's output and the core's output (mixer_widths) and an fp32 chunk
    matrix (the delta rule's C x C per chunk and value head, flash-linear-attention's A: 4 H C per
    token; SSD's C B^T per chunk and group, mamba_ssm's _bmm_chunk_fwd: 4 G Q). An estimate: one
    layer's peak."""
    B = act_bytes
    widest = 0
    for layer in layers:
        for attn in layer["attention"]:
            x = attention_on_rank(attn, tp=tp)
            if x["span"] == "state":
                w_in, w_out, conv_dim = mixer_widths(x)
                mats = x["kv_heads"] if x["kind"] == "mamba2" else x["heads"]  # SSD's C B^T is per group
                widest = max(widest, B * (w_in + conv_dim + w_out) + 4 * mats * x["state_chunk"])
                continue
            d, _ = attention_head_dims(x)
            per_tok = B * ((x["heads"] + 2 * x["kv_heads"]) * d + (0 if flash else x["heads"] * s))
            if x["index_topk"]:
                per_tok += B * (x["index_heads"] * x["index_head_dim"] + x["index_head_dim"]) + 4 * s
            widest = max(widest, per_tok)
        for m in layer["mlp"]:
            per_f = mlp_stored_widths(m["linears"])
            if m["kind"] == "dense":
                width = m["width"] * per_f / tp
            else:  # routed experts split their width over etp, shared experts over tp
                width = (expected_real_experts(m) * m["width"] / (etp or tp) + m["shared_width"] / tp) * per_f
            widest = max(widest, int(B * width))
    return B * s * b * 2 * h + s * b * widest + 4 * b * V / tp


def inference_memory(spec, c, b, ctx):
    """Per-GPU inference memory for batch b and context ctx tokens (prompt + output) on the
    heaviest pipeline stage: weights at their bit width, the KV cache and any indexer key cache of
    the stage's layers (kv_cache_bytes: per layer kind, sliding layers capped at their window), the
    constant state of its linear mixers (state_cache_bytes) and one prefill forward's working set
    (inference_activation_bytes: the model's largest block). The KV rule is Pope et al. 2022 sec.
    3.1's (2 x layers x kv heads x head dim per token), per layer kind; weights as the memory of
    the stored checkpoint (quantization_config, _checkpoint_format) or --weight-bits."""
    tp, pp = c["tp"], c["pp"]
    L = spec["num_layers"]
    prompt = min(c["sequence_length"], ctx)
    if c["prefill_chunk"]:  # chunked prefill: one forward sees at most this many tokens
        b_eff = max(1, min(b, c["prefill_chunk"] // prompt)) if c["prefill_chunk"] >= prompt else 1
        prompt = min(prompt, c["prefill_chunk"])
    else:
        b_eff = b
    act = inference_activation_bytes([g[0] for g in layer_groups(spec)], s=prompt, b=b_eff,
                                     h=spec["hidden_size"], V=spec["vocab_size"], tp=tp,
                                     flash=c["flash_attention"], act_bytes=c["act_bytes"], etp=c["etp"])
    chunks = [[sum(row)] for row in c["chunk_layers"]]  # no interleaving: one chunk per rank
    stages = []
    by_stage = all_stage_layers(num_layers=L, pp=pp, vp=1, chunk_layers=chunks)
    for st in range(pp):
        layers = by_stage[st]
        ne, ex, emb = stage_params_per_rank(spec, tp=tp, pp=pp, vp=1, etp=c["etp"], ep=c["ep"],
                                            stage=st, layers_held=layers)
        # norms, routers and other per-layer weights stay unquantized (>= 16 bits), whole on every rank
        small = sum(once_per_kind(spec["layers"], layers, lambda x: sum(
            layer_params(x, h=spec["hidden_size"], norm=spec["norm"])[k] for k in ("norms", "router", "extra"))))
        wb = c["weight_bits"] / 8
        w = ((ne - emb - small) * wb + small * max(wb, c["weight_bytes"]) + ex * c["expert_weight_bits"] / 8
             + emb * max(wb, c["weight_bytes"]))
        cache = kv_cache_bytes(spec, layers, tp=tp, kv_bytes=c["kv_bytes"], mla_cache=c["mla_cache"],
                               batch=b, context=ctx)
        state = state_cache_bytes(spec, layers, tp=tp, conv_bytes=c["act_bytes"], state_bytes=c["state_bytes"],
                                  batch=b)
        total = w + cache["kv"] + cache["indexer"] + state["conv"] + state["recurrent"] + act + c["overhead_bytes"]
        stages.append({"stage": st, "stage_layers": len(layers), "params_per_gpu": ne + ex,
                       "weights_bytes": w,
                       "gradients_bytes": 0, "optimizer_bytes": 0, "zero_buffers_bytes": 0,
                       "kv_cache_bytes": cache["kv"], "indexer_cache_bytes": cache["indexer"],
                       "state_cache_bytes": state["conv"] + state["recurrent"],
                       "state_conv_bytes": state["conv"], "state_recurrent_bytes": state["recurrent"],
                       "activations_bytes": act, "total_bytes": total})
    return max(stages, key=lambda x: x["total_bytes"]), stages


def kv_cache_by_kind(spec, c, stage, *, batch, context):
    """The KV cache of one inference stage by layer kind, for the report: per distinct kind its
    label, layer count, bytes per token per layer, tokens each layer keeps, and bytes."""
    chunks = [[sum(row)] for row in c["chunk_layers"]]
    idx = stage_layers(num_layers=spec["num_layers"], pp=c["pp"], vp=1, stage=stage, chunk_layers=chunks)
    rows = {}
    for i in idx:
        layer = spec["layers"][i]
        if id(layer) not in rows:
            per_tok = layer_cache_bytes_per_token(layer, tp=c["tp"], kv_bytes=c["kv_bytes"],
                                                  mla_cache=c["mla_cache"])
            held = layer_kv_cache_bytes(layer, tp=c["tp"], kv_bytes=c["kv_bytes"], mla_cache=c["mla_cache"],
                                     batch=batch, context=context)
            rows[id(layer)] = {
                "attention": " + ".join(attention_kind(x)
                                        for x in layer["attention"]),
                "layers": 0, "first_layer": i,
                "kv_bytes_per_token": per_tok["kv"], "indexer_bytes_per_token": per_tok["indexer"],
                "cached_tokens": max((cached_tokens(x, context=context) for x in layer["attention"]), default=0),
                "kv_bytes_per_layer": held["kv"], "indexer_bytes_per_layer": held["indexer"],
                "state_bytes_per_layer": sum(layer_state_bytes(layer, tp=c["tp"], conv_bytes=c["act_bytes"],
                                                               state_bytes=c["state_bytes"], batch=batch).values()),
                "compressed_bytes_per_layer": batch * c["kv_bytes"] * sum(
                    sum(compressed_cache_elements(x, context=context).values()) for x in layer["attention"])}
        rows[id(layer)]["layers"] += 1
    return [r for r in rows.values() if r["attention"]]  # an MLP-only layer (Nemotron-H) caches nothing


def any_attn(spec, test):
    """True when some attention block of some layer kind passes `test`."""
    return any(test(x) for g in layer_groups(spec) for x in g[0]["attention"])


# ======== llmcalc/train/fit.py ====================================================================
# What fits on a GPU: the largest batch or context under a memory limit, the host memory an
# offloaded optimizer needs, and the ways out of a training layout that does not fit, each costed
# by the same memory model (train/memory.py). References: Ren et al. 2021, "ZeRO-Offload" (what the
# host holds); Rajbhandari et al. 2020, "ZeRO" (what stage 3 shards).

def largest_that_fits(fn, limit, hi_cap=1 << 24):
    """Largest positive integer x <= hi_cap with fn(x) <= limit (fn increasing); 0 if none; hi_cap
    when even that fits (the caller reports it as a lower bound)."""
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


# ZeRO-Offload's host side per parameter whose optimizer state it holds: the optimizer states with
# the fp32 master copy, and the 16-bit gradients it receives (Ren et al. 2021, "ZeRO-Offload", Fig. 2:
# fp32 parameters, momentum and variance, 16-bit gradients on the CPU).
OFFLOAD_GRAD_BYTES = 2
GPUS_PER_HOST = 8  # one host per 8 GPUs (DGX/HGX); fewer when the job has fewer


def offload_host_memory(spec, c, b):
    """Host memory the offloaded optimizer needs: per GPU, and per host of GPUS_PER_HOST GPUs."""
    per_param = c["host_opt_bytes"] + OFFLOAD_GRAD_BYTES
    on_gpu = training_memory(spec, c.replace(opt_bytes=c["host_opt_bytes"]), b)[0]
    on_gpu = on_gpu["optimizer_bytes"]
    per_gpu = on_gpu / c["host_opt_bytes"] * per_param if c["host_opt_bytes"] else 0.0
    host_gpus = min(GPUS_PER_HOST, c["num_gpus"])
    return {"host_bytes_per_gpu": per_gpu, "gpus_per_host": host_gpus, "host_bytes_per_host": per_gpu * host_gpus,
            "bytes_per_param": per_param}


def with_dp(c, dp):
    """The configuration with dp data-parallel ranks (the other parallel sizes kept)."""
    return c.replace(dp=dp, num_gpus=dp * c["cp"] * c["tp"] * c["pp"],
                     **zero_shards(dp=dp, **{k: c[k] for k in ("cp", "tp", "pp", "etp", "ep")}))


def training_ways_out(spec, c, b):
    """When the micro-batch does not fit: the changes that help, each costed by the same memory
    model (ZeRO-3, full recompute, offload, and the three together), and the fewest GPUs (more
    data-parallel ranks under ZeRO-3 and full recompute, micro-batch b) that fit."""
    lim = c["memory_bytes"]
    out = []

    def add(flags, cc, why):
        total = training_memory(spec, cc, b)[0]["total_bytes"]
        out.append({"flags": flags, "why": why, "total_bytes": total, "fits": total <= lim})
    most, flags = c.copy(), []
    if c["zero_stage"] < 3 and c["zero_shard"] > 1:
        add("-z 3", c.replace(zero_stage=3),
            f"weights, gradients and optimizer states over dp*cp = {c['zero_shard']}")
        most["zero_stage"] = 3
        flags.append("-z 3")
    if c["recompute"] != "full" or (c.get("recompute_every") or 1) > 1:
        add("--recompute full", c.replace(recompute="full", recompute_every=1),
            "keep only each layer's input")
        most.update(recompute="full", recompute_every=1)
        flags.append("--recompute full")
    if not c["offload"] and c["opt_bytes"]:
        off = c.replace(offload=True, host_opt_bytes=c["opt_bytes"], opt_bytes=0)
        add("--offload", off, "optimizer states on the host: "
            f"{offload_host_memory(spec, off, b)['host_bytes_per_host'] / 1e9:,.0f} GB of host memory per host")
        most.update(offload=True, host_opt_bytes=c["opt_bytes"], opt_bytes=0)
        flags.append("--offload")
    if len(flags) > 1:
        add(" ".join(flags), most, "all of these together")
    fewest = None
    scaled = c.replace(zero_stage=3, recompute="full", recompute_every=1)
    dp = c["dp"]  # these GPUs first: ZeRO-3 and full recompute may be enough without offload
    while dp < 1 << 20:
        cc = with_dp(scaled, dp)
        if training_memory(spec, cc, b)[0]["total_bytes"] <= lim:
            fewest = cc["num_gpus"]
            if dp > c["dp"]:
                add(f"--num-gpus {fewest} -z 3 --recompute full", cc,
                    f"the fewest GPUs that fit (dp {dp}, tp {c['tp']}, pp {c['pp']}), no offload")
            elif flags[:2] != ["-z 3", "--recompute full"] or "--offload" in flags:
                add("-z 3 --recompute full", cc, "these GPUs, no offload")
            break
        dp *= 2
    return {"changes": out, "fewest_gpus": fewest}


# ======== llmcalc/tools/mem.py ====================================================================
# The range of each script flag (argparse dest: (lo, hi), both inclusive): far past any real run
# (1e7 GPUs ~50 x today's largest cluster; pp and vp 1024, 16 x the deepest pipelines built),
# and tight enough that no result overflows to inf, divides by ~0 or turns negative, and that a
# fit search over the stages stays fast. The model flags have their own caps in model/spec.py.
FLAG_RANGES = {
    "num_gpus": (1, 10 ** 7), "tensor_parallel_size": (1, 10 ** 7), "pipeline_parallel_size": (1, 1024),
    "virtual_pipeline_size": (1, 1024), "decoder_first_pipeline_num_layers": (1, 100_000),
    "decoder_last_pipeline_num_layers": (1, 100_000), "context_parallel_size": (1, 10 ** 7),
    "expert_parallelism": (1, 10 ** 7), "expert_tensor_parallel_size": (1, 10 ** 7),
    "zero_allgather_bucket_size": (0, 1e12), "zero3_max_live_params": (1, 1e15),
    "batch_size_per_gpu": (1, 10 ** 9), "global_batch_size": (1, 10 ** 12), "sequence_length": (1, 10 ** 9),
    "lora_rank": (1, 10 ** 6), "adapter_bytes_per_val": (1, 8), "high_prec_bytes_per_val": (1, 8),
    "low_prec_bytes_per_val": (1, 8), "recompute_every": (1, 10 ** 6), "bytes_per_grad_ele": (1, 8), "weight_bits": (1, 64),
    "kv_cache_bytes_per_val": (0.125, 8), "state_bytes_per_val": (0.125, 8), "state_bits": (1, 64), "output_tokens": (0, 10 ** 9), "prefill_chunk": (1, 10 ** 9),
    "gpu_memory_gib": (1e-3, 1e6), "misc_mem_gib": (0, 1e6), "framework_mem_gib": (0, 1e6)}


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
                 ("Autocast 16-bit weight copies (saved for backward)", res["weight_casts_bytes"]),
                 ("Activations: stored for backward", res["activations_stored_bytes"]),
                 ("Activations: recompute working set", res["activations_recompute_bytes"]),
                 ("Activations: final norm, head input, fp32 logits", res["activations_logits_bytes"])]
    else:
        rows += [("KV cache", res["kv_cache_bytes"])]
        if res["indexer_cache_bytes"]:
            rows += [("Indexer key cache (DeepSeek sparse attention)", res["indexer_cache_bytes"])]
        if res["state_cache_bytes"]:
            rows += [("Linear-attention state (constant per sequence)", res["state_cache_bytes"])]
        rows += [("Activations (one forward)", res["activations_bytes"])]
    rows += [("Framework allowance + misc", res["overhead_bytes"])]
    fit = res.get("fit") or {}
    on = (f" on {fit['gpu']}" + (" (the default GPU; --gpu NAME for another)" if fit.get("gpu_default") else "")
          if fit else "")
    lines = [f"Per-GPU memory, {res['mode']}, heaviest rank: pipeline stage {res['stage']} of "
             f"{res['parallelism']['pp']} ({res['parallelism_text']}){on}", res["mode_text"]]
    lines += [f"WARNING: {w}" for w in res["warnings"]]
    lines += [f"Model: {res['model']['described']}: {res['total_params']:,} params ({res['total_params'] / 1e9:.2f} B); "
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
        kinds = res["kv_cache_layer_kinds"]
        lines.append(f"KV cache: {res['kv_cache_bytes_per_token']:,} B per token per GPU over "
                     f"{res['stage_layers']} layers"
                     + (f" ({kinds[0]['kv_bytes_per_token']:,} per layer)" if len(kinds) == 1 else ":"))
        if len(kinds) > 1:
            for k in kinds:
                if k["state_bytes_per_layer"] and not k["kv_bytes_per_token"]:
                    lines.append(f"  {k['layers']:>4} x {k['attention']:<32}{'no KV':>10}, a constant state of "
                                 f"{k['state_bytes_per_layer'] / 2**20:,.2f} MiB per layer (whole batch), "
                                 f"{k['layers'] * k['state_bytes_per_layer'] / GIB:.2f} GiB")
                    continue
                comp = (f" (window {k['layers'] * (k['kv_bytes_per_layer'] + k['indexer_bytes_per_layer'] - k['compressed_bytes_per_layer']) / GIB:.2f} "
                        f"+ compressed entries {k['layers'] * k['compressed_bytes_per_layer'] / GIB:.2f})"
                        if k["compressed_bytes_per_layer"] else "")
                lines.append(f"  {k['layers']:>4} x {k['attention']:<32}"
                             f"{k['kv_bytes_per_token']:>10,} B/token, "
                             f"keeps {k['cached_tokens']:,} tokens, "
                             f"{k['layers'] * (k['kv_bytes_per_layer'] + k['indexer_bytes_per_layer']) / GIB:.2f} GiB{comp}")
        alt = res.get("all_attention")
        if alt:
            lines.append(f"as if its {alt['linear_layers']} linear-attention layers were {alt['attention']} attention "
                         f"(same weights): KV cache "
                         f"{alt['kv_cache_bytes'] / GIB:.2f} GiB, total {alt['total_bytes'] / GIB:.2f} GiB; "
                         f"this hybrid saves {alt['saving_bytes'] / GIB:.2f} GiB "
                         f"({100 * alt['saving_bytes'] / alt['total_bytes']:.1f}% of that total)")
    fit = res.get("fit")
    if fit:
        lines.append(f"GPU {fit['gpu']}: {fit['memory_bytes'] / GIB:.2f} GiB -> "
                     f"{'FITS' if fit['fits'] else 'DOES NOT FIT'}, headroom "
                     f"{fit['headroom_bytes'] / GIB:.2f} GiB")
        for k, v in fit.items():
            if k.startswith("max_") and k != "max_context_tokens_memory":
                more = " or more (the search stops there)" if k in fit.get("capped", ()) else ""
                if k == "max_context_tokens" and fit.get("context_limited_by"):
                    more = (f" (the model's trained context; the memory would hold "
                            f"{fit['max_context_tokens_memory']:,})")
                lines.append(f"  {k.replace('_', ' ')}: {v}{more}")
        ways = fit.get("ways_out")
        if ways:
            lines.append(f"what fits instead, at micro-batch {res['config']['batch_size']} (the same model"
                         + (", without --offload-params / --offload-activations" if ways.get("without_layer_offload")
                            else "") + "):")
            w = max(len(x["flags"]) for x in ways["changes"]) if ways["changes"] else 0
            for x in ways["changes"]:
                lines.append(f"  {x['flags']:<{w}}  {x['total_bytes'] / GIB:>9,.2f} GiB  "
                             f"{'fits' if x['fits'] else 'does not fit'}: {x['why']}")
            if not ways["fewest_gpus"]:
                lines.append("  no GPU count up to 2^20 data-parallel ranks fits it under ZeRO-3 and full recompute")
            on = f" on {ways['fewest_gpus']} GPUs" if ways["fewest_gpus"] else ""
            lines.append(f"  the fastest layout that fits{on}: {ways['search_command']}")
    off = res.get("offload")
    if off:
        lines.append(f"offloaded optimizer (--offload): {off['host_bytes_per_gpu'] / 1e9:,.1f} GB of host memory "
                     f"per GPU, {off['host_bytes_per_host'] / 1e9:,.1f} GB per host of {off['gpus_per_host']} GPUs "
                     f"({off['bytes_per_param']:g} B per parameter it updates)")
    if res.get("host_bytes"):
        what = " and ".join(x for x, on in (("layer weights (--offload-params)", res["config"]["offload_params"]),
                                            ("stored activations (--offload-activations)",
                                             res["config"]["offload_activations"])) if on)
        lines.append(f"in host memory: {what}, {res['host_bytes'] / 1e9:,.1f} GB per GPU on the heaviest stage "
                     "(two layers' worth stays on the GPU; the copies' time: calc_training_time.py)")
    for a in res["assumptions"]:
        lines.append(f"assumes: {a}")
    return "\n".join(lines)


def build_parser():
    p = OneLineErrorParser(description=__doc__)
    add_model_args(p)
    bo = argparse.BooleanOptionalAction
    g = p.add_argument_group("parallelism (cookbook flags first)")
    g.add_argument("--num-gpus", type=bounded_int, default=None, help="GPUs in the job (default 1)")
    g.add_argument("--tensor-parallel-size", "-tp", type=bounded_int, default=None, help="tp (default 1)")
    g.add_argument("--pipeline-parallel-size", "-pp", type=bounded_int, default=None, help="pp (default 1)")
    g.add_argument("--virtual-pipeline-size", "-vp", type=bounded_int, default=1,
                   help="interleaved schedule: model chunks per pipeline rank (default 1)")
    g.add_argument("--decoder-first-pipeline-num-layers", type=bounded_int, default=None,
                   help="Megatron-LM uneven pipeline: layers on the first stage (the stages without "
                   "a stated count share the rest evenly)")
    g.add_argument("--decoder-last-pipeline-num-layers", type=bounded_int, default=None,
                   help="Megatron-LM uneven pipeline: layers on the last stage")
    g.add_argument("--account-for-embedding-in-pipeline-split", action="store_true",
                   help="Megatron-LM: the embedding counts as one layer when splitting L+1 over "
                   "pp*vp chunks; the first chunk holds one transformer layer fewer")
    g.add_argument("--account-for-loss-in-pipeline-split", action="store_true",
                   help="Megatron-LM: the head and loss count as one layer; the last chunk holds "
                   "one transformer layer fewer")
    g.add_argument("--context-parallel-size", "-cp", type=bounded_int, default=1,
                   help="cp: the sequence split over cp ranks (ring attention; default 1)")
    g.add_argument("--expert-parallelism", "-ep", "--expert-parallel-size", type=bounded_int, default=None,
                   help="ep: routed experts split over ep ranks (default 1)")
    g.add_argument("--expert-tensor-parallel-size", "-etp", type=bounded_int, default=None,
                   help="tensor parallelism inside each expert (default tp)")
    g.add_argument("--sequence-parallel", "-sp", action=bo, default=False,
                   help="Megatron sequence parallelism: norms/dropout activations /tp (default off)")
    g.add_argument("--partition-activations", "-pa", action="store_true",
                   help="DeepSpeed ZeRO-R: checkpointed layer inputs split over tp (with full recompute)")
    g.add_argument("--zero-stage", "-z", type=bounded_int, default=None, choices=[0, 1, 2, 3],
                   help="ZeRO stage over the dp*cp group (cookbook default 1)")
    g.add_argument("--fsdp", choices=sorted(FSDP_TO_ZERO), default=None,
                   help="FSDP sharding strategy, read as its ZeRO equivalent (no_shard 0, "
                   "shard_grad_op 2, full_shard/hybrid_shard 3)")
    g.add_argument("--zero-allgather-bucket-size", "-zbs", type=finite_float, default=None,
                   help="ZeRO all-gather bucket in elements, held at weight precision (default 5e8, DeepSpeed's; 0: "
                   "Megatron-LM's distributed optimizer, which shards in place)")
    g.add_argument("--zero3-max-live-params", "-zmlp", type=finite_float, default=None,
                   help="ZeRO-3 parameters kept gathered at once (default 1e9)")
    t = p.add_argument_group("training")
    t.add_argument("--checkpoint-activations", "-ca", action="store_true",
                   help="turns full activation recomputation ON (the cookbook's meaning; same as "
                   "--recompute full)")
    t.add_argument("--recompute", choices=RECOMPUTE_MODES, default=None,
                   help="activation recomputation (default none; -ca means full): selective = Megatron-LM's "
                   "--recompute-modules (default core_attn), op-sac = torchtitan's per-op selective checkpointing "
                   "(keeps attention outputs and every odd-numbered matmul's output)")
    t.add_argument("--recompute-modules", nargs="+", choices=RECOMPUTE_MODULES, default=None, metavar="MODULE",
                   help="with --recompute selective: Megatron-LM's modules whose activations are dropped "
                   "(default core_attn; one of " + ", ".join(RECOMPUTE_MODULES) + ")")
    t.add_argument("--recompute-every", type=bounded_int, default=None, metavar="K",
                   help="apply --recompute to every k-th layer only, the others keep everything")
    t.add_argument("--batch-size-per-gpu", "-b", "--micro-batch-size", type=bounded_int, default=None,
                   help="micro-batch per GPU, or the inference batch (default 1)")
    t.add_argument("--global-batch-size", "-gbs", type=bounded_int, default=None,
                   help="global batch; gives the micro-batch count m = gbs/(b*dp) (default: m = pp)")
    t.add_argument("--sequence-length", "-s", type=bounded_int, default=None,
                   help="training sequence, or the inference prompt (default 2048)")
    t.add_argument("--flash-attention", action=bo, default=True,
                   help="fused attention: no s^2 scores stored (default on)")
    t.add_argument("--dropout", action=bo, default=False,
                   help="dropout masks stored (default off; Korthikanti's setup has it on)")
    t.add_argument("--offload", action=bo, default=False,
                   help="optimizer states, with the fp32 master copy, on the host (ZeRO-Offload, as "
                   "calc_training_time.py --offload): the host memory it needs is stated")
    t.add_argument("--offload-params", action=bo, default=False,
                   help="the layers' 16-bit weights in host memory, two layers' on the GPU (ZeRO-Infinity, "
                   "as calc_training_time.py --offload-params; -z 0-2, --framework megatron)")
    t.add_argument("--offload-activations", action=bo, default=False,
                   help="what each layer stores for its backward in host memory, two layers' worth of one "
                   "micro-batch on the GPU (as calc_training_time.py --offload-activations)")
    t.add_argument("--optimizer", choices=sorted(OPTIMIZER_STATE_BYTES), default="adamw",
                   help="optimizer (default adamw: 12 B/param with the fp32 master copy)")
    t.add_argument("--finetune", choices=("full", "lora", "qlora"), default="full",
                   help="full training, or LoRA/QLoRA adapters on a frozen base (default full)")
    t.add_argument("--lora-rank", type=bounded_int, default=16, help="LoRA rank r (default 16)")
    t.add_argument("--adapter-bytes-per-val", type=bounded_int, default=None,
                   help="LoRA adapter weights and grads (default 4: PEFT keeps adapters in fp32; "
                   "the QLoRA paper's code casts them to bf16: 2)")
    t.add_argument("--lora-targets", default="all-linear",
                   help="comma list of q,k,v,o,gate,up,down, or all-linear (default)")
    t.add_argument("--framework", choices=("megatron", "pytorch"), default="megatron",
                   help="whose activations: megatron = fused kernels, Korthikanti et al. 2022's "
                   "count (default); pytorch = eager PyTorch with transformers' modules (what "
                   "autograd saves; with mixed precision and ZeRO 0-1, fp32 weights under "
                   "torch.autocast, as the Hugging Face Trainer's --bf16 runs)")
    pr = p.add_argument_group("precision")
    pr.add_argument("--disable-mixed-precision", action="store_false", dest="is_mixed_precision",
                    help="train in high precision: no master copy, weights and activations at "
                    "--high-prec-bytes-per-val")
    pr.add_argument("--high-prec-bytes-per-val", type=bounded_int, default=None, help="default 4")
    pr.add_argument("--low-prec-bytes-per-val", type=bounded_int, default=None, help="default 2")
    pr.add_argument("--bytes-per-grad-ele", type=bounded_int, default=None, help="default 4")
    pr.add_argument("--weight-bits", type=finite_float, default=None,
                   help="bits per quantized layer weight for inference and QLoRA (default: 16 for "
                   "inference, 4.127 = NF4 with double quantization for QLoRA); embeddings, head "
                   "stay at the low-precision width")
    pr.add_argument("--kv-cache-bytes-per-val", type=finite_float, default=None,
                   help="KV cache element bytes (default: --low-prec-bytes-per-val)")
    pr.add_argument("--kv-cache-bits", type=bounded_int, default=None,
                    help="KV cache element bits, as calc_inference_latency.py takes them (= 8 x "
                    "--kv-cache-bytes-per-val)")
    pr.add_argument("--state-bits", type=bounded_int, default=None,
                    help="recurrent-state element bits, as calc_inference_latency.py takes them (= 8 x "
                    "--state-bytes-per-val)")
    pr.add_argument("--state-bytes-per-val", type=finite_float, default=None,
                   help="bytes per element of a linear-attention / state-space layer's recurrent state "
                   "(default 4: fp32, as transformers' cache and flash-linear-attention keep it); its conv "
                   "window is at --low-prec-bytes-per-val")
    i = p.add_argument_group("inference")
    i.add_argument("--infer", action="store_true", help="inference instead of training")
    i.add_argument("--precision", choices=sorted(PRECISIONS), default=None,
                   help="weight and KV-cache bits at once, as calc_inference_latency.py takes it (explicit "
                   "--weight-bits / --kv-cache-bits win; fp4 weights are NVFP4, 4.5 bits with scales)")
    i.add_argument("--output-tokens", "-o", type=bounded_int, default=None, help="generated tokens (default 1)")
    i.add_argument("--prefill-chunk", type=bounded_int, default=None,
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
    add_output_args(p, json_help="print the result dict as JSON only")
    p.epilog = lambda: ranges_epilog(p, FLAG_RANGES)  # built only for --help
    return p


class MemConfig(MemoryConfig):
    """calc_transformer_mem.py's resolved configuration (the result's "config"): the training
    memory config (train/memory.MemoryConfig) and the fields of inference and of the capacity check,
    built once, by config_from_flags."""

    FIELDS = dict(MemoryConfig.FIELDS, **{
        "weight_bits": "bits per layer weight (inference, QLoRA's default base)",
        "expert_weight_bits": "bits per routed-expert weight (inference)",
        "checkpoint_format": "the checkpoint's quantization as stored (served as is), or None",
        "kv_bytes": "bytes per KV cache element",
        "state_bytes": "bytes per recurrent-state element",
        "output_tokens": "generated tokens (inference)",
        "sliding_window": "the widest sliding window",
        "sliding_layers": "indices of the layers with sliding-window attention",
        "prefill_chunk": "tokens one prefill forward processes, or None: the whole batch",
        "mla_cache": "MLA cache: latent or expanded", "gpu": "the capacity's source, in words",
        "gpu_default": "no --gpu or --gpu-memory-gib given: the default accelerator's capacity",
        "memory_field": "which capacity: hardware.py's field or --gpu-memory-gib",
        "infer": "inference instead of training"})


# Flags that must be positive when given (the others have their own rule)
POSITIVE_FLAGS = ("num_gpus", "tensor_parallel_size", "pipeline_parallel_size",
                  "virtual_pipeline_size", "context_parallel_size", "expert_parallelism",
                  "expert_tensor_parallel_size",
                  "batch_size_per_gpu", "global_batch_size", "sequence_length",
                  "high_prec_bytes_per_val", "low_prec_bytes_per_val", "bytes_per_grad_ele",
                  "weight_bits", "kv_cache_bytes_per_val", "gpu_memory_gib", "prefill_chunk",
                  "adapter_bytes_per_val", "lora_rank", "zero3_max_live_params",
                  "decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers")


def check_flag_values(args, parser):
    """Each flag's own rule, one parser.error: positive, not negative, within FLAG_RANGES."""
    for name in POSITIVE_FLAGS:
        val = getattr(args, name)
        if val is not None and val <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {val}")
    for name in ("misc_mem_gib", "framework_mem_gib"):
        if getattr(args, name) is not None and getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must not be negative")
    if args.output_tokens is not None and args.output_tokens < 0:
        parser.error("--output-tokens must not be negative")
    check_ranges(args, parser, FLAG_RANGES)


def bit_widths(args, parser):
    """The weight bits and the KV cache and state bytes per element the flags give (None where
    none does): --precision fills those not given under --infer, as calc_inference_latency.py's
    preset; --kv-cache-bits / --state-bits are the latency script's spellings, in bits."""
    weight_bits, kv_bits = args.weight_bits, args.kv_cache_bits
    if args.precision and args.infer:
        w, _, kv = PRECISIONS[args.precision]
        if weight_bits is None:
            weight_bits = NVFP4_BITS if args.precision == "fp4" else w
        if kv_bits is None and args.kv_cache_bytes_per_val is None:
            kv_bits = kv
    out = {"weight_bits": weight_bits}
    for key, bits, nbytes in (("kv_bytes", "kv_cache_bits", "kv_cache_bytes_per_val"),
                              ("state_bytes", "state_bits", "state_bytes_per_val")):
        val = kv_bits if bits == "kv_cache_bits" else args.state_bits
        out[key] = getattr(args, nbytes)
        if val is not None:
            if out[key] is not None:
                parser.error(f"give --{bits.replace('_', '-')} or --{nbytes.replace('_', '-')}, not both")
            if bits == "kv_cache_bits" and val not in (4, 8, 16, 32):
                parser.error(f"--{bits.replace('_', '-')} must be 4, 8, 16 or 32, got {val}")
            out[key] = val / 8
    return out


def with_cookbook_heads(args):
    """The flags as the model reader and the printed commands read them: `args`, or, where nothing
    gives the heads, a copy with the cookbook mem script's 64 (heads_defaulted: not a shape the user
    gave, so the report says "default"). Returns a new namespace; `args` is left as parsed."""
    if args.num_attention_heads is None and not args.hf_model_name_or_path:
        if (args.hidden_size or 6144) % 64 == 0 and args.head_dim is None:
            return argparse.Namespace(**dict(vars(args), num_attention_heads=64,
                                             heads_defaulted=True))
    return args


def model_spec(model_args, parser):
    """The model spec and notes; what the result should say about flags it does not use goes into
    the spec's warnings."""
    args = model_args
    try:
        spec, notes = resolve_model_spec(args, defaults={"num_experts": 0})
    except ValueError as exc:
        parser.error(str(exc))
    if args.precision and not args.infer:
        spec["warnings"].append(f"--precision {args.precision} describes serving (--infer); training counts "
                                "weights, gradients and states at the byte widths of its own flags")
    if args.infer:  # training-only layouts: say so in the result rather than drop them silently
        unused = [f for f, on in (("-cp", args.context_parallel_size > 1), ("--sequence-parallel", args.sequence_parallel),
                                  ("-z", args.zero_stage is not None), ("--offload", args.offload),
                                  ("--offload-params", args.offload_params),
                                  ("--offload-activations", args.offload_activations)) if on]
        if unused:
            spec["warnings"].append(f"{', '.join(unused)} {'describes' if len(unused) == 1 else 'describe'} "
                                    "training; --infer does not model it (weights and cache per GPU come from "
                                    "-tp, -pp and -ep)")
    return spec, notes


def check_pipeline_split(args, parser, L, pp, vp):
    """Megatron-LM's rules for the layers of each pipeline stage (pipeline_split_error), one
    parser.error; returns the counts[rank][chunk] of pipeline_chunk_layers."""
    kw = dict(num_layers=L, pp=pp, vp=vp, first=args.decoder_first_pipeline_num_layers,
              last=args.decoder_last_pipeline_num_layers,
              embedding_in_split=args.account_for_embedding_in_pipeline_split,
              loss_in_split=args.account_for_loss_in_pipeline_split)
    why = pipeline_split_error(**kw)
    if why:
        parser.error(why)
    return pipeline_chunk_layers(**kw)


def parallel_sizes(args, parser, spec, notes):
    """tp, pp, vp, cp, ep, etp, dp and the GPUs, each split checked against every layer kind
    (heads, kv heads, widths and experts divide; the pipeline split is Megatron-LM's), and the
    chunk layers of the split; an etp on a dense model is noted and reset to tp."""
    n = args.num_gpus or 1
    tp, pp = args.tensor_parallel_size or 1, args.pipeline_parallel_size or 1
    vp, cp = args.virtual_pipeline_size, args.context_parallel_size
    ep = args.expert_parallelism or 1
    etp = args.expert_tensor_parallel_size or tp
    kinds = [g[0] for g in layer_groups(spec)]
    mlps = [m for layer in kinds for m in layer["mlp"]]
    if n % (tp * pp * cp):
        parser.error(f"--num-gpus {n} is not divisible by tp*pp*cp = {tp}*{pp}*{cp} = {tp * pp * cp}")
    for x in (x for layer in kinds for x in layer["attention"]):  # every kind's heads split over tp
        if x["heads"] % tp:
            parser.error(f"--num-attention-heads {x['heads']} is not divisible by "
                         f"--tensor-parallel-size {tp}")
        if x["kind"] == "gdn" and x["kv_heads"] % tp:  # key heads split, never replicated (Mamba-2
            # groups fewer than tp are replicated, as vLLM does)
            parser.error(f"linear-attention key heads {x['kv_heads']} are not divisible by "
                         f"--tensor-parallel-size {tp}")
        if x["kv_heads"] % tp and tp % x["kv_heads"]:
            parser.error(f"kv heads {x['kv_heads']} and --tensor-parallel-size {tp}: one must "
                         "divide the other")
    chunk_layers = check_pipeline_split(args, parser, spec["num_layers"], pp, vp)
    for m in mlps:
        if m["kind"] == "dense" and m["width"] % tp:
            parser.error(f"MLP width {m['width']} is not divisible by --tensor-parallel-size {tp}")
    if vp > 1 and pp == 1:
        parser.error("--virtual-pipeline-size > 1 needs --pipeline-parallel-size > 1")
    moe = [m for m in mlps if m["kind"] == "moe"]
    etp = check_experts(parser, moe, n=n, tp=tp, pp=pp, ep=ep, etp=etp, notes=notes)
    return dict(num_gpus=n, tp=tp, pp=pp, vp=vp, cp=cp, ep=ep, etp=etp, dp=n // (tp * pp * cp),
                chunk_layers=chunk_layers)


def check_experts(parser, moe_mlps, *, n, tp, pp, ep, etp, notes):
    """The expert splits (experts over ep, widths over etp and tp), one parser.error; returns etp
    (tp on a model without MoE layers, with a note when another was given)."""
    for m in moe_mlps:
        if m["num_experts"] % ep:
            parser.error(f"--num-experts {m['num_experts']} is not divisible by --expert-parallelism {ep}")
        if (n // pp) % (ep * etp):
            parser.error(f"gpus per pipeline stage {n // pp} are not divisible by ep*etp = {ep}*{etp}")
        if m["width"] % etp:
            parser.error(f"expert width {m['width']} is not divisible by etp {etp}")
        if m["shared_width"] % tp:
            parser.error(f"shared-expert width {m['shared_width']} is not divisible by "
                         f"--tensor-parallel-size {tp}")
    if not moe_mlps and ep > 1:
        parser.error("--expert-parallelism > 1 needs a MoE model (--moe or --num-experts > 1)")
    if not moe_mlps and etp != tp:  # Megatron-LM reads etp for the expert layers only
        notes.append(f"--expert-tensor-parallel-size {etp} ignored: the model has no MoE layer (etp "
                     f"splits experts only); etp = tp = {tp}")
        etp = tp
    return etp


def zero_stage_of(args, parser, pp, notes):
    """The ZeRO stage: --fsdp's equivalent, else -z (default 1), checked against the pipeline."""
    zero = FSDP_TO_ZERO[args.fsdp] if args.fsdp else (1 if args.zero_stage is None else args.zero_stage)
    if args.fsdp and args.zero_stage is not None and args.zero_stage != zero:
        parser.error(f"--fsdp {args.fsdp} is ZeRO stage {zero}, but --zero-stage {args.zero_stage} was given")
    if zero == 3 and pp > 1 and not args.infer:
        parser.error("ZeRO-3 / FSDP full sharding with --pipeline-parallel-size > 1 is not supported "
                     "(DeepSpeed's pipeline engine allows ZeRO stages 0-1)")
    if zero == 2 and pp > 1 and not args.infer:
        notes.append("ZeRO-2 with pipeline parallelism is rejected by DeepSpeed's pipeline engine; "
                     "counted as if gradients were sharded")
    return zero


def batch_shape(args, parser, *, cp, dp, vp, pp):
    """(sequence length, micro-batch, micro-batches per step or None), each checked."""
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
    return s, b, m


def recompute_of(args, parser, notes):
    """The recompute mode (-ca is full; default none), its modules' and -pa's rules."""
    recompute = args.recompute or ("full" if args.checkpoint_activations else "none")
    if args.checkpoint_activations and args.recompute not in (None, "full"):
        parser.error(f"--checkpoint-activations means full recompute, but --recompute {args.recompute} was given")
    if args.recompute_modules and recompute != "selective":
        parser.error(f"--recompute-modules needs --recompute selective, not --recompute {recompute}")
    if (args.recompute_every or 1) > 1 and recompute == "none":
        notes.append(f"--recompute-every {args.recompute_every} changes nothing without --recompute")
    if args.partition_activations and recompute != "full":
        notes.append("--partition-activations splits checkpointed layer inputs; it changes "
                     "nothing without --recompute full")
    return recompute


def check_training_kind(args, parser, *, eager, zero, recompute, notes):
    """What the eager rule and layer offload count (full training; offload on Megatron-LM's
    kernels at ZeRO 0-2), one parser.error."""
    layer_offload = (args.offload_params or args.offload_activations) and not args.infer
    if layer_offload and (eager or args.finetune != "full"):
        parser.error("--offload-params / --offload-activations are counted for full training on Megatron-LM's "
                     "kernels only, as calc_training_time.py costs them (FSDP's CPUOffload moves weights, "
                     "gradients and optimizer together: not modelled)")
    if args.offload_params and zero == 3 and not args.infer:
        parser.error("--offload-params with -z 3 (ZeRO-Infinity's sharded offload) is not modelled: use -z 0-2")
    if eager and args.finetune != "full":
        parser.error("--framework pytorch counts full training; what LoRA's frozen layers save is "
                     "not derived (use the default --framework megatron)")
    if eager and recompute == "selective":
        notes.append("--framework pytorch: transformers has no selective recompute; its layers are "
                     "counted with the fused-kernel rule")


def lora_of(args, parser, *, weight_bits, wbytes):
    """LoRA / QLoRA's adapters and frozen base ({rank, targets, base_bits, adapter_bytes}), None
    for full training."""
    if args.finetune == "full":
        return None
    if args.infer:
        parser.error("--finetune applies to training, not --infer")
    targets = (list(LORA_MATRICES) if args.lora_targets == "all-linear"
               else [x.strip() for x in args.lora_targets.split(",") if x.strip()])
    bad = [x for x in targets if x not in LORA_MATRICES]
    if bad or not targets:
        parser.error(f"--lora-targets: unknown {bad or 'empty'}; use q,k,v,o,gate,up,down or "
                     "all-linear")
    bits = weight_bits or (QLORA_NF4_DQ_BITS if args.finetune == "qlora" else 8 * wbytes)
    return {"rank": args.lora_rank, "targets": targets, "base_bits": bits,
            "adapter_bytes": args.adapter_bytes_per_val or 4}


def gpu_capacity(args, parser):
    """{memory_bytes, gpu, gpu_default, memory_field}: the capacity checked against, from --gpu
    (driver-reported where hardware.py has it), --gpu-memory-gib, or the default accelerator."""
    mem = gpu = mem_field = None
    if args.gpu:
        rec = accelerator_record(args.gpu, parser, without="pass --gpu-memory-gib (e.g. 80 for an "
                                 "H100 80GB) instead")
        # driver-reported capacity (nvidia-smi total) where this hardware.py has it, else the
        # vendor's printed GB (an older hardware.py): the assumptions line says which
        mem_field = "memory_usable_bytes" if rec.get("memory_usable_bytes") else "memory_bytes"
        mem, gpu = rec[mem_field], rec["name"]
    if args.gpu_memory_gib is not None:
        if mem is not None:
            parser.error("give --gpu or --gpu-memory-gib, not both")
        mem, gpu = args.gpu_memory_gib * GIB, f"{args.gpu_memory_gib:g} GiB"
        mem_field = "--gpu-memory-gib"
    gpu_default = mem is None
    if gpu_default:  # the default accelerator: exactly the record --gpu h100-sxm reads
        rec = default_accelerator()
        mem_field = "memory_usable_bytes"
        mem, gpu = rec[mem_field], rec["name"]
    return {"memory_bytes": mem, "gpu": gpu, "gpu_default": gpu_default, "memory_field": mem_field}


def resolve(args, parser):
    """Resolve the model and configuration from the parsed flags (left as parsed): (spec,
    MemConfig, notes, the flags as the model reader saw them); every check is a one-line
    parser.error (exit 2)."""
    check_flag_values(args, parser)
    bits = bit_widths(args, parser)
    model_args = with_cookbook_heads(args)
    spec, notes = model_spec(model_args, parser)
    shape = parallel_sizes(args, parser, spec, notes)
    zero = zero_stage_of(args, parser, shape["pp"], notes)
    s, b, m = batch_shape(args, parser, **{k: shape[k] for k in ("cp", "dp", "vp", "pp")})
    recompute = recompute_of(args, parser, notes)
    eager = args.framework == "pytorch" and not args.infer
    check_training_kind(args, parser, eager=eager, zero=zero, recompute=recompute, notes=notes)
    c = config_from_flags(args, parser, spec, shape=shape, zero=zero, batch=(s, b, m),
                          recompute=recompute, eager=eager, bits=bits)
    return spec, c, notes, model_args


def config_from_flags(args, parser, spec, *, shape, zero, batch, recompute, eager, bits):
    """The one place calc_transformer_mem.py's configuration (MemConfig) is built, from the checked
    flags and the sizes resolve() found; key order is the result's "config" order."""
    s, b, m = batch
    mixed = args.is_mixed_precision
    high = args.high_prec_bytes_per_val or 4
    low = args.low_prec_bytes_per_val or 2
    wbytes = low if mixed else high
    # eager mixed precision without sharded weights or gradients: fp32 weights are the master copy
    autocast = eager and mixed and zero <= 1
    lora = lora_of(args, parser, weight_bits=bits["weight_bits"], wbytes=wbytes)
    weight_bits = bits["weight_bits"] or 8 * wbytes
    expert_bits, fmt = weight_bits, spec.get("checkpoint_format")
    served_as_stored = args.infer and bits["weight_bits"] is None
    if served_as_stored and fmt:  # serve the checkpoint as it is stored
        weight_bits, expert_bits = fmt["linear_bits"], fmt["expert_bits"]
    attns = [x for g in layer_groups(spec) for x in g[0]["attention"]]
    sliding = [i for i, layer in enumerate(spec["layers"])
               if any(x["span"] == "sliding" for x in layer["attention"])]
    windows = {x["window"] for x in attns if x["span"] == "sliding"}
    cap = gpu_capacity(args, parser)
    overhead = ((args.misc_mem_gib or 0) + args.framework_mem_gib) * GIB
    sh = shape
    c = MemConfig(
        **{k: sh[k] for k in ("tp", "pp", "vp", "cp", "ep", "etp", "dp", "num_gpus",
                              "chunk_layers")},
        **{k: getattr(args, k) for k in PIPELINE_SPLIT_KEYS}, zero_stage=zero,
        **zero_shards(**{k: sh[k] for k in ("dp", "cp", "tp", "pp", "etp", "ep")}),
        zbs=5e8 if args.zero_allgather_bucket_size is None else args.zero_allgather_bucket_size,
        zmlp=args.zero3_max_live_params or 1e9,
        sequence_length=s, batch_size=b, num_microbatches=m, recompute=recompute,
        recompute_modules=(tuple(dict.fromkeys(args.recompute_modules))
                           if args.recompute_modules else None),
        recompute_every=args.recompute_every or 1,
        sequence_parallel=args.sequence_parallel and sh["tp"] > 1,
        partition_activations=args.partition_activations, flash_attention=args.flash_attention,
        dropout=args.dropout, mixed_precision=mixed, high_bytes=high,
        weight_bytes=high if autocast else wbytes, act_bytes=wbytes,
        grad_bytes=args.bytes_per_grad_ele or 4, optimizer=args.optimizer,
        opt_bytes=optimizer_bytes_per_param(
            optimizer=args.optimizer, mixed_precision=mixed and not autocast, master_bytes=high),
        activation_rule="eager" if eager else "fused", autocast=autocast, framework=args.framework,
        lora=lora, weight_bits=weight_bits, expert_weight_bits=expert_bits,
        checkpoint_format=fmt if served_as_stored else None,
        kv_bytes=bits["kv_bytes"] or low, state_bytes=bits["state_bytes"] or 4,
        output_tokens=1 if args.output_tokens is None else args.output_tokens,
        sliding_window=max(windows) if windows else None, sliding_layers=sliding,
        prefill_chunk=args.prefill_chunk, mla_cache=args.mla_cache, overhead_bytes=overhead, **cap,
        offload=args.offload and not args.infer,
        offload_params=args.offload_params and not args.infer,
        offload_activations=args.offload_activations and not args.infer)
    if c["offload"]:  # the optimizer step runs on the host: its states leave the GPU
        c["host_opt_bytes"], c["opt_bytes"] = c["opt_bytes"], 0
    c["infer"] = args.infer
    return c


def cache_rules_text(spec):
    """One clause per cache rule that applies to this model's layers, for the assumptions line."""
    L, n = spec["num_layers"], {}
    for layer in spec["layers"]:
        for x in layer["attention"]:
            key = "shared" if x["kv_shared"] else x["span"]
            n[key] = n.get(key, 0) + 1
    windows = sorted({x["window"] for g in layer_groups(spec) for x in g[0]["attention"]
                      if x["span"] == "sliding" and not x["kv_shared"]})
    parts = []
    if n.get("full"):
        parts.append(f"{n['full']} of {L} full-attention layers keep every token")
    if n.get("sliding"):
        parts.append(f"{n['sliding']} sliding-window layers keep min(context, window "
                     + "/".join(map(str, windows)) + ")")
    if n.get("chunked"):
        parts.append(f"{n['chunked']} chunked-attention layers keep every token (as transformers' "
                     "cache does)")
    if n.get("shared"):
        parts.append(f"{n['shared']} layers reuse another layer's cache and hold none")
    comp = [x for g in layer_groups(spec) for x in g[0]["attention"] if x["kind"] == "dsv4" and x["compress"]]
    if comp:
        parts.append("DeepSeek-V4 compressed layers also keep one compressed entry per compress_rate tokens "
                     "(head_dim, + the indexer's key on compressed sparse layers) and the projections of the "
                     "window still open, as transformers' DeepseekV4 caches do; a plain sliding layer keeps K "
                     "and V apart (transformers' sliding layer), a compressed one its K = V once")
    if n.get("state"):
        parts.append(f"{n['state']} linear-attention layers hold no KV but a constant state per sequence "
                     "(conv window of K positions at the activation width, recurrent state at "
                     "--state-bytes-per-val, fp32 by default, as transformers' cache keeps them)")
    if any_attn(spec, lambda x: x["index_topk"]):
        parts.append("the lightning indexer caches one key per token per layer at the KV width "
                     "(DeepSeek's reference code: fp8 plus an fp32 scale per 128)")
    return "; ".join(parts)


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
        fmt = c.get("checkpoint_format")
        wtxt = (f"weights as the checkpoint stores them ({fmt['method']}, scales included): routed experts "
                f"at {fmt['expert_bits']:.4g} bits, other layer matrices at {fmt['linear_bits']:.4g}"
                if fmt else f"weights: layer matrices at {c['weight_bits']:g} bits")
        out.append(f"{wtxt}, embeddings/head/norms at "
                   f"{8 * c['weight_bytes']} bits (--weight-bits overrides); KV cache at {c['kv_bytes']:g} B/element"
                   + ("; MLA cache = " + c["mla_cache"]
                      if any_attn(spec, lambda x: x["kind"] == "mla") else ""))
        if fmt and fmt.get("kv_cache_format"):
            out.append(f"the checkpoint's KV cache format is {fmt['kv_cache_format']} (kv_cache_quant_algo), "
                       f"counted here at {c['kv_bytes']:g} B/element"
                       + ("" if c["kv_bytes"] == 1 else ": TensorRT-LLM follows it by default, pass "
                          "--kv-cache-bytes-per-val 1 for that"))
        out.append("KV cache per layer: " + cache_rules_text(spec))
        out.append("activations: one prefill forward's working set (flash attention "
                   + ("on" if c["flash_attention"] else "off") + ")")
        return out
    opt_b = c["host_opt_bytes"] if c.get("offload") else c["opt_bytes"]
    opt = (f"{c['optimizer']}: {opt_b} B/param incl. fp32 master"
           if c["mixed_precision"] and not c["autocast"]
           else f"{c['optimizer']}: {opt_b} B/param, no master copy")
    if c.get("offload"):
        opt += (f", on the host with {OFFLOAD_GRAD_BYTES} B of 16-bit gradients (--offload, ZeRO-Offload: "
                "none of it on the GPU)")
    if c["autocast"]:
        out.append(f"mixed precision by torch.autocast: fp32 weights {c['weight_bytes']} B (the master "
                   f"copy itself) and a {c['act_bytes']} B copy of each linear weight while its forward "
                   f"is saved, grads {c['grad_bytes']} B, {opt}")
    elif not c["lora"]:
        out.append(f"mixed precision {'on' if c['mixed_precision'] else 'off'}: weights "
                   f"{c['weight_bytes']} B, grads {c['grad_bytes']} B, {opt}")
    if c["activation_rule"] == "eager":
        out.append("activations (--framework pytorch): what autograd saves in transformers' eager "
                   "modules (RMSNorm fp32 upcasts, a cast input per linear under autocast, SDPA's "
                   "q/k/v/output/log-sum-exp, the MLP's four tensors, the loss's fp32 log-softmax: 12 B "
                   "per logit at the backward's start); gradients zeroed with set_to_none, so the peak is "
                   "the backward's start or its end; no allocator fragmentation")
    out.append(f"activations ({'settings' if c['activation_rule'] == 'eager' else 'Korthikanti 2022'}): "
               f"{recompute_text(c, brief=True)}, sequence parallel "
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


def mode_text(args, c):
    """The report's first line after the title: the regime and what -ca and -b mean here."""
    b = c["batch_size"]
    if c["infer"]:
        return (f"Mode: inference (--infer): a batch of -b {b} sequences, context "
                f"{c['sequence_length'] + c['output_tokens']:,} tokens (-s {c['sequence_length']} prompt + "
                f"-o {c['output_tokens']} generated); weights, KV cache and one forward's activations")
    how = ("-ca given" if args.checkpoint_activations else
           f"--recompute {args.recompute}" if args.recompute else "the default")
    return (f"Mode: training: activation recompute {c['recompute']} ({how}; in this script -ca / "
            f"--checkpoint-activations turns full recompute ON, the cookbook's meaning); -b {b} is "
            "the micro-batch per GPU")


def training_memory_offloaded(spec, c, b):
    """training_memory with --offload-params / --offload-activations applied to every stage
    (train/memory.offloaded_stages): (heaviest stage, stages), as calc_training_time.py counts them."""
    worst, stages = training_memory(spec, c, b)
    if not (c.get("offload_params") or c.get("offload_activations")):
        return worst, stages
    stages = offloaded_stages(spec, c, stages)
    return max(stages, key=lambda x: x["total_bytes"]), stages


def search_command(parser, args, c, b, n):
    """The calc_training_time.py command that searches every layout of n GPUs for this model."""
    words = [f"-s {c['sequence_length']} --num-gpus {n} --global-batch-size {args.global_batch_size or n * b}"]
    last = [f"--gpu-memory-gib {_num(args.gpu_memory_gib)}"] if args.gpu_memory_gib is not None else []
    return script_command("calc_training_time.py", parser, args, words=words, last=last + ["--search"])


def main(argv=None):
    parser = build_parser()
    args = parse_tool_args(parser, argv)
    with calc_errors(parser):  # a CalcError from below the tools: one line, exit 2
        return memory_answer(args, parser)


def memory_answer(args, parser):
    """Memory per GPU for the parsed flags (training or --infer), its fit and ways out: resolve,
    compute, print; returns the result dict."""
    spec, c, notes, model_args = resolve(args, parser)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print_warnings(spec["warnings"], as_json=args.json)
    pb = param_breakdown(spec)
    b, s, o = c["batch_size"], c["sequence_length"], c["output_tokens"]
    fit = None
    if args.infer:
        ctx = s + o
        worst, stages = inference_memory(spec, c, b, ctx)
        kinds = kv_cache_by_kind(spec, c, worst["stage"], batch=b, context=ctx)
        res_extra = {"kv_cache_bytes_per_token_per_layer": max(k["kv_bytes_per_token"] for k in kinds),
                     "kv_cache_bytes_per_token": sum(k["layers"] * k["kv_bytes_per_token"] for k in kinds),
                     "indexer_cache_bytes_per_token": sum(k["layers"] * k["indexer_bytes_per_token"]
                                                          for k in kinds),
                     "kv_cache_layer_kinds": kinds, "context_tokens": ctx}
        alt_layers = all_attention_layers(spec)
        if alt_layers is not None:  # the same weights and activations; only the cache differs
            _, alt_stages = inference_memory(dict(spec, layers=alt_layers), c, b, ctx)
            alt = alt_stages[worst["stage"]]
            alt_kv = alt["kv_cache_bytes"] + alt["indexer_cache_bytes"]
            cache_now = worst["kv_cache_bytes"] + worst["indexer_cache_bytes"] + worst["state_cache_bytes"]
            res_extra["all_attention"] = {
                "attention": attention_kind(next(x for layer in alt_layers for x in layer["attention"]
                                                 if x["span"] == "full")),
                "linear_layers": sum(any(x["span"] == "state" for x in layer["attention"]) for layer in spec["layers"]),
                "stage": worst["stage"], "kv_cache_bytes": alt_kv,
                "total_bytes": worst["total_bytes"] - cache_now + alt_kv, "saving_bytes": alt_kv - cache_now}
        if c["memory_bytes"] is not None:
            lim = c["memory_bytes"]
            fit = {"max_batch_size": largest_that_fits(lambda x: inference_memory(spec, c, x, ctx)[0]["total_bytes"], lim),
                   "max_context_tokens": largest_that_fits(lambda x: inference_memory(spec, c, b, x)[0]["total_bytes"], lim)}
            trained = spec.get("trained_context")
            if trained and fit["max_context_tokens"] > trained:  # memory holds more than the model reads
                fit["max_context_tokens_memory"] = fit["max_context_tokens"]
                fit["max_context_tokens"] = trained
                fit["context_limited_by"] = "the model's trained context"
        if spec.get("trained_context") and ctx > spec["trained_context"]:
            spec["warnings"].append(f"context {ctx:,} tokens is past the model's trained context "
                                    f"({spec['trained_context']:,}: max_position_embeddings or its rope scaling)")
    else:
        worst, stages = training_memory_offloaded(spec, c, b)
        res_extra = {"kv_cache_bytes": 0, "indexer_cache_bytes": 0, "state_cache_bytes": 0,
                     "offload": offload_host_memory(spec, c, b) if c["offload"] else None}
        if c["memory_bytes"] is not None:
            fit = {"max_micro_batch_size": largest_that_fits(
                lambda x: training_memory_offloaded(spec, c, x)[0]["total_bytes"], c["memory_bytes"], 1 << 16)}
            if worst["total_bytes"] > c["memory_bytes"]:
                ways = training_ways_out(spec, c, b)
                if c["offload_params"] or c["offload_activations"]:  # its rows are costed without them (and
                    ways["without_layer_offload"] = True  # -z 3 with --offload-params is refused): say so
                ways["search_command"] = search_command(parser, model_args, c, b,
                                                        ways["fewest_gpus"] or c["num_gpus"])
                fit["ways_out"] = ways
    res = {"mode": "inference" if args.infer else "training", "mode_text": mode_text(args, c),
           "warnings": spec["warnings"], "model": spec_summary(spec),
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
        cap = 1 << 24 if args.infer else 1 << 16  # where largest_that_fits stops searching
        fit = {"gpu": c["gpu"], "gpu_default": c["gpu_default"], "memory_bytes": lim, "fits": res["total_bytes"] <= lim,
               "headroom_bytes": lim - res["total_bytes"], **fit,
               "capped": sorted(k for k, v in fit.items() if v == cap)}  # true value is at least cap
    res["fit"] = fit
    res["assumptions"] = assumptions(c, spec)
    if c["activation_rule"] == "eager" and not args.infer:
        held = res["stage_layers"] - res["eager_rule_layers"]
        res["assumptions"].append(
            f"peak at the {res['peak_phase']}"
            + (f"; {held} of {res['stage_layers']} layers are kinds the eager rule was not derived for "
               "(sliding/chunked/sparse attention, MLA, linear mixers, MoE routers other than "
               "Mixtral's and Qwen's, LayerNorm, selective recompute): counted with the fused-kernel rule" if held else "")
            + ("; routed experts run transformers' grouped_mm, which autocast does not cast: fp32 weights, "
               "fp32 matmuls and fp32 saved tensors, and no 16-bit weight copies"
               if c.get("autocast") and spec.get("moe") and res["eager_rule_layers"] else ""))
    print_result(res, as_json=args.json, report=format_report,
                 brief=(lambda r: f"{r['total_bytes'] / GIB:.2f} GiB per GPU") if args.brief else None)
    return res


if __name__ == "__main__":
    run_tool(main)
