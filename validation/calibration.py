"""The calibration registry: every constant in llmcalc/ fitted to measured or published rows.

Rules (issues 44 and 45; DEVELOPERS.md, "Calibration and validation are kept apart"):
- A constant may be fitted when no single measurement gives it. It keeps a physical meaning
  ("llm-foundry's FSDP reaches this fraction of the A100's matmul rate", "Megatron-Core's MoE
  dispatch costs this much host time per layer and micro-batch") and a source.
- It is listed here once: its name, value, the file that holds it, its meaning, its source, the rows
  that set it (`set_by`) and the rows that judge it (`judged_by`), at least twice as many as set it,
  none of them in both. A constant read off one kernel-level measurement (a microbenchmark, a
  vendor's number) names that measurement in `source` and may have an empty `set_by`; it still needs
  rows that judge it.
- In the code, the line that assigns the constant ends with `# calibrated: <name>`; the value on
  that line equals `value` here. tests/test_calibration_registry.py checks all of this both
  ways: every marker is registered and every entry has its one marker.
- Tables that report errors list the rows of `set_by` apart from the judged rows.

Row ids are "<table>:<id>", the tables resolved by tests/test_calibration_registry.py (ROW_TABLES):
- serving:<row_id>      validation/serving_rows.csv
- training:<id>         tests/test_training_today.py ROWS, and foundry-<i> for its llm-foundry rows
- nccl:<table>/<i>      tests/nccl_tests_data.py, the i-th row (0-based) of the named table
- finetune:<id>         fine-tuning rows (published or measured) under validation/

Each area keeps its own tuple so that work on one does not touch the others.
"""


def entry(*, name, value, where, meaning, source, set_by, judged_by):
    """One fitted constant; see the module docstring for what each field must hold."""
    return {"name": name, "value": value, "where": where, "meaning": meaning, "source": source,
            "set_by": tuple(set_by), "judged_by": tuple(judged_by)}


# Collectives (llmcalc/comm/). Judged by the nccl-tests tables of tests/nccl_tests_data.py at the
# sizes each constant governs (tests/test_calc_comm.py holds the comparisons). PCIE_PEER_EFFICIENCY
# (21 / 31.5, NVIDIA/nccl#841) has no judging row in those tables (no PCIe-only server is tabled)
# and is not listed until one is.
def _nccl(table, rows):
    return [f"nccl:{table}/{i}" for i in rows]


COMM = (
    entry(name="alpha_launch_s", value=8.9e-6, where="llmcalc/comm/collectives.py",
          meaning="fixed cost of one collective call (launch and synchronisation) before any hop",
          source="the floor of all_reduce_perf on 2 x A100-SXM4-40GB (32-64 B rows, NVIDIA/nccl "
                 "issue #583), 10.14 us, less its two NVLink hops at NCCL's 0.6 us LL hop latency",
          set_by=[], judged_by=_nccl("A100_AZURE_8GPU", range(10))
          + _nccl("H100_DGX_8GPU", range(10))),
    entry(name="scale_up_efficiency", value=0.80, where="llmcalc/comm/collectives.py",
          meaning="share of the NVLink line rate NCCL's ring and tree reach on large messages",
          source="the middle of NCCL's sm80 bus-bandwidth cap (src/graph/tuning.cc: 235 of 300 "
                 "GB/s, 0.78) and S. Jeaugey's H100 ring figure (NVIDIA/nccl-tests#212: ~370 of "
                 "450 GB/s, 0.82)",
          set_by=[], judged_by=_nccl("A100_AZURE_8GPU", range(25, 31))
          + _nccl("A100_OCI_8GPU", range(5, 10))),
    entry(name="nvls_efficiency", value=0.61, where="llmcalc/comm/collectives.py",
          meaning="algorithm bandwidth of NVLink SHARP (NVLS) all-reduce over the NVLink line "
                  "rate",
          source="S. Jeaugey, NVIDIA/nccl-tests#212: algbw ~275 GB/s on 8 x H100 with NVLS, of "
                 "450 GB/s",
          set_by=[], judged_by=_nccl("H100_DGX_8GPU", range(25, 32))
          + _nccl("H100_P5_8GPU_LARGE", range(5))),
    entry(name="scale_out_efficiency", value=0.94, where="llmcalc/comm/collectives.py",
          meaning="share of the per-GPU NIC line rate (InfiniBand / RoCE) NCCL reaches across nodes",
          source="Azure NDmV4 two-node all_reduce_perf (AML_NCCL_Test README): busbw 187.7 GB/s "
                 "at 8 GiB, bounded by 8 x 25 GB/s NICs per node",
          set_by=_nccl("A100_AZURE_16GPU_2NODES", [7]),
          judged_by=_nccl("A100_AZURE_16GPU_2NODES", range(3, 7))),
)

