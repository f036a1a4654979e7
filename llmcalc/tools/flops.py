"""Training and inference FLOPs of a decoder-only transformer, and the time and cost to train it.

Counts every matrix multiply of one forward pass exactly, the way PyTorch's FLOP counter
(torch.utils.flop_counter.FlopCounterMode) does: 2 FLOPs per multiply-accumulate, matmuls only
(no softmax, norms, activations, biases or optimizer). The model is a list of layers, each with
its attention and MLP kinds (a config's sliding/full pattern, DeepSeek's dense-then-MoE layers), and
the totals are sums over that list. Per layer: the attention projections (MHA/GQA/MQA, or DeepSeek's
MLA low-rank q/kv projections, plus a DeepSeek-V3.2 lightning indexer's), the attention score
(Q K^T) and context (P V) products, which grow with s, the indexer's scores, and the MLP (2 or 3
matrices of width f, --ffn-hidden-size honoured) or, on MoE layers only, the MoE block (top-k
routed experts, in expectation when some are zero-computation experts; shared experts + their gate;
the router). Then the output head at every position. The embedding lookup is not a matmul.

Training (cookbook semantics): --tokens T at sequence length s, global batch b samples, so
iterations = T / (b s). Backward = 2 x forward (a gradient for the input and one for the weight
of every matmul), except a DeepSeek-V3.2 lightning indexer, whose input is detached and which
learns from its own loss (DeepSeek-AI 2025 sec. 2.1): its projections get weight gradients only
(1 x), its scores both (2 x). Recompute: none; selective = the attention core (scores and context) forward
again (Korthikanti et al. 2022 sec. 5); full = every layer's forward again, the output head not
(Narayanan et al. 2021 eq. 3). The cookbook's default is full recompute; -ca turns it off.
  model FLOPs    = forward + backward           (what MFU divides by)
  hardware FLOPs = forward + backward + recompute  (what HFU divides by)

Attention convention (--attention-flops): `full` (the default) counts all s x s query-key pairs on
every layer, masked or not: what eager/SDPA-math attention executes (sliding-window, chunk and top-k
masks included), and the convention of the cookbook, Megatron-LM papers and PaLM's MFU. `causal`
counts the pairs a kernel that skips masked blocks executes: s(s+1)/2 on a full layer, at most the
window per query on a sliding layer, the query's own chunk on a chunked layer, the indexer's top-k
on a DSA layer (whose indexer scores all s(s+1)/2), about what FlashAttention-style kernels run.

Inference: prefill of --prompt-tokens (logits at the last prompt position only, as serving engines
do), decode FLOPs per token at a context of c tokens (each layer reads all c keys, at most its
window, its own chunk's, or the indexer's top-k), and the total to generate --output-tokens (the
first comes from prefill, the other o-1 from decode steps). --infer (-i, the cookbook's flag) makes
the --tokens totals forward-only.

Time: wall time = model FLOPs / (GPUs x peak x MFU) (or hardware FLOPs / (GPUs x peak x HFU) with
--hfu). Default MFU 0.40: the middle of what large dense bf16 runs report (PaLM 540B 46.2%,
Chowdhery et al. 2022 sec. 4.1; Llama 3 405B 38-43%, Dubey et al. 2024 Table 4). An assumed MFU
is a guess; calc_training_time.py costs the step of a given layout instead (and finds the fastest).

Symbols: b batch (samples), s sequence length, T tokens, V vocab, h hidden, L layers, a query heads,
kv key/value heads, d head dim, f MLP width, E routed experts, k experts per token, f_e expert width.

Examples:
  python calc_transformer_flops.py -l 96 -hs 12288                    # GPT-3 175B, 300B tokens
  python calc_transformer_flops.py -l 12 -hs 768 --moe -e 512         # cookbook MoE example
  python calc_transformer_flops.py --hf_model_name_or_path path/to/llama-3-8b/config.json \\
      -s 8192 -b 512 --tokens 15e12 --recompute selective --num-gpus 1024 --gpu h100-sxm
  python calc_transformer_flops.py -l 32 -hs 4096 -a 32 --num-kv-heads 8 --swiglu \\
      --ffn-hidden-size 14336 -v 128256 -i --prompt-tokens 2048 --output-tokens 256
  python calc_transformer_flops.py -l 96 -hs 12288 --tokens 300e9 --num-gpus 1024 \\
      --peak-tflops 312 --mfu 0.45 --cost-per-gpu-hour 2 --json

References:
  Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
    Megatron-LM", sec. 5.1 eq. 3 (FLOPs per iteration with full recompute) and the training-time
    estimate 8 T P / (n X).
  Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
    sec. 5 and 6.3 (selective recompute, model vs hardware FLOPs); Chowdhery et al. 2022 (PaLM),
    App. B (MFU). Kaplan et al. 2020 sec. 2.1 (C = 6 N D). DeepSeek-AI 2024 (DeepSeek-V2) sec. 2.1.
  PyTorch torch/utils/flop_counter.py (what "matches PyTorch" means here).
"""

