"""calc_transformer_mem.py's and calc_training_time.py's flags for fine-tuning as transformers +
peft + torch run it (--framework pytorch): the attention implementation, peft's lora_dropout, pure
16-bit training; their contradictions, the config fields they set and the assumption lines they
print. The formulas are in train/finetune.py."""

import argparse
from ..cli import bounded_int, finite_float
from ..model.kinds import layer_groups
from ..train.finetune import (ATTN_IMPLEMENTATIONS, attention_kernel, lora_params_per_layer,
    torch_optimizer_state_bytes)
from ..train.memory import LORA_MATRICES, OPTIMIZER_STATE_BYTES

# the layout fields calc_training_time.py's fine-tuning flags set (train/layout.Layout)
FINETUNE_LAYOUT_KEYS = ("finetune", "lora_rank", "lora_targets", "trainable_params",
                        "attn_implementation", "pure16", "optimizer", "optimizer_impl",
                        "padded_batches", "lora_dropout")


def add_finetune_args(p):
    """The flags of fine-tuning as transformers + peft + torch run it (--framework pytorch)."""
    g = p.add_argument_group("fine-tuning as transformers + peft run it (--framework pytorch)")
    g.add_argument("--attn-implementation", choices=ATTN_IMPLEMENTATIONS, default=None,
                   help="transformers' attention implementation (default sdpa): sdpa reaches the "
                   "flash kernel on a causal batch and the memory-efficient kernel with a mask "
                   "(sliding window shorter than -s: repeated K/V and a b*s*s bias); eager keeps "
                   "the s*s scores")
    g.add_argument("--lora-dropout", type=finite_float, default=0.0,
                   help="peft's lora_dropout (default 0.0, peft's; > 0 keeps a mask and a copy of "
                   "each adapted input)")
    g.add_argument("--padded-batches", action="store_true",
                   help="batches padded to their longest sequence (an attention mask with zeros): "
                   "sdpa is given a mask on every layer (memory-efficient kernel, repeated K/V, "
                   "a b*s*s bias); default: unpadded or packed batches")
    g.add_argument("--pure-bf16", action="store_true",
                   help="pure 16-bit training (model.to(bfloat16), no autocast): weights, "
                   "gradients and torch AdamW's moments in bf16; = --disable-mixed-precision "
                   "--high-prec-bytes-per-val 2")


FRAMEWORK_HELP_DEFAULT = ("default: pytorch for --finetune lora|qlora on a data-parallel layout "
                          "(transformers + peft, as most LoRA runs), else megatron")


def framework_default(args):
    """--framework when not given: pytorch for --finetune lora|qlora in training on a data-parallel
    layout (peft's LoRA runs under transformers + torch, data parallel only: the Trainer's DDP,
    FSDP or DeepSpeed), else megatron; the framework given wins. Returns (flags, note): a copy of
    the parsed flags with --framework resolved (the parsed ones stay as parsed) and a note for
    stderr when the fine-tuning rule decided it, else None."""
    if args.framework is not None:
        return args, None
    parallel = any((getattr(args, k, None) or 1) > 1 for k in (
        "tensor_parallel_size", "pipeline_parallel_size", "context_parallel_size",
        "expert_parallelism"))
    lora = getattr(args, "finetune", "full") in ("lora", "qlora")
    fw = "pytorch" if lora and not parallel and not getattr(args, "infer", False) else "megatron"
    resolved = argparse.Namespace(**{**vars(args), "framework": fw})
    if lora and fw == "pytorch":
        return resolved, (f"--finetune {args.finetune} without --framework: counted as "
                          "transformers + peft + torch run it (--framework pytorch); "
                          "--framework megatron for Megatron/NeMo")
    return resolved, None


