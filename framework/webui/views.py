"""The job page's JSON, computed from a job's record alone (testable without a server).

A :class:`Record` is what the page needs of a job: its meta values, trials and reports, and
whether it runs. :func:`page_data` turns it into one JSON object — the job, its trials (with
each trial's intermediate values, measured usage and feasibility), parameter importance, the
Pareto front of a job of several objectives and whether resource use was measured — which
the page polls while the job runs and ``report.html`` carries inline.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
import json
import time
from typing import Any

from disauto.common.messages import cause_first
from disauto.common.objectives import Objectives
from disauto.common.objectives import is_feasible
from disauto.common.space import CategoricalParam
from disauto.common.space import space_from_proto
from disauto.common.trial_state import TrialState
from disauto.framework import meta
from disauto.framework.job import sorted_trials
from disauto.framework.meta import JobMeta
from disauto.framework.spec import JobConfig
from disauto.framework.store import JobStore
from disauto.framework.store import TrialRow
from disauto.framework.webui.importance import ImportanceCache
from disauto.protos import common_pb2


TELEMETRY_NOTE = ("Resource use of the chosen trial over time: its memory (resident set) and "
                  "the CPUs it kept busy, as the telemetry collectors sampled them (the data "
                  "service's api/data). The trials table has each trial's peak memory, CPU "
                  "seconds and mean GPU utilisation.")


@dataclass(frozen=True)
class Record:
    """One job as its record says, at ``now``.

    ``state`` is ``running``, ``ended`` or ``interrupted`` (the caller knows which: the
    framework that runs the job, or ``da-job`` from the recorded process).
    """

    meta: JobMeta
    trials: Sequence[TrialRow]
    reports: Sequence[Mapping[str, Any]]
    state: str
    now: float

    @property
    def config(self) -> JobConfig:
        config = self.meta[meta.CONFIG]
        if config is None:
            raise ValueError("the record holds no job configuration")
        return config


def read_record(store: JobStore, state: str) -> Record:
    """The record of ``store`` now."""
    return Record(store.meta(), store.trials(), store.reports(), state, time.time())


def job_view(record: Record) -> dict[str, Any]:
    """The job's facts: name, state, budget, target, algorithm, policy, seed, elapsed..."""
    config = record.config
    search = config.search
    started = record.meta[meta.STARTED_AT]
    ended = record.meta[meta.ENDED_AT]
    end = ended if ended is not None and record.state != "running" else record.now
    counts = {str(state): 0 for state in TrialState}
    for trial in record.trials:
        counts[str(trial.state)] += 1
    algorithm = search.tuning_type
    if search.settings.get("backend"):
        algorithm += f" ({search.settings['backend']})"
    objectives = Objectives.from_spec(search)
    return {
        "job_id": record.meta[meta.JOB_ID] or config.job_id,
        "name": config.app_name,
        "state": record.state,
        "outcome": record.meta[meta.OUTCOME],
        "outcome_message": record.meta[meta.OUTCOME_MESSAGE],
        "interrupted_reason": record.meta[meta.INTERRUPTED_REASON]
        if record.state == "interrupted" else "",
        "budget": int(search.max_trials),
        "parallelism": int(search.parallelism),
        "submitted": len(record.trials),
        "target": search.target if search.HasField("target") else None,
        "objective": search.objective,
        "direction": "minimize" if search.direction == common_pb2.MINIMIZE else "maximize",
        "objectives": list(objectives.names),
        "directions": list(objectives.directions),
        "algorithm": algorithm,
        "settings": dict(sorted(search.settings.items())),
        "early_stopping": search.early_stopping or "none",
        "policy": record.meta[meta.OFFER_POLICY],
        "seed": int(search.seed),
        "max_failed_trials": int(search.max_failed_trials),
        "master": record.meta[meta.SUBMITTED_MASTER] or record.meta[meta.MASTER],
        "started_at": started,
        "ended_at": ended if record.state != "running" else None,
        "elapsed_seconds": round(max(0.0, end - started), 1) if started else 0.0,
        "counts": counts,
        "best": _best(record.trials, search.direction != common_pb2.MINIMIZE),
        "parameters": [p.name for p in search.space.parameters],
        "scales": _scales(config),
        "webui_url": record.meta[meta.WEBUI_URL],
    }


def _scales(config: JobConfig) -> dict[str, str]:
    """How each parameter's axis is drawn: ``log`` (searched on a log scale), ``linear``, or
    ``choice`` (an axis of its labels)."""
    scales = {}
    for param in space_from_proto(config.search.space):
        if isinstance(param, CategoricalParam):
            scales[param.name] = "choice"
        else:
            scales[param.name] = "log" if param.log else "linear"
    return scales


def _best(trials: Sequence[TrialRow], maximize: bool) -> dict[str, Any] | None:
    """The best feasible completed trial; of equal ones, the first to complete (as the
    progress line and da-job say)."""
    ranked = sorted_trials(trials, maximize)
    best = ranked[0] if ranked else None
    if best is None or best.state != TrialState.COMPLETED or best.objective is None \
            or not is_feasible(best.constraints):
        return None
    return {"trial": best.number, "objective": best.objective}


