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
