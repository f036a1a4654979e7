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


# Collectives (llmcalc/comm/).
COMM = (
)

# Training step time (llmcalc/train/, llmcalc/tools/training_*.py, hardware.py rows it reads).
TRAINING = (
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
