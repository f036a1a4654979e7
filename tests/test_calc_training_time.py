"""calc_training_time.py: agreement with the sibling scripts whose formulas it copies (FLOPs, memory,
collectives), published training runs (Korthikanti et al. 2022, Narayanan et al. 2021, MT-NLG),
the search, and the exit-2 rules. The published rows are validation only: no constant of the
script was set from them (VALIDATION.md, training-time section, names what set each constant)."""
import math

import pytest

import calc_comm
import calc_training_time as T
import calc_transformer_flops
import calc_transformer_mem
from conftest import config_path, exit_code_and_stderr, run_main


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


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_pcie_peers_agree_with_calc_comm(tp, capsys):
    # an L40S (no NVLink, PCIe 4.0 peers): the TP all-reduce per call as calc_comm.py --train costs it,
    # NCCL's ring over the slot, not the NIC the script used to fall back to
    argv = ["-l", "32", "-hs", "4096", "-a", "32", "-s", "2048"]
    res = calc_comm.main(argv + ["--train", "--gpu", "l40s", "--tp", str(tp), "--pp", "1", "--dp", "1",
                                 "--micro-batch-size", "1", "--zero-stage", "1", "--json"])
    capsys.readouterr()
    rows = {(r["parallelism"], r["op"]): r for r in res["rows"]}
    hw, net, notes = T.resolve_hardware(T.build_parser().parse_args(["--gpu", "l40s"]), None)
    assert hw["gpus_per_node"] == 8 and any("PCIe" in n for n in notes)
    tp_ar = T.comm_time_s("all_reduce", 2 * 2048 * 4096, n=tp, stride=1, net=net, gpus_per_node=8)
    assert tp_ar == pytest.approx(rows[("TP", "all_reduce")]["time_per_call_s"], rel=1e-12)


# --- published runs (validation only: no constant was set from them) -----------------------------
# Megatron-LM GPT of 2021-22 on Selene (A100-SXM4-80GB, 8 per node, 8 x 200 Gb/s HDR per node),
# mixed precision fp16, learned positions, tied embeddings, biases, GELU MLP 4h, dropout 0.1, eager
# attention (no flash kernel yet), s = 2048, V = 51200.
GPT_2022 = ["-v", "51200", "-s", "2048", "--gpu", "a100", "--dtype", "fp16", "--no-flash-attention", "--dropout",
            "--bias", "--tied-embeddings", "--position-embedding", "learned"]


def gpt(L, h, a):
    return ["-l", str(L), "-hs", str(h), "-a", str(a)] + GPT_2022


# Korthikanti et al. 2022 (arXiv 2205.05198), Table 3 layouts and Table 5 iteration times (s):
# full recompute without sequence parallelism, and selective recompute + sequence parallelism.
# DP = 1 everywhere; the interleaved schedule with 3 chunks for 175B and 530B (Sec. 6); no overlap
# of the data-parallel all-reduce (Sec. 6.3).
TABLE5 = [("22B", 48, 6144, 64, 8, 1, 8, 4, 4, 1, 1.42, 1.10),
          ("175B", 96, 12288, 96, 8, 8, 64, 64, 1, 3, 18.13, 13.75),
          ("530B", 105, 20480, 128, 8, 35, 280, 280, 1, 3, 49.05, 37.83),
          ("1T", 128, 25600, 160, 8, 64, 512, 512, 1, 1, 94.42, 71.49)]


def _table5_errors(capsys, framework=()):
    errs = []
    for _, L, h, a, tp, pp, n, gbs, mbs, vp, full, sel in TABLE5:
        base = gpt(L, h, a) + ["-tp", str(tp), "-pp", str(pp), "--num-gpus", str(n), "--global-batch-size",
                               str(gbs), "-b", str(mbs), "-vp", str(vp), "--no-dp-overlap"] + list(framework)
        r1 = run(base + ["--recompute", "full", "--no-sequence-parallel"], capsys)
        r2 = run(base + ["--recompute", "selective", "--sequence-parallel"], capsys)
        errs += [r1["step_time_s"] / full - 1, r2["step_time_s"] / sel - 1]
    return errs


def test_korthikanti_table5_within_the_issue_bounds_as_megatron_2022(capsys):
    """--framework megatron-2022, the code the paper ran (NVIDIA/Megatron-LM d898a8991d): every
    figure it adds is counted from that code (GRAD_PATH_2022, the unfused QKV bias and context copy,
    fp32 cross-entropy, the embedding all-reduce), none from these rows. Mean 2.61%, max 5.67%."""
    errs = _table5_errors(capsys, ["--framework", "megatron-2022"])
    assert sum(abs(e) for e in errs) / len(errs) <= 0.03
    assert max(abs(e) for e in errs) <= 0.06


@pytest.mark.xfail(strict=True, reason="mean |error| 3.21% and max 7.3% (22B selective+SP) with today's "
                   "Megatron-LM kernels; the 2022 code's differences are --framework megatron-2022 (VALIDATION.md)")
def test_korthikanti_table5_within_the_issue_bounds_default_framework(capsys):
    errs = _table5_errors(capsys)
    assert sum(abs(e) for e in errs) / len(errs) <= 0.03
    assert max(abs(e) for e in errs) <= 0.06


def test_megatron_2022_divides_the_gradient_buffer_at_dp_1(capsys):
    # d898a8991d megatron/model/distributed.py: allreduce_gradients runs `buffer_.data /= dp` for
    # any dp; with fp32 main gradients that reads and writes 8 B per weight after the backward
    argv = gpt(48, 6144, 64) + ["-tp", "8", "--num-gpus", "8", "--global-batch-size", "4", "-b", "4",
                                "--recompute", "selective", "--sequence-parallel"]
    new = run(argv + ["--framework", "megatron-2022"], capsys)
    today = run(argv + ["--no-flash-attention", "-z", "0", "--no-dp-overlap"], capsys)
    assert new["breakdown_s"]["grad_sync_copies"] > 0  # at dp = 1, where today's code skips it
    assert "grad_sync_copies" not in today["breakdown_s"]
    assert new["step_time_s"] > today["step_time_s"]


# Table 4: one transformer layer of the 22B model (t = 8, micro-batch 4), forward / backward ms.
TABLE4 = [("none", False, 7.7, 11.9), ("none", True, 7.2, 11.8), ("full", False, 7.7, 19.5),
          ("selective", False, 7.7, 13.2), ("selective", True, 7.2, 13.1)]


@pytest.mark.parametrize("framework", ["megatron", "megatron-2022"])
@pytest.mark.parametrize("recompute,sp,fwd_ms,bwd_ms", TABLE4)
def test_korthikanti_table4_one_layer_within_10_percent(recompute, sp, fwd_ms, bwd_ms, framework):
    parser = T.build_parser()
    args = parser.parse_args(gpt(48, 6144, 64))
    spec, _ = T.resolve_model_spec(vars(args))
    hw, net, _ = T.resolve_hardware(args, parser)
    lay = T.complete_layout(dict(
        num_gpus=8, tp=8, pp=1, vp=1, cp=1, ep=1, etp=8, sp=sp, zero_stage=1, sequence_length=2048,
        recompute=recompute, offload=False, flash_attention=False, dropout=True, tp_comm_overlap="backward",
        dp_overlap=False, dp_bucket_params=4e7, moe_imbalance=1.0, overlap_slowdown=T.OVERLAP_SLOWDOWN,
        gpus_per_node=8, matmul_bytes=2, grad_bytes=4, global_batch_size=4, micro_batch_size=4,
        precision16="fp16", framework=framework))
    c = T.layer_cost(spec["layers"][0], spec=spec, lay=lay, hw=hw, net=net)
    parts = list(c["compute"].values()) + list(c["comm"].values())
    f = sum(v[0] for v in parts) * 1e3
    b = sum(v[1] + v[2] for v in parts) * 1e3
    assert f == pytest.approx(fwd_ms, rel=0.10) and b == pytest.approx(bwd_ms, rel=0.10), (f, b)


