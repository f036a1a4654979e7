"""Tests for hardware.py: vendor datasheet values, lookup, CLI shape, sanity properties.

Datasheet checks compare our stored dense figures with numbers printed by the vendor (or, where
the vendor prints sparse figures, with half of them). Tolerances are stated per test.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

import hardware
from hardware import DTYPES, RECORD_KEYS, get_accelerator, list_accelerators, main

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "hardware.py"

REQUIRED_SPELLINGS = ["a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "b200",
                      "gb200", "mi300x", "l40s", "tpu-v5p", "gaudi3"]


def rel_close(a, b, tol):
    return abs(a - b) <= tol * abs(b)


# --- vendor datasheet values -----------------------------------------------------------------
# (name, field, dtype or None, expected, rel tolerance, source)
DATASHEET = [
    # NVIDIA H100 datasheet, SXM column: BF16 1,979 TFLOPS* (*with sparsity) -> 989.5 dense;
    # the Hopper whitepaper prints 989.4 dense. Memory bandwidth 3.35 TB/s, 80 GB. Tol 0.5%.
    ("h100-sxm", "flops", "bf16", 989e12, 0.005, "H100 datasheet 1979*/2; whitepaper 989.4"),
    ("h100-sxm", "flops", "fp8", 3958e12 / 2, 0.005, "H100 datasheet FP8 3,958*"),
    ("h100-sxm", "bw", None, 3.35e12, 0.001, "H100 datasheet 3.35 TB/s"),
    ("h100-sxm", "mem", None, 80e9, 0.0, "H100 datasheet 80 GB"),
    ("h100-pcie", "flops", "bf16", 1513e12 / 2, 0.005, "H100 datasheet PCIe BF16 1,513*"),
    # NVIDIA A100 datasheet: BF16 312 TFLOPS (624*), TF32 156 (312*), 80GB SXM 2,039 GB/s.
    ("a100-80gb", "flops", "bf16", 312e12, 0.001, "A100 datasheet BF16 312"),
    ("a100-80gb", "flops", "tf32", 156e12, 0.001, "A100 datasheet TF32 156"),
    ("a100-80gb", "bw", None, 2.039e12, 0.001, "A100 datasheet 80GB SXM 2,039 GB/s"),
    ("a100-40gb", "bw", None, 1.555e12, 0.001, "A100 datasheet 40GB 1,555 GB/s"),
    ("a100-80gb-pcie", "bw", None, 1.935e12, 0.001, "A100 datasheet 80GB PCIe 1,935 GB/s"),
    # AMD MI300X product page / data sheet: peak BF16 1307.4 TFLOPS dense, 192 GB HBM3, 5.3 TB/s.
    ("mi300x", "flops", "bf16", 1307.4e12, 0.001, "AMD MI300X BF16 1307.4"),
    ("mi300x", "flops", "fp8", 2614.9e12, 0.001, "AMD MI300X FP8 2614.9"),
    ("mi300x", "mem", None, 192e9, 0.0, "AMD MI300X 192 GB"),
    ("mi300x", "bw", None, 5.3e12, 0.001, "AMD MI300X 5.3 TB/s"),
    # NVIDIA H200 page: 141 GB HBM3e at 4.8 TB/s; compute identical to H100 SXM.
    ("h200", "mem", None, 141e9, 0.0, "H200 page 141 GB"),
    ("h200", "bw", None, 4.8e12, 0.001, "H200 page 4.8 TB/s"),
    # V100 datasheet: the 16GB SXM2 card has 16 GB (a peer table wrongly says 32), 900 GB/s,
    # 125 TFLOPS tensor (fp16), 15.7 fp32.
    ("v100-16gb", "mem", None, 16e9, 0.0, "V100 datasheet 16 GB"),
    ("v100-16gb", "flops", "fp16", 125e12, 0.001, "V100 datasheet tensor 125"),
    ("v100-32gb", "mem", None, 32e9, 0.0, "V100 datasheet 32 GB"),
    # NVIDIA L40S datasheet: BF16 362.05 | 733* ; FP8 733 | 1,466*; 48 GB; 864 GB/s.
    ("l40s", "flops", "bf16", 362.05e12, 0.001, "L40S datasheet"),
    ("l40s", "bw", None, 864e9, 0.001, "L40S datasheet 864 GB/s"),
    # NVIDIA L4 datasheet: FP8 485* TFLOPS -> 242.5 dense; 24 GB; 300 GB/s.
    ("l4", "flops", "fp8", 485e12 / 2, 0.001, "L4 datasheet FP8 485*"),
    # NVIDIA HGX page, HGX B200 (8 GPUs): FP4 144 PFLOPS* -> 9 PF dense per GPU; 1.44 TB.
    ("b200", "flops", "fp4", 144e15 / 8 / 2, 0.001, "HGX B200 FP4 144 PF* / 8"),
    ("b200", "mem", None, 1.44e12 / 8, 0.0, "HGX B200 1.44 TB / 8"),
    # NVIDIA GB200 NVL72: FP8 720 PFLOPS* -> 5 PF dense per GPU; 576 TB/s -> 8 TB/s per GPU.
    ("gb200", "flops", "fp8", 720e15 / 72 / 2, 0.001, "GB200 NVL72 FP8 720 PF* / 72"),
    ("gb200", "bw", None, 576e12 / 72, 0.001, "GB200 NVL72 576 TB/s / 72"),
    # Google Cloud TPU v5p doc: 459 TFLOPS bf16, 95 GB, 2765 GBps, ICI 1200 GBps bidirectional.
    ("tpu-v5p", "flops", "bf16", 459e12, 0.001, "Cloud TPU v5p doc"),
    ("tpu-v5p", "bw", None, 2765e9, 0.001, "Cloud TPU v5p doc"),
    ("tpu-v5p", "scaleup", None, 1200e9 / 2, 0.001, "Cloud TPU v5p ICI 1200 GBps bidir"),
    ("tpu-v6e", "flops", "bf16", 918e12, 0.001, "Cloud TPU v6e doc"),
    ("tpu-v5e", "flops", "bf16", 197e12, 0.001, "Cloud TPU v5e doc"),
    ("tpu-v4", "flops", "bf16", 275e12, 0.001, "Cloud TPU v4 doc"),
    # Intel Gaudi 3 (Hot Chips 2024 / white paper): BF16 and FP8 MME 1835 TFLOPS, 128 GB.
    ("gaudi3", "flops", "bf16", 1835e12, 0.001, "Gaudi 3 white paper"),
    ("gaudi3", "mem", None, 128e9, 0.0, "Gaudi 3 white paper"),
    # AWS Neuron docs: Trainium2 667 BF16 TFLOPS, 1299 FP8; Trainium 190 BF16.
    ("trainium2", "flops", "bf16", 667e12, 0.001, "AWS Neuron Trainium2 arch page"),
    ("trainium2", "flops", "fp8", 1299e12, 0.001, "AWS Neuron Trainium2 arch page"),
    ("trainium1", "flops", "bf16", 190e12, 0.001, "AWS Neuron Trainium arch page"),
    # NVLink 4: 900 GB/s bidirectional per GPU -> 450e9 per direction (H100 datasheet).
    ("h100-sxm", "scaleup", None, 900e9 / 2, 0.0, "H100 datasheet NVLink 900 GB/s"),
    ("b200", "scaleup", None, 1.8e12 / 2, 0.0, "HGX B200 NVLink 1.8 TB/s per GPU"),
]


def _field(rec, field, dtype):
    if field == "flops":
        return rec["peak_flops_per_s"][dtype]
    return {"bw": rec["memory_bandwidth_bytes_per_s"], "mem": rec["memory_bytes"],
            "scaleup": rec["scale_up_bandwidth_bytes_per_s"]}[field]


@pytest.mark.parametrize("name,field,dtype,expected,tol,source", DATASHEET,
                         ids=[f"{r[0]}-{r[1]}-{r[2]}" for r in DATASHEET])
def test_datasheet_values(name, field, dtype, expected, tol, source):
    got = _field(get_accelerator(name), field, dtype)
    assert rel_close(got, expected, tol) or got == expected, (name, field, dtype, got, source)


def test_mamf_h100_matches_bekman_table():
    # Bekman ml-engineering MAMF v2 table: H100 SXM bf16 794.5 TFLOPS = 80.3% of 989.
    rec = get_accelerator("h100-sxm")
    ach = rec["achievable_matmul_flops_per_s"]["bf16"]
    assert rel_close(ach, 794.5e12, 1e-6)
    assert rel_close(ach / 989e12, 0.803, 0.005)
    assert "ml-engineering" in rec["achievable_source"]


# Bekman ml-engineering MAMF v2 table, compute/accelerator/README.md @744d01e (Aug 2026): the
# measured best-shape matmul TFLOP/s per accelerator and dtype (the H200 bf16 cell is the H100 SXM's,
# whose row notes "H200 is the same")
MAMF_V2 = [("h200", "bf16", 794.5), ("h200", "fp8", 1453.4), ("b200", "bf16", 1745.0),
           ("b200", "fp8", 3432.5), ("gb200", "bf16", 1822.0), ("gb200", "fp8", 3615.6),
           ("b300", "bf16", 1769.0), ("b300", "fp8", 3353.3), ("mi355x", "bf16", 1565.0),
           ("gaudi2", "bf16", 418.7), ("gaudi2", "fp8", 826.5), ("gaudi3", "bf16", 1243.0),
           ("gaudi3", "fp8", 1289.5), ("gh200", "bf16", 828.6), ("gh200", "fp8", 1535.0),
           ("h100-sxm", "fp8", 1402.6), ("a100-80gb", "bf16", 271.2), ("mi325x", "bf16", 784.9)]
# GB200 fp4: Azure/AI-benchmarking-guide, Azure_Results/ND_GB200_v6_results.md @2a370be6 (cuBLASLt, 16384^3)
AZURE_GB200_FP4_TFLOPS = 7627.6


@pytest.mark.parametrize("name,dtype,tflops", MAMF_V2)
def test_achievable_matmul_matches_bekman_v2_table(name, dtype, tflops):
    rec = get_accelerator(name)
    assert rel_close(rec["achievable_matmul_flops_per_s"][dtype], tflops * 1e12, 1e-6)
    assert "ml-engineering" in rec["achievable_source"]


def test_gb200_fp4_matmul_is_azures_cublaslt_measurement():
    rec = get_accelerator("gb200")
    assert rel_close(rec["achievable_matmul_flops_per_s"]["fp4"], AZURE_GB200_FP4_TFLOPS * 1e12, 1e-6)
    assert "AI-benchmarking-guide" in rec["achievable_source"]


# --- names and aliases -----------------------------------------------------------------------
@pytest.mark.parametrize("spelling", REQUIRED_SPELLINGS)
def test_required_spellings_resolve(spelling):
    assert get_accelerator(spelling)["name"] in list_accelerators()
    assert get_accelerator(spelling.upper())["name"] == get_accelerator(spelling)["name"]


@pytest.mark.parametrize("alias", ["h100", "h100-sxm", "H100-SXM5-80GB", "h100_sxm5", "H100 SXM"])
def test_h100_aliases(alias):
    assert get_accelerator(alias)["name"] == "h100-sxm"


def test_names_unique_and_count():
    names = list_accelerators()
    assert len(names) == len(set(names)) >= 30
    assert all(n == n.lower() for n in names)


def test_unknown_name_keyerror_message():
    with pytest.raises(KeyError) as ei:
        get_accelerator("h1000")
    msg = str(ei.value.args[0])
    assert "\n" not in msg
    assert msg.startswith("unknown accelerator 'h1000'; nearest: ")
    assert msg.split("nearest: ")[1].split(", ")[:3] == ["h100-sxm", "h100-pcie", "h100-nvl"]


def test_unknown_name_exit_2_with_suggestions(capsys):
    with pytest.raises(SystemExit) as ei:
        main(["mi3000x"])
    assert ei.value.code == 2
    err = capsys.readouterr().err
    assert "unknown accelerator" in err and "mi300x" in err


def test_unknown_name_in_compare_exit_2(capsys):
    with pytest.raises(SystemExit) as ei:
        main(["--compare", "h100", "gaudi9"])
    assert ei.value.code == 2
    assert "gaudi" in capsys.readouterr().err


def test_name_and_compare_together_exit_2():
    with pytest.raises(SystemExit) as ei:
        main(["h100", "--compare", "a100", "b200"])
    assert ei.value.code == 2


# --- record shape ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", list_accelerators())
def test_every_record_complete_and_sane(name):
    rec = get_accelerator(name)
    assert set(RECORD_KEYS) <= set(rec)
    assert rec["name"] == name
    assert isinstance(rec["source"], str) and ("http" in rec["source"] or "paper" in rec["source"])
    assert isinstance(rec["notes"], str) and rec["notes"]
    assert isinstance(rec["memory_bytes"], int) and rec["memory_bytes"] > 0
    assert rec["memory_bandwidth_bytes_per_s"] > 0
    pf = rec["peak_flops_per_s"]
    assert pf and set(pf) <= set(DTYPES) and all(v > 0 for v in pf.values())
    # fp8 >= bf16 >= fp32 where present (matrix units get faster as precision drops)
    if "fp8" in pf and "bf16" in pf:
        assert pf["fp8"] >= pf["bf16"]
    if "bf16" in pf and "fp32" in pf:
        assert pf["bf16"] >= pf["fp32"]
    if "fp4" in pf and "fp8" in pf:
        assert pf["fp4"] >= pf["fp8"]
    assert isinstance(rec["scale_up_domain_size"], int) and rec["scale_up_domain_size"] >= 1
    assert isinstance(rec["scale_up_in_network_reduction"], bool)
    if rec["scale_up_domain_size"] > 1:
        assert rec["scale_up_bandwidth_bytes_per_s"] > 0
    ach = rec["achievable_matmul_flops_per_s"]
    if ach is not None:
        assert rec["achievable_source"]
        for dt, v in ach.items():
            assert 0 < v <= pf[dt]  # measured never above the dense peak


def test_get_accelerator_returns_copy():
    rec = get_accelerator("h100")
    rec["peak_flops_per_s"]["bf16"] = 0
    assert get_accelerator("h100")["peak_flops_per_s"]["bf16"] > 0


# --- CLI ---------------------------------------------------------------------------------------
def test_main_one_returns_record(capsys):
    rec = main(["H100"])
    out = capsys.readouterr().out
    assert rec["name"] == "h100-sxm"
    assert "TFLOP/s" in out and "TB/s" in out and "source" in out


def test_main_json_one(capsys):
    rec = main(["h100-sxm", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data == rec
    for k in ("memory_bytes", "memory_bandwidth_bytes_per_s", "scale_up_bandwidth_bytes_per_s",
              "peak_flops_per_s", "source"):
        assert k in data
    assert data["peak_flops_per_s"]["bf16"] == pytest.approx(989.4e12)


def test_main_table(capsys):
    recs = main([])
    out = capsys.readouterr().out
    assert [r["name"] for r in recs] == list_accelerators()
    assert "[TB/s]" in out and "[TFLOP/s]" in out
    assert len(out.splitlines()) == len(recs) + 3


def test_main_json_table(capsys):
    main(["--json"])
    data = json.loads(capsys.readouterr().out)
    assert isinstance(data, list) and len(data) == len(list_accelerators())


def test_main_compare_json(capsys):
    recs = main(["--compare", "h100", "mi300x", "gaudi3", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in data] == ["h100-sxm", "mi300x", "gaudi3"] == [r["name"] for r in recs]


def test_format_record_has_units():
    text = hardware.format_record(get_accelerator("b200"))
    assert "GB/s per direction" in text and "TFLOP/s" in text


def test_runs_without_site_packages():
    r = subprocess.run([sys.executable, "-S", str(SCRIPT), "--help"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0 and "usage" in r.stdout


def test_cli_unknown_exit_code_subprocess():
    r = subprocess.run([sys.executable, "-S", str(SCRIPT), "h1000"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2
    assert "nearest: h100-sxm" in r.stderr and "Traceback" not in r.stderr


# --- property tests -----------------------------------------------------------------------------
@given(st.sampled_from([a for n in list_accelerators()
                        for a in [n] + get_accelerator(n)["aliases"]]),
       st.sampled_from([str.lower, str.upper, lambda s: s.replace("-", "_"),
                        lambda s: s.replace("-", " ")]))
def test_every_alias_resolves_in_any_case(alias, transform):
    canon = get_accelerator(alias)["name"]
    assert get_accelerator(transform(alias))["name"] == canon


@given(st.text(min_size=1, max_size=12))
def test_lookup_never_crashes(s):
    try:
        get_accelerator(s)
    except KeyError as e:
        assert str(e.args[0]).startswith("unknown accelerator")


# --- usable (driver-reported) memory ---------------------------------------------------------
# Published driver readings (nvidia-smi memory.total, MiB) pasted in public GitHub threads; exact.
USABLE_READINGS = [
    # modal-labs/modal-client PR #2797 lists nvidia-smi totals across Modal's fleet (2025-01).
    ("h100-sxm", 81559, "modal-client PR #2797; NVIDIA/nccl #1264 (driver 550.54.15)"),
    ("a100-80gb", 81920, "modal-client PR #2797"),
    ("a100-40gb", 40960, "modal-client PR #2797; bottlerocket-core-kit PR #834 (driver 580)"),
    ("l40s", 46068, "modal-client PR #2797; akash provider-configs PR #99"),
    ("h20", 97871, "NVIDIA/nvtrust #128 (driver 580.95.05)"),
    ("b200", 183359, "NVIDIA/TensorRT-LLM #10278 (driver 580.95.05)"),
    ("rtx-4090", 24564, "RLinf/RLinf #255 (driver 550.163.01)"),
]


@pytest.mark.parametrize("name,mib,source", USABLE_READINGS, ids=[r[0] for r in USABLE_READINGS])
def test_usable_memory_matches_published_reading(name, mib, source):
    rec = get_accelerator(name)
    assert rec["memory_usable_bytes"] == mib * 2 ** 20, (name, source)
    assert rec["memory_usable_source"].startswith("measured")
    assert f"{mib} MiB" in rec["notes"]


def _binary_capacity_bytes(rec):
    """The vendor's figure read as GiB (HBM stacks are binary); rows typed in GiB stay as they are."""
    mem = rec["memory_bytes"]
    return mem if mem % 2 ** 30 == 0 else mem / 1e9 * 2 ** 30


