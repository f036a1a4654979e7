"""How fast an MoE layer's expert matmuls run on the H100 or H200 (issue 33: "grouped GEMMs at their
measured efficiency"): torch's grouped matmul (torch._grouped_mm, the CUTLASS grouped kernel
torchtitan's MoE uses) against a loop of one matmul per expert and against one dense matmul of the
same FLOPs, bf16, for the expert shapes of today's MoE models with balanced routing:

    Qwen3-30B-A3B  h 2048, expert FFN 768,  128 experts, top-8
    GPT-OSS-120B   h 2880, expert FFN 2880, 128 experts, top-4
    DeepSeek-V3    h 7168, expert FFN 2048, 256 experts, top-8
    Mixtral-8x7B   h 4096, expert FFN 14336,  8 experts, top-2

For each, tokens per rank T (4,096 / 16,384) and expert parallelism ep (the rank holds E / ep
experts and receives T k ep / E tokens for each): the three matmuls of the forward, gate+up
(tokens x h -> 2 FFN) and down (FFN -> h), and the backward's two per projection (input gradient
and weight gradient, the latter as a loop: torch has no grouped weight-gradient entry point in
every version). Times: CUDA events, median of 10 after 3 warm-ups. Writes moe.jsonl to $OUT.

    python validation/h100/measure_moe.py --out $OUT --deadline-s 120
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

from measure_training import device_info, log

T0 = time.time()
MODELS = {"qwen3-30b-a3b": (2048, 768, 128, 8), "gpt-oss-120b": (2880, 2880, 128, 4),
          "deepseek-v3": (7168, 2048, 256, 8), "mixtral-8x7b": (4096, 14336, 8, 2)}
EP = {"qwen3-30b-a3b": (1, 8), "gpt-oss-120b": (1, 8), "deepseek-v3": (8, 64), "mixtral-8x7b": (1, 8)}


def timed(fn, dev, reps=10, warm=3):
    for _ in range(warm):
        fn()
    if dev != "cuda":
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) / 1e3)
    return statistics.median(out)


def measure(out, dev, quick, deadline):
    dt = torch.bfloat16
    tokens = (64,) if quick else (4096, 16384)
    for name, (h, f, E, k) in MODELS.items():
        if quick:
            h, f = h // 32, f // 32
        for ep in EP[name]:
            for T in tokens:
                if time.time() - T0 > deadline:
                    log("moe: deadline reached")
                    return
                local = E // ep
                n_e = max(1, T * k * ep // E)  # balanced routing: tokens each local expert receives
                rows = local * n_e
                rec = {"model": name, "hidden": h, "expert_ffn": f, "experts": E, "top_k": k, "ep": ep,
                       "tokens_per_rank": T, "local_experts": local, "tokens_per_expert": n_e, "dtype": "bf16"}
                try:
                    x = torch.randn(rows, h, device=dev, dtype=dt)
                    w1 = torch.randn(local, h, 2 * f, device=dev, dtype=dt) * 0.02
                    w2 = torch.randn(local, f, h, device=dev, dtype=dt) * 0.02
                    y1 = torch.randn(rows, f, device=dev, dtype=dt)
                    g2 = torch.randn(rows, h, device=dev, dtype=dt)
                    y2 = torch.randn(rows, 2 * f, device=dev, dtype=dt)
                    offs = torch.arange(1, local + 1, device=dev, dtype=torch.int32) * n_e
                    w1t = w1.transpose(1, 2).contiguous()  # (local, 2f, h): the input gradient of gate+up
                    w2t = w2.transpose(1, 2).contiguous()
                    cases = {
                        "grouped_fwd_gate_up": lambda: torch._grouped_mm(x, w1, offs=offs),
                        "grouped_fwd_down": lambda: torch._grouped_mm(y1, w2, offs=offs),
                        "grouped_dgrad_down": lambda: torch._grouped_mm(g2, w2t, offs=offs),
                        "grouped_dgrad_gate_up": lambda: torch._grouped_mm(y2, w1t, offs=offs),
                        "loop_fwd_gate_up": lambda: [x[i * n_e:(i + 1) * n_e] @ w1[i] for i in range(local)],
                        "loop_wgrad_gate_up": lambda: [x[i * n_e:(i + 1) * n_e].t() @ y2[i * n_e:(i + 1) * n_e]
                                                       for i in range(local)],
                        "dense_same_flops_gate_up": lambda: x @ w1[0],
                    }
                    flops = {"grouped_fwd_gate_up": 2 * rows * h * 2 * f, "grouped_fwd_down": 2 * rows * f * h,
                             "grouped_dgrad_down": 2 * rows * h * f, "grouped_dgrad_gate_up": 2 * rows * 2 * f * h,
                             "loop_fwd_gate_up": 2 * rows * h * 2 * f, "loop_wgrad_gate_up": 2 * rows * h * 2 * f,
                             "dense_same_flops_gate_up": 2 * rows * h * 2 * f}
                    for c, fn in cases.items():
                        try:
                            s = timed(fn, dev, reps=3 if quick else 10)
                            rec[c + "_s"] = s
                            rec[c + "_tflops"] = flops[c] / s / 1e12
                        except Exception as e:  # noqa: BLE001
                            rec[c + "_error"] = repr(e)[:200]
                    log(f"moe {name} ep {ep} T {T}: " + ", ".join(
                        f"{c} {rec.get(c + '_tflops', float('nan')):.0f}" for c in cases) + " TFLOP/s")
                except Exception as e:  # noqa: BLE001
                    rec["error"] = repr(e)[:400]
                    log(f"moe {name} ep {ep} T {T}: {rec['error'][:200]}")
                with open(os.path.join(out, "moe.jsonl"), "a") as fh:
                    fh.write(json.dumps(rec) + "\n")
                if dev == "cuda":
                    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/moe_out"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--deadline-s", type=float, default=120.0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    log(json.dumps(device_info()))
    measure(a.out, dev, a.quick, a.deadline_s)
    log(f"done at {time.time() - T0:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