def finetune_checks(args, parser, *, eager, zero, spec, notes):
    """The contradictions of --framework pytorch's fine-tuning flags, one parser.error each; a
    note when LoRA is counted with Megatron's fused kernels (--framework megatron)."""
    if args.finetune != "full" and not eager and not args.infer:
        notes.append(f"--finetune {args.finetune} is counted with Megatron-style fused kernels "
                     "(--framework megatron); as transformers + peft run it: --framework pytorch")
    if (args.attn_implementation or args.padded_batches) and not eager:
        flag = "--attn-implementation" if args.attn_implementation else "--padded-batches"
        parser.error(f"{flag} is transformers' setting: it needs --framework pytorch (training)")
    if args.finetune == "qlora" and zero == 3 and not eager:
        parser.error("--finetune qlora with ZeRO-3: counted as the Trainer's FSDP-QLoRA / ZeRO-3 "
                     "QLoRA runs it (4-bit weights stored in bf16 and sharded): add --framework "
                     "pytorch")
    if not 0 <= args.lora_dropout < 1:
        parser.error(f"--lora-dropout must be in [0, 1), got {args.lora_dropout:g}")
    if args.lora_dropout and args.finetune == "full":
        parser.error("--lora-dropout needs --finetune lora or qlora")
    if args.pure_bf16 and (not args.is_mixed_precision or args.high_prec_bytes_per_val):
        parser.error("--pure-bf16 is --disable-mixed-precision --high-prec-bytes-per-val 2: "
                     "give one")
    impl = args.attn_implementation or "sdpa"
    if eager and impl in ("sdpa", "flash_attention_2"):
        sinks = [x for g in layer_groups(spec) for x in g[0]["attention"] if x["sinks"]]
        if sinks:
            parser.error(f"--attn-implementation {impl}: this model's attention sinks are not in "
                         "that kernel (transformers runs them with eager or flex_attention)")


def pure_precision(args):
    """(mixed precision, high-precision bytes) after --pure-bf16."""
    if args.pure_bf16:
        return False, 2
    return args.is_mixed_precision, args.high_prec_bytes_per_val or 4


def peft_assumptions(c):
    """The assumptions of a LoRA/QLoRA run as peft and transformers run it (--framework pytorch)."""
    lo = c["lora"]
    if lo.get("sharded"):
        base = (f"QLoRA sharded by FSDP FULL_SHARD / ZeRO-3 as the Trainer and TRL run it: linear "
                f"weights NF4 with double quantization ({lo['base_bits']:.3f} bits) stored in bf16 "
                "containers and sharded, the rest of the model in bf16 (TRL's is_sharded_qlora: no "
                "prepare_model_for_kbit_training, so a 16-bit residual stream), one linear "
                "dequantized to 16 bits at a time")
    elif lo["quantized"]:
        base = (f"QLoRA as peft's k-bit recipe: linear weights NF4 with double quantization "
                f"({lo['base_bits']:.3f} bits incl. absmax constants), embeddings, head and norms "
                "upcast to fp32 by prepare_model_for_kbit_training (so the residual stream is "
                "fp32), one linear dequantized to 16 bits at a time, the fp32 head's 16-bit copy "
                "kept")
    else:
        base = f"LoRA on a frozen {lo['base_bits']:g}-bit base (loaded in that dtype)"
    mode = ("under bf16 autocast (the Trainer's --bf16), each adapter's weights cast and cached"
            if c["autocast"] else "without autocast")
    return [f"{base}; peft adapters r={lo['rank']} on {','.join(lo['targets'])} in "
            f"{8 * lo['adapter_bytes']}-bit (peft's autocast_adapter_dtype"
            + (", off under sharded QLoRA" if lo.get("sharded") else "") + f"), {mode}; their "
            f"gradients in that dtype and {c['optimizer']}'s states in it (torch.optim)",
            "activations (--framework pytorch, peft): what autograd keeps on a frozen base: the "
            "norms' fp32 inputs, the attention kernel's q/k/v/output/log-sum-exp, the MLP's gate, "
            "activation and up outputs, and per adapted matrix a 16-bit copy of its input (peft "
            "casts x to the adapter dtype, autocast back) and its rank-r intermediate"
            + (f", lora_dropout {lo['dropout']:g}'s mask and output" if lo["dropout"] else "")
            + "; the loss's fp32 tensors, 12 B per logit; the peak at the backward's start"]


