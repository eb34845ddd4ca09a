"""The job page's JSON, computed from a job's record alone (testable without a server).

A :class:`Record` is what the page needs of a job: its meta values, its trials, a reader of
their intermediate values, and whether it runs. :func:`page_data` turns it into one JSON
object of sections, each bounded whatever the number of trials:

* ``job``: the job's facts, its trials counted by state and its best;
* ``trials`` and ``table``: one page of the trials table (``framework/webui/table.py``: sorted,
  filtered and cut on the server), each row with its intermediate values;
* ``summary``: what the plots draw (``framework/webui/summary.py``: a bounded sample);
* ``importance``: Optuna's parameter importance; ``telemetry``: whether usage was measured;
* ``pareto``: a job of several objectives' Pareto plot (its front, and a bounded sample of the
  other completed trials);
* ``versions``: a short hash of each section. The page sends back those it has (``have``) and
  gets only the sections that changed since (the others are left out), so a poll of a job
  whose plots did not change carries the facts and the table page alone.

The page polls it while the job runs; ``report.html`` carries it inline with every trial's row
(``rows``), which the page sorts, filters and pages itself.
"""

from __future__ import annotations

from collections.abc import Hashable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from functools import lru_cache
import hashlib
import json
import threading
import time
from typing import Any
from typing import TypeVar

from disauto.common.messages import cause_first
from disauto.common.objectives import Objectives
from disauto.common.objectives import is_feasible
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import space_from_proto
from disauto.common.trial_state import TrialState
from disauto.framework import _meta as meta
from disauto.framework._job import sorted_trials
from disauto.framework._job.progress import PaceBasis
from disauto.framework._job.progress import pace_basis
from disauto.framework._lineage import explored
from disauto.framework._meta import JobMeta
from disauto.framework._spec import JobConfig
from disauto.framework._store import JobStore
from disauto.framework._store import TrialRow
from disauto.framework.webui.importance import ImportanceCache
from disauto.framework.webui.importance import importances
from disauto.framework.webui.importance_worker import ImportanceWorker
from disauto.framework.webui.summary import Steps
from disauto.framework.webui.summary import summary
from disauto.framework.webui.summary import thin
from disauto.framework.webui.table import TableQuery
from disauto.framework.webui.table import duration
from disauto.framework.webui.table import select
from disauto.protos import common_pb2


T = TypeVar("T")

_KEPT_JOBS = 32
"""Jobs whose computed sections are kept at most (``da-job ui`` serves every job of a home)."""

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
    """Every trial, by number (read them, never change them)."""
    steps: Steps
    """The objective's intermediate values of the trials asked for."""
    state: str
    now: float
    version: Hashable = None
    """Changes whenever the trials or their reports do (None: unknown, nothing cached)."""

    @property
    def config(self) -> JobConfig:
        config = self.meta[meta.CONFIG]
        if config is None:
            raise ValueError("the record holds no job configuration")
        return config


def store_steps(store: JobStore, objective: str) -> Steps:
    """Reads the objective's intermediate values of some trials from ``store``."""
    def steps(numbers: Sequence[int]) -> dict[int, list[tuple[int, float]]]:
        return intermediate_values(store.reports_of(numbers), objective)
    return steps


def read_record(store: JobStore, state: str) -> Record:
    """The record of ``store`` now."""
    recorded = store.meta()
    config = recorded[meta.CONFIG]
    objective = config.search.objective if config is not None else ""
    return Record(recorded, store.trials(), store_steps(store, objective), state, time.time())


def job_view(record: Record) -> dict[str, Any]:
    """The job's facts: name, state, budget, target, algorithm, policy, seed, elapsed..."""
    config = record.config
    search = config.search
    started = record.meta[meta.STARTED_AT]
    ended = record.meta[meta.ENDED_AT]
    end = ended if ended is not None and record.state != "running" else record.now
    counts, best, front, basis = _tally(record, search.direction != common_pb2.MINIMIZE)
    algorithm = search.tuning_type
    if search.settings.get("backend"):
        algorithm += f" ({search.settings['backend']})"
    objectives = Objectives.from_spec(search)
    pace = basis.pace(end, ended=record.state != "running")
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
        "best": best,
        "front": front,
        "pace": pace.as_json(end),
        "parameters": [p.name for p in search.space.parameters],
        "scales": _scales(config),
        "integers": [p.name for p in space_from_proto(config.search.space)
                     if isinstance(p, IntParam)],
        "webui_url": record.meta[meta.WEBUI_URL],
    }


