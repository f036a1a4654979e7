"""Tests for calc_inference_latency.py: published latencies (FasterTransformer, TensorRT-LLM),
properties (hypothesis), --gpu through a stand-in hardware module, exit-2 rules, and agreement of
the all-reduce formula with calc_comm.py when that script sits beside this one.

The published comparisons pass every hardware figure explicitly (datasheet values), so they do
not depend on hardware.py, and use the script's default efficiencies with no per-case tuning.
"""
import importlib
import json
import math
import os
import random
import sys
import types

import pytest
from hypothesis import given, settings, strategies as st

import calc_inference_latency as cil
from conftest import load_json
from calc_inference_latency import main as _script_main


def main(argv=None):
    """The script's main with the kernels-only stack the cases below were written for (the
    published rows before --serving-stack, and the model's properties), unless a case names a
    stack; the default stack's presets are tested on their own rows."""
    argv = list(argv or [])
    return _script_main(argv if "--serving-stack" in argv else argv + ["--serving-stack", "kernels"])

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(HERE, "fixtures", "configs")


def cfg(name):
    return os.path.join(CONFIGS, name + ".json")


# Datasheet figures, passed explicitly (no hardware.py):
# NVIDIA A100 SXM4 80GB: 312 TFLOP/s dense FP16, 2,039 GB/s HBM2e, NVLink 3 600 GB/s bidirectional.
A100_80 = ["--peak-tflops", "312", "--memory-bandwidth-gbps", "2039", "--gpu-memory-gib", "80",
           "--tp-bandwidth-gbps", "300"]
# NVIDIA H100 SXM5 80GB: 1,979 TFLOP/s dense FP8 (3,958 with sparsity), 3.35 TB/s HBM3, 450 GB/s.
H100_FP8 = ["--peak-tflops", "1979", "--memory-bandwidth-gbps", "3350", "--gpu-memory-gib", "80",
            "--tp-bandwidth-gbps", "450", "--precision", "fp8"]
# FasterTransformer GPT shapes (docs/gpt_guide.md): GPT-175B head_num 96, size_per_head 128,
# num_layers 96, vocab 51200; GPT-6.7B head_num 32, size_per_head 128, num_layers 32. Megatron GPT:
# LayerNorm, biases, GELU 4h MLP, learned positions (2048), tied embeddings.
GPT175 = ["-l", "96", "-hs", "12288", "-a", "96", "-v", "51200", "--position-embedding", "learned",
          "--max-position-embeddings", "2048", "--tied-embeddings"]
GPT67 = ["-l", "32", "-hs", "4096", "-a", "32", "-v", "51200", "--position-embedding", "learned",
         "--max-position-embeddings", "2048", "--tied-embeddings"]
SMALL = ["-l", "4", "-hs", "512", "-a", "8", "-v", "1000"]  # a small model for properties

FT_URL = ("https://github.com/NVIDIA/FasterTransformer/blob/main/docs/gpt_guide.md "
          "(Performance: 8x A100-80GB SXM, NVSwitch, FP16, top_p 0.9)")
TRT_URL = ("https://github.com/NVIDIA/TensorRT-LLM/blob/release/0.5.0/docs/source/performance.md "
           "(Low Latency tables, v0.5, batch 1, TP 1, 1st token latency)")

# (id, args, json key, published seconds, note). Tolerance 20% (the issue's bar).
PUBLISHED = [
    # FT gpt_guide.md, "Performance of GPT-175B", TP 8 NVLink, FP16, batch 1, in 128 / out 8:
    # FT latency 488.86 ms (end to end).
    ("ft-gpt175b-b1-128-8", GPT175 + A100_80 + ["-tp", "8", "-s", "128", "-o", "8"], "total_s",
     0.48886),
    # same table, batch 1, in 512 / out 32: 1719.96 ms.
    ("ft-gpt175b-b1-512-32", GPT175 + A100_80 + ["-tp", "8", "-s", "512", "-o", "32"], "total_s",
     1.71996),
    # FT gpt_guide.md, "Performance of GPT-6.7B", tensor_para_size 1, FP16, batch 1, 128 / 8:
    # 98.29 ms.
    ("ft-gpt6.7b-b1-128-8", GPT67 + A100_80 + ["-s", "128", "-o", "8"], "total_s", 0.09829),
    # TensorRT-LLM v0.5 performance.md, A100 GPUs (FP16), LLaMA 7B (Llama-2-7b per its
    # methodology), batch 1, TP 1, input 2048: 1st token latency 133 ms.
    ("trtllm-llama2-7b-a100-fp16-2048", ["--hf_model_name_or_path", cfg("llama-2-7b")] + A100_80
     + ["-s", "2048", "-o", "1"], "prefill_s", 0.133),
    # same page, H100 GPUs (FP8), LLaMA 7B, batch 1, TP 1, input 2048: 36 ms.
    ("trtllm-llama2-7b-h100-fp8-2048", ["--hf_model_name_or_path", cfg("llama-2-7b")] + H100_FP8
     + ["-s", "2048", "-o", "1"], "prefill_s", 0.036),
]
# Measured misses of the model with its defaults (also in VALIDATION.md): the 175B runs spend
# ~48 ms per decode step where weights at 0.70 of 2039 GB/s, calc_comm's NCCL all-reduce (18 us
# per 24 KB call) and the kernel overhead give ~38 ms, and FT's GPT-89B table (same stack, same
# TP 8, half the layers) puts 55-70 ms of each 175B request in a part that does not scale with the
# layers. Reaching 20% would need per-stack constants, which the issue rules out; the independent
# decode data (gpt-fast TP table, Databricks MBU, tests below) sit near our model, not near FT's.
KNOWN_MISSES = {"ft-gpt175b-b1-128-8": -0.34, "ft-gpt175b-b1-512-32": -0.22}


def run(args):
    return main(list(args) + ["--json"])


def _case(c):
    # Known misses are strict xfails: they fail the suite if they start passing, so the record
    # (here and in VALIDATION.md) is updated; no number of ours is pinned.
    marks = ([pytest.mark.xfail(strict=True, reason=f"known miss ({KNOWN_MISSES[c[0]]:+.0%}), "
                                "see VALIDATION.md")] if c[0] in KNOWN_MISSES else [])
    return pytest.param(c, id=c[0], marks=marks)


@pytest.mark.parametrize("case", [_case(c) for c in PUBLISHED])
def test_published_within_20_percent(case, capsys):
    name, args, key, published = case
    ours = run(args)[key]
    assert abs(ours / published - 1) <= 0.20, (name, ours, published)


def test_ft_gpt67b_more_points(capsys):
    # FT gpt_guide.md GPT-6.7B table, batch 1 in 512 / out 32: 384.70 ms; batch 8 in 128 / out 8:
    # 162.51 ms (A100-80GB, FP16). Tolerance 20%.
    r = run(GPT67 + A100_80 + ["-s", "512", "-o", "32"])
    assert abs(r["total_s"] / 0.38470 - 1) <= 0.20
    r = run(GPT67 + A100_80 + ["-s", "128", "-o", "8", "-b", "8"])
    assert abs(r["total_s"] / 0.16251 - 1) <= 0.20


# FT gpt_guide.md, "Performance of GPT-20B" (head_num 48, size_per_head 128, num_layers 44, vocab
# 51200, FP16, top_p 0.9; same 8x A100-80GB node as the tables above), batch 1. Tolerance 20%.
# TP 1 and 2 are checked; at TP 4 and 8 FT's tensor-parallel cost outgrows ours (-17..-36%,
# VALIDATION.md), the same gap as the GPT-175B cases.
GPT20 = ["-l", "44", "-hs", "6144", "-a", "48", "-v", "51200", "--position-embedding", "learned",
         "--max-position-embeddings", "2048", "--tied-embeddings"]
FT_GPT20B = [(1, 20, 8, 0.225), (1, 60, 20, 0.560), (1, 128, 20, 0.566),
             (2, 20, 8, 0.147), (2, 60, 20, 0.358), (2, 128, 20, 0.362)]


@pytest.mark.parametrize("tp,s,o,published", FT_GPT20B,
                         ids=[f"tp{t}-{s}-{o}" for t, s, o, _ in FT_GPT20B])
def test_ft_gpt20b_table(tp, s, o, published, capsys):
    r = run(GPT20 + A100_80 + ["-tp", str(tp), "-s", str(s), "-o", str(o)])
    assert abs(r["total_s"] / published - 1) <= 0.20, (tp, s, o, r["total_s"])


def test_ft_stack_constants_from_other_tables_predict_gpt175b(capsys):
    """Not a defaults check: FT's two stack-specific costs, measured here on OTHER tables of the
    same FT document and node, predict its GPT-175B rows. (1) In-place all-reduce cost: the
    --tp-latency-us that makes GPT-20B TP 8, b 1, 60/20 hit FT's 212 ms. (2) Per-request cost: FT's
    GPT-89B (48 layers of the 175B's shape) TP 8, b 1, 128/8 = 279.44 ms minus ours with (1).
    With both, the 175B rows (488.86 / 1719.96 ms, never used above) must come within 10%."""
    gpt89 = ["-l", "48"] + GPT175[2:]
    lo, hi = 0.0, 200.0
    for _ in range(30):  # bisection on the per-call all-reduce cost, us
        mid = (lo + hi) / 2
        t = run(GPT20 + A100_80 + ["-tp", "8", "-s", "60", "-o", "20", "--tp-latency-us", str(mid)])
        lo, hi = (mid, hi) if t["total_s"] < 0.212 else (lo, mid)
    ar_us = (lo + hi) / 2
    assert 20 < ar_us < 80, ar_us  # well above the 8.9 us nccl-tests floor of the defaults
    req_ms = 279.44 - 1e3 * run(gpt89 + A100_80 + ["-tp", "8", "-s", "128", "-o", "8",
                                                  "--tp-latency-us", str(ar_us)])["total_s"]
    assert 50 < req_ms < 120, req_ms
    knobs = ["--tp-latency-us", str(ar_us), "--request-overhead-ms", str(req_ms)]
    for s_, o_, published in ((128, 8, 0.48886), (512, 32, 1.71996)):
        r = run(GPT175 + A100_80 + ["-tp", "8", "-s", str(s_), "-o", str(o_)] + knobs)
        assert abs(r["total_s"] / published - 1) <= 0.10, (s_, o_, r["total_s"])


# --- independent decode checks (not the issue's five cases; nothing was fitted to them) -----------
# Llama-2-70B shape (meta-llama/Llama-2-70b-hf config.json): 80 layers, h 8192, 64 heads, 8 kv
# heads, SwiGLU 28672, vocab 32000, RMSNorm, no biases, RoPE, untied head.
L70 = ["-l", "80", "-hs", "8192", "-a", "64", "--num-kv-heads", "8", "--ffn-hidden-size", "28672",
       "-nl", "3", "-v", "32000", "--norm", "rmsnorm", "--no-bias", "--position-embedding", "rope"]
# NVIDIA A100 SXM4 40GB datasheet: 312 TFLOP/s FP16, 1,555 GB/s; H100 SXM5: 989 TFLOP/s dense BF16.
A100_40 = ["--peak-tflops", "312", "--memory-bandwidth-gbps", "1555", "--gpu-memory-gib", "40",
           "--tp-bandwidth-gbps", "300"]
H100_16 = ["--peak-tflops", "989", "--memory-bandwidth-gbps", "3350", "--gpu-memory-gib", "80",
           "--tp-bandwidth-gbps", "450"]
# gpt-fast README (pytorch-labs/gpt-fast), "Tensor Parallelism" table: 8x A100-80GB power-limited
# to 330 W, batch 1, ~5-token prompt, bf16, tokens/s. TPOT = 1 / (tokens/s). Tolerance 20%.
# (Llama-2-7B TP 1 is the calibration point of the 0.70 memory efficiency, kept for the record.)
GPT_FAST_TP = [("llama-2-7b", 2, 168.84), ("llama-2-7b", 4, 254.02), ("llama-2-7b", 8, 328.43),
               ("llama-2-70b", 2, 21.32), ("llama-2-70b", 4, 38.01), ("llama-2-70b", 8, 62.50)]
# (Llama-2-7B TP 1, 104.9 tok/s, is the calibration point of the 0.70 memory efficiency, so it
# is not a check and is not tested here; VALIDATION.md lists it as such.)
# Our TPOT at 7B TP 8 is ~+22% slow: gpt-fast runs CUDA graphs and a custom intra-node
# all-reduce, whose fixed costs per layer are below our defaults. Strict xfail: it fails the
# suite if it starts passing, so the record gets updated.
GPT_FAST_MISSES = {("llama-2-7b", 8)}


def gpt_fast_args(model, tp):
    m = ["--hf_model_name_or_path", cfg("llama-2-7b")] if model == "llama-2-7b" else L70
    return m + A100_80 + ["-tp", str(tp), "-s", "5", "-o", "200"]


@pytest.mark.parametrize("model,tp,tok_s", [
    pytest.param(m, t, v, id=f"{m}-tp{t}", marks=[pytest.mark.xfail(
        strict=True, reason="known miss, see VALIDATION.md")] if (m, t) in GPT_FAST_MISSES else [])
    for m, t, v in GPT_FAST_TP])
def test_gpt_fast_tensor_parallel_tpot(model, tp, tok_s, capsys):
    err = run(gpt_fast_args(model, tp))["decode_per_token_s"] * tok_s - 1
    assert abs(err) <= 0.20, (model, tp, err)


@pytest.mark.parametrize("hw,tp,mbu", [(A100_40, 4, 0.55), (H100_16, 2, 0.60)], ids=["4xa100-40gb", "2xh100"])
def test_databricks_mbu_llama2_70b(hw, tp, mbu, capsys):
    # Databricks/MosaicML blog "LLM Inference Performance Engineering: Best Practices" (2023),
    # "Model Bandwidth Utilization": at batch 1, MBU 60% on 2x H100-80GB vs 55% on 4x A100-40GB
    # (Llama-2-70B, TensorRT-LLM server, 512-token prompts). MBU = (weights + KV bytes per GPU) /
    # TPOT / peak bandwidth, their definition. Tolerance 20%.
    r = run(L70 + hw + ["-tp", str(tp), "-s", "512", "-o", "64"])
    bw = r["hardware"]["memory_bandwidth_bytes_per_s"]
    ours = (r["weight_bytes_per_gpu"] + r["kv_cache_bytes_per_gpu"]) / r["decode_per_token_s"] / bw
    assert abs(ours / mbu - 1) <= 0.20, ours


def test_per_gpu_bandwidth_falls_with_tp_like_gpt_fast(capsys):
    """gpt-fast's per-GPU GB/s falls as TP grows (7B: 1397 -> 704 from TP 1 to 8; 70B: 1482 ->
    1135 from TP 2 to 8): smaller shards, same fixed costs per layer. Ours falls too (direction
    only; the size is in VALIDATION.md)."""
    for model, tps in (("llama-2-7b", (1, 2, 4, 8)), ("llama-2-70b", (2, 4, 8))):
        bws = []
        for tp in tps:
            r = run(gpt_fast_args(model, tp))
            bws.append(r["weight_bytes_per_gpu"] / r["decode_per_token_s"])
        assert bws == sorted(bws, reverse=True), (model, bws)


def test_json_has_required_keys_and_only_json(capsys):
    res = run(GPT67 + ["-s", "64", "-o", "4"])
    out = capsys.readouterr().out
    assert json.loads(out) == json.loads(json.dumps(res))
    for key in ("prefill_s", "decode_per_token_s", "total_s", "output_tokens_per_s",
                "tokens_per_s_per_user", "output_tokens_per_s_per_gpu", "prefill_bound",
                "decode_bound", "critical_batch_size", "memory_bytes_per_gpu", "fits_in_memory"):
        assert key in res
    assert res["prefill_bound"] == "compute" or res["prompt_tokens"] < 100
    assert res["decode_bound"] == "memory"


def test_request_overhead_is_paid_once_per_request(capsys):
    """--request-overhead-ms moves TTFT and end-to-end by the same constant, once per request,
    whatever the output length; kernel prefill and TPOT are unchanged."""
    for o in (1, 8, 64):
        base = run(GPT67 + ["-s", "128", "-o", str(o)])
        r = run(GPT67 + ["-s", "128", "-o", str(o), "--request-overhead-ms", "25"])
        assert math.isclose(r["ttft_s"] - base["ttft_s"], 0.025)
        assert math.isclose(r["total_s"] - base["total_s"], 0.025)
        assert r["prefill_s"] == base["prefill_s"] and r["decode_per_token_s"] == base["decode_per_token_s"]
    assert "per request" in (main(GPT67 + ["--request-overhead-ms", "5"]) and capsys.readouterr().out)


def test_human_output_runs(capsys):
    main(GPT67 + ["-s", "64", "-o", "4", "-tp", "2", "-pp", "2"])
    out = capsys.readouterr().out
    assert "TTFT" in out and "tp_allreduce" in out and "memory per GPU" in out


