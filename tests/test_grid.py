"""The regression grid: every command of tests/grid.py prints, byte for byte, what
tests/fixtures/grid_outputs.json recorded (exit code, stdout, stderr; wall-clock readings
normalised by grid.normalise).

It guards the move of the scripts' code into a package, and any refactor after it: what a user
sees must not change. When an issue changes an answer, a message or a help text on purpose,
re-record with `python3 tools/record_grid.py` and review the fixture's diff; never re-record to
make this test pass.
"""
import json
import os
import re

import pytest

import grid
from conftest import FIXTURES, ROOT

RECORD = os.path.join(FIXTURES, "grid_outputs.json")
with open(RECORD, encoding="utf-8") as fh:
    ENTRIES = json.load(fh)["commands"]


def _id(index, entry):
    """'042 mem llama-3-8b --infer -s 8192': index, script, the first arguments."""
    args = re.sub(r"--hf_model_name_or_path tests/fixtures/configs/(\S+)\.json", r"\1", " ".join(entry["argv"]))
    script = entry["script"][:-3].replace("calc_transformer_", "").replace("calc_", "")
    return f"{index:03d} {script} {args[:48]}".rstrip()


def test_grid_and_record_are_in_step():
    # A command added to or dropped from the grid needs a re-recording (tools/record_grid.py).
    assert [(e["script"], e["argv"]) for e in ENTRIES] == grid.COMMANDS


@pytest.mark.parametrize("entry", ENTRIES, ids=[_id(i, e) for i, e in enumerate(ENTRIES)])
def test_output_is_unchanged(entry):
    got = grid.run_command(entry["script"], entry["argv"], ROOT)
    assert got["rc"] == entry["rc"], got["stderr"]
    assert got["stderr"] == entry["stderr"]
    assert got["stdout"] == entry["stdout"]
