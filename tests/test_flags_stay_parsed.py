"""The tools resolve their flags into records and locals, never back into the parsed namespace
(issue 42: no derived state written into `args`), and the records they build hold only declared
fields. Structural checks: each can fail (a tool that writes `args.x = ...` again, or a record
built with a key nobody declared)."""
import contextlib
import copy
import io

import pytest

import calc_comm as C
import calc_inference_latency as L
import calc_training_time as T
import calc_transformer_flops as F
import calc_transformer_mem as M
import calc_transformer_params as P
from llmcalc.train.memory import MemoryConfig, memory_defaults
from llmcalc.train.step import LAYER_COMPUTE_PARTS, LayerCosts

SMALL = ["-l", "8", "-hs", "1024", "-s", "1024"]  # no heads given: the cookbook's 64 stand in
COMMANDS = [
    (M, SMALL + ["--num-gpus", "8", "-tp", "2", "--global-batch-size", "16", "-ca"]),
    (M, SMALL + ["--infer", "--precision", "fp8", "--kv-cache-bits", "16"]),
    (M, SMALL + ["--offload", "-z", "1", "--num-gpus", "4", "--gpu-memory-gib", "1"]),
    (M, SMALL + ["--finetune", "lora", "--lora-rank", "8"]),  # --framework resolved: pytorch
    (T, SMALL + ["--num-gpus", "8", "-tp", "2", "--global-batch-size", "16"]),
    (T, SMALL + ["--finetune", "qlora", "--lora-rank", "8"]),
    (T, SMALL + ["--framework", "deepspeed", "--num-gpus", "2", "-z", "3", "--offload-params",
                 "--global-batch-size", "4"]),
    (T, SMALL + ["--gpu", "h100,a100", "--num-gpus", "8,16", "--global-batch-size", "32",
                 "--search", "--cost-per-gpu-hour", "2,1", "--tokens", "1e9"]),
    # the other tools (issue 42: none writes derived state into its flags)
    (P, SMALL),
    (F, SMALL + ["--tokens", "1e9", "--gpu", "h100"]),
    (L, SMALL + ["-b", "4", "-o", "16"]),
    (L, SMALL + ["--num-requests", "20", "--request-rate", "4", "-o", "16"]),
    (C, ["--op", "all_reduce"]),  # no --size: a sweep over 8 GPUs, neither written back
    (C, ["--train", "-l", "4", "-hs", "1024", "-tp", "2", "--dp", "2"]),
]


def _id(x):
    return getattr(x, "__name__", None) or " ".join(x)


@pytest.mark.parametrize("tool,argv", COMMANDS, ids=_id)
def test_main_leaves_the_parsed_flags_as_parsed(tool, argv, monkeypatch):
    seen = []
    parse = tool.parse_tool_args

    def keep(parser, argv):
        args = parse(parser, argv)
        seen.append((args, copy.deepcopy(vars(args))))
        return args
    monkeypatch.setattr(tool, "parse_tool_args", keep)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        tool.main(argv + ["--json"])
    (args, parsed), = seen
    assert vars(args) == parsed


def test_memory_config_refuses_an_undeclared_field():
    c = memory_defaults(overhead_bytes=0)
    with pytest.raises(TypeError):
        c.replace(tensor_parallel=2)  # the field is "tp"
    assert isinstance(c.replace(tp=2), MemoryConfig)


def test_mem_config_is_a_memory_config_and_every_key_is_declared():
    with contextlib.redirect_stdout(io.StringIO()):
        res = M.main(SMALL + ["--num-gpus", "8", "-tp", "2", "--json"])
    assert set(res["config"]) <= set(M.MemConfig.FIELDS)
    assert set(MemoryConfig.FIELDS) <= set(M.MemConfig.FIELDS)


def test_layer_costs_components_are_declared():
    # every compute component a layer reports is one LAYER_COMPUTE_PARTS documents
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        res = T.main(SMALL + ["--num-gpus", "8", "-tp", "2", "--global-batch-size", "16", "--json",
                              "--dtype", "fp8", "--recompute", "full", "-cp", "2"])
    stage_only = {"embedding", "output_head_and_loss", "grad_casts_and_copies"}
    parts = {k[len("compute_"):] for k in res["breakdown_s"] if k.startswith("compute_")}
    assert parts - stage_only and parts - stage_only <= set(LAYER_COMPUTE_PARTS)
    assert set(LayerCosts.FIELDS) == {"compute", "comm"}


def test_layout_refuses_an_undeclared_field_and_the_result_layout_is_declared():
    from llmcalc.train.layout import Layout, complete_layout
    lay = complete_layout(Layout(num_gpus=8, tp=2, pp=1, cp=1, global_batch_size=16,
                                 micro_batch_size=2))
    assert (lay["dp"], lay["num_microbatches"]) == (4, 2) and isinstance(lay, Layout)
    with pytest.raises(TypeError):
        lay.replace(pipeline_parallel=2)  # the field is "pp"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        res = T.main(SMALL + ["--num-gpus", "8", "-tp", "2", "--global-batch-size", "16", "--json"])
    # the report adds sequence_parallel (the flag's name for sp); every other key is declared
    assert set(res["layout"]) - {"sequence_parallel"} <= set(Layout.FIELDS)


@pytest.mark.parametrize("tool,inner", [(M, "resolve"), (T, "resolve_run")])
def test_a_calc_error_below_the_tools_is_one_line_and_exit_2(tool, inner, monkeypatch, capsys):
    def refuse(*args, **kwargs):
        raise tool.CalcError("--num-gpus 3 is not a layout this model splits over")
    monkeypatch.setattr(tool, inner, refuse)
    with pytest.raises(SystemExit) as exc:
        tool.main(SMALL)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2
    assert err[-1].endswith("error: --num-gpus 3 is not a layout this model splits over")