# Training step time (llmcalc/train/, llmcalc/tools/training_*.py, hardware.py rows it reads).
_FOUNDRY_H100 = [f"training:foundry-{i}" for i in range(14)]
_FOUNDRY_A100 = [f"training:foundry-{i}" for i in range(14, 21)]
_FOUNDRY_SET = ("training:foundry-6", "training:foundry-12", "training:foundry-13")
_FOUNDRY_SOURCE = ("MosaicML llm-foundry's MPT benchmark tables (scripts/train/benchmarking/"
                   "README.md @5e85bd62d, image mosaicml/pytorch:2.1.0_cu121, amp_bf16, FSDP): no "
                   "kernel-level measurement of its loop exists. Set jointly with the other "
                   "llm-foundry constants by least squares over the set rows (H100: 7b s 2048 where "
                   "the matmuls dominate; 3b and 1b s 8192 where attention is 34-38% of the step), "
                   "then the A100 fraction on its own set row")
# torchtitan rows run compiled (tests/test_training_today.py: TT, ATP, TRAINY) and their float8
# tensorwise subset.
_TT_TENSORWISE_ROWS = ([f"training:tt-8b-{n}gpu-compile-float8" for n in (8, 128)]
                       + [f"training:tt-8b-cp{c}" for c in (1, 2, 4, 8)]
                       + ["training:tt-70b-2d", "training:tt-70b-2d-asynctp"]
                       + [f"training:atp-{m}-float8-tensorwise-{o}" for m in ("70b", "8b")
                          for o in ("none", "full")]
                       + [f"training:trainy-h200-{k}nodes" for k in (4, 8)])
_COMPILED_ROWS = ([f"training:tt-8b-{n}gpu-compile" for n in (8, 128)] + _TT_TENSORWISE_ROWS
                  + [f"training:atp-{m}-{q}-{o}" for m in ("70b", "8b")
                     for q in ("bf16", "float8-rowwise") for o in ("none", "full")])

