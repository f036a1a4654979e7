"""Sanity checks on the committed ground-truth fixtures (no torch needed).

The numbers themselves were produced by tests/fixtures/measure_params.py and
measure_flops.py (real transformers model classes, torch FlopCounterMode); these tests only
check that the files are whole and self-consistent, and that a few totals match figures
published by the model authors.
"""
import json
import math
from pathlib import Path

FIX = Path(__file__).resolve().parent / "fixtures"
WRAPPER_PARTS = ("vision_tower", "multi_modal_projector", "audio_tower", "audio_projector")


def _load(name):
    return json.loads((FIX / name).read_text())


def test_every_config_has_a_count_and_a_source_line():
    counts = _load("hf_param_counts.json")
    sources = (FIX / "configs" / "SOURCES.md").read_text()
    for cfg in (FIX / "configs").glob("*.json"):
        assert cfg.stem in counts and "error" not in counts[cfg.stem], cfg.stem
        assert f"| {cfg.name} |" in sources, cfg.name


def test_param_breakdown_adds_up():
    for name, r in _load("hf_param_counts.json").items():
        parts = (r["embedding"] + r["position_embedding"] + r["lm_head"] + r["final_norm"]
                 + sum(r["other"].values()) + sum(r["layers"]))
        # For a multimodal wrapper the breakdown covers its language model only.
        assert parts == r.get("language_model_total", r["total"]), name
        assert len(r["layers"]) == r["num_layers"], name
        for d in r["layer_detail"].values():
            unassigned = sum(d.get("unassigned", {}).values())
            assert d["attention"] + d["mlp"] + d["norms"] + unassigned == d["total"], name
            if "routed_experts" in d:
                assert (d["routed_experts"] + d["shared_experts"] + d["router"] + d.get("moe_other", 0)
                        + d.get("dense_mlp", 0)) == d["mlp"], name


def test_layer_detail_covers_every_layer():
    for name, r in _load("hf_param_counts.json").items():
        detail = r["layer_detail"]
        assert sorted(detail, key=int) == [str(i) for i in range(r["num_layers"])], name
        for i, n in enumerate(r["layers"]):
            d = detail[str(i)]
            assert d["total"] == n, (name, i)
            assert sum(d["children"].values()) == n, (name, i)
            kind = r["layer_kinds"][d["kind"]]
            assert i in kind["layers"], (name, i)
            # The recorded parameter names and shapes of the layer's kind add up to the layer.
            assert sum(math.prod(s) for s in kind["shapes"].values()) == n, (name, i)


def test_layer_kinds_partition_the_layers():
    for name, r in _load("hf_param_counts.json").items():
        seen = sorted(i for k in r["layer_kinds"] for i in k["layers"])
        assert seen == list(range(r["num_layers"])), name
        for k in r["layer_kinds"]:
            assert k["shapes"] and {"attention_class", "mlp_class"} <= set(k), name


def test_moe_layers_split_into_whole_experts():
    for name, r in _load("hf_param_counts.json").items():
        moe = [d for d in r["layer_detail"].values() if "routed_experts" in d]
        if moe:
            k = r["routing"]["num_experts_per_tok"]
            assert isinstance(k, int) and k > 0, name
        for d in moe:
            if "num_experts" not in d:
                continue
            # routed = E x one expert, plus expert slices transformers allocates but never runs
            # (LongCat-Flash: gate_up_proj also has rows for its zero-computation experts).
            assert (d["num_experts"] * d["one_expert"] + d.get("experts_allocated_unused", 0)
                    == d["routed_experts"]), name
            assert d["num_experts"] > 0 and d["one_expert"] > 0, name


def test_wrapper_parts_add_up():
    for name, r in _load("hf_param_counts.json").items():
        if "language_model_total" not in r:
            assert "parts" not in r, name
            continue
        assert sum(r["parts"].values()) == r["total"], name
        assert r["language_model_total"] + sum(r[p] for p in WRAPPER_PARTS) == r["total"], name
        assert r["vision_tower"] > 0, name
        for part, kids in r["part_children"].items():
            assert sum(kids.values()) == r["parts"][part], (name, part)


