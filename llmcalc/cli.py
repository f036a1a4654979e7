"""The parser pieces every tool shares: the parser whose usage error is one line and exit 2, the
bounded number types, the model flags, and the flag-range table each tool checks its flags against
(with the --help line that lists it)."""

import argparse
import os
import sys
import time

from .errors import CalcError
from .text import number_text


def terminal_columns():
    """The width help is wrapped to, as shutil.get_terminal_size() finds it (COLUMNS, else the
    terminal's, else 80) without importing shutil, which with bz2 and lzma is ~2 ms of start-up."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns


class DescriptionFormatter(argparse.RawDescriptionHelpFormatter):
    """The description as written (its line breaks kept), help wrapped to terminal_columns().
    argparse builds a formatter for every add_argument (to check the metavar), so the width it
    would look up through shutil is read here instead."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None, **kwargs):
        if width is None:
            width = terminal_columns() - 2  # argparse's own margin
        super().__init__(prog, indent_increment, max_help_position, width, **kwargs)


def one_line(message):
    """A message kept to one line: a newline or other control character (in a path the user
    gave) written as its escape, \\n, instead of splitting the line; a run of more than 40 digits
    (a 5,000-digit number echoed back) shortened to its first 12 and its length."""
    import re  # argparse has imported it already
    message = re.sub(r"\d{41,}", lambda m: f"{m.group()[:12]}... ({len(m.group()):,} digits)",
                     message)
    if message.isprintable():
        return message
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (no usage dump) and exit status 2, and an
    epilog may be a function, called only when --help is printed (a run that answers never builds
    it: start-up time). Help keeps the description's line breaks (DescriptionFormatter)."""

    def __init__(self, *args, formatter_class=DescriptionFormatter, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, **kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")

    def format_help(self):
        if callable(self.epilog):
            self.epilog = self.epilog()
        return super().format_help()


class calc_errors:
    """`with calc_errors(parser):` around a tool's work: a CalcError raised below the tools (one line,
    errors.py) becomes the parser's one-line error and exit status 2, as a flag's own check does."""

    def __init__(self, parser):
        self.parser = parser

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is not None and issubclass(kind, CalcError):
            self.parser.error(str(exc))
        return False


def finite_float(text):
    """argparse type for a real number: rejects nan and inf with a one-line usage error."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if value != value or abs(value) == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


# Counts take SI suffixes (powers of 1000: 4k, 300B or 300G, 2T) and binary ones (powers of 1024:
# 8Ki = 8192, 1Mi); sizes in bytes (calc_comm.py --size) keep nccl-tests' binary K/M/G instead.
COUNT_UNITS = {"k": 10 ** 3, "m": 10 ** 6, "b": 10 ** 9, "g": 10 ** 9, "t": 10 ** 12, "p": 10 ** 15,
               "ki": 2 ** 10, "mi": 2 ** 20, "gi": 2 ** 30, "ti": 2 ** 40}


def parse_count(text):
    """A count as a user types it: 4096, 4_096, 1e12, 300B, 2T, 1.5k, 8Ki (COUNT_UNITS) -> a
    finite float or int. ArgumentTypeError (one line) for anything else."""
    t = str(text).strip().replace("_", "")
    i = len(t)
    while i > 0 and t[i - 1].isalpha():
        i -= 1
    num, unit = t[:i], t[i:].lower()
    if unit and unit not in COUNT_UNITS or not num:
        raise argparse.ArgumentTypeError(f"invalid count: {text!r} (use 4096, 1e12, or a suffix: "
                                         "4k, 300B, 2T = powers of 1000; 8Ki = 8192)")
    if not unit and num.lstrip("+-").isdigit():
        return int(num)
    try:
        value = float(num) * COUNT_UNITS.get(unit, 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid count: {text!r}") from None
    if value != value or abs(value) == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def count_float(text):
    """argparse type for a count that may be fractional or large (--tokens 2T): parse_count, as a
    finite float (a 400-digit count is refused, not overflowed)."""
    try:
        return float(parse_count(text))
    except OverflowError:
        raise argparse.ArgumentTypeError(f"{str(text)[:24]}... is too large") from None


def bounded_int(text):
    """argparse type for an integer flag: at most 18 digits, so no 400-digit size reaches a formula;
    suffixes as parse_count (-s 8Ki, --num-gpus 1k); the value must be whole."""
    text = str(text).strip()
    if len(text.lstrip("+-")) > 18:
        raise argparse.ArgumentTypeError(f"{text[:24]}... is too large (at most 18 digits)")
    try:
        value = parse_count(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"invalid integer: {text!r}") from None
    if isinstance(value, int):
        return value
    if abs(value) >= 1e18:
        raise argparse.ArgumentTypeError(f"{text[:24]} is too large (at most 18 digits)")
    if value != int(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    return int(value)


def add_model_args(parser):
    """Model-shape flags shared by every script (cookbook spellings kept; defaults are None so a
    flag the user gave is visible, and MODEL_DEFAULTS fill in what neither flag nor config set).
    Flags build a uniform stack; given with a config they override every layer they apply to."""
    g = parser.add_argument_group("model (flags override values read from a config)")
    bo, n = argparse.BooleanOptionalAction, bounded_int
    g.add_argument("--hf_model_name_or_path", "--hf-model-name-or-path", dest="hf_model_name_or_path",
                   default=None, help="local folder with config.json, a config.json path, or a hub "
                   "id (hub ids need `transformers`; never trust_remote_code)")
    g.add_argument("--vocab-size", "-v", type=n, default=None, help="V (default 51200)")
    g.add_argument("--hidden-size", "-hs", type=n, default=None, help="h (default 6144)")
    g.add_argument("--num-layers", "-l", type=n, default=None,
                   help="L (default 44); with a config, the first L layers of its pattern")
    g.add_argument("--num-attention-heads", "-a", type=n, default=None,
                   help="a (default 64, the cookbook's, where heads of at least 64 result; "
                   "else h/128 or h/64)")
    g.add_argument("--num-kv-heads", type=n, default=None, help="kv heads (GQA/MQA; default a)")
    g.add_argument("--kv-size-ratio", "-kv", type=finite_float, default=None,
                   help="kv heads / query heads (cookbook; 1.0 = MHA)")
    g.add_argument("--head-dim", type=n, default=None, help="d (default h/a)")
    g.add_argument("--ffn-expansion-factor", "-ff", type=finite_float, default=None,
                   help="f = ff * h when --ffn-hidden-size is not given (default 4)")
    g.add_argument("--ffn-hidden-size", type=n, default=None, help="f, the dense MLP width")
    g.add_argument("--num-mlp-linears", "-nl", type=n, default=None,
                   help="matrices per MLP: 2 (GELU) or 3 (gated, e.g. SwiGLU) (default 2)")
    g.add_argument("--swiglu", action="store_true", default=None,
                   help="gated MLP with 3 matrices (same as -nl 3)")
    g.add_argument("--tied-embeddings", action=bo, default=None,
                   help="output head shares the token embedding (default: not tied)")
    g.add_argument("--norm", choices=("layernorm", "rmsnorm"), default=None,
                   help="norm type: layernorm has weight+bias, rmsnorm weight only (default layernorm)")
    g.add_argument("--norms-per-layer", type=n, default=None,
                   help="norms in each block (default 2; 1 with --parallel-attention; Gemma 2: 4)")
    g.add_argument("--parallel-attention", action=bo, default=None,
                   help="attention and MLP read one shared norm (GPT-J/Falcon-7B): 1 norm per layer")
    g.add_argument("--qk-norm", choices=("none", "head", "full"), default=None,
                   help="q/k norms: per head dim (Qwen3) or over all heads (OLMo 2) (default none)")
    g.add_argument("--bias", action=bo, default=None,
                   help="biases in all linear layers (default on, GPT-NeoX style); the three "
                   "switches below override it")
    g.add_argument("--qkv-bias", action=bo, default=None, help="bias on q, k, v projections")
    g.add_argument("--attn-out-bias", action=bo, default=None, help="bias on the attention output")
    g.add_argument("--mlp-bias", action=bo, default=None, help="biases in the MLP/experts")
    g.add_argument("--position-embedding", choices=("rope", "learned", "alibi", "none"), default=None,
                   help="learned adds a (max positions x h) table; rope/alibi/none add no weights "
                   "(default rope)")
    g.add_argument("--max-position-embeddings", type=n, default=None,
                   help="rows of a learned position table (default: the sequence length)")
    g.add_argument("--embedding-norm", action=bo, default=None,
                   help="a norm right after the token embedding (BLOOM)")
    g.add_argument("--final-norm", action=bo, default=None, help="final norm before the head (default on)")
    g.add_argument("--sliding-window", type=n, default=None,
                   help="window of the sliding-window layers (default from the config; with no "
                   "config, every layer slides; 0 turns sliding off)")
    g.add_argument("--moe", action="store_true", default=None, help="mixture of experts MLPs")
    g.add_argument("--num-experts", "-e", type=n, default=None, help="E routed experts (default 8)")
    g.add_argument("--expert-interval", "-ei", type=n, default=None,
                   help="every ei-th layer is MoE (default 1)")
    g.add_argument("--topk", "-t", type=n, default=None, help="k experts per token (default 1)")
    g.add_argument("--moe-ffn-hidden-size", type=n, default=None, help="f_e (default f)")
    g.add_argument("--num-shared-experts", type=n, default=None, help="shared experts (default 0)")
    g.add_argument("--shared-expert-ffn-hidden-size", type=n, default=None,
                   help="total width of the shared experts (default num_shared * f_e)")
    g.add_argument("--shared-expert-gate", action=bo, default=None,
                   help="sigmoid gate (h -> 1) on the shared expert (Qwen-MoE)")
    g.add_argument("--num-dense-layers", type=n, default=None,
                   help="leading dense layers before the MoE layers (DeepSeek first_k_dense_replace)")
    g.add_argument("--router-bias", action=bo, default=None,
                   help="count a per-expert router bias (DeepSeek-V3's checkpoint stores one; HF "
                   "keeps it as a buffer, so it is off when reading a config)")
    g.add_argument("--q-lora-rank", type=n, default=None, help="MLA query rank (none: full q_proj)")
    g.add_argument("--kv-lora-rank", type=n, default=None, help="MLA kv latent rank (turns MLA on)")
    g.add_argument("--qk-nope-head-dim", type=n, default=None, help="MLA non-rotary q/k head dim")
    g.add_argument("--qk-rope-head-dim", type=n, default=None, help="MLA rotary q/k head dim")
    g.add_argument("--v-head-dim", type=n, default=None, help="MLA value head dim")
    parser.model_flags = g._group_actions  # for model_flag_words
    return g


def shell_word(value):
    """One word of a shell command: as it is when plain, else single-quoted."""
    text = str(value)
    if text and all(c.isalnum() or c in "-_./:=+" for c in text):
        return text
    return "'" + text.replace("'", "'\\''") + "'"


def model_flag_words(parser, args):
    """The model flags the user gave (or a config path), as words of a command another script of
    this family runs with the same meaning (one meaning per flag)."""
    words = []
    for a in parser.model_flags:
        v = getattr(args, a.dest)
        if v is None:
            continue
        name = next((o for o in a.option_strings if o.startswith("--")), a.option_strings[0])
        if isinstance(v, bool):
            if v or any(o.startswith("--no-") for o in a.option_strings):
                words.append(name if v else "--no-" + name[2:])
        else:
            words.append(f"{name} {shell_word(v)}")
    return words


# How this run spells another tool of the family in the commands it prints: built script name ->
# command. Empty for the built scripts (`python3 calc_training_time.py`); commands.run fills it for
# the installed commands (`llmcalc-train-time`) and `python3 -m llmcalc train-time`.
COMMAND_SPELLINGS = {}


def command_word(script):
    """The command that runs the built script `script` the way this run was started."""
    return COMMAND_SPELLINGS.get(script, f"python3 {script}")


def script_command(script, parser, args, *, words=(), last=()):
    """command_word(SCRIPT) with the model flags the user gave, `words`, --gpu as given, then
    `last`: a command another tool of this family answers with the same meaning (one meaning per
    flag), spelled as the user ran this one (a built script, an installed command or python -m)."""
    gpu = [f"--gpu {shell_word(args.gpu)}"] if getattr(args, "gpu", None) else []
    return " ".join([command_word(script)] + model_flag_words(parser, args) + list(words) + gpu
                    + list(last))


def _flag(parser, dest):
    return next(a.option_strings[0] for a in parser._actions if a.dest == dest)


def ranges_epilog(parser, ranges):
    """The --help line that lists each flag's range (from the table the checks use)."""
    import textwrap  # only --help needs it: build_parser passes this as a function (start-up time)
    return textwrap.fill("ranges (exit 2 outside): " + ", ".join(
        f"{_flag(parser, d)} {number_text(lo)}..{number_text(hi)}" for d, (lo, hi) in ranges.items()),
        100, break_on_hyphens=False)


def check_ranges(args, parser, ranges):
    """One parser.error (exit 2) for the first flag outside its (lo, hi) range, naming the bounds."""
    for dest, (lo, hi) in ranges.items():
        val = getattr(args, dest)
        if val is not None and not lo <= val <= hi:
            got = val if isinstance(val, int) else number_text(val)
            parser.error(f"{_flag(parser, dest)} must be between {number_text(lo)} and "
                         f"{number_text(hi)}, got {got}")


def parse_tool_args(parser, argv):
    """parse_args, then refuse an empty --hf_model_name_or_path in one line (resolve_model_spec
    would read '' as "no config")."""
    args = parser.parse_args(argv)
    if args.hf_model_name_or_path == "":
        parser.error("--hf_model_name_or_path is empty: give a folder with config.json, a "
                     "config.json path or a hub id")
    return args


# --brief, the same in every tool: one line, the headline number first (brief_number: no thousands
# separators, no exponent below 1e12), its unit, and where the answer is about memory a verdict
# after a colon; a verdict of "does not fit" exits with DOES_NOT_FIT; warnings go to stderr.
DOES_NOT_FIT = 3
BRIEF_HELP = ("print one line for scripts: the headline number (plain digits), its unit and, where "
              "memory decides, ': fits in X GiB' or ': does not fit in X GiB' (exit status 3); "
              "warnings go to stderr")


def brief_number(x):
    """A number as --brief writes it: an integer's digits; else 4 significant digits, whole
    numbers from 1000 up, scientific only from 1e12 (FLOPs) or below 1e-4."""
    if isinstance(x, int):
        return str(x)
    if x and (abs(x) >= 1e12 or abs(x) < 1e-4):
        return f"{x:.4e}"
    return f"{x:.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def print_brief(line, fit=None):
    """Print a --brief line; with a verdict (`fit`: a dict with "fits" and the "memory_bytes" it
    was judged against) append ': fits in X GiB' or ': does not fit in X GiB', and exit
    DOES_NOT_FIT after a line that does not fit, so a script can test the status."""
    fits = None if fit is None else fit["fits"]
    if fits is not None:
        line += f": {'fits' if fits else 'does not fit'} in {fit['memory_bytes'] / 2 ** 30:.2f} GiB"
    print(line)
    if fits is False:
        sys.stdout.flush()
        sys.exit(DOES_NOT_FIT)


VERSION = "0.1.0"  # pyproject.toml's version (tests/test_newcomer.py checks they agree)


def add_output_args(parser, *, json_help="print the result dict as JSON"):
    """--json (the result dict) and --brief (one line: the headline number and its unit, for shell
    one-liners), one or the other; and --version."""
    parser.add_argument("--version", action="version", version=f"%(prog)s (llmcalc) {VERSION}")
    g = parser.add_mutually_exclusive_group()
    g.add_argument("--json", action="store_true", help=json_help)
    g.add_argument("--brief", action="store_true", help=BRIEF_HELP)


def print_warnings(warnings, *, as_json):
    """A result's warnings, said once: in the report (its WARNING lines), or with --json or
    --brief (as_json), whose stdout is for machines, on stderr (the JSON's "warnings" carries
    them as well)."""
    if as_json:
        for w in warnings:
            print(f"warning: {w}", file=sys.stderr)


PROGRESS_AFTER_S = 1.0  # a search shows its progress once it has run this long


class Progress:
    """progress(i, k, what): a one-line counter on stderr for a search past PROGRESS_AFTER_S, only
    where stderr is a terminal and stdout carries the report (not --json or --brief), redrawn at
    most five times a second; done() clears it before the answer prints."""

    def __init__(self, args):
        self.on = sys.stderr.isatty() and not getattr(args, "json", False) \
            and not getattr(args, "brief", False)
        self.t0 = self.last = time.perf_counter()
        self.shown = False

    def __call__(self, i, k, what="candidates costed"):
        now = time.perf_counter()
        if not self.on or now - self.t0 < PROGRESS_AFTER_S or (self.shown and now - self.last < 0.2):
            return
        self.last, self.shown = now, True
        print(f"\rsearching: {i:,}/{k:,} {what}, {now - self.t0:.0f} s so far ", end="",
              file=sys.stderr, flush=True)

    def done(self):
        if self.shown:
            print("\r" + " " * 72 + "\r", end="", file=sys.stderr, flush=True)
            self.shown = False


def dollars(x):
    """A cost as every report writes it: $1,234 (whole dollars from $100), $12.50 below."""
    return f"${x:,.0f}" if abs(x) >= 100 else f"${x:,.2f}"


def plural(n, one, many):
    """'1 micro-batch', '4 micro-batches': a count and its noun, agreeing."""
    return f"{n:,} {one if n == 1 else many}"


def with_warnings(text, warnings):
    """A text report with the model's warnings on top, one `WARNING: ...` line each (the spelling
    of every report)."""
    return "\n".join([f"WARNING: {w}" for w in warnings] + [text])


def print_result(res, *, as_json, report, brief=None):
    """--json prints the result dict as indented JSON (json imported only then: start-up time),
    --brief the tool's one line (`brief`: the result to that line), else the tool's report."""
    if brief is not None:
        print(brief(res))
    elif as_json:
        import json
        print(json.dumps(res, indent=2))
    else:
        print(report(res))


def run_tool(main):
    """Run a tool's main() as a command; output piped into `head` or a pager that quit early ends
    the run quietly with status 141 (128 + SIGPIPE), as a shell tool does; stdout that cannot be
    written (a full disk, /dev/full, a closed file) is one line on stderr and exit 2."""
    if sys.stdout is None:  # started with stdout closed (`cmd >&-`): nowhere to answer
        say_error("cannot write the output: standard output is closed")
        sys.exit(2)
    if sys.stderr is not None:  # notes and warnings that cannot be written never cost the answer
        sys.stderr = DiagnosticStream(sys.stderr)
    if hasattr(sys.stdout, "reconfigure"):  # a path or name the output's encoding cannot hold
        sys.stdout.reconfigure(errors="backslashreplace")  # (PYTHONIOENCODING=ascii): escaped
    try:
        main()
        sys.stdout.flush()
    except BrokenPipeError:
        sys.stdout = None
        sys.exit(141)
    except OSError as exc:
        import errno  # a stdout that cannot be written: a full disk or quota, an I/O error, a bad descriptor
        if exc.filename is not None or exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EBADF,
                                                          errno.EFBIG):
            raise  # not the output's failure
        sys.stdout = None  # nothing more to flush at exit
        say_error(f"cannot write the output: {exc.strerror or exc}")
        sys.exit(2)


class DiagnosticStream:
    """stderr for a command: what cannot be written there (stderr on /dev/full, a closed pipe) is
    dropped, so a note or warning that fails leaves the answer on stdout and the exit status as
    they were; everything else is the stream's."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text):
        try:
            return self.stream.write(text)
        except (OSError, ValueError):  # ValueError: the stream was closed
            return len(text)

    def flush(self):
        try:
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def __getattr__(self, name):
        return getattr(self.stream, name)


def say_error(message):
    """`PROG: error: MESSAGE` on stderr, as the parser's one line, outside any parser."""
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "llmcalc"
    print(f"{prog}: error: {one_line(message)}", file=sys.stderr)
