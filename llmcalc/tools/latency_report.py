"""calc_inference_latency.py's report: the aligned text of the dict main returns (the static
batch, the steady state or the simulated run, the layer kinds, memory and hardware lines) and the
mode line that says in words which regime the numbers are for."""

import math
import textwrap

from ..model.kinds import layer_groups
from .latency_mix import mix_text


# --- output --------------------------------------------------------------------------------------
def fmt_s(t):
    """Seconds -> ms or s text."""
    return f"{t * 1e3:,.2f} ms" if t < 1 else f"{t:,.3f} s"


def gpu_line(hw):
    """The first line of a report: the accelerator, and for the default how to change it."""
    default = " (the default GPU; --gpu NAME for another)" if hw.get("gpu_default") else ""
    return f"GPU: {hw['gpu']}{default}; serving stack {hw['serving_stack']}"


def format_report(res):
    """Aligned human-readable report of the dict main returns."""
    r, hw = res, res["hardware"]
    lines = [gpu_line(hw), f"Model: {r['model']['described']}"] + textwrap.wrap(
        f"mode: {r['mode']}", width=100, subsequent_indent="      ")
    lines += [f"WARNING: {w}" for w in r["warnings"]]
    sp = r.get("speculative")
    if sp:
        rates = ", ".join(f"{a:g}" for a in sp["acceptance_rates"])
        lines += textwrap.wrap(
            f"speculative decoding: {sp['method']} draft, K = {sp['k']} tokens per step, "
            f"acceptance {rates} ({sp['acceptance_source']}): {sp['tokens_per_step']:.3f} tokens "
            "per verification step; a decode step below verifies K + 1 tokens per sequence and "
            "runs the draft's passes, TPOT = step / tokens per step",
            width=100, subsequent_indent="      ")
    if r["serving"]:
        lines += serving_report_lines(r)
        if sp:
            lines.append(f"speculative decoding: TPOT {fmt_s(r['decode_per_token_s'])} against "
                         f"{fmt_s(r['decode_per_token_s_without_speculation'])} without it at "
                         f"this load: speedup {r['speculative_speedup']:.2f}x")
    else:
        lines += static_report_lines(r)
    pc, dc = r["prefill_components_s"], r["decode_first_step_components_s"]
    head = ("prompt step", "decode step") if r["serving"] else ("prefill", "decode step")
    lines += ["", f"{'component':<22}{head[0]:>14}{'%':>7}{head[1]:>14}{'%':>7}"]
    for name in pc:
        lines.append(f"{name:<22}{fmt_s(pc[name]):>14}{100 * pc[name] / r['prefill_s']:>6.1f}%"
                     f"{fmt_s(dc[name]):>14}{100 * dc[name] / r['decode_first_step_s']:>6.1f}%")
    return lines_tail(r, lines)


