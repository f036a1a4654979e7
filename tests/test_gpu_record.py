"""A GPU is one record (issue 42, item 1): every fact the models read sits in its hardware.py row,
one resolver turns a name into that record for every tool, nothing below the tools matches a GPU
name, and a missing fact is asked for (or defaulted and said) the same way in every tool.

Independent facts checked here: SM / compute-unit counts against the vendors' whitepapers and
datasheets, and the H800 against the H100 SXM (the same GH100 die: 132 SMs at 700 W, NVIDIA's
export variant with a cut NVLink and fp64, DeepSeek-V3 report sec. 3.1), which must train one
GPU's step in the same time. The rest are structural properties of the table and the tools.
"""
import ast
import os
import sys

import pytest

from conftest import ROOT, exit_code_and_stderr, run_main
import calc_comm
import calc_inference_latency
import calc_training_time as T
import hardware
from llmcalc import accelerator as A
from llmcalc.cli import OneLineErrorParser
from llmcalc.tools.gpu import accelerator_record
from llmcalc.comm.collectives import Network, build_net
from llmcalc.errors import CalcError

NAMES = hardware.list_accelerators()
NO_SMS_VENDORS = ("Google", "Intel", "AWS")  # TPU, Gaudi, Trainium: matrix units, no SMs / CUs


# --- every row has every field ----------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_every_field_is_set_or_a_declared_stand_in(name):
    # A field may be None only where Accelerator.STAND_INS says what every tool does without it.
    rec = hardware.get_accelerator(name)
    assert set(rec) == set(A.Accelerator.FIELDS)
    missing = {k for k, v in rec.items() if v is None}
    assert missing <= set(A.Accelerator.STAND_INS), missing - set(A.Accelerator.STAND_INS)


def test_stand_ins_are_declared_fields_with_their_default_in_words():
    assert set(A.Accelerator.STAND_INS) <= set(A.Accelerator.FIELDS)
    assert all(len(text) > 10 for text in A.Accelerator.STAND_INS.values())


@pytest.mark.parametrize("name", NAMES)
def test_sms_are_given_wherever_the_device_has_them(name):
    # NVIDIA SMs and AMD compute units exist on every such GPU; TPU, Gaudi and Trainium have none.
    rec = hardware.get_accelerator(name)
    if rec["vendor"] in NO_SMS_VENDORS:
        assert rec["sms"] is None
    else:
        assert isinstance(rec["sms"], int) and rec["sms"] > 0


# (name, SMs or CUs, source) as the vendors print them
SM_DATASHEET = [
    ("v100-16gb", 80, "NVIDIA Tesla V100 GPU Architecture whitepaper: 80 SMs"),
    ("a100-80gb", 108, "NVIDIA A100 Tensor Core GPU Architecture whitepaper: 108 SMs"),
    ("h100-sxm", 132, "NVIDIA H100 Tensor Core GPU Architecture whitepaper: SXM5 132 SMs"),
    ("h100-pcie", 114, "NVIDIA H100 Tensor Core GPU Architecture whitepaper: PCIe 114 SMs"),
    ("rtx-3090", 82, "NVIDIA Ampere GA102 whitepaper, Appendix A: RTX 3090 82 SMs"),
    ("rtx-4090", 128, "NVIDIA Ada Lovelace whitepaper, Appendix: RTX 4090 128 SMs"),
    ("rtx-5090", 170, "NVIDIA RTX Blackwell whitepaper: RTX 5090 170 SMs"),
    ("mi250x", 220, "AMD Instinct MI250X page: 220 compute units"),
    ("mi300x", 304, "AMD CDNA 3 white paper: 304 compute units"),
    ("mi355x", 256, "AMD CDNA 4 white paper: 256 compute units"),
]


@pytest.mark.parametrize("name,sms,source", SM_DATASHEET, ids=[r[0] for r in SM_DATASHEET])
def test_sm_counts_match_the_vendor(name, sms, source):
    assert hardware.get_accelerator(name)["sms"] == sms, source


def test_a_row_that_contradicts_itself_is_refused():
    # a scale-up link needs its topology; a kernel family must be one with measured rates
    base = dict(memory_gb=1, memory_tb_per_s=1, tflops={}, scale_up_link="x", domain=8,
                in_network_reduction=False, scale_out_gbit_per_s=None, tdp_w=1, sms=1,
                source="s", notes="n")
    with pytest.raises(TypeError):
        A.accelerator_row("x", "x", "x", [], scale_up_gb_per_s_unidir=100, **base)
    with pytest.raises(TypeError):
        A.accelerator_row("x", "x", "x", [], scale_up_gb_per_s_unidir=100, topology="switch",
                          kernel_family="volta", **base)
    assert A.accelerator_row("x", "x", "x", [], scale_up_gb_per_s_unidir=100, topology="switch",
                             **base)["scale_up_topology"] == "switch"


