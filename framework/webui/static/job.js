// The DisAuto job page: polls the job's JSON (api/page) while it runs, or shows the data a
// report.html carries inline (window.DISAUTO_DATA). Plots are Plotly's (plotly.min.js from the
// plotly Python package), loaded without holding up the page: the facts and the trials show as
// soon as the data comes, the plots once Plotly is there. Nothing is asked of the server once
// the job has ended and the framework's server is going away.
//
// Bounded whatever the number of trials (framework/webui/views.py): the server sends one page
// of the trials table (sorted and filtered there, as table.py says) and a bounded summary for
// the plots, and leaves out the sections the page already has (the "have" versions). A
// report.html carries every trial's row ("rows"): the page sorts, filters and pages them here,
// as the server would.
"use strict";

const OFFLINE = window.DISAUTO_DATA !== undefined;
const IN_FLIGHT = ["PENDING", "LAUNCHING", "RUNNING"];
const POLL_MS = 1500;
const MAX_LEGEND = 8;  // more traces than this: no legend (hover names the trial)
const PAGE_ROWS = 50;
// A Performance API mark once the browser painted the facts and the table the first time (its
// startTime: milliseconds since navigation; what bench.page_paint and the tests read).
const TABLE_PAINTED = "disauto:table-painted";
const page = {
  data: null, token: "", failures: 0, gone: false, asking: null, filterTimer: null,
  table: { offset: 0, limit: PAGE_ROWS, sort: "number", dir: 1, state: "", filter: "" },
  log: { trial: null, stream: "stdout", offset: -1, busy: false },
  expanded: new Set(),  // the trials whose message the table shows whole
  usage: { trial: null, busy: false },
  plotly: null,  // a promise of Plotly
  loadPlotly: null,  // fetches and runs plotly.min.js (once the table painted; then null)
  drawn: {},  // what each plot shows now (changed())
};
const $ = (id) => document.getElementById(id);
const tokenKey = () => "disauto-token:" + location.pathname;
const running = () => Boolean(page.data && page.data.job.state === "running");
// May the page ask its server for more? Not once the framework's own server has stopped.
const asking = () => !OFFLINE && !page.gone;

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

// A kill: its answer, or why it was refused, is one line beside the buttons. The server puts a
// refusal (a trial that ended meanwhile: 409; no token: 401) in a 200 answer's body when asked
// to (Prefer: status-in-body): a browser logs every answer of 400 or more as a console error.
async function post(path) {
  if (!asking()) return;
  const headers = { "Content-Type": "application/json", Prefer: "status-in-body" };
  if (page.token) headers.Authorization = "Bearer " + page.token;
  try {
    const response = await fetch(path, { method: "POST", headers, body: "{}" });
    const answer = await response.json();
    const ok = response.ok && answer.ok !== false;
    say(ok ? answer.message : answer.error || "refused (HTTP " + response.status + ")", !ok);
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

// A Mesos agent or framework id as people tell them apart: the number after its master's id.
function shortId(id) {
  const match = /^[0-9a-f-]{36}-(S?\d+)$/i.exec(id || "");
  return match ? "…-" + match[1] : (id || "");
}

// A step of integer ticks (1, 2, 5, 10, 20, ...) giving about ten ticks up to max.
function intStep(max) {
  let step = 1;
  for (let scale = 1; ; scale *= 10) {
    for (const m of [1, 2, 5]) {
      step = m * scale;
      if (max / step <= 10) return step;
    }
  }
}

function fmtSeconds(seconds) {
  if (seconds === null || seconds === undefined) return "";
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  return (h ? h + "h" : "") + (h || m ? m + "m" : "") + (s % 60) + "s";
}

// -- the job's facts

// "objective accuracy (maximize)", or with several "objectives accuracy (maximize), ...".
function objectivesFact(job) {
  const names = job.objectives || [job.objective];
  const directions = job.directions || [job.direction];
  return [names.length > 1 ? "objectives" : "objective",
    names.map((name, i) => name + " (" + directions[i] + ")").join(", ")];
}

// With several objectives no one trial is the best: the facts name the Pareto front, its
// size and its first trials by the first objective ("4 trials (#4, #7, #2, …)").
function frontText(front) {
  if (!front.size) return "none yet";
  const more = front.size > front.first.length ? ", …" : "";
  return front.size + (front.size === 1 ? " trial" : " trials") + " ("
    + front.first.map((n) => "#" + n).join(", ") + more + ")";
}

// The rate and, while the job runs, the ETA of its budget (job.pace, framework/_job/pace.py):
// "—" until a trial has ended (the rate) or has a measured time (the ETA).
function paceFacts(job) {
  const pace = job.pace || {};
  const rate = pace.trials_per_minute === null || pace.trials_per_minute === undefined ? "—"
    : Number(pace.trials_per_minute.toPrecision(3)) + " trials/min";
  const facts = [["rate", rate]];
  if (job.state !== "running") return facts;
  if (pace.eta_seconds === null || pace.eta_seconds === undefined) {
    return [...facts, ["ETA", "—"]];
  }
  const at = new Date(pace.eta_at * 1000)
    .toLocaleTimeString([], {hour: "2-digit", minute: "2-digit"});
  return [...facts, ["ETA", fmtSeconds(pace.eta_seconds) + " (about " + at + ")"]];
}

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
    ["parallelism", job.parallelism], ...paceFacts(job), objectivesFact(job),
    ["target", job.target === null ? "none" : fmtNumber(job.target)],
    job.front ? ["front", frontText(job.front)]
      : ["best", job.best ? fmtNumber(job.best.objective) + " (trial " + job.best.trial + ")" : "-"],
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
  $("kill-job").disabled = OFFLINE || job.state !== "running" || page.gone;
}

// -- the trials table: sortable (click a heading), filterable (text, state)

// What the table says of a trial beyond its state: on the Pareto front, infeasible (a
// constraint above 0), as da-submit's table does.
function note(data, trial) {
  if (!trial.feasible) return "infeasible";
  return data.pareto && data.pareto.front.includes(trial.number) ? "front" : "";
}

function columns(data) {
  const job = data.job;
  const several = (job.objectives || []).length > 1;
  // One column per objective with several (each from the trial's metrics), a note column
  // where there is a front or a constraint.
  const objectives = several
    ? job.objectives.map((name) => ({ key: "o:" + name, title: name,
      value: (t) => (t.metrics[name] === undefined ? null : t.metrics[name]) }))
    : [{ key: "objective", title: job.objective, value: (t) => t.objective }];
  const noted = several || data.trials.some((t) => !t.feasible);
  return [
    { key: "number", title: "#", value: (t) => t.number },
    { key: "state", title: "state", value: (t) => t.state },
    ...(noted ? [{ key: "note", title: "note", value: (t) => note(data, t) }] : []),
    ...job.parameters.map((name) => ({
      key: "p:" + name, title: name, value: (t) => t.assignment[name],
    })),
    ...objectives,
    { key: "duration", title: "duration", value: (t) => t.duration_seconds, text: fmtSeconds },
    { key: "peak_rss", title: "peak memory", value: (t) => t.usage.peak_rss_bytes, text: fmtBytes },
    { key: "cpu_seconds", title: "CPU s", value: (t) => t.usage.cpu_seconds },
    { key: "gpu", title: "mean GPU", value: (t) => t.usage.mean_gpu_utilization, text: fmtPercent },
    { key: "agent", title: "agent", value: (t) => t.agent, text: shortId, full: (t) => t.agent },
    // The cause first (the last line of a failure's stderr), the whole message on hover.
    { key: "message", title: "message", value: (t) => t.cause || t.message,
      full: (t) => t.message },
  ];
}

function compare(a, b) {
  if (a === b) return 0;
  if (a === null || a === undefined || a === "") return 1;
  if (b === null || b === undefined || b === "") return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b));
}