import sys

from ..cli import (OneLineErrorParser, add_model_args, add_output_args,
    bounded_int, calc_errors, check_ranges, count_float, finite_float, parse_tool_args,
    brief_number, dollars, print_result, print_warnings, ranges_epilog, run_tool, script_command)
from .gpu import accelerator_record
from ..text import number_text
from ..model.formulas import attention_core_flops, decode_keys_read, param_breakdown
from ..model.kinds import GDN_CHUNK, attention_kind, layer_groups, mlp_kind
from ..model.spec import resolve_model_spec, spec_summary
from ..train.flops import (CORE_KEYS, SECONDS_PER_DAY, backward_flops, decode_keys_read_sum,
    layer_core_flops, layer_linear_flops_per_token, recompute_flops, sequence_forward_flops,
    token_matmul_flops)


DEFAULT_MFU = 0.40  # see the module docstring for why
DEFAULT_TOKENS = 300e9  # T when --tokens is not given: the cookbook's default


# The range of each script flag (argparse dest: (lo, hi), both inclusive): far past any real run
# (1e18 tokens is ~10^4 x today's largest; 1e7 GPUs ~50 x today's largest cluster), and tight
# enough that no result overflows to inf, divides by ~0 or turns negative. The model flags have
# their own caps in model/spec.py.
FLAG_RANGES = {
    "sequence_length": (1, 10 ** 9), "batch_size": (1, 10 ** 12), "tokens": (1, 1e18),
    "prompt_tokens": (1, 10 ** 9), "output_tokens": (0, 10 ** 9), "decode_context": (1, 10 ** 9),
    "num_gpus": (1, 10 ** 7), "peak_tflops": (1e-3, 1e6), "mfu": (1e-3, 1), "hfu": (1e-3, 1),
    "cost_per_gpu_hour": (0, 1e6)}


def decode_flops_per_token(spec, *, context):
    """Forward FLOPs to decode one token at `context` tokens (its own included): all per-token
    matmuls, the output head once, and per layer an attention core over the keys its query reads
    (decode_keys_read: all c, at most the window, its own chunk's, the indexer's top-k; causal and
    full make no difference for one query). MLA counted as in training (keys expanded from the
    latent, as transformers' DeepseekV3Attention does), not with the absorbed-weights form of
    DeepSeek-V2 sec. 2.1.2 that serving stacks run (the latency script costs that one). A linear
    mixer: one recurrent step (linear_core_flops)."""
    total = token_matmul_flops(spec)
    for layer, count, _ in layer_groups(spec):
        for attn in layer["attention"]:
            keys = decode_keys_read(attn, context=context)
            total += count * sum(attention_core_flops(attn, pairs=keys).values())
    return total


def generate_flops(spec, *, prompt_tokens, output_tokens, attention):
    """Prefill of P tokens (logits at the last position only) plus o-1 decode steps (the first output
    token comes from prefill); decode step j runs at context P + j, so each attention block's core
    covers the sum of its decode_keys_read over contexts P+1 .. P+o-1 (closed form per kind), exactly
    what a loop of decode_flops_per_token gives (Kaplan et al. 2020 sec. 2.1's 2 N per token plus the
    context term, per layer kind). Returns (prefill, decode_total)."""
    P, o = prompt_tokens, output_tokens
    prefill = sum(sequence_forward_flops(spec, seq_len=P, attention=attention, head_positions=1).values())
    steps = max(o - 1, 0)
    decode = steps * token_matmul_flops(spec)
    if steps:
        for layer, count, _ in layer_groups(spec):
            for attn in layer["attention"]:
                keys = decode_keys_read_sum(attn, first_context=P + 1, last_context=P + steps)
                decode += count * sum(attention_core_flops(attn, pairs=keys).values())
    return prefill, decode


