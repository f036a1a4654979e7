"""Continuous batching in steady state: decode and prefill step times, the critical batch, mixed
steps, and the concurrency a request rate needs."""

import math

from ..model.formulas import decode_keys_read
from ..model.kinds import layer_groups
from .forward import (attention_core_costs, cached_keys_read, forward_pass,
    linear_mixer_core_costs, roofline_time_s, sum_max_linear)
from .speculative import draft_step_s


def attention_decode_sum_s(attn, hw, *, tp, batch, kv_bits, a_bits, c_lo, c_hi, state_bits=32):
    """Exact sum over the decode steps that find c = c_lo .. c_hi tokens cached of one attention
    block's roofline time (attention_core_costs, absorbed). A step's cost is linear in the core's
    cached keys kc and, with an indexer, in c itself; kc = c (full), min(c, cap) with cap = w - 1
    (sliding) or top-k - 1 (DSA), or c mod C capped the same way (chunked: 0 .. C-1, then again).
    So the sum splits where kc stops growing and at chunk starts, and each piece is a max of two
    lines (sum_max_linear); full chunks without an indexer cost the same and are multiplied."""
    F16, B = hw["attention_flops_per_s"], hw["bytes_per_s"]
    kv_slow = 1.0 - B / hw.get("cache_bytes_per_s", B)  # cache reads' bytes less, at B's rate (forward_pass)
    ind = 1 if attn["index_topk"] else 0
    if attn["kind"] == "dsv4":  # window keys saturate at W; compressed entries grow by one per m tokens
        def step_s(c):
            k = cached_keys_read(attn, context_before=c)
            p = decode_keys_read(attn, context=c + 1)
            fl, by, rd = attention_core_costs(
                attn, tp=tp, pairs={k2: batch * v for k2, v in p.items()}, new_tokens=batch,
                keys_read={k2: batch * v for k2, v in k.items()}, kv_bits=kv_bits, act_bits=a_bits, absorbed=True,
                per_head_kv=hw.get("per_head_kv_decode", False))
            return roofline_time_s(flops=fl, bytes_moved=by - rd * kv_slow, flops_per_s=F16, bytes_per_s=B)
        if c_hi < c_lo:
            return 0.0
        if c_hi - c_lo < 256:  # exact, step by step
            return sum(step_s(c) for c in range(c_lo, c_hi + 1))
        # past the window the cost is linear in floor(c / m): the trapezoid over the steps, within one
        # compressed entry per step of the exact sum (every step costed would cost o calls)
        return (c_hi - c_lo + 1) * (step_s(c_lo) + step_s(c_hi)) / 2
    if attn["span"] == "state":  # a recurrent step costs the same at every context
        if c_hi < c_lo:
            return 0.0
        fl, by, _ = linear_mixer_core_costs(attn, tp=tp, pairs={}, new_tokens=batch, act_bits=a_bits,
                                            state_bits=state_bits)
        return (c_hi - c_lo + 1) * roofline_time_s(flops=fl, bytes_moved=by, flops_per_s=F16, bytes_per_s=B)

    def cost(kc, c):
        fl, by, rd = attention_core_costs(
            attn, tp=tp, pairs={"core": batch * (kc + 1), "indexer": batch * (c + 1) * ind},
            new_tokens=batch, keys_read={"core": batch * kc, "indexer": batch * c * ind},
            kv_bits=kv_bits, act_bits=a_bits, absorbed=True, per_head_kv=hw.get("per_head_kv_decode", False))
        return fl, by - rd * kv_slow

    f0, m0 = cost(0, 0)
    (fk, mk), (fc, mc) = [(f - f0, m - m0) for f, m in (cost(1, 0), cost(0, 1))]
    a0, ak, ac, b0, bk, bc = f0 / F16, fk / F16, fc / F16, m0 / B, mk / B, mc / B
    caps = ([attn["window"]] if attn["span"] == "sliding" else []) + ([attn["index_topk"]] if ind else [])
    cap = min(caps) - 1 if caps else None

    def piece(base, lo, hi):  # sum over c in [lo, hi] with kc = min(c - base, cap)
        knee = hi if cap is None else min(hi, base + cap)
        out = sum_max_linear(a0=a0 - ak * base, a1=ak + ac, b0=b0 - bk * base, b1=bk + bc,
                             c_lo=lo, c_hi=knee)
        if cap is not None:
            out += sum_max_linear(a0=a0 + ak * cap, a1=ac, b0=b0 + bk * cap, b1=bc,
                                  c_lo=max(lo, base + cap + 1), c_hi=hi)
        return out

    if c_hi < c_lo:
        return 0.0
    if attn["span"] != "chunked":
        return piece(0, c_lo, c_hi)
    C = attn["chunk"]
    q_lo, q_hi = c_lo // C, c_hi // C
    if q_lo == q_hi:
        return piece(q_lo * C, c_lo, c_hi)
    head = piece(q_lo * C, c_lo, q_lo * C + C - 1)
    tail = piece(q_hi * C, q_hi * C, c_hi)
    if ac == 0 and bc == 0:  # no c-dependent term: every full chunk costs the same
        middle = (q_hi - q_lo - 1) * piece(0, 0, C - 1)
    else:
        middle = sum(piece(q * C, q * C, q * C + C - 1) for q in range(q_lo + 1, q_hi))
    return head + middle + tail