// A running trial whose final result is in: COMPLETED once its task exits (or is stopped
// --trial-exit-grace after its report), which nothing can change, so it is not killable.
const finishing = (trial) => trial.state === "RUNNING" && Boolean(trial.final);
const FINISHING_NOTE = "its final result is in: COMPLETED once its task exits";
// The columns before the log/kill buttons: the number and the state (kept at the table's left).
const BEFORE_ACTIONS = 2;

// A message's cell: wrapped, its first lines; a click shows the whole (and hides it again),
// the whole on hover too. The trials whose message is shown whole stay so across polls.
function messageCell(td, trial, text, full) {
  const span = document.createElement("span");
  span.className = "message-text";
  span.textContent = text;
  td.append(span);
  if (!text) return;
  td.classList.toggle("expanded", page.expanded.has(trial.number));
  td.onclick = () => {
    if (page.expanded.has(trial.number)) page.expanded.delete(trial.number);
    else page.expanded.add(trial.number);
    td.classList.toggle("expanded", page.expanded.has(trial.number));
  };
  if (full) td.title = full;
}

function actionsCell(row, trial, data) {
  const actions = row.insertCell();
  actions.className = "actions";
  const show = document.createElement("button");
  show.textContent = "log";
  show.className = "show-log";
  show.onclick = () => selectLog(trial.number);
  actions.append(show);
  if (!OFFLINE && data.job.state === "running" && IN_FLIGHT.includes(trial.state)
      && !finishing(trial)) {
    const kill = document.createElement("button");
    kill.textContent = "kill";
    kill.className = "danger kill-trial";
    kill.dataset.trial = trial.number;
    kill.onclick = () => {
      if (confirm("Kill trial " + trial.number + "? It is recorded KILLED and its slot is "
        + "refilled; it does not count toward --max-failed-trials.")) {
        post("api/trials/" + trial.number + "/kill");
      }
    };
    actions.append(kill);
  }
}

