"""One training step of one layout: compute per layer kind, its collectives and how much of them
overlaps, the pipeline schedule, data-parallel and FSDP exposure, the optimizer, and memory;
evaluate() puts them together."""

from ..model.formulas import (attention_core_flops, attention_head_dims, expected_real_experts, mla_q_macs_per_token,
    mlp_flops_per_token, query_key_pairs)
from ..model.sharding import attention_on_rank, mlp_on_rank
from ..records import Record
from .attention_rates import (blackwell_attention_fractions, has_attention_rates,
    hopper_attention_fractions, kernel_and_rate)
from .context_parallel import (A2A_COPY_KERNELS, CP_BWD_KERNELS_PER_STEP, CP_FWD_KERNELS_PER_STEP, a2a_attention_extra_bytes,
    ring_attention_extra_bytes)
from .layout import Layout
from .kernels import (APEX_LAYERNORM_2021, COMPILE_LAYER_FACTOR, FP8_CAST_BYTES_PER_ELEMENT, TE_FP8_CAST_BYTES, COMPILE_LOSS_FACTOR, CPU_ADAM_PARAMS_PER_S, GRAD_ACCUM_BYTES, KERNEL_FLOOR_S,
    LEGACY_MEGATRON, OPTIMIZER_STEP_BYTES, eager_framework, eager_grad_kernels_bytes,
    eager_kernels_time_s, eager_layer_kernels, eager_loss_kernels, eager_norm_kernels, gemm_time_s,
    grad_path, linear_times_s, memory_time_s)
from .dp_sync import comm_time_s, dp_sync_times_s
from .deepspeed import (DEEPSPEED, deepspeed_dp_exposed_s, deepspeed_p2p_factor, offload_optimizer_s,
    offload_param_fetch_s)
from .moe import FP8_SCALE_BYTES_PER_VALUE, deepep_time_s
from .finetune_step import (frozen_ends_s, fsdp_unit_bytes, pure16_grad_kernels,
    torch_optimizer_step_bytes, transformers_attention_s, transformers_layer_parts)
from .recompute import (attention_linear_shapes, block_matmuls, layer_modes, modules_of,
    recompute_key, sequence_recompute_flops)
from .memory import (all_stage_layers, layer_params_per_rank, layout_chunk_layers, layout_split,
    memory_config, stage_params_per_rank, training_memory)


def linear_operand_elements(m, n, k):
    """Elements of one linear's three operands: input m x k, weight k x n, output (gradient) m x n."""
    return m * k + k * n + m * n


def pair_operand_elements(m, m_h, *, h, n_up, n_down):
    """Operand elements of a tensor-parallel pair of linears on one rank: the column-parallel one
    (input h wide, n_up out) and the row-parallel one (n_down in, h out). The h-wide activations
    (the first's input, the second's output gradient) count m_h rows: m / tp under sequence
    parallelism with tensorwise float8, which casts the sequence shard before its all-gather
    (torchao's Float8ColwiseParallel / Float8RowwiseParallel), else all m (rowwise float8 under
    torchtitan's plain TP casts after a bf16 all-gather)."""
    up = m_h * h + h * n_up + m * n_up
    down = (m * n_down + n_down * h + m_h * h) if n_down else 0
    return up + down


def fp8_cast_time_s(elements, *, recipe, hw):
    """(forward, backward) seconds of float8 training's scale, cast and transpose kernels for
    linears with `elements` operand elements (linear_operand_elements), at the recipe's measured
    bytes per element (kernels.FP8_CAST_BYTES_PER_ELEMENT, torchao compiled). Split a third
    forward (input and weight), two thirds backward (output gradient and the transposed copies):
    an assumption."""
    t = elements * FP8_CAST_BYTES_PER_ELEMENT[recipe] / hw["mem_bw"]
    return t / 3, 2 * t / 3


def kernel_attention_fractions(attn, *, lay, hw):
    """(forward, backward) fraction of the 16-bit peak of the layout's fused attention kernel for
    this layer: its head dim (the score product's) and the sequence one kernel call sees (the
    rank's s / cp queries, or the sliding window when shorter)."""
    fam = hw.get("family")
    kernel, share = kernel_and_rate(lay["attention_kernel"])  # a stack's call of a kernel
    if not has_attention_rates(kernel, family=fam):
        f, b = hw["flash"]  # FlashAttention-2's published fraction (the record's)
        return f * share, b * share
    # the kernel's sequence: the rank's s / cp under the p2p ring; all of s (on heads / cp) under a2a
    seq = lay["sequence_length"] // (1 if lay.get("cp_comm_type") == "a2a" else lay["cp"])
    if attn.get("window"):
        seq = min(seq, attn["window"])
    rates = hopper_attention_fractions if fam == "hopper" else blackwell_attention_fractions
    f, b = rates(kernel, head_dim=attention_head_dims(attn)[0], seq=seq)
    return f * share, b * share


# The compute components of one layer (LayerCosts' "compute"), each [forward, backward, recompute]
# seconds per micro-batch; a stage's also holds embedding, output_head_and_loss and, eager,
# grad_casts_and_copies (evaluate), and the step's breakdown reads them as compute_<name>
LAYER_COMPUTE_PARTS = {
    "attention_linear": "an attention block's input and output projections",
    "attention_core": "the attention core (fused kernel, eager s x s, or a linear mixer)",
    "cp_kernels": "context parallelism's copies and merges beside the core",
    "mlp": "dense MLPs and shared experts", "moe_experts": "routed experts' grouped matmuls",
    "router": "the MoE router's matmul", "fp8_casts": "float8 scale, cast and transpose kernels",
    "memory_bound": "norms, activations, residuals, rotary, permutations (unfused or fused)",
    "grad_accumulation": "adding each micro-batch's weight gradients into the main gradients"}


class LayerCosts(Record):
    """One layer's costs for one micro-batch on one rank (layer_cost), cached per layer kind and
    the layout fields in LAYER_COST_KEYS, and summed into each stage by evaluate."""

    FIELDS = {"compute": "{LAYER_COMPUTE_PARTS name: [forward, backward, recompute] seconds}",
              "comm": "{tp, ep, cp: [forward, backward, recompute] exposed seconds} (layer_comm_s)"}
    REQUIRED = ("compute", "comm")


class _LayerWork:
    """What layer_compute_s accumulates over one layer's blocks: its compute parts and the matmuls
    TP communication overlaps (its results), and the byte and kernel counts the memory-bound and
    fp8 cast kernels are costed from once every block is seen. Also the layer's token counts and
    recompute choices, read by every block."""

    __slots__ = ("parts", "overlap", "blocks", "m", "mt", "m_cast", "a", "wb", "full", "sac",
                 "mods", "rec_core", "ew_bytes", "ew_kernels", "ew_rec_bytes", "ew_rec_kernels",
                 "fp8_elems", "te_in_norm", "te_in_other", "te_grad", "te_tensors", "other_bytes",
                 "other_kernels")

    def __init__(self, layer, lay):
        tp, cp = lay["tp"], lay["cp"]
        self.m = m = lay["micro_batch_size"] * lay["sequence_length"] // cp
        self.a = 2  # activations stay 16-bit under FP8 matmuls
        self.wb = lay["matmul_bytes"]
        self.mt = m / tp if lay["sp"] else m
        self.parts = {}
        self.overlap = {"col_wgrad": 0.0, "col_dgrad": 0.0, "row_fwd": 0.0, "col_fwd": 0.0}
        self.full = lay["recompute"] == "full"
        self.sac = lay["recompute"] == "op-sac"
        self.mods = modules_of(lay)
        self.rec_core = self.full or "core_attn" in self.mods
        # memory-bound work a selective module repeats
        self.ew_rec_bytes, self.ew_rec_kernels = 0.0, 0
        self.ew_bytes, self.ew_kernels = 0.0, 0
        self.fp8_elems = 0.0  # operand elements of the layer's fp8 linears (fp8_cast_time_s)
        # rows of the h-wide activations torchao casts: the sequence shard under tensorwise
        # (Float8ColwiseParallel casts before the all-gather); under rowwise torchtitan keeps plain
        # TP, the all-gather moves bf16 and the cast runs on all m gathered rows
        # (parallelize_llama.py @820504e: enable_float8_tensorwise_tp)
        self.m_cast = m if lay.get("fp8_recipe") == "rowwise" else self.mt
        # Transformer Engine's quantized tensors (TE_FP8_CAST_BYTES)
        self.te_in_norm = self.te_in_other = self.te_grad = 0.0
        self.te_tensors = 0
        # MoE and state-mixer elementwise work (kept under pytorch)
        self.other_bytes, self.other_kernels = 0.0, 0
        self.blocks = bool(layer["attention"]) + len(layer["mlp"])


