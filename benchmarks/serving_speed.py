#!/usr/bin/env python3
"""Time calc_inference_latency.py's continuous-batching answers in process (start-up excluded;
benchmarks/startup.py times that): a closed loop at --concurrency, an open loop at
--request-rate near the layout's capacity (the bisection's worst case), finite benchmark runs
stepped through (--num-requests: 500 at 32 requests/s, 30,000 all at once), and --search over the
layouts of 8 and 64 GPUs (dense and MoE, with data-parallel attention and expert parallelism),
best of --repeat runs.

Usage: python3 benchmarks/serving_speed.py [--repeat 5]
"""
import argparse
import contextlib
import io
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import calc_inference_latency as cil  # noqa: E402

MODEL = ["--hf_model_name_or_path", os.path.join(ROOT, "tests", "fixtures", "configs", "llama-3.1-8b.json"),
         "--gpu", "h100", "-s", "467", "-o", "256", "--json"]
MOE = ["--hf_model_name_or_path", os.path.join(ROOT, "tests", "fixtures", "configs", "deepseek-v3.json"),
       "--gpu", "h200", "-tp", "8", "--precision", "fp8", "-s", "2000", "-o", "500", "--json"]


def quiet(argv):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return cil.main(argv)


def best_s(argv, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        quiet(argv)
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    for name, base in (("Llama-3.1-8B, 1 x H100", MODEL), ("DeepSeek-V3 FP8, 8 x H200", MOE)):
        cap = quiet(base + ["-c", "1"])["serving"]["kv_pool_max_concurrency"]
        top = quiet(base + ["-c", str(cap)])["serving"]["requests_per_s"]
        for label, extra in (("static batch -b 64", ["-b", "64"]), ("--concurrency 64", ["-c", "64"]),
                             (f"--request-rate {0.99 * top:.3g} (0.99 of capacity)",
                              ["--request-rate", str(0.99 * top)]),
                             ("--num-requests 500 --request-rate 32",
                              ["--num-requests", "500", "--request-rate", "32"]),
                             ("--num-requests 30000 --request-rate inf",
                              ["--num-requests", "30000", "--request-rate", "inf"])):
            print(f"{name:28} {label:42} {best_s(base + extra, args.repeat) * 1e3:8.1f} ms")
    for name, base, gpus in (("Llama-3.1-8B, H100", MODEL, 8), ("Llama-3.1-8B, H100", MODEL, 64),
                             ("DeepSeek-V3 FP8, H200", MOE, 64)):
        argv = [x for x in base if x not in ("-tp", "8", "--precision", "fp8")] + [
            "--search", "--num-gpus", str(gpus), "--max-tpot-ms", "50"]
        r = quiet(argv)
        label = f"--search --num-gpus {gpus} ({r['layouts_evaluated']} points)"
        print(f"{name:28} {label:42} {best_s(argv, args.repeat) * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
