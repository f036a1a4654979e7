"""KV-cache offload to host memory (vLLM's CPU offloading and LMCache, SGLang's HiCache, Dynamo's
KVBM): cached prefixes the GPU pool evicts move to a host tier and come back over the host link
on a hit, instead of being computed again. The link, per GPU and direction, by GPU family: PCIe
4.0 or 5.0 x16, or NVLink-C2C on Grace superchips; a share of its line rate is reached."""

# Host link line rate per GPU and direction (GB/s), first matching name prefix wins:
# NVLink-C2C 900 GB/s in both directions on GH200/GB200/GB300 (hardware.py's GH200 notes; NVIDIA's
# Grace Hopper and GB200 pages), so 450 each way; PCIe 5.0 x16 on Hopper and Blackwell HGX boards
# (32 GT/s x 16 lanes x 128/130 / 8 = 63.0 GB/s); PCIe 4.0 x16 on Ampere and Ada (31.5 GB/s, as
# hardware.py's _PCIE4_X16_GB_S).
HOST_LINK_GBPS = (("gh200", 450.0), ("gb200", 450.0), ("gb300", 450.0),
                  ("h100", 63.0), ("h200", 63.0), ("h800", 63.0), ("h20", 63.0), ("b200", 63.0), ("b300", 63.0),
                  ("a100", 31.5), ("a800", 31.5), ("a10", 31.5), ("a40", 31.5), ("l40", 31.5), ("l4", 31.5))
# Share of the line rate a pinned host-to-device copy reaches: assumed (no measurement here; copy
# engines on PCIe commonly reach 80-90% of it). --host-kv-bandwidth-gbps sets the reached rate.
HOST_LINK_EFFICIENCY = 0.8


def host_link_bytes_per_s(gpu_name):
    """The reached host-to-GPU bandwidth (bytes/s) for a hardware.py GPU name, or None when its
    host link is not known here."""
    name = (gpu_name or "").lower()
    for prefix, gbps in HOST_LINK_GBPS:
        if name.startswith(prefix):
            return gbps * 1e9 * HOST_LINK_EFFICIENCY
    return None


def load_vs_recompute(*, kv_bytes_per_token, host_bytes_per_s, prefill_s_per_token):
    """Seconds to bring one cached token back from the host against seconds to compute it again
    in a prefill: the offload pays when the first is the smaller."""
    load = kv_bytes_per_token / host_bytes_per_s
    return {"load_s_per_token": load, "recompute_s_per_token": prefill_s_per_token,
            "pays": load < prefill_s_per_token}
