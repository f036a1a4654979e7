"""Today's families, exact to the parameter, layer by layer, against transformers 5.23 on the meta
device (tests/fixtures/hf_param_counts.json, made by tests/fixtures/measure_params.py from the
configs in tests/fixtures/configs/, provenance in configs/SOURCES.md). Tolerance: exact.

What is compared:
- total: the model's parameters (multimodal wrappers: the language model, head included);
- every decoder layer's own count, in order (so each layer's kind is right, not only the sum);
- active per token: the measured total less, on each MoE layer, the (E - k) experts a token does
  not run, each of the measured size of one expert (k from the config; PhiMoE's router always
  takes 2; LongCat-Flash's k E / (E + Z) with Z zero-computation experts: our convention, stated).
Two documented differences from the meta-device build, both about weights the checkpoint does not
hold: LongCat-Flash's gate_up_proj rows for zero experts (recorded per layer by the fixture as
experts_allocated_unused), and Mistral-Small-3.1's head, which transformers 5 ties at build time
(Mistral3Config defaults tie_word_embeddings to True; the published config does not set it) while
the checkpoint ships its own lm_head (V x h), which from_pretrained keeps (its model card: 24 B).
"""
import json

import pytest

from conftest import config_path, exit_code_and_stderr, load_json, run_main
from calc_transformer_params import main

COUNTS = load_json("hf_param_counts.json")


def _model_type(name):
    cfg = json.load(open(config_path(name)))
    return cfg.get("model_type"), (cfg.get("text_config") or {}).get("model_type"), cfg


FAMILIES = sorted(n for n, r in COUNTS.items() if "error" not in r)


def _ours(name):
    res, _, err = run_main(main, ["--hf_model_name_or_path", config_path(name), "--json"])
    kinds = res["layer_kinds"]
    per_layer = [kinds[k]["params_per_layer"] for k in res["model"]["layer_kind_of_layer"]]
    return res, per_layer


def _expected(name):
    r = COUNTS[name]
    _, _, cfg = _model_type(name)
    total = r.get("language_model_total", r["total"])
    unused = [r["layer_detail"][str(i)].get("experts_allocated_unused", 0) for i in range(r["num_layers"])]
    layers = [n - u for n, u in zip(r["layers"], unused)]
    total -= sum(unused)
    if name == "mistral-small-3.1-24b-instruct-2503":  # see the module docstring
        text = cfg["text_config"]
        total += text["vocab_size"] * text["hidden_size"]
    return total, layers


def test_there_are_fixtures_for_every_named_type():
    types = {COUNTS[n].get("model_type") for n in FAMILIES}
    for mt in ("gpt_oss", "llama4_text", "gemma3_text", "gemma4_text", "glm4_moe", "glm_moe_dsa",
               "deepseek_v32", "minimax_m2", "ernie4_5_moe", "hy_v3", "longcat_flash", "olmo3", "smollm3",
               "seed_oss", "exaone4", "cohere2", "granitemoe", "phimoe", "gemma3", "gemma4", "llama4",
               "mistral3", "kimi_k25", "mistral_large4"):
        assert mt in types, mt


@pytest.mark.parametrize("name", FAMILIES)
def test_total_and_every_layer_exact(name):
    res, per_layer = _ours(name)
    total, layers = _expected(name)
    assert res["total_params"] == total, (name, res["total_params"] - total)
    assert per_layer == layers, name


@pytest.mark.parametrize("name", FAMILIES)
def test_active_params_from_measured_experts(name):
    r = COUNTS[name]
    res, _ = _ours(name)
    total, _ = _expected(name)
    routing = r.get("routing") or {}
    inactive = 0.0
    for i in range(r["num_layers"]):
        d = r["layer_detail"][str(i)]
        E = d.get("num_experts")
        if not E or not d.get("routed_experts"):
            continue
        k = 2 if r.get("model_type") == "phimoe" else next(
            routing[key] for key in ("num_experts_per_tok", "moe_k", "top_k_experts", "moe_topk") if routing.get(key))
        Z = routing.get("zero_expert_num") or 0
        inactive += (E - k * E / (E + Z)) * d["one_expert"]
    assert res["active_params"] == total - round(inactive), name


