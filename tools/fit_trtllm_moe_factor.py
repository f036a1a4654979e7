#!/usr/bin/env python3
"""Fit TRTLLM_PYTORCH_MOE_FACTOR, the tensorrt-llm-pytorch preset's factor on a MoE block's time,
from the calibration rows alone: TensorRT-LLM's later perf-overview (developer-guide/perf-overview.md
@585c756) MoE rows, each run as tools/validate_serving.py runs it (its stated TP or attention-DP x EP
layout, trtllm-bench's engine limits). The factor is the one at which the median of log(ours /
published) over those rows is zero (bisection; a larger factor only slows a MoE step). The v1.0
table's MoE rows, and every other row, are not used: they judge it (validate_serving.py).

Usage: python3 tools/fit_trtllm_moe_factor.py   (prints the fit; about a minute)
"""
import csv
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import validate_serving as vs  # noqa: E402


def calibration_rows():
    rows = list(csv.DictReader(open(os.path.join(vs.ROOT, "validation", "published_serving.csv"), encoding="utf-8")))
    return [r for r in rows if r["row_id"].startswith("TRTDEV-") and vs.is_moe(r["model"])]


def median_log_error(rows, factor):
    vs.cil.TRTLLM_PYTORCH_MOE_FACTOR = factor
    logs = []
    for r in rows:
        for group, _, _, pub, ours, _ in vs._compare([r]):
            if group == vs.CALIBRATION and ours:
                logs.append(math.log(ours / pub))
    return statistics.median(logs), len(logs)


def main():
    rows = calibration_rows()
    lo, hi = 1.0, 8.0
    for _ in range(14):
        mid = math.sqrt(lo * hi)
        med, n = median_log_error(rows, mid)
        lo, hi = (mid, hi) if med > 0 else (lo, mid)
        print(f"factor {mid:.4f}: median log error {med:+.4f} over {n} rows", file=sys.stderr)
    print(f"TRTLLM_PYTORCH_MOE_FACTOR = {math.sqrt(lo * hi):.3f}  ({len(rows)} calibration rows)")


if __name__ == "__main__":
    main()
