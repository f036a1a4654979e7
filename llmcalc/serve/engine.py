"""One serving run of one layout: whether the layout can split the model, then its steady state
or, with --num-requests, its simulated benchmark."""

import math
import sys

from ..errors import CalcError
from ..text import number_text
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


def serve_steady_state(spec, hw, req, *, tp, pp, s, o, bits, w_bytes):
    """--concurrency / --request-rate: the KV pool's limit (exit 2 past it, saying what fits) and
    steady_state's times, as the dict main reports under "serving". By default (unless
    --refuse-past-pool) a closed-loop concurrency C past the pool's cap runs cap requests and queues the other C - cap
    in the server (vLLM's waiting queue, TensorRT-LLM's and NIM's request queue): the pool's
    throughput X = cap / E2E(cap) is unchanged, and each request first waits (C - cap) / X for a
    slot (Little's law), added to its TTFT and end-to-end time. The stack's running-request cap
    (hw["max_num_seqs"] per data-parallel engine: vLLM's max_num_seqs, TensorRT-LLM's
    max_batch_size) queues the same way without the flag: its scheduler admits no more, whatever
    the pool holds."""
    dp, ep = req.data_parallel_size, req.expert_parallel_size
    pool, per_req, cap = kv_pool_capacity(spec, hw, tp=tp, pp=pp, context=s + o, w_bytes=w_bytes,
                                          kv_bits=req.kv_cache_bits, a_bits=req.activation_bits,
                                          state_bits=req.state_bits, dp=dp)
    seqs = hw["max_num_seqs"] * dp if hw.get("max_num_seqs") else None
    run_cap = min(cap, seqs) if seqs else cap  # requests that run at once
    share = pool_share_text(hw, w_bytes)
    if cap < 1:
        refuse_no_pool(hw, pool=pool, per_req=per_req, context=s + o, share=share, w_bytes=w_bytes)
    budget = hw["token_budget"] or math.inf  # None: every waiting prompt in one step
    base = dict(token_budget=hw["token_budget"], kv_pool_bytes_per_gpu=pool,
                kv_bytes_per_request_per_gpu=per_req, kv_pool_max_concurrency=cap,
                max_num_seqs=seqs, concurrency=req.concurrency, request_rate=req.request_rate)
    if req.requests:
        return serve_mix(spec, hw, req, tp=tp, pp=pp, bits=bits, pool=pool, per_req=per_req,
                         context=s + o, seqs=seqs, base=base)
    if req.num_requests is not None:
        return simulated_run(spec, hw, req, tp=tp, pp=pp, s=s, o=o, bits=bits, budget=budget,
                             run_cap=run_cap, base=base)
    sp = hw.get("speculative")  # a request's decode steps at the accepted tokens per step
    o_steps = (speculative_decode_steps(output_tokens=o, tokens_per_step=sp["tokens_per_step"],
                                        whole=False) if sp else o)
    kw = dict(tp=tp, pp=pp, prompt_tokens=s, output_tokens=o_steps, token_budget=budget, bits=bits,
              dp=dp, ep=ep)
    if req.request_rate is not None:
        c, st = concurrency_for_rate(spec, hw, rate=req.request_rate, limit=run_cap, **kw)
        if c is None:  # st: the steady state of a full KV pool (or of the running cap)
            held = (f"the KV pool holds {cap} requests of {s + o} tokens" if run_cap == cap else
                    f"the stack runs at most {run_cap} requests at once (--max-num-seqs)")
            raise CalcError(f"--request-rate {number_text(req.request_rate)}/s is more than this "
                            f"layout sustains: {held}, which serve at most "
                            f"{st['requests_per_s']:.4g} requests/s; lower the rate or add GPUs")
    else:
        c = req.concurrency
        if c > cap and run_cap == cap and req.refuse_past_pool:
            raise CalcError(f"--concurrency {c} does not fit: the KV pool ({pool / 2**30:.2f} GiB "
                            f"per GPU: {share}) holds {cap} requests of {s + o} tokens; use -c "
                            f"{cap} or less, raise -tp or -dp, or cut --kv-cache-bits or s + o (or "
                            "drop --refuse-past-pool: the server queues them)")
        st = steady_state(spec, hw, concurrency=min(c, run_cap), **kw)
    req_s = hw["request_overhead_s"]
    ttft, e2e = st["ttft_s"] + req_s, st["e2e_s"] + req_s
    if sp:  # a step's time over the tokens it yields
        st = dict(st, tpot_s=st["tpot_s"] / sp["tokens_per_step"])
    queued = max(0, c - run_cap) if req.request_rate is None else 0
    wait = queued * e2e / run_cap  # (C - cap) / X with X = cap / E2E(cap)
    ttft, e2e = ttft + wait, e2e + wait
    # closed loop: C clients each wait E2E per request (Little); open loop: what arrives leaves
    rps = req.request_rate if req.request_rate is not None else c / e2e
    return dict(st, concurrency=c, request_rate=req.request_rate, ttft_s=ttft, e2e_s=e2e,
                requests_per_s=rps, token_budget=hw["token_budget"], kv_pool_bytes_per_gpu=pool,
                queued_requests=queued, queue_wait_s=wait,
                kv_bytes_per_request_per_gpu=per_req, kv_pool_max_concurrency=cap,
                max_num_seqs=seqs, running_requests=min(c, run_cap),
                output_tokens_per_s=rps * o, output_tokens_per_s_per_gpu=rps * o / (tp * dp * pp),
                tokens_per_s_per_user=1.0 / st["tpot_s"])


