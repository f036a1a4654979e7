"""calc_inference_latency.py's capacity plan (issue 34): --target-request-rate R (or a trace's own
rate) under --max-ttft-ms / --max-tpot-ms at --slo-percentile, over the GPU kinds --gpu lists; the
fewest GPUs, or the cheapest with --cost-per-gpu-hour, the cost per million tokens and the engine
command. The search itself is serve/capacity.py."""

import math
import sys

from ..accelerator import DEFAULT_ACCELERATOR
from ..cli import bounded_int, finite_float, with_warnings
from ..serve.capacity import CAPACITY_SEEDS
from ..serve.simulate import SHOW_PROGRESS
from .gpu import accelerator_record, distinct_gpus


def add_capacity_args(parser):
    """The capacity-planning argument group."""
    g = parser.add_argument_group("capacity planning (how many GPUs, of which kind, for a load)")
    g.add_argument("--target-request-rate", type=finite_float, default=None,
                   help="requests/s the fleet must serve: the fewest GPUs (or the cheapest fleet) of each "
                        "--gpu kind (a comma list: --gpu a100,h100,h200) that keeps --max-ttft-ms and "
                        "--max-tpot-ms at --slo-percentile, each rate judged on 4 seeds of Poisson "
                        "arrivals; prints the precision it sized at, the TTFT/TPOT p50/p90 it delivers "
                        "and the winner's launch command on its --serving-stack (weight quantization "
                        "included; none for stacks without a server); with --trace, all its rows at "
                        "this rate (default: the trace's own rate). docs/serving-capacity.md")
    g.add_argument("--slo-percentile", type=bounded_int, choices=(50, 90, 99), default=None,
                   help="percentile of TTFT and TPOT the targets hold at in the plan (default 90)")
    g.add_argument("--cost-per-gpu-hour", default=None, metavar="$|GPU=$,...",
                   help="price of one GPU-hour: one value for every --gpu kind, one per kind in "
                        "--gpu's order, or by name (h100=2.49,h200=3.10); the plan then picks the "
                        "cheapest fleet and prices a million input and output tokens")


def validate_capacity(args, parser, req):
    """One-line errors for the capacity flags; sets req.capacity (False outside a plan), the GPU
    kinds (req.capacity_gpus; the first is the GPU of the rest of main) and prices."""
    req.capacity = False
    targets = req.max_ttft_ms is not None or req.max_tpot_ms is not None
    trace_plan = req.trace and targets and not args.search
    if args.target_request_rate is None and not trace_plan:
        for f, v in (("--slo-percentile", req.slo_percentile),
                     ("--cost-per-gpu-hour", args.cost_per_gpu_hour)):
            if v is not None:
                parser.error(f"{f} belongs to a capacity plan; add --target-request-rate R")
        if args.gpu and "," in args.gpu:
            parser.error("--gpu takes one name outside a capacity plan (--target-request-rate R takes a list)")
        return
    req.capacity = True
    if args.search:
        parser.error("--target-request-rate plans a fleet; leave out --search (it fronts one GPU budget)")
    load = [f for f, v in (("-c", req.concurrency), ("--request-rate", req.request_rate),
                           ("-b", req.batch_size if req.batch_size_given else None))
            if v is not None]
    layout = [f for f, v in (("-tp", req.tensor_parallel_size), ("-pp", req.pipeline_parallel_size),
                             ("-dp", req.data_parallel_size), ("-ep", req.expert_parallel_size))
              if v != 1]
    if load or layout:
        parser.error(f"a capacity plan picks the layout and the load per replica itself; leave out "
                     f"{', '.join(load + layout)}")
    if args.target_request_rate is not None and not args.target_request_rate > 0:
        parser.error(f"--target-request-rate must be positive, got {args.target_request_rate:g}")
    for name in ("max_ttft_ms", "max_tpot_ms"):
        v = getattr(args, name)
        if v is not None and not v > 0:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {v:g}")
    if req.max_ttft_ms is None and req.max_tpot_ms is None:
        parser.error("a capacity plan needs a target: --max-ttft-ms and/or --max-tpot-ms")
    names = [x.strip() for x in (args.gpu or DEFAULT_ACCELERATOR).split(",") if x.strip()]
    if not names or len(set(names)) != len(names):
        parser.error(f"--gpu {args.gpu!r}: give distinct GPU names separated by commas")
    distinct_gpus(names, parser, without="a capacity plan needs hardware.py's GPUs")
    req.capacity_gpus = names
    req.capacity_prices = None
    if args.cost_per_gpu_hour is not None:
        req.capacity_prices = gpu_prices(args.cost_per_gpu_hour, names, parser)
    req.slo_percentile = req.slo_percentile or 90
    if req.num_requests is None and not req.trace:  # a trace plans on all its rows
        req.num_requests = 500  # the simulated run at each candidate rate


