"""calc_inference_latency.py's flags for request mixes, traces, prefix caching and speculative
decoding (issue 34): the argument groups, their one-line checks, and the mix in words. The
formulas live in serve/workload.py, serve/simulate.py and serve/speculative.py."""

from ..cli import bounded_int, finite_float
from ..model.spec import resolve_model_spec
from ..serve.engine import layout_problem
from ..serve.speculative import SPECULATIVE_METHODS


def add_mix_args(parser):
    """The request-mix, trace, prefix-cache and speculative-decoding argument groups."""
    g = parser.add_argument_group("request mixes, traces and prefix caching (a --num-requests benchmark; "
                                  "spelled as `vllm bench serve` spells them)")
    g.add_argument("--dataset", "--dataset-name", choices=("random", "sharegpt"), default=None,
                   help="draw each request's lengths: random = vLLM's RandomDataset (uniform within "
                        "--random-range-ratio of --random-input-len and --random-output-len), sharegpt = a "
                        "lognormal mix with the means of vLLM's ShareGPT runs (215 input, 197 output tokens; "
                        "sigma 1.0 assumed); default: every request -s and -o")
    g.add_argument("--random-input-len", type=bounded_int, default=None,
                   help="--dataset random: the mean prompt tokens (default 1024, vLLM's)")
    g.add_argument("--random-output-len", type=bounded_int, default=None,
                   help="--dataset random: the mean output tokens (default 128, vLLM's)")
    g.add_argument("--random-range-ratio", type=finite_float, default=None,
                   help="--dataset random: lengths uniform over [len (1 - r), len (1 + r)], 0 <= r < 1 "
                        "(default 0: every request alike)")
    g.add_argument("--trace", default=None, metavar="FILE",
                   help="requests from a file: JSON lines or CSV (a header; a spreadsheet's BOM "
                        "is fine) with exactly the columns arrival_s, input_tokens, output_tokens "
                        "and optionally prefix_id, prefix_tokens (a conversation's turns share "
                        "their history this way), at most 1,000,000 rows; every row is served "
                        "under any layout, time counted from the first arrival; its arrivals are "
                        "used unless --request-rate or -c is given; -s, -o and --prefix-tokens do "
                        "not apply (its rows give them)")
    g.add_argument("--prefix-tokens", "--random-prefix-len", type=bounded_int, default=None,
                   help="the first N prompt tokens are shared by every request and cached once computed "
                        "(vLLM's prefix caching, SGLang's RadixAttention): the others compute only the rest. "
                        "With -s, part of s; with --dataset, prepended to the drawn prompt (vLLM's "
                        "--random-prefix-len). Without a load (-b), the prefix's cache is taken as there")
    g.add_argument("--prefix-hit-rate", type=finite_float, default=None,
                   help="share of requests that find the shared prefix (0-1; the others compute theirs "
                        "whole; default 1 with --prefix-tokens, a trace's own prefix_id otherwise)")
    g.add_argument("--num-scheduler-steps", type=bounded_int, default=None,
                   help="vLLM 0.6's multi-step scheduling: N decode steps run before the scheduler looks "
                        "again, so arrivals wait for the window (a --num-requests benchmark; default 1)")
    g.add_argument("--host-kv-cache-gib", type=finite_float, default=None,
                   help="host memory per GPU for a KV tier (vLLM CPU offload / LMCache, SGLang HiCache): "
                        "prefixes the pool evicts move there and come back over the host link on a hit "
                        "instead of being computed again (default: none)")
    g.add_argument("--host-kv-bandwidth-gbps", type=finite_float, default=None,
                   help="host-to-GPU bandwidth reached, GB/s per GPU (default: 0.70 of the GPU's host link, LMCache's measured reload: "
                        "PCIe 4.0/5.0 x16, NVLink-C2C on Grace superchips)")
    g = parser.add_argument_group("speculative decoding and multi-token prediction")
    g.add_argument("--speculative-tokens", "--num-speculative-tokens", type=bounded_int, default=None,
                   help="K draft tokens proposed per decoding sequence and verified in one pass of K + 1 "
                        "(vLLM's num_speculative_tokens, SGLang's speculative-num-steps); default none")
    g.add_argument("--speculative-method", choices=SPECULATIVE_METHODS, default=None,
                   help="the draft: mtp = the model's own MTP module (read from the config), eagle = an EAGLE "
                        "head (one decoder layer of the target's shape), draft = a smaller model "
                        "(--draft-model), ngram = prompt lookup on the host (no GPU work); default mtp when "
                        "the config has MTP layers")
    g.add_argument("--acceptance-rate", default=None, metavar="A[,A2,...]",
                   help="chance each draft token is accepted given the ones before it were: one value for "
                        "every position or one per position (defaults: mtp 0.875, DeepSeek-V3's measured "
                        "85-90%%; eagle 0.75, EAGLE-3's measured acceptance lengths for Llama-3.1-8B in vLLM; "
                        "draft and ngram need it)")
    g.add_argument("--draft-model", default=None, metavar="CONFIG",
                   help="--speculative-method draft: the draft model's config.json (or folder)")


