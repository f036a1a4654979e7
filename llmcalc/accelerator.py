"""The accelerator record, the one lookup of a GPU, and the default accelerator of every script.

Owns the record format of hardware.py's table (row: datasheet units in, SI units out; every fact
the models read is an argument of its row, with its source), the one resolver every tool turns a
--gpu name (or none) into a record with (resolve_accelerator), and the one default accelerator, the
NVIDIA H100 SXM5 80GB: the row hardware.py lists as h100-sxm, written here once, so that every
script, with or without hardware.py beside it, runs on exactly the numbers `--gpu h100-sxm` gives.
Sources: per row (vendor datasheets; measured matmul rates from S. Bekman's ml-engineering MAMF
table).
"""

from .errors import CalcError
from .records import Record

DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")


class Accelerator(Record):
    """One accelerator: every fact the models read, in SI units, each with its source (source,
    notes, the *_source fields, and the comment of its hardware.py row). Built once per row by
    accelerator_row; hardware.py's table and the default accelerator below are lists of these.
    A field that may be None is in STAND_INS, which says what every tool does without it."""

    FIELDS = {
        "name": "the table's key (h100-sxm)", "full_name": "vendor's product name",
        "vendor": "NVIDIA, AMD, Google, Intel, AWS", "aliases": "other names --gpu accepts",
        "memory_bytes": "capacity as the vendor prints it (decimal GB -> bytes)",
        "memory_usable_bytes": "what the driver reports to programs (bytes): the 'will it fit' "
                               "figure",
        "memory_usable_source": "where memory_usable_bytes was read, or 'derived, not measured'",
        "memory_bandwidth_bytes_per_s": "peak HBM bandwidth",
        "peak_flops_per_s": "dense peak per dtype (fp64 ... fp4); int8 in ops/s; only supported "
                            "dtypes",
        "scale_up_link": "NVLink / xGMI / ICI / ... in words; None: no scale-up fabric",
        "scale_up_topology": "switch, mesh, torus, pair or hybrid-cube-mesh; None: no fabric",
        "scale_up_bandwidth_bytes_per_s": "scale-up link per device, one direction; None: none",
        "scale_up_domain_size": "devices one scale-up fabric joins (8 on HGX, 72 on NVL72)",
        "scale_up_in_network_reduction": "whether the fabric reduces in the switch (NVLink SHARP)",
        "scale_out_bandwidth_bytes_per_s": "NIC bandwidth per device, one direction; None: not "
                                           "listed",
        "pcie_peer_bandwidth_bytes_per_s": "PCIe peer-to-peer per direction on cards without a "
                                           "scale-up link; None: a scale-up link, or no P2P",
        "host_link": "the link to host memory in words (PCIe 5.0 x16, NVLink-C2C); None: not "
                     "listed",
        "host_link_bandwidth_bytes_per_s": "host link line rate per direction; None: not listed",
        "tdp_w": "board power limit (W)",
        "achievable_matmul_flops_per_s": "measured best-shape matmul rate (MAMF) per dtype; None",
        "achievable_memory_bandwidth_bytes_per_s": "measured streaming bandwidth; None",
        "achievable_source": "where the achievable figures were measured",
        "sms": "streaming multiprocessors (AMD: compute units), for wave quantization; None where "
               "the device has no such unit (TPU, Gaudi, Trainium)",
        "kernel_family": "whose measured kernel rates apply: hopper, blackwell, ampere; None: none",
        "flash_attention_fraction": "FlashAttention-2's forward, backward rate / 16-bit peak",
        "sustained_matmul_fraction": "a training loop's sustained matmul rate / MAMF, {bf16, fp8, "
                                     "source, stacks: {stack: {dtype, source}} where a stack's "
                                     "loop differs}; None: not measured (taken as 1)",
        "kv_stream_efficiency": "share of peak bandwidth a decode attention kernel streams the KV "
                                "cache at; None: the serving memory efficiency",
        "source": "datasheets and pages the row was typed from", "notes": "caveats, in words",
    }
    REQUIRED = tuple(FIELDS)
    # The fields a row may leave None, and what stands in for each, the same in every tool. Every
    # other field is set on every row (tests/test_gpu_record.py).
    STAND_INS = {
        "scale_up_link": "no scale-up fabric: peers over PCIe where the card has peer-to-peer, "
                         "else the tool asks for --intra-node-bw-GBps",
        "scale_up_topology": "no scale-up fabric (as scale_up_link)",
        "scale_up_bandwidth_bytes_per_s": "no scale-up fabric (as scale_up_link)",
        "scale_out_bandwidth_bytes_per_s": "not read while a job fits in one scale-up domain; past "
                                           "it, every tool asks for it (--inter-node-bw-GBps)",
        "pcie_peer_bandwidth_bytes_per_s": "not read: the card has a scale-up link, or no "
                                           "peer-to-peer (GeForce)",
        "host_link": "not listed (TPU, Gaudi, Trainium hosts)",
        "host_link_bandwidth_bytes_per_s": "training's offload copies take PCIe 4.0 x16 (said in "
                                           "a note); serving's KV tier asks for "
                                           "--host-kv-bandwidth-gbps",
        "tdp_w": "not read by the models (TPU, Trainium: not published)",
        "achievable_matmul_flops_per_s": "training's matmul ceiling takes 0.80 of the peak (the "
                                         "H100 SXM's MAMF / peak); said in the report's "
                                         "assumptions",
        "achievable_memory_bandwidth_bytes_per_s": "the peak x the memory-bound fraction",
        "achievable_source": "no achievable figure (as achievable_matmul_flops_per_s)",
        "sms": "no wave-quantization or split-K term; said in the report's assumptions",
        "kernel_family": "FlashAttention-2's A100 fraction (FLASH_ATTENTION_FALLBACK); training "
                         "says so in a note",
        "sustained_matmul_fraction": "1: the matmul ceiling is the MAMF itself",
        "kv_stream_efficiency": "the serving memory efficiency",
    }


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
MAMF_SOURCE = ("S. Bekman, ml-engineering, compute/accelerator/README.md, 'Maximum Achievable "
               "Matmul FLOPS comparison table' https://github.com/stas00/ml-engineering/blob/"
               "master/compute/accelerator/README.md")
