"""The cost of a kernel in a training step: matmul efficiency by shape (tiles, waves, split-K),
memory-bound kernels, the eager frameworks' kernels per layer, and the measured constants they use."""

import math

from ..model.formulas import attention_head_dims
from ..model.sharding import attention_on_rank, mlp_on_rank


# ------------------------------------------------------------------------------------------------
# Constants. Each comes from a named measurement, never from the training runs this script is
# judged on (VALIDATION.md, training-time section, says which is which).
# ------------------------------------------------------------------------------------------------

# GEMM tile one SM computes at a time (rows x cols of the output), as cuBLAS/CUTLASS's large-tile
# kernels for bf16 on Ampere/Hopper use (128 x 256, CUTLASS's default large tile).
GEMM_TILE = (128, 256)

# Fixed cost per kernel (launch and tail): the smallest matmul kernels in XLA's measured H100
# table (openxla/xla xla/service/gpu/model default_matmul_perf_table.txtpb, 256^3 bf16) take
# ~5.0 us. Each kernel's time is at least this.
KERNEL_FLOOR_S = 4.5e-6

# Depth of one k-block of a 16-bit tile (CUTLASS's Hopper/Ampere bf16 GEMM tiles step k by 64):
# split-K gives each slice at least one.
GEMM_K_BLOCK = 64

# Memory-bound kernels reach this fraction of HBM bandwidth (elementwise, norms, softmax, the
# optimizer step): the gpu-stream "scale" kernel (one load, one store) reaches 1737 of 2039 GB/s
# on A100-80GB (0.852) and 1704 of 2039 on H100-PCIe (0.836) (RRZE-HPC/gpu-benches, gpu-stream
# results). Used when hardware.py has no achievable bandwidth for the GPU.
MEM_BW_FRACTION = 0.85

# Compute slows while a collective runs beside it (NCCL kernels take SMs and memory bandwidth):
# Lee et al. 2025 measured about 19% on average. Applied to the overlapped time.
OVERLAP_SLOWDOWN = 0.19

# Optimizer step bytes per parameter held, counted from the kernels Megatron-LM's mixed-precision
# optimizer runs each step (megatron/core/optimizer/optimizer.py, MixedPrecisionOptimizer.step): zero
# the fp32 main-gradient buffer (write 4), the gradient norm for clipping (read 4), fused Adam (read
# gradient, master weight and two moments, 16; write the three, 12), and the copy of the master
# weights into the 16-bit model weights (read 4, write 2): 42 B. fp16 adds the loss-scale unscale and
# inf/nan check over the gradients (read 4, write 4): 50 B.
OPTIMIZER_STEP_BYTES = {"bf16": 42, "fp16": 50}

# Weight gradients are summed into an fp32 main-gradient buffer every micro-batch: Megatron-LM's
# gradient-accumulation fusion has the weight-gradient matmul read and write that fp32 buffer
# (megatron/core/tensor_parallel/layers.py, wgrad_gemm_accum_fp32: beta = 1), 4 + 4 B per weight
# per micro-batch on top of the matmul's own traffic; its epilogue does not overlap its main loop.
GRAD_ACCUM_BYTES = 8

# Megatron-LM of 2021 (--framework megatron-2021): the stack of Narayanan et al. 2021 and MT-NLG, as
# the authors' artifact runs it (NVIDIA/Megatron-LM de7dc40 "scripts for sc21", 2021-08-10,
# examples/sc21: container pytorch:20.12, --fp16, --DDP-impl local or torch). Each figure below
# belongs to that code; the default framework keeps today's kernels.
# LayerNorm: Megatron's fused kernel is apex's FusedLayerNorm ("the only difference ... is in the
# types", J. Casper, bigscience-workshop/Megatron-DeepSpeed#136); NVIDIA apex PR #1037 (2021-01-27)
# timed it on a GA100 (fp16, 32 x 512 tokens, h 1024) at 895.8 GB/s forward (read x, write y) and
# 572.2 GB/s backward (read dy and x, write dx), beside 1258 / 1163 GB/s for the persistent kernel
# Megatron-LM adopted on 2021-10-08 (commit a2fdcdf). As fractions of that GPU's achievable
# bandwidth, taking it to be an A100-40GB (1555 GB/s x gpu-stream's scale 0.889 = 1382 GB/s; the
# new kernel's 1258 sits just under it): 0.648 forward, 0.414 backward.
APEX_LAYERNORM_2021 = (895.8 / 1382.0, 572.2 / 1382.0)

