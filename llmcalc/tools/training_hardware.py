"""calc_training_time.py's accelerator as the cost model reads it: peaks, the matmul ceiling
(measured MAMF x the sustained-loop factor), achievable memory bandwidth, SMs, the attention
family, the host link, the scale-up and scale-out links (comm/collectives.py's network), and the
capacity. From --gpu (hardware.py), overridden by explicit figures."""

from ..accelerator import GIB, HOST_LINK_EFFICIENCY, PCIE4_X16_GB_S, default_accelerator
from ..cli import accelerator_record
from ..comm.collectives import (ALPHA_HOP_S, ALPHA_LAUNCH_S, NVLS_EFFICIENCY, PCIE_PEER_EFFICIENCY,
    PCIE_SERVER_GPUS, SCALE_OUT_EFFICIENCY, SCALE_UP_EFFICIENCY, build_net)
from ..train.kernels import FP8_OVER_BF16_MAMF, MEM_BW_FRACTION

# Matmul ceiling of a GPU hardware.py has no MAMF measurement for: the H100 SXM's (794.5 / 989.4).
UNMEASURED_MATMUL_CEILING = 0.80


def host_link_reached_bytes_per_s(rec):
    """The host-to-GPU bandwidth ZeRO-Offload's copies reach per GPU: the record's host link line
    rate (hardware.py; the field the serving KV tier reads too) x HOST_LINK_EFFICIENCY; a record
    without one (TPU, Gaudi, Trainium, explicit figures) takes PCIe 4.0 x16."""
    line = rec.get("host_link_bandwidth_bytes_per_s") or PCIE4_X16_GB_S * 1e9
    return HOST_LINK_EFFICIENCY * line


def kernel_family(name, parser):
    """The kernel family of --gpu NAME's record ("hopper", "blackwell", "ampere" or None; the
    default accelerator's when NAME is None): whose measured kernel rates apply to it."""
    rec = (accelerator_record(name, parser, without="pass --peak-tflops instead") if name
           else default_accelerator())
    return rec["kernel_family"]


def job_gpus_per_node(*, gpus_per_node, num_gpus):
    """GPUs of the job that share one scale-up domain. A job no larger than the domain sits inside
    it (ranks node-contiguous from 0): a 64-GPU job on an NVL72 rack is one NVLink domain of 64,
    not gcd(64, 72) = 8 GPUs per "node" (comm/collectives.py's group_placement tiles groups by gcd)."""
    return min(gpus_per_node, num_gpus) if num_gpus else gpus_per_node