def layer_compute_s(layer, *, h, lay, hw):
    """Per-component (forward, backward, recompute) seconds of one layer for one micro-batch on one
    rank, and the matmul pairs TP communication can overlap with. Tokens on the rank: m = b s / cp;
    every tensor-parallel rank runs all m through its 1/tp slice of each weight (Shoeybi et al.
    2019); with sequence parallelism norms, dropouts and residuals run on m / tp (Korthikanti et
    al. 2022 sec. 4.2.2). Recompute (train/recompute.py): full repeats the forward; selective its
    modules (core_attn the attention core, a fused kernel's forward included); op-sac every second
    matmul of the layer, the routed experts, router and all memory-bound work."""
    w = _LayerWork(layer, lay)
    if w.sac:  # the matmuls op-SAC recomputes, charged to their block
        for k_, n_, rec, owner in block_matmuls(layer, h=h, tp=lay["tp"], etp=lay["etp"]):
            if rec:
                _add(w.parts, owner, 0.0, 0.0, gemm_time_s(w.m, n_, k_, hw=hw, dtype_bytes=w.wb))
    for attn in layer["attention"]:
        ar = attention_on_rank(attn, tp=lay["tp"])
        _attention_linears_s(w, attn, ar, h=h, hw=hw)
        _attention_core_s(w, attn, ar, lay=lay, hw=hw)
        if ar.get("rope", True) and ar["span"] != "state":
            d = attention_head_dims(ar)[0]
            w.ew_bytes += 2 * w.a * w.m * (ar["heads"] + ar["kv_heads"]) * d
            w.ew_kernels += 1
    for mlp in layer["mlp"]:
        mr = mlp_on_rank(mlp, tp=lay["tp"], etp=lay["etp"])
        fl = mlp_flops_per_token(mr, h=h)
        if mlp["kind"] == "dense":
            _dense_mlp_s(w, mr, fl, h=h, hw=hw)
        else:
            _moe_mlp_s(w, mlp, mr, fl, h=h, lay=lay, hw=hw)
    _norms_and_residuals(w, layer, h=h, lay=lay)
    if eager_framework(lay):
        _eager_memory_bound_s(w, layer, h=h, lay=lay, hw=hw)
    else:
        _fused_memory_bound_s(w, layer, h=h, lay=lay, hw=hw)
    return w.parts, w.overlap, w.blocks


def _overlap_pair(w, n_in, h, f1, f2, hw):
    """Add a column-parallel (h -> n_in) and row-parallel linear pair's matmuls to what TP
    communication overlaps: the first's weight and input gradients, both forwards."""
    w.overlap["col_wgrad"] += gemm_time_s(h, n_in, w.m, hw=hw, dtype_bytes=w.wb)
    w.overlap["col_dgrad"] += gemm_time_s(w.m, h, n_in, hw=hw, dtype_bytes=w.wb)
    w.overlap["col_fwd"] += f1
    w.overlap["row_fwd"] += f2


def _attention_linears_s(w, attn, ar, *, h, hw):
    """An attention block's input and output projections on the rank's heads, their fp8 operands
    and what TP communication overlaps; under mla_up_proj recompute the up-projections' share."""
    m = w.m
    n_in, n_out = attention_linear_shapes(ar, h=h)
    f1, b1 = linear_times_s(m, n_in, h, hw=hw, dtype_bytes=w.wb)
    f2, b2 = linear_times_s(m, h, n_out, hw=hw, dtype_bytes=w.wb) if n_out else (0.0, 0.0)
    rec_lin = (f1 + f2) if w.full else 0.0
    if "mla_up_proj" in w.mods and attn["kind"] == "mla":
        # the up-projections' share of the folded matmul
        d_nope, d_v = ar["qk_nope_head_dim"], ar["v_head_dim"]
        up = ar["kv_lora_rank"] * ar["heads"] * (d_nope + d_v)
        up += mla_q_macs_per_token(ar, h=h) - h * ar["q_lora_rank"] if ar["q_lora_rank"] else 0
        rec_lin = f1 * min(1.0, up / max(n_in * h, 1))
    _add(w.parts, "attention_linear", f1 + f2, b1 + b2, rec_lin)
    w.fp8_elems += pair_operand_elements(m, w.m_cast, h=h, n_up=n_in, n_down=n_out)
    w.te_in_norm, w.te_in_other = w.te_in_norm + w.mt * h, w.te_in_other + m * n_out
    w.te_grad = w.te_grad + m * n_in + (w.mt * h if n_out else 0)
    w.te_tensors = w.te_tensors + 1 + bool(n_out)
    _overlap_pair(w, n_in, h, f1, f2, hw)


def _attention_core_s(w, attn, ar, *, lay, hw):
    """An attention block's core: a linear mixer's chunked kernel, the fused kernel (with context
    parallelism's own kernels), or eager matmuls and softmax over the full s x s."""
    a, m, b, s, cp = w.a, w.m, lay["micro_batch_size"], lay["sequence_length"], lay["cp"]
    tx = lay.get("attn_implementation") and ar["span"] != "state" and transformers_attention_s(
        attn, ar, lay=lay, hw=hw, fractions=kernel_attention_fractions(attn, lay=lay, hw=hw))
    if tx:  # transformers' own attention core (train/finetune_step.py)
        return _add(w.parts, "attention_core", tx[0], tx[1], tx[0] if w.rec_core else 0.0)
    if ar["span"] == "state":
        pairs = query_key_pairs(attn, seq_len=s, attention="causal")
        core = sum(attention_core_flops(ar, pairs=pairs).values()) * b / cp
        ff, fb = hw["flash"]
        tf, tb = core / (hw["peak16"] * ff), 2 * core / (hw["peak16"] * fb)
        _add(w.parts, "attention_core", tf, tb, tf if w.full or w.sac else 0.0)
        w.ew_bytes += 2 * a * m * ar["heads"] * (ar["head_dim"] + ar["v_head_dim"])
        w.ew_kernels += 4
        w.other_bytes += 2 * a * m * ar["heads"] * (ar["head_dim"] + ar["v_head_dim"])
        w.other_kernels += 4
    elif lay["flash_attention"]:
        pairs = query_key_pairs(attn, seq_len=s, attention="causal")
        core = sum(attention_core_flops(ar, pairs=pairs).values()) * b / cp
        ff, fb = kernel_attention_fractions(attn, lay=lay, hw=hw)
        tf = max(core / (hw["peak16"] * ff), KERNEL_FLOOR_S)
        tb = max(2.5 * core / (hw["peak16"] * fb), KERNEL_FLOOR_S)
        _add(w.parts, "attention_core", tf, tb, tf if w.rec_core else 0.0)
        if cp > 1:
            _cp_kernels_s(w, ar, lay=lay, hw=hw)
    else:  # eager: two batched matmuls over the full s x s, masked softmax and dropout between
        dq, dv = attention_head_dims(ar)
        bh = b * ar["heads"]
        sq = s // cp
        f_qk, b_qk = linear_times_s(sq, s, dq, hw=hw, batch=bh)
        f_av, b_av = linear_times_s(sq, dv, s, hw=hw, batch=bh)
        probs = bh * sq * s
        sm_f = memory_time_s(probs * (2 * a + (2 * a + 1 if lay["dropout"] else 0)), 2, hw=hw)
        sm_b = memory_time_s(probs * (3 * a + (2 * a + 1 if lay["dropout"] else 0)), 2, hw=hw)
        tf, tb = f_qk + f_av + sm_f, b_qk + b_av + sm_b
        _add(w.parts, "attention_core", tf, tb, tf if w.rec_core else 0.0)


