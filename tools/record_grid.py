"""Record what every command of the regression grid (tests/grid.py) prints.

    python3 tools/record_grid.py [--root DIR] [--output FILE]

runs each command in COMMANDS order against the scripts in DIR (default: this repository's root)
and writes tests/fixtures/grid_outputs.json: {"commands": [{"script", "argv", "rc", "stdout",
"stderr"}, ...]}. tests/test_grid.py then checks that the scripts still print exactly that.

Re-record only on purpose: when an issue changes an answer, a message or a help text, or when
the grid itself changes. Then review the diff of the fixture (git diff) and keep only the changes
the issue meant; a refactor must leave the file unchanged.
"""
import argparse
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))

import grid  # noqa: E402 -- tests/ is not a package

OUTPUT = os.path.join(REPO, "tests", "fixtures", "grid_outputs.json")


def record(root):
    """The grid's entries: each command with what it printed from root."""
    return [{"script": script, "argv": argv, **grid.run_command(script, argv, root)}
            for script, argv in grid.COMMANDS]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=REPO, help="folder with the scripts (default: the repository root)")
    parser.add_argument("--output", default=OUTPUT,
                        help="where to write (default: tests/fixtures/grid_outputs.json)")
    args = parser.parse_args(argv)
    entries = record(args.root)
    with open(args.output, "w", encoding="utf-8") as fh:
        json.dump({"commands": entries}, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    codes = [e["rc"] for e in entries]
    print(f"{len(entries)} commands ({codes.count(0)} exit 0, {codes.count(2)} exit 2, "
          f"{len(codes) - codes.count(0) - codes.count(2)} other) -> {os.path.relpath(args.output)}")


if __name__ == "__main__":
    main()
