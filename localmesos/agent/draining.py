"""An embedded agent being drained (the master's DRAIN_AGENT).

As a Mesos 1.11 agent (apache/mesos ``src/slave/slave.cpp`` ``Slave::drain``, ``run``,
``statusUpdate``, ``updateDrainStatus``):

* Told to drain, the agent checkpoints the ``DrainConfig`` and kills every task, a task's
  grace period cut to ``max_grace_period`` when it would be longer (or has none).
* While it drains, TASK_KILLING and TASK_KILLED carry ``REASON_AGENT_DRAINING`` (whatever
  reason they had); with ``mark_gone``, a partition-aware framework gets
  TASK_GONE_BY_OPERATOR instead of either (``Slave::statusUpdate``): the first when the kill
  starts, while the task's process runs out its grace period, and the second when it ends
  (unless the master took the agent away meanwhile). A task it is given meanwhile is TASK_DROPPED
  (TASK_LOST without PARTITION_AWARE), ``REASON_AGENT_DRAINING``, "Task was received while
  agent was already draining".
* Once it has no task or executor left, the drain is over (the checkpoint removed).
"""

from __future__ import annotations

from collections.abc import Mapping
import logging
from typing import Any

from disauto.localmesos.agent.agent_task import AgentTask
from disauto.localmesos.agent.executor_run import partition_aware
from disauto.localmesos.agent.parts import AgentParts
from disauto.localmesos.agent.state import AgentState
from disauto.localmesos.protocol.messages import duration_seconds


logger = logging.getLogger("disauto.localmesos.agent")


def _capped_grace(task: AgentTask, max_grace: float | None) -> float | None:
    """The grace period a drain kills ``task`` with (``calculateKillPolicy``): the maximum
    when the task has no grace period of its own or a longer one; None keeps its own."""
    if max_grace is None:
        return None
    own = duration_seconds((task.info.get("kill_policy") or {}).get("grace_period"))
    if own is None or own > max_grace:
        return max_grace
    return None


class AgentDraining:
    """Draining (part of :class:`localmesos.agent.agent.Agent`)."""

    def __init__(self, state: AgentState, parts: AgentParts) -> None:
        self.state = state
        self.parts = parts

    def drain(self, config: dict[str, Any]) -> None:
        """The master's ``DrainSlaveMessage``: kill everything, report it as drained."""
        with self.state.lock:
            tasks = [t for t in self.state.tasks.values() if not t.terminal]
            if not tasks and not self.state.executors:
                logger.info("Agent %s has nothing to drain: draining is already complete",
                            self.state.id)
                return
            self.state.drain_config = dict(config)
            if not self.state.crashed.is_set():
                self.state.meta.write_drain(self.state.drain_config)
        max_grace = duration_seconds(config.get("max_grace_period"))
        logger.info("Agent %s drains %d task(s) (max grace period %s)", self.state.id, len(tasks),
                    "none" if max_grace is None else f"{max_grace:g}s")
        for task in tasks:
            grace = _capped_grace(task, max_grace)
            if task.info.get("executor"):
                self.parts.executor_host.kill_on_executor(task, grace)
                continue
            with self.state.lock:
                self.parts.killing.request_kill(task, grace)

    def decorate(self, framework_info: Mapping[str, Any], status: dict[str, Any]) -> None:
        """Under the lock: a status of a draining agent says so (``statusUpdate``)."""
        config = self.state.drain_config
        if config is None or status.get("state") not in ("TASK_KILLING", "TASK_KILLED"):
            return
        status["reason"] = "REASON_AGENT_DRAINING"
        if config.get("mark_gone") and partition_aware(framework_info):
            # Both: the framework hears the task is gone when its kill starts, while its
            # process still has its grace period (the agent keeps it until it ends).
            status["state"] = "TASK_GONE_BY_OPERATOR"

    def dropped_while_draining(self, task: AgentTask) -> bool:
        """A task given to a draining agent is dropped (``Slave::run``)."""
        if self.state.drain_config is None:
            return False
        state = "TASK_DROPPED" if partition_aware(task.framework_info) else "TASK_LOST"
        logger.warning("Agent %s drops task %s: it is draining", self.state.id, task.task_id)
        status = self.parts.reports.bare_status(task.framework_id, task.task_id, state,
                                   "Task was received while agent was already draining",
                                   "REASON_AGENT_DRAINING", executor_id=task.executor_id)
        self.state.updates.update(task.framework_id, task.task_id, status)
        return True

    def update_drain_status(self) -> None:
        """The drain is over once nothing is left (``updateDrainStatus``)."""
        with self.state.lock:
            if self.state.drain_config is None or self.state.tasks or self.state.executors:
                return
            self.state.drain_config = None
            if not self.state.crashed.is_set():
                self.state.meta.write_drain(None)
        logger.info("Agent %s finished draining", self.state.id)
