"""calc_inference_latency's MoE block against a measured fused-MoE kernel (nothing here sets a
constant; every number of the script's own comes from its layer_costs and hardware rates).

Source: flashinfer-ai/flashinfer pull request #5301 ("bench: compare DeepSeek MoE against TRTLLM
MXFP8", 2026-09-17), repeat 1 of its "TRTLLM NVFP4" column (rows 1-4096 at commit 1cafd1a, 8192 and
16384 at 48f8a7a). Setup, as that benchmark (benchmarks/bench_moe_deepseek.py) and its sibling PR
#4366 print it: one NVIDIA B200, DeepSeek-V3's routed experts (hidden 7168, expert width 2048, 256
experts, top-8) with expert parallelism 8 simulated on one GPU (32 local experts, so a batch of T
tokens gives T expert picks on this rank), near-uniform routing (routing bias scale 0.01), NVFP4
weights and activations, TensorRT-LLM's fused MoE (trtllm_fp4_block_scale_moe), CUDA graphs,
CUPTI timing; routing logits are an input (the router matmul is not timed); per-tensor scales.

Ours: the same block as calc_inference_latency costs it inside a layer (layer_costs with that
expert-parallel share), less what the benchmark does not run (the router matmul, and the norm and
residual passes around the block), plus the tensorrt-llm preset's gap for the block's six kernels
(top-k, dispatch, two expert matmuls, activation, combine). Rates: --gpu b200 --precision fp4;
weights at NVFP4's 4.5 bits with their scales, as that flag stores them.

Result (VALIDATION.md, "A fused MoE kernel"): 10 of 15 token counts within 15%, 7 within 10%. The
misses are strict xfails carrying their error: 2 and 4 tokens (TensorRT-LLM's kernel falls back to a
default tactic below its tuning buckets, flashinfer PR #4048), and 1,024-4,096 tokens, where the
measured time stays flat at ~0.30 ms (a cause not found).
"""
import contextlib
import io

import pytest

import calc_inference_latency as cil
from llmcalc.model.formulas import expected_real_experts  # the formulas themselves
from llmcalc.serve.forward import expected_distinct_real_experts, layer_costs, roofline_time_s
from llmcalc.precision import NVFP4_BITS
from llmcalc.serve.stacks import MLP_KERNELS, MOE_EXTRA_KERNELS, ROOFLINE_CORNER_P

H, WIDTH, EXPERTS, TOPK, EP = 7168, 2048, 256, 8, 8
# the routed experts alone, as the script's layer list describes a MoE block (no shared expert)
MLP = {"kind": "moe", "width": WIDTH, "shared_width": 0, "linears": 3, "bias": False, "shared_bias": False,
       "shared_gate": False, "num_experts": EXPERTS, "zero_experts": 0, "topk": TOPK, "router_bias": False}
# tokens -> measured ms (flashinfer #5301, TRTLLM NVFP4, repeat 1)
MEASURED_MS = {1: 0.025697, 2: 0.039424, 4: 0.050896, 8: 0.063856, 16: 0.077377, 32: 0.106273,
               64: 0.140064, 128: 0.143617, 256: 0.154065, 512: 0.165953, 1024: 0.293810,
               2048: 0.307426, 4096: 0.311954, 8192: 0.385540, 16384: 0.622597}
MISS = {2: "-17%", 4: "-20%: default tactic below the tuning buckets (flashinfer #4048)",
        1024: "-38%", 2048: "-35%", 4096: "-20%: measured flat at ~0.30 ms from 1k to 4k tokens, cause not found"}


@pytest.fixture(scope="module")
def hw():
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        res = cil.main(["-l", "1", "-hs", str(H), "-a", "56", "--num-experts", str(EXPERTS), "--topk", str(TOPK),
                        "--gpu", "b200", "--precision", "fp4", "--serving-stack", "tensorrt-llm", "--json"])
    return res["hardware"]


def moe_block_s(tokens, hw):
    """Our time for the routed-expert block of `tokens` tokens on one of EP ranks."""
    layer = {"attention": [], "mlp": [MLP], "extra_params": 0}
    w_bits, a_bits = NVFP4_BITS, 4  # as --precision fp4 stores and runs them
    costs = layer_costs(layer, h=H, tp=1, num_tokens=tokens, w_bits=w_bits, a_bits=a_bits,
                            moe={"tokens": tokens, "ep": EP, "etp": 1, "imbalance": 1.0})
    flops, nbytes, _ = costs["mlp"]
    flops -= 2 * tokens * H * EXPERTS  # the router matmul: its logits are the benchmark's input
    nbytes -= (H * EXPERTS * w_bits + tokens * EXPERTS * a_bits) / 8
    t = roofline_time_s(flops=flops, bytes_moved=nbytes, flops_per_s=hw["flops_per_s"],
                            bytes_per_s=hw["bytes_per_s"], corner_p=ROOFLINE_CORNER_P)
    _, elem_bytes, _ = costs["elementwise"]
    elem_bytes -= tokens * 5 * H * 2  # the norm and residual add around the block (16-bit)
    t += elem_bytes / hw["bytes_per_s"]
    return t + (MLP_KERNELS - 2 + MOE_EXTRA_KERNELS) * hw["kernel_overhead_s"]


