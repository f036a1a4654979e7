"""Family readers for MoE and latent-attention decoders (DeepSeek-V2/V3/V3.2/V4 and MLA, gpt-oss,
Llama 4, GLM-4.5/5 with DSA, Mistral Large 4, MiniMax-M2, ERNIE 4.5, Hunyuan, LongCat-Flash,
Step-3.5, GraniteMoE, PhiMoE), and the helpers they share (MLA fields, MTP layers, MoE patterns)."""

from ..errors import CalcError
from .hub import _short
from .reader import ConfigReader


_DSV4_RATIO = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}


def _hyper_connection_layer_fields(*, hc, h):
    """Per layer, DeepSeek-V4's manifold-constrained hyper-connections over hc residual streams of
    width h (transformers' modeling_deepseek_v4; GLM-5-Next's layers have the same): two mixing
    modules, each a projection of the hc h concatenated streams to (2 + hc) hc mixing weights, its
    (2 + hc) hc biases and 3 scales. FLOPs per token and module: that projection (2 (2 + hc) hc^2 h)
    and comb^T @ streams (2 hc^2 h). The spec fields a reader sets from them."""
    return {"extra_params_per_layer": 2 * ((2 + hc) * hc * hc * h + (2 + hc) * hc + 3),
            "extra_flops_per_layer": 2 * (2 * (2 + hc) * hc * hc * h + 2 * hc * hc * h),
            "residual_streams": hc}


def _read_deepseek_v4(r, s, ll, notes, warnings):
    """DeepSeek-V4: every layer sliding-window attention over one shared K = V head with sinks,
    and, per layer_types (else the legacy per-layer compress_ratios 0 / 4 / 128, else two heavily
    compressed layers then compressed sparse and heavily compressed alternating), a compressor
    of rate compress_rates[kind] (4 and 128 by default) with, on compressed sparse layers, a
    lightning indexer. Every layer MoE with one shared expert of moe_intermediate_size
    (n_shared_experts is not read by transformers), the first num_hash_layers hash-routed (their
    router still has weights; the hash table is a buffer). Manifold-constrained hyper-connections:
    hc_mult residual streams, two mixing modules per layer and one before the head. The head is
    tied only with tie_word_embeddings; the MTP layer is not built."""
    L, h = s["num_layers"], s["hidden_size"]
    n_cfg = r.int("num_hidden_layers")
    s.update(ll, qkv_bias=False, attn_out_bias=False, mlp_bias=r.bool("mlp_bias", default=False),
             norms_per_layer=2, head_dim=r.int("head_dim", default=512), num_kv_heads=1)
    r.bool("attention_bias", default=False)  # read, not used by transformers
    rates = dict(r.sub("compress_rates") or {})
    csa_rate = r.int("compress_rate_csa", default=None) or rates.get("compressed_sparse_attention", 4)
    hca_rate = r.int("compress_rate_hca", default=None) or rates.get("heavily_compressed_attention", 128)
    for v in (csa_rate, hca_rate):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 2**20:
            raise CalcError(f"{r.where}: compress_rates must hold positive integers, got {_short(v)}")
    names = {"sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"}
    if r.has("layer_types"):
        lt = r.str_list("layer_types", choices=names, length=L)
    elif r.has("compress_ratios"):
        ratios = r.int_list("compress_ratios")
        bad = sorted({x for x in ratios if x not in _DSV4_RATIO})
        if bad:
            r.fail("compress_ratios", f"may hold only 0, 4 and 128 (transformers' legacy map; {bad} is not)",
                   ratios)
        if len(ratios) < L:
            r.fail("compress_ratios", f"lists {len(ratios)} layers, fewer than the {L} needed", ratios)
        lt = [_DSV4_RATIO[x] for x in ratios[:L]]
    else:
        lt = ["heavily_compressed_attention"] * min(n_cfg, 2) + [
            "compressed_sparse_attention" if i % 2 else "heavily_compressed_attention" for i in range(max(n_cfg - 2, 0))]
        lt = lt[:L]
    W = r.int("sliding_window", default=128)
    base = {"kind": "dsv4", "kv_proj": 1, "sinks": True, "q_lora_rank": r.int("q_lora_rank", default=1024),
            "o_groups": r.int("o_groups", default=8), "o_lora_rank": r.int("o_lora_rank", default=1024),
            "c_index_heads": 0, "c_index_head_dim": 0, "c_index_topk": 0, "compress": 0, "compress_kind": "none"}
    if (s["num_attention_heads"] * s["head_dim"]) % base["o_groups"]:
        raise CalcError(f"{r.where}: num_attention_heads x head_dim is not divisible by o_groups {base['o_groups']}")
    kinds = {"sliding_attention": {"attention": dict(base)},
             "heavily_compressed_attention": {"attention": dict(base, compress=hca_rate, compress_kind="hca")},
             "compressed_sparse_attention": {"attention": dict(
                 base, compress=csa_rate, compress_kind="csa",
                 c_index_heads=r.int("index_n_heads", default=64),
                 c_index_head_dim=r.int("index_head_dim", default=128),
                 c_index_topk=r.int("index_topk", default=512))}}
    hc = r.int("hc_mult", default=4, hi=1024)
    s.update(layer_types=["sliding"] * L, sliding_window=W,
             layer_overrides={i: kinds[t] for i, t in enumerate(lt)},
             **_hyper_connection_layer_fields(hc=hc, h=h),
             other_params={"hc_head": hc * hc * h + hc + 1}, input_matmul_params=hc * hc * h)
    f_e = r.int("moe_intermediate_size", default=2048)
    r.str_list("mlp_layer_types", choices={"moe", "hash_moe"}, length=L)  # checked: every layer MoE
    r.int("num_hash_layers", lo=0, default=3)  # hash routing: same weights as top-k routing
    r.int("n_shared_experts", lo=0, default=1)  # not read by transformers: one shared expert
    s.update(moe=True, num_experts=r.int("n_routed_experts", default=256),
             topk=r.int("num_experts_per_tok", default=6), moe_ffn_hidden_size=f_e,
             num_shared_experts=1, shared_expert_ffn_hidden_size=f_e, router_bias=False, expert_bias=False,
             moe_layer_set=list(range(L)))
    r.used.update(("compress_ratios", "qk_rope_head_dim", "partial_rotary_factor", "expert_dtype", "swiglu_limit",
                   "hc_sinkhorn_iters"))
    _note_mtp(r, s)


