"""The training layout search: every tp/pp/cp/ep/dp split, ZeRO stage, micro-batch, recompute, TP
and DP overlap and offload that fits, costed and ranked by branch and bound with provably safe cuts
(search_knobs, search_layouts); a search among clusters (GPU kinds x counts) shares memory between
them and stops each one once it cannot add to the answer (search_layouts' `wanted`)."""

import heapq
import itertools
import math

from ..model.kinds import layer_groups
from .flops import backward_flops, recompute_flops, sequence_forward_flops
from .kernels import LEGACY_MEGATRON, RECOMPUTE, eager_framework
from .layout import complete_layout
from .memory import (OFFLOAD_WEIGHT_BYTES, all_stage_layers, layer_activation_bytes, layer_params_per_rank,
    layout_chunk_layers, layout_split, pipeline_split_error, stage_params_per_rank, stored_layer_bytes,
    suggest_pipeline_split)
from .offload import evaluate_layout, layer_offload_exposed_s, layout_memory
from .dp_sync import dp_sync_times_s
from .step import LAYER_COST_KEYS, head_and_embedding_s, layer_cost, optimizer_s, pass_times_s


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
    split = layout_split(lay)
    if pp > L + bool(split[2]) + bool(split[3]):  # the embedding/loss may fill a stage of their own
        return f"--pipeline-parallel-size {pp} exceeds the {L} layers"
    why = pipeline_split_error(num_layers=L, pp=pp, vp=vp, first=split[0], last=split[1], embedding_in_split=split[2],
                               loss_in_split=split[3])
    if why:
        return why
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
    if lay.get("offload_params") and lay["zero_stage"] == 3:
        return "--offload-params with -z 3 (ZeRO-Infinity's sharded offload) is not modelled: use -z 0-2"
    if (lay.get("offload_params") or lay.get("offload_activations")) and eager_framework(lay):
        return ("--offload-params / --offload-activations are costed for Megatron-LM's kernels only (FSDP's "
                "CPUOffload moves weights, gradients and optimizer together: not modelled)")
    return None


# The TP-overlap modes in the order the step model costs them, most overlap first, and the modes
# each framework's code had (tools/training_framework.py refuses the others).
TP_OVERLAP_ORDER = ("full", "backward", "none")
TP_OVERLAP_MODES = {"megatron-2021": ("none",), "megatron-2022": ("backward", "none")}
SEARCH_MAX_MICRO_BATCH = 1024  # a bound on the enumeration, far above any micro-batch that fits
# The shortest sequence shard context parallelism is searched at: a scope, not a proven cut (the
# K/V ring hides behind the attention core only on long shards). Measured: at 1024 the four
# benchmarks/search_speed.py answers are unchanged and the search takes twice the time.
CP_MIN_SHARD = 4096
# The most model chunks per stage the search tries on an uneven split (pp not dividing the layers):
# a scope, as CP_MIN_SHARD (the even splits try every vp dividing L / pp)
UNEVEN_MAX_VP = 8
# ... and the fewest layers per stage an uneven split is searched at (DeepSeek-V3's 61 layers over pp
# 16 hold 3-4 per stage): a scope; finer uneven pipelines multiply the micro-batch sizes to cost
UNEVEN_MIN_LAYERS = 3


