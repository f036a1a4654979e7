"""Shared test helpers: the repository root on sys.path, and a runner for a script's main()."""
import contextlib
import io
import importlib
import json
import math
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def run_main(main, argv):
    """Call a script's main(argv); return (result, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        res = main(list(argv))
    return res, out.getvalue(), err.getvalue()


def exit_code_and_stderr(main, argv):
    """Call main(argv) expecting SystemExit; return (code, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        with pytest.raises(SystemExit) as exc:
            main(list(argv))
    return exc.value.code, err.getvalue()


# Result keys whose value may legitimately be negative (a memory shortfall).
SIGNED = ("headroom", "margin", "spare", "delta", "error", "vs_", "ratio_minus")
# A non-finite number as Python formats it (inf, nan, INF); json output is checked by its parser.
_NONFINITE_WORD = re.compile(r"(?<![\w.])-?(inf|nan)(?![\w])", re.IGNORECASE)


def _walk(obj, path=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _walk(v, f"{path}[{i}]")
    else:
        yield path, obj


def _no_constant(name):
    raise AssertionError(f"--json output holds {name}")


def check_run(script, argv):
    """Run main(argv): exit 2 with exactly one stderr line (the error; no note before it), or a
    result whose numbers are all finite and (sizes, times, counts) non-negative, with --json
    output that is strict JSON (no NaN/Infinity) and human output that prints no inf or nan."""
    mod = importlib.import_module(script)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            res = mod.main(list(argv))
    except SystemExit as exc:
        assert exc.code == 2, (script, argv, exc.code, err.getvalue()[-400:])
        lines = err.getvalue().strip().splitlines()
        assert len(lines) == 1 and ": error: " in lines[0], (script, argv, err.getvalue()[-600:])
        return None
    for path, val in _walk(res):
        if isinstance(val, bool) or not isinstance(val, (int, float)):
            continue
        assert math.isfinite(val), (script, argv, path, val)
        if not any(tag in path for tag in SIGNED):
            assert val >= 0, (script, argv, path, val)
    if "--json" in argv:
        json.loads(out.getvalue(), parse_constant=_no_constant)
    else:
        bad = _NONFINITE_WORD.search(out.getvalue())
        assert bad is None, (script, argv, out.getvalue()[max(0, bad.start() - 200):bad.end() + 50])
    return res


def config_path(name):
    return os.path.join(FIXTURES, "configs", f"{name}.json")


def load_json(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding="utf-8") as fh:
        return json.load(fh)


def _ci():
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _hypothesis_profiles():
    """Under CI the property tests draw the same examples every run (derandomize), so a red CI
    names a reproducible case and a green one does not hide a lucky draw; on a developer's machine
    they keep exploring new examples. Hypothesis is a test dependency; without it nothing to set."""
    try:
        from hypothesis import settings
    except ImportError:
        return
    settings.register_profile("ci", derandomize=True, database=None)
    if _ci():
        settings.load_profile("ci")


_hypothesis_profiles()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI (.ci/run: a fresh venv, then the README's test command), a skipped test is a
    failure: every test can run there, so a skip means the install step missed a dependency
    (pytest.importorskip) and the suite would stay green without testing that path."""
    outcome = yield
    report = outcome.get_result()
    if _ci() and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI, where every test must run: {reason}"
