"""The capacity plan of calc_inference_latency.py (issue 34): --target-request-rate over a list of
GPU kinds under TTFT/TPOT targets at a percentile; its answer keys, its engine commands, its
consistency with the simulated benchmark it is built from, and the exit-2 rules. The plan is built
from the simulator (validated in tests/test_serving_mix.py and VALIDATION.md); no published fleet
size was found to judge it against as a whole."""
import contextlib
import io
import json
import os

import pytest

import calc_inference_latency as cil

HERE = os.path.dirname(os.path.abspath(__file__))
CFG = os.path.join(HERE, "fixtures", "configs")
L8 = ["--hf_model_name_or_path", os.path.join(CFG, "llama-3.1-8b.json")]
PLAN = L8 + ["--gpu", "a100-80gb,h100,h200", "--target-request-rate", "20", "-s", "1000", "-o", "200",
             "--max-ttft-ms", "500", "--max-tpot-ms", "30"]


def run(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        cil.main(argv + ["--json"])
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def priced():
    return run(PLAN + ["--cost-per-gpu-hour", "1.5,2.5,3.5"])


def test_plan_answers_with_the_issue_keys(priced):
    for k in ("num_gpus", "gpu", "cost_per_million_input_tokens", "cost_per_million_output_tokens", "engine_command"):
        assert priced[k] is not None, k
    assert set(priced["by_gpu"]) == {"a100-80gb", "h100", "h200"}
    best = priced["by_gpu"][priced["gpu"]]
    assert priced["num_gpus"] == best["replicas"] * best["gpus_per_replica"]
    assert priced["dollars_per_hour"] == min(c["dollars_per_hour"] for c in priced["by_gpu"].values())
    assert priced["engine_command"].startswith("vllm serve ") and "--tensor-parallel-size" in priced["engine_command"]


def test_the_two_prices_add_up_to_the_fleets_hourly_cost(priced):
    # input and output prices split the fleet's cost; together they bill every second of it
    rate = priced["target_request_rate"]
    per_s = (priced["cost_per_million_input_tokens"] * rate * priced["mean_input_tokens"]
             + priced["cost_per_million_output_tokens"] * rate * priced["mean_output_tokens"]) / 1e6
    assert per_s == pytest.approx(priced["dollars_per_hour"] / 3600, rel=1e-9)


def test_each_replica_meets_the_targets_at_its_share_of_the_load(priced):
    # the plan's own check, redone through the benchmark simulator: each replica at rate / replicas
    for gpu, c in priced["by_gpu"].items():
        sv = run(L8 + ["--gpu", gpu, "-tp", str(c["tp"]), "-s", "1000", "-o", "200", "--num-requests", "500",
                       "--request-rate", str(20 / c["replicas"])])["serving"]
        # the cohort simulator here, the per-request one in the plan: within 2% of each other
        assert sv["ttft_p90_s"] <= 0.5 * 1.03 and sv["tpot_p90_s"] <= 0.030 * 1.03, gpu


def test_more_load_never_needs_fewer_gpus():
    base = L8 + ["--gpu", "h100", "-s", "1000", "-o", "200", "--max-ttft-ms", "500", "--max-tpot-ms", "30"]
    n = [run(base + ["--target-request-rate", str(r)])["num_gpus"] for r in (5, 20, 80)]
    assert n == sorted(n) and n[-1] > n[0]


def test_without_prices_the_fewest_gpus_win():
    res = run(PLAN)
    assert res["num_gpus"] == min(c["num_gpus"] for c in res["by_gpu"].values())
    assert res["cost_per_million_output_tokens"] is None


@pytest.mark.parametrize("stack,start,flag", [("sglang", "python -m sglang.launch_server --model-path", "--tp "),
                                              ("tensorrt-llm", "trtllm-serve ", "--tp_size ")])
def test_engine_command_follows_the_stack(stack, start, flag):
    res = run(L8 + ["--gpu", "h100", "--target-request-rate", "5", "-s", "500", "-o", "100", "--max-tpot-ms", "40",
                    "--serving-stack", stack])
    assert res["engine_command"].startswith(start) and flag in res["engine_command"]


def test_a_trace_plans_at_its_own_rate():
    res = run(L8 + ["--gpu", "h100,h200", "--trace", os.path.join(HERE, "fixtures", "traces", "chat.jsonl"),
                    "--max-ttft-ms", "200", "--max-tpot-ms", "25"])
    assert 0.5 < res["target_request_rate"] < 2 and "--enable-prefix-caching" in res["engine_command"]


@pytest.mark.parametrize("argv,says", [
    (["--target-request-rate", "5"], "needs a target"),
    (["--target-request-rate", "5", "--max-tpot-ms", "30", "-tp", "2"], "leave out -tp"),
    (["--target-request-rate", "5", "--max-tpot-ms", "30", "-c", "4"], "leave out -c"),
    (["--target-request-rate", "5", "--max-tpot-ms", "30", "--gpu", "h100,h200", "--cost-per-gpu-hour", "1,2,3"],
     "3 prices for 2 GPU kinds"),
    (["--target-request-rate", "5", "--max-tpot-ms", "30", "--gpu", "h100,nosuchgpu"], "nosuchgpu"),
    (["--target-request-rate", "5", "--max-tpot-ms", "30", "--cost-per-gpu-hour", "-1"], "must be positive"),
    (["--target-request-rate", "5", "--max-tpot-ms", "30", "--cost-per-gpu-hour", "1e308"], "to 1e6 dollars"),
    (["--target-request-rate", "5", "--max-tpot-ms", "30", "--cost-per-gpu-hour", "nan"], "must be positive"),
    (["--slo-percentile", "99", "-b", "1"], "add --target-request-rate"),
    (["--target-request-rate", "5", "--max-tpot-ms", "30", "--prefix-tokens", "100", "--host-kv-cache-gib", "8"],
     "leave out --host-kv-cache-gib"),
    (["--gpu", "h100,h200", "-b", "1"], "takes one name"),
    (["--target-request-rate", "5", "--max-tpot-ms", "0.001", "--gpu", "h100"], "no layout"),
    (["--target-request-rate", "5", "--max-tpot-ms", "30", "--gpu", "h100", "--gpu-memory-gib", "1"],
     "holds the weights and a request of 640 tokens"),
])
def test_capacity_flags_refused_in_one_line(argv, says, capsys):
    with pytest.raises(SystemExit) as exc:
        cil.main(L8 + argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and says in err[-1] and "Traceback" not in "".join(err)


def test_a_plan_with_one_target_names_only_that_one(capsys):
    # the report's header and the no-layout error say the targets given, never "TTFT <= None ms"
    res = run(L8 + ["--gpu", "h100", "--target-request-rate", "5", "-s", "500", "-o", "100", "--max-tpot-ms", "40"])
    assert cil.capacity_report(res).splitlines()[0].endswith("TPOT <= 40.0 ms at p90, vllm stack")
    with pytest.raises(SystemExit):
        cil.main(L8 + ["--gpu", "h100", "--target-request-rate", "5", "--max-tpot-ms", "0.001"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "TPOT <= 0.001 ms at p90" in err and "None" not in err


def test_targets_outside_a_plan_or_search_are_said_to_do_nothing(capsys):
    # --max-ttft-ms without --search or --target-request-rate holds nothing to it: a note, not silence
    cil.main(L8 + ["--gpu", "h100", "-c", "4", "--max-ttft-ms", "300"])
    assert "--max-ttft-ms is a target of --search or a capacity plan" in capsys.readouterr().err


def test_multi_step_scheduling_reaches_the_plan():
    # --num-scheduler-steps makes arrivals wait for the decode window (test_serving_mix judges it on
    # SGLang's vLLM 0.6 rows); a plan under a TTFT target then needs more GPUs, not the same
    base = L8 + ["--gpu", "h100", "--target-request-rate", "20", "-s", "1000", "-o", "200", "--max-ttft-ms", "100"]
    plain, steps = run(base), run(base + ["--num-scheduler-steps", "10"])
    assert steps["by_gpu"]["h100"]["replica_request_rate"] < plain["by_gpu"]["h100"]["replica_request_rate"]
    assert steps["num_gpus"] > plain["num_gpus"]


# Each stack's own launch program, as its documentation spells it (serve/launch.py cites them): the
# command of a plan on that stack must run this program, and no other stack's. A stack with no
# server command says so in a comment line (#) naming what it is instead. Issue 42: before, the
# plan printed `vllm serve` for fastertransformer, kernels and hf-eager.
STACK_PROGRAMS = {
    "vllm": "vllm serve ",                                     # docs.vllm.ai, vllm serve
    "sglang": "python -m sglang.launch_server ",               # SGLang server arguments
    "tensorrt-llm": "trtllm-serve ",                           # TensorRT-LLM commands/trtllm-serve
    "tensorrt-llm-pytorch": "trtllm-serve ",
    "tensorrt-llm-triton": "scripts/launch_triton_server.py",  # tensorrtllm_backend README
    "tensorrt-llm-mmha": "# TensorRT-LLM v0.5-v0.7",           # no trtllm-serve before 0.17
    "fastertransformer": "./bin/multi_gpu_gpt_example",        # FasterTransformer docs/gpt_guide.md
    "fastertransformer-triton": "tritonserver ",               # fastertransformer_backend
    "kernels": "# the kernels stack",                          # a model, not an engine
    "hf-eager": "# hf-eager is transformers' generate()",      # a library call, not a server
}
# trtllm-serve's --backend: the TensorRT engine path for the tensorrt-llm preset, the PyTorch one
# for tensorrt-llm-pytorch (trtllm-serve --help: pytorch, tensorrt, _autodeploy)
BACKEND = {"tensorrt-llm": "--backend tensorrt", "tensorrt-llm-pytorch": "--backend pytorch"}


@pytest.mark.parametrize("stack", sorted(cil.SERVING_STACKS))
def test_every_stacks_capacity_plan_launches_that_stack(stack):
    assert stack in STACK_PROGRAMS, f"{stack}: no launch program listed for it here"
    res = run(L8 + ["--gpu", "h100", "--target-request-rate", "5", "-s", "500", "-o", "100",
                    "--max-tpot-ms", "40", "--serving-stack", stack])
    cmd = res["engine_command"]
    assert res["serving_stack"] == stack
    assert STACK_PROGRAMS[stack] in cmd, (stack, cmd)
    others = {p for s, p in STACK_PROGRAMS.items() if p != STACK_PROGRAMS[stack]}
    assert not [p for p in others if p in cmd], (stack, cmd)
    if stack in BACKEND:
        assert BACKEND[stack] in cmd
        assert not [b for b in BACKEND.values() if b != BACKEND[stack] and b in cmd]
    if not cmd.startswith("#"):  # a real command carries the layout the plan chose
        tp = res["layout"]["tp"]
        flags = ("--tensor-parallel-size ", "--tp ", "--tp_size ", "--world_size ",
                 "tensor_para_size ", "-n ")
        assert any(f"{flag}{tp}" in cmd for flag in flags), cmd