def test_deepseek_v4_training_comm_and_its_limits():
    # DeepSeek-V4 (published V4-Flash config): parameters, FLOPs, inference cache and latency are
    # described (tests elsewhere). Its training communication: the pipeline hands over all hc_mult
    # residual streams (4 x the b s h activation of a plain model); context parallelism over its
    # compressed attention is not modelled, so -cp > 1 is one line, exit 2, not a wrong number.
    import calc_comm
    argv = ["--train", "--hf_model_name_or_path", config_path("deepseek-v4-flash"), "--num-gpus", "16",
            "-tp", "2", "-pp", "2", "-dp", "4", "--json"]
    res, _, _ = run_main(calc_comm.main, argv)
    pp_row = next(r for r in res["rows"] if r["parallelism"] == "PP")
    tp_row = next(r for r in res["rows"] if r["parallelism"] == "TP")
    assert pp_row["size_bytes"] == 4 * tp_row["size_bytes"]  # hc_mult streams vs one block output
    code, err = exit_code_and_stderr(calc_comm.main, argv[:-1] + ["-cp", "2", "-dp", "2"])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not modelled" in err


def test_issue_examples_no_longer_wrong():
    """The reliability issue's examples, read from their published configs (SOURCES.md): each is now
    exact against transformers (the fixtures above), and none is read as Llama-style."""
    for name in ("gemma-4-e2b-it", "deepseek-v3.2", "c4ai-command-r7b-12-2024", "exaone-4.0-32b",
                 "glm-4.5", "qwen3-30b-a3b-tf5"):
        res, _ = _ours(name)
        assert not any("Llama-style" in w for w in res["warnings"]), name
        assert res["total_params"] == _expected(name)[0], name


def test_multimodal_says_towers_are_not_counted():
    res, _ = _ours("llama-4-scout-17b-16e")
    assert any("vision tower" in w and "not counted" in w for w in res["warnings"])


def test_mtp_layers_are_stated():
    res, _ = _ours("deepseek-v3")
    assert any("multi-token-prediction" in w for w in res["warnings"])


@pytest.mark.parametrize("model_type", ["plamo2"])
def test_families_not_described_yet_exit_2_not_a_wrong_count(model_type, tmp_path):
    # Real transformers families whose layers the block does not describe yet: one line, exit 2.
    cfg = dict(json.load(open(config_path("llama-3-8b"))), model_type=model_type)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    code, err = exit_code_and_stderr(main, ["--hf_model_name_or_path", str(path)])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "linear-attention or state-space" in err


@pytest.mark.parametrize("name,k", [("gemma-4-e2b-it-text", 4), ("mistral_large4-kv-sharing-variant", 4),
                                    ("qwen3.5-35b-a3b-text", 5), ("nemotron-3-nano-30b-a3b", 7),
                                    ("kimi_linear-checkpoint-layout", 5), ("jamba-class-defaults", 6),
                                    ("longcat_flash-class-defaults", 3), ("deepseek-v4-flash", 4)])
def test_num_layers_flag_keeps_the_configs_first_layers(name, k):
    # `-l k` describes the config's first k layers, each exactly as transformers builds it in the
    # full model (hf_param_counts.json, per layer): a review found Gemma 4's last-layers KV sharing
    # applied to a cut copy's every layer, and Mistral Large 4's kv_source_layers refused.
    res, _, _ = run_main(main, ["--hf_model_name_or_path", config_path(name), "-l", str(k), "--json"])
    kinds = res["layer_kinds"]
    per_layer = [kinds[i]["params_per_layer"] for i in res["model"]["layer_kind_of_layer"]]
    assert per_layer == _expected(name)[1][:k], name


@pytest.mark.parametrize("script", ["calc_transformer_params", "calc_transformer_flops"])
def test_num_dense_layers_on_a_config_keeps_every_later_layer_moe(script):
    # DeepSeek-V3 (published config: 3 dense layers, then MoE on every layer). --num-dense-layers 5
    # redraws the dense prefix; the layers after it stay MoE on every layer, as the config has them,
    # not every other layer (the flops script's cookbook -ei 2 default is for models from flags).
    import importlib
    mod = importlib.import_module(script)
    res, _, _ = run_main(mod.main, ["--hf_model_name_or_path", config_path("deepseek-v3"),
                                    "--num-dense-layers", "5", "--json"])
    assert res["model"]["moe_layers"] == list(range(5, 61))


@pytest.mark.parametrize("flag", ["--head-dim", "--num-kv-heads"])
def test_a_per_layer_geometry_flag_on_gemma4_is_one_line_not_ignored(flag):
    # Gemma 4 sets head_dim and kv heads layer by layer (sliding 256 / global 512): a global flag
    # cannot apply to those layers "as given", and used to be ignored silently (review finding).
    code, err = exit_code_and_stderr(main, ["--hf_model_name_or_path", config_path("gemma-4-e2b-it-text"),
                                            flag, "2"])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "layer by layer" in err