def decode_total_s(spec, hw, *, tp, pp, batch, prompt_tokens, output_tokens, w_bits, a_bits, kv_bits,
                   e_bits=None, state_bits=32, dp=1, ep=1):
    """Exact sum of the o-1 decode steps: step j (1..o-1) finds c = s + j - 1 tokens cached and
    adds its own. Only attention depends on c; the rest of a step is the same every step. Each
    distinct attention kind's steps are summed in closed form (attention_decode_sum_s), so the
    cost is proportional to the layer kinds, not to L or o."""
    steps = output_tokens - 1
    if steps <= 0:
        return 0.0
    c_lo, c_hi = prompt_tokens, prompt_tokens + steps - 1  # cached tokens before each step
    base = forward_pass(spec, hw, tp=tp, pp=pp, batch=batch, new_tokens=1, context_before=0,
                        absorbed=True, w_bits=w_bits, a_bits=a_bits, kv_bits=kv_bits, e_bits=e_bits,
                        state_bits=state_bits, dp=dp, ep=ep)
    fixed = base["time_s"] - base["components_s"]["attention_core"]
    attn_s = 0.0
    for layer, cnt, _ in layer_groups(spec):
        for attn in layer["attention"]:
            attn_s += cnt * attention_decode_sum_s(attn, hw, tp=tp, batch=batch / dp, kv_bits=kv_bits,
                                                   a_bits=a_bits, c_lo=c_lo, c_hi=c_hi, state_bits=state_bits)
    return steps * fixed + attn_s


def critical_batch(spec, hw, *, tp, pp, context, w_bits, a_bits, kv_bits, matmuls_only,
                   limit=1 << 24, e_bits=None, state_bits=32, dp=1, ep=1, steps=None):
    """Smallest batch at which a decode step at `context` cached tokens has as much math time as
    memory time. matmuls_only: the weight matmuls (about F/B x 8/w_bits tokens, Pope et al. 2022
    sec. 3; later for MoE, whose touched experts grow with b); else the whole step, which with
    long contexts never turns (the KV-cache read grows with b as fast as the math): None. steps: a
    dict of decode steps by batch to share between the two searches of one layout (same arguments
    but matmuls_only), which then cost each batch's forward pass once."""
    def is_compute(b):
        r = None if steps is None else steps.get(b)
        if r is None:
            r = forward_pass(spec, hw, tp=tp, pp=pp, batch=b, new_tokens=1, context_before=context,
                             w_bits=w_bits, a_bits=a_bits, kv_bits=kv_bits, absorbed=True,
                             e_bits=e_bits, state_bits=state_bits, dp=dp, ep=ep)
            if steps is not None:
                steps[b] = r
        if matmuls_only:
            return r["matmul_compute_s"] >= r["matmul_memory_s"]
        return r["compute_s"] >= r["memory_s"]
    # The bisection below assumes the step only tips from memory- to compute-bound as b grows (math
    # grows with b; the reads grow with b, slower, or stop growing once every expert is touched), so
    # a step still memory-bound at the largest power of two the doubling would reach never turns:
    # one pass decides what the doubling would find after ~25.
    if not is_compute(1 << (limit.bit_length() - 1)):
        return None
    lo, hi = 0, 1
    while not is_compute(hi):
        lo, hi = hi, hi * 2
        if hi > limit:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if is_compute(mid) else (mid, hi)
    return hi