function renderTrials(data) {
  const cols = columns(data);
  const table = $("trials");
  const head = document.createElement("tr");
  cols.forEach((col, i) => {
    if (i === BEFORE_ACTIONS) {
      const actionsHead = document.createElement("th");
      actionsHead.className = "actions";
      head.append(actionsHead);
    }
    const th = document.createElement("th");
    th.textContent = col.title;
    th.title = col.title;
    th.dataset.key = col.key;
    if (page.table.sort === col.key) th.className = page.table.dir > 0 ? "sorted-asc" : "sorted-desc";
    th.onclick = () => {
      const dir = page.table.sort === col.key ? -page.table.dir : 1;
      Object.assign(page.table, { sort: col.key, dir, offset: 0 });
      ask();
    };
    head.append(th);
  });
  table.tHead.replaceChildren(head);

  const states = $("state-filter");
  const known = new Set([...states.options].map((o) => o.value));
  for (const [state, count] of Object.entries(data.job.counts || {})) {
    if (count && !known.has(state)) { states.add(new Option(state, state)); known.add(state); }
  }
  const rows = data.trials;
  const body = document.createElement("tbody");
  for (const trial of rows) {
    const row = body.insertRow();
    row.dataset.number = trial.number;
    row.dataset.state = trial.state;
    // Several objectives: no one best, the front's rows are marked (note) instead.
    if (data.job.best && !data.job.front && data.job.best.trial === trial.number) {
      row.classList.add("best");
    }
    const marked = note(data, trial);
    if (marked) row.classList.add(marked);
    cols.forEach((col, i) => {
      if (i === BEFORE_ACTIONS) actionsCell(row, trial, data);
      const td = row.insertCell();
      const value = col.value(trial);
      const text = col.text ? col.text(value) : fmtNumber(value);
      td.dataset.key = col.key;
      if (col.key === "message") {
        messageCell(td, trial, text, col.full(trial));
        return;
      }
      td.textContent = text;
      if (col.full && col.full(trial)) td.title = col.full(trial);
      if (col.key === "state" && finishing(trial)) {
        td.textContent = "FINISHING";
        td.title = FINISHING_NOTE;
        td.className = "state-FINISHING";
      } else if (col.key === "state") {
        td.className = "state-" + trial.state;
      }
    });
  }
  table.replaceChild(body, table.tBodies[0]);
  const t = data.table;
  $("trial-count").textContent = t.matched + " of " + t.total + " trials";
  $("page-rows").textContent = t.matched ? "rows " + (t.offset + 1) + "–"
    + (t.offset + rows.length) + " of " + t.matched : "no trial matches";
  $("page-prev").disabled = t.offset <= 0;
  $("page-next").disabled = t.offset + rows.length >= t.matched;
}

// -- which page of the table: asked of the server, or (report.html) taken from its rows

// A column's value for sorting and filtering, as the server's table.py reads it.
function tableValue(trial, key) {
  if (key.startsWith("p:")) return trial.assignment[key.slice(2)];
  return { number: trial.number, state: trial.state, objective: trial.objective,
    duration: trial.duration_seconds, peak_rss: trial.usage.peak_rss_bytes,
    cpu_seconds: trial.usage.cpu_seconds, gpu: trial.usage.mean_gpu_utilization,
    agent: trial.agent, message: trial.message }[key];
}

function tableText(value) {
  if (value === null || value === undefined) return "";
  return typeof value === "number" && !Number.isInteger(value)
    ? String(Number(value.toPrecision(6))) : String(value);
}

// One page of rows (report.html's), as the server's table.select makes it.
function localPage(data, query) {
  const keys = ["number", "state", "objective", "duration", "peak_rss", "cpu_seconds", "gpu",
    "agent", "message", ...data.job.parameters.map((name) => "p:" + name)];
  const needle = query.filter.trim().toLowerCase();
  const rows = data.rows
    .filter((t) => !query.state || t.state === query.state)
    .filter((t) => !needle || keys.some((k) => tableText(tableValue(t, k)).toLowerCase().includes(needle)))
    .sort((a, b) => a.number - b.number)
    .sort((a, b) => query.dir * compare(tableValue(a, query.sort), tableValue(b, query.sort)));
  return { trials: rows.slice(query.offset, query.offset + query.limit),
    table: Object.assign({}, query, { matched: rows.length, total: data.rows.length }) };
}

function tableParams() {
  const q = page.table;
  return "offset=" + q.offset + "&limit=" + q.limit + "&sort=" + encodeURIComponent(q.sort)
    + "&dir=" + q.dir + "&state=" + encodeURIComponent(q.state)
    + "&filter=" + encodeURIComponent(q.filter);
}

// The table's query changed (a heading, a filter, the pager): show that page.
function ask() {
  if (!page.data) return;
  if (OFFLINE || !asking()) {
    if (page.data.rows) Object.assign(page.data, localPage(page.data, page.table));
    renderTrials(page.data);
    return;
  }
  refresh();
}

function turnPage(step) {
  if (!page.data) return;
  const t = page.data.table;
  page.table.offset = Math.max(0, Math.min(t.matched - 1, page.table.offset + step * page.table.limit));
  ask();
}

// -- the plots (Plotly)

const CONFIG = { displaylogo: false, responsive: true };
// The legend above the plot, where it takes no height from the data nor hides an axis title.
const layout = (x, y, extra) => Object.assign({
  margin: { l: 55, r: 15, t: 30, b: 45 }, xaxis: { title: { text: x } },
  yaxis: { title: { text: y } }, hovermode: "closest",
  legend: { orientation: "h", x: 0, xanchor: "left", y: 1.02, yanchor: "bottom" },
}, extra || {});
// An axis of whole numbers (trials, steps): no tick at 1.5.
const intAxis = (title, max) => ({ title: { text: title }, tick0: 0, dtick: intStep(max || 1) });

// The best so far at each point, and the trial that holds it: it changes only when a trial
// beats it (a trial that only equals it does not take it over).
// An infeasible trial (a constraint above 0) is never the best.
function bestSoFar(trials, maximize) {
  let best = null;
  return trials.map((t) => {
    if (t.feasible && (best === null
      || (maximize ? t.objective > best.objective : t.objective < best.objective))) {
      best = t;
    }
    return best;
  });
}