# Narayanan et al. 2021 (arXiv 2104.04473) Table 1, with the authors' run_table_1.sh layouts
# (micro-batch, virtual stages; torch DDP, which overlaps the gradient all-reduce, up to 18.4B and
# Megatron's local DDP, which does not, above). Their TFLOP/s is eq. 3's count (full recompute):
# iteration time = eq. 3 FLOPs / (GPUs x TFLOP/s).
TABLE1 = [(24, 2304, 24, 1, 1, 32, 512, 137, 16, 1, True), (32, 3072, 30, 2, 1, 64, 512, 138, 16, 1, True),
          (32, 4096, 36, 4, 1, 128, 512, 142, 16, 1, True), (48, 6144, 40, 8, 1, 256, 1024, 135, 8, 1, True),
          (64, 8192, 48, 8, 2, 512, 1536, 138, 4, 1, False), (80, 10240, 60, 8, 4, 1024, 1792, 140, 2, 3, False),
          (96, 12288, 80, 8, 8, 1536, 2304, 148, 2, 2, False), (128, 16384, 96, 8, 16, 1920, 2160, 155, 1, 2, False),
          (128, 20480, 105, 8, 35, 2520, 2520, 163, 1, 3, False), (160, 25600, 128, 8, 64, 3072, 3072, 163, 1, 1, False)]


def _table1_row(row):
    # 76.1B (tp 8, pp 4, vp 3) stays 12.2% fast under megatron-2021: the 2021 stack's per-kernel speed
    # and a cost per chunk switch that grows with vp have no source (VALIDATION.md)
    marks = (pytest.mark.xfail(strict=True, reason="ours -12.2% (VALIDATION.md, megatron-2021)")
             if row[1] == 10240 else ())
    return pytest.param(row, marks=marks, id=f"h{row[1]}")


def _table1_times(row, flags, capsys):
    """(ours, the paper's) iteration seconds of one Table 1 row run with `flags`; the paper's is eq. 3's
    FLOPs over GPUs x its TFLOP/s."""
    a, h, L, tp, pp, n, B, tflops, mbs, vp, torch_ddp = row
    F = 96 * B * 2048 * L * h * h * (1 + 2048 / (6 * h) + 51200 / (16 * L * h))
    r = run(gpt(L, h, a) + ["-tp", str(tp), "-pp", str(pp), "--num-gpus", str(n), "--global-batch-size", str(B),
                            "-b", str(mbs), "-vp", str(vp)] + flags, capsys)
    return r["step_time_s"], F / (n * tflops * 1e12)


@pytest.mark.parametrize("row", [_table1_row(r) for r in TABLE1])
def test_narayanan_table1_within_10_percent_as_megatron_2021(row, capsys):
    """Each row with --framework megatron-2021 (the authors' sc21 artifact: fp16, local DDP above
    18.4B, torch DDP below, no TP overlap, no distributed optimizer): none of its figures came from
    these rows (GRAD_PATH_2021 counted from the code, APEX_LAYERNORM_2021 from apex PR #1037)."""
    ours, paper = _table1_times(row, ["--framework", "megatron-2021"] + (["--dp-overlap"] if row[-1] else []), capsys)
    assert ours == pytest.approx(paper, rel=0.10), (row[1], ours)


@pytest.mark.xfail(strict=True, reason="2 of 10 rows within 10% with today's Megatron-LM kernels: the "
                   "2021 stack's differences are --framework megatron-2021 (VALIDATION.md)")
def test_narayanan_table1_every_row_within_10_percent_default_framework(capsys):
    for row in TABLE1:
        ours, paper = _table1_times(row, ["--recompute", "full", "--no-sequence-parallel",
                                          "--dp-overlap" if row[-1] else "--no-dp-overlap"], capsys)
        assert ours == pytest.approx(paper, rel=0.10), (row[1], ours)


_DATED_REFUSALS = [("megatron-2021", ["-z", "1"], "-z 1"), ("megatron-2021", ["--sequence-parallel"], "--sequence-parallel"),
                   ("megatron-2021", ["--recompute", "selective"], "selective"),
                   ("megatron-2021", ["--flash-attention"], "--flash-attention"),
                   ("megatron-2021", ["-pp", "2", "-vp", "2"], "interleaves"),
                   ("megatron-2022", ["-z", "1"], "-z 1"), ("megatron-2022", ["--flash-attention"], "--flash-attention"),
                   ("megatron-2022", ["--tp-comm-overlap", "full"], "full"),
                   ("megatron-2022", ["--dp-overlap"], "--dp-overlap"),
                   ("megatron-2022", ["-pp", "2", "-vp", "2"], "interleaves")]


@pytest.mark.parametrize("framework,flags,text", _DATED_REFUSALS)
def test_dated_megatron_refuses_what_that_code_did_not_have(framework, flags, text, capsys):
    code = None
    try:
        T.main(gpt(24, 2304, 24) + ["-tp", "2", "--num-gpus", "8", "--global-batch-size", "16", "-b", "1",
                                    "--framework", framework] + flags)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and text in err and err.count("\n") == 1, err


@pytest.mark.xfail(strict=True, reason="MT-NLG's DeepSpeed runs take 60.1/50.2/44.4 s; the model gives "
                   "26-29% less (VALIDATION.md)")
def test_mt_nlg_530b_within_10_percent(capsys):
    # Smith et al. 2022 (arXiv 2201.11990) sec. 2.4: batch 1920, tp 8 x pp 35, 280/350/420 DGX A100
    for n, t in ((2240, 60.1), (2800, 50.2), (3360, 44.4)):
        r = run(gpt(105, 20480, 128) + ["-tp", "8", "-pp", "35", "--num-gpus", str(n), "--global-batch-size",
                                        "1920", "-b", "1", "--recompute", "full", "--no-sequence-parallel",
                                        "--no-dp-overlap"], capsys)
        assert r["step_time_s"] == pytest.approx(t, rel=0.10)


# --- the search -----------------------------------------------------------------------------------

def test_calculon_example_search(capsys):
    # Calculon's README example: Megatron-Turing 530B on 5128 A100-80GB, batch up to 2520, fp16.
    # 5128 = 8 x 641 (641 prime): with 105 layers only pp 1 uses every GPU, and the batch rounds down
    # to a multiple of dp (Calculon picks tp 8, pp 1, dp 641, micro-batch 3, batch 1923).
    res = run(gpt(105, 20480, 128) + ["--flash-attention", "--num-gpus", "5128", "--global-batch-size", "2520",
                                      "--search", "--top", "5"], capsys)
    best = res["layouts"][0]
    assert (best["tp"], best["pp"], best["dp"], best["global_batch_size"]) == (8, 1, 641, 1923)
    assert all(x["total_bytes"] <= res["memory_bytes"] for x in res["layouts"])
    times = [x["step_time_s"] / x["global_batch_size"] for x in res["layouts"]]
    assert times == sorted(times)