def mixed_step(spec, hw, *, tp, pp, decodes, decode_context, prefill_tokens, prompt_tokens, bits, dp=1, ep=1):
    """One continuous-batching engine step: `decodes` sequences add one token each after
    decode_context cached tokens, and `prefill_tokens` prompt tokens of requests still in prefill
    run in the same step (chunked prefill: Agrawal et al. 2024, "Sarathi-Serve", sec. 4; vLLM and
    TensorRT-LLM put decodes and prompt chunks in one batch). The prompt tokens are costed as that
    fraction of whole prompts of prompt_tokens (their attention pairs add up to a whole prompt's
    over its chunks); both may be fractional steady-state means. With speculative decoding
    (hw["speculative"]) each decode verifies K + 1 tokens and the draft's K passes are added
    (draft_step_s). Returns forward_pass's dict plus the stack's fixed cost per step
    (hw["step_overhead_s"]) in time_s."""
    also = (((prefill_tokens / prompt_tokens, prompt_tokens, 0, False),) if prefill_tokens > 0 else ())
    sp = hw.get("speculative")
    r = forward_pass(spec, hw, tp=tp, pp=pp, batch=decodes, new_tokens=sp["k"] + 1 if sp else 1,
                     context_before=decode_context, absorbed=True, also=also, dp=dp, ep=ep, **bits)
    draft = draft_step_s(sp, hw, batch=decodes, context=decode_context, tp=tp, pp=pp, bits=bits, dp=dp,
                         ep=ep) if sp else 0.0
    r = dict(r, time_s=r["time_s"] + hw["step_overhead_s"] + draft)
    r["components_s"] = dict(r["components_s"], step_overhead=hw["step_overhead_s"],
                             **({"speculative_draft": draft} if sp else {}))
    return r


def prompt_step_share(*, prompts_per_step, chunks_per_prompt):
    """The share of engine steps that carry prompt tokens when prompts arrive at random, a mean
    `prompts_per_step` per step, and each runs whole in the next step (chunks_per_prompt <= 1) or
    over chunks_per_prompt full steps: at least one arrival during a step, 1 - exp(-lambda)
    (Poisson arrivals), and never fewer steps than the prompt tokens fill, lambda x chunks (the
    budget is a cap per step: Agrawal et al. 2024, Sarathi-Serve sec. 4)."""
    lam = prompts_per_step
    if lam <= 0:
        return 0.0
    return min(1.0, max(1.0 - math.exp(-lam), lam * chunks_per_prompt))


def blend_steps(a, b, f):
    """Step dict a with share 1 - f and b with share f: a mean of two kinds of step (times,
    components, FLOPs and bytes averaged; the rest taken from the more common kind)."""
    out = dict(a if f <= 0.5 else b)
    for k, v in a.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = (1 - f) * v + f * b[k]
    out["components_s"] = {k: (1 - f) * v + f * b["components_s"].get(k, 0.0)
                           for k, v in a["components_s"].items()}
    for k, v in b["components_s"].items():
        out["components_s"].setdefault(k, f * v)
    return out


