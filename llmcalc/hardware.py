#!/usr/bin/env python3
"""hardware.py -- one sourced table of AI accelerators, usable alone or imported.

What it gives, per device (one GPU / one TPU chip / one Gaudi / one Trainium chip):
  * dense (NOT 2:4-sparse) peak FLOP/s per data type: fp64 fp32 tf32 bf16 fp16 fp8 int8 fp4
    (int8 is integer ops/s); only the types the device's matrix units support;
  * memory capacity (bytes) and peak memory bandwidth (bytes/s);
  * scale-up link bandwidth per device, UNIDIRECTIONAL (NVLink, Infinity Fabric/xGMI, ICI,
    Gaudi RoCE scale-up ports, NeuronLink), the scale-up domain size, whether the fabric
    reduces in-network (NVLink SHARP / NVLS), and a typical scale-out NIC bandwidth per device
    (unidirectional, e.g. one 400 Gb/s NIC per GPU = 50e9 B/s);
  * TDP, optional measured "maximum achievable matmul FLOP/s" (MAMF) with its source;
  * a source URL/document per row and notes that say where sources disagree or where only
    secondary sources exist.

Conventions (read these before using a number):
  * Vendors quote 2:4 structured-sparsity TFLOPS with an asterisk; every figure here is dense,
    i.e. half the starred number. fp64 is the highest dense fp64 rate (tensor/matrix core where
    one exists, e.g. H100 SXM 67 TFLOP/s, vector 34); fp32 likewise (MI300X matrix fp32).
  * GeForce cards (RTX 3090/4090/5090): fp16/bf16/fp8 are the rates with FP32 accumulation
    (what PyTorch matmuls use); the fp16-accumulate rates are 2x and are given in the notes.
  * memory_bytes uses the decimal GB the vendor prints (80 GB -> 80e9). HBM "80GB" parts really
    hold 80 GiB-ish; where the vendor prints GiB (TPU v4, Trainium) we use GiB and say so.
  * memory_usable_bytes is what the driver reports to programs (nvidia-smi memory.total in MiB,
    rocm-smi VRAM total, the TPU/Gaudi/Neuron runtime's HBM size): use it for "will it fit".
    Measured where a published reading exists (memory_usable_source names it); otherwise
    derived from the vendor figure read as GiB (80 GB -> 80 GiB) and marked "derived, not
    measured". torch.cuda.get_device_properties().total_memory (cudaMemGetInfo total) is a
    further ~0.5 GiB lower on Hopper/Blackwell (H100 81082-81090 MiB vs nvidia-smi 81559).
  * Bandwidths are decimal: 1 TB/s = 1e12 B/s, 1 GB/s = 1e9 B/s, NIC Gb/s / 8 = B/s.
  * Vendors usually quote link bandwidth bidirectional (H100 NVLink "900 GB/s"); we store the
    unidirectional half (450e9) and say so in notes where the source is ambiguous.

Examples:
  python hardware.py                      # the whole table, aligned, with units
  python hardware.py h100                 # one accelerator, every field, source and notes
  python hardware.py --compare h100-sxm mi300x gaudi3 tpu-v5p
  python hardware.py b200 --json          # machine-readable record
  python -c "import hardware; print(hardware.get_accelerator('H100-SXM5-80GB')['peak_flops_per_s']['bf16'])"

References: vendor datasheets and product pages cited per row (NVIDIA, AMD, Google Cloud TPU
docs, Intel Gaudi 3 white paper / Hot Chips 2024, AWS Neuron docs); measured MAMF from
S. Bekman, "Machine Learning Engineering", compute/accelerator/README.md (MAMF tables);
TPU link figures cross-checked against Austin et al., "How to Scale Your Model" (ch. TPUs).
"""

import json

from .accelerator import (DTYPES, GIB, GIGA, H100_SXM, HOPPER_SXM_TFLOPS, KV_STREAM_EFFICIENCY,
    MAMF_SOURCE, MODAL_2797, NV_H100_SOURCE, NVLINK_C2C_GB_S, PCIE3_X16_GB_S, PCIE4_X16_GB_S,
    PCIE5_X16_GB_S, SUSTAINED_A100, SUSTAINED_BLACKWELL, SUSTAINED_H100, TERA, Accelerator,
    accelerator_row)
from .cli import OneLineErrorParser, add_output_args, brief_number, run_tool

# --- shared source strings -------------------------------------------------------------------
_NV_V100 = ("NVIDIA V100 datasheet https://images.nvidia.com/content/technologies/volta/pdf/"
            "volta-v100-datasheet-update-us-1165301-r5.pdf")
_NV_A100 = ("NVIDIA A100 datasheet https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/"
            "a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf")
_NV_A100_PB = "NVIDIA A100 PCIe product brief PB-10137-001 (NVLink bridge table)"
_NV_H200 = "NVIDIA H200 product page https://www.nvidia.com/en-us/data-center/h200/"
_NV_HGX = "NVIDIA HGX platform specs https://www.nvidia.com/en-us/data-center/hgx/"
_NV_GB200 = "NVIDIA GB200 NVL72 specs https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
_NV_GH200 = ("NVIDIA GH200 Grace Hopper Superchip https://www.nvidia.com/en-us/data-center/"
             "grace-hopper-superchip/")
_AMD = "https://www.amd.com/en/products/accelerators/instinct/"
_STAS_NET = ("S. Bekman, ml-engineering, network/README.md intra-node unidirectional bandwidth "
             "tables https://github.com/stas00/ml-engineering/blob/master/network/README.md")
_GOOGLE = "https://cloud.google.com/tpu/docs/"
_SCALING_BOOK = "Austin et al., How to Scale Your Model, 'How to think about TPUs' https://jax-ml.github.io/scaling-book/tpus/"
_NEURON = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/arch/neuron-hardware/"

# PCIe peer-to-peer: PCIe 4.0 x16, one direction, 31.5 GB/s (accelerator.PCIE4_X16_GB_S derives it).
# The data-center cards below list "PCIe Gen4 x16" on their datasheets and support peer-to-peer over
# it; GeForce drivers leave P2P off.


# --- the table ---------------------------------------------------------------------------------
# tflops: dense TFLOP/s (int8: TOPS). scale_up_gb_per_s_unidir: GB/s per device per direction.
# scale_out_gbit_per_s: NIC line rate per device, Gb/s, one direction. Every fact the models read
# is an argument of its row, with its source beside it or in the row's source/notes: the usable
# memory (usable_mib), SMs, the scale-up topology, the kernel family, the sustained-loop factor,
# KV streaming and the host link.
# The host link, one field for every use (training's ZeRO-Offload copies, the serving KV tier),
# line rate per direction. Datasheets: V100 "PCIe Gen3"; A100 SXM/PCIe "PCIe Gen4: 64 GB/s" (both
# directions), A10, A10G, L4, L40S "PCIe Gen4 x16"; H100 SXM/PCIe/NVL, H800, H20, H200 "PCIe
# Gen5: 128 GB/s" (both directions); HGX B200 and B300 boards put each GPU on PCIe Gen5 x16 to the
# host (B300's own Gen6 port meets Gen5 hosts: 5.0 taken); GeForce RTX 3090/4090 PCIe 4.0 x16, RTX
# 5090 PCIe 5.0 x16; AMD MI250X "PCIe Gen4", MI300X, MI325X, MI355X "PCIe Gen5 x16"; GH200 and
# GB200 reach their Grace CPU's LPDDR5X over NVLink-C2C (900 GB/s bidirectional). TPU, Gaudi and
# Trainium hosts: not listed (None).
# SMs of the B200, GB200 and B300 as the devices report them (cudaDeviceProp.multiProcessorCount;
# the "Blackwell SM readings" below): FlashInfer's NVFP4 sparse-MLA decode notes (flashinfer-ai/
# flashinfer#5716) list "B200 (148 SMs)", "GB200 (152 SMs)" and "B300 (148 SMs)".
_B200_TFLOPS = dict(fp64=37, fp32=75, tf32=1125, bf16=2250, fp16=2250, fp8=4500, int8=4500,
                    fp4=9000)
_MI300_TFLOPS = dict(fp64=163.4, fp32=163.4, tf32=653.7, bf16=1307.4, fp16=1307.4, fp8=2614.9,
                     int8=2614.9)

