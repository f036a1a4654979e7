"""Speculative decoding and MTP in calc_inference_latency.py (issue 34): the expected tokens per
verification step against Leviathan et al.'s closed form, DeepSeek-V3's measured MTP speedup at its
stated acceptance rate, the draft's cost by method, and the exit-2 rules of the new flags."""
import os

import pytest

import calc_inference_latency as cil
from conftest import json_main
from llmcalc.serve.speculative import acceptance_rates, tokens_per_step

HERE = os.path.dirname(os.path.abspath(__file__))
CFG = os.path.join(HERE, "fixtures", "configs")
L8 = ["--hf_model_name_or_path", os.path.join(CFG, "llama-3.1-8b.json")]
DSV3 = ["--hf_model_name_or_path", os.path.join(CFG, "deepseek-v3.json")]


def run(argv):
    return json_main(cil.main, argv)


@pytest.mark.parametrize("a,k", [(0.6, 1), (0.8, 3), (0.9, 5), (0.5, 8)])
def test_tokens_per_step_is_leviathans_closed_form(a, k):
    # Leviathan, Kalman & Matias 2023, eq. (1): E[tokens per step] = (1 - a^(K+1)) / (1 - a) for an
    # i.i.d. acceptance rate a and K draft tokens
    assert tokens_per_step(acceptance_rates(str(a), k)) == pytest.approx((1 - a ** (k + 1)) / (1 - a), rel=1e-12)


@pytest.mark.parametrize("a", [0.85, 0.90])
def test_deepseek_v3_mtp_speedup_matches_the_technical_report(a):
    # DeepSeek-V3 technical report (arXiv 2412.19437) sec. 5.4.3: one MTP module predicting the
    # second token, accepted 85-90% of the time, gives 1.8x the tokens per second. Its decode
    # instances run decode-only steps (prefill and decode are deployed apart, sec. 3.4) with
    # data-parallel attention and expert parallelism: here FP8 on H800s, -tp 1 -dp 32 -ep 32, a
    # decode batch of 2,048. Tolerance 10% (the report's single figure over its deployment)
    base = DSV3 + ["--gpu", "h800", "--precision", "fp8", "-tp", "1", "-dp", "32", "-ep", "32", "-b", "2048",
                   "-s", "1000", "-o", "200"]
    plain = run(base)["decode_per_token_s"]
    mtp = run(base + ["--speculative-tokens", "1", "--acceptance-rate", str(a)])
    assert mtp["speculative"]["method"] == "mtp"  # read from the config's num_nextn_predict_layers
    assert plain / mtp["decode_per_token_s"] == pytest.approx(1.8, rel=0.10)


def test_mtp_default_acceptance_is_deepseeks_and_named():
    res = run(DSV3 + ["--gpu", "h100", "--precision", "fp8", "-tp", "8", "-s", "100", "-o", "20",
                      "--speculative-tokens", "1"])
    assert res["speculative"]["acceptance_rates"] == [0.875]
    assert "DeepSeek-V3" in res["speculative"]["acceptance_source"]


def test_eagle_default_acceptance_is_vllms_eagle3_measurement_and_named():
    res = run(L8 + ["--gpu", "h100", "-b", "1", "-s", "128", "-o", "64", "--speculative-tokens", "4",
                    "--speculative-method", "eagle"])
    assert res["speculative"]["acceptance_rates"] == [0.75] * 4
    assert "#20780" in res["speculative"]["acceptance_source"]
    # the default reproduces the measured acceptance length at K = 4 (3.08) within 2%
    assert res["speculative"]["tokens_per_step"] == pytest.approx(3.08, rel=0.02)


