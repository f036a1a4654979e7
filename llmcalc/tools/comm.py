"""Collective communication time on GPUs: one collective (nccl-tests terms), or one training step.

Single collective: the alpha-beta model, time = alpha + bytes_on_the_busiest_link / bandwidth, for
stated algorithms, reported as nccl-tests reports it: time, algorithm bandwidth (algbw = size/time)
and bus bandwidth (busbw = algbw x factor: all_reduce 2(n-1)/n; all_gather, reduce_scatter,
alltoall (n-1)/n; broadcast, reduce, sendrecv 1), and the regime (latency- or bandwidth-bound).
`--size` follows nccl-tests: the whole buffer (all_gather: the gathered output; reduce_scatter: the
input; alltoall: one rank's send buffer).

Algorithms (the default `auto` takes the fastest of those NCCL itself has for the case):
  ring          2(n-1) steps for all_reduce, n-1 for all_gather/reduce_scatter, a chain for
                broadcast/reduce. Across nodes the rings run node by node, one per NIC, so the
                per-rank bandwidth is min(scale-up bw, gpus_per_node x scale-out bw per GPU).
  tree          all_reduce only: chain inside a node, binary tree across nodes; latency grows with
                log2(nodes), every rank moves 2 x size.
  nvls          all_reduce inside one scale-up domain whose switch reduces (NVLink SHARP, H100+):
                each GPU sends and receives the size once.
  hierarchical  groups spanning nodes: reduce-scatter inside the node (or NVLS), all-reduce of the
                1/gpus_per_node shard across nodes on each GPU's own NIC, all-gather inside the node;
                chunks stream through the levels, so the slower level sets the bandwidth term and
                the latencies add. In `auto` only with NVLS inside the node (NCCL's NVLSTree).
Protocols: each ring/tree/hierarchical algorithm is costed with NCCL's low-latency protocol (LL:
small latency, 1/4 of the bandwidth) and its Simple protocol (full bandwidth, larger per-hop
latency), and the faster is taken; NVLS is Simple only.

Training step (--train): bytes and time per step, per GPU, of each parallelism's collectives for
a model (same model flags as calc_transformer_params.py) under a tp/pp/dp/ep/cp layout, Megatron
rank order (tp innermost, then cp, ep inside dp, pp outermost).

Symbols: b micro-batch, s sequence, h hidden, L layers, a heads, kv kv-heads, d head dim, E experts,
k top-k, tp pp dp ep cp parallel sizes, m micro-batches per step (gradient accumulation), n GPUs in a
group, G GPUs per node in the group, N nodes.

Assumptions: bandwidths are per GPU, per direction; links are full duplex; no congestion from
other traffic; sizes are bytes (KB/MB/GB decimal, KiB/MiB/GiB binary, bare K/M/G binary as in
nccl-tests' -b/-e). Mid-size messages (about 1-64 MB) come out faster than measured: NCCL ramps
channels and uses an LL128 protocol there, which this model leaves out (see VALIDATION.md).

Examples:
  python calc_comm.py --op all_reduce --size 8GiB --num-gpus 8 --gpu H100
  python calc_comm.py --op all_reduce --num-gpus 8 --gpu A100 --sweep
  python calc_comm.py --op all_gather --size 256MiB --num-gpus 64 --gpus-per-node 8 \\
      --intra-node-bw-GBps 450 --inter-node-bw-GBps 50 --json
  python calc_comm.py --op alltoall --size 1GB --num-gpus 16 --gpu H100 --algo ring
  python calc_comm.py --train --gpu H100 -l 80 -hs 8192 -a 64 --num-kv-heads 8 \\
      --ffn-hidden-size 28672 --swiglu -v 128256 --tp 8 --pp 4 --dp 8 --sequence-parallel \\
      --zero-stage 1 --micro-batch-size 1 --gradient-accumulation-steps 16 -s 8192

References:
  Thakur, Rabenseifner & Gropp 2005, "Optimization of Collective Communication Operations in
    MPICH" (alpha-beta costs of ring and tree collectives).
  Patarasuk & Yuan 2009, "Bandwidth optimal all-reduce algorithms for clusters of workstations".
  NVIDIA nccl-tests doc/PERFORMANCE.md (algbw, busbw and their factors).
  NVIDIA NCCL src/graph/tuning.cc (per-hop latencies, protocol bandwidth fractions).
  Shoeybi et al. 2019, "Megatron-LM", sec. 3 (2 all-reduces per layer forward, 2 backward);
  Korthikanti et al. 2022, "Reducing Activation Recomputation", sec. 4.2.2 (sequence parallel:
    all-gather + reduce-scatter instead); Narayanan et al. 2021, sec. 2.2 and 4.1 (pipeline p2p);
  Rajbhandari et al. 2020, "ZeRO", sec. 7 (communication volume of stages 1-3);
  Lepikhin et al. 2020, "GShard" (MoE all-to-all dispatch and combine);
  Liu et al. 2023, "Ring Attention" (context parallel K/V ring exchange).
"""

