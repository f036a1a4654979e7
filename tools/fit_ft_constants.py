#!/usr/bin/env python3
"""Derive FasterTransformer's three stack constants (stacks.py: FT_STEP_OVERHEAD_MS,
FT_ALLREDUCE_US, FT_TRITON_REQUEST_MS) from the calibration rows of FT's own GPT tables
(docs/gpt_guide.md @07fdd2f, A100-80GB, FP16, static batches), in this order, each with the ones
before it in place:

1. host time per generation step: GPT-350M, TP 1, batch 1, 512/32 less 128/8 (92.01 - 25.43 ms)
   over its 24 more steps, less ours without it. At TP 1 and batch 1 nothing else of FT's differs
   from ours: no all-reduce, no per-request cost, a 0.7 GB model whose kernels are shorter than
   their host work;
2. the in-place all-reduce call: GPT-20B, TP 8, batch 1, 60/20 less 20/8 (212 - 89 ms) over its
   12 more steps, less ours without it (the 88 calls per step);
3. the time per request behind Triton: GPT-89B, TP 8, batch 1, 128/8 (279.44 ms) less ours.

Every other row of FT's tables judges them (tools/validate_serving.py). The constants are
linear in these differences, so each is solved directly (no search).

Usage: python3 tools/fit_ft_constants.py   (prints the three values; a few seconds)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import validate_serving as vs  # noqa: E402

A100 = ["--gpu", "a100-80gb"]


def total_s(model, tp, s, o, *, stack="fastertransformer", knobs=()):
    argv = ["-tp", str(tp), "--serving-stack", stack, "-s", str(s), "-o", str(o), "-b", "1"]
    res, err = vs.run(vs.MODELS[model] + A100 + argv + list(knobs))
    if res is None:
        raise SystemExit(err)
    return res["total_s"]


def main():
    zero = ["--step-overhead-ms", "0"]
    d_ours = (total_s("FT GPT-350M", 1, 512, 32, knobs=zero)
              - total_s("FT GPT-350M", 1, 128, 8, knobs=zero))
    step_ms = ((0.09201 - 0.02543) - d_ours) / 24 * 1e3
    step = ["--step-overhead-ms", f"{step_ms:.6g}"]
    calls = 2 * 44  # one after attention, one after the MLP, per layer
    free = step + ["--tp-latency-us", "0"]
    d_ours = (total_s("FT GPT-20B", 8, 60, 20, knobs=free)
              - total_s("FT GPT-20B", 8, 20, 8, knobs=free))
    ar_us = ((0.212 - 0.089) - d_ours) / (12 * calls) * 1e6
    knobs = step + ["--tp-latency-us", f"{ar_us:.6g}", "--request-overhead-ms", "0"]
    req_ms = (0.27944 - total_s("FT GPT-89B", 8, 128, 8, stack="fastertransformer-triton",
                                knobs=knobs)) * 1e3
    print(f"ft_step_overhead_ms           {step_ms:.3g}  (GPT-350M TP 1 b 1: 512/32 less 128/8)")
    print(f"ft_allreduce_us               {ar_us:.3g}  (GPT-20B TP 8 b 1: 60/20 less 20/8)")
    print(f"ft_triton_request_overhead_ms {req_ms:.3g}  (GPT-89B TP 8 b 1 128/8)")


if __name__ == "__main__":
    main()
