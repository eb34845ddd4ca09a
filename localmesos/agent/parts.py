"""The parts of an embedded agent and what each offers the others: named interfaces.

The agent is composed, not inherited: :class:`~localmesos.agent.agent.Agent` makes one
:class:`~localmesos.agent.state.AgentState` and one object per part below, each given the state
and the :class:`AgentParts` (this table), and a part calls another only through the protocol
named here. The parts' modules never import each other.

======================  ===================================================================
part                    module and concern
======================  ===================================================================
``launch``              :mod:`~.launch`: one command or container task's launch path
``task_sandboxes``      :mod:`~.task_sandbox`: a task's sandbox and the user it runs as
``killing``             :mod:`~.killing`: a task's kill and its escalation
``executor_host``       :mod:`~.executors`: tasks of custom executors, their shutdowns
``executor_calls``      :mod:`~.executor_calls`: the v1 executor API calls
``executor_processes``  :mod:`~.executor_process`: the processes of custom executors
``reports``             :mod:`~.reports`: the status updates of its tasks
``views``               :mod:`~.views`: its info, state and usage
``recovery``            :mod:`~.recovery`: its checkpoint, a crash and a recovery from it
``master_link``         :mod:`~.master_link`: pings and re-registration
``draining``            :mod:`~.draining`: DRAIN_AGENT on the agent's side
``isolator``            :mod:`~.isolation`: the cgroups and limits of its containers
======================  ===================================================================

No part calls ``executor_calls``, so the table has no entry for it; the façade calls it, as it
calls ``stop`` for the ``master_link`` (a master's ShutdownMessage).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from typing import Protocol

from disauto.common.resources import Resources
from disauto.localmesos.agent.agent_task import AgentTask
from disauto.localmesos.agent.executor_run import ExecutorRun
from disauto.localmesos.containerizer.cgroups import ContainerCgroups
from disauto.localmesos.containerizer.cgroups import NoIsolation
from disauto.localmesos.containerizer.command import RunAs
from disauto.localmesos.containerizer.launcher import Container
from disauto.localmesos.protocol.registration import ReregisterAgent


class Sandboxing(Protocol):
    """What the ``task_sandboxes`` part offers: sandboxes of tasks and who runs in them."""

    def prepare_sandbox(self, task: AgentTask, command: Any = None) -> Path: ...

    def run_as(self, task: AgentTask, command: Mapping[str, Any]) -> RunAs | None: ...


class Reporting(Protocol):
    """What the ``reports`` part offers: status updates of tasks."""

    def emit(self, task: AgentTask, state: str, *, source: str = "SOURCE_EXECUTOR",
             message: str | None = None, reason: str | None = None, pid: int | None = None,
             healthy: bool | None = None, only_live: bool = False,
             limitation: dict[str, Any] | None = None) -> None: ...

    def bare_status(
        self,
        framework_id: str,
        task_id: str,
        state: str,
        message: str,
        reason: str,
        *,
        executor_id: str = "",
    ) -> dict[str, Any]: ...

    def queue_update(self, task: AgentTask, status: dict[str, Any]) -> None: ...

    def fail(
        self, task: AgentTask, message: str, reason: str | None, source: str = "SOURCE_AGENT"
    ) -> None: ...

    def killed_during_launch(self, task: AgentTask) -> None: ...


class Checkpointing(Protocol):
    """What the ``recovery`` part offers: the checkpoint, and what re-registration reports."""

    def checkpoint_launch(
        self, task: AgentTask, executor_info: Mapping[str, Any] | None, gpus: tuple[int, ...] = ()
    ) -> None: ...

    def checkpoint_pid(
        self,
        framework_info: Mapping[str, Any],
        framework_id: str,
        executor_id: str,
        container_id: str,
        pid: int,
    ) -> None: ...

    def checkpoint_update(self, task: AgentTask, status: Mapping[str, Any]) -> None: ...

    def forget_checkpoint(self, framework_id: str, executor_id: str) -> None: ...

    def reregistration(self) -> ReregisterAgent: ...


class Isolating(Protocol):
    """What the ``isolator`` part offers: the isolation of containers."""

    def isolate(
        self, container_id: str, resources: Resources, *, executor: bool
    ) -> ContainerCgroups | NoIsolation: ...

    def update_executor_isolation(self, run: ExecutorRun) -> None: ...


class Killing(Protocol):
    """What the ``killing`` part offers: kills of tasks."""

    def request_kill(self, task: AgentTask, grace_period: float | None) -> None: ...

    def start_killer(self, task: AgentTask) -> None: ...


class Launching(Protocol):
    """What the ``launch`` part offers: what follows a launched process."""

    def abandon(self, task: AgentTask, message: str, reason: str) -> None: ...

    def await_exit(self, container: Container) -> int | None: ...

    def command_ended(self, task: AgentTask, container: Container, returncode: int) -> None: ...


class RunningExecutors(Protocol):
    """What the ``executor_processes`` part offers: executor processes."""

    def run_executor(self, run: ExecutorRun) -> None: ...

    def executor_terminated(self, run: ExecutorRun, returncode: int | None) -> None: ...


class Viewing(Protocol):
    """What the ``views`` part offers: the AgentInfo."""

    def info(self) -> dict[str, Any]: ...


class HostingExecutors(Protocol):
    """What the ``executor_host`` part offers: deliveries to executors, shutdowns, kills."""

    def deliver(self, run: ExecutorRun, task: AgentTask) -> None: ...

    def kill_on_executor(self, task: AgentTask, grace_period: float | None) -> None: ...

    def begin_shutdown(self, run: ExecutorRun, grace_period: float | None) -> None: ...

    def destroy(self, run: ExecutorRun) -> None: ...


class Draining(Protocol):
    """What the ``draining`` part offers: draining, and its mark on updates."""

    def drain(self, config: dict[str, Any]) -> None: ...

    def decorate(self, framework_info: Mapping[str, Any], status: dict[str, Any]) -> None: ...

    def update_drain_status(self) -> None: ...


class Linking(Protocol):
    """What the ``master_link`` part offers: re-registering with the master."""

    def start_reregistration(self) -> None: ...


@dataclass(eq=False)
class AgentParts:
    """The agent's parts by name; the façade fills it in once, before anything runs."""

    task_sandboxes: Sandboxing = field(init=False)
    reports: Reporting = field(init=False)
    recovery: Checkpointing = field(init=False)
    isolator: Isolating = field(init=False)
    killing: Killing = field(init=False)
    launch: Launching = field(init=False)
    executor_processes: RunningExecutors = field(init=False)
    views: Viewing = field(init=False)
    executor_host: HostingExecutors = field(init=False)
    draining: Draining = field(init=False)
    master_link: Linking = field(init=False)
    #: The façade, as the master knows the agent (what a re-registration hands it).
    agent: object = field(init=False)
    #: The façade's ``stop`` (what the agent does on the master's ShutdownMessage).
    stop: Callable[[], None] = field(init=False)
