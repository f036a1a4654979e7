"""Which layers slide, and over what window: spec["layers"] as the shared block's config reader builds
it, against the layer types transformers' own config classes derive.

Ground truth: transformers 5.23.0, AutoConfig.for_model(model_type, **config) on the very dicts
below (and on the fixture config.json files). A layer slides when its `layer_types` entry is
"sliding_attention" and the config keeps a `sliding_window` (Qwen's config classes set it to None
unless use_sliding_window); in families whose config has no layer_types (Mistral, Mixtral, Phi-3,
Starcoder2, Qwen3-MoE) every layer slides when sliding_window is set, since their attention modules
pass config.sliding_window on every layer. The results are recorded here, so the tests run without
transformers; test_recorded_truth_is_what_transformers_derives re-derives them when it is installed
(it is in requirements-dev.txt). These assertions were first in test_calc_transformer_mem.py and
test_shared_copies.py, for the sliding_window_from_config helper the block's reader replaced.
"""
import argparse
import json

import pytest

from conftest import config_path

from llmcalc.cli import add_model_args  # formula-level: the package's modules themselves
from llmcalc.model.spec import resolve_model_spec

BASE = {"num_hidden_layers": 8, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4,
        "intermediate_size": 128, "vocab_size": 100}
MOE = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32}
ALT = ["sliding_attention", "full_attention"] * 4
EVEN = list(range(0, 8, 2))

# name: (model_type, fields over BASE, sliding layers transformers derives, their window)
SYNTHETIC = {
    "qwen2": ("qwen2", {"sliding_window": 32, "use_sliding_window": True, "max_window_layers": 5},
              [5, 6, 7], 32),
    "qwen3": ("qwen3", {"sliding_window": 32, "use_sliding_window": True, "max_window_layers": 5},
              [5, 6, 7], 32),
    "qwen2_moe": ("qwen2_moe", {**MOE, "sliding_window": 32, "use_sliding_window": True,
                                "max_window_layers": 5}, [0, 2, 4], 32),
    "qwen3_moe": ("qwen3_moe", {**MOE, "sliding_window": 32, "use_sliding_window": True,
                                "max_window_layers": 5}, list(range(8)), 32),
    "mistral": ("mistral", {"sliding_window": 32}, list(range(8)), 32),
    "gemma2": ("gemma2", {"sliding_window": 32, "head_dim": 16}, EVEN, 32),
    "qwen2-off": ("qwen2", {"sliding_window": 32, "use_sliding_window": False, "max_window_layers": 5},
                  [], None),
    "qwen2-40-default-mwl": ("qwen2", {"num_hidden_layers": 40, "sliding_window": 32,
                                       "use_sliding_window": True}, list(range(28, 40)), 32),
    "qwen2_moe-40-default-mwl": ("qwen2_moe", {**MOE, "num_hidden_layers": 40, "sliding_window": 32,
                                               "use_sliding_window": True}, list(range(0, 28, 2)), 32),
    "qwen2-layer_types": ("qwen2", {"sliding_window": 32, "use_sliding_window": True, "layer_types": ALT},
                          EVEN, 32),
    "qwen2-layer_types-off": ("qwen2", {"sliding_window": 32, "use_sliding_window": False,
                                        "layer_types": ALT}, [], None),
    "gemma2-all-full": ("gemma2", {"sliding_window": 32, "head_dim": 16,
                                   "layer_types": ["full_attention"] * 8}, [], 32),
    "mistral-no-window": ("mistral", {"sliding_window": None}, [], None),
    "qwen3_moe-off": ("qwen3_moe", {**MOE, "sliding_window": 32, "use_sliding_window": False}, [], None),
}
# Where the block's reader disagrees with transformers: the block change that fixes it is named;
# strict, so the marker must go once the block is fixed.
BLOCK_GAPS = {}  # the Qwen2-MoE even-layer rule and the default max_window_layers 28 are fixed

