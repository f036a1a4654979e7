// The page: one view per built script, its form drawn from the script's own argparse parser
// (runner.describe), each answer the script's own main() (runner.run, in worker.mjs). No formula
// and no flag list lives here: what the page knows of a script is which of its flags to show
// first (COMMON, matched by name; a flag no rule names is under "More flags") and which keys of
// the returned dict to draw (charts.js).
import { drawCharts } from "./charts.js";

const MODEL = "hf_model_name_or_path";   // the flag that takes a config.json (every model tool)
// The usual questions, in order, matched against each flag's dest. A flag that matches none is
// still on the form, under "More flags"; the "All flags" field takes any command line.
const COMMON = [
  ["model", /^hf_model_name_or_path$/],
  ["what to answer", /^(name|compare|op|size|train|infer|search|target_request_rate)$/],
  ["GPU", /^gpu$/],
  ["batch", /^(batch_size|batch_size_per_gpu|micro_batch_size|global_batch_size|concurrency)$/],
  ["sequence", /^(sequence_length|prompt_tokens|output_tokens|tokens)$/],
  ["precision", /^(dtype|precision)$/],
  ["parallelism", /^(num_gpus|tensor_parallel_size|pipeline_parallel_size|data_parallel_size|context_parallel_size|expert_parallelism|expert_parallel_size|zero_stage|tp|pp|dp|ep|cp)$/],
  ["fine-tuning", /^(finetune\w*|lora_\w+|qlora\w*|recompute)$/],
  ["targets", /^(max_ttft_ms|max_tpot_ms|cost_per_gpu_hour)$/],
];
const DEFAULT_TOOL = "mem";
const URL_LIMIT = 16000;  // a dropped config rides in the URL up to this many characters

const $ = (sel) => document.querySelector(sel);
const state = {
  manifest: null, tool: null, parsers: {}, values: {}, model: "", dropped: null,
  generation: 0, timer: null,
};
// What tests and benchmarks read: answers so far, the last one, start-up time.
const probe = window.llmcalc = { runs: 0, last: null, ready: false, t0: performance.now(),
  firstAnswerMs: null, describeMs: null };

// ---- the worker --------------------------------------------------------------------------------
const worker = new Worker("worker.mjs", { type: "module" });
const waiting = new Map();
let nextId = 0;
function call(op, args = {}) {
  return new Promise((resolve, reject) => {
    const id = ++nextId;
    waiting.set(id, { resolve, reject });
    worker.postMessage({ id, op, ...args });
  });
}
worker.onmessage = (ev) => {
  const m = ev.data;
  if (m.progress) {  // start-up: the progress bar; later (another view's script): a word
    if (!probe.ready) return showProgress(m.step, m.steps, m.progress);
    $("#timing").textContent = `${m.progress}…`;
    return null;
  }
  if (m.fatal) return showProgress(0, 1, `could not start Python: ${m.fatal}`, true);
  const w = waiting.get(m.id);
  waiting.delete(m.id);
  if (m.ok) w.resolve(m.value); else w.reject(new Error(m.error));
};
worker.onerror = (e) => showProgress(0, 1, `could not start the worker: ${e.message}`, true);

function showProgress(step, steps, text, failed = false) {
  const secs = ((performance.now() - probe.t0) / 1000).toFixed(1);
  $("#progress").hidden = false;
  $("#progress-fill").style.width = `${Math.round((100 * step) / steps)}%`;
  $("#progress-text").textContent = `${text} (${secs} s)`;
  if (failed) $("#progress").classList.add("failed");
}
function hideProgress() { $("#progress").hidden = true; }

