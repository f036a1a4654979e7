#!/usr/bin/env python3
"""Startup cost of each script's default invocation against a bare `python -c pass`.

Targets: every script answers in tens of milliseconds; calc_transformer_params.py's default run
costs at most 1.5x a bare interpreter start (its issue). Each command is run --repeat times
(default 15) after one warm-up; the median wall time is reported.

  python benchmarks/startup.py            # all scripts
  python benchmarks/startup.py --repeat 30 calc_transformer_params.py
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_ARGS = {"calc_comm.py": [], "hardware.py": []}  # scripts answer with no flags


def median_s(cmd, repeat):
    subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)  # warm the file cache
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scripts", nargs="*")
    p.add_argument("--repeat", type=int, default=15)
    args = p.parse_args(argv)
    scripts = args.scripts or sorted(os.path.basename(x) for x in glob.glob(os.path.join(ROOT, "calc_*.py")))
    if not args.scripts and os.path.exists(os.path.join(ROOT, "hardware.py")):
        scripts.append("hardware.py")
    base = median_s([sys.executable, "-c", "pass"], args.repeat)
    print(f"{'command':<34}{'median':>10}{'x bare':>8}")
    print(f"{'python -c pass':<34}{base * 1e3:>8.1f}ms{1:>8.2f}")
    rows = {}
    for s in scripts:
        t = median_s([sys.executable, s, *DEFAULT_ARGS.get(s, [])], args.repeat)
        rows[s] = t / base
        limit = 1.5 if s == "calc_transformer_params.py" else None
        flag = "  (over its 1.5x target)" if limit and t / base > limit else ""
        flag = flag or ("  (over 100 ms)" if t > 0.1 else "")
        print(f"{s:<34}{t * 1e3:>8.1f}ms{t / base:>8.2f}{flag}")
    return rows


if __name__ == "__main__":
    main()
