"""Context parallelism's own kernels: what ring attention adds beside the attention kernels.

Transformer Engine's p2p context parallelism (AttnFuncWithCP in NVIDIA/TransformerEngine v1.4,
transformer_engine/pytorch/attention.py, 2024-03-07; the same steps in AttnFuncWithCPAndKVP2P,
attention/dot_product_attention/context_parallel.py @d0067d0, 2026-08) splits the sequence into
2 cp chunks, rank r holding chunks r and 2 cp - 1 - r (causal load balancing), and runs cp steps:
step 0 a causal kernel on its own K/V, then cp - 1 steps on the K/V received from the ring, each a
non-causal kernel on half the work: all local queries against the first half of the received K/V
("lower triangle", which copies that half of K and V into a contiguous buffer first) or the second
half of the queries against all of it ("upper triangle", which copies that half of Q, and in the
backward of the output and its gradient). Each step's partial output is merged into the result
with its log-sum-exp (flash_attn_fwd_out_correction: read the step's output, read and write the
result). The backward accumulates dQ over the steps (the first copied, the rest added) and, per
step, concatenates dK and dV and adds them into the buffer that travels around the ring. The
attention kernels' FLOPs and the K/V ring exchange are costed in train/step.py; this module counts
the bytes of the copies and merges, which run at HBM bandwidth. PyTorch's ring attention
(torch.distributed.tensor.experimental.context_parallel) runs the same steps with fp32
accumulators (`acc` below).

With --cp-comm-type a2a (TE's AttnFuncWithCPAndQKVOA2A, Megatron-Core's --cp-comm-type a2a, the
DeepSpeed-Ulysses scheme) there is no ring: an all-to-all before the kernel trades the sequence
shard of Q, K and V for a head shard, the kernel runs over the whole sequence on heads / cp, and an
all-to-all after it trades the output back; the backward does the same for dO and for dQ, dK, dV.
TE reorders each tensor around its all-to-all (flash_attn_a2a_communicate: movedim + contiguous
before the send and after the receive), and the exchanges sit on the critical path.

Symbols: m tokens on the rank (b s / cp), q_width = query heads x head dim (score), v_width =
query heads x value head dim, kv_width = KV heads x (score + value head dims), all on the rank; a
bytes per activation element (2, bf16).
"""

# Memory-bound kernels TE launches per ring step: forward the half copy, the softmax-statistics
# merge and the output merge; backward the half copies, the dQ add, the dK/dV concatenation and add
# (counted from the source above).
CP_FWD_KERNELS_PER_STEP = 3
CP_BWD_KERNELS_PER_STEP = 4

CP_COMM_TYPES = ("p2p", "a2a")

# --cp-comm-type a2a's reorder copies each way: 4 tensors (Q, K, V, the output; backward dO, dQ, dK,
# dV) x 2 (before the send, after the receive)
A2A_COPY_KERNELS = 4 * 2


def ring_attention_extra_bytes(*, m, q_width, v_width, kv_width, cp, a=2, acc=2):
    """(forward, backward) bytes one rank's ring attention moves outside the attention kernels for
    one layer and micro-batch, TE's p2p context parallelism as described in the module docstring.
    Half of the cp - 1 ring steps are "lower triangle" and half "upper triangle" on average over
    the ranks (rank r runs r of the first kind); an upper step merges half the tokens.
    Forward: the K/V packed into the first ring buffer (read + write m kv_width); per later step a
    half copy (K/V: m/2 kv_width, or Q: m/2 q_width; read + write); the output merges, step 0 over
    m tokens and later steps over 3m/4 on average (read the step's output, read + write the result).
    Backward: the K/V copied into the ring buffer again; per later step the half copies (K/V, or Q,
    the output and its gradient); dQ: step 0 a copy (read + write), later steps an add over 3m/4
    (read two, write one); dK/dV per step: the concatenation (read + write) and the add into the
    travelling buffer (read two, write one), over m tokens. `acc`: bytes of the accumulators (the
    merged output, dQ, dK/dV): 2 under Transformer Engine (its output dtype), 4 under PyTorch's
    context_parallel (_ContextParallelOptions.convert_to_f32 = True in torch 2.6-2.11,
    torch/distributed/tensor/experimental/_attention.py)."""
    if cp <= 1:
        return 0.0, 0.0
    later = cp - 1
    fwd = 2 * a * m * kv_width
    fwd += later * (a * m * kv_width + a * m * q_width) / 2
    merge = a + 2 * acc  # read the step's part, read and write the accumulator
    fwd += merge * m * v_width + later * merge * (0.75 * m) * v_width
    bwd = 2 * a * m * kv_width
    bwd += later * (a * m * kv_width + a * m * (q_width + 2 * v_width)) / 2
    bwd += (a + acc) * m * q_width + later * merge * (0.75 * m) * q_width
    bwd += cp * (2 * a + merge) * m * kv_width
    return fwd, bwd


def a2a_attention_extra_bytes(*, m, q_width, v_width, kv_width, a=2):
    """(forward, backward) bytes of the reorder copies around the all-to-alls of --cp-comm-type
    a2a for one layer and micro-batch on one rank: each exchanged tensor is copied (read + write)
    before its send and after its receive. Forward Q, K, V and the output; backward dO and dQ, dK,
    dV. Widths as in ring_attention_extra_bytes."""
    fwd = 2 * 2 * a * m * (q_width + kv_width + v_width)
    bwd = 2 * 2 * a * m * (v_width + q_width + kv_width)
    return fwd, bwd


def a2a_head_error(heads, kv_heads, *, tp, cp):
    """None if the heads on a tensor-parallel rank split over cp for --cp-comm-type a2a (TE asserts
    that both the query and the key/value heads divide by the CP size), else a one-line reason."""
    hq, hkv = heads // tp, max(1, kv_heads // tp)
    if hq % cp or hkv % cp:
        return (f"--cp-comm-type a2a splits the heads over -cp {cp}: {hq} query and {hkv} key/value heads per "
                f"tensor-parallel rank do not divide by it (use --cp-comm-type p2p)")
    return None
