#!/usr/bin/env python3
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
import os
import sys

DEFAULT_NUM_GPUS = 8

# The range of each script flag (argparse dest: (lo, hi), both inclusive): far past any real
# collective (1e6 GB/s ~ 1000 x NVLink5 per GPU; 1e7 GPUs ~ 50 x today's largest cluster; 1 s of
# latency per hop), and tight enough that no time overflows to inf, divides by ~0 or turns
# negative. Sizes (--size, --min-size, --max-size) are 1 B to MAX_SIZE_BYTES; a sweep's
# --step-factor is at least 1.01 (at most ~4200 rows from 1 B to 1 EiB). The model flags have
# their caps in the shared block.
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


# === shared collectives: begin ===
# Collective-time formulas, repeated on purpose in calc_training_time.py and
# calc_inference_latency.py (each script stands alone); tests/test_shared_copies.py keeps the
# copies identical. Edit them here, then run tools/sync_shared_block.py.

# ---------------------------------------------------------------------------------------------
# Constants. Latencies in seconds; efficiencies are achieved / line-rate bandwidth.
# ---------------------------------------------------------------------------------------------

# Fixed cost of one collective call (kernel launch, synchronisation), before any hop.
# 8.9 us = 10.14 us, the floor of all_reduce_perf on 2 x A100-SXM4-40GB (32-64 B rows, NVIDIA/nccl
# issue #583), minus its 2 NVLink hops at ALPHA_HOP_S["ll"]["intra"].
ALPHA_LAUNCH_S = 8.9e-6

# Per-hop latency by protocol and link, from NCCL's own tuning model (src/graph/tuning.cc,
# hwLat, NCCL 2.18-2.19): Ring LL 0.6 us (NVLink) / 2.7 us (network); Ring Simple 3.4 / 14 us.
# The tree reuses the ring's numbers (NCCL's tree LL: 0.6 / 5.0 us).
ALPHA_HOP_S = {
    "ll": {"intra": 0.6e-6, "inter": 2.7e-6},
    "simple": {"intra": 3.4e-6, "inter": 14.0e-6},
}

# NVLS all-reduce latency on top of ALPHA_LAUNCH_S: NCCL's NVLS latency, 23 us (tuning.cc hwLat
# NVLS/NVLink), less the 6.6 us ring base latency it has no separate term for.
ALPHA_NVLS_S = 16.4e-6

# Fraction of the link the LL protocol reaches: 4 B flag per 4 B of data, and NCCL models it at
# 1/4 of the bus bandwidth for all-reduce (tuning.cc, "busBw * 1.0/4.0").
LL_BANDWIDTH_FRACTION = 0.25

# Ring/tree efficiency on the scale-up links (NVLink). 0.80 = the middle of two measurements:
# A100, 235 of 300 GB/s = 0.78 (NCCL tuning.cc caps sm80 bus bandwidth at 235 GB/s); H100, 370 of
# 450 GB/s = 0.82 (S. Jeaugey, NVIDIA/nccl-tests issue #212: "~20% protocol overhead ... 370GB/s").
SCALE_UP_EFFICIENCY = 0.80

# PCIe cards without NVLink (hardware.py's pcie_peer_bandwidth_bytes_per_s: L40S, L4, A10, A10G)
# reach their peers over the slot. NCCL's ring there: 21 GB/s bus bandwidth on 8 x A100 80GB PCIe
# (Gen4 x16, dual EPYC 7543, NCCL 2.9.9; NVIDIA/nccl issue #841), 0.667 of the 31.5 GB/s line
# rate (a 4-GPU Gen4 box, tinygrad/open-gpu-kernel-modules #36: 25.8 GB/s, 0.82). Servers of such
# cards hold 8 (AWS g5/g6/g6e.48xlarge).
PCIE_PEER_EFFICIENCY = 21.0 / 31.5
PCIE_SERVER_GPUS = 8

# NVLS all-reduce efficiency: algbw ~275 GB/s on 8 x H100 with NVLink SHARP (busbw ~480), of the
# 450 GB/s line rate (S. Jeaugey, NVIDIA/nccl-tests issue #212) -> 275/450 = 0.61.
NVLS_EFFICIENCY = 0.61

# Scale-out (InfiniBand/RoCE) efficiency: 2 nodes of 8 x A100 with 8 x 200 Gb/s HDR per node reach
# busbw 187.7 GB/s at 8 GiB, bounded by the 8 x 25 GB/s NICs -> 187.7/200 = 0.94 (Azure NDmV4
# all_reduce_perf; a calibration point, listed as such in VALIDATION.md).
SCALE_OUT_EFFICIENCY = 0.94

# Links assumed when neither --gpu nor --intra-node-bw-GBps is given (said on stderr): an HGX H100
# node, NVLink4 450 GB/s per GPU per direction (900 GB/s bidirectional, H100 datasheet), NVSwitch
# with NVLink SHARP, one 400 Gb/s ConnectX-7 (50 GB/s) per GPU as in DGX H100.
DEFAULT_LINKS = {"name": "HGX H100 links (450 GB/s NVLink + NVLS, 50 GB/s NIC per GPU, 8 per node)",
                 "scale_up_bandwidth_bytes_per_s": 450e9, "scale_up_domain_size": 8,
                 "scale_up_in_network_reduction": True, "scale_out_bandwidth_bytes_per_s": 50e9}
# ---------------------------------------------------------------------------------------------
# Formulas (pure: numbers in, numbers out)
# ---------------------------------------------------------------------------------------------

def bus_bandwidth_factor(*, op, n):
    """nccl-tests busbw / algbw (doc/PERFORMANCE.md): all_reduce 2(n-1)/n; all_gather,
    reduce_scatter, alltoall (n-1)/n; broadcast, reduce, sendrecv 1."""
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def ring_link_bytes_per_s(*, intra_bytes_per_s, inter_bytes_per_s, gpus_per_node, num_nodes):
    """Per-rank bandwidth of NCCL-style rings (effective, after efficiency). Inside a node: the
    scale-up link. Across nodes the rank order is node-contiguous and there is one ring per NIC, so
    every ring crosses each node boundary once and the G NICs of a node carry all rings:
    min(scale-up, G x scale-out per GPU) (Patarasuk & Yuan 2009 for the ring volume)."""
    if num_nodes <= 1:
        return intra_bytes_per_s
    return min(intra_bytes_per_s, gpus_per_node * inter_bytes_per_s)


def group_intra_bytes_per_s(net, *, gpus_in_node, op):
    """Scale-up bandwidth one rank can drive in a collective over `gpus_in_node` GPUs of its node.
    A switched fabric (NVSwitch) gives every rank its whole bandwidth to any peer; a full mesh
    (AMD xGMI, Gaudi RoCE) splits it over D-1 point-to-point links, so a group of G uses G-1 of
    them, (G-1)/(D-1) of the aggregate, and a send/recv one link, 1/(D-1) (AMD MI300X data sheet:
    7 links x 64 GB/s per direction; RCCL runs one ring per link)."""
    D = net.get("mesh_domain")
    if not D or D < 2:
        return net["intra_bytes_per_s"]
    peers = 1 if op == "sendrecv" else max(1, min(gpus_in_node, D) - 1)
    return net["intra_bytes_per_s"] * peers / (D - 1)


def _protocol(net, proto):
    """(bandwidth fraction, intra hop s, inter hop s) of a protocol."""
    frac = LL_BANDWIDTH_FRACTION if proto == "ll" else 1.0
    return frac, net["hop_s"][proto]["intra"], net["hop_s"][proto]["inter"]