import argparse
import math
import sys

from ..accelerator import resolve_accelerator
from ..cli import (OneLineErrorParser, add_model_args, add_output_args, bounded_int, calc_errors,
    brief_number, check_ranges, finite_float, parse_tool_args, print_warnings, ranges_epilog,
    run_tool)
from ..comm.collectives import (ALPHA_HOP_S, ALPHA_LAUNCH_S, NVLS_EFFICIENCY,
    PCIE_PEER_EFFICIENCY, PCIE_SERVER_GPUS, SCALE_OUT_EFFICIENCY, SCALE_UP_EFFICIENCY, build_net,
    bus_bandwidth_factor, collective_time_s, group_placement)
from ..comm.training_step import training_step_collectives
from ..model.formulas import param_breakdown
from ..model.kinds import layer_groups
from ..model.spec import resolve_model_spec, spec_summary


DEFAULT_NUM_GPUS = 8

# The range of each script flag (argparse dest: (lo, hi), both inclusive): far past any real
# collective (1e6 GB/s ~ 1000 x NVLink5 per GPU; 1e7 GPUs ~ 50 x today's largest cluster; 1 s of
# latency per hop), and tight enough that no time overflows to inf, divides by ~0 or turns
# negative. Sizes (--size, --min-size, --max-size) are 1 B to MAX_SIZE_BYTES; a sweep's
# --step-factor is at least 1.01 (at most ~4200 rows from 1 B to 1 EiB). The model flags have
# their caps in model/spec.py.
MAX_SIZE_BYTES = 2 ** 60  # 1 EiB
FLAG_RANGES = {
    "num_gpus": (1, 10 ** 7), "gpus_per_node": (1, 10 ** 7), "step_factor": (1.01, 1e6),
    "intra_bw": (1e-3, 1e6), "inter_bw": (1e-3, 1e6), "intra_node_efficiency": (1e-3, 1),
    "inter_node_efficiency": (1e-3, 1), "nvls_efficiency": (1e-3, 1), "launch_latency_us": (0, 1e6),
    "intra_node_latency_us": (0, 1e6), "inter_node_latency_us": (0, 1e6), "tp": (1, 10 ** 7),
    "pp": (1, 10 ** 7), "dp": (1, 10 ** 7), "ep": (1, 10 ** 7), "cp": (1, 10 ** 7),
    "micro_batch_size": (1, 10 ** 9), "gradient_accumulation_steps": (1, 10 ** 9),
    "sequence_length": (1, 10 ** 9)}

OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv")
OP_SPELLINGS = {"a2a": "alltoall", "send": "sendrecv", "recv": "sendrecv", "p2p": "sendrecv"}


def op_name(text):
    """--op as NCCL, nccl-tests or torch.distributed spell it (allreduce, all_reduce_perf,
    ncclAllReduce, all_to_all, send): the OPS name; anything else is left for argparse's choices
    to refuse."""
    key = str(text).strip().lower().replace("-", "").replace("_", "")
    key = key.removeprefix("nccl").removesuffix("perf")
    by_key = {op.replace("_", ""): op for op in OPS}
    return by_key.get(key) or OP_SPELLINGS.get(key) or text
ALGOS = ("auto", "ring", "tree", "nvls", "hierarchical")
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40,
          "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_size_bytes(text):
    """'256MiB' / '1GB' / '4e9' / '8G' -> bytes (int). KB/MB/GB decimal, KiB/MiB/GiB binary, bare
    K/M/G binary (nccl-tests' -b/-e convention). Raises ValueError with a one-line message."""
    t = str(text).strip().replace("_", "")
    i = len(t)
    while i > 0 and t[i - 1].isalpha():
        i -= 1
    num, unit = t[:i].strip(), t[i:].lower()
    if unit not in _UNITS or not num:
        raise ValueError(f"cannot read size {text!r}: use bytes or a unit such as 256MiB, 1GB, 4e9, 8G")
    try:
        value = float(num) * _UNITS[unit]
    except ValueError:
        raise ValueError(f"cannot read size {text!r}: use bytes or a unit such as 256MiB, 1GB, 4e9")
    if not math.isfinite(value):
        raise ValueError(f"size {text!r} is not finite")
    return int(round(value))


# ---------------------------------------------------------------------------------------------
# Hardware and network description
# ---------------------------------------------------------------------------------------------

# what to pass instead of --gpu when no hardware.py sits beside calc_comm.py
NO_TABLE = ("hardware.py was not found beside calc_comm.py; instead of --gpu pass "
            "--intra-node-bw-GBps (and --inter-node-bw-GBps, --gpus-per-node, "
            "--in-network-reduction) explicitly")


