"""One meaning per flag and one answer per question across the scripts (issue 32), as a user types
the commands: counts with suffixes everywhere, and the flops script's time line naming the command
that costs the run's layout instead of an assumed MFU."""
import json
import shlex

import pytest

import calc_comm as C
import calc_inference_latency as I
import calc_training_time as T
import calc_transformer_flops as F
import calc_transformer_mem as M
import calc_transformer_params as P
from conftest import config_path, exit_code_and_stderr


def _json(main, argv, capsys):
    main(argv + ["--json"])
    return json.loads(capsys.readouterr().out)


def test_token_counts_take_suffixes_in_both_scripts_that_take_tokens(capsys):
    base = ["-l", "32", "-hs", "4096", "--num-gpus", "512", "--gpu", "h100"]
    for main, key in ((F.main, "tokens"), (T.main, "tokens")):
        a = _json(main, base + ["--tokens", "2T"], capsys)
        b = _json(main, base + ["--tokens", "2e12"], capsys)
        c = _json(main, base + ["--tokens", "2_000B"], capsys)
        assert a == b == c
    assert _json(F.main, base + ["--tokens", "300B"], capsys)["tokens"] == 300_000_000_000


@pytest.mark.parametrize("main", (P.main, F.main, M.main, T.main, I.main, C.main))
def test_sequence_and_widths_take_si_and_binary_suffixes(main, capsys):
    # -s 8Ki is 8,192 and -hs 4k is 4,000 in every script that takes them
    a = _json(main, ["-l", "2", "-hs", "4Ki", "-s", "8Ki"], capsys)
    b = _json(main, ["-l", "2", "-hs", "4096", "-s", "8192"], capsys)
    assert a == b


@pytest.mark.parametrize("bad,says", [("1.5", "is not a whole number"), ("4x", "invalid integer"),
                                      ("1e30", "too large"), ("8KB", "invalid integer")])
def test_a_bad_count_is_one_line_and_exit_2(bad, says):
    for main in (P.main, T.main):
        rc, err = exit_code_and_stderr(main, ["-l", bad])
        assert rc == 2 and says in err and len(err.strip().splitlines()) == 1


def test_a_bad_token_count_is_one_line_and_exit_2():
    rc, err = exit_code_and_stderr(F.main, ["--tokens", "2X"])
    assert rc == 2 and "invalid count" in err and "2T" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("model", [
    ["--hf_model_name_or_path", "llama-3-8b"],
    ["-l", "32", "-hs", "4096", "-a", "32", "--num-kv-heads", "8", "--ffn-hidden-size", "14336", "--swiglu",
     "--norm", "rmsnorm", "--no-bias", "-v", "128256"],
    ["-l", "24", "-hs", "2048", "-a", "16", "--moe", "-e", "64", "-t", "6", "--moe-ffn-hidden-size", "1408",
     "--num-shared-experts", "2", "--no-tied-embeddings"],
])
def test_flops_names_the_command_that_costs_the_layout_and_it_runs(model, capsys):
    # 7B-class on 2T tokens on 512 H100s: the flops script prices time at an assumed MFU and says
    # so, with the calc_training_time.py command that costs each layout and finds the fastest
    if model[0] == "--hf_model_name_or_path":
        model = [model[0], config_path(model[1])]
    F.main(model + ["-s", "4096", "-b", "1024", "--tokens", "2T", "--num-gpus", "512", "--gpu", "h100"])
    out = capsys.readouterr().out
    assert "MFU 0.40 is an assumption, not this model's" in out
    line = next(x.strip() for x in out.splitlines() if "python3 calc_training_time.py" in x).rstrip(")")
    words = shlex.split(line)
    assert words[:2] == ["python3", "calc_training_time.py"] and words[-1] == "--search"
    res = _json(T.main, words[2:], capsys)
    assert res["training"]["tokens"] == 2e12 and res["num_gpus"] == 512
    assert res["layout"]["sequence_length"] == 4096 and res["layout"]["global_batch_size"] == 1024
    again = _json(T.main, words[2:-1] + ["--tokens", "2T"] + ["--search"], capsys)
    assert again.pop("search_time_s") > 0 and res.pop("search_time_s") > 0  # a wall-clock reading
    assert again == res


