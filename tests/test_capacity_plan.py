"""The capacity plan of calc_inference_latency.py (issue 34): --target-request-rate over a list of
GPU kinds under TTFT/TPOT targets at a percentile; its answer keys, its engine commands, its
consistency with the simulated benchmark it is built from, and the exit-2 rules. The plan is built
from the simulator (validated in tests/test_serving_mix.py and VALIDATION.md); no published fleet
size was found to judge it against as a whole."""
import json
import os

import pytest

import calc_inference_latency as cil
from conftest import json_main

HERE = os.path.dirname(os.path.abspath(__file__))
CFG = os.path.join(HERE, "fixtures", "configs")
L8 = ["--hf_model_name_or_path", os.path.join(CFG, "llama-3.1-8b.json")]
PLAN = L8 + ["--gpu", "a100-80gb,h100,h200", "--target-request-rate", "20", "-s", "1000", "-o", "200",
             "--max-ttft-ms", "500", "--max-tpot-ms", "30"]


def run(argv):
    return json_main(cil.main, argv)


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


# --- issue 44: each stack's own command with its quantization, the precision, the delivered
# latencies, rates that hold across seeds, prices per GPU kind ------------------------------------
# How each engine applies FP8 weights to a 16-bit checkpoint, as its documentation spells it:
# vLLM `--quantization fp8` (docs.vllm.ai features/quantization/fp8, dynamic quantization on
# load); SGLang `--quantization fp8` (server arguments); TensorRT-LLM's LLM API quant_config
# quant_algo FP8 (trtllm-serve --extra_llm_api_options); Triton's tensorrtllm_backend quantizes
# the checkpoint with examples/quantization/quantize.py --qformat fp8 before trtllm-build.
# Stacks with no server print no command (every line a '#' comment).
FP8_SPELLING = {
    "vllm": "--quantization fp8", "sglang": "--quantization fp8",
    "tensorrt-llm": "quant_algo: FP8", "tensorrt-llm-pytorch": "quant_algo: FP8",
    "tensorrt-llm-triton": "--qformat fp8", "tensorrt-llm-mmha": "--qformat fp8",
    "fastertransformer-triton": "not the fp8 weights",  # FT has no FP8 weights: said, not launched
    "hf-eager": "FineGrainedFP8Config()",
    "fastertransformer": None, "kernels": None,
}
NO_SERVER = {"fastertransformer", "kernels", "hf-eager", "tensorrt-llm-mmha"}


@pytest.mark.parametrize("stack", sorted(cil.SERVING_STACKS))
def test_each_stacks_plan_launches_its_own_quantization_and_says_what_it_delivers(stack, capsys):
    argv = L8 + ["--gpu", "h100", "--target-request-rate", "5", "-s", "500", "-o", "100",
                 "--max-tpot-ms", "40", "--serving-stack", stack]
    fp8 = cil.main(argv + ["--precision", "fp8"])
    text = capsys.readouterr().out
    cmd = fp8["engine_command"]
    if FP8_SPELLING[stack]:
        assert FP8_SPELLING[stack] in cmd, (stack, cmd)
    if stack in NO_SERVER:
        assert all(line.startswith("#") for line in cmd.splitlines()), cmd
    # the plan's text (not only its JSON) names the precision and the latencies it delivers
    assert "sized at: fp8 (8-bit weights, 8-bit matmul inputs, 8-bit KV cache)" in text
    d = fp8["delivered"]
    line = next(x for x in text.splitlines() if x.startswith("delivered at"))
    for k in ("ttft_median_s", "ttft_p90_s", "tpot_median_s", "tpot_p90_s"):
        assert f"{d[k] * 1e3:,.1f} ms" in line, (k, line)
    assert d["tpot_p90_s_worst"] <= 0.040 and d["seeds"] == 4
    bf16 = run(argv)["engine_command"]  # 16-bit weights: no quantization asked of the engine
    assert not any(q and q in bf16 for q in FP8_SPELLING.values())


