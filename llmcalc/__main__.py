"""`python -m llmcalc TOOL [flags]`: runs one tool as its installed command does (see
llmcalc/commands.py)."""
import sys

from .commands import TOOLS, run


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in TOOLS:
        asked = not argv or argv[0] in ("-h", "--help")  # else an unknown tool: usage, exit 2
        width = max(map(len, TOOLS))
        lines = [f"  {n:<{width}}  as {script}" for n, (_, script) in TOOLS.items()]
        print("usage: python -m llmcalc TOOL [flags]   (TOOL --help for its flags)\n\ntools:\n"
              + "\n".join(lines), file=sys.stdout if asked else sys.stderr)
        return 0 if asked else 2
    sys.argv[0] = f"llmcalc {argv[0]}"  # argparse's prog in usage and error lines
    return run(argv[0], argv[1:], spelling="python3 -m llmcalc {tool}")


if __name__ == "__main__":
    sys.exit(main())
