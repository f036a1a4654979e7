#!/usr/bin/env python3
"""Time calc_inference_latency.py's continuous-batching answers in process (start-up excluded;
benchmarks/startup.py times that): a closed loop at --concurrency, an open loop at
--request-rate near the layout's capacity (the bisection's worst case), finite benchmark runs
stepped through (--num-requests: 500 at 32 requests/s, 30,000 all at once), and --search over the
layouts of 8 and 64 GPUs (dense and MoE, with data-parallel attention and expert parallelism),
best of --repeat runs; then a 100,000-request trace (JSON lines: Poisson arrivals at 20/s, prompts
600-3,000 tokens with a 512-token system prompt of 20, outputs 20-400; issue 34's bar: under 5 s)
and 100,000 requests of vLLM's random dataset, each timed once (progress lines on stderr); then
capacity plans over three GPU kinds (issue 34's bar: under 10 s).

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
    import json
    import random
    import tempfile
    rng, t = random.Random(1), 0.0
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
        for _ in range(100_000):
            t += rng.expovariate(20.0)
            fh.write(json.dumps({"arrival_s": round(t, 4), "input_tokens": rng.randint(600, 3000),
                                 "output_tokens": rng.randint(20, 400), "prefix_id": f"system-{rng.randrange(20)}",
                                 "prefix_tokens": 512}) + "\n")
    base = [x for x in MODEL if x not in ("-s", "467", "-o", "256")]
    for label, extra in (("--trace (100,000 requests, tp 2)", ["--trace", fh.name, "-tp", "2"]),
                         ("--dataset random --random-range-ratio 0.5 (100,000 at 30/s)",
                          ["--dataset", "random", "--random-range-ratio", "0.5", "--num-requests", "100000",
                           "--request-rate", "30", "-tp", "2"])):
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            cil.main(base + extra)
        print(f"{'Llama-3.1-8B, 2 x H100':28} {label:42} {(time.perf_counter() - t0) * 1e3:8.1f} ms")
    os.unlink(fh.name)
    for label, argv in (("capacity plan, 3 GPU kinds (8B, sharegpt)",
                         ["--hf_model_name_or_path", MODEL[1], "--gpu", "a100-80gb,h100,h200", "--dataset", "sharegpt",
                          "--target-request-rate", "50", "--max-ttft-ms", "300", "--max-tpot-ms", "25",
                          "--cost-per-gpu-hour", "1.8,2.5,3.5", "--json"]),
                        ("capacity plan, 3 GPU kinds (Gemma-3-27B)",
                         ["--hf_model_name_or_path", os.path.join(ROOT, "tests", "fixtures", "configs",
                                                                  "gemma-3-27b-it.json"),
                          "--gpu", "a100-80gb,h100,h200", "--dataset", "sharegpt", "--target-request-rate", "50",
                          "--max-ttft-ms", "500", "--max-tpot-ms", "40", "--cost-per-gpu-hour", "1.8,2.5,3.5",
                          "--json"]),
                        ("capacity plan, 3 GPU kinds (Qwen3-30B-A3B MoE)",
                         ["--hf_model_name_or_path", os.path.join(ROOT, "tests", "fixtures", "configs",
                                                                  "qwen3-30b-a3b.json"),
                          "--gpu", "h100,h200,b200", "--dataset", "sharegpt", "--target-request-rate", "10",
                          "--max-ttft-ms", "300", "--max-tpot-ms", "20", "--json"])):
        print(f"{'':28} {label:42} {best_s(argv, 1) * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