def _iid_rate(acceptance_length, k):
    """The i.i.d. acceptance rate a with 1 + a + ... + a^k = the measured mean acceptance length
    (Leviathan et al. eq. 1): how a published acceptance length becomes our --acceptance-rate."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sum(mid ** i for i in range(k + 1)) < acceptance_length else (lo, mid)
    return lo


# vLLM issue #20780 (ekagra-ranjan, 2025-07-10): Llama-3.1-8B-Instruct on MT-bench, batch 1, vLLM V1
# chain drafts of K tokens (num_speculative_tokens), EAGLE-1 (yuhuili/EAGLE-LLaMA3.1-Instruct-8B)
# and EAGLE-3 (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B) heads: mean acceptance length (AL) and TPOT per K,
# vanilla TPOT 7.07 ms. The GPU is the H100 of the same author's EAGLE-3 runs (vLLM PR #16937,
# "Output tokens/s on H100 BS1"); the issue does not restate it. MT-bench prompts and outputs taken
# as 128 and 256 tokens (not stated; at batch 1 an 8B's step barely moves with them). Each AL
# becomes the i.i.d. rate that gives it at that K. Judged: the TPOT speedup over vanilla, within
# 20% (the serving table's bar). Measured step time, TPOT x AL, grows ~1.0 ms per draft token for
# EAGLE-3 and ~0.73 for EAGLE-1 plus ~1.3 / ~0.7 ms per verification step over vanilla; ours
# costs a draft pass 0.69 ms (one target layer and the full head) and verification ~nothing at
# batch 1, and our vanilla step is 8.42 ms against 7.07: so our speedups run high.
VLLM_20780_VANILLA_TPOT_MS = 7.07
VLLM_20780 = [  # (head, K, AL, TPOT ms, ours: speedup error)
    ("eagle1", 2, 2.10, 4.37, "+11.1%"), ("eagle1", 3, 2.29, 4.29, "+11.0%"), ("eagle1", 4, 2.39, 4.48, "+13.4%"),
    ("eagle1", 5, 2.43, 4.71, "+14.1%"), ("eagle1", 6, 2.45, 4.94, "+14.0%"), ("eagle1", 7, 2.47, 5.20, "+14.6%"),
    ("eagle3", 2, 2.36, 4.32, "+23.4%"), ("eagle3", 3, 2.79, 4.09, "+28.8%"), ("eagle3", 4, 3.08, 4.05, "+31.9%"),
    ("eagle3", 5, 3.32, 4.13, "+36.4%"), ("eagle3", 6, 3.46, 4.20, "+36.5%"), ("eagle3", 7, 3.54, 4.29, "+35.1%"),
]


@pytest.mark.parametrize("head,k,al,tpot_ms", [
    pytest.param(h, k, al, t, id=f"{h}-K{k}", marks=[] if h == "eagle1" else pytest.mark.xfail(
        strict=True, reason=f"miss, ours {err}: EAGLE-3's measured draft pass (~1.0 ms) and verification "
                            "overhead (~1.3 ms) exceed ours (0.69 ms, ~0)"))
    for h, k, al, t, err in VLLM_20780])
def test_eagle_speedup_against_vllm_issue_20780(head, k, al, tpot_ms):
    base = L8 + ["--gpu", "h100", "-b", "1", "-s", "128", "-o", "256"]
    plain = run(base)["decode_per_token_s"]
    spec = run(base + ["--speculative-tokens", str(k), "--speculative-method", "eagle",
                       "--acceptance-rate", f"{_iid_rate(al, k):.6f}"])
    assert spec["speculative"]["tokens_per_step"] == pytest.approx(al, rel=1e-4)
    assert plain / spec["decode_per_token_s"] == pytest.approx(VLLM_20780_VANILLA_TPOT_MS / tpot_ms, rel=0.20)


def test_draft_cost_by_method():
    # ngram drafts on the host: the step is the verification alone; an EAGLE head costs a layer per
    # draft token; a draft model (Qwen3-0.6B's shape) its whole forward pass per draft token
    base = L8 + ["--gpu", "h100", "-b", "4", "-s", "1000", "-o", "100", "--speculative-tokens", "3",
                 "--acceptance-rate", "0.7"]
    ngram = run(base + ["--speculative-method", "ngram"])
    eagle = run(base + ["--speculative-method", "eagle"])
    draft = run(base + ["--speculative-method", "draft", "--draft-model", os.path.join(CFG, "qwen3-0.6b.json")])
    d = {n: r["decode_first_step_components_s"]["speculative_draft"] for n, r in
         (("ngram", ngram), ("eagle", eagle), ("draft", draft))}
    assert d["ngram"] < d["eagle"] < d["draft"]
    assert d["ngram"] < 0.05 * ngram["decode_first_step_s"]  # only the 3 extra logit rows per sequence
    plain = run(L8 + ["--gpu", "h100", "-b", "4", "-s", "1000", "-o", "100"])["decode_per_token_s"]
    e = 1 + 0.7 + 0.49 + 0.343
    assert ngram["decode_per_token_s"] == pytest.approx(ngram["decode_first_step_s"] / e, rel=0.02)
    assert plain / eagle["decode_per_token_s"] > 1.5  # memory-bound at batch 4: close to e / (1 + draft)


def test_speculative_decoding_under_load_keeps_the_output_and_cuts_tpot():
    spec = ["--speculative-tokens", "2", "--speculative-method", "eagle", "--acceptance-rate", "0.8,0.6"]
    lengths = ["-s", "1000", "-o", "200"]  # a --dataset draws its own: -s/-o beside it are refused
    for load in (lengths + ["-c", "16"], lengths + ["-c", "16", "--num-requests", "200"],
                 ["--dataset", "random", "--random-input-len", "1000", "--random-output-len", "200",
                  "--num-requests", "200", "--request-rate", "4"]):
        base = L8 + ["--gpu", "h100"]
        a, b = run(base + load)["serving"], run(base + load + spec)["serving"]
        assert b["tpot_s"] < 0.75 * a["tpot_s"], load
        if "--num-requests" in load:
            assert b["num_requests"] == a["num_requests"]


@pytest.mark.parametrize("argv,says", [
    (["--acceptance-rate", "0.8", "-b", "1"], "add --speculative-tokens"),
    (["--speculative-tokens", "2"], "no MTP layers"),
    (["--speculative-tokens", "2", "--speculative-method", "mtp"], "no MTP layers"),
    (["--speculative-tokens", "2", "--speculative-method", "ngram"], "no measured default"),
    (["--speculative-tokens", "2", "--speculative-method", "draft", "--acceptance-rate", "0.7"], "needs it"),
    (["--speculative-tokens", "2", "--speculative-method", "eagle", "--acceptance-rate", "0.7,0.6,0.5"],
     "give one or 2"),
    (["--speculative-tokens", "2", "--speculative-method", "eagle", "--acceptance-rate", "1.5"], "between 0 and 1"),
    (["--speculative-tokens", "2", "--speculative-method", "ngram", "--acceptance-rate", "0.5", "--search"],
     "--search runs without"),
])
def test_speculative_flags_refused_in_one_line(argv, says, capsys):
    with pytest.raises(SystemExit) as exc:
        cil.main(L8 + argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and says in err[-1] and "Traceback" not in "".join(err)


# --- issue 44: per-token TPOT lines, the speedup, the draft in memory, whole steps when short ---
@pytest.mark.parametrize("rates", [[0.75] * 3, [0.9, 0.6], [0.5] * 5])
@pytest.mark.parametrize("n", [1, 2, 3, 7, 40])
def test_expected_verification_steps_match_a_simulated_acceptance_run(rates, n):
    # reference: draw the acceptances themselves (each draft token kept with its rate given the
    # ones before were, then the target's own token; Leviathan et al. 2023 sec. 3.1) until the
    # request has its n tokens; 40,000 runs, so the mean is within ~0.5% (3 sigma)
    import random
    from llmcalc.serve.speculative import expected_verification_steps
    rng, total = random.Random(1), 0
    for _ in range(40_000):
        done = steps = 0
        while done < n:
            steps += 1
            got = 1
            for a in rates:
                if rng.random() >= a:
                    break
                got += 1
            done += got
        total += steps
    got = expected_verification_steps(tokens=n, rates=rates)
    assert got == pytest.approx(total / 40_000, rel=0.01)


def test_long_outputs_take_leviathans_tokens_per_step():
    from llmcalc.serve.speculative import expected_verification_steps
    rates = [0.8, 0.7, 0.6]
    n = 100_000  # past the exact count's 4,096: its linear extension
    got = expected_verification_steps(tokens=n, rates=rates)
    assert got == pytest.approx(n / tokens_per_step(rates), rel=1e-3)


def test_tpot_per_token_never_below_one_verification_step_at_short_outputs(capsys):
    # issue 44: at 2 output tokens TPOT was 2.73 ms per token against an 11.20 ms verification step
    # (o - 1 = 1 token priced at a fraction of a step); one token takes one whole step
    base = L8 + ["--gpu", "h100", "-b", "1", "-s", "1000", "--speculative-tokens", "3",
                 "--speculative-method", "eagle"]
    r = run(base + ["-o", "2"])
    assert r["decode_per_token_s"] == pytest.approx(r["decode_first_step_s"], rel=1e-9)
    long = run(base + ["-o", "400"])  # long outputs: one step per Leviathan's tokens per step
    per_step = (1 - 0.75 ** 4) / (1 - 0.75)  # vLLM #20780's EAGLE-3 acceptance 0.75, K = 3
    assert long["decode_per_token_s"] == pytest.approx(long["decode_first_step_s"] / per_step,
                                                       rel=0.02)
    for o in (2, 3, 5, 9, 50):
        x = run(base + ["-o", str(o)])
        assert x["decode_per_token_s"] >= x["decode_first_step_s"] / 4 * (1 - 1e-9)  # K + 1 at most
    # the text shows per-token lines, the step apart, and the speedup
    cil.main(base + ["-o", "200"])
    out = capsys.readouterr().out
    assert "TPOT per token, first steps" in out and "TPOT first decode step" not in out
    assert "verification steps of" in out and "TPOT without speculation" in out and "speedup" in out


def test_speedup_is_against_the_same_batch_without_speculation():
    base = L8 + ["--gpu", "h100", "-b", "4", "-s", "1000", "-o", "200"]
    plain = run(base)
    sped = run(base + ["--speculative-tokens", "3", "--speculative-method", "eagle"])
    assert sped["decode_per_token_s_without_speculation"] == pytest.approx(
        plain["decode_per_token_s"], rel=1e-9)
    assert sped["speculative_speedup"] == pytest.approx(
        plain["decode_per_token_s"] / sped["decode_per_token_s"], rel=1e-9)
    under_load = run(L8 + ["--gpu", "h100", "-c", "16", "-s", "1000", "-o", "200",
                           "--speculative-tokens", "3", "--speculative-method", "eagle"])
    assert under_load["speculative_speedup"] > 1.2  # memory-bound at 16 decodes


def test_the_draft_models_weights_are_in_the_memory_total():
    # EAGLE's head is one LlamaDecoderLayer of the target's shape: Llama-3.1-8B has 8,030,261,248
    # parameters (Meta's model card, transformers' count), of which 2 x 128,256 x 4,096 are the
    # untied embedding and head and 4,096 the final norm; its 32 layers share the rest, so one
    # layer is 218,112,000 parameters, 436,224,000 bytes at bf16
    base = L8 + ["--gpu", "h100", "-b", "1", "-s", "1000", "-o", "100"]
    plain = run(base)
    eagle = run(base + ["--speculative-tokens", "3", "--speculative-method", "eagle"])
    layer = (8_030_261_248 - 2 * 128_256 * 4_096 - 4_096) // 32
    assert eagle["draft_weight_bytes_per_gpu"] == 2 * layer
    grew = eagle["memory_bytes_per_gpu"] - plain["memory_bytes_per_gpu"]
    assert grew == pytest.approx(2 * layer, rel=1e-3)
    # a draft model: Qwen3-0.6B (0.6B parameters, its model card) beside Qwen3-8B, all of it
    q8 = ["--hf_model_name_or_path", os.path.join(CFG, "qwen3-8b.json"), "--gpu", "h100", "-b", "1",
          "-s", "1000", "-o", "100"]
    d = run(q8 + ["--speculative-tokens", "3", "--speculative-method", "draft", "--draft-model",
                  os.path.join(CFG, "qwen3-0.6b.json"), "--acceptance-rate", "0.7"])
    assert d["draft_weight_bytes_per_gpu"] == pytest.approx(2 * 0.6e9, rel=0.05)
    ngram = run(base + ["--speculative-tokens", "3", "--speculative-method", "ngram",
                        "--acceptance-rate", "0.5"])
    assert ngram["draft_weight_bytes_per_gpu"] == 0