TRAINING = (
    entry(name="llm_foundry_attention_rate", value=0.54, where="llmcalc/train/attention_rates.py",
          meaning="llm-foundry's attention call (flash-attn 2's varlen entry through MPT's "
                  "pad/unpad glue) reaches this fraction of FlashAttention-2's rate on the same GPU "
                  "(our H200 fa2 table on Hopper, the published FA2 fraction on the A100): kernel "
                  "fa2-varlen, the stack's default",
          source=_FOUNDRY_SOURCE, set_by=_FOUNDRY_SET,
          judged_by=[r for r in _FOUNDRY_H100 + _FOUNDRY_A100 if r not in _FOUNDRY_SET]),
    entry(name="llm_foundry_sustained_hopper", value=0.805, where="llmcalc/accelerator.py",
          meaning="llm-foundry's FSDP loop sustains this fraction of the H100's bf16 MAMF in its "
                  "matmuls (decision 2: a property of the stack on the GPU; torch's own loop on our "
                  "H100 sustains 0.9125, SUSTAINED_H100); the Hopper rows' stacks entry",
          source=_FOUNDRY_SOURCE, set_by=_FOUNDRY_SET,
          judged_by=[r for r in _FOUNDRY_H100 if r not in _FOUNDRY_SET]),
    entry(name="llm_foundry_sustained_ampere", value=0.89, where="llmcalc/accelerator.py",
          meaning="llm-foundry's FSDP loop sustains this fraction of the A100's bf16 MAMF in its "
                  "matmuls, where Megatron-LM of 2022 on Selene sustains MAMF itself (Korthikanti et "
                  "al. 2022, Table 5: 2-6% fast at 1.0); the A100 SXM rows' stacks entry",
          source=_FOUNDRY_SOURCE + "; set on foundry-18 (A100 7b s 2048, matmuls 80% of the "
                 "step) with the attention rate fixed", set_by=["training:foundry-18"],
          judged_by=[r for r in _FOUNDRY_A100 if r != "training:foundry-18"]),
    entry(name="sustained_h100_bf16", value=0.9125, where="llmcalc/accelerator.py",
          meaning="a training loop's sustained bf16 matmul rate over MAMF on the 700 W GH100 (H100 "
                  "SXM, H200, H800): back-to-back matmuls of training shapes for 20 s",
          source="our H100 grid (validation/h100/measure_training.py, results/gemm.jsonl, "
                 "2026-11-24): gemm_time_s's median over 51 shapes set equal to the measured "
                 "median, 693 of MAMF's 794.5 TFLOP/s; no training row set it",
          set_by=[], judged_by=[f"training:mlm-{m}" for m in ("1.7B", "7.1B", "16B", "32B", "70B",
                                                                "119B", "177B", "314B", "462B")]
          + ["training:llama3-405b-8192gpu", "training:llama3-405b-16384gpu"]
          + [f"training:atp-{m}-bf16-{o}" for m in ("70b", "8b") for o in ("none", "full")]),
    entry(name="sustained_h100_fp8", value=0.9209, where="llmcalc/accelerator.py",
          meaning="the same for fp8 (torch._scaled_mm, e4m3, per-tensor scales)",
          source="our H100 grid, as sustained_h100_bf16: 1,234 of MAMF's 1,402.6 TFLOP/s",
          set_by=[], judged_by=["training:mb-h100-llama3-8b", "training:mb-h100-llama3-70b",
                                "training:mb26-h100-llama3-70b-fp8", "training:mb-h100-llama31-405b",
                                "training:trainy-h200-4nodes", "training:trainy-h200-8nodes"]
          + [f"training:nemo-cp-{k}k" for k in (4, 8, 16)]),
    entry(name="sustained_blackwell", value=2860.9 / 3615.6, where="llmcalc/accelerator.py",
          meaning="a training loop's sustained matmul rate over MAMF on Blackwell (B200, GB200, "
                  "B300, GB300), bf16 and fp8",
          source="Azure's cuBLASLt FP8 GEMM run on one GB200 (Azure/AI-benchmarking-guide "
                 "ND_GB200_v6_results.md @2a370be6): mean 2,860.9 TFLOP/s over the squares 4096^3 "
                 "to 32768^3, MAMF 3,615.6; no training row set it",
          set_by=[], judged_by=["training:mb-b200-llama3-8b", "training:mb-gb200-llama3-8b",
                                "training:mb-b200-llama3-8b-mx", "training:mb-gb200-llama3-8b-mx",
                                "training:mb-gb200-llama3-70b", "training:mb-b200-llama31-405b",
                                "training:mb-gb200-llama31-405b", "training:mlperf-uf-b200-8",
                                "training:mlperf-dell-b300-8"]
          + [f"training:nemotron-340b-gb200-weak-{d}-{n}" for d in ("bf16", "fp8")
             for n in (128, 256, 512)]),
    entry(name="cudnn_pre_91_attention_rate", value=0.83, where="llmcalc/train/attention_rates.py",
          meaning="cuDNN's fused attention before 9.1 (NeMo's 24.03.01 container, March 2024) "
                  "reaches this fraction of cuDNN 9.1's published Hopper rate (NVIDIA/cudnn-"
                  "frontend @b740542): kernel cudnn-pre-9.1",
          source="no published rate of a cuDNN older than 9.1 found; set on NeMo's long-sequence "
                 "table (docs/source/performance/performance_long_sequence.md @a2c4cc8) at 128K, "
                 "where attention is most of the step",
          set_by=["training:nemo-cp-128k"],
          judged_by=[f"training:nemo-cp-{k}k" for k in (4, 8, 16, 32, 64, 256, 512, 1024)]),
    entry(name="compile_layer_factor", value=0.46, where="llmcalc/train/kernels.py",
          meaning="torch.compile (Inductor) runs a block's non-matmul, non-attention kernels in "
                  "this fraction of their eager time (norms, rotary, activation, residuals fused "
                  "into Triton kernels); --framework pytorch --compile",
          source="our H200 (validation/h200/results/layers.jsonl, measure_layers.py): Llama "
                 "blocks of width 4096 and 2048 at 2 x 4096 and 1 x 8192 tokens, profiler kernel "
                 "time, 0.46 / 0.47 / 0.45 / 0.47; no training row set it",
          set_by=[], judged_by=_COMPILED_ROWS),
    entry(name="compile_loss_factor", value=0.26, where="llmcalc/train/kernels.py",
          meaning="torch.compile runs the head's final norm and fp32 cross-entropy in this "
                  "fraction of their eager time",
          source="our H200 (validation/h200/results/head.jsonl): vocabulary 128256, 8192 tokens, "
                 "3.89 of 14.71 ms; no training row set it",
          set_by=[], judged_by=_COMPILED_ROWS),
    entry(name="torchao_fp8_cast_tensorwise_bytes", value=11.4, where="llmcalc/train/kernels.py",
          meaning="torchao Float8Linear's tensorwise scaling (compiled) moves this many bytes per "
                  "element of each linear's operands (amax, cast, transposed copies) at achievable "
                  "bandwidth",
          source="our H200 (validation/h200/results/layers.jsonl): 8B-shaped layer, 2 x 4096 "
                 "tokens, float8 kernel time above bf16's, +2.11 / +2.31 ms per layer; no "
                 "training row set it",
          set_by=[], judged_by=_TT_TENSORWISE_ROWS),
    entry(name="torchao_fp8_cast_rowwise_bytes", value=28.0, where="llmcalc/train/kernels.py",
          meaning="the same for torchao's rowwise scaling (a scale per row, fp32 amaxes per row "
                  "and column)",
          source="our H200 (validation/h200/results/layers.jsonl): the same layer, +5.42 ms; no "
                 "training row set it",
          set_by=[], judged_by=[f"training:atp-{m}-float8-rowwise-{o}" for m in ("70b", "8b")
                                for o in ("none", "full")]),
)

