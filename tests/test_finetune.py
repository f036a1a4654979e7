"""Fine-tuning as transformers + peft + torch run it (--framework pytorch): what autograd keeps
per layer under peft LoRA, eager attention and SDPA with a mask, against transformers' and peft's
own models; the flags' contradictions; torch.optim's state dtypes.

Source of the measured bytes: validation/finetune/saved_finetune.json, written by
validation/finetune/measure_saved_finetune.py (torch 2.13.0 CPU, transformers 5.24.0, peft 0.21.2;
saved_tensors_hooks around the forward of 1- and 2-layer copies of released configs, vocabulary
1,000, batch 2, sequence 16, one layer = the difference; LoRA r 8 on all linear layers, a bf16
base, fp32 adapters, bf16 autocast). Nothing in the rules was set from these numbers: they are
counted from peft's lora/layer.py, transformers' modules and torch's autograd formulas, and these
runs check the count (exact: both sides count bytes of the same tensors). The CPU's dropout keeps
fp32 noise where CUDA's native_dropout keeps a bool mask: the dropout row is judged with the CPU's
4 B mask (mask_bytes), the rule's default is CUDA's 1 B.
"""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import calc_transformer_mem as M  # noqa: E402
from llmcalc.model.spec import resolve_model_spec  # noqa: E402
from llmcalc.train.finetune import (lora_input_widths,  # noqa: E402
                                    lora_layer_activation_bytes)
from llmcalc.train.memory import eager_layer_activation_bytes, eager_rule_covers  # noqa: E402

FIX = os.path.join(ROOT, "validation", "finetune", "saved_finetune.json")
with open(FIX, encoding="utf-8") as fh:
    SAVED = json.load(fh)
CONFIGS = os.path.join(ROOT, "tests", "fixtures", "configs")


def _layer(name, tmp_path):
    row = SAVED[name]
    with open(os.path.join(CONFIGS, row["config_file"]), encoding="utf-8") as fh:
        cfg = json.load(fh)
    cfg["vocab_size"] = row["vocab_size"]
    if row["kind"] == "sdpa-mask":
        cfg["sliding_window"] = 8
    cfg.update(row["extra"].get("config", {}))  # a shape variant of the released config
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    args = M.build_parser().parse_args(["--hf_model_name_or_path", str(path)])
    spec, _ = resolve_model_spec(vars(args), defaults={"num_experts": 0})
    return spec, spec["layers"][0]


@pytest.mark.parametrize("name", sorted(SAVED))
def test_layer_bytes_equal_what_autograd_saves(name, tmp_path):
    row = SAVED[name]
    spec, layer = _layer(name, tmp_path)
    s, b, h = row["seq"], row["batch"], spec["hidden_size"]
    kw = dict(s=s, b=b, h=h, tp=1, act_bytes=2, autocast=True)
    if row["kind"] == "lora":  # phi-3 rows: fused qkv_proj / gate_up_proj, one adapter each
        drop = row["extra"].get("lora_dropout", 0.0)
        lora = {"rank": 8, "targets": ["q", "k", "v", "o", "gate", "up", "down"],
                "adapter_bytes": 4, "dropout": drop, "quantized": False}
        assert eager_rule_covers(layer, norm=spec["norm"], attn_implementation="sdpa", lora=True)
        ours = lora_layer_activation_bytes(layer, lora=lora, mask_bytes=4, **kw)
        assert row["runs"]["ckpt"]["layer_activation_bytes"] == 2 * s * b * h  # the layer's input
        assert ("qkv", h) in lora_input_widths(layer, h=h, tp=1) or "phi" not in name
    else:  # pure16: model.to(bfloat16) without autocast (pure 16-bit training)
        impl = "eager" if row["kind"] == "eager" else "sdpa"
        kw["autocast"] = row["kind"] != "pure16"
        assert eager_rule_covers(layer, norm=spec["norm"], attn_implementation=impl)
        ours = eager_layer_activation_bytes(layer, sp=False, attn_implementation=impl, **kw)
    assert ours == row["runs"]["plain"]["layer_activation_bytes"]


