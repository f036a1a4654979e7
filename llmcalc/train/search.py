"""The training layout search: every tp/pp/cp/ep/dp, micro-batch and recompute split that fits,
costed and ranked."""

import math

from ..model.kinds import layer_groups
from .flops import backward_flops, recompute_flops, sequence_forward_flops
from .kernels import LEGACY_MEGATRON, RECOMPUTE
from .memory import training_memory
from .step import evaluate, memory_config


def sequence_flops(spec, *, seq_len):
    """Model FLOPs (forward + backward) and hardware FLOPs per recompute mode of one sequence,
    exactly as calc_transformer_flops.py counts them (attention over the full s x s, its default
    convention, as Narayanan et al. 2021 eq. 3 and Korthikanti et al. 2022's MFU count it)."""
    fwd = sequence_forward_flops(spec, seq_len=seq_len, attention="full")
    f, b = sum(fwd.values()), backward_flops(fwd)
    return {"model": f + b, "forward": f,
            "hardware": {r: f + b + recompute_flops(fwd, recompute=r) for r in RECOMPUTE}}


def _divisors(n, cap=None):
    """Divisors of n in increasing order (at most `cap`), in O(sqrt n)."""
    small, large, d = [], [], 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d * d != n:
                large.append(n // d)
        d += 1
    out = small + large[::-1]
    return [x for x in out if cap is None or x <= cap]


def check_layout(spec, lay):
    """None if the layout can run, else a one-line reason (the same rules in both modes)."""
    tp, pp, vp, cp, ep, etp = lay["tp"], lay["pp"], lay["vp"], lay["cp"], lay["ep"], lay["etp"]
    n = lay["num_gpus"]
    if n % (tp * pp * cp):
        return f"--num-gpus {n} is not divisible by tp x pp x cp = {tp * pp * cp}"
    dp = n // (tp * pp * cp)
    L = spec["num_layers"]
    if pp > L:
        return f"--pipeline-parallel-size {pp} exceeds the {L} layers"
    if L % (pp * vp):
        return f"{L} layers do not split evenly over pp x vp = {pp} x {vp}"
    if vp > 1 and pp == 1:
        return "--virtual-pipeline-size > 1 needs --pipeline-parallel-size > 1"
    if vp > 1 and pp <= 2 and lay.get("framework") in LEGACY_MEGATRON:  # de7dc40, d898a8991d arguments.py
        return f"Megatron-LM of {lay['framework'][-4:]} interleaves only with --pipeline-parallel-size > 2"
    for layer, _, _ in layer_groups(spec):
        for x in layer["attention"]:
            if x["heads"] % tp:
                return f"attention heads {x['heads']} are not divisible by -tp {tp}"
            if x["kv_heads"] % tp and tp % x["kv_heads"]:
                return f"kv heads {x['kv_heads']} and -tp {tp}: one must divide the other"
            if cp > 1 and x["kind"] == "dsv4":
                return "context parallelism for DeepSeek-V4's compressed attention is not modelled"
        for x in layer["mlp"]:
            if x["kind"] == "dense" and x["width"] % tp:
                return f"MLP width {x['width']} is not divisible by -tp {tp}"
            if x["kind"] == "moe":
                if x["num_experts"] % ep:
                    return f"{x['num_experts']} experts are not divisible by -ep {ep}"
                if x["width"] % etp or x["shared_width"] % tp:
                    return f"expert width {x['width']} is not divisible by etp {etp}"
    if ep > 1 and not any(x["kind"] == "moe" for g in layer_groups(spec) for x in g[0]["mlp"]):
        return "-ep > 1 needs a MoE model"
    if (dp * cp * tp) % (ep * etp):
        return f"ep x etp = {ep} x {etp} does not divide dp x cp x tp = {dp * cp * tp}"
    s = lay["sequence_length"]
    if s % cp:
        return f"--sequence-length {s} is not divisible by -cp {cp}"
    if lay["sp"] and (s // cp) % tp:
        return f"sequence parallelism needs s / cp = {s // cp} divisible by -tp {tp}"
    gbs, b = lay["global_batch_size"], lay["micro_batch_size"]
    if gbs % (b * dp):
        return f"--global-batch-size {gbs} is not divisible by micro-batch x dp = {b} x {dp}"
    m = gbs // (b * dp)
    if vp > 1 and m % pp:
        return f"the interleaved schedule needs micro-batches ({m}) divisible by pp {pp}"
    if lay["zero_stage"] == 3 and pp > 1:
        return "ZeRO-3 / FSDP with pipeline parallelism is not supported (DeepSpeed, Megatron-LM)"
    return None


def complete_layout(lay):
    """Derived fields: dp and the number of micro-batches per step."""
    dp = lay["num_gpus"] // (lay["tp"] * lay["pp"] * lay["cp"])
    return dict(lay, dp=dp, num_microbatches=lay["global_batch_size"] // (lay["micro_batch_size"] * dp))


def search_layouts(spec, base, *, hw, net, c0, flops, progress=None):
    """Every layout of base["num_gpus"] GPUs for base["global_batch_size"], pruned by memory first,
    ranked by time per sequence (or cost, the same order at a fixed GPU count). Enumerated: tp (powers of two
    dividing the heads, within a node), cp (powers of two, s / cp >= 4096), pp (dividing the layers),
    vp (dividing the layers per stage), ep (dividing the experts and dp x cp; experts unsplit, etp 1),
    sequence parallelism whenever tp > 1 (Korthikanti et al. 2022: same communication volume, less
    memory), ZeRO-1 (distributed optimizer) or, without pipelining, ZeRO-3, micro-batch sizes
    dividing the per-replica batch (<= 64), recompute none/selective/full; CPU offload of the
    optimizer only when nothing fits without it. Memory is monotone in the micro-batch and recompute,
    so each group stops at the first micro-batch that does not fit."""
    n, L, s, gbs = base["num_gpus"], spec["num_layers"], base["sequence_length"], base["global_batch_size"]
    heads = [x["heads"] for g in layer_groups(spec) for x in g[0]["attention"]] or [1]
    moe = [x for g in layer_groups(spec) for x in g[0]["mlp"] if x["kind"] == "moe"]
    G = hw["gpus_per_node"]
    tps = [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= G and n % t == 0 and all(hh % t == 0 for hh in heads)]
    cps = [c for c in (1, 2, 4, 8, 16, 32) if c == 1 or (s % c == 0 and s // c >= 4096)]
    evaluated, rows, cache = 0, [], {}
    groups = []
    y2021 = base.get("framework") == "megatron-2021"  # no SP, ZeRO, selective recompute or offload then
    legacy = base.get("framework") in LEGACY_MEGATRON  # 2022: SP and selective, still no ZeRO, CP, EP
    if legacy:
        cps = [1]
    for tp in tps:
        for cp in cps:
            for pp in _divisors(L):
                if n % (tp * cp * pp):
                    continue
                dp = n // (tp * cp * pp)
                if gbs < dp:
                    continue
                vps = [1] + ([v for v in _divisors(L // pp) if v > 1] if pp > 1 else [])
                eps = [1]
                if moe and not legacy:
                    E = math.gcd(*[x["num_experts"] for x in moe])
                    eps = [e for e in _divisors(E) if (dp * cp) % e == 0]
                for vp in vps:
                    for ep in eps:
                        for zero in ((0,) if legacy else (1, 3) if pp == 1 else (1,)):
                            groups.append((tp, cp, pp, vp, ep, zero, dp))
    for offload in ((False,) if legacy else (False, True)):
        for gi, (tp, cp, pp, vp, ep, zero, dp) in enumerate(groups):
            if progress:
                progress(gi + (len(groups) if offload else 0), 2 * len(groups) if offload else len(groups))
            # the batch becomes the largest multiple of dp at most --global-batch-size (as Calculon's
            # search does), so that a GPU count with a large prime factor still has layouts
            gbs_dp = gbs // dp * dp
            mbs_all = _divisors(gbs_dp // dp, 64)
            for rc in RECOMPUTE:
                if rc == "selective" and (base["flash_attention"] or y2021):
                    continue  # a fused attention kernel stores no s x s scores: selective = none
                for b in mbs_all:
                    lay = dict(base, global_batch_size=gbs_dp, tp=tp, cp=cp, pp=pp, vp=vp, ep=ep,
                               etp=1 if ep > 1 else tp, sp=tp > 1 and not y2021,
                               zero_stage=zero, micro_batch_size=b, recompute=rc, offload=offload)
                    if check_layout(spec, lay):
                        continue
                    lay = complete_layout(lay)
                    mem, _ = training_memory(spec, memory_config(spec, lay, c0), b)
                    if hw["memory_bytes"] is not None and mem["total_bytes"] > hw["memory_bytes"]:
                        break  # a larger micro-batch only needs more
                    res = evaluate(spec, lay, hw=hw, net=net, c0=c0, flops=flops, cache=cache, memory=mem)
                    evaluated += 1
                    # rank by time per sequence (the same order as step time when every layout
                    # runs the whole batch; fair when a batch was rounded down to a multiple of dp)
                    rows.append((res["step_time_s"] / lay["global_batch_size"], lay, res))
        if rows:
            break
    rows.sort(key=lambda r: r[0])
    return rows, evaluated, len(groups)


def limiter(res):
    """What holds a layout back most: the largest non-compute share of its step."""
    bd = res["breakdown_s"]
    cands = {"bubble": bd.get("pipeline_bubble", 0), "exposed DP": bd.get("exposed_dp_comm", 0),
             "TP comm": bd.get("exposed_tp_comm", 0), "EP comm": bd.get("exposed_ep_comm", 0),
             "CP comm": bd.get("exposed_cp_comm", 0), "PP comm": bd.get("exposed_pp_comm", 0),
             "recompute": sum(v for k, v in bd.items() if k.startswith("recompute_")),
             "ZeRO-3 gather": bd.get("exposed_zero3_gather", 0), "FSDP comm": bd.get("exposed_fsdp_comm", 0),
             "optimizer": bd.get("optimizer_step", 0)}
    k = max(cands, key=cands.get)
    share = cands[k] / res["step_time_s"]
    if res.get("headroom_bytes") is not None and res["headroom_bytes"] < 0.05 * (res["total_bytes"] or 1):
        return f"memory ({share:.0%} {k})"
    return f"{k} {share:.0%}"
