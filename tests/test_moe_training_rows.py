"""calc_training_time.py against Megatron-Core MoE training throughput published by NVIDIA (issue 33).

Source: NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md ("25.11 NeMo Container",
Pre-Training Performance; the page the Megatron-LM MoE README links as its "Latest MoE training
performance summary"), read at commit 00b7660. Each row states GPUs, precision, global and micro
batch, sequence length, FSDP, TP, PP, CP, VP, EP and the measured tokens/s per GPU; routing is
force-balanced and dropless (the page's note), so --moe-imbalance stays 1. Not stated: recompute,
dispatcher and the other recipe flags; ours runs --recompute none, -z 1 (Megatron's distributed
optimizer), the alltoall dispatcher's NCCL all-to-all. The H100 FP8-CS rows run --dtype fp8.

Every row is a validation row (nothing was set from them). The dense Llama-3-8B H100 row of the same
table is +9.1% (14451 measured, 15769 ours since the cuDNN attention rate, -z 3 --dtype fp8 -s 8192): the dense step holds, the MoE
layers are what the script makes far too fast. Misses are strict xfails carrying the signed error.
Rows not expressible: DeepSeekV3 (B200, PP 16 over 61 layers: uneven stages) and Qwen3-235B-A22B
(B200, 94 layers over PP 8 x VP 2), and the H100 Qwen3-235B row, whose line has a column missing.
"""
import contextlib
import io
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import calc_training_time as T  # noqa: E402

CFG = os.path.join(ROOT, "tests", "fixtures", "configs")

# (system, model config, precision, GPUs, GBS, MBS, seq, TP, PP, VP, EP, measured tokens/s/GPU, miss)
ROWS = [
    ("h100", "gpt-oss-120b", "bf16", 64, 512, 4, 4096, 1, 4, 1, 8, 5630, "+42.8%, and ours does not fit 80 GB"),
    ("h100", "qwen3-30b-a3b", "fp8", 16, 512, 2, 4096, 1, 2, 24, 8, 5275, "+169.4%, and ours does not fit 80 GB"),
    ("b200", "gpt-oss-120b", "bf16", 64, 512, 4, 4096, 1, 1, 1, 8, 8213, "+124.7%, and ours does not fit 180 GB"),
    ("b200", "qwen3-30b-a3b", "fp8", 8, 512, 1, 4096, 1, 1, 1, 8, 9299, "+311.2%"),
]


def _json(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        T.main(argv + ["--json"])
    return json.loads(out.getvalue())


@pytest.mark.parametrize("row", [pytest.param(r, id=f"{r[0]}-{r[1]}", marks=[pytest.mark.xfail(strict=True, raises=AssertionError, reason=r[-1])])
                                 for r in ROWS])
def test_megatron_core_moe_throughput_within_15_percent(row):
    gpu, model, dtype, n, gbs, mbs, s, tp, pp, vp, ep, measured, _ = row
    res = _json(["--hf_model_name_or_path", os.path.join(CFG, model + ".json"), "--gpu", gpu, "--num-gpus", str(n),
                 "--dtype", dtype, "--global-batch-size", str(gbs), "-b", str(mbs), "-s", str(s), "-tp", str(tp),
                 "-pp", str(pp), "-vp", str(vp), "-ep", str(ep), "--recompute", "none"])
    assert res["tokens_per_s_per_gpu"] == pytest.approx(measured, rel=0.15)


def test_the_dense_row_of_the_same_table_holds():
    # LLAMA3_8B, DGX-H100, 8 GPUs, FP8-CS, GBS 128, MBS 1, sequence 8192, FSDP 1, TP/PP/CP 1: 14451
    res = _json(["--hf_model_name_or_path", os.path.join(CFG, "llama-3-8b.json"), "--gpu", "h100", "--num-gpus", "8",
                 "--dtype", "fp8", "--global-batch-size", "128", "-b", "1", "-s", "8192", "-z", "3",
                 "--recompute", "none"])
    assert res["tokens_per_s_per_gpu"] == pytest.approx(14451, rel=0.15)