def test_spellings(capsys):
    a = run(GPT67 + ["--batch-size", "2", "--prompt-tokens", "100", "--output-tokens", "3",
                     "--tensor-parallel-size", "2", "--pipeline-parallel-size", "2",
                     "--weight-bits", "8", "--kv-cache-bits", "8"])
    b = run(GPT67 + ["-b", "2", "--sequence-length", "100", "-o", "3", "-tp", "2", "-pp", "2",
                     "--weight-bits", "8", "--kv-cache-bits", "8"])
    c = run(GPT67 + ["-b", "2", "-s", "100", "-o", "3", "-tp", "2", "-pp", "2",
                     "--precision", "w8a16", "--kv-cache-bits", "8"])
    assert a["total_s"] == b["total_s"] == c["total_s"]


def test_decode_sum_is_exact(capsys):
    """The closed-form decode total equals the step-by-step sum (contexts s .. s+o-2 cached)."""
    spec, _ = cil.resolve_model_spec(vars(cil.build_parser().parse_args(GPT67)))
    hw = {"flops_per_s": 200e12, "attention_flops_per_s": 200e12, "bytes_per_s": 1.4e12, "kernel_overhead_s": 4e-6,
          "link_bytes_per_s": 300e9, "link_latency_s": 8.9e-6, "link_efficiency": 0.8}
    for b, s, o in ((1, 10, 7), (64, 300, 40), (512, 2000, 9)):
        kw = dict(tp=2, pp=1, w_bits=16, a_bits=16, kv_bits=16)
        steps = sum(cil.forward_pass(spec, hw, batch=b, new_tokens=1, context_before=c,
                                     absorbed=True, **kw)["time_s"] for c in range(s, s + o - 1))
        total = cil.decode_total_s(spec, hw, batch=b, prompt_tokens=s, output_tokens=o, **kw)
        assert math.isclose(total, steps, rel_tol=1e-9)


def spec_of(argv):
    return cil.resolve_model_spec(vars(cil.build_parser().parse_args(argv)))[0]


def test_decode_sum_is_exact_with_sliding_window(capsys):
    """Same for a windowed model (closed form split at the window): contexts below, across and
    beyond w, with all and with some of the layers sliding, GQA and MHA."""
    hw = {"flops_per_s": 200e12, "attention_flops_per_s": 150e12, "bytes_per_s": 1.4e12,
          "kernel_overhead_s": 4e-6, "link_bytes_per_s": 300e9, "link_latency_s": 8.9e-6,
          "link_efficiency": 0.8}
    for argv in (GPT67, GPT67 + ["--num-kv-heads", "8"]):
        full = spec_of(argv)
        for w, n_slide in ((64, 32), (64, 16), (1, 32), (5000, 10)):
            spec = spec_of(argv + ["--sliding-window", str(w)])
            # the first n_slide layers keep the window, the others attend to everything
            spec["layers"] = spec["layers"][:n_slide] + full["layers"][n_slide:]
            assert sum(x["attention"][0]["span"] == "sliding" for x in spec["layers"]) == n_slide
            # (8, 4900, 200) crosses w = 5000 (c = 4999) and is far past the small windows
            for b, s, o in ((1, 10, 7), (4, 40, 60), (64, 63, 3), (2, 64, 9), (512, 300, 40),
                            (8, 4900, 200)):
                kw = dict(tp=2, pp=1, w_bits=16, a_bits=16, kv_bits=16)
                steps = sum(cil.forward_pass(spec, hw, batch=b, new_tokens=1, context_before=c,
                                             absorbed=True, **kw)["time_s"]
                            for c in range(s, s + o - 1))
                total = cil.decode_total_s(spec, hw, batch=b, prompt_tokens=s, output_tokens=o, **kw)
                assert math.isclose(total, steps, rel_tol=1e-9), (w, n_slide, b, s, o)


def test_causal_pairs_match_their_definition():
    """Pairs a pass scores (step_pairs over the block's query_key_pairs): sum over query positions
    p of min(p, w) (keys a causal query sees within a window of w keys, its own included), counted
    one query at a time; no window: the full triangle."""
    attn = {w: spec_of(SMALL + ["--sliding-window", str(w or 0)])["layers"][0]["attention"][0]
            for w in (None, 1, 10, 12, 100)}
    for cb, n, w in ((0, 1, None), (0, 100, None), (7, 5, None), (0, 100, 10), (0, 10, 100),
                     (5, 20, 12), (30, 1, 12), (11, 1, 12), (0, 1, 1), (3, 4, 1)):
        brute = sum(min(p, w) if w else p for p in range(cb + 1, cb + n + 1))
        assert cil.step_pairs(attn[w], context_before=cb, new_tokens=n)["core"] == brute


# HF transformers' caches, traced step by step on tiny random models (window 8) by
# benchmarks/hf_sliding_cache.py (transformers 5.23.0, torch 2.13 CPU); exact match expected.
HF_SWA = json.load(open(os.path.join(HERE, "fixtures", "hf_sliding_cache.json"), encoding="utf-8"))


def hf_swa_config(tmp_path, model):
    """The fixture config of `model` cut to the traced model's layers, with its window."""
    base, L = {"gemma2": ("gemma-2-9b", 4), "mistral": ("mistral-7b", 2)}[model]
    conf = json.load(open(cfg(base), encoding="utf-8"))
    conf.update(num_hidden_layers=L, sliding_window=HF_SWA["window"])
    path = tmp_path / f"{model}.json"
    path.write_text(json.dumps(conf))
    return str(path)


def test_window_reads_match_hf_cache_step_by_step(tmp_path):
    # Every decode step of each layer reads what HF's cache layer for it holds before the step
    # (DynamicSlidingWindowLayer: w - 1 once full, the step's own key makes w; DynamicLayer: all):
    # the layers as the script reads them from the config, and cached_keys_read per step.
    for model in ("mistral", "gemma2"):
        spec = spec_of(["--hf_model_name_or_path", hf_swa_config(tmp_path, model)])
        for step in HF_SWA[model]["steps"]:
            for layer, cached in zip(spec["layers"], step["cached"]):
                attn = layer["attention"][0]
                assert cil.cached_keys_read(attn, context_before=step["context"])["core"] == cached
                # keys the step's query attends to: the cached ones plus its own
                assert cil.step_pairs(attn, context_before=step["context"], new_tokens=1)["core"] == cached + 1


def test_sliding_layers_match_hf_layer_classes(tmp_path, capsys):
    # Which layers slide: HF builds a sliding cache layer for Gemma 2's even layers only, and for
    # every Mistral layer; the script reads the same from the config.
    for model in ("gemma2", "mistral"):
        r = run(["--hf_model_name_or_path", hf_swa_config(tmp_path, model), "-s", "16", "-o", "2"])
        hf = [i for i, c in enumerate(HF_SWA[model]["layer_classes"])
              if c == "DynamicSlidingWindowLayer"]
        assert r["sliding_layers"] == hf and r["sliding_window"] == HF_SWA["window"]


def test_mistral_rolling_buffer_cuts_cache_8x_at_32k(capsys):
    # Jiang et al. 2023, "Mistral 7B", sec. 2 (Rolling Buffer Cache): with W = 4096, "on a
    # sequence length of 32k tokens, this reduces the cache memory usage by 8x". Setup: the
    # fixture Mistral-7B v0.1 config, context s + o = 32768, KV cache with and without the window.
    # Expected 8x: a rolling buffer of W = 4096 tokens (also what transformers' sliding cache keeps
    # allocated after a decode step: tests/fixtures/hf_cache_bytes.json, storage_bytes).
    args = ["--hf_model_name_or_path", cfg("mistral-7b"), "-s", "32767", "-o", "1"]
    swa, full = run(args), run(args + ["--sliding-window", "0"])
    assert swa["sliding_window"] == 4096 and swa["sliding_layers"] == list(range(32))
    assert full["sliding_window"] is None and full["sliding_layers"] == []
    assert full["kv_cache_bytes_per_gpu"] / swa["kv_cache_bytes_per_gpu"] == 8.0
    # 32 layers x 8 kv heads x 128 x (K, V) x 2 B = 128 KiB per token, 4096 tokens kept
    assert swa["kv_cache_bytes_per_gpu"] == 4096 * 128 * 1024


def test_mistral_swa_attention_speedup_at_16k(capsys):
    # Jiang et al. 2023, "Mistral 7B", sec. 2: "for a sequence length of 16K and W = 4096,
    # changes made to FlashAttention and xFormers yield a 2x speed improvement over a vanilla
    # attention baseline". Setup: Mistral-7B prefill of 16384 tokens on an A100-80GB, the
    # attention_core component with the window against without. Ours 2.29 (the pair count ratio:
    # the core is compute-bound there); the paper's baseline kernel is not named, so 20%.
    args = ["--hf_model_name_or_path", cfg("mistral-7b"), "-s", "16384", "-o", "1", "--gpu", "a100-80gb"]
    swa, full = run(args), run(args + ["--sliding-window", "0"])
    ratio = full["prefill_components_s"]["attention_core"] / swa["prefill_components_s"]["attention_core"]
    assert ratio == pytest.approx(2.0, rel=0.20)


def test_gemma2_half_the_layers_slide(capsys):
    # Gemma 2 (Gemma Team 2024, sec. 2): local sliding-window attention (4096) on every other
    # layer, global attention (8192) on the rest; HF Gemma2 slides on even layers. At an 8192-token
    # context the cache is (21 x 8192 + 21 x 4096) / (42 x 8192) = 0.75 of the full one
    # (transformers' sliding cache keeps W - 1 tokens between steps).
    args = ["--hf_model_name_or_path", cfg("gemma-2-9b"), "-s", "8191", "-o", "1"]
    swa, full = run(args), run(args + ["--sliding-window", "0"])
    assert swa["sliding_layers"] == list(range(0, 42, 2)) and swa["sliding_window"] == 4096
    assert swa["kv_cache_bytes_per_gpu"] / full["kv_cache_bytes_per_gpu"] == 0.75
    # pipeline stages of 21 layers: layers 0-20 hold 11 sliding and 10 global, layers 21-41 hold
    # 10 sliding and 11 global, so the second stage is the most-loaded one
    pp2 = run(args + ["-pp", "2"])
    per_layer = 2 * 8 * 256 * 2  # K and V, 8 kv heads, head_dim 256, 2 B
    assert pp2["kv_cache_bytes_per_gpu"] == per_layer * (10 * 4096 + 11 * 8192)


def test_sliding_window_flag_and_config_rules(capsys):
    # Qwen2.5 ships sliding_window 131072 with use_sliding_window false: no window.
    q = run(["--hf_model_name_or_path", cfg("qwen2.5-7b"), "-s", "1000", "-o", "4"])
    assert q["sliding_window"] is None and q["sliding_layers"] == []
    # the flag puts a window on every layer of a model without one, and 0 takes it off again
    r = run(GPT67 + ["-s", "1000", "-o", "4", "--sliding-window", "256"])
    assert r["sliding_window"] == 256 and r["sliding_layers"] == list(range(32))
    assert "sliding window 256 on 32 of 32 layers" in cil.format_report(r)
    plain = run(GPT67 + ["-s", "1000", "-o", "4"])
    assert plain["sliding_window"] is None and "sliding" not in cil.format_report(plain)
    assert r["total_s"] < plain["total_s"]
    # a window at least as long as the context changes nothing
    wide = run(GPT67 + ["-s", "1000", "-o", "4", "--sliding-window", "1004"])
    assert wide["total_s"] == pytest.approx(plain["total_s"], rel=1e-12)
    assert wide["kv_cache_bytes_per_gpu"] == plain["kv_cache_bytes_per_gpu"]
    # Gemma 2 with a smaller window keeps its layer pattern
    g = run(["--hf_model_name_or_path", cfg("gemma-2-9b"), "--sliding-window", "1024"])
    assert g["sliding_window"] == 1024 and g["sliding_layers"] == list(range(0, 42, 2))


def test_moe_distinct_experts_monte_carlo():
    """E (1 - (1 - k/E)^n) against a seeded simulation of uniform top-k routing (k distinct
    experts per token): within 3% at 2000 trials."""
    rng = random.Random(0)
    for E, k, n in ((8, 2, 1), (8, 2, 4), (64, 6, 16), (128, 8, 64)):
        sim = sum(len({e for _ in range(n) for e in rng.sample(range(E), k)})
                  for _ in range(2000)) / 2000
        assert math.isclose(cil.expected_distinct_experts(num_experts=E, topk=k, num_tokens=n),
                            sim, rel_tol=0.03)


def test_moe_decode_reads_fewer_experts_at_batch_1(capsys):
    # Mixtral-8x7B: 2 of 8 experts per token. Decode at batch 1 reads ~13 B of ~47 B weights.
    r1 = run(["--hf_model_name_or_path", cfg("mixtral-8x7b"), "-s", "128", "-o", "2", "-tp", "2"])
    r64 = run(["--hf_model_name_or_path", cfg("mixtral-8x7b"), "-s", "128", "-o", "2", "-tp", "2",
               "-b", "64"])
    assert r1["decode_step_bytes_per_gpu"] < 0.4 * r64["decode_step_bytes_per_gpu"]


def test_mla_cache_is_latent(capsys):
    # DeepSeek-V2-Lite: kv_lora_rank 512 + qk_rope_head_dim 64 = 576 values per token per layer,
    # vs 2 x 16 heads x 192 for the expanded heads (DeepSeek-V2 paper, sec. 2.1.2 / table 1).
    r = run(["--hf_model_name_or_path", cfg("deepseek-v2-lite"), "-s", "1000", "-o", "24"])
    L = r["model"]["num_layers"]
    assert r["kv_cache_bytes_per_gpu"] == 1 * 1024 * L * 576 * 2


def test_memory_warning(capsys):
    # Llama-3-8B at bf16 is ~16 GB of weights: it does not fit a 12 GiB card.
    r = run(["--hf_model_name_or_path", cfg("llama-3-8b"), "--gpu-memory-gib", "12"])
    assert not r["fits_in_memory"]
    assert "exceed" in capsys.readouterr().err


def test_quantized_weights_decode_faster(capsys):
    base = run(["--hf_model_name_or_path", cfg("llama-3-8b")])
    w4 = run(["--hf_model_name_or_path", cfg("llama-3-8b"), "--precision", "w4a16"])
    assert w4["decode_per_token_s"] < 0.5 * base["decode_per_token_s"]


def test_critical_batch_near_ops_per_byte(capsys):
    # Weight matmuls of a dense model turn compute-bound near b = F/B (Pope et al. 2022, sec. 3):
    # A100: 312e12 x 0.7 / (2039e9 x 0.7) = 153 FLOPs per byte = 153 tokens at 2 B/weight.
    r = run(GPT67 + ["-s", "16", "--gpu", "a100-80gb"])
    assert 120 <= r["critical_batch_size_matmuls"] <= 190


# --- --gpu through a stand-in hardware module -------------------------------------------------
def fake_hardware(rec):
    mod = types.ModuleType("hardware")

    def get_accelerator(name):
        if name.lower() != rec["name"]:
            raise KeyError(f"unknown accelerator {name!r}; nearest: {rec['name']}")
        return dict(rec)
    mod.get_accelerator = get_accelerator
    return mod


STAND_IN = {"name": "fakegpu", "memory_bytes": 80e9, "memory_bandwidth_bytes_per_s": 2.0e12,
            "peak_flops_per_s": {"bf16": 400e12, "fp16": 400e12, "fp8": 800e12},
            "scale_up_bandwidth_bytes_per_s": 200e9, "achievable_matmul_flops_per_s": {"bf16": 300e12},
            "achievable_memory_bandwidth_bytes_per_s": 1.6e12}


def test_gpu_flag_uses_stand_in(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "hardware", fake_hardware(STAND_IN))
    r = run(GPT67 + ["--gpu", "fakegpu", "-s", "64", "-o", "4"])
    hw = r["hardware"]
    assert hw["gpu"] == "fakegpu" and hw["peak_flops_per_s"] == 400e12
    # the measured best-shape matmul rate, scaled by the shape factor the defaults keep below the
    # A100's (0.70 / 0.869); the bandwidth figure is used as measured
    assert math.isclose(hw["flops_per_s"], 300e12 * cil.MAMF_SHAPE_FACTOR)
    assert math.isclose(hw["bytes_per_s"], 1.6e12)
    assert hw["link_bytes_per_s"] == 200e9 and hw["gpu_memory_bytes"] == 80e9
    # an explicit flag wins over the table
    r = run(GPT67 + ["--gpu", "fakegpu", "--compute-efficiency", "0.5", "--precision", "fp8"])
    assert r["hardware"]["flops_per_s"] == 400e12