# ---------------------------------------------------------------------------------------------
# Output helpers
# ---------------------------------------------------------------------------------------------

def human_bytes(n):
    """8589934592 -> '8.00 GiB' (binary units, as nccl-tests sizes are powers of two)."""
    for div, unit in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if n >= div:
            return f"{n / div:.2f} {unit}"
    return f"{int(n)} B"


def human_time(t):
    """Seconds -> 'us'/'ms'/'s' string."""
    if t < 1e-3:
        return f"{t * 1e6:.2f} us"
    if t < 1:
        return f"{t * 1e3:.3f} ms"
    return f"{t:.3f} s"


def _on_gpu(inputs):
    """' on h100-sxm', and for the default accelerator what it is and how to change it."""
    return f" on {inputs['gpu']}" + (" (the default GPU; --gpu NAME for another)" if inputs.get("gpu_default") else "")


# What the published multi-node rows say of this model (VALIDATION.md, calc_comm.py): the one
# 2-node H100 all-reduce curve (oracle-japan/ocitutorials run-nccltests-h100.md, 2 x BM.GPU.H100.8,
# NCCL 2.21.5 NVLSTree) measured 446-465 GB/s busbw at 1-16 GiB, where this model gives 508-514
# (+10.7% to +13.8%); the 2-node A100 curve (Azure NDmV4) set SCALE_OUT_EFFICIENCY, so it judges
# nothing. No published row beyond two nodes.
MULTI_NODE_CAVEAT = ("across nodes this model is checked against two published 2-node all-reduce "
                     "curves only: 2 x 8 H100 (OCI, NCCL 2.21.5 NVLSTree) measured 446-465 GB/s "
                     "busbw at 1-16 GiB where it gives 508-514 (+11% to +14%), and the 2 x 8 A100 "
                     "one set its inter-node efficiency; read multi-node bandwidth as an upper "
                     "bound (nothing published beyond 2 nodes)")


def caveats(inputs):
    """The caveats a result carries: MULTI_NODE_CAVEAT when its group spans nodes."""
    return [MULTI_NODE_CAVEAT] if inputs["num_nodes"] > 1 else []


def format_collective(res):
    """Human report of one collective."""
    i = res["inputs"]
    lines = [f"{i['op']} of {human_bytes(i['size_bytes'])} ({i['size_bytes']:,} B) over "
             f"{i['num_gpus']} GPUs ({i['num_nodes']} node(s) x {i['gpus_per_node_in_group']})"
             + _on_gpu(i),
             f"  {'time':<14}{human_time(res['time_s'])}",
             f"  {'algbw':<14}{res['algbw_bytes_per_s'] / 1e9:.2f} GB/s",
             f"  {'busbw':<14}{res['busbw_bytes_per_s'] / 1e9:.2f} GB/s"
             f"   (factor {res['bus_bandwidth_factor']:.4g})",
             f"  {'algorithm':<14}{res['algorithm']} / {res['protocol']} protocol, {res['regime']}"
             f" (latency {human_time(res['latency_s'])} + transfer "
             f"{human_time(res['bandwidth_time_s'])})"]
    if len(res["algorithm_times_s"]) > 1:
        alts = ", ".join(f"{a} {human_time(t)}" for a, t in res["algorithm_times_s"].items())
        lines.append(f"  {'algorithms':<14}{alts}")
    lines += [f"caveat: {c}" for c in res["caveats"]]
    lines.append(res["assumptions"])
    return "\n".join(lines)


def format_sweep(res):
    """nccl-tests-like table over sizes."""
    i = res["inputs"]
    lines = [f"# {i['op']} over {i['num_gpus']} GPUs ({i['num_nodes']} node(s) x "
             f"{i['gpus_per_node_in_group']})" + _on_gpu(i),
             f"#{'size (B)':>14}{'time (us)':>13}{'algbw (GB/s)':>14}{'busbw (GB/s)':>14}"
             f"  {'algorithm':<20}regime"]
    for r in res["rows"]:
        lines.append(f"{r['size_bytes']:>15}{r['time_s'] * 1e6:>13.2f}"
                     f"{r['algbw_bytes_per_s'] / 1e9:>14.2f}{r['busbw_bytes_per_s'] / 1e9:>14.2f}"
                     f"  {r['algorithm'] + '/' + r['protocol']:<20}{r['regime']}")
    lines += [f"# caveat: {c}" for c in res["caveats"]]
    lines.append(res["assumptions"])
    return "\n".join(lines)


