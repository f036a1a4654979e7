"""Activation recompute modes: which forward work each mode runs again in the backward, which
layers it applies to, and the FLOPs that adds (calc_training_time.py's HFU, the step model's
recompute column, calc_transformer_mem.py's stored activations).

Modes (--recompute), per checkpointed layer:
  none       nothing recomputed, everything autograd needs is kept.
  full       the whole layer again from its input (Megatron-LM --recompute-granularity full,
             torchtitan FullAC, transformers' gradient checkpointing).
  selective  Megatron-LM's --recompute-granularity selective with --recompute-modules (default
             core_attn; megatron/core/transformer/transformer_config.py, recompute_modules):
               core_attn       the attention core (scores, softmax, context). Under a fused
                               kernel the kernel's forward runs again and almost nothing is saved
                               (the config warns so), but it is recomputed all the same.
               mlp             the dense MLP (its matmuls and activation); its input is kept.
               moe             the whole MoE layer: router, dispatch and combine (all-to-all
                               again under ep), routed and shared experts.
               moe_act         the routed experts' activation function (output discarded).
               shared_experts  the shared experts' MLP.
               layernorm       each block's norm (output discarded, recomputed from its input).
               mla_up_proj     MLA's up-projections and rope (q, k, v at all heads discarded).
  op-sac     torchtitan's per-op selective checkpointing (SelectiveAC; before 2026-03
             selective_ac_option = "op"): in each block the outputs of compute-intensive ops are
             saved -- attention (SDPA/flash) outputs and every odd-numbered matmul, counting
             the block's matmuls in forward order -- and everything else is recomputed: every
             even-numbered matmul, all elementwise work (norms, rope, activations, residual
             adds), and the router matmul (force_recompute_mm_shapes_by_fqns: moe.router.gate).
             Routed experts run grouped_mm, outside the save list: recomputed (an assumption
             where a stack saves them). torchtitan/distributed/activation_checkpoint.py.
--recompute-every k applies the mode to every k-th layer only, counting from the first layer,
the others recomputing nothing (torchtitan's selective_ac_option = "k" before 2026-03: layers
k, 2k, ... checkpointed; _apply_layer_sac).
"""

from ..model.formulas import (attention_core_flops, attention_head_dims, attention_linear_flops_per_token,
    mixer_widths, mla_q_macs_per_token, mlp_flops_per_token, query_key_pairs)
from ..model.sharding import attention_on_rank, mlp_on_rank


RECOMPUTE_MODES = ("none", "selective", "full", "op-sac")
RECOMPUTE_MODULES = ("core_attn", "mlp", "moe", "moe_act", "shared_experts", "layernorm", "mla_up_proj")
DEFAULT_RECOMPUTE_MODULES = ("core_attn",)  # Megatron-LM's default


def layer_checkpointed(index, *, every):
    """True when layer `index` (0-based over the whole model) is checkpointed under
    --recompute-every k: layers k-1, 2k-1, ... (torchtitan counts blocks from 1 and checkpoints
    the k-th, 2k-th, ...)."""
    return (index + 1) % every == 0


def layer_mode(lay, index):
    """The recompute mode layer `index` runs under: the layout's mode on checkpointed layers,
    none on the others."""
    every = lay.get("recompute_every") or 1
    return lay["recompute"] if layer_checkpointed(index, every=every) else "none"


def layer_modes(lay, indices):
    """layer_mode of each layer in `indices` (a stage's), the layout read once."""
    every = lay.get("recompute_every") or 1
    mode = lay["recompute"]
    return [mode if layer_checkpointed(i, every=every) else "none" for i in indices]


def modules_of(lay):
    """The selective modules in force ((), unless the mode is selective)."""
    if lay["recompute"] != "selective":
        return ()
    return tuple(lay.get("recompute_modules") or DEFAULT_RECOMPUTE_MODULES)


