"""Per-GPU memory for training and inference of a decoder-only transformer, on the most-loaded rank.

Training: weights, gradients and optimizer states (mixed precision, optimizer, ZeRO/FSDP stage,
tensor/pipeline/expert/context parallel sharding), activations after Korthikanti et al. 2022
(recompute mode, sequence parallelism, flash attention, dropout, GQA, SwiGLU, MoE, 1F1B and
interleaved pipelines, logits on the last stage), ZeRO buffers, LoRA/QLoRA fine-tuning.
Inference (--infer): weights at any bit width, KV cache (MHA/GQA/MQA/MLA; sliding-window layers
capped at their window, chunked layers keeping every token, layers that reuse another layer's cache
holding none, DeepSeek-V3.2's indexer keys as their own line), the activation working set of one
forward. With --gpu or --gpu-memory-gib: fits or not, headroom, and the largest micro-batch
(training) or batch and context (inference) that fit.

The model is the package's list of layers (llmcalc.model): every sum runs over the layers of each pipeline
stage with the block's per-kind functions (layer_params, cache_elements_per_token, cached_tokens),
so a model mixing attention kinds, dense and MoE layers is counted layer by layer.

Symbols: b micro-batch (per GPU), s sequence, h hidden, a heads, kv kv heads, d head dim, f MLP
width, L layers, V vocab, E experts, k top-k, tp pp dp ep cp parallel degrees, v virtual stages.
dp = gpus / (tp*pp*cp); ZeRO shards non-expert states over dp*cp (those ranks hold the same
weights, as Megatron's distributed optimizer does) and expert states over the expert-data-parallel
group gpus / (pp*etp*ep).

Assumptions (each printed with the result):
  * Mixed precision: weights at --low-prec-bytes-per-val (2), gradients at --bytes-per-grad-ele
    (4, Megatron's fp32 main grads), optimizer = fp32 master copy + states (Adam: 4+4+4 = 12 B).
  * Activations are stored at the low-precision width; dropout masks 1 byte; logits fp32 (4 B).
    Defaults: --flash-attention ON (no s^2 scores stored), --no-dropout (Llama/NeoX/Pythia train
    without dropout). Korthikanti's setup is --no-flash-attention --dropout.
  * -b is the micro-batch per GPU (training) or the batch of sequences (inference). -ca /
    --checkpoint-activations turns recompute ON (the cookbook's meaning: --recompute full): it
    stores each layer's input and adds the stage's largest layer's recompute working set;
    selective drops the attention-score terms (Korthikanti sec. 5). The default is no recompute.
  * 1F1B: stage i holds min(pp - i, m) micro-batches in flight (m = global batch / (b*dp));
    interleaved (v>1): stage 0 holds pp + (pp-1)/v stage-equivalents (Korthikanti sec. 4.2.3).
  * Pipeline split: L/(pp*v) layers per model chunk, or Megatron-LM's uneven split
    (--decoder-first/last-pipeline-num-layers, --account-for-embedding/loss-in-pipeline-split),
    checked by Megatron's rules; every stage is computed and the heaviest one reported. With v>1
    and a chunk one layer short, the in-flight count uses the stage's mean chunk. Layers that do
    not divide, no split stated: calc_training_time.py's implied split, applied and said.
  * MoE: balanced routing; routed-expert tokens are not split by tensor parallelism.
  * Framework allowance --framework-mem-gib (default 1.0 GiB: CUDA context, cuBLAS workspace,
    NCCL buffers) plus --misc-mem-gib (cookbook, default 0). Allocator fragmentation and temporary
    gradient-of-activation buffers are not modelled.

Examples:
  python calc_transformer_mem.py --num-layers=32 --sequence-length=2048 --num-attention-heads=32 --hidden-size=4096 --batch-size-per-gpu=8 --checkpoint-activations --zero-stage=1 --partition-activations --pipeline-parallel-size=1 --tensor-parallel-size=2 --num-gpus=128
  python calc_transformer_mem.py -l 96 -hs 12288 -a 96 -s 2048 -b 1 -tp 8 -pp 8 --virtual-pipeline-size 3 --num-gpus 64 --global-batch-size 64 --zero-stage 0 --recompute selective --sequence-parallel --no-flash-attention --dropout
  python calc_transformer_mem.py --hf_model_name_or_path path/to/Llama-3-8B --infer -s 8192 -o 1024 -b 16 --gpu h100
  python calc_transformer_mem.py --hf_model_name_or_path path/to/Llama-3-8B --finetune qlora --lora-rank 16 -s 4096 -ca --gpu-memory-gib 24
  python calc_transformer_mem.py --hf_model_name_or_path path/to/DeepSeek-V2-Lite --infer -s 32768 -b 8 --json

References:
  Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
    Table 2 and sec. 4-5 (activation bytes per layer; pipeline in-flight micro-batches).
  Rajbhandari et al. 2019, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
    sec. 3.1 and 5 (K = 12 for mixed-precision Adam; P_os, P_os+g, P_os+g+p), Table 1.
  Dettmers et al. 2023, "QLoRA" sec. 3 (NF4, double quantization: 0.127 bits/param of constants).
  DeepSeek-AI 2024, "DeepSeek-V2" sec. 2.1.3 (MLA caches (d_c + d_h^R) per token per layer).
  Megatron-LM megatron/training/theoretical_memory_usage.py (rank and stage conventions);
    megatron/core/transformer/transformer_block.py get_num_layers_to_build (uneven stages).
  Llama Team 2024, "The Llama 3 Herd of Models" sec. 3.3.2 (one layer fewer on each edge stage).
"""

import argparse
import sys

from ..accelerator import GIB, default_accelerator
from ..cli import (OneLineErrorParser, add_model_args, add_output_args,
    bounded_int, calc_errors, check_ranges, finite_float, parse_tool_args, print_result,
    print_warnings, ranges_epilog, run_tool, script_command,
    brief_number, command_word, print_brief)
from .gpu import accelerator_record
from ..text import number_text
from ..model.formulas import param_breakdown
from ..model.kinds import attention_kind, layer_groups
from ..model.spec import resolve_model_spec, spec_summary
from ..precision import NVFP4_BITS, PRECISIONS
from ..serve.footprint import all_attention_layers, any_attn, inference_memory, kv_cache_by_kind
from .finetune_flags import (FRAMEWORK_HELP_DEFAULT, add_finetune_args, finetune_checks,
    framework_default, peft_assumptions, lora_flags, lora_targets_of,
    attention_text, pure_precision, torch_training_fields)
from ..train.recompute import RECOMPUTE_MODES, RECOMPUTE_MODULES, recompute_text
from ..train.fit import (OFFLOAD_GRAD_BYTES, largest_that_fits, offload_host_memory,
    training_ways_out)
from ..train.finetune import QLORA_NF4_DQ_BITS, sharded_qlora
from ..train.memory import (FSDP_TO_ZERO, OPTIMIZER_STATE_BYTES,
    PIPELINE_SPLIT_KEYS, MemoryConfig, offloaded_stages,
    optimizer_bytes_per_param, pipeline_chunk_layers, pipeline_split_error, training_memory,
    implied_pipeline_split,
    zero_shards)


