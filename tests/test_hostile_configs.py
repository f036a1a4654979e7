"""Hostile config.json files: every script either answers with finite, non-negative numbers or
says what is wrong in exactly one line (exit 2). Never a traceback, NaN, infinity, a negative
size or a silently wrong number.

Property test (hypothesis): start from a real fixture config, mutate one or two fields (wrong
type, null, negative, zero, NaN, Infinity, huge, fractional, string, list, nested), write it,
run each script's main on it with --json."""
import contextlib
import io
import json
import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import check_run, config_path, load_json, run_main

SCRIPTS = ["calc_transformer_params", "calc_transformer_flops", "calc_transformer_mem",
           "calc_inference_latency", "calc_comm", "calc_training_time"]
EXTRA_ARGS = {"calc_training_time": ["-s", "512", "--num-gpus", "8", "-tp", "2"],"calc_comm": ["--train", "--num-gpus", "16", "-tp", "2", "-dp", "8"],
              "calc_transformer_mem": ["-s", "512"], "calc_inference_latency": ["--prompt-tokens", "256"],
              "calc_transformer_flops": ["-s", "512"]}
BASES = ["gpt2", "opt-350m", "mixtral-8x7b", "deepseek-v3", "gemma-2-9b", "qwen3-30b-a3b",
         "falcon-7b", "qwen1.5-moe-a2.7b", "llama-3-8b",
         # today's families, each with its own reader (a review found crashes the list above missed)
         "longcat_flash-class-defaults", "mistral_large4-kv-sharing-variant", "gemma-4-26b-a4b",
         "gemma-4-e2b-it-text", "gpt-oss-20b", "hy_v3-class-defaults", "ernie-4.5-21b-a3b-pt",
         "deepseek-v3.2", "glm-5", "llama-4-scout-17b-16e", "gemma-3-27b-it",
         # Gated DeltaNet hybrids (issue 15)
         "qwen3.5-35b-a3b", "qwen3-next-80b-a3b-thinking", "qwen3.5-27b-text", "olmo_hybrid-variant",
         "nemotron-3-nano-30b-a3b", "granitemoehybrid-class-defaults", "falcon_h1-class-defaults",
         "jamba-variant", "lfm3-class-defaults", "kimi_linear-checkpoint-layout", "deepseek-v4-flash",
         "step-3.7-flash-like-legacy",
         # nested-block and state-space readers (review: dbrx's attn_config/ffn_config, LFM2-MoE)
         "dbrx-instruct", "lfm2_moe-class-defaults"]
# Values a careless or hostile config.json holds where a count, switch or size belongs.
NAN, INF = float("nan"), float("inf")
BAD = [None, -1, 0, -4096, NAN, INF, -INF, 1e308, 2 ** 70, 10 ** 400, 3.5, "128", "false", "",
       [1], [], {"a": 1}, True, False, [[[]]], 0.0]
def _fields(cfg):
    keys = [k for k in cfg if not k.startswith("_")]
    if isinstance(cfg.get("text_config"), dict):
        keys += [("text_config", k) for k in cfg["text_config"]]
    return keys


def _set(cfg, key, value):
    if isinstance(key, tuple):
        if isinstance(cfg.get(key[0]), dict):  # an earlier draw may have replaced the section itself
            cfg[key[0]][key[1]] = value
    else:
        cfg[key] = value


@pytest.mark.parametrize("script", SCRIPTS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_configs_answer_or_exit_2(script, data):
    base = data.draw(st.sampled_from(BASES), label="base")
    cfg = json.load(open(config_path(base), encoding="utf-8"))
    for _ in range(data.draw(st.integers(1, 2), label="n")):
        key = data.draw(st.sampled_from(_fields(cfg)), label="field")
        _set(cfg, key, data.draw(st.sampled_from(BAD), label="value"))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "config.json")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(cfg, fh)  # NaN and Infinity written as JS tokens, as a careless tool would
        check_run(script, ["--hf_model_name_or_path", path, "--json"] + EXTRA_ARGS.get(script, []))