def test_search_keys_and_a_megatron_layout_for_530b_on_2240(capsys):
    res = run(gpt(105, 20480, 128) + ["--num-gpus", "2240", "--global-batch-size", "2240", "--search"], capsys)
    for k in ("layouts", "layouts_evaluated", "search_time_s", "step_time_s", "tokens_per_s_per_gpu", "mfu",
              "hfu", "model_tflops_per_gpu", "total_bytes", "fits", "breakdown_s"):
        assert k in res, k
    best = res["layouts"][0]
    for k in ("tp", "pp", "vp", "dp", "cp", "ep", "zero_stage", "micro_batch_size", "recompute",
              "sequence_parallel", "step_time_s", "tokens_per_s_per_gpu", "mfu", "total_bytes"):
        assert k in best, k
    # tensor parallel over at least a node, pipelined across nodes (with full TP overlap, tp 16 over
    # two nodes wins by 2% in this model: larger micro-batches and matmuls); the layers' weights and
    # activations stay on the GPU (the search streams them only when nothing fits without)
    assert best["tp"] >= 8 and (best["pp"] > 1 or best["offload_params"])
    on_gpu = run(gpt(105, 20480, 128) + ["--num-gpus", "2240", "--global-batch-size", "2240", "--search",
                                         "--no-offload", "--no-offload-params", "--no-offload-activations"], capsys)
    assert on_gpu["layouts"][0]["tp"] >= 8 and on_gpu["layouts"][0]["pp"] > 1


def test_more_gpus_never_slow_a_step_down(capsys):
    base = gpt(48, 6144, 64) + ["-tp", "8", "-b", "1", "--global-batch-size", "64", "--recompute", "selective",
                                "--sequence-parallel"]
    times = [run(base + ["--num-gpus", str(n)], capsys)["step_time_s"] for n in (8, 16, 32, 64)]
    assert times == sorted(times, reverse=True)


def test_bad_layouts_exit_2_in_one_line():
    from conftest import exit_code_and_stderr
    for argv in (["-tp", "3"], ["-pp", "4", "-vp", "2", "-l", "13", "--num-gpus", "8"],
                 ["--num-gpus", "7", "-tp", "2"], ["--search"],
                 ["-z", "3", "-pp", "2", "--num-gpus", "2"], ["-ep", "2", "--num-gpus", "2"]):
        code, err = exit_code_and_stderr(T.main, argv)
        assert code == 2 and err.count("\n") == 1, (argv, err)


def test_an_unstated_uneven_pipeline_split_is_applied_and_said(capsys):
    # issue 45: Megatron-Bridge's Llama 3.1 405B recipe (126 layers on pp 8 x vp 8) counts the
    # embedding and the loss as layers (126 + 2 = 128); left unstated, the same split is applied
    # and the report says so. Where first/last stage counts fit (44 layers on pp 5), the search's
    # uneven split is applied. A stated split is kept as given.
    l405 = ("-l 126 -hs 16384 -a 128 --num-kv-heads 8 --ffn-hidden-size 53248 --swiglu --norm "
            "rmsnorm --no-bias -v 128256 --gpu h100 --num-gpus 1024 --dtype fp8 --global-batch-size "
            "512 -b 1 -s 8192 -tp 8 -pp 8 -cp 2 -vp 8 --recompute none").split()
    edges = ["--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"]
    implied, stated = run(l405, capsys), run(l405 + edges, capsys)
    assert "embedding and the loss counted as layers" in implied["pipeline_split_applied"]
    assert implied["step_time_s"] == stated["step_time_s"]
    assert "pipeline_split_applied" not in stated
    res = run(["-pp", "5", "-l", "44", "--num-gpus", "5"], capsys)
    lay = res["layout"]
    split = (lay["decoder_first_pipeline_num_layers"], lay["decoder_last_pipeline_num_layers"])
    assert split == (8, 9)
    first = run("-pp 5 -l 44 --num-gpus 5 --decoder-first-pipeline-num-layers 4".split(), capsys)
    assert first["layout"]["decoder_first_pipeline_num_layers"] == 4
    assert "pipeline_split_applied" not in first


def test_a_stage_of_only_the_embedding_is_a_layout_as_in_calc_transformer_mem(capsys):
    # Megatron-LM's --account-for-embedding-in-pipeline-split counts the embedding as a layer, so
    # 1 layer + the embedding fill pp 2 (stage 0: the embedding alone); calc_transformer_mem.py
    # answered this layout; calc_training_time.py refused "pp 2 exceeds the 1 layers"
    argv = "-l 1 -hs 1024 -a 8 -s 1024 -pp 2 --num-gpus 2 --account-for-embedding-in-pipeline-split"
    res = run(argv.split(), capsys)
    assert res["step_time_s"] > 0
    mem, _, _ = run_main(calc_transformer_mem.main, argv.split())
    assert [st["stage_layers"] for st in mem["stages"]] == [0, 1]
    code, err = exit_code_and_stderr(T.main, "-l 1 -hs 1024 -a 8 -pp 4 --num-gpus 4".split())
    assert code == 2 and "exceeds the 1 layers" in err  # 1 layer + embedding + loss: 3 stages


@pytest.mark.parametrize("argv,text", [
    (["--compile"], "--compile costs torch.compile of an eager PyTorch stack"),
    (["--compile", "--framework", "llm-foundry"], "--compile costs torch.compile"),
    (["--fp8-recipe", "rowwise", "--framework", "pytorch"], "--fp8-recipe rowwise needs --dtype fp8"),
    (["--fp8-recipe", "rowwise", "--dtype", "fp8"], "--fp8-recipe rowwise is torchao's"),
    (["--fp8-recipe", "delayed", "--dtype", "fp8", "--framework", "pytorch"], "--fp8-recipe delayed is Transformer Engine's"),
    (["--fp8-recipe", "mxfp8", "--dtype", "fp8"], "--fp8-recipe mxfp8 needs a Blackwell GPU"),
    (["--fp8-recipe", "tensorwise", "--dtype", "fp8", "--framework", "llm-foundry"], "--fp8-recipe is costed under"),
    (["--attention-kernel", "fa3"], "invalid choice")])
def test_stack_flags_refused_where_they_mean_nothing(argv, text):
    from conftest import exit_code_and_stderr
    code, err = exit_code_and_stderr(T.main, argv)
    assert code == 2 and text in err and err.count("\n") == 1, err


def test_compile_and_fp8_casts_move_the_step_as_measured(capsys):
    # the directions the H200 rows show (tests/test_h200_measurements.py has the values): compile
    # shortens an eager step, tensorwise fp8 shortens it more, rowwise scaling costs more than
    # tensorwise (on the 1B-shaped layer it was slower than bf16), and the output layer stays bf16
    # under fp8 (its time does not halve)
    base = gpt(8, 4096, 32) + ["--framework", "pytorch", "--gpu", "h100", "--num-gpus", "8", "-z", "3",
                               "-s", "4096", "-b", "2", "--global-batch-size", "16", "--recompute", "none"]
    eager = run(base, capsys)
    comp = run(base + ["--compile"], capsys)
    tw = run(base + ["--compile", "--dtype", "fp8"], capsys)
    rw = run(base + ["--compile", "--dtype", "fp8", "--fp8-recipe", "rowwise"], capsys)
    assert eager["step_time_s"] > comp["step_time_s"] > tw["step_time_s"] and rw["step_time_s"] > tw["step_time_s"]
    assert tw["breakdown_s"]["compute_fp8_casts"] > 0 and "compute_fp8_casts" not in comp["breakdown_s"]
    head16, head8 = comp["breakdown_s"]["compute_output_head_and_loss"], tw["breakdown_s"]["compute_output_head_and_loss"]
    assert head8 == pytest.approx(head16, rel=0.02)