def attention_text(c, spec):
    """Which kernel transformers' attention implementation reaches on this model's layers."""
    impl = c.get("attn_implementation") or "sdpa"
    kinds = {}
    for g in layer_groups(spec):
        for x in g[0]["attention"]:
            if x["span"] != "state":
                k = attention_kernel(x, s=c["sequence_length"] // c["cp"], attn_implementation=impl,
                                     padded=c.get("padded_batches", False))
                kinds[k] = kinds.get(k, 0) + g[1]
    words = {"flash": "the flash kernel (q, k, v, output, log-sum-exp kept)",
             "flex": "flex_attention's kernel (q, k, v, output, log-sum-exp kept)",
             "efficient": "torch's memory-efficient kernel with a mask (K/V repeated to every "
                          "head, a 16-bit b*s*s bias kept)",
             "eager": "eager matmuls (fp32 softmax and its 16-bit copy kept, s*s per head)"}
    return (f"attention: --attn-implementation {impl} reaches "
            + "; ".join(f"{words[k]} on {n} layers" for k, n in kinds.items())
            + (" (padded batches: a mask on every layer)" if c.get("padded_batches") else
               " (a training batch without padding: sdpa passes no mask unless a window is "
               "shorter than -s)"))


def torch_training_fields(args, c):
    """--framework pytorch's config fields: the attention implementation (sdpa by default) and, in
    pure 16-bit or fp32 training, torch.optim's semantics: gradients and optimizer states in the
    parameter's dtype (train/finetune.torch_optimizer_state_bytes), no master copy. LoRA in mixed
    precision runs under the Trainer's bf16 autocast at every ZeRO stage (its base is 16-bit
    already: no fp32 weights to keep, whatever shards them)."""
    out = {"attn_implementation": args.attn_implementation or "sdpa",
           "padded_batches": args.padded_batches}
    if c["lora"] and c["mixed_precision"]:
        out["autocast"] = True
    if not c["mixed_precision"]:
        wb = c["weight_bytes"]
        out.update(grad_bytes=args.bytes_per_grad_ele or wb,
                   opt_bytes=torch_optimizer_state_bytes(optimizer=args.optimizer, param_bytes=wb))
    return out


def add_finetune_time_args(p):
    """calc_training_time.py's fine-tuning flags, spelt as calc_transformer_mem.py spells them."""
    g = p.add_argument_group("fine-tuning as transformers + peft run it (--framework pytorch)")
    g.add_argument("--finetune", choices=("full", "lora", "qlora"), default="full",
                   help="full training, or peft's LoRA/QLoRA on a frozen base (default full): no "
                   "weight gradients for the base, the adapters' kernels, QLoRA's dequantization")
    g.add_argument("--lora-rank", type=bounded_int, default=None, help="LoRA rank r (default 16)")
    g.add_argument("--lora-targets", default=None,
                   help="comma list of q,k,v,o,gate,up,down, or all-linear (default)")
    g.add_argument("--lora-dropout", type=finite_float, default=0.0,
                   help="peft's lora_dropout (memory only; default 0.0)")
    g.add_argument("--attn-implementation", choices=ATTN_IMPLEMENTATIONS, default=None,
                   help="transformers' attention implementation: costs transformers' own kernel "
                   "chain (rotate_half rotary, eager attention's fp32 softmax, sdpa's masked "
                   "kernel); default: sdpa under --finetune, else the fused-kernel costing")
    g.add_argument("--padded-batches", action="store_true",
                   help="batches padded to their longest sequence: sdpa is given a mask on every "
                   "layer (transformers' masked kernel chain)")
    g.add_argument("--pure-bf16", action="store_true",
                   help="pure 16-bit training (no autocast): weights, gradients and torch AdamW's "
                   "moments in bf16, no fp32 casts")
    g.add_argument("--disable-mixed-precision", action="store_true",
                   help="fp32 training is not costed (16-bit matmuls are): use --pure-bf16")
    g.add_argument("--optimizer", choices=sorted(OPTIMIZER_STATE_BYTES), default="adamw",
                   help="the optimizer whose states the memory counts (default adamw)")
    g.add_argument("--optimizer-impl", choices=("fused", "foreach"), default="fused",
                   help="torch AdamW's step under --framework pytorch: fused (the Trainer's "
                   "adamw_torch_fused, its default with torch >= 2.8) or foreach "
                   "(torch.optim.AdamW's own default on CUDA: ~23 passes over the parameters)")


