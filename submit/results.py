"""The job's results for people: the table printed at the end, and results.json / results.csv."""

from __future__ import annotations

from collections.abc import Sequence
import csv
import json
from pathlib import Path
from typing import IO
from typing import Any

from disauto.common import paths
from disauto.framework.job import Progress
from disauto.framework.job import sorted_trials
from disauto.framework.store import TrialRow


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


WAITING_NOTE_SECONDS = 10.0
"""A trial pending longer than this is named on the progress line (the cluster is busy)."""


def progress_line(progress: Progress, objective: str, wants: str = "", note: str = "") -> str:
    """One line: trials done / running / failed, best so far, elapsed; and a trial that waits.

    Args:
        progress: the job's progress.
        objective: the objective's name.
        wants: what one trial asks for (``cpus=4, mem=5120 MB``), named while one waits.
        note: what else the user must know now (the master is away), appended.
    """
    minutes, seconds = divmod(int(progress.elapsed), 60)
    slots = f" (parallelism {progress.parallelism})" if progress.parallelism else ""
    line = (
        f"[{minutes:02d}:{seconds:02d}] trials {progress.done}/{progress.budget} done, "
        f"{progress.running} running{slots}, {progress.pending} pending, "
        f"{progress.failed} failed"
    )
    best = progress.best
    if best is not None and best.objective is not None:
        line += f" | best {objective}={best.objective:.6g} (trial-{best.number:04d})"
    if progress.waiting >= WAITING_NOTE_SECONDS:
        # The time it started waiting, not for how long: the line changes only when that does.
        since_minutes, since_seconds = divmod(int(progress.elapsed - progress.waiting), 60)
        line += (f" | a trial waits for free resources since [{since_minutes:02d}:"
                 f"{since_seconds:02d}]" + (f" ({wants} per trial)" if wants else "")
                 + ": the cluster is busy")
    if note:
        line += f" | {note}"
    return line


def _param_names(trials: Sequence[TrialRow], order: Sequence[str]) -> list[str]:
    names = list(order)
    for trial in trials:
        names += [n for n in trial.assignment if n not in names]
    return names


def table(trials: Sequence[TrialRow], objective: str, maximize: bool, limit: int = 20,
          param_order: Sequence[str] = ()) -> str:
    """The trials, best first, as an aligned text table (at most ``limit`` rows).

    Parameters appear in ``param_order`` (the parameter file's order), then any others.
    """
    ordered = sorted_trials(trials, maximize)
    names = _param_names(ordered, param_order)
    header = ["trial", "state", objective, *names, "time(s)"]
    rows = [
        [f"trial-{t.number:04d}", t.state,
         _fmt(t.objective) if t.objective is not None else "-",
         *(_fmt(t.assignment.get(n, "")) for n in names),
         f"{t.training_seconds:.1f}"]
        for t in ordered[:limit]
    ]
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows, strict=False)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths, strict=True)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
              for row in rows]
    if len(ordered) > limit:
        lines.append(f"... {len(ordered) - limit} more in results.csv")
    return "\n".join(lines)


def trial_dict(trial: TrialRow) -> dict[str, Any]:
    """A trial as results.json lists it."""
    return {"number": trial.number, "state": str(trial.state), "objective": trial.objective,
            "assignment": trial.assignment, "metrics": trial.metrics,
            "training_seconds": trial.training_seconds, "task_id": trial.task_id,
            "message": trial.message}


def write(job_dir: Path, summary: dict[str, Any], trials: Sequence[TrialRow],
          maximize: bool, param_order: Sequence[str] = ()) -> tuple[Path, Path]:
    """Write results.json and results.csv into the job folder; return their paths."""
    ordered = sorted_trials(trials, maximize)
    json_path = job_dir / paths.RESULTS_JSON
    json_path.write_text(json.dumps({**summary, "trials": [trial_dict(t) for t in ordered]},
                                    indent=2, sort_keys=True))
    csv_path = job_dir / paths.RESULTS_CSV
    with csv_path.open("w", newline="") as handle:
        write_csv(handle, trials, maximize, param_order)
    return json_path, csv_path


def write_csv(handle: IO[str], trials: Sequence[TrialRow], maximize: bool,
              param_order: Sequence[str] = ()) -> None:
    """The trials, best first, as CSV: parameters, then every metric any trial reported."""
    ordered = sorted_trials(trials, maximize)
    params = _param_names(ordered, param_order)
    metrics: list[str] = []
    for trial in ordered:
        metrics += [n for n in trial.metrics if n not in metrics]
    writer = csv.writer(handle)
    writer.writerow(["trial", "state", "objective", *params,
                     *(f"metric:{m}" for m in metrics), "training_seconds", "message"])
    for t in ordered:
        writer.writerow([t.number, t.state, "" if t.objective is None else t.objective,
                         *(t.assignment.get(p, "") for p in params),
                         *(t.metrics.get(m, "") for m in metrics),
                         round(t.training_seconds, 3), t.message])