_Tally = tuple[dict[str, int], dict[str, Any] | None, dict[str, Any] | None, PaceBasis]
_TALLIES: dict[str, tuple[Hashable, _Tally]] = {}

FRONT_NAMED = 3
"""The front's trials the facts and the index name (the Pareto plot shows them all)."""


def _tally(record: Record, maximize: bool) -> _Tally:
    """The trials counted by state, the best, the front's size and first trials (None for
    one objective: see :func:`_front_fact`) and what the pace reads of them; computed again
    only when the record's version changed (a poll of a 10,000-trial job's page would
    otherwise rank them all and read them all again for its pace)."""
    job_id = record.meta[meta.JOB_ID]
    kept = _TALLIES.get(job_id)
    if kept is not None and record.version is not None and kept[0] == record.version:
        return dict(kept[1][0]), kept[1][1], kept[1][2], kept[1][3]
    counts = {str(state): 0 for state in TrialState}
    for trial in record.trials:
        counts[str(trial.state)] += 1
    best = _best(record.trials, maximize)
    front = _front_fact(Objectives.from_spec(record.config.search), record.trials)
    if len(_TALLIES) >= _KEPT_JOBS and job_id not in _TALLIES:
        _TALLIES.pop(next(iter(_TALLIES)), None)
    basis = pace_basis(record.config, record.trials)
    _TALLIES[job_id] = (record.version, (counts, best, front, basis))
    return dict(counts), best, front, basis


def _front_fact(objectives: Objectives, trials: Sequence[TrialRow]) -> dict[str, Any] | None:
    """What the facts and the index say of a job of several objectives instead of a best:
    ``{"size": 4, "first": [4, 7, 2]}``, its front's size and first trials, best first by the
    first objective (:data:`FRONT_NAMED` at most); None with one objective."""
    if not objectives.several:
        return None
    points = objectives.front_points(trials)
    points.sort(key=lambda point: point[1][0], reverse=objectives.directions[0] == "maximize")
    return {"size": len(points), "first": [number for number, _ in points[:FRONT_NAMED]]}


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
    ranked = sorted_trials([t for t in trials
                            if t.state == TrialState.COMPLETED and t.objective is not None],
                           maximize)
    best = ranked[0] if ranked else None
    if best is None or best.state != TrialState.COMPLETED or best.objective is None \
            or not is_feasible(best.constraints):
        return None
    return {"trial": best.number, "objective": best.objective}


def trial_view(trial: TrialRow, intermediate: Sequence[tuple[int, float]],
               now: float) -> dict[str, Any]:
    """One row of the trials table, with its intermediate values ``[[step, value], ...]``
    (at most ``summary.MAX_CURVE_POINTS``, evenly thinned)."""
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
        "duration_seconds": duration(trial, now),
        "intermediate": thin(intermediate),
        "usage": trial.usage.as_columns(),
        "constraints": None if trial.constraints is None else list(trial.constraints),
        "feasible": is_feasible(trial.constraints),
    }


LINEAGE_MOST = 500
"""The lineage view's most recent descents (a long PBT job's page stays bounded)."""


def lineage_view(trials: Sequence[TrialRow]) -> dict[str, Any] | None:
    """Which trial descends from which (Population Based Training: a trial started from
    another's checkpoint, ``framework/_lineage.py``): each descent ``{"trial", "parent",
    "from_step", "explored"}`` (the last :data:`LINEAGE_MOST`), and every trial they name with
    its state and objective; None when no trial descends from another."""
    edges = [{"trial": t.number, "parent": int(t.lineage["parent"]),
              "from_step": t.lineage.get("from_step"),
              "explored": explored(t.lineage, t.assignment)}
             for t in trials if t.lineage]
    if not edges:
        return None
    shown = edges[-LINEAGE_MOST:]
    named = {e["trial"] for e in shown} | {e["parent"] for e in shown}
    return {"edges": shown, "total": len(edges),
            "trials": {str(t.number): {"state": str(t.state), "objective": t.objective}
                       for t in trials if t.number in named}}


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


MAX_PARETO_POINTS = 800
"""The Pareto plot draws the front and an even sample of the other completed trials, at most
this many points in all (the summary's bound for the other plots)."""


