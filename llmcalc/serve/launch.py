"""The command that starts one replica of a capacity plan's winner on its serving stack: each
stack's record (stacks.SERVING_STACKS) names one of these functions. Each takes a LaunchPlan and
returns the command's pieces (joined with line continuations by launch_text); a stack with no
server command says so in lines starting '#', with what to run instead.

Flag spellings, as each engine's own documentation gives them:
  vLLM: `vllm serve` (docs.vllm.ai, serving/engine_args: --tensor-parallel-size,
    --data-parallel-size, --enable-expert-parallel, --gpu-memory-utilization, --max-num-seqs,
    --max-num-batched-tokens, --kv-cache-dtype, --[no-]enable-prefix-caching, --speculative-config).
  SGLang: `python -m sglang.launch_server` (docs.sglang.ai, server arguments: --model-path, --tp,
    --dp, --enable-dp-attention, --ep-size, --mem-fraction-static, --chunked-prefill-size,
    --max-running-requests, --kv-cache-dtype, --disable-radix-cache, --speculative-*).
  TensorRT-LLM: `trtllm-serve MODEL` (nvidia.github.io/TensorRT-LLM, commands/trtllm-serve:
    --backend pytorch|tensorrt, the PyTorch backend the default since 1.0; --tp_size, --ep_size,
    --kv_cache_free_gpu_memory_fraction, --max_batch_size, --max_num_tokens,
    --extra_llm_api_options FILE.yaml).
  Triton's tensorrtllm_backend: an engine from `trtllm-build --checkpoint_dir --output_dir
    --max_batch_size --max_num_tokens`, the model repository's config.pbtxt filled by
    tools/fill_template.py (kv_cache_free_gpu_mem_fraction, triton_max_batch_size,
    batching_strategy:inflight_fused_batching), then `python3 scripts/launch_triton_server.py
    --world_size N --model_repo DIR` (tensorrtllm_backend README).
  FasterTransformer: no server; its C++ example runs `mpirun -n <tp x pp>
    ./bin/multi_gpu_gpt_example` with tensor_para_size and pipeline_para_size in gpt_config.ini
    (docs/gpt_guide.md, "Run with tensor parallelism"); behind Triton, fastertransformer_backend's
    config.pbtxt takes the same two parameters and `tritonserver --model-repository DIR` serves it
    (fastertransformer_backend docs/gpt_guide.md).
"""

from ..records import Record


class LaunchPlan(Record):
    """What a launch command carries: the winner's layout, its pool and its scheduler caps."""

    __slots__ = ()

    FIELDS = {
        "model": "the model's path or hub id as given (--hf_model_name_or_path), or MODEL",
        "tp": "tensor-parallel size of one attention group", "pp": "pipeline stages",
        "dp": "data-parallel attention groups in the replica", "ep": "expert-parallel size",
        "replicas": "replicas behind the load balancer",
        "kv_bits": "KV-cache bits (8: an fp8 cache)",
        "quantization": "the weights' quantization the plan sized at, to apply when serving "
                        "(QUANTIZATIONS' key: fp8, int8, w8a16, int4, w4a8, fp4), or None: "
                        "16-bit weights, or a checkpoint stored quantized (the engine reads its "
                        "quantization_config)",
        "memory_utilization": "the stack's memory share (of the GPU, or of what the weights leave)",
        "max_num_seqs": "running-request cap per data-parallel engine; None: the stack's own",
        "max_num_tokens": "tokens per engine step; None: the stack's own",
        "prefix_caching": "whether requests share cached prefixes",
        "speculative": "the speculative-decoding setup ({k, method, ...}) or None",
    }
    REQUIRED = tuple(FIELDS)