// A completed trial's point: an infeasible one (a constraint above 0) marked ×.
const trialText = (t) => "trial " + t.number + (t.feasible ? "" : " (infeasible)");
const feasibleSymbol = (t) => (t.feasible ? "circle" : "x");
// Where the best-so-far line has no trial yet (only infeasible ones so far): no point.
const bestValues = (best) => best.map((t) => (t ? t.objective : null));
const bestTexts = (best) => best.map((t) => (t ? "best so far: trial " + t.number : ""));

// plotly.min.js (3.5 MB) is fetched and run once the table painted (page.loadPlotly): run
// while the first data call was under way, compiling it held a 10,000-trial page's first paint
// for seconds (bench.page_paint). report.html has it inline, run before this script.
function plotlyReady() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  const later = $("plotly-script");
  if (!later) return Promise.reject(new Error("this page has no plotly.min.js"));
  return new Promise((resolve, reject) => {
    page.loadPlotly = () => {
      page.loadPlotly = null;
      const script = document.createElement("script");
      script.addEventListener("load", () => (window.Plotly ? resolve(window.Plotly)
        : reject(new Error("plotly.min.js loaded but defined no Plotly"))));
      script.addEventListener("error", () => reject(new Error("plotly.min.js did not load")));
      script.src = later.dataset.src;
      document.head.append(script);
    };
  });
}

// Whether what a plot shows changed since it was drawn (Plotly redraws cost a software-
// rendered browser on a busy machine seconds; most polls change nothing a plot shows).
function changed(plot, what) {
  const text = JSON.stringify(what);
  if (page.drawn[plot] === text) return false;
  page.drawn[plot] = text;
  return true;
}

// After the browser painted the facts and the table: a software-rendered browser takes
// seconds over the plots (parallel coordinates above all), which should not hide the rest.
function afterPaint() {
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}

function drawPlots() {
  page.plotly.then(afterPaint).then(() => {
    $("plots-note").hidden = true;
    renderPlots(page.data);
  }, (err) => {
    $("plots-note").textContent = "No plots: " + err.message + " (reload to try again).";
    $("plots-note").classList.remove("loading");
  });
}

// The summary's completed trials as the plots read them: {number, objective, seconds,
// feasible}.
function summaryPoints(summary) {
  return summary.history.map(([number, objective, seconds, feasible]) =>
    ({ number, objective, seconds, feasible }));
}

// With no result yet (no trial completed or pruned) the plots of results would be empty axes:
// one line says so instead (of an ended job: that none came), and the intermediate values show
// once a trial reported a step.
function showResultPlots(summary) {
  const results = summary.history.length + summary.pruned.length > 0;
  const steps = summary.curves.some((c) => c.points.length > 0);
  $("no-results").hidden = results;
  $("no-results").textContent = running() ? "No results yet: the plots appear once a trial "
    + "reports its final result." : "No results: no trial reported its final result.";
  for (const box of document.querySelectorAll(".plots .results")) box.hidden = !results;
  if (!results) $("pareto-box").hidden = true;  // renderPareto shows it with results
  $("intermediate-box").hidden = !results && !steps;
  return results;
}

function renderPlots(data) {
  const job = data.job, maximize = job.direction === "maximize", summary = data.summary;
  const results = showResultPlots(summary);
  const sample = $("plots-sample");
  sample.hidden = summary.shown >= summary.of;
  sample.textContent = sample.hidden ? "" : "The plots show " + summary.shown + " of the "
    + summary.of + " completed trials (every new best, the best, and an even sample of the "
    + "rest; the parallel coordinates " + summary.parallel_shown + "); the table has them all.";
  if (!$("intermediate-box").hidden
      && changed("intermediate", summary.curves.map((c) => [c.number, c.state, c.points.length]))) {
    renderIntermediate(data);
  }
  if (!results) return;
  if (changed("parallel", [summary.parallel.map((p) => p[0]), $("plot-parallel").clientWidth])) {
    renderParallel(data);
  }
  if (changed("importance", data.importance)) renderImportance(data.importance);
  if (changed("pareto", [data.pareto, $("plot-pareto").clientWidth])) renderPareto(data.pareto);
  if (!changed("history", [summary.history, summary.pruned, summary.last_number])) return;
  const done = summaryPoints(summary);
  const pruned = summary.pruned.map(([number, objective]) => ({ number, objective }));
  const byNumber = [...done].sort((a, b) => a.number - b.number);
  const lastNumber = Math.max(1, summary.last_number);
  const bestByNumber = bestSoFar(byNumber, maximize);
  Plotly.react("plot-history", [
    { name: job.objective, mode: "markers", x: byNumber.map((t) => t.number),
      y: byNumber.map((t) => t.objective), text: byNumber.map(trialText),
      marker: { symbol: byNumber.map(feasibleSymbol) } },
    // With several objectives a best by the first one is no answer: no best-so-far line.
    ...(job.front ? [] : [{ name: "best so far", mode: "lines", line: { shape: "hv" },
      x: byNumber.map((t) => t.number), y: bestValues(bestByNumber),
      text: bestTexts(bestByNumber) }]),
    { name: "pruned (last value)", mode: "markers", marker: { symbol: "x", color: "#8e44ad" },
      x: pruned.map((t) => t.number), y: pruned.map((t) => t.objective),
      text: pruned.map((t) => "trial " + t.number + " (pruned)") },
  ], layout("trial", job.objective, { xaxis: intAxis("trial", lastNumber) }), CONFIG);

  const byTime = [...done].sort((a, b) => a.seconds - b.seconds || a.number - b.number);
  const seconds = byTime.map((t) => t.seconds);
  const bestByTime = bestSoFar(byTime, maximize);
  Plotly.react("plot-time", [
    { name: job.objective, mode: "markers", x: seconds, y: byTime.map((t) => t.objective),
      text: byTime.map(trialText), marker: { symbol: byTime.map(feasibleSymbol) } },
    ...(job.front ? [] : [{ name: "best so far", mode: "lines", line: { shape: "hv" },
      x: seconds, y: bestValues(bestByTime), text: bestTexts(bestByTime) }]),
  ], layout("seconds since the job started", job.objective), CONFIG);
}

