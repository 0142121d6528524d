// The Assay dashboard: polls /dashboard/api/* and draws with the locally served plotly.js.
"use strict";

const REFRESH_MS = 2000;
const VERDICT_COLORS = {
  accepted: "#2ca02c", wrong_answer: "#d62728", runtime_error: "#ff7f0e",
  time_limit: "#9467bd", memory_limit: "#8c564b", output_limit: "#e377c2",
  compile_error: "#7f7f7f", sandbox_error: "#000000", ok: "#17becf",
  deadline: "#bcbd22", cancelled: "#aec7e8",
};
const LAYOUT = {
  margin: { l: 50, r: 50, t: 34, b: 30 }, legend: { orientation: "h", y: -0.15 },
  xaxis: { type: "date" }, yaxis: { rangemode: "tozero" }, font: { size: 11 },
};
const CONFIG = { displayModeBar: false, responsive: true };
let selectedCaller = null;
let selectedBatch = null;

function times(series) { return series.t.map((t) => new Date(t * 1000)); }

function layout(title, extra) {
  return Object.assign({}, LAYOUT, { title: { text: title, font: { size: 13 } } }, extra || {});
}

function line(x, y, name, extra) {
  return Object.assign({ x: x, y: y, name: name, type: "scatter", mode: "lines" }, extra || {});
}

function draw(id, traces, title, extra) {
  Plotly.react(id, traces, layout(title, extra), CONFIG);
}

function drawCharts(s) {
  const x = times(s);
  draw("chart-throughput", [line(x, s.throughput, "jobs/s", { fill: "tozeroy" })],
       "Throughput (jobs finished per second)");
  const verdicts = Object.keys(s.verdicts).map((v) => line(x, s.verdicts[v], v, {
    stackgroup: "mix", line: { width: 0.5, color: VERDICT_COLORS[v] },
  }));
  draw("chart-verdicts", verdicts, "Verdict mix (jobs per second)");
  draw("chart-latency", [
    line(x, s.latency.p50, "run p50"), line(x, s.latency.p95, "run p95"),
    line(x, s.latency.p99, "run p99"),
    line(x, s.latency.queue_wait_p95, "queue wait p95", { line: { dash: "dot" } }),
  ], "Latency percentiles (seconds, last 30 s)");
  draw("chart-queue", [
    line(x, s.gauges.assay_queue_depth, "queue depth"),
    line(x, s.gauges.assay_queue_oldest_age_seconds, "oldest job age (s)", { yaxis: "y2" }),
  ], "Queue", { yaxis2: { overlaying: "y", side: "right", rangemode: "tozero" } });
  draw("chart-errors", [
    line(x, s.sandbox_errors, "sandbox errors/s", { line: { color: "#000" } }),
    line(x, s.rejected, "rejected/s (queue full)", { line: { color: "#d62728" } }),
  ], "Sandbox errors and rejections");
  draw("chart-capacity", [
    line(x, s.gauges.assay_workers_busy, "workers busy"),
    line(x, s.gauges.assay_workers, "workers", { line: { dash: "dot" } }),
    line(x, s.gauges.assay_records_spooled, "records spooled", { yaxis: "y2" }),
  ], "Workers (left), records spooled (right)",
  { yaxis2: { overlaying: "y", side: "right", rangemode: "tozero" } });
  const g = s.gauges;
  draw("chart-sessions", s.totals.sessions_available ? [
    line(x, g.assay_sessions_open, "open", { fill: "tozeroy" }),
    line(x, g.assay_sessions_busy, "busy"),
    line(x, g.assay_sessions_past_ttl, "past TTL", { line: { color: "#d62728" } }),
    line(x, s.session_steps, "steps/s", { line: { dash: "dash" } }),
    line(x, g.assay_sessions_oldest_age_seconds, "oldest age (s)",
         { yaxis: "y2", line: { dash: "dot" } }),
  ] : [], s.totals.sessions_available
    ? `Agent sessions (cap ${g.assay_sessions_max[g.assay_sessions_max.length - 1]}; `
      + "oldest age in s on the right)"
    : "Agent sessions (this executor hosts none)",
  { yaxis2: { overlaying: "y", side: "right", rangemode: "tozero" } });
  const total = s.totals.jobs;
  const accepted = s.totals.verdicts.accepted || 0;
  const share = total > 0 ? (100 * accepted / total).toFixed(1) + " %" : "-";
  document.getElementById("totals").textContent =
    `${total} jobs · accepted ${share} · sandbox errors ${s.totals.sandbox_errors}`;
  document.getElementById("updated").textContent =
    "updated " + new Date().toLocaleTimeString();
}