def pareto_view(record: Record) -> dict[str, Any] | None:
    """The Pareto plot of a job of several objectives (None for one): the objectives and
    their directions, the completed trials that reported them all (``number``, ``values``,
    ``feasible``: the front and a sample of the others, :data:`MAX_PARETO_POINTS` at most),
    their count, and the front's numbers (Optuna's, over the feasible ones)."""
    objectives = Objectives.from_spec(record.config.search)
    if not objectives.several:
        return None
    results = []
    for trial in record.trials:
        values = objectives.values(trial.metrics)
        if trial.state == TrialState.COMPLETED and values is not None:
            results.append((trial.number, values, is_feasible(trial.constraints)))
    front = _front(objectives, tuple(results))
    on_front = set(front)
    others = [r for r in results if r[0] not in on_front]
    shown = sorted([r for r in results if r[0] in on_front]
                   + _spread(others, max(0, MAX_PARETO_POINTS - len(on_front))))
    return {"objectives": list(objectives.names), "directions": list(objectives.directions),
            "points": [{"number": number, "values": list(values), "feasible": feasible}
                       for number, values, feasible in shown],
            "front": list(front), "completed": len(results)}


_IMPORTANCE = ImportanceCache()
_WORKER: ImportanceWorker | None = None
_WORKER_USERS = 0
"""The jobs and servers of this process that asked for the worker and have not stopped."""


def compute_importance_in_worker() -> None:
    """Have this process's pages and reports compute parameter importance in a worker process
    (``importance_worker.py``, started when first needed): a job's framework calls it when
    the job starts, ``da-job ui`` when it serves; each calls :func:`stop_importance_worker`
    when it ends."""
    global _WORKER, _WORKER_USERS
    _WORKER_USERS += 1
    if _WORKER is None:
        _WORKER = ImportanceWorker()
        _IMPORTANCE.use(_WORKER.compute)


def stop_importance_worker() -> None:
    """One user of :func:`compute_importance_in_worker` is done; once none is left (jobs of a
    notebook run side by side in one process), the worker ends and parameter importance is
    computed in this process again."""
    global _WORKER, _WORKER_USERS
    _WORKER_USERS = max(0, _WORKER_USERS - 1)
    if _WORKER is not None and _WORKER_USERS == 0:
        _WORKER.stop()
        _WORKER = None
        _IMPORTANCE.use(importances)


MAX_IMPORTANCE_TRIALS = 1000
"""Parameter importance is computed over at most this many trials (an even sample by number
of the completed ones, and of the pruned ones): PED-ANOVA over 10,000 trials took seconds of
the framework's CPU on each change, and the ranking of the parameters needs far fewer."""


def _spread(items: Sequence[T], most: int) -> list[T]:
    """At most ``most`` of ``items``, evenly spaced (all of them when they are fewer)."""
    if len(items) <= most:
        return list(items)
    stride = len(items) / most
    return [items[int(i * stride)] for i in range(most)]


def importance_view(record: Record, cache: ImportanceCache = _IMPORTANCE,
                    wait: float | None = None) -> dict[str, Any]:
    """Optuna's parameter importance over the completed trials and the pruned ones (each with
    its last intermediate value, as Optuna's TPE counts a pruned trial), or a note saying why
    not; over an even sample of :data:`MAX_IMPORTANCE_TRIALS` when there are more. ``wait``: at
    most this long for it (None: until it is computed); meanwhile the last answer, marked
    ``pending``."""
    config = record.config
    completed = [t for t in record.trials
                 if t.state == TrialState.COMPLETED and t.objective is not None]
    pruned = [t for t in record.trials
              if t.state == TrialState.PRUNED and t.objective is not None]
    share = MAX_IMPORTANCE_TRIALS * len(completed) // max(1, len(completed) + len(pruned))
    used = _spread(completed, share), _spread(pruned, MAX_IMPORTANCE_TRIALS - share)
    key = (len(completed), len(pruned))
    answer = cache.get(config.job_id, key, space_from_proto(config.search.space),
                       [(t.assignment, float(t.objective or 0.0)) for t in used[0]],
                       config.search.direction != common_pb2.MINIMIZE,
                       [(t.assignment, float(t.objective or 0.0)) for t in used[1]], wait)
    if "values" in answer and len(used[0]) + len(used[1]) < len(completed) + len(pruned):
        answer = {**answer, "basis": f"{answer['basis']}, an even sample of the "
                                     f"{len(completed) + len(pruned)} trials"}
    return answer