# The 2021 gradient path, bytes per weight (de7dc40: megatron/model/distributed.py,
# megatron/optimizer/optimizer.py; PyTorch 1.8 autograd). Keyed by the gradient's bytes: fp16
# runs keep 16-bit gradients (--accumulate-allreduce-grads-in-fp32 is off unless bf16 forces it).
#   accumulate, per micro-batch, on top of the weight-gradient matmul's own 16-bit output (as
#     GRAD_ACCUM_BYTES counts): AccumulateGrad adds it into .grad (read 2 + 2, write 2) = 6, from
#     the second micro-batch on (charged on every one: m = 1 runs pay 6 B per weight too much);
#     into the fp32 main_grad buffer instead (the DDP hook's main_grad.add_(grad), every
#     micro-batch: read 2 + 4, write 4) = 10.
#   sync, per step: local DDP without contiguous buffers flattens the 16-bit grads (read 2, write
#     2), divides by dp (2 + 2) and copies the reduced tensor back (2 + 2) = 12; the fp32 buffer
#     is only divided (4 + 4) = 8; PyTorch DDP (--DDP-impl torch) copies each grad into its bucket
#     and back (2 + 2 twice) = 8.
#   optimizer: 16-bit grads are cast to fp32 first (main_param.grad = grad.float(): read 2, write
#     4) and no buffer is zeroed: 50 - 4 + 6 = 52 for fp16; fp32 buffers keep OPTIMIZER_STEP_BYTES.
GRAD_PATH_2021 = {2: {"accumulate": 6, "sync_local": 12, "sync_torch": 8, "optimizer": 52},
                  4: {"accumulate": 10, "sync_local": 8, "sync_torch": 8, "optimizer": None}}

# Megatron-LM of 2022 (--framework megatron-2022): the code of Korthikanti et al. 2022, NVIDIA/Megatron-LM
# d898a8991d (2022-05-25, the merge of the sequence_parallel branch), bytes per weight, keyed by the
# main gradient's bytes (4: --accumulate-allreduce-grads-in-fp32, forced for bf16; 2: plain fp16):
#   accumulate, per micro-batch: fp32 = the fused weight-gradient GEMM into main_grad
#     (mpu/layers.py wgrad_gemm_accum_fp32) = GRAD_ACCUM_BYTES; 16-bit: arguments.py turns the fusion
#     off and local DDP's hook adds .grad into the 16-bit buffer (read 2 + 2, write 2) = 6.
#   sync, per step and for any dp, dp = 1 included: model/distributed.py allreduce_gradients divides
#     the contiguous buffer in place before its all-reduce (`buffer_.data /= dp`): 2 x the bytes;
#     PyTorch DDP (--DDP-impl torch, 16-bit only) copies each grad into its bucket and back = 8.
#   optimizer: fp32 = OPTIMIZER_STEP_BYTES (zero the buffer, unscale + inf check, norm, Adam, copy);
#     16-bit fp16: zero the 16-bit buffer 2, main_param.grad = main_grad.float() (2 + 4), then the
#     fp32 kernels less their zeroing (50 - 4) = 54 (optimizer/optimizer.py, Float16Optimizer...).
GRAD_PATH_2022 = {2: {"accumulate": 6, "sync_local": 4, "sync_torch": 8, "optimizer": 54},
                  4: {"accumulate": GRAD_ACCUM_BYTES, "sync_local": 8, "sync_torch": 8, "optimizer": None}}

# CPU offload (ZeRO-Offload, Ren et al. 2021): the host link per GPU is hardware.py's
# host_link_bandwidth_bytes_per_s at accelerator.HOST_LINK_EFFICIENCY (the line rate the serving KV
# tier reads too); CPU-Adam updating 1e9 parameters per second per GPU's share of the host cores is an
# assumption, not a measurement. --search costs offload beside every layout (search_layouts).
CPU_ADAM_PARAMS_PER_S = 1.0e9


RECOMPUTE = ("none", "selective", "full")


# ------------------------------------------------------------------------------------------------
# Kernels: matmuls, attention, memory-bound work
# ------------------------------------------------------------------------------------------------

