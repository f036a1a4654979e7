"""calc_transformer_mem.py's and calc_training_time.py's flags for fine-tuning as transformers +
peft + torch run it (--framework pytorch): the attention implementation, peft's lora_dropout, pure
16-bit training; their contradictions, the config fields they set and the assumption lines they
print. The formulas are in train/finetune.py."""

from ..model.kinds import layer_groups
from ..train.finetune import ATTN_IMPLEMENTATIONS, attention_kernel, torch_optimizer_state_bytes
from ..cli import finite_float


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
    g.add_argument("--pure-bf16", action="store_true",
                   help="pure 16-bit training (model.to(bfloat16), no autocast): weights, "
                   "gradients and torch AdamW's moments in bf16; = --disable-mixed-precision "
                   "--high-prec-bytes-per-val 2")


def finetune_checks(args, parser, *, eager, zero, spec):
    """The contradictions of --framework pytorch's fine-tuning flags, one parser.error each."""
    if args.attn_implementation and not eager:
        parser.error("--attn-implementation is transformers' setting: it needs --framework pytorch "
                     "(training)")
    if args.finetune == "qlora" and zero == 3:
        parser.error("--finetune qlora with ZeRO-3 / FSDP full sharding: bitsandbytes' packed "
                     "4-bit weights are not sharded as ZeRO-3 shards parameters; use -z 0-2")
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
    if lo["quantized"]:
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
            f"{8 * lo['adapter_bytes']}-bit (peft's autocast_adapter_dtype), {mode}; their "
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
                k = attention_kernel(x, s=c["sequence_length"] // c["cp"], attn_implementation=impl)
                kinds[k] = kinds.get(k, 0) + g[1]
    words = {"flash": "the flash kernel (q, k, v, output, log-sum-exp kept)",
             "flex": "flex_attention's kernel (q, k, v, output, log-sum-exp kept)",
             "efficient": "torch's memory-efficient kernel with a mask (K/V repeated to every "
                          "head, a 16-bit b*s*s bias kept)",
             "eager": "eager matmuls (fp32 softmax and its 16-bit copy kept, s*s per head)"}
    return (f"attention: --attn-implementation {impl} reaches "
            + "; ".join(f"{words[k]} on {n} layers" for k, n in kinds.items())
            + " (a training batch without padding: sdpa passes no mask unless a window is "
              "shorter than -s)")


def torch_training_fields(args, c):
    """--framework pytorch's config fields: the attention implementation (sdpa by default) and, in
    pure 16-bit or fp32 training, torch.optim's semantics: gradients and optimizer states in the
    parameter's dtype (train/finetune.torch_optimizer_state_bytes), no master copy."""
    out = {"attn_implementation": args.attn_implementation or "sdpa"}
    if not c["mixed_precision"]:
        wb = c["weight_bytes"]
        out.update(grad_bytes=args.bytes_per_grad_ele or wb,
                   opt_bytes=torch_optimizer_state_bytes(optimizer=args.optimizer, param_bytes=wb))
    return out
