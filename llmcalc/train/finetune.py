"""Fine-tuning as transformers + peft + torch run it (--framework pytorch): what a LoRA or QLoRA
layer on a frozen base keeps for backward, torch optimizers' state dtypes (pure 16-bit training),
the kernel transformers' attention implementation reaches and what it keeps, and QLoRA's storage.

Symbols: s sequence, b micro-batch, h hidden, a/kv heads (on the rank), d/d_v head widths, f MLP
width, r LoRA rank, A the 16-bit activation width (2), R the residual stream's width.

Sources, read for each rule (the module docstrings below name the lines):
  peft src/peft/tuners/lora/layer.py Linear.forward (x cast to the adapter's dtype before lora_A),
    lora/bnb.py Linear4bit.forward (no cast under autocast), utils/other.py
    prepare_model_for_kbit_training (every non-Params4bit 16-bit parameter to fp32, gradient
    checkpointing on by default), mapping get_peft_model (autocast_adapter_dtype=True: fp32
    adapters).
  bitsandbytes MatMul4Bit (keeps the packed weight only, dequantizes one weight per matmul).
  transformers 5 integrations/sdpa_attention.py (repeat_kv whenever a mask is passed; softcap
    refused), masking_utils (no mask for a plain causal batch: is_causal, the flash kernel),
    models/llama modeling eager_attention_forward (fp32 softmax, 16-bit probabilities).
  torch aten/src/ATen/native/transformers (sdp_utils: flash needs no attn_mask; a boolean mask is
    converted to a 16-bit additive bias the memory-efficient kernel keeps for its backward), and
    torch/optim adamw.py (exp_avg, exp_avg_sq = zeros_like(param): the parameter's dtype).
  Dettmers et al. 2023, "QLoRA", sec. 3 (NF4, blocks of 64, double quantization: 4.127 bits).
"""

from ..model.formulas import attention_head_dims
from ..model.sharding import attention_on_rank

QLORA_NF4_DQ_BITS = 4 + 8 / 64 + 32 / (64 * 256)  # Dettmers et al. 2023 sec. 3: 4.127 bits

# transformers' spelling of config._attn_implementation (calc_* --attn-implementation)
ATTN_IMPLEMENTATIONS = ("sdpa", "eager", "flash_attention_2", "flex_attention")

# torch.optim state tensors per parameter, each zeros_like(param) (the parameter's dtype):
# Adam/AdamW exp_avg + exp_avg_sq, SGD's momentum_buffer, Lion's exp_avg; Adafactor's factored rows
# and columns ~0 per parameter. bitsandbytes' 8-bit optimizers keep 1 B per state, any dtype.
TORCH_OPTIMIZER_STATES = {"adam": 2, "adamw": 2, "sgd": 1, "sgd-nomomentum": 0, "lion": 1,
                          "adafactor": 0}
BNB_8BIT_STATE_BYTES = {"adam8bit": 2, "adamw8bit": 2}

# LoRA's adapted matrices and the input each reads: the block's norm output or an inner tensor
NORM_INPUT_TARGETS = ("q", "k", "v", "gate", "up", "qkv", "gate_up")
# a fused matrix (Phi-3's qkv_proj, gate_up_proj) carries one adapter when any of its parts is a
# target (--lora-targets names the parts; peft's all-linear adapts the fused module)
FUSED_TARGETS = {"qkv": ("q", "k", "v"), "gate_up": ("gate", "up")}


def lora_adapted(target, targets):
    """True when LoRA adapts this matrix: named in targets, or a fused matrix with a part named."""
    return target in targets or any(t in targets for t in FUSED_TARGETS.get(target, ()))


def torch_optimizer_state_bytes(*, optimizer, param_bytes):
    """Optimizer bytes per trainable parameter under torch.optim's semantics: every state tensor
    zeros_like(param), so a pure-bf16 AdamW keeps 2 + 2 B and an fp32 one 4 + 4 B; no master copy
    (torch keeps none: a 16-bit run updates 16-bit weights). bitsandbytes' 8-bit states 1 B each."""
    if optimizer in BNB_8BIT_STATE_BYTES:
        return BNB_8BIT_STATE_BYTES[optimizer]
    return TORCH_OPTIMIZER_STATES[optimizer] * param_bytes