def _write(tmp_path, cfg, name="config.json"):
    p = tmp_path / name
    p.write_text(json.dumps(cfg) if not isinstance(cfg, str) else cfg)
    return str(p)


@pytest.mark.parametrize("script", SCRIPTS)
def test_named_hostile_configs(script, tmp_path):
    """The cases the reliability issue lists, one by one: each exits 2 in one line."""
    llama = json.load(open(config_path("llama-3-8b")))
    mixtral = json.load(open(config_path("mixtral-8x7b")))
    opt = json.load(open(config_path("opt-350m")))
    cases = [dict(mixtral, num_local_experts="8"), dict(llama, intermediate_size=NAN),
             dict(llama, intermediate_size=14336.5), dict(llama, model_type=["llama"]),
             dict(opt, max_position_embeddings=None), dict(llama, tie_word_embeddings="false"),
             dict(llama, sliding_window=-4096, model_type="mistral"),
             dict(json.load(open(config_path("gpt2"))), n_positions=-1024),
             dict(json.load(open(config_path("deepseek-v3"))), moe_layer_freq=0),
             dict(llama, layer_types=["full_attention", "banana"] * 16),
             dict(llama, layer_types="full_attention")]
    deep = "[" * 1000 + "]" * 1000
    paths = [_write(tmp_path, c, f"c{i}.json") for i, c in enumerate(cases)]
    paths.append(_write(tmp_path, '{"a": ' + deep + "}", "deep.json"))
    for path in paths:
        argv = ["--hf_model_name_or_path", path, "--json"] + EXTRA_ARGS.get(script, [])
        assert check_run(script, argv) is None, (script, open(path).read()[:200])


def test_expert_spellings(tmp_path):
    """transformers 5 writes Qwen3-MoE's expert count as num_experts or num_local_experts: both read,
    a disagreement exits 2 naming both fields."""
    from calc_transformer_params import main
    cfg = json.load(open(config_path("qwen3-30b-a3b")))
    E = cfg.pop("num_experts")
    res, _, _ = run_main(main, ["--hf_model_name_or_path", _write(tmp_path, dict(cfg, num_local_experts=E), "a.json")])
    # Ground truth: transformers 5.23 on the meta device (tests/fixtures/hf_param_counts.json):
    # total, and active = total - 48 MoE layers x (E - k) x one expert's measured size (the
    # model card says 30.5 B / 3.3 B).
    hf = load_json("hf_param_counts.json")["qwen3-30b-a3b"]
    one = hf["layer_detail"]["0"]["routed_experts"] // E
    active = hf["total"] - hf["num_layers"] * (E - cfg["num_experts_per_tok"]) * one
    assert (res["total_params"], res["active_params"]) == (hf["total"], active)
    path = _write(tmp_path, dict(cfg, num_local_experts=E, num_experts=64), "b.json")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit):
        main(["--hf_model_name_or_path", path])
    assert "num_local_experts" in err.getvalue() and "num_experts" in err.getvalue()


def test_tie_word_embeddings_string_is_not_read_as_tied(tmp_path):
    from calc_transformer_params import main
    cfg = json.load(open(config_path("llama-3-8b")))
    path = _write(tmp_path, dict(cfg, tie_word_embeddings="false"))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exc:
        main(["--hf_model_name_or_path", path])
    assert exc.value.code == 2 and "tie_word_embeddings" in err.getvalue()


# Found by review (one field each, every one a traceback before): the family readers' own fields.
REVIEW_CASES = [
    ("longcat_flash-class-defaults", "moe_topk", None),
    ("longcat_flash-class-defaults", "expert_ffn_hidden_size", None),
    ("longcat_flash-class-defaults", "ffn_hidden_size", None),
    ("mistral_large4-kv-sharing-variant", ("text_config", "kv_lora_rank"), None),
    ("gemma-4-26b-a4b", ("text_config", "num_experts"), 1),
    ("gemma-4-26b-a4b", ("text_config", "intermediate_size"), None),
    ("hy_v3-class-defaults", "moe_intermediate_size", None),
    ("ernie-4.5-21b-a3b-pt", "intermediate_size", None),
    ("gemma-3-27b-it", ("text_config", "model_type"), ["gemma3_text"]),
    ("gpt-oss-20b", "quantization_config", {"quant_method": "mxfp4", "modules_to_not_convert": 5}),
]


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("base,key,value", REVIEW_CASES)
def test_family_reader_fields_answer_or_exit_2(script, base, key, value, tmp_path):
    with open(config_path(base), encoding="utf-8") as fh:
        cfg = json.load(fh)
    _set(cfg, key, value)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    check_run(script, ["--hf_model_name_or_path", str(path)] + EXTRA_ARGS.get(script, []))


