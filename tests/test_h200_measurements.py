"""The scripts against our own measurements on one H200 (issue 36).

Source: validation/h100/measure_stacks.py, measure_serving.py and measure_training.py, run on one
NVIDIA H200 (SXM, 141 GB HBM3e, 132 SMs, 700 W, driver 580.159.04) lent to this project on
2026-11-26: torch 2.11.0 + CUDA 13.0, transformers 5.17.0, torchao 0.18.0. Raw rows and the exact
commands: validation/h200/ (README.md, results/*.jsonl; each row carries its setup). VALIDATION.md
lists every comparison, good or bad.

Nothing here set a constant: every row judges the scripts as they stood before the run (the
matmul grid's sustained factor was set on the H100's grid, the FA2 attention rate from Dao 2023,
the eager host cost from the H100's 1B rows). Misses are strict xfails that carry the error, so a
change that fixes one shows up.
"""
import contextlib
import io
import json
import os
import statistics
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "validation", "h200", "results")
H100 = os.path.join(ROOT, "validation", "h100", "results")
sys.path.insert(0, ROOT)

import calc_inference_latency as I  # noqa: E402
import calc_training_time as T  # noqa: E402
from llmcalc.model.spec import resolve_model_spec  # noqa: E402
from llmcalc.train.attention_rates import HOPPER_TABLE_PEAK_FLOPS, hopper_attention_fractions  # noqa: E402
from llmcalc.train.step import fp8_cast_time_s, pair_operand_elements  # noqa: E402
from llmcalc.serve.forward import forward_pass  # noqa: E402
from llmcalc.tools.latency import hardware_from_flags as serve_hardware  # noqa: E402


def _rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


GEMM = [r for r in _rows(os.path.join(RESULTS, "gemm.jsonl")) if "m" in r and "s" in r]
GEMM_H100 = {(r["dtype"], r["m"], r["n"], r["k"]): r for r in _rows(os.path.join(H100, "gemm.jsonl"))
             if "m" in r and "s" in r}
ATTN = [r for r in _rows(os.path.join(RESULTS, "attention.jsonl")) if r["dtype"] == "bf16"]
FSDP = _rows(os.path.join(RESULTS, "fsdp2.jsonl"))
SERVE = _rows(os.path.join(RESULTS, "serve.jsonl"))
PREFIX = _rows(os.path.join(RESULTS, "prefix.jsonl"))

LLAMA = {  # the shapes the rows ran (measure_training.LLAMA_SHAPES; measure_stacks.SHAPE as fsdp-8l)
    "llama-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=64, vocab_size=128256, tie_word_embeddings=True),
    "llama-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=128, vocab_size=128256, tie_word_embeddings=False),
    "fsdp-8l": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=8, num_attention_heads=32,
                    num_key_value_heads=8, head_dim=128, vocab_size=128256, tie_word_embeddings=False),
}


@pytest.fixture(scope="module")
def configs(tmp_path_factory):
    d = tmp_path_factory.mktemp("h200_configs")
    out = {}
    for name, shape in LLAMA.items():
        cfg = dict(model_type="llama", architectures=["LlamaForCausalLM"], max_position_embeddings=131072,
                   rms_norm_eps=1e-5, rope_theta=500000.0, attention_bias=False, mlp_bias=False,
                   hidden_act="silu", **shape)
        p = d / f"{name}.json"
        p.write_text(json.dumps(cfg))
        out[name] = str(p)
    return out