def attention_kernel(attn, *, s, attn_implementation, padded=False):
    """The kernel one attention block of a causal LM reaches in transformers 5 for a training batch
    of s tokens with no padding: 'flash' (sdpa with is_causal and no mask, flash_attention_2 with
    its native window), 'efficient' (sdpa given a mask: a sliding window shorter than s, or a
    chunked layer, so torch's memory-efficient kernel with a 16-bit additive bias and repeat_kv'd
    K/V), 'flex' (flex_attention: a block mask, no scores kept) or 'eager' (the s x s scores).
    padded: batches padded to their longest sequence (an attention mask with zeros: sdpa is given a
    mask on every layer; flash_attention_2 unpads instead)."""
    if attn_implementation == "eager":
        return "eager"
    if attn_implementation == "flex_attention":
        return "flex"
    if attn_implementation == "flash_attention_2":  # padding: unpadded varlen, no mask
        return "flash"
    window = attn.get("window") or 0
    masked = padded or (attn["span"] == "sliding" and window < s) or attn["span"] == "chunked"
    return "efficient" if masked else "flash"


def attention_saved_bytes(attn, *, s, b, tp, act_bytes, kernel):
    """(per-token bytes, per-micro-batch bytes) one attention core keeps for backward on one tp
    rank. flash/flex: q, k, v at their own heads, the output and an fp32 log-sum-exp per head (GQA
    read natively). efficient: K and V repeated to every query head (transformers' repeat_kv when a
    mask is passed), the same outputs, and the 16-bit additive bias torch builds from the boolean
    mask, b s^2 per layer. eager: q and the repeated K, V, the output, and per query row the fp32
    softmax output and its 16-bit copy fed to the value matmul, (4 + A) a s."""
    x = attention_on_rank(attn, tp=tp)
    a, kv = x["heads"], x["kv_heads"]
    d, dv = attention_head_dims(x)
    A = act_bytes
    if kernel in ("flash", "flex"):
        return A * (a * d + kv * d + kv * dv + a * dv) + 4 * a, 0
    if kernel == "efficient":
        return A * (a * d + a * d + a * dv + a * dv) + 4 * a, A * b * s * s
    return A * (a * d + a * d + a * dv + a * dv) + (4 + A) * a * s, 0


def fused_qkv_saved_bytes(attn, *, tp, act_bytes, kernel, frozen):
    """Per-token bytes a fused qkv projection (the attention dict's "fused": Phi-3's qkv_proj)
    keeps beyond attention_saved_bytes' q, k, v, on one tp rank. q, k and v are slices of the one
    qkv output: the v the core keeps (as given: flash and flex read GQA natively; repeat_kv returns
    v itself when kv = a) holds the whole output's storage, so its q and k parts, A (a + kv) d,
    stay alive too. Phi-3's rotary (apply_rotary_pos_emb's partial-rotary torch.cat) makes a
    contiguous (b, a, s, d) query, and SDPA's output follows the query's layout (flash allocates it
    like q), so transformers' transpose(1, 2).contiguous() before o_proj is a copy, A a d_v, that a
    trainable o_proj keeps (frozen: not kept). Measured: validation/finetune/saved_finetune.json
    (the phi-3 rows, CPU SDPA)."""
    if not attn.get("fused"):
        return 0
    x = attention_on_rank(attn, tp=tp)
    a, kv = x["heads"], x["kv_heads"]
    d, dv = attention_head_dims(x)
    out = act_bytes * (a * d + kv * d) if kernel in ("flash", "flex") or kv == a else 0
    if kernel in ("flash", "flex") and attn["rope"] and not frozen:
        out += act_bytes * a * dv
    return out


