"""How long a trial's task may run: ``--trial-timeout`` and ``--trial-exit-grace``.

A trial holds its slot while its state says its task runs; two bounds end it before its task
does, checked by the run loop (``JobRunner.step``) on its clock:

* ``--trial-timeout``: a trial whose task runs longer (from TASK_RUNNING) is TIMEOUT.
* ``--trial-exit-grace``: a trial whose final result is recorded is done, and its runner should
  exit; one whose task has not exited that long after its final report (a leftover non-daemon
  thread, a data loader's worker) is COMPLETED, its result kept. ``--trial-timeout`` bounds it
  too: past the timeout it is COMPLETED at once.

Either way the trial ends at once (an event tells AppCore, which refills its slot), its task is
the caller's to kill (through the scheduler, with the task's kill policy), and the book keeps
that task live until its terminal status, which changes the trial no more: a kill's TASK_KILLED
does not make a completed trial a failure, and a warm slot is free once it arrives. A trial on
an unreachable agent whose result is in is left to ``--unreachable-timeout``, which completes it
and abandons its task (a kill cannot reach it meanwhile). The job's end gives the tasks of
trials with a result time of their own (``TrialBook.close``, ``JobRunner.stop``).
"""

from __future__ import annotations

from disauto.common.durations import format_duration
from disauto.common.trial_state import TrialState
from disauto.framework._job.book import TrialBook
from disauto.framework._job.book import has_result
from disauto.framework._spec import JobConfig
from disauto.framework._store import TrialRow


class TaskExits:
    """The bounds on the tasks of ``book``'s trials.

    Args:
        book: the job's trials (read and changed under its lock).
    """

    def __init__(self, book: TrialBook) -> None:
        self._book = book
        # Trials reported final to an earlier framework of the job: when this one first saw
        # them (the moment of their report is not known here; their grace runs from then).
        self._first_seen: dict[int, float] = {}

    def expire(self, config: JobConfig, now: float) -> list[str]:
        """End the trials whose task may run no longer at ``now`` (seconds since the epoch):
        TIMEOUT without a result, COMPLETED with one. Their tasks, to kill."""
        expired = []
        with self._book.lock:
            for trial in self._book.on_agents():
                why = self._overdue(trial, config, now)
                if not why:
                    continue
                state = TrialState.COMPLETED if has_result(trial) else TrialState.TIMEOUT
                task_id = self._book.end_early(trial.number, state, why)
                if task_id:
                    expired.append(task_id)
        return expired

    def _overdue(self, trial: TrialRow, config: JobConfig, now: float) -> str:
        """Why ``trial``'s task may run no longer (its message), or "" while it may."""
        limit = config.trial_timeout
        too_long = bool(limit and trial.state == TrialState.RUNNING and trial.started_at
                        and now - trial.started_at > limit)
        if not has_result(trial):
            return f"ran longer than --trial-timeout {format_duration(limit)}" if too_long \
                else ""
        if trial.unreachable_since is not None:
            return ""  # --unreachable-timeout decides
        if too_long:
            return (f"completed; its task ran longer than --trial-timeout "
                    f"{format_duration(limit)}: killed")
        # No report is taken after the final one: the runner's last report is that one.
        reported = self._book.last_report(trial.number) \
            or self._first_seen.setdefault(trial.number, now)
        grace = config.trial_exit_grace
        if now - reported > grace:
            return (f"completed; its task did not exit within --trial-exit-grace "
                    f"{format_duration(grace)} of its final report: killed")
        return ""
