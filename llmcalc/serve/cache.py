"""What each layer keeps per sequence on one tensor-parallel rank while serving: the KV cache (and a
lightning indexer's keys) by layer kind, and the constant state of linear-attention, state-space
and convolution layers, as transformers 5's cache classes hold them. The one formula both
calc_transformer_mem.py --infer (serve/footprint.py) and calc_inference_latency.py
(serve/memory.py) read. Reference: Pope et al. 2022, "Efficiently Scaling Transformer Inference"
(the KV cache); tests/fixtures/hf_cache_bytes.json and hf_state_bytes.json (transformers' caches
measured)."""

from ..model.formulas import cache_elements_per_token, cached_tokens, compressed_cache_elements, state_elements
from ..model.sharding import attention_on_rank


def layer_cache_bytes_per_token(layer, *, tp, kv_bytes, mla_cache="latent"):
    """{"kv", "indexer"} bytes one token of one sequence takes in one layer's cache on one tp rank:
    the block's cache_elements_per_token on the rank's share of each attention block
    (attention_on_rank): K and V at kv/tp heads, one replicated head when kv < tp; MLA's latent
    (r_kv + d_rope, DeepSeek-V2 sec. 2.1.3) whole on every rank, or with mla_cache="expanded" a/tp
    heads of K and V as transformers' cache holds them; a lightning indexer's key (d_I) whole on
    every rank; nothing for a layer that reuses another layer's cache."""
    out = {"kv": 0, "indexer": 0}
    for attn in layer["attention"]:
        n = cache_elements_per_token(attention_on_rank(attn, tp=tp), mla_cache=mla_cache)
        out["kv"] += n["kv"] * kv_bytes
        out["indexer"] += n["indexer"] * kv_bytes
    return out


def layer_kv_cache_bytes(layer, *, tp, kv_bytes, mla_cache, batch, context):
    """{"kv", "indexer"} bytes one layer's cache holds on one tp rank for `batch` sequences of
    `context` tokens: per attention block, bytes per token (layer_cache_bytes_per_token) x the
    block's cached_tokens -- min(context, window) on a sliding layer (Mistral 7B sec. 2's rolling
    buffer; transformers keeps window - 1 between steps, so a decode step peaks at the window),
    every token on full and chunked layers (transformers' cache for chunked layers keeps them all),
    none on a layer that reuses another layer's cache; a DeepSeek-V4 layer its window plus its
    compressor's entries and open window (compressed_cache_elements)."""
    out = {"kv": 0, "indexer": 0}
    for attn in layer["attention"]:
        n = cache_elements_per_token(attention_on_rank(attn, tp=tp), mla_cache=mla_cache)
        t = batch * cached_tokens(attn, context=context)
        c = compressed_cache_elements(attn, context=context)  # DeepSeek-V4: one shared head, whole on every rank
        out["kv"] += n["kv"] * kv_bytes * t + batch * c["kv"] * kv_bytes
        out["indexer"] += n["indexer"] * kv_bytes * t + batch * c["indexer"] * kv_bytes
    return out


def layer_state_bytes(layer, *, tp, conv_bytes, state_bytes, batch):
    """{"conv", "recurrent"} bytes one layer's linear mixers hold on one tp rank for `batch`
    sequences, whatever their length: state_elements on the rank's share of the heads
    (attention_on_rank), the conv window at conv_bytes (the model's dtype in transformers' cache)
    and the recurrent state at state_bytes (fp32 in transformers' cache and flash-linear-attention;
    tests/fixtures/hf_cache_bytes.json). Softmax attention layers: none, except the convolution
    windows Inkling and ZAYA keep beside their K/V (state_elements)."""
    out = {"conv": 0, "recurrent": 0}
    for attn in layer["attention"]:
        n = state_elements(attention_on_rank(attn, tp=tp))
        out["conv"] += batch * n["conv"] * conv_bytes
        out["recurrent"] += batch * n["recurrent"] * state_bytes
    return out
