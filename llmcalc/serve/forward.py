"""The forward pass of one serving step: each layer's compute, memory traffic, kernels and
all-reduces on a roofline with a soft corner."""

import math

from ..comm.collectives import (ALPHA_HOP_S, NVLS_EFFICIENCY, SCALE_OUT_EFFICIENCY, build_net,
    collective_time_s, group_intra_bytes_per_s, group_placement)
from ..model.formulas import (attention_core_flops, attention_params, cache_elements_per_token,
    decode_keys_read, expected_real_experts, linear_core_flops, mixer_widths, mlp_block_params,
    query_key_pairs, state_elements)
from ..model.kinds import layer_groups
from ..model.sharding import attention_on_rank
from .stacks import (ATTENTION_KERNELS, DSV4_EXTRA_KERNELS, INDEXER_KERNELS, LINEAR_MIXER_KERNELS,
    MLP_KERNELS, MOE_EXTRA_KERNELS, ROOFLINE_CORNER_P)


# --- formulas ------------------------------------------------------------------------------------
def roofline_time_s(*, flops, bytes_moved, flops_per_s, bytes_per_s, corner_p=None):
    """Roofline time of one kernel: the slower of its math and its memory traffic
    (Williams et al. 2009), overlap of the two inside the kernel assumed perfect; with corner_p,
    the soft corner (t_math^p + t_mem^p)^(1/p) instead (ROOFLINE_CORNER_P for weight matmuls):
    within a few percent of the max far from the ridge, 2^(1/p) times it at the ridge."""
    tc, tm = flops / flops_per_s, bytes_moved / bytes_per_s
    if corner_p is None or tc <= 0 or tm <= 0:
        return max(tc, tm)
    hi = max(tc, tm)  # scaled so that the powers stay finite
    return hi * ((tc / hi) ** corner_p + (tm / hi) ** corner_p) ** (1 / corner_p)


def layout_net(hw):
    """comm/collectives.py's network for this hardware (build_net): the scale-up link at
    the link efficiency (a full mesh split over its peers, group_intra_bytes_per_s), the scale-out
    NIC per GPU at SCALE_OUT_EFFICIENCY, NVLS where the switch reduces, NCCL's hops (ALPHA_HOP_S)
    and call cost. resolve_hardware builds it once; a bare hw dict (tests) gets one from its link."""
    if hw.get("net"):
        return hw["net"]
    return build_net(intra_bytes_per_s=hw["link_bytes_per_s"], inter_bytes_per_s=hw.get("scale_out_bytes_per_s"),
                     in_network_reduction=hw.get("in_network_reduction", False),
                     intra_efficiency=hw["link_efficiency"], inter_efficiency=SCALE_OUT_EFFICIENCY,
                     nvls_efficiency=NVLS_EFFICIENCY, launch_s=hw.get("nccl_latency_s", hw["link_latency_s"]),
                     intra_hop_ll_s=ALPHA_HOP_S["ll"]["intra"], inter_hop_ll_s=ALPHA_HOP_S["ll"]["inter"],
                     mesh_domain=hw.get("mesh_domain"))


def group_collective_s(op, *, size_bytes, n, stride, hw, launch_s=None):
    """One NCCL collective over n ranks spaced `stride` apart in the replica's rank order (tp
    fastest, then dp, then pp; a node holds hw["gpus_per_node"] consecutive ranks), placed with
    comm/collectives.py's group_placement and timed with its collective_time_s (Thakur et al. 2005
    alpha-beta per algorithm and protocol, the fastest taken): inside one node NCCL's ring, across
    nodes the fastest of ring, tree and the two-level algorithm, the network hops at the scale-out
    bandwidth. launch_s replaces the call's fixed cost (a stack's in-place all-reduce). n = 1 costs
    nothing."""
    if n <= 1 or size_bytes <= 0:
        return 0.0
    net = layout_net(hw)
    if launch_s is not None:
        net = dict(net, launch_s=launch_s)
    g, nodes = group_placement(size=n, stride=stride, gpus_per_node=hw.get("gpus_per_node") or n * stride)
    if nodes > 1 and not net["inter_bytes_per_s"]:
        raise ValueError("a group crosses nodes without a scale-out bandwidth")
    return collective_time_s(op=op, size_bytes=size_bytes, n=n, gpus_per_node=g, net=net,
                             algo="ring" if nodes == 1 else "auto")["time_s"]


