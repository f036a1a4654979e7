"""Every example command in our README runs (exit 0), so the documentation stays true. Hub ids
need the network and are skipped; so are the set-up commands (pip, pytest)."""
import os
import re
import shlex
import subprocess
import sys

import pytest

from conftest import ROOT


def _commands():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
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
