"""The concern markers (tests/conftest.py): every test file has its concerns, every concern is a
registered marker, every package file touches a concern, `-m NAME` selects by them, and the tests
of the concerns a change touches run first."""
import glob
import os
import subprocess
import sys
import types

import conftest
from conftest import ROOT


def _registered(config):
    return {line.split(":")[0].strip() for line in config.getini("markers")}


def test_every_test_file_has_its_concerns_and_no_row_is_stale():
    files = {os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "tests", "test_*.py"))}
    assert sorted(files - set(conftest.TEST_CONCERNS)) == []  # add a row for a new file
    assert sorted(set(conftest.TEST_CONCERNS) - files) == []


def test_every_concern_is_a_registered_marker(pytestconfig):
    used = {c for cs in conftest.TEST_CONCERNS.values() for c in cs}
    used |= {c for _, cs in conftest.SOURCE_CONCERNS for c in cs}
    assert sorted(used - _registered(pytestconfig)) == []


def test_every_package_file_touches_a_concern():
    paths = [os.path.relpath(p, ROOT).replace(os.sep, "/")
             for p in glob.glob(os.path.join(ROOT, "llmcalc", "**", "*.py"), recursive=True)]
    bare = [p for p in paths if not any(p.startswith(row[0]) for row in conftest.SOURCE_CONCERNS)
            and not p.endswith("/__init__.py")]  # (the grid, every package file's, is not enough)
    assert bare == []


def test_a_change_maps_to_its_concerns():
    # the longest prefix wins: llmcalc/hardware.py is hardware, not the built script's build
    # (and any package change the grid's)
    assert conftest.concerns_of_paths(["llmcalc/hardware.py"]) == {"hardware", "grid"}
    assert conftest.concerns_of_paths(["hardware.py"]) == {"build", "hardware"}
    assert conftest.concerns_of_paths(["llmcalc/serve/steady.py", "tests/test_calc_comm.py"]) == {
        "serve", "comm", "grid"}
    assert conftest.concerns_of_paths(["VALIDATION.md", "tests/fixtures/configs/x.json"]) == set()


def test_touched_concerns_run_first_in_collected_order():
    def item(name, i):
        return types.SimpleNamespace(path=types.SimpleNamespace(name=name), i=i)
    items = [item("test_build.py", 0), item("test_calc_comm.py", 1), item("test_grid.py", 2),
             item("test_capacity_plan.py", 3), item("test_calc_comm.py", 4)]
    conftest.order_by_concerns(items, {"comm", "serve"})
    assert [x.i for x in items] == [1, 3, 4, 0, 2]


def test_minus_m_selects_one_concern():
    p = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", "-m", "comm",
                        "-p", "no:cacheprovider", os.path.join(ROOT, "tests")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    ids = [line for line in p.stdout.splitlines() if "::" in line]
    files = {line.split("::")[0].split("/")[-1] for line in ids}
    assert files and all("comm" in conftest.TEST_CONCERNS[f] for f in files), files
    assert "test_calc_comm.py" in files
