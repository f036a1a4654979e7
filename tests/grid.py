"""The regression grid: a fixed list of commands over every script, and an in-process runner.

COMMANDS is every README.md example that runs a script locally, every EleutherAI cookbook
command of tests/test_cookbook_readme.py, then a few hundred flag and config combinations over
every script: default runs, --help, --json, fixture configs of every family, the main options of
each tool, and bad input that exits 2. tools/record_grid.py records what each command prints in
tests/fixtures/grid_outputs.json; tests/test_grid.py checks the scripts still print it, byte for
byte. Standard library only, so the grid can run against any copy of the scripts.
"""
import ast
import contextlib
import hashlib
import importlib.util
import io
import os
import re
import shlex
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PARAMS, FLOPS, MEM = "calc_transformer_params.py", "calc_transformer_flops.py", "calc_transformer_mem.py"
TRAIN, INFER, COMM, HW = ("calc_training_time.py", "calc_inference_latency.py", "calc_comm.py",
                          "hardware.py")
SCRIPTS = (PARAMS, FLOPS, MEM, TRAIN, INFER, COMM, HW)


def cfg(name):
    """--hf_model_name_or_path with a fixture config's path, relative to the repository root."""
    return f"--hf_model_name_or_path tests/fixtures/configs/{name}.json"


# ---------------------------------------------------------------------------------------------
# The commands


def _split(line, prefix):
    """(script, argv) of a `python3 script.py args` line."""
    argv = shlex.split(line)
    if argv[0] != prefix or argv[1] not in SCRIPTS:
        raise ValueError(f"not a `{prefix} script` command: {line}")
    return argv[1], argv[2:]


def _local(argv):
    """Whether a command reads no hub id (a model that is not a path in the repository)."""
    return all(os.path.exists(os.path.join(REPO, argv[i + 1]))
               for i, a in enumerate(argv[:-1]) if a == "--hf_model_name_or_path")


# The user documentation whose example commands are run and quoted (README.md, then the tools'
# pages under docs/; other pages of docs/ are their authors' to test).
DOC_FILES = ("README.md", "docs/flags.md", "docs/params.md", "docs/flops.md", "docs/memory.md",
             "docs/training-time.md", "docs/latency.md", "docs/comm.md", "docs/hardware.md")


def doc_text():
    """The text of DOC_FILES, one after the other."""
    parts = []
    for name in DOC_FILES:
        with open(os.path.join(REPO, name), encoding="utf-8") as fh:
            parts.append(fh.read())
    return "\n".join(parts)


def readme_commands():
    """The documentation's example commands (DOC_FILES) that run a script locally, parsed as
    tests/test_readme_examples.py does; the ones that read a hub id need the network: left out."""
    text = doc_text()
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" # ")[0].strip()
            if line.startswith("python3 ") and " -m " not in line and line.split()[1] in SCRIPTS:
                out.append(_split(line, "python3"))
    return [(script, argv) for script, argv in out if _local(argv)]


