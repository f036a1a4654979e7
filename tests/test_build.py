"""The package is the one source; the six calc_*.py scripts are built from it (tools/build_scripts.py).

Guards: every committed script equals a fresh build; the package's imports form a tree (no cycle,
the build's order exists); each module is readable in a sitting (at most 1,000 lines); no run of
six code lines stands in two source modules (a formula lives once); and the build refuses what
would not survive concatenation (a name defined in two modules of one script, an aliased import).
"""
import glob
import os
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tools"))
import build_scripts  # noqa: E402

PACKAGE_DIR = os.path.join(ROOT, build_scripts.PACKAGE)
MODULES = sorted(os.path.relpath(p, PACKAGE_DIR)[:-3].replace(os.sep, "/")
                 for p in glob.glob(os.path.join(PACKAGE_DIR, "**", "*.py"), recursive=True))
MODULES = [m for m in MODULES if m not in ("__init__", "__main__", "commands")]  # installed commands' plumbing


@pytest.mark.parametrize("script", sorted(build_scripts.SCRIPTS))
def test_built_script_is_current(script):
    built = build_scripts.build_script(script)
    with open(os.path.join(ROOT, script), encoding="utf-8") as fh:
        assert fh.read() == built, f"{script} is stale: run python3 tools/build_scripts.py"


def test_check_mode_agrees():
    assert build_scripts.main(["--check"]) == 0


def test_every_package_module_is_in_some_script_or_is_a_package_marker():
    used = {m["module"] for s in build_scripts.SCRIPTS
            for m in build_scripts.dependency_order(build_scripts.SCRIPTS[s])}
    left = [m for m in MODULES if m not in used and not m.endswith("__init__")]
    assert not left, f"package modules no script builds in: {left}"


def test_imports_form_a_tree():
    # Each module's package imports, over the whole package (not only what the tools reach):
    # a depth-first walk finds no cycle.
    deps = {m: list(build_scripts.parse_module(m)["deps"]) for m in MODULES}
    state = {}

    def visit(m, chain):
        assert state.get(m) != "open", "import cycle: " + " -> ".join(chain + [m])
        if state.get(m) == "done":
            return
        state[m] = "open"
        for d in deps[m]:
            visit(d, chain + [m])
        state[m] = "done"

    for m in MODULES:
        visit(m, [])


@pytest.mark.parametrize("module", MODULES)
def test_module_is_readable_in_one_sitting(module):
    with open(build_scripts.module_path(module), encoding="utf-8") as fh:
        n = sum(1 for _ in fh)
    assert n <= 1000, f"{module}.py has {n} lines; split it by concern"


def _code_lines(path):
    """(stripped line, line number) of each line that is code: not blank, not only a comment, not
    an import, not a lone bracket."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            t = line.strip()
            if t and not t.startswith(("#", "import ", "from ")) and t not in (")", "]", "}", "),", "],", "},"):
                out.append((t, i))
    return out


def test_no_six_code_lines_stand_in_two_source_modules():
    paths = [build_scripts.module_path(m) for m in MODULES] + sorted(
        glob.glob(os.path.join(ROOT, "tools", "*.py")))
    seen, repeats = {}, []
    for path in paths:
        lines = _code_lines(path)
        for j in range(len(lines) - 5):
            key = tuple(t for t, _ in lines[j:j + 6])
            where = (os.path.relpath(path, ROOT), lines[j][1])
            if key in seen and seen[key][0] != where[0]:
                repeats.append(f"{where[0]}:{where[1]} repeats {seen[key][0]}:{seen[key][1]}")
            seen.setdefault(key, where)
    assert not repeats, repeats[:10]


def _write(root, rel, text):
    path = os.path.join(root, build_scripts.PACKAGE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def test_build_refuses_a_name_defined_in_two_modules_of_one_script(tmp_path):
    _write(tmp_path, "a.py", '"""a"""\n\n\ndef f():\n    return 1\n')
    _write(tmp_path, "tools/t.py", '"""t"""\nfrom ..a import f\n\n\ndef f2():\n    return f()\n\n\n'
                                   'def f():\n    return 2\n')
    with pytest.raises(build_scripts.BuildError, match="f is defined in both"):
        build_scripts.dependency_order("tools/t", root=str(tmp_path))


@pytest.mark.parametrize("line, match", [
    ("from ..a import f as g", "no alias"),
    ("from .. import a", "no alias, no module object"),
    ("from ..a import nothing_there", "does not define"),
    ("import numpy", "not in the standard library"),
    ("def broken(:", "tools/t.py:2"),  # a syntax error: one line naming the place, no traceback
])
def test_build_refuses_imports_that_would_not_survive(tmp_path, line, match):
    _write(tmp_path, "a.py", '"""a"""\n\n\ndef f():\n    return 1\n')
    _write(tmp_path, "tools/t.py", f'"""t"""\n{line}\n')
    with pytest.raises(build_scripts.BuildError, match=match):
        build_scripts.dependency_order("tools/t", root=str(tmp_path))


def test_build_refuses_a_cycle(tmp_path):
    _write(tmp_path, "a.py", '"""a"""\nfrom .b import g\n\n\ndef f():\n    return g()\n')
    _write(tmp_path, "b.py", '"""b"""\nfrom .a import f\n\n\ndef g():\n    return f()\n')
    _write(tmp_path, "tools/t.py", '"""t"""\nfrom ..a import f\n')
    with pytest.raises(build_scripts.BuildError, match="import cycle"):
        build_scripts.dependency_order("tools/t", root=str(tmp_path))


def test_build_drops_a_lazy_package_import_and_refuses_an_empty_block(tmp_path):
    # A package import inside a function loads that module only when the function runs; built,
    # the line goes and the name is the one defined earlier in the same script.
    _write(tmp_path, "a.py", '"""a"""\n\n\ndef f():\n    return 1\n')
    _write(tmp_path, "tools/t.py", '"""t"""\n\n\ndef g():\n    from ..a import f  # lazy\n    return f() + 1\n')
    modules = build_scripts.dependency_order("tools/t", root=str(tmp_path))
    assert [m["module"] for m in modules] == ["a", "tools/t"]
    code = "".join(m["code"] for m in modules)
    assert "import" not in code
    namespace = {}
    exec(compile(code, "built", "exec"), namespace)  # noqa: S102 -- the test's own two lines
    assert namespace["g"]() == 2
    _write(tmp_path, "tools/t.py", '"""t"""\n\n\ndef g():\n    if True:\n        from ..a import f\n    return f()\n')
    with pytest.raises(build_scripts.BuildError, match="would be empty once built"):
        build_scripts.dependency_order("tools/t", root=str(tmp_path))