NV_H100_SOURCE = ("NVIDIA H100 datasheet https://resources.nvidia.com/en-us-tensor-core/"
                  "nvidia-tensor-core-gpu-datasheet ; "
                  "https://www.nvidia.com/en-us/data-center/h100/")
# usable memory: nvidia-smi memory.total readings of several GPUs in one place
MODAL_2797 = ("nvidia-smi totals listed in https://github.com/modal-labs/modal-client/pull/2797 "
              "(2025-01)")

# --- facts of a GPU's kernels: SMs, the family whose measured kernel rates apply, sustained matmul
# and KV streaming. Each row of hardware.py sets them (sms, kernel_family, sustained,
# kv_stream_efficiency, with the source of each in the row); the training step (train/) and
# serving (serve/) read the record's fields, never a GPU name. The constants below are shared by
# several rows.

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
# SXM and H800, the same die and power limit: "H200 is the same", MAMF); the PCIe and NVL cards
# (other power limits), GH200 (its own MAMF) and other GPUs do not (not measured).
# A stack's own loop can sustain less than the GPU's (issue 45, decision 2): Korthikanti et al.'s
# Megatron-LM on Selene (2022 kernels) lands within 2-6% of its A100 iteration times at MAMF itself,
# while MosaicML's llm-foundry (PyTorch 2.1 FSDP, eager modules, amp_bf16) runs its A100 and H100
# steps below that. No kernel measurement of llm-foundry's loop exists, so its fraction is fitted in
# the open (validation/calibration.py: the rows that set it and the rows that judge it) and kept
# per stack on each GPU row ("stacks": {stack: {dtype: fraction of MAMF, "source"}}); a stack not
# listed takes the GPU's own factor. Hopper: the fraction of MAMF (it replaces SUSTAINED_H100).
LLM_FOUNDRY_STACK_SOURCE = "fitted: llm-foundry's FSDP loop (validation/calibration.py)"
LLM_FOUNDRY_SUSTAINED_HOPPER = 0.805  # calibrated: llm_foundry_sustained_hopper
LLM_FOUNDRY_SUSTAINED_AMPERE = 0.89  # calibrated: llm_foundry_sustained_ampere
SUSTAINED_H100_BF16 = 0.9125  # calibrated: sustained_h100_bf16
SUSTAINED_H100_FP8 = 0.9209  # calibrated: sustained_h100_fp8
SUSTAINED_H100 = {"bf16": SUSTAINED_H100_BF16, "fp8": SUSTAINED_H100_FP8,
                  "source": "our H100 grid",
                  "stacks": {"llm-foundry": {"bf16": LLM_FOUNDRY_SUSTAINED_HOPPER,
                                             "source": LLM_FOUNDRY_STACK_SOURCE}}}
