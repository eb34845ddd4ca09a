"""``load_job(job_id)``: a job's record as Python objects, for a notebook: its trials (each
with its assignment, metrics, intermediate values, measured usage, state and earlier tries),
its best trial and its Pareto front, and ``to_dataframe()`` when pandas is installed.

It reads what ``da-job results`` reads, the job's record, and builds the answer with the same
functions as results.json (:mod:`submit.results`), so the two cannot disagree; it may be read
while the job runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from disauto.common.objectives import Objectives
from disauto.common.objectives import is_feasible
from disauto.framework.record import JobRecord as StoredRecord
from disauto.framework.record import TrialRow
from disauto.submit import jobs
from disauto.submit import results


@dataclass(frozen=True)
class Try:
    """An earlier try of a trial: it ran again after this one (``outcome``: ``failed``, its
    script failed, ``--trial-retries``; ``lost``, the cluster lost its task)."""

    task_id: str
    outcome: str
    message: str
    ended_at: float | None
    metrics: Mapping[str, float]
    intermediate_values: Mapping[int, float]
    """The first objective by step: as this try reported it, after the steps of the try it
    continued up to its checkpoint's when it resumed from one."""
    resumed_from_step: int | None = None
    """The step of the trial's checkpoint this try resumed from; None: from scratch."""


@dataclass(frozen=True)
class Trial:
    """One trial as recorded."""

    number: int
    state: str
    """``COMPLETED``, ``FAILED``, ``PRUNED``, ``TIMEOUT``, ``KILLED``, or in flight."""
    assignment: Mapping[str, Any]
    metrics: Mapping[str, float]
    """Every metric its last try reported (its final values once it completed)."""
    objective: float | None
    """The first objective's value (its final one once it completed)."""
    values: tuple[float, ...] | None
    """Every objective's value, in order, once all were reported."""
    intermediate_values: Mapping[int, float]
    """The first objective by step (``report(..., step=N)``) of its last try (after those of
    the try it continued, up to the checkpoint's step, when it resumed from one)."""
    constraints: tuple[float, ...] | None
    feasible: bool
    usage: Mapping[str, float | None]
    """What telemetry measured (peak memory, CPU seconds, GPU figures; None: not measured)."""
    training_seconds: float
    task_id: str
    message: str
    tries: tuple[Try, ...]
    """Its earlier tries, oldest first (empty when it ran once)."""
    started_at: float | None
    ended_at: float | None
    resumed_from_step: int | None = None
    """The step of the trial's checkpoint its last try resumed from; None: from scratch."""


@dataclass(frozen=True)
class JobRecord:
    """A job's record: what it is, how it stands, its trials, best and front."""

    job_id: str
    app_name: str
    folder: Path
    state: str
    """``running``, ``ended`` or ``interrupted``."""
    outcome: str
    message: str
    exit_status: int | None
    """da-submit's exit status once the job ended (None before)."""
    objectives: tuple[str, ...]
    directions: tuple[str, ...]
    trials: tuple[Trial, ...]
    """By number."""
    best: Trial | None
    """The best feasible completed trial by the first objective (results.json's ``best``)."""
    pareto_front: tuple[Trial, ...]
    """The completed, feasible trials no other dominates (results.json's ``pareto_front``)."""

    def trial(self, number: int) -> Trial:
        """Trial ``number``.

        Raises:
            KeyError: no such trial.
        """
        for trial in self.trials:
            if trial.number == number:
                return trial
        raise KeyError(f"job {self.job_id} has no trial {number}")

    def to_dataframe(self) -> Any:
        """The trials as a pandas DataFrame, a row each by number: ``number``, ``state``,
        ``objective``, ``values_<objective>`` (one per objective, in order), ``datetime_start``,
        ``datetime_complete``, ``duration`` (as Optuna's ``trials_dataframe()`` has them: local
        times, and their difference; empty while the trial has not started or ended),
        ``params_<name>``, ``metrics_<name>``, ``feasible``, ``pareto_front``, ``tries``,
        ``training_seconds``, ``usage_<figure>``, ``message``.

        Raises:
            ImportError: pandas is not installed (one line saying how to install it).
        """
        try:
            import pandas
        except ImportError:
            raise ImportError("to_dataframe() needs pandas, which is not installed: "
                              "pip install pandas") from None
        front = {trial.number for trial in self.pareto_front}
        return pandas.DataFrame([_row(trial, trial.number in front, self.objectives)
                                 for trial in self.trials])


