"""Training memory per GPU on the most-loaded rank: model states (mixed precision, optimizer,
ZeRO/FSDP), activations (Korthikanti et al. 2022's fused count and the eager PyTorch rule),
pipeline stages and LoRA."""

from ..model.formulas import (attention_head_dims, expected_real_experts, layer_params,
    mixer_widths, norm_params)
from ..model.sharding import attention_on_rank, mlp_on_rank
from ..records import Record
from .finetune import (QLORA_NF4_DQ_BITS, attention_kernel, attention_saved_bytes,
    frozen_output_layer_bytes, fused_qkv_saved_bytes, lora_layer_activation_bytes,
    lora_params_per_layer, lora_residual_bytes, peft_base_and_optimizer_bytes, peft_cast_bytes,
    peft_memory_fields)
from .recompute import DEFAULT_RECOMPUTE_MODULES, block_matmuls, layer_modes, modules_of


# Optimizer state bytes per trainable parameter, EXCLUDING the fp32 master copy that mixed
# precision adds (it is added separately, at --high-prec-bytes-per-val).
OPTIMIZER_STATE_BYTES = {
    "adam": 8,           # fp32 first and second moments (Kingma & Ba 2015): 4 + 4
    "adamw": 8,          # same states as Adam (Loshchilov & Hutter 2019)
    "adam8bit": 2,       # bitsandbytes 8-bit moments: 1 + 1 (block constants ~0.4%, ignored)
    "adamw8bit": 2,
    "sgd": 4,            # SGD with momentum: one fp32 buffer
    "sgd-nomomentum": 0,
    "lion": 4,           # Lion keeps one momentum buffer (Chen et al. 2023)
    "adafactor": 0,      # factored second moment: O(rows + cols) per matrix, ~0 per parameter
}

FSDP_TO_ZERO = {"no_shard": 0, "shard_grad_op": 2, "full_shard": 3, "hybrid_shard": 3}

LORA_MATRICES = ("q", "k", "v", "o", "gate", "up", "down")



class MemoryConfig(Record):
    """The configuration training_memory reads (and train/fit.py's ways out), one layout's: built by
    memory_config from a calc_training_time.py layout, or by calc_transformer_mem.py from its flags
    (which extends it with its inference and capacity fields). Counts per GPU, bytes per value."""

    FIELDS = {
        "tp": "tensor-parallel size", "pp": "pipeline stages",
        "vp": "model chunks per pipeline rank",
        "cp": "context-parallel size (the sequence split over cp ranks)",
        "ep": "expert-parallel size",
        "etp": "tensor-parallel size inside each expert", "dp": "data-parallel size",
        "num_gpus": "GPUs in the job (train/fit.py scales it)",
        "chunk_layers": "counts[rank][chunk] of an uneven pipeline split, None for the even one",
        "decoder_first_pipeline_num_layers": "Megatron-LM's layers on the first stage, or None",
        "decoder_last_pipeline_num_layers": "Megatron-LM's layers on the last stage, or None",
        "account_for_embedding_in_pipeline_split": "the embedding counted as a layer of the split",
        "account_for_loss_in_pipeline_split": "the head and loss counted as one layer of the split",
        "zero_stage": "ZeRO stage 0-3 (FSDP's read as its equivalent)",
        "zero_shard": "ranks the dense model states are sharded over (dp x cp; zero_shards)",
        "expert_zero_shard": "ranks the expert states are sharded over (zero_shards)",
        "zbs": "ZeRO all-gather bucket, elements at the weight width (0: sharded in place)",
        "zmlp": "ZeRO-3 parameters kept gathered at once",
        "sequence_length": "tokens per sequence (before the cp split)",
        "batch_size": "micro-batch per GPU (calc_transformer_mem.py's -b)",
        "num_microbatches": "micro-batches per step, None: as many as pipeline stages",
        "recompute": "activation recompute: none, selective, full or op-sac",
        "recompute_modules": "selective recompute's modules (None: the default core_attn)",
        "recompute_every": "recompute on one layer in k (1: every layer)",
        "sequence_parallel": "Megatron sequence parallelism (norms and dropouts / tp)",
        "partition_activations": "DeepSpeed's checkpointed inputs split over tp",
        "flash_attention": "a fused attention kernel (no s x s scores stored)",
        "dropout": "dropout masks stored",
        "mixed_precision": "16-bit training with an fp32 master copy",
        "high_bytes": "bytes of a high-precision value (the master copy)",
        "weight_bytes": "bytes per weight held", "act_bytes": "bytes per stored activation",
        "grad_bytes": "bytes per gradient", "optimizer": "optimizer name (OPTIMIZER_STATE_BYTES)",
        "opt_bytes": "optimizer bytes per trainable parameter on the GPU (0 offloaded)",
        "host_opt_bytes": "optimizer bytes per parameter held on the host (--offload)",
        "activation_rule": "fused (Korthikanti et al. 2022) or eager (what autograd saves)",
        "autocast": "fp32 weights under torch.autocast (the eager rule's mixed precision)",
        "framework": "the training stack whose activations are counted",
        "lora": "LoRA: {rank, targets, base_bits, adapter_bytes, dropout, quantized}, or None",
        "attn_implementation": "transformers' attention implementation (eager rule), None: flash",
        "padded_batches": "batches padded to their longest sequence: sdpa given a mask",
        "overhead_bytes": "framework allowance and misc per GPU",
        "memory_bytes": "the GPU's capacity, or None (train/fit.py's limit)",
        "offload": "optimizer states on the host (ZeRO-Offload)",
        "offload_param": "DeepSpeed ZeRO-3 offload_param: the 16-bit weights on the host",
        "offload_params": "the layers' 16-bit weights in host memory, two layers on the GPU",
        "offload_activations": "stored activations in host memory, two layers' worth on the GPU",
    }

    def replace(self, **changes):
        """A copy with `changes` (each checked as declared; the rest already was), as the ways
        out try one change each and memory_config adds a layout's sizes."""
        return self.extended(changes)

    def extended(self, changes):
        """replace() with the changes as a dict (no keyword repacking: memory_config's thirty)."""
        if not changes.keys() <= self.FIELDS.keys():
            MemoryConfig(changes)  # raises TypeError naming the undeclared field
        new = dict.__new__(type(self))
        dict.update(new, self)
        dict.update(new, changes)
        return new


def memory_defaults(*, overhead_bytes):
    """The part of calc_training_time.py's memory config no layout sets: Megatron-LM's mixed
    precision (16-bit weights and activations, fp32 gradients, Adam with the fp32 master copy),
    no LoRA, no ZeRO bucket (its distributed optimizer shards in place) and the allowance."""
    adam = optimizer_bytes_per_param(optimizer="adam", mixed_precision=True, master_bytes=4)
    return MemoryConfig(act_bytes=2, partition_activations=False, lora=None, weight_bytes=2,
                        grad_bytes=4, opt_bytes=adam, zbs=0, zmlp=1e9,
                        overhead_bytes=overhead_bytes)


