"""Tests for calc_transformer_mem.py against published numbers (Korthikanti et al. 2022, the ZeRO
paper, Hugging Face cache shapes, the DeepSeek-V2 paper, QLoRA), the cookbook README commands,
and one exit-2 test per validation rule. No GPU, no network."""
import json
import math
import os
import sys
import types

import pytest
from hypothesis import given, settings, strategies as st

from conftest import ROOT, config_path, exit_code_and_stderr, run_main
from calc_transformer_mem import main
from llmcalc.train.memory import optimizer_bytes_per_param, zero_model_state_bytes  # the formulas themselves

GIB = 2 ** 30

# ----------------------------------------------------------------------------------------------
# Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models").
# Model dims from their Table 3; s 2048, V 51200, fp16, no flash attention, dropout on,
# GPT-3-style tied embeddings; ZeRO off (dp = 1 in every setup).
# ----------------------------------------------------------------------------------------------
KORTHIKANTI = {
    # name: (flags, Fig.1 activations none GiB, Fig.1 selective+seq GiB, Fig.1 weights+grads+opt GiB)
    "22B": ("-hs 6144 -a 64 -l 48 -tp 8 -pp 1 --num-gpus 8 --global-batch-size 4 -b 4", 59.25, 9.5625, 45.56),
    "175B": ("-hs 12288 -a 96 -l 96 -tp 8 -pp 8 -vp 3 --num-gpus 64 --global-batch-size 64 -b 1",
             66.84, 12.35, 45.56),
    "530B": ("-hs 20480 -a 128 -l 105 -tp 8 -pp 35 -vp 3 --num-gpus 280 --global-batch-size 280 -b 1",
             114.02, 23.08, 31.64),
    "1T": ("-hs 25600 -a 160 -l 128 -tp 8 -pp 64 --num-gpus 512 --global-batch-size 512 -b 1",
           131.25, 26.56, 32.96),
}
K_COMMON = " -s 2048 -v 51200 --no-flash-attention --dropout --zero-stage 0 --tied-embeddings --json"
MODES = {"none": "", "seq": " -sp", "sel": " --recompute selective",
         "seqsel": " -sp --recompute selective", "full": " --recompute full"}
# Figure 7 (percent of the tensor-parallel baseline) as the paper's Table 2 rows give it per layer
# with t = 8: none 10+24/t+5as/(ht), seq 34/t+5as/(ht), sel 10+24/t, seqsel 34/t, full 2.
# (5as/(ht) = 13.33 for 22B, 10 for 175B, 8 for 530B and 1T.)
FIG7 = {"22B": (66.77, 49.37, 16.14, 7.59), "175B": (61.96, 56.52, 18.48, 8.70),
        "530B": (58.33, 61.90, 20.24, 9.52), "1T": (58.33, 61.90, 20.24, 9.52)}


def _k(name, mode):
    res, _, _ = run_main(main, (KORTHIKANTI[name][0] + K_COMMON + MODES[mode]).split())
    return res


@pytest.mark.parametrize("name", KORTHIKANTI)
def test_korthikanti_fig1_activations(name):
    # Source: Korthikanti et al. 2022 Figure 1 (first pipeline stage, per GPU). Tolerance 3%.
    # Ours includes the embedding dropout mask (their sec. 4.3), which Fig. 1 leaves out; the
    # layers-only figure must match to 0.5%.
    _, none, seqsel, _ = KORTHIKANTI[name]
    r0, r1 = _k(name, "none"), _k(name, "seqsel")
    s0, s1 = r0["stages"][0], r1["stages"][0]
    assert s0["activations_stored_bytes"] / GIB == pytest.approx(none, rel=0.03)
    assert s1["activations_stored_bytes"] / GIB == pytest.approx(seqsel, rel=0.03)
    assert s0["activations_layers_bytes"] / GIB == pytest.approx(none, rel=0.005)
    assert s1["activations_layers_bytes"] / GIB == pytest.approx(seqsel, rel=0.005)
    assert r0["stage"] == 0  # the most-loaded rank is the first pipeline stage


@pytest.mark.parametrize("name", KORTHIKANTI)
def test_korthikanti_fig7_ratios(name):
    # Source: Korthikanti et al. 2022 Figure 7 / Table 2 (ratios to the TP baseline), within 2 points.
    base = _k(name, "none")["stages"][0]["activations_layers_bytes"]
    for mode, want in zip(("seq", "sel", "seqsel", "full"), FIG7[name]):
        got = 100 * _k(name, mode)["stages"][0]["activations_layers_bytes"] / base
        assert abs(got - want) <= 2.0, (mode, got, want)


