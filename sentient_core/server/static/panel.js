// The learner panel: controls, the live event stream, stats, charts and gates.
// Talks only to the server that served it (same origin); reconnects by itself.
"use strict";

const AXES = ["coherence", "identity", "duality", "structure", "change", "life", "harmony",
  "wisdom", "infinity", "creation", "truth", "love", "power", "time", "space", "consciousness"];
const OUTCOMES = [["success", "#1a7f37"], ["could_not_verify", "#bf8700"],
  ["not_applicable", "#8c959f"], ["failure", "#cf222e"]];
const MAX_LOG = 400, MAX_POINTS = 200, HISTORY = 600;

const $ = (id) => document.getElementById(id);
const state = {
  csrf: document.querySelector('meta[name="csrf-token"]').content,
  lastId: -1, source: null, retry: 500, status: null,
  iterations: new Map(), judges: new Map(), drawPending: false,
};

// The session lives in an HttpOnly cookie; this page only knows its CSRF token.
// A session that expired, was ended, or belonged to a server since restarted is
// gone for good: the page says so and links to the login page.
async function refreshSession() {
  const r = await fetch("/panel/session", { credentials: "same-origin" });
  if (r.status === 401) { sessionEnded(); throw new Error("session ended"); }
  if (!r.ok) throw new Error(`session refused (${r.status})`);
  state.csrf = (await r.json()).csrf;
}

function sessionEnded() {
  state.ended = true;
  if (state.source) state.source.close();
  setConn("logged out", "down");
  const m = $("message");
  m.textContent = "Your panel session has ended (it expired, was closed, or the server restarted). ";
  const a = document.createElement("a");
  a.href = "/";
  a.textContent = "Log in again";
  m.appendChild(a);
}

async function api(method, path, body, raw) {
  for (let attempt = 0; attempt < 2; attempt++) {
    const headers = { "X-CSRF-Token": state.csrf };
    if (body !== undefined && !raw) headers["Content-Type"] = "application/json";
    const r = await fetch(path, {
      method, headers, credentials: "same-origin",
      body: body === undefined ? undefined : raw ? body : JSON.stringify(body),
    });
    if ((r.status === 401 || r.status === 403) && attempt === 0) {
      try { await refreshSession(); continue; } catch (e) { /* fall through */ }
    }
    const data = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(data.detail ? `${data.error}: ${data.detail}` : data.error || r.statusText);
    return data;
  }
  throw new Error("not allowed");
}

function say(text) { $("message").textContent = text; }

// ---- rendering of events (the same words as `cli.py eavesdrop`) ----------------------
function clip(s, n = 90) {
  s = String(s ?? "").replace(/\s+/g, " ").trim();
  return s.length <= n ? s : s.slice(0, n - 1) + "…";
}