// -- the Pareto front of a job of several objectives: the completed trials by two of their
// objectives (the first two, or those chosen with three or more), the front highlighted and
// joined (two objectives), infeasible trials marked ×. The axes hold the feasible trials and
// the infeasible ones near them: one infeasible outlier (200 ms against a front between 0.66
// and 3.3 ms) would flatten the front into a corner (issue 36); the box scales them to all.

function paretoNote(pareto, outside) {
  const n = pareto.objectives.length;
  const front = pareto.front.length;
  let text = front + " trial" + (front === 1 ? "" : "s") + " on the front of "
    + pareto.points.filter((p) => p.feasible).length + " feasible completed ones.";
  if (n > 2) {
    text += " " + n + " objectives: two are drawn (choose which); the front is of all " + n
      + ", so a trial on it may look dominated here.";
  }
  if (outside) {
    text += " " + outside + " infeasible trial" + (outside === 1 ? " lies" : "s lie")
      + " outside the axes (scale to every trial to see " + (outside === 1 ? "it" : "them") + ").";
  }
  return text;
}

// The two objectives drawn: [x, y] indices, from the selects shown with three or more.
function paretoAxes(pareto) {
  const n = pareto.objectives.length;
  $("pareto-axes").hidden = n < 3;
  [["pareto-x", 0], ["pareto-y", 1]].forEach(([id, first]) => {
    const select = $(id);
    if (select.options.length === n) return;
    select.replaceChildren(...pareto.objectives.map(
      (name, i) => new Option(name, String(i), i === first, i === first)));
  });
  return n < 3 ? [0, 1] : [Number($("pareto-x").value), Number($("pareto-y").value)];
}

// The axes' ranges over the feasible trials, widened to the infeasible ones within one feasible
// span of them on both axes (outliers stay outside), padded by 5 %; nulls (Plotly's own) when
// every trial is asked for or none is feasible.
function paretoRanges(points, axes) {
  const feasible = points.filter((p) => p.feasible);
  if (!feasible.length || $("pareto-all").checked) return [null, null];
  const spans = axes.map((i) => {
    const values = feasible.map((p) => p.values[i]);
    return [Math.min(...values), Math.max(...values)];
  });
  const near = (p) => axes.every((i, a) => {
    const [low, high] = spans[a];
    return p.values[i] >= low - (high - low) && p.values[i] <= high + (high - low);
  });
  const shown = [...feasible, ...points.filter((p) => !p.feasible && near(p))];
  return axes.map((i) => {
    const low = Math.min(...shown.map((p) => p.values[i]));
    const high = Math.max(...shown.map((p) => p.values[i]));
    const pad = (high - low) * 0.05 || Math.abs(high) * 0.05 || 1;
    return [low - pad, high + pad];
  });
}

function renderPareto(pareto) {
  $("pareto-box").hidden = !pareto;
  if (!pareto) return;
  const [xi, yi] = paretoAxes(pareto);
  const title = (i) => pareto.objectives[i] + " (" + pareto.directions[i] + ")";
  const onFront = new Set(pareto.front);
  const hover = (p) => "trial " + p.number + pareto.objectives.map(
    (name, i) => "<br>" + name + " " + fmtNumber(p.values[i])).join("");
  const trace = (name, points, style) => Object.assign({
    name, mode: "markers", x: points.map((p) => p.values[xi]), y: points.map((p) => p.values[yi]),
    text: points.map(hover), hovertemplate: "%{text}<extra></extra>",
    customdata: points.map((p) => p.number),
  }, style);
  // The front in the order of its x objective, so that its line runs along it.
  const front = pareto.points.filter((p) => onFront.has(p.number))
    .sort((a, b) => a.values[xi] - b.values[xi] || a.values[yi] - b.values[yi]);
  const joined = pareto.objectives.length === 2;
  const [xRange, yRange] = paretoRanges(pareto.points, [xi, yi]);
  const inside = (v, range) => !range || (v >= range[0] && v <= range[1]);
  const outside = pareto.points.filter((p) => !inside(p.values[xi], xRange)
    || !inside(p.values[yi], yRange)).length;
  $("pareto-note").textContent = paretoNote(pareto, outside);
  const axis = (i, range) => (range ? { title: { text: title(i) }, range, autorange: false }
    : { title: { text: title(i) }, autorange: true });
  Plotly.react("plot-pareto", [
    trace("other trials", pareto.points.filter((p) => p.feasible && !onFront.has(p.number)),
      { marker: { color: "#7f8c8d", size: 7 } }),
    trace("Pareto front", front, { mode: joined ? "lines+markers" : "markers",
      line: { color: "#d35400", shape: "linear" }, marker: { color: "#d35400", size: 10 } }),
    trace("infeasible", pareto.points.filter((p) => !p.feasible),
      { marker: { color: "#c0392b", symbol: "x", size: 9 } }),
  ], layout(title(xi), title(yi), { xaxis: axis(xi, xRange), yaxis: axis(yi, yRange) }), CONFIG);
  $("plot-pareto").dataset.front = front.map((p) => p.number).join(",");
}