def pool_share_text(hw, w_bytes):
    """The memory the KV pool is a share of, in words (the stack's rule: of the GPU less the
    weights, or of what the weights leave)."""
    util, gib = hw["memory_utilization"], hw["gpu_memory_bytes"] / 2 ** 30
    if hw.get("pool_of_free"):
        return f"{util:g} x what the weights ({w_bytes / 2**30:.2f} GiB) leave of {gib:.2f} GiB"
    return f"{util:g} x {gib:.2f} GiB less {w_bytes / 2**30:.2f} GiB of weights"


def refuse_no_pool(hw, *, pool, per_req, context, share, w_bytes):
    """CalcError: the pool cannot hold one request (or there is no pool), saying what would fit."""
    if pool > 0:  # a pool, too small for one request's cache
        raise CalcError(f"one request of {context:,} tokens needs {per_req / 2**30:.2f} GiB of KV "
                        f"cache per GPU and the pool holds {pool / 2**30:.2f} GiB ({share}); "
                        "shorten -s/-o, raise -tp/-pp or cut --kv-cache-bits")
    raise CalcError(f"the weights ({w_bytes / 2**30:.2f} GiB per GPU) leave no KV pool in "
                    f"{hw['memory_utilization']:g} x {hw['gpu_memory_bytes'] / 2**30:.2f} GiB; "
                    "raise -tp/-pp, cut --weight-bits or raise --gpu-memory-utilization")


def simulated_run(spec, hw, req, *, tp, pp, s, o, bits, budget, run_cap, base):
    """--num-requests of alike requests: simulate_benchmark's run, as the dict main reports under
    "serving"; CalcError when it would run too long."""
    from .simulate import SimulationTooLong, simulate_benchmark  # only --num-requests
    dp, ep = req.data_parallel_size, req.expert_parallel_size
    try:
        sp = hw.get("speculative")
        steps = (speculative_decode_steps(output_tokens=o, tokens_per_step=sp["tokens_per_step"],
                                          whole=True) if sp and o > 1 else None)
        st = simulate_benchmark(spec, hw, tp=tp, num_requests=req.num_requests, prompt_tokens=s,
                                output_tokens=o, token_budget=budget, run_cap=run_cap, bits=bits,
                                output_steps=steps, rate=req.request_rate,
                                concurrency=req.concurrency, arrivals=req.arrivals, seed=req.seed,
                                pp=pp, dp=dp, ep=ep, progress=lambda m: print(m, file=sys.stderr))
    except SimulationTooLong as exc:
        left, done, n = exc.args
        raise CalcError(f"--num-requests {n:,} would take about {left / 60:,.0f} more minutes to "
                        f"simulate ({done:,} done); run fewer requests (the statistics settle "
                        "within a few thousand)") from None
    rps = st["requests_per_s"]
    at_once = req.request_rate is not None and math.isinf(req.request_rate)  # JSON has no inf
    base.update(request_rate=None if at_once else req.request_rate, sent_at_once=at_once)
    return dict(st, **base, benchmark=True, arrivals=req.arrivals, seed=req.seed,
                running_requests=st["most_running"], queued_requests=0, queue_wait_s=0.0,
                output_tokens_per_s=rps * o, output_tokens_per_s_per_gpu=rps * o / (tp * dp * pp),
                tokens_per_s_per_user=1.0 / st["tpot_s"])


def workload_requests(req):
    """The requests of a --num-requests run that are not all alike, or None when they are: a
    drawn --dataset (random, sharegpt), or a shared --prefix-tokens prefix; with
    --prefix-hit-rate a share of them keep the shared prefix (workload.py). A --trace file is
    read by workload.trace_requests instead."""
    from .workload import (apply_hit_rate, fixed_requests, random_requests,
        sharegpt_requests)  # only a mix needs them
    n, p, seed = req.num_requests, req.prefix_tokens or 0, req.seed
    if req.dataset == "random":
        reqs = random_requests(n=n, input_len=req.random_input_len,
                               output_len=req.random_output_len, range_ratio=req.random_range_ratio,
                               prefix_tokens=p, seed=seed)
    elif req.dataset == "sharegpt":
        reqs = sharegpt_requests(n=n, prefix_tokens=p, seed=seed)
    elif (p or (req.num_scheduler_steps or 1) > 1) and n is not None:  # prefixes, multi-step: each
        reqs = fixed_requests(n=n, input_len=req.prompt_tokens, output_len=req.output_tokens,
                              prefix_tokens=p)
    else:
        return None
    return apply_hit_rate(reqs, hit_rate=req.prefix_hit_rate, seed=seed)


