"""Checks on tests/fixtures/hf_cache_bytes.json (no torch needed).

The fixture was produced by tests/fixtures/measure_cache.py: transformers 5.23.0's own
DynamicCache / StaticCache, read after a prefill of N tokens and after N one-token decode steps,
for small copies of real layer shapes (configs in tests/fixtures/cache/). These tests check that
the file is whole and self-consistent, and that the per-kind rules written in
tests/fixtures/README.md ("What transformers' KV cache holds") reproduce every cached tensor shape
in it from the config fields alone. Tolerance: exact.
"""
import json
import math
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parent / "fixtures"
DATA = json.loads((FIX / "hf_cache_bytes.json").read_text())
META = DATA["_meta"]
ENTRIES = {k: v for k, v in DATA.items() if k != "_meta"}
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "int64": 8, "int32": 4}
MAIN_TENSORS = ("keys", "values", "indexer_keys", "conv_states.0", "recurrent_states.0",
                "conv_states.1", "conv_states.2", "conv_states.3") + tuple(
    f"{a}.{b}" for a in ("compressed_kv", "buffer_kv", "buffer_gate", "overlap_kv", "overlap_gate")
    for b in ("compressor", "indexer"))  # DeepSeek-V4's compressor state


def _config(entry):
    return json.loads((FIX / entry["config_file"]).read_text())


def _snapshots(entry):
    for run in entry["runs"]:
        yield run, "prefill", run["prefill"]
        yield run, "decode", run["decode"]


def test_meta_and_every_entry_is_whole():
    assert META["transformers"] and META["torch"]
    assert META["N_values"] == [12, 40]
    assert len(ENTRIES) >= 16
    for name, e in ENTRIES.items():
        for key in ("model_type", "config_file", "dtype", "dtype_bytes", "batch", "cache", "layer_kinds", "runs"):
            assert key in e, (name, key)
        assert (FIX / e["config_file"]).exists(), name
        cfg = _config(e)
        assert cfg["model_type"] == e["model_type"], name
        assert DTYPE_BYTES[e["dtype"]] == e["dtype_bytes"], name
        assert [r["N"] for r in e["runs"]] == META["N_values"], name
        L = (cfg.get("num_hidden_layers") or len(cfg["layers_block_type"]))
        assert len(e["layer_kinds"]) == L, name
        if cfg.get("layer_types"):
            assert [k.split(" ")[0] for k in e["layer_kinds"]] == cfg["layer_types"], name
        for run, phase, snap in _snapshots(e):
            assert len(snap["layers"]) == L, (name, phase)
            assert snap["context_tokens"] == (run["N"] if phase == "prefill" else 2 * run["N"]), name
            kept = run["kept_tokens"]
            assert kept["context_by_call"] == list(range(run["N"], 2 * run["N"] + 1)), name
            assert len(kept["layers"]) == L, name


def test_bytes_are_shape_times_dtype_and_sums_add_up():
    for name, e in ENTRIES.items():
        for run, phase, snap in _snapshots(e):
            total = total_storage = 0
            for i, layer in enumerate(snap["layers"]):
                where = (name, run["N"], phase, i)
                for t in list(layer["tensors"].values()) + list(layer.get("bookkeeping", {}).values()):
                    assert t["bytes"] == math.prod(t["shape"]) * DTYPE_BYTES[t["dtype"]], where
                    assert t["storage_bytes"] >= t["bytes"], where
                assert layer["bytes"] == sum(t["bytes"] for t in layer["tensors"].values()), where
                storages = [t["storage_bytes"] for t in layer["tensors"].values()]
                assert layer["bytes"] <= layer["storage_bytes"] <= sum(storages), where
                if "bookkeeping" in layer:
                    assert layer["bookkeeping_bytes"] == sum(t["bytes"] for t in layer["bookkeeping"].values())
                for t in ("keys", "values", "indexer_keys"):
                    if t in layer["tensors"]:  # dots3's indexer keys: fp32 in transformers 5.24 (fp32 rotary)
                        want = "float32" if (e["model_type"], t) == ("dots3_note_text", "indexer_keys") else e["dtype"]
                        assert layer["tensors"][t]["dtype"] == want, where
                total += layer["bytes"]
                total_storage += layer["storage_bytes"]
            assert snap["bytes"] == total, (name, phase)
            assert snap["storage_bytes"] == total_storage, (name, phase)
            # kept_tokens' first and last calls are the prefill and decode snapshots
            k = run["kept_tokens"]["layers"]
            col = 0 if phase == "prefill" else -1
            for i, layer in enumerate(snap["layers"]):
                if "keys" in layer["tensors"]:
                    assert k[i]["keys"][col] == layer["tensors"]["keys"]["shape"][-2]
                if "indexer_keys" in layer["tensors"]:
                    assert k[i]["indexer_keys"][col] == layer["tensors"]["indexer_keys"]["shape"][1]