def _read_step3p5(r, s, ll, notes, warnings):
    """Step 3.5/3.7 (transformers' step3p5 text model, inside the step3p7 wrapper): full and sliding
    attention layers (layer_types; sliding layers may have more query heads: num_sliding_attention_heads,
    the legacy attention_other_setting, or per_layer_config), per-head q/k RMSNorms and a head-wise
    sigmoid output gate (g_proj h -> heads) on every layer; dense gated MLPs on the first layers and MoE
    after them (mlp_layer_types, the legacy moe_layers_enum, else MoE from layer 3 on) with one ungated
    shared expert of share_expert_dim; the router's correction bias is a buffer. Per-layer lists
    padded with the MTP layers (num_nextn_predict_layers) are cut to the layers; the MTP layers are
    not built."""
    L = s["num_layers"]
    n_cfg = r.int("num_hidden_layers") or L
    a = s["num_attention_heads"]
    s.update(ll, qk_norm="head", attn_output_gate="headwise",
             num_kv_heads=r.int("num_key_value_heads", "num_attention_groups", default=a),
             head_dim=r.int("head_dim", default=128))
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=r.bool("mlp_bias", default=False))
    n_mtp = r.int("num_nextn_predict_layers", "num_mtp_layers", lo=0, default=0)
    lt = r.str_list("layer_types", choices={"full_attention", "sliding_attention"}, length=n_cfg)
    lt = (lt or ["full_attention"] * n_cfg)[:L]
    s["layer_types"] = ["sliding" if t == "sliding_attention" else "full" for t in lt]
    if "sliding" in s["layer_types"]:
        s["sliding_window"] = r.int("sliding_window")
    other = r.sub("attention_other_setting") or {}
    n_slide = (r.int("num_sliding_attention_heads", default=None)
               or ConfigReader(other, f"{r.where} (attention_other_setting)").int("num_attention_heads", default=a))
    plc = r.sub("per_layer_config") or {}
    over, by_heads = {}, {}
    for i, t in enumerate(lt):
        heads = n_slide if t == "sliding_attention" else a
        key = str(i) if str(i) in plc else next((k for k in plc if isinstance(k, str) and k.isdigit() and int(k) == i), None)
        if key is not None:
            if not isinstance(plc[key], dict):
                r.fail("per_layer_config", "must map layer numbers to objects", plc)
            heads = ConfigReader(plc[key], f"{r.where} (per_layer_config {key})").int("num_attention_heads",
                                                                                         default=heads)
        if heads != a:  # one override object per head count, so layers of a kind stay one layer dict
            over[i] = by_heads.setdefault(heads, {"attention": {"heads": heads}})
    if any(v["attention"]["heads"] % s["num_kv_heads"] for v in over.values()):
        raise CalcError(f"{r.where}: sliding layers' query heads are not a multiple of the kv heads")
    s["layer_overrides"] = over
    if r.has("mlp_layer_types"):
        mlt = r.str_list("mlp_layer_types", choices={"dense", "sparse"}, length=n_cfg)[:L]
        moe = [i for i, t in enumerate(mlt) if t == "sparse"]
    elif r.has("moe_layers_enum"):
        raw = r.cfg["moe_layers_enum"]
        items = raw.split(",") if isinstance(raw, str) else raw
        if not isinstance(items, list) or any(not str(x).strip().isdigit() for x in items if str(x).strip()):
            r.fail("moe_layers_enum", "must list layer numbers", raw)
        r.used.add("moe_layers_enum")
        moe = sorted({int(x) for x in items if str(x).strip()} & set(range(L)))
    else:
        moe = list(range(3, L))
    E = r.int("n_routed_experts", "moe_num_experts", default=288)
    sh = r.int("share_expert_dim", "share_expert_dims", lo=0, default=1280)
    s.update(moe=bool(moe), num_experts=E, topk=r.int("num_experts_per_tok", "moe_top_k", default=8),
             moe_ffn_hidden_size=r.int("moe_intermediate_size", default=1280),
             num_shared_experts=1 if sh else 0, shared_expert_ffn_hidden_size=sh, shared_expert_gate=False,
             router_bias=False, expert_bias=False, moe_layer_set=moe)
    r.used.update(("num_local_experts", "num_attention_heads"))  # a stale class field: transformers reads n_routed_experts
    if n_mtp:
        s["mtp_layers_not_built"] = n_mtp
        warnings.append(f"{n_mtp} multi-token-prediction layer(s) (num_nextn_predict_layers) are in the "
                        "checkpoint but not counted: transformers does not build them in the model")
    r.used.update(("sparse_attention_config", "mtp_layer_types", "mtp_mlp_layer_types", "swiglu_limits",
                   "swiglu_limits_shared", "partial_rotary_factors", "query_pre_attn_scalar"))


