// The embedded master's web UI, with the pages of the Mesos UI (src/webui of apache/mesos:
// home, frameworks, a framework, agents, an agent, roles, offers, maintenance, a sandbox, a
// file). It polls the master's own endpoints and redraws the page in place: /master/state and
// /metrics/snapshot for every page, /master/roles for the roles, /master/maintenance/schedule
// and /status for maintenance, /files/browse for a sandbox listing, /files/read (with
// offsets) for a live tail, and links to /files/download. Every text from the cluster is
// inserted as text, never as HTML.
"use strict";

const POLL_MS = 1000;
const TAIL_MS = 1000;
const TAIL_START = 50000; // bytes of an existing file shown when a tail opens
const READ_CHUNK = 65536;
const RESOURCES = ["cpus", "gpus", "mem", "disk"];
const TERMINAL = new Set(["TASK_FINISHED", "TASK_FAILED", "TASK_KILLED", "TASK_ERROR",
  "TASK_LOST", "TASK_DROPPED", "TASK_GONE", "TASK_GONE_BY_OPERATOR"]);

let masterState = null;
let metrics = null;
let extra = {}; // what the section shown reads besides /master/state (EXTRA)
let tail = null; // the open file tail: {path, offset, timer, pre}

// -- small helpers ---------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== undefined && value !== null) node.setAttribute(key, value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function link(href, text, attrs) {
  return el("a", Object.assign({href: href}, attrs || {}), text);
}

// Only http(s) URLs become links: a framework's webui_url is not trusted.
function safeUrl(url) {
  try {
    const parsed = new URL(url, location.href);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
  } catch (e) {
    return null;
  }
}

function table(headers, rows, attrs) {
  if (!rows.length) return el("p", {class: "muted"}, "None.");
  return el("table", attrs || {},
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows));
}

function num(value, name) {
  const v = Number(value || 0);
  if (name === "mem" || name === "disk") {
    return v >= 1024 ? (v / 1024).toFixed(1) + " GB" : v.toFixed(0) + " MB";
  }
  return Number.isInteger(v) ? String(v) : v.toFixed(2);
}

function when(seconds) {
  if (!seconds) return "";
  return new Date(seconds * 1000).toLocaleString();
}

function ago(seconds) {
  if (!seconds) return "";
  const s = Math.max(0, Math.round(Date.now() / 1000 - seconds));
  if (s < 60) return s + " s ago";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  return Math.floor(s / 3600) + " h ago";
}

// A label's value as people read it: a JSON object (DisAuto's disauto.assignment) as
// "name=value, ...", anything else as it is.
function labelText(label) {
  if (label.value === undefined) return label.key;
  let value = label.value;
  try {
    const parsed = JSON.parse(label.value);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
      value = Object.entries(parsed).map(([k, v]) => k + "=" + (typeof v === "object"
        ? JSON.stringify(v) : String(v))).join(", ");
    }
  } catch (e) {
    // not JSON: shown as it is
  }
  return label.key + ": " + value;
}

// Agents of one machine share a hostname and differ only in the end of a 40-character id: an
// agent is named by its ordinal, the N of the master's "<master id>-S<N>" (the order in which
// agents registered, as \`da-cluster agent list\` lists them), beside the id's end.
function agentOrdinal(id) {
  const match = /-S(\d+)$/.exec(id);
  return match ? match[1] : null;
}

function agentName(id) {
  const ordinal = agentOrdinal(id);
  return ordinal === null ? id : "agent " + ordinal + " (…-S" + ordinal + ")";
}

// The hostname is worth showing beside an agent only where the agents' hostnames differ.
function hostsDiffer() {
  return masterState !== null && new Set(masterState.slaves.map((a) => a.hostname)).size > 1;
}

function agentLink(id) {
  const agent = masterState ? agentById(id) : null;
  const text = agentName(id) + (agent && hostsDiffer() ? " on " + agent.hostname : "");
  return link("#/agents/" + encodeURIComponent(id), text, {class: "agent", title: id});
}

function frameworkLink(id) {
  return link("#/frameworks/" + encodeURIComponent(id), id, {class: "framework"});
}

function roles(fw) {
  return (fw.roles || [fw.role || "*"]).join(", ");
}

function route() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  return {parts: path.split("/").filter(Boolean).map(decodeURIComponent),
    query: new URLSearchParams(query || "")};
}

// -- data ------------------------------------------------------------------------------------