def benchmark_report_lines(r):
    """The simulated benchmark's part of the report: per-request statistics, the run, the pool."""
    sv = r["serving"]
    gib = 2 ** 30
    mix = sv.get("mix")
    stats = ("_s", "_median_s", "_p90_s", "_p99_s") if mix else ("_s", "_median_s", "_p99_s")
    e2e = "End-to-end" + (" (the mix)" if mix else f" ({r['output_tokens']} output tokens)")
    rows = [(name, [fmt_s(sv[key + suffix]) for suffix in stats])
            for name, key in (("TTFT (waiting included)", "ttft"),
                              ("TPOT (time per output token)", "tpot"), (e2e, "e2e"))]
    w = max(12, 2 + max(len(c) for _, cells in rows for c in cells))  # apart at any magnitude
    heads = ("mean", "median", "p90", "p99") if mix else ("mean", "median", "p99")
    lines = ["", f"{'per request' + (' (over the mix)' if mix else ''):<34}"
                 + "".join(f"{x:>{w}}" for x in heads)]
    for name, cells in rows:
        lines.append(f"{name:<34}" + "".join(f"{c:>{w}}" for c in cells))
    if sv.get("warm_requests"):  # a closed loop: its clients' later requests apart
        lines.append(f"after the first wave ({sv['warm_requests']:,} requests): TTFT "
                     f"{fmt_s(sv['warm_ttft_s'])}, TPOT {fmt_s(sv['warm_tpot_s'])} (means; "
                     "the clients' first requests, sent together, ramp up as a static batch)")
    lines += ["", f"{'the run':<34}{'':>12}",
              f"{'duration (first sent, last answered)':<40}{fmt_s(sv['duration_s']):>14}",
              f"{'output tokens/s, total':<40}{sv['output_tokens_per_s']:>14,.1f}",
              f"{'output tokens/s per GPU':<40}{sv['output_tokens_per_s_per_gpu']:>14,.1f}",
              f"{'requests/s':<40}{sv['requests_per_s']:>14,.3f}"]
    if sv.get("overloaded"):
        lines += textwrap.wrap(
            f"OVERLOAD: sent {sv['offered_requests_per_s']:.3g} requests/s, served "
            f"{sv['requests_per_s']:.3g}/s: this layout sustains about "
            f"{sv['sustained_requests_per_s']:.3g}/s (the steady state's limit), so the queue "
            f"grew through the run and TTFT ({fmt_s(sv['ttft_s'])} mean) grows with its length; "
            "lower the rate or add GPUs", width=100, subsequent_indent="      ")
    if mix:
        a, b = mix["input_tokens"], mix["output_tokens"]
        lines += ["", f"{'the mix (tokens)':<34}{'mean':>10}{'median':>10}{'p99':>10}"
                      f"{'min':>10}{'max':>10}"]
        for name, x in (("input (prompt)", a), ("output", b)):
            lines.append(f"{name:<34}{x['mean']:>10,.1f}{x['median']:>10,}{x['p99']:>10,}"
                         f"{x['min']:>10,}{x['max']:>10,}")
        done = sv["prompt_tokens_computed"] + sv["prompt_tokens_cached"]
        if sv["prompt_tokens_cached"] or mix["prefix_tokens"] or mix["shared_prefix_requests"]:
            lines.append(f"prefix cache: {sv['prefix_hits']:,} hits, "
                         f"{sv['prompt_tokens_cached']:,} of {done:,} prompt tokens cached "
                         f"({100 * sv['prompt_tokens_cached'] / max(done, 1):.1f}%, not computed), "
                         f"{sv['prefix_evictions']:,} evictions, at most "
                         f"{sv['prefix_tokens_held_most']:,} tokens of cached prefixes held in one "
                         "group's pool of "
                         f"{sv['kv_pool_tokens'] / max(1, r['data_parallel_size']):,.0f}")
        ht = mix.get("host_tier")
        if ht:
            lines.append(f"host KV tier: {ht['host_bytes_per_gpu'] / 2**30:,.1f} GiB per GPU "
                         f"({ht['host_tokens']:,.0f} tokens) at "
                         f"{ht['host_bytes_per_s'] / 1e9:,.1f} GB/s: {sv['host_hits']:,} prefixes "
                         f"brought back ({sv['host_tokens_loaded']:,} tokens, "
                         f"{fmt_s(sv['host_load_s'])} of loading); a token loads in "
                         f"{ht['load_s_per_token'] * 1e6:,.2f} us against "
                         f"{ht['recompute_s_per_token'] * 1e6:,.2f} us to compute it again: the "
                         f"tier {'pays' if ht['pays'] else 'does not pay'}")
    lines += ["", f"engine: {sv['engine_steps']:,} steps of {sv['decodes_per_step']:.1f} decodes "
                  f"and {sv['prompt_tokens_per_step']:.0f} prompt tokens on average; "
                  f"{sv['mean_in_flight']:.1f} requests in the server on average, at most "
                  f"{sv['most_running']:,} running at once",
              f"KV pool: {sv['kv_pool_bytes_per_gpu'] / gib:,.2f} GiB per GPU holds "
              f"{sv['kv_pool_max_concurrency']:,} requests of s + o tokens "
              f"({sv['kv_bytes_per_request_per_gpu'] / gib:,.3f} GiB each; reserved whole on "
              "admission)"
              + (f"; the stack runs at most {sv['max_num_seqs']:,} at once (--max-num-seqs)"
                 if sv["max_num_seqs"] else "")]
    return lines


