"""The shared block's cache rule per layer kind against what transformers' own cache holds.

Ground truth: tests/fixtures/hf_cache_bytes.json (tests/fixtures/measure_cache.py; transformers
5.23.0, bf16 or fp32, small copies of real layer shapes with window and chunk 16): the bytes each
layer's DynamicCache entry keeps allocated (storage_bytes: for a sliding or chunked layer W
tokens, one more than the W - 1 its view shows) after a prefill of N tokens (N = 12, 40) and after
N more decode steps, for full, GQA, sliding, chunked, NoPE, MLA (the latent), DSA (latent + indexer keys, GLM-5's
shared-indexer layers without keys), attention sinks, Gemma 4's KV-sharing layers and Gated DeltaNet
layers (Qwen3-Next, Qwen3.5: conv window and recurrent state, the same at N and 2N, at 12 and 40); transformers
5.24 for A.X K2, dots3 and Hunyuan V4 (DSA, shared-indexer layers, dots3's sliding MLA layer), and Inkling,
Inkling 2 and ZAYA (the convolution windows and ZAYA's delayed value half beside the K/V). Static
caches (preallocated) are not what the rule describes and are skipped. Tolerance: exact.

Ours: for each attention block of each layer, cache_elements_per_token (MLA as the latent) x
cached_tokens(context) x batch x bytes per element; for a linear mixer state_elements: the conv
window at the model's dtype and the recurrent state at 4 bytes (transformers keeps it in fp32)."""
import argparse
import os

import pytest

from conftest import FIXTURES, load_json
from llmcalc.cli import add_model_args  # formula-level: the package's modules themselves
from llmcalc.model.formulas import (cache_elements_per_token, cached_tokens, compressed_cache_elements,
                                    state_elements)
from llmcalc.model.spec import resolve_model_spec

CACHE = load_json("hf_cache_bytes.json")
RUNS = sorted(k for k, v in CACHE.items() if not k.startswith("_") and "static" not in k
              and v.get("model_type") != "deepseek_v4")  # its own test below
DSV4_RUNS = sorted(k for k, v in CACHE.items() if v.get("model_type") == "deepseek_v4")


def _spec(config_file):
    parser = argparse.ArgumentParser()
    add_model_args(parser)
    args = parser.parse_args(["--hf_model_name_or_path", os.path.join(FIXTURES, config_file)])
    return resolve_model_spec(vars(args))[0]


# transformers 5.24's dots3 caches its indexer keys in fp32 (its indexed layers' rotary tables are fp32,
# so the key is upcast before cache.update_indexer); ours keeps them at the KV dtype, as the other DSA
# families' caches and serving engines do. Compared here with the measured width: 4 bytes.
INDEXER_KEY_BYTES = {"dots3": 4}


def _ours(layer, *, context, batch, dtype_bytes, indexer_bytes=None):
    total = 0
    for attn in layer["attention"]:
        el = cache_elements_per_token(attn, mla_cache="latent")
        t = cached_tokens(attn, context=context)
        total += (el["kv"] * dtype_bytes + el["indexer"] * (indexer_bytes or dtype_bytes)) * t
        st = state_elements(attn)  # a linear mixer: conv window in the model dtype, state in fp32
        state_bytes = dtype_bytes if attn.get("state_dtype") == "model" else 4  # MiniMax's lightning state
        total += st["conv"] * dtype_bytes + st["recurrent"] * state_bytes
    return total * batch


def test_every_kind_is_covered():
    kinds = {CACHE[k]["model_type"] for k in RUNS}
    assert {"llama", "mistral", "gemma3_text", "cohere2", "exaone4", "gpt_oss", "llama4_text", "deepseek_v3",
            "deepseek_v32", "glm_moe_dsa", "gemma4_text", "minimax_m2", "qwen3", "qwen3_next",
            "qwen3_5_moe_text"} <= kinds