# The range of each script flag (argparse dest: (lo, hi), both inclusive): far past any real run
# (1e7 GPUs ~50 x today's largest cluster; pp and vp 1024, 16 x the deepest pipelines built),
# and tight enough that no result overflows to inf, divides by ~0 or turns negative, and that a
# fit search over the stages stays fast. The model flags have their own caps in model/spec.py.
FLAG_RANGES = {
    "num_gpus": (1, 10 ** 7), "tensor_parallel_size": (1, 10 ** 7), "pipeline_parallel_size": (1, 1024),
    "virtual_pipeline_size": (1, 1024), "decoder_first_pipeline_num_layers": (1, 100_000),
    "decoder_last_pipeline_num_layers": (1, 100_000), "context_parallel_size": (1, 10 ** 7),
    "expert_parallelism": (1, 10 ** 7), "expert_tensor_parallel_size": (1, 10 ** 7),
    "zero_allgather_bucket_size": (0, 1e12), "zero3_max_live_params": (1, 1e15),
    "batch_size_per_gpu": (1, 10 ** 9), "global_batch_size": (1, 10 ** 12), "sequence_length": (1, 10 ** 9),
    "lora_rank": (1, 10 ** 6), "lora_dropout": (0, 0.999),
    "adapter_bytes_per_val": (1, 8), "high_prec_bytes_per_val": (1, 8),
    "low_prec_bytes_per_val": (1, 8), "recompute_every": (1, 10 ** 6), "bytes_per_grad_ele": (1, 8), "weight_bits": (1, 64),
    "kv_cache_bytes_per_val": (0.125, 8), "state_bytes_per_val": (0.125, 8), "state_bits": (1, 64), "output_tokens": (0, 10 ** 9), "prefill_chunk": (1, 10 ** 9),
    "gpu_memory_gib": (1e-3, 1e6), "misc_mem_gib": (0, 1e6), "framework_mem_gib": (0, 1e6)}


# ------------------------------------------------------------------------------------------------
# Output
# ------------------------------------------------------------------------------------------------

def format_report(res):
    """Aligned per-GPU breakdown for the heaviest stage, with totals, fit and assumptions."""
    total = res["total_bytes"]
    rows = [("Weights", res["weights_bytes"])]
    if res["mode"] == "training":
        rows += [("Gradients", res["gradients_bytes"]), ("Optimizer states", res["optimizer_bytes"]),
                 ("ZeRO buffers (all-gather bucket, live params)", res["zero_buffers_bytes"]),
                 ("Autocast 16-bit weight copies (saved for backward)", res["weight_casts_bytes"]),
                 ("Activations: stored for backward", res["activations_stored_bytes"]),
                 ("Activations: recompute working set", res["activations_recompute_bytes"]),
                 ("Activations: final norm, head input, fp32 logits", res["activations_logits_bytes"])]
    else:
        rows += [("KV cache", res["kv_cache_bytes"])]
        if res["indexer_cache_bytes"]:
            rows += [("Indexer key cache (DeepSeek sparse attention)", res["indexer_cache_bytes"])]
        if res["state_cache_bytes"]:
            rows += [("Linear-attention state (constant per sequence)", res["state_cache_bytes"])]
        rows += [("Activations (one forward)", res["activations_bytes"])]
    rows += [("Framework allowance + misc", res["overhead_bytes"])]
    fit = res.get("fit") or {}
    on = (f" on {fit['gpu']}" + (" (the default GPU; --gpu NAME for another)" if fit.get("gpu_default") else "")
          if fit else "")
    lines = [f"Per-GPU memory, {res['mode']}, heaviest rank: pipeline stage {res['stage']} of "
             f"{res['parallelism']['pp']} ({res['parallelism_text']}){on}", res["mode_text"]]
    lines += [f"WARNING: {w}" for w in res["warnings"]]
    if res.get("pipeline_split_applied"):
        lines.append(f"pipeline split: {res['pipeline_split_applied']}")
    lines += [f"Model: {res['model']['described']}: {res['total_params']:,} params ({res['total_params'] / 1e9:.2f} B); "
              f"on this GPU {res['params_per_gpu']:,}",
              f"{'component':<52}{'GiB':>10}{'bytes':>20}{'% total':>9}"]
    for name, v in rows:
        lines.append(f"{name:<52}{v / GIB:>10.2f}{int(round(v)):>20,}{100 * v / total if total else 0:>8.1f}%")
    lines.append("-" * 91)
    lines.append(f"{'Total per GPU':<52}{total / GIB:>10.2f}{int(round(total)):>20,}")
    if res["parallelism"]["pp"] > 1:
        lines.append("per stage total GiB: " + ", ".join(f"{x['total_bytes'] / GIB:.2f}"
                                                      for x in res["stages"]))
        lines.append("per stage layers: " + ", ".join(str(x["stage_layers"]) for x in res["stages"]))
    if res["mode"] == "inference":
        kinds = res["kv_cache_layer_kinds"]
        lines.append(f"KV cache: {res['kv_cache_bytes_per_token']:,} B per token per GPU over "
                     f"{res['stage_layers']} layers"
                     + (f" ({kinds[0]['kv_bytes_per_token']:,} per layer)" if len(kinds) == 1 else ":"))
        if len(kinds) > 1:
            for k in kinds:
                if k["state_bytes_per_layer"] and not k["kv_bytes_per_token"]:
                    lines.append(f"  {k['layers']:>4} x {k['attention']:<32}{'no KV':>10}, a constant state of "
                                 f"{k['state_bytes_per_layer'] / 2**20:,.2f} MiB per layer (whole batch), "
                                 f"{k['layers'] * k['state_bytes_per_layer'] / GIB:.2f} GiB")
                    continue
                comp = (f" (window {k['layers'] * (k['kv_bytes_per_layer'] + k['indexer_bytes_per_layer'] - k['compressed_bytes_per_layer']) / GIB:.2f} "
                        f"+ compressed entries {k['layers'] * k['compressed_bytes_per_layer'] / GIB:.2f})"
                        if k["compressed_bytes_per_layer"] else "")
                lines.append(f"  {k['layers']:>4} x {k['attention']:<32}"
                             f"{k['kv_bytes_per_token']:>10,} B/token, "
                             f"keeps {k['cached_tokens']:,} tokens, "
                             f"{k['layers'] * (k['kv_bytes_per_layer'] + k['indexer_bytes_per_layer']) / GIB:.2f} GiB{comp}")
        alt = res.get("all_attention")
        if alt:
            lines.append(f"as if its {alt['linear_layers']} linear-attention layers were {alt['attention']} attention "
                         f"(same weights): KV cache "
                         f"{alt['kv_cache_bytes'] / GIB:.2f} GiB, total {alt['total_bytes'] / GIB:.2f} GiB; "
                         f"this hybrid saves {alt['saving_bytes'] / GIB:.2f} GiB "
                         f"({100 * alt['saving_bytes'] / alt['total_bytes']:.1f}% of that total)")
    fit = res.get("fit")
    if fit:
        lines.append(f"GPU {fit['gpu']}: {fit['memory_bytes'] / GIB:.2f} GiB -> "
                     f"{'FITS' if fit['fits'] else 'DOES NOT FIT'}, headroom "
                     f"{fit['headroom_bytes'] / GIB:.2f} GiB")
        for k, v in fit.items():
            if k.startswith("max_") and k != "max_context_tokens_memory":
                more = " or more (the search stops there)" if k in fit.get("capped", ()) else ""
                if k == "max_context_tokens" and fit.get("context_limited_by"):
                    more = (f" (the model's trained context; the memory would hold "
                            f"{fit['max_context_tokens_memory']:,})")
                lines.append(f"  {k.replace('_', ' ')}: {v}{more}")
        ways = fit.get("ways_out")
        if ways:
            lines.append(f"what fits instead, at micro-batch {res['config']['batch_size']} (the same model"
                         + (", without --offload-params / --offload-activations" if ways.get("without_layer_offload")
                            else "") + "):")
            w = max(len(x["flags"]) for x in ways["changes"]) if ways["changes"] else 0
            for x in ways["changes"]:
                lines.append(f"  {x['flags']:<{w}}  {x['total_bytes'] / GIB:>9,.2f} GiB  "
                             f"{'fits' if x['fits'] else 'does not fit'}: {x['why']}")
            if not ways["fewest_gpus"]:
                lines.append("  no GPU count up to 2^20 data-parallel ranks fits it under ZeRO-3 and full recompute")
            on = f" on {ways['fewest_gpus']} GPUs" if ways["fewest_gpus"] else ""
            lines.append(f"  the fastest layout that fits{on}: {ways['search_command']}")
    off = res.get("offload")
    if off:
        lines.append(f"offloaded optimizer (--offload): {off['host_bytes_per_gpu'] / 1e9:,.1f} GB of host memory "
                     f"per GPU, {off['host_bytes_per_host'] / 1e9:,.1f} GB per host of {off['gpus_per_host']} GPUs "
                     f"({off['bytes_per_param']:g} B per parameter it updates)")
    if res.get("host_bytes"):
        what = " and ".join(x for x, on in (("layer weights (--offload-params)", res["config"]["offload_params"]),
                                            ("stored activations (--offload-activations)",
                                             res["config"]["offload_activations"])) if on)
        lines.append(f"in host memory: {what}, {res['host_bytes'] / 1e9:,.1f} GB per GPU on the heaviest stage "
                     "(two layers' worth stays on the GPU; the copies' time: "
                     f"{command_word('calc_training_time.py')})")
    for a in res["assumptions"]:
        lines.append(f"assumes: {a}")
    return "\n".join(lines)


