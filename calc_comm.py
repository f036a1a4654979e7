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
import json
import math
import os
import sys

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
DEFAULT_NUM_GPUS = 8

OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv")
ALGOS = ("auto", "ring", "tree", "nvls", "hierarchical")
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40,
          "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


# ---------------------------------------------------------------------------------------------
# Formulas (pure: numbers in, numbers out)
# ---------------------------------------------------------------------------------------------

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
        add("TP", "all_gather", tp, 1, act, 4 * L_stage * m, False,
            "2 fwd + 2 bwd per layer (SP), between GEMMs: exposed unless TP comm overlap")
        add("TP", "reduce_scatter", tp, 1, act, 4 * L_stage * m, False,
            "2 fwd + 2 bwd per layer (SP), between GEMMs: exposed unless TP comm overlap")
        add("TP", "all_gather", tp, 1, act, 2 * L_stage * m, True,
            "bwd re-gather of SP inputs for weight grads, overlaps the data-grad GEMM")
    else:
        add("TP", "all_reduce", tp, 1, act, 4 * L_stage * m, False,
            "2 fwd + 2 bwd per layer, between GEMMs: exposed")
    # Context parallel (ring attention): each layer passes this rank's K and V block around the
    # ring, cp-1 steps forward; backward passes K/V and their gradients, 2(cp-1) steps.
    kv, d = spec["num_kv_heads"], spec["head_dim"]
    kv_local = max(1, kv // tp)
    add("CP", "sendrecv", cp, tp, 2 * tokens * kv_local * d * act_bytes, 3 * (cp - 1) * L_stage * m,
        True, "K/V ring exchange, cp-1 fwd + 2(cp-1) bwd per layer, overlaps attention compute")
    # Pipeline parallel: per micro-batch one activation forward and one gradient backward per
    # stage boundary (Narayanan et al. 2021); with SP Megatron sends the 1/tp shard.
    if pp > 1:
        add("PP", "sendrecv", 2, tp * cp * dp, act // (tp if sequence_parallel else 1), 2 * m, True,
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


# === shared model spec: begin ===
# This block is repeated on purpose in every calc_*.py script that needs a model (each file stands
# alone); tests/test_shared_copies.py keeps the copies identical. Edit it here, then copy it over.

MODEL_DEFAULTS = {
    # The cookbook's calc_transformer_params.py defaults; other scripts override some of them.
    "vocab_size": 51200, "hidden_size": 6144, "num_layers": 44, "num_experts": 8,
    "expert_interval": 1, "topk": 1, "ffn_expansion_factor": 4.0, "num_mlp_linears": 2,
    "kv_size_ratio": 1.0,
}

SUPPORTED_MODEL_TYPES = (
    "gpt2", "gpt_neox", "opt", "bloom", "falcon", "llama", "mistral", "mixtral", "qwen2",
    "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2", "phi3", "starcoder2", "olmo2",
    "deepseek_v2", "deepseek_v3",
)

# Hugging Face config classes whose tie_word_embeddings default is True when config.json omits it
# (PretrainedConfig's default); the others pass tie_word_embeddings=False in their constructors.
_TIED_BY_DEFAULT = {"gpt2", "opt", "bloom", "falcon", "gemma", "gemma2", "starcoder2"}


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (no usage dump) and exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def finite_float(text):
    """argparse type for a real number: rejects nan and inf with a one-line usage error."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if value != value or abs(value) == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def add_model_args(parser):
    """Model-shape flags shared by every script (cookbook spellings kept; defaults are None so a
    flag the user gave is visible, and MODEL_DEFAULTS fill in what neither flag nor config set)."""
    g = parser.add_argument_group("model (flags override values read from a config)")
    bo = argparse.BooleanOptionalAction
    g.add_argument("--hf_model_name_or_path", "--hf-model-name-or-path", dest="hf_model_name_or_path",
                   default=None, help="local folder with config.json, a config.json path, or a hub "
                   "id (hub ids need `transformers`; never trust_remote_code)")
    g.add_argument("--vocab-size", "-v", type=int, default=None, help="V (default 51200)")
    g.add_argument("--hidden-size", "-hs", type=int, default=None, help="h (default 6144)")
    g.add_argument("--num-layers", "-l", type=int, default=None, help="L (default 44)")
    g.add_argument("--num-attention-heads", "-a", type=int, default=None,
                   help="a (default: h/128, or h/64, when it divides)")
    g.add_argument("--num-kv-heads", type=int, default=None, help="kv heads (GQA/MQA; default a)")
    g.add_argument("--kv-size-ratio", "-kv", type=finite_float, default=None,
                   help="kv heads / query heads (cookbook; 1.0 = MHA)")
    g.add_argument("--head-dim", type=int, default=None, help="d (default h/a)")
    g.add_argument("--ffn-expansion-factor", "-ff", type=finite_float, default=None,
                   help="f = ff * h when --ffn-hidden-size is not given (default 4)")
    g.add_argument("--ffn-hidden-size", type=int, default=None, help="f, the dense MLP width")
    g.add_argument("--num-mlp-linears", "-nl", type=int, default=None,
                   help="matrices per MLP: 2 (GELU) or 3 (gated, e.g. SwiGLU) (default 2)")
    g.add_argument("--swiglu", action="store_true", default=None,
                   help="gated MLP with 3 matrices (same as -nl 3)")
    g.add_argument("--tied-embeddings", action=bo, default=None,
                   help="output head shares the token embedding (default: not tied)")
    g.add_argument("--norm", choices=("layernorm", "rmsnorm"), default=None,
                   help="norm type: layernorm has weight+bias, rmsnorm weight only (default layernorm)")
    g.add_argument("--norms-per-layer", type=int, default=None,
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
    g.add_argument("--max-position-embeddings", type=int, default=None,
                   help="rows of a learned position table (default: the sequence length)")
    g.add_argument("--embedding-norm", action=bo, default=None,
                   help="a norm right after the token embedding (BLOOM)")
    g.add_argument("--final-norm", action=bo, default=None, help="final norm before the head (default on)")
    g.add_argument("--moe", action="store_true", default=None, help="mixture of experts MLPs")
    g.add_argument("--num-experts", "-e", type=int, default=None, help="E routed experts (default 8)")
    g.add_argument("--expert-interval", "-ei", type=int, default=None,
                   help="every ei-th layer is MoE (default 1)")
    g.add_argument("--topk", "-t", type=int, default=None, help="k experts per token (default 1)")
    g.add_argument("--moe-ffn-hidden-size", type=int, default=None, help="f_e (default f)")
    g.add_argument("--num-shared-experts", type=int, default=None, help="shared experts (default 0)")
    g.add_argument("--shared-expert-ffn-hidden-size", type=int, default=None,
                   help="total width of the shared experts (default num_shared * f_e)")
    g.add_argument("--shared-expert-gate", action=bo, default=None,
                   help="sigmoid gate (h -> 1) on the shared expert (Qwen-MoE)")
    g.add_argument("--num-dense-layers", type=int, default=None,
                   help="leading dense layers before the MoE layers (DeepSeek first_k_dense_replace)")
    g.add_argument("--router-bias", action=bo, default=None,
                   help="count a per-expert router bias (DeepSeek-V3's checkpoint stores one; HF "
                   "keeps it as a buffer, so it is off when reading a config)")
    g.add_argument("--q-lora-rank", type=int, default=None, help="MLA query rank (none: full q_proj)")
    g.add_argument("--kv-lora-rank", type=int, default=None, help="MLA kv latent rank (turns MLA on)")
    g.add_argument("--qk-nope-head-dim", type=int, default=None, help="MLA non-rotary q/k head dim")
    g.add_argument("--qk-rope-head-dim", type=int, default=None, help="MLA rotary q/k head dim")
    g.add_argument("--v-head-dim", type=int, default=None, help="MLA value head dim")
    return g


def load_hf_config(name_or_path):
    """Return a Hugging Face config as a dict: from a local folder or config.json with `json`
    alone, else from the hub through transformers.AutoConfig (imported only here, never with
    trust_remote_code). Raises ValueError with a one-line message."""
    if not name_or_path.strip():
        raise ValueError("--hf_model_name_or_path is empty: give a folder with config.json, a "
                         "config.json path or a hub id")
    path = os.path.expanduser(name_or_path)
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
        if not os.path.isfile(path):
            raise ValueError(f"no config.json in folder {name_or_path!r}")
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as fh:
                cfg = json.load(fh)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read {path!r}: {exc}".replace("\n", " ")) from None
        if not isinstance(cfg, dict):
            raise ValueError(f"{path!r} is not a JSON object")
        return cfg
    if os.path.exists(path):  # /dev/null, a pipe, a socket: never read, never a hub id
        raise ValueError(f"{name_or_path!r} is not a config file (neither a regular file nor a folder)")
    parts = name_or_path.split("/")  # a hub id is `name` or `org/name`; anything else is a path
    if name_or_path.endswith(".json") or name_or_path.startswith((".", "~")) or len(parts) > 2 \
            or "" in parts:
        raise ValueError(f"config file {name_or_path!r} not found")
    return _hub_config(name_or_path)


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
        try:
            from transformers import AutoConfig
            logging.getLogger("transformers").setLevel(logging.ERROR)  # its import set WARNING
            return AutoConfig.from_pretrained(path, trust_remote_code=False).to_dict()
        except Exception as exc:  # e.g. a model_type this transformers does not know
            raise ValueError(f"cannot load config {repo_id!r} ({path}): {first_line(exc)}") from None


def spec_from_hf_config(cfg):
    """Translate a Hugging Face config dict into this block's model spec fields, per family, as
    transformers' modeling_<family>.py builds the weights. Returns (fields, notes); notes list what
    was assumed. Unknown model_type: a Llama-style best-effort reading, with the assumption noted."""
    if isinstance(cfg.get("text_config"), dict) and "hidden_size" not in cfg:
        cfg = cfg["text_config"]
    mt = cfg.get("model_type")
    notes = []

    def get(*keys, default=None):
        for key in keys:
            if cfg.get(key) is not None:
                return cfg[key]
        return default

    s = {"model_type": mt,
         "vocab_size": get("vocab_size"),
         "hidden_size": get("hidden_size", "n_embd", "n_embed", "d_model"),
         "num_layers": get("num_hidden_layers", "n_layer", "num_layers"),
         "num_attention_heads": get("num_attention_heads", "n_head", "num_heads"),
         "tied_embeddings": bool(get("tie_word_embeddings", default=mt in _TIED_BY_DEFAULT))}
    h, a = s["hidden_size"], s["num_attention_heads"]
    if mt not in SUPPORTED_MODEL_TYPES:
        notes.append(f"model_type {mt!r} is not one of {', '.join(SUPPORTED_MODEL_TYPES)}; read as "
                     "Llama-style (RMSNorm, gated 3-matrix MLP, no biases, rotary, "
                     "num_key_value_heads/head_dim/intermediate_size as given)")
    llama_like = dict(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False,
                      mlp_bias=False, position_embedding="rope",
                      num_kv_heads=get("num_key_value_heads", default=a),
                      head_dim=get("head_dim"), ffn_hidden_size=get("intermediate_size"))
    if mt == "gpt2":
        s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True,
                 mlp_bias=True, position_embedding="learned",
                 position_embedding_rows=get("n_positions", "max_position_embeddings"),
                 ffn_hidden_size=get("n_inner", default=4 * h))
    elif mt == "gpt_neox":
        bias = bool(get("attention_bias", default=True))
        s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias,
                 mlp_bias=True, position_embedding="rope", ffn_hidden_size=get("intermediate_size"))
    elif mt == "opt":
        bias = bool(get("enable_bias", default=True))
        pre = bool(get("do_layer_norm_before", default=True))
        s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias,
                 mlp_bias=bias, position_embedding="learned",
                 position_embedding_rows=get("max_position_embeddings") + 2,  # OPT offsets by 2
                 ffn_hidden_size=get("ffn_dim"), word_embed_proj_dim=get("word_embed_proj_dim", default=h),
                 final_norm=pre and not get("_remove_final_layer_norm", default=False))
        if not get("layer_norm_elementwise_affine", default=True):
            s["norm"] = "none"
    elif mt == "bloom":
        s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True,
                 mlp_bias=True, position_embedding="alibi", ffn_hidden_size=4 * h, embedding_norm=True)
    elif mt == "falcon":
        new_arch = bool(get("new_decoder_architecture", default=False))
        if new_arch:
            kv = get("num_kv_heads", default=a)
            n_ln = 2 if get("num_ln_in_parallel_attn", default=2) == 2 else 1
        else:
            kv = 1 if get("multi_query", default=True) else a
            n_ln = 1 if get("parallel_attn", default=True) else 2
        bias = bool(get("bias", default=False))
        s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias,
                 position_embedding="alibi" if get("alibi", default=False) else "rope",
                 num_kv_heads=kv, norms_per_layer=n_ln, parallel_attention=bool(get("parallel_attn", default=True)),
                 ffn_hidden_size=get("ffn_hidden_size", default=4 * h))
    elif mt in ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma",
                "gemma2", "phi3", "olmo2", "deepseek_v2", "deepseek_v3") or mt not in SUPPORTED_MODEL_TYPES:
        s.update(llama_like)
        if mt == "llama" or mt not in SUPPORTED_MODEL_TYPES:
            bias = bool(get("attention_bias", default=False))
            s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=bool(get("mlp_bias", default=False)))
        if mt in ("qwen2", "qwen2_moe"):
            s["qkv_bias"] = True  # Qwen2Attention: q/k/v with bias, o without
        if mt in ("qwen3", "qwen3_moe"):
            bias = bool(get("attention_bias", default=False))
            s.update(qkv_bias=bias, attn_out_bias=bias, qk_norm="head")
        if mt == "olmo2":
            bias = bool(get("attention_bias", default=False))
            s.update(qkv_bias=bias, attn_out_bias=bias, qk_norm="full")
        if mt == "gemma2":
            s["norms_per_layer"] = 4  # input, post-attention, pre-feedforward, post-feedforward
        if mt == "gemma" and s["head_dim"] is None:
            s["head_dim"] = 256
        if mt in ("mixtral",):
            s.update(moe=True, num_experts=get("num_local_experts"), topk=get("num_experts_per_tok"),
                     moe_ffn_hidden_size=get("intermediate_size"))
        if mt in ("qwen2_moe", "qwen3_moe"):
            s.update(moe=True, num_experts=get("num_experts"), topk=get("num_experts_per_tok"),
                     moe_ffn_hidden_size=get("moe_intermediate_size"),
                     expert_interval=get("decoder_sparse_step", default=1),
                     dense_layers=list(get("mlp_only_layers", default=[]) or []))
            if mt == "qwen2_moe":
                sh = get("shared_expert_intermediate_size", default=0)
                s.update(num_shared_experts=1 if sh else 0, shared_expert_ffn_hidden_size=sh,
                         shared_expert_gate=bool(sh))
        if mt in ("deepseek_v2", "deepseek_v3"):
            bias = bool(get("attention_bias", default=False))
            n_sh = get("n_shared_experts", default=0) or 0
            fkd = get("first_k_dense_replace", default=0)
            freq = get("moe_layer_freq", default=1)
            s.update(qkv_bias=bias, attn_out_bias=bias, moe=bool(get("n_routed_experts")),
                     num_experts=get("n_routed_experts"), topk=get("num_experts_per_tok"),
                     moe_ffn_hidden_size=get("moe_intermediate_size"), num_shared_experts=n_sh,
                     shared_expert_ffn_hidden_size=n_sh * get("moe_intermediate_size", default=0),
                     num_dense_layers=fkd, router_bias=False,  # V3's correction bias is a buffer in HF
                     q_lora_rank=get("q_lora_rank"), kv_lora_rank=get("kv_lora_rank"),
                     qk_nope_head_dim=get("qk_nope_head_dim"), qk_rope_head_dim=get("qk_rope_head_dim"),
                     v_head_dim=get("v_head_dim"), head_dim=None)
            if freq != 1:
                s["dense_layers"] = [i for i in range(s["num_layers"]) if i >= fkd and i % freq]
    elif mt == "starcoder2":
        bias = bool(get("use_bias", default=True))
        s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias,
                 position_embedding="rope", num_kv_heads=get("num_key_value_heads", default=a),
                 head_dim=get("head_dim"), ffn_hidden_size=get("intermediate_size"))
    if mt not in SUPPORTED_MODEL_TYPES:
        for key in ("num_local_experts", "num_experts", "n_routed_experts"):
            if get(key):
                s.update(moe=True, num_experts=get(key), topk=get("num_experts_per_tok", default=1),
                         moe_ffn_hidden_size=get("moe_intermediate_size", "intermediate_size"))
                notes.append(f"read {key} as routed experts, each of width moe_intermediate_size "
                             "(or intermediate_size); shared experts, if any, were not read")
                break
    if s.get("moe"):
        s.setdefault("expert_interval", 1)  # a config's MoE layout is explicit, never a script default
    missing = [k for k in ("vocab_size", "hidden_size", "num_layers", "num_attention_heads")
               if not isinstance(s.get(k), int) or isinstance(s.get(k), bool)]
    if missing:
        raise ValueError(f"config lacks integer field(s) for {', '.join(missing)}")
    return {k: v for k, v in s.items() if v is not None}, notes


def resolve_model_spec(args, defaults=None):
    """Merge a model spec: values read from --hf_model_name_or_path, then explicit flags (which
    win), then `defaults` (MODEL_DEFAULTS updated by the calling script). Validates and returns
    (spec, notes); raises ValueError with a one-line message on bad input."""
    d = dict(MODEL_DEFAULTS, **(defaults or {}))
    s, notes = {}, []
    if getattr(args, "hf_model_name_or_path", None):
        s, notes = spec_from_hf_config(load_hf_config(args.hf_model_name_or_path))
    flag = lambda name: getattr(args, name, None)  # noqa: E731
    for name in ("vocab_size", "hidden_size", "num_layers", "num_attention_heads", "head_dim",
                 "ffn_hidden_size", "num_mlp_linears", "tied_embeddings", "norm", "norms_per_layer",
                 "qk_norm", "qkv_bias", "attn_out_bias", "mlp_bias", "position_embedding",
                 "embedding_norm", "final_norm", "num_experts", "expert_interval", "topk",
                 "moe_ffn_hidden_size", "num_shared_experts", "shared_expert_ffn_hidden_size",
                 "shared_expert_gate", "num_dense_layers", "router_bias", "q_lora_rank",
                 "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                 "parallel_attention"):
        if flag(name) is not None:
            s[name] = flag(name)
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
    for name in ("vocab_size", "hidden_size", "num_layers", "num_mlp_linears", "expert_interval",
                 "topk"):
        s.setdefault(name, d[name])
    V, h, L = s["vocab_size"], s["hidden_size"], s["num_layers"]
    for name in ("vocab_size", "hidden_size", "num_layers", "num_attention_heads", "num_kv_heads",
                 "head_dim", "ffn_hidden_size", "num_mlp_linears", "num_experts", "expert_interval",
                 "topk", "moe_ffn_hidden_size", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim",
                 "qk_rope_head_dim", "v_head_dim", "norms_per_layer", "max_position_embeddings"):
        val = flag(name) if flag(name) is not None else s.get(name)
        if val is not None and val <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be positive, got {val}")
    for name, cap in (("num_layers", 100_000), ("vocab_size", 2**31), ("hidden_size", 2**24),
                      ("num_attention_heads", 2**20), ("ffn_hidden_size", 2**31), ("num_experts", 2**20),
                      ("moe_ffn_hidden_size", 2**31), ("head_dim", 2**20), ("kv_lora_rank", 2**24),
                      ("q_lora_rank", 2**24), ("qk_nope_head_dim", 2**20), ("qk_rope_head_dim", 2**20),
                      ("v_head_dim", 2**20), ("norms_per_layer", 64), ("max_position_embeddings", 2**31)):
        val = flag(name) if flag(name) is not None else s.get(name)
        if val is not None and val > cap:
            raise ValueError(f"--{name.replace('_', '-')} {val} is implausibly large (at most {cap:,})")
    if flag("ffn_expansion_factor") is not None and flag("ffn_expansion_factor") > 1024:
        raise ValueError(f"--ffn-expansion-factor {flag('ffn_expansion_factor')} is implausibly large")
    for name in ("ffn_expansion_factor", "kv_size_ratio"):
        if flag(name) is not None and flag(name) <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be positive, got {flag(name)}")
    for name in ("num_shared_experts", "shared_expert_ffn_hidden_size", "num_dense_layers"):
        if s.get(name) is not None and s[name] < 0:
            raise ValueError(f"--{name.replace('_', '-')} must not be negative, got {s[name]}")
    if "num_attention_heads" not in s:
        s["num_attention_heads"] = h // 128 if h % 128 == 0 else (h // 64 if h % 64 == 0 else 1)
    a = s["num_attention_heads"]
    mla = bool(s.get("kv_lora_rank"))
    if mla:
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
    s.setdefault("tied_embeddings", False)
    s.setdefault("embedding_norm", False)
    s.setdefault("final_norm", True)
    s.setdefault("position_embedding", "rope")
    if s["position_embedding"] == "learned":
        if flag("max_position_embeddings") is not None:
            s["position_embedding_rows"] = flag("max_position_embeddings")
        s.setdefault("position_embedding_rows", getattr(args, "sequence_length", None) or 2048)
    else:
        s["position_embedding_rows"] = 0
    s.setdefault("word_embed_proj_dim", h)
    s.setdefault("moe", False)
    if s["moe"]:
        s.setdefault("num_experts", d["num_experts"])
        s.setdefault("moe_ffn_hidden_size", s["ffn_hidden_size"])
        E, k = s["num_experts"], s["topk"]
        if E < 1:
            raise ValueError("--num-experts must be at least 1 for a MoE model")
        if k > E:
            raise ValueError(f"--topk {k} is larger than --num-experts {E}")
        s.setdefault("num_shared_experts", 0)
        s.setdefault("shared_expert_ffn_hidden_size", s["num_shared_experts"] * s["moe_ffn_hidden_size"])
        s.setdefault("shared_expert_gate", False)
        s.setdefault("router_bias", False)
        s.setdefault("num_dense_layers", 0)
        dense = set(s.get("dense_layers", []))
        ei, fd = s["expert_interval"], s["num_dense_layers"]
        s["moe_layers"] = [i for i in range(L) if i >= fd and i not in dense and (i - fd) % ei == ei - 1]
    else:
        for name in ("num_experts", "moe_ffn_hidden_size", "num_shared_experts",
                     "shared_expert_ffn_hidden_size"):
            s[name] = 0
        s.update(topk=0, shared_expert_gate=False, router_bias=False, moe_layers=[])
    s.setdefault("num_dense_layers", 0)
    s.pop("dense_layers", None)
    for name in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
        s.setdefault(name, None)
    s.setdefault("model_type", None)
    return s, notes


def norm_params(*, width, norm):
    """Weights of one norm over `width` features: LayerNorm has gain and bias (2 w), RMSNorm a gain
    (w), a non-affine norm none (Ba et al. 2016; Zhang & Sennrich 2019)."""
    return {"layernorm": 2 * width, "rmsnorm": width, "none": 0}[norm]


def attention_params(spec):
    """One layer's attention weights. MHA/GQA/MQA: q (h x a d), k and v (h x kv d), o (a d x h),
    optional biases and q/k norms (Qwen3: per head, d each; OLMo 2: over all heads). MLA (DeepSeek-V2
    sec. 2.1): q directly or via a rank-r_q bottleneck with a norm, a joint kv down-projection to
    r_kv + d_rope with a norm, an up-projection to a (d_nope + d_v), and o (a d_v x h)."""
    h, a, kv, d, nm = (spec[k] for k in ("hidden_size", "num_attention_heads", "num_kv_heads",
                                        "head_dim", "norm"))
    qkv_b, o_b = spec["qkv_bias"], spec["attn_out_bias"]
    if spec.get("kv_lora_rank"):
        r_q, r_kv = spec["q_lora_rank"], spec["kv_lora_rank"]
        d_nope, d_rope, d_v = spec["qk_nope_head_dim"], spec["qk_rope_head_dim"], spec["v_head_dim"]
        qn = "rmsnorm" if nm == "layernorm" else nm
        if r_q:
            q = h * r_q + qkv_b * r_q + norm_params(width=r_q, norm=qn) + r_q * a * d
        else:
            q = h * a * d
        kv_down = h * (r_kv + d_rope) + qkv_b * (r_kv + d_rope) + norm_params(width=r_kv, norm=qn)
        kv_up = r_kv * a * (d_nope + d_v)
        return q + kv_down + kv_up + a * d_v * h + o_b * h
    qk = {"none": 0, "head": 2 * d, "full": (a + kv) * d}[spec["qk_norm"]]
    qk_nrm = norm_params(width=qk, norm="rmsnorm" if nm == "layernorm" else nm)
    return h * (a + 2 * kv) * d + qkv_b * (a + 2 * kv) * d + a * d * h + o_b * h + qk_nrm


def mlp_params(*, h, f, num_linears, bias):
    """One MLP: num_linears matrices of h x f (2 for GELU; 3 for gated GLU variants, Shazeer 2020),
    plus biases: f per input projection and h on the output projection."""
    return num_linears * h * f + (bias and (num_linears - 1) * f + h)


def moe_params(spec):
    """One MoE block (Shazeer et al. 2017; DeepSeekMoE, Dai et al. 2024): E routed experts of width
    f_e, shared experts as one MLP of their total width (+ an h -> 1 gate, Qwen-MoE), router
    h x E (+ E bias, DeepSeek-V3)."""
    h, nl, b = spec["hidden_size"], spec["num_mlp_linears"], spec["mlp_bias"]
    one_expert = mlp_params(h=h, f=spec["moe_ffn_hidden_size"], num_linears=nl, bias=b)
    f_sh = spec["shared_expert_ffn_hidden_size"]
    shared = mlp_params(h=h, f=f_sh, num_linears=nl, bias=b) if f_sh else 0
    shared += h * bool(spec["shared_expert_gate"])
    E = spec["num_experts"]
    return {"routed_experts": E * one_expert, "one_expert": one_expert, "shared_experts": shared,
            "router": h * E + E * bool(spec["router_bias"])}


def param_breakdown(spec):
    """Exact parameter counts by component for a resolved spec (see the module docstring for the
    conventions of 'non-embedding' and 'active')."""
    V, h, L, nm = spec["vocab_size"], spec["hidden_size"], spec["num_layers"], spec["norm"]
    p = spec["word_embed_proj_dim"]
    attn = attention_params(spec)
    norms = spec["norms_per_layer"] * norm_params(width=h, norm=nm)
    dense_mlp = mlp_params(h=h, f=spec["ffn_hidden_size"], num_linears=spec["num_mlp_linears"],
                           bias=spec["mlp_bias"])
    n_moe = len(spec["moe_layers"])
    n_dense = L - n_moe
    moe = moe_params(spec) if n_moe else {"routed_experts": 0, "one_expert": 0, "shared_experts": 0,
                                          "router": 0}
    moe_layer = moe["routed_experts"] + moe["shared_experts"] + moe["router"]
    out = {
        "embedding_params": V * p,
        "position_embedding_params": spec["position_embedding_rows"] * h,
        "embedding_norm_params": norm_params(width=h, norm=nm) if spec["embedding_norm"] else 0,
        "embedding_projection_params": 2 * p * h if p != h else 0,
        "attention_params": L * attn,
        "mlp_params": n_dense * dense_mlp,
        "routed_expert_params": n_moe * moe["routed_experts"],
        "shared_expert_params": n_moe * moe["shared_experts"],
        "router_params": n_moe * moe["router"],
        "layer_norm_params": L * norms,
        "final_norm_params": norm_params(width=h, norm=nm) if spec["final_norm"] else 0,
        "output_head_params": 0 if spec["tied_embeddings"] else V * p,
    }
    total = sum(out.values())
    inactive = n_moe * (spec["num_experts"] - spec["topk"]) * moe["one_expert"]
    emb = out["embedding_params"] + out["position_embedding_params"] + out["output_head_params"]
    out.update({
        "per_layer": {"attention": attn, "norms": norms, "dense_mlp": dense_mlp,
                      "moe_routed_experts": moe["routed_experts"], "moe_one_expert": moe["one_expert"],
                      "moe_shared_experts": moe["shared_experts"], "moe_router": moe["router"],
                      "dense_layer_total": attn + norms + dense_mlp,
                      "moe_layer_total": attn + norms + moe_layer if n_moe else 0},
        "num_dense_layers": n_dense, "num_moe_layers": n_moe,
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

def build_parser():
    parser = OneLineErrorParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    c = parser.add_argument_group("collective")
    c.add_argument("--op", choices=OPS, default="all_reduce",
                   help="collective, spelled as nccl-tests (default all_reduce)")
    c.add_argument("--size", default=None,
                   help="bytes: 256MiB, 1GB, 4e9, 8G (nccl-tests size); without it, a --sweep")
    c.add_argument("--num-gpus", type=int, default=None,
                   help="n, GPUs in the group (default 8; --train: tp x pp x dp x cp)")
    c.add_argument("--algo", choices=ALGOS, default="auto", help="algorithm (default auto)")
    c.add_argument("--sweep", action="store_true", help="table over sizes, like nccl-tests")
    c.add_argument("--min-size", default="8", help="sweep start (default 8 B)")
    c.add_argument("--max-size", default="8G", help="sweep end (default 8 GiB)")
    c.add_argument("--step-factor", type=finite_float, default=2.0, help="sweep multiplier (default 2)")
    hw = parser.add_argument_group("hardware (explicit flags override --gpu)")
    hw.add_argument("--gpu", default=None, help="accelerator name looked up in hardware.py")
    hw.add_argument("--gpus-per-node", type=int, default=None,
                    help="GPUs per scale-up domain (default: --gpu's domain size, else 8)")
    hw.add_argument("--intra-node-bw-GBps", dest="intra_bw", type=finite_float, default=None,
                    help="scale-up bandwidth per GPU per direction, GB/s (H100 NVLink4: 450)")
    hw.add_argument("--inter-node-bw-GBps", dest="inter_bw", type=finite_float, default=None,
                    help="scale-out bandwidth per GPU per direction, GB/s (400 Gb/s NIC: 50)")
    hw.add_argument("--in-network-reduction", action=argparse.BooleanOptionalAction, default=None,
                    help="the scale-up switch reduces (NVLink SHARP / NVLS)")
    hw.add_argument("--intra-node-efficiency", type=finite_float, default=SCALE_UP_EFFICIENCY,
                    help=f"ring/tree fraction of the scale-up line rate (default {SCALE_UP_EFFICIENCY})")
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
    t.add_argument("--tensor-parallel-size", "--tp", "-tp", dest="tp", type=int, default=1)
    t.add_argument("--pipeline-parallel-size", "--pp", "-pp", dest="pp", type=int, default=1)
    t.add_argument("--data-parallel-size", "--dp", "-dp", dest="dp", type=int, default=None,
                   help="dp (default: --num-gpus / (tp x pp x cp), else 1)")
    t.add_argument("--expert-parallel-size", "--ep", "-ep", dest="ep", type=int, default=1,
                   help="ep, carved out of dp x cp for the expert layers")
    t.add_argument("--context-parallel-size", "--cp", "-cp", dest="cp", type=int, default=1)
    t.add_argument("--sequence-parallel", action="store_true", help="Megatron sequence parallel")
    t.add_argument("--zero-stage", type=int, default=0, choices=(0, 1, 2, 3),
                   help="0 all-reduce; 1/2 reduce-scatter + all-gather; 3 also per micro-batch")
    t.add_argument("--micro-batch-size", type=int, default=1, help="b (default 1)")
    t.add_argument("--gradient-accumulation-steps", type=int, default=1,
                   help="m, micro-batches per step per pipeline (default 1)")
    t.add_argument("--sequence-length", "-s", type=int, default=2048, help="s (default 2048)")
    t.add_argument("--dtype", choices=tuple(DTYPE_BYTES), default="bf16",
                   help="activations and gathered parameters (default bf16)")
    t.add_argument("--grad-reduce-dtype", choices=tuple(DTYPE_BYTES), default="fp32",
                   help="gradient reduction (default fp32, Megatron's bf16 default)")
    add_model_args(parser)
    parser.add_argument("--json", action="store_true", help="print the result dict as JSON")
    return parser


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
            "mesh_domain": mesh}, notes


def validate(args, parser):
    """One-line errors (exit 2) for every rule, before any computing."""
    for name in ("intra_bw", "inter_bw"):
        v = getattr(args, name)
        if v is not None and not v > 0:
            parser.error(f"--{name.replace('_bw', '-node-bw-GBps').replace('_', '-')} must be "
                         f"positive, got {v}")
    for name in ("intra_node_efficiency", "inter_node_efficiency", "nvls_efficiency"):
        v = getattr(args, name)
        if not 0 < v <= 1:
            parser.error(f"--{name.replace('_', '-')} must be in (0, 1], got {v}")
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
        for name in ("min_size", "max_size"):
            try:
                v = parse_size_bytes(getattr(args, name))
            except ValueError as exc:
                parser.error(str(exc))
            if v <= 0:
                parser.error(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
        if parse_size_bytes(args.min_size) > parse_size_bytes(args.max_size):
            parser.error("--min-size is larger than --max-size")
        if not args.step_factor > 1:
            parser.error(f"--step-factor must be > 1, got {args.step_factor}")
    else:
        try:
            v = parse_size_bytes(args.size)
        except ValueError as exc:
            parser.error(str(exc))
        if v <= 0:
            parser.error(f"--size must be positive, got {args.size}")


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
                    in_network_reduction=hwd["nvls"], intra_efficiency=args.intra_node_efficiency,
                    inter_efficiency=args.inter_node_efficiency,
                    nvls_efficiency=args.nvls_efficiency, launch_s=args.launch_latency_us * 1e-6,
                    intra_hop_ll_s=args.intra_node_latency_us * 1e-6,
                    inter_hop_ll_s=args.inter_node_latency_us * 1e-6,
                    mesh_domain=hwd["mesh_domain"])
    hw_inputs = {"gpu": hwd["gpu"], "gpus_per_node": gpn, "scale_up_mesh_domain": hwd["mesh_domain"],
                 "intra_node_bandwidth_bytes_per_s": hwd["intra"],
                 "inter_node_bandwidth_bytes_per_s": hwd["inter"],
                 "in_network_reduction": hwd["nvls"],
                 "intra_node_efficiency": args.intra_node_efficiency,
                 "inter_node_efficiency": args.inter_node_efficiency,
                 "nvls_efficiency": args.nvls_efficiency,
                 "launch_latency_s": args.launch_latency_us * 1e-6,
                 "intra_node_hop_latency_s": args.intra_node_latency_us * 1e-6,
                 "inter_node_hop_latency_s": args.inter_node_latency_us * 1e-6}
    if args.train:
        res = run_training(args, parser, net, hw_inputs, notes)
        print(json.dumps(res) if args.json else format_training(res))
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
        print(json.dumps(res) if args.json else format_sweep(res))
        return res
    size = parse_size_bytes(args.size)
    inputs["size_bytes"] = size
    r = one(size)
    res = dict(r, inputs=inputs, bus_bandwidth_factor=bus_bandwidth_factor(op=args.op, n=n),
               assumptions=ASSUMPTIONS)
    print(json.dumps(res) if args.json else format_collective(res))
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
    return {"inputs": inputs, "model": spec,
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
