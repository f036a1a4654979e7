#!/usr/bin/env python3
"""Inference latency of a decoder-only transformer from first principles: time to first token
(prefill), time per output token (decode), end-to-end latency and tokens/s per user, per GPU and
in total, for a batch, a prompt and an output length on given hardware and a TP x PP layout.

Model: a roofline per operation. Every matmul, attention step, elementwise pass and the output head
costs max(FLOPs / (peak FLOP/s x compute efficiency), bytes moved / (memory bandwidth x memory
efficiency)) plus a fixed per-kernel overhead, layer by layer; weight matmuls turn the corner
softly, (t_math^p + t_mem^p)^(1/p) with p = ROOFLINE_CORNER_P (fitted to DeepGEMM's measured FP8
GEMMs, tools/fit_roofline_corner.py), so near the ridge they run below both roofs; prefill runs
the prompt in one pass (compute-bound at length), each decode step reads every weight shard and the whole KV cache once.
Tensor parallelism (tp) adds an all-reduce of the activations after each attention and MLP block,
two per ordinary layer (ring, alpha-beta; the same model as calc_comm.py); pipeline parallelism
(pp) runs the stages one after the other for a batch and adds pp-1 point-to-point hand-offs; a
static batch is one batch in flight, continuous batching keeps up to pp micro-batches in flight.

Symbols: b batch (concurrent sequences run as one batch), s prompt tokens, o output tokens, c
tokens cached before a decode step, h hidden, L layers, a query heads, kv key/value heads, d head
dim, f MLP width, V vocab, E routed experts, k experts per token, Z zero-computation experts, w
sliding window, C attention chunk, tp/pp tensor/pipeline parallel sizes.

Conventions and assumptions:
  * The first output token comes out of prefill (TTFT = prefill, plus --request-overhead-ms when
    given: a server's fixed cost per request, 0 by default); the other o-1 tokens take one
    decode step each; step j attends over c = s + j tokens. TPOT is reported for the first and the
    last decode step and as their mean over the o-1 steps (summed exactly).
  * Weights: 2 FLOPs per weight per token (biases counted as weights); weight bytes at
    --weight-bits, except the token embedding and output head, which stay at 16 bits when fewer
    bits are asked for (GPTQ/AWQ/FP8 checkpoints keep them so). Matmul inputs at
    --activation-bits, whose peak sets the matmul rate (a16: bf16, a8: fp8/int8, a4: fp4); the
    residual stream, norms and the attention math stay 16-bit (rate = peak x a/16 below 16 bits).
  * The model is the package's list of layers (llmcalc.model); costs are summed over its distinct layer
    kinds (layer_groups), each with its own attention (MHA/GQA/MQA or MLA; full, sliding or
    chunked span; an optional DSA lightning indexer; two attentions in LongCat-Flash) and MLP
    (dense or MoE, per layer: DeepSeek's leading dense layers stay dense).
  * Attention: causal prefill does the block's query_key_pairs(causal) pairs: s(s+1)/2 for full
    layers, sum over i = 1..s of min(i, w) for sliding ones, each query within its chunk for
    chunked ones, at most top-k keys per query for the DSA core (whose indexer scores all s(s+1)/2);
    4 d FLOPs per pair and head. A decode step at c cached tokens attends to decode_keys_read at
    c + 1 (its own key included) and reads the rest from the cache once (FlashAttention/
    PagedAttention-style, no recompute): c (full), min(c, w - 1) (sliding: what HF's sliding
    cache holds before the step), c mod C (chunked: 0 .. C-1 in turn), min(c, k - 1) for the DSA
    core, and all c keys of the indexer's own d_I-wide cache. GQA/MQA store kv heads (replicated
    when kv < tp); MLA stores the latent (r_kv + d_rope) per token, replicated on every TP rank,
    and decodes in the absorbed form (DeepSeek-V2 sec. 2.1.2); the indexer is replicated on every
    rank (vLLM/SGLang build it from ReplicatedLinear). Layers that reuse another layer's K/V
    (Gemma 4) read it but cache nothing. The memory check keeps cached_tokens per layer (the
    block's rule: at most the window on sliding layers, a rolling buffer, Mistral 7B sec. 2) at
    context s + o. Which layers slide, chunk or index is the config reader's (layer_types first,
    then each family's rule); --sliding-window W sets the sliding layers' window (every layer when
    the model comes from flags), 0 turns sliding off.
  * MoE, on the layers the config makes MoE: by default the experts are tensor-sharded with the
    rest of the layer. -ep (= tp x dp) spreads whole experts over the GPUs of a stage: two
    all-to-alls per MoE block (dispatch at the activation bits, combine at 16; k copies per token,
    as DeepEP's low-latency kernels and NCCL's all-to-all send them), the busiest GPU's expert work
    scaled by uniform routing's balls-into-bins maximum (Raab & Steger 1998; --ep-imbalance sets
    it). -dp runs dp groups of tp GPUs with their own requests and a copy of the attention
    (data-parallel attention), the MoE layers taking every group's tokens.
    A decode step reads the weights of the distinct experts its n = b tokens touch: E (1 - (1 -
    k/E)^n) of them in expectation under uniform independent routing (with Z zero-computation
    experts, LongCat-Flash: E (1 - (1 - k/(E+Z))^n)); FLOPs follow the k (k E / (E + Z)) real
    experts per token.
  * The logits are computed for the last position only (b rows per pass; a speculative
    verification adds K rows per sequence).
  * --serving-stack (default vllm, the open-source engine most deployments run) sets what the
    stack adds to the kernels: launch gap per kernel, the all-reduce kernel (NCCL ring, or a
    custom one-shot kernel: fixed cost + bytes at its measured rate), host time per engine step,
    a fixed cost per request, the tokens per step (chunked prefill) and the memory share of the KV
    pool; SERVING_STACKS names the source of each value, `kernels` is the kernels-only model.
  * --concurrency C (or --request-rate R): continuous batching in steady state (steady_state): a
    step runs every decode and prompt chunks up to the stack's token budget (Sarathi-Serve's
    chunked prefill); Little's law ties C, the cycle of a request (its prompt steps, any waiting,
    o - 1 decodes) and the throughput; TPOT is the mean step a decoding request shares with the
    others, TTFT its own prompt steps plus the waiting. The KV pool (memory share less weights)
    caps C: past it, exit 2 with what fits. A fluid mean, no simulation of the randomness.
  * --num-requests N with --request-rate R (Poisson or evenly spaced arrivals, or inf: all at
    once) or -c C (C clients, each sending when its last request returns): the finite benchmark
    run a client such as vLLM's benchmark_serving.py, trtllm-bench or Triton's measures, stepped
    through (simulate_benchmark): the same scheduler and step costs, with the ramp-up, the queue
    past what the engine sustains (no steady state needed) and the drain; mean, median and p99
    TTFT/TPOT/end-to-end, and throughput over the run's duration as those clients report it.
    Admission reserves a request's whole cache (TensorRT-LLM's GUARANTEED_NO_EVICT).
  * Mixes (workload.py, simulate_requests): --dataset random (vLLM's RandomDataset: uniform within
    --random-range-ratio of --random-input-len / --random-output-len), --dataset sharegpt (a
    lognormal mix with the means of vLLM's ShareGPT runs, sigma 1.0 assumed) or --trace FILE (JSON
    lines or CSV: arrival_s, input_tokens, output_tokens, optional prefix_id / prefix_tokens) run
    request by request, the pool counted in tokens; mean, median, p90 and p99 over the mix.
    --prefix-tokens N: the prompt's first N tokens shared and, once computed, cached (prefix
    caching): a request that finds them computes only the rest over that context; cached prefixes
    hold pool tokens until evicted, least recently used first; --prefix-hit-rate the share that
    finds them. With -b the prefix's cache is taken as there (prefill of s - N tokens).
    --host-kv-cache-gib G (offload.py): evicted prefixes move to a host tier and come back over the
    host link (hardware.py's PCIe x16 or NVLink-C2C, at 0.70 of line rate: LMCache's measured
    reload) on a hit.
  * --speculative-tokens K (speculative.py): each decoding sequence verifies K draft tokens in one
    pass of K + 1 and keeps 1 + a_1 + a_1 a_2 + ... of them (Leviathan et al. 2023); the draft
    costs K passes of the model's MTP layer (mtp, read from num_nextn_predict_layers), of an
    EAGLE head (one layer of the target's shape), of a --draft-model, or nothing (ngram); TPOT =
    (verification + draft) / tokens per step. --acceptance-rate defaults for mtp (0.875,
    DeepSeek-V3's 85-90%) and eagle (0.75, EAGLE-3's acceptance lengths in vLLM issue #20780).
    A decode's context grows one token per step (not K): stated.
  * --search: every layout of --num-gpus GPUs (tp, pp, dp attention, ep, replicas) and
    concurrency at the fewest bits the GPU runs (or the --precision given), (1, 2, 4, ... up to the KV pool) under --max-ttft-ms / --max-tpot-ms, the Pareto
    front of tokens/s per GPU against tokens/s per user; --disaggregated adds prefill and decode
    pools (DistServe: decode-only steps, prefill batches queued M/D/1, the KV cache sent between
    the pools), split over the budget in whole replicas.
  * Throughput per GPU divides by tp x dp x pp. A static batch (-b) runs one batch through the
    pipeline stages in turn (the lower bound of pipelined serving); under --concurrency the requests
    split over min(pp, C) micro-batches in flight (vLLM's virtual engines), one per stage at a time.

Default efficiencies (state and override them; --gpu uses hardware.py's measured figures):
  compute 0.70 for 16-bit matmuls: the maximum achievable matmul FLOP/s measured by Bekman's
    mamf-finder (ML Engineering book) is 271 TFLOP/s on A100 SXM (0.87 of 312) and 795 on H100
    SXM bf16 (0.80); the GEMM shapes of a forward pass sit below those best shapes. Below 16 bits
    the same measurements reach a smaller fraction of the (doubled) peak: H100 fp8 1403 of 1979
    (0.71), 0.883 of the bf16 fraction (GH200: 0.927), so 8- and 4-bit matmuls default to
    0.70 x 0.883 = 0.62 (4-bit: no measurement; the 8-bit ratio is assumed). --gpu takes the
    table's measured MAMF for the dtype and keeps the same gap below it as the default keeps below
    the A100's (x 0.805 = 0.70 / 0.869), so --gpu a100 equals the default. FP4 matmuls then take
    x 0.696 more: at 4096^3 Azure's cuBLASLt run on a GB200 reaches 0.679 of its best FP4 rate
    but 0.975 of its best FP8 one (FP4 needs larger shapes to fill the GPU), so the B200 runs
    FP4 at 3,870 TFLOP/s (flashinfer measured 3,371-3,841 NVFP4 at 1024x7168x4608; not used to
    set it). Attention math runs at the 16-bit rate and efficiency whatever the matmul precision.
  memory 0.70: gpt-fast (pytorch-labs/gpt-fast README) decodes Llama-2-7B at batch 1 on an
    A100-80GB moving 1397 GB/s of 2039 (0.69), all kernels and overheads included. Checked, not
    refitted, against independent batch-1 decode data: Databricks/MosaicML ("LLM Inference
    Performance Engineering: Best Practices", 2023) measure MBU 0.55 for Llama-2-70B on 4x
    A100-40GB and 0.60 on 2x H100 with TensorRT-LLM (ours 0.60, 0.60); gpt-fast's tensor-parallel
    table (Llama-2-7B TP 1-8, 70B TP 2-8) runs 11-18% faster than ours (22% at 7B TP 8). Per-GPU
    bandwidth falling with TP, which both report, comes out of the fixed per-layer costs below
    (kernel overhead, all-reduce); no TP-dependent bandwidth factor is added on top.
  kernel overhead 4 us per kernel (11 per layer): the launch-to-launch gap of small dependent
    kernels without CUDA graphs (a few microseconds each on A100/H100).
  all-reduce and the other collectives: calc_comm.py's model, copied as the shared collectives
    block (8.9 us per call, 0.6/3.4 us per hop LL/Simple, LL at 1/4 bandwidth, 0.80 of the NVLink
    line rate). Inside a node NCCL's ring (or the stack's custom all-reduce); a group wider than a
    node (--gpu's scale-up domain, --gpus-per-node) crosses the network at the NIC per GPU x 0.94
    with NCCL's fastest algorithm (ring, tree, two-level): costed, not refused.
  Hardware without --gpu: the default accelerator every script shares, hardware.py's h100-sxm
    record (NVIDIA H100 SXM5 80GB: 989.4 TFLOP/s dense bf16, 3.35 TB/s, 81,559 MiB, NVLink 450 GB/s
    per direction, 8 per node, a 400 Gb/s NIC per GPU), exactly what --gpu h100-sxm reads.

Examples:
  python calc_inference_latency.py --hf_model_name_or_path path/to/Llama-2-7b/config.json -s 2048 -o 1
  python calc_inference_latency.py -l 96 -hs 12288 -a 96 -v 51200 -tp 8 -s 512 -o 32   # GPT-175B
  python calc_inference_latency.py --hf_model_name_or_path llama-3-8b.json --gpu h100 --precision fp8 -b 64
  python calc_inference_latency.py --hf_model_name_or_path mixtral.json --weight-bits 4 -b 16 --json
  python calc_inference_latency.py --hf_model_name_or_path llama-3.1-8b.json --gpu h100 -s 467 -o 256 -c 32
  python calc_inference_latency.py --hf_model_name_or_path llama-3.1-8b.json --gpu h100 --request-rate 8 \\
      --serving-stack tensorrt-llm
  python calc_inference_latency.py --hf_model_name_or_path llama-3.1-8b.json --gpu h100 -s 467 -o 256 \\
      --request-rate 32 --num-requests 500 --serving-stack tensorrt-llm   # a benchmark run past capacity
  python calc_inference_latency.py --hf_model_name_or_path llama-3.1-8b.json --gpu h100 --dataset random \\
      --random-range-ratio 0.5 --num-requests 1000 --request-rate 8 --prefix-tokens 512
  python calc_inference_latency.py --hf_model_name_or_path llama-3.1-8b.json --gpu h100 --trace requests.jsonl
  python calc_inference_latency.py --hf_model_name_or_path deepseek-v3.json --gpu h800 --precision fp8 -tp 1 \\
      -dp 32 -ep 32 -b 2048 --speculative-tokens 1   # MTP at DeepSeek's 85-90% acceptance
  python calc_inference_latency.py -l 80 -hs 8192 -a 64 --num-kv-heads 8 -tp 4 -pp 2 --peak-tflops 989 \\
      --memory-bandwidth-gbps 3350 --gpu-memory-gib 80
  python calc_inference_latency.py --hf_model_name_or_path llama-3.1-8b.json --gpu h100 --search --num-gpus 8 \\
      -s 2000 -o 200 --max-ttft-ms 300 --max-tpot-ms 20 --disaggregated
  python calc_inference_latency.py --hf_model_name_or_path deepseek-v3.json --gpu h100 -tp 1 -dp 16 -ep 16 \\
      --serving-stack sglang -c 1024 -s 2000 -o 200

References:
  Williams, Waterman, Patterson 2009, "Roofline" (CACM 52(4)).
  Pope et al. 2022, "Efficiently Scaling Transformer Inference", sec. 2-3 (prefill/decode costs).
  Shoeybi et al. 2019, "Megatron-LM", sec. 3 (two all-reduces per layer under TP).
  Dao et al. 2022, "FlashAttention" (attention reads Q, K, V once); Kwon et al. 2023, "vLLM".
  DeepSeek-AI 2024, "DeepSeek-V2", sec. 2.1 (MLA cache); Patarasuk & Yuan 2009 (ring all-reduce).
  Jiang et al. 2023, "Mistral 7B", sec. 2 (sliding window, rolling buffer cache); Gemma Team 2024,
  "Gemma 2", sec. 2 (local sliding-window and global attention on alternating layers); Meta 2025,
  Llama 4 (chunked attention: transformers' Llama4TextConfig attention_chunk_size); DeepSeek-AI 2025, "DeepSeek-V3.2", sec. 2.1
  (lightning indexer, top-k sparse attention); Meituan 2025, "LongCat-Flash", sec. 2.1 (zero-
  computation experts).
  Zhong et al. 2024, "DistServe" (disaggregated prefill and decode); Kleinrock 1975, "Queueing
  Systems" vol. 1 (M/D/1 waiting, residual service time); Raab & Steger 1998, "Balls into Bins";
  Lepikhin et al. 2021, "GShard" (expert all-to-all); DeepSeek-AI, DeepEP README (dispatch/combine).
  Agrawal et al. 2024, "Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve"
  (chunked prefill); Little 1961 (L = lambda W); Wolff 1982 (Poisson arrivals see time averages).
  Validation: FasterTransformer docs/gpt_guide.md tables; TensorRT-LLM docs/source/performance.md
  and performance/perf-overview.md; vLLM's CI performance dashboard; NVIDIA NIM benchmarks.
"""
# @generated by tools/build_scripts.py from llmcalc/records.py, llmcalc/accelerator.py,
# llmcalc/errors.py, llmcalc/cli.py, llmcalc/model/kinds.py, llmcalc/model/hub.py,
# llmcalc/model/reader.py, llmcalc/model/families_moe.py, llmcalc/model/families_dense.py,
# llmcalc/model/families_hybrid.py, llmcalc/model/families_more.py, llmcalc/model/families_moa.py,
# llmcalc/model/families_sconv.py, llmcalc/model/families_state.py, llmcalc/model/config.py,
# llmcalc/model/spec.py, llmcalc/precision.py, llmcalc/model/formulas.py, llmcalc/model/sharding.py,
# llmcalc/serve/cache.py, llmcalc/serve/memory.py, llmcalc/comm/collectives.py,
# llmcalc/serve/launch.py, llmcalc/serve/offload.py, llmcalc/serve/stacks.py,
# llmcalc/serve/forward.py, llmcalc/serve/speculative.py, llmcalc/serve/steady.py,
# llmcalc/serve/simulate.py, llmcalc/serve/workload.py, llmcalc/serve/engine.py,
# llmcalc/serve/search.py, llmcalc/serve/capacity.py, llmcalc/tools/latency_capacity.py,
# llmcalc/tools/latency_mix.py, llmcalc/tools/latency_report.py, llmcalc/serve/request.py,
# llmcalc/tools/latency.py. Do not edit this file: edit the source and run `python3
# tools/build_scripts.py`.

import argparse
import math
import os
import sys
import textwrap


# ======== llmcalc/records.py ======================================================================
# The records that flow between modules, declared once each.
#
# A record is a dict whose keys are declared in one place, its class's FIELDS (name: meaning, with
# units), so that a reader finds what a record holds without tracing who wrote which key, and a key
# nobody declared is refused where it is written (TypeError: a programming error, not bad input).
# Fields read as attributes too (`hw.sms` is `hw["sms"]`). Records stay dicts so that `--json`
# prints them as they are. Not dataclasses or TypedDicts: `dataclasses` costs ~15 ms and `typing`
# ~10 ms of start-up (python -X importtime, Python 3.11), against a budget of tens of milliseconds
# for a whole answer.
#
# Each record is declared beside the code that builds it: the accelerator (accelerator.Accelerator),
# the network (comm/collectives.Network), the model spec (model/spec.ModelSpec), a layer's costs and
# the memory config (train/). A subclass sets FIELDS and, where every field must be given, REQUIRED.

class Record(dict):
    """A dict with declared keys (FIELDS); REQUIRED ones must be given when it is built."""

    __slots__ = ()
    FIELDS = {}    # name -> meaning (units in the name or the text)
    REQUIRED = ()  # names that must be present at construction

    def __init__(self, *args, **fields):
        super().__init__(*args, **fields)
        unknown = [k for k in self if k not in self.FIELDS]
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {unknown[0]!r} (declared: "
                            f"{', '.join(self.FIELDS)})")
        missing = [k for k in self.REQUIRED if k not in self]
        if missing:
            raise TypeError(f"{type(self).__name__} needs {missing[0]!r}")

    def __setitem__(self, key, value):
        if key not in self.FIELDS:
            raise TypeError(f"{type(self).__name__} has no field {key!r}")
        super().__setitem__(key, value)

    def update(self, *args, **fields):
        for k, v in dict(*args, **fields).items():
            self[k] = v

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            if name in type(self).FIELDS:
                return None  # a declared field not set: absent, as .get() says
            raise AttributeError(f"{type(self).__name__} has no field {name!r}") from None

    def copy(self):
        return type(self)(self)


# ======== llmcalc/accelerator.py ==================================================================
# The accelerator record, and the default accelerator of every script.
#
# Owns the record format of hardware.py's table (row: datasheet units in, SI units out; the
# driver-reported usable memory; the scale-up topology) and the one default accelerator, the NVIDIA
# H100 SXM5 80GB: the row hardware.py lists as h100-sxm, written here once, so that every script, with
# or without hardware.py beside it, runs on exactly the numbers `--gpu h100-sxm` gives. Sources: per
# row (vendor datasheets; measured matmul rates from S. Bekman's ml-engineering MAMF table).

DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")



class Accelerator(Record):
    """One accelerator: every fact the models read, in SI units, each with its source (source,
    notes, and the *_source fields). Built once per row by accelerator_row; hardware.py's table
    and the default accelerator below are lists of these. Fields that may be None say so."""

    FIELDS = {
        "name": "the table's key (h100-sxm)", "full_name": "vendor's product name",
        "vendor": "NVIDIA, AMD, Google, Intel, AWS", "aliases": "other names --gpu accepts",
        "memory_bytes": "capacity as the vendor prints it (decimal GB -> bytes)",
        "memory_usable_bytes": "what the driver reports to programs (bytes): the 'will it fit' figure",
        "memory_usable_source": "where memory_usable_bytes was read, or 'derived, not measured'",
        "memory_bandwidth_bytes_per_s": "peak HBM bandwidth",
        "peak_flops_per_s": "dense peak per dtype (fp64 ... fp4); int8 in ops/s; only supported dtypes",
        "scale_up_link": "NVLink / xGMI / ICI / ... in words; None: no scale-up fabric",
        "scale_up_topology": "switch, mesh, torus, pair or hybrid-cube-mesh; None: no fabric",
        "scale_up_bandwidth_bytes_per_s": "scale-up link per device, one direction; None: none",
        "scale_up_domain_size": "devices one scale-up fabric joins (8 on HGX, 72 on NVL72)",
        "scale_up_in_network_reduction": "whether the fabric reduces in the switch (NVLink SHARP)",
        "scale_out_bandwidth_bytes_per_s": "NIC bandwidth per device, one direction; None: not listed",
        "pcie_peer_bandwidth_bytes_per_s": "PCIe peer-to-peer per direction on cards without a "
                                           "scale-up link; None: a scale-up link, or no P2P",
        "host_link": "the link to host memory in words (PCIe 5.0 x16, NVLink-C2C); None: not listed",
        "host_link_bandwidth_bytes_per_s": "host link line rate per direction; None: not listed",
        "tdp_w": "board power limit (W)",
        "achievable_matmul_flops_per_s": "measured best-shape matmul rate (MAMF) per dtype; None",
        "achievable_memory_bandwidth_bytes_per_s": "measured streaming bandwidth; None",
        "achievable_source": "where the achievable figures were measured",
        "sms": "streaming multiprocessors (AMD: compute units) for wave quantization; None: not listed",
        "kernel_family": "whose measured kernel rates apply: hopper, blackwell, ampere; None: none",
        "flash_attention_fraction": "FlashAttention-2's forward, backward rate / 16-bit peak",
        "sustained_matmul_fraction": "a training loop's sustained matmul rate / MAMF, {bf16, fp8, "
                                     "source}; None: not measured (taken as 1)",
        "kv_stream_efficiency": "share of peak bandwidth a decode attention kernel streams the KV "
                                "cache at; None: the serving memory efficiency",
        "source": "datasheets and pages the row was typed from", "notes": "caveats, in words",
    }
    REQUIRED = tuple(FIELDS)


RECORD_KEYS = tuple(Accelerator.FIELDS)

TERA = 1e12
GIGA = 1e9
GIB = 2 ** 30

# --- the host link: GPU <-> CPU memory, per GPU and direction ----------------------------------
# PCIe x16 line data rate: GT/s x 16 lanes x 128/130 (the 128b/130b encoding of PCIe 3.0-5.0) / 8
# bits (PCI-SIG, PCI Express Base Specification 3.0, 4.0, 5.0): 15.75, 31.5, 63.0 GB/s.
PCIE3_X16_GB_S = 8 * 16 * 128 / 130 / 8
PCIE4_X16_GB_S = 16 * 16 * 128 / 130 / 8
PCIE5_X16_GB_S = 32 * 16 * 128 / 130 / 8
# NVLink-C2C between a Grace CPU and its Hopper/Blackwell GPU: 900 GB/s in both directions, 450
# each way (NVIDIA GH200 Grace Hopper Superchip and GB200 NVL72 pages)
NVLINK_C2C_GB_S = 450.0
# Share of the line rate a bulk pinned host<->device copy reaches: assumed (copy engines on PCIe
# commonly reach 80-90% of it); ZeRO-Offload's weight and optimizer copies in training
# (train/offload.py, train/deepspeed.py). The serving KV tier's paged reloads reach less: measured,
# serve/offload.KV_RELOAD_EFFICIENCY.
HOST_LINK_EFFICIENCY = 0.8

# --- shared source strings -------------------------------------------------------------------
MAMF_SOURCE = ("S. Bekman, ml-engineering, compute/accelerator/README.md, 'Maximum Achievable Matmul "
         "FLOPS comparison table' https://github.com/stas00/ml-engineering/blob/master/compute/"
         "accelerator/README.md")
NV_H100_SOURCE = ("NVIDIA H100 datasheet https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-"
            "gpu-datasheet ; https://www.nvidia.com/en-us/data-center/h100/")

# --- usable (driver-reported) memory -------------------------------------------------------------
# name -> (MiB the driver reports, where it was published). nvidia-smi memory.total unless said.
_MODAL_2797 = ("nvidia-smi totals listed in https://github.com/modal-labs/modal-client/pull/2797 "
               "(2025-01)")
_USABLE_MIB = {
    "a100-40gb": (40960, _MODAL_2797 + "; also https://github.com/bottlerocket-os/"
                  "bottlerocket-core-kit/pull/834 (driver 580.126.09). Older drivers showed "
                  "40536 MiB (https://github.com/nanopool/phoenix-miner/issues/17, driver 470)"),
    "a100-80gb": (81920, _MODAL_2797),
    "a10": (23028, _MODAL_2797 + "; NVML total 24146608128 B in https://github.com/mayooot/"
            "detect-gpu/issues/3"),
    "a10g": (23028, "nvidia-smi in https://github.com/NVIDIA/DCGM/issues/232 (driver 535.247.01)"),
    "l4": (23034, _MODAL_2797),
    "l40s": (46068, _MODAL_2797 + "; also https://github.com/akash-network/provider-configs/"
             "pull/99 (driver 595.71.05)"),
    "h100-sxm": (81559, _MODAL_2797 + "; also https://github.com/NVIDIA/nccl/issues/1264 (driver "
                 "550.54.15). torch total_memory 81082-81090 MiB (public logs, torch 2.0-2.7)"),
    "h100-nvl": (95330, "DRM dedicated total 99961274368 B reported by the driver in "
                 "https://github.com/fastfetch-cli/fastfetch/issues/1658 (driver 570.86.15)"),
    "h800": (81559, "nvidia-smi in https://github.com/NVIDIA/DCGM/issues/183 (driver 535.183.01)"),
    "h20": (97871, "nvidia-smi in https://github.com/NVIDIA/nvtrust/issues/128 (driver 580.95.05)"),
    "h200": (143771, "nvidia-smi 143771 MiB in many public GitHub logs (e.g. 8x H200, driver "
             "570.158.01; repository not recorded); torch total_memory 143156 MiB in a public "
             "vLLM example comment"),
    "b200": (183359, "nvidia-smi in https://github.com/NVIDIA/TensorRT-LLM/issues/10278 (driver "
             "580.95.05); torch total_memory 182631-182642 MiB in public logs"),
    "rtx-3090": (24576, "nvidia-smi in https://github.com/noonghunna/club-3090/issues/1128 "
                 "(driver 595.84)"),
    "rtx-4090": (24564, "nvidia-smi in https://github.com/RLinf/RLinf/issues/255 (driver "
                 "550.163.01); torch total_memory 24563 MiB in a public log"),
    "rtx-5090": (32607, "nvidia-smi in https://github.com/noonghunna/club-3090/issues/617 "
                 "(driver 595.71.05)"),
}


def _usable_memory(name, memory_gb, memory_bytes):
    """(usable bytes, source): the published driver reading, else the vendor figure read as GiB.

    Derived rows assume the vendor's decimal GB is really that many GiB (HBM stacks are binary:
    H100 80GB = 5 x 16 GiB), an upper bound: real readings sit 0-2% below it.
    """
    if name in _USABLE_MIB:
        mib, src = _USABLE_MIB[name]
        return mib * 2 ** 20, f"measured {mib} MiB, {src}"
    if memory_gb is None:  # the vendor already prints GiB (TPU v4, Trainium)
        gib = memory_bytes / GIB
        return int(memory_bytes), f"derived, not measured: the vendor's {gib:g} GiB"
    return int(round(memory_gb * GIB)), (f"derived, not measured: vendor {memory_gb:g} GB read "
                                         f"as {memory_gb:g} GiB")


# --- facts of a GPU's kernels: SMs, the family whose measured kernel rates apply, sustained matmul
# and KV streaming. Read by the training step (train/) and serving (serve/) through the record's
# fields (sms, kernel_family, flash_attention_fraction, sustained_matmul_fraction,
# kv_stream_efficiency), never by GPU name.
# Streaming multiprocessors per GPU, for wave quantization: NVIDIA A100 whitepaper (108 SMs on
# A100 SXM/PCIe), H100 whitepaper (132 on SXM5, 114 on PCIe; H200 and GH200 are the SXM5 die),
# B200 (148, NVIDIA Blackwell datasheet), L40S (142, Ada datasheet); AMD MI300X/MI325X 304 CUs
# (CDNA 3 whitepaper). Other GPUs: no wave term (said in the assumptions).
_SM_COUNT = {"a100-40gb": 108, "a100-80gb": 108, "a100-40gb-pcie": 108, "a100-80gb-pcie": 108,
            "h100-sxm": 132, "h100-pcie": 114, "h100-nvl": 132, "h800": 132, "h200": 132, "h200-nvl": 132,
            "gh200": 132, "b200": 148, "l40s": 142, "mi300x": 304, "mi325x": 304}

# Flash-attention kernel rates as a fraction of the dense 16-bit peak, forward and backward
# (FLOPs counted as flash-attn's benchmark counts them: 4 s^2 d h forward, halved when causal,
# 2.5x that backward). The published forward+backward rate of FlashAttention-2, causal, head dim
# 128, 8k tokens (Dao 2023, arXiv 2307.08691, Fig. 4 and the H100 figure of the flash-attention
# repo): A100-80GB 182 TFLOP/s (0.583 of 312), H100 SXM 308 (0.311 of 989), used for both
# passes. FlashAttention-3's H100 forward (602, 0.61) has no published backward beside it, so
# H100 keeps the measured FA2 pair. Blackwell: the flash-attn 2.7.4 package on a B200, causal,
# head dim 128, 8k tokens, forward 399.9 and backward 318.0 TFLOP/s of 2,250 (NVIDIA/cudnn-frontend
# @bb37575d, sdpa_bf16_benchmark_results_NVIDIA_B200.csv; train/attention_rates.py). Other GPUs
# take the A100 fraction (an assumption).
FLASH_ATTENTION_FRACTION = {"ampere": (0.583, 0.583), "hopper": (0.311, 0.311),
                            "blackwell": (399.9 / 2250, 318.0 / 2250)}
FLASH_ATTENTION_FALLBACK = "ampere"  # the family whose fraction a GPU without its own takes

# A training loop keeps the GPU busy for minutes, and its matmuls do not all have the best shape:
# they run below the maximum a shape search finds in a short burst (MAMF). Measured here on one
# H100 SXM 80GB (700 W, torch 2.11 + CUDA 13.0, validation/h100/measure_training.py, 2026-11-24;
# raw rows in validation/h100/results/gemm.jsonl): back-to-back torch.matmul (bf16) and
# torch._scaled_mm (fp8 e4m3, per-tensor scales) over 51 shapes with m, n, k >= 2048 (squares
# and Llama-3 8B / 70B layer and weight-gradient shapes at 2k-16k tokens), random inputs rotated
# past L2, 20 s of continuous work: median 693 TFLOP/s bf16 and 1,234 fp8, where MAMF reports
# 794.5 and 1,402.6. The factor makes gemm_time_s's median over those 51 shapes equal the
# measured one (bf16 0.9125, fp8 0.9209); set from that grid alone and judged on the training
# steps measured beside it (VALIDATION.md). The 700 W SXM Hopper parts take it (H100 SXM; H200
# SXM, the same die and power limit: "H200 is the same", MAMF); the PCIe and NVL cards (other
# power limits), GH200 (its own MAMF) and other GPUs do not (not measured).
_SUSTAINED_H100 = {"bf16": 0.9125, "fp8": 0.9209, "source": "our H100 grid"}

# Blackwell: Azure's cuBLASLt FP8 GEMM run on one GB200 (Azure/AI-benchmarking-guide,
# Azure_Results/ND_GB200_v6_results.md @2a370be6: random inputs, 10,000 warm-up iterations, CUDA
# 12.8) reaches 2,834.6 / 2,876.6 / 2,906.9 / 2,825.6 TFLOP/s on the squares 4096^3 to 32768^3,
# mean 2,860.9, where MAMF gives the GB200 3,615.6: 0.791. The same method on an H200 (the
# file ND_H200_v5_results.md @7f20e5fa: 1,249.1 / 1,300.6 / 1,366.3 / 1,349.5, mean 1,316.4 over
# the Hopper fp8 MAMF 1,453.4) gives 0.906, within 2% of our own Hopper grid's 0.921, so the two
# methods agree where both exist. Taken for bf16 too (no bf16 row in the file) and for the B200
# and B300 (the same Blackwell compute at 1,000 / 1,100 W: assumptions, not measured).
_SUSTAINED_BLACKWELL = {"bf16": 2860.9 / 3615.6, "fp8": 2860.9 / 3615.6, "source": "Azure GB200 cuBLASLt run"}




# The family whose measured kernel rates (FlashAttention, cuDNN attention, the sustained-loop matmul
# factor) a GPU takes: the Hopper SXM/PCIe/NVL and Grace Hopper parts and the H800 (the GH100 die,
# 132 SMs at 700 W like the H100 SXM: the same kernels), the datacenter Blackwell parts, the A100s.
# Other GPUs: None (FlashAttention-2's A100 fraction stands in; said in the report).
_KERNEL_FAMILY = {"a100-40gb": "ampere", "a100-80gb": "ampere", "a100-40gb-pcie": "ampere",
                  "a100-80gb-pcie": "ampere", "h100-sxm": "hopper", "h100-pcie": "hopper",
                  "h100-nvl": "hopper", "h800": "hopper", "h200": "hopper", "gh200": "hopper",
                  "gh200-96gb": "hopper", "b200": "blackwell", "gb200": "blackwell", "b300": "blackwell"}
# the sustained-loop factor: measured on the 700 W SXM Hopper parts (H100 SXM; the H200 and H800 are
# the same die at the same limit), and Blackwell (above)
_SUSTAINED = {"h100-sxm": _SUSTAINED_H100, "h200": _SUSTAINED_H100, "h800": _SUSTAINED_H100,
              "b200": _SUSTAINED_BLACKWELL, "gb200": _SUSTAINED_BLACKWELL, "b300": _SUSTAINED_BLACKWELL}
# A decode attention kernel streams the KV cache at 0.93 of peak bandwidth on the GH100 chip (our
# H200 graph-mode decode steps; serve/stacks.py says how it was measured): H100, H200, GH200, H800, H20.
KV_STREAM_EFFICIENCY = 0.93
_KV_STREAM_CHIPS = ("h100", "h200", "gh200", "h800", "h20")


# How the scale-up domain is wired, which decides what one rank gets from a collective over part
# of it. "switch": NVSwitch-style, every device drives its whole scale-up bandwidth to any peer.
# "mesh": a point-to-point full mesh (AMD xGMI: 7 peers x 64 GB/s per direction on MI300X;
# Intel Gaudi: 3 RoCE ports per peer), so a group of G of the D devices reaches (G-1)/(D-1) of the
# aggregate and one peer 1/(D-1). "torus": TPU ICI / NeuronLink neighbours. "pair": an NVLink
# bridge between two PCIe cards. "hybrid-cube-mesh": DGX-1 V100. None: no scale-up fabric.
_TOPOLOGY = {"mi300x": "mesh", "mi325x": "mesh", "mi355x": "mesh", "gaudi2": "mesh",
             "gaudi3": "mesh", "mi250x": "mesh", "tpu-v4": "torus", "tpu-v5e": "torus",
             "tpu-v5p": "torus", "tpu-v6e": "torus", "trainium1": "torus", "trainium2": "torus",
             "v100-16gb": "hybrid-cube-mesh", "v100-32gb": "hybrid-cube-mesh"}


def accelerator_row(name, full_name, vendor, aliases, *, memory_gb, memory_tb_per_s, tflops,
         scale_up_link, scale_up_gb_per_s_unidir, domain, in_network_reduction,
         scale_out_gbit_per_s, tdp_w, source, notes, memory_bytes=None,
         achievable_tflops=None, achievable_memory_tb_per_s=None, achievable_source=None,
         pcie_peer_gb_per_s_unidir=None, host_link=None, host_link_gb_per_s_unidir=None):
    """Build one record from datasheet units (GB, TB/s, TFLOP/s, GB/s, Gb/s) into SI base units.

    Table rows are typed in the units the datasheets print so each figure can be checked against
    its source by eye; conversion to bytes, bytes/s and FLOP/s happens only here.
    """
    mem = int(memory_bytes if memory_bytes is not None else round(memory_gb * GIGA))
    usable, usable_src = _usable_memory(name, memory_gb, mem)
    flops = {dt: tflops[dt] * TERA for dt in DTYPES if tflops.get(dt) is not None}
    ach = None
    if achievable_tflops:
        ach = {dt: v * TERA for dt, v in achievable_tflops.items()}
    return Accelerator({
        "name": name,
        "full_name": full_name,
        "vendor": vendor,
        "aliases": list(aliases),
        "memory_bytes": mem,
        "memory_usable_bytes": usable,
        "memory_usable_source": usable_src,
        "memory_bandwidth_bytes_per_s": memory_tb_per_s * TERA,
        "peak_flops_per_s": flops,
        "scale_up_link": scale_up_link,
        "scale_up_topology": (None if scale_up_gb_per_s_unidir is None else
                              _TOPOLOGY.get(name, "pair" if domain == 2 else "switch")),
        "scale_up_bandwidth_bytes_per_s": (None if scale_up_gb_per_s_unidir is None
                                           else scale_up_gb_per_s_unidir * GIGA),
        "scale_up_domain_size": domain,
        "scale_up_in_network_reduction": in_network_reduction,
        "scale_out_bandwidth_bytes_per_s": (None if scale_out_gbit_per_s is None
                                            else scale_out_gbit_per_s * GIGA / 8),
        # cards without a scale-up link that reach their peers over PCIe (peer-to-peer DMA):
        # the slot's line rate per direction; None where there is a scale-up link or no P2P
        "pcie_peer_bandwidth_bytes_per_s": (None if pcie_peer_gb_per_s_unidir is None
                                            else pcie_peer_gb_per_s_unidir * GIGA),
        # the GPU's link to host memory (PCIe x16 or NVLink-C2C), line rate per direction; None
        # where not listed (TPU, Gaudi, Trainium hosts: not modelled)
        "host_link": host_link,
        "host_link_bandwidth_bytes_per_s": (None if host_link_gb_per_s_unidir is None
                                            else host_link_gb_per_s_unidir * GIGA),
        "tdp_w": tdp_w,
        "achievable_matmul_flops_per_s": ach,
        "achievable_memory_bandwidth_bytes_per_s": (None if achievable_memory_tb_per_s is None
                                                    else achievable_memory_tb_per_s * TERA),
        "achievable_source": achievable_source,
        # streaming multiprocessors (AMD: compute units), for wave quantization; None: not listed
        "sms": _SM_COUNT.get(name),
        # whose measured kernel rates apply: "hopper", "blackwell", "ampere", or None
        "kernel_family": _KERNEL_FAMILY.get(name),
        # FlashAttention-2's forward and backward rates as fractions of the 16-bit peak
        "flash_attention_fraction": list(FLASH_ATTENTION_FRACTION[_KERNEL_FAMILY.get(name) or
                                                                  FLASH_ATTENTION_FALLBACK]),
        # a training loop's sustained matmul rate over MAMF, {"bf16", "fp8", "source"}; None: 1
        "sustained_matmul_fraction": dict(_SUSTAINED[name]) if name in _SUSTAINED else None,
        # share of peak bandwidth a decode attention kernel streams the KV cache at; None: the
        # serving memory efficiency
        "kv_stream_efficiency": KV_STREAM_EFFICIENCY if name.startswith(_KV_STREAM_CHIPS) else None,
        "source": source,
        "notes": f"{notes} Usable memory: {usable_src}.",
    })


# --- the default accelerator --------------------------------------------------------------------
# tflops: dense TFLOP/s (int8: TOPS); the H100 SXM's column, shared with the H800/H200 rows.
HOPPER_SXM_TFLOPS = dict(fp64=67, fp32=67, tf32=494.7, bf16=989.4, fp16=989.4, fp8=1978.9,
                          int8=1978.9)

# Today's most common training and serving GPU; hardware.py's table holds this same record.
H100_SXM = accelerator_row(
    "h100-sxm", "NVIDIA H100 SXM5 80GB", "NVIDIA",
    ["h100", "h100-sxm5", "h100-sxm5-80gb", "h100-80gb", "h100-sxm-80gb", "h100-hgx"],
    memory_gb=80, memory_tb_per_s=3.35, tflops=HOPPER_SXM_TFLOPS,
    scale_up_link="NVLink 4 (18 links) via NVSwitch gen3", scale_up_gb_per_s_unidir=450,
    domain=8, in_network_reduction=True, scale_out_gbit_per_s=400, tdp_w=700,
    host_link="PCIe 5.0 x16", host_link_gb_per_s_unidir=PCIE5_X16_GB_S,
    source=NV_H100_SOURCE + " ; dense values: NVIDIA H100 Tensor Core GPU Architecture whitepaper",
    notes="Datasheet starred figures are sparse (BF16 1,979*, FP8 3,958*); dense halves. "
          "fp64 = tensor 67 (vector 34). NVLink 900 GB/s bidirectional. HGX H100: 8 GPUs, "
          "NVSwitch gen3 with NVLink SHARP; one 400 Gb/s ConnectX-7 per GPU (DGX H100).",
    achievable_tflops=dict(bf16=794.5, fp8=1402.6),
    achievable_source=MAMF_SOURCE + " (v2 table; torch 2.7.0+cu126; bf16 2048x2048x13312, fp8 "
                                    "e4m3 1024x9216x14336)")
DEFAULT_ACCELERATOR = H100_SXM["name"]


def default_accelerator():
    """A copy of the default accelerator's record, as hardware.get_accelerator('h100-sxm') gives it."""
    return Accelerator({k: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v)
                        for k, v in H100_SXM.items()})


# ======== llmcalc/errors.py =======================================================================
# The one error type below the tools.
#
# `serve/`, `train/`, `model/` and `comm/` take keyword arguments and never see argparse; when an input
# cannot be answered they raise CalcError with one line saying what was wrong and what would be right.
# The tools turn it into `prog: error: <message>` on stderr and exit status 2 (cli.calc_errors).

class CalcError(ValueError):
    """Bad input found below the tools: one line, what was wrong and what would be right."""


# ======== llmcalc/cli.py ==========================================================================
# The parser pieces every tool shares: the parser whose usage error is one line and exit 2, the
# bounded number types, the model flags, and the flag-range table each tool checks its flags against
# (with the --help line that lists it).

def terminal_columns():
    """The width help is wrapped to, as shutil.get_terminal_size() finds it (COLUMNS, else the
    terminal's, else 80) without importing shutil, which with bz2 and lzma is ~2 ms of start-up."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns


class DescriptionFormatter(argparse.RawDescriptionHelpFormatter):
    """The description as written (its line breaks kept), help wrapped to terminal_columns().
    argparse builds a formatter for every add_argument (to check the metavar), so the width it
    would look up through shutil is read here instead."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None, **kwargs):
        if width is None:
            width = terminal_columns() - 2  # argparse's own margin
        super().__init__(prog, indent_increment, max_help_position, width, **kwargs)


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (no usage dump) and exit status 2, and an
    epilog may be a function, called only when --help is printed (a run that answers never builds
    it: start-up time). Help keeps the description's line breaks (DescriptionFormatter)."""

    def __init__(self, *args, formatter_class=DescriptionFormatter, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, **kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")

    def format_help(self):
        if callable(self.epilog):
            self.epilog = self.epilog()
        return super().format_help()


class calc_errors:
    """`with calc_errors(parser):` around a tool's work: a CalcError raised below the tools (one line,
    errors.py) becomes the parser's one-line error and exit status 2, as a flag's own check does."""

    def __init__(self, parser):
        self.parser = parser

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is not None and issubclass(kind, CalcError):
            self.parser.error(str(exc))
        return False


def finite_float(text):
    """argparse type for a real number: rejects nan and inf with a one-line usage error."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if value != value or abs(value) == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


# Counts take SI suffixes (powers of 1000: 4k, 300B or 300G, 2T) and binary ones (powers of 1024:
# 8Ki = 8192, 1Mi); sizes in bytes (calc_comm.py --size) keep nccl-tests' binary K/M/G instead.
COUNT_UNITS = {"k": 10 ** 3, "m": 10 ** 6, "b": 10 ** 9, "g": 10 ** 9, "t": 10 ** 12, "p": 10 ** 15,
               "ki": 2 ** 10, "mi": 2 ** 20, "gi": 2 ** 30, "ti": 2 ** 40}


def parse_count(text):
    """A count as a user types it: 4096, 4_096, 1e12, 300B, 2T, 1.5k, 8Ki (COUNT_UNITS) -> a
    finite float or int. ArgumentTypeError (one line) for anything else."""
    t = str(text).strip().replace("_", "")
    i = len(t)
    while i > 0 and t[i - 1].isalpha():
        i -= 1
    num, unit = t[:i], t[i:].lower()
    if unit and unit not in COUNT_UNITS or not num:
        raise argparse.ArgumentTypeError(f"invalid count: {text!r} (use 4096, 1e12, or a suffix: "
                                         "4k, 300B, 2T = powers of 1000; 8Ki = 8192)")
    if not unit and num.lstrip("+-").isdigit():
        return int(num)
    try:
        value = float(num) * COUNT_UNITS.get(unit, 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid count: {text!r}") from None
    if value != value or abs(value) == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def count_float(text):
    """argparse type for a count that may be fractional or large (--tokens 2T): parse_count, as a
    finite float (a 400-digit count is refused, not overflowed)."""
    try:
        return float(parse_count(text))
    except OverflowError:
        raise argparse.ArgumentTypeError(f"{str(text)[:24]}... is too large") from None


def bounded_int(text):
    """argparse type for an integer flag: at most 18 digits, so no 400-digit size reaches a formula;
    suffixes as parse_count (-s 8Ki, --num-gpus 1k); the value must be whole."""
    text = str(text).strip()
    if len(text.lstrip("+-")) > 18:
        raise argparse.ArgumentTypeError(f"{text[:24]}... is too large (at most 18 digits)")
    try:
        value = parse_count(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"invalid integer: {text!r}") from None
    if isinstance(value, int):
        return value
    if abs(value) >= 1e18:
        raise argparse.ArgumentTypeError(f"{text[:24]} is too large (at most 18 digits)")
    if value != int(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    return int(value)


def add_model_args(parser):
    """Model-shape flags shared by every script (cookbook spellings kept; defaults are None so a
    flag the user gave is visible, and MODEL_DEFAULTS fill in what neither flag nor config set).
    Flags build a uniform stack; given with a config they override every layer they apply to."""
    g = parser.add_argument_group("model (flags override values read from a config)")
    bo, n = argparse.BooleanOptionalAction, bounded_int
    g.add_argument("--hf_model_name_or_path", "--hf-model-name-or-path", dest="hf_model_name_or_path",
                   default=None, help="local folder with config.json, a config.json path, or a hub "
                   "id (hub ids need `transformers`; never trust_remote_code)")
    g.add_argument("--vocab-size", "-v", type=n, default=None, help="V (default 51200)")
    g.add_argument("--hidden-size", "-hs", type=n, default=None, help="h (default 6144)")
    g.add_argument("--num-layers", "-l", type=n, default=None,
                   help="L (default 44); with a config, the first L layers of its pattern")
    g.add_argument("--num-attention-heads", "-a", type=n, default=None,
                   help="a (default: h/128, or h/64, when it divides)")
    g.add_argument("--num-kv-heads", type=n, default=None, help="kv heads (GQA/MQA; default a)")
    g.add_argument("--kv-size-ratio", "-kv", type=finite_float, default=None,
                   help="kv heads / query heads (cookbook; 1.0 = MHA)")
    g.add_argument("--head-dim", type=n, default=None, help="d (default h/a)")
    g.add_argument("--ffn-expansion-factor", "-ff", type=finite_float, default=None,
                   help="f = ff * h when --ffn-hidden-size is not given (default 4)")
    g.add_argument("--ffn-hidden-size", type=n, default=None, help="f, the dense MLP width")
    g.add_argument("--num-mlp-linears", "-nl", type=n, default=None,
                   help="matrices per MLP: 2 (GELU) or 3 (gated, e.g. SwiGLU) (default 2)")
    g.add_argument("--swiglu", action="store_true", default=None,
                   help="gated MLP with 3 matrices (same as -nl 3)")
    g.add_argument("--tied-embeddings", action=bo, default=None,
                   help="output head shares the token embedding (default: not tied)")
    g.add_argument("--norm", choices=("layernorm", "rmsnorm"), default=None,
                   help="norm type: layernorm has weight+bias, rmsnorm weight only (default layernorm)")
    g.add_argument("--norms-per-layer", type=n, default=None,
                   help="norms in each block (default 2; 1 with --parallel-attention; Gemma 2: 4)")
    g.add_argument("--parallel-attention", action=bo, default=None,
                   help="attention and MLP read one shared norm (GPT-J/Falcon-7B): 1 norm per layer")
    g.add_argument("--qk-norm", choices=("none", "head", "full"), default=None,
                   help="q/k norms: per head dim (Qwen3) or over all heads (OLMo 2) (default none)")
    g.add_argument("--bias", action=bo, default=None,
                   help="biases in all linear layers (default on, GPT-NeoX style); the three "
                   "switches below override it")
    g.add_argument("--qkv-bias", action=bo, default=None, help="bias on q, k, v projections")
    g.add_argument("--attn-out-bias", action=bo, default=None, help="bias on the attention output")
    g.add_argument("--mlp-bias", action=bo, default=None, help="biases in the MLP/experts")
    g.add_argument("--position-embedding", choices=("rope", "learned", "alibi", "none"), default=None,
                   help="learned adds a (max positions x h) table; rope/alibi/none add no weights "
                   "(default rope)")
    g.add_argument("--max-position-embeddings", type=n, default=None,
                   help="rows of a learned position table (default: the sequence length)")
    g.add_argument("--embedding-norm", action=bo, default=None,
                   help="a norm right after the token embedding (BLOOM)")
    g.add_argument("--final-norm", action=bo, default=None, help="final norm before the head (default on)")
    g.add_argument("--sliding-window", type=n, default=None,
                   help="window of the sliding-window layers (default from the config; with no "
                   "config, every layer slides; 0 turns sliding off)")
    g.add_argument("--moe", action="store_true", default=None, help="mixture of experts MLPs")
    g.add_argument("--num-experts", "-e", type=n, default=None, help="E routed experts (default 8)")
    g.add_argument("--expert-interval", "-ei", type=n, default=None,
                   help="every ei-th layer is MoE (default 1)")
    g.add_argument("--topk", "-t", type=n, default=None, help="k experts per token (default 1)")
    g.add_argument("--moe-ffn-hidden-size", type=n, default=None, help="f_e (default f)")
    g.add_argument("--num-shared-experts", type=n, default=None, help="shared experts (default 0)")
    g.add_argument("--shared-expert-ffn-hidden-size", type=n, default=None,
                   help="total width of the shared experts (default num_shared * f_e)")
    g.add_argument("--shared-expert-gate", action=bo, default=None,
                   help="sigmoid gate (h -> 1) on the shared expert (Qwen-MoE)")
    g.add_argument("--num-dense-layers", type=n, default=None,
                   help="leading dense layers before the MoE layers (DeepSeek first_k_dense_replace)")
    g.add_argument("--router-bias", action=bo, default=None,
                   help="count a per-expert router bias (DeepSeek-V3's checkpoint stores one; HF "
                   "keeps it as a buffer, so it is off when reading a config)")
    g.add_argument("--q-lora-rank", type=n, default=None, help="MLA query rank (none: full q_proj)")
    g.add_argument("--kv-lora-rank", type=n, default=None, help="MLA kv latent rank (turns MLA on)")
    g.add_argument("--qk-nope-head-dim", type=n, default=None, help="MLA non-rotary q/k head dim")
    g.add_argument("--qk-rope-head-dim", type=n, default=None, help="MLA rotary q/k head dim")
    g.add_argument("--v-head-dim", type=n, default=None, help="MLA value head dim")
    parser.model_flags = g._group_actions  # for model_flag_words
    return g


def shell_word(value):
    """One word of a shell command: as it is when plain, else single-quoted."""
    text = str(value)
    if text and all(c.isalnum() or c in "-_./:=+" for c in text):
        return text
    return "'" + text.replace("'", "'\\''") + "'"


def model_flag_words(parser, args):
    """The model flags the user gave (or a config path), as words of a command another script of
    this family runs with the same meaning (one meaning per flag)."""
    words = []
    for a in parser.model_flags:
        v = getattr(args, a.dest)
        if v is None:
            continue
        name = next((o for o in a.option_strings if o.startswith("--")), a.option_strings[0])
        if isinstance(v, bool):
            if v or any(o.startswith("--no-") for o in a.option_strings):
                words.append(name if v else "--no-" + name[2:])
        else:
            words.append(f"{name} {shell_word(v)}")
    return words


def script_command(script, parser, args, *, words=(), last=()):
    """`python3 SCRIPT` with the model flags the user gave, `words`, --gpu as given, then `last`: a
    command another script of this family answers with the same meaning (one meaning per flag)."""
    gpu = [f"--gpu {shell_word(args.gpu)}"] if getattr(args, "gpu", None) else []
    return " ".join([f"python3 {script}"] + model_flag_words(parser, args) + list(words) + gpu + list(last))


def _num(x):
    """A bound or value as a user types it: 4096, 0.001, 1e18 (no '+', no zero-padded exponent)."""
    if isinstance(x, int) and abs(x) < 10 ** 6:
        return str(x)
    text = f"{x:g}" if float(f"{x:g}") == x else repr(float(x))  # 1.0000001 stays itself
    mant, _, exp = text.partition("e")
    return f"{mant}e{int(exp)}" if exp else mant


def _flag(parser, dest):
    return next(a.option_strings[0] for a in parser._actions if a.dest == dest)


def ranges_epilog(parser, ranges):
    """The --help line that lists each flag's range (from the table the checks use)."""
    import textwrap  # only --help needs it: build_parser passes this as a function (start-up time)
    return textwrap.fill("ranges (exit 2 outside): " + ", ".join(
        f"{_flag(parser, d)} {_num(lo)}..{_num(hi)}" for d, (lo, hi) in ranges.items()),
        100, break_on_hyphens=False)


def check_ranges(args, parser, ranges):
    """One parser.error (exit 2) for the first flag outside its (lo, hi) range, naming the bounds."""
    for dest, (lo, hi) in ranges.items():
        val = getattr(args, dest)
        if val is not None and not lo <= val <= hi:
            got = val if isinstance(val, int) else _num(val)
            parser.error(f"{_flag(parser, dest)} must be between {_num(lo)} and {_num(hi)}, got {got}")


def parse_tool_args(parser, argv):
    """parse_args, then refuse an empty --hf_model_name_or_path in one line (resolve_model_spec
    would read '' as "no config")."""
    args = parser.parse_args(argv)
    if args.hf_model_name_or_path == "":
        parser.error("--hf_model_name_or_path is empty: give a folder with config.json, a "
                     "config.json path or a hub id")
    return args


def add_output_args(parser, *, json_help="print the result dict as JSON"):
    """--json (the result dict) and --brief (one line: the headline number and its unit, for shell
    one-liners), one or the other."""
    g = parser.add_mutually_exclusive_group()
    g.add_argument("--json", action="store_true", help=json_help)
    g.add_argument("--brief", action="store_true",
                   help="print only the headline number and its unit, on one line (shell one-liners)")


def print_warnings(warnings, *, as_json):
    """A result's warnings, said once: in the report (its WARNING lines), or with --json, whose
    stdout is for machines, on stderr too (the JSON's "warnings" carries them as well)."""
    if as_json:
        for w in warnings:
            print(f"warning: {w}", file=sys.stderr)


def print_result(res, *, as_json, report, brief=None):
    """--json prints the result dict as indented JSON (json imported only then: start-up time),
    --brief the tool's one line (`brief`: the result to that line), else the tool's report."""
    if brief is not None:
        print(brief(res))
    elif as_json:
        import json
        print(json.dumps(res, indent=2))
    else:
        print(report(res))


def run_tool(main):
    """Run a tool's main() as a command; output piped into `head` or a pager that quit early ends
    the run quietly with status 141 (128 + SIGPIPE), as a shell tool does; stdout that cannot be
    written (a full disk, /dev/full, a closed file) is one line on stderr and exit 2."""
    try:
        main()
        sys.stdout.flush()
    except BrokenPipeError:
        sys.stdout = None
        sys.exit(141)
    except OSError as exc:
        import errno  # a stdout that cannot be written: a full disk or quota, an I/O error, a bad descriptor
        if exc.filename is not None or exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EBADF,
                                                          errno.EFBIG):
            raise  # not the output's failure
        sys.stdout = None  # nothing more to flush at exit
        prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "llmcalc"
        print(f"{prog}: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        sys.exit(2)


def load_hardware():
    """The accelerator table: the package's own hardware module when this runs from the installed
    package, else hardware.py beside the built script (ImportError when there is none)."""
    if __package__:
        import importlib
        return importlib.import_module(__package__.partition(".")[0] + ".hardware")
    import hardware
    return hardware


def accelerator_record(name, parser, *, without):
    """hardware.py's record for --gpu NAME. One-line exit 2 when the table is missing (`without`
    says which explicit flags to pass instead) or the name is unknown (the table's message)."""
    try:
        hardware = load_hardware()
    except ImportError:
        parser.error(f"--gpu needs hardware.py beside this script; {without}")
    try:
        return hardware.get_accelerator(name)
    except KeyError as exc:
        parser.error(str(exc.args[0]) if exc.args else f"unknown accelerator {name!r}")


# ======== llmcalc/model/kinds.py ==================================================================
# The vocabulary of layer kinds. A model is a list of layers. Each layer is a small dict
# {"attention": [attn, ...], "mlp": [mlp, ...], "norms": n, "extra_params": p} (p: matmul weights every
# token runs through once in that layer outside its attention and MLP, Gemma 4's per-layer inputs):
# usually one attention and one MLP, two of each in LongCat-Flash's shortcut-connected block. Layers
# of the same kinds share one dict object, so layer_groups() finds the distinct kinds quickly.
#
# An attention dict says what its weights are ("kind": mha covers MHA/GQA/MQA, mla is DeepSeek's
# latent attention), which keys a query sees ("span": full, sliding within "window", chunked within
# "chunk"), and its extras (rope, sinks, output gate, q/k norms, biases, a lightning "indexer" that
# picks top-k keys, with its own weights or none when it reuses an earlier layer's top-k,
# "kv_shared" when it reuses an earlier layer's K/V or latent, Mistral Large 4's per-head
# "position_scaling" and "indexer_input_norm", "v_dim" for values narrower than keys (MiMo-V2-Flash),
# "in_width" for q/k/v reading 2 h and "tied" for a block whose weights an earlier layer holds
# (Zamba's shared block), "extra_weights" for a family's non-matmul weights, "attn_experts" /
# "attn_topk" for JetMoE's routed q/o experts). Linear mixers by
# "kind": gdn, kda, mamba1, mamba2, shortconv, lightning (MiniMax-01), rwkv (RWKV-4), rglru (Griffin),
# mlstm (xLSTM). An MLP dict is "dense" (width, matrices, bias) or
# "moe" (routed experts, top-k, shared experts, router, zero experts). Per kind there is one
# function per quantity (model/formulas.py): attention_params, mlp_block_params,
# attention_linear_flops_per_token, attention_core_flops, query_key_pairs, mlp_flops_per_token,
# cache_elements_per_token, cached_tokens, decode_keys_read; totals are sums over the list.

# Chunk length of the chunked Gated DeltaNet algorithm: transformers' torch_chunk_gated_delta_rule
# and flash-linear-attention's chunk_gated_delta_rule both use 64 (Yang et al. 2024, arXiv 2412.06464).
GDN_CHUNK = 64


def layer_groups(spec):
    """[(layer, count, first_index)] for each distinct layer kind, in order of first appearance;
    kept on the spec for its layer list (scripts call this per pass: O(L) once, not per call)."""
    memo = spec.get("_layer_groups")
    if memo is not None and memo[0] is spec["layers"]:
        return memo[1]
    seen = {}
    for i, layer in enumerate(spec["layers"]):
        g = seen.get(id(layer))
        if g is None:
            seen[id(layer)] = [layer, 1, i]
        else:
            g[1] += 1
    out = [tuple(g) for g in seen.values()]
    spec["_layer_groups"] = (spec["layers"], out)
    return out


def attention_kind(attn):
    """A short label: full, sliding(4096), chunked(8192), mla, +nope, +sinks, +gate, +dsa(topk);
    a linear mixer by its kind and heads, gdn(16k/32v)."""
    if attn["kind"] == "mamba2":
        return f"mamba2({attn['heads']}x{attn['head_dim']}, N={attn['state_size']})"
    if attn["kind"] == "rwkv":
        return f"rwkv(D={attn['heads']})"
    if attn["kind"] == "mlstm":
        return f"mlstm({attn['heads']}x{attn['head_dim']}/{attn['v_head_dim']})"
    if attn["kind"] == "rglru":
        return f"rglru(W={attn['heads']}, K={attn['conv_kernel']})"
    if attn["kind"] in ("kda", "lightning"):
        return f"{attn['kind']}({attn['heads']}x{attn['head_dim']})"
    if attn["kind"] == "mamba1":
        return f"mamba(E={attn['heads']}, N={attn['state_size']})"
    if attn["kind"] == "shortconv":
        return f"shortconv(K={attn['conv_kernel']})"
    if attn["span"] == "state":
        return f"{attn['kind']}({attn['kv_heads']}k/{attn['heads']}v)"
    if attn["kind"] == "dsv4":
        c = {"csa": f" +csa(1/{attn['compress']}, top{attn['c_index_topk']})",
             "hca": f" +hca(1/{attn['compress']})"}.get(attn["compress_kind"], "")
        return f"dsv4 sliding({attn['window']}){c}"
    label = "mla" if attn["kind"] == "mla" else ("mha" if attn["kv_heads"] == attn["heads"] else
                                                 "mqa" if attn["kv_heads"] == 1 else "gqa")
    span = {"full": "", "sliding": f" sliding({attn['window']})", "chunked": f" chunked({attn['chunk']})"}
    label += span[attn["span"]]
    if not attn["rope"]:
        label += " nope"
    if attn["kv_shared"]:
        label += " kv-shared"
    if attn["sinks"]:
        label += " sinks"
    if attn["output_gate"] != "none":
        label += " gate"
    if attn.get("attn_experts"):
        label += f" moa({attn['attn_topk']}/{attn['attn_experts']})"
    if attn["index_topk"]:
        label += f" dsa(top{attn['index_topk']})" + ("" if attn["index_heads"] else " shared-topk")
    return label


def mlp_kind(mlp):
    if mlp["kind"] == "moe":
        z = f"+{mlp['zero_experts']}zero" if mlp["zero_experts"] else ""
        sh = " +shared" if mlp["shared_width"] else ""
        return f"moe {mlp['topk']}/{mlp['num_experts']}{z}{sh}"
    return f"dense {mlp['width']}"


# ======== llmcalc/model/hub.py ====================================================================
# Loading a model's config.json: a local folder or file, or a hub id (through transformers,
# imported lazily, never with trust_remote_code), with ModelOpt's hf_quant_config.json beside it.
# A file too large or too deeply nested to be a config is refused in one line.

CONFIG_MAX_BYTES = 16 << 20  # a config.json is a few KiB; anything past 16 MiB is not one
CONFIG_MAX_DEPTH = 64        # nesting deeper than this is not a model config


def _json_depth_ok(obj, limit):
    """True when `obj` nests at most `limit` containers deep (iterative: no recursion limit)."""
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, (dict, list)))
    return True


def load_hf_config(name_or_path):
    """Return a Hugging Face config as a dict: from a local folder or config.json with `json`
    alone, else from the hub through transformers.AutoConfig (imported only here, never with
    trust_remote_code). Raises ValueError with a one-line message. A local file must be a JSON
    object of at most CONFIG_MAX_BYTES, nested at most CONFIG_MAX_DEPTH deep."""
    if not str(name_or_path).strip():
        raise ValueError("--hf_model_name_or_path is empty: give a folder with config.json, a "
                         "config.json path or a hub id")
    path = os.path.expanduser(name_or_path)
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
        if not os.path.isfile(path):
            raise ValueError(f"no config.json in folder {name_or_path!r}")
    if os.path.isfile(path):
        import json  # imported where it is used: a run without a config never needs it
        try:
            if os.path.getsize(path) > CONFIG_MAX_BYTES:
                raise ValueError(f"{path!r} is over {CONFIG_MAX_BYTES >> 20} MiB: not a model config")
            with open(path, encoding="utf-8") as fh:
                cfg = json.load(fh)  # NaN/Infinity parse (transformers writes Infinity for some
                # unbounded limits); the typed reader refuses them in any field it reads
        except RecursionError:
            raise ValueError(f"{path!r} nests too deep to be a model config") from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            msg = str(exc).replace("\n", " ")
            raise ValueError(msg if msg.startswith(repr(path)) else f"cannot read {path!r}: {msg}") from None
        if not isinstance(cfg, dict):
            raise ValueError(f"{path!r} is not a JSON object")
        if not _json_depth_ok(cfg, CONFIG_MAX_DEPTH):
            raise ValueError(f"{path!r} nests more than {CONFIG_MAX_DEPTH} deep: not a model config")
        cfg.setdefault("_config_path", path)
        side = os.path.join(os.path.dirname(path), "hf_quant_config.json")
        if "quantization_config" not in cfg and os.path.isfile(side):
            cfg["quantization_config"] = _sidecar_quant_config(side)
        return cfg
    if os.path.exists(path):  # /dev/null, a pipe, a socket: never read, never a hub id
        raise ValueError(f"{name_or_path!r} is not a config file (neither a regular file nor a folder)")
    parts = name_or_path.split("/")  # a hub id is `name` or `org/name`; anything else is a path
    if name_or_path.endswith(".json") or name_or_path.startswith((".", "~")) or len(parts) > 2 \
            or "" in parts:
        raise ValueError(f"config file {name_or_path!r} not found")
    return _hub_config(name_or_path)


def _sidecar_quant_config(path):
    """ModelOpt's hf_quant_config.json beside a config.json that has no quantization_config
    (NVIDIA's *-FP8 / *-FP4 / *-NVFP4 checkpoints): {"producer": ..., "quantization": {"quant_algo",
    "group_size", "exclude_modules", ...}}, read as that checkpoint's weight format."""
    import json
    try:
        if os.path.getsize(path) > CONFIG_MAX_BYTES:
            raise ValueError("too large")
        with open(path, encoding="utf-8") as fh:
            qc = json.load(fh)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        msg = str(exc).replace("\n", " ")
        raise ValueError(f"cannot read {path!r} (the checkpoint's quantization): {msg}") from None
    if not isinstance(qc, dict) or not isinstance(qc.get("quantization"), dict) \
            or not _json_depth_ok(qc, CONFIG_MAX_DEPTH):
        raise ValueError(f"{path!r} has no \"quantization\" object: not ModelOpt's hf_quant_config.json")
    return qc


def _hub_config(repo_id):
    """A hub id's config through transformers.AutoConfig (never trust_remote_code), offline-first:
    the local Hugging Face cache; else one metadata request, given HF_HUB_ETAG_TIMEOUT (default 1 s)
    plus 0.5 s and no retries, then the download. Without network this fails in about a second, not
    after huggingface_hub's ~25 s of retries. transformers' advisories, the hub's warnings and
    progress bars stay off the screen. Raises ValueError with a one-line message."""
    import contextlib, importlib.util, io, logging, threading, warnings  # noqa: E401
    if importlib.util.find_spec("transformers") is None:
        raise ValueError(f"{repo_id!r} is not a local folder or file, and reading a hub id needs "
                         "`pip install transformers` (or pass a local config.json)")
    try:
        timeout_s = float(os.environ.get("HF_HUB_ETAG_TIMEOUT") or 1)
    except ValueError:
        timeout_s = 1.0
    timeout_s = timeout_s if 0 < timeout_s <= 600 else 1.0


    def first_line(exc):
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0]

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import huggingface_hub as hub
        for logger in ("huggingface_hub", "transformers"):  # loggers bound to the real stderr
            logging.getLogger(logger).setLevel(logging.ERROR)
        try:  # the cache alone: files, no request (hf_hub_download would send one even so)
            path = hub.try_to_load_from_cache(repo_id, "config.json")
        except Exception as exc:  # HFValidationError: not a repo id, which no request can fix
            raise ValueError(f"cannot load config {repo_id!r}: {first_line(exc)}") from None
        if not isinstance(path, str):  # not cached (None), or cached as missing from the repo
            url, answer = hub.hf_hub_url(repo_id, "config.json"), []

            def probe():  # in a thread, so that a DNS look-up that hangs cannot hold us
                try:
                    answer.append(hub.get_hf_file_metadata(url, timeout=timeout_s))
                except Exception as exc:
                    answer.append(exc)
            thread = threading.Thread(target=probe, daemon=True)
            thread.start()
            thread.join(timeout_s + 0.5)
            err = answer[0] if answer else TimeoutError(f"no answer within {timeout_s:g} s")
            status = getattr(getattr(err, "response", None), "status_code", None)
            if status is not None:  # the hub answered: no such repo or file, or no access
                raise ValueError(f"cannot load config {repo_id!r} from the hub: {type(err).__name__} "
                                 f"(HTTP {status}); check the id; a private or gated repo needs a "
                                 "token (HF_TOKEN)")
            if isinstance(err, Exception):  # no network, a firewall, HF_HUB_OFFLINE=1
                raise ValueError(
                    f"cannot load config {repo_id!r}: the hub is unreachable ({type(err).__name__}: "
                    f"{first_line(err)}) and it is not in the local cache; to work offline, download "
                    f"{url} and pass that file or its folder to --hf_model_name_or_path")
            try:
                path = hub.hf_hub_download(repo_id, "config.json")
            except Exception as exc:
                raise ValueError(f"cannot load config {repo_id!r} from the hub: "
                                 f"{first_line(exc)}") from None
            fetched = True
        else:
            fetched = False
        # ModelOpt checkpoints (nvidia/*-FP8, *-NVFP4) may keep their format only in
        # hf_quant_config.json beside config.json: from the cache (a snapshot download holds it),
        # else fetched along with a config.json fetched now; the hub's 404 is cached as "absent",
        # so a later offline run knows. A config.json cached alone by another tool leaves it unknown
        # (read as absent, as a local folder without the file is).
        try:
            side = hub.try_to_load_from_cache(repo_id, "hf_quant_config.json")
            if side is None and fetched:
                side = hub.hf_hub_download(repo_id, "hf_quant_config.json")
        except Exception as exc:  # the hub's 404: no sidecar; anything else leaves the format unknown
            if getattr(getattr(exc, "response", None), "status_code", None) != 404:
                raise ValueError(f"cannot load {repo_id!r}'s hf_quant_config.json (the checkpoint's "
                                 f"quantization) from the hub: {first_line(exc)}") from None
            side = None
        try:
            from transformers import AutoConfig
            logging.getLogger("transformers").setLevel(logging.ERROR)  # its import set WARNING
            cfg = AutoConfig.from_pretrained(path, trust_remote_code=False).to_dict()
        except Exception as exc:  # e.g. a model_type this transformers does not know
            raise ValueError(f"cannot load config {repo_id!r} ({path}): {first_line(exc)}") from None
    if "quantization_config" not in cfg and isinstance(side, str):
        cfg["quantization_config"] = _sidecar_quant_config(side)
    cfg.setdefault("_config_path", repo_id)
    return cfg


def _short(value):
    import json  # imported where it is used: a run without a config never needs it
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ======== llmcalc/model/reader.py =================================================================
# ConfigReader reads a config one field at a time, checking each field's type and range and
# naming the field and the file in its one-line error; the fields it did not read that could change
# a count become warnings. Also the layer_types pattern every family may state.

# Fields whose presence can change a count; an unread one becomes a warning in the result.
_COUNT_FIELD_HINTS = tuple("expert moe lora_rank head_dim intermediate num_hidden_layers "
                           "num_attention_heads key_value vocab hidden_size sliding window chunk "
                           "layer_types dense shared nextn mtp index_ sink gate per_layer kv_ "
                           "_layers ffn n_embd n_head n_layer".split())
_NEVER_COUNTS = set("max_position_embeddings num_labels use_cache output_router_logits "
                    "router_aux_loss_coef router_jitter_noise moe_aux_loss_coef aux_loss_alpha "
                    "seq_aux norm_topk_prob routed_scaling_factor topk_group n_group topk_method "
                    "scoring_func router_z_loss_coef moe_router_enable_expert_bias moe_capacity "
                    "moe_gate hidden_act hidden_activation mlp_only_layers_ initializer_range "
                    "use_sliding_window max_window_layers sliding_window_pattern "
                    "_sliding_window_pattern mlp_layer_types rope_interleave moe_norm_topk_prob "
                    "first_k_dense_replace router_temperature layer_norm_eps rms_norm_eps head_dim "
                    "gate_type final_logit_softcapping attn_logit_softcapping "
                    "query_pre_attn_scalar expert_capacity num_nextn_predict_layers moe_k "
                    "moe_num_experts moe_intermediate_size use_qk_norm interleave_moe_layer_step "
                    "moe_layer_freq decoder_sparse_step".split())


# The largest value ConfigReader accepts in a config field (a call's hi= wins): far past any real
# model, small enough that no count overflows into nonsense. Unlisted fields (widths, vocabularies,
# token counts) may hold up to 2^31, numbers read with num() up to 1e12.
_FIELD_MAX = {
    **dict.fromkeys((  # heads, head and state dims, experts, top-k, groups, chunk lengths
        "num_attention_heads n_head num_heads num_key_value_heads num_kv_heads num_attention_groups "
        "num_global_key_value_heads num_sliding_attention_heads head_dim global_head_dim "
        "qk_nope_head_dim qk_rope_head_dim v_head_dim index_n_heads index_head_dim num_local_experts "
        "num_experts n_routed_experts moe_num_experts num_shared_experts n_shared_experts "
        "moe_num_shared_experts zero_expert_num num_experts_per_tok num_experts_per_token moe_top_k "
        "top_k_experts moe_k moe_topk linear_num_key_heads linear_num_value_heads linear_key_head_dim "
        "linear_value_head_dim linear_num_heads linear_head_dim mamba_num_heads mamba_n_heads "
        "mamba_head_dim mamba_dt_rank mamba_d_state ssm_state_size n_groups mamba_n_groups chunk_size "
        "mamba_chunk_size hidden_size_per_layer_input compress_rate_csa compress_rate_hca o_groups "
        "compress_ratios group_size q_group_size weight_block_size").split(), 2**20),
    **dict.fromkeys((  # layer counts, layer indices and layer-pattern periods
        "num_hidden_layers n_layer num_layers first_k_dense_replace moe_layer_freq decoder_sparse_step "
        "interleave_moe_layer_step moe_layer_start_index moe_layer_end_index moe_layer_interval "
        "num_hash_layers num_kv_shared_layers max_window_layers full_attention_interval "
        "no_rope_layer_interval sliding_window_pattern _sliding_window_pattern attn_layer_period "
        "attn_layer_offset expert_layer_period expert_layer_offset index_topk_freq "
        "index_skip_topk_offset mlp_only_layers moe_layers kv_source_layers").split(), 100_000),
    **dict.fromkeys(("hidden_size n_embd n_embed d_model word_embed_proj_dim q_lora_rank kv_lora_rank "
                     "o_lora_rank moe_latent_size").split(), 2**24),
    **dict.fromkeys("conv_kernel linear_conv_kernel_dim mamba_d_conv conv_L_cache short_conv_kernel_size".split(),
                    4096),
    **dict.fromkeys("num_nextn_predict_layers num_mtp_layers mtp_num_layers mtp_num_hidden_layers".split(), 1000),
    "mamba_expand": 1e6,
}


class ConfigReader:
    """Typed, range-checked access to one config dict. Every field is checked as it is read (an
    integer where a count is meant, a boolean where a switch is meant, a finite number where a
    size is meant, at most its _FIELD_MAX); an error is one line naming the field and the file.
    Past the reader, the code can assume clean numbers. `used` records which fields were read."""

    def __init__(self, cfg, where, warnings_out=None):
        self.cfg, self.where, self.used = cfg, where, set()
        self.warnings_out = [] if warnings_out is None else warnings_out

    def fail(self, key, what, value):
        raise ValueError(f"{self.where}: field {key!r} {what}, got {_short(value)}")

    def has(self, key):
        return self.cfg.get(key) is not None

    def pick(self, *keys):
        """(key, value) of the first given non-null key; two given spellings that disagree are an
        error naming both."""
        self.used.update(keys)
        found = [(k, self.cfg[k]) for k in keys if self.cfg.get(k) is not None]
        if not found:
            return None, None
        k0, v0 = found[0]
        for k, v in found[1:]:
            if v != v0:
                raise ValueError(f"{self.where}: fields {k0!r} ({_short(v0)}) and {k!r} ({_short(v)}) "
                                 "disagree; keep one")
        return k0, v0

    def int(self, *keys, default=None, lo=1, hi=None):
        k, v = self.pick(*keys)
        if k is None:
            return default
        hi = _FIELD_MAX.get(k, 2**31) if hi is None else hi
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail(k, "must be an integer", v)
        if not lo <= v <= hi:
            self.fail(k, f"must be between {lo:,} and {hi:,}", v)
        return v

    def num(self, *keys, default=None, lo=0.0, hi=None):
        k, v = self.pick(*keys)
        if k is None:
            return default
        hi = _FIELD_MAX.get(k, 1e12) if hi is None else hi
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or not lo <= v <= hi:
            self.fail(k, f"must be a finite number between {lo:g} and {hi:g}", v)
        return v

    def bool(self, *keys, default=None):
        k, v = self.pick(*keys)
        if k is None:
            return default
        if not isinstance(v, bool):
            self.fail(k, "must be true or false", v)
        return v

    def str(self, *keys, default=None, choices=None):
        k, v = self.pick(*keys)
        if k is None:
            return default
        if not isinstance(v, str) or (choices is not None and v not in choices):
            self.fail(k, "must be " + (f"one of {', '.join(choices)}" if choices else "a string"), v)
        return v

    def int_list(self, key, *, lo=0, hi=None, length=None, default=None):
        k, v = self.pick(key)
        if k is None:
            return default
        hi = _FIELD_MAX.get(k, 2**31) if hi is None else hi
        if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int) or not lo <= x <= hi
                                          for x in v):
            self.fail(k, f"must be a list of integers between {lo} and {hi:,}", v)
        if length is not None and len(v) != length:
            self.fail(k, f"must list {length} values", v)
        return list(v)

    def str_list(self, key, *, choices, length=None, default=None):
        k, v = self.pick(key)
        if k is None:
            return default
        if not isinstance(v, list) or any(not isinstance(x, str) for x in v):
            self.fail(k, "must be a list of strings", v)
        bad = sorted({x for x in v if x not in choices})
        if bad:
            self.fail(k, f"has layer kinds this script does not know ({', '.join(bad)}); known: "
                      + ", ".join(sorted(choices)), v)
        if length is not None and len(v) < length:
            self.fail(k, f"lists {len(v)} layers, fewer than the {length} needed", v)
        return list(v[:length] if length is not None else v)

    def sub(self, key):
        """A nested config dict (text_config, quantization_config, rope_parameters), or None."""
        k, v = self.pick(key)
        if k is None:
            return None
        if not isinstance(v, dict):
            self.fail(k, "must be a JSON object", v)
        return v

    def unread_count_fields(self):
        """Fields present in the config, never read, whose name suggests they change a count."""
        out = []
        for key, val in self.cfg.items():
            if key in self.used or key in _NEVER_COUNTS or key.startswith("_") or val in (None, False, 0, [], {}):
                continue
            if any(hint in key for hint in _COUNT_FIELD_HINTS) and not key.endswith(("_eps", "_dropout")):
                out.append(key)
        return sorted(out)


_LAYER_TYPE_NAMES = {"full_attention": "full", "sliding_attention": "sliding",
                     "chunked_attention": "chunked", "attention": "full", "linear_attention": "linear"}


def _layer_pattern(r, L, s):
    """Per-layer attention span list (full/sliding/chunked) from transformers 5's layer_types, or
    None when every layer is alike."""
    names = dict(_LAYER_TYPE_NAMES)
    if not s.get("linear_mixer"):
        del names["linear_attention"]  # only a family whose reader knows its linear layers has them
    lt = r.str_list("layer_types", choices=set(names), length=L)
    if lt is None:
        return None
    return [names[t] for t in lt]


# ======== llmcalc/model/families_moe.py ===========================================================
# Family readers for MoE and latent-attention decoders (DeepSeek-V2/V3/V3.2/V4 and MLA, gpt-oss,
# Llama 4, GLM-4.5/5 with DSA, Mistral Large 4, MiniMax-M2, ERNIE 4.5, Hunyuan, LongCat-Flash,
# Step-3.5, GraniteMoE, PhiMoE), and the helpers they share (MLA fields, MTP layers, MoE patterns).

_DSV4_RATIO = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}


def _hyper_connection_layer_fields(*, hc, h):
    """Per layer, DeepSeek-V4's manifold-constrained hyper-connections over hc residual streams of
    width h (transformers' modeling_deepseek_v4; GLM-5-Next's layers have the same): two mixing
    modules, each a projection of the hc h concatenated streams to (2 + hc) hc mixing weights, its
    (2 + hc) hc biases and 3 scales. FLOPs per token and module: that projection (2 (2 + hc) hc^2 h)
    and comb^T @ streams (2 hc^2 h). The spec fields a reader sets from them."""
    return {"extra_params_per_layer": 2 * ((2 + hc) * hc * hc * h + (2 + hc) * hc + 3),
            "extra_flops_per_layer": 2 * (2 * (2 + hc) * hc * hc * h + 2 * hc * hc * h),
            "residual_streams": hc}


def _read_deepseek_v4(r, s, ll, notes, warnings):
    """DeepSeek-V4: every layer sliding-window attention over one shared K = V head with sinks,
    and, per layer_types (else the legacy per-layer compress_ratios 0 / 4 / 128, else two heavily
    compressed layers then compressed sparse and heavily compressed alternating), a compressor
    of rate compress_rates[kind] (4 and 128 by default) with, on compressed sparse layers, a
    lightning indexer. Every layer MoE with one shared expert of moe_intermediate_size
    (n_shared_experts is not read by transformers), the first num_hash_layers hash-routed (their
    router still has weights; the hash table is a buffer). Manifold-constrained hyper-connections:
    hc_mult residual streams, two mixing modules per layer and one before the head. The head is
    tied only with tie_word_embeddings; the MTP layer is not built."""
    L, h = s["num_layers"], s["hidden_size"]
    n_cfg = r.int("num_hidden_layers")
    s.update(ll, qkv_bias=False, attn_out_bias=False, mlp_bias=r.bool("mlp_bias", default=False),
             norms_per_layer=2, head_dim=r.int("head_dim", default=512), num_kv_heads=1)
    r.bool("attention_bias", default=False)  # read, not used by transformers
    rates = dict(r.sub("compress_rates") or {})
    csa_rate = r.int("compress_rate_csa", default=None) or rates.get("compressed_sparse_attention", 4)
    hca_rate = r.int("compress_rate_hca", default=None) or rates.get("heavily_compressed_attention", 128)
    for v in (csa_rate, hca_rate):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 2**20:
            raise ValueError(f"{r.where}: compress_rates must hold positive integers, got {_short(v)}")
    names = {"sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"}
    if r.has("layer_types"):
        lt = r.str_list("layer_types", choices=names, length=L)
    elif r.has("compress_ratios"):
        ratios = r.int_list("compress_ratios")
        bad = sorted({x for x in ratios if x not in _DSV4_RATIO})
        if bad:
            r.fail("compress_ratios", f"may hold only 0, 4 and 128 (transformers' legacy map; {bad} is not)",
                   ratios)
        if len(ratios) < L:
            r.fail("compress_ratios", f"lists {len(ratios)} layers, fewer than the {L} needed", ratios)
        lt = [_DSV4_RATIO[x] for x in ratios[:L]]
    else:
        lt = ["heavily_compressed_attention"] * min(n_cfg, 2) + [
            "compressed_sparse_attention" if i % 2 else "heavily_compressed_attention" for i in range(max(n_cfg - 2, 0))]
        lt = lt[:L]
    W = r.int("sliding_window", default=128)
    base = {"kind": "dsv4", "kv_proj": 1, "sinks": True, "q_lora_rank": r.int("q_lora_rank", default=1024),
            "o_groups": r.int("o_groups", default=8), "o_lora_rank": r.int("o_lora_rank", default=1024),
            "c_index_heads": 0, "c_index_head_dim": 0, "c_index_topk": 0, "compress": 0, "compress_kind": "none"}
    if (s["num_attention_heads"] * s["head_dim"]) % base["o_groups"]:
        raise ValueError(f"{r.where}: num_attention_heads x head_dim is not divisible by o_groups {base['o_groups']}")
    kinds = {"sliding_attention": {"attention": dict(base)},
             "heavily_compressed_attention": {"attention": dict(base, compress=hca_rate, compress_kind="hca")},
             "compressed_sparse_attention": {"attention": dict(
                 base, compress=csa_rate, compress_kind="csa",
                 c_index_heads=r.int("index_n_heads", default=64),
                 c_index_head_dim=r.int("index_head_dim", default=128),
                 c_index_topk=r.int("index_topk", default=512))}}
    hc = r.int("hc_mult", default=4, hi=1024)
    s.update(layer_types=["sliding"] * L, sliding_window=W,
             layer_overrides={i: kinds[t] for i, t in enumerate(lt)},
             **_hyper_connection_layer_fields(hc=hc, h=h),
             other_params={"hc_head": hc * hc * h + hc + 1}, input_matmul_params=hc * hc * h)
    f_e = r.int("moe_intermediate_size", default=2048)
    r.str_list("mlp_layer_types", choices={"moe", "hash_moe"}, length=L)  # checked: every layer MoE
    r.int("num_hash_layers", lo=0, default=3)  # hash routing: same weights as top-k routing
    r.int("n_shared_experts", lo=0, default=1)  # not read by transformers: one shared expert
    s.update(moe=True, num_experts=r.int("n_routed_experts", default=256),
             topk=r.int("num_experts_per_tok", default=6), moe_ffn_hidden_size=f_e,
             num_shared_experts=1, shared_expert_ffn_hidden_size=f_e, router_bias=False, expert_bias=False,
             moe_layer_set=list(range(L)))
    r.used.update(("compress_ratios", "qk_rope_head_dim", "partial_rotary_factor", "expert_dtype", "swiglu_limit",
                   "hc_sinkhorn_iters"))
    _note_mtp(r, s)


def _read_step3p5(r, s, ll, notes, warnings):
    """Step 3.5/3.7 (transformers' step3p5 text model, inside the step3p7 wrapper): full and sliding
    attention layers (layer_types; sliding layers may have more query heads: num_sliding_attention_heads,
    the legacy attention_other_setting, or per_layer_config), per-head q/k RMSNorms and a head-wise
    sigmoid output gate (g_proj h -> heads) on every layer; dense gated MLPs on the first layers and MoE
    after them (mlp_layer_types, the legacy moe_layers_enum, else MoE from layer 3 on) with one ungated
    shared expert of share_expert_dim; the router's correction bias is a buffer. Per-layer lists
    padded with the MTP layers (num_nextn_predict_layers) are cut to the layers; the MTP layers are
    not built."""
    L = s["num_layers"]
    n_cfg = r.int("num_hidden_layers") or L
    a = s["num_attention_heads"]
    s.update(ll, qk_norm="head", attn_output_gate="headwise",
             num_kv_heads=r.int("num_key_value_heads", "num_attention_groups", default=a),
             head_dim=r.int("head_dim", default=128))
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=r.bool("mlp_bias", default=False))
    n_mtp = r.int("num_nextn_predict_layers", "num_mtp_layers", lo=0, default=0)
    lt = r.str_list("layer_types", choices={"full_attention", "sliding_attention"}, length=n_cfg)
    lt = (lt or ["full_attention"] * n_cfg)[:L]
    s["layer_types"] = ["sliding" if t == "sliding_attention" else "full" for t in lt]
    if "sliding" in s["layer_types"]:
        s["sliding_window"] = r.int("sliding_window")
    other = r.sub("attention_other_setting") or {}
    n_slide = (r.int("num_sliding_attention_heads", default=None)
               or ConfigReader(other, f"{r.where} (attention_other_setting)").int("num_attention_heads", default=a))
    plc = r.sub("per_layer_config") or {}
    over, by_heads = {}, {}
    for i, t in enumerate(lt):
        heads = n_slide if t == "sliding_attention" else a
        key = str(i) if str(i) in plc else next((k for k in plc if isinstance(k, str) and k.isdigit() and int(k) == i), None)
        if key is not None:
            if not isinstance(plc[key], dict):
                r.fail("per_layer_config", "must map layer numbers to objects", plc)
            heads = ConfigReader(plc[key], f"{r.where} (per_layer_config {key})").int("num_attention_heads",
                                                                                         default=heads)
        if heads != a:  # one override object per head count, so layers of a kind stay one layer dict
            over[i] = by_heads.setdefault(heads, {"attention": {"heads": heads}})
    if any(v["attention"]["heads"] % s["num_kv_heads"] for v in over.values()):
        raise ValueError(f"{r.where}: sliding layers' query heads are not a multiple of the kv heads")
    s["layer_overrides"] = over
    if r.has("mlp_layer_types"):
        mlt = r.str_list("mlp_layer_types", choices={"dense", "sparse"}, length=n_cfg)[:L]
        moe = [i for i, t in enumerate(mlt) if t == "sparse"]
    elif r.has("moe_layers_enum"):
        raw = r.cfg["moe_layers_enum"]
        items = raw.split(",") if isinstance(raw, str) else raw
        if not isinstance(items, list) or any(not str(x).strip().isdigit() for x in items if str(x).strip()):
            r.fail("moe_layers_enum", "must list layer numbers", raw)
        r.used.add("moe_layers_enum")
        moe = sorted({int(x) for x in items if str(x).strip()} & set(range(L)))
    else:
        moe = list(range(3, L))
    E = r.int("n_routed_experts", "moe_num_experts", default=288)
    sh = r.int("share_expert_dim", "share_expert_dims", lo=0, default=1280)
    s.update(moe=bool(moe), num_experts=E, topk=r.int("num_experts_per_tok", "moe_top_k", default=8),
             moe_ffn_hidden_size=r.int("moe_intermediate_size", default=1280),
             num_shared_experts=1 if sh else 0, shared_expert_ffn_hidden_size=sh, shared_expert_gate=False,
             router_bias=False, expert_bias=False, moe_layer_set=moe)
    r.used.update(("num_local_experts", "num_attention_heads"))  # a stale class field: transformers reads n_routed_experts
    if n_mtp:
        s["mtp_layers_not_built"] = n_mtp
        warnings.append(f"{n_mtp} multi-token-prediction layer(s) (num_nextn_predict_layers) are in the "
                        "checkpoint but not counted: transformers does not build them in the model")
    r.used.update(("sparse_attention_config", "mtp_layer_types", "mtp_mlp_layer_types", "swiglu_limits",
                   "swiglu_limits_shared", "partial_rotary_factors", "query_pre_attn_scalar"))


def _read_deepseek(r, s):
    """DeepSeek-V2/V3 (and the families built on them): MLA when kv_lora_rank is set, routed and
    shared experts on every layer from first_k_dense_replace on (transformers 5 does not read
    moe_layer_freq)."""
    L = s["num_layers"]
    E = r.int("n_routed_experts", "num_local_experts", "num_experts")
    f_e = r.int("moe_intermediate_size")
    n_sh = r.int("n_shared_experts", lo=0, default=0)
    fkd = r.int("first_k_dense_replace", lo=0, default=0)
    r.int("moe_layer_freq", default=1)  # checked, but transformers 5 builds MoE on every i >= fkd
    s.update(moe=bool(E), num_experts=E, topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=f_e, num_shared_experts=n_sh,
             shared_expert_ffn_hidden_size=n_sh * (f_e or 0), router_bias=False,
             moe_layer_set=[i for i in range(L) if i >= fkd] if E else None)
    _read_mla(r, s)
    _note_mtp(r, s)


def _read_mla(r, s):
    r_kv = r.int("kv_lora_rank")
    if r_kv:
        s.update(kv_lora_rank=r_kv, q_lora_rank=r.int("q_lora_rank"),
                 qk_nope_head_dim=r.int("qk_nope_head_dim"),
                 qk_rope_head_dim=r.int("qk_rope_head_dim", lo=0),  # 0: no rotary slice (GLM-5-Next)
                 v_head_dim=r.int("v_head_dim"), head_dim=None)
        r.used.add("qk_head_dim")  # derived: qk_nope_head_dim + qk_rope_head_dim


def _note_mtp(r, s):
    n = r.int("num_nextn_predict_layers", "num_mtp_layers", "mtp_num_layers", lo=0, default=0)
    if n:
        s["mtp_layers_not_built"] = n
        r.warnings_out.append(f"{n} multi-token-prediction layer(s) (num_nextn_predict_layers) are in the "
                              "checkpoint but not counted: transformers does not build them in the model")


def _mlp_pattern(r, L, default_dense):
    """MoE layer indices from transformers 5's mlp_layer_types ("dense"/"sparse"), else the family's
    default rule (a list of dense indices)."""
    mlt = r.str_list("mlp_layer_types", choices={"dense", "sparse", "moe"}, length=L)
    if mlt is not None:
        return [i for i, t in enumerate(mlt) if t != "dense"]
    return [i for i in range(L) if i not in set(default_dense)]


def _read_gpt_oss(r, s, ll, notes, warnings):
    """gpt-oss: every layer MoE (router with bias, experts with biases), biased attention with a
    sink logit per head, alternating sliding (even) and full (odd) layers."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=True)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=True, attention_sinks=True, router_has_bias=True,
             head_dim=r.int("head_dim", default=64), moe=True,
             num_experts=r.int("num_local_experts", "num_experts"),
             topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=ll["ffn_hidden_size"],
             moe_layer_set=list(range(L)))
    r.used.add("experts_per_token")  # HF reads num_experts_per_tok only
    if not r.has("layer_types"):
        s["layer_types"] = ["sliding" if i % 2 == 0 else "full" for i in range(L)]


def _read_llama4(r, s, ll, notes, warnings):
    """Llama 4: chunked attention on rotary layers, every 4th layer NoPE and full; MoE layers every
    interleave_moe_layer_step-th (or `moe_layers`), each with one shared expert of the expert width;
    dense layers of width intermediate_size_mlp; q/k L2 norms without weights."""
    L = s["num_layers"]
    s.update(ll)
    f = ll["ffn_hidden_size"]
    s.update(ffn_hidden_size=r.int("intermediate_size_mlp", default=f),
             qk_norm="l2" if r.bool("use_qk_norm", default=True) else "none",
             attention_chunk_size=r.int("attention_chunk_size"))
    nrl = r.int_list("no_rope_layers", lo=0, hi=1, default=None)
    interval = r.int("no_rope_layer_interval", default=4)
    if not nrl:
        nrl = [int((i + 1) % interval != 0) for i in range(L)]
    elif len(nrl) < L:
        r.fail("no_rope_layers", f"must list {L} layers", nrl)
    s["nope_layers"] = [i for i in range(L) if not nrl[i]]
    if not r.has("layer_types"):
        span = "chunked" if s["attention_chunk_size"] else "full"
        s["layer_types"] = [span if nrl[i] else "full" for i in range(L)]
    E = r.int("num_local_experts", "num_experts")
    step = r.int("interleave_moe_layer_step", default=1)
    moe = r.int_list("moe_layers", default=None)
    s.update(moe=bool(E), num_experts=E, topk=r.int("num_experts_per_tok", default=1),
             moe_ffn_hidden_size=f, num_shared_experts=1, shared_expert_ffn_hidden_size=f,
             moe_layer_set=moe if moe is not None else list(range(step - 1, L, step)))


def _read_glm4_moe(r, s, ll, notes, warnings):
    """GLM-4.5 (glm4_moe): head_dim as given, biased q/k/v (never o), optional per-head q/k norms,
    dense layers before first_k_dense_replace, then routed + shared experts (moe_layer_freq is not
    read by transformers)."""
    L = s["num_layers"]
    s.update(ll)
    s.update(qkv_bias=r.bool("attention_bias", default=False), attn_out_bias=False,
             qk_norm="head" if r.bool("use_qk_norm", default=False) else "none")
    _read_routed_shared(r, s, L, dense=range(r.int("first_k_dense_replace", lo=0, default=1)))
    r.used.add("moe_layer_freq")
    _note_mtp(r, s)


def _read_routed_shared(r, s, L, dense):
    E = r.int("n_routed_experts", "num_local_experts", "num_experts")
    f_e = r.int("moe_intermediate_size")
    n_sh = r.int("n_shared_experts", "num_shared_experts", lo=0, default=0)
    s.update(moe=bool(E), num_experts=E, topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=f_e,
             num_shared_experts=n_sh, shared_expert_ffn_hidden_size=n_sh * (f_e or 0),
             moe_layer_set=_mlp_pattern(r, L, dense) if E else None)


def _read_one_shared_expert(r, s, moe_layer_set, **extra):
    """Routed experts (num_experts of moe_intermediate_size, top num_experts_per_tok) with at most one
    ungated shared expert of shared_expert_intermediate_size (absent or 0: none) on moe_layer_set's
    layers (Laguna, Flint, Lara-mini); `extra`: the family's other MoE fields."""
    sh = r.int("shared_expert_intermediate_size", lo=0, default=0)
    s.update(moe=True, num_experts=r.int("num_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=r.int("moe_intermediate_size"), num_shared_experts=1 if sh else 0,
             shared_expert_ffn_hidden_size=sh, moe_layer_set=moe_layer_set, **extra)


def _read_dsa_every_layer(r, s, ll, notes, warnings):
    """_read_dsa for a family whose layer_types mixes indexed layers with its own kinds (dots3,
    GLM-5-Next): read the MLA and indexer fields as if every layer were indexed; the caller then
    sets the layer kinds from its own layer_types."""
    orig = r.cfg
    r.cfg = {**orig, "layer_types": ["indexed_attention"] * s["num_layers"]}
    try:
        _read_dsa(r, s, ll, notes, warnings)
    finally:
        r.cfg = orig


def _read_dsa(r, s, ll, notes, warnings):
    """DeepSeek-V3.2 (deepseek_v32) and GLM-5 (glm_moe_dsa): MLA with a lightning indexer that picks
    index_topk keys per query (DeepSeek-AI 2025, sec. 2.1); GLM-5's `indexer_types` "shared" layers
    reuse the previous layer's top-k and have no indexer weights or keys of their own."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    _read_routed_shared(r, s, L, dense=range(r.int("first_k_dense_replace", lo=0, default=3)))
    _read_mla(r, s)
    if not s.get("q_lora_rank"):
        raise ValueError(f"{r.where}: {s['model_type']} needs q_lora_rank (the indexer reads the query latent)")
    r.str_list("layer_types", choices={"indexed_attention", "deepseek_sparse_attention", "full_attention"},
               length=L)
    s["layer_types"] = None
    H, dI, k = (r.int("index_n_heads", hi=2**16), r.int("index_head_dim"), r.int("index_topk"))
    if None in (H, dI, k):
        raise ValueError(f"{r.where}: sparse attention needs index_n_heads, index_head_dim and index_topk")
    s.update(index_n_heads=H, index_head_dim=dI, index_topk=k)
    shared = _indexer_shared_layers(r, s, L)
    if shared is not None:
        s["layer_overrides"] = {i: {"attention": {"index_heads": 0, "index_head_dim": 0}} for i in shared}
    _note_mtp(r, s)


def _read_axk2(r, s, ll, notes, warnings):
    """A.X K2 (transformers' modeling_axk2): DeepSeek-V3.2's indexed attention (MLA, a lightning
    indexer on every layer) whose query up-projection (q_gate_proj) reads [norm(c_q), c_q] (2 r_q)
    and also writes an elementwise sigmoid output gate (a d_v); gated RMSNorms: the norm's weight
    (h) and a low-rank gate MLP h -> gated_norm_rank -> h, before attention on every layer and
    before the MLP on MoE layers (a plain RMSNorm before a dense MLP). The gate MLPs are matmuls
    every token runs (extra_params: 2 FLOPs per weight). mlp_layer_types picks dense and MoE
    layers (one shared expert; the router's correction bias is a buffer, not a weight)."""
    _read_dsa(r, s, ll, notes, warnings)
    L, h, g = s["num_layers"], s["hidden_size"], r.int("gated_norm_rank", default=16)  # AXK2Config default
    s["attn_output_gate"] = "elementwise"
    moe = set(s.get("moe_layer_set") or ())
    over = s.get("layer_overrides") or {}
    for i in range(L):
        o = over.setdefault(i, {})
        o["attention"] = dict(o.get("attention", {}), q_latent_concat=True)
        o["extra_params"] = 2 * h * g * (2 if i in moe else 1)
    s["layer_overrides"] = over


def _indexer_shared_layers(r, s, L):
    """Layers whose attention reuses the previous layer's top-k (no indexer of their own): from
    indexer_types, else index_topk_pattern ("F"/"S" per layer), else GLM-5's index_topk_freq /
    index_skip_topk_offset rule; None when every layer has its own indexer."""
    it = r.pick("indexer_types")[1]
    pattern = r.pick("index_topk_pattern")[1]
    if it is None and pattern is not None:
        it = ["full" if c in "Ff" else "shared" for c in pattern] if isinstance(pattern, str) else pattern
    if it is None and s["model_type"] in ("glm_moe_dsa", "mistral_large4_text"):
        freq = max(r.int("index_topk_freq", default=1), 1)
        off = r.int("index_skip_topk_offset", lo=0, default=2)
        it = ["full" if max(i - off + 1, 0) % freq == 0 else "shared" for i in range(L)]
    if it is not None:
        if not isinstance(it, list) or len(it) < L or any(x not in ("full", "shared") for x in it[:L]):
            r.fail("indexer_types", f"must list 'full' or 'shared' for each of the {L} layers", it)
        if it[0] == "shared":
            r.fail("indexer_types", "layer 0 has no earlier layer to share top-k indices with", it)
        return [i for i in range(L) if it[i] == "shared"]
    return None


def _read_mistral_large4(r, s, ll, notes, warnings):
    """Mistral Large 4 (mistral_large4_text): DSA as GLM-5's, with changes. MLA without a query
    bottleneck (q directly from h); the indexer's queries come from the hidden state through a
    LayerNorm (2 h); attention and indexer queries get a learned scale and bias per head (2 per
    head, scaled by log position); NoPE layers (no_rope_layers: 0) have no rotary slice, so their
    kv down-projection and latent drop d_rope and their up-projection adds it to the no-position
    keys; a layer whose kv_source_layers entry names an earlier layer reuses that layer's latent
    (no kv down-projection, norm or latent cache of its own; its indexer keeps its own keys)."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    _read_routed_shared(r, s, L, dense=range(r.int("first_k_dense_replace", lo=0, default=1)))
    _read_mla(r, s)
    if s.get("q_lora_rank"):
        r.fail("q_lora_rank", "Mistral Large 4 has no query bottleneck (transformers builds q_proj from h)",
               s["q_lora_rank"])
    r.str_list("layer_types", choices={"indexed_attention", "full_attention"}, length=L)
    s["layer_types"] = None
    H, dI, k = (r.int("index_n_heads", default=32, hi=2**16), r.int("index_head_dim", default=128),
                r.int("index_topk", default=2048))
    s.update(index_n_heads=H, index_head_dim=dI, index_topk=k, attn_position_scaling=True,
             indexer_input_norm=True, nope_layers=_nope_from_interval(r, L))
    L_cfg = r.int("num_hidden_layers", "num_layers") or L  # -l keeps the first L of them
    src = (r.int_list("kv_source_layers", lo=0, length=L_cfg) or list(range(L_cfg)))[:L]
    for i, j in enumerate(src):
        if j > i or src[j] != j:
            r.fail("kv_source_layers", f"layer {i} must reuse an earlier layer that owns its cache, got {j}", src)
    r.used.update(("final_logit_softcapping", "qk_head_dim"))
    shared_index = set(_indexer_shared_layers(r, s, L) or ())
    nope = set(s["nope_layers"])
    d_nope, d_rope = s["qk_nope_head_dim"], s["qk_rope_head_dim"]
    over = {}
    for i in range(L):
        a = {}
        if i in nope:
            a.update(qk_rope_head_dim=0, qk_nope_head_dim=d_nope + d_rope)
        if src[i] != i:
            a["kv_shared"] = True
        if i in shared_index:
            a.update(index_heads=0, index_head_dim=0)
        if a:
            over[i] = {"attention": a}
    s["layer_overrides"] = over
    # LeRoPE (transformers 5.24): a learned log-scale per rotary frequency, d_rope / 2 of them, one
    # table for the model (MistralLarge4TextRotaryEmbedding.alpha)
    s["other_params"] = {"rotary_alpha": d_rope // 2}
    _note_mtp(r, s)


def _read_minimax_m2(r, s, ll, notes, warnings):
    """MiniMax-M2: every layer MoE with experts of width intermediate_size, no shared expert, q/k
    RMSNorms over the whole projection width, no biases; full attention on every layer."""
    L = s["num_layers"]
    s.update(ll)
    s.update(qk_norm="full", moe=True, head_dim=r.int("head_dim", default=128), num_experts=r.int("num_local_experts", "num_experts"),
             topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=ll["ffn_hidden_size"],
             moe_layer_set=list(range(L)), layer_types=None)
    r.used.update(("sliding_window", "attn_type_list", "rotary_dim"))
    s["sliding_window"] = None


def _read_ernie45_moe(r, s, ll, notes, warnings):
    """ERNIE-4.5 MoE: MoE on layers moe_layer_start_index..end every moe_layer_interval-th, shared
    experts, biases everywhere with use_bias (the head's bias too, even when tied), and an expert
    score-correction bias that transformers keeps as a parameter."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("use_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias)
    E = r.int("moe_num_experts", "num_experts")
    start = r.int("moe_layer_start_index", lo=-1, default=1)
    end = r.int("moe_layer_end_index", lo=-1, default=-1)
    end = L - 1 if end == -1 else end
    step = r.int("moe_layer_interval", default=1)
    f_e = r.int("moe_intermediate_size", default=ll["ffn_hidden_size"])
    n_sh = r.int("moe_num_shared_experts", lo=0, default=0)
    s.update(moe=bool(E), num_experts=E, topk=r.int("moe_k", "num_experts_per_tok"),
             moe_ffn_hidden_size=f_e, num_shared_experts=n_sh, shared_expert_ffn_hidden_size=n_sh * f_e,
             expert_bias=False, router_has_bias=bool(E),
             moe_layer_set=[i for i in range(L) if (i + 1) % step == 0 and start <= i <= end] if E else None)
    if bias:
        s["other_params"] = {"lm_head_bias": s["vocab_size"]}


def _read_hy_v3(r, s, ll, notes, warnings):
    """HY-V3: per-head q/k norms, layer 0 dense then MoE (mlp_layer_types), a shared expert whose
    width is num_shared_experts x moe_intermediate_size, or intermediate_size when that is 0."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=r.bool("mlp_bias", default=False), qk_norm="head",
             head_dim=r.int("head_dim", default=128), expert_bias=False)
    E = r.int("num_experts", "num_local_experts")
    f_e = r.int("moe_intermediate_size")
    n_sh = r.int("num_shared_experts", lo=0, default=1)
    s.update(moe=bool(E), num_experts=E, topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=f_e,
             num_shared_experts=max(n_sh, 1), shared_expert_ffn_hidden_size=n_sh * f_e if n_sh else ll["ffn_hidden_size"],
             moe_layer_set=_mlp_pattern(r, L, [0]) if E else None)
    _note_mtp(r, s)


def _read_longcat(r, s, ll, notes, warnings):
    """LongCat-Flash: each of num_layers layers holds two MLA blocks, two dense MLPs and one MoE of
    E real experts plus Z zero-computation experts that a router over E + Z picks k from (LongCat-
    Flash tech report, sec. 2). transformers allocates gate_up_proj rows for the zero experts too
    (E + Z of them, never used); the count here is the weights the checkpoint holds."""
    h = s["hidden_size"]
    L_cfg = r.int("num_layers")
    if r.has("num_hidden_layers"):  # transformers: num_hidden_layers = 2 x num_layers, and it wins
        L_hf = r.int("num_hidden_layers", hi=200_000)
        if L_cfg and L_hf != 2 * L_cfg:
            warnings.append(f"num_hidden_layers {L_hf} is not 2 x num_layers {L_cfg}; transformers takes "
                            f"num_hidden_layers // 2 = {L_hf // 2} layers, and so does this count")
        L_cfg = L_hf // 2
    L = s["num_layers"] if s.get("_layers_from_flag") else L_cfg
    s["num_layers"] = L
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    E = r.int("n_routed_experts", "num_local_experts")
    Z = r.int("zero_expert_num", lo=0, default=0) or 0
    f_e = r.int("expert_ffn_hidden_size", "moe_intermediate_size")
    f = r.int("ffn_hidden_size", "intermediate_size")
    s.update(qkv_bias=bias, attn_out_bias=bias, ffn_hidden_size=f, moe=True, num_experts=E, zero_experts=Z,
             topk=r.int("moe_topk", "num_experts_per_tok"), moe_ffn_hidden_size=f_e,
             router_has_bias=r.bool("router_bias", default=False), moe_layer_set=list(range(L)))
    _read_mla(r, s)
    dense = {"kind": "dense", "width": f, "linears": 3, "bias": False}
    s["layer_overrides"] = {i: {"more_attention": ({},), "more_mlp": (dense, dense), "norms": 4}
                            for i in range(L)}
    r.used.update(("num_layers", "zero_expert_type"))
    if Z:
        phantom = L * Z * 2 * f_e * h
        warnings.append(f"zero-computation experts: active counts k E / (E + Z) = {s['topk'] * E / (E + Z):g} "
                        f"real experts per token (uniform routing); transformers also allocates {phantom:,} "
                        "unused gate_up_proj weights for the zero experts, not counted here")
    _note_mtp(r, s)


def _nope_from_interval(r, L):
    nrl = r.int_list("no_rope_layers", lo=0, hi=1, default=None)
    if not nrl:
        interval = r.int("no_rope_layer_interval", default=4)
        nrl = [int((i + 1) % interval != 0) for i in range(L)]
    if len(nrl) < L:
        r.fail("no_rope_layers", f"must list {L} layers", nrl)
    return [i for i in range(L) if not nrl[i]]


def _read_granitemoe(r, s, ll, notes, warnings):
    """GraniteMoE: every layer MoE, experts of width intermediate_size, no shared expert; the
    embedding/residual/attention/logit multipliers are scalars, not weights."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, moe=True,
             num_experts=r.int("num_local_experts", "num_experts"),
             topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=ll["ffn_hidden_size"],
             moe_layer_set=list(range(L)))


def _read_phimoe(r, s, ll, notes, warnings):
    """Phi-3.5-MoE: LayerNorms with bias, biased attention (attention_bias), every layer MoE; its
    sparsemixer router always picks 2 experts whatever num_experts_per_tok says; optional head bias."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    k = r.int("num_experts_per_tok", default=2)
    if k != 2:
        warnings.append(f"num_experts_per_tok {k} is not read by PhiMoE's router, which picks 2 experts: "
                        "active parameters use 2")
    s.update(norm="layernorm", qkv_bias=bias, attn_out_bias=bias, num_kv_heads=r.int("num_key_value_heads", default=8),
             moe=True, num_experts=r.int("num_local_experts", "num_experts"), topk=2,
             moe_ffn_hidden_size=ll["ffn_hidden_size"], moe_layer_set=list(range(L)), slides_every_layer=True)
    if r.bool("lm_head_bias", default=False):
        s["other_params"] = {"lm_head_bias": s["vocab_size"]}


def _read_dbrx(r, s, ll, notes, warnings):
    """DBRX (modeling_dbrx): every layer a MoE of ffn_config.moe_num_experts gated experts (w1, v1,
    w2 of ffn_hidden_size), top moe_top_k, a router h -> E without bias, no shared expert; a fused
    q/k/v of attn_config.kv_n_heads key/value heads of d_model / n_heads, rotary positions; weight-only
    LayerNorms (LayerNorm(bias=False): h weights each, counted as RMSNorm's); no biases; an untied
    head by default. attn_config.clip_qkv clamps activations and adds no weight. The nested blocks
    are read field by field like the top level."""
    s.update(ll)
    attn = ConfigReader(r.sub("attn_config") or {}, f"{r.where} (attn_config)", warnings)
    ffn = ConfigReader(r.sub("ffn_config") or {}, f"{r.where} (ffn_config)", warnings)
    for key, what in (("attn_config", "kv_n_heads 1"), ("ffn_config", "4 experts of width 3584, top 1")):
        if r.sub(key) is None:  # transformers builds DbrxAttentionConfig() / DbrxFFNConfig() then
            notes.append(f"no {key} in the config: transformers' defaults taken ({what})")
    a, h = s["num_attention_heads"], s["hidden_size"]
    kv = attn.int("kv_n_heads", default=1)
    if a % kv:
        attn.fail("kv_n_heads", f"must divide n_heads = {a}", kv)
    E, k = ffn.int("moe_num_experts", default=4), ffn.int("moe_top_k", default=1)
    if k > E:
        ffn.fail("moe_top_k", f"must be at most moe_num_experts = {E}", k)
    f = ffn.int("ffn_hidden_size", default=3584)
    s.update(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="rope", num_kv_heads=kv, head_dim=h // a, ffn_hidden_size=f,
             tied_embeddings=r.bool("tie_word_embeddings", default=False))
    if E > 1:
        s.update(moe=True, num_experts=E, topk=k, moe_ffn_hidden_size=f)
    r.used.update(("max_seq_len", "emb_pdrop", "resid_pdrop", "output_router_logits", "router_aux_loss_coef"))


# ======== llmcalc/model/families_dense.py =========================================================
# Family readers for dense and sliding-window decoders (GPT-2, NeoX, OPT, BLOOM, Falcon,
# StarCoder2, the Llama-style families and their MoE variants, Qwen, Gemma 3/4, OLMo 3, SmolLM3,
# Seed-OSS, EXAONE 4, Cohere 2): each turns its config into the flat spec's fields.

def _read_generic_moe(r, s, notes):
    E = r.int("num_local_experts", "num_experts", "n_routed_experts")
    if E and E > 1:
        s.update(moe=True, num_experts=E, topk=r.int("num_experts_per_tok", default=1),
                 moe_ffn_hidden_size=r.int("moe_intermediate_size", default=s.get("ffn_hidden_size")))
        sh = r.int("shared_expert_intermediate_size", lo=0, default=0)
        n_sh = r.int("n_shared_experts", "num_shared_experts", lo=0, default=0)
        if sh or n_sh:
            s.update(num_shared_experts=n_sh or 1, shared_expert_ffn_hidden_size=sh or n_sh * s["moe_ffn_hidden_size"])
        notes.append("read the routed experts from the expert count and moe_intermediate_size "
                     "(or intermediate_size)")


def _read_gpt2(r, s, ll, notes, warnings):
    h = s["hidden_size"]
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="learned",
             position_embedding_rows=r.int("n_positions", "max_position_embeddings"),
             ffn_hidden_size=r.int("n_inner", default=4 * h))
    if s["position_embedding_rows"] is None:
        raise ValueError(f"{r.where}: config lacks n_positions for GPT-2's learned position table")


def _read_gpt_neox(r, s, ll, notes, warnings):
    bias = r.bool("attention_bias", default=True)
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias, mlp_bias=True,
             position_embedding="rope", ffn_hidden_size=r.int("intermediate_size"))


def _read_opt(r, s, ll, notes, warnings):
    h = s["hidden_size"]
    bias = r.bool("enable_bias", default=True)
    pre = r.bool("do_layer_norm_before", default=True)
    rows = r.int("max_position_embeddings", hi=2**31 - 2)
    if rows is None:
        raise ValueError(f"{r.where}: config lacks max_position_embeddings for OPT's position table")
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias,
             position_embedding="learned", position_embedding_rows=rows + 2,  # OPT offsets by 2
             ffn_hidden_size=r.int("ffn_dim"),
             word_embed_proj_dim=r.int("word_embed_proj_dim", default=h),
             final_norm=pre and not r.bool("_remove_final_layer_norm", default=False))
    if not r.bool("layer_norm_elementwise_affine", default=True):
        s["norm"] = "none"


def _read_bloom(r, s, ll, notes, warnings):
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="alibi", ffn_hidden_size=4 * s["hidden_size"], embedding_norm=True)


def _read_falcon(r, s, ll, notes, warnings):
    a = s["num_attention_heads"]
    if r.bool("new_decoder_architecture", default=False):
        kv = r.int("num_kv_heads", default=a)
        n_ln = 2 if r.int("num_ln_in_parallel_attn", default=2, hi=2) == 2 else 1
    else:
        kv = 1 if r.bool("multi_query", default=True) else a
        n_ln = 1 if r.bool("parallel_attn", default=True) else 2
    bias = r.bool("bias", default=False)
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias,
             position_embedding="alibi" if r.bool("alibi", default=False) else "rope",
             num_kv_heads=kv, norms_per_layer=n_ln, parallel_attention=r.bool("parallel_attn", default=True),
             ffn_hidden_size=r.int("ffn_hidden_size", default=4 * s["hidden_size"]))


def _read_starcoder2(r, s, ll, notes, warnings):
    bias = r.bool("use_bias", default=True)
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias,
             position_embedding="rope", num_kv_heads=ll["num_kv_heads"], head_dim=ll["head_dim"],
             ffn_hidden_size=ll["ffn_hidden_size"])
    s["slides_every_layer"] = True


def _read_llama_like(r, s, ll, notes, warnings):
    """Llama-style families: RMSNorm, gated MLP, rotary; their quirks below."""
    mt = s["model_type"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    if mt == "llama":
        s["mlp_bias"] = r.bool("mlp_bias", default=False)
    if mt in ("qwen2", "qwen2_moe"):
        s["qkv_bias"], s["attn_out_bias"] = True, False  # Qwen2Attention: q/k/v biased, o not
        if mt == "qwen2_moe":
            s["qkv_bias"] = r.bool("qkv_bias", default=True)
    if mt == "mistral" and "sliding_window" not in r.cfg:
        s["sliding_window"] = 4096  # MistralConfig's default when config.json has no such key
    if mt in ("qwen3", "qwen3_moe"):
        s["qk_norm"] = "head"
    if mt == "olmo2":
        s["qk_norm"] = "full"
    if mt == "gemma2":
        s["norms_per_layer"] = 4  # input, post-attention, pre-feedforward, post-feedforward
    if mt in ("gemma", "gemma2"):
        s["head_dim"] = r.int("head_dim", default=256)  # the config classes' default
    if mt in ("mistral", "mixtral", "phi3"):
        s["slides_every_layer"] = True
    if mt in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):
        _read_qwen_sliding(r, s)
    if mt == "gemma2" and not r.has("layer_types"):
        s["layer_types"] = ["sliding" if i % 2 == 0 else "full" for i in range(s["num_layers"])]
    if mt == "mixtral":
        s.update(moe=True, num_experts=r.int("num_local_experts", "num_experts"),
                 topk=r.int("num_experts_per_tok"),
                 moe_ffn_hidden_size=ll["ffn_hidden_size"])
    if mt in ("qwen2_moe", "qwen3_moe"):
        L = s["num_layers"]
        step = r.int("decoder_sparse_step", default=1)
        only = set(r.int_list("mlp_only_layers", default=[]))
        s.update(moe=True, num_experts=r.int("num_experts", "num_local_experts"),
                 topk=r.int("num_experts_per_tok"),
                 moe_ffn_hidden_size=r.int("moe_intermediate_size"),
                 moe_layer_set=[i for i in range(L) if i not in only and (i + 1) % step == 0])
        if mt == "qwen2_moe":
            sh = r.int("shared_expert_intermediate_size", lo=0, default=0)
            s.update(num_shared_experts=1 if sh else 0, shared_expert_ffn_hidden_size=sh,
                     shared_expert_gate=bool(sh))
    if mt in ("deepseek_v2", "deepseek_v3", "mistral4"):  # Mistral4ForCausalLM is DeepSeek-V3's block
        _read_deepseek(r, s)


def _read_qwen_sliding(r, s):
    """Qwen2/Qwen3 slide only with use_sliding_window (off by default), on layers i >=
    max_window_layers (default 28; Qwen2-MoE: even i < max_window_layers; Qwen3-MoE: every
    layer), unless layer_types lists them."""
    L, mt = s["num_layers"], s["model_type"]
    if r.has("layer_types"):
        lt = _layer_pattern(r, L, s)
        if not r.bool("use_sliding_window", default=False):
            lt = ["full" if t == "sliding" else t for t in lt]
        s["layer_types"] = lt
        return
    if not r.bool("use_sliding_window", default=False) or not (r.int("sliding_window", lo=0) or None):
        s["layer_types"] = None
        s["sliding_window"] = None
        return
    mwl = r.int("max_window_layers", lo=0, default=28)  # the config classes' default
    if mt == "qwen3_moe":
        s["layer_types"] = ["sliding"] * L
    elif mt == "qwen2_moe":  # Qwen2MoeConfig: (i + 1) % 2 and i < max_window_layers
        s["layer_types"] = ["sliding" if i < mwl and i % 2 == 0 else "full" for i in range(L)]
    else:
        s["layer_types"] = ["sliding" if i >= mwl else "full" for i in range(L)]


def _gemma_layer_types(r, L, force_last_full):
    if r.has("layer_types"):
        return None
    pattern = r.int("sliding_window_pattern", "_sliding_window_pattern", default=6)
    lt = ["sliding" if (i + 1) % pattern else "full" for i in range(L)]
    if force_last_full and L:
        lt[-1] = "full"
    return lt


def _read_gemma3(r, s, ll, notes, warnings):
    """Gemma 3: 5 sliding : 1 full layers (sliding_window_pattern), head_dim 256 by default,
    per-head q/k norms, four norms per layer, gated GELU MLP, tied head."""
    L = s["num_layers"]
    s.update(ll)
    s.update(head_dim=r.int("head_dim", default=256), qk_norm="head", norms_per_layer=4,
             layer_types=_gemma_layer_types(r, L, force_last_full=False))
    if s["layer_types"] is None:
        del s["layer_types"]


def _read_gemma4(r, s, ll, notes, warnings):
    """Gemma 4 (transformers' Gemma4TextConfig): sliding layers of head_dim d and full layers of
    global_head_dim (512) with K = V when attention_k_eq_v; the last num_kv_shared_layers layers
    reuse an earlier layer's K/V (no k/v weights, no cache; MLP twice as wide with
    use_double_wide_mlp); per-layer embeddings (hidden_size_per_layer_input); optional MoE block
    beside the dense MLP in every layer."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll)
    d = r.int("head_dim", default=256)
    s.update(head_dim=d, qk_norm="head", norms_per_layer=4)
    L_cfg = r.int("num_hidden_layers", "num_layers") or L  # -l keeps the first L of them
    lt = _gemma_layer_types(r, L_cfg, force_last_full=True)
    if lt is None:
        lt = _layer_pattern(r, L_cfg, s)
        lt[-1] = "full"  # the config's last layer is global, as Gemma4TextConfig makes it
    lt = lt[:L]
    s["layer_types"] = lt
    d_g = r.int("global_head_dim", default=512)
    k_eq_v = r.bool("attention_k_eq_v", default=False)
    kv_g = r.int("num_global_key_value_heads", default=s["num_kv_heads"]) if k_eq_v else s["num_kv_heads"]
    n_shared = r.int("num_kv_shared_layers", lo=0, default=0)  # the config's last layers
    if n_shared >= L_cfg:
        r.fail("num_kv_shared_layers", f"leaves none of the {L_cfg} layers to hold the K/V it shares", n_shared)
    wide = r.bool("use_double_wide_mlp", default=False)
    p = r.int("hidden_size_per_layer_input", lo=0, default=256)
    r.used.add("vocab_size_per_layer_input")
    f = ll["ffn_hidden_size"]
    moe_block = r.bool("enable_moe_block", default=False)
    moe = None
    if moe_block:
        moe = {"kind": "moe", "width": r.int("moe_intermediate_size"), "linears": 3, "bias": False,
               "num_experts": r.int("num_experts"), "topk": r.int("top_k_experts"),
               "zero_experts": 0, "shared_width": 0, "shared_bias": False, "shared_gate": False,
               "router_bias": False}  # + router_extra below: its scale (h) and per-expert scale (E)
        if None in moe.values():
            raise ValueError(f"{r.where}: enable_moe_block needs num_experts, top_k_experts and moe_intermediate_size")
        moe["router_extra"] = h + moe["num_experts"]
    plc = r.sub("per_layer_config")  # written by transformers: {"05": {"head_dim": 512}, ...}
    per = {}
    if plc is not None:
        for key, val in plc.items():
            if not (isinstance(key, str) and key.isdigit() and isinstance(val, dict)):
                r.fail("per_layer_config", "must map layer numbers to objects", plc)
            sub = ConfigReader(val, f"{r.where} (per_layer_config {key})")
            per[int(key)] = {"head_dim": sub.int("head_dim"),
                             "kv_heads": sub.int("num_key_value_heads")}
    ov = {}
    for i in range(L):
        full = lt[i] == "full"
        shared = i >= L_cfg - n_shared  # with -l, the first L layers of the config
        if plc is not None:
            d_i = per.get(i, {}).get("head_dim") or d
            kv_i = per.get(i, {}).get("kv_heads") or s["num_kv_heads"]
        else:
            d_i, kv_i = (d_g, kv_g) if full else (d, s["num_kv_heads"])
        att = {"head_dim": d_i, "kv_heads": kv_i,
               "kv_proj": 0 if shared else (1 if full and k_eq_v else 2), "kv_shared": shared}
        o = {"attention": att, "norms": 4 + bool(p) + 3 * bool(moe)}  # + post-per-layer-input norm,
        if shared and wide:                                             # + the MoE branch's three
            o["mlp"] = {"width": 2 * f}
        if p:
            o["extra_params"] = 2 * p * h  # per-layer input gate (h -> p) and projection (p -> h)
        if moe:
            o["more_mlp"] = (moe,)
        ov[i] = o
    s["layer_overrides"] = ov
    if p:
        V_pl = r.int("vocab_size_per_layer_input", default=s["vocab_size"])
        s["per_layer_embedding_params"] = V_pl * L * p
        s["other_params"] = {"per_layer_model_projection": L * p * h, "per_layer_projection_norm": p}
        s["input_matmul_params"] = L * p * h  # every token's embedding runs through it once


def _read_olmo3(r, s, ll, notes, warnings):
    """OLMo 3: OLMo 2's block (post-norms only, q/k RMSNorms over all heads) with 3 sliding : 1 full
    layers."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, qk_norm="full")
    if not r.has("layer_types"):
        s["layer_types"] = ["full" if (i + 1) % 4 == 0 else "sliding" for i in range(L)]


def _read_smollm3(r, s, ll, notes, warnings):
    """SmolLM3: Llama block; every 4th layer without rotary positions (no_rope_layers), and with
    use_sliding_window those NoPE layers slide."""
    L = s["num_layers"]
    s.update(ll)
    s.update(num_kv_heads=r.int("num_key_value_heads", default=4),
             qkv_bias=r.bool("attention_bias", default=False), attn_out_bias=r.bool("attention_bias", default=False),
             mlp_bias=r.bool("mlp_bias", default=False), nope_layers=_nope_from_interval(r, L))
    if not r.has("layer_types"):
        slide = r.bool("use_sliding_window", default=False) and r.has("sliding_window")
        nope = set(s["nope_layers"])
        s["layer_types"] = ["sliding" if slide and i in nope else "full" for i in range(L)]


def _read_seed_oss(r, s, ll, notes, warnings):
    """Seed-OSS: biased q/k/v (attention_bias), o biased only with attention_out_bias."""
    s.update(ll)
    s.update(num_kv_heads=r.int("num_key_value_heads", default=8),
             head_dim=r.int("head_dim", default=128),
             qkv_bias=r.bool("attention_bias", default=True), attn_out_bias=r.bool("attention_out_bias", default=False),
             mlp_bias=r.bool("mlp_bias", default=False))


def _read_exaone4(r, s, ll, notes, warnings):
    """EXAONE 4: post-norms only, per-head q/k norms, no biases; 3 sliding : 1 full layers
    (sliding_window_pattern), the full layers without rotary positions when sliding is on."""
    L = s["num_layers"]
    s.update(ll)
    s.update(num_kv_heads=r.int("num_key_value_heads", default=32), qk_norm="head")
    w = (r.int("sliding_window", lo=0) or None)
    if not r.has("layer_types") and w:
        p = r.pick("sliding_window_pattern")[1]
        if isinstance(p, str):
            raise ValueError(f"{r.where}: sliding_window_pattern {p!r} needs layer_types (transformers "
                             "cannot derive them from a string either)")
        p = r.int("sliding_window_pattern", default=4)
        s["layer_types"] = ["sliding" if (i + 1) % p else "full" for i in range(L)]
    lt = s.get("layer_types") or _layer_pattern(r, L, s)
    if w and lt:
        s["nope_layers"] = [i for i in range(L) if lt[i] != "sliding"]


def _read_cohere2(r, s, ll, notes, warnings):
    """Cohere2 (Command R7B / A): one weight-only LayerNorm per layer feeding attention and MLP in
    parallel, 3 sliding : 1 full layers, rotary positions on the sliding layers only."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, norms_per_layer=1, parallel_attention=True,
             norm="rmsnorm")  # Cohere's LayerNorm has a weight and no bias: h weights, as RMSNorm
    w = (r.int("sliding_window", lo=0) or None)
    if not r.has("layer_types"):
        p = r.int("sliding_window_pattern", default=4)
        s["layer_types"] = ["sliding" if (i + 1) % p else "full" for i in range(L)] if w else None
    lt = s.get("layer_types") or _layer_pattern(r, L, s)
    s["nope_layers"] = [i for i in range(L) if not w or (lt and lt[i] != "sliding")]


# ======== llmcalc/model/families_hybrid.py ========================================================
# Family readers for hybrids with linear-attention or state-space layers (Qwen3-Next/3.5 Gated
# DeltaNet, OLMo hybrid, Mamba-2 mixers of Nemotron-H, GraniteMoeHybrid, Falcon-H1 and Jamba, LFM,
# Kimi Linear's KDA).

def _read_qwen_gdn(r, s, ll, notes, warnings):
    """Qwen3-Next and Qwen3.5 (dense and MoE): Gated DeltaNet layers with full-attention layers
    every full_attention_interval-th (default 4), as layer_types lists them. The attention layers
    have an elementwise output gate (q_proj twice as wide) and per-head q/k norms; MoE layers have
    one gated shared expert (Qwen3-Next: on layers (i + 1) % decoder_sparse_step == 0 not in
    mlp_only_layers; Qwen3.5-MoE: every layer, transformers reads neither field)."""
    mt, L = s["model_type"], s["num_layers"]
    s.update(ll, head_dim=r.int("head_dim", default=256), qk_norm="head",
             attn_output_gate="elementwise")
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    r.bool("attn_output_gate", default=True)  # Qwen3.5 writes it; its modeling gates either way
    s["linear_mixer"] = {
        "kind": "gdn", "heads": r.int("linear_num_value_heads", default=32),
        "kv_heads": r.int("linear_num_key_heads", default=16),
        "head_dim": r.int("linear_key_head_dim", default=128),
        "v_head_dim": r.int("linear_value_head_dim", default=128),
        "conv_kernel": r.int("linear_conv_kernel_dim", default=4),
        "state_chunk": GDN_CHUNK}
    if s["linear_mixer"]["heads"] % s["linear_mixer"]["kv_heads"]:
        raise ValueError(f"{r.where}: linear_num_value_heads {s['linear_mixer']['heads']} is not a multiple "
                         f"of linear_num_key_heads {s['linear_mixer']['kv_heads']}")
    if r.has("layer_types"):
        s["layer_types"] = _layer_pattern(r, L, s)
        if "sliding" in s["layer_types"] or "chunked" in s["layer_types"]:
            raise ValueError(f"{r.where}: layer_types of a {mt} model lists only linear_attention and "
                             "full_attention layers")
    else:
        n = r.int("full_attention_interval", default=4)
        s["layer_types"] = ["linear" if (i + 1) % n else "full" for i in range(L)]
    r.used.update(("full_attention_interval", "use_sliding_window", "sliding_window", "max_window_layers"))
    s["sliding_window"] = None
    if mt in ("qwen3_next", "qwen3_5_moe_text"):
        E = r.int("num_experts", "num_local_experts", lo=0, default=512 if mt == "qwen3_next" else 256)
        if mt == "qwen3_next":
            step = r.int("decoder_sparse_step", default=1)
            only = set(r.int_list("mlp_only_layers", default=[]))
            moe = [i for i in range(L) if E and i not in only and (i + 1) % step == 0]
        else:
            r.used.update(("decoder_sparse_step", "mlp_only_layers"))
            moe = list(range(L)) if E else []
        sh = r.int("shared_expert_intermediate_size", lo=0, default=512)
        s.update(moe=bool(moe), num_experts=E, topk=r.int("num_experts_per_tok", default=10 if mt == "qwen3_next" else 8),
                 moe_ffn_hidden_size=r.int("moe_intermediate_size", default=512),
                 num_shared_experts=1 if sh else 0, shared_expert_ffn_hidden_size=sh,
                 shared_expert_gate=bool(sh), moe_layer_set=moe)
    n_mtp = r.int("mtp_num_hidden_layers", lo=0, default=0)
    if n_mtp:
        s["mtp_layers_not_built"] = n_mtp
        warnings.append(f"{n_mtp} multi-token-prediction layer(s) (mtp_num_hidden_layers) are in the "
                        "checkpoint but not counted: transformers does not build them in the model")
    r.used.update(("mtp_use_dedicated_embeddings", "mamba_ssm_dtype"))


def _read_olmo_hybrid(r, s, ll, notes, warnings):
    """Olmo-Hybrid: Gated DeltaNet layers and OLMo-2-style attention layers (q/k norms over all
    heads, post-norms; NoPE without rope_theta: no weights either way), a dense SwiGLU MLP on every
    layer, 2 norms per layer. Defaults as OlmoHybridConfig derives them: key and value heads =
    num_attention_heads, d_k = int(0.75 h / H_k), d_v = 2 d_k; full attention where i % 4 == 3
    (the last layer if none is)."""
    L, a, h = s["num_layers"], s["num_attention_heads"], s["hidden_size"]
    s.update(ll, qk_norm="full")
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    hk = r.int("linear_num_key_heads", default=a)
    dk = r.int("linear_key_head_dim", default=int(0.75 * h / hk))
    s["linear_mixer"] = {"kind": "gdn", "heads": r.int("linear_num_value_heads", default=a),
                         "kv_heads": hk, "head_dim": dk,
                         "v_head_dim": r.int("linear_value_head_dim", default=2 * dk),
                         "conv_kernel": r.int("linear_conv_kernel_dim", default=4),
                         "state_chunk": GDN_CHUNK}
    if s["linear_mixer"]["heads"] % hk:
        raise ValueError(f"{r.where}: linear_num_value_heads {s['linear_mixer']['heads']} is not a multiple "
                         f"of linear_num_key_heads {hk}")
    r.bool("linear_allow_neg_eigval", default=True)  # beta in (0, 2): no weights
    if r.has("layer_types"):
        s["layer_types"] = _layer_pattern(r, L, s)
        if "sliding" in s["layer_types"] or "chunked" in s["layer_types"]:
            raise ValueError(f"{r.where}: layer_types of an olmo_hybrid model lists only linear_attention "
                             "and full_attention layers")
    else:
        lt = ["full" if i % 4 == 3 else "linear" for i in range(L)]
        if "full" not in lt:
            lt[-1] = "full"
        s["layer_types"] = lt
    s["sliding_window"] = None
    r.used.add("sliding_window")


def _mamba2_mixer(r, s, *, d_in, heads, head_dim, groups, state, conv, chunk, in_bias, out_bias,
                  conv_bias, gated_norm):
    """The spec's linear_mixer for a family's Mamba-2 layers; the head width must tile d_in."""
    if heads * head_dim != d_in:
        raise ValueError(f"{r.where}: Mamba-2 heads {heads} x head dim {head_dim} must equal its inner width {d_in}")
    if heads % groups:
        raise ValueError(f"{r.where}: Mamba-2 heads {heads} are not a multiple of its {groups} groups")
    s["linear_mixer"] = {"kind": "mamba2", "heads": heads, "kv_heads": groups, "head_dim": head_dim,
                         "v_head_dim": head_dim, "state_size": state, "conv_kernel": conv, "state_chunk": chunk,
                         "in_bias": in_bias, "mixer_out_bias": out_bias, "conv_bias": conv_bias,
                         "gated_norm": gated_norm}


def _mamba_head_dim(r, key, d_in, heads):
    """Granite/Falcon's mamba_d_head: a number, or "auto" (d_in // heads, as their configs derive it)."""
    if r.cfg.get(key) == "auto" or not r.has(key):
        r.used.add(key)
        return d_in // heads
    return r.int(key, hi=2**20)


_NEMOTRON_BLOCKS = {"M": "mamba", "E": "moe", "*": "attention", "-": "mlp", "linear_attention": "mamba",
                    "mamba": "mamba", "moe": "moe", "full_attention": "attention", "attention": "attention",
                    "mlp": "mlp"}


def _nemotron_blocks(r):
    """Nemotron-H's per-layer block kinds: layers_block_type (alias layer_types), else the legacy
    hybrid_override_pattern string, else NemotronHConfig's default 4 layers."""
    if r.has("layers_block_type") or r.has("layer_types"):
        key = "layers_block_type" if r.has("layers_block_type") else "layer_types"
        pat = r.str_list(key, choices=set(_NEMOTRON_BLOCKS) - {"M", "E", "*", "-"})
    elif r.has("hybrid_override_pattern"):
        text = r.str("hybrid_override_pattern")
        if not text or any(ch not in "ME*-" for ch in text):
            r.fail("hybrid_override_pattern", "must be a string of M, E, * and -", text)
        pat = list(text)
    else:
        pat = ["M", "E", "*", "-"]
    if not pat:
        raise ValueError(f"{r.where}: the layer pattern is empty")
    return [_NEMOTRON_BLOCKS[x] for x in pat]


def _read_nemotron_h(r, s, ll, notes, warnings):
    """Nemotron-H (Nemotron 3): each layer is ONE block after its norm, a Mamba-2 mixer, an
    attention (no biases, no positions), a non-gated ReLU^2 MLP or a MoE (non-gated ReLU^2 experts,
    one shared expert of moe_shared_expert_intermediate_size, a router with a score-correction
    buffer that is not a weight), from layers_block_type (or the legacy hybrid_override_pattern
    M/E/*/-). Mamba inner width = mamba_num_heads x mamba_head_dim (expand is not read); in/out
    projection biases from use_bias. transformers never ties the head; MTP layers are not built."""
    blocks = _nemotron_blocks(r)
    if s["_layers_from_flag"]:
        if s["num_layers"] > len(blocks):
            raise ValueError(f"--num-layers {s['num_layers']} is more than the {len(blocks)} layers the "
                             "config's layer pattern describes")
        blocks = blocks[:s["num_layers"]]
    elif len(blocks) != s["num_layers"]:
        warnings.append(f"num_hidden_layers {s['num_layers']} differs from the {len(blocks)} layers of the "
                        "pattern: the pattern's count is used, as transformers does")
    s["num_layers"] = len(blocks)
    s.update(ll, num_mlp_linears=2, qkv_bias=False, attn_out_bias=False, norms_per_layer=1,
             head_dim=r.int("head_dim", default=128), tied_embeddings=False,
             mlp_bias=r.bool("mlp_bias", default=False))
    r.bool("tie_word_embeddings", default=False)
    r.bool("attention_bias", default=False)  # read, not used: NemotronHAttention has no biases
    s["layer_types"] = ["linear" if b == "mamba" else "full" for b in blocks]
    s["layer_blocks"] = ["mlp" if b in ("moe", "mlp") else "mixer" for b in blocks]
    H = r.int("mamba_num_heads", default=128)
    P = r.int("mamba_head_dim", default=64)
    bias = r.bool("use_bias", default=False)
    _mamba2_mixer(r, s, d_in=H * P, heads=H, head_dim=P, groups=r.int("n_groups", "mamba_n_groups", default=8),
                  state=r.int("ssm_state_size", default=128), conv=r.int("conv_kernel", "mamba_d_conv", default=4),
                  chunk=r.int("chunk_size", "mamba_chunk_size", default=128), in_bias=bias, out_bias=bias,
                  conv_bias=r.bool("use_conv_bias", "mamba_conv_bias", default=True), gated_norm=True)
    r.used.update(("expand", "mamba_proj_bias", "n_shared_experts", "mamba_ssm_cache_dtype"))
    if r.int("moe_latent_size", default=0, lo=0):
        raise ValueError(f"{r.where}: moe_latent_size (latent MoE projections) is not described by this script yet")
    moe = [i for i, b in enumerate(blocks) if b == "moe"]
    if moe:
        f_e = r.int("moe_intermediate_size", default=2688)
        sh = r.int("moe_shared_expert_intermediate_size", lo=0, default=5376)
        s.update(moe=True, num_experts=r.int("n_routed_experts", default=128),
                 topk=r.int("num_experts_per_tok", default=6), moe_ffn_hidden_size=f_e,
                 num_shared_experts=1 if sh else 0, shared_expert_ffn_hidden_size=sh, shared_expert_gate=False,
                 router_bias=False, expert_bias=False, moe_layer_set=moe)
    _note_mtp(r, s)


def _read_granitemoehybrid(r, s, ll, notes, warnings):
    """Granite 4 hybrids: every layer a mixer (Mamba-2 on linear_attention / mamba layers, attention
    elsewhere; all Mamba-2 when layer_types is absent, the config's default) and, after the second
    norm, a MoE of gated experts of width intermediate_size plus an ungated shared MLP of
    shared_intermediate_size (a dense gated MLP of that width when num_local_experts is 0). Mamba
    inner width int(mamba_expand x h); the multipliers are scalars, not weights."""
    L = s["num_layers"]
    s.update(ll)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    key = "layer_types" if r.has("layer_types") else "layers_block_type"
    lt = r.str_list(key, choices={"linear_attention", "mamba", "full_attention", "attention"}, length=L)
    s["layer_types"] = (["linear" if t in ("linear_attention", "mamba") else "full" for t in lt] if lt
                        else ["linear"] * L)
    _granite_mamba2(r, s)
    E = r.int("num_local_experts", "num_experts", lo=0, default=8)
    sh = r.int("shared_intermediate_size", default=1024)
    if E:
        s.update(moe=True, num_experts=E, topk=r.int("num_experts_per_tok", default=2),
                 moe_ffn_hidden_size=ll["ffn_hidden_size"], num_shared_experts=1,
                 shared_expert_ffn_hidden_size=sh, shared_expert_gate=False, moe_layer_set=list(range(L)))
    else:
        s["ffn_hidden_size"] = sh  # the shared MLP is the layer's only MLP
    r.used.add("intermediate_size")


def _granite_mamba2(r, s):
    """The Mamba-2 mixer of Granite 4 hybrids and Bamba: inner width int(mamba_expand x h) in
    mamba_n_heads heads of mamba_d_head, mamba_n_groups groups of mamba_d_state, projection biases
    with mamba_proj_bias, a gated RMSNorm."""
    d_in = int(r.num("mamba_expand", default=2) * s["hidden_size"])
    H = r.int("mamba_n_heads", default=128)
    pb = r.bool("mamba_proj_bias", default=False)
    _mamba2_mixer(r, s, d_in=d_in, heads=H, head_dim=_mamba_head_dim(r, "mamba_d_head", d_in, H),
                  groups=r.int("mamba_n_groups", default=1), state=r.int("mamba_d_state", default=256),
                  conv=r.int("mamba_d_conv", default=4), chunk=r.int("mamba_chunk_size", default=256),
                  in_bias=pb, out_bias=pb, conv_bias=r.bool("mamba_conv_bias", default=True), gated_norm=True)


def _read_falcon_h1(r, s, ll, notes, warnings):
    """Falcon-H1: every layer runs attention and a Mamba-2 mixer side by side on the same normed
    input, then a gated MLP (2 norms). Mamba inner width mamba_d_ssm (or int(mamba_expand x h)),
    in_proj bias mamba_proj_bias, out_proj bias projectors_bias, a gated RMSNorm only with
    mamba_rms_norm. The muP multipliers are scalars; mup_vector is a buffer, not a weight."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll, mlp_bias=r.bool("mlp_bias", default=False))
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    # mamba_d_ssm (FalconH1Config's default 1024 when absent), or int(mamba_expand x h) when null
    d_in = (r.int("mamba_d_ssm") or int(r.num("mamba_expand", default=2) * h)
            if "mamba_d_ssm" in r.cfg else 1024)
    H = r.int("mamba_n_heads", default=128)
    _mamba2_mixer(r, s, d_in=d_in, heads=H, head_dim=_mamba_head_dim(r, "mamba_d_head", d_in, H),
                  groups=r.int("mamba_n_groups", default=1), state=r.int("mamba_d_state", default=256),
                  conv=r.int("mamba_d_conv", default=4), chunk=r.int("mamba_chunk_size", default=256),
                  in_bias=r.bool("mamba_proj_bias", default=False), out_bias=r.bool("projectors_bias", default=False),
                  conv_bias=r.bool("mamba_conv_bias", default=True),
                  gated_norm=r.bool("mamba_rms_norm", default=False))
    r.bool("mamba_norm_before_gate", default=True)
    s["layer_types"] = ["hybrid"] * L


def _read_jamba(r, s, ll, notes, warnings):
    """Jamba: attention on layers i % attn_layer_period == attn_layer_offset (no biases, no
    positions, head_dim h / a), Mamba-1 elsewhere (inner width mamba_expand x h, dt rank "auto" =
    ceil(h / 16), RMSNorms on dt, B and C); a MoE of gated experts on layers i % expert_layer_period
    == expert_layer_offset when num_experts > 1 (router without bias, no shared expert), a gated
    dense MLP elsewhere; 2 norms per layer."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll, qkv_bias=False, attn_out_bias=False)
    ap, ao = r.int("attn_layer_period", default=8), r.int("attn_layer_offset", lo=0, default=4)
    ep, eo = r.int("expert_layer_period", default=2), r.int("expert_layer_offset", lo=0, default=1)
    if ao >= ap or eo >= ep:
        raise ValueError(f"{r.where}: attn_layer_offset / expert_layer_offset must be below their period")
    s["layer_types"] = ["full" if i % ap == ao else "linear" for i in range(L)]
    E = int(r.num("mamba_expand", default=2) * h)
    rank = r.cfg.get("mamba_dt_rank", "auto")
    R = -(-h // 16) if rank == "auto" else r.int("mamba_dt_rank")
    if R is None:  # null: JambaConfig keeps None and the model cannot be built
        r.fail("mamba_dt_rank", 'must be an integer or "auto"', rank)
    r.used.add("mamba_dt_rank")
    pb = r.bool("mamba_proj_bias", default=False)
    s["linear_mixer"] = {"kind": "mamba1", "heads": E, "kv_heads": E, "head_dim": 1, "v_head_dim": 1,
                         "state_size": r.int("mamba_d_state", default=16), "dt_rank": R,
                         "conv_kernel": r.int("mamba_d_conv", default=4), "state_chunk": 0,
                         "in_bias": pb, "mixer_out_bias": pb, "conv_bias": r.bool("mamba_conv_bias", default=True),
                         "dt_norms": True}
    n_exp = r.int("num_experts", "num_local_experts", default=16)
    if n_exp > 1:
        s.update(moe=True, num_experts=n_exp, topk=r.int("num_experts_per_tok", default=2),
                 moe_ffn_hidden_size=ll["ffn_hidden_size"], moe_layer_set=[i for i in range(L) if i % ep == eo])
    r.used.update(("use_mamba_kernels", "use_mambapy", "use_associative_scan"))


def _read_lfm3(r, s, ll, notes, warnings):
    """LFM3: per layer_types a short-convolution block (in_proj h -> 3h for B, C, x, a depthwise conv
    of conv_L_cache taps, out_proj; biases with conv_bias) or attention (full, or sliding within
    sliding_window), each followed by a gated dense MLP. Attention: per-head q/k norms, a per-head
    sigmoid output gate (g_proj h -> a) with use_attention_gate, biases with attention_bias.
    4 norms per layer with use_sandwich_norm (2 without). Default pattern: full where i % 4 == 2,
    sliding where i % 4 == 0 and i > 0, conv elsewhere."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll, qk_norm="head", head_dim=r.int("head_dim", default=128),
             norms_per_layer=4 if r.bool("use_sandwich_norm", default=True) else 2,
             attn_output_gate="headwise" if r.bool("use_attention_gate", default=True) else "none")
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias)
    lt = r.str_list("layer_types", choices={"conv", "full_attention", "sliding_attention"}, length=L)
    if lt is None:
        lt = ["full_attention" if i % 4 == 2 else "sliding_attention" if i % 4 == 0 and i > 0 else "conv"
              for i in range(L)]
    s["layer_types"] = [{"conv": "linear", "full_attention": "full", "sliding_attention": "sliding"}[t] for t in lt]
    if "sliding" in s["layer_types"]:
        s["sliding_window"] = r.int("sliding_window", default=256)
    s["linear_mixer"] = {"kind": "shortconv", "heads": h, "kv_heads": h, "head_dim": 1, "v_head_dim": 1,
                         "conv_kernel": r.int("conv_L_cache", default=7), "state_chunk": 0,
                         "conv_bias": r.bool("conv_bias", default=False)}


def _read_kimi_linear(r, s, ll, notes, warnings):
    """Kimi Linear: KDA layers and NoPE MLA layers (layer_types, else linear_attn_config's 1-based
    kda_layers / full_attn_layers, else MLA where i > 0 and i % 4 == 0), a dense first layer
    (mlp_layer_types, else first_k_dense_replace, default 1) and MoE (gated experts, num_shared_experts
    shared, a router whose score correction is a buffer); the head is never tied. KDA's heads, head
    dim and conv kernel from linear_attn_config where it has them, else linear_num_heads /
    linear_head_dim / linear_conv_kernel_dim."""
    L = s["num_layers"]
    s.update(ll, tied_embeddings=False)
    r.bool("tie_word_embeddings", default=False)  # KimiLinearForCausalLM ties nothing
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, position_embedding="none")
    lac = r.sub("linear_attn_config") or {}
    sub = ConfigReader(lac, f"{r.where} (linear_attn_config)")
    H = sub.int("num_heads", default=None) or r.int("linear_num_heads", default=32)
    d = sub.int("head_dim", default=None) or r.int("linear_head_dim", default=128)
    K = sub.int("short_conv_kernel_size", default=None) or r.int("linear_conv_kernel_dim", default=4)
    s["linear_mixer"] = {"kind": "kda", "heads": H, "kv_heads": H, "head_dim": d, "v_head_dim": d,
                         "conv_kernel": K, "state_chunk": GDN_CHUNK}
    if r.has("layer_types"):
        s["layer_types"] = _layer_pattern(r, L, s)
    elif "full_attn_layers" in lac and "kda_layers" in lac:
        n = r.int("num_hidden_layers")  # the lists number the config's layers; -l cuts after
        full = sub.int_list("full_attn_layers", lo=1, hi=n)
        kda = sub.int_list("kda_layers", lo=1, hi=n)
        lt = [None] * n
        for i in full:
            lt[i - 1] = "full"
        for i in kda:
            lt[i - 1] = "linear"
        if None in lt:
            raise ValueError(f"{r.where}: linear_attn_config's kda_layers and full_attn_layers leave layer "
                             f"{lt.index(None) + 1} (1-based) without a kind")
        s["layer_types"] = lt[:L]
    else:
        s["layer_types"] = ["full" if i and i % 4 == 0 else "linear" for i in range(L)]
    if any(t not in ("full", "linear") for t in s["layer_types"]):
        raise ValueError(f"{r.where}: a kimi_linear model has only linear_attention and full_attention layers")
    s["sliding_window"] = None
    E = r.int("num_experts", "num_local_experts", default=256)
    f_e = r.int("moe_intermediate_size", default=1024)
    n_sh = r.int("num_shared_experts", "n_shared_experts", lo=0, default=1)
    dense = [i for i in range(r.int("first_k_dense_replace", lo=0, default=1))]
    s.update(moe=True, num_experts=E, topk=r.int("num_experts_per_token", "num_experts_per_tok", default=8),
             moe_ffn_hidden_size=f_e, num_shared_experts=n_sh, shared_expert_ffn_hidden_size=n_sh * f_e,
             router_bias=False, moe_layer_set=_mlp_pattern(r, L, dense))
    _read_mla(r, s)
    r.used.update(("moe_layer_freq", "mla_use_nope", "use_grouped_topk", "moe_router_activation_func", "head_dim"))


# ======== llmcalc/model/families_more.py ==========================================================
# Family readers for the attention decoders transformers 5.24 builds beyond the first families:
# Llama-style blocks with other norms, biases, MLPs, gates or q/k norms (GLM, GLM-4, OLMo, OLMoE,
# FlexOlmo, Hunyuan, HyperCLOVA X, Granite SWA, Arcee, Jais 2, Nemotron, Apertus, Cohere, StableLM,
# Persimmon, Phi-1/2, GPT-J, CodeGen, GPT-Neo, MPT, XGLM, ...), MoE and MLA variants (MiMo-V2-Flash,
# MiniMax-M3, EXAONE MoE, AFMoE, Hunyuan V4, Gemma 3n, ...), and the text models of the
# vision-language wrappers that reuse a text family (Qwen2-VL, Qwen3-VL, GLM-4V, ...); the
# state-space and linear-attention families are in families_state.py. Each reader
# is a few lines: the switches its modeling_<family>.py sets (checked against the meta-device build,
# tests/test_all_types.py).

def _llama(r, s, ll, notes, warnings, base, **over):
    """The Llama-style reading of `base` (a model_type _read_llama_like knows), then `over`."""
    mt = s["model_type"]
    s["model_type"] = base
    _read_llama_like(r, s, ll, notes, warnings)
    s["model_type"] = mt
    s.update(over)


def _read_glm(r, s, ll, notes, warnings):
    """GLM / GLM-4 (and GLM-4V's text model): biased q/k/v, unbiased o, a fused gate/up MLP; GLM-4
    adds a norm after attention and after the MLP (4 per layer)."""
    _llama(r, s, ll, notes, warnings, "llama", attn_out_bias=False,
           qkv_bias=r.bool("attention_bias", default=s["model_type"] != "glm_ocr_text"))  # GlmOcrTextConfig: no biases
    if s["model_type"] != "glm":
        s["norms_per_layer"] = 4


def _read_glm4v_moe(r, s, ll, notes, warnings):
    """GLM-4.5V's text model: GLM-4.5's MoE block with biased q/k/v (attention_bias)."""
    _read_glm4_moe(r, s, ll, notes, warnings)
    s["qkv_bias"] = r.bool("attention_bias", default=True)


def _read_olmoe(r, s, ll, notes, warnings):
    """OLMoE / FlexOlmo: q/k RMSNorms over all heads, every layer a MoE of num_experts gated experts
    of width intermediate_size (FlexOlmo: OLMo-2's post-norms, the same count of norms)."""
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="full")
    _read_generic_moe(r, s, notes)
    notes.pop()


def _read_hunyuan(r, s, ll, notes, warnings):
    """Hunyuan V1 dense and MoE: per-head q/k RMSNorms (query_layernorm / key_layernorm with
    use_qk_norm); the MoE layer has num_experts experts of width moe_intermediate_size (else
    intermediate_size), a router h -> E (no bias), and num_shared_expert shared MLPs of width
    intermediate_size. Per-layer lists are read when every layer has the same value."""
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head" if r.bool("use_qk_norm", default=True) else "none")
    if s["model_type"] != "hunyuan_v1_moe":
        return
    f = s["ffn_hidden_size"]
    E = _same_int(r, "num_experts", 1)
    k = _same_int(r, "moe_topk", 1)
    n_sh = _same_int(r, "num_shared_expert", 1)
    f_e = _same_int(r, "moe_intermediate_size", f)
    s.update(moe=True, num_experts=E, topk=k, moe_ffn_hidden_size=f_e, num_shared_experts=n_sh,
             shared_expert_ffn_hidden_size=n_sh * f)


def _same_int(r, key, default):
    """An integer field that a family may also write as a per-layer list of one value."""
    v = r.cfg.get(key)
    if isinstance(v, list) and v and all(x == v[0] for x in v):
        r.used.add(key)
        v = v[0]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            r.fail(key, "must list non-negative integers", r.cfg.get(key))
        return v
    if isinstance(v, list):
        r.fail(key, "differs between layers, which this script does not describe", v)
    return r.int(key, default=default, lo=0)


def _read_post_norm(r, s, ll, notes, warnings):
    """HyperCLOVA X: a Llama block with a norm after attention and after the MLP (use_post_norm)."""
    _llama(r, s, ll, notes, warnings, "llama")
    if r.bool("use_post_norm", default=True):
        s["norms_per_layer"] = 4


def _read_sinks(r, s, ll, notes, warnings):
    """Granite SWA (dense and MoE): a Granite block with a learned sink logit per head, sliding and full layers
    as layer_types lists them."""
    if s["model_type"] == "granitemoe_swa":
        _read_granitemoe(r, s, ll, notes, warnings)
    else:
        _llama(r, s, ll, notes, warnings, "llama")
    s["attention_sinks"] = True
    r.used.add("layer_rope_theta")


def _read_two_linear(r, s, ll, notes, warnings):
    """Llama-style blocks whose MLP is two matrices (up, down; ReLU^2 or xIELU): Arcee, Nemotron
    (LayerNorm1p, weight and bias), Jais 2 (LayerNorm, biases on attention with attention_bias and
    on the MLP with mlp_bias), Apertus (per-head q/k RMSNorms, two learned xIELU scalars per MLP)."""
    mt = s["model_type"]
    _llama(r, s, ll, notes, warnings, "llama", num_mlp_linears=2)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=r.bool("mlp_bias", default=False))
    if mt in ("nemotron", "jais2"):  # (Cosmos 3 Edge's text model: RMSNorms, no biases)
        s["norm"] = "layernorm"
    if mt in ("apertus", "apertus1p5_text"):
        s.update(qk_norm="head", mlp_act_params=2)


def _read_olmo(r, s, ll, notes, warnings):
    """OLMo (1): LayerNorms without weights or bias; no biases."""
    _llama(r, s, ll, notes, warnings, "llama", norm="none")


def _read_cohere(r, s, ll, notes, warnings):
    """Cohere (Command R): one weight-only LayerNorm per layer feeding attention and MLP in
    parallel; per-head q/k LayerNorms (weights only) with use_qk_norm; Cohere 2 MoE: every layer a
    MoE of num_experts gated experts."""
    _llama(r, s, ll, notes, warnings, "llama", norms_per_layer=1, parallel_attention=True)
    if r.bool("use_qk_norm", default=False):
        s["qk_norm"] = "full"  # one weight per head and channel
    if s["model_type"] == "cohere2_moe":
        _read_generic_moe(r, s, notes)
        notes.pop()


def _read_stablelm(r, s, ll, notes, warnings):
    """StableLM: LayerNorms, q/k/v biases with use_qkv_bias, a gated MLP without biases; one norm
    with use_parallel_residual."""
    bias = r.bool("use_qkv_bias", default=False)
    par = r.bool("use_parallel_residual", default=False)
    _llama(r, s, ll, notes, warnings, "llama", norm="layernorm", qkv_bias=bias, attn_out_bias=False,
           parallel_attention=par, norms_per_layer=1 if par else 2)
    if r.bool("qk_layernorm", default=False):
        s.update(qk_norm="full", attn_norm="layernorm")  # a LayerNorm per head


def _read_persimmon(r, s, ll, notes, warnings):
    """Persimmon (and Fuyu's text model): LayerNorms, biases everywhere, a two-matrix ReLU^2 MLP,
    per-head q/k LayerNorms with qk_layernorm."""
    _llama(r, s, ll, notes, warnings, "llama", norm="layernorm", num_mlp_linears=2, qkv_bias=True,
           attn_out_bias=True, mlp_bias=True, attn_norm="layernorm",
           qk_norm="head" if r.bool("qk_layernorm", default=True) else "none")


def _read_phi(r, s, ll, notes, warnings):
    """Phi-1/1.5/2: one LayerNorm per layer feeding attention and MLP in parallel, biases
    everywhere, a two-matrix GELU MLP, per-head q/k LayerNorms with qk_layernorm."""
    _llama(r, s, ll, notes, warnings, "llama", norm="layernorm", num_mlp_linears=2, qkv_bias=True,
           attn_out_bias=True, mlp_bias=True, norms_per_layer=1, parallel_attention=True,
           attn_norm="layernorm", qk_norm="head" if r.bool("qk_layernorm", default=False) else "none",
           other_params={"lm_head_bias": s["vocab_size"]})


def _read_gptj(r, s, ll, notes, warnings):
    """GPT-J / CodeGen: one LayerNorm per layer feeding attention and MLP in parallel, no
    attention biases, a two-matrix GELU MLP of n_inner (default 4 h) with biases, rotary on
    rotary_dim of each head, an untied biased head."""
    h = s["hidden_size"]
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=False, attn_out_bias=False, mlp_bias=True,
             position_embedding="rope", norms_per_layer=1, parallel_attention=True,
             num_kv_heads=s["num_attention_heads"], head_dim=h // s["num_attention_heads"],
             ffn_hidden_size=r.int("n_inner", default=4 * h),
             other_params={"lm_head_bias": s["vocab_size"]})
    r.int("rotary_dim", default=None)
    r.used.update(("n_positions", "n_ctx"))


def _read_gpt_neo(r, s, ll, notes, warnings):
    """GPT-Neo: GPT-2's block (learned positions, LayerNorms, MLP of intermediate_size, default 4 h)
    with unbiased q/k/v, a biased output, and local layers attending within window_size
    (attention_layers: global / local)."""
    h, L = s["hidden_size"], s["num_layers"]
    rows = r.int("max_position_embeddings")
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=False, attn_out_bias=True, mlp_bias=True,
             position_embedding="learned", position_embedding_rows=rows, num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"], ffn_hidden_size=r.int("intermediate_size", default=4 * h))
    kinds = r.str_list("attention_layers", choices={"global", "local"}, length=L)
    r.used.add("attention_types")
    if kinds and "local" in kinds:
        s["layer_types"] = ["sliding" if k == "local" else "full" for k in kinds]
        s["sliding_window"] = r.int("window_size", default=256)


def _read_mellum(r, s, ll, notes, warnings):
    """Mellum: a Qwen3-MoE block (per-head q/k RMSNorms) whose MoE and dense layers
    mlp_layer_types lists (sparse / dense), experts of moe_intermediate_size."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    moe = _mlp_pattern(r, L, default_dense=())
    s.update(moe=bool(moe), num_experts=r.int("num_local_experts", "num_experts"),
             topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=r.int("moe_intermediate_size"),
             moe_layer_set=moe)


def _read_mla_family(r, s, ll, notes, warnings):
    """MLA decoders outside DeepSeek's own types (GLM-4.7-Flash `glm4_moe_lite`, Youtu, MiniCPM3):
    DeepSeek-V2's latent attention (kv_lora_rank, q_lora_rank), and where experts are given,
    routed + shared experts on the MoE layers of mlp_layer_types (else from first_k_dense_replace)."""
    _llama(r, s, ll, notes, warnings, "llama")
    _read_mla(r, s)
    if r.has("n_routed_experts") or r.has("num_experts"):
        _read_routed_shared(r, s, s["num_layers"], dense=range(r.int("first_k_dense_replace", lo=0, default=0)))


def _read_routed_moe(r, s, ll, notes, warnings):
    """Llama-style MoE decoders with per-head q/k norms, dense layers first and routed + shared
    experts (EXAONE MoE, AFMoE): the MoE layers from mlp_layer_types, else after
    first_k_dense_replace / num_dense_layers; AFMoE's attention has a sigmoid output gate (h -> a d),
    four norms per layer and a per-expert bias parameter in its router."""
    mt = s["model_type"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    n_dense = r.int("first_k_dense_replace", "num_dense_layers", lo=0, default=0)
    _read_routed_shared(r, s, s["num_layers"], dense=range(n_dense))
    if mt == "afmoe":  # + norms after attention and MLP, and a learned per-expert routing bias
        s.update(attn_output_gate="elementwise", norms_per_layer=4, router_has_bias=True)
        r.used.update(("global_attn_every_n_layers", "mup_enabled"))


def _read_bitnet(r, s, ll, notes, warnings):
    """BitNet b1.58: a Llama block with an RMSNorm before o_proj (h) and before down_proj (f)."""
    _llama(r, s, ll, notes, warnings, "llama", attn_extra_weights=s["hidden_size"],
           mlp_act_params=ll["ffn_hidden_size"])


def _read_diffllama(r, s, ll, notes, warnings):
    """DiffLlama (differential attention): a Llama block with four learned lambda vectors of
    head_dim per attention (lambda_q1, k1, q2, k2)."""
    _llama(r, s, ll, notes, warnings, "llama")
    s["attn_extra_weights"] = 4 * s["head_dim"]


def _read_phi4mm(r, s, ll, notes, warnings):
    """Phi-4-multimodal's language model: Phi-3's block (fused qkv and gate/up, no biases); its
    causal-LM class also holds the image and audio embedders (embed_tokens_extend), not counted."""
    _llama(r, s, ll, notes, warnings, "phi3")
    warnings.append("multimodal 'phi4_multimodal': the language model is counted; the image and audio "
                    "embedders (embed_tokens_extend) are not counted")


def _read_mllama(r, s, ll, notes, warnings):
    """Llama 3.2 Vision's text model: a Llama block, and on cross_attention_layers a cross-attention
    block of the same projections with per-head q/k RMSNorms and two tanh gates (attention, MLP);
    the token table has 8 more rows than the head (vocab_size + 8, MllamaTextModel)."""
    L, h = s["num_layers"], s["hidden_size"]
    _llama(r, s, ll, notes, warnings, "llama")
    cross = [i for i in r.int_list("cross_attention_layers", default=[]) if i < L]
    s["layer_overrides"] = {i: {"attention": {"qk_norm": "head", "extra_weights": 2}} for i in cross}
    s["other_params"] = {"image_token_rows": 8 * h}
    if cross:
        warnings.append(f"{len(cross)} cross-attention layers (cross_attention_layers) attend to the image "
                        "tokens: counted as weights; their FLOPs and cache are taken as self-attention's")


def _read_ernie45_vl(r, s, ll, notes, warnings):
    """ERNIE-4.5-VL MoE's text model: on the sparse layers of mlp_layer_types a text MoE and a vision
    MoE side by side (moe_num_experts each, widths moe_intermediate_size [text, vision], top
    moe_k, routers with a learned score-correction bias), shared experts of the text width; gated
    dense MLPs elsewhere; tied head."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama")
    widths = r.int_list("moe_intermediate_size", lo=1, length=2)
    E, k, n_sh = r.int("moe_num_experts"), r.int("moe_k"), r.int("moe_num_shared_experts", lo=0, default=0)
    moe = _mlp_pattern(r, L, default_dense=(0,))
    s.update(moe=bool(moe), num_experts=E, topk=k, moe_ffn_hidden_size=widths[0], num_shared_experts=n_sh,
             shared_expert_ffn_hidden_size=n_sh * widths[0], router_has_bias=True, moe_layer_set=moe)
    vision = {"kind": "moe", "width": widths[1], "linears": 3, "bias": False, "num_experts": E, "topk": k,
              "zero_experts": 0, "shared_width": 0, "shared_bias": False, "shared_gate": False, "router_bias": True}
    s["layer_overrides"] = {i: {"more_mlp": (vision,)} for i in moe}
    r.bool("use_bias", default=False)
    if moe:
        warnings.append("ERNIE-4.5-VL: each sparse layer also holds a vision MoE (counted); active counts k of "
                        "its experts, as an image token runs them (a text token runs none)")


def _read_molmo2(r, s, ll, notes, warnings):
    """Molmo 2's text model: a Llama block with per-head q/k RMSNorms (qk_norm_type qwen3; over all
    heads for olmo) and additional_vocab_size more token rows than the head."""
    _llama(r, s, ll, notes, warnings, "llama",
           qk_norm="full" if r.str("qk_norm_type", default="qwen3") == "olmo" else "head")
    extra = r.int("additional_vocab_size", lo=0, default=0)
    if extra:
        s["other_params"] = {"additional_vocab": extra * s["hidden_size"]}
    r.used.update(("rope_scaling_layers", "norm_after"))


def _read_mpt(r, s, ll, notes, warnings):
    """MPT: ALiBi (or learned positions with learned_pos_emb and no alibi), a fused q/k/v and an
    output projection, a two-matrix GELU MLP of expansion_ratio x d_model, LayerNorms; no biases
    and weight-only norms with no_bias; attention settings in attn_config (qk_ln: LayerNorms over
    q and k of width d_model each)."""
    h = s["hidden_size"]
    sub = r.sub("attn_config") or {}
    alibi = sub.get("alibi", False) is True
    no_bias = r.bool("no_bias", default=True)
    s.update(norm="rmsnorm" if no_bias else "layernorm", num_mlp_linears=2, qkv_bias=not no_bias,
             attn_out_bias=not no_bias, mlp_bias=not no_bias, num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"],
             ffn_hidden_size=int(r.num("expansion_ratio", default=4) * h),
             position_embedding="alibi" if alibi else "learned")
    if not alibi:
        s["position_embedding_rows"] = r.int("max_seq_len", default=2048)
    if sub.get("qk_ln"):
        s.update(qk_norm="full", attn_norm="layernorm" if not no_bias else "rmsnorm")
    r.used.update(("learned_pos_emb", "max_seq_len", "norm_type"))


def _read_mimo_v2(r, s, ll, notes, warnings):
    """MiMo-V2-Flash: keys of head_dim and values of v_head_dim (narrower); sliding layers have twice
    num_key_value_heads and a sink logit per head (modeling_mimo_v2_flash); dense layers and MoE
    layers (routed experts, a router whose score correction is a buffer) from mlp_layer_types."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama")
    dv = r.int("v_head_dim", default=s["head_dim"])
    _read_routed_shared(r, s, L, dense=())
    lt = s["layer_types"] = _layer_pattern(r, L, s) or ["full"] * L
    over = {}
    for i in range(L):
        a = {"v_dim": dv}
        if lt[i] == "sliding":
            a.update(kv_heads=2 * s["num_kv_heads"], sinks=True)
        over[i] = {"attention": a}
    s["layer_overrides"] = over
    r.used.add("attention_value_scale")


def _read_minimax_m3(r, s, ll, notes, warnings):
    """MiniMax-M3 (VL text model): per-head q/k RMSNorms; MoE layers of mlp_layer_types with
    num_local_experts experts of intermediate_size and one shared expert of
    shared_intermediate_size; dense layers of dense_intermediate_size. Layers listed as
    indexed_attention are refused (their indexer is not described)."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    lt = r.str_list("layer_types", choices={"full_attention", "sliding_attention", "indexed_attention"}, length=L)
    if lt and "indexed_attention" in lt:
        raise ValueError(f"{r.where}: indexed_attention layers (a top-k block indexer) are not counted by this "
                         "script yet")
    moe = _mlp_pattern(r, L, default_dense=())
    sh = r.int("shared_intermediate_size", lo=0, default=0)
    s.update(moe=bool(moe), num_experts=r.int("num_local_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=ll["ffn_hidden_size"], num_shared_experts=1 if sh else 0,
             shared_expert_ffn_hidden_size=sh, moe_layer_set=moe,
             ffn_hidden_size=r.int("dense_intermediate_size", default=ll["ffn_hidden_size"]))
    r.used.update(("rotary_dim", "swiglu_alpha", "swiglu_limit") + tuple(k for k in r.cfg if k.startswith("index_")))


def _read_gpt1_family(r, s, ll, notes, warnings):
    """GPT-2's block read from GPT-2's fields, with a family's changes: GPT-BigCode (StarCoder 1,
    SantaCoder) one K/V head with multi_query; GPT-1 (openai-gpt) norms after each block and no
    final norm, MLP 4 h."""
    _read_gpt2(r, s, ll, notes, warnings)
    mt = s["model_type"]
    if mt == "gpt_bigcode" and r.bool("multi_query", default=True):
        s["num_kv_heads"] = 1
        r.used.add("num_key_value_heads")
    if mt == "openai-gpt":
        s.update(final_norm=False, ffn_hidden_size=4 * s["hidden_size"])
        r.used.update(("afn",) + tuple(k for k in r.cfg if k.startswith("summary_")))


def _read_biogpt(r, s, ll, notes, warnings):
    """BioGPT: OPT's block (learned positions offset by 2 rows, LayerNorms, biases everywhere, a
    two-matrix GELU MLP, a final LayerNorm), tied head."""
    rows = r.int("max_position_embeddings", default=1024)
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="learned", position_embedding_rows=rows + 2,
             num_kv_heads=s["num_attention_heads"], head_dim=s["hidden_size"] // s["num_attention_heads"],
             ffn_hidden_size=ll["ffn_hidden_size"])


def _read_nanochat(r, s, ll, notes, warnings):
    """nanochat: RMSNorms without weights, a two-matrix ReLU^2 MLP, no biases (attention_bias)."""
    _llama(r, s, ll, notes, warnings, "llama", norm="none", num_mlp_linears=2)
    r.used.add("final_logit_softcapping")


def _read_kolibri(r, s, ll, notes, warnings):
    """Kolibri 1: per-head q/k RMSNorms, norms after attention and MLP (4 per layer), every layer a
    MoE of num_local_experts experts of moe_intermediate_size with one shared expert of
    shared_expert_intermediate_size; sliding and full layers as layer_types lists them."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head", norms_per_layer=4)
    sh = r.int("shared_expert_intermediate_size", lo=0, default=0)
    s.update(moe=True, num_experts=r.int("num_local_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=r.int("moe_intermediate_size"), num_shared_experts=1 if sh else 0,
             shared_expert_ffn_hidden_size=sh, moe_layer_set=_mlp_pattern(r, L, default_dense=()))


def _read_axk1(r, s, ll, notes, warnings):
    """A.X K1: DeepSeek-V3's block (MLA, routed + shared experts on the sparse layers of
    mlp_layer_types) with one more RMSNorm after each MoE block (post_mlp_layernorm)."""
    _read_mla_family(r, s, ll, notes, warnings)
    s["layer_overrides"] = {i: {"norms": 3} for i in s.get("moe_layer_set") or ()}


def _read_laguna(r, s, ll, notes, warnings):
    """Laguna: per-head q/k RMSNorms and a per-head sigmoid output gate (g_proj h -> a, with
    gating); dense and MoE layers from mlp_layer_types, experts of moe_intermediate_size, one shared
    expert of shared_expert_intermediate_size, a learned score-correction bias in the router."""
    L = s["num_layers"]
    heads = r.int_list("num_attention_heads_per_layer", lo=1, length=L, default=None)
    if heads and any(x != s["num_attention_heads"] for x in heads):
        raise ValueError(f"{r.where}: num_attention_heads_per_layer differs between layers, which this "
                         "script does not describe yet")
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head",
           attn_output_gate="headwise" if r.bool("gating", default=True) else "none")
    _read_one_shared_expert(r, s, _mlp_pattern(r, L, default_dense=()), router_has_bias=True)
    r.used.update(("moe_routed_scaling_factor", "moe_apply_router_weight_on_input", "moe_router_logit_softcapping"))


def _read_flint(r, s, ll, notes, warnings):
    """Flint: a Qwen3-MoE block (per-head q/k RMSNorms) with a sink logit per head, dense layers
    mlp_only_layers, MoE on the others every decoder_sparse_step-th with one ungated shared expert
    of shared_expert_intermediate_size."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head", attention_sinks=True)
    step = r.int("decoder_sparse_step", default=1)
    only = set(r.int_list("mlp_only_layers", default=[]))
    _read_one_shared_expert(r, s, [i for i in range(L) if i not in only and (i + 1) % step == 0])


def _read_beam(r, s, ll, notes, warnings):
    """Beam: per-head q/k RMSNorms, an elementwise sigmoid output gate (gate_proj h -> a d) with a
    learned bias per head, four norms per layer; dense and MoE layers from mlp_layer_types (routed
    experts only)."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head", attn_output_gate="elementwise",
           norms_per_layer=4)
    s["attn_extra_weights"] = s["num_attention_heads"]
    s.update(moe=True, num_experts=r.int("num_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=r.int("moe_intermediate_size"), moe_layer_set=_mlp_pattern(r, L, default_dense=()))
    r.used.add("final_logit_softcapping")


def _read_xglm(r, s, ll, notes, warnings):
    """XGLM and the Kosmos-2 / 2.5 text models: sinusoidal positions (no weights), LayerNorms,
    biases everywhere, a two-matrix GELU MLP of ffn_dim, a final LayerNorm, tied head. Kosmos-2
    adds a LayerNorm inside attention (over h) and inside the MLP (over ffn_dim); Kosmos-2.5 the
    LayerNorm inside the MLP and a 2-row segment embedding."""
    mt, h = s["model_type"], s["hidden_size"]
    f = r.int("ffn_dim")
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="none", num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"], ffn_hidden_size=f)
    if mt == "kosmos_2_text_model":
        s.update(attn_extra_weights=2 * h, mlp_act_params=2 * f)
    if mt == "kosmos_2_5_text_model":
        s.update(mlp_act_params=2 * f, other_params={"segment_embedding": 2 * h})
    r.used.update(("scale_embedding", "activation_function"))


def _read_ctrl(r, s, ll, notes, warnings):
    """CTRL: sinusoidal positions, LayerNorms, biases everywhere, a two-matrix ReLU MLP of dff, a
    final LayerNorm, a tied head with its own bias (V)."""
    h = s["hidden_size"]
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="none", num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"], ffn_hidden_size=r.int("dff"),
             other_params={"lm_head_bias": s["vocab_size"]})
    r.used.add("n_positions")


def _read_neox_japanese(r, s, ll, notes, warnings):
    """GPT-NeoX-Japanese: GPT-NeoX's block without biases but on the last layer's attention output,
    an MLP of intermediate_multiple_size x h, LayerNorms, rotary."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="rope", num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"],
             ffn_hidden_size=r.int("intermediate_multiple_size", default=4) * h)
    s["layer_overrides"] = {L - 1: {"attention": {"out_bias": True}}}


def _read_aria(r, s, ll, notes, warnings):
    """Aria's text model: every layer a MoE of moe_num_experts experts of intermediate_size (top
    moe_topk) and moe_num_shared_experts shared experts of that width, router without bias."""
    L, f = s["num_layers"], ll["ffn_hidden_size"]
    _llama(r, s, ll, notes, warnings, "llama")
    n_sh = r.int("moe_num_shared_experts", lo=0, default=2)
    s.update(moe=True, num_experts=r.int("moe_num_experts"), topk=r.int("moe_topk"), moe_ffn_hidden_size=f,
             num_shared_experts=n_sh, shared_expert_ffn_hidden_size=n_sh * f, moe_layer_set=list(range(L)))


def _read_gemma4_unified(r, s, ll, notes, warnings):
    """Gemma 4 unified's text model: Gemma 4's block (per_layer_config head dims) without per-layer
    embeddings unless hidden_size_per_layer_input says so."""
    r.cfg = {**r.cfg, "hidden_size_per_layer_input": r.cfg.get("hidden_size_per_layer_input") or 0}
    _read_gemma4(r, s, ll, notes, warnings)
    r.used.add("use_bidirectional_attention")


def _read_reference_sliding(r, s, ll, notes, warnings):
    """Unlimited-OCR's text model: DeepSeek-V2's MoE layout without MLA (routed + shared experts on
    the sparse layers of mlp_layer_types), reference_sliding_attention layers counted as sliding
    ones (same weights; their cache and FLOPs as a sliding window's, stated)."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama")
    _read_routed_shared(r, s, L, dense=(0,))
    lt = r.str_list("layer_types", choices={"reference_sliding_attention", "sliding_attention", "full_attention"},
                    length=L)
    if lt:
        s["layer_types"] = ["full" if t == "full_attention" else "sliding" for t in lt]
        if "reference_sliding_attention" in lt:
            warnings.append("reference_sliding_attention layers: weights counted; their cache and FLOPs are "
                            "taken as a sliding window's (the reference tokens they also see are not modelled)")


def _read_modernbert_decoder(r, s, ll, notes, warnings):
    """ModernBERT decoder: bias-free LayerNorms (weights only) after the embedding, before attention
    (not on layer 0) and before the MLP; a fused gated MLP (Wi h -> 2 f, Wo f -> h); no biases;
    sliding and full layers (layer_types); a head transform (dense h x h and a norm) before the tied
    decoder, which has a bias (V)."""
    h = s["hidden_size"]
    _llama(r, s, ll, notes, warnings, "llama", embedding_norm=True, layer_overrides={0: {"norms": 1}},
           other_params={"head_dense": h * h, "head_norm": h, "decoder_bias": s["vocab_size"] * r.bool("decoder_bias", default=True)})
    if r.bool("norm_bias", default=False):
        s["norm"] = "layernorm"
    r.used.update(("local_attention", "classifier_bias", "classifier_activation", "initializer_cutoff_factor"))


def _read_muse_glimmer(r, s, ll, notes, warnings):
    """Muse Glimmer's text model: an elementwise sigmoid output gate (gate_proj h -> a d), norms
    before and after attention and MLP (4 per layer), sliding and full layers (layer_types)."""
    _llama(r, s, ll, notes, warnings, "llama", attn_output_gate="elementwise", norms_per_layer=4)
    r.used.update(("layer_rope_theta", "qk_scale_factor", "output_multiplier", "final_logit_softcapping"))


def _read_muse_spark(r, s, ll, notes, warnings):
    """Muse Spark's text model: an elementwise sigmoid output gate, three norms and two learned
    residual gates (h each) per layer, sliding and full layers; MoE layers (mlp_layer_types) whose
    experts work in a latent of moe_hidden_size m: a projection h -> m with a norm, E gated experts
    m -> f -> m, a norm and a projection m -> h; the router reads h. The experts' weights 3 m f equal
    a gated expert of width m f / h on h (so counted, FLOPs alike); the latent projections are
    matmuls every token runs (extra_params); the latent norms and residual gates are counted with
    the attention block's weights."""
    L, h = s["num_layers"], s["hidden_size"]
    m, f = r.int("moe_hidden_size"), r.int("moe_intermediate_size")
    if (m * f) % h:
        raise ValueError(f"{r.where}: moe_hidden_size x moe_intermediate_size is not a multiple of hidden_size")
    _llama(r, s, ll, notes, warnings, "llama", attn_output_gate="elementwise", norms_per_layer=3)
    moe = _mlp_pattern(r, L, default_dense=())
    s.update(moe=bool(moe), num_experts=r.int("num_local_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=m * f // h, moe_layer_set=moe, attn_extra_weights=2 * h,
             layer_overrides={i: {"extra_params": 2 * h * m, "attention": {"extra_weights": 2 * h + 2 * m}}
                              for i in moe})
    r.used.update(("layer_rope_theta", "qk_scale_factor", "output_multiplier", "final_logit_softcapping",
                   "residual_gate_temperature"))


def _read_hy_v4(r, s, ll, notes, warnings):
    """Hunyuan V4: GLM-5's sparse attention (MLA with a lightning indexer, shared-indexer layers from
    indexer_types) with a sink logit per head and an elementwise sigmoid output gate (gate_proj
    h -> a d_v); dense then MoE layers (mlp_layer_types, one shared expert); hyper-connections over
    hc_mult streams without DeepSeek-V4's combination matrix (HYV4HyperConnection: per module a
    projection 4 h x 2 hc, 2 hc biases and 2 scales; one head module, hc x hc h + hc + 1). The gate
    and the hyper-connection projections are matmuls every token runs (extra_params, their FLOPs
    counted: 2 per weight for the gate, 2 x 2 hc x hc h per module)."""
    h = s["hidden_size"]
    _read_dsa(r, s, ll, notes, warnings)
    a, dv, hc = s["num_attention_heads"], s["v_head_dim"], r.int("hc_mult", default=4, hi=1024)
    s["attention_sinks"] = True
    gate = h * a * dv
    s.update(extra_params_per_layer=gate + 2 * (2 * hc * hc * h + 2 * hc + 2),
             extra_flops_per_layer=2 * gate + 2 * (2 * 2 * hc * hc * h),
             other_params={"hc_head": hc * hc * h + hc + 1}, input_matmul_params=hc * hc * h,
             residual_streams=hc)
    r.used.update(("hc_magnitude", "hc_eps", "learnable_sink_init", "swiglu_limit"))


def _read_moshi(r, s, ll, notes, warnings):
    """Moshi's temporal transformer (MoshiForCausalLM): a Llama block whose MLP fuses gate and up
    (fc1 h -> ffn_dim, fc2 ffn_dim / 2 -> h), no biases, a token table one row longer than the head;
    the audio codec and depth decoder of the full Moshi are not part of this class."""
    _llama(r, s, ll, notes, warnings, "llama", ffn_hidden_size=r.int("ffn_dim") // 2,
           other_params={"extra_token_row": s["hidden_size"]})
    r.used.update(("audio_vocab_size", "num_codebooks", "audio_encoder_config"))


def _read_gemma3n(r, s, ll, notes, warnings):
    """Gemma 3n's text model: Gemma 4's block with one head_dim on every layer (per-layer inputs,
    the last num_kv_shared_layers reusing earlier K/V), plus per layer AltUp over altup_num_inputs
    n streams (a modality router n x h and its norm, prediction n^2 x n and correction n x n
    coefficients, an output scale h) and a Laurel low-rank residual (h -> laurel_rank -> h, a norm);
    n - 1 AltUp projections in and n - 1 out (h x h each) for the model. The MLP width per layer
    (intermediate_size, a list) must be one value. Activation sparsity has no weights. FLOPs add per
    token AltUp's prediction product (n x n coefficients per channel, 2 n^2 h) and its router's second
    run in the correction (2 n h), matmuls transformers' Gemma3nTextAltUp runs (FlopCounterMode)."""
    h = s["hidden_size"]
    f = r.cfg.get("intermediate_size")
    if isinstance(f, list):
        r.used.add("intermediate_size")
        if not f or any(x != f[0] for x in f) or isinstance(f[0], bool) or not isinstance(f[0], int):
            r.fail("intermediate_size", "differs between layers, which this script does not describe yet", f)
        ll = dict(ll, ffn_hidden_size=f[0])
    r.cfg = {**r.cfg, "global_head_dim": r.cfg.get("head_dim") or 256, "attention_k_eq_v": False,
             "use_double_wide_mlp": False}
    _read_gemma4(r, s, ll, notes, warnings)
    n, rank = r.int("altup_num_inputs", default=4), r.int("laurel_rank", default=64)
    for o in s["layer_overrides"].values():
        o["norms"] += 2  # AltUp's router norm, Laurel's post norm
        o["extra_params"] = o.get("extra_params", 0) + 2 * rank * h + n * h + n ** 3 + n * n
        o["weightless_flops"] = 2 * (n * n * h + n * h)  # AltUp's prediction (n x n per channel), router rerun
        o["attention"] = dict(o["attention"], extra_weights=h)  # AltUp's correct_output_scale
    s["other_params"] = dict(s.get("other_params") or {}, altup_projections=2 * (n - 1) * h * h)
    s["input_matmul_params"] = s.get("input_matmul_params", 0) + 2 * (n - 1) * h * h
    r.used.update(("altup_active_idx", "altup_coef_clip", "altup_correct_scale", "activation_sparsity_pattern",
                   "final_logit_softcapping"))


def _read_git(r, s, ll, notes, warnings):
    """GIT's text decoder (GitForCausalLM; its image encoder is not counted): BERT's post-norm block
    (LayerNorms after attention and after the MLP, biases everywhere, a two-matrix GELU MLP), learned
    positions and a LayerNorm on the embeddings, no final norm, an untied head with a bias."""
    h = s["hidden_size"]
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
             position_embedding="learned", position_embedding_rows=r.int("max_position_embeddings", default=1024),
             embedding_norm=True, final_norm=False, num_kv_heads=s["num_attention_heads"],
             head_dim=h // s["num_attention_heads"], ffn_hidden_size=ll["ffn_hidden_size"],
             other_params={"lm_head_bias": s["vocab_size"]})
    if isinstance(r.cfg.get("vision_config"), dict):
        warnings.append("GIT: the text decoder is counted; the image encoder and its projection are not counted")
    r.used.update(("num_image_with_embedding", "vision_config"))


def _read_cpmant(r, s, ll, notes, warnings):
    """CPM-Ant: weight-only LayerNorms before attention and MLP, q/k/v/o without biases (heads of
    dim_head), a gated GELU MLP of dim_ff, a final norm; the token table also holds
    prompt_types x prompt_length prompt rows, a segment table (segment_types rows) and a relative
    position bias per head over segment_types^2 + position_bias_num_buckets buckets; the head is its
    own tensor of vocab_size rows."""
    h, a = s["hidden_size"], s["num_attention_heads"]
    seg = r.int("segment_types", default=32)
    s.update(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="none", num_kv_heads=a, head_dim=r.int("dim_head", default=h // a),
             ffn_hidden_size=r.int("dim_ff"), tied_embeddings=False,
             other_params={"prompt_rows": r.int("prompt_types", default=32) * r.int("prompt_length", default=32) * h,
                           "segment_embedding": seg * h,
                           "position_bias": (seg * seg + r.int("position_bias_num_buckets", default=512)) * a})
    r.bool("tie_word_embeddings", default=True)  # the head cannot be tied: the tables differ in rows
    r.used.update(("position_bias_max_distance",))


def _read_dots3(r, s, ll, notes, warnings):
    """dots3: MLA on every layer with a per-head sigmoid gate (g_proj h -> a) and a norm on the rotary
    key slice (d_rope); indexed_attention layers add DeepSeek-V3.2's lightning indexer, sliding
    layers (window sliding_window) have none; per_layer_config changes a layer's heads, latent rank
    and d_nope; dense then MoE layers (mlp_layer_types) with n_shared_experts shared experts of
    shared_experts_intermediate_size."""
    L = s["num_layers"]
    lt = r.str_list("layer_types", choices={"indexed_attention", "sliding_attention"}, length=L)
    if lt is None:
        r.fail("layer_types", "must list indexed_attention and sliding_attention layers", None)
    _read_dsa_every_layer(r, s, ll, notes, warnings)
    f_sh = r.int("shared_experts_intermediate_size", "moe_shared_expert_intermediate_size",
                 default=s["moe_ffn_hidden_size"])  # x n_shared_experts (modeling_dots3_note)
    s["shared_expert_ffn_hidden_size"] = f_sh * s["num_shared_experts"]
    s.update(attn_output_gate="headwise", attn_extra_weights=s["qk_rope_head_dim"],
             layer_types=["sliding" if t == "sliding_attention" else "full" for t in lt],
             sliding_window=r.int("sliding_window", default=512))
    plc = r.sub("per_layer_config") or {}
    over = s.get("layer_overrides") or {}
    for i in range(L):
        a = {}
        cfg_i = plc.get(f"{i:02d}", plc.get(str(i)))
        if cfg_i is not None and not isinstance(cfg_i, dict):
            r.fail("per_layer_config", f"entry {i} must be a JSON object", cfg_i)
        if cfg_i is not None:
            sub = ConfigReader(cfg_i, f"{r.where} (per_layer_config {i})")
            heads = sub.int("num_attention_heads", default=s["num_attention_heads"])
            a.update(heads=heads, kv_heads=heads, kv_lora_rank=sub.int("kv_lora_rank", default=s["kv_lora_rank"]),
                     qk_nope_head_dim=sub.int("qk_nope_head_dim", default=s["qk_nope_head_dim"]))
        if lt[i] == "sliding_attention":
            a.update(index_heads=0, index_head_dim=0, index_topk=0)
        if a:
            o = over.setdefault(i, {})
            o["attention"] = dict(o.get("attention", {}), **a)
    s["layer_overrides"] = over
    r.used.add("use_sliding_window")


def _read_doge(r, s, ll, notes, warnings):
    """Doge (dense; modeling_doge): Llama-style attention with per-head q/k RMSNorms and a dynamic
    mask from the values (dt_proj kv d -> kv, a matmul every token runs, + bias with
    attention_bias; a learned A per kv head), learned per-channel residual scales before attention
    and before the MLP (2 h). Its cross-domain MoE (is_moe: product-key retrieval experts) is
    refused."""
    if r.bool("is_moe", default=False):
        raise ValueError(f"{r.where}: Doge with is_moe (product-key retrieval experts) is not counted by this "
                         "script yet")
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    kv, d, h = s["num_kv_heads"], s["head_dim"], s["hidden_size"]
    s.update(attn_extra_weights=kv + kv * s["qkv_bias"] + 2 * h, extra_params_per_layer=kv * d * kv)
    r.used.update(("keep_window_size", "num_experts", "num_experts_per_tok"))


def _read_hrm_text(r, s, ll, notes, warnings):
    """HRM text (modeling_hrm_text): a low-level and a high-level stack of num_layers_per_stack
    layers each (attention with an elementwise sigmoid output gate h -> a d, a gated MLP, weightless
    RMSNorms), run as num_hidden_layers = num_layers_per_stack x H_cycles x (L_cycles + 1) slots: per
    high cycle, L_cycles passes of the low stack, then one of the high stack (each slot its own
    cache layer). The layer list here is the slots; a slot whose stack layer an earlier slot ran
    holds no weights of its own (tied), so weights count once and FLOPs and cache per slot. The
    frozen initial low-level state z_L_init (h) is a parameter."""
    _llama(r, s, ll, notes, warnings, "llama", attn_output_gate="elementwise", norm="none", final_norm=False)
    n, H, Lc = r.int("num_layers_per_stack"), r.int("H_cycles", default=2), r.int("L_cycles", default=3)
    L = s["num_layers"]
    if not s.get("_layers_from_flag") and L != n * H * (Lc + 1):
        raise ValueError(f"{r.where}: num_hidden_layers {L} is not num_layers_per_stack x H_cycles x (L_cycles + 1) "
                         f"= {n * H * (Lc + 1)}; transformers' cache would not match it")
    first_high = Lc * n  # the high stack first runs after L_cycles passes of the low one
    s["layer_overrides"] = {i: {"attention": {"tied": True}, "mlp": {"tied": True}} for i in range(L)
                            if not (i < n or first_high <= i < first_high + n)}
    s["other_params"] = {"z_L_init": s["hidden_size"]}
    r.used.update(("L_bp_cycles", "embedding_scale", "prefix_lm"))


# model_type -> reader, for config.py's registry; the wrappers' text models read as their family.
MORE_READERS = {
    "dots3_note_text": _read_dots3,
    "cpmant": _read_cpmant,
    "git": _read_git,
    "glm": _read_glm, "glm4": _read_glm, "glm4v_text": _read_glm, "glm_ocr_text": _read_glm,
    "glm4v_moe_text": _read_glm4v_moe, "olmoe": _read_olmoe, "flex_olmo": _read_olmoe,
    "hunyuan_v1_dense": _read_hunyuan, "hunyuan_v1_moe": _read_hunyuan, "hunyuan_vl_text": _read_hunyuan,
    "hyperclovax": _read_post_norm, "granite_swa": _read_sinks, "granitemoe_swa": _read_sinks,
    "arcee": _read_two_linear, "nemotron": _read_two_linear, "jais2": _read_two_linear,
    "apertus": _read_two_linear, "olmo": _read_olmo, "cohere": _read_cohere, "cohere2_moe": _read_cohere,
    "stablelm": _read_stablelm, "persimmon": _read_persimmon, "phi": _read_phi, "gptj": _read_gptj,
    "codegen": _read_gptj, "gpt_neo": _read_gpt_neo, "mellum": _read_mellum, "glm4_moe_lite": _read_mla_family,
    "youtu": _read_mla_family, "minicpm3": _read_mla_family, "exaone_moe": _read_routed_moe,
    "afmoe": _read_routed_moe, "bitnet": _read_bitnet, "diffllama": _read_diffllama,
    "ernie4_5_vl_moe_text": _read_ernie45_vl, "molmo2_text": _read_molmo2, "phi4_multimodal": _read_phi4mm,
    "mllama_text_model": _read_mllama, "mimo_v2_flash": _read_mimo_v2, "minimax_m3_vl_text": _read_minimax_m3,
    "apertus1p5_text": _read_two_linear, "gpt_bigcode": _read_gpt1_family, "openai-gpt": _read_gpt1_family,
    "biogpt": _read_biogpt, "nanochat": _read_nanochat, "kolibri1": _read_kolibri, "axk1": _read_axk1,
    "laguna": _read_laguna, "flint": _read_flint, "beam": _read_beam, "xglm": _read_xglm,
    "kosmos_2_text_model": _read_xglm, "kosmos_2_5_text_model": _read_xglm, "ctrl": _read_ctrl,
    "gpt_neox_japanese": _read_neox_japanese, "aria_text": _read_aria,
    "gemma4_unified_text": _read_gemma4_unified, "unlimited_ocr_text": _read_reference_sliding,
    "cosmos3_edge_text": _read_two_linear, "muse_glimmer_text": _read_muse_glimmer,
    "muse_spark_text": _read_muse_spark, "hy_v4": _read_hy_v4, "moshi": _read_moshi,
    "gemma3n_text": _read_gemma3n, "doge": _read_doge, "hrm_text": _read_hrm_text, "modernbert-decoder": _read_modernbert_decoder, "mpt": _read_mpt,
}
# Families whose configs name the basic sizes otherwise: read as the usual names.
FIELD_ALIASES = {"attention_heads": "num_attention_heads", "layers": "num_hidden_layers",
                 "embed_dim": "hidden_size"}
ALIASED = {"xglm", "kosmos_2_text_model", "kosmos_2_5_text_model"}


# Text models of wrappers (and renamed families) that transformers builds with a known family's
# block: read as that family.
SAME_AS = {"qwen2_vl_text": "qwen2", "qwen2_5_vl_text": "qwen2", "qwen2_5_omni_text": "qwen2",
           "qwen3_vl_text": "qwen3", "qwen3_vl_moe_text": "qwen3_moe", "qwen3_omni_moe_text": "qwen3_moe",
           "sarvam_moe": "glm4_moe", "sarvam_mla": "deepseek_v3", "hy_v4_vl_text": "hy_v4"}


# ======== llmcalc/model/families_moa.py ===========================================================
# Family readers for decoders whose attention itself is routed: JetMoE's mixture of attention
# heads (transformers' modeling_jetmoe; Shen et al. 2024, arXiv 2404.07413). The attention-expert
# formulas are in formulas.py (attention_expert_params, attention_inactive_params); each reader says
# what its modeling file builds, checked against the meta-device build (tests/test_all_types.py).

def _read_jetmoe(r, s, ll, notes, warnings):
    """JetMoE (modeling_jetmoe): mixture of attention heads (MoA) and MoE MLPs on every layer. The
    attention's E = num_local_experts experts each project q (h -> kv d) and o (kv d -> h); a token
    runs num_experts_per_tok = k of them (a = k kv query heads of d = kv_channels over one shared
    k/v projection h -> 2 kv d, K/V repeated k times); the MLP's E gated experts of
    intermediate_size; a router h x E and an output bias h in each."""
    # absent or null: JetMoeConfig's defaults (tests/fixtures/all_types/jetmoe.json)
    kv, d = r.int("num_key_value_heads", default=16), r.int("kv_channels", default=128)
    E = r.int("num_local_experts", default=8)
    k = r.int("num_experts_per_tok", default=2, hi=E)
    a = s["num_attention_heads"]
    if a != k * kv:
        r.fail("num_attention_heads", f"must be num_experts_per_tok x num_key_value_heads = {k * kv} "
               "(JetMoE's query heads are the k chosen experts' kv heads)", a)
    _llama(r, s, ll, notes, warnings, "llama", num_kv_heads=kv, head_dim=d, qkv_bias=False, attn_out_bias=False,
           mlp_bias=False, num_mlp_linears=3, attn_extra_weights=2 * s["hidden_size"])
    L = s["num_layers"]
    s.update(moe=True, num_experts=E, topk=k, moe_ffn_hidden_size=r.int("intermediate_size", default=5632),
             moe_layer_set=list(range(L)),
             layer_overrides={i: {"attention": {"attn_experts": E, "attn_topk": k}} for i in range(L)})
    r.used.update(("activation_function", "aux_loss_coef"))


MOA_READERS = {"jetmoe": _read_jetmoe}


# ======== llmcalc/model/families_sconv.py =========================================================
# Family readers for attention decoders whose layers add short causal convolutions and a
# relative-position bias around softmax attention: Inkling, Inkling 2 and Inkling 2 Loop
# (transformers' modeling_inkling, modeling_inkling2, modeling_inkling2_loop), and ZAYA's compressed
# convolutional attention (modeling_zaya); and Dory (modeling_dory: an nGPT-style block whose released
# configs list attention and MLP as separate entries of layer_types). Each
# reader says what its modeling file builds, checked against the meta-device build
# (tests/test_all_types.py).

def _inkling_layer_types(r, L):
    """Inkling / Inkling 2's layer_types ("hybrid": full attention, "hybrid_sliding": sliding) as our
    kinds; absent, their configs' default: every 6th layer full."""
    lt = r.str_list("layer_types", choices={"hybrid", "hybrid_sliding"}, length=L)
    if lt is None:
        lt = ["hybrid" if (i + 1) % 6 == 0 else "hybrid_sliding" for i in range(L)]
    return ["sliding" if t == "hybrid_sliding" else "full" for t in lt[:L]]


def _read_inkling(r, s, ll, notes, warnings):
    """Inkling (text model and the multimodal wrapper's language model): layer_types "hybrid"
    (full attention) and "hybrid_sliding" (sliding_window_size window, swa_* heads and head size);
    no rotary (a relative-logit bias instead: r_proj h -> a d_rel, a matmul every token runs, and a
    d_rel x rel_extent bank, rel_extent = the window on sliding layers); per-head q/k RMSNorms;
    depthwise causal convolutions of conv_kernel_size taps (no bias) on k and v and on the
    attention's and the MLP's outputs; an RMSNorm on the embedding. MoE layers of mlp_layer_types:
    n_routed_experts of moe_intermediate_size, n_shared_experts of the same width, a router over
    routed and shared experts (h x (E + S)) with a learned global scale; a dense layer's MLP of
    intermediate_size has a global scale (1 weight). The cache keeps each convolution's last K inputs
    (fp32) beside the K/V: constant per sequence (state_elements)."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll, qk_norm="head", position_embedding="none", embedding_norm=True, mlp_act_params=1)
    K, d_rel = r.int("conv_kernel_size", default=4), r.int("d_rel", default=16)
    ext = r.int("rel_extent", default=1024)
    window = r.int("sliding_window_size", default=512)
    swa = {"heads": r.int("swa_num_attention_heads", default=64),
           "kv_heads": r.int("swa_num_key_value_heads", default=16), "head_dim": r.int("swa_head_dim", default=128)}
    s["layer_types"] = _inkling_layer_types(r, L)
    s["sliding_window"] = window
    E, S, f_e = r.int("n_routed_experts"), r.int("n_shared_experts", lo=0, default=0), r.int("moe_intermediate_size")
    moe = _mlp_pattern(r, L, default_dense=())
    s.update(moe=bool(moe), num_experts=E, topk=r.int("num_experts_per_tok"), moe_ffn_hidden_size=f_e,
             num_shared_experts=S, shared_expert_ffn_hidden_size=S * f_e, moe_layer_set=moe)
    over = {}
    for i in range(L):
        sliding = s["layer_types"][i] == "sliding"
        a, kv, d = ((swa["heads"], swa["kv_heads"], swa["head_dim"]) if sliding else
                    (s["num_attention_heads"], s["num_kv_heads"], s["head_dim"]))
        # k and v convolutions (kv d channels each), the relative-logit bank, the two residual convolutions
        attn = {"heads": a, "kv_heads": kv, "head_dim": d,
                "extra_weights": 2 * kv * d * K + d_rel * (window if sliding else ext) + 2 * h * K,
                "kv_conv_taps": K, "residual_conv_state": 2 * h * K}  # the convolutions' windows (fp32)
        over[i] = {"attention": attn, "extra_params": h * a * d_rel,
                   "mlp": {"router_extra": S * h + 1} if i in moe else {}}
    s["layer_overrides"] = over
    r.used.update(("local_layer_ids", "number_of_conv_states", "log_scaling_n_floor", "log_scaling_alpha",
                   "route_scale", "shared_expert_sink", "mtp_hidden_states_first", "rms_norm_eps_moe_gate", "logits_mup_width_multiplier", "unpadded_vocab_size"))


def _read_inkling2(r, s, ll, notes, warnings):
    """Inkling 2 and Inkling 2 Loop (text models and the wrappers' language models): layer_types
    "hybrid" (full attention) and "hybrid_sliding" (sliding_window_size window, swa_* heads). Every
    attention: q with a learned per-head scale (a d; k's L2 clip and v's RMSNorm have no weights), an
    elementwise sigmoid output gate (gate_proj h -> a d), a per-token sink logit per head (sink_proj
    h -> a), a relative-logit bias (h -> a d_rel with a per-head scale a d_rel, a d_rel x rel_extent
    bank; rel_extent = the window on sliding layers), no rotary. k and v run through depthwise causal
    convolutions of conv_kernel_size taps (full layers add per-token taps from h -> kv K per
    convolution). Per layer: block attention-residual queries (h before the MLP; h before attention
    on a sliding layer, 3 h on a full one, none on layer 0), the RMSNorms (one before attention on a
    sliding layer, one per q, k, v on a full one; one after), the convolutions on attention's and the
    MLP's outputs (h K each); every layer an MoE of n_routed_experts (router h x E); an RMSNorm on the
    embedding, a final attention-residual query (h), a head of unpadded_vocab_size rows. Inkling 2
    Loop: layers loop_layer_index_start to loop_layer_index_end run loop_num_passes times and have
    four message gates each (2 h -> r -> h, h; r = loop_gate_rank), plus message queries (4 h per
    looped layer) on the model. The cache keeps each convolution's last K inputs (fp32) beside the
    K/V (state_elements)."""
    L, h, V = s["num_layers"], s["hidden_size"], s["vocab_size"]
    s.update(ll, qk_norm="none", position_embedding="none", embedding_norm=True,
             attn_output_gate="elementwise")
    K, d_rel = r.int("conv_kernel_size", default=4), r.int("d_rel", default=16)
    ext, window = r.int("rel_extent", default=1024), r.int("sliding_window_size", default=1024)
    swa = (r.int("swa_num_attention_heads", default=s["num_attention_heads"]),
           r.int("swa_num_key_value_heads", default=s["num_kv_heads"]), r.int("swa_head_dim", default=s["head_dim"]))
    s["layer_types"] = _inkling_layer_types(r, L)
    s["sliding_window"] = window
    s.update(moe=True, num_experts=r.int("n_routed_experts"), topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=r.int("moe_intermediate_size"), moe_layer_set=list(range(L)))
    loop, rank = range(0), 0
    if s["model_type"] == "inkling2_loop_text":
        start, end = r.int("loop_layer_index_start", lo=0, default=6), r.int("loop_layer_index_end", default=18)
        passes, rank = r.int("loop_num_passes", default=3), r.int("loop_gate_rank", default=64)
        loop = range(start, min(end, L))
        s["other_params"] = {"message_queries": 4 * h * len(loop)}
        if passes > 1 and loop:
            warnings.append(f"layers {start}-{loop[-1]} run {passes} passes per token (Inkling 2 Loop): the weights "
                            "are counted once, as stored; the per-token FLOPs, activations and cache here count "
                            "one pass")
    s["other_params"] = dict(s.get("other_params", {}), final_attention_residual_query=h)
    s["head_vocab_size"] = r.int("unpadded_vocab_size", default=V)
    over = {}
    for i in range(L):
        full = s["layer_types"][i] == "full"
        a, kv, d = (s["num_attention_heads"], s["num_kv_heads"], s["head_dim"]) if full else swa
        queries = h + (3 * h if full else h) * (i > 0)
        attn = {"heads": a, "kv_heads": kv, "head_dim": d,
                "extra_weights": a * d + a * d_rel + d_rel * (ext if full else window) + 2 * kv * d * K
                + 2 * h * K + queries, "kv_conv_taps": K, "residual_conv_state": 2 * h * K}
        extra = h * a * d_rel + h * a + 2 * h * kv * K * full + 16 * h * rank * (i in loop)
        over[i] = {"attention": attn, "extra_params": extra, "norms": 4 if full else 2}
    s["layer_overrides"] = over
    r.used.update(("log_scaling_n_floor", "log_scaling_alpha", "route_scale", "qk_l2_clip_threshold",
                   "rel_l2_clip_threshold", "n_layers_per_attn_res_block", "mlp_gate_softcap", "mlp_up_softcap",
                   "final_logit_softcapping", "scoring_func", "loop_num_passes"))


def _read_zaya(r, s, ll, notes, warnings):
    """ZAYA (compressed convolutional attention, arXiv 2510.04476, as transformers' modeling_zaya
    builds it): q (h -> a d), k (h -> kv d) and v as a current and a delayed half (h -> kv d / 2
    each); q and k mixed by a depthwise causal convolution of cca_time0 taps and a grouped one of
    cca_time1 taps (one group per q and k head, d -> d; both with biases) over C = (a + kv) d
    channels; a temperature per kv head; no bias by default; partial rotary. Per layer: two RMSNorms
    and two residual scalings (scale and bias on the branch and on the residual, 4 h each). Every
    layer an MoE of num_experts experts of moe_intermediate_size, top num_experts_per_tok, and a
    skip expert without weights; the router runs an MLP: h -> R (+ bias), an RMSNorm over R, two
    R x R layers with biases, R -> E + 1; from layer 1 a learned scale R on the previous layer's
    router state. Weights the routed expert count here: top-k real experts (the skip expert, when
    chosen, runs none: an upper bound). The convolutions' weights and the router MLP's matmuls beyond
    h x E are the layer's extra matmuls (their FLOPs 2 per weight per token); the model has an input
    scale and bias (2 h). The cache keeps the q/k convolution's window and the delayed value half beside
    the K/V (state_elements)."""
    L, h = s["num_layers"], s["hidden_size"]
    s.update(ll, qkv_bias=r.bool("attention_bias", default=False))
    s["attn_out_bias"] = s["qkv_bias"]
    a, kv, d = s["num_attention_heads"], s["num_kv_heads"], s["head_dim"]
    E, R = r.int("num_experts"), r.int("router_hidden_size", default=256)
    t0, t1 = r.int("cca_time0", default=2), r.int("cca_time1", default=2)
    C = (a + kv) * d
    lt = r.str_list("layer_types", choices={"hybrid", "hybrid_sliding"}, length=L)
    if lt is not None:
        s["layer_types"] = ["sliding" if t == "hybrid_sliding" else "full" for t in lt[:L]]
    s.update(moe=True, num_experts=E, topk=r.int("num_experts_per_tok"),
             moe_ffn_hidden_size=r.int("moe_intermediate_size"), moe_layer_set=list(range(L)))
    s["other_params"] = {"input_scale_and_bias": 2 * h}
    if r.bool("lm_head_bias", default=False) and not s["tied_embeddings"]:
        s["other_params"]["head_bias"] = s["vocab_size"]
    router_matmuls = h * R + 2 * R * R + R * (E + 1)
    over = {}
    for i in range(L):
        router_other = R + R + 2 * R + R * (i > 0)  # down_proj bias, norm, fc biases, state scale
        over[i] = {"attention": {"extra_weights": 2 * C + kv + 8 * h,  # conv biases, temperatures, residual scalings
                                 "qk_conv_taps": t0 + t1 - 2, "delayed_value_state": True},  # the cache's window, v half
                   "extra_params": C * t0 + C * d * t1 + router_matmuls - h * E,
                   "mlp": {"router_extra": router_other}}
    s["layer_overrides"] = over
    notes.append("ZAYA's router may pick its skip expert (no weights): the active count takes top-k real "
                 "experts, an upper bound")


def _read_dory(r, s, ll, notes, warnings):
    """Dory: a layer is attention then MLP on the unit sphere (nGPT; weightless L2 norms, no final
    norm): GQA with L2-normed q and k (no weights), a per-channel query scale and output-gate scale
    (a d each) and an elementwise sigmoid output gate (gate_proj h -> a d); a gated MLP with two
    per-channel scales (2 f); two per-channel residual rates (2 h); a head with a per-row logit scale
    (V). A config whose layer_types lists "mlp" entries lists each (attention, MLP) pair as two
    entries: transformers folds them (layer_types[::2], num_hidden_layers // 2, and the input,
    recurrent and output layer counts halved), as read here. The recurrent layers run
    n_recurrent_loops times per token."""
    s.update(ll, qk_norm="l2", attn_output_gate="elementwise", norm="none", final_norm=False)
    bias = r.bool("attention_bias", default=False)
    s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=r.bool("mlp_bias", default=False))
    names = {"full_attention": "full", "sliding_attention": "sliding", "mlp": "mlp"}
    lt = r.str_list("layer_types", choices=set(names), default=None)
    half = lt is not None and "mlp" in lt
    # -l counts the folded layers (as transformers builds them); the config's count is halved
    L = s["num_layers"] // 2 if half and not s.get("_layers_from_flag") else s["num_layers"]
    if half:
        lt = lt[::2]
        if "mlp" in lt:
            raise ValueError(f"{r.where}: layer_types lists 'mlp' where an attention entry belongs (pairs of "
                             "attention, mlp)")
        if L > len(lt):
            raise ValueError(f"--num-layers {L} is more than the {len(lt)} layers (attention, mlp pairs) the "
                             "config's layer_types describes")
        s["num_layers"] = L = max(1, L)
    if lt is None:
        lt = ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention" for i in range(L)]
    s["layer_types"] = [names[x] for x in lt[:L]]
    a, d, h = s["num_attention_heads"], s["head_dim"], s["hidden_size"]
    s.update(attn_extra_weights=2 * a * d + 2 * h, mlp_act_params=2 * s["ffn_hidden_size"],
             other_params={"logit_scale": s["vocab_size"]})
    div = 2 if half else 1
    n_in, n_out = r.int("n_input_layers", lo=0, default=8 * div) // div, r.int("n_output_layers", lo=0, default=8 * div) // div
    n_rec = r.int("n_recurrent_layers", lo=0, default=None)
    n_rec = L - n_in - n_out if n_rec is None else n_rec // div
    loops = r.int("n_recurrent_loops", default=2)
    n_rec = min(n_rec, L - n_in)
    if loops > 1 and n_rec > 0:
        warnings.append(f"layers {n_in}-{n_in + n_rec - 1} run {loops} loops per token (Dory): the weights are counted "
                        "once, as stored; the per-token FLOPs, activations and cache here count one loop")
    r.used.update(("ngpt_alpha_init", "recurrent_kv_cache_mode"))


SCONV_READERS = {"dory": _read_dory, "zaya": _read_zaya, "inkling_text": _read_inkling, "inkling2_text": _read_inkling2,
                 "inkling2_loop_text": _read_inkling2}


# ======== llmcalc/model/families_state.py =========================================================
# Family readers for the decoders whose layers keep a state instead of (or beside) keys and values
# and that transformers 5.24 builds: Mamba, Falcon-Mamba, Mamba-2, Bamba, Zamba 1/2 (a transformer
# block the hybrid layers share), LFM2 (short convolution), MiniMax-01 (lightning attention), RWKV,
# RecurrentGemma (Griffin's RG-LRU), Lara-mini (Gated DeltaNet), Bailing hybrid and GLM-5-Next (Kimi
# Delta Attention). Each turns its config into the flat spec's fields, checked against the meta-device
# build (tests/test_all_types.py); their caches and FLOPs against transformers' own (VALIDATION.md).

def _read_lfm2(r, s, ll, notes, warnings, adjust=True):
    """LFM2: short-convolution blocks (in_proj h -> 3h, a depthwise conv of conv_L_cache taps,
    out_proj; biases with conv_bias) and attention layers (per-head q/k RMSNorms, no biases) as
    layer_types lists them (else full_attn_idxs), each with a gated MLP whose width, with
    block_auto_adjust_ff_dim, is int(2 f / 3) x block_ffn_dim_multiplier rounded up to
    block_multiple_of (Lfm2MLP); 2 norms per layer; the final norm is `embedding_norm`."""
    L, h = s["num_layers"], s["hidden_size"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    lt = r.str_list("layer_types", choices={"conv", "full_attention"}, length=L)
    if lt is None:
        full = set(r.int_list("full_attn_idxs", default=[]))
        lt = ["full_attention" if i in full else "conv" for i in range(L)]
    r.used.add("full_attn_idxs")
    s["layer_types"] = ["full" if t == "full_attention" else "linear" for t in lt]
    f = ll["ffn_hidden_size"]
    if adjust and r.bool("block_auto_adjust_ff_dim", default=True):
        f = int(2 * f / 3)
        mult = r.num("block_ffn_dim_multiplier", default=1.0)
        if mult:
            f = int(mult * f)
        m = r.int("block_multiple_of", default=256)
        f = m * ((f + m - 1) // m)
    s["ffn_hidden_size"] = f
    s["linear_mixer"] = {"kind": "shortconv", "heads": h, "kv_heads": h, "head_dim": 1, "v_head_dim": 1,
                         "conv_kernel": r.int("conv_L_cache", default=3), "state_chunk": 0,
                         "conv_bias": r.bool("conv_bias", default=False)}


def _read_lfm2_moe(r, s, ll, notes, warnings):
    """LFM2-MoE (lfm2_moe): LFM2's short-convolution and attention layers; a gated MLP of
    intermediate_size as given (Lfm2MoeMLP: no auto-adjust) in the first num_dense_layers, then
    num_experts routed experts of moe_intermediate_size, top num_experts_per_tok, behind a
    bias-free router whose expert_bias is a buffer (not a parameter); no shared expert
    (Lfm2MoeDecoderLayer, transformers 5.24)."""
    _read_lfm2(r, s, ll, notes, warnings, adjust=False)
    _read_routed_shared(r, s, s["num_layers"], dense=range(r.int("num_dense_layers", lo=0, default=2)))
    r.used.update({"use_expert_bias", "routed_scaling_factor", "norm_topk_prob"})


def _read_mamba(r, s, ll, notes, warnings):
    """Mamba and Falcon-Mamba (attention-free): every layer one RMSNorm and a Mamba-1 mixer of inner
    width intermediate_size (else expand x h), dt rank time_step_rank ("auto": ceil(h / 16)),
    state_size N, a conv of conv_kernel taps (bias with use_conv_bias), in/out projection biases
    with use_bias; no MLP. Falcon-Mamba's B, C, dt RMSNorms have no weights."""
    L, h = s["num_layers"], s["hidden_size"]
    E = r.int("intermediate_size", default=int(r.num("expand", default=2) * h))
    rank = r.cfg.get("time_step_rank")  # null: unset, the class default "auto"
    R = -(-h // 16) if rank in (None, "auto") else r.int("time_step_rank")
    r.used.add("time_step_rank")
    bias = r.bool("use_bias", default=False)
    s.update(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="none", norms_per_layer=1, layer_types=["linear"] * L,
             layer_blocks=["mixer"] * L, num_kv_heads=s["num_attention_heads"], head_dim=1, ffn_hidden_size=1)
    s["linear_mixer"] = {"kind": "mamba1", "heads": E, "kv_heads": E, "head_dim": 1, "v_head_dim": 1,
                         "state_size": r.int("state_size", default=16), "dt_rank": R,
                         "conv_kernel": r.int("conv_kernel", default=4), "state_chunk": 0,
                         "in_bias": bias, "mixer_out_bias": bias,
                         "conv_bias": r.bool("use_conv_bias", default=True), "dt_norms": False}


def _read_mamba2(r, s, ll, notes, warnings):
    """Mamba-2 (attention-free): every layer one RMSNorm and a Mamba-2 mixer of num_heads heads of
    head_dim (inner width = their product), n_groups groups of state_size, a conv of conv_kernel
    taps (bias with use_conv_bias), projection biases with use_bias, a gated RMSNorm; no MLP."""
    L = s["num_layers"]
    H, P = r.int("num_heads", default=128), r.int("head_dim", default=64)
    bias = r.bool("use_bias", default=False)
    s.update(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="none", norms_per_layer=1, layer_types=["linear"] * L,
             layer_blocks=["mixer"] * L, num_kv_heads=s["num_attention_heads"], head_dim=1, ffn_hidden_size=1)
    _mamba2_mixer(r, s, d_in=H * P, heads=H, head_dim=P, groups=r.int("n_groups", default=8),
                  state=r.int("state_size", default=128), conv=r.int("conv_kernel", default=4),
                  chunk=r.int("chunk_size", default=256), in_bias=bias, out_bias=bias,
                  conv_bias=r.bool("use_conv_bias", default=True), gated_norm=True)
    r.used.update(("expand", "time_step_rank"))


def _read_bamba(r, s, ll, notes, warnings):
    """Bamba: a Mamba-2 mixer (Granite 4's) on every layer but attn_layer_indices (attention: no
    biases), then a gated dense MLP; 2 norms per layer."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", mlp_bias=r.bool("mlp_bias", default=False))
    attn = set(r.int_list("attn_layer_indices", default=[]))
    s["layer_types"] = ["full" if i in attn else "linear" for i in range(L)]
    _granite_mamba2(r, s)


def _read_lara(r, s, ll, notes, warnings):
    """Lara-mini: Gated DeltaNet layers (Qwen3-Next's mixer: linear_* heads and dims), sliding and
    full attention layers with per-head q/k RMSNorms and no output gate, as layer_types lists
    them; every layer a MoE with one ungated shared expert of shared_expert_intermediate_size."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", qk_norm="head")
    # absent or null: LaraMiniConfig's defaults (tests/fixtures/all_types/lara_mini.json)
    Hv, Hk = r.int("linear_num_value_heads", default=16), r.int("linear_num_key_heads", default=8)
    if Hv % Hk:
        r.fail("linear_num_value_heads", f"must be a multiple of linear_num_key_heads = {Hk}", Hv)
    s["linear_mixer"] = {"kind": "gdn", "heads": Hv, "kv_heads": Hk,
                         "head_dim": r.int("linear_key_head_dim", default=128),
                         "v_head_dim": r.int("linear_value_head_dim", default=128),
                         "conv_kernel": r.int("linear_conv_kernel_dim", default=4), "state_chunk": GDN_CHUNK}
    s["layer_types"] = _layer_pattern(r, L, s) or ["full"] * L
    _read_one_shared_expert(r, s, _mlp_pattern(r, L, default_dense=()))


def _read_minimax01(r, s, ll, notes, warnings):
    """MiniMax-01 (MiniMax-Text-01): lightning-attention layers (linear attention with a per-head
    decay over blocks of block_size: qkv and a sigmoid output gate from the input, an RMSNorm, no
    positions; a H x d x d state per sequence) and softmax attention layers, as layer_types lists
    them; every layer a MoE of num_local_experts gated experts (Mixtral's block)."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "mixtral")
    s["linear_mixer"] = {"kind": "lightning", "heads": s["num_attention_heads"],
                         "kv_heads": s["num_attention_heads"], "head_dim": s["head_dim"],
                         "v_head_dim": s["head_dim"], "conv_kernel": 0,
                         "state_chunk": r.int("block_size", default=256),
                         "state_dtype": "model"}  # MiniMaxCache keeps the state at the model's dtype
    s["layer_types"] = _layer_pattern(r, L, s) or ["full"] * L
    r.used.update(k for k in r.cfg if k.endswith(("_alpha_factor", "_beta_factor")))


def _read_rwkv(r, s, ll, notes, warnings):
    """RWKV (v4, transformers' RwkvForCausalLM; Peng et al. 2023, arXiv 2305.13048): no positions,
    every layer a time-mixing block (key, value, receptance h -> D, output D -> h, per-channel decay
    and bonus, three token-shift mixes; D = attention_hidden_size) and a channel-mixing block (key
    h -> f with squared ReLU, value f -> h, a receptance gate h -> h, two token-shift mixes; f =
    intermediate_size, else 4 h), LayerNorms (two per layer, one more before layer 0), a final
    LayerNorm, an untied head. State per sequence: the two shifted inputs and num, den, max."""
    L, h = s["num_layers"], s["hidden_size"]
    D = r.int("attention_hidden_size", default=h)
    s.update(norm="layernorm", num_mlp_linears=2, qkv_bias=False, attn_out_bias=False, mlp_bias=False,
             position_embedding="none", norms_per_layer=2, layer_types=["linear"] * L,
             num_kv_heads=s["num_attention_heads"], head_dim=1,
             ffn_hidden_size=r.int("intermediate_size", default=4 * h), mlp_act_params=2 * h,
             extra_params_per_layer=h * h,  # the channel mix's receptance gate: a matmul every token runs
             layer_overrides={0: {"norms": 3}})
    s["linear_mixer"] = {"kind": "rwkv", "heads": D, "kv_heads": D, "head_dim": 1, "v_head_dim": 1,
                         "conv_kernel": 0, "state_chunk": 0, "model_width": h}
    r.used.update(("context_length", "rescale_every"))


def _read_recurrent_gemma(r, s, ll, notes, warnings):
    """RecurrentGemma (Griffin, De et al. 2024): block_types repeated over the layers, a recurrent
    block (x and gate branches h -> W with biases, a conv of conv1d_width taps, the RG-LRU with
    block-diagonal input and recurrence gates of num_attention_heads blocks, W -> h with a bias;
    W = lru_width) or local attention within attention_window_size (MHA or GQA of head_dim, biased
    output only); a gated GELU MLP of intermediate_size / 2 with biases; two RMSNorms per layer."""
    L, h = s["num_layers"], s["hidden_size"]
    kinds = r.str_list("block_types", choices={"recurrent", "attention"}) or ["recurrent", "recurrent", "attention"]
    if not kinds:
        r.fail("block_types", "must list at least one block", kinds)
    _llama(r, s, ll, notes, warnings, "llama", mlp_bias=True, qkv_bias=False, attn_out_bias=True,
           ffn_hidden_size=ll["ffn_hidden_size"] // 2, head_dim=r.int("head_dim", default=h // s["num_attention_heads"]))
    s["layer_types"] = ["linear" if kinds[i % len(kinds)] == "recurrent" else "sliding" for i in range(L)]
    s["sliding_window"] = r.int("attention_window_size", default=2048)
    W = r.int("lru_width", default=h)
    s["linear_mixer"] = {"kind": "rglru", "heads": W, "kv_heads": W, "head_dim": 1, "v_head_dim": 1,
                         "conv_kernel": r.int("conv1d_width", default=4), "state_chunk": 0,
                         "gate_blocks": s["num_attention_heads"]}
    r.used.update(("logits_soft_cap", "w_init_variance_scale", "final_w_init_variance_scale"))


def _read_bailing_hybrid(r, s, ll, notes, warnings):
    """Bailing hybrid (Ling 2.5 / Ring): Kimi Delta Attention layers with full-rank decay and output
    gate projections (h -> D each; linear_num_heads of linear_head_dim, conv of
    linear_conv_kernel_dim) and MLA layers (no query bottleneck) with a per-head sigmoid gate
    (g_proj h -> a), as layer_types lists them; dense then MoE layers (mlp_layer_types) with
    num_shared_experts shared experts; the MTP layer is not built."""
    L = s["num_layers"]
    _llama(r, s, ll, notes, warnings, "llama", attn_output_gate="headwise")
    _read_mla(r, s)
    H, d = r.int("linear_num_heads", default=32), r.int("linear_head_dim", default=128)  # BailingHybridConfig's
    s["linear_mixer"] = {"kind": "kda", "heads": H, "kv_heads": H, "head_dim": d, "v_head_dim": d,
                         "conv_kernel": r.int("linear_conv_kernel_dim", "short_conv_kernel_size", default=4),
                         "state_chunk": GDN_CHUNK, "full_rank_gates": True}
    s["layer_types"] = _layer_pattern(r, L, s) or ["full"] * L
    n_sh = r.int("num_shared_experts", lo=0, default=0)
    f_e = r.int("moe_intermediate_size")
    s.update(moe=True, num_experts=r.int("num_experts"), topk=r.int("num_experts_per_token", "num_experts_per_tok"),
             moe_ffn_hidden_size=f_e, num_shared_experts=n_sh, shared_expert_ffn_hidden_size=n_sh * f_e,
             moe_layer_set=_mlp_pattern(r, L, default_dense=range(r.int("first_k_dense_replace", lo=0, default=0))))
    r.used.update(("layer_group_size", "kda_safe_gate", "kda_lower_bound", "num_expert_group", "moe_renormalize",
                   "model_max_length", "mtp_loss_scaling_factor"))
    _note_mtp(r, s)


def _read_zamba(r, s, ll, notes, warnings):
    """Zamba 1 and 2: Mamba layers (Zamba: Mamba-1 of inner width mamba_expand x h, n_mamba_heads
    heads that split x_proj / dt_proj without changing their size; Zamba 2: Mamba-2) with, on the
    hybrid layers (layers_block_type), a transformer block whose weights all hybrid layers share
    (num_mem_blocks of them, used in turn): attention over the layer input concatenated with the
    embedding (q, k, v read 2 h; attention_hidden_size wide, head attention_head_dim), an RMSNorm
    over 2 h, a gated MLP with its norm; then a per-layer h x h linear; Zamba 2 adds a LoRA of rank
    adapter_rank on the shared MLP's gate/up projection per hybrid layer. The shared blocks' weights
    are counted on their first use (tied after), their FLOPs and K/V cache on every hybrid layer."""
    L, h, mt = s["num_layers"], s["hidden_size"], s["model_type"]
    blocks = r.str_list("layers_block_type", choices={"mamba", "linear_attention", "hybrid"}, length=L)
    if blocks is None:
        r.fail("layers_block_type", "is needed to place the shared blocks", None)
    A = r.int("attention_hidden_size", default=2 * h)
    a = s["num_attention_heads"]
    d = r.int("attention_head_dim", default=A // a)
    n_mem = r.int("num_mem_blocks", default=1) if mt == "zamba2" else 1
    if mt == "zamba2" and r.bool("use_shared_attention_adapter", default=False):
        raise ValueError(f"{r.where}: use_shared_attention_adapter (LoRA on the shared attention) is not counted "
                         "by this script yet")
    _llama(r, s, ll, notes, warnings, "llama", head_dim=d, num_kv_heads=r.int("num_key_value_heads", default=a),
           norms_per_layer=1, layer_types=["hybrid" if b == "hybrid" else "linear" for b in blocks],
           layer_blocks=["both" if b == "hybrid" else "mixer" for b in blocks])
    E = int(r.num("mamba_expand", default=2) * h)
    if mt == "zamba":
        s["linear_mixer"] = {"kind": "mamba1", "heads": E, "kv_heads": E, "head_dim": 1, "v_head_dim": 1,
                             "state_size": r.int("mamba_d_state", default=16),
                             "dt_rank": r.int("mamba_dt_rank", default=-(-h // 16)),
                             "conv_kernel": r.int("mamba_d_conv", default=4), "state_chunk": 0,
                             "in_bias": r.bool("mamba_proj_bias", default=False),
                             "mixer_out_bias": r.bool("mamba_proj_bias", default=False),
                             "conv_bias": r.bool("mamba_conv_bias", default=True), "dt_norms": False}
        r.int("n_mamba_heads", default=2)
    else:
        H = r.int("n_mamba_heads", default=8)
        bias = r.bool("add_bias_linear", default=False)
        _mamba2_mixer(r, s, d_in=E, heads=H, head_dim=r.int("mamba_headdim", default=E // H),
                      groups=r.int("mamba_ngroups", default=1), state=r.int("mamba_d_state", default=64),
                      conv=r.int("mamba_d_conv", default=4), chunk=r.int("chunk_size", default=256),
                      in_bias=bias, out_bias=bias, conv_bias=r.bool("use_conv_bias", default=True), gated_norm=True)
    rank = r.int("adapter_rank", default=128) if mt == "zamba2" else 0
    f = ll["ffn_hidden_size"]
    over, seen = {}, 0
    for i, b in enumerate(blocks):
        if b != "hybrid":
            continue
        tied = seen >= n_mem
        over[i] = {"attention": {"in_width": 2 * h, "tied": tied}, "mlp": {"tied": tied},
                   "norms": 1 + (0 if tied else 3),  # the Mamba layer's, and the shared block's 2 h + h
                   "extra_params": h * h + rank * (h + 2 * f)}
        seen += 1
    s["layer_overrides"] = over
    r.used.update(("hybrid_layer_ids", "attn_layer_period", "attn_layer_offset", "use_mamba_kernels",
                   "use_mem_rope", "use_long_context", "kv_channels", "num_query_groups", "num_logits_to_keep",
                   "hidden_mamba_act", "use_mem_eff_path", "use_associative_scan"))


def _read_glm5_next(r, s, ll, notes, warnings):
    """GLM-5-Next's text model: Kimi Delta Attention layers (linear_num_heads of linear_head_dim,
    low-rank decay and gate) and GLM-5's sparse-attention layers (MLA with a lightning indexer whose
    keys are pooled over index_kpool positions: a learned position table index_kpool x d_I and a gate
    h -> d_I; index_kpool on the attention: formulas.indexer_params, the cache's packed 2 d_I + 1 per
    token, pool-level scores), as layer_types lists them; dense then MoE layers (mlp_layer_types);
    DeepSeek-V4's hyper-connections over hc_mult streams (two mixing modules per layer)."""
    L, h = s["num_layers"], s["hidden_size"]
    lt = r.str_list("layer_types", choices={"linear_attention", "indexed_attention"}, length=L)
    if lt is None:
        r.fail("layer_types", "must list linear_attention and indexed_attention layers", None)
    _read_dsa_every_layer(r, s, ll, notes, warnings)
    H, d = r.int("linear_num_heads", default=64), r.int("linear_head_dim", default=128)  # Glm5NextTextConfig's
    s["linear_mixer"] = {"kind": "kda", "heads": H, "kv_heads": H, "head_dim": d, "v_head_dim": d,
                         "conv_kernel": r.int("linear_conv_kernel_dim", default=4), "state_chunk": GDN_CHUNK}
    s["layer_types"] = ["linear" if t == "linear_attention" else "full" for t in lt]
    hc, kp = r.int("hc_mult", default=4, hi=1024), r.int("index_kpool", default=16)
    over = s.get("layer_overrides") or {}
    for i in range(L):
        if lt[i] == "indexed_attention" and not over.get(i, {}).get("attention", {}).get("index_heads") == 0:
            o = over.setdefault(i, {})
            o["attention"] = dict(o.get("attention", {}), index_kpool=kp)  # its gate and position table
    s.update(layer_overrides=over, **_hyper_connection_layer_fields(hc=hc, h=h))
    r.used.update(("hc_eps", "hc_sinkhorn_iters", "swiglu_limit", "linear_lower_bound", "index_kpool_always_select_tail"))


def _read_xlstm(r, s, ll, notes, warnings):
    """xLSTM (attention-free; transformers' modeling_xlstm, Beck et al. 2025, arXiv 2503.13427, the
    xLSTM 7B block): every layer an RMSNorm, an mLSTM mixer and an RMSNorm, a gated FFN. The mLSTM:
    q, k (h -> h qk_dim_factor), v and the output gate (h -> h v_dim_factor), input and forget gates
    per head (h -> H, with biases), a per-head LayerNorm's weight over the v width, out_proj v -> h;
    biases on every projection and norm with use_bias. The FFN's width: h ffn_proj_factor rounded up
    to ffn_round_up_to_multiple_of. A head of its own (tie_word_embeddings false)."""
    L, h = s["num_layers"], s["hidden_size"]
    if r.int("num_blocks", default=L) != r.int("num_hidden_layers", default=L) and not s.get("_layers_from_flag"):
        r.fail("num_blocks", "must equal num_hidden_layers (transformers builds num_blocks blocks)", r.cfg.get("num_blocks"))
    if r.int("embedding_dim", default=h) != h:
        r.fail("embedding_dim", f"must equal hidden_size {h}", r.cfg.get("embedding_dim"))
    H = s["num_attention_heads"]
    qk, v = int(h * r.num("qk_dim_factor", default=0.5)), int(h * r.num("v_dim_factor", default=1.0))
    if qk % H or v % H or not qk or not v:
        r.fail("num_heads", f"must divide the q/k width {qk} and the v width {v}", H)
    m, pf = r.int("ffn_round_up_to_multiple_of", default=64), r.num("ffn_proj_factor", default=2.667)
    f = int(((h * pf + m - 1) // m) * m)  # transformers' round_up_to_next_multiple_of, on the float h x factor
    bias = r.bool("use_bias", default=False)
    r.str("weight_mode", choices={"single", "fused"}, default="single")  # the same weights, fused or not
    s.update(norm="layernorm" if bias else "rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False,
             mlp_bias=bias, position_embedding="none", norms_per_layer=2, layer_types=["linear"] * L,
             num_kv_heads=H, head_dim=1, ffn_hidden_size=f)
    s["linear_mixer"] = {"kind": "mlstm", "heads": H, "kv_heads": H, "head_dim": qk // H, "v_head_dim": v // H,
                         "conv_kernel": 0, "state_chunk": r.int("chunk_size", default=64), "mixer_bias": bias,
                         "state_dtype": "model"}  # transformers' xLSTMCache holds (C, n, m) at the model's dtype
    r.used.update(("add_out_norm", "autocast_kernel_dtype", "chunkwise_kernel", "sequence_kernel", "step_kernel",
                   "mode", "gate_soft_cap", "output_logit_soft_cap", "inference_state_dtype", "eps", "norm_eps",
                   "norm_reduction_force_float32", "max_inference_chunksize", "return_last_states"))


# model_type -> reader, for config.py's registry
STATE_READERS = {
    "mamba": _read_mamba, "falcon_mamba": _read_mamba, "mamba2": _read_mamba2, "bamba": _read_bamba,
    "zamba": _read_zamba, "zamba2": _read_zamba, "lfm2": _read_lfm2, "lfm2_vl_text": _read_lfm2, "lfm2_moe": _read_lfm2_moe,
    "minimax": _read_minimax01, "rwkv": _read_rwkv, "recurrent_gemma": _read_recurrent_gemma,
    "lara_mini": _read_lara, "bailing_hybrid": _read_bailing_hybrid, "glm5_next_text": _read_glm5_next,
    "xlstm": _read_xlstm,
}
# Attention-free families: their configs have no attention-head field.
ATTENTION_FREE = {"mamba", "falcon_mamba", "rwkv", "xlstm"}


# ======== llmcalc/model/config.py =================================================================
# spec_from_hf_config: a config.json, or the text model of a multimodal wrapper, read by its
# family's reader (the registry below) into a flat spec; the checkpoint's quantization format
# (compressed-tensors, FP8 blocks, MXFP4, ModelOpt NVFP4/FP8/AWQ) and the bits each weight is stored at.

# Hugging Face config classes whose tie_word_embeddings default is True when config.json omits it
# (PretrainedConfig's default); the others pass tie_word_embeddings=False in their constructors.
_TIED_BY_DEFAULT = set("gpt2 opt bloom falcon gemma gemma2 starcoder2 gemma3_text gemma4_text "
                       "cohere2 exaone4 smollm3 granitemoe olmo3 seed_oss llama4_text lfm3".split())

# model_types that transformers builds but these readers do not describe: exit 2 with the reason
# (one line each) rather than print a Llama-style count. tests/test_all_types.py holds every type
# transformers 5.24 builds to this list.
_SSM = "has linear-attention or state-space layers, which this script does not count yet"
# Checked on the meta device (transformers 5.24, VALIDATION.md): the BERT-style causal-LM classes build with
# is_decoder False (bidirectional, no cross-attention) from their defaults; the encoder-decoder families'
# causal-LM classes are their decoders, every layer with cross-attention to the encoder's states.
_ENCODER = "is an encoder (bidirectional, BERT-style) model; this script counts decoder-only LMs"
_ENC_DEC = ("is an encoder-decoder model (its causal-LM class is the decoder, cross-attending to the encoder's "
            "states); this script counts decoder-only LMs")
_NOT_YET = {
    "plamo2": _SSM,  # PLaMo 2 (Mamba + attention) is not in transformers 5.24: a hub config of it exits here
    **dict.fromkeys("bert bert-generation big_bird camembert data2vec-text electra ernie megatron-bert rembert "
                    "roberta roberta-prelayernorm roc_bert roformer xlm xlm-roberta xlm-roberta-xl xmod "
                    "blip_text_model".split(), _ENCODER),
    **dict.fromkeys("bart bigbird_pegasus blenderbot blenderbot-small marian mbart mvp pegasus plbart "
                    "prophetnet trocr whisper pix2struct_text_model".split(), _ENC_DEC),
    "xlnet": "is XLNet's two-stream permutation LM (relative attention, segment biases), not a decoder-only LM",
    "blt": "is a byte-level latent transformer (local encoder and decoder around a global model), which "
           "this script does not count yet",
}
# Config fields that only layers of those kinds have: an unknown model_type showing them exits 2.
_FOREIGN_LAYER_FIELDS = tuple("linear_num_key_heads linear_num_value_heads linear_key_head_dim "
                              "linear_conv_kernel_dim mamba_d_state mamba_n_heads mamba_d_conv "
                              "ssm_state_size state_size conv_kernel layers_block_type "
                              "hybrid_override_pattern attn_layer_period attn_layer_offset "
                              "block_types layer_block_types full_attn_idxs linear_attn_config "
                              "short_conv".split())


# The text model a multimodal wrapper holds, when its text_config does not name its own type.
_WRAPPED_TEXT_TYPE = {"gemma3": "gemma3_text", "gemma4": "gemma4_text", "llama4": "llama4_text",
                      "mistral3": "mistral", "kimi_k25": "deepseek_v3",
                      "mistral_large4": "mistral_large4_text", "qwen3_5": "qwen3_5_text",
                      "qwen3_5_moe": "qwen3_5_moe_text", "step3p7": "step3p5"}
# Fields transformers' text config classes fill in when a wrapper's text_config omits them (Gemma 3's
# published configs list only a few): the class defaults of transformers 5.23.
_TEXT_CLASS_DEFAULTS = {
    "gemma3_text": {"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
                    "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
                    "head_dim": 256, "sliding_window": 4096},
    "gemma4_text": {"vocab_size": 262144, "hidden_size": 2304, "intermediate_size": 9216,
                    "num_hidden_layers": 30, "num_attention_heads": 8, "num_key_value_heads": 4,
                    "head_dim": 256, "sliding_window": 512},
    "llama4_text": {"vocab_size": 202048, "hidden_size": 5120, "intermediate_size": 8192,
                    "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8,
                    "head_dim": 128},
    "mistral": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128},
}
_WRAPPER_TIED = {"gemma3": True, "gemma4": True, "llama4": False, "mistral3": True, "kimi_k25": True,
                 "mistral_large4": False}


def _read_multimodal(cfg, where, warnings):
    """Unwrap a vision-language config to its text model. Returns (text_cfg, wrapper_info)."""
    top = ConfigReader(cfg, where)
    mt = top.str("model_type", default=None)
    text = top.sub("text_config")
    if text is None or top.has("hidden_size") and not top.has("vision_config"):
        return cfg, None
    text = dict(text)
    text.setdefault("model_type", _WRAPPED_TEXT_TYPE.get(mt, mt))
    # transformers 5 ties the head by the wrapper's own switch (class defaults differ from the text's)
    # transformers 5 ties the head by the wrapper's own switch; a published config that sets only the
    # text's switch describes a checkpoint whose head is its own tensor (from_pretrained keeps it so)
    text_tie = ConfigReader(text, where).bool("tie_word_embeddings", default=None)
    top_tie = top.bool("tie_word_embeddings", default=None)
    if text.get("model_type") == "kimi_k2":
        text["model_type"] = "deepseek_v3"  # transformers reads Kimi's text model as DeepSeek-V3
    filled = [k for k in _TEXT_CLASS_DEFAULTS.get(text["model_type"], {}) if k not in text]
    for key in filled:
        text[key] = _TEXT_CLASS_DEFAULTS[text["model_type"]][key]
    if filled:
        warnings.append(f"text_config omits {', '.join(filled)}: transformers' {text['model_type']} class "
                        "defaults used, as transformers does")
    text_default = text["model_type"] in _TIED_BY_DEFAULT
    text["tie_word_embeddings"] = (top_tie if top_tie is not None else
                                   text_tie if text_tie is not None else text_default)
    if top_tie is None and text_tie is None and _WRAPPER_TIED.get(mt, False) != text_default:
        warnings.append(f"no tie_word_embeddings in the config: transformers 5 builds {mt!r} with "
                        f"{'a tied' if _WRAPPER_TIED.get(mt) else 'an untied'} head (its class default), "
                        f"but the checkpoint's {text['model_type']} head is {'tied' if text_default else 'its own tensor'}, "
                        "as counted here")
    parts = [k for k in ("vision_config", "audio_config", "projector_config") if isinstance(cfg.get(k), dict)]
    if parts:
        warnings.append(f"multimodal {mt!r}: the language model is counted; the "
                        + " and ".join(p.replace("_config", " tower") for p in parts)
                        + " and the multimodal projector are not counted")
    return text, {"wrapper_model_type": mt, "towers_not_counted": parts}


def spec_from_hf_config(cfg, num_layers=None):
    """Translate a Hugging Face config dict into the spec's model fields, per family, as
    transformers 5's modeling_<family>.py builds the weights. Returns (fields, notes, warnings):
    notes say what was assumed, warnings go into the result (an unknown model_type read
    generically, a count-changing field not read, towers not counted). `num_layers` cuts the
    config's layer pattern to its first layers (for -l)."""
    where = cfg.get("_config_path") or "config"
    notes, warnings = [], []
    ConfigReader(cfg, where).str("model_type", default=None)  # a list or number here is an error
    top_qc = cfg.get("quantization_config") or (cfg.get("text_config") or {}).get("quantization_config") \
        if isinstance(cfg.get("text_config") or {}, dict) else cfg.get("quantization_config")
    if isinstance(top_qc, dict) and cfg.get("expert_dtype") is not None and "expert_dtype" not in top_qc:
        top_qc = dict(top_qc, expert_dtype=cfg["expert_dtype"])  # as DeepseekV4Config moves it there
    if top_qc is not None and not isinstance(top_qc, dict):
        raise ValueError(f"{where}: field 'quantization_config' must be an object (a dict of quant_method, "
                         f"bits, ...), got {str(top_qc)[:40]!r}; transformers refuses it too")
    _check_dtype(cfg, where, warnings)
    cfg, mm = _read_multimodal(cfg, where, warnings)
    r = ConfigReader(cfg, where if mm is None else f"{where} (text_config)", warnings)
    mt = r.str("model_type", default=None)
    if mt in ALIASED:  # XGLM / Kosmos-2 name the basic sizes otherwise
        cfg = {**{FIELD_ALIASES[k]: v for k, v in cfg.items() if k in FIELD_ALIASES}, **cfg}
        r = ConfigReader(cfg, r.where, warnings)
        r.used.update(k for k in FIELD_ALIASES if k in cfg)
    if mt in _NOT_YET:
        raise ValueError(f"{where}: model_type {mt!r} {_NOT_YET[mt]}")
    known = mt in _FAMILY_READERS
    if not known:
        foreign = [k for k in _FOREIGN_LAYER_FIELDS if r.has(k)]
        if foreign:
            raise ValueError(f"{where}: unknown model_type {mt!r} has layers a Llama-style reading "
                             f"cannot describe (fields {', '.join(foreign)})")
    h = r.int("hidden_size", "n_embd", "n_embed", "d_model")
    if mt == "longcat_flash":  # num_hidden_layers = 2 x num_layers there (two blocks a layer): not a clash
        L_cfg = r.int("num_layers") or (r.int("num_hidden_layers", hi=200_000) or 0) // 2 or None
    else:
        L_cfg = r.int("num_hidden_layers", "n_layer", "num_layers", "n_layers")
    if L_cfg is None and mt == "nemotron_h":  # a property of the pattern there, not always written
        L_cfg = len(_nemotron_blocks(r))
    a = r.int("num_attention_heads", "n_head", "num_heads", "n_heads", default=1 if mt in ATTENTION_FREE else None)
    if a is None and mt == "jetmoe":  # JetMoeConfig derives it (k experts' kv heads) and takes no such argument
        a = r.int("num_key_value_heads", default=16) * r.int("num_experts_per_tok", default=2)
    missing = [k for k, v in (("vocab_size", r.int("vocab_size")), ("hidden_size", h),
                              ("num_layers", L_cfg), ("num_attention_heads", a)) if v is None]
    if missing:
        raise ValueError(f"{where}: config lacks integer field(s) for {', '.join(missing)}")
    # transformers refuses a layer pattern of another length; checkpoints that pad it with their
    # multi-token-prediction layers (Step 3.5/3.7) are cut to the layers
    mtp = next((v for k in ("num_nextn_predict_layers", "num_mtp_layers", "mtp_num_hidden_layers")
                if isinstance(v := cfg.get(k), int) and not isinstance(v, bool) and v > 0), 0)
    for key in ("layer_types", "mlp_layer_types"):
        if isinstance(cfg.get(key), list) and len(cfg[key]) not in (L_cfg, L_cfg + mtp):
            raise ValueError(f"{r.where}: field {key!r} lists {len(cfg[key])} layers, but the model has {L_cfg} "
                             "(num_hidden_layers); transformers refuses such a config")
    if num_layers is not None and num_layers > L_cfg and (r.has("layer_types") or r.has("mlp_layer_types")):
        raise ValueError(f"--num-layers {num_layers} is more than the {L_cfg} layers the config's "
                         "layer pattern describes")
    L = num_layers or L_cfg
    s = {"model_type": mt, "vocab_size": r.int("vocab_size"), "hidden_size": h,
         "num_layers": L, "num_attention_heads": a,
         "tied_embeddings": r.bool("tie_word_embeddings", default=mt in _TIED_BY_DEFAULT)}
    if mm:
        s["multimodal"] = mm
    llama_like = dict(norm="rmsnorm", num_mlp_linears=3, qkv_bias=False, attn_out_bias=False,
                      mlp_bias=False, position_embedding="rope",
                      num_kv_heads=r.int("num_key_value_heads", "num_kv_heads", default=a),
                      head_dim=r.int("head_dim", lo=0) or h // a,  # 0: unset (GLM-5-Next's MLA writes it so)
                      # a per-layer list (Gemma 3n) is left to the family's reader
                      ffn_hidden_size=None if known and isinstance(cfg.get("intermediate_size"), list)
                      else r.int("intermediate_size", "ffn_hidden_size"))
    if not r.has("head_dim") and h % a:
        notes.append(f"no head_dim in the config and hidden_size {h} is not a multiple of {a} heads: "
                     f"head_dim {h // a} (h // a), as transformers computes it")
    s["_layers_from_flag"] = num_layers is not None
    read = _FAMILY_READERS.get(mt)
    if read is None:
        s.update(llama_like)
        bias = r.bool("attention_bias", default=False)
        s.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=r.bool("mlp_bias", default=False))
        _read_generic_moe(r, s, notes)
    else:
        s["model_type"] = SAME_AS.get(mt, mt)  # a wrapper's text model read as its family
        read(r, s, llama_like, notes, warnings)
        s["model_type"] = mt
    if "layer_types" not in s:
        s["layer_types"] = _layer_pattern(r, L, s)
    s["sliding_window"] = s.get("sliding_window", (r.int("sliding_window", lo=0) or None))
    s["attention_chunk_size"] = s.get("attention_chunk_size", r.int("attention_chunk_size"))
    if s["layer_types"] is None and s["sliding_window"] and s.get("slides_every_layer"):
        s["layer_types"] = ["sliding"] * L
    if s["layer_types"] and "sliding" in s["layer_types"] and not s["sliding_window"]:
        raise ValueError(f"{where}: layer_types has sliding layers but sliding_window is not set")
    if s["layer_types"] and "chunked" in s["layer_types"] and not s["attention_chunk_size"]:
        raise ValueError(f"{where}: layer_types has chunked layers but attention_chunk_size is not set")
    if s.get("moe"):
        s["expert_interval"] = 1  # a config's MoE layout is explicit, never a script's -ei default
        # (also when --num-dense-layers redraws it: the layers past the dense ones are all MoE)
    if s.get("moe") and s.get("topk") is None:
        raise ValueError(f"{where}: MoE config lacks num_experts_per_tok")
    if s.get("moe") and r.has("n_group") and r.has("topk_group"):  # group-limited routing (DeepSeek-V2/V3)
        _check_router_groups(r, s, warnings)
    s.pop("_layers_from_flag", None)
    s["trained_context"] = _trained_context(r)
    s["checkpoint_format"] = _checkpoint_format(top_qc, where, warnings)
    if not known:
        skipped = _unread_fields(r)
        warnings.append(f"model_type {mt!r} is not one this script knows; read as Llama-style "
                        "(RMSNorm, gated 3-matrix MLP, no biases, rotary, num_key_value_heads/"
                        "head_dim/intermediate_size as given): the count may be wrong"
                        + (f"; fields not read: {', '.join(skipped)}" if skipped else ""))
    unread = r.unread_count_fields()
    if unread:
        warnings.append("config field(s) not read, which may change the count: " + ", ".join(unread))
    return {k: v for k, v in s.items() if v is not None}, notes, warnings


# Config fields that never describe weights: bookkeeping transformers writes into every config.
_BOOKKEEPING = set("architectures auto_map bos_token_id eos_token_id pad_token_id sep_token_id "
                   "decoder_start_token_id id2label label2id dtype torch_dtype transformers_version "
                   "output_attentions output_hidden_states return_dict use_cache initializer_range "
                   "chunk_size_feed_forward is_encoder_decoder is_decoder problem_type tie_encoder_decoder "
                   "add_cross_attention cross_attention_hidden_size tokenizer_class prefix task_specific_params "
                   "finetuning_task torchscript pruned_heads tf_legacy_loss use_bfloat16 "
                   "max_position_embeddings rope_parameters rope_scaling rope_theta model_type "
                   "tie_word_embeddings pretraining_tp".split())


def _unread_fields(r):
    """Every field of the config the generic reading did not read, less bookkeeping, dropouts,
    epsilons and initialiser scales (none of them describes a weight): what a family reader
    would have to look at."""
    return sorted(k for k, v in r.cfg.items() if k not in r.used and k not in _BOOKKEEPING
                  and not k.startswith("_") and v is not None
                  and not any(x in k for x in ("dropout", "_eps", "epsilon", "initializer", "_pdrop")))


# The dtype names transformers writes as a config's dtype / torch_dtype (torch's, with "auto").
_DTYPES = {"float32", "float16", "bfloat16", "float64", "float8_e4m3fn", "float8_e5m2", "int8", "uint8",
           "float", "half", "double", "auto"}


def _check_dtype(cfg, where, warnings):
    """A stated warning for a dtype transformers would not know, or torch_dtype and dtype that
    disagree (transformers 5 reads dtype); the counts do not depend on it."""
    vals = {k: cfg.get(k) for k in ("dtype", "torch_dtype") if cfg.get(k) is not None}
    for k, v in vals.items():
        if not isinstance(v, str) or v.replace("torch.", "") not in _DTYPES:
            warnings.append(f"{where}: {k} {str(v)[:40]!r} is not a dtype transformers knows; not used here "
                            "(weights are counted at the flags' precision)")
    if len(vals) == 2 and vals["dtype"] != vals["torch_dtype"]:
        warnings.append(f"{where}: torch_dtype {str(vals['torch_dtype'])[:20]!r} and dtype {str(vals['dtype'])[:20]!r} "
                        "disagree; transformers 5 reads dtype")


def _check_router_groups(r, s, warnings):
    """Group-limited routing picks topk_group of n_group expert groups, then top-k experts among
    them (DeepSeek-V2 sec. 2.1.2, device-limited routing; transformers' DeepseekV3TopkRouter): a
    stated warning when the config's numbers cannot do that. The counts do not depend on it."""
    groups, picked, E, k = r.int("n_group"), r.int("topk_group"), s.get("num_experts") or 0, s["topk"]
    if picked > groups:
        warnings.append(f"{r.where}: the router cannot pick topk_group {picked} of n_group {groups} groups")
    elif E % groups:
        warnings.append(f"{r.where}: n_group {groups} does not divide the {E} routed experts into equal groups")
    elif k > picked * (E // groups):
        warnings.append(f"{r.where}: num_experts_per_tok {k} is more than the {picked * (E // groups)} experts "
                        f"of the topk_group {picked} groups the router picks")


def _trained_context(r):
    """The longest context the model was trained or extended to, in tokens: max_position_embeddings
    (n_positions; max_seq_len in MPT and DBRX), or a rope scaling's original length x factor when that is longer (YaRN, dynamic
    NTK and LongRoPE stretch a shorter trained window; transformers' rope_scaling, rope_parameters
    in 5.x). None when the config states neither. A field or rope block not understood is left out
    (the counts do not depend on it; only the context checks use it)."""
    r.used.update(("max_position_embeddings", "n_positions", "max_seq_len"))
    n = next((v for v in (r.cfg.get("max_position_embeddings"), r.cfg.get("n_positions"), r.cfg.get("max_seq_len"))
              if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 2**31), None)
    rope = r.cfg.get("rope_parameters") or r.cfg.get("rope_scaling")
    if isinstance(rope, dict) and rope.get("rope_type", rope.get("type")) in ("yarn", "dynamic", "longrope"):
        factor, orig = rope.get("factor"), rope.get("original_max_position_embeddings") or n
        if (isinstance(factor, (int, float)) and not isinstance(factor, bool) and 1 <= factor <= 1e4
                and isinstance(orig, int) and not isinstance(orig, bool) and 0 < orig <= 2**31):
            n = max(n or 0, int(factor * orig))
    return n


def _checkpoint_format(qc, where, warnings):
    """The checkpoint's weight format from quantization_config, as bits per weight, scales
    included: {"method", "linear_bits", "expert_bits"} for the layers' matrices (other weights:
    16). MXFP4 (gpt-oss): 4 bits + an 8-bit scale per 32 = 4.25, routed experts only (OCP MX spec
    v1.0). FP8 block-quantized (DeepSeek-V3): 8 bits + an fp32 scale per b1 x b2 block (DeepSeek-V4's
    experts with expert_dtype fp4: 4 bits + a scale per 32 weights, 1 byte with scale_fmt ue8m0). AWQ/GPTQ:
    w bits + an fp16 scale and a w-bit zero per group. compressed-tensors: w bits + a 16-bit scale
    per group (+ a zero when asymmetric). ModelOpt (quant_method modelopt, or hf_quant_config.json
    beside config.json): _modelopt_weight_bits. The modules a config leaves out stay 16-bit."""
    if not isinstance(qc, dict):
        return None
    label = f"{where} (quantization_config)"
    if isinstance(qc.get("quantization"), dict) and "quant_method" not in qc:
        qc = dict(qc["quantization"], quant_method="modelopt")  # hf_quant_config.json's layout
        label = f"the hf_quant_config.json beside {where} (quantization)"  # errors name that file
    q = ConfigReader(qc, label)
    method = q.str("quant_method", default="")
    skip = " ".join(str(x) for x in (qc.get("modules_to_not_convert") or qc.get("ignore")
                                     or qc.get("exclude_modules") or []))
    experts_only = "self_attn" in skip  # attention left in 16 bits: only the MLP/expert matrices
    dense_skipped = "shared_experts" in skip or ("mlp" in skip and "down_proj" in skip)
    if method == "mxfp4":
        bits = 4 + 8 / 32
        lin, exp = (16, bits) if experts_only else (bits, bits)
    elif method == "fp8":
        block = q.int_list("weight_block_size", lo=1, default=None)
        bits = 8 + (32 / (block[0] * block[1]) if block and len(block) == 2 else 0)
        lin, exp = (16 if experts_only else bits), bits
        if q.str("expert_dtype", default="fp8", choices=("fp8", "fp4")) == "fp4":
            # DeepSeek-V4's experts: two e2m1 values per byte and a scale per 32 (transformers'
            # finegrained_fp8), 1-byte ue8m0 scales with scale_fmt ue8m0
            exp = 4 + (8 if q.str("scale_fmt", default="float") == "ue8m0" else 32) / 32
    elif method in ("awq", "gptq"):
        w = q.int("bits", "w_bit", default=4, hi=16)
        g = q.int("group_size", "q_group_size", lo=-1, default=128)
        g = g if g > 0 else 1 << 30
        lin = exp = w + (16 + w) / g
    elif method == "compressed-tensors":
        groups = q.sub("config_groups") or {}
        wt = next((v.get("weights") for v in groups.values() if isinstance(v, dict) and isinstance(v.get("weights"), dict)), None)
        if not wt:
            warnings.append("quantization_config compressed-tensors without weight groups: weights "
                            "counted at 16 bits; pass --weight-bits")
            return None
        w = ConfigReader(wt, f"{where} (quantization_config weights)")
        nb, g = w.int("num_bits", default=8, hi=16), w.int("group_size", default=0, lo=0)
        bits = nb + ((16 + (0 if w.bool("symmetric", default=True) else nb)) / g if g else 0)
        lin, exp = (16 if experts_only or dense_skipped else bits), bits
    elif method == "modelopt":
        algo = q.str("quant_algo", default="")
        bits = _modelopt_weight_bits(algo.upper(), q.int("group_size", default=None))
        if bits is None:
            warnings.append(f"quantization_config modelopt quant_algo {algo!r} is not modelled: weights "
                            "counted at 16 bits; pass --weight-bits")
            return None
        lin, exp = (16 if experts_only else bits), bits
        method = f"modelopt {algo.upper()}"
        # the KV cache format the checkpoint carries scales for (ModelOpt's kv_cache_quant_algo):
        # reported, not applied; whether the cache is stored so is the serving stack's choice
        kv = (q.str("kv_cache_quant_algo", default="") or "").upper()
        if kv and kv != "NONE":
            return {"method": method, "linear_bits": lin, "expert_bits": exp, "kv_cache_format": kv}
    else:
        warnings.append(f"quantization_config quant_method {method!r} is not modelled: weights counted "
                        "at 16 bits; pass --weight-bits")
        return None
    return {"method": method, "linear_bits": lin, "expert_bits": exp}


def _modelopt_weight_bits(algo, group):
    """Bits per weight, scales included, of a ModelOpt (NVIDIA Model Optimizer) checkpoint's
    quant_algo, or None when not modelled. NVFP4 (also weight-only W4A16_NVFP4, NVFP4_AWQ and
    W4A8_NVFP4_FP8): e2m1 values with an E4M3 scale per 16 (NVIDIA's NVFP4 format; the fp32 scale
    per tensor is left out); FP8 and FP8_PER_CHANNEL_PER_TOKEN: 8 bits with a per-tensor or
    per-channel scale (left out); FP8_PB_WO: an fp32 scale per 128 x 128 block (ModelOpt's
    default block); MXFP8: an 8-bit scale per 32 (OCP MX spec v1.0); INT4_AWQ / W4A8_AWQ / W4A16_AWQ:
    int4 with an fp16 scale per group of 128 (ModelOpt's AWQ default)."""
    if algo in ("NVFP4", "W4A16_NVFP4", "NVFP4_AWQ", "W4A8_NVFP4_FP8"):
        return 4 + 8 / (group or 16)
    if algo in ("FP8", "FP8_PER_CHANNEL_PER_TOKEN"):
        return 8
    if algo == "FP8_PB_WO":
        return 8 + 32 / (128 * 128)
    if algo == "MXFP8":
        return 8 + 8 / 32
    if algo in ("INT4_AWQ", "W4A8_AWQ", "W4A16_AWQ"):
        return 4 + 16 / (group or 128)
    return None


# Every model_type the package reads, and its reader (the Llama-style families share one).
_FAMILY_READERS = {
    **dict.fromkeys(("llama mistral mixtral qwen2 qwen2_moe qwen3 qwen3_moe gemma gemma2 phi3 olmo2 "
                     "deepseek_v2 deepseek_v3 mistral4").split(), _read_llama_like),
    "gpt2": _read_gpt2, "gpt_neox": _read_gpt_neox, "opt": _read_opt, "bloom": _read_bloom,
    "falcon": _read_falcon, "starcoder2": _read_starcoder2, "gpt_oss": _read_gpt_oss,
    "llama4_text": _read_llama4, "gemma3_text": _read_gemma3, "gemma4_text": _read_gemma4,
    "glm4_moe": _read_glm4_moe, "glm_moe_dsa": _read_dsa, "deepseek_v32": _read_dsa, "axk2": _read_axk2,
    "mistral_large4_text": _read_mistral_large4,
    "minimax_m2": _read_minimax_m2, "ernie4_5_moe": _read_ernie45_moe, "hy_v3": _read_hy_v3,
    "longcat_flash": _read_longcat, "olmo3": _read_olmo3, "smollm3": _read_smollm3,
    "seed_oss": _read_seed_oss, "exaone4": _read_exaone4, "cohere2": _read_cohere2,
    "granitemoe": _read_granitemoe, "phimoe": _read_phimoe, "qwen3_next": _read_qwen_gdn,
    "qwen3_5_text": _read_qwen_gdn, "qwen3_5_moe_text": _read_qwen_gdn,
    "olmo_hybrid": _read_olmo_hybrid, "nemotron_h": _read_nemotron_h,
    "granitemoehybrid": _read_granitemoehybrid, "falcon_h1": _read_falcon_h1,
    "jamba": _read_jamba, "lfm3": _read_lfm3, "kimi_linear": _read_kimi_linear,
    "deepseek_v4": _read_deepseek_v4, "step3p5": _read_step3p5, "dbrx": _read_dbrx, **MORE_READERS, **STATE_READERS,
    **SCONV_READERS, **MOA_READERS}
_FAMILY_READERS.update({mt: _FAMILY_READERS[base] for mt, base in SAME_AS.items()})


# ======== llmcalc/model/spec.py ===================================================================
# resolve_model_spec: values read from a config, then explicit flags (which win on every layer they
# apply to), then defaults; validated and built into the list of layers (build_layers).
# spec_summary is what the reports show of it.

MODEL_DEFAULTS = {
    # The cookbook's calc_transformer_params.py defaults; other scripts override some of them.
    "vocab_size": 51200, "hidden_size": 6144, "num_layers": 44, "num_experts": 8,
    "expert_interval": 1, "topk": 1, "ffn_expansion_factor": 4.0, "num_mlp_linears": 2,
    "kv_size_ratio": 1.0,
}


_GLOBAL_FLAGS = tuple("vocab_size hidden_size num_attention_heads head_dim ffn_hidden_size "
                      "num_mlp_linears tied_embeddings norm norms_per_layer qk_norm qkv_bias "
                      "attn_out_bias mlp_bias position_embedding embedding_norm final_norm "
                      "num_experts expert_interval topk moe_ffn_hidden_size num_shared_experts "
                      "shared_expert_ffn_hidden_size shared_expert_gate num_dense_layers "
                      "router_bias q_lora_rank kv_lora_rank qk_nope_head_dim qk_rope_head_dim "
                      "v_head_dim parallel_attention".split())
_POSITIVE = tuple("vocab_size hidden_size num_layers num_attention_heads num_kv_heads head_dim "
                  "ffn_hidden_size num_mlp_linears num_experts expert_interval topk "
                  "moe_ffn_hidden_size kv_lora_rank q_lora_rank qk_nope_head_dim qk_rope_head_dim "
                  "v_head_dim norms_per_layer max_position_embeddings".split())
_CAPS = (("num_layers", 100_000), ("vocab_size", 2**31), ("hidden_size", 2**24),
         ("num_attention_heads", 2**20), ("num_kv_heads", 2**20), ("ffn_hidden_size", 2**31),
         ("num_experts", 2**20), ("topk", 2**20), ("moe_ffn_hidden_size", 2**31), ("head_dim", 2**20),
         ("kv_lora_rank", 2**24), ("q_lora_rank", 2**24), ("qk_nope_head_dim", 2**20),
         ("qk_rope_head_dim", 2**20), ("v_head_dim", 2**20), ("norms_per_layer", 64),
         ("max_position_embeddings", 2**31), ("num_mlp_linears", 64), ("expert_interval", 100_000),
         ("num_shared_experts", 2**20), ("shared_expert_ffn_hidden_size", 2**31),
         ("num_dense_layers", 100_000), ("sliding_window", 2**31))


def resolve_model_spec(args, defaults=None):
    """Merge a model spec: values read from --hf_model_name_or_path, then explicit flags (which
    win, on every layer they apply to), then `defaults` (MODEL_DEFAULTS updated by the calling
    script). Validates, builds the layer list and returns (spec, notes); the spec's "warnings"
    list says what the result should show. Raises ValueError with a one-line message."""
    d = dict(MODEL_DEFAULTS, **(defaults or {}))
    flag = lambda name: getattr(args, name, None)  # noqa: E731
    s, notes, warnings = {}, [], []
    if getattr(args, "hf_model_name_or_path", None) is not None:
        cfg = load_hf_config(args.hf_model_name_or_path)
        try:
            s, notes, warnings = spec_from_hf_config(cfg, num_layers=flag("num_layers"))
        except (TypeError, KeyError, IndexError, AttributeError, ZeroDivisionError, OverflowError) as exc:
            # a field a family reader needs is missing or of a shape it cannot use (the readers
            # check the fields they know; this catches the combinations they do not)
            raise ValueError(f"{cfg.get('_config_path') or 'config'}: cannot read this "
                             f"{cfg.get('model_type')!s:.40} config: a needed field is missing or malformed "
                             f"({type(exc).__name__}: {str(exc)[:120]})") from None
    for name, cap in _CAPS:
        val = flag(name)
        if val is not None and val > cap:
            raise ValueError(f"--{name.replace('_', '-')} {val} is implausibly large (at most {cap:,})")
    per_layer = {k for ov in (s.get("layer_overrides") or {}).values() for k in ov.get("attention", {})}
    for name, key in (("head_dim", "head_dim"), ("num_kv_heads", "kv_heads")):
        if flag(name) is not None and key in per_layer:
            raise ValueError(f"--{name.replace('_', '-')}: this config sets it layer by layer "
                             f"({s.get('model_type')}); edit the config instead")
    for name in _GLOBAL_FLAGS:
        if flag(name) is not None:
            s[name] = flag(name)
    if flag("num_layers") is not None:
        s["num_layers"] = flag("num_layers")
    if flag("bias") is not None:
        for name in ("qkv_bias", "attn_out_bias", "mlp_bias"):
            if flag(name) is None:
                s[name] = flag("bias")
    if flag("swiglu"):
        s["num_mlp_linears"] = 3
    if flag("moe") or (flag("num_experts") is not None and flag("num_experts") > 1):
        s["moe"] = True
    if flag("num_dense_layers") or flag("expert_interval"):
        s.setdefault("moe", False)
        s.pop("moe_layer_set", None)  # the flags describe the MoE layout now
    for name in ("vocab_size", "hidden_size", "num_layers", "num_mlp_linears", "expert_interval", "topk"):
        s.setdefault(name, d[name])
    h, L = s["hidden_size"], s["num_layers"]
    for name in _POSITIVE:
        val = flag(name) if flag(name) is not None else s.get(name)
        if val is not None and val <= 0 and not (name == "qk_rope_head_dim" and val == 0 and flag(name) is None):
            raise ValueError(f"--{name.replace('_', '-')} must be positive, got {val}")  # (a config's NoPE MLA: 0)
    if flag("ffn_expansion_factor") is not None and not 0 < flag("ffn_expansion_factor") <= 1024:
        raise ValueError(f"--ffn-expansion-factor must be in (0, 1024], got {flag('ffn_expansion_factor')}")
    if flag("kv_size_ratio") is not None and not 0 < flag("kv_size_ratio") <= 1:
        raise ValueError(f"--kv-size-ratio must be in (0, 1], got {flag('kv_size_ratio')}")
    for name in ("num_shared_experts", "shared_expert_ffn_hidden_size", "num_dense_layers", "sliding_window"):
        if flag(name) is not None and flag(name) < 0:
            raise ValueError(f"--{name.replace('_', '-')} must not be negative, got {flag(name)}")
    if "num_attention_heads" not in s:
        s["num_attention_heads"] = h // 128 if h % 128 == 0 else (h // 64 if h % 64 == 0 else 1)
    a = s["num_attention_heads"]
    if s.get("kv_lora_rank"):
        for name in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            if s.get(name) is None or (not s[name] and name != "qk_rope_head_dim"):
                raise ValueError(f"MLA (--kv-lora-rank) needs --{name.replace('_', '-')}")
        s["head_dim"] = s["qk_nope_head_dim"] + s["qk_rope_head_dim"]
        s["num_kv_heads"] = a  # MLA expands the latent into a full set of heads
    else:
        if s.get("head_dim") is None:
            if h % a:
                raise ValueError(f"--hidden-size {h} is not divisible by --num-attention-heads {a} "
                                 "(give --head-dim if the head size is not h/a)")
            s["head_dim"] = h // a
        if flag("num_kv_heads") is not None:
            s["num_kv_heads"] = flag("num_kv_heads")
        elif flag("kv_size_ratio") is not None:
            kv = a * flag("kv_size_ratio")
            if abs(kv - round(kv)) > 1e-6 or round(kv) < 1:
                raise ValueError(f"--kv-size-ratio {flag('kv_size_ratio')} x {a} heads is not a "
                                 "whole number of kv heads")
            s["num_kv_heads"] = int(round(kv))
        s.setdefault("num_kv_heads", int(round(a * d["kv_size_ratio"])) or 1)
        if a % s["num_kv_heads"]:
            path = getattr(args, "hf_model_name_or_path", None)  # name the field or flag each came from
            heads = "--num-attention-heads" if flag("num_attention_heads") is not None else "num_attention_heads"
            kv = ("--num-kv-heads" if flag("num_kv_heads") is not None
                  else "--kv-size-ratio" if flag("kv_size_ratio") is not None
                  else "num_key_value_heads" if path else "the default kv heads (= heads)")
            raise ValueError(f"{heads} {a} is not divisible by {kv} {s['num_kv_heads']}"
                             + (f" ({path})" if path else ""))
    if flag("ffn_expansion_factor") is not None and flag("ffn_hidden_size") is None:
        s["ffn_hidden_size"] = int(round(flag("ffn_expansion_factor") * h))
    s.setdefault("ffn_hidden_size", int(round(d["ffn_expansion_factor"] * h)))
    if s["ffn_hidden_size"] <= 0:
        raise ValueError("the MLP width (-ff x h or --ffn-hidden-size) must be positive")
    s.setdefault("norm", "layernorm")
    s.setdefault("parallel_attention", False)
    s.setdefault("norms_per_layer", 1 if s["parallel_attention"] else 2)
    s.setdefault("qk_norm", "none")
    for name in ("qkv_bias", "attn_out_bias", "mlp_bias"):
        s.setdefault(name, True)
    for name, val in (("tied_embeddings", False), ("embedding_norm", False), ("final_norm", True),
                      ("position_embedding", "rope"), ("word_embed_proj_dim", h), ("moe", False),
                      ("attention_sinks", False), ("attn_output_gate", "none"), ("model_type", None),
                      ("layer_types", None), ("sliding_window", None), ("attention_chunk_size", None),
                      ("nope_layers", ()), ("layer_overrides", {}), ("extra_params_per_layer", 0),
                      ("per_layer_embedding_params", 0), ("other_params", {}), ("mtp_layers_not_built", 0),
                      ("index_n_heads", 0), ("index_head_dim", 0), ("index_topk", 0),
                      ("zero_experts", 0), ("expert_bias", None), ("router_has_bias", False),
                      ("checkpoint_format", None), ("input_matmul_params", 0),
                      ("attn_position_scaling", False), ("indexer_input_norm", False),
                      ("linear_mixer", None), ("layer_blocks", None)):
        s.setdefault(name, val)
    if s["position_embedding"] == "learned":
        if flag("max_position_embeddings") is not None:
            s["position_embedding_rows"] = flag("max_position_embeddings")
        s.setdefault("position_embedding_rows", getattr(args, "sequence_length", None) or 2048)
    else:
        s["position_embedding_rows"] = 0
    if s["moe"]:
        s.setdefault("num_experts", d["num_experts"])
        s.setdefault("moe_ffn_hidden_size", s["ffn_hidden_size"])
        E, k = s["num_experts"], s["topk"]
        if E < 1:
            raise ValueError("--num-experts must be at least 1 for a MoE model")
        if k > E + s["zero_experts"]:
            raise ValueError(f"--topk {k} is larger than --num-experts {E}")
        s.setdefault("num_shared_experts", 0)
        s.setdefault("shared_expert_ffn_hidden_size", s["num_shared_experts"] * s["moe_ffn_hidden_size"])
        s.setdefault("shared_expert_gate", False)
        s.setdefault("router_bias", False)
        s.setdefault("num_dense_layers", 0)
        if s.get("moe_layer_set") is not None:
            s["moe_layers"] = [i for i in s["moe_layer_set"] if i < L]
        else:
            ei, fd = s["expert_interval"], s["num_dense_layers"]
            s["moe_layers"] = [i for i in range(L) if i >= fd and (i - fd) % ei == ei - 1]
    else:
        for name in ("num_experts", "moe_ffn_hidden_size", "num_shared_experts",
                     "shared_expert_ffn_hidden_size"):
            s[name] = 0
        s.update(topk=0, shared_expert_gate=False, router_bias=False, moe_layers=[])
    s.setdefault("num_dense_layers", 0)
    s.pop("moe_layer_set", None)
    for name in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
        s.setdefault(name, None)
    _apply_sliding_flag(s, flag("sliding_window"), explicit_config=bool(getattr(args, "hf_model_name_or_path", None)))
    s["layers"] = build_layers(s)
    for layer in s["layers"]:
        for m in layer["mlp"]:
            if m["width"] is None or m["width"] < 1:
                raise ValueError(f"an MLP width is missing from the config ({m['kind']} block)")
            if m["kind"] == "moe" and not 1 <= m["topk"] <= m["num_experts"] + m["zero_experts"]:
                raise ValueError(f"top-k {m['topk']} must be between 1 and the {m['num_experts'] + m['zero_experts']} "
                                 "experts of an MoE layer")
    s["warnings"] = warnings
    s["described"] = _described(args, s, flag)
    return s, notes


def _described(args, s, flag):
    """What model this is, in words, for the first lines of every report."""
    shape = f"L={s['num_layers']} h={s['hidden_size']} V={s['vocab_size']}"
    path = getattr(args, "hf_model_name_or_path", None)
    if path is not None:
        return f"{path} ({s.get('model_type') or 'no model_type'}, {shape})"
    given = [n for n in _GLOBAL_FLAGS + ("num_layers", "num_kv_heads", "kv_size_ratio", "ffn_expansion_factor",
                                          "swiglu", "moe", "bias", "sliding_window") if flag(n) is not None
             and not (n == "num_attention_heads" and getattr(args, "heads_defaulted", False))]
    if given:
        return f"the model the flags describe ({shape})"
    return (f"the cookbook's default shape ({shape}, GPT-NeoX-20B-like); pass --hf_model_name_or_path "
            "or -l/-hs for yours")


def _apply_sliding_flag(s, w, *, explicit_config):
    """--sliding-window W: sets the window of the config's sliding layers (every layer when the
    model comes from flags); 0 turns sliding off (those layers attend to everything)."""
    L = s["num_layers"]
    if s["layer_types"] is not None:
        s["layer_types"] = list(s["layer_types"][:L])
    if w is None:
        return
    if w == 0:
        s["sliding_window"] = None
        if s["layer_types"]:
            s["layer_types"] = ["full" if t == "sliding" else t for t in s["layer_types"]]
        return
    s["sliding_window"] = w
    if not s["layer_types"] or "sliding" not in s["layer_types"]:
        if explicit_config and s["layer_types"]:
            return  # a config with no sliding layers keeps them all full
        s["layer_types"] = ["sliding"] * L


def _shared(cache, d):
    """One dict object per distinct kind, so layers of the same kind share it."""
    key = tuple(sorted((k, tuple(map(id, v)) if isinstance(v, tuple) else v) for k, v in d.items()))
    return cache.setdefault(key, d)


# What a linear-attention or state-space mixer does not have of softmax attention's extras.
_NO_SOFTMAX_EXTRAS = {"window": 0, "chunk": 0, "rope": False, "qkv_bias": False, "out_bias": False,
                      "qk_norm": "none", "sinks": False, "output_gate": "none", "q_lora_rank": 0,
                      "kv_lora_rank": 0, "qk_nope_head_dim": 0, "qk_rope_head_dim": 0, "index_heads": 0,
                      "index_head_dim": 0, "index_topk": 0, "kv_proj": 0, "kv_shared": False,
                      "position_scaling": False, "indexer_input_norm": False}


def build_layers(s):
    """The layer list of a resolved spec: per layer an attention dict, an MLP dict, its norm count
    and any extra weights, objects shared between layers of the same kinds."""
    L, cache, layers = s["num_layers"], {}, []
    moe_set = set(s["moe_layers"])
    types = s["layer_types"] or ["full"] * L
    blocks = s.get("layer_blocks") or ["both"] * L  # Nemotron-H: a layer is a mixer or an MLP
    mla = bool(s.get("kv_lora_rank"))
    nope = set(s["nope_layers"])
    by_inputs = {}  # what varies per layer -> the layer built for it (no rebuild for identical inputs)
    for i in range(L):
        ov = s["layer_overrides"].get(i, {})
        span = types[i]
        key = (span, i in nope, i in moe_set, blocks[i], id(ov) if ov else None)
        if key in by_inputs and not ov:
            layers.append(by_inputs[key])
            continue
        parallel = span == "hybrid"  # Falcon-H1: attention and a linear mixer side by side
        span = "full" if parallel else span
        attn = {"kind": "mla" if mla else "mha", "span": span,
                "window": s["sliding_window"] if span == "sliding" else 0,
                "chunk": s["attention_chunk_size"] if span == "chunked" else 0,
                "rope": s["position_embedding"] == "rope" and i not in nope,
                "heads": s["num_attention_heads"], "kv_heads": s["num_kv_heads"],
                "head_dim": s["head_dim"], "qkv_bias": s["qkv_bias"], "out_bias": s["attn_out_bias"],
                "qk_norm": s["qk_norm"],
                "norm": s.get("attn_norm") or ("rmsnorm" if s["norm"] == "layernorm" else s["norm"]),
                "sinks": s["attention_sinks"], "output_gate": s["attn_output_gate"],
                "q_lora_rank": s["q_lora_rank"] or 0, "kv_lora_rank": s["kv_lora_rank"] or 0,
                "qk_nope_head_dim": s["qk_nope_head_dim"] or 0, "qk_rope_head_dim": s["qk_rope_head_dim"] or 0,
                "v_head_dim": s["v_head_dim"] or s["head_dim"],
                "index_heads": s["index_n_heads"], "index_head_dim": s["index_head_dim"],
                "index_topk": s["index_topk"], "kv_proj": 2, "kv_shared": False,
                "position_scaling": s["attn_position_scaling"], "indexer_input_norm": s["indexer_input_norm"]}
        if s.get("attn_extra_weights"):  # a family's non-matmul attention weights (DiffLlama's lambdas)
            attn["extra_weights"] = s["attn_extra_weights"]
        if span == "linear":
            # a linear-attention (state-space) mixer: no K/V cache, a constant state per sequence
            attn.update(dict(_NO_SOFTMAX_EXTRAS, span="state", **s["linear_mixer"]))
        attn.update(ov.get("attention", {}))
        if i in moe_set:
            mlp = {"kind": "moe", "width": s["moe_ffn_hidden_size"], "linears": s["num_mlp_linears"],
                   "bias": s["mlp_bias"] if s["expert_bias"] is None else s["expert_bias"],
                   "num_experts": s["num_experts"], "topk": s["topk"], "zero_experts": s["zero_experts"],
                   "shared_width": s["shared_expert_ffn_hidden_size"], "shared_bias": s["mlp_bias"],
                   "shared_gate": s["shared_expert_gate"],
                   "router_bias": s["router_bias"] or s["router_has_bias"]}
        else:
            mlp = {"kind": "dense", "width": s["ffn_hidden_size"], "linears": s["num_mlp_linears"],
                   "bias": s["mlp_bias"]}
            if s.get("mlp_act_params"):  # a learned activation's or inner norm's weights (Apertus, BitNet)
                mlp["act_params"] = s["mlp_act_params"]
        mlp.update(ov.get("mlp", {}))
        attn, mlp = _shared(cache, attn), _shared(cache, mlp)
        extra_attn = tuple(_shared(cache, dict(attn, **x)) for x in ov.get("more_attention", ()))
        if parallel:
            extra_attn += (_shared(cache, dict(attn, **dict(_NO_SOFTMAX_EXTRAS, span="state", **s["linear_mixer"]))),)
        extra_mlp = tuple(_shared(cache, dict(x)) for x in ov.get("more_mlp", ()))
        layer = {"attention": () if blocks[i] == "mlp" else (attn,) + extra_attn,
                 "mlp": () if blocks[i] == "mixer" else (mlp,) + extra_mlp,
                 "norms": ov.get("norms", s["norms_per_layer"]),
                 "extra_params": ov.get("extra_params", s["extra_params_per_layer"]),
                 "extra_flops": s.get("extra_flops_per_layer")}
        if ov.get("weightless_flops"):  # matmuls without weights outside attention (Gemma 3n's AltUp), per token
            layer["weightless_flops"] = ov["weightless_flops"]
        layers.append(_shared(cache, layer))
        by_inputs[key] = layers[-1]
    return layers


def spec_summary(spec):
    """The spec for --json: every resolved field, the layer list as distinct kinds plus the kind
    index of each layer (the layer dicts themselves repeat)."""
    out = {k: v for k, v in spec.items() if k not in ("layers", "layer_overrides") and not k.startswith("_")}
    groups = layer_groups(spec)
    index = {id(g[0]): n for n, g in enumerate(groups)}
    out["layer_kinds"] = [{"attention": [dict(x) for x in g[0]["attention"]],
                           "mlp": [dict(x) for x in g[0]["mlp"]], "norms": g[0]["norms"],
                           "extra_params": g[0]["extra_params"], "layers": g[1]} for g in groups]
    out["layer_kind_of_layer"] = [index[id(x)] for x in spec["layers"]]
    out["nope_layers"] = sorted(spec.get("nope_layers", ()))
    return out


# ======== llmcalc/precision.py ====================================================================
# The precision presets every script that costs serving takes (--precision): weight, activation
# and KV-cache bits at once, and how NVFP4 stores its 4-bit weights. Source of the NVFP4 layout:
# NVIDIA technical blog, "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference", 2025.

PRECISIONS = {  # --precision shorthand -> (weight bits, activation bits, kv-cache bits)
    "fp32": (32, 32, 32), "fp16": (16, 16, 16), "bf16": (16, 16, 16), "fp8": (8, 8, 8),
    "int8": (8, 8, 16), "w8a8": (8, 8, 16), "w8a16": (8, 16, 16), "w4a16": (4, 16, 16),
    "w4a8": (4, 8, 8), "fp4": (4, 4, 8), "w4a4": (4, 4, 8),
}
# --precision fp4 stores weights as NVFP4, the format NVIDIA's FP4 checkpoints (TensorRT Model
# Optimizer, nvidia/*-FP4) and Blackwell's FP4 matmuls use: 4-bit E2M1 values with one 8-bit E4M3
# scale per 16 (and one fp32 per tensor, ignored), 4.5 bits per weight (NVIDIA technical blog,
# "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference", 2025). MXFP4 (32 per
# 8-bit scale, 4.25) comes from a checkpoint's quantization_config; --weight-bits 4 counts bare values.
NVFP4_BITS = 4 + 8 / 16


# ======== llmcalc/model/formulas.py ===============================================================
# Per-kind formulas: for each attention and MLP kind, its parameters, matmul FLOPs per token,
# query-key pairs and core FLOPs, keys read in decode, KV cache and state elements; param_breakdown
# sums them over the layer list. Every tool's numbers come from these.

# --- per-kind formulas ---------------------------------------------------------------------------

def norm_params(*, width, norm):
    """Weights of one norm over `width` features: LayerNorm has gain and bias (2 w), RMSNorm a gain
    (w), a non-affine norm none (Ba et al. 2016; Zhang & Sennrich 2019)."""
    return {"layernorm": 2 * width, "rmsnorm": width, "none": 0}[norm]


def indexer_params(attn, *, h):
    """DeepSeek-V3.2's lightning indexer (DeepSeek-AI 2025, sec. 2.1), as transformers builds it:
    q from the query latent (r_q -> H_I d_I), one shared key head (h -> d_I) with a LayerNorm
    (2 d_I), and per-head weights (h -> H_I). Mistral Large 4's adds a LayerNorm on its input
    (2 h) and, with per-head position scaling, a scale and a bias per indexer head (2 H_I)
    (transformers' modeling_mistral_large4). GLM-5-Next's pools its keys over index_kpool = P
    positions: a pooling gate h -> d_I and a position table P x d_I (modeling_glm5_next)."""
    H, dI = attn["index_heads"], attn["index_head_dim"]
    if not attn["index_topk"] or not H:
        return 0
    q_in = attn["q_lora_rank"] or h
    extra = 2 * h * attn["indexer_input_norm"] + 2 * H * attn["position_scaling"]  # Mistral Large 4
    P = attn.get("index_kpool", 0)
    return q_in * H * dI + h * dI + 2 * dI + h * H + extra + (h * dI + P * dI if P else 0)


def mixer_widths(attn):
    """(in_proj output width, out_proj input width, conv channels) of a linear mixer. Gated
    DeltaNet: q, k, v, z, beta, a = 2 H_k d_k + 2 H_v d_v + 2 H_v; H_v d_v; 2 H_k d_k + H_v d_v.
    Mamba-2 (Dao & Gu 2024, arXiv 2405.21060 sec. 7; heads H of P, G groups of state N): z, x,
    B, C, dt = 2 H P + 2 G N + H; H P; H P + 2 G N. Mamba-1 (Gu & Dao 2023, arXiv 2312.00752;
    E inner channels, "heads" here): x, z = 2 E; E; E. A short convolution (LFM2/3; D channels):
    B, C, x = 3 D; D; D. Kimi Delta Attention (KDA; H heads of d, D = H d): q, k, v, the low-rank
    inputs of the decay and the output gate, beta = 3 D + 2 d + H; D; 3 D. Lightning attention
    (MiniMax-01, arXiv 2501.08313; H heads of d, D = H d): q, k, v and the sigmoid output gate from
    the layer input = 4 D; D; no conv. Griffin's recurrent block (De et al. 2024, arXiv 2402.19427
    sec. 2.4; RecurrentGemma; W = lru_width): x and gate branches 2 W; W; W. RWKV-4 time mixing (Peng et al. 2023, arXiv 2305.13048; D =
    attention_hidden_size): key, value, receptance = 3 D; D; no conv."""
    if attn["kind"] == "lightning":
        D = attn["heads"] * attn["head_dim"]
        return 4 * D, D, 0
    if attn["kind"] == "mlstm":  # q, k (H d_k each), v and the output gate (H d_v each), input and forget gates
        H, dk, dv = attn["heads"], attn["head_dim"], attn["v_head_dim"]
        return 2 * H * dk + 2 * H * dv + 2 * H, H * dv, 0
    if attn["kind"] == "rwkv":  # RWKV-4 time mixing: key, value, receptance (D each); output D -> h
        return 3 * attn["heads"], attn["heads"], 0
    if attn["kind"] == "rglru":  # Griffin's recurrent block: x and gate branches (W each); W -> h; conv over x
        return 2 * attn["heads"], attn["heads"], attn["heads"]
    if attn["kind"] == "kda":  # q, k, v (3 D), the decay's and the gate's low-rank inputs (2 d), beta
        D = attn["heads"] * attn["head_dim"]  # (full-rank decay and gate, Bailing: 2 D)
        r = D if attn.get("full_rank_gates") else attn["head_dim"]
        return 3 * D + 2 * r + attn["heads"], D, 3 * D
    if attn["kind"] in ("mamba1", "shortconv"):
        E = attn["heads"]
        return (2 if attn["kind"] == "mamba1" else 3) * E, E, E
    if attn["kind"] == "mamba2":
        d_in, gn = attn["heads"] * attn["head_dim"], attn["kv_heads"] * attn["state_size"]
        return 2 * d_in + 2 * gn + attn["heads"], d_in, d_in + 2 * gn
    Hk, Hv, dk, dv = attn["kv_heads"], attn["heads"], attn["head_dim"], attn["v_head_dim"]
    return 2 * Hk * dk + 2 * Hv * dv + 2 * Hv, Hv * dv, 2 * Hk * dk + Hv * dv


def linear_mixer_params(attn, *, h):
    """A linear mixer's weights, by kind (Mamba-2 below). One Gated DeltaNet mixer's weights (Yang et al. 2024, arXiv 2412.06464), as transformers'
    Qwen3-Next/Qwen3.5 build it: with H_k key heads of d_k and H_v value heads of d_v, an input
    projection to q, k (H_k d_k each), v and the output gate z (H_v d_v each) and per value head
    beta and the decay's a (h x (2 H_k d_k + 2 H_v d_v + 2 H_v)); a depthwise causal conv of K taps
    over q, k, v (no bias); per value head dt_bias and A_log; a gated RMSNorm over d_v shared by the
    heads; out_proj H_v d_v x h. Mamba-2 as transformers builds it (NemotronH, GraniteMoeHybrid,
    FalconH1): in_proj h x (2 d_in + 2 G N + H) (+ bias), a depthwise conv of K taps over x, B, C
    (+ bias), per head dt_bias, A_log and D, a gated RMSNorm over d_in where the family has one,
    out_proj d_in x h (+ bias). Mamba-1 as transformers' Jamba builds it: in_proj h x 2E, a conv of
    K taps (+ bias), x_proj E x (R + 2N) to dt's rank-R input and B, C, dt_proj R x E with a bias,
    A_log E x N, D, out_proj E x h, and Jamba's RMSNorms on dt, B and C (R + 2N). A short
    convolution (LFM3): in_proj h x 3h, a depthwise conv of K taps, out_proj h x h, biases on all
    three with conv_bias. KDA as transformers' Kimi Linear builds it (Kimi Team 2025, arXiv
    2510.26692): q, k, v projections, one depthwise conv of K taps over q, k, v (no bias), a low-rank
    per-channel decay (h -> d -> D, dt_bias D, A_log per head), beta per head, a low-rank sigmoid
    output gate (h -> d -> D), a gated RMSNorm over d shared by the heads, o_proj D x h."""
    w_in, w_out, conv_dim = mixer_widths(attn)
    K = attn["conv_kernel"]
    if attn["kind"] == "lightning":  # + the RMSNorm over the D-wide output (MiniMaxLightningAttention)
        return h * w_in + w_out * h + w_out
    if attn["kind"] == "mlstm":  # + the gates' biases (2 H), the per-head norm's weight (v), use_bias's biases
        b = attn["mixer_bias"]
        return h * w_in + 2 * attn["heads"] + w_out + w_out * h + b * (w_in - 2 * attn["heads"] + w_out + h)
    if attn["kind"] == "rwkv":  # + time_decay and time_first (D each), the three time_mix vectors (h each)
        return h * w_in + w_out * h + 2 * w_out + 3 * h
    if attn["kind"] == "rglru":  # biases on x, gate, out and conv; the RG-LRU's block-diagonal input and
        W, G = attn["heads"], attn["gate_blocks"]  # recurrence gates (G blocks of W/G, + biases) and its a
        return h * w_in + w_in + conv_dim * K + conv_dim + w_out * h + h + 2 * (W * W // G + W) + W
    if attn["kind"] == "shortconv":
        return h * w_in + conv_dim * K + w_out * h + attn["conv_bias"] * (w_in + conv_dim + h)
    if attn["kind"] == "kda":  # + the decay's and gate's d -> D up-projections, dt_bias D, A_log H, norm d
        H, d = attn["heads"], attn["head_dim"]
        ups = 0 if attn.get("full_rank_gates") else 2 * d * H * d
        return h * w_in + ups + conv_dim * K + H * d + H + d + w_out * h
    if attn["kind"] == "mamba1":
        E, R, N = attn["heads"], attn["dt_rank"], attn["state_size"]
        return (h * w_in + attn["in_bias"] * w_in + conv_dim * K + attn["conv_bias"] * conv_dim
                + E * (R + 2 * N) + R * E + E + E * N + E + w_out * h + attn["mixer_out_bias"] * h
                + attn["dt_norms"] * (R + 2 * N))
    if attn["kind"] == "mamba2":
        return (h * w_in + attn["in_bias"] * w_in + conv_dim * K + attn["conv_bias"] * conv_dim
                + 3 * attn["heads"] + attn["gated_norm"] * w_out + w_out * h + attn["mixer_out_bias"] * h)
    Hv, dv = attn["heads"], attn["v_head_dim"]
    return h * w_in + conv_dim * K + 2 * Hv + dv + w_out * h


def dsv4_attention_params(attn, *, h):
    """One DeepSeek-V4 attention block's weights, as transformers 5.23's modeling_deepseek_v4 builds
    it (verified on the meta device, tests/test_layer_families.py): a sink logit per head,
    q through a rank-r_q bottleneck with its norm (the per-head q norm has no weights), one shared
    K = V head (h -> d) with its norm, the output through o_groups grouped low-rank projections
    (a d -> r_o per group, then g r_o -> h), plus the layer's compressor: kv and gate projections
    (h -> d each; 2 d each with the overlapping windows of compressed sparse attention), a
    position bias per slot of its window and a norm; and for compressed sparse attention a
    lightning indexer over the compressed keys (its own compressor at width d_I, q from the query
    latent r_q -> H_I d_I, per-head weights h -> H_I)."""
    a, d, rq = attn["heads"], attn["head_dim"], attn["q_lora_rank"]
    g, ro, m = attn["o_groups"], attn["o_lora_rank"], attn["compress"]
    base = a + h * rq + rq + rq * a * d + h * d + d + a * d * ro + g * ro * h
    if attn["compress_kind"] == "hca":
        return base + 2 * h * d + m * d + d
    if attn["compress_kind"] == "csa":
        HI, dI = attn["c_index_heads"], attn["c_index_head_dim"]
        return (base + 4 * h * d + 2 * m * d + d
                + 4 * h * dI + 2 * m * dI + dI + rq * HI * dI + h * HI)
    return base


def dsv4_non_matmul_params(attn):
    """The weights of a DeepSeek-V4 attention block that no token multiplies through: sinks, norms
    and the compressors' position biases."""
    a, d, rq, m = attn["heads"], attn["head_dim"], attn["q_lora_rank"], attn["compress"]
    out = a + rq + d
    if attn["compress_kind"] == "hca":
        out += m * d + d
    if attn["compress_kind"] == "csa":
        dI = attn["c_index_head_dim"]
        out += 2 * m * d + d + 2 * m * dI + dI
    return out


def mla_q_macs_per_token(attn, *, h):
    """Multiply-adds per token of MLA's query path (DeepSeek-V2 sec. 2.1): q directly from h
    (h x a d_qk) or through the rank-r_q bottleneck (h x r_q, then r_q x a d_qk). A.X K2
    (transformers' modeling_axk2 q_gate_proj) reads [norm(c_q), c_q], 2 r_q wide
    ("q_latent_concat"), and with an elementwise output gate also writes the gate (a d_v)."""
    a, r_q = attn["heads"], attn["q_lora_rank"]
    d_qk = attn["qk_nope_head_dim"] + attn["qk_rope_head_dim"]
    out = a * (d_qk + attn["v_head_dim"] * (attn["output_gate"] == "elementwise"))
    if not r_q:
        return h * out
    return h * r_q + r_q * (2 if attn.get("q_latent_concat") else 1) * out


def attention_params(attn, *, h):
    """One attention block's weights. MHA/GQA/MQA: q (h x a d; twice as wide with an elementwise
    output gate, Qwen3-Next), k and v (h x kv d; k alone when K = V, none on a layer that reuses
    another's K/V, Gemma 4), o (a d x h), optional biases, q/k norms (per head, d each; or over all
    heads; Llama 4's L2 norm has no weights), a sink logit per head (gpt-oss), a per-head sigmoid
    output gate h -> a (LFM3's g_proj, "headwise"). MLA (DeepSeek-V2 sec. 2.1): q
    directly or via a rank-r_q bottleneck with a norm, a joint kv down-projection to r_kv + d_rope
    with a norm (none on a layer that reuses an earlier layer's latent), an up-projection to
    a (d_nope + d_v), and o (a d_v x h); a learned scale and bias per head with position scaling
    (Mistral Large 4); plus any indexer. extra_weights: a family's non-matmul weights in the block
    (DiffLlama's lambdas, BitNet's norm before o_proj). in_width: the width q, k and v read (2 h in
    Zamba's shared block); tied: the weights belong to a block an earlier layer holds (0 here)."""
    if attn["span"] == "state":
        return linear_mixer_params(attn, h=h)
    if attn["kind"] == "dsv4":
        return dsv4_attention_params(attn, h=h)
    a, kv, d, nm = attn["heads"], attn["kv_heads"], attn["head_dim"], attn["norm"]
    qkv_b, o_b = attn["qkv_bias"], attn["out_bias"]
    if attn["kind"] == "mla":
        r_q, r_kv = attn["q_lora_rank"], attn["kv_lora_rank"]
        d_nope, d_rope, d_v = attn["qk_nope_head_dim"], attn["qk_rope_head_dim"], attn["v_head_dim"]
        q = mla_q_macs_per_token(attn, h=h) + (qkv_b * r_q + norm_params(width=r_q, norm=nm) if r_q else 0)
        kv_down = 0 if attn["kv_shared"] else (h * (r_kv + d_rope) + qkv_b * (r_kv + d_rope)
                                                + norm_params(width=r_kv, norm=nm))
        kv_up = r_kv * a * (d_nope + d_v)
        return (q + kv_down + kv_up + a * d_v * h + o_b * h + a * attn["sinks"] + 2 * a * attn["position_scaling"]
                + h * a * (attn["output_gate"] == "headwise")  # Bailing's per-head gate on MLA
                + attn.get("extra_weights", 0)
                + indexer_params(attn, h=h))
    q_out = a * d * (2 if attn["output_gate"] == "elementwise" else 1)
    gate = a * (attn["output_gate"] == "headwise")  # LFM3's g_proj: h -> a, no bias
    dv = attn.get("v_dim", d)  # value heads narrower than key heads (MiMo-V2-Flash)
    kv_out = kv * (d + dv if attn["kv_proj"] == 2 else d * attn["kv_proj"])
    has_k = attn["kv_proj"] > 0  # a layer that reuses another's K/V has no k norm either
    qk = {"none": 0, "l2": 0, "head": d * (1 + has_k), "full": (a + kv * has_k) * d}[attn["qk_norm"]]
    if attn.get("tied"):  # a block shared with an earlier layer (Zamba): its weights counted there
        return 0
    h_in = attn.get("in_width", h)  # Zamba's shared attention reads [hidden, embedding], 2 h wide
    return (h_in * (q_out + kv_out + gate) + qkv_b * (q_out + kv_out) + a * dv * h + o_b * h
            + attention_expert_params(attn, qo=h_in * q_out + a * dv * h, h=h)
            + norm_params(width=qk, norm=nm) + a * attn["sinks"] + attn.get("extra_weights", 0))


def attention_expert_params(attn, *, qo, h):
    """Mixture of attention heads (JetMoE's MoA, Shen et al. 2024, arXiv 2404.07413 sec. 2.2, as
    transformers' JetMoeMoA builds it): E experts, each a query projection h -> kv d and an output
    projection kv d -> h, k of them per token (a = k kv query heads over the shared K/V), and a
    router h x E. qo: the q and o weights of the k experts a token runs; returns the weights beyond
    them (the other E - k experts and the router); 0 without attention experts."""
    E, k = attn.get("attn_experts", 0), attn.get("attn_topk", 0)
    if not E:
        return 0
    return qo * (E - k) // k + h * E


def attention_inactive_params(attn, *, h):
    """The attention-expert weights a token does not run: (E - k) experts' q and o (MoA), i.e.
    attention_expert_params less its router; 0 else."""
    E = attn.get("attn_experts", 0)
    if not E or attn["span"] == "state" or attn["kind"] != "mha":
        return 0
    a, d = attn["heads"], attn["head_dim"]
    return attention_expert_params(attn, qo=h * a * d + a * attn.get("v_dim", d) * h, h=h) - h * E


def mlp_params(*, h, f, num_linears, bias):
    """One MLP: num_linears matrices of h x f (2 for GELU; 3 for gated GLU variants, Shazeer 2020),
    plus biases: f per input projection and h on the output projection."""
    return num_linears * h * f + (bias and (num_linears - 1) * f + h)


def mlp_block_params(mlp, *, h):
    """One MLP block by part. Dense: mlp_params. MoE (Shazeer et al. 2017; DeepSeekMoE, Dai et al.
    2024): E routed experts of width f_e (biases if the family has them, gpt-oss), shared experts
    as one MLP of their total width (+ an h -> 1 gate, Qwen-MoE), router h x E (+ E bias where it
    is a parameter; + router_extra, Gemma 4's router scale h and per-expert scale E, transformers'
    Gemma4TextRouter). Zero-computation experts (LongCat-Flash) have no weights."""
    if mlp.get("tied"):  # a block shared with an earlier layer (Zamba): its weights counted there
        return {"dense": 0, "routed_experts": 0, "one_expert": 0, "shared_experts": 0, "router": 0}
    if mlp["kind"] == "dense":  # + a learned activation's scalars (Apertus' xIELU: 2)
        return {"dense": mlp_params(h=h, f=mlp["width"], num_linears=mlp["linears"], bias=mlp["bias"])
                + mlp.get("act_params", 0),
                "routed_experts": 0, "one_expert": 0, "shared_experts": 0, "router": 0}
    one = mlp_params(h=h, f=mlp["width"], num_linears=mlp["linears"], bias=mlp["bias"])
    f_sh = mlp["shared_width"]
    shared = mlp_params(h=h, f=f_sh, num_linears=mlp["linears"], bias=mlp["shared_bias"]) if f_sh else 0
    E = mlp["num_experts"]
    return {"dense": 0, "routed_experts": E * one, "one_expert": one,
            "shared_experts": shared + h * bool(mlp["shared_gate"]),
            "router": h * (E + mlp["zero_experts"]) + (E + mlp["zero_experts"]) * bool(mlp["router_bias"])
            + mlp.get("router_extra", 0)}


def expected_real_experts(mlp):
    """Routed experts with weights that one token runs: k, or with Z zero-computation experts among
    the E + Z a router picks from, k E / (E + Z) in expectation under uniform routing (LongCat-Flash
    tech report, sec. 2.1, adjusts its expert bias so the real count averages about this)."""
    if mlp["kind"] != "moe":
        return 0
    k, E, Z = mlp["topk"], mlp["num_experts"], mlp["zero_experts"]
    return k * E / (E + Z) if Z else k


def layer_params(layer, *, h, norm):
    """All weights of one layer, by part ("attention": every token mixer, softmax or linear;
    "linear_mixer": the linear-attention and state-space ones among them): the per-kind functions
    above summed over the layer's blocks, plus its norms and extra weights; "inactive" is the
    routed-expert weight a token does not run (expected_real_experts)."""
    out = {"attention": sum(attention_params(x, h=h) for x in layer["attention"]),
           "linear_mixer": sum(attention_params(x, h=h) for x in layer["attention"] if x["span"] == "state"),
           "norms": layer["norms"] * norm_params(width=h, norm=norm), "extra": layer["extra_params"],
           "dense": 0, "routed_experts": 0, "one_expert": 0, "shared_experts": 0, "router": 0,
           "inactive": 0}
    for m in layer["mlp"]:
        p = mlp_block_params(m, h=h)
        for k in ("dense", "routed_experts", "shared_experts", "router"):
            out[k] += p[k]
        out["one_expert"] = max(out["one_expert"], p["one_expert"])
        out["inactive"] += p["routed_experts"] - expected_real_experts(m) * p["one_expert"]
    out["inactive"] += sum(attention_inactive_params(x, h=h) for x in layer["attention"])
    out["total"] = sum(out[k] for k in ("attention", "norms", "extra", "dense", "routed_experts",
                                        "shared_experts", "router"))
    return out


def attention_head_dims(attn):
    """(d_qk, d_v): per-head width of the score product and of the context product: head_dim for
    MHA/GQA/MQA, d_nope + d_rope and d_v for MLA (DeepSeek-V2 sec. 2.1.2); a linear mixer's key and
    value head widths."""
    if attn["kind"] == "mla":
        return attn["qk_nope_head_dim"] + attn["qk_rope_head_dim"], attn["v_head_dim"]
    if attn["span"] == "state":
        return attn["head_dim"], attn.get("v_head_dim") or attn["head_dim"]
    return attn["head_dim"], attn.get("v_dim", attn["head_dim"])


def attention_linear_flops_per_token(attn, *, h):
    """Forward FLOPs (2 per multiply-add) of one attention block's projections for one token;
    biases, norms and sinks are not matmuls. MHA/GQA: q (with its gate), k, v, o. MLA (DeepSeek-V2
    sec. 2.1): q directly or via rank r_q, kv down to r_kv + d_rope, up to a (d_nope + d_v), o.
    A lightning indexer adds its q (r_q -> H_I d_I), key (h -> d_I) and head weights (h -> H_I).
    A Gated DeltaNet mixer: its input and output projections, and its depthwise conv (K taps per
    channel per token, 2 x its weights like a matmul's)."""
    a, kv, d = attn["heads"], attn["kv_heads"], attn["head_dim"]
    if attn["kind"] == "dsv4":  # every weight matrix once per token; sinks, biases, norms are not matmuls
        return 2 * (dsv4_attention_params(attn, h=h) - dsv4_non_matmul_params(attn))
    if attn["span"] == "state":
        w_in, w_out, conv_dim = mixer_widths(attn)
        E = attn["heads"]
        inner = E * (attn["dt_rank"] + 2 * attn["state_size"]) + attn["dt_rank"] * E if attn["kind"] == "mamba1" else 0
        if attn["kind"] == "kda" and not attn.get("full_rank_gates"):  # the decay's and gate's d -> D ups
            inner = 2 * attn["head_dim"] * attn["heads"] * attn["head_dim"]
        if attn["kind"] == "rglru":  # the RG-LRU's two block-diagonal gates (baddbmm)
            inner = 2 * attn["heads"] * attn["heads"] // attn["gate_blocks"]
        return 2 * (h * w_in + conv_dim * attn["conv_kernel"] + w_out * h + inner)  # mamba1: x_proj, dt_proj
    if attn["kind"] == "mla":
        r_kv = attn["kv_lora_rank"]
        d_nope, d_rope, d_v = attn["qk_nope_head_dim"], attn["qk_rope_head_dim"], attn["v_head_dim"]
        q = mla_q_macs_per_token(attn, h=h)
        kv_down = 0 if attn["kv_shared"] else h * (r_kv + d_rope)
        macs = q + kv_down + r_kv * a * (d_nope + d_v) + a * d_v * h + h * a * (attn["output_gate"] == "headwise")
    else:
        q_out = a * d * (2 if attn["output_gate"] == "elementwise" else 1) + a * (attn["output_gate"] == "headwise")
        dv = attn.get("v_dim", d)
        kv_out = kv * (d + dv if attn["kv_proj"] == 2 else d * attn["kv_proj"])
        macs = attn.get("in_width", h) * (q_out + kv_out) + a * dv * h + h * attn.get("attn_experts", 0)  # + MoA router
    return 2 * macs + indexer_linear_flops_per_token(attn, h=h)


def indexer_linear_flops_per_token(attn, *, h):
    """Forward FLOPs per token of a lightning indexer's projections (DeepSeek-AI 2025, DeepSeek-V3.2
    sec. 2.1): its queries from the query latent (r_q -> H_I d_I), its key (h -> d_I) and its
    per-head weights (h -> H_I), and a pooled indexer's gate (h -> d_I, GLM-5-Next); 0 for an
    attention block without an indexer."""
    if attn["kind"] == "dsv4":  # DeepSeek-V4's indexer: its compressor (kv, gate: 2 d_I each), q, weights
        HI, dI = attn["c_index_heads"], attn["c_index_head_dim"]
        return 2 * (4 * h * dI + attn["q_lora_rank"] * HI * dI + h * HI) if HI else 0
    if not attn["index_topk"]:
        return 0
    H, dI = attn["index_heads"], attn["index_head_dim"]
    gate = h * dI if attn.get("index_kpool") and H else 0
    return 2 * ((attn["q_lora_rank"] or h) * H * dI + h * dI + h * H + gate)


def _causal_pairs_capped(s, cap):
    """sum over p = 1..s of min(p, cap): causal query-key pairs when no query sees more than cap keys."""
    if cap >= s:
        return s * (s + 1) // 2
    return cap * (cap + 1) // 2 + (s - cap) * cap


def query_key_pairs(attn, *, seq_len, attention):
    """Query-key pairs one sequence's attention block scores, {"core", "indexer"}. `full`: every
    score of the s x s matrix, masked or not, as eager attention computes it (sliding, chunked and
    top-k masks too). `causal`: the pairs a kernel that skips masked blocks executes: p keys for the
    query at position p, at most the window (sliding), its position in its chunk (chunked), or the
    indexer's top-k (the indexer itself scores all p; a pooled indexer, GLM-5-Next, scores the
    pools of P keys: s x floor(s / P) under `full`, floor(p / P) complete pools for query p). A
    linear mixer pairs nothing: its "state" entry is the s tokens its chunked algorithm runs (the
    same under both conventions)."""
    s = seq_len
    if attn["span"] == "state":
        return {"core": 0, "indexer": 0, "state": s}
    if attn["kind"] == "dsv4":
        return _dsv4_pairs(attn, seq_len=s, attention=attention)
    P = attn.get("index_kpool", 0) if attn["index_topk"] else 0
    if attention == "full":
        return {"core": s * s, "indexer": (s * (s // P) if P else s * s) if attn["index_topk"] else 0}
    if attn["span"] == "sliding":
        core = _causal_pairs_capped(s, attn["window"])
    elif attn["span"] == "chunked":
        c = attn["chunk"]
        n, rem = divmod(s, c)
        core = n * c * (c + 1) // 2 + rem * (rem + 1) // 2
    else:
        core = s * (s + 1) // 2
    if attn["index_topk"]:
        return {"core": min(core, _causal_pairs_capped(s, attn["index_topk"])),
                "indexer": _sum_floor_capped(s, P) if P else s * (s + 1) // 2}
    return {"core": core, "indexer": 0}


def _sum_floor_capped(n, m, cap=None):
    """sum over p = 1..n of min(floor(p / m), cap): compressed entries the p-th query can see when one
    closes every m tokens (at most cap of them)."""
    def f(k):  # sum over p = 1..k of floor(p / m)
        q, r = divmod(k, m)
        return m * q * (q - 1) // 2 + q * (r + 1) if k > 0 else 0
    if cap is None or cap >= n // m:
        return f(n)
    return f(cap * m - 1) + cap * (n - cap * m + 1)


def _dsv4_pairs(attn, *, seq_len, attention):
    """DeepSeek-V4 query-key pairs: each query sees the sliding window's keys and the compressed
    entries closed before it (one per compress_rate tokens; a compressed sparse layer's indexer
    scores them all and its core takes the top-k). `full`: the s x (s + floor(s / m)) matrix
    transformers' eager attention computes (the window, causality and the top-k are masks);
    `causal`: min(p, W) window keys and floor(p / m) entries (at most top-k) per query."""
    s, m, W = seq_len, attn["compress"], attn["window"]
    K = attn["c_index_topk"] or None
    csa = attn["compress_kind"] == "csa"
    if attention == "full":
        c = s * (s // m) if m else 0
        return {"core": s * s + c, "indexer": c if csa else 0}
    comp = _sum_floor_capped(s, m, K) if m else 0
    return {"core": _causal_pairs_capped(s, W) + comp, "indexer": _sum_floor_capped(s, m) if csa else 0}


def decode_keys_read(attn, *, context):
    """Keys one decode step's query attends to at `context` tokens (its own included), and keys the
    indexer scores: all of them; at most the window (sliding); those of its own chunk (chunked, a
    chunk holding `chunk` tokens); the top-k the indexer picks (DeepSeek-V3.2 sec. 2.1). A linear
    mixer reads no keys: one recurrent step of its state ("state_steps")."""
    c = context
    if attn["span"] == "state":
        return {"core": 0, "indexer": 0, "state_steps": 1}
    if attn["kind"] == "dsv4":  # the window, and the compressed entries closed so far (top-k of them)
        m = attn["compress"]
        comp = c // m if m else 0
        csa = attn["compress_kind"] == "csa"
        return {"core": min(c, attn["window"]) + (min(comp, attn["c_index_topk"]) if csa else comp),
                "indexer": comp if csa else 0}
    if attn["span"] == "sliding":
        core = min(c, attn["window"])
    elif attn["span"] == "chunked":
        core = (c - 1) % attn["chunk"] + 1 if c else 0
    else:
        core = c
    if attn["index_topk"]:  # a pooled indexer scores the c // P complete pools (reading their pooled keys)
        P = attn.get("index_kpool", 0)
        return {"core": min(core, attn["index_topk"]), "indexer": c // P if P else c}
    return {"core": core, "indexer": 0}


def attention_core_flops(attn, *, pairs):
    """Forward FLOPs of one attention block's core for pairs {"core", "indexer"}: scores Q K^T
    (2 a d_qk per pair) and context P V (2 a d_v per pair); GQA shares k/v but still scores every
    query head (Narayanan et al. 2021 sec. 5.1). The indexer scores H_I heads of d_I per pair and
    sums them with per-head weights, I = sum_j w_j ReLU(q_j . k) (DeepSeek-AI 2025 sec. 2.1):
    2 H_I (d_I + 1) per pair, as transformers' eager indexer runs it (two bmm's). A linear mixer's
    core ("state_core"): linear_core_flops over pairs["state"] tokens run chunked and
    pairs["state_steps"] recurrent steps."""
    a = attn["heads"]
    d_qk, d_v = attention_head_dims(attn)
    state = 0
    if attn["span"] == "state":
        state = linear_core_flops(attn, chunked_tokens=pairs.get("state", 0), steps=pairs.get("state_steps", 0))
    HI, dI = ((attn["c_index_heads"], attn["c_index_head_dim"]) if attn["kind"] == "dsv4"
              else (attn["index_heads"], attn["index_head_dim"]))
    return {"attention_scores": 2 * a * d_qk * pairs["core"],
            "attention_context": 2 * a * d_v * pairs["core"],
            "indexer_scores": 2 * HI * (dI + 1) * pairs["indexer"],
            "state_core": state}


def linear_core_flops(attn, *, chunked_tokens, steps):
    """A linear mixer's core FLOPs by kind: gdn_core_flops or mamba2_core_flops; Mamba-1's selective
    scan (Gu & Dao 2023 sec. 3.3) per token and channel updates an N-wide state with dt x B and
    reads it with C, 4 E N (the discretisation is elementwise, not counted); a short convolution
    has no core beyond its conv (counted with the projections)."""
    if attn["kind"] in ("shortconv", "rwkv", "rglru"):  # RWKV's WKV and the RG-LRU recurrence are elementwise
        return 0
    if attn["kind"] == "lightning":
        return lightning_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)
    if attn["kind"] == "kda":
        return kda_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)
    if attn["kind"] == "mlstm":
        return mlstm_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)
    if attn["kind"] == "mamba1":
        return (chunked_tokens + steps) * 4 * attn["heads"] * attn["state_size"]
    if attn["kind"] == "mamba2":
        return mamba2_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)
    return gdn_core_flops(attn, chunked_tokens=chunked_tokens, steps=steps)


def lightning_core_flops(attn, *, chunked_tokens, steps):
    """FLOPs of a lightning-attention core (MiniMax-01, arXiv 2501.08313 sec. 2.2, its Algorithm 1;
    transformers' MiniMaxLightningAttention), blocks of B positions (the last one shorter), H heads
    of d: per block of b positions the intra-block Q K^T and its decayed product with V (4 H b^2 d)
    and the inter-block read-out of the d x d state by Q and the state's update K^T V (4 H b d^2);
    per decode step the update and the read-out (4 H d^2). The decays are elementwise, not counted."""
    H, d, B = attn["heads"], attn["head_dim"], attn["state_chunk"]
    n, r = divmod(chunked_tokens, B)
    return 4 * H * d * (n * B * B + r * r) + 4 * H * d * d * chunked_tokens + steps * 4 * H * d * d


def mlstm_core_flops(attn, *, chunked_tokens, steps):
    """FLOPs of an mLSTM core (Beck et al. 2025, arXiv 2503.13427, the chunkwise-parallel form as
    transformers' mlstm_chunkwise_native_autograd runs it), chunks of C positions, H heads, keys of
    d_k and values of d_v: per chunk the intra-chunk Q K^T (2 C^2 d_k) and its product with V
    (2 C^2 d_v), the read-out of the d_k x d_v memory by Q (2 C d_k d_v) and of the normaliser
    (2 C d_k), and the memory's update K^T V (2 C d_k d_v). Per decode step: the update (an outer
    product, 2 d_k d_v), the read-outs (2 d_k d_v + 2 d_k). Gates and decays are elementwise."""
    H, dk, dv, C = attn["heads"], attn["head_dim"], attn["v_head_dim"], attn["state_chunk"]
    n, r = divmod(chunked_tokens, C)
    per_pos = 4 * dk * dv + 2 * dk  # the memory's read-out and update, the normaliser's read-out
    return H * (2 * (dk + dv) * (n * C * C + r * r) + chunked_tokens * per_pos + steps * (4 * dk * dv + 2 * dk))


def mamba2_core_flops(attn, *, chunked_tokens, steps):
    """FLOPs of a Mamba-2 SSD core (Dao & Gu 2024, arXiv 2405.21060 sec. 6, the chunked algorithm of
    its Listing 1 as mamba_ssm's kernels run it), chunks of Q positions (the last one padded), H
    heads of P, G groups of state N: per chunk the group-shared C B^T (2 G Q^2 N), the masked
    product with x (2 H Q^2 P), the chunk states B^T x (2 H Q P N), their pass to the next chunk
    (a multiply-add per state element, 2 H P N) and the states' read-out by C (2 H Q P N). Per
    decode step: the state update with x B^T and its read-out by C (4 H P N; the decay is
    elementwise, not counted)."""
    H, P, G, N, Q = attn["heads"], attn["head_dim"], attn["kv_heads"], attn["state_size"], attn["state_chunk"]
    chunks = -(-chunked_tokens // Q)
    per_chunk = 2 * G * Q * Q * N + 2 * H * Q * Q * P + 4 * H * Q * P * N + 2 * H * P * N
    return chunks * per_chunk + steps * 4 * H * P * N


def kda_core_flops(attn, *, chunked_tokens, steps):
    """FLOPs of a Kimi Delta Attention core (Kimi Team 2025, arXiv 2510.26692: Gated DeltaNet's
    chunked WY algorithm, Yang et al. 2024 arXiv 2412.06464, with a per-channel decay), per chunk
    of C positions (the last padded) and head of d_k = d_v = d: the UT-transform matrix and the
    intra-chunk q k^T, each a C x C product with the decay inside the d_k contraction (2 C^2 d_k
    each), the products of the transform with v and with the decayed k (2 C^2 (d_v + d_k)), the
    forward substitution that inverts it ((C - 1) C (2 C - 1) / 3), the intra-chunk product with the
    new values (2 C^2 d_v) and three products with the d x d state (6 C d_k d_v). Per decode step
    the three state products, 6 d^2 per head."""
    H, d, C = attn["heads"], attn["head_dim"], attn["state_chunk"]
    chunks = -(-chunked_tokens // C)
    per_chunk = 2 * C * C * (3 * d + 2 * d) + 6 * C * d * d + (C - 1) * C * (2 * C - 1) // 3
    return H * (chunks * per_chunk + steps * 6 * d * d)


def gdn_core_flops(attn, *, chunked_tokens, steps):
    """FLOPs of a Gated DeltaNet core, per value head (q and k shared by H_v / H_k value heads are
    repeated to H_v). Chunked (Yang et al. 2024, arXiv 2406.06484 sec. 3 and arXiv 2412.06464
    sec. 3.3; transformers' torch_chunk_gated_delta_rule), per chunk of C positions (the last one
    padded to C): the two C x C products k_beta k^T and q k^T (2 C^2 d_k each); two unit-lower-
    triangular solves of the UT transform, C (C - 1) (d_v + d_k); the intra-chunk product A v
    (2 C^2 d_v); and three products with the d_k x d_v state (read by k_cumdecay and by q, and
    the update k^T v: 2 C d_k d_v each). Recurrent, per step: the same three state products for one
    token, 6 d_k d_v (the state's decay is elementwise, not counted)."""
    Hv, dk, dv, C = attn["heads"], attn["head_dim"], attn["v_head_dim"], attn["state_chunk"]
    chunks = -(-chunked_tokens // C)
    per_chunk = 4 * C * C * dk + 2 * C * C * dv + C * (C - 1) * (dk + dv) + 6 * C * dk * dv
    return Hv * (chunks * per_chunk + steps * 6 * dk * dv)


def mlp_flops_per_token(mlp, *, h):
    """Forward FLOPs of one MLP block per token: a dense MLP (num_linears h x f matrices); or k
    routed experts of width f_e (k E / (E + Z) with zero-computation experts), the shared experts
    plus their h -> 1 gate, and the router over E (+ Z) experts (Shazeer et al. 2017)."""
    nl = mlp["linears"]
    if mlp["kind"] == "dense":
        return {"dense_mlp": 2 * nl * h * mlp["width"], "routed_experts": 0, "shared_experts": 0, "router": 0}
    return {"dense_mlp": 0,
            "routed_experts": expected_real_experts(mlp) * 2 * nl * h * mlp["width"],
            "shared_experts": 2 * nl * h * mlp["shared_width"] + 2 * h * bool(mlp["shared_gate"]),
            "router": 2 * h * (mlp["num_experts"] + mlp["zero_experts"])}


def cache_elements_per_token(attn, *, mla_cache="latent"):
    """Cached numbers per token per sequence for one attention block, {"kv", "indexer"}. MHA/GQA/
    MQA: K and V, 2 kv d (kv (d + d_v) where value heads are narrower, MiMo-V2-Flash). MLA: the compressed latent r_kv + d_rope (DeepSeek-V2 sec. 2.1.3; what
    vLLM and SGLang keep) or, with mla_cache="expanded", per-head keys a (d_nope + d_rope) and values
    a d_v (what transformers' cache holds for DeepSeek-V2/V3). Layers that reuse another layer's
    K/V or latent hold none of it. A lightning indexer caches one d_I key per token (its own, also
    on a layer that reuses another's latent: Mistral Large 4); a pooled one (GLM-5-Next) its key,
    its pooling-gate score and a valid flag, 2 d_I + 1, as transformers' cache packs them. A linear
    mixer caches nothing per
    token (state_elements: its constant state)."""
    if attn["span"] == "state":
        return {"kv": 0, "indexer": 0}
    if attn["kind"] == "dsv4":  # one K = V head of the window; transformers' plain sliding layer keeps K and V
        return {"kv": attn["head_dim"] * (2 if attn["compress_kind"] == "none" else 1), "indexer": 0}
    ind = attn["index_head_dim"] if attn["index_topk"] else 0
    if ind and attn.get("index_kpool"):  # GLM-5-Next's packed state: key, pooling-gate score, valid flag
        ind = 2 * ind + 1
    if attn["kv_shared"]:
        return {"kv": 0, "indexer": ind}
    if attn["kind"] == "mla":
        if mla_cache == "latent":
            return {"kv": attn["kv_lora_rank"] + attn["qk_rope_head_dim"], "indexer": ind}
        a = attn["heads"]
        return {"kv": a * (attn["qk_nope_head_dim"] + attn["qk_rope_head_dim"]) + a * attn["v_head_dim"],
                "indexer": ind}
    return {"kv": attn["kv_heads"] * (attn["head_dim"] + attn.get("v_dim", attn["head_dim"])), "indexer": ind}


def cached_tokens(attn, *, context):
    """Tokens one sequence's cache holds for this block at `context` tokens: all of them on a full
    layer; at most W on a sliding layer, a rolling buffer of W (Mistral 7B sec. 2; transformers'
    DynamicSlidingWindowLayer shows W - 1 between steps but keeps storage for W after a decode
    step, tests/fixtures/README.md); at most C on a chunked layer (transformers keeps Llama 4's
    chunked layers in the same sliding cache with W = attention_chunk_size). Assumes steady-state
    decoding: right after a prefill of N > W, transformers still holds all N until the next step.
    A linear mixer holds no tokens (its state is constant: state_elements)."""
    if attn["span"] == "state":
        return 0
    if attn["span"] == "sliding":
        return min(context, attn["window"])
    if attn["span"] == "chunked":
        return min(context, attn["chunk"])
    return context


def compressed_cache_elements(attn, *, context):
    """Numbers one sequence's DeepSeek-V4 cache holds for a layer's compressor at `context` tokens,
    {"kv", "indexer"}, beside its window (cached_tokens x cache_elements_per_token), as transformers'
    DeepseekV4HCACache / CSACache hold them: floor(t / m) compressed entries of d (and of d_I for the
    indexer on a compressed sparse layer), the projections of the t mod m tokens of the window still
    open (kv and gate: d each, 2 d each with the overlapping windows, 2 d_I each for the indexer),
    and on a compressed sparse layer once t >= m the previous window's overlap half (kv and gate,
    m x d and m x d_I). Other kinds: none."""
    if attn["kind"] != "dsv4" or not attn["compress"]:
        return {"kv": 0, "indexer": 0}
    t, m, d = context, attn["compress"], attn["head_dim"]
    q, r = divmod(t, m)
    if attn["compress_kind"] == "hca":
        return {"kv": q * d + 2 * r * d, "indexer": 0}
    dI = attn["c_index_head_dim"]
    overlap = m if t >= m else 0
    return {"kv": q * d + 2 * r * 2 * d + 2 * overlap * d, "indexer": q * dI + 2 * r * 2 * dI + 2 * overlap * dI}


def state_elements(attn):
    """Numbers one sequence's cache holds for a linear mixer, whatever its length, {"conv",
    "recurrent"}: the conv window, K positions of the 2 H_k d_k + H_v d_v conv channels (what
    transformers' LinearAttentionLayer keeps; vLLM keeps K - 1), and the H_v x d_k x d_v recurrent
    state (Yang et al. 2024, arXiv 2412.06464 eq. 10); Mamba-2: the conv window over x, B, C and
    the H x P x N state. Softmax attention: none, except the convolution windows some families
    keep beside the K/V (transformers' LinearAttentionAnd*AttentionLayer): Inkling / Inkling 2's
    depthwise convolutions on k and v (kv d channels each) and on the attention's and the MLP's
    outputs (h each, "residual_conv_state" = 2 h K), K taps each, in fp32 (counted under
    "recurrent", the numbers kept at state precision); ZAYA's q/k convolution window ((a + kv) d
    channels, cca_time0 + cca_time1 - 2 taps) and its delayed value half (kv d / 2), in the model
    dtype ("conv")."""
    if attn["span"] != "state":
        kvd = attn["kv_heads"] * attn["head_dim"]
        return {"conv": attn.get("qk_conv_taps", 0) * (attn["heads"] * attn["head_dim"] + kvd)
                + kvd // 2 * bool(attn.get("delayed_value_state")),
                "recurrent": attn.get("kv_conv_taps", 0) * 2 * kvd + attn.get("residual_conv_state", 0)}
    conv = mixer_widths(attn)[2] * attn["conv_kernel"]
    if attn["kind"] == "shortconv":
        return {"conv": conv, "recurrent": 0}
    if attn["kind"] == "rglru":  # the conv's last K - 1 inputs (model dtype) and the W-wide state (fp32)
        return {"conv": attn["heads"] * (attn["conv_kernel"] - 1), "recurrent": attn["heads"]}
    if attn["kind"] == "mlstm":  # the matrix memory C (H d_k d_v), the normaliser n (H d_k) and the max state m (H)
        H, dk = attn["heads"], attn["head_dim"]
        return {"conv": 0, "recurrent": H * dk * attn["v_head_dim"] + H * dk + H}
    if attn["kind"] == "rwkv":  # the two token-shift vectors (time and channel mixing, h each, model dtype)
        return {"conv": 2 * attn["model_width"], "recurrent": 3 * attn["heads"]}  # and num, den, max (fp32)
    if attn["kind"] in ("kda", "lightning"):  # H x d x d
        return {"conv": conv, "recurrent": attn["heads"] * attn["head_dim"] ** 2}
    if attn["kind"] == "mamba1":  # E x N (Gu & Dao 2023 sec. 3)
        return {"conv": conv, "recurrent": attn["heads"] * attn["state_size"]}
    if attn["kind"] == "mamba2":  # H x P x N (Dao & Gu 2024 sec. 7)
        return {"conv": conv, "recurrent": attn["heads"] * attn["head_dim"] * attn["state_size"]}
    return {"conv": conv, "recurrent": attn["heads"] * attn["head_dim"] * attn["v_head_dim"]}


def param_breakdown(spec):
    """Exact parameter counts by component for a resolved spec, summed over its layer list (see
    the module docstring for the conventions of 'non-embedding' and 'active')."""
    V, h, nm = spec["vocab_size"], spec["hidden_size"], spec["norm"]
    p = spec["word_embed_proj_dim"]
    sums = dict.fromkeys(("attention", "linear_mixer", "norms", "extra", "dense", "routed_experts",
                          "shared_experts", "router", "inactive"), 0)
    kinds = []
    for layer, count, first in layer_groups(spec):
        lp = layer_params(layer, h=h, norm=nm)
        for k in sums:
            sums[k] += count * lp[k]
        kinds.append({"layers": count, "first_layer": first,
                      "attention": " + ".join(attention_kind(x) for x in layer["attention"]) or "-",
                      "mlp": " + ".join(mlp_kind(x) for x in layer["mlp"]) or "-", "params_per_layer": lp["total"],
                      "attention_params": lp["attention"], "one_expert_params": lp["one_expert"]})
    out = {
        "embedding_params": V * p,
        "position_embedding_params": spec["position_embedding_rows"] * h,
        "embedding_norm_params": norm_params(width=h, norm=nm) if spec["embedding_norm"] else 0,
        "embedding_projection_params": 2 * p * h if p != h else 0,
        "per_layer_embedding_params": spec["per_layer_embedding_params"],
        "attention_params": sums["attention"] - sums["linear_mixer"],
        "linear_mixer_params": sums["linear_mixer"],
        "mlp_params": sums["dense"],
        "routed_expert_params": sums["routed_experts"],
        "shared_expert_params": sums["shared_experts"],
        "router_params": sums["router"],
        "layer_norm_params": sums["norms"],
        "layer_extra_params": sums["extra"],
        "other_params": sum(spec["other_params"].values()),
        "final_norm_params": norm_params(width=h, norm=nm) if spec["final_norm"] else 0,
        # a head of fewer rows than the embedding where the family says so (Inkling 2's unpadded_vocab_size)
        "output_head_params": 0 if spec["tied_embeddings"] else spec.get("head_vocab_size", V) * p,
    }
    total = sum(out.values())
    inactive = int(round(sums["inactive"]))
    emb = (out["embedding_params"] + out["position_embedding_params"] + out["output_head_params"]
           + out["per_layer_embedding_params"])
    moe_layers = set(spec["moe_layers"])
    first = layer_params(next((x for x in spec["layers"] if any(a["span"] != "state" for a in x["attention"])),
                              spec["layers"][0]), h=h, norm=nm)
    first_linear = next((layer_params(x, h=h, norm=nm) for x in spec["layers"]
                         if any(a["span"] == "state" for a in x["attention"])), None)
    moe0 = layer_params(spec["layers"][min(moe_layers)], h=h, norm=nm) if moe_layers else None
    dense0 = next((layer_params(x, h=h, norm=nm) for i, x in enumerate(spec["layers"])
                   if i not in moe_layers and x["mlp"]), None)
    out.update({
        "per_layer": {"attention": first["attention"] - first["linear_mixer"],
                      "linear_mixer": first_linear["linear_mixer"] if first_linear else 0, "norms": first["norms"],
                      "dense_mlp": dense0["dense"] if dense0 else 0,
                      "moe_routed_experts": moe0["routed_experts"] if moe0 else 0,
                      "moe_one_expert": moe0["one_expert"] if moe0 else 0,
                      "moe_shared_experts": moe0["shared_experts"] if moe0 else 0,
                      "moe_router": moe0["router"] if moe0 else 0,
                      "dense_layer_total": dense0["total"] if dense0 else 0,
                      "moe_layer_total": moe0["total"] if moe0 else 0},
        "layer_kinds": kinds,
        "num_dense_layers": spec["num_layers"] - len(moe_layers), "num_moe_layers": len(moe_layers),
        "num_attention_layers": sum(any(a["span"] != "state" for a in x["attention"]) for x in spec["layers"]),
        "total_params": total, "non_embedding_params": total - emb,
        "active_params": total - inactive, "active_non_embedding_params": total - inactive - emb,
    })
    return out


# ======== llmcalc/model/sharding.py ===============================================================
# What one tensor-parallel rank holds of an attention or MLP block (kv heads replicated when
# fewer than tp), as the per-kind functions take it.

def _kv_heads_per_rank(kv, tp):
    """kv heads one tensor-parallel rank holds: kv/tp, or 1 replicated head when kv < tp
    (Megatron-LM and vLLM replicate kv heads when there are fewer than tp)."""
    return kv // tp if kv >= tp else 1


def attention_on_rank(attn, *, tp):
    """The share of one attention block that one tensor-parallel rank holds, as an attention dict
    the block's per-kind functions take: a/tp query heads and kv/tp kv heads (one replicated head
    when kv < tp). What is not per head stays whole on every rank: MLA's down-projections and their
    norms, the output bias, and a lightning indexer (DeepSeek-V3.2's reference model.py builds it
    from plain, replicated Linear layers so every rank picks the same top-k keys)."""
    if tp == 1:
        return attn
    return dict(attn, heads=attn["heads"] // tp, kv_heads=_kv_heads_per_rank(attn["kv_heads"], tp))


def mlp_on_rank(mlp, *, tp, etp):
    """The share of one MLP block that one rank holds, as an MLP dict: a dense MLP and the shared
    experts split their width over tp (Megatron column-parallel input matrices, row-parallel output
    matrix, its bias replicated), each routed expert its width over etp; the router stays whole.
    The routed experts themselves are split over ep by layer_params_per_rank."""
    if mlp["kind"] == "dense":
        return mlp if tp == 1 else dict(mlp, width=mlp["width"] // tp)
    return dict(mlp, width=mlp["width"] // etp, shared_width=mlp["shared_width"] // tp)


# ======== llmcalc/serve/cache.py ==================================================================
# What each layer keeps per sequence on one tensor-parallel rank while serving: the KV cache (and a
# lightning indexer's keys) by layer kind, and the constant state of linear-attention, state-space
# and convolution layers, as transformers 5's cache classes hold them. The one formula both
# calc_transformer_mem.py --infer (serve/footprint.py) and calc_inference_latency.py
# (serve/memory.py) read. Reference: Pope et al. 2022, "Efficiently Scaling Transformer Inference"
# (the KV cache); tests/fixtures/hf_cache_bytes.json and hf_state_bytes.json (transformers' caches
# measured).

def layer_cache_bytes_per_token(layer, *, tp, kv_bytes, mla_cache="latent"):
    """{"kv", "indexer"} bytes one token of one sequence takes in one layer's cache on one tp rank:
    the block's cache_elements_per_token on the rank's share of each attention block
    (attention_on_rank): K and V at kv/tp heads, one replicated head when kv < tp; MLA's latent
    (r_kv + d_rope, DeepSeek-V2 sec. 2.1.3) whole on every rank, or with mla_cache="expanded" a/tp
    heads of K and V as transformers' cache holds them; a lightning indexer's key (d_I) whole on
    every rank; nothing for a layer that reuses another layer's cache."""
    out = {"kv": 0, "indexer": 0}
    for attn in layer["attention"]:
        n = cache_elements_per_token(attention_on_rank(attn, tp=tp), mla_cache=mla_cache)
        out["kv"] += n["kv"] * kv_bytes
        out["indexer"] += n["indexer"] * kv_bytes
    return out


def layer_kv_cache_bytes(layer, *, tp, kv_bytes, mla_cache, batch, context):
    """{"kv", "indexer"} bytes one layer's cache holds on one tp rank for `batch` sequences of
    `context` tokens: per attention block, bytes per token (layer_cache_bytes_per_token) x the
    block's cached_tokens -- min(context, window) on a sliding layer (Mistral 7B sec. 2's rolling
    buffer; transformers keeps window - 1 between steps, so a decode step peaks at the window),
    every token on full and chunked layers (transformers' cache for chunked layers keeps them all),
    none on a layer that reuses another layer's cache; a DeepSeek-V4 layer its window plus its
    compressor's entries and open window (compressed_cache_elements)."""
    out = {"kv": 0, "indexer": 0}
    for attn in layer["attention"]:
        n = cache_elements_per_token(attention_on_rank(attn, tp=tp), mla_cache=mla_cache)
        t = batch * cached_tokens(attn, context=context)
        c = compressed_cache_elements(attn, context=context)  # DeepSeek-V4: one shared head, whole on every rank
        out["kv"] += n["kv"] * kv_bytes * t + batch * c["kv"] * kv_bytes
        out["indexer"] += n["indexer"] * kv_bytes * t + batch * c["indexer"] * kv_bytes
    return out


def layer_state_bytes(layer, *, tp, conv_bytes, state_bytes, batch):
    """{"conv", "recurrent"} bytes one layer's linear mixers hold on one tp rank for `batch`
    sequences, whatever their length: state_elements on the rank's share of the heads
    (attention_on_rank), the conv window at conv_bytes (the model's dtype in transformers' cache)
    and the recurrent state at state_bytes (fp32 in transformers' cache and flash-linear-attention;
    tests/fixtures/hf_cache_bytes.json). Softmax attention layers: none, except the convolution
    windows Inkling and ZAYA keep beside their K/V (state_elements)."""
    out = {"conv": 0, "recurrent": 0}
    for attn in layer["attention"]:
        n = state_elements(attention_on_rank(attn, tp=tp))
        out["conv"] += batch * n["conv"] * conv_bytes
        out["recurrent"] += batch * n["recurrent"] * state_bytes
    return out


# ======== llmcalc/serve/memory.py =================================================================
# Serving memory per GPU: the weights and the KV cache or state one rank holds, and the KV pool.

def kv_pool_capacity(spec, hw, *, tp, pp, context, w_bytes, kv_bits, a_bits, state_bits, dp=1):
    """Requests whose cache fits in the KV pool at `context` tokens each: (pool bytes, bytes per
    request, requests). The pool is the GPU memory the stack lets the engine use
    (hw["memory_utilization"]: vLLM's gpu_memory_utilization) less the weights on the most-loaded
    rank; the count is vLLM's own "maximum concurrency" figure (pool / one request at full
    length); with dp data-parallel attention groups each holds its own requests, dp pools in all.
    A stack whose fraction is of the memory left free after the weights (hw["pool_of_free"]:
    TensorRT-LLM's free_gpu_memory_fraction, which KVCacheManager::calculateMaxNumBlocks applies to
    cudaMemGetInfo's free bytes once the model is loaded) gets that share of the rest instead.
    Activation workspace and CUDA-graph memory are not subtracted (stated)."""
    mem, util = hw["gpu_memory_bytes"], hw["memory_utilization"]
    pool = (mem - w_bytes) * util if hw.get("pool_of_free") else mem * util - w_bytes
    one = cache_bytes_per_gpu(spec, tp=tp, pp=pp, batch=1, context=context, kv_bits=kv_bits,
                              a_bits=a_bits, state_bits=state_bits)
    per = one["kv"] + one["indexer"] + one["state"]
    return pool, per, dp * (int(pool // per) if per > 0 and pool > 0 else (10 ** 9 if pool > 0 else 0))


def kv_pool_tokens(*, pool_bytes, bytes_per_request, context, dp=1):
    """The KV pool in tokens, as a per-request simulation counts it: dp pools of pool_bytes, each
    token taking bytes_per_request / context (kv_pool_capacity's per-request cache at `context`
    tokens, spread evenly: a sliding window's or a linear mixer's constant cache is averaged over
    the context it was sized at). No per-token cache (a model without one): unbounded, 1e15."""
    return dp * pool_bytes * context / bytes_per_request if bytes_per_request > 0 else 1e15


def layer_weight_bytes(layer, *, h, norm, tp, w_bits, e_bits=None, ep=1, etp=None):
    """Weight bytes of one layer on one TP rank, with the memory script's split (attention_on_rank,
    mlp_on_rank with each routed expert's width over tp; Shoeybi et al. 2019 sec. 3): the rank's
    matrices at w_bits, its routed experts at e_bits (a checkpoint that stores them narrower,
    gpt-oss's MXFP4), and what stays whole on every rank and unquantized (norms, routers, other
    per-layer weights) at >= 16 bits. Expert parallelism: ceil(E / ep) routed experts per rank
    (the slots of an uneven split hold redundant copies, as SGLang's and DeepSeek's EPLB place
    them), each split over etp ranks (default tp)."""
    share = {"attention": tuple(attention_on_rank(x, tp=tp) for x in layer["attention"]),
             "mlp": tuple(mlp_on_rank(m, tp=tp, etp=etp or tp) for m in layer["mlp"]),
             "norms": layer["norms"], "extra_params": layer["extra_params"]}
    p = layer_params(share, h=h, norm=norm)
    small = p["norms"] + p["router"] + p["extra"]
    wb, eb = w_bits / 8, (w_bits if e_bits is None else e_bits) / 8
    share_e = max((math.ceil(m["num_experts"] / ep) / m["num_experts"] for m in layer["mlp"]
                   if m["kind"] != "dense"), default=1.0)
    return (p["total"] - p["routed_experts"] - small) * wb + p["routed_experts"] * share_e * eb + small * max(wb, 2)


def _stage_kind_counts(spec, pp):
    """Per pipeline stage, how many layers of each kind it holds: [{id(layer): count}]. Stages take
    ceil(L/pp) consecutive layers each until the layers run out (the last ones may hold fewer or
    none); the most-loaded stage, which sets the pace, equals vLLM's get_pp_indices split."""
    if pp == 1:
        return [{id(layer): cnt for layer, cnt, _ in layer_groups(spec)}]
    layers = spec["layers"]
    q = math.ceil(len(layers) / pp)
    out = []
    for st in range(pp):
        counts = {}
        for layer in layers[st * q:(st + 1) * q]:
            counts[id(layer)] = counts.get(id(layer), 0) + 1
        out.append(counts)
    return out


def weight_bytes_per_gpu(spec, *, tp, pp, w_bits, e_bits=None, ep=1, etp=None):
    """Weight bytes on the most-loaded rank: per pipeline stage its layers (layer_weight_bytes per
    kind), the first stage the vocab-parallel token embedding (/tp) with any per-layer embedding
    table (/tp), the position table, embedding projections and norm and other model-level weights
    (whole), the last stage the final norm and the head (/tp; with tied embeddings and pp > 1 a
    second copy of the embedding), as the memory script places them; embeddings and head at >= 16
    bits."""
    h, nm, V, p = spec["hidden_size"], spec["norm"], spec["vocab_size"], spec["word_embed_proj_dim"]
    per_kind = {id(layer): layer_weight_bytes(layer, h=h, norm=nm, tp=tp, w_bits=w_bits, e_bits=e_bits,
                                              ep=ep, etp=etp)
                for layer, _, _ in layer_groups(spec)}
    hb = max(w_bits, 16) / 8
    emb = (V * p // tp + spec["position_embedding_rows"] * h + (2 * p * h if p != h else 0)
           + (norm_params(width=h, norm=nm) if spec["embedding_norm"] else 0)
           + spec["per_layer_embedding_params"] // tp + sum(spec["other_params"].values())) * hb
    head = ((norm_params(width=h, norm=nm) if spec["final_norm"] else 0)
            + (V * p // tp if not spec["tied_embeddings"] or pp > 1 else 0)) * hb
    stages = _stage_kind_counts(spec, pp)
    return max(sum(c * per_kind[k] for k, c in st.items()) + (emb if i == 0 else 0) + (head if i == len(stages) - 1 else 0)
               for i, st in enumerate(stages))


def layer_cache_bytes(layer, *, tp, batch, context, kv_bits, a_bits=16, state_bits=32):
    """{"kv", "indexer", "state"} cache bytes one layer holds on one TP rank for `batch` sequences at
    `context` tokens, at the serving flags' bit widths: cache.layer_kv_cache_bytes (the KV cache
    and indexer keys, MLA as its latent, as vLLM and SGLang keep it) and cache.layer_state_bytes
    (a linear mixer's conv window at a_bits and recurrent state at state_bits, and the convolution
    windows some attention layers keep beside their K/V) -- the bytes calc_transformer_mem.py
    --infer reports."""
    kv = layer_kv_cache_bytes(layer, tp=tp, kv_bytes=kv_bits / 8, mla_cache="latent", batch=batch, context=context)
    st = layer_state_bytes(layer, tp=tp, conv_bytes=a_bits / 8, state_bytes=state_bits / 8, batch=batch)
    return {"kv": float(kv["kv"]), "indexer": float(kv["indexer"]), "state": float(st["conv"] + st["recurrent"])}


def cache_bytes_per_gpu(spec, *, tp, pp, batch, context, kv_bits, a_bits=16, state_bits=32):
    """{"kv", "indexer", "state"} cache bytes on the most-loaded pipeline stage (the one whose
    layers hold the most; stages of ceil(L/pp) consecutive layers)."""
    per_kind = {id(layer): layer_cache_bytes(layer, tp=tp, batch=batch, context=context, kv_bits=kv_bits,
                                             a_bits=a_bits, state_bits=state_bits)
                for layer, _, _ in layer_groups(spec)}
    stages = [{part: sum(c * per_kind[k][part] for k, c in st.items()) for part in ("kv", "indexer", "state")}
              for st in _stage_kind_counts(spec, pp)]
    return max(stages, key=lambda st: st["kv"] + st["indexer"] + st["state"])


# ======== llmcalc/comm/collectives.py =============================================================
# Collective times over nodes as nccl-tests reports them: ring, tree, NVLS and two-level
# algorithms under NCCL's LL, LL128 and Simple protocols (alpha-beta per hop), with the constants
# each was set from.

# ---------------------------------------------------------------------------------------------
# Constants. Latencies in seconds; efficiencies are achieved / line-rate bandwidth.
# ---------------------------------------------------------------------------------------------

# Fixed cost of one collective call (kernel launch, synchronisation), before any hop.
# 8.9 us = 10.14 us, the floor of all_reduce_perf on 2 x A100-SXM4-40GB (32-64 B rows, NVIDIA/nccl
# issue #583), minus its 2 NVLink hops at ALPHA_HOP_S["ll"]["intra"].
ALPHA_LAUNCH_S = 8.9e-6

# Per-hop latency by protocol and link, from NCCL's own tuning model (src/graph/tuning.cc,
# hwLat, NCCL 2.18-2.19): Ring LL 0.6 us (NVLink) / 2.7 us (network); Ring Simple 3.4 / 14 us.
# The tree reuses the ring's numbers (NCCL's tree LL: 0.6 / 5.0 us).
ALPHA_HOP_S = {
    "ll": {"intra": 0.6e-6, "inter": 2.7e-6},
    "simple": {"intra": 3.4e-6, "inter": 14.0e-6},
}

# NVLS all-reduce latency on top of ALPHA_LAUNCH_S: NCCL's NVLS latency, 23 us (tuning.cc hwLat
# NVLS/NVLink), less the 6.6 us ring base latency it has no separate term for.
ALPHA_NVLS_S = 16.4e-6

# Fraction of the link the LL protocol reaches: 4 B flag per 4 B of data, and NCCL models it at
# 1/4 of the bus bandwidth for all-reduce (tuning.cc, "busBw * 1.0/4.0").
LL_BANDWIDTH_FRACTION = 0.25

# Ring/tree efficiency on the scale-up links (NVLink). 0.80 = the middle of two measurements:
# A100, 235 of 300 GB/s = 0.78 (NCCL tuning.cc caps sm80 bus bandwidth at 235 GB/s); H100, 370 of
# 450 GB/s = 0.82 (S. Jeaugey, NVIDIA/nccl-tests issue #212: "~20% protocol overhead ... 370GB/s").
SCALE_UP_EFFICIENCY = 0.80

# PCIe cards without NVLink (hardware.py's pcie_peer_bandwidth_bytes_per_s: L40S, L4, A10, A10G)
# reach their peers over the slot. NCCL's ring there: 21 GB/s bus bandwidth on 8 x A100 80GB PCIe
# (Gen4 x16, dual EPYC 7543, NCCL 2.9.9; NVIDIA/nccl issue #841), 0.667 of the 31.5 GB/s line
# rate (a 4-GPU Gen4 box, tinygrad/open-gpu-kernel-modules #36: 25.8 GB/s, 0.82). Servers of such
# cards hold 8 (AWS g5/g6/g6e.48xlarge).
PCIE_PEER_EFFICIENCY = 21.0 / 31.5
PCIE_SERVER_GPUS = 8

# NVLS all-reduce efficiency: algbw ~275 GB/s on 8 x H100 with NVLink SHARP (busbw ~480), of the
# 450 GB/s line rate (S. Jeaugey, NVIDIA/nccl-tests issue #212) -> 275/450 = 0.61.
NVLS_EFFICIENCY = 0.61

# Scale-out (InfiniBand/RoCE) efficiency: 2 nodes of 8 x A100 with 8 x 200 Gb/s HDR per node reach
# busbw 187.7 GB/s at 8 GiB, bounded by the 8 x 25 GB/s NICs -> 187.7/200 = 0.94 (Azure NDmV4
# all_reduce_perf; a calibration point, listed as such in VALIDATION.md).
SCALE_OUT_EFFICIENCY = 0.94

# ---------------------------------------------------------------------------------------------
# Formulas (pure: numbers in, numbers out)
# ---------------------------------------------------------------------------------------------

def bus_bandwidth_factor(*, op, n):
    """nccl-tests busbw / algbw (doc/PERFORMANCE.md): all_reduce 2(n-1)/n; all_gather,
    reduce_scatter, alltoall (n-1)/n; broadcast, reduce, sendrecv 1."""
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def ring_link_bytes_per_s(*, intra_bytes_per_s, inter_bytes_per_s, gpus_per_node, num_nodes):
    """Per-rank bandwidth of NCCL-style rings (effective, after efficiency). Inside a node: the
    scale-up link. Across nodes the rank order is node-contiguous and there is one ring per NIC, so
    every ring crosses each node boundary once and the G NICs of a node carry all rings:
    min(scale-up, G x scale-out per GPU) (Patarasuk & Yuan 2009 for the ring volume)."""
    if num_nodes <= 1:
        return intra_bytes_per_s
    return min(intra_bytes_per_s, gpus_per_node * inter_bytes_per_s)


def group_intra_bytes_per_s(net, *, gpus_in_node, op):
    """Scale-up bandwidth one rank can drive in a collective over `gpus_in_node` GPUs of its node.
    A switched fabric (NVSwitch) gives every rank its whole bandwidth to any peer; a full mesh
    (AMD xGMI, Gaudi RoCE) splits it over D-1 point-to-point links, so a group of G uses G-1 of
    them, (G-1)/(D-1) of the aggregate, and a send/recv one link, 1/(D-1) (AMD MI300X data sheet:
    7 links x 64 GB/s per direction; RCCL runs one ring per link)."""
    D = net.get("mesh_domain")
    if not D or D < 2:
        return net["intra_bytes_per_s"]
    peers = 1 if op == "sendrecv" else max(1, min(gpus_in_node, D) - 1)
    return net["intra_bytes_per_s"] * peers / (D - 1)


def _protocol(net, proto):
    """(bandwidth fraction, intra hop s, inter hop s) of a protocol."""
    frac = LL_BANDWIDTH_FRACTION if proto == "ll" else 1.0
    return frac, net["hop_s"][proto]["intra"], net["hop_s"][proto]["inter"]


def ring_time_s(*, op, size_bytes, n, gpus_per_node, net, proto):
    """Alpha-beta time of the ring (or chain / direct) algorithm. Returns (latency_s, bandwidth_s).
    all_reduce: 2(n-1) steps moving 2(n-1)/n x size per rank; all_gather/reduce_scatter: n-1 steps,
    (n-1)/n x size (Thakur et al. 2005, sec. 4); broadcast/reduce: pipelined chain, size per link;
    alltoall: direct, each rank sends (G-1)/n of its buffer over NVLink and (n-G)/n over the network
    (summed: no overlap assumed); sendrecv: size over one link. Latency: launch + one hop per step,
    the node-boundary hops at network latency (NCCL tuning.cc's ring latency)."""
    S, G = size_bytes, gpus_per_node
    N = n // G
    frac, hop_i, hop_o = _protocol(net, proto)
    bw_i = group_intra_bytes_per_s(net, gpus_in_node=G, op=op) * frac
    bw_o = net["inter_bytes_per_s"] * frac
    ring_bw = ring_link_bytes_per_s(intra_bytes_per_s=bw_i, inter_bytes_per_s=bw_o,
                                    gpus_per_node=G, num_nodes=N)
    if op == "all_reduce":
        steps, inter, wire = 2 * (n - 1), (2 * N if N > 1 else 0), 2 * (n - 1) / n * S
    elif op in ("all_gather", "reduce_scatter"):
        steps, inter, wire = n - 1, (N if N > 1 else 0), (n - 1) / n * S
    elif op in ("broadcast", "reduce"):
        steps, inter, wire = n - 1, N - 1, S
    elif op == "alltoall":
        lat = net["launch_s"] + (hop_o if N > 1 else hop_i)
        return lat, (G - 1) / n * S / bw_i + ((n - G) / n * S / bw_o if N > 1 else 0.0)
    elif op == "sendrecv":
        return net["launch_s"] + (hop_o if N > 1 else hop_i), S / (bw_o if N > 1 else bw_i)
    else:
        raise ValueError(f"unknown op {op!r}")
    inter = min(inter, steps)
    return net["launch_s"] + (steps - inter) * hop_i + inter * hop_o, wire / ring_bw


def tree_time_s(*, size_bytes, n, gpus_per_node, net, proto):
    """All-reduce on NCCL's tree: a chain inside each node and a (double) binary tree across nodes,
    reduce up then broadcast down, pipelined; every rank moves 2 x size (Sanders et al. 2009,
    two-tree). Latency 2((G-1) intra hops + ceil(log2 N) network hops) (NCCL tuning.cc)."""
    G = gpus_per_node
    N = n // G
    frac, hop_i, hop_o = _protocol(net, proto)
    bw = ring_link_bytes_per_s(
        intra_bytes_per_s=group_intra_bytes_per_s(net, gpus_in_node=G, op="all_reduce") * frac,
        inter_bytes_per_s=net["inter_bytes_per_s"] * frac, gpus_per_node=G, num_nodes=N)
    depth = math.ceil(math.log2(N)) if N > 1 else 0
    return net["launch_s"] + 2 * ((G - 1) * hop_i + depth * hop_o), 2 * size_bytes / bw


def nvls_time_s(*, size_bytes, net):
    """All-reduce with in-switch reduction (NVLink SHARP): each GPU pushes its buffer into the
    switch, which reduces it, and pulls the result back: size once per direction per GPU, at the
    NVLS efficiency; latency NCCL's NVLS latency (tuning.cc). One scale-up domain only."""
    return net["launch_s"] + net["nvls_s"], size_bytes / net["nvls_bytes_per_s"]


def hierarchical_time_s(*, op, size_bytes, n, gpus_per_node, net, proto, use_nvls):
    """Two-level algorithm for a group spanning N nodes of G GPUs: inside the node reduce-scatter
    (or NVLS), across nodes a ring over the 1/G shard on each GPU's own NIC, inside the node
    all-gather (all_gather/reduce_scatter: one intra and one inter phase). Chunks stream through
    both levels, so bandwidth term = max(intra, inter) and latencies add (NCCL NVLSTree/CollNet
    style). Returns (latency_s, bandwidth_s)."""
    S, G = size_bytes, gpus_per_node
    N = n // G
    frac, hop_i, hop_o = _protocol(net, proto)
    bw_i = group_intra_bytes_per_s(net, gpus_in_node=G, op=op) * frac
    bw_o = net["inter_bytes_per_s"] * frac
    if op == "all_reduce":
        if use_nvls:
            lat_i, t_i = net["nvls_s"], S / net["nvls_bytes_per_s"]
        else:
            lat_i, t_i = 2 * (G - 1) * hop_i, 2 * (G - 1) / G * S / bw_i
        lat_o, t_o = 2 * (N - 1) * hop_o, 2 * (N - 1) / N * (S / G) / bw_o
    elif op in ("all_gather", "reduce_scatter"):
        lat_i, t_i = (G - 1) * hop_i, (G - 1) / G * S / bw_i
        lat_o, t_o = (N - 1) * hop_o, (N - 1) / N * (S / G) / bw_o
    else:
        raise ValueError(f"no hierarchical algorithm for {op}")
    return net["launch_s"] + lat_i + lat_o, max(t_i, t_o)


def candidate_algorithms(*, op, n, gpus_per_node, in_network_reduction):
    """The algorithms `auto` chooses among: NCCL's set for the case (ring; tree for all_reduce;
    NVLS inside an NVLS-capable node; NVLS-based hierarchical across such nodes), as NCCL's
    src/graph/tuning.cc enables them (NCCL 2.18+, NVLS from 2.17)."""
    N = n // gpus_per_node
    algos = ["ring"]
    if op == "all_reduce":
        algos.append("tree")
        if in_network_reduction and gpus_per_node > 1:
            algos.append("nvls" if N == 1 else "hierarchical")
    return algos


def collective_time_s(*, op, size_bytes, n, gpus_per_node, net, algo="auto"):
    """Time of one collective of `size_bytes` over n GPUs placed G = gpus_per_node per node:
    the fastest (algorithm, protocol) among those allowed. Returns a dict with time_s, algorithm,
    protocol, latency_s, bandwidth_time_s, regime and the time of every algorithm tried."""
    G = min(gpus_per_node, n)
    algos = (candidate_algorithms(op=op, n=n, gpus_per_node=G,
                                  in_network_reduction=net["in_network_reduction"])
             if algo == "auto" else [algo])
    results = {}
    for a in algos:
        best = None
        for proto in ("ll", "simple"):
            if a == "ring":
                lat, bwt = ring_time_s(op=op, size_bytes=size_bytes, n=n, gpus_per_node=G, net=net,
                                       proto=proto)
            elif a == "tree":
                lat, bwt = tree_time_s(size_bytes=size_bytes, n=n, gpus_per_node=G, net=net,
                                       proto=proto)
            elif a == "nvls":
                if proto != "simple":
                    continue
                lat, bwt = nvls_time_s(size_bytes=size_bytes, net=net)
            else:
                use_nvls = net["in_network_reduction"] and op == "all_reduce"
                if use_nvls and proto != "simple":
                    continue
                lat, bwt = hierarchical_time_s(op=op, size_bytes=size_bytes, n=n, gpus_per_node=G,
                                               net=net, proto=proto, use_nvls=use_nvls)
            if best is None or lat + bwt < best["time_s"]:
                best = {"algorithm": a, "protocol": proto, "time_s": lat + bwt, "latency_s": lat,
                        "bandwidth_time_s": bwt}
        results[a] = best
    choice = min(results.values(), key=lambda r: r["time_s"])
    t = choice["time_s"]
    algbw = size_bytes / t
    return dict(choice, algbw_bytes_per_s=algbw,
                busbw_bytes_per_s=algbw * bus_bandwidth_factor(op=op, n=n),
                regime="latency-bound" if choice["latency_s"] >= choice["bandwidth_time_s"]
                else "bandwidth-bound",
                algorithm_times_s={a: r["time_s"] for a, r in results.items()})


def group_placement(*, size, stride, gpus_per_node):
    """(G, N) for a group of `size` ranks spaced `stride` apart in a node-contiguous rank order:
    G of its ranks share a node, N nodes. Rank order tp, cp, ep/dp, pp, fastest first, as
    Megatron-LM's parallel_state builds its groups (Narayanan et al. 2021, sec. 3.3: tp inside a
    node)."""
    per_node = gpus_per_node // stride if stride < gpus_per_node else 1
    per_node = math.gcd(size, max(1, per_node))
    return per_node, size // per_node


def build_net(*, intra_bytes_per_s, inter_bytes_per_s, in_network_reduction, intra_efficiency,
              inter_efficiency, nvls_efficiency, launch_s, intra_hop_ll_s, inter_hop_ll_s,
              mesh_domain=None):
    """Effective bandwidths (line rate x efficiency) and latencies used by the formulas. Simple
    protocol hops keep NCCL's Simple/LL ratios (3.4/0.6 NVLink, 14/2.7 network)."""
    r_i = ALPHA_HOP_S["simple"]["intra"] / ALPHA_HOP_S["ll"]["intra"]
    r_o = ALPHA_HOP_S["simple"]["inter"] / ALPHA_HOP_S["ll"]["inter"]
    return {"intra_bytes_per_s": intra_bytes_per_s * intra_efficiency,
            "inter_bytes_per_s": (inter_bytes_per_s or 0.0) * inter_efficiency,
            "nvls_bytes_per_s": intra_bytes_per_s * nvls_efficiency,
            "in_network_reduction": bool(in_network_reduction), "mesh_domain": mesh_domain,
            "launch_s": launch_s, "nvls_s": ALPHA_NVLS_S,
            "hop_s": {"ll": {"intra": intra_hop_ll_s, "inter": inter_hop_ll_s},
                      "simple": {"intra": intra_hop_ll_s * r_i, "inter": inter_hop_ll_s * r_o}}}


# ======== llmcalc/serve/launch.py =================================================================
# The command that starts one replica of a capacity plan's winner on its serving stack: each
# stack's record (stacks.SERVING_STACKS) names one of these functions. Each takes a LaunchPlan and
# returns the command's pieces (joined with line continuations by launch_text); a stack with no
# server command says so in lines starting '#', with what to run instead.
#
# Flag spellings, as each engine's own documentation gives them:
#   vLLM: `vllm serve` (docs.vllm.ai, serving/engine_args: --tensor-parallel-size,
#     --data-parallel-size, --enable-expert-parallel, --gpu-memory-utilization, --max-num-seqs,
#     --max-num-batched-tokens, --kv-cache-dtype, --[no-]enable-prefix-caching, --speculative-config).
#   SGLang: `python -m sglang.launch_server` (docs.sglang.ai, server arguments: --model-path, --tp,
#     --dp, --enable-dp-attention, --ep-size, --mem-fraction-static, --chunked-prefill-size,
#     --max-running-requests, --kv-cache-dtype, --disable-radix-cache, --speculative-*).
#   TensorRT-LLM: `trtllm-serve MODEL` (nvidia.github.io/TensorRT-LLM, commands/trtllm-serve:
#     --backend pytorch|tensorrt, the PyTorch backend the default since 1.0; --tp_size, --ep_size,
#     --kv_cache_free_gpu_memory_fraction, --max_batch_size, --max_num_tokens,
#     --extra_llm_api_options FILE.yaml).
#   Triton's tensorrtllm_backend: an engine from `trtllm-build --checkpoint_dir --output_dir
#     --max_batch_size --max_num_tokens`, the model repository's config.pbtxt filled by
#     tools/fill_template.py (kv_cache_free_gpu_mem_fraction, triton_max_batch_size,
#     batching_strategy:inflight_fused_batching), then `python3 scripts/launch_triton_server.py
#     --world_size N --model_repo DIR` (tensorrtllm_backend README).
#   FasterTransformer: no server; its C++ example runs `mpirun -n <tp x pp>
#     ./bin/multi_gpu_gpt_example` with tensor_para_size and pipeline_para_size in gpt_config.ini
#     (docs/gpt_guide.md, "Run with tensor parallelism"); behind Triton, fastertransformer_backend's
#     config.pbtxt takes the same two parameters and `tritonserver --model-repository DIR` serves it
#     (fastertransformer_backend docs/gpt_guide.md).

class LaunchPlan(Record):
    """What a launch command carries: the winner's layout, its pool and its scheduler caps."""

    __slots__ = ()  # fields are keys: hw["x"] = v (an attribute write is refused)

    FIELDS = {
        "model": "the model's path or hub id as given (--hf_model_name_or_path), or MODEL",
        "tp": "tensor-parallel size of one attention group", "pp": "pipeline stages",
        "dp": "data-parallel attention groups in the replica", "ep": "expert-parallel size",
        "replicas": "replicas behind the load balancer",
        "kv_bits": "KV-cache bits (8: an fp8 cache)",
        "memory_utilization": "the stack's memory share (of the GPU, or of what the weights leave)",
        "max_num_seqs": "running-request cap per data-parallel engine; None: the stack's own",
        "max_num_tokens": "tokens per engine step; None: the stack's own",
        "prefix_caching": "whether requests share cached prefixes",
        "speculative": "the speculative-decoding setup ({k, method, ...}) or None",
    }
    REQUIRED = tuple(FIELDS)


def launch_text(lines, replicas):
    """The command's pieces joined by line continuations, and the replicas it stands for."""
    line = " \\\n    ".join(lines)
    return line + (f"\n# x {replicas} replicas behind a load balancer" if replicas > 1 else "")


def vllm_command(p):
    """`vllm serve`: its engine arguments for the layout, the pool and the scheduler caps."""
    cmd = [f"vllm serve {p.model}", f"--tensor-parallel-size {p.tp}"]
    if p.dp > 1:
        cmd.append(f"--data-parallel-size {p.dp}")
    if p.ep > 1:
        cmd.append("--enable-expert-parallel")
    cmd += [f"--gpu-memory-utilization {p.memory_utilization:g}"]
    if p.max_num_seqs:
        cmd.append(f"--max-num-seqs {p.max_num_seqs}")
    if p.max_num_tokens:
        cmd.append(f"--max-num-batched-tokens {p.max_num_tokens}")
    if p.kv_bits == 8:
        cmd.append("--kv-cache-dtype fp8")
    cmd.append("--enable-prefix-caching" if p.prefix_caching else "--no-enable-prefix-caching")
    sp = p.speculative
    if sp:
        method = {"mtp": "deepseek_mtp", "eagle": "eagle3", "ngram": "ngram",
                  "draft": "draft_model"}[sp["method"]]
        cmd.append(f"--speculative-config '{{\"method\": \"{method}\", \"num_speculative_tokens\": "
                   f"{sp['k']}}}'")
    return cmd


def sglang_command(p):
    """SGLang's launch_server: tp over every GPU of the replica, dp attention inside it."""
    cmd = [f"python -m sglang.launch_server --model-path {p.model}", f"--tp {p.tp * p.dp}"]
    if p.dp > 1:
        cmd += [f"--dp {p.dp}", "--enable-dp-attention"]
    if p.ep > 1:
        cmd.append(f"--ep-size {p.ep}")
    cmd += [f"--mem-fraction-static {p.memory_utilization:g}"]
    if p.max_num_tokens:
        cmd.append(f"--chunked-prefill-size {p.max_num_tokens}")
    if p.max_num_seqs:
        cmd.append(f"--max-running-requests {p.max_num_seqs}")
    if p.kv_bits == 8:
        cmd.append("--kv-cache-dtype fp8_e5m2")
    if not p.prefix_caching:
        cmd.append("--disable-radix-cache")
    sp = p.speculative
    if sp:
        algo = ("EAGLE" if sp["method"] in ("mtp", "eagle") else "NGRAM" if sp["method"] == "ngram"
                else "STANDALONE")
        cmd.append(f"--speculative-algorithm {algo} "
                   f"--speculative-num-steps {sp['k']} --speculative-eagle-topk 1 "
                   f"--speculative-num-draft-tokens {sp['k'] + 1}")
    return cmd


def _trtllm_serve(p, backend):
    """trtllm-serve on one backend: tp over every GPU of the replica, attention dp and a draft
    through the LLM API's extra options file."""
    cmd = [f"trtllm-serve {p.model}", f"--backend {backend}", f"--tp_size {p.tp * p.dp}"]
    if p.ep > 1:
        cmd.append(f"--ep_size {p.ep}")
    cmd += [f"--kv_cache_free_gpu_memory_fraction {p.memory_utilization:g}"]
    if p.max_num_seqs:
        cmd.append(f"--max_batch_size {p.max_num_seqs}")
    if p.max_num_tokens:
        cmd.append(f"--max_num_tokens {p.max_num_tokens}")
    sp = p.speculative
    if p.dp > 1 or sp:
        cmd.append("--extra_llm_api_options extra.yaml  # " + "; ".join(
            (["enable_attention_dp: true"] if p.dp > 1 else [])
            + ([f"speculative_config: {{decoding_type: {sp['method'].upper()}, "
                f"num_nextn_predict_layers: {sp['k']}}}"] if sp else [])))
    return cmd


def trtllm_engine_command(p):
    """TensorRT-LLM's TensorRT-engine path (the tensorrt-llm preset): --backend tensorrt."""
    return _trtllm_serve(p, "tensorrt")


def trtllm_pytorch_command(p):
    """TensorRT-LLM's PyTorch backend: trtllm-serve --backend pytorch (its default since 1.0)."""
    return _trtllm_serve(p, "pytorch")


def trtllm_pre_xqa_command(p):
    """TensorRT-LLM v0.5-v0.7 had no server command of its own (trtllm-serve came later): what
    served it was an engine built for the layout behind Triton's tensorrtllm_backend."""
    return ["# TensorRT-LLM v0.5-v0.7 (before XQA) has no server command: build the engine "
            f"(examples/<model>/build.py, --world_size {p.tp * p.dp}, --max_batch_size "
            f"{p.max_num_seqs or 'N'}) and serve it with Triton's tensorrtllm_backend "
            "(its v0.5-v0.7 release); a current TensorRT-LLM runs with XQA: "
            "--serving-stack tensorrt-llm"]


def trtllm_triton_command(p):
    """Triton's tensorrtllm_backend: build the engine, fill the model repository, launch Triton."""
    n = p.tp * p.dp
    build = [f"trtllm-build --checkpoint_dir ckpt_tp{n} --output_dir engine_tp{n}"]
    if p.max_num_seqs:
        build.append(f"--max_batch_size {p.max_num_seqs}")
    if p.max_num_tokens:
        build.append(f"--max_num_tokens {p.max_num_tokens}")
    fill = ("python3 tools/fill_template.py -i triton_model_repo/tensorrt_llm/config.pbtxt "
            f"engine_dir:engine_tp{n},kv_cache_free_gpu_mem_fraction:{p.memory_utilization:g},"
            "batching_strategy:inflight_fused_batching"
            + (f",triton_max_batch_size:{p.max_num_seqs}" if p.max_num_seqs else "")
            + (",enable_kv_cache_reuse:true" if p.prefix_caching else ""))
    return [" \\\n    ".join(build) + "\n" + fill + "\n"
            + f"python3 scripts/launch_triton_server.py --world_size {n} --model_repo "
              "triton_model_repo"]


def fastertransformer_command(p):
    """FasterTransformer is a library: its C++ example runs a static batch under MPI."""
    return ["# FasterTransformer has no server: its example runs a static batch, "
            f"tensor_para_size={p.tp} and pipeline_para_size={p.pp} in gpt_config.ini\n"
            f"mpirun -n {p.tp * p.pp} ./bin/multi_gpu_gpt_example"]


def fastertransformer_triton_command(p):
    """FasterTransformer behind Triton (fastertransformer_backend): the layout in config.pbtxt."""
    return [f"# fastertransformer_backend: config.pbtxt parameters tensor_para_size {p.tp}, "
            f"pipeline_para_size {p.pp}\n"
            "tritonserver --model-repository=triton-model-store"]


def no_server_command(p):
    """The kernels-only model is no engine: nothing launches it."""
    return ["# the kernels stack is the kernels-only model (gpt-fast-like CUDA-graph decode), no "
            f"serving engine: there is no command to launch; pick --serving-stack vllm, sglang or "
            f"tensorrt-llm for one (layout: tp {p.tp}" + (f", dp {p.dp}" if p.dp > 1 else "")
            + (f", ep {p.ep}" if p.ep > 1 else "") + ")"]


def hf_generate_command(p):
    """transformers' generate() in eager PyTorch is called from a script, not a server."""
    return ["# hf-eager is transformers' generate() in eager PyTorch: no server command; call "
            f"AutoModelForCausalLM.from_pretrained({p.model!r}).generate() from your own script"
            + (f" (tp {p.tp}: tp_plan='auto', under torchrun --nproc-per-node "
               f"{p.tp})" if p.tp > 1 else "")]


# ======== llmcalc/serve/offload.py ================================================================
# KV-cache offload to host memory (vLLM's CPU offloading and LMCache, SGLang's HiCache, Dynamo's
# KVBM): cached prefixes the GPU pool evicts move to a host tier and come back over the host link
# on a hit, instead of being computed again. The link is the GPU's own in hardware.py's table
# (host_link_bandwidth_bytes_per_s: PCIe 3.0/4.0/5.0 x16, or NVLink-C2C on Grace superchips, per
# direction), the one field training's ZeRO-Offload copies read too; KV_RELOAD_EFFICIENCY of its line
# rate is reached.

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


# ======== llmcalc/serve/stacks.py =================================================================
# Serving stacks (vLLM, SGLang, TensorRT-LLM and its PyTorch backend, Triton, FasterTransformer,
# plain transformers, the kernels-only model), one ServingStack record each: the constants they set,
# their scheduler defaults and their launch command (launch.py); and the hardware a serving run
# resolves to (ServingHardware: the GPU record the tool gives, the flags over it, the layout's links
# and the stack's costs). Nothing here reads a GPU's or a stack's name to decide: the GPU's facts
# are its record's fields, the stack's its record's.

# --- constants (each with its source; see the module docstring) --------------------------------
DEFAULT_COMPUTE_EFFICIENCY = 0.70  # 16-bit matmuls; mamf-finder maxima 0.80-0.87; real shapes lower
# Below 16 bits the best achievable fraction of peak is lower: Bekman's mamf-finder on H100 SXM
# gives fp8 1402.6 of 1979 (0.709) vs bf16 794.5 of 989.4 (0.803), a ratio of 0.883 (GH200: 0.927).
LOW_BIT_EFFICIENCY_RATIO = (1402.6 / 1979.0) / (794.5 / 989.4)
# FP4 falls further below its best shape than FP8 at the shapes serving runs (a step's tokens x
# weights of 4-30k): Azure's cuBLASLt table for one GB200 (Azure/AI-benchmarking-guide,
# Azure_Results/ND_GB200_v6_results.md @2a370be6) gives FP4 5177.3 TFLOP/s at 4096^3 against
# 7627.6 at 16384^3, FP8 2834.6 against 2906.9, same GPU and tool. The ratio of the two falls
# scales every FP4 matmul rate. Checked, not fitted: flashinfer PR #1979 measured NVFP4 on a B200
# at 1024x7168x4608 at 3,371 (CUDA 12) and 3,841 TFLOP/s (CUDA 13); the B200 gets 3,870 here.
FP4_SHAPE_PENALTY = (5177.3 / 7627.6) / (2834.6 / 2906.9)
# --gpu scales a measured best-shape MAMF by the same gap the 0.70 default keeps below the A100's
# (271.2 of 312 = 0.869): forward-pass GEMM shapes run below the best shape mamf-finder finds.
MAMF_SHAPE_FACTOR = DEFAULT_COMPUTE_EFFICIENCY / (271.2 / 312.0)
# A weight matmul near the ridge runs slower than both roofs: neither its math nor its loads hide
# the other completely. Its time is the p-norm (t_math^p + t_mem^p)^(1/p); p = 2.15 is the least-
# squares fit (log time) to the 28 FP8 GEMMs (dense, contiguous and masked grouped) that DeepGEMM's
# README (first release, a6d97a1, H800) measured, given this script's own H100 FP8 rates (1,130
# TFLOP/s, 2,345 GB/s): rms error 14.8% against 19.2% for the sharp max. tools/fit_roofline_corner.py
# redoes the fit. No serving row set it.
ROOFLINE_CORNER_P = 2.15
DEFAULT_MEMORY_EFFICIENCY = 0.70   # gpt-fast: 1397.31 GB/s of 2039 on A100-80GB at batch 1;
# Databricks MBU 0.55-0.60 at batch 1, TP 2-4 (TensorRT-LLM), matched within 10% (VALIDATION.md)
# A decode attention kernel streams the KV cache (long contiguous pages, no kernel-launch gaps
# inside) closer to peak than a step's weight reads and small ops, which the 0.70 above covers
# end to end. 0.93 = our own H200 graph-mode decode steps (validation/h200/results/decode.jsonl,
# Llama-3-8B shape, bf16, SDPA with the query heads packed per KV head): going from 1,024 to 4,096
# cached tokens adds 2.878 ms at batch 32 (12.9 GB more K/V read: 4.48 TB/s) and 5.695 ms at batch
# 64 (25.8 GB: 4.53 TB/s) of 4.8 TB/s. The cache reads of the attention core run at it on the
# GPUs of that measurement's chip (GH100: H100, H200, GH200, H800, H20; unless --memory-efficiency
# is given), elsewhere at the memory efficiency; no serving row set it (VALIDATION.md judges it).
# The value and the GPUs it applies to are the record's kv_stream_efficiency (accelerator.py).
DEFAULT_KERNEL_OVERHEAD_US = 4.0   # per kernel, launch-to-launch gap of small dependent kernels
# PCIe cards without NVLink reach their peers over the slot at the collectives block's
# PCIE_PEER_EFFICIENCY (nccl-tests on 8 PCIe Gen4 GPUs), in servers of PCIE_SERVER_GPUS; the
# custom all-reduce kernels need NVLink peers (vLLM turns its own off on PCIe-only GPUs beyond two).
# kernels per block (11 for an ordinary layer, as before the layer list):
ATTENTION_KERNELS = 6  # norm, qkv, rope, attention, o-proj, add
MLP_KERNELS = 5        # norm, mlp-in, act, mlp-out, add
# a MoE block adds the router's top-k, the dispatch permute and the combine (TensorRT-LLM's MoE
# runner: topkGatingSoftmax, expandInputRowsKernel, finalizeMoeRoutingKernel, kernels/
# mixtureOfExperts/moe_kernels.cu; vLLM: topk_softmax, moe_align_block_size, moe_sum)
MOE_EXTRA_KERNELS = 3
INDEXER_KERNELS = 3    # a lightning indexer's projections, its scores, the top-k selection
# a Gated DeltaNet block as vLLM's Qwen3-Next runs it: norm, in_proj_qkvz, in_proj_ba, conv,
# gating (g, beta), the delta-rule kernel, gated norm, out_proj, add; assumed for every linear
# mixer (KDA, Mamba-1/2 and short convolutions launch a similar 6-9; not measured)
LINEAR_MIXER_KERNELS = 9
# DeepSeek-V4 adds per layer its compressor's projections and pooling (2) and two hyper-connection
# mixes (2 each: the projection and one fused Sinkhorn / mix kernel), fused as a serving stack would
DSV4_EXTRA_KERNELS = 6
# All-reduce defaults: comm/collectives.py's NCCL call cost (8.9 us per call: 10.14 us
# all_reduce_perf floor on 2 x A100 less 2 hops) and scale-up efficiency (0.80: ring busbw / NVLink
# line rate, A100 235/300, H100 370/450), taken from there, not copied (named here for the presets
# and the help; a test checks both are the collectives block's own objects and calc_comm's defaults)
DEFAULT_ALLREDUCE_LATENCY_US = round(ALPHA_LAUNCH_S * 1e6, 6)
DEFAULT_ALLREDUCE_EFFICIENCY = SCALE_UP_EFFICIENCY
# The link assumed for a GPU hardware.py gives no scale-up link (read by no single-GPU cost):
# NVLink 3, per GPU per direction (600 GB/s bidirectional). Without --gpu the hardware is the
# default accelerator (accelerator.py), exactly as --gpu h100-sxm reads it.
DEFAULT_LINK_GBPS = 300.0
# --serving-stack presets: what a serving stack adds to the kernels' own time, and how it is
# launched. Every value names its source (notes in VALIDATION.md, which also lists the published
# rows each one came from; those rows are not used to judge it). Fields: ServingStack.FIELDS.
# No stack publishes its own matmul or bandwidth fraction, so every stack runs at the hardware's.
class ServingStack(Record):
    """One serving stack: what it adds to the kernels' time, its scheduler defaults and its launch
    command. A rule (token_budget, max_num_seqs) is a number, None, or a list of (bound, value)
    tried in order: a number bound matches a GPU with less memory (GiB), a text bound a GPU whose
    kernel_family it is (accelerator record), None any GPU (stack_rule)."""

    __slots__ = ()  # fields are keys: hw["x"] = v (an attribute write is refused)

    FIELDS = {
        "name": "the --serving-stack key",
        "kernel_overhead_us": "gap per kernel, us (ATTENTION_KERNELS + MLP_KERNELS per layer; no "
                              "source separates CUDA-graph replay from eager launches, so decode "
                              "and prompt steps pay the same)",
        "allreduce_us": "fixed cost per TP all-reduce call, us",
        "allreduce_gbps": "None: NCCL's ring (the calc_comm model: hops and link bandwidth); else "
                          "a custom one-shot kernel costed as allreduce_us + (n-1)/n x bytes / "
                          "this effective rate (GB/s), or NCCL's ring when that is faster",
        "step_overhead_ms": "host time per engine step the GPU waits for (scheduling, sampling), "
                            "ms",
        "request_overhead_ms": "per request outside the engine (HTTP server, tokenizer, IPC), ms",
        "token_budget": "tokens per engine step, a rule (None: a whole batch's prompts in one "
                        "pass)",
        "max_num_seqs": "requests the scheduler runs at once per data-parallel engine, a rule "
                        "(vLLM's max_num_seqs, TensorRT-LLM's max_batch_size, SGLang's "
                        "max_running_requests); None: only the KV pool limits it; past it "
                        "requests wait in the server's queue",
        "memory_utilization": "share of GPU memory for weights plus the KV pool",
        "pool_of_free": "memory_utilization is a share of the memory the weights leave "
                        "(TensorRT-LLM's free_gpu_memory_fraction; kvCacheManager.cpp)",
        "per_head_kv_decode": "the decode attention reads a GQA/MQA block's cache once per query "
                              "head (TensorRT-LLM's masked MHA before XQA)",
        "moe_factor": "multiplier on our per-kernel account of a MoE block's time (1.0: none)",
        "launch": "launch(plan) -> the command lines that start one replica (serve/launch.py); "
                  "a line starting '#' says what to run where the stack has no server command",
    }
    REQUIRED = tuple(FIELDS)


def _stack(name, *, launch, allreduce_us=DEFAULT_ALLREDUCE_LATENCY_US, allreduce_gbps=None,
           kernel_overhead_us=DEFAULT_KERNEL_OVERHEAD_US, step_overhead_ms=0.0,
           request_overhead_ms=0.0, token_budget=None, max_num_seqs=None, memory_utilization=1.0,
           pool_of_free=False, per_head_kv_decode=False, moe_factor=1.0):
    """A ServingStack with the kernels-only defaults for every value the stack does not set."""
    return ServingStack(
        name=name, kernel_overhead_us=kernel_overhead_us, allreduce_us=allreduce_us,
        allreduce_gbps=allreduce_gbps, step_overhead_ms=step_overhead_ms,
        request_overhead_ms=request_overhead_ms, token_budget=token_budget,
        max_num_seqs=max_num_seqs, memory_utilization=memory_utilization, pool_of_free=pool_of_free,
        per_head_kv_decode=per_head_kv_decode, moe_factor=moe_factor, launch=launch)


TRTLLM_PYTORCH_MOE_FACTOR = 2.31  # tools/fit_trtllm_moe_factor.py (see tensorrt-llm-pytorch below)
# TensorRT-LLM's values (sources at "tensorrt-llm" below)
_TRTLLM = dict(allreduce_us=4.4, allreduce_gbps=31.0, step_overhead_ms=0.58, token_budget=8192,
               max_num_seqs=2048, memory_utilization=0.9, pool_of_free=True)
# vLLM's get_batch_defaults (vllm/engine/arg_utils.py) keeps the small defaults (2048 tokens, 256
# requests) unless `device_memory >= 70 GiB and "a100" not in device_name`: an A100 80GB keeps
# them. The rule is read here on the record's kernel_family: "ampere" is the A100 rows' family and
# no other row's (accelerator.py), so it answers as vLLM's name test does for every GPU in the
# table (the other Ampere cards, A10/A10G/RTX 3090, have under 70 GiB either way).
_VLLM_A100_RULE = "ampere"
SERVING_STACKS = {s["name"]: s for s in (
    # today's defaults: kernels only (gpt-fast-like CUDA-graph decode; see the constants above)
    _stack("kernels", launch=no_server_command),
    # FasterTransformer (C++ runtime, static batch, NCCL: its custom all-reduce is off by default,
    # custom_ar_comm.cc). 47.9 us per in-place all-reduce call: FT's own GPT-20B TP 8 table
    # (60/20 minus 20/8 over 12 steps, docs/gpt_guide.md; that row is calibration)
    _stack("fastertransformer", allreduce_us=47.9, launch=fastertransformer_command),
    # the same behind Triton Inference Server: + 88.1 ms per request, FT's GPT-89B TP 8 128/8 row
    # (measured through Triton per gpt_guide.md; that row is calibration)
    _stack("fastertransformer-triton", allreduce_us=47.9, request_overhead_ms=88.1,
           launch=fastertransformer_triton_command),
    # TensorRT-LLM: custom one-shot all-reduce (FT's kernels' descendant) 4.4 us + 31 GB/s
    # effective, from SGLang PR #2904's H100 table of that kernel (TP 2/4/8, 4 KB - 1 MB);
    # 0.58 ms exposed host time per iteration (TensorRT-LLM issue #13957, overlap scheduler on);
    # max_num_tokens 8192 (perf-best-practices.md, since v0.11) and max_batch_size 2048 (BuildConfig's
    # defaults, tensorrt_llm/builder.py); free_gpu_memory_fraction 0.9
    _stack("tensorrt-llm", **_TRTLLM, launch=trtllm_engine_command),
    # TensorRT-LLM before its XQA kernel (v0.5-v0.7; the XQA blog, docs/source/blogs/XQA-kernel.md:
    # "will be included in the v0.8 releases"): the same, with the generation step's masked MHA
    # kernel reading a GQA/MQA block's cache once per query head (a block per query head). The
    # blog's own pair checks it, not fitted: Llama-70B FP8 on one H200, 128/2048, 1,227 tok/s/GPU
    # without XQA against 2,941 with it (tests/test_calc_inference_latency.py)
    _stack("tensorrt-llm-mmha", **_TRTLLM, per_head_kv_decode=True, launch=trtllm_pre_xqa_command),
    # TensorRT-LLM's PyTorch backend (trtllm-serve, trtllm-bench --backend pytorch; the default since
    # 0.19): as tensorrt-llm, and its MoE blocks (CUTLASS MoE backend by default, routing and
    # permutation in the PyTorch module) take TRTLLM_PYTORCH_MOE_FACTOR x our per-kernel account of
    # them. An empirical stack constant, cause not identified (flashinfer's measured trtllm-gen fused
    # MoE kernel is matched without it), set by tools/fit_trtllm_moe_factor.py from the later
    # perf-overview's 106 MoE rows (developer-guide/perf-overview.md @585c756; those rows are
    # calibration) and judged on the v1.0 table's 110 MoE rows
    _stack("tensorrt-llm-pytorch", **_TRTLLM, moe_factor=TRTLLM_PYTORCH_MOE_FACTOR,
           launch=trtllm_pytorch_command),
    # TensorRT-LLM behind Triton's tensorrtllm_backend (HTTP/gRPC, the ensemble's pre- and
    # post-processing models): as tensorrt-llm, plus 2.25 ms per request, the median of published
    # TTFT less ours at the lightest load of perf-overview.md's v0.14 online table on H100 (QPS 2:
    # Llama-3.1-8B 202/214, 467/16, 467/256 and 70B TP 4 the same: 3.8, 2.1, 2.4, 5.6, -0.8, 0.6
    # ms; those six rows are calibration), judged on the table's other 210 rows (H200, QPS 4-inf)
    _stack("tensorrt-llm-triton", **dict(_TRTLLM, request_overhead_ms=2.25),
           launch=trtllm_triton_command),
    # vLLM V1: custom all-reduce 9.0 us + 26 GB/s (the vLLM column of SGLang PR #2904, H100);
    # max_num_batched_tokens 8192 and max_num_seqs 1024 for the OpenAI server on >= 70 GiB GPUs
    # other than A100, else 2048 and 256 (vllm/engine/arg_utils.py, get_batch_defaults; the A100
    # test on the record's kernel_family, _VLLM_A100_RULE above);
    # gpu_memory_utilization 0.9; 4 ms per request online vs
    # offline (HTTP + ZMQ, tenstorrent/tt-inference-server#190); per-step host time: no V1 figure
    # was found, TensorRT-LLM's 0.58 ms stands in (stated)
    _stack("vllm", allreduce_us=9.0, allreduce_gbps=26.0, step_overhead_ms=0.58,
           request_overhead_ms=4.0,
           token_budget=[(_VLLM_A100_RULE, 2048), (70, 2048), (None, 8192)],
           max_num_seqs=[(_VLLM_A100_RULE, 256), (70, 256), (None, 1024)], memory_utilization=0.9,
           launch=vllm_command),
    # SGLang: TensorRT-LLM-derived custom all-reduce (PR #2904, as tensorrt-llm); the overlap
    # scheduler hides host work (v0.4 blog: no idle time between decode batches): 0 per step;
    # chunked_prefill_size 2048 below 35 GB, 8192 below 160 GB, else 16384 (ServerArgs defaults);
    # max_running_requests unset: derived from the KV token pool (no cap here beyond the pool);
    # per-request cost assumed vLLM's (no SGLang figure found)
    _stack("sglang", allreduce_us=4.4, allreduce_gbps=31.0, request_overhead_ms=4.0,
           token_budget=[(35, 2048), (160, 8192), (None, 16384)], memory_utilization=0.9,
           launch=sglang_command),
    # plain transformers generate, eager PyTorch, no CUDA graphs: 40 us per kernel of ours, from
    # arXiv 2605.30571 (Qwen-2.5-7B bf16 batch 1 on H100 at 0.27 of the bandwidth floor: 17.0 ms
    # per token against 4.6 ms, the gap over 28 layers x 11 kernels); NCCL through torch.distributed
    _stack("hf-eager", kernel_overhead_us=40.0, launch=hf_generate_command),
)}
# the default: vLLM, the open-source engine most serving deployments run today; its `vllm serve`
# defaults are what a user gets without tuning
DEFAULT_SERVING_STACK = "vllm"
ALLOWED_BITS = (4, 8, 16, 32)
# The range of each script flag (its dest: (lo, hi), both inclusive): far past any real
# request or accelerator (1e6 TFLOP/s and 1e6 GB/s ~ 500 x an H100; 1e9 tokens ~ 100 x the
# longest context), and tight enough that no time overflows to inf, divides by ~0 or turns
# negative. The bit widths take ALLOWED_BITS; the model flags have their caps in model/spec.py (_CAPS).
FLAG_RANGES = {
    "batch_size": (1, 10 ** 9), "prompt_tokens": (1, 10 ** 9), "output_tokens": (1, 10 ** 9),
    "tensor_parallel_size": (1, 10 ** 7), "pipeline_parallel_size": (1, 10 ** 7),
    "data_parallel_size": (1, 10 ** 7), "expert_parallel_size": (1, 10 ** 7), "ep_imbalance": (1, 1e6),
    "gpus_per_node": (1, 10 ** 7), "scale_out_gbps": (1e-3, 1e6), "num_gpus": (1, 4096),
    "max_ttft_ms": (1e-6, 1e9), "max_tpot_ms": (1e-6, 1e9), "top": (1, 10 ** 6),
    "max_replica_gpus": (1, 4096),
    "peak_tflops": (1e-3, 1e6), "memory_bandwidth_gbps": (1e-3, 1e6), "gpu_memory_gib": (1e-3, 1e6),
    "tp_bandwidth_gbps": (1e-3, 1e6), "compute_efficiency": (1e-3, 1), "memory_efficiency": (1e-3, 1),
    "tp_efficiency": (1e-3, 1), "kernel_overhead_us": (0, 1e6), "tp_latency_us": (0, 1e6),
    "request_overhead_ms": (0, 1e6), "state_bits": (1, 64), "concurrency": (1, 10 ** 7),
    "request_rate": (1e-6, 1e7), "num_requests": (1, 10 ** 6), "seed": (0, 10 ** 9),
    "max_num_batched_tokens": (1, 10 ** 9), "max_num_seqs": (1, 10 ** 7),
    "step_overhead_ms": (0, 1e6), "random_input_len": (1, 10 ** 9), "random_output_len": (1, 10 ** 9),
    "random_range_ratio": (0, 0.999999), "prefix_tokens": (1, 10 ** 9), "prefix_hit_rate": (0, 1),
    "speculative_tokens": (1, 64), "target_request_rate": (1e-6, 1e7), "host_kv_cache_gib": (1e-3, 1e7), "num_scheduler_steps": (1, 1024),
    "host_kv_bandwidth_gbps": (1e-3, 1e6),
    "gpu_memory_utilization": (1e-3, 1)}
# activation bits -> hardware.py dtype keys, first present wins
COMPUTE_DTYPE = {32: ("tf32", "fp32"), 16: ("bf16", "fp16"), 8: ("fp8", "int8"), 4: ("fp4",)}


def stack_rule(rule, memory_bytes, kernel_family):
    """A stack default that depends on the GPU (token budget, running-request cap): a number,
    None, or the value of the first (bound, value) pair that matches: a number bound when the GPU
    has less memory (GiB), a text bound when it is the GPU record's kernel_family (vLLM's A100
    exception, _VLLM_A100_RULE), None always."""
    if not isinstance(rule, list):
        return rule
    gib = memory_bytes / 2 ** 30
    return next(b for bound, b in rule
                if bound is None
                or (bound == kernel_family if isinstance(bound, str) else gib < bound))


# --- hardware ------------------------------------------------------------------------------------
class HardwareFlags(Record):
    """What the command line sets over the GPU record and the stack (None: not given, the record's
    or the stack's value stands). Built once by the tool from its flags."""

    __slots__ = ()  # fields are keys: hw["x"] = v (an attribute write is refused)

    FIELDS = {
        "serving_stack": "the SERVING_STACKS key",
        "peak_tflops": "dense peak TFLOP/s at the activation bits",
        "memory_bandwidth_gbps": "HBM bandwidth, GB/s", "gpu_memory_gib": "memory per GPU, GiB",
        "compute_efficiency": "fraction of peak FLOP/s matmuls reach",
        "memory_efficiency": "fraction of peak bandwidth reached",
        "kernel_overhead_us": "fixed cost per kernel, us",
        "tp_bandwidth_gbps": "link per GPU for TP/PP, GB/s one direction",
        "gpus_per_node": "GPUs per scale-up domain",
        "scale_out_gbps": "network per GPU beyond the node, GB/s one direction",
        "tp_latency_us": "fixed cost per all-reduce call, us",
        "tp_efficiency": "fraction of the link bandwidth reached",
        "request_overhead_ms": "fixed cost per request, ms",
        "step_overhead_ms": "host cost per step, ms",
        "max_num_batched_tokens": "tokens per engine step", "max_num_seqs": "running-request cap",
        "gpu_memory_utilization": "memory share for weights and the KV pool",
        "ep_imbalance": "busiest expert-parallel rank's load over the mean",
    }

    @classmethod
    def from_flags(cls, flags):
        """The overrides as the flags give them (the parsed flags, or any object with them)."""
        return cls({k: getattr(flags, k) for k in cls.FIELDS})


class ServingHardware(Record):
    """The hardware a serving run costs on: the GPU record's rates at the efficiencies that apply,
    the links of the layout, and the stack's costs and scheduler caps (resolve_hardware builds it;
    the forward pass, the steady state and the simulation read it). Rates in bytes/s and FLOP/s."""

    __slots__ = ()  # fields are keys: hw["x"] = v (an attribute write is refused)

    FIELDS = {
        "gpu": "the GPU record's name", "gpu_default": "True when no --gpu was given",
        "peak_flops_per_s": "dense matmul peak at the activation bits",
        "compute_efficiency": "fraction of that peak the matmuls reach",
        "flops_per_s": "peak x compute efficiency",
        "attention_flops_per_s": "the attention math's rate (16-bit peak x its efficiency)",
        "memory_bandwidth_bytes_per_s": "peak HBM bandwidth",
        "memory_efficiency": "fraction of it weight reads and small ops reach",
        "bytes_per_s": "bandwidth x memory efficiency",
        "gpu_memory_bytes": "memory per GPU (driver-reported usable, or --gpu-memory-gib)",
        "cache_bytes_per_s": "the rate the decode attention streams the KV cache at",
        "link_bytes_per_s": "what one rank drives over the scale-up link (mesh: its share)",
        "p2p_cross_node": "whether pipeline hand-offs leave the node",
        "gpus_per_node": "GPUs per scale-up domain", "scale_out_bytes_per_s": "NIC per GPU; None",
        "peer_link": "False: a GPU whose peers are not modelled (no scale-up link, no PCIe P2P: "
                     "GeForce cards) without --tp-bandwidth-gbps",
        "ep_imbalance": "busiest expert-parallel rank's load over the mean; None: balls-into-bins",
        "link_latency_s": "fixed cost per TP all-reduce call",
        "link_efficiency": "fraction of the link's line rate collectives reach",
        "kernel_overhead_s": "gap per kernel", "serving_stack": "the stack's name",
        "nccl_latency_s": "NCCL's call cost: pipeline hand-offs, and all-reduces too large for a "
                          "custom kernel",
        "step_overhead_s": "host time per engine step",
        "request_overhead_s": "fixed cost per request",
        "allreduce_custom_bytes_per_s": "the stack's custom all-reduce's effective rate; None: "
                                        "NCCL",
        "token_budget": "tokens per engine step; None: every waiting prompt whole",
        "max_num_seqs": "running-request cap per data-parallel engine; None: the pool's",
        "memory_utilization": "memory share for weights plus the KV pool",
        "moe_factor": "multiplier on a MoE block's time (the stack's)",
        "per_head_kv_decode": "decode reads a GQA block's cache once per query head",
        "pool_of_free": "memory_utilization is a share of what the weights leave",
        "net": "the collectives' network (comm/collectives.build_net)",
        "host_kv_bytes_per_s": "the host link a KV reload reaches (offload.host_link_bytes_per_s); "
                               "None: not listed. Not reported (--json)",
        "speculative": "the speculative-decoding setup a run adds, or None. Not reported",
    }
    NOT_REPORTED = ("host_kv_bytes_per_s", "speculative")  # left out of the --json hardware

    def reported(self):
        """The fields --json prints under "hardware"."""
        return {k: v for k, v in self.items() if k not in self.NOT_REPORTED}


def _matmul_rates(gpu, flags, a_bits, notes):
    """(peak, efficiency or None, 16-bit peak or None, 16-bit efficiency or None) of the matmuls:
    --peak-tflops, else the record's peak for the activation bits and its measured MAMF (scaled by
    MAMF_SHAPE_FACTOR) unless --compute-efficiency is given."""
    ce = flags.compute_efficiency
    if flags.peak_tflops is not None:
        return flags.peak_tflops * 1e12, ce, None, None
    peaks = gpu["peak_flops_per_s"] or {}
    achs = gpu.get("achievable_matmul_flops_per_s") or {}
    keys = COMPUTE_DTYPE[a_bits]
    key = next((k for k in keys if peaks.get(k)), None)
    if key is None:
        raise CalcError(f"{gpu['name']} has no {'/'.join(keys)} peak for --activation-bits "
                        f"{a_bits}; pass --peak-tflops")
    peak = peaks[key]
    if achs.get(key) and ce is None:
        ce = MAMF_SHAPE_FACTOR * achs[key] / peak
        notes.append(f"compute efficiency {ce:.3f} = {MAMF_SHAPE_FACTOR:.3f} x achievable {key} "
                     f"matmul {achs[key] / 1e12:.1f} / peak {peak / 1e12:.1f} TFLOP/s "
                     f"({gpu['name']})")
    peak16 = ce16 = None  # the attention math's 16-bit rate, when the matmuls run below 16 bits
    key16 = next((k for k in COMPUTE_DTYPE[16] if peaks.get(k)), None)
    if a_bits < 16 and key16:
        peak16 = peaks[key16]
        if achs.get(key16) and flags.compute_efficiency is None:
            ce16 = MAMF_SHAPE_FACTOR * achs[key16] / peak16
    return peak, ce, peak16, ce16


def _compute(rates, flags, a_bits, notes):
    """The matmul and attention rates from _matmul_rates': {peak_flops_per_s, compute_efficiency,
    flops_per_s, attention_flops_per_s}, the defaults below 16 bits and FP4's shape penalty in."""
    peak, ce, peak16, ce16 = rates
    if ce is None:  # no flag, no measured figure: 0.70 at 16 bits, lower below (see constants)
        ce = DEFAULT_COMPUTE_EFFICIENCY * (LOW_BIT_EFFICIENCY_RATIO if a_bits < 16 else 1.0)
    if a_bits == 4 and flags.compute_efficiency is None:  # FP4 reaches its best shape later
        ce *= FP4_SHAPE_PENALTY
        notes.append(f"fp4 matmuls x {FP4_SHAPE_PENALTY:.3f} (FP4 falls further below its best "
                     f"shape than FP8 at 4096^3, Azure GB200 cuBLASLt): efficiency {ce:.3f}")
    if a_bits < 16:  # attention at 16 bits: the table's 16-bit peak, else half the rate per halving
        peak16 = peak16 or peak * a_bits / 16
        ce16 = ce16 or (ce if flags.compute_efficiency is not None else DEFAULT_COMPUTE_EFFICIENCY)
    else:
        peak16, ce16 = peak, ce
    return {"peak_flops_per_s": peak, "compute_efficiency": ce, "flops_per_s": peak * ce,
            "attention_flops_per_s": peak16 * ce16}


def _memory(gpu, flags, notes):
    """The HBM rates and the memory: {memory_bandwidth_bytes_per_s, memory_efficiency,
    bytes_per_s, gpu_memory_bytes, cache_bytes_per_s}."""
    me = flags.memory_efficiency
    if flags.memory_bandwidth_gbps is not None:
        bw = flags.memory_bandwidth_gbps * 1e9
    else:
        bw = gpu["memory_bandwidth_bytes_per_s"]
        ach = gpu.get("achievable_memory_bandwidth_bytes_per_s")
        if ach and me is None:
            me = ach / bw
            notes.append(f"memory efficiency {me:.3f} = achievable / peak bandwidth "
                         f"({gpu['name']})")
    if flags.gpu_memory_gib is not None:
        mem = flags.gpu_memory_gib * 2 ** 30
    else:  # driver-reported capacity; older hardware.py: vendor GB
        mem = gpu.get("memory_usable_bytes") or gpu["memory_bytes"]
    me = DEFAULT_MEMORY_EFFICIENCY if me is None else me
    kv = gpu.get("kv_stream_efficiency")  # the decode attention's KV streaming (accelerator.py)
    return {"memory_bandwidth_bytes_per_s": bw, "memory_efficiency": me, "bytes_per_s": bw * me,
            "gpu_memory_bytes": mem,
            "cache_bytes_per_s": bw * (max(me, kv) if flags.memory_efficiency is None and kv
                                       else me)}


def _scale_up(gpu, flags, *, gpu_given, stages, notes):
    """The scale-up link per GPU (one direction), its domain, whether it is a mesh, whether its
    switch reduces in the network, and whether the peers are PCIe cards (NCCL's ring over the slot,
    in servers of PCIE_SERVER_GPUS). stages: GPUs of the layout (tp x dp x pp)."""
    agg, dom = gpu.get("scale_up_bandwidth_bytes_per_s"), gpu.get("scale_up_domain_size")
    mesh = gpu.get("scale_up_topology") == "mesh" and bool(dom and dom > 1)
    # in-network reduction is the record's switch; a link of your own without --gpu has none
    in_net = (bool(gpu.get("scale_up_in_network_reduction"))
              and not (not gpu_given and flags.tp_bandwidth_gbps))
    pcie = False
    if not agg and gpu.get("pcie_peer_bandwidth_bytes_per_s") and flags.tp_bandwidth_gbps is None:
        agg, dom, pcie = gpu["pcie_peer_bandwidth_bytes_per_s"], PCIE_SERVER_GPUS, True
        if stages > 1:
            notes.append(f"{gpu['name']}: no NVLink; peers over PCIe at {agg / 1e9:.1f} GB/s x "
                         f"{PCIE_PEER_EFFICIENCY:.3f} (NCCL's ring; no custom all-reduce), servers "
                         f"of {PCIE_SERVER_GPUS} GPUs")
    if not agg and stages > 1 and flags.tp_bandwidth_gbps is None:
        raise CalcError(f"--gpu {gpu['name']} has no scale-up link and no peer-to-peer over PCIe; "
                        "pass --tp-bandwidth-gbps (GB/s per GPU, one direction)")
    if flags.tp_bandwidth_gbps is not None:  # the user's link; without a domain it joins every GPU
        agg, mesh = flags.tp_bandwidth_gbps * 1e9, False
        dom = dom if gpu.get("scale_up_bandwidth_bytes_per_s") else None
    agg = agg or DEFAULT_LINK_GBPS * 1e9  # no scale-up link: a stand-in no single-GPU cost reads
    return agg, flags.gpus_per_node or dom or stages, mesh, in_net, pcie


def _links(gpu, flags, *, gpu_given, tp, pp, dp, notes):
    """The layout's links: (scale-up dict, its line rate, in-network reduction, mesh domain,
    whether the peers are PCIe cards); exit 2 when the layout leaves a node and no network is
    known."""
    width = tp * dp  # GPUs of one pipeline stage
    agg, dom, mesh, in_net, pcie = _scale_up(gpu, flags, gpu_given=gpu_given, stages=width * pp,
                                             notes=notes)
    out = gpu.get("scale_out_bandwidth_bytes_per_s")
    if flags.scale_out_gbps is not None:
        out = flags.scale_out_gbps * 1e9
    if width * pp > dom and not out:
        raise CalcError(f"-tp {tp} x -dp {dp} x -pp {pp} spans more than one {gpu['name']} node of "
                        f"{dom} GPUs and no scale-out bandwidth is known; pass --scale-out-gbps "
                        "(GB/s per GPU, one direction)")
    if width > dom:
        notes.append(f"-tp {tp} x -dp {dp} spans {math.ceil(width / dom)} nodes of "
                     f"{dom} GPUs: collectives cross the network at {out / 1e9:g} GB/s per GPU "
                     f"(x {SCALE_OUT_EFFICIENCY})")
    # what one rank drives: a full mesh (xGMI, Gaudi RoCE) gives a group of g its g-1 of the dom-1
    # peer links (calc_comm.group_intra_bytes_per_s), a switch the whole link
    link = agg * max(1, min(tp, dom) - 1) / (dom - 1) if mesh else agg
    p2p_cross = width * pp > dom and pp > 1  # stage hand-offs leave the node
    if p2p_cross:
        notes.append(f"pipeline hand-offs cross nodes: {out / 1e9:g} GB/s per GPU")
    links = {"link_bytes_per_s": link, "p2p_cross_node": p2p_cross, "gpus_per_node": dom,
             "scale_out_bytes_per_s": out,
             "peer_link": not (not gpu.get("scale_up_bandwidth_bytes_per_s")
                               and not pcie and flags.tp_bandwidth_gbps is None)}
    return links, agg, in_net, (dom if mesh else None), pcie


def _stack_costs(stack, flags, *, pcie, memory_bytes, kernel_family):
    """What the stack adds, each flag over the stack's value: the call costs of the collectives,
    the kernel gap, the host costs and the scheduler's caps (stack_rule)."""
    def given(flag, default):
        return default if flag is None else flag
    lat = given(flags.tp_latency_us,  # PCIe peers: NCCL's own call cost (no custom kernel)
                DEFAULT_ALLREDUCE_LATENCY_US if pcie else stack.allreduce_us)
    leff = given(flags.tp_efficiency,
                 PCIE_PEER_EFFICIENCY if pcie else DEFAULT_ALLREDUCE_EFFICIENCY)
    return {
        "link_latency_s": lat * 1e-6, "link_efficiency": leff,
        "kernel_overhead_s": given(flags.kernel_overhead_us, stack.kernel_overhead_us) * 1e-6,
        "serving_stack": stack.name,
        "nccl_latency_s": given(flags.tp_latency_us, DEFAULT_ALLREDUCE_LATENCY_US) * 1e-6,
        "step_overhead_s": given(flags.step_overhead_ms, stack.step_overhead_ms) * 1e-3,
        "request_overhead_s": given(flags.request_overhead_ms, stack.request_overhead_ms) * 1e-3,
        "allreduce_custom_bytes_per_s": (stack.allreduce_gbps * 1e9 if stack.allreduce_gbps and
                                         flags.tp_bandwidth_gbps is None and not pcie else None),
        "token_budget": given(flags.max_num_batched_tokens,
                              stack_rule(stack.token_budget, memory_bytes, kernel_family)),
        "max_num_seqs": given(flags.max_num_seqs,
                              stack_rule(stack.max_num_seqs, memory_bytes, kernel_family)),
        "memory_utilization": given(flags.gpu_memory_utilization, stack.memory_utilization),
        "moe_factor": stack.moe_factor, "per_head_kv_decode": stack.per_head_kv_decode,
        "pool_of_free": stack.pool_of_free}


def resolve_hardware(gpu, flags, *, gpu_given, tp, pp, dp, activation_bits):
    """Peak FLOP/s, bandwidths, memory, links and the stack's costs for one layout: explicit flags
    (a HardwareFlags) win, then the accelerator's record (the tool's --gpu, else the default
    accelerator; its achievable figures when present and no efficiency flag overrides them).
    Returns (ServingHardware, notes); CalcError (one line) when the record cannot answer."""
    notes = []
    rates = _matmul_rates(gpu, flags, activation_bits, notes)
    mem = _memory(gpu, flags, notes)
    links, agg, in_net, mesh_domain, pcie = _links(gpu, flags, gpu_given=gpu_given, tp=tp, pp=pp,
                                                   dp=dp, notes=notes)
    hw = {"gpu": gpu["name"], "gpu_default": not gpu_given}
    hw.update(_compute(rates, flags, activation_bits, notes))  # its fp4 note after the links'
    hw.update(mem)
    hw.update(links)
    hw["ep_imbalance"] = flags.ep_imbalance
    hw.update(_stack_costs(SERVING_STACKS[flags.serving_stack], flags, pcie=pcie,
                           memory_bytes=mem["gpu_memory_bytes"],
                           kernel_family=gpu.get("kernel_family")))
    hw["net"] = build_net(intra_bytes_per_s=agg, inter_bytes_per_s=links["scale_out_bytes_per_s"],
                          in_network_reduction=in_net, intra_efficiency=hw["link_efficiency"],
                          inter_efficiency=SCALE_OUT_EFFICIENCY, nvls_efficiency=NVLS_EFFICIENCY,
                          launch_s=hw["nccl_latency_s"], intra_hop_ll_s=ALPHA_HOP_S["ll"]["intra"],
                          inter_hop_ll_s=ALPHA_HOP_S["ll"]["inter"], mesh_domain=mesh_domain)
    hw["host_kv_bytes_per_s"] = host_link_bytes_per_s(gpu)
    return ServingHardware(hw), notes


# ======== llmcalc/serve/forward.py ================================================================
# The forward pass of one serving step: each layer's compute, memory traffic, kernels and
# all-reduces on a roofline with a soft corner.

# --- formulas ------------------------------------------------------------------------------------
def roofline_time_s(*, flops, bytes_moved, flops_per_s, bytes_per_s, corner_p=None):
    """Roofline time of one kernel: the slower of its math and its memory traffic
    (Williams et al. 2009), overlap of the two inside the kernel assumed perfect; with corner_p,
    the soft corner (t_math^p + t_mem^p)^(1/p) instead (ROOFLINE_CORNER_P for weight matmuls):
    within a few percent of the max far from the ridge, 2^(1/p) times it at the ridge."""
    tc, tm = flops / flops_per_s, bytes_moved / bytes_per_s
    if corner_p is None or tc <= 0 or tm <= 0:
        return max(tc, tm)
    hi = max(tc, tm)  # scaled so that the powers stay finite
    return hi * ((tc / hi) ** corner_p + (tm / hi) ** corner_p) ** (1 / corner_p)


def layout_net(hw):
    """comm/collectives.py's network for this hardware (build_net): the scale-up link at
    the link efficiency (a full mesh split over its peers, group_intra_bytes_per_s), the scale-out
    NIC per GPU at SCALE_OUT_EFFICIENCY, NVLS where the switch reduces, NCCL's hops (ALPHA_HOP_S)
    and call cost. resolve_hardware builds it once; a bare hw dict (tests) gets one from its link."""
    if hw.get("net"):
        return hw["net"]
    return build_net(intra_bytes_per_s=hw["link_bytes_per_s"], inter_bytes_per_s=hw.get("scale_out_bytes_per_s"),
                     in_network_reduction=hw.get("in_network_reduction", False),
                     intra_efficiency=hw["link_efficiency"], inter_efficiency=SCALE_OUT_EFFICIENCY,
                     nvls_efficiency=NVLS_EFFICIENCY, launch_s=hw.get("nccl_latency_s", hw["link_latency_s"]),
                     intra_hop_ll_s=ALPHA_HOP_S["ll"]["intra"], inter_hop_ll_s=ALPHA_HOP_S["ll"]["inter"],
                     mesh_domain=hw.get("mesh_domain"))


def group_collective_s(op, *, size_bytes, n, stride, hw, launch_s=None):
    """One NCCL collective over n ranks spaced `stride` apart in the replica's rank order (tp
    fastest, then dp, then pp; a node holds hw["gpus_per_node"] consecutive ranks), placed with
    comm/collectives.py's group_placement and timed with its collective_time_s (Thakur et al. 2005
    alpha-beta per algorithm and protocol, the fastest taken): inside one node NCCL's ring, across
    nodes the fastest of ring, tree and the two-level algorithm, the network hops at the scale-out
    bandwidth. launch_s replaces the call's fixed cost (a stack's in-place all-reduce). n = 1 costs
    nothing."""
    if n <= 1 or size_bytes <= 0:
        return 0.0
    net = layout_net(hw)
    if launch_s is not None:
        net = dict(net, launch_s=launch_s)
    g, nodes = group_placement(size=n, stride=stride, gpus_per_node=hw.get("gpus_per_node") or n * stride)
    if nodes > 1 and not net["inter_bytes_per_s"]:
        raise ValueError("a group crosses nodes without a scale-out bandwidth")
    return collective_time_s(op=op, size_bytes=size_bytes, n=n, gpus_per_node=g, net=net,
                             algo="ring" if nodes == 1 else "auto")["time_s"]


def custom_allreduce_time_s(*, size_bytes, num_gpus, latency_s, bytes_per_s):
    """A serving stack's custom all-reduce inside one NVLink domain (TensorRT-LLM's and SGLang's
    one/two-shot kernels, vLLM's custom_all_reduce): the call's fixed cost plus (n-1)/n of the
    message at the kernel's effective rate, both fitted to the stack's own microbenchmark table
    (SERVING_STACKS). n = 1 costs nothing."""
    n = num_gpus
    if n <= 1 or size_bytes <= 0:
        return 0.0
    return latency_s + (n - 1) / n * size_bytes / bytes_per_s


def tp_allreduce_s(size_bytes, *, n, hw):
    """The all-reduce after a tensor-parallel block over n consecutive ranks. Inside one node: NCCL's
    ring with the stack's call cost (hw["link_latency_s"]), or, for a stack with a custom kernel,
    the faster of that kernel and NCCL's ring at NCCL's own call cost (vLLM and TensorRT-LLM switch
    by size: CUSTOM_ALL_REDUCE_MAX_SIZES, two-shot thresholds). Across nodes the custom kernels do
    not run (they need peer memory in one NVLink domain): NCCL's choice (group_collective_s)."""
    if n <= 1 or size_bytes <= 0:
        return 0.0
    custom = hw.get("allreduce_custom_bytes_per_s")
    nccl_s = hw.get("nccl_latency_s", hw["link_latency_s"])
    t = group_collective_s("all_reduce", size_bytes=size_bytes, n=n, stride=1, hw=hw,
                           launch_s=nccl_s if custom else hw["link_latency_s"])
    if custom and n <= (hw.get("gpus_per_node") or n):
        t = min(t, custom_allreduce_time_s(size_bytes=size_bytes, num_gpus=n, latency_s=hw["link_latency_s"],
                                           bytes_per_s=custom))
    return t


def handoff_s(size_bytes, *, cross_node, hw):
    """One pipeline hand-off: a send/recv between neighbouring stages over one link (the shared
    block's sendrecv: NCCL's call cost + one hop + bytes / link), over the network when the stages
    sit in different nodes."""
    return collective_time_s(op="sendrecv", size_bytes=size_bytes, n=2, gpus_per_node=1 if cross_node else 2,
                             net=layout_net(hw), algo="ring")["time_s"]


def node_dedup_alltoall_s(*, tokens, k, h, bytes_per_el, ep, hw):
    """One dispatch (or combine) of DeepEP's high-throughput kernels, which serving stacks run for
    steps with prompt tokens (SGLang's DeepEP 'auto' mode; the low-latency kernels take decode-only
    steps): a token crosses the network once per destination node its k experts sit on, N (1 -
    (1 - 1/N)^k) nodes under uniform routing of which (N - 1) / N are remote, and is forwarded over
    NVLink to the expert GPUs inside each node (k (G - 1) / G of its copies); the two legs stream
    through each other, so the slower one sets the time, plus one call and one network hop (DeepEP
    README, normal kernels: 'NVLink and RDMA forwarding'). Inside one node: the direct all-to-all."""
    G = min(hw.get("gpus_per_node") or ep, ep)
    N = ep // G
    if N <= 1:
        return group_collective_s("alltoall", size_bytes=tokens * k * h * bytes_per_el, n=ep, stride=1, hw=hw)
    net = layout_net(hw)
    remote = (N - 1) * (1 - (1 - 1 / N) ** k)
    t_net = tokens * remote * h * bytes_per_el / net["inter_bytes_per_s"]
    t_nvl = tokens * k * (G - 1) / G * h * bytes_per_el / group_intra_bytes_per_s(net, gpus_in_node=G, op="alltoall")
    return net["launch_s"] + net["hop_s"]["simple"]["inter"] + max(t_net, t_nvl)


def ep_imbalance(*, ep, assignments):
    """Expected load of the busiest of ep expert-parallel ranks over the mean when `assignments`
    token-to-expert picks land uniformly at random: m/n + sqrt(2 (m/n) ln n) for m balls in n bins
    (Raab & Steger 1998, "Balls into Bins", m >> n ln n), so 1 + sqrt(2 n ln n / m), at most n (all
    on one rank). Real routers are more skewed (DeepSeek's EPLB exists to even them out): a lower
    bound, --ep-imbalance sets it."""
    if ep <= 1 or assignments <= 0:
        return 1.0
    return min(float(ep), 1.0 + math.sqrt(2 * ep * math.log(ep) / assignments))


def expected_distinct_experts(*, num_experts, topk, num_tokens):
    """Expected number of distinct routed experts that num_tokens tokens touch when each picks
    k of E uniformly and independently: E (1 - (1 - k/E)^n) (a balls-in-bins expectation;
    with real, skewed routers it is fewer)."""
    E, k, n = num_experts, topk, num_tokens
    if E <= 0 or k <= 0 or n <= 0:
        return 0.0
    return E * (1.0 - (1.0 - k / E) ** n)


def expected_distinct_real_experts(mlp, *, num_tokens):
    """Distinct routed experts with weights that num_tokens tokens touch in one MoE block. Each
    token picks k of the E + Z experts its router scores (Z zero-computation experts, LongCat-Flash
    sec. 2.1, have no weights), so one real expert is hit with probability k / (E + Z) per token:
    E (1 - (1 - k/(E+Z))^n), the balls-in-bins expectation over E + Z bins restricted to the E."""
    E, Z, k = mlp["num_experts"], mlp["zero_experts"], mlp["topk"]
    if not Z:
        return expected_distinct_experts(num_experts=E, topk=k, num_tokens=num_tokens)
    return expected_distinct_experts(num_experts=E + Z, topk=k, num_tokens=num_tokens) * E / (E + Z)


def cache_bytes_per_token(attn, *, tp, kv_bits):
    """Cache bytes one token adds to one attention block on one TP rank, {"kv", "indexer"}, from
    the block's cache_elements_per_token. MHA/GQA/MQA: K and V of the rank's ceil(kv/tp) kv heads
    (replicated when kv < tp). MLA (DeepSeek-V2 sec. 2.1.2): the latent r_kv + d_rope, whole on
    every rank (the absorbed decode reads all of it). The lightning indexer's d_I key per token is
    whole on every rank too (vLLM and SGLang build the indexer from ReplicatedLinear layers), at
    the KV-cache bits. A layer that reuses another layer's cache (Gemma 4) adds nothing."""
    el = cache_elements_per_token(attn, mla_cache="latent")
    kv = el["kv"]
    if attn["kind"] != "mla" and kv:
        kv = kv // attn["kv_heads"] * math.ceil(attn["kv_heads"] / tp)
    return {"kv": kv * kv_bits / 8, "indexer": el["indexer"] * kv_bits / 8}


def cache_read_bytes_per_token(attn, *, tp, kv_bits):
    """Cache bytes one attention block reads per cached token it attends to on one TP rank: a layer
    that reuses another layer's cache (Gemma 4's kv_shared layers) stores none but reads that
    layer's K/V, of its own shape."""
    return cache_bytes_per_token(dict(attn, kv_shared=False), tp=tp, kv_bits=kv_bits)


def step_pairs(attn, *, context_before, new_tokens):
    """Query-key pairs {"core", "indexer"} one sequence's new_tokens causal queries score after
    context_before cached tokens: a decode step (one query) attends to decode_keys_read at
    c + 1 tokens; a longer pass to the difference of the block's causal query_key_pairs (which
    cap each query at the window, its chunk, or the indexer's top-k; the indexer scores all)."""
    if new_tokens == 1:
        return decode_keys_read(attn, context=context_before + 1)
    hi = query_key_pairs(attn, seq_len=context_before + new_tokens, attention="causal")
    lo = query_key_pairs(attn, seq_len=context_before, attention="causal")
    return {k: hi[k] - lo[k] for k in hi}


def cached_keys_read(attn, *, context_before):
    """Cached tokens one sequence's next query reads from this block's cache, {"core", "indexer"}:
    the keys decode_keys_read says it attends to at c + 1 tokens, less its own (computed in the
    step, not read): all c (full), the newest w - 1 (sliding; what HF's DynamicSlidingWindowLayer
    holds before the step), c mod C (chunked: the earlier keys of its own chunk), top-k - 1 (the
    DSA core); the indexer scores every cached key, c."""
    k = decode_keys_read(attn, context=context_before + 1)
    return {"core": max(k["core"] - 1, 0), "indexer": max(k["indexer"] - 1, 0)}


def linear_mixer_core_costs(attn, *, tp, pairs, new_tokens, act_bits, state_bits):
    """(FLOPs, bytes, state bytes read) of one linear mixer's core on one TP rank (its heads and
    key heads or groups split over tp, as vLLM shards them; groups fewer than tp replicated).
    pairs["state"] tokens run the chunked algorithm, otherwise each of the new_tokens is one
    recurrent step (linear_core_flops). Bytes: the conv's input and output (2 conv channels per
    token, activation bits), the gate and the core's output (2 x the out_proj width), and per
    sequence the recurrent state read and written once per pass (at state_bits; the fused
    recurrent kernels keep it in registers within a step) and the conv window (K channels). new_tokens counts tokens of all sequences; for a
    decode pass it equals the number of sequences."""
    x = dict(attn, heads=attn["heads"] // tp, kv_heads=max(attn["kv_heads"] // tp, 1))
    chunked = pairs.get("state", 0)
    flops = linear_core_flops(x, chunked_tokens=chunked, steps=0 if chunked else new_tokens)
    ab = act_bits / 8
    _, w_out, conv_dim = mixer_widths(x)
    seqs = pairs.get("sequences", new_tokens)
    el = state_elements(x)
    state = seqs * (el["recurrent"] * state_bits / 8 + el["conv"] * ab)
    io = new_tokens * (2 * conv_dim + 2 * w_out) * ab
    return flops, io + 2 * state, state


def attention_core_costs(attn, *, tp, pairs, new_tokens, keys_read, kv_bits, act_bits, absorbed,
                         state_bits=32, per_head_kv=False):
    """(FLOPs, bytes, cache bytes read) of one attention block's QK^T, softmax and PV on one TP
    rank. pairs {"core", "indexer"}: query-key pairs of all sequences; new_tokens: queries (their q
    in, output out, new cache entries written); keys_read {"core", "indexer"}: cached keys read.
    MHA/GQA and MLA's naive form (prefill): the block's attention_core_flops (2 a d_qk + 2 a d_v
    per pair), a/tp heads per rank. MLA absorbed (decode, DeepSeek-V2 sec. 2.1.2): 2 (r_kv + d_rope)
    + 2 r_kv per pair and head. The lightning indexer (DeepSeek-V3.2 sec. 2.1) is replicated: its
    2 H_I d_I FLOPs per pair, its queries in and its keys read are whole on every rank. A linear
    mixer: linear_mixer_core_costs. per_head_kv: a decode kernel that reads the cache once per
    query head (TensorRT-LLM's masked MHA before its XQA kernel: one thread block per query head,
    each loading its kv head's K/V), so a GQA block's cache reads x (query heads per kv head)."""
    if attn["span"] == "state":
        return linear_mixer_core_costs(attn, tp=tp, pairs=pairs, new_tokens=new_tokens, act_bits=act_bits,
                                       state_bits=state_bits)
    a_local = attn["heads"] / tp
    ab = act_bits / 8
    n = new_tokens
    tok = cache_bytes_per_token(attn, tp=tp, kv_bits=kv_bits)
    read_tok = cache_read_bytes_per_token(attn, tp=tp, kv_bits=kv_bits)
    if attn["kind"] == "dsv4":  # its indexer reads one d_I key per compressed entry, its core d per key
        read_tok = dict(read_tok, kv=attn["head_dim"] * kv_bits / 8,
                        indexer=attn["c_index_head_dim"] * kv_bits / 8)
    core = attention_core_flops(attn, pairs={"core": pairs["core"], "indexer": pairs["indexer"]})
    if attn["kind"] == "mla":
        r, dr, dv = attn["kv_lora_rank"], attn["qk_rope_head_dim"], attn["v_head_dim"]
        d_qk = attn["qk_nope_head_dim"] + dr
        if absorbed:
            flops = pairs["core"] * a_local * (2 * (r + dr) + 2 * r)
            q_width, o_width, kv_in = a_local * (r + dr), a_local * r, 0
        else:
            flops = (core["attention_scores"] + core["attention_context"]) / tp
            q_width, o_width = a_local * d_qk, a_local * dv
            kv_in = n * a_local * (d_qk + dv) * ab
    else:
        d = attn["head_dim"]
        flops = (core["attention_scores"] + core["attention_context"]) / tp
        q_width = o_width = a_local * d
        kv_in = n * 2 * math.ceil(attn["kv_heads"] / tp) * d * ab
    flops += core["indexer_scores"]
    cache_read = keys_read["core"] * read_tok["kv"] + keys_read["indexer"] * read_tok["indexer"]
    if per_head_kv and attn["kind"] != "mla" and attn["kv_heads"]:
        cache_read *= max(a_local / math.ceil(attn["kv_heads"] / tp), 1.0)
    bytes_moved = (n * (q_width + o_width) * ab + kv_in + n * tok["kv"] + cache_read
                   + n * (attn["index_heads"] * attn["index_head_dim"] * ab + tok["indexer"]))
    return flops, bytes_moved, cache_read


def layer_costs(layer, *, h, tp, num_tokens, w_bits, a_bits, e_bits=None, moe=None):
    """Per-op (FLOPs, bytes, weight bytes) of one layer's weight matmuls and elementwise passes on
    one TP rank for num_tokens = b x new tokens, summed over its attention and MLP blocks (two of
    each in LongCat-Flash). Matmul: 2 FLOPs per weight per token; bytes = weight shard + activations
    in and out (the roofline inputs of Williams et al. 2009; the decode read of every weight shard,
    Pope et al. 2022 sec. 3). Attention weights: the rank's share (attention_on_rank). A MoE block reads the
    distinct real experts the tokens touch and runs k E / (E + Z) of them per token
    (expected_real_experts), plus shared experts and the router (replicated). Other per-layer
    weights (Gemma 4's per-layer input gate) count with the MLP, replicated. Elementwise: a norm and
    a residual add move 5 h values per token per block, the activation function 2 f (3 f gated),
    rotary 2 (a + kv) d; a MoE block's dispatch permute (its tokens in, one row per pick out) and
    combine (the picks in, the weighted sum out) move 2 (tokens + picks) h more, at 16 bits, on
    every rank whatever the TP (each rank permutes every token: TensorRT-LLM's expandInputRows and
    finalizeMoeRouting; vLLM's Triton path gathers in its GEMM and keeps only the combine, so this
    counts one pass more for it). Weights are stored at w_bits (routed experts at e_bits, when a checkpoint
    stores them narrower, gpt-oss's MXFP4). With expert parallelism, moe = {"tokens": the tokens
    of every data-parallel group that reach the MoE, "ep": ranks the routed experts are spread
    over, "etp": ranks each expert is split over, "imbalance": the busiest rank's load over the
    mean (ep_imbalance)}: the rank runs tokens x k / ep picks x imbalance on its E / ep experts and
    reads the ones they touch; shared experts and the router see the rank's own tokens (None: the
    experts split over tp with the layer). Returns name -> (flops, bytes, weight bytes)."""
    n, wb, ab = num_tokens, w_bits / 8, a_bits / 8
    m_tok, m_ep, m_etp, imb = ((n, 1, tp, 1.0) if moe is None else
                               (moe["tokens"], moe["ep"], moe["etp"], moe["imbalance"]))
    expert_b = (w_bits if e_bits is None else e_bits) / 8
    att_f = att_b = att_w = 0.0
    rope = 0
    for attn in layer["attention"]:
        a, kv, d = attn["heads"], attn["kv_heads"], attn["head_dim"]
        w = attention_params(attention_on_rank(attn, tp=tp), h=h)  # the rank's share, as the memory script splits it
        io = n * (h + a * d + attn["kv_proj"] * kv * d + a * d + h) / tp * ab  # in/out of qkv and o-proj
        if attn["span"] == "state":  # in_proj out, out_proj in
            w_in, w_out, _ = mixer_widths(attn)
            io = n * (2 * h + (w_in + w_out) / tp) * ab
        att_f += 2 * n * w
        att_b += w * wb + io
        att_w += w * wb
        if attn["rope"]:
            rope += 2 * (a + kv) * d / tp
    mlp_f = mlp_b = mlp_w = 0.0
    f_act = act_elems = 0
    permuted = 0.0  # rows a MoE block's dispatch and combine passes read and write
    for mlp in layer["mlp"]:
        nl, p = mlp["linears"], mlp_block_params(mlp, h=h)
        if mlp["kind"] == "dense":
            f = mlp["width"]
            w = p["dense"] / tp
            fl, wbytes = 2 * n * w, w * wb
            io = n * (h + (nl - 1) * f / tp + f / tp + h) * ab
            f_m = f / tp
        else:
            f_e, f_sh = mlp["width"], mlp["shared_width"]
            k = expected_real_experts(mlp)
            picks = m_tok * k / m_ep * imb  # token-expert picks the busiest rank runs
            touched = expected_distinct_real_experts(mlp, num_tokens=m_tok) / m_ep
            expert_w, shared_w, router_w = p["one_expert"] / m_etp, p["shared_experts"] / tp, p["router"]
            fl = 2 * picks * expert_w + 2 * n * (shared_w + router_w)
            wbytes = touched * expert_w * expert_b + (shared_w + router_w) * wb
            io = (picks * (h + (nl - 1) * f_e / m_etp + h) + n * ((h + (nl - 1) * f_sh / tp + h) * bool(f_sh)
                  + h + mlp["num_experts"] + mlp["zero_experts"])) * ab
            f_m = (picks * f_e / m_etp + n * f_sh / tp) / n if n else 0.0
            permuted += 2 * (n + picks)  # dispatch: n rows in, picks out; combine: picks in, n out
        mlp_f, mlp_b, mlp_w = mlp_f + fl, mlp_b + wbytes + io, mlp_w + wbytes
        f_act += f_m
        act_elems += (nl if nl >= 3 else 2) * f_m
    extra = layer["extra_params"]
    if extra:
        mlp_f, mlp_b, mlp_w = mlp_f + 2 * n * extra, mlp_b + extra * wb, mlp_w + extra * wb
    mlp_f += n * layer.get("weightless_flops", 0)  # Gemma 3n's AltUp coefficient product
    blocks = len(layer["attention"]) + len(layer["mlp"])
    res_b = max(a_bits, 16) / 8  # the residual stream stays 16-bit even with 8-bit matmul inputs
    elem = (n * (5 * h * blocks + act_elems + rope) + permuted * h) * res_b
    return {"attention_linear": (att_f, att_b, att_w), "mlp": (mlp_f, mlp_b, mlp_w),
            "elementwise": (n * (5 * h * blocks + 4 * f_act), elem, 0.0)}


def logit_rows_costs(spec, *, rows, tp):
    """(FLOPs, bytes) the output head spends per position it scores, on one tp rank (the vocab split
    over tp): 2 h V / tp FLOPs and V / tp fp32 logits written per row; its weight read is the
    caller's (once per pass)."""
    return 2 * rows * (spec["word_embed_proj_dim"] * spec["vocab_size"] / tp), rows * spec["vocab_size"] / tp * 4


def layer_kernels(layer):
    """Kernels one layer launches, as a CUDA-graph-free eager stack (vLLM's and gpt-fast's module
    order) launches them: per attention block norm, qkv, rope, attention, o-proj, add (6; 3 more with
    an indexer: its projections, its scores, the top-k; DeepSeek-V4's compressor and
    hyper-connections DSV4_EXTRA_KERNELS); per linear-mixer block LINEAR_MIXER_KERNELS; per MLP
    block norm, mlp-in, activation, mlp-out, add (5), and per MoE block MOE_EXTRA_KERNELS more (top-k,
    dispatch, combine). Each costs the fixed kernel_overhead_s."""
    return sum(LINEAR_MIXER_KERNELS if a["span"] == "state" else
               ATTENTION_KERNELS + INDEXER_KERNELS * bool(a["index_topk"] and a["index_heads"])
               + (DSV4_EXTRA_KERNELS + INDEXER_KERNELS * (a["compress_kind"] == "csa") if a["kind"] == "dsv4" else 0)
               for a in layer["attention"]) + MLP_KERNELS * len(layer["mlp"]) \
        + MOE_EXTRA_KERNELS * sum(m["kind"] != "dense" for m in layer["mlp"])


def layer_allreduces(layer):
    """TP all-reduces one layer makes: one after each attention and each MLP block (Megatron-LM
    sec. 3: two per ordinary layer)."""
    return len(layer["attention"]) + len(layer["mlp"])


def sum_max_linear(*, a0, a1, b0, b1, c_lo, c_hi):
    """Exact sum over integers c in [c_lo, c_hi] of max(a0 + a1 c, b0 + b1 c) (a convex piecewise
    linear function: one crossing at most), so decode totals need no per-step loop."""
    if c_hi < c_lo:
        return 0.0

    def lin_sum(p0, p1, lo, hi):
        cnt = hi - lo + 1
        return p0 * cnt + p1 * (lo + hi) * cnt / 2 if cnt > 0 else 0.0

    if a1 == b1:
        return lin_sum(max(a0, b0), a1, c_lo, c_hi)
    x = (b0 - a0) / (a1 - b1)  # where the lines cross
    lo_line, hi_line = ((b0, b1), (a0, a1)) if a1 > b1 else ((a0, a1), (b0, b1))
    split = min(max(math.floor(x), c_lo - 1), c_hi)  # c <= split: lo_line's rival wins
    return lin_sum(*lo_line, c_lo, split) + lin_sum(*hi_line, split + 1, c_hi)


_WEIGHT_MATMULS = ("attention_linear", "mlp", "output_head")  # the ops that turn the soft corner


def forward_pass(spec, hw, *, tp, pp, batch, new_tokens, context_before, w_bits, a_bits, kv_bits,
                 absorbed, e_bits=None, state_bits=32, also=(), dp=1, ep=1):
    """One forward pass of the whole pipeline for `batch` sequences, each adding new_tokens after
    context_before cached tokens (and, for a continuous-batching step, the groups in `also`, each
    (sequences, new_tokens, context_before, absorbed), sharing the same weight reads: their tokens
    join every matmul, each group's attention is costed on its own; sequences may be fractional,
    a steady-state mean), summed over the distinct layer kinds (layer_groups): time by
    component (seconds), total FLOPs and bytes per rank (weights and cache reads apart), the
    time-weighted bound, and each kind's time per layer. Stages run one after the other (one batch
    in flight). Each op is a roofline (Williams et al. 2009; the weight matmuls with the soft corner
    ROOFLINE_CORNER_P) plus a fixed launch gap per kernel;
    TP adds an all-reduce per block (Shoeybi et al. 2019 sec. 3; tp_allreduce_s), PP a hand-off
    per stage boundary.
    dp > 1: the stage is dp groups of tp GPUs with the attention replicated (data-parallel
    attention: SGLang --enable-dp-attention, vLLM --data-parallel-size), each group running
    1/dp of the sequences; the MoE layers take every group's tokens. ep = 1: the experts split
    over all tp x dp ranks (tensor-parallel), the tokens all-gathered before each MoE block and
    reduce-scattered after; ep = tp x dp: whole experts spread over the ranks, the tokens sent to
    their experts and back by two all-to-alls (dispatch at the activation bits, combine at 16;
    GShard, Lepikhin et al. 2021; DeepEP), the busiest rank's expert work scaled by
    hw["ep_imbalance"] or ep_imbalance's balls-into-bins figure. Times are one group's (groups run
    in parallel); batch and `also` count sequences over all groups."""
    F, B, F16 = hw["flops_per_s"], hw["bytes_per_s"], hw["attention_flops_per_s"]
    seq_groups = ((batch, new_tokens, context_before, absorbed),) + tuple(also)
    if dp > 1:  # one data-parallel group's share
        seq_groups = tuple((g[0] / dp,) + tuple(g[1:]) for g in seq_groups)
    ovh = hw["kernel_overhead_s"]
    n = sum(g[0] * g[1] for g in seq_groups)
    rows = sum(g[0] for g in seq_groups)  # sequences whose last position gets logits
    h = spec["hidden_size"]
    ab = a_bits / 8
    comp = {"attention_linear": 0.0, "attention_core": 0.0, "mlp": 0.0, "elementwise": 0.0,
            "output_head": 0.0, "tp_allreduce": 0.0, "pp_handoff": 0.0, "kernel_overhead": 0.0}
    tot = dict.fromkeys(("compute_s", "memory_s", "matmul_compute_s", "matmul_memory_s", "flops",
                         "bytes", "weight_bytes", "cache_read_bytes"), 0.0)
    act_bytes = n * h * max(ab, 2)  # the residual stream, and so TP/PP traffic, stays 16-bit
    t_ar = tp_allreduce_s(act_bytes, n=tp, hw=hw)
    moe, t_moe = None, t_ar  # the communication around one MoE block
    if dp > 1 or ep > 1:
        width = tp * dp
        moe = {"tokens": n * dp, "ep": ep, "etp": width // ep, "imbalance": 1.0}
        routed = [m for x, _, _ in layer_groups(spec) for m in x["mlp"] if m["kind"] != "dense"]
        picks = n * dp * max((expected_real_experts(m) for m in routed), default=0.0)
        moe["imbalance"] = (hw["ep_imbalance"] if hw.get("ep_imbalance") is not None
                            else ep_imbalance(ep=ep, assignments=picks))
        if ep > 1:  # dispatch + combine: each rank sends its 1/tp of the group's tokens
            k = max((m["topk"] for m in routed), default=0)
            if any(g[0] and g[1] > 1 for g in seq_groups):  # prompt tokens: the high-throughput kernels
                t_moe = sum(node_dedup_alltoall_s(tokens=n / tp, k=k, h=h, bytes_per_el=bpe, ep=ep, hw=hw)
                            for bpe in (ab, max(ab, 2))) + t_ar
            else:  # decode-only: the low-latency kernels, k copies per token
                t_moe = (group_collective_s("alltoall", size_bytes=n / tp * k * h * ab, n=ep, stride=1, hw=hw)
                         + group_collective_s("alltoall", size_bytes=n / tp * k * h * max(ab, 2), n=ep,
                                              stride=1, hw=hw)
                         + t_ar)  # and the tp group's all-reduce of the shared experts' partial sums
        else:  # experts split over every rank: gather all groups' tokens, scatter the sums back
            every = act_bytes * dp
            t_moe = sum(group_collective_s(op, size_bytes=every, n=width, stride=1, hw=hw)
                        for op in ("all_gather", "reduce_scatter"))
        comp["moe_comm"] = 0.0

    def add(name, fl, by, cnt, scale=1.0, cache=0.0):
        """Cost one op run cnt times (x scale: a stack's MoE factor; cache: the bytes of by that are
        KV-cache reads, streamed at hw["cache_bytes_per_s"]); returns its time for one run."""
        f_rate = F16 if name == "attention_core" else F  # attention math runs at the 16-bit rate
        by_t = by - cache * (1.0 - B / hw.get("cache_bytes_per_s", B)) if cache else by  # at B's rate
        t = scale * roofline_time_s(flops=fl, bytes_moved=by_t, flops_per_s=f_rate, bytes_per_s=B,
                                    corner_p=ROOFLINE_CORNER_P if name in _WEIGHT_MATMULS else None)
        comp[name] += cnt * t
        tot["compute_s"] += cnt * fl / f_rate
        tot["memory_s"] += cnt * by_t / B
        if name in ("attention_linear", "mlp"):
            tot["matmul_compute_s"] += cnt * fl / F
            tot["matmul_memory_s"] += cnt * by / B
        tot["flops"] += cnt * fl
        tot["bytes"] += cnt * by
        return t

    kinds, kernels, allreduces = [], 0, 0
    for layer, cnt, first in layer_groups(spec):
        t_layer = 0.0
        routed_block = any(m["kind"] != "dense" for m in layer["mlp"])
        for name, (fl, by, wby) in layer_costs(layer, h=h, tp=tp, num_tokens=n, w_bits=w_bits, e_bits=e_bits,
                                               a_bits=a_bits, moe=moe).items():
            t_layer += add(name, fl, by, cnt, scale=hw.get("moe_factor", 1.0) if name == "mlp" and routed_block
                           else 1.0)
            tot["weight_bytes"] += cnt * wby
        for attn in layer["attention"]:
            for g_seqs, g_new, g_ctx, g_abs in seq_groups:
                if not g_seqs:
                    continue
                pairs = step_pairs(attn, context_before=g_ctx, new_tokens=g_new)
                keys = cached_keys_read(attn, context_before=g_ctx)
                fl, by, rd = attention_core_costs(
                    attn, tp=tp, pairs=dict({k: g_seqs * v for k, v in pairs.items()}, sequences=g_seqs),
                    new_tokens=g_seqs * g_new, keys_read={k: g_seqs * v for k, v in keys.items()},
                    kv_bits=kv_bits, act_bits=a_bits, absorbed=g_abs, state_bits=state_bits,
                    per_head_kv=g_new == 1 and hw.get("per_head_kv_decode", False))
                t_layer += add("attention_core", fl, by, cnt, cache=rd if attn["span"] != "state" else 0.0)
                tot["cache_read_bytes"] += cnt * rd
        k_layer, ar_layer = layer_kernels(layer), layer_allreduces(layer)
        moe_blocks = sum(m["kind"] != "dense" for m in layer["mlp"]) if moe else 0
        kernels += cnt * k_layer
        allreduces += cnt * (ar_layer - moe_blocks)
        if moe_blocks:
            comp["moe_comm"] += cnt * moe_blocks * t_moe
        kinds.append({"layers": cnt, "first_layer": first,
                      "time_s_per_layer": t_layer + k_layer * ovh + (ar_layer - moe_blocks) * t_ar
                      + moe_blocks * t_moe})
    hb = max(w_bits, 16) / 8  # embedding/head kept at >= 16 bits
    head_w = spec["word_embed_proj_dim"] * spec["vocab_size"] / tp
    other_w = sum(spec["other_params"].values()) / tp  # model-level extras (Gemma 4's per-layer projection)
    row_f, row_b = logit_rows_costs(spec, rows=rows, tp=tp)
    add("output_head", row_f + 2 * n * other_w, (head_w + other_w) * hb
        + row_b + n * h * ab * 2, 1)  # head shard, fp32 logits out,
    tot["weight_bytes"] += (head_w + other_w) * hb                   # final norm and embedding rows
    comp["kernel_overhead"] = (kernels + 2) * ovh
    comp["tp_allreduce"] = allreduces * t_ar
    comp["pp_handoff"] = (pp - 1) * handoff_s(  # DeepSeek-V4 hands over hc_mult residual streams
        act_bytes * spec.get("residual_streams", 1), cross_node=hw.get("p2p_cross_node", False),
        hw=hw) if pp > 1 else 0.0
    return {"time_s": sum(comp.values()), "components_s": comp, "compute_s": tot["compute_s"],
            "memory_s": tot["memory_s"], "flops": tot["flops"], "bytes": tot["bytes"],
            "weight_bytes": tot["weight_bytes"], "cache_read_bytes": tot["cache_read_bytes"],
            "matmul_compute_s": tot["matmul_compute_s"], "matmul_memory_s": tot["matmul_memory_s"],
            "bound": "compute" if tot["compute_s"] >= tot["memory_s"] else "memory", "layer_kinds": kinds,
            "ep_imbalance": moe["imbalance"] if moe else 1.0}


# ======== llmcalc/serve/speculative.py ============================================================
# Speculative decoding and multi-token prediction: a draft proposes K tokens per decoding
# sequence, the target verifies them in one pass of K + 1 tokens, and the sequence keeps the
# accepted run plus one token of the target's own (Leviathan et al. 2023, "Fast Inference from
# Transformers via Speculative Decoding", sec. 3; Chen et al. 2023). Decode then runs at the speed of
# accepted tokens: TPOT = (verification step + draft) / tokens per step.
#
# The draft's cost by method: `mtp` the model's own multi-token-prediction module (DeepSeek-V3's,
# GLM-4.5's, Qwen3-Next's: one decoder layer of the model's last kind and the shared output head,
# run K times per step, as vLLM and SGLang reuse one MTP layer for K > 1); `eagle` an EAGLE head
# (one decoder layer of the target's shape and the output head, K times: EAGLE-3's draft for
# Llama-3.1-8B is one LlamaDecoderLayer); `draft` a smaller model given by its config, K passes;
# `ngram` prompt lookup on the host, no GPU work.

# Measured acceptance rates the script defaults to, by method (draft and ngram need --acceptance-rate:
# a draft model's rate depends on the pair, prompt lookup's on how much the output repeats the
# prompt; no figure carries over):
#   mtp: DeepSeek-V3 technical report (arXiv 2412.19437), sec. 5.4.3: "the acceptance rate of the
#     second token prediction ranges between 85% and 90% across various generation topics"; the
#     midpoint. The same section measures the result: 1.8 x the tokens per second.
#   eagle: EAGLE-3's head for Llama-3.1-8B-Instruct in vLLM V1 on MT-bench (vLLM issue #20780, chain
#     drafts at batch 1): mean acceptance lengths 2.36, 2.79, 3.08, 3.32, 3.46, 3.54 at K = 2..7, the
#     i.i.d. rates 0.769, 0.763, 0.755, 0.754, 0.749, 0.744 give them exactly (Leviathan eq. 1); 0.75.
#     EAGLE-1's head in the same runs: 2.10-2.47, i.e. 0.60-0.66 (give it with --acceptance-rate).
# Both speedups are judged in VALIDATION.md (DeepSeek-V3's MTP; vLLM #20780's EAGLE-1 and EAGLE-3).
DEFAULT_ACCEPTANCE = {"mtp": (0.875, "DeepSeek-V3 technical report sec. 5.4.3: 85-90% for the second token "
                                     "(midpoint)"),
                      "eagle": (0.75, "EAGLE-3, Llama-3.1-8B-Instruct on MT-bench in vLLM (issue #20780): "
                                      "acceptance lengths 2.36-3.54 at K 2-7, i.e. 0.74-0.77 per token")}
SPECULATIVE_METHODS = ("mtp", "eagle", "draft", "ngram")


def tokens_per_step(rates):
    """Expected tokens a sequence gains per verification step with per-position acceptance rates
    a_1..a_K (a_i: the chance that draft token i is accepted given that the ones before it were):
    1 + a_1 + a_1 a_2 + ... + a_1...a_K (the accepted run, then the target's own token; Leviathan
    et al. 2023, eq. 1 with a_i = alpha)."""
    out, run = 1.0, 1.0
    for a in rates:
        run *= a
        out += run
    return out


def speculative_decode_steps(*, output_tokens, tokens_per_step, whole):
    """Decode steps + 1 a request of o output tokens runs with speculative decoding: the first token
    from its prefill, the other o - 1 at the expected tokens_per_step per verification step,
    1 + (o - 1) / tokens_per_step (the mean; whole=True rounds the steps up, as a stepped
    simulation runs whole steps). Without speculation it is o."""
    n = (output_tokens - 1) / tokens_per_step
    return 1 + (math.ceil(n) if whole else n)


def acceptance_rates(text, k):
    """--acceptance-rate as K per-position rates: one value (every position alike, the i.i.d.
    assumption of Leviathan et al.) or K comma-separated values. Raises ValueError (one line)."""
    try:
        vals = [float(x) for x in str(text).split(",")]
    except ValueError:
        raise ValueError(f"--acceptance-rate {text!r}: give one number or {k} comma-separated numbers") from None
    if len(vals) not in (1, k):
        raise ValueError(f"--acceptance-rate has {len(vals)} values; give one or {k} (one per speculative token)")
    if any(not (0 <= v <= 1) or math.isnan(v) for v in vals):
        raise ValueError(f"--acceptance-rate values must be between 0 and 1, got {text}")
    return vals * k if len(vals) == 1 else vals


def draft_layer_spec(spec):
    """The model as one decoder layer of its last kind: what an MTP module or an EAGLE head runs
    per draft token (their embedding projection, 2h x h, is not costed: under 1/10 of a layer)."""
    return dict(spec, layers=[spec["layers"][-1]], num_layers=1)


def draft_step_s(info, hw, *, batch, context, tp, pp, bits, dp=1, ep=1):
    """The draft's time per verification step for `batch` decoding sequences at `context` cached
    tokens: K forward passes of one token each through the draft (info["draft_spec"]; none for
    ngram), plus the K extra logit rows the target's head computes to verify them (forward_pass
    costs one row per sequence). One stage (the draft runs beside the last pipeline stage)."""
    k = info["k"]
    if not batch:
        return 0.0
    t = 0.0
    if info["draft_spec"] is not None:
        dbits = dict(bits, e_bits=None) if info["method"] == "draft" else bits
        t = k * forward_pass(info["draft_spec"], hw, tp=tp, pp=1, batch=batch, new_tokens=1, context_before=context,
                             absorbed=True, dp=dp, ep=ep if info["method"] != "draft" else 1, **dbits)["time_s"]
    fl, by = logit_rows_costs(info["target_spec"], rows=k * batch / dp, tp=tp)
    t += roofline_time_s(flops=fl, bytes_moved=by, flops_per_s=hw["flops_per_s"], bytes_per_s=hw["bytes_per_s"])
    return t


# ======== llmcalc/serve/steady.py =================================================================
# Continuous batching in steady state: decode and prefill step times, the critical batch, mixed
# steps, and the concurrency a request rate needs.

def attention_decode_sum_s(attn, hw, *, tp, batch, kv_bits, a_bits, c_lo, c_hi, state_bits=32):
    """Exact sum over the decode steps that find c = c_lo .. c_hi tokens cached of one attention
    block's roofline time (attention_core_costs, absorbed). A step's cost is linear in the core's
    cached keys kc and, with an indexer, in c itself; kc = c (full), min(c, cap) with cap = w - 1
    (sliding) or top-k - 1 (DSA), or c mod C capped the same way (chunked: 0 .. C-1, then again).
    So the sum splits where kc stops growing and at chunk starts, and each piece is a max of two
    lines (sum_max_linear); full chunks without an indexer cost the same and are multiplied."""
    F16, B = hw["attention_flops_per_s"], hw["bytes_per_s"]
    kv_slow = 1.0 - B / hw.get("cache_bytes_per_s", B)  # cache reads' bytes less, at B's rate (forward_pass)
    ind = 1 if attn["index_topk"] else 0
    if attn["kind"] == "dsv4":  # window keys saturate at W; compressed entries grow by one per m tokens
        def step_s(c):
            k = cached_keys_read(attn, context_before=c)
            p = decode_keys_read(attn, context=c + 1)
            fl, by, rd = attention_core_costs(
                attn, tp=tp, pairs={k2: batch * v for k2, v in p.items()}, new_tokens=batch,
                keys_read={k2: batch * v for k2, v in k.items()}, kv_bits=kv_bits, act_bits=a_bits, absorbed=True,
                per_head_kv=hw.get("per_head_kv_decode", False))
            return roofline_time_s(flops=fl, bytes_moved=by - rd * kv_slow, flops_per_s=F16, bytes_per_s=B)
        if c_hi < c_lo:
            return 0.0
        if c_hi - c_lo < 256:  # exact, step by step
            return sum(step_s(c) for c in range(c_lo, c_hi + 1))
        # past the window the cost is linear in floor(c / m): the trapezoid over the steps, within one
        # compressed entry per step of the exact sum (every step costed would cost o calls)
        return (c_hi - c_lo + 1) * (step_s(c_lo) + step_s(c_hi)) / 2
    if attn["span"] == "state":  # a recurrent step costs the same at every context
        if c_hi < c_lo:
            return 0.0
        fl, by, _ = linear_mixer_core_costs(attn, tp=tp, pairs={}, new_tokens=batch, act_bits=a_bits,
                                            state_bits=state_bits)
        return (c_hi - c_lo + 1) * roofline_time_s(flops=fl, bytes_moved=by, flops_per_s=F16, bytes_per_s=B)

    def cost(kc, c):
        fl, by, rd = attention_core_costs(
            attn, tp=tp, pairs={"core": batch * (kc + 1), "indexer": batch * (c + 1) * ind},
            new_tokens=batch, keys_read={"core": batch * kc, "indexer": batch * c * ind},
            kv_bits=kv_bits, act_bits=a_bits, absorbed=True, per_head_kv=hw.get("per_head_kv_decode", False))
        return fl, by - rd * kv_slow

    f0, m0 = cost(0, 0)
    (fk, mk), (fc, mc) = [(f - f0, m - m0) for f, m in (cost(1, 0), cost(0, 1))]
    a0, ak, ac, b0, bk, bc = f0 / F16, fk / F16, fc / F16, m0 / B, mk / B, mc / B
    caps = ([attn["window"]] if attn["span"] == "sliding" else []) + ([attn["index_topk"]] if ind else [])
    cap = min(caps) - 1 if caps else None

    def piece(base, lo, hi):  # sum over c in [lo, hi] with kc = min(c - base, cap)
        knee = hi if cap is None else min(hi, base + cap)
        out = sum_max_linear(a0=a0 - ak * base, a1=ak + ac, b0=b0 - bk * base, b1=bk + bc,
                             c_lo=lo, c_hi=knee)
        if cap is not None:
            out += sum_max_linear(a0=a0 + ak * cap, a1=ac, b0=b0 + bk * cap, b1=bc,
                                  c_lo=max(lo, base + cap + 1), c_hi=hi)
        return out

    if c_hi < c_lo:
        return 0.0
    if attn["span"] != "chunked":
        return piece(0, c_lo, c_hi)
    C = attn["chunk"]
    q_lo, q_hi = c_lo // C, c_hi // C
    if q_lo == q_hi:
        return piece(q_lo * C, c_lo, c_hi)
    head = piece(q_lo * C, c_lo, q_lo * C + C - 1)
    tail = piece(q_hi * C, q_hi * C, c_hi)
    if ac == 0 and bc == 0:  # no c-dependent term: every full chunk costs the same
        middle = (q_hi - q_lo - 1) * piece(0, 0, C - 1)
    else:
        middle = sum(piece(q * C, q * C, q * C + C - 1) for q in range(q_lo + 1, q_hi))
    return head + middle + tail


def decode_total_s(spec, hw, *, tp, pp, batch, prompt_tokens, output_tokens, w_bits, a_bits, kv_bits,
                   e_bits=None, state_bits=32, dp=1, ep=1):
    """Exact sum of the o-1 decode steps: step j (1..o-1) finds c = s + j - 1 tokens cached and
    adds its own. Only attention depends on c; the rest of a step is the same every step. Each
    distinct attention kind's steps are summed in closed form (attention_decode_sum_s), so the
    cost is proportional to the layer kinds, not to L or o."""
    steps = output_tokens - 1
    if steps <= 0:
        return 0.0
    c_lo, c_hi = prompt_tokens, prompt_tokens + steps - 1  # cached tokens before each step
    base = forward_pass(spec, hw, tp=tp, pp=pp, batch=batch, new_tokens=1, context_before=0,
                        absorbed=True, w_bits=w_bits, a_bits=a_bits, kv_bits=kv_bits, e_bits=e_bits,
                        state_bits=state_bits, dp=dp, ep=ep)
    fixed = base["time_s"] - base["components_s"]["attention_core"]
    attn_s = 0.0
    for layer, cnt, _ in layer_groups(spec):
        for attn in layer["attention"]:
            attn_s += cnt * attention_decode_sum_s(attn, hw, tp=tp, batch=batch / dp, kv_bits=kv_bits,
                                                   a_bits=a_bits, c_lo=c_lo, c_hi=c_hi, state_bits=state_bits)
    return steps * fixed + attn_s


def critical_batch(spec, hw, *, tp, pp, context, w_bits, a_bits, kv_bits, matmuls_only,
                   limit=1 << 24, e_bits=None, state_bits=32, dp=1, ep=1, steps=None):
    """Smallest batch at which a decode step at `context` cached tokens has as much math time as
    memory time. matmuls_only: the weight matmuls (about F/B x 8/w_bits tokens, Pope et al. 2022
    sec. 3; later for MoE, whose touched experts grow with b); else the whole step, which with
    long contexts never turns (the KV-cache read grows with b as fast as the math): None. steps: a
    dict of decode steps by batch to share between the two searches of one layout (same arguments
    but matmuls_only), which then cost each batch's forward pass once."""
    def is_compute(b):
        r = None if steps is None else steps.get(b)
        if r is None:
            r = forward_pass(spec, hw, tp=tp, pp=pp, batch=b, new_tokens=1, context_before=context,
                             w_bits=w_bits, a_bits=a_bits, kv_bits=kv_bits, absorbed=True,
                             e_bits=e_bits, state_bits=state_bits, dp=dp, ep=ep)
            if steps is not None:
                steps[b] = r
        if matmuls_only:
            return r["matmul_compute_s"] >= r["matmul_memory_s"]
        return r["compute_s"] >= r["memory_s"]
    # The bisection below assumes the step only tips from memory- to compute-bound as b grows (math
    # grows with b; the reads grow with b, slower, or stop growing once every expert is touched), so
    # a step still memory-bound at the largest power of two the doubling would reach never turns:
    # one pass decides what the doubling would find after ~25.
    if not is_compute(1 << (limit.bit_length() - 1)):
        return None
    lo, hi = 0, 1
    while not is_compute(hi):
        lo, hi = hi, hi * 2
        if hi > limit:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if is_compute(mid) else (mid, hi)
    return hi


def mixed_step(spec, hw, *, tp, pp, decodes, decode_context, prefill_tokens, prompt_tokens, bits, dp=1, ep=1):
    """One continuous-batching engine step: `decodes` sequences add one token each after
    decode_context cached tokens, and `prefill_tokens` prompt tokens of requests still in prefill
    run in the same step (chunked prefill: Agrawal et al. 2024, "Sarathi-Serve", sec. 4; vLLM and
    TensorRT-LLM put decodes and prompt chunks in one batch). The prompt tokens are costed as that
    fraction of whole prompts of prompt_tokens (their attention pairs add up to a whole prompt's
    over its chunks); both may be fractional steady-state means. With speculative decoding
    (hw["speculative"]) each decode verifies K + 1 tokens and the draft's K passes are added
    (draft_step_s). Returns forward_pass's dict plus the stack's fixed cost per step
    (hw["step_overhead_s"]) in time_s."""
    also = (((prefill_tokens / prompt_tokens, prompt_tokens, 0, False),) if prefill_tokens > 0 else ())
    sp = hw.get("speculative")
    r = forward_pass(spec, hw, tp=tp, pp=pp, batch=decodes, new_tokens=sp["k"] + 1 if sp else 1,
                     context_before=decode_context, absorbed=True, also=also, dp=dp, ep=ep, **bits)
    draft = draft_step_s(sp, hw, batch=decodes, context=decode_context, tp=tp, pp=pp, bits=bits, dp=dp,
                         ep=ep) if sp else 0.0
    r = dict(r, time_s=r["time_s"] + hw["step_overhead_s"] + draft)
    r["components_s"] = dict(r["components_s"], step_overhead=hw["step_overhead_s"],
                             **({"speculative_draft": draft} if sp else {}))
    return r


def md1_wait_s(*, rho, service_s):
    """Mean wait in queue of an M/D/1 server (Poisson arrivals, deterministic service S) at load
    rho < 1: rho S / (2 (1 - rho)), the Pollaczek-Khinchine mean value formula with c_s = 0
    (Kleinrock 1975, vol. 1, ch. 5)."""
    return rho * service_s / (2 * (1 - rho))


def prompt_queue_wait_s(*, service_s, cycle_s, clients, open_loop):
    """Mean wait of a prompt for the others' prefills ahead of it: one server of deterministic
    service S. Open loop (Poisson arrivals at clients / cycle_s): the M/D/1 mean rho S / (2 (1 -
    rho)) (Pollaczek-Khinchine; Kleinrock 1975 sec. 5.5), at most all the others' service when
    rho >= 1. Closed loop: N = clients each cycling through the server and cycle_s - S elsewhere,
    mean value analysis (Reiser & Lavenberg 1980: R(n) = S (1 + Q(n-1)), X(n) = n / (R(n) + Z),
    Q(n) = X(n) R(n); past 4,096 clients the saturated asymptote R = N S - Z), which is exact for
    exponential service; its queueing delay R - S x (1 + c_s^2) / 2 = 1/2 for a deterministic one
    (the Allen-Cunneen scaling, Allen 1990 sec. 6; the same ratio as M/D/1 to M/M/1)."""
    if service_s <= 0:
        return 0.0
    if open_loop:
        rho = clients / cycle_s * service_s
        return (min(md1_wait_s(rho=rho, service_s=service_s), clients * service_s) if rho < 1 - 1e-9
                else clients * service_s)
    n_all = max(1, round(clients))
    think = max(cycle_s - service_s, 0.0)
    q = r = 0.0
    for n in range(1, min(n_all, 4096) + 1):
        r = service_s * (1 + q)
        q = n / (r + think) * r
    if n_all > 4096:
        r = max(r, n_all * service_s - think)
    return (r - service_s) / 2


def steady_state(spec, hw, *, tp, pp, concurrency, prompt_tokens, output_tokens, token_budget,
                 bits, open_loop=False, dp=1, ep=1):
    """Continuous batching in steady state with `concurrency` requests in flight (a closed loop: a
    finished request is replaced at once, as benchmark clients with a fixed concurrency do), each
    with s prompt and o output tokens, and at most token_budget tokens per engine step (decodes
    first, prompt chunks fill the rest: vLLM's max_num_batched_tokens, TensorRT-LLM's
    max_num_tokens). A fluid model of the mean step, not a simulation:
      * r requests finish per step; each spends W steps from arrival to its first token and o - 1
        decoding (Little's law, C = r (W + o - 1)); so a step holds r (o - 1) decodes and r s
        prompt tokens, and r (s + o - 1) <= token_budget caps r (past it requests queue: W grows);
      * a request's own prompt takes W_p = s / (token_budget - decodes) steps (at least 1); the
        other C - 1 requests are spread over their cycle (decoding a (o-1)/(W+o-1) share of it);
      * TPOT = the mean step a decoding request shares with the others' decodes and prompt chunks;
        TTFT = W_p steps carrying its own prompt and W - W_p steps of waiting at the mean step, plus
        for an open loop half a mean step (the step running when it arrives).
    Decode contexts are the mean over a request's decode steps, s + (o - 2) / 2 (exact for full
    attention, whose cost is linear in the context). With dp data-parallel attention groups, each
    group schedules its C / dp requests under its own budget, all groups alike (the steps' batches
    are dp times one group's). With pp > 1 the requests split over min(pp, C) micro-batches in
    flight (vLLM's virtual engines, one scheduler and budget each): while one runs on a stage the
    others run on the rest, so a micro-batch's step is forward_pass over its own requests with the
    stages in turn, and the replica serves all of them at once. Returns the times, the step's
    composition (one group's, one micro-batch's) and the steps themselves."""
    engines = min(pp, concurrency / dp) if pp > 1 else 1.0
    engines = max(engines, 1.0)
    C, s, o, K = concurrency / (dp * engines), prompt_tokens, output_tokens, token_budget
    ctx = s + max(o - 2, 0) // 2
    # a closed loop's request shares the engine with C - 1 others; an open loop's arrival finds the
    # time-average number in flight (Poisson arrivals see time averages, Wolff 1982)
    others = C if open_loop else C - 1

    def solve(w):
        share = (o - 1) / (w + o - 1)  # of a request's cycle spent decoding
        d_other, p_other = others * share, others * s / (w + o - 1)
        w_p = max(1.0, s / max(K - d_other, 1.0))
        return w_p, d_other, p_other

    w = max(1.0, s / K)
    for _ in range(60):  # W = max(W_p(W), the budget's floor); a contraction in practice
        w_p, d_other, p_other = solve(w)
        w_new = max(w_p, C * (s + o - 1) / K - (o - 1))
        if abs(w_new - w) <= 1e-9 * w_new:
            break
        w = w_new
    w_p, d_other, p_other = solve(w)
    kw = dict(tp=tp, pp=pp, decode_context=ctx, prompt_tokens=s, bits=bits, dp=dp, ep=ep)
    dec = mixed_step(spec, hw, decodes=dp * (1 + d_other if o > 1 else d_other), prefill_tokens=dp * p_other, **kw)
    pre = mixed_step(spec, hw, decodes=dp * d_other, prefill_tokens=dp * (p_other + s / w_p), **kw)
    mean_step = (dec["time_s"] * (o - 1) + pre["time_s"] * w_p) / (o - 1 + w_p)
    # an open-loop arrival joins at the next step boundary: it comes at a random instant of a busy
    # engine, on average half-way through the running step (Poisson arrivals see time averages,
    # Wolff 1982; the mean residual of near-constant steps, E[S^2] / 2E[S], Kleinrock 1975 sec.
    # 5.2). A closed-loop client resubmits at its own request's step boundary, so its wait hangs
    # on the client's round trip, which is not modelled: none is added
    residual = mean_step / 2 if open_loop else 0.0
    ttft = residual + w_p * pre["time_s"] + max(0.0, w - w_p) * mean_step
    tpot = dec["time_s"] if o > 1 else pre["time_s"]
    e2e = ttft + (o - 1) * tpot
    # The fluid mean spreads the others' prompts evenly over the steps; they come whole, at random
    # instants, so a prompt that arrives while another one's prefill runs waits for it. The prompts
    # queue at one server whose service is the time a prompt adds to a step (w_p x (prompt step less
    # the same step without it)); the wait is an open loop's M/D/1 mean (Pollaczek-Khinchine,
    # Kleinrock 1975 sec. 5.5) at the rate C / E2E, or a closed loop's C clients cycling through it
    # and E2E - service elsewhere (mean value analysis, Reiser & Lavenberg 1980; throughput never
    # falls as C grows). A budget-bound engine already queues prompts in the fluid mean: none added.
    prompt_wait = 0.0
    if not w > w_p * (1 + 1e-9) and others > 0:
        alone = mixed_step(spec, hw, decodes=dp * d_other, prefill_tokens=dp * p_other, **kw)
        prompt_wait = prompt_queue_wait_s(service_s=w_p * max(pre["time_s"] - alone["time_s"], 0.0),
                                          cycle_s=e2e, clients=C, open_loop=open_loop)
        ttft, e2e = ttft + prompt_wait, e2e + prompt_wait
    return {"ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e, "steps_to_first_token": w, "arrival_wait_s": residual,
            "prompt_queue_wait_s": prompt_wait,
            "prompt_steps": w_p, "queue_steps": max(0.0, w - w_p), "decodes_per_step": (1 if o > 1 else 0) + d_other,
            "prompt_tokens_per_step": p_other, "requests_per_s": concurrency / e2e,
            "budget_bound": w > w_p * (1 + 1e-9), "decode_step": dec, "prompt_step": pre}


def concurrency_for_rate(spec, hw, *, tp, pp, rate, prompt_tokens, output_tokens, token_budget, bits,
                         limit, dp=1, ep=1):
    """The mean concurrency an open loop of `rate` requests/s keeps in flight: the C at which the
    engine's throughput C / E2E(C) (steady_state with open_loop; Little's law) equals the rate,
    found by bisection on [0, limit] (the throughput grows with C). None when even `limit` requests
    (the KV pool) serve less than the rate: more than the engine sustains. A fluid mean: no
    queueing from the arrivals' randomness is added (stated). Returns (C, its steady state)."""
    def state(c):
        return steady_state(spec, hw, tp=tp, pp=pp, concurrency=c, prompt_tokens=prompt_tokens,
                            output_tokens=output_tokens, token_budget=token_budget, bits=bits, open_loop=True,
                            dp=dp, ep=ep)
    top = state(limit)
    if limit / top["e2e_s"] < rate:
        return None, top
    lo, hi = 0.0, float(limit)
    for _ in range(60):  # C/E2E(C) = rate; 60 halvings reach 1e-18 of the pool
        mid = (lo + hi) / 2
        if mid / state(mid)["e2e_s"] < rate:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-9 * hi:
            break
    return hi, state(hi)


# ======== llmcalc/serve/simulate.py ===============================================================
# A finite benchmark run simulated step by step (--num-requests): arrivals, ramp-up, queueing and
# drain, with the statistics benchmark clients report.

def benchmark_arrivals(*, n, rate, arrivals, seed):
    """Arrival times (s) of a benchmark client's n requests at `rate` per second: the first at 0,
    then gaps drawn from an exponential of mean 1 / rate (Poisson arrivals, as vLLM's
    benchmark_serving.py sends at its default burstiness 1; seeded, so a run repeats) or all equal
    to 1 / rate (`uniform`); rate inf sends all n at once (QPS = INF in TensorRT-LLM's tables)."""
    if math.isinf(rate):
        return [0.0] * n
    import random  # only a simulated benchmark needs it (start-up time)
    draw = random.Random(seed).expovariate if arrivals == "poisson" else None
    times, t = [], 0.0
    for _ in range(n):
        times.append(t)
        t += draw(rate) if draw else 1.0 / rate
    return times


def _percentile(values, q, presorted=False):
    """The q-th percentile of values, linear between order statistics (numpy's default)."""
    v = values if presorted else sorted(values)
    x = (len(v) - 1) * q / 100
    lo = math.floor(x)
    return v[lo] + (v[min(lo + 1, len(v) - 1)] - v[lo]) * (x - lo)


# A simulation whose pace says it would run past this is stopped, saying how long it would take.
SIMULATION_LIMIT_S = 120.0


class SimulationTooLong(Exception):
    """The run would take more than SIMULATION_LIMIT_S: (seconds left, requests done, requests)."""


def report_progress(progress, *, started, done, n, units):
    """Say how far a simulation is and how long it has left at the pace so far; raise
    SimulationTooLong past SIMULATION_LIMIT_S. Returns the time it reported at."""
    import time  # only a simulated benchmark needs it (start-up time)
    now = time.monotonic()
    left = (n - done) * (now - started) / max(done, 1)
    if left > SIMULATION_LIMIT_S:
        raise SimulationTooLong(left, done * units, n * units)
    progress(f"simulating the benchmark: {done * units:,} of {n * units:,} requests done, "
             f"about {left:,.0f} s left")
    return now


def simulate_benchmark(spec, hw, *, tp, num_requests, prompt_tokens, output_tokens, token_budget, run_cap,
                       bits, rate=None, concurrency=None, arrivals="poisson", seed=0, pp=1, dp=1, ep=1,
                       progress=None, output_steps=None):
    """A finite benchmark run stepped through, as a client such as vLLM's benchmark_serving.py or
    TensorRT-LLM's Triton benchmark measures one: num_requests requests of s prompt and o output
    tokens, sent at `rate` per second (benchmark_arrivals) or by `concurrency` clients that each
    send their next request when the last one returns (closed loop). The engine is the steady
    state's scheduler, stepped instead of averaged:
      * it admits waiting requests in arrival order while fewer than run_cap run (the KV pool at
        s + o tokens each, or the stack's running cap): a request's whole cache is reserved when
        it is admitted, TensorRT-LLM's GUARANTEED_NO_EVICT policy (vLLM admits on the prompt's
        blocks and may preempt later: not modelled);
      * a step runs one token of every decoding request (run_cap is held to token_budget, as
        vLLM requires max_num_seqs <= max_num_batched_tokens), then prompt chunks of the admitted
        requests in arrival order up to token_budget tokens in all (chunked prefill,
        Sarathi-Serve); a request's first token comes out of the step that ends its prompt, the
        rest one per step; a step costs mixed_step at its decodes' mean context;
      * a closed loop of identical requests stays in step: the clients start together, so their
        requests finish together and their next prompts share steps (the steady state spreads
        them over the cycle instead);
      * decode-only steps repeat unchanged until the next finish or admissible arrival, and are
        costed together at their mean context (exact while the step time is linear in the
        context, as full attention's is);
      * with dp data-parallel attention groups each group gets num_requests / dp requests
        (rounded up) at rate / dp (or concurrency / dp clients), all groups alike, as
        steady_state assumes; with pp stages the requests split over min(pp, requests / dp)
        micro-batches in flight the same way (vLLM's virtual engines, one scheduler each), a
        micro-batch's step running its stages in turn while the others use the rest (run_cap is
        the whole replica's KV pool, shared evenly).
    The stack's fixed cost per request (hw["request_overhead_s"]) adds to each TTFT and end-to-end
    time and delays a closed-loop client's next request. The duration runs from the first request
    sent to the last answer, and throughput = requests x o / duration, as benchmark clients report
    it: the ramp-up and the drain are in it. Returns the means, medians and 99th percentiles per
    request, the duration, the throughputs and the mean step's composition."""
    import collections, heapq, time  # noqa: E401 (only a simulated benchmark needs them: start-up time)
    s, o = prompt_tokens, output_tokens
    o_run = output_steps or o  # speculative decoding: a request's decode steps + 1, fewer than o
    K = token_budget if math.isfinite(token_budget) else 10 ** 18  # inf: every prompt whole
    closed = concurrency is not None
    engines = max(1, min(pp, (concurrency if closed else num_requests) // dp))  # micro-batches
    units = dp * engines  # alike: one is simulated
    n = math.ceil(num_requests / units)
    run_cap = max(1, min(run_cap // units, K))  # a step decodes every running request within its budget
    req_s = hw["request_overhead_s"]
    if closed:
        pending = [0.0] * min(max(1, math.ceil(concurrency / units)), n)  # a heap of arrival times
        sent = len(pending)
    else:
        pending = benchmark_arrivals(n=n, rate=rate / units, arrivals=arrivals, seed=seed)
        sent = n
    heapq.heapify(pending)
    kw = dict(tp=tp, pp=pp, prompt_tokens=s, bits=bits, dp=dp, ep=ep)
    memo = {}

    def step_s(d, ctx, p):
        key = (d, round(ctx), p)
        if key not in memo:
            memo[key] = mixed_step(spec, hw, decodes=dp * d, decode_context=key[1], prefill_tokens=dp * p,
                                   **kw)["time_s"]
        return memo[key]

    waiting = collections.deque()  # arrival times of requests sent, not yet admitted
    prefilling = collections.deque()  # [arrival, prompt tokens done]: admitted, in arrival order
    # decoding requests in cohorts that got their first token in the same step, oldest first:
    # [that step's number, its end time, the members' arrival times]; all finish together
    cohorts = collections.deque()
    d = first_sum = n_run = step = done = most = 0  # first_sum: sum over decoders of their cohort's step
    ttft, tpot, e2e = [], [], []
    t, dec_tokens, pre_tokens, duration = 0.0, 0, 0, 0.0
    started = last_shown = time.monotonic()  # progress lines once the run takes over a second

    def finish(first_step, first_t, arrivals):
        nonlocal d, first_sum, n_run, done, sent, duration
        m = len(arrivals)
        d, first_sum, n_run, done = d - m, first_sum - m * first_step, n_run - m, done + m
        ttft.extend(first_t - a + req_s for a in arrivals)
        e2e.extend(t - a + req_s for a in arrivals)
        if o > 1:
            tpot.extend([(t - first_t) / (o - 1)] * m)
        duration = t + req_s
        for _ in range(min(m, n - sent) if closed else 0):
            heapq.heappush(pending, t + req_s)
            sent += 1

    while done < n:
        while pending and pending[0] <= t:
            waiting.append(heapq.heappop(pending))
        while waiting and n_run < run_cap:
            prefilling.append([waiting.popleft(), 0])
            n_run += 1
        if not n_run:
            t = pending[0]  # idle until the next request comes
            continue
        most = max(most, n_run)
        room, chunks = K - d, []
        for r in prefilling:
            if room <= 0:
                break
            chunks.append(min(s - r[1], room))
            room -= chunks[-1]
        p = sum(chunks)
        ctx = s + step - first_sum / d if d else s  # a decoder's context: s + its tokens out - 1
        k = 1
        if not chunks:  # decode only: unchanged until a finish or an arrival that can be admitted
            k = o_run - (step - cohorts[0][0] + 1)
            if pending and n_run < run_cap:
                k = min(k, max(1, math.ceil((pending[0] - t) / step_s(d, ctx, 0))))
        t += k * step_s(d, ctx + (k - 1) / 2, p)
        step, dec_tokens, pre_tokens = step + k, dec_tokens + k * d, pre_tokens + p
        while cohorts and step - cohorts[0][0] + 1 >= o_run:
            finish(*cohorts.popleft())
        new = []
        for c in chunks:
            if c < s - prefilling[0][1]:  # a partial chunk: only the step's last can be one
                prefilling[0][1] += c
                break
            new.append(prefilling.popleft()[0])
        if new:
            d, first_sum = d + len(new), first_sum + len(new) * step
            if o_run == 1:
                finish(step, t, new)
            else:
                cohorts.append((step, t, new))
        if progress and time.monotonic() - last_shown > 1.0:
            last_shown = report_progress(progress, started=started, done=done, n=n, units=units)
    total = n * units
    mean_dec, mean_pre = dec_tokens / step, pre_tokens / step
    ctx = s + max(o - 2, 0) // 2
    dec = mixed_step(spec, hw, decodes=dp * mean_dec, decode_context=ctx, prefill_tokens=dp * mean_pre, **kw)
    pre = mixed_step(spec, hw, decodes=dp * mean_dec, decode_context=ctx,
                     prefill_tokens=dp * max(mean_pre, min(s, K)), **kw)
    def mean(xs):
        return sum(xs) / len(xs)
    tpots = tpot or [pre["time_s"]]  # o = 1: no decode step; the step that ends a prompt stands in
    return {"ttft_s": mean(ttft), "tpot_s": mean(tpots), "e2e_s": mean(e2e),
            "ttft_median_s": _percentile(ttft, 50), "ttft_p99_s": _percentile(ttft, 99),
            "tpot_median_s": _percentile(tpots, 50), "tpot_p99_s": _percentile(tpots, 99),
            "e2e_median_s": _percentile(e2e, 50), "e2e_p99_s": _percentile(e2e, 99),
            "ttft_p90_s": _percentile(ttft, 90), "tpot_p90_s": _percentile(tpots, 90), "e2e_p90_s": _percentile(e2e, 90),
            "num_requests": total, "duration_s": duration, "requests_per_s": total / duration,
            "mean_in_flight": units * sum(e2e) / duration, "most_running": units * most, "engine_steps": step,
            "micro_batches": engines,
            "decodes_per_step": mean_dec, "prompt_tokens_per_step": mean_pre,
            "decode_step": dec, "prompt_step": pre}


def _bucket(x, _log=math.log):
    """x rounded for the step-cost memo: exact below 64, else to a grid 1/32 apart in log (3%
    steps), so a mix's many contexts and chunk sizes cost a few hundred distinct passes. Returns
    the grid index (x itself below 64); _grid_value gives the value back."""
    return int(x + 0.5) if x < 63.5 else 100_000 + int(_log(x) * 32 + 0.5)


def _grid_value(i):
    """The value of a _bucket index."""
    return i if i < 100_000 else round(math.exp((i - 100_000) / 32))


def simulate_requests(spec, hw, *, tp, requests, token_budget, pool_tokens, max_running, bits, rate=None,
                      concurrency=None, arrivals="poisson", seed=0, pp=1, dp=1, ep=1, progress=None, memo=None,
                      host_tokens=0, host_s_per_token=0.0, scheduler_steps=1):
    """A benchmark run of requests that differ (workload.py: a drawn length mix or a trace), each
    (arrival_s, s_i, o_i, prefix_key, prefix_tokens), stepped through with simulate_benchmark's
    scheduler, per request instead of per cohort (_run_mix):
      * the KV pool counts tokens (pool_tokens per data-parallel group and micro-batch, a
        request's cache at its s_i + o_i: reserved whole on admission, TensorRT-LLM's
        GUARANTEED_NO_EVICT); at most max_running run at once; admission in arrival order stops at
        the first request that does not fit (first come, first served);
      * prefix caching and the host tier (host_tokens > 0): _TokenPool;
      * a step's prompt chunks are costed as one group of equal chunks at their mean length and
        mean cached context, its decodes at their mean context; step costs are memoised on a grid
        3% apart (_mix_step_cost);
      * multi-step scheduling (vLLM 0.6's --num-scheduler-steps N): once decodes run, the scheduler
        runs N decode steps before it looks again, so an arrival waits for the window to end; a
        step with prompt work opens a new window;
      * arrivals: the trace's own times, or `rate` per second (benchmark_arrivals), or
        `concurrency` clients each sending its next request when the last returns; with dp
        data-parallel groups and pp micro-batches every units-th request goes to the one unit
        simulated (at rate / units), as simulate_benchmark splits alike requests.
    Returns simulate_benchmark's statistics (means, medians, p90 and p99 over the mix) plus the
    prefix cache's: hits, prompt tokens computed and skipped, evictions, most pool tokens held."""
    K = token_budget if math.isfinite(token_budget) else 10 ** 18
    closed = concurrency is not None
    engines = max(1, min(pp, (concurrency if closed else len(requests)) // dp))
    units = dp * engines
    reqs = requests[::units] if units > 1 else requests
    sp = hw.get("speculative")
    # decode steps + 1 each request runs: o_i, or with speculative decoding its o_i - 1 tokens at
    # the expected tokens per verification step (rounded up)
    o_run = [speculative_decode_steps(output_tokens=r[2], tokens_per_step=sp["tokens_per_step"], whole=True)
             if sp else r[2] for r in reqs]
    pending, sent = _mix_arrivals(reqs, concurrency=concurrency, units=units, rate=rate,
                                  arrivals=arrivals, seed=seed)
    memo = {} if memo is None else memo  # step costs (a caller running one layout again: its own)
    step_s = _mix_step_cost(spec, hw, tp=tp, pp=pp, dp=dp, ep=ep, bits=bits, memo=memo)
    pool = _TokenPool(reqs, free=pool_tokens / units, host_tokens=host_tokens,
                      host_s_per_token=host_s_per_token)
    run = _run_mix(reqs, o_run, pool, step_s, pending=pending, sent=sent, closed=closed, K=K,
                   run_cap=max(1, min(max_running // units if max_running else 10 ** 9, K)),
                   req_s=hw["request_overhead_s"], scheduler_steps=scheduler_steps,
                   progress=progress, units=units, pool_tokens=pool_tokens)
    return _mix_statistics(spec, hw, reqs, run, pool, tp=tp, pp=pp, dp=dp, ep=ep, bits=bits, K=K,
                           units=units, engines=engines, pool_tokens=pool_tokens,
                           host_s_per_token=host_s_per_token)


def _mix_arrivals(reqs, *, concurrency, units, rate, arrivals, seed):
    """(a heap of (arrival time, request index), requests sent so far) of the unit simulated: the
    closed loop's first requests at 0, else every request at its drawn or traced time."""
    import heapq  # only a simulated benchmark needs it (start-up time)
    n = len(reqs)
    if concurrency is not None:
        pending = [(0.0, i) for i in range(min(max(1, math.ceil(concurrency / units)), n))]
    else:
        if rate is not None:
            times = benchmark_arrivals(n=n, rate=rate / units, arrivals=arrivals, seed=seed)
        else:
            times = [r[0] for r in reqs]
        pending = [(times[i], i) for i in range(n)]
    heapq.heapify(pending)
    return pending, len(pending)


def _mix_step_cost(spec, hw, *, tp, pp, dp, ep, bits, memo):
    """step_s(d, ctx, chunks, p, pctx): the seconds of one engine step of a mix with d decodes at
    mean context ctx and `chunks` prompt chunks of p tokens in all at mean cached context pctx,
    memoised in `memo` on the _bucket grid."""
    sp = hw.get("speculative")
    step_oh = hw["step_overhead_s"]
    kw = dict(tp=tp, pp=pp, dp=dp, ep=ep, **bits)

    def pass_s(batch, new, before, absorbed, also=()):
        r = forward_pass(spec, hw, batch=dp * batch, new_tokens=new, context_before=before, absorbed=absorbed,
                         also=tuple((dp * g[0],) + g[1:] for g in also), **kw)
        return r["time_s"], r["components_s"]["attention_core"]

    vt = sp["k"] + 1 if sp else 1  # tokens a decode runs per step (the verification of K drafts)

    grid = {}  # _bucket of whole numbers, looked up

    def bucket(x):
        x = int(x + 0.5)
        b = grid.get(x)
        if b is None:
            b = grid[x] = _bucket(x)
        return b

    def step_s(d, ctx, chunks, p, pctx):
        """One step: the weights' and the stack's part, set by the step's tokens and logit rows,
        plus each group's attention (forward_pass sums them, a roofline per group), plus a
        speculative draft's passes."""
        key = (bucket(d * vt + p), bucket(d + chunks), p > 0)
        t = memo.get(key)
        if t is None:  # rows - 1 decodes and one sequence carrying the other tokens, attention aside
            n, rows = _grid_value(key[0]), _grid_value(key[1])
            one = max(1, n - rows + 1)
            total, attn = pass_s(rows - 1, 1, 0, True, ((1, one, 0, one == 1),)) if rows > 1 else \
                pass_s(1, n, 0, n == 1)
            t = memo[key] = total - attn + step_oh
        if d:
            key = ("d", bucket(d), bucket(ctx))
            a = memo.get(key)
            if a is None:
                dd, cc = _grid_value(key[1]), _grid_value(key[2])
                a = memo[key] = pass_s(dd, vt, cc, True)[1] + (
                    draft_step_s(sp, hw, batch=dp * dd, context=cc, tp=tp, pp=pp, bits=bits, dp=dp, ep=ep)
                    if sp else 0.0)
            t += a
        if chunks:
            key = ("p", bucket(chunks), bucket(p / chunks), bucket(pctx))
            a = memo.get(key)
            if a is None:
                a = memo[key] = pass_s(_grid_value(key[1]), max(1, _grid_value(key[2])), _grid_value(key[3]),
                                       False)[1]
            t += a
        return t
    return step_s


class _TokenPool:
    """The KV pool of the unit simulated, in tokens, with its cached prefixes and host tier:
      * prefix caching (vLLM's automatic prefix caching, SGLang's RadixAttention): a prefix key
        names a cached token sequence; a request finds min(prefix_tokens, its length) tokens of it
        (at most s_i - 1), computes only the rest of its prompt, attending to the cached ones (its
        chunks cost as prompt tokens after that context), and reserves only its own tokens. The
        first request of a key caches its prefix from the end of its prompt, and every request of
        a key leaves its whole sequence (prompt and output) cached under it when done, so the next
        turn of a conversation finds its history. A key holds pool tokens until evicted, least
        recently used first among those no running request reads, when an admission needs room
        (one key per request: a system prompt shared across conversations and each conversation's
        own history are not both expressed);
      * a host tier (host_tokens > 0, KV offload): a prefix the pool evicts moves to host memory
        (least recently used dropped past host_tokens; the copy out is written behind, not timed);
        a request whose key is only there brings it back into the pool, the step that starts its
        prompt waiting host_s_per_token per token of it (not overlapped with the step's layers)."""

    __slots__ = ("reqs", "free", "host_tokens", "host_s_per_token", "reserved", "uses", "cache",
                 "held", "most_held", "hits", "evictions", "host", "host_held", "host_hits",
                 "loaded", "load_wait", "computed", "skipped")

    def __init__(self, reqs, *, free, host_tokens, host_s_per_token):
        import collections  # only a simulated benchmark needs it (start-up time)
        n = len(reqs)
        self.reqs, self.free = reqs, free  # free: tokens of the unit's pool
        self.host_tokens, self.host_s_per_token = host_tokens, host_s_per_token
        self.reserved = [0] * n  # pool tokens each running request holds
        self.uses = [None] * n   # the cached prefix a running request reads
        # prefix key -> [tokens cached, running readers]; oldest use first
        self.cache = collections.OrderedDict()
        self.held = self.most_held = self.hits = self.evictions = 0
        self.host = collections.OrderedDict()  # the host tier: key -> tokens; oldest use first
        self.host_held = self.host_hits = self.loaded = 0
        self.load_wait = 0.0  # seconds of host loads the next step waits for
        self.computed = self.skipped = 0

    def evict(self, k):
        """The pool drops prefix k: to the host tier when there is one."""
        n_k = self.cache.pop(k)[0]
        self.free, self.held, self.evictions = self.free + n_k, self.held - n_k, self.evictions + 1
        if self.host_tokens and n_k <= self.host_tokens:
            host = self.host
            self.host_held += n_k - host.pop(k, 0)
            host[k] = n_k
            while self.host_held > self.host_tokens:
                self.host_held -= host.popitem(last=False)[1]

    def admit(self, i):
        """Admit request i if the pool has room (evicting unused prefixes): its [index, prompt
        tokens still to compute, cached context], or None if it does not fit."""
        _, s_i, o_i, key, p_i = self.reqs[i]
        cache, host = self.cache, self.host
        entry = cache.get(key) if key is not None else None
        back = 0 if entry or key is None or key not in host else host[key]  # to bring back from the host
        h = min(p_i, entry[0] if entry else back, s_i - 1)  # cached tokens it finds (one of its own at least)
        need = s_i + o_i - h + back
        if back:
            host.move_to_end(key)  # the pool's evictions below push older prefixes out of the host first
        if need > self.free:
            for k in [k for k, e in cache.items() if e[1] == 0 and k != key]:
                if need <= self.free:
                    break
                self.evict(k)
        if need > self.free:
            return None
        if back and key not in host:  # pushed out of a small host tier just now: computed instead
            back, h, need = 0, 0, s_i + o_i
        if back:  # the host's copy comes back into the pool as the key's cached sequence
            self.host_held -= host.pop(key)
            self.free, self.held, need = self.free - back, self.held + back, need - back
            self.most_held = max(self.most_held, self.held)
            entry = cache[key] = [back, 0]
            self.host_hits, self.loaded = self.host_hits + 1, self.loaded + back
            self.load_wait += back * self.host_s_per_token
        self.free -= need
        self.reserved[i] = need
        if entry:
            entry[1] += 1
            cache.move_to_end(key)
            self.uses[i] = key
        self.hits += h > 0
        self.computed, self.skipped = self.computed + s_i - h, self.skipped + h
        return [i, s_i - h, h]

    def grow(self, i, upto):
        """Request i's first `upto` tokens become its prefix key's cached sequence (from the pool
        tokens it reserved) where the entry is shorter."""
        key = self.reqs[i][3]
        entry = self.cache.get(key)
        if entry is None:
            entry = self.cache[key] = [0, 0]
        if self.uses[i] is None:
            entry[1] += 1
            self.uses[i] = key
        self.cache.move_to_end(key)
        moved = min(max(0, upto - entry[0]), self.reserved[i])
        if moved:
            entry[0] += moved
            self.reserved[i] -= moved
            self.held += moved
            self.most_held = max(self.most_held, self.held)

    def release(self, i):
        """Request i is done: its whole sequence stays cached under its prefix key (the next turn
        of a conversation finds it), the rest of its tokens go back to the pool."""
        key = self.reqs[i][3]
        if key is not None:
            self.grow(i, self.reqs[i][1] + self.reqs[i][2])
            self.cache[key][1] -= 1
            self.uses[i] = None
        self.free += self.reserved[i]


def _run_mix(reqs, o_run, pool, step_s, *, pending, sent, closed, K, run_cap, req_s,
             scheduler_steps, progress, units, pool_tokens):
    """The mix's engine loop (simulate_requests): arrivals wait, admissions take pool tokens, each
    step runs every decode and prompt chunks up to K tokens (none inside a multi-step window), and
    finished requests free their tokens (and send a closed-loop client's next request). Returns
    {ttft, e2e, tpot (lists), steps, decode and prompt tokens run, duration, most running}."""
    import collections, heapq, time  # noqa: E401 (only a simulated benchmark needs them)
    n = len(reqs)
    arrival, first_t, first_step, ttft, e2e, tpot = [0.0] * n, [0.0] * n, [0] * n, [], [], []
    since = scheduler_steps  # decode steps since the scheduler last looked (multi-step scheduling)
    waiting = collections.deque()
    prefilling = collections.deque()  # [index, prompt tokens still to compute, cached context]
    finishing = []  # heap of (step of the last token, index)
    d = base = n_run = step = done = most = 0  # base: sum over decoders of s_i - their first step
    t, dec_tokens, pre_tokens, duration = 0.0, 0, 0, 0.0
    started = last_shown = time.monotonic()
    while done < n:
        while pending and pending[0][0] <= t:
            a, i = heapq.heappop(pending)
            arrival[i] = a
            waiting.append(i)
        looks = since >= scheduler_steps or not d  # the scheduler admits only between windows
        while looks and waiting and n_run < run_cap:
            row = pool.admit(waiting[0])
            if row is None:
                break
            prefilling.append(row)
            waiting.popleft()
            n_run += 1
        if not n_run:
            if not pending:  # nothing runs and the head cannot fit: one request larger than the pool
                raise ValueError(f"a request of {reqs[waiting[0]][1] + reqs[waiting[0]][2]:,} tokens does not fit "
                                 f"the KV pool of {pool_tokens / units:,.0f} tokens")
            t = max(t, pending[0][0])
            continue
        most = max(most, n_run)
        room, chunks, ctx_sum = (K - d if looks else 0), [], 0
        for r in prefilling:
            if room <= 0:
                break
            c = min(r[1], room)
            chunks.append(c)
            ctx_sum += r[2]
            room -= c
        p = sum(chunks)
        ctx = base / d + step if d else 0
        k = 1
        if not chunks:
            k = finishing[0][0] - step
            if scheduler_steps > 1:  # runs to the window's end (or a finish): arrivals wait for it
                since = 0 if since >= scheduler_steps else since
                k = min(k, scheduler_steps - since)
            elif pending and not waiting and n_run < run_cap:
                k = min(k, max(1, math.ceil((pending[0][0] - t) / step_s(d, ctx, 0, 0, 0))))
            k = max(k, 1)
            since += k
        else:
            since = 0 if scheduler_steps > 1 else since
        pctx = ctx_sum / len(chunks) if chunks else 0
        t += k * step_s(d, ctx + (k - 1) / 2, len(chunks), p, pctx) + pool.load_wait
        pool.load_wait = 0.0
        step, dec_tokens, pre_tokens = step + k, dec_tokens + k * d, pre_tokens + p
        while finishing and finishing[0][0] <= step:
            _, i = heapq.heappop(finishing)
            d, base, n_run, done = d - 1, base - (reqs[i][1] - first_step[i]), n_run - 1, done + 1
            ttft.append(first_t[i] - arrival[i] + req_s)
            e2e.append(t - arrival[i] + req_s)
            tpot.append((t - first_t[i]) / (reqs[i][2] - 1))
            duration = t + req_s
            pool.release(i)
            if closed and sent < n:
                heapq.heappush(pending, (t + req_s, sent))
                sent += 1
        for c in chunks:
            r = prefilling[0]
            r[1] -= c
            r[2] += c
            if r[1] > 0:
                break
            prefilling.popleft()
            i = r[0]
            first_t[i], first_step[i] = t, step
            if reqs[i][3] is not None and reqs[i][4]:  # its prefix is computed: cached from now on
                pool.grow(i, reqs[i][4])
            if o_run[i] == 1:
                n_run, done = n_run - 1, done + 1
                ttft.append(t - arrival[i] + req_s)
                e2e.append(t - arrival[i] + req_s)
                duration = t + req_s
                pool.release(i)
                if closed and sent < n:
                    heapq.heappush(pending, (t + req_s, sent))
                    sent += 1
            else:
                d, base = d + 1, base + reqs[i][1] - step
                heapq.heappush(finishing, (step + o_run[i] - 1, i))
        if progress and time.monotonic() - last_shown > 1.0:
            last_shown = report_progress(progress, started=started, done=done, n=n, units=units)
    return dict(ttft=ttft, e2e=e2e, tpot=tpot, steps=step, dec_tokens=dec_tokens,
                pre_tokens=pre_tokens, duration=duration, most=most)


def _mix_statistics(spec, hw, reqs, run, pool, *, tp, pp, dp, ep, bits, K, units, engines,
                    pool_tokens, host_s_per_token):
    """simulate_requests' answer: the run's throughput, the mean step's composition (mixed_step at
    the mix's means), the prefix cache's and host tier's counts, and the means, medians, p90 and
    p99 of TTFT, TPOT and end-to-end time."""
    n, step, duration, e2e = len(reqs), run["steps"], run["duration"], run["e2e"]
    total = n * units
    s_mean = sum(r[1] for r in reqs) / n
    o_mean = sum(r[2] for r in reqs) / n
    mean_dec, mean_pre = run["dec_tokens"] / step, run["pre_tokens"] / step
    ctx = s_mean + max(o_mean - 2, 0) / 2
    mk = dict(tp=tp, pp=pp, prompt_tokens=max(1, round(s_mean)), bits=bits, dp=dp, ep=ep)
    dec = mixed_step(spec, hw, decodes=dp * mean_dec, decode_context=ctx, prefill_tokens=dp * mean_pre, **mk)
    pre = mixed_step(spec, hw, decodes=dp * mean_dec, decode_context=ctx,
                     prefill_tokens=dp * max(mean_pre, min(s_mean, K)), **mk)
    tpots = run["tpot"] or [pre["time_s"]]
    out = {"num_requests": total, "duration_s": duration, "requests_per_s": total / duration,
           "output_tokens_per_s": units * sum(r[2] for r in reqs) / duration,
           "input_tokens_per_s": units * sum(r[1] for r in reqs) / duration,
           "mean_in_flight": units * sum(e2e) / duration, "most_running": units * run["most"],
           "engine_steps": step,
           "micro_batches": engines, "decodes_per_step": mean_dec, "prompt_tokens_per_step": mean_pre,
           "decode_step": dec, "prompt_step": pre,
           "prefix_hits": pool.hits * units, "prompt_tokens_computed": pool.computed * units,
           "prompt_tokens_cached": pool.skipped * units, "prefix_evictions": pool.evictions * units,
           "prefix_tokens_held_most": pool.most_held, "kv_pool_tokens": pool_tokens,
           "host_hits": pool.host_hits * units, "host_tokens_loaded": pool.loaded * units,
           "host_load_s": pool.loaded * host_s_per_token, "host_tokens_held": pool.host_held}
    for name, xs in (("ttft", run["ttft"]), ("tpot", tpots), ("e2e", e2e)):
        out[f"{name}_s"] = sum(xs) / len(xs)
        xs = sorted(xs)
        for q, label in ((50, "median"), (90, "p90"), (99, "p99")):
            out[f"{name}_{label}_s"] = _percentile(xs, q, presorted=True)
    return out


# ======== llmcalc/serve/workload.py ===============================================================
# The requests of a simulated benchmark when they are not all alike: lengths drawn as vLLM's
# `vllm bench serve --dataset-name random` draws them, a lognormal mix shaped like its ShareGPT
# runs, or a trace read from a file (arrival, prompt and output tokens, and a shared prefix).
#
# A request here is a tuple (arrival_s, input_tokens, output_tokens, prefix_key, prefix_tokens):
# arrival_s None when the load sets it (a rate or closed-loop clients), prefix_key None when the
# request shares nothing with another (its first prefix_tokens tokens are then its own).

# The ShareGPT mix: the prompts and replies vLLM's benchmark draws from
# ShareGPT_V3_unfiltered_cleaned_split.json (`--dataset-name sharegpt`, first turn's prompt, the
# reply's length as the output; pairs with a prompt over 1,024 or a total over 2,048 tokens, or
# fewer than 4 of either, are dropped). Means measured by `benchmark_serving.py --num-prompts 1000`
# with Llama-3.1-8B-Instruct's tokenizer (seed 0): 215,196 input and 197,090 generated tokens
# (vLLM users' runs, e.g. the A40 Triton run and the vllm-dlc run quoted in vLLM issues; the
# input count repeats exactly across runs, the output count varies 185,671-198,532 with the
# model's end-of-sequence). No published spread was found: the lognormal's sigma of 1.0 is an
# assumption, stated with the mix. The means are of the clipped draws, mu solved for them.
SHAREGPT_MEAN_INPUT_TOKENS = 215.196
SHAREGPT_MEAN_OUTPUT_TOKENS = 197.090
SHAREGPT_SIGMA = 1.0
SHAREGPT_MAX_INPUT_TOKENS = 1024  # vLLM's sampler drops longer prompts
SHAREGPT_MAX_TOTAL_TOKENS = 2048  # ... and longer prompt + reply pairs
SHAREGPT_MIN_TOKENS = 4           # ... and shorter prompts or replies
TRACE_FIELDS = ("arrival_s", "input_tokens", "output_tokens")
TRACE_LIMIT_TOKENS = 10 ** 9  # FLAG_RANGES' bound on -s and -o


# --- formulas ------------------------------------------------------------------------------------
def random_length_bounds(*, length, range_ratio, at_least=0):
    """(low, high), both drawn, of vLLM's RandomDataset for a length and --random-range-ratio r:
    floor(length (1 - r)) .. ceil(length (1 + r)) (vllm/benchmarks/datasets.py,
    get_sampling_params; the output's low at least 1). vLLM subtracts the tokenizer's special
    tokens from the input length first: not here (no tokenizer)."""
    return max(math.floor(length * (1 - range_ratio)), at_least), math.ceil(length * (1 + range_ratio))


def random_requests(*, n, input_len, output_len, range_ratio, prefix_tokens=0, seed=0):
    """n requests of vLLM's random dataset: input and output lengths uniform integers over
    random_length_bounds (numpy's integers(low, high + 1) there, Python's randint here: the same
    distribution, other draws), the --prefix-tokens shared prefix prepended to every prompt (vLLM's
    --random-prefix-len: the prompt is prefix + the drawn length)."""
    import random  # only a drawn mix needs it (start-up time)
    rng = random.Random(seed)
    ilo, ihi = random_length_bounds(length=input_len, range_ratio=range_ratio, at_least=1)
    olo, ohi = random_length_bounds(length=output_len, range_ratio=range_ratio, at_least=1)
    key = "shared" if prefix_tokens else None
    return [(None, prefix_tokens + rng.randint(ilo, ihi), rng.randint(olo, ohi), key, prefix_tokens)
            for _ in range(n)]


def clipped_lognormal_mean(*, mu, sigma, lo, hi):
    """Mean of a lognormal(mu, sigma) clipped to [lo, hi] (values outside set to the bound): the
    partial expectations of the lognormal (Johnson, Kotz & Balakrishnan 1994, ch. 14)."""
    def phi(x):
        return 0.5 * (1 + math.erf(x / math.sqrt(2)))
    a, b = (math.log(lo) - mu) / sigma, (math.log(hi) - mu) / sigma
    inside = math.exp(mu + sigma ** 2 / 2) * (phi(b - sigma) - phi(a - sigma))
    return lo * phi(a) + inside + hi * (1 - phi(b))


def lognormal_mu_for_mean(*, mean, sigma, lo, hi):
    """The mu whose lognormal clipped to [lo, hi] has the given mean (bisection: the clipped
    mean grows with mu)."""
    a, b = math.log(lo) - 10 * sigma, math.log(hi) + 10 * sigma
    for _ in range(100):
        m = (a + b) / 2
        if clipped_lognormal_mean(mu=m, sigma=sigma, lo=lo, hi=hi) < mean:
            a = m
        else:
            b = m
    return (a + b) / 2


def sharegpt_requests(*, n, prefix_tokens=0, seed=0):
    """n requests of the ShareGPT-shaped mix: input and output lengths independent lognormals
    (sigma SHAREGPT_SIGMA) clipped as vLLM's sampler keeps them (inputs 4 .. 1,024, outputs 4 ..
    2,048 less the input: clipped rather than dropped), their means those vLLM's 1,000-prompt
    ShareGPT runs count (SHAREGPT_MEAN_*); a --prefix-tokens prefix prepended to each prompt."""
    import random  # only a drawn mix needs it
    rng = random.Random(seed)
    lo, s_hi = SHAREGPT_MIN_TOKENS, SHAREGPT_MAX_INPUT_TOKENS
    o_hi = SHAREGPT_MAX_TOTAL_TOKENS - SHAREGPT_MAX_INPUT_TOKENS  # the typical room left (clip below)
    mu_s = lognormal_mu_for_mean(mean=SHAREGPT_MEAN_INPUT_TOKENS, sigma=SHAREGPT_SIGMA, lo=lo, hi=s_hi)
    mu_o = lognormal_mu_for_mean(mean=SHAREGPT_MEAN_OUTPUT_TOKENS, sigma=SHAREGPT_SIGMA, lo=lo, hi=o_hi)
    key = "shared" if prefix_tokens else None
    out = []
    for _ in range(n):
        s = min(max(round(rng.lognormvariate(mu_s, SHAREGPT_SIGMA)), lo), s_hi)
        o = min(max(round(rng.lognormvariate(mu_o, SHAREGPT_SIGMA)), lo), SHAREGPT_MAX_TOTAL_TOKENS - s)
        out.append((None, prefix_tokens + s, o, key, prefix_tokens))
    return out


def fixed_requests(*, n, input_len, output_len, prefix_tokens=0):
    """n requests of input_len prompt (the first prefix_tokens of it shared by all) and
    output_len output tokens."""
    key = "shared" if prefix_tokens else None
    return [(None, input_len, output_len, key, prefix_tokens)] * n


def apply_hit_rate(requests, *, hit_rate, seed=0):
    """The same requests with their shared prefix kept by a share hit_rate of them (seeded draw);
    the others compute their prefix as their own."""
    if hit_rate is None:
        return requests
    import random  # only a drawn mix needs it
    rng = random.Random(seed + 1)
    return [r if r[3] is None or rng.random() < hit_rate else r[:3] + (None, r[4]) for r in requests]


def _trace_number(value, *, field, where, integer, lo):
    """One trace field checked: a number (an integer for token counts), finite, at least lo."""
    if type(value) is int and lo <= value <= TRACE_LIMIT_TOKENS:  # the common case, quickly
        return value if integer else float(value)
    if type(value) is float and not integer and lo <= value <= TRACE_LIMIT_TOKENS * 1e3:
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            if integer:
                try:
                    value = float(text)
                except ValueError:
                    raise ValueError(f"{where}: {field} {text!r} is not a number") from None
            else:
                raise ValueError(f"{where}: {field} {text!r} is not a number") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: {field} must be a number, got {value!r}")
    if integer and (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"{where}: {field} must be a whole number of tokens, got {value!r}")
    if not math.isfinite(value) or value < lo or value > TRACE_LIMIT_TOKENS * (1 if integer else 1e3):
        raise ValueError(f"{where}: {field} must be {'an integer' if integer else 'a number'} from {lo:g} "
                         f"up, got {value!r}")
    return int(value) if integer else float(value)


def read_trace(path):
    """The requests of a trace file: JSON lines (.jsonl, .json: one object per line) or CSV with a
    header, each request with arrival_s (seconds from the start), input_tokens, output_tokens, and
    optionally prefix_id (requests with the same id share their first prefix_tokens tokens, and a
    finished request leaves its prompt and output cached under its id: give a conversation's
    turns one id, prefix_tokens the history before each turn, 0 for the first) and prefix_tokens
    (at most input_tokens).
    Sorted by arrival. Raises ValueError with one line naming the file, line and field."""
    import csv, json, os  # noqa: E401 (only --trace needs them)
    if not os.path.isfile(path):
        raise ValueError(f"--trace {path}: no such file")
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".jsonl", ".json", ".csv"):
        raise ValueError(f"--trace {path}: give a .jsonl (one JSON object per line) or a .csv file")
    rows = []
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            if ext == ".csv":
                reader = csv.DictReader(fh)
                missing = [f for f in TRACE_FIELDS if f not in (reader.fieldnames or [])]
                if missing:
                    raise ValueError(f"--trace {path}: the header lacks {', '.join(missing)} (columns "
                                     f"{', '.join(TRACE_FIELDS)}, optionally prefix_id, prefix_tokens)")
                rows = [(i + 2, r) for i, r in enumerate(reader)]
            else:
                for i, line in enumerate(fh):
                    if not line.strip():
                        continue
                    try:
                        obj = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise ValueError(f"--trace {path} line {i + 1}: not JSON ({exc.msg})") from None
                    if not isinstance(obj, dict):
                        raise ValueError(f"--trace {path} line {i + 1}: each line must be a JSON object")
                    rows.append((i + 1, obj))
    except UnicodeDecodeError:
        raise ValueError(f"--trace {path}: not UTF-8 text") from None
    if not rows:
        raise ValueError(f"--trace {path}: no requests in it")
    out = []
    for line, r in rows:
        where = f"--trace {path} line {line}"
        for f in TRACE_FIELDS:
            if r.get(f) in (None, ""):
                raise ValueError(f"{where}: {f} is missing")
        t = _trace_number(r["arrival_s"], field="arrival_s", where=where, integer=False, lo=0)
        s = _trace_number(r["input_tokens"], field="input_tokens", where=where, integer=True, lo=1)
        o = _trace_number(r["output_tokens"], field="output_tokens", where=where, integer=True, lo=1)
        key, p = r.get("prefix_id"), r.get("prefix_tokens")
        key = None if key in (None, "") else str(key)
        p = 0 if p in (None, "") else _trace_number(p, field="prefix_tokens", where=where, integer=True, lo=0)
        if p > s:
            raise ValueError(f"{where}: prefix_tokens {p} is more than input_tokens {s}")
        if p and key is None:
            raise ValueError(f"{where}: prefix_tokens without a prefix_id (the id says who shares it)")
        out.append((t, s, o, key, p))
    out.sort(key=lambda x: x[0])
    return out


def length_summary(requests):
    """Mean, median and p99 of the mix's input and output tokens, and its shared-prefix tokens."""
    def stats(xs):
        v = sorted(xs)
        return {"mean": sum(v) / len(v), "median": v[len(v) // 2], "p99": v[min(len(v) - 1, int(0.99 * len(v)))],
                "min": v[0], "max": v[-1]}
    return {"input_tokens": stats([r[1] for r in requests]), "output_tokens": stats([r[2] for r in requests]),
            "shared_prefix_requests": sum(r[3] is not None for r in requests)}


# ======== llmcalc/serve/engine.py =================================================================
# One serving run of one layout: whether the layout can split the model, then its steady state
# or, with --num-requests, its simulated benchmark.

def number_text(x):
    """A number as a user types it: 4096, 0.001, 1e18 (no '+', no zero-padded exponent); the
    tools' flag messages write bounds the same way (cli._num)."""
    if isinstance(x, int) and abs(x) < 10 ** 6:
        return str(x)
    text = f"{x:g}" if float(f"{x:g}") == x else repr(float(x))  # 1.0000001 stays itself
    mant, _, exp = text.partition("e")
    return f"{mant}e{int(exp)}" if exp else mant


def layout_problem(spec, *, tp, pp, dp, ep):
    """Why a layout cannot split this model (one line), or None: heads over tp, kv heads and tp
    dividing one another (Megatron-LM / vLLM's rule), at most one layer per stage, expert
    parallelism only over a stage's tp x dp GPUs of a model with routed experts."""
    groups = layer_groups(spec)
    for layer, _, first in groups:
        where = "" if len(groups) == 1 else f" (layer {first})"
        for attn in layer["attention"]:
            a, kv = attn["heads"], attn["kv_heads"]
            if a % tp:
                return f"--num-attention-heads {a}{where} is not divisible by --tensor-parallel-size {tp}"
            if attn["kind"] != "mla" and kv % tp and tp % kv:
                return f"kv heads {kv}{where} and --tensor-parallel-size {tp}: one must divide the other"
    if pp > spec["num_layers"]:
        return f"--pipeline-parallel-size {pp} is larger than --num-layers {spec['num_layers']}"
    if ep > 1:
        if not any(m["kind"] != "dense" for x in spec["layers"] for m in x["mlp"]):
            return f"--expert-parallel-size {ep} needs a model with routed experts; this one has none"
        if ep != tp * dp:
            return (f"--expert-parallel-size {ep}: expert parallelism spreads the experts over every GPU "
                    f"of a stage, -tp x -dp = {tp * dp}; use -ep {tp * dp} or -ep 1")
    return None


def serve_steady_state(spec, hw, req, *, tp, pp, s, o, bits, w_bytes):
    """--concurrency / --request-rate: the KV pool's limit (exit 2 past it, saying what fits) and
    steady_state's times, as the dict main reports under "serving". By default (unless
    --refuse-past-pool) a closed-loop concurrency C past the pool's cap runs cap requests and queues the other C - cap
    in the server (vLLM's waiting queue, TensorRT-LLM's and NIM's request queue): the pool's
    throughput X = cap / E2E(cap) is unchanged, and each request first waits (C - cap) / X for a
    slot (Little's law), added to its TTFT and end-to-end time. The stack's running-request cap
    (hw["max_num_seqs"] per data-parallel engine: vLLM's max_num_seqs, TensorRT-LLM's
    max_batch_size) queues the same way without the flag: its scheduler admits no more, whatever
    the pool holds."""
    dp, ep = req.data_parallel_size, req.expert_parallel_size
    pool, per_req, cap = kv_pool_capacity(spec, hw, tp=tp, pp=pp, context=s + o, w_bytes=w_bytes,
                                          kv_bits=req.kv_cache_bits, a_bits=req.activation_bits,
                                          state_bits=req.state_bits, dp=dp)
    seqs = hw["max_num_seqs"] * dp if hw.get("max_num_seqs") else None
    run_cap = min(cap, seqs) if seqs else cap  # requests that run at once
    share = pool_share_text(hw, w_bytes)
    if cap < 1:
        refuse_no_pool(hw, pool=pool, per_req=per_req, context=s + o, share=share, w_bytes=w_bytes)
    budget = hw["token_budget"] or math.inf  # None: every waiting prompt in one step
    base = dict(token_budget=hw["token_budget"], kv_pool_bytes_per_gpu=pool,
                kv_bytes_per_request_per_gpu=per_req, kv_pool_max_concurrency=cap,
                max_num_seqs=seqs, concurrency=req.concurrency, request_rate=req.request_rate)
    if req.requests:
        return serve_mix(spec, hw, req, tp=tp, pp=pp, bits=bits, pool=pool, per_req=per_req,
                         context=s + o, seqs=seqs, base=base)
    if req.num_requests is not None:
        return simulated_run(spec, hw, req, tp=tp, pp=pp, s=s, o=o, bits=bits, budget=budget,
                             run_cap=run_cap, base=base)
    sp = hw.get("speculative")  # a request's decode steps at the accepted tokens per step
    o_steps = (speculative_decode_steps(output_tokens=o, tokens_per_step=sp["tokens_per_step"],
                                        whole=False) if sp else o)
    kw = dict(tp=tp, pp=pp, prompt_tokens=s, output_tokens=o_steps, token_budget=budget, bits=bits,
              dp=dp, ep=ep)
    if req.request_rate is not None:
        c, st = concurrency_for_rate(spec, hw, rate=req.request_rate, limit=run_cap, **kw)
        if c is None:  # st: the steady state of a full KV pool (or of the running cap)
            held = (f"the KV pool holds {cap} requests of {s + o} tokens" if run_cap == cap else
                    f"the stack runs at most {run_cap} requests at once (--max-num-seqs)")
            raise CalcError(f"--request-rate {number_text(req.request_rate)}/s is more than this "
                            f"layout sustains: {held}, which serve at most "
                            f"{st['requests_per_s']:.4g} requests/s; lower the rate or add GPUs")
    else:
        c = req.concurrency
        if c > cap and run_cap == cap and req.refuse_past_pool:
            raise CalcError(f"--concurrency {c} does not fit: the KV pool ({pool / 2**30:.2f} GiB "
                            f"per GPU: {share}) holds {cap} requests of {s + o} tokens; use -c "
                            f"{cap} or less, raise -tp or -dp, or cut --kv-cache-bits or s + o (or "
                            "drop --refuse-past-pool: the server queues them)")
        st = steady_state(spec, hw, concurrency=min(c, run_cap), **kw)
    req_s = hw["request_overhead_s"]
    ttft, e2e = st["ttft_s"] + req_s, st["e2e_s"] + req_s
    if sp:  # a step's time over the tokens it yields
        st = dict(st, tpot_s=st["tpot_s"] / sp["tokens_per_step"])
    queued = max(0, c - run_cap) if req.request_rate is None else 0
    wait = queued * e2e / run_cap  # (C - cap) / X with X = cap / E2E(cap)
    ttft, e2e = ttft + wait, e2e + wait
    # closed loop: C clients each wait E2E per request (Little); open loop: what arrives leaves
    rps = req.request_rate if req.request_rate is not None else c / e2e
    return dict(st, concurrency=c, request_rate=req.request_rate, ttft_s=ttft, e2e_s=e2e,
                requests_per_s=rps, token_budget=hw["token_budget"], kv_pool_bytes_per_gpu=pool,
                queued_requests=queued, queue_wait_s=wait,
                kv_bytes_per_request_per_gpu=per_req, kv_pool_max_concurrency=cap,
                max_num_seqs=seqs, running_requests=min(c, run_cap),
                output_tokens_per_s=rps * o, output_tokens_per_s_per_gpu=rps * o / (tp * dp * pp),
                tokens_per_s_per_user=1.0 / st["tpot_s"])


def pool_share_text(hw, w_bytes):
    """The memory the KV pool is a share of, in words (the stack's rule: of the GPU less the
    weights, or of what the weights leave)."""
    util, gib = hw["memory_utilization"], hw["gpu_memory_bytes"] / 2 ** 30
    if hw.get("pool_of_free"):
        return f"{util:g} x what the weights ({w_bytes / 2**30:.2f} GiB) leave of {gib:.2f} GiB"
    return f"{util:g} x {gib:.2f} GiB less {w_bytes / 2**30:.2f} GiB of weights"


def refuse_no_pool(hw, *, pool, per_req, context, share, w_bytes):
    """CalcError: the pool cannot hold one request (or there is no pool), saying what would fit."""
    if pool > 0:  # a pool, too small for one request's cache
        raise CalcError(f"one request of {context:,} tokens needs {per_req / 2**30:.2f} GiB of KV "
                        f"cache per GPU and the pool holds {pool / 2**30:.2f} GiB ({share}); "
                        "shorten -s/-o, raise -tp/-pp or cut --kv-cache-bits")
    raise CalcError(f"the weights ({w_bytes / 2**30:.2f} GiB per GPU) leave no KV pool in "
                    f"{hw['memory_utilization']:g} x {hw['gpu_memory_bytes'] / 2**30:.2f} GiB; "
                    "raise -tp/-pp, cut --weight-bits or raise --gpu-memory-utilization")


def simulated_run(spec, hw, req, *, tp, pp, s, o, bits, budget, run_cap, base):
    """--num-requests of alike requests: simulate_benchmark's run, as the dict main reports under
    "serving"; CalcError when it would run too long."""
    dp, ep = req.data_parallel_size, req.expert_parallel_size
    try:
        sp = hw.get("speculative")
        steps = (speculative_decode_steps(output_tokens=o, tokens_per_step=sp["tokens_per_step"],
                                          whole=True) if sp and o > 1 else None)
        st = simulate_benchmark(spec, hw, tp=tp, num_requests=req.num_requests, prompt_tokens=s,
                                output_tokens=o, token_budget=budget, run_cap=run_cap, bits=bits,
                                output_steps=steps, rate=req.request_rate,
                                concurrency=req.concurrency, arrivals=req.arrivals, seed=req.seed,
                                pp=pp, dp=dp, ep=ep, progress=lambda m: print(m, file=sys.stderr))
    except SimulationTooLong as exc:
        left, done, n = exc.args
        raise CalcError(f"--num-requests {n:,} would take about {left / 60:,.0f} more minutes to "
                        f"simulate ({done:,} done); run fewer requests (the statistics settle "
                        "within a few thousand)") from None
    rps = st["requests_per_s"]
    at_once = req.request_rate is not None and math.isinf(req.request_rate)  # JSON has no inf
    base.update(request_rate=None if at_once else req.request_rate, sent_at_once=at_once)
    return dict(st, **base, benchmark=True, arrivals=req.arrivals, seed=req.seed,
                running_requests=st["most_running"], queued_requests=0, queue_wait_s=0.0,
                output_tokens_per_s=rps * o, output_tokens_per_s_per_gpu=rps * o / (tp * dp * pp),
                tokens_per_s_per_user=1.0 / st["tpot_s"])


def workload_requests(req):
    """The requests of a --num-requests run that are not all alike, or None when they are: a
    --trace file, a drawn --dataset (random, sharegpt), or a shared --prefix-tokens prefix; with
    --prefix-hit-rate a share of them keep the shared prefix (workload.py)."""
    n, p, seed = req.num_requests, req.prefix_tokens or 0, req.seed
    if req.trace:
        try:
            reqs = read_trace(req.trace)
        except ValueError as exc:
            raise CalcError(str(exc)) from None
        reqs = reqs[:n] if n is not None else reqs
    elif req.dataset == "random":
        reqs = random_requests(n=n, input_len=req.random_input_len,
                               output_len=req.random_output_len, range_ratio=req.random_range_ratio,
                               prefix_tokens=p, seed=seed)
    elif req.dataset == "sharegpt":
        reqs = sharegpt_requests(n=n, prefix_tokens=p, seed=seed)
    elif (p or (req.num_scheduler_steps or 1) > 1) and n is not None:  # prefixes, multi-step: each
        reqs = fixed_requests(n=n, input_len=req.prompt_tokens, output_len=req.output_tokens,
                              prefix_tokens=p)
    else:
        return None
    return apply_hit_rate(reqs, hit_rate=req.prefix_hit_rate, seed=seed)


def serve_mix(spec, hw, req, *, tp, pp, bits, pool, per_req, context, seqs, base):
    """--num-requests over a mix of requests (workload_requests): simulate_requests with the KV
    pool in tokens (the pool over one request's cache at the mix's mean s + o, per token), as the
    dict main reports under "serving"."""
    dp, ep = req.data_parallel_size, req.expert_parallel_size
    reqs = req.requests
    pool_tokens = kv_pool_tokens(pool_bytes=pool, bytes_per_request=per_req, context=context, dp=dp)
    budget = hw["token_budget"] or math.inf
    host = host_tier(spec, hw, req, tp=tp, pp=pp, bits=bits, per_req=per_req, context=context,
                     s_mean=sum(r[1] for r in reqs) / len(reqs)) if req.host_kv_cache_gib else None
    try:
        st = simulate_requests(spec, hw, tp=tp, requests=reqs, token_budget=budget, pool_tokens=pool_tokens,
                               host_tokens=host["host_tokens"] if host else 0,
                               host_s_per_token=host["load_s_per_token"] if host else 0.0,
                               scheduler_steps=req.num_scheduler_steps or 1,
                               max_running=seqs, bits=bits, rate=req.request_rate,
                               concurrency=req.concurrency,
                               arrivals=req.arrivals, seed=req.seed, pp=pp, dp=dp, ep=ep,
                               progress=lambda m: print(m, file=sys.stderr))
    except SimulationTooLong as exc:
        left, done, n = exc.args
        raise CalcError(f"{n:,} requests would take about {left / 60:,.0f} more minutes to "
                        f"simulate ({done:,} done); run fewer (--num-requests)")
    except ValueError as exc:
        raise CalcError(f"{exc}: cut the longest requests, raise -tp/-pp or cut "
                        "--kv-cache-bits") from None
    at_once = req.request_rate is not None and math.isinf(req.request_rate)
    base.update(request_rate=None if at_once else req.request_rate, sent_at_once=at_once)
    mix = length_summary(reqs)
    mix.update(dataset=req.dataset or ("trace" if req.trace else "fixed"), trace=req.trace,
               random_range_ratio=req.random_range_ratio if req.dataset == "random" else None,
               prefix_tokens=req.prefix_tokens, prefix_hit_rate=req.prefix_hit_rate,
               trace_arrivals=(bool(req.trace) and req.request_rate is None
                               and req.concurrency is None),
               host_tier=host)
    return dict(st, **base, benchmark=True, mix=mix, arrivals=req.arrivals, seed=req.seed,
                running_requests=st["most_running"], queued_requests=0, queue_wait_s=0.0,
                output_tokens_per_s_per_gpu=st["output_tokens_per_s"] / (tp * dp * pp),
                tokens_per_s_per_user=1.0 / st["tpot_s"])


def host_tier(spec, hw, req, *, tp, pp, bits, per_req, context, s_mean):
    """The host KV tier of a mix run (offload.py): its size in tokens (kv_pool_tokens, at the GPU
    pool's bytes per token), the seconds one token takes to come back, and what computing it again
    would take instead (a prefill of the mix's mean prompt, per token)."""
    bw = (req.host_kv_bandwidth_gbps * 1e9 if req.host_kv_bandwidth_gbps is not None
          else hw.get("host_kv_bytes_per_s"))
    if bw is None:
        raise CalcError(f"the host link of {hw.get('gpu') or 'this GPU'} is not known here: give "
                        "--host-kv-bandwidth-gbps")
    per_token = per_req / context  # KV bytes per token on one GPU
    n = max(1, round(s_mean))
    pre = forward_pass(spec, hw, tp=tp, pp=pp, batch=1, new_tokens=n, context_before=0, absorbed=False,
                       dp=req.data_parallel_size, ep=req.expert_parallel_size, **bits)["time_s"] / n
    out = load_vs_recompute(kv_bytes_per_token=per_token, host_bytes_per_s=bw, prefill_s_per_token=pre)
    host_bytes = req.host_kv_cache_gib * 2 ** 30
    out.update(host_bytes_per_gpu=host_bytes, host_bytes_per_s=bw, kv_bytes_per_token_per_gpu=per_token,
               host_tokens=kv_pool_tokens(pool_bytes=host_bytes, bytes_per_request=per_req, context=context,
                                          dp=req.data_parallel_size) if per_req > 0 else 0)
    return out


# ======== llmcalc/serve/search.py =================================================================
# The serving search: layouts, bit widths and disaggregated prefill pools, ranked on a Pareto
# front, with its report and plot.

def _powers_of_two(limit):
    """1, 2, 4, ... up to limit."""
    out, x = [], 1
    while x <= limit:
        out.append(x)
        x *= 2
    return out


def serving_layouts(spec, num_gpus, max_tp=None, max_replica=None):
    """Every replica layout (tp, pp, dp, ep) of at most num_gpus GPUs that splits the model
    (layout_problem): tp, pp and dp powers of two, tp at most max_tp (the search keeps tensor
    parallelism inside a node, as deployments do: its two all-reduces per layer would cross the
    network; pp, dp and ep cross nodes); dp > 1 only with routed experts (data-parallel attention;
    for a dense model extra groups are just replicas); ep 1 or tp x dp."""
    moe = any(m["kind"] != "dense" for x in spec["layers"] for m in x["mlp"])
    top = min(num_gpus, max_replica or num_gpus)  # GPUs of one replica at most
    for tp in _powers_of_two(min(top, max_tp or top)):
        for pp in _powers_of_two(top // tp):
            for dp in (_powers_of_two(top // (tp * pp)) if moe else (1,)):
                for ep in ((1, tp * dp) if moe and tp * dp > 1 else (1,)):
                    if layout_problem(spec, tp=tp, pp=pp, dp=dp, ep=ep) is None:
                        yield tp, pp, dp, ep


def nominal_bits(stored_bits):
    """The format's value width from bits per stored weight with its scales (NVFP4 4.5 -> 4, MXFP4
    4.25 -> 4, FP8 blocks 8.002 -> 8): what `weight_bits` means in a single run's result, while
    `weight_storage_bits` keeps what the bytes are counted at."""
    return int(stored_bits) if stored_bits == int(stored_bits) else math.floor(stored_bits)


def search_bit_options(req, fmt, low_bit_ok):
    """(weight, activation, KV-cache, expert) bits --search costs: the user's when any bits flag is
    given; else the fewest the GPU runs, 8-bit weights and KV cache with 8-bit matmuls where the GPU
    has an 8-bit peak (else 16-bit matmuls), a quantized checkpoint's own weights. In this model
    fewer bits never make a layout slower or its KV pool smaller, so at the same layout and
    concurrency a wider format is beaten on both axes and can never reach the front: costing it
    would only repeat the work (accuracy is not weighed; pass --precision or --*-bits to search at
    a format)."""
    if req.bits_given:
        return [(req.weight_store_bits if not fmt else fmt["linear_bits"], req.activation_bits,
                 req.kv_cache_bits, fmt["expert_bits"] if fmt else None)]
    w, e = (fmt["linear_bits"], fmt["expert_bits"]) if fmt else (8, None)
    return [(w, 8 if low_bit_ok else 16, 8, e)]


def pareto_front(points):
    """The points no other point beats on both tokens/s per GPU and tokens/s per user (ties kept
    once), best per GPU first."""
    front, best_user = [], -1.0
    for p in sorted(points, key=lambda p: (-p["tokens_per_s_per_gpu"], -p["tokens_per_s_per_user"])):
        if p["tokens_per_s_per_user"] > best_user:
            front.append(p)
            best_user = p["tokens_per_s_per_user"]
    return front


def prefill_pool_rate(spec, hw, *, lay, bits, s, kv_transfer_s, max_ttft, cap):
    """A prefill-only replica (disaggregated serving): it runs batches of b = budget // s prompts
    (at least 1; at most the cap requests its KV pool holds, which is also b for a stack that does
    not chunk) back to back, each batch taking t_b (forward_pass
    plus the step cost), so it serves mu = b / t_b requests/s. At load rho = R / mu an arriving
    prompt waits rho t_b / (2 (1 - rho)) (M/D/1: md1_wait_s), then runs in a batch
    rho b full (at least its own prompt), then its KV cache crosses to the decode pool
    (kv_transfer_s); TTFT adds the stack's per-request cost. Returns (requests/s per replica at the
    highest load whose TTFT meets max_ttft, the TTFT there) or None when even an idle replica
    misses it. Without a target the load stops at 0.9 (a queue near saturation grows without
    bound)."""
    tp, pp, dp, ep = lay
    budget = hw["token_budget"] or math.inf
    step = hw["step_overhead_s"]

    def pass_s(b):
        return forward_pass(spec, hw, tp=tp, pp=pp, dp=dp, ep=ep, batch=b, new_tokens=s, context_before=0,
                            absorbed=False, **bits)["time_s"] + step
    b = max(1, min(int(budget // s) if budget < math.inf else cap, cap))
    t1, tb = pass_s(min(dp, b)), pass_s(b)
    fixed = kv_transfer_s + hw["request_overhead_s"]

    def ttft(rho):
        return md1_wait_s(rho=rho, service_s=tb) + t1 + (tb - t1) * rho + fixed
    if ttft(0.0) > max_ttft:
        return None
    lo, hi = 0.0, (0.999 if max_ttft < math.inf else 0.9)
    if ttft(hi) > max_ttft:
        for _ in range(40):  # TTFT grows with the load: the highest rho that meets the target
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if ttft(mid) <= max_ttft else (lo, mid)
    else:
        lo = hi
    return {"rate": lo * b / tb, "mu": b / tb, "ttft": ttft}


def kv_transfer_s(spec, hw, *, s, kv_bits, a_bits, state_bits, gpus_p, gpus_d, cross_node):
    """Seconds to move one request's cache (all layers, s tokens, at kv_bits) from the prefill
    replica to the decode replica: the bytes spread over min(gpus_p, gpus_d) parallel links, over
    the network (the NIC per GPU x SCALE_OUT_EFFICIENCY) when the pools sit in different nodes,
    else NVLink; plus one NCCL call cost (NIXL/Mooncake-style one-sided RDMA writes)."""
    c = cache_bytes_per_gpu(spec, tp=1, pp=1, batch=1, context=s, kv_bits=kv_bits, a_bits=a_bits,
                            state_bits=state_bits)
    nbytes = c["kv"] + c["indexer"] + c["state"]
    net = layout_net(hw)
    bw = net["inter_bytes_per_s"] if cross_node else net["intra_bytes_per_s"]
    return hw.get("nccl_latency_s", 0.0) + nbytes / (min(gpus_p, gpus_d) * bw)


def sized_options(spec, req, lay, *, options, hw_for):
    """For one layout, each bit option whose weights leave a KV pool: (bits tuple, hw, bits dict,
    weight bytes per GPU, KV bytes per request per GPU, requests that run at once: those the pool
    holds, or fewer under the stack's running cap)."""
    tp, pp, dp, ep = lay
    s, o = req.prompt_tokens, req.output_tokens
    for wb, ab, kvb, eb in options:
        hw = hw_for(tp, pp, dp, ab)
        bits = dict(w_bits=wb, a_bits=ab, kv_bits=kvb, e_bits=eb, state_bits=req.state_bits)
        w_bytes = weight_bytes_per_gpu(spec, tp=tp, pp=pp, w_bits=wb, e_bits=eb, ep=ep, etp=tp * dp // ep)
        _, per_req, cap = kv_pool_capacity(spec, hw, tp=tp, pp=pp, context=s + o, w_bytes=w_bytes,
                                           kv_bits=kvb, a_bits=ab, state_bits=req.state_bits, dp=dp)
        if cap >= 1 and hw.get("max_num_seqs"):  # the stack runs no more at once (past it: only queueing)
            cap = min(cap, hw["max_num_seqs"] * dp)
        if cap >= 1:
            yield (wb, ab, kvb, eb), hw, bits, w_bytes, per_req, cap


def disaggregated_points(spec, req, *, layouts, options, hw_for, max_ttft, max_tpot):
    """--disaggregated: prefill and decode on separate GPU pools (DistServe, Zhong et al. 2024;
    Splitwise). Decode replicas run decode-only steps at concurrency C (TPOT = the step; each
    request spends o - 1 steps there, so C / ((o - 1) TPOT) requests/s); prefill replicas serve at
    the highest load whose TTFT (queueing, its batch, the KV transfer) meets the target
    (prefill_pool_rate). For every decode point and each of the three prefill layouts with the most
    requests/s per GPU at the same bits, every split of the GPU budget into whole replicas; the
    request rate is the smaller pool's. Returns (points, evaluated)."""
    N, s, o = req.num_gpus, req.prompt_tokens, req.output_tokens
    if o < 2:
        return [], 0
    one = hw_for(1, 1, 1, 16)
    pools_cross = N > (one.get("gpus_per_node") or N)
    if (pools_cross and not one["scale_out_bytes_per_s"]) or (N > 1 and not one["peer_link"]):
        return [], 0  # the KV cache has no modelled path between the pools (no NIC, no peer link)
    prefill = {}  # bits -> [(rate per GPU, lay, gpus, rate per replica, ttft)]
    decode = []
    evaluated = 0
    for lay in layouts:
        tp, pp, dp, ep = lay
        gpus = tp * pp * dp
        if gpus > N - 1:
            continue
        for (wb, ab, kvb, eb), hw, bits, w_bytes, per_req, cap in sized_options(
                spec, req, lay, options=options, hw_for=hw_for):
            xfer = kv_transfer_s(spec, hw, s=s, kv_bits=kvb, a_bits=ab, state_bits=req.state_bits,
                                 gpus_p=gpus, gpus_d=gpus, cross_node=pools_cross)
            got = prefill_pool_rate(spec, hw, lay=lay, bits=bits, s=s, kv_transfer_s=xfer, max_ttft=max_ttft,
                                    cap=cap)
            evaluated += 1
            if got:
                prefill.setdefault((wb, ab, kvb), []).append((got["rate"] / gpus, lay, gpus, got))
            rate = 0.0
            for c in _powers_of_two(cap) + ([cap] if cap & (cap - 1) else []):
                st = mixed_step(spec, hw, tp=tp, pp=pp, dp=dp, ep=ep, decodes=c, decode_context=s + (o - 2) // 2,
                                prefill_tokens=0, prompt_tokens=s, bits=bits)
                evaluated += 1
                if st["time_s"] > max_tpot or c / st["time_s"] <= rate:
                    break  # past the target, or no more tokens/s than the point before (dominated)
                rate = c / st["time_s"]
                decode.append(((wb, ab, kvb), lay, gpus, c, st["time_s"], w_bytes + per_req * math.ceil(c / dp)))
    points = []
    for key, lay, gpus_d, c, tpot, mem in decode:
        lam = c / ((o - 1) * tpot)  # requests/s per decode replica
        for _, play, gpus_p, pre in sorted(prefill.get(key, []), key=lambda x: -x[0])[:3]:
            best = None
            top_d = (N - gpus_p) // gpus_d
            # the pools balance where r_d lam = r_p mu with r_p = (N - r_d g_d) / g_p: try the whole
            # replica counts next to it and the ends
            mid = N * pre["rate"] / gpus_p / (lam + pre["rate"] * gpus_d / gpus_p)
            for r_d in {1, top_d, max(1, math.floor(mid)), min(top_d, math.ceil(mid))}:
                if not 1 <= r_d <= top_d:
                    continue
                r_p = (N - r_d * gpus_d) // gpus_p
                rate = min(r_p * pre["rate"], r_d * lam)
                used = r_p * gpus_p + r_d * gpus_d
                if best is None or rate / used > best[0] / best[3]:
                    best = (rate, r_p, r_d, used)
            if best is None:
                continue
            rate, r_p, r_d, used = best
            evaluated += 1
            ttft = pre["ttft"](rate / (r_p * pre["mu"]))  # at the load the pair actually carries
            tp, pp, dp, ep = lay
            points.append({"tp": tp, "pp": pp, "dp": dp, "ep": ep, "replicas": r_d, "gpus_per_replica": gpus_d,
                           "weight_bits": nominal_bits(key[0]), "weight_storage_bits": key[0],
                           "activation_bits": key[1], "kv_cache_bits": key[2], "concurrency": c,
                           "ttft_s": ttft, "tpot_s": tpot, "e2e_s": ttft + (o - 1) * tpot,
                           "tokens_per_s_per_user": 1.0 / tpot, "tokens_per_s_per_gpu": rate * o / used,
                           "total_tokens_per_s": rate * o, "memory_bytes_per_gpu": mem,
                           "prefill": {"tp": play[0], "pp": play[1], "dp": play[2], "ep": play[3],
                                       "replicas": r_p, "gpus_per_replica": gpus_p}})
    return points, evaluated


def search_serving(spec, req, fmt, *, gpu, gpu_given, flags):
    """--search: for every layout (serving_layouts) and bit option (search_bit_options), the
    steady state at concurrency 1, 2, 4, ... up to the KV pool (serve_steady_state's model, the
    stack's per-request cost included), kept when it meets --max-ttft-ms and --max-tpot-ms. More
    concurrency never lowers TTFT or TPOT (a tested property), so the first miss ends a layout's
    sweep, after one more point half-way back; so does a point with no more tokens/s per GPU than
    the one before (it is dominated). Data-parallel attention groups double while they raise the
    best tokens/s per GPU or per user of their (tp, pp, ep, bits). Replicas fill the GPU budget:
    N // (tp x dp x pp).
    Lower bits are never slower here (accuracy is not modelled). Returns the result dict, or exits
    2 saying what the fastest layouts reach when no layout meets the targets."""
    missed = []
    import time  # only --search times itself
    t0 = time.perf_counter()
    N, s, o = req.num_gpus, req.prompt_tokens, req.output_tokens
    max_ttft = req.max_ttft_ms * 1e-3 if req.max_ttft_ms is not None else math.inf
    max_tpot = req.max_tpot_ms * 1e-3 if req.max_tpot_ms is not None else math.inf
    rec_peaks = (gpu["peak_flops_per_s"] or {}) if gpu_given else {}
    low_ok = any(rec_peaks.get(k) for k in COMPUTE_DTYPE[8]) or flags.peak_tflops is not None
    options = search_bit_options(req, fmt, low_ok)
    points, evaluated, best = [], 0, {"ttft": None, "tpot": None}
    hw_cache, held, stalled, reached = {}, set(), {}, {}

    def hw_for(tp, pp, dp, ab):
        key = (tp, pp, dp, ab)
        if key not in hw_cache:
            hw_cache[key] = resolve_hardware(gpu, flags, gpu_given=gpu_given, tp=tp, pp=pp, dp=dp,
                                             activation_bits=ab)[0]
        return hw_cache[key]

    one = hw_for(1, 1, 1, 16)
    # what the hardware can join: no peer link (GeForce cards: no NVLink, no PCIe P2P), one-GPU
    # replicas; no NIC, one node
    max_replica = (1 if not one["peer_link"] else
                   req.max_replica_gpus if one["scale_out_bytes_per_s"] else
                   min(req.max_replica_gpus, one["gpus_per_node"]))
    if max_replica < min(N, req.max_replica_gpus):
        print(f"note: --search builds replicas of at most {max_replica} GPU(s): "
              + ("the GPU has no modelled peer link (--tp-bandwidth-gbps gives one)" if not one["peer_link"]
                 else "no scale-out bandwidth is known (--scale-out-gbps gives one)"), file=sys.stderr)
    layouts = list(serving_layouts(spec, N, max_tp=one.get("gpus_per_node"), max_replica=max_replica))
    shown = t0 + 1.0  # progress on stderr once the search has run a second, then every second
    for i, (tp, pp, dp, ep) in enumerate(layouts):
        if time.perf_counter() > shown:
            print(f"searching: layout {i + 1} of {len(layouts)}, {evaluated} points so far", file=sys.stderr)
            shown = time.perf_counter() + 1.0
        gpus = tp * pp * dp
        for (wb, ab, kvb, eb), hw, bits, w_bytes, per_req, cap in sized_options(
                spec, req, (tp, pp, dp, ep), options=options, hw_for=hw_for):
            budget = hw["token_budget"] or math.inf
            held.add((tp, pp, dp, ep, wb, ab, kvb))
            # inside a node a wider tp or more replicas serve the same GPUs at least as well as a
            # deeper pipeline (tp cuts the time per token, pp does not): deeper stages are tried only
            # where the shallower pipeline cannot hold the weights, or its stages fill a node already
            if (pp > 1 and tp * dp < (hw.get("gpus_per_node") or gpus)
                    and (tp, pp // 2, dp, ep, wb, ab, kvb) in held):
                continue
            family = (tp, pp, ep > 1, wb, ab, kvb)  # dp doubles within a family
            if family in stalled and stalled[family][0] < dp:
                continue
            start = 0

            def cost(c):
                st = steady_state(spec, hw, tp=tp, pp=pp, dp=dp, ep=ep, concurrency=c, prompt_tokens=s,
                                  output_tokens=o, token_budget=budget, bits=bits)
                req = hw["request_overhead_s"]
                ttft, e2e, tpot = st["ttft_s"] + req, st["e2e_s"] + req, st["tpot_s"]
                pt = {"tp": tp, "pp": pp, "dp": dp, "ep": ep, "replicas": N // gpus, "gpus_per_replica": gpus,
                      "weight_bits": nominal_bits(wb), "weight_storage_bits": wb, "activation_bits": ab,
                      "expert_bits": nominal_bits(eb) if eb else None,
                      "kv_cache_bits": kvb, "concurrency": c,
                      "ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e, "tokens_per_s_per_user": 1.0 / tpot,
                      "tokens_per_s_per_gpu": c * o / e2e / gpus,
                      "total_tokens_per_s": (N // gpus) * c * o / e2e,
                      "memory_bytes_per_gpu": w_bytes + per_req * math.ceil(c / dp),
                      "max_running_requests": cap}
                for name, v in (("ttft", ttft), ("tpot", tpot)):
                    if best[name] is None or v < best[name][f"{name}_s"]:
                        best[name] = pt
                return pt, ttft <= max_ttft and tpot <= max_tpot

            # concurrency doubles until a target is missed (TTFT and TPOT only grow with C), then
            # the point half-way (x 1.5) between the last that met it and the first that did not;
            # or until tokens/s per GPU stops rising: per user only falls with C, so every later
            # point is beaten on both axes by the one before
            last, mine = None, []
            for c in sorted({x for x in _powers_of_two(cap) if x > start} | ({cap} if cap > start else set())):
                pt, ok = cost(c)
                evaluated += 1
                if not ok:
                    missed.append(pt)  # drawn faded by --plot: where the targets cut the family off
                    mid = 3 * last // 2 if last else 0
                    if last and last < mid < c:
                        pt, ok = cost(mid)
                        evaluated += 1
                        if ok:
                            mine.append(pt)
                    break
                if mine and pt["tokens_per_s_per_gpu"] <= mine[-1]["tokens_per_s_per_gpu"]:
                    break
                mine.append(pt)
                last = c
            points += mine
            # data-parallel attention groups keep doubling only while they raise the best tokens/s
            # per GPU or per user of the family (more groups spread the experts thinner)
            top = (max((p["tokens_per_s_per_gpu"] for p in mine), default=0.0),
                   max((p["tokens_per_s_per_user"] for p in mine), default=0.0))
            prev = reached.get(family)
            if prev is not None and top[0] <= prev[0] and top[1] <= prev[1]:
                stalled[family] = (dp, top)
            reached[family] = (max(top[0], prev[0]), max(top[1], prev[1])) if prev else top
    if req.disaggregated:
        more, n_more = disaggregated_points(spec, req, layouts=layouts, options=options,
                                            hw_for=hw_for, max_ttft=max_ttft, max_tpot=max_tpot)
        points += more
        evaluated += n_more
    if not points:
        if best["tpot"] is None:
            raise CalcError(f"no layout of {N} GPUs holds the weights and one request of {s + o} "
                            "tokens; raise --num-gpus or cut --weight-bits")
        miss = []
        if best["tpot"]["tpot_s"] > max_tpot:
            miss.append(f"the lowest TPOT any layout reaches is {best['tpot']['tpot_s'] * 1e3:.3g} ms "
                        f"({layout_label(best['tpot'])})")
        if best["ttft"]["ttft_s"] > max_ttft:
            miss.append(f"the lowest TTFT is {best['ttft']['ttft_s'] * 1e3:.3g} ms ({layout_label(best['ttft'])})")
        raise CalcError(f"no layout of {N} GPUs meets the targets: " + "; ".join(miss or [
               "each layout meets one target only at a concurrency that misses the other"])
               + "; relax --max-ttft-ms/--max-tpot-ms or raise --num-gpus")
    front = pareto_front(points)
    gpu = next(iter(hw_cache.values()))  # every layout runs on the one accelerator
    return {"num_gpus": N, "gpu": gpu["gpu"], "gpu_default": gpu["gpu_default"], "missed": missed,
            "max_ttft_ms": req.max_ttft_ms, "max_tpot_ms": req.max_tpot_ms,
            "layouts_evaluated": evaluated, "feasible": len(points), "pareto_front": front,
            "best": front[0], "search_time_s": time.perf_counter() - t0, "points": points}


def _par(p):
    """tp/pp/dp/ep of a layout dict, the ones above 1."""
    return f"tp {p['tp']}" + "".join(f" {k} {p[k]}" for k in ("pp", "dp", "ep") if p[k] > 1)


def layout_text_short(p):
    """A search point's layout without its concurrency: one replica's split, or a disaggregated
    pair's prefill and decode pools with their replica counts."""
    if p.get("prefill"):
        q = p["prefill"]
        return f"P {_par(q)} x{q['replicas']} | D {_par(p)} x{p['replicas']}"
    return _par(p)


def bits_label(p):
    """w16a16kv8, with a checkpoint's own expert format: w16e4a16kv8 (gpt-oss's MXFP4 experts)."""
    e = f"e{p['expert_bits']:.3g}" if p.get("expert_bits") and p["expert_bits"] != p["weight_bits"] else ""
    return f"w{p['weight_bits']:.3g}{e}a{p['activation_bits']}kv{p['kv_cache_bits']}"


def layout_label(p):
    """A search point's layout in one short phrase."""
    return f"{layout_text_short(p)}, {bits_label(p)}, C {p['concurrency']}"


def search_report(res, *, s, o, stack, top):
    """The --search table: the Pareto front, best tokens/s per GPU first."""
    slo = ", ".join(x for x in ((f"TTFT <= {res['max_ttft_ms']:g} ms" if res["max_ttft_ms"] else ""),
                                (f"TPOT <= {res['max_tpot_ms']:g} ms" if res["max_tpot_ms"] else "")) if x)
    lines = textwrap.wrap(
        f"search: {res['num_gpus']} x {res['gpu']}"
        + (" (the default GPU; --gpu NAME for another)" if res["gpu_default"] else "") + f", {stack} stack, s = {s} prompt and o = {o} output tokens per request, "
        f"{slo or 'no latency target'}; {res['layouts_evaluated']} (layout, bits, concurrency) points costed "
        f"in {res['search_time_s'] * 1e3:.0f} ms, {res['feasible']} meet the targets; the Pareto front of "
        "tokens/s per GPU against tokens/s per user (continuous batching in steady state, replicas fill "
        "the GPUs; at the fewest bits the GPU runs, as fewer are never slower in this model, which does "
        "not weigh accuracy (--precision picks a format); tp stays "
        "inside a node; pipelines deeper than needed to hold the weights only once a stage fills a node):",
        width=100)
    lines += ["", f"{'layout (per replica)':<34}{'repl':>5}{'C':>6}{'TTFT ms':>10}{'TPOT ms':>9}"
                  f"{'tok/s/user':>11}{'tok/s/GPU':>11}{'total tok/s':>13}{'GiB/GPU':>9}"]
    for p in res["pareto_front"][:top]:
        par = layout_text_short(p) + " " + bits_label(p)
        lines.append(f"{par:<34}{p['replicas']:>5}{p['concurrency']:>6}{p['ttft_s'] * 1e3:>10.1f}"
                     f"{p['tpot_s'] * 1e3:>9.2f}{p['tokens_per_s_per_user']:>11.1f}{p['tokens_per_s_per_gpu']:>11.1f}"
                     f"{p['total_tokens_per_s']:>13,.0f}{p['memory_bytes_per_gpu'] / 2**30:>9.1f}")
    if len(res["pareto_front"]) > top:
        lines.append(f"... {len(res['pareto_front']) - top} more on the front (--top)")
    if any(p.get("expert_bits") for p in res["pareto_front"][:top]):
        lines.append("(wXeY: X-bit weights and the checkpoint's own Y-bit routed experts, its quantization_config)")
    b = res["best"]
    lines += ["", f"best tokens/s per GPU: {layout_label(b)} x {b['replicas']} replica(s): "
                  f"{b['tokens_per_s_per_gpu']:,.1f} tokens/s per GPU at {b['tokens_per_s_per_user']:,.1f} per user"]
    return "\n".join(lines)


def plot_front(res, path, *, precision=None):
    """Draw every point that meets the targets and the Pareto front to path with matplotlib
    (imported only here), titled with the model, the GPUs, the precision and the targets; returns
    the one-line note to print (where it wrote, or that matplotlib is not installed). A failed
    write is one line and exit 2 (the path was checked before the search)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed, so no plot was drawn (pip install matplotlib)"
    fig, ax = plt.subplots(figsize=(7, 5))
    if res.get("missed"):  # the first concurrency of each layout past a target: faded, so the bound shows
        ax.scatter([p["tokens_per_s_per_user"] for p in res["missed"]],
                   [p["tokens_per_s_per_gpu"] for p in res["missed"]], s=8, c="C3", alpha=0.25,
                   label="misses a target")
    ax.scatter([p["tokens_per_s_per_user"] for p in res["points"]],
               [p["tokens_per_s_per_gpu"] for p in res["points"]], s=8, c="0.7", label="meets the targets")
    front = sorted(res["pareto_front"], key=lambda p: p["tokens_per_s_per_user"])
    ax.plot([p["tokens_per_s_per_user"] for p in front], [p["tokens_per_s_per_gpu"] for p in front],
            "o-", c="C0", label="Pareto front")
    xs = [p["tokens_per_s_per_user"] for p in res["points"]] or [0.0]
    ys = [p["tokens_per_s_per_gpu"] for p in res["points"]] or [0.0]
    xr, yr = (max(xs) - min(xs)) or 1.0, (max(ys) - min(ys)) or 1.0
    last = None
    for p in front:  # label a point only clear of the last label (in axis fractions), inside the axes
        x, y = p["tokens_per_s_per_user"], p["tokens_per_s_per_gpu"]
        if last is not None and abs(x - last[0]) / xr < 0.12 and abs(y - last[1]) / yr < 0.06:
            continue
        right = (x - min(xs)) / xr > 0.7
        ax.annotate(layout_label(p), (x, y), fontsize=6, xytext=(-4 if right else 4, 4),
                    textcoords="offset points", ha="right" if right else "left")
        last = (x, y)
    ax.set_xlabel("tokens/s per user (1 / TPOT)")
    ax.set_ylabel("output tokens/s per GPU")
    slo = ", ".join(x for x in ((f"TTFT <= {res['max_ttft_ms']:g} ms" if res["max_ttft_ms"] else ""),
                                (f"TPOT <= {res['max_tpot_ms']:g} ms" if res["max_tpot_ms"] else "")) if x)
    model = res.get("model_described") or "model"
    ax.set_title(f"{model[:90]}\n{res['num_gpus']} x {res['gpu']}, "
                 + (f"--precision {precision}" if precision else "bits as labelled (w/a/kv)")
                 + f"; {slo or 'no latency target'}", fontsize=8)
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except (OSError, ValueError) as exc:  # a full disk, a folder gone since the check
        plt.close(fig)
        raise CalcError(f"--plot {path}: the plot could not be written ({exc})")
    plt.close(fig)
    return f"plot of the front written to {path}"


# ======== llmcalc/serve/capacity.py ===============================================================
# Capacity planning: how many GPUs, of which kind, serve a request rate within a TTFT and TPOT
# target at a percentile, and what a million input and output tokens then cost (the command that
# sets the winner up is its stack's own, launch.py).
#
# For each GPU kind and each replica layout that holds the model (tensor parallel inside a node;
# data-parallel attention and expert parallelism for MoE models), the most requests per second one
# replica serves while the simulated benchmark's TTFT and TPOT at the percentile stay within the
# targets (bisection on the rate; each point a run of Poisson arrivals through simulate_requests,
# the steady state's saturation rate as the upper bound); the fleet is then ceil(R / that) replicas.
# The winner has the fewest GPUs, or with prices the lowest cost per hour.

# Rate bisection steps per layout: the rate a replica sustains to 2^-7 (0.8%) of its saturation rate.
CAPACITY_BISECTION_STEPS = 7


def fleet_replicas(*, rate, replica_rate):
    """Replicas that serve `rate` requests/s when one serves at most `replica_rate` (load balanced
    evenly, as a round-robin router spreads Poisson arrivals: each replica sees rate / n)."""
    return math.ceil(rate / replica_rate - 1e-9)


def cost_per_million_tokens(*, dollars_per_hour, input_tokens_per_s, output_tokens_per_s, prefill_share):
    """($ per million input tokens, $ per million output tokens): the fleet's cost per second split
    by the share of engine time its steps spend on prompt tokens (prefill_share: a mean step's
    time less the same step without its prompt chunks, over the mean step) and on decodes."""
    per_s = dollars_per_hour / 3600
    i = per_s * prefill_share / input_tokens_per_s * 1e6 if input_tokens_per_s else None
    o = per_s * (1 - prefill_share) / output_tokens_per_s * 1e6 if output_tokens_per_s else None
    return i, o


def capacity_plan(spec, req, *, gpus, flags, prices, requests, bits, percentile, rate, max_ttft,
                  max_tpot, sim_requests, progress=None):
    """The fewest GPUs (or the cheapest fleet) of each kind in `gpus` ((name as given, accelerator
    record) pairs; `flags` the HardwareFlags over them) that serve `rate` requests/s
    of `requests`' mix within max_ttft / max_tpot (seconds, inf: none) at `percentile` (50, 90 or
    99), at the bits given (`bits`, as forward_pass takes them). Returns
    {"candidates": [...per kind and layout...], "by_gpu": {kind: best}, "winner": best overall,
    "layouts_fitted": layouts whose KV pool holds the longest request}."""
    import time  # only a capacity plan times itself
    t0 = shown = time.perf_counter()
    q = {50: "_median_s", 90: "_p90_s", 99: "_p99_s"}[percentile]
    s_mean = sum(r[1] for r in requests) / len(requests)
    o_mean = sum(r[2] for r in requests) / len(requests)
    steps = req.num_scheduler_steps or 1  # vLLM 0.6's multi-step scheduling, as a benchmark runs it
    cands, by_gpu, fitted = [], {}, 0  # fitted: layouts whose pool holds the longest request
    # the better fleet: the cheaper with prices, else the fewer GPUs, then the more requests/s per GPU
    key = (lambda x: (x["dollars_per_hour"], x["num_gpus"])) if prices else (
        lambda x: (x["num_gpus"], -x["replica_request_rate"] / x["gpus_per_replica"]))
    for g_i, (gpu, rec) in enumerate(gpus):
        def hardware(tp=1, pp=1, dp=1):
            return resolve_hardware(rec, flags, gpu_given=True, tp=tp, pp=pp, dp=dp,
                                    activation_bits=req.activation_bits)[0]
        one = hardware()
        node = one.get("gpus_per_node") or 8
        layouts = [lay for lay in serving_layouts(spec, node, max_tp=node, max_replica=node) if lay[1] == 1]
        for tp, pp, dp, ep in layouts:
            if time.perf_counter() - shown > 1.0 and progress:
                progress(f"capacity: {gpu} layout tp {tp} dp {dp} ep {ep}, {time.perf_counter() - t0:.1f} s so far")
                shown = time.perf_counter()
            hw = hardware(tp, pp, dp)
            if req.speculative:
                hw["speculative"] = req.speculative
            w_bytes = weight_bytes_per_gpu(spec, tp=tp, pp=pp, w_bits=bits["w_bits"], e_bits=bits["e_bits"], ep=ep,
                                           etp=tp * dp // ep)
            ctx = max(1, round(s_mean + o_mean))
            pool, per_req, cap = kv_pool_capacity(spec, hw, tp=tp, pp=pp, context=ctx, w_bytes=w_bytes,
                                                  kv_bits=bits["kv_bits"], a_bits=bits["a_bits"],
                                                  state_bits=bits["state_bits"], dp=dp)
            longest = max(r[1] + r[2] for r in requests)
            if cap < 1 or (per_req > 0 and pool * ctx / per_req < longest):
                continue  # the weights leave no pool, or the longest request does not fit it
            fitted += 1
            seqs = hw["max_num_seqs"] * dp if hw.get("max_num_seqs") else None
            run_cap = min(cap, seqs) if seqs else cap
            budget = hw["token_budget"] or math.inf
            pool_tokens = kv_pool_tokens(pool_bytes=pool, bytes_per_request=per_req, context=ctx, dp=dp)
            sat = steady_state(spec, hw, tp=tp, pp=pp, dp=dp, ep=ep, concurrency=run_cap,
                               prompt_tokens=max(1, round(s_mean)), output_tokens=max(1, round(o_mean)),
                               token_budget=budget, bits=bits)
            top = run_cap / (sat["e2e_s"] + hw["request_overhead_s"])  # the replica's saturation rate
            memo = {}

            def run(r):
                return simulate_requests(spec, hw, tp=tp, requests=requests[:sim_requests],
                                         token_budget=budget, pool_tokens=pool_tokens,
                                         max_running=seqs, bits=bits, rate=r, seed=req.seed, pp=pp,
                                         dp=dp, ep=ep, memo=memo, scheduler_steps=steps)

            def meets(st):
                return st["ttft" + q] <= max_ttft and st["tpot" + q] <= max_tpot

            lo, hi, best = 0.0, 0.95 * top, None  # past ~95% of saturation the queue never settles
            st = run(hi)
            if meets(st):
                lo, best = hi, st
            else:
                for _ in range(CAPACITY_BISECTION_STEPS):
                    mid = (lo + hi) / 2
                    st = run(mid)
                    if meets(st):
                        lo, best = mid, st
                    else:
                        hi = mid
            if best is None:
                continue  # even a light load misses the targets on this layout
            n_gpus = tp * dp * pp
            replicas = fleet_replicas(rate=rate, replica_rate=lo)
            c = {"gpu": gpu, "tp": tp, "pp": pp, "dp": dp, "ep": ep, "gpus_per_replica": n_gpus,
                 "replica_request_rate": lo, "replicas": replicas, "num_gpus": replicas * n_gpus,
                 "dollars_per_hour": prices[g_i] * replicas * n_gpus if prices else None,
                 "hw": hw, "bits": bits, "budget": budget, "pool_tokens": pool_tokens, "max_num_seqs": seqs,
                 "memory_utilization": hw["memory_utilization"], "token_budget": hw["token_budget"]}
            cands.append(c)
            if gpu not in by_gpu or key(c) < key(by_gpu[gpu]):
                by_gpu[gpu] = c
    if not by_gpu:
        return {"candidates": cands, "by_gpu": by_gpu, "winner": None, "layouts_fitted": fitted}
    for c in by_gpu.values():  # each kind's answer at its operating point: the load per replica
        hw, bits = c["hw"], c["bits"]
        a_rate = rate / c["replicas"]
        st = simulate_requests(spec, hw, tp=c["tp"], requests=requests[:sim_requests],
                               token_budget=c["budget"], pool_tokens=c["pool_tokens"],
                               max_running=c["max_num_seqs"], bits=bits, rate=a_rate, seed=req.seed,
                               pp=c["pp"], dp=c["dp"], ep=c["ep"], scheduler_steps=steps)
        mk = dict(tp=c["tp"], pp=c["pp"], dp=c["dp"], ep=c["ep"], bits=bits, prompt_tokens=max(1, round(s_mean)),
                  decode_context=s_mean + o_mean / 2)
        full = mixed_step(spec, hw, decodes=c["dp"] * st["decodes_per_step"],
                          prefill_tokens=c["dp"] * st["prompt_tokens_per_step"], **mk)["time_s"]
        dec = mixed_step(spec, hw, decodes=c["dp"] * st["decodes_per_step"], prefill_tokens=0, **mk)["time_s"]
        share = max(0.0, min(1.0, (full - dec) / full))
        cached = st["prompt_tokens_cached"] / max(1, st["prompt_tokens_computed"] + st["prompt_tokens_cached"])
        c.update(operating_point={k: st[k] for k in ("ttft_s", "ttft" + q, "tpot_s", "tpot" + q, "e2e_s",
                                                      "decodes_per_step", "prompt_tokens_per_step")},
                 prefill_share=share, cached_input_share=cached)
        if c["dollars_per_hour"] is not None:
            computed = rate * s_mean * (1 - cached)
            i, o = cost_per_million_tokens(dollars_per_hour=c["dollars_per_hour"], input_tokens_per_s=computed,
                                           output_tokens_per_s=rate * o_mean, prefill_share=share)
            c.update(cost_per_million_input_tokens=i, cost_per_million_output_tokens=o,
                     cost_per_million_cached_input_tokens=0.0 if cached else None)
        else:
            c.update(cost_per_million_input_tokens=None, cost_per_million_output_tokens=None,
                     cost_per_million_cached_input_tokens=None)
    winner = min(by_gpu.values(), key=key)
    if progress and time.perf_counter() - t0 > 1.0:
        print(f"capacity: {len(cands)} layouts sized in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return {"candidates": cands, "by_gpu": by_gpu, "winner": winner, "layouts_fitted": fitted}


# ======== llmcalc/tools/latency_capacity.py =======================================================
# calc_inference_latency.py's capacity plan (issue 34): --target-request-rate R (or a trace's own
# rate) under --max-ttft-ms / --max-tpot-ms at --slo-percentile, over the GPU kinds --gpu lists; the
# fewest GPUs, or the cheapest with --cost-per-gpu-hour, the cost per million tokens and the engine
# command. The search itself is serve/capacity.py.

def add_capacity_args(parser):
    """The capacity-planning argument group."""
    g = parser.add_argument_group("capacity planning (how many GPUs, of which kind, for a load)")
    g.add_argument("--target-request-rate", type=finite_float, default=None,
                   help="requests/s the fleet must serve: the fewest GPUs (or the cheapest fleet) of each "
                        "--gpu kind (a comma list: --gpu a100,h100,h200) that keeps --max-ttft-ms and "
                        "--max-tpot-ms at --slo-percentile; with --trace, its mix at this rate (default: the "
                        "trace's own rate)")
    g.add_argument("--slo-percentile", type=bounded_int, choices=(50, 90, 99), default=None,
                   help="percentile of TTFT and TPOT the targets hold at in the plan (default 90)")
    g.add_argument("--cost-per-gpu-hour", default=None, metavar="$[,$...]",
                   help="price of one GPU-hour, one value or one per --gpu kind: the plan then picks the "
                        "cheapest fleet and prices a million input and output tokens")


def validate_capacity(args, parser, req):
    """One-line errors for the capacity flags; sets req.capacity (False outside a plan), the GPU
    kinds (req.capacity_gpus; the first is the GPU of the rest of main) and prices."""
    req.capacity = False
    targets = req.max_ttft_ms is not None or req.max_tpot_ms is not None
    trace_plan = req.trace and targets and not args.search
    if args.target_request_rate is None and not trace_plan:
        for f, v in (("--slo-percentile", req.slo_percentile),
                     ("--cost-per-gpu-hour", args.cost_per_gpu_hour)):
            if v is not None:
                parser.error(f"{f} belongs to a capacity plan; add --target-request-rate R")
        if args.gpu and "," in args.gpu:
            parser.error("--gpu takes one name outside a capacity plan (--target-request-rate R takes a list)")
        return
    req.capacity = True
    if args.search:
        parser.error("--target-request-rate plans a fleet; leave out --search (it fronts one GPU budget)")
    load = [f for f, v in (("-c", req.concurrency), ("--request-rate", req.request_rate),
                           ("-b", req.batch_size if req.batch_size_given else None))
            if v is not None]
    layout = [f for f, v in (("-tp", req.tensor_parallel_size), ("-pp", req.pipeline_parallel_size),
                             ("-dp", req.data_parallel_size), ("-ep", req.expert_parallel_size))
              if v != 1]
    if load or layout:
        parser.error(f"a capacity plan picks the layout and the load per replica itself; leave out "
                     f"{', '.join(load + layout)}")
    if args.target_request_rate is not None and not args.target_request_rate > 0:
        parser.error(f"--target-request-rate must be positive, got {args.target_request_rate:g}")
    for name in ("max_ttft_ms", "max_tpot_ms"):
        v = getattr(args, name)
        if v is not None and not v > 0:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {v:g}")
    if req.max_ttft_ms is None and req.max_tpot_ms is None:
        parser.error("a capacity plan needs a target: --max-ttft-ms and/or --max-tpot-ms")
    names = [x.strip() for x in (args.gpu or "h100-sxm").split(",") if x.strip()]
    if not names or len(set(names)) != len(names):
        parser.error(f"--gpu {args.gpu!r}: give distinct GPU names separated by commas")
    for n in names:
        accelerator_record(n, parser, without="a capacity plan needs hardware.py's GPUs")
    req.capacity_gpus = names
    req.capacity_prices = None
    if args.cost_per_gpu_hour is not None:
        try:
            prices = [float(x) for x in args.cost_per_gpu_hour.split(",")]
        except ValueError:
            parser.error(f"--cost-per-gpu-hour {args.cost_per_gpu_hour!r}: give dollars per GPU-hour, one value "
                         "or one per --gpu kind")
        if len(prices) not in (1, len(names)):
            parser.error(f"--cost-per-gpu-hour has {len(prices)} prices for {len(names)} GPU kinds; give one or "
                         f"{len(names)}")
        if any(not 1e-6 <= p <= 1e6 for p in prices):  # past 1e6 a fleet's $/hour overflows to inf
            parser.error(f"--cost-per-gpu-hour must be positive, from 1e-6 to 1e6 dollars per GPU-hour, got "
                         f"{args.cost_per_gpu_hour}")
        req.capacity_prices = prices * len(names) if len(prices) == 1 else prices
    req.slo_percentile = req.slo_percentile or 90
    if req.num_requests is None:
        req.num_requests = 500  # the simulated run at each candidate rate


def run_capacity(spec, req, args, parser, *, bits, flags):
    """The plan, printed (report or --json) and returned as a dict. flags: the HardwareFlags over
    each GPU kind's record."""
    reqs = req.requests or fixed_requests(n=req.num_requests, input_len=req.prompt_tokens,
                                          output_len=req.output_tokens,
                                          prefix_tokens=req.prefix_tokens or 0)
    rate = args.target_request_rate
    if rate is None:  # the trace's own mean rate
        span = reqs[-1][0] - reqs[0][0]
        if not span > 0:
            parser.error("--trace: its arrivals span no time, so it has no rate; give --target-request-rate R")
        rate = (len(reqs) - 1) / span
    max_ttft = req.max_ttft_ms * 1e-3 if req.max_ttft_ms is not None else math.inf
    max_tpot = req.max_tpot_ms * 1e-3 if req.max_tpot_ms is not None else math.inf
    gpus = [(n, accelerator_record(n, parser, without="a capacity plan needs hardware.py's GPUs"))
            for n in req.capacity_gpus]
    plan = capacity_plan(spec, req, gpus=gpus, flags=flags, prices=req.capacity_prices,
                         requests=reqs, bits=bits, percentile=req.slo_percentile, rate=rate,
                         max_ttft=max_ttft, max_tpot=max_tpot, sim_requests=req.num_requests,
                         progress=lambda m: print(m, file=sys.stderr))
    w = plan["winner"]
    if w is None and not plan["layouts_fitted"]:
        longest = max(r[1] + r[2] for r in reqs)
        parser.error(f"no layout of {', '.join(req.capacity_gpus)} (one node per replica) holds "
                     f"the weights and a request of {longest:,} tokens in its KV pool: cut -s/-o, "
                     "--precision or --kv-cache-bits, or add a GPU kind")
    if w is None:
        parser.error(f"no layout of {', '.join(req.capacity_gpus)} (one node per replica) meets "
                     f"{targets_text(req.max_ttft_ms, req.max_tpot_ms)} at p{req.slo_percentile}, "
                     "even lightly loaded: relax the targets, cut -s/-o or --precision, or add a "
                     "GPU kind")
    model = args.hf_model_name_or_path or "MODEL"
    prefix = bool(req.prefix_tokens) or any(r[3] is not None for r in reqs)

    def public(c):
        out = {k: v for k, v in c.items() if k not in ("hw", "bits", "budget", "pool_tokens")}
        out["engine_command"] = launch_command(c, model=model, prefix_caching=prefix,
                                               speculative=req.speculative)
        return out
    by_gpu = {g: public(c) for g, c in plan["by_gpu"].items()}
    best = by_gpu[w["gpu"]]
    res = {"target_request_rate": rate, "slo_percentile": req.slo_percentile,
           "max_ttft_ms": req.max_ttft_ms,
           "max_tpot_ms": req.max_tpot_ms, "gpus_considered": req.capacity_gpus,
           "prices_per_gpu_hour": req.capacity_prices, "serving_stack": w["hw"]["serving_stack"],
           "mean_input_tokens": sum(r[1] for r in reqs) / len(reqs),
           "mean_output_tokens": sum(r[2] for r in reqs) / len(reqs),
           "requests_simulated": req.num_requests,
           "num_gpus": best["num_gpus"], "gpu": best["gpu"], "replicas": best["replicas"],
           "layout": {k: best[k] for k in ("tp", "pp", "dp", "ep", "gpus_per_replica")},
           "dollars_per_hour": best["dollars_per_hour"],
           "cost_per_million_input_tokens": best["cost_per_million_input_tokens"],
           "cost_per_million_output_tokens": best["cost_per_million_output_tokens"],
           "cost_per_million_cached_input_tokens": best["cost_per_million_cached_input_tokens"],
           "engine_command": best["engine_command"], "by_gpu": by_gpu,
           "layouts_sized": len(plan["candidates"]), "warnings": list(spec["warnings"]),
           "convention": "each replica one node at most; its rate the most requests/s whose "
                         f"simulated run of {req.num_requests} Poisson arrivals keeps TTFT and "
                         f"TPOT at p{req.slo_percentile} within the targets (bisection to 0.8% of "
                         "the saturation rate); replicas = ceil(rate / that); the cost split into "
                         "input and output by the share of a mean step's time its prompt chunks "
                         "take; cached input tokens take no prefill (priced 0, their pool space is "
                         "in the output share)"}
    if args.brief:
        print(f"{res['num_gpus']} x {res['gpu']}" + (f", ${res['cost_per_million_output_tokens']:.3f} per million output "
                                                     "tokens" if res["cost_per_million_output_tokens"] is not None else ""))
    elif args.json:
        import json
        print(json.dumps(res, indent=2))
    else:
        print(capacity_report(res))
    return res


def launch_command(c, *, model, prefix_caching, speculative):
    """A plan candidate's launch command, as its stack's record writes it (serve/launch.py)."""
    plan = LaunchPlan(model=model, tp=c["tp"], pp=c["pp"], dp=c["dp"], ep=c["ep"],
                      replicas=c["replicas"],
                      kv_bits=c["bits"]["kv_bits"], memory_utilization=c["memory_utilization"],
                      max_num_seqs=c["max_num_seqs"] and c["max_num_seqs"] // c["dp"],
                      max_num_tokens=c["token_budget"], prefix_caching=prefix_caching,
                      speculative=speculative)
    return launch_text(SERVING_STACKS[c["hw"]["serving_stack"]].launch(plan), c["replicas"])


def targets_text(max_ttft_ms, max_tpot_ms):
    """The targets given, in words ("TTFT <= 300 ms and TPOT <= 25 ms"); a target not given is left out."""
    return " and ".join(f"{n} <= {v} ms" for n, v in (("TTFT", max_ttft_ms), ("TPOT", max_tpot_ms)) if v is not None)


def capacity_report(res):
    """The plan as text: one line per GPU kind, the winner and its engine command."""
    def money(x):
        return "-" if x is None else f"${x:,.3f}"
    lines = [f"capacity plan: {res['target_request_rate']:g} requests/s of {res['mean_input_tokens']:,.0f} input and "
             f"{res['mean_output_tokens']:,.0f} output tokens (means), {targets_text(res['max_ttft_ms'], res['max_tpot_ms'])} "
             f"at p{res['slo_percentile']}, {res['serving_stack']} stack", "",
             f"{'GPU':<14}{'layout':<16}{'req/s each':>11}{'replicas':>9}{'GPUs':>6}{'$/hour':>11}"
             f"{'$/M in':>10}{'$/M out':>10}"]
    for g, c in res["by_gpu"].items():
        lay = f"tp {c['tp']}" + (f" dp {c['dp']}" if c["dp"] > 1 else "") + (f" ep {c['ep']}" if c["ep"] > 1 else "")
        lines.append(f"{g:<14}{lay:<16}{c['replica_request_rate']:>11.2f}{c['replicas']:>9}{c['num_gpus']:>6}"
                     f"{money(c['dollars_per_hour']):>11}{money(c['cost_per_million_input_tokens']):>10}"
                     f"{money(c['cost_per_million_output_tokens']):>10}")
    lines += ["", f"winner: {res['num_gpus']} x {res['gpu']} ({res['replicas']} replica(s) of "
                  f"{res['layout']['gpus_per_replica']})"
              + (f", {money(res['dollars_per_hour'])} per hour: {money(res['cost_per_million_input_tokens'])} per "
                 f"million input tokens, {money(res['cost_per_million_output_tokens'])} per million output tokens"
                 if res["dollars_per_hour"] is not None else " (give --cost-per-gpu-hour to price it)"),
              "", res["engine_command"], "", "convention: " + res["convention"]]
    return "\n".join(lines)


# ======== llmcalc/tools/latency_mix.py ============================================================
# calc_inference_latency.py's flags for request mixes, traces, prefix caching and speculative
# decoding (issue 34): the argument groups, their one-line checks, and the mix in words. The
# formulas live in serve/workload.py, serve/simulate.py and serve/speculative.py.

def add_mix_args(parser):
    """The request-mix, trace, prefix-cache and speculative-decoding argument groups."""
    g = parser.add_argument_group("request mixes, traces and prefix caching (a --num-requests benchmark; "
                                  "spelled as `vllm bench serve` spells them)")
    g.add_argument("--dataset", "--dataset-name", choices=("random", "sharegpt"), default=None,
                   help="draw each request's lengths: random = vLLM's RandomDataset (uniform within "
                        "--random-range-ratio of --random-input-len and --random-output-len), sharegpt = a "
                        "lognormal mix with the means of vLLM's ShareGPT runs (215 input, 197 output tokens; "
                        "sigma 1.0 assumed); default: every request -s and -o")
    g.add_argument("--random-input-len", type=bounded_int, default=None,
                   help="--dataset random: the mean prompt tokens (default 1024, vLLM's)")
    g.add_argument("--random-output-len", type=bounded_int, default=None,
                   help="--dataset random: the mean output tokens (default 128, vLLM's)")
    g.add_argument("--random-range-ratio", type=finite_float, default=None,
                   help="--dataset random: lengths uniform over [len (1 - r), len (1 + r)], 0 <= r < 1 "
                        "(default 0: every request alike)")
    g.add_argument("--trace", default=None, metavar="FILE",
                   help="requests from a file: JSON lines or CSV with arrival_s, input_tokens, output_tokens "
                        "and optionally prefix_id, prefix_tokens (a conversation's turns share their history "
                        "this way); its arrivals are used unless --request-rate or -c is given")
    g.add_argument("--prefix-tokens", "--random-prefix-len", type=bounded_int, default=None,
                   help="the first N prompt tokens are shared by every request and cached once computed "
                        "(vLLM's prefix caching, SGLang's RadixAttention): the others compute only the rest. "
                        "With -s, part of s; with --dataset, prepended to the drawn prompt (vLLM's "
                        "--random-prefix-len). Without a load (-b), the prefix's cache is taken as there")
    g.add_argument("--prefix-hit-rate", type=finite_float, default=None,
                   help="share of requests that find the shared prefix (0-1; the others compute theirs "
                        "whole; default 1 with --prefix-tokens, a trace's own prefix_id otherwise)")
    g.add_argument("--num-scheduler-steps", type=bounded_int, default=None,
                   help="vLLM 0.6's multi-step scheduling: N decode steps run before the scheduler looks "
                        "again, so arrivals wait for the window (a --num-requests benchmark; default 1)")
    g.add_argument("--host-kv-cache-gib", type=finite_float, default=None,
                   help="host memory per GPU for a KV tier (vLLM CPU offload / LMCache, SGLang HiCache): "
                        "prefixes the pool evicts move there and come back over the host link on a hit "
                        "instead of being computed again (default: none)")
    g.add_argument("--host-kv-bandwidth-gbps", type=finite_float, default=None,
                   help="host-to-GPU bandwidth reached, GB/s per GPU (default: 0.70 of the GPU's host link, LMCache's measured reload: "
                        "PCIe 4.0/5.0 x16, NVLink-C2C on Grace superchips)")
    g = parser.add_argument_group("speculative decoding and multi-token prediction")
    g.add_argument("--speculative-tokens", "--num-speculative-tokens", type=bounded_int, default=None,
                   help="K draft tokens proposed per decoding sequence and verified in one pass of K + 1 "
                        "(vLLM's num_speculative_tokens, SGLang's speculative-num-steps); default none")
    g.add_argument("--speculative-method", choices=SPECULATIVE_METHODS, default=None,
                   help="the draft: mtp = the model's own MTP module (read from the config), eagle = an EAGLE "
                        "head (one decoder layer of the target's shape), draft = a smaller model "
                        "(--draft-model), ngram = prompt lookup on the host (no GPU work); default mtp when "
                        "the config has MTP layers")
    g.add_argument("--acceptance-rate", default=None, metavar="A[,A2,...]",
                   help="chance each draft token is accepted given the ones before it were: one value for "
                        "every position or one per position (defaults: mtp 0.875, DeepSeek-V3's measured "
                        "85-90%%; eagle 0.75, EAGLE-3's measured acceptance lengths for Llama-3.1-8B in vLLM; "
                        "draft and ngram need it)")
    g.add_argument("--draft-model", default=None, metavar="CONFIG",
                   help="--speculative-method draft: the draft model's config.json (or folder)")


def validate_speculative(args, parser, spec, req):
    """One-line errors for the speculative-decoding flags; resolves the method, the acceptance
    rates and the draft's spec into req.speculative (None without --speculative-tokens)."""
    req.speculative = None
    given = [f for f, v in (("--speculative-method", args.speculative_method), ("--acceptance-rate",
                                                                              args.acceptance_rate),
                            ("--draft-model", args.draft_model)) if v is not None]
    if args.speculative_tokens is None:
        if given:
            parser.error(f"{', '.join(given)} belong{'s' if len(given) == 1 else ''} to speculative decoding; "
                         "add --speculative-tokens K")
        return
    k = args.speculative_tokens
    if args.search:
        parser.error("--search runs without speculative decoding; leave out --speculative-tokens")
    mtp = spec.get("mtp_layers_not_built", 0)
    method = args.speculative_method or ("mtp" if mtp else None)
    if method is None:
        parser.error("--speculative-tokens needs a draft: this model has no MTP layers (num_nextn_predict_layers), "
                     "so give --speculative-method eagle, draft (with --draft-model) or ngram")
    if method == "mtp" and not mtp:
        parser.error("--speculative-method mtp: this model's config has no MTP layers (num_nextn_predict_layers); "
                     "use eagle, draft or ngram")
    if (method == "draft") != (args.draft_model is not None):
        parser.error("--draft-model goes with --speculative-method draft, and draft needs it" if method == "draft"
                     else f"--draft-model is the draft of --speculative-method draft, not {method}")
    if args.acceptance_rate is None and method not in DEFAULT_ACCEPTANCE:
        parser.error(f"--speculative-method {method} has no measured default acceptance rate here (it depends "
                     f"on the {'draft/target pair' if method == 'draft' else 'text repeating the prompt'}): "
                     "give --acceptance-rate A (one value, or one per speculative token)")
    try:
        rates = acceptance_rates(args.acceptance_rate if args.acceptance_rate is not None
                                 else DEFAULT_ACCEPTANCE[method][0], k)
    except ValueError as exc:
        parser.error(str(exc))
    draft = None
    if method in ("mtp", "eagle"):
        draft = draft_layer_spec(spec)
    elif method == "draft":
        import types
        try:
            draft, _ = resolve_model_spec(types.SimpleNamespace(hf_model_name_or_path=args.draft_model),
                                          defaults={"num_experts": 8})
        except ValueError as exc:
            parser.error(f"--draft-model: {exc}")
        why = layout_problem(draft, tp=req.tensor_parallel_size, pp=1, dp=1, ep=1)
        if why:
            parser.error(f"--draft-model at the target's -tp {req.tensor_parallel_size}: {why}")
    source = (DEFAULT_ACCEPTANCE[method][1] if args.acceptance_rate is None else "given")
    req.speculative = {"k": k, "method": method, "acceptance_rates": rates,
                       "acceptance_source": source, "tokens_per_step": tokens_per_step(rates),
                       "draft_spec": draft, "target_spec": spec, "draft_model": args.draft_model}


def validate_workload(args, parser, req):
    """One-line errors for the request-mix, trace and prefix-cache flags."""
    rnd = [f for f, v in (("--random-input-len", req.random_input_len),
                          ("--random-output-len", req.random_output_len),
                          ("--random-range-ratio", req.random_range_ratio)) if v is not None]
    if rnd and req.dataset != "random":
        parser.error(f"{', '.join(rnd)} belong{'s' if len(rnd) == 1 else ''} to --dataset random; add it")
    if req.trace and req.dataset:
        parser.error("--trace and --dataset both give the requests; give one")
    if req.random_range_ratio is not None and not 0 <= req.random_range_ratio < 1:
        parser.error("--random-range-ratio must be at least 0 and below 1 (vLLM's rule), got "
                     f"{req.random_range_ratio:g}")
    if req.prefix_hit_rate is not None:
        if not 0 <= req.prefix_hit_rate <= 1:
            parser.error(f"--prefix-hit-rate must be between 0 and 1, got {req.prefix_hit_rate:g}")
        if not req.prefix_tokens and not req.trace:
            parser.error("--prefix-hit-rate is the share of requests that find the shared prefix: add "
                         "--prefix-tokens N (or a --trace with prefix_id)")
        if req.num_requests is None and not req.trace:
            parser.error("--prefix-hit-rate draws which requests of a benchmark run find the prefix: add "
                         "--num-requests N and a load (without one, -b takes the prefix's cache as there)")
    mix = bool(req.dataset or req.trace)
    if (mix or req.prefix_tokens) and args.search:
        parser.error("--search runs every request alike (-s, -o); leave out --dataset, --trace and --prefix-tokens")
    if req.dataset and req.num_requests is None and args.target_request_rate is None:
        parser.error(f"--dataset {req.dataset} draws --num-requests N requests; add it (and "
                     "--request-rate or -c)")
    if req.trace and req.batch_size_given:
        parser.error("--trace is a served load; leave out -b")
    if req.prefix_tokens and not mix and req.num_requests is None and (
            req.concurrency is not None or req.request_rate is not None):
        parser.error("prefix caching under a load is simulated: add --num-requests N (a benchmark run)")
    if (req.prefix_tokens and not req.dataset and not req.trace
            and req.prefix_tokens >= req.prompt_tokens):
        parser.error(f"--prefix-tokens {req.prefix_tokens} must be fewer than the prompt's -s "
                     f"{req.prompt_tokens} (the prefix is its first tokens; a request computes at "
                     "least one of its own)")
    if req.num_scheduler_steps is not None and req.num_requests is None and not req.trace:
        parser.error("--num-scheduler-steps is simulated: add --num-requests N (a benchmark run)")
    host = [f for f, v in (("--host-kv-cache-gib", req.host_kv_cache_gib),
                           ("--host-kv-bandwidth-gbps", req.host_kv_bandwidth_gbps))
            if v is not None]
    if host and not (req.prefix_tokens or req.trace):
        parser.error(f"{host[0]} is a tier for cached prefixes: add --prefix-tokens N or a --trace with prefix_id "
                     "(and --num-requests)")
    if req.host_kv_bandwidth_gbps is not None and req.host_kv_cache_gib is None:
        parser.error("--host-kv-bandwidth-gbps belongs to a host tier: add --host-kv-cache-gib G")
    if host and req.capacity:
        parser.error(f"a capacity plan sizes the GPU pool alone; leave out {host[0]}")
    if host and req.num_requests is None and not req.trace:
        parser.error(f"{host[0]} is simulated in a benchmark run: add --num-requests N and a load (-b takes the "
                     "prefix's cache as there, with no tier to fill)")
    for f in ("host_kv_cache_gib", "host_kv_bandwidth_gbps"):
        v = getattr(args, f)
        if v is not None and not v > 0:
            parser.error(f"--{f.replace('_', '-')} must be positive, got {v:g}")
    req.random_input_len = 1024 if req.random_input_len is None else req.random_input_len
    req.random_output_len = 128 if req.random_output_len is None else req.random_output_len
    req.random_range_ratio = 0.0 if req.random_range_ratio is None else req.random_range_ratio


def mix_text(mix):
    """The requests of a mix in words."""
    if mix["dataset"] == "random":
        text = (f"lengths drawn as vLLM's random dataset draws them (uniform within {mix['random_range_ratio']:g} of "
                "the means)")
    elif mix["dataset"] == "sharegpt":
        text = ("lengths drawn from a ShareGPT-shaped lognormal mix (vLLM's ShareGPT runs' means, sigma 1.0 "
                "assumed, clipped to 1,024 input and 2,048 in all)")
    elif mix["dataset"] == "trace":
        text = f"lengths from the trace {mix['trace']}"
    else:
        text = "every request alike"
    if mix["prefix_tokens"]:
        text += f", the first {mix['prefix_tokens']:,} prompt tokens shared"
    if mix["prefix_hit_rate"] is not None:
        text += f" by a share {mix['prefix_hit_rate']:g} of them (the others' prefixes their own)"
    if mix["prefix_tokens"] or mix["shared_prefix_requests"]:
        text += ("; a cached prefix's prompt tokens are not computed (prefix caching), cached prefixes held in the "
                 "KV pool until evicted, least recently used first")
    return text




# ======== llmcalc/tools/latency_report.py =========================================================
# calc_inference_latency.py's report: the aligned text of the dict main returns (the static
# batch, the steady state or the simulated run, the layer kinds, memory and hardware lines) and the
# mode line that says in words which regime the numbers are for.

# --- output --------------------------------------------------------------------------------------
def fmt_s(t):
    """Seconds -> ms or s text."""
    return f"{t * 1e3:,.2f} ms" if t < 1 else f"{t:,.3f} s"


def gpu_line(hw):
    """The first line of a report: the accelerator, and for the default how to change it."""
    default = " (the default GPU; --gpu NAME for another)" if hw.get("gpu_default") else ""
    return f"GPU: {hw['gpu']}{default}; serving stack {hw['serving_stack']}"


def format_report(res):
    """Aligned human-readable report of the dict main returns."""
    r, hw = res, res["hardware"]
    lines = [gpu_line(hw), f"Model: {r['model']['described']}"] + textwrap.wrap(
        f"mode: {r['mode']}", width=100, subsequent_indent="      ")
    lines += [f"WARNING: {w}" for w in r["warnings"]]
    sp = r.get("speculative")
    if sp:
        rates = ", ".join(f"{a:g}" for a in sp["acceptance_rates"])
        lines += textwrap.wrap(
            f"speculative decoding: {sp['method']} draft, K = {sp['k']} tokens per step, "
            f"acceptance {rates} ({sp['acceptance_source']}): {sp['tokens_per_step']:.3f} tokens "
            "per verification step; a decode step below verifies K + 1 tokens per sequence and "
            "runs the draft's passes, TPOT = step / tokens per step",
            width=100, subsequent_indent="      ")
    if r["serving"]:
        lines += serving_report_lines(r)
    else:
        lines += static_report_lines(r)
    pc, dc = r["prefill_components_s"], r["decode_first_step_components_s"]
    head = ("prompt step", "decode step") if r["serving"] else ("prefill", "decode step")
    lines += ["", f"{'component':<22}{head[0]:>14}{'%':>7}{head[1]:>14}{'%':>7}"]
    for name in pc:
        lines.append(f"{name:<22}{fmt_s(pc[name]):>14}{100 * pc[name] / r['prefill_s']:>6.1f}%"
                     f"{fmt_s(dc[name]):>14}{100 * dc[name] / r['decode_first_step_s']:>6.1f}%")
    return lines_tail(r, lines)


def benchmark_report_lines(r):
    """The simulated benchmark's part of the report: per-request statistics, the run, the pool."""
    sv = r["serving"]
    gib = 2 ** 30
    mix = sv.get("mix")
    stats = ("_s", "_median_s", "_p90_s", "_p99_s") if mix else ("_s", "_median_s", "_p99_s")
    e2e = "End-to-end" + (" (the mix)" if mix else f" ({r['output_tokens']} output tokens)")
    rows = [(name, [fmt_s(sv[key + suffix]) for suffix in stats])
            for name, key in (("TTFT (waiting included)", "ttft"),
                              ("TPOT (time per output token)", "tpot"), (e2e, "e2e"))]
    w = max(12, 2 + max(len(c) for _, cells in rows for c in cells))  # apart at any magnitude
    heads = ("mean", "median", "p90", "p99") if mix else ("mean", "median", "p99")
    lines = ["", f"{'per request' + (' (over the mix)' if mix else ''):<34}"
                 + "".join(f"{x:>{w}}" for x in heads)]
    for name, cells in rows:
        lines.append(f"{name:<34}" + "".join(f"{c:>{w}}" for c in cells))
    lines += ["", f"{'the run':<34}{'':>12}",
              f"{'duration (first sent, last answered)':<40}{fmt_s(sv['duration_s']):>14}",
              f"{'output tokens/s, total':<40}{sv['output_tokens_per_s']:>14,.1f}",
              f"{'output tokens/s per GPU':<40}{sv['output_tokens_per_s_per_gpu']:>14,.1f}",
              f"{'requests/s':<40}{sv['requests_per_s']:>14,.3f}"]
    if mix:
        a, b = mix["input_tokens"], mix["output_tokens"]
        lines += ["", f"{'the mix (tokens)':<34}{'mean':>10}{'median':>10}{'p99':>10}"
                      f"{'min':>10}{'max':>10}"]
        for name, x in (("input (prompt)", a), ("output", b)):
            lines.append(f"{name:<34}{x['mean']:>10,.1f}{x['median']:>10,}{x['p99']:>10,}"
                         f"{x['min']:>10,}{x['max']:>10,}")
        done = sv["prompt_tokens_computed"] + sv["prompt_tokens_cached"]
        if sv["prompt_tokens_cached"] or mix["prefix_tokens"] or mix["shared_prefix_requests"]:
            lines.append(f"prefix cache: {sv['prefix_hits']:,} hits, "
                         f"{sv['prompt_tokens_cached']:,} of {done:,} prompt tokens cached "
                         f"({100 * sv['prompt_tokens_cached'] / max(done, 1):.1f}%, not computed), "
                         f"{sv['prefix_evictions']:,} evictions, at most "
                         f"{sv['prefix_tokens_held_most']:,} tokens of cached prefixes held in one "
                         "group's pool of "
                         f"{sv['kv_pool_tokens'] / max(1, r['data_parallel_size']):,.0f}")
        ht = mix.get("host_tier")
        if ht:
            lines.append(f"host KV tier: {ht['host_bytes_per_gpu'] / 2**30:,.1f} GiB per GPU "
                         f"({ht['host_tokens']:,.0f} tokens) at "
                         f"{ht['host_bytes_per_s'] / 1e9:,.1f} GB/s: {sv['host_hits']:,} prefixes "
                         f"brought back ({sv['host_tokens_loaded']:,} tokens, "
                         f"{fmt_s(sv['host_load_s'])} of loading); a token loads in "
                         f"{ht['load_s_per_token'] * 1e6:,.2f} us against "
                         f"{ht['recompute_s_per_token'] * 1e6:,.2f} us to compute it again: the "
                         f"tier {'pays' if ht['pays'] else 'does not pay'}")
    lines += ["", f"engine: {sv['engine_steps']:,} steps of {sv['decodes_per_step']:.1f} decodes "
                  f"and {sv['prompt_tokens_per_step']:.0f} prompt tokens on average; "
                  f"{sv['mean_in_flight']:.1f} requests in the server on average, at most "
                  f"{sv['most_running']:,} running at once",
              f"KV pool: {sv['kv_pool_bytes_per_gpu'] / gib:,.2f} GiB per GPU holds "
              f"{sv['kv_pool_max_concurrency']:,} requests of s + o tokens "
              f"({sv['kv_bytes_per_request_per_gpu'] / gib:,.3f} GiB each; reserved whole on "
              "admission)"
              + (f"; the stack runs at most {sv['max_num_seqs']:,} at once (--max-num-seqs)"
                 if sv["max_num_seqs"] else "")]
    return lines


def serving_report_lines(r):
    """The continuous-batching part of the report: mean times, the mean step, the KV pool."""
    sv = r["serving"]
    if sv.get("benchmark"):
        return benchmark_report_lines(r)
    gib = 2 ** 30
    lines = ["", f"{'per request (means)':<40}{'time':>14}",
             f"{'TTFT (waiting included)':<40}{fmt_s(sv['ttft_s']):>14}",
             f"{'TPOT (time per output token)':<40}{fmt_s(sv['tpot_s']):>14}",
             f"{'End-to-end (%d output tokens)' % r['output_tokens']:<40}{fmt_s(sv['e2e_s']):>14}",
             "", f"{'throughput':<40}{'tokens/s':>14}",
             f"{'per user (1/TPOT)':<40}{sv['tokens_per_s_per_user']:>14,.1f}",
             f"{'total (C x o / end-to-end)':<40}{sv['output_tokens_per_s']:>14,.1f}",
             f"{'per GPU':<40}{sv['output_tokens_per_s_per_gpu']:>14,.1f}",
             f"{'requests/s':<40}{sv['requests_per_s']:>14,.3f}",
             "", f"mean engine step: {sv['decodes_per_step']:.1f} decodes + "
                 f"{sv['prompt_tokens_per_step']:.0f} prompt tokens of others; a request's own "
                 f"prompt spans {sv['prompt_steps']:.2f} step(s)"
             + (" (the token budget is full: requests queue)" if sv["budget_bound"] else "")
             + f"; an arrival waits {fmt_s(sv['arrival_wait_s'])} for the running step"
             + (f" and {sv['queue_steps']:.1f} steps for the budget"
                if sv["queue_steps"] > 1e-9 else "")
             + (f"; its prompt waits {fmt_s(sv['prompt_queue_wait_s'])} for the others' prefills "
                "ahead of it"
                if sv.get("prompt_queue_wait_s", 0.0) > 1e-9 else ""),
             f"KV pool: {sv['kv_pool_bytes_per_gpu'] / gib:,.2f} GiB per GPU holds "
             f"{sv['kv_pool_max_concurrency']:,} requests of s + o tokens "
             f"({sv['kv_bytes_per_request_per_gpu'] / gib:,.3f} GiB each)"
             + (f"; the stack runs at most {sv['max_num_seqs']:,} at once (--max-num-seqs)"
                if sv["max_num_seqs"] else "")]
    if sv["queued_requests"]:
        capped = sv["max_num_seqs"] and sv["max_num_seqs"] < sv["kv_pool_max_concurrency"]
        why = "the stack's running cap" if capped else "the KV pool"
        lines.append(f"queue: {sv['queued_requests']:,} of the {sv['concurrency']:,} requests wait "
                     f"in the server's queue past {why}, {fmt_s(sv['queue_wait_s'])} each on "
                     "average (in TTFT and end-to-end)")
    return lines


def static_report_lines(r):
    """The static-batch part of the report: prefill, decode steps, throughput."""
    lines = ["", f"{'phase':<34}{'time':>14}   bound",
              f"{'TTFT (prefill, %d x %d tokens)' % (r['batch_size'], r['prompt_tokens']):<34}"
              f"{fmt_s(r['ttft_s']):>14}   {r['prefill_bound']}"
              + (f" (incl. {fmt_s(r['request_overhead_s'])} per request)"
                 if r["request_overhead_s"] else ""),
              f"{'TPOT first decode step':<34}{fmt_s(r['decode_first_step_s']):>14}   "
              f"{r['decode_bound']}",
              f"{'TPOT last decode step':<34}{fmt_s(r['decode_last_step_s']):>14}",
              f"{'TPOT mean over %d steps' % max(r['output_tokens'] - 1, 0):<34}"
              f"{fmt_s(r['decode_per_token_s']):>14}",
              f"{'End-to-end (%d output tokens)' % r['output_tokens']:<34}"
              f"{fmt_s(r['total_s']):>14}",
              "", f"{'throughput':<34}{'tokens/s':>14}",
              f"{'per user (decode, 1/TPOT)':<34}{r['tokens_per_s_per_user']:>14,.1f}",
              f"{'total (b x o / end-to-end)':<34}{r['output_tokens_per_s']:>14,.1f}",
              f"{'per GPU (total / tp x pp)':<34}{r['output_tokens_per_s_per_gpu']:>14,.1f}"]
    return lines


def kv_format_text(fmt, kv_bits):
    """What a checkpoint's own KV cache format means here ('' when it names none)."""
    if not fmt.get("kv_cache_format"):
        return ""
    return (f"; its KV cache format is {fmt['kv_cache_format']} (kv_cache_quant_algo), counted "
            f"here at {kv_bits} bits" + ("" if kv_bits == 8 else ": TensorRT-LLM follows it by "
                                         "default, pass --kv-cache-bits 8 for that"))


def lines_tail(r, lines):
    """The report's layer kinds, memory, hardware and convention lines."""
    hw = r["hardware"]
    lines += ["", f"{'layers':>7}{'first':>7}{'decode step':>14}{'% of step':>10}   layer kind "
                  "(attention | mlp); time per layer, its kernels and all-reduces included"]
    for k in r["layer_kinds"]:
        lines.append(f"{k['layers']:>7}{k['first_layer']:>7}"
                     f"{fmt_s(k['decode_first_step_s_per_layer']):>14}"
                     f"{100 * k['decode_first_step_s'] / r['decode_first_step_s']:>9.1f}%   "
                     f"{k['attention']} | {k['mlp']}")
    cb, cm = r["critical_batch_size"], r["critical_batch_size_matmuls"]
    gib = 2 ** 30
    whole = cb if cb else "never (KV-cache reads grow with b as fast as the math)"
    lines += ["", f"decode turns compute-bound at batch: weight matmuls {cm if cm else 'never'}, "
                  f"whole step {whole} (context {r['prompt_tokens']})",
              "", f"{'memory per GPU (most-loaded stage)':<40}{'GiB':>12}",
              f"{'  weights':<40}{r['weight_bytes_per_gpu'] / gib:>12,.2f}",
              f"{'  KV cache at s + o tokens':<40}{r['kv_cache_bytes_per_gpu'] / gib:>12,.2f}"]
    if r["indexer_cache_bytes_per_gpu"]:
        lines.append(f"{'  indexer keys (DSA) at s + o tokens':<40}"
                     f"{r['indexer_cache_bytes_per_gpu'] / gib:>12,.2f}")
    if r["state_bytes_per_gpu"]:
        lines.append(f"{'  linear-attention state (constant)':<40}"
                     f"{r['state_bytes_per_gpu'] / gib:>12,.2f}")
    lines += [f"{'  total':<40}{r['memory_bytes_per_gpu'] / gib:>12,.2f} of "
              f"{hw['gpu_memory_bytes'] / gib:,.2f} GiB"
              + ("" if r["fits_in_memory"] else "  ** DOES NOT FIT **"),
              "", f"hardware: {hw['peak_flops_per_s'] / 1e12:,.1f} TFLOP/s x "
                  f"{hw['compute_efficiency']:.2f}, "
              f"{hw['memory_bandwidth_bytes_per_s'] / 1e9:,.0f} GB/s x "
              f"{hw['memory_efficiency']:.2f}, "
              f"link {hw['link_bytes_per_s'] / 1e9:,.0f} GB/s, tp {r['tensor_parallel_size']} "
              f"pp {r['pipeline_parallel_size']}, w{r['weight_bits']}a{r['activation_bits']} "
              f"kv{r['kv_cache_bits']}" + (f" ({hw['gpu']})" if hw["gpu"] else "")
              + f"; stack {hw['serving_stack']}: {hw['kernel_overhead_s'] * 1e6:g} us per kernel, "
              f"{hw['link_latency_s'] * 1e6:g} us per all-reduce call, "
              f"{hw['step_overhead_s'] * 1e3:g} ms "
              f"per step, {hw['request_overhead_s'] * 1e3:g} ms per request"
              + (f", MoE blocks x {hw['moe_factor']:g}" if hw.get("moe_factor", 1.0) != 1.0 else "")
              + (f", sliding window {r['sliding_window']} on {len(r['sliding_layers'])} of "
                 f"{r['model']['num_layers']} layers" if r["sliding_window"] else ""),
              "convention: " + r["convention"]]
    fmt = r.get("checkpoint_format")
    if fmt:
        lines.insert(-1, f"weights as the checkpoint stores them ({fmt['method']}, scales "
                         f"included): routed experts at {fmt['expert_bits']:.4g} bits, other layer "
                         f"matrices at {fmt['linear_bits']:.4g} (--weight-bits overrides)"
                         + kv_format_text(fmt, r["kv_cache_bits"]))
    return "\n".join(lines)


def mode_text(*, b, s, o, tp, pp, gpus=None):
    """The regime the numbers are for, in words (the report's first line)."""
    return (f"b = {b} concurrent sequence{'s' if b > 1 else ''} run as one batch (static batching: "
            f"they start and end together), each with s = {s} prompt and o = {o} output tokens; tp "
            f"{tp} = tensor parallel (every layer's weights split over {tp} "
            f"GPU{'s' if tp > 1 else ''}, an all-reduce after each block), pp {pp} = pipeline "
            f"parallel ({pp} stage{'s' if pp > 1 else ''} of consecutive layers run one after the "
            f"other, one batch in flight); {gpus or tp * pp} "
            f"GPU{'s' if (gpus or tp * pp) > 1 else ''} in all; times are per request, memory is "
            "the most-loaded GPU's")


def serving_mode_text(sv, *, s, o, tp, pp, stack, gpus=None):
    """The continuous-batching regime in words (the report's first line)."""
    budget = sv["token_budget"]
    if sv.get("benchmark"):
        rate = sv["request_rate"]
        load = ("all sent at once" if sv["sent_at_once"] else
                f"{sv['concurrency']} clients, each sending its next request when the last returns"
                if rate is None else f"sent at {rate:g} requests/s ({sv['arrivals']} arrivals, "
                                     f"seed {sv['seed']})")
        mix = sv.get("mix")
        if mix and mix["trace_arrivals"]:
            load = f"sent at the trace's own times ({mix['trace']})"
        lengths = f"each with s = {s} prompt and o = {o} output tokens"
        if mix:
            lengths = (mix_text(mix) + f" (means s = {mix['input_tokens']['mean']:,.1f}, o = "
                       f"{mix['output_tokens']['mean']:,.1f})")
        return (f"a benchmark run of {sv['num_requests']:,} requests simulated step by step, "
                f"{stack} stack: {load}, {lengths}; an engine step runs every decode and "
                + step_text(budget) + f"; tp {tp} pp {pp}"
                + (f" ({sv['micro_batches']} micro-batches in flight, one per stage at a time)"
                   if pp > 1 else "")
                + f" ({gpus_text(gpus or tp * pp)} per replica); times are means per request, "
                "throughput is over the run's duration (ramp-up and drain included), memory is the "
                "most-loaded GPU's with the most requests that ran at once")
    load = (f"{sv['request_rate']:g} requests/s arriving (open loop; {sv['concurrency']:.1f} in "
            "flight on average)" if sv["request_rate"] is not None else
            f"C = {sv['concurrency']} requests in flight (closed loop: a finished request is "
            "replaced at once)")
    return (f"continuous batching in steady state, {stack} stack: {load}, each with s = {s} prompt "
            f"and o = {o} output tokens; an engine step runs every decode and "
            + step_text(budget) + f"; tp {tp} pp {pp}"
            + (f" ({min(pp, max(1, math.floor(sv['concurrency'])))} micro-batches in flight, one "
               "per stage at a time)" if pp > 1 else "")
            + f" ({gpus_text(gpus or tp * pp)} per replica); times are means per request, memory "
            "is the most-loaded GPU's with C requests at s + o tokens")


def step_text(budget):
    """What an engine step runs besides the decodes, in words."""
    return f"prompt chunks up to {budget} tokens in all" if budget else "every waiting prompt whole"


def gpus_text(n):
    """'1 GPU', '8 GPUs'."""
    return f"{n} GPU{'s' if n > 1 else ''}"


def layout_text(*, dp, ep, tp, pp, hw, imbalance):
    """What data-parallel attention, expert parallelism and nodes add to the mode line ('' if
    none)."""
    parts = []
    if dp > 1:
        parts.append(f"dp {dp} = data-parallel attention ({dp} groups of tp {tp}, each with 1/{dp} "
                     "of the requests and its own KV cache; the MoE layers take every group's "
                     "tokens)")
    if ep > 1:
        parts.append(f"ep {ep} = expert parallel (whole experts spread over the {ep} GPUs of a "
                     "stage, tokens sent and returned by two all-to-alls per MoE layer; the "
                     f"busiest GPU carries {imbalance:.2f} x the mean expert work)")
    elif dp > 1:
        parts.append(f"experts split over all {tp * dp} GPUs of a stage (tokens all-gathered "
                     "before and reduce-scattered after each MoE layer)")
    g = hw.get("gpus_per_node")
    if g and tp * dp * pp > g:
        parts.append(f"{g} GPUs per node: groups beyond it use the network at "
                     f"{hw['scale_out_bytes_per_s'] / 1e9:g} GB/s per GPU")
    return "".join("; " + x for x in parts)


def attention_convention(spec):
    """What the layer kinds' spans and indexers do to the work, for the convention line."""
    counts = {}
    for layer, cnt, _ in layer_groups(spec):
        for attn in layer["attention"]:
            texts = []
            if attn["span"] == "sliding":
                texts.append(f"sliding-window attention (w = {attn['window']}): a query attends to "
                             "at most w keys, a decode step reads at most w - 1 cached tokens")
            elif attn["span"] == "chunked":
                texts.append(f"chunked attention (C = {attn['chunk']}): a query attends within its "
                             "chunk, a decode step reads 0 .. C-1 cached tokens in turn")
            if attn["index_topk"]:
                texts.append(f"DSA (top-{attn['index_topk']}): the core attends to at most "
                             f"{attn['index_topk']} keys")
            if attn["index_topk"] and attn["index_heads"]:
                texts.append("a lightning indexer scores every cached key")
            if attn["kind"] == "dsv4" and attn["compress"]:
                csa = attn["compress_kind"] == "csa"
                texts.append(f"DeepSeek-V4 compression (1/{attn['compress']}): a query also "
                             "attends to the compressed entries closed before it"
                             + (f" (the indexer scores them all, the core its top-"
                                f"{attn['c_index_topk']})" if csa else ""))
            if attn["span"] == "state":
                texts.append("Gated DeltaNet: no KV cache; prefill runs the chunked algorithm "
                             f"(chunks of {attn['state_chunk']}), a decode step one recurrent "
                             "update, reading and writing its constant state (recurrent state at "
                             "--state-bits)")
            for text in texts:
                counts[text] = counts.get(text, 0) + cnt
    L = spec["num_layers"]
    return "".join(f"; {text} on {n} of {L} layers" for text, n in counts.items())


# ======== llmcalc/serve/request.py ================================================================
# The serving request a run answers: its layout, bits, load, request mix and targets, as the tool
# resolves them from its flags (defaults filled, a mix's means standing for s and o). Built once by
# the tool (tools/latency.py), read by engine.py, search.py and capacity.py, which never see the
# command line itself.

class ServingRequest(Record):
    """One serving run's inputs, resolved. None: not given (the meaning says what stands). The
    tool resolves it field by field, so `req.x = v` writes the field (Record itself has no
    __setattr__: without this it would land in an instance __dict__, beside the dict)."""

    __slots__ = ()

    def __setattr__(self, name, value):
        self[name] = value

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
        "requests": "the mix's requests (arrival_s, s, o, prefix key, prefix tokens); None: alike",
        "capacity": "whether this run is a capacity plan",
        "capacity_gpus": "the plan's GPU kinds, as given", "capacity_prices": "$ per GPU-hour each",
        "speculative": "the speculative-decoding setup ({k, method, acceptance_rates, ...}); None",
    })

    @classmethod
    def from_flags(cls, flags):
        """The request as the flags give it (the parsed flags, or any object with them)."""
        return cls({k: getattr(flags, k) for k in cls.FLAGS})


# ======== llmcalc/tools/latency.py ================================================================
def rate_float(text):
    """argparse type for --request-rate: a finite number, or inf (all requests at once)."""
    if str(text).strip().lower() in ("inf", "infinity"):
        return math.inf
    return finite_float(text)


def build_parser():
    parser = OneLineErrorParser(description=__doc__)
    add_model_args(parser)  # includes --sliding-window (the window of the sliding layers; 0 = off)
    g = parser.add_argument_group("workload and layout")
    g.add_argument("--batch-size", "-b", type=bounded_int, default=None,
                   help="b concurrent sequences decoded together as one batch (default 1)")
    g.add_argument("--prompt-tokens", "--sequence-length", "-s", dest="prompt_tokens", type=bounded_int,
                   default=512, help="s prompt tokens per sequence (default 512)")
    g.add_argument("--output-tokens", "-o", type=bounded_int, default=128, help="o output tokens (default 128)")
    g.add_argument("--tensor-parallel-size", "-tp", type=bounded_int, default=1,
                   help="tp GPUs that split every layer's weights (default 1)")
    g.add_argument("--pipeline-parallel-size", "-pp", type=bounded_int, default=1,
                   help="pp stages of consecutive layers (default 1)")
    g.add_argument("--data-parallel-size", "-dp", type=bounded_int, default=1,
                   help="dp groups of tp GPUs per stage, each with its own requests and a copy of the "
                        "attention (data-parallel attention; MoE layers take every group's tokens; "
                        "default 1)")
    g.add_argument("--expert-parallel-size", "-ep", "--expert-parallelism", type=bounded_int, default=1,
                   help="1: routed experts split over the tp x dp GPUs like the rest; tp x dp: whole "
                        "experts spread over them, tokens sent by all-to-all (default 1)")
    g.add_argument("--ep-imbalance", type=finite_float, default=None,
                   help="busiest expert-parallel rank's load over the mean (default: uniform routing's "
                        "balls-into-bins figure)")
    g.add_argument("--precision", choices=sorted(PRECISIONS), default=None,
                   help="shorthand for the three bit widths (explicit --*-bits win); fp4 weights are "
                        "stored as NVFP4, 4.5 bits with their scales")
    g.add_argument("--weight-bits", type=bounded_int, default=None, help="weight bits (default 16)")
    g.add_argument("--activation-bits", type=bounded_int, default=None,
                   help="activation bits; sets the compute precision (default 16)")
    g.add_argument("--kv-cache-bits", type=bounded_int, default=None, help="KV-cache bits (default: activation bits)")
    g.add_argument("--state-bits", type=bounded_int, default=32,
                   help="bits per element of a linear-attention layer's recurrent state (default 32: fp32, as "
                   "transformers' cache and flash-linear-attention keep it; its conv window is at the "
                   "activation bits)")
    g = parser.add_argument_group("hardware (explicit flags win over --gpu)")
    g.add_argument("--gpu", default=None,
                   help="accelerator name from hardware.py (e.g. a100, h200; default h100-sxm)")
    g.add_argument("--peak-tflops", type=finite_float, default=None,
                   help="dense peak TFLOP/s at the activation precision (default: --gpu's)")
    g.add_argument("--memory-bandwidth-gbps", "--hbm-bandwidth-GBps", type=finite_float, default=None,
                   help="HBM bandwidth, GB/s (default: --gpu's)")
    g.add_argument("--gpu-memory-gib", type=finite_float, default=None, help="memory per GPU, GiB (default: --gpu's usable memory)")
    g.add_argument("--compute-efficiency", type=finite_float, default=None,
                   help=f"fraction of peak FLOP/s reached by matmuls (default {DEFAULT_COMPUTE_EFFICIENCY} at 16 bits, "
                        f"{DEFAULT_COMPUTE_EFFICIENCY * LOW_BIT_EFFICIENCY_RATIO:.2f} at 8, "
                        f"{DEFAULT_COMPUTE_EFFICIENCY * LOW_BIT_EFFICIENCY_RATIO * FP4_SHAPE_PENALTY:.2f} at 4; "
                        "--gpu: from its measured matmul rate)")
    g.add_argument("--memory-efficiency", type=finite_float, default=None,
                   help=f"fraction of peak bandwidth reached (default {DEFAULT_MEMORY_EFFICIENCY})")
    g.add_argument("--kernel-overhead-us", type=finite_float, default=None,
                   help=f"fixed cost per kernel, us (default {DEFAULT_KERNEL_OVERHEAD_US}; 0 = pure roofline)")
    g.add_argument("--tp-bandwidth-gbps", "--intra-node-bw-GBps", type=finite_float, default=None,
                   help="per-GPU link bandwidth for TP/PP, GB/s one direction (default: --gpu's scale-up link)")
    g.add_argument("--gpus-per-node", type=bounded_int, default=None,
                   help="GPUs per scale-up (NVLink) domain; collectives past it cross the network "
                        "(default: --gpu's domain)")
    g.add_argument("--scale-out-gbps", "--inter-node-bw-GBps", type=finite_float, default=None,
                   help="network bandwidth per GPU beyond the node, GB/s one direction (default: --gpu's NIC)")
    g.add_argument("--tp-latency-us", type=finite_float, default=None,
                   help=f"fixed cost per all-reduce call, us, before NCCL's per-hop latency "
                        f"(default {DEFAULT_ALLREDUCE_LATENCY_US}, the nccl-tests floor; stacks without "
                        "CUDA graphs pay more in place, see VALIDATION.md)")
    g.add_argument("--request-overhead-ms", type=finite_float, default=None,
                   help="fixed cost per request outside the kernels (server, tokenizer, engine call), "
                        "ms, added once to TTFT and end-to-end (default: the serving stack's)")
    g.add_argument("--tp-efficiency", type=finite_float, default=None,
                   help=f"fraction of link bandwidth reached (default {DEFAULT_ALLREDUCE_EFFICIENCY})")
    g = parser.add_argument_group("serving stack and continuous batching")
    g.add_argument("--serving-stack", choices=sorted(SERVING_STACKS), default=DEFAULT_SERVING_STACK,
                   help=f"preset of what the serving stack adds to the kernels (launch gaps, all-reduce "
                        f"and per-step costs, chunk size, memory share; default {DEFAULT_SERVING_STACK}; "
                        "the flags below and above override its values)")
    g.add_argument("--concurrency", "-c", type=bounded_int, default=None,
                   help="C requests in flight under continuous batching (steady state, chunked "
                        "prefill) instead of one static batch of -b")
    g.add_argument("--request-rate", type=rate_float, default=None,
                   help="requests per second arriving (open loop): the concurrency that rate keeps "
                        "in flight, instead of -c; inf (with --num-requests) sends them all at once")
    g.add_argument("--num-requests", type=bounded_int, default=None,
                   help="simulate a finite benchmark run of N requests step by step (ramp-up, queue and "
                        "drain included, throughput over the run's duration, as benchmark clients report "
                        "it) instead of the steady state; with --request-rate or -c")
    g.add_argument("--arrivals", choices=("poisson", "uniform"), default=None,
                   help="--num-requests at a --request-rate: Poisson arrivals (vLLM's benchmark_serving "
                        "default) or evenly spaced (default poisson)")
    g.add_argument("--seed", type=bounded_int, default=None, help="seed of the Poisson arrivals (default 0)")
    g.add_argument("--max-num-batched-tokens", type=bounded_int, default=None,
                   help="tokens per engine step, decodes first, prompt chunks fill the rest (default: "
                        "the stack's)")
    g.add_argument("--max-num-seqs", type=bounded_int, default=None,
                   help="requests the engine runs at once per data-parallel engine (vLLM's max_num_seqs, "
                        "TensorRT-LLM's max_batch_size, SGLang's max_running_requests); more wait in the "
                        "server's queue (default: the stack's)")
    g.add_argument("--step-overhead-ms", type=finite_float, default=None,
                   help="fixed host cost per engine step (scheduling, sampling), ms (default: the stack's)")
    g.add_argument("--queue-past-pool", action="store_true",
                   help="kept for old commands: a --concurrency past what the KV pool holds waits in the "
                        "server's queue (as vLLM, TensorRT-LLM and NIM queue it), now the default")
    g.add_argument("--refuse-past-pool", action="store_true",
                   help="exit 2 when a --concurrency does not fit the KV pool instead of queueing the rest")
    g.add_argument("--gpu-memory-utilization", type=finite_float, default=None,
                   help="share of GPU memory the engine takes for weights and the KV pool (default: "
                        "the stack's)")
    add_mix_args(parser)
    add_capacity_args(parser)
    g = parser.add_argument_group("search for the serving layout")
    g.add_argument("--search", action="store_true",
                   help="every layout of --num-gpus GPUs (tp, pp, dp attention, ep, replicas), weight and "
                        "KV-cache bits and concurrency that meets --max-ttft-ms and --max-tpot-ms; prints "
                        "the Pareto front of tokens/s per GPU against tokens/s per user")
    g.add_argument("--num-gpus", type=bounded_int, default=8, help="GPU budget for --search (default 8)")
    g.add_argument("--max-ttft-ms", type=finite_float, default=None, help="TTFT target, ms (mean; default none)")
    g.add_argument("--max-tpot-ms", type=finite_float, default=None,
                   help="time-per-output-token target, ms (mean; default none)")
    g.add_argument("--disaggregated", action="store_true",
                   help="also try prefill and decode on separate GPU pools, the KV cache sent between them")
    g.add_argument("--max-replica-gpus", type=bounded_int, default=256,
                   help="largest replica --search builds (default 256; the budget beyond it is filled "
                        "with replicas)")
    g.add_argument("--top", type=bounded_int, default=10, help="rows of the front printed (default 10)")
    g.add_argument("--plot", default=None, metavar="FILE.png",
                   help="draw the front with matplotlib (only if installed)")
    add_output_args(parser)
    parser.epilog = lambda: ranges_epilog(parser, FLAG_RANGES)  # built only for --help
    return parser


# What matplotlib's Agg backend writes, by file extension (Figure.savefig's formats).
PLOT_FORMATS = ("png", "svg", "pdf", "jpg", "jpeg", "webp", "eps", "ps", "tif", "tiff")


def check_plot_path(path, parser):
    """--plot's file, checked before any work: a file name (not a folder) with an extension
    matplotlib writes, in a folder that exists and can be written to; one-line exit 2 otherwise."""
    import os  # only --plot needs it
    if not path:
        parser.error("--plot needs a file name (FILE.png, FILE.svg or FILE.pdf)")
    if os.path.isdir(path):
        parser.error(f"--plot {path} is a folder; give a file in it, such as {os.path.join(path, 'front.png')}")
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in PLOT_FORMATS:
        parser.error(f"--plot {path}: give a file name ending .png, .svg or .pdf (matplotlib also writes "
                     f"{', '.join('.' + e for e in PLOT_FORMATS[3:])})")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        parser.error(f"--plot {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        parser.error(f"--plot {path}: {folder if not os.access(folder, os.W_OK) else path} is not writable")


def validate(args, parser, spec, req):
    """One-line errors (exit 2) for values the model cannot take; fills the request's defaults and
    returns the notes on flags that do nothing in this mode."""
    if req.concurrency is not None and req.request_rate is not None:
        parser.error("--concurrency and --request-rate both set the load; give one")
    if req.batch_size is not None and (req.concurrency is not None or req.request_rate is not None):
        parser.error("-b is a static batch; with --concurrency or --request-rate leave it out")
    req.batch_size_given = req.batch_size is not None
    req.batch_size = 1 if req.batch_size is None else req.batch_size
    for name in ("batch_size", "prompt_tokens", "output_tokens", "tensor_parallel_size",
                 "pipeline_parallel_size", "data_parallel_size", "expert_parallel_size"):
        if req[name] < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {req[name]}")
    for name in ("weight_bits", "activation_bits", "kv_cache_bits"):
        if req[name] not in ALLOWED_BITS:
            parser.error(f"--{name.replace('_', '-')} must be one of {ALLOWED_BITS}, got "
                         f"{req[name]}")
    for name in ("peak_tflops", "memory_bandwidth_gbps", "gpu_memory_gib", "tp_bandwidth_gbps"):
        v = getattr(args, name)
        if v is not None and not (v > 0 and math.isfinite(v)):
            parser.error(f"--{name.replace('_', '-')} must be positive, got {v}")
    for name in ("kernel_overhead_us", "tp_latency_us", "request_overhead_ms"):
        v = getattr(args, name)
        if v is not None and not (v >= 0 and math.isfinite(v)):
            parser.error(f"--{name.replace('_', '-')} must not be negative, got {v}")
    # inf sends every request at once; it needs --num-requests (below)
    all_at_once = req.request_rate is not None and math.isinf(req.request_rate)
    check_ranges(args, parser, {k: v for k, v in FLAG_RANGES.items()
                                if not (all_at_once and k == "request_rate")})
    if (req.num_requests is not None and req.concurrency is None and req.request_rate is None
            and not req.trace and args.target_request_rate is None):
        parser.error("--num-requests runs a benchmark at a load; add --request-rate R (or inf) or -c C")
    if req.request_rate is not None and math.isinf(req.request_rate) and req.num_requests is None:
        parser.error("--request-rate inf sends every request at once: add --num-requests N (a steady "
                     "state needs a finite rate)")
    why = layout_problem(spec, tp=req.tensor_parallel_size, pp=req.pipeline_parallel_size,
                         dp=req.data_parallel_size, ep=req.expert_parallel_size)
    if why:
        parser.error(why)
    if args.search:
        if (req.concurrency is not None or req.request_rate is not None or req.batch_size_given
                or req.num_requests is not None):
            parser.error("--search picks the concurrency and the layout itself; leave out -c, --request-rate, "
                         "--num-requests and -b")
        fixed = [f for f, v in (("-tp", req.tensor_parallel_size),
                                ("-pp", req.pipeline_parallel_size),
                                ("-dp", req.data_parallel_size), ("-ep", req.expert_parallel_size))
                 if v != 1]
        if fixed:
            parser.error(f"--search picks the layout itself; leave out {', '.join(fixed)} (--num-gpus sets the budget)")
        for name in ("max_ttft_ms", "max_tpot_ms"):
            v = req[name]
            if v is not None and not v > 0:
                parser.error(f"--{name.replace('_', '-')} must be positive, got {v}")
    elif args.plot or req.disaggregated:
        parser.error(f"{'--plot' if args.plot else '--disaggregated'} belongs to --search; add --search")
    if args.plot is not None:
        check_plot_path(args.plot, parser)
    validate_capacity(args, parser, req)
    validate_workload(args, parser, req)
    validate_speculative(args, parser, spec, req)
    notes = unused_flag_notes(req, search=args.search)
    req.seed = 0 if req.seed is None else req.seed
    req.arrivals = req.arrivals or "poisson"
    return notes


def unused_flag_notes(req, *, search):
    """Flags that do nothing in this mode: said, not dropped silently (notes on stderr)."""
    flag_notes = []
    unused = [f for f, v in (("--seed", req.seed), ("--arrivals", req.arrivals)) if v is not None]
    if req.capacity and req.arrivals is not None:
        flag_notes.append("--arrivals: a capacity plan sizes each layout on Poisson arrivals (its "
                          "convention)")
    # a trace's arrivals are drawn only at a --request-rate (or in a capacity plan's runs);
    # --seed also draws a hit rate's
    if req.trace:
        unused = [f for f in unused if req.request_rate is None and not req.capacity
                  and not (f == "--seed" and req.prefix_hit_rate is not None)]
        if unused:
            flag_notes.append(f"{' and '.join(unused)} draw{'s' if len(unused) == 1 else ''} "
                              "arrivals at a --request-rate; without it the trace's requests come "
                              "at their own times (or from the -c clients)")
    elif unused and req.num_requests is None:
        flag_notes.append(f"{' and '.join(unused)} draw{'s' if len(unused) == 1 else ''} the "
                          "arrivals of a --num-requests benchmark; without it there are none to "
                          "draw")
    targets = [f for f, v in (("--max-ttft-ms", req.max_ttft_ms),
                              ("--max-tpot-ms", req.max_tpot_ms)) if v is not None]
    if targets and not search and not req.capacity:
        flag_notes.append(f"{' and '.join(targets)} "
                          f"{'is a target' if len(targets) == 1 else 'are targets'} of --search or "
                          "a capacity plan (--target-request-rate R); nothing here is held to "
                          f"{'it' if len(targets) == 1 else 'them'}")
    return flag_notes


def resolve_request(args, parser, spec):
    """The serving request from the flags (args is left as parsed): the bits (--precision, then
    each --*-bits), the checks (validate), a mix drawn or read, its means standing for s and o in
    the breakdown and the memory check. Returns (ServingRequest, notes on unused flags)."""
    req = ServingRequest.from_flags(args)
    wb, abits, kvb = PRECISIONS[args.precision] if args.precision else (16, 16, None)
    req.bits_given = bool(args.precision or args.weight_bits is not None
                          or args.activation_bits is not None or args.kv_cache_bits is not None)
    req.weight_bits = wb if args.weight_bits is None else args.weight_bits
    req.activation_bits = abits if args.activation_bits is None else args.activation_bits
    if args.kv_cache_bits is None:
        req.kv_cache_bits = kvb if kvb is not None else max(req.activation_bits, 8)
    req.weight_store_bits = (NVFP4_BITS if args.precision == "fp4" and args.weight_bits is None
                             else req.weight_bits)
    notes = validate(args, parser, spec, req)
    req.requests = None
    if req.num_requests is not None or req.trace:
        with calc_errors(parser):
            req.requests = workload_requests(req)
    if req.requests:
        req.prompt_tokens = max(1, round(sum(r[1] for r in req.requests) / len(req.requests)))
        req.output_tokens = max(1, round(sum(r[2] for r in req.requests) / len(req.requests)))
    return req, notes


def serving_gpu(name, parser):
    """(the accelerator record the run costs on, whether it was named): hardware.py's record for
    the name, else the default accelerator (exactly the record --gpu h100-sxm reads)."""
    if not name:
        return default_accelerator(), False
    without = ("without it pass --peak-tflops, --memory-bandwidth-gbps, --gpu-memory-gib and "
               "--tp-bandwidth-gbps")
    return accelerator_record(name, parser, without=without), True


def hardware_from_flags(args, parser):
    """(ServingHardware, notes) of a parsed command line at its own layout and --activation-bits
    (16 when not set): for scripts and tests that cost single passes."""
    gpu, gpu_given = serving_gpu(args.gpu, parser)
    with calc_errors(parser):
        return resolve_hardware(gpu, HardwareFlags.from_flags(args), gpu_given=gpu_given,
                                tp=args.tensor_parallel_size, pp=args.pipeline_parallel_size,
                                dp=args.data_parallel_size,
                                activation_bits=args.activation_bits or 16)


def run_bits(spec, req, args, pending):
    """(the checkpoint's own format or None, the bits forward_pass takes): a quantized checkpoint's
    stored bits unless a bits flag or --precision overrides them."""
    own = args.weight_bits is None and not args.precision  # no bits flag: the checkpoint's own
    fmt = spec.get("checkpoint_format") if own else None
    if req.weight_store_bits != req.weight_bits:
        pending.insert(0, f"note: fp4 weights stored as NVFP4, {NVFP4_BITS:g} bits each with their "
                          "scales (--weight-bits 4 counts bare values)")
    w_store = fmt["linear_bits"] if fmt else req.weight_store_bits  # per stored weight, scales in
    return fmt, dict(w_bits=w_store, a_bits=req.activation_bits, kv_bits=req.kv_cache_bits,
                     e_bits=fmt["expert_bits"] if fmt else None, state_bits=req.state_bits)


def flush(pending):
    """Print the notes and warnings held back until the answer stood."""
    for line in pending:
        print(line, file=sys.stderr)
    pending.clear()


def main(argv=None):
    parser = build_parser()
    args = parse_tool_args(parser, argv)
    try:
        spec, notes = resolve_model_spec(args, defaults={"num_experts": 8})
    except ValueError as exc:
        parser.error(str(exc))
    req, flag_notes = resolve_request(args, parser, spec)
    gpu, gpu_given = serving_gpu(req.capacity_gpus[0] if req.capacity else args.gpu, parser)
    flags = HardwareFlags.from_flags(args)
    with calc_errors(parser):
        hw, hw_notes = resolve_hardware(gpu, flags, gpu_given=gpu_given,
                                        tp=req.tensor_parallel_size, pp=req.pipeline_parallel_size,
                                        dp=req.data_parallel_size,
                                        activation_bits=req.activation_bits)
        if req.speculative:
            hw["speculative"] = req.speculative
        # notes and warnings go to stderr once the answer stands: an input refused further on gets
        # its one error line alone
        trained = spec.get("trained_context")
        if trained and req.prompt_tokens + req.output_tokens > trained:
            spec["warnings"].append(f"context {req.prompt_tokens + req.output_tokens:,} tokens is "
                                    f"past the model's trained context ({trained:,}: "
                                    "max_position_embeddings or its rope scaling)")
        pending = ([f"note: {note}" for note in notes + hw_notes + flag_notes]
                   + [f"warning: {w}" for w in spec["warnings"] if args.json])
        fmt, bits = run_bits(spec, req, args, pending)
        if req.capacity:
            flush(pending)
            return run_capacity(spec, req, args, parser, bits=bits, flags=flags)
        if args.search:
            return run_search(spec, req, args, hw, fmt=fmt, pending=pending,
                              gpu=gpu, gpu_given=gpu_given, flags=flags)
        return run_layout(spec, req, args, hw, bits=bits, fmt=fmt, pending=pending)


def run_search(spec, req, args, hw, *, fmt, pending, gpu, gpu_given, flags):
    """--search: the Pareto front, printed (table, --json or --brief) and returned."""
    res = search_serving(spec, req, fmt, gpu=gpu, gpu_given=gpu_given, flags=flags)
    flush(pending)
    res["warnings"] = list(spec["warnings"])
    res["serving_stack"] = hw["serving_stack"]
    res["model_described"] = spec["described"]
    note = plot_front(res, args.plot, precision=args.precision) if args.plot else None
    if note:
        print(f"note: {note}", file=sys.stderr)
    if args.brief:  # the front's best tokens/s per GPU
        print(f"{res['best']['tokens_per_s_per_gpu']:,.0f} tokens/s per GPU")
    elif args.json:
        import json
        print(json.dumps({k: v for k, v in res.items() if k not in ("points", "missed")}, indent=2))
    else:
        print(search_report(res, s=req.prompt_tokens, o=req.output_tokens,
                            stack=hw["serving_stack"], top=args.top))
    return res


def static_times(spec, hw, req, *, b, bits):
    """A static batch of b: (prompt pass, first and last decode steps, decode seconds in all),
    each step with the stack's host cost; speculative decoding verifies K + 1 tokens per step."""
    s, o = req.prompt_tokens, req.output_tokens
    lay = dict(tp=req.tensor_parallel_size, pp=req.pipeline_parallel_size,
               dp=req.data_parallel_size, ep=req.expert_parallel_size)
    step_s = hw["step_overhead_s"]  # the stack's host cost per engine step (0 for kernels only)

    def with_step(r):
        return dict(r, time_s=r["time_s"] + step_s,
                    components_s=dict(r["components_s"], step_overhead=step_s))
    cached = req.prefix_tokens or 0  # -b with --prefix-tokens: the prefix's cache is there already
    pre = with_step(forward_pass(spec, hw, batch=b, new_tokens=s - cached, context_before=cached,
                                 absorbed=False, **lay, **bits))
    sp = req.speculative
    if sp:  # a verification pass of K + 1 tokens and the draft's K passes per step (mixed_step)
        def spec_step(ctx):
            return mixed_step(spec, hw, decodes=b, decode_context=ctx, prefill_tokens=0,
                              prompt_tokens=s, bits=bits, **lay)
        first, last = spec_step(s), spec_step(s + max(o - 2, 0))
        pre = dict(pre, components_s=dict(pre["components_s"], speculative_draft=0.0))
        dec_total = (o - 1) * (first["time_s"] + last["time_s"]) / 2 / sp["tokens_per_step"]
        return pre, first, last, dec_total
    first = with_step(forward_pass(spec, hw, batch=b, new_tokens=1, context_before=s, absorbed=True,
                                   **lay, **bits))
    last = with_step(forward_pass(spec, hw, batch=b, new_tokens=1, context_before=s + max(o - 2, 0),
                                  absorbed=True, **lay, **bits))
    dec_total = (decode_total_s(spec, hw, batch=b, prompt_tokens=s, output_tokens=o, **lay, **bits)
                 + step_s * (o - 1))
    return pre, first, last, dec_total


def layout_times(spec, hw, req, *, bits, w_bytes):
    """The times of one layout: the steady state or simulated run under a load (serve_steady_state,
    its two steps standing for prefill and decode in the breakdown), else a static batch. Returns
    {serving, b (requests held in memory), pre, first, last, dec_total, tpot, ttft, total}."""
    b, o = req.batch_size, req.output_tokens
    if req.concurrency is not None or req.request_rate is not None or req.requests:
        serving = serve_steady_state(spec, hw, req, tp=req.tensor_parallel_size,
                                     pp=req.pipeline_parallel_size, s=req.prompt_tokens, o=o,
                                     bits=bits, w_bytes=w_bytes)
        pre, first = serving.pop("prompt_step"), serving.pop("decode_step")
        # the memory check holds the requests in service (queued ones hold no KV cache)
        return dict(serving=serving, b=max(1, math.ceil(serving["running_requests"])), pre=pre,
                    first=first, last=first, dec_total=first["time_s"] * (o - 1),
                    tpot=serving["tpot_s"], ttft=serving["ttft_s"], total=serving["e2e_s"])
    pre, first, last, dec_total = static_times(spec, hw, req, b=b, bits=bits)
    ttft = hw["request_overhead_s"] + pre["time_s"]
    return dict(serving=None, b=b, pre=pre, first=first, last=last, dec_total=dec_total,
                tpot=dec_total / (o - 1) if o > 1 else first["time_s"], ttft=ttft,
                total=ttft + dec_total)


def memory_use(spec, req, *, b, w_bytes):
    """Weights plus the cache of the most-loaded data-parallel group's b / dp requests at s + o,
    per GPU: (cache dict, bytes in all); a warning on stderr when it exceeds the GPU."""
    cache = cache_bytes_per_gpu(spec, tp=req.tensor_parallel_size, pp=req.pipeline_parallel_size,
                                batch=math.ceil(b / req.data_parallel_size),
                                context=req.prompt_tokens + req.output_tokens,
                                kv_bits=req.kv_cache_bits, a_bits=req.activation_bits,
                                state_bits=req.state_bits)
    return cache, w_bytes + cache["kv"] + cache["indexer"] + cache["state"]


def memory_warning(cache, *, w_bytes, gpu_memory_bytes):
    """The one-line warning when the weights and caches exceed the GPU's memory."""
    print(f"warning: weights {w_bytes / 2**30:.2f} GiB + KV cache {cache['kv'] / 2**30:.2f} GiB"
          + (f" + indexer keys {cache['indexer'] / 2**30:.2f} GiB" if cache["indexer"] else "")
          + (f" + linear-attention state {cache['state'] / 2**30:.2f} "
             "GiB" if cache["state"] else "")
          + f" per GPU exceed its {gpu_memory_bytes / 2**30:.2f} GiB; raise -tp/-pp or cut "
          "bits, b, s+o", file=sys.stderr)


def layer_kind_rows(spec, req, t, *, bits):
    """One row per distinct layer kind: its count, time per layer in the prompt pass and the first
    decode step, and its weights and caches per GPU."""
    tp, dp, ep = req.tensor_parallel_size, req.data_parallel_size, req.expert_parallel_size
    b_group = math.ceil(t["b"] / dp)  # the requests of the most-loaded data-parallel group
    kinds = []
    for (layer, cnt, first_i), pk, dk in zip(layer_groups(spec), t["pre"]["layer_kinds"],
                                             t["first"]["layer_kinds"]):
        lc = layer_cache_bytes(layer, tp=tp, batch=b_group,
                               context=req.prompt_tokens + req.output_tokens,
                               kv_bits=req.kv_cache_bits, a_bits=req.activation_bits,
                               state_bits=req.state_bits)
        kinds.append({
            "layers": cnt, "first_layer": first_i,
            "attention": " + ".join(attention_kind(a) for a in layer["attention"]) or "-",
            "mlp": " + ".join(mlp_kind(m) for m in layer["mlp"]),
            "prefill_s_per_layer": pk["time_s_per_layer"],
            "decode_first_step_s_per_layer": dk["time_s_per_layer"],
            "decode_first_step_s": cnt * dk["time_s_per_layer"],
            "weight_bytes_per_layer_per_gpu": layer_weight_bytes(
                layer, h=spec["hidden_size"], norm=spec["norm"], tp=tp, w_bits=bits["w_bits"],
                e_bits=bits["e_bits"], ep=ep, etp=tp * dp // ep),
            "kv_cache_bytes_per_layer_per_gpu": lc["kv"],
            "indexer_cache_bytes_per_layer_per_gpu": lc["indexer"],
            "state_bytes_per_layer_per_gpu": lc["state"]})
    return kinds


def run_layout(spec, req, args, hw, *, bits, fmt, pending):
    """One layout's answer (a static batch, a steady state or a simulated run), printed and
    returned as the result dict."""
    tp, pp = req.tensor_parallel_size, req.pipeline_parallel_size
    dp, ep = req.data_parallel_size, req.expert_parallel_size
    w_bytes = weight_bytes_per_gpu(spec, tp=tp, pp=pp, w_bits=bits["w_bits"], e_bits=bits["e_bits"],
                                   ep=ep, etp=tp * dp // ep)
    t = layout_times(spec, hw, req, bits=bits, w_bytes=w_bytes)
    flush(pending)
    steps = {}  # decode steps by batch: the two searches share their forward passes
    crit = [critical_batch(spec, hw, tp=tp, pp=pp, dp=dp, ep=ep, context=req.prompt_tokens,
                           matmuls_only=mm, steps=steps, **bits) for mm in (False, True)]
    cache, mem = memory_use(spec, req, b=t["b"], w_bytes=w_bytes)
    if mem > hw["gpu_memory_bytes"]:
        memory_warning(cache, w_bytes=w_bytes, gpu_memory_bytes=hw["gpu_memory_bytes"])
    res = result_dict(spec, req, hw, t, bits=bits, fmt=fmt, crit=crit, w_bytes=w_bytes, cache=cache,
                      mem=mem)
    print_result(res, as_json=args.json, report=format_report,
                 brief=(lambda r: f"TTFT {r['ttft_s'] * 1e3:.2f} ms TPOT "
                                  f"{r['decode_per_token_s'] * 1e3:.2f} ms")
                 if args.brief else None)
    return res


def sliding_layers(spec):
    """(the sliding layers' window or None, the indices of the sliding layers)."""
    win_layers = [i for i, layer in enumerate(spec["layers"])
                  if any(a["span"] == "sliding" for a in layer["attention"])]
    win = (next(a["window"] for a in spec["layers"][win_layers[0]]["attention"]
                if a["span"] == "sliding") if win_layers else None)
    return win, win_layers


def result_dict(spec, req, hw, t, *, bits, fmt, crit, w_bytes, cache, mem):
    """The dict main returns (and --json prints) for one layout."""
    b, s, o = t["b"], req.prompt_tokens, req.output_tokens
    tp, pp = req.tensor_parallel_size, req.pipeline_parallel_size
    dp, ep = req.data_parallel_size, req.expert_parallel_size
    gpus = tp * dp * pp
    serving, pre, first, last, total = t["serving"], t["pre"], t["first"], t["last"], t["total"]
    win, win_layers = sliding_layers(spec)
    return {
        "mode": (serving_mode_text(serving, s=s, o=o, tp=tp, pp=pp, stack=hw["serving_stack"], gpus=gpus)
                 if serving else mode_text(b=b, s=s, o=o, tp=tp, pp=pp, gpus=gpus))
                + layout_text(dp=dp, ep=ep, tp=tp, pp=pp, hw=hw, imbalance=first["ep_imbalance"]),
        "warnings": list(spec["warnings"]),
        "model": spec_summary(spec), "batch_size": b, "prompt_tokens": s, "output_tokens": o,
        "tensor_parallel_size": tp, "pipeline_parallel_size": pp, "data_parallel_size": dp,
        "expert_parallel_size": ep, "ep_imbalance": first["ep_imbalance"], "num_gpus": gpus,
        "weight_bits": req.weight_bits, "weight_storage_bits": bits["w_bits"],
        "activation_bits": req.activation_bits, "checkpoint_format": fmt,
        "kv_cache_bits": req.kv_cache_bits, "sliding_window": win, "sliding_layers": win_layers,
        "hardware": hw.reported(),
        "speculative": ({k: v for k, v in req.speculative.items()
                         if k not in ("draft_spec", "target_spec")} if req.speculative else None),
        "prefill_s": pre["time_s"], "ttft_s": t["ttft"],
        "request_overhead_s": hw["request_overhead_s"],
        "prefill_bound": pre["bound"],
        "prefill_components_s": pre["components_s"], "prefill_flops_per_gpu": pre["flops"],
        "prefill_bytes_per_gpu": pre["bytes"],
        "decode_per_token_s": t["tpot"], "decode_first_step_s": first["time_s"],
        "decode_last_step_s": last["time_s"] if o > 1 else first["time_s"],
        "decode_bound": first["bound"], "decode_first_step_components_s": first["components_s"],
        "decode_step_flops_per_gpu": first["flops"], "decode_step_bytes_per_gpu": first["bytes"],
        "decode_step_weight_bytes_read_per_gpu": first["weight_bytes"],
        "decode_step_cache_bytes_read_per_gpu": first["cache_read_bytes"],
        "decode_total_s": t["dec_total"], "total_s": total,
        "output_tokens_per_s": serving["output_tokens_per_s"] if serving else b * o / total,
        "output_tokens_per_s_per_gpu": (serving["output_tokens_per_s_per_gpu"] if serving
                                        else b * o / total / gpus),
        "tokens_per_s_per_user": 1.0 / t["tpot"], "serving_stack": hw["serving_stack"],
        "serving": serving,
        "critical_batch_size": crit[0], "critical_batch_size_matmuls": crit[1],
        "weight_bytes_per_gpu": w_bytes, "kv_cache_bytes_per_gpu": cache["kv"],
        "indexer_cache_bytes_per_gpu": cache["indexer"], "state_bytes_per_gpu": cache["state"],
        "state_bits": req.state_bits,
        "memory_bytes_per_gpu": mem, "fits_in_memory": mem <= hw["gpu_memory_bytes"],
        "layer_kinds": layer_kind_rows(spec, req, t, bits=bits),
        "convention": "TTFT = one prefill pass over the prompt (the first token comes from it); "
                      "o-1 decode steps, each reading every weight shard and the KV cache; per-op "
                      f"roofline (weight matmuls: soft corner, p = {ROOFLINE_CORNER_P}) + fixed "
                      "per-kernel overhead, summed over the layer list; TP ring all-reduce after "
                      "each attention and MLP block; PP stages sequential (a static batch one in "
                      "flight, continuous batching up to pp micro-batches); memory per GPU on the "
                      "most-loaded stage (weights + KV at s+o, no "
                      "activations/workspace)" + attention_convention(spec),
    }


if __name__ == "__main__":
    run_tool(main)