# The weight quantizations a plan sizes at, by (weight bits, activation bits), and how each engine
# applies one to a 16-bit checkpoint:
#   vLLM: `--quantization fp8` quantizes the weights to FP8 on load (docs.vllm.ai, features/
#     quantization/fp8: "dynamic quantization ... no calibration data"); INT8 and 4-bit weights
#     come from a checkpoint quantized first (llm-compressor W8A8/W4A16, AWQ, GPTQ; ModelOpt
#     NVFP4), whose quantization_config vLLM reads.
#   SGLang: `--quantization fp8` the same way (server arguments: online FP8); w8a8_int8, awq,
#     gptq and modelopt_fp4 need such a checkpoint.
#   TensorRT-LLM: the LLM API's quant_config (quant_algo FP8, W8A8_SQ_PER_CHANNEL, W8A16,
#     W4A16_AWQ, W4A8_AWQ, NVFP4; kv_cache_quant_algo FP8) in --extra_llm_api_options; Triton's
#     backend quantizes the checkpoint before trtllm-build (examples/quantization/quantize.py
#     --qformat fp8, int8_sq, int8_wo, int4_awq, w4a8_awq, nvfp4).
# key: ((weight bits, activation bits), TensorRT-LLM's quant_algo, quantize.py's qformat)
QUANTIZATIONS = {
    "fp8": ((8, 8), "FP8", "fp8"), "int8": ((8, 16), "W8A16", "int8_wo"),
    "w8a8-int8": ((8, 8), "W8A8_SQ_PER_CHANNEL", "int8_sq"),
    "int4": ((4, 16), "W4A16_AWQ", "int4_awq"),
    "w4a8": ((4, 8), "W4A8_AWQ", "w4a8_awq"), "fp4": ((4, 4), "NVFP4", "nvfp4"),
}


def weight_quantization(*, w_bits, a_bits, fp8_activations=True):
    """QUANTIZATIONS' key for the weight and activation bits a plan sized at, or None for 16-bit
    weights (fp8_activations: 8-bit matmul inputs are FP8, as on Hopper and later; else INT8)."""
    if w_bits >= 16:
        return None
    if w_bits == 8 and a_bits == 8:
        return "fp8" if fp8_activations else "w8a8-int8"
    for key, ((w, a), _, _) in QUANTIZATIONS.items():
        if (w, a) == (round(w_bits), a_bits) and key not in ("fp8", "w8a8-int8"):
            return key
    return "int4" if w_bits < 8 else "int8"