def _output_tiles(m, n, batch):
    """(output tiles, the share of their area that is real output) of a (batched) m x n product:
    GEMM_TILE, a skinny problem transposed onto the tile's long side. A short side of 64 or less
    (a decode-like product) gets a tile narrowed to it in steps of 8 (the tensor-core
    instructions' N: 8 to 256 in steps of 8 for Hopper's wgmma, 8 for Ampere's mma; PTX ISA), as
    cuBLAS runs such products near the bandwidth of reading their operands; between 64 and 256 the
    large tile's idle columns are kept, standing for a narrower tile's lower operand reuse (the
    attention products of the Megatron rows, head dims 96 and 128, run that way)."""
    tm, tn = GEMM_TILE
    if m < tm and n >= tm:
        m, n = n, m
    if n <= 64:
        tn = 8 * math.ceil(n / 8)
    tiles_m, tiles_n = math.ceil(m / tm), math.ceil(n / tn)
    return tiles_m * tiles_n * batch, (m * n) / (tiles_m * tm * tiles_n * tn)


def split_k_slices(m, n, k, *, hw, batch=1):
    """Slices the reduction is split into when the output tiles cannot fill the SMs (split-K, as
    cuBLAS and CUTLASS run skinny products: NVIDIA CUTLASS docs, "Efficient GEMM", split-K): as many
    as fill one wave, floor(SMs / tiles), each at least GEMM_K_BLOCK deep. Under gemm_efficiency's
    own terms more slices within one wave only help (the wave fills faster than the per-slice
    k-term falls), so the most that fit is the choice. 1 when the tiles fill the SMs or no SM
    count is known."""
    sms = hw.get("sms")
    tiles, _ = _output_tiles(m, n, batch)
    if not sms or tiles * 2 > sms:
        return 1
    return max(1, min(sms // tiles, k // GEMM_K_BLOCK))


def gemm_efficiency(m, n, k, *, hw, batch=1):
    """Fraction of the dense peak one (batched) matmul C[m,n] += A[m,k] B[k,n] reaches: the GPU's
    best measured rate (hw["matmul_ceiling"], Bekman's MAMF / peak) times wave quantization --
    output tiles of GEMM_TILE spread over the SMs in whole waves, the last wave partly idle, and
    edge tiles partly empty (NVIDIA "Matrix Multiplication Background" user guide, sec. on tile and
    wave quantization) -- times a short-reduction penalty k / (k + 128) (an assumption of this
    form: each output tile pays a fixed prologue/epilogue worth ~128 of k; a fit of the same form
    to XLA's measured H100 table gives ~190). A product whose tiles fill less than half the SMs
    splits its reduction over split_k_slices CTAs per tile (each slice paying the k-term on its
    k / S). With no SM count, only the ceiling and k-term."""
    tiles, fill = _output_tiles(m, n, batch)
    sms = hw.get("sms")
    slices = split_k_slices(m, n, k, hw=hw, batch=batch)
    ctas, ks = tiles * slices, k / slices
    wave = ctas / (math.ceil(ctas / sms) * sms) if sms else 1.0
    return hw["matmul_ceiling"] * fill * wave * ks / (ks + 128)


_GEMM_TIMES = {}  # gemm_time_s's answers by every value they read (a search asks each shape often)
_GEMM_TIMES_MAX = 200_000


def gemm_time_s(m, n, k, *, hw, dtype_bytes=2, batch=1):
    """Time of one (batched) matmul: FLOPs at gemm_efficiency, or reading A, B and writing C at
    achievable bandwidth when that is slower (the roofline), and at least one kernel floor. With
    split-K the S partial sums (fp32) are written and read back once more for their reduction
    (parallel split-K: a workspace in global memory and a reduction kernel, as cuBLAS's
    splitKreduce kernels run it). Remembered by the values it reads (_GEMM_TIMES)."""
    if m <= 0 or n <= 0 or k <= 0:
        return 0.0
    key = (m, n, k, dtype_bytes, batch, hw["peak"], hw["matmul_ceiling"], hw.get("sms"),
           hw["mem_bw"])
    if key not in _GEMM_TIMES:
        if len(_GEMM_TIMES) >= _GEMM_TIMES_MAX:
            _GEMM_TIMES.clear()
        _GEMM_TIMES[key] = _gemm_time_s(m, n, k, hw=hw, dtype_bytes=dtype_bytes, batch=batch)
    return _GEMM_TIMES[key]


def _gemm_time_s(m, n, k, *, hw, dtype_bytes, batch):
    """gemm_time_s, computed."""
    flops = 2.0 * m * n * k * batch
    compute = flops / (hw["peak"] * gemm_efficiency(m, n, k, hw=hw, batch=batch))
    slices = split_k_slices(m, n, k, hw=hw, batch=batch)
    partials = 2 * slices * batch * m * n * 4 if slices > 1 else 0
    memory = batch * (m * k + k * n) * dtype_bytes + batch * m * n * 2 + partials
    return max(compute, memory / hw["mem_bw"], KERNEL_FLOOR_S)


def linear_times_s(m, n, k, *, hw, dtype_bytes=2, batch=1):
    """(forward, backward) of a linear layer y[m,n] = x[m,k] W[k,n]: forward one matmul, backward
    the input gradient (m, k, reduce n) and the weight gradient (k, n, reduce m)."""
    f = gemm_time_s(m, n, k, hw=hw, dtype_bytes=dtype_bytes, batch=batch)
    b = (gemm_time_s(m, k, n, hw=hw, dtype_bytes=dtype_bytes, batch=batch)
         + gemm_time_s(k, n, m, hw=hw, dtype_bytes=dtype_bytes, batch=batch))
    return f, b


def memory_time_s(nbytes, kernels, *, hw):
    """Memory-bound kernels moving `nbytes` in all, at achievable bandwidth, each at least the
    kernel floor."""
    return max(nbytes / hw["mem_bw"], kernels * KERNEL_FLOOR_S)


# ------------------------------------------------------------------------------------------------
# Eager PyTorch (--framework pytorch | llm-foundry): the memory-bound kernels an unfused
# transformer layer launches, counted from the modules' source. Each kernel is a total of bytes
# read + written per token (per parameter for the gradient copies); a = 2 (bf16), 4 = fp32.
# ------------------------------------------------------------------------------------------------

# torch.compile of each block (--framework pytorch --compile): Inductor fuses the norms, rotary,
# activation and residual kernels into Triton kernels. Measured on our H200
# (validation/h200/results/layers.jsonl, measure_layers.py: Llama blocks of width 4096 and 2048 at
# 2 x 4096 and 1 x 8192 tokens, forward + backward, profiler kernel time): the non-matmul,
# non-attention kernels took 0.46, 0.47, 0.45 and 0.47 of their eager time (mean 0.46). The head
# (final norm and cross-entropy over fp32 logits, vocabulary 128256, 8192 tokens; head.jsonl): 3.89
# of 14.71 ms (0.26). FSDP's gradient casts and copies run outside the compiled blocks: unchanged.
COMPILE_LAYER_FACTOR = 0.46  # calibrated: compile_layer_factor
COMPILE_LOSS_FACTOR = 0.26  # calibrated: compile_loss_factor

# float8 training's casts (--dtype fp8 --framework pytorch, torchao's Float8Linear, compiled): the
# scale (amax), cast and transposed copies of each linear's input, weight and output gradient, in
# bytes per element of every operand (m k + k n + m n per linear), at achievable bandwidth. Set on
# our H200's 8B-shaped layer (validation/h200/results/layers.jsonl: width 4096, FFN 14336, 2 x 4096
# tokens, compiled, float8 Triton kernel time above bf16's): tensorwise +2.11 and +2.31 ms per layer
# (two runs; mean 2.21 ms x 4.08 TB/s / 788 M elements = 11.4 B), rowwise +5.42 ms (28.0 B). Judged
# on the 1B-shaped layer's rows (+0.93 / +2.47 ms measured) and the FSDP2 float8 steps.
FP8_CAST_TENSORWISE_BYTES = 11.4  # calibrated: torchao_fp8_cast_tensorwise_bytes
FP8_CAST_ROWWISE_BYTES = 28.0  # calibrated: torchao_fp8_cast_rowwise_bytes
FP8_CAST_BYTES_PER_ELEMENT = {"tensorwise": FP8_CAST_TENSORWISE_BYTES,
                              "rowwise": FP8_CAST_ROWWISE_BYTES}

# Transformer Engine's FP8 quantization under --framework megatron (Megatron-Core's --fp8-recipe:
# delayed, its default; tensorwise = Float8CurrentScaling; mxfp8 = MXFP8BlockScaling, Blackwell
# only), bytes per element of a linear's input (forward) or output gradient (backward) beyond what
# the producing kernel already writes in bf16, counted from TE's source (NVIDIA/TransformerEngine
# @d0067d0: pytorch/csrc/extensions/normalization.cpp, pytorch/csrc/quantizer.cpp). Keyed
# (norm-fed input, other input, output gradient); (Hopper, Blackwell) where they differ: Hopper's
# FP8 GEMMs take only the TN layout, so an operand also used transposed (every input for the
# weight gradient, every output gradient for both backward GEMMs) is written twice, row- and
# column-wise (quantizer.cpp: with_transpose = columnwise_usage && !is_non_tn_fp8_gemm_supported).
#   delayed (Float8Quantizer, the scale from past amaxes): the norm writes FP8 itself (FULLY_FUSED;
#     its one byte smaller write is not credited), Hopper then transposes it (read 1, write 1); other
#     inputs (the attention output, the activation Megatron computes) and gradients: one cast (read
#     2, write 1, + 1 transposed on Hopper).
#   tensorwise (Float8CurrentScalingQuantizer): the norm writes bf16 and its amax (FUSED_NORM_AMAX_FP8),
#     then quantize_with_amax (read 2, write 1, + 1 on Hopper); other tensors: nvte_compute_amax
#     (read 2), then nvte_quantize_v2 (read 2, write 1, + 1 on Hopper).
#   mxfp8 (MXFP8Quantizer): the norm is UNFUSED (bf16 out) unless NVTE_NORM_FWD_USE_CUDNN; every
#     quantize reads 2 and writes row- and column-wise copies (1 + 1) with an E8M0 scale per 32 each.
# Weights are quantized once per step (TE caches them across micro-batches): not costed.
TE_FP8_CAST_BYTES = {"delayed": {"hopper": (2, 4, 4), "blackwell": (0, 3, 3)},
                     "tensorwise": {"hopper": (4, 6, 6), "blackwell": (3, 5, 5)},
                     "mxfp8": {"blackwell": (2 + 2 + 2 / 32,) * 3}}
TE_FP8_RECIPES = tuple(TE_FP8_CAST_BYTES)
FP8_RECIPES = tuple(FP8_CAST_BYTES_PER_ELEMENT) + tuple(r for r in TE_FP8_RECIPES if r not in FP8_CAST_BYTES_PER_ELEMENT)

FRAMEWORKS = ("megatron", "megatron-2021", "megatron-2022", "pytorch", "llm-foundry")
LEGACY_MEGATRON = ("megatron-2021", "megatron-2022")  # no distributed optimizer, flash, CP or EP then


def grad_path(lay):
    """The dated Megatron-LM gradient path's bytes per weight (GRAD_PATH_2021 / GRAD_PATH_2022), or
    None for the default framework."""
    fw = lay.get("framework", "megatron")
    table = {"megatron-2021": GRAD_PATH_2021, "megatron-2022": GRAD_PATH_2022}.get(fw)
    return table[lay["grad_bytes"]] if table else None


def eager_framework(lay):
    """True for the eager PyTorch stacks (pytorch, llm-foundry); megatron, megatron-2021 and
    megatron-2022 run Megatron-LM's fused kernels."""
    return lay.get("framework", "megatron") in ("pytorch", "llm-foundry")


def eager_norm_kernels(*, norm, width):
    """(forward, backward) bytes per token of each kernel of one norm over `width` elements.
    layernorm: torch.nn.functional.layer_norm, one ATen kernel forward (read x, write y; MPT's
    LPLayerNorm only casts an already-bf16 input, llm-foundry llmfoundry/models/layers/norm.py)
    and two backward (dx reads dy and x, writes dx; the gamma/beta kernel reads dy and x).
    rmsnorm: HF LlamaRMSNorm.forward (transformers models/llama/modeling_llama.py; torch's
    composite rms_norm runs the same ops): x.to(fp32) 2+4, pow(2) 4+4, mean 4, add eps and rsqrt
    (per token, two floor-bound kernels), x * rsqrt 4+4, .to(bf16) 4+2, weight * 2+2 = 8 kernels;
    their autograd: weight-mul 2+2 and 2+2+2 plus the weight's token sum 2, .to 2+4, mul 4+4 and
    4+4+4 plus its row sum 4, rsqrt and add (2 tiny), mean's expand 4, pow's x.pow(1) copy 4+4,
    times 2 4+4, times grad 4+4+4, the two grads of the fp32 x summed 4+4+4, .to 2+4 = 15 kernels. Backward formulas are PyTorch autograd's (derivatives.yaml,
    FunctionsManual.cpp pow_backward: grad * 2 * x.pow(1)), as recalled, not re-read here."""
    w = width
    if norm == "none":  # non-affine (OLMo 1: F.layer_norm without weight): no gamma/beta kernel
        return [4 * w], [6 * w]
    if norm == "layernorm":
        return [4 * w], [6 * w, 4 * w]
    fwd = [6 * w, 8 * w, 4 * w, 0, 0, 8 * w, 6 * w, 4 * w]
    bwd = [4 * w, 6 * w, 2 * w, 6 * w, 8 * w, 12 * w, 4 * w, 0, 0, 4 * w, 8 * w, 8 * w, 12 * w,
           12 * w, 6 * w]
    return fwd, bwd


def eager_rope_kernels(*, width):
    """(forward, backward) bytes per token of rotary embedding on one tensor of `width` elements
    (query heads x head dim, or key heads x head dim), torchtitan's complex form
    (torchtitan/models/llama/model.py apply_rotary_emb): x.float() 2+4, complex multiply by
    freqs_cis 4+4 (the table is per position, negligible), .type_as 4+2; backward the same three
    in reverse (2+4, 4+4, 4+2). HF's rotate_half form (modeling_llama.py apply_rotary_pos_emb:
    q*cos, -x2, cat, *sin, add; 5 kernels forward, 9 backward with the slices' zero-filled grads)
    streams 22 + 30 bytes per element against these 20 + 20; the torchtitan form is the one costed."""
    return [6 * width, 8 * width, 6 * width], [6 * width, 8 * width, 6 * width]


def eager_rotate_half_kernels(*, width):
    """(forward, backward) bytes per token of transformers' rotary embedding on one tensor of
    `width` elements (models/llama apply_rotary_pos_emb: q * cos, rotate_half's negated slice and
    cat, * sin, the add): 4 + 2 + 4 + 6 + 6 = 22 B over 5 kernels forward; backward the add's and
    the two products' gradients, the cat's slices and the negation's, and the sum of q's two
    gradients: 30 B over 9 kernels (the split eager_rope_kernels' docstring gives)."""
    w = width
    return [4 * w, 2 * w, 4 * w, 6 * w, 6 * w], [4 * w, 4 * w, 2 * w, 2 * w, 4 * w, 2 * w, 4 * w,
                                                2 * w, 6 * w]


def eager_activation_kernels(*, gated, width):
    """(forward, backward) bytes per token of the MLP activation over `width` elements. Gated
    (torchtitan FeedForward.forward, HF LlamaMLP.forward: silu(w1 x) * w3 x): silu 2+2, mul 4+2;
    backward the mul's two products 4+2 each and silu_backward 4+2. Not gated (llm-foundry MPTMLP:
    nn.GELU, approximate none; llmfoundry/models/layers/ffn.py): gelu 2+2, gelu_backward 4+2."""
    if gated:
        return [4 * width, 6 * width], [6 * width, 6 * width, 6 * width]
    return [4 * width], [6 * width]


def eager_attention_glue_kernels(*, style, q_width, kv_width):
    """(forward, backward) bytes per token of the copies around the attention kernel.
    pytorch (torchtitan Attention.forward): separate wq/wk/wv, so autograd sums three input
    gradients (two adds of 2+2+2 per model-width element, charged by the caller); repeat_kv copies
    K and V when kv heads < heads (expand + reshape: read kv, write q width) and its backward sums
    the repeats (read q width, write kv); SDPA's flash kernel takes the transposed views, no copy.
    llm-foundry (llmfoundry/models/layers/attention.py flash_attn_fn at llm-foundry 5e85bd62d, with
    flash-attn's bert_padding.py): the fused Wqkv output is split into views; unpad_input gathers
    q, k and v (IndexFirstAxis: torch.gather, read + write each), pad_input allocates zeros and
    index-puts the output (write; read + write); backward: pad's gather (read + write), unpad's
    zeros + scatter_ per tensor (write; read + write), and the split's cat of the three gradients."""
    q, kv = q_width, kv_width
    if style == "transformers":  # sdpa's enable_gqa without a mask; masked: the core's own copies
        return [], []
    if style == "llm-foundry":
        fwd = [4 * q, 4 * kv, 4 * kv, 2 * q, 4 * q]
        bwd = [4 * q, 2 * q, 4 * q, 2 * kv, 4 * kv, 2 * kv, 4 * kv, 4 * (q + 2 * kv)]
        return fwd, bwd
    if kv < q:
        return [2 * kv + 2 * q] * 2, [2 * q + 2 * kv] * 2
    return [], []


def eager_fused_qkv_kernels(*, q_width, kv_width, o_width):
    """(forward, backward) bytes per token of the glue of a fused qkv projection as transformers'
    Phi-3 writes it (models/phi3 Phi3Attention.forward, apply_rotary_pos_emb), in place of separate
    projections' two input-gradient adds: forward, the rotary's torch.cat of the rotated part and an
    empty pass-through part (a copy, 2+2, of q and of k) and the contiguous copy of the attention
    output before o_proj (2+2; the output follows the cat's contiguous query); backward, for q and
    k the rotary slice's gradient (torch slice_backward: zero-fill 2, copy 2+2) and its sum with
    the pass-through part's (2+2+2), and each of the three qkv slices' gradient over the whole
    fused width W (zero-fill 2 W, copy 2+2 of the slice) summed by two adds (2+2+2 W). The
    backward's ops were listed with a TorchDispatchMode on transformers 5.24's Phi-3 and Llama
    layers (CPU, torch 2.13): these replace Llama's two input-gradient adds."""
    q, kv, w = q_width, kv_width, q_width + 2 * kv_width
    fwd = [4 * q, 4 * kv, 4 * o_width]
    bwd = ([2 * q, 4 * q, 6 * q, 2 * kv, 4 * kv, 6 * kv] + [2 * w] * 3 + [4 * q, 4 * kv, 4 * kv]
           + [6 * w] * 2)
    return fwd, bwd


def eager_layer_kernels(layer, *, h, tp, style, norm):
    """(forward, backward) lists of (bytes per token, tokens-scale) kernels of one layer's
    memory-bound work on one rank under eager PyTorch: per block its norm, the residual add
    (read 2 x 2, write 2 per element; backward the add that sums the residual and norm-input
    gradients, the same bytes), per attention its rope and glue copies, the input-gradient sums
    of separate projections (pytorch: wq, wk, wv -> 2 adds; w1, w3 -> 1 add; 2+2+2 each), per
    linear with a bias the bias-gradient token sum (read the output gradient, 2 per element; the
    forward bias add is fused in cuBLASLt's epilogue), per MLP its activation. transformers' fused
    projections (the layer kinds' "fused") run one matmul (costed as the separate ones, which
    layer_compute_s already folds into one) and their own glue: eager_fused_qkv_kernels, and a
    chunked gate|up whose backward concatenates the two gradients (read 2 f, write 2 f at 2 B).
    The scale says whether a kernel runs on all m tokens ("m") or on the sequence-parallel m / tp
    ("mt")."""
    fwd, bwd = [], []
    blocks = bool(layer["attention"]) + len(layer["mlp"])

    def put(pair, scale):
        fwd.extend((x, scale) for x in pair[0])
        bwd.extend((x, scale) for x in pair[1])

    for _ in range(blocks):
        put(eager_norm_kernels(norm=norm, width=h), "mt")
        put(([6 * h], [6 * h]), "mt")  # residual add; its gradient sum
    for attn in layer["attention"]:
        if attn["span"] == "state":
            continue  # state mixers: charged as under megatron (layer_compute_s)
        ar = attention_on_rank(attn, tp=tp)
        dq, dv = attention_head_dims(ar)
        qw, kw = ar["heads"] * dq, ar["kv_heads"] * dq
        rope = eager_rotate_half_kernels if style == "transformers" else eager_rope_kernels
        if ar.get("rope", True):
            put(rope(width=qw), "m")
            put(rope(width=kw), "m")
        put(eager_attention_glue_kernels(style=style, q_width=qw, kv_width=kw), "m")
        if style == "transformers" and attn.get("fused"):
            put(eager_fused_qkv_kernels(q_width=qw, kv_width=kw, o_width=ar["heads"] * dv), "m")
        elif style in ("pytorch", "transformers"):
            put(([], [6 * h, 6 * h]), "m")
        if attn.get("qkv_bias"):
            put(([], [2 * (qw + 2 * kw)]), "m")
        if attn.get("out_bias"):
            put(([], [2 * h]), "m")
    for mlp in layer["mlp"]:
        if mlp["kind"] != "dense":
            continue  # MoE: permutations and expert activations charged as under megatron
        mr = mlp_on_rank(mlp, tp=tp, etp=tp)
        gated = mlp["linears"] == 3
        put(eager_activation_kernels(gated=gated, width=mr["width"]), "m")
        if style == "transformers" and mlp.get("fused"):
            put(([], [8 * mr["width"]]), "m")  # chunk's backward: the two f-wide grads cat'd
        elif style in ("pytorch", "transformers") and gated:
            put(([], [6 * h]), "m")
        if mlp.get("bias"):
            put(([], [2 * mr["width"] * (mlp["linears"] - 1) + 2 * h]), "m")
    return fwd, bwd


def eager_kernels_time_s(kernels, *, tokens, tokens_sp, hw):
    """Seconds of a list of (bytes per token, scale) kernels: each at achievable bandwidth and at
    least the kernel floor (memory_time_s per kernel)."""
    t = 0.0
    for nbytes, scale in kernels:
        t += max(nbytes * (tokens_sp if scale == "mt" else tokens) / hw["mem_bw"], KERNEL_FLOOR_S)
    return t


def eager_grad_kernels_bytes(*, params, shard, reduce_bytes, fsdp, regather, microbatches):
    """(forward, backward) byte totals of the per-micro-batch gradient and cast kernels of one
    FSDP unit holding `params` weights unsharded, `shard` of them on this rank (without FSDP:
    the weights the rank holds, shard = params).
    FSDP (torch/distributed/fsdp/_runtime_utils.py _post_backward_hook, torch 2.0-2.1, which
    llm-foundry's runs used): before each all-gather the fp32 shard is cast to the bf16 parameter
    dtype (read 4, write 2 per shard element; again before the backward re-gather of FULL_SHARD);
    the unsharded bf16 gradient is the cat that autograd's split_with_sizes backward builds from
    each view's gradient (read 2, write 2); it is cast to the reduce dtype when that is fp32 (read
    2, write 4: composer's mixed_precision DEFAULT reduces in fp32, PURE in bf16); divided in place
    by the pre-divide factor before the reduce-scatter (read and write the reduce dtype; FSDP's
    default comm hook), the shard post-divided after it, cast back to fp32 if reduced in bf16, and
    from the second micro-batch on added to _saved_grad_shard (read 4 + 4, write 4).
    Without FSDP (-z 0/1): autocast casts each fp32 weight to bf16 once per forward (read 4, write
    2), the bf16 weight gradient is cast back (read 2, write 4) and, from the second micro-batch
    on, AccumulateGrad adds it into .grad (read 4 + 4, write 4); DDP's bucket copies are not costed."""
    rb, acc = reduce_bytes, (microbatches - 1) / microbatches
    if fsdp:
        fwd = [6 * shard]
        bwd = ([6 * shard] if regather else []) + [4 * params] + ([6 * params] if rb == 4 else [])
        bwd += [2 * rb * params, 2 * rb * shard] + ([(rb + 4) * shard] if rb != 4 else [])
        return fwd, bwd + ([12 * shard * acc] if acc else [])
    return [6 * params], [6 * params] + ([12 * params * acc] if acc else [])


def eager_loss_kernels(*, style, vocab):
    """(forward, backward) bytes per token of the loss over `vocab` logits (the rank's share).
    pytorch (torchtitan train.py: cross_entropy(pred.float(), labels); HF's ForCausalLMLoss also
    upcasts): .float() 2+4, log_softmax 4+4, nll_loss (per token); backward nll's zero-fill 4 and
    scatter, log_softmax_backward 4+4+4, the cast back 4+2. llm-foundry (ComposerMPTCausalLM's
    default loss_fn fused_crossentropy, flash-attn losses/cross_entropy.py over its Triton kernel,
    inplace_backward False): one kernel each way, read 2 forward, read 2 + write 2 backward."""
    V = vocab
    if style == "llm-foundry":
        return [2 * V], [4 * V]
    return [6 * V, 8 * V, 0], [4 * V, 0, 12 * V, 6 * V]


# ------------------------------------------------------------------------------------------------
# One layer, one micro-batch
# ------------------------------------------------------------------------------------------------


# fp8 / bf16 ratio of measured best matmul fractions on the same H100 (mamf-finder: 0.709 / 0.803),
# as calc_inference_latency.py uses it
FP8_OVER_BF16_MAMF = 0.883
