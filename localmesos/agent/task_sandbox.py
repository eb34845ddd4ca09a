"""Whom an embedded agent runs a task as, and the sandbox it makes for that user, as a Mesos
agent does (apache/mesos ``src/slave/slave.cpp`` ``Framework::addExecutor`` and
``Slave::__run``, ``src/slave/paths.cpp`` ``createSandboxDirectory``): a sandbox that cannot be
made for the task's user drops the task.

The agent's ``task_sandboxes`` part (:mod:`localmesos.agent.parts`), which the launch uses;
the lock is the agent's.
"""

from __future__ import annotations

from collections.abc import Mapping
import logging
from pathlib import Path
from typing import Any

from disauto.localmesos.agent import sandbox as sandbox_mod
from disauto.localmesos.agent.agent_task import AgentTask
from disauto.localmesos.agent.executor_run import partition_aware
from disauto.localmesos.agent.parts import AgentParts
from disauto.localmesos.agent.sandbox import SandboxCreationError
from disauto.localmesos.agent.state import AgentState
from disauto.localmesos.containerizer import command as command_mod
from disauto.localmesos.containerizer.command import RunAs


logger = logging.getLogger("disauto.localmesos.agent")


class _Abandon(Exception):
    """A launch step failed and has reported the task's terminal state itself."""


class TaskSandboxes:
    """A task's user and sandbox (part of :class:`localmesos.agent.agent.Agent`)."""

    def __init__(self, state: AgentState, parts: AgentParts) -> None:
        self.state = state
        self.parts = parts

    """Run tasks as their users (Mesos ``--switch_user``), or as the agent's own."""
    def prepare_sandbox(self, task: AgentTask, command: Any = None) -> Path:
        """The task's sandbox, made for the user it runs as (Mesos ``Framework::addExecutor``):
        one that cannot be made for it drops the task, as Mesos does."""
        if task.sandbox is not None:
            return task.sandbox
        user = task_user(task.framework_info, command, switch=self.state.runtime.switch_user)
        try:
            sandbox_mod.check_id(task.framework_id, what="framework id")
            sandbox_mod.check_id(task.task_id, what="task id")
            sandbox = sandbox_mod.create_sandbox(
                self.state.work_dir, self.state.id, task.framework_id, task.executor_id,
                task.container_id,
                user=user,
            )
            for name in ("stdout", "stderr"):
                (sandbox / name).touch()
        except SandboxCreationError as exc:
            self._drop(task, str(exc))
            raise _Abandon from None
        except (ValueError, OSError) as exc:
            self.parts.launch.abandon(task, f"Failed to create the sandbox: {exc}",
                          "REASON_CONTAINER_LAUNCH_FAILED")
        with self.state.lock:
            task.sandbox = sandbox
            self.state.sandboxes[task.key] = (task.executor_id, sandbox)
        return sandbox

    def _drop(self, task: AgentTask, message: str) -> None:
        """The task cannot get an executor (its sandbox cannot be made for its user): TASK_DROPPED,
        TASK_LOST for a framework that is not PARTITION_AWARE, from the agent with
        REASON_EXECUTOR_TERMINATED (Mesos ``Slave::__run``'s ``sendTaskDroppedUpdate``)."""
        state = "TASK_DROPPED" if partition_aware(task.framework_info) else "TASK_LOST"
        logger.warning("Agent %s drops task %s: %s", self.state.id, task.task_id, message)
        self.parts.reports.emit(task, state, source="SOURCE_AGENT", message=message,
                   reason="REASON_EXECUTOR_TERMINATED")

    def run_as(self, task: AgentTask, command: Mapping[str, Any]) -> RunAs | None:
        """Whom a task's process switches to (``None``: it runs as the agent's own user; see
        :func:`task_user` and :func:`localmesos.containerizer.command.resolve_user`).

        Raises:
            LaunchError: the user does not exist (any more).
        """
        return command_mod.resolve_user(
            task_user(task.framework_info, command, switch=self.state.runtime.switch_user))


def task_user(framework_info: Mapping[str, Any], command: Any, *, switch: bool) -> str | None:
    """The user a task (or a custom executor) runs as, as a Mesos agent picks it
    (``Framework::addExecutor``, ``src/slave/slave.cpp``): with ``--switch_user`` (``switch``)
    the ``user`` of its CommandInfo when it has one, else ``FrameworkInfo.user``; without it
    ``None``, the agent's own user."""
    if not switch:
        return None
    user = command.get("user") if isinstance(command, Mapping) else None
    if isinstance(user, str):
        return user
    return str(framework_info.get("user", ""))