def serving_report_lines(r):
    """The continuous-batching part of the report: mean times, the mean step, the KV pool."""
    sv = r["serving"]
    if sv.get("benchmark"):
        return benchmark_report_lines(r)
    gib = 2 ** 30
    share = sv.get("prompt_step_share", 1.0)  # of the steps, those that carry prompt tokens
    lines = ["", f"{'per request (means)':<40}{'time':>14}",
             f"{'TTFT (waiting included)':<40}{fmt_s(sv['ttft_s']):>14}",
             f"{'TPOT (time per output token)':<40}{fmt_s(sv['tpot_s']):>14}",
             f"{'End-to-end (%d output tokens)' % r['output_tokens']:<40}{fmt_s(sv['e2e_s']):>14}",
             "", f"{'throughput':<40}{'tokens/s':>14}",
             f"{'per user (1/TPOT)':<40}{sv['tokens_per_s_per_user']:>14,.1f}",
             f"{'total (C x o / end-to-end)':<40}{sv['output_tokens_per_s']:>14,.1f}",
             f"{'per GPU':<40}{sv['output_tokens_per_s_per_gpu']:>14,.1f}",
             f"{'requests/s':<40}{sv['requests_per_s']:>14,.3f}",
             "", f"engine steps: {sv['decodes_per_step']:.1f} decodes each; {share:.1%} of them "
                 f"also run others' prompts ("
                 f"{sv['prompt_tokens_per_step'] / max(share, 1e-12):,.0f}"
                 " tokens each, whole or a chunk); a request's own "
                 f"prompt spans {sv['prompt_steps']:.2f} step(s)"
             + (" (the token budget is full: requests queue)" if sv["budget_bound"] else "")
             + f"; an arrival waits {fmt_s(sv['arrival_wait_s'])} for the running step"
             + (f" and {sv['queue_steps']:.1f} steps for the budget"
                if sv["queue_steps"] > 1e-9 else "")
             + (f"; its prompt waits {fmt_s(sv['prompt_queue_wait_s'])} for the others' prefills "
                "ahead of it"
                if sv.get("prompt_queue_wait_s", 0.0) > 1e-9 else ""),
             f"KV pool: {sv['kv_pool_bytes_per_gpu'] / gib:,.2f} GiB per GPU holds "
             f"{sv['kv_pool_max_concurrency']:,} requests of s + o tokens "
             f"({sv['kv_bytes_per_request_per_gpu'] / gib:,.3f} GiB each)"
             + (f"; the stack runs at most {sv['max_num_seqs']:,} at once (--max-num-seqs)"
                if sv["max_num_seqs"] else "")]
    if sv["queued_requests"]:
        capped = sv["max_num_seqs"] and sv["max_num_seqs"] < sv["kv_pool_max_concurrency"]
        why = "the stack's running cap" if capped else "the KV pool"
        lines.append(f"queue: {sv['queued_requests']:,} of the {sv['concurrency']:,} requests wait "
                     f"in the server's queue past {why}, {fmt_s(sv['queue_wait_s'])} each on "
                     "average (in TTFT and end-to-end)")
    return lines


def static_report_lines(r):
    """The static-batch part of the report: prefill, decode steps, throughput."""
    lines = ["", f"{'phase':<34}{'time':>14}   bound",
              f"{'TTFT (prefill, %d x %d tokens)' % (r['batch_size'], r['prompt_tokens']):<34}"
              f"{fmt_s(r['ttft_s']):>14}   {r['prefill_bound']}"
              + (f" (incl. {fmt_s(r['request_overhead_s'])} per request)"
                 if r["request_overhead_s"] else ""),
              *(speculative_tpot_lines(r) if r.get("speculative") else [
                  f"{'TPOT first decode step':<34}{fmt_s(r['decode_first_step_s']):>14}   "
                  f"{r['decode_bound']}",
                  f"{'TPOT last decode step':<34}{fmt_s(r['decode_last_step_s']):>14}",
                  f"{'TPOT mean over %d steps' % max(r['output_tokens'] - 1, 0):<34}"
                  f"{fmt_s(r['decode_per_token_s']):>14}"]),
              f"{'End-to-end (%d output tokens)' % r['output_tokens']:<34}"
              f"{fmt_s(r['total_s']):>14}",
              "", f"{'throughput':<34}{'tokens/s':>14}",
              f"{'per user (decode, 1/TPOT)':<34}{r['tokens_per_s_per_user']:>14,.1f}",
              f"{'total (b x o / end-to-end)':<34}{r['output_tokens_per_s']:>14,.1f}",
              f"{'per GPU (total / tp x pp)':<34}{r['output_tokens_per_s_per_gpu']:>14,.1f}"]
    return lines


