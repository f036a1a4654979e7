"""LLM planning calculators: parameters, FLOPs, memory, training time, serving latency and
collectives of a transformer, from flags or a model's config.json. Standard library only.

The package is the source; the six standalone scripts (calc_*.py) are built from it by
tools/build_scripts.py, each one a tool module plus exactly the package modules it imports.

Layout (imports form a tree; each module opens with what it owns):
  accelerator  the GPU record (Accelerator: every fact the models read) and the one resolver of
               a --gpu name; hardware.py holds the table of rows
  records      Record, the declared-field dict every record that flows between modules is
  errors       CalcError, the one error type below the tools (the tools turn it into exit 2)
  text         how a number is written back to the user
  cli          the parser pieces every tool shares
  model/       config reading (the one place that trusts nothing), the layer list, per-kind formulas
  comm/        collective times and the collectives of one training step
  train/       training FLOPs, memory, the per-kernel step model and the layout search
  serve/       serving stacks, the forward pass, steady state, simulated benchmark, memory, search
  tools/       one thin module per calculator: its flags, main() and report; tools/gpu.py turns
               --gpu into the record. Only here are argparse, `args` and GPU names read: serve/,
               train/, model/ and comm/ take keyword arguments and records, and raise CalcError

The installed commands (pyproject.toml's [project.scripts]) are the functions of commands.py, one
per tool, and `python -m llmcalc TOOL` (__main__.py) runs the same: each imports only its tool's
modules (start-up time), and runs the tool module's main(), which is what its built script runs
too. This file defines nothing, so `llmcalc.comm` and `llmcalc.hardware` are always the submodules.
"""