_ROWS = [
    # ---------------- NVIDIA Volta / Ampere ----------------
    accelerator_row("v100-16gb", "NVIDIA Tesla V100 SXM2 16GB", "NVIDIA",
         ["v100", "v100-sxm2-16gb", "tesla-v100", "v100-16g"],
         memory_gb=16, memory_tb_per_s=0.9, tflops=dict(fp64=7.8, fp32=15.7, fp16=125),
         scale_up_link="NVLink 2 (6 links x 25 GB/s/dir)", scale_up_gb_per_s_unidir=150,
         domain=8, in_network_reduction=False, scale_out_gbit_per_s=50, tdp_w=300,
         topology="hybrid-cube-mesh",
         # host link: datasheet "PCIe Gen3"
         host_link="PCIe 3.0 x16", host_link_gb_per_s_unidir=PCIE3_X16_GB_S,
         sms=80,  # NVIDIA Tesla V100 GPU Architecture whitepaper: 80 SMs
         source=_NV_V100,
         notes="16 GB HBM2 (peers that print 32 GB for the 16GB card are wrong). fp16 is the "
               "tensor-core rate; no bf16/tf32/fp8. NVLink 300 GB/s is bidirectional total. "
               "Domain 8 = DGX-1 hybrid cube-mesh (not all-to-all; NVSwitch arrived with DGX-2, "
               "16 GPUs). Scale-out: DGX-1 had 4x100 Gb/s EDR IB per 8 GPUs (50 Gb/s/GPU)."),
    accelerator_row("v100-32gb", "NVIDIA Tesla V100 SXM2 32GB", "NVIDIA",
         ["v100-sxm2-32gb", "v100-32g"],
         memory_gb=32, memory_tb_per_s=0.9, tflops=dict(fp64=7.8, fp32=15.7, fp16=125),
         scale_up_link="NVLink 2 (6 links x 25 GB/s/dir)", scale_up_gb_per_s_unidir=150,
         domain=8, in_network_reduction=False, scale_out_gbit_per_s=50, tdp_w=300,
         topology="hybrid-cube-mesh",
         host_link="PCIe 3.0 x16", host_link_gb_per_s_unidir=PCIE3_X16_GB_S,
         sms=80,  # NVIDIA Tesla V100 GPU Architecture whitepaper: 80 SMs
         source=_NV_V100,
         notes="Same compute and 900 GB/s as the 16GB part; 32 GB HBM2. See v100-16gb notes."),
    accelerator_row("a100-40gb", "NVIDIA A100 SXM4 40GB", "NVIDIA",
         ["a100-40gb-sxm", "a100-sxm4-40gb", "a100-40g", "a100-sxm-40gb"],
         memory_gb=40, memory_tb_per_s=1.555,
         tflops=dict(fp64=19.5, fp32=19.5, tf32=156, bf16=312, fp16=312, int8=624),
         scale_up_link="NVLink 3 (12 links) via NVSwitch gen2", scale_up_gb_per_s_unidir=300,
         domain=8, in_network_reduction=False, scale_out_gbit_per_s=200, tdp_w=400,
         topology="switch",
         # host link: datasheet "PCIe Gen4: 64 GB/s"
         host_link="PCIe 4.0 x16", host_link_gb_per_s_unidir=PCIE4_X16_GB_S,
         usable_mib=40960,
         usable_source=MODAL_2797 + "; also https://github.com/bottlerocket-os/bottlerocket-"
                       "core-kit/pull/834 (driver 580.126.09). Older drivers showed 40536 MiB "
                       "(https://github.com/nanopool/phoenix-miner/issues/17, driver 470)",
         sms=108,  # NVIDIA A100 Tensor Core GPU Architecture whitepaper: 108 SMs
         kernel_family="ampere", sustained=SUSTAINED_A100,
         source=_NV_A100 + " ; DGX A100: 8x 200 Gb/s HDR per 8 GPUs",
         notes="Datasheet 600 GB/s NVLink is bidirectional. fp32 is non-tensor (no fp32 tensor "
               "mode; tf32 is separate). No fp8. HGX A100 NVSwitch gen2 has no SHARP.",
         achievable_tflops=dict(bf16=271.2), achievable_source=MAMF_SOURCE + " (A100 SXM, memory "
         "size not stated; torch 2.6.0+cu126, 1024x10240x5120)"),
    accelerator_row("a100-80gb", "NVIDIA A100 SXM4 80GB", "NVIDIA",
         ["a100", "a100-sxm", "a100-80gb-sxm", "a100-sxm4-80gb", "a100-80g", "a100-sxm-80gb"],
         memory_gb=80, memory_tb_per_s=2.039,
         tflops=dict(fp64=19.5, fp32=19.5, tf32=156, bf16=312, fp16=312, int8=624),
         scale_up_link="NVLink 3 (12 links) via NVSwitch gen2", scale_up_gb_per_s_unidir=300,
         domain=8, in_network_reduction=False, scale_out_gbit_per_s=200, tdp_w=400,
         topology="switch",
         host_link="PCIe 4.0 x16", host_link_gb_per_s_unidir=PCIE4_X16_GB_S,
         usable_mib=81920, usable_source=MODAL_2797,
         sms=108,  # NVIDIA A100 Tensor Core GPU Architecture whitepaper: 108 SMs
         kernel_family="ampere", sustained=SUSTAINED_A100,
         source=_NV_A100 + " ; DGX A100: 8x 200 Gb/s HDR per 8 GPUs",
         notes="80 GB HBM2e at 2,039 GB/s. Same compute as the 40GB part. 'a100' resolves here.",
         achievable_tflops=dict(bf16=271.2), achievable_source=MAMF_SOURCE + " (A100 SXM, memory "
         "size not stated; torch 2.6.0+cu126, 1024x10240x5120)"),
    accelerator_row("a100-40gb-pcie", "NVIDIA A100 PCIe 40GB", "NVIDIA",
         ["a100-pcie-40gb", "a100-40g-pcie"],
         memory_gb=40, memory_tb_per_s=1.555,
         tflops=dict(fp64=19.5, fp32=19.5, tf32=156, bf16=312, fp16=312, int8=624),
         scale_up_link="NVLink 3 bridge (pairs)", scale_up_gb_per_s_unidir=300, domain=2,
         in_network_reduction=False, scale_out_gbit_per_s=None, tdp_w=250,
         topology="pair",
         host_link="PCIe 4.0 x16", host_link_gb_per_s_unidir=PCIE4_X16_GB_S,
         sms=108,  # NVIDIA A100 Tensor Core GPU Architecture whitepaper: 108 SMs
         kernel_family="ampere",
         source=_NV_A100 + " ; " + _NV_A100_PB,
         notes="Datasheet gives the same peak TFLOPS as SXM, at 250 W sustained clocks may be "
               "lower. NVLink bridge joins 2 cards (600 GB/s bidirectional). No reference "
               "scale-out design for PCIe servers: scale-out left None, pass it explicitly.",
         achievable_tflops=dict(bf16=252.9), achievable_source=MAMF_SOURCE + " (A100 PCIe, torch "
         "2.5.1+cu124, 2048x5120x6144)"),
    accelerator_row("a100-80gb-pcie", "NVIDIA A100 PCIe 80GB", "NVIDIA",
         ["a100-pcie", "a100-pcie-80gb", "a100-80g-pcie"],
         memory_gb=80, memory_tb_per_s=1.935,
         tflops=dict(fp64=19.5, fp32=19.5, tf32=156, bf16=312, fp16=312, int8=624),
         scale_up_link="NVLink 3 bridge (pairs)", scale_up_gb_per_s_unidir=300, domain=2,
         in_network_reduction=False, scale_out_gbit_per_s=None, tdp_w=300,
         topology="pair",
         host_link="PCIe 4.0 x16", host_link_gb_per_s_unidir=PCIE4_X16_GB_S,
         sms=108,  # NVIDIA A100 Tensor Core GPU Architecture whitepaper: 108 SMs
         kernel_family="ampere",
         source=_NV_A100,
         notes="1,935 GB/s HBM2e, 300 W. See a100-40gb-pcie notes.",
         achievable_tflops=dict(bf16=252.9), achievable_source=MAMF_SOURCE + " (A100 PCIe, memory "
         "size not stated)"),
    accelerator_row("a10", "NVIDIA A10 24GB", "NVIDIA", ["nvidia-a10"],
         memory_gb=24, memory_tb_per_s=0.6,
         tflops=dict(fp32=31.2, tf32=62.5, bf16=125, fp16=125, int8=250),
         scale_up_link=None, scale_up_gb_per_s_unidir=None, domain=1,
         in_network_reduction=False, pcie_peer_gb_per_s_unidir=PCIE4_X16_GB_S,
         scale_out_gbit_per_s=None, tdp_w=150,
         # host link: datasheet "PCIe Gen4 x16"
         host_link="PCIe 4.0 x16", host_link_gb_per_s_unidir=PCIE4_X16_GB_S,
         usable_mib=23028,
         usable_source=MODAL_2797 + "; NVML total 24146608128 B in https://github.com/mayooot/"
                       "detect-gpu/issues/3",
         # datasheet FP32 31.2 TFLOP/s = 72 SMs x 128 FP32 lanes x 2 x 1.695 GHz (GA102 SM)
         sms=72,
         source="NVIDIA A10 datasheet https://www.nvidia.com/content/dam/en-zz/Solutions/"
                "Data-Center/a10/pdf/datasheet-new/nvidia-a10-datasheet.pdf",
         notes="GDDR6, PCIe only, no NVLink. Datasheet TF32/BF16/INT8 starred figures are "
               "sparse; halved here."),
    accelerator_row("a10g", "NVIDIA A10G 24GB (AWS G5)", "NVIDIA", ["a10g-24gb", "aws-a10g"],
         memory_gb=24, memory_tb_per_s=0.6,
         tflops=dict(fp32=35.0, tf32=35.0, bf16=70.0, fp16=70.0, int8=140.0),
         scale_up_link=None, scale_up_gb_per_s_unidir=None, domain=1,
         in_network_reduction=False, pcie_peer_gb_per_s_unidir=PCIE4_X16_GB_S,
         scale_out_gbit_per_s=12.5, tdp_w=300,
         host_link="PCIe 4.0 x16", host_link_gb_per_s_unidir=PCIE4_X16_GB_S,
         usable_mib=23028,
         usable_source="nvidia-smi in https://github.com/NVIDIA/DCGM/issues/232 (driver "
                       "535.247.01)",
         sms=80,  # SECONDARY (Baseten, source): 35.0 TFLOP/s = 80 x 128 x 2 x 1.71 GHz
         source="SECONDARY: Baseten, 'NVIDIA A10 vs A10G for ML model inference' "
                "https://www.baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference/ ; "
                "AWS G5 https://aws.amazon.com/ec2/instance-types/g5/",
         notes="NVIDIA publishes no A10G datasheet; AWS-only GA102 variant (80 SMs). Tensor "
               "rates are secondary (about half of A10's: FP32-accumulate rate as on GeForce); "
               "treat as +-10%. Memory 24 GB / 600 GB/s matches A10. Scale-out: g5.48xlarge "
               "has 100 Gb/s for 8 GPUs (12.5 Gb/s per GPU)."),
    accelerator_row("l4", "NVIDIA L4 24GB", "NVIDIA", ["nvidia-l4", "l4-24gb"],
         memory_gb=24, memory_tb_per_s=0.3,
         tflops=dict(fp32=30.3, tf32=60, bf16=121, fp16=121, fp8=242.5, int8=242.5),
         scale_up_link=None, scale_up_gb_per_s_unidir=None, domain=1,
         in_network_reduction=False, pcie_peer_gb_per_s_unidir=PCIE4_X16_GB_S,
         scale_out_gbit_per_s=12.5, tdp_w=72,
         # host link: datasheet "PCIe Gen4 x16"
         host_link="PCIe 4.0 x16", host_link_gb_per_s_unidir=PCIE4_X16_GB_S,
         usable_mib=23034, usable_source=MODAL_2797,
         # datasheet FP32 30.3 TFLOP/s = 58 SMs x 128 FP32 lanes x 2 x 2.04 GHz (AD104 has 60)
         sms=58,
         source="NVIDIA L4 datasheet https://www.nvidia.com/en-us/data-center/l4/ ; AWS G6 "
                "https://aws.amazon.com/ec2/instance-types/g6/",
         notes="Datasheet tensor figures (TF32 120, BF16 242, FP8 485, INT8 485) are sparse; "
               "halved. PCIe, no NVLink. Scale-out: g6.48xlarge 100 Gb/s per 8 GPUs."),
    accelerator_row("l40s", "NVIDIA L40S 48GB", "NVIDIA", ["nvidia-l40s", "l40s-48gb"],
         memory_gb=48, memory_tb_per_s=0.864,
         tflops=dict(fp32=91.6, tf32=183, bf16=362.05, fp16=362.05, fp8=733, int8=733),
         scale_up_link=None, scale_up_gb_per_s_unidir=None, domain=1,
         in_network_reduction=False, pcie_peer_gb_per_s_unidir=PCIE4_X16_GB_S,
         scale_out_gbit_per_s=50, tdp_w=350,
         # host link: datasheet "PCIe Gen4 x16"
         host_link="PCIe 4.0 x16", host_link_gb_per_s_unidir=PCIE4_X16_GB_S,
         usable_mib=46068,
         usable_source=MODAL_2797 + "; also https://github.com/akash-network/provider-configs/"
                       "pull/99 (driver 595.71.05)",
         sms=142,  # NVIDIA Ada Lovelace architecture whitepaper / L40S datasheet: 142 SMs
         source="NVIDIA L40S datasheet https://www.nvidia.com/en-us/data-center/l40s/ ; AWS G6e "
                "https://aws.amazon.com/ec2/instance-types/g6e/",
         notes="Datasheet lists dense|sparse pairs (BF16 362.05 | 733). GDDR6, PCIe, no NVLink. "
               "Scale-out: g6e.48xlarge 400 Gb/s per 8 GPUs (50 Gb/s per GPU)."),
    # ---------------- NVIDIA Hopper ----------------
    H100_SXM,  # the default accelerator of every script: accelerator.py
    accelerator_row("h100-pcie", "NVIDIA H100 PCIe 80GB", "NVIDIA", ["h100-pcie-80gb", "h100-pcie5"],
         memory_gb=80, memory_tb_per_s=2.0,
         tflops=dict(fp64=51, fp32=51, tf32=378, bf16=756, fp16=756, fp8=1513, int8=1513),
         scale_up_link="NVLink 4 bridge (pairs)", scale_up_gb_per_s_unidir=300, domain=2,
         in_network_reduction=False, scale_out_gbit_per_s=None, tdp_w=350,
         topology="pair",
         # host link: datasheet "PCIe Gen5: 128 GB/s"
         host_link="PCIe 5.0 x16", host_link_gb_per_s_unidir=PCIE5_X16_GB_S,
         sms=114,  # NVIDIA H100 Tensor Core GPU Architecture whitepaper: 114 SMs on PCIe
         kernel_family="hopper", kv_stream_efficiency=KV_STREAM_EFFICIENCY,
         source=NV_H100_SOURCE + " ; NVIDIA H100 PCIe product brief PB-11133-001",
         notes="HBM2e 'over 2,000 GB/s'. NVLink bridge 600 GB/s bidirectional joins 2 cards. "
               "TDP 300-350 W configurable; 350 shown. Scale-out: no reference design (None)."),
    accelerator_row("h100-nvl", "NVIDIA H100 NVL 94GB", "NVIDIA", ["h100nvl", "h100-nvl-94gb"],
         memory_gb=94, memory_tb_per_s=3.9,
         tflops=dict(fp64=60, fp32=60, tf32=417.5, bf16=835.5, fp16=835.5, fp8=1670.5,
                     int8=1670.5),
         scale_up_link="NVLink 4 bridge (pairs)", scale_up_gb_per_s_unidir=300, domain=2,
         in_network_reduction=False, scale_out_gbit_per_s=None, tdp_w=400,
         topology="pair",
         host_link="PCIe 5.0 x16", host_link_gb_per_s_unidir=PCIE5_X16_GB_S,
         usable_mib=95330,
         usable_source="DRM dedicated total 99961274368 B reported by the driver in "
                       "https://github.com/fastfetch-cli/fastfetch/issues/1658 (driver 570.86.15)",
         sms=132,  # the H100 SXM5's GH100 configuration (132 SMs, H100 whitepaper)
         kernel_family="hopper", kv_stream_efficiency=KV_STREAM_EFFICIENCY,
         source=NV_H100_SOURCE,
         notes="Per GPU of the NVL card (early material quoted the 2-GPU pair: 188 GB, 2x "
               "FLOPS). 94 GB HBM3, 3.9 TB/s, 350-400 W. Bridge 600 GB/s bidirectional."),
    accelerator_row("h800", "NVIDIA H800 SXM5 80GB", "NVIDIA", ["h800-sxm", "h800-sxm5", "h800-80gb"],
         memory_gb=80, memory_tb_per_s=3.35,
         tflops=dict(fp64=1, fp32=67, tf32=494.7, bf16=989.4, fp16=989.4, fp8=1978.9,
                     int8=1978.9),
         scale_up_link="NVLink 4 (export-limited) via NVSwitch gen3", scale_up_gb_per_s_unidir=200,
         domain=8, in_network_reduction=True, scale_out_gbit_per_s=400, tdp_w=700,
         topology="switch",
         host_link="PCIe 5.0 x16", host_link_gb_per_s_unidir=PCIE5_X16_GB_S,
         usable_mib=81559,
         usable_source="nvidia-smi in https://github.com/NVIDIA/DCGM/issues/183 (driver "
                       "535.183.01)",
         sms=132,  # the H100 SXM5's GH100 (H100 whitepaper: 132 SMs)
         # the 700 W GH100 of the H100 SXM: its kernels, sustained-loop factor and KV streaming
         kernel_family="hopper", sustained=SUSTAINED_H100,
         kv_stream_efficiency=KV_STREAM_EFFICIENCY,
         source="SECONDARY: Reuters/TechPowerUp reporting; https://aiwiki.ai/wiki/nvidia_h800 ; "
                "DeepSeek-V3 technical report https://arxiv.org/abs/2412.19437 (sec. 3.1-3.2)",
         notes="No public NVIDIA datasheet. Same GH100 compute as H100 SXM except fp64 (~1 "
               "TFLOP/s reported). NVLink cut to 400 GB/s bidirectional (200 GB/s per "
               "direction). DeepSeek-V3 reports ~160 GB/s achievable NVLink and 50 GB/s IB "
               "(one 400 Gb/s NIC per GPU) on its H800 cluster.",
         achievable_tflops=dict(bf16=794.5, fp8=1402.6),
         achievable_source="the H100 SXM's MAMF (same GH100 die, 132 SMs, 700 W; not measured on an "
                           "H800): " + MAMF_SOURCE),
    accelerator_row("h20", "NVIDIA H20 96GB", "NVIDIA", ["h20-96gb", "hgx-h20"],
         memory_gb=96, memory_tb_per_s=4.0,
         tflops=dict(fp64=1, fp32=44, tf32=74, bf16=148, fp16=148, fp8=296, int8=296),
         scale_up_link="NVLink 4 via NVSwitch gen3", scale_up_gb_per_s_unidir=450, domain=8,
         in_network_reduction=True, scale_out_gbit_per_s=400, tdp_w=400,
         topology="switch",
         host_link="PCIe 5.0 x16", host_link_gb_per_s_unidir=PCIE5_X16_GB_S,
         usable_mib=97871,
         usable_source="nvidia-smi in https://github.com/NVIDIA/nvtrust/issues/128 (driver "
                       "580.95.05)",
         sms=78,  # SECONDARY: a Geekbench 6 device report, per the spec summary in source
         # the GH100 chip streams its KV cache as the H100; no kernel family: its tensor rate is
         # cut to 15% of the H100's, so the H100's measured kernel rates do not carry over
         kv_stream_efficiency=KV_STREAM_EFFICIENCY,
         source="SECONDARY (no public NVIDIA datasheet): https://willitrunai.com/es/gpus/h20-96gb ; "
                "https://zangshuxian.com/new/674733024499207168 (spec leak summaries)",
         notes="China-market Hopper. Figures from secondary spec summaries that agree with each "
               "other (148 TFLOPS FP16 dense, 296 FP8/INT8, 44 FP32, 1 FP64, 96 GB HBM3 at 4.0 "
               "TB/s, NVLink 900 GB/s bidirectional, 400 W). Some sources say HBM3e."),
    accelerator_row("h200", "NVIDIA H200 SXM 141GB", "NVIDIA",
         ["h200-sxm", "h200-sxm5", "h200-141gb", "h200-sxm-141gb"],
         memory_gb=141, memory_tb_per_s=4.8, tflops=HOPPER_SXM_TFLOPS,
         scale_up_link="NVLink 4 (18 links) via NVSwitch gen3", scale_up_gb_per_s_unidir=450,
         domain=8, in_network_reduction=True, scale_out_gbit_per_s=400, tdp_w=700,
         topology="switch",
         host_link="PCIe 5.0 x16", host_link_gb_per_s_unidir=PCIE5_X16_GB_S,
         usable_mib=143771,
         usable_source="nvidia-smi 143771 MiB in many public GitHub logs (e.g. 8x H200, driver "
                       "570.158.01; repository not recorded); torch total_memory 143156 MiB in a "
                       "public vLLM example comment",
         sms=132,  # the H100 SXM5's GH100 (H100 whitepaper; H200 page: the same compute)
         kernel_family="hopper", sustained=SUSTAINED_H100,
         kv_stream_efficiency=KV_STREAM_EFFICIENCY,
         source=_NV_H200,
         notes="Same GH100 compute as H100 SXM (datasheet sparse figures identical); 141 GB "
               "HBM3e at 4.8 TB/s; TDP up to 700 W. HGX H200 8-GPU NVSwitch gen3 with SHARP.",
         achievable_tflops=dict(bf16=794.5, fp8=1453.4),
         achievable_source=MAMF_SOURCE + " (v2 table @744d01e: fp8 measured on the H200 SXM, torch 2.7.1+cu128, "
                                   "1280x4096x12032; bf16 the H100 SXM's 794.5, which the table says H200 "
                                   "equals)"),
    accelerator_row("gh200", "NVIDIA GH200 Grace Hopper Superchip (144GB HBM3e)", "NVIDIA",
         ["gh200-144gb", "grace-hopper", "gh200-nvl32"],
         memory_gb=144, memory_tb_per_s=4.9, tflops=HOPPER_SXM_TFLOPS,
         scale_up_link="NVLink 4 via NVLink Switch System (NVL32)", scale_up_gb_per_s_unidir=450,
         domain=32, in_network_reduction=True, scale_out_gbit_per_s=400, tdp_w=1000,
         topology="switch",
         # host link: GH200 page: NVLink-C2C 900 GB/s
         host_link="NVLink-C2C", host_link_gb_per_s_unidir=NVLINK_C2C_GB_S,
         sms=132,  # the H100 SXM5's GH100 (H100 whitepaper: 132 SMs)
         kernel_family="hopper", kv_stream_efficiency=KV_STREAM_EFFICIENCY,
         source=_NV_GH200,
         notes="GPU side only (plus 480 GB LPDDR5X on the Grace CPU at ~512 GB/s, NVLink-C2C "
               "900 GB/s). Original GH200 has 96 GB HBM3 at 4 TB/s. Compute = H100 SXM. TDP "
               "450-1000 W programmable for the whole module (CPU+GPU+memory). Domain 32 = "
               "GH200 NVL32 rack; DGX GH200 reaches 256; quad-GH200 HPC blades (e.g. HPE "
               "EX254n) have 4 with no NVSwitch.",
         achievable_tflops=dict(bf16=828.6, fp8=1535.0),
         achievable_source=MAMF_SOURCE + " (v2 table, '900W 141GB HBM3e version'; torch 2.6.0+cu126)"),
    accelerator_row("gh200-96gb", "NVIDIA GH200 Grace Hopper Superchip (96GB HBM3, the 480GB module)", "NVIDIA",
         ["gh200-480gb", "gh200-hbm3"],
         memory_gb=96, memory_tb_per_s=4.0, tflops=HOPPER_SXM_TFLOPS,
         scale_up_link="NVLink 4 via NVLink Switch System (NVL32)", scale_up_gb_per_s_unidir=450,
         domain=32, in_network_reduction=True, scale_out_gbit_per_s=400, tdp_w=1000,
         topology="switch",
         host_link="NVLink-C2C", host_link_gb_per_s_unidir=NVLINK_C2C_GB_S,
         sms=132,  # the H100 SXM5's GH100 (H100 whitepaper: 132 SMs)
         kernel_family="hopper", kv_stream_efficiency=KV_STREAM_EFFICIENCY,
         source=_NV_GH200,
         notes="The original GH200: 96 GB HBM3 at 4 TB/s on the GPU beside the Grace CPU's 480 GB "
               "LPDDR5X (sold as 'GH200 480GB', the name TensorRT-LLM's perf tables use). Same GH100 "
               "compute as the 144GB HBM3e module; its matmul maxima are that module's measurement.",
         achievable_tflops=dict(bf16=828.6, fp8=1535.0),
         achievable_source=MAMF_SOURCE + " (v2 table, measured on the 144GB HBM3e module; same GH100 compute)"),
    # ---------------- NVIDIA Blackwell ----------------
    accelerator_row("b200", "NVIDIA B200 (HGX B200, 180GB)", "NVIDIA", ["b200-sxm", "hgx-b200", "dgx-b200"],
         memory_gb=180, memory_tb_per_s=8.0, tflops=_B200_TFLOPS,
         scale_up_link="NVLink 5 (18 links) via NVLink 5 switch", scale_up_gb_per_s_unidir=900,
         domain=8, in_network_reduction=True, scale_out_gbit_per_s=400, tdp_w=1000,
         topology="switch",
         # host link: HGX B200: each GPU on PCIe Gen5 x16 to the host
         host_link="PCIe 5.0 x16", host_link_gb_per_s_unidir=PCIE5_X16_GB_S,
         usable_mib=183359,
         usable_source="nvidia-smi in https://github.com/NVIDIA/TensorRT-LLM/issues/10278 (driver "
                       "580.95.05); torch total_memory 182631-182642 MiB in public logs",
         sms=148,  # 74 of each die's 80 SMs (Blackwell SM readings, above)
         kernel_family="blackwell", sustained=SUSTAINED_BLACKWELL,
         source=_NV_HGX + " (HGX B200 column divided by 8 GPUs) ; https://glennklockwood.com/"
                          "garden/processors/B200",
         notes="HGX table gives 8-GPU totals with sparsity (FP4 144 PF, FP8 72 PF, BF16 36 PF, "
               "TF32 18 PF); per GPU dense = /8/2. Early launch material said 192 GB; HGX B200 "
               "ships 1.44 TB per 8 GPUs (180 GB; nvidia-smi shows ~179 GB). Klockwood lists "
               "fp64 40 / tf32 1100; HGX table 296 TF fp64 per 8 => 37. NVLink 1.8 TB/s "
               "bidirectional. Networking 0.8 TB/s per 8 GPUs = one 400 Gb/s NIC per GPU.",
         achievable_tflops=dict(bf16=1745.0, fp8=3432.5),
         achievable_source=MAMF_SOURCE + " (v2 table @744d01e; torch 2.7.1+cu128; bf16 1792x16128x3072, fp8 "
                                   "e4m3 15360x4096x3072; no fp4 row)"),
    accelerator_row("gb200", "NVIDIA GB200 NVL72 (per Blackwell GPU)", "NVIDIA",
         ["gb200-nvl72", "gb200-gpu", "b200-nvl72"],
         memory_gb=186, memory_tb_per_s=8.0,
         tflops=dict(fp64=45, fp32=80, tf32=1250, bf16=2500, fp16=2500, fp8=5000, int8=5000,
                     fp4=10000),
         scale_up_link="NVLink 5 via NVLink Switch (rack)", scale_up_gb_per_s_unidir=900,
         domain=72, in_network_reduction=True, scale_out_gbit_per_s=400, tdp_w=1200,
         topology="switch",
         host_link="NVLink-C2C", host_link_gb_per_s_unidir=NVLINK_C2C_GB_S,
         sms=152,  # more SMs on than the HGX B200's 148 (Blackwell SM readings, above)
         kernel_family="blackwell", sustained=SUSTAINED_BLACKWELL,
         source=_NV_GB200 + " (NVL72 totals divided by 72) ; https://glennklockwood.com/garden/"
                            "processors/B200",
         notes="Per GPU; a GB200 superchip is 1 Grace + 2 of these. NVL72 sheet: FP4 1,440 PF, "
               "FP8 720 PF, BF16 360 PF, TF32 180 PF (sparse), ~13.4 TB HBM3e, 576 TB/s => "
               "186 GB, 8 TB/s per GPU (192 GB nominal stacks; sources say 186-192). fp32 80 "
               "per Bekman, 90 per Klockwood. ~1200 W per GPU is secondary (Klockwood). "
               "Scale-out: one ConnectX-7 400 Gb/s per GPU in the reference rack.",
         achievable_tflops=dict(bf16=1822.0, fp8=3615.6, fp4=7627.6),
         achievable_source=MAMF_SOURCE + " (v2 table @744d01e; torch 2.10.0.dev20250916+cu130; bf16 "
                                   "4096x9728x2048, fp8 e4m3 19456x5120x1536) ; fp4: Azure/AI-benchmarking-"
                                   "guide Azure_Results/ND_GB200_v6_results.md @2a370be6, cuBLASLt fp4e2m1 "
                                   "16384^3 (its fp8 there, 2906.9, is below Bekman's; an older version "
                                   "of the file gave fp4 7609.1 at 8192^3 but 5604.0 at 16384^3)"),
    accelerator_row("b300", "NVIDIA B300 Blackwell Ultra (HGX B300, 288GB)", "NVIDIA",
         ["b300-sxm", "hgx-b300", "blackwell-ultra", "gb300"],
         memory_gb=288, memory_tb_per_s=8.0,
         tflops=dict(fp64=1.25, fp32=75, tf32=1125, bf16=2250, fp16=2250, fp8=4500, fp4=13500),
         scale_up_link="NVLink 5 via NVLink 5 switch", scale_up_gb_per_s_unidir=900, domain=8,
         in_network_reduction=True, scale_out_gbit_per_s=800, tdp_w=1100,
         topology="switch",
         # host link: B300's Gen6 port meets Gen5 hosts: 5.0 taken
         host_link="PCIe 5.0 x16", host_link_gb_per_s_unidir=PCIE5_X16_GB_S,
         # 148 of the full die's 160 (NVIDIA, "Inside NVIDIA Blackwell Ultra"); the GB300 has
         # 152, as the GB200 (Blackwell SM readings, above)
         sms=148,
         kernel_family="blackwell", sustained=SUSTAINED_BLACKWELL,
         source=_NV_HGX + " (HGX B300 column / 8) ; https://glennklockwood.com/garden/processors/"
                          "B300 ; https://verda.com/blog/gb300-nvl72-architecture",
         notes="SOURCES DISAGREE on dense FP4: HGX table 108 PF/8 = 13.5 PF (used); Klockwood "
               "13.1; Verda 14; the 15 PF figure is GB300. INT8 is cut to ~0.15-0.19 POPS "
               "(sources disagree), so int8 is omitted. FP64 1.25 TF. 288 GB nominal (HGX lists "
               "~2.1-2.3 TB per 8). TDP ~1100 W HGX (GB300 1400 W) is secondary. ConnectX-8 "
               "800 Gb/s per GPU. 'gb300' aliases here for compute/memory; its NVL72 domain "
               "is 72, not 8.",
         achievable_tflops=dict(bf16=1769.0, fp8=3353.3),
         achievable_source=MAMF_SOURCE + " (v2 table @744d01e, B300 SXM; torch 2.9.1+cu130; bf16 "
                                   "12288x18432x1024, fp8 e4m3 3072x6144x7168; no fp4 row)"),
    # ---------------- NVIDIA GeForce ----------------
    accelerator_row("rtx-3090", "NVIDIA GeForce RTX 3090 24GB", "NVIDIA", ["3090", "rtx3090", "geforce-rtx-3090"],
         memory_gb=24, memory_tb_per_s=0.936,
         tflops=dict(fp32=35.6, tf32=35.6, bf16=71, fp16=71, int8=284),
         scale_up_link="NVLink 3 bridge (pairs)", scale_up_gb_per_s_unidir=56.25, domain=2,
         in_network_reduction=False, scale_out_gbit_per_s=None, tdp_w=350,
         topology="pair",
         host_link="PCIe 4.0 x16", host_link_gb_per_s_unidir=PCIE4_X16_GB_S,
         usable_mib=24576,
         usable_source="nvidia-smi in https://github.com/noonghunna/club-3090/issues/1128 "
                       "(driver 595.84)",
         sms=82,  # GA102 whitepaper, Appendix A, RTX 3090: 82 SMs
         source="NVIDIA Ampere GA102 GPU Architecture whitepaper, Appendix A (RTX 3090 column) "
                "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf",
         notes="fp16/bf16 with FP32 accumulate (71); FP16-accumulate is 142. NVLink bridge "
               "112.5 GB/s bidirectional. GDDR6X."),
    accelerator_row("rtx-4090", "NVIDIA GeForce RTX 4090 24GB", "NVIDIA", ["4090", "rtx4090", "geforce-rtx-4090"],
         memory_gb=24, memory_tb_per_s=1.008,
         tflops=dict(fp32=82.6, tf32=82.6, bf16=165.2, fp16=165.2, fp8=330.3, int8=660.6),
         scale_up_link=None, scale_up_gb_per_s_unidir=None, domain=1,
         in_network_reduction=False, scale_out_gbit_per_s=None, tdp_w=450,
         host_link="PCIe 4.0 x16", host_link_gb_per_s_unidir=PCIE4_X16_GB_S,
         usable_mib=24564,
         usable_source="nvidia-smi in https://github.com/RLinf/RLinf/issues/255 (driver "
                       "550.163.01); torch total_memory 24563 MiB in a public log",
         sms=128,  # Ada whitepaper, Appendix, RTX 4090: 128 SMs
         source="NVIDIA Ada Lovelace GPU Architecture whitepaper, Appendix (RTX 4090 column) "
                "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf",
         notes="fp16/bf16/fp8 with FP32 accumulate (165.2 / 330.3); FP16-accumulate rates are "
               "330.3 / 660.6. No NVLink; peer traffic goes over PCIe 4.0."),
    accelerator_row("rtx-5090", "NVIDIA GeForce RTX 5090 32GB", "NVIDIA", ["5090", "rtx5090", "geforce-rtx-5090"],
         memory_gb=32, memory_tb_per_s=1.792,
         tflops=dict(fp32=104.8, tf32=104.8, bf16=209.5, fp16=209.5, fp8=419, int8=838,
                     fp4=1676),
         scale_up_link=None, scale_up_gb_per_s_unidir=None, domain=1,
         in_network_reduction=False, scale_out_gbit_per_s=None, tdp_w=575,
         host_link="PCIe 5.0 x16", host_link_gb_per_s_unidir=PCIE5_X16_GB_S,
         usable_mib=32607,
         usable_source="nvidia-smi in https://github.com/noonghunna/club-3090/issues/617 "
                       "(driver 595.71.05)",
         sms=170,  # RTX Blackwell whitepaper, RTX 5090: 170 SMs
         source="NVIDIA RTX Blackwell GPU Architecture whitepaper (RTX 5090 column) "
                "https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf",
         notes="fp16/bf16/fp8 with FP32 accumulate; FP16-accumulate rates are 2x (419 / 838). "
               "UNCERTAIN: the FP32-accumulate half rate is assumed to carry over from Ada "
               "GeForce; secondary spec sheets only print FP16 838 / FP8 1,677 / FP4 3,352 "
               "sparse (spheron.network, Linux Format). fp4 1,676 dense (the '3,352 AI TOPS' "
               "headline is FP4 sparse). No NVLink; PCIe 5.0."),
    # ---------------- AMD Instinct ----------------
    accelerator_row("mi250x", "AMD Instinct MI250X (OAM, 2 GCDs)", "AMD", ["amd-mi250x", "instinct-mi250x"],
         memory_gb=128, memory_tb_per_s=3.2768,
         tflops=dict(fp64=95.7, fp32=95.7, bf16=383, fp16=383, int8=383),
         scale_up_link="Infinity Fabric (xGMI 3)", scale_up_gb_per_s_unidir=350, domain=4,
         in_network_reduction=False, scale_out_gbit_per_s=200, tdp_w=560,
         topology="mesh",
         host_link="PCIe 4.0 x16", host_link_gb_per_s_unidir=PCIE4_X16_GB_S,  # AMD: "PCIe Gen4"
         # compute units of both GCDs (AMD MI250X page: 220 CUs, 14,080 stream processors;
         # fp64 vector 47.9 TFLOP/s = 220 x 128 x 1.7 GHz)
         sms=220,
         source=_AMD + "mi200/mi250x.html ; " + _STAS_NET,
         notes="One package = 2 GCDs that software sees as 2 GPUs; figures are per package. "
               "fp64/fp32 are matrix rates (vector 47.9). IF all-to-all 350 GB/s unidirectional "
               "is Bekman's figure (AMD quotes 800 GB/s aggregate over 8 links). Domain 4 = "
               "Frontier node; 1x 200 Gb/s Slingshot per MI250X. Bekman's MAMF (147 TFLOPS) is "
               "for one GCD, so it is not stored as a device figure."),
    accelerator_row("mi300x", "AMD Instinct MI300X 192GB", "AMD", ["amd-mi300x", "instinct-mi300x", "mi300"],
         memory_gb=192, memory_tb_per_s=5.3, tflops=_MI300_TFLOPS,
         scale_up_link="Infinity Fabric (xGMI), 7 peers x 64 GB/s", scale_up_gb_per_s_unidir=448,
         domain=8, in_network_reduction=False, scale_out_gbit_per_s=400, tdp_w=750,
         topology="mesh",
         host_link="PCIe 5.0 x16", host_link_gb_per_s_unidir=PCIE5_X16_GB_S,  # AMD: "PCIe Gen5 x16"
         sms=304,  # compute units (AMD CDNA 3 white paper: 8 XCDs x 38 CUs)
         source=_AMD + "mi300/mi300x.html ; AMD Instinct MI300X data sheet ; " + _STAS_NET,
         notes="Dense peaks from AMD (sparse FP8/INT8 are 2x). fp64 matrix 163.4 (vector 81.7). "
               "xGMI is a full mesh, not a switch: 64 GB/s per direction per peer, 448 GB/s "
               "total; a single pair only gets 64 GB/s. AMD quotes 896 GB/s (bidirectional). "
               "Scale-out: one 400 Gb/s NIC per GPU in the reference platform.",
         achievable_tflops=dict(bf16=668.4),
         achievable_source=MAMF_SOURCE + " (v2 table; torch 2.5.1+rocm6.3, PYTORCH_TUNABLEOP_ENABLED=1; "
                                   "Bekman's older v1 table says 781.9 with ROCm 6.2)"),
    accelerator_row("mi325x", "AMD Instinct MI325X 256GB", "AMD", ["amd-mi325x", "instinct-mi325x"],
         memory_gb=256, memory_tb_per_s=6.0, tflops=_MI300_TFLOPS,
         scale_up_link="Infinity Fabric (xGMI), 7 peers x 64 GB/s", scale_up_gb_per_s_unidir=448,
         domain=8, in_network_reduction=False, scale_out_gbit_per_s=400, tdp_w=1000,
         topology="mesh",
         host_link="PCIe 5.0 x16", host_link_gb_per_s_unidir=PCIE5_X16_GB_S,
         sms=304,  # compute units: the MI300X's CDNA 3 die (304 CUs)
         source=_AMD + "mi300/mi325x.html ; " + _STAS_NET,
         notes="Same CDNA3 compute as MI300X; 256 GB HBM3e at 6 TB/s; 1000 W.",
         achievable_tflops=dict(bf16=784.9),
         achievable_source=MAMF_SOURCE + " (v2 table; 1000W, torch 2.6.0+rocm6.2.4, TunableOp)"),
    accelerator_row("mi355x", "AMD Instinct MI355X 288GB", "AMD", ["amd-mi355x", "instinct-mi355x"],
         memory_gb=288, memory_tb_per_s=8.0,
         tflops=dict(fp64=78.6, fp32=157.3, bf16=2516.6, fp16=2516.6, fp8=5033.2, int8=5033.2,
                     fp4=10066.3),
         scale_up_link="Infinity Fabric (xGMI 4), 7 peers x 76.5 GB/s", scale_up_gb_per_s_unidir=535.5,
         domain=8, in_network_reduction=False, scale_out_gbit_per_s=400, tdp_w=1400,
         topology="mesh",
         host_link="PCIe 5.0 x16", host_link_gb_per_s_unidir=PCIE5_X16_GB_S,
         sms=256,  # compute units (AMD CDNA 4 white paper: 8 XCDs x 32 CUs)
         source=_AMD + "mi350/mi355x.html ; " + _STAS_NET + " ; Tom's Hardware (ISC 2025) "
                "https://www.tomshardware.com/pc-components/gpus/amds-instinct-mi355x-accelerator-will-consume-1-400-watts",
         notes="AMD quotes FP4/FP6 20.1 PF with sparsity -> 10.07 dense; FP8 ~5 PF dense "
               "(ISSCC 2026 talk). Bekman's table lists 2,300 bf16 (that is MI350X-class); AMD's "
               "MI355X page 2.5 PF is used. TF32 not listed by AMD for CDNA4: omitted. xGMI "
               "535.5 GB/s all-to-all per direction (Bekman). Pollara 400 Gb/s NIC per GPU.",
         achievable_tflops=dict(bf16=1565.0),
         achievable_source=MAMF_SOURCE + " (v2 table @744d01e, MI355X; torch 2.8.0+rocm7.0.2, "
                                   "PYTORCH_TUNABLEOP_ENABLED=0; 12288x8192x8192)"),
    # ---------------- Google TPU ----------------
    accelerator_row("tpu-v4", "Google Cloud TPU v4 (per chip)", "Google", ["v4", "tpuv4", "tpu-v4p", "v4p"],
         memory_gb=None, memory_bytes=32 * GIB, memory_tb_per_s=1.2,
         tflops=dict(bf16=275, int8=275),
         scale_up_link="ICI, 3D torus, 6 links x 45 GB/s/dir", scale_up_gb_per_s_unidir=270,
         domain=4096, in_network_reduction=False, scale_out_gbit_per_s=50, tdp_w=192,
         topology="torus",
         sms=None,  # matrix units, no SMs or compute units: no wave-quantization term
         source=_GOOGLE + "v4 ; " + _SCALING_BOOK,
         notes="Google: 275 TFLOPS bf16/int8, '32 GiB, 1200 GBps', pod 4096 chips, measured "
               "max power 192 W (used as TDP). ICI not on Google's page: 4.5e10 B/s per link "
               "one-way x 6 links from the Scaling Book (secondary). DCN: Scaling Book says "
               "~2.5e10 B/s per 4-chip host => ~50 Gb/s per chip (rough)."),
    accelerator_row("tpu-v5e", "Google Cloud TPU v5e (per chip)", "Google", ["v5e", "tpuv5e", "v5litepod"],
         memory_gb=16, memory_tb_per_s=0.819, tflops=dict(bf16=197, int8=393),
         scale_up_link="ICI, 2D torus, 4 ports", scale_up_gb_per_s_unidir=200, domain=256,
         in_network_reduction=False, scale_out_gbit_per_s=25, tdp_w=None,
         topology="torus",
         sms=None,  # matrix units, no SMs or compute units: no wave-quantization term
         source=_GOOGLE + "v5e ; " + _SCALING_BOOK,
         notes="Google: 197 TFLOPS bf16, 393 TOPS int8 (Scaling Book 394), 16 GB at 819 GBps "
               "(another version of the page says 800 GiBps), bidirectional ICI 400 GBps per "
               "chip => 200 GB/s per direction, pod 256. Host NIC 2x100 Gb/s per 8 chips => "
               "25 Gb/s per chip. No TDP published."),
    accelerator_row("tpu-v5p", "Google Cloud TPU v5p (per chip)", "Google", ["v5p", "tpuv5p"],
         memory_gb=95, memory_tb_per_s=2.765, tflops=dict(bf16=459, int8=918),
         scale_up_link="ICI, 3D torus, 6 links", scale_up_gb_per_s_unidir=600, domain=8960,
         in_network_reduction=False, scale_out_gbit_per_s=50, tdp_w=None,
         topology="torus",
         sms=None,  # matrix units, no SMs or compute units: no wave-quantization term
         source=_GOOGLE + "v5p ; " + _SCALING_BOOK,
         notes="Google: 459 TFLOPS bf16, '95GB' (newer table says 95 GiB; Scaling Book 96GB), "
               "2765 GBps, bidirectional ICI 1200 GBps per chip (older page: 4800 Gbps one "
               "way) => 600 GB/s per direction, DCN 50 Gbps per chip, pod 8960 (largest "
               "single slice 6144). int8 918 from the Scaling Book. Google's newer table also "
               "lists 'FP8 459' (same as bf16); not stored as fp8. No TDP published."),
    accelerator_row("tpu-v6e", "Google Cloud TPU v6e Trillium (per chip)", "Google",
         ["v6e", "tpuv6e", "trillium", "tpu-trillium"],
         memory_gb=32, memory_tb_per_s=1.638, tflops=dict(bf16=918, int8=1836),
         scale_up_link="ICI, 2D torus, 4 ports", scale_up_gb_per_s_unidir=400, domain=256,
         in_network_reduction=False, scale_out_gbit_per_s=25, tdp_w=None,
         topology="torus",
         sms=None,  # matrix units, no SMs or compute units: no wave-quantization term
         source=_GOOGLE + "v6e ; " + _SCALING_BOOK,
         notes="Google: 918 TFLOPS bf16, 1836 TOPS int8, 32 GB at 1638 GBps, bidirectional ICI "
               "800 GBps per chip => 400 per direction, pod 256. Scale-out not published per "
               "chip: Scaling Book ~2.5e10 B/s per 8-chip host => 25 Gb/s per chip (rough)."),
    # ---------------- Intel Gaudi ----------------
    accelerator_row("gaudi2", "Intel Gaudi 2 (HL-225)", "Intel", ["gaudi-2", "hl-225", "habana-gaudi2"],
         memory_gb=96, memory_tb_per_s=2.46, tflops=dict(bf16=432, fp8=865),
         scale_up_link="21x 100GbE RoCE (of 24) all-to-all, HLS-Gaudi2",
         scale_up_gb_per_s_unidir=262.5, domain=8, in_network_reduction=False,
         scale_out_gbit_per_s=300, tdp_w=600,
         topology="mesh",
         sms=None,  # matrix units, no SMs or compute units: no wave-quantization term
         source="Intel Gaudi 3 Hot Chips 2024 slides (R. Kaplan), generation table ; "
                "https://habana.ai/products/gaudi2/ ; " + MAMF_SOURCE,
         notes="Intel long published no Gaudi 2 TFLOPS; 432 bf16 / 865 fp8 MME figures come "
               "from Intel's later Gaudi 3 material and Bekman's table. 24x100 GbE on chip: "
               "21 for scale-up (3 per peer in an 8-card box) = 262.5 GB/s per direction; "
               "Bekman counts all 24 (300 GB/s). 3 ports (300 Gb/s) for scale-out.",
         achievable_tflops=dict(bf16=418.7, fp8=826.5),
         achievable_source=MAMF_SOURCE + " (v2 table @744d01e; torch 2.6.0+hpu_1.21.2, PT_HPU_LAZY_MODE=1; "
                                   "the v1 table's 429.3 bf16 had no cache reset)"),
    accelerator_row("gaudi3", "Intel Gaudi 3 (HL-325L OAM)", "Intel", ["gaudi-3", "hl-325l", "habana-gaudi3"],
         memory_gb=128, memory_tb_per_s=3.67, tflops=dict(bf16=1835, fp8=1835),
         scale_up_link="21x 200GbE RoCE (of 24) all-to-all, HLS-Gaudi3",
         scale_up_gb_per_s_unidir=525, domain=8, in_network_reduction=False,
         scale_out_gbit_per_s=600, tdp_w=900,
         topology="mesh",
         sms=None,  # matrix units, no SMs or compute units: no wave-quantization term
         source="Intel Gaudi 3 AI Accelerator white paper https://www.intel.com/content/www/us/"
                "en/content-details/817486/intel-gaudi-3-ai-accelerator-white-paper.html ; "
                "Hot Chips 2024 slides (R. Kaplan) ; " + MAMF_SOURCE,
         notes="MME bf16 = fp8 = 1835 TFLOPS at the planned 1.75 GHz; Bekman reports shipping "
               "parts at 1.6 GHz => 1677. Memory 3.67 TB/s (Hot Chips) vs 3.7 (marketing). "
               "Networking 1200 GB/s bidirectional over 24x200GbE: 21 ports scale-up = 525 GB/s "
               "per direction (Bekman counts 600), 3 ports = 600 Gb/s scale-out. 900 W air "
               "(1200 W liquid). fp32/tf32 MME rates only partially published: omitted.",
         achievable_tflops=dict(bf16=1243.0, fp8=1289.5),
         achievable_source=MAMF_SOURCE + " (v2 table @744d01e; torch 2.6.0+hpu_1.21.4, PT_HPU_LAZY_MODE=1; "
                                   "the v1 table's 1288.8 bf16 was Gaudi 1.19)"),
    # ---------------- AWS Trainium ----------------
    accelerator_row("trainium1", "AWS Trainium (Trn1, per chip)", "AWS", ["trn1", "trainium", "trainium-1"],
         memory_gb=None, memory_bytes=32 * GIB, memory_tb_per_s=0.82,
         tflops=dict(fp32=47.5, tf32=190, bf16=190, fp16=190, fp8=190, int8=380),
         scale_up_link="NeuronLink-v2 (2D torus / 4D hypercube in trn1.32xlarge)",
         scale_up_gb_per_s_unidir=192, domain=16, in_network_reduction=False,
         scale_out_gbit_per_s=50, tdp_w=None,
         topology="torus",
         sms=None,  # matrix units, no SMs or compute units: no wave-quantization term
         source=_NEURON + "trainium.html ; " + _NEURON + "trainium2.html (Trn1 vs Trn2 table) ; "
                "trn1 arch page (EFA 800 Gbps per trn1.32xlarge)",
         notes="AWS: 190 FP16/BF16/cFP8/TF32 TFLOPS, 47.5 FP32, 380 INT8 TOPS (an older page "
               "said 420), 32 GiB at 820 GiB/s (older page: '32GB', '820 GB/s'; 820 GB/s "
               "used). Interconnect 384 GB/s per chip with no direction stated: taken as "
               "bidirectional => 192 per direction (uncertain). 16 chips per trn1.32xlarge; "
               "800 Gbps EFA per 16 chips = 50 Gb/s per chip (trn1n: 100)."),
    accelerator_row("trainium2", "AWS Trainium2 (Trn2, per chip)", "AWS", ["trn2", "trainium-2"],
         memory_gb=None, memory_bytes=96 * GIB, memory_tb_per_s=2.9,
         tflops=dict(fp32=181, tf32=667, bf16=667, fp16=667, fp8=1299),
         scale_up_link="NeuronLink-v3 (4x4 torus in trn2.48xlarge)",
         scale_up_gb_per_s_unidir=640, domain=16, in_network_reduction=False,
         scale_out_gbit_per_s=200, tdp_w=None,
         topology="torus",
         sms=None,  # matrix units, no SMs or compute units: no wave-quantization term
         source=_NEURON + "trainium2.html ; AWS Trn2 instances https://aws.amazon.com/ec2/"
                          "instance-types/trn2/",
         notes="AWS: 1,299 FP8, 667 BF16/FP16/TF32, 181 FP32 TFLOPS dense (2,563 sparse), 96 "
               "GiB at 2.9 TB/s (NKI guide says 3 TB/s). NeuronLink-v3 '1.28 TB/sec per chip', "
               "direction not stated: taken as bidirectional => 640 GB/s per direction "
               "(uncertain). Domain 16 per trn2.48xlarge (64 in a Trn2 UltraServer). EFA 3.2 "
               "Tbps per 16 chips = 200 Gb/s per chip."),
]

