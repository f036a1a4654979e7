"""Shared test helpers: the repository root on sys.path, and a runner for a script's main()."""
import contextlib
import io
import json
import os
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


def config_path(name):
    return os.path.join(FIXTURES, "configs", f"{name}.json")


def load_json(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding="utf-8") as fh:
        return json.load(fh)


def _ci():
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


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
