#!/usr/bin/env python3
"""Run calc_inference_latency.py over the published serving measurements in
validation/published_serving.csv (one metric per line, each with its source) and write every
comparison to validation/serving_rows.csv; print the share within 20% and the median error per
group. Each row runs with its own stack's preset and the setup its source states, nothing tuned
per row; none of these rows set a constant (the presets' sources are in SERVING_STACKS and
VALIDATION.md) except the later perf-overview's MoE rows, which set tensorrt-llm-pytorch's MoE
factor (tools/fit_trtllm_moe_factor.py) and are listed as calibration, not judged.

Groups: TensorRT-LLM v0.14 online serving at a request rate or all at once (TTFT, ITL, output
throughput; its 500 requests per run simulated, --num-requests);
TensorRT-LLM v0.5/0.6.1 static batches (throughput per GPU, first-token latency) and its blogs'
static batches (H100 vs A100, H200 launch, Falcon-180B on H200), the v0.5/0.6 ones with the
tensorrt-llm-mmha preset (before the XQA kernel); TensorRT-LLM v0.17 and v1.0
offline maximum-load throughput (all requests queued at once: a run of the request count the
source states, simulated, or else the steady state of a full engine) and the later perf-overview's
per-GPU rows with the layouts its headers state; vLLM CI latency (batch 8);
NIM 1.0 at a concurrency (fixed lengths, its clients started together: simulated, the figures
after the first wave).
Every other row is listed as not run, with the reason: its model has no config or flags here, or
no branch below models its setup (ShareGPT length distributions; v0.14's 202/214 rows, whose
lengths are the means of a mix the source does not describe: mixed_lengths_v014).

Usage: python3 tools/validate_serving.py [-v] [--out FILE.csv] [--every N]
(--every N: every N-th published row only, what the test suite runs; the full table takes about a
minute, most of it the --num-requests simulations.)
"""
import contextlib
import csv
import io
import math
import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import calc_inference_latency as cil  # noqa: E402

CFG = os.path.join(ROOT, "tests", "fixtures", "configs")
LLAMA = ["--swiglu", "--norm", "rmsnorm", "--position-embedding", "rope"]
L70 = ["-l", "80", "-hs", "8192", "-a", "64", "--num-kv-heads", "8", "--ffn-hidden-size", "28672"] + LLAMA
L405 = ["-l", "126", "-hs", "16384", "-a", "128", "--num-kv-heads", "8", "--ffn-hidden-size", "53248",
        "-v", "128256"] + LLAMA
MIXTRAL_8X22B = ["-l", "56", "-hs", "6144", "-a", "48", "--num-kv-heads", "8", "--ffn-hidden-size", "16384",
                 "-v", "32768", "--num-experts", "8", "--topk", "2"] + LLAMA


def cfg(name):
    return ["--hf_model_name_or_path", os.path.join(CFG, name + ".json")]


