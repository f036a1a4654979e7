"""GPU measurements of today's training and serving stacks (issue 36), for the H100 or H200:

1. attention: torch's scaled_dot_product_attention, causal, forward and forward + backward, for
   the flash backend torch ships, cuDNN's and SDPA's own default choice (which kernel it picked is
   recorded from the profiler), head dim 64, 128 and 256, sequence 1k to 64k, heads x head dim =
   4096, batch x sequence = 32k tokens (64k at sequence 64k), bf16; fp8 inputs are tried and what
   torch says is recorded;
2. one training step of a Llama-shaped model (8 layers, width 4096, FFN 14336, 32 heads, 8 KV
   heads, vocabulary 128256, untied) under FSDP2 (fully_shard per block and at the root, world size
   1, bf16 parameters for compute and fp32 gradient reduction), fused AdamW and clipping at 1.0;
   eager and torch.compile'd per block, with no recompute, per-op selective checkpointing
   (every second matmul recomputed, attention kept: the policy torchtitan's op-SAC describes, written
   here) and full recompute of each block, and torchao float8 (tensorwise and rowwise) when it imports;
3. prefix caching in plain transformers: a Llama-3.1-8B-shaped model (random bf16 weights), one
   prompt of a 4,096-token shared prefix plus a suffix, prefilled cold (all of it) and warm (the
   prefix's KV cache kept, the suffix alone run over it).

Writes JSON lines to $OUT (or --out): attention.jsonl, fsdp2.jsonl, prefix.jsonl, and device.json.
Stops starting new cases past --deadline-s seconds. --quick runs every code path at toy sizes on
the CPU (gloo; QUICK_COMPILE=1 adds two compiled cases). Timing: CUDA events, median of repeats after warm-ups; random data.

    python validation/h100/measure_stacks.py --out $OUT --deadline-s 300
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

from measure_training import device_info, log

T0 = time.time()


def write(out, name, rec):
    with open(os.path.join(out, name), "a") as f:
        f.write(json.dumps(rec) + "\n")


def past(deadline):
    return time.time() - T0 > deadline


def sync(dev):
    if dev == "cuda":
        torch.cuda.synchronize()


def event_times(fn, dev, reps, warm=1):
    """Seconds of fn() per call: each of `reps` calls timed alone (events on the GPU)."""
    for _ in range(warm):
        fn()
    sync(dev)
    out = []
    for _ in range(reps):
        if dev == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            out.append(a.elapsed_time(b) / 1e3)
        else:
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
    return out


# ---------------------------------------------------------------- attention

def attention_backends():
    from torch.nn.attention import SDPBackend
    return {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}


def default_kernel_names(q, k, v):
    """CUDA kernels SDPA's default dispatch launches, forward and backward (profiler names)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        o.backward(torch.ones_like(o))
        torch.cuda.synchronize()
    names = sorted({e.key for e in prof.key_averages() if any(w in e.key.lower() for w in
                    ("flash", "fmha", "cudnn", "attention", "sdpa", "attn"))})
    return [n[:160] for n in names]