def test_rowwise_float8_casts_the_gathered_rows_under_tp(capsys):
    # torchtitan @820504e (models/llama3/parallelize_llama.py): tensorwise float8 under TP uses
    # Float8ColwiseParallel / Float8RowwiseParallel, which cast the sequence shard before the
    # all-gather; rowwise keeps plain ColwiseParallel / RowwiseParallel ("all-gather happens in high
    # precision"), so each h-wide activation is cast on all gathered rows. Going from TP 1 to TP 8
    # the tensorwise casts shrink by more than the rowwise ones.
    base = gpt(16, 8192, 64) + ["--framework", "pytorch", "--gpu", "h100", "-s", "8192", "-b", "2", "--compile",
                                "--dtype", "fp8", "--recompute", "none", "-z", "3"]
    def casts(tp, recipe):
        res = run(base + ["--num-gpus", str(8 * tp), "--global-batch-size", "16", "-tp", str(tp),
                          "--fp8-recipe", recipe], capsys)
        return res["breakdown_s"]["compute_fp8_casts"]
    assert casts(8, "rowwise") / casts(1, "rowwise") > 1.5 * casts(8, "tensorwise") / casts(1, "tensorwise")


def test_tokens_give_days_gpu_hours_and_cost(capsys):
    res = run(["--hf_model_name_or_path", config_path("llama-2-7b"), "--gpu", "h100", "--num-gpus", "64",
               "--global-batch-size", "512", "-s", "4096", "-tp", "1", "--tokens", "2e12",
               "--cost-per-gpu-hour", "2"], capsys)
    t = res["training"]
    assert t["steps"] == pytest.approx(2e12 / (512 * 4096))
    assert t["gpu_hours"] == pytest.approx(t["time_s"] * 64 / 3600)
    assert t["cost"] == pytest.approx(2 * t["gpu_hours"])
    assert math.isfinite(t["days"]) and t["days"] > 0


# --- eager PyTorch (--framework pytorch | llm-foundry) ---------------------------------------------
# MosaicML llm-foundry's MPT benchmark tables (github.com/mosaicml/llm-foundry,
# scripts/train/benchmarking/README.md, tables of commit 5e85bd62d, 2024-01; sweep.sh: image
# mosaicml/pytorch:2.1.0_cu121, amp_bf16, FSDP mixed_precision DEFAULT = bf16 params, fp32
# reduce). Pure FSDP data parallel; FULL_SHARD = -z 3, SHARD_GRAD_OP = -z 2; activation
# checkpointing = full recompute. Model shapes from scripts/train/yamls/pretrain/mpt-*.yaml
# (d_model, n_heads, n_layers; expansion 4, GELU, vocab 50368) with configuration_mpt.py's
# defaults as the benchmark ran them: biases (no_bias False), LayerNorm with bias
# (low_precision_layernorm), learned positions, tied embeddings, flash attention (flash-attn 2,
# varlen), no dropout; NumParams in the table matches these to the parameter (7b: 6,658,859,008).
# Published MFU counts 6 N + 12 L h s per token against 989 (H100) / 312 (A100) TFLOP/s; ours
# agrees with that count within 0.1%. Validation only: nothing was set from these rows.
MPT = {"1b": (24, 2048, 16), "3b": (32, 2560, 20), "7b": (32, 4096, 32), "13b": (40, 5120, 40),
       "30b": (48, 7168, 56), "70b": (80, 8192, 64)}
# (gpu, model, seq, GPUs, micro-batch, grad-accum, sharding, act. ckpt, published MFU %)
FOUNDRY = [("h100", "70b", 2048, 128, 8, 1, "FULL_SHARD", True, 43.36),
           ("h100", "30b", 2048, 128, 8, 1, "FULL_SHARD", True, 41.85),
           ("h100", "13b", 2048, 128, 16, 1, "FULL_SHARD", True, 42.18),
           ("h100", "7b", 2048, 128, 6, 1, "FULL_SHARD", False, 45.71),
           ("h100", "3b", 2048, 128, 8, 1, "SHARD_GRAD_OP", False, 42.43),
           ("h100", "1b", 2048, 128, 12, 1, "SHARD_GRAD_OP", False, 40.6),
           ("h100", "7b", 2048, 8, 6, 1, "FULL_SHARD", False, 46.44),
           ("h100", "13b", 2048, 8, 2, 1, "FULL_SHARD", False, 39.79),
           ("h100", "30b", 2048, 8, 3, 21, "FULL_SHARD", True, 38.11),
           ("h100", "13b", 4096, 8, 10, 3, "FULL_SHARD", True, 41.6),
           ("h100", "7b", 4096, 8, 16, 2, "FULL_SHARD", True, 40.42),
           ("h100", "7b", 8192, 8, 8, 2, "FULL_SHARD", True, 37.14),
           ("h100", "3b", 8192, 8, 3, 6, "FULL_SHARD", False, 40.31),
           ("h100", "1b", 8192, 8, 3, 4, "FULL_SHARD", False, 37.73),
           ("a100-80gb", "70b", 2048, 64, 8, 4, "FULL_SHARD", True, 53.33),
           ("a100-80gb", "30b", 2048, 8, 3, 21, "FULL_SHARD", True, 55.3),
           ("a100-80gb", "13b", 2048, 8, 2, 3, "FULL_SHARD", False, 59.57),
           ("a100-80gb", "13b", 8192, 8, 5, 3, "FULL_SHARD", True, 56.07),
           ("a100-80gb", "7b", 2048, 8, 6, 2, "FULL_SHARD", False, 64.23),
           ("a100-80gb", "7b", 8192, 8, 8, 2, "FULL_SHARD", True, 54.47),
           ("a100-80gb", "3b", 8192, 8, 3, 6, "FULL_SHARD", False, 59.34)]
# measured relative MFU error with --framework llm-foundry (VALIDATION.md): rows past 15% are
# strict xfails carrying their error. Since issue 45 the stack's attention call and its sustained
# matmul rate on each GPU are fitted (validation/calibration.py: foundry-6, 12, 13 and 18 set them,
# the other 17 rows judge them); every row is within 15%.
FOUNDRY_MISS = {}


def foundry_argv(row, framework):
    gpu, model, s, n, b, ga, sharding, ckpt, _ = row
    L, h, a = MPT[model]
    return ["-l", str(L), "-hs", str(h), "-a", str(a), "-v", "50368", "--bias", "--tied-embeddings",
            "--position-embedding", "learned", "--norm", "layernorm", "-s", str(s), "--gpu", gpu,
            "--num-gpus", str(n), "-b", str(b), "--global-batch-size", str(n * b * ga),
            "-z", "3" if sharding == "FULL_SHARD" else "2", "--recompute", "full" if ckpt else "none",
            "--framework", framework]


