// Pictures of an answer, drawn as inline SVG from what the script printed and returned (no chart
// library). Each picture appears only when the answer holds what it draws:
//   memory     the script's printed breakdown table (component, GiB, bytes, % total) against
//              the GPU's memory (result.fit.memory_bytes): calc_transformer_mem.py
//   step       result.breakdown_s against result.step_time_s: calc_training_time.py
//   front      result.pareto_front, tokens/s per GPU against tokens/s per user (--search)
//   capacity   result.by_gpu, the capacity plan's rows (--target-request-rate)
//   sweep      result.rows, bus bandwidth against message size (calc_comm.py's sweep)
// Nothing here computes a model quantity: it scales bars and axes to the numbers it is given.

const NS = "http://www.w3.org/2000/svg";
const COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
  "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295"];

function svg(tag, attrs = {}, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}
function tip(node, text) { node.append(svg("title", {}, text)); return node; }
function figure(title, ...body) {
  const f = document.createElement("figure");
  const c = document.createElement("figcaption");
  c.textContent = title;
  f.append(c, ...body);
  return f;
}
const gib = (b) => `${(b / 2 ** 30).toFixed(2)} GiB`;
function fmtTime(s) {
  if (s >= 1) return `${s.toFixed(2)} s`;
  if (s >= 1e-3) return `${(s * 1e3).toFixed(2)} ms`;
  return `${(s * 1e6).toFixed(1)} us`;
}
function fmtNum(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return "-";
  const a = Math.abs(x);
  if (Number.isInteger(x)) return x.toLocaleString("en-US");
  return a >= 100 ? Math.round(x).toLocaleString("en-US") : a >= 1 ? x.toFixed(1) : x.toPrecision(2);
}
function niceTicks(max, n = 5) {
  const raw = max / n;
  const p = 10 ** Math.floor(Math.log10(raw || 1));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * p).find((s) => s >= raw) || p * 10;
  const ticks = [0];
  for (let i = 1; ticks[ticks.length - 1] < max; i += 1) ticks.push(i * step);
  return ticks;
}

// The first breakdown table the script printed: rows "label  GiB  bytes  pct%", then "Total ...".
export function memoryRows(stdout) {
  const rows = [];
  for (const line of stdout.split("\n")) {
    let m = line.match(/^(\S.*?)\s{2,}-?[\d.]+\s+([\d,]+)\s+-?[\d.]+%\s*$/);
    if (m) { rows.push({ label: m[1].trim(), bytes: Number(m[2].replace(/,/g, "")) }); continue; }
    m = line.match(/^(Total.*?)\s{2,}[\d.]+\s+([\d,]+)\s*$/);
    if (m && rows.length) return { rows, total: { label: m[1].trim(), bytes: Number(m[2].replace(/,/g, "")) } };
  }
  return null;
}

function memoryChart(stdout, result) {
  const table = memoryRows(stdout);
  const fit = result && result.fit;
  if (!table || !fit || !fit.memory_bytes) return null;
  const cap = fit.memory_bytes;
  const W = 900; const H = 92; const x0 = 10; const w = W - 20;
  const scale = Math.max(cap, table.total.bytes) * 1.02;
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img",
    "aria-label": `memory per GPU ${gib(table.total.bytes)} against ${gib(cap)}` });
  let x = x0;
  const legend = document.createElement("ul");
  legend.className = "legend";
  table.rows.forEach((r, i) => {
    if (r.bytes <= 0) return;
    const width = (w * r.bytes) / scale;
    const color = COLORS[i % COLORS.length];
    s.append(tip(svg("rect", { x, y: 22, width: Math.max(width, 0.5), height: 34, fill: color }),
      `${r.label}: ${gib(r.bytes)}`));
    x += width;
    const li = document.createElement("li");
    li.innerHTML = `<span class="sw" style="background:${color}"></span>`;
    li.append(`${r.label}: ${gib(r.bytes)}`);
    legend.append(li);
  });
  const cx = x0 + (w * cap) / scale;
  const fits = table.total.bytes <= cap;
  s.append(svg("line", { x1: cx, x2: cx, y1: 12, y2: 66, stroke: "#111", "stroke-width": 2, "stroke-dasharray": "4 3" }));
  s.append(svg("text", { x: Math.min(cx, W - 4), y: 10, "text-anchor": cx > W / 2 ? "end" : "start", class: "lbl" },
    `${fit.gpu || "GPU"}: ${gib(cap)}`));
  s.append(svg("text", { x: x0, y: 82, class: fits ? "lbl ok" : "lbl bad" },
    `${table.total.label}: ${gib(table.total.bytes)}: ${fits ? "fits" : "does not fit"} (${(100 * table.total.bytes / cap).toFixed(0)}% of the GPU)`));
  return figure("Memory per GPU against the GPU's memory (the script's breakdown table)", s, legend);
}