def build_parser():
    p = OneLineErrorParser(description=__doc__)
    add_model_args(p)
    bo = argparse.BooleanOptionalAction
    g = p.add_argument_group("parallelism (cookbook flags first)")
    g.add_argument("--num-gpus", type=bounded_int, default=None, help="GPUs in the job (default 1)")
    g.add_argument("--tensor-parallel-size", "-tp", type=bounded_int, default=None, help="tp (default 1)")
    g.add_argument("--pipeline-parallel-size", "-pp", type=bounded_int, default=None, help="pp (default 1)")
    g.add_argument("--virtual-pipeline-size", "-vp", type=bounded_int, default=1,
                   help="interleaved schedule: model chunks per pipeline rank (default 1)")
    g.add_argument("--decoder-first-pipeline-num-layers", type=bounded_int, default=None,
                   help="Megatron-LM uneven pipeline: layers on the first stage (the stages without "
                   "a stated count share the rest evenly)")
    g.add_argument("--decoder-last-pipeline-num-layers", type=bounded_int, default=None,
                   help="Megatron-LM uneven pipeline: layers on the last stage")
    g.add_argument("--account-for-embedding-in-pipeline-split", action="store_true",
                   help="Megatron-LM: the embedding counts as one layer when splitting L+1 over "
                   "pp*vp chunks; the first chunk holds one transformer layer fewer")
    g.add_argument("--account-for-loss-in-pipeline-split", action="store_true",
                   help="Megatron-LM: the head and loss count as one layer; the last chunk holds "
                   "one transformer layer fewer")
    g.add_argument("--context-parallel-size", "-cp", type=bounded_int, default=1,
                   help="cp: the sequence split over cp ranks (ring attention; default 1)")
    g.add_argument("--expert-parallelism", "-ep", "--expert-parallel-size", type=bounded_int, default=None,
                   help="ep: routed experts split over ep ranks (default 1)")
    g.add_argument("--expert-tensor-parallel-size", "-etp", type=bounded_int, default=None,
                   help="tensor parallelism inside each expert (default tp)")
    g.add_argument("--sequence-parallel", "-sp", action=bo, default=False,
                   help="Megatron sequence parallelism: norms/dropout activations /tp (default off)")
    g.add_argument("--partition-activations", "-pa", action="store_true",
                   help="DeepSpeed ZeRO-R: checkpointed layer inputs split over tp (with full recompute)")
    g.add_argument("--zero-stage", "-z", type=bounded_int, default=None, choices=[0, 1, 2, 3],
                   help="ZeRO stage over the dp*cp group (cookbook default 1)")
    g.add_argument("--fsdp", choices=sorted(FSDP_TO_ZERO), default=None,
                   help="FSDP sharding strategy, read as its ZeRO equivalent (no_shard 0, "
                   "shard_grad_op 2, full_shard/hybrid_shard 3)")
    g.add_argument("--zero-allgather-bucket-size", "-zbs", type=finite_float, default=None,
                   help="ZeRO all-gather bucket in elements, held at weight precision (default 5e8, DeepSpeed's; 0: "
                   "Megatron-LM's distributed optimizer, which shards in place)")
    g.add_argument("--zero3-max-live-params", "-zmlp", type=finite_float, default=None,
                   help="ZeRO-3 parameters kept gathered at once (default 1e9)")
    t = p.add_argument_group("training")
    t.add_argument("--checkpoint-activations", "-ca", action="store_true",
                   help="turns full activation recomputation ON (the cookbook's meaning; same as "
                   "--recompute full)")
    t.add_argument("--recompute", choices=RECOMPUTE_MODES, default=None,
                   help="activation recomputation (default none; -ca means full): selective = Megatron-LM's "
                   "--recompute-modules (default core_attn), op-sac = torchtitan's per-op selective checkpointing "
                   "(keeps attention outputs and every odd-numbered matmul's output)")
    t.add_argument("--recompute-modules", nargs="+", choices=RECOMPUTE_MODULES, default=None, metavar="MODULE",
                   help="with --recompute selective: Megatron-LM's modules whose activations are dropped "
                   "(default core_attn; one of " + ", ".join(RECOMPUTE_MODULES) + ")")
    t.add_argument("--recompute-every", type=bounded_int, default=None, metavar="K",
                   help="apply --recompute to every k-th layer only, the others keep everything")
    t.add_argument("--batch-size-per-gpu", "-b", "--micro-batch-size", type=bounded_int, default=None,
                   help="micro-batch per GPU, or the inference batch (default 1)")
    t.add_argument("--global-batch-size", "-gbs", type=bounded_int, default=None,
                   help="global batch; gives the micro-batch count m = gbs/(b*dp) (default: m = pp)")
    t.add_argument("--sequence-length", "-s", "--prompt-tokens", type=bounded_int, default=None,
                   help="training sequence, or the inference prompt (default 2048; --prompt-tokens "
                   "as calc_inference_latency.py and calc_transformer_flops.py spell it)")
    t.add_argument("--flash-attention", action=bo, default=True,
                   help="fused attention: no s^2 scores stored (default on)")
    t.add_argument("--dropout", action=bo, default=False,
                   help="dropout masks stored (default off; Korthikanti's setup has it on)")
    t.add_argument("--offload", action=bo, default=False,
                   help="optimizer states, with the fp32 master copy, on the host (ZeRO-Offload, as "
                   "calc_training_time.py --offload): the host memory it needs is stated")
    t.add_argument("--offload-params", action=bo, default=False,
                   help="the layers' 16-bit weights in host memory, two layers' on the GPU (ZeRO-Infinity, "
                   "as calc_training_time.py --offload-params; -z 0-2, --framework megatron)")
    t.add_argument("--offload-activations", action=bo, default=False,
                   help="what each layer stores for its backward in host memory, two layers' worth of one "
                   "micro-batch on the GPU (as calc_training_time.py --offload-activations)")
    t.add_argument("--optimizer", choices=sorted(OPTIMIZER_STATE_BYTES), default="adamw",
                   help="optimizer (default adamw: 12 B/param with the fp32 master copy)")
    t.add_argument("--finetune", choices=("full", "lora", "qlora"), default="full",
                   help="full training, or LoRA/QLoRA adapters on a frozen base (default full)")
    t.add_argument("--lora-rank", type=bounded_int, default=None, help="LoRA rank r (default 16)")
    t.add_argument("--adapter-bytes-per-val", type=bounded_int, default=None,
                   help="LoRA adapter weights and grads (default 4: PEFT keeps adapters in fp32; "
                   "the QLoRA paper's code casts them to bf16: 2)")
    t.add_argument("--lora-targets", default=None,
                   help="comma list of q,k,v,o,gate,up,down, or all-linear (default)")
    t.add_argument("--framework", choices=("megatron", "pytorch"), default=None,
                   help="whose activations: megatron = fused kernels, Korthikanti et al. 2022's "
                   "count; pytorch = eager PyTorch with transformers' modules (what "
                   "autograd saves; with mixed precision and ZeRO 0-1, fp32 weights under "
                   "torch.autocast, as the Hugging Face Trainer's --bf16 runs); "
                   + FRAMEWORK_HELP_DEFAULT)
    add_finetune_args(p)
    pr = p.add_argument_group("precision")
    pr.add_argument("--disable-mixed-precision", action="store_false", dest="is_mixed_precision",
                    help="train in high precision: no master copy, weights and activations at "
                    "--high-prec-bytes-per-val")
    pr.add_argument("--high-prec-bytes-per-val", type=bounded_int, default=None, help="default 4")
    pr.add_argument("--low-prec-bytes-per-val", type=bounded_int, default=None, help="default 2")
    pr.add_argument("--bytes-per-grad-ele", type=bounded_int, default=None, help="default 4")
    pr.add_argument("--weight-bits", type=finite_float, default=None,
                   help="bits per quantized layer weight for inference and QLoRA (default: 16 for "
                   "inference, 4.127 = NF4 with double quantization for QLoRA); embeddings, head "
                   "stay at the low-precision width")
    pr.add_argument("--kv-cache-bytes-per-val", type=finite_float, default=None,
                   help="KV cache element bytes (default: --low-prec-bytes-per-val)")
    pr.add_argument("--kv-cache-bits", type=bounded_int, default=None,
                    help="KV cache element bits, as calc_inference_latency.py takes them (= 8 x "
                    "--kv-cache-bytes-per-val)")
    pr.add_argument("--state-bits", type=bounded_int, default=None,
                    help="recurrent-state element bits, as calc_inference_latency.py takes them (= 8 x "
                    "--state-bytes-per-val)")
    pr.add_argument("--state-bytes-per-val", type=finite_float, default=None,
                   help="bytes per element of a linear-attention / state-space layer's recurrent state "
                   "(default 4: fp32, as transformers' cache and flash-linear-attention keep it); its conv "
                   "window is at --low-prec-bytes-per-val")
    i = p.add_argument_group("inference")
    i.add_argument("--infer", action="store_true", help="inference instead of training")
    i.add_argument("--precision", choices=sorted(PRECISIONS), default=None,
                   help="weight and KV-cache bits at once, as calc_inference_latency.py takes it (explicit "
                   "--weight-bits / --kv-cache-bits win; fp4 weights are NVFP4, 4.5 bits with scales)")
    i.add_argument("--output-tokens", "-o", type=bounded_int, default=None, help="generated tokens (default 1)")
    i.add_argument("--prefill-chunk", type=bounded_int, default=None,
                   help="tokens one prefill forward processes (vLLM-style chunked prefill; default: "
                   "the whole batch's prompts at once)")
    i.add_argument("--mla-cache", choices=("latent", "expanded"), default="latent",
                   help="MLA cache: the compressed latent (vLLM/SGLang, DeepSeek paper) or HF's "
                   "expanded per-head K/V (default latent)")
    f = p.add_argument_group("fit and overheads")
    f.add_argument("--gpu", default=None, help="accelerator name from hardware.py (e.g. h100)")
    f.add_argument("--gpu-memory-gib", type=finite_float, default=None, help="memory per GPU in GiB")
    f.add_argument("--misc-mem-gib", type=finite_float, default=None,
                   help="extra per-GPU memory you know of (cookbook; default 0)")
    f.add_argument("--framework-mem-gib", type=finite_float, default=1.0,
                   help="CUDA context, cuBLAS workspace, NCCL buffers (default 1.0)")
    add_output_args(p, json_help="print the result dict as JSON only")
    p.epilog = lambda: ranges_epilog(p, FLAG_RANGES)  # built only for --help
    return p