def serve_mix(spec, hw, req, *, tp, pp, bits, pool, per_req, context, seqs, base):
    """--num-requests over a mix of requests (workload_requests): simulate_requests with the KV
    pool in tokens (the pool over one request's cache at the mix's mean s + o, per token), as the
    dict main reports under "serving"."""
    from .simulate import SimulationTooLong, simulate_requests  # only a mix
    from .workload import length_summary
    dp, ep = req.data_parallel_size, req.expert_parallel_size
    reqs = req.requests
    pool_tokens = kv_pool_tokens(pool_bytes=pool, bytes_per_request=per_req, context=context, dp=dp)
    budget = hw["token_budget"] or math.inf
    host = host_tier(spec, hw, req, tp=tp, pp=pp, bits=bits, per_req=per_req, context=context,
                     s_mean=sum(r[1] for r in reqs) / len(reqs)) if req.host_kv_cache_gib else None
    try:
        st = simulate_requests(spec, hw, tp=tp, requests=reqs, token_budget=budget, pool_tokens=pool_tokens,
                               host_tokens=host["host_tokens"] if host else 0,
                               host_s_per_token=host["load_s_per_token"] if host else 0.0,
                               scheduler_steps=req.num_scheduler_steps or 1,
                               max_running=seqs, bits=bits, rate=req.request_rate,
                               concurrency=req.concurrency,
                               arrivals=req.arrivals, seed=req.seed, pp=pp, dp=dp, ep=ep,
                               progress=lambda m: print(m, file=sys.stderr))
    except SimulationTooLong as exc:
        left, done, n = exc.args
        raise CalcError(f"{n:,} requests would take about {left / 60:,.0f} more minutes to "
                        f"simulate ({done:,} done); run fewer (--num-requests)")
    except ValueError as exc:
        raise CalcError(f"{exc}: cut the longest requests, raise -tp/-pp or cut "
                        "--kv-cache-bits") from None
    at_once = req.request_rate is not None and math.isinf(req.request_rate)
    base.update(request_rate=None if at_once else req.request_rate, sent_at_once=at_once)
    mix = length_summary(reqs)
    mix.update(dataset=req.dataset or ("trace" if req.trace else "fixed"), trace=req.trace,
               random_range_ratio=req.random_range_ratio if req.dataset == "random" else None,
               prefix_tokens=req.prefix_tokens, prefix_hit_rate=req.prefix_hit_rate,
               trace_arrivals=(bool(req.trace) and req.request_rate is None
                               and req.concurrency is None),
               host_tier=host)
    return dict(st, **base, benchmark=True, mix=mix, arrivals=req.arrivals, seed=req.seed,
                running_requests=st["most_running"], queued_requests=0, queue_wait_s=0.0,
                output_tokens_per_s_per_gpu=st["output_tokens_per_s"] / (tp * dp * pp),
                tokens_per_s_per_user=1.0 / st["tpot_s"])


def host_tier(spec, hw, req, *, tp, pp, bits, per_req, context, s_mean):
    """The host KV tier of a mix run (offload.py): its size in tokens (kv_pool_tokens, at the GPU
    pool's bytes per token), the seconds one token takes to come back, and what computing it again
    would take instead (a prefill of the mix's mean prompt, per token)."""
    from .forward import forward_pass
    from .offload import load_vs_recompute
    bw = (req.host_kv_bandwidth_gbps * 1e9 if req.host_kv_bandwidth_gbps is not None
          else hw.get("host_kv_bytes_per_s"))
    if bw is None:
        raise CalcError(f"the host link of {hw.get('gpu') or 'this GPU'} is not known here: give "
                        "--host-kv-bandwidth-gbps")
    per_token = per_req / context  # KV bytes per token on one GPU
    n = max(1, round(s_mean))
    pre = forward_pass(spec, hw, tp=tp, pp=pp, batch=1, new_tokens=n, context_before=0, absorbed=False,
                       dp=req.data_parallel_size, ep=req.expert_parallel_size, **bits)["time_s"] / n
    out = load_vs_recompute(kv_bytes_per_token=per_token, host_bytes_per_s=bw, prefill_s_per_token=pre)
    host_bytes = req.host_kv_cache_gib * 2 ** 30
    out.update(host_bytes_per_gpu=host_bytes, host_bytes_per_s=bw, kv_bytes_per_token_per_gpu=per_token,
               host_tokens=kv_pool_tokens(pool_bytes=host_bytes, bytes_per_request=per_req, context=context,
                                          dp=req.data_parallel_size) if per_req > 0 else 0)
    return out
