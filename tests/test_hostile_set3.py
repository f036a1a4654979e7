"""The third hidden set of hostile inputs (issue 46), each finding tested as its class: a closed
stdout in every entry point, an output encoding that cannot hold a path, a trace file that is not
what it claims (unreadable, a folder, a FIFO, a CSV field over csv's limit, JSON nested past the
recursion limit, an integer past Python's digit limit), a plot backend or a mathtext path, a
diagnostic stream that cannot be written, control characters in a path, a table beside the script
that an isolated interpreter does not put on sys.path, and one GPU named twice. Every run either
answers (exit 0) or says what is wrong in one line (exit 2)."""
import os
import subprocess
import sys

import pytest

import calc_inference_latency
import calc_training_time
from conftest import ROOT, config_path, exit_code_and_stderr, run_main
from llmcalc.serve import workload

SCRIPTS = ["calc_transformer_params.py", "calc_transformer_flops.py", "calc_transformer_mem.py",
           "calc_training_time.py", "calc_inference_latency.py", "calc_comm.py", "hardware.py"]
LLAMA = config_path("llama-3.1-8b")


def _run(argv, **kw):
    env = dict(os.environ, **kw.pop("env", {}))
    return subprocess.run(argv, cwd=kw.pop("cwd", ROOT), capture_output=True, text=True,
                          timeout=120, env=env, **kw)


def _one_line_error(p, *needles):
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and ": error: " in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and all(n in p.stderr for n in needles), p.stderr


# --- stdout closed (`cmd >&-`): every script, the installed commands' entry point, python -m ------
ENTRY = ("import sys; sys.argv = ['llmcalc-{0}']; from llmcalc import commands; "
         "commands.{1}()")
CLOSED = ([f"{sys.executable} {s}" for s in SCRIPTS]
          + [f"{sys.executable} -c \"{ENTRY.format(t, t.replace('-', '_'))}\""
             for t in ("params", "mem", "train-time", "hardware")]
          + [f"{sys.executable} -m llmcalc {t}" for t in ("flops", "latency", "comm")])


@pytest.mark.parametrize("command", CLOSED)
def test_a_closed_stdout_is_one_line_and_exit_2(command):
    p = _run(["bash", "-c", command + " >&-"])
    _one_line_error(p, "cannot write the output: standard output is closed")


@pytest.mark.parametrize("words", ["", "--help", "--version"])
def test_python_m_llmcalc_own_answers_into_a_reader_that_quit(words):
    """python -m llmcalc's tool list and version (not a tool's output) piped into a reader that
    has already gone: quiet, status 141, as every tool's output (was a BrokenPipeError
    traceback)."""
    p = _run(["bash", "-c", f"{sys.executable} -m llmcalc {words} | true; "
                            "exit ${PIPESTATUS[0]}"])
    assert p.returncode in (0, 141) and p.stderr == "", p.stderr[-800:]


# --- an output encoding that cannot hold the path ------------------------------------------------
def test_ascii_output_with_a_non_ascii_config_path(tmp_path):
    folder = tmp_path / "mödel-ü"
    folder.mkdir()
    (folder / "config.json").write_text(open(LLAMA, encoding="utf-8").read(), encoding="utf-8")
    for script in ("calc_transformer_params.py", "calc_inference_latency.py"):
        p = _run([sys.executable, script, "--hf_model_name_or_path", str(folder)],
                 env={"PYTHONIOENCODING": "ascii"})
        assert p.returncode == 0 and "m\\xf6del-\\xfc" in p.stdout, p.stderr[-800:]


def test_ascii_output_with_a_non_ascii_trace_path(tmp_path):
    trace = tmp_path / "trace-é.jsonl"
    trace.write_text('{"arrival_s": 0, "input_tokens": 100, "output_tokens": 5}\n')
    p = _run([sys.executable, "calc_inference_latency.py", "--trace", str(trace)],
             env={"PYTHONIOENCODING": "ascii"})
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-800:]
    p = _run([sys.executable, "calc_inference_latency.py", "--trace", str(tmp_path / "nö.jsonl")],
             env={"PYTHONIOENCODING": "ascii"})
    _one_line_error(p, "no such file")


# --- a trace file that is not what it claims -----------------------------------------------------
def _trace_error(path):
    code, err = exit_code_and_stderr(calc_inference_latency.main, ["--trace", str(path)])
    assert code == 2 and err.count("\n") == 1 and str(path).split("\n")[0] in err, err
    return err


def test_trace_folder_and_fifo_say_what_they_are(tmp_path):
    folder = tmp_path / "t.jsonl"
    folder.mkdir()
    assert "a folder, not a file" in _trace_error(folder)
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    assert "not a regular file" in _trace_error(fifo)
    assert "no such file" in _trace_error(tmp_path / "none.jsonl")


def test_an_unreadable_trace_is_one_line(tmp_path, monkeypatch):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"arrival_s": 0, "input_tokens": 100, "output_tokens": 5}\n')

    def denied(*_a, **_k):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(workload, "open", denied, raising=False)  # root reads any mode: refuse here
    with pytest.raises(ValueError, match=r"cannot read it \(Permission denied\)$"):
        workload.read_trace(str(trace))


@pytest.mark.parametrize("name, text, needle", [
    ("big.csv", "arrival_s,input_tokens,output_tokens\n0," + "1" * 140_000 + ",5\n",
     "line 2: not a CSV row (field larger than field limit"),
    ("deep.jsonl", "[" * 100_000 + "]" * 100_000 + "\n", "line 1: nests too deep"),
    ("long.jsonl", '{"arrival_s": 0, "input_tokens": ' + "9" * 5000 + ', "output_tokens": 3}\n',
     "line 1: input_tokens '999999999999... (5,000 digits)' is not a number"),
])
def test_a_hostile_trace_is_refused_naming_file_line_and_field(tmp_path, name, text, needle):
    path = tmp_path / name
    path.write_text(text)
    assert needle in _trace_error(path)


