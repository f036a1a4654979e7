"""Sanity checks on the committed ground-truth fixtures (no torch needed).

The numbers themselves were produced by tests/fixtures/measure_params.py and
measure_flops.py (real transformers model classes, torch FlopCounterMode); these tests only
check that the files are whole and self-consistent, and that a few totals match figures
published by the model authors.
"""
import json
from pathlib import Path

FIX = Path(__file__).resolve().parent / "fixtures"


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
        assert parts == r["total"], name
        assert len(r["layers"]) == r["num_layers"], name
        for d in r["layer_detail"].values():
            assert d["attention"] + d["mlp"] + d["norms"] == d["total"], name
            if "routed_experts" in d:
                assert d["routed_experts"] + d["shared_experts"] + d["router"] == d["mlp"], name


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