function stepChart(result) {
  const parts = result && result.breakdown_s;
  const step = result && result.step_time_s;
  if (!parts || typeof parts !== "object" || !step) return null;
  const rows = Object.entries(parts).filter(([, v]) => typeof v === "number" && v > 0).sort((a, b) => b[1] - a[1]);
  if (!rows.length) return null;
  const W = 900; const rowH = 22; const labelW = 270; const H = rows.length * rowH + 30;
  const max = Math.max(...rows.map((r) => r[1]));
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", "aria-label": "training step breakdown" });
  rows.forEach(([name, v], i) => {
    const y = 8 + i * rowH;
    const width = ((W - labelW - 170) * v) / max;
    s.append(svg("text", { x: labelW - 8, y: y + 14, "text-anchor": "end", class: "lbl" }, name.replace(/_/g, " ")));
    s.append(tip(svg("rect", { x: labelW, y: y + 2, width: Math.max(width, 1), height: rowH - 6, fill: COLORS[i % COLORS.length] }),
      `${name}: ${fmtTime(v)}`));
    s.append(svg("text", { x: labelW + width + 6, y: y + 14, class: "lbl" }, `${fmtTime(v)}  ${(100 * v / step).toFixed(1)}%`));
  });
  s.append(svg("text", { x: labelW, y: H - 6, class: "lbl" }, `step time ${fmtTime(step)} (percent of the step)`));
  return figure("Training step breakdown (result.breakdown_s)", s);
}