def _prequantized(engine, q, how):
    """The comment line for a quantization the engine does not apply on load."""
    return (f"# {q} weights: {engine} serves a checkpoint quantized first ({how}); point the "
            "command at that checkpoint")


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
    if p.quantization == "fp8":
        cmd.append("--quantization fp8")
    if p.kv_bits == 8:
        cmd.append("--kv-cache-dtype fp8")
    cmd.append("--enable-prefix-caching" if p.prefix_caching else "--no-enable-prefix-caching")
    sp = p.speculative
    if sp:
        method = {"mtp": "deepseek_mtp", "eagle": "eagle3", "ngram": "ngram",
                  "draft": "draft_model"}[sp["method"]]
        cmd.append(f"--speculative-config '{{\"method\": \"{method}\", \"num_speculative_tokens\": "
                   f"{sp['k']}}}'")
    if p.quantization not in (None, "fp8"):
        cmd.insert(0, _prequantized("vLLM", p.quantization, "llm-compressor, AWQ, GPTQ or "
                                    "ModelOpt; vLLM reads its quantization_config"))
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
    if p.quantization == "fp8":
        cmd.append("--quantization fp8")
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
    if p.quantization not in (None, "fp8"):
        cmd.insert(0, _prequantized("SGLang", p.quantization, "w8a8_int8, AWQ, GPTQ or ModelOpt "
                                    "FP4; SGLang reads its quantization_config"))
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
    quant = ([f"quant_config: {{quant_algo: {QUANTIZATIONS[p.quantization][1]}"
              + (", kv_cache_quant_algo: FP8}" if p.kv_bits == 8 else "}")]
             if p.quantization else
             ["kv_cache_config: {dtype: fp8}"] if p.kv_bits == 8 else [])
    if p.dp > 1 or sp or quant:
        cmd.append("--extra_llm_api_options extra.yaml  # " + "; ".join(
            (["enable_attention_dp: true"] if p.dp > 1 else []) + quant
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
            "(its v0.5-v0.7 release)"
            + (f", the checkpoint quantized first (examples/quantization/quantize.py --qformat "
               f"{QUANTIZATIONS[p.quantization][2]})" if p.quantization else "")
            + "; a current TensorRT-LLM runs with XQA: --serving-stack tensorrt-llm"]


def trtllm_triton_command(p):
    """Triton's tensorrtllm_backend: build the engine, fill the model repository, launch Triton."""
    n = p.tp * p.dp
    quant = ""
    if p.quantization or p.kv_bits == 8:  # ModelOpt quantizes the checkpoint the build reads
        quant = (f"python3 examples/quantization/quantize.py --model_dir {p.model} --tp_size {n} "
                 f"--qformat {QUANTIZATIONS[p.quantization][2] if p.quantization else 'full_prec'}"
                 + (" --kv_cache_dtype fp8" if p.kv_bits == 8 else "")
                 + f" --output_dir ckpt_tp{n}\n")
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
    return [quant + " \\\n    ".join(build) + "\n" + fill + "\n"
            + f"python3 scripts/launch_triton_server.py --world_size {n} --model_repo "
              "triton_model_repo"]


def fastertransformer_command(p):
    """FasterTransformer is a library, no server: nothing to launch (its C++ example runs a static
    batch under MPI, named in the comment)."""
    return ["# FasterTransformer has no server, so there is no command to launch; its C++ example "
            f"runs a static batch (tensor_para_size={p.tp}, pipeline_para_size={p.pp}"
            + (", int8_mode=1" if p.quantization in ("int8", "w8a8-int8") else "")
            + f" in gpt_config.ini; mpirun -n {p.tp * p.pp} ./bin/multi_gpu_gpt_example); behind "
            "a server: --serving-stack fastertransformer-triton"]


def fastertransformer_triton_command(p):
    """FasterTransformer behind Triton (fastertransformer_backend): the layout in config.pbtxt."""
    if p.quantization not in (None, "int8", "w8a8-int8"):
        return [f"# fastertransformer_backend serves 16-bit weights (int8_mode 1 for INT8): not "
                f"the {p.quantization} weights this plan sized at; size it at --precision bf16 "
                "or int8, or pick --serving-stack tensorrt-llm"]
    return [f"# fastertransformer_backend: config.pbtxt parameters tensor_para_size {p.tp}, "
            f"pipeline_para_size {p.pp}"
            + (", int8_mode 1" if p.quantization in ("int8", "w8a8-int8") else "") + "\n"
            "tritonserver --model-repository=triton-model-store"]


def no_server_command(p):
    """The kernels-only model is no engine: nothing launches it."""
    return ["# the kernels stack is the kernels-only model (gpt-fast-like CUDA-graph decode), no "
            f"serving engine: there is no command to launch; pick --serving-stack vllm, sglang or "
            f"tensorrt-llm for one (layout: tp {p.tp}" + (f", dp {p.dp}" if p.dp > 1 else "")
            + (f", ep {p.ep}" if p.ep > 1 else "") + ")"]


def hf_generate_command(p):
    """transformers' generate() in eager PyTorch is called from a script, not a server."""
    quant = {"fp8": ", quantization_config=FineGrainedFP8Config()",
             "int8": ", quantization_config=BitsAndBytesConfig(load_in_8bit=True)",
             "int4": ", quantization_config=BitsAndBytesConfig(load_in_4bit=True)"}.get(
                 p.quantization, "")
    return ["# hf-eager is transformers' generate() in eager PyTorch: no server command; call "
            f"AutoModelForCausalLM.from_pretrained({p.model!r}{quant}).generate() from your own "
            "script"
            + (f" (tp {p.tp}: tp_plan='auto', under torchrun --nproc-per-node "
               f"{p.tp})" if p.tp > 1 else "")]