def memory_config(spec, lay, base):
    """calc_training_time.py's memory config for a layout (training_memory's `c`): `base`
    (memory_defaults) with the layout's sizes; under --framework pytorch the eager activation
    rule, with autocast's fp32 weights at ZeRO 0-1."""
    dp, cp, tp, pp, ep, etp = lay["dp"], lay["cp"], lay["tp"], lay["pp"], lay["ep"], lay["etp"]
    fields = {}  # the record built once below (a search builds one per layout it costs)
    if lay["framework"] == "pytorch":  # eager transformers-style modules; autocast without sharding
        autocast = lay["zero_stage"] <= 1
        fields.update(activation_rule="eager", autocast=autocast)
        if autocast:  # fp32 weights are the master copy: Adam's two fp32 moments only
            fields.update(weight_bytes=4, opt_bytes=optimizer_bytes_per_param(
                optimizer="adam", mixed_precision=False, master_bytes=4))
    if lay["framework"] == "pytorch":
        fields.update(peft_memory_fields(lay))
    opt_bytes = fields.get("opt_bytes", base["opt_bytes"])
    fields.update(
        tp=tp, pp=pp, vp=lay["vp"], cp=cp, ep=ep, etp=etp, dp=dp,
        chunk_layers=layout_chunk_layers(spec["num_layers"], lay), zero_stage=lay["zero_stage"],
        **zero_shards(dp=dp, cp=cp, tp=tp, pp=pp, etp=etp, ep=ep),
        sequence_length=lay["sequence_length"],
        num_microbatches=lay["num_microbatches"], recompute=lay["recompute"],
        recompute_modules=modules_of(lay), recompute_every=lay.get("recompute_every") or 1,
        sequence_parallel=lay["sp"], flash_attention=lay["flash_attention"],
        dropout=lay["dropout"], opt_bytes=0 if lay["offload"] else opt_bytes,
        offload_param=bool(lay.get("offload_param")),
        # Megatron-LM's distributed optimizer (ZeRO-1/2) shards in place; ZeRO-3 keeps
        # DeepSpeed's all-gather bucket (5e8 elements, calc_transformer_mem.py's default)
        zbs=5e8 if lay["zero_stage"] == 3 else 0)
    return base.extended(fields)


# ------------------------------------------------------------------------------------------------
# Model states
# ------------------------------------------------------------------------------------------------

