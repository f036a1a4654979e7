"""calc_training_time.py's framework flags: what a flag left out means under each training stack
(FRAMEWORK_DEFAULTS), and the one-line refusals of what a dated Megatron-LM, DeepSpeed's engine or
an fp8 recipe's library did not have. resolve_framework_defaults turns the parsed flags into the
execution knobs the cost model reads (a dict; the flags are left as parsed)."""

from ..train.deepspeed import DEEPSPEED, REDUCE_BUCKET_ELEMENTS
from ..train.kernels import FP8_CAST_BYTES_PER_ELEMENT, LEGACY_MEGATRON, TE_FP8_RECIPES


# What a left-out flag means under each framework. Megatron-LM of 2021 (de7dc40, the sc21 artifact)
# had no distributed optimizer (added 2022-02, 329fe58), all-reduced the TP input gradient
# synchronously in the backward (megatron/mpu/mappings.py; the overlap came 2021-09, 16c9044), no
# fused attention kernel (FlashAttention: Dao et al. 2022), recomputed whole layers
# (--checkpoint-activations, as every Table 1 run), reduced gradients after the backward with its
# default local DDP, in the 16-bit parameter dtype for fp16 (arguments.py forces fp32 only for
# bf16).
FRAMEWORK_DEFAULTS = {
    "megatron-2021": {"zero_stage": 0, "tp_comm_overlap": "none", "flash_attention": False,
                      "recompute": "full", "dp_overlap": False},
    # Megatron-LM of 2022-05 (d898a8991d, the sequence-parallel merge, Korthikanti et al. 2022): the
    # distributed optimizer came 2022-06-08 (d07d29df14); the backward TP collectives overlap the
    # weight-gradient GEMM (mpu/layers.py); no flash kernel; local DDP reduces after the backward
    "megatron-2022": {"zero_stage": 0, "tp_comm_overlap": "backward", "flash_attention": False,
                      "recompute": "selective", "dp_overlap": False},
    "default": {"zero_stage": 1, "tp_comm_overlap": "backward", "flash_attention": True,
                "recompute": "selective", "dp_overlap": True},
    # DeepSpeed (deepspeed/runtime/zero/config.py): ZeRO stage 0 unless configured, overlap_comm on
    # only at stage 3 (set in resolve_framework_defaults), reduce_bucket_size 5e8;
    # Megatron-DeepSpeed's tensor parallelism all-reduces synchronously; no recompute unless asked
    DEEPSPEED: {"zero_stage": 0, "tp_comm_overlap": "none", "flash_attention": True,
                "recompute": "none"}}


def check_fp8_recipe(args, parser):
    """The fp8 scaling recipe costed: --fp8-recipe (checked against --dtype and the framework's
    library), else under --dtype fp8 the framework's default (shown in --json), else None."""
    fw = args.framework
    if args.fp8_recipe:
        torchao, te = tuple(FP8_CAST_BYTES_PER_ELEMENT), TE_FP8_RECIPES
        if args.dtype != "fp8":
            parser.error(f"--fp8-recipe {args.fp8_recipe} needs --dtype fp8")
        if fw == "pytorch" and args.fp8_recipe not in torchao:
            parser.error(f"--fp8-recipe {args.fp8_recipe} is Transformer Engine's: under "
                         f"--framework pytorch (torchao) use {' or '.join(torchao)}")
        if fw == "megatron" and args.fp8_recipe not in te:
            parser.error(f"--fp8-recipe {args.fp8_recipe} is torchao's: under --framework megatron "
                         f"(Transformer Engine) use {', '.join(te)}")
        if fw not in ("pytorch", "megatron"):
            parser.error(f"--fp8-recipe is costed under --framework megatron (Transformer Engine: "
                         f"{', '.join(te)}) and pytorch (torchao: {', '.join(torchao)}), not {fw}")
        return args.fp8_recipe
    if args.dtype == "fp8" and fw in ("pytorch", "megatron"):  # the recipe the cost model uses
        return "delayed" if fw == "megatron" else "tensorwise"
    return None


def check_legacy_flags(args, parser):
    """megatron-2021 / megatron-2022 refuse, in one line, what that code did not have."""
    fw = args.framework
    y2021 = fw == "megatron-2021"
    tpo = args.tp_comm_overlap
    bad = [(args.zero_stage not in (None, 0),
            f"-z {args.zero_stage} (no distributed optimizer or ZeRO)"),
           (y2021 and tpo not in (None, "none"), f"--tp-comm-overlap {tpo} "
            "(the TP all-reduces ran synchronously)"),
           (args.tp_comm_overlap == "full", "--tp-comm-overlap full (no userbuffers overlap of the "
            "forward collectives)"),
           (args.flash_attention is True, "--flash-attention (no fused attention kernel)"),
           (y2021 and args.recompute == "selective",
            "--recompute selective (Korthikanti et al. 2022)"),
           (args.recompute == "op-sac", "--recompute op-sac (torchtitan's per-op checkpointing)"),
           (bool(args.recompute_modules),
            "--recompute-modules (Megatron-Core's selective modules)"),
           (y2021 and args.sequence_parallel, "--sequence-parallel (Korthikanti et al. 2022)"),
           (args.context_parallel_size > 1, "-cp > 1"), (args.expert_parallelism > 1, "-ep > 1"),
           (args.dtype == "fp8", "--dtype fp8"), (args.offload, "--offload"),
           (args.offload_params, "--offload-params"),
           (args.offload_activations, "--offload-activations"),
           (args.dtype == "bf16" and args.grad_reduce_dtype in ("bf16", "fp16"),
            "16-bit gradients under bf16 (arguments.py forces fp32 accumulation)"),
           (not y2021 and args.dp_overlap is True and args.grad_reduce_dtype in (None, "fp32"),
            "--dp-overlap with fp32 gradients (arguments.py: fp32 accumulation needs local DDP, "
            "which reduces after the backward; pass --grad-reduce-dtype fp16 for --DDP-impl "
            "torch)")]
    why = [w for b, w in bad if b]
    if why:
        parser.error(f"--framework {fw} has no {why[0]}")