@pytest.mark.parametrize("tokens", [
    pytest.param(t, marks=[pytest.mark.xfail(strict=True, reason=MISS[t])] if t in MISS else [])
    for t in MEASURED_MS])
def test_moe_block_matches_trtllm_fused_moe_on_b200(tokens, hw):
    ours = moe_block_s(tokens, hw)
    measured = MEASURED_MS[tokens] * 1e-3
    # 15%: the same kernel and shape in these PRs' other tables (#4985, the other precisions' runs of
    # #5301) moved by 4% at 512 tokens and by up to 15% at 8
    assert ours == pytest.approx(measured, rel=0.15)


def test_the_setup_gives_one_pick_per_token_on_the_rank(hw):
    # EP 8 over 256 experts with top-8: T tokens make T picks on one rank's 32 experts, and every
    # one of them is touched once the batch is large (the weight read saturates)
    assert expected_real_experts(MLP) * 4096 / EP == 4096
    assert expected_distinct_real_experts(MLP, num_tokens=4096) / EP == pytest.approx(32, rel=1e-6)


# --- The same block split by tensor parallelism, and TensorRT-LLM's CUTLASS MoE path -------------
# Source: NVIDIA/TensorRT-LLM docs/source/blogs/tech_blog/blog24_MoE_as_Dense_GEMM.md @2226a86
# ("MoE as Dense GEMM", table "Per-Rank MoE Module Latency"). Setup as the blog states it: one B200,
# DeepSeek-V3-style routed MoE (hidden 7168, 256 experts, top-8, SwiGLU, NVFP4), TP 8 measured on one
# rank (every expert on the rank, its intermediate split 8 ways: 2048 / 8 = 256 columns), per-rank MoE
# module compute latency including the router matmul, top-k and quantization, the two all-reduces
# around it excluded. Columns: TRTLLM-Gen (per-expert grouped GEMM) and CUTLASS (the PyTorch backend's
# default MoE backend, the one the v1.0 and later perf-overview MoE rows ran on Blackwell).
# tokens -> (TRTLLM-Gen us, CUTLASS us)
TP8_MEASURED_US = {1: (26.78, 96.77), 8: (57.68, 150.55), 16: (86.55, 200.05), 32: (117.20, 262.73),
                   48: (133.54, 290.50), 64: (141.68, 308.44), 128: (161.87, 335.65), 192: (168.23, 350.68),
                   208: (169.34, 354.73), 224: (169.24, 354.01), 256: (172.17, 351.98), 272: (176.10, 357.90),
                   336: (184.32, 363.58), 384: (186.92, 368.12)}
TP = 8


def tp_moe_block_s(tokens, hw):
    """Our time for the routed-expert block of `tokens` tokens on one of TP ranks (experts split over
    TP, as the script runs a MoE block without expert parallelism), router matmul included."""
    layer = {"attention": [], "mlp": [MLP], "extra_params": 0}
    costs = layer_costs(layer, h=H, tp=TP, num_tokens=tokens, w_bits=NVFP4_BITS, a_bits=4, moe=None)
    flops, nbytes, _ = costs["mlp"]
    t = roofline_time_s(flops=flops, bytes_moved=nbytes, flops_per_s=hw["flops_per_s"],
                        bytes_per_s=hw["bytes_per_s"], corner_p=ROOFLINE_CORNER_P)
    _, elem_bytes, _ = costs["elementwise"]
    t += (elem_bytes - tokens * 5 * H * 2) / hw["bytes_per_s"]  # less the norm and residual around it
    return t + (MLP_KERNELS - 2 + MOE_EXTRA_KERNELS) * hw["kernel_overhead_s"]


@pytest.mark.parametrize("tokens", list(TP8_MEASURED_US))
def test_tp_split_moe_block_matches_trtllm_gen_on_b200(tokens, hw):
    # TP-sliced experts (256 columns each) cost what the kernel measures: no efficiency loss of
    # narrow sliced experts in TensorRT-LLM's own grouped GEMM. 15%: as the EP test above
    ours = tp_moe_block_s(tokens, hw)
    assert ours == pytest.approx(TP8_MEASURED_US[tokens][0] * 1e-6, rel=0.15)


@pytest.mark.parametrize("tokens", [
    pytest.param(t, marks=[pytest.mark.xfail(strict=True, reason="-32%: CUTLASS 3.6x TRTLLM-Gen at one token")]
                 if t == 1 else []) for t in TP8_MEASURED_US])
def test_pytorch_moe_factor_against_cutlass_moe_on_b200(tokens, hw):
    # TRTLLM_PYTORCH_MOE_FACTOR (2.31) was fitted on serving rows (tools/fit_trtllm_moe_factor.py);
    # this kernel table was not used. CUTLASS / TRTLLM-Gen is 1.97-2.61 from 8 to 384 tokens (3.61 at
    # one), and our block x the factor lands 13% under to 19% over the CUTLASS column there (+2% to
    # +19% from 32 tokens). 20%: the factor is one number for every shape, GPU and precision
    ours = tp_moe_block_s(tokens, hw) * cil.TRTLLM_PYTORCH_MOE_FACTOR
    assert ours == pytest.approx(TP8_MEASURED_US[tokens][1] * 1e-6, rel=0.20)
