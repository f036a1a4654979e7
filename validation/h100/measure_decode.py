"""The GPU time of one decode step that verifies q tokens per sequence (issue 34: speculative
decoding and MTP run the target model over the K drafted tokens plus one, q = K + 1), on the H100
or H200, with no host overhead:

A Llama-3.1-8B-shaped decoder (32 layers, width 4096, FFN 14336, 32 heads, 8 KV heads, head dim
128, vocabulary 128256; random bf16 weights), written out in plain torch: RMSNorm, fused QKV
projection, rotary embeddings omitted (element-wise, a few microseconds), SDPA over a static KV
cache of `context` tokens per sequence (the q new rows attend to every cached row: a verification
step's causal mask inside the q rows changes no matmul shape), output projection, RMSNorm, fused
gate/up projection, SiLU and product, down projection; final norm and the LM head over all q
rows. Each (batch, q, context) is captured once in a CUDA graph and replayed: the time is the GPU's
alone (CUDA events, median of 20 replays), what a graph-mode server (vLLM, SGLang) pays per step
before its scheduler.

Writes JSON lines to $OUT (or --out): decode.jsonl. --quick runs the path at toy sizes on the CPU
(no graph).

    python validation/h100/measure_decode.py --out $OUT --deadline-s 120
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from measure_training import device_info, log

T0 = time.time()
PACK_GQA = False
SHAPE = dict(layers=32, width=4096, ffn=14336, heads=32, kv_heads=8, vocab=128256)
TOY = dict(layers=2, width=64, ffn=128, heads=4, kv_heads=2, vocab=512)


def weights(c, dev):
    w, hd = c["width"], c["width"] // c["heads"]
    qkv = (c["heads"] + 2 * c["kv_heads"]) * hd
    g = torch.Generator(device=dev).manual_seed(0)

    def t(*shape):
        return (torch.randn(*shape, device=dev, generator=g, dtype=torch.float32) * 0.02).to(torch.bfloat16)
    layers = [dict(n1=torch.ones(w, device=dev, dtype=torch.bfloat16), qkv=t(qkv, w), o=t(w, c["heads"] * hd),
                   n2=torch.ones(w, device=dev, dtype=torch.bfloat16), gu=t(2 * c["ffn"], w), down=t(w, c["ffn"]))
              for _ in range(c["layers"])]
    return layers, torch.ones(w, device=dev, dtype=torch.bfloat16), t(c["vocab"], w)


def step(c, layers, norm, head, x, kcache, vcache):
    """One decode step over x (b, q, width): every layer, then the head over all q rows."""
    b, q, w = x.shape
    h, kv, hd = c["heads"], c["kv_heads"], c["width"] // c["heads"]
    for i, p in enumerate(layers):
        y = F.rms_norm(x, (w,), p["n1"], 1e-5)
        qkv = y @ p["qkv"].t()
        if PACK_GQA:  # each KV head's query heads as rows of one sequence: flash/cuDNN, no GQA path
            qh = qkv[..., :h * hd].view(b, q, kv, h // kv, hd).permute(0, 2, 1, 3, 4).reshape(b, kv, -1, hd)
        else:
            qh = qkv[..., :h * hd].view(b, q, h, hd).transpose(1, 2)
        kn = qkv[..., h * hd:(h + kv) * hd].view(b, q, kv, hd).transpose(1, 2)
        vn = qkv[..., (h + kv) * hd:].view(b, q, kv, hd).transpose(1, 2)
        kcache[i][:, :, -q:] = kn  # the step's own rows take the cache's last q slots
        vcache[i][:, :, -q:] = vn
        if PACK_GQA:
            a = F.scaled_dot_product_attention(qh, kcache[i], vcache[i])
            a = a.view(b, kv, q, h // kv, hd).permute(0, 1, 3, 2, 4).reshape(b, h, q, hd)
        else:
            a = F.scaled_dot_product_attention(qh, kcache[i], vcache[i], enable_gqa=True)
        x = x + a.transpose(1, 2).reshape(b, q, h * hd) @ p["o"].t()
        y = F.rms_norm(x, (w,), p["n2"], 1e-5)
        gate, up = (y @ p["gu"].t()).chunk(2, dim=-1)
        x = x + (F.silu(gate) * up) @ p["down"].t()
    return F.rms_norm(x, (w,), norm, 1e-5) @ head.t()


def measure(out, dev, quick, deadline, batches, qs, contexts):
    c = TOY if quick else SHAPE
    layers, norm, head = weights(c, dev)
    hd = c["width"] // c["heads"]
    for ctx in contexts:
        for b in batches:
            kcache = [torch.zeros(b, c["kv_heads"], ctx, hd, device=dev, dtype=torch.bfloat16)
                      for _ in range(c["layers"])]
            vcache = [torch.zeros_like(k) for k in kcache]
            for q in qs:
                if time.time() - T0 > deadline:
                    log("decode: deadline reached")
                    return
                rec = {"shape": c, "batch": b, "q_tokens": q, "context": ctx, "dtype": "bf16",
                       "graph": dev == "cuda", "attention": "SDPA default, " + ("query heads packed per KV head" if PACK_GQA else "enable_gqa") + ", no mask"}
                try:
                    x = torch.randn(b, q, c["width"], device=dev, dtype=torch.bfloat16)
                    with torch.no_grad():
                        if dev == "cuda":
                            s = torch.cuda.Stream()
                            s.wait_stream(torch.cuda.current_stream())
                            with torch.cuda.stream(s):
                                for _ in range(2):
                                    step(c, layers, norm, head, x, kcache, vcache)
                            torch.cuda.current_stream().wait_stream(s)
                            graph = torch.cuda.CUDAGraph()
                            with torch.cuda.graph(graph):
                                step(c, layers, norm, head, x, kcache, vcache)
                            times = []
                            for _ in range(23):
                                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                                e0.record()
                                graph.replay()
                                e1.record()
                                e1.synchronize()
                                times.append(e0.elapsed_time(e1) / 1e3)
                            times = times[3:]
                            del graph
                        else:
                            times = []
                            for _ in range(3):
                                t = time.perf_counter()
                                step(c, layers, norm, head, x, kcache, vcache)
                                times.append(time.perf_counter() - t)
                    rec.update(step_s=statistics.median(times), step_s_min=min(times))
                    log(f"decode b={b} q={q} ctx={ctx}: {rec['step_s'] * 1e3:.3f} ms")
                except Exception as e:  # noqa: BLE001
                    rec["error"] = repr(e)[:400]
                    log(f"decode b={b} q={q} ctx={ctx}: {rec['error'][:200]}")
                with open(os.path.join(out, "decode.jsonl"), "a") as f:
                    f.write(json.dumps(rec) + "\n")
            del kcache, vcache
            if dev == "cuda":
                torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/decode_out"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--deadline-s", type=float, default=120.0)
    ap.add_argument("--batches", default="1,8,32,64")
    ap.add_argument("--q", default="1,2,3,4,6,8")
    ap.add_argument("--contexts", default="2048")
    ap.add_argument("--pack-gqa", action="store_true", help="attention over query heads packed per KV head")
    a = ap.parse_args()
    global PACK_GQA
    PACK_GQA = a.pack_gqa
    os.makedirs(a.out, exist_ok=True)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    log(json.dumps(device_info()))
    ints = lambda s: [int(v) for v in s.split(",")]  # noqa: E731
    if a.quick:
        measure(a.out, dev, True, a.deadline_s, [1, 2], [1, 3], [16])
    else:
        measure(a.out, dev, False, a.deadline_s, ints(a.batches), ints(a.q), ints(a.contexts))
    log(f"done at {time.time() - T0:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
