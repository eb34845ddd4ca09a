"""One line on a job's deadline, for the progress line and ``da-job status``.

Whatever the offer policy, the prediction is the deadline policy's own
(:mod:`framework._job.progress`, :func:`~framework.policies.deadline.standing_of`): the trials'
measured times, the work left and the slots the job holds now. A job says early when it cannot
meet its deadline even with all its ``parallelism`` slots.
"""

from __future__ import annotations

from collections.abc import Sequence
import math
import time

from disauto.common.deadlines import format_deadline
from disauto.common.durations import format_duration
from disauto.framework._job.progress import job_progress
from disauto.framework._spec import JobConfig
from disauto.framework._store import TrialRow
from disauto.framework.policies.deadline import standing_of


def _clock(moment: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(moment))


def deadline_note(config: JobConfig, trials: Sequence[TrialRow], now: float,
                  ended_at: float | None = None) -> str:
    """``deadline 18:00:00 on track (predicted 17:31:02)`` and the like; "" without one."""
    forms = deadline_forms(config, trials, now, ended_at)
    return forms[0] if forms else ""


def deadline_forms(config: JobConfig, trials: Sequence[TrialRow], now: float,
                   ended_at: float | None = None) -> tuple[str, ...]:
    """:func:`deadline_note`'s line and its shorter forms, longest first (the last names the
    standing alone: ``deadline on track``), so that the progress line keeps the rate and the
    ETA beside it within 80 columns; () without a deadline."""
    if not config.deadline:
        return ()
    deadline = config.deadline
    when = format_deadline(deadline)
    if ended_at is not None:
        if ended_at <= deadline:
            early = format_duration(deadline - ended_at)
            return (f"deadline {when} met ({early} early)", f"deadline met ({early} early)",
                    "deadline met")
        late = format_duration(ended_at - deadline)
        return (f"deadline {when} missed by {late}", f"deadline missed by {late}",
                "deadline missed")
    progress = job_progress(config, trials, now)
    held = max(1, len(progress.running_elapsed))
    own = standing_of(progress, held, 0, edge_slowdown=1.0, safety=1.0)
    if now > deadline:
        ago = format_duration(now - deadline)
        return (f"deadline {when} missed: {ago} ago", f"deadline missed {ago} ago",
                "deadline missed")
    if not progress.durations:
        left = format_duration(deadline - now)
        return (f"deadline {when} (in {left}): no trial measured yet", f"deadline in {left}")
    if not own.feasible:
        full = standing_of(progress, progress.parallelism, 0, edge_slowdown=1.0, safety=1.0)
        end = _clock(full.predicted_end)
        return (f"deadline {when} cannot be met: even {progress.parallelism} slots end about "
                f"{end}", f"deadline cannot be met (ends about {end})",
                "deadline cannot be met")
    if math.isfinite(own.predicted_end) and own.predicted_end <= deadline:
        end = _clock(own.predicted_end)
        return (f"deadline {when} on track (predicted {end})",
                f"deadline on track (predicted {end})", "deadline on track")
    return (f"deadline {when} at risk: {held} slot(s) end about {_clock(own.predicted_end)}, "
            f"{own.min_share} needed", f"deadline at risk: {own.min_share} slots needed",
            "deadline at risk")