@pytest.mark.parametrize("name", KORTHIKANTI)
def test_korthikanti_fig1_model_states(name):
    # Source: Korthikanti et al. 2022 Figure 1, "parameters + optimizer state" per GPU with 18 B per
    # parameter (fp16 weight, fp32 grad, fp32 master + Adam moments). Fig. 1 counts the transformer
    # layers: compare a middle stage (layers only) when pp > 1; 22B (pp = 1) includes the tied
    # embedding. Tolerance 3%.
    want = KORTHIKANTI[name][3]
    r = _k(name, "none")
    stg = r["stages"][len(r["stages"]) // 2]
    got = (stg["weights_bytes"] + stg["gradients_bytes"] + stg["optimizer_bytes"]) / GIB
    assert got == pytest.approx(want, rel=0.03)


# ----------------------------------------------------------------------------------------------
# ZeRO (Rajbhandari et al. 2019): Figure 1 and Table 1, decimal GB, K = 12, fp16 weights/grads.
# ----------------------------------------------------------------------------------------------
ZERO_TABLE1 = {  # params: {N_d: (P_os, P_os+g, P_os+g+p)} in decimal GB
    # 7.5B row of Table 1 (its N_d = 64 entries are Figure 1's 31.4 / 16.6 / 1.88).
    7.5e9: {1: (120, 120, 120), 4: (52.5, 41.3, 30), 16: (35.6, 21.6, 7.5), 64: (31.4, 16.6, 1.88),
            256: (30.4, 15.4, 0.47), 1024: (30.1, 15.1, 0.12)},
    # 1T: 16 TB unsharded (sec. 1) and 16 GB per device with P_os+g+p on 1024 GPUs (sec. 1, 5.4).
    1e12: {1: (16000, 16000, 16000)},
}


def test_zero_paper_trillion_on_1024_gpus():
    # Source: ZeRO paper sec. 1: P_os+g+p lets a 1T-parameter model fit in 16 GB per device on
    # 1024 GPUs (16 B/param / 1024 = 15.6 GB; the paper rounds to 16). Tolerance 3%.
    got = sum(zero_model_state_bytes(params=1e12, weight_bytes=2, grad_bytes=2, optimizer_bytes=12,
                                     zero_stage=3, shard_degree=1024))
    assert got / 1e9 == pytest.approx(16, rel=0.03)


@pytest.mark.parametrize("params", ZERO_TABLE1)
def test_zero_paper_table1(params):
    # Source: ZeRO paper Table 1 (per-device model-state memory vs DP degree). Published values are
    # rounded to 3 significant figures (0.12, 0.47 to 2): tolerance 1% or 0.005 GB. K = 12 (mixed-precision Adam, sec. 3.1).
    K = optimizer_bytes_per_param(optimizer="adam", mixed_precision=True, master_bytes=4)
    assert K == 12
    for nd, row in ZERO_TABLE1[params].items():
        for stage, want in zip((1, 2, 3), row):
            got = sum(zero_model_state_bytes(params=params, weight_bytes=2, grad_bytes=2,
                                             optimizer_bytes=K, zero_stage=stage, shard_degree=nd))
            assert got / 1e9 == pytest.approx(want, rel=0.01, abs=0.005), (params, nd, stage)


def test_zero_paper_figure1_through_cli():
    # Source: ZeRO paper Figure 1: 7.5B params, N_d = 64, K = 12: 120 / 31.4 / 16.6 / 1.9 GB.
    # A 7.466B-parameter model (L 35, h 4096, V 51200) stands in for 7.5B: tolerance 1%.
    want = {0: 120, 1: 31.4, 2: 16.6, 3: 1.9}
    for z, gb in want.items():
        res, _, _ = run_main(main, ["-l", "35", "-hs", "4096", "--num-gpus", "64", "-z", str(z),
                                    "--bytes-per-grad-ele", "2", "-zbs", "1", "-zmlp", "1", "--json"])
        got = (res["weights_bytes"] + res["gradients_bytes"] + res["optimizer_bytes"]) / 1e9
        assert got * 7.5e9 / res["total_params"] == pytest.approx(gb, rel=0.01 if z < 3 else 0.03), z


def test_fsdp_names_map_to_zero_stages():
    # FSDP FULL_SHARD = ZeRO-3, SHARD_GRAD_OP = ZeRO-2, NO_SHARD = ZeRO-0 (PyTorch FSDP docs).
    a = ["-l", "4", "-hs", "1024", "--num-gpus", "8", "--json"]
    for fsdp, z in (("full_shard", 3), ("shard_grad_op", 2), ("no_shard", 0)):
        r1, _, _ = run_main(main, a + ["--fsdp", fsdp])
        r2, _, _ = run_main(main, a + ["-z", str(z)])
        assert r1["total_bytes"] == r2["total_bytes"]


# ----------------------------------------------------------------------------------------------
# KV cache per token = what the cache holds
# ----------------------------------------------------------------------------------------------
def _infer(name, *extra):
    res, _, _ = run_main(main, ["--hf_model_name_or_path", config_path(name), "--infer", "-s", "4096",
                                "-o", "0", "--json", *extra])
    return res


def test_kv_llama3_8b_gqa():
    # HF LlamaAttention caches k and v as (b, kv=8, s, d=128) per layer, bf16, 32 layers:
    # 2 * 8 * 128 * 2 B * 32 = 131072 B/token (the widely quoted Llama-3-8B figure).
    r = _infer("llama-3-8b")
    assert r["kv_cache_bytes_per_token"] == 131072
    assert r["kv_cache_bytes"] == 131072 * 4096


def test_kv_falcon_7b_mqa():
    # Falcon-7B (multi_query: one kv head of 64, 32 layers): HF FalconAttention caches (b, 1, s, 64)
    # for k and v: 2 * 64 * 2 B * 32 = 8192 B/token.
    assert _infer("falcon-7b")["kv_cache_bytes_per_token"] == 8192


def test_kv_mla_latent_and_hf_expanded():
    # DeepSeek-V2 paper sec. 2.1.3: MLA caches (d_c + d_h^R) = kv_lora_rank + qk_rope_head_dim
    # elements per token per layer (vLLM's MLA cache): V2-Lite (512 + 64) * 2 B * 27 = 31104;
    # V3 (512 + 64) * 2 * 61 = 70272. HF's DeepseekV2Attention caches the expanded per-head
    # key (a x 192) and value (a x 128): 16 * 320 * 2 * 27 = 276480 B/token.
    assert _infer("deepseek-v2-lite")["kv_cache_bytes_per_token"] == 31104
    assert _infer("deepseek-v3")["kv_cache_bytes_per_token"] == 70272
    assert _infer("deepseek-v2-lite", "--mla-cache", "expanded")["kv_cache_bytes_per_token"] == 276480


def test_kv_replicated_when_kv_heads_below_tp():
    # vLLM / Megatron replicate kv heads when kv < tp: Llama-3-8B at tp 16 keeps 1 kv head per rank.
    r, _, _ = run_main(main, ["--hf_model_name_or_path", config_path("llama-3-8b"), "--infer",
                              "-tp", "16", "--num-gpus", "16", "-a", "32", "--json"])
    assert r["kv_cache_bytes_per_token"] == 2 * 1 * 128 * 2 * 32
    r4, _, _ = run_main(main, ["--hf_model_name_or_path", config_path("llama-3-8b"), "--infer",
                               "-tp", "4", "--num-gpus", "4", "--json"])
    assert r4["kv_cache_bytes_per_token"] == 131072 // 4


def test_kv_sliding_windows():
    # Mistral-7B v0.1: sliding_window 4096 on every layer -> an 8192-token context caches 4096, the
    # rolling buffer of Mistral 7B sec. 2 (what transformers' sliding cache keeps allocated from the
    # first decode step on: tests/fixtures/hf_cache_bytes.json, storage_bytes).
    # Gemma 2: even layers slide (window 4096), odd layers are global (HF Gemma2DecoderLayer).
    r, _, _ = run_main(main, ["--hf_model_name_or_path", config_path("mistral-7b"), "--infer",
                              "-s", "8192", "-o", "0", "--json"])
    assert r["kv_cache_bytes"] == 131072 * 4096
    g, _, _ = run_main(main, ["--hf_model_name_or_path", config_path("gemma-2-9b"), "--infer",
                              "-s", "8192", "-o", "0", "--json"])
    per_layer = 2 * 8 * 256 * 2
    assert g["kv_cache_bytes"] == per_layer * (21 * 8192 + 21 * 4096)


def test_inference_weights_quantized():
    # 4-bit layer matrices; 16-bit embeddings, head and norms (bitsandbytes/GPTQ/AWQ quantize the
    # linear layers only: lm_head and the RMSNorm weights stay fp16).
    r16 = _infer("llama-3-8b")
    r4 = _infer("llama-3-8b", "--weight-bits", "4")
    keep = 2 * 128256 * 4096 + 4096 + 32 * 2 * 4096  # embedding, untied head, final norm, layer norms
    assert r16["weights_bytes"] == 2 * 8030261248
    assert r4["weights_bytes"] == pytest.approx((8030261248 - keep) / 2 + 2 * keep)


# ----------------------------------------------------------------------------------------------
# Fine-tuning
# ----------------------------------------------------------------------------------------------
LLAMA65 = ["-l", "80", "-hs", "8192", "-a", "64", "--ffn-hidden-size", "22016", "--swiglu",
           "--norm", "rmsnorm", "--no-bias", "-v", "32000"]


def test_qlora_65b_fits_48gb_full_finetune_does_not():
    # Source: Dettmers et al. 2023 (QLoRA), abstract and sec. 1: finetuning a 65B model drops from
    # >780 GB to <48 GB with QLoRA (NF4 + double quant, LoRA on all linear layers, r 64, gradient
    # checkpointing; batch 1; adapters in bf16 as the paper's qlora.py casts them). Sequence 512
    # here (the paper's chat data is short). Model: LLaMA-65B (h 8192, L 80, f 22016, V 32000).
    q, _, _ = run_main(main, LLAMA65 + ["--finetune", "qlora", "--lora-rank", "64", "-ca", "-s", "512",
                                        "--adapter-bytes-per-val", "2", "--optimizer", "adamw",
                                        "--json"])
    assert 33e9 < q["total_bytes"] < 48e9
    f, _, _ = run_main(main, LLAMA65 + ["-z", "0", "--bytes-per-grad-ele", "2", "-s", "512", "-ca",
                                        "--json"])
    assert f["weights_bytes"] + f["gradients_bytes"] + f["optimizer_bytes"] > 780e9


def test_8bit_adam_saves_75_percent_of_states():
    # Dettmers et al. 2022 (8-bit optimizers): 8-bit Adam states take 2 B/param instead of 8.
    assert optimizer_bytes_per_param(optimizer="adam8bit", mixed_precision=False, master_bytes=4) == 2
    assert optimizer_bytes_per_param(optimizer="adamw", mixed_precision=False, master_bytes=4) == 8
    # the cookbook's own comment: Adam 12, SGD 8, 8-bit Adam 6 bytes with the fp32 master copy
    for opt, k in (("adamw", 12), ("sgd", 8), ("adam8bit", 6), ("lion", 8)):
        assert optimizer_bytes_per_param(optimizer=opt, mixed_precision=True, master_bytes=4) == k


# ----------------------------------------------------------------------------------------------
# Cookbook README commands (one smoke test each) and what they must now get right
# ----------------------------------------------------------------------------------------------
README = [
    "--num-layers=32 --sequence-length=2048 --num-attention-heads=32 --hidden-size=4096 --batch-size-per-gpu=8 --checkpoint-activations --zero-stage=1 --partition-activations --pipeline-parallel-size=1 --tensor-parallel-size=2 --num-gpus=128",
    "--num-layers=36 --sequence-length=2048 --num-attention-heads=40 --hidden-size=5120 --batch-size-per-gpu=8 --checkpoint-activations --zero-stage=1 --partition-activations --pipeline-parallel-size=1 --tensor-parallel-size=4 --num-gpus=256",
    "--num-layers=44 --sequence-length=2048 --num-attention-heads=64 --hidden-size=6144 --batch-size-per-gpu=1 --checkpoint-activations --zero-stage=1 --partition-activations --pipeline-parallel-size=1 --tensor-parallel-size=1 --num-gpus=1",
]


@pytest.mark.parametrize("cmd", README)
def test_cookbook_readme_commands(cmd):
    res, out, _ = run_main(main, cmd.split())
    assert "Total per GPU" in out
    tp = res["parallelism"]["tp"]
    assert res["config"]["recompute"] == "full"
    # gradients follow the weights' TP split (fp32 grads = 2x the fp16 weights)
    assert res["gradients_bytes"] == pytest.approx(2 * res["weights_bytes"])
    assert res["params_per_gpu"] == pytest.approx(res["total_params"] / tp, rel=0.01)


def test_json_mode_prints_only_the_result():
    res, out, _ = run_main(main, ["--json"])
    assert json.loads(out) == json.loads(json.dumps(res))
    for k in ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
              "kv_cache_bytes", "total_bytes"):
        assert k in res


# ----------------------------------------------------------------------------------------------
# Fit
# ----------------------------------------------------------------------------------------------
def _fake_hardware(monkeypatch, mem=80e9, usable=None):
    """Stand-in hardware module; usable=None mimics an older hardware.py without the field."""
    mod = types.ModuleType("hardware")

    def get_accelerator(name):
        if name != "h100":
            raise KeyError(f"unknown accelerator {name!r}; nearest: h100")
        rec = {"name": "h100-sxm", "memory_bytes": mem}
        if usable is not None:
            rec["memory_usable_bytes"] = usable
        return rec
    mod.get_accelerator = get_accelerator
    monkeypatch.setitem(sys.modules, "hardware", mod)