def custom_allreduce_time_s(*, size_bytes, num_gpus, latency_s, bytes_per_s):
    """A serving stack's custom all-reduce inside one NVLink domain (TensorRT-LLM's and SGLang's
    one/two-shot kernels, vLLM's custom_all_reduce): the call's fixed cost plus (n-1)/n of the
    message at the kernel's effective rate, both fitted to the stack's own microbenchmark table
    (SERVING_STACKS). n = 1 costs nothing."""
    n = num_gpus
    if n <= 1 or size_bytes <= 0:
        return 0.0
    return latency_s + (n - 1) / n * size_bytes / bytes_per_s


def tp_allreduce_s(size_bytes, *, n, hw):
    """The all-reduce after a tensor-parallel block over n consecutive ranks. Inside one node: NCCL's
    ring with the stack's call cost (hw["link_latency_s"]), or, for a stack with a custom kernel,
    the faster of that kernel and NCCL's ring at NCCL's own call cost (vLLM and TensorRT-LLM switch
    by size: CUSTOM_ALL_REDUCE_MAX_SIZES, two-shot thresholds). Across nodes the custom kernels do
    not run (they need peer memory in one NVLink domain): NCCL's choice (group_collective_s)."""
    if n <= 1 or size_bytes <= 0:
        return 0.0
    custom = hw.get("allreduce_custom_bytes_per_s")
    nccl_s = hw.get("nccl_latency_s", hw["link_latency_s"])
    t = group_collective_s("all_reduce", size_bytes=size_bytes, n=n, stride=1, hw=hw,
                           launch_s=nccl_s if custom else hw["link_latency_s"])
    if custom and n <= (hw.get("gpus_per_node") or n):
        t = min(t, custom_allreduce_time_s(size_bytes=size_bytes, num_gpus=n, latency_s=hw["link_latency_s"],
                                           bytes_per_s=custom))
    return t


def handoff_s(size_bytes, *, cross_node, hw):
    """One pipeline hand-off: a send/recv between neighbouring stages over one link (the shared
    block's sendrecv: NCCL's call cost + one hop + bytes / link), over the network when the stages
    sit in different nodes."""
    return collective_time_s(op="sendrecv", size_bytes=size_bytes, n=2, gpus_per_node=1 if cross_node else 2,
                             net=layout_net(hw), algo="ring")["time_s"]


def node_dedup_alltoall_s(*, tokens, k, h, bytes_per_el, ep, hw):
    """One dispatch (or combine) of DeepEP's high-throughput kernels, which serving stacks run for
    steps with prompt tokens (SGLang's DeepEP 'auto' mode; the low-latency kernels take decode-only
    steps): a token crosses the network once per destination node its k experts sit on, N (1 -
    (1 - 1/N)^k) nodes under uniform routing of which (N - 1) / N are remote, and is forwarded over
    NVLink to the expert GPUs inside each node (k (G - 1) / G of its copies); the two legs stream
    through each other, so the slower one sets the time, plus one call and one network hop (DeepEP
    README, normal kernels: 'NVLink and RDMA forwarding'). Inside one node: the direct all-to-all."""
    G = min(hw.get("gpus_per_node") or ep, ep)
    N = ep // G
    if N <= 1:
        return group_collective_s("alltoall", size_bytes=tokens * k * h * bytes_per_el, n=ep, stride=1, hw=hw)
    net = layout_net(hw)
    remote = (N - 1) * (1 - (1 - 1 / N) ** k)
    t_net = tokens * remote * h * bytes_per_el / net["inter_bytes_per_s"]
    t_nvl = tokens * k * (G - 1) / G * h * bytes_per_el / group_intra_bytes_per_s(net, gpus_in_node=G, op="alltoall")
    return net["launch_s"] + net["hop_s"]["simple"]["inter"] + max(t_net, t_nvl)


def ep_imbalance(*, ep, assignments):
    """Expected load of the busiest of ep expert-parallel ranks over the mean when `assignments`
    token-to-expert picks land uniformly at random: m/n + sqrt(2 (m/n) ln n) for m balls in n bins
    (Raab & Steger 1998, "Balls into Bins", m >> n ln n), so 1 + sqrt(2 n ln n / m), at most n (all
    on one rank). Real routers are more skewed (DeepSeek's EPLB exists to even them out): a lower
    bound, --ep-imbalance sets it."""
    if ep <= 1 or assignments <= 0:
        return 1.0
    return min(float(ep), 1.0 + math.sqrt(2 * ep * math.log(ep) / assignments))


def expected_distinct_experts(*, num_experts, topk, num_tokens):
    """Expected number of distinct routed experts that num_tokens tokens touch when each picks
    k of E uniformly and independently: E (1 - (1 - k/E)^n) (a balls-in-bins expectation;
    with real, skewed routers it is fewer)."""
    E, k, n = num_experts, topk, num_tokens
    if E <= 0 or k <= 0 or n <= 0:
        return 0.0
    return E * (1.0 - (1.0 - k / E) ** n)