def test_phi3_is_read_with_fused_projections(tmp_path):
    # transformers models/phi3: Phi3Attention.qkv_proj and Phi3MLP.gate_up_proj; the fused output's
    # storage stays alive through the v slice SDPA keeps (phi-3 rows above: exact) -- the unfused
    # count would be off by A (a + kv) d - 2 A h - A h per token under autocast
    spec, layer = _layer("phi-3-mini-sdpa", tmp_path)
    assert layer["attention"][0]["fused"] and layer["mlp"][0]["fused"]
    spec, layer = _layer("llama-3-8b-eager", tmp_path)
    assert "fused" not in layer["attention"][0] and "fused" not in layer["mlp"][0]


@pytest.mark.parametrize("name", ["llama-3-8b-lora", "phi-3-mini-lora", "phi-3-medium-shape-lora"])
def test_adapter_weight_copies_equal_the_adapter_count(name, tmp_path):
    # autocast caches one bf16 copy of each fp32 adapter weight: the measured copies are 2 B per
    # adapter parameter, so they count peft's adapters per layer (Phi-3: one qkv_proj and one
    # gate_up_proj adapter, not three and two)
    from llmcalc.train.finetune import lora_params_per_layer
    from llmcalc.train.memory import LORA_MATRICES
    spec, layer = _layer(name, tmp_path)
    ours = lora_params_per_layer(layer, h=spec["hidden_size"], rank=8, targets=LORA_MATRICES, tp=1)
    assert 2 * ours == SAVED[name]["runs"]["plain"]["layer_weight_copy_bytes"]


def test_sharded_qlora_keeps_16_bit_adapters_and_residual(capsys):
    # QLoRA under FSDP FULL_SHARD / ZeRO-3 (peft docs accelerate/fsdp.md: bnb_4bit_quant_storage
    # bf16, the model loaded in bf16): TRL's is_sharded_qlora path skips
    # prepare_model_for_kbit_training and builds bf16 adapters (autocast_adapter_dtype=False), so
    # AdamW's moments are 2 + 2 B per adapter parameter (sharded over 2 ranks) where -z 2's fp32
    # adapters keep 4 + 4 B, and the checkpointed layers' inputs are 16-bit (2 B, not fp32's 4)
    base = ["--finetune", "qlora", "--framework", "pytorch", "--num-gpus", "2", "-s", "2048",
            "-ca", "--json"]
    z3, z2 = M.main(LLAMA + base + ["-z", "3"]), M.main(LLAMA + base + ["-z", "2"])
    capsys.readouterr()
    n = z3["trainable_params_per_gpu"]
    assert z3["optimizer_bytes"] == pytest.approx(4 * n / 2)
    assert z2["optimizer_bytes"] == pytest.approx(8 * n / 2)
    assert z3["activations_layers_bytes"] < z2["activations_layers_bytes"]
    t = T.main(LLAMA + base[:-2] + ["--recompute", "full", "--global-batch-size", "2", "-z", "3",
                                    "--json"])
    capsys.readouterr()
    assert t["step_time_s"] > 0


LLAMA = ["-l", "32", "-hs", "4096", "-a", "32", "--num-kv-heads", "8", "--ffn-hidden-size", "14336",
         "--swiglu", "--norm", "rmsnorm", "--no-bias", "-v", "128256", "-s", "2048", "-b", "1"]


def test_pure_bf16_is_8_bytes_per_parameter(capsys):
    res = M.main(LLAMA + ["--framework", "pytorch", "--pure-bf16", "--json"])
    capsys.readouterr()
    n = res["params_per_gpu"]
    # weights 2 + gradients 2 + AdamW's two bf16 moments 4 (the peak is the backward's end)
    assert res["weights_bytes"] == 2 * n
    assert res["optimizer_bytes"] == 4 * n


