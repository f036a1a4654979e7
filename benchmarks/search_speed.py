#!/usr/bin/env python3
"""How fast calc_training_time.py --search answers (the issue's bar: Calculon's own example, the
Megatron-Turing 530B on 5128 A100-80GB with a global batch of 2520, in under 1 s on one core), plus
two searches with more layouts (a 70B on 256 H100s, a 530B on 2240 A100s), and the choice of
accelerator for the 70B among four kinds (--gpu h100,h200,b200,mi300x). Each search runs
--repeat times in this process after one warm-up; the minimum and median wall times are printed
(and the process's CPU time, which a machine shared with other jobs inflates less), with the
layouts costed and the winner.

  python benchmarks/search_speed.py
  python benchmarks/search_speed.py --repeat 10
"""
import argparse
import contextlib
import io
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import calc_training_time as T  # noqa: E402

GPT530 = ["-l", "105", "-hs", "20480", "-a", "128", "-v", "51200", "-s", "2048", "--dtype", "fp16"]
LLAMA70 = ["-l", "80", "-hs", "8192", "-a", "64", "--num-kv-heads", "8", "--ffn-hidden-size", "28672", "--swiglu",
           "-nl", "3", "-v", "128256", "--no-bias", "--norm", "rmsnorm", "--position-embedding", "rope",
           "--no-tied-embeddings", "-s", "8192"]
CASES = {
    "Calculon example: 530B, 5128 x A100-80GB, batch 2520": GPT530 + ["--gpu", "a100", "--num-gpus", "5128",
                                                                     "--global-batch-size", "2520"],
    "530B, 2240 x A100-80GB, batch 2240": GPT530 + ["--gpu", "a100", "--num-gpus", "2240", "--global-batch-size", "2240"],
    "Llama-70B shape, 256 x H100, batch 512 x 8k": LLAMA70 + ["--gpu", "h100", "--num-gpus", "256",
                                                               "--global-batch-size", "512"],
    "Llama-70B shape, 256 of H100 / H200 / B200 / MI300X, 15T tokens, cheapest": LLAMA70 + [
        "--gpu", "h100,h200,b200,mi300x", "--num-gpus", "256", "--global-batch-size", "512", "--tokens", "15T",
        "--cost-per-gpu-hour", "2.5,3.5,5,2.2", "--rank-by", "cost"],
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    for name, argv in CASES.items():
        walls, cpus = [], []
        for i in range(args.repeat + 1):
            T._GEMM_TIMES.clear()  # each run starts as a fresh process would (no matmul remembered)
            t0, c0 = time.perf_counter(), time.process_time()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                res = T.main(argv + ["--search", "--json"])
            if i:
                walls.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
        best = res["layouts"][0]
        if res.get("clusters"):
            name += f" -> {best['num_gpus']} x {best['gpu']}"
        print(f"{name}\n  {res['layouts_evaluated']} layouts costed ({res['layout_groups']} parallel shapes): "
              f"min {min(walls):.3f} s, median {statistics.median(walls):.3f} s "
              f"(CPU time of this process: min {min(cpus):.3f} s) "
              f"({res['layouts_evaluated'] / min(walls):,.0f} layouts/s)\n  best: {T.layout_text(best)} "
              f"-> {best['step_time_s']:.2f} s per step, MFU {best['mfu']:.1%}")


if __name__ == "__main__":
    main()
