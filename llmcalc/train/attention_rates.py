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
tokens, head dim 64-256). On Blackwell (B200, GB200, B300) the rates are NVIDIA's published
B200 run of the cuDNN frontend's SDPA training benchmark (head dim 128 only): a fraction of the
B200's 16-bit peak, applied to each Blackwell card at its own peak, and carried to other head dims
by the Hopper table's ratio at the same sequence (blackwell_attention_fractions). Other GPUs keep
FlashAttention-2's published fwd+bwd fraction (the record's flash_attention_fraction, accelerator.py), whichever
kernel is named.

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

# Dense bf16 peak of the card the Blackwell table was measured on (B200, NVIDIA HGX page: 36 PF
# sparse per 8 GPUs, 2,250 TFLOP/s dense per GPU; hardware.py).
BLACKWELL_TABLE_PEAK_FLOPS = 2250e12

# Published TFLOP/s on one B200 (NVIDIA/cudnn-frontend @bb37575d, benchmark/sdpa_benchmark_training/
# artifacts/sdpa_bf16_benchmark_results_NVIDIA_B200.csv with sample_b200_bf16_run.txt: NGC PyTorch
# 25.09, torch 2.9.0a0, CUDA 13.0, cuDNN 9.13.0, flash-attn 2.7.4.post1; Llama-3.1-405B's
# attention: batch 1, 128 query heads, 8 KV heads, head dim 128, causal, bf16; FLOPs counted as
# above, causal halved, backward 2.5x). "cudnn" is the pyt_cudnn backend (cuDNN's kernel, the one
# Transformer Engine runs), "fa2" the flash-attn package. {kernel: {head_dim: ((seq, fwd, bwd), ...)}}
BLACKWELL_ATTENTION_TFLOPS = {
    "fa2": {128: ((512, 63.9, 81.4), (1024, 154.4, 104.9), (2048, 254.4, 198.8), (4096, 343.0, 273.5),
                  (8192, 399.9, 318.0), (16384, 425.1, 336.6), (32768, 435.8, 345.6), (65536, 441.3, 349.0),
                  (131072, 443.7, 348.3))},
    "cudnn": {128: ((512, 84.0, 134.2), (1024, 254.5, 308.5), (2048, 478.9, 371.5), (4096, 855.7, 701.3),
                    (8192, 1171.3, 942.5), (16384, 1332.4, 1074.8), (32768, 1419.0, 1108.7),
                    (65536, 1382.3, 1073.1), (131072, 1355.4, 1047.8))},
}

# cuDNN 9.1 on Hopper, for the stacks of early 2024 (kernel "cudnn-9.1"): NVIDIA's first published
# run of the cuDNN frontend's attention benchmark (NVIDIA/cudnn-frontend @b740542, 2024-05-07,
# benchmark/benchmark_results.csv with the README's sample: cudnn backend version 90100, an H200
# at 700 W with locked clocks; bf16, 16 heads x head dim 128, causal rows; FLOPs counted as above).
# Head dim 128 only; other head dims take the "cudnn" table's ratio (an assumption).
HOPPER_CUDNN_91_TFLOPS = {128: ((4096, 542.3, 443.6), (8192, 572.9, 463.5), (16384, 586.8, 497.7),
                                (32768, 577.3, 499.7), (65536, 567.0, 503.8))}

# llm-foundry's attention call (kernel "fa2-varlen", the stack's default): MPT's flash path of the
# 2024-01 benchmark tables calls flash-attn 2's varlen entry through its pad/unpad glue
# (llm-foundry @5e85bd62d, models/layers/attention.py flash_attn_fn; image mosaicml/pytorch:2.1.0).
# No kernel-level measurement of that call exists; its steps run slower than FlashAttention-2's
# rate by a share that grows with the attention's share of the step (the s 8192 rows), on the
# A100 and the H100 alike. Fitted in the open (validation/calibration.py): the fraction of
# FlashAttention-2's rate on the GPU (the "fa2" table, else the record's published fraction) that
# this call reaches.
FA2_VARLEN_RATE = 0.54  # calibrated: llm_foundry_attention_rate

# cuDNN's fused attention before 9.1 (kernel "cudnn-pre-9.1"), as NeMo's 24.03.01 container ran it
# (March 2024; cuDNN 9.1, the first with a published training-attention run, came 2024-04): no
# rate of it is published. Fitted in the open (validation/calibration.py): the fraction of cuDNN
# 9.1's published Hopper rate (HOPPER_CUDNN_91_TFLOPS) it reaches.
CUDNN_PRE_91_RATE = 0.83  # calibrated: cudnn_pre_91_attention_rate

ATTENTION_KERNELS = ("fa2", "cudnn", "cudnn-9.1", "fa2-varlen", "cudnn-pre-9.1")