function cell(row, text) {
  const td = document.createElement("td");
  td.textContent = text;
  row.appendChild(td);
}

function fill(tableId, rows, columns, onClick, isSelected) {
  const body = document.querySelector(`#${tableId} tbody`);
  body.replaceChildren();
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    const td = document.createElement("td");
    td.colSpan = columns.length;
    td.className = "empty";
    td.textContent = "no records yet";
    tr.appendChild(td);
    body.appendChild(tr);
    return;
  }
  for (const r of rows) {
    const tr = document.createElement("tr");
    for (const c of columns) cell(tr, c(r));
    if (onClick) tr.addEventListener("click", () => onClick(r));
    if (isSelected && isSelected(r)) tr.className = "selected";
    body.appendChild(tr);
  }
}

const pct = (v) => (100 * v).toFixed(1) + " %";
const sec = (v) => (v === null || v === undefined ? "-" : Number(v).toFixed(3));

async function getJSON(path) {
  const r = await fetch(path, { cache: "no-store" });
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.json();
}

async function drawTables() {
  const callers = await getJSON("/dashboard/api/callers");
  fill("callers", callers.callers, [
    (r) => r.caller, (r) => r.jobs, (r) => pct(r.accepted_share), (r) => r.sandbox_errors,
    (r) => sec(r.wall_p95_s), (r) => sec(r.queue_wait_p95_s),
  ], (r) => { selectedCaller = selectedCaller === r.caller ? null : r.caller; refresh(); },
  (r) => r.caller === selectedCaller);
  const q = selectedCaller === null ? "" : `?caller=${encodeURIComponent(selectedCaller)}`;
  document.getElementById("batch-filter").textContent =
    selectedCaller === null ? "" : `of ${selectedCaller}`;
  const batches = await getJSON("/dashboard/api/batches" + q);
  fill("batches", batches.batches, [
    (r) => r.batch_id, (r) => r.caller, (r) => r.jobs, (r) => pct(r.accepted_share),
    (r) => Object.entries(r.verdicts).map(([k, v]) => `${k} ${v}`).join(", "),
    (r) => sec(r.wall_p95_s), (r) => new Date(r.last_ended_at * 1000).toLocaleTimeString(),
  ], (r) => { selectedBatch = r.batch_id; refresh(); }, (r) => r.batch_id === selectedBatch);
  if (selectedBatch !== null) {
    const path = `/dashboard/api/batches/${encodeURIComponent(selectedBatch)}`;
    const r = await fetch(path, { cache: "no-store" });
    // 404: none of its jobs is kept any more (the newest records only): drop the selection.
    if (!r.ok && r.status !== 404) throw new Error(`${path}: HTTP ${r.status}`);
    const jobs = r.ok ? await r.json() : { jobs: [] };
    if (!r.ok) selectedBatch = null;
    document.getElementById("batch-id").textContent = selectedBatch ?? "";
    fill("jobs", jobs.jobs, [
      (r) => r.job_id, (r) => r.problem_id || "-", (r) => r.language, (r) => r.label,
      (r) => (r.reward === null ? "-" : r.reward), (r) => sec(r.wall_s),
      (r) => sec(r.queue_wait_s),
    ]);
  }
}

async function refresh() {
  try {
    drawCharts(await getJSON("/dashboard/api/series"));
    await drawTables();
  } catch (err) {
    document.getElementById("updated").textContent = "update failed: " + err.message;
  }
}

refresh();
setInterval(refresh, REFRESH_MS);