def _read_deepseek(r, s):
    """DeepSeek-V2/V3 (and the families built on them): MLA when kv_lora_rank is set, routed and
    shared experts on every layer from first_k_dense_replace on (transformers 5 does not read
    moe_layer_freq)."""
    L = s["num_layers"]
    E = r.int("n_routed_experts", "num_local_experts", "num_experts")
    f_e = r.int("moe_intermediate_size")
    n_sh = r.int("n_shared_experts", lo=0, default=0)
    fkd = r.int("first_k_dense_replace", lo=0, default=0)
    r.int("moe_layer_freq", default=1)  # checked, but transformers 5 builds MoE on every i >= fkd
    s.update(moe=bool(E), num_experts=E, topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=f_e, num_shared_experts=n_sh,
             shared_expert_ffn_hidden_size=n_sh * (f_e or 0), router_bias=False,
             moe_layer_set=[i for i in range(L) if i >= fkd] if E else None)
    _read_mla(r, s)
    _note_mtp(r, s)


def _read_mla(r, s):
    r_kv = r.int("kv_lora_rank")
    if r_kv:
        s.update(kv_lora_rank=r_kv, q_lora_rank=r.int("q_lora_rank"),
                 qk_nope_head_dim=r.int("qk_nope_head_dim"),
                 qk_rope_head_dim=r.int("qk_rope_head_dim", lo=0),  # 0: no rotary slice (GLM-5-Next)
                 v_head_dim=r.int("v_head_dim"), head_dim=None)
        r.used.add("qk_head_dim")  # derived: qk_nope_head_dim + qk_rope_head_dim


def _note_mtp(r, s):
    n = r.int("num_nextn_predict_layers", "num_mtp_layers", "mtp_num_layers", lo=0, default=0)
    if n:
        s["mtp_layers_not_built"] = n
        r.warnings_out.append(f"{n} multi-token-prediction layer(s) (num_nextn_predict_layers) are in the "
                              "checkpoint but not counted: transformers does not build them in the model")