@pytest.mark.parametrize("name", list_accelerators())
def test_usable_memory_bounded_by_binary_capacity(name):
    rec = get_accelerator(name)
    usable, cap = rec["memory_usable_bytes"], _binary_capacity_bytes(rec)
    assert isinstance(usable, int) and 0 < usable <= cap
    assert usable > rec["memory_bytes"] * 0.9
    src = rec["memory_usable_source"]
    assert src.startswith("measured") or src.startswith("derived, not measured")
    assert "Usable memory: " + src in rec["notes"]
    if name.startswith(("a10", "l4", "rtx")):
        return  # GDDR parts: ECC / reserved carve-outs are larger, bound above is enough
    assert usable > 0.9 * cap  # HBM parts: driver keeps at most a few % back


def test_usable_memory_in_cli_and_json(capsys):
    rec = main(["h100", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["memory_usable_bytes"] == rec["memory_usable_bytes"] == 81559 * 2 ** 20
    main(["h100"])
    assert "usable memory      79.65 GiB" in capsys.readouterr().out
    main([])
    assert "[GiB]" in capsys.readouterr().out


# The host link (GPU <-> host memory), one field read by training's ZeRO-Offload copies and the
# serving KV tier. Vendor figures are both directions together: A100 datasheet "PCIe Gen4: 64 GB/s",
# H100/H200 datasheets "PCIe Gen5: 128 GB/s", GH200 page "NVLink-C2C 900 GB/s"; stored per direction
# at the PCIe line data rate (128b/130b encoding: 31.5 / 63.0 GB/s), so within 2% of half the
# vendor's raw figure for PCIe, exact for NVLink-C2C.
@pytest.mark.parametrize("name,link,bidir_gb_s,tol", [
    ("a100-80gb", "PCIe 4.0 x16", 64, 0.02), ("h100-sxm", "PCIe 5.0 x16", 128, 0.02),
    ("h200", "PCIe 5.0 x16", 128, 0.02), ("gh200", "NVLink-C2C", 900, 0.0), ("gb200", "NVLink-C2C", 900, 0.0)])
def test_host_link_matches_vendor_figure(name, link, bidir_gb_s, tol):
    rec = get_accelerator(name)
    assert rec["host_link"] == link
    assert rel_close(rec["host_link_bandwidth_bytes_per_s"], bidir_gb_s / 2 * 1e9, tol + 1e-12)


def test_training_and_serving_read_the_same_host_link():
    # one line rate, each use at its own reached share: bulk ZeRO-Offload copies (assumed) and paged
    # KV reloads (LMCache's measured 0.70)
    from llmcalc.accelerator import HOST_LINK_EFFICIENCY
    from llmcalc.serve.offload import KV_RELOAD_EFFICIENCY, host_link_bytes_per_s
    from llmcalc.tools.training_hardware import host_link_reached_bytes_per_s
    for name in ("a100-80gb", "h100-sxm", "gh200", "b200", "mi300x"):
        line = get_accelerator(name)["host_link_bandwidth_bytes_per_s"]
        assert host_link_bytes_per_s(get_accelerator(name)) == pytest.approx(
            KV_RELOAD_EFFICIENCY * line)
        assert host_link_reached_bytes_per_s(get_accelerator(name)) == pytest.approx(HOST_LINK_EFFICIENCY * line)
    # not listed: the KV tier needs --host-kv-bandwidth-gbps
    assert host_link_bytes_per_s(get_accelerator("tpu-v5p")) is None
