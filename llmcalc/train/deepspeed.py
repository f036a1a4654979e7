"""DeepSpeed's training engine (--framework deepspeed): when its ZeRO stages reduce and gather,
what its pipeline engine exposes, and the time of its optimizer offload to CPU or NVMe. The layers'
kernels are Megatron-LM's fused ones (Megatron-DeepSpeed, the stack of MT-NLG and BLOOM); eager
Hugging Face modules under DeepSpeed are not combined here.

Read from deepspeedai/DeepSpeed (@edaa722, 2026-08):
- ZeRO 1/2 (deepspeed/runtime/zero/stage_1_and_2.py): gradients go out in reduce_bucket_size
  buckets (5e8 elements, zero/config.py); stage 2 partitions gradients and so reduces after every
  micro-batch's backward, stage 1 only on the accumulation boundary's
  (reduce_ready_partitions_and_remove_grads). With overlap_comm the reduction runs on its own
  stream beside the backward; without it (the default below stage 3, overlap_comm_valid) on the
  compute stream, exposed. After the optimizer step the updated 16-bit weights are all-gathered
  (allgather_bucket_size, 5e8), exposed.
- ZeRO 3 (stage3.py): parameters all-gathered per module before its forward and backward,
  prefetched (stage3_prefetch_bucket_size 5e7, stage3_max_live_parameters 1e9); gradients
  reduce-scattered every micro-batch; overlap_comm defaults on.
- Pipeline engine (runtime/pipe/engine.py, schedule.py TrainSchedule): 1F1B, no interleaving;
  ZeRO 2 and 3 refused ("incompatible with pipeline parallelism"); activations sent 1/tp per rank
  and all-gathered (pipe_partitioned, grad_partitioned default true); p2p.send / p2p.recv are
  blocking (async_op must be False), so a stage waits out both its receive and its send each way;
  ReduceTiedGrads and ReduceGrads run after the last backward (allreduce in 5e8-element buckets),
  not beside it.
- Offload (zero/offload_config.py): offload_optimizer device cpu or nvme, pipeline_read /
  pipeline_write off by default (NVMe reads and writes not overlapped with the CPU step);
  offload_param (stage 3) keeps the 16-bit weights on the host, fetched per module.
"""

from .dp_sync import dp_sync_times_s


DEEPSPEED = "deepspeed"

# DeepSpeed's defaults, elements (deepspeed/runtime/zero/config.py; runtime/engine.py
# MEMORY_OPT_ALLREDUCE_SIZE for the pipeline engine's and plain data parallelism's all-reduce)
REDUCE_BUCKET_ELEMENTS = 5e8

# fp32 master weights, Adam's two moments: read and written once per step each when they live on NVMe
NVME_OPTIMIZER_BYTES_PER_PARAM = 2 * 12


def deepspeed_dp_exposed_s(*, params_by_stage, stage_bwd_s, lay, net):
    """(exposed seconds per step, the slowest stage's reduction seconds) of DeepSpeed's gradient
    reduction and weight gather (module docstring). Per stage, over its dp x cp replicas (stride
    tp; expert weights over dp x cp / ep): ZeRO 0 all-reduce, 1-3 reduce-scatter, in
    lay["dp_bucket_params"] buckets. pp > 1 (pipeline engine): after the stage's last backward,
    exposed, less the head start stage i has (i backward-times). pp = 1: stage 1 and 0 once, on the
    last micro-batch; stage 2 and 3 every micro-batch; beside that backward with overlap_comm (the
    last bucket exposed, or what outlasts the backward), else exposed. ZeRO 1/2 then all-gather the
    updated 16-bit weights after the step, exposed."""
    zero, m = lay["zero_stage"], lay["num_microbatches"]
    if lay["dp"] * lay["cp"] <= 1:
        return 0.0, 0.0
    mean_b = sum(stage_bwd_s) / len(stage_bwd_s)
    worst, t_sync_max = 0.0, 0.0
    for i, (dense, expert) in enumerate(params_by_stage):
        red, gather = dp_sync_times_s(dense, expert, lay=lay, net=net)
        if lay["pp"] > 1:
            exposed = red - i * mean_b
        else:
            times = m if zero >= 2 else 1
            if lay["dp_overlap"]:
                bucket = red * min(1.0, lay["dp_bucket_params"] / max(dense + expert, 1))
                exposed = times * max(bucket, red - stage_bwd_s[i])
            else:
                exposed = times * red
        worst = max(worst, max(0.0, exposed) + gather)
        t_sync_max = max(t_sync_max, red + gather)
    return worst, t_sync_max


def deepspeed_p2p_factor(lay):
    """How many times one stage's per-direction activation transfer sits on its timeline per
    micro-batch and direction: 2 under DeepSpeed's pipeline engine (the blocking receive from one
    neighbour and the blocking send to the other), 1 where sends and receives overlap (Megatron-LM's
    batched isend/irecv)."""
    return 2 if lay.get("framework") == DEEPSPEED else 1


def offload_optimizer_s(params_shard, *, lay, hw, cpu_adam_params_per_s):
    """Optimizer step seconds with the optimizer offloaded (ZeRO-Offload, Ren et al. 2021): the
    gradients to the host and the updated 16-bit weights back over PCIe (4 + 2 B per parameter),
    CPU-Adam on the GPU's share, and, on NVMe
    (ZeRO-Infinity, Rajbhandari et al. 2021), the fp32 master weights and moments read and written
    at the stated NVMe bandwidth, not overlapped (pipeline_read / pipeline_write off)."""
    t = params_shard * 6 / hw["pcie"] + params_shard / cpu_adam_params_per_s
    if lay.get("offload_device") == "nvme":
        t += params_shard * NVME_OPTIMIZER_BYTES_PER_PARAM / lay["nvme_bytes_per_s"]
    return t


def offload_param_fetch_s(params_layer_shard, *, lay, hw):
    """Seconds to bring one layer's 16-bit weight shard to the GPU under offload_param (ZeRO-3):
    over PCIe from host memory, and first from NVMe at its stated bandwidth when there."""
    t = params_layer_shard * 2 / hw["pcie"]
    if lay.get("offload_param") == "nvme":
        t += params_layer_shard * 2 / lay["nvme_bytes_per_s"]
    return t
