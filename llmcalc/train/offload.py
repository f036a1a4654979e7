"""Weights and activations kept in host memory during training, streamed over PCIe layer by layer:
what stays on the GPU and what the transfers add to the step. (The optimizer's offload,
ZeRO-Offload, is costed in step.optimizer_s.)

Parameter offload (ZeRO-Infinity, Rajbhandari et al. 2021, sec. 5; Calculon's weight_offload,
Isaev et al. 2023): the 16-bit weights of the transformer layers live in host memory and each
layer's weights are copied in before its forward and again before its backward, every micro-batch,
prefetched while the previous layer computes; the GPU holds two layers' weights (the one computing
and the one arriving). The embedding, the head and their gradients stay on the GPU, and so do the
gradients (sharded under ZeRO-2) unless the optimizer is offloaded too.

Activation offload (Calculon's activations_offload; the same double buffer): what each layer stores
for its backward goes to the host during the forward and comes back before the backward; the GPU
keeps two layers' worth of one micro-batch.

What stays on the GPU is memory.offloaded_stages (shared with calc_transformer_mem.py's flags of
the same names). Per layer and micro-batch the copies run on the copy engines beside the layer's compute, both
directions of the link at once: the forward moves max(weights in, activations out) and the
backward weights in plus activations in over one direction (Calculon's _get_fw_offload_size and
_get_bw_offload_size); what outlasts the layer's compute is exposed. Host memory capacity and the
host's DRAM bandwidth shared by its GPUs are not checked (stated in the report). Costed for
Megatron-LM-style stacks at ZeRO 0-2 only (check_layout refuses the rest): ZeRO-3 already shards
the weights, and PyTorch FSDP's CPUOffload moves weights, gradients and optimizer together.
"""

from .memory import (OFFLOAD_WEIGHT_BYTES, all_stage_layers, layer_params_per_rank, layout_chunk_layers,
                     memory_config, offloaded_memory, training_memory)
from .step import LAYER_COST_KEYS, evaluate, layer_cost, pass_times_s, pipeline_time_s


def layout_memory(spec, lay, c0, memo=None):
    """(the heaviest stage's memory, one layer's stored activations for one micro-batch) of a
    layout, its offloads applied; `memo` shares training_memory's stages between searches (they do
    not depend on the accelerator)."""
    c = memory_config(spec, lay, c0)
    b = lay["micro_batch_size"]
    try:
        key = (b, tuple(sorted(c.items())))
        hash(key)
    except TypeError:  # a configuration value that is not hashable: no sharing
        key, memo = None, None
    if memo is not None and key in memo:
        worst, stages = memo[key]
    else:
        worst, stages = training_memory(spec, c, b, cache=memo)
        if memo is not None:
            memo[key] = worst, stages
    if not (lay.get("offload_params") or lay.get("offload_activations")):
        return worst, 0.0
    act = worst["activations_layers_bytes"] / (max(worst["stage_layers"], 1) * max(worst["in_flight_microbatches"], 1))
    return offloaded_memory(spec, lay, stages), act


def evaluate_layout(spec, lay, *, hw, net, c0, flops, cache=None, memory=None):
    """evaluate() with the layout's parameter and activation offload: memory from layout_memory
    (or `memory`, its result), time from with_offload_time."""
    cache = {} if cache is None else cache
    mem, act = memory if memory is not None else layout_memory(spec, lay, c0)
    res = evaluate(spec, lay, hw=hw, net=net, c0=c0, flops=flops, cache=cache, memory=mem)
    return with_offload_time(spec, lay, res, hw=hw, net=net, cache=cache, act_bytes_per_layer=act)


def layer_offload_exposed_s(*, weight_bytes, act_bytes, fwd_s, bwd_s, pcie_bytes_per_s):
    """(forward, backward) seconds one layer's host copies add to one micro-batch (Calculon's
    _get_fw_offload_size / _get_bw_offload_size, Isaev et al. 2023): forward max(weights,
    activations) / link (the two directions at once), backward (weights + activations) / link (both
    inbound), each less the layer's compute of that pass (its recompute included), never below zero."""
    f = max(weight_bytes, act_bytes) / pcie_bytes_per_s
    b = (weight_bytes + act_bytes) / pcie_bytes_per_s
    return max(0.0, f - fwd_s), max(0.0, b - bwd_s)


def with_offload_time(spec, lay, res, *, hw, net, cache, act_bytes_per_layer):
    """evaluate()'s result with the exposed host copies added to each stage's micro-batch time and
    the pipeline re-timed (pipeline_time_s); MFU, HFU and throughput scale with the step.
    act_bytes_per_layer: what one layer stores for one micro-batch (layout_memory's)."""
    if not (lay.get("offload_params") or lay.get("offload_activations")):
        return res
    layers = spec["layers"]
    by_stage = all_stage_layers(num_layers=spec["num_layers"], pp=lay["pp"], vp=lay["vp"],
                                chunk_layers=layout_chunk_layers(spec["num_layers"], lay))
    key_lay = tuple(lay[k] for k in LAYER_COST_KEYS)
    per_kind, added, stage_s = {}, [], []
    for st, held in enumerate(by_stage):
        extra = 0.0
        for i in held:
            layer = layers[i]
            if id(layer) not in per_kind:
                k = (id(layer), key_lay)
                if k not in cache:
                    cache[k] = layer_cost(layer, spec=spec, lay=lay, hw=hw, net=net)
                c = cache[k]
                fwd, bwd = pass_times_s(c["compute"], c["comm"])
                wb = 0.0
                if lay.get("offload_params"):
                    ne, ex = layer_params_per_rank(layer, h=spec["hidden_size"], norm=spec["norm"], tp=lay["tp"],
                                                   etp=lay["etp"], ep=lay["ep"])
                    wb = (ne + ex) * OFFLOAD_WEIGHT_BYTES
                ab = act_bytes_per_layer if lay.get("offload_activations") else 0.0
                per_kind[id(layer)] = sum(layer_offload_exposed_s(weight_bytes=wb, act_bytes=ab, fwd_s=fwd, bwd_s=bwd,
                                                                  pcie_bytes_per_s=hw["pcie"]))
            extra += per_kind[id(layer)]
        added.append(extra)
        stage_s.append(res["stage_time_s"][st] + extra)
    m = lay["num_microbatches"]
    old_pipe = pipeline_time_s(res["stage_time_s"], m=m, vp=lay["vp"])
    new_pipe = pipeline_time_s(stage_s, m=m, vp=lay["vp"])
    step = res["step_time_s"] - old_pipe + new_pipe
    r = step / res["step_time_s"]
    out = dict(res, step_time_s=step, stage_time_s=stage_s, mfu=res["mfu"] / r, hfu=res["hfu"] / r,
               model_tflops_per_gpu=res["model_tflops_per_gpu"] / r, tokens_per_s=res["tokens_per_s"] / r,
               tokens_per_s_per_gpu=res["tokens_per_s_per_gpu"] / r)
    worst = max(range(len(stage_s)), key=lambda i: stage_s[i])
    bd = dict(res["breakdown_s"])
    bd["exposed_offload_copies"] = m * added[worst]
    bd["pipeline_bubble"] = new_pipe - m * stage_s[worst]
    out.update(breakdown_s=bd, slowest_stage=worst)
    return out