def zero_shards(*, dp, cp, tp, pp, etp, ep):
    """ZeRO's shard counts, as the memory config's zero_shard and expert_zero_shard: dense states
    split over the dp x cp ranks that hold the same layers; expert states over the ranks that hold
    copies of the same expert shard, all GPUs / (pp x etp x ep) (Megatron-LM's expert data parallel
    group). Assumes every size divides."""
    return {"zero_shard": dp * cp, "expert_zero_shard": dp * cp * tp * pp // (pp * etp * ep)}


def optimizer_bytes_per_param(*, optimizer, mixed_precision, master_bytes):
    """Optimizer bytes per trainable parameter: states (table above) plus, in mixed precision,
    the fp32 master weights (ZeRO paper sec. 3.1: Adam's K = 4 + 4 + 4 = 12)."""
    return OPTIMIZER_STATE_BYTES[optimizer] + (master_bytes if mixed_precision else 0)


def zero_model_state_bytes(*, params, weight_bytes, grad_bytes, optimizer_bytes, zero_stage,
                           shard_degree):
    """Per-GPU (weights, gradients, optimizer) bytes for `params` parameters replicated over
    `shard_degree` ranks under ZeRO stage 0-3 (Rajbhandari et al. 2019, sec. 5.1-5.3): stage 1
    shards optimizer states, 2 also gradients, 3 also weights."""
    n = shard_degree
    return (params * weight_bytes / (n if zero_stage >= 3 else 1),
            params * grad_bytes / (n if zero_stage >= 2 else 1),
            params * optimizer_bytes / (n if zero_stage >= 1 else 1))


def layer_params_per_rank(layer, *, h, norm, tp, etp, ep):
    """One layer's parameters on one rank, split into (non_expert, expert): the block's layer_params
    on the rank's share of each attention (attention_on_rank) and MLP block (mlp_on_rank); norms,
    per-layer extra weights and routers replicated; routed experts E/ep per rank (resolve() checks
    that every split divides exactly). The split is Megatron-LM's (Shoeybi et al. 2019 sec. 3 for
    tp; its expert parallelism and --expert-tensor-parallel-size for ep and etp)."""
    share = {"attention": tuple(attention_on_rank(x, tp=tp) for x in layer["attention"]),
             "mlp": tuple(mlp_on_rank(m, tp=tp, etp=etp) for m in layer["mlp"]),
             "norms": layer["norms"], "extra_params": layer["extra_params"]}
    p = layer_params(share, h=h, norm=norm)
    return p["total"] - p["routed_experts"], p["routed_experts"] // ep


def pipeline_chunk_layers(*, num_layers, pp, vp, first=None, last=None, embedding_in_split=False,
                          loss_in_split=False):
    """Transformer layers in each model chunk, counts[rank][chunk], as Megatron-LM builds them
    (megatron/core/transformer/transformer_block.py get_num_layers_to_build): even, L/(pp*vp);
    with --decoder-first/last-pipeline-num-layers the first/last rank holds that many (over its vp
    chunks) and the other ranks split the rest evenly; --account-for-embedding/loss-in-pipeline-split
    count the embedding/loss as one layer of L+1 (+2), taken from the first/last chunk. Validated
    by resolve() first: every count here divides exactly."""
    if first is not None or last is not None:
        mid_stages = pp - (first is not None) - (last is not None)
        per_mid = (num_layers - (first or 0) - (last or 0)) // mid_stages if mid_stages else 0
        per_rank = [per_mid] * pp
        if first is not None:
            per_rank[0] = first
        if last is not None:
            per_rank[-1] = last
        return [[n // vp] * vp for n in per_rank]
    k = (num_layers + embedding_in_split + loss_in_split) // (pp * vp)
    counts = [[k] * vp for _ in range(pp)]
    counts[0][0] -= int(embedding_in_split)
    counts[-1][-1] -= int(loss_in_split)
    return counts


def stage_layers(*, num_layers, pp, vp, stage, chunk_layers=None):
    """Layer indices held by pipeline stage `stage`: model chunk c of rank i is virtual stage
    c*pp + i and virtual stages hold consecutive layers (Narayanan et al. 2021, sec. 2.2.2; Megatron
    get_transformer_layer_offset). chunk_layers: counts[rank][chunk] (default: the even split)."""
    return all_stage_layers(num_layers=num_layers, pp=pp, vp=vp, chunk_layers=chunk_layers)[stage]


def all_stage_layers(*, num_layers, pp, vp, chunk_layers=None):
    """stage_layers for every stage at once, out[stage]: one pass over the pp*vp chunks, so that a
    loop over the stages costs O(pp*vp + L), not O(pp^2 * vp)."""
    if chunk_layers is None:
        chunk_layers = pipeline_chunk_layers(num_layers=num_layers, pp=pp, vp=vp)
    out, start = [[] for _ in range(pp)], 0
    for c in range(vp):
        for i in range(pp):
            n = chunk_layers[i][c]
            out[i] += range(start, start + n)
            start += n
    return out


def suggest_pipeline_split(*, num_layers, pp, vp):
    """(first, middle, last) layers for --decoder-first/last-pipeline-num-layers that Megatron-LM
    accepts (each a positive multiple of vp, middle stages equal) with the fewest layers on the
    fullest stage; ties go to fuller middle stages, and the two edges share what is left (the
    first holds the embedding and the most in-flight micro-batches, the last the head and logits;
    the Llama 3 paper, sec. 3.3.2, takes one layer from each edge). None if no split fits."""
    best = None
    mids = range(vp, num_layers // (pp - 2) + 1, vp) if pp > 2 else [0]
    for q in mids:
        rest = num_layers - (pp - 2) * q
        if rest < 2 * vp or rest % vp:
            continue
        first = rest // (2 * vp) * vp
        score = (max(q, rest - first), -q)
        if best is None or score < best[0]:
            best = (score, (first, q, rest - first))
    return best and best[1]


def pipeline_split_hint(*, num_layers, pp, vp):
    """The Megatron-LM flags to suggest for num_layers layers on pp*vp chunks, as one clause
    (suggest_pipeline_split's uneven split, or counting the embedding/loss as layers), "" if none."""
    L = num_layers
    sug = suggest_pipeline_split(num_layers=L, pp=pp, vp=vp)
    hints = []
    if sug:
        f, q, la = sug
        hints.append(f"--decoder-first-pipeline-num-layers {f} --decoder-last-pipeline-num-layers {la}"
                     + (f" ({q} on each middle stage)" if pp > 2 else ""))
    for extra, flags in ((1, "--account-for-embedding-in-pipeline-split"),
                         (2, "--account-for-embedding-in-pipeline-split "
                             "--account-for-loss-in-pipeline-split")):
        if (L + extra) % (pp * vp) == 0:
            hints.append(flags)
            break
    return ", or ".join(hints)


def _layers(n):
    """'1 layer', '7 layers': a count of layers in words."""
    return f"{n} layer{'s' if n != 1 else ''}"


def implied_pipeline_split(num_layers, lay):
    """(layout changes, a sentence) for a pipeline whose pp x vp chunks do not divide the layers
    and whose split no flag states: the search's uneven split (memory.suggest_pipeline_split,
    --decoder-first/last-pipeline-num-layers), else the embedding and then the loss counted as
    layers (--account-for-*-in-pipeline-split: Megatron-Bridge's Llama 3.1 405B and Qwen3-235B
    recipes, 126 + 2 = 128 on pp 8 x vp 8); (None, None) when the layers divide, a split is
    stated, or nothing Megatron-LM accepts fits (pipeline_split_error then says so)."""
    L, pp, vp = num_layers, lay["pp"], lay["vp"]
    if pp == 1 or L % (pp * vp) == 0 or any(lay.get(k) for k in PIPELINE_SPLIT_KEYS):
        return None, None
    sug = suggest_pipeline_split(num_layers=L, pp=pp, vp=vp)
    if sug:
        f, q, la = sug
        return ({"decoder_first_pipeline_num_layers": f, "decoder_last_pipeline_num_layers": la},
                f"{_layers(L)} on pp {pp} x vp {vp}: Megatron-LM's uneven split applied, "
                f"{_layers(f)} on the first stage, {q} on each middle one, {la} on the last "
                f"(--decoder-first-pipeline-num-layers {f} "
                f"--decoder-last-pipeline-num-layers {la})")
    for emb, loss in ((True, False), (True, True)):
        if (L + emb + loss) % (pp * vp) == 0:
            flags = "--account-for-embedding-in-pipeline-split" + (
                " --account-for-loss-in-pipeline-split" if loss else "")
            return ({"account_for_embedding_in_pipeline_split": emb,
                     "account_for_loss_in_pipeline_split": loss},
                    f"{_layers(L)} on pp {pp} x vp {vp}: the embedding"
                    f"{' and the loss' if loss else ''} counted as layers of the split "
                    f"({L + emb + loss} = {pp} x {vp} x {(L + emb + loss) // (pp * vp)}; {flags}, "
                    "as Megatron-Bridge's recipes state)")
    return None, None


def pipeline_split_error(*, num_layers, pp, vp, first=None, last=None, embedding_in_split=False,
                         loss_in_split=False):
    """None if Megatron-LM accepts this split of the layers over pp ranks x vp chunks, else a
    one-line reason (TransformerConfig.__post_init__ and megatron/training/arguments.py
    validate_args): even, L (+1 embedding, +1 loss) divisible by pp*vp; or the first/last
    stage's count given, each a multiple of vp, the middle stages sharing the rest evenly in
    multiples of vp; the two styles not combined. The same rules for calc_transformer_mem.py and
    calc_training_time.py (pipeline_chunk_layers builds the split)."""
    L, emb, loss = num_layers, bool(embedding_in_split), bool(loss_in_split)
    if first is None and last is None:
        total = L + emb + loss
        if total % (pp * vp) == 0:
            return None
        if emb or loss:
            return (f"--num-layers {L} + {emb + loss} (embedding/loss counted as layers) = "
                    f"{total} is not divisible by pp*vp = {pp}*{vp}")
        if pp == 1:
            return f"--num-layers {L} is not divisible by pp*vp = {pp}*{vp}"
        hint = pipeline_split_hint(num_layers=L, pp=pp, vp=vp)
        return (f"--num-layers {L} is not divisible by pp*vp = {pp}*{vp}; "
                + (f"Megatron-LM needs the uneven split stated, e.g. {hint}" if hint else
                   f"no uneven split Megatron-LM accepts fits either (every stage needs a "
                   f"positive multiple of vp = {vp} layers)"))
    if emb or loss:
        return ("--decoder-first/last-pipeline-num-layers cannot be combined with "
                "--account-for-embedding/loss-in-pipeline-split (Megatron-LM refuses both)")
    if pp == 1:
        return "--decoder-first/last-pipeline-num-layers need --pipeline-parallel-size > 1"
    for name, n in (("first", first), ("last", last)):
        if n is not None and n % vp:
            return f"--decoder-{name}-pipeline-num-layers {n} is not divisible by --virtual-pipeline-size {vp}"
    mid_stages = pp - (first is not None) - (last is not None)
    middle = L - (first or 0) - (last or 0)
    given = " + ".join(str(n) for n in (first, last) if n is not None)
    if middle < 0:
        return f"first/last stage layers {given} exceed --num-layers {L}"
    if mid_stages == 0 and middle:
        return f"first + last stage layers {given} must add up to --num-layers {L} with pp {pp} (no middle stage)"
    if mid_stages and middle % mid_stages:
        hint = pipeline_split_hint(num_layers=L, pp=pp, vp=vp)
        return (f"the {middle} middle layers are not divisible by the {mid_stages} middle "
                "pipeline stages" + (f"; e.g. {hint}" if hint else ""))
    if mid_stages and (middle // mid_stages) % vp:
        return (f"{middle // mid_stages} layers on each middle pipeline stage are not "
                f"divisible by --virtual-pipeline-size {vp}")
    return None


# A layout's pipeline split: the keys calc_training_time.py's layouts carry (None/False: even)
PIPELINE_SPLIT_KEYS = ("decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers",
                       "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split")


def layout_split(lay):
    """(first, last, embedding_in_split, loss_in_split) of a layout dict, for cache keys."""
    g = lay.get
    return (g("decoder_first_pipeline_num_layers"), g("decoder_last_pipeline_num_layers"),
            bool(g("account_for_embedding_in_pipeline_split")), bool(g("account_for_loss_in_pipeline_split")))


def layout_chunk_layers(num_layers, lay):
    """counts[rank][chunk] of a layout's split (pipeline_chunk_layers), None for the even one."""
    first, last, emb, loss = layout_split(lay)
    if first is None and last is None and not emb and not loss:
        return None
    return pipeline_chunk_layers(num_layers=num_layers, pp=lay["pp"], vp=lay["vp"], first=first, last=last,
                                 embedding_in_split=emb, loss_in_split=loss)


def stage_params_per_rank(spec, *, tp, pp, vp, etp, ep, stage, chunk_layers=None, layers_held=None):
    """(non_expert, expert, embedding_and_head) parameters on one rank of pipeline stage `stage`,
    summed over the stage's layers (layer_params_per_rank, once per distinct layer kind). Stage 0
    holds the token embedding (/tp), any per-layer embedding table (/tp, vocab-parallel like it),
    position table, embedding norm, projections and other model-level weights; the last stage the
    final norm and the head (/tp) -- with tied embeddings and pp > 1 a second copy of the embedding,
    as Megatron-LM keeps it. The third number is included in the first. layers_held: the stage's
    layer indices when the caller has them (all_stage_layers), else computed here."""
    V, h, p = spec["vocab_size"], spec["hidden_size"], spec["word_embed_proj_dim"]
    layers, per_kind = spec["layers"], {}
    dense = expert = 0
    if layers_held is None:
        layers_held = stage_layers(num_layers=spec["num_layers"], pp=pp, vp=vp, stage=stage,
                                   chunk_layers=chunk_layers)
    for i in layers_held:
        key = id(layers[i])
        if key not in per_kind:
            per_kind[key] = layer_params_per_rank(layers[i], h=h, norm=spec["norm"], tp=tp, etp=etp, ep=ep)
        ne, ex = per_kind[key]
        dense, expert = dense + ne, expert + ex
    emb = 0
    if stage == 0:
        emb += V * p // tp + spec["position_embedding_rows"] * h + (2 * p * h if p != h else 0)
        emb += norm_params(width=h, norm=spec["norm"]) if spec["embedding_norm"] else 0
        emb += spec["per_layer_embedding_params"] // tp + sum(spec["other_params"].values())
    if stage == pp - 1:
        emb += norm_params(width=h, norm=spec["norm"]) if spec["final_norm"] else 0
        if not spec["tied_embeddings"] or pp > 1:
            emb += V * p // tp
    return dense + emb, expert, emb


# ------------------------------------------------------------------------------------------------
# Activations (Korthikanti et al. 2022)
# ------------------------------------------------------------------------------------------------

def mlp_stored_widths(num_linears):
    """Widths an MLP keeps per token, in units of f: its input matmul output(s) and the product fed
    to the output matrix: 2 f for a 2-matrix MLP (up, activation output: Korthikanti et al. 2022
    sec. 4.1's 8 sbh for f = 4h, counted in units of f), 3 f for a gated one (fused gate|up 2 f,
    product f; the same rule applied to SwiGLU, Shazeer 2020)."""
    return 2 if num_linears == 2 else 3


def layer_activation_bytes(layer, *, s, b, h, tp, etp, sp, flash, dropout, act_bytes, streams=1):
    """Bytes one layer stores for backward for one micro-batch on one tp rank, with no recompute,
    split as {"outside", "inside", "scores"} (Korthikanti et al. 2022, sec. 4.1, Table 2), summed
    over the layer's attention and MLP blocks. outside: per block its norm input and its own input
    (2 sbh) and a dropout mask (sbh, 1 B) -- 10 sbh per layer in fp16, replicated under TP, /tp
    with sequence parallelism. inside (/tp): per attention block on its rank's heads
    (attention_on_rank) Q and the output at a/tp heads, K and V at kv/tp heads (MLA: the a/tp heads
    its up-projection expands, plus its q and kv latents r_q + r_kv + d_rope, counted outside); a
    lightning indexer's q, key and head weights (H_I d_I + d_I + H_I; its score matrix is not
    modelled); a linear mixer linear_mixer_activation_bytes (no scores); per MLP block dense internals (2 f or 3 f, /tp) or moe_activation_bytes -- 24 sbh/t
    for MHA with f = 4h. scores: softmax output, its dropout mask and output, 5 a s^2 b / t (2 a s^2
    b / t without dropout); eager attention computes the whole s x s matrix on sliding and chunked
    layers too; with flash attention an fp32 log-sum-exp per row and head instead. DeepSeek-V4: its
    attention as MQA plus its q latent and grouped output latent (r_q + g r_o), and with its
    hyper-connections each block's mixing module keeps its hc_mult input streams (streams h)."""
    B, sb = act_bytes, s * b
    mask = 1 if dropout else 0
    outside = inside = scores = 0
    # what each of Megatron-LM's selective recompute modules drops (train/recompute.py)
    by = dict.fromkeys(("norm_out", "mla_up", "mlp_inside", "moe_outside", "moe_inside", "moe_act",
                        "shared_inside"), 0)
    # DeepSeek-V4's hyper-connections: each block's mixing module also keeps its hc_mult input streams
    hc_in = sb * streams * h * B if streams > 1 else 0
    for attn in layer["attention"]:
        x = attention_on_rank(attn, tp=tp)
        at, kvt = x["heads"], x["kv_heads"]
        d, d_v = attention_head_dims(x)
        outside += sb * h * (2 * B + mask) + hc_in
        by["norm_out"] += B * sb * h
        if x["span"] == "state":
            inside += linear_mixer_activation_bytes(x, sb=sb, act_bytes=B)
            continue
        if x["kind"] == "mla":
            outside += B * sb * (x["q_lora_rank"] + x["kv_lora_rank"] + x["qk_rope_head_dim"])
        inside += B * sb * (at * d + kvt * d + kvt * d_v + at * d_v)
        if x["kind"] == "mla":  # q, k, v at every head, rebuilt from the latents
            by["mla_up"] += B * sb * (at * d + kvt * d + kvt * d_v)
        if x["kind"] == "dsv4":  # its q latent and grouped output latent
            inside += B * sb * (x["q_lora_rank"] + x["o_groups"] * x["o_lora_rank"])
        if x["index_topk"]:
            H, d_i = x["index_heads"], x["index_head_dim"]
            inside += B * sb * (H * d_i + d_i + H)
        if flash:
            scores += 4 * sb * at
        else:
            scores += at * s * s * b * (B + (mask + B if dropout else 0))
    for m in layer["mlp"]:
        outside += sb * h * (2 * B + mask) + hc_in
        by["norm_out"] += B * sb * h
        if m["kind"] == "dense":
            inside += B * sb * m["width"] * mlp_stored_widths(m["linears"]) // tp
            by["mlp_inside"] += B * sb * m["width"] * mlp_stored_widths(m["linears"]) // tp
        else:
            mo = moe_activation_bytes(m, s=s, b=b, h=h, tp=tp, etp=etp, act_bytes=B)
            outside += mo["replicated"]
            inside += mo["sharded"]
            shared = B * sb * m["shared_width"] * mlp_stored_widths(m["linears"]) // tp
            by["moe_outside"] += mo["replicated"]
            by["moe_inside"] += mo["sharded"]
            by["shared_inside"] += shared
            by["moe_act"] += B * expected_real_experts(m) * sb * m["width"] // etp  # the product fed to fc2
    div = tp if sp else 1
    by["norm_out"] /= div
    by["moe_outside"] /= div
    return {"outside": outside / div, "inside": inside, "scores": scores, **by}


def linear_mixer_activation_bytes(attn, *, sb, act_bytes):
    """What a linear mixer (on its rank's heads) stores for backward per micro-batch of sb tokens.
    Gated DeltaNet, following what flash-linear-attention's chunk_gated_delta_rule saves (its
    autograd Function keeps q, k, v, g, beta and the UT-transform matrix A, and recomputes the
    per-chunk states in backward): the conv's input and output (2 (2 H_k d_k + H_v d_v)), the gate z
    and the core output fed to the gated norm, and its output fed to out_proj (3 H_v d_v), at the
    activation width; the per-head decay and beta (fp32, 2 x 4 H_v) and A (fp32, C per head per
    token). Mamba-2, following mamba_ssm's mamba_chunk_scan_combined (it saves x, dt, B, C, z and
    recomputes the chunk states): the in_proj output and the conv output (in + conv widths), the
    core output and the gated norm's output (2 d_in), and dt in fp32 (4 H)."""
    w_in, w_out, conv_dim = mixer_widths(attn)
    if attn["kind"] == "mamba2":
        return sb * (act_bytes * (w_in + conv_dim + 2 * w_out) + 4 * attn["heads"])
    Hv = attn["heads"]
    return sb * (act_bytes * (2 * conv_dim + 3 * w_out) + 4 * Hv * (2 + attn["state_chunk"]))


def moe_activation_bytes(mlp, *, s, b, h, tp, etp, act_bytes):
    """A MoE block's stored bytes per micro-batch under balanced routing: fp32 router logits and
    probabilities over its E (+ Z zero) experts (2 x 4 s b (E + Z)), each token's k copies dispatched
    to experts and their k outputs kept for the weighted combine (2 k s b h, not split by tp), the
    experts' internals as a dense MLP of width f_e for the k s b tokens that reach real experts (k E
    / (E + Z) with zero experts, expected_real_experts; /etp), and the shared experts as one MLP (/tp).
    Korthikanti et al. 2022's per-block accounting (sec. 4.1) applied to a GShard-style MoE layer
    (Lepikhin et al. 2020: router softmax, dispatch and combine)."""
    B, sb = act_bytes, s * b
    per_f = mlp_stored_widths(mlp["linears"])
    k = mlp["topk"]
    replicated = 8 * sb * (mlp["num_experts"] + mlp["zero_experts"]) + 2 * k * B * sb * h
    sharded = (B * expected_real_experts(mlp) * sb * mlp["width"] * per_f // etp
               + B * sb * mlp["shared_width"] * per_f // tp)
    return {"replicated": replicated, "sharded": sharded}


def selective_dropped_bytes(parts, modules):
    """Bytes of one layer's stored activations (layer_activation_bytes) that Megatron-LM's selective
    recompute modules drop: core_attn the score terms (Korthikanti sec. 5; under a fused kernel its
    fp32 log-sum-exp only), layernorm each block's norm output, mla_up_proj MLA's q, k, v at all
    heads, mlp the dense MLP's internals, moe the whole MoE block's (router, dispatched copies,
    experts, shared experts), moe_act the routed experts' activation output, shared_experts the
    shared experts' internals. Each module keeps its input."""
    out = parts["scores"] if "core_attn" in modules else 0
    keys = {"layernorm": "norm_out", "mla_up_proj": "mla_up", "mlp": "mlp_inside"}
    out += sum(parts[v] for k, v in keys.items() if k in modules)
    if "moe" in modules:
        out += parts["moe_outside"] + parts["moe_inside"]
    else:
        out += (parts["moe_act"] if "moe_act" in modules else 0) + (
            parts["shared_inside"] if "shared_experts" in modules else 0)
    return out


def op_sac_layer_bytes(layer, *, s, b, h, tp, etp, sp_or_pa, flash, act_bytes, residual_bytes, streams=1):
    """What one layer keeps per micro-batch under torchtitan's per-op selective checkpointing
    (train/recompute.py): the checkpoint's input (the residual, in its dtype; /tp with sequence
    parallelism), the outputs of the matmuls it saves (block_matmuls: every odd-numbered one) at the
    activation width, and each attention block's kernel outputs (SDPA/flash: the output and an fp32
    log-sum-exp per head; eager attention its s x s score matmul output too). Routed experts and the
    router are recomputed and keep nothing (an assumption under ep > 1, where the all-to-all
    outputs are saved as communication ops)."""
    B, sb = act_bytes, s * b
    out = residual_bytes * sb * h * streams / (tp if sp_or_pa else 1)
    out += B * sb * sum(n for _, n, rec, _ in block_matmuls(layer, h=h, tp=tp, etp=etp) if not rec)
    for attn in layer["attention"]:
        x = attention_on_rank(attn, tp=tp)
        if x["span"] == "state":
            continue
        out += B * sb * x["heads"] * attention_head_dims(x)[1] + 4 * sb * x["heads"]
        if not flash:
            out += B * x["heads"] * s * s * b
    return out


def stored_layer_bytes(parts, *, recompute, sp_or_pa, tp, s, b, h, act_bytes, streams=1, modules=("core_attn",)):
    """What one layer keeps per micro-batch under a recompute mode (Korthikanti Table 2): none
    keeps everything; selective drops what its modules recompute (selective_dropped_bytes; the
    default core_attn the score terms, sec. 5); full keeps only the layer input, 2 sbh (/tp with
    sequence parallelism or partitioned activations)."""
    if recompute == "full":  # the layer input: hc_mult streams with DeepSeek-V4's hyper-connections
        return act_bytes * s * b * h * streams / (tp if sp_or_pa else 1)
    if recompute == "selective":
        return parts["outside"] + parts["inside"] + parts["scores"] - selective_dropped_bytes(parts, modules)
    return parts["outside"] + parts["inside"] + parts["scores"]


def in_flight_microbatches(*, pp, vp, stage, num_microbatches):
    """Micro-batches' worth of one stage's activations held at the peak: 1F1B keeps pp - stage
    (Narayanan et al. 2021 sec. 2.2.1); the interleaved schedule keeps (2 (pp-stage-1) + (vp-1) pp
    + 1) chunks of 1/vp stage, i.e. pp + (pp-1)/vp on stage 0 (Korthikanti sec. 4.2.3); both are
    capped by the micro-batches there are."""
    if vp == 1:
        return min(pp - stage, num_microbatches)
    return min((2 * (pp - stage - 1) + (vp - 1) * pp + 1) / vp, num_microbatches)


def output_layer_activation_bytes(*, s, b, h, V, tp, sp, act_bytes):
    """Last stage, per micro-batch (Korthikanti sec. 4.3): final norm input and head input (2 sbh
    each, /tp with sequence parallelism) and fp32 logits kept for the cross-entropy, 4 s b V / tp."""
    return 2 * act_bytes * s * b * h / (tp if sp else 1) + 4 * s * b * V / tp


# Eager PyTorch (transformers' modules): what autograd itself saves. The counts follow the modules'
# source (LlamaRMSNorm, LlamaAttention with SDPA, LlamaMLP, ForCausalLMLoss in transformers 5.x)
# and torch's autograd formulas; tests/fixtures/measure_saved.py checks them byte for byte against
# saved_tensors_hooks on transformers' own models.

# fp32 log-softmax output (saved), its incoming gradient and its input gradient, alive together when
# the backward starts at the loss (ForCausalLMLoss upcasts the logits with .float())
EAGER_LOSS_BYTES_PER_LOGIT = 12


# model_types whose MoE block the eager rule was derived for (transformers 5.x: softmax router, top-k,
# the grouped_mm experts; Qwen2-MoE's sigmoid-gated shared expert); a spec read from flags has none
EAGER_MOE_MODEL_TYPES = ("mixtral", "qwen2_moe", "qwen3_moe")

# model_types whose RMSNorm is not LlamaRMSNorm (Gemma's scales by 1 + w in fp32 and keeps its fp32
# output): the eager rule's norm count was not derived for them
UNCOVERED_NORM_PREFIX = "gemma"


def eager_rule_covers(layer, *, norm, model_type=None, attn_implementation=None, lora=False):
    """True when the eager rule below was derived for every block of this layer: RMSNorm, causal
    softmax attention (MHA, GQA, MQA, with or without q/k norms) through SDPA with no mask, or, with
    attn_implementation named, sliding and chunked layers too (train/finetune.attention_kernel: a
    masked kernel or eager scores), dense MLPs, and the MoE blocks of EAGER_MOE_MODEL_TYPES (or of
    a model described by flags; not under LoRA). Sparse attention, sinks, MLA, linear mixers,
    other routers (sigmoid, biased, grouped, zero experts), experts with biases, LayerNorm and
    Gemma's RMSNorm are not."""
    if norm != "rmsnorm" or (model_type or "").startswith(UNCOVERED_NORM_PREFIX):
        return False
    spans = ("full",) if attn_implementation is None else ("full", "sliding", "chunked")
    for a in layer["attention"]:
        if (a["kind"] != "mha" or a["span"] not in spans or a["sinks"] or a["output_gate"] != "none"
                or a["index_topk"] or a["kv_shared"]):
            return False
    for m in layer["mlp"]:
        if m["kind"] == "moe" and lora:
            return False
        if m["kind"] == "moe":
            if (model_type not in EAGER_MOE_MODEL_TYPES + (None,) or m["zero_experts"] or m["router_bias"]
                    or m["bias"] or m["shared_bias"]):
                return False
        elif m["kind"] != "dense":
            return False
    return True


def eager_layer_activation_bytes(layer, *, s, b, h, tp, sp, act_bytes, autocast,
                                 attn_implementation=None, padded=False):
    """Bytes autograd saves for one layer and micro-batch in eager PyTorch, transformers' modules
    (eager_rule_covers), per tp rank. autocast: fp32 parameters under torch.autocast (the Hugging
    Face Trainer's --bf16), so the residual stream is fp32 and every linear casts its own input to
    16 bits; else parameters and activations at act_bytes. Per token: each RMSNorm its fp32 input
    (the upcast) and its normalised output in the input's dtype, and an fp32 1/rms; each linear
    reading a norm its input (one cast per linear under autocast, one shared tensor otherwise); q/k
    norms the same per head; SDPA q, k, v, its output (o_proj reads it) and an fp32 log-sum-exp
    per head; a gated MLP its gate and up outputs, the activation and the product (4 f), a
    2-matrix MLP 2 f. Rotary embeddings save only cos and sin; residual adds nothing. An MoE block
    (transformers 5.x's grouped_mm experts, the default: integrations/moe.py) saves per token its
    router's fp32 probabilities (4 E), top-k indices (8 k), the renormalisation (4 k + 4) and the
    routing weights (4 k, fp32 as Mixtral keeps them; Qwen's routers save up to 6 k + 4 B less),
    three int64 permutations (24 k), and per routed copy its gathered input, the gate/up output,
    activation, product and down output (2 h + 4 f, 2 h + 2 f without a gate) in the experts'
    dtype -- fp32 under autocast, which grouped_mm does not join; a shared expert is a dense MLP,
    its sigmoid gate (Qwen2-MoE) keeping the expert's output and the gate (h + 1); plus 4 E bytes
    of int32 offsets per micro-batch. attn_implementation (None: SDPA's flash kernel) picks the
    attention core's kernel and what it keeps (train/finetune.attention_saved_bytes). Fused
    projections (the layer kinds' "fused": Phi-3's qkv_proj, gate_up_proj) cast their input once
    under autocast, and keep what train/finetune.fused_qkv_saved_bytes says; a chunked gate|up
    output keeps 2 f as the two separate outputs do."""
    A, R = act_bytes, 4 if autocast else act_bytes  # 16-bit compute; the residual in the weights' dtype
    blocks = len(layer["attention"]) + len(layer["mlp"])
    extra_norms = max(layer["norms"] - blocks, 0)  # sandwich norms read a block's 16-bit output
    norms = blocks * (4 * h + R * h + 4) + extra_norms * (4 * h + A * h + 4)
    copies = inside = offsets = 0  # offsets: per micro-batch (a mask's bias, MoE offsets)
    for attn in layer["attention"]:
        x = attention_on_rank(attn, tp=tp)
        at, kvt = x["heads"], x["kv_heads"]
        d, d_v = attention_head_dims(x)
        copies += A * h * ((1 + x["kv_proj"]) if autocast and not attn.get("fused") else 1)
        if x["qk_norm"] != "none":
            inside += (at + kvt) * (4 * d + A * d + 4)
        kern = (attention_kernel(attn, s=s, attn_implementation=attn_implementation,
                                 padded=padded) if attn_implementation else "flash")
        tok, mb = attention_saved_bytes(attn, s=s, b=b, tp=tp, act_bytes=A, kernel=kern)
        inside += tok + fused_qkv_saved_bytes(attn, tp=tp, act_bytes=A, kernel=kern, frozen=False)
        offsets += mb
    for m in layer["mlp"]:
        gated = 4 if m["linears"] == 3 else 2
        if m["kind"] != "moe":
            copies += A * h * ((m["linears"] - 1) if autocast and not m.get("fused") else 1)
            inside += A * (m["width"] // tp) * gated
            continue
        k, E, X = m["topk"], m["num_experts"], 4 if autocast else A
        fs = m["shared_width"] // tp
        copies += A * h * ((1 + ((m["linears"] - 1) if fs else 0) + bool(m["shared_gate"])) if autocast else 1)
        router = 4 * E + 8 * k + (4 * k + 4) + 4 * k  # probabilities, indices, renormalisation, weights
        inside += router + 24 * k + k * X * (2 * h + gated * (m["width"] // tp))  # permutations; routed copies
        if fs:
            inside += A * fs * gated + (A * (h + 1) if m["shared_gate"] else 0)
        offsets += 4 * E
    return s * b * ((norms + copies) / (tp if sp else 1) + inside) + offsets


def eager_checkpointed_layer_bytes(*, s, b, h, tp, sp_or_pa, act_bytes, autocast):
    """A checkpointed layer in eager PyTorch (torch.utils.checkpoint, non-reentrant, as
    transformers' gradient_checkpointing_enable runs it): its input only, in the residual's dtype
    (fp32 under autocast), /tp with sequence parallelism or partitioned activations."""
    return (4 if autocast else act_bytes) * s * b * h / (tp if sp_or_pa else 1)


def eager_output_layer_bytes(*, s, b, h, V, tp, sp, act_bytes, autocast):
    """Last stage, per micro-batch, eager: the final RMSNorm (as above) and the head's 16-bit input,
    and the loss at the start of backward, EAGER_LOSS_BYTES_PER_LOGIT per logit (/tp)."""
    R = 4 if autocast else act_bytes
    return s * b * ((4 * h + R * h + 4 + act_bytes * h) / (tp if sp else 1) + EAGER_LOSS_BYTES_PER_LOGIT * V / tp)


def once_per_kind(layers, indices, fn):
    """fn(layer) for each of layers[i], i in indices, computed once per distinct layer dict (a
    model's layers of one kind are one shared dict): the per-kind sums of training and serving
    memory."""
    seen, out = {}, []
    for i in indices:
        layer = layers[i]
        if id(layer) not in seen:
            seen[id(layer)] = fn(layer)
        out.append(seen[id(layer)])
    return out


def training_memory(spec, c, b, cache=None):
    """Per-stage training memory for micro-batch b; returns the heaviest stage's breakdown and the
    list of per-stage totals. `c` is the MemoryConfig. Sums the formulas above over each stage's
    layers: model states after ZeRO (Rajbhandari et al. 2020, sec. 5) sharded as in Megatron-LM
    (Narayanan et al. 2021), activations after Korthikanti et al. 2022, Table 2, per layer kind.
    With c["activation_rule"] == "eager" (eager PyTorch, transformers' modules) the layers
    eager_rule_covers store what autograd saves, the loss keeps its fp32 log-softmax tensors,
    autocast keeps a 16-bit copy of each linear weight whose forward is not recomputed, and
    gradients exist only from the backward to the optimizer step (zeroed with set_to_none, as
    torch's optimizers do), so the peak is the larger of two moments: the backward's start
    (states, gradients only under accumulation, every saved activation, the loss) and its end
    (states and all gradients, plus a tied embedding's second dense gradient or the rebuilt layer
    under full recompute). `cache`: a dict the caller keeps for one model (a search's), holding
    each pipeline split's stage layers and each stage's parameters, which the micro-batch,
    recompute and memory knobs do not change."""
    pp, vp = c["pp"], c["vp"]
    ctx = _ActivationRules(spec, c, b)
    cache = {} if cache is None else cache
    chunks = c["chunk_layers"]
    skey = ("stage_layers", pp, vp, chunks and tuple(map(tuple, chunks)))
    if skey not in cache:
        cache[skey] = all_stage_layers(num_layers=spec["num_layers"], pp=pp, vp=vp,
                                       chunk_layers=chunks)
    by_stage, acts = cache[skey], {}
    stages = [_stage_memory(spec, c, ctx, st, layers, keys=(cache, skey, acts))
              for st, layers in enumerate(by_stage)]
    worst_stage = max(stages, key=lambda x: x["total_bytes"])
    return worst_stage, stages


class _ActivationRules:
    """What training_memory reads once per call: the shard sizes and widths every layer's
    activation formula takes, and, per distinct layer kind, its fused-rule parts, eager bytes
    and op-SAC bytes (computed on first use)."""

    __slots__ = ("c", "spec", "s", "b", "h", "tp", "etp", "ab", "m", "sp", "sp_or_pa", "eager",
                 "autocast", "mods", "streams", "attn", "lora", "residual", "padded")

    def __init__(self, spec, c, b):
        self.spec, self.c, self.b = spec, c, b
        self.s = c["sequence_length"] // c["cp"]
        self.h, self.tp, self.etp = spec["hidden_size"], c["tp"], c["etp"]
        self.ab = c["act_bytes"]
        self.m = c["num_microbatches"] if c["num_microbatches"] else c["pp"]
        self.sp = c["sequence_parallel"]
        self.sp_or_pa = c["sequence_parallel"] or c["partition_activations"]
        self.eager = c.get("activation_rule") == "eager"
        self.autocast = self.eager and c.get("autocast", False)
        self.mods = tuple(c.get("recompute_modules") or DEFAULT_RECOMPUTE_MODULES)
        self.streams = spec.get("residual_streams", 1)
        self.attn = c.get("attn_implementation") if self.eager else None
        self.lora = c.get("lora") if self.eager else None
        self.padded = bool(c.get("padded_batches"))
        # the residual stream's bytes: fp32 under autocast (fp32 weights) or QLoRA's upcast
        self.residual = (lora_residual_bytes(self.lora, act_bytes=self.ab) if self.lora
                         else 4 if self.autocast else self.ab)

    def parts_of(self, layer):
        c = self.c
        return layer_activation_bytes(layer, s=self.s, b=self.b, h=self.h, tp=self.tp, etp=self.etp,
                                      sp=self.sp, flash=c["flash_attention"], dropout=c["dropout"],
                                      act_bytes=self.ab, streams=self.streams)

    def eager_of(self, layer):
        """None: a layer the eager rule does not cover (and selective recompute)."""
        spec = self.spec
        if self.c["recompute"] == "selective" or not eager_rule_covers(
                layer, norm=spec["norm"], model_type=spec.get("model_type"),
                attn_implementation=self.attn, lora=bool(self.lora)):
            return None
        if self.lora:
            return lora_layer_activation_bytes(layer, s=self.s, b=self.b, h=self.h, tp=self.tp,
                                               act_bytes=self.ab, autocast=self.autocast,
                                               lora=self.lora, attn_implementation=self.attn,
                                               padded=self.padded)
        return eager_layer_activation_bytes(layer, s=self.s, b=self.b, h=self.h, tp=self.tp,
                                            sp=self.sp, act_bytes=self.ab, autocast=self.autocast,
                                            attn_implementation=self.attn, padded=self.padded)

    def sac_of(self, layer):
        return op_sac_layer_bytes(layer, s=self.s, b=self.b, h=self.h, tp=self.tp, etp=self.etp,
                                  sp_or_pa=self.sp_or_pa, flash=self.c["flash_attention"],
                                  act_bytes=self.ab, residual_bytes=4 if self.autocast else self.ab,
                                  streams=self.streams)


def _stage_model_states(spec, c, *, layers, ne, ex, emb, tp):
    """(weights, gradients, optimizer, trainable parameters, ZeRO buffers) bytes of one stage's
    rank: LoRA's frozen base and adapters, or every parameter's states after ZeRO."""
    lora = c["lora"]
    if lora:  # frozen base: quantized (QLoRA) or low-precision linear weights, no grads/states
        base_w = (ne + ex - emb) * lora["base_bits"] / 8 + emb * c["weight_bytes"]
        ad = sum(once_per_kind(spec["layers"], layers, lambda x: lora_params_per_layer(
            x, h=spec["hidden_size"], rank=lora["rank"], targets=lora["targets"], tp=tp)))
        opt = OPTIMIZER_STATE_BYTES[c["optimizer"]]
        if c.get("activation_rule") == "eager":  # peft on a 16-bit or k-bit base, torch.optim
            base_w, opt = peft_base_and_optimizer_bytes(spec, c, layers=layers, ne=ne, ex=ex,
                                                        emb=emb)
        w, g, o = zero_model_state_bytes(params=ad, weight_bytes=lora["adapter_bytes"],
                                         grad_bytes=lora["adapter_bytes"], optimizer_bytes=opt,
                                         zero_stage=c["zero_stage"], shard_degree=c["zero_shard"])
        w += base_w / (c["zero_shard"] if c["zero_stage"] >= 3 else 1)
        trainable = ad
    else:
        wb, gb, ob, z = c["weight_bytes"], c["grad_bytes"], c["opt_bytes"], c["zero_stage"]
        w1, g1, o1 = zero_model_state_bytes(params=ne, weight_bytes=wb, grad_bytes=gb,
                                            optimizer_bytes=ob, zero_stage=z,
                                            shard_degree=c["zero_shard"])
        w2, g2, o2 = zero_model_state_bytes(params=ex, weight_bytes=wb, grad_bytes=gb,
                                            optimizer_bytes=ob, zero_stage=z,
                                            shard_degree=c["expert_zero_shard"])
        w, g, o = w1 + w2, g1 + g2, o1 + o2
        if c.get("offload_param"):  # DeepSpeed ZeRO-3 offload_param: the 16-bit weights on the host
            w = 0
        trainable = ne + ex
    buffers = 0
    if c["zero_stage"] >= 1 and c["zero_shard"] > 1:
        buffers += c["zbs"] * c["weight_bytes"]
    if c["zero_stage"] == 3 and c["zero_shard"] > 1:
        buffers += min(c["zmlp"], ne + ex) * c["weight_bytes"]
    return w, g, o, trainable, buffers


def _stage_layer_activations(ctx, layers):
    """(stored bytes of one micro-batch, the recompute working set, each layer's eager bytes or
    None) of one stage's layers: per layer by its recompute mode (--recompute-every leaves the
    others keeping everything) and rule; the working set is the stage's largest layer rebuilt in
    its backward: all of it under full, what op-SAC did not keep, what the selective modules
    dropped."""
    all_layers, s, b, h, tp, ab = ctx.spec["layers"], ctx.s, ctx.b, ctx.h, ctx.tp, ctx.ab
    parts = once_per_kind(all_layers, layers, ctx.parts_of)
    eager_parts = (once_per_kind(all_layers, layers, ctx.eager_of) if ctx.eager
                   else [None] * len(parts))
    modes = layer_modes(ctx.c, layers)
    sacs = once_per_kind(all_layers, layers, ctx.sac_of) if "op-sac" in modes else [0] * len(parts)
    per_mb = 0
    for x, e, md, sac in zip(parts, eager_parts, modes, sacs):
        if md == "op-sac":
            per_mb += sac
        elif e is None:
            per_mb += stored_layer_bytes(x, recompute=md, sp_or_pa=ctx.sp_or_pa, tp=tp, s=s, b=b,
                                         h=h, act_bytes=ab, streams=ctx.streams, modules=ctx.mods)
        elif md == "full":
            per_mb += eager_checkpointed_layer_bytes(s=s, b=b, h=h, tp=tp, sp_or_pa=ctx.sp_or_pa,
                                                     act_bytes=ctx.residual, autocast=False)
        else:
            per_mb += e
    working = 0
    for x, e, md, sac in zip(parts, eager_parts, modes, sacs):
        whole = x["outside"] + x["inside"] + x["scores"] if e is None else e
        if md == "full":
            working = max(working, whole)
        elif md == "op-sac":
            working = max(working, whole - sac)
        elif md == "selective":
            working = max(working, selective_dropped_bytes(x, ctx.mods))
    return per_mb, working, eager_parts


def _stage_memory(spec, c, ctx, st, layers, keys=None):
    """One pipeline stage's breakdown (training_memory's list entry). keys: (the caller's cache,
    this split's key, this call's activations by stage composition), training_memory's."""
    tp, pp, s, b, h, ab = ctx.tp, c["pp"], ctx.s, ctx.b, ctx.h, ctx.ab
    cache, skey, acts = keys if keys else ({}, None, {})
    pkey = ("stage_params", tp, c["vp"], ctx.etp, c["ep"], st, skey)
    if pkey not in cache:
        cache[pkey] = stage_params_per_rank(spec, tp=tp, pp=pp, vp=c["vp"], etp=ctx.etp,
                                            ep=c["ep"], stage=st, layers_held=layers)
    ne, ex, emb = cache[pkey]
    w, g, o, trainable, buffers = _stage_model_states(spec, c, layers=layers, ne=ne, ex=ex, emb=emb,
                                                      tp=tp)
    all_layers = spec["layers"]  # stages of the same layer kinds in the same order store alike
    akey = tuple(id(all_layers[i]) for i in layers), tuple(layer_modes(c, layers))
    if akey not in acts:
        acts[akey] = _stage_layer_activations(ctx, layers)
    per_mb, working, eager_parts = acts[akey]
    emb_mb = 0
    if st == 0 and c["dropout"]:  # embedding dropout mask, 1 byte (Korthikanti sec. 4.3)
        emb_mb = s * b * h / (tp if c["sequence_parallel"] else 1)
    flight = in_flight_microbatches(pp=pp, vp=c["vp"], stage=st, num_microbatches=ctx.m)
    stored = (per_mb + emb_mb) * flight
    logits = casts = 0
    if st == pp - 1:
        if ctx.lora:
            logits = frozen_output_layer_bytes(s=s, b=b, h=h, V=spec["vocab_size"], tp=tp,
                                               loss_bytes_per_logit=EAGER_LOSS_BYTES_PER_LOGIT)
        elif ctx.eager:
            logits = eager_output_layer_bytes(s=s, b=b, h=h, V=spec["vocab_size"], tp=tp,
                                              sp=c["sequence_parallel"], act_bytes=ab,
                                              autocast=ctx.autocast)
        else:
            logits = output_layer_activation_bytes(s=s, b=b, h=h, V=spec["vocab_size"], tp=tp,
                                                   sp=c["sequence_parallel"], act_bytes=ab)
    phase = None
    if ctx.eager:  # the larger of the backward's start and end (training_memory's docstring)
        if ctx.lora:
            casts = peft_cast_bytes(spec, c, layers=layers, trainable=trainable,
                                    last=st == pp - 1, tp=tp)
        elif ctx.autocast:
            # 16-bit weight copies saved by the linears whose forward is kept, and the head's
            # (routed experts run grouped_mm, which autocast does not cast: their weights stay fp32)
            casts = ab * ((ne - emb) if c["recompute"] not in ("full", "op-sac") else 0)
            casts += (ab * spec["vocab_size"] * spec["word_embed_proj_dim"] / tp
                      if st == pp - 1 else 0)
        g_start = g if ctx.m > 1 else 0  # accumulation: the earlier micro-batches' gradients
        tied = (spec["vocab_size"] * spec["word_embed_proj_dim"] / tp * c["grad_bytes"]
                if spec["tied_embeddings"] and pp == 1 and not ctx.lora else 0)
        if g_start + casts + stored + logits >= g + max(tied, working):
            phase, g = "backward start", g_start
            working = 0
        else:
            phase, casts, stored, logits, per_mb, emb_mb = "backward end", 0, 0, 0, 0, 0
            g, working = (g + tied, 0) if tied >= working else (g, working)
    act = stored + working + logits
    total = w + g + o + buffers + casts + act + c["overhead_bytes"]
    return {"stage": st, "stage_layers": len(layers), "params_per_gpu": ne + ex,
            "trainable_params_per_gpu": trainable,
            "expert_params_per_gpu": ex, "weights_bytes": w, "gradients_bytes": g,
            "optimizer_bytes": o, "zero_buffers_bytes": buffers,
            "activations_stored_bytes": stored,
            "activations_layers_bytes": per_mb * flight,
            "activations_embedding_bytes": emb_mb * flight,
            "activations_recompute_bytes": working,
            "activations_logits_bytes": logits, "activations_bytes": act,
            "weight_casts_bytes": casts, "peak_phase": phase,
            "eager_rule_layers": sum(e is not None for e in eager_parts),
            "in_flight_microbatches": flight, "total_bytes": total}


OFFLOAD_WEIGHT_BYTES = 2  # offloaded 16-bit weights are what the layers read (the fp32 master copy is the optimizer's)


def offloaded_stage_memory(stage, *, emb_params, offload_params, offload_activations):
    """One stage's training_memory breakdown with its layer weights and/or stored activations in
    host memory: two layers' weights stay (the embedding and head's stay whole), and two layers'
    stored activations of one micro-batch. Returns a new dict with the moved bytes as
    host_bytes."""
    st = dict(stage)
    n = max(st["stage_layers"], 1)
    moved = 0.0
    if offload_params and st["params_per_gpu"]:
        per_param = st["weights_bytes"] / st["params_per_gpu"]
        layers_w = st["weights_bytes"] - emb_params * per_param
        kept = min(n, 2) * layers_w / n
        moved += layers_w - kept
        st["weights_bytes"] -= layers_w - kept
    if offload_activations and st["activations_layers_bytes"]:
        per_layer = st["activations_layers_bytes"] / (n * max(st["in_flight_microbatches"], 1))
        kept = min(st["activations_layers_bytes"], 2 * per_layer)
        moved += st["activations_layers_bytes"] - kept
        st["activations_stored_bytes"] -= st["activations_layers_bytes"] - kept
        st["activations_bytes"] -= st["activations_layers_bytes"] - kept
        st["activations_layers_bytes"] = kept
    st["total_bytes"] -= moved
    st["host_bytes"] = moved
    return st


def offloaded_stages(spec, cfg, stages):
    """offloaded_stage_memory on every stage of training_memory's list. cfg: a layout or mem's
    configuration (tp, pp, vp, etp, ep, offload_params, offload_activations, and chunk_layers when
    the pipeline split is uneven)."""
    chunks = cfg["chunk_layers"] if "chunk_layers" in cfg else layout_chunk_layers(spec["num_layers"], cfg)
    by_stage = all_stage_layers(num_layers=spec["num_layers"], pp=cfg["pp"], vp=cfg["vp"], chunk_layers=chunks)
    out = []
    for st in stages:
        emb = stage_params_per_rank(spec, tp=cfg["tp"], pp=cfg["pp"], vp=cfg["vp"], etp=cfg["etp"], ep=cfg["ep"],
                                    stage=st["stage"], layers_held=by_stage[st["stage"]])[2]
        out.append(offloaded_stage_memory(st, emb_params=emb, offload_params=cfg.get("offload_params"),
                                          offload_activations=cfg.get("offload_activations")))
    return out


def offloaded_memory(spec, cfg, stages):
    """The heaviest stage of offloaded_stages."""
    return max(offloaded_stages(spec, cfg, stages), key=lambda x: x["total_bytes"])
