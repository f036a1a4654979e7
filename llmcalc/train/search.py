"""The training layout search: every tp/pp/cp/ep/dp, micro-batch and recompute split that fits,
costed and ranked."""

import heapq
import math

from ..model.kinds import layer_groups
from .flops import backward_flops, recompute_flops, sequence_forward_flops
from .kernels import LEGACY_MEGATRON, RECOMPUTE, eager_framework
from .memory import training_memory
from .step import LAYER_COST_KEYS, evaluate, layer_cost, memory_config, optimizer_s


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


# The TP-overlap modes in the order the step model costs them, most overlap first, and the modes
# each framework's code had (training_time.resolve_framework_defaults refuses the others).
TP_OVERLAP_ORDER = ("full", "backward", "none")
TP_OVERLAP_MODES = {"megatron-2021": ("none",), "megatron-2022": ("backward", "none")}
SEARCH_MAX_MICRO_BATCH = 1024  # a bound on the enumeration, far above any micro-batch that fits


def search_knobs(spec, base, *, hw, pinned=(), exhaustive=False):
    """What the search enumerates for these GPUs: the parallel shapes (tp, cp, pp, vp, ep, ZeRO
    stage, dp) and the execution knobs costed on each (TP overlap modes, DP overlap, sequence
    parallelism, optimizer offload). `pinned`: knobs the user fixed (their value in `base` kept).

    Enumerated: tp any divisor of the GPUs and of every layer's heads, across nodes too (the
    collectives cost the scale-out hop); cp powers of two with s / cp >= 4096 (ring attention needs
    long shards to hide its K/V exchange: a stated scope, as today); pp dividing the layers; vp
    dividing the layers per stage; ep dividing the experts and dp x cp; ZeRO 0-3 (3 only without a
    pipeline); sequence parallelism on and off for tp > 1; optimizer offload on and off.

    Dominance pruning (skipped with exhaustive=True; tests/test_calc_training_time.py checks that the
    pruned search returns the exhaustive answer). A knob value is left out only where the step
    model (train/step.py) makes another value at least as fast with at most the same memory:
      * TP overlap: each mode only moves TP collectives from exposed to hidden, and a hidden
        collective costs _hidden(c, x, sd) = max(0, c - x) + sd min(c, x) <= c for sd <= 1
        (--overlap-slowdown is bounded to [0, 1]); nothing else reads the mode. So the most
        overlapping mode the framework has is never slower: only it is costed.
      * DP overlap: dp_exposed_s exposes max(bucket, t - backward) <= t with overlap and t without
        (and drops the ZeRO-1/2 all-gather from t); memory does not read it. Only on is costed,
        except under megatron-2021/2022, whose DDP choice is tied to the gradient dtype.
      * ZeRO-1 under --framework megatron: every time term reads ZeRO 1 and 2 alike (dp_exposed_s,
        optimizer_s; the FSDP paths are eager-only), and stage 2 also shards the gradients, so
        ZeRO-2 is never slower and never larger: ZeRO-1 is not costed.
    Memory pruning (always; search_layouts): memory grows with the micro-batch, so each
    (shape, knobs, recompute) stops at the first micro-batch that does not fit."""
    n, L, s, gbs = base["num_gpus"], spec["num_layers"], base["sequence_length"], base["global_batch_size"]
    fw = base.get("framework", "megatron")
    legacy = fw in LEGACY_MEGATRON
    y2021 = fw == "megatron-2021"
    heads = [x["heads"] for g in layer_groups(spec) for x in g[0]["attention"]] or [1]
    moe = [x for g in layer_groups(spec) for x in g[0]["mlp"] if x["kind"] == "moe"]
    tps = [t for t in _divisors(math.gcd(n, *heads))]
    cps = [1] if legacy else [c for c in (1, 2, 4, 8, 16, 32) if c == 1 or (s % c == 0 and s // c >= 4096)]
    if legacy:
        zeros = (0,)
    elif exhaustive or eager_framework(base):
        zeros = (0, 1, 2, 3)
    else:
        zeros = (0, 2, 3) if fw == "megatron" else (0, 1, 2, 3)
    if "zero_stage" in pinned:
        zeros = (base["zero_stage"],)
    modes = TP_OVERLAP_MODES.get(fw, TP_OVERLAP_ORDER)
    if "tp_comm_overlap" in pinned:
        modes = (base["tp_comm_overlap"],)
    elif not exhaustive:
        modes = modes[:1]
    dpo = (base["dp_overlap"],) if legacy or "dp_overlap" in pinned else (True,) if not exhaustive else (True, False)
    offloads = (False,) if legacy else (base["offload"],) if "offload" in pinned else (False, True)
    groups = []
    for tp in tps:
        sps = (False,) if tp == 1 or y2021 else (base["sp"],) if "sp" in pinned else (True, False)
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
                        for zero in zeros:
                            if zero == 3 and pp > 1:
                                continue
                            groups.append({"tp": tp, "cp": cp, "pp": pp, "vp": vp, "ep": ep, "zero_stage": zero,
                                           "dp": dp, "sps": sps})
    return groups, {"tp_comm_overlap": modes, "dp_overlap": dpo, "offload": offloads}


def _layer_time_s(spec, lay, *, hw, net, cache, kinds):
    """Forward + backward + recompute seconds of all the model's layers for one micro-batch on one
    rank (compute and exposed communication), from the same per-layer costs evaluate() sums (kept
    in the shared cache under evaluate's own key)."""
    key_lay = tuple(lay[k] for k in LAYER_COST_KEYS)
    total = 0.0
    for lid, (layer, count) in kinds.items():
        k = (lid, key_lay)
        if k not in cache:
            cache[k] = layer_cost(layer, spec=spec, lay=lay, hw=hw, net=net)
        c = cache[k]
        total += count * (sum(sum(v) for v in c["compute"].values()) + sum(sum(v) for v in c["comm"].values()))
    return total


def step_lower_bound_s(layers_s, *, pp, vp, m):
    """A lower bound on evaluate()'s step time from the layers alone: the pipeline takes m t_max +
    (p - 1) mean / vp (pipeline_time_s), each stage's time is at least its layers' time, the
    slowest stage at least the mean and the mean at least layers_s / p; everything else evaluate()
    adds (embedding, head and loss, pipeline sends, DP and ZeRO exposure, the optimizer) is >= 0.
    So step >= layers_s / p x (m + (p - 1) / vp)."""
    return layers_s / pp * (m + (pp - 1) / vp)


def search_layouts(spec, base, *, hw, net, c0, flops, progress=None, pinned=(), exhaustive=False, keep=5):
    """The fastest layouts of base["num_gpus"] GPUs for base["global_batch_size"] (search_knobs),
    ranked by time per sequence (or cost, the same order at a fixed GPU count). Per shape and knobs:
    recompute none/selective/full (selective only without a fused attention kernel: with one,
    selective stores what none stores), micro-batch sizes dividing the per-replica batch. The batch
    becomes the largest multiple of dp at most --global-batch-size (as Calculon's search does), so
    that a GPU count with a large prime factor still has layouts.

    Branch and bound, each cut provably safe (exhaustive=True costs every candidate instead):
      * every candidate gets step_lower_bound_s from its layers' cost (cheap: one cost per layer
        kind and layer-level knobs, shared by all pp, vp, dp, ZeRO and offload choices), and the
        candidates are costed in increasing order of that bound; once the bound exceeds the
        `keep`-th best time found and the best time of a second parallel shape (what the report
        shows), no later candidate can enter what is reported: the search stops;
      * memory grows with the micro-batch: a (shape, knobs, recompute) whose micro-batch b does
        not fit skips every larger one;
      * an offloaded optimizer changes only the optimizer step (optimizer_s) and the memory: where
        the same layout fits without offload and optimizer_s with offload is no faster, the
        offloaded twin is never faster and is not costed.
    Returns (rows best first, layouts costed, parallel shapes)."""
    gbs = base["global_batch_size"]
    y2021 = base.get("framework") == "megatron-2021"
    groups, knobs = search_knobs(spec, base, hw=hw, pinned=pinned, exhaustive=exhaustive)
    cache, kinds = {}, {}
    for layer in spec["layers"]:
        kinds[id(layer)] = (layer, kinds.get(id(layer), (layer, 0))[1] + 1)
    rcs = [rc for rc in RECOMPUTE if ("recompute" in pinned and rc == base["recompute"])
           or ("recompute" not in pinned and not (rc == "selective" and (base["flash_attention"] or y2021)))]
    cands = []
    for gi, g in enumerate(groups):
        dp = g["dp"]
        gbs_dp = gbs // dp * dp
        for sp in g["sps"]:
            for mode in knobs["tp_comm_overlap"] if g["tp"] > 1 else knobs["tp_comm_overlap"][:1]:
                for dpo in knobs["dp_overlap"] if dp * g["cp"] > 1 else knobs["dp_overlap"][:1]:
                    for ri, rc in enumerate(rcs):
                        for b in _divisors(gbs_dp // dp, SEARCH_MAX_MICRO_BATCH):
                            lay = dict(base, global_batch_size=gbs_dp, etp=1 if g["ep"] > 1 else g["tp"], sp=sp,
                                       micro_batch_size=b, recompute=rc, tp_comm_overlap=mode, dp_overlap=dpo,
                                       **{k: g[k] for k in ("tp", "cp", "pp", "vp", "ep", "zero_stage")})
                            m = gbs_dp // (b * dp)
                            lb = step_lower_bound_s(_layer_time_s(spec, lay, hw=hw, net=net, cache=cache, kinds=kinds),
                                                    pp=g["pp"], vp=g["vp"], m=m) / gbs_dp
                            for offload in knobs["offload"]:
                                cands.append((lb, offload, gi, sp, mode, dpo, ri, b, lay))
    cands.sort(key=lambda c: c[:8])
    evaluated, rows, too_big, fits = 0, [], {}, {}
    kth = []  # the `keep` best times, negated (a max-heap)
    best_by_shape = {}
    limit = math.inf
    for i, (lb, offload, gi, sp, mode, dpo, ri, b, lay) in enumerate(cands):
        if progress and i % 256 == 0:
            progress(i, len(cands))
        if lb > limit and not exhaustive:
            break
        mk = (gi, sp, mode, dpo, ri, offload)
        if b >= too_big.get(mk, math.inf):
            continue
        lay = dict(lay, offload=offload)
        if check_layout(spec, lay):
            continue
        lay = complete_layout(lay)
        twin = fits.get((gi, sp, mode, dpo, ri, b)) if offload else None
        if twin is not None and not exhaustive:
            worst = twin["slowest_stage"]
            held = cache[("params", lay["tp"], lay["pp"], lay["vp"], lay["etp"], lay["ep"], worst)]
            if optimizer_s(sum(held), lay=lay, hw=hw) >= twin["breakdown_s"]["optimizer_step"]:
                continue
        mem, _ = training_memory(spec, memory_config(spec, lay, c0), b)
        if hw["memory_bytes"] is not None and mem["total_bytes"] > hw["memory_bytes"]:
            too_big[mk] = min(b, too_big.get(mk, math.inf))  # a larger micro-batch only needs more
            continue
        res = evaluate(spec, lay, hw=hw, net=net, c0=c0, flops=flops, cache=cache, memory=mem)
        evaluated += 1
        if not offload:
            fits[(gi, sp, mode, dpo, ri, b)] = res
        # rank by time per sequence (the same order as step time when every layout runs the whole
        # batch; fair when a batch was rounded down to a multiple of dp)
        t = res["step_time_s"] / lay["global_batch_size"]
        rows.append((t, lay, res))
        heapq.heappush(kth, -t)
        if len(kth) > keep:
            heapq.heappop(kth)
        shape = layout_shape(lay)
        best_by_shape[shape] = min(t, best_by_shape.get(shape, math.inf))
        if len(kth) == keep and len(best_by_shape) > 1:
            limit = max(-kth[0], heapq.nsmallest(2, best_by_shape.values())[1])
    rows.sort(key=lambda r: r[0])
    return rows, evaluated, len(groups)


def layout_shape(lay):
    """The parallel shape of a layout, as the report compares two: tp, pp, vp, cp, ep and ZeRO."""
    return (lay["tp"], lay["pp"], lay["vp"], lay["cp"], lay["ep"], lay["zero_stage"])


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
