"""Formulas repeated on purpose (each script stands alone) must stay identical.

The model block (flags, config reading, parameter formulas) lives between the markers
'# === shared model spec: begin ===' and '# === shared model spec: end ==='. Its master copy is in
calc_transformer_params.py; every other copy must be byte-identical and give the same counts
over a grid of architectures. tools/sync_shared_block.py copies the master over the others.
"""
import argparse
import glob
import importlib
import itertools
import os

import pytest

from conftest import ROOT, config_path

BEGIN, END = "# === shared model spec: begin ===", "# === shared model spec: end ==="


def block(path):
    text = open(path, encoding="utf-8").read()
    if BEGIN not in text:
        return None
    return text[text.index(BEGIN):text.index(END) + len(END)]


MASTER = os.path.join(ROOT, "calc_transformer_params.py")
COPIES = [p for p in sorted(glob.glob(os.path.join(ROOT, "calc_*.py")))
          if p != MASTER and block(p) is not None]


@pytest.mark.parametrize("path", COPIES, ids=os.path.basename)
def test_block_is_byte_identical(path):
    assert block(path) == block(MASTER), (
        f"{os.path.basename(path)}'s model block drifted; run python tools/sync_shared_block.py")


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


# sliding_window_from_config: calc_transformer_mem.py's master, copied into calc_inference_latency.py
# (outside the model block; the window is read from the raw config, not the spec).
SWA_COPIES = ["calc_transformer_mem", "calc_inference_latency"]
SWA_SYNTHETIC = [  # the rules the fixtures do not reach
    {"sliding_window": 512, "layer_types": ["sliding_attention", "full_attention"] * 3},
    {"sliding_window": 512, "layer_types": ["full_attention"] * 6},
    {"text_config": {"sliding_window": 1024, "model_type": "gemma2", "hidden_size": 8}},
    {"sliding_window": 2048, "use_sliding_window": True, "model_type": "qwen2"},
    {"sliding_window": 0}, {},
]


def test_sliding_window_copies_are_identical_source():
    import ast
    import inspect
    srcs = [inspect.getsource(importlib.import_module(m).sliding_window_from_config)
            for m in SWA_COPIES]
    assert srcs[0] == srcs[1], "sliding_window_from_config drifted between " + " and ".join(SWA_COPIES)
    assert ast.dump(ast.parse(srcs[0])) == ast.dump(ast.parse(srcs[1]))


def test_sliding_window_copies_agree_on_every_fixture_config():
    import json
    mods = [importlib.import_module(m) for m in SWA_COPIES]
    paths = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "configs", "*.json")))
    seen = {}
    for path in paths:
        cfg = json.load(open(path, encoding="utf-8"))
        L = cfg.get("num_hidden_layers") or cfg.get("n_layer") or 12
        got = [m.sliding_window_from_config(cfg, L) for m in mods]
        assert got[0] == got[1], path
        seen[os.path.basename(path)[:-5]] = got[0]
    for cfg in SWA_SYNTHETIC:
        assert len({repr(m.sliding_window_from_config(cfg, 6)) for m in mods}) == 1, cfg
    # the fixtures that carry a window get the HF rule (mistral, starcoder2, phi-3: every layer;
    # gemma 2: even layers; qwen with use_sliding_window false and mixtral's null: none)
    assert seen["mistral-7b"] == (4096, list(range(32)))
    assert seen["gemma-2-9b"] == (4096, list(range(0, 42, 2)))
    assert seen["starcoder2-7b"][0] == 4096 and seen["phi-3-mini-4k"][0] == 2047
    for name in ("qwen2.5-7b", "qwen3-8b", "qwen1.5-moe-a2.7b", "mixtral-8x7b", "llama-3-8b"):
        assert seen[name] == (None, []), name
