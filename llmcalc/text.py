"""How a number is written back to the user: the one spelling every message and printed command
uses for a bound or a value (flag ranges in --help, one-line errors, the next-step commands), so
that what a tool prints can be typed again as it stands. No argparse here: serve/ writes its
messages with it too."""


def number_text(x):
    """A number as a user types it: 4096, 0.001, 1e18 (no '+', no zero-padded exponent)."""
    if isinstance(x, int) and abs(x) < 10 ** 6:
        return str(x)
    text = f"{x:g}" if float(f"{x:g}") == x else repr(float(x))  # 1.0000001 stays itself
    mant, _, exp = text.partition("e")
    return f"{mant}e{int(exp)}" if exp else mant


class LongInteger(str):
    """A JSON integer too long for int() (Python refuses over 4,300 digits): kept as text, so that
    a field which reads it is refused by name ('got 99999999999... (5,000 digits)'), not by the
    JSON parser with neither file nor field."""

    def __repr__(self):
        return str(self)


def json_integer(text):
    """json's parse_int: the int, or a LongInteger past 1,000 digits (no count is that long)."""
    if len(text) <= 1000:
        return int(text)
    return LongInteger(f"{text[:12]}... ({len(text.lstrip('-')):,} digits)")