def layer_kind_flops(spec, *, seq_len, attention, decode_context):
    """One row per distinct layer kind: how many layers, its attention and MLP labels, and the
    forward FLOPs per token of ONE such layer: in a sequence of s tokens under the convention
    (core pairs / s), and in a decode step at `decode_context`."""
    h, s, rows = spec["hidden_size"], seq_len, []
    for layer, count, first in layer_groups(spec):
        per_tok = dict(layer_linear_flops_per_token(layer, h=h))
        per_tok.update({k: v / s for k, v in layer_core_flops(layer, seq_len=s, attention=attention).items()})
        dec = sum(layer_linear_flops_per_token(layer, h=h).values()) + sum(
            sum(attention_core_flops(a, pairs=decode_keys_read(a, context=decode_context)).values())
            for a in layer["attention"])
        rows.append({"layers": count, "first_layer": first,
                     "attention": " + ".join(attention_kind(a) for a in layer["attention"]),
                     "mlp": " + ".join(mlp_kind(m) for m in layer["mlp"]),
                     "forward_flops_per_token": sum(per_tok.values()),
                     "forward_breakdown_flops_per_token": per_tok,
                     "decode_flops_per_token": dec})
    return rows


def train_time_s(*, flops, num_gpus, peak_flops_per_s, utilization):
    """Wall time = FLOPs / (GPUs x peak x utilization): model FLOPs with MFU, or hardware FLOPs with
    HFU (Chowdhery et al. 2022 App. B; Narayanan et al. 2021 sec. 5.1 uses 8 T P / (n X))."""
    return flops / (num_gpus * peak_flops_per_s * utilization)


# --- output helpers ----------------------------------------------------------------------------

def human_flops(x):
    """1.23e18 -> '1.23 EFLOP' (decimal prefixes)."""
    for div, unit in ((1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"),
                      (1e6, "M"), (1e3, "K")):
        if abs(x) >= div:
            return f"{x / div:.2f} {unit}FLOP"
    return f"{x:.0f} FLOP"


def human_count(n):
    """12345678 -> '12.35 M' (decimal)."""
    for div, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n}"


def human_time(sec):
    if sec >= 2 * SECONDS_PER_DAY:
        return f"{sec / SECONDS_PER_DAY:.1f} days"
    if sec >= 2 * 3600:
        return f"{sec / 3600:.1f} hours"
    return f"{sec:.1f} s"


_RECOMPUTE_SOURCE = {"default": "the cookbook default; -ca turns it off", "-ca": "set by -ca",
                     "--recompute": "set by --recompute"}


def convention(attns, *, attention, default, zero_experts):
    """The convention line: what is counted, and how each attention kind present is scored."""
    spans = {a["span"] for a in attns}
    dsa = any(a["index_topk"] for a in attns)
    if attention == "full":
        att = "s x s query-key pairs per layer, masked or not, as eager attention computes them"
        masks = ([n for n in ("sliding", "chunked") if n in spans]) + (["top-k"] if dsa else [])
        if masks:
            att += "; " + ", ".join(masks) + " masks included"
    else:
        att = "the pairs a kernel that skips masked blocks executes: s(s+1)/2 on a full layer"
        if "sliding" in spans:
            att += "; sliding layers: at most the window per query"
        if "chunked" in spans:
            att += "; chunked layers: the keys of the query's own chunk"
        if dsa:
            att += "; DSA layers: the indexer's top-k (the indexer itself scores all s(s+1)/2)"
    text = (f"matmul FLOPs only, 2 per multiply-accumulate (as torch FlopCounterMode); attention "
            f"{attention} ({att}{', the default' if default else ''}); ")
    if dsa:
        text += ("lightning-indexer scores and projections on their own lines, its backward 1 x "
                 "(projections) and 2 x (scores) forward, as trained on a detached input; ")
    if "state" in spans:
        text += ("Gated DeltaNet layers: projections, conv and the chunked algorithm's products per "
                 f"chunk of {GDN_CHUNK} (state_core, the same under both conventions), decode one "
                 "recurrent step (6 d_k d_v per value head), constant in context; ")
    if zero_experts:
        text += ("routed experts in expectation: k E / (E + Z) real experts per token with Z "
                 "zero-computation experts (uniform routing); ")
    return text + ("decode reads each layer's keys (all, at most the window, its chunk's, or top-k); "
                   "output head at every position, embedding lookup excluded; backward = 2 x "
                   "forward; model FLOPs = fwd + bwd (MFU), hardware FLOPs add recompute (HFU).")


