"""The model spec as a declared record (model/spec.py, issue 42): every config we hold and the
flag-built models resolve to a ModelSpec whose layers are Layer records, each key declared (the
record refuses any other: TypeError where it is written); every declared field is one some module
writes (no stale declarations); resolve_model_spec takes a plain dict of flags, answers as it did
for argparse's Namespace, and leaves the flags as they were; model/ holds no argparse object."""
import ast
import glob
import os

import pytest

from conftest import FIXTURES, ROOT

from llmcalc.model.spec import Layer, ModelSpec, resolve_model_spec
from llmcalc.records import Record

CONFIGS = sorted(glob.glob(os.path.join(FIXTURES, "configs", "*.json")))
FLAG_MODELS = [  # flag sets that reach each branch of the resolver: dense, GQA, MoE, MLA, learned
    {},
    {"num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "num_kv_heads": 8,
     "ffn_hidden_size": 14336, "swiglu": True, "norm": "rmsnorm", "bias": False},
    {"num_layers": 12, "hidden_size": 768, "moe": True, "num_experts": 64, "topk": 4,
     "num_shared_experts": 2, "num_dense_layers": 1, "sliding_window": 128},
    {"num_layers": 4, "hidden_size": 1024, "num_attention_heads": 8, "kv_lora_rank": 128,
     "q_lora_rank": 256, "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 64},
    {"position_embedding": "learned", "sequence_length": 1024},
]


def _check(spec):
    assert type(spec) is ModelSpec
    assert all(type(layer) is Layer for layer in spec["layers"])
    assert len(spec["layers"]) == spec["num_layers"]
    missing = [k for k in ModelSpec.REQUIRED if k not in spec]
    assert not missing


@pytest.mark.parametrize("path", CONFIGS, ids=os.path.basename)
def test_every_config_resolves_to_a_declared_spec(path):
    _check(resolve_model_spec({"hf_model_name_or_path": path})[0])


@pytest.mark.parametrize("flags", FLAG_MODELS)
def test_flag_models_resolve_to_a_declared_spec(flags):
    _check(resolve_model_spec(dict(flags))[0])


def test_the_record_refuses_an_undeclared_key():
    spec, _ = resolve_model_spec({})
    with pytest.raises(TypeError, match="no field 'hidden'"):
        spec["hidden"] = 1
    with pytest.raises(TypeError, match="no field 'heads'"):
        spec["layers"][0]["heads"] = 1
    assert issubclass(ModelSpec, Record) and issubclass(Layer, Record)


def _written_keys():
    """Every string key some module under llmcalc/ writes into a dict: subscript stores,
    .update/.setdefault/dict() keywords and first arguments, and dict displays."""
    keys = set()
    for path in glob.glob(os.path.join(ROOT, "llmcalc", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                if isinstance(node.slice, ast.Constant):
                    keys.add(node.slice.value)
            elif isinstance(node, ast.Call):
                keys.update(k.arg for k in node.keywords if k.arg)
                if node.args and isinstance(node.args[0], ast.Constant):
                    keys.add(node.args[0].value)
            elif isinstance(node, ast.Dict):
                keys.update(k.value for k in node.keys if isinstance(k, ast.Constant))
            elif isinstance(node, ast.Tuple) and node.elts:  # ("name", default) rows of a loop
                if isinstance(node.elts[0], ast.Constant):
                    keys.add(node.elts[0].value)
    return keys


@pytest.mark.parametrize("record", [ModelSpec, Layer])
def test_every_declared_field_is_documented_and_written_somewhere(record):
    undocumented = [k for k, meaning in record.FIELDS.items() if len(meaning.split()) < 3]
    assert not undocumented
    stale = sorted(set(record.FIELDS) - _written_keys())
    assert not stale, f"{record.__name__} declares fields nothing writes: {stale}"


def test_a_dict_of_flags_is_left_as_it_was():
    flags = dict(FLAG_MODELS[2], hf_model_name_or_path=None)
    before = dict(flags)
    resolve_model_spec(flags)
    assert flags == before


def test_model_package_holds_no_argparse_object():
    # issue 42's rule: below the tools, keyword arguments and one error type; no argparse,
    # no parser, no args. (Read as code: names and attributes, not words in comments.)
    bad = []
    for path in glob.glob(os.path.join(ROOT, "llmcalc", "model", "*.py")):
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            name = (node.id if isinstance(node, ast.Name) else node.arg if isinstance(node, ast.arg)
                    else node.names[0].name if isinstance(node, ast.Import) else None)
            if name in ("args", "parser", "argparse"):
                bad.append(f"{os.path.relpath(path, ROOT)}:{node.lineno} {name}")
    assert not bad
