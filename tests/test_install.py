"""The package installs and answers as the built scripts do.

`pip install .` into a fresh virtual environment gives one command per tool (pyproject.toml's
[project.scripts]); each answers its default question with exactly what its built script prints.
`python -m llmcalc TOOL` runs the same main(). One answer to one question, whichever entry point.
The commands live in llmcalc/commands.py, so none shadows a submodule of the same name.
"""
import os
import subprocess
import sys

import pytest

import llmcalc.commands as entry
import llmcalc.__main__ as python_m
from conftest import ROOT, run_main

# installed command: (its `python -m llmcalc` name, the built script it matches)
COMMANDS = {"llmcalc-params": ("params", "calc_transformer_params.py"),
            "llmcalc-flops": ("flops", "calc_transformer_flops.py"),
            "llmcalc-mem": ("mem", "calc_transformer_mem.py"),
            "llmcalc-train-time": ("train-time", "calc_training_time.py"),
            "llmcalc-latency": ("latency", "calc_inference_latency.py"),
            "llmcalc-comm": ("comm", "calc_comm.py"),
            "llmcalc-hardware": ("hardware", "hardware.py")}


def as_scripts(text, spelling):
    """`text` with the next-step commands spelled as the built scripts spell them: an installed
    command or `python -m llmcalc` names the other tools as it was itself run (the one difference
    in what they print)."""
    for name, (_, script) in entry.TOOLS.items():
        text = text.replace(spelling.format(tool=name) + " ", f"python3 {script} ")
    return text


def test_pyproject_names_every_command():
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    for command, (name, _) in COMMANDS.items():
        assert f'{command} = "llmcalc.commands:{name.replace("-", "_")}"' in text
        assert name in entry.TOOLS and callable(getattr(entry, name.replace("-", "_")))
    assert "dependencies = []" in text


@pytest.mark.parametrize("name", sorted(entry.TOOLS))
def test_python_m_llmcalc_answers_as_the_built_script(name, monkeypatch):
    module = __import__(entry.TOOLS[name][1][:-3])
    want = run_main(module.main, ["--json"])[1]
    monkeypatch.setattr(sys, "argv", ["python -m llmcalc"])
    rc, got, _ = run_main(python_m.main, [name, "--json"])
    assert rc == 0 and as_scripts(got, "python3 -m llmcalc {tool}") == want


def test_no_command_shadows_a_submodule():
    # A fresh interpreter: `from llmcalc import comm, hardware` are the modules whatever was
    # imported first (a function of that name in llmcalc/__init__.py would win until the submodule
    # was imported, and lose after: two meanings for one name).
    code = ("import inspect, llmcalc\n"
            "assert not [n for n in vars(llmcalc) if not n.startswith('__')], vars(llmcalc)\n"
            "from llmcalc import comm, hardware\n"
            "print(inspect.ismodule(comm), inspect.ismodule(hardware))")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and p.stdout.split() == ["True", "True"], p.stderr[-2000:]


def test_python_m_llmcalc_without_a_tool_lists_them():
    p = subprocess.run([sys.executable, "-m", "llmcalc"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and all(name in p.stdout for name in entry.TOOLS)
    p = subprocess.run([sys.executable, "-m", "llmcalc", "nope"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)  # one line naming the unknown tool, no usage dump
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1
    assert p.stderr.startswith("python -m llmcalc: error: unknown tool 'nope'; tools: params")


def test_pip_install_in_a_fresh_venv_gives_each_command(tmp_path):
    # What a user does: a new virtual environment, `pip install .`, then each command with no
    # flags, run from another folder (so nothing of the checkout is on the path).
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", ROOT],
                         capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr[-2000:]
    # each command's default run, and --gpu (the package's own accelerator table, not a file
    # beside a script) where the tool takes it
    runs = [(c, []) for c in COMMANDS] + [(c, ["--gpu", "h100"]) for c in COMMANDS
                                          if c not in ("llmcalc-params", "llmcalc-hardware")]
    for command, flags in runs:
        got = subprocess.run([str(venv / "bin" / command), *flags], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
        want = subprocess.run([sys.executable, os.path.join(ROOT, COMMANDS[command][1]), *flags],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert got.returncode == want.returncode, (command, flags, got.stderr)
        assert as_scripts(got.stdout, entry.INSTALLED) == want.stdout, (command, flags)
        assert "python3 calc_" not in got.stdout, (command, flags)  # next steps it can run
    # the installed package holds no built script: the commands run the package's modules
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import llmcalc, os; "
                           "print(os.path.dirname(llmcalc.__file__))"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60).stdout.strip()
    assert os.path.exists(os.path.join(site, "model", "formulas.py"))