def inference_lines(res):
    """The inference section: a request's prefill, one decode step, and generating its tokens."""
    inf = res["inference"]
    lines = ["", f"Inference (forward only; attention {res['attention_flops']} in prefill):"]
    rows = ((f"prefill, {inf['prompt_tokens']:,} prompt tokens", "prefill_flops"),
            (f"decode 1 token at context {inf['decode_context']:,}", "decode_flops_per_token"),
            (f"generate {inf['output_tokens']:,} tokens (prefill+decode)", "generate_flops"))
    for label, key in rows[:3 if inf["output_tokens"] else 2]:  # -o 0 generates nothing: no row
        lines.append(f"  {label:<38}{inf[key]:>12.4e}{human_flops(inf[key]):>15}")
    return lines


def format_report(res):
    """Aligned human-readable report of the dict main returns."""
    spec, lines = res["model"], []
    T, fwd = res["tokens"], res["forward_flops"]
    b, s = res["batch_size"], res["sequence_length"]
    if res["infer"]:
        mode = "forward only (--infer): no backward, no recompute"
    else:
        mode = f"training, recompute {res['recompute']} ({_RECOMPUTE_SOURCE[res['recompute_source']]})"
    lines.append(f"Mode: {mode}; -b {b} is the global batch, in sequences per iteration "
                 f"({b:,} x s {s:,} = {b * s:,} tokens)")
    for w in res["warnings"]:
        lines.append(f"WARNING: {w}")
    lines.append(f"Model: {spec['described']}")
    lines.append(f"  shape: L={spec['num_layers']} h={spec['hidden_size']} a={spec['num_attention_heads']} "
                 f"kv={spec['num_kv_heads']} f={spec['ffn_hidden_size']} V={spec['vocab_size']}"
                 + (f" MoE E={spec['num_experts']} k={spec['topk']} on {len(spec['moe_layers'])} layers"
                    if spec["moe"] else "")
                 + ("  MLA" if spec.get("kv_lora_rank") else ""))
    if res["infer"] and not res["tokens_given"]:  # a request's FLOPs; no T-token run nobody asked for
        lines.append(f"forward of one sequence of s = {s:,} tokens: {res['forward_flops_per_sequence']:.4e} "
                     f"({human_flops(res['forward_flops_per_sequence']).strip()})")
        lines += inference_lines(res)
        lines.append("(--tokens T adds the forward FLOPs of T tokens, the cookbook's -i total)")
        lines.append("Convention: " + res["convention"])
        return "\n".join(lines)
    lines.append(f"Run: T={T:,} tokens, s={res['sequence_length']}, b={res['batch_size']} -> "
                 f"{res['iterations']:,.6g} iterations; recompute={res['recompute']}; "
                 f"attention FLOPs={res['attention_flops']}" + (" (default)" if res["attention_flops_default"] else "")
                 + ("; --infer: forward only" if res["infer"] else ""))
    lines.append("")
    lines.append(f"{'forward, by component (all tokens)':<36}{'FLOPs':>14}{'':>15}{'% fwd':>8}")
    for name, val in res["forward_breakdown_flops"].items():
        if val or name in ("attention_projections", "attention_scores", "attention_context", "output_head"):
            lines.append(f"  {name.replace('_', ' '):<34}{val:>14.4e}{human_flops(val):>15}"
                         f"{100 * val / fwd if fwd else 0:>7.2f}%")
    lines.append("-" * 73)
    kinds = res["layer_kinds"]
    if len(kinds) > 1 or " " in kinds[0]["attention"]:  # several kinds, or one that is not plain
        lines.append(f"{'layer kinds (FLOPs per token of one layer)':<60}{'forward':>12}{'decode':>12}")
        for k in kinds:
            label = f"{k['layers']:>4} x {k['attention']} | {k['mlp']}"
            lines.append(f"  {label:<58}{k['forward_flops_per_token']:>12.4e}"
                         f"{k['decode_flops_per_token']:>12.4e}")
        lines.append(f"  (forward: in a sequence of s = {s:,} under attention {res['attention_flops']}; "
                     f"decode: at context {res['inference']['decode_context']:,})")
        lines.append("-" * 73)
    for label, key in (("Forward", "forward_flops"), ("Backward (2 x forward" + (", indexer apart)" if res["forward_breakdown_flops"]["indexer_projections"] else ")"), "backward_flops"),
                       (f"Recompute ({res['recompute']})", "recompute_flops"),
                       ("Model FLOPs (fwd + bwd; MFU)", "model_flops"),
                       ("Hardware FLOPs (+ recompute; HFU)", "hardware_flops")):
        lines.append(f"{label:<36}{res[key]:>14.4e}{human_flops(res[key]):>15}")
    lines.append(f"{'Per iteration (model / hardware)':<36}{res['model_flops_per_iteration']:>14.4e}"
                 f"{res['hardware_flops_per_iteration']:>14.4e}")
    lines.append("")
    c = 2 if res["infer"] else 6
    lines.append(f"Rules of thumb vs the exact model FLOPs (N = {res['params_for_rule']:,} params, "
                 f"{res['params_for_rule_kind']}; D = T):")
    rules = [(f"{c}*N*D", res["six_n_d_flops"]),
             (f"{c}*N*D + attention ({res['attention_flops']})", res["six_n_d_plus_attention_flops"])]
    if res.get("six_n_active_d_flops"):
        rules.append((f"{c}*N_active*D (N_active {human_count(res['active_params'])})",
                      res["six_n_active_d_flops"]))
    for label, val in rules:
        lines.append(f"  {label:<34}{val:>14.4e}   exact / rule = {res['model_flops'] / val:.4f}")
    if res["show_inference"]:
        lines += inference_lines(res)
    t = res["time"]
    lines.append("")
    if t:
        util = f"MFU {t['mfu']:.3f}" if t["utilization_kind"] == "mfu" else f"HFU {t['hfu']:.3f}"
        lines.append(f"Time on {t['num_gpus']:,} GPUs at {t['peak_flops_per_s'] / 1e12:,.1f} TFLOP/s peak "
                     f"({t['peak_source']}), {util}{' (default)' if t['mfu_default'] else ''}:")
        lines.append(f"  wall time {human_time(t['wall_time_s'])} ({t['wall_time_s']:,.0f} s), "
                     f"{t['gpu_hours']:,.0f} GPU-hours"
                     + (f", cost {dollars(t['cost'])} at {dollars(t['cost_per_gpu_hour'])}/GPU-hour"
                        if t["cost"] is not None else ""))
        if t["mfu_default"] and t["layout_command"]:
            lines.append(f"  (MFU {t['mfu']:.2f} is an assumption, not this model's; the step-time model costs "
                         "each layout on these GPUs and finds the fastest:")
            lines.append(f"   {t['layout_command']})")
        elif t["mfu_default"]:
            lines.append(f"  (MFU {t['mfu']:.2f} is an assumption, not this model's: pass --mfu)")
    else:
        lines.append("Time: pass --gpu NAME or --peak-tflops X (and --num-gpus N, --mfu) for wall time "
                     "and GPU-hours.")
    lines.append("Convention: " + res["convention"])
    return "\n".join(lines)


