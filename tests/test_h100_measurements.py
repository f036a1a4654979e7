"""The scripts against our own measurements on one H100 (issues 13 and 14).

Source: validation/h100/measure_training.py and measure_serving.py, run on one NVIDIA H100 80GB
HBM3 (SXM, 132 SMs, 700 W, driver 580.159.04) lent to this project on 2026-11-24: torch 2.11.0 +
CUDA 13.0, transformers 5.17.0. Raw rows: validation/h100/results/*.jsonl (each row carries its
setup). VALIDATION.md lists every comparison, good or bad.

Calibration and validation are kept apart:
- the matmul grid's 51 shapes with m, n, k >= 2048 set one constant, calc_training_time.py's
  SUSTAINED_OVER_MAMF (the median of each dtype); here the grid judges only the shape dependence
  around that median, and the training steps judge the whole step;
- the Llama-3.2-1B-shaped decode rows set --kernel-overhead-us for the eager-transformers host;
  the Llama-3.1-8B-shaped rows judge it.
"""
import json
import math
import os
import statistics
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "validation", "h100", "results")
sys.path.insert(0, ROOT)

import calc_inference_latency as I  # noqa: E402
import calc_training_time as T  # noqa: E402


def _rows(name):
    with open(os.path.join(RESULTS, name)) as f:
        return [json.loads(line) for line in f if line.strip()]


GEMM = [r for r in _rows("gemm.jsonl") if "m" in r and "s" in r]
TRAIN = _rows("train.jsonl")
SERVE = _rows("serve.jsonl")

# The models the scripts ran, as config.json: the shapes measure_*.py built with LlamaConfig
LLAMA = {
    "llama-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=64, vocab_size=128256, tie_word_embeddings=True),
    "llama-3b": dict(hidden_size=3072, intermediate_size=8192, num_hidden_layers=28, num_attention_heads=24,
                     num_key_value_heads=8, head_dim=128, vocab_size=128256, tie_word_embeddings=True),
    "llama-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=128, vocab_size=128256, tie_word_embeddings=False),
}


@pytest.fixture(scope="module")
def configs(tmp_path_factory):
    d = tmp_path_factory.mktemp("h100_configs")
    out = {}
    for name, shape in LLAMA.items():
        cfg = dict(model_type="llama", architectures=["LlamaForCausalLM"], max_position_embeddings=131072,
                   rms_norm_eps=1e-5, rope_theta=500000.0, attention_bias=False, mlp_bias=False,
                   hidden_act="silu", **shape)
        p = d / f"{name}.json"
        p.write_text(json.dumps(cfg))
        out[name] = str(p)
    return out


def test_measured_models_are_the_shapes_named_here():
    # the rows record the shapes they ran; the configs above must be those
    for r in TRAIN + [r for r in SERVE if "config" in r]:
        assert r["config"] == LLAMA[r["model"]], r["model"]


def _hw(dtype):
    p = T.build_parser()
    hw, _, _ = T.resolve_hardware(p.parse_args(["--gpu", "h100-sxm", "--dtype", dtype]), p)
    return hw


# Matmul grid: shape dependence around the calibrated median. Large shapes only (m, n, k >= 2048:
# the training shapes); the ones the tile/wave model misses are strict xfails carrying their error.
GEMM_MISS = {("bf16", 3072, 3072, 3072): "+32%: cuBLAS beats the 128x256 wave quantization at 3 waves",
             ("fp8", 3072, 3072, 3072): "+32%: as bf16",
             ("fp8", 2048, 2048, 2048): "-47%: _scaled_mm ran 620 TFLOP/s here, below bf16's 687"}


def _gemm_param(r):
    key = (r["dtype"], r["m"], r["n"], r["k"])
    marks = [pytest.mark.xfail(strict=True, reason=GEMM_MISS[key])] if key in GEMM_MISS else []
    return pytest.param(r, marks=marks, id="{}-{}x{}x{}".format(*key))


BIG = [r for r in GEMM if min(r["m"], r["n"], r["k"]) >= 2048]


# What the science allows: bf16 8192^3 measured 665, 690 and 685 TFLOP/s at three places of the
# grid (+-2%), fp8 8192^3 1,058 and 1,230 at two (+-8%): 10% for bf16, 15% for fp8.
GEMM_TOLERANCE = {"bf16": 0.10, "fp8": 0.15}


@pytest.mark.parametrize("row", [_gemm_param(r) for r in BIG])
def test_large_matmul_time_within_tolerance_of_the_h100(row):
    hw = _hw(row["dtype"])
    pred = T.gemm_time_s(row["m"], row["n"], row["k"], hw=hw, dtype_bytes=2 if row["dtype"] == "bf16" else 1)
    assert pred == pytest.approx(row["s"], rel=GEMM_TOLERANCE[row["dtype"]])