def test_flops_json_carries_the_command(capsys):
    res = _json(F.main, ["-l", "2", "-hs", "512", "--gpu", "h100"], capsys)
    assert res["time"]["layout_command"].startswith("python3 calc_training_time.py --hidden-size 512 --num-layers 2")
    inf = _json(F.main, ["-l", "2", "-hs", "512", "--gpu", "h100", "-i"], capsys)
    assert inf["time"]["layout_command"] is None


# Every concept has spellings that every script taking it accepts, each script keeping its own
# first spelling (what its messages and --help name) and the cookbook's short flags.
CONCEPTS = {
    "expert parallel size": ("--expert-parallel-size", "--expert-parallelism", "-ep"),
    "global batch": ("--global-batch-size", "-gbs"),
    "sequence parallel": ("--sequence-parallel", "-sp"),
    "ZeRO stage": ("--zero-stage", "-z"),
    "output tokens": ("--output-tokens", "-o"),
    "HBM bandwidth, GB/s": ("--hbm-bandwidth-GBps", "--memory-bandwidth-gbps"),
    "scale-up bandwidth per GPU, GB/s": ("--intra-node-bw-GBps", "--tp-bandwidth-gbps"),
    "scale-out bandwidth per GPU, GB/s": ("--inter-node-bw-GBps", "--scale-out-gbps"),
    "KV-cache element bits": ("--kv-cache-bits",),
    "serving precision preset": ("--precision",),
    "recurrent-state element bits": ("--state-bits",),
    "tensor parallel size": ("--tensor-parallel-size", "-tp"),
    "pipeline parallel size": ("--pipeline-parallel-size", "-pp"),
    "context parallel size": ("--context-parallel-size", "-cp"),
    "GPU count": ("--num-gpus",),
    "accelerator": ("--gpu",),
    "GPU memory, GiB": ("--gpu-memory-gib",),
    "GPUs per node": ("--gpus-per-node",),
    "peak TFLOP/s": ("--peak-tflops",),
    "price per GPU-hour": ("--cost-per-gpu-hour",),
    "training tokens": ("--tokens",),
    "recompute": ("--recompute",),
}
TOOLS = {"params": P, "flops": F, "mem": M, "training time": T, "latency": I, "comm": C}


def _options(module):
    return {s: a.dest for a in module.build_parser()._actions for s in a.option_strings}


@pytest.mark.parametrize("concept", CONCEPTS)
def test_one_spelling_set_per_concept_in_every_script_that_takes_it(concept):
    spellings = CONCEPTS[concept]
    takers = 0
    for name, module in TOOLS.items():
        opts = _options(module)
        have = [s for s in spellings if s in opts]
        if have:
            takers += 1
            assert have == list(spellings), f"{name} takes {have} of {spellings}"
            assert len({opts[s] for s in spellings}) == 1, name
    assert takers >= 1


def test_kv_cache_bits_mean_the_same_in_mem_and_latency(capsys):
    # 8-bit KV cache of Llama-3-8B at 8 x 8,192 tokens: the same bytes through either spelling
    cfg = ["--hf_model_name_or_path", config_path("llama-3-8b"), "-s", "8192", "-b", "8"]
    a = _json(M.main, cfg + ["--infer", "--kv-cache-bits", "8"], capsys)
    b = _json(M.main, cfg + ["--infer", "--kv-cache-bytes-per-val", "1"], capsys)
    assert a == b
    lat = _json(I.main, cfg + ["--kv-cache-bits", "8", "-o", "1"], capsys)
    assert lat["kv_cache_bytes_per_gpu"] == pytest.approx(a["kv_cache_bytes"], rel=1e-9)
    rc, err = exit_code_and_stderr(M.main, cfg + ["--infer", "--kv-cache-bits", "8", "--kv-cache-bytes-per-val", "1"])
    assert rc == 2 and "not both" in err