def test_the_per_replica_rate_holds_on_seeds_it_was_not_sized_on():
    # issue 44: sized on one 500-request seed, the rate gave p90 TTFT 456-561 ms over five other
    # seeds against 500 ms (here, before: 131-223 ms over ten seeds against 150 ms). Each rate is
    # now judged on 4 seeds, all within the target; rerun on ten fresh seeds (100-109) at that
    # rate, p90 TTFT averages within the target and the worst is within 5% of it (a 500-request
    # run's p90 spreads +-10% between seeds; the worst of 4 bounds a fresh seed 4 times in 5).
    plan = run(L8 + ["--gpu", "h100", "--target-request-rate", "20", "-s", "1000", "-o", "200",
                     "--max-ttft-ms", "150"])
    c = plan["by_gpu"]["h100"]
    p90 = [run(L8 + ["--gpu", "h100", "-tp", str(c["tp"]), "-s", "1000", "-o", "200",
                     "--num-requests", "500", "--request-rate", str(c["replica_request_rate"]),
                     "--seed", str(k)])["serving"]["ttft_p90_s"] for k in range(100, 110)]
    assert sum(p90) / len(p90) <= 0.150 and max(p90) <= 0.150 * 1.05, p90


def test_prices_by_gpu_kind_name_match_prices_in_order():
    named = run(PLAN + ["--cost-per-gpu-hour", "h200=3.5,a100-80gb=1.5,h100=2.5"])
    ordered = run(PLAN + ["--cost-per-gpu-hour", "1.5,2.5,3.5"])
    assert named["prices_per_gpu_hour"] == ordered["prices_per_gpu_hour"] == [1.5, 2.5, 3.5]
    assert named["gpu"] == ordered["gpu"]
    assert named["dollars_per_hour"] == ordered["dollars_per_hour"]


@pytest.mark.parametrize("prices,says", [
    ("h100=2.49", "no price for a100-80gb, h200"),
    ("h100=2.49,b200=5,h200=3,a100-80gb=1", "prices b200, which --gpu does not list"),
    ("h100=2.49,3.1,2", "give every price by name"),
    ("h100=2,h100-sxm=3,h200=3,a100-80gb=1", "prices h100 twice"),
    ("h100=2=3,h200=3,a100-80gb=1", "give each named price as GPU=dollars"),  # was h100 at $3
    ("=2,h200=3,a100-80gb=1", "give each named price as GPU=dollars"),  # was "unknown GPU ''"
])
def test_prices_by_name_refused_in_one_line(prices, says, capsys):
    with pytest.raises(SystemExit):
        cil.main(PLAN + ["--cost-per-gpu-hour", prices])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


def test_the_command_names_the_model_as_given(tmp_path):
    # a hub id as given; a model folder (or its config.json) as that folder, or the hub id its
    # config records; a lone config file only as the fallback
    from llmcalc.tools.latency_capacity import served_model_name
    hub = "meta-llama/Llama-3.1-8B-Instruct"
    assert served_model_name(hub) == hub
    folder = tmp_path / "Llama-3.1-8B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert served_model_name(str(folder)) == str(folder)
    assert served_model_name(str(folder / "config.json")) == str(folder)
    (folder / "config.json").write_text(json.dumps({"_name_or_path": "meta-llama/Llama-3.1-8B"}))
    assert served_model_name(str(folder / "config.json")) == "meta-llama/Llama-3.1-8B"
    assert served_model_name(L8[1]) == L8[1] and served_model_name(None) == "MODEL"


def test_the_plans_text_carries_the_models_warnings(capsys):
    # issue 46 item 2: the capacity plan's text dropped the model's warnings (its JSON had them)
    cil.main(L8 + ["--gpu", "h100", "--target-request-rate", "2", "-s", "140000", "-o", "100",
                   "--max-tpot-ms", "200"])
    out = capsys.readouterr().out
    assert "WARNING: context 140,100 tokens is past the model's trained context" in out
