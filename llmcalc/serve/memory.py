"""Serving memory per GPU: the weights and the KV cache or state one rank holds, and the KV pool."""

import math

from ..model.formulas import layer_params, norm_params
from ..model.kinds import layer_groups
from ..model.sharding import attention_on_rank, mlp_on_rank
from .cache import layer_kv_cache_bytes, layer_state_bytes


def kv_pool_capacity(spec, hw, *, tp, pp, context, w_bytes, kv_bits, a_bits, state_bits, dp=1):
    """Requests whose cache fits in the KV pool at `context` tokens each: (pool bytes, bytes per
    request, requests). The pool is the GPU memory the stack lets the engine use
    (hw["memory_utilization"]: vLLM's gpu_memory_utilization) less the weights on the most-loaded
    rank; the count is vLLM's own "maximum concurrency" figure (pool / one request at full
    length); with dp data-parallel attention groups each holds its own requests, dp pools in all.
    A stack whose fraction is of the memory left free after the weights (hw["pool_of_free"]:
    TensorRT-LLM's free_gpu_memory_fraction, which KVCacheManager::calculateMaxNumBlocks applies to
    cudaMemGetInfo's free bytes once the model is loaded) gets that share of the rest instead.
    Activation workspace and CUDA-graph memory are not subtracted (stated)."""
    mem, util = hw["gpu_memory_bytes"], hw["memory_utilization"]
    pool = (mem - w_bytes) * util if hw.get("pool_of_free") else mem * util - w_bytes
    one = cache_bytes_per_gpu(spec, tp=tp, pp=pp, batch=1, context=context, kv_bits=kv_bits,
                              a_bits=a_bits, state_bits=state_bits)
    per = one["kv"] + one["indexer"] + one["state"]
    return pool, per, dp * (int(pool // per) if per > 0 and pool > 0 else (10 ** 9 if pool > 0 else 0))


def kv_pool_tokens(*, pool_bytes, bytes_per_request, context, dp=1):
    """The KV pool in tokens, as a per-request simulation counts it: dp pools of pool_bytes, each
    token taking bytes_per_request / context (kv_pool_capacity's per-request cache at `context`
    tokens, spread evenly: a sliding window's or a linear mixer's constant cache is averaged over
    the context it was sized at). No per-token cache (a model without one): unbounded, 1e15."""
    return dp * pool_bytes * context / bytes_per_request if bytes_per_request > 0 else 1e15


def layer_weight_bytes(layer, *, h, norm, tp, w_bits, e_bits=None, ep=1, etp=None):
    """Weight bytes of one layer on one TP rank, with the memory script's split (attention_on_rank,
    mlp_on_rank with each routed expert's width over tp; Shoeybi et al. 2019 sec. 3): the rank's
    matrices at w_bits, its routed experts at e_bits (a checkpoint that stores them narrower,
    gpt-oss's MXFP4), and what stays whole on every rank and unquantized (norms, routers, other
    per-layer weights) at >= 16 bits. Expert parallelism: ceil(E / ep) routed experts per rank
    (the slots of an uneven split hold redundant copies, as SGLang's and DeepSeek's EPLB place
    them), each split over etp ranks (default tp)."""
    share = {"attention": tuple(attention_on_rank(x, tp=tp) for x in layer["attention"]),
             "mlp": tuple(mlp_on_rank(m, tp=tp, etp=etp or tp) for m in layer["mlp"]),
             "norms": layer["norms"], "extra_params": layer["extra_params"]}
    p = layer_params(share, h=h, norm=norm)
    small = p["norms"] + p["router"] + p["extra"]
    wb, eb = w_bits / 8, (w_bits if e_bits is None else e_bits) / 8
    share_e = max((math.ceil(m["num_experts"] / ep) / m["num_experts"] for m in layer["mlp"]
                   if m["kind"] != "dense"), default=1.0)
    return (p["total"] - p["routed_experts"] - small) * wb + p["routed_experts"] * share_e * eb + small * max(wb, 2)


def _stage_kind_counts(spec, pp):
    """Per pipeline stage, how many layers of each kind it holds: [{id(layer): count}]. Stages take
    ceil(L/pp) consecutive layers each until the layers run out (the last ones may hold fewer or
    none); the most-loaded stage, which sets the pace, equals vLLM's get_pp_indices split."""
    if pp == 1:
        return [{id(layer): cnt for layer, cnt, _ in layer_groups(spec)}]
    layers = spec["layers"]
    q = math.ceil(len(layers) / pp)
    out = []
    for st in range(pp):
        counts = {}
        for layer in layers[st * q:(st + 1) * q]:
            counts[id(layer)] = counts.get(id(layer), 0) + 1
        out.append(counts)
    return out


def weight_bytes_per_gpu(spec, *, tp, pp, w_bits, e_bits=None, ep=1, etp=None):
    """Weight bytes on the most-loaded rank: per pipeline stage its layers (layer_weight_bytes per
    kind), the first stage the vocab-parallel token embedding (/tp) with any per-layer embedding
    table (/tp), the position table, embedding projections and norm and other model-level weights
    (whole), the last stage the final norm and the head (/tp; with tied embeddings and pp > 1 a
    second copy of the embedding), as the memory script places them; embeddings and head at >= 16
    bits."""
    h, nm, V, p = spec["hidden_size"], spec["norm"], spec["vocab_size"], spec["word_embed_proj_dim"]
    per_kind = {id(layer): layer_weight_bytes(layer, h=h, norm=nm, tp=tp, w_bits=w_bits, e_bits=e_bits,
                                              ep=ep, etp=etp)
                for layer, _, _ in layer_groups(spec)}
    hb = max(w_bits, 16) / 8
    emb = (V * p // tp + spec["position_embedding_rows"] * h + (2 * p * h if p != h else 0)
           + (norm_params(width=h, norm=nm) if spec["embedding_norm"] else 0)
           + spec["per_layer_embedding_params"] // tp + sum(spec["other_params"].values())) * hb
    head = ((norm_params(width=h, norm=nm) if spec["final_norm"] else 0)
            + (V * p // tp if not spec["tied_embeddings"] or pp > 1 else 0)) * hb
    stages = _stage_kind_counts(spec, pp)
    return max(sum(c * per_kind[k] for k, c in st.items()) + (emb if i == 0 else 0) + (head if i == len(stages) - 1 else 0)
               for i, st in enumerate(stages))


def layer_cache_bytes(layer, *, tp, batch, context, kv_bits, a_bits=16, state_bits=32):
    """{"kv", "indexer", "state"} cache bytes one layer holds on one TP rank for `batch` sequences at
    `context` tokens, at the serving flags' bit widths: cache.layer_kv_cache_bytes (the KV cache
    and indexer keys, MLA as its latent, as vLLM and SGLang keep it) and cache.layer_state_bytes
    (a linear mixer's conv window at a_bits and recurrent state at state_bits, and the convolution
    windows some attention layers keep beside their K/V) -- the bytes calc_transformer_mem.py
    --infer reports."""
    kv = layer_kv_cache_bytes(layer, tp=tp, kv_bytes=kv_bits / 8, mla_cache="latent", batch=batch, context=context)
    st = layer_state_bytes(layer, tp=tp, conv_bytes=a_bits / 8, state_bytes=state_bits / 8, batch=batch)
    return {"kv": float(kv["kv"]), "indexer": float(kv["indexer"]), "state": float(st["conv"] + st["recurrent"])}


def cache_bytes_per_gpu(spec, *, tp, pp, batch, context, kv_bits, a_bits=16, state_bits=32):
    """{"kv", "indexer", "state"} cache bytes on the most-loaded pipeline stage (the one whose
    layers hold the most; stages of ceil(L/pp) consecutive layers)."""
    per_kind = {id(layer): layer_cache_bytes(layer, tp=tp, batch=batch, context=context, kv_bits=kv_bits,
                                             a_bits=a_bits, state_bits=state_bits)
                for layer, _, _ in layer_groups(spec)}
    stages = [{part: sum(c * per_kind[k][part] for k, c in st.items()) for part in ("kv", "indexer", "state")}
              for st in _stage_kind_counts(spec, pp)]
    return max(stages, key=lambda st: st["kv"] + st["indexer"] + st["state"])
