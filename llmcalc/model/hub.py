"""Loading a model's config.json: a local folder or file, or a hub id (through transformers,
imported lazily, never with trust_remote_code), with ModelOpt's hf_quant_config.json beside it.
A file too large or too deeply nested to be a config is refused in one line."""

import os

from ..errors import CalcError
from ..text import json_integer


CONFIG_MAX_BYTES = 16 << 20  # a config.json is a few KiB; anything past 16 MiB is not one
CONFIG_MAX_DEPTH = 64        # nesting deeper than this is not a model config


def _json_depth_ok(obj, limit):
    """True when `obj` nests at most `limit` containers deep (iterative: no recursion limit)."""
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, (dict, list)))
    return True


def load_hf_config(name_or_path):
    """Return a Hugging Face config as a dict: from a local folder or config.json with `json`
    alone, else from the hub through transformers.AutoConfig (imported only here, never with
    trust_remote_code). Raises CalcError with a one-line message. A local file must be a JSON
    object of at most CONFIG_MAX_BYTES, nested at most CONFIG_MAX_DEPTH deep."""
    if not str(name_or_path).strip():
        raise CalcError("--hf_model_name_or_path is empty: give a folder with config.json, a "
                         "config.json path or a hub id")
    path = os.path.expanduser(name_or_path)
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
        if not os.path.isfile(path):
            raise CalcError(f"no config.json in folder {name_or_path!r}")
    if os.path.isfile(path):
        import json  # imported where it is used: a run without a config never needs it
        try:
            if os.path.getsize(path) > CONFIG_MAX_BYTES:
                raise CalcError(f"{path!r} is over {CONFIG_MAX_BYTES >> 20} MiB: not a model config")
            with open(path, encoding="utf-8") as fh:
                # NaN/Infinity parse (transformers writes Infinity for some unbounded limits); the
                # typed reader refuses them in any field it reads, and an integer too long for int()
                cfg = json.load(fh, parse_int=json_integer)
        except RecursionError:
            raise CalcError(f"{path!r} nests too deep to be a model config") from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            msg = str(exc).replace("\n", " ")
            raise CalcError(msg if msg.startswith(repr(path)) else f"cannot read {path!r}: {msg}") from None
        if not isinstance(cfg, dict):
            raise CalcError(f"{path!r} is not a JSON object")
        if not _json_depth_ok(cfg, CONFIG_MAX_DEPTH):
            raise CalcError(f"{path!r} nests more than {CONFIG_MAX_DEPTH} deep: not a model config")
        cfg.setdefault("_config_path", path)
        side = os.path.join(os.path.dirname(path), "hf_quant_config.json")
        if "quantization_config" not in cfg and os.path.isfile(side):
            cfg["quantization_config"] = _sidecar_quant_config(side)
        return cfg
    if os.path.exists(path):  # /dev/null, a pipe, a socket: never read, never a hub id
        raise CalcError(f"{name_or_path!r} is not a config file (neither a regular file nor a folder)")
    parts = name_or_path.split("/")  # a hub id is `name` or `org/name`; anything else is a path
    if name_or_path.endswith(".json") or name_or_path.startswith((".", "~")) or len(parts) > 2 \
            or "" in parts:
        raise CalcError(f"config file {name_or_path!r} not found")
    return _hub_config(name_or_path)


def _sidecar_quant_config(path):
    """ModelOpt's hf_quant_config.json beside a config.json that has no quantization_config
    (NVIDIA's *-FP8 / *-FP4 / *-NVFP4 checkpoints): {"producer": ..., "quantization": {"quant_algo",
    "group_size", "exclude_modules", ...}}, read as that checkpoint's weight format."""
    import json
    try:
        if os.path.getsize(path) > CONFIG_MAX_BYTES:
            raise CalcError("too large")
        with open(path, encoding="utf-8") as fh:
            qc = json.load(fh)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        msg = str(exc).replace("\n", " ")
        raise CalcError(f"cannot read {path!r} (the checkpoint's quantization): {msg}") from None
    if not isinstance(qc, dict) or not isinstance(qc.get("quantization"), dict) \
            or not _json_depth_ok(qc, CONFIG_MAX_DEPTH):
        raise CalcError(f"{path!r} has no \"quantization\" object: not ModelOpt's hf_quant_config.json")
    return qc


