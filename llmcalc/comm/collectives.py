"""Collective times over nodes as nccl-tests reports them: ring, tree, NVLS and two-level
algorithms under NCCL's LL, LL128 and Simple protocols (alpha-beta per hop), with the constants
each was set from."""

import math

from ..records import Record


# ---------------------------------------------------------------------------------------------
# Constants. Latencies in seconds; efficiencies are achieved / line-rate bandwidth.
# ---------------------------------------------------------------------------------------------

# Fixed cost of one collective call (kernel launch, synchronisation), before any hop.
# 8.9 us = 10.14 us, the floor of all_reduce_perf on 2 x A100-SXM4-40GB (32-64 B rows, NVIDIA/nccl
# issue #583), minus its 2 NVLink hops at ALPHA_HOP_S["ll"]["intra"].
ALPHA_LAUNCH_S = 8.9e-6  # calibrated: alpha_launch_s

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
SCALE_UP_EFFICIENCY = 0.80  # calibrated: scale_up_efficiency

# PCIe cards without NVLink (hardware.py's pcie_peer_bandwidth_bytes_per_s: L40S, L4, A10, A10G)
# reach their peers over the slot. NCCL's ring there: 21 GB/s bus bandwidth on 8 x A100 80GB PCIe
# (Gen4 x16, dual EPYC 7543, NCCL 2.9.9; NVIDIA/nccl issue #841), 0.667 of the 31.5 GB/s line
# rate (a 4-GPU Gen4 box, tinygrad/open-gpu-kernel-modules #36: 25.8 GB/s, 0.82). Servers of such
# cards hold 8 (AWS g5/g6/g6e.48xlarge).
PCIE_PEER_EFFICIENCY = 21.0 / 31.5
PCIE_SERVER_GPUS = 8

# NVLS all-reduce efficiency: algbw ~275 GB/s on 8 x H100 with NVLink SHARP (busbw ~480), of the
# 450 GB/s line rate (S. Jeaugey, NVIDIA/nccl-tests issue #212) -> 275/450 = 0.61.
NVLS_EFFICIENCY = 0.61  # calibrated: nvls_efficiency

# Scale-out (InfiniBand/RoCE) efficiency: 2 nodes of 8 x A100 with 8 x 200 Gb/s HDR per node reach
# busbw 187.7 GB/s at 8 GiB, bounded by the 8 x 25 GB/s NICs -> 187.7/200 = 0.94 (Azure NDmV4
# all_reduce_perf; a calibration point, listed as such in VALIDATION.md).
SCALE_OUT_EFFICIENCY = 0.94  # calibrated: scale_out_efficiency

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


class Network(Record):
    """The network the collective formulas read, built once by build_net: effective bandwidths
    (line rate x efficiency, bytes/s per GPU and direction) and latencies (s)."""

    FIELDS = {
        "intra_bytes_per_s": "scale-up link one rank drives (NVLink, xGMI, PCIe peers) x the "
                             "ring/tree efficiency",
        "inter_bytes_per_s": "scale-out link per GPU (its NIC) x the scale-out efficiency; 0.0 "
                             "when none was given (a job inside one scale-up domain never reads "
                             "it)",
        "nvls_bytes_per_s": "NVLS all-reduce rate: the scale-up line rate x the NVLS efficiency",
        "in_network_reduction": "the scale-up switch reduces (NVLink SHARP): NVLS algorithms "
                                "allowed",
        "mesh_domain": "devices of a full-mesh scale-up fabric (xGMI, Gaudi RoCE), whose bandwidth "
                       "splits over its peer links; None: a switch (or the user's own link)",
        "launch_s": "fixed cost of one collective call",
        "nvls_s": "NVLS all-reduce latency on top of launch_s",
        "hop_s": "per-hop latency by protocol and link: {'ll'|'simple': {'intra', 'inter'}}",
    }
    REQUIRED = tuple(FIELDS)


def build_net(*, intra_bytes_per_s, inter_bytes_per_s, in_network_reduction, intra_efficiency,
              inter_efficiency, nvls_efficiency, launch_s, intra_hop_ll_s, inter_hop_ll_s,
              mesh_domain=None):
    """The Network the formulas read: effective bandwidths (line rate x efficiency) and latencies.
    Simple protocol hops keep NCCL's Simple/LL ratios (3.4/0.6 NVLink, 14/2.7 network)."""
    r_i = ALPHA_HOP_S["simple"]["intra"] / ALPHA_HOP_S["ll"]["intra"]
    r_o = ALPHA_HOP_S["simple"]["inter"] / ALPHA_HOP_S["ll"]["inter"]
    return Network(
        intra_bytes_per_s=intra_bytes_per_s * intra_efficiency,
        inter_bytes_per_s=(inter_bytes_per_s or 0.0) * inter_efficiency,
        nvls_bytes_per_s=intra_bytes_per_s * nvls_efficiency,
        in_network_reduction=bool(in_network_reduction), mesh_domain=mesh_domain,
        launch_s=launch_s, nvls_s=ALPHA_NVLS_S,
        hop_s={"ll": {"intra": intra_hop_ll_s, "inter": inter_hop_ll_s},
               "simple": {"intra": intra_hop_ll_s * r_i, "inter": inter_hop_ll_s * r_o}})