# --- the H800 is the H100 SXM's compute --------------------------------------------------------
LLAMA3_8B_SHAPE = ["-l", "32", "-hs", "4096", "-a", "32", "--num-kv-heads", "8",
                   "--ffn-hidden-size", "14336", "--swiglu", "--norm", "rmsnorm", "--no-bias",
                   "-v", "128256"]


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_h800_and_h100_sxm_train_one_gpu_step_in_the_same_time(dtype):
    # One GPU: no NVLink or NIC traffic, so only the compute the two share can set the step.
    argv = LLAMA3_8B_SHAPE + ["--num-gpus", "1", "--global-batch-size", "4", "-b", "1",
                              "-s", "4096", "--dtype", dtype, "--json"]
    h800, _, _ = run_main(T.main, argv + ["--gpu", "h800"])
    h100, _, _ = run_main(T.main, argv + ["--gpu", "h100-sxm"])
    assert h800["step_time_s"] == h100["step_time_s"]
    assert h800["breakdown_s"] == h100["breakdown_s"]


# --- one resolver ----------------------------------------------------------------------------
def _parser():
    return OneLineErrorParser(prog="t")


@pytest.mark.parametrize("name", NAMES)
def test_a_name_and_its_aliases_give_one_record_through_every_door(name):
    rec = hardware.get_accelerator(name)
    for spelling in [name, name.upper()] + rec["aliases"]:
        assert A.resolve_accelerator(spelling) == rec
        assert accelerator_record(spelling, _parser(), without="x") == rec


def test_no_name_is_the_default_accelerator_the_tables_h100_sxm():
    assert A.resolve_accelerator(None) == hardware.get_accelerator("h100-sxm")
    assert accelerator_record(None, _parser(), without="x") == A.resolve_accelerator("h100")


def test_an_unknown_name_is_one_calc_error_with_the_tables_message(capsys):
    with pytest.raises(KeyError) as table:
        hardware.get_accelerator("h1000")
    with pytest.raises(CalcError) as resolved:
        A.resolve_accelerator("h1000")
    assert str(resolved.value) == table.value.args[0]
    assert "nearest: " in str(resolved.value)
    with pytest.raises(SystemExit) as e:
        accelerator_record("h1000", _parser(), without="x")
    assert e.value.code == 2
    assert capsys.readouterr().err == f"t: error: {table.value.args[0]}\n"


def test_no_table_beside_a_script_is_one_calc_error_saying_what_to_pass(monkeypatch):
    def missing():
        raise ImportError("no hardware.py")
    monkeypatch.setattr(A, "accelerator_table", missing)
    with pytest.raises(CalcError, match="pass these flags"):
        A.resolve_accelerator("h200", missing_table="pass these flags")
    assert A.resolve_accelerator(None)["name"] == "h100-sxm"  # the default needs no table


# --- nothing below the tools matches a GPU name ---------------------------------------------------
# Names allowed as string constants below the tools: none (the serving stack's vLLM rule reads the
# record's kernel_family; the capacity plan's default GPU is accelerator.DEFAULT_ACCELERATOR).
KNOWN = set()
SCANNED = ("serve", "train", "model", "comm", "tools")


def _docstrings(tree):
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)
            and isinstance(n.body[0].value.value, str)}