def validate_speculative(args, parser, spec, req):
    """One-line errors for the speculative-decoding flags; resolves the method, the acceptance
    rates and the draft's spec into req.speculative (None without --speculative-tokens)."""
    from ..serve.speculative import DEFAULT_ACCEPTANCE, acceptance_rates, draft_layer_spec, tokens_per_step
    req.speculative = None
    given = [f for f, v in (("--speculative-method", args.speculative_method), ("--acceptance-rate",
                                                                              args.acceptance_rate),
                            ("--draft-model", args.draft_model)) if v is not None]
    if args.speculative_tokens is None:
        if given:
            parser.error(f"{', '.join(given)} belong{'s' if len(given) == 1 else ''} to speculative decoding; "
                         "add --speculative-tokens K")
        return
    k = args.speculative_tokens
    if args.search:
        parser.error("--search runs without speculative decoding; leave out --speculative-tokens")
    mtp = spec.get("mtp_layers_not_built", 0)
    method = args.speculative_method or ("mtp" if mtp else None)
    if method is None:
        parser.error("--speculative-tokens needs a draft: this model has no MTP layers (num_nextn_predict_layers), "
                     "so give --speculative-method eagle, draft (with --draft-model) or ngram")
    if method == "mtp" and not mtp:
        parser.error("--speculative-method mtp: this model's config has no MTP layers (num_nextn_predict_layers); "
                     "use eagle, draft or ngram")
    if (method == "draft") != (args.draft_model is not None):
        parser.error("--draft-model goes with --speculative-method draft, and draft needs it" if method == "draft"
                     else f"--draft-model is the draft of --speculative-method draft, not {method}")
    if args.acceptance_rate is None and method not in DEFAULT_ACCEPTANCE:
        parser.error(f"--speculative-method {method} has no measured default acceptance rate here (it depends "
                     f"on the {'draft/target pair' if method == 'draft' else 'text repeating the prompt'}): "
                     "give --acceptance-rate A (one value, or one per speculative token)")
    try:
        rates = acceptance_rates(args.acceptance_rate if args.acceptance_rate is not None
                                 else DEFAULT_ACCEPTANCE[method][0], k)
    except ValueError as exc:
        parser.error(str(exc))
    draft = None
    if method in ("mtp", "eagle"):
        draft = draft_layer_spec(spec)
    elif method == "draft":
        try:
            draft, _ = resolve_model_spec({"hf_model_name_or_path": args.draft_model},
                                          defaults={"num_experts": 8})
        except ValueError as exc:
            parser.error(f"--draft-model: {exc}")
        why = layout_problem(draft, tp=req.tensor_parallel_size, pp=1, dp=1, ep=1)
        if why:
            parser.error(f"--draft-model at the target's -tp {req.tensor_parallel_size}: {why}")
    source = (DEFAULT_ACCEPTANCE[method][1] if args.acceptance_rate is None else "given")
    req.speculative = {"k": k, "method": method, "acceptance_rates": rates,
                       "acceptance_source": source, "tokens_per_step": tokens_per_step(rates),
                       "draft_spec": draft, "target_spec": spec, "draft_model": args.draft_model}


