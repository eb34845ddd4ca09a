"""The job's results for people: the table printed at the end, and results.json / results.csv."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from contextlib import contextmanager
import csv
from dataclasses import dataclass
from dataclasses import field
from functools import cached_property
import json
import os
from pathlib import Path
import textwrap
import time
from typing import IO
from typing import Any

from disauto.common import paths
from disauto.common.messages import cause
from disauto.common.objectives import Objectives
from disauto.common.objectives import is_feasible
from disauto.common.trial_state import TrialState
from disauto.framework.record import KILLED_NEED
from disauto.framework.record import MEMORY_LIMITATION
from disauto.framework.record import JobConfig
from disauto.framework.record import JobMeta
from disauto.framework.record import Pace
from disauto.framework.record import Progress
from disauto.framework.record import TrialRow
from disauto.framework.record import explored
from disauto.framework.record import killed_need_bytes
from disauto.framework.record import megabytes
from disauto.framework.record import meta
from disauto.framework.record import sorted_trials
from disauto.framework.record import suggested_memory_mb
from disauto.protos import common_pb2
from disauto.submit import fit
from disauto.submit.fit import Part


WAITING_NOTE_SECONDS = 10.0
"""A trial pending longer than this is named on the progress line (the cluster is busy)."""


def progress_line(progress: Progress, objective: str, wants: str = "",
                  note: str | Sequence[str] = "", width: int | None = None) -> str:
    """One line of at most ``width`` characters (the terminal's): trials done / running /
    failed, best so far (with several objectives: the Pareto front's size), elapsed; the rate
    and ETA; a trial that waits; the note. What does not fit gives way in this order: zero
    counts, the wording of the wait, of the best and of the rate, the parallelism, the word
    "trials"; then the pending count, the wait, the best, the ETA; a note still too long is
    cut. A note of several forms takes its longest that changes none of that.

    Args:
        progress: the job's progress.
        objective: the objective's name.
        wants: what one trial asks for (``cpus=4, mem=5120 MB``), named while one waits.
        note: what else the user must know now (the master is away, the deadline), appended;
            or its forms, longest first (a deadline's shorter ones keep the ETA beside it).
        width: the most characters (default: the terminal's width, 80 when unknown).
    """
    width = fit.columns() if width is None else width
    minutes, seconds = divmod(int(progress.elapsed), 60)
    counts = f"{progress.done}/{progress.budget} done, {progress.running} running"
    parts = [Part((f"[{minutes:02d}:{seconds:02d}] trials {counts}",
                   f"[{minutes:02d}:{seconds:02d}] {counts}"), 100)]
    if progress.parallelism:  # da-job update changes it: kept over the best's wording
        parts.append(Part((f" (parallelism {progress.parallelism})", ""), 5))
    # A zero count may go at once, trials pending when all else is at its shortest.
    parts.append(Part((f", {progress.pending} pending", "") if not progress.pending
                      else (f", {progress.pending} pending",), 1, optional=True))
    parts.append(Part((f", {progress.failed} failed", "") if not progress.failed
                      else (f", {progress.failed} failed",), 2))
    best = progress.best
    if progress.front is not None:  # several objectives: no one best, the front's size
        size = progress.front
        if size:
            trials = "trial" if size == 1 else "trials"
            parts.append(Part((f" | front {size} {trials}", f" | front {size}"), 4,
                              optional=True))
    elif best is not None and best.objective is not None:
        value = f"{best.objective:.6g}"
        parts.append(Part((f" | best {objective}={value} (trial-{best.number:04d})",
                           f" | best {objective}={value} (#{best.number})",
                           f" | best {value} (#{best.number})"), 4, optional=True))
    if progress.pace is not None:
        parts.append(_pace_part(progress.pace))
    if progress.waiting >= WAITING_NOTE_SECONDS:
        # The time it started waiting, not for how long: the line changes only when that does.
        since_minutes, since_seconds = divmod(max(0, int(progress.elapsed - progress.waiting)),
                                              60)
        since = f"[{since_minutes:02d}:{since_seconds:02d}]"
        per_trial = f" ({wants} per trial)" if wants else ""
        parts.append(Part((f" | a trial waits for free resources since {since}{per_trial}: "
                           "the cluster is busy",
                           f" | a trial waits for resources since {since}{per_trial}",
                           f" | a trial waits since {since}", f" | waits since {since}"), 3,
                          optional=True))
    forms = tuple(form for form in ((note,) if isinstance(note, str) else note) if form)
    return fit.clip(_with_note(parts, forms, width), width)


def _with_note(parts: list[Part], forms: tuple[str, ...], width: int) -> str:
    """The parts and the note (last, kept over the rest) fitted to ``width``, the note in its
    longest form that changes nothing else: its shortest form names what the user must know
    (``deadline on track``), its longer ones (when, predicted when) give way first of all, so
    the rate and the ETA stay beside it."""
    if not forms:
        return fit.fit_parts(parts, width)
    shortest = fit.fit_parts([*parts, Part((f" | {forms[-1]}",), 6)], width)
    rest = shortest[:len(shortest) - len(f" | {forms[-1]}")]
    for form in forms[:-1]:
        line = fit.fit_parts([*parts, Part((f" | {form}",), 6)], width)
        if len(line) <= width and line == f"{rest} | {form}":
            return line
    return shortest


def _pace_part(pace: Pace) -> Part:
    """The rate and the ETA (``—`` before a trial has ended): shortened after the best, and
    left out after it, where the line has no room for them."""
    eta = f"ETA {pace.eta_text()}"
    if pace.per_minute is None:
        return Part((f" | {eta}",), 4, optional=True)
    return Part((f" | {pace.rate_text()}, {eta}", f" | {pace.per_minute:.3g}/min, {eta}",
                 f" | {eta}"), 4, optional=True)


def _param_names(trials: Sequence[TrialRow], order: Sequence[str]) -> list[str]:
    names = list(order)
    for trial in trials:
        names += [n for n in trial.assignment if n not in names]
    return names


def search_keys(trials: Sequence[TrialRow], objectives: Objectives,
                front: list[int] | None = None) -> dict[str, Any]:
    """results.json's keys on the objectives: their names and directions, the Pareto front
    (the numbers of the completed, feasible trials no other dominates; with one objective the
    trials with the best value; ``front``: found already) and the infeasible trials (a
    constraint above 0)."""
    return {"objectives": list(objectives.names), "directions": list(objectives.directions),
            "pareto_front": objectives.front(trials) if front is None else front,
            "infeasible_trials": infeasible(trials)}


SUMMARY_WIDTH = 69
"""The summary's lines are printed after ``da-submit: ``: 80 columns in all."""


def search_lines(keys: dict[str, Any], objectives: Objectives, shown: int = 8,
                 front: bool = True) -> list[str]:
    """The summary's lines on the Pareto front (several objectives; not with ``front`` False:
    the caller says it otherwise) and the infeasible trials, from :func:`search_keys`, wrapped
    to :data:`SUMMARY_WIDTH`."""
    def named(numbers: list[int]) -> str:
        more = f" ... ({len(numbers)} in all)" if len(numbers) > shown else ""
        return ", ".join(f"trial-{n:04d}" for n in numbers[:shown]) + more

    sentences = []
    if objectives.several and front:
        numbers = keys["pareto_front"]
        sentences.append(f"Pareto front of {objectives.describe()}: "
                         + (named(numbers) if numbers else "empty (no completed, feasible trial)"))
    if keys["infeasible_trials"]:
        sentences.append(f"infeasible (a constraint above 0): "
                         f"{named(keys['infeasible_trials'])}")
    return [line for sentence in sentences
            for line in textwrap.wrap(sentence, SUMMARY_WIDTH, subsequent_indent="  ")]


def infeasible(trials: Sequence[TrialRow]) -> list[int]:
    """The numbers of the trials that reported a constraint above 0."""
    return [t.number for t in trials if not is_feasible(t.constraints)]


def _ordered(trials: Sequence[TrialRow], maximize: bool,
             objectives: Objectives | None) -> tuple[list[TrialRow], set[int]]:
    """The trials best first (with several objectives: the Pareto front first), and the front."""
    ordered = sorted_trials(trials, maximize)
    if objectives is None or not objectives.several:
        return ordered, set()
    front = set(objectives.front(trials))
    return sorted(ordered, key=lambda t: t.number not in front), front


def _notes(trials: Sequence[TrialRow], front: set[int]) -> dict[int, str]:
    """Per trial, what the table says of it beyond its state: on the front, infeasible."""
    notes = {t.number: "front" if t.number in front else "" for t in trials}
    for number in infeasible(trials):
        notes[number] = "infeasible"
    return notes


def table(trials: Sequence[TrialRow], objective: str, maximize: bool, limit: int = 20,
          param_order: Sequence[str] = (), width: int | None = None,
          objectives: Objectives | None = None, all_columns: str = "results.csv") -> str:
    """The trials, best first, as an aligned text table (at most ``limit`` rows).

    Parameters appear in ``param_order`` (the parameter file's order), then any others. A
    number shows the fewest significant digits (4 at least) that tell its column's values
    apart. With ``width``, the table fits it: text values are clipped (``…``), numbers never;
    the time column, then the parameters from the last, are left out before a row wraps, and
    a last line names them and ``all_columns``, where they all are. With several
    ``objectives`` each has a column and the Pareto front comes first, marked ``front``; an
    infeasible trial is marked ``infeasible``.
    """
    ordered, front = _ordered(trials, maximize, objectives)
    shown_trials = ordered[:limit]
    names = _param_names(ordered, param_order)
    several = objectives is not None and objectives.several
    shown = list(objectives.names) if objectives is not None and several else [objective]
    notes = _notes(trials, front)
    noted = any(notes.values())
    scores = [[t.metrics.get(n) for n in shown] if several else [t.objective]
              for t in shown_trials]
    values = [[t.assignment.get(n, "") for n in names] for t in shown_trials]
    rows = [[f"trial-{t.number:04d}", str(t.state), *([notes[t.number] or "-"] if noted else []),
             *score, *value, f"{t.training_seconds:.1f}"]
            for t, score, value in zip(shown_trials, _cells(scores, "-"), _cells(values, ""),
                                       strict=True)]
    heading = [fit.Column("trial"), fit.Column("state"),
               *([fit.Column("note")] if noted else []), *(fit.Column(n) for n in shown),
               *(_param_column(n, len(names) - i, [v[i] for v in values])
                 for i, n in enumerate(names)),
               fit.Column("time(s)", drop=1)]
    fitted = fit.fit_columns(heading, rows, width if width is not None else 10**6)
    lines = fitted.lines
    if len(ordered) > limit:
        lines.append(f"... {len(ordered) - limit} more in results.csv")
    if fitted.left_out and width is not None:
        lines += fit.left_out_line(fitted.left_out, width, all_columns)
    return "\n".join(lines)


def _param_column(name: str, rank: int, values: Sequence[Any]) -> fit.Column:
    """A parameter's column: left out after the time column, the last parameter first; text
    may be clipped, a number never (``0.006…`` cannot tell learning rates apart)."""
    text = any(isinstance(v, str) for v in values)
    return fit.Column(name, narrowest=6 if text else None, drop=1 + rank)


def _cells(rows: Sequence[Sequence[Any]], missing: str) -> list[list[str]]:
    """Rows of values as text: a float with the fewest significant digits (4 at least) that
    tell its column's floats apart, None as ``missing``."""
    if not rows:
        return []
    digits = [fit.significant([v for v in column if isinstance(v, float)])
              for column in zip(*rows, strict=True)]
    return [[missing if v is None else f"{v:.{d}g}" if isinstance(v, float) else str(v)
             for v, d in zip(row, digits, strict=True)] for row in rows]


def trial_dict(trial: TrialRow) -> dict[str, Any]:
    """A trial as results.json lists it (``constraints``: as reported, or None; ``feasible``:
    none above 0; ``tries``: its earlier tries, each ``{"task_id", "outcome", "message",
    "ended_at", "metrics", "reports", "resumed_from"}``, empty when its first try was its only
    one; ``resumed_from``: the checkpoint its last try resumed from, ``{"trial", "step",
    "name"}``, or None: from scratch; with Population Based Training, ``parent``: the trial
    whose checkpoint it started from, ``from_step``: that checkpoint's step, ``explored``: each
    parameter changed from the parent's, ``{"old", "new"}``; all None for a trial that did
    not descend from another)."""
    return {"number": trial.number, "state": str(trial.state), "objective": trial.objective,
            "assignment": trial.assignment, "metrics": trial.metrics,
            "training_seconds": trial.training_seconds, "task_id": trial.task_id,
            "message": trial.message, "usage": trial.usage.as_columns(),
            "constraints": None if trial.constraints is None else list(trial.constraints),
            "feasible": is_feasible(trial.constraints), "tries": list(trial.tries),
            "resumed_from": trial.resumed_from,
            "parent": trial.lineage["parent"] if trial.lineage else None,
            "from_step": trial.lineage.get("from_step") if trial.lineage else None,
            "explored": explored(trial.lineage, trial.assignment)}


def retried_lines(trials: Sequence[TrialRow], shown: int = 5) -> list[str]:
    """A line for each trial run more than once (at most ``shown``, then how many more): how
    it ended and why each earlier try ended, its cause first."""
    retried = [t for t in trials if t.tries]
    lines = []
    for trial in retried[:shown]:
        ends = "; ".join(f"try {i} ({done['task_id']}) {done['outcome']}: "
                         f"{cause(str(done['message']))}"
                         for i, done in enumerate(trial.tries, 1))
        resumed = f" (resumed from step {trial.resumed_from['step']})" \
            if trial.resumed_from else ""
        lines.append(f"trial-{trial.number:04d} {trial.state} on try {len(trial.tries) + 1}"
                     f"{resumed}; {ends}")
    if len(retried) > shown:
        lines.append(f"... {len(retried) - shown} more retried trials (results.json: tries)")
    return lines


# -- results.json: one schema, running or ended ---------------------------------------------------

SCHEMA = 1
"""The version of results.json's schema (README, "results.json"); raised when a key changes
meaning or goes, not when one is added."""


@dataclass(frozen=True)
class JobFacts:
    """What results.json is made from: the job's configuration, meta values and trials, its
    state (``running``, ``ended``, ``interrupted``), and da-submit's exit status once known."""

    config: JobConfig
    meta: JobMeta
    trials: Sequence[TrialRow]
    state: str
    exit_status: int | None = None
    now: float = field(default_factory=time.time)

    @property
    def maximize(self) -> bool:
        return self.config.search.direction != common_pb2.MINIMIZE

    @property
    def objectives(self) -> Objectives:
        return Objectives.from_spec(self.config.search)

    @cached_property
    def ranked(self) -> list[TrialRow]:
        """The trials best first (:func:`sorted_trials`), ranked once for every part."""
        return sorted_trials(self.trials, self.maximize)

    @cached_property
    def front(self) -> list[int]:
        """The Pareto front's numbers (:meth:`Objectives.front`), found once for every part."""
        return self.objectives.front(self.trials)

def _job_part(record: JobFacts) -> dict[str, Any]:
    config, search = record.config, record.config.search
    interrupted = record.state == "interrupted"
    started = record.meta[meta.STARTED_AT]
    ended = record.meta[meta.ENDED_AT] if record.state == "ended" else None
    tally = Counter(t.state for t in record.trials)
    counts = {str(state): tally[state] for state in TrialState}
    return {
        "schema": SCHEMA, "job_id": record.meta[meta.JOB_ID] or config.job_id,
        "app_name": config.app_name, "state": record.state,
        "outcome": "INTERRUPTED" if interrupted else record.meta[meta.OUTCOME],
        "message": record.meta[meta.INTERRUPTED_REASON if interrupted
                               else meta.OUTCOME_MESSAGE],
        "exit_status": record.exit_status,
        "objective": search.objective, "direction": "maximize" if record.maximize
        else "minimize", "seed": search.seed,
        "budget": int(search.max_trials), "parallelism": int(search.parallelism),
        "trial_retries": int(config.trial_retries),
        "done": sum(n for state, n in tally.items() if TrialState(state).is_finished()),
        "counts": counts,
        "started_at": started, "ended_at": ended,
        "duration_seconds": round(max(0.0, (ended or record.now) - started), 1)
        if started else 0.0,
    }


def _best_part(record: JobFacts) -> dict[str, Any]:
    ranked = record.ranked
    best = ranked[0] if ranked and ranked[0].state == TrialState.COMPLETED \
        and is_feasible(ranked[0].constraints) else None
    return {"best": None if best is None else {
        "trial": best.number, "objective": best.objective, "assignment": best.assignment}}


def _usage_part(record: JobFacts) -> dict[str, Any]:
    return {"usage": usage_summary(record.trials, record.config.runner.mem_mb)}


def _search_part(record: JobFacts) -> dict[str, Any]:
    return search_keys(record.trials, record.objectives, record.front)


def _trials_part(record: JobFacts) -> dict[str, Any]:
    ordered = record.ranked
    if record.objectives.several:  # the front first, as _ordered
        front = set(record.front)
        ordered = sorted(ordered, key=lambda t: t.number not in front)
    return {"trials": [trial_dict(t) for t in ordered]}


PARTS: tuple[Callable[[JobFacts], dict[str, Any]], ...] = (
    _job_part, _best_part, _search_part, _usage_part, _trials_part)
"""results.json, part by part (a new part: one function here and its keys in the README)."""


def document(record: JobFacts) -> dict[str, Any]:
    """results.json of a job, running or ended: the same keys either way (README)."""
    result: dict[str, Any] = {}
    for part in PARTS:
        result.update(part(record))
    return result


def memory_killed(trials: Sequence[TrialRow]) -> list[int]:
    """The trials their container's memory limit killed (Mesos'
    REASON_CONTAINER_LIMITATION_MEMORY, recorded in their failure message)."""
    return [t.number for t in trials if MEMORY_LIMITATION in (t.message or "")]


def usage_summary(trials: Sequence[TrialRow], memory_mb: float | None = None) -> dict[str, Any]:
    """What telemetry measured of the job: its largest peak memory (and whose), the CPU
    seconds of all its trials, and the ``--app-runner-memory`` (MB) that fits them.

    A trial killed by its memory limit needed more than the limit, and nothing can measure how
    much more (the kernel stops it there): it counts as needing at least
    :data:`KILLED_NEED` times the job's ``memory_mb``, so the suggestion is above the limit."""
    peaks = [(t.usage.peak_rss_bytes, t.number) for t in trials
             if t.usage.peak_rss_bytes is not None]
    cpu = [t.usage.cpu_seconds for t in trials if t.usage.cpu_seconds is not None]
    largest = max(peaks) if peaks else None
    killed = memory_killed(trials)
    needs = [p for p, _ in peaks]
    if killed and memory_mb:
        needs.append(killed_need_bytes(memory_mb))
    gpu = [t.usage.mean_gpu_utilization for t in trials
           if t.usage.mean_gpu_utilization is not None]
    gpu_peaks = [(t.usage.peak_gpu_memory_bytes, t.number) for t in trials
                 if t.usage.peak_gpu_memory_bytes is not None]
    gpu_largest = max(gpu_peaks) if gpu_peaks else None
    return {
        "largest_peak_rss_bytes": largest[0] if largest else None,
        "largest_peak_trial": largest[1] if largest else None,
        "total_cpu_seconds": round(sum(cpu), 3) if cpu else None,
        "memory_killed_trials": killed,
        "suggested_app_runner_memory_mb": suggested_memory_mb(needs),
        # GPU figures (absent where no trial had a GPU NVML could read): the mean of the
        # trials' mean utilisations, and the largest peak of a trial's GPU memory.
        "mean_gpu_utilization": round(sum(gpu) / len(gpu), 2) if gpu else None,
        "gpu_trials": len(gpu),
        "largest_peak_gpu_memory_bytes": gpu_largest[0] if gpu_largest else None,
        "largest_peak_gpu_memory_trial": gpu_largest[1] if gpu_largest else None,
    }


def usage_lines(trials: Sequence[TrialRow], memory_mb: float | None = None) -> list[str]:
    """The job summary's lines on measured usage (none when nothing was measured).

    Args:
        trials: the job's trials.
        memory_mb: the ``--app-runner-memory`` the job ran with, to compare the suggestion.
    """
    usage = usage_summary(trials, memory_mb)
    gpu = _gpu_line(usage)
    if usage["largest_peak_rss_bytes"] is None:
        return [gpu] if gpu else []
    cpu = usage["total_cpu_seconds"] or 0.0
    lines = [f"largest peak memory {megabytes(usage['largest_peak_rss_bytes'])} "
             f"(trial-{usage['largest_peak_trial']:04d}), CPU {cpu:.1f} s in all trials"]
    suggested = usage["suggested_app_runner_memory_mb"]
    killed = usage["memory_killed_trials"]
    if killed and memory_mb:
        names = ", ".join(f"trial-{n:04d}" for n in killed[:3]) + (" ..." if len(killed) > 3
                                                                  else "")
        lines.append(f"{names} killed by the {memory_mb:g}M memory limit needed more: "
                     f"--app-runner-memory {suggested}M at least ({KILLED_NEED:g} x the limit "
                     "that killed it, 1.2 x for room; a peak beyond a limit cannot be measured)")
    elif memory_mb is None or suggested != memory_mb:
        lines.append(f"--app-runner-memory {suggested}M fits the trials seen (1.2 x the largest "
                     "peak" + (f"; this job asked {memory_mb:g}M)" if memory_mb else ")"))
    return lines + ([gpu] if gpu else [])


def _gpu_line(usage: dict[str, Any]) -> str:
    """``GPU 47 % busy on average (2 trials), largest GPU memory 2048 MB (trial-0001)``, or ""
    when no trial has GPU figures."""
    parts = []
    if usage["mean_gpu_utilization"] is not None:
        trials = usage["gpu_trials"]
        parts.append(f"GPU {usage['mean_gpu_utilization']:.0f} % busy on average "
                     f"({trials} trial{'s' if trials != 1 else ''})")
    if usage["largest_peak_gpu_memory_bytes"] is not None:
        parts.append(f"largest GPU memory {megabytes(usage['largest_peak_gpu_memory_bytes'])} "
                     f"(trial-{usage['largest_peak_gpu_memory_trial']:04d})")
    return ", ".join(parts)


def saved_exit_status(job_dir: Path, state: str) -> int | None:
    """da-submit's exit status, from the results.json it wrote when the job ended (None while
    the job runs, or when it ended without one)."""
    if state != "ended":
        return None
    try:
        saved = json.loads((job_dir / paths.RESULTS_JSON).read_text())
    except (OSError, ValueError):
        return None
    status = saved.get("exit_status") if isinstance(saved, dict) else None
    return status if isinstance(status, int) else None


def dumps(document: Mapping[str, Any]) -> str:
    """results.json's text: one key a line, each trial on a line of its own. Indented by
    ``json``, a 10,000-trial document took 2 s (its indenting encoder is pure Python); this is
    the C encoder's, line by line."""
    compact = json.JSONEncoder(sort_keys=True, separators=(", ", ": ")).encode

    lines = []
    for key in sorted(document):
        value = document[key]
        if key == "trials" and isinstance(value, list) and value:
            body = ",\n".join(f"    {compact(trial)}" for trial in value)
            lines.append(f'  "trials": [\n{body}\n  ]')
        else:
            lines.append(f"  {json.dumps(key)}: {compact(value)}")
    return "{\n" + ",\n".join(lines) + "\n}"


def write(job_dir: Path, record: JobFacts, param_order: Sequence[str] = ()) -> tuple[Path, Path]:
    """Write results.json and results.csv into the job folder, each whole or not at all (a
    full disk leaves the earlier file as it was); return their paths.

    Raises:
        OSError: a file could not be written.
    """
    json_path = job_dir / paths.RESULTS_JSON
    with replacing(json_path) as handle:
        handle.write(dumps(document(record)))
    csv_path = job_dir / paths.RESULTS_CSV
    with replacing(csv_path) as handle:
        write_csv(handle, record.trials, record.maximize, param_order, record.objectives)
    return json_path, csv_path


@contextmanager
def replacing(path: Path) -> Iterator[IO[str]]:
    """A file written beside ``path`` that replaces it once whole (removed if not)."""
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("w", newline="") as handle:
            yield handle
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def write_csv(handle: IO[str], trials: Sequence[TrialRow], maximize: bool,
              param_order: Sequence[str] = (), objectives: Objectives | None = None) -> None:
    """The trials, best first, as CSV: the columns of :func:`trial_rows`, a missing value
    empty, the measured usage with a fixed number of decimals."""
    header, rows = trial_rows(trials, maximize, param_order, objectives)
    usage_at = len(header) - header[::-1].index("message")  # after the last "message"
    formats: list[int | None] = [None] * len(header)
    formats[usage_at:usage_at + len(USAGE_CSV)] = USAGE_CSV_DECIMALS
    writer = csv.writer(handle)
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if value is None else value if decimals is None
                         else f"{value:.{decimals}f}"
                         for value, decimals in zip(row, formats, strict=True)])


def trial_rows(trials: Sequence[TrialRow], maximize: bool, param_order: Sequence[str] = (),
               objectives: Objectives | None = None) -> tuple[list[str], list[list[Any]]]:
    """The trials, best first, as the columns of results.csv (and of ``da-job results
    --format parquet``) and their values, None where a trial has none: parameters, then every
    metric any trial reported; where trials reported constraints, ``feasible`` and
    ``constraints`` (JSON); with several ``objectives``, ``pareto_front`` (1 on the front, the
    front first)."""
    ordered, front = _ordered(trials, maximize, objectives)
    params = _param_names(ordered, param_order)
    metrics: list[str] = []
    for trial in ordered:
        metrics += [n for n in trial.metrics if n not in metrics]
    constrained = any(t.constraints is not None for t in trials)
    several = objectives is not None and objectives.several
    header = ["trial", "state", "objective", *params, *(f"metric:{m}" for m in metrics),
              "training_seconds", "message", *USAGE_CSV,
              *(("feasible", "constraints") if constrained else ()),
              *(("pareto_front",) if several else ())]
    rows = []
    for t in ordered:
        extra: list[Any] = []
        if constrained:
            extra += [int(is_feasible(t.constraints)),
                      None if t.constraints is None else json.dumps(list(t.constraints))]
        if several:
            extra.append(int(t.number in front))
        rows.append([t.number, str(t.state), t.objective,
                     *(t.assignment.get(p) for p in params),
                     *(t.metrics.get(m) for m in metrics),
                     round(t.training_seconds, 3), t.message, *_usage_values(t), *extra])
    return header, rows


USAGE_CSV = ("peak_rss_mb", "cpu_seconds", "mean_gpu_utilization", "peak_gpu_memory_mb")
"""The measured usage columns of results.csv (empty where not measured)."""
USAGE_CSV_DECIMALS = (1, 3, 1, 1)
"""The decimals results.csv writes of each."""


def _usage_values(trial: TrialRow) -> list[float | None]:
    usage = trial.usage
    return [None if usage.peak_rss_bytes is None else usage.peak_rss_bytes / (1 << 20),
            usage.cpu_seconds, usage.mean_gpu_utilization,
            None if usage.peak_gpu_memory_bytes is None
            else usage.peak_gpu_memory_bytes / (1 << 20)]
