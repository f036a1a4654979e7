"""Speculative decoding and multi-token prediction: a draft proposes K tokens per decoding
sequence, the target verifies them in one pass of K + 1 tokens, and the sequence keeps the
accepted run plus one token of the target's own (Leviathan et al. 2023, "Fast Inference from
Transformers via Speculative Decoding", sec. 3; Chen et al. 2023). Decode then runs at the speed of
accepted tokens: TPOT = (verification step + draft) / tokens per step.

The draft's cost by method: `mtp` the model's own multi-token-prediction module (DeepSeek-V3's,
GLM-4.5's, Qwen3-Next's: one decoder layer of the model's last kind and the shared output head,
run K times per step, as vLLM and SGLang reuse one MTP layer for K > 1); `eagle` an EAGLE head
(one decoder layer of the target's shape and the output head, K times: EAGLE-3's draft for
Llama-3.1-8B is one LlamaDecoderLayer); `draft` a smaller model given by its config, K passes;
`ngram` prompt lookup on the host, no GPU work."""

import math

from .forward import forward_pass, logit_rows_costs, roofline_time_s


# Measured acceptance rates the script defaults to, by method (draft and ngram need --acceptance-rate:
# a draft model's rate depends on the pair, prompt lookup's on how much the output repeats the
# prompt; no figure carries over):
#   mtp: DeepSeek-V3 technical report (arXiv 2412.19437), sec. 5.4.3: "the acceptance rate of the
#     second token prediction ranges between 85% and 90% across various generation topics"; the
#     midpoint. The same section measures the result: 1.8 x the tokens per second.
#   eagle: EAGLE-3's head for Llama-3.1-8B-Instruct in vLLM V1 on MT-bench (vLLM issue #20780, chain
#     drafts at batch 1): mean acceptance lengths 2.36, 2.79, 3.08, 3.32, 3.46, 3.54 at K = 2..7, the
#     i.i.d. rates 0.769, 0.763, 0.755, 0.754, 0.749, 0.744 give them exactly (Leviathan eq. 1); 0.75.
#     EAGLE-1's head in the same runs: 2.10-2.47, i.e. 0.60-0.66 (give it with --acceptance-rate).
# Both speedups are judged in VALIDATION.md (DeepSeek-V3's MTP; vLLM #20780's EAGLE-1 and EAGLE-3).
DEFAULT_ACCEPTANCE = {"mtp": (0.875, "DeepSeek-V3 technical report sec. 5.4.3: 85-90% for the second token "
                                     "(midpoint)"),
                      "eagle": (0.75, "EAGLE-3, Llama-3.1-8B-Instruct on MT-bench in vLLM (issue #20780): "
                                      "acceptance lengths 2.36-3.54 at K 2-7, i.e. 0.74-0.77 per token")}
SPECULATIVE_METHODS = ("mtp", "eagle", "draft", "ngram")


def tokens_per_step(rates):
    """Expected tokens a sequence gains per verification step with per-position acceptance rates
    a_1..a_K (a_i: the chance that draft token i is accepted given that the ones before it were):
    1 + a_1 + a_1 a_2 + ... + a_1...a_K (the accepted run, then the target's own token; Leviathan
    et al. 2023, eq. 1 with a_i = alpha)."""
    out, run = 1.0, 1.0
    for a in rates:
        run *= a
        out += run
    return out


def speculative_decode_steps(*, output_tokens, tokens_per_step, whole):
    """Decode steps + 1 a request of o output tokens runs with speculative decoding: the first token
    from its prefill, the other o - 1 at the expected tokens_per_step per verification step,
    1 + (o - 1) / tokens_per_step (the mean; whole=True rounds the steps up, as a stepped
    simulation runs whole steps). Without speculation it is o."""
    n = (output_tokens - 1) / tokens_per_step
    return 1 + (math.ceil(n) if whole else n)


# Output tokens past which expected_verification_steps extends its exact count linearly (renewal
# theory: the expected steps to n tokens is n / E[tokens per step] plus a constant, Feller 1971
# vol. II ch. XI); the exact count costs n x K additions.
EXACT_STEPS_UP_TO = 4096


