"""MoE token dispatch as Megatron-Core runs it (--moe-dispatcher): `alltoall`, NCCL's all-to-all of
each token's k copies (calc_comm.py's alltoall, the default), or `flex` with DeepEP's kernels
(--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep), which send each token once
per destination GPU inside a node and once per destination node over RDMA, FP8 on dispatch under
--dtype fp8 and BF16 on combine, at DeepEP's measured bottleneck bandwidths.
"""

from math import comb


# DeepEP's normal (training) kernels, measured by its authors on H800 (NVLink ~160 GB/s achievable
# of 200 per direction; one CX7 400 Gb/s NIC, 50 GB/s, per GPU), DeepSeek-V3's pretraining setting
# (4096 tokens, hidden 7168, top-8, FP8 dispatch, BF16 combine): deepseek-ai/DeepEP docs/legacy.md
# @dd758ca, "Normal kernels with NVLink and RDMA forwarding". Bottleneck bandwidth / the H800's line
# rate (hardware.py: 200 GB/s NVLink per direction, 50 GB/s NIC), (dispatch, combine):
#   intranode EP 8: 153 and 158 GB/s NVLink; internode EP 16: 43 / 43, EP 32: 58 / 57, EP 64: 51 / 50 GB/s RDMA.
# Applied as fractions of any GPU's links (an assumption off the H800).
DEEPEP_NVLINK_FRACTION = (153 / 200, 158 / 200)
DEEPEP_RDMA_FRACTION = {2: (43 / 50, 43 / 50), 4: (58 / 50, 57 / 50), 8: (51 / 50, 50 / 50)}  # by nodes spanned

# FP8 dispatch carries one fp32 scale per 128 values (DeepEP's per-token, per-128-channel scales)
FP8_SCALE_BYTES_PER_VALUE = 4 / 128

MOE_DISPATCHERS = ("alltoall", "flex")


def expected_distinct_groups(*, experts, groups, picks):
    """Expected number of the `groups` equal groups of `experts` hit by `picks` distinct experts
    drawn uniformly (balanced routing): groups x (1 - C(E - E/g, k) / C(E, k))."""
    if groups <= 1 or picks <= 0:
        return min(groups, 1) if picks > 0 else 0
    per = experts // groups
    if per <= 0:
        return min(groups, picks)
    miss = comb(experts - per, picks) / comb(experts, picks) if picks <= experts - per else 0.0
    return groups * (1.0 - miss)


def deepep_time_s(*, tokens, h, experts, picks, ep, gpus_per_node, intra_bytes_per_s, inter_bytes_per_s,
                  dispatch_bytes, combine_bytes, node_limit=None):
    """(dispatch, combine) seconds of one MoE block's forward on one rank with DeepEP's normal
    kernels: `tokens` tokens each to `picks` of `experts` experts spread over `ep` ranks. Each token
    reaches each distinct destination rank once over NVLink, and across nodes each distinct remote
    node once over RDMA (then forwarded over NVLink), node-limited routing capping the nodes; the
    slower link sets the time, at DEEPEP_*_FRACTION of its line rate. Bytes per value: FP8 with its
    scales or BF16 on dispatch, BF16 on combine."""
    nodes = ep // gpus_per_node if ep > gpus_per_node else 1
    d_rank = expected_distinct_groups(experts=experts, groups=ep, picks=picks)
    d_node = expected_distinct_groups(experts=experts, groups=nodes, picks=picks) if nodes > 1 else 0.0
    if node_limit:
        d_node = min(d_node, node_limit)
    out = []
    for i, nbytes in enumerate((dispatch_bytes, combine_bytes)):
        per_token = h * nbytes
        t = tokens * d_rank * per_token / (DEEPEP_NVLINK_FRACTION[i] * intra_bytes_per_s)
        if nodes > 1:
            key = min(DEEPEP_RDMA_FRACTION, key=lambda n: abs(n - nodes))
            remote = d_node * (nodes - 1) / nodes
            t = max(t, tokens * remote * per_token / (DEEPEP_RDMA_FRACTION[key][i] * inter_bytes_per_s))
        out.append(t)
    return tuple(out)