def test_fit_training_largest_micro_batch(monkeypatch):
    _fake_hardware(monkeypatch)
    base = ["--hf_model_name_or_path", config_path("llama-3-8b"), "--num-gpus", "8", "-z", "3",
            "-s", "4096", "--json"]
    r, _, _ = run_main(main, base + ["--gpu", "h100"])
    mb = r["fit"]["max_micro_batch_size"]
    assert mb >= 1
    at, _, _ = run_main(main, base + ["-b", str(mb)])
    over, _, _ = run_main(main, base + ["-b", str(mb + 1)])
    assert at["total_bytes"] <= 80e9 < over["total_bytes"]


def test_fit_inference_batch_and_context():
    base = ["--hf_model_name_or_path", config_path("llama-3-8b"), "--infer", "-s", "8192", "-o", "0",
            "--gpu-memory-gib", "40", "--prefill-chunk", "8192", "--json"]
    r, _, _ = run_main(main, base)
    assert r["fit"]["fits"]
    nb, nc = r["fit"]["max_batch_size"], r["fit"]["max_context_tokens"]
    lim = 40 * GIB
    at, _, _ = run_main(main, base + ["-b", str(nb)])
    over, _, _ = run_main(main, base + ["-b", str(nb + 1)])
    assert at["total_bytes"] <= lim < over["total_bytes"]
    # KV dominates: (40 GiB - 15 GiB weights - 1 GiB) / (8192 * 128 KiB) ~ 23 sequences; the
    # context stops at the model's trained 8,192 tokens, the memory would hold more (issue 32)
    assert 18 <= nb <= 24 and nc == 8192 and r["fit"]["context_limited_by"] == "the model's trained context"
    assert r["fit"]["max_context_tokens_memory"] > 8192


# ----------------------------------------------------------------------------------------------
# Properties (hypothesis)
# ----------------------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(b=st.integers(1, 8), tp=st.sampled_from([1, 2, 4]), z=st.integers(0, 3),
       rec=st.sampled_from(["none", "selective", "full"]))
def test_more_batch_more_memory_more_zero_less(b, tp, z, rec):
    a = ["-l", "4", "-hs", "1024", "-a", "16", "-s", "512", "--num-gpus", "8", "-tp", str(tp),
         "--recompute", rec, "--json"]
    r1, _, _ = run_main(main, a + ["-b", str(b), "-z", str(z)])
    r2, _, _ = run_main(main, a + ["-b", str(b + 1), "-z", str(z)])
    assert r2["activations_bytes"] > r1["activations_bytes"]
    if z < 3:
        r3, _, _ = run_main(main, a + ["-b", str(b), "-z", str(z + 1)])
        assert (r3["weights_bytes"] + r3["gradients_bytes"] + r3["optimizer_bytes"]
                < r1["weights_bytes"] + r1["gradients_bytes"] + r1["optimizer_bytes"])


@settings(max_examples=20, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]))
def test_tp_one_rank_holds_at_least_its_share(tp):
    # every rank holds >= total/tp (replicated norms and biases) and the TP=1 rank holds it all
    r, _, _ = run_main(main, ["-l", "4", "-hs", "1024", "-a", "16", "--num-gpus", str(tp), "-tp", str(tp),
                              "--json"])
    assert r["total_params"] / tp <= r["params_per_gpu"] <= r["total_params"] / tp * 1.01 + 4096
    if tp == 1:
        assert r["params_per_gpu"] == r["total_params"]


# ----------------------------------------------------------------------------------------------
# Exit 2, one line, per validation rule
# ----------------------------------------------------------------------------------------------
BAD = [
    (["--num-gpus", "6", "-tp", "4"], "not divisible by tp*pp*cp"),
    (["-a", "6", "-hs", "768", "-tp", "4", "--num-gpus", "4"], "not divisible by --tensor-parallel-size"),
    (["-l", "5", "-pp", "4", "-vp", "2", "--num-gpus", "4"], "not divisible by pp*vp"),
    (["-l", "8", "-pp", "1", "-vp", "2"], "needs --pipeline-parallel-size"),
    (["-b", "0"], "must be positive"),
    (["-s", "0"], "must be positive"),
    (["--num-gpus", "0"], "must be positive"),
    (["-hs", "0"], "must be positive"),
    (["--optimizer", "adagrad"], "invalid choice"),
    (["-z", "3", "-pp", "2", "--num-gpus", "2", "-l", "4"], "ZeRO-3"),
    (["--moe", "-e", "6", "-ep", "4", "--num-gpus", "4"], "not divisible by --expert-parallelism"),
    (["-ep", "2", "--num-gpus", "2"], "needs a MoE model"),
    (["--global-batch-size", "7", "--num-gpus", "2"], "not divisible by b*dp"),
    (["--finetune", "lora", "--lora-targets", "q,x"], "--lora-targets"),
    (["--finetune", "lora", "--infer"], "applies to training"),
    (["--fsdp", "full_shard", "-z", "1"], "--fsdp"),
    (["-ca", "--recompute", "selective"], "full recompute"),
    (["-cp", "3", "--num-gpus", "3", "-s", "1024"], "--context-parallel-size"),
    (["--num-kv-heads", "2", "-a", "64", "-tp", "8", "--num-gpus", "8", "--hf_model_name_or_path",
      "nonexistent/dir/config.json"], "not found"),
    (["--misc-mem-gib", "-1"], "must not be negative"),
    (["--gpu", "h100", "--gpu-memory-gib", "80"], "not both"),
]


@pytest.mark.parametrize("argv,msg", BAD)
def test_bad_input_exits_2_with_one_line(argv, msg, monkeypatch):
    _fake_hardware(monkeypatch)
    code, err = exit_code_and_stderr(main, argv)
    assert code == 2
    assert msg in err and err.count("\n") == 1, err


def test_kv_heads_and_tp_must_nest():
    code, err = exit_code_and_stderr(main, ["-a", "12", "--num-kv-heads", "3", "-hs", "768",
                                            "-tp", "2", "--num-gpus", "2"])
    assert code == 2 and "one must divide the other" in err


def test_unknown_gpu_and_missing_hardware(monkeypatch):
    _fake_hardware(monkeypatch)
    code, err = exit_code_and_stderr(main, ["--gpu", "h1000"])
    assert code == 2 and "nearest: h100" in err
    monkeypatch.setitem(sys.modules, "hardware", None)  # import hardware -> ImportError
    code, err = exit_code_and_stderr(main, ["--gpu", "h200"])  # (h100's record is built in)
    assert code == 2 and "--gpu-memory-gib" in err


def test_fit_uses_usable_memory_when_present(monkeypatch):
    # nvidia-smi memory.total of an H100 80GB HBM3 is 81559 MiB (modal-labs/modal-client PR #2797,
    # NVIDIA/nccl #1264); the fit must use it, not the vendor's 80e9 B, and say so.
    usable = 81559 * 2 ** 20
    _fake_hardware(monkeypatch, usable=usable)
    argv = ["--hf_model_name_or_path", config_path("llama-3-8b"), "--infer", "-s", "8192",
            "-o", "0", "--gpu", "h100", "--json"]
    r, _, _ = run_main(main, argv)
    assert r["fit"]["memory_bytes"] == usable
    assert r["config"]["memory_field"] == "memory_usable_bytes"
    assert any("memory_usable_bytes" in a and "79.65 GiB" in a for a in r["assumptions"])
    _fake_hardware(monkeypatch)  # older hardware.py: falls back to memory_bytes and says so
    r, _, _ = run_main(main, argv)
    assert r["fit"]["memory_bytes"] == 80e9
    assert any("hardware.py's memory_bytes" in a and "74.51 GiB" in a for a in r["assumptions"])
    r, _, _ = run_main(main, argv[:-3] + ["--gpu-memory-gib", "80", "--json"])
    assert r["config"]["memory_field"] == "--gpu-memory-gib"
    assert not any("hardware.py" in a for a in r["assumptions"])


def test_fit_with_real_hardware_table():
    hardware = pytest.importorskip("hardware")
    rec = hardware.get_accelerator("h100")
    if "memory_usable_bytes" not in rec:
        pytest.skip("hardware.py without memory_usable_bytes")
    r, _, _ = run_main(main, ["--hf_model_name_or_path", config_path("llama-3-8b"), "--infer",
                              "-s", "8192", "-o", "0", "--gpu", "h100", "--json"])
    assert r["fit"]["memory_bytes"] == rec["memory_usable_bytes"]


# ----------------------------------------------------------------------------------------------
# Uneven pipeline stages (Megatron-LM --decoder-first/last-pipeline-num-layers and
# --account-for-embedding/loss-in-pipeline-split)
# ----------------------------------------------------------------------------------------------
from llmcalc.train.memory import pipeline_chunk_layers, stage_layers, suggest_pipeline_split  # noqa: E402

DSV3 = ["--hf_model_name_or_path", config_path("deepseek-v3"), "-pp", "4", "--num-gpus", "4",
        "-s", "4096", "-ca", "--json"]


