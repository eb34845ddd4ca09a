"""How an embedded agent kills a command or container task, as Mesos' command executor does
(apache/mesos ``src/launcher/executor.cpp`` ``kill(taskId, override)``, ``kill(taskId,
gracePeriod)``, ``escalated``):

* The grace period is the kill's own (a KILL's ``kill_policy``, a drain's ``max_grace_period``,
  an agent stopping): "Kill policy provided in the `Kill` event takes precedence over kill
  policy specified when the task was launched"; else the task's ``kill_policy``; else the
  agent's default (3 s).
* The first kill sends TASK_KILLING (to a TASK_KILLING_STATE framework; not for
  ``max_completion_time``), SIGTERM, and schedules SIGKILL after the grace period.
* A later kill of a task being killed (``include/mesos/v1/scheduler/scheduler.proto``: a kill
  policy "can be used to forcefully kill a task which is already being killed") only ever
  brings the SIGKILL forward, to the first kill's start plus its grace (at once when that has
  passed); a longer grace changes nothing; no second SIGTERM or TASK_KILLING.

The agent's ``killing`` part (:mod:`localmesos.agent.parts`); the lock is the agent's.
"""

from __future__ import annotations

from collections.abc import Mapping
import logging
import time
from typing import Any

from disauto.localmesos.agent.agent_task import AgentTask
from disauto.localmesos.agent.parts import AgentParts
from disauto.localmesos.agent.state import AgentState
from disauto.localmesos.protocol.messages import duration_seconds


logger = logging.getLogger("disauto.localmesos.agent")


def has_capability(framework_info: Mapping[str, Any], capability: str) -> bool:
    """Whether a FrameworkInfo has ``capability`` (``FrameworkInfo.Capability.Type``)."""
    return any(isinstance(c, Mapping) and c.get("type") == capability
               for c in framework_info.get("capabilities") or [])


def _grace_seconds(kill_policy: Any) -> float | None:
    """``KillPolicy.grace_period`` in seconds, if set."""
    if not isinstance(kill_policy, Mapping):
        return None
    return duration_seconds(kill_policy.get("grace_period"))


class TaskKilling:
    """Kills tasks' processes (part of :class:`localmesos.agent.agent.Agent`)."""

    def __init__(self, state: AgentState, parts: AgentParts) -> None:
        self.state = state
        self.parts = parts

    def request_kill(self, task: AgentTask, grace_period: float | None) -> None:
        """Under the lock: mark the task killed and start killing its process if it has one.

        ``grace_period`` (a kill's own) overrides the task's kill policy; a task already being
        killed has its SIGKILL brought forward when this grace ends sooner (see
        :meth:`_escalate`).
        """
        if self.state.crashed.is_set():
            return
        if grace_period is not None:
            grace = max(0.0, grace_period)
        else:
            policy_grace = _grace_seconds(task.info.get("kill_policy"))
            grace = self.state.default_kill_grace if policy_grace is None else policy_grace
        if task.kill_requested:
            self._escalate(task, grace)
            return
        task.kill_grace = grace
        task.kill_requested = True
        task.cancel.set()
        if task.process is not None:
            self.start_killer(task)

    def _escalate(self, task: AgentTask, grace: float) -> None:
        """Under the lock: another kill of a task being killed (``executor.cpp``: "The
        escalation grace period can be only decreased"): its SIGKILL comes at the first kill's
        start plus ``grace`` when that is sooner (at once when that has passed); a longer grace
        changes nothing, and no second SIGTERM or TASK_KILLING is sent."""
        if task.kill_started is None or task.kill_deadline is None:
            task.kill_grace = min(task.kill_grace, grace)  # its process has not started yet
            return
        deadline = task.kill_started + grace
        if deadline >= task.kill_deadline or task.process is None:
            return
        task.kill_deadline = deadline
        remaining = max(0.0, deadline - time.monotonic())
        logger.info("Task %s: SIGKILL brought forward to %.3g s from now", task.task_id,
                    remaining)
        self.state.start_thread(task.process.kill_after, remaining, name=f"kill-{task.task_id}")

    def start_killer(self, task: AgentTask) -> None:
        """Under the lock: kill ``task.process`` on a thread of its own; the first time,
        TASK_KILLING goes first to a framework with TASK_KILLING_STATE (Mesos' command
        executor, ``src/launcher/executor.cpp`` ``kill``; not for ``max_completion_time``)."""
        process = task.process
        if process is None or task.kill_started is not None:
            return
        announce = not task.killing_announced and not task.timed_out and has_capability(
            task.framework_info, "TASK_KILLING_STATE")
        task.killing_announced = True
        task.kill_started = time.monotonic()
        task.kill_deadline = task.kill_started + task.kill_grace
        logger.info("Killing task %s (grace %.3g s)", task.task_id, task.kill_grace)
        self.state.start_thread(self._kill_process, task, process, announce,
                           name=f"kill-{task.task_id}")

    def _kill_process(self, task: AgentTask, process: Any, announce: bool) -> None:
        if announce:
            self.parts.reports.emit(task, "TASK_KILLING", only_live=True)
        process.kill(task.kill_grace)
