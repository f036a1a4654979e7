"""What autograd saves per decoder layer under peft LoRA, eager attention and SDPA with a mask, in
transformers' own models (CPU; needs torch, transformers and peft: `pip install .[kit]`).

    python validation/finetune/measure_saved_finetune.py        # writes saved_finetune.json here

Setup (as tests/fixtures/measure_saved.py, whose helpers this reuses): a released config from
tests/fixtures/configs/, vocabulary shrunk to 1,000, built with 1 and 2 decoder layers so that one
layer's bytes are the difference; batch 2, sequence 16; every tensor autograd packs counted once per
storage, parameters and their casts apart. Cases:
- lora: model.to(bfloat16), peft LoraConfig(r=8, target_modules="all-linear", lora_dropout=0 or
  0.05), get_peft_model (peft keeps the adapters in fp32: autocast_adapter_dtype), under
  torch.autocast("cpu", bfloat16), as the Trainer's --bf16 runs a LoRA model loaded in bf16;
  with and without gradient_checkpointing_enable(use_reentrant=False) (+ enable_input_require_grads);
- eager: full fine-tuning, fp32 parameters under autocast, attn_implementation="eager";
- sdpa-mask: the same with SDPA on a config given sliding_window 8 < sequence 16 (a mask);
- pure16: model.to(bfloat16), SDPA, no autocast (pure 16-bit training);
- sdpa: the same with SDPA and no mask (Phi-3's fused qkv_proj and gate_up_proj; extra "config"
  overrides the released config's shape).
The CPU's SDPA reaches its flash kernel with a mask too; CUDA's does not (the efficient kernel), so
the sdpa-mask rows check the CPU path only.
"""
import json
import sys
from pathlib import Path

import torch
import transformers

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from measure_saved import V, B, S, DROP_KEYS, saved_storage_bytes  # noqa: E402

CONFIGS = ROOT / "tests" / "fixtures" / "configs"
OUT = Path(__file__).resolve().parent / "saved_finetune.json"
CASES = {  # name -> (config file, case kind, extra)
    "llama-3-8b-lora": ("llama-3-8b.json", "lora", {}),
    "llama-3-8b-lora-dropout": ("llama-3-8b.json", "lora", {"lora_dropout": 0.05}),
    "qwen3-8b-lora": ("qwen3-8b.json", "lora", {}),
    "llama-3-8b-eager": ("llama-3-8b.json", "eager", {}),
    "mistral-7b-sdpa-mask": ("mistral-7b.json", "sdpa-mask", {}),
    # fused projections (Phi3Attention.qkv_proj, Phi3MLP.gate_up_proj): full fine-tuning under
    # autocast through SDPA without a mask (window 2047 > 16), and LoRA on every linear layer
    "phi-3-mini-sdpa": ("phi-3-mini-4k.json", "sdpa", {}),
    "phi-3-mini-lora": ("phi-3-mini-4k.json", "lora", {}),
    "phi-3-mini-pure16": ("phi-3-mini-4k.json", "pure16", {}),  # model.to(bf16), no autocast
    "llama-3-8b-pure16": ("llama-3-8b.json", "pure16", {}),
    # the same block with grouped kv heads (Phi-3-medium's 40 / 10 heads at h 5120, f 17920)
    "phi-3-medium-shape-sdpa": ("phi-3-mini-4k.json", "sdpa", {"config": {
        "hidden_size": 5120, "intermediate_size": 17920, "num_attention_heads": 40,
        "num_key_value_heads": 10}}),
    "phi-3-medium-shape-lora": ("phi-3-mini-4k.json", "lora", {"config": {
        "hidden_size": 5120, "intermediate_size": 17920, "num_attention_heads": 40,
        "num_key_value_heads": 10}}),
}


def measure(cfg_dict, layers, kind, extra, ckpt):
    from transformers import AutoConfig, AutoModelForCausalLM
    attn = "eager" if kind == "eager" else "sdpa"
    cfg = AutoConfig.for_model(**dict(cfg_dict, num_hidden_layers=layers))
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn)
    if kind == "lora":
        from peft import LoraConfig, get_peft_model
        model = model.to(torch.bfloat16)
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules="all-linear",
                                                 lora_dropout=extra.get("lora_dropout", 0.0)))
    elif kind == "pure16":
        model = model.to(torch.bfloat16)
    else:
        model = model.float()
    model.train()
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    return saved_storage_bytes(model, autocast=kind != "pure16")


def main(names):
    import peft
    out = json.loads(OUT.read_text()) if OUT.exists() else {}
    for name in names:
        fname, kind, extra = CASES[name]
        cfg = {k: v for k, v in json.loads((CONFIGS / fname).read_text()).items() if k not in DROP_KEYS}
        cfg["vocab_size"] = V
        if kind == "sdpa-mask":
            cfg["sliding_window"] = 8
        cfg.update(extra.get("config", {}))
        for k in ("pad_token_id", "eos_token_id", "bos_token_id"):  # ids past the shrunk vocab
            if isinstance(cfg.get(k), int) and cfg[k] >= V:
                cfg[k] = None
        runs = {}
        for ckpt in ((False, True) if kind == "lora" else (False,)):
            one, two = (measure(cfg, n, kind, extra, ckpt) for n in (1, 2))
            runs["ckpt" if ckpt else "plain"] = {
                "layer_activation_bytes": two["activation"] - one["activation"],
                "layer_weight_copy_bytes": two["weight_copy"] - one["weight_copy"],
                "one_layer_model_activation_bytes": one["activation"]}
            print(name, ckpt, runs, flush=True)
        out[name] = {"config_file": fname, "kind": kind, "extra": extra, "batch": B, "seq": S,
                     "vocab_size": V, "torch": torch.__version__,
                     "transformers": transformers.__version__, "peft": peft.__version__,
                     "runs": runs}
    OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:] or list(CASES))