@pytest.mark.parametrize("argv,needle", [
    (["--finetune", "qlora", "--framework", "megatron", "-z", "3", "--num-gpus", "2"], "ZeRO-3"),
    (["--attn-implementation", "eager"], "--framework pytorch"),
    (["--pure-bf16", "--disable-mixed-precision"], "--pure-bf16"),
    (["--finetune", "lora", "--lora-dropout", "1.5"], "--lora-dropout"),
    (["--lora-dropout", "0.1"], "--finetune"),
    (["--lora-rank", "8"], "--finetune"),  # ignored without LoRA: refused, not silently dropped
    (["--lora-targets", "q"], "--finetune"),
])
def test_contradictions_exit_2(argv, needle, capsys):
    with pytest.raises(SystemExit) as e:
        M.main(LLAMA + argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]


def test_sinks_refused_under_sdpa(capsys):
    path = os.path.join(CONFIGS, "gpt-oss-20b.json")
    with pytest.raises(SystemExit) as e:
        M.main(["--hf_model_name_or_path", path, "--framework", "pytorch"])
    assert e.value.code == 2
    assert "sinks" in capsys.readouterr().err


import calc_training_time as T  # noqa: E402

LLAMA_CFG = os.path.join(CONFIGS, "llama-3.1-8b.json")
TIME = ["--hf_model_name_or_path", LLAMA_CFG, "--gpu", "h100", "--num-gpus", "1", "-s", "2048",
        "-b", "2", "--global-batch-size", "2", "--framework", "pytorch"]


@pytest.mark.parametrize("extra", [["--finetune", "lora"], ["--finetune", "qlora", "--recompute",
                                   "full"], ["--pure-bf16"], ["--attn-implementation", "eager"],
                                   ["--finetune", "qlora", "--lora-dropout", "0.1"]])
def test_one_answer_for_memory(extra, capsys):
    # calc_training_time.py's memory is calc_transformer_mem.py's for the same run (the recompute
    # mode stated: --framework pytorch's default there is torchtitan's selective)
    rec = [] if "--recompute" in extra else ["--recompute", "none"]
    t = T.main(TIME + extra + ["--json"] + rec)
    m = M.main(["--hf_model_name_or_path", LLAMA_CFG, "-s", "2048", "-b", "2", "--framework",
                "pytorch", "--gpu", "h100", "--json"] + extra)
    capsys.readouterr()
    assert t["total_bytes"] == pytest.approx(m["total_bytes"], rel=1e-9)


@pytest.mark.parametrize("argv,needle", [
    (["--finetune", "lora", "--framework", "megatron"], "--framework pytorch"),
    (["--finetune", "lora", "-tp", "2", "--num-gpus", "2"], "data parallel"),
    (["--disable-mixed-precision"], "--pure-bf16"),
    (["--finetune", "lora", "--recompute", "selective"], "gradient checkpointing"),
    (["--lora-rank", "8"], "--finetune"),
])
def test_time_contradictions_exit_2(argv, needle, capsys):
    with pytest.raises(SystemExit) as e:
        T.main(TIME + argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]


def test_lora_step_drops_the_base_weight_gradients(capsys):
    # a frozen base computes no weight gradients: the backward's matmuls shrink by their weight-
    # gradient half (autograd's mm backward skips the weight's product when it needs no gradient)
    full = T.main(TIME + ["--attn-implementation", "sdpa", "--json"])
    lora = T.main(TIME + ["--finetune", "lora", "--json"])
    capsys.readouterr()
    for part in ("compute_attention_linear", "compute_mlp"):  # the frozen projections' parts
        assert 0 < lora["breakdown_s"][part] < full["breakdown_s"][part]
    assert all(v >= 0 for v in lora["breakdown_s"].values())  # taken out, not a negative line
    assert lora["breakdown_s"]["optimizer_step"] < full["breakdown_s"]["optimizer_step"] / 100


