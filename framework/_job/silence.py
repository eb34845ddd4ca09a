"""Launches that Mesos has said nothing about: the tasks the framework reconciles explicitly.

A launch is one ACCEPT call to the master (pymesos opens a connection per call). When the call
times out or fails, the master may never have seen it: no status ever comes, and the job waits
for a task that does not exist (one of 50 jobs on a machine at load 78 waited
13 minutes for its AppCore). Mesos' answer to a call that may not have arrived is explicit
reconciliation (apache/mesos ``docs/reconciliation.md``): the master answers each task with
its latest state, or, for a task it does not know, TASK_GONE or TASK_UNKNOWN
(``src/master/master.cpp``, ``Master::_reconcileTasks``), which the job takes as a lost task:
the trial (or AppCore) is launched again, and the first launch, should it arrive after all,
is killed as a stale task when it shows up.

A task is silent from its launch until its first status update. It is reconciled once it has
been silent :data:`SILENT_SECONDS`, and again at each reconciliation while Mesos stays silent
about it (an agent that recovered but has not re-registered is not answered for).
"""

from __future__ import annotations

from collections.abc import Callable
import threading
import time


SILENT_SECONDS = 60.0
"""How long a launch may go without a status update before it is reconciled: longer than a
busy master takes to answer an ACCEPT (reconciling a launch still in flight would have the
master answer that it does not know the task, and the trial run twice, the first killed)."""


class SilentLaunches:
    """The job's launches without a status update yet.

    Args:
        clock: the monotonic clock (tests give their own).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._launched: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def launched(self, task_id: str, agent_id: str) -> None:
        """A task was launched on ``agent_id`` now."""
        with self._lock:
            self._launched[task_id] = (agent_id, self._clock())

    def status_heard(self, task_id: str) -> None:
        """Mesos sent a status update of ``task_id``: it is no longer silent."""
        with self._lock:
            self._launched.pop(task_id, None)

    def silent(self) -> list[tuple[str, str]]:
        """``(task_id, agent_id)`` of the launches silent for :data:`SILENT_SECONDS` or
        more."""
        due = self._clock() - SILENT_SECONDS
        with self._lock:
            return [(task_id, agent) for task_id, (agent, at) in self._launched.items()
                    if at <= due]