def _cp_kernels_s(w, ar, *, lay, hw):
    """Context parallelism's own kernels beside a fused attention core
    (train/context_parallel.py): a2a's reorder copies, or the p2p ring's copies and merges."""
    cp = lay["cp"]
    dq, dv = attention_head_dims(ar)
    widths = dict(m=w.m, q_width=ar["heads"] * dq, v_width=ar["heads"] * dv,
                  kv_width=ar["kv_heads"] * (dq + dv), a=w.a)
    if lay.get("cp_comm_type") == "a2a":  # reorder copies around the all-to-alls
        rb_f, rb_b = a2a_attention_extra_bytes(**widths)
        rf, rbk = (memory_time_s(x, A2A_COPY_KERNELS, hw=hw) for x in (rb_f, rb_b))
    else:  # the p2p ring's copies and merges
        acc = 4 if lay["framework"] == "pytorch" else 2
        rb_f, rb_b = ring_attention_extra_bytes(cp=cp, acc=acc, **widths)
        rf = memory_time_s(rb_f, CP_FWD_KERNELS_PER_STEP * cp, hw=hw)
        rbk = memory_time_s(rb_b, CP_BWD_KERNELS_PER_STEP * cp, hw=hw)
    _add(w.parts, "cp_kernels", rf, rbk, rf if w.rec_core else 0.0)


def _dense_mlp_s(w, mr, fl, *, h, hw):
    """A dense MLP on the rank's width: its two matmuls (the gate folded into the first), their
    fp8 operands, what TP overlaps, and the activation's memory-bound work."""
    a, m = w.a, w.m
    wd = mr["width"]
    n_in = fl["dense_mlp"] / (2 * h) - wd
    f1, b1 = linear_times_s(m, n_in, h, hw=hw, dtype_bytes=w.wb)
    f2, b2 = linear_times_s(m, h, wd, hw=hw, dtype_bytes=w.wb)
    _add(w.parts, "mlp", f1 + f2, b1 + b2, (f1 + f2) if w.full or "mlp" in w.mods else 0.0)
    w.fp8_elems += pair_operand_elements(m, w.m_cast, h=h, n_up=n_in, n_down=wd)
    w.te_in_norm, w.te_in_other = w.te_in_norm + w.mt * h, w.te_in_other + m * wd
    w.te_grad, w.te_tensors = w.te_grad + m * n_in + w.mt * h, w.te_tensors + 2
    _overlap_pair(w, n_in, h, f1, f2, hw)
    w.ew_bytes += a * m * (n_in + wd)  # activation (and gate): read n_in, write w
    w.ew_kernels += 1
    if "mlp" in w.mods:
        w.ew_rec_bytes = w.ew_rec_bytes + a * m * (n_in + wd)
        w.ew_rec_kernels = w.ew_rec_kernels + 1


def _moe_mlp_s(w, mlp, mr, fl, *, h, lay, hw):
    """A MoE block: routed experts as grouped matmuls (the ep group's m ep tokens x k spread over
    E experts, E / ep on this rank, one launch per projection), shared experts as a dense MLP, the
    router, and the activation and permutations' memory-bound work."""
    a, m, wb, ep = w.a, w.m, w.wb, lay["ep"]
    E, k_real = mlp["num_experts"], expected_real_experts(mlp)
    wd = mr["width"]
    per_tok = fl["routed_experts"] / k_real if k_real else 0.0
    n_in = per_tok / (2 * h) - wd
    m_e = max(1, round(m * k_real * ep / E))
    local = E // ep
    f1, b1 = linear_times_s(m_e, n_in, h, hw=hw, dtype_bytes=wb, batch=local)
    f2, b2 = linear_times_s(m_e, h, wd, hw=hw, dtype_bytes=wb, batch=local)
    w.fp8_elems += local * (linear_operand_elements(m_e, n_in, h)
                            + linear_operand_elements(m_e, h, wd))
    w.te_in_other += local * m_e * (h + wd)
    w.te_grad, w.te_tensors = w.te_grad + local * m_e * (n_in + h), w.te_tensors + 2
    g = lay["moe_imbalance"]
    moe_rec = w.full or w.sac or "moe" in w.mods
    _add(w.parts, "moe_experts", g * (f1 + f2), g * (b1 + b2), g * (f1 + f2) if moe_rec else 0.0)
    if mlp["shared_width"]:
        sw = mr["shared_width"]
        n_s = fl["shared_experts"] / (2 * h) - sw
        f3, b3 = linear_times_s(m, n_s, h, hw=hw, dtype_bytes=wb)
        f4, b4 = linear_times_s(m, h, sw, hw=hw, dtype_bytes=wb)
        w.fp8_elems += pair_operand_elements(m, w.m_cast, h=h, n_up=n_s, n_down=sw)
        w.te_in_norm, w.te_in_other = w.te_in_norm + w.mt * h, w.te_in_other + m * sw
        w.te_grad, w.te_tensors = w.te_grad + m * n_s + w.mt * h, w.te_tensors + 2
        _add(w.parts, "mlp", f3 + f4, b3 + b4,
             (f3 + f4) if w.full or "moe" in w.mods or "shared_experts" in w.mods else 0.0)
        w.ew_bytes += a * m * (n_s + sw)
        w.other_bytes += a * m * (n_s + sw)
    fr, br = linear_times_s(m, E + mlp["zero_experts"], h, hw=hw)
    _add(w.parts, "router", fr, br, fr if moe_rec else 0.0)
    # activation, and the permutation into and out of expert order (read + write, twice)
    w.ew_bytes += g * a * m * k_real * (n_in + wd) + 4 * a * m * k_real * h
    w.ew_kernels += 6
    w.other_bytes += g * a * m * k_real * (n_in + wd) + 4 * a * m * k_real * h
    w.other_kernels += 6
    if "moe" in w.mods:  # activation, permutations (and the shared experts' activation)
        w.ew_rec_bytes += g * a * m * k_real * (n_in + wd) + 4 * a * m * k_real * h + (
            a * m * (n_s + sw) if mlp["shared_width"] else 0)
        w.ew_rec_kernels += 6
    elif "moe_act" in w.mods:
        w.ew_rec_bytes = w.ew_rec_bytes + g * a * m * k_real * (n_in + wd)
        w.ew_rec_kernels = w.ew_rec_kernels + 1


def _norms_and_residuals(w, layer, *, h, lay):
    """Norms (one per block) and the residual add (+ bias, dropout mask) per block: Korthikanti
    Table 2's tensors; DeepSeek-V4's hyper-connection streams."""
    a, mt, blocks = w.a, w.mt, w.blocks
    y2021 = lay.get("framework", "megatron") == "megatron-2021"
    w.ew_bytes += blocks * ((0 if y2021 else 2 * a * mt * h)
                            + (3 * a + (1 if lay["dropout"] else 0)) * mt * h)
    w.ew_kernels += (1 if y2021 else 2) * blocks
    if "layernorm" in w.mods:  # each block's norm: read x, write y
        w.ew_rec_bytes = w.ew_rec_bytes + blocks * 2 * a * mt * h
        w.ew_rec_kernels = w.ew_rec_kernels + blocks
    if layer.get("extra_flops"):  # DeepSeek-V4 hyper-connections: their hc x h residual streams
        # are read and written once per block (small matmuls, memory-bound; an assumption)
        w.ew_bytes += 2 * a * w.m * h * lay.get("residual_streams", 1)
        w.other_bytes += 2 * a * w.m * h * lay.get("residual_streams", 1)


def _eager_memory_bound_s(w, layer, *, h, lay, hw):
    """Eager PyTorch: each unfused kernel of the modules' source; weight-gradient kernels are
    charged per FSDP unit in evaluate (eager_grad_kernels_bytes), not here; torchao's fp8 casts
    (Transformer Engine fuses its own: not costed)."""
    style = "transformers" if lay.get("attn_implementation") else lay["framework"]
    kf, kb = eager_layer_kernels(layer, h=h, tp=lay["tp"], style=style, norm=lay["norm"])
    ef = eager_kernels_time_s(kf, tokens=w.m, tokens_sp=w.mt, hw=hw)
    eb = eager_kernels_time_s(kb, tokens=w.m, tokens_sp=w.mt, hw=hw)
    if w.other_bytes:
        ef += memory_time_s(w.other_bytes, w.other_kernels, hw=hw)
        eb += memory_time_s(2 * w.other_bytes, 2 * w.other_kernels, hw=hw)
    if lay.get("compile"):  # Inductor's fused kernels at their measured share of the eager time
        ef, eb = ef * COMPILE_LAYER_FACTOR, eb * COMPILE_LAYER_FACTOR
    _add(w.parts, "memory_bound", ef, eb, ef if w.full or w.sac else 0.0)
    if w.wb == 1 and lay["framework"] == "pytorch":  # torchao's casts
        cf, cb = fp8_cast_time_s(w.fp8_elems, recipe=lay.get("fp8_recipe") or "tensorwise", hw=hw)
        _add(w.parts, "fp8_casts", cf, cb, cf if w.full or w.sac else 0.0)
    transformers_layer_parts(w.parts, layer, h=h, m=w.m, lay=lay, hw=hw, full=w.full)