async function getJson(url) {
  const response = await fetch(url, {cache: "no-store"});
  if (!response.ok) throw new Error(url + ": " + response.status);
  return response.json();
}

// The endpoints a section reads besides /master/state and /metrics/snapshot.
const EXTRA = {
  roles: {roles: "/master/roles"},
  maintenance: {schedule: "/master/maintenance/schedule",
    status: "/master/maintenance/status"},
};

async function fetchExtra(section) {
  const wanted = EXTRA[section] || {};
  const names = Object.keys(wanted);
  const values = await Promise.all(names.map((name) => getJson(wanted[name])));
  return Object.fromEntries(names.map((name, i) => [name, values[i]]));
}

async function poll() {
  try {
    let more;
    [masterState, metrics, more] = await Promise.all([getJson("/master/state"),
      getJson("/metrics/snapshot"), fetchExtra(route().parts[0])]);
    extra = more;
    document.getElementById("status").textContent =
      "updated " + new Date().toLocaleTimeString();
    render(false);
  } catch (e) {
    document.getElementById("status").textContent = "master unreachable (" + e.message + ")";
  }
  setTimeout(poll, POLL_MS);
}

function allFrameworks() {
  return masterState.frameworks.concat(masterState.completed_frameworks);
}

function agentById(id) {
  return masterState.slaves.find((a) => a.id === id);
}

function sandboxOf(task) {
  const executor = task.executor_id || task.id;
  return "/slaves/" + task.slave_id + "/frameworks/" + task.framework_id + "/executors/" +
    executor + "/runs/latest";
}

function taskTimes(task) {
  const statuses = task.statuses || [];
  const first = statuses[0];
  const last = statuses[statuses.length - 1];
  return {
    started: first && !TERMINAL.has(first.state) ? first.timestamp : null,
    stopped: last && TERMINAL.has(last.state) ? last.timestamp : null,
  };
}

// -- pages -----------------------------------------------------------------------------------

function overview() {
  const s = masterState;
  const total = {};
  const used = {};
  for (const name of RESOURCES) {
    total[name] = s.slaves.reduce((sum, a) => sum + (a.resources[name] || 0), 0);
    used[name] = s.slaves.reduce((sum, a) => sum + (a.used_resources[name] || 0), 0);
  }
  const resourceRows = RESOURCES.map((name) => el("tr", {"data-resource": name},
    el("td", {}, name),
    el("td", {class: "num"}, num(used[name], name)),
    el("td", {class: "num"}, num(total[name] - used[name], name)),
    el("td", {class: "num"}, num(total[name], name))));
  const counts = ["staging", "starting", "running", "killing", "finished", "failed", "killed",
    "lost"].map((state) => el("tr", {},
    el("td", {}, state), el("td", {class: "num"}, num(metrics["master/tasks_" + state]))));
  return [
    el("h1", {}, "Master " + s.version + " at " + s.pid),
    el("dl", {},
      el("dt", {}, "Started"), el("dd", {}, when(s.start_time)),
      el("dt", {}, "Agents"), el("dd", {}, String(s.slaves.length)),
      el("dt", {}, "Frameworks"), el("dd", {}, String(s.frameworks.length) + " connected or " +
        "disconnected, " + s.completed_frameworks.length + " completed")),
    el("h2", {}, "Resources"),
    table(["", "Used", "Free", "Total"], resourceRows, {id: "resources"}),
    el("h2", {}, "Tasks"),
    table(["State", "Count"], counts, {id: "task-counts"}),
    frameworkTables(),
    el("h2", {}, "Agents"),
    agentTable(),
  ];
}

function frameworksPage() {
  return [el("h1", {}, "Frameworks"), frameworkTables()];
}

function agentsPage() {
  return [el("h1", {}, "Agents"), agentTable()];
}

function notFound(hash) {
  return [el("h1", {}, "No such page"),
    el("p", {}, "Nothing is at " + hash + ": see the ", link("#/", "overview"), ", the ",
      link("#/frameworks", "frameworks"), " or the ", link("#/agents", "agents"), ".")];
}

function ended(fw) {
  return masterState.completed_frameworks.some((f) => f.id === fw.id);
}

// A framework's web UI: a link while it runs; once it has ended nothing answers there, so the
// URL is only text, marked "(ended)".
function webui(fw, text) {
  const url = fw.webui_url ? safeUrl(fw.webui_url) : null;
  if (!url) return text;
  if (ended(fw)) return el("span", {class: "webui-ended", title: "the framework has ended"},
    url + " (ended)");
  return link(url, text || url, {class: "webui"});
}