def gpu_prices(text, names, parser):
    """--cost-per-gpu-hour as one price per GPU kind of `names`: one value for all, one per kind
    in order, or NAME=price pairs naming each kind once (a name matches the --gpu name or the same
    hardware.py record). One-line exit 2 otherwise."""
    items = [x.strip() for x in text.split(",")]
    named = ["=" in x for x in items]
    if any(named) and not all(named):
        parser.error(f"--cost-per-gpu-hour {text!r}: give every price by name "
                     "(h100=2.49,h200=3.10) or none")
    if any(x.count("=") > 1 or (n and not x.split("=")[0].strip()) for x, n in zip(items, named)):
        parser.error(f"--cost-per-gpu-hour {text!r}: give each named price as GPU=dollars "
                     "(h100=2.49)")
    try:
        prices = [float(x.split("=")[-1]) for x in items]
    except ValueError:
        parser.error(f"--cost-per-gpu-hour {text!r}: give dollars per GPU-hour, one value, one per "
                     "--gpu kind, or GPU=$ pairs")
    if any(not 1e-6 <= p <= 1e6 for p in prices):  # past 1e6 a fleet's $/hour overflows to inf
        parser.error(f"--cost-per-gpu-hour must be positive, from 1e-6 to 1e6 dollars per "
                     f"GPU-hour, got {text}")
    if all(named):
        recs = {n: accelerator_record(n, parser, without="a capacity plan needs hardware.py's GPUs")
                for n in names}
        by_kind = {}
        for x, p in zip(items, prices):
            key = x.split("=")[0].strip()
            rec = (recs.get(key) or accelerator_record(
                key, parser, without="a capacity plan needs hardware.py's GPUs"))
            kinds = [n for n in names if recs[n]["name"] == rec["name"]]
            if not kinds:
                parser.error(f"--cost-per-gpu-hour prices {key}, which --gpu does not list "
                             f"({', '.join(names)})")
            if kinds[0] in by_kind:
                parser.error(f"--cost-per-gpu-hour prices {kinds[0]} twice")
            by_kind[kinds[0]] = p
        missing = [n for n in names if n not in by_kind]
        if missing:
            parser.error(f"--cost-per-gpu-hour gives no price for {', '.join(missing)}; price "
                         "every --gpu kind (or give one number for all)")
        return [by_kind[n] for n in names]
    if len(prices) not in (1, len(names)):
        parser.error(f"--cost-per-gpu-hour has {len(prices)} prices for {len(names)} GPU kinds; "
                     f"give one or {len(names)}")
    return prices * len(names) if len(prices) == 1 else prices


def served_model_name(given):
    """The model as a launch command names it: a hub id as given; a local config.json or folder
    as the hub id its config records (_name_or_path, when it is one), else the folder holding the
    config (what an engine loads), a lone config file's path as given (the fallback); MODEL when
    the model came from flags."""
    import os  # only a capacity plan names the model
    if not given:
        return "MODEL"
    if not os.path.exists(given):
        return given  # a hub id
    cfg = os.path.join(given, "config.json") if os.path.isdir(given) else given
    folder = os.path.dirname(os.path.abspath(cfg)) if not os.path.isdir(given) else given
    try:
        import json
        with open(cfg, encoding="utf-8") as fh:
            hub = json.load(fh).get("_name_or_path")
    except (OSError, ValueError, AttributeError):
        hub = None
    if (isinstance(hub, str) and hub.count("/") == 1 and not hub.startswith((".", "/", "~"))
            and not os.path.exists(hub)):
        return hub
    if os.path.basename(cfg) != "config.json":
        return given  # a config file on its own: no model folder to name, so the path as given
    return os.path.relpath(folder) if not os.path.isabs(given) else folder


def precision_text(bits, fmt, name=None):
    """The precision a plan sized at, in words: --precision's name when given, then the weights,
    matmul inputs and KV cache."""
    if fmt:
        w = f"the checkpoint's own {fmt['method']} weights ({fmt['linear_bits']:g} bits stored)"
    else:
        w = f"{bits['w_bits']:g}-bit weights"
    text = f"{w}, {bits['a_bits']}-bit matmul inputs, {bits['kv_bits']}-bit KV cache"
    return f"{name} ({text})" if name else text