# model name as the sources spell it -> flags (Llama 3.x 70B/405B and Mixtral 8x22B from their
# published shapes; the rest from the fixture configs, tests/fixtures/configs/SOURCES.md)
MODELS = {
    "LLaMA 3.1 70B": L70 + ["-v", "128256"], "llama-3 70B": L70 + ["-v", "128256"],
    "Llama-3.3-70B-Instruct": L70 + ["-v", "128256"], "LLaMA v3.1 70B": L70 + ["-v", "128256"],
    "Llama 3.3 70B": L70 + ["-v", "128256"], "LLaMA 70B": L70 + ["-v", "32000"],
    "LLaMA v3.1 405B": L405, "Llama 3.1 405B": L405,
    "LLaMA 3.1 8B": cfg("llama-3.1-8b"), "llama-3.1 8B": cfg("llama-3.1-8b"), "LLaMA v3.1 8B": cfg("llama-3.1-8b"),
    "Llama 3.1 8B": cfg("llama-3.1-8b"), "LLaMA 7B": cfg("llama-2-7b"), "Mistral 7B": cfg("mistral-7b"),
    "mixtral 8x7B": cfg("mixtral-8x7b"), "Mixtral 8x7B": cfg("mixtral-8x7b"), "Mixtral 8x22B": MIXTRAL_8X22B,
    "Qwen3-30B-A3B": cfg("qwen3-30b-a3b"), "Qwen3-235B-A22B": cfg("qwen3-235b-a22b"),
    "Qwen3 30B A3B": cfg("qwen3-30b-a3b"), "Qwen3 235B A22B": cfg("qwen3-235b-a22b"),
    "LLaMA v4 Maverick": cfg("llama-4-maverick-17b-128e-text"), "LLaMA v3.3 70B": L70 + ["-v", "128256"],
    "GPT-OSS 20B": cfg("gpt-oss-20b"), "GPT-OSS 120B": cfg("gpt-oss-120b"),
    "Deepseek R1 0528": cfg("deepseek-v3"),  # R1 is DeepSeek-V3's architecture (its config.json)
    "Llama 4 Scout": cfg("llama-4-scout-17b-16e-text"), "Llama 4 Maverick": cfg("llama-4-maverick-17b-128e-text"),
    "llama_70b": L70 + ["-v", "32000"], "Llama2-70B": L70 + ["-v", "32000"],
    "Llama 3.1 8B Instruct": cfg("llama-3.1-8b"), "Llama 3.1 70B Instruct": L70 + ["-v", "128256"],
    "llama-3 8B": cfg("llama-3-8b"), "Llama 3 8B": cfg("llama-3-8b"),
    "llama_13b": ["-l", "40", "-hs", "5120", "-a", "40", "--ffn-hidden-size", "13824", "-v", "32000"] + LLAMA,
    "GPT-J 6B": ["-l", "28", "-hs", "4096", "-a", "16", "-v", "50400", "--parallel-attention", "--bias"],
    "Falcon 180B": ["-l", "80", "-hs", "14848", "-a", "232", "--num-kv-heads", "8", "-v", "65024",
                    "--parallel-attention"],
}
# DBRX (databricks/dbrx-instruct config.json: d_model 6144, 48 heads, 8 kv heads, 40 layers, vocab
# 100352, 16 experts of 10752 top-4, LayerNorm without biases, RoPE, untied head)
MODELS["DBRX"] = ["-l", "40", "-hs", "6144", "-a", "48", "--num-kv-heads", "8",
                  "--ffn-hidden-size", "10752", "-v", "100352", "--num-experts", "16", "--topk", "4",
                  "--swiglu", "--norm", "layernorm", "--no-bias", "--position-embedding", "rope"]
# FasterTransformer's GPT shapes (docs/gpt_guide.md: head_num x size_per_head, num_layers, vocab
# 51200): Megatron GPT, LayerNorm, biases, GELU 4h MLP, learned positions (2048), tied embeddings
FT_GPT = ["-v", "51200", "--position-embedding", "learned", "--max-position-embeddings", "2048",
          "--tied-embeddings"]
MODELS.update({
    "FT GPT-175B": ["-l", "96", "-hs", "12288", "-a", "96"] + FT_GPT,
    "FT GPT-89B": ["-l", "48", "-hs", "12288", "-a", "96"] + FT_GPT,
    "FT GPT-20B": ["-l", "44", "-hs", "6144", "-a", "48"] + FT_GPT,
    "FT GPT-6.7B": ["-l", "32", "-hs", "4096", "-a", "32"] + FT_GPT,
    "FT GPT-1.3B": ["-l", "24", "-hs", "2048", "-a", "32"] + FT_GPT,
    "FT GPT-350M": ["-l", "24", "-hs", "1024", "-a", "16"] + FT_GPT,
})
# GPU as the sources spell it (longest prefix first) -> hardware.py name
GPUS = [("8xH100", "h100"), ("GH200", "gh200-480gb"), ("GB200", "gb200"), ("H200", "h200"), ("H100", "h100"),
        ("A100", "a100-80gb"), ("L40S", "l40s"), ("B200", "b200"), ("MI300X", "mi300x")]
PRECISION = {"FP8": ["--precision", "fp8"], "FP16": ["--precision", "fp16"], "FP4": ["--precision", "fp4"]}


