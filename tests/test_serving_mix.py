"""Request mixes, traces and prefix caching in calc_inference_latency.py's simulated benchmark
(issue 34): vLLM's random dataset's draw, the ShareGPT-shaped mix against the token counts of
vLLM's ShareGPT runs, trace files, prefix caching against our H200's cached-prefix prefill, the
pool that cached prefixes hold, and the exit-2 rules of the new flags."""
import contextlib
import io
import json
import os

import pytest

import calc_inference_latency as cil
from llmcalc.serve.workload import (SHAREGPT_MEAN_INPUT_TOKENS, SHAREGPT_MEAN_OUTPUT_TOKENS, clipped_lognormal_mean,
    random_length_bounds, random_requests, read_trace, sharegpt_requests)

HERE = os.path.dirname(os.path.abspath(__file__))
L8 = ["--hf_model_name_or_path", os.path.join(HERE, "fixtures", "configs", "llama-3.1-8b.json")]
H200 = os.path.join(os.path.dirname(HERE), "validation", "h200", "results", "prefix.jsonl")


def run(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        cil.main(argv + ["--json"])
    return json.loads(out.getvalue())


def refused(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cil.main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and err and "Traceback" not in "".join(err)
    return err[-1]


# --- the draws ---------------------------------------------------------------------------------------
def test_random_dataset_bounds_are_vllms():
    # vllm/benchmarks/datasets.py RandomDataset.get_sampling_params: floor(len (1 - r)) ..
    # ceil(len (1 + r)), the output's low at least 1; --random-input-len 1024, -output-len 128, r 0.5
    assert random_length_bounds(length=1024, range_ratio=0.5) == (512, 1536)
    assert random_length_bounds(length=128, range_ratio=0.5, at_least=1) == (64, 192)
    assert random_length_bounds(length=1, range_ratio=0.9, at_least=1) == (1, 2)
    reqs = random_requests(n=4000, input_len=1024, output_len=128, range_ratio=0.5, prefix_tokens=100, seed=3)
    s = [r[1] for r in reqs]
    assert min(s) >= 612 and max(s) <= 1636  # the prefix is prepended (vLLM's --random-prefix-len)
    assert sum(s) / len(s) == pytest.approx(1124, rel=0.01)
    assert len({r[1] for r in random_requests(n=50, input_len=1024, output_len=128, range_ratio=0.0)}) == 1


def test_sharegpt_mix_draws_the_means_it_was_solved_for():
    # Calibration, not validation: mu is solved (lognormal_mu_for_mean) so that the clipped
    # lognormal's mean is the token count of vLLM's 1,000-prompt ShareGPT runs (SHAREGPT_MEAN_*:
    # 215,196 input, 197,090 generated), so these numbers cannot judge the mix; what is checked is
    # that the draws keep them. 1,000 draws as vLLM's run has: within 6% (sampling spread of a
    # sigma-1 lognormal over 1,000 draws, ~3%, twice); the clips as vLLM's sampler keeps pairs
    for seed in (0, 1, 2):
        reqs = sharegpt_requests(n=1000, seed=seed)
        assert sum(r[1] for r in reqs) / 1000 == pytest.approx(SHAREGPT_MEAN_INPUT_TOKENS, rel=0.06)
        assert sum(r[2] for r in reqs) / 1000 == pytest.approx(SHAREGPT_MEAN_OUTPUT_TOKENS, rel=0.06)
        assert all(4 <= r[1] <= 1024 and 4 <= r[2] and r[1] + r[2] <= 2048 for r in reqs)


def test_sharegpt_mix_output_mean_against_sglangs_5000_prompt_runs():
    # Independent of the means the mix was solved for: SGLang's benchmark_vllm_060 README
    # (validation/published_serving.csv SGL060-OFF-1..3), sglang.bench_serving --dataset-name
    # sharegpt, 5,000 prompts all at once: output tokens/s over requests/s is 4,281.51 / 22.03 =
    # 194.3, 4,132.37 / 21.27 = 194.3 and 3,856.01 / 19.84 = 194.4 tokens per request (three engines
    # and models, one draw of the dataset). 15,000 draws (seeds 0-2): within 5% (1.4% between the
    # two sources' means, and ~1.1% standard error of the draws, three times)
    draws = [r[2] for seed in (0, 1, 2) for r in sharegpt_requests(n=5000, seed=seed)]
    assert sum(draws) / len(draws) == pytest.approx(4281.51 / 22.03, rel=0.05)


def test_clipped_lognormal_mean_agrees_with_sampling():
    # two paths: the partial-expectation formula against 200,000 seeded draws clipped the same way
    # (standard error of the sample mean under 0.5% here; 1% allowed)
    import random
    rng = random.Random(7)
    for mu, sigma, lo, hi in ((5.0, 1.0, 4, 1024), (4.5, 1.5, 10, 300), (6.5, 0.5, 4, 1024)):
        xs = [min(max(rng.lognormvariate(mu, sigma), lo), hi) for _ in range(200_000)]
        assert clipped_lognormal_mean(mu=mu, sigma=sigma, lo=lo, hi=hi) == pytest.approx(sum(xs) / len(xs), rel=0.01)


# --- traces ------------------------------------------------------------------------------------------
def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_trace_jsonl_and_csv_read_alike(tmp_path):
    rows = [(0.5, 100, 10, "a", 50), (0.0, 200, 20, None, 0), (1.0, 300, 5, "a", 50)]
    jl = _write(tmp_path, "t.jsonl", "".join(json.dumps(dict(arrival_s=t, input_tokens=s, output_tokens=o,
                                                             **({"prefix_id": k, "prefix_tokens": p} if k else {})))
                                             + "\n" for t, s, o, k, p in rows))
    cs = _write(tmp_path, "t.csv", "arrival_s,input_tokens,output_tokens,prefix_id,prefix_tokens\n"
                + "".join(f"{t},{s},{o},{k or ''},{p or ''}\n" for t, s, o, k, p in rows))
    assert read_trace(jl) == read_trace(cs) == sorted(rows)


@pytest.mark.parametrize("text,says", [
    ('{"arrival_s": 0, "input_tokens": 10}\n', "output_tokens is missing"),
    ('{"arrival_s": -1, "input_tokens": 10, "output_tokens": 5}\n', "arrival_s must be"),
    ('{"arrival_s": 0, "input_tokens": 10.5, "output_tokens": 5}\n', "whole number"),
    ('{"arrival_s": 0, "input_tokens": 10, "output_tokens": 5, "prefix_id": "a", "prefix_tokens": 11}\n',
     "more than input_tokens"),
    ('{"arrival_s": 0, "input_tokens": 10, "output_tokens": 5, "prefix_tokens": 4}\n', "without a prefix_id"),
    ('not json\n', "not JSON"),
    ('{"arrival_s": "x", "input_tokens": 10, "output_tokens": 5}\n', "not a number"),
])
def test_bad_trace_is_one_line_exit_2(tmp_path, capsys, text, says):
    path = _write(tmp_path, "bad.jsonl", text)
    line = refused(L8 + ["--trace", path], capsys)
    assert says in line and "line 1" in line


def test_trace_runs_at_its_own_times_and_a_conversation_reuses_its_history(tmp_path):
    # a two-turn conversation per user: turn 2's prompt is turn 1's prompt and reply plus 100 new
    # tokens, prefix_id the conversation: its history is cached and only the new tokens computed
    lines = []
    for u in range(20):
        lines.append(dict(arrival_s=u * 2.0, input_tokens=1000, output_tokens=100, prefix_id=f"c{u}", prefix_tokens=1000))
        lines.append(dict(arrival_s=u * 2.0 + 1.5, input_tokens=1200, output_tokens=100, prefix_id=f"c{u}",
                          prefix_tokens=1000))
    path = _write(tmp_path, "conv.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    sv = run(L8 + ["--gpu", "h100", "--trace", path])["serving"]
    assert sv["num_requests"] == 40 and sv["prefix_hits"] == 20
    assert sv["prompt_tokens_cached"] == 20 * 1000
    assert sv["duration_s"] > 39.5  # the trace's arrivals, not all at once
    assert sv["mix"]["trace_arrivals"] is True


# --- prefix caching ----------------------------------------------------------------------------------
H200_ROWS = [json.loads(x) for x in open(H200)]


def test_prefix_tokens_static_prefill_is_the_h200s_warm_prefill():
    # validation/h200/results/prefix.jsonl (our H200, transformers eager, bf16, SDPA): Llama-3.1-8B
    # shape, a 4,096-token prefix kept in a DynamicCache, the 2,048-token suffix run over it: 83.6 ms
    # (cold, all 6,144: 191.7 ms). Judged where the GPU sets the pace (2,048 new tokens; the shorter
    # suffixes are host-bound, VALIDATION.md): within 20%.
    row = next(r for r in H200_ROWS if r["batch"] == 1 and r["suffix_tokens"] == 2048)
    base = L8 + ["--gpu", "h200", "--serving-stack", "hf-eager", "-b", "1", "-s", "6144", "-o", "1"]
    warm = run(base + ["--prefix-tokens", "4096"])["ttft_s"]
    cold = run(base)["ttft_s"]
    assert warm == pytest.approx(row["warm_s"], rel=0.20)
    assert cold == pytest.approx(row["cold_s"], rel=0.20)
    assert cold / warm == pytest.approx(row["cold_s"] / row["warm_s"], rel=0.20)


def test_prefix_cache_under_a_light_load_gives_the_warm_prefill_after_the_first_request():
    # the same H200 row through the simulated benchmark: requests 2 s apart (none overlap), each a
    # 4,096-token shared prefix and 2,048 of its own; the first computes the prefix, the rest find it
    row = next(r for r in H200_ROWS if r["batch"] == 1 and r["suffix_tokens"] == 2048)
    sv = run(L8 + ["--gpu", "h200", "--serving-stack", "hf-eager", "-s", "6144", "-o", "2", "--prefix-tokens",
                   "4096", "--num-requests", "20", "--request-rate", "0.5", "--arrivals", "uniform"])["serving"]
    assert sv["prefix_hits"] == 19 and sv["prompt_tokens_cached"] == 19 * 4096
    assert sv["ttft_median_s"] == pytest.approx(row["warm_s"], rel=0.20)
    assert sv["ttft_p99_s"] == pytest.approx(row["cold_s"], rel=0.25)  # the first request, cold


def test_prefix_hit_rate_sets_the_share_of_cached_prompt_tokens():
    base = L8 + ["--gpu", "h100", "-s", "2048", "-o", "16", "--prefix-tokens", "1024", "--num-requests", "2000",
                 "--request-rate", "20"]
    full = run(base)["serving"]
    half = run(base + ["--prefix-hit-rate", "0.5"])["serving"]
    none = run(base + ["--prefix-hit-rate", "0"])["serving"]
    assert full["prompt_tokens_cached"] == 1999 * 1024  # all but the first
    assert half["prompt_tokens_cached"] / full["prompt_tokens_cached"] == pytest.approx(0.5, abs=0.04)
    assert none["prompt_tokens_cached"] == 0
    assert full["ttft_s"] < half["ttft_s"] < none["ttft_s"]


def test_cached_prefixes_hold_the_pool_and_are_evicted_when_it_is_full(tmp_path):
    # 100 distinct 3,000-token prefixes, each asked for twice in a row, then all again: a pool that
    # holds a few of them keeps the recent ones (second asks hit) and evicts the old (third asks miss)
    lines = [dict(arrival_s=0.2 * i, input_tokens=3100, output_tokens=4, prefix_id=f"p{i // 2}", prefix_tokens=3000)
             for i in range(200)]
    lines += [dict(arrival_s=50 + 0.2 * i, input_tokens=3100, output_tokens=4, prefix_id=f"p{i}",
                   prefix_tokens=3000) for i in range(100)]
    path = _write(tmp_path, "evict.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    # 18 GiB at 0.9 less 15 GiB of weights: ~1.2 GiB of pool at 128 KiB per token, ~10,000 tokens;
    # the H100's 80 GiB: ~460,000, all 300,000 prefix tokens
    small = run(L8 + ["--gpu", "h100", "--trace", path, "--gpu-memory-gib", "18"])["serving"]
    big = run(L8 + ["--gpu", "h100", "--trace", path])["serving"]
    assert big["prefix_evictions"] == 0 and big["prefix_hits"] == 100 + 100
    assert small["prefix_evictions"] > 90 and small["prefix_hits"] < big["prefix_hits"]
    assert small["prefix_tokens_held_most"] <= small["kv_pool_tokens"]


# --- the mix through the simulator ---------------------------------------------------------------------
def test_a_mix_of_equal_requests_matches_the_cohort_simulator():
    # --dataset random at range ratio 0 is -s 1024 -o 128 for every request: the per-request
    # simulator and the cohort one (simulate_benchmark) agree within 2% (the step-cost grid)
    for load in (["--request-rate", "8", "--num-requests", "500"], ["-c", "64", "--num-requests", "1000"],
                 ["--request-rate", "inf", "--num-requests", "2000"]):
        base = L8 + ["--gpu", "h100"] + load
        a = run(base + ["-s", "1024", "-o", "128"])["serving"]
        b = run(base + ["--dataset", "random"])["serving"]
        for k in ("ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s"):
            assert b[k] == pytest.approx(a[k], rel=0.02), (load, k)


def test_a_wider_mix_has_wider_percentiles():
    base = L8 + ["--gpu", "h100", "--dataset", "random", "--num-requests", "1000", "--request-rate", "10"]
    narrow = run(base)["serving"]
    wide = run(base + ["--random-range-ratio", "0.9"])["serving"]
    assert wide["e2e_p99_s"] / wide["e2e_median_s"] > narrow["e2e_p99_s"] / narrow["e2e_median_s"]
    assert wide["mix"]["output_tokens"]["max"] > 200 and wide["mix"]["input_tokens"]["min"] < 200
    assert wide["ttft_p90_s"] <= wide["ttft_p99_s"]


def test_sharegpt_mix_runs_and_says_its_source():
    res = run(L8 + ["--gpu", "h100", "--dataset", "sharegpt", "--num-requests", "300", "--request-rate", "inf"])
    assert res["serving"]["mix"]["dataset"] == "sharegpt"
    assert "ShareGPT" in res["mode"] and "sigma 1.0 assumed" in res["mode"]


@pytest.mark.parametrize("argv,says", [
    (["--random-input-len", "100", "--num-requests", "5", "-c", "2"], "belongs to --dataset random"),
    (["--dataset", "random", "--random-range-ratio", "1", "--num-requests", "5", "-c", "2"], "between 0 and 0.999999"),
    (["--dataset", "random", "-c", "2"], "draws --num-requests"),
    (["--dataset", "random", "--num-requests", "5"], "at a load"),
    (["--prefix-hit-rate", "0.5", "-b", "1"], "add --prefix-tokens"),
    (["--prefix-tokens", "10", "--prefix-hit-rate", "1.5", "-b", "1"], "between 0 and 1"),
    (["--prefix-tokens", "100", "--prefix-hit-rate", "0", "-b", "4"], "add --num-requests N and a load"),
    (["--prefix-tokens", "600", "-s", "512"], "fewer than the prompt"),
    (["--prefix-tokens", "100", "-c", "4"], "add --num-requests"),
    (["--prefix-tokens", "100", "--search"], "--search runs every request alike"),
])
def test_mix_flags_refused_in_one_line(argv, says, capsys):
    assert says in refused(L8 + argv, capsys)


# --- KV offload to host memory ------------------------------------------------------------------
def _conversations(tmp_path):
    """60 three-turn conversations with 2,000-token first prompts, turns a minute apart: more
    history than a pool of 0.3 x 80 GiB holds next to an 8B's weights."""
    import random
    rng, rows, t = random.Random(3), [], 0.0
    for c in range(60):
        t += rng.expovariate(1.0)
        at, hist = t, 0
        for turn in range(3):
            s = hist + (rng.randint(1500, 2500) if turn == 0 else rng.randint(50, 200))
            o = rng.randint(100, 300)
            rows.append(dict(arrival_s=round(at, 3), input_tokens=s, output_tokens=o, prefix_id=f"c{c}",
                             prefix_tokens=hist))
            hist, at = s + o, at + 60
    rows.sort(key=lambda r: r["arrival_s"])
    return _write(tmp_path, "conv.jsonl", "".join(json.dumps(r) + "\n" for r in rows))


def test_a_host_tier_brings_evicted_histories_back_and_cuts_ttft(tmp_path):
    base = L8 + ["--gpu", "h100", "--trace", _conversations(tmp_path), "--gpu-memory-utilization", "0.22"]
    gpu_only = run(base)
    tiered = run(base + ["--host-kv-cache-gib", "64"])
    a, b = gpu_only["serving"], tiered["serving"]
    assert a["prefix_evictions"] > 0 and b["host_hits"] > 0
    assert b["prompt_tokens_cached"] > a["prompt_tokens_cached"] and b["ttft_s"] < a["ttft_s"]
    ht = tiered["serving"]["mix"]["host_tier"]
    # H100: PCIe 5.0 x16 (PCI-SIG: 32 GT/s x 16 lanes, 128b/130b) = 63.0 GB/s per direction, reached
    # at KV_RELOAD_EFFICIENCY (set on LMCache's logged reload, offload.py)
    from llmcalc.serve.offload import KV_RELOAD_EFFICIENCY
    assert ht["host_bytes_per_s"] / KV_RELOAD_EFFICIENCY == pytest.approx(32e9 * 16 * 128 / 130 / 8)
    # bytes per token: transformers 5.24's DynamicCache measured on Llama-3-8B's shape (the same
    # attention as 3.1: 8 KV heads of 128), bf16, two layers of 12 tokens
    # (tests/fixtures/hf_cache_bytes.json), per layer x the model's 32
    hf = json.load(open(os.path.join(HERE, "fixtures", "hf_cache_bytes.json")))["llama-3-8b"]["runs"][0]["prefill"]
    per_layer_token = sum(sum(t["bytes"] for t in x["tensors"].values()) for x in hf["layers"]) / (
        len(hf["layers"]) * hf["context_tokens"])
    assert ht["kv_bytes_per_token_per_gpu"] == pytest.approx(32 * per_layer_token, rel=1e-6)
    assert ht["pays"] and b["host_load_s"] == pytest.approx(b["host_tokens_loaded"] * ht["load_s_per_token"])


@pytest.mark.parametrize("argv,says", [
    (["--host-kv-cache-gib", "8", "-b", "1"], "a tier for cached prefixes"),
    (["--prefix-tokens", "10", "-b", "1", "--host-kv-bandwidth-gbps", "50"], "add --host-kv-cache-gib"),
    (["--prefix-tokens", "10", "-b", "1", "--host-kv-cache-gib", "8"], "add --num-requests N and a load"),
])
def test_host_tier_flags_refused_in_one_line(argv, says, capsys):
    assert says in refused(L8 + argv, capsys)


# --- vLLM 0.6's multi-step scheduling -------------------------------------------------------------
# SGLang's benchmark_vllm_060 README (sgl-project/sglang): vLLM 0.6.0 with --num-scheduler-steps 10,
# sglang.bench_serving --dataset-name sharegpt at --request-rate 4 (1,200 prompts) and 8 (2,400);
# median TTFT (ms). Llama-3.1-8B-Instruct on one A100 80G; the 70B at TP 4 on H100s. Tolerance 20%.
SGL060_VLLM = [("llama-3.1-8b", "a100-80gb", "1", "4", "1200", 100.48), ("llama-3.1-8b", "a100-80gb", "1", "8", "2400", 120.39)]


@pytest.mark.parametrize("model,gpu,tp,rate,n,ttft_ms", SGL060_VLLM)
def test_multi_step_scheduling_gives_vllm_060s_median_ttft(model, gpu, tp, rate, n, ttft_ms):
    base = ["--hf_model_name_or_path", os.path.join(HERE, "fixtures", "configs", model + ".json"), "--gpu", gpu,
            "-tp", tp, "--dataset", "sharegpt", "--num-requests", n, "--request-rate", rate]
    with_steps = run(base + ["--num-scheduler-steps", "10"])["serving"]
    without = run(base)["serving"]
    assert with_steps["ttft_median_s"] * 1e3 == pytest.approx(ttft_ms, rel=0.20)
    assert without["ttft_median_s"] < 0.5 * with_steps["ttft_median_s"]  # the window is most of the wait


def test_num_scheduler_steps_needs_a_benchmark(capsys):
    assert "add --num-requests" in refused(L8 + ["-c", "4", "--num-scheduler-steps", "10"], capsys)


# --- against LMCache's published CPU-offload example -----------------------------------------------
# LMCache docs, getting_started/quickstart/offload_kv_cache.rst ("Example: CPU offloading
# benefits"; the same script is vLLM's examples/others/lmcache/cpu_offload_lmcache.py): vLLM V1
# offline, meta-llama/Meta-Llama-3.1-8B-Instruct, max_model_len 16384, gpu_memory_utilization set so
# that vLLM uses 24 GiB of the GPU, vLLM's own prefix caching off, LMCache's CPU tier 15 GB; 10
# prompts of "Hi " x 10,000 (10,010 tokens with the index and question, as LMCache's log of the same
# script counts them), 1 output token each, all at once, then the same 10 again. Published: "Speedup
# (first run / second run): 7.43x" with LMCache, "1.00x" without it, "even if vLLM has prefix
# caching enabled ... the KV cache exceeds GPU memory". The GPU is not named ("at least 24GB"): an
# H100 SXM is taken (the PCIe 5.0 class of LMCache's own logged reload); on an A100 (PCIe 4.0) ours
# would be 12.9x, +74%. Here: a trace with the second ten arriving 100 s after the first; the second
# run's time is the duration past 100 s. Tolerance 20% (the serving table's bar).
def _lmcache_example(tmp_path, extra, gpu="h100", usable_gib=79.65):
    rows = [{"arrival_s": t, "input_tokens": 10010, "output_tokens": 1, "prefix_id": f"prompt-{i}",
             "prefix_tokens": 10010} for t in (0.0, 100.0) for i in range(10)]
    first, both = tmp_path / "first.jsonl", tmp_path / "both.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in rows[:10]))
    both.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = L8 + ["--gpu", gpu, "--gpu-memory-utilization", f"{24 / usable_gib:.4f}"]
    run1 = run(base + ["--trace", str(first)])["serving"]["duration_s"]
    s = run(base + ["--trace", str(both)] + extra)["serving"]
    assert s["duration_s"] > 100.0  # the first run is over before the second arrives
    return run1 / (s["duration_s"] - 100.0), s


def test_lmcache_cpu_offload_example_speedup(tmp_path):
    speedup, s = _lmcache_example(tmp_path, ["--host-kv-cache-gib", "15"])
    # every prompt comes back from the host tier, its 10,010 tokens and the one generated
    assert s["host_hits"] == 10 and s["host_tokens_loaded"] == 10 * 10011
    assert speedup == pytest.approx(7.43, rel=0.20)  # ours 8.80x, +18.4%


def test_lmcache_example_without_a_host_tier_gains_nothing_from_prefix_caching(tmp_path):
    # the page's statement: with the KV of the ten prompts (13.1 GB) past the GPU pool (~9.7 GB
    # here), the second run finds nothing (least recently used evicts each prompt before it is asked
    # again), so prefix caching alone gives 1.00x
    speedup, s = _lmcache_example(tmp_path, [])
    assert s["prefix_hits"] == 0 and s["prefix_evictions"] > 0
    assert speedup == pytest.approx(1.00, abs=0.02)


# --- against a published prefix-cache on/off run ----------------------------------------------------
# vLLM PR #1983 (sleepcoo, "[WIP] Prefix prompt cache", 2023-12-08): "llama 13B, A100 80G", every
# request a 200-token shared prefix, 30 more input tokens and 50 output tokens, at 10, 15 and 25 QPS,
# that PR's prefix cache against the same vLLM (0.2.x) without it: requests/s, average latency per
# request, first-token time. The request count is not stated (1,000 here, Poisson arrivals as vLLM's
# benchmark_serving sends them); LLaMA-13B's shape (40 layers, h 5120, 40 heads, FFN 13824, vocab
# 32000) from flags. Judged: each ratio cache / base, within 20%. At 10 QPS both engines are below
# capacity and the ratios land within 15%; at 15 and 25 QPS the 2023 engine (no CUDA graphs,
# prompt steps that stall the decodes) was saturating at ~14 requests/s where ours, today's vLLM V1
# with chunked prefill, holds 22.5: the ratios there measure the old engine's capacity, and miss.
LLAMA_13B = ["-l", "40", "-hs", "5120", "-a", "40", "--ffn-hidden-size", "13824", "--swiglu", "-v", "32000",
             "--no-bias", "--norm", "rmsnorm", "--position-embedding", "rope", "--no-tied-embeddings"]
VLLM_1983 = {  # QPS: (requests/s, average latency s, first-token time s), prefix cache then base
    10: ((9.83, 1.97, 0.29), (9.80, 2.87, 0.45)),
    15: ((14.30, 2.98, 0.39), (13.24, 8.65, 1.02)),
    25: ((19.81, 6.46, 0.84), (14.08, 13.67, 4.74)),
}
_MISS_1983 = {(15, "e2e_s"): "+83%", (15, "ttft_s"): "+21%", (25, "requests_per_s"): "-22%",
              (25, "e2e_s"): "-66%", (25, "ttft_s"): "-76%"}


@pytest.mark.parametrize("qps,metric", [
    pytest.param(q, m, id=f"{q}qps-{m}", marks=[] if (q, m) not in _MISS_1983 else pytest.mark.xfail(
        strict=True, reason=f"miss, ours {_MISS_1983[(q, m)]}: the 2023 engine's own capacity (~14 req/s "
                            "without the cache) decides the ratio near saturation"))
    for q in VLLM_1983 for m in ("requests_per_s", "e2e_s", "ttft_s")])
def test_prefix_cache_ratios_against_vllm_pr_1983(qps, metric):
    base = LLAMA_13B + ["--gpu", "a100-80gb", "-s", "230", "-o", "50", "--request-rate", str(qps),
                        "--num-requests", "1000"]
    plain, cached = run(base)["serving"], run(base + ["--prefix-tokens", "200"])["serving"]
    assert cached["prefix_hits"] == 999  # every request but the first finds the prefix
    col = ("requests_per_s", "e2e_s", "ttft_s").index(metric)
    pub_cache, pub_base = VLLM_1983[qps]
    assert cached[metric] / plain[metric] == pytest.approx(pub_cache[col] / pub_base[col], rel=0.20)


def test_seed_and_arrivals_draw_a_traces_arrivals_at_a_rate_and_are_noted_otherwise(tmp_path, capsys):
    # a trace at --request-rate R gets drawn arrivals: --seed and --arrivals change them (no note);
    # without a rate the trace's own times stand and the note says the flags draw nothing
    path = _write(tmp_path, "t.jsonl", "".join(json.dumps(dict(arrival_s=0.01 * i, input_tokens=1000 + i,
                                                                 output_tokens=100)) + "\n" for i in range(300)))
    base = L8 + ["--gpu", "h100", "--trace", path, "--json"]
    p99 = []
    for extra in (["--request-rate", "20", "--seed", "0"], ["--request-rate", "20", "--seed", "3"],
                  ["--request-rate", "20", "--arrivals", "uniform"]):
        cil.main(base + extra)
        out, err = capsys.readouterr()
        p99.append(json.loads(out)["serving"]["ttft_p99_s"])
        assert "draw" not in err
    assert len(set(p99)) == 3
    cil.main(base + ["--seed", "3"])
    assert "--seed draws arrivals at a --request-rate" in capsys.readouterr().err