def run_capacity(spec, req, args, parser, *, bits, flags):
    """The plan, printed (report or --json) and returned as a dict. flags: the HardwareFlags over
    each GPU kind's record."""
    from ..serve.capacity import capacity_plan
    from ..serve.workload import fixed_requests
    reqs = req.requests or fixed_requests(n=req.num_requests, input_len=req.prompt_tokens,
                                          output_len=req.output_tokens,
                                          prefix_tokens=req.prefix_tokens or 0)
    rate = args.target_request_rate
    if rate is None:  # the trace's own mean rate
        span = reqs[-1][0] - reqs[0][0]
        if not span > 0:
            parser.error("--trace: its arrivals span no time, so it has no rate; give --target-request-rate R")
        rate = (len(reqs) - 1) / span
    max_ttft = req.max_ttft_ms * 1e-3 if req.max_ttft_ms is not None else math.inf
    max_tpot = req.max_tpot_ms * 1e-3 if req.max_tpot_ms is not None else math.inf
    gpus = [(n, accelerator_record(n, parser, without="a capacity plan needs hardware.py's GPUs"))
            for n in req.capacity_gpus]
    plan = capacity_plan(spec, req, gpus=gpus, flags=flags, prices=req.capacity_prices,
                         requests=reqs, bits=bits, percentile=req.slo_percentile, rate=rate,
                         max_ttft=max_ttft, max_tpot=max_tpot, sim_requests=len(reqs),
                         progress=(lambda m: print(m, file=sys.stderr))
                         if SHOW_PROGRESS["on"] else None)
    w = plan["winner"]
    if w is None and not plan["layouts_fitted"]:
        longest = max(r[1] + r[2] for r in reqs)
        parser.error(f"no layout of {', '.join(req.capacity_gpus)} (one node per replica) holds "
                     f"the weights and a request of {longest:,} tokens in its KV pool: cut -s/-o, "
                     "--precision or --kv-cache-bits, or add a GPU kind")
    if w is None:
        parser.error(f"no layout of {', '.join(req.capacity_gpus)} (one node per replica) meets "
                     f"{targets_text(req.max_ttft_ms, req.max_tpot_ms)} at p{req.slo_percentile}, "
                     "even lightly loaded: relax the targets, cut -s/-o or --precision, or add a "
                     "GPU kind")
    model = served_model_name(args.hf_model_name_or_path)
    prefix = bool(req.prefix_tokens) or any(r[3] is not None for r in reqs)
    own = args.weight_bits is None and not args.precision  # the checkpoint's own format
    fmt = spec.get("checkpoint_format") if own else None
    from ..serve.launch import weight_quantization
    quant = None if fmt else weight_quantization(
        w_bits=bits["w_bits"], a_bits=bits["a_bits"],
        fp8_activations=args.precision not in ("int8", "w8a8"))

    def public(c):
        out = {k: v for k, v in c.items() if k not in ("hw", "bits", "budget", "pool_tokens")}
        out["engine_command"] = launch_command(c, model=model, prefix_caching=prefix,
                                               speculative=req.speculative, quantization=quant)
        return out
    by_gpu = {g: public(c) for g, c in plan["by_gpu"].items()}
    best = by_gpu[w["gpu"]]
    res = {"target_request_rate": rate, "slo_percentile": req.slo_percentile,
           "max_ttft_ms": req.max_ttft_ms,
           "max_tpot_ms": req.max_tpot_ms, "gpus_considered": req.capacity_gpus,
           "prices_per_gpu_hour": req.capacity_prices, "serving_stack": w["hw"]["serving_stack"],
           "mean_input_tokens": sum(r[1] for r in reqs) / len(reqs),
           "mean_output_tokens": sum(r[2] for r in reqs) / len(reqs),
           "requests_simulated": len(reqs),
           "seeds_per_rate": CAPACITY_SEEDS, "model_served": model,
           "precision": precision_text(bits, fmt, args.precision), "weight_quantization": quant,
           "delivered": best["operating_point"],
           "request_rate_per_replica": best["request_rate_per_replica"],
           "num_gpus": best["num_gpus"], "gpu": best["gpu"], "replicas": best["replicas"],
           "layout": {k: best[k] for k in ("tp", "pp", "dp", "ep", "gpus_per_replica")},
           "dollars_per_hour": best["dollars_per_hour"],
           "cost_per_million_input_tokens": best["cost_per_million_input_tokens"],
           "cost_per_million_output_tokens": best["cost_per_million_output_tokens"],
           "cost_per_million_cached_input_tokens": best["cost_per_million_cached_input_tokens"],
           "engine_command": best["engine_command"], "by_gpu": by_gpu,
           "layouts_sized": len(plan["candidates"]), "layouts_pruned": plan["layouts_pruned"],
           "warnings": list(spec["warnings"]),
           "convention": "each replica one node at most; its rate the most requests/s whose "
                         f"simulated runs of {len(reqs)} Poisson arrivals, each of "
                         f"{CAPACITY_SEEDS} seeds, keep TTFT and TPOT at p{req.slo_percentile} "
                         "within the targets (bisection to 0.8% of the saturation rate); replicas "
                         "= ceil(rate / that); delivered latencies at rate / replicas per replica, "
                         "the mean over the seeds; the cost split into "
                         "input and output by the share of a mean step's time its prompt chunks "
                         "take; cached input tokens take no prefill (priced 0, their pool space is "
                         "in the output share)"}
    if args.brief:
        print(f"{res['num_gpus']} x {res['gpu']}" + (f", ${res['cost_per_million_output_tokens']:.3f} per million output "
                                                     "tokens" if res["cost_per_million_output_tokens"] is not None else ""))
    elif args.json:
        import json
        print(json.dumps(res, indent=2))
    else:
        print(with_warnings(capacity_report(res), res["warnings"]))
    return res


