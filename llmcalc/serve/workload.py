"""The requests of a simulated benchmark when they are not all alike: lengths drawn as vLLM's
`vllm bench serve --dataset-name random` draws them, a lognormal mix shaped like its ShareGPT
runs, or a trace read from a file (arrival, prompt and output tokens, and a shared prefix).

A request here is a tuple (arrival_s, input_tokens, output_tokens, prefix_key, prefix_tokens):
arrival_s None when the load sets it (a rate or closed-loop clients), prefix_key None when the
request shares nothing with another (its first prefix_tokens tokens are then its own)."""

import math

from ..text import json_integer


# The ShareGPT mix: the prompts and replies vLLM's benchmark draws from
# ShareGPT_V3_unfiltered_cleaned_split.json (`--dataset-name sharegpt`, first turn's prompt, the
# reply's length as the output; pairs with a prompt over 1,024 or a total over 2,048 tokens, or
# fewer than 4 of either, are dropped). Means measured by `benchmark_serving.py --num-prompts 1000`
# with Llama-3.1-8B-Instruct's tokenizer (seed 0): 215,196 input and 197,090 generated tokens
# (vLLM users' runs, e.g. the A40 Triton run and the vllm-dlc run quoted in vLLM issues; the
# input count repeats exactly across runs, the output count varies 185,671-198,532 with the
# model's end-of-sequence). No published spread was found: the lognormal's sigma of 1.0 is an
# assumption, stated with the mix. The means are of the clipped draws, mu solved for them.
SHAREGPT_MEAN_INPUT_TOKENS = 215.196
SHAREGPT_MEAN_OUTPUT_TOKENS = 197.090
SHAREGPT_SIGMA = 1.0
SHAREGPT_MAX_INPUT_TOKENS = 1024  # vLLM's sampler drops longer prompts
SHAREGPT_MAX_TOTAL_TOKENS = 2048  # ... and longer prompt + reply pairs
SHAREGPT_MIN_TOKENS = 4           # ... and shorter prompts or replies
TRACE_FIELDS = ("arrival_s", "input_tokens", "output_tokens")
TRACE_COLUMNS = TRACE_FIELDS + ("prefix_id", "prefix_tokens")
TRACE_LIMIT_TOKENS = 10 ** 9  # FLAG_RANGES' bound on -s and -o
TRACE_MAX_ROWS = 10 ** 6  # FLAG_RANGES' bound on --num-requests: the most requests a run takes


# --- formulas ------------------------------------------------------------------------------------
def random_length_bounds(*, length, range_ratio, at_least=0):
    """(low, high), both drawn, of vLLM's RandomDataset for a length and --random-range-ratio r:
    floor(length (1 - r)) .. ceil(length (1 + r)) (vllm/benchmarks/datasets.py,
    get_sampling_params; the output's low at least 1). vLLM subtracts the tokenizer's special
    tokens from the input length first: not here (no tokenizer)."""
    return max(math.floor(length * (1 - range_ratio)), at_least), math.ceil(length * (1 + range_ratio))


def random_requests(*, n, input_len, output_len, range_ratio, prefix_tokens=0, seed=0):
    """n requests of vLLM's random dataset: input and output lengths uniform integers over
    random_length_bounds (numpy's integers(low, high + 1) there, Python's randint here: the same
    distribution, other draws), the --prefix-tokens shared prefix prepended to every prompt (vLLM's
    --random-prefix-len: the prompt is prefix + the drawn length)."""
    import random  # only a drawn mix needs it (start-up time)
    rng = random.Random(seed)
    ilo, ihi = random_length_bounds(length=input_len, range_ratio=range_ratio, at_least=1)
    olo, ohi = random_length_bounds(length=output_len, range_ratio=range_ratio, at_least=1)
    key = "shared" if prefix_tokens else None
    return [(None, prefix_tokens + rng.randint(ilo, ihi), rng.randint(olo, ohi), key, prefix_tokens)
            for _ in range(n)]