def expected_distinct_real_experts(mlp, *, num_tokens):
    """Distinct routed experts with weights that num_tokens tokens touch in one MoE block. Each
    token picks k of the E + Z experts its router scores (Z zero-computation experts, LongCat-Flash
    sec. 2.1, have no weights), so one real expert is hit with probability k / (E + Z) per token:
    E (1 - (1 - k/(E+Z))^n), the balls-in-bins expectation over E + Z bins restricted to the E."""
    E, Z, k = mlp["num_experts"], mlp["zero_experts"], mlp["topk"]
    if not Z:
        return expected_distinct_experts(num_experts=E, topk=k, num_tokens=num_tokens)
    return expected_distinct_experts(num_experts=E + Z, topk=k, num_tokens=num_tokens) * E / (E + Z)


def cache_bytes_per_token(attn, *, tp, kv_bits):
    """Cache bytes one token adds to one attention block on one TP rank, {"kv", "indexer"}, from
    the block's cache_elements_per_token. MHA/GQA/MQA: K and V of the rank's ceil(kv/tp) kv heads
    (replicated when kv < tp). MLA (DeepSeek-V2 sec. 2.1.2): the latent r_kv + d_rope, whole on
    every rank (the absorbed decode reads all of it). The lightning indexer's d_I key per token is
    whole on every rank too (vLLM and SGLang build the indexer from ReplicatedLinear layers), at
    the KV-cache bits. A layer that reuses another layer's cache (Gemma 4) adds nothing."""
    el = cache_elements_per_token(attn, mla_cache="latent")
    kv = el["kv"]
    if attn["kind"] != "mla" and kv:
        kv = kv // attn["kv_heads"] * math.ceil(attn["kv_heads"] / tp)
    return {"kv": kv * kv_bits / 8, "indexer": el["indexer"] * kv_bits / 8}


def cache_read_bytes_per_token(attn, *, tp, kv_bits):
    """Cache bytes one attention block reads per cached token it attends to on one TP rank: a layer
    that reuses another layer's cache (Gemma 4's kv_shared layers) stores none but reads that
    layer's K/V, of its own shape."""
    return cache_bytes_per_token(dict(attn, kv_shared=False), tp=tp, kv_bits=kv_bits)


def step_pairs(attn, *, context_before, new_tokens):
    """Query-key pairs {"core", "indexer"} one sequence's new_tokens causal queries score after
    context_before cached tokens: a decode step (one query) attends to decode_keys_read at
    c + 1 tokens; a longer pass to the difference of the block's causal query_key_pairs (which
    cap each query at the window, its chunk, or the indexer's top-k; the indexer scores all)."""
    if new_tokens == 1:
        return decode_keys_read(attn, context=context_before + 1)
    hi = query_key_pairs(attn, seq_len=context_before + new_tokens, attention="causal")
    lo = query_key_pairs(attn, seq_len=context_before, attention="causal")
    return {k: hi[k] - lo[k] for k in hi}


def cached_keys_read(attn, *, context_before):
    """Cached tokens one sequence's next query reads from this block's cache, {"core", "indexer"}:
    the keys decode_keys_read says it attends to at c + 1 tokens, less its own (computed in the
    step, not read): all c (full), the newest w - 1 (sliding; what HF's DynamicSlidingWindowLayer
    holds before the step), c mod C (chunked: the earlier keys of its own chunk), top-k - 1 (the
    DSA core); the indexer scores every cached key, c."""
    k = decode_keys_read(attn, context=context_before + 1)
    return {"core": max(k["core"] - 1, 0), "indexer": max(k["indexer"] - 1, 0)}