def decode_steps(spec, hw, kw, *, decodes, prompt_tokens_per_step, prompt_tokens, token_budget, dp):
    """The mean step a decoding request runs in, and the share of them carrying prompt tokens: the
    scheduler runs either decodes only or decodes plus the prompt chunks waiting (whole prompts as
    they arrive, at most the budget's room), never a spread of prompt tokens over every step (a
    fine-grained MoE step reads the experts its tokens route to, which is not linear in tokens).
    Prompts arrive at random (prompt_step_share); the prompt steps carry the tokens per step
    divided by their share."""
    room = max(token_budget - decodes, 1.0)
    lam = prompt_tokens_per_step / prompt_tokens
    f = prompt_step_share(prompts_per_step=lam, chunks_per_prompt=prompt_tokens / room)
    alone = mixed_step(spec, hw, decodes=dp * decodes, prefill_tokens=0, **kw)
    if f <= 0:
        return alone, 0.0, alone, None
    both = mixed_step(spec, hw, decodes=dp * decodes, prefill_tokens=dp * prompt_tokens_per_step / f,
                      **kw)
    return blend_steps(alone, both, f), f, alone, both


def arrival_wait_s(steps, *, open_loop, others, client_s):
    """Mean wait of an arriving request for the engine step running when it comes (the scheduler
    admits between steps): steps is ((share, seconds), ...) of the kinds of step the engine runs.
    Open loop: a random instant of a busy engine, E[T^2] / 2 E[T] (the mean residual, Kleinrock
    1975 sec. 5.2; Poisson arrivals see time averages, Wolff 1982). Closed loop: the client sends
    its next request client_s (the stack's per-request time) after its last one's step ended, into
    the steps the others keep running: T - client_s when the step is the longer, else at a point of
    a later step that any jitter in client_s makes random, T / 2 on average (the larger of the two,
    so that a longer step never shortens the wait); none when no other request runs or the client
    takes no time (its next request is there before the next step is scheduled)."""
    if open_loop:
        m1 = sum(f * t for f, t in steps)
        return sum(f * t * t for f, t in steps) / (2 * m1) if m1 > 0 else 0.0
    if others <= 0 or client_s <= 0:
        return 0.0
    return sum(f * max(t - client_s, t / 2) for f, t in steps if t > 0)


def md1_wait_s(*, rho, service_s):
    """Mean wait in queue of an M/D/1 server (Poisson arrivals, deterministic service S) at load
    rho < 1: rho S / (2 (1 - rho)), the Pollaczek-Khinchine mean value formula with c_s = 0
    (Kleinrock 1975, vol. 1, ch. 5)."""
    return rho * service_s / (2 * (1 - rho))


def prompt_queue_wait_s(*, service_s, cycle_s, clients, open_loop):
    """Mean wait of a prompt for the others' prefills ahead of it: one server of deterministic
    service S. Open loop (Poisson arrivals at clients / cycle_s): the M/D/1 mean rho S / (2 (1 -
    rho)) (Pollaczek-Khinchine; Kleinrock 1975 sec. 5.5), at most all the others' service when
    rho >= 1. Closed loop: N = clients each cycling through the server and cycle_s - S elsewhere,
    mean value analysis (Reiser & Lavenberg 1980: R(n) = S (1 + Q(n-1)), X(n) = n / (R(n) + Z),
    Q(n) = X(n) R(n); past 4,096 clients the saturated asymptote R = N S - Z), which is exact for
    exponential service; its queueing delay R - S x (1 + c_s^2) / 2 = 1/2 for a deterministic one
    (the Allen-Cunneen scaling, Allen 1990 sec. 6; the same ratio as M/D/1 to M/M/1)."""
    if service_s <= 0:
        return 0.0
    if open_loop:
        rho = clients / cycle_s * service_s
        return (min(md1_wait_s(rho=rho, service_s=service_s), clients * service_s) if rho < 1 - 1e-9
                else clients * service_s)
    n_all = max(1, round(clients))
    think = max(cycle_s - service_s, 0.0)
    q = r = 0.0
    for n in range(1, min(n_all, 4096) + 1):
        r = service_s * (1 + q)
        q = n / (r + think) * r
    if n_all > 4096:
        r = max(r, n_all * service_s - think)
    return (r - service_s) / 2


