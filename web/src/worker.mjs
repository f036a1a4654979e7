// The page's Python, in a worker so the page stays responsive: Pyodide (from ./pyodide/, copied
// from the npm package by web/build.py), the built scripts (./py/) and the bundled configs
// (./configs.json) written into its file system, and runner.py calling the scripts' main().
// Messages in: {id, op: "describe"|"run"|"split"|"write", ...}; out: {id, ok, value|error} and
// {progress: text, step, steps} while starting.
import { loadPyodide } from "./pyodide/pyodide.mjs";

const HOME = "/home/pyodide";
let py = null;
let runner = null;
const loaded = new Set();   // scripts written and imported
let manifest = null;
let pending = 0;            // requests queued or running: the preloader waits for none

function progress(step, text) {
  postMessage({ progress: text, step, steps: 5 });
}

async function fetchText(path) {
  const r = await fetch(path);
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.text();
}

async function ensureScript(script) {
  if (loaded.has(script)) return;
  py.FS.writeFile(`${HOME}/${script}`, await fetchText(`py/${script}`));
  runner.load(script);
  loaded.add(script);
}

async function start() {
  manifest = await (await fetch("manifest.json")).json();
  progress(1, "downloading the Python runtime (Pyodide: 9.6 MB of WebAssembly and the standard library)");
  py = await loadPyodide({ stdout: () => {}, stderr: () => {} });
  progress(2, `starting Python ${py.version ? "(Pyodide " + py.version + ")" : ""}`);
  const [runnerSrc, configs] = await Promise.all([
    fetchText("runner.py"), fetch("configs.json").then((r) => r.json())]);
  py.FS.writeFile(`${HOME}/llmcalc_web_runner.py`, runnerSrc);
  const dir = `${HOME}/${configs.dir}`;
  py.FS.mkdirTree(dir);
  for (const [name, text] of Object.entries(configs.files)) py.FS.writeFile(`${dir}/${name}.json`, text);
  py.runPython(`import os, sys\nos.chdir(${JSON.stringify(HOME)})\nsys.path.insert(0, ${JSON.stringify(HOME)})`);
  runner = py.pyimport("llmcalc_web_runner");
  // hardware.py beside the scripts: every --gpu NAME reads it (imported by the scripts on demand).
  py.FS.writeFile(`${HOME}/hardware.py`, await fetchText("py/hardware.py"));
  progress(3, `Python ready; ${Object.keys(configs.files).length} model configs in place`);
}

const started = start();

// After the first answers, compile the other scripts one at a time while nothing waits, so that
// opening another view answers as fast as the current one.
function preload() {
  setTimeout(async () => {
    if (pending) return;
    const next = manifest.tools.map((t) => t.script).find((s) => !loaded.has(s));
    if (!next) return;
    try { await ensureScript(next); } catch (e) { return; }
    preload();
  }, 200);
}

const handlers = {
  async describe({ script }) {
    progress(4, `compiling ${script}`);
    await ensureScript(script);
    return JSON.parse(runner.describe(script));
  },
  async run({ script, argv }) {
    await ensureScript(script);
    const t0 = performance.now();
    const res = JSON.parse(runner.run(script, JSON.stringify(argv)));
    res.ms = performance.now() - t0;
    return res;
  },
  async split({ text }) { return JSON.parse(runner.split_command(text)); },
  async write({ path, text }) {
    if (!/^[\w.-]+\.json$/.test(path)) throw new Error(`refused file name ${path}`);
    py.FS.writeFile(`${HOME}/${path}`, text);
    return path;
  },
};

let chain = Promise.resolve();
onmessage = (ev) => {
  const msg = ev.data;
  pending += 1;
  chain = chain.then(async () => {
    try {
      await started;
      postMessage({ id: msg.id, ok: true, value: await handlers[msg.op](msg) });
    } catch (e) {
      postMessage({ id: msg.id, ok: false, error: String(e && e.message || e) });
    } finally {
      pending -= 1;
      if (!pending && msg.op === "run") preload();
    }
  });
};
started.catch((e) => postMessage({ fatal: String(e && e.message || e) }));