def recompute_key(lay):
    """A hashable name of the recompute setting: the mode alone for the default setting (the key
    sequence_flops's hardware FLOPs use), else mode, modules and every."""
    mods, every = modules_of(lay), lay.get("recompute_every") or 1
    if every == 1 and mods in ((), DEFAULT_RECOMPUTE_MODULES):
        return lay["recompute"]
    return (lay["recompute"], mods, every)


def attention_linear_shapes(attn_r, *, h):
    """(input width, output width) of one rank's attention projections as two matmuls with k = h
    and n = h: the output projection's input width (query heads x value dim, or a mixer's out_proj
    width), and everything else the block counts for the layer (q/k/v, gates, MLA's down and up
    projections, a lightning indexer's projections) folded into one matmul of the same FLOPs
    (attention_linear_flops_per_token). Exact in FLOPs; the shape of the folded part is approximate
    (MLA's up-projections reduce over their latent rank, not h)."""
    flops = attention_linear_flops_per_token(attn_r, h=h)
    if attn_r["span"] == "state":
        out = mixer_widths(attn_r)[1]
    else:
        out = attn_r["heads"] * attention_head_dims(attn_r)[1]
    n_in = flops / (2 * h) - out
    if n_in <= 0:
        return flops / (2 * h), 0
    return n_in, out


def block_matmuls(layer, *, h, tp, etp):
    """The matmuls of one layer on one tensor-parallel rank that op-SAC counts, in forward order,
    as (k, n, recomputed, owner) per token: n the output width on the rank, k the
    reduction. MHA/GQA/MQA: q (with any output gate), k, v, o as separate projections
    (torchtitan's and transformers' modules); other attention kinds as attention_linear_shapes's
    two folded matmuls; a gated MLP gate, up, down (w1, w3, w2), a 2-matrix MLP up, down; an MoE
    block's shared experts likewise (routed experts and router are recomputed whole, not here).
    Every second one in the layer (the 2nd, 4th, ...) is recomputed."""
    mms = []  # (k, n, owner)
    for attn in layer["attention"]:
        ar = attention_on_rank(attn, tp=tp)
        if ar["kind"] == "mha" and ar["span"] != "state":
            a, kv = ar["heads"], ar["kv_heads"]
            d, dv = attention_head_dims(ar)
            gate = ar.get("output_gate", "none")
            q = a * d * (2 if gate == "elementwise" else 1) + (a if gate == "headwise" else 0)
            kvp = ar.get("kv_proj", 2)  # 2: k and v; 1: one projection for both (k = v); 0: reused K/V
            proj = [(h, q)] + [(h, kv * d), (h, kv * dv)][:kvp] + [(a * dv, h)]
        else:
            n_in, n_out = attention_linear_shapes(ar, h=h)
            proj = [(h, n_in)] + ([(n_out, h)] if n_out else [])
        mms += [(k, n, "attention_linear") for k, n in proj]
    for mlp in layer["mlp"]:
        mr = mlp_on_rank(mlp, tp=tp, etp=etp)
        w = mr["width"] if mlp["kind"] == "dense" else mr["shared_width"]
        if not w:
            continue
        proj = ([(h, w), (h, w)] if mlp["linears"] == 3 else [(h, w)]) + [(w, h)]
        mms += [(k, n, "mlp") for k, n in proj]
    return [(k, n, i % 2 == 1, owner) for i, (k, n, owner) in enumerate(mms)]