def measure_attention(out, dev, quick, deadline):
    from torch.nn.attention import sdpa_kernel
    backends = attention_backends()
    width, tokens = (64, 256) if quick else (4096, 32768)
    seqs = (64, 128) if quick else (1024, 2048, 4096, 8192, 16384, 32768, 65536)
    dims = (16, 32) if quick else (64, 128, 256)
    kinds = ("math", "default") if quick else ("flash", "cudnn", "default")
    reps = 2 if quick else 5
    for d in dims:
        h = width // d
        for s in seqs:
            b = max(1, tokens // s)
            g = torch.Generator(device=dev).manual_seed(s + d)

            def mk():
                return torch.randn(b, s, h, d, device=dev, dtype=torch.bfloat16,
                                   generator=g).transpose(1, 2).requires_grad_(True)
            q, k, v = mk(), mk(), mk()
            do = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16, generator=g)
            fwd_flops = 4.0 * b * h * s * s * d / 2  # flash-attn's count, causal halves it
            for kind in kinds:
                if past(deadline):
                    log("attention: deadline reached")
                    return
                rec = {"head_dim": d, "heads": h, "batch": b, "seq": s, "causal": True,
                       "dtype": "bf16", "backend": kind, "layout": "bshd transposed to bhsd",
                       "fwd_flops": fwd_flops, "bwd_flops": 2.5 * fwd_flops}
                try:
                    ctx = (lambda: sdpa_kernel(backends[kind])) if kind != "default" else None

                    def fwd():
                        with torch.no_grad():
                            if ctx:
                                with ctx():
                                    return F.scaled_dot_product_attention(q, k, v, is_causal=True)
                            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

                    def fwd_bwd():
                        q.grad = k.grad = v.grad = None
                        if ctx:
                            with ctx():
                                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                                o.backward(do)
                        else:
                            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                            o.backward(do)
                    tf = event_times(fwd, dev, reps)
                    tb = event_times(fwd_bwd, dev, reps)
                    f, fb = statistics.median(tf), statistics.median(tb)
                    rec.update(fwd_s=f, fwd_bwd_s=fb, fwd_s_all=tf, fwd_bwd_s_all=tb,
                               fwd_tflops=fwd_flops / f / 1e12,
                               bwd_tflops=2.5 * fwd_flops / max(fb - f, 1e-9) / 1e12,
                               fwd_bwd_tflops=3.5 * fwd_flops / fb / 1e12)
                    if kind == "default" and dev == "cuda" and s == 4096:
                        rec["default_kernels"] = default_kernel_names(q, k, v)
                    log(f"attn d{d} s{s} b{b} h{h} {kind}: fwd {f * 1e3:.2f} ms "
                        f"({rec['fwd_tflops']:.0f} TFLOP/s), bwd {rec['bwd_tflops']:.0f} TFLOP/s")
                except Exception as e:  # noqa: BLE001
                    rec["error"] = repr(e)[:300]
                    log(f"attn d{d} s{s} {kind}: {rec['error'][:120]}")
                write(out, "attention.jsonl", rec)
            q = k = v = do = None  # free before the next shape
    # fp8 inputs: does any SDPA backend take them?
    if hasattr(torch, "float8_e4m3fn"):
        s, d = (64, 16) if quick else (4096, 128)
        x = torch.randn(1, width // d, s, d, device=dev, dtype=torch.bfloat16).to(torch.float8_e4m3fn)
        for kind in kinds:
            rec = {"head_dim": d, "seq": s, "dtype": "fp8_e4m3", "backend": kind}
            try:
                if kind == "default":
                    F.scaled_dot_product_attention(x, x, x, is_causal=True)
                else:
                    with sdpa_kernel(backends[kind]):
                        F.scaled_dot_product_attention(x, x, x, is_causal=True)
                sync(dev)
                rec["ran"] = True
            except Exception as e:  # noqa: BLE001
                rec["ran"] = False
                rec["error"] = repr(e)[:300]
            log(f"attn fp8 {kind}: {'ran' if rec['ran'] else rec['error'][:100]}")
            write(out, "attention.jsonl", rec)
    if dev == "cuda":
        torch.cuda.empty_cache()


# ---------------------------------------------------------------- FSDP2 training step

SHAPE = dict(layers=8, width=4096, ffn=14336, heads=32, kv_heads=8, vocab=128256)
TOY = dict(layers=2, width=64, ffn=128, heads=4, kv_heads=2, vocab=512)


class Block(nn.Module):
    """A Llama decoder layer: RMSNorm, GQA attention with rotary embeddings (SDPA, causal),
    RMSNorm, SwiGLU. Separate q, k, v, o, gate, up, down projections, no biases."""

    def __init__(self, c):
        super().__init__()
        w, hd = c["width"], c["width"] // c["heads"]
        self.h, self.kv, self.hd = c["heads"], c["kv_heads"], hd
        self.n1, self.n2 = nn.RMSNorm(w, eps=1e-5), nn.RMSNorm(w, eps=1e-5)
        self.q = nn.Linear(w, self.h * hd, bias=False)
        self.k = nn.Linear(w, self.kv * hd, bias=False)
        self.v = nn.Linear(w, self.kv * hd, bias=False)
        self.o = nn.Linear(self.h * hd, w, bias=False)
        self.gate = nn.Linear(w, c["ffn"], bias=False)
        self.up = nn.Linear(w, c["ffn"], bias=False)
        self.down = nn.Linear(c["ffn"], w, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        y = self.n1(x)
        q = self.q(y).view(b, s, self.h, self.hd).transpose(1, 2)
        k = self.k(y).view(b, s, self.kv, self.hd).transpose(1, 2)
        v = self.v(y).view(b, s, self.kv, self.hd).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, -1))
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