def format_training(res):
    """Per-parallelism table of one training step's collectives."""
    i = res["inputs"]
    lines = [f"One training step per GPU: tp {i['tp']} pp {i['pp']} dp {i['dp']} ep {i['ep']} "
             f"cp {i['cp']} ({i['num_gpus']} GPUs, {i['gpus_per_node']} per node), "
             f"SP {'on' if i['sequence_parallel'] else 'off'}, ZeRO {i['zero_stage']}, "
             f"b {i['micro_batch_size']} x m {i['gradient_accumulation_steps']}, s {i['sequence_length']}"
             + _on_gpu(i),
             f"Model: {res['model']['described']}",
             f"{'par':<13}{'op':<15}{'group':>10}{'size':>12}{'calls':>8}{'bytes/step':>12}"
             f"{'time/step':>12}{'% time':>8}  overlap"]
    lines[1:1] = [f"WARNING: {w}" for w in res.get("warnings", ())]
    total = res["total_time_s"] or 1.0
    for r in res["rows"]:
        grp = f"{r['group_size']}({r['gpus_per_node_in_group']}x{r['num_nodes']})"
        lines.append(f"{r['parallelism']:<13}{r['op']:<15}{grp:>10}{human_bytes(r['size_bytes']):>12}"
                     f"{r['calls_per_step']:>8}{human_bytes(r['bytes_per_step']):>12}"
                     f"{human_time(r['time_s']):>12}{100 * r['time_s'] / total:>7.1f}%  "
                     f"{'yes' if r['overlappable'] else 'NO'}: {r['note']}")
    if not res["rows"]:
        lines.append("(no collectives: every parallel size is 1)")
    lines.append("-" * 90)
    lines.append(f"{'Total':<28}{human_bytes(res['total_bytes_per_step']):>40}"
                 f"{human_time(res['total_time_s']):>12}")
    lines.append(f"{'Not overlappable (exposed)':<28}{'':>40}{human_time(res['exposed_time_s']):>12}")
    lines.append(res["assumptions"])
    return "\n".join(lines)


def build_parser():
    parser = OneLineErrorParser(description=__doc__)
    c = parser.add_argument_group("collective")
    c.add_argument("--op", choices=OPS, type=op_name, default="all_reduce",
                   help="collective, spelled as nccl-tests (default all_reduce); allreduce, "
                   "all_reduce_perf, ncclAllReduce, all-to-all, send/recv spellings accepted")
    c.add_argument("--size", default=None,
                   help="bytes: 256MiB, 1GB, 4e9, 8G (nccl-tests size); without it, a --sweep")
    c.add_argument("--num-gpus", type=bounded_int, default=None,
                   help="n, GPUs in the group (default 8; --train: tp x pp x dp x cp)")
    c.add_argument("--algo", choices=ALGOS, default="auto", help="algorithm (default auto)")
    c.add_argument("--sweep", action="store_true", help="table over sizes, like nccl-tests")
    c.add_argument("--min-size", default="8", help="sweep start (default 8 B)")
    c.add_argument("--max-size", default="8G", help="sweep end (default 8 GiB)")
    c.add_argument("--step-factor", type=finite_float, default=2.0, help="sweep multiplier (default 2)")
    hw = parser.add_argument_group("hardware (explicit flags override --gpu)")
    hw.add_argument("--gpu", default=None, help="accelerator name looked up in hardware.py")
    hw.add_argument("--gpus-per-node", type=bounded_int, default=None,
                    help="GPUs per scale-up domain (default: --gpu's domain size, else 8)")
    hw.add_argument("--intra-node-bw-GBps", "--tp-bandwidth-gbps", dest="intra_bw", type=finite_float, default=None,
                    help="scale-up bandwidth per GPU per direction, GB/s (H100 NVLink4: 450)")
    hw.add_argument("--inter-node-bw-GBps", "--scale-out-gbps", dest="inter_bw", type=finite_float, default=None,
                    help="scale-out bandwidth per GPU per direction, GB/s (400 Gb/s NIC: 50)")
    hw.add_argument("--in-network-reduction", action=argparse.BooleanOptionalAction, default=None,
                    help="the scale-up switch reduces (NVLink SHARP / NVLS)")
    hw.add_argument("--intra-node-efficiency", type=finite_float, default=None,
                    help=f"ring/tree fraction of the scale-up line rate (default {SCALE_UP_EFFICIENCY}; "
                         f"{PCIE_PEER_EFFICIENCY:.3f} over PCIe peers)")
    hw.add_argument("--inter-node-efficiency", type=finite_float, default=SCALE_OUT_EFFICIENCY,
                    help=f"fraction of the scale-out line rate (default {SCALE_OUT_EFFICIENCY})")
    hw.add_argument("--nvls-efficiency", type=finite_float, default=NVLS_EFFICIENCY,
                    help=f"NVLS all-reduce algbw / line rate (default {NVLS_EFFICIENCY})")
    hw.add_argument("--launch-latency-us", type=finite_float, default=ALPHA_LAUNCH_S * 1e6,
                    help=f"fixed cost per call (default {ALPHA_LAUNCH_S * 1e6:g} us)")
    hw.add_argument("--intra-node-latency-us", type=finite_float, default=ALPHA_HOP_S["ll"]["intra"] * 1e6,
                    help="LL per-hop latency over NVLink (default 0.6 us; Simple scales with it)")
    hw.add_argument("--inter-node-latency-us", type=finite_float, default=ALPHA_HOP_S["ll"]["inter"] * 1e6,
                    help="LL per-hop latency over the network (default 2.7 us; Simple scales)")
    t = parser.add_argument_group("training step (--train)")
    t.add_argument("--train", action="store_true", help="collectives of one training step")
    t.add_argument("--tensor-parallel-size", "--tp", "-tp", dest="tp", type=bounded_int, default=1)
    t.add_argument("--pipeline-parallel-size", "--pp", "-pp", dest="pp", type=bounded_int, default=1)
    t.add_argument("--data-parallel-size", "--dp", "-dp", dest="dp", type=bounded_int, default=None,
                   help="dp (default: --num-gpus / (tp x pp x cp), else 1)")
    t.add_argument("--expert-parallel-size", "--ep", "-ep", "--expert-parallelism", dest="ep", type=bounded_int, default=1,
                   help="ep, carved out of dp x cp for the expert layers")
    t.add_argument("--context-parallel-size", "--cp", "-cp", dest="cp", type=bounded_int, default=1)
    t.add_argument("--sequence-parallel", "-sp", action="store_true", help="Megatron sequence parallel")
    t.add_argument("--zero-stage", "-z", type=bounded_int, default=0, choices=(0, 1, 2, 3),
                   help="0 all-reduce; 1/2 reduce-scatter + all-gather; 3 also per micro-batch")
    t.add_argument("--micro-batch-size", type=bounded_int, default=1, help="b (default 1)")
    t.add_argument("--gradient-accumulation-steps", type=bounded_int, default=1,
                   help="m, micro-batches per step per pipeline (default 1)")
    t.add_argument("--sequence-length", "-s", type=bounded_int, default=2048, help="s (default 2048)")
    t.add_argument("--dtype", choices=tuple(DTYPE_BYTES), default="bf16",
                   help="activations and gathered parameters (default bf16)")
    t.add_argument("--grad-reduce-dtype", choices=tuple(DTYPE_BYTES), default="fp32",
                   help="gradient reduction (default fp32, Megatron's bf16 default)")
    add_model_args(parser)
    add_output_args(parser)
    # built only for --help
    parser.epilog = lambda: ranges_epilog(parser, FLAG_RANGES) + "\nsizes: 1 B to 2^60 B (1 EiB)"
    return parser