def test_gpu_unknown_exits_2(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "hardware", fake_hardware(STAND_IN))
    with pytest.raises(SystemExit) as e:
        main(["--gpu", "nosuch"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "unknown accelerator" in err[-1] and "fakegpu" in err[-1]


def test_gpu_without_hardware_exits_2(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "hardware", None)  # import raises ImportError
    with pytest.raises(SystemExit) as e:
        main(["--gpu", "a100"])
    assert e.value.code == 2
    assert "--peak-tflops" in capsys.readouterr().err


# --- bad input: one line, exit 2 -------------------------------------------------------------
@pytest.mark.parametrize("args", [
    ["-b", "0"], ["-s", "0"], ["-o", "0", "-c", "4"], ["-tp", "0"], ["-pp", "0"],
    ["--weight-bits", "5"], ["--activation-bits", "3"], ["--kv-cache-bits", "12"],
    ["--compute-efficiency", "1.5"], ["--memory-efficiency", "0"], ["--tp-efficiency", "-1"],
    ["--peak-tflops", "0"], ["--memory-bandwidth-gbps", "-5"], ["--gpu-memory-gib", "0"],
    ["--tp-bandwidth-gbps", "0"], ["--kernel-overhead-us", "-1"], ["--tp-latency-us", "-2"],
    ["-a", "48", "-tp", "5"],                       # heads not divisible by tp
    ["-a", "48", "--num-kv-heads", "6", "-tp", "4"],  # kv 6 vs tp 4
    ["-l", "4", "-pp", "8"],                        # more stages than layers
    ["--hidden-size", "0"], ["--hf_model_name_or_path", "/nonexistent/config.json"],
    ["--precision", "fp7"], ["--activation-bits", "4", "--weight-bits", "4", "--gpu-memory-gib", "nan"],
    ["--sliding-window", "-1"], ["--request-overhead-ms", "-1"],
])
def test_bad_input_exits_2(args, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("usage:") is False and "error" in err[-1]


# --- properties --------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(b=st.integers(1, 300), s=st.integers(1, 5000), o=st.integers(1, 500),
       which=st.sampled_from(["b", "s", "o"]), step=st.integers(1, 1000),
       tp=st.sampled_from([1, 2, 4, 8]), kv=st.sampled_from([1, 2, 8]),
       bits=st.sampled_from(["fp16", "fp8", "w4a16"]), win=st.sampled_from([0, 0, 1, 64, 3000]))
def test_latency_never_falls_when_work_grows(b, s, o, which, step, tp, kv, bits, win):
    base = dict(b=b, s=s, o=o)
    more = dict(base, **{which: base[which] + step})

    def go(p):
        return main(SMALL + ["--num-kv-heads", str(kv), "-tp", str(tp), "--precision", bits,
                             "--sliding-window", str(win),
                             "-b", str(p["b"]), "-s", str(p["s"]), "-o", str(p["o"]), "--json"])
    r0, r1 = go(base), go(more)
    tol = 1e-12
    assert r1["total_s"] >= r0["total_s"] - tol
    assert r1["prefill_s"] >= r0["prefill_s"] - tol
    assert r1["decode_last_step_s"] >= r0["decode_last_step_s"] - tol


# a small model with a window on every layer (SMALL + the flag) and one with Gemma 2's alternating
# layers (its config cut to 4 layers: 0 and 2 slide)
WINDOWED = {"all": SMALL, "alternating": ["--hf_model_name_or_path", cfg("gemma-2-9b"), "-l", "4"]}


@settings(max_examples=40, deadline=None)
@given(model=st.sampled_from(sorted(WINDOWED)), b=st.integers(1, 300), s=st.integers(1, 5000),
       o=st.integers(1, 500), which=st.sampled_from(["b", "s", "o"]), step=st.integers(1, 1000),
       tp=st.sampled_from([1, 2, 4]), pp=st.sampled_from([1, 2]), win=st.integers(1, 6000),
       bits=st.sampled_from(["fp16", "fp8", "w4a16"]))
def test_windowed_latency_never_above_full_and_grows_with_work(model, b, s, o, which, step, tp, pp,
                                                                win, bits):
    """A window only removes attention work and cache: for the same model and workload every
    time and the KV cache are at most the unwindowed ones; and windowed latency never falls when
    b, s or o grows."""
    def go(w, p):
        return main(WINDOWED[model] + ["-tp", str(tp), "-pp", str(pp), "--precision", bits,
                                       "--sliding-window", str(w), "-b", str(p["b"]),
                                       "-s", str(p["s"]), "-o", str(p["o"]), "--json"])
    base = dict(b=b, s=s, o=o)
    swa, full = go(win, base), go(0, base)
    assert swa["sliding_layers"] and not full["sliding_layers"]
    for key in ("prefill_s", "decode_first_step_s", "decode_last_step_s", "decode_per_token_s",
                "decode_total_s", "total_s", "kv_cache_bytes_per_gpu"):
        assert swa[key] <= full[key] * (1 + 1e-12), key
    more = go(win, dict(base, **{which: base[which] + step}))
    for key in ("total_s", "prefill_s", "decode_last_step_s"):
        assert more[key] >= swa[key] * (1 - 1e-12), key


@settings(max_examples=40, deadline=None)
@given(model=st.sampled_from(sorted(f[:-5] for f in os.listdir(CONFIGS) if f.endswith(".json"))),
       data=st.data())
def test_decode_memory_bound_at_batch_1_every_model_and_gpu(model, data):
    try:
        hardware = importlib.import_module("hardware")
    except ImportError:
        pytest.skip("hardware.py not beside the script")
    names = hardware.list_accelerators()
    gpu = data.draw(st.sampled_from(names))
    rec = hardware.get_accelerator(gpu)
    if not any((rec["peak_flops_per_s"] or {}).get(k) for k in ("bf16", "fp16")):
        return
    try:
        spec, _ = cil.resolve_model_spec(vars(cil.build_parser().parse_args(
            ["--hf_model_name_or_path", cfg(model)])))
    except ValueError as exc:  # families whose layers the block does not count yet refuse, by design
        assert "linear-attention or state-space" in str(exc), (model, exc)
        return
    args = cil.build_parser().parse_args(["--gpu", gpu])
    args.activation_bits = 16
    hw, _ = cil.hardware_from_flags(args, cil.build_parser())
    r = cil.forward_pass(spec, hw, tp=1, pp=1, batch=1, new_tokens=1, context_before=1024,
                         w_bits=16, a_bits=16, kv_bits=16, absorbed=True)
    assert r["bound"] == "memory", (model, gpu)


# --- the collectives agree with calc_comm.py ---------------------------------------------------
def test_allreduce_defaults_are_the_collectives_block_and_its_measurements():
    # The serving defaults are the collectives block's own objects, not retyped copies (a retyped
    # 0.80 is another float object), and a plain run's resolved hardware carries them: NCCL's call
    # cost on every all-reduce and hand-off, the ring's share of the NVLink line rate.
    collectives = importlib.import_module("llmcalc.comm.collectives")
    stacks = importlib.import_module("llmcalc.serve.stacks")
    assert stacks.DEFAULT_ALLREDUCE_EFFICIENCY is collectives.SCALE_UP_EFFICIENCY
    alpha = collectives.ALPHA_LAUNCH_S
    assert stacks.DEFAULT_ALLREDUCE_LATENCY_US * 1e-6 == pytest.approx(alpha, rel=1e-12)
    args = cil.build_parser().parse_args(["--serving-stack", "kernels", "-tp", "2"])
    hw, _ = cil.hardware_from_flags(args, cil.build_parser())
    assert hw["link_efficiency"] == collectives.SCALE_UP_EFFICIENCY
    assert hw["nccl_latency_s"] == hw["link_latency_s"] == pytest.approx(alpha, rel=1e-12)
    # by value, against the measurements the block names: nccl-tests' all_reduce_perf floor of
    # 10.14 us on 2 x A100 is the call cost plus two LL hops over NVLink (within 0.1 us), and ring
    # busbw / line rate is 235/300 on A100 and 370/450 on H100 (0.80 lies between them)
    hops = 2 * collectives.ALPHA_HOP_S["ll"]["intra"]
    assert cil.DEFAULT_ALLREDUCE_LATENCY_US + hops * 1e6 == pytest.approx(10.14, abs=0.1)
    assert 235 / 300 <= cil.DEFAULT_ALLREDUCE_EFFICIENCY <= 370 / 450


@pytest.mark.parametrize("tp,algo", [(8, "ring"), (16, "auto"), (32, "auto")])
def test_tp_allreduce_agrees_with_calc_comm_cli(tp, algo):
    """A decode step's TP all-reduce under NCCL (kernels stack, no custom kernel) costs what
    calc_comm.py's CLI says for the same message on H100 nodes of 8: its ring inside a node, its
    own algorithm choice when the group spans 2 or 4 nodes (the issue: cost the hops beyond the
    scale-up domain instead of refusing). Llama-2-7B's residual at b 1 is 4096 x 2 bytes."""
    from conftest import run_main
    import calc_comm
    lat, _, _ = run_main(cil.main, ["--hf_model_name_or_path", cfg("llama-2-7b"), "--gpu", "h100", "-tp", str(tp),
                                    "--serving-stack", "kernels", "--json"])
    calls = 2 * 32  # attention and MLP of 32 layers
    comm, _, _ = run_main(calc_comm.main, ["--op", "all_reduce", "--size", "8192", "--num-gpus", str(tp),
                                           "--gpus-per-node", "8", "--gpu", "h100", "--algo", algo, "--json"])
    assert lat["decode_first_step_components_s"]["tp_allreduce"] / calls == pytest.approx(comm["time_s"], rel=1e-9)


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_pcie_peer_allreduce_agrees_with_calc_comm_cli(tp):
    """L40S (PCIe peers, no NVLink): the decode step's TP all-reduce is calc_comm.py's for the same
    message, both from the collectives block's PCIe efficiency and server size."""
    from conftest import run_main
    import calc_comm
    lat, _, _ = run_main(cil.main, ["--hf_model_name_or_path", cfg("llama-2-7b"), "--gpu", "l40s", "-tp", str(tp),
                                    "--serving-stack", "vllm", "--json"])
    comm, _, _ = run_main(calc_comm.main, ["--op", "all_reduce", "--size", "8192", "--num-gpus", str(tp),
                                           "--gpu", "l40s", "--algo", "ring", "--json"])
    assert lat["decode_first_step_components_s"]["tp_allreduce"] / 64 == pytest.approx(comm["time_s"], rel=1e-9)


@pytest.mark.parametrize("args", [
    ["-l", "96", "-hs", "12288", "-a", "96", "-v", "51200", "-tp", "8", "-s", "512", "-o", "32"],
    ["--hf_model_name_or_path", cfg("llama-2-7b"), "-s", "2048", "-o", "1"],
    ["--hf_model_name_or_path", cfg("mixtral-8x7b"), "--weight-bits", "4", "-b", "16", "--json"],
    ["-l", "80", "-hs", "8192", "-a", "64", "--num-kv-heads", "8", "-tp", "4", "-pp", "2",
     "--peak-tflops", "989", "--memory-bandwidth-gbps", "3350", "--gpu-memory-gib", "80"],
    ["--hf_model_name_or_path", cfg("llama-3.1-8b"), "--gpu", "h100", "-s", "467", "-o", "256", "-c", "32"],
    ["--hf_model_name_or_path", cfg("llama-3.1-8b"), "--gpu", "h100", "--request-rate", "8",
     "--serving-stack", "tensorrt-llm"],
    ["--hf_model_name_or_path", cfg("llama-3.1-8b"), "--gpu", "h100", "--search", "--num-gpus", "8", "-s", "2000",
     "-o", "200", "--max-ttft-ms", "300", "--max-tpot-ms", "20", "--disaggregated"],
    ["--hf_model_name_or_path", cfg("deepseek-v3"), "--gpu", "h100", "-tp", "1", "-dp", "16", "-ep", "16",
     "--serving-stack", "sglang", "-c", "1024", "-s", "2000", "-o", "200"],
])
def test_docstring_examples_run(args, capsys):
    """Smoke: the module docstring's example commands (fixtures stand in for the paths)."""
    res = main(args)
    if "--search" in args:
        assert res["pareto_front"]
        return
    assert res["total_s"] > res["prefill_s"] > 0 or res["output_tokens"] == 1


def test_gpu_memory_uses_usable_bytes_when_present(monkeypatch):
    # hardware.py's memory_usable_bytes (driver-reported, e.g. nvidia-smi 81559 MiB on an H100
    # 80GB HBM3) is the capacity for the fits-in-memory check; without it, memory_bytes.
    rec = dict(STAND_IN, memory_usable_bytes=81559 * 2 ** 20)
    monkeypatch.setitem(sys.modules, "hardware", fake_hardware(rec))
    r = run(GPT67 + ["--gpu", "fakegpu", "-s", "64", "-o", "4"])
    assert r["hardware"]["gpu_memory_bytes"] == 81559 * 2 ** 20
    r = run(GPT67 + ["--gpu", "fakegpu", "-s", "64", "-o", "4", "--gpu-memory-gib", "40"])
    assert r["hardware"]["gpu_memory_bytes"] == 40 * 2 ** 30


# --- --gpu link resolution: no silent fallback; full mesh as calc_comm.py costs it --------------
def test_gpu_without_scale_up_link_needs_explicit_bandwidth(monkeypatch, capsys):
    # RTX 4090 class: no NVLink. Costing tp over a 300 GB/s NVLink default would be ~2x optimistic.
    monkeypatch.setitem(sys.modules, "hardware", fake_hardware(
        dict(STAND_IN, scale_up_bandwidth_bytes_per_s=None, scale_up_domain_size=1)))
    with pytest.raises(SystemExit) as e:
        main(GPT67 + ["--gpu", "fakegpu", "-tp", "2"])
    assert e.value.code == 2 and "--tp-bandwidth-gbps" in capsys.readouterr().err
    r = run(GPT67 + ["--gpu", "fakegpu", "-tp", "2", "--tp-bandwidth-gbps", "25"])
    assert r["hardware"]["link_bytes_per_s"] == 25e9


def test_tp_beyond_scale_up_domain_costs_the_network_or_exits_2(monkeypatch, capsys):
    # NVLink-bridged PCIe pairs (H100 PCIe): a domain of 2 GPUs. -tp 4 crosses to the other pair over
    # the record's NIC when it has one (costed, the issue asks for it); without one, exit 2 naming
    # the flag that supplies it.
    monkeypatch.setitem(sys.modules, "hardware", fake_hardware(dict(STAND_IN, scale_up_domain_size=2)))
    with pytest.raises(SystemExit) as e:
        main(GPT67 + ["--gpu", "fakegpu", "-tp", "4"])
    assert e.value.code == 2 and "--scale-out-gbps" in capsys.readouterr().err
    near = run(GPT67 + ["--gpu", "fakegpu", "-tp", "2", "--scale-out-gbps", "25"])
    far = run(GPT67 + ["--gpu", "fakegpu", "-tp", "4", "--scale-out-gbps", "25"])
    assert "network at 25 GB/s" in far["mode"]
    per_call = [r["decode_first_step_components_s"]["tp_allreduce"] for r in (near, far)]
    assert per_call[1] > per_call[0]  # the hop over the NIC costs more than the bridge


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_full_mesh_link_matches_calc_comm(monkeypatch, tp, capsys):
    # AMD MI300X data sheet: xGMI full mesh, 7 peers x 64 GB/s per direction (448 in all).
    try:
        cc = importlib.import_module("calc_comm")
    except ImportError:
        pytest.skip("calc_comm.py not beside the script")
    rec = dict(STAND_IN, scale_up_bandwidth_bytes_per_s=448e9, scale_up_domain_size=8,
               scale_up_topology="mesh")
    monkeypatch.setitem(sys.modules, "hardware", fake_hardware(rec))
    link = run(GPT67 + ["--gpu", "fakegpu", "-tp", str(tp)])["hardware"]["link_bytes_per_s"]
    net = {"intra_bytes_per_s": 448e9, "mesh_domain": 8}
    assert math.isclose(link, cc.group_intra_bytes_per_s(net, gpus_in_node=tp, op="all_reduce"))
    assert link <= (tp - 1) * 64e9 + 1


# --- layer kinds: chunked, DSA, kv-shared, MoE per layer ----------------------------------------
# Every check below compares with a count made here from the definition (a mask, a top-k, a layer
# pattern) or with another script's number, not with the script's own formula re-typed.
HW_STEP = {"flops_per_s": 200e12, "attention_flops_per_s": 150e12, "bytes_per_s": 1.4e12,
           "kernel_overhead_s": 4e-6, "link_bytes_per_s": 300e9, "link_latency_s": 8.9e-6,
           "link_efficiency": 0.8}


def write_config(tmp_path, name, conf):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(conf))
    return str(path)


def step_sum_and_closed_form(spec, b, s, o, **kw):
    """(sum of forward_pass over the o-1 decode steps one by one, decode_total_s)."""
    kw = dict(dict(tp=1, pp=1, w_bits=16, a_bits=16, kv_bits=16), **kw)
    steps = sum(cil.forward_pass(spec, HW_STEP, batch=b, new_tokens=1, context_before=c,
                                 absorbed=True, **kw)["time_s"] for c in range(s, s + o - 1))
    return steps, cil.decode_total_s(spec, HW_STEP, batch=b, prompt_tokens=s, output_tokens=o, **kw)


# Llama-4-Scout-like text model (llama4_text; shapes of meta-llama/Llama-4-Scout-17B-16E's
# text_config: h 5120, 40 heads, 8 kv heads of 128, 16 experts top-1 of 8192 with a shared one,
# dense MLP 16384, vocab 202048), cut to 8 layers with transformers 5's layer_types: 3 chunked
# layers, then a full one, twice. attention_chunk_size is 8192 in Scout; 16 here crosses chunks
# within a short run.
SCOUT = {"model_type": "llama4_text", "hidden_size": 5120, "num_hidden_layers": 8,
         "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
         "intermediate_size": 8192, "intermediate_size_mlp": 16384, "num_local_experts": 16,
         "num_experts_per_tok": 1, "interleave_moe_layer_step": 1, "vocab_size": 202048,
         "attention_chunk_size": 8192,
         "layer_types": (["chunked_attention"] * 3 + ["full_attention"]) * 2}


def test_decode_sum_is_exact_for_chunked_layers(tmp_path, capsys):
    """A chunked layer's keys go 1..C, then 1..C again: the closed form (full chunks + the parts at
    both ends) equals the step-by-step sum, from inside the first chunk to many chunks later."""
    for chunk in (16, 8192):
        path = write_config(tmp_path, f"scout{chunk}", dict(SCOUT, attention_chunk_size=chunk))
        spec = spec_of(["--hf_model_name_or_path", path])
        assert [x["attention"][0]["span"] for x in spec["layers"]] == (["chunked"] * 3 + ["full"]) * 2
        for b, s, o, tp in ((1, 5, 60, 1), (3, 16, 40, 8), (2, 31, 3, 2), (1, 8000, 400, 4),
                            (4, 16380, 30, 1)):
            steps, total = step_sum_and_closed_form(spec, b, s, o, tp=tp)
            assert math.isclose(total, steps, rel_tol=1e-9), (chunk, b, s, o)


def test_chunked_reads_match_the_chunk_mask(tmp_path, capsys):
    """A decode query at position c of a chunked layer sees the keys p <= c with p // C == c // C
    (transformers' chunked mask); the cached ones are read. Decode cache reads at b = 1, summed
    here over the 8 layers (every 4th full), against the script's, across chunk boundaries."""
    C = 16
    path = write_config(tmp_path, "scout", dict(SCOUT, attention_chunk_size=C))
    attn = spec_of(["--hf_model_name_or_path", path])["layers"][0]["attention"][0]
    per_token = 2 * 8 * 128 * 2  # K and V, 8 kv heads of 128, 2 B
    for c in (0, 1, 15, 16, 17, 31, 32, 40, 100):
        same_chunk = sum(1 for p in range(c) if p // C == c // C)
        assert cil.cached_keys_read(attn, context_before=c)["core"] == same_chunk
        if c:
            r = run(["--hf_model_name_or_path", path, "-s", str(c), "-o", "2"])
            brute = sum(same_chunk if i % 4 != 3 else c for i in range(8)) * per_token
            assert r["decode_step_cache_bytes_read_per_gpu"] == brute, c


def dsa_config(tmp_path, **extra):
    # DeepSeek-V3.2 (deepseek-ai/DeepSeek-V3.2-Exp config.json): DeepSeek-V3's shapes plus the
    # lightning indexer, index_n_heads 64, index_head_dim 128, index_topk 2048.
    conf = json.load(open(cfg("deepseek-v3"), encoding="utf-8"))
    conf.update(model_type="deepseek_v32", index_n_heads=64, index_head_dim=128, index_topk=2048,
                **extra)
    return write_config(tmp_path, "dsv32", conf)


def test_dsa_decode_reads_cap_at_top_k(tmp_path, capsys):
    """DeepSeek-V3.2 sec. 2.1: the indexer scores every cached key (its own d_I = 128 cache) and
    the core attends to the top-k = 2048 of the keys a query sees (its own included, here taken
    as among them). Against DeepSeek-V3 (same shapes, no indexer), cache reads at b = 1 differ by
    the indexer's keys alone below top-k; above it the core's latent reads stop at k - 1."""
    k, L, latent, index_key = 2048, 4, (512 + 64) * 2, 128 * 2  # bytes per token and layer
    # How many keys the core attends to: transformers' DeepSeek-V3.2 indexer returns
    # min(index_topk, keys) indices per query (measured: tests/fixtures/hf_flop_counts.json,
    # "deepseek_v32-seq4096", top-k 2048 of 4096 keys, and 4096 of 4096 with index_topk 4096).
    m = load_json("hf_flop_counts.json")["deepseek_v32-seq4096"]
    for call in list(m["indexer"]["calls"].values()) + list(m["binding_checks"]["index_topk"]["indexer_calls"].values()):
        assert call["topk_indices_shape"][-1] == min(call["index_topk"], call["keys"])
    for c in (100, 2046, 2047, 2048, 5000):
        core = min(c + 1, k)  # a decode query at position c sees c + 1 keys, its own included
        dsa = run(["--hf_model_name_or_path", dsa_config(tmp_path), "-l", str(L), "-s", str(c), "-o", "2"])
        v3 = run(["--hf_model_name_or_path", cfg("deepseek-v3"), "-l", str(L), "-s", str(c), "-o", "2"])
        assert dsa["decode_step_cache_bytes_read_per_gpu"] == L * ((core - 1) * latent + c * index_key)
        if c < k:
            assert (dsa["decode_step_cache_bytes_read_per_gpu"] - v3["decode_step_cache_bytes_read_per_gpu"]
                    == L * c * index_key)
    # memory: the latent and the indexer's keys for all s + o tokens, the latter on their own line
    r = run(["--hf_model_name_or_path", dsa_config(tmp_path), "-l", str(L), "-s", "5000", "-o", "8"])
    assert r["kv_cache_bytes_per_gpu"] == L * 5008 * latent
    assert r["indexer_cache_bytes_per_gpu"] == L * 5008 * index_key
    assert "indexer keys" in cil.format_report(r)
    assert any("DSA (top-2048)" in x for x in [r["convention"]])


def test_decode_sum_is_exact_for_dsa_layers(tmp_path, capsys):
    """Below, across and above top-k (the core's cached reads stop growing at k - 1, the indexer's
    do not), at TP 1 and 8: the closed form equals the step-by-step sum."""
    spec = spec_of(["--hf_model_name_or_path", dsa_config(tmp_path), "-l", "4"])
    for b, s, o, tp in ((1, 100, 10, 1), (2, 2000, 100, 8), (1, 5000, 5, 1), (8, 2047, 3, 8)):
        steps, total = step_sum_and_closed_form(spec, b, s, o, tp=tp)
        assert math.isclose(total, steps, rel_tol=1e-9), (b, s, o, tp)


def test_gemma2_decode_reads_at_16k_match_its_42_layers(capsys):
    """Gemma 2 9B (Gemma Team 2024, sec. 2; HF Gemma2: even layers local, window 4096): a decode
    query at position c reads, on a local layer, the cached keys p with c - p < 4096, on a global
    layer all c; 2 x 8 kv heads x 256 x 2 B per key. Counted key by key over the 42 layers."""
    c = 16384
    r = run(["--hf_model_name_or_path", cfg("gemma-2-9b"), "-s", str(c), "-o", "2"])
    local = sum(1 for p in range(c) if c - p < 4096)
    brute = sum(local if i % 2 == 0 else c for i in range(42)) * 2 * 8 * 256 * 2
    assert r["decode_step_cache_bytes_read_per_gpu"] == brute


def test_moe_only_on_moe_layers_deepseek_v3(capsys):
    """DeepSeek-V3 config: first_k_dense_replace 3, so of its first 5 layers 0-2 are dense (width
    18432) and 3-4 MoE (256 routed experts, top-8, one shared). Weights and a batch-1 decode's
    weight reads against calc_transformer_params' count of the same 5 layers."""
    import calc_transformer_params as ctp
    args = ["--hf_model_name_or_path", cfg("deepseek-v3"), "-l", "5"]
    r = run(args + ["-s", "64", "-o", "2", "--weight-bits", "16"])  # bf16, not the checkpoint's fp8
    assert [(k["layers"], k["first_layer"], k["mlp"]) for k in r["layer_kinds"]] == [
        (3, 0, "dense 18432"), (2, 3, "moe 8/256 +shared")]
    p = ctp.main(args + ["--json"])
    assert r["weight_bytes_per_gpu"] == 2 * p["total_params"]  # bf16, tp 1
    # batch 1: one token runs 8 experts, so the MoE layers read 8 of their 256 (norms are not
    # matmul reads; the head is)
    pl = p["per_layer"]
    expect = 2 * (3 * (pl["dense_layer_total"] - pl["norms"])
                  + 2 * (pl["moe_layer_total"] - pl["norms"] - pl["moe_routed_experts"] + 8 * pl["moe_one_expert"])
                  + p["output_head_params"])
    assert math.isclose(r["decode_step_weight_bytes_read_per_gpu"], expect, rel_tol=1e-12)


def test_kv_shared_layers_cache_nothing_but_read(tmp_path, capsys):
    """Gemma 4 (transformers' Gemma4TextConfig): the last num_kv_shared_layers layers reuse an
    earlier layer's K/V, so they hold no cache, yet their attention reads those keys. Here 6
    layers (sliding, sliding, full, x2; window 32), the last 3 shared; sliding layers 2 kv heads of
    64, full ones of global_head_dim 128."""
    conf = {"model_type": "gemma4_text", "hidden_size": 512, "num_hidden_layers": 6,
            "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64, "global_head_dim": 128,
            "intermediate_size": 1024, "vocab_size": 1000, "sliding_window": 32,
            "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2,
            "num_kv_shared_layers": 3, "hidden_size_per_layer_input": 0}
    s, o = 100, 10
    r = run(["--hf_model_name_or_path", write_config(tmp_path, "gemma4", conf), "-s", str(s), "-o", str(o)])
    local, full = 2 * 2 * 64 * 2, 2 * 2 * 128 * 2  # K and V bytes per token
    # reads at c = s: local layers the keys with c - p < 32, full layers all
    seen = sum(1 for p in range(s) if s - p < 32)
    assert r["decode_step_cache_bytes_read_per_gpu"] == 2 * (2 * seen * local + s * full)
    assert r["kv_cache_bytes_per_gpu"] < 2 * (s + o) * full  # only layers 0-2 hold a cache
    shared = [k for k in r["layer_kinds"] if "kv-shared" in k["attention"]]
    assert sum(k["layers"] for k in shared) == 3
    assert all(k["kv_cache_bytes_per_layer_per_gpu"] == 0 for k in shared)


def test_zero_computation_experts_monte_carlo():
    """LongCat-Flash (sec. 2.1): a router picks k of E real + Z zero-computation experts; the
    distinct real experts n tokens touch, E (1 - (1 - k/(E+Z))^n), against a seeded simulation
    of uniform routing, within 3% at 1000 trials."""
    rng = random.Random(1)
    for E, Z, k, n in ((512, 256, 12, 1), (512, 256, 12, 8), (16, 8, 2, 5)):
        sim = sum(len({e for _ in range(n) for e in rng.sample(range(E + Z), k) if e < E})
                  for _ in range(1000)) / 1000
        mlp = {"num_experts": E, "zero_experts": Z, "topk": k}
        assert math.isclose(cil.expected_distinct_real_experts(mlp, num_tokens=n), sim, rel_tol=0.03)


def test_layer_kinds_add_up_to_the_step(capsys):
    """The per-kind breakdown (time per layer of each kind, its kernels and all-reduces in) times
    the layer counts, plus the head, hand-offs and the two model-level kernels, is the step."""
    for args in (["--hf_model_name_or_path", cfg("gemma-2-9b"), "-tp", "2", "-pp", "2"],
                 ["--hf_model_name_or_path", cfg("deepseek-v3"), "-l", "6", "-tp", "8", "-b", "8"]):
        r = run(args + ["-s", "3000", "-o", "4"])
        assert sum(k["layers"] for k in r["layer_kinds"]) == r["model"]["num_layers"]
        comp = r["decode_first_step_components_s"]
        rest = comp["output_head"] + comp["pp_handoff"] + 2 * r["hardware"]["kernel_overhead_s"]
        assert math.isclose(sum(k["decode_first_step_s"] for k in r["layer_kinds"]) + rest,
                            r["decode_first_step_s"], rel_tol=1e-12)


def test_mode_and_warnings_are_stated(tmp_path, capsys):
    """The report opens with the mode (b concurrent sequences as one batch; what tp and pp
    split) and the model's warnings as WARNING lines; --json carries them and the model summary."""
    conf = json.load(open(cfg("llama-2-7b"), encoding="utf-8"))
    conf["model_type"] = "somebody_new"  # read as Llama-style, with a warning
    path = write_config(tmp_path, "unknown", conf)
    r = run(["--hf_model_name_or_path", path, "-b", "4", "-tp", "2", "-s", "64", "-o", "4"])
    assert r["warnings"] and "somebody_new" in r["warnings"][0]
    assert "warning: model_type 'somebody_new'" in capsys.readouterr().err
    main(["--hf_model_name_or_path", path, "-b", "4", "-tp", "2", "-s", "64", "-o", "4"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("GPU: h100-sxm (the default GPU; --gpu NAME for another)")
    assert lines[1].startswith("Model: ") and "somebody_new" in lines[1]
    lines = lines[2:]
    assert lines[0].startswith("mode: b = 4 concurrent sequences run as one batch")
    assert "tp 2 = tensor parallel" in " ".join(lines[:6]) and "pp 1 = pipeline parallel" in " ".join(lines[:6])
    assert any(x.startswith("WARNING: model_type 'somebody_new'") for x in lines[:8])
    assert r["model"]["num_layers"] == 32 and r["model"]["layer_kinds"][0]["layers"] == 32
    assert "layers" not in r["model"]  # the summary, not the raw layer list


def test_checkpoint_format_sets_the_weight_bytes(capsys):
    """quantization_config by default, scales included: gpt-oss-20b's MXFP4 experts (4.25 bits) and
    bf16 rest equal the memory script's weights, which match OpenAI's 12.8 GiB checkpoint
    (test_calc_transformer_mem); --weight-bits 16 overrides; a batch-1 decode reads 4 of 32 experts
    per layer at 4.25 bits."""
    import calc_transformer_mem as mem
    args = ["--hf_model_name_or_path", cfg("gpt-oss-20b")]
    r = run(args + ["-s", "64", "-o", "2"])
    m = mem.main(args + ["--infer", "-s", "64", "-o", "2", "--json"])
    assert r["checkpoint_format"]["expert_bits"] == 4.25
    assert math.isclose(r["weight_bytes_per_gpu"], m["weights_bytes"], rel_tol=1e-12)
    r16 = run(args + ["-s", "64", "-o", "2", "--weight-bits", "16"])
    assert r16["checkpoint_format"] is None and r16["weight_bytes_per_gpu"] > 1.5 * r["weight_bytes_per_gpu"]
    assert r["decode_step_weight_bytes_read_per_gpu"] < r16["decode_step_weight_bytes_read_per_gpu"]


def test_gated_deltanet_decode_reads_a_constant_state():
    # Qwen3.5-35B-A3B (published config): 30 Gated DeltaNet layers, 10 full-attention layers with
    # 2 kv heads x 256. A decode step reads the KV cache of the 10 attention layers only (2,048 B
    # per token each at 16 bits) and each linear layer's constant state (read and written), so the
    # bytes a step reads grow by 10 x 2,048 B per token of context, not 40 x. The state is what
    # transformers' cache holds per Gated DeltaNet layer of this geometry (hf_cache_bytes.json,
    # "qwen3.5-35b-a3b": conv window in bf16 + fp32 recurrent state, the same at every N).
    from conftest import config_path, run_main
    runs = load_json("hf_cache_bytes.json")["qwen3.5-35b-a3b"]["runs"]
    (measured_state,) = {x["storage_bytes"] for r in runs for ph in ("prefill", "decode")
                         for x in r[ph]["layers"] if x["cache_layer_class"] == "LinearAttentionLayer"}
    out = {}
    for s in (4096, 65536):
        res, _, _ = run_main(cil.main, ["--hf_model_name_or_path", config_path("qwen3.5-35b-a3b-text"),
                                        "--prompt-tokens", str(s), "-o", "2", "--json"])
        out[s] = res
    grow = out[65536]["decode_step_cache_bytes_read_per_gpu"] - out[4096]["decode_step_cache_bytes_read_per_gpu"]
    assert grow == (65536 - 4096) * 10 * 2 * 2 * 256 * 2
    state = out[4096]["state_bytes_per_gpu"]
    assert state == out[65536]["state_bytes_per_gpu"] == 30 * measured_state
    kinds = {k["attention"]: k for k in out[65536]["layer_kinds"]}
    gdn = next(k for a, k in kinds.items() if a.startswith("gdn"))
    assert gdn["kv_cache_bytes_per_layer_per_gpu"] == 0 and gdn["state_bytes_per_layer_per_gpu"] == state / 30


def test_deepseek_v4_decode_reads_window_and_compressed_entries():
    # DeepSeek-V4-Flash (published config): every layer keeps a 128-token window of one K = V head
    # (512 wide); 21 compressed sparse layers add one entry per 4 tokens (its core reads at most the
    # indexer's top-512 of them, its indexer all of them, 128 wide), 20 heavily compressed layers one
    # per 128 tokens (all read by the core). Cache layout: transformers' DeepseekV4 caches
    # (tests/test_kv_cache_layers.py). Past the window and the top-k, a decode step at 16,384 cached
    # tokens reads more than at 8,192 by exactly the new compressed entries, at 16-bit elements.
    from conftest import config_path, run_main
    out = {}
    for s in (8192, 16384):
        res, _, _ = run_main(cil.main, ["--hf_model_name_or_path", config_path("deepseek-v4-flash"),
                                        "--prompt-tokens", str(s), "-o", "2", "--json"])
        out[s] = res["decode_step_cache_bytes_read_per_gpu"]
    grow = (16384 - 8192) // 4 * 128 * 2 * 21 + (16384 - 8192) // 128 * 512 * 2 * 20
    assert out[16384] - out[8192] == grow


@pytest.mark.parametrize("name", ["qwen3.5-35b-a3b-text", "nemotron-3-nano-30b-a3b", "kimi_linear-checkpoint-layout",
                                  "falcon_h1-class-defaults", "jamba-class-defaults", "lfm3-class-defaults",
                                  "deepseek-v4-flash"])
def test_hybrid_cache_agrees_with_the_memory_script(name):
    # Agreement (the two scripts carry the same cache rule): at 4 sequences of 32,768 + 1 tokens,
    # bf16 KV and activations, fp32 recurrent state, one GPU, the latency script's KV, indexer-key and
    # constant-state bytes equal the memory script's.
    from conftest import config_path, run_main
    import calc_transformer_mem as mem
    lat, _, _ = run_main(cil.main, ["--hf_model_name_or_path", config_path(name), "-b", "4",
                                    "--prompt-tokens", "32768", "-o", "1", "--json"])
    m, _, _ = run_main(mem.main, ["--hf_model_name_or_path", config_path(name), "--infer", "-b", "4",
                                  "-s", "32768", "-o", "1", "--json"])
    assert lat["kv_cache_bytes_per_gpu"] == m["kv_cache_bytes"]
    assert lat["indexer_cache_bytes_per_gpu"] == m["indexer_cache_bytes"]
    assert lat["state_bytes_per_gpu"] == m["state_cache_bytes"]


@pytest.mark.parametrize("name,tp,pp,bits", [
    ("llama-3-8b", 1, 1, 16), ("llama-3-8b", 16, 1, 16), ("llama-3-8b", 8, 2, 4),
    ("deepseek-v3", 8, 1, 16), ("glm-5", 8, 2, 8), ("gpt-oss-20b", 2, 2, 16), ("qwen3.5-35b-a3b-text", 4, 2, 4),
    ("opt-350m", 2, 1, 16), ("gemma-4-e2b-it-text", 2, 1, 16), ("falcon_h1-class-defaults", 4, 2, 8)])
def test_weights_per_gpu_agree_with_the_memory_script(name, tp, pp, bits):
    # Agreement (review finding: the latency script split every attention weight by tp, the memory
    # script keeps a kv head whole when kv < tp and MLA's down-projections and an indexer whole; and
    # the two disagreed on the bits of norms and routers). Both now place weights the same way:
    # per rank, matrices at --weight-bits, norms / routers / per-layer extras and embeddings and head
    # at >= 16 bits, the heaviest pipeline stage. Tolerance: exact (to the byte).
    from conftest import config_path, run_main
    import calc_transformer_mem as mem
    argv = ["--hf_model_name_or_path", config_path(name), "-tp", str(tp), "-pp", str(pp), "--weight-bits", str(bits)]
    lat, _, _ = run_main(cil.main, argv + ["--json"])
    m, _, _ = run_main(mem.main, argv + ["--infer", "--num-gpus", str(tp * pp), "--json"])
    assert lat["weight_bytes_per_gpu"] == pytest.approx(m["weights_bytes"], rel=1e-12), name


def test_rank_split_agrees_with_the_memory_script_on_a_hand_count():
    # Llama-3-8B (config fixture: L 32, h 4096, a 32, kv 8, d 128, f 14336, V 128256, untied
    # embeddings, no biases) at -tp 16: 8 KV heads over 16 ranks leave each rank one KV head
    # (replicated, Megatron-LM / vLLM), the query heads and the MLP split 16 ways, the norms whole,
    # embedding and head split over the vocabulary. Counted by hand here, at 16 bits:
    h, a, kv, d, f, V, L, tp = 4096, 32, 8, 128, 14336, 128256, 32, 16
    attn = h * (a // tp * d) + 2 * h * (max(1, kv // tp) * d) + (a // tp * d) * h  # q, k + v, o
    mlp = 3 * h * (f // tp)                                       # gate, up, down
    layer = attn + mlp + 2 * h                                    # + two RMSNorms
    per_gpu = L * layer + 2 * V * h // tp + h                     # + embed, head, final norm
    assert (attn, mlp, layer) == (3_145_728, 11_010_048, 14_163_968)
    from conftest import config_path, run_main
    import calc_transformer_mem as mem
    argv = ["--hf_model_name_or_path", config_path("llama-3-8b"), "-tp", str(tp)]
    lat, _, _ = run_main(cil.main, argv + ["--json"])
    m, _, _ = run_main(mem.main, argv + ["--infer", "--num-gpus", str(tp), "--json"])
    assert lat["layer_kinds"][0]["weight_bytes_per_layer_per_gpu"] == 2 * layer
    assert lat["weight_bytes_per_gpu"] == 2 * per_gpu
    assert m["params_per_gpu"] == per_gpu


def test_cross_node_pipeline_handoff_agrees_with_calc_comm_sendrecv():
    # Agreement (review finding: the hand-off across nodes used NVLink's hop and efficiency): Llama-3-8B
    # decode on H100s at -tp 8 -pp 2 hands one 8,192-byte activation (b h at 16 bits) from one node to
    # the other; calc_comm.py's sendrecv of that size between two 8-GPU nodes costs the same.
    from conftest import config_path, run_main
    import calc_comm
    lat, _, _ = run_main(cil.main, ["--hf_model_name_or_path", config_path("llama-3-8b"), "--gpu", "h100",
                                    "-tp", "8", "-pp", "2", "--json"])
    comm, _, _ = run_main(calc_comm.main, ["--op", "sendrecv", "--size", "8192", "--num-gpus", "16",
                                           "--gpus-per-node", "8", "--gpu", "h100", "--json"])
    assert lat["decode_first_step_components_s"]["pp_handoff"] == pytest.approx(comm["time_s"], rel=1e-9)


# --- continuous batching (--concurrency / --request-rate) ---------------------------------------

LLAMA7 = ["--hf_model_name_or_path", cfg("llama-2-7b")]


@settings(max_examples=30, deadline=None)
@given(c=st.integers(1, 60), step=st.integers(1, 40), s=st.integers(1, 4000), o=st.integers(1, 600),
       budget=st.sampled_from([None, 256, 2048, 8192]), tp=st.sampled_from([1, 2]),
       stack=st.sampled_from(sorted(cil.SERVING_STACKS)))
def test_more_concurrency_never_lowers_ttft_or_tpot(c, step, s, o, budget, tp, stack):
    """At a fixed layout, more requests in flight never make a request faster: TTFT, TPOT and
    end-to-end latency never fall as C grows (the issue's property)."""
    def go(conc):
        return main(SMALL + ["-tp", str(tp), "-s", str(s), "-o", str(o), "-c", str(conc),
                             "--serving-stack", stack, "--json"]
                    + (["--max-num-batched-tokens", str(budget)] if budget else []))["serving"]
    r0, r1 = go(c), go(c + step)
    for key in ("ttft_s", "tpot_s", "e2e_s"):
        assert r1[key] >= r0[key] * (1 - 1e-12), key
    assert r1["output_tokens_per_s"] >= r0["output_tokens_per_s"] * (1 - 1e-9) or r1["budget_bound"]


def test_concurrency_one_is_the_static_batch_of_one(capsys):
    """With one request in flight a step holds nothing else: TTFT is one prefill and TPOT one
    decode step at the mean context, as the static model costs them."""
    args = LLAMA7 + A100_80 + ["-s", "1000", "-o", "201"]
    conc = run(args + ["-c", "1"])["serving"]
    static = run(args)
    assert conc["ttft_s"] == pytest.approx(static["ttft_s"], rel=1e-9)
    assert conc["tpot_s"] == pytest.approx(static["decode_per_token_s"], rel=1e-4)  # mean context
    assert conc["decodes_per_step"] == 1 and conc["prompt_tokens_per_step"] == 0


def simulate_engine(C, s, o, K, steps=6000, warm=1500):
    """An engine simulated step by step, independent of the script's fluid formulas: C requests in
    a closed loop; each step decodes every request past its prompt (one token each), then fills
    the rest of the K-token budget with prompt chunks first come, first served (vLLM's scheduler
    rule); a finished request is replaced. Returns (requests finished per step, mean decodes per
    step, mean steps from arrival to first token) after a warm-up."""
    reqs = [[s, o - 1, 0] for _ in range(C)]  # prompt tokens left, decodes left, steps since arrival
    done = decodes = waited = 0
    for t in range(steps):
        dec = [r for r in reqs if r[0] == 0]
        left, finished = K - len(dec), []
        for r in reqs:
            r[2] += 1
        for r in dec:
            r[1] -= 1
            if r[1] <= 0:
                finished.append(r)
        for r in reqs:
            if r[0] > 0 and left > 0:
                take = min(r[0], left)
                r[0], left = r[0] - take, left - take
                if r[0] == 0:
                    waited += r[2] if t >= warm else 0
                    if r[1] <= 0:
                        finished.append(r)
        for r in finished:
            reqs.remove(r)
            reqs.append([s, o - 1, 0])
            done += t >= warm
        decodes += len(dec) if t >= warm else 0
    n = steps - warm
    return done / n, decodes / n, waited / max(done, 1)


@pytest.mark.parametrize("C,s,o,K", [(8, 1000, 100, 8192), (32, 500, 200, 2048), (64, 2000, 50, 2048),
                                     (16, 3000, 100, 2048), (100, 200, 400, 512), (4, 100, 10, 8192)])
def test_steady_state_matches_a_step_by_step_simulation(C, s, o, K, capsys):
    """The fluid steady state against the engine simulated step by step (same scheduler rule):
    requests per step and decodes per step within 10%, steps to the first token within one step
    (the fluid mean does not round a prompt up to whole chunks)."""
    sv = main(SMALL + ["-s", str(s), "-o", str(o), "-c", str(C), "--max-num-batched-tokens", str(K),
                       "--json"])["serving"]
    per_step, decodes, wait = simulate_engine(C, s, o, K)
    w = sv["steps_to_first_token"]
    assert C / (w + o - 1) == pytest.approx(per_step, rel=0.10)
    assert C * (o - 1) / (w + o - 1) == pytest.approx(decodes, rel=0.10)  # a step's mean decodes
    assert w == pytest.approx(wait, abs=1.0)


def test_request_rate_is_littles_law_of_concurrency(capsys):
    """An open loop of rate R keeps C = R x E2E in flight, and the rate is what comes out."""
    sv = run(LLAMA7 + A100_80 + ["-s", "500", "-o", "100", "--request-rate", "3"])["serving"]
    assert sv["concurrency"] == pytest.approx(3 * sv["e2e_s"], rel=1e-6)
    assert sv["requests_per_s"] == 3 and sv["output_tokens_per_s"] == 300


def test_request_rate_up_to_capacity(capsys):
    """Rates just under what the KV pool's concurrency serves are answered (C below the pool),
    rates above exit 2. The closed loop's rate at the pool's C is the top; an open loop's random
    arrivals bunch (they wait for the running step and for prompts ahead, M/D/1), so at the same
    C it serves a little less: 97% of the top is answered."""
    args = LLAMA7 + A100_80 + ["-s", "500", "-o", "100"]
    cap = run(args + ["-c", "1"])["serving"]["kv_pool_max_concurrency"]
    top = run(args + ["-c", str(cap)])["serving"]["requests_per_s"]
    sv = run(args + ["--request-rate", str(0.97 * top)])["serving"]
    assert sv["concurrency"] <= cap
    with pytest.raises(SystemExit):
        run(args + ["--request-rate", str(1.02 * top)])


def test_token_budget_makes_requests_queue(capsys):
    """Past r (s + o - 1) = budget per step the budget is full and requests wait for their prompt
    steps (TTFT grows with C); below it they do not."""
    args = LLAMA7 + A100_80 + ["-s", "2000", "-o", "50", "--max-num-batched-tokens", "2048"]
    lo, hi = run(args + ["-c", "2"])["serving"], run(args + ["-c", "60"])["serving"]
    assert not lo["budget_bound"] and lo["queue_steps"] == 0
    assert hi["budget_bound"] and hi["queue_steps"] > 0 and hi["ttft_s"] > 5 * lo["ttft_s"]


@pytest.mark.parametrize("args,needle", [
    (["-c", "500", "--refuse-past-pool"], "use -c"),
    (["--request-rate", "1000"], "sustains"),
    (["-c", "2", "-b", "2"], "static batch"),
    (["-c", "2", "--request-rate", "1"], "give one"),
    (["-c", "0"], "--concurrency"),
    (["-c", "2", "--gpu-memory-utilization", "0.05"], "no KV pool"),
], ids=["kv-pool", "rate", "b-and-c", "c-and-rate", "c-zero", "no-pool"])
def test_concurrency_bad_input_exits_2_saying_what_works(args, needle, capsys):
    with pytest.raises(SystemExit) as e:
        main(LLAMA7 + A100_80 + ["-s", "2000", "-o", "2000"] + args)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err


# --- serving-stack presets against published rows that set none of their constants -------------
# Llama shapes as flags (Llama 3 / 3.1 70B: 80 layers, h 8192, 64 heads, 8 kv heads, SwiGLU 28672,
# vocab 128256); 8B and Mixtral from their configs.
L3_70B = ["-l", "80", "-hs", "8192", "-a", "64", "--num-kv-heads", "8", "--ffn-hidden-size", "28672",
          "--swiglu", "--norm", "rmsnorm", "--position-embedding", "rope", "-v", "128256"]
L31_8B = ["--hf_model_name_or_path", cfg("llama-3.1-8b")]
MIXTRAL = ["--hf_model_name_or_path", cfg("mixtral-8x7b")]

# vLLM's CI performance dashboard (buildkite.com/vllm/performance-benchmark, builds 9513/9515/9555,
# benchmark_latency: batch 8, 32 input / 128 output tokens, mean end-to-end seconds), --serving-stack
# vllm (the default) with no per-row tuning.
VLLM_CI_LATENCY = [
    ("9513-l3-70b-a100-tp4", L3_70B + ["--gpu", "a100", "-tp", "4"], 3.99059),
    ("9513-l31-8b-a100", L31_8B + ["--gpu", "a100"], 1.57927),
    ("9513-mixtral-a100-tp2", MIXTRAL + ["--gpu", "a100", "-tp", "2"], 3.64384),
    ("9515-l3-70b-h100-tp4", L3_70B + ["--gpu", "h100", "-tp", "4"], 2.44447),
    ("9515-l31-8b-h100", L31_8B + ["--gpu", "h100"], 0.997542),
    ("9515-mixtral-h100-tp2", MIXTRAL + ["--gpu", "h100", "-tp", "2"], 2.32697),
    ("9555-l31-8b-h200", L31_8B + ["--gpu", "h200"], 0.834059),
    ("9555-l3-70b-h200-tp4", L3_70B + ["--gpu", "h200", "-tp", "4"], 2.07508),
    ("9555-mixtral-h200-tp2", MIXTRAL + ["--gpu", "h200", "-tp", "2"], 1.9211),
]


@pytest.mark.parametrize("case", VLLM_CI_LATENCY, ids=[c[0] for c in VLLM_CI_LATENCY])
def test_vllm_preset_against_vllm_ci_latency(case, capsys):
    _, args, published = case
    r = _script_main(args + ["-b", "8", "-s", "32", "-o", "128", "--json"])
    assert r["serving_stack"] == "vllm"
    assert r["total_s"] == pytest.approx(published, rel=0.20)


# TensorRT-LLM perf-overview.md @258c7540, "Online Serving Measurements" (v0.14.0, Triton backend,
# BF16, 500 requests): mean inter-token latency in ms at request rates 2/4/8 (the rates every
# layout sustains). (model args, gpu, tp, input, output, {qps: ITL ms}). Per-request TTFT is in
# VALIDATION.md (a miss: the Triton path's fixed cost per request is not in the preset).
TRT_ONLINE_ITL = [
    ("70b-h100", L3_70B, "h100", 4, 467, 256, {2: 21, 4: 24, 8: 32}),
    ("70b-h100-short-out", L3_70B, "h100", 4, 467, 16, {2: 18, 4: 20, 8: 24}),
    ("70b-h100-202", L3_70B, "h100", 4, 202, 214, {2: 20, 4: 22, 8: 25}),
    ("8b-h100", L31_8B, "h100", 1, 467, 256, {2: 8, 4: 9, 8: 9}),
    ("8b-h100-short-out", L31_8B, "h100", 1, 467, 16, {2: 7, 4: 7, 8: 7}),
    ("8b-h100-202", L31_8B, "h100", 1, 202, 214, {2: 7, 4: 8, 8: 9}),
    ("70b-h200", L3_70B, "h200", 4, 467, 256, {2: 18, 4: 20, 8: 27}),
    ("70b-h200-short-out", L3_70B, "h200", 4, 467, 16, {2: 15, 4: 16, 8: 20}),
    ("70b-h200-202", L3_70B, "h200", 4, 202, 214, {2: 17, 4: 18, 8: 21}),
    ("8b-h200", L31_8B, "h200", 1, 467, 256, {2: 6, 4: 7, 8: 7}),
    ("8b-h200-short-out", L31_8B, "h200", 1, 467, 16, {2: 5, 4: 6, 8: 6}),
    ("8b-h200-202", L31_8B, "h200", 1, 202, 214, {2: 6, 4: 6, 8: 7}),
]
# measured misses (ours / published - 1; VALIDATION.md): ITLs published as whole milliseconds
TRT_ONLINE_ITL_MISSES = {("8b-h100-short-out", 2): 0.21,
                         ("8b-h100-short-out", 4): 0.22, ("8b-h100-short-out", 8): 0.23,
                         ("8b-h100-202", 2): 0.22, ("8b-h200-short-out", 2): 0.30}
_ITL_CASES = [pytest.param(name, args, gpu, tp, s, o, q, ms, id=f"{name}-qps{q}",
                           marks=[pytest.mark.xfail(strict=True, reason=f"known miss "
                                                    f"({TRT_ONLINE_ITL_MISSES[(name, q)]:+.0%})")]
                           if (name, q) in TRT_ONLINE_ITL_MISSES else [])
              for name, args, gpu, tp, s, o, rates in TRT_ONLINE_ITL for q, ms in rates.items()]


@pytest.mark.parametrize("name,args,gpu,tp,s,o,qps,itl_ms", _ITL_CASES)
def test_tensorrt_llm_preset_against_online_itl(name, args, gpu, tp, s, o, qps, itl_ms, capsys):
    sv = _script_main(args + ["--gpu", gpu, "-tp", str(tp), "-s", str(s), "-o", str(o), "--request-rate",
                              str(qps), "--serving-stack", "tensorrt-llm", "--json"])["serving"]
    assert sv["tpot_s"] == pytest.approx(itl_ms * 1e-3, rel=0.20)


# --- a finite benchmark run, simulated step by step (--num-requests) ----------------------------

# The same section's rows the steady state cannot answer: QPS 32, past what the engine sustains
# (the queue grows for the whole run), and QPS INF, all 500 requests sent at once. Its text: "All
# data in the table below was generated using version 0.14.0, with 500 requests and BF16
# precision." --num-requests 500 runs that benchmark. (name, args, gpu, tp, s, o, qps, published
# mean TTFT ms, mean ITL ms, output tokens/s). None set a constant. The 202/214 rows are in
# VALIDATION.md, not here: their lengths look like a dataset's means (the doc does not say), and
# under load they run 20-65% above the published throughput, as fixed lengths would.
TRT_ONLINE_FINITE = [
    ("70b-h100", L3_70B, "h100", 4, 467, 256, "32", 1229, 86, 4083),
    ("70b-h100", L3_70B, "h100", 4, 467, 256, "inf", 9123, 85, 4103),
    ("70b-h100-short-out", L3_70B, "h100", 4, 467, 16, "32", 1197, 482, 452),
    ("70b-h100-short-out", L3_70B, "h100", 4, 467, 16, "inf", 9126, 548, 454),
    ("8b-h100", L31_8B, "h100", 1, 467, 256, "32", 50, 19, 6774),
    ("8b-h100", L31_8B, "h100", 1, 467, 256, "inf", 3335, 39, 9420),
    ("8b-h100-short-out", L31_8B, "h100", 1, 467, 16, "32", 29, 10, 493),
    ("8b-h100-short-out", L31_8B, "h100", 1, 467, 16, "inf", 3280, 193, 1269),
    ("70b-h200", L3_70B, "h200", 4, 467, 256, "32", 1279, 83, 4176),
    ("70b-h200", L3_70B, "h200", 4, 467, 256, "inf", 9222, 83, 4185),
    ("70b-h200-short-out", L3_70B, "h200", 4, 467, 16, "32", 1259, 485, 450),
    ("70b-h200-short-out", L3_70B, "h200", 4, 467, 16, "inf", 9074, 546, 457),
    ("8b-h200", L31_8B, "h200", 1, 467, 256, "32", 44, 16, 7025),
    ("8b-h200", L31_8B, "h200", 1, 467, 256, "inf", 3237, 36, 10121),
    ("8b-h200-short-out", L31_8B, "h200", 1, 467, 16, "32", 27, 9, 494),
    ("8b-h200-short-out", L31_8B, "h200", 1, 467, 16, "inf", 3227, 190, 1291),
]
# measured misses (ours / published - 1; VALIDATION.md): with 16 output tokens a request's time
# per token is mostly the prompt steps it shares, which the Triton engine's scheduling of whole
# prompts (chunking off) would set differently
TRT_ONLINE_FINITE_MISSES = {("70b-h100-short-out", "32", "itl"): -0.25, ("70b-h200-short-out", "32", "ttft"): -0.25,
                            ("70b-h200-short-out", "32", "itl"): -0.31, ("70b-h200-short-out", "inf", "itl"): -0.21,
                            ("8b-h200", "32", "ttft"): -0.25, ("8b-h200-short-out", "inf", "itl"): -0.21,
                            # since the KV cache streams at KV_STREAM_EFFICIENCY on Hopper (issue 34)
                            ("8b-h100", "32", "ttft"): -0.20, ("8b-h200", "32", "itl"): -0.23}
_FINITE_KEYS = {"ttft": ("ttft_s", 1e-3), "itl": ("tpot_s", 1e-3), "throughput": ("output_tokens_per_s", 1.0)}
_FINITE_CASES = [
    pytest.param(name, args, gpu, tp, s, o, q, metric, value, id=f"{name}-qps{q}-{metric}",
                 marks=[pytest.mark.xfail(strict=True, reason=f"known miss "
                                          f"({TRT_ONLINE_FINITE_MISSES[(name, q, metric)]:+.0%})")]
                 if (name, q, metric) in TRT_ONLINE_FINITE_MISSES else [])
    for name, args, gpu, tp, s, o, q, ttft, itl, thr in TRT_ONLINE_FINITE
    for metric, value in (("ttft", ttft), ("itl", itl), ("throughput", thr))]
_FINITE_RUNS = {}


@pytest.mark.parametrize("name,args,gpu,tp,s,o,qps,metric,published", _FINITE_CASES)
def test_tensorrt_llm_benchmark_of_500_requests_past_capacity(name, args, gpu, tp, s, o, qps, metric, published,
                                                              capsys):
    key = (name, qps)
    if key not in _FINITE_RUNS:
        _FINITE_RUNS[key] = _script_main(args + ["--gpu", gpu, "-tp", str(tp), "-s", str(s), "-o", str(o),
                                                 "--request-rate", qps, "--num-requests", "500",
                                                 "--serving-stack", "tensorrt-llm", "--json"])["serving"]
    field, unit = _FINITE_KEYS[metric]
    assert _FINITE_RUNS[key][field] == pytest.approx(published * unit, rel=0.20)


BENCH = ["--hf_model_name_or_path", cfg("llama-3.1-8b"), "--gpu", "h100", "--serving-stack", "vllm",
         "-s", "512", "-o", "128"]


@pytest.mark.parametrize("rate,layout", [(5, []), (10, []), (5, ["-tp", "2", "-pp", "2"]),
                                         (10, ["-tp", "2", "-pp", "2"])], ids=["5", "10", "5-pp2", "10-pp2"])
def test_benchmark_at_a_sustained_rate_agrees_with_the_steady_state(rate, layout, capsys):
    # two independent computations of the same load: the fluid steady state (Little's law, mean
    # steps) and the stepped run of 4000 evenly spaced requests (its ramp-up and drain are ~1% of it);
    # with pipeline stages both keep pp micro-batches in flight
    steady = run(BENCH + layout + ["--request-rate", str(rate)])["serving"]
    sim = run(BENCH + layout + ["--request-rate", str(rate), "--num-requests", "4000", "--arrivals",
                                "uniform"])["serving"]
    assert sim["tpot_s"] == pytest.approx(steady["tpot_s"], rel=0.07)
    assert sim["ttft_s"] == pytest.approx(steady["ttft_s"], rel=0.10)
    assert sim["output_tokens_per_s"] == pytest.approx(steady["output_tokens_per_s"], rel=0.02)
    assert sim["mean_in_flight"] == pytest.approx(steady["concurrency"], rel=0.10)


def test_benchmark_one_client_is_the_single_request_run(capsys):
    # one closed-loop client: each request runs alone, so its TTFT is the prompt's prefill (with
    # the stack's step and request costs) and its TPOT the decode steps of a batch of one
    one = run(BENCH + ["-c", "1"])["serving"]
    sim = run(BENCH + ["-c", "1", "--num-requests", "20"])["serving"]
    assert sim["ttft_s"] == pytest.approx(one["ttft_s"], rel=0.01)
    assert sim["tpot_s"] == pytest.approx(one["tpot_s"], rel=0.01)
    assert sim["duration_s"] == pytest.approx(20 * sim["e2e_s"], rel=1e-9)


@pytest.mark.parametrize("arrivals", ["poisson", "uniform"])
def test_benchmark_more_load_never_lowers_ttft_or_tpot(arrivals, capsys):
    # the same 300 requests (same seed) sent faster, up to all at once; 2% slack for the phase of
    # an arrival against the step boundaries, which shifts as the steps change
    prev = None
    for rate in ["2", "8", "32", "64", "128", "inf"]:
        sv = run(BENCH + ["--request-rate", rate, "--num-requests", "300", "--arrivals", arrivals])["serving"]
        assert all(math.isfinite(v) and v > 0 for v in (sv["ttft_s"], sv["tpot_s"], sv["duration_s"]))
        assert sv["ttft_p99_s"] >= sv["ttft_median_s"] * 0.999
        if prev:
            assert sv["ttft_s"] >= 0.98 * prev["ttft_s"] and sv["tpot_s"] >= 0.98 * prev["tpot_s"]
        prev = sv
    prev = None
    for c in [1, 4, 16, 64, 256]:
        sv = run(BENCH + ["-c", str(c), "--num-requests", "600"])["serving"]
        if prev:
            assert sv["ttft_s"] >= prev["ttft_s"] and sv["tpot_s"] >= 0.98 * prev["tpot_s"]
        prev = sv


def test_benchmark_throughput_counts_the_drain(capsys):
    # a run no longer than one wave: every request admitted at once, so the duration is one
    # request's prompt steps and decodes, and the throughput is below the full engine's steady state
    sim = run(BENCH + ["--request-rate", "inf", "--num-requests", "64"])["serving"]
    full = run(BENCH + ["-c", "64"])["serving"]
    assert sim["most_running"] == 64 and sim["num_requests"] == 64
    assert sim["output_tokens_per_s"] == pytest.approx(64 * 128 / sim["duration_s"])
    assert sim["output_tokens_per_s"] < full["output_tokens_per_s"]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 400), s=st.integers(1, 3000), o=st.integers(1, 300),
       load=st.one_of(st.sampled_from(["inf"]), st.floats(0.01, 500).map(lambda x: f"{x:.4g}"),
                      st.integers(1, 80)),
       budget=st.sampled_from([None, 64, 2048]), layout=st.sampled_from([[], ["-tp", "2"], ["-pp", "2"]]),
       arrivals=st.sampled_from(["poisson", "uniform"]), stack=st.sampled_from(["kernels", "vllm", "tensorrt-llm"]))
def test_benchmark_answers_are_finite_and_consistent(n, s, o, load, budget, layout, arrivals, stack):
    """Any run: every time finite and positive, percentiles ordered, the duration at least the
    longest request, throughput = requests x o / duration, never more running than the pool holds."""
    argv = SMALL + layout + ["-s", str(s), "-o", str(o), "--num-requests", str(n), "--arrivals", arrivals,
                             "--serving-stack", stack, "--json"]
    argv += ["-c", str(load)] if isinstance(load, int) else ["--request-rate", load]
    argv += ["--max-num-batched-tokens", str(budget)] if budget else []
    sv = main(argv)["serving"]
    for key in ("ttft", "tpot", "e2e"):
        mean, med, p99 = sv[key + "_s"], sv[key + "_median_s"], sv[key + "_p99_s"]
        assert all(math.isfinite(v) and v > 0 for v in (mean, med, p99)), key
        assert med <= p99 * (1 + 1e-12)
    assert sv["e2e_s"] >= sv["ttft_s"] * (1 - 1e-12)
    assert sv["num_requests"] >= n and sv["duration_s"] >= sv["e2e_p99_s"] * (1 - 1e-12)
    assert sv["output_tokens_per_s"] == pytest.approx(sv["num_requests"] * o / sv["duration_s"])
    assert sv["most_running"] <= max(sv["kv_pool_max_concurrency"], sv["micro_batches"])  # one each at least


def test_modelopt_kv_cache_format_is_named_in_the_report(tmp_path, capsys):
    # a ModelOpt checkpoint's kv_cache_quant_algo FP8: reported beside the weights' format, with what
    # to pass to count the cache so (TensorRT-LLM follows it by default); the count itself follows
    # --kv-cache-bits
    (tmp_path / "config.json").write_text(json.dumps(dict(
        model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=2048, intermediate_size=8192,
        num_hidden_layers=4, num_attention_heads=32, num_key_value_heads=8, vocab_size=32000,
        max_position_embeddings=8192, rms_norm_eps=1e-5, tie_word_embeddings=False)))
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({"quantization": {
        "quant_algo": "NVFP4", "group_size": 16, "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}))
    args = ["--hf_model_name_or_path", str(tmp_path), "--gpu", "b200"]
    _script_main(args)
    out = capsys.readouterr().out
    assert "KV cache format is FP8 (kv_cache_quant_algo), counted here at 16 bits" in out
    assert "--kv-cache-bits 8" in out
    r = _script_main(args + ["--kv-cache-bits", "8", "--json"])
    assert r["checkpoint_format"]["kv_cache_format"] == "FP8" and r["kv_cache_bits"] == 8


def test_benchmark_report_prints_the_run(capsys):
    _script_main(BENCH + ["--request-rate", "8", "--num-requests", "50"])
    out = capsys.readouterr().out
    assert "benchmark run of 50 requests" in out and "duration (first sent, last answered)" in out
    assert "p99" in out


def test_benchmark_all_at_once_prints_strict_json(capsys):
    # rate inf is "sent at once" in the result, never an Infinity that strict JSON readers refuse
    _script_main(BENCH + ["--request-rate", "inf", "--num-requests", "20", "--json"])
    out = capsys.readouterr().out

    def refuse(name):
        raise ValueError(name)
    sv = json.loads(out, parse_constant=refuse)["serving"]
    assert sv["sent_at_once"] is True and sv["request_rate"] is None


@pytest.mark.parametrize("args,needle", [
    (["--num-requests", "10"], "--request-rate R"),
    (["--request-rate", "inf"], "add --num-requests"),
    (["--search", "--num-requests", "10"], "--num-requests"),
    (["--request-rate", "2", "--num-requests", "0"], "--num-requests"),
], ids=["no-load", "inf-steady", "search", "zero"])
def test_benchmark_bad_input_exits_2_saying_what_works(args, needle, capsys):
    with pytest.raises(SystemExit) as e:
        _script_main(BENCH + args)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err


# --- expert parallelism, data-parallel attention, nodes -----------------------------------------

# DeepEP README, "Low-latency kernels with pure RDMA": H800 (NVLink ~160 GB/s), one CX7 400 Gb/s
# NIC per GPU (~50 GB/s), 128 tokens per rank, hidden 7168, top-8, FP8 dispatch (with one fp32
# scale per 128 channels), BF16 combine; latency in us. EP 8 is left out: there the kernel went over
# RDMA inside one node (before DeepEP PR #173), where the model uses NVLink.
DEEPEP_LOW_LATENCY_US = {16: (118, 195), 32: (155, 273), 64: (173, 314), 128: (192, 369), 256: (194, 360)}


@pytest.mark.parametrize("ep", sorted(DEEPEP_LOW_LATENCY_US))
def test_alltoall_matches_deepep_low_latency_table(ep):
    """The all-to-all the MoE layers pay under -ep (the shared block's direct all-to-all over
    NVLink inside a node and the NIC beyond it) against DeepEP's published dispatch and combine
    latencies, which no constant here was set from: within 15% (the table's own spread from EP 64
    to 256 is 12%)."""
    args = cil.build_parser().parse_args(["--gpu", "h800", "-tp", "1", "-dp", str(ep)])
    args.activation_bits = 16
    hw, _ = cil.hardware_from_flags(args, cil.build_parser())
    h, copies = 7168, 128 * 8
    dispatch = cil.group_collective_s("alltoall", size_bytes=copies * (h + h // 128 * 4), n=ep, stride=1, hw=hw)
    combine = cil.group_collective_s("alltoall", size_bytes=copies * h * 2, n=ep, stride=1, hw=hw)
    pub_d, pub_c = DEEPEP_LOW_LATENCY_US[ep]
    assert dispatch * 1e6 == pytest.approx(pub_d, rel=0.15)
    assert combine * 1e6 == pytest.approx(pub_c, rel=0.15)


def test_deepseek_v3_decode_with_dp_attention_and_ep72_matches_lmsys():
    """LMSYS blog "Deploying DeepSeek with PD Disaggregation and Large-scale Expert Parallelism on
    96 H100 GPUs" (2025-05-05): decode nodes, 9 x 8 H100, DP attention + EP 72, batch 256 per GPU,
    2,000-token KV, 22,282 output tokens/s per node. Decode-only nodes, so a static decode step
    at that context stands for them; FP8 weights and matmuls (the checkpoint), BF16 MLA cache."""
    r = run(["--hf_model_name_or_path", cfg("deepseek-v3"), "--gpu", "h100", "-tp", "1", "-dp", "72", "-ep", "72",
             "--activation-bits", "8", "--kv-cache-bits", "16", "--serving-stack", "sglang",
             "-b", str(256 * 72), "-s", "2000", "-o", "2"])
    per_node = 256 * 72 / r["decode_first_step_s"] / 9
    assert per_node == pytest.approx(22282, rel=0.20)
    assert r["num_gpus"] == 72 and r["decode_first_step_components_s"]["moe_comm"] > 0


def test_data_parallel_attention_on_a_dense_model_is_replicas():
    # a dense model has no layer that joins the groups: dp groups are independent copies, so per-GPU
    # throughput and per-request times are dp = 1's, and the KV pool holds dp times the requests
    one = run(LLAMA7 + ["--gpu", "h100", "-c", "16", "-s", "512", "-o", "64"])
    two = run(LLAMA7 + ["--gpu", "h100", "-c", "32", "-s", "512", "-o", "64", "-dp", "2"])
    assert two["num_gpus"] == 2
    for key in ("ttft_s", "tpot_s", "output_tokens_per_s_per_gpu"):
        assert two["serving"][key] == pytest.approx(one["serving"][key], rel=1e-9), key
    assert two["serving"]["kv_pool_max_concurrency"] == 2 * one["serving"]["kv_pool_max_concurrency"]


def test_expert_parallel_moves_whole_experts_and_pays_alltoalls():
    # Mixtral on 8 H100s: -tp 8 splits every expert 8 ways; -tp 8 -ep 8 gives each GPU one whole expert
    # of the 8: the same expert bytes per GPU, the attention still split; the MoE blocks trade their
    # all-reduce for two all-to-alls
    base = ["--hf_model_name_or_path", cfg("mixtral-8x7b"), "--gpu", "h100", "-tp", "8", "-b", "64"]
    tp, ep = run(base), run(base + ["-ep", "8"])
    assert ep["weight_bytes_per_gpu"] == pytest.approx(tp["weight_bytes_per_gpu"], rel=0.01)
    assert ep["decode_first_step_components_s"]["moe_comm"] > 0
    assert ep["decode_first_step_components_s"]["tp_allreduce"] < tp["decode_first_step_components_s"]["tp_allreduce"]
    assert ep["ep_imbalance"] > 1


@pytest.mark.parametrize("args,text", [
    (["-ep", "2", "-tp", "2"], "routed experts"),                       # a dense model
    (["--hf_model_name_or_path", cfg("mixtral-8x7b"), "-tp", "2", "-ep", "4"], "-tp x -dp = 2"),
])
def test_bad_expert_parallel_layouts_exit_2(args, text, capsys):
    with pytest.raises(SystemExit) as e:
        main((GPT67 if "--hf_model_name_or_path" not in args else []) + args)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and text in err, err


# --- --search: serving layouts under latency targets --------------------------------------------

SEARCH = ["--hf_model_name_or_path", cfg("llama-3.1-8b"), "--gpu", "h100", "--search", "--num-gpus", "8",
          "-s", "1000", "-o", "200", "--serving-stack", "vllm"]


def test_search_throughput_per_gpu_never_falls_as_the_tpot_target_relaxes():
    """The issue's property: relaxing --max-tpot-ms only adds layouts, so the best tokens/s per GPU
    never falls (checked over a ladder of targets, each its own search)."""
    best = [run(SEARCH + ["--max-tpot-ms", str(x)])["best"]["tokens_per_s_per_gpu"]
            for x in (4, 6, 10, 20, 40, 80)]
    assert all(b1 >= b0 for b0, b1 in zip(best, best[1:])), best
    assert best[-1] > best[0]


def test_search_front_meets_the_targets_and_nothing_dominates_it():
    r = run(SEARCH + ["--max-tpot-ms", "30", "--max-ttft-ms", "300"])
    assert r["layouts_evaluated"] >= r["feasible"] > 0 and r["search_time_s"] > 0
    for p in r["points"]:
        assert p["tpot_s"] <= 0.030 and p["ttft_s"] <= 0.300
    for f in r["pareto_front"]:
        assert not any(p["tokens_per_s_per_gpu"] > f["tokens_per_s_per_gpu"]
                       and p["tokens_per_s_per_user"] > f["tokens_per_s_per_user"] for p in r["points"])
    assert r["best"]["tokens_per_s_per_gpu"] == max(p["tokens_per_s_per_gpu"] for p in r["points"])


def test_search_point_is_what_the_single_layout_run_says():
    # a front point re-run as one layout (-tp, -c, the bits) gives the same times: the search costs
    # layouts with the model the single answers use, not a shortcut
    r = run(SEARCH + ["--max-tpot-ms", "30"])
    p = r["pareto_front"][len(r["pareto_front"]) // 2]
    one = run(["--hf_model_name_or_path", cfg("llama-3.1-8b"), "--gpu", "h100", "-s", "1000", "-o", "200",
               "--serving-stack", "vllm", "-tp", str(p["tp"]), "-pp", str(p["pp"]), "-c", str(p["concurrency"]),
               "--weight-bits", str(p["weight_bits"]), "--activation-bits", str(p["activation_bits"]),
               "--kv-cache-bits", str(p["kv_cache_bits"])])
    assert one["serving"]["tpot_s"] == pytest.approx(p["tpot_s"], rel=1e-9)
    assert one["serving"]["ttft_s"] == pytest.approx(p["ttft_s"], rel=1e-9)
    assert one["serving"]["output_tokens_per_s_per_gpu"] == pytest.approx(p["tokens_per_s_per_gpu"], rel=1e-9)


def test_search_moe_tries_expert_parallel_and_dp_attention():
    r = run(["--hf_model_name_or_path", cfg("mixtral-8x7b"), "--gpu", "h100", "--search", "--num-gpus", "8",
             "-s", "512", "-o", "128", "--max-tpot-ms", "50"])
    layouts = {(p["tp"], p["dp"], p["ep"]) for p in r["points"]}
    assert any(ep > 1 for _, _, ep in layouts) and any(dp > 1 for _, dp, _ in layouts)


def test_search_with_an_unreachable_target_exits_2_saying_what_is_reachable(capsys):
    with pytest.raises(SystemExit) as e:
        main(SEARCH + ["--max-tpot-ms", "0.5"])
    err = [x for x in capsys.readouterr().err.strip().splitlines() if not x.startswith(("note:", "warning:"))]
    assert e.value.code == 2 and len(err) == 1 and "lowest TPOT any layout reaches is" in err[0], err


def test_plot_without_matplotlib_says_so_in_one_line(monkeypatch, tmp_path, capsys):
    import builtins
    real = builtins.__import__

    def no_mpl(name, *a, **k):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_mpl)
    r = run(SEARCH + ["--max-tpot-ms", "30", "--plot", str(tmp_path / "front.png")])
    err = capsys.readouterr().err
    assert r["pareto_front"] and "matplotlib is not installed" in err
    assert not (tmp_path / "front.png").exists()


def test_search_on_gpus_without_a_modelled_peer_link_uses_one_gpu_replicas(capsys):
    # RTX 4090: no NVLink, and GeForce drivers leave peer-to-peer over PCIe off, so no peer link is
    # modelled; the search must answer with one-GPU replicas (and say so) rather than exit on the
    # first multi-GPU layout it tries
    r = run(["--hf_model_name_or_path", cfg("llama-3.1-8b"), "--gpu", "rtx-4090", "--search", "--num-gpus", "8",
             "--disaggregated"])
    assert {p["gpus_per_replica"] for p in r["points"]} == {1}
    assert "replicas of at most 1 GPU" in capsys.readouterr().err


def test_search_on_pcie_peers_may_split_a_model_over_a_server():
    # L40S: peers over PCIe (hardware.py's pcie_peer_bandwidth_bytes_per_s); Llama 70B at FP8 does
    # not fit one 48 GB card, so every layout on the front splits it, within a server of 8
    r = run(L3_70B + ["--gpu", "l40s", "--search", "--num-gpus", "8", "-s", "512", "-o", "128"])
    assert r["pareto_front"] and all(2 <= p["gpus_per_replica"] <= 8 for p in r["pareto_front"])


# TensorRT-LLM v0.17 perf-overview.md (NVIDIA/TensorRT-LLM @258c7540, offline max load, FP8 weights
# and KV cache, trtllm-bench's engine), Llama 3.1 70B on L40S, output tokens/s: (tp, isl, osl,
# published). None of these set a constant: the PCIe peer efficiency comes from nccl-tests on 8 x
# A100 PCIe (NVIDIA/nccl#841). TP 4 comes within 18%; TP 8 runs 15-25% fast (its ring crosses two
# CPU sockets, whose extra hops are not modelled), asserted within 30%.
L40S_70B = [(4, 128, 128, 1523.52), (4, 128, 2048, 1942.66), (4, 2048, 128, 177.72), (4, 20000, 2000, 162.25),
            (8, 128, 128, 1464.03), (8, 128, 2048, 2303.31), (8, 2048, 128, 176.16), (8, 20000, 2000, 209.87)]


@pytest.mark.parametrize("tp,isl,osl,published", L40S_70B)
def test_l40s_tensor_parallel_over_pcie_matches_tensorrt_llm(tp, isl, osl, published):
    import tools.validate_serving as vs
    cap = run(L3_70B + ["--gpu", "l40s", "--precision", "fp8", "-tp", str(tp), "--serving-stack", "tensorrt-llm",
                        "--gpu-memory-utilization", "0.95", "-s", str(isl), "-o", str(osl), "-c", "1000000",
                        "--queue-past-pool"])["serving"]["kv_pool_max_concurrency"]
    bs, tokens = vs.trtllm_bench_engine(cap, n_pp=1, isl=isl, osl=osl)
    r = run(L3_70B + ["--gpu", "l40s", "--precision", "fp8", "-tp", str(tp), "--serving-stack", "tensorrt-llm",
                      "--gpu-memory-utilization", "0.95", "-s", str(isl), "-o", str(osl), "-c", "1000000",
                      "--queue-past-pool", "--max-num-seqs", str(bs), "--max-num-batched-tokens", str(tokens)])
    assert r["serving"]["output_tokens_per_s"] == pytest.approx(published, rel=0.20 if tp == 4 else 0.30)


# The same source's Mixtral 8x7B on H100 (FP8), output tokens/s at TP 1-8: (tp, isl, osl, published).
# The expert GEMMs shrink with TP but the MoE block's dispatch permute and combine do not (each rank
# permutes every token); without those passes TP 8 came out 3-27% fast (median 19%). None set a constant.
# Each runs as the doc ran it: the $num_requests its table states for the lengths, all queued at
# once (--num-requests, as tools/validate_serving.py runs the row). Known miss: TP 8 at 128/2048,
# +21% since the KV cache streams at KV_STREAM_EFFICIENCY on Hopper (issue 34).
MIXTRAL_H100 = [(1, 128, 2048, 8290.13), (1, 2048, 2048, 3983.1), (2, 128, 2048, 22830.08),
                (2, 2048, 128, 3333.68), (4, 128, 2048, 41164.73), (4, 2048, 2048, 19432.08),
                (8, 128, 2048, 61607.7), (8, 2048, 128, 6988.18), (8, 2048, 2048, 30983.35)]
V017_NUM_REQUESTS = {(128, 2048): 3000, (2048, 128): 3000, (2048, 2048): 1500}  # perf-overview.md v0.17
MIXTRAL_H100_MISSES = {(8, 128, 2048): "+21%"}


@pytest.mark.parametrize("tp,isl,osl,published", [
    pytest.param(*c, marks=[pytest.mark.xfail(strict=True, reason=MIXTRAL_H100_MISSES[c[:3]])]
                 if c[:3] in MIXTRAL_H100_MISSES else []) for c in MIXTRAL_H100])
def test_mixtral_tensor_parallel_matches_tensorrt_llm(tp, isl, osl, published):
    import tools.validate_serving as vs
    base = ["--hf_model_name_or_path", cfg("mixtral-8x7b"), "--gpu", "h100", "--precision", "fp8", "-tp", str(tp),
            "--serving-stack", "tensorrt-llm", "--gpu-memory-utilization", "0.95", "-s", str(isl), "-o", str(osl)]
    bs, tokens = vs.trtllm_bench_engine(run(base + ["-c", "1000000", "--queue-past-pool"])["serving"]
                                        ["kv_pool_max_concurrency"], n_pp=1, isl=isl, osl=osl)
    r = run(base + ["--request-rate", "inf", "--num-requests", str(V017_NUM_REQUESTS[(isl, osl)]),
                    "--max-num-seqs", str(bs), "--max-num-batched-tokens", str(tokens)])
    assert r["serving"]["output_tokens_per_s"] == pytest.approx(published, rel=0.20)


# FP4's rate: x FP4_SHAPE_PENALTY, set from Azure's GB200 cuBLASLt table (FP4 falls to 0.679 of its
# best at 4096^3, FP8 to 0.975). Checked against a measurement not used to set it: flashinfer PR
# #1979's NVFP4 GEMM on a B200 at 1024x7168x4608, 3,371.2 TFLOP/s (CUDA 12, cuDNN 9.15, backend
# auto) and 3,840.7 (CUDA 13); the two toolchains differ by 14%, so within 10% of that span.
def test_b200_fp4_matmul_rate_matches_flashinfer_nvfp4_gemm():
    hw = run(LLAMA7 + ["--gpu", "b200", "--precision", "fp4"])["hardware"]
    assert 0.9 * 3371.2e12 <= hw["flops_per_s"] <= 1.1 * 3840.7e12


# NVFP4 (NVIDIA's "Introducing NVFP4" blog, 2025): 4-bit values with one E4M3 scale per 16, so 4.5
# bits per stored weight; --precision fp4 stores that, says so, and --weight-bits 4 counts bare values.
def test_fp4_weights_are_stored_as_nvfp4_with_their_scales(capsys):
    nv = run(LLAMA7 + ["--gpu", "b200", "--precision", "fp4"])
    assert "NVFP4, 4.5 bits" in capsys.readouterr().err
    bare = run(LLAMA7 + ["--gpu", "b200", "--precision", "fp4", "--weight-bits", "4"])
    assert (nv["weight_storage_bits"], bare["weight_storage_bits"]) == (4.5, 4)
    assert nv["weight_bits"] == bare["weight_bits"] == 4
    # the layers' matrices grow by 4.5 / 4; what stays 16-bit (embeddings, norms) does not
    assert 1.05 < nv["weight_bytes_per_gpu"] / bare["weight_bytes_per_gpu"] < 1.125
    assert nv["decode_per_token_s"] > bare["decode_per_token_s"]  # a memory-bound decode reads more


def test_search_points_use_the_single_runs_weight_bits_meaning():
    # weight_bits is the format's value width in a search point as in a single run, and
    # weight_storage_bits what its bytes are counted at (NVFP4 4.5; gpt-oss's MXFP4 experts 4.25 with
    # the rest of the checkpoint at 16)
    r = run(LLAMA7 + ["--gpu", "b200", "--precision", "fp4", "--search", "--num-gpus", "2", "-s", "512", "-o", "64"])
    assert {(p["weight_bits"], p["weight_storage_bits"]) for p in r["points"]} == {(4, 4.5)}
    one = run(LLAMA7 + ["--gpu", "b200", "--precision", "fp4"])
    assert (one["weight_bits"], one["weight_storage_bits"]) == (4, 4.5)


# TensorRT-LLM v1.0 perf-overview (docs/source/performance/perf-overview.md @00f37686), Llama 3.3 70B
# FP4 on one B200, total output tokens/s at maximum load: (isl, osl, published). Before the FP4
# penalty these ran 13-33% fast (7 of 10 past 20%). None set a constant.
LLAMA70_B200_FP4 = [(128, 128, 11147), (128, 2048, 9922), (128, 4096, 6831), (500, 2000, 7762), (1000, 1000, 7007),
                    (1000, 2000, 6271), (2048, 128, 1339), (2048, 2048, 4783), (5000, 500, 1459),
                    (20000, 2000, 665)]


@pytest.mark.parametrize("isl,osl,published", LLAMA70_B200_FP4)
def test_llama70b_fp4_on_b200_matches_tensorrt_llm(isl, osl, published):
    import tools.validate_serving as vs
    base = L3_70B + ["--gpu", "b200", "--precision", "fp4", "-tp", "1", "--serving-stack", "tensorrt-llm",
                     "--gpu-memory-utilization", "0.95", "-s", str(isl), "-o", str(osl), "-c", "1000000",
                     "--queue-past-pool"]
    bs, tokens = vs.trtllm_bench_engine(run(base)["serving"]["kv_pool_max_concurrency"], n_pp=1, isl=isl, osl=osl)
    r = run(base + ["--max-num-seqs", str(bs), "--max-num-batched-tokens", str(tokens)])
    assert r["serving"]["output_tokens_per_s"] == pytest.approx(published, rel=0.20)


@pytest.mark.parametrize("extra,text", [(["--plot", "x.png"], "add --search"), (["--disaggregated"], "add --search"),
                                        (["--search", "-tp", "4"], "leave out -tp"),
                                        (["--search", "-c", "8"], "leave out -c")])
def test_search_flag_misuse_exits_2(extra, text, capsys):
    with pytest.raises(SystemExit) as e:
        main(LLAMA7 + extra)
    err = capsys.readouterr().err
    assert e.value.code == 2 and text in err, err


def test_disaggregated_pairs_meet_the_targets_within_the_gpu_budget():
    r = run(SEARCH + ["--max-tpot-ms", "20", "--max-ttft-ms", "300", "--disaggregated", "-s", "2000"])
    pairs = [p for p in r["points"] if p.get("prefill")]
    assert pairs
    for p in pairs:
        q = p["prefill"]
        assert p["tpot_s"] <= 0.020 and p["ttft_s"] <= 0.300 + 1e-12
        assert q["replicas"] >= 1 and p["replicas"] >= 1
        assert q["replicas"] * q["gpus_per_replica"] + p["replicas"] * p["gpus_per_replica"] <= 8


def test_disaggregated_ttft_pays_the_kv_transfer_across_nodes():
    # 16 H100s span two nodes, so the prefill pool's KV cache crosses the NIC: a slower NIC can only
    # raise the first-token time of the same pair
    base = SEARCH[:-4] + ["--num-gpus", "16", "--max-tpot-ms", "20", "--disaggregated", "-s", "4000", "--top", "1"]
    fast, slow = (run(base + ["--scale-out-gbps", x]) for x in ("50", "2"))

    def ttft(r):
        return {(p["prefill"]["tp"], p["tp"], p["concurrency"], p["weight_bits"], p["kv_cache_bits"]): p["ttft_s"]
                for p in r["points"] if p.get("prefill")}
    f, s = ttft(fast), ttft(slow)
    common = set(f) & set(s)
    assert common and all(s[k] > f[k] for k in common)


@pytest.mark.parametrize("s,per_node", [(1024, 57674), (2048, 54543), (4096, 50302)])
def test_deepseek_v3_prefill_nodes_with_ep32_match_lmsys(s, per_node):
    """Same LMSYS blog, prefill nodes: 4 x 8 H100, DP attention + EP 32, 16,384 tokens per GPU per
    batch, input tokens/s per node. Steps with prompt tokens dispatch with DeepEP's high-throughput
    kernels (a token crosses the network once per destination node), which SGLang runs for them."""
    b = 16384 // s * 32
    r = run(["--hf_model_name_or_path", cfg("deepseek-v3"), "--gpu", "h100", "-tp", "1", "-dp", "32", "-ep", "32",
             "--activation-bits", "8", "--kv-cache-bits", "16", "--serving-stack", "sglang",
             "-b", str(b), "-s", str(s), "-o", "1"])
    assert b * s / r["prefill_s"] / 4 == pytest.approx(per_node, rel=0.15)


# NVIDIA NIM 1.0 benchmarking page (docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance.md):
# Llama-3.3-70B-Instruct FP8 on 2 x H100 (TP 2), 5000 prompt / 500 output tokens, a client keeping
# C requests open; (C, TTFT ms, ITL ms, output tokens/s). Past C ~ 82 the KV pool is full (ours) and
# NIM's throughput plateaus while its TTFT grows: it queues.
NIM_QUEUED = [(150, 34794.22, 92.86, 920.9), (200, 61680.22, 93.06, 920.54), (250, 88605.32, 93.2, 920.12)]


@pytest.mark.parametrize("c,ttft_ms,itl_ms,tput", NIM_QUEUED)
def test_queue_past_the_kv_pool_matches_nim(c, ttft_ms, itl_ms, tput):
    """--queue-past-pool: the pool's throughput unchanged, the other C - cap requests waiting
    (C - cap) / X (Little's law); nothing here was fitted to these rows."""
    r = run(L3_70B + ["--gpu", "h100", "-tp", "2", "--precision", "fp8", "--serving-stack", "tensorrt-llm",
                      "-s", "5000", "-o", "500", "-c", str(c), "--queue-past-pool"])
    sv = r["serving"]
    assert sv["queued_requests"] == c - sv["kv_pool_max_concurrency"] > 0
    assert sv["ttft_s"] * 1e3 == pytest.approx(ttft_ms, rel=0.20)
    assert sv["output_tokens_per_s"] == pytest.approx(tput, rel=0.20)


@pytest.mark.xfail(strict=True, reason="ITL +25% on NIM's 92.9-93.2 ms (issue 44: prompt "
                   "steps costed apart from decode steps, 116.1 ms; the mean step of issue 34 "
                   "gave +18%)")
@pytest.mark.parametrize("c,ttft_ms,itl_ms,tput", NIM_QUEUED)
def test_itl_past_the_kv_pool_matches_nim(c, ttft_ms, itl_ms, tput):
    """The same rows' ITL: the pool's requests decode in steps of their own, and every ~4th step
    carries a 5,000-token prompt (compute-bound); NIM's ITL is lower, as if prompt work hid in the
    decode steps' idle math (chunked context, or a faster prefill than ours)."""
    sv = run(L3_70B + ["--gpu", "h100", "-tp", "2", "--precision", "fp8", "--serving-stack",
                       "tensorrt-llm", "-s", "5000", "-o", "500", "-c", str(c),
                       "--queue-past-pool"])["serving"]
    assert sv["tpot_s"] * 1e3 == pytest.approx(itl_ms, rel=0.20)


# The same page below the pool (issues 34, 44): TTFT grows with the users although the pool holds
# them all. NIM's benchmark sends fixed-length requests from C clients started together, so the
# engine runs them in waves: the prompts of a wave share steps (several 5,000-token prompts per
# 8,192-token budget at first). The simulation runs that benchmark (--num-requests, 10 per client;
# its requests after the first wave, as a load generator measuring the stable load reports);
# (C, published TTFT ms). The steady state (clients in random phase, each prompt alone) gives
# -23%, -36%, -44%: it describes another load. Nothing was fitted to these rows.
NIM_LOADED = [(5, 546.7), (25, 688.69), (50, 834.51)]


@pytest.mark.parametrize("c,ttft_ms", NIM_LOADED)
def test_prompts_queue_for_each_others_prefill_as_nim_measures(c, ttft_ms):
    r = run(L3_70B + ["--gpu", "h100", "-tp", "2", "--precision", "fp8", "--serving-stack",
                      "tensorrt-llm", "-s", "5000", "-o", "500", "-c", str(c),
                      "--num-requests", str(10 * c)])
    assert r["serving"]["warm_ttft_s"] * 1e3 == pytest.approx(ttft_ms, rel=0.20)
    steady = run(L3_70B + ["--gpu", "h100", "-tp", "2", "--precision", "fp8", "--serving-stack",
                           "tensorrt-llm", "-s", "5000", "-o", "500", "-c", str(c)])
    assert steady["serving"]["ttft_s"] < r["serving"]["warm_ttft_s"]


# TensorRT-LLM's XQA blog (docs/source/blogs/XQA-kernel.md, v0.8a): Llama-70B FP8 on one H200,
# 128/2048, 1,227 tok/s/GPU without XQA and 2,941 with it: 2.4x. Before XQA (tensorrt-llm-mmha) the
# generation kernel reads a GQA block's cache once per query head. The blog gives no batch; both run
# at 192, the batch of the Falcon-180B blog's 2,941 (the same figure). The speedup is checked (20%);
# the absolute figures are 43-53% above the blog's at that batch (VALIDATION.md).
def test_xqa_speedup_matches_the_xqa_blog():
    argv = L3_70B[:-1] + ["32000", "--gpu", "h200", "--precision", "fp8", "-s", "128", "-o", "2048", "-b", "192"]
    xqa = run(argv + ["--serving-stack", "tensorrt-llm"])["output_tokens_per_s_per_gpu"]
    mmha = run(argv + ["--serving-stack", "tensorrt-llm-mmha"])["output_tokens_per_s_per_gpu"]
    assert xqa / mmha == pytest.approx(2941 / 1227, rel=0.20)


# TensorRT-LLM's KV fraction (--kv_cache_free_gpu_mem_fraction 0.95) is of the memory the loaded model
# leaves free (kvCacheManager.cpp, calculateMaxNumBlocks: cudaMemGetInfo's free bytes x the fraction).
# perf-overview v0.17: Llama 3.1 70B FP8 on one H100, 128/2048, 3,000 requests: 911.62 tok/s; with
# the pool as 0.95 x all memory less the weights it came out 29% slow (a third less pool).
def test_tensorrt_llm_pool_is_a_share_of_the_free_memory():
    import tools.validate_serving as vs
    rows = [r for r in vs.csv.DictReader(open(os.path.join(vs.ROOT, "validation", "published_serving.csv"),
                                               encoding="utf-8")) if r["row_id"] == "TRT017-0050"]
    (_, row, _, published, ours, _), = vs.comparisons(rows)
    assert row["model"] == "LLaMA v3.1 70B" and row["gpu"].startswith("H100") and published == 911.62
    assert ours == pytest.approx(published, rel=0.20)


def test_concurrency_past_the_pool_queues_by_default_and_exits_2_when_refused(capsys):
    # issue 34: "by default, concurrency past the pool queues as a server does"
    argv = L3_70B + ["--gpu", "h100", "-tp", "2", "--precision", "fp8", "-s", "5000", "-o", "500", "-c", "150"]
    assert run(argv)["serving"] == run(argv + ["--queue-past-pool"])["serving"]
    with pytest.raises(SystemExit) as e:
        main(argv + ["--refuse-past-pool"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "--refuse-past-pool" in err


# The running-request cap (vLLM's max_num_seqs, TensorRT-LLM's max_batch_size). vLLM's OpenAI
# server defaults (vllm/engine/arg_utils.py, get_batch_defaults): on GPUs of 70 GiB or more whose
# name is not A100, max_num_seqs 1024 and max_num_batched_tokens 8192; otherwise 256 and 2048.
# TensorRT-LLM's BuildConfig: max_batch_size 2048 (tensorrt_llm/builder.py).
L8 = ["--hf_model_name_or_path", cfg("llama-3.1-8b"), "--precision", "fp8", "-s", "100", "-o", "200",
      "--serving-stack", "vllm"]


@pytest.mark.parametrize("gpu,seqs,budget", [("h100", 1024, 8192), ("h200", 1024, 8192), ("a100", 256, 2048),
                                             ("l40s", 256, 2048)])
def test_vllm_batch_defaults_follow_arg_utils(gpu, seqs, budget):
    r = run(L8 + ["--gpu", gpu, "-c", "8"])
    assert r["serving"]["max_num_seqs"] == seqs and r["serving"]["token_budget"] == budget


def test_concurrency_past_the_running_cap_queues_without_the_flag():
    """Past max_num_seqs the scheduler admits no more whatever the pool holds: the running
    requests' throughput is kept and the rest wait (first tokens later), no exit 2; the memory
    shown holds the running requests' cache only."""
    at_cap = run(L8 + ["--gpu", "h100", "-c", "1024"])["serving"]
    past = run(L8 + ["--gpu", "h100", "-c", "2000"])["serving"]
    assert at_cap["kv_pool_max_concurrency"] > 2000  # the pool is not what binds
    assert past["running_requests"] == 1024 and past["queued_requests"] == 2000 - 1024
    full = run(L8 + ["--gpu", "h100", "-c", "2000", "--max-num-seqs", "2000"])
    assert run(L8 + ["--gpu", "h100", "-c", "2000"])["kv_cache_bytes_per_gpu"] < full["kv_cache_bytes_per_gpu"]
    assert past["output_tokens_per_s"] == pytest.approx(at_cap["output_tokens_per_s"], rel=1e-9)
    assert past["ttft_s"] > at_cap["ttft_s"]


def test_max_num_seqs_flag_overrides_the_stack_and_scales_with_dp():
    r = run(L8 + ["--gpu", "h100", "-c", "300", "--max-num-seqs", "100"])["serving"]
    assert r["max_num_seqs"] == 100 and r["running_requests"] == 100
    moe = ["--hf_model_name_or_path", cfg("mixtral-8x7b"), "--gpu", "h100", "--precision", "fp8", "-s", "100",
           "--serving-stack", "vllm",
           "-o", "100", "-tp", "1", "-dp", "2", "-ep", "2", "--max-num-seqs", "64", "-c", "200"]
    assert run(moe)["serving"]["running_requests"] == 128  # one cap per data-parallel engine


def test_request_rate_past_the_running_cap_exits_2_naming_the_flag(capsys):
    with pytest.raises(SystemExit) as e:
        main(L8 + ["--gpu", "a100", "--request-rate", "1000"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "--max-num-seqs" in err and "256" in err


def test_trtllm_pytorch_preset_slows_only_the_moe_blocks():
    """tensorrt-llm-pytorch is tensorrt-llm with its MoE blocks at TRTLLM_PYTORCH_MOE_FACTOR x our
    account (set from the later perf-overview's MoE rows, tools/fit_trtllm_moe_factor.py): a dense
    model is costed the same; a MoE model's MLP component grows by the factor, nothing else moves."""
    dense = ["--hf_model_name_or_path", cfg("llama-3.1-8b"), "--gpu", "h100", "-c", "64", "-s", "512", "-o", "64"]
    a, b = run(dense + ["--serving-stack", "tensorrt-llm"]), run(dense + ["--serving-stack", "tensorrt-llm-pytorch"])
    assert a["serving"]["tpot_s"] == b["serving"]["tpot_s"]
    moe = ["--hf_model_name_or_path", cfg("qwen3-30b-a3b"), "--gpu", "b200", "--precision", "fp4", "-s", "512", "-o", "8"]
    a, b = run(moe + ["--serving-stack", "tensorrt-llm"]), run(moe + ["--serving-stack", "tensorrt-llm-pytorch"])
    ca, cb = a["decode_first_step_components_s"], b["decode_first_step_components_s"]
    assert cb["mlp"] == pytest.approx(cil.TRTLLM_PYTORCH_MOE_FACTOR * ca["mlp"], rel=1e-12)
    assert all(cb[k] == ca[k] for k in ca if k != "mlp")


def test_vllm_batch_defaults_follow_vllms_own_rule_on_every_gpu():
    # vLLM's get_batch_defaults (vllm/engine/arg_utils.py): the larger defaults (8192 batched
    # tokens, 1024 sequences) when `device_memory >= 70 GiB and "a100" not in device_name`, else
    # 2048 and 256. The preset reads the record's kernel_family instead of the name; on every GPU
    # of the table the two rules must give the same defaults.
    try:
        hardware = importlib.import_module("hardware")
    except ImportError:
        pytest.skip("hardware.py not beside the script")
    for name in hardware.list_accelerators():
        rec = hardware.get_accelerator(name)
        if not any((rec["peak_flops_per_s"] or {}).get(k) for k in ("bf16", "fp16")):
            continue
        args = cil.build_parser().parse_args(["--gpu", name, "--serving-stack", "vllm"])
        hw, _ = cil.hardware_from_flags(args, cil.build_parser())
        large = hw["gpu_memory_bytes"] >= 70 * 2 ** 30 and "a100" not in rec["full_name"].lower()
        want = (8192, 1024) if large else (2048, 256)
        assert (hw["token_budget"], hw["max_num_seqs"]) == want, name
