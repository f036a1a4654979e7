"""Tests for calc_transformer_flops.py.

Ground truth comes from outside this project:
- PyTorch's own FLOP counter (torch.utils.flop_counter.FlopCounterMode) run on the Hugging Face
  implementations of real architectures (tests/fixtures/hf_flop_counts.json, produced by
  tests/fixtures/measure_flops.py: eager attention, real fp32/bf16 tensors on CPU, a 2-layer copy of
  the real config, batch 1, sequence 128, loss = logits.sum()).
- Narayanan et al. 2021 (arXiv:2104.04473): eq. 3, Table 1 model shapes, the sec. 5.1 training-time
  examples.
- Korthikanti et al. 2022 (arXiv:2205.05198): Table 3 shapes, Table 5 iteration times and MFU/HFU;
  the HFU erratum in NVIDIA/Megatron-LM issue #523 (confirmed there by an author).
- The EleutherAI cookbook's calc/calc_transformer_flops.py (flags, defaults, README commands).
"""
import json
import os
import sys
import types

import pytest

import calc_transformer_flops as flops_mod
import calc_transformer_params as params_mod
from calc_transformer_flops import main
from conftest import FIXTURES, config_path, exit_code_and_stderr, run_main

ROOT = os.path.dirname(FIXTURES.rstrip(os.sep).rsplit(os.sep, 1)[0])
A100_BF16_PEAK = 312e12  # NVIDIA A100 datasheet, dense BF16 tensor core; both papers divide by it


def _load_flop_counts():
    path = os.path.join(FIXTURES, "hf_flop_counts.json")
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


HF_FLOPS = _load_flop_counts()


def run(argv):
    res, out, _ = run_main(main, argv)
    return res, out


# --- PyTorch agrees ------------------------------------------------------------------------------

# Which architectures the fixture must cover (the issue names them); a missing one fails loudly.
REQUIRED = ("gpt2", "llama-3-8b", "mixtral-8x7b", "qwen1.5-moe-a2.7b", "deepseek-v2-lite")


@pytest.mark.parametrize("name", REQUIRED)
def test_required_architectures_were_measured(name):
    assert name in HF_FLOPS, f"{name} missing from tests/fixtures/hf_flop_counts.json"


GDN_RUNS = sorted(n for n, m in HF_FLOPS.items() if m.get("model_type") in ("qwen3_next", "qwen3_5_text", "olmo_hybrid"))
# families with linear-attention / state-space layers: their own tests below, each eager artefact named
LINEAR_MIXER_TYPES = ("qwen3_next", "qwen3_5_text", "olmo_hybrid", "nemotron_h", "granitemoehybrid", "falcon_h1",
                      "jamba", "lfm3", "kimi_linear", "bailing_hybrid", "mamba", "mamba2", "bamba", "lfm2", "minimax",
                      "recurrent_gemma", "zamba", "zamba2", "glm5_next_text", "xlstm",
                      "deepseek_v4")  # compressed attention: its own test too


@pytest.mark.parametrize("name", sorted(n for n, m in HF_FLOPS.items() if m.get("model_type") not in LINEAR_MIXER_TYPES))
def test_matches_pytorch_flop_counter(name):
    # Source: FlopCounterMode on transformers' <family>ForCausalLM (fixture notes give versions).
    # Setup: the exact 2-layer config the measurement used, -s seq -b batch --tokens batch*seq,
    # no recompute (-ca), --attention-flops full (eager attention computes masked scores too).
    # Tolerance: 0.1% (the bound); in practice the counts are identical, because both
    # sides count exactly the matmuls at 2 FLOPs per multiply-accumulate.
    # Two documented differences of transformers' eager code from the model as it is trained:
    # - Llama 4: Llama4TextMoe runs every token through every routed expert (a dense bmm over
    #   all E), so it is compared with -t E (top-k = E routed experts per token).
    # - DSA (DeepSeek-V3.2, GLM-5): the indexer runs under torch.no_grad, so HF's backward has
    #   no indexer term; ours trains it on a detached input (DeepSeek-AI 2025 sec. 2.1): weight
    #   gradients of its projections (1 x their measured forward) and both gradients of its
    #   scores (2 x their measured forward). The measured indexer forward is split by op in the
    #   fixture: its projections are mm's, its scores bmm's.
    m = HF_FLOPS[name]
    b, s = m["batch"], m["seq"]
    argv = ["--hf_model_name_or_path", os.path.join(FIXTURES, m["config_file"]),
            "-s", str(s), "-b", str(b), "--tokens", str(b * s), "-ca", "--attention-flops", "full",
            "--json"]
    if m.get("model_type") == "llama4_text":
        with open(os.path.join(FIXTURES, m["config_file"]), encoding="utf-8") as fh:
            argv += ["-t", str(json.load(fh)["num_local_experts"])]
    indexer_bwd = 0
    for ops in m.get("indexer", {}).get("forward_by_op", {}).values():
        indexer_bwd += ops.get("mm", 0) + 2 * ops.get("bmm", 0)
    # - Grouped convolutions (ZAYA's depthwise and per-head q/k convolutions): FlopCounterMode
    #   (torch 2.13) counts a convolution's backward as (1 + groups) x its forward, where the
    #   input and weight gradients are 2 x (checked on a lone nn.Conv1d of 64 channels: groups
    #   64 -> 65x, 8 -> 9x, 1 -> 2x; ZAYA's measured backward is exactly 1281 x its depthwise and
    #   11 x its 10-group forward per layer). The measured backward's convolution term is taken
    #   as 2 x the measured forward convolutions (for groups = 1 this changes nothing).
    # - Gemma 3n (transformers 5.24): AltUp's prediction multiplies the n residual streams by n x n
    #   coefficients per channel (a bmm, 2 n^2 h per token) and its router runs again in the
    #   correction (2 n h); both are in ours (weightless_flops), so the totals are exact.
    conv_fix = 2 * m["forward_by_op"].get("convolution", 0) - m["backward_by_op"].get("convolution_backward", 0)
    res, _ = run(argv)
    assert res["forward_flops"] == pytest.approx(m["forward_flops"], rel=1e-3)
    assert res["backward_flops"] == pytest.approx(m["backward_flops"] + indexer_bwd + conv_fix, rel=1e-3)
    assert res["model_flops"] == pytest.approx(m["forward_backward_flops"] + indexer_bwd + conv_fix, rel=1e-3)
    # Attribution: the only bmm's in these HF forwards are eager attention's Q K^T and P V.
    bmm = m["forward_by_op"].get("bmm", 0)
    parts = res["forward_breakdown_flops"]
    if name == "llama4_text":  # its expert bmm's are bmm's too
        return
    indexer_bmm = sum(ops.get("bmm", 0) for ops in m.get("indexer", {}).get("forward_by_op", {}).values())
    assert parts["indexer_scores"] == indexer_bmm
    other_bmm = 0
    if m.get("model_type") == "gemma3n_text":  # AltUp's prediction: the n streams times n x n coefficients per
        with open(os.path.join(FIXTURES, m["config_file"]), encoding="utf-8") as fh:  # channel, a bmm too
            cfg = json.load(fh)
        other_bmm = 2 * b * s * cfg["altup_num_inputs"] ** 2 * cfg["hidden_size"] * m["num_layers"]
    assert parts["attention_scores"] + parts["attention_context"] == pytest.approx(bmm - indexer_bmm - other_bmm,
                                                                                   rel=1e-3)
    if indexer_bmm:  # the indexer's measured mm's are its projections
        indexer_mm = sum(ops.get("mm", 0) for ops in m["indexer"]["forward_by_op"].values())
        assert parts["indexer_projections"] == indexer_mm


def _gdn_shape(cfg):
    Hk, Hv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
    dk, dv, K = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"], cfg["linear_conv_kernel_dim"]
    return Hk, Hv, dk, dv, K, 2 * Hk * dk + Hv * dv