def resolve_hardware(args, parser):
    """The GPU as the cost model needs it: peak at --dtype (and 16-bit for attention), matmul
    ceiling, achievable bandwidth, SMs, links, capacity. From --gpu (hardware.py), overridden by
    explicit figures; with neither, the built-in H100 SXM (said on stderr)."""
    notes = []
    if args.gpu:
        rec = accelerator_record(args.gpu, parser, without="pass --peak-tflops, "
                                 "--hbm-bandwidth-GBps and --intra-node-bw-GBps instead")
    else:  # the default accelerator: exactly the record --gpu h100-sxm reads
        rec = default_accelerator()
        given = [f for f, v in (("--peak-tflops", args.peak_tflops), ("--hbm-bandwidth-GBps", args.hbm_bandwidth_GBps),
                                ("--intra-node-bw-GBps", args.intra_node_bw_GBps)) if v]
        if given:
            notes.append(f"no --gpu given: figures not passed ({', '.join(given)} given) come from the default, "
                         f"{rec['full_name']} (hardware.py's {rec['name']})"
                         + ("; no in-network reduction on your own link" if args.intra_node_bw_GBps else ""))
    base = rec
    own_link = not args.gpu and bool(args.intra_node_bw_GBps)  # not the default's NVSwitch
    peaks = base.get("peak_flops_per_s") or {}
    dt = args.dtype
    peak = args.peak_tflops * 1e12 if args.peak_tflops else peaks.get(dt)
    if not peak:
        parser.error(f"{base.get('name')} has no {dt} peak in hardware.py; pass --peak-tflops or another --dtype")
    peak16 = peaks.get("bf16") or peaks.get("fp16") or (peak / 2 if dt == "fp8" else peak)
    if args.peak_tflops and dt != "fp8":
        peak16 = peak
    amf = (base.get("achievable_matmul_flops_per_s") or {})

    def ceiling_for(dt):
        """(fraction of dt's peak a large matmul reaches, where that figure comes from)."""
        if args.matmul_ceiling is not None:
            return args.matmul_ceiling, "--matmul-ceiling"
        if amf.get(dt):
            ceiling, src = amf[dt] / peaks[dt], f"hardware.py measured {dt} MAMF"
        elif dt == "fp16" and amf.get("bf16") and peaks.get("bf16"):
            ceiling, src = amf["bf16"] / peaks["bf16"], "hardware.py measured bf16 MAMF (fp16 runs at the bf16 rate)"
        elif amf.get("bf16") and peaks.get("bf16"):
            ceiling = amf["bf16"] / peaks["bf16"] * (FP8_OVER_BF16_MAMF if dt == "fp8" else 1.0)
            src = "hardware.py measured bf16 MAMF" + (" x the fp8/bf16 MAMF ratio" if dt == "fp8" else "")
        else:
            ceiling = UNMEASURED_MATMUL_CEILING * (FP8_OVER_BF16_MAMF if dt == "fp8" else 1.0)
            src = f"default {UNMEASURED_MATMUL_CEILING:.2f} (H100 SXM MAMF / peak; no measurement for this GPU)"
        sustained_rec = base.get("sustained_matmul_fraction") or {}
        sustained = sustained_rec.get("fp8" if dt == "fp8" else "bf16")
        if sustained:
            ceiling *= sustained
            src += f" x {sustained:.3f} sustained ({sustained_rec['source']})"
        return ceiling, src
    ceiling, ceiling_src = ceiling_for(dt)
    ceiling16 = ceiling_for("bf16")[0] if dt == "fp8" else ceiling
    bw = args.hbm_bandwidth_GBps * 1e9 if args.hbm_bandwidth_GBps else base.get("memory_bandwidth_bytes_per_s")
    if not bw:
        parser.error(f"{base.get('name')} has no memory bandwidth in hardware.py; pass --hbm-bandwidth-GBps")
    ach = base.get("achievable_memory_bandwidth_bytes_per_s")
    mem_bw = ach if (ach and not args.hbm_bandwidth_GBps) else bw * MEM_BW_FRACTION
    intra = args.intra_node_bw_GBps * 1e9 if args.intra_node_bw_GBps else base.get("scale_up_bandwidth_bytes_per_s")
    inter = args.inter_node_bw_GBps * 1e9 if args.inter_node_bw_GBps else base.get("scale_out_bandwidth_bytes_per_s")
    intra_eff, gpn_default = SCALE_UP_EFFICIENCY, base.get("scale_up_domain_size")
    if not intra and base.get("pcie_peer_bandwidth_bytes_per_s"):  # PCIe cards with peer-to-peer
        # NCCL's ring over the slot (calc_comm.py's model: comm/collectives.py's constants)
        intra, intra_eff, gpn_default = base["pcie_peer_bandwidth_bytes_per_s"], PCIE_PEER_EFFICIENCY, PCIE_SERVER_GPUS
        notes.append(f"{base.get('name')}: no NVLink; peers over PCIe at {intra / 1e9:.1f} GB/s x "
                     f"{PCIE_PEER_EFFICIENCY:.3f} (NCCL's ring), servers of {PCIE_SERVER_GPUS} GPUs")
    if not intra and inter:  # no NVLink and no PCIe peer-to-peer: GPUs reach each other over the NIC path
        intra = inter
        notes.append(f"{base.get('name')} has no scale-up link in hardware.py: GPUs talk at its scale-out "
                     f"{inter / 1e9:g} GB/s (pass --intra-node-bw-GBps to change)")
    if not intra:
        parser.error(f"{base.get('name')} has no scale-up bandwidth in hardware.py; pass --intra-node-bw-GBps")
    gpn = args.gpus_per_node or gpn_default or 8
    if args.gpu_memory_gib is not None:
        mem = args.gpu_memory_gib * GIB
    else:
        mem = base.get("memory_usable_bytes") or base.get("memory_bytes")
    hw = {"name": base.get("full_name") or base.get("name"), "default": not args.gpu, "peak": peak, "peak16": peak16, "peak_mfu": peak,
          "matmul_ceiling": ceiling, "matmul_ceiling16": ceiling16, "ceiling_source": ceiling_src, "mem_bw": mem_bw,
          "sms": base.get("sms") if (args.gpu or args.peak_tflops is None) else None,  # a custom peak: unknown
          "flash": tuple(base["flash_attention_fraction"]), "family": base.get("kernel_family"), "pcie": host_link_reached_bytes_per_s(base), "memory_bytes": mem,
          "gpus_per_node": int(gpn), "link_bytes_per_s": (intra, inter or intra / 8)}
    mesh = base.get("scale_up_domain_size") if base.get("scale_up_topology") == "mesh" else None
    net = build_net(intra_bytes_per_s=intra, inter_bytes_per_s=inter or intra / 8,
                    in_network_reduction=bool(base.get("scale_up_in_network_reduction")) and not own_link,
                    intra_efficiency=intra_eff, inter_efficiency=SCALE_OUT_EFFICIENCY,
                    nvls_efficiency=NVLS_EFFICIENCY, launch_s=ALPHA_LAUNCH_S,
                    intra_hop_ll_s=ALPHA_HOP_S["ll"]["intra"], inter_hop_ll_s=ALPHA_HOP_S["ll"]["inter"],
                    mesh_domain=mesh)
    return hw, net, notes
