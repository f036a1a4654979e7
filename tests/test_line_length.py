"""The line-length ratchet (tools/line_lengths.py): no Python file under llmcalc/, tools/, tests/
or benchmarks/ holds more lines over 100 characters than tests/fixtures/line_lengths.json allows
it (a new file: none). After shortening lines, `python3 tools/line_lengths.py --record` lowers the
counts; nothing raises them. The built scripts at the root are not checked (they repeat the
package)."""
import os
import sys

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tools"))
import line_lengths  # noqa: E402


def test_no_file_has_more_long_lines_than_recorded():
    bad = line_lengths.over(line_lengths.counts(), line_lengths.recorded())
    assert not bad, {p: f"{n} lines over 100 characters, {limit} allowed (lines "
                     f"{[i for i, _ in line_lengths.long_lines(p)]}): shorten them"
                     for p, (n, limit) in bad.items()}


def _tree(tmp_path, files):
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return str(tmp_path)


def test_a_new_file_gets_no_long_line_and_a_built_script_is_not_checked(tmp_path):
    root = _tree(tmp_path, {"llmcalc/new.py": "x = 1\n" + "#" * 101 + "\n",
                            "tests/ok.py": "#" * 100 + "\n",  # exactly 100: allowed
                            "benchmarks/__pycache__/old.py": "#" * 300 + "\n",
                            "calc_built.py": "#" * 300 + "\n"})
    now = line_lengths.counts(root)
    assert now == {"llmcalc/new.py": 1}
    assert line_lengths.long_lines("llmcalc/new.py", root) == [(2, 101)]
    assert line_lengths.over(now, {}) == {"llmcalc/new.py": (1, 0)}
    assert line_lengths.over(now, {"llmcalc/new.py": 1}) == {}


def test_record_only_lowers(tmp_path):
    root = _tree(tmp_path, {"tools/a.py": ("#" * 120 + "\n") * 2, "tools/b.py": "#" * 120 + "\n"})
    now = line_lengths.counts(root)
    # a.py went from 5 to 2 (lowered), b.py is over its 0 (not raised), gone.py is gone (dropped)
    assert line_lengths.lowered(now, {"tools/a.py": 5, "tools/gone.py": 3}) == {"tools/a.py": 2}
    assert line_lengths.over(now, {"tools/a.py": 5}) == {"tools/b.py": (1, 0)}