# The A100's own loop factor is not measured (1: MAMF itself, as Korthikanti's rows bear out).
SUSTAINED_A100 = {"bf16": None, "fp8": None, "source": "not measured (MAMF itself)",
                  "stacks": {"llm-foundry": {"bf16": LLM_FOUNDRY_SUSTAINED_AMPERE,
                                             "source": LLM_FOUNDRY_STACK_SOURCE}}}

# Blackwell: Azure's cuBLASLt FP8 GEMM run on one GB200 (Azure/AI-benchmarking-guide,
# Azure_Results/ND_GB200_v6_results.md @2a370be6: random inputs, 10,000 warm-up iterations, CUDA
# 12.8) reaches 2,834.6 / 2,876.6 / 2,906.9 / 2,825.6 TFLOP/s on the squares 4096^3 to 32768^3,
# mean 2,860.9, where MAMF gives the GB200 3,615.6: 0.791. The same method on an H200 (the
# file ND_H200_v5_results.md @7f20e5fa: 1,249.1 / 1,300.6 / 1,366.3 / 1,349.5, mean 1,316.4 over
# the Hopper fp8 MAMF 1,453.4) gives 0.906, within 2% of our own Hopper grid's 0.921, so the two
# methods agree where both exist. Taken for bf16 too (no bf16 row in the file) and for the B200
# and B300 (the same Blackwell compute at 1,000 / 1,100 W: assumptions, not measured).
SUSTAINED_BLACKWELL_RATIO = 0.7912656267286204  # calibrated: sustained_blackwell (2860.9/3615.6)
SUSTAINED_BLACKWELL = {"bf16": SUSTAINED_BLACKWELL_RATIO, "fp8": SUSTAINED_BLACKWELL_RATIO,
                       "source": "Azure GB200 cuBLASLt run"}

# A decode attention kernel streams the KV cache at 0.93 of peak bandwidth on the GH100 chip (our
# H200 graph-mode decode steps; serve/stacks.py says how it was measured): the rows of the GH100
# parts take it (H100 SXM/PCIe/NVL, H200, GH200, H800, H20).
KV_STREAM_EFFICIENCY = 0.93  # calibrated: kv_stream_efficiency

# How the scale-up domain is wired (each row's topology), which decides what one rank gets from a
# collective over part of it. "switch": NVSwitch-style, every device drives its whole scale-up
# bandwidth to any peer. "mesh": a point-to-point full mesh (AMD xGMI: 7 peers x 64 GB/s per
# direction on MI300X; Intel Gaudi: 3 RoCE ports per peer), so a group of G of the D devices
# reaches (G-1)/(D-1) of the aggregate and one peer 1/(D-1). "torus": TPU ICI / NeuronLink
# neighbours. "pair": an NVLink bridge between two PCIe cards. "hybrid-cube-mesh": DGX-1 V100.
TOPOLOGIES = ("switch", "mesh", "torus", "pair", "hybrid-cube-mesh")


def _usable_memory(usable_mib, usable_source, memory_gb, memory_bytes):
    """(usable bytes, source): the published driver reading (usable_mib, where it was read), else
    the vendor figure read as GiB.

    Derived rows assume the vendor's decimal GB is really that many GiB (HBM stacks are binary:
    H100 80GB = 5 x 16 GiB), an upper bound: real readings sit 0-2% below it.
    """
    if usable_mib is not None:
        return usable_mib * 2 ** 20, f"measured {usable_mib} MiB, {usable_source}"
    if memory_gb is None:  # the vendor already prints GiB (TPU v4, Trainium)
        gib = memory_bytes / GIB
        return int(memory_bytes), f"derived, not measured: the vendor's {gib:g} GiB"
    return int(round(memory_gb * GIB)), (f"derived, not measured: vendor {memory_gb:g} GB read "
                                         f"as {memory_gb:g} GiB")


