"""Blackwell's kernel rates (issue 33) against the published runs they were set from, and the
sustained-matmul method checked where we have our own measurement.

Sources: NVIDIA/cudnn-frontend @bb37575d benchmark/sdpa_benchmark_training/artifacts/
sdpa_bf16_benchmark_results_NVIDIA_B200.csv (NGC 25.09, cuDNN 9.13, flash-attn 2.7.4.post1; one
B200; batch 1, 128 query / 8 KV heads, head dim 128, causal, bf16; TFLOP/s counted as flash-attn's
benchmark counts them); Azure/AI-benchmarking-guide Azure_Results/ND_GB200_v6_results.md @2a370be6
and ND_H200_v5_results.md @7f20e5fa (cuBLASLt FP8, random inputs, 10,000 warm-up iterations).
"""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from llmcalc.hardware import get_accelerator  # noqa: E402
from llmcalc.train.attention_rates import blackwell_attention_fractions  # noqa: E402

B200_BF16_PEAK = 2250e12  # NVIDIA HGX page, dense per GPU (hardware.py)

# (kernel, seq, forward, backward TFLOP/s) from the B200 csv: pyt_cudnn and flash_attention rows
B200_PUBLISHED = [("cudnn", 4096, 855.678, 701.265), ("cudnn", 8192, 1171.278, 942.509),
                  ("cudnn", 32768, 1419.000, 1108.688), ("cudnn", 131072, 1355.418, 1047.843),
                  ("fa2", 8192, 399.925, 318.004), ("fa2", 65536, 441.285, 348.981)]


@pytest.mark.parametrize("kernel,seq,fwd,bwd", B200_PUBLISHED)
def test_b200_attention_rate_is_the_published_one(kernel, seq, fwd, bwd):
    # at a published point the rate is the run's (0.1%: the table keeps one decimal)
    f, b = blackwell_attention_fractions(kernel, head_dim=128, seq=seq)
    assert f * B200_BF16_PEAK / 1e12 == pytest.approx(fwd, rel=1e-3)
    assert b * B200_BF16_PEAK / 1e12 == pytest.approx(bwd, rel=1e-3)


def test_blackwell_sustained_factor_is_azures_gb200_run_over_mamf():
    # mean of 4096^3 .. 32768^3 over the GB200's MAMF fp8 (Bekman, hardware.py)
    azure = (2834.6 + 2876.6 + 2906.9 + 2825.6) / 4
    mamf = get_accelerator("gb200")["achievable_matmul_flops_per_s"]["fp8"] / 1e12
    assert get_accelerator("gb200")["sustained_matmul_fraction"]["fp8"] == pytest.approx(azure / mamf, rel=1e-4)


def test_azure_method_agrees_with_our_hopper_grid():
    # The same Azure measurement on an H200 over the Hopper fp8 MAMF lands within 2% of the
    # sustained factor measured on our own H100 grid (validation/h100/results/gemm.jsonl): the
    # method that set Blackwell's factor reproduces ours where both exist.
    azure_h200 = (1249.1 + 1300.6 + 1366.3 + 1349.5) / 4
    mamf = get_accelerator("h100-sxm")["achievable_matmul_flops_per_s"]["fp8"] / 1e12
    assert azure_h200 / mamf == pytest.approx(get_accelerator("h100-sxm")["sustained_matmul_fraction"]["fp8"], rel=0.02)
