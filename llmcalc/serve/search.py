"""The serving search: layouts, bit widths and disaggregated prefill pools, ranked on a Pareto
front, with its report and plot."""

import math
import sys
import textwrap

from ..errors import CalcError
from .engine import layout_problem
from .forward import forward_pass, layout_net
from .memory import cache_bytes_per_gpu, kv_pool_capacity, weight_bytes_per_gpu
from .stacks import COMPUTE_DTYPE, resolve_hardware
from .simulate import SHOW_PROGRESS
from .steady import md1_wait_s, mixed_step, steady_state


def _powers_of_two(limit):
    """1, 2, 4, ... up to limit."""
    out, x = [], 1
    while x <= limit:
        out.append(x)
        x *= 2
    return out


def serving_layouts(spec, num_gpus, max_tp=None, max_replica=None):
    """Every replica layout (tp, pp, dp, ep) of at most num_gpus GPUs that splits the model
    (layout_problem): tp, pp and dp powers of two, tp at most max_tp (the search keeps tensor
    parallelism inside a node, as deployments do: its two all-reduces per layer would cross the
    network; pp, dp and ep cross nodes); dp > 1 only with routed experts (data-parallel attention;
    for a dense model extra groups are just replicas); ep 1 or tp x dp."""
    moe = any(m["kind"] != "dense" for x in spec["layers"] for m in x["mlp"])
    top = min(num_gpus, max_replica or num_gpus)  # GPUs of one replica at most
    for tp in _powers_of_two(min(top, max_tp or top)):
        for pp in _powers_of_two(top // tp):
            for dp in (_powers_of_two(top // (tp * pp)) if moe else (1,)):
                for ep in ((1, tp * dp) if moe and tp * dp > 1 else (1,)):
                    if layout_problem(spec, tp=tp, pp=pp, dp=dp, ep=ep) is None:
                        yield tp, pp, dp, ep


def nominal_bits(stored_bits):
    """The format's value width from bits per stored weight with its scales (NVFP4 4.5 -> 4, MXFP4
    4.25 -> 4, FP8 blocks 8.002 -> 8): what `weight_bits` means in a single run's result, while
    `weight_storage_bits` keeps what the bytes are counted at."""
    return int(stored_bits) if stored_bits == int(stored_bits) else math.floor(stored_bits)


def search_bit_options(req, fmt, low_bit_ok):
    """(weight, activation, KV-cache, expert) bits --search costs: the user's when any bits flag is
    given; else the fewest the GPU runs, 8-bit weights and KV cache with 8-bit matmuls where the GPU
    has an 8-bit peak (else 16-bit matmuls), a quantized checkpoint's own weights. In this model
    fewer bits never make a layout slower or its KV pool smaller, so at the same layout and
    concurrency a wider format is beaten on both axes and can never reach the front: costing it
    would only repeat the work (accuracy is not weighed; pass --precision or --*-bits to search at
    a format)."""
    if req.bits_given:
        return [(req.weight_store_bits if not fmt else fmt["linear_bits"], req.activation_bits,
                 req.kv_cache_bits, fmt["expert_bits"] if fmt else None)]
    w, e = (fmt["linear_bits"], fmt["expert_bits"]) if fmt else (8, None)
    return [(w, 8 if low_bit_ok else 16, 8, e)]


def pareto_front(points):
    """The points no other point beats on both tokens/s per GPU and tokens/s per user (ties kept
    once), best per GPU first."""
    front, best_user = [], -1.0
    for p in sorted(points, key=lambda p: (-p["tokens_per_s_per_gpu"], -p["tokens_per_s_per_user"])):
        if p["tokens_per_s_per_user"] > best_user:
            front.append(p)
            best_user = p["tokens_per_s_per_user"]
    return front


def prefill_pool_rate(spec, hw, *, lay, bits, s, kv_transfer_s, max_ttft, cap):
    """A prefill-only replica (disaggregated serving): it runs batches of b = budget // s prompts
    (at least 1; at most the cap requests its KV pool holds, which is also b for a stack that does
    not chunk) back to back, each batch taking t_b (forward_pass
    plus the step cost), so it serves mu = b / t_b requests/s. At load rho = R / mu an arriving
    prompt waits rho t_b / (2 (1 - rho)) (M/D/1: md1_wait_s), then runs in a batch
    rho b full (at least its own prompt), then its KV cache crosses to the decode pool
    (kv_transfer_s); TTFT adds the stack's per-request cost. Returns (requests/s per replica at the
    highest load whose TTFT meets max_ttft, the TTFT there) or None when even an idle replica
    misses it. Without a target the load stops at 0.9 (a queue near saturation grows without
    bound)."""
    tp, pp, dp, ep = lay
    budget = hw["token_budget"] or math.inf
    step = hw["step_overhead_s"]

    def pass_s(b):
        return forward_pass(spec, hw, tp=tp, pp=pp, dp=dp, ep=ep, batch=b, new_tokens=s, context_before=0,
                            absorbed=False, **bits)["time_s"] + step
    b = max(1, min(int(budget // s) if budget < math.inf else cap, cap))
    t1, tb = pass_s(min(dp, b)), pass_s(b)
    fixed = kv_transfer_s + hw["request_overhead_s"]

    def ttft(rho):
        return md1_wait_s(rho=rho, service_s=tb) + t1 + (tb - t1) * rho + fixed
    if ttft(0.0) > max_ttft:
        return None
    lo, hi = 0.0, (0.999 if max_ttft < math.inf else 0.9)
    if ttft(hi) > max_ttft:
        for _ in range(40):  # TTFT grows with the load: the highest rho that meets the target
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if ttft(mid) <= max_ttft else (lo, mid)
    else:
        lo = hi
    return {"rate": lo * b / tb, "mu": b / tb, "ttft": ttft}


def kv_transfer_s(spec, hw, *, s, kv_bits, a_bits, state_bits, gpus_p, gpus_d, cross_node):
    """Seconds to move one request's cache (all layers, s tokens, at kv_bits) from the prefill
    replica to the decode replica: the bytes spread over min(gpus_p, gpus_d) parallel links, over
    the network (the NIC per GPU x SCALE_OUT_EFFICIENCY) when the pools sit in different nodes,
    else NVLink; plus one NCCL call cost (NIXL/Mooncake-style one-sided RDMA writes)."""
    c = cache_bytes_per_gpu(spec, tp=1, pp=1, batch=1, context=s, kv_bits=kv_bits, a_bits=a_bits,
                            state_bits=state_bits)
    nbytes = c["kv"] + c["indexer"] + c["state"]
    net = layout_net(hw)
    bw = net["inter_bytes_per_s"] if cross_node else net["intra_bytes_per_s"]
    return hw.get("nccl_latency_s", 0.0) + nbytes / (min(gpus_p, gpus_d) * bw)


def sized_options(spec, req, lay, *, options, hw_for):
    """For one layout, each bit option whose weights leave a KV pool: (bits tuple, hw, bits dict,
    weight bytes per GPU, KV bytes per request per GPU, requests that run at once: those the pool
    holds, or fewer under the stack's running cap)."""
    tp, pp, dp, ep = lay
    s, o = req.prompt_tokens, req.output_tokens
    for wb, ab, kvb, eb in options:
        hw = hw_for(tp, pp, dp, ab)
        bits = dict(w_bits=wb, a_bits=ab, kv_bits=kvb, e_bits=eb, state_bits=req.state_bits)
        w_bytes = weight_bytes_per_gpu(spec, tp=tp, pp=pp, w_bits=wb, e_bits=eb, ep=ep, etp=tp * dp // ep)
        _, per_req, cap = kv_pool_capacity(spec, hw, tp=tp, pp=pp, context=s + o, w_bytes=w_bytes,
                                           kv_bits=kvb, a_bits=ab, state_bits=req.state_bits, dp=dp)
        if cap >= 1 and hw.get("max_num_seqs"):  # the stack runs no more at once (past it: only queueing)
            cap = min(cap, hw["max_num_seqs"] * dp)
        if cap >= 1:
            yield (wb, ab, kvb, eb), hw, bits, w_bytes, per_req, cap


def disaggregated_points(spec, req, *, layouts, options, hw_for, max_ttft, max_tpot):
    """--disaggregated: prefill and decode on separate GPU pools (DistServe, Zhong et al. 2024;
    Splitwise). Decode replicas run decode-only steps at concurrency C (TPOT = the step; each
    request spends o - 1 steps there, so C / ((o - 1) TPOT) requests/s); prefill replicas serve at
    the highest load whose TTFT (queueing, its batch, the KV transfer) meets the target
    (prefill_pool_rate). For every decode point and each of the three prefill layouts with the most
    requests/s per GPU at the same bits, every split of the GPU budget into whole replicas; the
    request rate is the smaller pool's. Returns (points, evaluated)."""
    N, s, o = req.num_gpus, req.prompt_tokens, req.output_tokens
    if o < 2:
        return [], 0
    one = hw_for(1, 1, 1, 16)
    pools_cross = N > (one.get("gpus_per_node") or N)
    if (pools_cross and not one["scale_out_bytes_per_s"]) or (N > 1 and not one["peer_link"]):
        return [], 0  # the KV cache has no modelled path between the pools (no NIC, no peer link)
    prefill = {}  # bits -> [(rate per GPU, lay, gpus, rate per replica, ttft)]
    decode = []
    evaluated = 0
    for lay in layouts:
        tp, pp, dp, ep = lay
        gpus = tp * pp * dp
        if gpus > N - 1:
            continue
        for (wb, ab, kvb, eb), hw, bits, w_bytes, per_req, cap in sized_options(
                spec, req, lay, options=options, hw_for=hw_for):
            xfer = kv_transfer_s(spec, hw, s=s, kv_bits=kvb, a_bits=ab, state_bits=req.state_bits,
                                 gpus_p=gpus, gpus_d=gpus, cross_node=pools_cross)
            got = prefill_pool_rate(spec, hw, lay=lay, bits=bits, s=s, kv_transfer_s=xfer, max_ttft=max_ttft,
                                    cap=cap)
            evaluated += 1
            if got:
                prefill.setdefault((wb, ab, kvb), []).append((got["rate"] / gpus, lay, gpus, got))
            rate = 0.0
            for c in _powers_of_two(cap) + ([cap] if cap & (cap - 1) else []):
                st = mixed_step(spec, hw, tp=tp, pp=pp, dp=dp, ep=ep, decodes=c, decode_context=s + (o - 2) // 2,
                                prefill_tokens=0, prompt_tokens=s, bits=bits)
                evaluated += 1
                if st["time_s"] > max_tpot or c / st["time_s"] <= rate:
                    break  # past the target, or no more tokens/s than the point before (dominated)
                rate = c / st["time_s"]
                decode.append(((wb, ab, kvb), lay, gpus, c, st["time_s"], w_bytes + per_req * math.ceil(c / dp)))
    points = []
    for key, lay, gpus_d, c, tpot, mem in decode:
        lam = c / ((o - 1) * tpot)  # requests/s per decode replica
        for _, play, gpus_p, pre in sorted(prefill.get(key, []), key=lambda x: -x[0])[:3]:
            best = None
            top_d = (N - gpus_p) // gpus_d
            # the pools balance where r_d lam = r_p mu with r_p = (N - r_d g_d) / g_p: try the whole
            # replica counts next to it and the ends
            mid = N * pre["rate"] / gpus_p / (lam + pre["rate"] * gpus_d / gpus_p)
            for r_d in {1, top_d, max(1, math.floor(mid)), min(top_d, math.ceil(mid))}:
                if not 1 <= r_d <= top_d:
                    continue
                r_p = (N - r_d * gpus_d) // gpus_p
                rate = min(r_p * pre["rate"], r_d * lam)
                used = r_p * gpus_p + r_d * gpus_d
                if best is None or rate / used > best[0] / best[3]:
                    best = (rate, r_p, r_d, used)
            if best is None:
                continue
            rate, r_p, r_d, used = best
            evaluated += 1
            ttft = pre["ttft"](rate / (r_p * pre["mu"]))  # at the load the pair actually carries
            tp, pp, dp, ep = lay
            points.append({"tp": tp, "pp": pp, "dp": dp, "ep": ep, "replicas": r_d, "gpus_per_replica": gpus_d,
                           "weight_bits": nominal_bits(key[0]), "weight_storage_bits": key[0],
                           "activation_bits": key[1], "kv_cache_bits": key[2], "concurrency": c,
                           "ttft_s": ttft, "tpot_s": tpot, "e2e_s": ttft + (o - 1) * tpot,
                           "tokens_per_s_per_user": 1.0 / tpot, "tokens_per_s_per_gpu": rate * o / used,
                           "total_tokens_per_s": rate * o, "memory_bytes_per_gpu": mem,
                           "prefill": {"tp": play[0], "pp": play[1], "dp": play[2], "ep": play[3],
                                       "replicas": r_p, "gpus_per_replica": gpus_p}})
    return points, evaluated


def search_serving(spec, req, fmt, *, gpu, gpu_given, flags):
    """--search: for every layout (serving_layouts) and bit option (search_bit_options), the
    steady state at concurrency 1, 2, 4, ... up to the KV pool (serve_steady_state's model, the
    stack's per-request cost included), kept when it meets --max-ttft-ms and --max-tpot-ms. More
    concurrency never lowers TTFT or TPOT (a tested property), so the first miss ends a layout's
    sweep, after one more point half-way back; so does a point with no more tokens/s per GPU than
    the one before (it is dominated). Data-parallel attention groups double while they raise the
    best tokens/s per GPU or per user of their (tp, pp, ep, bits). Replicas fill the GPU budget:
    N // (tp x dp x pp).
    Lower bits are never slower here (accuracy is not modelled). Returns the result dict, or exits
    2 saying what the fastest layouts reach when no layout meets the targets."""
    missed = []
    import time  # only --search times itself
    t0 = time.perf_counter()
    N, s, o = req.num_gpus, req.prompt_tokens, req.output_tokens
    max_ttft = req.max_ttft_ms * 1e-3 if req.max_ttft_ms is not None else math.inf
    max_tpot = req.max_tpot_ms * 1e-3 if req.max_tpot_ms is not None else math.inf
    rec_peaks = (gpu["peak_flops_per_s"] or {}) if gpu_given else {}
    low_ok = any(rec_peaks.get(k) for k in COMPUTE_DTYPE[8]) or flags.peak_tflops is not None
    options = search_bit_options(req, fmt, low_ok)
    points, evaluated, best = [], 0, {"ttft": None, "tpot": None}
    hw_cache, held, stalled, reached = {}, set(), {}, {}

    def hw_for(tp, pp, dp, ab):
        key = (tp, pp, dp, ab)
        if key not in hw_cache:
            hw_cache[key] = resolve_hardware(gpu, flags, gpu_given=gpu_given, tp=tp, pp=pp, dp=dp,
                                             activation_bits=ab)[0]
        return hw_cache[key]

    one = hw_for(1, 1, 1, 16)
    # what the hardware can join: no peer link (GeForce cards: no NVLink, no PCIe P2P), one-GPU
    # replicas; no NIC, one node
    max_replica = (1 if not one["peer_link"] else
                   req.max_replica_gpus if one["scale_out_bytes_per_s"] else
                   min(req.max_replica_gpus, one["gpus_per_node"]))
    if max_replica < min(N, req.max_replica_gpus):
        print(f"note: --search builds replicas of at most {max_replica} GPU(s): "
              + ("the GPU has no modelled peer link (--tp-bandwidth-gbps gives one)" if not one["peer_link"]
                 else "no scale-out bandwidth is known (--scale-out-gbps gives one)"), file=sys.stderr)
    layouts = list(serving_layouts(spec, N, max_tp=one.get("gpus_per_node"), max_replica=max_replica))
    shown = t0 + 1.0  # progress on stderr once the search has run a second, then every second
    for i, (tp, pp, dp, ep) in enumerate(layouts):
        if SHOW_PROGRESS["on"] and time.perf_counter() > shown:
            print(f"searching: layout {i + 1} of {len(layouts)}, {evaluated} points so far", file=sys.stderr)
            shown = time.perf_counter() + 1.0
        gpus = tp * pp * dp
        for (wb, ab, kvb, eb), hw, bits, w_bytes, per_req, cap in sized_options(
                spec, req, (tp, pp, dp, ep), options=options, hw_for=hw_for):
            budget = hw["token_budget"] or math.inf
            held.add((tp, pp, dp, ep, wb, ab, kvb))
            # inside a node a wider tp or more replicas serve the same GPUs at least as well as a
            # deeper pipeline (tp cuts the time per token, pp does not): deeper stages are tried only
            # where the shallower pipeline cannot hold the weights, or its stages fill a node already
            if (pp > 1 and tp * dp < (hw.get("gpus_per_node") or gpus)
                    and (tp, pp // 2, dp, ep, wb, ab, kvb) in held):
                continue
            family = (tp, pp, ep > 1, wb, ab, kvb)  # dp doubles within a family
            if family in stalled and stalled[family][0] < dp:
                continue
            start = 0

            def cost(c):
                st = steady_state(spec, hw, tp=tp, pp=pp, dp=dp, ep=ep, concurrency=c, prompt_tokens=s,
                                  output_tokens=o, token_budget=budget, bits=bits)
                req = hw["request_overhead_s"]
                ttft, e2e, tpot = st["ttft_s"] + req, st["e2e_s"] + req, st["tpot_s"]
                pt = {"tp": tp, "pp": pp, "dp": dp, "ep": ep, "replicas": N // gpus, "gpus_per_replica": gpus,
                      "weight_bits": nominal_bits(wb), "weight_storage_bits": wb, "activation_bits": ab,
                      "expert_bits": nominal_bits(eb) if eb else None,
                      "kv_cache_bits": kvb, "concurrency": c,
                      "ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e, "tokens_per_s_per_user": 1.0 / tpot,
                      "tokens_per_s_per_gpu": c * o / e2e / gpus,
                      "total_tokens_per_s": (N // gpus) * c * o / e2e,
                      "memory_bytes_per_gpu": w_bytes + per_req * math.ceil(c / dp),
                      "max_running_requests": cap}
                for name, v in (("ttft", ttft), ("tpot", tpot)):
                    if best[name] is None or v < best[name][f"{name}_s"]:
                        best[name] = pt
                return pt, ttft <= max_ttft and tpot <= max_tpot

            # concurrency doubles until a target is missed (TTFT and TPOT only grow with C), then
            # the point half-way (x 1.5) between the last that met it and the first that did not;
            # or until tokens/s per GPU stops rising: per user only falls with C, so every later
            # point is beaten on both axes by the one before
            last, mine = None, []
            for c in sorted({x for x in _powers_of_two(cap) if x > start} | ({cap} if cap > start else set())):
                pt, ok = cost(c)
                evaluated += 1
                if not ok:
                    missed.append(pt)  # drawn faded by --plot: where the targets cut the family off
                    mid = 3 * last // 2 if last else 0
                    if last and last < mid < c:
                        pt, ok = cost(mid)
                        evaluated += 1
                        if ok:
                            mine.append(pt)
                    break
                if mine and pt["tokens_per_s_per_gpu"] <= mine[-1]["tokens_per_s_per_gpu"]:
                    break
                mine.append(pt)
                last = c
            points += mine
            # data-parallel attention groups keep doubling only while they raise the best tokens/s
            # per GPU or per user of the family (more groups spread the experts thinner)
            top = (max((p["tokens_per_s_per_gpu"] for p in mine), default=0.0),
                   max((p["tokens_per_s_per_user"] for p in mine), default=0.0))
            prev = reached.get(family)
            if prev is not None and top[0] <= prev[0] and top[1] <= prev[1]:
                stalled[family] = (dp, top)
            reached[family] = (max(top[0], prev[0]), max(top[1], prev[1])) if prev else top
    if req.disaggregated:
        more, n_more = disaggregated_points(spec, req, layouts=layouts, options=options,
                                            hw_for=hw_for, max_ttft=max_ttft, max_tpot=max_tpot)
        points += more
        evaluated += n_more
    if not points:
        if best["tpot"] is None:
            raise CalcError(f"no layout of {N} GPUs holds the weights and one request of {s + o} "
                            "tokens; raise --num-gpus or cut --weight-bits")
        miss = []
        if best["tpot"]["tpot_s"] > max_tpot:
            miss.append(f"the lowest TPOT any layout reaches is {best['tpot']['tpot_s'] * 1e3:.3g} ms "
                        f"({layout_label(best['tpot'])})")
        if best["ttft"]["ttft_s"] > max_ttft:
            miss.append(f"the lowest TTFT is {best['ttft']['ttft_s'] * 1e3:.3g} ms ({layout_label(best['ttft'])})")
        raise CalcError(f"no layout of {N} GPUs meets the targets: " + "; ".join(miss or [
               "each layout meets one target only at a concurrency that misses the other"])
               + "; relax --max-ttft-ms/--max-tpot-ms or raise --num-gpus")
    front = pareto_front(points)
    gpu = next(iter(hw_cache.values()))  # every layout runs on the one accelerator
    return {"num_gpus": N, "gpu": gpu["gpu"], "gpu_default": gpu["gpu_default"], "missed": missed,
            "max_ttft_ms": req.max_ttft_ms, "max_tpot_ms": req.max_tpot_ms,
            "layouts_evaluated": evaluated, "feasible": len(points), "pareto_front": front,
            "best": front[0], "search_time_s": time.perf_counter() - t0, "points": points}


def _par(p):
    """tp/pp/dp/ep of a layout dict, the ones above 1."""
    return f"tp {p['tp']}" + "".join(f" {k} {p[k]}" for k in ("pp", "dp", "ep") if p[k] > 1)


def layout_text_short(p):
    """A search point's layout without its concurrency: one replica's split, or a disaggregated
    pair's prefill and decode pools with their replica counts."""
    if p.get("prefill"):
        q = p["prefill"]
        return f"P {_par(q)} x{q['replicas']} | D {_par(p)} x{p['replicas']}"
    return _par(p)


def bits_label(p):
    """w16a16kv8, with a checkpoint's own expert format: w16e4a16kv8 (gpt-oss's MXFP4 experts)."""
    e = f"e{p['expert_bits']:.3g}" if p.get("expert_bits") and p["expert_bits"] != p["weight_bits"] else ""
    return f"w{p['weight_bits']:.3g}{e}a{p['activation_bits']}kv{p['kv_cache_bits']}"


def layout_label(p):
    """A search point's layout in one short phrase."""
    return f"{layout_text_short(p)}, {bits_label(p)}, C {p['concurrency']}"


def search_report(res, *, s, o, stack, top):
    """The --search table: the Pareto front, best tokens/s per GPU first."""
    slo = ", ".join(x for x in ((f"TTFT <= {res['max_ttft_ms']:g} ms" if res["max_ttft_ms"] else ""),
                                (f"TPOT <= {res['max_tpot_ms']:g} ms" if res["max_tpot_ms"] else "")) if x)
    lines = textwrap.wrap(
        f"search: {res['num_gpus']} x {res['gpu']}"
        + (" (the default GPU; --gpu NAME for another)" if res["gpu_default"] else "") + f", {stack} stack, s = {s} prompt and o = {o} output tokens per request, "
        f"{slo or 'no latency target'}; {res['layouts_evaluated']} (layout, bits, concurrency) points costed "
        f"in {res['search_time_s'] * 1e3:.0f} ms, {res['feasible']} meet the targets; the Pareto front of "
        "tokens/s per GPU against tokens/s per user (continuous batching in steady state, replicas fill "
        "the GPUs; at the fewest bits the GPU runs, as fewer are never slower in this model, which does "
        "not weigh accuracy (--precision picks a format); tp stays "
        "inside a node; pipelines deeper than needed to hold the weights only once a stage fills a node):",
        width=100)
    shown = res["pareto_front"][:top]
    # the layout column as wide as its longest entry (a disaggregated pair's two pools run long)
    w = max([34] + [len(layout_text_short(p) + " " + bits_label(p)) + 2 for p in shown])
    lines += ["", f"{'layout (per replica)':<{w}}{'repl':>5}{'C':>6}{'TTFT ms':>10}{'TPOT ms':>9}"
                  f"{'tok/s/user':>11}{'tok/s/GPU':>11}{'total tok/s':>13}{'GiB/GPU':>9}"]
    for p in shown:
        par = layout_text_short(p) + " " + bits_label(p)
        lines.append(f"{par:<{w}}{p['replicas']:>5}{p['concurrency']:>6}{p['ttft_s'] * 1e3:>10.1f}"
                     f"{p['tpot_s'] * 1e3:>9.2f}{p['tokens_per_s_per_user']:>11.1f}{p['tokens_per_s_per_gpu']:>11.1f}"
                     f"{p['total_tokens_per_s']:>13,.0f}{p['memory_bytes_per_gpu'] / 2**30:>9.1f}")
    if len(res["pareto_front"]) > top:
        lines.append(f"... {len(res['pareto_front']) - top} more on the front (--top)")
    if any(p.get("expert_bits") for p in res["pareto_front"][:top]):
        lines.append("(wXeY: X-bit weights and the checkpoint's own Y-bit routed experts, its quantization_config)")
    b = res["best"]
    lines += ["", f"best tokens/s per GPU: {layout_label(b)} x {b['replicas']} replica(s): "
                  f"{b['tokens_per_s_per_gpu']:,.1f} tokens/s per GPU at {b['tokens_per_s_per_user']:,.1f} per user"]
    return "\n".join(lines)


def _pyplot():
    """matplotlib.pyplot drawing to files (Agg), or None when matplotlib is not installed. An
    MPLBACKEND matplotlib does not know would fail its import: this run draws to a file anyway."""
    import os
    os.environ["MPLBACKEND"] = "agg"
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _log_scale_if_wide(ax, ys):
    """A log y axis when the values span more than 20x, so the low end is not a flat line."""
    ys = [y for y in ys if y > 0]
    if ys and max(ys) > 20 * min(ys):
        ax.set_yscale("log")


def _label_front(fig, ax, front, fontsize=6):
    """Label the front's points, each only where its text (width estimated from its length) clears
    every label already placed, flipped to the point's left near the right edge."""
    fig.canvas.draw()  # the axes' limits and scales settled, so data maps to pixels
    px = fontsize * fig.dpi / 72  # the font's size in pixels
    box = ax.get_window_extent()
    placed = []
    for p in front:
        label = layout_label(p)
        x, y = ax.transData.transform((p["tokens_per_s_per_user"], p["tokens_per_s_per_gpu"]))
        w, h, gap = 0.55 * px * len(label), 1.3 * px, 4 * fig.dpi / 72
        right = x + gap + w > box.x1
        x0 = x - gap - w if right else x + gap
        rect = (x0, y + gap, x0 + w, y + gap + h)
        if any(rect[0] < r[2] and r[0] < rect[2] and rect[1] < r[3] and r[1] < rect[3]
               for r in placed):
            continue
        placed.append(rect)
        ax.annotate(label, (p["tokens_per_s_per_user"], p["tokens_per_s_per_gpu"]), fontsize=fontsize,
                    xytext=(-4 if right else 4, 4), textcoords="offset points",
                    ha="right" if right else "left")


def plot_front(res, path, *, precision=None):
    """Draw every point that meets the targets and the Pareto front to path with matplotlib
    (imported only here), titled with the model, the GPUs, the precision and the targets; returns
    the one-line note to print (where it wrote, or that matplotlib is not installed). A failed
    write is one line and exit 2 (the path was checked before the search)."""
    plt = _pyplot()
    if plt is None:
        return "matplotlib is not installed, so no plot was drawn (pip install matplotlib)"
    fig, ax = plt.subplots(figsize=(7, 5))
    if res.get("missed"):  # the first concurrency of each layout past a target: faded, so the bound shows
        ax.scatter([p["tokens_per_s_per_user"] for p in res["missed"]],
                   [p["tokens_per_s_per_gpu"] for p in res["missed"]], s=8, c="C3", alpha=0.25,
                   label="misses a target")
    ax.scatter([p["tokens_per_s_per_user"] for p in res["points"]],
               [p["tokens_per_s_per_gpu"] for p in res["points"]], s=8, c="0.7", label="meets the targets")
    front = sorted(res["pareto_front"], key=lambda p: p["tokens_per_s_per_user"])
    ax.plot([p["tokens_per_s_per_user"] for p in front], [p["tokens_per_s_per_gpu"] for p in front],
            "o-", c="C0", label="Pareto front")
    _log_scale_if_wide(ax, [p["tokens_per_s_per_gpu"] for p in res["points"] + front])
    _label_front(fig, ax, front)
    ax.set_xlabel("tokens/s per user (1 / TPOT)")
    ax.set_ylabel("output tokens/s per GPU")
    slo = ", ".join(x for x in ((f"TTFT <= {res['max_ttft_ms']:g} ms" if res["max_ttft_ms"] else ""),
                                (f"TPOT <= {res['max_tpot_ms']:g} ms" if res["max_tpot_ms"] else "")) if x)
    model = (res.get("model_described") or "model").replace("$", r"\$")  # a path is not mathtext
    ax.set_title(f"{model[:90]}\n{res['num_gpus']} x {res['gpu']}, "
                 + (f"--precision {precision}" if precision else "bits as labelled (w/a/kv)")
                 + f"; {slo or 'no latency target'}", fontsize=8)
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except (OSError, ValueError) as exc:  # a full disk, a folder gone since the check
        plt.close(fig)
        raise CalcError(f"--plot {path}: the plot could not be written ({exc})")
    plt.close(fig)
    return f"plot of the front written to {path}"