def search_knobs(spec, base, *, hw, pinned=(), exhaustive=False, streaming=False):
    """What the search enumerates for these GPUs: the parallel shapes (tp, cp, pp, vp, ep, ZeRO
    stage, dp) and the execution knobs costed on each (TP overlap modes, DP overlap, sequence
    parallelism, optimizer offload). `pinned`: knobs the user fixed (their value in `base` kept).

    Enumerated: tp any divisor of the GPUs and of every layer's heads, across nodes too (the
    collectives cost the scale-out hop); cp powers of two with s / cp >= CP_MIN_SHARD tokens; pp
    any divisor of the GPUs / (tp cp) up to the layers: dividing the layers, vp dividing the layers
    per stage; else Megatron-LM's uneven split with the fewest layers on the fullest stage
    (memory.suggest_pipeline_split: --decoder-first/last-pipeline-num-layers), vp up to
    UNEVEN_MAX_VP where one exists, at L / pp >= UNEVEN_MIN_LAYERS; ep dividing the experts and
    dp x cp; ZeRO 0-3 (3 only without a pipeline); sequence parallelism on and off for tp > 1; the
    optimizer in host memory or not; with streaming=True (search_layouts' second pass, when nothing
    fits without) also the layers' weights (not with ZeRO-3, which shards them already) and the
    stored activations in host memory or not. Without a data-parallel group (dp x cp = 1) the ZeRO
    stages are one layout (nothing to shard): only the lowest is listed.

    Dominance pruning (skipped with exhaustive=True; tests/test_calc_training_time.py checks that the
    pruned search returns the exhaustive answer). A knob value is left out only where the step
    model (train/step.py) makes another value at least as fast with at most the same memory:
      * TP overlap: each mode only moves TP collectives from exposed to hidden, and a hidden
        collective costs _hidden(c, x, sd) = max(0, c - x) + sd min(c, x) <= c for sd <= 1
        (--overlap-slowdown is bounded to [0, 1]); nothing else reads the mode. So the most
        overlapping mode the framework has is never slower: only it is costed.
      * DP overlap: dp_exposed_s charges each of the reduction and the ZeRO-1/2 weight gather x
        as max(x share, x - c) + sd min(x, c) beside compute c with overlap, x without; that is
        <= x while the bucket's share + sd <= 1 (a bucket of 40M parameters against a stage's
        weights: share + 0.19 passes 1 only below ~49M parameters per stage, where the difference
        is a bucket's time); memory does not read it. Only on is costed, except under
        megatron-2021/2022, whose DDP choice is tied to the gradient dtype.
    Bound: every candidate's lower bound adds dp_floor_s, the least that charge can be.
    Memory pruning (always; search_layouts): memory grows with the micro-batch, so each
    (shape, knobs, recompute) stops at the first micro-batch that does not fit."""
    n, L, s, gbs = base["num_gpus"], spec["num_layers"], base["sequence_length"], base["global_batch_size"]
    fw = base.get("framework", "megatron")
    legacy = fw in LEGACY_MEGATRON
    y2021 = fw == "megatron-2021"
    heads = [x["heads"] for g in layer_groups(spec) for x in g[0]["attention"]] or [1]
    moe = [x for g in layer_groups(spec) for x in g[0]["mlp"] if x["kind"] == "moe"]
    tps = [t for t in _divisors(math.gcd(n, *heads))]
    cps = [1] if legacy else [c for c in (1, 2, 4, 8, 16, 32) if c == 1 or (s % c == 0 and s // c >= CP_MIN_SHARD)]
    if legacy:
        zeros = (0,)
    else:
        zeros = (0, 1, 2, 3)
    if "zero_stage" in pinned:
        zeros = (base["zero_stage"],)
    modes = TP_OVERLAP_MODES.get(fw, TP_OVERLAP_ORDER)
    if "tp_comm_overlap" in pinned:
        modes = (base["tp_comm_overlap"],)
    elif not exhaustive:
        modes = modes[:1]
    dpo = (base["dp_overlap"],) if legacy or "dp_overlap" in pinned else (True,) if not exhaustive else (True, False)
    # (optimizer, parameters, activations) in host memory (offload.py); none under the dated stacks
    kinds = []
    for k in ("offload", "offload_params", "offload_activations"):
        none = legacy or (k != "offload" and eager_framework(base))  # check_layout's rules
        unasked = k != "offload" and not streaming  # weights/activations streamed: second pass only
        kinds.append((False,) if none else (bool(base.get(k)),) if k in pinned else (False,) if unasked
                     else (False, True))
    offloads = [(o, p, a) for o in kinds[0] for p in kinds[1] for a in kinds[2]]
    groups = []
    for tp in tps:
        sps = (False,) if tp == 1 or y2021 else (base["sp"],) if "sp" in pinned else (True, False)
        for cp in cps:
            for pp in _divisors(n // (tp * cp), L) if n % (tp * cp) == 0 else ():
                dp = n // (tp * cp * pp)
                if gbs < dp:
                    continue
                if L % pp and L // pp < UNEVEN_MIN_LAYERS:
                    continue
                if L % pp:  # Megatron-LM's uneven split (suggest_pipeline_split), where one exists
                    vps = [(v, s_) for v in range(1, min(L // pp, UNEVEN_MAX_VP) + 1)
                           if (s_ := suggest_pipeline_split(num_layers=L, pp=pp, vp=v))]
                else:
                    vps = [(1, None)] + ([(v, None) for v in _divisors(L // pp) if v > 1] if pp > 1 else [])
                eps = [1]
                if moe and not legacy:
                    E = math.gcd(*[x["num_experts"] for x in moe])
                    eps = [e for e in _divisors(E) if (dp * cp) % e == 0]
                # no data-parallel group (dp x cp = 1): every ZeRO stage costs and holds the same
                # (nothing to shard over), so only the lowest is listed, not a tie per stage
                zs = zeros if dp * cp > 1 or "zero_stage" in pinned else zeros[:1]
                for vp, split in vps:
                    for ep in eps:
                        for zero in zs:
                            if zero == 3 and pp > 1:
                                continue
                            groups.append({"tp": tp, "cp": cp, "pp": pp, "vp": vp, "ep": ep, "zero_stage": zero,
                                           "dp": dp, "sps": sps,
                                           "decoder_first_pipeline_num_layers": split and split[0],
                                           "decoder_last_pipeline_num_layers": split and split[2]})
    return groups, {"tp_comm_overlap": modes, "dp_overlap": dpo, "offload": offloads}


def _layer_time_s(spec, lay, *, hw, net, cache, kinds, act_bytes):
    """(all layers, {(weights offloaded, activations offloaded): their exposed copies}): forward +
    backward + recompute seconds of all the model's layers for one micro-batch on one rank (compute
    and exposed communication), from the same per-layer costs evaluate() sums (kept in the shared
    cache under evaluate's own key), plus the embedding and the head; and the copies
    offload.with_offload_time adds with the layers' weights and/or stored activations in host
    memory, each layer's activations taken as the fewest any layer kind stores (with_offload_time
    charges every layer the stage's mean: a lower bound; 0 under the eager frameworks' rule)."""
    key_lay = tuple(lay[k] for k in LAYER_COST_KEYS)
    if ("layers_total", key_lay) in cache:
        return cache[("layers_total", key_lay)]
    total, per_kind = 0.0, []
    h, s = spec["hidden_size"], lay["sequence_length"] // lay["cp"]
    act = []
    for lid, (layer, count) in kinds.items():
        k = (lid, key_lay)
        if k not in cache:
            cache[k] = layer_cost(layer, spec=spec, lay=lay, hw=hw, net=net)
        c = cache[k]
        fwd, bwd = pass_times_s(c["compute"], c["comm"])
        total += count * (fwd + bwd)
        ne, ex = layer_params_per_rank(layer, h=h, norm=spec["norm"], tp=lay["tp"], etp=lay["etp"], ep=lay["ep"])
        per_kind.append((count, fwd, bwd, (ne + ex) * OFFLOAD_WEIGHT_BYTES))
        if not eager_framework(lay):
            streams = spec.get("residual_streams", 1)
            parts = layer_activation_bytes(layer, s=s, b=lay["micro_batch_size"], h=h, tp=lay["tp"], etp=lay["etp"],
                                           sp=lay["sp"], flash=lay["flash_attention"], dropout=lay["dropout"],
                                           act_bytes=act_bytes, streams=streams)
            act.append(stored_layer_bytes(parts, recompute=lay["recompute"], sp_or_pa=lay["sp"], tp=lay["tp"], s=s,
                                          b=lay["micro_batch_size"], h=h, act_bytes=act_bytes, streams=streams))
    a_min = min(act, default=0.0)
    copies = {(p, a): sum(n * sum(layer_offload_exposed_s(weight_bytes=w if p else 0.0, act_bytes=a_min if a else 0.0,
                                                          fwd_s=f, bwd_s=b, pcie_bytes_per_s=hw["pcie"]))
                          for n, f, b, w in per_kind)
              for p in (False, True) for a in (False, True)}
    first, last = head_and_embedding_s(spec, lay=lay, hw=hw, net=net)
    total += sum(first) + sum(last)
    cache[("layers_total", key_lay)] = total, copies
    return total, copies


def _optimizer_floor_s(spec, lay, *, hw, cache):
    """The fastest optimizer step any stage of the layout can take (optimizer_s grows with the
    parameters held, so the step's, set by its slowest stage, is at least this)."""
    key = ("least_held", lay["tp"], lay["pp"], lay["vp"], lay["etp"], lay["ep"], layout_split(lay))
    if key not in cache:
        by_stage = all_stage_layers(num_layers=spec["num_layers"], pp=lay["pp"], vp=lay["vp"],
                                    chunk_layers=layout_chunk_layers(spec["num_layers"], lay))
        cache[key] = min(sum(stage_params_per_rank(spec, tp=lay["tp"], pp=lay["pp"], vp=lay["vp"], etp=lay["etp"],
                                                   ep=lay["ep"], stage=st, layers_held=held)[:2])
                         for st, held in enumerate(by_stage))
    return optimizer_s(cache[key], lay=lay, hw=hw)


def _dp_sync_parts(spec, lay, *, net, cache):
    """(reduction t, weight gather g, bucket share, overlap slowdown) of the layout's first stage
    (dp_sync_times_s), for dp_floor_s; None without a data-parallel group and under eager FSDP
    (ZeRO 2-3), whose per-layer collectives replace the bucketed reduction."""
    n = lay["dp"] * lay["cp"]
    if n <= 1 or (eager_framework(lay) and lay["zero_stage"] >= 2):
        return None
    key = ("dp_parts", lay["tp"], lay["pp"], lay["vp"], lay["cp"], lay["dp"], lay["etp"], lay["ep"],
           lay["zero_stage"], layout_split(lay))
    if key not in cache:
        held = all_stage_layers(num_layers=spec["num_layers"], pp=lay["pp"], vp=lay["vp"],
                                chunk_layers=layout_chunk_layers(spec["num_layers"], lay))[0]
        dense, expert = stage_params_per_rank(spec, tp=lay["tp"], pp=lay["pp"], vp=lay["vp"],
                                              etp=lay["etp"], ep=lay["ep"], stage=0,
                                              layers_held=held)[:2]
        t, ag = dp_sync_times_s(dense, expert, lay=lay, net=net)
        share = min(1.0, lay["dp_bucket_params"] / max(dense + expert, 1))
        cache[key] = (t, ag, share, min(1.0, max(0.0, lay["overlap_slowdown"])))
    return cache[key]


def dp_floor_s(parts, *, pass_s, reductions=1):
    """The least data-parallel exposure dp_exposed_s charges a layout whose first stage's forward
    and backward of one micro-batch each take at most `pass_s`: the step's worst stage is at least
    the first (no head start); with overlap each of the reduction t and the gather g is charged
    x -> max(x share, x - c) + sd min(x, c) beside compute c <= pass_s, least at c = min(pass_s,
    x (1 - share)); without overlap x itself, more. ZeRO-2 reduces after each of its m
    micro-batches: `reductions` = m."""
    if parts is None:
        return 0.0
    t, ag, share, sd = parts
    out = 0.0
    for x, times in ((t, reductions), (ag, 1)):
        c = min(pass_s, x * (1 - share))
        out += times * (max(x * share, x - c) + sd * c)
    return out


def step_lower_bound_s(layers_s, *, pp, vp, m):
    """A lower bound on the pipeline part of evaluate()'s step from the layers, embedding and head
    alone (layers_s: all of them, one micro-batch): the pipeline takes m t_max + (p - 1) mean / vp
    (pipeline_time_s), each stage's time is at least its layers' time (plus the embedding on the
    first, the head on the last), the slowest stage at least the mean and the mean at least
    layers_s / p; what else evaluate() adds to a stage (pipeline sends, ZeRO-3 and FSDP exposure,
    exposed offload copies beyond the weights') is >= 0. So pipeline >= layers_s / p x (m + (p - 1)
    / vp); the step adds the optimizer (_optimizer_floor_s) and DP exposure (>= 0)."""
    return layers_s / pp * (m + (pp - 1) / vp)


def search_layouts(spec, base, *, hw, net, c0, flops, progress=None, pinned=(), exhaustive=False, keep=5,
                   memo=None, wanted=None, streaming=False):
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
      * weights and activations in host memory (costed from Calculon's and ZeRO-Infinity's rules,
        validated against no end-to-end measurement) are searched only when no layout of these
        GPUs fits without them (`streaming`: a second pass; a rule of scope, not a cut);
      * offload only adds time: weights and activations in host memory add their exposed copies
        (offload.with_offload_time, >= 0) and change nothing else; an offloaded optimizer changes
        only the optimizer step (optimizer_s). So where the same layout fits with a subset of the
        offloads (and, if the optimizer is one of the differences, optimizer_s offloaded is no
        faster than on the GPU), the layout with more offloads is never faster and is not costed;
      * under --framework megatron ZeRO-1 is never slower than ZeRO-2 (every time term reads the
        two alike but dp_exposed_s, where ZeRO-2 adds the reduce-scatters of the m - 1 earlier
        micro-batches, >= 0): a ZeRO-2 layout whose ZeRO-1 twin fits is not costed; with one
        micro-batch the two take the same time and ZeRO-2 the less memory: ZeRO-1 is not costed.
    `wanted`: for a search among clusters, a function of a found row's time per sequence that
    returns the time per sequence below which a row still enters the list across all clusters; the
    search then stops once the bound passes both that and its own best (its own table entry), in
    place of the `keep` rows and second shape of a search alone.
    `memo`: a dict shared by searches of other GPU kinds: memory per GPU does not depend on the
    accelerator (training_memory reads only the model and the layout), so each layout's memory is
    computed once and only the capacity it is checked against changes.
    Returns (rows best first, layouts costed, parallel shapes)."""
    gbs = base["global_batch_size"]
    y2021 = base.get("framework") == "megatron-2021"
    groups, knobs = search_knobs(spec, base, hw=hw, pinned=pinned, exhaustive=exhaustive, streaming=streaming)
    cache, kinds = {}, {}
    for layer in spec["layers"]:
        kinds[id(layer)] = (layer, kinds.get(id(layer), (layer, 0))[1] + 1)
    rcs = [rc for rc in RECOMPUTE if ("recompute" in pinned and rc == base["recompute"])
           or ("recompute" not in pinned and not (rc == "selective" and (base["flash_attention"] or y2021)))]
    offloads = sorted(knobs["offload"])  # a subset before its supersets (the twin cut needs it)
    zero1_dominates = 1 in {g["zero_stage"] for g in groups} and base.get("framework", "megatron") == "megatron"
    zero1_fits = set()  # the ZeRO-1 layouts that fit (their ZeRO-2 twins are not costed)
    cands = _bounded_candidates(spec, base, groups, knobs, rcs, hw=hw, net=net, c0=c0, cache=cache,
                                floor_cache=cache if memo is None else memo, kinds=kinds,
                                progress=progress)
    heapq.heapify(cands)  # popped in order of the bound: only the costed prefix is ever ordered
    evaluated, rows, too_big, fits = 0, [], {}, {}
    states_too_big = set()  # (group, offloads) whose model states alone exceed the capacity
    kth = []  # the `keep` best times, negated (a max-heap)
    best_by_shape = {}
    limit = math.inf
    n_cands = len(cands)
    todo = ((c, o) for c in _popped(cands) for o in offloads)  # each parent's offloads, fewest first
    for i, ((lb0, _, (layers_s, copies_s, f, opt_floor, dpf), gi, sp, mode, dpo, ri, b), offload) in enumerate(todo):
        if progress and i % 64 == 0:
            progress(i, n_cands * len(offloads))
        if lb0 > limit and not exhaustive:
            break  # no later candidate can beat what is kept
        g = groups[gi]
        gbs_dp = gbs // g["dp"] * g["dp"]
        if ((layers_s + copies_s[offload[1:]]) * f + opt_floor[offload[0]] + dpf) / gbs_dp > limit and not exhaustive:
            continue
        mk = (gi, sp, mode, dpo, ri, offload)
        if b >= too_big.get(mk, math.inf) or (gi, offload) in states_too_big:
            continue
        lay = base.replace(global_batch_size=gbs_dp, etp=1 if g["ep"] > 1 else g["tp"], sp=sp,
                   micro_batch_size=b, recompute=rcs[ri], tp_comm_overlap=mode, dp_overlap=dpo, offload=offload[0],
                   offload_params=offload[1], offload_activations=offload[2],
                   **{k: g[k] for k in ("tp", "cp", "pp", "vp", "ep", "zero_stage", "decoder_first_pipeline_num_layers",
                                        "decoder_last_pipeline_num_layers")})
        if check_layout(spec, lay):
            continue
        lay = complete_layout(lay)
        twins = fits.get((gi, sp, mode, dpo, ri, b), ())
        if twins and not exhaustive and any(_dominates(t_off, res_t, offload, lay, cache, hw)
                                            for t_off, res_t in twins):
            continue
        zk = (g["tp"], g["cp"], g["pp"], g["vp"], g["ep"], g["decoder_first_pipeline_num_layers"], sp, mode, dpo, ri, b,
              offload)
        if zero1_dominates and not exhaustive and lay["zero_stage"] in (1, 2):
            if lay["num_microbatches"] == 1 and lay["zero_stage"] == 1:
                continue  # one micro-batch: ZeRO-2 takes the same time in less memory
            if lay["zero_stage"] == 2 and zk in zero1_fits:
                continue  # the ZeRO-1 twin (costed first: same bound, earlier group) fits, never slower
        mem, act = layout_memory(spec, lay, c0, memo)
        if hw["memory_bytes"] is not None and mem["total_bytes"] > hw["memory_bytes"]:
            too_big[mk] = min(b, too_big.get(mk, math.inf))  # a larger micro-batch only needs more
            if _states_floor_bytes(mem) > hw["memory_bytes"]:
                states_too_big.add((gi, offload))  # no micro-batch, recompute or sp fits either
            continue
        if lay["zero_stage"] == 1:
            zero1_fits.add(zk)
        res = evaluate_layout(spec, lay, hw=hw, net=net, c0=c0, flops=flops, cache=cache, memory=(mem, act))
        evaluated += 1
        fits.setdefault((gi, sp, mode, dpo, ri, b), []).append((offload, res))
        # rank by time per sequence (the same order as step time when every layout runs the whole
        # batch; fair when a batch was rounded down to a multiple of dp)
        t = res["step_time_s"] / lay["global_batch_size"]
        rows.append((t, lay, res))
        heapq.heappush(kth, -t)
        if len(kth) > keep:
            heapq.heappop(kth)
        if wanted is not None:
            limit = max(-heapq.nlargest(1, kth)[0], wanted(t))  # the best so far, or what the list needs
            continue
        shape = layout_shape(lay)
        best_by_shape[shape] = min(t, best_by_shape.get(shape, math.inf))
        if len(kth) == keep and len(best_by_shape) > 1:
            limit = max(-kth[0], heapq.nsmallest(2, best_by_shape.values())[1])
    rows.sort(key=lambda r: r[0])
    if not rows and not streaming and not {"offload_params", "offload_activations"} <= set(pinned):
        # nothing fits: the second pass streams weights and/or activations from host memory
        more, ev2, _ = search_layouts(spec, base, hw=hw, net=net, c0=c0, flops=flops, progress=progress, pinned=pinned,
                                      exhaustive=exhaustive, keep=keep, memo=memo, wanted=wanted, streaming=True)
        return more, evaluated + ev2, len(groups)
    return rows, evaluated, len(groups)


def _states_floor_bytes(mem):
    """What a layout's heaviest stage holds whatever its micro-batch, recompute and sequence
    parallelism (training_memory's breakdown, offloads applied): its total less the gradients
    (eager runs hold them only under accumulation, which the micro-batch sets), the autocast weight
    copies (recompute sets them) and the activations. The weights, optimizer states, ZeRO buffers
    and framework allowance depend only on the parallel shape, ZeRO stage and offloads, and that
    stage's total is at most the heaviest stage's under any of those knobs: past the capacity,
    no candidate of the same shape and offloads fits."""
    return (mem["total_bytes"] - mem["gradients_bytes"] - mem["weight_casts_bytes"]
            - mem["activations_bytes"])


def _bounded_candidates(spec, base, groups, knobs, rcs, *, hw, net, c0, cache, floor_cache, kinds,
                        progress=None):
    """Every candidate of the search (a group's sequence parallelism, TP and DP overlap, recompute
    and micro-batch), each with its step_lower_bound_s per sequence and what the costing loop
    re-bounds it from: (bound, order, (layers' time, their offload copies, the pipeline factor,
    optimizer floor per offload), group index, sp, TP mode, DP overlap, recompute index, b). The
    layers' time is shared by every candidate of the same layer-level knobs (_layer_time_s).
    `progress(i, k, what)` hears of each parallel shape bounded."""
    gbs = base["global_batch_size"]
    cands, lbs = [], {}
    for gi, g in enumerate(groups):
        if progress:
            progress(gi, len(groups), "parallel shapes bounded")
        dp, tp, pp, vp = g["dp"], g["tp"], g["pp"], g["vp"]
        gbs_dp = gbs // dp * dp
        etp = 1 if g["ep"] > 1 else tp
        split = {k: g[k] for k in ("decoder_first_pipeline_num_layers",
                                   "decoder_last_pipeline_num_layers")}
        shaped = base.replace(tp=tp, pp=pp, vp=vp, etp=etp, ep=g["ep"], dp=dp, cp=g["cp"],
                              zero_stage=g["zero_stage"], **split)
        dp_parts = _dp_sync_parts(spec, shaped, net=net, cache=floor_cache)
        zero2, dpfs = g["zero_stage"] == 2, {}
        opt_floor = {o: _optimizer_floor_s(spec, shaped if o == shaped["offload"] else
                                           shaped.replace(offload=o), hw=hw, cache=floor_cache)
                     for o in {x[0] for x in knobs["offload"]}}
        least_opt = min(opt_floor.values())
        mbs = _divisors(gbs_dp // dp, SEARCH_MAX_MICRO_BATCH)
        modes = knobs["tp_comm_overlap"] if tp > 1 else knobs["tp_comm_overlap"][:1]
        dpos = knobs["dp_overlap"] if dp * g["cp"] > 1 else knobs["dp_overlap"][:1]
        # nested in this order: sp, TP mode, DP overlap, recompute, micro-batch
        for sp, mode, dpo in itertools.product(g["sps"], modes, dpos):
            for ri, rc in enumerate(rcs):
                for b in mbs:
                    lk = (tp, g["cp"], g["ep"], etp, sp, mode, rc, b)
                    if lk not in lbs:
                        lay = base.replace(tp=tp, cp=g["cp"], ep=g["ep"], etp=etp, sp=sp,
                                           tp_comm_overlap=mode, recompute=rc, micro_batch_size=b)
                        lbs[lk] = _layer_time_s(spec, lay, hw=hw, net=net, cache=cache, kinds=kinds,
                                                act_bytes=c0["act_bytes"])
                    layers_s, copies_s = lbs[lk]
                    m = gbs_dp // (b * dp)
                    f = step_lower_bound_s(1.0, pp=pp, vp=vp, m=m)  # linear in the layers' time
                    r = m if zero2 else 1  # the floor is one number per reduction count
                    dpf = dpfs[r] if r in dpfs else dpfs.setdefault(
                        r, dp_floor_s(dp_parts, pass_s=math.inf, reductions=r))
                    cands.append(((layers_s * f + least_opt + dpf) / gbs_dp, len(cands),
                                  (layers_s, copies_s, f, opt_floor, dpf), gi, sp, mode, dpo, ri,
                                  b))
    return cands


def _popped(heap):
    """The heap's items, smallest first, popped as they are asked for."""
    while heap:
        yield heapq.heappop(heap)


def _dominates(t_off, twin, offload, lay, cache, hw):
    """True if the costed layout `twin`, offloading t_off (optimizer, parameters, activations),
    is never slower than the same layout offloading `offload` (search_layouts' third cut)."""
    if t_off == offload or any(t and not o for t, o in zip(t_off, offload)):
        return False
    if offload[0] and not t_off[0]:  # whichever stage sets the optimizer step, offloaded it is no faster
        for st in range(lay["pp"]):
            held = sum(cache[("params", lay["tp"], lay["pp"], lay["vp"], lay["etp"], lay["ep"], layout_split(lay), st)])
            on, off = lay.replace(offload=True), lay.replace(offload=False)
            if optimizer_s(held, lay=on, hw=hw) < optimizer_s(held, lay=off, hw=hw):
                return False
    return True


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
