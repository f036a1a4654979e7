"""--hf_model_name_or_path values that are not a config, in every script: exit 2 and one line on
stderr, never a silent fallback to the default model. And a note that led up to an error is not
printed: on exit 2, stderr is the error line alone."""
import importlib
import json
import os

import pytest

from conftest import config_path, exit_code_and_stderr, run_main

SCRIPTS = ["calc_transformer_params", "calc_transformer_flops", "calc_transformer_mem",
           "calc_inference_latency", "calc_comm"]
MODEL_MODE = {"calc_comm": ["--train"]}  # calc_comm reads a model only for a training step


def _one_line_exit_2(script, argv):
    code, err = exit_code_and_stderr(importlib.import_module(script).main, argv)
    assert code == 2 and err.count("\n") == 1 and err.endswith("\n"), (argv, err)
    return err


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("value,needle", [
    ("", "is empty"),                        # used to run the default model, exit 0
    ("/dev/null", "is not a config file"),   # used to be sent to the hub as a model id
    ("/no/such/dir", "not found"),
    ("/no/such", "not found"),               # one slash short of a path: still not a hub id
    ("./missing", "not found"),
])
def test_bad_model_path_is_one_line_exit_2(script, value, needle):
    err = _one_line_exit_2(script, MODEL_MODE.get(script, []) + ["--hf_model_name_or_path", value])
    assert needle in err


@pytest.mark.parametrize("script", SCRIPTS)
def test_folder_without_config_and_fifo_are_one_line_exit_2(script, tmp_path):
    extra = MODEL_MODE.get(script, [])
    err = _one_line_exit_2(script, extra + ["--hf_model_name_or_path", str(tmp_path)])
    assert "no config.json in folder" in err
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)  # reading it would block forever
    err = _one_line_exit_2(script, extra + ["--hf_model_name_or_path", str(fifo)])
    assert "is not a config file" in err


def test_comm_model_without_train_is_one_line_exit_2():
    # A single collective does not read a model; the path used to be ignored (exit 0), bad or not.
    for value in ("/no/such/dir", config_path("llama-3-8b")):
        err = _one_line_exit_2("calc_comm", ["--hf_model_name_or_path", value])
        assert "add --train" in err


@pytest.mark.parametrize("argv,needle", [
    (["--op", "all_reduce", "--num-gpus", "12"], "not a multiple of --gpus-per-node"),
    (["--op", "all_reduce", "--num-gpus", "16", "--algo", "nvls"], "one scale-up domain"),
    (["--train", "--hf_model_name_or_path", "LLAMA", "-tp", "3"], "not divisible"),
])
def test_comm_default_links_note_is_dropped_on_error(argv, needle):
    # No --gpu: the defaults note used to come first, then the error (two lines).
    argv = [config_path("llama-3-8b") if a == "LLAMA" else a for a in argv]
    err = _one_line_exit_2("calc_comm", argv)
    assert needle in err and "note:" not in err


def test_comm_note_on_default_figures_is_still_printed_on_success():
    # a link flag without --gpu: the figures not passed come from the default accelerator, said once
    from calc_comm import main
    for argv in (["--op", "all_reduce", "--size", "1GiB", "--intra-node-bw-GBps", "300"],
                 ["--train", "--intra-node-bw-GBps", "300"]):
        _, _, err = run_main(main, argv)
        assert err.startswith("note: no --gpu given") and err.count("\n") == 1, err


def test_flops_model_note_is_dropped_on_error_and_kept_on_success(tmp_path):
    # An unknown model_type is read best-effort with a warning; --gpu is checked after the model.
    from calc_transformer_flops import main
    cfg = json.load(open(config_path("llama-2-7b")))
    cfg["model_type"] = "my_llama"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    err = _one_line_exit_2("calc_transformer_flops",
                           ["--hf_model_name_or_path", str(tmp_path), "--gpu", "nope"])
    assert "unknown accelerator" in err
    _, out, err = run_main(main, ["--hf_model_name_or_path", str(tmp_path), "--gpu", "h100"])
    assert "WARNING: model_type 'my_llama'" in out and err == ""  # said once, in the report
    _, _, err = run_main(main, ["--hf_model_name_or_path", str(tmp_path), "--gpu", "h100", "--json"])
    assert err.startswith("warning: model_type 'my_llama'")  # with --json, on stderr too
