"""Serving fidelity beyond the roofline (issue 44, part 1 item 3): what the engines do that the
kernels' own time does not say. Each test names its source; nothing here pins our own number."""
import contextlib
import io

import pytest

from llmcalc.tools import latency

CFG = "tests/fixtures/configs/"


def run(argv):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return latency.main(argv + ["--json"])


def test_fp8_checkpoint_is_served_at_fp8_by_default():
    """DeepSeek-V3's config.json carries quantization_config {quant_method: fp8, weight_block_size
    [128, 128]}: vLLM and SGLang load it as FP8 weights and run block-scaled FP8 GEMMs (activations
    quantized per token group of 128), the KV cache at the model's bf16 (kv_cache_dtype auto).
    With no bits flag the run is that, and says so (w8a8 kv16); --precision bf16 still asks for
    16 bits."""
    base = ["--hf_model_name_or_path", CFG + "deepseek-v3.json", "--gpu", "h200", "-tp", "8",
            "-s", "1000", "-o", "100"]
    own = run(base)
    assert (own["weight_bits"], own["activation_bits"], own["kv_cache_bits"]) == (8, 8, 16)
    explicit = run(base + ["--weight-bits", "8", "--activation-bits", "8",
                           "--kv-cache-bits", "16"])
    # the same run but for the checkpoint's block scales (8.002 bits a weight against 8)
    assert own["ttft_s"] == pytest.approx(explicit["ttft_s"], rel=1e-3)
    assert own["decode_per_token_s"] == pytest.approx(explicit["decode_per_token_s"], rel=1e-3)
    bf16 = run(base + ["--precision", "bf16"])
    assert bf16["activation_bits"] == 16 and bf16["ttft_s"] > 1.3 * own["ttft_s"]


def test_bf16_and_mxfp4_checkpoints_keep_16_bit_activations():
    """A bf16 checkpoint and gpt-oss's MXFP4 experts (served W4A16 on Hopper: vLLM's Marlin /
    triton MXFP4 kernels upcast the weights) keep 16-bit matmuls."""
    for name in ("llama-3.1-8b", "gpt-oss-20b"):
        r = run(["--hf_model_name_or_path", CFG + name + ".json", "--gpu", "h100"])
        assert r["activation_bits"] == 16, name


# Oracle Cloud Infrastructure blog, 2024-10-10, "Serving Llama 3.1 405B model with AMD Instinct
# MI300X Accelerators": Llama 3.1 405B FP8 on one BM.GPU.MI300X.8 (8 MI300X, one instance), vLLM's
# benchmark_latency.py at 128 input and 128 output tokens, average latency (s) by batch. MI300X has
# a measured bf16 matmul figure (Bekman's MAMF, 668 of 1,307 TFLOP/s) and no FP8 one: its FP8
# matmuls now run at that measured fraction x the H100's fp8/bf16 ratio (0.363 of the FP8 peak),
# not the default 0.62, which made batch 128 and 256 -28% and -39% (issue 44). Tolerance 20%.
L405 = ["-l", "126", "-hs", "16384", "-a", "128", "--num-kv-heads", "8", "--ffn-hidden-size",
        "53248", "-v", "128256", "--swiglu", "--norm", "rmsnorm", "--position-embedding", "rope"]
ORACLE_LATENCY = [(1, 3.530), (8, 3.974), (64, 6.919), (128, 10.340),
                  pytest.param(256, 17.750, marks=pytest.mark.xfail(
                      strict=True, reason="-24% (was -39%): see VALIDATION.md"))]


@pytest.mark.parametrize("batch,seconds", ORACLE_LATENCY)
def test_llama_405b_fp8_on_mi300x_matches_oracle(batch, seconds):
    r = run(L405 + ["--gpu", "mi300x", "-tp", "8", "--precision", "fp8", "--serving-stack",
                    "vllm", "-s", "128", "-o", "128", "-b", str(batch)])
    assert r["total_s"] == pytest.approx(seconds, rel=0.20)
