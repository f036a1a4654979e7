"""The serving request a run answers: its layout, bits, load, request mix and targets, as the tool
resolves them from its flags (defaults filled, a mix's means standing for s and o). Built once by
the tool (tools/latency.py), read by engine.py, search.py and capacity.py, which never see the
command line itself."""

from ..records import Record


class ServingRequest(Record):
    """One serving run's inputs, resolved. None: not given (the meaning says what stands). The
    tool resolves it field by field (`req.x = v` writes the field, as on every Record)."""

    __slots__ = ()

    FLAGS = {  # the fields the tool copies from its flags before resolving them
        "prompt_tokens": "s prompt tokens per request (a mix: its mean, rounded)",
        "output_tokens": "o output tokens per request (a mix: its mean, rounded)",
        "batch_size": "b sequences of a static batch (1 when not given)",
        "tensor_parallel_size": "tp", "pipeline_parallel_size": "pp",
        "data_parallel_size": "dp attention groups", "expert_parallel_size": "ep",
        "weight_bits": "bits of a weight value (resolved from --precision or 16)",
        "activation_bits": "matmul input bits, the compute precision (resolved)",
        "kv_cache_bits": "KV-cache bits (resolved: --precision's, else max(activation bits, 8))",
        "state_bits": "bits of a linear-attention layer's recurrent state",
        "concurrency": "C requests in flight (closed loop); None",
        "request_rate": "requests/s arriving (open loop; inf: all at once); None",
        "num_requests": "requests of a simulated benchmark run; None: the steady state",
        "arrivals": "poisson or uniform arrivals at a rate", "seed": "seed of the drawn arrivals",
        "refuse_past_pool": "exit 2 when a concurrency does not fit the KV pool",
        "dataset": "random or sharegpt lengths; None", "trace": "a trace file's path; None",
        "random_input_len": "--dataset random's mean prompt",
        "random_output_len": "--dataset random's mean output",
        "random_range_ratio": "--dataset random's spread r, lengths within len (1 +- r)",
        "prefix_tokens": "a shared, cached prompt prefix's tokens; None",
        "prefix_hit_rate": "share of requests that find the shared prefix; None",
        "num_scheduler_steps": "vLLM's multi-step scheduling window; None: 1",
        "host_kv_cache_gib": "a host KV tier per GPU, GiB; None: none",
        "host_kv_bandwidth_gbps": "the host tier's reached link, GB/s; None: the GPU record's",
        "num_gpus": "--search's GPU budget", "max_ttft_ms": "TTFT target, ms; None",
        "max_tpot_ms": "TPOT target, ms; None", "max_replica_gpus": "--search's largest replica",
        "disaggregated": "--search also tries prefill and decode pools",
        "slo_percentile": "a capacity plan's percentile (50, 90, 99)",
    }
    FIELDS = dict(FLAGS, **{
        "bits_given": "whether any bits flag (or --precision) was given",
        "weight_store_bits": "bits per stored weight, scales in (NVFP4: 4.5)",
        "batch_size_given": "whether -b was given",
        "lengths_given": "(whether -s was given, whether -o was given)",
        "trace_rows": "the rows the --trace file holds; None without one",
        "requests": "the mix's requests (arrival_s, s, o, prefix key, prefix tokens); None: alike",
        "capacity": "whether this run is a capacity plan",
        "capacity_gpus": "the plan's GPU kinds, as given", "capacity_prices": "$ per GPU-hour each",
        "speculative": "the speculative-decoding setup ({k, method, acceptance_rates, ...}); None",
    })

    @classmethod
    def from_flags(cls, flags):
        """The request as the flags give it (the parsed flags, or any object with them)."""
        return cls({k: getattr(flags, k) for k in cls.FLAGS})