def test_deepseek_v3_61_layers_on_4_stages():
    # DeepSeek-V3: 61 layers (HF config num_hidden_layers), not divisible by pp 4. With 13 on the
    # first and 16 on the last stage the 32 middle layers split 16/16 (Megatron's rule below).
    r, _, _ = run_main(main, DSV3 + ["--decoder-first-pipeline-num-layers", "13",
                                     "--decoder-last-pipeline-num-layers", "16"])
    st = r["stages"]
    assert [x["stage_layers"] for x in st] == [13, 16, 16, 16]
    assert sum(x["stage_layers"] for x in st) == 61
    assert r["total_bytes"] == max(x["total_bytes"] for x in st)
    assert r["stage"] == max(st, key=lambda x: x["total_bytes"])["stage"]
    # Source: DeepSeek-V3 technical report (arXiv 2412.19437), abstract: 671B total parameters.
    # tp = ep = 1, so the stages together hold the whole model once (no layer lost or counted
    # twice by the uneven split): within 0.5% of 671B.
    assert sum(x["params_per_gpu"] for x in st) == pytest.approx(671e9, rel=0.005)
    assert sum(x["params_per_gpu"] for x in st) == r["total_params"]


def test_deepseek_v3_implied_split_is_applied_and_said():
    # Issue 45: an unstated uneven split is applied (the one calc_training_time.py applies),
    # said in the result and on stderr; it answers as the stated flags do, and places all 61
    # layers.
    implied, _, err = run_main(main, DSV3)
    flags = "--decoder-first-pipeline-num-layers 14 --decoder-last-pipeline-num-layers 15"
    assert flags in implied["pipeline_split_applied"] and flags in err
    r, _, _ = run_main(main, DSV3 + flags.split())
    assert [x["stage_layers"] for x in r["stages"]] == [14, 16, 16, 15]
    assert implied["total_bytes"] == r["total_bytes"] and "pipeline_split_applied" not in r
    # one answer whichever tool is asked: calc_training_time.py applies the same split
    import calc_training_time
    t, _, _ = run_main(calc_training_time.main, DSV3[:-2] + ["--json"])
    assert (t["layout"]["decoder_first_pipeline_num_layers"],
            t["layout"]["decoder_last_pipeline_num_layers"]) == (14, 15)


def test_llama3_405b_split_matches_the_paper():
    # Source: Llama Team 2024, "The Llama 3 Herd of Models", sec. 3.3.2: 405B has 126 layers
    # (Table 3) on pp 16, and "we reduce one Transformer layer each from the first and the last
    # stages ... the first model chunk on the first stage has only the embedding, and the last
    # model chunk on the last stage has only output projection and loss calculation".
    base = ["-l", "126", "-hs", "16384", "-a", "128", "--num-kv-heads", "8", "-tp", "8",
            "--num-gpus", "128", "-pp", "16", "--json"]
    implied, _, _ = run_main(main, base)
    assert ("--decoder-first-pipeline-num-layers 7 --decoder-last-pipeline-num-layers 7"
            in implied["pipeline_split_applied"])
    r, _, _ = run_main(main, base + ["--decoder-first-pipeline-num-layers", "7",
                                     "--decoder-last-pipeline-num-layers", "7"])
    assert [x["stage_layers"] for x in r["stages"]] == [7] + [8] * 14 + [7]
    assert [x["stage_layers"] for x in implied["stages"]] == [7] + [8] * 14 + [7]
    # The same layout through Megatron's account-for flags: 126 + 2 = 128 slots, 8 per rank; with
    # interleaving down to one layer per chunk (vp 8) the paper's "only the embedding" chunk.
    r2, _, _ = run_main(main, base + ["-vp", "8", "--global-batch-size", "16",
                                      "--account-for-embedding-in-pipeline-split",
                                      "--account-for-loss-in-pipeline-split"])
    assert [x["stage_layers"] for x in r2["stages"]] == [7] + [8] * 14 + [7]
    counts = pipeline_chunk_layers(num_layers=126, pp=16, vp=8, embedding_in_split=True,
                                   loss_in_split=True)
    assert counts[0][0] == 0 and counts[-1][-1] == 0
    assert all(n == 1 for row in counts for n in row if n != 0)


def _megatron_offset(L, pp, vp, first, last, rank, chunk):
    """Megatron-LM get_transformer_layer_offset (megatron/core/transformer/transformer_layer.py),
    uneven branch, transcribed: with vp,
      offset = vp_stage * total_virtual_chunks                      (pp_rank == 0)
      offset = vp_stage * total_virtual_chunks + first // vp
               + middle_pipeline_rank * (middle // vp // middle_pipeline_stages)   (otherwise)
    where total_virtual_chunks = first//vp + middle//vp + last//vp (0 for an unset edge) and
    middle_pipeline_rank = pp_rank - 1 when first is set. Without vp (vp = 1) the same reduces
    to middle_pipeline_rank * (middle // middle_stages) + first."""
    f, la = first or 0, last or 0
    middle = L - f - la
    mid_stages = pp - (first is not None) - (last is not None)
    total = f // vp + middle // vp + la // vp
    if rank == 0:
        return chunk * total
    mrank = rank if first is None else rank - 1
    return chunk * total + f // vp + mrank * (middle // vp // mid_stages if mid_stages else 0)


@pytest.mark.parametrize("L,pp,vp,first,last", [
    (61, 4, 1, 13, 16), (61, 4, 1, 14, 15), (61, 4, 1, 13, None), (61, 4, 1, None, 13),
    (126, 16, 1, 7, 7), (62, 4, 2, 14, 16), (30, 3, 2, 8, 10), (61, 2, 1, 30, 31)])
def test_layer_placement_matches_megatron_offsets(L, pp, vp, first, last):
    # Independent check: our cumulative placement against Megatron's closed-form layer offsets
    # (above) and its per-stage count (transformer_block.py get_num_layers_to_build: the stated
    # count on the first/last rank, (L - first - last) / middle stages elsewhere, / vp per chunk).
    counts = pipeline_chunk_layers(num_layers=L, pp=pp, vp=vp, first=first, last=last)
    seen = []
    for rank in range(pp):
        idx = stage_layers(num_layers=L, pp=pp, vp=vp, stage=rank, chunk_layers=counts)
        per_chunk = len(idx) // vp
        for chunk in range(vp):
            got = idx[chunk * per_chunk:(chunk + 1) * per_chunk]
            off = _megatron_offset(L, pp, vp, first, last, rank, chunk)
            assert got == list(range(off, off + per_chunk)), (rank, chunk)
        seen += idx
    assert sorted(seen) == list(range(L))


@pytest.mark.parametrize("L,pp,vp,emb,loss", [(127, 4, 1, 1, 0), (126, 16, 8, 1, 1), (30, 4, 2, 1, 1),
                                              (15, 4, 2, 0, 1), (32, 4, 1, 0, 0)])
