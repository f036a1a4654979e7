"""Step time of fine-tuning as transformers + peft + torch run it (calc_training_time.py --framework
pytorch --finetune lora|qlora, --attn-implementation): what changes against full training in one
layer's kernels, counted from the source of each module (train/finetune.py names the files).

- A frozen base linear computes no weight gradient: its backward is the input-gradient matmul only
  (autograd skips mm_mat2_backward when the weight does not require grad), so the base's backward
  is ~1x its forward, not 2x. Routed experts and routers are frozen too (their weight-gradient
  share taken as half their backward).
- Each adapted matrix adds (peft lora/layer.py Linear.forward under autocast): x cast to the fp32
  adapter dtype and autocast's cast back (plain LoRA; QLoRA's bnb layer skips the first, and the
  second where x is already 16-bit), the two adapter weights cast to 16 bits, the rank-r matmuls
  x A^T and (x A^T) B^T, the scaling multiply and the add into the base output (QLoRA: a clone of
  the base output first). Backward: the multiply's gradient, the four small matmuls (input and
  weight gradients of A and B), the casts' gradients and the sum of x's two gradients.
- QLoRA dequantizes each 4-bit linear weight to 16 bits before its matmul (bitsandbytes
  MatMul4Bit: forward, again in the backward, and again when the layer is recomputed): read the
  packed 4 bits and the double-quantized absmax (QLORA bits / 8 per parameter), write 2 B.
- transformers' eager attention (--attn-implementation eager; models/llama's
  eager_attention_forward): repeat_kv copies of K and V, the score matmul, its scaling multiply, the
  mask add, softmax in fp32 and the cast back to 16 bits, the value matmul; SDPA given a mask (a
  sliding window shorter than s) runs torch's memory-efficient kernel over the whole s x s (a bias
  cannot skip blocks) reading the 16-bit bias once per head.
"""

from ..model.formulas import attention_head_dims, expected_real_experts, query_key_pairs
from ..model.sharding import attention_on_rank, mlp_on_rank
from .finetune import (NORM_INPUT_TARGETS, QLORA_NF4_DQ_BITS, attention_kernel, lora_adapted,
                       lora_input_widths)
from .kernels import KERNEL_FLOOR_S, gemm_time_s, linear_times_s, memory_time_s
from .recompute import attention_linear_shapes


# torch's fused AdamW with clip_grad_norm_ on 16-bit parameters (--pure-bf16): read weight,
# gradient and the two moments (4 x 2 B), write weight and moments (3 x 2 B), the norm's read of
# the gradient (2 B) and the clip's scaling (2 + 2 B): 20 B per parameter (torch/optim/adamw.py
# _fused_adamw, states zeros_like(param); the fp32 count, 40 B, is within 5% of the H100's rows)
TORCH_ADAMW_PURE16_BYTES = 20
# torch's foreach AdamW (torch.optim.AdamW's default on CUDA; the Trainer's adamw_torch), per
# parameter in units of the parameter's width: the weight decay multiply 2, exp_avg.lerp_ 3,
# exp_avg_sq.mul_ 2 and addcmul_ 3, the denominator's sqrt, div_ and add_ 2 + 2 + 2, addcdiv_ into
# the weight 4 (torch/optim/adamw.py _multi_tensor_adamw, weight decay on), and clip_grad_norm_'s
# foreach norm 1 and scaling 2: 23 passes of one element width
TORCH_ADAMW_FOREACH_WIDTHS = 23


def torch_optimizer_step_bytes(lay, nbytes):
    """Bytes per parameter of the optimizer step: torch's fused AdamW on bf16 weights
    (--pure-bf16), its foreach step at either width (--optimizer-impl foreach), else `nbytes`."""
    if lay.get("optimizer_impl") == "foreach":  # 16-bit parameters, or fp32 ones under autocast
        return TORCH_ADAMW_FOREACH_WIDTHS * (2 if lay.get("pure16") else 4)
    return TORCH_ADAMW_PURE16_BYTES if lay.get("pure16") else nbytes