def layer_recompute_flops(layer, *, h, seq_len, mode, modules):
    """Forward FLOPs of one sequence that one layer runs again under a mode (module list for
    selective), counted as calc_transformer_flops.py counts the forward (attention over the full
    s x s, as sequence_flops): full the whole layer; selective the modules' matmuls (core_attn the
    s-squared scores and context, mla_up_proj the up-projections, mlp, moe, shared_experts;
    moe_act and layernorm are not matmuls); op-sac the recomputed matmuls of block_matmuls plus
    the routed experts and router."""
    s = seq_len
    if mode == "none":
        return 0
    core = 0
    for attn in layer["attention"]:
        pairs = query_key_pairs(attn, seq_len=s, attention="full")
        c = attention_core_flops(attn, pairs=pairs)
        core += c.get("attention_scores", 0) + c.get("attention_context", 0) + c.get("indexer_scores", 0)
    mlp = {}
    for m in layer["mlp"]:
        for k, v in mlp_flops_per_token(m, h=h).items():
            mlp[k] = mlp.get(k, 0) + v
    if mode == "full":
        lin = sum(attention_linear_flops_per_token(a, h=h) for a in layer["attention"]) + sum(mlp.values())
        state = sum(v for a in layer["attention"] if a["span"] == "state"
                    for v in attention_core_flops(a, pairs=query_key_pairs(a, seq_len=s, attention="full")).values())
        extra = (layer.get("extra_flops") if layer.get("extra_flops") is not None
                 else 2 * layer["extra_params"] + layer.get("weightless_flops", 0))
        return s * (lin + extra) + core + state
    if mode == "op-sac":
        mm = sum(2 * k * n for k, n, rec, _ in block_matmuls(layer, h=h, tp=1, etp=1) if rec)
        return s * (mm + mlp.get("routed_experts", 0) + mlp.get("router", 0))
    out = 0
    if "core_attn" in modules:
        out += core
    if "mla_up_proj" in modules:
        for a in layer["attention"]:
            if a["kind"] == "mla":
                d_nope, d_v = a["qk_nope_head_dim"], a["v_head_dim"]
                up = a["kv_lora_rank"] * a["heads"] * (d_nope + d_v)
                up += mla_q_macs_per_token(a, h=h) - h * a["q_lora_rank"] if a["q_lora_rank"] else 0
                out += s * 2 * up
    if "mlp" in modules:
        out += s * mlp.get("dense_mlp", 0)
    if "moe" in modules:
        out += s * (mlp.get("routed_experts", 0) + mlp.get("shared_experts", 0) + mlp.get("router", 0))
    elif "shared_experts" in modules:
        out += s * mlp.get("shared_experts", 0)
    return out


def sequence_recompute_flops(spec, *, seq_len, lay):
    """Forward FLOPs of one sequence recomputed in the backward under the layout's recompute
    setting (mode, modules, every k-th layer), summed over the model's layers (not the head)."""
    h, mods = spec["hidden_size"], modules_of(lay)
    seen, total = {}, 0
    for i, layer in enumerate(spec["layers"]):
        mode = layer_mode(lay, i)
        key = (id(layer), mode)
        if key not in seen:
            seen[key] = layer_recompute_flops(layer, h=h, seq_len=seq_len, mode=mode, modules=mods)
        total += seen[key]
    return total



RECOMPUTE_WHAT = {"none": "nothing", "full": "each layer's whole forward from its input",
                  "op-sac": "every second matmul of each layer, routed experts and router, and all memory-bound work "
                            "(torchtitan per-op SAC; attention outputs and the other matmuls kept)",
                  "core_attn": "the attention core", "mlp": "the dense MLP", "moe": "the MoE layer (all-to-all included)",
                  "moe_act": "the experts' activation", "shared_experts": "the shared experts",
                  "layernorm": "the norms", "mla_up_proj": "MLA's up-projections"}


def recompute_text(lay, *, brief=False):
    """One line saying what the layout's recompute setting runs again in the backward; brief: the
    mode's name alone for none, full and the default selective."""
    mode, every = lay["recompute"], lay.get("recompute_every") or 1
    if brief and every == 1 and mode in ("none", "full", "selective") and modules_of(lay) in ((), DEFAULT_RECOMPUTE_MODULES):
        return f"recompute {mode}"
    if mode == "selective":
        what = "selective: " + ", ".join(RECOMPUTE_WHAT[m] for m in modules_of(lay))
    else:
        what = f"{mode}: {RECOMPUTE_WHAT[mode]}"
    return f"recompute {what}" + (f", on one layer in {every} (layers 0, {every}, {2 * every}, ...; the others none)"
                                  if every > 1 and mode != "none" else "")