def test_account_for_flags_match_megatron_offsets(L, pp, vp, emb, loss):
    # Megatron-LM get_transformer_layer_offset, account-for branch: n = (L + emb + loss) // pp
    # slots per rank, offset = vp_stage * (L+emb+loss)//vp + pp_rank * n//vp, minus 1 unless this
    # is the very first chunk (pp_rank 0, vp_stage 0) when the embedding is counted; and
    # get_num_layers_to_build removes one layer from the first (last) chunk for the embedding (loss).
    n = (L + emb + loss) // pp
    counts = pipeline_chunk_layers(num_layers=L, pp=pp, vp=vp, embedding_in_split=bool(emb),
                                   loss_in_split=bool(loss))
    for rank in range(pp):
        idx = stage_layers(num_layers=L, pp=pp, vp=vp, stage=rank, chunk_layers=counts)
        pos = 0
        for chunk in range(vp):
            size = n // vp - (emb if rank == 0 and chunk == 0 else 0) \
                - (loss if rank == pp - 1 and chunk == vp - 1 else 0)
            off = chunk * ((L + emb + loss) // vp) + rank * (n // vp)
            off -= emb if (rank, chunk) != (0, 0) else 0
            assert idx[pos:pos + size] == list(range(off, off + size)), (rank, chunk)
            pos += size
        assert pos == len(idx)


def test_explicit_even_split_changes_nothing():
    # Stating the even split (8 + 8 on 32 layers, pp 4) must give the unflagged numbers exactly.
    a = ["-l", "32", "-hs", "2048", "-a", "16", "-pp", "4", "--num-gpus", "8", "--json"]
    r0, _, _ = run_main(main, a)
    r1, _, _ = run_main(main, a + ["--decoder-first-pipeline-num-layers", "8",
                                   "--decoder-last-pipeline-num-layers", "8"])
    assert [x["total_bytes"] for x in r0["stages"]] == [x["total_bytes"] for x in r1["stages"]]
    assert r0["total_bytes"] == r1["total_bytes"]


def test_uneven_split_per_stage_memory_follows_layers():
    # Moving layers off the first stage (which holds pp micro-batches in flight, 1F1B) lowers its
    # activations and weights; the report's heaviest stage is the max over the list.
    a = ["-l", "61", "-hs", "2048", "-a", "16", "-pp", "4", "--num-gpus", "4", "--json"]
    r1, _, _ = run_main(main, a + ["--decoder-first-pipeline-num-layers", "13",
                                   "--decoder-last-pipeline-num-layers", "16"])
    r2, _, _ = run_main(main, a + ["--decoder-first-pipeline-num-layers", "16",
                                   "--decoder-last-pipeline-num-layers", "15"])
    s1, s2 = r1["stages"][0], r2["stages"][0]
    assert s1["activations_layers_bytes"] / s2["activations_layers_bytes"] == pytest.approx(13 / 16)
    assert s1["in_flight_microbatches"] == 4
    assert s1["weights_bytes"] < s2["weights_bytes"]
    assert r1["total_bytes"] < r2["total_bytes"]


def test_inference_uses_the_uneven_split():
    r, _, _ = run_main(main, DSV3[:4] + ["--num-gpus", "4", "--infer", "--json",
                                         "--decoder-first-pipeline-num-layers", "13"])
    assert [x["stage_layers"] for x in r["stages"]] == [13, 16, 16, 16]
    assert r["kv_cache_bytes_per_token"] == 70272 // 61 * 16  # 1152 B per token per layer (MLA)


@settings(max_examples=60, deadline=None)
@given(L=st.integers(1, 200), pp=st.integers(2, 16), vp=st.sampled_from([1, 2, 3, 4]))
def test_every_suggested_split_is_accepted(L, pp, vp):
    # Whatever split the refusal suggests, the script (Megatron's rules) accepts and it places
    # all L layers, every stage a positive multiple of vp.
    sug = suggest_pipeline_split(num_layers=L, pp=pp, vp=vp)
    if sug is None:
        return
    f, q, la = sug
    assert f > 0 and la > 0 and f % vp == 0 and la % vp == 0 and q % vp == 0
    argv = ["-l", str(L), "-hs", "64", "-a", "1", "-pp", str(pp), "-vp", str(vp),
            "--num-gpus", str(pp), "--decoder-first-pipeline-num-layers", str(f),
            "--decoder-last-pipeline-num-layers", str(la), "--json"]
    if vp > 1:
        argv += ["--global-batch-size", str(pp)]
    r, _, _ = run_main(main, argv)
    layers = [x["stage_layers"] for x in r["stages"]]
    assert sum(layers) == L and layers[1:-1] == [q] * (pp - 2)


# Megatron-LM's rules, as its code states them (megatron/core/transformer/transformer_config.py,
# TransformerConfig.__post_init__, and megatron/training/arguments.py validate_args):
#   "num_layers_in_first_pipeline_stage must be larger than 0"
#   "number of layers at first stage: {n} must be divisible by virtual pipeline parallel degree"
#   "number of layers at middle stage: {L'} must be divisible by the middle pipeline model
#    parallel size {p'}"   (L' = L - first - last over the p' stages without a stated count)
#   "number of layers on each middle pipeline rank: {n} must be divisible by virtual pipeline
#    parallel degree"
#   "num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage cannot be set at
#    the same time with account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split"
#   "Number of layers should be divisible by the pipeline-model-parallel size" (L + 1 per account-for
#    flag, when neither first nor last is given)
UNEVEN = ["-l", "61", "-pp", "4", "--num-gpus", "4"]
BAD_SPLITS = [
    (UNEVEN + ["--decoder-first-pipeline-num-layers", "0"], "must be positive"),
    (UNEVEN + ["--decoder-last-pipeline-num-layers", "-3"], "must be positive"),
    (UNEVEN + ["--decoder-first-pipeline-num-layers", "13", "--decoder-last-pipeline-num-layers",
               "15"], "not divisible by the 2 middle pipeline stages"),
    (UNEVEN + ["--decoder-first-pipeline-num-layers", "14"], "not divisible by the 3 middle"),
    (["-l", "62", "-pp", "4", "--num-gpus", "4", "-vp", "2", "--decoder-first-pipeline-num-layers",
      "13", "--decoder-last-pipeline-num-layers", "15"], "not divisible by --virtual-pipeline-size 2"),
    (["-l", "60", "-pp", "4", "--num-gpus", "4", "-vp", "2", "--decoder-first-pipeline-num-layers",
      "16", "--decoder-last-pipeline-num-layers", "14"], "15 layers on each middle pipeline stage"),
    (UNEVEN + ["--decoder-first-pipeline-num-layers", "13", "--account-for-loss-in-pipeline-split"],
     "cannot be combined"),
    (["-l", "61", "--decoder-first-pipeline-num-layers", "13"], "--pipeline-parallel-size > 1"),
    (UNEVEN + ["--decoder-first-pipeline-num-layers", "40", "--decoder-last-pipeline-num-layers",
               "30"], "exceed --num-layers 61"),
    (["-l", "61", "-pp", "2", "--num-gpus", "2", "--decoder-first-pipeline-num-layers", "30",
      "--decoder-last-pipeline-num-layers", "30"], "must add up to --num-layers 61"),
    (UNEVEN + ["--account-for-embedding-in-pipeline-split"], "= 62 is not divisible by pp*vp"),
    (["-l", "61", "-pp", "4", "-vp", "2", "--num-gpus", "4"], "no uneven split"),
]


@pytest.mark.parametrize("argv,msg", BAD_SPLITS)
def test_bad_pipeline_split_exits_2_with_one_line(argv, msg):
    code, err = exit_code_and_stderr(main, argv)
    assert code == 2
    assert msg in err and err.count("\n") == 1, err


# ----------------------------------------------------------------------------------------------
# The layer list: per-layer caches, weights and the report's first lines
# ----------------------------------------------------------------------------------------------
import argparse  # noqa: E402

import calc_transformer_mem as mem  # noqa: E402
from test_layer_spec import FIXTURES as HF_SLIDING  # noqa: E402  transformers' layer types, recorded


@pytest.mark.parametrize("s,tp", [(8192, 1), (3000, 1), (5000, 2), (8192, 8)])
def test_gemma2_kv_cache_is_the_sum_over_transformers_layer_types(s, tp):
    # Brute force, not our formula: Gemma-2-9B (42 layers, 8 kv heads of 256, bf16); which layers
    # slide (window 4096) is transformers' own Gemma2Config layer_types, recorded in
    # test_layer_spec.py. A sliding layer keeps min(context, 4096) tokens (the window: what
    # transformers' sliding cache keeps allocated after a decode step, hf_cache_bytes.json), a global one all;
    # each token holds K and V: 2 x kv x d x 2 B, kv/tp heads per rank (one when kv < tp).
    sliding, window = HF_SLIDING["gemma-2-9b"]
    kv_rank = max(8 // tp, 1)
    want = sum(min(s, window if i in sliding else s) * 2 * kv_rank * 256 * 2 for i in range(42))
    r, out, _ = run_main(main, ["--hf_model_name_or_path", config_path("gemma-2-9b"), "--infer",
                                "-s", str(s), "-o", "0", "-tp", str(tp), "--num-gpus", str(tp)])
    assert r["kv_cache_bytes"] == want
    assert r["kv_cache_bytes_per_token"] == 42 * 2 * kv_rank * 256 * 2
    kinds = {k["attention"]: (k["layers"], k["cached_tokens"]) for k in r["kv_cache_layer_kinds"]}
    assert kinds == {"gqa sliding(4096)": (21, min(s, 4096)), "gqa": (21, s)}
    assert "21 x gqa sliding(4096)" in out


# Gemma 3n (transformers 5.23.0 Gemma3nTextConfig defaults, as in google/gemma-3n-E4B): 35 layers,
# layer i sliding (window 512) unless (i + 1) % 5 == 0; num_kv_shared_layers 15, so kv_sharing_modes
# marks layers 20..34 "reuse": they build no k_proj/v_proj and never update the cache
# (modeling_gemma3n.py Gemma3nTextAttention). 2 kv heads of 256, hidden 2048, 8 query heads.
GEMMA3N_TYPES = ["full" if (i + 1) % 5 == 0 else "sliding" for i in range(35)]
GEMMA3N_FLAGS = ["-l", "35", "-hs", "2048", "-a", "8", "--num-kv-heads", "2", "--head-dim", "256",
                 "--ffn-hidden-size", "16384", "--swiglu", "--norm", "rmsnorm", "--no-bias",
                 "-v", "262400"]


_RESOLVE = mem.resolve_model_spec


def _patch_spec(monkeypatch, mutate):
    """Make the script's resolve_model_spec return a spec changed by `mutate`, its layer list
    rebuilt: for layer kinds no config reader of the block produces yet (kv-shared layers, the
    DeepSeek-V3.2 indexer), so main() runs them end to end."""
    def patched(args, defaults=None):
        spec, notes = _RESOLVE(args, defaults)
        mutate(spec)
        spec["layers"] = mem.build_layers(spec)
        return spec, notes
    monkeypatch.setattr(mem, "resolve_model_spec", patched)


def _gemma3n(spec, shared=True):
    spec["layer_types"], spec["sliding_window"] = list(GEMMA3N_TYPES), 512
    spec["layer_overrides"] = {i: {"attention": {"kv_shared": True, "kv_proj": 0}} for i in range(20, 35)
                               if shared}


@pytest.mark.parametrize("s,tp", [(4096, 1), (300, 1), (4096, 2), (4096, 4)])
def test_kv_shared_layers_cache_nothing(monkeypatch, s, tp):
    # Brute force over the layers transformers builds: layers 0..19 cache K and V (2 x kv x 256 x 2 B
    # per token, kv/tp heads per rank, one replicated head at tp 4), sliding ones at most 512 tokens
    # (the window W, as transformers' sliding cache keeps allocated after a decode step);
    # layers 20..34 reuse the cache of the last layer of their type and hold none.
    _patch_spec(monkeypatch, _gemma3n)
    r, out, _ = run_main(mem.main, GEMMA3N_FLAGS + ["--infer", "-s", str(s), "-o", "0", "-tp", str(tp),
                                                   "--num-gpus", str(tp)])
    kv_rank = max(2 // tp, 1)
    want = sum(min(s, 512 if GEMMA3N_TYPES[i] == "sliding" else s) * 2 * kv_rank * 256 * 2
               for i in range(20))
    assert r["kv_cache_bytes"] == want
    assert r["kv_cache_bytes_per_token"] == 20 * 2 * kv_rank * 256 * 2
    assert "15 layers reuse another layer's cache and hold none" in " ".join(r["assumptions"])
    assert "kv-shared" in out


def test_kv_shared_layers_have_no_kv_weights(monkeypatch):
    # Gemma3nTextAttention builds no k_proj/v_proj on a kv-shared layer: 15 x 2 x (h x kv d) fewer
    # weights than the same stack without sharing; LoRA cannot adapt the k/v it lacks.
    _patch_spec(monkeypatch, _gemma3n)
    shared, _, _ = run_main(mem.main, GEMMA3N_FLAGS + ["--json"])
    q, _, _ = run_main(mem.main, GEMMA3N_FLAGS + ["--finetune", "lora", "--lora-targets", "k,v", "--json"])
    _patch_spec(monkeypatch, lambda spec: _gemma3n(spec, shared=False))
    plain, _, _ = run_main(mem.main, GEMMA3N_FLAGS + ["--json"])
    q0, _, _ = run_main(mem.main, GEMMA3N_FLAGS + ["--finetune", "lora", "--lora-targets", "k,v", "--json"])
    assert plain["total_params"] - shared["total_params"] == 15 * 2 * 2048 * 2 * 256
    assert plain["params_per_gpu"] - shared["params_per_gpu"] == 15 * 2 * 2048 * 2 * 256
    r = 16  # default --lora-rank
    assert q0["trainable_params_per_gpu"] - q["trainable_params_per_gpu"] == 15 * 2 * r * (2048 + 2 * 256)


def _dsv32_indexer(spec):
    # DeepSeek-V3.2-Exp config.json: index_n_heads 64, index_head_dim 128, index_topk 2048, on
    # DeepSeek-V3's shape (the V3.2 reader is not in the block yet).
    spec.update(index_n_heads=64, index_head_dim=128, index_topk=2048)


@pytest.mark.parametrize("tp", [1, 8])
def test_indexer_key_cache_is_its_own_line(monkeypatch, tp):
    # transformers 5.23's DeepSeek-V3.2 cache (tests/fixtures/hf_cache_bytes.json, "deepseek-v3.2"):
    # each layer's indexer keys are [batch, T, index_head_dim = 128] in the model dtype (bf16 here:
    # 2 B each) beside MLA's latent (512 + 64 per token per layer). The indexer's key projection
    # is one head, not split by tensor parallelism, so every tp rank holds all of it. (DeepSeek's
    # reference inference code stores these keys in FP8 with a per-token scale, 132 B per token
    # per layer: --kv-bits 8 is the closer setting for it.)
    _patch_spec(monkeypatch, _dsv32_indexer)
    argv = ["--hf_model_name_or_path", config_path("deepseek-v3"), "--infer", "-s", "4096", "-o", "0",
            "-b", "2", "-tp", str(tp), "--num-gpus", str(tp)]
    r, out, _ = run_main(mem.main, argv)
    assert r["indexer_cache_bytes"] == 61 * 128 * 2 * 4096 * 2
    assert r["kv_cache_bytes"] == 61 * (512 + 64) * 2 * 4096 * 2
    assert r["indexer_cache_bytes_per_token"] == 61 * 128 * 2
    assert "Indexer key cache" in out
    assert r["total_bytes"] == pytest.approx(r["weights_bytes"] + r["kv_cache_bytes"] + r["indexer_cache_bytes"]
                                             + r["activations_bytes"] + r["overhead_bytes"])


def test_deepseek_v3_stages_hold_the_exact_hf_total():
    # Source: tests/fixtures/hf_param_counts.json, transformers' DeepseekV3ForCausalLM on the meta
    # device: 671,026,404,352 weights (3 dense + 58 MoE layers). Split over 4 uneven pipeline stages
    # at tp = ep = 1 the stages hold each weight exactly once; with ep = 8 each rank holds 1/8 of
    # the routed experts, so non-expert + 8 x expert per stage sums to the same total.
    total = 671_026_404_352
    r, _, _ = run_main(main, DSV3 + ["--decoder-first-pipeline-num-layers", "13",
                                     "--decoder-last-pipeline-num-layers", "16"])
    assert r["total_params"] == total
    assert sum(x["params_per_gpu"] for x in r["stages"]) == total
    e, _, _ = run_main(main, ["--hf_model_name_or_path", config_path("deepseek-v3"), "-pp", "4",
                              "--num-gpus", "32", "-ep", "8", "-s", "4096", "-ca", "--json",
                              "--decoder-first-pipeline-num-layers", "13",
                              "--decoder-last-pipeline-num-layers", "16"])
    assert sum(x["params_per_gpu"] - x["expert_params_per_gpu"] + 8 * x["expert_params_per_gpu"]
               for x in e["stages"]) == total
    # routed experts only on MoE layers: the first stage's 13 layers hold the 3 dense ones, so its
    # experts are those of 10 MoE layers against 16 on the second stage
    assert e["stages"][0]["expert_params_per_gpu"] * 16 == e["stages"][1]["expert_params_per_gpu"] * 10


def test_report_states_mode_recompute_and_batch():
    _, out, _ = run_main(main, ["-l", "4", "-hs", "1024", "-a", "16"])
    mode = out.splitlines()[1]
    assert mode.startswith("Mode: training") and "recompute none" in mode
    assert "-ca" in mode and "turns full recompute ON" in mode and "micro-batch per GPU" in mode
    _, out, _ = run_main(main, ["-l", "4", "-hs", "1024", "-a", "16", "-ca", "-b", "3"])
    assert "recompute full (-ca given" in out.splitlines()[1] and "-b 3 is the micro-batch" in out
    _, out, _ = run_main(main, ["-l", "4", "-hs", "1024", "-a", "16", "--recompute", "selective"])
    assert "recompute selective (--recompute selective" in out.splitlines()[1]
    _, out, _ = run_main(main, ["-l", "4", "-hs", "1024", "-a", "16", "--infer", "-s", "100", "-o", "28"])
    assert out.splitlines()[1].startswith("Mode: inference (--infer)") and "context 128 tokens" in out


def test_spec_warnings_reach_report_json_and_stderr(tmp_path):
    # An unknown model_type is read Llama-style with a warning from the block's reader: the report
    # shows it as a WARNING: line near the top, --json carries it and stderr says it then, once;
    # without --json the report alone says it (issue 32: warnings once, not twice).
    cfg = {"model_type": "my_llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r, out, err = run_main(main, ["--hf_model_name_or_path", str(path)])
    assert r["warnings"] and "my_llama" in r["warnings"][0]
    assert out.splitlines()[2].startswith("WARNING: model_type 'my_llama'")
    assert "warning" not in err
    j, out, err = run_main(main, ["--hf_model_name_or_path", str(path), "--json"])
    assert json.loads(out)["warnings"] == r["warnings"] and err.count("warning: model_type 'my_llama'") == 1
    assert "layer_kinds" in j["model"] and "layers" not in j["model"]  # spec_summary, no raw list


# --- checkpoint weight formats (quantization_config) -------------------------------------------
@pytest.mark.parametrize("name,card_gib", [("gpt-oss-20b", 12.8), ("gpt-oss-120b", 60.8)])
def test_mxfp4_checkpoint_weights_match_the_model_card(name, card_gib):
    # Source: OpenAI, "gpt-oss-120b & gpt-oss-20b Model Card" (Aug 2025), checkpoint sizes 12.8 GiB
    # and 60.8 GiB. Setup: the published config.json (quantization_config mxfp4; attention, router,
    # embedding and head left in bf16), --infer, no --weight-bits: experts at 4 bits + one 8-bit
    # scale per 32 (OCP MX v1.0) = 4.25 bits, everything else 16. Tolerance: the card's rounding
    # (0.1 GiB) plus 0.1 GiB.
    r, out, _ = run_main(main, ["--hf_model_name_or_path", config_path(name), "--infer", "-s", "1024",
                                "-o", "1", "--json"])
    assert abs(r["weights_bytes"] / 2**30 - card_gib) <= 0.15
    assert r["config"]["checkpoint_format"]["method"] == "mxfp4"
    # --weight-bits overrides the checkpoint's format: 16 bits everywhere
    r16, _, _ = run_main(main, ["--hf_model_name_or_path", config_path(name), "--infer", "-s", "1024",
                                "-o", "1", "--weight-bits", "16", "--json"])
    assert r16["weights_bytes"] == 2 * r16["params_per_gpu"]


def test_fp8_block_checkpoint_counts_its_scales():
    # DeepSeek-V3.2's config: fp8 e4m3 with 128 x 128 weight blocks, one fp32 scale each, so
    # 8 + 32 / 16384 bits per layer weight; embeddings, head and norms stay 16-bit.
    r, _, _ = run_main(main, ["--hf_model_name_or_path", config_path("deepseek-v3.2"), "--infer",
                              "-s", "1024", "-o", "1", "-tp", "8", "--num-gpus", "8", "--json"])
    fmt = r["config"]["checkpoint_format"]
    assert fmt == {"method": "fp8", "linear_bits": 8 + 32 / 16384, "expert_bits": 8 + 32 / 16384}


# Llama 3.3 70B's shape (the fields the source below checks: 80 layers, hidden 8192, 64 heads, 8 kv
# heads, vocab 128256; intermediate 28672 and untied embeddings as Meta's release)
_LLAMA33_70B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
                "intermediate_size": 28672, "num_hidden_layers": 80, "num_attention_heads": 64,
                "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
                "tie_word_embeddings": False, "rope_theta": 500000.0}
_NVFP4 = {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16, "exclude_modules": ["lm_head"]}


@pytest.mark.parametrize("layout", ["sidecar", "config"])
def test_modelopt_nvfp4_checkpoint_bytes_match_the_published_index(tmp_path, layout):
    # Source: nvidia/Llama-3.3-70B-Instruct-NVFP4 at revision ec8feebb970caeb572f375eb1767b92475e99d84,
    # as a public deployment script pins and checks it: hf_quant_config.json {quant_algo NVFP4,
    # group_size 16, kv_cache_quant_algo FP8, lm_head in exclude_modules}, model.safetensors.index.json
    # metadata.total_size = 42,709,045,632 bytes (9 shards). Setup: that shape, the quantization either
    # as ModelOpt's hf_quant_config.json beside config.json or inline as quantization_config
    # {quant_method modelopt}; --infer, no --weight-bits: every layer matrix e2m1 + one E4M3 scale per 16
    # (4.5 bits), embeddings and head bf16. Tolerance 1e-6: what is left (4,480 B) is the two fp32
    # per-tensor scales of each of the 560 linears, which the bits-per-weight count leaves out.
    cfg = dict(_LLAMA33_70B)
    if layout == "sidecar":
        (tmp_path / "hf_quant_config.json").write_text(json.dumps({"producer": {"name": "modelopt"},
                                                                   "quantization": _NVFP4}))
    else:
        cfg["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
                                      "kv_cache_quant_algo": "FP8", "ignore": ["lm_head"]}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r, _, _ = run_main(main, ["--hf_model_name_or_path", str(tmp_path), "--infer", "-s", "1024", "-o", "1",
                              "--json"])
    assert r["config"]["checkpoint_format"] == {"method": "modelopt NVFP4", "linear_bits": 4.5, "expert_bits": 4.5,
                                                "kv_cache_format": "FP8"}
    assert r["weights_bytes"] == pytest.approx(42_709_045_632, rel=1e-6)
    assert r["warnings"] == []


def test_modelopt_kv_cache_format_is_reported_not_applied(tmp_path, capsys):
    # kv_cache_quant_algo FP8 says what the serving stack may store the cache as (TensorRT-LLM follows
    # it by default); the count stays at the KV bytes asked for, and the report says which
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({"quantization": _NVFP4}))
    (tmp_path / "config.json").write_text(json.dumps(_LLAMA33_70B))
    args = ["--hf_model_name_or_path", str(tmp_path), "--infer", "-s", "1024", "-o", "1"]
    _, out16, _ = run_main(main, args)
    _, out8, _ = run_main(main, args + ["--kv-cache-bytes-per-val", "1"])
    r16, _, _ = run_main(main, args + ["--json"])
    r8, _, _ = run_main(main, args + ["--kv-cache-bytes-per-val", "1", "--json"])
    assert "KV cache format is FP8 (kv_cache_quant_algo), counted here at 2 B/element" in out16
    assert "--kv-cache-bytes-per-val 1" in out16 and "--kv-cache-bytes-per-val 1" not in out8
    assert r8["kv_cache_bytes"] == pytest.approx(r16["kv_cache_bytes"] / 2)
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({"quantization": dict(_NVFP4, kv_cache_quant_algo=None)}))
    r, out, _ = run_main(main, args + ["--json"])
    assert "kv_cache_format" not in r["config"]["checkpoint_format"]


def test_modelopt_formats_and_what_is_not_modelled(tmp_path):
    def fmt(quant):
        (tmp_path / "config.json").write_text(json.dumps(dict(_LLAMA33_70B, quantization_config=quant)))
        r, _, _ = run_main(main, ["--hf_model_name_or_path", str(tmp_path), "--infer", "-s", "64", "-o", "1",
                                  "--json"])
        return r["config"].get("checkpoint_format"), r["warnings"]
    mo = {"quant_method": "modelopt"}
    assert fmt(dict(mo, quant_algo="FP8"))[0]["linear_bits"] == 8
    assert fmt(dict(mo, quant_algo="FP8_PB_WO"))[0]["linear_bits"] == 8 + 32 / 16384
    assert fmt(dict(mo, quant_algo="W4A16_NVFP4", group_size=16))[0]["linear_bits"] == 4.5
    assert fmt(dict(mo, quant_algo="INT4_AWQ", group_size=128))[0]["linear_bits"] == 4.125
    # attention left out ("ignore" patterns as ModelOpt writes them): only the MLP matrices at 4.5 bits
    f, _ = fmt(dict(mo, quant_algo="NVFP4", ignore=["lm_head", "model.layers.*.self_attn*"]))
    assert (f["linear_bits"], f["expert_bits"]) == (16, 4.5)
    f, w = fmt(dict(mo, quant_algo="MIXED_PRECISION"))
    assert f is None and any("MIXED_PRECISION" in x and "16 bits" in x for x in w)


class _HubError(Exception):
    """What huggingface_hub raises for an HTTP answer: the response with its status code."""
    def __init__(self, status):
        super().__init__(f"HTTP {status}")
        self.response = type("Response", (), {"status_code": status})()


def _fake_hub(monkeypatch, tmp_path, *, cached, sidecar_status=200):
    """huggingface_hub as the hub path sees it, for a repo holding config.json and ModelOpt's
    hf_quant_config.json (the layout of nvidia/*-NVFP4): both in the cache, or neither and fetched
    (the sidecar's fetch answering sidecar_status). Returns the files fetched."""
    pytest.importorskip("transformers")
    import huggingface_hub
    (tmp_path / "config.json").write_text(json.dumps(_LLAMA33_70B))
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({"producer": {"name": "modelopt"},
                                                               "quantization": _NVFP4}))
    fetched = []

    def download(repo_id, filename, **kw):
        fetched.append(filename)
        if filename == "hf_quant_config.json" and sidecar_status != 200:
            raise _HubError(sidecar_status)
        return str(tmp_path / filename)
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache",
                        lambda repo_id, filename, **kw: str(tmp_path / filename) if cached else None)
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", lambda *a, **kw: object())
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    return fetched


