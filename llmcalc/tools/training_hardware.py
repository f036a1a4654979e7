"""calc_training_time.py's accelerator as the cost model reads it: peaks, the matmul ceiling
(measured MAMF x the sustained-loop factor), achievable memory bandwidth, SMs, the attention
family, the host link, the scale-up and scale-out links (comm/collectives.py's network), and the
capacity. From --gpu (accelerator.resolve_accelerator, the one lookup; fields only, never a GPU
name), overridden by explicit figures. A fact the record lacks is asked for (a job past one
scale-up domain needs a scale-out bandwidth) or defaulted and said (Accelerator.STAND_INS)."""

from ..accelerator import GIB, HOST_LINK_EFFICIENCY, PCIE4_X16_GB_S
from .gpu import accelerator_record
from ..comm.collectives import (ALPHA_HOP_S, ALPHA_LAUNCH_S, NVLS_EFFICIENCY, PCIE_PEER_EFFICIENCY,
    PCIE_SERVER_GPUS, SCALE_OUT_EFFICIENCY, SCALE_UP_EFFICIENCY, build_net)
from ..train.hardware import TrainingHardware
from ..train.kernels import FP8_OVER_BF16_MAMF, MEM_BW_FRACTION

# Matmul ceiling of a GPU hardware.py has no MAMF measurement for: the H100 SXM's (794.5 / 989.4).
UNMEASURED_MATMUL_CEILING = 0.80

# what to pass instead of --gpu when no hardware.py sits beside the script
WITHOUT_TABLE = "pass --peak-tflops, --hbm-bandwidth-GBps and --intra-node-bw-GBps instead"


def host_link_reached_bytes_per_s(rec):
    """The host-to-GPU bandwidth ZeRO-Offload's copies reach per GPU: the record's host link line
    rate (hardware.py; the field the serving KV tier reads too) x HOST_LINK_EFFICIENCY; a record
    without one (TPU, Gaudi, Trainium, explicit figures) takes PCIe 4.0 x16."""
    line = rec.get("host_link_bandwidth_bytes_per_s") or PCIE4_X16_GB_S * 1e9
    return HOST_LINK_EFFICIENCY * line


def kernel_family(name, parser):
    """The kernel family of --gpu NAME's record ("hopper", "blackwell", "ampere" or None; the
    default accelerator's when NAME is None): whose measured kernel rates apply to it."""
    rec = accelerator_record(name or None, parser, without="pass --peak-tflops instead")
    return rec["kernel_family"]


def job_gpus_per_node(*, gpus_per_node, num_gpus):
    """GPUs of the job that share one scale-up domain. A job no larger than the domain sits inside
    it (ranks node-contiguous from 0): a 64-GPU job on an NVL72 rack is one NVLink domain of 64,
    not gcd(64, 72) = 8 GPUs per "node" (comm/collectives.py's group_placement tiles groups by
    gcd). A larger job is placed in equal blocks, the largest that divides the job and fits one
    domain (an assumption: Slurm places such jobs in equal segments, and the rank order cannot
    split a block): 128 or 512 GPUs of NVL72 racks run as NVLink domains of 64, not 8."""
    if not num_gpus or num_gpus <= gpus_per_node:
        return min(gpus_per_node, num_gpus) if num_gpus else gpus_per_node
    return max(d for d in range(1, gpus_per_node + 1) if num_gpus % d == 0)


def matmul_ceiling(rec, dt, *, override=None, stack=None):
    """(fraction of dt's peak a large matmul reaches, where that figure comes from):
    --matmul-ceiling, else the record's measured MAMF / peak (fp16 at the bf16 rate; fp8 from
    bf16 x the fp8/bf16 MAMF ratio), else UNMEASURED_MATMUL_CEILING; times the record's
    sustained-loop factor: the training stack's own on this GPU where the row lists one
    (sustained_matmul_fraction["stacks"]), else the GPU's."""
    if override is not None:
        return override, "--matmul-ceiling"
    peaks, amf = rec.get("peak_flops_per_s") or {}, rec.get("achievable_matmul_flops_per_s") or {}
    if amf.get(dt):
        ceiling, src = amf[dt] / peaks[dt], f"hardware.py measured {dt} MAMF"
    elif dt == "fp16" and amf.get("bf16") and peaks.get("bf16"):
        ceiling = amf["bf16"] / peaks["bf16"]
        src = "hardware.py measured bf16 MAMF (fp16 runs at the bf16 rate)"
    elif amf.get("bf16") and peaks.get("bf16"):
        ceiling = amf["bf16"] / peaks["bf16"] * (FP8_OVER_BF16_MAMF if dt == "fp8" else 1.0)
        src = ("hardware.py measured bf16 MAMF"
               + (" x the fp8/bf16 MAMF ratio" if dt == "fp8" else ""))
    else:
        ceiling = UNMEASURED_MATMUL_CEILING * (FP8_OVER_BF16_MAMF if dt == "fp8" else 1.0)
        src = (f"default {UNMEASURED_MATMUL_CEILING:.2f} (H100 SXM MAMF / peak; no measurement "
               "for this GPU)")
    sustained_rec = rec.get("sustained_matmul_fraction") or {}
    own = (sustained_rec.get("stacks") or {}).get(stack) or {}  # the stack's loop on this GPU
    key = "fp8" if dt == "fp8" else "bf16"
    if own.get(key):
        sustained_rec = own
    sustained = sustained_rec.get(key)
    if sustained:
        ceiling *= sustained
        src += f" x {sustained:.3f} sustained ({sustained_rec['source']})"
    return ceiling, src


