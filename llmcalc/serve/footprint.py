"""Per-GPU memory to serve, as calc_transformer_mem.py --infer reports it: each layer kind's KV
cache (and DeepSeek's indexer keys) per token and per batch, linear-attention and state-space
layers' constant state, one prefill's activations, and the heaviest pipeline stage's total.
References: Pope et al. 2022, "Efficiently Scaling Transformer Inference" (the KV cache);
transformers 5's cache classes (what each layer kind keeps); Korthikanti et al. 2022 (activations).
"""

from ..model.formulas import (attention_head_dims, cached_tokens, compressed_cache_elements,
    expected_real_experts, layer_params, mixer_widths)
from ..model.kinds import attention_kind, layer_groups
from ..model.sharding import attention_on_rank
from .cache import layer_cache_bytes_per_token, layer_kv_cache_bytes, layer_state_bytes
from ..train.memory import (all_stage_layers, mlp_stored_widths, once_per_kind, stage_layers,
    stage_params_per_rank)


def kv_cache_bytes(spec, layer_indices, *, tp, kv_bytes, mla_cache, batch, context):
    """{"kv", "indexer"}: the cache on one rank holding `layer_indices` of a spec's layer list, the
    sum of layer_kv_cache_bytes over those layers (once per distinct layer kind, times its count)."""
    counts = {}
    for i in layer_indices:
        layer = spec["layers"][i]
        counts[id(layer)] = (layer, counts.get(id(layer), (layer, 0))[1] + 1)
    out = {"kv": 0, "indexer": 0}
    for layer, n in counts.values():
        c = layer_kv_cache_bytes(layer, tp=tp, kv_bytes=kv_bytes, mla_cache=mla_cache, batch=batch,
                              context=context)
        out["kv"] += n * c["kv"]
        out["indexer"] += n * c["indexer"]
    return out


def state_cache_bytes(spec, layer_indices, *, tp, conv_bytes, state_bytes, batch):
    """{"conv", "recurrent"}: the linear mixers' state on one rank holding `layer_indices`, the sum
    of layer_state_bytes over those layers (once per distinct layer kind)."""
    out = {"conv": 0, "recurrent": 0}
    for x in once_per_kind(spec["layers"], layer_indices, lambda layer: layer_state_bytes(
            layer, tp=tp, conv_bytes=conv_bytes, state_bytes=state_bytes, batch=batch)):
        out["conv"] += x["conv"]
        out["recurrent"] += x["recurrent"]
    return out


def all_attention_layers(spec):
    """The spec's layer list with every linear mixer replaced by the model's first softmax attention
    block (its full-attention kind): the same model counted as if every layer were attention, for
    the hybrid's saving. None when the model has no linear mixer or no attention layer."""
    attn = next((x for layer in spec["layers"] for x in layer["attention"]
                 if x["span"] == "full" and not x["kv_shared"]), None)
    if attn is None or not any_attn(spec, lambda x: x["span"] == "state"):
        return None
    swapped = {}
    out = []
    for layer in spec["layers"]:
        if id(layer) not in swapped:
            swapped[id(layer)] = dict(layer, attention=tuple(attn if x["span"] == "state" else x
                                                             for x in layer["attention"]))
        out.append(swapped[id(layer)])
    return out


def inference_activation_bytes(layers, *, s, b, h, V, tp, flash, act_bytes, etp=None):
    """Working set of one prefill forward over b x s tokens on one tp rank: the residual stream
    and normed input (2 h per token), plus the largest block of any of `layers` (distinct layer
    dicts): attention -- q, k, v on the rank's heads and, without flash attention, a/tp x s scores
    per token (eager attention scores all s keys on sliding and chunked layers too); a lightning
    indexer's q and key (H_I d_I + d_I) and its fp32 logits over s keys -- or an MLP's intermediate
    (f, or 2 f + f gated; /tp; MoE: the k routed experts' f_e /etp plus the shared width /tp); plus fp32
    logits for the last position of each sequence (4 b V / tp). A Gated DeltaNet mixer: its
    in_proj's output, the conv's output and the core's output (mixer_widths) and an fp32 chunk
    matrix (the delta rule's C x C per chunk and value head, flash-linear-attention's A: 4 H C per
    token; SSD's C B^T per chunk and group, mamba_ssm's _bmm_chunk_fwd: 4 G Q). An estimate: one
    layer's peak."""
    B = act_bytes
    widest = 0
    for layer in layers:
        for attn in layer["attention"]:
            x = attention_on_rank(attn, tp=tp)
            if x["span"] == "state":
                w_in, w_out, conv_dim = mixer_widths(x)
                mats = x["kv_heads"] if x["kind"] == "mamba2" else x["heads"]  # SSD's C B^T is per group
                widest = max(widest, B * (w_in + conv_dim + w_out) + 4 * mats * x["state_chunk"])
                continue
            d, _ = attention_head_dims(x)
            per_tok = B * ((x["heads"] + 2 * x["kv_heads"]) * d + (0 if flash else x["heads"] * s))
            if x["index_topk"]:
                per_tok += B * (x["index_heads"] * x["index_head_dim"] + x["index_head_dim"]) + 4 * s
            widest = max(widest, per_tok)
        for m in layer["mlp"]:
            per_f = mlp_stored_widths(m["linears"])
            if m["kind"] == "dense":
                width = m["width"] * per_f / tp
            else:  # routed experts split their width over etp, shared experts over tp
                width = (expected_real_experts(m) * m["width"] / (etp or tp) + m["shared_width"] / tp) * per_f
            widest = max(widest, int(B * width))
    return B * s * b * 2 * h + s * b * widest + 4 * b * V / tp