def clipped_lognormal_mean(*, mu, sigma, lo, hi):
    """Mean of a lognormal(mu, sigma) clipped to [lo, hi] (values outside set to the bound): the
    partial expectations of the lognormal (Johnson, Kotz & Balakrishnan 1994, ch. 14)."""
    def phi(x):
        return 0.5 * (1 + math.erf(x / math.sqrt(2)))
    a, b = (math.log(lo) - mu) / sigma, (math.log(hi) - mu) / sigma
    inside = math.exp(mu + sigma ** 2 / 2) * (phi(b - sigma) - phi(a - sigma))
    return lo * phi(a) + inside + hi * (1 - phi(b))


def lognormal_mu_for_mean(*, mean, sigma, lo, hi):
    """The mu whose lognormal clipped to [lo, hi] has the given mean (bisection: the clipped
    mean grows with mu)."""
    a, b = math.log(lo) - 10 * sigma, math.log(hi) + 10 * sigma
    for _ in range(100):
        m = (a + b) / 2
        if clipped_lognormal_mean(mu=m, sigma=sigma, lo=lo, hi=hi) < mean:
            a = m
        else:
            b = m
    return (a + b) / 2


def sharegpt_requests(*, n, prefix_tokens=0, seed=0):
    """n requests of the ShareGPT-shaped mix: input and output lengths independent lognormals
    (sigma SHAREGPT_SIGMA) clipped as vLLM's sampler keeps them (inputs 4 .. 1,024, outputs 4 ..
    2,048 less the input: clipped rather than dropped), their means those vLLM's 1,000-prompt
    ShareGPT runs count (SHAREGPT_MEAN_*); a --prefix-tokens prefix prepended to each prompt."""
    import random  # only a drawn mix needs it
    rng = random.Random(seed)
    lo, s_hi = SHAREGPT_MIN_TOKENS, SHAREGPT_MAX_INPUT_TOKENS
    o_hi = SHAREGPT_MAX_TOTAL_TOKENS - SHAREGPT_MAX_INPUT_TOKENS  # the typical room left (clip below)
    mu_s = lognormal_mu_for_mean(mean=SHAREGPT_MEAN_INPUT_TOKENS, sigma=SHAREGPT_SIGMA, lo=lo, hi=s_hi)
    mu_o = lognormal_mu_for_mean(mean=SHAREGPT_MEAN_OUTPUT_TOKENS, sigma=SHAREGPT_SIGMA, lo=lo, hi=o_hi)
    key = "shared" if prefix_tokens else None
    out = []
    for _ in range(n):
        s = min(max(round(rng.lognormvariate(mu_s, SHAREGPT_SIGMA)), lo), s_hi)
        o = min(max(round(rng.lognormvariate(mu_o, SHAREGPT_SIGMA)), lo), SHAREGPT_MAX_TOTAL_TOKENS - s)
        out.append((None, prefix_tokens + s, o, key, prefix_tokens))
    return out


def fixed_requests(*, n, input_len, output_len, prefix_tokens=0):
    """n requests of input_len prompt (the first prefix_tokens of it shared by all) and
    output_len output tokens."""
    key = "shared" if prefix_tokens else None
    return [(None, input_len, output_len, key, prefix_tokens)] * n


def apply_hit_rate(requests, *, hit_rate, seed=0):
    """The same requests with their shared prefix kept by a share hit_rate of them (seeded draw);
    the others compute their prefix as their own."""
    if hit_rate is None:
        return requests
    import random  # only a drawn mix needs it
    rng = random.Random(seed + 1)
    return [r if r[3] is None or rng.random() < hit_rate else r[:3] + (None, r[4]) for r in requests]


def _trace_number(value, *, field, where, integer, lo):
    """One trace field checked: a number (an integer for token counts), finite, at least lo."""
    if type(value) is int and lo <= value <= TRACE_LIMIT_TOKENS:  # the common case, quickly
        return value if integer else float(value)
    if type(value) is float and not integer and lo <= value <= TRACE_LIMIT_TOKENS * 1e3:
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            if integer:
                try:
                    value = float(text)
                except ValueError:
                    raise ValueError(f"{where}: {field} {text!r} is not a number") from None
            else:
                raise ValueError(f"{where}: {field} {text!r} is not a number") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: {field} must be a number, got {value!r}")
    hi = TRACE_LIMIT_TOKENS * (1 if integer else 1e3)
    if not (math.isfinite(value) and lo <= value <= hi):
        raise ValueError(f"{where}: {field} must be {'an integer' if integer else 'a number'} "
                         f"from {lo:g} to {hi:g}, got {value!r}")
    if integer and (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"{where}: {field} must be a whole number of tokens, got {value!r}")
    return int(value) if integer else float(value)


