"""Where a training layer's time goes on the H100 or H200, eager and compiled (issue 33):

1. layers: a stack of Llama decoder blocks (measure_stacks.Block: RMSNorm, GQA attention with
   rotary embeddings through SDPA's default kernel, RMSNorm, SwiGLU; bf16 weights, no autocast,
   no FSDP), forward + backward, eager and torch.compile'd per block, and compiled with torchao
   float8 (tensorwise) where it imports. Per case: the step time (CUDA events, median) and, from
   the profiler over two steps, the GPU kernel time split into matmuls, attention, Triton
   (compiled, fused) kernels, other ATen kernels (element-wise, norms, reductions) and copies,
   with kernel counts. Shapes: an 8B layer (width 4096, FFN 14336, 32 heads, 8 KV heads) and a
   1B layer (2048, 8192, 32, 8), at 2 x 4096 and 1 x 8192 tokens;
2. head: final RMSNorm, the output projection (vocabulary 128256) and the cross-entropy over
   fp32 logits, forward + backward, eager and compiled, split the same way;
3. recompute memory: 8 blocks of the 8B layer at 2 x 4096, no recompute against full
   recompute of each block (torch.utils.checkpoint, non-reentrant), with and without FSDP2
   (fully_shard per block and root, world size 1): the peak allocated after the forward and over
   the step. This separates checkpointing from FSDP2 in the peak measured under issue 36.

Writes JSON lines to $OUT (or --out): layers.jsonl, head.jsonl, recompute_memory.jsonl, and
device_layers.json. Stops starting new cases past --deadline-s. --quick runs every path at toy
sizes on the CPU.

    python validation/h100/measure_layers.py --out $OUT --deadline-s 300
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch._dynamo
import torch.nn.functional as F
from torch import nn

from measure_stacks import Block, Llama, event_times, float8_convert, rope, sync, write
from measure_training import device_info, log

T0 = time.time()
LAYER_8B = dict(width=4096, ffn=14336, heads=32, kv_heads=8)
LAYER_1B = dict(width=2048, ffn=8192, heads=32, kv_heads=8)
TOY = dict(width=64, ffn=128, heads=4, kv_heads=2)
VOCAB = 128256


def past(deadline):
    return time.time() - T0 > deadline


def category(name):
    n = name.lower()
    if any(w in n for w in ("flash", "fmha", "sdpa", "attention", "attn")):
        return "attention"
    if n.startswith("triton"):
        return "triton"
    if any(w in n for w in ("gemm", "nvjet", "cutlass", "xmma", "cublas", "splitk", "sm90_", "sm80_")):
        return "matmul"
    if any(w in n for w in ("memcpy", "memset")):
        return "copy"
    return "other"


def kernel_split(fn, dev, steps=2):
    """GPU kernel microseconds per category over `steps` calls of fn, per call; and kernel counts."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
    with profile(activities=acts) as prof:
        for _ in range(steps):
            fn()
        sync(dev)
    us, count, top = {}, {}, []
    for e in prof.key_averages():
        if dev == "cuda" and e.device_type != DeviceType.CUDA:
            continue
        t = e.self_device_time_total if dev == "cuda" else 0
        c = category(e.key)
        us[c] = us.get(c, 0.0) + t / steps
        count[c] = count.get(c, 0) + e.count // steps
        top.append((t / steps, e.key[:100], c))
    top.sort(reverse=True)
    return {"kernel_us": us, "kernel_count": count,
            "top_kernels": [{"us": round(t, 1), "name": n, "category": c} for t, n, c in top[:12]]}


class Stack(nn.Module):
    def __init__(self, c, n):
        super().__init__()
        self.layers = nn.ModuleList(Block(c) for _ in range(n))

    def forward(self, x, cos, sin):
        for layer in self.layers:
            x = layer(x, cos, sin)
        return x