def _foundry_param(i, row):
    marks = ()
    if i in FOUNDRY_MISS:
        marks = pytest.mark.xfail(strict=True, reason=f"ours +{FOUNDRY_MISS[i]}% MFU (VALIDATION.md)")
    return pytest.param(row, marks=marks, id=f"{row[0]}-{row[1]}-s{row[2]}-n{row[3]}")


@pytest.mark.parametrize("row", [_foundry_param(i, r) for i, r in enumerate(FOUNDRY)])
def test_llm_foundry_mfu_within_15_percent(row, capsys):
    res = run(foundry_argv(row, "llm-foundry"), capsys)
    assert res["mfu"] * 100 == pytest.approx(row[-1], rel=0.15)


def test_eager_kernels_move_every_llm_foundry_row_toward_the_measurement(capsys):
    # the eager model is slower than the fused default on every row (the default framework runs the
    # same matmuls at the GPU's own sustained rate, so the published MFU is below it on every row)
    for row in FOUNDRY:
        fused = run(foundry_argv(row, "megatron"), capsys)["mfu"] * 100
        eager = run(foundry_argv(row, "llm-foundry"), capsys)["mfu"] * 100
        assert eager < fused and row[-1] < fused, (row, eager, fused)


def test_eager_kernel_counts_from_the_module_source():
    # HF LlamaRMSNorm / torch's composite rms_norm: 8 kernels forward, 15 backward; LayerNorm 1 + 2
    f, b = T.eager_norm_kernels(norm="rmsnorm", width=1)
    assert (len(f), len(b), sum(f), sum(b)) == (8, 15, 36, 92)
    assert T.eager_norm_kernels(norm="layernorm", width=1) == ([4], [6, 4])
    # flash-attn varlen pad/unpad: 5 copies forward, 8 backward (incl. the fused-QKV split's cat)
    f, b = T.eager_attention_glue_kernels(style="llm-foundry", q_width=1, kv_width=1)
    assert (len(f), len(b)) == (5, 8)
    # FSDP: per micro-batch the bf16 gradient cat, fp32 cast and pre-divide over the whole unit
    f, b = T.eager_grad_kernels_bytes(params=100, shard=25, reduce_bytes=4, fsdp=True, regather=True,
                                      microbatches=1)
    assert f == [150] and b == [150, 400, 600, 800, 200]


def test_pytorch_framework_runs_a_llama_and_a_moe(capsys):
    for name in ("llama-3-8b", "mixtral-8x7b"):
        fused = run(["--hf_model_name_or_path", config_path(name), "--gpu", "h100", "--num-gpus", "8",
                     "--global-batch-size", "8", "-b", "1", "-z", "3", "-s", "4096"], capsys)
        eager = run(["--hf_model_name_or_path", config_path(name), "--gpu", "h100", "--num-gpus", "8",
                     "--global-batch-size", "8", "-b", "1", "-z", "3", "-s", "4096", "--framework", "pytorch"], capsys)
        assert eager["step_time_s"] > fused["step_time_s"]
        assert eager["layout"]["framework"] == "pytorch"


def test_bad_framework_exits_2_in_one_line():
    from conftest import exit_code_and_stderr
    for argv in (["--framework", "jax"], ["--grad-reduce-dtype", "fp8"]):
        code, err = exit_code_and_stderr(T.main, argv)
        assert code == 2 and err.count("\n") == 1, (argv, err)


# --- --framework deepspeed (issue 33) ---------------------------------------------------------------

@pytest.mark.xfail(strict=True, reason="MT-NLG on DeepSpeed's pipeline engine: 60.1/50.2/44.4 s; --framework "
                   "deepspeed gives 24.0-26.8% less (VALIDATION.md)")
def test_mt_nlg_530b_on_deepspeed_within_15_percent(capsys):
    # Smith et al. 2022 (arXiv 2201.11990) sec. 2.4: DeepSpeed's pipeline engine with Megatron's tensor
    # slicing, batch 1920, sequence 2048, tp 8 x pp 35 on 280/350/420 DGX A100 nodes; micro-batch 1 and
    # full recompute assumed (not stated)
    for n, t in ((2240, 60.1), (2800, 50.2), (3360, 44.4)):
        r = run(gpt(105, 20480, 128) + ["-tp", "8", "-pp", "35", "--num-gpus", str(n), "--global-batch-size",
                                        "1920", "-b", "1", "--recompute", "full", "--no-sequence-parallel",
                                        "--framework", "deepspeed"], capsys)
        assert r["step_time_s"] == pytest.approx(t, rel=0.15)


@pytest.mark.parametrize("flags,text", [
    (["-pp", "2", "-vp", "2"], "-vp > 1"),
    (["-pp", "2", "-z", "2"], "incompatible with its pipeline engine"),
    (["-cp", "2"], "-cp > 1"),
    (["--tp-comm-overlap", "full"], "--tp-comm-overlap full"),
    (["--offload-device", "cpu"], "--offload-device needs --offload"),
    (["-z", "1", "--offload-params"], "--offload-params under --framework deepspeed needs -z 3"),
    (["-z", "3", "--offload-activations"], "--offload-activations"),
    (["-z", "3", "--offload", "--offload-device", "nvme"], "NVMe offload needs --nvme-gbps"),
    (["--search", "--global-batch-size", "16"], "--search"),
])
def test_deepspeed_refuses_what_its_engine_does_not_run(flags, text, capsys):
    code = None
    try:
        T.main(gpt(24, 2304, 24) + ["-tp", "2", "--num-gpus", "8", "-b", "1", "--framework", "deepspeed"] + flags)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and text in err and err.count("\n") == 1, err


def test_deepspeed_flags_need_the_framework(capsys):
    with pytest.raises(SystemExit) as e:
        T.main(gpt(24, 2304, 24) + ["--num-gpus", "8", "--nvme-gbps", "3"])
    assert e.value.code == 2 and "add --framework deepspeed" in capsys.readouterr().err


PRUNING_CASES = {
    # dense, 8 GPUs in nodes of 2 (tp across nodes), a batch that rounds down to dp
    "dense": ["-l", "4", "-hs", "1024", "-a", "16", "-v", "32000", "-s", "4096", "--gpu", "h100", "--num-gpus", "8",
              "--gpus-per-node", "2", "--global-batch-size", "20"],
    # tight memory: offload, ZeRO-3 and recompute have to compete
    "tight": ["-l", "12", "-hs", "4096", "-a", "32", "-v", "32000", "-s", "4096", "--gpu", "a100", "--num-gpus", "8",
              "--global-batch-size", "16", "--gpu-memory-gib", "24"],
    "moe": ["--hf_model_name_or_path", config_path("mixtral-8x7b"), "-l", "2", "-s", "4096", "--gpu", "h100",
            "--num-gpus", "8", "--global-batch-size", "16"],
    "eager fsdp": ["-l", "8", "-hs", "2048", "-a", "16", "-v", "32000", "-s", "2048", "--gpu", "h100",
                   "--num-gpus", "8", "--global-batch-size", "32", "--framework", "pytorch"],
    "megatron-2022": ["-l", "8", "-hs", "2048", "-a", "16", "-v", "32000", "-s", "2048", "--gpu", "a100",
                      "--num-gpus", "16", "--global-batch-size", "32", "--framework", "megatron-2022"],
    # 13 layers: every pp > 1 is an uneven split (--decoder-first/last-pipeline-num-layers)
    "uneven pipeline": ["-l", "13", "-hs", "4096", "-a", "32", "-v", "32000", "-s", "4096", "--gpu", "a100",
                        "--num-gpus", "8", "--global-batch-size", "16", "--gpu-memory-gib", "30"],
}