def inference_memory(spec, c, b, ctx):
    """Per-GPU inference memory for batch b and context ctx tokens (prompt + output) on the
    heaviest pipeline stage: weights at their bit width, the KV cache and any indexer key cache of
    the stage's layers (kv_cache_bytes: per layer kind, sliding layers capped at their window), the
    constant state of its linear mixers (state_cache_bytes) and one prefill forward's working set
    (inference_activation_bytes: the model's largest block). The KV rule is Pope et al. 2022 sec.
    3.1's (2 x layers x kv heads x head dim per token), per layer kind; weights as the memory of
    the stored checkpoint (quantization_config, _checkpoint_format) or --weight-bits."""
    tp, pp = c["tp"], c["pp"]
    L = spec["num_layers"]
    prompt = min(c["sequence_length"], ctx)
    if c["prefill_chunk"]:  # chunked prefill: one forward sees at most this many tokens
        b_eff = max(1, min(b, c["prefill_chunk"] // prompt)) if c["prefill_chunk"] >= prompt else 1
        prompt = min(prompt, c["prefill_chunk"])
    else:
        b_eff = b
    act = inference_activation_bytes([g[0] for g in layer_groups(spec)], s=prompt, b=b_eff,
                                     h=spec["hidden_size"], V=spec["vocab_size"], tp=tp,
                                     flash=c["flash_attention"], act_bytes=c["act_bytes"], etp=c["etp"])
    chunks = [[sum(row)] for row in c["chunk_layers"]]  # no interleaving: one chunk per rank
    stages = []
    by_stage = all_stage_layers(num_layers=L, pp=pp, vp=1, chunk_layers=chunks)
    for st in range(pp):
        layers = by_stage[st]
        ne, ex, emb = stage_params_per_rank(spec, tp=tp, pp=pp, vp=1, etp=c["etp"], ep=c["ep"],
                                            stage=st, layers_held=layers)
        # norms, routers and other per-layer weights stay unquantized (>= 16 bits), whole on every rank
        small = sum(once_per_kind(spec["layers"], layers, lambda x: sum(
            layer_params(x, h=spec["hidden_size"], norm=spec["norm"])[k] for k in ("norms", "router", "extra"))))
        wb = c["weight_bits"] / 8
        w = ((ne - emb - small) * wb + small * max(wb, c["weight_bytes"]) + ex * c["expert_weight_bits"] / 8
             + emb * max(wb, c["weight_bytes"]))
        cache = kv_cache_bytes(spec, layers, tp=tp, kv_bytes=c["kv_bytes"], mla_cache=c["mla_cache"],
                               batch=b, context=ctx)
        state = state_cache_bytes(spec, layers, tp=tp, conv_bytes=c["act_bytes"], state_bytes=c["state_bytes"],
                                  batch=b)
        total = w + cache["kv"] + cache["indexer"] + state["conv"] + state["recurrent"] + act + c["overhead_bytes"]
        stages.append({"stage": st, "stage_layers": len(layers), "params_per_gpu": ne + ex,
                       "weights_bytes": w,
                       "gradients_bytes": 0, "optimizer_bytes": 0, "zero_buffers_bytes": 0,
                       "kv_cache_bytes": cache["kv"], "indexer_cache_bytes": cache["indexer"],
                       "state_cache_bytes": state["conv"] + state["recurrent"],
                       "state_conv_bytes": state["conv"], "state_recurrent_bytes": state["recurrent"],
                       "activations_bytes": act, "total_bytes": total})
    return max(stages, key=lambda x: x["total_bytes"]), stages


def kv_cache_by_kind(spec, c, stage, *, batch, context):
    """The KV cache of one inference stage by layer kind, for the report: per distinct kind its
    label, layer count, bytes per token per layer, tokens each layer keeps, and bytes."""
    chunks = [[sum(row)] for row in c["chunk_layers"]]
    idx = stage_layers(num_layers=spec["num_layers"], pp=c["pp"], vp=1, stage=stage, chunk_layers=chunks)
    rows = {}
    for i in idx:
        layer = spec["layers"][i]
        if id(layer) not in rows:
            per_tok = layer_cache_bytes_per_token(layer, tp=c["tp"], kv_bytes=c["kv_bytes"],
                                                  mla_cache=c["mla_cache"])
            held = layer_kv_cache_bytes(layer, tp=c["tp"], kv_bytes=c["kv_bytes"], mla_cache=c["mla_cache"],
                                     batch=batch, context=context)
            rows[id(layer)] = {
                "attention": " + ".join(attention_kind(x)
                                        for x in layer["attention"]),
                "layers": 0, "first_layer": i,
                "kv_bytes_per_token": per_tok["kv"], "indexer_bytes_per_token": per_tok["indexer"],
                "cached_tokens": max((cached_tokens(x, context=context) for x in layer["attention"]), default=0),
                "kv_bytes_per_layer": held["kv"], "indexer_bytes_per_layer": held["indexer"],
                "state_bytes_per_layer": sum(layer_state_bytes(layer, tp=c["tp"], conv_bytes=c["act_bytes"],
                                                               state_bytes=c["state_bytes"], batch=batch).values()),
                "compressed_bytes_per_layer": batch * c["kv_bytes"] * sum(
                    sum(compressed_cache_elements(x, context=context).values()) for x in layer["attention"])}
        rows[id(layer)]["layers"] += 1
    return [r for r in rows.values() if r["attention"]]  # an MLP-only layer (Nemotron-H) caches nothing


def any_attn(spec, test):
    """True when some attention block of some layer kind passes `test`."""
    return any(test(x) for g in layer_groups(spec) for x in g[0]["attention"])