def ring_time_s(*, op, size_bytes, n, gpus_per_node, net, proto):
    """Alpha-beta time of the ring (or chain / direct) algorithm. Returns (latency_s, bandwidth_s).
    all_reduce: 2(n-1) steps moving 2(n-1)/n x size per rank; all_gather/reduce_scatter: n-1 steps,
    (n-1)/n x size (Thakur et al. 2005, sec. 4); broadcast/reduce: pipelined chain, size per link;
    alltoall: direct, each rank sends (G-1)/n of its buffer over NVLink and (n-G)/n over the network
    (summed: no overlap assumed); sendrecv: size over one link. Latency: launch + one hop per step,
    the node-boundary hops at network latency (NCCL tuning.cc's ring latency)."""
    S, G = size_bytes, gpus_per_node
    N = n // G
    frac, hop_i, hop_o = _protocol(net, proto)
    bw_i = group_intra_bytes_per_s(net, gpus_in_node=G, op=op) * frac
    bw_o = net["inter_bytes_per_s"] * frac
    ring_bw = ring_link_bytes_per_s(intra_bytes_per_s=bw_i, inter_bytes_per_s=bw_o,
                                    gpus_per_node=G, num_nodes=N)
    if op == "all_reduce":
        steps, inter, wire = 2 * (n - 1), (2 * N if N > 1 else 0), 2 * (n - 1) / n * S
    elif op in ("all_gather", "reduce_scatter"):
        steps, inter, wire = n - 1, (N if N > 1 else 0), (n - 1) / n * S
    elif op in ("broadcast", "reduce"):
        steps, inter, wire = n - 1, N - 1, S
    elif op == "alltoall":
        lat = net["launch_s"] + (hop_o if N > 1 else hop_i)
        return lat, (G - 1) / n * S / bw_i + ((n - G) / n * S / bw_o if N > 1 else 0.0)
    elif op == "sendrecv":
        return net["launch_s"] + (hop_o if N > 1 else hop_i), S / (bw_o if N > 1 else bw_i)
    else:
        raise ValueError(f"unknown op {op!r}")
    inter = min(inter, steps)
    return net["launch_s"] + (steps - inter) * hop_i + inter * hop_o, wire / ring_bw


def tree_time_s(*, size_bytes, n, gpus_per_node, net, proto):
    """All-reduce on NCCL's tree: a chain inside each node and a (double) binary tree across nodes,
    reduce up then broadcast down, pipelined; every rank moves 2 x size (Sanders et al. 2009,
    two-tree). Latency 2((G-1) intra hops + ceil(log2 N) network hops) (NCCL tuning.cc)."""
    G = gpus_per_node
    N = n // G
    frac, hop_i, hop_o = _protocol(net, proto)
    bw = ring_link_bytes_per_s(
        intra_bytes_per_s=group_intra_bytes_per_s(net, gpus_in_node=G, op="all_reduce") * frac,
        inter_bytes_per_s=net["inter_bytes_per_s"] * frac, gpus_per_node=G, num_nodes=N)
    depth = math.ceil(math.log2(N)) if N > 1 else 0
    return net["launch_s"] + 2 * ((G - 1) * hop_i + depth * hop_o), 2 * size_bytes / bw


def nvls_time_s(*, size_bytes, net):
    """All-reduce with in-switch reduction (NVLink SHARP): each GPU pushes its buffer into the
    switch, which reduces it, and pulls the result back: size once per direction per GPU, at the
    NVLS efficiency; latency NCCL's NVLS latency (tuning.cc). One scale-up domain only."""
    return net["launch_s"] + net["nvls_s"], size_bytes / net["nvls_bytes_per_s"]


def hierarchical_time_s(*, op, size_bytes, n, gpus_per_node, net, proto, use_nvls):
    """Two-level algorithm for a group spanning N nodes of G GPUs: inside the node reduce-scatter
    (or NVLS), across nodes a ring over the 1/G shard on each GPU's own NIC, inside the node
    all-gather (all_gather/reduce_scatter: one intra and one inter phase). Chunks stream through
    both levels, so bandwidth term = max(intra, inter) and latencies add (NCCL NVLSTree/CollNet
    style). Returns (latency_s, bandwidth_s)."""
    S, G = size_bytes, gpus_per_node
    N = n // G
    frac, hop_i, hop_o = _protocol(net, proto)
    bw_i = group_intra_bytes_per_s(net, gpus_in_node=G, op=op) * frac
    bw_o = net["inter_bytes_per_s"] * frac
    if op == "all_reduce":
        if use_nvls:
            lat_i, t_i = net["nvls_s"], S / net["nvls_bytes_per_s"]
        else:
            lat_i, t_i = 2 * (G - 1) * hop_i, 2 * (G - 1) / G * S / bw_i
        lat_o, t_o = 2 * (N - 1) * hop_o, 2 * (N - 1) / N * (S / G) / bw_o
    elif op in ("all_gather", "reduce_scatter"):
        lat_i, t_i = (G - 1) * hop_i, (G - 1) / G * S / bw_i
        lat_o, t_o = (N - 1) * hop_o, (N - 1) / N * (S / G) / bw_o
    else:
        raise ValueError(f"no hierarchical algorithm for {op}")
    return net["launch_s"] + lat_i + lat_o, max(t_i, t_o)


def candidate_algorithms(*, op, n, gpus_per_node, in_network_reduction):
    """The algorithms `auto` chooses among: NCCL's set for the case (ring; tree for all_reduce;
    NVLS inside an NVLS-capable node; NVLS-based hierarchical across such nodes), as NCCL's
    src/graph/tuning.cc enables them (NCCL 2.18+, NVLS from 2.17)."""
    N = n // gpus_per_node
    algos = ["ring"]
    if op == "all_reduce":
        algos.append("tree")
        if in_network_reduction and gpus_per_node > 1:
            algos.append("nvls" if N == 1 else "hierarchical")
    return algos


def collective_time_s(*, op, size_bytes, n, gpus_per_node, net, algo="auto"):
    """Time of one collective of `size_bytes` over n GPUs placed G = gpus_per_node per node:
    the fastest (algorithm, protocol) among those allowed. Returns a dict with time_s, algorithm,
    protocol, latency_s, bandwidth_time_s, regime and the time of every algorithm tried."""
    G = min(gpus_per_node, n)
    algos = (candidate_algorithms(op=op, n=n, gpus_per_node=G,
                                  in_network_reduction=net["in_network_reduction"])
             if algo == "auto" else [algo])
    results = {}
    for a in algos:
        best = None
        for proto in ("ll", "simple"):
            if a == "ring":
                lat, bwt = ring_time_s(op=op, size_bytes=size_bytes, n=n, gpus_per_node=G, net=net,
                                       proto=proto)
            elif a == "tree":
                lat, bwt = tree_time_s(size_bytes=size_bytes, n=n, gpus_per_node=G, net=net,
                                       proto=proto)
            elif a == "nvls":
                if proto != "simple":
                    continue
                lat, bwt = nvls_time_s(size_bytes=size_bytes, net=net)
            else:
                use_nvls = net["in_network_reduction"] and op == "all_reduce"
                if use_nvls and proto != "simple":
                    continue
                lat, bwt = hierarchical_time_s(op=op, size_bytes=size_bytes, n=n, gpus_per_node=G,
                                               net=net, proto=proto, use_nvls=use_nvls)
            if best is None or lat + bwt < best["time_s"]:
                best = {"algorithm": a, "protocol": proto, "time_s": lat + bwt, "latency_s": lat,
                        "bandwidth_time_s": bwt}
        results[a] = best
    choice = min(results.values(), key=lambda r: r["time_s"])
    t = choice["time_s"]
    algbw = size_bytes / t
    return dict(choice, algbw_bytes_per_s=algbw,
                busbw_bytes_per_s=algbw * bus_bandwidth_factor(op=op, n=n),
                regime="latency-bound" if choice["latency_s"] >= choice["bandwidth_time_s"]
                else "bandwidth-bound",
                algorithm_times_s={a: r["time_s"] for a, r in results.items()})