def fsdp_unit_bytes(per_layer, num_layers, *, lay):
    """(bytes all-gathered, bytes reduce-scattered) per FSDP unit of per_layer weights: the
    16-bit weights and all their gradients (lay's grad_bytes) in full training. Under peft only
    the adapters have gradients (trainable_params / layers): frozen weights have none, the
    Trainer gives FSDP peft's fsdp_auto_wrap_policy (trainable modules in units of their own, so
    the layers' flat
    parameters hold frozen weights and register no post-backward reduction; peft docs
    accelerate/fsdp.md, utils/other.py), FSDP2's fully_shard reduces per parameter that requires
    grad, and DeepSpeed ZeRO hooks only parameters that require grad. Sharded QLoRA gathers the
    4-bit weights as stored (QLORA_NF4_DQ_BITS / 8 B each; bitsandbytes docs fsdp_qlora.md)."""
    g = lay["grad_bytes"]
    if not (lay.get("finetune") and lay.get("trainable_params")):
        return 2 * per_layer, g * per_layer
    width = QLORA_NF4_DQ_BITS / 8 if lay["finetune"] == "qlora" else 2
    return width * per_layer, g * lay["trainable_params"] / num_layers


def pure16_grad_kernels(f, b, *, lay, fsdp):
    """eager_grad_kernels_bytes' (forward, backward) lists under --pure-bf16 without FSDP: no
    autocast weight casts, the 16-bit gradients accumulated in place at half the bytes."""
    if lay.get("pure16") and not fsdp:
        return [], [x / 2 for x in b[1:]]
    return f, b


def transformers_layer_parts(parts, layer, *, h, m, lay, hw, full):
    """Into one layer's costed parts ({name: [fwd, bwd, recompute]}, m tokens; full: recomputed),
    what transformers + peft run differently: routed experts in torch's fp32 grouped_mm fallback
    under autocast with fp32 weights (fp32_experts_s; ZeRO 0-1, not pure bf16, not LoRA), and a
    peft layer's frozen base and adapters (lora_layer_parts). Nothing without a transformers
    setting (lay's attn_implementation). A layout's fine-tuning fields are not in step.py's
    LAYER_COST_KEYS: they are fixed for one answer (--search is refused with them)."""
    if not lay.get("attn_implementation"):
        return
    if not lay.get("finetune") and not lay.get("pure16") and lay["zero_stage"] <= 1:
        moe32 = fp32_experts_s(layer, m=m, h=h, lay=lay, hw=hw)
        if moe32:
            parts["moe_experts"] = [moe32[0], moe32[1], moe32[0] if full else 0.0]
    if lay.get("finetune"):
        for key, val in lora_layer_parts(layer, h=h, m=m, lay=lay, hw=hw, full=full,
                                         costed=parts).items():
            acc = parts.setdefault(key, [0.0, 0.0, 0.0])
            for i in range(3):
                acc[i] += val[i]


def lora_layer_parts(layer, *, h, m, lay, hw, full, costed):
    """{part: (forward, backward, recompute) seconds} a peft layer on a frozen base adds to the
    layer's costs for m tokens (`costed`: the parts already costed, [fwd, bwd, rec] each): the
    base's weight-gradient matmuls taken out, the adapters' kernels and, under QLoRA, the
    dequantization (full: the layer is recomputed)."""
    tp = lay["tp"]
    parts = {}
    for key, saved in frozen_wgrad_s(layer, h=h, m=m, tp=tp, hw=hw, parts=costed).items():
        # taken out of the part that costed them (never a negative line in the breakdown)
        parts[key] = (0.0, -min(saved, costed.get(key, (0.0, 0.0))[1]), 0.0)
    f, b = lora_adapter_s(layer, h=h, m=m, tp=tp, hw=hw, lora=lay)
    parts["lora_adapters"] = (f, b, f if full else 0.0)
    if lay["finetune"] == "qlora":
        dq = dequantize_s(layer, h=h, tp=tp, hw=hw, base_bits=QLORA_NF4_DQ_BITS)
        parts["qlora_dequantize"] = (dq, dq, dq if full else 0.0)
    return parts


def frozen_ends_s(first, lf, lb, *, m, V, p, lay, hw):
    """A peft run's embedding and head, frozen: no embedding gradient, no head weight-gradient
    matmul; under QLoRA the fp32 head (prepare_model_for_kbit_training) cast to 16 bits by
    autocast every forward (read 4, write 2 per weight). Returns (first, head fwd, head bwd),
    unchanged for full training."""
    if not lay.get("finetune"):
        return first, lf, lb
    lb -= gemm_time_s(p, V, m, hw=hw)
    if lay["finetune"] == "qlora":
        lf += memory_time_s(6 * V * p, 1, hw=hw)
    return (first[0], 0.0), lf, lb