def _default_note(rec, args):
    """Without --gpu: which figures the user passed and that the rest are the default GPU's."""
    given = [f for f, v in (("--peak-tflops", args.peak_tflops),
                            ("--hbm-bandwidth-GBps", args.hbm_bandwidth_GBps),
                            ("--intra-node-bw-GBps", args.intra_node_bw_GBps)) if v]
    if args.gpu or not given:
        return []
    return [f"no --gpu given: figures not passed ({', '.join(given)} given) come from the default, "
            f"{rec['full_name']} (hardware.py's {rec['name']})"
            + ("; no in-network reduction on your own link" if args.intra_node_bw_GBps else "")]


def _peaks(rec, args, parser):
    """(peak at --dtype, 16-bit peak for attention), FLOP/s."""
    peaks, dt = rec.get("peak_flops_per_s") or {}, args.dtype
    peak = args.peak_tflops * 1e12 if args.peak_tflops else peaks.get(dt)
    if not peak:
        parser.error(f"{rec.get('name')} has no {dt} peak in hardware.py; pass --peak-tflops or "
                     "another --dtype")
    peak16 = peaks.get("bf16") or peaks.get("fp16") or (peak / 2 if dt == "fp8" else peak)
    if args.peak_tflops and dt != "fp8":
        peak16 = peak
    return peak, peak16


def _memory_bandwidth(rec, args, parser):
    """The bandwidth memory-bound work reaches: the record's measured figure, else the peak (or
    --hbm-bandwidth-GBps) x MEM_BW_FRACTION."""
    bw = (args.hbm_bandwidth_GBps * 1e9 if args.hbm_bandwidth_GBps
          else rec.get("memory_bandwidth_bytes_per_s"))
    if not bw:
        parser.error(f"{rec.get('name')} has no memory bandwidth in hardware.py; pass "
                     "--hbm-bandwidth-GBps")
    ach = rec.get("achievable_memory_bandwidth_bytes_per_s")
    return ach if (ach and not args.hbm_bandwidth_GBps) else bw * MEM_BW_FRACTION


def _largest_job(args, counts):
    """The most GPUs the run costs on this accelerator: a search's list of counts, else --num-gpus,
    else tp x pp x cp (as main reads them)."""
    given = [c for c in (counts if counts is not None else [args.num_gpus]) if c]
    given = [max(c) if isinstance(c, (list, tuple)) else c for c in given]  # --num-gpus unparsed
    return max(given) if given else (args.tensor_parallel_size * args.pipeline_parallel_size
                                     * args.context_parallel_size)


def _links(rec, args, parser, notes, *, counts):
    """(scale-up bytes/s, scale-out bytes/s or None, scale-up efficiency, GPUs per scale-up domain).
    Scale-out is read only when the job spans more than one domain, and asked for there when the
    record has none, as calc_comm.py and calc_inference_latency.py ask."""
    name = rec.get("name")
    intra = (args.intra_node_bw_GBps * 1e9 if args.intra_node_bw_GBps
             else rec.get("scale_up_bandwidth_bytes_per_s"))
    inter = (args.inter_node_bw_GBps * 1e9 if args.inter_node_bw_GBps
             else rec.get("scale_out_bandwidth_bytes_per_s"))
    intra_eff, gpn_default = SCALE_UP_EFFICIENCY, rec.get("scale_up_domain_size")
    if not intra and rec.get("pcie_peer_bandwidth_bytes_per_s"):  # PCIe cards with peer-to-peer
        # NCCL's ring over the slot (calc_comm.py's model: comm/collectives.py's constants)
        intra, intra_eff = rec["pcie_peer_bandwidth_bytes_per_s"], PCIE_PEER_EFFICIENCY
        gpn_default = PCIE_SERVER_GPUS
        notes.append(f"{name}: no NVLink; peers over PCIe at {intra / 1e9:.1f} GB/s x "
                     f"{PCIE_PEER_EFFICIENCY:.3f} (NCCL's ring), servers of {PCIE_SERVER_GPUS} "
                     "GPUs")
    if not intra and inter:  # no NVLink and no PCIe peer-to-peer: peers over the NIC path
        intra = inter
        notes.append(f"{name} has no scale-up link in hardware.py: GPUs talk at its scale-out "
                     f"{inter / 1e9:g} GB/s (pass --intra-node-bw-GBps to change)")
    if not intra:
        parser.error(f"{name} has no scale-up bandwidth in hardware.py; pass --intra-node-bw-GBps")
    gpn = int(args.gpus_per_node or gpn_default or 8)
    n = _largest_job(args, counts)
    if n > gpn and not inter:
        parser.error(f"{n} GPUs span more than one scale-up domain of {gpn} and hardware.py "
                     f"lists no scale-out bandwidth for {name}; pass --inter-node-bw-GBps (GB/s "
                     "per GPU, one direction)")
    return intra, inter, intra_eff, gpn


