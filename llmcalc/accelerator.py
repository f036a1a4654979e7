"""The accelerator record, and the default accelerator of every script.

Owns the record format of hardware.py's table (row: datasheet units in, SI units out; the
driver-reported usable memory; the scale-up topology) and the one default accelerator, the NVIDIA
H100 SXM5 80GB: the row hardware.py lists as h100-sxm, written here once, so that every script, with
or without hardware.py beside it, runs on exactly the numbers `--gpu h100-sxm` gives. Sources: per
row (vendor datasheets; measured matmul rates from S. Bekman's ml-engineering MAMF table).
"""

DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")

RECORD_KEYS = (
    "name", "full_name", "vendor", "aliases",
    "memory_bytes", "memory_usable_bytes", "memory_usable_source", "memory_bandwidth_bytes_per_s", "peak_flops_per_s",
    "scale_up_link", "scale_up_topology", "scale_up_bandwidth_bytes_per_s", "scale_up_domain_size",
    "scale_up_in_network_reduction", "scale_out_bandwidth_bytes_per_s", "host_link",
    "host_link_bandwidth_bytes_per_s", "tdp_w",
    "achievable_matmul_flops_per_s", "achievable_memory_bandwidth_bytes_per_s",
    "achievable_source", "source", "notes",
)

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
    return {
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
        "source": source,
        "notes": f"{notes} Usable memory: {usable_src}.",
    }


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
    return {k: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v)
            for k, v in H100_SXM.items()}