def test_notes_buffers_and_mtp_are_well_formed():
    for name, r in _load("hf_param_counts.json").items():
        assert isinstance(r["not_built"], list) and all(isinstance(s, str) for s in r["not_built"])
        assert "num_experts_per_tok" in r["routing"], name
        for key, b in r["buffers"].items():
            assert b["count"] >= 1 and b["numel_each"] == math.prod(b["shape"]), (name, key)
        mtp = r.get("mtp")
        if mtp:
            assert any(mtp["config_key"] in note for note in r["not_built"]), name
            if mtp["built"]:
                assert sum(mtp["per_layer"]) == mtp["params_excluding_shared_embedding_and_head"], name


def test_published_totals():
    # Source: parameter counts the Hub shows from the safetensors headers of the real
    # checkpoints (Llama-2-7b-hf, Mistral-7B-v0.1, Mixtral-8x7B-v0.1) and GPT-2's 124,439,808
    # (nanoGPT's from_pretrained check). Tolerance: exact.
    counts = _load("hf_param_counts.json")
    assert counts["llama-2-7b"]["total"] == 6_738_415_616
    assert counts["mistral-7b"]["total"] == 7_241_732_096
    assert counts["mixtral-8x7b"]["total"] == 46_702_792_704
    assert counts["gpt2"]["total"] == 124_439_808


def test_flop_fixtures_are_consistent():
    for name, r in _load("hf_flop_counts.json").items():
        assert "error" not in r, name
        assert r["forward_backward_flops"] == r["forward_with_grad_flops"] + r["backward_flops"]
        assert sum(r["forward_by_op"].values()) == r["forward_flops"], name
        assert sum(r["backward_by_op"].values()) == r["backward_flops"], name
        assert (FIX / r["config_file"]).exists(), name


# --- class-default FLOP runs (entries with "model_type"; measure_flops.py DEFAULT_RUNS) ------------

def _default_runs():
    return {n: r for n, r in _load("hf_flop_counts.json").items() if "model_type" in r}


def _top_k(cfg):
    for key in ("num_experts_per_tok", "num_experts_per_token", "moe_k", "moe_topk", "top_k_experts"):
        if cfg.get(key):
            return cfg[key]
    return None


def test_default_runs_are_listed_and_documented():
    runs = _default_runs()
    readme = (FIX / "README.md").read_text()
    assert len(runs) >= 19
    for name, r in runs.items():
        assert f"`{name}`" in readme, name
        cfg = json.loads((FIX / r["config_file"]).read_text())
        assert cfg["model_type"] == r["model_type"], name
        assert cfg["_fixture_note"], name
        n = cfg.get("num_hidden_layers", cfg.get("num_layers")) or len(cfg.get("layers_block_type") or ())
        assert n == r["num_layers"] == (3 if r["model_type"] in ("zamba", "zamba2") else 2), name  # Nemotron-H: only its
        # pattern; Zamba needs two hybrid layers for its shared block (measure_flops.py)
        assert r["config_drift"] == {}, name  # the model held exactly the file's config
        assert r["defaults_of"], name
        assert r["dtype"] == "float32" and r["batch"] == 1, name
        assert r["attn_implementation"] == "eager", name
        for key, change in r["changes_from_defaults"].items():
            if not (isinstance(change["used"], str) and change["used"].startswith("list of ")):
                assert cfg.get(key, "<absent>") == change["used"], (name, key)


def test_every_flop_config_file_has_an_entry():
    counts = _load("hf_flop_counts.json")
    files = {r["config_file"] for r in counts.values()}
    for path in (FIX / "flops").glob("*.config.json"):
        assert f"flops/{path.name}" in files, path.name


def _direct(mods, prefix, key):
    rel = key[len(prefix):].split(".")
    return len(rel) == 1 or (len(rel) == 2 and rel[1].isdigit() and prefix + rel[0] not in mods)