function frameworkRow(fw) {
  return el("tr", {"data-framework": fw.id},
    el("td", {}, frameworkLink(fw.id)),
    el("td", {}, fw.name),
    el("td", {}, webui(fw, fw.hostname)),
    el("td", {}, fw.user),
    el("td", {}, roles(fw)),
    el("td", {}, fw.principal || ""),
    el("td", {class: "num"}, String(fw.tasks.length)),
    RESOURCES.map((name) => el("td", {class: "num"}, num(fw.used_resources[name], name))),
    el("td", {}, ago(fw.registered_time)));
}

function frameworkTables() {
  const headers = ["ID", "Name", "Host (web UI)", "User", "Roles", "Principal", "Active tasks",
    "CPUs", "GPUs", "Mem", "Disk", "Registered"];
  const active = masterState.frameworks.filter((fw) => fw.active);
  const inactive = masterState.frameworks.filter((fw) => !fw.active);
  return [
    el("h2", {}, "Active frameworks"),
    table(headers, active.map(frameworkRow), {id: "active-frameworks"}),
    el("h2", {}, "Inactive frameworks"),
    table(headers, inactive.map(frameworkRow), {id: "inactive-frameworks"}),
    el("h2", {}, "Completed frameworks"),
    table(headers, masterState.completed_frameworks.map(frameworkRow),
      {id: "completed-frameworks"}),
  ];
}

function agentTable() {
  const headers = ["Agent", "Host"];
  for (const name of ["CPUs", "GPUs", "Mem", "Disk"]) headers.push(name + " used / total",
    name + " free");
  headers.push("Registered");
  const rows = masterState.slaves.map((a) => el("tr", {"data-agent": a.id},
    el("td", {}, agentLink(a.id)),
    el("td", {}, a.hostname),
    RESOURCES.map((name) => {
      const total = a.resources[name] || 0;
      const used = a.used_resources[name] || 0;
      return [
        el("td", {class: "num", "data-used": name}, num(used, name) + " / " + num(total, name)),
        el("td", {class: "num", "data-free": name}, num(total - used, name)),
      ];
    }),
    el("td", {}, ago(a.registered_time))));
  return table(headers, rows, {id: "agents"});
}

function taskRow(task) {
  const times = taskTimes(task);
  const sandbox = sandboxOf(task);
  const labels = (task.labels || []).map((l) =>
    el("span", {class: "label", title: l.key + "=" + (l.value === undefined ? "" : l.value)},
      labelText(l)));
  return el("tr", {"data-task": task.id},
    el("td", {}, task.id),
    el("td", {}, task.name),
    el("td", {class: "state state-" + task.state}, task.state),
    el("td", {}, labels),
    el("td", {}, agentLink(task.slave_id)),
    el("td", {}, when(times.started)),
    el("td", {}, when(times.stopped)),
    el("td", {},
      link("#/browse?path=" + encodeURIComponent(sandbox), "sandbox", {class: "sandbox"}), " ",
      link("#/file?path=" + encodeURIComponent(sandbox + "/stdout"), "stdout"), " ",
      link("#/file?path=" + encodeURIComponent(sandbox + "/stderr"), "stderr")));
}

function frameworkPage(id) {
  const fw = allFrameworks().find((f) => f.id === id);
  if (!fw) return [el("h1", {}, "Framework " + id), el("p", {}, "Not known to the master.")];
  const status = fw.active ? "active" : (fw.unregistered_time ? "completed" : "inactive");
  const resourceRows = RESOURCES.map((name) => el("tr", {},
    el("td", {}, name),
    el("td", {class: "num"}, num(fw.used_resources[name], name)),
    el("td", {class: "num"}, num(fw.offered_resources[name], name))));
  const headers = ["ID", "Name", "State", "Labels", "Agent", "Started", "Stopped", "Sandbox"];
  return [
    el("h1", {}, "Framework " + fw.name),
    el("dl", {},
      el("dt", {}, "ID"), el("dd", {}, fw.id),
      el("dt", {}, "Status"), el("dd", {}, status),
      el("dt", {}, "Web UI"), el("dd", {}, webui(fw, null) || "none"),
      el("dt", {}, "User"), el("dd", {}, fw.user),
      el("dt", {}, "Roles"), el("dd", {}, roles(fw)),
      el("dt", {}, "Principal"), el("dd", {}, fw.principal || ""),
      el("dt", {}, "Registered"), el("dd", {}, when(fw.registered_time)),
      el("dt", {}, "Re-registered"), el("dd", {}, when(fw.reregistered_time)),
      el("dt", {}, "Unregistered"), el("dd", {}, when(fw.unregistered_time))),
    el("h2", {}, "Resources"),
    table(["", "Used", "Offered"], resourceRows),
    el("h2", {}, "Active tasks"),
    table(headers, fw.tasks.map(taskRow), {id: "active-tasks"}),
    el("h2", {}, "Completed tasks"),
    table(headers, fw.completed_tasks.map(taskRow), {id: "completed-tasks"}),
  ];
}