# Skinny products (m <= 512 against n, k >= 4096: decode-like and small-batch training products).
# Judged where the GPU set the time: the grid times back-to-back eager calls, and on that VM one
# eager op takes ~21 us of host time, so rows measured under 40 us (twice that) are the host's and
# not judged. Before split-K and narrow tiles (split_k_slices, _output_tiles) these ran 2-4x slow
# (the 128 x 256 tiles of one row filled 16 of 132 SMs); none of them set a constant.
SKINNY = [r for r in GEMM if r["m"] <= 512 and min(r["n"], r["k"]) >= 4096 and r["s"] >= 40e-6]
SKINNY_MISS = {("bf16", 128, 8192, 8192): "+22%: its 4 split-K partials (fp32) counted at HBM bandwidth; "
                                           "reduced in L2 it would be -2% (and 128x4096x14336 -21%)",
               ("bf16", 512, 4096, 14336): "-12%: 2 slices of 64 tiles; the measured kernel is slower"}


def _skinny_param(r):
    key = (r["dtype"], r["m"], r["n"], r["k"])
    marks = [pytest.mark.xfail(strict=True, reason=SKINNY_MISS[key])] if key in SKINNY_MISS else []
    return pytest.param(r, marks=marks, id="{}-{}x{}x{}".format(*key))


def test_skinny_rows_are_the_ones_named_here():
    assert len(SKINNY) == 20 and all(r["m"] in (1, 8, 32, 128, 512) for r in SKINNY)


@pytest.mark.parametrize("row", [_skinny_param(r) for r in SKINNY])
def test_skinny_matmul_time_within_tolerance_of_the_h100(row):
    hw = _hw(row["dtype"])
    pred = T.gemm_time_s(row["m"], row["n"], row["k"], hw=hw, dtype_bytes=2 if row["dtype"] == "bf16" else 1)
    assert pred == pytest.approx(row["s"], rel=GEMM_TOLERANCE[row["dtype"]])


def test_sustained_factor_is_the_grid_median():
    # the constant is what the grid says, no more: with it the model's median over the 51 large
    # shapes per dtype equals the measured median (within rounding of the factor)
    for dtype in ("bf16", "fp8"):
        hw = _hw(dtype)
        ratios = [T.gemm_time_s(r["m"], r["n"], r["k"], hw=hw, dtype_bytes=2 if dtype == "bf16" else 1) / r["s"]
                  for r in BIG if r["dtype"] == dtype]
        assert len(ratios) == 51
        assert statistics.median(ratios) == pytest.approx(1.0, abs=0.002)


# Training steps: HF LlamaForCausalLM, one GPU, fp32 parameters + bf16 autocast, SDPA, fused AdamW,
# clip 1.0; checkpointing = gradient_checkpointing_enable (every layer recomputed) = --recompute full.
# Eager PyTorch's host time is not costed: the small steps, where the host sets the pace (the 1B's
# forward + backward takes 83 ms at 2,048 tokens, 104 ms at 4,096, not the 2x the GPU work
# would give), miss by more and are strict xfails carrying their error.
TRAIN_MISS = {("llama-1b", 2048, 1, False): -37, ("llama-1b", 2048, 1, True): -44,
              ("llama-1b", 2048, 2, False): -15, ("llama-1b", 2048, 2, True): -24,
              ("llama-3b", 2048, 1, True): -28}


def _train_param(r):
    key = (r["model"], r["seq"], r["micro_batch"], r["checkpointing"])
    marks = []
    if key in TRAIN_MISS:
        marks = [pytest.mark.xfail(strict=True, reason=f"{TRAIN_MISS[key]}%: host-bound, launch time not costed")]
    return pytest.param(r, marks=marks, id="{}-s{}-b{}-ckpt{}".format(*key))


def _train_argv(r, configs):
    return ["--hf_model_name_or_path", configs[r["model"]], "--gpu", "h100-sxm", "--num-gpus", "1",
            "-s", str(r["seq"]), "-b", str(r["micro_batch"]), "--global-batch-size", str(r["micro_batch"]),
            "--framework", "pytorch", "--recompute", "full" if r["checkpointing"] else "none", "--json"]


def _run_json(main, argv, capsys):
    main(argv)
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("row", [_train_param(r) for r in TRAIN])
def test_training_step_within_15_percent_of_the_h100(row, configs, capsys):
    assert "error" not in row
    res = _run_json(T.main, _train_argv(row, configs), capsys)
    assert res["step_time_s"] == pytest.approx(row["step_s"], rel=0.15)


def test_optimizer_step_within_10_percent_of_the_h100(configs, capsys):
    # fused AdamW + clip_grad_norm_ on fp32 parameters and gradients, timed alone with CUDA events:
    # 19.0 ms for 1.24 B parameters, 49.1 ms for 3.21 B (medians over the rows of each model)
    for model in ("llama-1b", "llama-3b"):
        rows = [r for r in TRAIN if r["model"] == model]
        measured = statistics.median(r["optimizer_s"] for r in rows)
        res = _run_json(T.main, _train_argv(rows[0], configs), capsys)
        assert res["breakdown_s"]["optimizer_step"] == pytest.approx(measured, rel=0.10)


