"""The installed commands (pyproject.toml's [project.scripts]): one function per tool, and `run`,
which `python -m llmcalc TOOL` (__main__.py) calls too.

Each command imports only its own tool's modules (start-up time) and runs the tool module's
main(), which is what its built script runs. They live here, not in llmcalc/__init__.py, so that
no command function shares a name with a submodule (`llmcalc.comm`, `llmcalc.hardware`).
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


INSTALLED = "llmcalc-{tool}"  # how an installed command spells a tool (pyproject.toml)


def run(name, argv=None, *, spelling=INSTALLED):
    """Run one tool as a command (exit status 2 on bad input, 141 when the reader of its output
    quits early); returns 0. The commands it prints (next steps) name the other tools as
    `spelling` does (INSTALLED, or __main__'s `python3 -m llmcalc {tool}`), not as built scripts."""
    import importlib
    from .cli import COMMAND_SPELLINGS, run_tool
    module = importlib.import_module(TOOLS[name][0])
    before = dict(COMMAND_SPELLINGS)
    COMMAND_SPELLINGS.update({script: spelling.format(tool=tool)
                              for tool, (_, script) in TOOLS.items()})
    try:
        run_tool(lambda: module.main(argv))
    finally:
        COMMAND_SPELLINGS.clear()
        COMMAND_SPELLINGS.update(before)
    return 0


def params():
    """llmcalc-params: calc_transformer_params.py."""
    return run("params")


def flops():
    """llmcalc-flops: calc_transformer_flops.py."""
    return run("flops")


def mem():
    """llmcalc-mem: calc_transformer_mem.py."""
    return run("mem")


def train_time():
    """llmcalc-train-time: calc_training_time.py."""
    return run("train-time")


def latency():
    """llmcalc-latency: calc_inference_latency.py."""
    return run("latency")


def comm():
    """llmcalc-comm: calc_comm.py."""
    return run("comm")


def hardware():
    """llmcalc-hardware: hardware.py."""
    return run("hardware")