function line(e) {
  switch (e.kind) {
    case "session": return `session ${e.state}` + (e.state === "started" ? ` (${e.iterations} iteration(s))` : "");
    case "question": return `${e.origin === "user" ? "" : e.origin + " "}question ${e.status}: ${clip(e.question, 80)}${e.reason ? ` (${clip(e.reason, 70)})` : ""}`;
    case "curiosity": return e.gaps.length
      ? `curiosity: ${e.gaps.length} gap(s), intensity ${e.intensity.toFixed(2)}: ${e.gaps[0].type} — ${clip(e.gaps[0].question, 70)}`
      : `curiosity: no gaps (intensity ${e.intensity.toFixed(2)})`;
    case "skip": return `skipped: ${e.reason}`;
    case "query": return `query ${e.id} ${e.type}: ${clip(e.question || e.url || e.path || e.topic, 80)}`;
    case "chaperone.request": case "learn": return null;
    case "chaperone.response":
      if (e.refused) return null;
      if (!e.ok) return `chaperone ✗ ${e.type}: ${clip(e.error, 80)}`;
      return `chaperone ✓ ${e.sources.length ? e.sources[0].kind + " " + clip(e.sources[0].ref, 50) : ""} (${e.content_chars} chars, ${e.grounded ? "grounded" : "not grounded"}${e.fallback ? ", " + e.fallback + " fallback" : ""})`;
    case "refusal": return `refused by ${e.check}: ${clip(e.reason, 80)}`;
    case "integrate": return `ingest+integrate: ${e.chunks} chunk(s) from ${clip(e.source, 60)}`;
    case "judge": return `judge: ${e.outcome} (${e.basis})${e.gate && e.gate !== "learned" ? ` at the ${e.gate} gate` : ""} — ${clip(e.reason, 70)}`;
    case "question.closed": return e.outcome === "not_found"
      ? `question NOT FOUND: ${clip(e.question, 70)}${e.tried && e.tried.length ? ` after ${e.attempts} attempt(s): ${clip(e.tried.join("; "), 80)}` : ""} — ${clip(e.reason, 120)}`
      : `question ${e.outcome === "answered" ? "answered" : "already known"} (trace ${e.trace_id}${e.source ? ` from ${clip(e.source, 50)}` : ""}): ${clip(e.question, 70)} — ${clip(e.passage, 80)}`;
    case "focus": return `focus goal ${e.goal} ${e.action}: ${clip(e.topic, 60)}${(e.held || []).join("; ") || e.reason ? ` — ${clip((e.held || []).join("; ") || e.reason, 120)}` : ""}`;
    case "search": return e.error
      ? `search (${e.provider}): failed — ${clip(e.error, 70)}`
      : `search (${e.provider}): ${e.results} found, ${e.allowed} allowed, reading ${e.fetching}`
        + (Object.keys(e.filtered || {}).length ? `; filtered: ${Object.entries(e.filtered).sort().map(([c, k]) => `${c} ${k}`).join(", ")}` : "");
    case "recipe": return `recipe ${e.recipe}: ${e.action}${e.before !== e.after ? ` (${e.before} → ${e.after})` : ` [${e.after}]`} — ${clip(e.question_kind, 50)} in ${e.domain}`;
    case "layer": return `${e.layer} layer: ${e.record}${e.subject ? ` on '${clip(e.subject, 60)}'` : ""} ${e.action}: ${clip(e.reason, 100)}`;
    case "commitment": return `commitment: ${e.route ? `tries ${e.route}` : "gives up"} for ${clip(e.question, 60)} — ${clip(e.reason, 60)}`;
    case "judge.shadow": return `judge (shadow): ${e.outcome}, ${e.agrees ? "agrees" : `disagrees (live: ${e.live})`} — ${clip(e.reason, 60)}`;
    case "budget": return `budget: ${e.cap} — ${clip(e.reason, 80)}`;
    case "reflect": return `reflect: ${e.links} link(s) among ${e.traces} trace(s); dominant axis ${e.dominant_axis}`;
    case "iteration": return `iteration done: ${e.initiatives} initiative(s), ${e.ingested} chunk(s), outcomes: ${e.outcomes.join(", ") || "none"}, coherence ${e.coherence.toFixed(3)}`;
    case "model.wait": return `waiting for the model… ${Math.round(e.elapsed_s)} s (gives up at ${Math.round(e.deadline_s)} s)`;
    case "model.breaker": return `model circuit ${e.state}${e.reason ? ": " + clip(e.reason, 60) : ""}`;
    case "error": return `ERROR in ${e.where}: ${clip(e.error, 120)}`;
    case "config.unsafe": return `UNSAFE setting ${e.key} = ${e.value} (${e.source})`;
    case "metamemory": return `meta-memory ${e.component} ${e.action}: ${clip(e.subject, 80)}`
      + (e.domain ? ` [${e.domain}]` : "")
      + (e.before !== e.after ? ` ${e.before.toFixed(3)} → ${e.after.toFixed(3)}` : "");
    default: return `${e.kind}: ${clip(JSON.stringify(e), 100)}`;
  }
}

