"""Every fitted constant in llmcalc/ is in validation/calibration.py, with its rows (issue 45).

A constant's line ends with `# calibrated: <name>`; the registry holds its value, meaning, source,
the rows that set it and at least twice as many rows that judge it. This checks the bookkeeping, not
the constants: each row is judged against its source by the test file that holds it.
"""
import csv
import importlib.util
import os
import re

import pytest

from conftest import ROOT

MARK = re.compile(r"#\s*calibrated:\s*([A-Za-z0-9_.-]+)")
NUMBER = re.compile(r"=\s*\(?\s*([-+]?(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")


def _registry():
    path = os.path.join(ROOT, "validation", "calibration.py")
    spec = importlib.util.spec_from_file_location("calibration", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.ENTRIES


def _markers():
    """{name: [(relative path, line)]} for every `# calibrated:` marker in the package."""
    out = {}
    for base, _, files in os.walk(os.path.join(ROOT, "llmcalc")):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(base, f)
            rel = os.path.relpath(path, ROOT)
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    m = MARK.search(line)
                    if m:
                        out.setdefault(m.group(1), []).append((rel, line))
    return out


def _serving_ids():
    path = os.path.join(ROOT, "validation", "serving_rows.csv")
    with open(path, newline="", encoding="utf-8") as fh:
        return {r["row_id"] for r in csv.DictReader(fh)}


def _training_ids():
    import test_training_today as t
    from test_calc_training_time import FOUNDRY
    return {r["id"] for r in t.ROWS} | {f"foundry-{i}" for i in range(len(FOUNDRY))}


def _nccl_ids():
    import nccl_tests_data as n
    tables = {k: v for k, v in vars(n).items() if k.isupper() and isinstance(v, list)}
    return {f"{k}/{i}" for k, v in tables.items() for i in range(len(v))}


def _finetune_ids():
    """Fine-tuning rows: the `row_id` column of every CSV under validation/finetune/."""
    folder = os.path.join(ROOT, "validation", "finetune")
    ids = set()
    if os.path.isdir(folder):
        for f in sorted(os.listdir(folder)):
            if f.endswith(".csv"):
                with open(os.path.join(folder, f), newline="", encoding="utf-8") as fh:
                    ids |= {r["row_id"] for r in csv.DictReader(fh)}
    return ids


ROW_TABLES = {"serving": _serving_ids, "training": _training_ids, "nccl": _nccl_ids,
              "finetune": _finetune_ids}
ENTRIES = _registry()
_IDS = {}


def _known(table):
    if table not in _IDS:
        _IDS[table] = ROW_TABLES[table]()
    return _IDS[table]


def test_names_are_unique():
    names = [e["name"] for e in ENTRIES]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_every_marker_is_registered():
    registered = {e["name"] for e in ENTRIES}
    missing = {n: [p for p, _ in v] for n, v in _markers().items() if n not in registered}
    assert not missing, f"fitted constants not in validation/calibration.py: {missing}"


@pytest.mark.parametrize("e", ENTRIES, ids=lambda e: e["name"])
def test_entry_is_complete_and_in_the_code(e):
    for field in ("meaning", "source", "where"):
        assert isinstance(e[field], str) and e[field].strip(), field
    found = _markers().get(e["name"], [])
    assert len(found) == 1, f"{e['name']}: one '# calibrated:' marker expected, found {len(found)}"
    path, line = found[0]
    assert path == e["where"], f"{e['name']} is marked in {path}, registered in {e['where']}"
    m = NUMBER.search(line)
    assert m, f"{e['name']}: no number on its marked line: {line.strip()}"
    assert float(m.group(1).replace("_", "")) == pytest.approx(e["value"], rel=1e-9)


@pytest.mark.parametrize("e", ENTRIES, ids=lambda e: e["name"])
def test_rows_exist_and_judges_outnumber_setters(e):
    set_by, judged_by = set(e["set_by"]), set(e["judged_by"])
    assert not set_by & judged_by, f"rows set and judge {e['name']}: {sorted(set_by & judged_by)}"
    assert len(judged_by) >= max(1, 2 * len(set_by)), \
        f"{e['name']}: {len(set_by)} rows set it, {len(judged_by)} judge it (needs twice as many)"
    for rid in set_by | judged_by:
        table, _, row = rid.partition(":")
        assert table in ROW_TABLES, f"{rid}: unknown table (known: {sorted(ROW_TABLES)})"
        assert row in _known(table), f"{rid}: no such row in the {table} table"
