"""llmcalc-finetune-kit: fine-tune steps as transformers + peft + torch run them, on whatever GPU
this machine has, measured beside calc_transformer_mem.py's and calc_training_time.py's predictions.

    pip install '.[kit]'                     # torch, transformers 5, peft (bitsandbytes for QLoRA)
    llmcalc-finetune-kit --gpu h100 --out kit_rows.csv
    llmcalc-finetune-kit --gpu h100 --cases llama-1b-lora,llama-1b-lora-ckpt
    llmcalc-finetune-kit --smoke             # CPU, tiny models, a minute: checks the kit itself

Each case builds a model from a config written here (released models' shapes, random weights, no
hub access), runs a training step as the Hugging Face Trainer does (bf16 autocast over fp32
weights for full fine-tuning; model.to(bfloat16) without autocast for pure bf16; a bf16 base with
peft's fp32 adapters under autocast for LoRA, r 16 on all linear layers, lora_alpha 32, dropout 0;
QLoRA as peft's k-bit recipe when bitsandbytes is installed: NF4, double quantization, bf16
compute, prepare_model_for_kbit_training; torch AdamW (fused on CUDA), clip_grad_norm_ 1.0,
zero_grad(set_to_none=True); gradient checkpointing via gradient_checkpointing_enable
(use_reentrant False) where the case says), and records:
  peak_bytes  torch.cuda.max_memory_allocated over one steady step (reset after --warmup steps);
  step_s      the median of --steps steps (CUDA-synchronised wall clock);
with the versions of torch, transformers, peft and bitsandbytes, and the GPU's name. Beside each it
prints our prediction (the same scripts' main() with --framework pytorch --framework-mem-gib 0 and
--gpu as given) and the signed error, and writes one CSV row per case.

--smoke runs the same code on the CPU with tiny models of the same families (peak memory is not
measured there: the CPU has no allocator statistics): tests/test_finetune_kit.py runs it when torch
is installed.
"""

import argparse
import csv
import json
import os
import statistics
import sys
import tempfile
import time

