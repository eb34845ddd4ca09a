"""Trials ended before their task: pruned by AppCore's early-stopping rule, killed by a user.

Either way the trial is recorded at once (an event frees its slot for AppCore to refill) and
later status updates of its task do not change that; the task is killed. A killed trial's task
is the caller's to kill at once; a pruned trial's runner gets a grace period to exit on its own,
then its task is killed if it still runs. Methods run under the job's lock (the controller's).
"""

from __future__ import annotations

from collections.abc import Callable
import logging
import threading

from disauto.common.trial_state import TrialState
from disauto.framework._job.book import TrialBook
from disauto.framework._store import TrialRow


logger = logging.getLogger("disauto.framework._job")


class TrialStopper:
    """Prunes and kills the trials of ``book``.

    Args:
        book: the job's trials.
        on_kill: kills tasks by id (a pruned trial's task still live after the grace).
        prune_grace: seconds a pruned trial's runner has to exit on its own.
    """

    def __init__(self, book: TrialBook, on_kill: Callable[[list[str]], None],
                 prune_grace: float) -> None:
        self._book = book
        self._on_kill = on_kill
        self._grace = prune_grace

    def prune(self, number: int, message: str) -> TrialRow:
        """PRUNED at once; its task killed if still live after the grace. A trial that already
        ended is left as it is. The trial.

        Raises:
            NotFoundError: no such trial.
        """
        trial = self._book.require(number)
        if trial.terminal:
            return trial
        task_id = self._book.end_early(number, TrialState.PRUNED,
                                       message or "stopped early by the pruner")
        if task_id:
            timer = threading.Timer(self._grace, self._kill_if_live, args=(task_id,))
            timer.daemon = True
            timer.start()
        return trial

    def _kill_if_live(self, task_id: str) -> None:
        if self._book.outliving.ended_first(task_id):
            logger.info("pruned task %s did not exit within %.0f s; killing it", task_id,
                        self._grace)
            self._on_kill([task_id])

    def kill(self, number: int, message: str) -> list[str]:
        """KILLED at once (not a failure toward ``--max-failed-trials``: the user stopped it);
        its task, to kill at once, if it has one.

        Raises:
            NotFoundError: no such trial.
            FailedPreconditionError: it has ended, or already reported its final result.
        """
        self._book.check_killable(number)
        task_id = self._book.end_early(number, TrialState.KILLED, message)
        logger.info("trial %d: %s", number, message)
        return [task_id] if task_id else []
