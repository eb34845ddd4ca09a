"""A job's progress, from the trials the controller records: the snapshot the progress line
shows (:class:`Progress`), its rate and ETA (:func:`job_pace`), and what the deadline policy
reads (:func:`job_progress`):

* ``durations``: every trial that ran to a result or a failure (started and ended recorded),
  divided by the slowdown of the agent it ran on, so that times measured on slow agents predict
  fast ones;
* ``running_elapsed``: how long each launched, unfinished trial has run (0 until it starts);
* ``remaining_trials``: the budget less the trials submitted, less those waiting to launch
  (they are counted as remaining too). A job with ``--target`` ends when a trial reaches it,
  usually long before its budget: it is estimated to need as many trials again as it has
  completed so far (at least ``parallelism``; never more than its budget) -- with a constant
  chance q per trial and none reached after n trials, the most likely q is below 1 / n, and the
  expected trials to go about n (docs/deadlines.md).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
import time
from typing import TYPE_CHECKING

from disauto.common.durations import format_duration
from disauto.common.objectives import Objectives
from disauto.common.trial_state import TrialState
from disauto.framework._job.pace import Pace
from disauto.framework._job.pace import ended_times
from disauto.framework._job.pace import pace_of
from disauto.framework._job.pace import rate_of
from disauto.framework._spec import JobConfig
from disauto.framework._store import TrialRow
from disauto.framework.policies import JobProgress


if TYPE_CHECKING:
    from disauto.framework._job.book import TrialBook


@dataclass(frozen=True)
class Progress:
    """A snapshot for the progress line."""

    done: int
    running: int
    pending: int
    failed: int
    best: TrialRow | None
    submitted: int
    budget: int
    elapsed: float
    waiting: float = 0.0
    """Seconds the oldest pending trial has waited for an offer (0: none waits)."""
    parallelism: int = 0
    """Trials in flight at once, as the job's spec says now (0: not known)."""
    front: int | None = None
    """With several objectives, the trials on the Pareto front (the line names it instead of
    ``best``); None with one objective."""
    pace: Pace | None = None
    """Its rate and ETA (:mod:`framework._job.pace`; None: not computed, not shown)."""


def snapshot(config: JobConfig, counts: Mapping[TrialState, int], best: TrialRow | None,
             started: float, pending_since: float | None = None,
             front: int | None = None, pace: Pace | None = None) -> Progress:
    """The :class:`Progress` of a job configured by ``config`` with trials in these states
    (``counts``), whose framework started at ``started``; ``pending_since``: when the
    longest-waiting pending trial was submitted (None: none waits); ``front``: the trials on
    the Pareto front of a job of several objectives (None: one objective); ``pace``: its rate
    and ETA."""
    now = time.time()
    return Progress(
        done=counts.get(TrialState.COMPLETED, 0) + counts.get(TrialState.PRUNED, 0),
        running=counts.get(TrialState.RUNNING, 0) + counts.get(TrialState.LAUNCHING, 0),
        pending=counts.get(TrialState.PENDING, 0),
        failed=counts.get(TrialState.FAILED, 0),
        best=best,
        submitted=sum(counts.values()),
        budget=int(config.search.max_trials),
        elapsed=now - started,
        waiting=max(0.0, now - pending_since) if pending_since else 0.0,
        parallelism=int(config.search.parallelism),
        front=front,
        pace=pace,
    )