def stand_in_notes(rec):
    """What stands in for a kernel fact the record lacks, in words the report prints as notes (SMs
    and the matmul ceiling are said in the assumptions line already)."""
    if rec.get("kernel_family"):
        return []
    fwd, bwd = rec["flash_attention_fraction"]
    return [f"{rec.get('name')}: hardware.py lists no kernel family (no measured attention rates): "
            f"attention kernels at FlashAttention-2's A100 fractions ({fwd:.3f} forward, {bwd:.3f} "
            "backward, of the 16-bit peak)"]


def resolve_hardware(args, parser, *, counts=None):
    """The GPU as the cost model needs it: peak at --dtype (and 16-bit for attention), matmul
    ceiling, achievable bandwidth, SMs, links, capacity. From --gpu (hardware.py), overridden by
    explicit figures; with neither, the built-in H100 SXM (said on stderr). `counts`: the GPU counts
    the run costs (a search's list; default --num-gpus), for whether a job leaves one domain."""
    rec = accelerator_record(args.gpu or None, parser, without=WITHOUT_TABLE)  # None: the default
    notes = _default_note(rec, args)
    own_link = not args.gpu and bool(args.intra_node_bw_GBps)  # not the default's NVSwitch
    peak, peak16 = _peaks(rec, args, parser)
    stack = getattr(args, "framework", None)
    ceiling, ceiling_src = matmul_ceiling(rec, args.dtype, override=args.matmul_ceiling,
                                          stack=stack)
    ceiling16 = (matmul_ceiling(rec, "bf16", override=args.matmul_ceiling, stack=stack)[0]
                 if args.dtype == "fp8" else ceiling)
    mem_bw = _memory_bandwidth(rec, args, parser)
    intra, inter, intra_eff, gpn = _links(rec, args, parser, notes, counts=counts)
    notes += stand_in_notes(rec)
    if not rec.get("host_link_bandwidth_bytes_per_s") and (
            args.offload or args.offload_params or args.offload_activations):
        notes.append(f"{rec.get('name')}: hardware.py lists no host link: the offload copies take "
                     f"PCIe 4.0 x16 ({PCIE4_X16_GB_S:.1f} GB/s per direction x "
                     f"{HOST_LINK_EFFICIENCY:g})")
    mem = args.gpu_memory_gib * GIB if args.gpu_memory_gib is not None else (
        rec.get("memory_usable_bytes") or rec.get("memory_bytes"))
    hw = TrainingHardware(
        name=rec.get("full_name") or rec.get("name"), default=not args.gpu, peak=peak,
        peak16=peak16, peak32=(rec.get("peak_flops_per_s") or {}).get("fp32"), peak_mfu=peak,
        matmul_ceiling=ceiling, matmul_ceiling16=ceiling16,
        ceiling_source=ceiling_src, mem_bw=mem_bw,
        # a custom peak on the default GPU: its SMs are unknown
        sms=rec.get("sms") if (args.gpu or args.peak_tflops is None) else None,
        flash=tuple(rec["flash_attention_fraction"]), family=rec.get("kernel_family"),
        pcie=host_link_reached_bytes_per_s(rec), memory_bytes=mem, gpus_per_node=gpn,
        link_bytes_per_s=(intra, inter))
    mesh = rec.get("scale_up_domain_size") if rec.get("scale_up_topology") == "mesh" else None
    net = build_net(intra_bytes_per_s=intra, inter_bytes_per_s=inter,
                    in_network_reduction=(bool(rec.get("scale_up_in_network_reduction"))
                                          and not own_link),
                    intra_efficiency=intra_eff, inter_efficiency=SCALE_OUT_EFFICIENCY,
                    nvls_efficiency=NVLS_EFFICIENCY, launch_s=ALPHA_LAUNCH_S,
                    intra_hop_ll_s=ALPHA_HOP_S["ll"]["intra"],
                    inter_hop_ll_s=ALPHA_HOP_S["ll"]["inter"],
                    mesh_domain=mesh)
    return hw, net, notes
