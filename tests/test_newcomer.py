"""What a new user trips on (issue 46), one test per finding: next steps spelled as the user ran
the tool, --brief that a script can read (one number format, a verdict and its exit status), one
default model shape in every tool, a 128k question that is a 128k context, the smaller flags
(--prompt-tokens in mem, comm's --op spellings, --version), costs in dollars, agreeing plurals, and
a script copied alone that still knows the default accelerator."""
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import llmcalc.__main__ as python_m
import llmcalc.commands as entry
from conftest import ROOT, config_path, run_main

import calc_comm
import calc_inference_latency
import calc_training_time
import calc_transformer_flops
import calc_transformer_mem
import calc_transformer_params
import hardware

from llmcalc.cli import VERSION, brief_number

SCRIPTS = {"params": calc_transformer_params, "flops": calc_transformer_flops,
           "mem": calc_transformer_mem, "train-time": calc_training_time,
           "latency": calc_inference_latency, "comm": calc_comm, "hardware": hardware}
TOO_BIG = ["-l", "80", "-hs", "8192", "--num-gpus", "1"]  # a 70B-class model on one GPU


def _exit(main, argv):
    """(exit status, stdout, stderr) of main(argv): a SystemExit's code, else 0."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv))
            code = 0
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


# --- 1. next steps name the command the user ran ------------------------------------------------
@pytest.mark.parametrize("tool, argv", [("mem", TOO_BIG[:4]), ("train-time", TOO_BIG),
                                        ("flops", ["--num-gpus", "8", "--gpu", "h100"])])
def test_next_steps_are_spelled_as_the_user_ran_the_tool(tool, argv, monkeypatch, capsys):
    _, built, _ = run_main(SCRIPTS[tool].main, argv)
    assert "python3 calc_" in built  # a built script names the built scripts
    for spelling, run in (("llmcalc-", lambda: entry.run(tool, argv)),
                          ("python3 -m llmcalc ", lambda: python_m.main([tool, *argv]))):
        monkeypatch.setattr(sys, "argv", ["x"])
        run()
        out = capsys.readouterr().out
        assert "python3 calc_" not in out and re.search(re.escape(spelling) + r"(train-time|mem) ",
                                                        out), (spelling, out[-800:])
    _, again, _ = run_main(SCRIPTS[tool].main, argv)  # the spelling does not leak past the run
    assert again == built


# --- 2. --brief: one line, one number format, a verdict and its exit status -----------------------
BRIEF_NUMBER = r"(\d+|\d+\.\d+|\d\.\d{4}e[+-]\d\d)"


@pytest.mark.parametrize("tool", sorted(SCRIPTS))
def test_brief_is_one_line_in_one_number_format(tool):
    code, out, _ = _exit(SCRIPTS[tool].main, ["--brief"])
    lines = out.splitlines()
    assert code in (0, 3) and lines and (len(lines) == 1 or tool == "hardware")
    for line in lines:
        assert "," not in line.split(":")[-1].split(" in ")[0] or tool == "hardware", line
        nums = re.findall(r"[\d.]+(?:e[+-]\d+)?", line)
        assert nums and all(re.fullmatch(BRIEF_NUMBER, n) or n.count(".") > 1 for n in nums), line


def test_brief_number_format():
    # plain digits, 4 significant figures, whole numbers from 1000 up, scientific from 1e12
    assert [brief_number(x) for x in (8425.3, 65534.2, 0.7734, 12, 3.8436e22, 2.5e-5)] == \
        ["8425", "65534", "0.7734", "12", "3.8436e+22", "2.5000e-05"]


@pytest.mark.parametrize("tool, argv", [("mem", TOO_BIG[:4]), ("train-time", TOO_BIG),
                                        ("latency", TOO_BIG[:4] + ["-b", "64", "-s", "32768"])])
def test_brief_says_does_not_fit_and_exits_3(tool, argv):
    code, out, _ = _exit(SCRIPTS[tool].main, argv + ["--brief"])
    assert code == 3 and out.count("\n") == 1 and ": does not fit in 79.65 GiB" in out, out


@pytest.mark.parametrize("tool, argv", [("mem", ["-l", "4", "-hs", "1024"]),
                                        ("train-time", ["-l", "4", "-hs", "1024"]),
                                        ("latency", ["-l", "4", "-hs", "1024"])])
def test_brief_says_fits_and_exits_0(tool, argv):
    code, out, _ = _exit(SCRIPTS[tool].main, argv + ["--brief"])
    assert code == 0 and out.rstrip().endswith(": fits in 79.65 GiB"), out


def test_hardware_brief_is_one_line_per_accelerator():
    _, out, _ = run_main(hardware.main, ["h100", "--brief"])
    assert out == "h100-sxm: 989.4 TFLOP/s bf16, 3350 GB/s, 79.65 GiB\n"
    _, out, _ = run_main(hardware.main, ["--brief"])
    assert len(out.splitlines()) == len(hardware.list_accelerators())


@pytest.mark.parametrize("tool", ["params", "flops", "mem", "train-time", "latency"])
def test_model_warnings_reach_stderr_under_brief(tool):
    argv = ["--hf_model_name_or_path", config_path("gemma-3-27b-it"), "--brief", "-s", "1024"]
    if tool == "train-time":
        argv += ["--num-gpus", "8", "-tp", "8"]
    _, _, err = _exit(SCRIPTS[tool].main, argv)
    assert "warning: multimodal 'gemma3'" in err, err


def test_search_and_capacity_text_carry_the_model_warnings():
    gemma = ["--hf_model_name_or_path", config_path("gemma-3-27b-it"), "-s", "1024", "-o", "128"]
    _, out, _ = run_main(calc_inference_latency.main, gemma + ["--search", "--num-gpus", "8"])
    assert out.startswith("WARNING: ")
    _, out, _ = run_main(calc_inference_latency.main, gemma + [
        "--target-request-rate", "2", "--max-ttft-ms", "2000", "--num-requests", "200"])
    assert out.startswith("WARNING: ")


@pytest.mark.parametrize("tool", ["params", "flops", "mem", "train-time", "latency"])
def test_every_report_spells_warning_the_same(tool):
    argv = ["--hf_model_name_or_path", config_path("deepseek-v3"), "-s", "1024"]
    if tool == "train-time":
        argv += ["--num-gpus", "64", "-tp", "8", "-ep", "8", "--global-batch-size", "64"]
    if tool == "latency":
        argv += ["--num-gpus", "16", "-tp", "16"]
    _, out, _ = _exit(SCRIPTS[tool].main, argv)
    assert "WARNING: " in out and "warning:" not in out, out[:600]


def test_latency_stderr_is_empty_on_a_plain_run_and_notes_come_with_verbose():
    _, _, err = run_main(calc_inference_latency.main, [])
    assert err == ""
    _, _, err = run_main(calc_inference_latency.main, ["--verbose"])
    assert err.startswith("note: compute efficiency ")  # the note, not our constant's value


# --- 3. a 128k question is a 128k context ---------------------------------------------------------
def test_mem_at_the_trained_context_does_not_warn():
    llama = ["--hf_model_name_or_path", config_path("llama-3.1-8b"), "--infer"]
    res, _, _ = run_main(calc_transformer_mem.main, llama + ["-s", "131072"])
    assert not [w for w in res["warnings"] if "trained context" in w]
    res, _, _ = run_main(calc_transformer_mem.main, llama + ["-s", "131072", "-o", "2"])
    assert [w for w in res["warnings"] if "context 131,073 tokens" in w]


# --- 4. one default model shape ------------------------------------------------------------------
def test_every_tool_reads_the_cookbooks_default_shape():
    # EleutherAI cookbook calc/calc_transformer_mem.py (@827ee3b) defaults -a to 64 with h 6144,
    # L 44, V 51200; its params and flops scripts take no head count.
    heads = set()
    for tool in ("params", "flops", "mem", "train-time", "latency"):
        code, out, _ = _exit(SCRIPTS[tool].main, ["--json"])
        model = json.loads(out)["model"]
        heads.add((model["num_attention_heads"], model["head_dim"], model["hidden_size"]))
        assert model["described"].startswith("the cookbook's default shape")
    assert heads == {(64, 96, 6144)}


# --- 7. the smaller flags ------------------------------------------------------------------------
def test_mem_takes_prompt_tokens_as_flops_and_latency_do():
    a, _, _ = run_main(calc_transformer_mem.main, ["--infer", "--prompt-tokens", "4096"])
    b, _, _ = run_main(calc_transformer_mem.main, ["--infer", "-s", "4096"])
    assert a["total_bytes"] == b["total_bytes"] and a["config"]["sequence_length"] == 4096


@pytest.mark.parametrize("spelling", ["allreduce", "all_reduce_perf", "ncclAllReduce", "AllReduce",
                                      "all-reduce"])
def test_comm_takes_nccl_and_torch_spellings_of_an_op(spelling):
    base = ["--size", "1GiB", "--num-gpus", "8"]
    want, _, _ = run_main(calc_comm.main, base + ["--op", "all_reduce"])
    got, _, _ = run_main(calc_comm.main, base + ["--op", spelling])
    assert got["time_s"] == want["time_s"]
    a2a, _, _ = run_main(calc_comm.main, base + ["--op", "all_to_all"])
    assert a2a["inputs"]["op"] == "alltoall"


@pytest.mark.parametrize("tool", sorted(SCRIPTS))
def test_version_on_every_tool(tool):
    code, out, _ = _exit(SCRIPTS[tool].main, ["--version"])
    assert code == 0 and out.strip().endswith(f"(llmcalc) {VERSION}")


def test_version_agrees_with_pyproject():
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    assert f'version = "{VERSION}"' in text
    _, out, _ = run_main(python_m.main, ["--version"])
    assert out == f"llmcalc {VERSION}\n"


def test_costs_are_in_dollars():
    _, out, _ = run_main(calc_transformer_flops.main, ["--num-gpus", "8", "--gpu", "h100",
                                                       "--cost-per-gpu-hour", "2"])
    assert re.search(r"cost \$[\d,]+ at \$2\.00/GPU-hour", out)
    _, out, _ = run_main(calc_training_time.main, ["-l", "4", "-hs", "1024", "--tokens", "1e9",
                                                   "--cost-per-gpu-hour", "2"])
    assert re.search(r"cost \$1\.\d\d", out)


def test_one_micro_batch_is_singular():
    _, out, _ = run_main(calc_training_time.main, ["-l", "4", "-hs", "1024"])
    assert "  1 micro-batch of " in out and "1 micro-batches" not in out


def test_generating_no_tokens_prints_no_generate_row():
    _, out, _ = run_main(calc_transformer_flops.main, ["--infer", "-o", "0"])
    assert "generate 0 tokens" not in out and "prefill, 2,048 prompt tokens" in out


def test_a_script_copied_alone_knows_the_default_accelerator(tmp_path):
    for script in ("calc_training_time.py", "calc_comm.py"):
        shutil.copy(os.path.join(ROOT, script), tmp_path)
        for gpu in ("h100", "H100_SXM"):
            p = subprocess.run([sys.executable, script, "--gpu", gpu, "--brief", "-l", "4", "-hs",
                                "1024"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
            assert p.returncode == 0 and p.stderr == "", (script, p.stderr)
        p = subprocess.run([sys.executable, script, "--gpu", "h200"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "hardware.py" in p.stderr


def test_plot_labels_do_not_overlap_and_a_wide_front_is_drawn_on_a_log_axis():
    pytest.importorskip("matplotlib")
    from llmcalc.serve.search import _label_front, _log_scale_if_wide, _pyplot
    plt = _pyplot()
    # a front whose low end crowds (tokens/s per GPU 30 .. 6,300), labelled with long layouts
    front = [{"tokens_per_s_per_user": u, "tokens_per_s_per_gpu": g, "tp": 1, "pp": 1, "dp": 8,
              "ep": 8, "weight_bits": 8, "activation_bits": 8, "kv_cache_bits": 8, "concurrency": c}
             for u, g, c in ((6, 6300, 2048), (40, 5200, 1024), (160, 310, 16), (170, 165, 8),
                             (187, 92, 4), (230, 56, 2), (272, 33, 1))]
    fig, ax = plt.subplots(figsize=(7, 5))
    ax.plot([p["tokens_per_s_per_user"] for p in front], [p["tokens_per_s_per_gpu"] for p in front])
    _log_scale_if_wide(ax, [p["tokens_per_s_per_gpu"] for p in front])
    assert ax.get_yscale() == "log"
    _label_front(fig, ax, front)
    fig.canvas.draw()
    boxes = [t.get_window_extent() for t in ax.texts]
    assert len(boxes) >= 4
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]
    plt.close(fig)


# --- 5. progress of a search that takes over a second --------------------------------------------
class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("output", [[], ["--json"], ["--brief"]])
def test_a_long_training_search_shows_progress_on_a_terminal_only(output, monkeypatch):
    import llmcalc.cli
    monkeypatch.setattr(llmcalc.cli, "PROGRESS_AFTER_S", 0.0)  # as if a second had passed
    monkeypatch.setattr(calc_training_time, "PROGRESS_AFTER_S", 0.0)  # the built script's copy
    err, out = _Terminal(), io.StringIO()
    argv = ["-l", "8", "-hs", "1024", "--search", "--num-gpus", "16", "--global-batch-size", "64"]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        calc_training_time.main(argv + output)
    shown = "searching: " in err.getvalue()
    assert shown == (not output), err.getvalue()[-300:]
    assert "parallel shapes bounded" in err.getvalue() or output
    assert "searching" not in out.getvalue()  # stdout carries the answer alone
    assert not shown or err.getvalue().endswith("\r")  # cleared before the answer


# --- 6. comm across nodes: the caveat, and the Azure curve's bandwidth rows -----------------------
def test_a_multi_node_collective_carries_its_caveat():
    res, out, _ = run_main(calc_comm.main, ["--size", "1GiB", "--num-gpus", "16", "--gpu", "h100"])
    assert res["algorithm"] == "hierarchical" and len(res["caveats"]) == 1
    assert "caveat: " in out and "+11% to +14%" in out and "upper bound" in out
    res, out, _ = run_main(calc_comm.main, ["--size", "1GiB", "--num-gpus", "8", "--gpu", "h100"])
    assert res["caveats"] == [] and "caveat" not in out
    res, out, _ = run_main(calc_comm.main, ["--num-gpus", "16", "--gpu", "a100"])  # a sweep
    assert "# caveat: across nodes" in out


def _azure_rows():
    from nccl_tests_data import A100_AZURE_8GPU
    # 'AML_NCCL_Test' README, Azure NDmV4, 8 x A100 80GB, all_reduce_perf out-of-place busbw: the
    # 18 rows from 64 KiB up (below, busbw rounds to under 4 GB/s); 25% on busbw. Two are out,
    # strict xfails with their signed error: on a 28-29 us plateau above the 18.7 us small-message
    # floor, which this one-latency model does not have (VALIDATION.md, calc_comm.py).
    out = {65536: "+47.4%", 131072: "+37.5%"}
    return [pytest.param(size, busbw, marks=pytest.mark.xfail(strict=True, reason=out[size]))
            if size in out else pytest.param(size, busbw)
            for size, _, busbw in A100_AZURE_8GPU if size >= 65536]


@pytest.mark.parametrize("size, busbw", _azure_rows())
def test_azure_a100_all_reduce_busbw_within_25_percent(size, busbw):
    res, _, _ = run_main(calc_comm.main, ["--op", "all_reduce", "--size", str(size), "--num-gpus",
                                          "8", "--gpu", "a100"])
    assert abs(res["busbw_bytes_per_s"] / 1e9 / busbw - 1) < 0.25