// ---- small helpers -----------------------------------------------------------------------------
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}
const longFlag = (a) => a.flags.find((f) => f.startsWith("--") && !f.startsWith("--no-")) || a.flags[0];
const keyOf = (a) => (a.flags.length ? longFlag(a).replace(/^-+/, "") : a.dest);
function shQuote(s) { return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`; }
function firstSentence(text, n = 120) {
  // up to the first ". " or "; " (e.g./i.e. kept), cut at a word past n, brackets closed
  let s = (text || "").replace(/\s+/g, " ").trim().replace(/\b(e\.g|i\.e|etc|vs)\./g, "$1\u2024");
  const cut = s.search(/[.;](\s|$)/);
  if (cut > 0) s = s.slice(0, cut);
  if (s.length > n) s = `${s.slice(0, s.lastIndexOf(" ", n) > 40 ? s.lastIndexOf(" ", n) : n)} …`;
  s = s.replace(/\u2024/g, ".");
  const open = (s.match(/\(/g) || []).length - (s.match(/\)/g) || []).length;
  return s + ")".repeat(Math.max(open, 0));
}
function b64encode(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
function b64decode(s) {
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}
function safeName(name) {
  let n = (name || "config.json").split(/[\\/]/).pop().replace(/[^\w.-]/g, "_").replace(/^\.+/, "");
  if (!n.endsWith(".json")) n += ".json";
  return n;
}

// ---- the form, from the parser -----------------------------------------------------------------
function modelPath() {
  if (state.model === "dropped" && state.dropped) return state.dropped.name;
  if (state.model && state.manifest.configs.includes(state.model)) {
    return `${state.manifest.config_dir}/${state.model}.json`;
  }
  return null;
}

function modelWidget(a) {
  const select = el("select", { id: "f-model", "data-key": "model" },
    el("option", { value: "" }, "none (the shape from flags, or the defaults)"));
  if (state.dropped) select.append(el("option", { value: "dropped" }, `dropped: ${state.dropped.name}`));
  const group = el("optgroup", { label: "bundled configs (tests/fixtures/configs)" });
  for (const name of state.manifest.configs) group.append(el("option", { value: name }, name));
  select.append(group);
  select.value = state.model;
  select.addEventListener("change", () => { state.model = select.value; schedule(0); });
  const file = el("input", { type: "file", accept: ".json,application/json", id: "config-file" });
  file.addEventListener("change", async () => {
    if (file.files[0]) await useConfig(file.files[0].name, await file.files[0].text());
  });
  const paste = el("textarea", { id: "config-paste", rows: 4, placeholder: "paste a config.json here" });
  const drop = el("div", { id: "dropzone", class: "dropzone" },
    "drop a config.json here, or ", el("label", { class: "filebtn" }, "choose a file", file),
    el("details", {}, el("summary", {}, "paste one"), paste,
      el("button", { type: "button", onclick: () => useConfig("config.json", paste.value) }, "use it")));
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", async (e) => {
    e.preventDefault();
    e.stopPropagation();
    drop.classList.remove("over");
    const f = e.dataTransfer.files[0];
    if (f) await useConfig(f.name, await f.text());
  });
  return el("div", { class: "field model" },
    el("span", { class: "flag", title: a.help }, `model (${longFlag(a)})`), select, drop,
    el("span", { class: "hint" }, "read as a local file by the script's config reader: no hub, never remote code"));
}

async function useConfig(name, text) {
  state.dropped = { name: safeName(name), text };
  await call("write", { path: state.dropped.name, text });
  state.model = "dropped";
  renderForm();
  schedule(0);
}

function fieldFor(a, common) {
  const key = keyOf(a);
  const value = state.values[key] ?? "";
  const label = a.flags.length ? a.flags.join(", ") : a.dest;
  let input;
  if (a.boolean_optional) {
    input = el("select", {}, el("option", { value: "" }, "default"), el("option", { value: "on" }, longFlag(a)),
      el("option", { value: "off" }, a.flags.find((f) => f.startsWith("--no-")) || "off"));
  } else if (!a.takes_value) {
    input = el("input", { type: "checkbox" });
    input.checked = value === "1";
  } else if (a.choices) {
    input = el("select", {}, el("option", { value: "" }, `default${a.default !== null ? ` (${a.default})` : ""}`),
      ...a.choices.map((c) => el("option", { value: c }, c)));
  } else {
    const ph = a.default !== null && a.default !== undefined && a.default !== false ? String(a.default)
      : (a.metavar || "");
    input = el("input", { type: "text", placeholder: ph, spellcheck: "false" });
  }
  if (input.type !== "checkbox") input.value = value;
  input.id = `f-${key}`;
  input.dataset.key = key;
  input.addEventListener(input.tagName === "SELECT" || input.type === "checkbox" ? "change" : "input", () => {
    state.values[key] = input.type === "checkbox" ? (input.checked ? "1" : "") : input.value;
    schedule(input.tagName === "INPUT" && input.type === "text" ? 600 : 0);
  });
  return el("label", { class: `field${input.type === "checkbox" ? " check" : ""}`, title: a.help },
    el("span", { class: "flag" }, label), input,
    common ? el("span", { class: "hint" }, firstSentence(a.help)) : null);
}

function renderForm() {
  const desc = state.parsers[state.tool.script];
  $("#description").textContent = desc.description.split("\n")[0];
  const common = $("#common");
  common.replaceChildren(el("legend", {}, "The usual questions"));
  const more = $("#more-body");
  more.replaceChildren();
  const used = new Set();
  for (const [, rule] of COMMON) {
    for (const a of desc.actions) {
      if (used.has(a) || !rule.test(a.dest)) continue;
      used.add(a);
      common.append(a.dest === MODEL ? modelWidget(a) : fieldFor(a, true));
    }
  }
  for (const a of desc.actions) {  // positionals are questions too
    if (!used.has(a) && !a.flags.length) { used.add(a); common.append(fieldFor(a, true)); }
  }
  let group = null;
  for (const a of desc.actions) {
    if (used.has(a)) continue;
    if (a.group !== group) { group = a.group; more.append(el("h3", {}, group || "")); }
    more.append(fieldFor(a, false));
  }
}

function formArgv() {
  const desc = state.parsers[state.tool.script];
  const positional = [];
  const options = [];
  for (const a of desc.actions) {
    if (a.dest === MODEL) {
      const path = modelPath();
      if (path) options.push(longFlag(a), path);
      continue;
    }
    const v = (state.values[keyOf(a)] ?? "").trim();
    if (!v) continue;
    const many = a.nargs === "+" || a.nargs === "*" || typeof a.nargs === "number";
    const words = many ? v.split(/\s+/) : [v];
    if (!a.flags.length) positional.push(...words);
    else if (a.boolean_optional) options.push(v === "off" ? a.flags.find((f) => f.startsWith("--no-")) : longFlag(a));
    else if (!a.takes_value) { if (v === "1") options.push(longFlag(a)); }
    else options.push(longFlag(a), ...words);
  }
  // a URL key that names no flag of this script goes to it as one, so that its parser says so
  // (a typo in a shared link is an error, not a question silently answered without it)
  const known = new Set(desc.actions.map(keyOf));
  for (const [k, v] of Object.entries(state.values)) {
    if (!known.has(k) && v) options.push(`--${k}`, v);
  }
  return [...positional, ...options];
}

// ---- the URL: every input in the query string --------------------------------------------------
function writeURL() {
  const q = new URLSearchParams();
  q.set("tool", state.tool.key);
  const desc = state.parsers[state.tool.script];
  if (state.model === "dropped" && state.dropped) {
    const enc = b64encode(state.dropped.text);
    if (enc.length <= URL_LIMIT) { q.set("config", enc); q.set("config_name", state.dropped.name); }
  } else if (state.model) q.set("model", state.model);
  const known = new Set(desc.actions.map(keyOf));
  for (const a of desc.actions) {
    const v = state.values[keyOf(a)];
    if (a.dest !== MODEL && v) q.set(keyOf(a), v);
  }
  for (const [k, v] of Object.entries(state.values)) if (!known.has(k) && v) q.set(k, v);
  const cmd = $("#cmd").value.trim();
  if (cmd) q.set("cmd", cmd);
  history.replaceState(null, "", `${location.pathname}?${q}`);
}

function readURL() {
  const q = new URLSearchParams(location.search);
  const key = q.get("tool") || DEFAULT_TOOL;
  state.tool = state.manifest.tools.find((t) => t.key === key) || state.manifest.tools[0];
  state.values = {};
  for (const [k, v] of q) if (!["tool", "model", "config", "config_name", "cmd"].includes(k)) state.values[k] = v;
  state.model = q.get("model") || "";
  if (q.get("config")) {
    try {
      state.dropped = { name: safeName(q.get("config_name")), text: b64decode(q.get("config")) };
      state.model = "dropped";
    } catch (e) { state.dropped = null; }
  }
  $("#cmd").value = q.get("cmd") || "";
}

// ---- answering ---------------------------------------------------------------------------------
function schedule(ms) {
  clearTimeout(state.timer);
  state.timer = setTimeout(answer, ms);
}

async function answer() {
  const gen = ++state.generation;
  const script = state.tool.script;
  let argv = formArgv();
  const typed = $("#cmd").value.trim();
  document.body.dataset.state = "running";
  if (typed) {
    const split = await call("split", { text: typed });
    if (split.error) return render(gen, { code: 2, stdout: "", stderr: split.error, result: "null", command: "" });
    const other = split.script && state.manifest.tools.find((t) => t.script === split.script);
    if (other && other.script !== script) {  // a whole command line for another tool: go there
      $("#cmd").value = split.argv.map(shQuote).join(" ");
      return openTool(other.key, false);
    }
    argv = argv.concat(split.argv);
  }
  writeURL();
  const res = await call("run", { script, argv });
  render(gen, res);
}

function render(gen, res) {
  if (gen !== state.generation) return;  // a newer question was asked meanwhile
  const ok = res.code === 0;
  $("#command").textContent = res.command;
  const err = $("#error");
  err.hidden = ok;
  err.textContent = ok ? "" : (res.stderr.trim() || `exit status ${res.code}`);
  const notes = $("#notes");
  notes.hidden = !ok || !res.stderr.trim();
  notes.textContent = ok ? res.stderr.trim() : "";
  $("#stdout").textContent = res.stdout;
  $(".panes").hidden = !ok && !res.stdout;
  const big = res.result.length > 2e6;  // a pane of megabytes would stall the page
  $("#json").textContent = !ok ? "" : big ? `${res.result.slice(0, 2e5)}\n… (${res.result.length.toLocaleString("en-US")} characters; --json prints it all)` : res.result;
  let result = null;
  try { result = ok ? JSON.parse(res.result) : null; } catch (e) { result = null; }
  drawCharts($("#charts"), ok ? res.stdout : "", result);
  $("#timing").textContent = res.ms !== undefined ? `answered in ${Math.round(res.ms)} ms` : "";
  probe.runs += 1;
  probe.last = { code: res.code, stdout: res.stdout, stderr: res.stderr, command: res.command,
    ms: res.ms, result: res.result };
  if (probe.firstAnswerMs === null) probe.firstAnswerMs = performance.now() - probe.t0;
  document.body.dataset.state = ok ? "answered" : "error";
}

// ---- views -------------------------------------------------------------------------------------
function renderTabs() {
  const nav = $("#tabs");
  nav.replaceChildren(...state.manifest.tools.map((t) => el("a", {
    href: `?tool=${t.key}`, class: t.key === state.tool.key ? "tab active" : "tab", "data-tool": t.key,
    onclick: (e) => { e.preventDefault(); openTool(t.key, true); },
  }, t.key.replace(/_/g, " "))));
}

// The script's parser (runner.describe); a script whose parser cannot be read still answers
// through the "All flags" field.
async function describe(script) {
  if (!state.parsers[script]) {
    try {
      state.parsers[script] = await call("describe", { script });
    } catch (e) {
      state.parsers[script] = { prog: script, actions: [],
        description: `(could not read its flags: ${e.message}; the "All flags" field still works)` };
    }
  }
  return state.parsers[script];
}

async function openTool(key, fresh) {
  state.tool = state.manifest.tools.find((t) => t.key === key);
  if (fresh) { state.values = {}; $("#cmd").value = ""; if (state.model !== "dropped") state.model = ""; }
  renderTabs();
  document.body.dataset.state = "loading";
  await describe(state.tool.script);
  renderForm();
  await answer();
}

// Read the inputs from the query string, draw the form and answer (on load, and for tests and
// benchmarks: window.llmcalc.open("tool=mem&model=...") asks a question as a shared URL would).
async function applyURL() {
  readURL();
  renderTabs();
  if (state.dropped) await call("write", { path: state.dropped.name, text: state.dropped.text });
  await describe(state.tool.script);
  renderForm();
  await answer();
  return probe.last;
}
probe.open = (search) => {
  history.replaceState(null, "", `${location.pathname}?${search.replace(/^\?/, "")}`);
  return applyURL();
};

async function main() {
  state.manifest = await (await fetch("manifest.json")).json();
  $("#version").textContent = `build ${state.manifest.version}`;
  readURL();
  renderTabs();
  const t = performance.now();
  await describe(state.tool.script);
  probe.describeMs = performance.now() - t;
  showProgress(5, 5, "answering");
  $("#app").hidden = false;
  await applyURL();
  hideProgress();
  probe.ready = true;
  $("#form").addEventListener("submit", (e) => { e.preventDefault(); schedule(0); });
  $("#cmd").addEventListener("change", () => schedule(0));
  $("#copy").addEventListener("click", () => navigator.clipboard?.writeText($("#command").textContent));
  // a config.json dropped anywhere on the page is the model (the browser would open it instead)
  window.addEventListener("dragover", (e) => e.preventDefault());
  window.addEventListener("drop", async (e) => {
    e.preventDefault();
    const f = e.dataTransfer && e.dataTransfer.files[0];
    if (f && state.parsers[state.tool.script].actions.some((a) => a.dest === MODEL)) {
      await useConfig(f.name, await f.text());
    }
  });
  if ("serviceWorker" in navigator && location.protocol.startsWith("http")) {
    navigator.serviceWorker.register("sw.js").catch(() => {});
  }
}

main().catch((e) => showProgress(0, 1, `the page failed: ${e.message}`, true));
