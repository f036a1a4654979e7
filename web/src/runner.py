"""The page's Python side, run inside Pyodide: it calls a built script's main(argv) unchanged, as
its command line would, and describes the script's argparse parser so the page can draw a form.
It holds no formula and no flag list: both come from the script itself.

The working directory is laid out like the repository: the scripts at its top, the bundled configs
under tests/fixtures/configs/, a dropped config.json beside the scripts; so the command line the
page shows runs the same way from a clone.
"""
import argparse
import contextlib
import importlib
import io
import json
import os
import shlex
import sys


def _module(script):
    """The imported script; sys.argv[0] names it, as `python3 SCRIPT` would (argparse takes its
    prog, the name in every error line, from there)."""
    sys.argv = [script]
    return importlib.import_module(os.path.splitext(os.path.basename(script))[0])


def load(script):
    """Import a script (compiling it is most of a view's first answer); returns its name."""
    _module(script)
    return script


def _plain(value):
    """A parser default as JSON can carry it (a number, a string, a list, null), else its text."""
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError):
        return str(value)


def _help(formatter, action):
    if not action.help:
        return ""
    try:
        return formatter._expand_help(action)  # fills %(default)s as --help does
    except (KeyError, TypeError, ValueError):
        return action.help


def describe(script):
    """The script's parser as JSON: prog, the description's first paragraph, and every argument
    (option strings, dest, help, default, choices, whether it takes a value, its group)."""
    parser = _module(script).build_parser()
    formatter = parser._get_formatter()
    group_of = {id(a): g.title for g in parser._action_groups for a in g._group_actions}
    actions = []
    for a in parser._actions:
        if isinstance(a, argparse._HelpAction) or a.help == argparse.SUPPRESS:
            continue
        actions.append({
            "flags": list(a.option_strings), "dest": a.dest, "help": _help(formatter, a),
            "default": _plain(a.default), "metavar": _plain(a.metavar),
            "choices": [str(c) for c in a.choices] if a.choices is not None else None,
            "nargs": _plain(a.nargs), "takes_value": a.nargs != 0,
            "boolean_optional": isinstance(a, argparse.BooleanOptionalAction),
            "group": group_of.get(id(a)),
        })
    description = (parser.description or "").strip().split("\n\n")[0]
    return json.dumps({"prog": parser.prog, "description": description, "actions": actions})


def split_command(text):
    """The "all flags" field as a shell would split it. A whole command line may be pasted: a
    leading `python`/`python3` and a script name are taken off (the script is returned so the
    page can switch to its view). JSON {"script", "argv"} or {"error"}."""
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        return json.dumps({"error": f"all flags: {exc}"})
    if argv and os.path.basename(argv[0]).startswith("python"):
        argv = argv[1:]
    script = None
    if argv and argv[0].endswith(".py"):
        script, argv = os.path.basename(argv[0]), argv[1:]
    return json.dumps({"script": script, "argv": argv})


def run(script, argv_json):
    """main(argv) with stdout and stderr captured, as JSON: the exit status (0, or SystemExit's:
    2 for a usage error), stdout and stderr as printed, the returned dict (as JSON text) and the
    equivalent command line. An exception a script lets through (a bug) is one line, not a
    traceback."""
    argv = json.loads(argv_json)
    out, err = io.StringIO(), io.StringIO()
    code, result = 0, None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result = _module(script).main(list(argv))
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:  # sys.exit("message")
            code = 1
            err.write(f"{exc.code}\n")
    except Exception as exc:  # noqa: BLE001  a script's bug: shown in one line
        code = 1
        err.write(f"{script}: internal error: {type(exc).__name__}: {exc}\n")
    try:
        result_json = json.dumps(result, indent=2, default=str)
    except (TypeError, ValueError) as exc:
        result_json = json.dumps(f"(the returned value is not JSON: {exc})")
    command = " ".join(["python3", script] + ([shlex.join(argv)] if argv else []))
    return json.dumps({"code": code, "stdout": out.getvalue(), "stderr": err.getvalue(),
                       "result": result_json, "command": command})