def _gpu_name_literals():
    """(module, literal) for every string constant that is a GPU name or alias of the table, as
    --gpu would read it (case, separators: hardware._norm / _squash), outside docstrings: help
    texts and messages that list names among other words are not whole-name constants."""
    names = set(hardware._INDEX)
    found = set()
    for folder in SCANNED:
        for path in sorted(os.listdir(os.path.join(ROOT, "llmcalc", folder))):
            if not path.endswith(".py"):
                continue
            rel = f"llmcalc/{folder}/{path}"
            with open(os.path.join(ROOT, rel), encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
            docs = _docstrings(tree)
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                    continue
                text = node.value
                if id(node) not in docs and (hardware._norm(text) in names
                                             or hardware._squash(text) in names):
                    found.add((rel, text))
    return found


def test_no_gpu_name_is_a_string_literal_below_the_tools():
    assert _gpu_name_literals() - KNOWN == set()


def test_the_scan_finds_a_gpu_name_where_there_is_one(tmp_path, monkeypatch):
    # The scan itself can fail: a name compared in a module is found (case and separators as --gpu).
    pkg = tmp_path / "llmcalc"
    for folder in SCANNED:
        (pkg / folder).mkdir(parents=True)
    (pkg / "train" / "x.py").write_text('"""doc: h100."""\nFAST = gpu.startswith("H100_SXM")\n')
    monkeypatch.setattr(sys.modules[__name__], "ROOT", str(tmp_path))
    assert _gpu_name_literals() == {("llmcalc/train/x.py", "H100_SXM")}


# --- a missing fact is asked for the same way in every tool ------------------------------------
# a100-80gb-pcie: NVLink-bridged pairs (a scale-up domain of 2) and no reference scale-out design,
# so the row lists no scale-out bandwidth (None); four GPUs span two domains.
SMALL = ["-l", "4", "-hs", "512", "-a", "8", "-v", "1000"]


def test_every_tool_asks_for_the_scale_out_bandwidth_past_one_domain():
    code, err = exit_code_and_stderr(T.main, SMALL + ["--gpu", "a100-80gb-pcie", "--num-gpus", "4",
                                                     "--global-batch-size", "8"])
    assert code == 2 and err.count("\n") == 1 and "--inter-node-bw-GBps" in err
    code, err = exit_code_and_stderr(calc_comm.main, ["--gpu", "a100-80gb-pcie", "--num-gpus", "4",
                                                      "--size", "1G"])
    assert code == 2 and err.count("\n") == 1 and "--inter-node-bw-GBps" in err
    code, err = exit_code_and_stderr(calc_inference_latency.main,
                                     SMALL + ["--gpu", "a100-80gb-pcie", "-tp", "4"])
    assert code == 2 and err.count("\n") == 1 and "--scale-out-gbps" in err  # its alias of the flag


def test_training_inside_one_domain_does_not_need_a_scale_out_bandwidth():
    argv = SMALL + ["--gpu", "a100-80gb-pcie", "--global-batch-size", "8", "--json"]
    inside, _, _ = run_main(T.main, argv + ["--num-gpus", "2"])
    given, _, _ = run_main(T.main, argv + ["--num-gpus", "2", "--inter-node-bw-GBps", "1"])
    assert inside["step_time_s"] == given["step_time_s"]  # not read: any figure gives one answer
    across, _, _ = run_main(T.main, argv + ["--num-gpus", "4", "--inter-node-bw-GBps", "25"])
    assert across["num_gpus"] == 4


def test_training_says_which_kernel_fact_a_default_stood_in_for():
    argv = SMALL + ["--num-gpus", "1", "--global-batch-size", "1", "--json"]
    _, _, err = run_main(T.main, argv + ["--gpu", "l40s"])  # Ada: no measured kernel rates
    assert "l40s: hardware.py lists no kernel family" in err and "A100 fractions (0.583" in err
    _, _, err = run_main(T.main, argv + ["--gpu", "h100"])
    assert "kernel family" not in err


def test_training_says_when_pcie_stands_in_for_a_host_link_it_reads():
    # Gaudi 3's row lists no host link: an offloading run says PCIe 4.0 x16 stood in; a run that
    # copies nothing to the host, or a GPU whose row lists its link, says nothing about it
    argv = SMALL + ["--num-gpus", "1", "--global-batch-size", "1", "--json"]
    _, _, err = run_main(T.main, argv + ["--gpu", "gaudi3", "--offload-params"])
    assert "gaudi3: hardware.py lists no host link" in err and "PCIe 4.0 x16" in err
    for more in (["--gpu", "gaudi3"], ["--gpu", "h100", "--offload-params"]):
        _, _, err = run_main(T.main, argv + more)
        assert "no host link" not in err, more


# --- the network record -----------------------------------------------------------------------
def test_build_net_returns_the_declared_network():
    net = build_net(intra_bytes_per_s=450e9, inter_bytes_per_s=None, in_network_reduction=True,
                    intra_efficiency=0.8, inter_efficiency=0.9, nvls_efficiency=0.6, launch_s=1e-5,
                    intra_hop_ll_s=6e-7, inter_hop_ll_s=2.7e-6)
    assert isinstance(net, Network) and set(net) == set(Network.FIELDS) == set(Network.REQUIRED)
    assert net.intra_bytes_per_s == 450e9 * 0.8 and net.inter_bytes_per_s == 0.0
    with pytest.raises(TypeError):
        net["bandwidth"] = 1.0  # an undeclared field
