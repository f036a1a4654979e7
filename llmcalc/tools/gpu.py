"""--gpu for the tools that read an accelerator: the record of a name, or the default accelerator,
through the one resolver (accelerator.resolve_accelerator), with the parser's one-line error.
Kept out of cli.py so that a tool that reads no GPU (calc_transformer_params.py) does not carry
the accelerator table's code."""

from ..accelerator import resolve_accelerator
from ..cli import calc_errors


def accelerator_record(name, parser, *, without):
    """The record for --gpu NAME (None: the default accelerator). One-line exit 2 when the table
    is missing (`without` says which explicit flags to pass instead) or the name is unknown (the
    table's message)."""
    with calc_errors(parser):
        return resolve_accelerator(name, missing_table=f"--gpu needs hardware.py beside this "
                                   f"script; {without}")


def distinct_gpus(names, parser, *, without):
    """Refuse (one line, exit 2) a --gpu list that names one accelerator twice, under any of its
    spellings (h100,H100,h100-sxm): a search or plan would cost the same GPU as several kinds."""
    seen = {}
    for n in names:
        if n is None:
            continue
        key = accelerator_record(n, parser, without=without)["name"]
        if key in seen:
            parser.error(f"--gpu lists {key} twice ({seen[key]!r} and {n!r}): name each GPU once")
        seen[key] = n
