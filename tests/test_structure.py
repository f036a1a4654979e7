"""The package's shape (issue 42's 'must show'): below the tools no command line, and no function
a reader cannot take in at once. Structural checks of our own code: they fail when someone adds an
`args.` read to serve/ or grows a 200-line function, whatever the numbers."""
import ast
import glob
import os
import re

from conftest import ROOT

PKG = os.path.join(ROOT, "llmcalc")
BELOW_TOOLS = ("serve", "train", "model", "comm")
MAX_FUNCTION_LINES = 150


def _sources(folders=None):
    for path in sorted(glob.glob(os.path.join(PKG, "**", "*.py"), recursive=True)):
        rel = os.path.relpath(path, PKG)
        if folders is None or rel.split(os.sep)[0] in folders:
            with open(path, encoding="utf-8") as fh:
                yield rel, fh.read()


def test_no_command_line_below_the_tools():
    # serve/, train/, model/ and comm/ take keyword arguments and raise errors.CalcError; the tools
    # own argparse. Comments are dropped first, as the project's stop hook does.
    bad = []
    for rel, text in _sources(BELOW_TOOLS):
        for no, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            if re.search(r"\bargs\.|\bparser\b|\bargparse\b", code):
                bad.append(f"{rel}:{no}: {line.strip()}")
    assert not bad, "\n".join(bad)


def test_no_package_function_over_150_lines():
    long = []
    for rel, text in _sources():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{rel}:{node.lineno} {node.name}: {n} lines")
    assert not long, "\n".join(long)


def test_the_check_sees_a_long_function_and_an_args_read():
    # the two scans above on made-up code: a check that cannot fail proves nothing
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    tree = ast.parse(f"def f():\n{body}\n    return args.gpu\n")
    fn = tree.body[0]
    assert fn.end_lineno - fn.lineno + 1 > MAX_FUNCTION_LINES
    assert re.search(r"\bargs\.", "    return args.gpu")