# One default accelerator (issue 32): hardware.py's h100-sxm record, the same numbers as
# --gpu h100-sxm in every script that costs hardware, named in the report's first line.
def test_the_default_accelerator_is_the_tables_h100_sxm():
    import hardware
    from llmcalc.accelerator import DEFAULT_ACCELERATOR, default_accelerator
    assert DEFAULT_ACCELERATOR == "h100-sxm"
    assert default_accelerator() == hardware.get_accelerator("h100-sxm")


def _drop_default(d):
    """The result less the keys that say the GPU was the default (and wall-clock readings)."""
    if isinstance(d, dict):
        return {k: _drop_default(v) for k, v in d.items()
                if k not in ("gpu_default", "search_time_s", "notes") and not (k == "gpu" and v is None)}
    if isinstance(d, list):
        return [_drop_default(v) for v in d]
    return d


@pytest.mark.parametrize("main,argv", [
    (T.main, ["-l", "8", "-hs", "2048", "--num-gpus", "16", "-tp", "2", "--global-batch-size", "64"]),
    (T.main, ["-l", "8", "-hs", "2048", "--num-gpus", "16", "--global-batch-size", "64", "--search"]),
    (I.main, ["-l", "8", "-hs", "2048", "-tp", "2", "-b", "8"]),
    (I.main, ["-l", "8", "-hs", "2048", "--concurrency", "16"]),
    (M.main, ["-l", "8", "-hs", "2048", "-tp", "2", "--num-gpus", "8"]),
    (M.main, ["-l", "8", "-hs", "2048", "--infer", "-s", "8192", "-b", "8"]),
    (C.main, ["--op", "all_gather", "--size", "1GiB", "--num-gpus", "16"]),
    (C.main, ["--train", "-l", "8", "-hs", "2048", "--tp", "8", "--dp", "2"]),
])
def test_no_gpu_is_exactly_gpu_h100_sxm(main, argv, capsys):
    default = _json(main, argv, capsys)
    named = _json(main, argv + ["--gpu", "h100-sxm"], capsys)
    assert _drop_default(default) == _drop_default(named)


@pytest.mark.parametrize("main,argv", [(T.main, []), (I.main, []), (M.main, []), (C.main, []),
                                       (C.main, ["--train"]), (I.main, ["-l", "2", "-hs", "512", "--search"])])
def test_every_report_names_the_default_gpu_in_its_first_line(main, argv, capsys):
    main(argv)
    first = capsys.readouterr().out.splitlines()[0]
    assert "(the default GPU; --gpu NAME for another)" in first
    assert "h100-sxm" in first or "NVIDIA H100 SXM5 80GB" in first


# Every "does not fit" names the way out (issue 32)
L70 = ["-l", "80", "-hs", "8192", "-a", "64", "--num-kv-heads", "8", "--ffn-hidden-size", "28672", "--swiglu",
       "--norm", "rmsnorm", "--no-bias", "-v", "128256"]


