"use strict";
// The index's comparison of jobs (da-job compare's plot): the best so far by trial number of
// the jobs ticked in its table, a line each, from GET /api/compare?jobs=ID,ID. The ticks live
// in the address (?compare=ID,ID), so a comparison can be bookmarked or shared; plotly.min.js
// is loaded only once two jobs are ticked, so the index alone stays light.

const compare = {
  chosen: new Set((new URLSearchParams(location.search).get("compare") || "")
    .split(",").filter(Boolean)),
  drawn: "",
  asked: 0,
  plotly: null,
};

// The first cell of a job's row in the index: its tick box.
function compareBox(row, job) {
  const box = document.createElement("input");
  box.type = "checkbox";
  box.className = "compare-box";
  box.value = job.job_id;
  box.title = "compare " + job.job_id;
  box.setAttribute("aria-label", "compare " + job.job_id);
  box.checked = compare.chosen.has(job.job_id);
  box.disabled = Boolean(job.error);
  box.addEventListener("change", () => {
    if (box.checked) compare.chosen.add(job.job_id);
    else compare.chosen.delete(job.job_id);
    const url = new URL(location.href);
    if (compare.chosen.size) url.searchParams.set("compare", [...compare.chosen].join(","));
    else url.searchParams.delete("compare");
    history.replaceState(null, "", url);
    drawCompare();
  });
  row.insertCell().append(box);
}

function comparePlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!compare.plotly) {
    compare.plotly = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = "/static/plotly.min.js";
      script.addEventListener("load", () => (window.Plotly ? resolve(window.Plotly)
        : reject(new Error("plotly.min.js loaded but defined no Plotly"))));
      script.addEventListener("error", () => {
        compare.plotly = null;
        reject(new Error("plotly.min.js did not load"));
      });
      document.head.append(script);
    });
  }
  return compare.plotly;
}

// What the note under the heading says of the lines: the objective, and the jobs not drawn.
function compareNote(lines, drawn) {
  const objectives = [...new Set(drawn.map((l) => l.objective + " (" + l.direction + ")"))];
  const parts = [drawn.length + " job" + (drawn.length === 1 ? "" : "s") + ": the best "
    + (objectives.length === 1 ? objectives[0] : "objective of each") + " so far by trial number"
    + (drawn.some((l) => l.several) ? " (a job of several objectives by its first)" : "") + "."];
  for (const line of lines) {
    if (line.error) parts.push(line.job_id + ": " + line.error + ".");
    else if (!line.points.length) parts.push(line.job_id + ": no completed trial yet.");
  }
  return parts.join(" ");
}

async function drawCompare() {
  const note = document.getElementById("compare-note");
  const plot = document.getElementById("plot-compare");
  const ids = [...compare.chosen];
  const mine = ++compare.asked;
  if (ids.length < 2) {
    note.textContent = "Tick two jobs or more to draw their best so far by trial number.";
    plot.hidden = true;
    compare.drawn = "";
    return;
  }
  try {
    const answer = await fetch("/api/compare?jobs=" + ids.map(encodeURIComponent).join(","));
    const lines = await answer.json();
    if (!answer.ok) throw new Error(lines.error || answer.statusText);
    if (mine !== compare.asked) return;  // ticked again meanwhile: that draw is the one
    const text = JSON.stringify(lines);
    if (text === compare.drawn) return;
    const drawn = lines.filter((l) => !l.error && l.points.length);
    note.textContent = compareNote(lines, drawn);
    const Plotly = await comparePlotly();
    if (mine !== compare.asked) return;
    compare.drawn = text;
    plot.hidden = false;
    const objectives = new Set(drawn.map((l) => l.objective));
    const last = Math.max(1, ...drawn.map((l) => l.points[l.points.length - 1][0]));
    Plotly.react(plot, drawn.map((l) => ({
      name: l.job_id + (l.several ? " (" + l.objective + ")" : ""),
      mode: "lines+markers", line: { shape: "hv" },
      // A marker where a trial beat the best; none where the line only reaches the last trial.
      marker: { size: l.points.map((p, i) => (i && p[1] === l.points[i - 1][1] ? 0 : 7)) },
      x: l.points.map((p) => p[0]), y: l.points.map((p) => p[1]),
      text: l.points.map((p) => l.job_id + ": best so far " + Number(p[1].toPrecision(6))
        + " at trial " + p[0]),
      hoverinfo: "text",
    })), {
      margin: { l: 60, r: 15, t: 30, b: 45 }, hovermode: "closest",
      xaxis: { title: { text: "trial" }, rangemode: "tozero", dtick: last > 10 ? null : 1 },
      yaxis: { title: { text: objectives.size === 1 ? [...objectives][0] + " (best so far)"
        : "best so far (each job's objective)" } },
      legend: { orientation: "h", x: 0, xanchor: "left", y: 1.02, yanchor: "bottom" },
    }, { displaylogo: false, responsive: true });
  } catch (err) {
    if (mine === compare.asked) note.textContent = "No comparison: " + err.message;
  }
}
