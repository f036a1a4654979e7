"""One serving run of one layout: whether the layout can split the model, then its steady state
or, with --num-requests, its simulated benchmark."""

import math
import sys

from ..cli import _num
from ..model.kinds import layer_groups
from .memory import kv_pool_capacity, kv_pool_tokens
from .speculative import speculative_decode_steps
from .steady import concurrency_for_rate, steady_state


def layout_problem(spec, *, tp, pp, dp, ep):
    """Why a layout cannot split this model (one line), or None: heads over tp, kv heads and tp
    dividing one another (Megatron-LM / vLLM's rule), at most one layer per stage, expert
    parallelism only over a stage's tp x dp GPUs of a model with routed experts."""
    groups = layer_groups(spec)
    for layer, _, first in groups:
        where = "" if len(groups) == 1 else f" (layer {first})"
        for attn in layer["attention"]:
            a, kv = attn["heads"], attn["kv_heads"]
            if a % tp:
                return f"--num-attention-heads {a}{where} is not divisible by --tensor-parallel-size {tp}"
            if attn["kind"] != "mla" and kv % tp and tp % kv:
                return f"kv heads {kv}{where} and --tensor-parallel-size {tp}: one must divide the other"
    if pp > spec["num_layers"]:
        return f"--pipeline-parallel-size {pp} is larger than --num-layers {spec['num_layers']}"
    if ep > 1:
        if not any(m["kind"] != "dense" for x in spec["layers"] for m in x["mlp"]):
            return f"--expert-parallel-size {ep} needs a model with routed experts; this one has none"
        if ep != tp * dp:
            return (f"--expert-parallel-size {ep}: expert parallelism spreads the experts over every GPU "
                    f"of a stage, -tp x -dp = {tp * dp}; use -ep {tp * dp} or -ep 1")
    return None


