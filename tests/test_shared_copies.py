"""Formulas repeated on purpose (each script stands alone) must stay identical.

Each shared block lives between the markers '# === shared NAME: begin ===' and
'# === shared NAME: end ==='. Its master copy is in one script (tools/sync_shared_block.py lists
them: the model spec in calc_transformer_params.py, the training-memory formulas in
calc_transformer_mem.py, the collectives and a training step's collectives in calc_comm.py, the
training FLOPs in calc_transformer_flops.py); every other copy must be byte-identical,
and the model block's copies must give the same counts over a grid of architectures.
tools/sync_shared_block.py copies each master over the others.
"""
import argparse
import glob
import importlib
import itertools
import os

import pytest

from conftest import ROOT, config_path

BLOCKS = {"model spec": "calc_transformer_params.py", "training memory": "calc_transformer_mem.py",
          "collectives": "calc_comm.py", "training collectives": "calc_comm.py",
          "training flops": "calc_transformer_flops.py"}


def block(path, name="model spec"):
    text = open(path, encoding="utf-8").read()
    begin, end = f"# === shared {name}: begin ===", f"# === shared {name}: end ==="
    if begin not in text:
        return None
    return text[text.index(begin):text.index(end) + len(end)]


MASTER = os.path.join(ROOT, "calc_transformer_params.py")
COPIES = [p for p in sorted(glob.glob(os.path.join(ROOT, "calc_*.py")))
          if p != MASTER and block(p) is not None]
BLOCK_COPIES = [(name, p) for name, master in BLOCKS.items()
                for p in sorted(glob.glob(os.path.join(ROOT, "calc_*.py")))
                if p != os.path.join(ROOT, master) and block(p, name) is not None]


@pytest.mark.parametrize("name,path", BLOCK_COPIES, ids=lambda x: os.path.basename(x))
def test_block_is_byte_identical(name, path):
    master = os.path.join(ROOT, BLOCKS[name])
    assert block(master, name) is not None, f"{BLOCKS[name]} lost its {name} markers"
    assert block(path, name) == block(master, name), (
        f"{os.path.basename(path)}'s {name} block drifted; run python tools/sync_shared_block.py")


GRID = [dict(zip(("hidden_size", "num_layers", "num_attention_heads", "num_kv_heads", "swiglu",
                  "moe", "bias", "tied_embeddings"), v))
        for v in itertools.product((768, 4096), (2, 5), (8, 32), (1, 8), (False, True),
                                   (False, True), (False, True), (False, True))]
CONFIGS = ["gpt2", "falcon-7b", "mixtral-8x7b", "qwen1.5-moe-a2.7b", "deepseek-v3", "gemma-2-9b",
           "opt-350m", "olmo-2-1124-7b"]


def _counts(mod, argv):
    parser = argparse.ArgumentParser()
    mod.add_model_args(parser)
    parser.add_argument("--sequence-length", "-s", type=int, default=2048)
    spec, _ = mod.resolve_model_spec(parser.parse_args(argv))
    return mod.param_breakdown(spec)


@pytest.mark.parametrize("path", COPIES, ids=os.path.basename)
def test_copies_count_the_same(path):
    master = importlib.import_module("calc_transformer_params")
    other = importlib.import_module(os.path.basename(path)[:-3])
    for g in GRID:
        argv = ["-hs", str(g["hidden_size"]), "-l", str(g["num_layers"]),
                "-a", str(g["num_attention_heads"]), "--num-kv-heads", str(g["num_kv_heads"]),
                "--bias" if g["bias"] else "--no-bias",
                "--tied-embeddings" if g["tied_embeddings"] else "--no-tied-embeddings"]
        argv += ["--swiglu"] * g["swiglu"] + (["--moe", "-e", "8", "-t", "2"] if g["moe"] else [])
        assert _counts(other, argv) == _counts(master, argv), argv
    for name in CONFIGS:
        argv = ["--hf_model_name_or_path", config_path(name)]
        assert _counts(other, argv) == _counts(master, argv), name