_BY_NAME = {rec["name"]: rec for rec in _ROWS}


MAX_NAME_CHARS = 64  # the longest name or alias in the table has 16


def _norm(name):
    """Lowercase, unify separators: 'H100_SXM5 80GB' -> 'h100-sxm5-80gb'."""
    s = str(name).strip().lower()
    for ch in ("_", " ", "."):
        s = s.replace(ch, "-")
    while "--" in s:
        s = s.replace("--", "-")
    return s.strip("-")


def _squash(name):
    """Drop separators so 'h100sxm' and 'h100-sxm' meet: used as a second lookup key."""
    return _norm(name).replace("-", "")


def _build_index():
    """Map every normalized and squashed canonical name and alias to its canonical name."""
    index = {}
    for rec in _ROWS:
        for key in [rec["name"]] + rec["aliases"]:
            for k in (_norm(key), _squash(key)):
                other = index.get(k)
                if other is not None and other != rec["name"]:
                    raise RuntimeError(f"alias {key!r} maps to both {other} and {rec['name']}")
                index[k] = rec["name"]
    return index


_INDEX = _build_index()


def list_accelerators():
    """Canonical names in table order."""
    return [rec["name"] for rec in _ROWS]


def nearest_names(name, n=3):
    """Up to n canonical names closest to `name` (difflib over names and aliases)."""
    import difflib  # only an unknown name needs it (start-up time)
    key = _norm(name)
    order = {c: i for i, c in enumerate(list_accelerators())}
    best = {}
    for cand, canon in _INDEX.items():
        # whole-string similarity, or similarity to a same-length prefix so that 'h1000' is near
        # 'h100-pcie' as well as 'h100'; ties keep table order
        score = max(difflib.SequenceMatcher(None, key, cand).ratio(),
                    difflib.SequenceMatcher(None, key, cand[:len(key)]).ratio())
        best[canon] = max(best.get(canon, 0.0), score)
    ranked = sorted((c for c in best if best[c] >= 0.4), key=lambda c: (-best[c], order[c]))
    return ranked[:n]