def lora_flags(args, parser):
    """(rank, --lora-targets text) of a LoRA/QLoRA run, defaults 16 and all-linear; either flag
    given without --finetune lora|qlora is refused in one line (it would be ignored)."""
    if args.finetune == "full":
        given = [f for f, v in (("--lora-rank", args.lora_rank),
                                ("--lora-targets", args.lora_targets)) if v is not None]
        if given:
            parser.error(f"{given[0]} needs --finetune lora or qlora")
    return (16 if args.lora_rank is None else args.lora_rank,
            "all-linear" if args.lora_targets is None else args.lora_targets)


def lora_targets_of(text, parser):
    """The adapted matrices of --lora-targets, checked (one parser.error)."""
    targets = (list(LORA_MATRICES) if text == "all-linear"
               else [x.strip() for x in text.split(",") if x.strip()])
    bad = [x for x in targets if x not in LORA_MATRICES]
    if bad or not targets:
        parser.error(f"--lora-targets: unknown {bad or 'empty'}; use q,k,v,o,gate,up,down or "
                     "all-linear")
    return tuple(targets)


def finetune_knobs(args, parser, spec, knobs):
    """The layout fields of calc_training_time.py's fine-tuning flags (FINETUNE_LAYOUT_KEYS), with
    their contradictions refused in one line: LoRA is costed as peft runs it, under --framework
    pytorch, data parallel only (the Trainer's DDP, FSDP or DeepSpeed), QLoRA not under ZeRO-3.
    transformers has no selective recompute: its runs recompute nothing unless -ca / --recompute
    full (gradient checkpointing), which `knobs` then holds."""
    fw, lora = args.framework, args.finetune != "full"
    if args.optimizer_impl != "fused" and fw != "pytorch":
        parser.error("--optimizer-impl is torch's: add --framework pytorch")
    if args.disable_mixed_precision:
        parser.error("--disable-mixed-precision: fp32 training is not costed here (its matmuls run "
                     "at TF32 or fp32 rates); for pure 16-bit training use --pure-bf16")
    if (lora or args.attn_implementation or args.pure_bf16 or args.padded_batches) \
            and fw != "pytorch":
        what = ("--finetune " + args.finetune if lora else "--attn-implementation"
                if args.attn_implementation else "--pure-bf16" if args.pure_bf16
                else "--padded-batches")
        parser.error(f"{what} is costed as transformers + peft + torch run it: add --framework "
                     f"pytorch (not --framework {fw})")
    if lora and (args.tensor_parallel_size > 1 or args.pipeline_parallel_size > 1
                 or args.context_parallel_size > 1 or args.expert_parallelism > 1):
        parser.error(f"--finetune {args.finetune} is costed as peft runs it, data parallel only "
                     "(-tp, -pp, -cp, -ep 1)")
    if lora and args.search:
        parser.error(f"--finetune {args.finetune} is costed for the layout given, not --search")
    if args.pure_bf16 and lora:
        parser.error("--pure-bf16 trains every weight in bf16; peft keeps fp32 adapters under "
                     "autocast: drop one")
    if not 0 <= args.lora_dropout < 1 or (args.lora_dropout and not lora):
        parser.error("--lora-dropout needs --finetune lora or qlora and a value in [0, 1)")
    rank, text = lora_flags(args, parser)
    targets = lora_targets_of(text, parser) if lora else ()
    impl = args.attn_implementation or ("sdpa" if lora or args.padded_batches else None)
    if impl and knobs["recompute"] not in ("none", "full"):
        if args.recompute:
            parser.error(f"--recompute {args.recompute}: transformers checkpoints whole layers "
                         "(gradient checkpointing = --recompute full) or nothing")
        knobs["recompute"] = "none"
    if impl in ("sdpa", "flash_attention_2") and any(
            x["sinks"] for g in layer_groups(spec) for x in g[0]["attention"]):
        parser.error(f"--attn-implementation {impl}: this model's attention sinks are not in that "
                     "kernel (transformers runs them with eager or flex_attention)")
    trainable = (sum(lora_params_per_layer(layer, h=spec["hidden_size"], rank=rank,
                                           targets=targets, tp=1) for layer in spec["layers"])
                 if lora else None)
    return {"finetune": args.finetune if lora else None, "lora_rank": rank if lora else 0,
            "lora_targets": targets, "trainable_params": trainable, "attn_implementation": impl,
            "pure16": bool(args.pure_bf16), "optimizer": args.optimizer,
            "optimizer_impl": args.optimizer_impl, "padded_batches": args.padded_batches,
            "lora_dropout": args.lora_dropout}