class MemConfig(MemoryConfig):
    """calc_transformer_mem.py's resolved configuration (the result's "config"): the training
    memory config (train/memory.MemoryConfig) and the fields of inference and of the capacity check,
    built once, by config_from_flags."""

    FIELDS = dict(MemoryConfig.FIELDS, **{
        "weight_bits": "bits per layer weight (inference, QLoRA's default base)",
        "expert_weight_bits": "bits per routed-expert weight (inference)",
        "checkpoint_format": "the checkpoint's quantization as stored (served as is), or None",
        "kv_bytes": "bytes per KV cache element",
        "state_bytes": "bytes per recurrent-state element",
        "output_tokens": "generated tokens (inference)",
        "sliding_window": "the widest sliding window",
        "sliding_layers": "indices of the layers with sliding-window attention",
        "prefill_chunk": "tokens one prefill forward processes, or None: the whole batch",
        "mla_cache": "MLA cache: latent or expanded", "gpu": "the capacity's source, in words",
        "gpu_default": "no --gpu or --gpu-memory-gib given: the default accelerator's capacity",
        "memory_field": "which capacity: hardware.py's field or --gpu-memory-gib",
        "infer": "inference instead of training"})


# Flags that must be positive when given (the others have their own rule)
POSITIVE_FLAGS = ("num_gpus", "tensor_parallel_size", "pipeline_parallel_size",
                  "virtual_pipeline_size", "context_parallel_size", "expert_parallelism",
                  "expert_tensor_parallel_size",
                  "batch_size_per_gpu", "global_batch_size", "sequence_length",
                  "high_prec_bytes_per_val", "low_prec_bytes_per_val", "bytes_per_grad_ele",
                  "weight_bits", "kv_cache_bytes_per_val", "gpu_memory_gib", "prefill_chunk",
                  "adapter_bytes_per_val", "lora_rank", "zero3_max_live_params",
                  "decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers")


def check_flag_values(args, parser):
    """Each flag's own rule, one parser.error: positive, not negative, within FLAG_RANGES."""
    for name in POSITIVE_FLAGS:
        val = getattr(args, name)
        if val is not None and val <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {val}")
    for name in ("misc_mem_gib", "framework_mem_gib"):
        if getattr(args, name) is not None and getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must not be negative")
    if args.output_tokens is not None and args.output_tokens < 0:
        parser.error("--output-tokens must not be negative")
    check_ranges(args, parser, FLAG_RANGES)


def bit_widths(args, parser):
    """The weight bits and the KV cache and state bytes per element the flags give (None where
    none does): --precision fills those not given under --infer, as calc_inference_latency.py's
    preset; --kv-cache-bits / --state-bits are the latency script's spellings, in bits."""
    weight_bits, kv_bits = args.weight_bits, args.kv_cache_bits
    if args.precision and args.infer:
        w, _, kv = PRECISIONS[args.precision]
        if weight_bits is None:
            weight_bits = NVFP4_BITS if args.precision == "fp4" else w
        if kv_bits is None and args.kv_cache_bytes_per_val is None:
            kv_bits = kv
    out = {"weight_bits": weight_bits}
    for key, bits, nbytes in (("kv_bytes", "kv_cache_bits", "kv_cache_bytes_per_val"),
                              ("state_bytes", "state_bits", "state_bytes_per_val")):
        val = kv_bits if bits == "kv_cache_bits" else args.state_bits
        out[key] = getattr(args, nbytes)
        if val is not None:
            if out[key] is not None:
                parser.error(f"give --{bits.replace('_', '-')} or --{nbytes.replace('_', '-')}, not both")
            if bits == "kv_cache_bits" and val not in (4, 8, 16, 32):
                parser.error(f"--{bits.replace('_', '-')} must be 4, 8, 16 or 32, got {val}")
            out[key] = val / 8
    return out


def model_spec(model_args, parser):
    """The model spec and notes; what the result should say about flags it does not use goes into
    the spec's warnings."""
    args = model_args
    try:
        spec, notes = resolve_model_spec(vars(args), defaults={"num_experts": 0})
    except ValueError as exc:
        parser.error(str(exc))
    if args.precision and not args.infer:
        spec["warnings"].append(f"--precision {args.precision} describes serving (--infer); training counts "
                                "weights, gradients and states at the byte widths of its own flags")
    if args.infer:  # training-only layouts: say so in the result rather than drop them silently
        unused = [f for f, on in (("-cp", args.context_parallel_size > 1), ("--sequence-parallel", args.sequence_parallel),
                                  ("-z", args.zero_stage is not None), ("--offload", args.offload),
                                  ("--offload-params", args.offload_params),
                                  ("--offload-activations", args.offload_activations)) if on]
        if unused:
            spec["warnings"].append(f"{', '.join(unused)} {'describes' if len(unused) == 1 else 'describe'} "
                                    "training; --infer does not model it (weights and cache per GPU come from "
                                    "-tp, -pp and -ep)")
    return spec, notes


