"""Every example command of EleutherAI cookbook's calc/README.md runs unchanged on our scripts.

Source: github.com/EleutherAI/cookbook, calc/README.md (the "Example with ..." lines, verbatim).
Each command runs in a subprocess exactly as typed there (with this interpreter for `python`);
it must exit 0, print a result, and give the same numbers through main() with --json.
"""
import json
import shlex
import subprocess
import sys

import pytest

from conftest import ROOT

README_COMMANDS = [
    "python calc_transformer_flops.py -l 12 -hs 768 --moe -e 512",
    "python calc_transformer_flops.py -l 96 -hs 12288",
    "python calc_transformer_params.py -l 12 -hs 768 --moe -e 512",
    "python calc_transformer_params.py -l 96 -hs 12288",
    "python calc_transformer_mem.py --num-layers=32 --sequence-length=2048 --num-attention-heads=32 "
    "--hidden-size=4096 --batch-size-per-gpu=8 --checkpoint-activations --zero-stage=1 "
    "--partition-activations --pipeline-parallel-size=1 --tensor-parallel-size=2 --num-gpus=128",
    "python calc_transformer_mem.py --num-layers=36 --sequence-length=2048 --num-attention-heads=40 "
    "--hidden-size=5120 --batch-size-per-gpu=8 --checkpoint-activations --zero-stage=1 "
    "--partition-activations --pipeline-parallel-size=1 --tensor-parallel-size=4 --num-gpus=256",
    "python calc_transformer_mem.py --num-layers=44 --sequence-length=2048 --num-attention-heads=64 "
    "--hidden-size=6144 --batch-size-per-gpu=1 --checkpoint-activations --zero-stage=1 "
    "--partition-activations --pipeline-parallel-size=1 --tensor-parallel-size=1 --num-gpus=1",
]


@pytest.mark.parametrize("command", README_COMMANDS, ids=lambda c: " ".join(c.split()[1:4]))
def test_cookbook_readme_command_runs_unchanged(command):
    argv = shlex.split(command)
    assert argv[0] == "python"
    p = subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip()
    j = subprocess.run([sys.executable, *argv[1:], "--json"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert j.returncode == 0, j.stderr
    assert isinstance(json.loads(j.stdout), dict)