# Found by review of the new family readers (fuzzing each field of transformers 5.24's class-default
# configs, tests/fixtures/all_types/): a required field written as null was a traceback before.
ALL_TYPES_CASES = [
    ("all_types/bailing_hybrid.json", "linear_head_dim"), ("all_types/bailing_hybrid.json", "linear_num_heads"),
    ("cache/glm5-next-text.config.json", "linear_head_dim"), ("cache/glm5-next-text.config.json", "linear_num_heads"),
    ("all_types/mamba.json", "time_step_rank"), ("all_types/falcon_mamba.json", "time_step_rank"),
    ("all_types/jetmoe.json", "num_local_experts"), ("all_types/jetmoe.json", "num_key_value_heads"),
    ("all_types/jetmoe.json", "num_experts_per_tok"), ("all_types/lara_mini.json", "linear_key_head_dim"),
    ("all_types/lara_mini.json", "linear_num_key_heads"), ("all_types/lara_mini.json", "linear_num_value_heads"),
]


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("fixture,key", ALL_TYPES_CASES)
def test_new_family_readers_null_fields_answer_or_exit_2(script, fixture, key, tmp_path):
    cfg = load_json(*fixture.split("/"))
    cfg[key] = None
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    check_run(script, ["--hf_model_name_or_path", str(path)] + EXTRA_ARGS.get(script, []))


def test_jetmoe_top_k_past_its_experts_names_the_field(tmp_path):
    from calc_transformer_params import main
    cfg = dict(load_json("all_types", "jetmoe.json"), num_experts_per_tok=99)
    code, err = _exit(main, _write(tmp_path, cfg))
    assert code == 2 and "num_experts_per_tok" in err and len(err.strip().splitlines()) == 1


def _exit(main, path):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exc:
        main(["--hf_model_name_or_path", path])
    return exc.value.code, err.getvalue()


def test_dbrx_without_its_nested_blocks_says_it_took_the_defaults(tmp_path):
    # transformers builds DbrxAttentionConfig() / DbrxFFNConfig() when a block is absent (their
    # defaults: tests/fixtures/all_types/dbrx.json); the count then follows them, and says so
    from calc_transformer_params import main
    cfg = json.load(open(config_path("dbrx-instruct")))
    del cfg["ffn_config"]
    _, _, err = run_main(main, ["--hf_model_name_or_path", _write(tmp_path, cfg)])
    assert "no ffn_config in the config" in err and "attn_config" not in err


def test_dots3_per_layer_config_entry_not_an_object_exits_2(tmp_path):
    # (it was skipped silently: the layer then kept the model-wide heads and latent rank)
    from calc_transformer_params import main
    cfg = dict(load_json("cache", "dots3.config.json"), per_layer_config={"1": "x"})
    code, err = _exit(main, _write(tmp_path, cfg))
    assert code == 2 and "per_layer_config" in err and len(err.strip().splitlines()) == 1


def test_jetmoe_without_num_attention_heads_derives_it(tmp_path):
    # JetMoeConfig takes no num_attention_heads (it sets num_key_value_heads x num_experts_per_tok),
    # so a config.json may lack it: the count equals the one with the field written out
    from calc_transformer_params import main
    cfg = load_json("flops", "jetmoe.config.json")
    full = run_main(main, ["--hf_model_name_or_path", _write(tmp_path, cfg, "a.json"), "--json"])[0]["total_params"]
    del cfg["num_attention_heads"]
    assert run_main(main, ["--hf_model_name_or_path", _write(tmp_path, cfg, "b.json"), "--json"])[0]["total_params"] == full
