"""Capacity planning: how many GPUs, of which kind, serve a request rate within a TTFT and TPOT
target at a percentile, and what a million input and output tokens then cost (the command that
sets the winner up is its stack's own, launch.py).

For each GPU kind and each replica layout that holds the model (tensor parallel inside a node;
data-parallel attention and expert parallelism for MoE models), the most requests per second one
replica serves while the simulated benchmark's TTFT and TPOT at the percentile stay within the
targets (bisection on the rate; each point a run of Poisson arrivals through simulate_requests,
the steady state's saturation rate as the upper bound); the fleet is then ceil(R / that)
replicas. A rate is kept only when the runs of CAPACITY_SEEDS seeds of arrivals all hold the
targets, and the plan reports the latencies its fleet delivers at R / replicas per replica
(delivered: the mean over those seeds, and the worst seed).
The winner has the fewest GPUs, or with prices the lowest cost per hour."""

import math

from .memory import kv_pool_capacity, kv_pool_tokens, weight_bytes_per_gpu
from .search import serving_layouts
from .simulate import simulate_requests
from .stacks import resolve_hardware
from .steady import mixed_step, steady_state

# Rate bisection steps per layout: the rate a replica sustains to 2^-7 (0.8%) of its saturation rate.
CAPACITY_BISECTION_STEPS = 7
# Seeds of the Poisson arrivals each candidate rate is judged on: a rate is kept only if the run
# of every seed holds the targets. One 500-request run's p90 TTFT moves +-10% between seeds near
# the knee (issue 44: a rate sized on seed 0 gave p90 TTFT of 456-561 ms over five other seeds
# against 500 ms), so one seed's pass is a coin toss on the next.
CAPACITY_SEEDS = 4
# The percentiles a plan's delivered latencies are reported at.
DELIVERED_KEYS = ("ttft_median_s", "ttft_p90_s", "ttft_p99_s", "tpot_median_s", "tpot_p90_s",
                  "tpot_p99_s", "ttft_s", "tpot_s", "e2e_s", "decodes_per_step",
                  "prompt_tokens_per_step", "prompt_tokens_cached", "prompt_tokens_computed")


def fleet_replicas(*, rate, replica_rate):
    """Replicas that serve `rate` requests/s when one serves at most `replica_rate` (load balanced
    evenly, as a round-robin router spreads Poisson arrivals: each replica sees rate / n)."""
    return math.ceil(rate / replica_rate - 1e-9)


def cost_per_million_tokens(*, dollars_per_hour, input_tokens_per_s, output_tokens_per_s, prefill_share):
    """($ per million input tokens, $ per million output tokens): the fleet's cost per second split
    by the share of engine time its steps spend on prompt tokens (prefill_share: a mean step's
    time less the same step without its prompt chunks, over the mean step) and on decodes."""
    per_s = dollars_per_hour / 3600
    i = per_s * prefill_share / input_tokens_per_s * 1e6 if input_tokens_per_s else None
    o = per_s * (1 - prefill_share) / output_tokens_per_s * 1e6 if output_tokens_per_s else None
    return i, o


def saturation_rate(spec, hw, *, tp, pp, dp, ep, prompt_tokens, output_tokens, bits, w_bytes):
    """The most requests/s a layout sustains: its running cap (the KV pool at s + o tokens, or the
    stack's max_num_seqs) in the steady state, over that state's end-to-end time plus the stack's
    cost per request (Little's law). None when the pool holds no request."""
    s, o = prompt_tokens, output_tokens
    _, _, cap = kv_pool_capacity(spec, hw, tp=tp, pp=pp, context=s + o, w_bytes=w_bytes,
                                 kv_bits=bits["kv_bits"], a_bits=bits["a_bits"],
                                 state_bits=bits["state_bits"], dp=dp)
    if cap < 1:
        return None
    seqs = hw["max_num_seqs"] * dp if hw.get("max_num_seqs") else None
    run_cap = min(cap, seqs) if seqs else cap
    st = steady_state(spec, hw, tp=tp, pp=pp, dp=dp, ep=ep, concurrency=run_cap,
                      prompt_tokens=s, output_tokens=o, token_budget=hw["token_budget"] or math.inf,
                      bits=bits)
    return run_cap / (st["e2e_s"] + hw["request_overhead_s"])


def seeded_runs(run, rate, *, seeds, meets=None):
    """The runs of `run(rate, seed)` over `seeds`, stopping at the first that misses the targets
    when `meets` is given (the rate is refused then). Returns (runs, whether all met)."""
    out = []
    for seed in seeds:
        st = run(rate, seed)
        out.append(st)
        if meets is not None and not meets(st):
            return out, False
    return out, True