def measure_layers(out, dev, quick, deadline, base=True, fp8_extra=()):
    n = 2 if quick else 4
    shapes = [("8b", LAYER_8B), ("1b", LAYER_1B)] if not quick else [("toy", TOY)]
    tokens = [(2, 4096), (1, 8192)] if not quick else [(2, 32)]
    cases = [(name, c, b, s, mode, None) for name, c in shapes for b, s in tokens
             for mode in ("eager", "compile")]
    cases.insert(2, (shapes[0][0], shapes[0][1], tokens[0][0], tokens[0][1], "compile", "tensorwise"))
    if quick and not os.environ.get("QUICK_COMPILE"):
        cases = [cs for cs in cases if cs[4] == "eager"] + [cases[2][:4] + ("eager", "tensorwise")]
    if not base:
        cases = []
    cases += [(name, c, tokens[0][0], tokens[0][1], "eager" if quick else "compile", r)
              for r in fp8_extra for name, c in shapes]
    for name, c, b, s, mode, fp8 in cases:
        if past(deadline):
            log("layers: deadline reached")
            break
        rec = {"layer": name, "shape": c, "blocks": n, "batch": b, "seq": s, "mode": mode,
               "float8": fp8 or "none", "dtype": "bf16 weights, no autocast", "pass": "forward+backward"}
        model = None
        try:
            torch.manual_seed(0)
            with torch.device(dev):
                model = Stack(c, n).to(torch.bfloat16)
            if fp8:
                float8_convert(model, fp8)
            if mode == "compile":
                for i, layer in enumerate(model.layers):
                    model.layers[i] = torch.compile(layer)
            cos, sin = rope(s, c["width"] // c["heads"], dev)
            x = torch.randn(b, s, c["width"], device=dev, dtype=torch.bfloat16, requires_grad=True)
            g = torch.randn_like(x)

            def step():
                y = model(x, cos, sin)
                y.backward(g)
            t = time.time()
            for _ in range(1 if quick else 3):
                step()
            sync(dev)
            rec["warmup_s"] = time.time() - t
            times = event_times(step, dev, 2 if quick else 5, warm=0)
            rec.update(step_s=statistics.median(times), step_s_all=times,
                       per_layer_s=statistics.median(times) / n, tokens=b * s)
            rec.update(kernel_split(step, dev))
            log(f"layers {name} {b}x{s} {mode} fp8={fp8}: {rec['per_layer_s'] * 1e3:.2f} ms/layer, "
                f"{ {k: round(v / n / 1e3, 2) for k, v in rec['kernel_us'].items()} } ms/layer")
        except Exception as e:  # noqa: BLE001
            rec["error"] = repr(e)[:400]
            log(f"layers {name} {mode} fp8={fp8}: {rec['error'][:200]}")
        write(out, "layers.jsonl", rec)
        model = None
        if dev == "cuda":
            torch.cuda.empty_cache()
        torch._dynamo.reset()


class Head(nn.Module):
    def __init__(self, w, vocab):
        super().__init__()
        self.norm = nn.RMSNorm(w, eps=1e-5)
        self.head = nn.Linear(w, vocab, bias=False)

    def forward(self, x, labels):
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())


def measure_head(out, dev, quick, deadline):
    w, vocab, b, s = (64, 512, 2, 32) if quick else (4096, VOCAB, 1, 8192)
    for mode in ("eager", "compile"):
        if past(deadline) or (quick and mode == "compile" and not os.environ.get("QUICK_COMPILE")):
            break
        rec = {"width": w, "vocab": vocab, "batch": b, "seq": s, "mode": mode,
               "pass": "forward+backward", "loss": "cross_entropy on fp32 logits, bf16 weights"}
        try:
            torch.manual_seed(0)
            with torch.device(dev):
                m = Head(w, vocab).to(torch.bfloat16)
            fn = torch.compile(m) if mode == "compile" else m
            x = torch.randn(b, s, w, device=dev, dtype=torch.bfloat16, requires_grad=True)
            labels = torch.randint(0, vocab, (b, s), device=dev)

            def step():
                fn(x, labels).backward()
            for _ in range(1 if quick else 3):
                step()
            times = event_times(step, dev, 2 if quick else 5, warm=0)
            rec.update(step_s=statistics.median(times), step_s_all=times)
            rec.update(kernel_split(step, dev))
            log(f"head {mode}: {rec['step_s'] * 1e3:.2f} ms, {rec['kernel_us']}")
        except Exception as e:  # noqa: BLE001
            rec["error"] = repr(e)[:400]
            log(f"head {mode}: {rec['error'][:200]}")
        write(out, "head.jsonl", rec)
        torch._dynamo.reset()