def _mlp_pattern(r, L, default_dense):
    """MoE layer indices from transformers 5's mlp_layer_types ("dense"/"sparse"), else the family's
    default rule (a list of dense indices)."""
    mlt = r.str_list("mlp_layer_types", choices={"dense", "sparse", "moe"}, length=L)
    if mlt is not None:
        return [i for i, t in enumerate(mlt) if t != "dense"]
    return [i for i in range(L) if i not in set(default_dense)]


def _read_gpt_oss(r, s, ll, notes, warnings):
    """gpt-oss: every layer MoE (router with bias, experts with biases), biased attention with a
    sink logit per head, alternating sliding (even) and full (odd) layers."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=True)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=True, attention_sinks=True, router_has_bias=True,
             head_dim=r.int("head_dim", default=64), moe=True,
             num_experts=r.int("num_local_experts", "num_experts"),
             topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=ll["ffn_hidden_size"],
             moe_layer_set=list(range(L)))
    r.used.add("experts_per_token")  # HF reads num_experts_per_tok only
    if not r.has("layer_types"):
        s["layer_types"] = ["sliding" if i % 2 == 0 else "full" for i in range(L)]


def _read_llama4(r, s, ll, notes, warnings):
    """Llama 4: chunked attention on rotary layers, every 4th layer NoPE and full; MoE layers every
    interleave_moe_layer_step-th (or `moe_layers`), each with one shared expert of the expert width;
    dense layers of width intermediate_size_mlp; q/k L2 norms without weights."""
    L = s["num_layers"]
    s.update(ll)
    f = ll["ffn_hidden_size"]
    s.update(ffn_hidden_size=r.int("intermediate_size_mlp", default=f),
             qk_norm="l2" if r.bool("use_qk_norm", default=True) else "none",
             attention_chunk_size=r.int("attention_chunk_size"))
    nrl = r.int_list("no_rope_layers", lo=0, hi=1, default=None)
    interval = r.int("no_rope_layer_interval", default=4)
    if not nrl:
        nrl = [int((i + 1) % interval != 0) for i in range(L)]
    elif len(nrl) < L:
        r.fail("no_rope_layers", f"must list {L} layers", nrl)
    s["nope_layers"] = [i for i in range(L) if not nrl[i]]
    if not r.has("layer_types"):
        span = "chunked" if s["attention_chunk_size"] else "full"
        s["layer_types"] = [span if nrl[i] else "full" for i in range(L)]
    E = r.int("num_local_experts", "num_experts")
    step = r.int("interleave_moe_layer_step", default=1)
    moe = r.int_list("moe_layers", default=None)
    s.update(moe=bool(E), num_experts=E, topk=r.int("num_experts_per_tok", default=1),
             moe_ffn_hidden_size=f, num_shared_experts=1, shared_expert_ffn_hidden_size=f,
             moe_layer_set=moe if moe is not None else list(range(step - 1, L, step)))


def _read_glm4_moe(r, s, ll, notes, warnings):
    """GLM-4.5 (glm4_moe): head_dim as given, biased q/k/v (never o), optional per-head q/k norms,
    dense layers before first_k_dense_replace, then routed + shared experts (moe_layer_freq is not
    read by transformers)."""
    L = s["num_layers"]
    s.update(ll)
    s.update(qkv_bias=r.bool("attention_bias", default=False), attn_out_bias=False,
             qk_norm="head" if r.bool("use_qk_norm", default=False) else "none")
    _read_routed_shared(r, s, L, dense=range(r.int("first_k_dense_replace", lo=0, default=1)))
    r.used.add("moe_layer_freq")
    _note_mtp(r, s)


def _read_routed_shared(r, s, L, dense):
    E = r.int("n_routed_experts", "num_local_experts", "num_experts")
    f_e = r.int("moe_intermediate_size")
    n_sh = r.int("n_shared_experts", "num_shared_experts", lo=0, default=0)
    s.update(moe=bool(E), num_experts=E, topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=f_e,
             num_shared_experts=n_sh, shared_expert_ffn_hidden_size=n_sh * (f_e or 0),
             moe_layer_set=_mlp_pattern(r, L, dense) if E else None)


def _read_one_shared_expert(r, s, moe_layer_set, **extra):
    """Routed experts (num_experts of moe_intermediate_size, top num_experts_per_tok) with at most one
    ungated shared expert of shared_expert_intermediate_size (absent or 0: none) on moe_layer_set's
    layers (Laguna, Flint, Lara-mini); `extra`: the family's other MoE fields."""
    sh = r.int("shared_expert_intermediate_size", lo=0, default=0)
    s.update(moe=True, num_experts=r.int("num_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=r.int("moe_intermediate_size"), num_shared_experts=1 if sh else 0,
             shared_expert_ffn_hidden_size=sh, moe_layer_set=moe_layer_set, **extra)


def _read_dsa_every_layer(r, s, ll, notes, warnings):
    """_read_dsa for a family whose layer_types mixes indexed layers with its own kinds (dots3,
    GLM-5-Next): read the MLA and indexer fields as if every layer were indexed; the caller then
    sets the layer kinds from its own layer_types."""
    orig = r.cfg
    r.cfg = {**orig, "layer_types": ["indexed_attention"] * s["num_layers"]}
    try:
        _read_dsa(r, s, ll, notes, warnings)
    finally:
        r.cfg = orig


def _read_dsa(r, s, ll, notes, warnings):
    """DeepSeek-V3.2 (deepseek_v32) and GLM-5 (glm_moe_dsa): MLA with a lightning indexer that picks
    index_topk keys per query (DeepSeek-AI 2025, sec. 2.1); GLM-5's `indexer_types` "shared" layers
    reuse the previous layer's top-k and have no indexer weights or keys of their own."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    _read_routed_shared(r, s, L, dense=range(r.int("first_k_dense_replace", lo=0, default=3)))
    _read_mla(r, s)
    if not s.get("q_lora_rank"):
        raise CalcError(f"{r.where}: {s['model_type']} needs q_lora_rank (the indexer reads the query latent)")
    r.str_list("layer_types", choices={"indexed_attention", "deepseek_sparse_attention", "full_attention"},
               length=L)
    s["layer_types"] = None
    H, dI, k = (r.int("index_n_heads", hi=2**16), r.int("index_head_dim"), r.int("index_topk"))
    if None in (H, dI, k):
        raise CalcError(f"{r.where}: sparse attention needs index_n_heads, index_head_dim and index_topk")
    s.update(index_n_heads=H, index_head_dim=dI, index_topk=k)
    shared = _indexer_shared_layers(r, s, L)
    if shared is not None:
        s["layer_overrides"] = {i: {"attention": {"index_heads": 0, "index_head_dim": 0}} for i in shared}
    _note_mtp(r, s)


def _read_axk2(r, s, ll, notes, warnings):
    """A.X K2 (transformers' modeling_axk2): DeepSeek-V3.2's indexed attention (MLA, a lightning
    indexer on every layer) whose query up-projection (q_gate_proj) reads [norm(c_q), c_q] (2 r_q)
    and also writes an elementwise sigmoid output gate (a d_v); gated RMSNorms: the norm's weight
    (h) and a low-rank gate MLP h -> gated_norm_rank -> h, before attention on every layer and
    before the MLP on MoE layers (a plain RMSNorm before a dense MLP). The gate MLPs are matmuls
    every token runs (extra_params: 2 FLOPs per weight). mlp_layer_types picks dense and MoE
    layers (one shared expert; the router's correction bias is a buffer, not a weight)."""
    _read_dsa(r, s, ll, notes, warnings)
    L, h, g = s["num_layers"], s["hidden_size"], r.int("gated_norm_rank", default=16)  # AXK2Config default
    s["attn_output_gate"] = "elementwise"
    moe = set(s.get("moe_layer_set") or ())
    over = s.get("layer_overrides") or {}
    for i in range(L):
        o = over.setdefault(i, {})
        o["attention"] = dict(o.get("attention", {}), q_latent_concat=True)
        o["extra_params"] = 2 * h * g * (2 if i in moe else 1)
    s["layer_overrides"] = over


def _indexer_shared_layers(r, s, L):
    """Layers whose attention reuses the previous layer's top-k (no indexer of their own): from
    indexer_types, else index_topk_pattern ("F"/"S" per layer), else GLM-5's index_topk_freq /
    index_skip_topk_offset rule; None when every layer has its own indexer."""
    it = r.pick("indexer_types")[1]
    pattern = r.pick("index_topk_pattern")[1]
    if it is None and pattern is not None:
        it = ["full" if c in "Ff" else "shared" for c in pattern] if isinstance(pattern, str) else pattern
    if it is None and s["model_type"] in ("glm_moe_dsa", "mistral_large4_text"):
        freq = max(r.int("index_topk_freq", default=1), 1)
        off = r.int("index_skip_topk_offset", lo=0, default=2)
        it = ["full" if max(i - off + 1, 0) % freq == 0 else "shared" for i in range(L)]
    if it is not None:
        if not isinstance(it, list) or len(it) < L or any(x not in ("full", "shared") for x in it[:L]):
            r.fail("indexer_types", f"must list 'full' or 'shared' for each of the {L} layers", it)
        if it[0] == "shared":
            r.fail("indexer_types", "layer 0 has no earlier layer to share top-k indices with", it)
        return [i for i in range(L) if it[i] == "shared"]
    return None


def _read_mistral_large4(r, s, ll, notes, warnings):
    """Mistral Large 4 (mistral_large4_text): DSA as GLM-5's, with changes. MLA without a query
    bottleneck (q directly from h); the indexer's queries come from the hidden state through a
    LayerNorm (2 h); attention and indexer queries get a learned scale and bias per head (2 per
    head, scaled by log position); NoPE layers (no_rope_layers: 0) have no rotary slice, so their
    kv down-projection and latent drop d_rope and their up-projection adds it to the no-position
    keys; a layer whose kv_source_layers entry names an earlier layer reuses that layer's latent
    (no kv down-projection, norm or latent cache of its own; its indexer keeps its own keys)."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    _read_routed_shared(r, s, L, dense=range(r.int("first_k_dense_replace", lo=0, default=1)))
    _read_mla(r, s)
    if s.get("q_lora_rank"):
        r.fail("q_lora_rank", "Mistral Large 4 has no query bottleneck (transformers builds q_proj from h)",
               s["q_lora_rank"])
    r.str_list("layer_types", choices={"indexed_attention", "full_attention"}, length=L)
    s["layer_types"] = None
    H, dI, k = (r.int("index_n_heads", default=32, hi=2**16), r.int("index_head_dim", default=128),
                r.int("index_topk", default=2048))
    s.update(index_n_heads=H, index_head_dim=dI, index_topk=k, attn_position_scaling=True,
             indexer_input_norm=True, nope_layers=_nope_from_interval(r, L))
    L_cfg = r.int("num_hidden_layers", "num_layers") or L  # -l keeps the first L of them
    src = (r.int_list("kv_source_layers", lo=0, length=L_cfg) or list(range(L_cfg)))[:L]
    for i, j in enumerate(src):
        if j > i or src[j] != j:
            r.fail("kv_source_layers", f"layer {i} must reuse an earlier layer that owns its cache, got {j}", src)
    r.used.update(("final_logit_softcapping", "qk_head_dim"))
    shared_index = set(_indexer_shared_layers(r, s, L) or ())
    nope = set(s["nope_layers"])
    d_nope, d_rope = s["qk_nope_head_dim"], s["qk_rope_head_dim"]
    over = {}
    for i in range(L):
        a = {}
        if i in nope:
            a.update(qk_rope_head_dim=0, qk_nope_head_dim=d_nope + d_rope)
        if src[i] != i:
            a["kv_shared"] = True
        if i in shared_index:
            a.update(index_heads=0, index_head_dim=0)
        if a:
            over[i] = {"attention": a}
    s["layer_overrides"] = over
    # LeRoPE (transformers 5.24): a learned log-scale per rotary frequency, d_rope / 2 of them, one
    # table for the model (MistralLarge4TextRotaryEmbedding.alpha)
    s["other_params"] = {"rotary_alpha": d_rope // 2}
    _note_mtp(r, s)


def _read_minimax_m2(r, s, ll, notes, warnings):
    """MiniMax-M2: every layer MoE with experts of width intermediate_size, no shared expert, q/k
    RMSNorms over the whole projection width, no biases; full attention on every layer."""
    L = s["num_layers"]
    s.update(ll)
    s.update(qk_norm="full", moe=True, head_dim=r.int("head_dim", default=128), num_experts=r.int("num_local_experts", "num_experts"),
             topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=ll["ffn_hidden_size"],
             moe_layer_set=list(range(L)), layer_types=None)
    r.used.update(("sliding_window", "attn_type_list", "rotary_dim"))
    s["sliding_window"] = None


def _read_ernie45_moe(r, s, ll, notes, warnings):
    """ERNIE-4.5 MoE: MoE on layers moe_layer_start_index..end every moe_layer_interval-th, shared
    experts, biases everywhere with use_bias (the head's bias too, even when tied), and an expert
    score-correction bias that transformers keeps as a parameter."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("use_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias)
    E = r.int("moe_num_experts", "num_experts")
    start = r.int("moe_layer_start_index", lo=-1, default=1)
    end = r.int("moe_layer_end_index", lo=-1, default=-1)
    end = L - 1 if end == -1 else end
    step = r.int("moe_layer_interval", default=1)
    f_e = r.int("moe_intermediate_size", default=ll["ffn_hidden_size"])
    n_sh = r.int("moe_num_shared_experts", lo=0, default=0)
    s.update(moe=bool(E), num_experts=E, topk=r.int("moe_k", "num_experts_per_tok"),
             moe_ffn_hidden_size=f_e, num_shared_experts=n_sh, shared_expert_ffn_hidden_size=n_sh * f_e,
             expert_bias=False, router_has_bias=bool(E),
             moe_layer_set=[i for i in range(L) if (i + 1) % step == 0 and start <= i <= end] if E else None)
    if bias:
        s["other_params"] = {"lm_head_bias": s["vocab_size"]}


def _read_hy_v3(r, s, ll, notes, warnings):
    """HY-V3: per-head q/k norms, layer 0 dense then MoE (mlp_layer_types), a shared expert whose
    width is num_shared_experts x moe_intermediate_size, or intermediate_size when that is 0."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=r.bool("mlp_bias", default=False), qk_norm="head",
             head_dim=r.int("head_dim", default=128), expert_bias=False)
    E = r.int("num_experts", "num_local_experts")
    f_e = r.int("moe_intermediate_size")
    n_sh = r.int("num_shared_experts", lo=0, default=1)
    s.update(moe=bool(E), num_experts=E, topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=f_e,
             num_shared_experts=max(n_sh, 1), shared_expert_ffn_hidden_size=n_sh * f_e if n_sh else ll["ffn_hidden_size"],
             moe_layer_set=_mlp_pattern(r, L, [0]) if E else None)
    _note_mtp(r, s)


def _read_longcat(r, s, ll, notes, warnings):
    """LongCat-Flash: each of num_layers layers holds two MLA blocks, two dense MLPs and one MoE of
    E real experts plus Z zero-computation experts that a router over E + Z picks k from (LongCat-
    Flash tech report, sec. 2). transformers allocates gate_up_proj rows for the zero experts too
    (E + Z of them, never used); the count here is the weights the checkpoint holds."""
    h = s["hidden_size"]
    L_cfg = r.int("num_layers")
    if r.has("num_hidden_layers"):  # transformers: num_hidden_layers = 2 x num_layers, and it wins
        L_hf = r.int("num_hidden_layers", hi=200_000)
        if L_cfg and L_hf != 2 * L_cfg:
            warnings.append(f"num_hidden_layers {L_hf} is not 2 x num_layers {L_cfg}; transformers takes "
                            f"num_hidden_layers // 2 = {L_hf // 2} layers, and so does this count")
        L_cfg = L_hf // 2
    L = s["num_layers"] if s.get("_layers_from_flag") else L_cfg
    s["num_layers"] = L
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    E = r.int("n_routed_experts", "num_local_experts")
    Z = r.int("zero_expert_num", lo=0, default=0) or 0
    f_e = r.int("expert_ffn_hidden_size", "moe_intermediate_size")
    f = r.int("ffn_hidden_size", "intermediate_size")
    s.update(qkv_bias=bias, attn_out_bias=bias, ffn_hidden_size=f, moe=True, num_experts=E, zero_experts=Z,
             topk=r.int("moe_topk", "num_experts_per_tok"), moe_ffn_hidden_size=f_e,
             router_has_bias=r.bool("router_bias", default=False), moe_layer_set=list(range(L)))
    _read_mla(r, s)
    dense = {"kind": "dense", "width": f, "linears": 3, "bias": False}
    s["layer_overrides"] = {i: {"more_attention": ({},), "more_mlp": (dense, dense), "norms": 4}
                            for i in range(L)}
    r.used.update(("num_layers", "zero_expert_type"))
    if Z:
        phantom = L * Z * 2 * f_e * h
        warnings.append(f"zero-computation experts: active counts k E / (E + Z) = {s['topk'] * E / (E + Z):g} "
                        f"real experts per token (uniform routing); transformers also allocates {phantom:,} "
                        "unused gate_up_proj weights for the zero experts, not counted here")
    _note_mtp(r, s)


def _nope_from_interval(r, L):
    nrl = r.int_list("no_rope_layers", lo=0, hi=1, default=None)
    if not nrl:
        interval = r.int("no_rope_layer_interval", default=4)
        nrl = [int((i + 1) % interval != 0) for i in range(L)]
    if len(nrl) < L:
        r.fail("no_rope_layers", f"must list {L} layers", nrl)
    return [i for i in range(L) if not nrl[i]]


def _read_granitemoe(r, s, ll, notes, warnings):
    """GraniteMoE: every layer MoE, experts of width intermediate_size, no shared expert; the
    embedding/residual/attention/logit multipliers are scalars, not weights."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, moe=True,
             num_experts=r.int("num_local_experts", "num_experts"),
             topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=ll["ffn_hidden_size"],
             moe_layer_set=list(range(L)))


def _read_phimoe(r, s, ll, notes, warnings):
    """Phi-3.5-MoE: LayerNorms with bias, biased attention (attention_bias), every layer MoE; its
    sparsemixer router always picks 2 experts whatever num_experts_per_tok says; optional head bias."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    k = r.int("num_experts_per_tok", default=2)
    if k != 2:
        warnings.append(f"num_experts_per_tok {k} is not read by PhiMoE's router, which picks 2 experts: "
                        "active parameters use 2")
    s.update(norm="layernorm", qkv_bias=bias, attn_out_bias=bias, num_kv_heads=r.int("num_key_value_heads", default=8),
             moe=True, num_experts=r.int("num_local_experts", "num_experts"), topk=2,
             moe_ffn_hidden_size=ll["ffn_hidden_size"], moe_layer_set=list(range(L)), slides_every_layer=True)
    if r.bool("lm_head_bias", default=False):
        s["other_params"] = {"lm_head_bias": s["vocab_size"]}


def _read_dbrx(r, s, ll, notes, warnings):
    """DBRX (modeling_dbrx): every layer a MoE of ffn_config.moe_num_experts gated experts (w1, v1,
    w2 of ffn_hidden_size), top moe_top_k, a router h -> E without bias, no shared expert; a fused
    q/k/v of attn_config.kv_n_heads key/value heads of d_model / n_heads, rotary positions; weight-only
    LayerNorms (LayerNorm(bias=False): h weights each, counted as RMSNorm's); no biases; an untied
    head by default. attn_config.clip_qkv clamps activations and adds no weight. The nested blocks
    are read field by field like the top level."""
    s.update(ll)
    attn = ConfigReader(r.sub("attn_config") or {}, f"{r.where} (attn_config)", warnings)
    ffn = ConfigReader(r.sub("ffn_config") or {}, f"{r.where} (ffn_config)", warnings)
    for key, what in (("attn_config", "kv_n_heads 1"), ("ffn_config", "4 experts of width 3584, top 1")):
        if r.sub(key) is None:  # transformers builds DbrxAttentionConfig() / DbrxFFNConfig() then
            notes.append(f"no {key} in the config: transformers' defaults taken ({what})")
    a, h = s["num_attention_heads"], s["hidden_size"]
    kv = attn.int("kv_n_heads", default=1)
    if a % kv:
        attn.fail("kv_n_heads", f"must divide n_heads = {a}", kv)
    E, k = ffn.int("moe_num_experts", default=4), ffn.int("moe_top_k", default=1)
    if k > E:
        ffn.fail("moe_top_k", f"must be at most moe_num_experts = {E}", k)
    f = ffn.int("ffn_hidden_size", default=3584)
    s.update(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="rope", num_kv_heads=kv, head_dim=h // a, ffn_hidden_size=f,
             tied_embeddings=r.bool("tie_word_embeddings", default=False))
    if E > 1:
        s.update(moe=True, num_experts=E, topk=k, moe_ffn_hidden_size=f)
    r.used.update(("max_seq_len", "emb_pdrop", "resid_pdrop", "output_router_logits", "router_aux_loss_coef"))
