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
SERVING = (
)

ENTRIES = COMM + TRAINING + FINETUNE + SERVING
