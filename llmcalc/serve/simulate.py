"""A finite benchmark run simulated step by step (--num-requests): arrivals, ramp-up, queueing and
drain, with the statistics benchmark clients report."""

import math

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


def _percentile(values, q):
    """The q-th percentile of values, linear between order statistics (numpy's default)."""
    v = sorted(values)
    x = (len(v) - 1) * q / 100
    lo = math.floor(x)
    return v[lo] + (v[min(lo + 1, len(v) - 1)] - v[lo]) * (x - lo)


# A simulation whose pace says it would run past this is stopped, saying how long it would take.
SIMULATION_LIMIT_S = 120.0


class SimulationTooLong(Exception):
    """The run would take more than SIMULATION_LIMIT_S: (seconds left, requests done, requests)."""


def simulate_benchmark(spec, hw, *, tp, num_requests, prompt_tokens, output_tokens, token_budget, run_cap,
                       bits, rate=None, concurrency=None, arrivals="poisson", seed=0, pp=1, dp=1, ep=1,
                       progress=None):
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
    K = token_budget if math.isfinite(token_budget) else 10 ** 18  # inf: every prompt whole
    closed = concurrency is not None
    engines = max(1, min(pp, (concurrency if closed else num_requests) // dp))  # micro-batches
    units = dp * engines  # alike: one is simulated
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
            k = o - (step - cohorts[0][0] + 1)
            if pending and n_run < run_cap:
                k = min(k, max(1, math.ceil((pending[0] - t) / step_s(d, ctx, 0))))
        t += k * step_s(d, ctx + (k - 1) / 2, p)
        step, dec_tokens, pre_tokens = step + k, dec_tokens + k * d, pre_tokens + p
        while cohorts and step - cohorts[0][0] + 1 >= o:
            finish(*cohorts.popleft())
        new = []
        for c in chunks:
            if c < s - prefilling[0][1]:  # a partial chunk: only the step's last can be one
                prefilling[0][1] += c
                break
            new.append(prefilling.popleft()[0])
        if new:
            d, first_sum = d + len(new), first_sum + len(new) * step
            if o == 1:
                finish(step, t, new)
            else:
                cohorts.append((step, t, new))
        if progress and time.monotonic() - last_shown > 1.0:
            now = time.monotonic()
            left = (n - done) * (now - started) / max(done, 1)  # at the pace so far
            if left > SIMULATION_LIMIT_S:
                raise SimulationTooLong(left, done * units, n * units)
            progress(f"simulating the benchmark: {done * units:,} of {n * units:,} requests done, "
                     f"about {left:,.0f} s left")
            last_shown = now
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
            "num_requests": total, "duration_s": duration, "requests_per_s": total / duration,
            "mean_in_flight": units * sum(e2e) / duration, "most_running": units * most, "engine_steps": step,
            "micro_batches": engines,
            "decodes_per_step": mean_dec, "prompt_tokens_per_step": mean_pre,
            "decode_step": dec, "prompt_step": pre}