@pytest.mark.parametrize("cached", [True, False], ids=["in-the-cache", "fetched"])
def test_a_hub_id_reads_modelopts_hf_quant_config_json(monkeypatch, tmp_path, cached):
    # nvidia/Llama-3.3-70B-Instruct-NVFP4's format is in hf_quant_config.json alone (config.json has
    # no quantization_config): read through a hub id as from a local folder, the published index's
    # 42,709,045,632 bytes (test above). Before, a hub id fetched config.json alone: 16 bits, silently.
    fetched = _fake_hub(monkeypatch, tmp_path, cached=cached)
    r, _, _ = run_main(main, ["--hf_model_name_or_path", "nvidia/Llama-3.3-70B-Instruct-NVFP4", "--infer",
                              "-s", "1024", "-o", "1", "--json"])
    assert r["config"]["checkpoint_format"]["method"] == "modelopt NVFP4"
    assert r["weights_bytes"] == pytest.approx(42_709_045_632, rel=1e-6)
    assert fetched == ([] if cached else ["config.json", "hf_quant_config.json"])


def test_a_hub_repo_without_hf_quant_config_json_is_read_as_stored(monkeypatch, tmp_path):
    # the hub's 404 for the sidecar: no ModelOpt format, the config as it is (16-bit weights)
    _fake_hub(monkeypatch, tmp_path, cached=False, sidecar_status=404)
    r, _, _ = run_main(main, ["--hf_model_name_or_path", "meta-llama/Llama-3.3-70B-Instruct", "--infer",
                              "-s", "64", "-o", "1", "--json"])
    assert r["config"].get("checkpoint_format") is None and r["warnings"] == []


