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