def test_default_runs_module_breakdown_adds_up():
    for name, r in _default_runs().items():
        mods = r["forward_by_module"]
        # every matmul of these forwards runs inside the model body or the lm_head
        assert sum(v for k, v in mods.items() if "." not in k) == r["forward_flops"], name
        layers = r["layers_path"]
        per_layer = [mods.get(f"{layers}.{i}", 0) for i in range(r["num_layers"])]
        body = mods.get("model", mods.get("backbone", mods.get("rwkv")))  # Mamba: `backbone`, RWKV: `rwkv`
        assert all(per_layer) and sum(per_layer) <= body, name
        cfg = json.loads((FIX / r["config_file"]).read_text())
        # DeepSeek-V4's decoder layer runs comb^T @ streams itself (two per layer, 2 s hc^2 h each)
        # (GLM-5-Next's layer mixes its streams the same way)
        own = (2 * 2 * r["seq"] * cfg["hc_mult"] ** 2 * cfg["hidden_size"]
               if r["model_type"] in ("deepseek_v4", "glm5_next_text") else 0)
        # Gemma 3n's AltUp runs as methods (predict, correct), not as a module call: the layer runs its
        # prediction bmm (2 s n^2 h) itself, and altup's children count as the layer's own
        if r["model_type"] == "gemma3n_text":
            own = 2 * r["seq"] * cfg["altup_num_inputs"] ** 2 * cfg["hidden_size"]
        for i, total in enumerate(per_layer):
            prefix = f"{layers}.{i}."
            # direct children, and the members of a child ModuleList (LongCat's mlps.0, self_attn.1)
            children = {k: v for k, v in mods.items() if k.startswith(prefix) and (
                _direct(mods, prefix, k) or k.startswith(prefix + "altup.") and k.count(".") == prefix.count(".") + 1)}
            assert sum(children.values()) + own == total, (name, i)


def test_default_runs_expert_picks_are_tokens_times_top_k():
    for name, r in _default_runs().items():
        cfg = json.loads((FIX / r["config_file"]).read_text())
        for module, picks in r["expert_picks"].items():
            if "picks" in picks:
                assert picks["picks"] == r["batch"] * r["seq"] * _top_k(cfg), (name, module)
                assert picks["picks_on_real_experts"] <= picks["picks"], (name, module)


def test_binding_windows_and_index_top_k_do_not_change_eager_flops():
    # measure_flops.py re-ran each forward with a window / chunk / index top-k that binds (or, for the
    # seq-4096 run, one that does not): the masks changed, the counted FLOPs did not.
    seen = 0
    for name, r in _default_runs().items():
        for kind, check in r.get("binding_checks", {}).items():
            seen += 1
            assert check["forward_flops"] == r["forward_flops"], (name, kind)
            cfg = json.loads((FIX / r["config_file"]).read_text())
            if kind == "window" and "sliding_attention" not in (cfg.get("layer_types") or ["sliding_attention"]):
                continue  # the config sets a window but has no sliding layer (LFM3's conv + full run)
            if kind == "window" and not check["attn_mask_is_causal"]:
                continue  # RecurrentGemma's local attention masks inside its block: no mask the probe sees
            if kind == "window":
                assert False in check["attn_mask_is_causal"].values(), name
                assert all(r["attn_mask_is_causal"].values()), name  # at seq 128 no window binds
    assert seen >= 9


def test_indexer_runs_forward_only():
    for name, r in _default_runs().items():
        if "indexer" not in r:
            continue
        assert r["indexer"]["backward_flops"] == {}, name  # @torch.no_grad: no backward matmuls
        cfg = json.loads((FIX / r["config_file"]).read_text())
        for call in r["indexer"]["calls"].values():
            keys = call["keys"]
            if r["model_type"] == "deepseek_v4":  # it picks among the compressed entries, one per rate tokens
                keys = r["seq"] // cfg["compress_rates"]["compressed_sparse_attention"]
            if r["model_type"] == "glm5_next_text":  # top-k // P pools of P keys and a tail of P - 1, -1 padded
                assert call["topk_indices_shape"][-1] == call["index_topk"] + cfg["index_kpool"] - 1, name
                continue
            assert call["topk_indices_shape"][-1] == min(call["index_topk"], keys), name
        fwd_indexer = sum(sum(ops.values()) for ops in r["indexer"]["forward_by_op"].values())
        if "convolution" in r["forward_by_op"]:  # GLM-5-Next's KDA layer: its chunked eager algorithm's backward
            mm = sum(ops.get("mm", 0) for ops in r["indexer"]["forward_by_op"].values())  # is not 2 x (its bmm's,
            assert r["backward_by_op"]["mm"] == 2 * (r["forward_by_op"]["mm"] - mm), name  # grouped conv): the mm's
            continue
        assert r["backward_flops"] == 2 * (r["forward_flops"] - fwd_indexer), name
