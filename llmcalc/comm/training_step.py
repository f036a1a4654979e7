"""The collectives one GPU takes part in during one training step, by parallelism (tp, sp, cp,
ep, pp, dp with ZeRO), with their sizes as nccl-tests counts them."""

import math

from ..model.formulas import state_elements


def training_step_collectives(*, spec, breakdown, tp, pp, dp, ep, cp, sequence_parallel,
                              zero_stage, micro_batch_size, grad_accum_steps, seq_length,
                              act_bytes, grad_bytes):
    """Collectives one GPU takes part in during one training step (no activation recompute,
    average pipeline stage). Each row: parallelism, op, group size and stride, size (nccl-tests
    convention) and calls per step. Sources: Megatron-LM (Shoeybi et al. 2019 sec. 3; Korthikanti et
    al. 2022 sec. 4.2.2; Narayanan et al. 2021), ZeRO (Rajbhandari et al. 2020 sec. 7), GShard
    all-to-all, Ring Attention K/V exchange."""
    b, s, h, m = micro_batch_size, seq_length, spec["hidden_size"], grad_accum_steps
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
