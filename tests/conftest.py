"""Shared test helpers: the repository root on sys.path, a runner for a script's main(), and the
concern markers: each test file's concerns (TEST_CONCERNS), applied as pytest markers (`-m serve`
runs one concern), and the run ordered so that the tests of the concerns touched in the working
tree (git: changes against HEAD and new files) run first."""
import contextlib
import io
import importlib
import json
import math
import os
import re
import subprocess
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


def json_main(main, argv):
    """Call a script's main(argv + ["--json"]); return the JSON it printed, parsed."""
    return json.loads(run_main(main, list(argv) + ["--json"])[1])


def one_line_refusal(main, argv):
    """Call main(argv) expecting a refusal: exit 2 and exactly one stderr line, no traceback;
    return that line."""
    code, err = exit_code_and_stderr(main, argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in lines[0], err
    return lines[0]


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
        if exc.code == 3 and "--brief" in argv:  # --brief's "does not fit" (cli.DOES_NOT_FIT)
            assert out.getvalue().count("\n") == 1 and ": does not fit in " in out.getvalue()
            return None
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
    # The one exception: a test marked needs_torch (the fine-tuning kit's CPU smoke run) needs
    # torch, transformers and peft, which CI by design does not install (the package is standard
    # library); it skips there and runs wherever they are installed (pip install .[kit]).
    if item.get_closest_marker("needs_torch"):
        return
    if _ci() and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI, where every test must run: {reason}"


# The concern of each test file: its markers (registered in pyproject.toml's
# [tool.pytest.ini_options]). A test file not listed here fails test_concerns.py.
TEST_CONCERNS = {
    "test_all_types.py": ("model",),
    "test_blackwell_kernels.py": ("train", "hardware"),
    "test_build.py": ("build",),
    "test_calc_comm.py": ("comm",),
    "test_calibration_registry.py": ("train", "serve", "comm"),
    "test_calc_inference_latency.py": ("serve",),
    "test_calc_training_time.py": ("train",),
    "test_calc_transformer_flops.py": ("model", "train"),
    "test_calc_transformer_mem.py": ("train", "serve"),
    "test_calc_transformer_params.py": ("model",),
    "test_capacity_plan.py": ("serve",),
    "test_concerns.py": ("build",),
    "test_context_parallel.py": ("train",),
    "test_cookbook_readme.py": ("cli", "docs"),
    "test_eager_memory.py": ("train",),
    "test_finetune.py": ("train",),
    "test_finetune_published.py": ("train",),
    "test_finetune_kit.py": ("train", "build"),
    "test_fixtures.py": ("model",),
    "test_flags_stay_parsed.py": ("train",),
    "test_grid.py": ("grid",),
    "test_h100_measurements.py": ("train", "serve"),
    "test_h200_measurements.py": ("train", "serve"),
    "test_gpu_record.py": ("hardware", "train", "serve"),
    "test_hardware.py": ("hardware",),
    "test_hf_cache_fixture.py": ("serve",),
    "test_hostile_configs.py": ("model",),
    "test_hostile_flags.py": ("cli",),
    "test_hostile_set3.py": ("cli", "serve"),
    "test_install.py": ("build",),
    "test_kv_cache_layers.py": ("model", "serve"),
    "test_layer_families.py": ("model",),
    "test_layer_spec.py": ("model",),
    "test_line_length.py": ("style",),
    "test_model_path_errors.py": ("model", "cli"),
    "test_model_spec.py": ("model",),
    "test_moe_kernel_measurements.py": ("serve",),
    "test_newcomer.py": ("cli", "docs"),
    "test_no_tracebacks.py": ("cli",),
    "test_one_answer.py": ("cli",),
    "test_readme_examples.py": ("docs",),
    "test_readme_numbers.py": ("docs",),
    "test_recompute_modes.py": ("train",),
    "test_roofline_corner.py": ("serve",),
    "test_serving_agreement.py": ("serve",),
    "test_serving_fidelity.py": ("serve",),
    "test_serving_mix.py": ("serve",),
    "test_speculative.py": ("serve",),
    "test_traces.py": ("serve",),
    "test_latency_flags.py": ("serve",),
    "test_standalone.py": ("build",),
    "test_structure.py": ("style",),
    "test_training_today.py": ("train",),
    "test_validate_serving.py": ("serve",),
    "test_web.py": ("web",),
}

# The concerns a changed file touches: the longest matching path prefix wins. A changed test file
# touches its own concerns (TEST_CONCERNS); a path no row matches touches none. Any change in the
# package touches the grid too: it is what keeps every output byte-identical.
SOURCE_CONCERNS = (
    ("llmcalc/model/", ("model",)),
    ("llmcalc/train/", ("train",)),
    ("llmcalc/serve/", ("serve",)),
    ("llmcalc/comm/", ("comm",)),
    ("llmcalc/hardware.py", ("hardware",)),
    ("llmcalc/accelerator.py", ("hardware",)),
    ("llmcalc/tools/params.py", ("model",)),
    ("llmcalc/tools/flops.py", ("model", "train")),
    ("llmcalc/tools/mem.py", ("train", "serve")),
    ("llmcalc/tools/training_", ("train",)),
    ("llmcalc/tools/finetune_flags.py", ("train",)),
    ("llmcalc/kit/", ("train", "build")),
    ("llmcalc/tools/latency", ("serve",)),
    ("llmcalc/tools/comm.py", ("comm",)),
    ("llmcalc/tools/gpu.py", ("hardware",)),
    ("llmcalc/precision.py", ("train", "serve")),
    ("llmcalc/cli.py", ("cli",)),
    ("llmcalc/errors.py", ("cli",)),
    ("llmcalc/text.py", ("cli",)),
    ("llmcalc/records.py", ("model", "train", "serve", "comm", "hardware")),
    ("llmcalc/commands.py", ("build",)),
    ("llmcalc/__", ("build",)),
    ("tools/build_scripts.py", ("build",)),
    ("pyproject.toml", ("build",)),
    (".gitattributes", ("build",)),
    ("calc_", ("build",)),
    ("hardware.py", ("build", "hardware")),
    ("tests/grid.py", ("grid",)),
    ("tests/fixtures/grid_outputs.json", ("grid",)),
    ("tools/record_grid.py", ("grid",)),
    ("tests/fixtures/line_lengths.json", ("style",)),
    ("tools/line_lengths.py", ("style",)),
    ("tools/validate_serving.py", ("serve",)),
    ("README.md", ("docs",)),
    ("web/", ("web",)),
    ("docs/web.md", ("web", "docs")),
    ("docs/finetuning.md", ("train", "docs")),
)


def concerns_of_paths(paths):
    """The concerns the changed files (paths relative to the repository root) touch."""
    touched = set()
    for path in paths:
        name = os.path.basename(path)
        if path.startswith("tests/") and name in TEST_CONCERNS:
            touched.update(TEST_CONCERNS[name])
            continue
        rows = [r for r in SOURCE_CONCERNS if path.startswith(r[0])]
        if rows:
            touched.update(max(rows, key=lambda r: len(r[0]))[1])
        if path.startswith("llmcalc/"):
            touched.add("grid")
    return touched


def changed_paths(root=ROOT):
    """Files changed against HEAD (staged or not) and new files git does not ignore; None when
    git or a checkout is not there (then nothing is reordered)."""
    try:
        runs = [subprocess.run(["git", *cmd], cwd=root, capture_output=True, text=True, timeout=20)
                for cmd in (("diff", "--name-only", "HEAD"),
                            ("ls-files", "--others", "--exclude-standard"))]
    except (OSError, subprocess.SubprocessError):
        return None
    if any(r.returncode for r in runs):
        return None
    return [line for r in runs for line in r.stdout.splitlines() if line]


def order_by_concerns(items, touched):
    """The tests whose file's concerns were touched first, each group in its collected order."""
    def rank(item):
        return 0 if touched.intersection(TEST_CONCERNS.get(item.path.name, ())) else 1
    items[:] = sorted(items, key=rank)  # stable: the order within each group stays pytest's


_TOUCHED = pytest.StashKey()


def touched_concerns(config):
    """The concerns of the working tree's changes, found once per run ([] without git)."""
    if _TOUCHED not in config.stash:
        paths = changed_paths()
        config.stash[_TOUCHED] = sorted(concerns_of_paths(paths)) if paths else []
    return config.stash[_TOUCHED]


def pytest_report_header(config):
    touched = touched_concerns(config)
    if touched:
        return f"concerns touched in the working tree, their tests first: {', '.join(touched)}"
    return None


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        for concern in TEST_CONCERNS.get(item.path.name, ()):
            item.add_marker(concern)
    touched = touched_concerns(config)
    if touched:
        order_by_concerns(items, set(touched))