def build_parser():
    parser = OneLineErrorParser(description=__doc__)
    add_model_args(parser)
    g = parser.add_argument_group("training run (cookbook flags)")
    g.add_argument("--sequence-length", "-s", type=bounded_int, default=2048, help="s (default 2048)")
    g.add_argument("--batch-size", "-b", type=bounded_int, default=1,
                   help="global batch size in samples; sets iterations = T / (b s) (default 1)")
    g.add_argument("--tokens", type=count_float, default=None,
                   help="T, tokens to train on: 300e9, 300B or 2T (default 300e9)")
    g.add_argument("--no-checkpoint-activations", "-ca", action="store_false", dest="checkpoint_activations",
                   help="no activation recomputation (the cookbook default is full recompute)")
    g.add_argument("--recompute", choices=("none", "selective", "full"), default=None,
                   help="activation recomputation (default full, the cookbook's; none with -ca)")
    g.add_argument("--attention-flops", choices=("full", "causal"), default=None,
                   help="all s x s query-key pairs per layer, masked or not (full, default), or "
                   "those a masked kernel runs (causal: s(s+1)/2, capped by window/chunk/top-k)")
    g.add_argument("--infer", "-i", action="store_true",
                   help="forward-only FLOPs for the --tokens (cookbook), and show the inference section")
    g = parser.add_argument_group("inference")
    g.add_argument("--prompt-tokens", type=bounded_int, default=None, help="prefill length P (default s)")
    g.add_argument("--output-tokens", "-o", type=bounded_int, default=None, help="tokens to generate o (default 0)")
    g.add_argument("--decode-context", type=bounded_int, default=None,
                   help="cached keys a decode step attends to, its own included (default P + 1)")
    g = parser.add_argument_group("time and cost")
    g.add_argument("--num-gpus", type=bounded_int, default=None, help="GPUs training together (default 1)")
    g.add_argument("--gpu", default=None, help="accelerator name looked up in hardware.py (beside this script)")
    g.add_argument("--dtype", default="bf16", help="peak-FLOP/s column of hardware.py for --gpu (default bf16)")
    g.add_argument("--peak-tflops", type=finite_float, default=None, help="dense peak TFLOP/s per GPU")
    g.add_argument("--mfu", type=finite_float, default=None,
                   help=f"model FLOPs utilization (default {DEFAULT_MFU}; see the docstring)")
    g.add_argument("--hfu", type=finite_float, default=None,
                   help="hardware FLOPs utilization instead of --mfu (time from hardware FLOPs)")
    g.add_argument("--cost-per-gpu-hour", type=finite_float, default=None, help="price of one GPU-hour, in dollars")
    add_output_args(parser)
    parser.epilog = lambda: ranges_epilog(parser, FLAG_RANGES)  # built only for --help
    return parser