def lora_params_per_layer(layer, *, h, rank, targets, tp):
    """LoRA adapter parameters in one layer on one tp rank: r * (d_in + d_out) per adapted matrix
    (Hu et al. 2021, sec. 4.1). Each attention block's q/k/v/o (a layer reusing another layer's
    k/v projections has none to adapt) and each dense MLP's (MoE: the shared experts') gate/up/down;
    routed experts are not adapted; a fused qkv or gate_up carries one adapter
    (lora_adapted). Split over tp like the matrix they adapt (an approximation for r)."""
    n = 0
    for attn in layer["attention"]:
        a, kv = attn["heads"], attn["kv_heads"]
        d, dv = attention_head_dims(attn)
        shapes = {"q": (h, a * d), "k": (h, kv * d) if attn["kv_proj"] >= 1 else None,
                  "v": (h, kv * dv) if attn["kv_proj"] >= 2 else None, "o": (a * dv, h)}
        if attn.get("fused"):  # one qkv_proj adapter (h -> q + k + v widths)
            shapes = {"qkv": (h, a * d + kv * (d + dv)), "o": shapes["o"]}
        n += sum(rank * sum(v) for t, v in shapes.items()
                 if v and all(v) and lora_adapted(t, targets))
    for m in layer["mlp"]:
        f = m["width"] if m["kind"] == "dense" else m["shared_width"]
        shapes = {"gate": (h, f) if m["linears"] == 3 else None, "up": (h, f), "down": (f, h)}
        if m.get("fused") and m["kind"] == "dense":  # one gate_up_proj adapter (h -> 2 f)
            shapes = {"gate_up": (h, 2 * f), "down": (f, h)}
        n += sum(rank * sum(v) for t, v in shapes.items()
                 if v and all(v) and lora_adapted(t, targets))
    return n // tp


