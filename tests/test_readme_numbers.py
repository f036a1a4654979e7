"""Every number the README and the tools' pages (grid.DOC_FILES) quote from a command's output is
what the command prints (the Qwen3.5 latency example once said 3.45 s / 5.85 ms and printed
3.672 s / 6.91 ms).

A quote is a comment line under a README example command (`# ...`, up to the next command or blank
line). Each number in it with a decimal point, a thousands separator or three digits or more
must equal some number of the command's output at the quote's precision (15.0 s matches 14.97 s);
a figure led by `~` is a wall-clock reading and not compared."""
import re

import pytest

import grid
from conftest import ROOT

NUMBER = re.compile(r"(?<![\w.~$])\$?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d{3,})(?![\w.%]|\.\d)")
OUT_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?")


def quoted_examples():
    """(script, argv, quote text) for each README example command with quote lines under it."""
    text = grid.doc_text()  # README.md and the tools' pages under docs/
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        cmd, quote = None, []
        for line in block.replace("\\\n", " ").splitlines() + [""]:
            word = line.split()[1] if line.startswith("python3 ") and len(line.split()) > 1 else None
            if word in grid.SCRIPTS or not line.strip():
                if cmd and quote:
                    out.append((*grid._split(cmd, "python3"), " ".join(quote)))
                cmd, quote = (line.split(" # ")[0].strip() if word else None), []
            elif line.startswith("#") and cmd:
                quote.append(line[1:])
    return out


def _matches(quoted, printed):
    value = float(quoted.replace(",", ""))
    decimals = len(quoted.split(".")[1]) if "." in quoted else 0
    for token in printed:
        try:
            got = float(token.replace(",", ""))
        except ValueError:
            continue
        if round(got, decimals) == round(value, decimals):
            return True
    return False


EXAMPLES = quoted_examples()


def test_the_readme_quotes_outputs():
    assert len(EXAMPLES) >= 8


@pytest.mark.parametrize("script,argv,quote", EXAMPLES, ids=[f"{s} {' '.join(a)[:60]}" for s, a, _ in EXAMPLES])
def test_every_quoted_number_is_what_the_command_prints(script, argv, quote):
    got = grid.run_command(script, argv, ROOT)
    assert got["rc"] == 0, got["stderr"]
    printed = OUT_NUMBER.findall(got["stdout"] + got["stderr"])
    missing = [n for n in NUMBER.findall(quote) if not _matches(n.lstrip("$"), printed)]
    assert not missing, f"quoted but not printed: {missing}"