function agentPage(id) {
  const agent = agentById(id);
  if (!agent) return [el("h1", {}, "Agent " + id), el("p", {}, "Not known to the master.")];
  const resourceRows = RESOURCES.map((name) => {
    const total = agent.resources[name] || 0;
    const used = agent.used_resources[name] || 0;
    return el("tr", {"data-resource": name},
      el("td", {}, name),
      el("td", {class: "num"}, num(used, name)),
      el("td", {class: "num"}, num((agent.offered_resources || {})[name], name)),
      el("td", {class: "num"}, num(total - used, name)),
      el("td", {class: "num"}, num(total, name)));
  });
  const attributes = Object.entries(agent.attributes || {}).map(([k, v]) => k + ":" + v);
  const here = (task) => task.slave_id === id;
  const frameworks = allFrameworks().filter((fw) => fw.tasks.some(here) ||
    (fw.executors || []).some((e) => e.slave_id === id));
  const frameworkRows = frameworks.map((fw) => el("tr", {"data-framework": fw.id},
    el("td", {}, frameworkLink(fw.id)),
    el("td", {}, fw.name),
    el("td", {}, fw.user),
    el("td", {class: "num"}, String(fw.tasks.filter(here).length)),
    RESOURCES.map((name) => el("td", {class: "num"}, num(fw.tasks.filter(here)
      .reduce((sum, t) => sum + ((t.resources || {})[name] || 0), 0), name)))));
  const headers = ["ID", "Name", "State", "Labels", "Agent", "Started", "Stopped", "Sandbox"];
  const active = allFrameworks().flatMap((fw) => fw.tasks.filter(here));
  const completed = allFrameworks().flatMap((fw) => (fw.completed_tasks || []).filter(here));
  return [
    el("h1", {}, "Agent " + (agentOrdinal(id) ?? id) + " on " + agent.hostname),
    el("dl", {},
      el("dt", {}, "ID"), el("dd", {}, agent.id),
      el("dt", {}, "PID"), el("dd", {}, agent.pid),
      el("dt", {}, "Version"), el("dd", {}, agent.version || ""),
      el("dt", {}, "Registered"), el("dd", {}, when(agent.registered_time)),
      el("dt", {}, "Attributes"), el("dd", {}, attributes.join("; ") || "none")),
    el("h2", {}, "Resources"),
    table(["", "Used", "Offered", "Free", "Total"], resourceRows, {id: "agent-resources"}),
    el("h2", {}, "Frameworks"),
    table(["ID", "Name", "User", "Active tasks", "CPUs", "GPUs", "Mem", "Disk"],
      frameworkRows, {id: "agent-frameworks"}),
    el("h2", {}, "Active tasks"),
    table(headers, active.map(taskRow), {id: "active-tasks"}),
    el("h2", {}, "Completed tasks"),
    table(headers, completed.slice(-100).map(taskRow), {id: "completed-tasks"}),
  ];
}

// "cpus 1, mem 512 MB, ..." of the resources that are not zero (ports and the like as given).
function resourceText(resources) {
  const parts = [];
  for (const [name, value] of Object.entries(resources || {})) {
    if (RESOURCES.includes(name)) {
      if (Number(value)) parts.push(name + " " + num(value, name));
    } else if (value !== "" && value !== null && typeof value !== "object") {
      parts.push(name + " " + value);
    }
  }
  return parts.join(", ") || "none";
}

function loading(title) {
  return [el("h1", {}, title), el("p", {class: "muted"}, "Loading…")];
}