def _gb(x):
    """GB/s (decimal) to bytes/s; None stays None."""
    return None if x is None else x * GIGA


def _check_row(name, *, scale_up_gb_per_s_unidir, topology, kernel_family, usable_mib,
               usable_source):
    """A row that contradicts itself is a programming error (TypeError when the table loads)."""
    link, wired = scale_up_gb_per_s_unidir is not None, topology is not None
    if link != wired or topology not in (None, *TOPOLOGIES):
        raise TypeError(f"{name}: a scale-up link needs its topology ({', '.join(TOPOLOGIES)}), "
                        "and only a link has one")
    if kernel_family is not None and kernel_family not in FLASH_ATTENTION_FRACTION:
        raise TypeError(f"{name}: kernel_family {kernel_family!r} has no measured rates")
    if (usable_mib is None) != (usable_source is None):
        raise TypeError(f"{name}: a usable-memory reading needs its source")


def accelerator_row(name, full_name, vendor, aliases, *, memory_gb, memory_tb_per_s, tflops,
         scale_up_link, scale_up_gb_per_s_unidir, domain, in_network_reduction,
         scale_out_gbit_per_s, tdp_w, sms, source, notes, topology=None, memory_bytes=None,
         usable_mib=None, usable_source=None, achievable_tflops=None,
         achievable_memory_tb_per_s=None, achievable_source=None, pcie_peer_gb_per_s_unidir=None,
         host_link=None, host_link_gb_per_s_unidir=None, kernel_family=None, sustained=None,
         kv_stream_efficiency=None):
    """Build one record from datasheet units (GB, TB/s, TFLOP/s, GB/s, Gb/s) into SI base units.

    Table rows are typed in the units the datasheets print so each figure can be checked against
    its source by eye; conversion to bytes, bytes/s and FLOP/s happens only here. `sms` is required
    (None only where the device has no SMs or compute units); a scale-up link needs its topology.
    """
    _check_row(name, scale_up_gb_per_s_unidir=scale_up_gb_per_s_unidir, topology=topology,
               kernel_family=kernel_family, usable_mib=usable_mib, usable_source=usable_source)
    mem = int(memory_bytes if memory_bytes is not None else round(memory_gb * GIGA))
    usable, usable_src = _usable_memory(usable_mib, usable_source, memory_gb, mem)
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
        "scale_up_topology": topology,
        "scale_up_bandwidth_bytes_per_s": _gb(scale_up_gb_per_s_unidir),
        "scale_up_domain_size": domain,
        "scale_up_in_network_reduction": in_network_reduction,
        "scale_out_bandwidth_bytes_per_s": (None if scale_out_gbit_per_s is None
                                            else scale_out_gbit_per_s * GIGA / 8),
        # cards without a scale-up link that reach their peers over PCIe (peer-to-peer DMA):
        # the slot's line rate per direction; None where there is a scale-up link or no P2P
        "pcie_peer_bandwidth_bytes_per_s": _gb(pcie_peer_gb_per_s_unidir),
        # the GPU's link to host memory (PCIe x16 or NVLink-C2C), line rate per direction; None
        # where not listed (TPU, Gaudi, Trainium hosts: not modelled)
        "host_link": host_link,
        "host_link_bandwidth_bytes_per_s": _gb(host_link_gb_per_s_unidir),
        "tdp_w": tdp_w,
        "achievable_matmul_flops_per_s": ach,
        "achievable_memory_bandwidth_bytes_per_s": (None if achievable_memory_tb_per_s is None
                                                    else achievable_memory_tb_per_s * TERA),
        "achievable_source": achievable_source,
        # streaming multiprocessors (AMD: compute units), for wave quantization
        "sms": sms,
        # whose measured kernel rates apply: "hopper", "blackwell", "ampere", or None
        "kernel_family": kernel_family,
        # FlashAttention-2's forward and backward rates as fractions of the 16-bit peak
        "flash_attention_fraction": list(FLASH_ATTENTION_FRACTION[kernel_family or
                                                                  FLASH_ATTENTION_FALLBACK]),
        # a training loop's sustained matmul rate over MAMF, {"bf16", "fp8", "source"}; None: 1
        "sustained_matmul_fraction": dict(sustained) if sustained else None,
        # share of peak bandwidth a decode attention kernel streams the KV cache at; None: the
        # serving memory efficiency
        "kv_stream_efficiency": kv_stream_efficiency,
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
    topology="switch", domain=8, in_network_reduction=True, scale_out_gbit_per_s=400, tdp_w=700,
    host_link="PCIe 5.0 x16", host_link_gb_per_s_unidir=PCIE5_X16_GB_S,  # datasheet "PCIe Gen5"
    usable_mib=81559,
    usable_source=MODAL_2797 + "; also https://github.com/NVIDIA/nccl/issues/1264 (driver "
                  "550.54.15). torch total_memory 81082-81090 MiB (public logs, torch 2.0-2.7)",
    sms=132,  # NVIDIA H100 Tensor Core GPU Architecture whitepaper: 132 SMs on the SXM5 board
    kernel_family="hopper", sustained=SUSTAINED_H100, kv_stream_efficiency=KV_STREAM_EFFICIENCY,
    source=NV_H100_SOURCE + " ; dense values: NVIDIA H100 Tensor Core GPU Architecture whitepaper",
    notes="Datasheet starred figures are sparse (BF16 1,979*, FP8 3,958*); dense halves. "
          "fp64 = tensor 67 (vector 34). NVLink 900 GB/s bidirectional. HGX H100: 8 GPUs, "
          "NVSwitch gen3 with NVLink SHARP; one 400 Gb/s ConnectX-7 per GPU (DGX H100).",
    achievable_tflops=dict(bf16=794.5, fp8=1402.6),
    achievable_source=MAMF_SOURCE + " (v2 table; torch 2.7.0+cu126; bf16 2048x2048x13312, fp8 "
                                    "e4m3 1024x9216x14336)")