def replica_rate(run, meets, *, top, seeds):
    """The most requests/s one replica serves with every seed's run within the targets:
    bisection on the rate below 0.95 x its saturation rate `top` (past it the queue never
    settles). Returns (that rate, its runs), or (0.0, None) when even a light load misses."""
    lo, hi, best = 0.0, 0.95 * top, None
    runs, ok = seeded_runs(run, hi, seeds=seeds, meets=meets)
    if ok:
        return hi, runs
    for _ in range(CAPACITY_BISECTION_STEPS):
        mid = (lo + hi) / 2
        runs, ok = seeded_runs(run, mid, seeds=seeds, meets=meets)
        if ok:
            lo, best = mid, runs
        else:
            hi = mid
    return lo, best


def delivered(runs, q):
    """A fleet's latencies at its operating point, over its seeds' runs: each key's mean over the
    seeds, and the targeted percentile's worst seed (key + "_worst")."""
    out = {k: sum(st[k] for st in runs) / len(runs) for k in DELIVERED_KEYS}
    for name in ("ttft", "tpot"):
        out[f"{name}{q}_worst"] = max(st[name + q] for st in runs)
    out["seeds"] = len(runs)
    return out


def capacity_plan(spec, req, *, gpus, flags, prices, requests, bits, percentile, rate, max_ttft,
                  max_tpot, sim_requests, progress=None):
    """The fewest GPUs (or the cheapest fleet) of each kind in `gpus` ((name as given, accelerator
    record) pairs; `flags` the HardwareFlags over them) that serve `rate` requests/s
    of `requests`' mix within max_ttft / max_tpot (seconds, inf: none) at `percentile` (50, 90 or
    99), at the bits given (`bits`, as forward_pass takes them). Returns
    {"candidates": [...per kind and layout...], "by_gpu": {kind: best}, "winner": best overall,
    "layouts_fitted": layouts whose KV pool holds the longest request}."""
    import time  # only a capacity plan times itself
    t0 = shown = time.perf_counter()
    q = {50: "_median_s", 90: "_p90_s", 99: "_p99_s"}[percentile]
    s_mean = sum(r[1] for r in requests) / len(requests)
    o_mean = sum(r[2] for r in requests) / len(requests)
    steps = req.num_scheduler_steps or 1  # vLLM 0.6's multi-step scheduling, as a benchmark runs it
    seeds = range(req.seed, req.seed + CAPACITY_SEEDS)
    cands, by_gpu, fitted, pruned = [], {}, 0, 0  # fitted: layouts whose pool holds the longest
    # request; pruned: those whose best case could not beat a layout sized before them
    # the better fleet: the cheaper with prices, else the fewer GPUs, then the more requests/s per GPU
    key = (lambda x: (x["dollars_per_hour"], x["num_gpus"])) if prices else (
        lambda x: (x["num_gpus"], -x["replica_request_rate"] / x["gpus_per_replica"]))
    for g_i, (gpu, rec) in enumerate(gpus):
        def hardware(tp=1, pp=1, dp=1):
            return resolve_hardware(rec, flags, gpu_given=True, tp=tp, pp=pp, dp=dp,
                                    activation_bits=req.activation_bits)[0]
        one = hardware()
        node = one.get("gpus_per_node") or 8
        layouts = [lay for lay in serving_layouts(spec, node, max_tp=node, max_replica=node) if lay[1] == 1]
        for tp, pp, dp, ep in layouts:
            if time.perf_counter() - shown > 1.0 and progress:
                progress(f"capacity: {gpu} layout tp {tp} dp {dp} ep {ep}, {time.perf_counter() - t0:.1f} s so far")
                shown = time.perf_counter()
            hw = hardware(tp, pp, dp)
            if req.speculative:
                hw["speculative"] = req.speculative
            w_bytes = weight_bytes_per_gpu(spec, tp=tp, pp=pp, w_bits=bits["w_bits"], e_bits=bits["e_bits"], ep=ep,
                                           etp=tp * dp // ep)
            ctx = max(1, round(s_mean + o_mean))
            pool, per_req, cap = kv_pool_capacity(spec, hw, tp=tp, pp=pp, context=ctx, w_bytes=w_bytes,
                                                  kv_bits=bits["kv_bits"], a_bits=bits["a_bits"],
                                                  state_bits=bits["state_bits"], dp=dp)
            longest = max(r[1] + r[2] for r in requests)
            if cap < 1 or (per_req > 0 and pool * ctx / per_req < longest):
                continue  # the weights leave no pool, or the longest request does not fit it
            fitted += 1
            seqs = hw["max_num_seqs"] * dp if hw.get("max_num_seqs") else None
            budget = hw["token_budget"] or math.inf
            pool_tokens = kv_pool_tokens(pool_bytes=pool, bytes_per_request=per_req, context=ctx, dp=dp)
            top = saturation_rate(spec, hw, tp=tp, pp=pp, dp=dp, ep=ep, bits=bits, w_bytes=w_bytes,
                                  prompt_tokens=max(1, round(s_mean)),
                                  output_tokens=max(1, round(o_mean)))
            if not top:
                continue  # the pool holds no request at the mix's mean length
            n_gpus = tp * dp * pp
            # at most 0.95 x top per replica: a layout whose best case cannot beat this kind's best
            # so far is not sized (its fleet and its rate per GPU bound the key from below)
            least = fleet_replicas(rate=rate, replica_rate=0.95 * top) * n_gpus
            bound = ((prices[g_i] * least, least) if prices
                     else (least, -0.95 * top / n_gpus))
            if gpu in by_gpu and bound > key(by_gpu[gpu]):
                pruned += 1
                continue
            memo = {}

            def run(r, seed, hw=hw, tp=tp, pp=pp, dp=dp, ep=ep, budget=budget,
                    pool_tokens=pool_tokens, seqs=seqs, memo=memo):  # bound now: run again below
                return simulate_requests(spec, hw, tp=tp, requests=requests[:sim_requests],
                                         token_budget=budget, pool_tokens=pool_tokens,
                                         max_running=seqs, bits=bits, rate=r, seed=seed, pp=pp,
                                         dp=dp, ep=ep, memo=memo, scheduler_steps=steps)

            def meets(st):
                return st["ttft" + q] <= max_ttft and st["tpot" + q] <= max_tpot

            lo, best = replica_rate(run, meets, top=top, seeds=seeds)
            if best is None:
                continue  # even a light load misses the targets on this layout
            replicas = fleet_replicas(rate=rate, replica_rate=lo)
            c = {"gpu": gpu, "tp": tp, "pp": pp, "dp": dp, "ep": ep, "gpus_per_replica": n_gpus,
                 "replica_request_rate": lo, "replicas": replicas, "num_gpus": replicas * n_gpus,
                 "dollars_per_hour": prices[g_i] * replicas * n_gpus if prices else None,
                 "hw": hw, "bits": bits, "budget": budget, "pool_tokens": pool_tokens, "max_num_seqs": seqs,
                 "memory_utilization": hw["memory_utilization"], "token_budget": hw["token_budget"],
                 "run": run}
            cands.append(c)
            if gpu not in by_gpu or key(c) < key(by_gpu[gpu]):
                by_gpu[gpu] = c
    if not by_gpu:
        return {"candidates": cands, "by_gpu": by_gpu, "winner": None, "layouts_fitted": fitted,
                "layouts_pruned": pruned}
    for c in by_gpu.values():  # each kind's answer at its operating point: the load per replica
        hw, bits = c["hw"], c["bits"]
        a_rate = rate / c["replicas"]
        st = delivered(seeded_runs(c.pop("run"), a_rate, seeds=seeds)[0], q)
        mk = dict(tp=c["tp"], pp=c["pp"], dp=c["dp"], ep=c["ep"], bits=bits, prompt_tokens=max(1, round(s_mean)),
                  decode_context=s_mean + o_mean / 2)
        full = mixed_step(spec, hw, decodes=c["dp"] * st["decodes_per_step"],
                          prefill_tokens=c["dp"] * st["prompt_tokens_per_step"], **mk)["time_s"]
        dec = mixed_step(spec, hw, decodes=c["dp"] * st["decodes_per_step"], prefill_tokens=0, **mk)["time_s"]
        share = max(0.0, min(1.0, (full - dec) / full))
        cached = st["prompt_tokens_cached"] / max(1, st["prompt_tokens_computed"] + st["prompt_tokens_cached"])
        c.update(operating_point=st, request_rate_per_replica=a_rate, prefill_share=share,
                 cached_input_share=cached)
        if c["dollars_per_hour"] is not None:
            computed = rate * s_mean * (1 - cached)
            i, o = cost_per_million_tokens(dollars_per_hour=c["dollars_per_hour"], input_tokens_per_s=computed,
                                           output_tokens_per_s=rate * o_mean, prefill_share=share)
            c.update(cost_per_million_input_tokens=i, cost_per_million_output_tokens=o,
                     cost_per_million_cached_input_tokens=0.0 if cached else None)
        else:
            c.update(cost_per_million_input_tokens=None, cost_per_million_output_tokens=None,
                     cost_per_million_cached_input_tokens=None)
    for c in cands:
        c.pop("run", None)
    winner = min(by_gpu.values(), key=key)
    if progress and time.perf_counter() - t0 > 1.0:
        progress(f"capacity: {len(cands)} layouts sized in {time.perf_counter() - t0:.1f} s")
    return {"candidates": cands, "by_gpu": by_gpu, "winner": winner, "layouts_fitted": fitted,
            "layouts_pruned": pruned}