def size_arg(args, parser, name):
    """Bytes of --size/--min-size/--max-size, or a one-line parser.error (1 B .. MAX_SIZE_BYTES)."""
    text = getattr(args, name)
    try:
        v = parse_size_bytes(text)
    except ValueError as exc:
        parser.error(str(exc))
    if v <= 0:
        parser.error(f"--{name.replace('_', '-')} must be positive, got {text}")
    if v > MAX_SIZE_BYTES:
        parser.error(f"--{name.replace('_', '-')} must be between 1 B and 2^60 B (1 EiB), got {text}")
    return v


def resolve_hardware(args, parser):
    """Bandwidths, domain size and NVLS from --gpu, overridden by explicit flags; and the notes to
    print once every check has passed (an exit-2 error stays one line)."""
    notes = []
    with calc_errors(parser):  # no --gpu: the default accelerator, the record of --gpu h100-sxm
        rec = resolve_accelerator(args.gpu, missing_table=NO_TABLE)
    if args.gpu is None:
        given = [f for f, v in (("--intra-node-bw-GBps", args.intra_bw), ("--inter-node-bw-GBps", args.inter_bw),
                                ("--gpus-per-node", args.gpus_per_node),
                                ("--in-network-reduction", args.in_network_reduction)) if v is not None]
        if given:
            notes.append(f"no --gpu given: figures not passed ({', '.join(given)} given) come from the default, "
                         f"{rec['full_name']} (hardware.py's {rec['name']})"
                         + ("; no in-network reduction on your own link (--in-network-reduction to add it)"
                            if args.intra_bw is not None and args.in_network_reduction is None else ""))
    intra = args.intra_bw * 1e9 if args.intra_bw is not None else rec.get("scale_up_bandwidth_bytes_per_s")
    inter = args.inter_bw * 1e9 if args.inter_bw is not None else rec.get("scale_out_bandwidth_bytes_per_s")
    gpn = args.gpus_per_node or rec.get("scale_up_domain_size") or 8
    own_link = args.gpu is None and args.intra_bw is not None  # not the default's NVSwitch
    nvls = (args.in_network_reduction if args.in_network_reduction is not None
            else not own_link and bool(rec.get("scale_up_in_network_reduction", False)))
    eff = SCALE_UP_EFFICIENCY
    if not intra and rec.get("pcie_peer_bandwidth_bytes_per_s"):  # PCIe cards with peer-to-peer
        intra, eff = rec["pcie_peer_bandwidth_bytes_per_s"], PCIE_PEER_EFFICIENCY
        gpn = args.gpus_per_node or PCIE_SERVER_GPUS
        notes.append(f"{rec['name']}: no NVLink; peers over PCIe at {intra / 1e9:.1f} GB/s x {eff:.3f}, "
                     f"servers of {gpn} GPUs")
    if args.intra_node_efficiency is not None:
        eff = args.intra_node_efficiency
    if not intra:
        parser.error(f"the record of --gpu {args.gpu} has no scale-up bandwidth; pass --intra-node-bw-GBps")
    mesh = (rec.get("scale_up_domain_size") if rec.get("scale_up_topology") == "mesh"
            and args.intra_bw is None else None)
    return {"gpu": rec["name"], "gpu_default": args.gpu is None, "intra": float(intra),
            "inter": float(inter) if inter else None, "gpus_per_node": int(gpn), "nvls": nvls,
            "mesh_domain": mesh, "intra_efficiency": eff}, notes


