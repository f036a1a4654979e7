"""The accelerator record, and the default accelerator of every script.

Owns the record format of hardware.py's table (row: datasheet units in, SI units out; the
driver-reported usable memory; the scale-up topology) and the one default accelerator, the NVIDIA
H100 SXM5 80GB: the row hardware.py lists as h100-sxm, written here once, so that every script, with
or without hardware.py beside it, runs on exactly the numbers `--gpu h100-sxm` gives. Sources: per
row (vendor datasheets; measured matmul rates from S. Bekman's ml-engineering MAMF table).
"""

from .records import Record

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