def frozen_wgrad_s(layer, *, h, m, tp, hw, parts):
    """{part: seconds} of the weight-gradient matmuls a frozen layer does not run, one
    micro-batch on one rank, by the costed part that holds them: each attention block's
    projections (attention_linear) and each dense MLP's matmuls (mlp), at the shapes
    layer_compute_s costs, and half of the routed experts' and router's backward (their
    weight-gradient share)."""
    out = {}
    for attn in layer["attention"]:
        ar = attention_on_rank(attn, tp=tp)
        n_in, n_out = attention_linear_shapes(ar, h=h)
        t = gemm_time_s(h, n_in, m, hw=hw) + (gemm_time_s(n_out, h, m, hw=hw) if n_out else 0.0)
        out["attention_linear"] = out.get("attention_linear", 0.0) + t
    for mlp in layer["mlp"]:
        mr = mlp_on_rank(mlp, tp=tp, etp=tp)
        if mlp["kind"] == "dense":
            n_in = mr["width"] * (2 if mlp["linears"] == 3 else 1)
            t = gemm_time_s(h, n_in, m, hw=hw) + gemm_time_s(mr["width"], h, m, hw=hw)
            out["mlp"] = out.get("mlp", 0.0) + t
    for key in ("moe_experts", "router"):
        if key in parts:
            out[key] = parts[key][1] / 2
    return out


def lora_adapter_s(layer, *, h, m, tp, hw, lora):
    """(forward, backward) seconds of peft's adapters in one layer for m tokens: the rank-r matmuls
    at their shapes (gemm_time_s: small, mostly at the kernel floor) and the memory-bound casts,
    multiply and adds around them, each kernel at least the floor (the module docstring)."""
    r, quant = lora["lora_rank"], lora["finetune"] == "qlora"
    f = b = 0.0
    for t, d_in in lora_input_widths(layer, h=h, tp=tp):
        if not lora_adapted(t, lora["lora_targets"]):
            continue
        d_out = _output_width(layer, t, h=h, tp=tp)
        f += gemm_time_s(m, r, d_in, hw=hw) + gemm_time_s(m, d_out, r, hw=hw)
        b += (gemm_time_s(m, r, d_out, hw=hw) + gemm_time_s(r, d_out, m, hw=hw)
              + gemm_time_s(m, d_in, r, hw=hw) + gemm_time_s(r, d_in, m, hw=hw))
        casts = 0 if quant and t not in NORM_INPUT_TARGETS else (1 if quant else 2)
        fwd = [6 * d_in * m] * casts + [4 * d_out * m, 6 * d_out * m] + [0, 0]  # + weight casts
        bwd = [4 * d_out * m] + [6 * d_in * m] * casts + [6 * d_in * m, 0, 0]
        if quant:
            fwd.append(4 * d_out * m)  # result.clone()
        f += sum(max(x / hw["mem_bw"], KERNEL_FLOOR_S) for x in fwd)
        b += sum(max(x / hw["mem_bw"], KERNEL_FLOOR_S) for x in bwd)
    return f, b


def _output_width(layer, target, *, h, tp):
    """The output width on the rank of one adaptable matrix of the layer."""
    for attn in layer["attention"]:
        x = attention_on_rank(attn, tp=tp)
        d, dv = attention_head_dims(x)
        widths = {"q": x["heads"] * d, "k": x["kv_heads"] * d, "v": x["kv_heads"] * dv, "o": h,
                  "qkv": x["heads"] * d + x["kv_heads"] * (d + dv)}
        if target in widths:
            return widths[target]
    for m in layer["mlp"]:
        if m["kind"] == "dense":
            return h if target == "down" else m["width"] // tp * (2 if target == "gate_up" else 1)
    return h


def dequantize_s(layer, *, h, tp, hw, base_bits):
    """Seconds of one pass of QLoRA's dequantization over the layer's 4-bit linear weights (one
    bitsandbytes kernel per weight: read base_bits / 8 B, write 2 B per parameter)."""
    sizes = []
    for attn in layer["attention"]:
        ar = attention_on_rank(attn, tp=tp)
        n_in, n_out = attention_linear_shapes(ar, h=h)
        sizes += [h * n_in, h * n_out] if n_out else [h * n_in]
    for mlp in layer["mlp"]:
        if mlp["kind"] == "dense":
            mr = mlp_on_rank(mlp, tp=tp, etp=tp)
            sizes += [h * mr["width"] * (2 if mlp["linears"] == 3 else 1), h * mr["width"]]
    return sum(memory_time_s(n * (base_bits / 8 + 2), 1, hw=hw) for n in sizes)