@pytest.mark.parametrize("name", GDN_RUNS)
def test_gated_deltanet_matches_pytorch_flop_counter(name):
    # Source: FlopCounterMode on transformers 5.23's Qwen3NextForCausalLM / Qwen3_5ForCausalLM,
    # eager (torch_chunk_gated_delta_rule, causal_conv1d_fn's torch fallback), 2 layers (one
    # Gated DeltaNet, one full attention), fp32 CPU, sequence 128 (two chunks of 64) and 100 (the
    # last chunk padded), tests/fixtures/measure_flops.py. Tolerance: exact, after two terms that
    # the eager reference computes differently from the algorithm we count, each derived from the
    # measured shapes:
    # - the UT transform's two unit-triangular solves (torch.linalg.solve_triangular, C (C - 1)
    #   (d_k + d_v) per chunk and value head): real work, but no FlopCounterMode formula exists
    #   for that op, so the measurement has none of it;
    # - the conv: causal_conv1d_fn pads K - 1 on both sides and drops the last K - 1 outputs, so
    #   eager computes s + K - 1 positions (2 conv_dim K each) where the algorithm needs s.
    m = HF_FLOPS[name]
    s, b = m["seq"], m["batch"]
    with open(os.path.join(FIXTURES, m["config_file"]), encoding="utf-8") as fh:
        cfg = json.load(fh)
    Hk, Hv, dk, dv, K, conv_dim = _gdn_shape(cfg)
    C = params_mod.GDN_CHUNK
    chunks = -(-s // C)
    solves = Hv * chunks * C * (C - 1) * (dk + dv)
    conv_extra = 2 * conv_dim * K * (K - 1)
    assert m["forward_by_op"]["convolution"] == 2 * conv_dim * K * (s + K - 1)  # one GDN layer
    res, _ = run(["--hf_model_name_or_path", os.path.join(FIXTURES, m["config_file"]), "-s", str(s),
                  "-b", str(b), "--tokens", str(b * s), "-ca", "--attention-flops", "full", "--json"])
    parts = res["forward_breakdown_flops"]
    assert res["forward_flops"] == m["forward_flops"] + solves - conv_extra
    # Attribution: the measured bmm's are eager attention's two products plus the chunked
    # algorithm's matmuls; the measured mm's are the projections, MLP and head.
    assert parts["attention_scores"] + parts["attention_context"] + parts["state_core"] - solves \
        == m["forward_by_op"]["bmm"]
    # Backward. The matmuls (mm, bmm) take two gradients each, 2 x forward, as we count, except
    # the first chunk's two products with the initial state: transformers starts from a zero
    # tensor that needs no gradient, so torch runs one gradient matmul for each (2 C d_k d_v per
    # value head each). The measured convolution_backward is not comparable: FlopCounterMode's
    # conv_backward_flop ignores `groups` (torch/utils/flop_counter.py), so it counts the
    # depthwise conv as dense over conv_dim channels; ours is 2 x the conv's forward.
    bwd = m["backward_by_op"]
    assert bwd["convolution_backward"] > 1000 * m["forward_by_op"]["convolution"]  # the dense count
    first_chunk_zero_state = 2 * Hv * 2 * C * dk * dv
    assert bwd["mm"] == 2 * m["forward_by_op"]["mm"]
    assert bwd["bmm"] + first_chunk_zero_state == 2 * m["forward_by_op"]["bmm"]
    our_conv = 2 * conv_dim * K * s
    assert res["backward_flops"] == bwd["mm"] + bwd["bmm"] + first_chunk_zero_state + 2 * solves + 2 * our_conv


MAMBA2_RUNS = sorted(n for n, m in HF_FLOPS.items()
                     if m.get("model_type") in ("nemotron_h", "granitemoehybrid", "falcon_h1", "mamba2", "bamba",
                                                "zamba2"))


def _mamba2_shape(cfg):
    """(h, d_in, H, P, G, N, K, Q) from a Mamba-2 family's config fields (tests/fixtures/README.md)."""
    if cfg["model_type"] == "nemotron_h":
        H, P = cfg["mamba_num_heads"], cfg["mamba_head_dim"]
        return H * P, H, P, cfg["n_groups"], cfg["ssm_state_size"], cfg["conv_kernel"], cfg["chunk_size"]
    if cfg["model_type"] == "mamba2":
        H, P = cfg["num_heads"], cfg["head_dim"]
        return H * P, H, P, cfg["n_groups"], cfg["state_size"], cfg["conv_kernel"], cfg["chunk_size"]
    if cfg["model_type"] == "zamba2":
        H, P = cfg["n_mamba_heads"], cfg["mamba_headdim"]
        return H * P, H, P, cfg["mamba_ngroups"], cfg["mamba_d_state"], cfg["mamba_d_conv"], cfg["chunk_size"]
    d_in = cfg.get("mamba_d_ssm") or int(cfg["mamba_expand"] * cfg["hidden_size"])
    H = cfg["mamba_n_heads"]
    P = cfg["mamba_d_head"] if cfg["mamba_d_head"] != "auto" else d_in // H
    return d_in, H, P, cfg["mamba_n_groups"], cfg["mamba_d_state"], cfg["mamba_d_conv"], cfg["mamba_chunk_size"]


@pytest.mark.parametrize("name", MAMBA2_RUNS)
def test_mamba2_matches_pytorch_flop_counter(name):
    # Source: FlopCounterMode on transformers 5.23's NemotronH / GraniteMoeHybrid / FalconH1
    # ForCausalLM, eager (torch_forward: mamba2_chunk_scan, causal_conv1d_fn's torch fallback),
    # eager attention and experts, fp32 CPU, 2 layers, sequence 128 (one SSD chunk) or 300 (two,
    # the second padded), tests/fixtures/measure_flops.py. Ours counts the chunked SSD algorithm
    # of Dao & Gu 2024 (arXiv 2405.21060 sec. 6, Listing 1) as mamba_ssm's kernels run it. The
    # eager port differs in three places, each computed here from the measured shapes
    # (tolerance: exact after them):
    # - C B^T: eager repeats B and C from G groups to H heads first, so it runs 2 c H Q^2 N where
    #   the algorithm needs 2 c G Q^2 N;
    # - the state pass between chunks: eager does it as one dense (c + 1) x (c + 1) product,
    #   2 H (c + 1)^2 P N, where the recurrence is one multiply-add per state element and chunk,
    #   2 c H P N;
    # - the conv: eager computes s + K - 1 positions (padding K - 1 on both sides), we count s.
    m = HF_FLOPS[name]
    s, b = m["seq"], m["batch"]
    with open(os.path.join(FIXTURES, m["config_file"]), encoding="utf-8") as fh:
        cfg = json.load(fh)
    d_in, H, P, G, N, K, Q = _mamba2_shape(cfg)
    res, _ = run(["--hf_model_name_or_path", os.path.join(FIXTURES, m["config_file"]), "-s", str(s),
                  "-b", str(b), "--tokens", str(b * s), "-ca", "--attention-flops", "full", "--json"])
    # (Zamba 2, transformers 5.24: 3 layers, a Mamba-2 layer and two hybrid layers running the shared block, each
    # with its Mamba-2 mixer: the same three artefacts on all three, sequence 128 in one padded chunk of 256.)
    n_mamba = sum(1 for k in res["layer_kinds"] for _ in range(k["layers"]) if "mamba2" in k["attention"])
    assert n_mamba == 1 or cfg["model_type"] in ("falcon_h1", "mamba2", "zamba2")
    n_mamba = cfg.get("num_hidden_layers", 2) if cfg["model_type"] in ("falcon_h1", "mamba2", "zamba2") else 1
    c = -(-s // Q)
    conv_dim = d_in + 2 * G * N
    eager_minus_ours = n_mamba * (2 * c * Q * Q * N * (H - G) + 2 * H * P * N * ((c + 1) ** 2 - c)
                                  + 2 * conv_dim * K * (K - 1))
    assert m["forward_by_op"]["convolution"] == n_mamba * 2 * conv_dim * K * (s + K - 1)
    assert res["forward_flops"] == m["forward_flops"] - eager_minus_ours
    parts = res["forward_breakdown_flops"]
    assert (parts["attention_scores"] + parts["attention_context"] + parts["state_core"]
            + n_mamba * (2 * c * Q * Q * N * (H - G) + 2 * H * P * N * ((c + 1) ** 2 - c))
            == m["forward_by_op"]["bmm"])
    # Backward: every matmul takes its two gradients (mm and bmm exactly 2 x forward); the
    # measured convolution_backward is FlopCounterMode's dense count (it ignores groups).
    bwd = m["backward_by_op"]
    assert bwd["mm"] == 2 * m["forward_by_op"]["mm"]
    assert bwd["convolution_backward"] > 100 * m["forward_by_op"]["convolution"]
    measured_bmm_bwd_ratio = bwd["bmm"] / m["forward_by_op"]["bmm"]
    assert 1.9 < measured_bmm_bwd_ratio <= 2.0
    assert res["backward_flops"] == 2 * res["forward_flops"]


@pytest.mark.parametrize("name", sorted(n for n, m in HF_FLOPS.items()
                                        if m.get("model_type") in ("jamba", "lfm3", "mamba", "lfm2",
                                                                   "recurrent_gemma", "zamba")))
def test_mamba1_and_short_conv_match_pytorch_flop_counter(name):
    # Source: FlopCounterMode on transformers 5.23's JambaForCausalLM / Lfm3ForCausalLM, eager
    # (mamba_selective_scan's per-token loop, causal_conv1d_fn's torch fallback), eager attention
    # and experts, fp32 CPU, 2 layers, sequence 128 (tests/fixtures/measure_flops.py). Tolerance:
    # exact after the eager artefacts, each from the measured shapes:
    # - the conv: eager computes s + K - 1 positions (padding K - 1 on both sides), we count s;
    # - Mamba-1's scan: FlopCounterMode sees only the read-out y = C h (a bmm, 2 E N per token); the
    #   state update h = exp(dt A) h + dt B x is elementwise to it; ours counts its multiply-add,
    #   2 E N per token (Gu & Dao 2023 sec. 3.3; the decay itself is not counted, like a norm).
    m = HF_FLOPS[name]
    s, b = m["seq"], m["batch"]
    with open(os.path.join(FIXTURES, m["config_file"]), encoding="utf-8") as fh:
        cfg = json.load(fh)
    res, _ = run(["--hf_model_name_or_path", os.path.join(FIXTURES, m["config_file"]), "-s", str(s),
                  "-b", str(b), "--tokens", str(b * s), "-ca", "--attention-flops", "full", "--json"])
    # (Zamba, transformers 5.24: 3 layers, a Mamba layer and two hybrid layers running the shared block, all
    # three with Mamba; its x_proj and dt_proj run per Mamba head as bmm's, E (R + 2N) + R E per token.)
    n = {"mamba": 2, "zamba": 3}.get(cfg["model_type"], 1)  # mixer layers of the 2 (Mamba: both; Zamba: 3 of 3)
    if cfg["model_type"] in ("jamba", "mamba", "zamba"):
        proj = 0
        if cfg["model_type"] in ("jamba", "zamba"):
            E, N, K = int(cfg["mamba_expand"] * cfg["hidden_size"]), cfg["mamba_d_state"], cfg["mamba_d_conv"]
            if cfg["model_type"] == "zamba":
                R = cfg["mamba_dt_rank"]
                proj = 2 * s * (E * (R + 2 * N) + R * E)
        else:
            E, N, K = cfg["intermediate_size"], cfg["state_size"], cfg["conv_kernel"]
        conv_dim, update = E, 2 * s * E * N
        assert m["forward_by_op"]["bmm"] - (res["forward_breakdown_flops"]["attention_scores"]
                                            + res["forward_breakdown_flops"]["attention_context"]) \
            == n * (2 * s * E * N + proj)
    elif cfg["model_type"] == "recurrent_gemma":  # Griffin's recurrent block: a conv over the W-wide x branch
        conv_dim, K, update = cfg["lru_width"], cfg["conv1d_width"], 0
    else:
        conv_dim, K, update = cfg["hidden_size"], cfg["conv_L_cache"], 0
    assert m["forward_by_op"]["convolution"] == n * 2 * conv_dim * K * (s + K - 1)
    assert res["forward_flops"] == m["forward_flops"] + n * (update - 2 * conv_dim * K * (K - 1))
    bwd = m["backward_by_op"]
    # every linear's two gradients (RecurrentGemma's biased linears run as addmm forward, mm backward)
    assert bwd["mm"] == 2 * (m["forward_by_op"]["mm"] + m["forward_by_op"].get("addmm", 0))
    if cfg["model_type"] == "zamba":  # its bmm's (attention, scan read-out, x_proj, dt_proj): two gradients each
        assert bwd["bmm"] == 2 * m["forward_by_op"]["bmm"]
    assert bwd["convolution_backward"] > 100 * m["forward_by_op"]["convolution"]  # dense count (groups ignored)


@pytest.mark.parametrize("name", sorted(n for n, m in HF_FLOPS.items() if m.get("model_type") in (
    "kimi_linear", "bailing_hybrid", "glm5_next_text")))
def test_kda_matches_pytorch_flop_counter(name):
    # (Also transformers 5.24's BailingHybridForCausalLM: KDA with full-rank decay and gate
    # projections, and an MLA layer with a per-head gate; the same eager artefacts. And GLM-5-Next's
    # text model with a head (no causal-LM class: measure_flops.py's TextModelWithHead): KDA + dense,
    # an MLA layer whose indexer pools its keys over index_kpool positions (its gate h -> d_I an mm,
    # its scores over the s / P pools two bmm's, under no_grad) + MoE, hyper-connections.)
    # Source: FlopCounterMode on transformers 5.23's KimiLinearForCausalLM, eager
    # (chunk_kimi_delta_attention's torch fallback, chunk 64), eager attention and experts, fp32
    # CPU, 2 layers (KDA + dense MLP, NoPE MLA + MoE), sequence 128 (tests/fixtures/measure_flops.py).
    # Tolerance: exact after the eager artefacts, from the measured shapes:
    # - KDA's decay sits inside the d_k contraction of its two C x C matrices (the UT transform's
    #   and q k^T), so eager builds them by broadcast-multiply and sum, which FlopCounterMode does not
    #   see (2 C^2 d_k each per chunk and head), nor the forward substitution ((C-1) C (2C-1) / 3);
    #   ours counts both (Kimi Team 2025, arXiv 2510.26692);
    # - the conv: eager computes s + K - 1 positions, we count s.
    m = HF_FLOPS[name]
    s, b = m["seq"], m["batch"]
    with open(os.path.join(FIXTURES, m["config_file"]), encoding="utf-8") as fh:
        cfg = json.load(fh)
    H, d, K = cfg["linear_num_heads"], cfg["linear_head_dim"], cfg["linear_conv_kernel_dim"]
    C = params_mod.GDN_CHUNK
    chunks = -(-s // C)
    unseen = H * chunks * (4 * C * C * d + (C - 1) * C * (2 * C - 1) // 3)
    conv_extra = 2 * 3 * H * d * K * (K - 1)
    assert m["forward_by_op"]["convolution"] == 2 * 3 * H * d * K * (s + K - 1)
    res, _ = run(["--hf_model_name_or_path", os.path.join(FIXTURES, m["config_file"]), "-s", str(s),
                  "-b", str(b), "--tokens", str(b * s), "-ca", "--attention-flops", "full", "--json"])
    assert res["forward_flops"] == m["forward_flops"] + unseen - conv_extra
    parts = res["forward_breakdown_flops"]
    # GLM-5-Next's hyper-connections mix the hc streams per token as a bmm (hc x hc x h, two modules a layer)
    hc_bmm = 2 * b * s * cfg["hc_mult"] ** 2 * cfg["hidden_size"] * 2 * m["num_layers"] if "hc_mult" in cfg else 0
    assert parts["attention_scores"] + parts["attention_context"] + parts["indexer_scores"] + parts["state_core"] \
        - unseen + hc_bmm == m["forward_by_op"]["bmm"]
    indexer = m.get("indexer", {}).get("forward_by_op", {}).values()
    assert parts["indexer_scores"] == sum(ops.get("bmm", 0) for ops in indexer)
    assert parts["indexer_projections"] == sum(ops.get("mm", 0) for ops in indexer)
    assert m["backward_by_op"]["mm"] == 2 * (m["forward_by_op"]["mm"] - parts["indexer_projections"])


@pytest.mark.parametrize("name", sorted(n for n, m in HF_FLOPS.items() if m.get("model_type") == "deepseek_v4"))
def test_deepseek_v4_matches_pytorch_flop_counter(name):
    # Source: FlopCounterMode on transformers 5.23's DeepseekV4ForCausalLM (eager, the only backend),
    # eager experts, fp32 CPU, 2 layers (compressed sparse attention + hash-routed MoE, heavily
    # compressed attention + top-k MoE; hyper-connections), sequence 256, past the window of 128
    # (tests/fixtures/measure_flops.py). Ours under --attention-flops full counts what eager computes:
    # each query against all s window keys and all floor(s / m) compressed entries (the window,
    # causality and the indexer's top-k are masks). Tolerance: exact after two named terms:
    # - forward: the indexer sums its H_I heads' scores with per-head weights elementwise in eager
    #   ((relu(scores) * w).sum), which the counter does not see; ours counts it, 2 H_I per pair,
    #   as for DeepSeek-V3.2's indexer, where eager runs it as a bmm;
    # - backward: transformers runs the indexer under no_grad; ours trains it on a detached input
    #   (as DeepSeek-V3.2 sec. 2.1 does), weight gradients of its projections (1 x their forward)
    #   and both gradients of its scores (2 x).
    m = HF_FLOPS[name]
    s, b = m["seq"], m["batch"]
    with open(os.path.join(FIXTURES, m["config_file"]), encoding="utf-8") as fh:
        cfg = json.load(fh)
    HI = cfg["index_n_heads"]
    rate = cfg["compress_rates"]["compressed_sparse_attention"]
    weighted_sum = 2 * HI * s * (s // rate)
    res, _ = run(["--hf_model_name_or_path", os.path.join(FIXTURES, m["config_file"]), "-s", str(s),
                  "-b", str(b), "--tokens", str(b * s), "-ca", "--attention-flops", "full", "--json"])
    parts = res["forward_breakdown_flops"]
    ind_ops = next(iter(m["indexer"]["forward_by_op"].values()))
    assert parts["indexer_projections"] == ind_ops["mm"]
    assert parts["indexer_scores"] == ind_ops["bmm"] + weighted_sum
    assert res["forward_flops"] == m["forward_flops"] + weighted_sum
    assert m["indexer"]["backward_flops"] == {}  # no_grad in transformers
    assert res["backward_flops"] == m["backward_flops"] + parts["indexer_projections"] + 2 * parts["indexer_scores"]
    # the attention core: the eager bmm's less the indexer's, the grouped o_a projection's (a bmm over
    # o_groups, 2 s a d r_o per layer) and the hyper-connections' comb^T @ streams (two per layer,
    # 2 s hc^2 h each) are Q K^T and P V over s x (s + floor(s / m))
    L, hc, h = 2, cfg["hc_mult"], cfg["hidden_size"]
    o_a = L * 2 * s * cfg["num_attention_heads"] * cfg["head_dim"] * cfg["o_lora_rank"]
    comb = L * 2 * 2 * s * hc * hc * h
    assert parts["attention_scores"] + parts["attention_context"] == m["forward_by_op"]["bmm"] - ind_ops["bmm"] \
        - o_a - comb


def test_gated_deltanet_decode_is_constant_in_context():
    # Yang et al. 2024 (arXiv 2412.06464 eq. 10): a decode step updates a d_k x d_v state per value
    # head and reads it out; its cost does not depend on how many tokens came before.
    name = config_path("qwen3.5-35b-a3b-text")
    rows = {}
    for ctx in (1024, 131072):
        res, _ = run(["--hf_model_name_or_path", name, "--decode-context", str(ctx), "--json"])
        rows[ctx] = {k["attention"]: k["decode_flops_per_token"] for k in res["layer_kinds"]}
    gdn = [k for k in rows[1024] if k.startswith("gdn")]
    att = [k for k in rows[1024] if not k.startswith("gdn")]
    assert gdn and att
    assert rows[1024][gdn[0]] == rows[131072][gdn[0]]
    assert rows[131072][att[0]] > rows[1024][att[0]]


def test_json_is_exactly_the_returned_dict():
    m = HF_FLOPS["gpt2"]
    res, out = run(["--hf_model_name_or_path", os.path.join(FIXTURES, m["config_file"]),
                    "-s", "128", "-b", "1", "--tokens", "128", "--json"])
    printed = json.loads(out)
    assert printed == json.loads(json.dumps(res))
    for key in ("forward_flops", "backward_flops", "recompute_flops", "model_flops", "hardware_flops"):
        assert isinstance(printed[key], (int, float))


def test_prefill_is_the_measured_forward_minus_the_head_at_earlier_positions():
    # Source: the same FlopCounterMode forward (logits at all 128 positions). Our prefill keeps
    # the logits of the last prompt position only, so it is 127 lm_head rows (2 h V each) less.
    m = HF_FLOPS["llama-3-8b"]
    res, _ = run(["--hf_model_name_or_path", os.path.join(FIXTURES, m["config_file"]),
                  "--prompt-tokens", "128", "--attention-flops", "full"])
    h, V = res["model"]["hidden_size"], res["model"]["vocab_size"]
    assert res["inference"]["prefill_flops"] == m["forward_flops"] - 127 * 2 * h * V


# --- papers agree --------------------------------------------------------------------------------

# Narayanan et al. 2021, Table 1: (params in billions, heads, hidden, layers, global batch).
# All models: V = 51,200, s = 2048.
NARAYANAN_TABLE1 = [
    (1.7, 24, 2304, 24, 512), (3.6, 32, 3072, 30, 512), (7.5, 32, 4096, 36, 512),
    (18.4, 48, 6144, 40, 1024), (39.1, 64, 8192, 48, 1536), (76.1, 80, 10240, 60, 1792),
    (145.6, 96, 12288, 80, 2304), (310.1, 128, 16384, 96, 2160), (529.6, 128, 20480, 105, 2520),
    (1008.0, 160, 25600, 128, 3072),
]


@pytest.mark.parametrize("p_billion,a,h,L,B", NARAYANAN_TABLE1)
def test_narayanan_eq3_hardware_flops_per_iteration(p_billion, a, h, L, B):
    # Source: Narayanan et al. 2021 sec. 5.1 eq. 3, F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)),
    # FLOPs per iteration with full activation recomputation, all s x s attention scores counted.
    # Setup: Table 1 shapes, one iteration (--tokens B*s), cookbook default recompute (full).
    # Tolerance: 1% (issue); eq. 3 is exact for this architecture, so ours equals it.
    s, V = 2048, 51200
    res, _ = run(["-l", str(L), "-hs", str(h), "-a", str(a), "-v", str(V), "-s", str(s),
                  "-b", str(B), "--tokens", str(B * s), "--attention-flops", "full"])
    eq3 = 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
    assert res["recompute"] == "full"
    assert res["hardware_flops"] == pytest.approx(eq3, rel=1e-2)
    assert res["hardware_flops_per_iteration"] == pytest.approx(eq3, rel=1e-9)
    # Model FLOPs drop the recompute pass: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) (Korthikanti eq. 7).
    assert res["model_flops"] == pytest.approx(72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h)),
                                               rel=1e-9)
    # The shapes are the paper's: Table 1's parameter column (their eq. 2: tied embeddings,
    # learned positions), to its 0.1 B rounding.
    res_p, _ = run(["-l", str(L), "-hs", str(h), "-a", str(a), "-v", str(V), "-s", str(s),
                    "--tied-embeddings", "--position-embedding", "learned"])
    assert res_p["total_params"] / 1e9 == pytest.approx(p_billion, abs=0.06)


@pytest.mark.parametrize("L,h,a,tokens,gpus,tflops,days", [
    (96, 12288, 96, 300e9, 1024, 140, 34),    # GPT-3 175B
    (128, 25600, 160, 450e9, 3072, 163, 84),  # 1T model
])
def test_narayanan_training_time_examples(L, h, a, tokens, gpus, tflops, days):
    # Source: Narayanan et al. 2021 sec. 5.1: end-to-end time ~ 8 T P / (n X): GPT-3 175B on 300B
    # tokens, 1024 A100s at X = 140 TFLOP/s -> ~34 days; 1T on 450B tokens, 3072 A100s at 163
    # TFLOP/s -> ~84 days. X is achieved hardware FLOP/s (recompute included), so the setup is
    # --hfu X/312 on a 312 TFLOP/s peak. Tolerance 3%: 8TP drops the attention (s/6h) and logit
    # terms that we count (ours is 2.4% / 1.2% longer); the 8TP rule itself is checked below.
    res, _ = run(["-l", str(L), "-hs", str(h), "-a", str(a), "-v", "51200", "-s", "2048",
                  "--tokens", str(tokens), "--num-gpus", str(gpus), "--peak-tflops", "312",
                  "--hfu", str(tflops / 312)])
    assert res["time"]["wall_time_days"] == pytest.approx(days, rel=0.03)
    assert res["time"]["wall_time_days"] > days * 0.995  # we count more than 8TP, never less
    paper_rule_days = 8 * tokens * res["total_params"] / (gpus * tflops * 1e12) / 86400
    assert paper_rule_days == pytest.approx(days, rel=0.02)


# Korthikanti et al. 2022: Table 3 shapes (heads, hidden, layers, GPUs = global batch, micro batch 1
# except 22B: 8 GPUs, global batch 4), V = 51,200, s = 2048; Table 5 end-to-end iteration time of
# "present work" (sequence parallelism + selective recompute) and the MFU / HFU it reports.
KORTHIKANTI = [
    # name, a, h, L, gpus, global batch, iteration s, MFU %, HFU %
    ("22B", 64, 6144, 48, 8, 4, 1.10, 41.5, 43.7),
    ("175B", 96, 12288, 96, 64, 64, 13.75, 51.4, 52.8),
    ("530B", 128, 20480, 105, 280, 280, 37.83, 56.0, 57.0),
    ("1T", 160, 25600, 128, 512, 512, 71.49, 56.3, 57.0),
]


@pytest.mark.parametrize("name,a,h,L,gpus,B,iter_s,mfu,hfu", KORTHIKANTI)
def test_korthikanti_table5_mfu_hfu(name, a, h, L, gpus, B, iter_s, mfu, hfu):
    # Source: Korthikanti et al. 2022 Table 5 (and Table 3 for the setup), A100 peak 312 TFLOP/s.
    # MFU = our model FLOPs per iteration / (iteration time x GPUs x peak): within 0.5 points.
    # HFU: the paper's hardware-FLOPs formula has 1 + s/(3h), which adds 12 B L s^2 h for the
    # selective recompute; the recompute is the attention core forward, 4 B L s^2 h (their own
    # sec. 6.3 text), and an author confirmed the formula is wrong (NVIDIA/Megatron-LM issue
    # #523: the term should be 2s/(9h)). So our HFU is below the printed one by 8 B L s^2 h worth
    # (0.5-1.4 points), and adding that surplus back reproduces the printed HFU within 0.5 points.
    s = 2048
    res, _ = run(["-l", str(L), "-hs", str(h), "-a", str(a), "-v", "51200", "-s", str(s),
                  "-b", str(B), "--tokens", str(B * s), "--recompute", "selective",
                  "--attention-flops", "full"])
    per_s = iter_s * gpus * A100_BF16_PEAK
    assert 100 * res["model_flops_per_iteration"] / per_s == pytest.approx(mfu, abs=0.5)
    ours_hfu = 100 * res["hardware_flops_per_iteration"] / per_s
    surplus = 8 * B * L * s * s * h
    assert 100 * (res["hardware_flops_per_iteration"] + surplus) / per_s == pytest.approx(hfu, abs=0.5)
    assert 0.3 < hfu - ours_hfu < 1.5


# --- cookbook compatibility ------------------------------------------------------------------------

def test_cookbook_readme_gpt3_command():
    # Cookbook calc/README.md: "python calc_transformer_flops.py -l 96 -hs 12288". The cookbook's own
    # arithmetic for a dense MHA model with its defaults (V 51200, s 2048, 300e9 tokens, recompute
    # on): 4 x 2 x L T (3 h^2 + 2 s h + h^2 + 8 h^2) + 6 T h V. For this model it is exact, so ours
    # must agree to rounding.
    res, out = run(["-l", "96", "-hs", "12288"])
    L, h, T, s, V = 96, 12288, 300e9, 2048, 51200
    cookbook = 4 * 2 * L * T * (3 * h * h + 2 * s * h + h * h + 8 * h * h) + 6 * T * h * V
    assert res["hardware_flops"] == pytest.approx(cookbook, rel=1e-12)
    assert "Hardware FLOPs" in out and "attention FLOPs=full (default)" in out


def test_cookbook_readme_moe_command():
    # Cookbook calc/README.md: "python calc_transformer_flops.py -l 12 -hs 768 --moe -e 512". Every
    # script here takes experts in every layer by default (issue 32: the cookbook's flops script
    # alone took -ei 2); -ei 2 gives the Fairseq-MoE 15B layout it is named after.
    res, out = run(["-l", "12", "-hs", "768", "--moe", "-e", "512"])
    spec = res["model"]
    assert spec["num_experts"] == 512 and spec["topk"] == 1 and spec["moe_layers"] == list(range(12))
    parts = res["forward_breakdown_flops"]
    assert parts.get("dense_mlp", 0) == 0
    # the router adds 2 h E per token in each of the 12 layers
    assert parts["router"] == 12 * 2 * 768 * 512 * 300_000_000_000
    assert "6*N_active*D" in out
    res2, _ = run(["-l", "12", "-hs", "768", "--moe", "-e", "512", "-ei", "2"])
    assert res2["model"]["moe_layers"] == [1, 3, 5, 7, 9, 11] and round(res2["total_params"] / 1e9, 1) == 14.6
    # top-1 expert of width 4h costs what a dense MLP does
    assert res2["forward_breakdown_flops"]["routed_experts"] == res2["forward_breakdown_flops"]["dense_mlp"]


def test_moe_example_is_one_answer_in_every_script(capsys):
    # params, flops and mem give the cookbook MoE example one parameter count (issue 32)
    import calc_transformer_mem as M
    import calc_transformer_params as P
    argv = ["-l", "12", "-hs", "768", "--moe", "-e", "512", "--json"]
    counts = []
    for tool_main in (P.main, M.main):
        tool_main(argv)
        out = json.loads(capsys.readouterr().out)
        counts.append(out.get("total_params") or out["params"]["total_params"])
    res, _ = run(argv[:-1])
    assert counts == [res["total_params"]] * 2  # one answer; the count itself is tested against
    # transformers for every architecture in test_layer_families.py


def test_cookbook_flags_and_defaults():
    res, _ = run([])
    assert (res["tokens"], res["sequence_length"], res["batch_size"]) == (300_000_000_000, 2048, 1)
    assert res["recompute"] == "full"  # cookbook: checkpoint_activations defaults to True
    spec = res["model"]
    assert (spec["vocab_size"], spec["hidden_size"], spec["num_layers"]) == (51200, 6144, 44)
    assert res["iterations"] == 300e9 / 2048
    res_ca, _ = run(["-ca"])
    assert res_ca["recompute"] == "none" and res_ca["recompute_flops"] == 0
    res_i, _ = run(["-i"])
    assert res_i["model_flops"] == res_i["forward_flops"] == res["forward_flops"]
    assert res_i["backward_flops"] == 0 and res_i["hardware_flops"] == res_i["forward_flops"]
    # Cookbook spellings: -kv, -ff (float accepted), -nl, -t, -ei, -e, --tokens 1e12
    res_k, _ = run(["-kv", "0.125", "-ff", "2.6875", "-nl", "3", "--tokens", "1e12", "-b", "4"])
    # the default shape has the cookbook mem script's 64 heads: -kv 0.125 gives 8 kv heads
    assert res_k["model"]["num_kv_heads"] == 8 and res_k["model"]["ffn_hidden_size"] == 16512
    assert res_k["iterations"] == 1e12 / (4 * 2048)


def test_ffn_hidden_size_is_honoured():
    # The cookbook parses --ffn-hidden-size but never uses it; here it sets f.
    a, _ = run(["-l", "2", "-hs", "1024", "--ffn-hidden-size", "1000", "-ca", "--tokens", "2048"])
    assert a["forward_breakdown_flops"]["dense_mlp"] == 2 * 2 * 2 * 1024 * 1000 * 2048


# --- conventions -----------------------------------------------------------------------------------

def test_causal_counts_pairs_on_or_below_the_diagonal():
    full, _ = run(["-l", "2", "-hs", "512", "-s", "1024", "--tokens", "1024", "-ca"])
    causal, _ = run(["-l", "2", "-hs", "512", "-s", "1024", "--tokens", "1024", "-ca",
                     "--attention-flops", "causal"])
    f, c = full["forward_breakdown_flops"], causal["forward_breakdown_flops"]
    assert c["attention_scores"] * 1024 * 1024 == f["attention_scores"] * (1024 * 1025 // 2)
    assert c["attention_projections"] == f["attention_projections"]
    assert causal["attention_flops"] == "causal" and not causal["attention_flops_default"]


def test_recompute_modes():
    base = ["-l", "4", "-hs", "1024", "-s", "4096", "--tokens", "4096"]
    none, _ = run(base + ["--recompute", "none"])
    sel, _ = run(base + ["--recompute", "selective"])
    full, _ = run(base + ["--recompute", "full"])
    p = none["forward_breakdown_flops"]
    assert none["model_flops"] == sel["model_flops"] == full["model_flops"] == 3 * none["forward_flops"]
    assert sel["recompute_flops"] == p["attention_scores"] + p["attention_context"]
    assert full["recompute_flops"] == none["forward_flops"] - p["output_head"]


def test_decode_steps_sum_to_a_causal_prefill():
    # With the causal convention, a prefill of P tokens with logits at every position is the sum
    # of P single-token decode steps at contexts 1..P (each query attends to the keys at or
    # before it). Both sides are ours, but they are computed by different functions.
    args = ["-l", "3", "-hs", "512", "-a", "8", "--num-kv-heads", "2", "--swiglu", "-v", "1000"]
    P = 37
    seq, _ = run(args + ["-s", str(P), "--tokens", str(P), "--attention-flops", "causal", "-ca"])
    total = 0
    for c in range(1, P + 1):
        r, _ = run(args + ["--decode-context", str(c)])
        total += r["inference"]["decode_flops_per_token"]
    assert total == seq["forward_flops"]
    # and generation: prefill + (o-1) decode steps at contexts P+1 .. P+o-1
    g, _ = run(args + ["--prompt-tokens", str(P), "--output-tokens", "5", "--attention-flops", "causal"])
    steps = 0
    for c in range(P + 1, P + 5):
        r, _ = run(args + ["--decode-context", str(c)])
        steps += r["inference"]["decode_flops_per_token"]
    assert g["inference"]["generate_flops"] == g["inference"]["prefill_flops"] + steps


def test_rule_of_thumb_fails_where_expected():
    # Long sequence: 6ND misses the attention term; the attention-aware rule closes most of it.
    long, _ = run(["-l", "32", "-hs", "4096", "-s", "131072", "--tokens", "131072", "-ca"])
    assert long["model_flops"] / long["six_n_d_flops"] > 1.5
    assert long["model_flops"] / long["six_n_d_plus_attention_flops"] == pytest.approx(1, abs=0.02)
    # MoE: 6 N_total D is far off; 6 N_active D is close.
    moe, _ = run(["-l", "12", "-hs", "768", "--moe", "-e", "64", "-ei", "1", "-ca", "-s", "1024"])
    assert moe["model_flops"] / moe["six_n_d_flops"] < 0.1
    assert moe["model_flops"] / moe["six_n_active_d_flops"] == pytest.approx(1, abs=0.15)
    # Large vocabulary on a small model: N counts the input embedding, whose lookup is no matmul.
    vocab, _ = run(["-l", "2", "-hs", "512", "-v", "256000", "-ca", "-s", "1024"])
    assert vocab["model_flops"] / vocab["six_n_d_flops"] < 0.6


# --- time and hardware.py --------------------------------------------------------------------------

def _fake_hardware(monkeypatch, peak_bf16=312e12):
    mod = types.ModuleType("hardware")

    def get_accelerator(name):
        if name.lower() != "a100":
            raise KeyError(f"unknown accelerator {name!r}; nearest: a100")
        return {"name": "a100-80gb", "peak_flops_per_s": {"bf16": peak_bf16, "fp32": 19.5e12}}

    mod.get_accelerator = get_accelerator
    monkeypatch.setitem(sys.modules, "hardware", mod)


def test_gpu_lookup_gives_the_same_time_as_peak_tflops(monkeypatch):
    _fake_hardware(monkeypatch)
    args = ["-l", "96", "-hs", "12288", "--num-gpus", "1024", "--cost-per-gpu-hour", "2"]
    a, out = run(args + ["--gpu", "a100"])
    b, _ = run(args + ["--peak-tflops", "312"])
    assert a["time"]["wall_time_s"] == pytest.approx(b["time"]["wall_time_s"])
    assert a["time"]["mfu"] == flops_mod.DEFAULT_MFU and a["time"]["mfu_default"]
    assert a["time"]["cost"] == pytest.approx(2 * a["time"]["gpu_hours"])
    assert "MFU 0.400 (default)" in out


@pytest.mark.parametrize("argv,msg", [
    (["--tokens", "0"], "--tokens"),
    (["--tokens", "1.5"], "--tokens"),
    (["-s", "0"], "--sequence-length"),
    (["-b", "-1"], "--batch-size"),
    (["--prompt-tokens", "0"], "--prompt-tokens"),
    (["--output-tokens", "-1"], "--output-tokens"),
    (["--decode-context", "0"], "--decode-context"),
    (["--num-gpus", "0", "--peak-tflops", "1"], "--num-gpus"),
    (["-ca", "--recompute", "full"], "contradicts"),
    (["--mfu", "0"], "--mfu"),
    (["--mfu", "1.5"], "--mfu"),
    (["--hfu", "2"], "--hfu"),
    (["--mfu", "0.4", "--hfu", "0.5"], "not both"),
    (["--gpu", "a100", "--peak-tflops", "312"], "not both"),
    (["--peak-tflops", "-3"], "--peak-tflops"),
    (["--cost-per-gpu-hour", "-1"], "--cost-per-gpu-hour"),
    (["-hs", "768", "-a", "7"], "not divisible"),
    (["--moe", "-e", "4", "-t", "8"], "--topk"),
    (["-l", "0"], "--num-layers"),
    (["--hf_model_name_or_path", "/nonexistent/config.json"], "not found"),
    (["--attention-flops", "half"], "invalid choice"),
])
def test_bad_input_exits_2(argv, msg):
    code, err = exit_code_and_stderr(main, argv)
    assert code == 2 and msg in err and "Traceback" not in err


def test_gpu_without_hardware_py_exits_2(monkeypatch):
    monkeypatch.setitem(sys.modules, "hardware", None)  # import hardware -> ImportError
    code, err = exit_code_and_stderr(main, ["--gpu", "h200"])  # (h100's record is built in)
    assert code == 2 and "--peak-tflops" in err


def test_unknown_gpu_and_missing_dtype_exit_2(monkeypatch):
    _fake_hardware(monkeypatch)
    code, err = exit_code_and_stderr(main, ["--gpu", "b300"])
    assert code == 2 and "nearest: a100" in err
    code, err = exit_code_and_stderr(main, ["--gpu", "a100", "--dtype", "fp4"])
    assert code == 2 and "fp4" in err


# --- both built scripts carry llmcalc/model's code: the same spec and counts ------------------------

GRID = [
    [], ["-l", "12", "-hs", "768"], ["-l", "96", "-hs", "12288"],
    ["-l", "32", "-hs", "4096", "-a", "32", "--num-kv-heads", "8", "--swiglu", "--ffn-hidden-size", "14336",
     "--norm", "rmsnorm", "--no-bias", "-v", "128256"],
    ["-l", "8", "-hs", "1024", "--moe", "-e", "16", "-t", "2", "-ei", "2"],
    ["-l", "6", "-hs", "2048", "-a", "16", "--kv-lora-rank", "512", "--qk-nope-head-dim", "128",
     "--qk-rope-head-dim", "64", "--v-head-dim", "128", "--q-lora-rank", "1536", "--moe", "-e", "64",
     "-t", "6", "--num-shared-experts", "2", "--moe-ffn-hidden-size", "1408", "--num-dense-layers", "1"],
    ["-l", "4", "-hs", "512", "-kv", "0.25", "-ff", "2.5", "--tied-embeddings",
     "--position-embedding", "learned"],
] + [["--hf_model_name_or_path", config_path(n)] for n in
     ("gpt2", "llama-3-8b", "mixtral-8x7b", "qwen1.5-moe-a2.7b", "deepseek-v2-lite", "deepseek-v3",
      "gemma-2-9b", "opt-350m", "falcon-7b", "qwen3-30b-a3b", "bloom-560m")]


@pytest.mark.parametrize("argv", GRID)
def test_model_block_agrees_with_params_script(argv):
    # Same arguments through each built script's copy of the package's model modules: identical
    # spec and breakdown (both scripts take the same model defaults since issue 32).
    pa = params_mod.build_parser().parse_known_args(argv)[0]
    fa = flops_mod.build_parser().parse_known_args(argv)[0]
    sp, _ = params_mod.resolve_model_spec(vars(pa))
    sf, _ = flops_mod.resolve_model_spec(vars(fa))
    assert sp == sf
    assert params_mod.param_breakdown(sp) == flops_mod.param_breakdown(sf)


@pytest.mark.parametrize("name", ("mixtral-8x7b", "qwen1.5-moe-a2.7b", "deepseek-v2-lite", "qwen3-30b-a3b"))
def test_moe_config_layout_ignores_the_cookbook_expert_interval(name):
    # A script's -ei default (the cookbook flops script's 2, once) never overrides a config's MoE layout: the
    # parameter count through this script equals PyTorch's count of the real model.
    with open(os.path.join(FIXTURES, "hf_param_counts.json"), encoding="utf-8") as fh:
        expected = json.load(fh)[name]["total"]
    res, _ = run(["--hf_model_name_or_path", config_path(name)])
    assert res["total_params"] == expected


# --- layer kinds: sliding, chunked, DSA top-k, MoE per layer, zero experts ------------------------
# These check the per-kind counts against brute-force enumerations written here (which (q, k)
# pairs a mask keeps, which keys a decode query reads, which experts a router can pick), not
# against the formulas they test. Layer kinds no config reader builds yet (chunked, DSA, zero
# experts) are made by editing a resolved spec's layer dicts, the way a reader would build them.

GEMMA2 = config_path("gemma-2-9b")  # layer 0 sliding (window 4096), layer 1 full; HF config


def _brute_pairs(s, keep):
    """Query-key pairs (q, k), 0 <= k <= q < s, that a mask keeps, counted one by one."""
    return sum(1 for q in range(s) for k in range(q + 1) if keep(q, k))


def _spec(argv):
    args = flops_mod.build_parser().parse_args(argv)
    spec, _ = flops_mod.resolve_model_spec(vars(args))
    return spec


def _relayer(spec, *, attn=None, moe=None):
    """A copy of `spec` whose attention dicts get `attn` and MoE dicts get `moe` (layers of one kind
    still share one dict, as the block builds them)."""
    memo = {}

    def new(layer):
        if id(layer) not in memo:
            memo[id(layer)] = dict(
                layer, attention=tuple(dict(a, **(attn or {})) for a in layer["attention"]),
                mlp=tuple(dict(m, **(moe or {})) if m["kind"] == "moe" else m for m in layer["mlp"]))
        return memo[id(layer)]
    return dict(spec, layers=[new(x) for x in spec["layers"]])


def _run_relayered(monkeypatch, argv, **change):
    real = flops_mod.resolve_model_spec

    def resolve(args, defaults=None):
        spec, notes = real(args, defaults)
        return _relayer(spec, **change), notes
    monkeypatch.setattr(flops_mod, "resolve_model_spec", resolve)
    return run(argv)


def _kind(res, label):
    return next(k for k in res["layer_kinds"] if k["attention"] == label)


def test_sliding_layer_under_full_convention_equals_the_model_with_sliding_off():
    # Eager attention computes every score of the s x s matrix and masks afterwards, so under
    # --attention-flops full a sliding layer costs what a full layer does (the FlopCounterMode
    # fixtures measure exactly this for eager attention). Setup: 2-layer Gemma-2-9B (sliding +
    # full), window 16 < s = 70, no recompute; --sliding-window 0 turns sliding off.
    base = ["--hf_model_name_or_path", GEMMA2, "-l", "2", "-s", "70", "--tokens", "70", "-ca",
            "--attention-flops", "full", "--json"]
    sliding, _ = run(base + ["--sliding-window", "16"])
    off, _ = run(base + ["--sliding-window", "0"])
    assert [k["attention"] for k in sliding["layer_kinds"]] == ["gqa sliding(16)", "gqa"]
    assert [(k["layers"], k["attention"]) for k in off["layer_kinds"]] == [(2, "gqa")]
    assert sliding["forward_breakdown_flops"] == off["forward_breakdown_flops"]
    assert "sliding masks included" in sliding["convention"]


def test_sliding_layer_causal_pairs_equal_a_brute_force_count():
    # Causal convention: the sliding layer scores the pairs with 0 <= q - k < W, the full layer
    # those with 0 <= q - k; the ratio of their score FLOPs is the ratio of the two counts.
    s, W = 70, 16
    res, _ = run(["--hf_model_name_or_path", GEMMA2, "-l", "2", "-s", str(s), "--tokens", str(s),
                  "-ca", "--attention-flops", "causal", "--sliding-window", str(W), "--json"])
    sw, full = _kind(res, f"gqa sliding({W})"), _kind(res, "gqa")
    brute_sw = _brute_pairs(s, lambda q, k: q - k < W)
    brute_full = _brute_pairs(s, lambda q, k: True)
    for key in ("attention_scores", "attention_context"):
        ratio = sw["forward_breakdown_flops_per_token"][key] / full["forward_breakdown_flops_per_token"][key]
        assert ratio == pytest.approx(brute_sw / brute_full, rel=1e-12)
    # and the layers' projections and MLPs are the same
    assert (sw["forward_breakdown_flops_per_token"]["dense_mlp"]
            == full["forward_breakdown_flops_per_token"]["dense_mlp"])
    assert "at most the window" in res["convention"]


@pytest.mark.parametrize("s,C", [(70, 16), (64, 16), (5, 16)])
def test_chunked_layer_pairs_equal_a_brute_force_count(monkeypatch, s, C):
    # Chunked attention (Llama 4's chunked layers): a query sees the keys of its own chunk,
    # q // C == k // C, k <= q. Causal counts those; full counts all s x s (eager masks them).
    argv = ["-l", "2", "-hs", "256", "-a", "4", "-v", "1000", "-s", str(s), "--tokens", str(s), "-ca",
            "--json"]
    full_causal, _ = run(argv + ["--attention-flops", "causal"])
    full_full, _ = run(argv + ["--attention-flops", "full"])
    chunk_causal, out = _run_relayered(monkeypatch, argv + ["--attention-flops", "causal"],
                                       attn={"span": "chunked", "chunk": C})
    chunk_full, _ = _run_relayered(monkeypatch, argv + ["--attention-flops", "full"],
                                   attn={"span": "chunked", "chunk": C})
    brute = _brute_pairs(s, lambda q, k: q // C == k // C)
    f, c = full_causal["forward_breakdown_flops"], chunk_causal["forward_breakdown_flops"]
    assert c["attention_scores"] * _brute_pairs(s, lambda q, k: True) == f["attention_scores"] * brute
    assert chunk_full["forward_breakdown_flops"] == full_full["forward_breakdown_flops"]
    assert chunk_causal["layer_kinds"][0]["attention"] == f"mha chunked({C})"
    assert "own chunk" in chunk_causal["convention"]


def _decode(spec, c):
    return flops_mod.decode_flops_per_token(spec, context=c)


@pytest.mark.parametrize("attn,visible", [
    ({"span": "sliding", "window": 16}, lambda q, k: q - k < 16),
    ({"span": "chunked", "chunk": 16}, lambda q, k: q // 16 == k // 16),
    ({}, lambda q, k: True),
])
def test_decode_keys_equal_a_brute_force_count(attn, visible):
    # A decode step at context c is the query at position c-1 over keys 0..c-1 that its mask keeps.
    # decode(c) - decode(1) = (keys(c) - 1) x the FLOPs of one key, which the full layer's
    # decode(2) - decode(1) measures; so keys(c) comes out of the script's totals alone.
    full = _spec(["-l", "3", "-hs", "256", "-a", "4", "--num-kv-heads", "2", "--swiglu", "-v", "1000"])
    spec = _relayer(full, attn=attn)
    per_key = _decode(full, 2) - _decode(full, 1)
    for c in range(1, 70):
        keys = sum(1 for k in range(c) if visible(c - 1, k))
        assert _decode(spec, c) - _decode(spec, 1) == (keys - 1) * per_key, c


DSA = {"index_heads": 64, "index_head_dim": 128, "index_topk": 8}  # DeepSeek-V3.2's indexer, k small


def test_dsa_top_k_pairs_and_indexer_scores_equal_brute_force_counts(monkeypatch):
    # DeepSeek-V3.2 sparse attention on a 1-layer DeepSeek-V3 (MLA): the indexer scores every
    # causal pair; the core attends to the top-k of them, min(q + 1, k) keys per query, under
    # causal; eager attention (full) scores all s x s in both.
    s, K = 40, DSA["index_topk"]
    argv = ["--hf_model_name_or_path", config_path("deepseek-v3"), "-l", "1", "-s", str(s),
            "--tokens", str(s), "-ca", "--json"]
    p_plain = flops_mod.param_breakdown(_spec(argv[:4]))["attention_params"]
    p_dsa = flops_mod.param_breakdown(_relayer(_spec(argv[:4]), attn=DSA))["attention_params"]
    plain_c, _ = run(argv + ["--attention-flops", "causal"])
    plain_f, _ = run(argv + ["--attention-flops", "full"])
    dsa_c, out = _run_relayered(monkeypatch, argv + ["--attention-flops", "causal"], attn=DSA)
    dsa_f, _ = _run_relayered(monkeypatch, argv + ["--attention-flops", "full"], attn=DSA)
    pc, dc, pf, df = (r["forward_breakdown_flops"] for r in (plain_c, dsa_c, plain_f, dsa_f))
    causal = _brute_pairs(s, lambda q, k: True)
    topk = sum(min(sum(1 for k in range(q + 1)), K) for q in range(s))
    assert dc["attention_scores"] * causal == pc["attention_scores"] * topk
    assert dc["attention_context"] * causal == pc["attention_context"] * topk
    assert df["attention_scores"] == pf["attention_scores"]  # eager: every score, masked or not
    assert pc["indexer_scores"] == pf["indexer_scores"] == 0
    assert dc["indexer_scores"] * s * s == df["indexer_scores"] * causal
    # The indexer projections have their own line, and the attention projections are the plain
    # model's: 2 FLOPs per weight of its matmuls, i.e. its parameters less its key LayerNorm
    # (2 d_I), from the parameter count.
    assert dc["attention_projections"] == pc["attention_projections"]
    assert dc["indexer_projections"] == s * 2 * (p_dsa - p_plain - 2 * DSA["index_head_dim"])
    assert dsa_c["layer_kinds"][0]["attention"] == "mla dsa(top8)"
    assert "indexer scores" in out and "top-k" in dsa_c["convention"]


def test_dsa_decode_reads_top_k_keys_and_the_indexer_reads_all():
    # Decode: each extra context token adds one key to the indexer, and one to the core until the
    # core reads its top-k; the difference of those two increments is one core key of the plain
    # model.
    plain = _spec(["--hf_model_name_or_path", config_path("deepseek-v3"), "-l", "2"])
    dsa = _relayer(plain, attn=DSA)
    K = DSA["index_topk"]
    step = [_decode(dsa, c + 1) - _decode(dsa, c) for c in range(1, 3 * K)]
    core_key = _decode(plain, 2) - _decode(plain, 1)
    assert set(step[:K - 1]) == {step[0]} and set(step[K - 1:]) == {step[K - 1]}
    assert step[0] - step[K - 1] == core_key


def test_moe_flops_only_on_moe_layers():
    # Source: FlopCounterMode per module on transformers' DeepseekV32ForCausalLM, 2 layers
    # (tests/fixtures/hf_flop_counts.json "deepseek_v32": layer 0 dense, layer 1 MoE with 16 routed
    # experts top-8, 1 shared expert, router over 16; s = 128). Each MLP line of ours must equal
    # the measured module: the dense MLP, the experts, the shared experts and the router (gate).
    m = HF_FLOPS["deepseek_v32"]
    mods = m["forward_by_module"]
    res, _ = run(["--hf_model_name_or_path", os.path.join(FIXTURES, m["config_file"]), "-s", "128",
                  "--tokens", "128", "-ca", "--attention-flops", "full", "--json"])
    p = res["forward_breakdown_flops"]
    assert p["dense_mlp"] == mods["model.layers.0.mlp"]
    assert p["routed_experts"] == mods["model.layers.1.mlp.experts"]
    assert p["shared_experts"] == mods["model.layers.1.mlp.shared_experts"]
    assert p["router"] == mods["model.layers.1.mlp.gate"]
    # Which layers are MoE: DeepSeek-V3's config, first_k_dense_replace 3, first 5 layers.
    with open(config_path("deepseek-v3"), encoding="utf-8") as fh:
        assert json.load(fh)["first_k_dense_replace"] == 3
    s = 128
    res, _ = run(["--hf_model_name_or_path", config_path("deepseek-v3"), "-l", "5", "-s", str(s),
                  "--tokens", str(s), "-ca", "--json"])
    assert [(k["layers"], k["first_layer"], k["mlp"].split()[0]) for k in res["layer_kinds"]] == [
        (3, 0, "dense"), (2, 3, "moe")]
    dense_only, _ = run(["--hf_model_name_or_path", config_path("deepseek-v3"), "-l", "3", "-s", str(s),
                         "--tokens", str(s), "-ca", "--json"])
    q = dense_only["forward_breakdown_flops"]
    assert q["routed_experts"] == q["shared_experts"] == q["router"] == 0
    assert dense_only["six_n_active_d_flops"] is None


def test_zero_computation_experts_cost_the_expected_real_experts(monkeypatch):
    # LongCat-Flash style: the router picks k of E real + Z zero-computation (identity) experts.
    # Under uniform routing the expected number of real experts a token runs is the average over
    # every k-subset of the E + Z, enumerated here; routed FLOPs scale by it over k.
    import itertools
    E, Z, k = 4, 2, 2
    subsets = list(itertools.combinations(range(E + Z), k))
    real = sum(sum(1 for e in sub if e < E) for sub in subsets) / len(subsets)
    argv = ["-l", "2", "-hs", "256", "-a", "4", "--swiglu", "--moe", "-e", str(E), "-t", str(k),
            "-ei", "1", "-s", "64", "--tokens", "64", "-ca", "--json"]
    plain, _ = run(argv)
    zero, _ = _run_relayered(monkeypatch, argv, moe={"zero_experts": Z})
    zp, pp = zero["forward_breakdown_flops"], plain["forward_breakdown_flops"]
    assert zp["routed_experts"] / pp["routed_experts"] == pytest.approx(real / k, rel=1e-12)
    assert zp["router"] * E == pp["router"] * (E + Z)  # the router scores all E + Z
    assert "zero-computation" in zero["convention"] and "zero-computation" not in plain["convention"]
    assert zero["layer_kinds"][0]["mlp"] == "moe 2/4+2zero"


KINDS = [{}, {"span": "sliding", "window": 16}, {"span": "chunked", "chunk": 16},
         {"span": "sliding", "window": 5, **DSA}, {"span": "chunked", "chunk": 16, **DSA}, DSA]


@pytest.mark.parametrize("attn", KINDS,
                         ids=lambda a: a.get("span", "full") + ("+dsa" if a.get("index_topk") else ""))
def test_generate_equals_a_loop_of_decode_steps(attn):
    # generate's decode part is o-1 decode steps at contexts P+1 .. P+o-1; the script sums each
    # kind's keys in closed form, so compare it with the plain loop.
    spec = _relayer(_spec(["-l", "3", "-hs", "256", "-a", "4", "--num-kv-heads", "2", "-v", "1000",
                           "--q-lora-rank", "64", "--kv-lora-rank", "32", "--qk-nope-head-dim", "16",
                           "--qk-rope-head-dim", "8", "--v-head-dim", "16"]), attn=attn)
    for P, o in ((1, 2), (7, 40), (37, 60), (16, 17)):
        prefill, decode = flops_mod.generate_flops(spec, prompt_tokens=P, output_tokens=o, attention="causal")
        assert decode == sum(_decode(spec, P + j) for j in range(1, o)), (P, o)
        for first in (1, 5, 16, 17):
            loop = [flops_mod.decode_keys_read(a, context=c) for a in spec["layers"][0]["attention"]
                    for c in range(first, first + 40)]
            got = flops_mod.decode_keys_read_sum(spec["layers"][0]["attention"][0], first_context=first,
                                                 last_context=first + 39)
            assert got == {"core": sum(x["core"] for x in loop), "indexer": sum(x["indexer"] for x in loop)}


def test_generate_128k_tokens_is_fast():
    # 128k prompt + 128k generated on a sliding/full model: closed forms, not a per-step loop.
    import time
    spec = _spec(["--hf_model_name_or_path", GEMMA2])
    t0 = time.perf_counter()
    flops_mod.generate_flops(spec, prompt_tokens=131072, output_tokens=131072, attention="causal")
    assert time.perf_counter() - t0 < 0.05


# --- the report states its mode and the spec's warnings -------------------------------------------

def test_report_first_line_states_the_resolved_mode():
    _, out = run(["-l", "2", "-hs", "256", "-b", "4", "-s", "128", "--tokens", "1024"])
    first = out.splitlines()[0]
    assert first.startswith("Mode: training, recompute full (the cookbook default; -ca turns it off)")
    assert "-b 4 is the global batch" in first and "512 tokens" in first
    for argv, text in ((["-ca"], "recompute none (set by -ca)"),
                       (["--recompute", "selective"], "recompute selective (set by --recompute)"),
                       (["-i"], "forward only (--infer)")):
        res, out = run(["-l", "2", "-hs", "256"] + argv)
        assert text in out.splitlines()[0]
    assert res["recompute_source"] == "--infer"


def test_warnings_and_model_summary_reach_the_report_and_json(tmp_path):
    # An unknown model_type is read Llama-style with a warning the result must carry.
    cfg = {"model_type": "not_a_family", "vocab_size": 1000, "hidden_size": 256, "num_hidden_layers": 2,
           "num_attention_heads": 4, "intermediate_size": 512}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    res, out, err = run_main(main, ["--hf_model_name_or_path", str(path), "-s", "64"])
    assert res["warnings"] and any(line.startswith("WARNING: model_type 'not_a_family'")
                                   for line in out.splitlines()[:3])
    assert err == ""  # said once, in the report (issue 32)
    res_j, out_j, err_j = run_main(main, ["--hf_model_name_or_path", str(path), "-s", "64", "--json"])
    assert err_j.count("warning: model_type") == 1  # with --json, whose stdout is for machines
    printed = json.loads(out_j)
    assert printed["warnings"] == res["warnings"]
    assert "layers" not in printed["model"] and printed["model"]["layer_kinds"][0]["layers"] == 2
    assert printed["layer_kinds"][0]["layers"] == 2 and printed["layer_kinds"][0]["mlp"] == "dense 512"


def test_chunked_layers_without_a_chunk_size_exit_2(tmp_path):
    cfg = {"model_type": "llama", "vocab_size": 1000, "hidden_size": 256, "num_hidden_layers": 2,
           "num_attention_heads": 4, "intermediate_size": 512,
           "layer_types": ["chunked_attention", "full_attention"]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    code, err = exit_code_and_stderr(main, ["--hf_model_name_or_path", str(path)])
    assert code == 2 and "attention_chunk_size" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("name", sorted(n for n, m in HF_FLOPS.items() if m.get("model_type") == "minimax"))
def test_lightning_attention_matches_pytorch_flop_counter(name):
    # Source: FlopCounterMode on transformers 5.24's MiniMaxForCausalLM (MiniMax-01), eager
    # (MiniMaxLightningAttention's block loop), eager attention and experts, fp32 CPU, 2 layers
    # (lightning + MoE, softmax attention + MoE), sequence 128 in blocks of 48 (two full, one of 32),
    # tests/fixtures/measure_flops.py. Ours: lightning_core_flops (MiniMax-01, arXiv 2501.08313,
    # Algorithm 1): per block of b the intra-block Q K^T and its product with V (4 H b^2 d) and the
    # state's read-out and update (4 H b d^2), which are the four matmuls the eager loop runs.
    # Tolerance: exact (both sides count only matmuls); backward: every matmul's two gradients.
    m = HF_FLOPS[name]
    s, b = m["seq"], m["batch"]
    res, _ = run(["--hf_model_name_or_path", os.path.join(FIXTURES, m["config_file"]), "-s", str(s),
                  "-b", str(b), "--tokens", str(b * s), "-ca", "--attention-flops", "full", "--json"])
    assert res["forward_flops"] == m["forward_flops"]
    assert res["backward_flops"] == pytest.approx(m["backward_flops"], rel=1e-3)
    parts = res["forward_breakdown_flops"]
    assert parts["state_core"] + parts["attention_scores"] + parts["attention_context"] == \
        m["forward_by_op"].get("bmm", 0) + m["forward_by_op"].get("matmul", 0)


@pytest.mark.parametrize("name", sorted(n for n, m in HF_FLOPS.items() if m.get("model_type") == "xlstm"))
def test_mlstm_matches_pytorch_flop_counter(name):
    # Source: FlopCounterMode on transformers 5.24's xLSTMForCausalLM (the xLSTM 7B block, class defaults),
    # mode "inference": mlstm_chunkwise_native_autograd over chunks of 64, fp32 CPU, 2 blocks, sequence 128
    # (tests/fixtures/measure_flops.py). Ours: mlstm_core_flops (Beck et al. 2025, arXiv 2503.13427): per
    # chunk Q K^T and its product with V, per position the memory's read-out and update and the
    # normaliser's read-out, the bmm's the eager kernel runs; the projections (the gates' biased ones as
    # addmm) and the FFN as mm's. Tolerance: exact; backward: every matmul's two gradients.
    m = HF_FLOPS[name]
    s, b = m["seq"], m["batch"]
    res, _ = run(["--hf_model_name_or_path", os.path.join(FIXTURES, m["config_file"]), "-s", str(s),
                  "-b", str(b), "--tokens", str(b * s), "-ca", "--attention-flops", "full", "--json"])
    assert res["forward_flops"] == m["forward_flops"]
    assert res["backward_flops"] == m["backward_flops"]
    assert res["forward_breakdown_flops"]["state_core"] == m["forward_by_op"]["bmm"]
