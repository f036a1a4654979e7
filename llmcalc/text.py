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