def _trace_file(path):
    """(the path checked, its extension): a regular file (a FIFO or folder refused as what it is)
    with a .jsonl, .json or .csv name. Raises ValueError (one line)."""
    import os, stat  # noqa: E401 (only --trace needs them)
    if not str(path).strip():
        raise ValueError("--trace needs a file name (a .jsonl or .csv trace)")
    shown = ascii(path)[1:-1] if "\n" in path or not path.isprintable() else path
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ValueError(f"--trace {shown}: no such file") from None
    except OSError as exc:
        raise ValueError(f"--trace {shown}: cannot read it ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        raise ValueError(f"--trace {shown}: a folder, not a file; give a trace file in it")
    if not stat.S_ISREG(mode):
        raise ValueError(f"--trace {shown} is not a regular file (a pipe or device); save the "
                         "trace to a file first")
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".jsonl", ".json", ".csv"):
        raise ValueError(f"--trace {shown}: give a .jsonl (one JSON object per line) or a .csv "
                         "file")
    return shown, ext


def _trace_row(r, where):
    """One trace row (a dict of its columns) as a request tuple; ValueError naming the line."""
    for f in TRACE_FIELDS:
        if r.get(f) in (None, ""):
            raise ValueError(f"{where}: {f} is missing")
    t = _trace_number(r["arrival_s"], field="arrival_s", where=where, integer=False, lo=0)
    s = _trace_number(r["input_tokens"], field="input_tokens", where=where, integer=True, lo=1)
    o = _trace_number(r["output_tokens"], field="output_tokens", where=where, integer=True, lo=1)
    key, p = r.get("prefix_id"), r.get("prefix_tokens")
    key = None if key in (None, "") else str(key)
    p = 0 if p in (None, "") else _trace_number(p, field="prefix_tokens", where=where, integer=True,
                                                lo=0)
    if p > s:
        raise ValueError(f"{where}: prefix_tokens {p} is more than input_tokens {s}")
    if p and key is None:
        raise ValueError(f"{where}: prefix_tokens without a prefix_id (the id says who shares it)")
    return (t, s, o, key, p)


def _columns_problem(names, *, required=True):
    """Why a trace's columns (a CSV header or a JSON line's keys) are not exactly the trace's, or
    None: a column named twice, one the reader does not know (a misspelling would be ignored
    silently), or a required one missing."""
    seen = set()
    for c in names:
        if c in seen:
            return f"names the column {c!r} twice"
        seen.add(c)
    unknown = [c for c in names if c not in TRACE_COLUMNS]
    if unknown:
        return (f"has the column{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(repr(c) for c in unknown)}, which a trace does not have (columns: "
                f"{', '.join(TRACE_COLUMNS)})")
    missing = [f for f in TRACE_FIELDS if f not in seen] if required else []
    if missing:
        return (f"lacks {', '.join(missing)} (columns {', '.join(TRACE_FIELDS)}, optionally "
                "prefix_id, prefix_tokens)")
    return None


def _csv_rows(fh, shown):
    """The requests of a CSV trace, read row by row: the header's columns exactly the trace's
    (a spreadsheet's byte-order mark dropped by the utf-8-sig reading), each row as many fields
    as the header (an unquoted thousands separator, 1,000, makes one more)."""
    import csv  # only --trace needs it
    reader = csv.reader(fh)

    def rows():  # a field over csv's limit (128 KiB) or a NUL byte: one line naming the row
        last = 0  # the line the last good row ended on
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise ValueError(f"--trace {shown} line {last + 1}: not a CSV row "
                                 f"({exc})") from None
            last = reader.line_num
            yield row
    it = rows()
    header = next(it, None)
    if not header:
        return
    header = [c.strip() for c in header]
    why = _columns_problem(header)
    if why:
        raise ValueError(f"--trace {shown}: the header {why}")
    for fields in it:
        line = reader.line_num
        if not fields:
            continue
        if len(fields) != len(header):
            more = len(fields) > len(header)
            raise ValueError(
                f"--trace {shown} line {line}: {len(fields)} fields under a header of "
                f"{len(header)}" + ("; quote numbers with a thousands separator (\"1,000\") or "
                                    "write them without one" if more else ""))
        yield _trace_row(dict(zip(header, fields)), f"--trace {shown} line {line}")