@pytest.mark.parametrize("name", list(PRUNING_CASES))
def test_pruning_changes_no_answer(name, monkeypatch, capsys):
    # The search's cuts (dominated TP/DP-overlap modes and ZeRO-1, the layers-only lower bound, the
    # memory break, the offloaded twin) against costing every candidate: the same best times.
    orig = T.search_layouts
    seen = {}

    def both(spec, base, **kw):
        full, n_full, _ = orig(spec, base, exhaustive=True, **kw)
        pruned, n_pruned, groups = orig(spec, base, **kw)
        seen.update(full=full, pruned=pruned, n_full=n_full, n_pruned=n_pruned)
        return pruned, n_pruned, groups
    monkeypatch.setattr(T, "search_layouts", both)
    run(PRUNING_CASES[name] + ["--search", "--top", "3"], capsys)
    full, pruned = seen["full"], seen["pruned"]
    assert pruned[0][0] == pytest.approx(full[0][0], rel=1e-12)  # the answer
    # and the rows shown: every costed row, less the ones a kept row dominates (search_knobs' rules:
    # a less overlapping TP mode, DP reduction left exposed; more offloads
    # where the same layout fits with fewer at no more time)
    fw = PRUNING_CASES[name][PRUNING_CASES[name].index("--framework") + 1] if "--framework" in PRUNING_CASES[name] \
        else "megatron"
    legacy = fw.startswith("megatron-")
    kinds = ("offload", "offload_params", "offload_activations")
    key = lambda ly: tuple(sorted((k, v) for k, v in ly.items() if k not in kinds))  # noqa: E731
    by_key = {}
    for t, ly, _ in full:
        by_key.setdefault(key(ly), []).append((tuple(ly[k] for k in kinds), t))

    def offloads_more_for_nothing(t, ly):  # a costed twin with fewer offloads is as fast
        mine = tuple(ly[k] for k in kinds)
        return any(o != mine and all(a <= b for a, b in zip(o, mine)) and to <= t for o, to in by_key[key(ly)])

    zero1 = {}  # the fastest ZeRO-1 twin of each ZeRO-2 layout (search_layouts' fourth cut)
    for t, ly, _ in full:
        if ly["zero_stage"] == 1:
            k = key(dict(ly, zero_stage=2)) + (tuple(ly[x] for x in kinds),)
            zero1[k] = min(t, zero1.get(k, math.inf))

    def kept(t, ly):
        return not ((ly["tp"] > 1 and ly["tp_comm_overlap"] != ("backward" if legacy else "full"))
                    or (fw == "megatron" and ly["zero_stage"] == 2 and ly["num_microbatches"] > 1
                        and zero1.get(key(ly) + (tuple(ly[x] for x in kinds),), math.inf) <= t)
                    or (fw == "megatron" and ly["zero_stage"] == 1 and ly["num_microbatches"] == 1)
                    or (not legacy and not ly["dp_overlap"] and ly["dp"] * ly["cp"] > 1)
                    or offloads_more_for_nothing(t, ly))
    expect = [t for t, ly, _ in full if kept(t, ly)]
    assert [r[0] for r in pruned[:3]] == pytest.approx(expect[:3], rel=1e-12)
    assert seen["n_pruned"] < seen["n_full"]


# --- GPU choice and count ------------------------------------------------------------------------

CLUSTERS = ["--hf_model_name_or_path", config_path("llama-2-7b"), "-s", "2048", "--global-batch-size", "64",
            "--gpu", "h100,h200", "--num-gpus", "16,32", "--search", "--tokens", "1T", "--top", "3"]


def test_clusters_answer_days_gpu_hours_and_cost_for_each(capsys):
    res = run(CLUSTERS + ["--cost-per-gpu-hour", "2.5,3.5", "--rank-by", "cost"], capsys)
    cl = res["clusters"]
    assert sorted((c["gpu_key"], c["num_gpus"]) for c in cl) == [("h100", 16), ("h100", 32), ("h200", 16),
                                                                 ("h200", 32)]
    for c in cl:
        price = 2.5 if c["gpu_key"] == "h100" else 3.5
        days = 1e12 / 2048 * c["time_per_sequence_s"] / 86400
        assert c["days"] == pytest.approx(days, rel=1e-12)
        assert c["gpu_hours"] == pytest.approx(days * 24 * c["num_gpus"], rel=1e-12)
        assert c["cost"] == pytest.approx(c["gpu_hours"] * price, rel=1e-12)
    assert [c["cost"] for c in cl] == sorted(c["cost"] for c in cl)  # the cheapest first
    # the winner is the report's layout, run and cost; each listed layout names its GPU
    assert (res["gpu"], res["num_gpus"]) == (cl[0]["gpu"], cl[0]["num_gpus"])
    assert res["training"]["cost"] == pytest.approx(cl[0]["cost"], rel=1e-12)
    assert all(x["gpu"] in (cl[0]["gpu"], cl[1]["gpu"], cl[2]["gpu"], cl[3]["gpu"]) for x in res["layouts"])
    assert res["layouts"][0]["gpu"] == cl[0]["gpu"]


def test_a_cluster_in_a_list_answers_as_it_does_alone(capsys):
    # memory reused across GPU kinds (search_layouts' memo) changes no answer
    # and the list across clusters is the best of each one's own list (a cluster's search stops
    # early once nothing it has left can enter the list)
    res = run(CLUSTERS, capsys)
    merged = []
    for c in res["clusters"]:
        alone = run(CLUSTERS[:CLUSTERS.index("--gpu")] + ["--gpu", c["gpu_key"], "--num-gpus", str(c["num_gpus"]),
                                                          "--search", "--top", "3"], capsys)
        assert alone["step_time_s"] == c["step_time_s"] and alone["layouts"][0]["gpu"] == c["gpu"]
        merged += [x["step_time_s"] / x["global_batch_size"] for x in alone["layouts"]]
    assert [x["step_time_s"] / x["global_batch_size"] for x in res["layouts"]] == sorted(merged)[:3]
    times = [c["time_per_sequence_s"] for c in res["clusters"]]
    assert times == sorted(times)  # --rank-by time: the soonest first


def test_a_deadline_puts_the_clusters_that_meet_it_first(capsys):
    soonest = run(CLUSTERS, capsys)["clusters"]
    d = (soonest[0]["days"] + soonest[-1]["days"]) / 2
    res = run(CLUSTERS + ["--cost-per-gpu-hour", "2.5,3.5", "--rank-by", "cost", "--deadline-days", str(d)], capsys)
    flags = [c["meets_deadline"] for c in res["clusters"]]
    assert flags == sorted(flags, reverse=True) and flags[0] and not flags[-1]
    met = [c["cost"] for c in res["clusters"] if c["meets_deadline"]]
    assert met == sorted(met)