def tokens_per_step_distribution(rates):
    """P(a verification step yields j tokens), j = 1 .. K + 1: the first j - 1 drafts accepted,
    the j-th rejected (the target's own token ends the run), or all K accepted plus the target's
    bonus token (Leviathan et al. 2023, sec. 3.1)."""
    out, run = [], 1.0
    for a in rates:
        out.append(run * (1 - a))
        run *= a
    return out + [run]


def expected_verification_steps(*, tokens, rates):
    """Expected verification steps to produce `tokens` output tokens (o - 1 after the prefill's
    first): a step yields 1 .. K + 1 tokens (tokens_per_step_distribution) and the request stops
    at its output length, so a short output cannot use a whole step's tokens: E(n) = 1 + sum_j
    P(j) E(n - j), E(n <= 0) = 0. At least ceil(n / (K + 1)) steps, never fewer (1 at n = 1,
    where tokens / tokens_per_step would give a fraction of a step); n / tokens_per_step for long
    outputs."""
    if tokens <= 0:
        return 0.0
    p = tokens_per_step_distribution(rates)
    n = min(tokens, EXACT_STEPS_UP_TO)
    e = [0.0] * (n + 1)
    for m in range(1, n + 1):
        e[m] = 1.0 + sum(pj * e[m - j] for j, pj in enumerate(p, 1) if m - j > 0)
    return e[n] + (tokens - n) / tokens_per_step(rates)


def draft_weight_bytes(info, *, tp, dp, ep, w_bits, e_bits=None):
    """Weight bytes per GPU the draft adds to the target's: an MTP module or EAGLE head is one
    decoder layer (its embedding and head shared with the target's), a draft model all its
    weights at the target's tp (at w_bits, its experts unsplit), ngram none."""
    from .memory import layer_weight_bytes, weight_bytes_per_gpu  # only speculative decoding
    d = info.get("draft_spec")
    if d is None:
        return 0
    if info["method"] == "draft":
        return weight_bytes_per_gpu(d, tp=tp, pp=1, w_bits=w_bits)
    return layer_weight_bytes(d["layers"][0], h=d["hidden_size"], norm=d["norm"], tp=tp,
                              w_bits=w_bits, e_bits=e_bits, ep=ep, etp=tp * dp // ep)


def acceptance_rates(text, k):
    """--acceptance-rate as K per-position rates: one value (every position alike, the i.i.d.
    assumption of Leviathan et al.) or K comma-separated values. Raises ValueError (one line)."""
    try:
        vals = [float(x) for x in str(text).split(",")]
    except ValueError:
        raise ValueError(f"--acceptance-rate {text!r}: give one number or {k} comma-separated numbers") from None
    if len(vals) not in (1, k):
        raise ValueError(f"--acceptance-rate has {len(vals)} values; give one or {k} (one per speculative token)")
    if any(not (0 <= v <= 1) or math.isnan(v) for v in vals):
        raise ValueError(f"--acceptance-rate values must be between 0 and 1, got {text}")
    return vals * k if len(vals) == 1 else vals


def draft_layer_spec(spec):
    """The model as one decoder layer of its last kind: what an MTP module or an EAGLE head runs
    per draft token (their embedding projection, 2h x h, is not costed: under 1/10 of a layer)."""
    return dict(spec, layers=[spec["layers"][-1]], num_layers=1)


def draft_step_s(info, hw, *, batch, context, tp, pp, bits, dp=1, ep=1):
    """The draft's time per verification step for `batch` decoding sequences at `context` cached
    tokens: K forward passes of one token each through the draft (info["draft_spec"]; none for
    ngram), plus the K extra logit rows the target's head computes to verify them (forward_pass
    costs one row per sequence). One stage (the draft runs beside the last pipeline stage)."""
    k = info["k"]
    if not batch:
        return 0.0
    t = 0.0
    if info["draft_spec"] is not None:
        dbits = dict(bits, e_bits=None) if info["method"] == "draft" else bits
        t = k * forward_pass(info["draft_spec"], hw, tp=tp, pp=1, batch=batch, new_tokens=1, context_before=context,
                             absorbed=True, dp=dp, ep=ep if info["method"] != "draft" else 1, **dbits)["time_s"]
    fl, by = logit_rows_costs(info["target_spec"], rows=k * batch / dp, tp=tp)
    t += roofline_time_s(flops=fl, bytes_moved=by, flops_per_s=hw["flops_per_s"], bytes_per_s=hw["bytes_per_s"])
    return t