def _json_rows(fh, shown):
    """The requests of a JSON-lines trace, line by line: each an object whose keys are exactly
    the trace's columns (no key twice, none unknown)."""
    import json  # only --trace needs it
    for i, line in enumerate(fh):
        if not line.strip():
            continue
        where = f"--trace {shown} line {i + 1}"
        try:
            obj = json.loads(line, parse_int=json_integer)
            # a key named twice leaves one entry: as many '":' as keys says none was (else the
            # slower read that keeps every pair decides; a '":' inside a value also takes it)
            if isinstance(obj, dict) and line.count('":') != len(obj):
                names = [k for k, _ in json.loads(line, parse_int=json_integer,
                                                  object_pairs_hook=lambda kv: kv)]
            else:
                names = list(obj) if isinstance(obj, dict) else None
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not JSON ({exc.msg})") from None
        except RecursionError:
            raise ValueError(f"{where}: nests too deep to be a request") from None
        if names is None:
            raise ValueError(f"{where}: each line must be a JSON object")
        why = _columns_problem(names, required=False)  # _trace_row says what is missing
        if why:
            raise ValueError(f"{where}: the object {why}")
        yield _trace_row(obj, where)


def read_trace(path, *, max_rows=TRACE_MAX_ROWS):
    """The requests of a trace file: JSON lines (.jsonl, .json: one object per line) or CSV with a
    header, each request with arrival_s (seconds; the run starts at the first arrival),
    input_tokens, output_tokens, and optionally prefix_id (requests with the same id share their
    first prefix_tokens tokens, and a finished request leaves its prompt and output cached under
    its id: give a conversation's turns one id, prefix_tokens the history before each turn, 0 for
    the first) and prefix_tokens (at most input_tokens); no other column, none twice.
    Read row by row, at most max_rows of them (memory stays bounded: a row is a small tuple).
    Sorted by arrival. Raises ValueError with one line naming the file, line and field."""
    shown, ext = _trace_file(path)
    out = []
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            for row in (_csv_rows if ext == ".csv" else _json_rows)(fh, shown):
                if len(out) >= max_rows:
                    raise ValueError(f"--trace {shown} has more than {max_rows:,} requests, the "
                                     "most a run takes; cut it (the statistics settle within a "
                                     "few thousand)")
                out.append(row)
    except UnicodeDecodeError:
        raise ValueError(f"--trace {shown}: not UTF-8 text") from None
    except OSError as exc:  # unreadable (permissions), an I/O error
        raise ValueError(f"--trace {shown}: cannot read it ({exc.strerror or exc})") from None
    if not out:
        raise ValueError(f"--trace {shown}: no requests in it")
    out.sort(key=lambda x: x[0])
    return out


def trace_requests(req):
    """The requests of a ServingRequest's --trace: all its rows (req.trace_rows says how many it
    has), or its first --num-requests of them; with --prefix-hit-rate a share of them keep their
    shared prefix. Raises ValueError (one line)."""
    reqs = read_trace(req.trace)
    req.trace_rows = len(reqs)
    if req.num_requests is not None:
        reqs = reqs[:req.num_requests]
    return apply_hit_rate(reqs, hit_rate=req.prefix_hit_rate, seed=req.seed)


def length_summary(requests):
    """Mean, median and p99 of the mix's input and output tokens, and its shared-prefix tokens."""
    def stats(xs):
        v = sorted(xs)
        return {"mean": sum(v) / len(v), "median": v[len(v) // 2], "p99": v[min(len(v) - 1, int(0.99 * len(v)))],
                "min": v[0], "max": v[-1]}
    return {"input_tokens": stats([r[1] for r in requests]), "output_tokens": stats([r[2] for r in requests]),
            "shared_prefix_requests": sum(r[3] is not None for r in requests)}