def measure_recompute_memory(out, dev, quick, deadline):
    import torch.distributed as dist
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    c = dict(layers=2, width=64, ffn=128, heads=4, kv_heads=2, vocab=512) if quick else \
        dict(layers=8, vocab=VOCAB, **LAYER_8B)
    b, s = (2, 32) if quick else (2, 4096)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if dev == "cuda" else "gloo", rank=0, world_size=1,
                                init_method="tcp://127.0.0.1:29519")
    cos, sin = rope(s, c["width"] // c["heads"], dev)
    for fsdp in (False, True):
        for recompute in ("none", "full"):
            if past(deadline):
                log("recompute memory: deadline reached")
                return
            rec = {"shape": c, "batch": b, "seq": s, "recompute": recompute,
                   "fsdp2": "fully_shard per block + root, world 1, param bf16, reduce fp32" if fsdp
                   else "none: bf16 parameters and gradients", "optimizer": "none (no step)",
                   "loss": "cross_entropy on fp32 logits"}
            model = None
            try:
                if dev == "cuda":
                    torch.cuda.empty_cache()
                torch.manual_seed(0)
                with torch.device(dev):
                    model = Llama(c, recompute)
                if fsdp:
                    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
                    for layer in model.layers:
                        fully_shard(layer, mp_policy=mp)
                    fully_shard(model, mp_policy=mp)
                else:
                    model = model.to(torch.bfloat16)
                ids = torch.randint(0, c["vocab"], (b, s + 1), device=dev)
                for i in range(2):
                    if dev == "cuda":
                        torch.cuda.synchronize()
                        base = torch.cuda.memory_allocated()
                        torch.cuda.reset_peak_memory_stats()
                    logits = model(ids[:, :-1], cos, sin)
                    loss = F.cross_entropy(logits.flatten(0, 1).float(), ids[:, 1:].flatten())
                    if dev == "cuda":
                        torch.cuda.synchronize()
                        after_fwd = torch.cuda.memory_allocated()
                        peak_fwd = torch.cuda.max_memory_allocated()
                    del logits
                    loss.backward()
                    sync(dev)
                    for p in model.parameters():
                        p.grad = None
                if dev == "cuda":
                    rec.update(before_step_bytes=base, after_forward_bytes=after_fwd,
                               peak_forward_bytes=peak_fwd,
                               peak_step_bytes=torch.cuda.max_memory_allocated())
                    log(f"recompute memory fsdp2={fsdp} {recompute}: base {base / 2**30:.2f}, "
                        f"after fwd {after_fwd / 2**30:.2f}, peak fwd {peak_fwd / 2**30:.2f}, "
                        f"peak step {rec['peak_step_bytes'] / 2**30:.2f} GiB")
                else:
                    log(f"recompute memory fsdp2={fsdp} {recompute}: ran")
            except Exception as e:  # noqa: BLE001
                rec["error"] = repr(e)[:400]
                log(f"recompute memory fsdp2={fsdp} {recompute}: {rec['error'][:200]}")
            write(out, "recompute_memory.jsonl", rec)
            model = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/layers_out"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--deadline-s", type=float, default=300.0)
    ap.add_argument("--memory-s", type=float, default=60.0, help="seconds kept for the recompute-memory part")
    ap.add_argument("--skip", default="", help="comma list of layers,head,memory")
    ap.add_argument("--fp8-extra", default="", help="torchao float8 recipes (rowwise, tensorwise, ...) "
                    "compiled on both shapes at 2 x 4096, after the base cases")
    ap.add_argument("--no-base", action="store_true", help="only the --fp8-extra layer cases")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    info = device_info()
    log(json.dumps(info))
    with open(os.path.join(a.out, "device_layers.json"), "w") as f:
        json.dump(info, f)
    skip = set(a.skip.split(","))
    if "layers" not in skip:
        measure_layers(a.out, dev, a.quick, a.deadline_s - a.memory_s - 20, base=not a.no_base,
                       fp8_extra=[r for r in a.fp8_extra.split(",") if r])
    if "head" not in skip:
        measure_head(a.out, dev, a.quick, a.deadline_s - a.memory_s)
    if "memory" not in skip:
        measure_recompute_memory(a.out, dev, a.quick, a.deadline_s)
    log(f"done at {time.time() - T0:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