@pytest.mark.needs_torch
@pytest.mark.parametrize("cfg,rank", [("llama-3-8b.json", 16), ("qwen3-8b.json", 64),
                                      ("qwen2.5-7b.json", 8), ("mistral-7b.json", 32),
                                      ("phi-3-mini-4k.json", 16)])
def test_lora_parameters_equal_peft_on_the_meta_device(cfg, rank):
    # Source: peft itself (LoraConfig(r, target_modules="all-linear") on transformers' model built
    # on the meta device from the released config); exact: both count the same matrices
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")
    with open(os.path.join(CONFIGS, cfg), encoding="utf-8") as fh:
        conf = {k: v for k, v in json.load(fh).items()
                if k not in ("auto_map", "quantization_config", "torch_dtype", "dtype")}
    with torch.device("meta"):
        auto = transformers.AutoConfig.for_model(**conf)
        model = transformers.AutoModelForCausalLM.from_config(auto)
    model = peft.get_peft_model(model, peft.LoraConfig(r=rank, target_modules="all-linear"))
    trainable, _ = model.get_nb_trainable_parameters()
    args = M.build_parser().parse_args(["--hf_model_name_or_path", os.path.join(CONFIGS, cfg)])
    spec, _ = resolve_model_spec(vars(args), defaults={"num_experts": 0})
    from llmcalc.train.finetune import lora_params_per_layer
    from llmcalc.train.memory import LORA_MATRICES
    ours = sum(lora_params_per_layer(layer, h=spec["hidden_size"], rank=rank,
                                     targets=LORA_MATRICES, tp=1) for layer in spec["layers"])
    assert ours == trainable


def test_padded_batches_reach_the_masked_kernel(capsys, tmp_path):
    # transformers' sdpa_attention_forward repeats K/V whenever it is given a mask, and a padded
    # batch's attention mask reaches every layer (masking_utils skips it only without padding): a
    # padded batch keeps what a sliding window shorter than -s keeps (the measured
    # mistral-7b-sdpa-mask row above), on every layer, and more than an unpadded causal batch
    with open(os.path.join(CONFIGS, "mistral-7b.json"), encoding="utf-8") as fh:
        cfg = json.load(fh)
    out = {}
    for window, padded in ((1024, False), (None, True), (None, False)):
        path = tmp_path / f"mistral-{window}-{padded}.json"
        path.write_text(json.dumps(dict(cfg, sliding_window=window)))
        out[window, padded] = M.main(
            ["--hf_model_name_or_path", str(path), "-s", "4096", "-b", "2", "--framework",
             "pytorch", "--finetune", "lora", "--json"]
            + ["--padded-batches"] * padded)["activations_stored_bytes"]
    capsys.readouterr()
    assert out[None, True] == out[1024, False] > out[None, False]


def test_autocast_moe_experts_take_torchs_fp32_fallback(capsys):
    # transformers 5's grouped_mm experts cast their input to the weights' dtype (fp32 under
    # autocast with fp32 master weights) and torch's grouped_mm keeps its fast path for bf16 only
    # (pytorch/pytorch#162059: fp32 runs the per-expert mm loop): the experts cost at least the
    # bf16/fp32 peak ratio more than under pure bf16, which keeps the fast path
    base = ["--hf_model_name_or_path", os.path.join(CONFIGS, "qwen3-30b-a3b.json"), "-l", "4",
            "--framework", "pytorch", "--gpu", "h100", "--num-gpus", "1", "-s", "2048", "-b", "1",
            "--global-batch-size", "1", "--recompute", "none", "--attn-implementation", "sdpa",
            "--json"]
    auto, pure = T.main(base), T.main(base + ["--pure-bf16"])
    capsys.readouterr()
    a, p = (r["breakdown_s"]["compute_moe_experts"] for r in (auto, pure))
    assert a > 5 * p
