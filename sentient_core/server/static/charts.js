// Plain SVG charts for the panel: line charts, a heat map and stacked bars.
// Every chart also writes a one-line text summary and a data table, so the
// figures are readable without seeing the drawing.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const W = 360, H = 170, PAD_L = 44, PAD_R = 8, PAD_T = 8, PAD_B = 22;

function svgEl(name, attrs, parent) {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  if (parent) parent.appendChild(el);
  return el;
}

function fmt(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  const a = Math.abs(v);
  if (a !== 0 && (a < 0.01 || a >= 1e5)) return v.toExponential(2);
  return Number.isInteger(v) ? String(v) : v.toFixed(3);
}

// Replace everything in a figure but its caption: svg, summary, data table.
function resetFigure(fig, label) {
  for (const child of Array.from(fig.children)) {
    if (child.tagName.toLowerCase() !== "figcaption") child.remove();
  }
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label });
  fig.appendChild(svg);
  return svg;
}

function addSummary(fig, text) {
  const p = document.createElement("p");
  p.className = "summary";
  p.textContent = text;
  fig.appendChild(p);
}

function addTable(fig, header, rows, max = 40) {
  const d = document.createElement("details");
  const s = document.createElement("summary");
  s.textContent = `Data (last ${Math.min(rows.length, max)} of ${rows.length})`;
  d.appendChild(s);
  const t = document.createElement("table");
  const tr = document.createElement("tr");
  for (const h of header) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = h;
    tr.appendChild(th);
  }
  t.appendChild(tr);
  for (const r of rows.slice(-max)) {
    const row = document.createElement("tr");
    for (const c of r) {
      const td = document.createElement("td");
      td.textContent = typeof c === "number" ? fmt(c) : String(c);
      row.appendChild(td);
    }
    t.appendChild(row);
  }
  d.appendChild(t);
  fig.appendChild(d);
}

function axes(svg, x0, x1, y0, y1) {
  svgEl("line", { x1: PAD_L, y1: H - PAD_B, x2: W - PAD_R, y2: H - PAD_B, stroke: "#57606a" }, svg);
  svgEl("line", { x1: PAD_L, y1: PAD_T, x2: PAD_L, y2: H - PAD_B, stroke: "#57606a" }, svg);
  const label = (x, y, text, anchor) =>
    (svgEl("text", { x, y, "font-size": 10, "text-anchor": anchor, fill: "#57606a" }, svg).textContent = text);
  label(PAD_L - 4, PAD_T + 8, fmt(y1), "end");
  label(PAD_L - 4, H - PAD_B, fmt(y0), "end");
  label(PAD_L, H - 6, `it ${x0}`, "start");
  label(W - PAD_R, H - 6, `it ${x1}`, "end");
}

function scale(v, lo, hi, a, b) {
  return hi === lo ? (a + b) / 2 : a + ((v - lo) / (hi - lo)) * (b - a);
}

// series: [{name, color, points: [[x, y], ...]}]
function lineChart(fig, series, opts = {}) {
  const pts = series.flatMap((s) => s.points);
  const svg = resetFigure(fig, opts.label || "line chart");
  if (!pts.length) {
    addSummary(fig, "No iterations yet.");
    return;
  }
  const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs);
  let y0 = opts.yMin ?? Math.min(...ys), y1 = opts.yMax ?? Math.max(...ys);
  if (opts.includeZero) y0 = Math.min(0, y0);
  if (y0 === y1) {
    if (opts.includeZero && y0 === 0) y1 = 1;
    else { y0 -= 1; y1 += 1; }
  }
  axes(svg, x0, x1, y0, y1);
  const legend = [];
  for (const s of series) {
    if (!s.points.length) continue;
    const d = s.points
      .map((p, i) => `${i ? "L" : "M"}${scale(p[0], x0, x1, PAD_L, W - PAD_R).toFixed(1)},${scale(p[1], y0, y1, H - PAD_B, PAD_T).toFixed(1)}`)
      .join(" ");
    svgEl("path", { d, fill: "none", stroke: s.color, "stroke-width": 2 }, svg);
    // Dots where points are few (one point draws no line).
    for (const p of s.points.length <= 40 ? s.points : s.points.slice(-1)) {
      svgEl("circle", { cx: scale(p[0], x0, x1, PAD_L, W - PAD_R).toFixed(1),
        cy: scale(p[1], y0, y1, H - PAD_B, PAD_T).toFixed(1), r: 2.5, fill: s.color }, svg);
    }
    const last = s.points[s.points.length - 1];
    const vals = s.points.map((p) => p[1]);
    legend.push(`${s.name}: now ${fmt(last[1])} (iteration ${last[0]}), min ${fmt(Math.min(...vals))}, max ${fmt(Math.max(...vals))}`);
  }
  svg.setAttribute("aria-label", `${opts.label}. ${legend.join("; ")}`);
  addSummary(fig, legend.join("; ") + (opts.note ? `. ${opts.note}` : "."));
  const byX = new Map();
  series.forEach((s, i) => s.points.forEach(([x, y]) => {
    if (!byX.has(x)) byX.set(x, new Array(series.length).fill(""));
    byX.get(x)[i] = y;
  }));
  addTable(fig, ["iteration", ...series.map((s) => s.name)],
    [...byX.entries()].sort((a, b) => a[0] - b[0]).map(([x, v]) => [x, ...v]));
}