def test_mem_that_does_not_fit_lists_what_does(capsys):
    # a 70B on 8 H100s, ZeRO-1, no recompute: 537 GiB per GPU; each way out costed by the same model
    res = _json(M.main, L70 + ["--num-gpus", "8"], capsys)
    fit = res["fit"]
    assert not fit["fits"] and fit["max_micro_batch_size"] == 0
    ways = {w["flags"]: w for w in fit["ways_out"]["changes"]}
    assert set(ways) == {"-z 3", "--recompute full", "--offload", "-z 3 --recompute full --offload",
                         "--num-gpus 32 -z 3 --recompute full"}
    assert ways["-z 3 --recompute full --offload"]["fits"] and ways["--num-gpus 32 -z 3 --recompute full"]["fits"]
    assert not ways["-z 3"]["fits"] and fit["ways_out"]["fewest_gpus"] == 32
    # each figure is what that command prints
    for flags, w in ways.items():
        argv = L70 + ["--num-gpus", "8"] + flags.split()
        if "--num-gpus" in flags:
            argv = L70 + flags.split()
        assert _json(M.main, argv, capsys)["total_bytes"] == pytest.approx(w["total_bytes"], rel=1e-12)
    # the search command finds a layout of 32 GPUs that fits
    words = shlex.split(fit["ways_out"]["search_command"])
    found = _json(T.main, words[2:], capsys)
    assert found["fits"] and found["num_gpus"] == 32
    M.main(L70 + ["--num-gpus", "8"])
    out = capsys.readouterr().out
    assert "what fits instead, at micro-batch 1" in out and "python3 calc_training_time.py" in out


def test_offload_states_the_host_memory_it_needs(capsys):
    # the figure: a 70B on 8 H100s with optimizer offload needs about 1 TB of host memory
    # (ZeRO-Offload: Adam's fp32 master, momentum and variance, and 16-bit gradients, 14 B/param)
    res = _json(M.main, L70 + ["--num-gpus", "8", "-z", "3", "--recompute", "full", "--offload"], capsys)
    off = res["offload"]
    assert off["bytes_per_param"] == 14 and off["gpus_per_host"] == 8
    assert off["host_bytes_per_host"] == pytest.approx(14 * res["total_params"], rel=1e-6)
    assert 0.9e12 < off["host_bytes_per_host"] < 1.1e12
    assert res["optimizer_bytes"] == 0 and res["fit"]["fits"]
    M.main(L70 + ["--num-gpus", "8", "-z", "3", "--recompute", "full", "--offload"])
    assert "987.8 GB per host of 8 GPUs" in capsys.readouterr().out


def test_training_time_that_does_not_fit_names_the_search(capsys):
    res = _json(T.main, L70 + ["--num-gpus", "8"], capsys)
    assert not res["fits"]
    search = shlex.split(res["next_step"]["search_command"])
    found = _json(T.main, search[2:], capsys)
    assert found["fits"] and found["num_gpus"] == 8
    mem = shlex.split(res["next_step"]["memory_command"])
    assert _json(M.main, mem[2:], capsys)["total_bytes"] == pytest.approx(res["total_bytes"], rel=1e-9)


def test_max_context_stops_at_the_trained_context(capsys):
    # Llama-3-8B was trained to 8,192 tokens: mem's fit says so instead of 520,144
    cfg = ["--hf_model_name_or_path", config_path("llama-3-8b"), "--infer"]
    res = _json(M.main, cfg, capsys)
    assert res["fit"]["max_context_tokens"] == 8192 and res["fit"]["max_context_tokens_memory"] > 500_000
    M.main(cfg)
    assert "max context tokens: 8192 (the model's trained context; the memory would hold" in capsys.readouterr().out
    # Llama-3.1 is trained on to 131,072 (its max_position_embeddings, llama3 rope scaling)
    res31 = _json(M.main, ["--hf_model_name_or_path", config_path("llama-3.1-8b"), "--infer"], capsys)
    assert res31["fit"]["max_context_tokens"] == 131072
    # at batch 64 the memory sets the limit, below the trained context
    assert _json(M.main, ["--hf_model_name_or_path", config_path("llama-3.1-8b"), "--infer", "-b", "64"],
                 capsys)["fit"]["max_context_tokens"] < 131072
    # past it, mem and latency warn in the report
    for main in (M.main, I.main):
        main(cfg[:2] + (["--infer"] if main is M.main else []) + ["-s", "16000"])
        assert "is past the model's trained context (8,192" in capsys.readouterr().out