def group_placement(*, size, stride, gpus_per_node):
    """(G, N) for a group of `size` ranks spaced `stride` apart in a node-contiguous rank order:
    G of its ranks share a node, N nodes. Rank order tp, cp, ep/dp, pp, fastest first, as
    Megatron-LM's parallel_state builds its groups (Narayanan et al. 2021, sec. 3.3: tp inside a
    node)."""
    per_node = gpus_per_node // stride if stride < gpus_per_node else 1
    per_node = math.gcd(size, max(1, per_node))
    return per_node, size // per_node


def build_net(*, intra_bytes_per_s, inter_bytes_per_s, in_network_reduction, intra_efficiency,
              inter_efficiency, nvls_efficiency, launch_s, intra_hop_ll_s, inter_hop_ll_s,
              mesh_domain=None):
    """Effective bandwidths (line rate x efficiency) and latencies used by the formulas. Simple
    protocol hops keep NCCL's Simple/LL ratios (3.4/0.6 NVLink, 14/2.7 network)."""
    r_i = ALPHA_HOP_S["simple"]["intra"] / ALPHA_HOP_S["ll"]["intra"]
    r_o = ALPHA_HOP_S["simple"]["inter"] / ALPHA_HOP_S["ll"]["inter"]
    return {"intra_bytes_per_s": intra_bytes_per_s * intra_efficiency,
            "inter_bytes_per_s": (inter_bytes_per_s or 0.0) * inter_efficiency,
            "nvls_bytes_per_s": intra_bytes_per_s * nvls_efficiency,
            "in_network_reduction": bool(in_network_reduction), "mesh_domain": mesh_domain,
            "launch_s": launch_s, "nvls_s": ALPHA_NVLS_S,
            "hop_s": {"ll": {"intra": intra_hop_ll_s, "inter": inter_hop_ll_s},
                      "simple": {"intra": intra_hop_ll_s * r_i, "inter": inter_hop_ll_s * r_o}}}


# === shared collectives: end ===


# === shared training collectives: begin ===
# The collectives of one training step, repeated on purpose in calc_training_time.py (it needs the
# collectives block above and the model spec's state_elements); edit here, then run
# tools/sync_shared_block.py.

