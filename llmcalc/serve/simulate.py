"""A finite benchmark run simulated step by step (--num-requests): arrivals, ramp-up, queueing and
drain, with the statistics benchmark clients report."""

import math

from .forward import forward_pass
from .speculative import draft_step_s, speculative_decode_steps
from .steady import mixed_step


def benchmark_arrivals(*, n, rate, arrivals, seed):
    """Arrival times (s) of a benchmark client's n requests at `rate` per second: the first at 0,
    then gaps drawn from an exponential of mean 1 / rate (Poisson arrivals, as vLLM's
    benchmark_serving.py sends at its default burstiness 1; seeded, so a run repeats) or all equal
    to 1 / rate (`uniform`); rate inf sends all n at once (QPS = INF in TensorRT-LLM's tables)."""
    if math.isinf(rate):
        return [0.0] * n
    import random  # only a simulated benchmark needs it (start-up time)
    draw = random.Random(seed).expovariate if arrivals == "poisson" else None
    times, t = [], 0.0
    for _ in range(n):
        times.append(t)
        t += draw(rate) if draw else 1.0 / rate
    return times


def _percentile(values, q, presorted=False):
    """The q-th percentile of values, linear between order statistics (numpy's default)."""
    v = values if presorted else sorted(values)
    x = (len(v) - 1) * q / 100
    lo = math.floor(x)
    return v[lo] + (v[min(lo + 1, len(v) - 1)] - v[lo]) * (x - lo)


# A simulation whose pace says it would run past this is stopped, saying how long it would take.
SIMULATION_LIMIT_S = 120.0
# Whether progress lines reach stderr: the tool turns them on for a person watching a terminal
# (stderr a TTY, neither --json nor --brief), so scripts and tests see one clean error line.
SHOW_PROGRESS = {"on": False}


class SimulationTooLong(Exception):
    """The run would take more than SIMULATION_LIMIT_S: (seconds left, requests done, requests)."""


def report_progress(progress, *, started, done, n, units):
    """Say how far a simulation is and how long it has left at the pace so far; raise
    SimulationTooLong past SIMULATION_LIMIT_S. Returns the time it reported at."""
    import time  # only a simulated benchmark needs it (start-up time)
    now = time.monotonic()
    left = (n - done) * (now - started) / max(done, 1)
    if left > SIMULATION_LIMIT_S:
        raise SimulationTooLong(left, done * units, n * units)
    if not SHOW_PROGRESS["on"]:
        return now
    progress(f"simulating the benchmark: {done * units:,} of {n * units:,} requests done, "
             f"about {left:,.0f} s left")
    return now