def test_yarn_scaling_extends_the_trained_context(tmp_path, capsys):
    # Qwen's long-context recipe: a 32,768-token window with YaRN factor 4 reads 131,072 tokens
    import json as _j
    cfg = _j.load(open(config_path("llama-3-8b")))
    cfg.update(max_position_embeddings=32768,
               rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})
    path = tmp_path / "config.json"
    path.write_text(_j.dumps(cfg))
    res = _json(M.main, ["--hf_model_name_or_path", str(path), "--infer"], capsys)
    assert res["fit"]["max_context_tokens"] == 131072


def test_one_request_too_long_for_the_pool_is_named_as_such():
    # the 8B's weights leave 57 GiB of pool; one 600k-token request needs 73 GiB of cache
    rc, err = exit_code_and_stderr(I.main, ["--hf_model_name_or_path", config_path("llama-3-8b"), "-s", "600000",
                                            "-o", "100", "--concurrency", "1", "--num-requests", "5"])
    assert rc == 2 and err.count("\n") == 1
    assert "one request of 600,100 tokens needs 73.25 GiB of KV cache per GPU and the pool holds 56.73 GiB" in err
    rc, err = exit_code_and_stderr(I.main, ["-l", "200", "-hs", "12288", "--concurrency", "1"])
    assert rc == 2 and "the weights (677.40 GiB per GPU) leave no KV pool" in err


def test_a_huge_token_count_is_one_line_and_exit_2():
    # found by the random-flags test: a 400-digit --tokens overflowed float() with a traceback
    for main in (F.main, T.main):
        rc, err = exit_code_and_stderr(main, ["--tokens", "1" + "0" * 400])
        assert rc == 2 and "too large" in err and len(err.strip().splitlines()) == 1


# Output people can use (issue 32); --brief's one number format and memory verdict (issue 46:
# plain digits, ': fits in X GiB' / ': does not fit in X GiB' with exit status 3)
N = r"\d+(\.\d+)?"
VERDICT = r": (fits|does not fit) in \d+\.\d\d GiB"


@pytest.mark.parametrize("main,argv,pattern", [
    (P.main, [], r"^\d+ parameters$"),
    (P.main, ["--hf_model_name_or_path", config_path("llama-3-8b")], r"^8030261248 parameters$"),
    (F.main, [], r"^\d\.\d{4}e\+\d\d FLOPs$"),
    (F.main, ["-i"], r"^\d\.\d{4}e\+\d\d FLOPs per prefill$"),
    (M.main, [], rf"^{N} GiB per GPU{VERDICT}$"),
    (T.main, [], rf"^{N} s per step{VERDICT}$"),
    (T.main, ["--tokens", "1B"], rf"^{N} days{VERDICT}$"),
    (I.main, [], rf"^TTFT \d+\.\d\d ms TPOT \d+\.\d\d ms{VERDICT}$"),
    (I.main, ["-l", "2", "-hs", "512", "--search"], r"^\d+ tokens/s per GPU$"),
    (C.main, ["--op", "all_reduce", "--size", "1GiB"], rf"^{N} us$"),
    (C.main, [], rf"^{N} GB/s busbw at \d+ B$"),
    (C.main, ["--train", "-tp", "8"], rf"^{N} ms of collectives per step$"),
])
def test_brief_prints_one_line_with_its_unit(main, argv, pattern, capsys):
    import re
    try:
        main(argv + ["--brief"])
    except SystemExit as exc:  # exit status 3: the verdict is "does not fit"
        assert exc.code == 3
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and re.match(pattern, out.strip()), out


def test_brief_and_json_are_one_or_the_other():
    rc, err = exit_code_and_stderr(P.main, ["--brief", "--json"])
    assert rc == 2 and "not allowed with" in err


@pytest.mark.parametrize("main", (P.main, F.main, M.main, T.main, I.main))
def test_the_default_run_says_which_model_it_describes(main, capsys):
    main([])
    head = capsys.readouterr().out.splitlines()[:3]
    assert any("the cookbook's default shape (L=44 h=6144 V=51200, GPT-NeoX-20B-like)" in x for x in head)
    main(["--hf_model_name_or_path", config_path("llama-3-8b")])
    head = capsys.readouterr().out.splitlines()[:3]
    assert any("llama-3-8b.json (llama, L=32 h=4096 V=128256)" in x for x in head)