def get_accelerator(name):
    """Return a copy of one accelerator's record; case-insensitive, aliases accepted.

    Raises KeyError('unknown accelerator ...; nearest: a, b, c') for an unknown name.
    """
    if len(str(name)) > MAX_NAME_CHARS:  # difflib over a long name takes seconds (17 s at 1e5)
        raise KeyError(f"unknown accelerator {str(name)[:24]!r}... ({len(str(name)):,} characters; "
                       f"no name or alias is longer than {MAX_NAME_CHARS})")
    canon = _INDEX.get(_norm(name)) or _INDEX.get(_squash(name))
    if canon is None:
        near = nearest_names(name)
        raise KeyError(f"unknown accelerator {name!r}; nearest: "
                       f"{', '.join(near) if near else '(none)'}")
    return Accelerator(json.loads(json.dumps(_BY_NAME[canon])))  # deep copy: callers may mutate freely


# --- output helpers ------------------------------------------------------------------------------
def _fmt(x, div, digits=0):
    return "-" if x is None else f"{x / div:,.{digits}f}"


def _fmt_flops(x):
    return "-" if x is None else f"{x / TERA:,.1f}"


_TABLE_COLS = (
    ("name", "", lambda r: r["name"]),
    ("vendor", "", lambda r: r["vendor"]),
    ("mem", "GB", lambda r: _fmt(r["memory_bytes"], GIGA)),
    ("usable", "GiB", lambda r: _fmt(r.get("memory_usable_bytes"), GIB, 1)
     + ("" if "derived" not in (r.get("memory_usable_source") or "") else "*")),
    ("mem bw", "TB/s", lambda r: _fmt(r["memory_bandwidth_bytes_per_s"], TERA, 2)),
    ("bf16", "TFLOP/s", lambda r: _fmt_flops(r["peak_flops_per_s"].get("bf16"))),
    ("fp8", "TFLOP/s", lambda r: _fmt_flops(r["peak_flops_per_s"].get("fp8"))),
    ("fp4", "TFLOP/s", lambda r: _fmt_flops(r["peak_flops_per_s"].get("fp4"))),
    ("scale-up", "GB/s/dir", lambda r: _fmt(r["scale_up_bandwidth_bytes_per_s"], GIGA)),
    ("domain", "devs", lambda r: str(r["scale_up_domain_size"])),
    ("scale-out", "GB/s/dir", lambda r: _fmt(r["scale_out_bandwidth_bytes_per_s"], GIGA, 1)),
    ("TDP", "W", lambda r: "-" if r["tdp_w"] is None else str(r["tdp_w"])),
)