def test_a_hub_sidecar_that_cannot_be_fetched_exits_2_in_one_line(monkeypatch, tmp_path):
    # any other answer than the file or a 404 leaves the format unknown: refused, never a guess
    _fake_hub(monkeypatch, tmp_path, cached=False, sidecar_status=503)
    code, err = exit_code_and_stderr(main, ["--hf_model_name_or_path", "nvidia/Llama-3.3-70B-Instruct-NVFP4",
                                            "--infer", "-s", "64"])
    assert code == 2 and err.count("\n") == 1 and "hf_quant_config.json" in err, err


def test_a_broken_hf_quant_config_exits_2_in_one_line(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(_LLAMA33_70B))
    (tmp_path / "hf_quant_config.json").write_text('{"producer": {"name": "modelopt"}}')
    code, err = exit_code_and_stderr(main, ["--hf_model_name_or_path", str(tmp_path), "--infer", "-s", "64"])
    assert code == 2 and "hf_quant_config.json" in err and err.count("\n") == 1, err
    # a bad field in it names that file, not config.json's quantization_config
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({"quantization": dict(_NVFP4, group_size="x")}))
    code, err = exit_code_and_stderr(main, ["--hf_model_name_or_path", str(tmp_path), "--infer", "-s", "64"])
    assert code == 2 and "hf_quant_config.json beside" in err and "group_size" in err, err