function renderIntermediate(data) {
  const job = data.job;
  const stepped = data.summary.curves.map((c) => ({ number: c.number, state: c.state,
    intermediate: c.points }));
  const lastStep = Math.max(1, ...stepped.flatMap((t) => t.intermediate.map((p) => p[0])));
  // One legend entry per trial squashes the plot: past a few, hovering names the trial.
  const legend = stepped.length <= MAX_LEGEND;
  Plotly.react("plot-intermediate", stepped.map((t) => {
    const isPruned = t.state === "PRUNED";
    const name = "trial " + t.number + (isPruned ? " (pruned)" : "");
    return {
      name, mode: "lines+markers", hovertemplate: name + "<br>step %{x}: %{y}<extra></extra>",
      x: t.intermediate.map((p) => p[0]), y: t.intermediate.map((p) => p[1]),
      line: { dash: isPruned ? "dot" : "solid" },
      marker: { symbol: t.intermediate.map((_, i) => (isPruned && i === t.intermediate.length - 1 ? "x" : "circle")),
        size: t.intermediate.map((_, i) => (isPruned && i === t.intermediate.length - 1 ? 11 : 5)) },
    };
  }), layout("step", job.objective, Object.assign({ showlegend: legend,
    xaxis: intAxis("step", lastStep) }, stepped.length ? {} : { annotations: [{
      text: "no intermediate values reported (report(..., step=N))", showarrow: false,
      xref: "paper", yref: "paper", x: 0.5, y: 0.5 }] })), CONFIG);
}

// -- parallel coordinates: an axis per parameter and per objective. A number's axis is
// numeric even where a conditional parameter was inactive (such trials sit at an "inactive"
// tick below the axis's values), ticked at a few round values with few significant digits
// (whole ones for an integer parameter); a parameter searched on a log scale is drawn as log10,
// ticked with the values themselves at 1, 2 and 5 of each decade; choices get their labels.

const shortNumber = (v) => String(Number(v.toPrecision(3)));
const isInactive = (v) => v === undefined || v === null;

// About five round ticks from low to high: 1, 2 or 5 times a power of ten apart (at least 1
// for whole numbers).
function roundTicks(low, high, integer) {
  const span = high - low;
  if (!(span > 0)) return [low];
  let step = 10 ** Math.floor(Math.log10(span / 5));
  step *= [1, 2, 5, 10].find((m) => span / (m * step) <= 6);
  if (integer) step = Math.max(1, Math.round(step));
  const ticks = [];
  for (let v = Math.ceil(low / step - 1e-9) * step; v <= high + step * 1e-9; v += step) {
    ticks.push(Number(v.toPrecision(12)));
  }
  return ticks;
}

function logTicks(low, high) {
  const ticks = [];
  for (let decade = Math.floor(Math.log10(low)); decade <= Math.ceil(Math.log10(high)); decade++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** decade;
      if (v >= low / 1.0001 && v <= high * 1.0001) ticks.push(v);
    }
  }
  return ticks;
}

// A numeric axis of ``values`` (numbers, or nothing where the parameter was inactive).
function numericDimension(label, values, { log = false, integer = false } = {}) {
  const present = values.filter((v) => !isInactive(v));
  const low = Math.min(...present), high = Math.max(...present);
  const ticks = !present.length ? [] : log ? logTicks(low, high) : roundTicks(low, high, integer);
  const at = log ? Math.log10 : (v) => v;
  const tickvals = ticks.map(at), ticktext = ticks.map(shortNumber);
  const top = present.length ? at(high) : 1, bottom = present.length ? at(low) : 0;
  // Plotly draws an axis's line from its lowest tick to its highest: unlabelled ticks at the
  // ends of the values make it reach them.
  for (const end of present.length ? [bottom, top] : []) {
    if (!tickvals.some((v) => Math.abs(v - end) <= Math.abs(top - bottom) * 1e-9)) {
      tickvals.push(end);
      ticktext.push("");
    }
  }
  const inactive = bottom - Math.max(top - bottom, Math.abs(bottom) * 0.1, 1e-9) * 0.15;
  const dimension = { label: label + (log ? " (log)" : ""), tickvals, ticktext,
    values: values.map((v) => (isInactive(v) ? inactive : at(v))) };
  if (present.length < values.length) {
    tickvals.push(inactive);
    ticktext.push("inactive");
    dimension.range = [inactive, Math.max(top, ...tickvals)];
  }
  return dimension;
}

function parameterDimension(name, values, job) {
  const scale = (job.scales || {})[name];
  if (values.every((v) => isInactive(v) || typeof v === "number")) {
    const log = scale === "log" && values.every((v) => isInactive(v) || v > 0);
    return numericDimension(name, values, { log, integer: (job.integers || []).includes(name) });
  }
  const named = values.map((v) => (isInactive(v) ? "inactive" : String(v)));
  const labels = [...new Set(named)].sort();
  return { label: name, values: named.map((v) => labels.indexOf(v)),
    tickvals: labels.map((_, i) => i), ticktext: labels };
}