def format_table(records):
    """Aligned table of many records with a units row; dense peaks, unidirectional links."""
    head = [c[0] for c in _TABLE_COLS]
    units = [f"[{c[1]}]" if c[1] else "" for c in _TABLE_COLS]
    rows = [[c[2](r) for c in _TABLE_COLS] for r in records]
    widths = [max(len(x) for x in col) for col in zip(head, units, *rows)]

    def line(cells):
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    out = [line(head), line(units)] + [line(r) for r in rows]
    out.append("dense (non-sparse) peaks; links per device per direction; usable = driver-reported "
               "memory (* derived: vendor GB read as GiB); `python hardware.py NAME` for sources")
    return "\n".join(out)


def _record_lines(rec):
    """(label, value) pairs for one record, values humanised with units."""
    pf = rec["peak_flops_per_s"]
    ach = rec["achievable_matmul_flops_per_s"] or {}
    lines = [
        ("full name", rec["full_name"]),
        ("vendor", rec["vendor"]),
        ("aliases", ", ".join(rec["aliases"]) or "-"),
        ("memory", f"{rec['memory_bytes'] / GIGA:,.1f} GB ({rec['memory_bytes'] / GIB:,.1f} GiB)"),
        ("usable memory", f"{rec['memory_usable_bytes'] / GIB:,.2f} GiB "
                          f"({rec['memory_usable_bytes']:,} B; "
                          + ("derived" if "derived" in rec["memory_usable_source"] else "measured")
                          + ")"),
        ("memory bandwidth", f"{rec['memory_bandwidth_bytes_per_s'] / TERA:,.3f} TB/s"),
    ]
    for dt in DTYPES:
        unit = "TOP/s" if dt == "int8" else "TFLOP/s"
        val = "-" if dt not in pf else f"{pf[dt] / TERA:,.1f} {unit} ({pf[dt]:.3e})"
        if dt in ach:
            val += f"; measured {ach[dt] / TERA:,.1f} ({100 * ach[dt] / pf[dt]:.0f}% of peak)"
        lines.append((f"peak {dt} (dense)", val))
    su = rec["scale_up_bandwidth_bytes_per_s"]
    so = rec["scale_out_bandwidth_bytes_per_s"]
    lines += [
        ("scale-up link", rec["scale_up_link"] or "none"),
        ("scale-up topology", rec["scale_up_topology"] or "-"),
        ("scale-up bw", "-" if su is None else f"{su / GIGA:,.1f} GB/s per direction"),
        ("scale-up domain", f"{rec['scale_up_domain_size']} devices"),
        ("in-network reduce", "yes" if rec["scale_up_in_network_reduction"] else "no"),
        ("scale-out bw", "-" if so is None else f"{so / GIGA:,.2f} GB/s per direction "
                                                 f"({so * 8 / GIGA:,.0f} Gb/s)"),
        ("PCIe peer bw", "-" if not rec.get("pcie_peer_bandwidth_bytes_per_s")
         else f"{rec['pcie_peer_bandwidth_bytes_per_s'] / GIGA:,.1f} GB/s per direction (PCIe 4.0 x16, P2P)"),
        ("host link", "-" if not rec.get("host_link_bandwidth_bytes_per_s")
         else f"{rec['host_link']}, {rec['host_link_bandwidth_bytes_per_s'] / GIGA:,.2f} GB/s per direction"),
        ("TDP", "-" if rec["tdp_w"] is None else f"{rec['tdp_w']} W"),
        ("achievable mem bw", "-" if rec["achievable_memory_bandwidth_bytes_per_s"] is None
         else f"{rec['achievable_memory_bandwidth_bytes_per_s'] / TERA:,.2f} TB/s"),
        ("achievable source", rec["achievable_source"] or "-"),
        ("source", rec["source"]),
        ("notes", rec["notes"]),
    ]
    return lines


