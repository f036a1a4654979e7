"""H100 measurements for calc_inference_latency.py (issue 14): prefill and per-token decode of
Llama-shaped models (random bf16 weights) with plain transformers `generate` (eager PyTorch,
DynamicCache) and with a StaticCache, which makes `generate` compile each decode step with
torch.compile(mode="reduce-overhead"), i.e. CUDA graphs (prefill stays eager there). Also the
eager forward pass alone over a prompt (no generate). Writes JSON lines to $OUT (or --out):

    python validation/h100/measure_serving.py --out $OUT

Per (model, batch, prompt): generate with N1 and N2 new tokens (min_new_tokens = max_new_tokens,
no EOS, greedy); time per output token = (t(N2) - t(N1)) / (N2 - N1); time to first token =
t(N1) - (N1 - 1) x that. Wall clock around each call after torch.cuda.synchronize(); median of
repeats after warm-up calls (the static path's first calls compile and capture graphs).
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

from measure_training import LLAMA_SHAPES as SHAPES  # the one table of shapes, beside this file


def log(msg):
    print(msg, flush=True)


def write(out, rec):
    with open(os.path.join(out, "serve.jsonl"), "a") as f:
        f.write(json.dumps(rec) + "\n")


def build(name, dev):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
                      attention_bias=False, mlp_bias=False, bos_token_id=1, eos_token_id=None,
                      pad_token_id=0, **SHAPES[name])
    cfg._attn_implementation = "sdpa"
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(dev):
            model = LlamaForCausalLM(cfg)
    finally:
        torch.set_default_dtype(old)
    model.eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return cfg, model


def static_cache(cfg, max_len):
    from transformers import StaticCache
    try:
        return StaticCache(config=cfg, max_cache_len=max_len)
    except TypeError:
        return StaticCache(config=cfg, max_batch_size=1, max_cache_len=max_len)


def sync(dev):
    if dev == "cuda":
        torch.cuda.synchronize()


def gen_time(model, ids, new, dev, cache):
    if cache is not None:
        cache.reset()
    sync(dev)
    t = time.perf_counter()
    kw = dict(past_key_values=cache) if cache is not None else {}
    model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                   min_new_tokens=new, do_sample=False, **kw)
    sync(dev)
    return time.perf_counter() - t


def measure_generate(out, model, cfg, name, b, p, n1, n2, dev, static, reps):
    g = torch.Generator(device=dev).manual_seed(b * 7919 + p)
    ids = torch.randint(2, cfg.vocab_size, (b, p), device=dev, generator=g)
    cache = static_cache(cfg, p + n2 + 16) if static else None
    rec = {"model": name, "config": SHAPES[name], "batch": b, "prompt": p, "n1": n1, "n2": n2,
           "path": "static+compile" if static else "eager", "dtype": "bf16", "attention": "sdpa"}
    try:
        t0 = time.perf_counter()
        for _ in range(3 if static else 1):  # compile, capture graphs, settle
            gen_time(model, ids, n2, dev, cache)
            gen_time(model, ids, n1, dev, cache)
        rec["warmup_s"] = time.perf_counter() - t0
        try:
            from torch._dynamo.utils import counters
            rec["dynamo_unique_graphs"] = int(counters["stats"]["unique_graphs"])
        except Exception:  # noqa: BLE001
            pass
        t1 = [gen_time(model, ids, n1, dev, cache) for _ in range(reps)]
        t2 = [gen_time(model, ids, n2, dev, cache) for _ in range(reps)]
        a, c = statistics.median(t1), statistics.median(t2)
        tpot = (c - a) / (n2 - n1)
        rec.update(t_n1_s=t1, t_n2_s=t2, tpot_s=tpot, ttft_s=a - (n1 - 1) * tpot)
        log(f"{name} {rec['path']} b{b} p{p}: TTFT {rec['ttft_s'] * 1e3:.1f} ms, TPOT "
            f"{tpot * 1e3:.2f} ms (warm-up {rec['warmup_s']:.0f} s)")
    except Exception as e:  # noqa: BLE001
        rec["error"] = repr(e)[:500]
        log(f"{name} {rec['path']} b{b} p{p}: {rec['error']}")
    write(out, rec)


def measure_prefill(out, model, cfg, name, b, p, dev, reps):
    """The eager forward pass over a prompt alone, as generate's prefill runs it (last logits only)."""
    from transformers import DynamicCache
    g = torch.Generator(device=dev).manual_seed(b * 31 + p)
    ids = torch.randint(2, cfg.vocab_size, (b, p), device=dev, generator=g)
    ts = []
    with torch.inference_mode():
        for i in range(reps + 2):
            sync(dev)
            t = time.perf_counter()
            model(input_ids=ids, past_key_values=DynamicCache(config=cfg), use_cache=True, logits_to_keep=1)
            sync(dev)
            if i >= 2:
                ts.append(time.perf_counter() - t)
    rec = {"model": name, "config": SHAPES[name], "batch": b, "prompt": p, "path": "eager-forward",
           "prefill_s": statistics.median(ts), "prefill_s_all": ts}
    log(f"{name} prefill forward b{b} p{p}: {rec['prefill_s'] * 1e3:.1f} ms")
    write(out, rec)


