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

The installed commands (pyproject.toml's [project.scripts]) are the functions below, one per tool,
and `python -m llmcalc TOOL` (__main__.py) runs the same: each imports only its tool's modules
(start-up time), and runs the tool module's main(), which is what its built script runs too.
"""

TOOLS = {  # name on the command line: (module, the built script it matches)
    "params": ("llmcalc.tools.params", "calc_transformer_params.py"),
    "flops": ("llmcalc.tools.flops", "calc_transformer_flops.py"),
    "mem": ("llmcalc.tools.mem", "calc_transformer_mem.py"),
    "train-time": ("llmcalc.tools.training_time", "calc_training_time.py"),
    "latency": ("llmcalc.tools.latency", "calc_inference_latency.py"),
    "comm": ("llmcalc.tools.comm", "calc_comm.py"),
    "hardware": ("llmcalc.hardware", "hardware.py"),
}


def run(name, argv=None):
    """Run one tool as a command (exit status 2 on bad input, 141 when the reader of its output
    quits early); returns 0."""
    import importlib
    from .cli import run_tool
    module = importlib.import_module(TOOLS[name][0])
    run_tool(lambda: module.main(argv))
    return 0


def _command(name):
    """The installed command for one tool (pyproject.toml's [project.scripts] names these)."""
    def command():
        return run(name)
    command.__name__ = name.replace("-", "_")
    return command


params, flops, mem = _command("params"), _command("flops"), _command("mem")
train_time, latency = _command("train-time"), _command("latency")
comm, hardware = _command("comm"), _command("hardware")