def cookbook_commands():
    """README_COMMANDS of tests/test_cookbook_readme.py (read, not imported: it needs pytest)."""
    with open(os.path.join(REPO, "tests", "test_cookbook_readme.py"), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["README_COMMANDS"]:
            return [_split(line, "python") for line in ast.literal_eval(node.value)]
    raise LookupError("README_COMMANDS not found in tests/test_cookbook_readme.py")


# Every fixture config (params reads them all), and a sample over the families: dense, MoE, MLA
# and DSA, sliding-window and chunked, hybrid linear-attention / Mamba / conv, multimodal, quantized.
ALL_CONFIGS = (
    "bloom-560m c4ai-command-r7b-12-2024 deepseek-v2-lite deepseek-v3.2 deepseek-v3 "
    "deepseek-v4-flash ernie-4.5-21b-a3b-pt exaone-4.0-32b falcon-7b falcon_h1-class-defaults "
    "gemma-2-9b gemma-2b gemma-3-1b-it gemma-3-27b-it gemma-3-4b-it gemma-4-26b-a4b "
    "gemma-4-e2b-it-text gemma-4-e2b-it gemma-7b glm-4.5-air glm-4.5 glm-5 gpt-neox-20b "
    "gpt-oss-120b gpt-oss-20b gpt2 granite-3.1-3b-a800m-instruct granitemoehybrid-class-defaults "
    "hy_v3-class-defaults jamba-class-defaults jamba-variant kimi-k2.5 "
    "kimi_linear-checkpoint-layout kimi_linear-class-defaults kimi_linear-variant "
    "lfm3-class-defaults lfm3-variant llama-2-7b llama-3-8b llama-3.1-8b "
    "llama-4-maverick-17b-128e-text llama-4-scout-17b-16e-text llama-4-scout-17b-16e "
    "longcat_flash-class-defaults minimax-m2.5 mistral-7b mistral-small-3.1-24b-instruct-2503 "
    "mistral3-mistral4-class-defaults mistral_large4-class-defaults "
    "mistral_large4-kv-sharing-variant mixtral-8x7b nemotron-3-nano-30b-a3b olmo-2-1124-7b "
    "olmo-3-7b olmo_hybrid-class-defaults olmo_hybrid-variant opt-125m opt-350m phi-3-mini-4k "
    "phi-3.5-moe-instruct pythia-1b qwen1.5-moe-a2.7b qwen2.5-7b qwen3-0.6b qwen3-235b-a22b "
    "qwen3-30b-a3b-tf5 qwen3-30b-a3b qwen3-8b qwen3-next-80b-a3b-thinking qwen3.5-27b-text "
    "qwen3.5-27b qwen3.5-35b-a3b-text qwen3.5-35b-a3b seed-oss-36b-instruct smollm3-3b "
    "starcoder2-7b step-3.7-flash-like-legacy step-3.7-flash-like step3p7-class-defaults").split()
SAMPLE = (  # the first 20 for the tools that split heads over tp 4
    "gpt2 llama-3-8b qwen3-8b gemma-2-9b gemma-3-27b-it mistral-7b phi-3-mini-4k mixtral-8x7b "
    "qwen3-30b-a3b gpt-oss-20b deepseek-v2-lite deepseek-v3 deepseek-v3.2 llama-4-scout-17b-16e "
    "qwen3-next-80b-a3b-thinking qwen3.5-35b-a3b jamba-variant nemotron-3-nano-30b-a3b lfm3-class-defaults "
    "gemma-4-e2b-it kimi_linear-variant lfm3-variant olmo_hybrid-variant falcon_h1-class-defaults "
    "longcat_flash-class-defaults").split()
# Llama-3-8B and a DeepSeek-MoE-style model from flags, for the option sweeps.
LLAMA = "-l 32 -hs 4096 -a 32 --num-kv-heads 8 --ffn-hidden-size 14336 --swiglu --norm rmsnorm --no-bias -v 128256"
MOE = ("-l 24 -hs 2048 -a 16 --moe -e 64 -t 6 --moe-ffn-hidden-size 1408 --num-shared-experts 2 --swiglu "
       "--norm rmsnorm --no-bias -v 102400")


def _runs(script, lines, every=0):
    """(script, argv) of each command line, then the --json run of every every-th of them (the
    JSON gives every number at full precision, where the reports round)."""
    runs = [(script, shlex.split(line)) for line in lines]
    return runs + [(s, a + ["--json"]) for s, a in runs[::every]] if every else runs


def _params():
    flags = ["", "-l 24 -hs 1024 -a 16 --position-embedding learned -s 1024",
             f"{LLAMA} --tied-embeddings", f"{LLAMA} --qk-norm head", f"{LLAMA} --qk-norm full",
             f"{LLAMA} --sliding-window 4096", f"{LLAMA} --head-dim 256", f"{LLAMA} -kv 0.25",
             "-l 32 -hs 4544 -a 71 --num-kv-heads 1 --parallel-attention --no-bias -v 65024",
             "-l 24 -hs 1024 -a 16 --embedding-norm --position-embedding alibi",
             "-l 12 -hs 768 --no-final-norm --norms-per-layer 4 -ff 8",
             "-l 12 -hs 768 --no-qkv-bias --attn-out-bias --no-mlp-bias",
             MOE, f"{MOE} --num-dense-layers 1 --router-bias",
             f"{MOE} --shared-expert-gate --shared-expert-ffn-hidden-size 5632",
             "-l 32 -hs 4096 --moe -e 8 -t 2 -ei 2 --swiglu",
             "-l 27 -hs 2048 -a 16 --kv-lora-rank 512 --qk-nope-head-dim 128 --qk-rope-head-dim 64 "
             "--v-head-dim 128",
             "-l 61 -hs 7168 -a 128 --q-lora-rank 1536 --kv-lora-rank 512 --qk-nope-head-dim 128 "
             "--qk-rope-head-dim 64 --v-head-dim 128"]
    configs = [cfg(c) for c in ALL_CONFIGS] + [
        f"{cfg('llama-3-8b')} -l 8", f"{cfg('qwen3-8b')} --tied-embeddings", f"{cfg('deepseek-v3')} --router-bias",
        f"{cfg('gemma-2-9b')} --sliding-window 0", f"{cfg('mixtral-8x7b')} -e 16 -t 4", f"{cfg('gpt2')} -v 50304"]
    return _runs(PARAMS, flags, 2) + _runs(PARAMS, configs, 4)


def _flops():
    train = "-s 4096 -b 1024 --tokens 1e12 --num-gpus 512 --gpu h100"
    infer = "-i --prompt-tokens 4096 --output-tokens 512"
    return _runs(FLOPS, [
        "", LLAMA, f"{LLAMA} --recompute none", f"{LLAMA} -ca", f"{LLAMA} --recompute full",
        f"{LLAMA} --attention-flops causal -s 8192", f"{LLAMA} {infer}", f"{LLAMA} {infer} --decode-context 32768",
        f"{LLAMA} {train} --hfu 0.5", f"{LLAMA} {train} --mfu 0.35 --cost-per-gpu-hour 2.5",
        f"{LLAMA} {train} --dtype fp8", f"{LLAMA} --peak-tflops 400 --num-gpus 8",
        f"{LLAMA} --gpu a100-80gb --dtype fp16 --num-gpus 64",
        "-l 96 -hs 12288 --tokens 300e9 --num-gpus 1024 --peak-tflops 312 --mfu 0.45 --cost-per-gpu-hour 2",
        MOE, f"{MOE} {infer}", f"{MOE} --attention-flops causal --sliding-window 1024",
        *[cfg(c) for c in SAMPLE],
        *[f"{cfg(c)} {extra}" for c in ("llama-3-8b", "deepseek-v3.2", "gemma-3-27b-it", "gpt-oss-120b",
                                        "qwen3.5-35b-a3b")
          for extra in ("--attention-flops causal -s 32768", f"{infer} {train}")],
    ], 2)


def _mem():
    job = "--num-gpus 8 -tp 2 -b 2 -s 4096 --gpu h100"
    return _runs(MEM, [
        "", "--gpu b200", f"{LLAMA} -z 0", f"{LLAMA} {job} -z 2", f"{LLAMA} {job} -z 3",
        f"{LLAMA} {job} --fsdp full_shard", f"{LLAMA} {job} --fsdp shard_grad_op",
        f"{LLAMA} {job} --recompute selective -sp", f"{LLAMA} {job} -ca -pa",
        f"{LLAMA} --num-gpus 32 -tp 4 -pp 4 -vp 2 -gbs 64",
        f"{LLAMA} --num-gpus 16 -pp 2 --account-for-embedding-in-pipeline-split "
        "--account-for-loss-in-pipeline-split -gbs 32",
        f"{LLAMA} --num-gpus 16 -tp 4 -cp 4 -s 131072",
        f"{LLAMA} {job} --framework pytorch", f"{LLAMA} {job} --framework pytorch --recompute selective",
        f"{LLAMA} {job} --optimizer adam8bit", f"{LLAMA} {job} --optimizer adafactor",
        f"{LLAMA} --finetune lora --gpu a100-80gb", f"{LLAMA} --finetune lora --lora-rank 64 --lora-targets q,v",
        f"{LLAMA} --finetune qlora --gpu rtx-4090 --adapter-bytes-per-val 2",
        f"{LLAMA} --finetune qlora --weight-bits 4",
        f"{LLAMA} --disable-mixed-precision", f"{LLAMA} --low-prec-bytes-per-val 1 --bytes-per-grad-ele 2",
        f"{LLAMA} --no-flash-attention --dropout -s 4096",
        f"{LLAMA} --gpu-memory-gib 24 --misc-mem-gib 2 --framework-mem-gib 0.5",
        f"{LLAMA} --infer -s 8192 -o 1024 -b 16",
        f"{LLAMA} --infer -b 32 --kv-cache-bytes-per-val 1 --weight-bits 8",
        f"{LLAMA} --infer -s 32768 --prefill-chunk 2048",
        f"{MOE} --num-gpus 16 -ep 8 -etp 1 -z 1",
        f"{MOE} --infer --mla-cache expanded --kv-lora-rank 512 --qk-nope-head-dim 128 --qk-rope-head-dim 64 "
        "--v-head-dim 128",
        *[f"{cfg(c)} {job}" for c in SAMPLE],
        *[f"{cfg(c)} --infer -s 8192 -o 512 -b 8 --gpu h200" for c in SAMPLE[::2]],
        f"{cfg('deepseek-v3')} --infer --mla-cache expanded",
        f"{cfg('qwen3.5-35b-a3b')} --infer -s 65536 --state-bytes-per-val 2",
        f"{cfg('qwen3-0.6b')} --framework pytorch -b 4 --gpu h100",
        f"{cfg('mixtral-8x7b')} --framework pytorch -b 1 -s 1024",
        f"{cfg('gpt-oss-20b')} --infer --weight-bits 4.25",
        f"{cfg('llama-3-8b')} --finetune qlora --lora-targets all-linear --gpu l4",
    ], 2)


def _train():
    job = "--gpu h100 --num-gpus 32 -tp 4 --global-batch-size 256 -s 4096"
    small = f"{LLAMA} --gpu h100 --num-gpus 8 --global-batch-size 64"
    search = "--gpu h200 --num-gpus 32 --global-batch-size 128 --search --top 2"
    return _runs(TRAIN, [
        "", "--gpu a100-80gb", small, f"{small} -tp 2 -b 2", f"{small} -tp 8 --sequence-parallel",
        f"{small} -pp 2 -vp 2", f"{small} -cp 2 -s 16384", f"{small} -z 3", f"{small} -z 2 --offload",
        f"{small} --recompute full", f"{small} --recompute none", f"{small} --dtype fp8", f"{small} --dtype fp16",
        f"{small} --framework megatron-2021", f"{small} --framework megatron-2022",
        f"{small} --framework pytorch -z 3", f"{small} --framework llm-foundry -z 3",
        f"{small} --grad-reduce-dtype bf16 --no-dp-overlap --dp-bucket-mparams 25",
        f"{small} -tp 2 --tp-comm-overlap full --overlap-slowdown 0.1",
        f"{small} --no-flash-attention --dropout", f"{small} --tokens 1e12 --cost-per-gpu-hour 2.5",
        f"{small} --matmul-ceiling 0.7 --hbm-bandwidth-GBps 3000 --gpu-memory-gib 94",
        f"{LLAMA} --peak-tflops 500 --num-gpus 16 --gpus-per-node 4 --intra-node-bw-GBps 200 "
        "--inter-node-bw-GBps 25",
        f"{MOE} --gpu h100 --num-gpus 16 -ep 8 --moe-imbalance 1.3",
        f"{small} --search --top 3", f"{small} --search --rank-by cost --cost-per-gpu-hour 3",
        f"{MOE} --gpu h100 --num-gpus 16 --global-batch-size 128 --search --top 2",
        *[f"{cfg(c)} {job}" for c in SAMPLE[:20]],
        f"{cfg('mixtral-8x7b')} {search}", f"{cfg('qwen3-8b')} {search}",
        f"{cfg('llama-2-7b')} -s 2048 --global-batch-size 64 --gpu h100,h200,b200,mi300x --num-gpus 16,32 --search "
        "--top 3 --tokens 1T --cost-per-gpu-hour 2.5,3.5,5,2.2 --rank-by cost --deadline-days 30",
        f"{cfg('llama-2-7b')} -s 2048 --global-batch-size 64 --gpu a100,h100 --num-gpus 16 --search --top 2",
    ], 2)


def _infer():
    h100 = f"{LLAMA} --gpu h100"
    stacks = ("fastertransformer", "fastertransformer-triton", "hf-eager", "kernels", "sglang", "tensorrt-llm",
              "tensorrt-llm-pytorch", "vllm")
    return _runs(INFER, [
        "", "--gpu h100", f"{LLAMA} --gpu a100-80gb -b 16", f"{h100} -tp 2", f"{h100} -pp 2",
        f"{LLAMA} --gpu l4 --precision w4a16", f"{h100} --weight-bits 8 --activation-bits 8 --kv-cache-bits 8",
        f"{LLAMA} --peak-tflops 400 --memory-bandwidth-gbps 3000 --gpu-memory-gib 80 --compute-efficiency 0.6 "
        "--memory-efficiency 0.8 --kernel-overhead-us 0",
        f"{h100} -tp 4 --tp-bandwidth-gbps 200 --tp-latency-us 20 --tp-efficiency 0.7 --request-overhead-ms 5",
        f"{h100} -c 64 --max-num-batched-tokens 4096 --max-num-seqs 32 --step-overhead-ms 2",
        f"{h100} -c 2000 --queue-past-pool", f"{h100} -c 32 --gpu-memory-utilization 0.5",
        f"{h100} -c 16 --num-requests 64", f"{h100} --request-rate 4 --num-requests 50 --seed 7",
        f"{h100} --request-rate 4 --num-requests 50 --arrivals uniform",
        f"{h100} --request-rate inf --num-requests 40",
        f"{h100} --search --num-gpus 4 --top 3",
        f"{h100} --search --num-gpus 8 --disaggregated --max-ttft-ms 300 --max-tpot-ms 40 --top 3",
        f"{LLAMA} --gpu rtx-4090 --search --num-gpus 2 --max-replica-gpus 1",
        *[f"{h100} -c 32 --serving-stack {stack}" for stack in stacks],
        *[f"{LLAMA} --gpu b200 --precision {p}" for p in ("fp32", "fp16", "fp8", "fp4", "int8", "w4a16", "w4a4",
                                                          "w8a8")],
        *[f"{cfg(c)} --gpu h200 -tp 4 -pp 2 -s 2048 -o 256 -b 8" for c in SAMPLE[:20]],
        f"{cfg('deepseek-v3')} --gpu h200 -tp 8 -c 64 --precision fp8",
        f"{cfg('mixtral-8x7b')} --gpu h100 -tp 2 -dp 2 -ep 4 -c 64 --ep-imbalance 1.5",
        f"{cfg('qwen3-30b-a3b')} --gpu b200 -c 128 --num-requests 64 --serving-stack sglang",
        f"{cfg('qwen3.5-35b-a3b')} --gpu h100 -s 32768 -o 128 --state-bits 16",
        f"{cfg('gpt-oss-120b')} --gpu h100 -c 32 --serving-stack tensorrt-llm",
        f"{cfg('mistral-7b')} --gpu mi300x --search --num-gpus 2 --top 2",
    ], 2)


def _comm():
    ops = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv")
    models = ("llama-3-8b", "mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b", "gpt-oss-20b", "qwen3.5-35b-a3b",
              "gemma-2-9b", "jamba-variant")
    return _runs(COMM, [
        "", "--size 1GiB", "--size 1GiB --gpu h100", "--sweep --gpu b200",
        "--sweep --min-size 1KiB --max-size 64MiB --step-factor 4 --num-gpus 16",
        "--size 64MiB --num-gpus 16 --gpu h100 --algo hierarchical",
        "--size 1GB --num-gpus 8 --gpu h100 --no-in-network-reduction", "--size 1GB --num-gpus 72 --gpu gb200",
        "--size 4e9 --num-gpus 32 --gpus-per-node 4 --intra-node-bw-GBps 300 --inter-node-bw-GBps 25 "
        "--intra-node-efficiency 0.7 --inter-node-efficiency 0.9 --nvls-efficiency 0.5 --launch-latency-us 10 "
        "--intra-node-latency-us 1 --inter-node-latency-us 5",
        "--size 8G --num-gpus 16 --gpu mi300x", "--size 1MiB --num-gpus 256 --gpu tpu-v5p",
        f"--train --gpu h100 --num-gpus 8 {LLAMA}",
        "--train --gpu h100 --num-gpus 64 -tp 4 -pp 2 -cp 2 --sequence-parallel --micro-batch-size 2 "
        f"--gradient-accumulation-steps 4 {LLAMA}",
        f"--train --gpu h100 --num-gpus 32 --zero-stage 3 --dtype fp8 --grad-reduce-dtype bf16 {LLAMA}",
        f"--train --gpu h100 --num-gpus 16 -ep 8 --zero-stage 0 {MOE}",
        *[f"--op {op} --size 256MiB --num-gpus 16 --gpu h100" for op in ops],
        *[f"--op all_reduce --size 512MiB --num-gpus 8 --gpu h100 --algo {a}" for a in ("ring", "tree", "nvls")],
        *[f"--train {cfg(c)} --gpu h100 --num-gpus 64 -tp 8 -s 4096" for c in models],
    ], 2)


def _hardware():
    return _runs(HW, ["", "a100", "mi300x", "tpu-v5p", "gaudi3", "trainium2", "rtx-4090", "gb200", "H100-SXM5-80GB",
                      "--compare h100-sxm h200 b200", "--compare a100 l40s"], 2)


def _bad():
    """Bad input: each exits 2 with one line on stderr."""
    return [(script, shlex.split(line)) for script, lines in (
        (PARAMS, ["-l abc", "-hs -1", "-l 0", "-hs 1000 -a 7", "--norm batchnorm", "-s 0", "--nope",
                  cfg("does-not-exist"), "--hf_model_name_or_path /no/such/dir", "-hs 768 -a 12 --num-kv-heads 5",
                  "--moe -e 4 -t 8"]),
        (FLOPS, ["--tokens -5", "-b 0", "--mfu 1.5", "--gpu nope", "-s nan", "--output-tokens -1",
                 f"{cfg('llama-3-8b')} --dtype fp128 --gpu h100"]),
        (MEM, ["-tp 3", "--num-gpus 8 -tp 3", "--num-gpus=-8", "--gpu nope", "-z 4", "-b 0", "--num-gpus 8 -pp 3",
               "--lora-targets x --finetune lora", cfg("missing"), "--kv-cache-bytes-per-val inf"]),
        (TRAIN, ["--gpu nope", "--num-gpus 6 -tp 4", "-s -1", "--search --gpu h100", "--top 0", "--framework jax"]),
        (INFER, ["--gpu nope", "-b -2", "-o 0", "--precision fp2", f"{cfg('mixtral-8x7b')} --gpu l4",
                 "-tp 3 -a 32", "--num-requests 10",
                 f"{cfg('llama-3-8b')} --gpu h100 --search --num-gpus 1 --max-ttft-ms 0.001"]),
        (COMM, ["--size -1GB", "--size=-1GB", "--size lots", "--op all_to_all", "--gpu nope --size 1GB",
                "--num-gpus 0", "--step-factor 1"]),
        (HW, ["nope", "h100 --compare a100 b200", "--compare"]),
    ) for line in lines]


def grid_commands():
    """The flag and config combinations, script by script, then the bad input."""
    return ([(script, ["--help"]) for script in SCRIPTS] + _params() + _flops() + _mem() + _train() + _infer()
            + _comm() + _hardware() + _bad() + _train_issue33() + _train_issue33_cp())


def _train_issue33():
    """Recompute modes and DeepSpeed's engine (issue 33), after the rest so earlier indices stay."""
    small = f"{LLAMA} --gpu h100 --num-gpus 8 --global-batch-size 64"
    return _runs(TRAIN, [
        f"{small} --recompute op-sac", f"{small} --recompute full --recompute-every 2",
        f"{small} --recompute selective --recompute-modules core_attn mlp layernorm",
        f"{small} --framework deepspeed -z 2", f"{small} --framework deepspeed -z 3 --offload --offload-params",
        f"{small} --framework deepspeed -z 3 --offload --offload-device nvme --nvme-gbps 6",
        f"{small} --framework deepspeed -pp 4 -z 1",
        f"{cfg('deepseek-v3')} --gpu h800 --num-gpus 256 -ep 32 -s 4096 --global-batch-size 256 -b 1 --dtype fp8 "
        "--recompute full --moe-dispatcher flex",
    ], 2) + _runs(MEM, [f"{LLAMA} -b 2 -s 4096 --recompute op-sac",
                        f"{LLAMA} -b 2 -s 4096 --recompute full --recompute-every 4"], 2) + _runs(TRAIN, [
        # uneven pipeline stages: stated, refused with a hint, and searched
        f"{cfg('deepseek-v3')} --gpu h800 --num-gpus 256 -pp 16 -ep 16 -s 4096 --global-batch-size 256 -b 1 "
        "--dtype fp8 --moe-dispatcher flex --decoder-first-pipeline-num-layers 2 --decoder-last-pipeline-num-layers 3",
        f"{cfg('qwen3-235b-a22b')} --gpu h100 --num-gpus 256 -pp 8 -vp 4 -ep 32 -tp 2 -etp 1 -s 4096 "
        "--global-batch-size 2048 -b 1 --dtype fp8 --account-for-embedding-in-pipeline-split "
        "--account-for-loss-in-pipeline-split",
        f"{cfg('deepseek-v3')} --gpu h800 --num-gpus 256 -pp 16 -ep 16 -s 4096 --global-batch-size 256",
        "-l 61 -hs 4096 -a 32 -v 32000 -s 4096 --gpu a100 --num-gpus 16 --global-batch-size 64 --search",
        f"{cfg('qwen3-30b-a3b')} --gpu h100 --num-gpus 16 -ep 16 -s 4096 -b 1 --global-batch-size 64 --moe-a2a-overlap",
        f"{LLAMA} --gpu h100 --num-gpus 8 -tp 8 -z 3 --framework pytorch -s 4096 -b 2 --global-batch-size 2 "
        "--recompute op-sac",
    ], 2)


def _train_issue33_cp():
    """Context parallelism's a2a mode, Blackwell's kernels, the early-2024 cuDNN and Transformer Engine's
    FP8 recipes (issue 33), last."""
    small = f"{LLAMA} --gpu h100 --num-gpus 8 --global-batch-size 64"
    return _runs(TRAIN, [
        f"{small} -cp 2 -s 16384 --cp-comm-type a2a", f"{small} -cp 4 -s 32768 --attention-kernel cudnn-9.1",
        f"{LLAMA} --gpu b200 --num-gpus 8 --global-batch-size 64 -cp 2 -s 16384 --dtype fp8",
        f"{LLAMA} --gpu gb200 --num-gpus 8 --global-batch-size 64 --attention-kernel fa2",
        f"{LLAMA} --gpu h100 --num-gpus 16 --global-batch-size 64 -cp 16 -s 32768 --cp-comm-type a2a",
        f"{small} --dtype fp8 --fp8-recipe tensorwise",
        f"{LLAMA} --gpu b200 --num-gpus 8 --global-batch-size 64 --dtype fp8 --fp8-recipe mxfp8",
        f"{small} --dtype fp8 --fp8-recipe mxfp8",
    ], 2)


def _unique(commands):
    """The commands in order, each once."""
    seen, out = set(), []
    for script, argv in commands:
        key = (script, tuple(argv))
        if key not in seen:
            seen.add(key)
            out.append((script, list(argv)))
    return out


COMMANDS = _unique(readme_commands() + cookbook_commands() + grid_commands())


# ---------------------------------------------------------------------------------------------
# The runner

# The wall-clock readings the scripts print; everything else they print is deterministic.
_TIMINGS = [
    # --search's own run time: "search_time_s" in --json, and in the reports: calc_training_time's
    # "... parallel shapes) in 0.34 s; best first:", calc_inference_latency's "... points costed
    # in 8 ms, ..." (in a paragraph wrapped at 100 columns: see _unwrap_search)
    (re.compile(r'("search_time_s": )[-+0-9.eE]+'), r"\1<time>"),
    (re.compile(r"(parallel shapes\) in )[0-9.]+( s; best first:)"), r"\1<time>\2"),
    (re.compile(r"(points costed in )[0-9]+( ms,)"), r"\1<time>\2"),
    # progress lines on stderr once a run has taken a second, then each second: whether they come,
    # how many and what they count depend on the machine's speed
    (re.compile(r"^searching: layout [0-9]+ of [0-9]+, [0-9]+ points so far\n", re.M), ""),
    (re.compile(r"^simulating the benchmark: [0-9,]+ of [0-9,]+ requests done\n", re.M), ""),
    (re.compile(r"^capacity: .*, [0-9.]+ s so far\n", re.M), ""),  # a capacity plan's progress and time
    (re.compile(r"^capacity: [0-9]+ layouts sized in [0-9.]+ s\n", re.M), ""),
]
# calc_inference_latency's --search report opens with a paragraph wrapped at 100 columns that holds
# the search's run time, so a longer or shorter time can move the line breaks after it.
_SEARCH_PARAGRAPH = re.compile(r"^search: .*?(?=\n\n|\Z)", re.M | re.S)


def _unwrap_search(match):
    """The --search paragraph on one line, when it is the one that holds the run time."""
    text = match.group(0)
    return text.replace("\n", " ") if "points costed in" in text.replace("\n", " ") else text


def normalise(text):
    """text with its wall-clock readings replaced by <time> and its progress lines left out, so
    that reruns, on any machine, compare equal. Model numbers are never touched."""
    text = _SEARCH_PARAGRAPH.sub(_unwrap_search, text)
    for pattern, repl in _TIMINGS:
        text = pattern.sub(repl, text)
    return text


_MODULES = {}  # (root, script) -> the script loaded from root
_ROOT_MODULES = {}  # root -> {name: module} of the modules root itself provides (hardware, ...)


def _provided(root):
    """Top-level module names root provides: its *.py files and packages."""
    return {e[:-3] if e.endswith(".py") else e for e in os.listdir(root)
            if e.endswith(".py") or os.path.isfile(os.path.join(root, e, "__init__.py"))}


@contextlib.contextmanager
def _imports_from(root):
    """Imports as a script in root sees them: root first on sys.path, and the modules root
    provides (`import hardware` inside a script, a package) root's own, kept apart from those of
    any other root and from what the caller has imported."""
    names = _provided(root)
    ours = _ROOT_MODULES.setdefault(root, {})

    def provided(name):
        return name.split(".")[0] in names

    saved = {n: m for n, m in sys.modules.items() if provided(n)}
    for name in saved:
        del sys.modules[name]
    sys.modules.update(ours)
    sys.path.insert(0, root)
    try:
        yield
    finally:
        sys.path.remove(root)
        ours.clear()
        ours.update({n: m for n, m in sys.modules.items() if provided(n)})
        for name in ours:
            del sys.modules[name]
        sys.modules.update(saved)


def _load(script, root):
    """The script in root as a module, imported once under a name unique to root and script."""
    key = (root, script)
    if key not in _MODULES:
        tag = hashlib.sha1(root.encode()).hexdigest()[:10]
        name = f"_grid_{tag}_{script[:-3]}"
        spec = importlib.util.spec_from_file_location(name, os.path.join(root, script))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        _MODULES[key] = module
    return _MODULES[key]


def run_command(script, argv, root=REPO):
    """Run script's main(argv) from root in this process, as `python3 script argv` run in the
    repository root would: sys.argv[0] the script's name, argparse's help 100 columns wide,
    relative paths read from the repository root (the fixtures are there). Returns
    {"rc", "stdout", "stderr"}: the SystemExit code (0 when main returns) and the normalised
    texts."""
    root = os.path.abspath(root)
    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_cwd, saved_columns = sys.argv, os.getcwd(), os.environ.get("COLUMNS")
    rc = 0
    with _imports_from(root):
        module = _load(script, root)
        sys.argv = [script, *argv]
        os.environ["COLUMNS"] = "100"
        os.chdir(REPO)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                module.main(list(argv))
        except SystemExit as exc:  # as the interpreter ends: None is 0, a message is 1
            rc = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            if not isinstance(exc.code, (int, type(None))):
                err.write(f"{exc.code}\n")
        finally:
            os.chdir(saved_cwd)
            sys.argv = saved_argv
            if saved_columns is None:
                del os.environ["COLUMNS"]
            else:
                os.environ["COLUMNS"] = saved_columns
    return {"rc": rc, "stdout": normalise(out.getvalue()), "stderr": normalise(err.getvalue())}