def rotate(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def rope(s, hd, dev, theta=500000.0):
    inv = 1.0 / theta ** (torch.arange(0, hd, 2, device=dev, dtype=torch.float32) / hd)
    f = torch.outer(torch.arange(s, device=dev, dtype=torch.float32), inv)
    f = torch.cat((f, f), dim=-1)
    return f.cos().to(torch.bfloat16), f.sin().to(torch.bfloat16)


def sac_policy():
    """Per-op selective checkpointing: keep attention outputs and every odd-numbered matmul of the
    forward, recompute the rest (each even-numbered matmul and all element-wise work)."""
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
    aten = torch.ops.aten
    keep = {aten.mm.default, aten._scaled_dot_product_flash_attention.default,
            aten._scaled_dot_product_efficient_attention.default}
    for name in ("_scaled_dot_product_cudnn_attention", "_scaled_mm"):
        if hasattr(aten, name):
            keep.add(getattr(aten, name).default)
    counts = {}

    def policy(ctx, func, *args, **kwargs):
        key = "recompute" if ctx.is_recompute else "forward"
        if func == aten.mm.default:
            counts[key] = counts.get(key, 0) + 1
            if counts[key] % 2 == 0:
                return CheckpointPolicy.PREFER_RECOMPUTE
        return CheckpointPolicy.MUST_SAVE if func in keep else CheckpointPolicy.PREFER_RECOMPUTE

    def context():
        counts.clear()
        return create_selective_checkpoint_contexts(policy)
    return context


class Checkpointed(nn.Module):
    def __init__(self, block, mode):
        super().__init__()
        self.block, self.mode = block, mode
        self.ctx = sac_policy() if mode == "op-sac" else None

    def forward(self, x, cos, sin):
        from torch.utils.checkpoint import checkpoint
        if self.mode == "full":
            return checkpoint(self.block, x, cos, sin, use_reentrant=False)
        return checkpoint(self.block, x, cos, sin, use_reentrant=False, context_fn=self.ctx)


class Llama(nn.Module):
    def __init__(self, c, recompute):
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c["vocab"], c["width"])
        blocks = [Block(c) for _ in range(c["layers"])]
        if recompute != "none":
            blocks = [Checkpointed(b, recompute) for b in blocks]
        self.layers = nn.ModuleList(blocks)
        self.norm = nn.RMSNorm(c["width"], eps=1e-5)
        self.head = nn.Linear(c["width"], c["vocab"], bias=False)

    def forward(self, ids, cos, sin):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.head(self.norm(x))


def float8_convert(model, recipe):
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    cfg = Float8LinearConfig.from_recipe_name(recipe)
    convert_to_float8_training(model, config=cfg, module_filter_fn=lambda m, fqn: fqn != "head")