def format_record(rec):
    """Human-readable block for one record: every field with units, then source and notes."""
    lines = _record_lines(rec)
    w = max(len(k) for k, _ in lines)
    return "\n".join([rec["name"]] + [f"  {k.ljust(w)}  {v}" for k, v in lines])


def format_compare(records):
    """Side-by-side comparison of the numeric fields (sources/notes omitted; see NAME view)."""
    skip = {"achievable source", "source", "notes", "aliases", "full name"}
    cols = [[(k, v) for k, v in _record_lines(r) if k not in skip] for r in records]
    labels = [k for k, _ in cols[0]]
    cells = [[r["name"] for r in records]] + [[dict(c)[k] for c in cols] for k in labels]
    cells = [[c.split(" (")[0] if i > 0 else c for c in row] for i, row in enumerate(cells)]
    lw = max(len(k) for k in labels)
    widths = [max(len(row[j]) for row in cells) for j in range(len(records))]
    out = []
    for label, row in zip([""] + labels, cells):
        out.append(label.ljust(lw) + "  " + "  ".join(c.rjust(w) for c, w in zip(row, widths)))
    return "\n".join(x.rstrip() for x in out)


# --- CLI -----------------------------------------------------------------------------------------
def build_parser():
    p = OneLineErrorParser(description=__doc__)  # prog: the command as run (llmcalc-hardware)
    p.add_argument("name", nargs="?", default=None,
                   help="accelerator name or alias (case-insensitive), e.g. h100, mi300x, tpu-v5p")
    p.add_argument("--compare", nargs="+", metavar="NAME", default=None,
                   help="show two or more accelerators side by side")
    add_output_args(p, json_help="print the record (or list of records) as JSON and nothing else")
    return p


