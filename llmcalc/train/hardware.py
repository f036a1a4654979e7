"""The accelerator as the training step model reads it (hw): one GPU's rates, ceilings, links and
capacity at the run's dtype, resolved once by tools/training_hardware.resolve_hardware from the GPU
record (accelerator.Accelerator) and the flags that override it; train/ reads these fields and never
a GPU name."""

from ..records import Record


class TrainingHardware(Record):
    """One GPU of a training run, in SI units (built by tools/training_hardware.py only)."""

    __slots__ = ()

    FIELDS = {
        "name": "the GPU's full name, as reports print it",
        "default": "True when no --gpu was given (the default accelerator)",
        "peak": "dense peak FLOP/s at the run's --dtype (or --peak-tflops)",
        "peak16": "dense 16-bit peak FLOP/s (attention and the non-fp8 matmuls)",
        "peak32": "dense fp32 peak FLOP/s without tensor-core TF32 (None: not in hardware.py)",
        "peak_mfu": "the peak MFU is quoted against (FLOP/s)",
        "matmul_ceiling": "fraction of `peak` a large matmul sustains (MAMF x sustained factor)",
        "matmul_ceiling16": "the same at 16 bits",
        "ceiling_source": "where matmul_ceiling comes from, in words",
        "mem_bw": "bytes/s a memory-bound kernel reaches (achievable, else peak x MEM_BW_FRACTION)",
        "sms": "streaming multiprocessors for wave quantization; None: no wave term",
        "flash": "(forward, backward) FlashAttention-2 rate / 16-bit peak",
        "family": "kernel family whose measured attention rates apply (hopper, blackwell, "
                  "ampere) or None",
        "pcie": "host-to-GPU bytes/s the offload copies reach (host link x efficiency)",
        "memory_bytes": "GPU memory the fit is checked against (usable, or --gpu-memory-gib)",
        "gpus_per_node": "GPUs of one scale-up domain (or --gpus-per-node)",
        "link_bytes_per_s": "(scale-up, scale-out) bytes/s per GPU, one direction; scale-out "
                            "None inside one domain",
    }
    REQUIRED = tuple(FIELDS)