function appendLog(seq, e) {
  const text = line(e);
  if (text === null) return;
  const li = document.createElement("li");
  li.className = "k-" + e.kind.replace(".", "-");
  li.dataset.seq = seq;
  li.dataset.kind = e.kind;
  const when = new Date(e.t * 1000).toLocaleTimeString();
  li.textContent = `${when} ${e.iteration >= 0 ? "[iter " + e.iteration + "]" : "[session]"} ${text}`;
  const log = $("log");
  const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
  log.appendChild(li);
  while (log.children.length > MAX_LOG) log.firstChild.remove();
  if (atBottom) log.scrollTop = log.scrollHeight;
}

// ---- charts ----------------------------------------------------------------------------
function keyOf(e) { return `${e.session}#${String(e.iteration).padStart(6, "0")}`; }

function remember(e) {
  if (e.kind === "iteration") {
    state.iterations.set(keyOf(e), e);
    while (state.iterations.size > MAX_POINTS) state.iterations.delete(state.iterations.keys().next().value);
  } else if (e.kind === "judge" && e.iteration >= 0) {
    const k = keyOf(e);
    const counts = state.judges.get(k) || {};
    counts[e.outcome] = (counts[e.outcome] || 0) + 1;
    state.judges.set(k, counts);
    while (state.judges.size > MAX_POINTS) state.judges.delete(state.judges.keys().next().value);
  } else return;
  if (!state.drawPending) {
    state.drawPending = true;
    requestAnimationFrame(draw);
  }
}

function draw() {
  state.drawPending = false;
  const its = [...state.iterations.values()];
  // x = a running index over the sessions shown, so sessions follow one another.
  const xs = its.map((_, i) => i + 1);
  const C = window.Charts;
  C.heatMap($("chart-smf"), AXES, its.filter((e) => e.smf && Object.keys(e.smf).length)
    .map((e, i) => ({ x: i + 1, values: e.smf })), { label: "SMF orientation heat map" });
  C.lineChart($("chart-coherence"), [{ name: "coherence", color: "#0b5cad", points: its.map((e, i) => [xs[i], e.coherence]) }],
    { label: "Coherence by iteration", yMin: 0, yMax: 1 });
  C.lineChart($("chart-memory"), [{ name: "traces", color: "#1a7f37", points: its.filter((e) => e.traces >= 0).map((e, i) => [i + 1, e.traces]) }],
    { label: "Memory size by iteration", includeZero: true });
  const byKey = [...state.iterations.keys()];
  const rows = [...state.judges.entries()].map(([k, counts]) => ({ x: byKey.indexOf(k) + 1 || 0, counts }))
    .filter((r) => r.x > 0).sort((a, b) => a.x - b.x);
  C.stackedBars($("chart-judge"), OUTCOMES, rows, { label: "Judge outcomes by iteration" });
  const caps = state.status ? state.status.budget.caps : {};
  const capNote = `caps: ${caps.daily_tokens || "unlimited"} tokens, ${caps.daily_tool_calls || "unlimited"} tool calls per UTC day (answers from the local corpus cost neither)`;
  C.lineChart($("chart-budget"), [
    { name: "tokens today", color: "#0b5cad", points: its.filter((e) => e.tokens_today >= 0).map((e, i) => [i + 1, e.tokens_today]) },
    { name: "tool calls today", color: "#8250df", points: its.filter((e) => e.tool_calls_today >= 0).map((e, i) => [i + 1, e.tool_calls_today]) },
  ], { label: "Budget use today", includeZero: true, note: capNote });
}

// ---- the live stream ---------------------------------------------------------------------
function setConn(text, cls) {
  const c = $("conn");
  c.textContent = text;
  c.className = cls;
}

function connect() {
  if (state.source) state.source.close();
  if (state.ended) return;
  const src = new EventSource(`/learning/stream?after=${state.lastId}`);
  state.source = src;
  src.onopen = () => { setConn("live", "live"); state.retry = 500; };
  src.onmessage = (m) => {
    const seq = Number(m.lastEventId);
    if (seq <= state.lastId) return;
    state.lastId = seq;
    const e = JSON.parse(m.data);
    appendLog(seq, e);
    remember(e);
    if (e.kind === "session" || e.kind === "iteration") scheduleStatus();
  };
  src.onerror = () => {
    if (src.readyState === EventSource.CLOSED) {
      // Refused (e.g. the server restarted with a new session secret): new session, new stream.
      setConn(`reconnecting in ${(state.retry / 1000).toFixed(1)} s…`, "down");
      src.close();
      setTimeout(async () => {
        try { await refreshSession(); } catch (e) { /* server still down, or logged out */ }
        state.retry = Math.min(state.retry * 2, 10000);
        connect();
      }, state.retry);
    } else {
      setConn("reconnecting…", "down");
    }
  };
}