def launch_command(c, *, model, prefix_caching, speculative, quantization=None):
    """A plan candidate's launch command, as its stack's record writes it (serve/launch.py)."""
    from ..serve.launch import LaunchPlan, launch_text
    from ..serve.stacks import SERVING_STACKS
    plan = LaunchPlan(model=model, tp=c["tp"], pp=c["pp"], dp=c["dp"], ep=c["ep"],
                      replicas=c["replicas"],
                      kv_bits=c["bits"]["kv_bits"], memory_utilization=c["memory_utilization"],
                      max_num_seqs=c["max_num_seqs"] and c["max_num_seqs"] // c["dp"],
                      max_num_tokens=c["token_budget"], prefix_caching=prefix_caching,
                      speculative=speculative, quantization=quantization)
    return launch_text(SERVING_STACKS[c["hw"]["serving_stack"]].launch(plan), c["replicas"])


def targets_text(max_ttft_ms, max_tpot_ms):
    """The targets given, in words ("TTFT <= 300 ms and TPOT <= 25 ms"); a target not given is left out."""
    return " and ".join(f"{n} <= {v} ms" for n, v in (("TTFT", max_ttft_ms), ("TPOT", max_tpot_ms)) if v is not None)


def capacity_report(res):
    """The plan as text: one line per GPU kind, the winner and its engine command."""
    def money(x):
        return "-" if x is None else f"${x:,.3f}"
    lines = [f"capacity plan: {res['target_request_rate']:g} requests/s of {res['mean_input_tokens']:,.0f} input and "
             f"{res['mean_output_tokens']:,.0f} output tokens (means), {targets_text(res['max_ttft_ms'], res['max_tpot_ms'])} "
             f"at p{res['slo_percentile']}, {res['serving_stack']} stack", "",
             f"{'GPU':<14}{'layout':<16}{'req/s each':>11}{'replicas':>9}{'GPUs':>6}{'$/hour':>11}"
             f"{'$/M in':>10}{'$/M out':>10}"]
    for g, c in res["by_gpu"].items():
        lay = f"tp {c['tp']}" + (f" dp {c['dp']}" if c["dp"] > 1 else "") + (f" ep {c['ep']}" if c["ep"] > 1 else "")
        lines.append(f"{g:<14}{lay:<16}{c['replica_request_rate']:>11.2f}{c['replicas']:>9}{c['num_gpus']:>6}"
                     f"{money(c['dollars_per_hour']):>11}{money(c['cost_per_million_input_tokens']):>10}"
                     f"{money(c['cost_per_million_output_tokens']):>10}")
    lines += ["", f"winner: {res['num_gpus']} x {res['gpu']} ({res['replicas']} replica(s) of "
                  f"{res['layout']['gpus_per_replica']})"
              + (f", {money(res['dollars_per_hour'])} per hour: {money(res['cost_per_million_input_tokens'])} per "
                 f"million input tokens, {money(res['cost_per_million_output_tokens'])} per million output tokens"
                 if res["dollars_per_hour"] is not None else " (give --cost-per-gpu-hour to price it)"),
              f"sized at: {res['precision']}",
              delivered_text(res), "", res["engine_command"], "",
              "convention: " + res["convention"]]
    return "\n".join(lines)


def delivered_text(res):
    """The latencies the winner delivers at the planned load, in one line."""
    d, p = res["delivered"], res["slo_percentile"]
    q = {50: "_median_s", 90: "_p90_s", 99: "_p99_s"}[p]

    def ms(x):
        return f"{x * 1e3:,.1f} ms"
    return (f"delivered at {res['request_rate_per_replica']:.3g} requests/s per replica (mean of "
            f"{d['seeds']} seeds of {res['requests_simulated']:,} Poisson arrivals): TTFT p50 "
            f"{ms(d['ttft_median_s'])}, p90 {ms(d['ttft_p90_s'])}; TPOT p50 "
            f"{ms(d['tpot_median_s'])}, p90 {ms(d['tpot_p90_s'])}; worst seed's p{p} TTFT "
            f"{ms(d['ttft' + q + '_worst'])}, TPOT {ms(d['tpot' + q + '_worst'])}")
