"""How an embedded agent reports a task's state: a TaskStatus with a fresh uuid into the task's
reliable stream to the master (:mod:`localmesos.agent.status_updates`), the task's record and
GPUs updated with it.

The agent's ``reports`` part (:mod:`localmesos.agent.parts`; the sources and fields of its
updates are in :mod:`localmesos.agent.agent`'s docstring). Updates of a removed framework's
tasks are dropped.
"""

from __future__ import annotations

import base64
import logging
import time
from typing import Any
import uuid

from disauto.localmesos.agent.agent_task import AgentTask
from disauto.localmesos.agent.parts import AgentParts
from disauto.localmesos.agent.state import AgentState
from disauto.localmesos.agent.status_updates import TERMINAL_STATES


logger = logging.getLogger("disauto.localmesos.agent")


def _new_uuid() -> str:
    return base64.b64encode(uuid.uuid4().bytes).decode("ascii")


class TaskReports:
    """Turns a task's new state into its status update (part of
    :class:`localmesos.agent.agent.Agent`)."""

    def __init__(self, state: AgentState, parts: AgentParts) -> None:
        self.state = state
        self.parts = parts

    def _status(
        self,
        task: AgentTask,
        state: str,
        *,
        source: str,
        message: str | None = None,
        reason: str | None = None,
        pid: int | None = None,
        healthy: bool | None = None,
        limitation: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        status: dict[str, Any] = {
            "task_id": {"value": task.task_id},
            "state": state,
            "source": source,
            "agent_id": {"value": self.state.id},
            "executor_id": {"value": task.executor_id},
            "timestamp": time.time(),
            "uuid": _new_uuid(),
            "framework_id": {"value": task.framework_id},
        }
        if message is not None:
            status["message"] = message
        if reason is not None:
            status["reason"] = reason
        if healthy is not None:
            status["healthy"] = healthy
        if limitation is not None:
            status["limitation"] = limitation
        container_status: dict[str, Any] = {"container_id": {"value": task.container_id}}
        if pid is not None:
            container_status["executor_pid"] = pid
        status["container_status"] = container_status
        return status

    def emit(
        self,
        task: AgentTask,
        state: str,
        *,
        source: str = "SOURCE_EXECUTOR",
        message: str | None = None,
        reason: str | None = None,
        pid: int | None = None,
        healthy: bool | None = None,
        only_live: bool = False,
        limitation: dict[str, Any] | None = None,
    ) -> None:
        """Report ``state``: the task's record changes and the update joins its stream in one
        step, so updates of one task are queued in the order they happened (``only_live``:
        not once the task is terminal)."""
        status = self._status(task, state, source=source, message=message, reason=reason, pid=pid,
                              healthy=healthy, limitation=limitation)
        with self.state.lock:
            if only_live and task.terminal:
                return
            self.parts.draining.decorate(task.framework_info, status)
            # A drain's TASK_KILLING reported as TASK_GONE_BY_OPERATOR ends the task for its
            # framework, not its process: the task stays the agent's until that ends.
            ended = state in TERMINAL_STATES
            state = status["state"]
            task.state = state
            if ended:
                task.terminal = True
                self.state.free_gpus.extend(task.gpus)
                task.gpus = ()
            dropped = task.framework_id in self.state.removed_frameworks
            if dropped and task.terminal:
                self.state.tasks.pop(task.key, None)
            if not dropped:
                self.queue_update(task, status)
        if dropped:
            logger.debug("Dropping %s of task %s: framework removed", state, task.task_id)
            return
        logger.log(
            logging.INFO if task.terminal else logging.DEBUG,
            "Task %s of framework %s is %s%s",
            task.task_id,
            task.framework_id,
            state,
            f": {message}" if message else "",
        )

    def bare_status(self, framework_id: str, task_id: str, state: str, message: str,
                     reason: str, *, executor_id: str = "") -> dict[str, Any]:
        """An update the agent makes for a task it holds no record of (SOURCE_AGENT)."""
        status: dict[str, Any] = {
            "task_id": {"value": task_id}, "state": state, "source": "SOURCE_AGENT",
            "agent_id": {"value": self.state.id}, "timestamp": time.time(), "uuid": _new_uuid(),
            "message": message, "reason": reason, "framework_id": {"value": framework_id},
        }
        if executor_id:
            status["executor_id"] = {"value": executor_id}
        return status

    def queue_update(self, task: AgentTask, status: dict[str, Any]) -> None:
        """Under the lock: the update into the task's reliable stream, checkpointed first
        when its framework checkpoints (``TaskStatusUpdateManager::update``)."""
        if self.state.crashed.is_set():
            return  # a dead agent sends nothing
        self.parts.recovery.checkpoint_update(task, status)
        self.state.updates.update(task.framework_id, task.task_id, status)

    def fail(self, task: AgentTask, message: str, reason: str | None,
              source: str = "SOURCE_AGENT") -> None:
        """Fail a launch; the reason also goes to the sandbox's stderr, as Mesos' fetcher does."""
        if task.sandbox is not None:
            try:
                with open(task.sandbox / "stderr", "a", encoding="utf-8") as err:
                    err.write(f"{message}\n")
            except OSError:
                pass
        self.emit(task, "TASK_FAILED", source=source, message=message, reason=reason)

    def killed_during_launch(self, task: AgentTask) -> None:
        self.emit(
            task,
            "TASK_KILLED",
            source="SOURCE_AGENT",
            message="Killed before the command was started",
            reason="REASON_TASK_KILLED_DURING_LAUNCH",
        )