def _layer_geometry(cfg, i):
    """(kv heads, head_dim) of layer i: per_layer_config overrides (Gemma 4), else the globals."""
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads") or heads
    d = cfg.get("head_dim") or cfg["hidden_size"] // heads
    over = (cfg.get("per_layer_config") or {}).get(str(i), {})
    return over.get("num_key_value_heads", kv), over.get("head_dim", d)


def _expected(cfg, entry, i, context):
    """The README's rule for DynamicCache: {tensor: shape} that layer i's cache holds at `context`."""
    b, kind = entry["batch"], entry["layer_kinds"][i]
    L = (cfg.get("num_hidden_layers") or len(cfg["layers_block_type"]))
    if cfg.get("num_kv_shared_layers") and i >= L - cfg["num_kv_shared_layers"]:
        return {}  # KV-sharing consumer: a DummyLayer, nothing cached
    if cfg["model_type"] == "deepseek_v4":  # the window's K = V (one head), then the compressor's state
        W, d = cfg["sliding_window"], cfg["head_dim"]
        t = min(context, W - 1)
        shapes = {"keys": [b, 1, t, d], "values": [b, 1, t, d]}
        if kind == "sliding_attention":
            return shapes
        m = cfg["compress_rates"][kind]
        q, r = divmod(context, m)
        csa = kind == "compressed_sparse_attention"
        parts = {"compressor": d}
        if csa:
            parts["indexer"] = cfg["index_head_dim"]
        for name, w in parts.items():
            shapes[f"compressed_kv.{name}"] = [b, q, w]
            shapes[f"buffer_kv.{name}"] = shapes[f"buffer_gate.{name}"] = [b, r, 2 * w if csa else w]
            if csa and context >= m:
                shapes[f"overlap_kv.{name}"] = shapes[f"overlap_gate.{name}"] = [b, m, w]
        return shapes
    if cfg["model_type"] in ("kimi_linear", "bailing_hybrid", "glm5_next_text") and kind.startswith("linear_attention"):
        # KDA: 3 D x K, H x d x d
        H, d = cfg["linear_num_heads"], cfg["linear_head_dim"]
        return {"conv_states.0": [b, 3 * H * d, cfg["linear_conv_kernel_dim"]], "recurrent_states.0": [b, H, d, d]}
    if cfg.get("kv_lora_rank"):  # MLA: the compressed latent and the shared rope key, one "head"
        r_kv = (cfg.get("per_layer_config") or {}).get(str(i), {}).get("kv_lora_rank", cfg["kv_lora_rank"])
        t = min(context, cfg["sliding_window"] - 1) if kind.startswith("sliding") else context  # dots3's SWA MLA
        shapes = {"keys": [b, 1, t, r_kv], "values": [b, 1, t, cfg["qk_rope_head_dim"]]}
        if "indexed_attention" in kind and "(indexer: shared)" not in kind:  # GLM-5-Next packs key, gate score, flag
            dI = cfg["index_head_dim"]
            shapes["indexer_keys"] = [b, context, 2 * dI + 1 if cfg["model_type"] == "glm5_next_text" else dI]
        return shapes
    mt = cfg["model_type"]
    if mt in ("inkling_text", "inkling2_text"):  # K/V (swa_* geometry on sliding layers) + 4 conv windows
        sliding = kind == "hybrid_sliding"
        kv = cfg["swa_num_key_value_heads"] if sliding else cfg["num_key_value_heads"]
        d = cfg["swa_head_dim"] if sliding else cfg["head_dim"]
        t = min(context, cfg["sliding_window_size"] - 1) if sliding else context
        K, h = cfg["conv_kernel_size"], cfg["hidden_size"]
        return {"keys": [b, kv, t, d], "values": [b, kv, t, d], "conv_states.0": [b, kv * d, K],
                "conv_states.1": [b, kv * d, K], "conv_states.2": [b, h, K], "conv_states.3": [b, h, K]}
    if mt == "zaya":  # K/V + the q/k convolution window ((a + kv) d, t0 + t1 - 2 taps) and the delayed v half
        a, kv, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        return {"keys": [b, kv, context, d], "values": [b, kv, context, d],
                "conv_states.0": [b, (a + kv) * d, cfg["cca_time0"] + cfg["cca_time1"] - 2],
                "recurrent_states.0": [b, kv * d // 2]}
    if mt in ("mamba", "falcon_mamba"):  # Mamba-1 only: E x K conv window, E x N state
        E = cfg["intermediate_size"]
        return {"conv_states.0": [b, E, cfg["conv_kernel"]], "recurrent_states.0": [b, E, cfg["state_size"]]}
    if mt in ("zamba", "zamba2"):  # Mamba (1: E x K window, heads x E/heads x N state; 2: as Nemotron-H's),
        h = cfg["hidden_size"]  # and on hybrid layers the shared block's K and V as well
        E = int(cfg["mamba_expand"] * h)
        if mt == "zamba":
            nh = cfg["n_mamba_heads"]
            shapes = {"conv_states.0": [b, E, cfg["mamba_d_conv"]],
                      "recurrent_states.0": [b, nh, E // nh, cfg["mamba_d_state"]]}
        else:
            H, G, N = cfg["n_mamba_heads"], cfg["mamba_ngroups"], cfg["mamba_d_state"]
            shapes = {"conv_states.0": [b, E + 2 * G * N, cfg["mamba_d_conv"]],
                      "recurrent_states.0": [b, H, cfg["mamba_headdim"], N]}
        if kind == "hybrid":
            kv, d = cfg["num_key_value_heads"], cfg["attention_head_dim"]
            shapes.update(keys=[b, kv, context, d], values=[b, kv, context, d])
        return shapes
    if mt == "minimax" and kind == "linear_attention":  # lightning attention: an H x d x d state
        H = cfg["num_attention_heads"]
        d = cfg.get("head_dim") or cfg["hidden_size"] // H
        return {"recurrent_states.0": [b, H, d, d]}
    if mt == "mamba2":  # Mamba-2 only: conv over x, B, C and an H x P x N state
        H, P, G, N = cfg["num_heads"], cfg["head_dim"], cfg["n_groups"], cfg["state_size"]
        return {"conv_states.0": [b, H * P + 2 * G * N, cfg["conv_kernel"]], "recurrent_states.0": [b, H, P, N]}
    if mt == "lfm2" and kind == "conv":  # short conv: h x L window
        return {"conv_states.0": [b, cfg["hidden_size"], cfg["conv_L_cache"]]}
    if mt == "mimo_v2_flash":  # values narrower than keys; sliding layers with twice the K/V heads
        sliding = kind.startswith("sliding")
        kv = cfg["num_key_value_heads"] * (2 if sliding else 1)
        t = min(context, cfg["sliding_window"] - 1) if sliding else context
        return {"keys": [b, kv, t, cfg["head_dim"]], "values": [b, kv, t, cfg["v_head_dim"]]}
    if mt in ("nemotron_h", "granitemoehybrid", "falcon_h1", "bamba") and kind in ("linear_attention", "hybrid", "mamba"):
        # Mamba-2: conv window (K of d_in + 2 G N channels) and an H x P x N state
        if mt == "nemotron_h":
            H, P, G, N, K = (cfg["mamba_num_heads"], cfg["mamba_head_dim"], cfg["n_groups"], cfg["ssm_state_size"],
                             cfg["conv_kernel"])
        else:
            d_in = cfg.get("mamba_d_ssm") or int(cfg["mamba_expand"] * cfg["hidden_size"])
            H, G, N, K = cfg["mamba_n_heads"], cfg["mamba_n_groups"], cfg["mamba_d_state"], cfg["mamba_d_conv"]
            P = d_in // H if cfg["mamba_d_head"] == "auto" else cfg["mamba_d_head"]
        shapes = {"conv_states.0": [b, H * P + 2 * G * N, K], "recurrent_states.0": [b, H, P, N]}
        if kind == "hybrid":  # Falcon-H1: the same layer also holds the attention's K and V
            kv, d = _layer_geometry(cfg, i)
            shapes.update(keys=[b, kv, context, d], values=[b, kv, context, d])
        return shapes
    if mt in ("nemotron_h",) and kind in ("moe", "mlp"):
        return {}  # an MLP-only block caches nothing
    if mt == "jamba" and kind == "linear_attention":  # Mamba-1: E x K conv window, E x N state
        E = int(cfg["mamba_expand"] * cfg["hidden_size"])
        return {"conv_states.0": [b, E, cfg["mamba_d_conv"]], "recurrent_states.0": [b, E, cfg["mamba_d_state"]]}
    if mt == "lfm3" and kind == "conv":  # short conv: h x L window, no recurrent state
        return {"conv_states.0": [b, cfg["hidden_size"], cfg["conv_L_cache"]]}
    if kind == "linear_attention":  # Gated DeltaNet: conv window (K of conv_dim) and H_v x d_k x d_v
        hk, hv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
        dk, dv = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"]
        return {"conv_states.0": [b, 2 * hk * dk + hv * dv, cfg["linear_conv_kernel_dim"]],
                "recurrent_states.0": [b, hv, dk, dv]}
    kv, d = _layer_geometry(cfg, i)
    if kind.startswith("sliding_attention") or kind.startswith("chunked_attention"):
        w = cfg["sliding_window"] if kind.startswith("sliding") else cfg["attention_chunk_size"]
        t = min(context, w - 1)
    else:
        t = context
    return {"keys": [b, kv, t, d], "values": [b, kv, t, d]}


@pytest.mark.parametrize("name", sorted(n for n, e in ENTRIES.items() if e["cache"].startswith("DynamicCache")))
def test_dynamic_cache_shapes_follow_the_readme_rules(name):
    e = ENTRIES[name]
    cfg = _config(e)
    for run, phase, snap in _snapshots(e):
        for i, layer in enumerate(snap["layers"]):
            want = _expected(cfg, e, i, snap["context_tokens"])
            got = {k: v["shape"] for k, v in layer["tensors"].items() if k in MAIN_TENSORS}
            assert got == want, (name, run["N"], phase, i)
            # every decode step too: the kept-token trace follows the same rule at each context
            for j, ctx in enumerate(run["kept_tokens"]["context_by_call"]):
                want_j = _expected(cfg, e, i, ctx)
                trace = run["kept_tokens"]["layers"][i]
                if "keys" in want_j:
                    assert trace["keys"][j] == want_j["keys"][-2], (name, i, ctx)
                if "indexer_keys" in want_j:
                    assert trace["indexer_keys"][j] == want_j["indexer_keys"][1], (name, i, ctx)


def test_sliding_and_chunked_storage_is_larger_than_the_view():
    """A sliding/chunked layer's keys are a slice of the torch.cat result: after a prefill of N
    the storage still holds all N tokens; after a decode step it holds min(context, W) tokens."""
    seen = 0
    for name, e in ENTRIES.items():
        if not e["cache"].startswith("DynamicCache"):
            continue
        cfg = _config(e)
        for run, phase, snap in _snapshots(e):
            for i, layer in enumerate(snap["layers"]):
                if layer["cache_layer_class"] != "DynamicSlidingWindowLayer":
                    continue
                kind = e["layer_kinds"][i]
                w = cfg["sliding_window"] if kind.startswith("sliding") else cfg["attention_chunk_size"]
                k = layer["tensors"]["keys"]
                per_token = k["bytes"] // k["shape"][-2]
                tokens = run["N"] if phase == "prefill" else min(snap["context_tokens"], w)
                assert k["storage_bytes"] == tokens * per_token, (name, phase, i)
                seen += 1
    assert seen > 50


def test_static_cache_preallocates():
    """StaticCache: full layers hold max_cache_len tokens, sliding layers min(W, max_cache_len),
    indexer keys max_cache_len, from the first call on, whatever the context."""
    for name, e in ENTRIES.items():
        if not e["cache"].startswith("StaticCache"):
            continue
        cfg, m, b = _config(e), META["static_max_cache_len"], e["batch"]
        for run, phase, snap in _snapshots(e):
            for i, layer in enumerate(snap["layers"]):
                got = {k: v["shape"] for k, v in layer["tensors"].items() if k in MAIN_TENSORS}
                kind = e["layer_kinds"][i]
                if cfg.get("kv_lora_rank"):
                    want = {"keys": [b, 1, m, cfg["kv_lora_rank"]], "values": [b, 1, m, cfg["qk_rope_head_dim"]],
                            "indexer_keys": [b, m, cfg["index_head_dim"]]}
                else:
                    kv, d = _layer_geometry(cfg, i)
                    t = min(m, cfg["sliding_window"]) if kind.startswith("sliding") else m
                    want = {"keys": [b, kv, t, d], "values": [b, kv, t, d]}
                assert got == want, (name, phase, i)


@pytest.mark.parametrize("variant,base,factor", [
    ("gemma3-text@batch2", "gemma3-text", 2),
    ("deepseek-v3.2@batch2", "deepseek-v3.2", 2),
    ("llama-3-8b@float32", "llama-3-8b", 2),
])
def test_bytes_scale_with_batch_and_dtype(variant, base, factor):
    for rv, rb in zip(ENTRIES[variant]["runs"], ENTRIES[base]["runs"]):
        for phase in ("prefill", "decode"):
            assert rv[phase]["bytes"] == factor * rb[phase]["bytes"], (variant, phase)
            assert rv[phase]["storage_bytes"] == factor * rb[phase]["storage_bytes"], (variant, phase)