def validate(args, parser):
    """One-line parser.error for every bad input (exit 2)."""
    for name in ("sequence_length", "batch_size", "prompt_tokens", "num_gpus", "decode_context"):
        val = getattr(args, name)
        if val is not None and val <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {val}")
    tokens = run_tokens(args)
    if not tokens > 0 or tokens != int(tokens):
        parser.error(f"--tokens must be a positive whole number, got {tokens:g}")
    if args.output_tokens is not None and args.output_tokens < 0:
        parser.error(f"--output-tokens must not be negative, got {args.output_tokens}")
    if not args.checkpoint_activations and args.recompute not in (None, "none"):
        parser.error(f"--no-checkpoint-activations (-ca) contradicts --recompute {args.recompute}")
    if args.mfu is not None and args.hfu is not None:
        parser.error("give --mfu or --hfu, not both")
    if args.gpu is not None and args.peak_tflops is not None:
        parser.error("give --gpu or --peak-tflops, not both")
    if args.peak_tflops is not None and args.peak_tflops <= 0:
        parser.error(f"--peak-tflops must be positive, got {args.peak_tflops}")
    if args.cost_per_gpu_hour is not None and args.cost_per_gpu_hour < 0:
        parser.error(f"--cost-per-gpu-hour must not be negative, got {args.cost_per_gpu_hour}")
    check_ranges(args, parser, FLAG_RANGES)


def run_tokens(args):
    """T, the tokens to train on: --tokens, else DEFAULT_TOKENS."""
    return DEFAULT_TOKENS if args.tokens is None else args.tokens