def test_cluster_lists_exit_2_in_one_line():
    from conftest import exit_code_and_stderr
    base = ["-l", "4", "-hs", "1024", "-a", "16", "--global-batch-size", "16"]
    for argv in (["--gpu", "h100,h200", "--num-gpus", "8"], ["--gpu", "h100", "--num-gpus", "8,16"],
                 ["--gpu", "h100,", "--num-gpus", "8", "--search"],
                 ["--gpu", "h100,h200,b200", "--num-gpus", "8", "--search", "--cost-per-gpu-hour", "1,2"],
                 ["--gpu", "h100,h200", "--num-gpus", "8", "--search", "--peak-tflops", "900"],
                 ["--gpu", "h100", "--num-gpus", "8", "--search", "--deadline-days", "3"],
                 ["--gpu", "h100,nope", "--num-gpus", "8", "--search"],
                 ["--gpu", "h100", "--num-gpus", "8,0", "--search"]):
        code, err = exit_code_and_stderr(T.main, base + argv)
        assert code == 2 and err.count("\n") == 1, (argv, err)


def test_weights_and_activations_in_host_memory(capsys):
    # --offload-params / --offload-activations (train/offload.py): the GPU keeps two layers' weights
    # (the embedding and head whole) and two layers' stored activations; the copies only add time.
    # Not validated against a measurement: the rule is Calculon's (weight_offload, activations_offload).
    base = ["-l", "24", "-hs", "2048", "-a", "16", "-s", "2048", "--gpu", "a100", "--num-gpus", "8", "-tp", "2",
            "--global-batch-size", "32", "-b", "2", "-z", "2"]
    on = run(base, capsys)
    both = run(base + ["--offload-params", "--offload-activations"], capsys)
    assert both["step_time_s"] >= on["step_time_s"]
    m0, m1 = on["memory"], both["memory"]
    emb = T.stage_params_per_rank(T.resolve_model_spec(vars(T.build_parser().parse_args(base)))[0], tp=2, pp=1, vp=1,
                                  etp=2, ep=1, stage=0)[2]
    per_param = m0["weights_bytes"] / m0["params_per_gpu"]
    layers_w = m0["weights_bytes"] - emb * per_param
    assert m1["weights_bytes"] == pytest.approx(emb * per_param + layers_w * 2 / 24, rel=1e-9)
    assert m1["activations_layers_bytes"] == pytest.approx(m0["activations_layers_bytes"] * 2 / 24, rel=1e-9)
    assert m1["host_bytes"] == pytest.approx(m0["total_bytes"] - m1["total_bytes"], rel=1e-9)
    from conftest import exit_code_and_stderr
    for argv in (["-z", "3", "--offload-params"], ["--framework", "megatron-2022", "--offload-activations"],
                 ["--framework", "pytorch", "--offload-params", "--search"]):
        code, err = exit_code_and_stderr(T.main, base[:-2] + argv)
        assert code == 2 and err.count("\n") == 1, (argv, err)


# --- Uneven pipeline stages (Megatron-LM's --decoder-first/last-pipeline-num-layers and
# --account-for-embedding/loss-in-pipeline-split; one meaning with calc_transformer_mem.py)

L61 = ["-l", "61", "-hs", "2048", "-a", "16", "-v", "32000", "-s", "2048", "--gpu", "h100", "--num-gpus", "16",
       "-pp", "16", "--global-batch-size", "64", "-b", "1"]


def test_uneven_layers_take_the_split_the_refusal_used_to_name(capsys):
    # before issue 45 this layout was refused, naming the split to state; now it is applied and said
    res = run(L61, capsys)
    flags = "--decoder-first-pipeline-num-layers 2 --decoder-last-pipeline-num-layers 3"
    assert flags in res["pipeline_split_applied"]
    stated = run(L61 + flags.split(), capsys)
    assert stated["step_time_s"] == res["step_time_s"]


@pytest.mark.parametrize("extra", [["--decoder-first-pipeline-num-layers", "5", "--decoder-last-pipeline-num-layers", "5"],
                                   ["--decoder-first-pipeline-num-layers", "3", "--account-for-loss-in-pipeline-split"],
                                   ["--account-for-embedding-in-pipeline-split"]])
def test_bad_splits_refused_as_calc_transformer_mem_refuses_them(extra, capsys):
    # the same rule and words in both tools (train/memory.pipeline_split_error)
    msgs = []
    for main, argv in ((T.main, L61 + extra), (calc_transformer_mem.main, L61[:8] + ["-pp", "16", "--num-gpus", "16"]
                                                                          + extra)):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        msgs.append(capsys.readouterr().err.strip().split("error: ")[-1])
    assert msgs[0] == msgs[1]


def test_uneven_stages_costed_by_their_layers(capsys):
    # 3 layers and the embedding on stage 0, 4 on each middle stage, 2 and the head on the last:
    # the middle stages are the slowest and set the pace; the first is faster by about a layer
    res = run(L61 + ["--decoder-first-pipeline-num-layers", "3", "--decoder-last-pipeline-num-layers", "2",
                     "--json"], capsys)
    st = res["stage_time_s"]
    assert len(st) == 16 and st[1] == max(st) and st[0] < st[1] and st[1] == pytest.approx(st[8])
    assert st[1] - st[0] == pytest.approx(st[1] / 4, rel=0.1)
    assert res["slowest_stage"] not in (0, 15)


def _one_f_one_b_s(f, b, m):
    """Megatron-LM's non-interleaved 1F1B (forward_backward_pipelining_without_interleaving: stage i
    runs p - i - 1 warm-up forwards, then one forward and one backward in turn, then the cool-down
    backwards), each op starting when its stage is free and its input has arrived: the step time."""
    p = len(f)
    fin_f = [[None] * m for _ in range(p)]
    fin_b = [[None] * m for _ in range(p)]
    orders = []
    for i in range(p):
        w = min(p - i - 1, m)
        ops = [("f", j) for j in range(w)]
        for j in range(m - w):
            ops += [("f", w + j), ("b", j)]
        ops += [("b", j) for j in range(m - w, m)]
        orders.append(ops)
    pos, clock = [0] * p, [0.0] * p
    while any(pos[i] < 2 * m for i in range(p)):
        for i in range(p):
            while pos[i] < 2 * m:
                kind, j = orders[i][pos[i]]
                dep = (0.0 if i == 0 else fin_f[i - 1][j]) if kind == "f" else \
                    (fin_f[i][j] if i == p - 1 else fin_b[i + 1][j])
                if dep is None:
                    break
                clock[i] = max(clock[i], dep) + (f[i] if kind == "f" else b[i])
                (fin_f if kind == "f" else fin_b)[i][j] = clock[i]
                pos[i] += 1
    return max(clock)


@pytest.mark.parametrize("layers,m", [([7] + [8] * 14 + [7], 64), ([3] + [4] * 14 + [2], 128), ([8] * 16, 16),
                                      ([7] + [8] * 14 + [7], 16)])
def test_pipeline_time_matches_the_1f1b_schedule_on_uneven_stages(layers, m):
    # pipeline_time_s (slowest stage x m, plus the fill and drain) against the schedule itself,
    # stages uneven (Llama 3 405B's 7/8/7 layers, DeepSeek-V3's 3/4/2) with the embedding on the
    # first and a head of 1.5 layers on the last, backward = 2 x forward
    f = [float(x) for x in layers]
    f[0] += 0.3
    f[-1] += 1.5
    b = [2 * x for x in f]
    ours = T.pipeline_time_s([x + y for x, y in zip(f, b)], m=m, vp=1)
    assert ours == pytest.approx(_one_f_one_b_s(f, b, m), rel=0.01)


