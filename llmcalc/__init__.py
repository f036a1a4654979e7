"""LLM planning calculators: parameters, FLOPs, memory, training time, serving latency and
collectives of a transformer, from flags or a model's config.json. Standard library only.

The package is the source; the six standalone scripts (calc_*.py) are built from it by
tools/build_scripts.py, each one a tool module plus exactly the package modules it imports.

Layout (imports form a tree; each module opens with what it owns):
  cli          the parser pieces every tool shares
  model/       config reading (the one place that trusts nothing), the layer list, per-kind formulas
  comm/        collective times and the collectives of one training step
  train/       training FLOPs, memory, the per-kernel step model and the layout search
  serve/       serving stacks, the forward pass, steady state, simulated benchmark, memory, search
  tools/       one thin module per calculator: its flags, main() and report

The installed commands (pyproject.toml's [project.scripts]) are the functions of commands.py, one
per tool, and `python -m llmcalc TOOL` (__main__.py) runs the same: each imports only its tool's
modules (start-up time), and runs the tool module's main(), which is what its built script runs
too. This file defines nothing, so `llmcalc.comm` and `llmcalc.hardware` are always the submodules.
"""