def training_time_command(args, parser):
    """The calc_training_time.py command that costs this run's step on its GPUs (the layout's own
    MFU, --search for the fastest layout), from the flags given: the model flags as typed, the
    sequence, the global batch (-b here is samples), the tokens and the GPUs."""
    words = [f"-s {args.sequence_length}", f"--tokens {number_text(run_tokens(args))}",
             f"--num-gpus {args.num_gpus or 1}", f"--global-batch-size {args.batch_size}"]
    last = ([] if args.gpu else [f"--peak-tflops {args.peak_tflops:g}"]) + (
        [f"--dtype {args.dtype}"] if args.dtype != "bf16" else [])
    return script_command("calc_training_time.py", parser, args, words=words,
                          last=last + ["--search"])  # the search tries each recompute mode itself


def peak_from_hardware(args, parser):
    """Dense peak FLOP/s of --gpu at --dtype from hardware.py (imported only here)."""
    rec = accelerator_record(args.gpu, parser, without="pass --peak-tflops X instead")
    peak = (rec.get("peak_flops_per_s") or {}).get(args.dtype)
    if not peak:
        parser.error(f"hardware.py has no {args.dtype} peak for {rec.get('name', args.gpu)}; "
                     "pass --dtype with another column or --peak-tflops X")
    return peak, f"{rec.get('name', args.gpu)} {args.dtype} dense, hardware.py"


def recompute_mode(args):
    """(recompute mode, what set it): none for --infer or -ca, else --recompute, else full."""
    if args.infer:
        return "none", "--infer"
    if args.recompute is not None:
        return args.recompute, "--recompute"
    if not args.checkpoint_activations:
        return "none", "-ca"
    return "full", "default"


def inference_flops(spec, args, *, attention):
    """The inference section: prefill of P tokens, one decode step at the decode context, and o
    decode steps."""
    P = args.prompt_tokens or args.sequence_length
    o = args.output_tokens or 0
    ctx = args.decode_context or P + 1
    prefill, decode_total = generate_flops(spec, prompt_tokens=P, output_tokens=o,
                                           attention=attention)
    return {"prompt_tokens": P, "output_tokens": o, "decode_context": ctx,
            "prefill_flops": prefill,
            "decode_flops_per_token": decode_flops_per_token(spec, context=ctx),
            "decode_flops_total": decode_total,
            "generate_flops": prefill + decode_total if o else 0}


def time_and_cost(args, parser, *, model, hardware_total):
    """Wall time, GPU-hours and cost of the run on --gpu or --peak-tflops at the MFU (or HFU);
    None when neither is given."""
    if args.gpu is None and args.peak_tflops is None:
        return None
    if args.gpu is not None:
        peak, source = peak_from_hardware(args, parser)
    else:
        peak, source = args.peak_tflops * 1e12, "--peak-tflops"
    n = args.num_gpus or 1
    if args.hfu is not None:
        kind, util, flops = "hfu", args.hfu, hardware_total
    else:
        kind, util, flops = "mfu", args.mfu or DEFAULT_MFU, model
    wall = train_time_s(flops=flops, num_gpus=n, peak_flops_per_s=peak, utilization=util)
    gpu_h = wall * n / 3600
    return {"num_gpus": n, "peak_flops_per_s": peak, "peak_source": source,
            "utilization_kind": kind,
            "mfu": util if kind == "mfu" else model / hardware_total * util,
            "hfu": util if kind == "hfu" else hardware_total / model * util,
            "mfu_default": kind == "mfu" and args.mfu is None,
            "wall_time_s": wall, "wall_time_days": wall / SECONDS_PER_DAY, "gpu_hours": gpu_h,
            "cost_per_gpu_hour": args.cost_per_gpu_hour,
            "cost": gpu_h * args.cost_per_gpu_hour if args.cost_per_gpu_hour is not None else None,
            "layout_command": None if args.infer else training_time_command(args, parser)}


