#!/usr/bin/env python3
"""Startup cost of each script's default invocation against a bare `python -c pass`.

Targets: every script answers in tens of milliseconds; calc_transformer_params.py's default run
costs at most 1.5x a bare interpreter start (its issue). Each command is run --repeat times
(default 15) after one warm-up; the median wall time is reported.

  python benchmarks/startup.py            # all scripts
  python benchmarks/startup.py --repeat 30 calc_transformer_params.py
  python benchmarks/startup.py --against ../old-checkout --repeat 40   # A/B, interleaved
  python benchmarks/startup.py --installed             # pip install . into a fresh venv, time its commands

--against DIR runs the same scripts from another checkout, alternating the two runs so that
machine noise hits both alike, and reports the minimum and the 25th percentile of each (on a
shared machine the median moves by tens of ms between runs; the low quantiles do not), plus the
time to compile each file's source, which a script run as `python FILE` pays on every start (the
__main__ module never gets a cached .pyc).

--installed [VENV] installs this checkout (`pip install .`) into a fresh virtual environment (or
uses VENV, where it is already installed) and times each installed command's default run against
`python -c "import argparse, json"` in the same environment: the floor any argparse tool with
--json pays. Target: at most 1.3 times that floor (the package issue). A second row builds an
empty parser too: what any tool that parses flags pays on top (argparse's gettext imports locale,
its formatter shutil). Installed commands start from the .pyc files pip compiled at install time.
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_ARGS = {"calc_comm.py": [], "hardware.py": []}  # scripts answer with no flags
COMMANDS = ("llmcalc-params", "llmcalc-flops", "llmcalc-mem", "llmcalc-train-time", "llmcalc-latency",
            "llmcalc-comm", "llmcalc-hardware")
INSTALLED_TARGET = 1.3  # x `python -c "import argparse, json"`


def quantile(values, f):
    """The f-quantile of values (nearest rank below)."""
    return sorted(values)[int(f * (len(values) - 1))]


def median_s(cmd, repeat):
    subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)  # warm the file cache
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def ab(scripts, other, repeat):
    """Interleaved A/B of this checkout against `other`: (min, p25) wall times and compile times."""
    q = lambda v, f: quantile(v, f) * 1e3  # noqa: E731 -- in ms
    print(f"{'command':<30}{'min here':>10}{'min there':>11}{'p25 here':>10}{'p25 there':>11}"
          f"{'compile here':>14}{'there':>8}")
    rows = {}
    for s in ["-c pass"] + scripts:
        cmd = [sys.executable, "-c", "pass"] if s == "-c pass" else [sys.executable, s, *DEFAULT_ARGS.get(s, [])]
        times = {ROOT: [], other: []}
        for tree in times:
            subprocess.run(cmd, cwd=tree, capture_output=True, check=True)  # warm; a failing run stops here
        for _ in range(repeat):
            for tree in times:
                t0 = time.perf_counter()
                subprocess.run(cmd, cwd=tree, capture_output=True, check=True)
                times[tree].append(time.perf_counter() - t0)
        comp = {}
        for tree in times:
            path = os.path.join(tree, s)
            if s == "-c pass" or not os.path.exists(path):
                comp[tree] = 0.0
                continue
            src = open(path, encoding="utf-8").read()
            ct = []
            for _ in range(9):
                t0 = time.perf_counter()
                compile(src, s, "exec")
                ct.append(time.perf_counter() - t0)
            comp[tree] = min(ct) * 1e3
        here, there = times[ROOT], times[other]
        rows[s] = (q(here, 0), q(there, 0))
        print(f"{s:<30}{q(here, 0):>8.1f}ms{q(there, 0):>9.1f}ms{q(here, .25):>8.1f}ms{q(there, .25):>9.1f}ms"
              f"{comp[ROOT]:>12.1f}ms{comp[other]:>6.1f}ms", flush=True)
    return rows


def installed(venv, repeat, parser):
    """Wall time of each installed command's default run against the floor, interleaved round by
    round (machine noise hits all alike): median and 25th percentile, and their ratios."""
    if venv is None:
        venv = os.path.join(tempfile.mkdtemp(prefix="llmcalc-bench-"), "venv")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q", ROOT],
                       check=True)
        print(f"installed into {venv}")
    missing = [c for c in COMMANDS if not os.path.exists(os.path.join(venv, "bin", c))]
    if missing:
        parser.error(f"--installed {venv}: {', '.join(missing)} not installed there (pip install . into it, "
                     "or give no VENV)")
    floor = 'python -c "import argparse, json"'
    parser_floor = "... and build an empty parser"  # argparse's gettext (locale) and formatter
    py = os.path.join(venv, "bin", "python")
    cmds = {floor: [py, "-c", "import argparse, json"],
            parser_floor: [py, "-c", "import argparse, json; argparse.ArgumentParser().parse_args([])"],
            **{c: [os.path.join(venv, "bin", c)] for c in COMMANDS}}
    times = {k: [] for k in cmds}
    for c in cmds.values():
        subprocess.run(c, capture_output=True, check=True, cwd=tempfile.gettempdir())  # warm
    for _ in range(repeat):
        for k, c in cmds.items():
            t0 = time.perf_counter()
            subprocess.run(c, capture_output=True, check=True, cwd=tempfile.gettempdir())
            times[k].append(time.perf_counter() - t0)
    q = quantile
    base_med, base_p25 = q(times[floor], .5), q(times[floor], .25)
    print(f"{'command':<34}{'median':>9}{'x floor':>9}{'p25':>9}{'x floor':>9}")
    rows = {}
    for k, v in times.items():
        med, p25 = q(v, .5), q(v, .25)
        rows[k] = med / base_med
        over = k in COMMANDS and med / base_med > INSTALLED_TARGET
        flag = f"  (over its {INSTALLED_TARGET}x target)" if over else ""
        print(f"{k:<34}{med * 1e3:>7.1f}ms{med / base_med:>9.2f}{p25 * 1e3:>7.1f}ms{p25 / base_p25:>9.2f}{flag}",
              flush=True)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scripts", nargs="*")
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--against", metavar="DIR", help="another checkout to compare with, interleaved")
    p.add_argument("--installed", nargs="?", const="", metavar="VENV",
                   help="time the installed commands (in VENV, or pip install . into a fresh one)")
    args = p.parse_args(argv)
    if args.installed is not None:
        return installed(args.installed or None, args.repeat, p)
    scripts = args.scripts or sorted(os.path.basename(x) for x in glob.glob(os.path.join(ROOT, "calc_*.py")))
    if not args.scripts and os.path.exists(os.path.join(ROOT, "hardware.py")):
        scripts.append("hardware.py")
    if args.against:
        other = os.path.abspath(args.against)
        if not os.path.isdir(other) or os.path.samefile(other, ROOT):
            p.error(f"--against {args.against}: give another checkout's folder")
        # a script the other checkout does not have yet (calc_training_time.py against an older
        # tree) has nothing to compare with
        ab([s for s in scripts if os.path.exists(os.path.join(other, s))], other, args.repeat)
        return None
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