def validate(args, parser):
    """One-line errors (exit 2) for every rule, before any computing. Returns (GPUs in the group,
    whether a sweep runs) for one collective (--num-gpus or 8; a sweep when no --size is given);
    (None, False) with --train. `args` is left as parsed."""
    for name in ("intra_bw", "inter_bw"):
        v = getattr(args, name)
        if v is not None and not v > 0:
            parser.error(f"--{name.replace('_bw', '-node-bw-GBps').replace('_', '-')} must be "
                         f"positive, got {v}")
    for name in ("launch_latency_us", "intra_node_latency_us", "inter_node_latency_us"):
        if not getattr(args, name) >= 0:
            parser.error(f"--{name.replace('_', '-')} must not be negative")
    if args.gpus_per_node is not None and args.gpus_per_node < 1:
        parser.error(f"--gpus-per-node must be at least 1, got {args.gpus_per_node}")
    if args.num_gpus is not None and args.num_gpus < 1:
        parser.error(f"--num-gpus must be at least 1, got {args.num_gpus}")
    if args.train:
        for name in ("tp", "pp", "dp", "ep", "cp", "micro_batch_size", "gradient_accumulation_steps",
                     "sequence_length"):
            if getattr(args, name) is not None and getattr(args, name) < 1:
                parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    check_ranges(args, parser, FLAG_RANGES)
    if args.train:
        if args.size or args.sweep:
            parser.error("--train computes a whole step; drop --size/--sweep")
        return None, False
    if args.hf_model_name_or_path is not None:  # never a silent fallback: the model would be unused
        parser.error("--hf_model_name_or_path describes the model of a training step: add --train "
                     "(one collective takes --op and --size, not a model)")
    n = DEFAULT_NUM_GPUS if args.num_gpus is None else args.num_gpus
    sweep = args.sweep or args.size is None
    if n < 2:
        parser.error(f"{args.op} needs a group of at least 2 GPUs, got --num-gpus {n}")
    if sweep:
        if size_arg(args, parser, "min_size") > size_arg(args, parser, "max_size"):
            parser.error("--min-size is larger than --max-size")
    else:
        size_arg(args, parser, "size")
    return n, sweep


def validate_placement(parser, *, n, gpus_per_node, inter, what):
    """A group spanning nodes must fill whole nodes and needs a scale-out bandwidth."""
    if n > gpus_per_node:
        if n % gpus_per_node:
            parser.error(f"{what} {n} GPUs span nodes but is not a multiple of --gpus-per-node "
                         f"{gpus_per_node}")
        if not inter:
            parser.error(f"{what} {n} GPUs span nodes of {gpus_per_node}: give --inter-node-bw-GBps "
                         "(or a --gpu whose record has a scale-out bandwidth)")


def validate_algo(parser, *, algo, op, n, gpus_per_node, nvls):
    """The explicit --algo must exist for this op and placement."""
    spans = n > gpus_per_node
    if algo == "tree" and op != "all_reduce":
        parser.error(f"--algo tree is modelled for all_reduce only, not {op}")
    if algo == "nvls":
        if op != "all_reduce":
            parser.error(f"--algo nvls is modelled for all_reduce only, not {op}")
        if not nvls:
            parser.error("--algo nvls needs a switch that reduces (--in-network-reduction)")
        if spans:
            parser.error("--algo nvls works inside one scale-up domain; across nodes use hierarchical")
    if algo == "hierarchical":
        if op not in ("all_reduce", "all_gather", "reduce_scatter"):
            parser.error(f"--algo hierarchical is modelled for all_reduce/all_gather/reduce_scatter, not {op}")
        if not spans or gpus_per_node < 2:
            parser.error("--algo hierarchical needs a group spanning nodes with 2+ GPUs per node")


