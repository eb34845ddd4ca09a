"""Where the job's tasks are and which still run: what the scheduler reconciles, kills and
adopts, and what ``da-submit``'s runner waits for at the end, read from the trial book and
AppCore's life.

:class:`JobTasks` is the read side of the job's tasks, a collaborator the controller holds
(``controller.tasks``): every method reads; none changes a trial, a task or the outcome.
"""

from __future__ import annotations

from dataclasses import replace
import threading

from disauto.framework._job.appcore import AppCoreLife
from disauto.framework._job.book import TrialBook
from disauto.framework._store import TrialRow


class JobTasks:
    """The job's tasks (its trials' and AppCore's), as the book and AppCore's life hold them.

    Read under the book's lock, which the controller's changes hold too.
    """

    def __init__(self, book: TrialBook, appcore: AppCoreLife) -> None:
        self._book = book
        self._lock: threading.RLock = book.lock
        self._appcore = appcore

    def executor_of(self, task_id: str) -> str:
        """The warm slot's executor that ran a trial's current task ("" if none), as recorded."""
        return self._book.executor_of(task_id)

    def live_task_ids(self) -> list[str]:
        """Tasks launched and not yet terminal (to kill when the job ends); an AppCore that
        ended is not live (JobRunner.stop waits for live tasks until its grace period ends)."""
        with self._lock:
            appcore = self._appcore.live_task_id()
            return self._book.live_task_ids() + ([appcore] if appcore else [])

    def live_tasks(self) -> list[tuple[str, str]]:
        """``(task_id, agent_id)`` of the tasks launched and not yet ended (to reconcile)."""
        return [(task_id, agent) for task_id, agent, live in self.task_locations()
                if live and agent]

    def finishing_task_ids(self) -> list[str]:
        """Live tasks of trials whose final result is recorded (given time to exit)."""
        with self._lock:
            return self._book.outliving.finishing_ids()

    def task_locations(self) -> list[tuple[str, str, bool]]:
        """``(task_id, agent_id, live)`` of every task launched for this job, AppCore's too."""
        with self._lock:
            live = set(self.live_task_ids())
            return self._book.task_locations(live) + self._appcore.task_locations(live)

    def kills_on_resume(self) -> list[str]:
        """Once: the tasks an earlier framework of the job ended and may not have killed."""
        with self._lock:
            return self._book.outliving.kills_on_resume()

    def slot_tasks_in_flight(self) -> dict[str, str]:
        """Executor id → the task the record says runs on it."""
        return self._book.slot_tasks_in_flight()

    def unreachable_trials(self) -> list[TrialRow]:
        """The trials in flight whose agent Mesos says is unreachable (copies)."""
        with self._lock:
            return [replace(t) for t in self._book.unreachable()]

    def appcore_address(self) -> str:
        """The attached AppCore's address; "" while none is."""
        return self.appcore_endpoint()[0]

    def appcore_endpoint(self) -> tuple[str, str]:
        """``(address, certificate PEM)`` of the attached AppCore; ``("", "")`` while none is
        (the certificate is "" without TLS)."""
        with self._lock:
            return self._appcore.endpoint()

    def appcore_task_id(self) -> str:
        """AppCore's current task (its latest launch), or "" before the first."""
        with self._lock:
            return self._appcore.task_id
