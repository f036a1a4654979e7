"""The rate of a fused attention kernel in training: forward and backward FLOP/s by kernel, head
dim and sequence length, and which kernel a framework runs on a GPU.

FLOPs are counted as flash-attn's benchmark counts them: 4 s^2 d h forward for the score and
context products, halved when causal, and 2.5x that backward. On Hopper (H100, H200, GH200) the
rates are our own H200 measurements of torch's SDPA backends (validation/h200/results/
attention.jsonl: torch 2.11, cuDNN of CUDA 13.0; causal, bf16, heads x head dim = 4096, 32k
tokens per call, median of five): the flash backend is FlashAttention-2's kernel inside torch, the
cuDNN backend is cuDNN's wgmma kernel that SDPA picks by default on Hopper and Transformer Engine
prefers there (NeMo docs, memory_optimizations.rst: "prefers cuDNN flash attention on Hopper+
architectures, and Tri Dao flash attention on pre-Hopper"). The H200's compute is the H100 SXM's
(same die, 132 SMs, 989 dense bf16 TFLOP/s), so a rate is kept as a fraction of that peak and
applies to every Hopper card at its own 16-bit peak. Between measured points the fraction is
interpolated in log2 of the sequence and of the head dim, and held flat beyond the ends (1k-64k
tokens, head dim 64-256). Other GPUs keep FlashAttention-2's published fwd+bwd fraction
(train/kernels.py FLASH_EFFICIENCY), whichever kernel is named.

Examples:
    python calc_training_time.py -l 32 -hs 4096 --num-gpus 8 -s 8192 --attention-kernel fa2
    python calc_training_time.py -l 32 -hs 4096 --num-gpus 8 -s 8192 --attention-kernel cudnn
"""
import math

# Dense bf16 peak of the card the Hopper tables were measured on (H200 SXM = H100 SXM, NVIDIA
# H100 datasheet: 989.4 TFLOP/s without sparsity).
HOPPER_TABLE_PEAK_FLOPS = 989.4e12

# Measured TFLOP/s on one H200 (validation/h200/results/attention.jsonl, backends "flash" and
# "cudnn"), {kernel: {head_dim: ((seq, forward, backward), ...)}}. The backward is the timed
# forward + backward minus the forward.
HOPPER_ATTENTION_TFLOPS = {
    "fa2": {64: ((1024, 204, 173), (2048, 261, 215), (4096, 288, 246), (8192, 299, 263),
                 (16384, 303, 276), (32768, 307, 283), (65536, 314, 284)),
            128: ((1024, 236, 189), (2048, 292, 240), (4096, 293, 277), (8192, 327, 300),
                  (16384, 323, 321), (32768, 345, 317), (65536, 339, 322)),
            256: ((1024, 216, 165), (2048, 248, 195), (4096, 277, 235), (8192, 300, 248),
                  (16384, 307, 259), (32768, 304, 261), (65536, 285, 262))},
    "cudnn": {64: ((1024, 290, 259), (2048, 376, 335), (4096, 428, 392), (8192, 456, 402),
                   (16384, 476, 417), (32768, 479, 417), (65536, 454, 430)),
              128: ((1024, 433, 319), (2048, 487, 428), (4096, 562, 506), (8192, 602, 560),
                    (16384, 643, 524), (32768, 589, 546), (65536, 608, 536)),
              256: ((1024, 422, 265), (2048, 547, 335), (4096, 598, 372), (8192, 659, 382),
                    (16384, 699, 373), (32768, 712, 378), (65536, 609, 382))},
}
ATTENTION_KERNELS = ("fa2", "cudnn")

ATTENTION_KERNEL_NAMES = {"fa2": "FlashAttention-2", "cudnn": "cuDNN"}


def _interp(x, xs, ys):
    """Linear interpolation of ys over ascending xs at x, held flat beyond the ends."""
    if x <= xs[0]:
        return ys[0]
    for i in range(1, len(xs)):
        if x <= xs[i]:
            t = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
            return ys[i - 1] + t * (ys[i] - ys[i - 1])
    return ys[-1]


def hopper_attention_fractions(kernel, *, head_dim, seq):
    """(forward, backward) fraction of the Hopper dense 16-bit peak for `kernel` at this head dim
    and sequence: the measured table interpolated in log2(seq), then in log2(head_dim)."""
    table = HOPPER_ATTENTION_TFLOPS[kernel]
    dims = sorted(table)
    ls = math.log2(max(seq, 1))
    per_dim = []
    for d in dims:
        pts = table[d]
        xs = [math.log2(p[0]) for p in pts]
        per_dim.append((_interp(ls, xs, [p[1] for p in pts]), _interp(ls, xs, [p[2] for p in pts])))
    ld = [math.log2(d) for d in dims]
    x = math.log2(max(head_dim, 1))
    fwd = _interp(x, ld, [p[0] for p in per_dim])
    bwd = _interp(x, ld, [p[1] for p in per_dim])
    return fwd * 1e12 / HOPPER_TABLE_PEAK_FLOPS, bwd * 1e12 / HOPPER_TABLE_PEAK_FLOPS


def default_attention_kernel(framework, *, hopper):
    """The kernel a framework runs when none is named: on Hopper, cuDNN's for Megatron-Core (through
    Transformer Engine) and today's PyTorch (SDPA's default, measured: validation/h200); the
    flash-attn 2 package for llm-foundry's 2024 benchmark tables; FlashAttention-2 elsewhere."""
    if hopper and framework in ("megatron", "pytorch"):
        return "cudnn"
    return "fa2"
