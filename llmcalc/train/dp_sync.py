"""Data-parallel gradient and weight synchronisation of one pipeline stage: the collectives every
stack pays (Megatron-LM, PyTorch DDP/FSDP, DeepSpeed), timed by calc_comm.py's model. Each
stack's overlap and exposure rules live with it (step.dp_exposed_s,
deepspeed.deepspeed_dp_exposed_s)."""

from ..comm.collectives import collective_time_s, group_placement


def comm_time_s(op, nbytes, *, n, stride, net, gpus_per_node):
    """One collective of `nbytes` over a group of n ranks spaced `stride` apart (calc_comm.py's
    collective_time_s with its group_placement)."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    g, _ = group_placement(size=n, stride=stride, gpus_per_node=gpus_per_node)
    return collective_time_s(op=op, size_bytes=nbytes, n=n, gpus_per_node=g, net=net)["time_s"]


def dp_sync_times_s(dense, expert, *, lay, net):
    """(gradient reduction, ZeRO-1/2 weight gather) seconds of one stage holding `dense` and
    `expert` weights per rank: over its dp x cp replicas (stride tp; expert weights over dp x cp /
    ep), ZeRO 0 all-reduce, 1-3 reduce-scatter in the gradient dtype; ZeRO 1-2 all-gather the
    updated 16-bit weights."""
    dp, cp, tp, zero, G = lay["dp"], lay["cp"], lay["tp"], lay["zero_stage"], lay["gpus_per_node"]
    n = dp * cp
    t = ag = 0.0
    for p, size, stride in ((dense, n, tp), (expert, n // lay["ep"], tp * cp * lay["ep"])):
        if p <= 0 or size <= 1:
            continue
        op = "all_reduce" if zero == 0 else "reduce_scatter"
        t += comm_time_s(op, p * lay["grad_bytes"], n=size, stride=stride, net=net, gpus_per_node=G)
        if zero in (1, 2):
            ag += comm_time_s("all_gather", p * 2, n=size, stride=stride, net=net, gpus_per_node=G)
    return t, ag