def check_deepspeed_flags(args, parser):
    """--framework deepspeed refuses what its engine is not costed for; other frameworks refuse
    DeepSpeed's own flags."""
    fw = args.framework
    if fw != DEEPSPEED:
        for flag, val in (("--offload-device", args.offload_device),
                          ("--nvme-gbps", args.nvme_gbps)):
            if val is not None:
                parser.error(f"{flag} is DeepSpeed's: add --framework deepspeed")
        return
    bad = [(args.virtual_pipeline_size > 1,
            "-vp > 1 (its pipeline engine runs 1F1B without interleaving)"),
           (args.pipeline_parallel_size > 1 and (args.zero_stage or 0) >= 2,
            f"-z {args.zero_stage} with -pp > 1 (ZeRO-2 and ZeRO-3 are incompatible with its "
            "pipeline engine)"),
           (args.context_parallel_size > 1,
            "-cp > 1 (Ulysses sequence parallelism is not costed here)"),
           (args.expert_parallelism > 1, "-ep > 1 (DeepSpeed-MoE is not costed here)"),
           (args.tp_comm_overlap == "full", "--tp-comm-overlap full"),
           (args.search, "--search (one layout at a time)"),
           (bool(args.offload_activations),
            "--offload-activations (its cpu_checkpointing is not costed here)")]
    why = [w for b, w in bad if b]
    if why:
        parser.error(f"--framework {fw} has no {why[0]}")


def deepspeed_knobs(args, parser, knobs):
    """DeepSpeed's own defaults into `knobs`: overlap_comm at ZeRO-3 only, and --offload-params as
    ZeRO-3's offload_param on --offload-device, with its rules."""
    if knobs["dp_overlap"] is None:  # overlap_comm's default (zero/config.py overlap_comm_valid)
        knobs["dp_overlap"] = knobs["zero_stage"] == 3
    if args.offload_device and not (args.offload or args.offload_params):
        parser.error("--offload-device needs --offload (optimizer states) or --offload-params "
                     "(weights)")
    # one flag for weights in host memory: under DeepSpeed it is ZeRO-3's offload_param
    knobs["offload_param"] = (args.offload_device or "cpu") if args.offload_params else None
    if knobs["offload_param"] and knobs["zero_stage"] != 3:
        parser.error(f"--offload-params under --framework deepspeed needs -z 3 (DeepSpeed "
                     f"offloads parameters at stage 3 only), not -z {knobs['zero_stage']}")
    if "nvme" in (args.offload_device, knobs["offload_param"]) and args.nvme_gbps is None:
        parser.error("NVMe offload needs --nvme-gbps: the drives' read/write bandwidth per GPU "
                     "(none is assumed)")


def resolve_framework_defaults(args, parser):
    """The execution knobs the cost model reads, each the flag as given or, left out, the
    framework's default (FRAMEWORK_DEFAULTS): zero_stage, tp_comm_overlap, flash_attention,
    recompute, dp_overlap, fp8_recipe, offload_param, dp_bucket_mparams, grad_reduce_dtype (a new
    dict; `args` is left as parsed). Refuses, in one line, a megatron-2021 or megatron-2022 run
    asking for what that code did not have, and what DeepSpeed's engine is not costed for."""
    fw = args.framework
    fp8_recipe = check_fp8_recipe(args, parser)
    if args.compile and fw != "pytorch":
        why = ("has fused kernels already)" if fw != "llm-foundry"
               else "ran composer's eager modules)")
        parser.error(f"--compile costs torch.compile of an eager PyTorch stack: use it with "
                     f"--framework pytorch (--framework {fw} " + why)
    if fw in LEGACY_MEGATRON:
        check_legacy_flags(args, parser)
    check_deepspeed_flags(args, parser)
    knobs = {k: getattr(args, k) for k in ("zero_stage", "tp_comm_overlap", "flash_attention",
                                           "recompute", "dp_overlap")}
    for k, v in FRAMEWORK_DEFAULTS.get(fw, FRAMEWORK_DEFAULTS["default"]).items():
        if knobs[k] is None:
            knobs[k] = v
    knobs.update(fp8_recipe=fp8_recipe, offload_param=None)
    if fw == DEEPSPEED:
        deepspeed_knobs(args, parser, knobs)
    knobs["dp_bucket_mparams"] = args.dp_bucket_mparams
    if args.dp_bucket_mparams is None:
        knobs["dp_bucket_mparams"] = REDUCE_BUCKET_ELEMENTS / 1e6 if fw == DEEPSPEED else 40.0
    knobs["grad_reduce_dtype"] = args.grad_reduce_dtype
    if args.grad_reduce_dtype is None:
        legacy16 = fw == "megatron-2021" and args.dtype == "fp16"
        knobs["grad_reduce_dtype"] = "fp16" if legacy16 else "fp32"
    return knobs