def _hub_config(repo_id):
    """A hub id's config through transformers.AutoConfig (never trust_remote_code), offline-first:
    the local Hugging Face cache; else one metadata request, given HF_HUB_ETAG_TIMEOUT (default 1 s)
    plus 0.5 s and no retries, then the download. Without network this fails in about a second, not
    after huggingface_hub's ~25 s of retries. transformers' advisories, the hub's warnings and
    progress bars stay off the screen. Raises CalcError with a one-line message."""
    import contextlib, importlib.util, io, logging, threading, warnings  # noqa: E401
    if importlib.util.find_spec("transformers") is None:
        raise CalcError(f"{repo_id!r} is not a local folder or file, and reading a hub id needs "
                         "`pip install transformers` (or pass a local config.json)")
    try:
        timeout_s = float(os.environ.get("HF_HUB_ETAG_TIMEOUT") or 1)
    except ValueError:
        timeout_s = 1.0
    timeout_s = timeout_s if 0 < timeout_s <= 600 else 1.0


    def first_line(exc):
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0]

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import huggingface_hub as hub
        for logger in ("huggingface_hub", "transformers"):  # loggers bound to the real stderr
            logging.getLogger(logger).setLevel(logging.ERROR)
        try:  # the cache alone: files, no request (hf_hub_download would send one even so)
            path = hub.try_to_load_from_cache(repo_id, "config.json")
        except Exception as exc:  # HFValidationError: not a repo id, which no request can fix
            raise CalcError(f"cannot load config {repo_id!r}: {first_line(exc)}") from None
        if not isinstance(path, str):  # not cached (None), or cached as missing from the repo
            url, answer = hub.hf_hub_url(repo_id, "config.json"), []

            def probe():  # in a thread, so that a DNS look-up that hangs cannot hold us
                try:
                    answer.append(hub.get_hf_file_metadata(url, timeout=timeout_s))
                except Exception as exc:
                    answer.append(exc)
            thread = threading.Thread(target=probe, daemon=True)
            thread.start()
            thread.join(timeout_s + 0.5)
            err = answer[0] if answer else TimeoutError(f"no answer within {timeout_s:g} s")
            status = getattr(getattr(err, "response", None), "status_code", None)
            if status is not None:  # the hub answered: no such repo or file, or no access
                raise CalcError(f"cannot load config {repo_id!r} from the hub: {type(err).__name__} "
                                 f"(HTTP {status}); check the id; a private or gated repo needs a "
                                 "token (HF_TOKEN)")
            if isinstance(err, Exception):  # no network, a firewall, HF_HUB_OFFLINE=1
                raise CalcError(
                    f"cannot load config {repo_id!r}: the hub is unreachable ({type(err).__name__}: "
                    f"{first_line(err)}) and it is not in the local cache; to work offline, download "
                    f"{url} and pass that file or its folder to --hf_model_name_or_path")
            try:
                path = hub.hf_hub_download(repo_id, "config.json")
            except Exception as exc:
                raise CalcError(f"cannot load config {repo_id!r} from the hub: "
                                 f"{first_line(exc)}") from None
            fetched = True
        else:
            fetched = False
        # ModelOpt checkpoints (nvidia/*-FP8, *-NVFP4) may keep their format only in
        # hf_quant_config.json beside config.json: from the cache (a snapshot download holds it),
        # else fetched along with a config.json fetched now; the hub's 404 is cached as "absent",
        # so a later offline run knows. A config.json cached alone by another tool leaves it unknown
        # (read as absent, as a local folder without the file is).
        try:
            side = hub.try_to_load_from_cache(repo_id, "hf_quant_config.json")
            if side is None and fetched:
                side = hub.hf_hub_download(repo_id, "hf_quant_config.json")
        except Exception as exc:  # the hub's 404: no sidecar; anything else leaves the format unknown
            if getattr(getattr(exc, "response", None), "status_code", None) != 404:
                raise CalcError(f"cannot load {repo_id!r}'s hf_quant_config.json (the checkpoint's "
                                 f"quantization) from the hub: {first_line(exc)}") from None
            side = None
        try:
            from transformers import AutoConfig
            logging.getLogger("transformers").setLevel(logging.ERROR)  # its import set WARNING
            cfg = AutoConfig.from_pretrained(path, trust_remote_code=False).to_dict()
        except Exception as exc:  # e.g. a model_type this transformers does not know
            raise CalcError(f"cannot load config {repo_id!r} ({path}): {first_line(exc)}") from None
    if "quantization_config" not in cfg and isinstance(side, str):
        cfg["quantization_config"] = _sidecar_quant_config(side)
    cfg.setdefault("_config_path", repo_id)
    return cfg


def _short(value):
    import json  # imported where it is used: a run without a config never needs it
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