def trtllm_bench_engine(kv_max_requests, *, n_pp, isl, osl):
    """(max_batch_size, max_num_tokens) that `trtllm-bench build --dataset` picks for a dataset of
    isl/osl requests (tensorrt_llm/bench/build/tuning.py, finetune_setting: the requests the KV
    cache holds, capped at 4096 and split over pipeline stages, rounded up to 32/128/256; tokens
    batch x (1 + isl / osl), capped at 32768, rounded up to 256/512/1024, at least 2048). The
    published max-load tables were built this way (perf-overview.md, "Engine Building"); the KV
    requests here are ours (pool at 0.95, the docs' fraction)."""
    raw_bs = min(kv_max_requests, 4096) / n_pp
    raw_tok = min(raw_bs * (1 + isl / osl), 32768)
    if raw_bs < 256:
        bs = max(64, 32 * math.ceil(raw_bs / 32))
    elif raw_bs < 1024:
        bs = 128 * math.ceil(raw_bs / 128)
    else:
        bs = 256 * math.ceil(raw_bs / 256)
    if raw_tok < 4096:
        tok = max(2048, 256 * math.ceil(raw_tok / 256))
    elif raw_tok < 8192:
        tok = 512 * math.ceil(raw_tok / 512)
    else:
        tok = 1024 * math.ceil(raw_tok / 1024)
    return bs, tok


def bench_load(r0):
    """The load of a trtllm-bench maximum-load row: where the source states the dataset's request
    count, a run of that many requests all queued at once, simulated (--num-requests: trtllm-bench's
    throughput is over the run, its ramp-up and drain included); where it does not (the later
    perf-overview's 1000/1000 rows), the steady state of a full engine (every request queued)."""
    count = re.search(r"num_requests[= ](\d+)", r0["notes"])
    return (["--request-rate", "inf", "--num-requests", count.group(1)] if count
            else ["-c", "1000000", "--queue-past-pool"])


# the rows that set fastertransformer's host time per step (stacks.py FT_STEP_OVERHEAD_MS: GPT-350M
# TP 1, batch 1, 512/32 less 128/8 over the 24 more steps), its all-reduce cost (FT_ALLREDUCE_US:
# GPT-20B TP 8, batch 1, 60/20 less 20/8 over the 12 more decode steps) and
# fastertransformer-triton's time per request (FT_TRITON_REQUEST_MS: GPT-89B TP 8, batch 1, 128/8
# less the rest of ours); tools/fit_ft_constants.py derives the three
FT_CALIBRATION = {"FTGPT-350M-tp1-b1-128-8": "calibration: FasterTransformer GPT-350M TP 1 b 1",
                  "FTGPT-350M-tp1-b1-512-32": "calibration: FasterTransformer GPT-350M TP 1 b 1",
                  "FTGPT-20B-tp8-b1-60-20": "calibration: FasterTransformer GPT-20B TP 8 b 1",
                  "FTGPT-20B-tp8-b1-20-8": "calibration: FasterTransformer GPT-20B TP 8 b 1",
                  "FTGPT-89B-tp8-b1-128-8": "calibration: FasterTransformer GPT-89B b 1 128/8"}
# the rows that set tensorrt-llm-pytorch's MoE factor (tools/fit_trtllm_moe_factor.py): listed, not judged
CALIBRATION = "calibration: TensorRT-LLM later doc MoE"
# vLLM's MoE rows at small batch (its pull requests' benchmark outputs; issue 44)
MOE_SMALL = "vLLM MoE, small batch (PRs)"
# the rows that set tensorrt-llm-triton's per-request cost (stacks.py): listed, not judged
TRITON_CALIBRATION = "calibration: TensorRT-LLM v0.14 H100 QPS 2 TTFT"


# v0.14's 202/214 rows: the table's own figures are not those of 500 equal requests (below)
V014_MIX = ("lengths 202/214 are the means of an unstated mix: at QPS INF the table's mean TTFT + "
            "213 x mean ITL is 0.47-0.51 of the run (500 requests / its req/s) on each model and "
            "GPU, where its equal-length rows (467/256, 467/16), sent at once and ending together, "
            "give 0.98-0.99")


def mixed_lengths_v014(r0):
    """A v0.14 online row whose stated lengths are means of a mix, not every request's: the 202/214
    rows. Sent all at once, requests of equal lengths run together and end together, so mean TTFT
    + (o - 1) x mean ITL is the run's duration (the table's 467/256 and 467/16 rows at QPS INF:
    within 1-3%); the 202/214 rows give half of it on every model and GPU, as a spread of output
    lengths does (the short ones end early, the longest set the run). The spread is not stated,
    so these rows are listed, not run; their QPS 2 H100 TTFTs stay in the calibration set (a
    request mostly alone: its prefill at ~200 tokens barely moves with its length)."""
    lengths = (r0["input_len"], r0["output_len"])
    return r0["row_id"].startswith("TRT014ON-") and lengths == ("202", "214")