@dataclass(frozen=True)
class PaceBasis:
    """What a job's progress and pace read of its trials, read once: :meth:`progress` and
    :meth:`pace` at any later ``now`` read no trial again (the job page's periodic call keeps
    one per change of a 10,000-trial record instead of reading every trial on each poll)."""

    config: JobConfig
    durations: tuple[float, ...]
    """Each trial that ran to a result or a failure: its duration over its agent's slowdown."""
    running_since: tuple[float | None, ...]
    """When each launched, unfinished trial started (None: not yet)."""
    waiting: int
    completed: int
    submitted: int
    ends: tuple[float, ...]
    """When each ended trial ended, in order (the rate's)."""
    first_start: float | None

    def progress(self, now: float) -> JobProgress:
        """The :class:`JobProgress` at ``now`` (:func:`job_progress`)."""
        search = self.config.search
        parallelism = int(search.parallelism)  # >= 1: da-submit and da-job update check it
        running = tuple(max(0.0, now - since) if since else 0.0 for since in self.running_since)
        budget_left = max(0, int(search.max_trials) - self.submitted) + self.waiting
        if search.HasField("target"):
            remaining = min(budget_left, max(parallelism, self.completed) - len(running))
        else:
            remaining = budget_left
        runner = self.config.runner
        return JobProgress(
            now=now, job=self.config.job_id, deadline=self.config.deadline,
            parallelism=parallelism, remaining_trials=float(max(0, remaining)),
            running_elapsed=running, durations=self.durations, waiting=self.waiting,
            cpus=runner.cpus, mem_mb=runner.mem_mb, gpus=runner.gpus,
        )

    def pace(self, now: float, *, ended: bool = False) -> Pace:
        """The rate and ETA at ``now`` (:func:`job_pace`)."""
        return pace_of(self.progress(now), rate_of(self.ends, self.first_start, now), ended)


def pace_basis(config: JobConfig, trials: Sequence[TrialRow],
               slowdown: Callable[[str], float] = lambda agent: 1.0) -> PaceBasis:
    """The :class:`PaceBasis` of a job configured by ``config`` with these ``trials``."""
    durations = tuple(
        (t.ended_at - t.started_at) / slowdown(t.agent_id) for t in trials
        if t.started_at and t.ended_at and t.state in (TrialState.COMPLETED, TrialState.FAILED)
    )
    running = tuple(t.started_at for t in trials
                    if t.state in (TrialState.LAUNCHING, TrialState.RUNNING))
    ends, first = ended_times(trials)
    return PaceBasis(
        config=config, durations=durations, running_since=running,
        waiting=sum(1 for t in trials if t.state == TrialState.PENDING),
        completed=sum(1 for t in trials if t.state == TrialState.COMPLETED),
        submitted=len(trials), ends=ends, first_start=first,
    )


def job_progress(config: JobConfig, trials: Sequence[TrialRow], now: float,
                 slowdown: Callable[[str], float] = lambda agent: 1.0) -> JobProgress:
    """The :class:`JobProgress` of a job configured by ``config`` with these ``trials``."""
    return pace_basis(config, trials, slowdown).progress(now)


def job_pace(config: JobConfig, trials: Sequence[TrialRow], now: float, *,
             ended: bool = False) -> Pace:
    """The rate and ETA (:mod:`framework._job.pace`) of a job configured by ``config`` with
    these ``trials`` at ``now``; an ``ended`` job has a rate (up to ``now``, its end) but no
    ETA."""
    return pace_basis(config, trials).pace(now, ended=ended)


def unreachable_note(trials: Sequence[TrialRow], bound: float) -> str:
    """What the progress line says of trials whose agent is unreachable: ``trial-0003 is
    unreachable since 14:03:07 (runs again from 14:08:07)``, ``2 trials are unreachable since
    ...``; "" when none is."""
    lost = sorted((t.unreachable_since, t.number) for t in trials
                  if t.unreachable_since is not None and not t.terminal)
    if not lost:
        return ""
    since = lost[0][0]
    who = f"trial-{lost[0][1]:04d} is" if len(lost) == 1 else f"{len(lost)} trials are"
    return (f"{who} unreachable since {_clock(since)} (runs again from "
            f"{_clock(since + bound)}, --unreachable-timeout {format_duration(bound)})")


def _clock(seconds: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(seconds))


class FrontSize:
    """The size of a job's Pareto front for its progress line (None with one objective).

    Computed again only when another trial completed (a completed trial's values are final),
    and outside the book's lock: Optuna takes about half a second over 10,000 trials."""

    def __init__(self, objectives: Objectives) -> None:
        self._objectives = objectives
        self._kept: tuple[int, int] | None = None

    def of(self, book: TrialBook) -> int | None:
        """The front's size among ``book``'s trials now."""
        if not self._objectives.several:
            return None
        completed = book.counts().get(TrialState.COMPLETED, 0)
        kept = self._kept
        if kept is None or kept[0] != completed:
            kept = self._kept = (completed, len(self._objectives.front(book.rows_to_read())))
        return kept[1]
