"""Project rules every script must keep: standard library only, no imports between calc_*
scripts, transformers imported lazily, --help works, and a default run answers."""
import ast
import glob
import os
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPTS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "calc_*.py")))
ALL = SCRIPTS + (["hardware.py"] if os.path.exists(os.path.join(ROOT, "hardware.py")) else [])
STDLIB = set(sys.stdlib_module_names)


def test_there_are_scripts():
    assert "calc_transformer_params.py" in SCRIPTS


@pytest.mark.parametrize("script", ALL)
def test_top_level_imports_are_stdlib_or_hardware(script):
    # Module-level imports only; lazy imports inside functions (transformers, hardware) are allowed
    # and checked below by running the script with site-packages disabled.
    tree = ast.parse(open(os.path.join(ROOT, script), encoding="utf-8").read())
    for node in tree.body:
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        for name in names:
            top = name.split(".")[0]
            assert top in STDLIB, f"{script} imports {name} at module level"


@pytest.mark.parametrize("script", ALL)
def test_no_script_imports_another_calc_script(script):
    tree = ast.parse(open(os.path.join(ROOT, script), encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mods = [node.module or ""]
        else:
            continue
        assert not any(m.startswith("calc_") for m in mods), f"{script} imports {mods}"


@pytest.mark.parametrize("script", ALL)
@pytest.mark.parametrize("args", [["--help"], []])
def test_runs_with_standard_library_only(script, args, tmp_path):
    # python -S: no site-packages at all. Run from a copy in an empty folder, so the script is
    # alone (no hardware.py beside it, no tests on the path).
    dst = tmp_path / script
    dst.write_text(open(os.path.join(ROOT, script), encoding="utf-8").read())
    p = subprocess.run([sys.executable, "-S", str(dst), *args], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip()


@pytest.mark.parametrize("script", SCRIPTS)
def test_importing_does_not_pull_in_heavy_modules(script):
    mod = script[:-3]
    code = (f"import sys; sys.path.insert(0, {ROOT!r}); import {mod}; "
            "bad = [m for m in ('transformers', 'torch', 'numpy') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_ci_runs_the_readme_test_command():
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    ci = open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8").read()
    cmd = "python3 -m pip install -r requirements-dev.txt && python3 -m pytest -q tests"
    assert cmd in readme and cmd in ci
