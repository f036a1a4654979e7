"""The one error type below the tools.

`serve/`, `train/`, `model/` and `comm/` take keyword arguments and never see argparse; when an input
cannot be answered they raise CalcError with one line saying what was wrong and what would be right.
The tools turn it into `prog: error: <message>` on stderr and exit status 2 (cli.calc_errors).
"""


class CalcError(ValueError):
    """Bad input found below the tools: one line, what was wrong and what would be right."""