def test_flops_infer_without_tokens_prints_a_request_not_a_300b_run(capsys):
    F.main(["-i"])
    out = capsys.readouterr().out
    assert "300,000,000,000" not in out and "Run: T=" not in out
    assert "prefill, 2,048 prompt tokens" in out and "--tokens T adds" in out
    F.main(["-i", "--tokens", "300e9"])  # the cookbook's -i total, when asked for
    assert "Run: T=300,000,000,000 tokens" in capsys.readouterr().out


# Hostile input found since the last round (issue 32)
@pytest.mark.parametrize("script", ["calc_transformer_params.py", "calc_transformer_flops.py", "calc_transformer_mem.py",
                                    "calc_inference_latency.py", "calc_training_time.py", "calc_comm.py", "hardware.py"])
def test_stdout_that_cannot_be_written_is_one_line_and_exit_2(script):
    import os
    import subprocess
    import sys
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open("/dev/full", "w") as full:
        res = subprocess.run([sys.executable, os.path.join(root, script)], stdout=full, stderr=subprocess.PIPE,
                             text=True, timeout=60)
    errors = [x for x in res.stderr.splitlines() if not x.startswith("note:")]
    assert res.returncode == 2 and errors == [f"{script}: error: cannot write the output: No space left on device"]


def _config(tmp_path, **changes):
    import json as _j
    cfg = _j.load(open(config_path(changes.pop("_base", "llama-3-8b"))))
    cfg.update(changes)
    path = tmp_path / "config.json"
    path.write_text(_j.dumps(cfg))
    return str(path)


def test_configs_transformers_refuses_are_refused(tmp_path):
    path = _config(tmp_path, layer_types=["full_attention"] * 40)
    rc, err = exit_code_and_stderr(P.main, ["--hf_model_name_or_path", path])
    assert rc == 2 and "field 'layer_types' lists 40 layers, but the model has 32" in err
    path = _config(tmp_path, quantization_config="fp8")
    rc, err = exit_code_and_stderr(P.main, ["--hf_model_name_or_path", path])
    assert rc == 2 and "field 'quantization_config' must be an object" in err


@pytest.mark.parametrize("changes,says", [
    (dict(torch_dtype="float77"), "torch_dtype 'float77' is not a dtype transformers knows"),
    (dict(torch_dtype="bfloat16", dtype="float16"), "torch_dtype 'bfloat16' and dtype 'float16' disagree"),
    (dict(_base="deepseek-v3", n_group=8, topk_group=9), "cannot pick topk_group 9 of n_group 8 groups"),
    (dict(_base="deepseek-v3", n_group=8, topk_group=1, num_experts_per_tok=40),
     "num_experts_per_tok 40 is more than the 32 experts"),
])
def test_config_oddities_are_stated_warnings(tmp_path, changes, says, capsys):
    res = _json(P.main, ["--hf_model_name_or_path", _config(tmp_path, **changes)], capsys)
    assert any(says in w for w in res["warnings"])


def test_a_kv_heads_error_names_the_config_field(tmp_path):
    path = _config(tmp_path, num_key_value_heads=7)
    rc, err = exit_code_and_stderr(I.main, ["--hf_model_name_or_path", path])
    assert rc == 2 and "num_attention_heads 32 is not divisible by num_key_value_heads 7" in err
    assert "--num-attention-heads" not in err
    rc, err = exit_code_and_stderr(P.main, ["-a", "32", "--num-kv-heads", "7"])
    assert "--num-attention-heads 32 is not divisible by --num-kv-heads 7" in err