ASSUMPTIONS = ("Assumes: alpha-beta model, per-GPU per-direction bandwidths x efficiency, full-duplex "
               "links, node-contiguous ranks, no competing traffic; busbw as nccl-tests defines it.")


def _json_text(res):
    """The --json output (json is imported here: a run without --json never needs it)."""
    import json
    return json.dumps(res)


def main(argv=None):
    parser = build_parser()
    args = parse_tool_args(parser, argv)
    n, sweep = validate(args, parser)
    hwd, notes = resolve_hardware(args, parser)
    gpn = hwd["gpus_per_node"]
    net = build_net(intra_bytes_per_s=hwd["intra"], inter_bytes_per_s=hwd["inter"],
                    in_network_reduction=hwd["nvls"], intra_efficiency=hwd["intra_efficiency"],
                    inter_efficiency=args.inter_node_efficiency,
                    nvls_efficiency=args.nvls_efficiency, launch_s=args.launch_latency_us * 1e-6,
                    intra_hop_ll_s=args.intra_node_latency_us * 1e-6,
                    inter_hop_ll_s=args.inter_node_latency_us * 1e-6,
                    mesh_domain=hwd["mesh_domain"])
    hw_inputs = {"gpu": hwd["gpu"], "gpu_default": hwd["gpu_default"], "gpus_per_node": gpn, "scale_up_mesh_domain": hwd["mesh_domain"],
                 "intra_node_bandwidth_bytes_per_s": hwd["intra"],
                 "inter_node_bandwidth_bytes_per_s": hwd["inter"],
                 "in_network_reduction": hwd["nvls"],
                 "intra_node_efficiency": hwd["intra_efficiency"],
                 "inter_node_efficiency": args.inter_node_efficiency,
                 "nvls_efficiency": args.nvls_efficiency,
                 "launch_latency_s": args.launch_latency_us * 1e-6,
                 "intra_node_hop_latency_s": args.intra_node_latency_us * 1e-6,
                 "inter_node_hop_latency_s": args.inter_node_latency_us * 1e-6}
    if args.train:
        res = run_training(args, parser, net, hw_inputs, notes)
        print(f"{brief_number(res['total_time_s'] * 1e3)} ms of collectives per step" if args.brief
              else _json_text(res) if args.json else format_training(res))
        return res

    validate_placement(parser, n=n, gpus_per_node=gpn, inter=hwd["inter"], what="--num-gpus")
    validate_algo(parser, algo=args.algo, op=args.op, n=n, gpus_per_node=gpn, nvls=hwd["nvls"])
    for note in notes:  # only now: a note printed before an error would make it two lines
        print(f"note: {note}", file=sys.stderr)
    G = min(n, gpn)
    inputs = dict(hw_inputs, op=args.op, num_gpus=n, gpus_per_node_in_group=G, num_nodes=n // G,
                  algo=args.algo)

    def one(size):
        r = collective_time_s(op=args.op, size_bytes=size, n=n, gpus_per_node=gpn, net=net,
                              algo=args.algo)
        return dict(r, size_bytes=size)

    if sweep:
        lo, hi = parse_size_bytes(args.min_size), parse_size_bytes(args.max_size)
        sizes, x = [], float(lo)
        while x <= hi * (1 + 1e-9):
            sizes.append(int(round(x)))
            x *= args.step_factor
        inputs.update(min_size_bytes=lo, max_size_bytes=hi, step_factor=args.step_factor)
        res = {"inputs": inputs, "rows": [one(sz) for sz in sizes],
               "bus_bandwidth_factor": bus_bandwidth_factor(op=args.op, n=n),
               "caveats": caveats(inputs), "assumptions": ASSUMPTIONS}
        print(f"{brief_number(res['rows'][-1]['busbw_bytes_per_s'] / 1e9)} GB/s busbw at "
              f"{res['rows'][-1]['size_bytes']} B"
              if args.brief else _json_text(res) if args.json else format_sweep(res))
        return res
    size = parse_size_bytes(args.size)
    inputs["size_bytes"] = size
    r = one(size)
    res = dict(r, inputs=inputs, bus_bandwidth_factor=bus_bandwidth_factor(op=args.op, n=n),
               caveats=caveats(inputs), assumptions=ASSUMPTIONS)
    print(f"{brief_number(res['time_s'] * 1e6)} us" if args.brief else _json_text(res) if args.json else format_collective(res))
    return res