# Fixture config.json files (tests/fixtures/configs, provenance in SOURCES.md): sliding layers and
# window as transformers 5.23.0 derives them from the same files.
FIXTURES = {
    "mistral-7b": (list(range(32)), 4096),
    "gemma-2-9b": (list(range(0, 42, 2)), 4096),   # Gemma2Config: layer i slides when (i + 1) % 2
    "starcoder2-7b": (list(range(32)), 4096),
    "phi-3-mini-4k": (list(range(32)), 2047),
    "qwen2.5-7b": ([], None), "qwen3-8b": ([], None), "qwen1.5-moe-a2.7b": ([], None),
    "mixtral-8x7b": ([], None), "llama-3-8b": ([], None), "qwen3-30b-a3b": ([], None),
}


def spec_of(path, *argv):
    parser = argparse.ArgumentParser()
    add_model_args(parser)
    spec, _ = resolve_model_spec(vars(parser.parse_args(["--hf_model_name_or_path", path, *argv])))
    return spec


def sliding(spec):
    """(indices of sliding layers, {their windows}, {windows of the other layers})."""
    idx = [i for i, x in enumerate(spec["layers"]) if x["attention"][0]["span"] == "sliding"]
    wins = {spec["layers"][i]["attention"][0]["window"] for i in idx}
    rest = {x["attention"][0]["window"] for i, x in enumerate(spec["layers"]) if i not in idx}
    return idx, wins, rest


def _write(tmp_path, model_type, extra):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type, **BASE, **extra}))
    return str(path)


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=BLOCK_GAPS[n])) if n in BLOCK_GAPS else n
    for n in SYNTHETIC])
def test_sliding_layers_match_transformers(name, tmp_path):
    model_type, extra, want, window = SYNTHETIC[name]
    idx, wins, rest = sliding(spec_of(_write(tmp_path, model_type, extra)))
    assert idx == want
    assert wins == ({window} if want else set())
    assert rest <= {0}  # full layers carry no window


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_sliding_layers_match_transformers(name):
    want, window = FIXTURES[name]
    idx, wins, rest = sliding(spec_of(config_path(name)))
    assert idx == want
    assert wins == ({window} if want else set())
    assert rest <= {0}


def test_sliding_window_flag_on_the_layers():
    # --sliding-window W sets the window of the config's sliding layers; 0 turns them full; with
    # no config every layer slides (the block's add_model_args help).
    idx, wins, _ = sliding(spec_of(config_path("gemma-2-9b"), "--sliding-window", "1024"))
    assert idx == list(range(0, 42, 2)) and wins == {1024}
    assert sliding(spec_of(config_path("mistral-7b"), "--sliding-window", "0"))[0] == []
    parser = argparse.ArgumentParser()
    add_model_args(parser)
    spec, _ = resolve_model_spec(vars(parser.parse_args(["-l", "6", "--sliding-window", "512"])))
    assert sliding(spec) == (list(range(6)), {512}, set())


def _transformers_truth(transformers, model_type, cfg):
    hf = transformers.AutoConfig.for_model(model_type, **cfg)
    window = getattr(hf, "sliding_window", None)
    types = getattr(hf, "layer_types", None)
    if not window:
        return [], None
    if types is None:
        return list(range(hf.num_hidden_layers)), window
    return [i for i, t in enumerate(types) if t == "sliding_attention"], window


def test_recorded_truth_is_what_transformers_derives():
    """The tables above, re-derived by transformers' config classes (skipped without it)."""
    transformers = pytest.importorskip("transformers")
    for name, (model_type, extra, want, window) in SYNTHETIC.items():
        got = _transformers_truth(transformers, model_type, {**BASE, **extra})
        assert got == (want, window if want else got[1]), name
    for name, (want, window) in FIXTURES.items():
        with open(config_path(name), encoding="utf-8") as fh:
            cfg = json.load(fh)
        cfg.pop("auto_map", None)
        got = _transformers_truth(transformers, cfg.pop("model_type"), cfg)
        assert got == (want, window), name