def lora_input_widths(layer, *, h, tp):
    """(target, input width on the rank) of each matrix LoRA may adapt in one layer: q, k, v, o of
    each attention block (a layer reusing another's k/v has none), gate, up, down of each dense
    MLP; a fused block's qkv and gate_up instead of their parts."""
    out = []
    for attn in layer["attention"]:
        x = attention_on_rank(attn, tp=tp)
        _, dv = attention_head_dims(x)
        if attn.get("fused"):
            out.append(("qkv", h))
        else:
            out += [("q", h)] + [("k", h)] * (x["kv_proj"] >= 1) + [("v", h)] * (x["kv_proj"] >= 2)
        out.append(("o", x["heads"] * dv))
    for m in layer["mlp"]:
        if m["kind"] == "dense":
            gate_up = [("gate_up", h)] if m.get("fused") else (
                [("gate", h)] * (m["linears"] == 3) + [("up", h)])
            out += gate_up + [("down", m["width"] // tp)]
    return out


def lora_adapter_saved_bytes(layer, *, h, tp, lora, autocast, norm_out_bytes, act_bytes,
                             mask_bytes=1):
    """Per-token bytes peft's adapters keep in one layer. Per adapted matrix, lora_A's input and
    lora_B's input (the rank-r intermediate). Plain LoRA (peft lora/layer.py) casts x to the
    adapter's dtype (fp32) and autocast casts that to 16 bits: a fresh 16-bit copy of every adapted
    input (A d_in). QLoRA (lora/bnb.py) skips peft's cast under autocast: only an input that is not
    already 16-bit (a norm output in the fp32 residual of prepare_model_for_kbit_training) gets a
    copy. Without autocast the input in the adapter's dtype is kept. lora_dropout > 0 adds its mask
    (mask_bytes: CUDA's native_dropout keeps a bool, 1 B; the CPU's scaled fp32 noise, 4 B) and its
    output is what lora_A keeps (a copy)."""
    r, targets, ad = lora["rank"], lora["targets"], lora["adapter_bytes"]
    drop, quant = lora.get("dropout", 0) > 0, lora.get("quantized", False)
    out = 0
    for t, d_in in lora_input_widths(layer, h=h, tp=tp):
        if not lora_adapted(t, targets):
            continue
        in_bytes = norm_out_bytes if t in NORM_INPUT_TARGETS else act_bytes
        if autocast:
            copy = act_bytes if (not quant or drop or in_bytes != act_bytes) else 0
            mid = act_bytes
        else:
            copy = ad if (drop or in_bytes != ad) else 0
            mid = ad
        out += d_in * (copy + (mask_bytes if drop else 0)) + r * mid
    return out


def lora_layer_activation_bytes(layer, *, s, b, h, tp, act_bytes, autocast, lora,
                                attn_implementation="sdpa", mask_bytes=1, padded=False):
    """Bytes autograd keeps for one LoRA/QLoRA layer and micro-batch on a frozen base, transformers'
    modules (memory.eager_rule_covers, dense MLPs), the residual stream carrying gradients (any
    layer after the first). Per token: each RMSNorm its fp32 input and fp32 1/rms (its weight is
    frozen, so the normalised output is not kept); q/k norms the same per head; the attention core
    (attention_saved_bytes); a gated MLP its gate output, activation output and up output (3 f: the
    frozen down matrix keeps no input), a 2-matrix MLP its fc1 output (f); frozen linears keep
    only their weight (a chunked gate|up output: the same 3 f); a fused qkv its output's storage
    (fused_qkv_saved_bytes); plus the adapters' tensors (lora_adapter_saved_bytes). The residual
    is fp32 under QLoRA (prepare_model_for_kbit_training upcasts the embeddings), else 16-bit."""
    A = act_bytes
    norm_out = lora_residual_bytes(lora, act_bytes=A)  # the norms' output dtype is their weight's
    per_tok = layer["norms"] * (4 * h + 4)
    per_mb = 0
    for attn in layer["attention"]:
        x = attention_on_rank(attn, tp=tp)
        d, _ = attention_head_dims(x)
        if x["qk_norm"] != "none":
            per_tok += (x["heads"] + x["kv_heads"]) * (4 * d + 4)
        kern = attention_kernel(attn, s=s, attn_implementation=attn_implementation, padded=padded)
        tok, mb = attention_saved_bytes(attn, s=s, b=b, tp=tp, act_bytes=A, kernel=kern)
        tok += fused_qkv_saved_bytes(attn, tp=tp, act_bytes=A, kernel=kern, frozen=True)
        per_tok, per_mb = per_tok + tok, per_mb + mb
    for m in layer["mlp"]:
        per_tok += A * (m["width"] // tp) * (3 if m["linears"] == 3 else 1)
    per_tok += lora_adapter_saved_bytes(layer, h=h, tp=tp, lora=lora, autocast=autocast,
                                        norm_out_bytes=norm_out, act_bytes=A,
                                        mask_bytes=mask_bytes)
    return s * b * per_tok + per_mb


def sharded_qlora(lora, *, zero_stage):
    """The lora dict of a QLoRA run whose 4-bit weights are sharded (FSDP FULL_SHARD or DeepSpeed
    ZeRO-3: bitsandbytes' bnb_4bit_quant_storage in the 16-bit dtype, the model loaded in it; peft
    docs accelerate/fsdp.md and deepspeed.md), else lora unchanged. TRL (is_sharded_qlora) then
    skips prepare_model_for_kbit_training, so embeddings, head and norms stay 16-bit and so does
    the residual stream, and builds the adapters with autocast_adapter_dtype=False: 16-bit
    adapters, gradients and optimizer states."""
    if not lora or not lora.get("quantized") or zero_stage < 3:
        return lora
    return dict(lora, sharded=True, adapter_bytes=2)


def lora_residual_bytes(lora, *, act_bytes):
    """The residual stream's bytes per value on a LoRA base: fp32 under QLoRA's
    prepare_model_for_kbit_training (embeddings upcast), else the base's 16-bit width (sharded
    QLoRA too: sharded_qlora)."""
    return 4 if lora.get("quantized") and not lora.get("sharded") else act_bytes


def qlora_state_bytes(*, linear_params, other_params, base_bits, other_bytes=4):
    """QLoRA's frozen base bytes: the layers' linear weights at base_bits (NF4 with double
    quantization: 4 + 8/64 + 32/(64*256) bits incl. the absmax constants, Dettmers et al. 2023
    sec. 3), every other parameter (embeddings, head, norms, biases) in fp32, as
    prepare_model_for_kbit_training casts every non-Params4bit 16-bit parameter (other_bytes 2
    when sharded: sharded_qlora)."""
    return linear_params * base_bits / 8 + other_bytes * other_params


def dequantized_working_bytes(layer, *, h, tp, act_bytes):
    """The largest 16-bit copy one QLoRA matmul dequantizes (bitsandbytes MatMul4Bit: one weight at
    a time, in the forward and again in the backward): the layer's largest linear weight (a fused
    qkv or gate_up whole)."""
    best = 0
    for attn in layer["attention"]:
        x = attention_on_rank(attn, tp=tp)
        d, dv = attention_head_dims(x)
        best = max(best, h * x["heads"] * d, h * x["heads"] * dv)
        if attn.get("fused"):
            best = max(best, h * (x["heads"] * d + x["kv_heads"] * (d + dv)))
    for m in layer["mlp"]:
        if m["kind"] == "dense":
            best = max(best, h * m["width"] // tp * (2 if m.get("fused") else 1))
    return act_bytes * best


def frozen_output_layer_bytes(*, s, b, h, V, tp, loss_bytes_per_logit):
    """Last stage under LoRA, per micro-batch: the frozen final norm's fp32 input and 1/rms (no
    normalised output kept), no head input (the head is frozen), and the loss's fp32 tensors."""
    return s * b * (4 * h + 4 + loss_bytes_per_logit * V / tp)


def peft_memory_fields(lay):
    """The memory config fields of a --framework pytorch layout's fine-tuning settings: the
    attention implementation (sdpa unless given, as calc_transformer_mem.py), the optimizer, peft's
    LoRA/QLoRA (a 16-bit base, fp32 adapters, NF4 with double quantization under QLoRA) and pure
    16-bit training (no autocast; gradients and torch.optim states in bf16)."""
    out = {"attn_implementation": lay.get("attn_implementation") or "sdpa",
           "optimizer": lay.get("optimizer") or "adamw",
           "padded_batches": bool(lay.get("padded_batches"))}
    if lay.get("finetune"):  # the Trainer's bf16 autocast at every ZeRO stage (a 16-bit base)
        out["autocast"] = True
        q = lay["finetune"] == "qlora"
        out["lora"] = sharded_qlora({"rank": lay["lora_rank"], "targets": list(lay["lora_targets"]),
                                     "base_bits": QLORA_NF4_DQ_BITS if q else 16,
                                     "adapter_bytes": 4, "dropout": lay.get("lora_dropout", 0.0),
                                     "quantized": q},
                                    zero_stage=lay["zero_stage"])
    if lay.get("pure16"):
        out.update(autocast=False, weight_bytes=2, grad_bytes=2, act_bytes=2,
                   opt_bytes=torch_optimizer_state_bytes(optimizer=out["optimizer"], param_bytes=2))
    return out


def peft_base_and_optimizer_bytes(spec, c, *, layers, ne, ex, emb):
    """(frozen base bytes, optimizer bytes per adapter parameter) of a peft run: a 16-bit base
    loaded whole at its width (embeddings and head too); QLoRA's linear weights at the quantized
    width and every other parameter in fp32 (train/finetune.qlora_state_bytes; norms counted as h
    per norm, q/k norms and biases ignored); torch.optim states in the adapters' dtype."""
    lora, h = c["lora"], spec["hidden_size"]
    if lora.get("quantized"):
        norms = sum(spec["layers"][i]["norms"] * h for i in layers)
        base = qlora_state_bytes(linear_params=ne + ex - emb - norms, other_params=emb + norms,
                                 base_bits=lora["base_bits"],
                                 other_bytes=2 if lora.get("sharded") else 4)
    else:
        base = (ne + ex) * lora["base_bits"] / 8
    return base, torch_optimizer_state_bytes(optimizer=c["optimizer"],
                                             param_bytes=lora["adapter_bytes"])


def peft_cast_bytes(spec, c, *, layers, trainable, last, tp):
    """16-bit tensors a peft step holds besides activations at its backward's start, on one rank:
    under autocast a copy of every fp32 adapter weight (cached for the forward: they are leaves
    that need gradients) and, under QLoRA, the fp32 head's 16-bit copy the head's matmul keeps (a
    frozen weight is cast afresh, not cached; sharded QLoRA's head is 16-bit already) and one
    dequantized linear weight (train/finetune.dequantized_working_bytes)."""
    lora, A = c["lora"], c["act_bytes"]
    out = A * trainable if c.get("autocast") and lora["adapter_bytes"] > A else 0
    if lora.get("quantized"):
        if last and c.get("autocast") and not lora.get("sharded"):
            out += A * spec["vocab_size"] * spec["word_embed_proj_dim"] / tp
        out += max((dequantized_working_bytes(spec["layers"][i], h=spec["hidden_size"], tp=tp,
                                              act_bytes=A) for i in layers), default=0)
    return out