def training_step_collectives(*, spec, breakdown, tp, pp, dp, ep, cp, sequence_parallel,
                              zero_stage, micro_batch_size, grad_accum_steps, seq_length,
                              act_bytes, grad_bytes):
    """Collectives one GPU takes part in during one training step (no activation recompute,
    average pipeline stage). Each row: parallelism, op, group size and stride, size (nccl-tests
    convention) and calls per step. Sources: Megatron-LM (Shoeybi et al. 2019 sec. 3; Korthikanti et
    al. 2022 sec. 4.2.2; Narayanan et al. 2021), ZeRO (Rajbhandari et al. 2020 sec. 7), GShard
    all-to-all, Ring Attention K/V exchange."""
    b, s, h, m = micro_batch_size, seq_length, spec["hidden_size"], grad_accum_steps
    L = spec["num_layers"]
    L_stage = math.ceil(L / pp)
    layers = spec["layers"]
    # blocks whose output TP reduces: a layer's mixer(s) (summed before the reduce when side by side,
    # Falcon-H1) and its MLP; Nemotron-H's layers hold one of the two
    blocks_stage = math.ceil(sum(bool(x["attention"]) + len(x["mlp"]) for x in layers) / pp)
    softmax_stage = math.ceil(sum(any(a["span"] != "state" for a in x["attention"]) for x in layers) / pp)
    linear = [a for x in layers for a in x["attention"] if a["span"] == "state"]
    moe_stage = math.ceil(breakdown["num_moe_layers"] / pp)
    tokens = b * s // cp                      # tokens of one micro-batch on this cp rank
    act = tokens * h * act_bytes              # one activation tensor b x s/cp x h
    rows = []

    def add(par, op, size, stride, nbytes, calls, overlap, note):
        if size > 1 and calls > 0 and nbytes > 0:
            rows.append({"parallelism": par, "op": op, "group_size": size, "group_stride": stride,
                         "size_bytes": int(nbytes), "calls_per_step": int(calls),
                         "bytes_per_step": int(nbytes) * int(calls), "overlappable": overlap,
                         "note": note})

    # Tensor parallel: per layer 2 all-reduces forward (after attention and after the MLP) and 2
    # backward (Shoeybi et al. 2019, sec. 3); with sequence parallel each becomes an all-gather
    # plus a reduce-scatter (Korthikanti et al. 2022, sec. 4.2.2), and Megatron all-gathers the
    # linear inputs once more in backward for the weight gradients (2 per layer, overlapped).
    if sequence_parallel:
        add("TP", "all_gather", tp, 1, act, 2 * blocks_stage * m, False,
            "2 fwd + 2 bwd per layer (SP), between GEMMs: exposed unless TP comm overlap")
        add("TP", "reduce_scatter", tp, 1, act, 2 * blocks_stage * m, False,
            "2 fwd + 2 bwd per layer (SP), between GEMMs: exposed unless TP comm overlap")
        add("TP", "all_gather", tp, 1, act, blocks_stage * m, True,
            "bwd re-gather of SP inputs for weight grads, overlaps the data-grad GEMM")
    else:
        add("TP", "all_reduce", tp, 1, act, 2 * blocks_stage * m, False,
            "2 fwd + 2 bwd per layer, between GEMMs: exposed")
    # Context parallel (ring attention): each layer passes this rank's K and V block around the
    # ring, cp-1 steps forward; backward passes K/V and their gradients, 2(cp-1) steps.
    kv, d = spec["num_kv_heads"], spec["head_dim"]
    kv_local = max(1, kv // tp)
    add("CP", "sendrecv", cp, tp, 2 * tokens * kv_local * d * act_bytes, 3 * (cp - 1) * softmax_stage * m,
        True, "K/V ring exchange, cp-1 fwd + 2(cp-1) bwd per attention layer, overlaps attention compute")
    # A linear-attention / state-space layer under context parallelism passes its recurrent state
    # (fp32) from rank to rank, cp - 1 steps forward and as many for its gradient backward (LASP,
    # Sun et al. 2024): each rank waits on its predecessor's state.
    if linear and cp > 1:
        per_layer = sum(state_elements(dict(a, heads=max(a["heads"] // tp, 1), kv_heads=max(a["kv_heads"] // tp, 1)))["recurrent"]
                        for a in linear) / len(linear)
        add("CP", "sendrecv", cp, tp, b * per_layer * 4, 2 * (cp - 1) * math.ceil(len(linear) / pp) * m, False,
            "recurrent-state pass of the linear-attention / state-space layers, fwd and bwd: sequential")
    # Pipeline parallel: per micro-batch one activation forward and one gradient backward per
    # stage boundary (Narayanan et al. 2021); with SP Megatron sends the 1/tp shard.
    if pp > 1:
        add("PP", "sendrecv", 2, tp * cp * dp,  # DeepSeek-V4 hands over its hc_mult residual streams
            act * spec.get("residual_streams", 1) // (tp if sequence_parallel else 1), 2 * m, True,
            "1 fwd + 1 bwd per micro-batch; 1F1B hides it except pipeline fill and drain")
    # Expert parallel: dispatch and combine all-to-all per MoE layer, forward and backward (GShard).
    if ep > 1 and moe_stage:
        k = spec["topk"]
        add("EP", "alltoall", ep, tp * cp, act * k // (tp if sequence_parallel else 1),
            4 * moe_stage * m, False, "dispatch + combine, fwd and bwd, per MoE layer: experts wait on it")
    # Data parallel (replicas over dp x cp): gradients of the rank's parameters.
    expert = breakdown["routed_expert_params"]
    dense_local = (breakdown["total_params"] - expert) / (tp * pp)
    groups = [("DP", dense_local, dp * cp, tp)]
    if expert:
        groups.append(("DP (experts)", expert / (tp * pp * ep), dp * cp // ep, tp * cp * ep))
    for par, p_local, size, stride in groups:
        if zero_stage == 0:
            add(par, "all_reduce", size, stride, p_local * grad_bytes, 1, True,
                "gradients once per step, bucketed under backward; last bucket exposed")
        elif zero_stage in (1, 2):
            add(par, "reduce_scatter", size, stride, p_local * grad_bytes, 1, True,
                "gradients once per step, bucketed under backward; last bucket exposed")
            add(par, "all_gather", size, stride, p_local * act_bytes, 1, True,
                "updated parameters, can overlap the next forward")
        else:
            add(par, "all_gather", size, stride, p_local * act_bytes, 2 * m, True,
                "parameters before each layer's fwd and bwd, prefetched")
            add(par, "reduce_scatter", size, stride, p_local * grad_bytes, m, True,
                "gradients every micro-batch, under backward")
    return rows


# === shared training collectives: end ===


# === shared model spec: begin ===
# This block is repeated on purpose in every calc_*.py script that needs a model (each file stands
# alone); tests/test_shared_copies.py keeps the copies identical. Edit it in
# calc_transformer_params.py, then run tools/sync_shared_block.py.
#
# A model is a list of layers. Each layer is a small dict {"attention": [attn, ...], "mlp": [mlp,
# ...], "norms": n, "extra_params": p} (p: matmul weights every token runs through once in that
# layer outside its attention and MLP, Gemma 4's per-layer inputs): usually one attention and one MLP, two of each in
# LongCat-Flash's shortcut-connected block. Layers of the same kinds share one dict object, so
# layer_groups() finds the distinct kinds quickly. An attention dict says what its weights are
# ("kind": mha covers MHA/GQA/MQA, mla is DeepSeek's latent attention), which keys a query sees
# ("span": full, sliding within "window", chunked within "chunk"), and its extras (rope, sinks,
# output gate, q/k norms, biases, a lightning "indexer" that picks top-k keys, with its own weights
# or none when it reuses an earlier layer's top-k, "kv_shared" when it reuses an earlier layer's
# K/V or latent, Mistral Large 4's per-head "position_scaling" and "indexer_input_norm"). An MLP dict is
# "dense" (width, matrices, bias) or "moe" (routed experts, top-k, shared experts, router, zero
# experts). Per kind there is one function per quantity: attention_params, mlp_block_params,
# attention_linear_flops_per_token, attention_core_flops, query_key_pairs, mlp_flops_per_token,
# cache_elements_per_token, cached_tokens, decode_keys_read; totals are sums over the list.

MODEL_DEFAULTS = {
    # The cookbook's calc_transformer_params.py defaults; other scripts override some of them.
    "vocab_size": 51200, "hidden_size": 6144, "num_layers": 44, "num_experts": 8,
    "expert_interval": 1, "topk": 1, "ffn_expansion_factor": 4.0, "num_mlp_linears": 2,
    "kv_size_ratio": 1.0,
}

# Chunk length of the chunked Gated DeltaNet algorithm: transformers' torch_chunk_gated_delta_rule
# and flash-linear-attention's chunk_gated_delta_rule both use 64 (Yang et al. 2024, arXiv 2412.06464).
GDN_CHUNK = 64

CONFIG_MAX_BYTES = 16 << 20  # a config.json is a few KiB; anything past 16 MiB is not one
CONFIG_MAX_DEPTH = 64        # nesting deeper than this is not a model config

# Hugging Face config classes whose tie_word_embeddings default is True when config.json omits it
# (PretrainedConfig's default); the others pass tie_word_embeddings=False in their constructors.
_TIED_BY_DEFAULT = set("gpt2 opt bloom falcon gemma gemma2 starcoder2 gemma3_text gemma4_text "
                       "cohere2 exaone4 smollm3 granitemoe olmo3 seed_oss llama4_text lfm3".split())

# model_types that are real transformers families whose layers this block cannot describe yet:
# exit 2 rather than print a Llama-style count (linear attention and state-space layers).
_NOT_YET = set("lfm2 lfm2_moe mamba mamba2 falcon_mamba zamba zamba2 bamba rwkv recurrent_gemma "
               "minimax plamo2".split())
# Config fields that only layers of those kinds have: an unknown model_type showing them exits 2.
_FOREIGN_LAYER_FIELDS = tuple("linear_num_key_heads linear_num_value_heads linear_key_head_dim "
                              "linear_conv_kernel_dim mamba_d_state mamba_n_heads mamba_d_conv "
                              "ssm_state_size state_size conv_kernel layers_block_type "
                              "hybrid_override_pattern attn_layer_period attn_layer_offset "
                              "block_types layer_block_types full_attn_idxs linear_attn_config "
                              "short_conv".split())


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (no usage dump) and exit status 2, and an
    epilog may be a function, called only when --help is printed (a run that answers never builds
    it: start-up time)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")

    def format_help(self):
        if callable(self.epilog):
            self.epilog = self.epilog()
        return super().format_help()


def finite_float(text):
    """argparse type for a real number: rejects nan and inf with a one-line usage error."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if value != value or abs(value) == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def bounded_int(text):
    """argparse type for an integer flag: at most 18 digits, so no 400-digit size reaches a formula."""
    text = str(text).strip()
    if len(text.lstrip("+-")) > 18:
        raise argparse.ArgumentTypeError(f"{text[:24]}... is too large (at most 18 digits)")
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer: {text!r}") from None


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
    return g


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
_LAYER_TYPE_NAMES = {"full_attention": "full", "sliding_attention": "sliding",
                     "chunked_attention": "chunked", "attention": "full", "linear_attention": "linear"}


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


def spec_from_hf_config(cfg, num_layers=None):
    """Translate a Hugging Face config dict into this block's model fields, per family, as
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
    cfg, mm = _read_multimodal(cfg, where, warnings)
    r = ConfigReader(cfg, where if mm is None else f"{where} (text_config)", warnings)
    mt = r.str("model_type", default=None)
    if mt in _NOT_YET:
        raise ValueError(f"{where}: model_type {mt!r} has linear-attention or state-space layers, "
                         "which this script does not count yet")
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
        L_cfg = r.int("num_hidden_layers", "n_layer", "num_layers")
    if L_cfg is None and mt == "nemotron_h":  # a property of the pattern there, not always written
        L_cfg = len(_nemotron_blocks(r))
    a = r.int("num_attention_heads", "n_head", "num_heads")
    missing = [k for k, v in (("vocab_size", r.int("vocab_size")), ("hidden_size", h),
                              ("num_layers", L_cfg), ("num_attention_heads", a)) if v is None]
    if missing:
        raise ValueError(f"{where}: config lacks integer field(s) for {', '.join(missing)}")
    if num_layers is not None and num_layers > L_cfg and (r.has("layer_types") or r.has("mlp_layer_types")):
        raise ValueError(f"--num-layers {num_layers} is more than the {L_cfg} layers the config's "
                         "layer pattern describes")
    L = num_layers or L_cfg
    s = {"model_type": mt, "vocab_size": r.int("vocab_size"), "hidden_size": h,
         "num_layers": L, "num_attention_heads": a,
         "tied_embeddings": r.bool("tie_word_embeddings", default=mt in _TIED_BY_DEFAULT)}
    if mm:
        s["multimodal"] = mm
    if not known:
        warnings.append(f"model_type {mt!r} is not one this script knows; read as Llama-style "
                        "(RMSNorm, gated 3-matrix MLP, no biases, rotary, num_key_value_heads/"
                        "head_dim/intermediate_size as given): the count may be wrong")
    llama_like = dict(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False,
                      mlp_bias=False, position_embedding="rope",
                      num_kv_heads=r.int("num_key_value_heads", "num_kv_heads", default=a),
                      head_dim=r.int("head_dim") or h // a,
                      ffn_hidden_size=r.int("intermediate_size", "ffn_hidden_size"))
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
        read(r, s, llama_like, notes, warnings)
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
    s.pop("_layers_from_flag", None)
    s["checkpoint_format"] = _checkpoint_format(top_qc, where, warnings)
    unread = r.unread_count_fields()
    if unread:
        warnings.append("config field(s) not read, which may change the count: " + ", ".join(unread))
    return {k: v for k, v in s.items() if v is not None}, notes, warnings


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
    L = s["num_layers"] = len(blocks)
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
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    key = "layer_types" if r.has("layer_types") else "layers_block_type"
    lt = r.str_list(key, choices={"linear_attention", "mamba", "full_attention", "attention"}, length=L)
    s["layer_types"] = (["linear" if t in ("linear_attention", "mamba") else "full" for t in lt] if lt
                        else ["linear"] * L)
    d_in = int(r.num("mamba_expand", default=2) * h)
    H = r.int("mamba_n_heads", default=128)
    pb = r.bool("mamba_proj_bias", default=False)
    _mamba2_mixer(r, s, d_in=d_in, heads=H, head_dim=_mamba_head_dim(r, "mamba_d_head", d_in, H),
                  groups=r.int("mamba_n_groups", default=1), state=r.int("mamba_d_state", default=256),
                  conv=r.int("mamba_d_conv", default=4), chunk=r.int("mamba_chunk_size", default=256),
                  in_bias=pb, out_bias=pb, conv_bias=r.bool("mamba_conv_bias", default=True), gated_norm=True)
    E = r.int("num_local_experts", "num_experts", lo=0, default=8)
    sh = r.int("shared_intermediate_size", default=1024)
    if E:
        s.update(moe=True, num_experts=E, topk=r.int("num_experts_per_tok", default=2),
                 moe_ffn_hidden_size=ll["ffn_hidden_size"], num_shared_experts=1,
                 shared_expert_ffn_hidden_size=sh, shared_expert_gate=False, moe_layer_set=list(range(L)))
    else:
        s["ffn_hidden_size"] = sh  # the shared MLP is the layer's only MLP
    r.used.add("intermediate_size")


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


_DSV4_RATIO = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}


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
             extra_params_per_layer=2 * ((2 + hc) * hc * hc * h + (2 + hc) * hc + 3),
             # per token, two modules: the fn projection of the hc streams and comb^T @ streams
             extra_flops_per_layer=2 * (2 * (2 + hc) * hc * hc * h + 2 * hc * hc * h),
             other_params={"hc_head": hc * hc * h + hc + 1}, input_matmul_params=hc * hc * h,
             residual_streams=hc)
    f_e = r.int("moe_intermediate_size", default=2048)
    mlt = r.str_list("mlp_layer_types", choices={"moe", "hash_moe"}, length=L)
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
    a, h = s["num_attention_heads"], s["hidden_size"]
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
                 qk_rope_head_dim=r.int("qk_rope_head_dim"),
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


def _read_olmo3(r, s, ll, notes, warnings):
    """OLMo 3: OLMo 2's block (post-norms only, q/k RMSNorms over all heads) with 3 sliding : 1 full
    layers."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, qk_norm="full")
    if not r.has("layer_types"):
        s["layer_types"] = ["full" if (i + 1) % 4 == 0 else "sliding" for i in range(L)]


def _nope_from_interval(r, L):
    nrl = r.int_list("no_rope_layers", lo=0, hi=1, default=None)
    if not nrl:
        interval = r.int("no_rope_layer_interval", default=4)
        nrl = [int((i + 1) % interval != 0) for i in range(L)]
    if len(nrl) < L:
        r.fail("no_rope_layers", f"must list {L} layers", nrl)
    return [i for i in range(L) if not nrl[i]]


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


# Every model_type this block reads, and its reader (the Llama-style families share one).
_FAMILY_READERS = {
    **dict.fromkeys(("llama mistral mixtral qwen2 qwen2_moe qwen3 qwen3_moe gemma gemma2 phi3 olmo2 "
                     "deepseek_v2 deepseek_v3 mistral4").split(), _read_llama_like),
    "gpt2": _read_gpt2, "gpt_neox": _read_gpt_neox, "opt": _read_opt, "bloom": _read_bloom,
    "falcon": _read_falcon, "starcoder2": _read_starcoder2, "gpt_oss": _read_gpt_oss,
    "llama4_text": _read_llama4, "gemma3_text": _read_gemma3, "gemma4_text": _read_gemma4,
    "glm4_moe": _read_glm4_moe, "glm_moe_dsa": _read_dsa, "deepseek_v32": _read_dsa,
    "mistral_large4_text": _read_mistral_large4,
    "minimax_m2": _read_minimax_m2, "ernie4_5_moe": _read_ernie45_moe, "hy_v3": _read_hy_v3,
    "longcat_flash": _read_longcat, "olmo3": _read_olmo3, "smollm3": _read_smollm3,
    "seed_oss": _read_seed_oss, "exaone4": _read_exaone4, "cohere2": _read_cohere2,
    "granitemoe": _read_granitemoe, "phimoe": _read_phimoe, "qwen3_next": _read_qwen_gdn,
    "qwen3_5_text": _read_qwen_gdn, "qwen3_5_moe_text": _read_qwen_gdn,
    "olmo_hybrid": _read_olmo_hybrid, "nemotron_h": _read_nemotron_h,
    "granitemoehybrid": _read_granitemoehybrid, "falcon_h1": _read_falcon_h1,
    "jamba": _read_jamba, "lfm3": _read_lfm3, "kimi_linear": _read_kimi_linear,
    "deepseek_v4": _read_deepseek_v4, "step3p5": _read_step3p5}


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
        if val is not None and val <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be positive, got {val}")
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
            if not s.get(name):
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
            raise ValueError(f"--num-attention-heads {a} is not divisible by kv heads {s['num_kv_heads']}")
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
    return s, notes


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
                "qk_norm": s["qk_norm"], "norm": "rmsnorm" if s["norm"] == "layernorm" else s["norm"],
                "sinks": s["attention_sinks"], "output_gate": s["attn_output_gate"],
                "q_lora_rank": s["q_lora_rank"] or 0, "kv_lora_rank": s["kv_lora_rank"] or 0,
                "qk_nope_head_dim": s["qk_nope_head_dim"] or 0, "qk_rope_head_dim": s["qk_rope_head_dim"] or 0,
                "v_head_dim": s["v_head_dim"] or s["head_dim"],
                "index_heads": s["index_n_heads"], "index_head_dim": s["index_head_dim"],
                "index_topk": s["index_topk"], "kv_proj": 2, "kv_shared": False,
                "position_scaling": s["attn_position_scaling"], "indexer_input_norm": s["indexer_input_norm"]}
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
    if attn["kind"] == "kda":
        return f"kda({attn['heads']}x{attn['head_dim']})"
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
    if attn["index_topk"]:
        label += f" dsa(top{attn['index_topk']})" + ("" if attn["index_heads"] else " shared-topk")
    return label


def mlp_kind(mlp):
    if mlp["kind"] == "moe":
        z = f"+{mlp['zero_experts']}zero" if mlp["zero_experts"] else ""
        sh = " +shared" if mlp["shared_width"] else ""
        return f"moe {mlp['topk']}/{mlp['num_experts']}{z}{sh}"
    return f"dense {mlp['width']}"


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
    (transformers' modeling_mistral_large4)."""
    H, dI = attn["index_heads"], attn["index_head_dim"]
    if not attn["index_topk"] or not H:
        return 0
    q_in = attn["q_lora_rank"] or h
    extra = 2 * h * attn["indexer_input_norm"] + 2 * H * attn["position_scaling"]  # Mistral Large 4
    return q_in * H * dI + h * dI + 2 * dI + h * H + extra


def mixer_widths(attn):
    """(in_proj output width, out_proj input width, conv channels) of a linear mixer. Gated
    DeltaNet: q, k, v, z, beta, a = 2 H_k d_k + 2 H_v d_v + 2 H_v; H_v d_v; 2 H_k d_k + H_v d_v.
    Mamba-2 (Dao & Gu 2024, arXiv 2405.21060 sec. 7; heads H of P, G groups of state N): z, x,
    B, C, dt = 2 H P + 2 G N + H; H P; H P + 2 G N. Mamba-1 (Gu & Dao 2023, arXiv 2312.00752;
    E inner channels, "heads" here): x, z = 2 E; E; E. A short convolution (LFM2/3; D channels):
    B, C, x = 3 D; D; D. Kimi Delta Attention (KDA; H heads of d, D = H d): q, k, v, the low-rank
    inputs of the decay and the output gate, beta = 3 D + 2 d + H; D; 3 D."""
    if attn["kind"] == "kda":  # q, k, v (3 D), the decay's and the gate's low-rank inputs (2 d), beta
        D = attn["heads"] * attn["head_dim"]
        return 3 * D + 2 * attn["head_dim"] + attn["heads"], D, 3 * D
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
    if attn["kind"] == "shortconv":
        return h * w_in + conv_dim * K + w_out * h + attn["conv_bias"] * (w_in + conv_dim + h)
    if attn["kind"] == "kda":  # + the decay's and gate's d -> D up-projections, dt_bias D, A_log H, norm d
        H, d = attn["heads"], attn["head_dim"]
        return h * w_in + 2 * d * H * d + conv_dim * K + H * d + H + d + w_out * h
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


def attention_params(attn, *, h):
    """One attention block's weights. MHA/GQA/MQA: q (h x a d; twice as wide with an elementwise
    output gate, Qwen3-Next), k and v (h x kv d; k alone when K = V, none on a layer that reuses
    another's K/V, Gemma 4), o (a d x h), optional biases, q/k norms (per head, d each; or over all
    heads; Llama 4's L2 norm has no weights), a sink logit per head (gpt-oss), a per-head sigmoid
    output gate h -> a (LFM3's g_proj, "headwise"). MLA (DeepSeek-V2 sec. 2.1): q
    directly or via a rank-r_q bottleneck with a norm, a joint kv down-projection to r_kv + d_rope
    with a norm (none on a layer that reuses an earlier layer's latent), an up-projection to
    a (d_nope + d_v), and o (a d_v x h); a learned scale and bias per head with position scaling
    (Mistral Large 4); plus any indexer."""
    if attn["span"] == "state":
        return linear_mixer_params(attn, h=h)
    if attn["kind"] == "dsv4":
        return dsv4_attention_params(attn, h=h)
    a, kv, d, nm = attn["heads"], attn["kv_heads"], attn["head_dim"], attn["norm"]
    qkv_b, o_b = attn["qkv_bias"], attn["out_bias"]
    if attn["kind"] == "mla":
        r_q, r_kv = attn["q_lora_rank"], attn["kv_lora_rank"]
        d_nope, d_rope, d_v = attn["qk_nope_head_dim"], attn["qk_rope_head_dim"], attn["v_head_dim"]
        d_qk = d_nope + d_rope
        if r_q:
            q = h * r_q + qkv_b * r_q + norm_params(width=r_q, norm=nm) + r_q * a * d_qk
        else:
            q = h * a * d_qk
        kv_down = 0 if attn["kv_shared"] else (h * (r_kv + d_rope) + qkv_b * (r_kv + d_rope)
                                                + norm_params(width=r_kv, norm=nm))
        kv_up = r_kv * a * (d_nope + d_v)
        return (q + kv_down + kv_up + a * d_v * h + o_b * h + a * attn["sinks"] + 2 * a * attn["position_scaling"]
                + indexer_params(attn, h=h))
    q_out = a * d * (2 if attn["output_gate"] == "elementwise" else 1)
    gate = a * (attn["output_gate"] == "headwise")  # LFM3's g_proj: h -> a, no bias
    kv_out = attn["kv_proj"] * kv * d
    has_k = attn["kv_proj"] > 0  # a layer that reuses another's K/V has no k norm either
    qk = {"none": 0, "l2": 0, "head": d * (1 + has_k), "full": (a + kv * has_k) * d}[attn["qk_norm"]]
    return (h * (q_out + kv_out + gate) + qkv_b * (q_out + kv_out) + a * d * h + o_b * h
            + norm_params(width=qk, norm=nm) + a * attn["sinks"])


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
    if mlp["kind"] == "dense":
        return {"dense": mlp_params(h=h, f=mlp["width"], num_linears=mlp["linears"], bias=mlp["bias"]),
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
    return attn["head_dim"], attn["head_dim"]


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
        if attn["kind"] == "kda":  # the decay's and the gate's d -> D up-projections
            inner = 2 * attn["head_dim"] * attn["heads"] * attn["head_dim"]
        return 2 * (h * w_in + conv_dim * attn["conv_kernel"] + w_out * h + inner)  # mamba1: x_proj, dt_proj
    if attn["kind"] == "mla":
        r_q, r_kv = attn["q_lora_rank"], attn["kv_lora_rank"]
        d_nope, d_rope, d_v = attn["qk_nope_head_dim"], attn["qk_rope_head_dim"], attn["v_head_dim"]
        q = h * r_q + r_q * a * (d_nope + d_rope) if r_q else h * a * (d_nope + d_rope)
        kv_down = 0 if attn["kv_shared"] else h * (r_kv + d_rope)
        macs = q + kv_down + r_kv * a * (d_nope + d_v) + a * d_v * h
    else:
        q_out = a * d * (2 if attn["output_gate"] == "elementwise" else 1) + a * (attn["output_gate"] == "headwise")
        kv_out = attn["kv_proj"] * kv * d
        macs = h * (q_out + kv_out) + a * d * h
    return 2 * macs + indexer_linear_flops_per_token(attn, h=h)


def indexer_linear_flops_per_token(attn, *, h):
    """Forward FLOPs per token of a lightning indexer's projections (DeepSeek-AI 2025, DeepSeek-V3.2
    sec. 2.1): its queries from the query latent (r_q -> H_I d_I), its key (h -> d_I) and its
    per-head weights (h -> H_I); 0 for an attention block without an indexer."""
    if attn["kind"] == "dsv4":  # DeepSeek-V4's indexer: its compressor (kv, gate: 2 d_I each), q, weights
        HI, dI = attn["c_index_heads"], attn["c_index_head_dim"]
        return 2 * (4 * h * dI + attn["q_lora_rank"] * HI * dI + h * HI) if HI else 0
    if not attn["index_topk"]:
        return 0
    H, dI = attn["index_heads"], attn["index_head_dim"]
    return 2 * ((attn["q_lora_rank"] or h) * H * dI + h * dI + h * H)


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
    indexer's top-k (the indexer itself scores all p). A linear mixer pairs nothing: its "state"
    entry is the s tokens its chunked algorithm runs (the same under both conventions)."""
    s = seq_len
    if attn["span"] == "state":
        return {"core": 0, "indexer": 0, "state": s}
    if attn["kind"] == "dsv4":
        return _dsv4_pairs(attn, seq_len=s, attention=attention)
    if attention == "full":
        return {"core": s * s, "indexer": s * s if attn["index_topk"] else 0}
    if attn["span"] == "sliding":
        core = _causal_pairs_capped(s, attn["window"])
    elif attn["span"] == "chunked":
        c = attn["chunk"]
        n, rem = divmod(s, c)
        core = n * c * (c + 1) // 2 + rem * (rem + 1) // 2
    else:
        core = s * (s + 1) // 2
    if attn["index_topk"]:
        return {"core": min(core, _causal_pairs_capped(s, attn["index_topk"])), "indexer": s * (s + 1) // 2}
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
    if attn["index_topk"]:
        return {"core": min(core, attn["index_topk"]), "indexer": c}
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
    if attn["kind"] == "shortconv":
        return 0
    if attn["kind"] == "kda":
        return kda_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)
    if attn["kind"] == "mamba1":
        return (chunked_tokens + steps) * 4 * attn["heads"] * attn["state_size"]
    if attn["kind"] == "mamba2":
        return mamba2_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)
    return gdn_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)


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
    MQA: K and V, 2 kv d. MLA: the compressed latent r_kv + d_rope (DeepSeek-V2 sec. 2.1.3; what
    vLLM and SGLang keep) or, with mla_cache="expanded", per-head keys a (d_nope + d_rope) and values
    a d_v (what transformers' cache holds for DeepSeek-V2/V3). Layers that reuse another layer's
    K/V or latent hold none of it. A lightning indexer caches one d_I key per token (its own, also
    on a layer that reuses another's latent: Mistral Large 4). A linear mixer caches nothing per
    token (state_elements: its constant state)."""
    if attn["span"] == "state":
        return {"kv": 0, "indexer": 0}
    if attn["kind"] == "dsv4":  # one K = V head of the window; transformers' plain sliding layer keeps K and V
        return {"kv": attn["head_dim"] * (2 if attn["compress_kind"] == "none" else 1), "indexer": 0}
    ind = attn["index_head_dim"] if attn["index_topk"] else 0
    if attn["kv_shared"]:
        return {"kv": 0, "indexer": ind}
    if attn["kind"] == "mla":
        if mla_cache == "latent":
            return {"kv": attn["kv_lora_rank"] + attn["qk_rope_head_dim"], "indexer": ind}
        a = attn["heads"]
        return {"kv": a * (attn["qk_nope_head_dim"] + attn["qk_rope_head_dim"]) + a * attn["v_head_dim"],
                "indexer": ind}
    return {"kv": 2 * attn["kv_heads"] * attn["head_dim"], "indexer": ind}


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
    the H x P x N state. Softmax attention: none."""
    if attn["span"] != "state":
        return {"conv": 0, "recurrent": 0}
    conv = mixer_widths(attn)[2] * attn["conv_kernel"]
    if attn["kind"] == "shortconv":
        return {"conv": conv, "recurrent": 0}
    if attn["kind"] == "kda":  # H x d x d
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
        "output_head_params": 0 if spec["tied_embeddings"] else V * p,
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

# === shared model spec: end ===


# ---------------------------------------------------------------------------------------------
# Hardware and network description
# ---------------------------------------------------------------------------------------------

def load_accelerator(name):
    """hardware.get_accelerator(name) from hardware.py beside this script. Raises LookupError
    (hardware.py missing) or KeyError (unknown name, args[0] a one-line message)."""
    try:
        import hardware  # noqa: PLC0415 -- only when --gpu is used
    except ImportError:
        raise LookupError("hardware.py was not found beside calc_comm.py; instead of --gpu pass "
                          "--intra-node-bw-GBps (and --inter-node-bw-GBps, --gpus-per-node, "
                          "--in-network-reduction) explicitly") from None
    return hardware.get_accelerator(name)


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


def format_collective(res):
    """Human report of one collective."""
    i = res["inputs"]
    lines = [f"{i['op']} of {human_bytes(i['size_bytes'])} ({i['size_bytes']:,} B) over "
             f"{i['num_gpus']} GPUs ({i['num_nodes']} node(s) x {i['gpus_per_node_in_group']})"
             + (f" on {i['gpu']}" if i["gpu"] else ""),
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
    lines.append(res["assumptions"])
    return "\n".join(lines)


def format_sweep(res):
    """nccl-tests-like table over sizes."""
    i = res["inputs"]
    lines = [f"# {i['op']} over {i['num_gpus']} GPUs ({i['num_nodes']} node(s) x "
             f"{i['gpus_per_node_in_group']})" + (f" on {i['gpu']}" if i["gpu"] else ""),
             f"#{'size (B)':>14}{'time (us)':>13}{'algbw (GB/s)':>14}{'busbw (GB/s)':>14}"
             f"  {'algorithm':<20}regime"]
    for r in res["rows"]:
        lines.append(f"{r['size_bytes']:>15}{r['time_s'] * 1e6:>13.2f}"
                     f"{r['algbw_bytes_per_s'] / 1e9:>14.2f}{r['busbw_bytes_per_s'] / 1e9:>14.2f}"
                     f"  {r['algorithm'] + '/' + r['protocol']:<20}{r['regime']}")
    lines.append(res["assumptions"])
    return "\n".join(lines)


def format_training(res):
    """Per-parallelism table of one training step's collectives."""
    i = res["inputs"]
    lines = [f"One training step per GPU: tp {i['tp']} pp {i['pp']} dp {i['dp']} ep {i['ep']} "
             f"cp {i['cp']} ({i['num_gpus']} GPUs, {i['gpus_per_node']} per node), "
             f"SP {'on' if i['sequence_parallel'] else 'off'}, ZeRO {i['zero_stage']}, "
             f"b {i['micro_batch_size']} x m {i['gradient_accumulation_steps']}, s {i['sequence_length']}",
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


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------

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


def build_parser():
    parser = OneLineErrorParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    c = parser.add_argument_group("collective")
    c.add_argument("--op", choices=OPS, default="all_reduce",
                   help="collective, spelled as nccl-tests (default all_reduce)")
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
    hw.add_argument("--intra-node-bw-GBps", dest="intra_bw", type=finite_float, default=None,
                    help="scale-up bandwidth per GPU per direction, GB/s (H100 NVLink4: 450)")
    hw.add_argument("--inter-node-bw-GBps", dest="inter_bw", type=finite_float, default=None,
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
    t.add_argument("--expert-parallel-size", "--ep", "-ep", dest="ep", type=bounded_int, default=1,
                   help="ep, carved out of dp x cp for the expert layers")
    t.add_argument("--context-parallel-size", "--cp", "-cp", dest="cp", type=bounded_int, default=1)
    t.add_argument("--sequence-parallel", action="store_true", help="Megatron sequence parallel")
    t.add_argument("--zero-stage", type=bounded_int, default=0, choices=(0, 1, 2, 3),
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
    parser.add_argument("--json", action="store_true", help="print the result dict as JSON")
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
    rec, notes = {}, []
    if args.gpu is not None:
        try:
            rec = load_accelerator(args.gpu)
        except LookupError as exc:
            if isinstance(exc, KeyError):
                parser.error(str(exc.args[0]) if exc.args else f"unknown --gpu {args.gpu!r}")
            parser.error(str(exc))
    intra = args.intra_bw * 1e9 if args.intra_bw is not None else rec.get("scale_up_bandwidth_bytes_per_s")
    inter = args.inter_bw * 1e9 if args.inter_bw is not None else rec.get("scale_out_bandwidth_bytes_per_s")
    gpn = args.gpus_per_node or rec.get("scale_up_domain_size") or 8
    nvls = (args.in_network_reduction if args.in_network_reduction is not None
            else bool(rec.get("scale_up_in_network_reduction", False)))
    eff = SCALE_UP_EFFICIENCY
    if not intra and rec.get("pcie_peer_bandwidth_bytes_per_s"):  # PCIe cards with peer-to-peer
        intra, eff = rec["pcie_peer_bandwidth_bytes_per_s"], PCIE_PEER_EFFICIENCY
        gpn = args.gpus_per_node or PCIE_SERVER_GPUS
        notes.append(f"{rec['name']}: no NVLink; peers over PCIe at {intra / 1e9:.1f} GB/s x {eff:.3f}, "
                     f"servers of {gpn} GPUs")
    if args.intra_node_efficiency is not None:
        eff = args.intra_node_efficiency
    if not intra:
        if rec:
            parser.error(f"the record of --gpu {args.gpu} has no scale-up bandwidth; pass "
                         "--intra-node-bw-GBps")
        d = DEFAULT_LINKS
        intra, inter = d["scale_up_bandwidth_bytes_per_s"], inter or d["scale_out_bandwidth_bytes_per_s"]
        if args.in_network_reduction is None:
            nvls = d["scale_up_in_network_reduction"]
        gpn = args.gpus_per_node or d["scale_up_domain_size"]
        rec = {"name": d["name"]}
        notes.append(f"no --gpu or --intra-node-bw-GBps given: assuming {d['name']}")
    mesh = (rec.get("scale_up_domain_size") if rec.get("scale_up_topology") == "mesh"
            and args.intra_bw is None else None)
    return {"gpu": rec.get("name", args.gpu), "intra": float(intra),
            "inter": float(inter) if inter else None, "gpus_per_node": int(gpn), "nvls": nvls,
            "mesh_domain": mesh, "intra_efficiency": eff}, notes


def validate(args, parser):
    """One-line errors (exit 2) for every rule, before any computing."""
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
        return
    if args.hf_model_name_or_path is not None:  # never a silent fallback: the model would be unused
        parser.error("--hf_model_name_or_path describes the model of a training step: add --train "
                     "(one collective takes --op and --size, not a model)")
    if args.num_gpus is None:
        args.num_gpus = DEFAULT_NUM_GPUS
    if args.size is None:
        args.sweep = True
    if args.num_gpus < 2:
        parser.error(f"{args.op} needs a group of at least 2 GPUs, got --num-gpus {args.num_gpus}")
    if args.sweep:
        if size_arg(args, parser, "min_size") > size_arg(args, parser, "max_size"):
            parser.error("--min-size is larger than --max-size")
    else:
        size_arg(args, parser, "size")


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
    args = parser.parse_args(argv)
    if args.hf_model_name_or_path == "":  # resolve_model_spec would read '' as "no config"
        parser.error("--hf_model_name_or_path is empty: give a folder with config.json, a "
                     "config.json path or a hub id")
    validate(args, parser)
    hwd, notes = resolve_hardware(args, parser)
    gpn = hwd["gpus_per_node"]
    net = build_net(intra_bytes_per_s=hwd["intra"], inter_bytes_per_s=hwd["inter"],
                    in_network_reduction=hwd["nvls"], intra_efficiency=hwd["intra_efficiency"],
                    inter_efficiency=args.inter_node_efficiency,
                    nvls_efficiency=args.nvls_efficiency, launch_s=args.launch_latency_us * 1e-6,
                    intra_hop_ll_s=args.intra_node_latency_us * 1e-6,
                    inter_hop_ll_s=args.inter_node_latency_us * 1e-6,
                    mesh_domain=hwd["mesh_domain"])
    hw_inputs = {"gpu": hwd["gpu"], "gpus_per_node": gpn, "scale_up_mesh_domain": hwd["mesh_domain"],
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
        print(_json_text(res) if args.json else format_training(res))
        return res

    n = args.num_gpus
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

    if args.sweep:
        lo, hi = parse_size_bytes(args.min_size), parse_size_bytes(args.max_size)
        sizes, x = [], float(lo)
        while x <= hi * (1 + 1e-9):
            sizes.append(int(round(x)))
            x *= args.step_factor
        inputs.update(min_size_bytes=lo, max_size_bytes=hi, step_factor=args.step_factor)
        res = {"inputs": inputs, "rows": [one(sz) for sz in sizes],
               "bus_bandwidth_factor": bus_bandwidth_factor(op=args.op, n=n),
               "assumptions": ASSUMPTIONS}
        print(_json_text(res) if args.json else format_sweep(res))
        return res
    size = parse_size_bytes(args.size)
    inputs["size_bytes"] = size
    r = one(size)
    res = dict(r, inputs=inputs, bus_bandwidth_factor=bus_bandwidth_factor(op=args.op, n=n),
               assumptions=ASSUMPTIONS)
    print(_json_text(res) if args.json else format_collective(res))
    return res


def run_training(args, parser, net, hw_inputs, notes=()):
    """Training-step mode: resolve the model, validate the layout, cost every collective. `notes`
    (the hardware's) and the model's are printed after the last check, so an error is one line."""
    try:
        spec, model_notes = resolve_model_spec(args)
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
    for w in spec["warnings"]:
        print(f"warning: {w}", file=sys.stderr)
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
    try:
        main()
    except BrokenPipeError:  # output piped into `head` or a pager that quit early
        sys.stdout = None
        sys.exit(141)