def trial_view(trial: TrialRow, intermediate: Sequence[tuple[int, float]],
               now: float) -> dict[str, Any]:
    """One row of the trials table, with its intermediate values ``[[step, value], ...]``."""
    end = trial.ended_at if trial.ended_at is not None else (
        now if trial.state == TrialState.RUNNING else None)
    duration = round(end - trial.started_at, 2) if end is not None and trial.started_at else None
    return {
        "number": trial.number,
        "state": str(trial.state),
        "assignment": trial.assignment,
        "objective": trial.objective,
        "final": trial.final_reported,
        "metrics": trial.metrics,
        "message": trial.message,
        "cause": cause_first(trial.message) if trial.message else "",
        "task_id": trial.task_id,
        "agent": trial.agent_id,
        "retries": trial.retries,
        "created_at": trial.created_at,
        "started_at": trial.started_at,
        "ended_at": trial.ended_at,
        "duration_seconds": duration,
        "intermediate": [[step, value] for step, value in intermediate],
        "usage": trial.usage.as_columns(),
        "constraints": None if trial.constraints is None else list(trial.constraints),
        "feasible": is_feasible(trial.constraints),
    }


def intermediate_values(reports: Sequence[Mapping[str, Any]],
                        objective: str) -> dict[int, list[tuple[int, float]]]:
    """Each trial's objective by step, from its non-final reports, in the order reported."""
    values: dict[int, list[tuple[int, float]]] = {}
    for report in reports:
        metrics = report.get("metrics") or {}
        if report.get("step") is None or report.get("final") or objective not in metrics:
            continue
        values.setdefault(int(report["trial"]), []).append(
            (int(report["step"]), float(metrics[objective])))
    return values


@dataclass(frozen=True)
class _Result:
    """A completed trial's values as :meth:`Objectives.front` reads a trial."""

    number: int
    metrics: Mapping[str, float]
    constraints: tuple[float, ...] | None
    state: TrialState = TrialState.COMPLETED


@lru_cache(maxsize=16)
def _front(objectives: Objectives, results: tuple[tuple[int, tuple[float, ...], bool], ...]
           ) -> tuple[int, ...]:
    """The front of ``results`` (number, values, feasible), computed once for a job whose
    results have not changed since the last poll."""
    return tuple(objectives.front(
        _Result(number, dict(zip(objectives.names, values, strict=True)),
                None if feasible else (1.0,))
        for number, values, feasible in results))


def pareto_view(record: Record) -> dict[str, Any] | None:
    """The Pareto plot of a job of several objectives (None for one): the objectives and
    their directions, every completed trial that reported them all (``number``, ``values``,
    ``feasible``) and the front's numbers (Optuna's, over the feasible ones)."""
    objectives = Objectives.from_spec(record.config.search)
    if not objectives.several:
        return None
    results = []
    for trial in record.trials:
        values = objectives.values(trial.metrics)
        if trial.state == TrialState.COMPLETED and values is not None:
            results.append((trial.number, values, is_feasible(trial.constraints)))
    front = _front(objectives, tuple(results))
    return {"objectives": list(objectives.names), "directions": list(objectives.directions),
            "points": [{"number": number, "values": list(values), "feasible": feasible}
                       for number, values, feasible in results],
            "front": list(front)}


_IMPORTANCE = ImportanceCache()


def importance_view(record: Record, cache: ImportanceCache = _IMPORTANCE,
                    wait: float | None = None) -> dict[str, Any]:
    """Optuna's parameter importance over the completed trials and the pruned ones (each with
    its last intermediate value, as Optuna's TPE counts a pruned trial), or a note saying why
    not. ``wait``: at most this long for it (None: until it is computed); meanwhile the last
    answer, marked ``pending``."""
    config = record.config
    completed = [t for t in record.trials
                 if t.state == TrialState.COMPLETED and t.objective is not None]
    pruned = [t for t in record.trials
              if t.state == TrialState.PRUNED and t.objective is not None]
    key = (tuple(t.number for t in completed), tuple(t.number for t in pruned))
    return cache.get(config.job_id, key, space_from_proto(config.search.space),
                     [(t.assignment, float(t.objective or 0.0)) for t in completed],
                     config.search.direction != common_pb2.MINIMIZE,
                     [(t.assignment, float(t.objective or 0.0)) for t in pruned], wait)


LIVE_WAIT = 0.5
"""How long the page's server waits for parameter importance before answering without it."""


def page_data(record: Record, wait: float | None = None) -> dict[str, Any]:
    """Everything the page shows, as one JSON-ready object. ``wait``: how long to wait for
    parameter importance (None, as report.html: until it is computed; the page's server:
    :data:`LIVE_WAIT`, the page's next poll has it)."""
    job = job_view(record)
    steps = intermediate_values(record.reports, job["objective"])
    return {
        "job": job,
        "trials": [trial_view(t, steps.get(t.number, []), record.now) for t in record.trials],
        "importance": importance_view(record, wait=wait),
        "pareto": pareto_view(record),
        "telemetry": {"available": any(value is not None for t in record.trials
                                       for value in t.usage.as_columns().values()),
                      "note": TELEMETRY_NOTE},
        "generated_at": record.now,
    }


def to_json(data: Any) -> str:
    """JSON text of a view (NaN and infinities, which JSON lacks, become null)."""
    return json.dumps(_finite(data), separators=(",", ":"), sort_keys=True)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