def speculative_tpot_lines(r):
    """A speculative static batch's decode lines: per output token (a verification step's time
    over the tokens it yields at this output length), the steps themselves apart, and the
    speedup against the same batch without speculation."""
    n, per = max(r["output_tokens"] - 1, 0), r["speculative_tokens_per_step_used"]
    return [f"{'TPOT per token, first steps':<34}{fmt_s(r['decode_first_token_s']):>14}   "
            f"{r['decode_bound']}",
            f"{'TPOT per token, last steps':<34}{fmt_s(r['decode_last_token_s']):>14}",
            f"{'TPOT mean over %d tokens' % n:<34}{fmt_s(r['decode_per_token_s']):>14}   "
            f"{r['speculative_verification_steps']:,.2f} verification steps of "
            f"{fmt_s(r['decode_first_step_s'])}, {per:.2f} tokens each",
            f"{'TPOT without speculation':<34}"
            f"{fmt_s(r['decode_per_token_s_without_speculation']):>14}   "
            f"speedup {r['speculative_speedup']:.2f}x"]


def kv_format_text(fmt, kv_bits):
    """What a checkpoint's own KV cache format means here ('' when it names none)."""
    if not fmt.get("kv_cache_format"):
        return ""
    return (f"; its KV cache format is {fmt['kv_cache_format']} (kv_cache_quant_algo), counted "
            f"here at {kv_bits} bits" + ("" if kv_bits == 8 else ": TensorRT-LLM follows it by "
                                         "default, pass --kv-cache-bits 8 for that"))


def lines_tail(r, lines):
    """The report's layer kinds, memory, hardware and convention lines."""
    hw = r["hardware"]
    lines += ["", f"{'layers':>7}{'first':>7}{'decode step':>14}{'% of step':>10}   layer kind "
                  "(attention | mlp); time per layer, its kernels and all-reduces included"]
    for k in r["layer_kinds"]:
        lines.append(f"{k['layers']:>7}{k['first_layer']:>7}"
                     f"{fmt_s(k['decode_first_step_s_per_layer']):>14}"
                     f"{100 * k['decode_first_step_s'] / r['decode_first_step_s']:>9.1f}%   "
                     f"{k['attention']} | {k['mlp']}")
    cb, cm = r["critical_batch_size"], r["critical_batch_size_matmuls"]
    gib = 2 ** 30
    whole = cb if cb else "never (KV-cache reads grow with b as fast as the math)"
    lines += ["", f"decode turns compute-bound at batch: weight matmuls {cm if cm else 'never'}, "
                  f"whole step {whole} (context {r['prompt_tokens']})",
              "", f"{'memory per GPU (most-loaded stage)':<40}{'GiB':>12}",
              f"{'  weights':<40}{r['weight_bytes_per_gpu'] / gib:>12,.2f}"]
    if r.get("draft_weight_bytes_per_gpu"):
        lines.append(f"{'  draft weights (%s)' % r['speculative']['method']:<40}"
                     f"{r['draft_weight_bytes_per_gpu'] / gib:>12,.2f}")
    lines += [f"{'  KV cache at s + o tokens':<40}{r['kv_cache_bytes_per_gpu'] / gib:>12,.2f}"]
    if r["indexer_cache_bytes_per_gpu"]:
        lines.append(f"{'  indexer keys (DSA) at s + o tokens':<40}"
                     f"{r['indexer_cache_bytes_per_gpu'] / gib:>12,.2f}")
    if r["state_bytes_per_gpu"]:
        lines.append(f"{'  linear-attention state (constant)':<40}"
                     f"{r['state_bytes_per_gpu'] / gib:>12,.2f}")
    lines += [f"{'  total':<40}{r['memory_bytes_per_gpu'] / gib:>12,.2f} of "
              f"{hw['gpu_memory_bytes'] / gib:,.2f} GiB"
              + ("" if r["fits_in_memory"] else "  ** DOES NOT FIT **"),
              "", f"hardware: {hw['peak_flops_per_s'] / 1e12:,.1f} TFLOP/s x "
                  f"{hw['compute_efficiency']:.2f}, "
              f"{hw['memory_bandwidth_bytes_per_s'] / 1e9:,.0f} GB/s x "
              f"{hw['memory_efficiency']:.2f}, "
              f"link {hw['link_bytes_per_s'] / 1e9:,.0f} GB/s, tp {r['tensor_parallel_size']} "
              f"pp {r['pipeline_parallel_size']}, w{r['weight_bits']}a{r['activation_bits']} "
              f"kv{r['kv_cache_bits']}" + (f" ({hw['gpu']})" if hw["gpu"] else "")
              + f"; stack {hw['serving_stack']}: {hw['kernel_overhead_s'] * 1e6:g} us per kernel, "
              f"{hw['link_latency_s'] * 1e6:g} us per all-reduce call, "
              f"{hw['step_overhead_s'] * 1e3:g} ms "
              f"per step, {hw['request_overhead_s'] * 1e3:g} ms per request"
              + (f", MoE blocks x {hw['moe_factor']:g}" if hw.get("moe_factor", 1.0) != 1.0 else "")
              + (f", sliding window {r['sliding_window']} on {len(r['sliding_layers'])} of "
                 f"{r['model']['num_layers']} layers" if r["sliding_window"] else ""),
              "convention: " + r["convention"]]
    fmt = r.get("checkpoint_format")
    if fmt:
        lines.insert(-1, f"weights as the checkpoint stores them ({fmt['method']}, scales "
                         f"included): routed experts at {fmt['expert_bits']:.4g} bits, other layer "
                         f"matrices at {fmt['linear_bits']:.4g} (--weight-bits overrides)"
                         + kv_format_text(fmt, r["kv_cache_bits"]))
    return "\n".join(lines)