def test_search_takes_an_uneven_split_where_the_layers_do_not_divide(capsys):
    res = run(["-l", "61", "-hs", "4096", "-a", "32", "-v", "32000", "-s", "4096", "--gpu", "a100", "--num-gpus", "16",
               "--global-batch-size", "64", "--gpu-memory-gib", "40", "--search", "--top", "20", "--json"], capsys)
    uneven = [x for x in res["layouts"] if x["pp"] > 1]
    assert uneven and all(x["decoder_first_pipeline_num_layers"] for x in uneven)
    with pytest.raises(SystemExit) as e:
        T.main(L61 + ["--decoder-first-pipeline-num-layers", "3", "--decoder-last-pipeline-num-layers", "2", "--search"])
    assert e.value.code == 2 and "chooses the split" in capsys.readouterr().err


def test_search_streams_weights_and_activations_only_when_nothing_else_fits(capsys):
    # Weight and activation offload are validated against no measurement: the search takes them
    # only in a second pass, when no layout of the GPUs fits without (search_layouts' `streaming`).
    llama7 = ["--hf_model_name_or_path", config_path("llama-2-7b"), "--gpu", "h100", "--num-gpus", "64", "-s", "4096",
              "--global-batch-size", "512", "--search", "--top", "10", "--json"]
    res = run(llama7, capsys)
    assert not any(x["offload_params"] or x["offload_activations"] for x in res["layouts"])
    # 12 layers of h 4096 on 2 GPUs of 8 GiB: nothing fits without streaming the weights
    tight = run(["-l", "12", "-hs", "4096", "-a", "32", "-v", "32000", "-s", "2048", "--gpu", "a100", "--num-gpus", "2",
                 "--global-batch-size", "2", "--gpu-memory-gib", "8", "--search", "--json"], capsys)
    assert tight["layouts"][0]["offload_params"] or tight["layouts"][0]["offload_activations"]


def test_zero2_reduce_scatters_every_micro_batch_under_megatron(capsys):
    # ZeRO-2 keeps only its gradient shard, so each micro-batch's gradients are reduce-scattered
    # after its backward (Rajbhandari et al. 2020 sec. 5.2); Megatron-LM's distributed optimizer
    # (ZeRO-1) accumulates the whole step's and reduces once. One micro-batch: the same step.
    base = ["-l", "32", "-hs", "4096", "-a", "32", "--num-kv-heads", "8", "--ffn-hidden-size", "14336", "--swiglu",
            "--gpu", "h100", "--num-gpus", "16", "--gpus-per-node", "8", "-s", "4096", "-b", "1", "--json"]
    r = {(z, g): run(base + ["-z", z, "--global-batch-size", g], capsys) for z in ("1", "2") for g in ("16", "128")}
    assert r[("2", "16")]["step_time_s"] == pytest.approx(r[("1", "16")]["step_time_s"], rel=1e-12)
    dp1, dp2 = (r[(z, "128")]["breakdown_s"]["exposed_dp_comm"] for z in ("1", "2"))
    assert r[("2", "128")]["step_time_s"] > r[("1", "128")]["step_time_s"] and dp2 > dp1
    assert r[("2", "128")]["total_bytes"] < r[("1", "128")]["total_bytes"]


def test_pytorch_tensor_parallel_is_sequence_parallel_as_torchtitan_runs_it(capsys):
    # torchtitan's apply_tp (models/llama3/infra/parallelize.py) puts SequenceParallel on every norm:
    # under --framework pytorch -tp > 1 sequence parallelism is the default; --no-sequence-parallel
    # still turns it off. Its op-SAC saves reduce-scatter outputs, not all-gathers: the recompute
    # gathers again.
    base = ["-l", "8", "-hs", "4096", "-a", "32", "--gpu", "h100", "--num-gpus", "8", "-tp", "8", "-z", "3",
            "--framework", "pytorch", "-s", "4096", "-b", "2", "--global-batch-size", "2", "--json"]
    on, off = run(base, capsys), run(base + ["--no-sequence-parallel"], capsys)
    assert on["layout"]["sequence_parallel"] and not off["layout"]["sequence_parallel"]
    sac = run(base + ["--recompute", "op-sac"], capsys)
    none = run(base + ["--recompute", "none"], capsys)
    assert sac["breakdown_s"]["exposed_tp_comm"] > none["breakdown_s"]["exposed_tp_comm"]


def test_moe_a2a_overlap_hides_the_ep_all_to_alls_behind_the_other_pass(capsys):
    # Megatron-Core's --overlap-moe-expert-parallel-comm (Megatron-Bridge moe_a2a_overlap): the
    # forward's all-to-alls beside another micro-batch's backward and the other way round; what
    # outlasts the compute stays exposed, and nothing else changes
    base = ["--hf_model_name_or_path", config_path("qwen3-30b-a3b"), "--gpu", "h100", "--num-gpus", "16",
            "-ep", "16", "-s", "4096", "-b", "1", "--global-batch-size", "64", "--recompute", "none", "--json"]
    off, on = run(base, capsys), run(base + ["--moe-a2a-overlap"], capsys)
    assert 0 <= on["breakdown_s"]["exposed_ep_comm"] < off["breakdown_s"]["exposed_ep_comm"]
    assert on["breakdown_s"]["compute_moe_experts"] == off["breakdown_s"]["compute_moe_experts"]
    assert on["step_time_s"] < off["step_time_s"]


def test_a_job_inside_one_nvlink_domain_never_touches_the_network(capsys):
    # A 64-GPU job on a GB200 NVL72 rack (Megatron-Bridge's GPT-OSS row: EP 64) is one NVLink
    # domain of 64 GPUs, not gcd(64, 72) = 8 GPUs per "node": its expert all-to-all and DP
    # reductions do not change when the network is slowed a thousandfold.
    base = ["--hf_model_name_or_path", config_path("gpt-oss-120b"), "--gpu", "gb200", "--num-gpus", "64",
            "-ep", "64", "-s", "8192", "-b", "1", "--global-batch-size", "128", "--recompute", "none", "--json"]
    fast, slow = run(base, capsys), run(base + ["--inter-node-bw-GBps", "0.05"], capsys)
    assert fast["layout"]["gpus_per_node"] == 64
    assert slow["step_time_s"] == pytest.approx(fast["step_time_s"], rel=1e-9)
    # past the domain (128 GPUs on 72-GPU racks) the network is used again
    big = base[:base.index("--num-gpus") + 1] + ["128"] + base[base.index("--num-gpus") + 2:]
    b_fast, b_slow = run(big, capsys), run(big + ["--inter-node-bw-GBps", "0.05"], capsys)
    assert b_slow["step_time_s"] > b_fast["step_time_s"]


def test_a_deadline_on_one_run_says_whether_it_is_met(capsys):
    # --deadline-days without a list of clusters answers for the one run (it was accepted and not
    # used): met exactly when the run's days are within it, on the same run's days
    base = ["--hf_model_name_or_path", config_path("llama-2-7b"), "--gpu", "h100", "--num-gpus", "64", "-s", "4096",
            "--global-batch-size", "512", "--tokens", "1T"]
    days = run(base, capsys)["training"]["days"]
    for d, met in ((days * 1.01, True), (days * 0.99, False)):
        t = run(base + ["--deadline-days", str(d)], capsys)["training"]
        assert t["days"] == days and t["deadline_days"] == d and t["meets_deadline"] is met
