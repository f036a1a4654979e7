"""KV-cache offload to host memory (vLLM's CPU offloading and LMCache, SGLang's HiCache, Dynamo's
KVBM): cached prefixes the GPU pool evicts move to a host tier and come back over the host link
on a hit, instead of being computed again. The link is the GPU's own in hardware.py's table
(host_link_bandwidth_bytes_per_s: PCIe 3.0/4.0/5.0 x16, or NVLink-C2C on Grace superchips, per
direction), the one field training's ZeRO-Offload copies read too; HOST_LINK_EFFICIENCY of its line
rate is reached."""

from ..accelerator import DEFAULT_ACCELERATOR, HOST_LINK_EFFICIENCY, default_accelerator
from ..cli import load_hardware


def host_link_bytes_per_s(gpu_name):
    """The reached host-to-GPU bandwidth (bytes/s) for a hardware.py GPU name: its table record's
    host link line rate x HOST_LINK_EFFICIENCY; None when the table lists no host link for it
    (or the name is not in the table)."""
    try:
        rec = load_hardware().get_accelerator(gpu_name)
    except (ImportError, KeyError):  # no table beside the script: only the default accelerator is known
        rec = default_accelerator() if gpu_name == DEFAULT_ACCELERATOR else None
    line = (rec or {}).get("host_link_bandwidth_bytes_per_s")
    return line * HOST_LINK_EFFICIENCY if line else None


def load_vs_recompute(*, kv_bytes_per_token, host_bytes_per_s, prefill_s_per_token):
    """Seconds to bring one cached token back from the host against seconds to compute it again
    in a prefill: the offload pays when the first is the smaller."""
    load = kv_bytes_per_token / host_bytes_per_s
    return {"load_s_per_token": load, "recompute_s_per_token": prefill_s_per_token,
            "pays": load < prefill_s_per_token}
