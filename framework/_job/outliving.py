"""The tasks that outlive their trials: what the trial book keeps of a task once its trial's
state no longer says the task runs.

A trial can end before its task does (pruned, timed out, killed by the user: the task is killed
and ends later), its final result can be recorded while its runner still writes its
``--output`` (the job's end gives it a grace period), and a task can be given up on with its
unreachable agent (killed if it comes back). A warm slot's tasks are told apart from command
tasks (a slot's executor outlives them). Every method is called under the trial book's lock.
"""

from __future__ import annotations

from collections.abc import Iterable


class OutlivingTasks:
    """Task ids kept beyond their trials' states.

    Args:
        ended: tasks of trials an earlier framework ended and whose end is not recorded (a
            resumed framework kills them once, :meth:`kills_on_resume`).
        on_slots: tasks the record says were launched on warm slots.
    """

    def __init__(self, ended: Iterable[str] = (), on_slots: Iterable[str] = ()) -> None:
        # ended by the framework (or its predecessor), their terminal status not seen yet
        self._ended = set(ended)
        self._kills_on_resume = set(self._ended)
        # COMPLETED by their final report at the job's end, still running (a grace period)
        self._finishing: set[str] = set()
        self._on_slots = set(on_slots)
        # given up on while their agent was unreachable: task id → agent id
        self._abandoned: dict[str, str] = {}

    # -- told ------------------------------------------------------------------------------

    def launched_on_a_slot(self, task_id: str) -> None:
        self._on_slots.add(task_id)

    def trial_ended_first(self, task_id: str) -> None:
        """The framework ended the task's trial; the task is live until its terminal status."""
        self._ended.add(task_id)

    def finishing(self, task_id: str) -> None:
        """The task's trial is COMPLETED at the job's end; the task may still write output."""
        self._finishing.add(task_id)

    def abandon(self, task_id: str, agent_id: str) -> None:
        """Give up on ``task_id``, lost with its unreachable agent: killed if it comes back."""
        self._abandoned[task_id] = agent_id
        self._ended.discard(task_id)
        self._finishing.discard(task_id)

    def task_ended(self, task_id: str) -> None:
        """The task has ended (a terminal status of a task kept here)."""
        self._ended.discard(task_id)
        self._finishing.discard(task_id)
        self._abandoned.pop(task_id, None)

    def lose_all(self) -> None:
        """The framework was taken away: no task of the job will be seen to end here."""
        self._ended.clear()
        self._finishing.clear()

    # -- asked -----------------------------------------------------------------------------

    def on_a_slot(self, task_id: str) -> bool:
        """Whether this framework (or its predecessor) launched ``task_id`` on a warm slot."""
        return task_id in self._on_slots

    def live(self) -> list[str]:
        """The tasks kept live here (ended first, or finishing), sorted."""
        return sorted(self._ended | self._finishing)

    def ended_first(self, task_id: str) -> bool:
        """Whether the framework ended ``task_id``'s trial and has not seen the task end."""
        return task_id in self._ended

    def finishing_ids(self) -> list[str]:
        """Live tasks of trials whose final result is recorded (given time to exit)."""
        return sorted(self._finishing)

    def abandoned(self) -> dict[str, str]:
        """Task id → agent id of the tasks given up on while unreachable, not seen to end."""
        return dict(self._abandoned)

    def is_abandoned(self, task_id: str) -> bool:
        return task_id in self._abandoned

    def kills_on_resume(self) -> list[str]:
        """Once: the tasks an earlier framework of the job ended and may not have killed, for
        the resumed framework to kill."""
        out = sorted(self._kills_on_resume & self._ended)
        self._kills_on_resume.clear()
        return out