def measure_fsdp2(out, dev, quick, deadline, seq, mb):
    import torch.distributed as dist
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    if not dist.is_initialized():
        dist.init_process_group("nccl" if dev == "cuda" else "gloo", rank=0, world_size=1,
                                init_method="tcp://127.0.0.1:29517")
    c = TOY if quick else SHAPE
    if quick:
        seq, mb = 32, 2
    cases = [("eager", "none", None), ("eager", "op-sac", None), ("compile", "none", None),
             ("compile", "op-sac", None), ("compile", "none", "tensorwise"),
             ("eager", "full", None), ("compile", "none", "rowwise"), ("compile", "full", None)]
    if quick:
        cases = [cs for cs in cases if cs[0] == "eager"] + [("eager", "none", "tensorwise")]
        if os.environ.get("QUICK_COMPILE"):
            cases += [("compile", "op-sac", None), ("compile", "none", "tensorwise")]
    cos, sin = rope(seq, c["width"] // c["heads"], dev)
    for mode, recompute, fp8 in cases:
        if past(deadline):
            log("fsdp2: deadline reached")
            break
        rec = {"shape": c, "seq": seq, "micro_batch": mb, "mode": mode, "recompute": recompute,
               "float8": fp8 or "none", "fsdp": "fully_shard per block + root, world 1",
               "mixed_precision": "param bf16, reduce fp32", "optimizer": "AdamW fused, lr 1e-4",
               "grad_clip": 1.0, "loss": "cross_entropy on fp32 logits"}
        model = opt = None
        try:
            if dev == "cuda":
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
            torch.manual_seed(0)
            with torch.device(dev):
                model = Llama(c, recompute)
            for p in model.parameters():
                if p.dim() > 1:
                    nn.init.normal_(p, std=0.02)
            if fp8:
                float8_convert(model, fp8)
            mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
            for i, layer in enumerate(model.layers):
                if mode == "compile":
                    model.layers[i] = layer = torch.compile(layer)
                fully_shard(layer, mp_policy=mp)
            fully_shard(model, mp_policy=mp)
            rec["params"] = sum(p.numel() for p in model.parameters())
            try:
                opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=(dev == "cuda"))
            except Exception:  # noqa: BLE001
                opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
                rec["optimizer"] = "AdamW foreach, lr 1e-4"
            g = torch.Generator(device=dev).manual_seed(1)
            ids = [torch.randint(0, c["vocab"], (mb, seq + 1), device=dev, generator=g) for _ in range(2)]

            def step(i):
                x = ids[i % 2]
                logits = model(x[:, :-1], cos, sin)
                loss = F.cross_entropy(logits.flatten(0, 1).float(), x[:, 1:].flatten())
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                opt.zero_grad(set_to_none=True)
                return loss
            t = time.time()
            warm = 1 if quick else 3
            for i in range(warm):
                loss = step(i)
            sync(dev)
            rec["warmup_s"] = time.time() - t
            if dev == "cuda":
                torch.cuda.reset_peak_memory_stats()
            times = event_times(lambda: step(1), dev, 2 if quick else 6, warm=0)
            rec.update(step_s=statistics.median(times), step_s_all=times, loss=float(loss.detach()),
                       tokens_per_s=mb * seq / statistics.median(times))
            if dev == "cuda":
                rec["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
                rec["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
            log(f"fsdp2 {mode} recompute={recompute} float8={fp8}: {rec['step_s'] * 1e3:.1f} ms/step, "
                f"{rec['tokens_per_s']:.0f} tok/s, peak {rec.get('peak_allocated_bytes', 0) / 2**30:.2f} GiB, "
                f"warm-up {rec['warmup_s']:.0f} s")
        except Exception as e:  # noqa: BLE001
            rec["error"] = repr(e)[:400]
            log(f"fsdp2 {mode} recompute={recompute} float8={fp8}: {rec['error'][:200]}")
        write(out, "fsdp2.jsonl", rec)
        model = opt = None
        if dev == "cuda":
            torch.cuda.empty_cache()
        torch._dynamo.reset()


# ---------------------------------------------------------------- prefix caching

def measure_prefix(out, dev, quick, deadline):
    from transformers import DynamicCache

    from measure_serving import build
    name = "tiny" if quick else "llama-8b"
    cfg, model = build(name, dev)
    prefix = 32 if quick else 4096
    plan = ((1, 8), (2, 8)) if quick else ((1, 128), (1, 512), (1, 2048), (8, 512))
    reps = 2 if quick else 5
    g = torch.Generator(device=dev).manual_seed(7)
    with torch.inference_mode():
        for b, suffix in plan:
            if past(deadline):
                log("prefix: deadline reached")
                break
            pre = torch.randint(2, cfg.vocab_size, (1, prefix), device=dev, generator=g).expand(b, prefix)
            suf = torch.randint(2, cfg.vocab_size, (b, suffix), device=dev, generator=g)
            full = torch.cat((pre, suf), dim=1)

            def cold():
                model(input_ids=full, past_key_values=DynamicCache(config=cfg), use_cache=True,
                      logits_to_keep=1)
            cache = DynamicCache(config=cfg)
            model(input_ids=pre, past_key_values=cache, use_cache=True, logits_to_keep=1)

            def warm():
                model(input_ids=suf, past_key_values=cache, use_cache=True, logits_to_keep=1)
                cache.crop(-suffix)  # drop the suffix again: the next call finds the prefix alone
            tc = event_times(cold, dev, reps, warm=2)
            tw = event_times(warm, dev, reps, warm=2)
            rec = {"model": name, "batch": b, "prefix_tokens": prefix, "suffix_tokens": suffix,
                   "path": "eager-forward, DynamicCache, sdpa, bf16", "cold_s": statistics.median(tc),
                   "warm_s": statistics.median(tw), "cold_s_all": tc, "warm_s_all": tw,
                   "warm_includes": "the suffix forward and DynamicCache.crop back to the prefix"}
            log(f"prefix {name} b{b} prefix {prefix} suffix {suffix}: cold {rec['cold_s'] * 1e3:.1f} ms, "
                f"warm {rec['warm_s'] * 1e3:.1f} ms")
            write(out, "prefix.jsonl", rec)
    model = None
    if dev == "cuda":
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/stacks_out"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--deadline-s", type=float, default=300.0)
    ap.add_argument("--attention-s", type=float, default=45.0, help="attention stops starting cases past this")
    ap.add_argument("--prefix-s", type=float, default=30.0, help="seconds kept for the prefix-cache run")
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--micro-batch", type=int, default=2)
    ap.add_argument("--skip", default="", help="comma list of attention,fsdp2,prefix")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    info = device_info()
    try:
        import torchao
        info["torchao"] = torchao.__version__
    except Exception as e:  # noqa: BLE001
        info["torchao"] = repr(e)[:200]
    log(json.dumps(info))
    with open(os.path.join(a.out, "device.json"), "w") as f:
        json.dump(info, f)
    skip = set(a.skip.split(","))
    if "attention" not in skip:
        measure_attention(a.out, dev, a.quick, min(a.attention_s, a.deadline_s))
        log(f"attention done at {time.time() - T0:.0f} s")
    if "fsdp2" not in skip:
        measure_fsdp2(a.out, dev, a.quick, a.deadline_s - a.prefix_s, a.seq, a.micro_batch)
        log(f"fsdp2 done at {time.time() - T0:.0f} s")
    if "prefix" not in skip:
        measure_prefix(a.out, dev, a.quick, a.deadline_s)
        log(f"prefix done at {time.time() - T0:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
