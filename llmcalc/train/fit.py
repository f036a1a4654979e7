"""What fits on a GPU: the largest batch or context under a memory limit, the host memory an
offloaded optimizer needs, and the ways out of a training layout that does not fit, each costed
by the same memory model (train/memory.py). References: Ren et al. 2021, "ZeRO-Offload" (what the
host holds); Rajbhandari et al. 2020, "ZeRO" (what stage 3 shards).
"""

from .memory import memory_config, training_memory, zero_shards


def largest_that_fits(fn, limit, hi_cap=1 << 24):
    """Largest positive integer x <= hi_cap with fn(x) <= limit (fn increasing); 0 if none; hi_cap
    when even that fits (the caller reports it as a lower bound)."""
    if fn(1) > limit:
        return 0
    lo, hi = 1, 2
    while hi < hi_cap and fn(hi) <= limit:
        lo, hi = hi, hi * 2
    if hi >= hi_cap and fn(hi_cap) <= limit:
        return hi_cap
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fn(mid) <= limit else (lo, mid)
    return lo


# ZeRO-Offload's host side per parameter whose optimizer state it holds: the optimizer states with
# the fp32 master copy, and the 16-bit gradients it receives (Ren et al. 2021, "ZeRO-Offload", Fig. 2:
# fp32 parameters, momentum and variance, 16-bit gradients on the CPU).
OFFLOAD_GRAD_BYTES = 2
GPUS_PER_HOST = 8  # one host per 8 GPUs (DGX/HGX); fewer when the job has fewer


def offload_host_memory(spec, c, b):
    """Host memory the offloaded optimizer needs: per GPU, and per host of GPUS_PER_HOST GPUs."""
    per_param = c["host_opt_bytes"] + OFFLOAD_GRAD_BYTES
    on_gpu = training_memory(spec, c.replace(opt_bytes=c["host_opt_bytes"]), b)[0]
    on_gpu = on_gpu["optimizer_bytes"]
    per_gpu = on_gpu / c["host_opt_bytes"] * per_param if c["host_opt_bytes"] else 0.0
    host_gpus = min(GPUS_PER_HOST, c["num_gpus"])
    return {"host_bytes_per_gpu": per_gpu, "gpus_per_host": host_gpus, "host_bytes_per_host": per_gpu * host_gpus,
            "bytes_per_param": per_param}


def layout_host_memory(spec, lay, c0, *, layers_bytes=0.0):
    """Host memory a training layout needs per GPU and per host (GPUS_PER_HOST GPUs, fewer in a
    smaller job): the offloaded optimizer's states and 16-bit gradients (offload_host_memory,
    calc_transformer_mem.py's rule) plus `layers_bytes` of offloaded weights and activations;
    None when nothing is offloaded."""
    opt = 0.0
    if lay["offload"]:
        c = memory_config(spec, lay.replace(offload=False), c0)
        c = c.replace(host_opt_bytes=c["opt_bytes"], num_gpus=lay["num_gpus"])
        opt = offload_host_memory(spec, c, lay["micro_batch_size"])["host_bytes_per_gpu"]
    if not opt and not layers_bytes:
        return None
    per_host = min(GPUS_PER_HOST, lay["num_gpus"])
    return {"optimizer_bytes_per_gpu": opt, "layers_bytes_per_gpu": layers_bytes,
            "bytes_per_gpu": opt + layers_bytes, "gpus_per_host": per_host,
            "bytes_per_host": (opt + layers_bytes) * per_host}


def with_dp(c, dp):
    """The configuration with dp data-parallel ranks (the other parallel sizes kept)."""
    return c.replace(dp=dp, num_gpus=dp * c["cp"] * c["tp"] * c["pp"],
                     **zero_shards(dp=dp, **{k: c[k] for k in ("cp", "tp", "pp", "etp", "ep")}))


def training_ways_out(spec, c, b):
    """When the micro-batch does not fit: the changes that help, each costed by the same memory
    model (ZeRO-3, full recompute, offload, and the three together), and the fewest GPUs (more
    data-parallel ranks under ZeRO-3 and full recompute, micro-batch b) that fit."""
    lim = c["memory_bytes"]
    out = []

    def add(flags, cc, why):
        total = training_memory(spec, cc, b)[0]["total_bytes"]
        out.append({"flags": flags, "why": why, "total_bytes": total, "fits": total <= lim})
    most, flags = c.copy(), []
    if c["zero_stage"] < 3 and c["zero_shard"] > 1:
        add("-z 3", c.replace(zero_stage=3),
            f"weights, gradients and optimizer states over dp*cp = {c['zero_shard']}")
        most["zero_stage"] = 3
        flags.append("-z 3")
    if c["recompute"] != "full" or (c.get("recompute_every") or 1) > 1:
        add("--recompute full", c.replace(recompute="full", recompute_every=1),
            "keep only each layer's input")
        most.update(recompute="full", recompute_every=1)
        flags.append("--recompute full")
    if not c["offload"] and c["opt_bytes"]:
        off = c.replace(offload=True, host_opt_bytes=c["opt_bytes"], opt_bytes=0)
        add("--offload", off, "optimizer states on the host: "
            f"{offload_host_memory(spec, off, b)['host_bytes_per_host'] / 1e9:,.0f} GB of host memory per host")
        most.update(offload=True, host_opt_bytes=c["opt_bytes"], opt_bytes=0)
        flags.append("--offload")
    if len(flags) > 1:
        add(" ".join(flags), most, "all of these together")
    fewest = None
    scaled = c.replace(zero_stage=3, recompute="full", recompute_every=1)
    dp = c["dp"]  # these GPUs first: ZeRO-3 and full recompute may be enough without offload
    while dp < 1 << 20:
        cc = with_dp(scaled, dp)
        if training_memory(spec, cc, b)[0]["total_bytes"] <= lim:
            fewest = cc["num_gpus"]
            if dp > c["dp"]:
                add(f"--num-gpus {fewest} -z 3 --recompute full", cc,
                    f"the fewest GPUs that fit (dp {dp}, tp {c['tp']}, pp {c['pp']}), no offload")
            elif flags[:2] != ["-z 3", "--recompute full"] or "--offload" in flags:
                add("-z 3 --recompute full", cc, "these GPUs, no offload")
            break
        dp *= 2
    return {"changes": out, "fewest_gpus": fewest}