# --- hybrids: Gated DeltaNet layers (issue 15) -----------------------------------------------------

def _hf_cache_layer_bytes(run, layer_class):
    """Per-layer storage bytes of one cache-layer class in a measured transformers cache run."""
    from conftest import load_json
    entry = load_json("hf_cache_bytes.json")[run]
    out = set()
    for r in entry["runs"]:
        for phase in ("prefill", "decode"):
            out |= {x["storage_bytes"] for x in r[phase]["layers"] if x["cache_layer_class"] == layer_class}
    return out


def test_qwen35_hybrid_at_128k_against_all_attention():
    # Source: Qwen3.5-35B-A3B's published config (tests/fixtures/configs/SOURCES.md): 40 layers,
    # layer_types 3 linear_attention : 1 full_attention, 2 kv heads x head_dim 256 on the full
    # layers; transformers 5.23's cache for the same linear-layer geometry holds a constant
    # 2,162,688 B per Gated DeltaNet layer per sequence (conv window bf16 + fp32 recurrent state;
    # tests/fixtures/hf_cache_bytes.json "qwen3.5-35b-a3b", after prefill and after decode, N = 12
    # and 40). Setup: inference, batch 1, 131,072-token prompt + 1 output token, bf16 KV.
    # Tolerance: exact. The report: counted as all-attention, 10.0 GiB of KV at 128k.
    cfg = json.load(open(config_path("qwen3.5-35b-a3b")))["text_config"]
    types_ = cfg["layer_types"]
    n_full, n_lin = types_.count("full_attention"), types_.count("linear_attention")
    assert (n_full, n_lin) == (10, 30)
    res, _, _ = run_main(main, ["--hf_model_name_or_path", config_path("qwen3.5-35b-a3b"), "--infer",
                                "-s", "131072", "-b", "1", "--json"])
    ctx = 131073
    per_tok = 2 * cfg["num_key_value_heads"] * cfg["head_dim"] * 2
    assert res["kv_cache_bytes"] == n_full * per_tok * ctx
    (state_layer,) = _hf_cache_layer_bytes("qwen3.5-35b-a3b", "LinearAttentionLayer")
    assert res["state_cache_bytes"] == n_lin * state_layer
    alt = res["all_attention"]
    assert alt["kv_cache_bytes"] == len(types_) * per_tok * ctx  # 10.0 GiB: the figure
    assert round(alt["kv_cache_bytes"] / 2**30, 2) == 10.0
    assert alt["kv_cache_bytes"] / res["kv_cache_bytes"] == len(types_) / n_full  # 4x: the pattern
    assert alt["saving_bytes"] == alt["total_bytes"] - res["total_bytes"]
    # the saving is the KV the 30 linear layers would hold, less their state; weights and the
    # prefill working set are the model's own in both
    assert alt["saving_bytes"] == alt["kv_cache_bytes"] - res["kv_cache_bytes"] - res["state_cache_bytes"]
    assert alt["total_bytes"] == res["total_bytes"] + alt["saving_bytes"]


def test_linear_state_does_not_grow_and_splits_over_tp():
    # Yang et al. 2024 (arXiv 2412.06464): the state is d_k x d_v per value head whatever the
    # context; vLLM shards Gated DeltaNet by heads, so each of tp ranks holds 1/tp of it.
    path = config_path("qwen3-next-80b-a3b-thinking")
    rows = {}
    for s, tp in ((4096, 1), (65536, 1), (4096, 4)):
        res, _, _ = run_main(main, ["--hf_model_name_or_path", path, "--infer", "-s", str(s), "-tp", str(tp),
                                    "--num-gpus", str(tp), "-b", "2", "--json"])
        rows[(s, tp)] = res
    assert rows[(4096, 1)]["state_cache_bytes"] == rows[(65536, 1)]["state_cache_bytes"] > 0
    assert rows[(4096, 4)]["state_cache_bytes"] * 4 == pytest.approx(rows[(4096, 1)]["state_cache_bytes"], rel=1e-3)
    # the attention layers' KV grows with the context: (65,536 + 1) / (4,096 + 1) times
    assert rows[(65536, 1)]["kv_cache_bytes"] * 4097 == rows[(4096, 1)]["kv_cache_bytes"] * 65537


def test_deepseek_v4_cache_equals_what_transformers_holds():
    # Source: transformers 5.23's DeepseekV4 caches, measured (tests/fixtures/hf_cache_bytes.json,
    # "deepseek-v4": a sliding, two compressed sparse (rate 4, indexer) and a heavily compressed
    # (rate 8) layer, window 16, bf16; after a prefill of N and N decode steps, context 2N, N = 12
    # and 40). Measured per layer: the window's storage after a decode step (K and V apart on the
    # sliding layer, one tensor on the compressed ones) + the compressor tensors' bytes. Ours: the
    # memory script's KV + indexer-key cache at -s N -o N, batch 1. Tolerance: exact.
    from conftest import FIXTURES, load_json
    entry = load_json("hf_cache_bytes.json")["deepseek-v4"]
    cfg = os.path.join(FIXTURES, entry["config_file"])
    for run in entry["runs"]:
        measured = 0
        for layer in run["decode"]["layers"]:
            t = layer["tensors"]
            measured += t["keys"]["storage_bytes"] + (
                t["values"]["storage_bytes"] if layer["cache_layer_class"] == "DynamicSlidingWindowLayer" else 0)
            measured += sum(v["bytes"] for k, v in t.items() if k not in ("keys", "values"))
        n = run["N"]
        res, _, _ = run_main(main, ["--hf_model_name_or_path", cfg, "--infer", "-s", str(n), "-o", str(n), "--json"])
        assert res["kv_cache_bytes"] + res["indexer_cache_bytes"] == measured, n


def test_deepseek_v4_full_recompute_keeps_its_hc_streams():
    # With full recompute a layer keeps only its input (Korthikanti et al. 2022, Table 2: 2 s b h
    # bytes in 16 bits); DeepSeek-V4's hyper-connections make that input hc_mult = 4 residual
    # streams (transformers' DeepseekV4 decoder layer takes and returns [b, s, hc_mult, h]).
    # Setup: published V4-Flash config, 1 GPU, -s 4096 -b 1, --recompute full. Tolerance: exact.
    r, _, _ = run_main(main, ["--hf_model_name_or_path", config_path("deepseek-v4-flash"), "-s", "4096",
                              "--recompute", "full", "--json"])
    assert r["activations_layers_bytes"] == 43 * 4096 * 1 * 4096 * 4 * 2


def test_deepseek_v4_fp4_experts_are_counted_at_their_stored_width():
    # DeepSeek-V4-Flash's config: fp8 e4m3 128 x 128 blocks for the layer matrices and expert_dtype fp4
    # for the routed experts, which transformers 5.23 (integrations/finegrained_fp8.py) stores as two
    # e2m1 values per byte with one ue8m0 (1-byte) scale per 32 weights: 4 + 8 / 32 bits.
    r, _, _ = run_main(main, ["--hf_model_name_or_path", config_path("deepseek-v4-flash"), "--infer",
                              "-s", "1024", "--json"])
    fmt = r["config"]["checkpoint_format"]
    assert fmt == {"method": "fp8", "linear_bits": 8 + 32 / 16384, "expert_bits": 4 + 8 / 32}


def test_training_only_flags_under_infer_are_stated_not_dropped():
    # -cp, --sequence-parallel and -z shape training memory; in --infer mode they change nothing, and
    # the result says so (review finding: they were ignored silently)
    r, _, _ = run_main(main, ["--infer", "-z", "3", "--sequence-parallel", "--json"])
    assert any("--sequence-parallel, -z describe training" in w for w in r["warnings"])


def test_inference_working_set_splits_routed_experts_over_etp():
    # Mixtral-8x7B (published config), -tp 2, prefill of 1,024 tokens: the widest block is the MoE,
    # k = 2 experts of f_e = 14,336 with 3 stored widths (gate|up and product, 16-bit). Each expert's
    # width splits over the expert tensor-parallel size (Megatron-LM's -etp), not over tp: -etp 1
    # keeps whole experts, twice the per-token width of -etp 2 (review finding). Exact.
    base = ["--hf_model_name_or_path", config_path("mixtral-8x7b"), "--infer", "-s", "1024", "-tp", "2",
            "--num-gpus", "2", "--json"]
    r2, _, _ = run_main(main, base)
    r1, _, _ = run_main(main, base + ["-etp", "1"])
    assert r1["activations_bytes"] - r2["activations_bytes"] == 1024 * 2 * 2 * (14336 - 14336 // 2) * 3