DEFAULT_ACCELERATOR = H100_SXM["name"]


def default_accelerator():
    """A copy of the default accelerator's record, as hardware.get_accelerator('h100-sxm') gives
    it."""
    return Accelerator({k: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list)
                            else v) for k, v in H100_SXM.items()})


def names_default(name):
    """Whether `name` is one of the default accelerator's spellings (case, '_', ' ', '.' and '-'
    ignored, as hardware.py's lookup ignores them)."""
    squash = lambda x: "".join(c for c in str(x).lower() if c.isalnum())  # noqa: E731
    return squash(name) in {squash(n) for n in [H100_SXM["name"], *H100_SXM["aliases"]]}


# --- the one lookup ------------------------------------------------------------------------------
def accelerator_table():
    """The accelerator table: the package's own hardware module when this runs from the installed
    package, else hardware.py beside the built script (ImportError when there is none). Imported
    by name: the package's `hardware` is also an entry-point function."""
    if __package__:
        import importlib
        return importlib.import_module(__package__.partition(".")[0] + ".hardware")
    try:
        import hardware
    except ImportError:  # python -I, PYTHONSAFEPATH=1: the script's folder is not on sys.path
        return table_beside_script()
    return hardware


def table_beside_script():
    """hardware.py from the built script's own folder, by path (ImportError when it is absent)."""
    import importlib.util
    import os
    import sys
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hardware.py")
    if not os.path.isfile(path) or sys.modules.get("hardware", 0) is None:  # None: import blocked
        raise ImportError(f"no {path}")
    spec = importlib.util.spec_from_file_location("hardware", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["hardware"] = module
    spec.loader.exec_module(module)
    return module


def resolve_accelerator(name=None, *, missing_table=None):
    """The record every tool computes with: hardware.py's row for `name` (case-insensitive, aliases
    accepted), or the default accelerator for None, whose record needs no table. CalcError, one
    line: the table's message for an unknown name ('unknown accelerator ...; nearest: a, b, c'),
    and `missing_table` (what to pass instead) when no hardware.py sits beside a built script."""
    if name is None:
        return default_accelerator()
    try:
        table = accelerator_table()
    except ImportError:
        if names_default(name):  # its record is built in: a script copied alone still knows it
            return default_accelerator()
        raise CalcError(missing_table or f"--gpu {name} needs hardware.py beside this "
                        "script") from None
    try:
        return table.get_accelerator(name)
    except KeyError as exc:
        raise CalcError(str(exc.args[0]) if exc.args else f"unknown accelerator {name!r}") from None
