"""Every example command of the README and the tools' pages (grid.DOC_FILES) runs (exit 0), so the
documentation stays true. Hub ids need the network and are skipped; so are the set-up commands
(pip, pytest)."""
import os
import re
import shlex
import subprocess
import sys

import pytest

import grid
from conftest import ROOT


def _commands():
    text = grid.doc_text()  # README.md and the tools' pages under docs/
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" # ")[0].strip()
            if line.startswith("python3 ") and " -m " not in line and "Qwen/Qwen3-8B" not in line:
                out.append(line)
    return out


COMMANDS = _commands()


def test_readme_has_examples():
    assert len(COMMANDS) >= 15


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_example_runs(command):
    argv = shlex.split(command)
    p = subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip()


def test_ci_runs_the_readme_test_command_in_a_fresh_venv():
    # .ci/run proves the set-up a new user follows: the README's command, verbatim, in a new venv.
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    readme = [line for line in text.splitlines() if "-r requirements-dev.txt" in line]
    ci = open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8").read().splitlines()
    assert len(readme) == 1 and ci[-1] == readme[0].strip(), (readme, ci[-1])
    assert any(line.startswith("python3 -m venv ") for line in ci)
    assert any(line.startswith("source ") and "/bin/activate" in line for line in ci)


def _user_pages():
    """README.md and every page under docs/: what a user reads."""
    docs = os.path.join(ROOT, "docs")
    pages = sorted(f for f in os.listdir(docs) if f.endswith(".md"))
    return ["README.md"] + [os.path.join("docs", f) for f in pages]


@pytest.mark.parametrize("page", _user_pages())
def test_user_pages_link_to_files_that_exist_and_name_no_internal_issue(page):
    # a newcomer follows every relative link, and an internal issue number means nothing to them
    # (the newcomer's list: "internal issue numbers in user text")
    text = open(os.path.join(ROOT, page), encoding="utf-8").read()
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if not target.startswith(("http://", "https://", "mailto:")):
            path = os.path.normpath(os.path.join(ROOT, os.path.dirname(page), target))
            assert os.path.exists(path), f"{page}: link to {target}, no such file"
    assert not re.search(r"\bissues? \d+\b|\(issue \d+", text), f"{page} names an internal issue"
