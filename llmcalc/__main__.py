"""`python -m llmcalc TOOL [flags]` and the installed commands (llmcalc-params, llmcalc-flops,
llmcalc-mem, llmcalc-train-time, llmcalc-latency, llmcalc-comm, llmcalc-hardware): each runs the tool
module's main(), which is what the built calc_*.py scripts run too. A tool's module is imported only
when it runs (start-up time)."""
import importlib
import sys

from .cli import run_tool

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
    module = importlib.import_module(TOOLS[name][0])
    run_tool(lambda: module.main(argv))
    return 0


def params():
    return run("params")


def flops():
    return run("flops")


def mem():
    return run("mem")


def train_time():
    return run("train-time")


def latency():
    return run("latency")


def comm():
    return run("comm")


def hardware():
    return run("hardware")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in TOOLS:
        width = max(map(len, TOOLS))
        lines = [f"  {n:<{width}}  as {script}" for n, (_, script) in TOOLS.items()]
        print("usage: python -m llmcalc TOOL [flags]   (TOOL --help for its flags)\n\ntools:\n"
              + "\n".join(lines), file=sys.stderr if argv else sys.stdout)
        return 2 if argv and argv[0] not in ("-h", "--help") else 0
    sys.argv[0] = f"llmcalc {argv[0]}"  # argparse's prog in usage and error lines
    return run(argv[0], argv[1:])


if __name__ == "__main__":
    sys.exit(main())