def steady_state(spec, hw, *, tp, pp, concurrency, prompt_tokens, output_tokens, token_budget,
                 bits, open_loop=False, dp=1, ep=1):
    """Continuous batching in steady state with `concurrency` requests in flight (a closed loop: a
    finished request is replaced at once, as benchmark clients with a fixed concurrency do), each
    with s prompt and o output tokens, and at most token_budget tokens per engine step (decodes
    first, prompt chunks fill the rest: vLLM's max_num_batched_tokens, TensorRT-LLM's
    max_num_tokens). The clients are in random phase (their requests spread over the cycle, as
    length spread or any jitter leaves them; simulate.py's runs show the same once past their
    first wave: tests/test_serving_agreement.py). A fluid model of the scheduler, not a simulation:
      * r requests finish per step; each spends W steps from arrival to its first token and o - 1
        decoding (Little's law, C = r (W + o - 1)); so a step holds r (o - 1) decodes and r s
        prompt tokens, and r (s + o - 1) <= token_budget caps r (past it requests queue: W grows);
      * a request's own prompt takes W_p = s / (token_budget - decodes) steps (at least 1); the
        other C - 1 requests are spread over their cycle (decoding a (o-1)/(W+o-1) share of it);
      * a step runs decodes only, or decodes and the prompts that came since the last (whole, or a
        chunk filling the budget), in the share decode_steps gives; never the mean prompt tokens
        spread over every step (expert reads are not linear in tokens);
      * TPOT = the mean of those steps; TTFT = the wait for the step running when it arrives
        (arrival_wait_s), W_p steps carrying its own prompt with the others' that came with it,
        W - W_p steps of waiting at the mean step and, for an open loop, the prompts' M/D/1 queue.
    Decode contexts are the mean over a request's decode steps, s + (o - 2) / 2 (exact for full
    attention, whose cost is linear in the context). With dp data-parallel attention groups, each
    group schedules its C / dp requests under its own budget, all groups alike (the steps' batches
    are dp times one group's). With pp > 1 the requests split over min(pp, C) micro-batches in
    flight (vLLM's virtual engines, one scheduler and budget each): while one runs on a stage the
    others run on the rest, so a micro-batch's step is forward_pass over its own requests with the
    stages in turn, and the replica serves all of them at once. Returns the times, the step's
    composition (one group's, one micro-batch's) and the steps themselves."""
    engines = min(pp, concurrency / dp) if pp > 1 else 1.0
    engines = max(engines, 1.0)
    C, s, o, K = concurrency / (dp * engines), prompt_tokens, output_tokens, token_budget
    ctx = s + max(o - 2, 0) // 2
    # a closed loop's request shares the engine with C - 1 others; an open loop's arrival finds the
    # time-average number in flight (Poisson arrivals see time averages, Wolff 1982)
    others = C if open_loop else C - 1

    def solve(w):
        share = (o - 1) / (w + o - 1)  # of a request's cycle spent decoding
        d_other, p_other = others * share, others * s / (w + o - 1)
        w_p = max(1.0, s / max(K - d_other, 1.0))
        return w_p, d_other, p_other

    w = max(1.0, s / K)
    for _ in range(60):  # W = max(W_p(W), the budget's floor); a contraction in practice
        w_p, d_other, p_other = solve(w)
        w_new = max(w_p, C * (s + o - 1) / K - (o - 1))
        if abs(w_new - w) <= 1e-9 * w_new:
            break
        w = w_new
    w_p, d_other, p_other = solve(w)
    kw = dict(tp=tp, pp=pp, decode_context=ctx, prompt_tokens=s, bits=bits, dp=dp, ep=ep)
    decodes = 1 + d_other if o > 1 else d_other
    dec, share, alone, both = decode_steps(spec, hw, kw, decodes=decodes, prompt_tokens=s,
                                           prompt_tokens_per_step=p_other, token_budget=K, dp=dp)
    pre = mixed_step(spec, hw, decodes=dp * d_other, prefill_tokens=dp * (p_other + s / w_p), **kw)
    mean_step = (dec["time_s"] * (o - 1) + pre["time_s"] * w_p) / (o - 1 + w_p)
    steps = ((1 - share, alone["time_s"]), (share, both["time_s"] if both else 0.0))
    residual = arrival_wait_s(steps, open_loop=open_loop, others=others,
                              client_s=hw["request_overhead_s"])
    ttft = residual + w_p * pre["time_s"] + max(0.0, w - w_p) * mean_step
    tpot = dec["time_s"] if o > 1 else pre["time_s"]
    e2e = ttft + (o - 1) * tpot
    # An open loop's random arrivals also bunch: a prompt that comes while others' prefills queue
    # waits for them. The prompts queue at one server whose service is the time a prompt adds to a
    # step (w_p x (its prompt step less the same step without it)): the M/D/1 mean wait at the
    # rate C / E2E (Pollaczek-Khinchine, Kleinrock 1975 sec. 5.5). A closed loop's clients in
    # random phase send one request each at a time: their prompts meet only in the steps they
    # share (the co-arrivals in pre). A budget-bound engine queues in the fluid mean: none added.
    prompt_wait = 0.0
    if open_loop and not w > w_p * (1 + 1e-9) and others > 0:
        rest = mixed_step(spec, hw, decodes=dp * d_other, prefill_tokens=dp * p_other, **kw)
        prompt_wait = prompt_queue_wait_s(service_s=w_p * max(pre["time_s"] - rest["time_s"], 0.0),
                                          cycle_s=e2e, clients=C, open_loop=True)
        ttft, e2e = ttft + prompt_wait, e2e + prompt_wait
    return {"ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e, "steps_to_first_token": w, "arrival_wait_s": residual,
            "prompt_queue_wait_s": prompt_wait,
            "prompt_steps": w_p, "queue_steps": max(0.0, w - w_p), "decodes_per_step": (1 if o > 1 else 0) + d_other,
            "prompt_tokens_per_step": p_other, "requests_per_s": concurrency / e2e,
            "budget_bound": w > w_p * (1 + 1e-9), "decode_step": dec, "prompt_step": pre,
            "prompt_step_share": share}


def concurrency_for_rate(spec, hw, *, tp, pp, rate, prompt_tokens, output_tokens, token_budget, bits,
                         limit, dp=1, ep=1):
    """The mean concurrency an open loop of `rate` requests/s keeps in flight: the C at which the
    engine's throughput C / E2E(C) (steady_state with open_loop; Little's law) equals the rate,
    found by bisection on [0, limit] (the throughput grows with C). None when even `limit` requests
    (the KV pool) serve less than the rate: more than the engine sustains. A fluid mean: no
    queueing from the arrivals' randomness is added (stated). Returns (C, its steady state)."""
    def state(c):
        return steady_state(spec, hw, tp=tp, pp=pp, concurrency=c, prompt_tokens=prompt_tokens,
                            output_tokens=output_tokens, token_budget=token_budget, bits=bits, open_loop=True,
                            dp=dp, ep=ep)
    top = state(limit)
    if limit / top["e2e_s"] < rate:
        return None, top
    lo, hi = 0.0, float(limit)
    for _ in range(60):  # C/E2E(C) = rate; 60 halvings reach 1e-18 of the pool
        mid = (lo + hi) / 2
        if mid / state(mid)["e2e_s"] < rate:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-9 * hi:
            break
    return hi, state(hi)