def _fused_memory_bound_s(w, layer, *, h, lay, hw):
    """Fused-kernel stacks: Transformer Engine's fp8 quantization, the memory-bound work counted
    above (apex's LayerNorm and the dated stacks' bias adds and context copies at their rates),
    and the gradient accumulation."""
    a, m, mt, blocks, full = w.a, w.m, w.mt, w.blocks, w.full
    if w.wb == 1 and lay.get("framework", "megatron") == "megatron" and w.te_tensors:
        # Transformer Engine's quantization of each linear's input and output gradient (kernels.py)
        recipe = lay.get("fp8_recipe") or "delayed"
        by_arch = TE_FP8_CAST_BYTES[recipe]
        bn, bo, bg = by_arch["blackwell" if hw.get("family") == "blackwell" else "hopper"]
        per = 2 if recipe == "tensorwise" else 1  # current scaling: an amax kernel before each cast
        cf = memory_time_s(bn * w.te_in_norm + bo * w.te_in_other, per * w.te_tensors, hw=hw)
        cb = memory_time_s(bg * w.te_grad, per * w.te_tensors, hw=hw)
        _add(w.parts, "fp8_casts", cf, cb, cf if full else 0.0)
    ef = memory_time_s(w.ew_bytes, w.ew_kernels, hw=hw)
    eb = memory_time_s(2 * w.ew_bytes, 2 * w.ew_kernels, hw=hw)
    path = grad_path(lay)
    accum = path["accumulate"] if path else GRAD_ACCUM_BYTES
    if lay.get("framework", "megatron") == "megatron-2021":
        # apex's LayerNorm at its measured rates (APEX_LAYERNORM_2021): read x, write y; dy, x -> dx
        lnf, lnb = APEX_LAYERNORM_2021
        ef += blocks * memory_time_s(2 * a * mt * h / lnf, 1, hw=hw)
        eb += blocks * memory_time_s(3 * a * mt * h / lnb, 2, hw=hw)
    if path:  # both dated stacks add the QKV bias apart and copy the context layer
        for attn in layer["attention"]:
            if attn["span"] == "state":
                continue
            ar = attention_on_rank(attn, tp=lay["tp"])
            dq, dv = attention_head_dims(ar)
            qkv = ar["heads"] * dq + ar["kv_heads"] * (dq + dv)
            ctx = ar["heads"] * dv
            # de7dc40 megatron/model/transformer.py under PyTorch 1.8: F.linear on the 3-D [s, b, h]
            # input is a matmul plus a separate `output += bias` (read 2 + write 2 per output
            # element), and its bias gradient a token sum (read 2); the context layer's
            # permute(2, 0, 1, 3).contiguous() copies (2 + 2) and so does its gradient's reshape.
            # d898a8991d (2022) the same: mpu/layers.py LinearWithGradAccumulationAndAsyncCommunication
            # runs torch.matmul then `output + bias` and `grad_output.sum(dim=0)`; CoreAttention keeps
            # the permute(2, 0, 1, 3).contiguous()
            qb = bool(attn.get("qkv_bias"))
            ef += memory_time_s(a * m * ((2 * qkv if qb else 0) + 2 * ctx), 1 + qb, hw=hw)
            eb += memory_time_s(a * m * ((qkv if qb else 0) + 2 * ctx), 1 + qb, hw=hw)
    rec_ew = ef if full or w.sac else (
        memory_time_s(w.ew_rec_bytes, w.ew_rec_kernels, hw=hw) if w.ew_rec_bytes else 0.0)
    _add(w.parts, "memory_bound", ef, eb, rec_ew)
    ne, ex = layer_params_per_rank(layer, h=h, norm=lay["norm"], tp=lay["tp"], etp=lay["etp"],
                                   ep=lay["ep"])
    _add(w.parts, "grad_accumulation", 0.0, (ne + ex) * accum / hw["mem_bw"])


# ------------------------------------------------------------------------------------------------
# Communication of one layer, one micro-batch (the collectives of calc_comm.py, copied above)
# ------------------------------------------------------------------------------------------------

def _hidden(comm, compute, slowdown):
    """Exposed time of `comm` run beside `compute`, and the compute slowdown while both run
    (OVERLAP_SLOWDOWN x the overlapped time, Lee et al. 2025)."""
    return max(0.0, comm - compute) + slowdown * min(comm, compute)


def async_tp_exposed_s(act_bytes, *, tp, gathers, scatters, hw):
    """Seconds torch's micro-pipelined TP (torchtitan's async TP: --framework pytorch
    --tp-comm-overlap full) leaves on the critical path beside the hidden copies, per the source
    (torch/distributed/_symmetric_memory/__init__.py, 2024-2026 versions alike). An all-gather +
    matmul first copies the local shard into the rank's symmetric buffer and meets a barrier before
    any matmul starts (_pipelined_all_gather_and_consume: the copy is not overlapped, "giving up the
    chance"); read + write of act / tp bytes. A matmul + reduce-scatter writes the tp partial
    outputs (m / tp rows each) into a stacked buffer and, after the last chunk, sums them
    (_fused_matmul_reduce_scatter_impl's reduce over dim 0): read act bytes, write act / tp. The
    remote copies themselves run on copy engines beside the chunked matmuls and are costed as
    hidden by the caller. `gathers` / `scatters`: fused ops of each kind in the pass."""
    staging = memory_time_s(2 * act_bytes / tp, 1, hw=hw)
    reduce = memory_time_s(act_bytes + act_bytes / tp, 1, hw=hw)
    return gathers * staging + scatters * reduce