# Peak memory: torch.cuda.max_memory_allocated over the timed steps (optimizer states exist from the
# first step on). Ours: --framework pytorch (the eager rule, autocast's fp32 weights; no allowance,
# since max_memory_allocated has no CUDA context). Nothing was set from these rows; the per-layer
# bytes are checked against transformers on CPU (tests/test_eager_memory.py). The rule's two
# moments (backward start / end) were written after these rows were seen. Tolerance 5%: the rows
# also hold what the rule leaves out (cuBLAS workspaces, rotary tables, gradients in flight); 13 of
# 14 are within 0.4%, the 1B at micro-batch 2 with checkpointing -4.3%.
@pytest.mark.parametrize("row", [pytest.param(r, id="{model}-s{seq}-b{micro_batch}-ckpt{checkpointing}".format(**r))
                                 for r in TRAIN])
def test_eager_peak_memory_within_5_percent_of_the_h100(row, configs, capsys):
    import calc_transformer_mem as M
    argv = ["--hf_model_name_or_path", configs[row["model"]], "-s", str(row["seq"]), "-b", str(row["micro_batch"]),
            "--framework", "pytorch", "--framework-mem-gib", "0", "--json"]
    mem = _run_json(M.main, argv + ["--recompute", "full" if row["checkpointing"] else "none"], capsys)
    assert mem["total_bytes"] == pytest.approx(row["peak_allocated_bytes"], rel=0.05)
    train = _run_json(T.main, _train_argv(row, configs) + ["--framework-mem-gib", "0"], capsys)
    assert train["total_bytes"] == pytest.approx(mem["total_bytes"], rel=1e-9)  # one shared block


# Serving: plain transformers, eager, bf16 random weights, SDPA.
def _serve_argv(configs, model, b, p, o, extra=()):
    return ["--hf_model_name_or_path", configs[model], "--gpu", "h100-sxm", "--serving-stack", "hf-eager",
            "-b", str(b), "--prompt-tokens", str(p), "--output-tokens", str(o), "--json", *extra]


PREFILL = [r for r in SERVE if r["path"] == "eager-forward"]


@pytest.mark.parametrize("row", [pytest.param(r, id=f"{r['model']}-b{r['batch']}-p{r['prompt']}")
                                 for r in PREFILL if r["batch"] * r["prompt"] >= 2048])
def test_eager_prefill_within_20_percent_of_the_h100(row, configs, capsys):
    # the forward pass over the prompt alone (DynamicCache, last logits only), at 2,048 tokens and
    # more, where the GPU rather than the host sets the pace
    res = _run_json(I.main, _serve_argv(configs, row["model"], row["batch"], row["prompt"], 2), capsys)
    assert res["prefill_s"] == pytest.approx(row["prefill_s"], rel=0.20)


def test_eager_decode_host_cost_set_on_1b_carries_to_8b(configs, capsys):
    # generate's time per output token is host-bound: ~20 ms for the 16-layer 1B, ~38 ms for the
    # 32-layer 8B, at any batch up to 32. Set the per-kernel cost from the 1B rows (the value that
    # makes the median 1B row exact), then judge the 8B rows with it.
    dec = {m: [r for r in SERVE if r["path"] == "eager" and r["model"] == m] for m in ("llama-1b", "llama-8b")}

    def tpot(model, r, us):
        res = _run_json(I.main, _serve_argv(configs, model, r["batch"], r["prompt"], r["n2"],
                                            ("--kernel-overhead-us", str(us))), capsys)
        return res["decode_per_token_s"]

    ref = sorted(dec["llama-1b"], key=lambda r: r["tpot_s"])[len(dec["llama-1b"]) // 2]
    base, slope = tpot("llama-1b", ref, 0), (tpot("llama-1b", ref, 100) - tpot("llama-1b", ref, 0)) / 100
    us = (ref["tpot_s"] - base) / slope
    assert 80 < us < 130  # ~5 eager torch ops per kernel of ours at the ~21 us per op this host shows
    errors = [tpot("llama-8b", r, us) / r["tpot_s"] - 1 for r in dec["llama-8b"]]
    assert all(math.isfinite(e) for e in errors)
    assert abs(statistics.median(errors)) <= 0.20
    assert max(abs(e) for e in errors) <= 0.30


def test_host_cost_per_eager_op_on_this_machine():
    # back-to-back 256^3 and 512^3 bf16 matmuls take ~20 us each: the host's dispatch time per
    # eager op, not the GPU's (XLA's table times the 256^3 kernel at 5.0 us on an H100)
    small = [r["s"] for r in GEMM if r["dtype"] == "bf16" and r["m"] in (256, 512) and r["m"] == r["n"] == r["k"]]
    assert len(small) == 2 and all(15e-6 < s < 30e-6 for s in small)
