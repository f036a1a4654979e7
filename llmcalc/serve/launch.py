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
