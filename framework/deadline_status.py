"""One line on a job's deadline, for the progress line and ``da-job status``.

Whatever the offer policy, the prediction is the deadline policy's own
(:mod:`framework.job.progress`, :func:`~framework.policies.deadline.standing_of`): the trials'
measured times, the work left and the slots the job holds now. A job says early when it cannot
meet its deadline even with all its ``parallelism`` slots.
"""

from __future__ import annotations

from collections.abc import Sequence
import math
import time

from disauto.common.deadlines import format_deadline
from disauto.common.durations import format_duration
from disauto.framework.job.progress import job_progress
from disauto.framework.policies.deadline import standing_of
from disauto.framework.spec import JobConfig
from disauto.framework.store import TrialRow


def _clock(moment: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(moment))


def deadline_note(config: JobConfig, trials: Sequence[TrialRow], now: float,
                  ended_at: float | None = None) -> str:
    """``deadline 18:00:00 on track (predicted 17:31:02)`` and the like; "" without one."""
    if not config.deadline:
        return ""
    deadline = config.deadline
    when = format_deadline(deadline)
    if ended_at is not None:
        if ended_at <= deadline:
            return f"deadline {when} met ({format_duration(deadline - ended_at)} early)"
        return f"deadline {when} missed by {format_duration(ended_at - deadline)}"
    progress = job_progress(config, trials, now)
    held = max(1, len(progress.running_elapsed))
    own = standing_of(progress, held, 0, edge_slowdown=1.0, safety=1.0)
    if now > deadline:
        return f"deadline {when} missed: {format_duration(now - deadline)} ago"
    if not progress.durations:
        return f"deadline {when} (in {format_duration(deadline - now)}): no trial measured yet"
    if not own.feasible:
        full = standing_of(progress, progress.parallelism, 0, edge_slowdown=1.0, safety=1.0)
        return (f"deadline {when} cannot be met: even {progress.parallelism} slots end about "
                f"{_clock(full.predicted_end)}")
    if math.isfinite(own.predicted_end) and own.predicted_end <= deadline:
        return f"deadline {when} on track (predicted {_clock(own.predicted_end)})"
    return (f"deadline {when} at risk: {held} slot(s) end about {_clock(own.predicted_end)}, "
            f"{own.min_share} needed")