def nccl_ring(gpu):
    """Flags for a vLLM build whose custom all-reduce was off by default (vllm#2808, 2024-02-07, to
    vllm#4040, 2024-04-12; before vllm#2192, late January 2024, it had none): the tensor-parallel
    all-reduce is NCCL's ring over the GPU's NVLink (giving the link's per-direction rate turns the
    stack's custom kernel off: NVLink 4 on H100 450 GB/s, NVLink 3 on A100 300 GB/s)."""
    return ["--tp-bandwidth-gbps", {"h100": "450", "a100-80gb": "300"}[gpu]]


def is_moe(model):
    """A later perf-overview model with routed experts (its one dense model: LLaMA v3.3 70B)."""
    return not model.startswith("LLaMA v3")


def gpu_of(text):
    return next((v for k, v in GPUS if text.startswith(k)), None)


def run(argv):
    """(result dict or None, the one-line error when it exits 2)."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            return cil.main(argv + ["--json"]), None
        except SystemExit:
            lines = err.getvalue().strip().splitlines()
            return None, (lines[-1].split("error: ", 1)[-1] if lines else "exit 2")


def comparisons(rows):
    """Yield (group, row, metric, published, ours or None, note) for every row we can set up."""
    by_id = {}
    for r in rows:
        by_id.setdefault(r["row_id"], []).append(r)
    for rid, rs in by_id.items():
        done = False
        for item in _compare(rs):
            done = True
            yield item
        if not done:  # no branch below models this source's setup: listed, with what it was
            r0 = rs[0]
            why = (f"setup not modelled here: {r0['stack']}, lengths {r0['input_len']}/{r0['output_len']}, "
                   f"rate {r0['request_rate']}, batch {r0['batch_or_concurrency']}")
            for r in rs:
                yield "not run", r, r["metric"], r["value"], None, why


def _compare(rs):
    """The comparisons of one published row (its metric lines rs); nothing when its setup is not
    modelled here."""
    r0 = rs[0]
    src, model, gpu = r0["source"], r0["model"], gpu_of(r0["gpu"])
    if model not in MODELS or gpu is None:
        for r in rs:
            yield "not run", r, r["metric"], r["value"], None, f"no flags here for {model!r} on {r0['gpu']!r}"
        return
    prec = PRECISION.get(r0["weight_precision"].upper()[:4], [])
    base = MODELS[model] + ["--gpu", gpu] + prec
    if model == "Mistral 7B" and "TensorRT-LLM" in r0["stack"]:
        # TensorRT-LLM attends to the whole context unless --max_attention_window_size is set
        # at run time (examples/llama/README.md, "Mistral v0.1"); the perf-overview commands
        # set none, and its Mistral 7B and Llama-3.1-8B rows at 20000/2000 agree within 2%,
        # which a 4096-token window (a 5x smaller cache) would not allow
        base += ["--sliding-window", "0"]
    tp = r0["tp"] if r0["tp"].isdigit() else "1"
    if r0["row_id"].startswith("ORCL405-"):
        # Oracle's Llama 3.1 405B FP8 on 8 MI300X with 2024 ROCm vLLM: benchmark_latency.py (a
        # static batch, end to end) and benchmark_throughput.py (every request queued; its default
        # 1,000 prompts; vLLM 0.6's default max_num_seqs of 256, where today's preset has 1,024)
        if r0["batching"] == "static":
            res, err = run(base + ["-tp", tp, "--serving-stack", "vllm", "-s", r0["input_len"],
                                   "-o", r0["output_len"], "-b", r0["batch_or_concurrency"]])
            yield ("vLLM on MI300X (Oracle, 2024)", r0, "end-to-end", float(r0["value"]),
                   res["total_s"] if res else None, err)
        else:
            res, err = run(base + ["-tp", tp, "--serving-stack", "vllm", "-s", r0["input_len"],
                                   "-o", r0["output_len"], "--request-rate", "inf",
                                   "--num-requests", "1000", "--max-num-seqs", "256"])
            yield ("vLLM on MI300X (Oracle, 2024)", r0, "output tokens/s", float(r0["value"]),
                   res["serving"]["output_tokens_per_s"] if res else None, err)
    elif r0["row_id"].startswith("FTGPT-"):
        # FasterTransformer's GPT tables (docs/gpt_guide.md): a static batch of B requests of s
        # prompt and o output tokens end to end; the large-model tables (GPT-89B, GPT-175B) through
        # Triton as the section states, the rest FT's own runtime
        stack = ("fastertransformer-triton" if r0["stack"].endswith("on Triton")
                 else "fastertransformer")
        res, err = run(base + ["-tp", tp, "--serving-stack", stack, "-s", r0["input_len"],
                               "-o", r0["output_len"], "-b", r0["batch_or_concurrency"]])
        yield (FT_CALIBRATION.get(r0["row_id"], "FasterTransformer GPT tables (static)"), r0,
               "end-to-end", float(r0["value"]) * 1e-3, res["total_s"] if res else None, err)
    elif r0["row_id"].startswith("VLLMMOE-"):
        # vLLM's MoE decode at small batch (issue 44), from its own pull requests: benchmark_latency
        # (a static batch of B, its default 32/128, end to end) and benchmark_serving at a fixed
        # concurrency (random fixed lengths, every request counted: simulated with the stated count)
        if r0["batching"] == "static":  # 2024 builds: vLLM's custom all-reduce off (NCCL's ring)
            res, err = run(base + ["-tp", tp, "--serving-stack", "vllm", "-s", r0["input_len"],
                                   "-o", r0["output_len"], "-b", r0["batch_or_concurrency"]]
                           + nccl_ring(gpu))
            yield (MOE_SMALL, r0, "end-to-end", float(r0["value"]) * 1e-3,
                   res["total_s"] if res else None, err)
            return
        res, err = run(base + ["-tp", tp, "--serving-stack", "vllm", "-s", r0["input_len"],
                               "-o", r0["output_len"], "-c", r0["batch_or_concurrency"],
                               "--num-requests", re.search(r"--num-prompt (\d+)", r0["notes"]).group(1)])
        keys = {("TTFT", "mean"): "ttft_s", ("TTFT", "median"): "ttft_median_s",
                ("TPOT", "mean"): "tpot_s", ("TPOT", "median"): "tpot_median_s"}
        for r in rs:
            k = keys.get((r["metric"], r["stat"]))
            if k:
                yield (MOE_SMALL, r, f"{r['metric']} {r['stat']}", float(r["value"]) * 1e-3,
                       res["serving"][k] if res else None, err)
            elif r["metric"] == "output_throughput":
                yield (MOE_SMALL, r, r["metric"], float(r["value"]),
                       res["serving"]["output_tokens_per_s"] if res else None, err)
    elif "v0.14" in src:
        # "500 requests" per run (the section's text); QPS INF sends them all at once. The
        # benchmark is simulated step by step (--num-requests): its throughput is over the run's
        # duration, ramp-up and drain included, and past what the engine sustains requests queue
        # served through Triton's tensorrtllm_backend: the tensorrt-llm-triton preset, whose
        # per-request cost the H100 TTFT rows at QPS 2 set (listed as calibration, not judged)
        res, err = run(base + ["-tp", tp, "--serving-stack", "tensorrt-llm-triton", "-s", r0["input_len"],
                               "-o", r0["output_len"], "--request-rate", r0["request_rate"],
                               "--num-requests", "500"])
        keys = {"TTFT": ("ttft_s", 1e-3), "ITL": ("tpot_s", 1e-3), "output_throughput": ("output_tokens_per_s", 1)}
        for r in rs:
            if r["metric"] in keys:
                k, unit = keys[r["metric"]]
                sets = r["metric"] == "TTFT" and r0["request_rate"] == "2" and r0["gpu"].startswith("H100")
                if not sets and mixed_lengths_v014(r0):
                    yield "not run", r, r["metric"], r["value"], None, V014_MIX
                    continue
                yield (TRITON_CALIBRATION if sets else "TensorRT-LLM v0.14 online", r, r["metric"],
                       float(r["value"]) * unit,
                       res["serving"][k] if res else None, err)
    elif "performance.md @77d24" in src:
        # v0.5/0.6.1: before the XQA kernel (v0.8), the masked MHA decode kernel (tensorrt-llm-mmha)
        res, err = run(base + ["-tp", tp, "--serving-stack", "tensorrt-llm-mmha", "-s", r0["input_len"],
                               "-o", r0["output_len"].split()[0], "-b", r0["batch_or_concurrency"]])
        r = rs[0]
        if r["metric"] == "first_token_latency":
            yield "TensorRT-LLM v0.5/0.6.1 static", r, "first token", float(r["value"]) * 1e-3, \
                res["ttft_s"] if res else None, err
        else:
            yield "TensorRT-LLM v0.5/0.6.1 static", r, "tokens/s per GPU", float(r["value"]), \
                res["output_tokens_per_s_per_gpu"] if res else None, err
    elif r0["row_id"].startswith("TRTBLOG-") and r0["batching"] == "static":
        # the TensorRT-LLM blogs' static batches (H100 vs A100, H200 launch, Falcon-180B on H200):
        # a batch of B requests of s prompt and o output tokens, run together to the end
        if not r0["tp"].isdigit():
            for r in rs:
                yield "not run", r, r["metric"], r["value"], None, f"layout not given ({r0['tp']})"
            return
        o = r0["output_len"] if r0["output_len"].isdigit() else "1"
        # the v0.5.0 blogs ran before the XQA kernel (v0.8; the v0.7a Falcon-180B blog's Llama
        # 128/2048 figure is the XQA blog's "with XQA" one): the masked MHA decode kernel
        stack = "tensorrt-llm-mmha" if r0["stack_version"].startswith("0.5") else "tensorrt-llm"
        res, err = run(base + ["-tp", tp, "--serving-stack", stack, "-s", r0["input_len"], "-o", o,
                               "-b", r0["batch_or_concurrency"]])
        for r in rs:
            if r["metric"] == "first_token_latency":
                yield "TensorRT-LLM blogs static", r, "first token", float(r["value"]) * 1e-3, \
                    res["ttft_s"] if res else None, err
            elif not r0["output_len"].isdigit():  # a batch-1 generation rate over an unstated length
                yield "not run", r, r["metric"], r["value"], None, "output length not given"
            else:
                key = "output_tokens_per_s_per_gpu" if r["metric"].endswith("per_gpu") else "output_tokens_per_s"
                yield "TensorRT-LLM blogs static", r, r["metric"], float(r["value"]), res[key] if res else None, err
    elif r0["row_id"].startswith(("TRT017", "TRT10-")):
        # offline maximum load: every request queued, so the engine runs as many as its build
        # allows; the docs' KV fraction 0.95; v1.0's MoE runs use attention DP and EP over all GPUs
        n = int(tp)
        moe_dp = r0["row_id"].startswith("TRT10-") and model.startswith(("Qwen3", "Mixtral", "Llama 4")) and n > 1
        lay = ["-tp", "1", "-dp", str(n), "-ep", str(n)] if moe_dp else ["-tp", str(n)]
        stack = "tensorrt-llm-pytorch" if r0["row_id"].startswith("TRT10-") else "tensorrt-llm"  # 0.19+: PyTorch
        setup = base + lay + ["--serving-stack", stack, "--gpu-memory-utilization", "0.95",
                              "-s", r0["input_len"], "-o", r0["output_len"]]
        res, err = run(setup + ["-c", "1000000", "--queue-past-pool"])
        if res:  # the engine trtllm-bench builds for this dataset: its batch and token limits
            # (max_batch_size is each executor's; with attention DP each rank schedules its own: assumed)
            bs, tokens = trtllm_bench_engine(res["serving"]["kv_pool_max_concurrency"], n_pp=1,
                                             isl=int(r0["input_len"]), osl=int(r0["output_len"]))
            res, err = run(setup + bench_load(r0) + ["--max-num-seqs", str(bs), "--max-num-batched-tokens",
                                                     str(tokens)])
        group = "TensorRT-LLM v0.17 max load" if r0["row_id"].startswith("TRT017") else "TensorRT-LLM v1.0 max load"
        yield group, r0, "output tokens/s", float(r0["value"]), res["serving"]["output_tokens_per_s"] if res else None, err
    elif r0["row_id"].startswith("TRTDEV-"):
        # the later perf-overview: its header names each layout (TPn, or DEPn = attention data
        # parallel n with the experts spread over the same n GPUs); per-GPU output throughput at
        # offline maximum load, engine limits as trtllm-bench picks them (as for v1.0 above)
        n = int(r0["num_gpus"])
        dep = r0["ep"].isdigit() and r0["tp"] == "1" and n > 1
        lay = ["-tp", "1", "-dp", str(n), "-ep", str(n)] if dep else ["-tp", str(n)]
        if model.startswith("GPT-OSS"):  # the MXFP4 checkpoint as stored; the yaml's KV cache: fp8
            # on Blackwell, "auto" (the model's bf16) on Hopper
            base = MODELS[model] + ["--gpu", gpu] + (["--kv-cache-bits", "8"] if gpu in ("b200", "gb200") else [])
        setup = base + lay + ["--serving-stack", "tensorrt-llm-pytorch", "--gpu-memory-utilization", "0.95",
                              "-s", r0["input_len"], "-o", r0["output_len"]]
        res, err = run(setup + ["-c", "1000000", "--queue-past-pool"])
        if res:
            bs, tokens = trtllm_bench_engine(res["serving"]["kv_pool_max_concurrency"], n_pp=1,
                                             isl=int(r0["input_len"]), osl=int(r0["output_len"]))
            res, err = run(setup + bench_load(r0) + ["--max-num-seqs", str(bs), "--max-num-batched-tokens",
                                                     str(tokens)])
        yield (CALIBRATION if is_moe(model) else "TensorRT-LLM later doc max load", r0, "tokens/s per GPU",
               float(r0["value"]), res["serving"]["output_tokens_per_s_per_gpu"] if res else None, err)
    elif "nim" in src:
        # the benchmark's C clients send fixed-length requests, all starting together, so the engine
        # runs them in waves (simulated: --num-requests, ten per client); its figures are over the
        # stable load (perf_analyzer and genai-perf measure in windows after a warm-up): the
        # simulation's requests after the first wave, throughput C x o / their end-to-end time
        c = int(r0["batch_or_concurrency"])
        res, err = run(base + ["-tp", tp, "--serving-stack", "tensorrt-llm", "-s", r0["input_len"],
                               "-o", r0["output_len"], "-c", str(c), "--num-requests", str(10 * c)])
        sv = res["serving"] if res else None
        got = {"TTFT": (sv["warm_ttft_s"], 1e-3), "ITL": (sv["warm_tpot_s"], 1e-3),
               "throughput": (c * int(r0["output_len"]) / sv["warm_e2e_s"], 1)} if sv else {}
        for r in rs:
            if r["metric"] in ("TTFT", "ITL", "throughput"):
                ours, unit = got.get(r["metric"], (None, 1e-3 if r["metric"] != "throughput" else 1))
                yield "NIM 1.0", r, r["metric"], float(r["value"]) * unit, ours, err
    elif r0["input_len"].startswith("ShareGPT") and r0["row_id"].startswith(("SGL060", "VLLMBK-SRV", "VLLMBK-THR")):
        # ShareGPT runs: the lengths as the ShareGPT-shaped mix draws them (--dataset sharegpt), the
        # request count and rate the source states (vLLM CI: 200 prompts; SGLang's v0.6 comparison:
        # 1,200 online, 5,000 offline); SGLang's rows with its preset, the rest vLLM's
        count = re.search(r"num prompts (\d+)", r0["notes"]) or re.search(r"\((\d+) prompts\)", r0["input_len"])
        if count is None:  # a ShareGPT row that states no prompt count: nothing to simulate
            for r in rs:
                yield "not run", r, r["metric"], r["value"], None, "prompt count not given"
            return
        stack = "sglang" if r0["stack"] == "SGLang" else "vllm"
        rate = r0["request_rate"] if r0["request_rate"] != "NOT FOUND" else "inf"
        # vLLM 0.6.0 in SGLang's comparison ran --num-scheduler-steps 10 (its README's commands)
        steps = ["--num-scheduler-steps", "10"] if r0["row_id"].startswith("SGL060") and stack == "vllm" else []
        res, err = run(base + ["-tp", tp, "--serving-stack", stack, "--dataset", "sharegpt",
                               "--num-requests", count.group(1), "--request-rate", rate] + steps)
        stat = {"mean": "_s", "median": "_median_s", "p99": "_p99_s"}
        keys = {"TTFT": "ttft", "TPOT": "tpot", "E2E_latency": "e2e"}
        if stack == "sglang":  # SGLang's ITL is its TPOT (no multi-step bursts); vLLM 0.6's ITL is a burst's
            keys["ITL"] = "tpot"
        if r0["row_id"].startswith("VLLMBK-SRV"):
            keys["ITL"] = "tpot"  # vLLM CI's ITL: per-token gaps; mean and median compared with TPOT's
        for r in rs:
            m = r["metric"]
            if m in keys and r["stat"] in stat and not (m == "ITL" and r["stat"] == "p99"):
                yield ("ShareGPT mixes (vLLM CI, SGLang v0.6)", r, f"{m} {r['stat']}", float(r["value"]) * 1e-3,
                       res["serving"][keys[m] + stat[r["stat"]]] if res else None, err)
            elif m in ("request_throughput", "output_throughput"):
                k = "requests_per_s" if m == "request_throughput" else "output_tokens_per_s"
                yield ("ShareGPT mixes (vLLM CI, SGLang v0.6)", r, m, float(r["value"]),
                       res["serving"][k] if res else None, err)
    elif "buildkite" in src and r0["metric"] == "E2E_latency" and "benchmark_latency" in r0["stack"]:
        res, err = run(base + ["-tp", tp, "--serving-stack", "vllm", "-s", r0["input_len"], "-o", r0["output_len"],
                               "-b", r0["batch_or_concurrency"]])
        r = next(x for x in rs if x["stat"] == "mean")
        yield "vLLM CI latency (b 8)", r, "end-to-end", float(r["value"]) * 1e-3, res["total_s"] if res else None, err


def sample_rows(rows, every):
    """Every `every`-th published row id in file order (all of its metric lines): a quick run of
    each code path for the test suite; the full table is the default."""
    ids = list(dict.fromkeys(r["row_id"] for r in rows))
    keep = set(ids[::every])
    return [r for r in rows if r["row_id"] in keep]


def main():
    rows = list(csv.DictReader(open(os.path.join(ROOT, "validation", "published_serving.csv"), encoding="utf-8")))
    if "--every" in sys.argv:
        rows = sample_rows(rows, int(sys.argv[sys.argv.index("--every") + 1]))
    out = []
    for group, r, metric, pub, ours, note in comparisons(rows):
        err = None if ours is None or group == "not run" else ours / float(pub) - 1
        out.append({"group": group, "row_id": r["row_id"], "source": r["source"], "model": r["model"], "gpu": r["gpu"],
                    "metric": metric, "published": pub, "ours": "" if ours is None else f"{ours:.6g}",
                    "error": "" if err is None else f"{err:+.4f}",
                    "used_for_calibration": "yes" if group.startswith("calibration:") else "no",
                    "note": note or ""})
        if "-v" in sys.argv and group != "not run":
            print(f"{group:32} {r['row_id']:16} {metric:18} {float(pub):>12.5g} {out[-1]['ours']:>12} "
                  f"{'' if err is None else f'{err:+.1%}':>8} {note or ''}")
    path = (sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv
            else os.path.join(ROOT, "validation", "serving_rows.csv"))
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(out[0]))
        w.writeheader()
        w.writerows(out)
    print(f"{'group':32}{'rows':>6}{'refused':>9}{'within 20%':>12}{'median |err|':>14}")
    judged = [x for x in out if x["group"] != "not run" and not x["group"].startswith("calibration:")]
    for g in dict.fromkeys(x["group"] for x in out if x["group"] != "not run"):
        items = [x for x in out if x["group"] == g]
        errs = [abs(float(x["error"])) for x in items if x["error"]]
        w20 = sum(e <= 0.2 for e in errs)
        print(f"{g:32}{len(items):>6}{len(items) - len(errs):>9}{w20:>7} ({w20 / len(items):.0%})"
              f"{statistics.median(errs):>13.1%}")
    errs = [abs(float(x["error"])) for x in judged if x["error"]]
    w20 = sum(e <= 0.2 for e in errs)
    print(f"{'all':32}{len(judged):>6}{len(judged) - len(errs):>9}{w20:>7} ({w20 / len(judged):.0%})"
          f"{statistics.median(errs):>13.1%}")
    skipped = [x for x in out if x["group"] == "not run"]
    print(f"not run: {len(skipped)} metric lines (no flags for their model here, or a setup not modelled); "
          f"every comparison is in {path}")


if __name__ == "__main__":
    main()