def check_pipeline_split(args, parser, L, pp, vp, notes=None):
    """Megatron-LM's rules for the layers of each pipeline stage (pipeline_split_error), one
    parser.error; returns the counts[rank][chunk] of pipeline_chunk_layers. Layers that pp x vp
    do not divide, with no split stated, take calc_training_time.py's implied split (the same
    uneven split, else the embedding and loss counted as layers), set on args and noted: one
    answer whichever tool is asked; stated flags win."""
    split, said = implied_pipeline_split(L, {"pp": pp, "vp": vp, **{
        k: getattr(args, k) for k in PIPELINE_SPLIT_KEYS}})
    if split:
        for k, v in split.items():
            setattr(args, k, v)
        args.pipeline_split_applied = said
        if notes is not None:
            notes.append(said)
    kw = dict(num_layers=L, pp=pp, vp=vp, first=args.decoder_first_pipeline_num_layers,
              last=args.decoder_last_pipeline_num_layers,
              embedding_in_split=args.account_for_embedding_in_pipeline_split,
              loss_in_split=args.account_for_loss_in_pipeline_split)
    why = pipeline_split_error(**kw)
    if why:
        parser.error(why)
    return pipeline_chunk_layers(**kw)


def parallel_sizes(args, parser, spec, notes):
    """tp, pp, vp, cp, ep, etp, dp and the GPUs, each split checked against every layer kind
    (heads, kv heads, widths and experts divide; the pipeline split is Megatron-LM's), and the
    chunk layers of the split; an etp on a dense model is noted and reset to tp."""
    n = args.num_gpus or 1
    tp, pp = args.tensor_parallel_size or 1, args.pipeline_parallel_size or 1
    vp, cp = args.virtual_pipeline_size, args.context_parallel_size
    ep = args.expert_parallelism or 1
    etp = args.expert_tensor_parallel_size or tp
    kinds = [g[0] for g in layer_groups(spec)]
    mlps = [m for layer in kinds for m in layer["mlp"]]
    if n % (tp * pp * cp):
        parser.error(f"--num-gpus {n} is not divisible by tp*pp*cp = {tp}*{pp}*{cp} = {tp * pp * cp}")
    for x in (x for layer in kinds for x in layer["attention"]):  # every kind's heads split over tp
        if x["heads"] % tp:
            parser.error(f"--num-attention-heads {x['heads']} is not divisible by "
                         f"--tensor-parallel-size {tp}")
        if x["kind"] == "gdn" and x["kv_heads"] % tp:  # key heads split, never replicated (Mamba-2
            # groups fewer than tp are replicated, as vLLM does)
            parser.error(f"linear-attention key heads {x['kv_heads']} are not divisible by "
                         f"--tensor-parallel-size {tp}")
        if x["kv_heads"] % tp and tp % x["kv_heads"]:
            parser.error(f"kv heads {x['kv_heads']} and --tensor-parallel-size {tp}: one must "
                         "divide the other")
    chunk_layers = check_pipeline_split(args, parser, spec["num_layers"], pp, vp, notes)
    for m in mlps:
        if m["kind"] == "dense" and m["width"] % tp:
            parser.error(f"MLP width {m['width']} is not divisible by --tensor-parallel-size {tp}")
    if vp > 1 and pp == 1:
        parser.error("--virtual-pipeline-size > 1 needs --pipeline-parallel-size > 1")
    moe = [m for m in mlps if m["kind"] == "moe"]
    etp = check_experts(parser, moe, n=n, tp=tp, pp=pp, ep=ep, etp=etp, notes=notes)
    return dict(num_gpus=n, tp=tp, pp=pp, vp=vp, cp=cp, ep=ep, etp=etp, dp=n // (tp * pp * cp),
                chunk_layers=chunk_layers)