def linear_mixer_core_costs(attn, *, tp, pairs, new_tokens, act_bits, state_bits):
    """(FLOPs, bytes, state bytes read) of one linear mixer's core on one TP rank (its heads and
    key heads or groups split over tp, as vLLM shards them; groups fewer than tp replicated).
    pairs["state"] tokens run the chunked algorithm, otherwise each of the new_tokens is one
    recurrent step (linear_core_flops). Bytes: the conv's input and output (2 conv channels per
    token, activation bits), the gate and the core's output (2 x the out_proj width), and per
    sequence the recurrent state read and written once per pass (at state_bits; the fused
    recurrent kernels keep it in registers within a step) and the conv window (K channels). new_tokens counts tokens of all sequences; for a
    decode pass it equals the number of sequences."""
    x = dict(attn, heads=attn["heads"] // tp, kv_heads=max(attn["kv_heads"] // tp, 1))
    chunked = pairs.get("state", 0)
    flops = linear_core_flops(x, chunked_tokens=chunked, steps=0 if chunked else new_tokens)
    ab = act_bits / 8
    _, w_out, conv_dim = mixer_widths(x)
    seqs = pairs.get("sequences", new_tokens)
    el = state_elements(x)
    state = seqs * (el["recurrent"] * state_bits / 8 + el["conv"] * ab)
    io = new_tokens * (2 * conv_dim + 2 * w_out) * ab
    return flops, io + 2 * state, state


def attention_core_costs(attn, *, tp, pairs, new_tokens, keys_read, kv_bits, act_bits, absorbed,
                         state_bits=32, per_head_kv=False):
    """(FLOPs, bytes, cache bytes read) of one attention block's QK^T, softmax and PV on one TP
    rank. pairs {"core", "indexer"}: query-key pairs of all sequences; new_tokens: queries (their q
    in, output out, new cache entries written); keys_read {"core", "indexer"}: cached keys read.
    MHA/GQA and MLA's naive form (prefill): the block's attention_core_flops (2 a d_qk + 2 a d_v
    per pair), a/tp heads per rank. MLA absorbed (decode, DeepSeek-V2 sec. 2.1.2): 2 (r_kv + d_rope)
    + 2 r_kv per pair and head. The lightning indexer (DeepSeek-V3.2 sec. 2.1) is replicated: its
    2 H_I d_I FLOPs per pair, its queries in and its keys read are whole on every rank. A linear
    mixer: linear_mixer_core_costs. per_head_kv: a decode kernel that reads the cache once per
    query head (TensorRT-LLM's masked MHA before its XQA kernel: one thread block per query head,
    each loading its kv head's K/V), so a GQA block's cache reads x (query heads per kv head)."""
    if attn["span"] == "state":
        return linear_mixer_core_costs(attn, tp=tp, pairs=pairs, new_tokens=new_tokens, act_bits=act_bits,
                                       state_bits=state_bits)
    a_local = attn["heads"] / tp
    ab = act_bits / 8
    n = new_tokens
    tok = cache_bytes_per_token(attn, tp=tp, kv_bits=kv_bits)
    read_tok = cache_read_bytes_per_token(attn, tp=tp, kv_bits=kv_bits)
    if attn["kind"] == "dsv4":  # its indexer reads one d_I key per compressed entry, its core d per key
        read_tok = dict(read_tok, kv=attn["head_dim"] * kv_bits / 8,
                        indexer=attn["c_index_head_dim"] * kv_bits / 8)
    core = attention_core_flops(attn, pairs={"core": pairs["core"], "indexer": pairs["indexer"]})
    if attn["kind"] == "mla":
        r, dr, dv = attn["kv_lora_rank"], attn["qk_rope_head_dim"], attn["v_head_dim"]
        d_qk = attn["qk_nope_head_dim"] + dr
        if absorbed:
            flops = pairs["core"] * a_local * (2 * (r + dr) + 2 * r)
            q_width, o_width, kv_in = a_local * (r + dr), a_local * r, 0
        else:
            flops = (core["attention_scores"] + core["attention_context"]) / tp
            q_width, o_width = a_local * d_qk, a_local * dv
            kv_in = n * a_local * (d_qk + dv) * ab
    else:
        d = attn["head_dim"]
        flops = (core["attention_scores"] + core["attention_context"]) / tp
        q_width = o_width = a_local * d
        kv_in = n * 2 * math.ceil(attn["kv_heads"] / tp) * d * ab
    flops += core["indexer_scores"]
    cache_read = keys_read["core"] * read_tok["kv"] + keys_read["indexer"] * read_tok["indexer"]
    if per_head_kv and attn["kind"] != "mla" and attn["kv_heads"]:
        cache_read *= max(a_local / math.ceil(attn["kv_heads"] / tp), 1.0)
    bytes_moved = (n * (q_width + o_width) * ab + kv_in + n * tok["kv"] + cache_read
                   + n * (attn["index_heads"] * attn["index_head_dim"] * ab + tok["indexer"]))
    return flops, bytes_moved, cache_read


def layer_costs(layer, *, h, tp, num_tokens, w_bits, a_bits, e_bits=None, moe=None):
    """Per-op (FLOPs, bytes, weight bytes) of one layer's weight matmuls and elementwise passes on
    one TP rank for num_tokens = b x new tokens, summed over its attention and MLP blocks (two of
    each in LongCat-Flash). Matmul: 2 FLOPs per weight per token; bytes = weight shard + activations
    in and out (the roofline inputs of Williams et al. 2009; the decode read of every weight shard,
    Pope et al. 2022 sec. 3). Attention weights: the rank's share (attention_on_rank). A MoE block reads the
    distinct real experts the tokens touch and runs k E / (E + Z) of them per token
    (expected_real_experts), plus shared experts and the router (replicated). Other per-layer
    weights (Gemma 4's per-layer input gate) count with the MLP, replicated. Elementwise: a norm and
    a residual add move 5 h values per token per block, the activation function 2 f (3 f gated),
    rotary 2 (a + kv) d; a MoE block's dispatch permute (its tokens in, one row per pick out) and
    combine (the picks in, the weighted sum out) move 2 (tokens + picks) h more, at 16 bits, on
    every rank whatever the TP (each rank permutes every token: TensorRT-LLM's expandInputRows and
    finalizeMoeRouting; vLLM's Triton path gathers in its GEMM and keeps only the combine, so this
    counts one pass more for it). Weights are stored at w_bits (routed experts at e_bits, when a checkpoint
    stores them narrower, gpt-oss's MXFP4). With expert parallelism, moe = {"tokens": the tokens
    of every data-parallel group that reach the MoE, "ep": ranks the routed experts are spread
    over, "etp": ranks each expert is split over, "imbalance": the busiest rank's load over the
    mean (ep_imbalance)}: the rank runs tokens x k / ep picks x imbalance on its E / ep experts and
    reads the ones they touch; shared experts and the router see the rank's own tokens (None: the
    experts split over tp with the layer). Returns name -> (flops, bytes, weight bytes)."""
    n, wb, ab = num_tokens, w_bits / 8, a_bits / 8
    m_tok, m_ep, m_etp, imb = ((n, 1, tp, 1.0) if moe is None else
                               (moe["tokens"], moe["ep"], moe["etp"], moe["imbalance"]))
    expert_b = (w_bits if e_bits is None else e_bits) / 8
    att_f = att_b = att_w = 0.0
    rope = 0
    for attn in layer["attention"]:
        a, kv, d = attn["heads"], attn["kv_heads"], attn["head_dim"]
        w = attention_params(attention_on_rank(attn, tp=tp), h=h)  # the rank's share, as the memory script splits it
        io = n * (h + a * d + attn["kv_proj"] * kv * d + a * d + h) / tp * ab  # in/out of qkv and o-proj
        if attn["span"] == "state":  # in_proj out, out_proj in
            w_in, w_out, _ = mixer_widths(attn)
            io = n * (2 * h + (w_in + w_out) / tp) * ab
        att_f += 2 * n * w
        att_b += w * wb + io
        att_w += w * wb
        if attn["rope"]:
            rope += 2 * (a + kv) * d / tp
    mlp_f = mlp_b = mlp_w = 0.0
    f_act = act_elems = 0
    permuted = 0.0  # rows a MoE block's dispatch and combine passes read and write
    for mlp in layer["mlp"]:
        nl, p = mlp["linears"], mlp_block_params(mlp, h=h)
        if mlp["kind"] == "dense":
            f = mlp["width"]
            w = p["dense"] / tp
            fl, wbytes = 2 * n * w, w * wb
            io = n * (h + (nl - 1) * f / tp + f / tp + h) * ab
            f_m = f / tp
        else:
            f_e, f_sh = mlp["width"], mlp["shared_width"]
            k = expected_real_experts(mlp)
            picks = m_tok * k / m_ep * imb  # token-expert picks the busiest rank runs
            touched = expected_distinct_real_experts(mlp, num_tokens=m_tok) / m_ep
            expert_w, shared_w, router_w = p["one_expert"] / m_etp, p["shared_experts"] / tp, p["router"]
            fl = 2 * picks * expert_w + 2 * n * (shared_w + router_w)
            wbytes = touched * expert_w * expert_b + (shared_w + router_w) * wb
            io = (picks * (h + (nl - 1) * f_e / m_etp + h) + n * ((h + (nl - 1) * f_sh / tp + h) * bool(f_sh)
                  + h + mlp["num_experts"] + mlp["zero_experts"])) * ab
            f_m = (picks * f_e / m_etp + n * f_sh / tp) / n if n else 0.0
            permuted += 2 * (n + picks)  # dispatch: n rows in, picks out; combine: picks in, n out
        mlp_f, mlp_b, mlp_w = mlp_f + fl, mlp_b + wbytes + io, mlp_w + wbytes
        f_act += f_m
        act_elems += (nl if nl >= 3 else 2) * f_m
    extra = layer["extra_params"]
    if extra:
        mlp_f, mlp_b, mlp_w = mlp_f + 2 * n * extra, mlp_b + extra * wb, mlp_w + extra * wb
    mlp_f += n * layer.get("weightless_flops", 0)  # Gemma 3n's AltUp coefficient product
    blocks = len(layer["attention"]) + len(layer["mlp"])
    res_b = max(a_bits, 16) / 8  # the residual stream stays 16-bit even with 8-bit matmul inputs
    elem = (n * (5 * h * blocks + act_elems + rope) + permuted * h) * res_b
    return {"attention_linear": (att_f, att_b, att_w), "mlp": (mlp_f, mlp_b, mlp_w),
            "elementwise": (n * (5 * h * blocks + 4 * f_act), elem, 0.0)}


def logit_rows_costs(spec, *, rows, tp):
    """(FLOPs, bytes) the output head spends per position it scores, on one tp rank (the vocab split
    over tp): 2 h V / tp FLOPs and V / tp fp32 logits written per row; its weight read is the
    caller's (once per pass)."""
    return 2 * rows * (spec["word_embed_proj_dim"] * spec["vocab_size"] / tp), rows * spec["vocab_size"] / tp * 4


def layer_kernels(layer):
    """Kernels one layer launches, as a CUDA-graph-free eager stack (vLLM's and gpt-fast's module
    order) launches them: per attention block norm, qkv, rope, attention, o-proj, add (6; 3 more with
    an indexer: its projections, its scores, the top-k; DeepSeek-V4's compressor and
    hyper-connections DSV4_EXTRA_KERNELS); per linear-mixer block LINEAR_MIXER_KERNELS; per MLP
    block norm, mlp-in, activation, mlp-out, add (5), and per MoE block MOE_EXTRA_KERNELS more (top-k,
    dispatch, combine). Each costs the fixed kernel_overhead_s."""
    return sum(LINEAR_MIXER_KERNELS if a["span"] == "state" else
               ATTENTION_KERNELS + INDEXER_KERNELS * bool(a["index_topk"] and a["index_heads"])
               + (DSV4_EXTRA_KERNELS + INDEXER_KERNELS * (a["compress_kind"] == "csa") if a["kind"] == "dsv4" else 0)
               for a in layer["attention"]) + MLP_KERNELS * len(layer["mlp"]) \
        + MOE_EXTRA_KERNELS * sum(m["kind"] != "dense" for m in layer["mlp"])


def layer_allreduces(layer):
    """TP all-reduces one layer makes: one after each attention and each MLP block (Megatron-LM
    sec. 3: two per ordinary layer)."""
    return len(layer["attention"]) + len(layer["mlp"])


def sum_max_linear(*, a0, a1, b0, b1, c_lo, c_hi):
    """Exact sum over integers c in [c_lo, c_hi] of max(a0 + a1 c, b0 + b1 c) (a convex piecewise
    linear function: one crossing at most), so decode totals need no per-step loop."""
    if c_hi < c_lo:
        return 0.0

    def lin_sum(p0, p1, lo, hi):
        cnt = hi - lo + 1
        return p0 * cnt + p1 * (lo + hi) * cnt / 2 if cnt > 0 else 0.0

    if a1 == b1:
        return lin_sum(max(a0, b0), a1, c_lo, c_hi)
    x = (b0 - a0) / (a1 - b1)  # where the lines cross
    lo_line, hi_line = ((b0, b1), (a0, a1)) if a1 > b1 else ((a0, a1), (b0, b1))
    split = min(max(math.floor(x), c_lo - 1), c_hi)  # c <= split: lo_line's rival wins
    return lin_sum(*lo_line, c_lo, split) + lin_sum(*hi_line, split + 1, c_hi)


_WEIGHT_MATMULS = ("attention_linear", "mlp", "output_head")  # the ops that turn the soft corner


def forward_pass(spec, hw, *, tp, pp, batch, new_tokens, context_before, w_bits, a_bits, kv_bits,
                 absorbed, e_bits=None, state_bits=32, also=(), dp=1, ep=1):
    """One forward pass of the whole pipeline for `batch` sequences, each adding new_tokens after
    context_before cached tokens (and, for a continuous-batching step, the groups in `also`, each
    (sequences, new_tokens, context_before, absorbed), sharing the same weight reads: their tokens
    join every matmul, each group's attention is costed on its own; sequences may be fractional,
    a steady-state mean), summed over the distinct layer kinds (layer_groups): time by
    component (seconds), total FLOPs and bytes per rank (weights and cache reads apart), the
    time-weighted bound, and each kind's time per layer. Stages run one after the other (one batch
    in flight). Each op is a roofline (Williams et al. 2009; the weight matmuls with the soft corner
    ROOFLINE_CORNER_P) plus a fixed launch gap per kernel;
    TP adds an all-reduce per block (Shoeybi et al. 2019 sec. 3; tp_allreduce_s), PP a hand-off
    per stage boundary.
    dp > 1: the stage is dp groups of tp GPUs with the attention replicated (data-parallel
    attention: SGLang --enable-dp-attention, vLLM --data-parallel-size), each group running
    1/dp of the sequences; the MoE layers take every group's tokens. ep = 1: the experts split
    over all tp x dp ranks (tensor-parallel), the tokens all-gathered before each MoE block and
    reduce-scattered after; ep = tp x dp: whole experts spread over the ranks, the tokens sent to
    their experts and back by two all-to-alls (dispatch at the activation bits, combine at 16;
    GShard, Lepikhin et al. 2021; DeepEP), the busiest rank's expert work scaled by
    hw["ep_imbalance"] or ep_imbalance's balls-into-bins figure. Times are one group's (groups run
    in parallel); batch and `also` count sequences over all groups."""
    F, B, F16 = hw["flops_per_s"], hw["bytes_per_s"], hw["attention_flops_per_s"]
    seq_groups = ((batch, new_tokens, context_before, absorbed),) + tuple(also)
    if dp > 1:  # one data-parallel group's share
        seq_groups = tuple((g[0] / dp,) + tuple(g[1:]) for g in seq_groups)
    ovh = hw["kernel_overhead_s"]
    n = sum(g[0] * g[1] for g in seq_groups)
    rows = sum(g[0] for g in seq_groups)  # sequences whose last position gets logits
    h = spec["hidden_size"]
    ab = a_bits / 8
    comp = {"attention_linear": 0.0, "attention_core": 0.0, "mlp": 0.0, "elementwise": 0.0,
            "output_head": 0.0, "tp_allreduce": 0.0, "pp_handoff": 0.0, "kernel_overhead": 0.0}
    tot = dict.fromkeys(("compute_s", "memory_s", "matmul_compute_s", "matmul_memory_s", "flops",
                         "bytes", "weight_bytes", "cache_read_bytes"), 0.0)
    act_bytes = n * h * max(ab, 2)  # the residual stream, and so TP/PP traffic, stays 16-bit
    t_ar = tp_allreduce_s(act_bytes, n=tp, hw=hw)
    moe, t_moe = None, t_ar  # the communication around one MoE block
    if dp > 1 or ep > 1:
        width = tp * dp
        moe = {"tokens": n * dp, "ep": ep, "etp": width // ep, "imbalance": 1.0}
        routed = [m for x, _, _ in layer_groups(spec) for m in x["mlp"] if m["kind"] != "dense"]
        picks = n * dp * max((expected_real_experts(m) for m in routed), default=0.0)
        moe["imbalance"] = (hw["ep_imbalance"] if hw.get("ep_imbalance") is not None
                            else ep_imbalance(ep=ep, assignments=picks))
        if ep > 1:  # dispatch + combine: each rank sends its 1/tp of the group's tokens
            k = max((m["topk"] for m in routed), default=0)
            if any(g[0] and g[1] > 1 for g in seq_groups):  # prompt tokens: the high-throughput kernels
                t_moe = sum(node_dedup_alltoall_s(tokens=n / tp, k=k, h=h, bytes_per_el=bpe, ep=ep, hw=hw)
                            for bpe in (ab, max(ab, 2))) + t_ar
            else:  # decode-only: the low-latency kernels, k copies per token
                t_moe = (group_collective_s("alltoall", size_bytes=n / tp * k * h * ab, n=ep, stride=1, hw=hw)
                         + group_collective_s("alltoall", size_bytes=n / tp * k * h * max(ab, 2), n=ep,
                                              stride=1, hw=hw)
                         + t_ar)  # and the tp group's all-reduce of the shared experts' partial sums
        else:  # experts split over every rank: gather all groups' tokens, scatter the sums back
            every = act_bytes * dp
            t_moe = sum(group_collective_s(op, size_bytes=every, n=width, stride=1, hw=hw)
                        for op in ("all_gather", "reduce_scatter"))
        comp["moe_comm"] = 0.0

    def add(name, fl, by, cnt, scale=1.0, cache=0.0):
        """Cost one op run cnt times (x scale: a stack's MoE factor; cache: the bytes of by that are
        KV-cache reads, streamed at hw["cache_bytes_per_s"]); returns its time for one run."""
        f_rate = F16 if name == "attention_core" else F  # attention math runs at the 16-bit rate
        by_t = by - cache * (1.0 - B / hw.get("cache_bytes_per_s", B)) if cache else by  # at B's rate
        t = scale * roofline_time_s(flops=fl, bytes_moved=by_t, flops_per_s=f_rate, bytes_per_s=B,
                                    corner_p=ROOFLINE_CORNER_P if name in _WEIGHT_MATMULS else None)
        comp[name] += cnt * t
        tot["compute_s"] += cnt * fl / f_rate
        tot["memory_s"] += cnt * by_t / B
        if name in ("attention_linear", "mlp"):
            tot["matmul_compute_s"] += cnt * fl / F
            tot["matmul_memory_s"] += cnt * by / B
        tot["flops"] += cnt * fl
        tot["bytes"] += cnt * by
        return t

    kinds, kernels, allreduces = [], 0, 0
    for layer, cnt, first in layer_groups(spec):
        t_layer = 0.0
        routed_block = any(m["kind"] != "dense" for m in layer["mlp"])
        for name, (fl, by, wby) in layer_costs(layer, h=h, tp=tp, num_tokens=n, w_bits=w_bits, e_bits=e_bits,
                                               a_bits=a_bits, moe=moe).items():
            t_layer += add(name, fl, by, cnt, scale=hw.get("moe_factor", 1.0) if name == "mlp" and routed_block
                           else 1.0)
            tot["weight_bytes"] += cnt * wby
        for attn in layer["attention"]:
            for g_seqs, g_new, g_ctx, g_abs in seq_groups:
                if not g_seqs:
                    continue
                pairs = step_pairs(attn, context_before=g_ctx, new_tokens=g_new)
                keys = cached_keys_read(attn, context_before=g_ctx)
                fl, by, rd = attention_core_costs(
                    attn, tp=tp, pairs=dict({k: g_seqs * v for k, v in pairs.items()}, sequences=g_seqs),
                    new_tokens=g_seqs * g_new, keys_read={k: g_seqs * v for k, v in keys.items()},
                    kv_bits=kv_bits, act_bits=a_bits, absorbed=g_abs, state_bits=state_bits,
                    per_head_kv=g_new == 1 and hw.get("per_head_kv_decode", False))
                t_layer += add("attention_core", fl, by, cnt, cache=rd if attn["span"] != "state" else 0.0)
                tot["cache_read_bytes"] += cnt * rd
        k_layer, ar_layer = layer_kernels(layer), layer_allreduces(layer)
        moe_blocks = sum(m["kind"] != "dense" for m in layer["mlp"]) if moe else 0
        kernels += cnt * k_layer
        allreduces += cnt * (ar_layer - moe_blocks)
        if moe_blocks:
            comp["moe_comm"] += cnt * moe_blocks * t_moe
        kinds.append({"layers": cnt, "first_layer": first,
                      "time_s_per_layer": t_layer + k_layer * ovh + (ar_layer - moe_blocks) * t_ar
                      + moe_blocks * t_moe})
    hb = max(w_bits, 16) / 8  # embedding/head kept at >= 16 bits
    head_w = spec["word_embed_proj_dim"] * spec["vocab_size"] / tp
    other_w = sum(spec["other_params"].values()) / tp  # model-level extras (Gemma 4's per-layer projection)
    row_f, row_b = logit_rows_costs(spec, rows=rows, tp=tp)
    add("output_head", row_f + 2 * n * other_w, (head_w + other_w) * hb
        + row_b + n * h * ab * 2, 1)  # head shard, fp32 logits out,
    tot["weight_bytes"] += (head_w + other_w) * hb                   # final norm and embedding rows
    comp["kernel_overhead"] = (kernels + 2) * ovh
    comp["tp_allreduce"] = allreduces * t_ar
    comp["pp_handoff"] = (pp - 1) * handoff_s(  # DeepSeek-V4 hands over hc_mult residual streams
        act_bytes * spec.get("residual_streams", 1), cross_node=hw.get("p2p_cross_node", False),
        hw=hw) if pp > 1 else 0.0
    return {"time_s": sum(comp.values()), "components_s": comp, "compute_s": tot["compute_s"],
            "memory_s": tot["memory_s"], "flops": tot["flops"], "bytes": tot["bytes"],
            "weight_bytes": tot["weight_bytes"], "cache_read_bytes": tot["cache_read_bytes"],
            "matmul_compute_s": tot["matmul_compute_s"], "matmul_memory_s": tot["matmul_memory_s"],
            "bound": "compute" if tot["compute_s"] >= tot["memory_s"] else "memory", "layer_kinds": kinds,
            "ep_imbalance": moe["imbalance"] if moe else 1.0}