# Fine-tuning under transformers/peft (issue 43).
FINETUNE = (
)

# Serving (llmcalc/serve/, llmcalc/tools/latency*.py, hardware.py rows read by serving).
def _serving_ids(test):
    """The ids of validation/serving_rows.csv whose row passes test(comparison row, published
    row): a rule that names the rows, written out once by the table's own columns (group, model,
    GPU, precision) rather than listed by hand."""
    import csv
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "published_serving.csv"), newline="", encoding="utf-8") as fh:
        pub = {r["row_id"]: r for r in csv.DictReader(fh)}
    with open(os.path.join(here, "serving_rows.csv"), newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return tuple(sorted({f"serving:{r['row_id']}" for r in rows if test(r, pub[r["row_id"]])}))


def _judged(r):
    return r["group"] != "not run" and not r["group"].startswith("calibration:")


_TRITON_SET = _serving_ids(
    lambda r, p: r["group"] == "calibration: TensorRT-LLM v0.14 H100 QPS 2 TTFT")

SERVING = (
    entry(name="roofline_corner_p", value=2.15, where="llmcalc/serve/stacks.py",
          meaning="exponent of the soft roofline corner of a weight matmul, (t_math^p + "
                  "t_mem^p)^(1/p): near the ridge neither the math nor the loads hide the other",
          source="least-squares fit (log time) to the 28 FP8 GEMMs of DeepGEMM's README (first "
                 "release a6d97a1, H800), at this script's H100 FP8 rates; "
                 "tools/fit_roofline_corner.py. A kernel-level measurement: no serving row set it",
          set_by=(),
          # TensorRT-LLM v0.17's maximum-load rows: large batches, near and past the ridge
          judged_by=_serving_ids(lambda r, p: _judged(r) and r["row_id"].startswith("TRT017-"))),
    entry(name="trtllm_triton_request_overhead_ms", value=2.25, where="llmcalc/serve/stacks.py",
          meaning="time per request that TensorRT-LLM behind Triton's tensorrtllm_backend adds "
                  "outside the engine (HTTP/gRPC, the ensemble's pre- and post-processing models)",
          source="median of published TTFT less ours at the lightest load (QPS 2) of the v0.14 "
                 "perf-overview's online table on H100 (TensorRT-LLM docs/source/performance/"
                 "perf-overview.md, v0.14)",
          set_by=_TRITON_SET,
          judged_by=tuple(x for x in _serving_ids(
              lambda r, p: _judged(r) and r["row_id"].startswith("TRT014ON-"))
              if x not in _TRITON_SET)),
    entry(name="ft_allreduce_us", value=47.9, where="llmcalc/serve/stacks.py",
          meaning="time of one in-place all-reduce call in FasterTransformer (NCCL, its custom "
                  "all-reduce off by default: custom_ar_comm.cc), in us",
          source="FasterTransformer docs/gpt_guide.md, GPT-20B at TP 8, batch 1: 60/20 less 20/8 "
                 "(212 - 89 ms) over the 12 more decode steps, less ours without it",
          set_by=_serving_ids(lambda r, p: r["group"].startswith(
              "calibration: FasterTransformer GPT-20B")),
          # every other multi-GPU row of FT's tables: GPT-20B at TP 2-8, GPT-89B and GPT-175B
          judged_by=_serving_ids(lambda r, p: _judged(r) and r["row_id"].startswith(
              ("FTGPT-20B-tp2", "FTGPT-20B-tp4", "FTGPT-20B-tp8", "FTGPT-89B", "FTGPT-175B")))),
    entry(name="ft_triton_request_overhead_ms", value=88.1, where="llmcalc/serve/stacks.py",
          meaning="time per request FasterTransformer behind Triton spends outside its kernels "
                  "(the server, the ensemble's pre- and post-processing), in ms",
          source="FasterTransformer docs/gpt_guide.md, GPT-89B (the 175B's 96 x 128 width, 48 "
                 "layers) at TP 8, batch 1, 128/8: 279.44 ms less ours",
          set_by=_serving_ids(lambda r, p: r["group"].startswith(
              "calibration: FasterTransformer GPT-89B")),
          judged_by=_serving_ids(lambda r, p: _judged(r) and r["row_id"].startswith(
              ("FTGPT-89B", "FTGPT-175B")))),
    entry(name="memory_efficiency", value=0.70, where="llmcalc/serve/stacks.py",
          meaning="share of peak HBM bandwidth a decode step's weight reads and small operations "
                  "reach end to end (kernels, launches and gaps included)",
          source="gpt-fast's README: Llama-2-7B at batch 1 on an A100-80GB moves 1,397.31 GB/s of "
                 "2,039 (0.69); one published measurement, no serving row set it (checked in "
                 "tests/test_calc_inference_latency.py against gpt-fast's TP table and Databricks' "
                 "MBU)",
          set_by=(),
          # decode-dominated rows: static batches (TensorRT-LLM v0.5/0.6.1 and its blogs) and
          # vLLM's CI latency runs at batch 8
          judged_by=_serving_ids(lambda r, p: _judged(r) and r["row_id"].startswith(
              ("TRTSTAT-", "TRTBLOG-", "VLLMBK-LAT")))),
    entry(name="fp4_shape_penalty", value=0.6960713040071491, where="llmcalc/serve/stacks.py",
          meaning="share of its best FP4 matmul rate a GPU reaches at the shapes serving runs, "
                  "relative to the same share at FP8 (FP4 needs larger shapes to fill the GPU)",
          source="Azure/AI-benchmarking-guide Azure_Results/ND_GB200_v6_results.md @2a370be6: "
                 "cuBLASLt on one GB200, FP4 5,177.3 TFLOP/s at 4096^3 against 7,627.6 at "
                 "16384^3, FP8 2,834.6 against 2,906.9; a microbenchmark, no serving row set it",
          set_by=(),
          # the FP4 rows of TensorRT-LLM v1.0's table (B200, GB200), all judged
          judged_by=_serving_ids(lambda r, p: _judged(r) and r["row_id"].startswith("TRT10-")
                                 and p["weight_precision"].upper() == "FP4")),
    entry(name="kv_stream_efficiency", value=0.93, where="llmcalc/accelerator.py",
          meaning="share of peak HBM bandwidth a decode attention kernel streams the KV cache "
                  "at on GH100 parts (long contiguous pages, no launch gaps inside)",
          source="our H200 graph-mode decode steps (validation/h200/results/decode.jsonl, "
                 "Llama-3-8B shape): 1,024 -> 4,096 cached tokens adds 2.878 ms at batch 32 "
                 "(12.9 GB of K/V, 4.48 TB/s) and 5.695 ms at batch 64 (25.8 GB, 4.53 TB/s) of "
                 "4.8 TB/s; a "
                 "kernel-level measurement, no serving row set it",
          set_by=(),
          # the dense maximum-load rows of v0.17 and v1.0 on Hopper GPUs, where long contexts make
          # the KV reads a large part of a step
          judged_by=_serving_ids(lambda r, p: _judged(r)
                                 and r["row_id"].startswith(("TRT017-", "TRT10-"))
                                 and r["gpu"].startswith(("H100", "H200", "GH200"))
                                 and r["model"].startswith(("LLaMA", "Llama", "Mistral")))),
)

ENTRIES = COMM + TRAINING + FINETUNE + SERVING