def flops_result(spec, args, parser):
    """The result dict main returns and prints: training FLOPs of T tokens (forward, backward,
    recompute; model and hardware), the 6ND rules beside them, the inference section, time."""
    s, b, T = args.sequence_length, args.batch_size, int(run_tokens(args))
    attention = args.attention_flops or "full"
    recompute, recompute_source = recompute_mode(args)
    groups = layer_groups(spec)
    has_moe = any(m["kind"] == "moe" for layer, _, _ in groups for m in layer["mlp"])
    has_zero = any(m["kind"] == "moe" and m["zero_experts"]
                   for layer, _, _ in groups for m in layer["mlp"])
    attns = [a for layer, _, _ in groups for a in layer["attention"]]

    # One sequence of s tokens, then scaled to T tokens (T / s sequences; exact when s divides T).
    seq = sequence_forward_flops(spec, seq_len=s, attention=attention)
    scale = (lambda x: x * T // s) if T % s == 0 else (lambda x: round(x * T / s))  # noqa: E731
    fwd_parts = {k: scale(v) for k, v in seq.items()}
    fwd = sum(fwd_parts.values())
    bwd = 0 if args.infer else backward_flops(fwd_parts)
    rec = 0 if args.infer else recompute_flops(fwd_parts, recompute=recompute)
    model, hardware_total = fwd + bwd, fwd + bwd + rec
    iterations = T / (b * s)

    pb = param_breakdown(spec)
    c = 2 if args.infer else 6
    n_rule = pb["total_params"]
    core_full_per_token = sum(seq[k] for k in CORE_KEYS) / s
    six_nd = c * n_rule * T
    six_nd_attn = six_nd + (c // 2) * core_full_per_token * T
    inference = inference_flops(spec, args, attention=attention)
    return {"model": spec_summary(spec), "warnings": list(spec["warnings"]),
            "tokens": T, "sequence_length": s, "batch_size": b, "iterations": iterations,
            "infer": args.infer, "tokens_given": args.tokens is not None, "recompute": recompute,
            "recompute_source": recompute_source,
            "attention_flops": attention,
            "attention_flops_default": args.attention_flops is None,
            "forward_breakdown_flops": fwd_parts,
            "forward_flops": fwd, "backward_flops": bwd, "recompute_flops": rec,
            "model_flops": model, "hardware_flops": hardware_total,
            "model_flops_per_iteration": model / iterations,
            "hardware_flops_per_iteration": hardware_total / iterations,
            "forward_flops_per_sequence": sum(seq.values()),
            "layer_kinds": layer_kind_flops(spec, seq_len=s, attention=attention,
                                            decode_context=inference["decode_context"]),
            "total_params": pb["total_params"], "active_params": pb["active_params"],
            "params_for_rule": n_rule,
            "params_for_rule_kind": "total, as 6ND is usually quoted" if not has_moe else
                                    "total incl. all experts, as 6ND is usually quoted",
            "six_n_d_flops": six_nd, "six_n_d_plus_attention_flops": six_nd_attn,
            "six_n_active_d_flops": c * pb["active_params"] * T if has_moe else None,
            "show_inference": bool(args.infer or args.prompt_tokens or args.output_tokens
                                   or args.decode_context),
            "inference": inference,
            "time": time_and_cost(args, parser, model=model, hardware_total=hardware_total),
            "convention": convention(attns, attention=attention,
                                     default=args.attention_flops is None, zero_experts=has_zero)}


def main(argv=None):
    parser = build_parser()
    args = parse_tool_args(parser, argv)
    validate(args, parser)
    # The model defaults are every script's (experts in every layer, -ei 1; 8 experts, top-1); the
    # cookbook's flops script alone took -e 128 -ei 2 (README, "Flags shared by name").
    with calc_errors(parser):
        spec, notes = resolve_model_spec(vars(args))
    res = flops_result(spec, args, parser)
    for note in notes:  # only now: --gpu's checks come later, and an error must stay one line
        print(f"note: {note}", file=sys.stderr)
    print_warnings(res["warnings"], as_json=args.json or args.brief)
    print_result(res, as_json=args.json, report=format_report, brief=brief_line if args.brief else None)
    return res


def brief_line(res):
    """--brief: the training FLOPs, or a request's prefill FLOPs for --infer without --tokens."""
    if res["tokens_given"] or not res["infer"]:
        return f"{brief_number(float(res['model_flops']))} FLOPs"
    return f"{brief_number(float(res['inference']['prefill_flops']))} FLOPs per prefill"


if __name__ == "__main__":
    run_tool(main)
