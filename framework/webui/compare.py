"""Several jobs' best so far by trial number, for the plot that compares them (the index of
``da-job ui``; ``GET /api/compare?jobs=ID,ID``).

A job's line holds a point where its best changed (a feasible, completed trial that beat it,
as the job page's own best-so-far line) and one at its last trial, drawn as steps: a job of
10,000 trials is a few dozen points. A job of several objectives is drawn by its first
objective, as its progress line names "the best" (the index says so in the legend).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from disauto.common.objectives import Objectives
from disauto.common.objectives import is_feasible
from disauto.common.trial_state import TrialState
from disauto.framework import _meta as meta
from disauto.framework._store import TrialRow
from disauto.framework.webui.sources import ActionError
from disauto.framework.webui.sources import JobSource


MOST = 26
"""The most jobs one comparison draws."""


def best_so_far(trials: Sequence[TrialRow], maximize: bool) -> list[list[float]]:
    """``[[trial number, best so far], ...]``: a point each time a feasible completed trial
    beats the best (an equal one does not take it over), and one at the last trial."""
    points: list[list[float]] = []
    best: float | None = None
    last = 0
    for trial in sorted(trials, key=lambda t: t.number):
        last = trial.number
        value = trial.objective
        if trial.state != TrialState.COMPLETED or value is None \
                or not is_feasible(trial.constraints):
            continue
        if best is None or (value > best if maximize else value < best):
            best = value
            points.append([trial.number, value])
    if best is not None and points[-1][0] != last:
        points.append([last, best])
    return points


def requested(query: Mapping[str, Sequence[str]]) -> list[str]:
    """The job ids of ``?jobs=ID,ID`` (also ``?jobs=ID&jobs=ID``).

    Raises:
        ActionError: none, or more than :data:`MOST` (400).
    """
    ids = list(dict.fromkeys(job_id for given in query.get("jobs", ())
                             for job_id in given.split(",") if job_id))
    if not ids:
        raise ActionError(400, "name the jobs to compare: /api/compare?jobs=ID,ID")
    if len(ids) > MOST:
        raise ActionError(400, f"compare {MOST} jobs at most (got {len(ids)})")
    return ids


def compare_data(sources: Mapping[str, JobSource], ids: Sequence[str]) -> list[dict[str, Any]]:
    """Each job's line (in the order asked, each once), or why it has none (``error``: no such
    job, an unreadable record); one bad job hides no other."""
    lines = []
    for job_id in dict.fromkeys(ids):
        source = sources.get(job_id)
        if source is None:
            lines.append({"job_id": job_id, "error": f"no job {job_id!r} here"})
            continue
        try:
            record = source.record()
            objectives = Objectives.from_spec(record.config.search)
        except Exception as err:  # noqa: BLE001 - one unreadable record hides no other
            lines.append({"job_id": job_id, "error": f"{type(err).__name__}: {err}"})
            continue
        maximize = objectives.directions[0] == "maximize"
        lines.append({
            "job_id": job_id, "name": record.config.app_name, "state": record.state,
            "objective": objectives.names[0], "direction": objectives.directions[0],
            "several": objectives.several, "trials": len(record.trials),
            "started_at": record.meta[meta.STARTED_AT],
            "points": best_so_far(record.trials, maximize)})
    return lines