function frontChart(result) {
  const pts = result && Array.isArray(result.pareto_front) ? result.pareto_front
    .filter((p) => p.tokens_per_s_per_user > 0 && p.tokens_per_s_per_gpu > 0) : [];
  if (pts.length < 1) return null;
  const W = 900; const H = 340; const L = 70; const R = 20; const T = 16; const B = 46;
  const xmax = Math.max(...pts.map((p) => p.tokens_per_s_per_user));
  const ymax = Math.max(...pts.map((p) => p.tokens_per_s_per_gpu));
  const xt = niceTicks(xmax); const yt = niceTicks(ymax);
  const X = (v) => L + ((W - L - R) * v) / xt[xt.length - 1];
  const Y = (v) => H - B - ((H - B - T) * v) / yt[yt.length - 1];
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", "aria-label": "latency-throughput front" });
  for (const t of xt) {
    s.append(svg("line", { x1: X(t), x2: X(t), y1: T, y2: H - B, class: "grid" }));
    s.append(svg("text", { x: X(t), y: H - B + 16, "text-anchor": "middle", class: "lbl" }, fmtNum(t)));
  }
  for (const t of yt) {
    s.append(svg("line", { x1: L, x2: W - R, y1: Y(t), y2: Y(t), class: "grid" }));
    s.append(svg("text", { x: L - 6, y: Y(t) + 4, "text-anchor": "end", class: "lbl" }, fmtNum(t)));
  }
  s.append(svg("text", { x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle", class: "lbl axis" },
    "tokens/s per user (faster for each user →)"));
  s.append(svg("text", { x: 14, y: (T + H - B) / 2, "text-anchor": "middle", class: "lbl axis",
    transform: `rotate(-90 14 ${(T + H - B) / 2})` }, "tokens/s per GPU"));
  const sorted = [...pts].sort((a, b) => a.tokens_per_s_per_user - b.tokens_per_s_per_user);
  s.append(svg("polyline", { points: sorted.map((p) => `${X(p.tokens_per_s_per_user)},${Y(p.tokens_per_s_per_gpu)}`).join(" "),
    fill: "none", stroke: COLORS[0], "stroke-width": 2 }));
  for (const p of sorted) {
    const desc = ["tp", "pp", "dp", "ep"].filter((k) => p[k] > 1).map((k) => `${k} ${p[k]}`).join(" ") || "tp 1";
    const label = `${desc}, ${p.replicas ?? 1} replica(s), C ${p.concurrency}: ${fmtNum(p.tokens_per_s_per_user)} tok/s/user, `
      + `${fmtNum(p.tokens_per_s_per_gpu)} tok/s/GPU, TTFT ${fmtTime(p.ttft_s)}, TPOT ${fmtTime(p.tpot_s)}`;
    s.append(tip(svg("circle", { cx: X(p.tokens_per_s_per_user), cy: Y(p.tokens_per_s_per_gpu), r: 5, fill: COLORS[1] }), label));
  }
  return figure(`Serving: throughput against speed per user, the Pareto front (${pts.length} points; hover for the layout)`, s);
}

function capacityTable(result) {
  const rows = result && result.by_gpu && typeof result.by_gpu === "object" ? Object.values(result.by_gpu) : [];
  if (!rows.length) return null;
  const maxGpus = Math.max(...rows.map((r) => r.num_gpus || 0), 1);
  const table = document.createElement("table");
  table.className = "capacity";
  const head = ["GPU", "layout per replica", "req/s per replica", "replicas", "GPUs", "", "$/hour",
    "$/M input", "$/M output", "TTFT p90", "TPOT p90"];
  table.innerHTML = `<thead><tr>${head.map((h) => `<th>${h}</th>`).join("")}</tr></thead>`;
  const body = document.createElement("tbody");
  for (const r of rows) {
    const tr = document.createElement("tr");
    if (r.gpu === result.gpu) tr.className = "winner";
    const op = r.operating_point || {};
    const layout = ["tp", "pp", "dp", "ep"].map((k) => `${k} ${r[k] ?? "-"}`).join(", ");
    const cells = [r.gpu + (r.gpu === result.gpu ? " (chosen)" : ""), layout, fmtNum(r.replica_request_rate),
      fmtNum(r.replicas), fmtNum(r.num_gpus), null, fmtNum(r.dollars_per_hour),
      fmtNum(r.cost_per_million_input_tokens), fmtNum(r.cost_per_million_output_tokens),
      op.ttft_p90_s !== undefined ? fmtTime(op.ttft_p90_s) : "-", op.tpot_p90_s !== undefined ? fmtTime(op.tpot_p90_s) : "-"];
    for (const c of cells) {
      const td = document.createElement("td");
      if (c === null) {
        td.innerHTML = `<span class="gbar" style="width:${Math.round((120 * (r.num_gpus || 0)) / maxGpus)}px"></span>`;
      } else td.textContent = c;
      tr.append(td);
    }
    body.append(tr);
  }
  table.append(body);
  const rate = result.target_request_rate !== undefined ? ` for ${fmtNum(result.target_request_rate)} requests/s` : "";
  return figure(`Capacity plan${rate} (result.by_gpu)`, table);
}

function sweepChart(result) {
  const rows = result && Array.isArray(result.rows) ? result.rows
    .filter((r) => r.size_bytes > 0 && r.busbw_bytes_per_s >= 0) : [];
  if (rows.length < 3) return null;
  const W = 900; const H = 250; const L = 70; const R = 20; const T = 14; const B = 46;
  const lx = rows.map((r) => Math.log2(r.size_bytes));
  const x0 = Math.min(...lx); const x1 = Math.max(...lx);
  const gbs = rows.map((r) => r.busbw_bytes_per_s / 1e9);
  const yt = niceTicks(Math.max(...gbs, 1e-9));
  const X = (v) => L + ((W - L - R) * (v - x0)) / (x1 - x0 || 1);
  const Y = (v) => H - B - ((H - B - T) * v) / yt[yt.length - 1];
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", "aria-label": "bus bandwidth by size" });
  for (const t of yt) {
    s.append(svg("line", { x1: L, x2: W - R, y1: Y(t), y2: Y(t), class: "grid" }));
    s.append(svg("text", { x: L - 6, y: Y(t) + 4, "text-anchor": "end", class: "lbl" }, fmtNum(t)));
  }
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  for (let e = Math.ceil(x0 / 10) * 10; e <= x1; e += 10) {
    s.append(svg("line", { x1: X(e), x2: X(e), y1: T, y2: H - B, class: "grid" }));
    s.append(svg("text", { x: X(e), y: H - B + 16, "text-anchor": "middle", class: "lbl" }, `1 ${units[e / 10] || `2^${e}`}`));
  }
  s.append(svg("text", { x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle", class: "lbl axis" }, "message size (log scale)"));
  s.append(svg("text", { x: 14, y: (T + H - B) / 2, "text-anchor": "middle", class: "lbl axis",
    transform: `rotate(-90 14 ${(T + H - B) / 2})` }, "bus bandwidth, GB/s"));
  s.append(svg("polyline", { points: rows.map((r, i) => `${X(lx[i])},${Y(gbs[i])}`).join(" "),
    fill: "none", stroke: COLORS[0], "stroke-width": 2 }));
  rows.forEach((r, i) => s.append(tip(svg("circle", { cx: X(lx[i]), cy: Y(gbs[i]), r: 3, fill: COLORS[0] }),
    `${r.size_bytes.toLocaleString("en-US")} B: ${fmtTime(r.time_s)}, busbw ${gbs[i].toFixed(2)} GB/s, ${r.algorithm || ""} ${r.regime || ""}`)));
  const op = result.inputs && result.inputs.op ? `${result.inputs.op.replace(/_/g, "-")} over ${result.inputs.num_gpus} GPUs: ` : "";
  return figure(`${op}bus bandwidth against message size (result.rows)`, s);
}

export function drawCharts(box, stdout, result) {
  const figs = [memoryChart(stdout, result), stepChart(result), frontChart(result), capacityTable(result),
    sweepChart(result)]
    .filter(Boolean);
  box.replaceChildren(...figs);
}