def serve_steady_state(spec, hw, args, parser, *, tp, pp, s, o, bits, w_bytes):
    """--concurrency / --request-rate: the KV pool's limit (exit 2 past it, saying what fits) and
    steady_state's times, as the dict main reports under "serving". By default (unless
    --refuse-past-pool) a closed-loop concurrency C past the pool's cap runs cap requests and queues the other C - cap
    in the server (vLLM's waiting queue, TensorRT-LLM's and NIM's request queue): the pool's
    throughput X = cap / E2E(cap) is unchanged, and each request first waits (C - cap) / X for a
    slot (Little's law), added to its TTFT and end-to-end time. The stack's running-request cap
    (hw["max_num_seqs"] per data-parallel engine: vLLM's max_num_seqs, TensorRT-LLM's
    max_batch_size) queues the same way without the flag: its scheduler admits no more, whatever
    the pool holds."""
    dp, ep = args.data_parallel_size, args.expert_parallel_size
    pool, per_req, cap = kv_pool_capacity(spec, hw, tp=tp, pp=pp, context=s + o, w_bytes=w_bytes,
                                          kv_bits=args.kv_cache_bits, a_bits=args.activation_bits,
                                          state_bits=args.state_bits, dp=dp)
    seqs = hw["max_num_seqs"] * dp if hw.get("max_num_seqs") else None
    run_cap = min(cap, seqs) if seqs else cap  # requests that run at once
    util = hw["memory_utilization"]
    share = (f"{util:g} x what the weights ({w_bytes / 2**30:.2f} GiB) leave of {hw['gpu_memory_bytes'] / 2**30:.2f} GiB"
             if hw.get("pool_of_free") else
             f"{util:g} x {hw['gpu_memory_bytes'] / 2**30:.2f} GiB less {w_bytes / 2**30:.2f} GiB of weights")
    if cap < 1 and pool > 0:  # a pool, too small for one request's cache
        parser.error(f"one request of {s + o:,} tokens needs {per_req / 2**30:.2f} GiB of KV cache per GPU and "
                     f"the pool holds {pool / 2**30:.2f} GiB ({share}); shorten -s/-o, raise -tp/-pp or cut "
                     "--kv-cache-bits")
    if cap < 1:
        parser.error(f"the weights ({w_bytes / 2**30:.2f} GiB per GPU) leave no KV pool in {util:g} x "
                     f"{hw['gpu_memory_bytes'] / 2**30:.2f} GiB; raise -tp/-pp, cut --weight-bits or "
                     "raise --gpu-memory-utilization")
    budget = hw["token_budget"] or math.inf  # None: every waiting prompt in one step
    base = dict(token_budget=hw["token_budget"], kv_pool_bytes_per_gpu=pool, kv_bytes_per_request_per_gpu=per_req,
                kv_pool_max_concurrency=cap, max_num_seqs=seqs, concurrency=args.concurrency,
                request_rate=args.request_rate)
    if getattr(args, "requests", None):
        return serve_mix(spec, hw, args, parser, tp=tp, pp=pp, bits=bits, pool=pool, per_req=per_req,
                         context=s + o, seqs=seqs, base=base)
    if args.num_requests is not None:
        from .simulate import SimulationTooLong, simulate_benchmark  # only --num-requests
        try:
            sp = hw.get("speculative")
            steps = (speculative_decode_steps(output_tokens=o, tokens_per_step=sp["tokens_per_step"], whole=True)
                     if sp and o > 1 else None)
            st = simulate_benchmark(spec, hw, tp=tp, num_requests=args.num_requests, prompt_tokens=s, output_tokens=o,
                                    token_budget=budget, run_cap=run_cap, bits=bits, output_steps=steps,
                                    rate=args.request_rate, concurrency=args.concurrency, arrivals=args.arrivals,
                                    seed=args.seed, pp=pp, dp=dp, ep=ep, progress=lambda m: print(m, file=sys.stderr))
        except SimulationTooLong as exc:
            left, done, n = exc.args
            parser.error(f"--num-requests {n:,} would take about {left / 60:,.0f} more minutes to simulate "
                         f"({done:,} done); run fewer requests (the statistics settle within a few thousand)")
        rps = st["requests_per_s"]
        at_once = args.request_rate is not None and math.isinf(args.request_rate)  # JSON has no inf
        base.update(request_rate=None if at_once else args.request_rate, sent_at_once=at_once)
        return dict(st, **base, benchmark=True, arrivals=args.arrivals, seed=args.seed,
                    running_requests=st["most_running"], queued_requests=0, queue_wait_s=0.0,
                    output_tokens_per_s=rps * o, output_tokens_per_s_per_gpu=rps * o / (tp * dp * pp),
                    tokens_per_s_per_user=1.0 / st["tpot_s"])
    sp = hw.get("speculative")  # a request's decode steps at the accepted tokens per step
    o_steps = speculative_decode_steps(output_tokens=o, tokens_per_step=sp["tokens_per_step"], whole=False) if sp else o
    kw = dict(tp=tp, pp=pp, prompt_tokens=s, output_tokens=o_steps, token_budget=budget, bits=bits, dp=dp, ep=ep)
    if args.request_rate is not None:
        c, st = concurrency_for_rate(spec, hw, rate=args.request_rate, limit=run_cap, **kw)
        if c is None:  # st: the steady state of a full KV pool (or of the running cap)
            held = (f"the KV pool holds {cap} requests of {s + o} tokens" if run_cap == cap else
                    f"the stack runs at most {run_cap} requests at once (--max-num-seqs)")
            parser.error(f"--request-rate {_num(args.request_rate)}/s is more than this layout sustains: "
                         f"{held}, which serve at most {st['requests_per_s']:.4g} requests/s; lower the "
                         "rate or add GPUs")
    else:
        c = args.concurrency
        if c > cap and run_cap == cap and args.refuse_past_pool:
            parser.error(f"--concurrency {c} does not fit: the KV pool ({pool / 2**30:.2f} GiB per GPU: "
                         f"{share}) holds {cap} requests of {s + o} tokens; use -c {cap} or less, "
                         "raise -tp or -dp, or cut --kv-cache-bits or s + o (or drop --refuse-past-pool: "
                         "the server queues them)")
        st = steady_state(spec, hw, concurrency=min(c, run_cap), **kw)
    req = hw["request_overhead_s"]
    ttft, e2e = st["ttft_s"] + req, st["e2e_s"] + req
    if sp:  # a step's time over the tokens it yields
        st = dict(st, tpot_s=st["tpot_s"] / sp["tokens_per_step"])
    queued = max(0, c - run_cap) if args.request_rate is None else 0
    wait = queued * e2e / run_cap  # (C - cap) / X with X = cap / E2E(cap)
    ttft, e2e = ttft + wait, e2e + wait
    # closed loop: C clients each wait E2E per request (Little); open loop: what arrives leaves
    rps = args.request_rate if args.request_rate is not None else c / e2e
    return dict(st, concurrency=c, request_rate=args.request_rate, ttft_s=ttft, e2e_s=e2e,
                requests_per_s=rps, token_budget=hw["token_budget"], kv_pool_bytes_per_gpu=pool,
                queued_requests=queued, queue_wait_s=wait,
                kv_bytes_per_request_per_gpu=per_req, kv_pool_max_concurrency=cap,
                max_num_seqs=seqs, running_requests=min(c, run_cap),
                output_tokens_per_s=rps * o, output_tokens_per_s_per_gpu=rps * o / (tp * dp * pp),
                tokens_per_s_per_user=1.0 / st["tpot_s"])


def workload_requests(args, parser):
    """The requests of a --num-requests run that are not all alike, or None when they are: a
    --trace file, a drawn --dataset (random, sharegpt), or a shared --prefix-tokens prefix; with
    --prefix-hit-rate a share of them keep the shared prefix (workload.py)."""
    from .workload import (apply_hit_rate, fixed_requests, random_requests, read_trace,
        sharegpt_requests)  # only a mix needs them
    n, p, seed = args.num_requests, args.prefix_tokens or 0, args.seed
    if args.trace:
        try:
            reqs = read_trace(args.trace)
        except ValueError as exc:
            parser.error(str(exc))
        reqs = reqs[:n] if n is not None else reqs
    elif args.dataset == "random":
        reqs = random_requests(n=n, input_len=args.random_input_len, output_len=args.random_output_len,
                               range_ratio=args.random_range_ratio, prefix_tokens=p, seed=seed)
    elif args.dataset == "sharegpt":
        reqs = sharegpt_requests(n=n, prefix_tokens=p, seed=seed)
    elif (p or (args.num_scheduler_steps or 1) > 1) and n is not None:  # prefixes or multi-step: per request
        reqs = fixed_requests(n=n, input_len=args.prompt_tokens, output_len=args.output_tokens, prefix_tokens=p)
    else:
        return None
    return apply_hit_rate(reqs, hit_rate=args.prefix_hit_rate, seed=seed)


