#!/usr/bin/env python3
"""Build the six standalone calc_*.py scripts from the llmcalc package.

Each script is one tool module (llmcalc/tools/NAME.py) plus exactly the package modules it
imports, directly or not, in dependency order (a module before every module that imports from it),
as plain Python: the package's own imports removed, the standard-library imports gathered at the
top, each module's docstring kept as a comment above its code, and line 2 saying the file is
@generated and which sources to edit instead (.gitattributes marks the built files generated for
GitHub, which then folds them in a diff; they still diff). The result stands alone (standard
library only, hardware.py optional beside it) and is committed, so a clone runs without a build
step; tests/test_build.py fails when a committed script differs from a fresh build. hardware.py,
the accelerator table, is built the same way from llmcalc/hardware.py (with the parser pieces of
llmcalc/cli.py it uses).

A package import inside a function (a module loaded only when that path runs: start-up time) is
dropped the same way; its names are defined earlier in the built script.

The build refuses, naming the file: a package import that is not `from .module import name, ...`
(an alias, `from . import module` or `*` would not survive concatenation), a block that would be
empty without its package imports, a name imported from a module that does not define it, a name
defined at top level in two modules that land in one script, an import cycle, and a
non-standard-library import.

  python3 tools/build_scripts.py           # rebuild every script
  python3 tools/build_scripts.py --check   # exit 1 naming each script that differs from a build
"""
import argparse
import ast
import os
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "llmcalc"
SCRIPTS = {  # built script: its tool module (path under the package, without .py)
    "calc_transformer_params.py": "tools/params",
    "calc_transformer_flops.py": "tools/flops",
    "calc_transformer_mem.py": "tools/mem",
    "calc_comm.py": "tools/comm",
    "calc_training_time.py": "tools/training_time",
    "calc_inference_latency.py": "tools/latency",
    "hardware.py": "hardware",  # the accelerator table, with its own command line
}


class BuildError(Exception):
    """A package layout the build cannot turn into a standalone script (the message says where)."""


def module_path(module, root=ROOT):
    return os.path.join(root, PACKAGE, *module.split("/")) + ".py"


def resolve_relative(module, level, target):
    """'serve/forward' + level 2 + 'model.formulas' -> 'model/formulas'."""
    parts = module.split("/")[:-1]
    if level - 1 > len(parts):
        raise BuildError(f"{PACKAGE}/{module}.py: a relative import reaches above the package")
    base = parts[:len(parts) - (level - 1)]
    return "/".join(base + (target.split(".") if target else []))


def top_level_names(node):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return []