def mode_text(*, b, s, o, tp, pp, gpus=None):
    """The regime the numbers are for, in words (the report's first line)."""
    return (f"b = {b} concurrent sequence{'s' if b > 1 else ''} run as one batch (static batching: "
            f"they start and end together), each with s = {s} prompt and o = {o} output tokens; tp "
            f"{tp} = tensor parallel (every layer's weights split over {tp} "
            f"GPU{'s' if tp > 1 else ''}, an all-reduce after each block), pp {pp} = pipeline "
            f"parallel ({pp} stage{'s' if pp > 1 else ''} of consecutive layers run one after the "
            f"other, one batch in flight); {gpus or tp * pp} "
            f"GPU{'s' if (gpus or tp * pp) > 1 else ''} in all; times are per request, memory is "
            "the most-loaded GPU's")


def serving_mode_text(sv, *, s, o, tp, pp, stack, gpus=None):
    """The continuous-batching regime in words (the report's first line)."""
    budget = sv["token_budget"]
    if sv.get("benchmark"):
        rate = sv["request_rate"]
        load = ("all sent at once" if sv["sent_at_once"] else
                f"{sv['concurrency']} clients, each sending its next request when the last returns"
                if rate is None else f"sent at {rate:g} requests/s ({sv['arrivals']} arrivals, "
                                     f"seed {sv['seed']})")
        mix = sv.get("mix")
        if mix and mix["trace_arrivals"]:
            load = f"sent at the trace's own times ({mix['trace']})"
        lengths = f"each with s = {s} prompt and o = {o} output tokens"
        if mix:
            lengths = (mix_text(mix) + f" (means s = {mix['input_tokens']['mean']:,.1f}, o = "
                       f"{mix['output_tokens']['mean']:,.1f})")
        return (f"a benchmark run of {sv['num_requests']:,} requests simulated step by step, "
                f"{stack} stack: {load}, {lengths}; an engine step runs every decode and "
                + step_text(budget) + f"; tp {tp} pp {pp}"
                + (f" ({sv['micro_batches']} micro-batches in flight, one per stage at a time)"
                   if pp > 1 else "")
                + f" ({gpus_text(gpus or tp * pp)} per replica); times are means per request, "
                "throughput is over the run's duration (ramp-up and drain included), memory is the "
                "most-loaded GPU's with the most requests that ran at once")
    load = (f"{sv['request_rate']:g} requests/s arriving (open loop; {sv['concurrency']:.1f} in "
            "flight on average)" if sv["request_rate"] is not None else
            f"C = {sv['concurrency']} requests in flight (closed loop: a finished request is "
            "replaced at once)")
    return (f"continuous batching in steady state, {stack} stack: {load}, each with s = {s} prompt "
            f"and o = {o} output tokens; an engine step runs every decode and "
            + step_text(budget) + f"; tp {tp} pp {pp}"
            + (f" ({min(pp, max(1, math.floor(sv['concurrency'])))} micro-batches in flight, one "
               "per stage at a time)" if pp > 1 else "")
            + f" ({gpus_text(gpus or tp * pp)} per replica); times are means per request, memory "
            "is the most-loaded GPU's with C requests at s + o tokens")


