"""H100 measurements for calc_training_time.py (issue 13): torch matmul TFLOP/s over a grid of
shapes (bf16 through torch.matmul, fp8 e4m3 through torch._scaled_mm with per-tensor scales), a
device-to-device copy (achievable HBM bandwidth), and training steps of Llama-shaped models built
with transformers (random weights; fp32 parameters, bf16 autocast, SDPA attention, fused AdamW,
gradient clipping at 1.0: the Hugging Face Trainer's --bf16 path on one GPU), with and without
activation checkpointing (transformers' gradient_checkpointing_enable: every decoder layer
recomputed). Writes JSON lines to $OUT (or --out). Run on the device:

    python validation/h100/measure_training.py --out $OUT

Timing: CUDA events around back-to-back launches, inputs rotated over enough buffers to exceed
L2 (50 MB), median of repeats; random normal data (never zeros). --quick shrinks everything for a
CPU smoke run of the code paths.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch


def log(msg):
    print(msg, flush=True)


def write(out, name, rec):
    with open(os.path.join(out, name), "a") as f:
        f.write(json.dumps(rec) + "\n")


def device_info():
    info = {"torch": torch.__version__, "cuda": torch.version.cuda}
    try:
        import transformers
        info["transformers"] = transformers.__version__
    except Exception as e:  # noqa: BLE001
        info["transformers"] = repr(e)
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        info.update(name=p.name, sms=p.multi_processor_count, memory_bytes=p.total_memory)
        try:
            q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,clocks.sm,"
                                "power.limit,temperature.gpu", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=20).stdout.strip()
            info["nvidia_smi"] = q
        except Exception as e:  # noqa: BLE001
            info["nvidia_smi"] = repr(e)
    return info


def timed(fn, *, iters, reps, sync):
    """Median seconds per call of fn(i) over `reps` batches of `iters` back-to-back calls."""
    for i in range(3):
        fn(i)
    sync()
    out = []
    for r in range(reps):
        if torch.cuda.is_available():
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for i in range(iters):
                fn(i)
            b.record()
            b.synchronize()
            out.append(a.elapsed_time(b) / 1e3 / iters)
        else:
            t = time.perf_counter()
            for i in range(iters):
                fn(i)
            out.append((time.perf_counter() - t) / iters)
    return statistics.median(out), min(out), max(out)


def gemm_shapes(quick):
    if quick:
        return [(64, 64, 64), (16, 128, 64), (128, 64, 256)]
    shapes = [(n, n, n) for n in (256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384)]
    # Llama-3-8B and -70B layer matmuls (N x K = out x in) at training token counts; forward
    # (M tokens), and the weight gradient (M = out, N = in, K = tokens)
    mats = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336),
            (10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672), (128256, 4096)]
    for m in (2048, 4096, 8192, 16384):
        for n, k in mats:
            shapes.append((m, n, k))
    for n, k in mats[:4] + mats[4:8]:
        shapes.append((n, k, 8192))  # weight gradient of 8192 tokens
    # decode-like skinny shapes
    for m in (1, 8, 32, 128, 512):
        for n, k in ((4096, 4096), (6144, 4096), (28672, 4096), (4096, 14336), (8192, 8192)):
            shapes.append((m, n, k))
    return shapes


def measure_gemms(out, quick, dev):
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    fp8 = dev == "cuda" and hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm")
    for (m, n, k) in gemm_shapes(quick):
        flops = 2.0 * m * n * k
        nbuf = max(1, min(8, int(2 * 50e6 // max(1, 2 * (m * k + n * k))) + 1))
        A = [torch.randn(m, k, device=dev, dtype=torch.bfloat16) for _ in range(nbuf)]
        B = [torch.randn(k, n, device=dev, dtype=torch.bfloat16) for _ in range(nbuf)]
        iters = 1 if quick else max(5, min(200, int(2e-2 / max(flops / 700e12, 5e-6))))
        reps = 2 if quick else 7
        med, lo, hi = timed(lambda i: torch.matmul(A[i % nbuf], B[i % nbuf]), iters=iters, reps=reps,
                            sync=sync)
        rec = {"dtype": "bf16", "m": m, "n": n, "k": k, "s": med, "s_min": lo, "s_max": hi,
               "tflops": flops / med / 1e12}
        write(out, "gemm.jsonl", rec)
        line = f"gemm bf16 {m}x{n}x{k}: {rec['tflops']:.1f} TFLOP/s"
        if fp8 and m % 16 == 0 and n % 16 == 0 and k % 16 == 0:
            A8 = [a.to(torch.float8_e4m3fn) for a in A]
            B8 = [b.t().contiguous().to(torch.float8_e4m3fn).t() for b in B]  # column-major B
            one = torch.ones((), device=dev, dtype=torch.float32)
            try:
                med, lo, hi = timed(lambda i: torch._scaled_mm(A8[i % nbuf], B8[i % nbuf], scale_a=one,
                                                               scale_b=one, out_dtype=torch.bfloat16),
                                    iters=iters, reps=reps, sync=sync)
                rec = {"dtype": "fp8", "m": m, "n": n, "k": k, "s": med, "s_min": lo, "s_max": hi,
                       "tflops": flops / med / 1e12}
                write(out, "gemm.jsonl", rec)
                line += f", fp8 {rec['tflops']:.1f}"
            except Exception as e:  # noqa: BLE001
                write(out, "gemm.jsonl", {"dtype": "fp8", "m": m, "n": n, "k": k, "error": repr(e)[:300]})
            del A8, B8
        log(line)
        del A, B
    if dev == "cuda":
        torch.cuda.empty_cache()
        x = torch.randn(2 ** 30 // 2, device=dev, dtype=torch.bfloat16)  # 1 GiB
        y = torch.empty_like(x)
        med, lo, hi = timed(lambda i: y.copy_(x), iters=10, reps=7, sync=sync)
        rec = {"kind": "d2d_copy", "bytes_read_plus_written": 2 * x.numel() * 2, "s": med,
               "GBps": 2 * x.numel() * 2 / med / 1e9}
        write(out, "gemm.jsonl", rec)
        log(f"copy: {rec['GBps']:.0f} GB/s (read + write)")
        del x, y
        torch.cuda.empty_cache()


LLAMA_SHAPES = {
    # Llama-3.2-1B, -3B and Llama-3.1-8B shapes (meta-llama config.json values), random weights;
    # measure_serving.py uses the same table
    "llama-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                     num_attention_heads=32, num_key_value_heads=8, head_dim=64, vocab_size=128256,
                     tie_word_embeddings=True),
    "llama-3b": dict(hidden_size=3072, intermediate_size=8192, num_hidden_layers=28,
                     num_attention_heads=24, num_key_value_heads=8, head_dim=128, vocab_size=128256,
                     tie_word_embeddings=True),
    "llama-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                     num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=128256,
                     tie_word_embeddings=False),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16, vocab_size=512, tie_word_embeddings=True),
}


def llama_config(name):
    from transformers import LlamaConfig
    c = LlamaConfig(max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
                    attention_bias=False, mlp_bias=False, **LLAMA_SHAPES[name])
    c._attn_implementation = "sdpa"
    return c


def measure_training(out, quick, dev, cases):
    from transformers import LlamaForCausalLM
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    for name, seq, mb, ckpt in cases:
        cfg = llama_config(name)
        if dev == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        rec = {"model": name, "config": LLAMA_SHAPES[name], "seq": seq, "micro_batch": mb,
               "checkpointing": ckpt, "precision": "fp32 params, bf16 autocast", "optimizer":
               "AdamW fused" if dev == "cuda" else "AdamW", "grad_clip": 1.0, "attention": "sdpa"}
        try:
            with torch.device(dev):
                model = LlamaForCausalLM(cfg)
            model.train()
            if ckpt:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            rec["params"] = sum(p.numel() for p in model.parameters())
            opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=(dev == "cuda"))
            g = torch.Generator(device=dev).manual_seed(0)
            batches = [torch.randint(0, cfg.vocab_size, (mb, seq), device=dev, generator=g) for _ in range(2)]
            ev = (lambda: torch.cuda.Event(enable_timing=True)) if dev == "cuda" else None
            steps = 2 if quick else 10
            warm = 1 if quick else 3
            fb, op, tot = [], [], []
            for i in range(warm + steps):
                x = batches[i % 2]
                if ev:
                    e0, e1, e2 = ev(), ev(), ev()
                    e0.record()
                t0 = time.perf_counter()
                with torch.autocast(dev, dtype=torch.bfloat16):
                    loss = model(input_ids=x, labels=x, use_cache=False).loss
                loss.backward()
                if ev:
                    e1.record()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                opt.zero_grad(set_to_none=True)
                if ev:
                    e2.record()
                    e2.synchronize()
                    if i >= warm:
                        fb.append(e0.elapsed_time(e1) / 1e3)
                        op.append(e1.elapsed_time(e2) / 1e3)
                        tot.append(e0.elapsed_time(e2) / 1e3)
                elif i >= warm:
                    tot.append(time.perf_counter() - t0)
                if i == 0 and dev == "cuda":
                    rec["peak_allocated_bytes_first_step"] = torch.cuda.max_memory_allocated()
            rec["step_s"] = statistics.median(tot)
            rec["step_s_all"] = tot
            if fb:
                rec["fwd_bwd_s"] = statistics.median(fb)
                rec["optimizer_s"] = statistics.median(op)
            if dev == "cuda":
                rec["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
                rec["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
            rec["loss"] = float(loss.detach())
            tokens = mb * seq
            rec["tokens_per_s"] = tokens / rec["step_s"]
            log(f"train {name} s{seq} mb{mb} ckpt={ckpt}: {rec['step_s'] * 1e3:.1f} ms/step, "
                f"{rec['tokens_per_s']:.0f} tok/s, peak {rec.get('peak_allocated_bytes', 0) / 2**30:.2f} GiB")
        except torch.OutOfMemoryError as e:
            rec["error"] = "OOM: " + str(e)[:200]
            log(f"train {name} s{seq} mb{mb} ckpt={ckpt}: OOM")
        except Exception as e:  # noqa: BLE001
            rec["error"] = repr(e)[:400]
            log(f"train {name} s{seq} mb{mb} ckpt={ckpt}: {rec['error']}")
        write(out, "train.jsonl", rec)
        model = opt = loss = batches = None
        sync()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/h100_out"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--skip-gemm", action="store_true")
    ap.add_argument("--skip-train", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    info = device_info()
    log(json.dumps(info))
    with open(os.path.join(a.out, "device.json"), "w") as f:
        json.dump(info, f)
    torch.backends.cuda.matmul.allow_tf32 = False
    t = time.time()
    if not a.skip_gemm:
        measure_gemms(a.out, a.quick, dev)
        log(f"gemm grid done in {time.time() - t:.0f} s")
    if not a.skip_train:
        if a.quick:
            cases = [("tiny", 64, 2, False), ("tiny", 64, 2, True)]
        else:
            cases = [("llama-1b", 2048, mb, ck) for ck in (False, True) for mb in (1, 2, 4, 8)]
            cases += [("llama-1b", 4096, 2, False), ("llama-1b", 4096, 2, True)]
            cases += [("llama-3b", 2048, mb, ck) for ck in (False, True) for mb in (1, 2)]
        measure_training(a.out, a.quick, dev, cases)
        log(f"all done in {time.time() - t:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