def simulate_benchmark(spec, hw, *, tp, num_requests, prompt_tokens, output_tokens, token_budget, run_cap,
                       bits, rate=None, concurrency=None, arrivals="poisson", seed=0, pp=1, dp=1, ep=1,
                       progress=None, output_steps=None):
    """A finite benchmark run stepped through, as a client such as vLLM's benchmark_serving.py or
    TensorRT-LLM's Triton benchmark measures one: num_requests requests of s prompt and o output
    tokens, sent at `rate` per second (benchmark_arrivals) or by `concurrency` clients that each
    send their next request when the last one returns (closed loop). The engine is the steady
    state's scheduler, stepped instead of averaged:
      * it admits waiting requests in arrival order while fewer than run_cap run (the KV pool at
        s + o tokens each, or the stack's running cap): a request's whole cache is reserved when
        it is admitted, TensorRT-LLM's GUARANTEED_NO_EVICT policy (vLLM admits on the prompt's
        blocks and may preempt later: not modelled);
      * a step runs one token of every decoding request (run_cap is held to token_budget, as
        vLLM requires max_num_seqs <= max_num_batched_tokens), then prompt chunks of the admitted
        requests in arrival order up to token_budget tokens in all (chunked prefill,
        Sarathi-Serve); a request's first token comes out of the step that ends its prompt, the
        rest one per step; a step costs mixed_step at its decodes' mean context;
      * a closed loop of identical requests stays in step: the clients start together, so their
        requests finish together and their next prompts share steps (the steady state spreads
        them over the cycle instead);
      * decode-only steps repeat unchanged until the next finish or admissible arrival, and are
        costed together at their mean context (exact while the step time is linear in the
        context, as full attention's is);
      * with dp data-parallel attention groups each group gets num_requests / dp requests
        (rounded up) at rate / dp (or concurrency / dp clients), all groups alike, as
        steady_state assumes; with pp stages the requests split over min(pp, requests / dp)
        micro-batches in flight the same way (vLLM's virtual engines, one scheduler each), a
        micro-batch's step running its stages in turn while the others use the rest (run_cap is
        the whole replica's KV pool, shared evenly).
    The stack's fixed cost per request (hw["request_overhead_s"]) adds to each TTFT and end-to-end
    time and delays a closed-loop client's next request. The duration runs from the first request
    sent to the last answer, and throughput = requests x o / duration, as benchmark clients report
    it: the ramp-up and the drain are in it. Returns the means, medians and 99th percentiles per
    request, the duration, the throughputs and the mean step's composition."""
    import collections, heapq, time  # noqa: E401 (only a simulated benchmark needs them: start-up time)
    s, o = prompt_tokens, output_tokens
    o_run = output_steps or o  # speculative decoding: a request's decode steps + 1, fewer than o
    K = token_budget if math.isfinite(token_budget) else 10 ** 18  # inf: every prompt whole
    closed = concurrency is not None
    engines = max(1, min(pp, (concurrency if closed else num_requests) // dp))  # micro-batches
    units = dp * engines  # alike: one is simulated
    if num_requests % units or (closed and concurrency % units):  # units unlike: each simulated
        return _uneven_alike_run(spec, hw, **{k: v for k, v in locals().items() if k in _ALIKE})
    n = math.ceil(num_requests / units)
    run_cap = max(1, min(run_cap // units, K))  # a step decodes every running request within its budget
    req_s = hw["request_overhead_s"]
    if closed:
        pending = [0.0] * min(max(1, math.ceil(concurrency / units)), n)  # a heap of arrival times
        sent = len(pending)
    else:
        pending = benchmark_arrivals(n=n, rate=rate / units, arrivals=arrivals, seed=seed)
        sent = n
    heapq.heapify(pending)
    kw = dict(tp=tp, pp=pp, prompt_tokens=s, bits=bits, dp=dp, ep=ep)
    memo = {}

    def step_s(d, ctx, p):
        key = (d, round(ctx), p)
        if key not in memo:
            memo[key] = mixed_step(spec, hw, decodes=dp * d, decode_context=key[1], prefill_tokens=dp * p,
                                   **kw)["time_s"]
        return memo[key]

    waiting = collections.deque()  # arrival times of requests sent, not yet admitted
    prefilling = collections.deque()  # [arrival, prompt tokens done]: admitted, in arrival order
    # decoding requests in cohorts that got their first token in the same step, oldest first:
    # [that step's number, its end time, the members' arrival times]; all finish together
    cohorts = collections.deque()
    d = first_sum = n_run = step = done = most = 0  # first_sum: sum over decoders of their cohort's step
    ttft, tpot, e2e = [], [], []
    warm = []  # (TTFT, TPOT, E2E) of a closed loop's requests after its first wave
    t, dec_tokens, pre_tokens, duration = 0.0, 0, 0, 0.0
    started = last_shown = time.monotonic()  # progress lines once the run takes over a second

    def finish(first_step, first_t, arrivals):
        nonlocal d, first_sum, n_run, done, sent, duration
        m = len(arrivals)
        d, first_sum, n_run, done = d - m, first_sum - m * first_step, n_run - m, done + m
        ttft.extend(first_t - a + req_s for a in arrivals)
        e2e.extend(t - a + req_s for a in arrivals)
        if o > 1:
            tpot.extend([(t - first_t) / (o - 1)] * m)
        if closed:  # sent after the first wave: its clients' later requests
            tp_s = (t - first_t) / max(o - 1, 1)
            warm.extend((first_t - a + req_s, tp_s, t - a + req_s) for a in arrivals if a > 0)
        duration = t + req_s
        for _ in range(min(m, n - sent) if closed else 0):
            heapq.heappush(pending, t + req_s)
            sent += 1

    while done < n:
        while pending and pending[0] <= t:
            waiting.append(heapq.heappop(pending))
        while waiting and n_run < run_cap:
            prefilling.append([waiting.popleft(), 0])
            n_run += 1
        if not n_run:
            t = pending[0]  # idle until the next request comes
            continue
        most = max(most, n_run)
        room, chunks = K - d, []
        for r in prefilling:
            if room <= 0:
                break
            chunks.append(min(s - r[1], room))
            room -= chunks[-1]
        p = sum(chunks)
        ctx = s + step - first_sum / d if d else s  # a decoder's context: s + its tokens out - 1
        k = 1
        if not chunks:  # decode only: unchanged until a finish or an arrival that can be admitted
            k = o_run - (step - cohorts[0][0] + 1)
            if pending and n_run < run_cap:
                k = min(k, max(1, math.ceil((pending[0] - t) / step_s(d, ctx, 0))))
        t += k * step_s(d, ctx + (k - 1) / 2, p)
        step, dec_tokens, pre_tokens = step + k, dec_tokens + k * d, pre_tokens + p
        while cohorts and step - cohorts[0][0] + 1 >= o_run:
            finish(*cohorts.popleft())
        new = []
        for c in chunks:
            if c < s - prefilling[0][1]:  # a partial chunk: only the step's last can be one
                prefilling[0][1] += c
                break
            new.append(prefilling.popleft()[0])
        if new:
            d, first_sum = d + len(new), first_sum + len(new) * step
            if o_run == 1:
                finish(step, t, new)
            else:
                cohorts.append((step, t, new))
        if progress and time.monotonic() - last_shown > 1.0:
            last_shown = report_progress(progress, started=started, done=done, n=n, units=units)
    total = n * units
    mean_dec, mean_pre = dec_tokens / step, pre_tokens / step
    ctx = s + max(o - 2, 0) // 2
    dec = mixed_step(spec, hw, decodes=dp * mean_dec, decode_context=ctx, prefill_tokens=dp * mean_pre, **kw)
    pre = mixed_step(spec, hw, decodes=dp * mean_dec, decode_context=ctx,
                     prefill_tokens=dp * max(mean_pre, min(s, K)), **kw)
    def mean(xs):
        return sum(xs) / len(xs)
    tpots = tpot or [pre["time_s"]]  # o = 1: no decode step; the step that ends a prompt stands in
    return {"ttft_s": mean(ttft), "tpot_s": mean(tpots), "e2e_s": mean(e2e),
            "ttft_median_s": _percentile(ttft, 50), "ttft_p99_s": _percentile(ttft, 99),
            "tpot_median_s": _percentile(tpots, 50), "tpot_p99_s": _percentile(tpots, 99),
            "e2e_median_s": _percentile(e2e, 50), "e2e_p99_s": _percentile(e2e, 99),
            "ttft_p90_s": _percentile(ttft, 90), "tpot_p90_s": _percentile(tpots, 90), "e2e_p90_s": _percentile(e2e, 90),
            "num_requests": total, "duration_s": duration, "requests_per_s": total / duration,
            "mean_in_flight": units * sum(e2e) / duration, "most_running": units * most, "engine_steps": step,
            "micro_batches": engines,
            "decodes_per_step": mean_dec, "prompt_tokens_per_step": mean_pre,
            "decode_step": dec, "prompt_step": pre, **warm_statistics(warm)}


def warm_statistics(warm):
    """Mean TTFT, TPOT and end-to-end time of a closed loop's requests sent after its first wave
    (every client's first request, sent together at the start: the ramp-up a static batch also
    has), as load generators that measure once the load is stable report (NVIDIA's perf_analyzer
    and genai-perf measure in windows after a warm-up); None without any (an open loop, or one
    request per client)."""
    n = len(warm)
    return {"warm_requests": n,
            **{f"warm_{k}_s": sum(x[i] for x in warm) / n if n else None
               for i, k in enumerate(("ttft", "tpot", "e2e"))}}


_ALIKE = ("tp", "num_requests", "prompt_tokens", "output_tokens", "token_budget", "run_cap", "bits",
          "rate", "concurrency", "arrivals", "seed", "pp", "dp", "ep", "progress")


def _uneven_alike_run(spec, hw, *, tp, num_requests, prompt_tokens, output_tokens, token_budget,
                      run_cap, bits, rate, concurrency, arrivals, seed, pp, dp, ep, progress):
    """simulate_benchmark's run when its requests do not split evenly over the data-parallel
    groups and micro-batches (201 over 2): simulate_requests serves each unit's own requests, so
    the run counts num_requests, not the next multiple (the pool: run_cap requests' tokens).
    Returns simulate_benchmark's keys."""
    reqs = [(None, prompt_tokens, output_tokens, None, 0)] * num_requests
    st = simulate_requests(spec, hw, tp=tp, requests=reqs, token_budget=token_budget,
                           pool_tokens=run_cap * (prompt_tokens + output_tokens),
                           max_running=run_cap, bits=bits, rate=rate, concurrency=concurrency,
                           arrivals=arrivals, seed=seed, pp=pp, dp=dp, ep=ep, progress=progress)
    keep = ("ttft", "tpot", "e2e", "warm")
    return {k: v for k, v in st.items()
            if k.split("_")[0] in keep or k in (
                "num_requests", "duration_s", "requests_per_s", "mean_in_flight", "most_running",
                "engine_steps", "micro_batches", "decodes_per_step", "prompt_tokens_per_step",
                "decode_step", "prompt_step")}


def _bucket(x, _log=math.log):
    """x rounded for the step-cost memo: exact below 64, else to a grid 1/32 apart in log (3%
    steps), so a mix's many contexts and chunk sizes cost a few hundred distinct passes. Returns
    the grid index (x itself below 64); _grid_value gives the value back."""
    return int(x + 0.5) if x < 63.5 else 100_000 + int(_log(x) * 32 + 0.5)


def _grid_value(i):
    """The value of a _bucket index."""
    return i if i < 100_000 else round(math.exp((i - 100_000) / 32))


def simulate_requests(spec, hw, *, tp, requests, token_budget, pool_tokens, max_running, bits, rate=None,
                      concurrency=None, arrivals="poisson", seed=0, pp=1, dp=1, ep=1, progress=None, memo=None,
                      host_tokens=0, host_s_per_token=0.0, scheduler_steps=1):
    """A benchmark run of requests that differ (workload.py: a drawn length mix or a trace), each
    (arrival_s, s_i, o_i, prefix_key, prefix_tokens), stepped through with simulate_benchmark's
    scheduler, per request instead of per cohort (_run_mix):
      * the KV pool counts tokens (pool_tokens per data-parallel group and micro-batch, a
        request's cache at its s_i + o_i: reserved whole on admission, TensorRT-LLM's
        GUARANTEED_NO_EVICT); at most max_running run at once; admission in arrival order stops at
        the first request that does not fit (first come, first served);
      * prefix caching and the host tier (host_tokens > 0): _TokenPool;
      * a step's prompt chunks are costed as one group of equal chunks at their mean length and
        mean cached context, its decodes at their mean context; step costs are memoised on a grid
        3% apart (_mix_step_cost);
      * multi-step scheduling (vLLM 0.6's --num-scheduler-steps N): once decodes run, the scheduler
        runs N decode steps before it looks again, so an arrival waits for the window to end; a
        step with prompt work opens a new window;
      * arrivals: the trace's own times from its first, or `rate` per second
        (benchmark_arrivals), or `concurrency` clients each sending its next request when the
        last returns; with dp data-parallel groups and pp micro-batches the units take the
        requests in turn and each unit is simulated, so every request is served (_unit_arrivals).
    Returns simulate_benchmark's statistics (means, medians, p90 and p99 over the mix) plus the
    prefix cache's: hits, prompt tokens computed and skipped, evictions, most pool tokens held."""
    K = token_budget if math.isfinite(token_budget) else 10 ** 18
    closed = concurrency is not None
    engines = max(1, min(pp, (concurrency if closed else len(requests)) // dp))
    units = dp * engines
    sp = hw.get("speculative")
    memo = {} if memo is None else memo  # step costs (a caller running one layout again: its own)
    step_s = _mix_step_cost(spec, hw, tp=tp, pp=pp, dp=dp, ep=ep, bits=bits, memo=memo)
    import time  # only a simulated benchmark needs it (start-up time)
    runs, pools, clock = [], [], [time.monotonic(), time.monotonic(), 0, len(requests)]
    for reqs, pending in _unit_arrivals(requests, concurrency=concurrency, units=units, rate=rate,
                                        arrivals=arrivals, seed=seed):
        # decode steps + 1 each request runs: o_i, or with speculative decoding its o_i - 1
        # tokens at the expected tokens per verification step (rounded up)
        o_run = [speculative_decode_steps(output_tokens=r[2], tokens_per_step=sp["tokens_per_step"],
                                          whole=True) if sp else r[2] for r in reqs]
        pool = _TokenPool(reqs, free=pool_tokens / units, host_tokens=host_tokens,
                          host_s_per_token=host_s_per_token)
        runs.append(_run_mix(reqs, o_run, pool, step_s, pending=pending, sent=len(pending),
                             closed=closed, K=K,
                             run_cap=max(1, min(max_running // units if max_running
                                                else 10 ** 9, K)),
                             req_s=hw["request_overhead_s"], scheduler_steps=scheduler_steps,
                             progress=progress, units=units, pool_tokens=pool_tokens,
                             clock=clock))
        pools.append(pool)
    return _mix_statistics(spec, hw, requests, _merged_runs(runs), _PoolTotals(pools), tp=tp,
                           pp=pp, dp=dp, ep=ep, bits=bits, K=K, units=1, engines=engines,
                           pool_tokens=pool_tokens, host_s_per_token=host_s_per_token)


def _unit_arrivals(requests, *, concurrency, units, rate, arrivals, seed):
    """Each unit's (requests, heap of (arrival time, index among them)), every request served by
    one unit: the units (data-parallel groups x pipeline micro-batches) take the requests in
    arrival order in turn (a round-robin router). Arrivals are the trace's own times counted from
    its first (a trace starting at t = 1,000 s starts the run there, not 1,000 s of idling), or
    drawn at `rate` for all requests (benchmark_arrivals) and dealt out the same way; a closed
    loop's clients are dealt out too, each unit's first requests sent at 0; with fewer clients
    than units only as many units serve (one client each), the rest stay idle."""
    import heapq  # only a simulated benchmark needs it (start-up time)
    n = len(requests)
    if concurrency is not None:
        units = min(units, concurrency)
    else:
        if rate is not None:
            times = benchmark_arrivals(n=n, rate=rate, arrivals=arrivals, seed=seed)
        else:
            origin = min(r[0] for r in requests)
            times = [r[0] - origin for r in requests]
    for u in range(min(units, n)):
        reqs = requests[u::units]
        if concurrency is not None:
            clients = concurrency // units + (u < concurrency % units)
            pending = [(0.0, i) for i in range(min(clients, len(reqs)))]
        else:
            pending = [(t, i) for i, t in enumerate(times[u::units])]
            heapq.heapify(pending)
        yield reqs, pending


def _merged_runs(runs):
    """The units' runs as one: every request's times, the steps and tokens summed (so their ratio
    is a unit's mean step), the run as long as the longest unit's, the most running summed."""
    out = dict(ttft=[], e2e=[], tpot=[], warm=[], steps=0, dec_tokens=0, pre_tokens=0, duration=0.0,
               most=0, unit_steps=0)
    for r in runs:
        for k in ("ttft", "e2e", "tpot", "warm"):
            out[k].extend(r[k])
        for k in ("steps", "dec_tokens", "pre_tokens", "most"):
            out[k] += r[k]
        out["duration"] = max(out["duration"], r["duration"])
        out["unit_steps"] = max(out["unit_steps"], r["steps"])
    return out


class _PoolTotals:
    """The units' _TokenPool counts added up (the most held: one unit's most)."""

    def __init__(self, pools):
        for k in ("hits", "computed", "skipped", "evictions", "host_hits", "loaded"):
            setattr(self, k, sum(getattr(p, k) for p in pools))
        self.most_held = max(p.most_held for p in pools)
        self.host_held = max(p.host_held for p in pools)


def _mix_step_cost(spec, hw, *, tp, pp, dp, ep, bits, memo):
    """step_s(d, ctx, chunks, p, pctx): the seconds of one engine step of a mix with d decodes at
    mean context ctx and `chunks` prompt chunks of p tokens in all at mean cached context pctx,
    memoised in `memo` on the _bucket grid."""
    sp = hw.get("speculative")
    step_oh = hw["step_overhead_s"]
    kw = dict(tp=tp, pp=pp, dp=dp, ep=ep, **bits)

    def pass_s(batch, new, before, absorbed, also=()):
        r = forward_pass(spec, hw, batch=dp * batch, new_tokens=new, context_before=before, absorbed=absorbed,
                         also=tuple((dp * g[0],) + g[1:] for g in also), **kw)
        return r["time_s"], r["components_s"]["attention_core"]

    vt = sp["k"] + 1 if sp else 1  # tokens a decode runs per step (the verification of K drafts)

    grid = {}  # _bucket of whole numbers, looked up

    def bucket(x):
        x = int(x + 0.5)
        b = grid.get(x)
        if b is None:
            b = grid[x] = _bucket(x)
        return b

    def step_s(d, ctx, chunks, p, pctx):
        """One step: the weights' and the stack's part, set by the step's tokens and logit rows,
        plus each group's attention (forward_pass sums them, a roofline per group), plus a
        speculative draft's passes."""
        key = (bucket(d * vt + p), bucket(d + chunks), p > 0)
        t = memo.get(key)
        if t is None:  # rows - 1 decodes and one sequence carrying the other tokens, attention aside
            n, rows = _grid_value(key[0]), _grid_value(key[1])
            one = max(1, n - rows + 1)
            total, attn = pass_s(rows - 1, 1, 0, True, ((1, one, 0, one == 1),)) if rows > 1 else \
                pass_s(1, n, 0, n == 1)
            t = memo[key] = total - attn + step_oh
        if d:
            key = ("d", bucket(d), bucket(ctx))
            a = memo.get(key)
            if a is None:
                dd, cc = _grid_value(key[1]), _grid_value(key[2])
                a = memo[key] = pass_s(dd, vt, cc, True)[1] + (
                    draft_step_s(sp, hw, batch=dp * dd, context=cc, tp=tp, pp=pp, bits=bits, dp=dp, ep=ep)
                    if sp else 0.0)
            t += a
        if chunks:
            key = ("p", bucket(chunks), bucket(p / chunks), bucket(pctx))
            a = memo.get(key)
            if a is None:
                a = memo[key] = pass_s(_grid_value(key[1]), max(1, _grid_value(key[2])), _grid_value(key[3]),
                                       False)[1]
            t += a
        return t
    return step_s


class _TokenPool:
    """The KV pool of the unit simulated, in tokens, with its cached prefixes and host tier:
      * prefix caching (vLLM's automatic prefix caching, SGLang's RadixAttention): a prefix key
        names a cached token sequence; a request finds min(prefix_tokens, its length) tokens of it
        (at most s_i - 1), computes only the rest of its prompt, attending to the cached ones (its
        chunks cost as prompt tokens after that context), and reserves only its own tokens. The
        first request of a key caches its prefix from the end of its prompt, and every request of
        a key leaves its whole sequence (prompt and output) cached under it when done, so the next
        turn of a conversation finds its history. A key holds pool tokens until evicted, least
        recently used first among those no running request reads, when an admission needs room
        (one key per request: a system prompt shared across conversations and each conversation's
        own history are not both expressed);
      * a host tier (host_tokens > 0, KV offload): a prefix the pool evicts moves to host memory
        (least recently used dropped past host_tokens; the copy out is written behind, not timed);
        a request whose key is only there brings it back into the pool, the step that starts its
        prompt waiting host_s_per_token per token of it (not overlapped with the step's layers)."""

    __slots__ = ("reqs", "free", "host_tokens", "host_s_per_token", "reserved", "uses", "cache",
                 "held", "most_held", "hits", "evictions", "host", "host_held", "host_hits",
                 "loaded", "load_wait", "computed", "skipped")

    def __init__(self, reqs, *, free, host_tokens, host_s_per_token):
        import collections  # only a simulated benchmark needs it (start-up time)
        n = len(reqs)
        self.reqs, self.free = reqs, free  # free: tokens of the unit's pool
        self.host_tokens, self.host_s_per_token = host_tokens, host_s_per_token
        self.reserved = [0] * n  # pool tokens each running request holds
        self.uses = [None] * n   # the cached prefix a running request reads
        # prefix key -> [tokens cached, running readers]; oldest use first
        self.cache = collections.OrderedDict()
        self.held = self.most_held = self.hits = self.evictions = 0
        self.host = collections.OrderedDict()  # the host tier: key -> tokens; oldest use first
        self.host_held = self.host_hits = self.loaded = 0
        self.load_wait = 0.0  # seconds of host loads the next step waits for
        self.computed = self.skipped = 0

    def evict(self, k):
        """The pool drops prefix k: to the host tier when there is one."""
        n_k = self.cache.pop(k)[0]
        self.free, self.held, self.evictions = self.free + n_k, self.held - n_k, self.evictions + 1
        if self.host_tokens and n_k <= self.host_tokens:
            host = self.host
            self.host_held += n_k - host.pop(k, 0)
            host[k] = n_k
            while self.host_held > self.host_tokens:
                self.host_held -= host.popitem(last=False)[1]

    def admit(self, i):
        """Admit request i if the pool has room (evicting unused prefixes): its [index, prompt
        tokens still to compute, cached context], or None if it does not fit."""
        _, s_i, o_i, key, p_i = self.reqs[i]
        cache, host = self.cache, self.host
        entry = cache.get(key) if key is not None else None
        back = 0 if entry or key is None or key not in host else host[key]  # to bring back from the host
        h = min(p_i, entry[0] if entry else back, s_i - 1)  # cached tokens it finds (one of its own at least)
        need = s_i + o_i - h + back
        if back:
            host.move_to_end(key)  # the pool's evictions below push older prefixes out of the host first
        if need > self.free:
            for k in [k for k, e in cache.items() if e[1] == 0 and k != key]:
                if need <= self.free:
                    break
                self.evict(k)
        if need > self.free:
            return None
        if back and key not in host:  # pushed out of a small host tier just now: computed instead
            back, h, need = 0, 0, s_i + o_i
        if back:  # the host's copy comes back into the pool as the key's cached sequence
            self.host_held -= host.pop(key)
            self.free, self.held, need = self.free - back, self.held + back, need - back
            self.most_held = max(self.most_held, self.held)
            entry = cache[key] = [back, 0]
            self.host_hits, self.loaded = self.host_hits + 1, self.loaded + back
            self.load_wait += back * self.host_s_per_token
        self.free -= need
        self.reserved[i] = need
        if entry:
            entry[1] += 1
            cache.move_to_end(key)
            self.uses[i] = key
        self.hits += h > 0
        self.computed, self.skipped = self.computed + s_i - h, self.skipped + h
        return [i, s_i - h, h]

    def grow(self, i, upto):
        """Request i's first `upto` tokens become its prefix key's cached sequence (from the pool
        tokens it reserved) where the entry is shorter."""
        key = self.reqs[i][3]
        entry = self.cache.get(key)
        if entry is None:
            entry = self.cache[key] = [0, 0]
        if self.uses[i] is None:
            entry[1] += 1
            self.uses[i] = key
        self.cache.move_to_end(key)
        moved = min(max(0, upto - entry[0]), self.reserved[i])
        if moved:
            entry[0] += moved
            self.reserved[i] -= moved
            self.held += moved
            self.most_held = max(self.most_held, self.held)

    def release(self, i):
        """Request i is done: its whole sequence stays cached under its prefix key (the next turn
        of a conversation finds it), the rest of its tokens go back to the pool."""
        key = self.reqs[i][3]
        if key is not None:
            self.grow(i, self.reqs[i][1] + self.reqs[i][2])
            self.cache[key][1] -= 1
            self.uses[i] = None
        self.free += self.reserved[i]


def _run_mix(reqs, o_run, pool, step_s, *, pending, sent, closed, K, run_cap, req_s,
             scheduler_steps, progress, units, pool_tokens, clock=None):
    """The mix's engine loop (simulate_requests): arrivals wait, admissions take pool tokens, each
    step runs every decode and prompt chunks up to K tokens (none inside a multi-step window), and
    finished requests free their tokens (and send a closed-loop client's next request). clock:
    the whole run's progress [started, last shown, requests done before this unit, requests in
    all], shared by the units of one run. Returns {ttft, e2e, tpot (lists), steps, decode and
    prompt tokens run, duration, most running}."""
    import collections, heapq, time  # noqa: E401 (only a simulated benchmark needs them)
    n = len(reqs)
    arrival, first_t, first_step, ttft, e2e, tpot = [0.0] * n, [0.0] * n, [0] * n, [], [], []
    warm = []  # (TTFT, TPOT, E2E) of a closed loop's requests sent after the first wave
    since = scheduler_steps  # decode steps since the scheduler last looked (multi-step scheduling)
    waiting = collections.deque()
    prefilling = collections.deque()  # [index, prompt tokens still to compute, cached context]
    finishing = []  # heap of (step of the last token, index)
    d = base = n_run = step = done = most = 0  # base: sum over decoders of s_i - their first step
    t, dec_tokens, pre_tokens, duration = 0.0, 0, 0, 0.0
    clock = clock or [time.monotonic(), time.monotonic(), 0, n * units]
    while done < n:
        while pending and pending[0][0] <= t:
            a, i = heapq.heappop(pending)
            arrival[i] = a
            waiting.append(i)
        looks = since >= scheduler_steps or not d  # the scheduler admits only between windows
        while looks and waiting and n_run < run_cap:
            row = pool.admit(waiting[0])
            if row is None:
                break
            prefilling.append(row)
            waiting.popleft()
            n_run += 1
        if not n_run:
            if not pending:  # nothing runs and the head cannot fit: one request larger than the pool
                raise ValueError(f"a request of {reqs[waiting[0]][1] + reqs[waiting[0]][2]:,} tokens does not fit "
                                 f"the KV pool of {pool_tokens / units:,.0f} tokens")
            t = max(t, pending[0][0])
            continue
        most = max(most, n_run)
        room, chunks, ctx_sum = (K - d if looks else 0), [], 0
        for r in prefilling:
            if room <= 0:
                break
            c = min(r[1], room)
            chunks.append(c)
            ctx_sum += r[2]
            room -= c
        p = sum(chunks)
        ctx = base / d + step if d else 0
        k = 1
        if not chunks:
            k = finishing[0][0] - step
            if scheduler_steps > 1:  # runs to the window's end (or a finish): arrivals wait for it
                since = 0 if since >= scheduler_steps else since
                k = min(k, scheduler_steps - since)
            elif pending and not waiting and n_run < run_cap:
                k = min(k, max(1, math.ceil((pending[0][0] - t) / step_s(d, ctx, 0, 0, 0))))
            k = max(k, 1)
            since += k
        else:
            since = 0 if scheduler_steps > 1 else since
        pctx = ctx_sum / len(chunks) if chunks else 0
        t += k * step_s(d, ctx + (k - 1) / 2, len(chunks), p, pctx) + pool.load_wait
        pool.load_wait = 0.0
        step, dec_tokens, pre_tokens = step + k, dec_tokens + k * d, pre_tokens + p
        while finishing and finishing[0][0] <= step:
            _, i = heapq.heappop(finishing)
            d, base, n_run, done = d - 1, base - (reqs[i][1] - first_step[i]), n_run - 1, done + 1
            ttft.append(first_t[i] - arrival[i] + req_s)
            e2e.append(t - arrival[i] + req_s)
            tpot.append((t - first_t[i]) / (reqs[i][2] - 1))
            if closed and arrival[i] > 0:
                warm.append((ttft[-1], tpot[-1], e2e[-1]))
            duration = t + req_s
            pool.release(i)
            if closed and sent < n:
                heapq.heappush(pending, (t + req_s, sent))
                sent += 1
        for c in chunks:
            r = prefilling[0]
            r[1] -= c
            r[2] += c
            if r[1] > 0:
                break
            prefilling.popleft()
            i = r[0]
            first_t[i], first_step[i] = t, step
            if reqs[i][3] is not None and reqs[i][4]:  # its prefix is computed: cached from now on
                pool.grow(i, reqs[i][4])
            if o_run[i] == 1:
                n_run, done = n_run - 1, done + 1
                ttft.append(t - arrival[i] + req_s)
                e2e.append(t - arrival[i] + req_s)
                duration = t + req_s
                pool.release(i)
                if closed and sent < n:
                    heapq.heappush(pending, (t + req_s, sent))
                    sent += 1
            else:
                d, base = d + 1, base + reqs[i][1] - step
                heapq.heappush(finishing, (step + o_run[i] - 1, i))
        if progress and time.monotonic() - clock[1] > 1.0:
            clock[1] = report_progress(progress, started=clock[0], done=clock[2] + done,
                                       n=clock[3], units=1)
    clock[2] += n
    return dict(ttft=ttft, e2e=e2e, tpot=tpot, steps=step, dec_tokens=dec_tokens,
                pre_tokens=pre_tokens, duration=duration, most=most, warm=warm)


def _mix_statistics(spec, hw, reqs, run, pool, *, tp, pp, dp, ep, bits, K, units, engines,
                    pool_tokens, host_s_per_token):
    """simulate_requests' answer: the run's throughput, the mean step's composition (mixed_step at
    the mix's means), the prefix cache's and host tier's counts, and the means, medians, p90 and
    p99 of TTFT, TPOT and end-to-end time."""
    n, step, duration, e2e = len(reqs), run["steps"], run["duration"], run["e2e"]
    total = n * units
    s_mean = sum(r[1] for r in reqs) / n
    o_mean = sum(r[2] for r in reqs) / n
    mean_dec, mean_pre = run["dec_tokens"] / step, run["pre_tokens"] / step
    ctx = s_mean + max(o_mean - 2, 0) / 2
    mk = dict(tp=tp, pp=pp, prompt_tokens=max(1, round(s_mean)), bits=bits, dp=dp, ep=ep)
    dec = mixed_step(spec, hw, decodes=dp * mean_dec, decode_context=ctx, prefill_tokens=dp * mean_pre, **mk)
    pre = mixed_step(spec, hw, decodes=dp * mean_dec, decode_context=ctx,
                     prefill_tokens=dp * max(mean_pre, min(s_mean, K)), **mk)
    tpots = run["tpot"] or [pre["time_s"]]
    out = {"num_requests": total, "duration_s": duration, "requests_per_s": total / duration,
           "output_tokens_per_s": units * sum(r[2] for r in reqs) / duration,
           "input_tokens_per_s": units * sum(r[1] for r in reqs) / duration,
           "mean_in_flight": units * sum(e2e) / duration, "most_running": units * run["most"],
           "engine_steps": run.get("unit_steps", step),
           "micro_batches": engines, "decodes_per_step": mean_dec, "prompt_tokens_per_step": mean_pre,
           "decode_step": dec, "prompt_step": pre,
           "prefix_hits": pool.hits * units, "prompt_tokens_computed": pool.computed * units,
           "prompt_tokens_cached": pool.skipped * units, "prefix_evictions": pool.evictions * units,
           "prefix_tokens_held_most": pool.most_held, "kv_pool_tokens": pool_tokens,
           "host_hits": pool.host_hits * units, "host_tokens_loaded": pool.loaded * units,
           "host_load_s": pool.loaded * host_s_per_token, "host_tokens_held": pool.host_held,
           **warm_statistics(run["warm"])}
    for name, xs in (("ttft", run["ttft"]), ("tpot", tpots), ("e2e", e2e)):
        out[f"{name}_s"] = sum(xs) / len(xs)
        xs = sorted(xs)
        for q, label in ((50, "median"), (90, "p90"), (99, "p99")):
            out[f"{name}_{label}_s"] = _percentile(xs, q, presorted=True)
    return out