def layer_comm_s(layer, overlap, blocks, *, h, lay, hw, net, core_s):
    """Exposed (forward, backward, recompute) communication seconds of one layer for one
    micro-batch, by kind. TP (Shoeybi et al. 2019 sec. 3): one all-reduce per block forward and one
    backward; with sequence parallelism an all-gather and a reduce-scatter each way, plus the
    backward re-gather of the block input for the weight gradient (Korthikanti et al. 2022 sec.
    4.2.2). Megatron-LM overlaps the backward input-gradient all-reduce (reduce-scatter with SP)
    with the weight-gradient matmul and the re-gather with the input-gradient matmul
    (--tp-comm-overlap backward, its default since 2021); `full` also hides the forward ones behind
    the adjacent matmuls (Transformer Engine userbuffers); `none` exposes everything. EP: dispatch
    and combine all-to-all per MoE block each way, exposed (GShard). CP: the K/V ring, cp - 1 steps
    forward and 2 (cp - 1) backward, hidden behind the attention core (Ring Attention); under
    --cp-comm-type a2a two all-to-alls each way, exposed (train/context_parallel.py)."""
    tp, cp, ep, sp = lay["tp"], lay["cp"], lay["ep"], lay["sp"]
    G, sd = lay["gpus_per_node"], lay["overlap_slowdown"]
    m = lay["micro_batch_size"] * lay["sequence_length"] // cp
    act = 2 * m * h
    mode = lay["tp_comm_overlap"]
    out = {}
    rec_on = lay["recompute"] == "full"
    rec_tp = None  # what op-SAC repeats of the forward's TP collectives (below)
    if tp > 1 and blocks:
        if sp:
            ag = comm_time_s("all_gather", act, n=tp, stride=1, net=net, gpus_per_node=G)
            rs = comm_time_s("reduce_scatter", act, n=tp, stride=1, net=net, gpus_per_node=G)
            # torch's async TP (--framework pytorch): its staging copies and partial sums, exposed
            atp = lay["framework"] == "pytorch" and mode == "full"
            if mode == "full":
                f_ag = _hidden(blocks * ag, overlap["col_fwd"], sd)
                f = f_ag + _hidden(blocks * rs, overlap["row_fwd"], sd)
                if atp:
                    f += async_tp_exposed_s(act, tp=tp, gathers=blocks, scatters=blocks, hw=hw)
            else:
                f_ag = blocks * ag
                f = blocks * (ag + rs)
            # torchtitan's op-SAC saves the reduce-scatters' outputs but not the all-gathers'
            # (_op_sac_save_list: reduce_scatter_tensor, mm, attention, max): its recompute gathers again
            rec_tp = f_ag if lay["recompute"] == "op-sac" else None
            if rec_tp is not None and atp:
                rec_tp += async_tp_exposed_s(act, tp=tp, gathers=blocks, scatters=0, hw=hw)
            if mode == "none":
                b = blocks * (2 * ag + rs)
            else:
                b = (blocks * ag if mode == "backward" else _hidden(blocks * ag, overlap["row_fwd"], sd)) \
                    + _hidden(blocks * rs, overlap["col_wgrad"], sd) + _hidden(blocks * ag, overlap["col_dgrad"], sd)
                if atp:
                    b += async_tp_exposed_s(act, tp=tp, gathers=2 * blocks, scatters=blocks, hw=hw)
        else:
            ar = comm_time_s("all_reduce", act, n=tp, stride=1, net=net, gpus_per_node=G)
            f = _hidden(blocks * ar, overlap["row_fwd"], sd) if mode == "full" else blocks * ar
            b = blocks * ar if mode == "none" else _hidden(blocks * ar, overlap["col_wgrad"], sd)
        out["tp"] = [f, b, f if rec_on else rec_tp or 0.0]
    moe = [x for x in layer["mlp"] if x["kind"] == "moe"]
    if ep > 1 and moe:
        rec_ep = rec_on or "moe" in modules_of(lay)
        if lay.get("moe_dispatcher") == "flex" and hw.get("link_bytes_per_s"):
            # DeepEP (train/moe.py): forward dispatch (FP8 under fp8 matmuls) and combine (BF16);
            # the backward sends the gradients both ways in BF16
            intra, inter = hw["link_bytes_per_s"]
            f = b = 0.0
            for x in moe:
                kw = dict(tokens=m / (tp if sp else 1), h=h, experts=x["num_experts"], picks=expected_real_experts(x),
                          ep=ep, gpus_per_node=G, intra_bytes_per_s=intra, inter_bytes_per_s=inter, combine_bytes=2)
                f += sum(deepep_time_s(dispatch_bytes=1 + FP8_SCALE_BYTES_PER_VALUE if lay["matmul_bytes"] == 1 else 2, **kw))
                b += sum(deepep_time_s(dispatch_bytes=2, **kw))
            out["ep"] = [f, b, f if rec_ep else 0.0]
        else:
            k = sum(expected_real_experts(x) for x in moe)
            a2a = comm_time_s("alltoall", act * k / (tp if sp else 1), n=ep, stride=tp * cp, net=net, gpus_per_node=G)
            out["ep"] = [2 * a2a, 2 * a2a, 2 * a2a if rec_ep else 0.0]
    soft = [x for x in layer["attention"] if x["span"] != "state"]
    if cp > 1 and soft and lay.get("cp_comm_type") == "a2a":
        # all-to-alls over the cp group, exposed: forward Q, K, V then the output; backward dO then
        # dQ, dK, dV (train/context_parallel.py); each moves the rank's whole tensor
        f = b = 0.0
        for x in soft:
            xr = attention_on_rank(x, tp=tp)
            dq, dv = attention_head_dims(xr)
            q_b, kv_b, o_b = (2 * m * w for w in (xr["heads"] * dq, xr["kv_heads"] * (dq + dv), xr["heads"] * dv))
            f += sum(comm_time_s("alltoall", nb, n=cp, stride=tp, net=net, gpus_per_node=G) for nb in (q_b + kv_b, o_b))
            b += sum(comm_time_s("alltoall", nb, n=cp, stride=tp, net=net, gpus_per_node=G) for nb in (o_b, q_b + kv_b))
        out["cp"] = [f, b, f if rec_on else 0.0]
    elif cp > 1 and soft:
        # the ring's neighbours are tp ranks apart (Megatron-Core's rank order tp-cp-dp); once the
        # cp group spans more than a node (tp x cp > G), some hop crosses a node boundary every step
        # and, every rank waiting on its receive before the next step, that hop sets the ring's pace
        hop_stride = tp if tp * cp <= G else max(tp, G)
        t = 0.0
        for x in soft:
            xr = attention_on_rank(x, tp=tp)
            dq, dv = attention_head_dims(xr)
            t += comm_time_s("sendrecv", m * xr["kv_heads"] * (dq + dv) * 2, n=2, stride=hop_stride, net=net,
                             gpus_per_node=G)
        cf, cb = core_s
        f = _hidden((cp - 1) * t, cf, sd)
        out["cp"] = [f, _hidden(2 * (cp - 1) * t, cb, sd), f if rec_on else 0.0]
    return out


# ------------------------------------------------------------------------------------------------
# One layout: stages, pipeline, data parallel, optimizer, memory
# ------------------------------------------------------------------------------------------------