function rolesPage() {
  if (!extra.roles) return loading("Roles");
  const rows = extra.roles.roles.map((r) => el("tr", {"data-role": r.name},
    el("td", {}, r.name),
    el("td", {class: "num"}, num(r.weight)),
    el("td", {}, resourceText(r.quota.guarantee)),
    el("td", {}, resourceText(r.quota.limit)),
    el("td", {}, resourceText(r.quota.consumed)),
    el("td", {}, resourceText(r.allocated)),
    el("td", {}, resourceText(r.offered)),
    el("td", {}, resourceText(r.reserved)),
    el("td", {}, r.frameworks.map((id, i) => [i ? ", " : "", frameworkLink(id)]))));
  return [el("h1", {}, "Roles"),
    table(["Role", "Weight", "Quota guarantee", "Quota limit", "Consumed", "Allocated",
      "Offered", "Reserved", "Frameworks"], rows, {id: "roles"})];
}

function offersPage() {
  const rows = allFrameworks().flatMap((fw) => (fw.offers || []).map((o) =>
    el("tr", {"data-offer": o.id},
      el("td", {}, o.id),
      el("td", {}, frameworkLink(fw.id), " ", fw.name),
      el("td", {}, (o.allocation_info || {}).role || ""),
      el("td", {}, agentLink(o.slave_id)),
      RESOURCES.map((name) => el("td", {class: "num"}, num(o.resources[name], name))),
      el("td", {}, o.resources.ports || ""))));
  return [el("h1", {}, "Offers"),
    el("p", {class: "muted"}, "Outstanding offers: sent to a framework, not yet accepted, " +
      "declined or rescinded."),
    table(["ID", "Framework", "Role", "Agent", "CPUs", "GPUs", "Mem", "Disk", "Ports"], rows,
      {id: "offers"})];
}

function nanosWhen(duration) {
  return when(Number((duration || {}).nanoseconds || 0) / 1e9);
}

function machineText(id) {
  return [id.hostname, id.ip].filter(Boolean).join(" / ");
}

function maintenancePage() {
  if (!extra.schedule || !extra.status) return loading("Maintenance");
  const windows = (extra.schedule.windows || []).flatMap((w) => w.machine_ids.map((m) => {
    const u = w.unavailability || {};
    const end = Number((u.start || {}).nanoseconds || 0) +
      Number((u.duration || {}).nanoseconds || 0);
    return el("tr", {"data-machine": machineText(m)},
      el("td", {}, machineText(m)),
      el("td", {}, nanosWhen(u.start)),
      el("td", {}, u.duration ? when(end / 1e9) : "indefinitely"));
  }));
  const answers = (m) => (m.statuses || []).map((st, i) => [i ? ", " : "",
    frameworkLink(st.framework_id.value), " " + st.status]);
  const draining = (extra.status.draining_machines || []).map((m) => el("tr",
    {"data-machine": machineText(m.id)},
    el("td", {}, machineText(m.id)), el("td", {}, "draining"), el("td", {}, answers(m))));
  const down = (extra.status.down_machines || []).map((m) => el("tr",
    {"data-machine": machineText(m)},
    el("td", {}, machineText(m)), el("td", {}, "down"), el("td", {}, "")));
  const drains = masterState.slaves.filter((a) => a.drain_info).map((a) => el("tr",
    {"data-agent": a.id},
    el("td", {}, agentLink(a.id)),
    el("td", {}, a.drain_info.state),
    el("td", {}, a.drain_info.config && a.drain_info.config.mark_gone ? "yes" : "no"),
    el("td", {}, when(a.estimated_drain_start_time_seconds)),
    el("td", {}, a.deactivated ? "deactivated" : "active")));
  return [el("h1", {}, "Maintenance"),
    el("h2", {}, "Schedule"),
    table(["Machine", "Unavailable from", "Until"], windows, {id: "maintenance-windows"}),
    el("h2", {}, "Machines"),
    table(["Machine", "Mode", "Frameworks' answers to inverse offers"], draining.concat(down),
      {id: "maintenance-machines"}),
    el("h2", {}, "Draining and drained agents (DRAIN_AGENT)"),
    table(["Agent", "Drain", "Mark gone", "Drain started", "State"], drains,
      {id: "drains"})];
}

function parentOf(path) {
  return path.replace(/\/[^/]*\/?$/, "") || "/";
}

