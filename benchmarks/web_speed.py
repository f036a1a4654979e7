#!/usr/bin/env python3
"""Speed of the web page (web/): cold start to the first answer, then each later answer.

Builds the page from the current scripts into a temporary folder (web/build.py), serves it on
127.0.0.1 and opens it in headless Chromium (Debian's package; web/headless.py drives it over the
DevTools pipe). Targets (issue 47): cold start to first answer under 10 s, each later answer under
1 s, on this machine. Printed, not asserted.

  cold     a new browser with an empty profile (no HTTP cache) opens the page: navigation start to
           the first answer on screen, as the page's own clock (performance.now) reads it;
           Pyodide's 9.6 MB of WebAssembly, its standard library and the first script come over
           loopback, so a real host adds its download time once (then the offline copy serves)
  later    one question per view through the query string (window.llmcalc.open, what a shared
           URL does): `first` includes reading the view's script (compile + parser) when the
           worker had not preloaded it yet, `again` is a second question to the same view (new
           flags); `main()` is the script's own time inside Pyodide

  python3 benchmarks/web_speed.py                         # 2 cold starts, every view
  python3 benchmarks/web_speed.py --cold 3 --screenshots /tmp/web-shots   # and a PNG per view
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "web"))
import build as web_build  # noqa: E402  web/build.py
import headless  # noqa: E402  web/headless.py

M = "model=llama-3-8b"
# (view, first question, a second question to the same view)
VIEWS = [
    ("params", f"tool=params&{M}", "tool=params&model=qwen3-30b-a3b"),
    ("flops", f"tool=flops&{M}", f"tool=flops&{M}&sequence-length=8192"),
    ("mem", f"tool=mem&{M}&gpu=h100", f"tool=mem&{M}&gpu=h100&finetune=qlora"),
    ("training_time", f"tool=training_time&{M}&gpu=h100&num-gpus=8",
     f"tool=training_time&{M}&gpu=h100&num-gpus=8&sequence-length=4096"),
    ("inference_latency", f"tool=inference_latency&{M}&gpu=h100",
     f"tool=inference_latency&{M}&gpu=h100&search=1&prompt-tokens=1024"),
    ("capacity plan", f"tool=inference_latency&{M}&gpu=h100,h200&target-request-rate=20"
     "&max-ttft-ms=500&max-tpot-ms=50", f"tool=inference_latency&{M}&gpu=h100"
     "&target-request-rate=10&max-ttft-ms=500&max-tpot-ms=50"),
    ("comm", "tool=comm", "tool=comm&op=all_gather&size=64M&num-gpus=16"),
    ("hardware", "tool=hardware&name=h100", "tool=hardware&compare=h100 mi300x"),
]
COLD_TARGET_S, LATER_TARGET_S = 10.0, 1.0
TIMED_OPEN = """(async () => { const t = performance.now(); const r = await window.llmcalc.open(%s);
  return {wall: performance.now() - t, main: r.ms, code: r.code}; })()"""


def cold_start(base, query):
    """One cold start: (navigation start -> first answer, s; browser launch -> first answer, s)."""
    t0 = time.perf_counter()
    with headless.Browser(width=1800, height=1100) as browser:
        page = browser.new_page(base + "?" + query)
        page.wait_for("window.llmcalc && window.llmcalc.ready", timeout=180, poll=0.02)
        wall = time.perf_counter() - t0
        first_at = page.evaluate("window.llmcalc.firstAnswerMs + window.llmcalc.t0")
    return first_at / 1000, wall


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cold", type=int, default=2, help="cold starts to time (default 2)")
    parser.add_argument("--screenshots", metavar="DIR", help="save a PNG of each view here")
    args = parser.parse_args(argv)
    if headless.find_chromium() is None:
        sys.exit("web_speed.py: error: no chromium (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "dist")
        web_build.build(out)
        server = web_build.make_server(out, 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        colds = [cold_start(base, VIEWS[2][1]) for _ in range(args.cold)]
        for i, (page_s, wall_s) in enumerate(colds, 1):
            print(f"cold start {i}: navigation to first answer {page_s:5.2f} s "
                  f"(browser launch to first answer {wall_s:5.2f} s)")
        med = statistics.median(c[0] for c in colds)
        print(f"cold start to first answer, median {med:.2f} s: target < {COLD_TARGET_S:.0f} s: "
              f"{'met' if med < COLD_TARGET_S else 'MISSED'}\n")
        worst = 0.0
        with headless.Browser(width=1800, height=1100) as browser:
            page = browser.new_page(base + "?" + VIEWS[0][1])
            page.wait_for("window.llmcalc && window.llmcalc.ready", timeout=180)
            print(f"{'view':<18} {'first (s)':>10} {'main()':>9} {'again (s)':>10} {'main()':>9}")
            for name, first, again in VIEWS:
                a = page.evaluate(TIMED_OPEN % json.dumps(first), timeout=180)
                if args.screenshots:
                    os.makedirs(args.screenshots, exist_ok=True)
                    time.sleep(0.2)
                    page.screenshot(os.path.join(args.screenshots, f"{name.replace(' ', '_')}.png"))
                b = page.evaluate(TIMED_OPEN % json.dumps(again), timeout=180)
                bad = "" if a["code"] == b["code"] == 0 else f"  exit {a['code']}/{b['code']}"
                print(f"{name:<18} {a['wall'] / 1e3:10.3f} {a['main'] / 1e3:9.3f} "
                      f"{b['wall'] / 1e3:10.3f} {b['main'] / 1e3:9.3f}{bad}")
                worst = max(worst, a["wall"] / 1e3, b["wall"] / 1e3)
        print(f"\nslowest later answer {worst:.3f} s: target < {LATER_TARGET_S:.0f} s: "
              f"{'met' if worst < LATER_TARGET_S else 'MISSED'}")
        server.shutdown()


if __name__ == "__main__":
    main()
