"""The web page (web/): the built scripts run unchanged in Pyodide, driven in headless Chromium
(Debian's package) over the DevTools protocol (web/headless.py, standard library only).

The page is built into a temporary folder from the scripts as they are now (web/build.py; npm
fetches Pyodide once into web/node_modules), served on 127.0.0.1, and asked one question per
tool through its query string, as a shared URL asks it. Each answer must be the script's own:
the page shows a command line, and this very command, run here by the system's Python from the
repository root, must print the same stdout and stderr. Then: a config.json dropped on the page
is the model the script reads, a bad input shows the script's one stderr line and no traceback,
and the URL carries every input (a fresh load of it asks the same question).

Chromium and npm come from .ci/run under CI (where a skip is a failure); without them, on a
developer's machine, these tests skip. One browser for the module: its cold start is seconds.
"""
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import threading

import pytest

from conftest import ROOT
from grid import normalise  # the wall-clock readings the scripts print (a search's own run time)

WEB = os.path.join(ROOT, "web")


def _load(name):
    path = os.path.join(WEB, f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"llmcalc_web_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


web_build = _load("build")
headless = _load("headless")

MODEL = "model=llama-3-8b"
# (tool view, query string, flags the command line must hold, a picture the answer must draw)
CASES = [
    ("params", f"tool=params&{MODEL}",
     "--hf_model_name_or_path tests/fixtures/configs/llama-3-8b.json", None),
    ("flops", f"tool=flops&{MODEL}&sequence-length=4096", "--sequence-length 4096", None),
    ("mem", f"tool=mem&{MODEL}&gpu=h100&finetune=lora", "--finetune lora", "Memory per GPU"),
    ("training_time", f"tool=training_time&{MODEL}&gpu=h100&num-gpus=8", "--num-gpus 8",
     "Training step breakdown"),
    ("inference_latency", f"tool=inference_latency&{MODEL}&gpu=h100&search=1&prompt-tokens=1024",
     "--search", "Pareto front"),
    ("inference_latency", f"tool=inference_latency&{MODEL}&gpu=h100,h200&target-request-rate=20"
     "&max-ttft-ms=500&max-tpot-ms=50", "--target-request-rate 20", "Capacity plan"),
    ("comm", "tool=comm&op=all_gather&size=64M&num-gpus=16", "--num-gpus 16", None),
    ("hardware", "tool=hardware&name=mi300x", "mi300x", None),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The page built from the current scripts into a temporary folder."""
    if headless.find_chromium() is None:
        pytest.skip("no chromium (.ci/run installs Debian's chromium package)")
    if not os.path.isdir(web_build.PYODIDE) and not web_build.shutil.which("npm"):
        pytest.skip("no npm to fetch Pyodide (web/package.json)")
    out = str(tmp_path_factory.mktemp("web") / "dist")
    web_build.build(out)
    return out


def serve(out):
    server = web_build.make_server(out, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


@pytest.fixture(scope="module")
def site(built):
    """The page served on a free loopback port, open in one headless Chromium; yields (page,
    base URL)."""
    server, base = serve(built)
    browser = headless.Browser()
    try:
        page = browser.new_page(base + "?" + CASES[0][1])
        page.wait_for("window.llmcalc && window.llmcalc.ready", timeout=180)
        yield page, base
    finally:
        browser.close()
        server.shutdown()
        server.server_close()


def ask(page, query):
    """Ask the page a question by query string (what a shared URL does); its last answer."""
    return page.evaluate(f"window.llmcalc.open({json.dumps(query)})", timeout=120)


def run_command(command, cwd=ROOT):
    """The page's command line, run here: `python3 SCRIPT ARGS` from `cwd` (the system Python)."""
    argv = shlex.split(command)
    assert argv[0] == "python3", command
    script = os.path.join(ROOT, argv[1])
    return subprocess.run([sys.executable, script, *argv[2:]], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def page_text(page, selector):
    return page.evaluate(f"document.querySelector({json.dumps(selector)}).innerText")


@pytest.mark.parametrize("tool,query,flags,picture", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_answer_is_the_scripts(site, tool, query, flags, picture):
    page, _ = site
    last = ask(page, query)
    assert last["code"] == 0, last["stderr"]
    assert flags in last["command"], last["command"]
    ran = run_command(last["command"])
    assert ran.returncode == 0, ran.stderr
    # the page's answer is the script's, byte for byte but for the wall-clock readings
    assert normalise(last["stdout"]) == normalise(ran.stdout)
    assert normalise(last["stderr"]) == normalise(ran.stderr)  # notes too
    assert page.evaluate("document.querySelector('#stdout').textContent") == last["stdout"]
    if picture:
        captions = page.evaluate(
            "[...document.querySelectorAll('#charts figcaption')].map(e => e.textContent)")
        assert any(picture in c for c in captions), captions


def test_json_beside_is_the_returned_dict(site):
    """The JSON pane holds what main() returned: for calc_transformer_mem.py, what --json prints."""
    page, _ = site
    last = ask(page, f"tool=mem&{MODEL}&gpu=h100")
    ran = run_command(last["command"] + " --json")
    shown = page.evaluate("document.querySelector('#json').textContent")
    assert json.loads(shown) == json.loads(ran.stdout)


def test_dropped_config_is_the_model(site, tmp_path):
    """A config.json dropped on the page is written beside the scripts and passed as
    --hf_model_name_or_path; the answer is the script's for that file."""
    page, _ = site
    ask(page, "tool=params")
    with open(os.path.join(ROOT, "tests", "fixtures", "configs", "gpt2.json"),
              encoding="utf-8") as fh:
        config = json.load(fh)
    config["n_layer"] = 5  # not a bundled model: the answer can only come from this file
    text = json.dumps(config, indent=2)
    (tmp_path / "my model.json").write_text(text, encoding="utf-8")
    page.evaluate("""(() => {
        const dt = new DataTransfer();
        dt.items.add(new File([%s], "my model.json", {type: "application/json"}));
        document.querySelector("#dropzone").dispatchEvent(
            new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true}));
    })()""" % json.dumps(text))
    page.wait_for("window.llmcalc.last.command.includes('my_model.json')", timeout=60)
    last = page.evaluate("window.llmcalc.last")
    assert last["command"] == ("python3 calc_transformer_params.py "
                               "--hf_model_name_or_path my_model.json")
    os.rename(tmp_path / "my model.json", tmp_path / "my_model.json")
    ran = run_command(last["command"], cwd=str(tmp_path))
    assert ran.returncode == 0, ran.stderr
    assert last["stdout"] == ran.stdout
    assert "L=5" in last["stdout"]
    # the dropped file rides in the URL: the same question comes back from it
    search = page.evaluate("location.search")
    assert "config=" in search
    again = ask(page, search)
    assert again["stdout"] == ran.stdout


def test_bad_input_is_the_scripts_one_line(site):
    page, _ = site
    last = ask(page, f"tool=mem&{MODEL}&cmd=" + "--num-gpus 8 --tensor-parallel-size 3")
    ran = run_command(last["command"])
    assert ran.returncode == 2 and last["code"] == 2
    line = ran.stderr.strip()
    assert "\n" not in line and line.startswith("calc_transformer_mem.py: error: "), line
    assert page_text(page, "#error") == line
    body = page_text(page, "body")
    assert "Traceback" not in body and 'File "' not in body
    typo = ask(page, "tool=params&hidden-sise=4096")  # a URL key that names no flag
    assert typo["code"] == 2 and typo["stderr"] == run_command(typo["command"]).stderr
    assert "--hidden-sise 4096" in typo["command"]
    bad_quote = ask(page, "tool=params&cmd=--hidden-size '4096")
    assert bad_quote["code"] == 2 and len(bad_quote["stderr"].strip().splitlines()) == 1


def test_url_round_trips_the_inputs(site):
    """Inputs set through the form land in the query string; a fresh load of that URL shows the
    same form and the same answer."""
    page, base = site
    ask(page, "tool=mem")
    page.evaluate("""(() => {
        const set = (id, v) => { const e = document.getElementById(id);
            if (e.type === "checkbox") e.checked = v; else e.value = v;
            const kind = e.tagName === "SELECT" || e.type === "checkbox" ? "change" : "input";
            e.dispatchEvent(new Event(kind)); };
        set("f-model", "qwen3-8b");
        set("f-gpu", "h200");
        set("f-infer", true);
        set("f-output-tokens", "512");
        document.getElementById("cmd").value = "-b 4 --kv-cache-bits 8";
        document.getElementById("form").requestSubmit();
    })()""")
    page.wait_for("window.llmcalc.last.command.includes('--kv-cache-bits 8')", timeout=60)
    first = page.evaluate("window.llmcalc.last")
    url = page.evaluate("location.href")
    fields = ("f-model", "f-gpu", "f-output-tokens", "cmd")
    read = "JSON.stringify([%s, document.getElementById('f-infer').checked])" % ", ".join(
        f"document.getElementById('{f}').value" for f in fields)
    before = page.evaluate(read)
    assert url.startswith(base) and "gpu=h200" in url
    page.goto(url)
    page.wait_for("window.llmcalc && window.llmcalc.ready", timeout=180)
    assert page.evaluate(read) == before
    again = page.evaluate("window.llmcalc.last")
    assert again["command"] == first["command"]
    assert again["stdout"] == first["stdout"] == run_command(first["command"]).stdout


def test_works_offline_once_loaded(built):
    """Once the page has loaded, its service worker holds every file: with the server gone, a
    new question by URL still loads the page and answers (the script's answer)."""
    server, base = serve(built)
    with open(os.path.join(built, "manifest.json"), encoding="utf-8") as fh:
        files = len(json.load(fh)["files"])
    with headless.Browser() as browser:
        page = browser.new_page(base + "?tool=hardware&name=h100")
        page.wait_for("window.llmcalc && window.llmcalc.ready", timeout=180)
        page.wait_for("caches.open('llmcalc-web').then(c => c.keys())"
                      f".then(k => k.length >= {files})", timeout=120)
        server.shutdown()
        server.server_close()
        page.goto(base + "?tool=params&model=gpt2")
        page.wait_for("window.llmcalc && window.llmcalc.ready", timeout=180)
        last = page.evaluate("window.llmcalc.last")
    assert last["code"] == 0, last["stderr"]
    assert last["stdout"] == run_command(last["command"]).stdout