# released models' shapes (config.json fields), random weights; "sliding" layers use a window
# shorter than the cases' sequence so that sdpa is given a mask
FAMILIES = {
    "llama-1b": {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
                 "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
                 "head_dim": 64, "vocab_size": 128256, "tie_word_embeddings": True,
                 "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "max_position_embeddings": 8192},
    "qwen3-0.6b": {"model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072,
                   "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
                   "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": True,
                   "rms_norm_eps": 1e-6, "max_position_embeddings": 8192},
    "mistral-8l": {"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
                   "num_hidden_layers": 8, "num_attention_heads": 32, "num_key_value_heads": 8,
                   "head_dim": 128, "vocab_size": 32768, "sliding_window": 1024,
                   "tie_word_embeddings": False, "max_position_embeddings": 8192},
    # Phi-3-mini's block, 8 layers: fused qkv_proj and gate_up_proj (released window 2047)
    "phi3-8l": {"model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192,
                "num_hidden_layers": 8, "num_attention_heads": 32, "num_key_value_heads": 32,
                "vocab_size": 32064, "sliding_window": 2047, "tie_word_embeddings": False,
                "rms_norm_eps": 1e-5, "max_position_embeddings": 4096,
                "pad_token_id": None, "bos_token_id": None, "eos_token_id": None},  # random ids
    "qwen3-moe-8l": {"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
                     "moe_intermediate_size": 768, "num_hidden_layers": 8,
                     "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
                     "num_experts": 32, "num_experts_per_tok": 8, "norm_topk_prob": True,
                     "vocab_size": 151936, "tie_word_embeddings": False,
                     "max_position_embeddings": 8192},
}
# the smoke mode's tiny copies: every family's kind, small enough for a CPU
TINY = {"hidden_size": 64, "intermediate_size": 128, "moe_intermediate_size": 32,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "vocab_size": 256, "num_experts": 4, "num_experts_per_tok": 2,
        "sliding_window": 16}

# name: (family, mode, checkpointing, micro-batch, sequence); modes: autocast (fp32 weights under
# bf16 autocast), bf16 (pure bf16), lora, qlora
CASES = {
    "llama-1b-autocast": ("llama-1b", "autocast", False, 2, 2048),
    "llama-1b-autocast-ckpt": ("llama-1b", "autocast", True, 2, 2048),
    "llama-1b-bf16": ("llama-1b", "bf16", False, 2, 2048),
    "llama-1b-lora": ("llama-1b", "lora", False, 2, 2048),
    "llama-1b-lora-ckpt": ("llama-1b", "lora", True, 4, 2048),
    "llama-1b-qlora-ckpt": ("llama-1b", "qlora", True, 4, 2048),
    "qwen3-0.6b-autocast": ("qwen3-0.6b", "autocast", False, 2, 2048),
    "qwen3-0.6b-lora": ("qwen3-0.6b", "lora", False, 4, 2048),
    "mistral-8l-autocast": ("mistral-8l", "autocast", False, 1, 4096),
    "mistral-8l-lora-ckpt": ("mistral-8l", "lora", True, 2, 4096),
    "phi3-8l-autocast": ("phi3-8l", "autocast", False, 2, 2048),
    "phi3-8l-lora": ("phi3-8l", "lora", False, 2, 2048),
    "qwen3-moe-8l-autocast": ("qwen3-moe-8l", "autocast", False, 2, 2048),
    "qwen3-moe-8l-bf16": ("qwen3-moe-8l", "bf16", False, 2, 2048),
}
# --smoke's default cases: every family and mode the CPU can run (no QLoRA)
SMOKE_CASES = ("llama-1b-autocast", "llama-1b-bf16", "llama-1b-lora-ckpt", "mistral-8l-lora-ckpt",
               "phi3-8l-lora", "qwen3-moe-8l-autocast")
LORA_RANK = 16
COLUMNS = ("row_id", "case", "family", "mode", "checkpointing", "micro_batch", "seq", "lora_rank",
           "device", "torch", "transformers", "peft", "bitsandbytes", "peak_bytes",
           "predicted_peak_bytes", "memory_error", "step_s", "predicted_step_s", "time_error",
           "predict_mem_argv")


def config_of(family, *, smoke, seq):
    """The transformers config dict of a family (tiny under --smoke), with room for seq tokens."""
    cfg = dict(FAMILIES[family])
    if smoke:
        cfg.update({k: v for k, v in TINY.items() if k in cfg or k in ("head_dim",)})
        if "sliding_window" in FAMILIES[family]:
            cfg["sliding_window"] = min(TINY["sliding_window"], seq // 2)
    cfg["max_position_embeddings"] = max(cfg.get("max_position_embeddings", 0), seq)
    return cfg


def prediction_argv(cfg_path, *, mode, ckpt, b, s):
    """calc_transformer_mem.py's flags for a case (calc_training_time.py takes the same)."""
    argv = ["--hf_model_name_or_path", cfg_path, "-s", str(s), "-b", str(b), "--framework",
            "pytorch", "--framework-mem-gib", "0", "--attn-implementation", "sdpa",
            "--recompute", "full" if ckpt else "none"]
    if mode == "bf16":
        argv.append("--pure-bf16")
    elif mode in ("lora", "qlora"):
        argv += ["--finetune", mode, "--lora-rank", str(LORA_RANK)]
    return argv


def predict(argv, *, gpu, b):
    """(peak bytes, step seconds or None) from the two scripts' main() for one case."""
    import contextlib
    import io
    import importlib  # by name: the kit is built into no script (the build reads static imports)
    mem_main = importlib.import_module("llmcalc.tools.mem").main
    time_main = importlib.import_module("llmcalc.tools.training_time").main
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        peak = mem_main(argv + ["--json"] + (["--gpu", gpu] if gpu else []))["total_bytes"]
        step = None
        if gpu:
            t = time_main(argv + ["--gpu", gpu, "--num-gpus", "1", "--global-batch-size", str(b),
                                  "--json"])
            step = t["step_time_s"]
    return peak, step


def build_model(cfg, *, mode, ckpt, device, workdir):
    """The case's model on `device`, as the Trainer and peft set it up."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    conf = AutoConfig.for_model(**cfg)
    torch.manual_seed(0)
    if mode == "qlora":
        from peft import prepare_model_for_kbit_training
        from transformers import BitsAndBytesConfig
        path = os.path.join(workdir, "base")
        AutoModelForCausalLM.from_config(conf, dtype=torch.bfloat16).save_pretrained(path)
        q = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                               bnb_4bit_use_double_quant=True,
                               bnb_4bit_compute_dtype=torch.bfloat16)
        model = AutoModelForCausalLM.from_pretrained(path, quantization_config=q,
                                                     attn_implementation="sdpa",
                                                     device_map={"": device})
        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=ckpt,
            gradient_checkpointing_kwargs={"use_reentrant": False})
    else:
        model = AutoModelForCausalLM.from_config(conf, attn_implementation="sdpa")
        model = model.to(device, dtype=torch.float32 if mode == "autocast" else torch.bfloat16)
    if mode in ("lora", "qlora"):
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=LORA_RANK, lora_alpha=2 * LORA_RANK,
                                                 lora_dropout=0.0, target_modules="all-linear"))
    if ckpt and mode != "qlora":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if mode == "lora":
            model.enable_input_require_grads()
    model.train()
    return model


def run_case(cfg, *, mode, ckpt, b, s, device, steps, warmup, workdir):
    """(peak bytes or None, median step seconds) of the case's training step."""
    import torch
    model = build_model(cfg, mode=mode, ckpt=ckpt, device=device, workdir=workdir)
    params = [p for p in model.parameters() if p.requires_grad]
    cuda = device.startswith("cuda")
    opt = torch.optim.AdamW(params, lr=1e-5, fused=cuda)
    ids = torch.randint(0, cfg["vocab_size"], (b, s), device=device)
    autocast = mode in ("autocast", "lora", "qlora")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    times, peak = [], None
    for i in range(warmup + steps):
        if cuda and i == warmup:
            torch.cuda.reset_peak_memory_stats()
        sync()
        t0 = time.perf_counter()
        with torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
        if cuda and i == warmup:
            peak = torch.cuda.max_memory_allocated()
    del model, opt
    if cuda:
        torch.cuda.empty_cache()
    return peak, statistics.median(times)


def versions():
    """{package: version or ''} of the stack the rows ran on."""
    out = {}
    for name in ("torch", "transformers", "peft", "bitsandbytes"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = ""
    return out


def _error(measured, predicted):
    return "" if not measured or predicted is None else f"{predicted / measured - 1:+.4f}"


def run(args):
    """Run the chosen cases; returns the CSV rows (dicts)."""
    import torch
    device = "cuda" if torch.cuda.is_available() and not args.smoke else "cpu"
    dev_name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    ver = versions()
    names = (args.cases.split(",") if args.cases else
             list(SMOKE_CASES) if args.smoke else list(CASES))
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in names:
            family, mode, ckpt, b, s = CASES[name]
            if args.smoke:
                b, s = 2, 32
            if mode == "qlora" and (device != "cuda" or not ver["bitsandbytes"]):
                print(f"{name}: skipped (QLoRA needs CUDA and bitsandbytes)", file=sys.stderr)
                continue
            cfg = config_of(family, smoke=args.smoke, seq=s)
            path = os.path.join(work, f"{family}.json")
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(cfg, fh)
            argv = prediction_argv(path, mode=mode, ckpt=ckpt, b=b, s=s)
            pred_peak, pred_step = predict(argv, gpu=args.gpu, b=b)
            peak, step = run_case(cfg, mode=mode, ckpt=ckpt, b=b, s=s, device=device,
                                  steps=args.steps, warmup=args.warmup, workdir=work)
            rows.append(dict(zip(COLUMNS, (
                f"{name}@{dev_name}", name, family, mode, ckpt, b, s,
                LORA_RANK if mode in ("lora", "qlora") else 0, dev_name, ver["torch"],
                ver["transformers"], ver["peft"], ver["bitsandbytes"], peak or "", pred_peak,
                _error(peak, pred_peak), f"{step:.6f}", pred_step or "", _error(step, pred_step),
                " ".join(argv[2:])))))
            print(_line(rows[-1]), flush=True)
    return rows


def _line(r):
    gib = (lambda x: f"{x / 2**30:7.2f}" if x not in ("", None) else "      -")
    step = (lambda x: f"{float(x) * 1e3:8.1f}" if x not in ("", None) else "       -")
    return (f"{r['case']:<24} peak {gib(r['peak_bytes'])} GiB ours {gib(r['predicted_peak_bytes'])}"
            f" {r['memory_error'] or '':>8}  step {step(r['step_s'])} ms ours "
            f"{step(r['predicted_step_s'])} {r['time_error'] or '':>8}")


def build_parser():
    p = argparse.ArgumentParser(prog="llmcalc-finetune-kit", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpu", default=None,
                   help="hardware.py's name for this GPU (e.g. h100, h200, a100-80gb, l4): the "
                   "step-time prediction needs it; without it memory only")
    p.add_argument("--cases", default=None, help="comma list of " + ", ".join(CASES))
    p.add_argument("--steps", type=int, default=5, help="steps timed (median; default 5)")
    p.add_argument("--warmup", type=int, default=2, help="steps before the measured ones")
    p.add_argument("--smoke", action="store_true", help="CPU, tiny models: checks the kit")
    p.add_argument("--out", default="finetune_kit_rows.csv", help="CSV file to write")
    return p


def main(argv=None):
    p = build_parser()
    args = p.parse_args(argv)
    bad = [c for c in (args.cases or "").split(",") if c and c not in CASES]
    if bad:
        p.error(f"--cases: unknown {bad[0]} (one of {', '.join(CASES)})")
    if args.steps < 1 or args.warmup < 1:
        p.error("--steps and --warmup must be at least 1")
    if args.gpu:  # checked here: predict() runs the scripts with their stderr captured
        from ..hardware import get_accelerator
        try:
            get_accelerator(args.gpu)
        except KeyError as exc:
            p.error(f"--gpu: {exc.args[0]}")
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
        import peft  # noqa: F401
    except ImportError as exc:
        p.error(f"the kit needs torch, transformers and peft (pip install '.[kit]'): {exc}")
    rows = run(args)
    with open(args.out, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} rows written to {args.out}", file=sys.stderr)
    return rows


if __name__ == "__main__":
    main()
