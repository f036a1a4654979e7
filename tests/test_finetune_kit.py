"""llmcalc-finetune-kit (llmcalc/kit/finetune_kit.py): the package and the built scripts never
reach torch; the kit's CPU smoke mode runs end to end where torch, transformers and peft are
installed (pip install .[kit]). CI installs none of them by design: the smoke test is marked
needs_torch and skips there without failing (tests/conftest.py's one exception)."""
import csv
import glob
import os
import subprocess
import sys

import pytest

from conftest import ROOT


def test_importing_the_kit_imports_no_torch():
    code = ("import sys, llmcalc.kit.finetune_kit as k\n"
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules\n"
            "print(len(k.CASES))")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    assert int(p.stdout) >= 10


def test_built_scripts_do_not_reach_the_kit():
    for path in glob.glob(os.path.join(ROOT, "*.py")):
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        assert "finetune_kit" not in text and "import torch" not in text, path


def test_the_cases_cover_the_issue():
    from llmcalc.kit.finetune_kit import CASES, FAMILIES
    modes = {c[1] for c in CASES.values()}
    assert {"autocast", "bf16", "lora", "qlora"} <= modes
    assert {True, False} == {c[2] for c in CASES.values()}
    assert len(FAMILIES) >= 3 and any("num_experts" in f for f in FAMILIES.values())


@pytest.mark.needs_torch
def test_smoke_mode_runs_on_the_cpu(tmp_path):
    for name in ("torch", "transformers", "peft"):
        pytest.importorskip(name)
    from llmcalc.kit import finetune_kit
    out = tmp_path / "rows.csv"
    rows = finetune_kit.main(["--smoke", "--gpu", "h100", "--steps", "1", "--warmup", "1",
                              "--out", str(out)])
    assert len(rows) == len(finetune_kit.SMOKE_CASES)
    with open(out, encoding="utf-8") as fh:
        written = list(csv.DictReader(fh))
    assert [r["case"] for r in written] == list(finetune_kit.SMOKE_CASES)
    for r in written:
        assert float(r["step_s"]) > 0 and float(r["predicted_peak_bytes"]) > 0
        assert float(r["predicted_step_s"]) > 0 and r["torch"] and r["peft"]
