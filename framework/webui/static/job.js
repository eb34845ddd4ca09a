// The DisAuto job page: polls the job's JSON (api/page) while it runs, or shows the data a
// report.html carries inline (window.DISAUTO_DATA). Plots are Plotly's (plotly.min.js from the
// plotly Python package).
"use strict";

const OFFLINE = window.DISAUTO_DATA !== undefined;
const IN_FLIGHT = ["PENDING", "LAUNCHING", "RUNNING"];
const page = {
  data: null, sort: { key: "number", dir: 1 }, token: "",
  log: { trial: null, stream: "stdout", offset: -1, busy: false },
  usage: { trial: null, busy: false },
};
const $ = (id) => document.getElementById(id);
const tokenKey = () => "disauto-token:" + location.pathname;

// -- the job token: from the page's form or the link's fragment (#token=...), never a URL query

function readToken() {
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (match) {
    sessionStorage.setItem(tokenKey(), decodeURIComponent(match[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  page.token = sessionStorage.getItem(tokenKey()) || "";
  $("token-state").textContent = page.token ? "token set: actions enabled" : "read-only";
}

function say(text, isError) {
  const out = $("action-message");
  out.textContent = text;
  out.className = isError ? "error" : "";
}

async function post(path) {
  const headers = { "Content-Type": "application/json" };
  if (page.token) headers.Authorization = "Bearer " + page.token;
  try {
    const response = await fetch(path, { method: "POST", headers, body: "{}" });
    const answer = await response.json();
    say(answer.error || answer.message, !response.ok);
  } catch (err) {
    say("the job's server did not answer: " + err, true);
  }
  refresh();
}

// -- formatting

function fmtNumber(value) {
  if (value === null || value === undefined) return "";
  if (typeof value !== "number") return String(value);
  return Number.isInteger(value) ? String(value) : value.toPrecision(6).replace(/\.?0+$/, "");
}

function fmtBytes(bytes) {
  if (bytes === null || bytes === undefined) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes, unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit++; }
  return (unit ? value.toFixed(1) : String(Math.round(value))) + " " + units[unit];
}

function fmtPercent(value) {
  return value === null || value === undefined ? "" : value.toFixed(1) + " %";
}

function fmtSeconds(seconds) {
  if (seconds === null || seconds === undefined) return "";
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  return (h ? h + "h" : "") + (h || m ? m + "m" : "") + (s % 60) + "s";
}

// -- the job's facts

function renderJob(job) {
  document.title = job.name + " — DisAuto";
  $("job-name").textContent = job.name + " (" + job.job_id + ")";
  const badge = $("job-state");
  badge.textContent = job.state;
  badge.className = "badge " + job.state;
  const outcome = job.outcome ? job.outcome.toLowerCase().replace(/_/g, " ") : "";
  $("job-outcome").textContent = [outcome, job.outcome_message, job.interrupted_reason]
    .filter(Boolean).join(": ");
  const done = job.submitted - IN_FLIGHT.reduce((n, s) => n + (job.counts[s] || 0), 0);
  const facts = [
    ["state", job.state], ["trials done", done + " / " + job.budget],
    ["parallelism", job.parallelism], ["objective", job.objective + " (" + job.direction + ")"],
    ["target", job.target === null ? "none" : fmtNumber(job.target)],
    ["best", job.best ? fmtNumber(job.best.objective) + " (trial " + job.best.trial + ")" : "-"],
    ["algorithm", job.algorithm], ["early stopping", job.early_stopping],
    ["offer policy", job.policy], ["seed", job.seed], ["elapsed", fmtSeconds(job.elapsed_seconds)],
    ["outcome", outcome || "-"], ["master", job.master],
  ];
  const list = $("job-facts");
  list.replaceChildren(...facts.map(([name, value]) => {
    const div = document.createElement("div");
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = name; dd.textContent = String(value);
    div.append(dt, dd);
    return div;
  }));
  $("kill-job").disabled = OFFLINE || job.state !== "running";
}

// -- the trials table: sortable (click a heading), filterable (text, state)

function columns(job) {
  return [
    { key: "number", title: "#", value: (t) => t.number },
    { key: "state", title: "state", value: (t) => t.state },
    ...job.parameters.map((name) => ({
      key: "p:" + name, title: name, value: (t) => t.assignment[name],
    })),
    { key: "objective", title: job.objective, value: (t) => t.objective },
    { key: "duration", title: "duration", value: (t) => t.duration_seconds, text: fmtSeconds },
    { key: "peak_rss", title: "peak memory", value: (t) => t.usage.peak_rss_bytes, text: fmtBytes },
    { key: "cpu_seconds", title: "CPU s", value: (t) => t.usage.cpu_seconds },
    { key: "gpu", title: "mean GPU", value: (t) => t.usage.mean_gpu_utilization, text: fmtPercent },
    { key: "agent", title: "agent", value: (t) => t.agent },
    { key: "message", title: "message", value: (t) => t.message },
  ];
}

function compare(a, b) {
  if (a === b) return 0;
  if (a === null || a === undefined || a === "") return 1;
  if (b === null || b === undefined || b === "") return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b));
}

function renderTrials(data) {
  const cols = columns(data.job);
  const table = $("trials");
  const head = document.createElement("tr");
  for (const col of cols) {
    const th = document.createElement("th");
    th.textContent = col.title;
    th.dataset.key = col.key;
    if (page.sort.key === col.key) th.className = page.sort.dir > 0 ? "sorted-asc" : "sorted-desc";
    th.onclick = () => {
      page.sort = { key: col.key, dir: page.sort.key === col.key ? -page.sort.dir : 1 };
      renderTrials(page.data);
    };
    head.append(th);
  }
  head.append(document.createElement("th"));
  table.tHead.replaceChildren(head);

  const states = $("state-filter");
  const known = new Set([...states.options].map((o) => o.value));
  for (const trial of data.trials) {
    if (!known.has(trial.state)) { states.add(new Option(trial.state, trial.state)); known.add(trial.state); }
  }
  const text = $("filter").value.trim().toLowerCase();
  const sortCol = cols.find((c) => c.key === page.sort.key) || cols[0];
  const rows = data.trials
    .filter((t) => !states.value || t.state === states.value)
    .filter((t) => !text || cols.some((c) => String(c.value(t) ?? "").toLowerCase().includes(text)))
    .sort((a, b) => page.sort.dir * compare(sortCol.value(a), sortCol.value(b)));
  const body = document.createElement("tbody");
  for (const trial of rows) {
    const row = body.insertRow();
    row.dataset.number = trial.number;
    row.dataset.state = trial.state;
    if (data.job.best && data.job.best.trial === trial.number) row.className = "best";
    for (const col of cols) {
      const td = row.insertCell();
      const value = col.value(trial);
      td.textContent = col.text ? col.text(value) : fmtNumber(value);
      td.dataset.key = col.key;
      if (col.key === "state") td.className = "state-" + trial.state;
    }
    const actions = row.insertCell();
    const show = document.createElement("button");
    show.textContent = "log";
    show.className = "show-log";
    show.onclick = () => selectLog(trial.number);
    actions.append(show);
    if (!OFFLINE && data.job.state === "running" && IN_FLIGHT.includes(trial.state)) {
      const kill = document.createElement("button");
      kill.textContent = "kill";
      kill.className = "danger kill-trial";
      kill.dataset.trial = trial.number;
      kill.onclick = () => post("api/trials/" + trial.number + "/kill");
      actions.append(kill);
    }
  }
  table.replaceChild(body, table.tBodies[0]);
  $("trial-count").textContent = rows.length + " of " + data.trials.length + " trials";
}

// -- the plots (Plotly)

const CONFIG = { displaylogo: false, responsive: true };
const layout = (x, y, extra) => Object.assign({
  margin: { l: 55, r: 15, t: 10, b: 45 }, xaxis: { title: { text: x } },
  yaxis: { title: { text: y } }, legend: { orientation: "h", y: -0.25 }, hovermode: "closest",
}, extra || {});

function bestSoFar(values, maximize) {
  let best = null;
  return values.map((v) => (best = best === null ? v : (maximize ? Math.max(best, v) : Math.min(best, v))));
}

function renderPlots(data) {
  const job = data.job, maximize = job.direction === "maximize";
  const done = data.trials.filter((t) => t.state === "COMPLETED" && t.objective !== null);
  const pruned = data.trials.filter((t) => t.state === "PRUNED" && t.objective !== null);
  const byNumber = [...done].sort((a, b) => a.number - b.number);
  Plotly.react("plot-history", [
    { name: job.objective, mode: "markers", x: byNumber.map((t) => t.number),
      y: byNumber.map((t) => t.objective), text: byNumber.map((t) => "trial " + t.number) },
    { name: "best so far", mode: "lines", line: { shape: "hv" }, x: byNumber.map((t) => t.number),
      y: bestSoFar(byNumber.map((t) => t.objective), maximize) },
    { name: "pruned (last value)", mode: "markers", marker: { symbol: "x", color: "#8e44ad" },
      x: pruned.map((t) => t.number), y: pruned.map((t) => t.objective) },
  ], layout("trial", job.objective), CONFIG);

  const start = job.started_at || 0;
  const byTime = [...done].sort((a, b) => (a.ended_at || 0) - (b.ended_at || 0));
  const seconds = byTime.map((t) => ((t.ended_at || start) - start));
  Plotly.react("plot-time", [
    { name: job.objective, mode: "markers", x: seconds, y: byTime.map((t) => t.objective),
      text: byTime.map((t) => "trial " + t.number) },
    { name: "best so far", mode: "lines", line: { shape: "hv" }, x: seconds,
      y: bestSoFar(byTime.map((t) => t.objective), maximize) },
  ], layout("seconds since the job started", job.objective), CONFIG);

  const stepped = data.trials.filter((t) => t.intermediate.length);
  Plotly.react("plot-intermediate", stepped.map((t) => {
    const isPruned = t.state === "PRUNED";
    return {
      name: "trial " + t.number + (isPruned ? " (pruned)" : ""), mode: "lines+markers",
      x: t.intermediate.map((p) => p[0]), y: t.intermediate.map((p) => p[1]),
      line: { dash: isPruned ? "dot" : "solid" },
      marker: { symbol: t.intermediate.map((_, i) => (isPruned && i === t.intermediate.length - 1 ? "x" : "circle")),
        size: t.intermediate.map((_, i) => (isPruned && i === t.intermediate.length - 1 ? 11 : 5)) },
    };
  }), layout("step", job.objective, stepped.length ? {} : { annotations: [{
    text: "no intermediate values reported (report(..., step=N))", showarrow: false,
    xref: "paper", yref: "paper", x: 0.5, y: 0.5 }] }), CONFIG);

  const dimensions = job.parameters.map((name) => {
    const values = done.map((t) => t.assignment[name]);
    if (values.every((v) => typeof v === "number")) return { label: name, values };
    const labels = [...new Set(values.map(String))].sort();
    return { label: name, values: values.map((v) => labels.indexOf(String(v))),
      tickvals: labels.map((_, i) => i), ticktext: labels };
  });
  dimensions.push({ label: job.objective, values: done.map((t) => t.objective) });
  Plotly.react("plot-parallel", [{
    type: "parcoords", dimensions,
    line: { color: done.map((t) => t.objective), colorscale: "Viridis", showscale: true,
      reversescale: !maximize },
  }], { margin: { l: 60, r: 60, t: 40, b: 20 } }, CONFIG);

  const importance = data.importance;
  $("importance-note").textContent = importance.note || "Optuna's get_param_importances over the completed trials.";
  const ranked = Object.entries(importance.values || {}).reverse();
  $("plot-importance").hidden = !ranked.length;
  if (!ranked.length) return;
  Plotly.react("plot-importance", [{
    type: "bar", orientation: "h", x: ranked.map((r) => r[1]), y: ranked.map((r) => r[0]),
  }], layout("importance", ""), CONFIG);
}

// -- a trial's resource use: memory and CPU over time (the data service's api/data)

function renderUsageChoices(data) {
  const select = $("usage-trial");
  const have = new Set([...select.options].map((o) => o.value));
  for (const trial of data.trials) {
    if (!have.has(String(trial.number))) select.add(new Option("trial " + trial.number, trial.number));
  }
  if (page.usage.trial === null && data.trials.length) {
    const running = data.trials.find((t) => t.state === "RUNNING");
    selectUsage((running || data.trials[data.trials.length - 1]).number);
  } else if (page.usage.trial !== null && data.job.state === "running") {
    pollUsage();
  }
}

function selectUsage(number) {
  page.usage = { trial: number, busy: false };
  $("usage-trial").value = String(number);
  $("usage-title").textContent = "trial " + number;
  pollUsage();
}

async function series(dataName, trial) {
  const response = await fetch("api/data?dataName=" + encodeURIComponent(dataName) + "&trial=" + trial);
  if (response.status === 404) return [];  // nothing of that name measured yet
  const answer = await response.json();
  if (!response.ok) throw new Error(answer.error);
  return answer.samples;
}

function usagePlot(id, samples, title, scale) {
  const start = page.data.job.started_at || 0;
  const byNode = new Map();
  for (const s of samples) {
    if (!byNode.has(s.node)) byNode.set(s.node, []);
    byNode.get(s.node).push(s);
  }
  const traces = [...byNode.entries()].map(([node, points]) => ({
    name: node, mode: "lines+markers", marker: { size: 4 },
    x: points.map((s) => s.time - start), y: points.map((s) => s.value / scale),
  }));
  const empty = traces.length ? {} : { annotations: [{
    text: "no samples of this trial", showarrow: false, xref: "paper", yref: "paper", x: 0.5, y: 0.5 }] };
  Plotly.react(id, traces, layout("seconds since the job started", title,
    Object.assign({ showlegend: byNode.size > 1 }, empty)), CONFIG);
  $(id).dataset.points = String(samples.length);
}

async function pollUsage() {
  const usage = page.usage;
  if (OFFLINE || usage.trial === null || usage.busy) return;
  usage.busy = true;
  try {
    const [memory, cpu, gpu, gpuMemory] = await Promise.all([
      series("mem_rss_bytes", usage.trial), series("cpu_utilization", usage.trial),
      series("gpu_utilization_percent", usage.trial), series("gpu_memory_used_bytes", usage.trial)]);
    if (usage !== page.usage) return;  // another trial was chosen meanwhile
    usagePlot("plot-memory", memory, "memory (MiB)", 1024 * 1024);
    usagePlot("plot-cpu", cpu, "CPUs busy", 1);
    // GPU charts only for a trial with GPU samples (its runner measured its GPUs through NVML).
    const hasGpu = gpu.length > 0 || gpuMemory.length > 0;
    for (const box of document.querySelectorAll(".usage-gpu")) box.hidden = !hasGpu;
    if (hasGpu) {
      usagePlot("plot-gpu", gpu, "GPU busy (%)", 1);
      usagePlot("plot-gpu-memory", gpuMemory, "GPU memory (MiB)", 1024 * 1024);
    }
  } catch (err) {
    $("telemetry-note").textContent = "cannot read the trial's samples: " + err.message;
  } finally {
    usage.busy = false;
  }
}

// -- a trial's log, following while it grows

function renderLogChoices(data) {
  const select = $("log-trial");
  const have = new Set([...select.options].map((o) => o.value));
  for (const trial of data.trials) {
    if (!have.has(String(trial.number))) select.add(new Option("trial " + trial.number, trial.number));
  }
  if (page.log.trial === null && data.trials.length) {
    const running = data.trials.find((t) => t.state === "RUNNING");
    selectLog((running || data.trials[data.trials.length - 1]).number);
  }
}

function selectLog(number) {
  page.log = { trial: number, stream: $("log-stream").value, offset: -1, busy: false };
  $("log-trial").value = String(number);
  $("log-title").textContent = "trial " + number;
  $("log").textContent = "";
  pollLog();
}

async function pollLog() {
  const log = page.log;
  if (OFFLINE || log.trial === null || log.busy) return;
  log.busy = true;
  try {
    const url = "api/trials/" + log.trial + "/log?stream=" + log.stream + "&offset=" + log.offset;
    const answer = await (await fetch(url)).json();
    if (log !== page.log) return;  // another trial or stream was chosen meanwhile
    const out = $("log");
    if (answer.error) { out.textContent = answer.error; return; }
    if (!answer.exists) { out.textContent = "(no output collected yet)"; return; }
    if (log.offset < 0) out.textContent = answer.truncated ? "[…]\n" : "";
    if (answer.data) out.append(answer.data);
    log.offset = answer.offset;
    if ($("log-follow").checked) out.scrollTop = out.scrollHeight;
  } catch (err) {
    // the server is gone (the job ended): the log stays as it was
  } finally {
    log.busy = false;
  }
}

// -- the loop

function render(data) {
  page.data = data;
  renderJob(data.job);
  renderTrials(data);
  renderPlots(data);
  $("telemetry-note").textContent = OFFLINE
    ? "Each trial's measured usage is in the trials table; the charts over time need the "
      + "job's server (da-job ui)." : data.telemetry.note;
  if (!OFFLINE) { renderLogChoices(data); renderUsageChoices(data); }
}

async function refresh() {
  try {
    const response = await fetch("api/page");
    const data = await response.json();
    if (!response.ok) { say(data.error, true); return; }
    render(data);
  } catch (err) {
    say("the job's server stopped answering (the job has ended?); da-job ui serves its record", true);
  }
}

function schedule() {
  const running = page.data && page.data.job.state === "running";
  setTimeout(async () => { await refresh(); schedule(); }, running ? 1500 : 10000);
}

function start() {
  $("filter").oninput = () => page.data && renderTrials(page.data);
  $("state-filter").onchange = () => page.data && renderTrials(page.data);
  if (OFFLINE) {
    $("offline-note").hidden = false;
    $("actions").hidden = true;
    $("log-section").hidden = true;
    $("usage-plots").hidden = true;
    $("usage-trial").hidden = true;
    render(window.DISAUTO_DATA);
    return;
  }
  readToken();
  $("token-form").onsubmit = (event) => {
    event.preventDefault();
    sessionStorage.setItem(tokenKey(), $("token").value.trim());
    $("token").value = "";
    readToken();
  };
  $("kill-job").onclick = () => {
    if (confirm("Kill the whole job? Its running trials are killed.")) post("api/kill");
  };
  $("log-trial").onchange = () => selectLog(Number($("log-trial").value));
  $("log-stream").onchange = () => selectLog(page.log.trial);
  $("usage-trial").onchange = () => selectUsage(Number($("usage-trial").value));
  refresh().then(schedule);
  setInterval(pollLog, 1000);
}

start();