@pytest.mark.parametrize("name", RUNS)
def test_cache_bytes_per_layer_equal_transformers(name):
    r = CACHE[name]
    spec = _spec(r["config_file"])
    for run in r["runs"]:
        for phase in ("prefill", "decode"):
            ph = run[phase]
            ctx = ph["context_tokens"] if phase == "prefill" else ph["context_tokens"]
            assert len(ph["layers"]) == len(spec["layers"]), name
            for i, (layer, measured) in enumerate(zip(spec["layers"], ph["layers"])):
                ours = _ours(layer, context=ctx, batch=r["batch"], dtype_bytes=r["dtype_bytes"],
                             indexer_bytes=INDEXER_KEY_BYTES.get(name))
                if phase == "prefill" and measured["storage_bytes"] > run["decode"]["layers"][i]["storage_bytes"]:
                    # a windowed layer right after a prefill longer than its window: transformers
                    # holds the whole prompt until the first decode step trims it (a transient
                    # the rule leaves out); ours is what it holds from then on
                    measured = run["decode"]["layers"][i]
                assert ours == measured["storage_bytes"], (name, run["N"], phase, i, ours, measured["storage_bytes"])


@pytest.mark.parametrize("name", DSV4_RUNS)
def test_deepseek_v4_cache_equals_transformers(name):
    # Source: transformers 5.23's DeepseekV4 caches (tests/fixtures/hf_cache_bytes.json, bf16, window
    # 16, compressed sparse rate 4 with its indexer, heavily compressed rate 8; prefill N = 12 and 40,
    # then N decode steps). Per layer, ours = the window (W tokens of the one K = V head; K and V apart
    # on a plain sliding layer, transformers' generic sliding layer) + compressed_cache_elements
    # (closed entries, the open window's projections, the overlap half). Measured: the storage the
    # window keeps after a decode step (its K and V are one tensor on compressed layers) + the
    # compressor tensors' own bytes. Tolerance: exact. Right after a prefill longer than the window
    # transformers still pins the prompt's rows (the transient the sliding rule leaves out too).
    r = CACHE[name]
    spec = _spec(r["config_file"])
    B = r["dtype_bytes"]
    seen = 0
    for run in r["runs"]:
        for phase in ("prefill", "decode"):
            ph = run[phase]
            t = ph["context_tokens"]
            if phase == "prefill" and t > spec["layers"][0]["attention"][0]["window"]:
                continue
            for layer, measured in zip(spec["layers"], ph["layers"]):
                (attn,) = layer["attention"]
                el = cache_elements_per_token(attn)
                comp = compressed_cache_elements(attn, context=t)
                ours = (el["kv"] * cached_tokens(attn, context=t) + comp["kv"] + comp["indexer"]) * B * r["batch"]
                tensors = measured["tensors"]
                window = tensors["keys"]["storage_bytes"] + (
                    tensors["values"]["storage_bytes"] if measured["cache_layer_class"] == "DynamicSlidingWindowLayer" else 0)
                rest = sum(v["bytes"] for k, v in tensors.items() if k not in ("keys", "values"))
                assert ours == window + rest, (name, run["N"], phase, measured["cache_layer_class"])
                seen += 1
    assert seen >= 12


STATE = load_json("hf_state_bytes.json")


@pytest.mark.parametrize("name", sorted(STATE))
def test_state_of_rwkv_and_recurrent_gemma_equals_transformers(name):
    # Source: tests/fixtures/hf_state_bytes.json (tests/fixtures/measure_state.py; transformers 5.24,
    # bf16, class defaults at small widths): RWKV's five (b, h) state tensors per layer (two token-shift
    # vectors in the model dtype, num / den / max in fp32) and RecurrentGemma's per-block conv window
    # (K - 1 inputs) and fp32 RG-LRU state, plus its local-attention layers' DynamicCache (window 16),
    # after prefills of 12 and 40 tokens and as many decode steps. Tolerance: exact, per layer.
    r = STATE[name]
    spec = _spec(r["config_file"])
    for run in r["runs"]:
        for phase in ("prefill", "decode"):
            ctx = run["N"] * (1 if phase == "prefill" else 2)
            for i, (layer, measured) in enumerate(zip(spec["layers"], run[phase])):
                got = sum(v[2] for v in measured.values())
                if phase == "prefill" and got > sum(v[2] for v in run["decode"][i].values()):
                    got = sum(v[2] for v in run["decode"][i].values())  # the windowed layer's transient, as above
                assert _ours(layer, context=ctx, batch=r["batch"], dtype_bytes=r["dtype_bytes"]) == got, (
                    name, run["N"], phase, i)