def test_flags_that_do_nothing_in_the_mode_are_said(capsys):
    I.main(["-l", "2", "-hs", "512", "--seed", "5", "--brief"])
    assert "note: --seed draws the arrivals of a --num-requests benchmark" in capsys.readouterr().err
    rc, err = exit_code_and_stderr(T.main, ["-l", "4", "-hs", "1024", "--num-gpus", "8", "--global-batch-size", "64",
                                            "--search", "--rank-by", "cost"])
    assert rc == 2 and "--rank-by cost needs --cost-per-gpu-hour" in err


@pytest.mark.parametrize("plot,says", [("", "needs a file name"), (".", "is a folder"),
                                       ("front", "give a file name ending .png"),
                                       ("no/such/folder/front.png", "the folder no/such/folder does not exist")])
def test_plot_path_is_checked_before_any_work(plot, says):
    rc, err = exit_code_and_stderr(I.main, ["-l", "2", "-hs", "512", "--search", "--plot", plot])
    assert rc == 2 and says in err and err.count("\n") == 1


def test_benchmark_table_keeps_its_columns_at_any_magnitude(capsys):
    # 3,000 requests sent at once: TTFTs of thousands of seconds stay in their columns
    I.main(["--hf_model_name_or_path", config_path("llama-3-8b"), "-s", "4000", "-o", "4000",
            "--num-requests", "3000", "--request-rate", "inf"])
    row = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("TTFT (waiting included)"))
    cells = row[len("TTFT (waiting included)"):].split()
    assert [c[-1] for c in cells[1::2]] == ["s", "s", "s"] and len(cells) == 6


def test_search_labels_carry_a_quantized_checkpoints_format(capsys):
    # gpt-oss-120b's MXFP4 experts were labelled w16 (issue 32)
    I.main(["--hf_model_name_or_path", config_path("gpt-oss-120b"), "--search", "--num-gpus", "8", "--top", "3"])
    out = capsys.readouterr().out
    assert "w16e4a16kv8" in out and "the checkpoint's own Y-bit routed experts" in out


def test_a_simulation_that_would_take_minutes_is_refused_with_its_estimate(monkeypatch):
    # progress lines say how long is left; past SIMULATION_LIMIT_S (120 s) the run stops, exit 2.
    # The limit is set to 0 here so that a run of over a second trips it.
    monkeypatch.setattr(I, "SIMULATION_LIMIT_S", 0.0)
    rc, err = exit_code_and_stderr(I.main, ["--hf_model_name_or_path", config_path("llama-3-8b"), "-s", "1000",
                                            "-o", "200", "--num-requests", "1000000", "--request-rate", "20"])
    lines = [x for x in err.splitlines() if not x.startswith("note:")]
    assert rc == 2 and len(lines) == 1
    assert "--num-requests 1,000,000 would take about" in lines[0] and "more minutes to simulate" in lines[0]


def test_precision_preset_means_the_same_in_mem_and_latency(capsys):
    cfg = ["--hf_model_name_or_path", config_path("llama-3-8b"), "-s", "8192", "-b", "8"]
    for preset, gpu in (("fp8", "h100"), ("fp4", "b200"), ("w4a16", "h100")):  # fp4 runs on Blackwell
        mem = _json(M.main, cfg + ["--infer", "--precision", preset, "--gpu", gpu], capsys)
        lat = _json(I.main, cfg + ["-o", "1", "--precision", preset, "--gpu", gpu], capsys)
        assert mem["weights_bytes"] == pytest.approx(lat["weight_bytes_per_gpu"], rel=1e-9)
        assert mem["kv_cache_bytes"] == pytest.approx(lat["kv_cache_bytes_per_gpu"], rel=1e-9)


def test_a_dtype_or_context_field_of_the_wrong_type_is_a_warning_or_ignored(tmp_path, capsys):
    # neither changes a count: a list dtype is a stated warning (it was a refusal), a float
    # max_position_embeddings leaves the trained context unknown (it was a refusal)
    res = _json(P.main, ["--hf_model_name_or_path", _config(tmp_path, torch_dtype=["bf16"])], capsys)
    assert any("is not a dtype transformers knows" in w for w in res["warnings"])
    res = _json(M.main, ["--hf_model_name_or_path", _config(tmp_path, max_position_embeddings=8192.0), "--infer"],
                capsys)
    assert "context_limited_by" not in res["fit"]