def parse_module(module, root=ROOT):
    """One package module: its docstring, standard-library imports, package imports
    ({module: [names]}), the names it defines at top level, and its code without the docstring and
    the import lines."""
    path = module_path(module, root)
    where = os.path.relpath(path, root)
    source = open(path, encoding="utf-8").read()
    try:
        tree = ast.parse(source, where)
    except SyntaxError as exc:
        raise BuildError(f"{where}:{exc.lineno}: {exc.msg}") from None
    lines = source.splitlines(keepends=True)
    body = tree.body
    if not (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        raise BuildError(f"{where}: a module opens with its docstring")
    doc_node, drop = body[0], set()
    stdlib, deps, defined = [], {}, {}

    def package_import(node):
        """Record `from .module import a, b` as a dependency; refuse any other form."""
        if node.module is None or any(a.asname or a.name == "*" for a in node.names):
            raise BuildError(f"{where}:{node.lineno}: package imports are `from .module import "
                             "name, ...` (no alias, no module object, no *)")
        target = resolve_relative(module, node.level, node.module)
        deps.setdefault(target, []).extend(a.name for a in node.names)

    for node in body[1:]:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            drop.update(range(node.lineno, node.end_lineno + 1))
            if isinstance(node, ast.ImportFrom) and node.level:
                package_import(node)
            else:
                top = node.names[0].name if isinstance(node, ast.Import) else node.module
                if top.split(".")[0] not in sys.stdlib_module_names:
                    raise BuildError(f"{where}:{node.lineno}: {top} is not in the standard library")
                stdlib.append(ast.get_source_segment(source, node))
        for name in top_level_names(node):
            defined[name] = node.lineno
    for block in ast.walk(tree):  # lazy package imports (inside a function): dropped too
        if block is tree:
            continue
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(block, field, None)
            if not isinstance(stmts, list):
                continue
            lazy = [n for n in stmts if isinstance(n, ast.ImportFrom) and n.level]
            if lazy and len(lazy) == len(stmts):
                raise BuildError(f"{where}:{lazy[0].lineno}: a block that only imports from the "
                                 "package would be empty once built")
            for node in lazy:
                package_import(node)
                drop.update(range(node.lineno, node.end_lineno + 1))
    code = [line for i, line in enumerate(lines, 1) if i > doc_node.end_lineno and i not in drop]
    while code and not code[0].strip():
        code.pop(0)
    return {"module": module, "where": where, "doc": ast.get_docstring(tree),
            "doc_source": "".join(lines[doc_node.lineno - 1:doc_node.end_lineno]),
            "stdlib": stdlib, "deps": deps, "defined": defined, "code": "".join(code)}


def dependency_order(tool, root=ROOT):
    """The tool module and every package module it imports, each after all it imports from."""
    order, state, parsed = [], {}, {}

    def visit(module, chain):
        if state.get(module) == "done":
            return
        if state.get(module) == "open":
            cycle = chain[chain.index(module):] + [module]
            raise BuildError("import cycle: " + " -> ".join(f"{PACKAGE}/{m}.py" for m in cycle))
        if not os.path.exists(module_path(module, root)):
            raise BuildError(f"{PACKAGE}/{chain[-1]}.py imports {PACKAGE}/{module}.py, "
                             "which does not exist")
        state[module] = "open"
        parsed[module] = info = parse_module(module, root)
        for dep in info["deps"]:
            visit(dep, chain + [module])
        state[module] = "done"
        order.append(module)

    visit(tool, [])
    for info in parsed.values():
        for dep, names in info["deps"].items():
            missing = [n for n in names if n not in parsed[dep]["defined"]]
            if missing:
                raise BuildError(f"{info['where']}: imports {', '.join(missing)} from "
                                 f"{parsed[dep]['where']}, which does not define it")
    owner = {}
    for module in order:
        for name in parsed[module]["defined"]:
            if name in owner:
                raise BuildError(f"{name} is defined in both {parsed[owner[name]]['where']} and "
                                 f"{parsed[module]['where']}, which land in one script")
            owner[name] = module
    return [parsed[m] for m in order]


def comment(text):
    return "".join(f"# {line}".rstrip() + "\n" for line in text.splitlines())


def generated_header(tool, count):
    """The comment on line 2 of a built file, above its docstring (a comment keeps the docstring
    the module's docstring): that it was built, from what, and to edit those instead."""
    imports = f" and the {count} package modules it imports" if count else ""
    return comment(textwrap.fill(
        f"@generated by tools/build_scripts.py from {tool}{imports} (each under its "
        "`# ======== llmcalc/...` line below): edit those sources, not this file, then run "
        "`python3 tools/build_scripts.py`.", 98, break_on_hyphens=False))


def sources_note(sources):
    """The comment below the docstring: every source of the file, in build order."""
    return comment(textwrap.fill(f"Built from, in this order: {sources}.", 98,
                                 break_on_hyphens=False))


def build_script(script, root=ROOT):
    """The text of one standalone script."""
    modules = dependency_order(SCRIPTS[script], root)
    tool = modules[-1]
    sources = ", ".join(m["where"] for m in modules)
    stdlib = sorted(set(s for m in modules for s in m["stdlib"]),
                    key=lambda s: (s.startswith("from "), s))
    out = ["#!/usr/bin/env python3\n", generated_header(tool["where"], len(modules) - 1),
           tool["doc_source"], sources_note(sources),
           "\n", "".join(s + "\n" for s in stdlib)]
    for m in modules:
        out.append("\n\n")
        out.append(f"# {'=' * 8} {m['where']} {'=' * max(4, 88 - len(m['where']))}\n")
        if m is not tool:
            out.append(comment(m["doc"]))
            out.append("\n")
        out.append(m["code"])
    text = "".join(out)
    return text if text.endswith("\n") else text + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 naming each script that differs from a build")
    args = parser.parse_args(argv)
    stale = []
    for script in SCRIPTS:
        try:
            text = build_script(script)
        except BuildError as exc:
            print(f"build_scripts: {exc}", file=sys.stderr)
            return 2
        path = os.path.join(ROOT, script)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old == text:
            continue
        stale.append(script)
        if not args.check:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.chmod(path, 0o755)
            print(f"built {script}")
    if args.check and stale:
        print("stale (run python3 tools/build_scripts.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