def run_training(args, parser, net, hw_inputs, notes=()):
    """Training-step mode: resolve the model, validate the layout, cost every collective. `notes`
    (the hardware's) and the model's are printed after the last check, so an error is one line."""
    try:
        spec, model_notes = resolve_model_spec(vars(args))
    except ValueError as exc:
        parser.error(str(exc))
    tp, pp, dp, ep, cp = args.tp, args.pp, args.dp, args.ep, args.cp
    if dp is None:
        model_parallel = tp * pp * cp
        if args.num_gpus is not None and args.num_gpus % model_parallel:
            parser.error(f"--num-gpus {args.num_gpus} is not divisible by tp x pp x cp = {model_parallel}")
        dp = args.num_gpus // model_parallel if args.num_gpus is not None else 1
    gpn = hw_inputs["gpus_per_node"]
    total = tp * pp * dp * cp
    if args.num_gpus is not None and args.num_gpus != total:
        parser.error(f"--num-gpus {args.num_gpus} != tp x pp x dp x cp = {total}")
    a, kv = spec["num_attention_heads"], spec["num_kv_heads"]
    if a % tp:
        parser.error(f"--num-attention-heads {a} is not divisible by --tensor-parallel-size {tp}")
    if kv >= tp and kv % tp:
        parser.error(f"kv heads {kv} are not divisible by --tensor-parallel-size {tp}")
    if (dp * cp) % ep:
        parser.error(f"--expert-parallel-size {ep} does not divide dp x cp = {dp * cp}")
    if ep > 1 and not spec.get("moe"):
        parser.error("--expert-parallel-size > 1 needs a MoE model (--moe / -e)")
    if ep > spec.get("num_experts", 0) > 0:
        parser.error(f"--expert-parallel-size {ep} exceeds --num-experts {spec['num_experts']}")
    s = args.sequence_length
    if cp > 1 and any(a["kind"] == "dsv4" for g in layer_groups(spec) for a in g[0]["attention"]):
        parser.error("context parallelism for DeepSeek-V4's compressed attention is not modelled (give -cp 1)")
    if s % cp:
        parser.error(f"--sequence-length {s} is not divisible by --context-parallel-size {cp}")
    if args.sequence_parallel and (s // cp) % tp:
        parser.error(f"sequence parallel needs s/cp = {s // cp} divisible by tp {tp}")
    if args.pp > spec["num_layers"]:
        parser.error(f"--pipeline-parallel-size {pp} exceeds --num-layers {spec['num_layers']}")
    validate_placement(parser, n=total, gpus_per_node=gpn, inter=hw_inputs["inter_node_bandwidth_bytes_per_s"],
                       what="tp x pp x dp x cp =")
    for note in [*notes, *model_notes]:
        print(f"note: {note}", file=sys.stderr)
    bd = param_breakdown(spec)
    rows = training_step_collectives(
        spec=spec, breakdown=bd, tp=tp, pp=pp, dp=dp, ep=ep, cp=cp,
        sequence_parallel=args.sequence_parallel, zero_stage=args.zero_stage,
        micro_batch_size=args.micro_batch_size, grad_accum_steps=args.gradient_accumulation_steps,
        seq_length=s, act_bytes=DTYPE_BYTES[args.dtype], grad_bytes=DTYPE_BYTES[args.grad_reduce_dtype])
    for r in rows:
        G, N = group_placement(size=r["group_size"], stride=r["group_stride"], gpus_per_node=gpn)
        one = collective_time_s(op=r["op"], size_bytes=r["size_bytes"], n=r["group_size"],
                                gpus_per_node=G, net=net)
        r.update(gpus_per_node_in_group=G, num_nodes=N, time_per_call_s=one["time_s"],
                 algorithm=one["algorithm"], protocol=one["protocol"],
                 time_s=one["time_s"] * r["calls_per_step"])
    inputs = dict(hw_inputs, tp=tp, pp=pp, dp=dp, ep=ep, cp=cp, num_gpus=total,
                  sequence_parallel=args.sequence_parallel, zero_stage=args.zero_stage,
                  micro_batch_size=args.micro_batch_size,
                  gradient_accumulation_steps=args.gradient_accumulation_steps,
                  sequence_length=s, dtype=args.dtype, grad_reduce_dtype=args.grad_reduce_dtype)
    print_warnings(spec["warnings"], as_json=args.json or args.brief)
    return {"inputs": inputs, "model": spec_summary(spec), "warnings": spec["warnings"],
            "total_params": bd["total_params"], "routed_expert_params": bd["routed_expert_params"],
            "rows": rows,
            "total_bytes_per_step": sum(r["bytes_per_step"] for r in rows),
            "total_time_s": sum(r["time_s"] for r in rows),
            "exposed_time_s": sum(r["time_s"] for r in rows if not r["overlappable"]),
            "assumptions": ASSUMPTIONS + " Training: per GPU on an average pipeline stage, no "
                           "activation recompute, times summed without overlap; 'exposed' sums the "
                           "collectives that sit on the critical path."}


if __name__ == "__main__":
    run_tool(main)