def head_and_embedding_s(spec, *, lay, hw, net):
    """(first stage fwd, bwd), (last stage fwd, bwd) seconds per micro-batch outside the layers:
    the embedding lookup and its gradient (memory-bound), and on the last stage the final norm,
    the vocab-parallel output matmul (V / tp columns) and the fp32 cross-entropy over the logits
    (read and written three times each way, with three small all-reduces of its max, sum and
    target logit across tp: Megatron-LM's vocab-parallel cross-entropy). Eager PyTorch frameworks:
    the final norm's and the loss's unfused kernels (eager_norm_kernels, eager_loss_kernels).
    Megatron-LM's vocab-parallel embedding sums its tp partial lookups: an all-reduce of the [s, b, h]
    output, or under sequence parallelism a reduce-scatter (all-gather backward) since 2024-04
    (cbf81447cc, megatron/core/tensor_parallel/layers.py VocabParallelEmbedding); the dated stacks
    all-reduce in every case (d898a8991d mpu/layers.py, then split for SP)."""
    tp, cp = lay["tp"], lay["cp"]
    m = lay["micro_batch_size"] * lay["sequence_length"] // cp
    h, V = spec["hidden_size"], spec["vocab_size"]
    p = spec["word_embed_proj_dim"]
    emb = memory_time_s(2 * 2 * m * h, 1, hw=hw)
    first = (emb, 2 * emb)
    if tp > 1 and not eager_framework(lay):
        G = lay["gpus_per_node"]
        if lay["sp"] and lay.get("framework", "megatron") not in LEGACY_MEGATRON:
            first = (emb + comm_time_s("reduce_scatter", 2 * m * p, n=tp, stride=1, net=net, gpus_per_node=G),
                     2 * emb + comm_time_s("all_gather", 2 * m * p, n=tp, stride=1, net=net, gpus_per_node=G))
        else:
            first = (emb + comm_time_s("all_reduce", 2 * m * p, n=tp, stride=1, net=net, gpus_per_node=G), 2 * emb)
    # the output layer stays 16-bit under fp8 training: Megatron-LM's output_layer is a plain
    # ColumnParallelLinear, not a Transformer Engine module; torchtitan's float8 converter skips
    # "output" (filter_fqns) and torchao's examples filter the head out
    hw16 = dict(hw, peak=hw["peak16"], matmul_ceiling=hw.get("matmul_ceiling16", hw["matmul_ceiling"])) \
        if lay["matmul_bytes"] == 1 else hw
    lf, lb = linear_times_s(m, V // tp, p, hw=hw16)
    ce = memory_time_s(3 * 4 * m * V / tp, 3, hw=hw)
    ce_b = ce
    norm = memory_time_s(4 * m * h / (tp if lay["sp"] else 1), 1, hw=hw)
    norm_b = 2 * norm
    if lay.get("framework", "megatron") in LEGACY_MEGATRON:
        # megatron/model/gpt_model.py: vocab_parallel_cross_entropy(output.float(), labels), the
        # kernels of megatron/mpu/cross_entropy.py (de7dc40; d898a8991d unchanged): .float() 2+4,
        # max 4, sub_ 4+4, exp 4+4, sum 4, div_ 4+4 forward; mul_ 4+4 and the cast back 4+2
        # backward (per logit)
        ce = memory_time_s(38 * m * V / tp, 6, hw=hw)
        ce_b = memory_time_s(14 * m * V / tp, 3, hw=hw)
    if lay.get("framework", "megatron") == "megatron-2021":
        lnf, lnb = APEX_LAYERNORM_2021
        norm = memory_time_s(4 * m * h / lnf, 1, hw=hw)  # apex's kernel at its measured share of bandwidth
        norm_b = memory_time_s(6 * m * h / lnb, 2, hw=hw)
    red = 3 * comm_time_s("all_reduce", 4 * m, n=tp, stride=1, net=net, gpus_per_node=lay["gpus_per_node"])
    if lay["sp"] and tp > 1:  # gather the sequence-parallel shards before the output matmul
        red += comm_time_s("all_gather", 2 * m * h, n=tp, stride=1, net=net, gpus_per_node=lay["gpus_per_node"])
    fw = lay.get("framework", "megatron")
    if eager_framework(lay):
        mt = m / tp if lay["sp"] else m
        nf, nb = eager_norm_kernels(norm=spec["norm"], width=h)
        cf, cb = eager_loss_kernels(style=fw, vocab=V / tp)
        tf = eager_kernels_time_s([(x, "mt") for x in nf] + [(x, "m") for x in cf], tokens=m, tokens_sp=mt, hw=hw)
        tb = eager_kernels_time_s([(x, "mt") for x in nb] + [(x, "m") for x in cb], tokens=m, tokens_sp=mt, hw=hw)
        if lay.get("compile"):
            tf, tb = tf * COMPILE_LOSS_FACTOR, tb * COMPILE_LOSS_FACTOR
        first, lf, lb = frozen_ends_s(first, lf, lb, m=m, V=V // tp, p=p, lay=lay, hw=hw16)
        return first, (lf + tf + red, lb + tb + red)
    last = (lf + ce + norm + red, lb + ce_b + norm_b + red)
    return first, last


def layer_cost(layer, *, spec, lay, hw, net):
    """LayerCosts of one layer for one micro-batch on one rank: its compute (layer_compute_s) and
    exposed communication (layer_comm_s, with Megatron-Core's EP all-to-all overlap)."""
    h = spec["hidden_size"]
    model = {"residual_streams": spec.get("residual_streams", 1), "norm": spec["norm"]}
    lay = lay.replace(**model) if isinstance(lay, Layout) else Layout(lay, **model)
    parts, overlap, blocks = layer_compute_s(layer, h=h, lay=lay, hw=hw)
    core = parts.get("attention_core", [0.0, 0.0, 0.0])
    comm = layer_comm_s(layer, overlap, blocks, h=h, lay=lay, hw=hw, net=net, core_s=(core[0], core[1]))
    if lay.get("moe_a2a_overlap") and "ep" in comm:
        comm["ep"] = moe_a2a_overlap_s(comm["ep"], parts, slowdown=lay["overlap_slowdown"])
    return LayerCosts(compute=parts, comm=comm)


def moe_a2a_overlap_s(ep, parts, *, slowdown):
    """[forward, backward, recompute] exposed seconds of one layer's expert-parallel dispatch and
    combine under Megatron-Core's EP all-to-all overlap (--overlap-moe-expert-parallel-comm,
    Megatron-Bridge's moe_a2a_overlap): the schedule runs one micro-batch's forward beside another's
    backward, so the forward's all-to-alls hide behind the layer's backward compute and the
    backward's behind its forward compute, with the overlap slowdown (_hidden); the recompute's
    all-to-alls stay exposed. Assumes every layer has a partner micro-batch (steady 1F1B)."""
    fwd = sum(v[0] for v in parts.values())
    bwd = sum(v[1] for v in parts.values())
    return [_hidden(ep[0], bwd, slowdown), _hidden(ep[1], fwd, slowdown), ep[2]]


def pass_times_s(*parts):
    """(forward, backward + recompute) seconds of the [forward, backward, recompute] entries of the
    breakdown dicts given (a layer's or a stage's compute, and its exposed communication), summed."""
    return (sum(sum(v[0] for v in p.values()) for p in parts),
            sum(sum(v[1] + v[2] for v in p.values()) for p in parts))


def _sum_into(acc, src, times=1):
    for k, v in src.items():
        a = acc.setdefault(k, [0.0, 0.0, 0.0])
        for i in range(3):
            a[i] += v[i] * times


def pipeline_time_s(stage_s, *, m, vp):
    """Time of m micro-batches through the stages, each taking stage_s[i] (forward + backward) per
    micro-batch: the slowest stage sets the pace, and the fill and drain add (p - 1) / vp of a mean
    stage (1F1B: (m + p - 1) t for equal stages; interleaved: bubble (p - 1) / (vp m) of the ideal;
    Narayanan et al. 2021 sec. 2.2)."""
    p = len(stage_s)
    t_max = max(stage_s)
    if p == 1:
        return m * t_max
    return m * t_max + (p - 1) * (sum(stage_s) / p) / vp


def dp_exposed_s(*, params_by_stage, stage_bwd_s, lay, net, stage_fwd_s=None):
    """Exposed data-parallel seconds after the pipeline drains, and the gradient-sync time of the
    slowest stage. Each stage reduces its gradients over dp x cp replicas (stride tp): ZeRO 0
    all-reduce, 1-2 reduce-scatter then all-gather the updated 16-bit weights, 3 reduce-scatter
    (its parameter all-gathers are charged per layer). With overlap (Megatron-LM
    --overlap-grad-reduce, PyTorch DDP/FSDP) buckets go out while the stage's last backward runs:
    what stays exposed is the last bucket, or the reduction minus that backward if longer. Stage i
    finishes its last backward i backward-times before stage 0, so its reduction has that long too.
    Without overlap (Megatron-LM before 2023) the reduction starts after the stage's last backward.
    ZeRO-2 shards the gradients, so no replica can accumulate a whole step's: each micro-batch's are
    reduce-scattered after its backward (DeepSpeed stage 2, Rajbhandari et al. 2020 sec. 5.2; as
    deepspeed_dp_exposed_s), each beside that backward under overlap, and only the last one has the
    head start; ZeRO-1 (Megatron-LM's distributed optimizer) reduces once, after the last.
    Overlapped, the reduction slows the backward it runs beside by lay["overlap_slowdown"] of the
    overlapped time (NCCL's kernels take SMs and bandwidth: the TP overlap's rule), and at ZeRO 1-2
    the updated 16-bit weights are gathered bucket by bucket under the next step's first forward
    (Megatron-LM --overlap-param-gather): its first bucket, or what outlasts that forward, is
    exposed, and the forward slowed the same way. With few micro-batches (one in MLPerf's 8B runs)
    these are most of the step's data-parallel cost."""
    if lay["dp"] * lay["cp"] <= 1:
        return 0.0, 0.0
    zero = lay["zero_stage"]
    mean_b = sum(stage_bwd_s) / len(stage_bwd_s)
    fwd_s = stage_fwd_s or [b / 2 for b in stage_bwd_s]
    sd, over = lay["overlap_slowdown"], lay["dp_overlap"]
    worst, t_sync_max = 0.0, 0.0
    for i, (dense, expert) in enumerate(params_by_stage):
        dense, expert = (lay["trainable_params"], 0) if lay.get("finetune") else (dense, expert)
        t, ag = dp_sync_times_s(dense, expert, lay=lay, net=net)
        share = min(1.0, lay["dp_bucket_params"] / max(dense + expert, 1))
        head_start = i * mean_b  # stage i drains i backward-times before stage 0
        if over:  # beside the last backward, and the gather beside the next first forward
            b, f = stage_bwd_s[i], fwd_s[i]
            each = max(t * share, t - b) + sd * min(t, b)
            gather = (max(ag * share, ag - f) + sd * min(ag, f)) if ag else 0.0
        else:
            each, gather = t + ag, 0.0
            t += ag
        exposed = each - head_start
        if zero == 2:  # the m - 1 earlier micro-batches' reduce-scatters, no head start
            exposed = max(0.0, exposed) + (lay["num_microbatches"] - 1) * each
        exposed = max(0.0, exposed) + gather
        worst = max(worst, exposed)
        t_sync_max = max(t_sync_max, t)
    return max(0.0, worst), t_sync_max


def eager_grad_s(params_local, num_layers, *, lay, hw):
    """[forward, backward, recompute] seconds per micro-batch of the weight-gradient casts and
    copies of eager PyTorch (eager_grad_kernels_bytes) on a rank holding `params_local` weights in
    `num_layers` layers, one FSDP unit per layer as llm-foundry (MPTBlock) and torchtitan
    (TransformerBlock) wrap them; ZeRO 2/3 = FSDP SHARD_GRAD_OP / FULL_SHARD, the reduce dtype the
    gradients' (--grad-reduce-dtype)."""
    nl = max(num_layers, 1)
    params_local = lay.get("trainable_params") or params_local  # peft: the adapters only
    per = params_local / nl
    n = lay["dp"] * lay["cp"]
    fsdp = lay["zero_stage"] >= 2 and n > 1
    f, b = eager_grad_kernels_bytes(params=per, shard=per / n if fsdp else per, reduce_bytes=lay["grad_bytes"],
                                    fsdp=fsdp, regather=lay["zero_stage"] == 3, microbatches=lay["num_microbatches"])
    f, b = pure16_grad_kernels(f, b, lay=lay, fsdp=fsdp)
    tf = nl * sum(max(x / hw["mem_bw"], KERNEL_FLOOR_S) for x in f)
    tb = nl * sum(max(x / hw["mem_bw"], KERNEL_FLOOR_S) for x in b)
    return [tf, tb, tf if lay["recompute"] in ("full", "op-sac") and not fsdp else 0.0]


def fsdp_exposed_s(params, comp, num_layers, *, lay, net):
    """Exposed seconds per step of PyTorch FSDP's per-layer collectives (ZeRO 2 = SHARD_GRAD_OP,
    3 = FULL_SHARD): every micro-batch each layer's bf16 parameters are all-gathered before its
    forward (and, FULL_SHARD, again before its backward), and its gradient (peft: the adapters',
    fsdp_unit_bytes) reduce-scattered in the reduce dtype after its backward (torch/distributed/
    fsdp/_runtime_utils.py _post_backward_hook; composer does not skip the sync between
    micro-batches), prefetched or issued one layer apart, so hidden behind the neighbouring layer's
    compute except what outlasts it, with the overlap slowdown. SHARD_GRAD_OP gathers once per
    micro-batch (kept for the backward). The step's last reduce-scatter has no compute left to hide
    behind: exposed (in place of dp_exposed_s's bucket rule)."""
    nl = max(num_layers, 1)
    per_layer, n, G = sum(params) / nl, lay["dp"] * lay["cp"], lay["gpus_per_node"]
    gathered, reduced = fsdp_unit_bytes(per_layer, nl, lay=lay)  # peft: the adapters' gradients
    ag = comm_time_s("all_gather", gathered, n=n, stride=lay["tp"], net=net, gpus_per_node=G)
    rs = comm_time_s("reduce_scatter", reduced, n=n, stride=lay["tp"], net=net, gpus_per_node=G)
    f_layer, b_layer = (t / nl for t in pass_times_s(comp))
    sd = lay["overlap_slowdown"]
    back = (ag if lay["zero_stage"] == 3 else 0.0) + rs
    return lay["num_microbatches"] * nl * (_hidden(ag, f_layer, sd) + _hidden(back, b_layer, sd)) + rs


def optimizer_s(params_local, *, lay, hw):
    """Optimizer step seconds on one GPU: Megatron-LM's optimizer kernels stream
    OPTIMIZER_STEP_BYTES per held parameter (GRAD_PATH_2021's / GRAD_PATH_2022's for the dated
    stacks' 16-bit gradients;
    1/shard of them under ZeRO >= 1) at achievable bandwidth; offloaded, the gradients go to the
    host and the 16-bit weights come back over PCIe (4 + 2 bytes) and CPU-Adam updates them
    (ZeRO-Offload, Ren et al. 2021)."""
    shard = lay["dp"] * lay["cp"] if lay["zero_stage"] >= 1 else 1
    params_local = lay.get("trainable_params") or params_local  # peft: the adapters only
    p = params_local / shard
    if lay["offload"]:
        return offload_optimizer_s(p, lay=lay, hw=hw, cpu_adam_params_per_s=CPU_ADAM_PARAMS_PER_S)
    nbytes = OPTIMIZER_STEP_BYTES[lay["precision16"]]
    nbytes = torch_optimizer_step_bytes(lay, nbytes)
    path = grad_path(lay)
    if path:
        nbytes = path["optimizer"] or nbytes
    return memory_time_s(p * nbytes, 5, hw=hw)


# The layout fields one layer's cost depends on (the cache key of evaluate: layouts that differ only
# in pp, vp, dp, ZeRO or offload share their layers' costs)
LAYER_COST_KEYS = ("tp", "cp", "ep", "etp", "sp", "micro_batch_size", "sequence_length", "recompute",
                   "flash_attention", "dropout", "tp_comm_overlap", "moe_imbalance", "overlap_slowdown",
                   "gpus_per_node", "matmul_bytes", "framework", "recompute_modules", "moe_dispatcher",
                   "cp_comm_type", "fp8_recipe", "moe_a2a_overlap")


def evaluate(spec, lay, *, hw, net, c0, flops, cache=None, memory=None):
    """Step time, its breakdown, MFU/HFU and memory of one layout. `flops`: the model and hardware
    FLOPs of one sequence (calc_transformer_flops.py's count), per recompute mode; `memory`: the
    layout's training_memory() when the caller has it."""
    cache = {} if cache is None else cache
    L, pp, vp, m = spec["num_layers"], lay["pp"], lay["vp"], lay["num_microbatches"]
    by_stage = all_stage_layers(num_layers=L, pp=pp, vp=vp, chunk_layers=layout_chunk_layers(L, lay))
    ends = head_and_embedding_s(spec, lay=lay, hw=hw, net=net)
    p2p = pipeline_p2p_s(spec, lay=lay, net=net)
    lays = {}  # the layout each layer runs under: --recompute-every leaves some layers without recompute
    stage_s, stage_b, stage_f, stage_parts, params_by_stage = [], [], [], [], []
    for st in range(pp):
        comp, comm, params = stage_costs(spec, lay, st, by_stage[st], hw=hw, net=net, cache=cache,
                                         lays=lays, ends=ends, p2p=p2p)
        params_by_stage.append(params)
        fwd, bwd = pass_times_s(comp, comm)
        stage_s.append(fwd + bwd)
        stage_b.append(bwd)
        stage_f.append(fwd)
        stage_parts.append((comp, comm))
    pipe = pipeline_time_s(stage_s, m=m, vp=vp)
    if lay.get("framework") == DEEPSPEED:
        dp_exp, dp_sync = deepspeed_dp_exposed_s(params_by_stage=params_by_stage, stage_bwd_s=stage_b,
                                                 lay=lay, net=net)
    else:
        dp_exp, dp_sync = dp_exposed_s(params_by_stage=params_by_stage, stage_bwd_s=stage_b, lay=lay,
                                       net=net, stage_fwd_s=stage_f)
    z3, dp_exp = sharded_gathers_s(params_by_stage[0], stage_parts[0][0], len(by_stage[0]), dp_exp,
                                   lay=lay, hw=hw, net=net)
    worst = max(range(pp), key=lambda i: stage_s[i])
    opt = optimizer_s(sum(params_by_stage[worst]), lay=lay, hw=hw)
    copies = grad_sync_copies_s(sum(params_by_stage[worst]), lay=lay, hw=hw)
    tied = tied_embedding_sync_s(spec, lay=lay, net=net)
    step = pipe + dp_exp + z3 + opt + tied + copies
    breakdown = step_breakdown(stage_parts[worst], m=m, bubble=pipe - m * stage_s[worst],
                               dp=dp_exp + tied, sharded=z3, eager=eager_framework(lay), opt=opt,
                               copies=copies)
    if memory is None:
        memory, _ = training_memory(spec, memory_config(spec, lay, c0), lay["micro_batch_size"])
    return step_result(spec, lay, step=step, breakdown=breakdown, memory=memory, hw=hw, flops=flops,
                       worst=worst, stage_s=stage_s, dp_sync=dp_sync)


def pipeline_p2p_s(spec, *, lay, net):
    """Seconds of one pipeline send/receive of a micro-batch's activations between stages (0
    without a pipeline), with Megatron-LM's scatter/gather over tensor parallelism."""
    if lay["pp"] <= 1:
        return 0.0
    G = lay["gpus_per_node"]
    act = 2 * lay["micro_batch_size"] * lay["sequence_length"] // lay["cp"] * spec["hidden_size"]
    act *= spec.get("residual_streams", 1)
    p2p = comm_time_s("sendrecv", act / lay["tp"], n=2, stride=lay["tp"] * lay["cp"] * lay["dp"],
                      net=net, gpus_per_node=G) * deepspeed_p2p_factor(lay)
    if lay["tp"] > 1 and not lay["sp"] and not eager_framework(lay):
        # Megatron-LM's scatter/gather (Narayanan et al. 2021 sec. 4.1; on by default since
        # 2021-02, skipped under sequence parallelism: megatron/p2p_communication.py): each tp
        # rank sends 1/tp of the tensor, the receiver all-gathers it over NVLink, unoverlapped
        p2p += comm_time_s("all_gather", act, n=lay["tp"], stride=1, net=net, gpus_per_node=G)
    return p2p


def stage_costs(spec, lay, st, held, *, hw, net, cache, lays, ends, p2p):
    """(compute, exposed comm, (non-expert, expert) parameters) of pipeline stage `st` holding
    layers `held`, per micro-batch: its layers' LayerCosts (cached per kind, recompute mode and
    LAYER_COST_KEYS), the embedding on the first stage, the head and loss on the last, the
    pipeline sends, and eager PyTorch's weight-gradient kernels. `lays`: the layout of each
    recompute mode, shared by the stages."""
    pp, vp, layers = lay["pp"], lay["vp"], spec["layers"]
    comp, comm, kinds = {}, {}, {}
    for i, mode in zip(held, layer_modes(lay, held)):
        lid = (id(layers[i]), mode)
        kinds[lid] = kinds.get(lid, 0) + 1
        kinds.setdefault(("layer", lid), layers[i])
    for lid, count in kinds.items():
        if lid[0] == "layer":
            continue
        if lid[1] not in lays:
            ly = lay if lid[1] == lay["recompute"] else Layout(lay, recompute=lid[1])
            lays[lid[1]] = (ly, tuple(ly.get(k) for k in LAYER_COST_KEYS))
        ly, key_lay = lays[lid[1]]
        k = (lid[0], key_lay)
        if k not in cache:
            cache[k] = layer_cost(kinds[("layer", lid)], spec=spec, lay=ly, hw=hw, net=net)
        _sum_into(comp, cache[k]["compute"], count)
        _sum_into(comm, cache[k]["comm"], count)
    first, last = ends
    if st == 0:
        _sum_into(comp, {"embedding": [first[0], first[1], 0.0]})
    if st == pp - 1:
        _sum_into(comp, {"output_head_and_loss": [last[0], last[1], 0.0]})
    if pp > 1:
        _sum_into(comm, {"pp": [p2p * vp, p2p * vp, 0.0]})
    pk = ("params", lay["tp"], pp, vp, lay["etp"], lay["ep"], layout_split(lay), st)
    if pk not in cache:
        cache[pk] = stage_params_per_rank(spec, tp=lay["tp"], pp=pp, vp=vp, etp=lay["etp"],
                                          ep=lay["ep"], stage=st, layers_held=held)[:2]
    if eager_framework(lay):
        grads = eager_grad_s(sum(cache[pk]), len(held), lay=lay, hw=hw)
        _sum_into(comp, {"grad_casts_and_copies": grads})
    return comp, comm, cache[pk]


def sharded_gathers_s(params, comp, num_layers, dp_exp, *, lay, hw, net):
    """(exposed seconds of the per-layer parameter gathers, the DP exposure left) from the first
    stage's parameters and compute. ZeRO-3: every layer's parameters gathered before its forward
    and backward, every micro-batch, prefetched one layer ahead (DeepSpeed stage 3 / FSDP):
    exposed where a gather outlasts its layer. Eager PyTorch at ZeRO 2-3: FSDP's per-layer
    collectives (fsdp_exposed_s) in place of the bucketed DP reduction."""
    n = lay["dp"] * lay["cp"]
    eager = eager_framework(lay)
    if lay["zero_stage"] == 3 and (n > 1 or lay.get("offload_param")) and not eager:
        ne, ex = params
        per_layer = (ne + ex) / max(num_layers, 1)
        ag = comm_time_s("all_gather", per_layer * 2, n=n, stride=lay["tp"], net=net,
                         gpus_per_node=lay["gpus_per_node"])
        if lay.get("offload_param"):  # DeepSpeed offload_param: the shard comes from the host first
            ag += offload_param_fetch_s(per_layer / n, lay=lay, hw=hw)
        nl = max(num_layers, 1)
        f_layer, b_layer = (t / nl for t in pass_times_s(comp))
        sd = lay["overlap_slowdown"]
        z3 = lay["num_microbatches"] * nl * (_hidden(ag, f_layer, sd) + _hidden(ag, b_layer, sd))
        return z3, dp_exp
    if eager and lay["zero_stage"] >= 2 and n > 1:
        return fsdp_exposed_s(params, comp, num_layers, lay=lay, net=net), 0.0
    return 0.0, dp_exp


def grad_sync_copies_s(params, *, lay, hw):
    """The dated gradient sync's copies (GRAD_PATH_2021 / GRAD_PATH_2022) for `params` held: local
    DDP runs them after the pipeline drains for any dp, dp = 1 included; PyTorch DDP's bucket
    copies run on the compute stream in the backward. 0 for today's stacks."""
    path = grad_path(lay)
    if not path or (lay["dp_overlap"] and lay["dp"] * lay["cp"] <= 1):
        return 0.0
    per_param = path["sync_torch" if lay["dp_overlap"] else "sync_local"]
    return memory_time_s(params * per_param, 3, hw=hw)


def tied_embedding_sync_s(spec, *, lay, net):
    """Megatron-LM all-reduces the two embedding copies' gradients of a tied model across the
    first and last stages (0 without a pipeline or tying)."""
    pp = lay["pp"]
    if pp <= 1 or not spec["tied_embeddings"]:
        return 0.0
    nbytes = spec["vocab_size"] * spec["word_embed_proj_dim"] / lay["tp"] * lay["grad_bytes"]
    stride = lay["tp"] * lay["cp"] * lay["dp"] * (pp - 1)
    return comm_time_s("all_reduce", nbytes, n=2, stride=stride, net=net,
                       gpus_per_node=lay["gpus_per_node"])


def step_breakdown(parts, *, m, bubble, dp, sharded, eager, opt, copies):
    """The step's breakdown: the slowest stage's components x m, then what the schedule and the
    step add."""
    comp, comm = parts
    breakdown = {}
    for k, v in comp.items():
        breakdown[f"compute_{k}"] = m * (v[0] + v[1])
        if v[2]:
            breakdown[f"recompute_{k}"] = m * v[2]
    for k, v in comm.items():
        breakdown[f"exposed_{k}_comm"] = m * (v[0] + v[1] + v[2])
    breakdown["pipeline_bubble"] = bubble
    breakdown["exposed_dp_comm"] = dp
    if sharded:  # PyTorch FSDP's per-layer gathers and reduce-scatters, or ZeRO-3's gathers
        breakdown["exposed_fsdp_comm" if eager else "exposed_zero3_gather"] = sharded
    breakdown["optimizer_step"] = opt
    if copies:
        breakdown["grad_sync_copies"] = copies
    return breakdown


def step_result(spec, lay, *, step, breakdown, memory, hw, flops, worst, stage_s, dp_sync):
    """evaluate()'s result: the step, MFU and HFU (hardware FLOPs per recompute mode, counted
    once per mode into `flops`), throughput, and the memory against the GPU's capacity."""
    gbs, n = lay["global_batch_size"], lay["num_gpus"]
    model_flops = gbs * flops["model"]
    rkey = recompute_key(lay)
    if rkey not in flops["hardware"]:
        flops["hardware"][rkey] = flops["model"] + sequence_recompute_flops(spec, seq_len=lay["sequence_length"],
                                                                          lay=lay)
    hw_flops = gbs * flops["hardware"][rkey]
    tokens = gbs * lay["sequence_length"]
    total_bytes = memory["total_bytes"]
    return {"step_time_s": step, "breakdown_s": breakdown,
            "mfu": model_flops / (step * n * hw["peak_mfu"]),
            "hfu": hw_flops / (step * n * hw["peak_mfu"]),
            "model_tflops_per_gpu": model_flops / step / n / 1e12,
            "tokens_per_s": tokens / step, "tokens_per_s_per_gpu": tokens / step / n,
            "total_bytes": total_bytes, "memory": memory,
            "fits": hw["memory_bytes"] is None or total_bytes <= hw["memory_bytes"],
            "headroom_bytes": None if hw["memory_bytes"] is None else hw["memory_bytes"] - total_bytes,
            "slowest_stage": worst, "stage_time_s": stage_s, "dp_sync_s": dp_sync,
            "hardware_flops_per_step": hw_flops}


def _add(parts, key, fwd, bwd, rec=0.0):
    p = parts.setdefault(key, [0.0, 0.0, 0.0])
    p[0] += fwd
    p[1] += bwd
    p[2] += rec