def finetune_layout(knobs):
    """The fine-tuning layout fields (FINETUNE_LAYOUT_KEYS) of the knobs, none for a full run with
    no transformers setting (so its layout, and its --json, stay as they were)."""
    if not (knobs["finetune"] or knobs["attn_implementation"] or knobs["pure16"]
            or knobs["optimizer"] != "adamw" or knobs["optimizer_impl"] != "fused"
            or knobs["padded_batches"]):
        return {}
    return {key: knobs[key] for key in FINETUNE_LAYOUT_KEYS}


def finetune_assumptions(lay):
    """calc_training_time.py's assumption lines for a layout's fine-tuning settings (none for a
    full run without them)."""
    out = []
    if lay.get("finetune"):
        q = lay["finetune"] == "qlora"
        out.append(f"{lay['finetune']} as peft runs it: r {lay['lora_rank']} on "
                   f"{','.join(lay['lora_targets'])}, {lay['trainable_params']:,} trainable "
                   "parameters; the frozen base computes no weight gradients (its backward is "
                   "the input gradients only), the head and embedding neither; per adapted "
                   "matrix peft's casts, the four rank-r matmuls, scaling and add at the kernel "
                   "floor each"
                   + ("; QLoRA dequantizes each 4-bit weight in the forward, the backward and the "
                      "recompute" if q else "")
                   + ("; FSDP/ZeRO (-z 2/3) gathers every weight (QLoRA's at 4 bits) and "
                      "reduce-scatters only the adapters' gradients (peft's fsdp_auto_wrap_policy)"
                      if lay["zero_stage"] >= 2 and lay["dp"] > 1 else "")
                   + "; MFU and HFU still count 6 N D model FLOPs (the frozen base does ~4 N D)")
    if lay.get("attn_implementation"):
        out.append(f"transformers' kernels (--attn-implementation {lay['attn_implementation']}): "
                   "rotate_half rotary, no repeat_kv under sdpa without a mask; eager attention's "
                   "fp32 softmax chain and sdpa's masked kernel over all s x s where they apply")
    if lay.get("pure16"):
        out.append("pure bf16 (--pure-bf16): no autocast casts, bf16 gradients accumulated in "
                   "place, torch AdamW on bf16 weights and moments")
    if lay.get("optimizer_impl") == "foreach":
        out.append("optimizer: torch AdamW foreach (23 passes over the parameters, weight decay "
                   "and clipping included)")
    return out