def format_brief(records):
    """--brief: one line per accelerator, `NAME: X TFLOP/s DTYPE, Y GB/s, Z GiB` (the 16-bit dense
    peak, else the widest the row has; memory bandwidth; the usable memory, else the vendor's)."""
    out = []
    for r in records:
        peaks = r["peak_flops_per_s"]
        dtype = next((d for d in ("bf16", "fp16", "fp32") if peaks.get(d)), next(iter(peaks), None))
        mem = r.get("memory_usable_bytes") or r["memory_bytes"]
        peak = f"{brief_number(peaks[dtype] / 1e12)} TFLOP/s {dtype}, " if dtype else ""
        out.append(f"{r['name']}: {peak}{brief_number(r['memory_bandwidth_bytes_per_s'] / 1e9)} "
                   f"GB/s, {brief_number(mem / 2 ** 30)} GiB")
    return "\n".join(out)


def _resolve(name, parser):
    try:
        return get_accelerator(name)
    except KeyError as e:
        parser.error(str(e.args[0]))


def main(argv=None):
    """Parse, look up, print, and return the record (NAME) or list of records (table/compare)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.name is not None and args.compare:
        parser.error("give either NAME or --compare A B ..., not both")
    if args.compare:
        result = [_resolve(n, parser) for n in args.compare]
        text = format_compare(result)
    elif args.name is not None:
        result = _resolve(args.name, parser)
        text = format_record(result)
    else:
        result = [get_accelerator(n) for n in list_accelerators()]
        text = format_table(result)
    if args.brief:
        text = format_brief(result if isinstance(result, list) else [result])
    print(json.dumps(result, indent=2) if args.json else text)
    return result


if __name__ == "__main__":
    run_tool(main)