// ---- status ------------------------------------------------------------------------------
let statusTimer = null;
function scheduleStatus() {
  if (statusTimer === null) statusTimer = setTimeout(() => { statusTimer = null; loadStatus(); }, 250);
}

function table(caption, obj) {
  const t = document.createElement("table");
  const c = document.createElement("caption");
  c.textContent = caption;
  t.appendChild(c);
  for (const [k, v] of Object.entries(obj)) {
    if (typeof v === "object" && v !== null) continue;
    const tr = document.createElement("tr");
    const th = document.createElement("th"); th.scope = "row"; th.textContent = k;
    const td = document.createElement("td"); td.textContent = String(v);
    tr.append(th, td);
    t.appendChild(tr);
  }
  return t;
}

function metaTables(meta) {
  const box = $("meta-tables");
  box.replaceChildren();
  for (const [name, rows] of Object.entries(meta)) {
    if (!Array.isArray(rows)) continue;
    const t = document.createElement("table");
    const c = document.createElement("caption"); c.textContent = name; t.appendChild(c);
    const cols = rows.length ? Object.keys(rows[0]) : [];
    const head = document.createElement("tr");
    for (const k of cols) { const th = document.createElement("th"); th.scope = "col"; th.textContent = k; head.appendChild(th); }
    t.appendChild(head);
    for (const r of rows) {
      const tr = document.createElement("tr");
      for (const k of cols) { const td = document.createElement("td"); td.textContent = typeof r[k] === "object" ? JSON.stringify(r[k]) : String(r[k]); tr.appendChild(td); }
      t.appendChild(tr);
    }
    box.appendChild(t);
  }
}

function render(st) {
  state.status = st;
  $("state").textContent = st.state;
  $("session").textContent = st.session;
  const s = st.stats, today = st.budget.today;
  const set = (id, v) => { $(id).textContent = v; };
  set("st-iteration", `${st.iteration} / ${st.max_iterations}`);
  set("st-iterations", s.iterations); set("st-skipped", s.skipped); set("st-queries", s.queries);
  set("st-ingested", s.ingested); set("st-concepts", s.concepts); set("st-refused", s.refused);
  set("st-traces", st.memory.traces); set("st-coherence", st.observer.coherence.toFixed(3));
  set("st-tokens", `${today.tokens} / ${st.budget.caps.daily_tokens || "∞"}`);
  set("st-calls", `${today.tool_calls} / ${st.budget.caps.daily_tool_calls || "∞"}`);
  set("st-queued", st.questions.queued ?? 0);
  $("activity").textContent = st.activity.line || "nothing yet";
  const running = st.state !== "idle";
  $("start").disabled = running;
  $("pause").disabled = st.state !== "running";
  $("resume").disabled = !(st.state === "paused" || st.state === "pausing");
  $("stop").disabled = !running || st.state === "stopping";
  const g = $("gates");
  const judge = st.gates.judge;
  g.replaceChildren(table("funnel: passed / reached", st.gates.funnel || {}),
    table("layers: live records", st.gates.layers || {}),
    table("promotion: passed / reached", st.gates.promotion || {}),
    table("recall misses", st.gates.misses || {}),
    table("chaperone", st.gates.chaperone), table("safety checks fired", st.gates.safety),
    table(`judge outcomes (${st.gates.judge_mode || "live"})`, judge.outcomes),
    ...(judge.shadow ? [table("shadow judge vs live", judge.shadow)] : []),
    table("curiosity gaps", st.gates.curiosity), table("budget refusals", st.gates.budget_refusals));
  const meta = st.meta_memory;
  $("meta-memory").hidden = !meta;
  if (meta) metaTables(meta);
}

