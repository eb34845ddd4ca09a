"""Where the job's tasks run: the warm slot a task ran on, the trials telemetry measures now, and
the tail of a failed task's stderr, read from its sandbox through its agent.

A task of a warm slot runs in a folder of its slot's executor's sandbox, not in a sandbox of its
own, so every reader of a sandbox (the log collector, the stderr of a failed trial, telemetry's
per-executor figures) asks here which executor that is: as this framework launched the task, or
as the record says (a task its predecessor launched before a resume).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from disauto.framework._job.book import TrialBook
from disauto.framework._mesos_link import MesosLink
from disauto.framework._sandbox_logs import SandboxLogs
from disauto.framework._slots import SlotTable
from disauto.framework._telemetry.monitor import TaskPlace


class TaskPlaces:
    """The places of one job's tasks.

    Args:
        book: the job's trials (the executor each task was recorded on).
        slots: the job's warm slots, or None (``--slot-mode task``).
        sandboxes: reads task sandboxes through their agents.
        link: the framework's link to its master (the FrameworkID in sandbox paths).
    """

    def __init__(self, book: TrialBook, slots: SlotTable | None, sandboxes: SandboxLogs,
                 link: MesosLink) -> None:
        self._book = book
        self._slots = slots
        self._sandboxes = sandboxes
        self._link = link

    def slot_of(self, task_id: str) -> str:
        """The warm slot's executor that ran ``task_id`` ("" for a command task)."""
        slot = self._slots.executor_of(task_id) if self._slots is not None else ""
        return slot or self._book.executor_of(task_id)

    def measured(self) -> list[TaskPlace]:
        """Where the job's trials run now (the telemetry collector measures those)."""
        places = []
        for trial in self._book.in_flight():
            if not trial.task_id or not trial.agent_id:
                continue
            slot = self.slot_of(trial.task_id)
            places.append(TaskPlace(trial.agent_id, slot or trial.task_id, trial.number,
                                    shared=bool(slot)))
        return places

    def stderr_tail(self, status: Mapping[str, Any]) -> str:
        """The tail of the stderr of the task a terminal ``status`` is of ("" if unreadable)."""
        task_id = str(status.get("task_id", {}).get("value", ""))
        return self._sandboxes.tail(status, self._link.framework_id(),
                                    slot=self.slot_of(task_id))