def check_experts(parser, moe_mlps, *, n, tp, pp, ep, etp, notes):
    """The expert splits (experts over ep, widths over etp and tp), one parser.error; returns etp
    (tp on a model without MoE layers, with a note when another was given)."""
    for m in moe_mlps:
        if m["num_experts"] % ep:
            parser.error(f"--num-experts {m['num_experts']} is not divisible by --expert-parallelism {ep}")
        if (n // pp) % (ep * etp):
            parser.error(f"gpus per pipeline stage {n // pp} are not divisible by ep*etp = {ep}*{etp}")
        if m["width"] % etp:
            parser.error(f"expert width {m['width']} is not divisible by etp {etp}")
        if m["shared_width"] % tp:
            parser.error(f"shared-expert width {m['shared_width']} is not divisible by "
                         f"--tensor-parallel-size {tp}")
    if not moe_mlps and ep > 1:
        parser.error("--expert-parallelism > 1 needs a MoE model (--moe or --num-experts > 1)")
    if not moe_mlps and etp != tp:  # Megatron-LM reads etp for the expert layers only
        notes.append(f"--expert-tensor-parallel-size {etp} ignored: the model has no MoE layer (etp "
                     f"splits experts only); etp = tp = {tp}")
        etp = tp
    return etp


def zero_stage_of(args, parser, pp, notes):
    """The ZeRO stage: --fsdp's equivalent, else -z (default 1), checked against the pipeline."""
    zero = FSDP_TO_ZERO[args.fsdp] if args.fsdp else (1 if args.zero_stage is None else args.zero_stage)
    if args.fsdp and args.zero_stage is not None and args.zero_stage != zero:
        parser.error(f"--fsdp {args.fsdp} is ZeRO stage {zero}, but --zero-stage {args.zero_stage} was given")
    if zero == 3 and pp > 1 and not args.infer:
        parser.error("ZeRO-3 / FSDP full sharding with --pipeline-parallel-size > 1 is not supported "
                     "(DeepSpeed's pipeline engine allows ZeRO stages 0-1)")
    if zero == 2 and pp > 1 and not args.infer:
        notes.append("ZeRO-2 with pipeline parallelism is rejected by DeepSpeed's pipeline engine; "
                     "counted as if gradients were sharded")
    return zero


def batch_shape(args, parser, *, cp, dp, vp, pp):
    """(sequence length, micro-batch, micro-batches per step or None), each checked."""
    s = args.sequence_length or 2048
    if cp > 1 and s % cp:
        parser.error(f"--sequence-length {s} is not divisible by --context-parallel-size {cp}")
    b = args.batch_size_per_gpu or 1
    m = None
    if args.global_batch_size is not None:
        if args.global_batch_size % (b * dp):
            parser.error(f"--global-batch-size {args.global_batch_size} is not divisible by "
                         f"b*dp = {b}*{dp}")
        m = args.global_batch_size // (b * dp)
        if vp > 1 and m % pp:
            parser.error(f"the interleaved schedule needs micro-batches ({m}) divisible by pp {pp}")
    return s, b, m


def recompute_of(args, parser, notes):
    """The recompute mode (-ca is full; default none), its modules' and -pa's rules."""
    recompute = args.recompute or ("full" if args.checkpoint_activations else "none")
    if args.checkpoint_activations and args.recompute not in (None, "full"):
        parser.error(f"--checkpoint-activations means full recompute, but --recompute {args.recompute} was given")
    if args.recompute_modules and recompute != "selective":
        parser.error(f"--recompute-modules needs --recompute selective, not --recompute {recompute}")
    if (args.recompute_every or 1) > 1 and recompute == "none":
        notes.append(f"--recompute-every {args.recompute_every} changes nothing without --recompute")
    if args.partition_activations and recompute != "full":
        notes.append("--partition-activations splits checkpointed layer inputs; it changes "
                     "nothing without --recompute full")
    return recompute


def check_training_kind(args, parser, *, eager, zero, recompute, notes):
    """What the eager rule and layer offload count (full training; offload on Megatron-LM's
    kernels at ZeRO 0-2), one parser.error."""
    layer_offload = (args.offload_params or args.offload_activations) and not args.infer
    if layer_offload and (eager or args.finetune != "full"):
        parser.error("--offload-params / --offload-activations are counted for full training on Megatron-LM's "
                     "kernels only, as calc_training_time.py costs them (FSDP's CPUOffload moves weights, "
                     "gradients and optimizer together: not modelled)")
    if args.offload_params and zero == 3 and not args.infer:
        parser.error("--offload-params with -z 3 (ZeRO-Infinity's sharded offload) is not modelled: use -z 0-2")
    if eager and recompute == "selective":
        notes.append("--framework pytorch: transformers has no selective recompute; its layers are "
                     "counted with the fused-kernel rule")


def lora_of(args, parser, *, weight_bits, wbytes):
    """LoRA / QLoRA's adapters and frozen base ({rank, targets, base_bits, adapter_bytes}), None
    for full training."""
    rank, text = lora_flags(args, parser)
    if args.finetune == "full":
        return None
    if args.infer:
        parser.error("--finetune applies to training, not --infer")
    targets = list(lora_targets_of(text, parser))
    bits = weight_bits or (QLORA_NF4_DQ_BITS if args.finetune == "qlora" else 8 * wbytes)
    return {"rank": rank, "targets": targets, "base_bits": bits,
            "adapter_bytes": args.adapter_bytes_per_val or 4, "dropout": args.lora_dropout,
            "quantized": args.finetune == "qlora" and weight_bits is None}


def gpu_capacity(args, parser):
    """{memory_bytes, gpu, gpu_default, memory_field}: the capacity checked against, from --gpu
    (driver-reported where hardware.py has it), --gpu-memory-gib, or the default accelerator."""
    mem = gpu = mem_field = None
    if args.gpu:
        rec = accelerator_record(args.gpu, parser, without="pass --gpu-memory-gib (e.g. 80 for an "
                                 "H100 80GB) instead")
        # driver-reported capacity (nvidia-smi total) where this hardware.py has it, else the
        # vendor's printed GB (an older hardware.py): the assumptions line says which
        mem_field = "memory_usable_bytes" if rec.get("memory_usable_bytes") else "memory_bytes"
        mem, gpu = rec[mem_field], rec["name"]
    if args.gpu_memory_gib is not None:
        if mem is not None:
            parser.error("give --gpu or --gpu-memory-gib, not both")
        mem, gpu = args.gpu_memory_gib * GIB, f"{args.gpu_memory_gib:g} GiB"
        mem_field = "--gpu-memory-gib"
    gpu_default = mem is None
    if gpu_default:  # the default accelerator: exactly the record --gpu h100-sxm reads
        rec = default_accelerator()
        mem_field = "memory_usable_bytes"
        mem, gpu = rec[mem_field], rec["name"]
    return {"memory_bytes": mem, "gpu": gpu, "gpu_default": gpu_default, "memory_field": mem_field}


def resolve(args, parser):
    """Resolve the model and configuration from the parsed flags (left as parsed): (spec,
    MemConfig, notes, the flags as the model reader saw them); every check is a one-line
    parser.error (exit 2)."""
    check_flag_values(args, parser)
    bits = bit_widths(args, parser)
    model_args = args  # the default heads are the model reader's, the same in every tool
    spec, notes = model_spec(model_args, parser)
    shape = parallel_sizes(args, parser, spec, notes)
    zero = zero_stage_of(args, parser, shape["pp"], notes)
    s, b, m = batch_shape(args, parser, **{k: shape[k] for k in ("cp", "dp", "vp", "pp")})
    recompute = recompute_of(args, parser, notes)
    eager = args.framework == "pytorch" and not args.infer
    check_training_kind(args, parser, eager=eager, zero=zero, recompute=recompute, notes=notes)
    finetune_checks(args, parser, eager=eager, zero=zero, spec=spec, notes=notes)
    c = config_from_flags(args, parser, spec, shape=shape, zero=zero, batch=(s, b, m),
                          recompute=recompute, eager=eager, bits=bits)
    return spec, c, notes, model_args


def config_from_flags(args, parser, spec, *, shape, zero, batch, recompute, eager, bits):
    """The one place calc_transformer_mem.py's configuration (MemConfig) is built, from the checked
    flags and the sizes resolve() found; key order is the result's "config" order."""
    s, b, m = batch
    mixed, high = pure_precision(args)
    low = args.low_prec_bytes_per_val or 2
    wbytes = low if mixed else high
    # eager mixed precision without sharded weights or gradients: fp32 weights are the master copy
    autocast = eager and mixed and zero <= 1
    lora = lora_of(args, parser, weight_bits=bits["weight_bits"], wbytes=wbytes)
    lora = sharded_qlora(lora, zero_stage=zero) if eager else lora
    weight_bits = bits["weight_bits"] or 8 * wbytes
    expert_bits, fmt = weight_bits, spec.get("checkpoint_format")
    served_as_stored = args.infer and bits["weight_bits"] is None
    if served_as_stored and fmt:  # serve the checkpoint as it is stored
        weight_bits, expert_bits = fmt["linear_bits"], fmt["expert_bits"]
    attns = [x for g in layer_groups(spec) for x in g[0]["attention"]]
    sliding = [i for i, layer in enumerate(spec["layers"])
               if any(x["span"] == "sliding" for x in layer["attention"])]
    windows = {x["window"] for x in attns if x["span"] == "sliding"}
    cap = gpu_capacity(args, parser)
    overhead = ((args.misc_mem_gib or 0) + args.framework_mem_gib) * GIB
    sh = shape
    c = MemConfig(
        **{k: sh[k] for k in ("tp", "pp", "vp", "cp", "ep", "etp", "dp", "num_gpus",
                              "chunk_layers")},
        **{k: getattr(args, k) for k in PIPELINE_SPLIT_KEYS}, zero_stage=zero,
        **zero_shards(**{k: sh[k] for k in ("dp", "cp", "tp", "pp", "etp", "ep")}),
        zbs=5e8 if args.zero_allgather_bucket_size is None else args.zero_allgather_bucket_size,
        zmlp=args.zero3_max_live_params or 1e9,
        sequence_length=s, batch_size=b, num_microbatches=m, recompute=recompute,
        recompute_modules=(tuple(dict.fromkeys(args.recompute_modules))
                           if args.recompute_modules else None),
        recompute_every=args.recompute_every or 1,
        sequence_parallel=args.sequence_parallel and sh["tp"] > 1,
        partition_activations=args.partition_activations, flash_attention=args.flash_attention,
        dropout=args.dropout, mixed_precision=mixed, high_bytes=high,
        weight_bytes=high if autocast else wbytes, act_bytes=wbytes,
        grad_bytes=args.bytes_per_grad_ele or 4, optimizer=args.optimizer,
        opt_bytes=optimizer_bytes_per_param(
            optimizer=args.optimizer, mixed_precision=mixed and not autocast, master_bytes=high),
        activation_rule="eager" if eager else "fused", autocast=autocast, framework=args.framework,
        lora=lora, weight_bits=weight_bits, expert_weight_bits=expert_bits,
        checkpoint_format=fmt if served_as_stored else None,
        kv_bytes=bits["kv_bytes"] or low, state_bytes=bits["state_bytes"] or 4,
        output_tokens=1 if args.output_tokens is None else args.output_tokens,
        sliding_window=max(windows) if windows else None, sliding_layers=sliding,
        prefill_chunk=args.prefill_chunk, mla_cache=args.mla_cache, overhead_bytes=overhead, **cap,
        offload=args.offload and not args.infer,
        offload_params=args.offload_params and not args.infer,
        offload_activations=args.offload_activations and not args.infer)
    if eager:
        c.update(torch_training_fields(args, c))
    if c["offload"]:  # the optimizer step runs on the host: its states leave the GPU
        c["host_opt_bytes"], c["opt_bytes"] = c["opt_bytes"], 0
    c["infer"] = args.infer
    return c


def cache_rules_text(spec):
    """One clause per cache rule that applies to this model's layers, for the assumptions line."""
    L, n = spec["num_layers"], {}
    for layer in spec["layers"]:
        for x in layer["attention"]:
            key = "shared" if x["kv_shared"] else x["span"]
            n[key] = n.get(key, 0) + 1
    windows = sorted({x["window"] for g in layer_groups(spec) for x in g[0]["attention"]
                      if x["span"] == "sliding" and not x["kv_shared"]})
    parts = []
    if n.get("full"):
        parts.append(f"{n['full']} of {L} full-attention layers keep every token")
    if n.get("sliding"):
        parts.append(f"{n['sliding']} sliding-window layers keep min(context, window "
                     + "/".join(map(str, windows)) + ")")
    if n.get("chunked"):
        parts.append(f"{n['chunked']} chunked-attention layers keep every token (as transformers' "
                     "cache does)")
    if n.get("shared"):
        parts.append(f"{n['shared']} layers reuse another layer's cache and hold none")
    comp = [x for g in layer_groups(spec) for x in g[0]["attention"] if x["kind"] == "dsv4" and x["compress"]]
    if comp:
        parts.append("DeepSeek-V4 compressed layers also keep one compressed entry per compress_rate tokens "
                     "(head_dim, + the indexer's key on compressed sparse layers) and the projections of the "
                     "window still open, as transformers' DeepseekV4 caches do; a plain sliding layer keeps K "
                     "and V apart (transformers' sliding layer), a compressed one its K = V once")
    if n.get("state"):
        parts.append(f"{n['state']} linear-attention layers hold no KV but a constant state per sequence "
                     "(conv window of K positions at the activation width, recurrent state at "
                     "--state-bytes-per-val, fp32 by default, as transformers' cache keeps them)")
    if any_attn(spec, lambda x: x["index_topk"]):
        parts.append("the lightning indexer caches one key per token per layer at the KV width "
                     "(DeepSeek's reference code: fp8 plus an fp32 scale per 128)")
    return "; ".join(parts)


def assumptions(c, spec):
    """The convention strings printed with (and returned in) every result."""
    out = [f"per GPU on the most-loaded rank; dp = {c['dp']}, ZeRO stage {c['zero_stage']} shards over "
           f"dp*cp = {c['zero_shard']} (experts over {c['expert_zero_shard']})",
           f"framework allowance + misc = {c['overhead_bytes'] / GIB:.2f} GiB; fragmentation not modelled"]
    if c.get("memory_field") == "memory_usable_bytes":
        out.append(f"GPU capacity {c['memory_bytes'] / GIB:.2f} GiB from hardware.py's memory_usable_bytes "
                   "(driver-reported total, e.g. nvidia-smi; torch's total_memory is ~0.5 GiB less)")
    elif c.get("memory_field") == "memory_bytes":
        out.append(f"GPU capacity {c['memory_bytes'] / GIB:.2f} GiB from hardware.py's memory_bytes "
                   "(vendor GB, decimal; this hardware.py has no memory_usable_bytes)")
    if c["infer"]:
        fmt = c.get("checkpoint_format")
        wtxt = (f"weights as the checkpoint stores them ({fmt['method']}, scales included): routed experts "
                f"at {fmt['expert_bits']:.4g} bits, other layer matrices at {fmt['linear_bits']:.4g}"
                if fmt else f"weights: layer matrices at {c['weight_bits']:g} bits")
        out.append(f"{wtxt}, embeddings/head/norms at "
                   f"{8 * c['weight_bytes']} bits (--weight-bits overrides); KV cache at {c['kv_bytes']:g} B/element"
                   + ("; MLA cache = " + c["mla_cache"]
                      if any_attn(spec, lambda x: x["kind"] == "mla") else ""))
        if fmt and fmt.get("kv_cache_format"):
            out.append(f"the checkpoint's KV cache format is {fmt['kv_cache_format']} (kv_cache_quant_algo), "
                       f"counted here at {c['kv_bytes']:g} B/element"
                       + ("" if c["kv_bytes"] == 1 else ": TensorRT-LLM follows it by default, pass "
                          "--kv-cache-bytes-per-val 1 for that"))
        out.append("KV cache per layer: " + cache_rules_text(spec))
        out.append("activations: one prefill forward's working set (flash attention "
                   + ("on" if c["flash_attention"] else "off") + ")")
        return out
    opt_b = c["host_opt_bytes"] if c.get("offload") else c["opt_bytes"]
    opt = (f"{c['optimizer']}: {opt_b} B/param incl. fp32 master"
           if c["mixed_precision"] and not c["autocast"]
           else f"{c['optimizer']}: {opt_b} B/param, no master copy")
    if c.get("offload"):
        opt += (f", on the host with {OFFLOAD_GRAD_BYTES} B of 16-bit gradients (--offload, ZeRO-Offload: "
                "none of it on the GPU)")
    if c["lora"] and c["activation_rule"] == "eager":
        out += peft_assumptions(c)
    elif c["autocast"]:
        out.append(f"mixed precision by torch.autocast: fp32 weights {c['weight_bytes']} B (the master "
                   f"copy itself) and a {c['act_bytes']} B copy of each linear weight while its forward "
                   f"is saved, grads {c['grad_bytes']} B, {opt}")
    elif not c["lora"]:
        out.append(f"mixed precision {'on' if c['mixed_precision'] else 'off'}: weights "
                   f"{c['weight_bytes']} B, grads {c['grad_bytes']} B, {opt}")
    if c["activation_rule"] == "eager":
        out.append(attention_text(c, spec))
    if c["activation_rule"] == "eager" and not c["lora"]:
        out.append("activations (--framework pytorch): what autograd saves in transformers' eager "
                   "modules (RMSNorm fp32 upcasts, a cast input per linear under autocast, SDPA's "
                   "q/k/v/output/log-sum-exp, the MLP's four tensors, the loss's fp32 log-softmax: 12 B "
                   "per logit at the backward's start); gradients zeroed with set_to_none, so the peak is "
                   "the backward's start or its end; no allocator fragmentation")
    out.append(f"activations ({'settings' if c['activation_rule'] == 'eager' else 'Korthikanti 2022'}): "
               f"{recompute_text(c, brief=True)}, sequence parallel "
               f"{'on' if c['sequence_parallel'] else 'off'}, flash attention "
               f"{'on' if c['flash_attention'] else 'off'}, dropout {'on' if c['dropout'] else 'off'}, "
               f"{c['act_bytes']} B/element, "
               + (f"{c['num_microbatches']} micro-batches" if c["num_microbatches"] else
                  "micro-batches = pp (no --global-batch-size)")
               + (f", interleaved v={c['vp']}" if c["vp"] > 1 else ""))
    split = [(k, c[k]) for k in ("decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers",
                                 "account_for_embedding_in_pipeline_split",
                                 "account_for_loss_in_pipeline_split") if c[k]]
    if split:
        out.append("pipeline layers per stage " + "/".join(str(sum(r)) for r in c["chunk_layers"])
                   + " (Megatron-LM " + ", ".join(f"--{k.replace('_', '-')}" + (
                       f" {v}" if v is not True else "") for k, v in split) + ")")
    if c["lora"] and c["activation_rule"] != "eager":
        lo = c["lora"]
        out.append(f"LoRA r={lo['rank']} on {','.join(lo['targets'])} (routed experts not adapted); "
                   f"frozen base layers at {lo['base_bits']:.3f} bits; adapters and their grads at "
                   f"{lo['adapter_bytes']} B, {c['optimizer']} states fp32, no master copy; "
                   "activations as for full training")
    return out


def mode_text(args, c):
    """The report's first line after the title: the regime and what -ca and -b mean here."""
    b = c["batch_size"]
    if c["infer"]:
        return (f"Mode: inference (--infer): a batch of -b {b} sequences, context "
                f"{c['sequence_length'] + c['output_tokens']:,} tokens (-s {c['sequence_length']} prompt + "
                f"-o {c['output_tokens']} generated); weights, KV cache and one forward's activations")
    how = ("-ca given" if args.checkpoint_activations else
           f"--recompute {args.recompute}" if args.recompute else "the default")
    return (f"Mode: training: activation recompute {c['recompute']} ({how}; in this script -ca / "
            f"--checkpoint-activations turns full recompute ON, the cookbook's meaning); -b {b} is "
            "the micro-batch per GPU")


def training_memory_offloaded(spec, c, b):
    """training_memory with --offload-params / --offload-activations applied to every stage
    (train/memory.offloaded_stages): (heaviest stage, stages), as calc_training_time.py counts them."""
    worst, stages = training_memory(spec, c, b)
    if not (c.get("offload_params") or c.get("offload_activations")):
        return worst, stages
    stages = offloaded_stages(spec, c, stages)
    return max(stages, key=lambda x: x["total_bytes"]), stages


def read_context(s, o):
    """Positions the model attends over to produce the last of o generated tokens after an s-token
    prompt: s + o - 1 (the last token is produced, never read), so -s 131072 with the default -o 1
    is a 128k context, not 128k + 1. The KV cache is sized at s + o, one token to spare."""
    return s + max(o, 1) - 1


def search_command(parser, args, c, b, n):
    """The calc_training_time.py command that searches every layout of n GPUs for this model."""
    words = [f"-s {c['sequence_length']} --num-gpus {n} --global-batch-size {args.global_batch_size or n * b}"]
    last = [f"--gpu-memory-gib {number_text(args.gpu_memory_gib)}"] if args.gpu_memory_gib is not None else []
    return script_command("calc_training_time.py", parser, args, words=words, last=last + ["--search"])


def main(argv=None):
    parser = build_parser()
    args = parse_tool_args(parser, argv)
    with calc_errors(parser):  # a CalcError from below the tools: one line, exit 2
        return memory_answer(args, parser)


def memory_answer(args, parser):
    """Memory per GPU for the parsed flags (training or --infer), its fit and ways out: resolve,
    compute, print; returns the result dict."""
    args, said = framework_default(args)
    spec, c, notes, model_args = resolve(args, parser)
    for note in ([said] if said else []) + notes:
        print(f"note: {note}", file=sys.stderr)
    pb = param_breakdown(spec)
    b, s, o = c["batch_size"], c["sequence_length"], c["output_tokens"]
    fit = None
    if args.infer:
        ctx = s + o
        worst, stages = inference_memory(spec, c, b, ctx)
        kinds = kv_cache_by_kind(spec, c, worst["stage"], batch=b, context=ctx)
        res_extra = {"kv_cache_bytes_per_token_per_layer": max(k["kv_bytes_per_token"] for k in kinds),
                     "kv_cache_bytes_per_token": sum(k["layers"] * k["kv_bytes_per_token"] for k in kinds),
                     "indexer_cache_bytes_per_token": sum(k["layers"] * k["indexer_bytes_per_token"]
                                                          for k in kinds),
                     "kv_cache_layer_kinds": kinds, "context_tokens": ctx}
        alt_layers = all_attention_layers(spec)
        if alt_layers is not None:  # the same weights and activations; only the cache differs
            _, alt_stages = inference_memory(dict(spec, layers=alt_layers), c, b, ctx)
            alt = alt_stages[worst["stage"]]
            alt_kv = alt["kv_cache_bytes"] + alt["indexer_cache_bytes"]
            cache_now = worst["kv_cache_bytes"] + worst["indexer_cache_bytes"] + worst["state_cache_bytes"]
            res_extra["all_attention"] = {
                "attention": attention_kind(next(x for layer in alt_layers for x in layer["attention"]
                                                 if x["span"] == "full")),
                "linear_layers": sum(any(x["span"] == "state" for x in layer["attention"]) for layer in spec["layers"]),
                "stage": worst["stage"], "kv_cache_bytes": alt_kv,
                "total_bytes": worst["total_bytes"] - cache_now + alt_kv, "saving_bytes": alt_kv - cache_now}
        if c["memory_bytes"] is not None:
            lim = c["memory_bytes"]
            fit = {"max_batch_size": largest_that_fits(lambda x: inference_memory(spec, c, x, ctx)[0]["total_bytes"], lim),
                   "max_context_tokens": largest_that_fits(lambda x: inference_memory(spec, c, b, x)[0]["total_bytes"], lim)}
            trained = spec.get("trained_context")
            if trained and fit["max_context_tokens"] > trained:  # memory holds more than the model reads
                fit["max_context_tokens_memory"] = fit["max_context_tokens"]
                fit["max_context_tokens"] = trained
                fit["context_limited_by"] = "the model's trained context"
        if spec.get("trained_context") and read_context(s, o) > spec["trained_context"]:
            spec["warnings"].append(f"context {read_context(s, o):,} tokens is past the model's trained context "
                                    f"({spec['trained_context']:,}: max_position_embeddings or its rope scaling)")
    else:
        worst, stages = training_memory_offloaded(spec, c, b)
        res_extra = {"kv_cache_bytes": 0, "indexer_cache_bytes": 0, "state_cache_bytes": 0,
                     "offload": offload_host_memory(spec, c, b) if c["offload"] else None}
        if c["memory_bytes"] is not None:
            fit = {"max_micro_batch_size": largest_that_fits(
                lambda x: training_memory_offloaded(spec, c, x)[0]["total_bytes"], c["memory_bytes"], 1 << 16)}
            if worst["total_bytes"] > c["memory_bytes"]:
                ways = training_ways_out(spec, c, b)
                if c["offload_params"] or c["offload_activations"]:  # its rows are costed without them (and
                    ways["without_layer_offload"] = True  # -z 3 with --offload-params is refused): say so
                ways["search_command"] = search_command(parser, model_args, c, b,
                                                        ways["fewest_gpus"] or c["num_gpus"])
                fit["ways_out"] = ways
    res = {"mode": "inference" if args.infer else "training", "mode_text": mode_text(args, c),
           "warnings": spec["warnings"], "model": spec_summary(spec),
           "total_params": pb["total_params"], "active_params": pb["active_params"],
           "parallelism": {k: c[k] for k in ("num_gpus", "tp", "pp", "vp", "cp", "ep", "etp", "dp",
                                             "zero_stage", "zero_shard", "expert_zero_shard")},
           "parallelism_text": f"tp {c['tp']}, pp {c['pp']}, dp {c['dp']}, cp {c['cp']}, ep {c['ep']}, "
                               f"ZeRO {c['zero_stage']}",
           "config": {k: v for k, v in c.items() if k not in ("lora",)}, "lora": c["lora"],
           **{k: v for k, v in worst.items()}, **res_extra,
           "overhead_bytes": c["overhead_bytes"], "stages": stages}
    if fit is not None:
        lim = c["memory_bytes"]
        cap = 1 << 24 if args.infer else 1 << 16  # where largest_that_fits stops searching
        fit = {"gpu": c["gpu"], "gpu_default": c["gpu_default"], "memory_bytes": lim, "fits": res["total_bytes"] <= lim,
               "headroom_bytes": lim - res["total_bytes"], **fit,
               "capped": sorted(k for k, v in fit.items() if v == cap)}  # true value is at least cap
    res["fit"] = fit
    if getattr(args, "pipeline_split_applied", None):  # the split no flag stated (check_pipeline_split)
        res["pipeline_split_applied"] = args.pipeline_split_applied
    res["assumptions"] = assumptions(c, spec)
    if c["activation_rule"] == "eager" and not args.infer:
        held = res["stage_layers"] - res["eager_rule_layers"]
        res["assumptions"].append(
            f"peak at the {res['peak_phase']}"
            + (f"; {held} of {res['stage_layers']} layers are kinds the eager rule was not derived for "
               "(sliding/chunked/sparse attention, MLA, linear mixers, MoE routers other than "
               "Mixtral's and Qwen's, LayerNorm, selective recompute): counted with the fused-kernel rule" if held else "")
            + ("; routed experts run transformers' grouped_mm, which autocast does not cast: fp32 weights, "
               "fp32 matmuls and fp32 saved tensors, and no 16-bit weight copies"
               if c.get("autocast") and spec.get("moe") and res["eager_rule_layers"] else ""))
    print_warnings(spec["warnings"], as_json=args.json or args.brief)  # the context's too
    if args.brief:  # the verdict too (exit 3 when it does not fit)
        print_brief(f"{brief_number(res['total_bytes'] / GIB)} GiB per GPU", res["fit"])
    else:
        print_result(res, as_json=args.json, report=format_report)
    return res


if __name__ == "__main__":
    run_tool(main)