function renderParallel(data) {
  const job = data.job;
  const done = data.summary.parallel.map(([number, objective, assignment, values]) =>
    ({ number, objective, assignment, values: values || [objective] }));
  const objectives = job.objectives && job.objectives.length > 1 ? job.objectives : [job.objective];
  const dimensions = job.parameters.map(
    (name) => parameterDimension(name, done.map((t) => t.assignment[name]), job));
  objectives.forEach((name, i) => dimensions.push(numericDimension(name, done.map((t) => t.values[i]))));
  // Labels wider than their axes' spacing would run into each other: slant them.
  const spacing = $("plot-parallel").clientWidth / Math.max(1, dimensions.length);
  const crowded = dimensions.some((d) => d.label.length * 7 > spacing);
  Plotly.react("plot-parallel", [{
    type: "parcoords", dimensions, labelangle: crowded ? -20 : 0,
    line: { color: done.map((t) => t.objective), colorscale: "Viridis", showscale: true,
      reversescale: job.direction !== "maximize" },
  }], { margin: { l: 60, r: 60, t: crowded ? 90 : 40, b: 20 } }, CONFIG);
}

function renderImportance(importance) {
  $("importance-note").textContent = importance.note
    || "Optuna's get_param_importances over " + importance.basis
      + (importance.pending ? " (updating)." : ".");
  const ranked = Object.entries(importance.values || {}).reverse();
  $("plot-importance").hidden = !ranked.length;
  if (!ranked.length) return;
  // automargin: the left margin grows to hold the longest parameter name whole.
  Plotly.react("plot-importance", [{
    type: "bar", orientation: "h", x: ranked.map((r) => r[1]), y: ranked.map((r) => r[0]),
  }], layout("importance", "", { yaxis: { automargin: true }, margin: { l: 10, r: 15, t: 10, b: 45 } }),
  CONFIG);
}

// -- a trial's resource use: memory and CPU over time (the data service's api/data)

const USAGE = { memory: "mem_rss_bytes", cpu: "cpu_utilization", gpu: "gpu_utilization_percent",
  gpuMemory: "gpu_memory_used_bytes" };

function renderUsageChoices(data) {
  const select = $("usage-trial");
  const have = new Set([...select.options].map((o) => o.value));
  for (const trial of data.trials) {
    if (!have.has(String(trial.number))) select.add(new Option("trial " + trial.number, trial.number));
  }
  if (page.usage.trial === null && data.summary.last_number) {
    selectUsage(currentTrial(data));
  } else if (page.usage.trial !== null && running()) {
    pollUsage();
  }
}

function selectUsage(number) {
  addChoice($("usage-trial"), number);
  page.usage = { trial: number, busy: false };
  $("usage-trial").value = String(number);
  $("usage-title").textContent = "trial " + number;
  pollUsage();
}

async function getJson(url) {
  const response = await fetch(url);
  const answer = await response.json();
  if (!response.ok) throw new Error(answer.error);
  return answer;
}

// Only the data names measured for this trial are asked for (api/data/names): a job without
// GPUs has no GPU samples, and asking for them would be answered 404.
async function measured(trial) {
  const known = new Set();
  for (const series of (await getJson("api/data/names")).series) {
    if (series.trials.includes(trial)) known.add(series.data_name);
  }
  return known;
}

async function series(known, dataName, trial) {
  if (!known.has(dataName)) return [];
  return (await getJson("api/data?dataName=" + encodeURIComponent(dataName) + "&trial=" + trial))
    .samples;
}