ATTENTION_KERNEL_NAMES = {"fa2": "FlashAttention-2", "cudnn": "cuDNN", "cudnn-9.1": "cuDNN 9.1",
                          "fa2-varlen": "flash-attn 2 varlen (llm-foundry's call)",
                          "cudnn-pre-9.1": "cuDNN before 9.1"}

# a kernel known only as a share of another's measured rates: {name: (that kernel, share)}
SCALED_KERNELS = {"fa2-varlen": ("fa2", FA2_VARLEN_RATE),
                  "cudnn-pre-9.1": ("cudnn-9.1", CUDNN_PRE_91_RATE)}


def kernel_and_rate(kernel):
    """(the kernel whose rates apply, the share of them reached): "fa2-varlen" runs at
    FA2_VARLEN_RATE of FlashAttention-2's, "cudnn-pre-9.1" at CUDNN_PRE_91_RATE of cuDNN 9.1's;
    every other kernel at its own rates."""
    return SCALED_KERNELS.get(kernel, (kernel, 1.0))


def _interp(x, xs, ys):
    """Linear interpolation of ys over ascending xs at x, held flat beyond the ends."""
    if x <= xs[0]:
        return ys[0]
    for i in range(1, len(xs)):
        if x <= xs[i]:
            t = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
            return ys[i - 1] + t * (ys[i] - ys[i - 1])
    return ys[-1]


def _table_fractions(table, peak, *, head_dim, seq):
    """(forward, backward) fraction of `peak` from a {head_dim: ((seq, fwd, bwd), ...)} TFLOP/s
    table, interpolated in log2(seq), then in log2(head_dim), held flat beyond the ends."""
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
    return fwd * 1e12 / peak, bwd * 1e12 / peak


def hopper_attention_fractions(kernel, *, head_dim, seq):
    """(forward, backward) fraction of the Hopper dense 16-bit peak for `kernel` at this head dim
    and sequence: the measured H200 table interpolated in log2(seq), then in log2(head_dim).
    "cudnn-9.1": its published head-dim-128 table times the "cudnn" table's head-dim ratio."""
    if kernel == "cudnn-9.1":
        f128, b128 = _table_fractions(HOPPER_CUDNN_91_TFLOPS, HOPPER_TABLE_PEAK_FLOPS, head_dim=128, seq=seq)
        hf, hb = hopper_attention_fractions("cudnn", head_dim=head_dim, seq=seq)
        hf0, hb0 = hopper_attention_fractions("cudnn", head_dim=128, seq=seq)
        return f128 * hf / hf0, b128 * hb / hb0
    return _table_fractions(HOPPER_ATTENTION_TFLOPS[kernel], HOPPER_TABLE_PEAK_FLOPS, head_dim=head_dim, seq=seq)


def has_attention_rates(kernel, *, family):
    """Whether `kernel` has measured rates on this GPU's kernel family (the record's kernel_family:
    "hopper" or "blackwell")."""
    kernel = kernel_and_rate(kernel)[0]
    if family == "hopper":
        return kernel in HOPPER_ATTENTION_TFLOPS or kernel == "cudnn-9.1"
    return family == "blackwell" and kernel in BLACKWELL_ATTENTION_TFLOPS


def blackwell_attention_fractions(kernel, *, head_dim, seq):
    """(forward, backward) fraction of a Blackwell card's dense 16-bit peak for `kernel`: the
    published B200 table (head dim 128) at this sequence, times the Hopper table's ratio of this
    head dim to 128 at the same sequence (an assumption: the head-dim trend of the same kernel on
    Hopper carries over; the B200 run has head dim 128 only)."""
    f128, b128 = _table_fractions(BLACKWELL_ATTENTION_TFLOPS[kernel], BLACKWELL_TABLE_PEAK_FLOPS,
                                  head_dim=128, seq=seq)
    hf, hb = hopper_attention_fractions(kernel, head_dim=head_dim, seq=seq)
    hf0, hb0 = hopper_attention_fractions(kernel, head_dim=128, seq=seq)
    return f128 * hf / hf0, b128 * hb / hb0


def default_attention_kernel(framework, *, hopper_or_newer):
    """The kernel a framework runs when none is named: on Hopper and Blackwell, cuDNN's for
    Megatron-Core (Transformer Engine selects FusedAttention on sm90 since v1.4, 2024-03, and
    "prefers cuDNN flash attention on Hopper+ architectures", NeMo docs) and today's PyTorch (SDPA's
    default, measured on Hopper: validation/h200; on Blackwell assumed the same); the flash-attn 2
    package's varlen call for llm-foundry's 2024 benchmark tables (FA2_VARLEN_RATE);
    FlashAttention-2 elsewhere."""
    if hopper_or_newer and framework in ("megatron", "pytorch"):
        return "cudnn"
    return "fa2-varlen" if framework == "llm-foundry" else "fa2"