async function loadStatus() {
  if (state.ended) return;
  try { render(await api("GET", "/learning/status")); } catch (e) { /* the stream shows the outage */ }
}

// ---- controls ----------------------------------------------------------------------------
function control(verb) {
  return async () => {
    try {
      const r = await api("POST", `/learning/${verb}`);
      say(`${verb}: ${r.message}`);
    } catch (e) { say(`${verb} failed: ${e.message}`); }
    loadStatus();
  };
}

// ---- recall and a trace's neighbours in the link graph ---------------------------------
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

async function showNeighbours(id, li, button) {
  button.disabled = true;
  try {
    const r = await api("GET", `/traces/${id}/links`);
    const list = el("ul", undefined, "neighbours");
    list.id = `links-${id}`;
    list.setAttribute("aria-label", `Neighbours of trace ${id}`);
    if (!r.neighbours.length) list.appendChild(el("li", "no linked traces (reflection has not linked this one)"));
    for (const n of r.neighbours) {
      const mark = n.answered ? "answered" : "not answered";
      list.appendChild(el("li",
        `#${n.id} (link ${n.weight.toFixed(2)}, ${mark}${n.retired ? ", retired" : ""}) ${n.topic}: ${clip(n.text, 120)}`));
    }
    li.appendChild(list);
    button.textContent = `${r.neighbours.length} neighbour(s)`;
  } catch (e) { say(`links failed: ${e.message}`); button.disabled = false; }
}

async function recallQuery(q) {
  const r = await api("GET", `/recall?q=${encodeURIComponent(q)}&k=5`);
  const out = $("recall-hits");
  out.replaceChildren();
  if (!r.hits.length) out.appendChild(el("li", "nothing recalled"));
  for (const h of r.hits) {
    const li = el("li", `#${h.id} [${h.kind}] ${h.topic}: ${clip(h.text, 140)}`);
    li.id = `hit-${h.id}`;
    const b = el("button", "Neighbours");
    b.type = "button";
    b.setAttribute("aria-label", `Show the neighbours of trace ${h.id}`);
    b.addEventListener("click", () => showNeighbours(h.id, li, b));
    li.appendChild(b);
    out.appendChild(li);
  }
  say(`recalled ${r.hits.length} trace(s) for: ${q}`);
}

function wire() {
  for (const verb of ["start", "pause", "resume", "stop"]) $(verb).addEventListener("click", control(verb));
  $("ask-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const q = $("ask-input").value.trim();
    if (!q) return;
    try {
      const r = await api("POST", "/ask", { question: q });
      say(`question ${r.status}: ${q}`);
      $("ask-input").value = "";
    } catch (e) { say(`ask failed: ${e.message}`); }
  });
  $("focus-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const t = $("focus-input").value.trim();
    if (!t) return;
    try {
      const r = await api("POST", "/focus", { topic: t });
      say(`focus goal ${r.id}: ${r.topic}`);
      $("focus-input").value = "";
    } catch (e) { say(`focus failed: ${e.message}`); }
  });
  $("recall-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const q = $("recall-input").value.trim();
    if (!q) return;
    try { await recallQuery(q); } catch (e) { say(`recall failed: ${e.message}`); }
  });
  $("ingest-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = $("ingest-file").files[0];
    if (!f) { say("choose a file first"); return; }
    try {
      const r = await api("POST", `/ingest?name=${encodeURIComponent(f.name)}`, f, true);
      say(`ingested ${r.name}: ${r.chunks} new chunk(s), ${r.duplicates} already known` +
        (r.skipped.length ? `; skipped: ${r.skipped.join("; ")}` : ""));
    } catch (e) { say(`upload failed: ${e.message}`); }
  });
}

async function boot() {
  wire();
  draw();
  try {
    const st = await api("GET", "/learning/status");
    render(st);
    state.lastId = Math.max(-1, st.last_seq - HISTORY);
  } catch (e) { say(`status failed: ${e.message}`); }
  connect();
  setInterval(loadStatus, 3000);
}

document.addEventListener("DOMContentLoaded", boot);
