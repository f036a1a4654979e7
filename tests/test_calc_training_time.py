"""calc_training_time.py: agreement with the sibling scripts whose formulas it copies (FLOPs, memory,
collectives), published training runs (Korthikanti et al. 2022, Narayanan et al. 2021, MT-NLG),
the search, and the exit-2 rules. The published rows are validation only: no constant of the
script was set from them (VALIDATION.md, training-time section, names what set each constant)."""
import json
import math

import pytest

import calc_comm
import calc_training_time as T
import calc_transformer_flops
import calc_transformer_mem
from conftest import config_path


def run(argv, capsys=None):
    res = T.main(argv + ["--json"])
    if capsys is not None:
        capsys.readouterr()
    return res


# --- agreement with the scripts it copies --------------------------------------------------------

AGREE = [
    ("llama-3-8b", ["-tp", "2", "-pp", "2", "--num-gpus", "8", "-s", "2048", "--global-batch-size", "16", "-b", "2"]),
    ("mixtral-8x7b", ["-tp", "2", "-pp", "1", "--num-gpus", "8", "-ep", "4", "-s", "4096", "--global-batch-size", "8",
                      "-b", "1", "--sequence-parallel"]),
    ("deepseek-v2-lite", ["-tp", "1", "-pp", "3", "--num-gpus", "6", "-s", "2048", "--global-batch-size", "12", "-b", "1"]),
    ("qwen3.5-35b-a3b-text", ["-tp", "2", "-pp", "2", "--num-gpus", "8", "-ep", "2", "-s", "4096",
                              "--global-batch-size", "8", "-b", "1"]),
]


@pytest.mark.parametrize("name,argv", AGREE, ids=[a[0] for a in AGREE])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_flops_agree_with_the_flops_script(name, argv, recompute, capsys):
    res = run(["--hf_model_name_or_path", config_path(name), "--gpu", "h100", "--recompute", recompute] + argv)
    gbs, s = res["layout"]["global_batch_size"], res["layout"]["sequence_length"]
    ref = calc_transformer_flops.main(["--hf_model_name_or_path", config_path(name), "-s", str(s),
                                       "--tokens", str(gbs * s), "--recompute", recompute, "--json"])
    capsys.readouterr()
    assert res["flops_per_step"]["model"] == ref["model_flops"]
    assert res["flops_per_step"]["hardware"] == ref["hardware_flops"]


@pytest.mark.parametrize("name,argv", AGREE, ids=[a[0] for a in AGREE])
@pytest.mark.parametrize("recompute,zero", [("none", 0), ("selective", 0), ("full", 3)])
def test_memory_agrees_with_the_memory_script(name, argv, recompute, zero, capsys):
    if zero == 3 and "-pp" in argv and argv[argv.index("-pp") + 1] != "1":
        argv = argv[:argv.index("-pp")] + ["-pp", "1"] + argv[argv.index("-pp") + 2:]
    res = run(["--hf_model_name_or_path", config_path(name), "--gpu", "h100", "--recompute", recompute,
               "-z", str(zero)] + argv)
    lay = res["layout"]
    ref = calc_transformer_mem.main([
        "--hf_model_name_or_path", config_path(name), "--num-gpus", str(lay["num_gpus"]), "-tp", str(lay["tp"]),
        "-pp", str(lay["pp"]), "-ep", str(lay["ep"]), "-b", str(lay["micro_batch_size"]),
        "--global-batch-size", str(lay["global_batch_size"]), "-s", str(lay["sequence_length"]),
        "--recompute", recompute, "-z", str(zero), "--gpu", "h100"]
        + (["--sequence-parallel"] if lay["sp"] else []) + ["--json"])
    capsys.readouterr()
    assert res["total_bytes"] == pytest.approx(ref["total_bytes"], rel=1e-12)


def test_collectives_agree_with_calc_comm(capsys):
    # the TP all-reduce and the DP reduce-scatter of one layout, per call, as calc_comm.py --train costs them
    argv = ["-l", "32", "-hs", "4096", "-a", "32", "-s", "2048"]
    res = calc_comm.main(argv + ["--train", "--gpu", "a100", "--tp", "8", "--pp", "1", "--dp", "4",
                                 "--micro-batch-size", "1", "--zero-stage", "1", "--json"])
    capsys.readouterr()
    rows = {(r["parallelism"], r["op"]): r for r in res["rows"]}
    hw, net, _ = T.resolve_hardware(T.build_parser().parse_args(["--gpu", "a100"]), None)
    tp_ar = T.comm_time_s("all_reduce", 2 * 2048 * 4096, n=8, stride=1, net=net, gpus_per_node=8)
    assert tp_ar == pytest.approx(rows[("TP", "all_reduce")]["time_per_call_s"], rel=1e-12)
    dp = rows[("DP", "reduce_scatter")]
    mine = T.comm_time_s("reduce_scatter", dp["size_bytes"], n=4, stride=8, net=net, gpus_per_node=8)
    assert mine == pytest.approx(dp["time_per_call_s"], rel=1e-12)