def test_the_fewest_gpus_that_fit_can_be_the_gpus_given(capsys):
    # a 128k-token Llama-3-8B shape on 16 GPUs fits under ZeRO-3 and full recompute as it is: the
    # way out names these 16 GPUs, not 32
    ways = _json(M.main, ["-l", "32", "-hs", "4096", "-a", "32", "--num-kv-heads", "8", "--ffn-hidden-size", "14336",
                          "--swiglu", "-v", "128256", "--num-gpus", "16", "-tp", "4", "-cp", "4", "-s", "131072"],
                 capsys)["fit"]["ways_out"]
    assert ways["fewest_gpus"] == 16
    assert any(w["flags"] == "-z 3 --recompute full" and w["fits"] for w in ways["changes"])


@pytest.mark.parametrize("flags", (["--offload-params"], ["--offload-activations"],
                                   ["--offload-params", "--offload-activations"]))
def test_layer_offload_is_one_answer_in_mem_and_training_time(flags, capsys):
    # the same layout through both tools: the same bytes on the GPU and in host memory (mem's ZeRO-1
    # all-gather bucket is set to Megatron's, which training_time assumes)
    base = ["-l", "32", "-hs", "4096", "-a", "32", "-s", "4096", "--num-gpus", "64", "-tp", "2", "-pp", "2",
            "-b", "1", "--global-batch-size", "256", "-z", "1", "--recompute", "selective"]
    m = _json(M.main, base + ["--zero-allgather-bucket-size", "0"] + flags, capsys)
    t = _json(T.main, base + flags, capsys)["memory"]
    assert m["host_bytes"] > 0
    assert (m["total_bytes"], m["host_bytes"], m["stage"]) == (t["total_bytes"], t["host_bytes"], t["stage"])
    plain = _json(M.main, base + ["--zero-allgather-bucket-size", "0"], capsys)
    # what leaves the GPU is what goes to the host, stage by stage
    for off, on in zip(m["stages"], plain["stages"]):
        assert off["total_bytes"] + off["host_bytes"] == pytest.approx(on["total_bytes"])


@pytest.mark.parametrize("argv, says", (
    (["--offload-params", "-z", "3"], "-z 3"),
    (["--offload-activations", "--framework", "pytorch"], "Megatron-LM"),
    (["--offload-params", "--finetune", "lora"], "full training"),
))
def test_layer_offload_outside_what_is_modelled_is_refused_in_mem(argv, says):
    code, err = exit_code_and_stderr(M.main, ["-l", "8", "-hs", "1024", "--num-gpus", "8"] + argv)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1


def test_ways_out_under_layer_offload_say_they_leave_it_out(capsys):
    # training_ways_out costs its changes without --offload-params / --offload-activations (and -z 3
    # with --offload-params is refused): the rows would otherwise read as changes on top of the offload
    argv = ["-l", "8", "-hs", "1024", "-a", "16", "-s", "2048", "--num-gpus", "8", "-pp", "2", "--gpu-memory-gib", "1"]
    assert "without_layer_offload" not in _json(M.main, argv, capsys)["fit"]["ways_out"]
    assert _json(M.main, argv + ["--offload-params"], capsys)["fit"]["ways_out"]["without_layer_offload"]
    M.main(argv + ["--offload-activations"])
    assert "without --offload-params / --offload-activations" in capsys.readouterr().out


def test_recompute_every_without_recompute_is_noted_in_mem(capsys):
    M.main(["-l", "8", "-hs", "1024", "-a", "16", "-s", "2048", "--recompute-every", "3"])
    assert "--recompute-every 3 changes nothing without --recompute" in capsys.readouterr().err