def _row(trial: Trial, on_front: bool, objectives: Sequence[str]) -> dict[str, Any]:
    """A trial's row of :meth:`JobRecord.to_dataframe`."""
    values = trial.values or (None,) * len(objectives)
    started, ended = _local_time(trial.started_at), _local_time(trial.ended_at)
    return {"number": trial.number, "state": trial.state, "objective": trial.objective,
            **{f"values_{name}": value for name, value in zip(objectives, values, strict=True)},
            "datetime_start": started, "datetime_complete": ended,
            "duration": ended - started if started is not None and ended is not None else None,
            **{f"params_{name}": value for name, value in trial.assignment.items()},
            **{f"metrics_{name}": value for name, value in trial.metrics.items()},
            "feasible": trial.feasible, "pareto_front": on_front, "tries": len(trial.tries) + 1,
            "training_seconds": trial.training_seconds,
            **{f"usage_{name}": value for name, value in trial.usage.items()},
            "message": trial.message}


def _local_time(seconds: float | None) -> datetime | None:
    """A recorded time (seconds since the epoch) as a local datetime, as Optuna's are."""
    return None if seconds is None else datetime.fromtimestamp(seconds)


def load_job(job_id: str, *, folder: Path | None = None) -> JobRecord:
    """The record of the job ``job_id`` (any unique prefix of it) under ``$DISAUTO_HOME``,
    or of the job in ``folder``.

    Raises:
        JobLookupError: no such job, or the prefix names several.
    """
    job = jobs.load(folder) if folder is not None else jobs.find(job_id)
    with StoredRecord.in_folder(job.folder) as stored:
        reports = stored.results()
    objectives = Objectives.from_spec(job.config.search)
    by_trial: dict[int, list[Mapping[str, Any]]] = {}
    for report in reports:
        by_trial.setdefault(int(report["trial"]), []).append(report)
    trials = tuple(_trial(row, by_trial.get(row.number, []), objectives)
                   for row in sorted(job.trials, key=lambda t: t.number))
    facts = results.JobFacts(job.config, job.meta, job.trials, job.state,
                             results.saved_exit_status(job.folder, job.state))
    document = results.document(facts)
    numbered = {trial.number: trial for trial in trials}
    best = document["best"]
    return JobRecord(
        job_id=job.job_id, app_name=job.config.app_name, folder=job.folder, state=job.state,
        outcome=document["outcome"], message=document["message"],
        exit_status=document["exit_status"], objectives=objectives.names,
        directions=objectives.directions, trials=trials,
        best=None if best is None else numbered[best["trial"]],
        pareto_front=tuple(numbered[number] for number in document["pareto_front"]))


def _trial(row: TrialRow, reports: Sequence[Mapping[str, Any]],
           objectives: Objectives) -> Trial:
    """A trial from its row and its reports (split among its tries by their counts)."""
    first = objectives.names[0]
    tries: list[Try] = []
    start = 0
    for done in row.tries:
        made = int(done.get("reports", 0))
        step = _own_step(row.number, done.get("resumed_from"))
        tries.append(Try(str(done.get("task_id", "")), str(done.get("outcome", "")),
                         str(done.get("message", "")), done.get("ended_at"),
                         dict(done.get("metrics") or {}),
                         _continued(tries, step, _steps(reports[start:start + made], first)),
                         step))
        start += made
    step = _own_step(row.number, row.resumed_from)
    return Trial(
        number=row.number, state=str(row.state), assignment=dict(row.assignment),
        metrics=dict(row.metrics), objective=row.objective,
        values=objectives.values(row.metrics),
        intermediate_values=_continued(tries, step, _steps(reports[start:], first)),
        constraints=row.constraints, feasible=is_feasible(row.constraints),
        usage=row.usage.as_columns(), training_seconds=row.training_seconds,
        task_id=row.task_id, message=row.message, tries=tuple(tries),
        started_at=row.started_at, ended_at=row.ended_at, resumed_from_step=step)


def _own_step(number: int, point: Mapping[str, Any] | None) -> int | None:
    """The step of trial ``number``'s own checkpoint a try resumed from (None: from scratch,
    or from another trial's)."""
    if not point or point.get("trial") != number or not isinstance(point.get("step"), int):
        return None
    return int(point["step"])


def _continued(earlier: Sequence[Try], step: int | None,
               own: dict[int, float]) -> dict[int, float]:
    """A try's curve: the one of the try before it up to ``step`` when it resumed from there,
    then its own steps."""
    if step is None or not earlier:
        return own
    return {**{s: v for s, v in earlier[-1].intermediate_values.items() if s <= step}, **own}


def _steps(reports: Sequence[Mapping[str, Any]], objective: str) -> dict[int, float]:
    """``objective`` by step in ``reports`` (the step reports, not the final one)."""
    return {int(report["step"]): float(report["metrics"][objective]) for report in reports
            if report["step"] is not None and not report["final"]
            and objective in report["metrics"]}
