"""KV-cache offload to host memory (vLLM's CPU offloading and LMCache, SGLang's HiCache, Dynamo's
KVBM): cached prefixes the GPU pool evicts move to a host tier and come back over the host link
on a hit, instead of being computed again. The link is the GPU's own in hardware.py's table
(host_link_bandwidth_bytes_per_s: PCIe 3.0/4.0/5.0 x16, or NVLink-C2C on Grace superchips, per
direction), the one field training's ZeRO-Offload copies read too; KV_RELOAD_EFFICIENCY of its line
rate is reached."""

# Share of the host link's line rate a KV reload reaches: LMCache's own log of one (LMCache PR
# #1740, its CPU-offload example on vLLM V1 with Qwen3-8B: "Retrieved 10010 ... tokens ... size:
# 1.3747 gb, cost 33.4281 ms, throughput: 41.1230 GB/s"; 10,010 tokens x 147,456 bytes (36 layers x
# 8 KV heads x 128 x 2 x 2 bytes) is 1.3747 GiB, so its units are GiB: 44.2e9 bytes/s). More than
# PCIe 4.0's 31.5 GB/s, so a PCIe 5.0 x16 host: 44.2 / 63.0 = 0.70 (its store of 3,866 tokens in
# the same log: 0.76). The GPU is not named there. Judged on the LMCache docs' 7.43x example
# (VALIDATION.md, KV offload). --host-kv-bandwidth-gbps sets the reached rate instead.
KV_RELOAD_EFFICIENCY = 0.70


def host_link_bytes_per_s(gpu):
    """The reached host-to-GPU bandwidth (bytes/s) of an accelerator record: its host link line
    rate x KV_RELOAD_EFFICIENCY; None when the record lists no host link."""
    line = gpu.get("host_link_bandwidth_bytes_per_s")
    return line * KV_RELOAD_EFFICIENCY if line else None


def load_vs_recompute(*, kv_bytes_per_token, host_bytes_per_s, prefill_s_per_token):
    """Seconds to bring one cached token back from the host against seconds to compute it again
    in a prefill: the offload pays when the first is the smaller."""
    load = kv_bytes_per_token / host_bytes_per_s
    return {"load_s_per_token": load, "recompute_s_per_token": prefill_s_per_token,
            "pays": load < prefill_s_per_token}