def serve_mix(spec, hw, args, parser, *, tp, pp, bits, pool, per_req, context, seqs, base):
    """--num-requests over a mix of requests (workload_requests): simulate_requests with the KV
    pool in tokens (the pool over one request's cache at the mix's mean s + o, per token), as the
    dict main reports under "serving"."""
    from .simulate import SimulationTooLong, simulate_requests  # only a mix
    from .workload import length_summary
    dp, ep = args.data_parallel_size, args.expert_parallel_size
    reqs = args.requests
    pool_tokens = kv_pool_tokens(pool_bytes=pool, bytes_per_request=per_req, context=context, dp=dp)
    budget = hw["token_budget"] or math.inf
    host = host_tier(spec, hw, args, parser, tp=tp, pp=pp, bits=bits, per_req=per_req, context=context,
                     s_mean=sum(r[1] for r in reqs) / len(reqs)) if args.host_kv_cache_gib else None
    try:
        st = simulate_requests(spec, hw, tp=tp, requests=reqs, token_budget=budget, pool_tokens=pool_tokens,
                               host_tokens=host["host_tokens"] if host else 0,
                               host_s_per_token=host["load_s_per_token"] if host else 0.0,
                               scheduler_steps=args.num_scheduler_steps or 1,
                               max_running=seqs, bits=bits, rate=args.request_rate, concurrency=args.concurrency,
                               arrivals=args.arrivals, seed=args.seed, pp=pp, dp=dp, ep=ep,
                               progress=lambda m: print(m, file=sys.stderr))
    except SimulationTooLong as exc:
        left, done, n = exc.args
        parser.error(f"{n:,} requests would take about {left / 60:,.0f} more minutes to simulate ({done:,} done); "
                     "run fewer (--num-requests)")
    except ValueError as exc:
        parser.error(f"{exc}: cut the longest requests, raise -tp/-pp or cut --kv-cache-bits")
    at_once = args.request_rate is not None and math.isinf(args.request_rate)
    base.update(request_rate=None if at_once else args.request_rate, sent_at_once=at_once)
    mix = length_summary(reqs)
    mix.update(dataset=args.dataset or ("trace" if args.trace else "fixed"), trace=args.trace,
               random_range_ratio=args.random_range_ratio if args.dataset == "random" else None,
               prefix_tokens=args.prefix_tokens, prefix_hit_rate=args.prefix_hit_rate,
               trace_arrivals=bool(args.trace) and args.request_rate is None and args.concurrency is None,
               host_tier=host)
    return dict(st, **base, benchmark=True, mix=mix, arrivals=args.arrivals, seed=args.seed,
                running_requests=st["most_running"], queued_requests=0, queue_wait_s=0.0,
                output_tokens_per_s_per_gpu=st["output_tokens_per_s"] / (tp * dp * pp),
                tokens_per_s_per_user=1.0 / st["tpot_s"])


def host_tier(spec, hw, args, parser, *, tp, pp, bits, per_req, context, s_mean):
    """The host KV tier of a mix run (offload.py): its size in tokens (kv_pool_tokens, at the GPU
    pool's bytes per token), the seconds one token takes to come back, and what computing it again
    would take instead (a prefill of the mix's mean prompt, per token)."""
    from .forward import forward_pass
    from .offload import host_link_bytes_per_s, load_vs_recompute
    bw = (args.host_kv_bandwidth_gbps * 1e9 if args.host_kv_bandwidth_gbps is not None
          else host_link_bytes_per_s(hw.get("gpu")))
    if bw is None:
        parser.error(f"the host link of {hw.get('gpu') or 'this GPU'} is not known here: give "
                     "--host-kv-bandwidth-gbps")
    per_token = per_req / context  # KV bytes per token on one GPU
    n = max(1, round(s_mean))
    pre = forward_pass(spec, hw, tp=tp, pp=pp, batch=1, new_tokens=n, context_before=0, absorbed=False,
                       dp=args.data_parallel_size, ep=args.expert_parallel_size, **bits)["time_s"] / n
    out = load_vs_recompute(kv_bytes_per_token=per_token, host_bytes_per_s=bw, prefill_s_per_token=pre)
    host_bytes = args.host_kv_cache_gib * 2 ** 30
    out.update(host_bytes_per_gpu=host_bytes, host_bytes_per_s=bw, kv_bytes_per_token_per_gpu=per_token,
               host_tokens=kv_pool_tokens(pool_bytes=host_bytes, bytes_per_request=per_req, context=context,
                                          dp=args.data_parallel_size) if per_req > 0 else 0)
    return out
