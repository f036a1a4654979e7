"""The vocabulary of layer kinds. A model is a list of layers. Each layer is a small dict
{"attention": [attn, ...], "mlp": [mlp, ...], "norms": n, "extra_params": p} (p: matmul weights every
token runs through once in that layer outside its attention and MLP, Gemma 4's per-layer inputs):
usually one attention and one MLP, two of each in LongCat-Flash's shortcut-connected block. Layers
of the same kinds share one dict object, so layer_groups() finds the distinct kinds quickly.

An attention dict says what its weights are ("kind": mha covers MHA/GQA/MQA, mla is DeepSeek's
latent attention), which keys a query sees ("span": full, sliding within "window", chunked within
"chunk"), and its extras (rope, sinks, output gate, q/k norms, biases, a lightning "indexer" that
picks top-k keys, with its own weights or none when it reuses an earlier layer's top-k,
"kv_shared" when it reuses an earlier layer's K/V or latent, Mistral Large 4's per-head
"position_scaling" and "indexer_input_norm", "v_dim" for values narrower than keys (MiMo-V2-Flash),
"in_width" for q/k/v reading 2 h and "tied" for a block whose weights an earlier layer holds
(Zamba's shared block), "extra_weights" for a family's non-matmul weights, "attn_experts" /
"attn_topk" for JetMoE's routed q/o experts). Linear mixers by
"kind": gdn, kda, mamba1, mamba2, shortconv, lightning (MiniMax-01), rwkv (RWKV-4), rglru (Griffin),
mlstm (xLSTM). An MLP dict is "dense" (width, matrices, bias) or
"moe" (routed experts, top-k, shared experts, router, zero experts). Per kind there is one
function per quantity (model/formulas.py): attention_params, mlp_block_params,
attention_linear_flops_per_token, attention_core_flops, query_key_pairs, mlp_flops_per_token,
cache_elements_per_token, cached_tokens, decode_keys_read; totals are sums over the list."""


# Chunk length of the chunked Gated DeltaNet algorithm: transformers' torch_chunk_gated_delta_rule
# and flash-linear-attention's chunk_gated_delta_rule both use 64 (Yang et al. 2024, arXiv 2412.06464).
GDN_CHUNK = 64


def layer_groups(spec):
    """[(layer, count, first_index)] for each distinct layer kind, in order of first appearance;
    kept on the spec for its layer list (scripts call this per pass: O(L) once, not per call)."""
    memo = spec.get("_layer_groups")
    if memo is not None and memo[0] is spec["layers"]:
        return memo[1]
    seen = {}
    for i, layer in enumerate(spec["layers"]):
        g = seen.get(id(layer))
        if g is None:
            seen[id(layer)] = [layer, 1, i]
        else:
            g[1] += 1
    out = [tuple(g) for g in seen.values()]
    spec["_layer_groups"] = (spec["layers"], out)
    return out


def attention_kind(attn):
    """A short label: full, sliding(4096), chunked(8192), mla, +nope, +sinks, +gate, +dsa(topk);
    a linear mixer by its kind and heads, gdn(16k/32v)."""
    if attn["kind"] == "mamba2":
        return f"mamba2({attn['heads']}x{attn['head_dim']}, N={attn['state_size']})"
    if attn["kind"] == "rwkv":
        return f"rwkv(D={attn['heads']})"
    if attn["kind"] == "mlstm":
        return f"mlstm({attn['heads']}x{attn['head_dim']}/{attn['v_head_dim']})"
    if attn["kind"] == "rglru":
        return f"rglru(W={attn['heads']}, K={attn['conv_kernel']})"
    if attn["kind"] in ("kda", "lightning"):
        return f"{attn['kind']}({attn['heads']}x{attn['head_dim']})"
    if attn["kind"] == "mamba1":
        return f"mamba(E={attn['heads']}, N={attn['state_size']})"
    if attn["kind"] == "shortconv":
        return f"shortconv(K={attn['conv_kernel']})"
    if attn["span"] == "state":
        return f"{attn['kind']}({attn['kv_heads']}k/{attn['heads']}v)"
    if attn["kind"] == "dsv4":
        c = {"csa": f" +csa(1/{attn['compress']}, top{attn['c_index_topk']})",
             "hca": f" +hca(1/{attn['compress']})"}.get(attn["compress_kind"], "")
        return f"dsv4 sliding({attn['window']}){c}"
    label = "mla" if attn["kind"] == "mla" else ("mha" if attn["kv_heads"] == attn["heads"] else
                                                 "mqa" if attn["kv_heads"] == 1 else "gqa")
    span = {"full": "", "sliding": f" sliding({attn['window']})", "chunked": f" chunked({attn['chunk']})"}
    label += span[attn["span"]]
    if not attn["rope"]:
        label += " nope"
    if attn["kv_shared"]:
        label += " kv-shared"
    if attn["sinks"]:
        label += " sinks"
    if attn["output_gate"] != "none":
        label += " gate"
    if attn.get("attn_experts"):
        label += f" moa({attn['attn_topk']}/{attn['attn_experts']})"
    if attn["index_topk"]:
        label += f" dsa(top{attn['index_topk']})" + ("" if attn["index_heads"] else " shared-topk")
    return label


def mlp_kind(mlp):
    if mlp["kind"] == "moe":
        z = f"+{mlp['zero_experts']}zero" if mlp["zero_experts"] else ""
        sh = " +shared" if mlp["shared_width"] else ""
        return f"moe {mlp['topk']}/{mlp['num_experts']}{z}{sh}"
    return f"dense {mlp['width']}"