LIVE_WAIT = 0.05
"""How long the page's server waits for parameter importance before answering without it (the
last answer, marked pending; the next poll has the new one)."""

REPORT_WAIT = 10.0
"""How long report.html waits for parameter importance when the job ends. The worker runs at a
lower CPU priority, so on a busy machine it can take long (at nice 19, 97 s at load 20 for 200
trials); the report then has the last answer computed while the job ran, or a note
(``report.settled``)."""

SECTIONS = ("trials", "table", "summary", "importance", "pareto", "telemetry")
"""The sections a poll leaves out when the page has them already (``have``); ``job`` is always
sent."""


@dataclass
class _Kept:
    """The sections last computed for one job, and the record's version they were computed
    at (the summary and the telemetry flag change only with the record)."""

    version: Hashable = None
    summary: dict[str, Any] = field(default_factory=dict)
    telemetry: bool = False
    pareto: dict[str, Any] | None = None


_KEPT: dict[str, _Kept] = {}
_KEPT_LOCK = threading.Lock()


def _kept_sections(record: Record, job: Mapping[str, Any]) -> _Kept:
    """The summary and telemetry flag of ``record``, computed again only when its version
    changed."""
    job_id = str(job["job_id"])
    with _KEPT_LOCK:
        kept = _KEPT.get(job_id)
    if kept is not None and record.version is not None and kept.version == record.version:
        return kept
    kept = _Kept(record.version,
                 summary(record.trials, job["direction"] == "maximize",
                         job["started_at"] or record.now, record.steps,
                         objectives=job["objectives"]),
                 any(value is not None for t in record.trials
                     for value in t.usage.as_columns().values()),
                 pareto_view(record))
    with _KEPT_LOCK:
        if len(_KEPT) >= _KEPT_JOBS and job_id not in _KEPT:
            _KEPT.pop(next(iter(_KEPT)))
        _KEPT[job_id] = kept
    return kept


def version_of(section: Any) -> str:
    """A short hash of a section's JSON (what ``have`` names)."""
    text = json.dumps(section, separators=(",", ":"), sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


FIRST_PAGE = TableQuery()
"""The table's first page, by number."""


def page_data(record: Record, wait: float | None = None, query: TableQuery = FIRST_PAGE,
              have: Mapping[str, str] | None = None, rows: bool = False) -> dict[str, Any]:
    """Everything the page shows, as one JSON-ready object (the module docstring). ``wait``:
    how long to wait for parameter importance (None, as report.html: until it is computed;
    the page's server: :data:`LIVE_WAIT`, the page's next poll has it). ``query``: which page
    of the trials table. ``have``: section → the version the page has (those are left out).
    ``rows``: every trial's row too (report.html), without intermediate values."""
    job = job_view(record)
    page, matched = select(record.trials, query, job["parameters"], record.now)
    values = record.steps([t.number for t in page]) if page else {}
    kept = _kept_sections(record, job)
    sections: dict[str, Any] = {
        "trials": [trial_view(t, values.get(t.number, []), record.now) for t in page],
        "table": {**query.as_json(), "matched": matched, "total": len(record.trials)},
        "summary": kept.summary,
        "importance": importance_view(record, wait=wait),
        "pareto": kept.pareto,
        "lineage": lineage_view(record.trials),
        "telemetry": {"available": kept.telemetry, "note": TELEMETRY_NOTE},
    }
    versions = {name: version_of(value) for name, value in sections.items()}
    data: dict[str, Any] = {"job": job, "versions": versions, "generated_at": record.now}
    data.update({name: value for name, value in sections.items()
                 if (have or {}).get(name) != versions[name]})
    if rows:
        data["rows"] = [trial_view(t, (), record.now) for t in record.trials]
    return data


def parse_have(text: str) -> dict[str, str]:
    """``have=summary:1a2b,importance:3c4d`` as a mapping (unknown names are ignored)."""
    found = {}
    for part in text.split(","):
        name, _, version = part.partition(":")
        if name in SECTIONS and version:
            found[name] = version[:32]
    return found


def to_json(data: Any) -> str:
    """JSON text of a view (NaN and infinities, which JSON lacks, become null)."""
    try:  # the encoder's own pass, when there is nothing to replace (the usual case)
        return json.dumps(data, separators=(",", ":"), sort_keys=True, allow_nan=False)
    except (ValueError, TypeError):
        return json.dumps(_finite(data), separators=(",", ":"), sort_keys=True)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