def measure_ttft(out, model, cfg, name, b, p, dev, static, reps):
    """generate with one new token: the prompt's forward pass plus generate's own set-up and the
    first token's selection (what a user's time to first token is in plain transformers)."""
    g = torch.Generator(device=dev).manual_seed(b * 131 + p)
    ids = torch.randint(2, cfg.vocab_size, (b, p), device=dev, generator=g)
    cache = static_cache(cfg, p + 16) if static else None
    gen_time(model, ids, 1, dev, cache)
    ts = [gen_time(model, ids, 1, dev, cache) for _ in range(reps)]
    rec = {"model": name, "config": SHAPES[name], "batch": b, "prompt": p,
           "path": ("static" if static else "eager") + "-generate-1", "t1_s": statistics.median(ts),
           "t1_s_all": ts}
    log(f"{name} {rec['path']} b{b} p{p}: {rec['t1_s'] * 1e3:.1f} ms")
    write(out, rec)


def measure_launch(out, dev):
    """Host cost of one eager CUDA op on this machine: 20,000 x.add_(1) on a 1-element tensor,
    wall clock (the GPU work is nil, so the host sets the pace), and the same through a CUDA
    graph replay of 1,000 of them."""
    if dev != "cuda":
        return
    x = torch.zeros(1, device=dev)
    for _ in range(1000):
        x.add_(1)
    sync(dev)
    res = {}
    for trial in range(3):
        t = time.perf_counter()
        for _ in range(20000):
            x.add_(1)
        sync(dev)
        res.setdefault("eager_us_per_op", []).append((time.perf_counter() - t) / 20000 * 1e6)
    y = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    for trial in range(3):
        t = time.perf_counter()
        for _ in range(2000):
            torch.nn.functional.rms_norm(y[:1], (4096,))
        sync(dev)
        res.setdefault("rms_norm_1row_us_per_call", []).append((time.perf_counter() - t) / 2000 * 1e6)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            x.add_(1)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(1000):
            x.add_(1)
    g.replay()
    sync(dev)
    for trial in range(3):
        t = time.perf_counter()
        for _ in range(10):
            g.replay()
        sync(dev)
        res.setdefault("graph_us_per_op", []).append((time.perf_counter() - t) / 10000 * 1e6)
    res = {k: statistics.median(v) for k, v in res.items()}
    res["path"] = "launch-microbench"
    log(json.dumps(res))
    write(out, res)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/h100_serve"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--models", default="llama-1b,llama-8b")
    ap.add_argument("--skip-static", action="store_true")
    ap.add_argument("--skip-eager", action="store_true")
    ap.add_argument("--ttft", action="store_true", help="generate with one new token, both paths")
    ap.add_argument("--deadline-s", type=float, default=1e9, help="start no new case past this")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    import transformers
    log(json.dumps({"torch": torch.__version__, "transformers": transformers.__version__,
                    "device": torch.cuda.get_device_name(0) if dev == "cuda" else "cpu"}))
    import torch._dynamo as dynamo
    for knob in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                 "accumulated_recompile_limit"):
        if hasattr(dynamo.config, knob):  # one compiled decode per model and batch size
            setattr(dynamo.config, knob, 256)
    t = time.time()
    measure_launch(a.out, dev)
    models = ["tiny"] if a.quick else a.models.split(",")
    n1, n2 = (2, 4) if a.quick else (33, 161)
    reps = 1 if a.quick else 3
    for name in models if not a.skip_eager else []:
        cfg, model = build(name, dev)
        for b, p in ((1, 128), (1, 512), (1, 2048), (8, 512), (32, 512)) if not a.quick else ((1, 8), (2, 8)):
            measure_prefill(a.out, model, cfg, name, b, p, dev, reps)
        for b, p in ((1, 128), (1, 512), (1, 2048), (8, 512), (32, 512)) if not a.quick else ((1, 8), (2, 8)):
            measure_generate(a.out, model, cfg, name, b, p, n1, n2, dev, False, reps)
        log(f"{name} eager done at {time.time() - t:.0f} s")
        model = None
        if dev == "cuda":
            torch.cuda.empty_cache()
    if not a.skip_static:
        plan = [(m, b, 512) for m in models for b in (1, 8, 32)]  # one build per model
        if a.quick:
            plan = [("tiny", 1, 8)]
        built = {}
        for name, b, p in plan:
            if name not in built:
                built.clear()
                if dev == "cuda":
                    torch.cuda.empty_cache()
                built[name] = build(name, dev)
            cfg, model = built[name]
            if time.time() - t > a.deadline_s:
                log(f"deadline: static {name} b{b} not started")
                continue
            measure_generate(a.out, model, cfg, name, b, p, n1, n2, dev, True, reps)
            log(f"{name} static b{b} done at {time.time() - t:.0f} s")
        built.clear()
    if a.ttft:
        for name in models:
            cfg, model = build(name, dev)
            for b, p in ((1, 128), (1, 512), (1, 2048), (8, 512)) if not a.quick else ((1, 8),):
                if time.time() - t > a.deadline_s:
                    log(f"deadline: ttft {name} b{b} p{p} not started")
                    continue
                measure_ttft(a.out, model, cfg, name, b, p, dev, False, 5)
                measure_ttft(a.out, model, cfg, name, b, p, dev, True, 5)
            model = None
            if dev == "cuda":
                torch.cuda.empty_cache()
    log(f"all done in {time.time() - t:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