def validate_workload(args, parser, req):
    """One-line errors for the request-mix, trace and prefix-cache flags."""
    rnd = [f for f, v in (("--random-input-len", req.random_input_len),
                          ("--random-output-len", req.random_output_len),
                          ("--random-range-ratio", req.random_range_ratio)) if v is not None]
    if rnd and req.dataset != "random":
        parser.error(f"{', '.join(rnd)} belong{'s' if len(rnd) == 1 else ''} to --dataset random; add it")
    if req.trace and req.dataset:
        parser.error("--trace and --dataset both give the requests; give one")
    if req.random_range_ratio is not None and not 0 <= req.random_range_ratio < 1:
        parser.error("--random-range-ratio must be at least 0 and below 1 (vLLM's rule), got "
                     f"{req.random_range_ratio:g}")
    if req.prefix_hit_rate is not None:
        if not 0 <= req.prefix_hit_rate <= 1:
            parser.error(f"--prefix-hit-rate must be between 0 and 1, got {req.prefix_hit_rate:g}")
        if not req.prefix_tokens and not req.trace:
            parser.error("--prefix-hit-rate is the share of requests that find the shared prefix: add "
                         "--prefix-tokens N (or a --trace with prefix_id)")
        if req.num_requests is None and not req.trace:
            parser.error("--prefix-hit-rate draws which requests of a benchmark run find the prefix: add "
                         "--num-requests N and a load (without one, -b takes the prefix's cache as there)")
    mix = bool(req.dataset or req.trace)
    if (mix or req.prefix_tokens) and args.search:
        parser.error("--search runs every request alike (-s, -o); leave out --dataset, --trace and --prefix-tokens")
    if req.dataset and req.num_requests is None and args.target_request_rate is None:
        parser.error(f"--dataset {req.dataset} draws --num-requests N requests; add it (and "
                     "--request-rate or -c)")
    if req.trace and req.batch_size_given:
        parser.error("--trace is a served load; leave out -b")
    if req.prefix_tokens and not mix and req.num_requests is None and (
            req.concurrency is not None or req.request_rate is not None):
        parser.error("prefix caching under a load is simulated: add --num-requests N (a benchmark run)")
    if (req.prefix_tokens and not req.dataset and not req.trace
            and req.prefix_tokens >= req.prompt_tokens):
        parser.error(f"--prefix-tokens {req.prefix_tokens} must be fewer than the prompt's -s "
                     f"{req.prompt_tokens} (the prefix is its first tokens; a request computes at "
                     "least one of its own)")
    if req.num_scheduler_steps is not None and req.num_requests is None and not req.trace:
        parser.error("--num-scheduler-steps is simulated: add --num-requests N (a benchmark run)")
    host = [f for f, v in (("--host-kv-cache-gib", req.host_kv_cache_gib),
                           ("--host-kv-bandwidth-gbps", req.host_kv_bandwidth_gbps))
            if v is not None]
    if host and not (req.prefix_tokens or req.trace):
        parser.error(f"{host[0]} is a tier for cached prefixes: add --prefix-tokens N or a --trace with prefix_id "
                     "(and --num-requests)")
    if req.host_kv_bandwidth_gbps is not None and req.host_kv_cache_gib is None:
        parser.error("--host-kv-bandwidth-gbps belongs to a host tier: add --host-kv-cache-gib G")
    if host and req.capacity:
        parser.error(f"a capacity plan sizes the GPU pool alone; leave out {host[0]}")
    if host and req.num_requests is None and not req.trace:
        parser.error(f"{host[0]} is simulated in a benchmark run: add --num-requests N and a load (-b takes the "
                     "prefix's cache as there, with no tier to fill)")
    for f in ("host_kv_cache_gib", "host_kv_bandwidth_gbps"):
        v = getattr(args, f)
        if v is not None and not v > 0:
            parser.error(f"--{f.replace('_', '-')} must be positive, got {v:g}")
    req.random_input_len = 1024 if req.random_input_len is None else req.random_input_len
    req.random_output_len = 128 if req.random_output_len is None else req.random_output_len
    req.random_range_ratio = 0.0 if req.random_range_ratio is None else req.random_range_ratio


def mix_text(mix):
    """The requests of a mix in words."""
    if mix["dataset"] == "random":
        text = (f"lengths drawn as vLLM's random dataset draws them (uniform within {mix['random_range_ratio']:g} of "
                "the means)")
    elif mix["dataset"] == "sharegpt":
        text = ("lengths drawn from a ShareGPT-shaped lognormal mix (vLLM's ShareGPT runs' means, sigma 1.0 "
                "assumed, clipped to 1,024 input and 2,048 in all)")
    elif mix["dataset"] == "trace":
        text = f"lengths from the trace {mix['trace']}"
    else:
        text = "every request alike"
    if mix["prefix_tokens"]:
        text += f", the first {mix['prefix_tokens']:,} prompt tokens shared"
    if mix["prefix_hit_rate"] is not None:
        text += f" by a share {mix['prefix_hit_rate']:g} of them (the others' prefixes their own)"
    if mix["prefix_tokens"] or mix["shared_prefix_requests"]:
        text += ("; a cached prefix's prompt tokens are not computed (prefix caching), cached prefixes held in the "
                 "KV pool until evicted, least recently used first")
    return text


