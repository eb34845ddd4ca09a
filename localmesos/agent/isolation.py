"""Which isolators confine an embedded agent's containers, and with what resources.

As a Mesos 1.11 agent with ``--isolation`` (``posix/cpu,posix/mem`` by default: nothing
confines a container; ``cgroups/cpu,cgroups/mem``: :mod:`localmesos.containerizer.cgroups`):

* a command task's container gets its task's resources plus its command executor's allowance,
  0.1 CPUs and 32 MB (``Slave::getExecutorInfo``);
* a custom executor's container gets its executor's resources plus those of its tasks, updated
  as tasks come (``containerizer->update``; the hard memory limit never shrinks).
"""

from __future__ import annotations

import logging
from typing import Any

from disauto.common.resources import ResourceError
from disauto.common.resources import Resources
from disauto.localmesos.agent.executor_run import ExecutorRun
from disauto.localmesos.agent.parts import AgentParts
from disauto.localmesos.agent.state import AgentState
from disauto.localmesos.containerizer.cgroups import ContainerCgroups
from disauto.localmesos.containerizer.cgroups import IsolationError
from disauto.localmesos.containerizer.cgroups import NoIsolation


logger = logging.getLogger("disauto.localmesos.agent")

#: Mesos' ``DEFAULT_EXECUTOR_CPUS`` and ``DEFAULT_EXECUTOR_MEM``: a command executor's share.
COMMAND_EXECUTOR_CPUS = 0.1
COMMAND_EXECUTOR_MEM_MB = 32.0

Isolation = ContainerCgroups | NoIsolation


class AgentIsolation:
    """The isolators of the agent's containers (part of :class:`localmesos.agent.agent.Agent`)."""

    def __init__(self, state: AgentState, parts: AgentParts) -> None:
        self.state = state
        self.parts = parts

    def isolate(self, container_id: str, resources: Resources, *,
                 executor: bool) -> Isolation:
        """The isolation of a new container, its limits set.

        Raises:
            IsolationError: when its cgroups cannot be made.
        """
        if not self.state.runtime.isolation & {"cgroups/cpu", "cgroups/mem"}:
            return NoIsolation()
        parent = self.state.cpu_group.path if self.state.cpu_group is not None else None
        cgroups = ContainerCgroups(container_id, self.state.runtime.isolation,
                                   cfs=self.state.runtime.cgroups_enable_cfs, cpu_parent=parent)
        cpus, mem = resources.scalar("cpus"), resources.scalar("mem")
        if not executor:
            cpus, mem = cpus + COMMAND_EXECUTOR_CPUS, mem + COMMAND_EXECUTOR_MEM_MB
        try:
            cgroups.update(cpus, mem)
        except IsolationError:
            cgroups.destroy()
            raise
        return cgroups

    def update_executor_isolation(self, run: ExecutorRun) -> None:
        """Under the lock: an executor's container grows with the tasks it is given."""
        container = self.state.launcher.get(run.container_id)
        if container is None or container.isolation is None:
            return
        items: list[Any] = list(run.info.get("resources") or [])
        for task in self.state.tasks.values():
            if task.container_id == run.container_id and not task.terminal:
                items += list(task.info.get("resources") or [])
        try:
            resources = Resources.from_json(items)
            container.isolation.update(resources.scalar("cpus"), resources.scalar("mem"))
        except (ResourceError, IsolationError) as exc:
            logger.warning("Cannot update the container of executor %s: %s", run.executor_id,
                           exc)