def step_text(budget):
    """What an engine step runs besides the decodes, in words."""
    return f"prompt chunks up to {budget} tokens in all" if budget else "every waiting prompt whole"


def gpus_text(n):
    """'1 GPU', '8 GPUs'."""
    return f"{n} GPU{'s' if n > 1 else ''}"


def layout_text(*, dp, ep, tp, pp, hw, imbalance, moe=True):
    """What data-parallel attention, expert parallelism and nodes add to the mode line ('' if
    none). moe: the model has routed experts (without them the dp groups share nothing)."""
    parts = []
    if dp > 1:
        parts.append(f"dp {dp} = data-parallel attention ({dp} groups of tp {tp}, each with 1/{dp} "
                     "of the requests and its own KV cache" + ("; the MoE layers take every "
                     "group's tokens)" if moe else ")"))
    if ep > 1:
        parts.append(f"ep {ep} = expert parallel (whole experts spread over the {ep} GPUs of a "
                     "stage, tokens sent and returned by two all-to-alls per MoE layer; the "
                     f"busiest GPU carries {imbalance:.2f} x the mean expert work)")
    elif dp > 1 and moe:
        parts.append(f"experts split over all {tp * dp} GPUs of a stage (tokens all-gathered "
                     "before and reduce-scattered after each MoE layer)")
    g = hw.get("gpus_per_node")
    if g and tp * dp * pp > g:
        parts.append(f"{g} GPUs per node: groups beyond it use the network at "
                     f"{hw['scale_out_bytes_per_s'] / 1e9:g} GB/s per GPU")
    return "".join("; " + x for x in parts)


def attention_convention(spec):
    """What the layer kinds' spans and indexers do to the work, for the convention line."""
    counts = {}
    for layer, cnt, _ in layer_groups(spec):
        for attn in layer["attention"]:
            texts = []
            if attn["span"] == "sliding":
                texts.append(f"sliding-window attention (w = {attn['window']}): a query attends to "
                             "at most w keys, a decode step reads at most w - 1 cached tokens")
            elif attn["span"] == "chunked":
                texts.append(f"chunked attention (C = {attn['chunk']}): a query attends within its "
                             "chunk, a decode step reads 0 .. C-1 cached tokens in turn")
            if attn["index_topk"]:
                texts.append(f"DSA (top-{attn['index_topk']}): the core attends to at most "
                             f"{attn['index_topk']} keys")
            if attn["index_topk"] and attn["index_heads"]:
                texts.append("a lightning indexer scores every cached key")
            if attn["kind"] == "dsv4" and attn["compress"]:
                csa = attn["compress_kind"] == "csa"
                texts.append(f"DeepSeek-V4 compression (1/{attn['compress']}): a query also "
                             "attends to the compressed entries closed before it"
                             + (f" (the indexer scores them all, the core its top-"
                                f"{attn['c_index_topk']})" if csa else ""))
            if attn["span"] == "state":
                texts.append("Gated DeltaNet: no KV cache; prefill runs the chunked algorithm "
                             f"(chunks of {attn['state_chunk']}), a decode step one recurrent "
                             "update, reading and writing its constant state (recurrent state at "
                             "--state-bits)")
            for text in texts:
                counts[text] = counts.get(text, 0) + cnt
    L = spec["num_layers"]
    return "".join(f"; {text} on {n} of {L} layers" for text, n in counts.items())