def transformers_attention_s(attn, ar, *, lay, hw, fractions):
    """(forward, backward) seconds of one attention core as transformers 5 runs it under
    --attn-implementation, or None where the fused-kernel costing applies (sdpa's flash kernel,
    flash_attention_2, flex_attention). eager: repeat_kv copies (read kv, write q width, twice) and
    their summing backward, the two batched matmuls over the full s x s, and per score the scaling
    multiply 2+2, mask add 2+2, fp32 softmax 2+4, cast 4+2 (20 B, 4 kernels) forward, and the
    cast's, softmax's and multiply's gradients 6 + 12 + 4 (22 B, 3 kernels) backward. sdpa with a
    mask: the memory-efficient kernel over all s x s pairs at the flash kernel's rate (an
    assumption), repeat_kv's copies, and the bias read once per head each way."""
    b, s, cp = lay["micro_batch_size"], lay["sequence_length"], lay["cp"]
    kern = attention_kernel(attn, s=s, attn_implementation=lay["attn_implementation"],
                            padded=bool(lay.get("padded_batches")))
    if kern not in ("eager", "efficient"):
        return None
    dq, dv = attention_head_dims(ar)
    heads, kv = ar["heads"], ar["kv_heads"]
    sq = s // cp
    m = b * sq
    rep = 0.0
    if kv < heads:
        rep = memory_time_s(2 * m * (kv + heads) * (dq + dv), 2, hw=hw)
    if kern == "eager":
        bh = b * heads
        f_qk, b_qk = linear_times_s(sq, s, dq, hw=hw, batch=bh)
        f_av, b_av = linear_times_s(sq, dv, s, hw=hw, batch=bh)
        probs = bh * sq * s
        return (f_qk + f_av + memory_time_s(20 * probs, 4, hw=hw) + rep,
                b_qk + b_av + memory_time_s(22 * probs, 3, hw=hw) + rep)
    pairs = query_key_pairs(attn, seq_len=s, attention="full")["core"]
    flops = 2 * pairs * heads * (dq + dv) * b / cp
    ff, fb = fractions
    bias = memory_time_s(2 * heads * b * sq * s, 1, hw=hw)
    return (flops / (hw["peak16"] * ff) + bias + rep,
            2.5 * flops / (hw["peak16"] * fb) + bias + rep)


def fp32_experts_s(layer, *, m, h, lay, hw):
    """(forward, backward) seconds of a layer's routed experts in transformers 5 under autocast
    with fp32 master weights, or None (no MoE block, or no fp32 peak in hardware.py): its
    grouped_mm experts (integrations/moe.py) cast their input to the weights' dtype and call
    torch's grouped_mm, whose fast path is bf16 only; fp32 takes torch's fallback, one mm per
    expert (pytorch/pytorch#161407, #162059), at the fp32 rate (TF32 is off by default), each at
    least the kernel floor; the backward runs the fallback's two grouped products the same way."""
    if not hw.get("peak32"):
        return None
    f = b = 0.0
    for mlp in layer["mlp"]:
        if mlp["kind"] != "moe":
            continue
        ep, etp = lay["ep"], lay["etp"]
        local, k_real = mlp["num_experts"] // ep, expected_real_experts(mlp)
        m_e = max(1, round(m * k_real * ep / mlp["num_experts"]))
        wd = mlp["width"] // etp
        for n, k in ((wd * (2 if mlp["linears"] == 3 else 1), h), (h, wd)):
            one = max(2 * m_e * n * k / (hw["peak32"] * hw["matmul_ceiling16"]),
                      4 * (m_e * k + k * n + m_e * n) / hw["mem_bw"], KERNEL_FLOOR_S)
            f += local * one
            b += 2 * local * one
        cast = memory_time_s(6 * m * k_real * h, 1, hw=hw)  # the input's cast to fp32, and back
        f, b = f + cast, b + cast
    g = lay["moe_imbalance"]
    return (g * f, g * b) if f else None
