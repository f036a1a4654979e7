#!/usr/bin/env python3
"""The line-length ratchet: no Python file under llmcalc/, tools/, tests/ or benchmarks/ gains a
line over 100 characters.

Older files still hold such lines; tests/fixtures/line_lengths.json records how many each may keep
(a file not listed: 0, so a new file starts clean). A file may go down, never up; re-record after
shortening lines so that the lower count becomes the limit. The built scripts (calc_*.py,
hardware.py at the root) are not checked: they repeat the package.

  python3 tools/line_lengths.py            # exit 1 naming each file over its count, and the lines
  python3 tools/line_lengths.py --record   # lower the recorded counts to today's (never raises one)
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("llmcalc", "tools", "tests", "benchmarks")
LIMIT = 100  # characters per line, the newline not counted
RECORD = os.path.join(ROOT, "tests", "fixtures", "line_lengths.json")


def python_files(root=ROOT):
    """Every .py file under FOLDERS, as a path relative to root with / separators, sorted."""
    out = []
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__pycache__")))
            out += [os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")
                    for f in filenames if f.endswith(".py")]
    return sorted(out)


def long_lines(path, root=ROOT):
    """(line number, length) of each line of the file over LIMIT characters."""
    with open(os.path.join(root, path), encoding="utf-8") as fh:
        return [(i, len(line.rstrip("\r\n"))) for i, line in enumerate(fh, 1)
                if len(line.rstrip("\r\n")) > LIMIT]


def counts(root=ROOT):
    """{path: number of lines over LIMIT} for each file that has any."""
    found = {path: len(long_lines(path, root)) for path in python_files(root)}
    return {path: n for path, n in found.items() if n}


def recorded(record=RECORD):
    with open(record, encoding="utf-8") as fh:
        return json.load(fh)["over_100_characters"]


def over(now, allowed):
    """{path: (count now, count allowed)} for each file over its recorded count (absent: 0)."""
    return {p: (n, allowed.get(p, 0)) for p, n in now.items() if n > allowed.get(p, 0)}


def lowered(now, allowed):
    """The record re-recorded downward: each count lowered to today's, none raised; files at 0
    (or gone) dropped."""
    return {p: min(n, now.get(p, 0)) for p, n in sorted(allowed.items()) if min(n, now.get(p, 0))}


def write(allowed, record=RECORD):
    with open(record, "w", encoding="utf-8") as fh:
        json.dump({"limit": LIMIT, "over_100_characters": allowed}, fh, indent=1, sort_keys=True)
        fh.write("\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record", action="store_true",
                        help="lower the recorded counts to today's (never raises one)")
    args = parser.parse_args(argv)
    now, allowed = counts(), recorded()
    bad = over(now, allowed)
    for path, (n, limit) in bad.items():
        where = ", ".join(f"{i} ({w})" for i, w in long_lines(path))
        print(f"{path}: {n} lines over {LIMIT} characters, {limit} allowed; lines {where}",
              file=sys.stderr)
    if args.record:
        new = lowered(now, allowed)
        if new != allowed:
            write(new)
            print(f"recorded: {sum(new.values())} lines in {len(new)} files "
                  f"(was {sum(allowed.values())} in {len(allowed)})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
