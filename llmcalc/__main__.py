"""`python -m llmcalc TOOL [flags]`: runs one tool as its installed command does (see
llmcalc/commands.py)."""
import sys

from .cli import VERSION, run_tool
from .commands import TOOLS, run


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in ("-V", "--version"):
        run_tool(lambda: print(f"llmcalc {VERSION}"))  # into `head`: quiet, status 141
        return 0
    if argv and argv[0] not in TOOLS and argv[0] not in ("-h", "--help"):
        print(f"python -m llmcalc: error: unknown tool {argv[0]!r}; tools: {', '.join(TOOLS)} "
              "(python -m llmcalc --help)", file=sys.stderr)  # one line, as every tool's errors
        return 2
    if not argv or argv[0] not in TOOLS:
        width = max(map(len, TOOLS))
        lines = [f"  {n:<{width}}  as {script}" for n, (_, script) in TOOLS.items()]
        run_tool(lambda: print("usage: python -m llmcalc TOOL [flags]   (TOOL --help for its "
                               "flags)\n\ntools:\n" + "\n".join(lines)))
        return 0
    sys.argv[0] = f"llmcalc {argv[0]}"  # argparse's prog in usage and error lines
    return run(argv[0], argv[1:], spelling="python3 -m llmcalc {tool}")


if __name__ == "__main__":
    sys.exit(main())
