"""A job's pace: trials ended per minute, and an ETA for what is left of its budget.

Both come from the trials' own recorded times, for the progress line, ``da-job
status`` and the job page:

* the **rate** is the trials that ended (completed, pruned, failed or timed out; not those
  killed) in the last :data:`RATE_WINDOW` seconds, per minute of that window -- or of the time
  since the first trial started, when that is shorter (a young job is not diluted by a window
  it has not lived). None until a trial has ended;
* the **ETA** is the deadline prediction's own (:func:`~framework.policies.deadline.predict_end`
  over :func:`~framework._job.progress.job_progress`, which reads the trials and builds a job's
  pace: :func:`~framework._job.progress.job_pace`), with all the job's ``parallelism`` slots:
  the mean measured trial time, times the trials still to start, plus what the running trials
  have left of that mean, spread over the slots (never less than the longest running rest nor,
  while trials remain, than one trial). A job with ``--target`` is estimated to need as many
  trials again as it completed (``docs/deadlines.md``). None until a trial has a measured
  duration, and once the job has ended.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
import math
from typing import Any

from disauto.common.durations import format_duration
from disauto.common.trial_state import TrialState
from disauto.framework._store import TrialRow
from disauto.framework.policies import JobProgress
from disauto.framework.policies.deadline import predict_end
from disauto.framework.policies.deadline import trial_seconds


RATE_WINDOW = 600.0
"""Seconds of recent history the rate counts (10 minutes)."""

NONE = "—"
"""What the line and the page say of a figure not known yet."""

_ENDED = (TrialState.COMPLETED, TrialState.PRUNED, TrialState.FAILED, TrialState.TIMEOUT)


@dataclass(frozen=True)
class Pace:
    """A job's rate and ETA (None: not known yet, see the module docstring)."""

    per_minute: float | None = None
    """Trials ended per minute, recently."""
    eta: float | None = None
    """Seconds until the budget is done."""
    trial_seconds: float | None = None
    """The mean measured trial duration the ETA is made of."""

    def rate_text(self) -> str:
        """``2.4 trials/min`` (``—`` when not known)."""
        return NONE if self.per_minute is None else f"{self.per_minute:.3g} trials/min"

    def eta_text(self) -> str:
        """``12m30s`` (``—`` when not known)."""
        if self.eta is None:
            return NONE
        return format_duration(float(math.ceil(max(0.0, self.eta)))) or "0s"  # whole seconds

    def as_json(self, now: float) -> dict[str, Any]:
        """The figures, rounded, for ``da-job status --json`` and the page's ``/api/page``;
        ``eta_at``: when the budget should be done (seconds since the epoch; ``now`` + ETA)."""
        return {"trials_per_minute": _rounded(self.per_minute, 2),
                "eta_seconds": _rounded(self.eta, 0),
                "eta_at": None if self.eta is None else round(now + self.eta, 1),
                "trial_seconds": _rounded(self.trial_seconds, 1),
                "window_seconds": RATE_WINDOW}


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def completion_rate(trials: Sequence[TrialRow], now: float,
                    window: float = RATE_WINDOW) -> float | None:
    """Trials that ended in the last ``window`` seconds before ``now``, per minute of the
    window (or of the time since the first trial started, if shorter); None before any ended."""
    return rate_of(*ended_times(trials), now, window)


def ended_times(trials: Sequence[TrialRow]) -> tuple[tuple[float, ...], float | None]:
    """What :func:`rate_of` reads of ``trials``: when each ended trial ended, in order, and
    when the first trial started (None: none started)."""
    ends = sorted(t.ended_at for t in trials if t.state in _ENDED and t.ended_at)
    first = min((t.started_at for t in trials if t.started_at), default=None)
    return tuple(ends), first


def rate_of(ends: Sequence[float], first: float | None, now: float,
            window: float = RATE_WINDOW) -> float | None:
    """:func:`completion_rate` from the trials' sorted end times ``ends`` and the first
    start ``first`` (:func:`ended_times`): a binary search, not a pass over the trials."""
    if not ends:
        return None
    span = min(window, now - (ends[0] if first is None else first))
    if span <= 0:
        return None
    recent = bisect.bisect_right(ends, now) - bisect.bisect_right(ends, now - window)
    return recent * 60.0 / span


def pace_of(progress: JobProgress, rate: float | None, ended: bool = False) -> Pace:
    """The :class:`Pace` of a job whose deadline reading is ``progress``
    (:func:`~framework._job.progress.job_progress`) and whose ``rate`` is
    :func:`completion_rate`'s; an ``ended`` job has its rate but no ETA."""
    seconds = trial_seconds(progress)
    if ended or seconds is None:
        return Pace(rate, None, seconds)
    end = predict_end(progress, max(1, progress.parallelism), seconds)
    return Pace(rate, max(0.0, end - progress.now), seconds)