async function browsePage(path) {
  const main = document.getElementById("page");
  let entries;
  try {
    entries = await getJson("/files/browse?path=" + encodeURIComponent(path));
  } catch (e) {
    main.replaceChildren(el("h1", {}, "Sandbox"), el("p", {}, "Cannot list " + path + ": " +
      e.message));
    return;
  }
  const rows = entries.map((entry) => {
    const name = entry.path.split("/").pop();
    const isDir = entry.mode.startsWith("d");
    const target = isDir ? "#/browse?path=" : "#/file?path=";
    return el("tr", {"data-file": name},
      el("td", {}, entry.mode),
      el("td", {class: "num"}, String(entry.size)),
      el("td", {}, when(entry.mtime)),
      el("td", {}, link(target + encodeURIComponent(entry.path), name)),
      el("td", {}, isDir ? "" : link("/files/download?path=" + encodeURIComponent(entry.path),
        "download", {class: "download"})));
  });
  main.replaceChildren(
    el("h1", {}, "Sandbox"),
    el("p", {}, el("code", {}, path), " ",
      link("#/browse?path=" + encodeURIComponent(parentOf(path)), "up")),
    table(["Mode", "Size", "Modified", "Name", ""], rows, {id: "listing"}));
}

function stopTail() {
  if (tail) clearTimeout(tail.timer);
  tail = null;
}

async function tailStep(current) {
  if (tail !== current) return;
  try {
    if (current.offset === null) {
      const end = await getJson("/files/read?path=" + encodeURIComponent(current.path) +
        "&offset=-1");
      current.offset = Math.max(0, end.offset - TAIL_START);
    }
    for (;;) {
      const chunk = await getJson("/files/read?path=" + encodeURIComponent(current.path) +
        "&offset=" + current.offset + "&length=" + READ_CHUNK);
      if (tail !== current || !chunk.data) break;
      const atBottom = current.pre.scrollTop + current.pre.clientHeight >=
        current.pre.scrollHeight - 4;
      current.pre.append(chunk.data);
      current.offset = chunk.offset + new TextEncoder().encode(chunk.data).length;
      if (atBottom) current.pre.scrollTop = current.pre.scrollHeight;
    }
    current.note.textContent = "following, " + current.offset + " bytes";
  } catch (e) {
    current.note.textContent = "waiting for the file (" + e.message + ")";
  }
  if (tail === current) current.timer = setTimeout(() => tailStep(current), TAIL_MS);
}

function filePage(path) {
  const pre = el("pre", {class: "log", id: "tail"});
  const note = el("span", {class: "muted", id: "tail-note"}, "opening…");
  document.getElementById("page").replaceChildren(
    el("h1", {}, path.split("/").pop()),
    el("p", {}, el("code", {}, path), " ",
      link("#/browse?path=" + encodeURIComponent(parentOf(path)), "sandbox"), " ",
      link("/files/download?path=" + encodeURIComponent(path), "download", {class: "download"}),
      " ", note),
    pre);
  tail = {path: path, offset: null, timer: null, pre: pre, note: note};
  tailStep(tail);
}

// Every page but a file's tail is redrawn on every poll; the tail follows its file itself.
function render(routeChanged) {
  const {parts, query} = route();
  markMenu(parts);
  if (routeChanged) stopTail();
  if (parts[0] === "browse") {
    browsePage(query.get("path") || "/");
    return;
  }
  if (parts[0] === "file") {
    if (routeChanged) filePage(query.get("path") || "");
    return;
  }
  if (!masterState) return;
  document.getElementById("page").replaceChildren(...page(parts).flat(Infinity));
}

// The pages without an id beyond the overview: #/roles, #/offers, #/maintenance.
const LISTS = {roles: rolesPage, offers: offersPage, maintenance: maintenancePage};

// The page of a route: #/, #/frameworks[/id], #/agents[/id], LISTS; anything else says so.
function page(parts) {
  const [section, id, rest] = parts;
  if (rest !== undefined) return notFound(location.hash);
  if (section === undefined) return overview();
  if (LISTS[section] && id === undefined) return LISTS[section]();
  if (section === "frameworks") return id === undefined ? frameworksPage() : frameworkPage(id);
  if (section === "agents") return id === undefined ? agentsPage() : agentPage(id);
  return notFound(location.hash);
}

// The menu marks the section shown.
function markMenu(parts) {
  const section = parts[0] === "browse" || parts[0] === "file" ? "" : (parts[0] || "");
  for (const a of document.querySelectorAll("header nav a")) {
    a.classList.toggle("current", a.getAttribute("href") === "#/" + section);
  }
}

// A section that reads more endpoints gets them at once, not at the next poll.
async function changeRoute() {
  render(true);
  const section = route().parts[0];
  if (!EXTRA[section]) return;
  try {
    extra = await fetchExtra(section);
    if (route().parts[0] === section) render(false);
  } catch (e) {
    document.getElementById("status").textContent = "master unreachable (" + e.message + ")";
  }
}

window.addEventListener("hashchange", changeRoute);
render(true);
poll();