function usagePlot(id, samples, title, scale) {
  const last = samples.length ? samples[samples.length - 1].time : null;
  if (!changed(id, [page.usage.trial, samples.length, last])) return;
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
  if (!asking() || usage.trial === null || usage.busy) return;
  usage.busy = true;
  try {
    const known = await measured(usage.trial);
    const [memory, cpu, gpu, gpuMemory] = await Promise.all(
      [USAGE.memory, USAGE.cpu, USAGE.gpu, USAGE.gpuMemory].map((n) => series(known, n, usage.trial)));
    await page.plotly;
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
  if (page.log.trial === null && data.summary.last_number) selectLog(currentTrial(data));
}

// The trial whose log and usage show first: one that runs, else the last submitted.
function currentTrial(data) {
  const running = data.summary.curves.find((c) => c.state === "RUNNING")
    || data.trials.find((t) => t.state === "RUNNING");
  return running ? running.number : data.summary.last_number;
}

// A trial chooser lists the trials of the table's page and the one chosen (not every trial of
// a job of thousands).
function addChoice(select, number) {
  if (![...select.options].some((o) => o.value === String(number))) {
    select.add(new Option("trial " + number, number));
  }
}

function selectLog(number) {
  addChoice($("log-trial"), number);
  page.log = { trial: number, stream: $("log-stream").value, offset: -1, busy: false };
  $("log-trial").value = String(number);
  $("log-title").textContent = "trial " + number;
  $("log").textContent = page.gone ? "(the job has ended and its framework's server with it: "
    + "da-job logs or da-job ui show its logs)" : "";
  pollLog();
}

async function pollLog() {
  const log = page.log;
  if (!asking() || log.trial === null || log.busy) return;
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

// -- lineage (Population Based Training): which trial descends from which, as a tree

function fmtValue(value) {
  return typeof value === "number" ? fmtNumber(value) : String(value);
}

function lineageLabel(number, trials, edge) {
  const trial = trials[String(number)] || {};
  let text = "trial " + number + (trial.state ? " " + trial.state : "");
  if (trial.objective !== null && trial.objective !== undefined) {
    text += " (" + fmtNumber(trial.objective) + ")";
  }
  if (!edge) return [text, ""];
  const from = edge.from_step === null
    ? " from scratch: trial " + edge.parent + " had no checkpoint"
    : " from trial " + edge.parent + "'s step " + edge.from_step;
  const changes = Object.entries(edge.explored || {})
    .map(([name, change]) => name + " " + fmtValue(change.old) + " → " + fmtValue(change.new));
  return [text, from + (changes.length ? "; " + changes.join(", ") : "")];
}

function renderLineage(lineage) {
  $("lineage-box").hidden = !lineage;
  if (!lineage) return;
  const children = new Map();
  const edgeOf = new Map();
  for (const edge of lineage.edges) {
    edgeOf.set(edge.trial, edge);
    if (!children.has(edge.parent)) children.set(edge.parent, []);
    children.get(edge.parent).push(edge.trial);
  }
  const item = (number) => {
    const li = document.createElement("li");
    li.dataset.trial = number;
    const [text, change] = lineageLabel(number, lineage.trials, edgeOf.get(number));
    const label = document.createElement("span");
    label.textContent = text;
    const detail = document.createElement("span");
    detail.className = "change";
    detail.textContent = change;
    li.append(label, detail);
    const kids = children.get(number);
    if (kids) {
      const list = document.createElement("ul");
      list.append(...kids.map(item));
      li.append(list);
    }
    return li;
  };
  const roots = [...children.keys()].filter((n) => !edgeOf.has(n)).sort((a, b) => a - b);
  $("lineage").replaceChildren(...roots.map(item));
  $("lineage-note").textContent = lineage.edges.length + " trials started from another's "
    + "checkpoint" + (lineage.total > lineage.edges.length
      ? " (the last " + lineage.edges.length + " of " + lineage.total + " shown)" : "")
    + "; each goes on from its parent's step with its parameters explored.";
}

// -- the loop: every 1.5 s while the job runs; not at all once it has ended

function render(answer) {
  const wasRunning = running();
  // Sections the server left out (the page has them: "have") stay as they were.
  const data = Object.assign({}, page.data || {}, answer);
  if (OFFLINE && data.rows) Object.assign(data, localPage(data, page.table));
  page.data = data;
  $("loading").hidden = true;
  // The framework's own server stops soon after its job ends (da-job ui's does not).
  const own = Boolean(data.job.webui_url) && location.href.startsWith(data.job.webui_url);
  if (!OFFLINE && own && wasRunning && data.job.state !== "running") page.gone = true;
  renderJob(data.job);
  renderTrials(data);
  if (!performance.getEntriesByName(TABLE_PAINTED).length) {
    afterPaint().then(() => {
      if (!performance.getEntriesByName(TABLE_PAINTED).length) performance.mark(TABLE_PAINTED);
      if (page.loadPlotly) page.loadPlotly();
    });
  }
  renderLineage(data.lineage);
  showResultPlots(data.summary);  // at once, not once Plotly is there
  drawPlots();
  $("telemetry-note").textContent = OFFLINE
    ? "Each trial's measured usage is in the trials table; the charts over time need the "
      + "job's server (da-job ui)." : data.telemetry.note;
  if (page.gone) {
    say("The job has ended, and its framework's server with it: da-job ui serves its record; "
      + "report.html is in the job folder.");
  } else if (!OFFLINE) {
    renderLogChoices(data);
    renderUsageChoices(data);
    if (wasRunning && !running()) pollLog();  // the end of the log
  }
}

async function refresh() {
  try {
    const have = page.data ? Object.entries(page.data.versions || {})
      .map(([name, version]) => name + ":" + version).join(",") : "";
    const asked = tableParams();
    const response = await fetch("api/page?" + asked + "&have=" + encodeURIComponent(have));
    const data = await response.json();
    if (!response.ok) { say(data.error, true); return; }
    page.failures = 0;
    if (asked !== tableParams()) return;  // the table's query changed meanwhile: a newer ask
    render(data);
  } catch (err) {
    page.failures += 1;
    say("the job's server does not answer (the job has ended?); trying again less often; "
      + "da-job ui serves its record", true);
  }
}

// While the job runs (or before the first answer), every 1.5 s, less often while the server
// does not answer; once the job has ended or was interrupted, never again (reload to look).
function schedule() {
  if (!asking() || (page.data && !running())) return;
  const wait = Math.min(60000, POLL_MS * 2 ** page.failures);
  setTimeout(async () => { await refresh(); schedule(); }, wait);
}

function start() {
  $("filter").oninput = () => {
    clearTimeout(page.filterTimer);
    page.filterTimer = setTimeout(() => {
      Object.assign(page.table, { filter: $("filter").value, offset: 0 });
      ask();
    }, OFFLINE ? 0 : 300);
  };
  $("state-filter").onchange = () => {
    Object.assign(page.table, { state: $("state-filter").value, offset: 0 });
    ask();
  };
  $("page-prev").onclick = () => turnPage(-1);
  $("page-next").onclick = () => turnPage(1);
  page.plotly = plotlyReady();
  page.plotly.catch(() => {});  // drawPlots says why
  for (const id of ["pareto-all", "pareto-x", "pareto-y"]) {
    $(id).onchange = () => { if (window.Plotly && page.data) renderPareto(page.data.pareto); };
  }
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
  setInterval(() => { if (running() && asking()) pollLog(); }, 1000);
}

start();