def test_a_5000_digit_integer_in_a_config_names_the_field(tmp_path):
    text = open(config_path("gpt2"), encoding="utf-8").read().replace('"n_embd": 768',
                                                                      '"n_embd": ' + "7" * 5000)
    path = tmp_path / "config.json"
    path.write_text(text)
    code, err = exit_code_and_stderr(calc_inference_latency.main,
                                     ["--hf_model_name_or_path", str(path)])
    assert code == 2 and "field 'n_embd'" in err and "(5,000 digits)" in err, err


# --- control characters in a path stay on one line -----------------------------------------------
@pytest.mark.parametrize("argv", [["--trace", "no\nsuch.jsonl"],
                                  ["--hf_model_name_or_path", "no\nsuch/config.json"],
                                  ["--search", "--plot", "/no/such\ndir/front.png"]])
def test_a_newline_in_a_path_keeps_the_error_on_one_line(argv):
    code, err = exit_code_and_stderr(calc_inference_latency.main, argv)
    assert code == 2 and err.count("\n") == 1 and "\\n" in err, err


# --- the plot: an unknown MPLBACKEND, a mathtext model path --------------------------------------
def test_plot_ignores_an_unknown_backend_and_draws_a_dollar_path(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    folder = tmp_path / "m$^$x"
    folder.mkdir()
    (folder / "config.json").write_text(open(config_path("gpt2"), encoding="utf-8").read())
    monkeypatch.setenv("MPLBACKEND", "no-such-backend")
    out = tmp_path / "front.png"
    _, _, err = run_main(calc_inference_latency.main,
                         ["--hf_model_name_or_path", str(folder), "--search", "--plot", str(out)])
    assert out.stat().st_size > 1000 and "written to" in err, err


# --- diagnostics that cannot be written never cost the answer ------------------------------------
def test_stderr_on_dev_full_keeps_the_answer():
    with open("/dev/full", "w") as full:
        for argv in (["calc_inference_latency.py", "--hf_model_name_or_path",
                      config_path("gpt2"), "-s", "4000", "--json"],
                     ["calc_transformer_mem.py", "--hf_model_name_or_path", config_path("gpt2"),
                      "--infer", "-s", "4000", "--brief"]):
            p = subprocess.run([sys.executable, *argv], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=full, text=True, timeout=120)
            assert p.returncode == 0 and p.stdout.strip(), argv


# --- the table beside the script under an isolated interpreter -----------------------------------
@pytest.mark.parametrize("how", [["-I"], ["-P"]])
def test_an_isolated_interpreter_finds_hardware_py_beside_the_script(how):
    if how == ["-P"] and sys.version_info < (3, 11):
        pytest.skip("-P (PYTHONSAFEPATH) is Python 3.11+")
    for script in ("calc_inference_latency.py", "calc_comm.py", "calc_training_time.py"):
        p = _run([sys.executable, *how, script, "--gpu", "h200", "--brief", "-l", "4", "-hs",
                  "1024"])
        assert p.returncode == 0 and "hardware.py" not in p.stderr, (script, p.stderr)


# --- the installed hardware command names itself --------------------------------------------------
def test_llmcalc_hardware_names_itself_in_errors():
    p = _run([sys.executable, "-c", "import sys; sys.argv = ['/venv/bin/llmcalc-hardware', "
              "'nope']; from llmcalc import commands; commands.hardware()"])
    _one_line_error(p, "llmcalc-hardware: error: unknown accelerator 'nope'")


# --- one GPU named twice -------------------------------------------------------------------------
@pytest.mark.parametrize("main, argv", [
    (calc_training_time.main, ["--gpu", "h100,H100,h100-sxm", "--search", "--num-gpus", "8",
                               "--global-batch-size", "8", "-l", "4", "-hs", "1024"]),
    (calc_inference_latency.main, ["--gpu", "h100,h100_sxm", "--target-request-rate", "2",
                                   "--max-ttft-ms", "1000"])])
def test_a_gpu_list_naming_one_gpu_twice_is_refused(main, argv):
    code, err = exit_code_and_stderr(main, argv)
    assert code == 2 and err.count("\n") == 1 and "lists h100-sxm twice" in err, err


# --- a 5,000-digit number in a flag: one short line naming the flag ------------------------------
BIG = "9" * 5000


@pytest.mark.parametrize("main, argv, flag", [
    ("calc_comm", ["--size", BIG], "size"),
    ("calc_inference_latency", ["--cost-per-gpu-hour", BIG, "--target-request-rate", "1",
                                "--max-ttft-ms", "100"], "--cost-per-gpu-hour"),
    ("calc_transformer_mem", ["--finetune", "lora", "--lora-targets", BIG], "--lora-targets"),
    ("calc_training_time", ["--num-gpus", f"8,{BIG}", "--search", "--global-batch-size", "8"],
     "--num-gpus"),
    ("calc_transformer_params", ["-l", BIG], "--num-layers"),
])
def test_a_5000_digit_flag_value_is_one_short_line_naming_the_flag(main, argv, flag):
    import importlib
    code, err = exit_code_and_stderr(importlib.import_module(main).main, argv)
    assert code == 2 and err.count("\n") == 1 and flag in err and len(err) < 300, err[:300]