// columns: [{x, values: {axis: v}}], axisNames: the 16 SMF axes in order
function heatMap(fig, axisNames, columns, opts = {}) {
  const svg = resetFigure(fig, opts.label || "heat map");
  if (!columns.length) {
    addSummary(fig, "No iterations yet.");
    return;
  }
  const left = 78, rowH = (H - PAD_T - PAD_B) / axisNames.length;
  const colW = (W - left - PAD_R) / columns.length;
  let maxAbs = 1e-9;
  for (const c of columns) for (const a of axisNames) maxAbs = Math.max(maxAbs, Math.abs(c.values[a] || 0));
  axisNames.forEach((a, r) => {
    svgEl("text", { x: left - 4, y: PAD_T + rowH * (r + 0.75), "font-size": 8.5, "text-anchor": "end", fill: "#57606a" }, svg).textContent = a;
    columns.forEach((c, i) => {
      const v = c.values[a] || 0, t = Math.min(1, Math.abs(v) / maxAbs);
      const shade = Math.round(255 - t * 200);
      const fill = v >= 0 ? `rgb(${shade},${shade},255)` : `rgb(255,${shade},${shade})`;
      svgEl("rect", { x: left + i * colW, y: PAD_T + r * rowH, width: Math.max(colW, 0.6), height: rowH, fill }, svg);
    });
  });
  const x0 = columns[0].x, x1 = columns[columns.length - 1].x;
  svgEl("text", { x: left, y: H - 6, "font-size": 10, fill: "#57606a" }, svg).textContent = `it ${x0}`;
  svgEl("text", { x: W - PAD_R, y: H - 6, "font-size": 10, "text-anchor": "end", fill: "#57606a" }, svg).textContent = `it ${x1}`;
  const now = columns[columns.length - 1].values;
  const ranked = axisNames.map((a) => [a, now[a] || 0]).sort((p, q) => Math.abs(q[1]) - Math.abs(p[1]));
  const text = `After iteration ${x1}: strongest axes ${ranked.slice(0, 3).map(([a, v]) => `${a} ${fmt(v)}`).join(", ")}; blue is positive, red negative, darker is larger.`;
  svg.setAttribute("aria-label", `${opts.label}. ${text}`);
  addSummary(fig, text);
  addTable(fig, ["axis", "now", "first shown"], axisNames.map((a) => [a, now[a] || 0, columns[0].values[a] || 0]), 16);
}

// rows: [{x, counts: {outcome: n}}]; kinds: [[name, color]]
function stackedBars(fig, kinds, rows, opts = {}) {
  const svg = resetFigure(fig, opts.label || "bar chart");
  if (!rows.length) {
    addSummary(fig, "No verdicts yet.");
    return;
  }
  const x0 = rows[0].x, x1 = rows[rows.length - 1].x;
  const top = Math.max(1, ...rows.map((r) => Object.values(r.counts).reduce((a, b) => a + b, 0)));
  axes(svg, x0, x1, 0, top);
  const bw = (W - PAD_L - PAD_R) / rows.length;
  rows.forEach((r, i) => {
    let y = H - PAD_B;
    for (const [k, color] of kinds) {
      const n = r.counts[k] || 0;
      if (!n) continue;
      const h = (n / top) * (H - PAD_T - PAD_B);
      y -= h;
      svgEl("rect", { x: PAD_L + i * bw + 0.5, y, width: Math.max(bw - 1, 0.8), height: h, fill: color }, svg);
    }
  });
  const totals = {};
  for (const r of rows) for (const [k, n] of Object.entries(r.counts)) totals[k] = (totals[k] || 0) + n;
  const text = kinds.map(([k]) => `${k.replaceAll("_", " ")} ${totals[k] || 0}`).join(", ");
  svg.setAttribute("aria-label", `${opts.label}. Totals: ${text}`);
  addSummary(fig, `Totals over iterations ${x0}–${x1}: ${text}.`);
  addTable(fig, ["iteration", ...kinds.map(([k]) => k)], rows.map((r) => [r.x, ...kinds.map(([k]) => r.counts[k] || 0)]));
}

window.Charts = { lineChart, heatMap, stackedBars, fmt };
