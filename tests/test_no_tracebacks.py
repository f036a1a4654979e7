"""Random, often absurd command lines never end in a traceback or a hang: every run either answers
(exit 0) or says what is wrong in one line (exit 2). Seeds are fixed, so failures reproduce."""
import contextlib
import importlib
import io
import random
import signal

import pytest

from conftest import config_path

COMMON = [("-l", "int"), ("-hs", "int"), ("-a", "int"), ("-v", "int"), ("--num-kv-heads", "int"),
          ("-kv", "float"), ("--head-dim", "int"), ("-ff", "float"), ("--ffn-hidden-size", "int"),
          ("-nl", "int"), ("--swiglu", None), ("--moe", None), ("-e", "int"), ("-t", "int"),
          ("-ei", "int"), ("--num-shared-experts", "int"), ("--num-dense-layers", "int"),
          ("--kv-lora-rank", "int"), ("--qk-nope-head-dim", "int"), ("--qk-rope-head-dim", "int"),
          ("--v-head-dim", "int"), ("--q-lora-rank", "int"), ("--hf_model_name_or_path", "cfg"),
          ("-s", "int"), ("--json", None), ("--position-embedding", "choice:learned,rope"),
          ("--max-position-embeddings", "int"), ("--moe-ffn-hidden-size", "int")]
PER_SCRIPT = {
    "calc_transformer_params": [],
    "calc_transformer_flops": [
        ("-b", "int"), ("--tokens", "float"), ("-ca", None), ("-i", None),
        ("--recompute", "choice:none,selective,full"), ("--attention-flops", "choice:full,causal"),
        ("--num-gpus", "int"), ("--peak-tflops", "float"), ("--mfu", "float"), ("--gpu", "gpu"),
        ("--prompt-tokens", "int"), ("--output-tokens", "int"), ("--cost-per-gpu-hour", "float")],
    "calc_transformer_mem": [
        ("-b", "int"), ("--num-gpus", "int"), ("-tp", "int"), ("-pp", "int"), ("-ep", "int"),
        ("-z", "choice:0,1,2,3"), ("-ca", None), ("-pa", None), ("--infer", None), ("-o", "int"),
        ("--gpu", "gpu"), ("--gpu-memory-gib", "float"), ("--sequence-parallel", None),
        ("--recompute", "choice:none,selective,full"), ("--global-batch-size", "int"),
        ("--virtual-pipeline-size", "int"), ("--optimizer", "choice:adam,sgd,lion,nope"),
        ("--weight-bits", "int"), ("--kv-cache-bits", "int"), ("--misc-mem-gib", "float"),
        ("--decoder-first-pipeline-num-layers", "int"), ("--decoder-last-pipeline-num-layers", "int"),
        ("--account-for-embedding-in-pipeline-split", None),
        ("--account-for-loss-in-pipeline-split", None)],
    "calc_inference_latency": [
        ("-b", "int"), ("-o", "int"), ("-tp", "int"), ("-pp", "int"), ("--gpu", "gpu"),
        ("--weight-bits", "int"), ("--kv-cache-bits", "int"), ("--prompt-tokens", "int"),
        ("--sliding-window", "int"), ("--request-overhead-ms", "float")],
    "calc_comm": [
        ("--op", "choice:all_reduce,all_gather,reduce_scatter,alltoall,broadcast,reduce,sendrecv,x"),
        ("--size", "size"), ("--num-gpus", "int"), ("--gpus-per-node", "int"), ("--gpu", "gpu"),
        ("--sweep", None), ("--train", None), ("-tp", "int"), ("-pp", "int"), ("-dp", "int"),
        ("-ep", "int"), ("-cp", "int"), ("--zero-stage", "choice:0,1,2,3"),
        ("--sequence-parallel", None), ("--algo", "choice:auto,ring,tree,nvls,hierarchical")],
}
CONFIGS = ["gpt2", "mixtral-8x7b", "deepseek-v2-lite", "falcon-7b", "qwen1.5-moe-a2.7b",
           "gemma-2-9b", "opt-350m"]


def _value(rng, kind):
    if kind == "int":
        return str(rng.choice([0, -1, 1, 2, 3, 4, 7, 8, 16, 64, 128, 1000, 4096, 2 ** 40]))
    if kind == "float":
        return str(rng.choice([0, -1, 0.5, 1, 2.6875, 1e9, 1e30, "nan", "inf"]))
    if kind == "cfg":
        name = rng.choice(CONFIGS + ["missing"])
        return "/no/such/config.json" if name == "missing" else config_path(name)
    if kind == "gpu":
        return rng.choice(["h100", "a100-80gb", "mi300x", "tpu-v5p", "nope", "l4", "v100-16gb"])
    if kind == "size":
        return rng.choice(["0", "-5", "1", "8", "1GB", "256MiB", "4e9", "abc", "1e30", "nan"])
    return rng.choice(kind.split(":", 1)[1].split(","))


def _timeout(*_):
    raise TimeoutError("no answer within 10 s")


@pytest.mark.parametrize("script", sorted(PER_SCRIPT))
def test_random_command_lines_answer_or_exit_2(script):
    mod = importlib.import_module(script)
    rng = random.Random(script)
    flags = COMMON + PER_SCRIPT[script]
    old = signal.signal(signal.SIGALRM, _timeout)
    try:
        for _ in range(150):
            argv = []
            for flag, kind in rng.sample(flags, rng.randint(0, 6)):
                argv += [flag] + ([_value(rng, kind)] if kind else [])
            signal.alarm(10)
            try:
                with contextlib.redirect_stdout(io.StringIO()), \
                        contextlib.redirect_stderr(io.StringIO()) as err:
                    mod.main(argv)
            except SystemExit as exc:
                assert exc.code in (0, 2, None), argv
                if exc.code == 2:  # notes may come first; the error itself is one line
                    lines = err.getvalue().strip().splitlines()
                    assert ": error: " in lines[-1], (argv, err.getvalue())
                    assert sum(": error: " in line for line in lines) == 1, argv
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, old)