def _run_json(main, argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(argv)
    return json.loads(out.getvalue())


def test_measured_models_are_the_shapes_named_here():
    s = FSDP[0]["shape"]
    assert all(r["shape"] == s for r in FSDP)
    assert (s["layers"], s["width"], s["ffn"], s["heads"], s["kv_heads"], s["vocab"]) == (8, 4096, 14336, 32, 8, 128256)
    f = LLAMA["fsdp-8l"]
    assert (f["num_hidden_layers"], f["hidden_size"], f["intermediate_size"]) == (8, 4096, 14336)
    for r in SERVE:
        if "config" in r:
            assert r["config"] == LLAMA[r["model"]], r["model"]


# --- the card: the same compute as the H100 measured on 2026-11-24, more bandwidth ---------------
BIG = [r for r in GEMM if min(r["m"], r["n"], r["k"]) >= 2048]


def test_the_card_matches_the_h100_in_matmuls():
    # the H200 is the H100's GH100 die with HBM3e: large products run at the same rate. The median
    # over the shapes measured on both is within 5% (bf16 0.967x, fp8 0.988x the H100's speed)
    for dtype in ("bf16", "fp8"):
        ratios = [GEMM_H100[k]["s"] / r["s"] for r in BIG if r["dtype"] == dtype
                  and (k := (dtype, r["m"], r["n"], r["k"])) in GEMM_H100]
        assert len(ratios) >= 45
        assert statistics.median(ratios) == pytest.approx(1.0, abs=0.05)


GEMM_MISS = {("bf16", 3072, 3072, 3072): "+32%: as on the H100, cuBLAS beats the 3-wave quantization",
             ("fp8", 3072, 3072, 3072): "+23%: as bf16",
             ("fp8", 2048, 2048, 2048): "-45%: _scaled_mm at 2048^3 ran below the bf16 rate, as on the H100"}
GEMM_TOLERANCE = {"bf16": 0.10, "fp8": 0.15}  # as the H100 grid's (its repeat spread)


def _gemm_param(r):
    key = (r["dtype"], r["m"], r["n"], r["k"])
    marks = [pytest.mark.xfail(strict=True, reason=GEMM_MISS[key])] if key in GEMM_MISS else []
    return pytest.param(r, marks=marks, id="{}-{}x{}x{}".format(*key))


@pytest.mark.parametrize("row", [_gemm_param(r) for r in BIG])
def test_large_matmul_time_within_tolerance_of_the_h200(row):
    p = T.build_parser()
    hw, _, _ = T.resolve_hardware(p.parse_args(["--gpu", "h200", "--dtype", row["dtype"]]), p)
    pred = T.gemm_time_s(row["m"], row["n"], row["k"], hw=hw, dtype_bytes=2 if row["dtype"] == "bf16" else 1)
    assert pred == pytest.approx(row["s"], rel=GEMM_TOLERANCE[row["dtype"]])


def test_copy_bandwidth_within_5_percent_of_the_h200():
    # a 1 GiB device-to-device copy moved 3,971 GB/s (read + write); calc_training_time.py takes
    # 0.85 of the datasheet's 4.8 TB/s (MEM_BW_FRACTION, set from other cards' copies)
    copy = next(r for r in _rows(os.path.join(RESULTS, "gemm.jsonl")) if r.get("kind") == "d2d_copy")
    p = T.build_parser()
    hw, _, _ = T.resolve_hardware(p.parse_args(["--gpu", "h200"]), p)
    assert hw["mem_bw"] == pytest.approx(copy["GBps"] * 1e9, rel=0.05)


# --- attention: torch's SDPA, causal, heads x head dim 4096, bf16 --------------------------------
def _flash_rate(gpu="h200"):
    """The attention rate calc_training_time.py assumes (forward, backward FLOP/s): the FA2 figure."""
    p = T.build_parser()
    hw, _, _ = T.resolve_hardware(p.parse_args(["--gpu", gpu]), p)
    ff, fb = hw["flash"]
    return hw["peak16"] * ff, hw["peak16"] * fb


# The FA2 rate (Dao 2023: 308 TFLOP/s on the H100 SXM, causal, head dim 128, 8k tokens, forward +
# backward) judged on torch's flash backend (FlashAttention-2 inside torch) at that head dim and
# 4k tokens and longer, each pass apart: what the published point covers. 15%: the published
# figure's own spread over 4k-16k. Shorter sequences and head dims 64 and 256 run slower than that
# point (down to 189 TFLOP/s backward at 1k): VALIDATION.md has every row.
FA2_ROWS = [r for r in ATTN if r["backend"] == "flash" and r["head_dim"] == 128 and r["seq"] >= 4096]


@pytest.mark.parametrize("row", [pytest.param(r, id=f"s{r['seq']}") for r in FA2_ROWS])
def test_flash_backend_within_15_percent_of_the_fa2_rate(row):
    ff, fb = _flash_rate()
    assert row["fwd_flops"] / ff == pytest.approx(row["fwd_s"], rel=0.15)
    assert row["bwd_flops"] / fb == pytest.approx(row["fwd_bwd_s"] - row["fwd_s"], rel=0.15)


# SDPA without a backend named (what HF models and torchtitan call) runs cuDNN's wgmma kernel on
# Hopper (the profiler's kernel names in the rows' default_kernels, head dim 64, 128 and 256). The
# script's cuDNN rates were set from the "cudnn" rows of the same file (train/attention_rates.py),
# so this is a repeat run of the calibration kernel, not an independent check: it shows the rate
# holds from one run to the next (15%) at every head dim and sequence measured.
SDPA_ROWS = [r for r in ATTN if r["backend"] == "default" and "fwd_s" in r]


@pytest.mark.parametrize("row", [pytest.param(r, id=f"d{r['head_dim']}-s{r['seq']}") for r in SDPA_ROWS])
def test_sdpa_default_within_15_percent_of_the_cudnn_rate(row):
    ff, fb = hopper_attention_fractions("cudnn", head_dim=row["head_dim"], seq=row["seq"])
    t = row["fwd_flops"] / (HOPPER_TABLE_PEAK_FLOPS * ff) + row["bwd_flops"] / (HOPPER_TABLE_PEAK_FLOPS * fb)
    assert t == pytest.approx(row["fwd_bwd_s"], rel=0.15)


# --- FSDP2 training steps: what the script expresses ----------------------------------------------
# bf16 compute, recompute none, every block, or per-op selective checkpointing
# (measure_stacks.sac_policy: torchtitan's op-SAC, --recompute op-sac) (-z 3, --framework pytorch:
# the eager torchtitan / HF kernels, FSDP's casts), eager or torch.compile'd blocks (--compile: the
# non-matmul kernels at the share of eager time measured on measure_layers.py's rows, a different
# script and run), and torchao float8 (--dtype fp8 --fp8-recipe: its casts at the bytes per element
# set on the 8B-shaped layer rows of layers.jsonl). Memory is judged on eager bf16 rows only:
# compile's +8.7 GiB and float8's buffers are not modelled.
def _expressed(r):
    return r["recompute"] in ("none", "full", "op-sac") and "error" not in r


def _expressed_memory(r):
    return _expressed(r) and r["mode"] == "eager" and r["float8"] == "none"


STEP_MISS = {}
# Per-block checkpointing under FSDP2 (checkpoint wrapper inside fully_shard, torchtitan's order)
# peaked 11 GiB above no recompute at 8,192 tokens. Located in the second session
# (recompute_memory.jsonl): checkpointing frees the activations the model says (16.3 -> 6.5 GiB
# without FSDP2, 18.2 -> 8.5 under it), but under FSDP2 at world size 1 10.4 GiB more (4 B per
# parameter, embedding and head included) stays allocated between steps; what holds it inside
# torch is not established. The excess fits the
# recomputed activations held to the end of the backward beside the gradients (17.6 + 10.4 GiB over
# the states, 28.7 measured); transformers' own checkpointing without FSDP matched within 0.4% on
# the H100.
MEM_MISS = {(4096, 2, "full"): "-30%: FSDP2 + per-block checkpointing peaked above no recompute",
            (1024, 8, "full"): "-30%: as 4096 x 2",
            (16384, 1, "full"): "-27%: as 4096 x 2",
            # op-SAC (issue 33): measured above no recompute too (68.0 vs 63.7 GB at 4,096 x 2); ours keeps
            # the saved matmul and attention outputs plus one rebuilt layer
            (4096, 2, "op-sac"): "-17%: FSDP2 + per-block op-SAC peaked above no recompute, as full",
            (1024, 8, "op-sac"): "-17%: as 4096 x 2",
            (16384, 1, "op-sac"): "-16%: as 4096 x 2"}


def _fsdp_param(r, misses):
    key = (r["seq"], r["micro_batch"], r["recompute"])
    marks = [pytest.mark.xfail(strict=True, reason=misses[key])] if key in misses else []
    return pytest.param(r, marks=marks, id="s{}-b{}-{}-{}-{}".format(*key, r["mode"], r["float8"]))


def _train_argv(r, configs):
    return ["--hf_model_name_or_path", configs["fsdp-8l"], "--gpu", "h200", "--num-gpus", "1", "-z", "3",
            "-s", str(r["seq"]), "-b", str(r["micro_batch"]), "--global-batch-size", str(r["micro_batch"]),
            "--framework", "pytorch", "--recompute", r["recompute"], "--json",
            *(["--compile"] if r["mode"] == "compile" else []),
            *(["--dtype", "fp8", "--fp8-recipe", r["float8"]] if r["float8"] != "none" else [])]


@pytest.mark.parametrize("row", [_fsdp_param(r, STEP_MISS) for r in FSDP if _expressed(r)])
def test_fsdp2_step_within_15_percent_of_the_h200(row, configs):
    res = _run_json(T.main, _train_argv(row, configs))
    assert res["step_time_s"] == pytest.approx(row["step_s"], rel=0.15)


@pytest.mark.parametrize("row", [_fsdp_param(r, MEM_MISS) for r in FSDP if _expressed_memory(r)])
def test_fsdp2_eager_peak_memory_within_5_percent_of_the_h200(row, configs):
    # torch.cuda.max_memory_allocated over the timed steps; ours with no allowance for the context
    res = _run_json(T.main, _train_argv(row, configs) + ["--framework-mem-gib", "0"])
    assert res["total_bytes"] == pytest.approx(row["peak_allocated_bytes"], rel=0.05)


def test_rows_the_script_cannot_express_are_these():
    rest = sorted({(r["mode"], r["recompute"], r["float8"]) for r in FSDP if not _expressed(r)})
    assert rest == []
    assert not any("error" in r for r in FSDP)


# --- serving: plain transformers, bf16 random weights, SDPA ----------------------------------------
def _serve(configs, model, b, p, o, stack):
    return _run_json(I.main, ["--hf_model_name_or_path", configs[model], "--gpu", "h200", "--serving-stack", stack,
                              "-b", str(b), "--prompt-tokens", str(p), "--output-tokens", str(o), "--json"])


# generate with one new token (the prompt's forward pass, generate's set-up, one token's choice),
# eager and with a StaticCache, at 2,048 prompt tokens and more, where the GPU sets the pace (the
# H100 rule; shorter prompts are the host's: 16-27 ms for any model here)
FIRST = [r for r in SERVE if r["path"].endswith("generate-1") and r["batch"] * r["prompt"] >= 2048]


@pytest.mark.parametrize("row", [pytest.param(r, id=f"{r['model']}-{r['path']}-b{r['batch']}-p{r['prompt']}")
                                 for r in FIRST])
def test_first_token_within_20_percent_of_the_h200(row, configs):
    res = _serve(configs, row["model"], row["batch"], row["prompt"], 2, "hf-eager")
    assert res["prefill_s"] == pytest.approx(row["t1_s"], rel=0.20)


# generate with a StaticCache: transformers compiles each decode step (reduce-overhead, CUDA
# graphs); the prompt's pass stays eager. Time per output token against the `kernels` stack (CUDA
# graph decode, no engine): the 8B at batch 1 is within 15% (-14.5%); every other row is slower
# than the kernels, by more as the batch grows and the smaller the model;
# generate's own per-step work (logits processing, stopping checks, cache bookkeeping) sits outside
# the graph and no stack preset describes it. Recorded, not fitted (issue 34: fixed costs).
GRAPH = [r for r in SERVE if r["path"] == "static+compile"]
GRAPH_MISS = {("llama-8b", 8): "-31%", ("llama-8b", 32): "-55%",
              ("llama-1b", 1): "-41%", ("llama-1b", 8): "-56%", ("llama-1b", 32): "-62%"}


@pytest.mark.parametrize("row", [pytest.param(r, id=f"{r['model']}-b{r['batch']}", marks=[pytest.mark.xfail(
    strict=True, reason=GRAPH_MISS[key] + ": generate's per-step host work is not costed")]
    if (key := (r["model"], r["batch"])) in GRAPH_MISS else []) for r in GRAPH])
def test_graph_mode_decode_within_15_percent_of_the_h200(row, configs):
    assert "error" not in row
    res = _serve(configs, row["model"], row["batch"], row["prompt"], row["n2"], "kernels")
    assert res["decode_per_token_s"] == pytest.approx(row["tpot_s"], rel=0.15)


# --- prefix caching: a 4,096-token prefix, its KV cache kept (DynamicCache), the suffix run over it --
def _prefill_s(configs, b, new, before):
    parser = I.build_parser()
    args = parser.parse_args(["--hf_model_name_or_path", configs["llama-8b"], "--gpu", "h200",
                              "--serving-stack", "hf-eager"])
    args.weight_bits = args.activation_bits = args.kv_cache_bits = 16
    spec, _ = resolve_model_spec(vars(args), defaults={"num_experts": 8})
    hw, _ = serve_hardware(args, parser)
    return forward_pass(spec, hw, tp=1, pp=1, batch=b, new_tokens=new, context_before=before, w_bits=16,
                        a_bits=16, kv_bits=16, absorbed=False)["time_s"]


@pytest.mark.parametrize("row", [pytest.param(r, id=f"b{r['batch']}-suffix{r['suffix_tokens']}") for r in PREFIX])
def test_cold_prefill_of_prefix_and_suffix_within_20_percent_of_the_h200(row, configs):
    res = _serve(configs, "llama-8b", row["batch"], row["prefix_tokens"] + row["suffix_tokens"], 2, "hf-eager")
    assert res["prefill_s"] == pytest.approx(row["cold_s"], rel=0.20)
    assert _prefill_s(configs, row["batch"], row["prefix_tokens"] + row["suffix_tokens"], 0) == pytest.approx(
        res["prefill_s"], rel=1e-9)  # the package's forward pass is what the script prints


# the warm pass: the suffix's tokens over the cached prefix, judged at 2,048 new tokens and more (the
# host sets the pace below: 29 ms for 128 tokens). The batch-8 row runs a masked SDPA (a suffix over
# a cache is not the square causal case, so transformers passes a mask and torch leaves the flash
# kernel; inferred from transformers' sdpa_attention, not profiled).
WARM = [r for r in PREFIX if r["batch"] * r["suffix_tokens"] >= 2048]
WARM_MISS = {(8, 512): "-29%: the masked SDPA kernel of a suffix over a cached prefix is slower than flash"}


@pytest.mark.parametrize("row", [pytest.param(r, id=f"b{r['batch']}-suffix{r['suffix_tokens']}", marks=(
    [pytest.mark.xfail(strict=True, reason=WARM_MISS[(r["batch"], r["suffix_tokens"])])]
    if (r["batch"], r["suffix_tokens"]) in WARM_MISS else [])) for r in WARM])
def test_warm_prefill_over_a_cached_prefix_within_20_percent_of_the_h200(row, configs):
    pred = _prefill_s(configs, row["batch"], row["suffix_tokens"], row["prefix_tokens"])
    assert pred == pytest.approx(row["warm_s"], rel=0.20)



# --- where a layer's time goes (measure_layers.py, second H200 session) ---------------------------
LAYERS = _rows(os.path.join(RESULTS, "layers.jsonl"))


def _layer(name, mode, fp8):
    return [r for r in LAYERS if (r["layer"], r["mode"], r["float8"], r["seq"]) == (name, mode, fp8, 4096)]


def _operand_elements(m, h, q, kv, ffn):
    """Operand elements of one Llama layer's linears at TP 1 (fused QKV with output, gate+up with
    down), counted by the step model's own function (train/step.pair_operand_elements)."""
    return (pair_operand_elements(m, m, h=h, n_up=q + 2 * kv, n_down=q)
            + pair_operand_elements(m, m, h=h, n_up=2 * ffn, n_down=ffn))


# The float8 cast bytes per element were set on the 8B-shaped layer (width 4096); the 1B-shaped
# layer (width 2048, FFN 8192, 32 heads of 64, 8 KV heads) judges them: the Triton time float8 adds
# over bf16, compiled, per layer, 15%.
@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise"])
def test_fp8_cast_time_of_the_1b_layer_within_15_percent(recipe):
    bf16 = _layer("1b", "compile", "none")[0]
    measured = statistics.mean((r["kernel_us"]["triton"] - bf16["kernel_us"]["triton"]) / r["blocks"] / 1e6
                               for r in _layer("1b", "compile", recipe))
    p = T.build_parser()
    hw, _, _ = T.resolve_hardware(p.parse_args(["--gpu", "h200"]), p)
    f, b = fp8_cast_time_s(_operand_elements(8192, 2048, 2048, 512, 8192), recipe=recipe, hw=hw)
    assert f + b == pytest.approx(measured, rel=0.15)


# --- MoE expert matmuls: torch's grouped GEMM (measure_moe.py, second H200 session) ----------------
# The step model costs a rank's routed experts as one batched matmul per projection (local experts x
# tokens per expert, tiles and waves over the SMs; train/kernels.gemm_time_s) with no constant of
# its own. Judged here on torch._grouped_mm (CUTLASS's grouped kernel, what torchtitan's MoE runs),
# bf16, balanced routing, the expert shapes of Qwen3-30B-A3B, GPT-OSS-120B, DeepSeek-V3 and
# Mixtral-8x7B at 4k and 16k tokens per rank and two expert-parallel sizes: 57 of 64 within 15%
# (median 6.3%). The misses are the smallest groups (128-256 tokens per expert, and the down
# projections at 2,048), where the grouped kernel runs 16-21% below the batched estimate.
MOE = _rows(os.path.join(RESULTS, "moe.jsonl"))
MOE_SHAPES = {"grouped_fwd_gate_up": lambda n, h, f: (n, 2 * f, h), "grouped_fwd_down": lambda n, h, f: (n, h, f),
              "grouped_dgrad_down": lambda n, h, f: (n, f, h), "grouped_dgrad_gate_up": lambda n, h, f: (n, h, 2 * f)}
MOE_MISS = {("qwen3-30b-a3b", 1, 4096, "grouped_fwd_down"): "-21.0%", ("qwen3-30b-a3b", 1, 4096, "grouped_dgrad_down"): "-21.2%",
            ("qwen3-30b-a3b", 8, 4096, "grouped_fwd_down"): "-16.4%", ("qwen3-30b-a3b", 8, 4096, "grouped_dgrad_down"): "-15.8%",
            ("gpt-oss-120b", 1, 4096, "grouped_fwd_gate_up"): "-16.1%", ("gpt-oss-120b", 1, 4096, "grouped_fwd_down"): "-18.5%",
            ("gpt-oss-120b", 1, 4096, "grouped_dgrad_down"): "-20.2%"}


def _moe_param(r, case):
    key = (r["model"], r["ep"], r["tokens_per_rank"], case)
    marks = [pytest.mark.xfail(strict=True, reason=f"ours {MOE_MISS[key]}: small groups")] if key in MOE_MISS else []
    return pytest.param(r, case, marks=marks, id="{}-ep{}-T{}-{}".format(*key))


@pytest.mark.parametrize("row,case", [_moe_param(r, c) for r in MOE for c in MOE_SHAPES])
def test_grouped_expert_matmul_within_15_percent_of_the_h200(row, case):
    from llmcalc.train.kernels import gemm_time_s
    p = T.build_parser()
    hw, _, _ = T.resolve_hardware(p.parse_args(["--gpu", "h200"]), p)
    m, n, k = MOE_SHAPES[case](row["tokens_per_expert"], row["hidden"], row["expert_ffn"])
    assert gemm_time_s(m, n, k, hw=hw, batch=row["local_experts"]) == pytest.approx(row[case + "_s"], rel=0.15)


# --- speculative verification steps (measure_decode.py --pack-gqa, second H200 session) ------------
# One decode step of a Llama-3.1-8B shape in a CUDA graph (GPU time only), each sequence adding q
# tokens (a verification step of K = q - 1 drafted tokens) over 1,024 or 4,096 cached tokens. Ours:
# --serving-stack kernels (no host cost) with --speculative-method ngram (no draft on the GPU), the
# step = TPOT x tokens per step. 20%, the serving table's tolerance. The batch 64 x 4,096 rows missed
# by +21..+24% while the KV cache was read at the 0.70 memory efficiency; KV_STREAM_EFFICIENCY (0.93,
# issue 34) was set from the q = 1 rows' step growth between 1,024 and 4,096 cached tokens at batch 32
# and 64, so the q = 1 rows here are its calibration; the q = 2-4 rows check it.
DECODE = _rows(os.path.join(RESULTS, "decode.jsonl"))
VERIFY_MISS = {}


def _verify_step_s(configs, b, q, ctx):
    argv = ["--hf_model_name_or_path", configs["llama-8b"], "--gpu", "h200", "--serving-stack", "kernels",
            "-b", str(b), "--prompt-tokens", str(ctx), "--output-tokens", "2", "--json"]
    if q > 1:
        argv += ["--speculative-tokens", str(q - 1), "--acceptance-rate", "0.5", "--speculative-method", "ngram"]
    res = _run_json(I.main, argv)
    # the verification step itself (issue 44: TPOT per token at -o 2 is one whole step, no longer
    # the step over the expected tokens per step, so it is read as the step)
    return res["decode_first_step_s"] if q > 1 else res["decode_per_token_s"]


def _verify_param(r):
    key = (r["batch"], r["q_tokens"], r["context"])
    marks = [pytest.mark.xfail(strict=True, reason=VERIFY_MISS[key])] if key in VERIFY_MISS else []
    return pytest.param(r, marks=marks, id="b{}-q{}-c{}".format(*key))


@pytest.mark.parametrize("row", [_verify_param(r) for r in DECODE])
def test_verification_step_within_20_percent_of_the_h200(row, configs):
    assert _verify_step_s(configs, row["batch"], row["q_tokens"], row["context"]) == pytest.approx(row["step_s"], rel=0.20)
