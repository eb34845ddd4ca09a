"""The processes an agent launched, as the machine keeps them: they outlive the agent.

A real agent's tasks and executors are processes of their own; when the agent's process dies
and comes back, it finds them again (apache/mesos ``src/slave/containerizer/mesos/launcher.cpp``
``recover``: the pids it checkpointed) and learns their exit status (``reap``). The embedded
agents' processes are children of the cluster's process, so a :class:`Launcher` per agent id,
kept by the cluster across the agent's restarts, plays the part of the machine's process
table: it reaps each process as it exits (one thread each) and keeps its exit status until an
agent asks, whichever agent object that is by then.

A container may carry the isolation that confines it (its cgroups,
:mod:`localmesos.containerizer.cgroups`) and the limitation that killed it.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
import logging
import signal
import threading
from typing import Any
from typing import Protocol


logger = logging.getLogger(__name__)


class Reapable(Protocol):
    """What a launched process offers (a :class:`~.command.CommandProcess`)."""

    pid: int

    def wait(self) -> int: ...

    def signal_group(self, signum: int) -> bool: ...


class Isolation(Protocol):
    """A container's confinement (:class:`~localmesos.containerizer.cgroups.ContainerCgroups`)."""

    def update(self, cpus: float, mem_mb: float) -> None: ...

    def limitation(self, container: Container) -> dict[str, Any] | None: ...

    def destroy(self) -> None: ...


@dataclass
class Container:
    """One launched process (a command task's or an executor's) and what became of it."""

    container_id: str
    process: Reapable
    isolation: Isolation | None = None
    returncode: int | None = None
    exited: threading.Event = field(default_factory=threading.Event)
    #: Why an isolator killed it (``ContainerLimitation``): resources, message, reason.
    limitation: dict[str, Any] | None = None


class Launcher:
    """The containers of one agent (see the module docstring). Thread-safe."""

    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id
        self._lock = threading.Lock()
        self._containers: dict[str, Container] = {}

    def launched(self, container_id: str, process: Reapable,
                 isolation: Isolation | None = None) -> Container:
        """Keep ``process`` (just started) and reap it when it exits."""
        container = Container(container_id, process, isolation)
        with self._lock:
            self._containers[container_id] = container
        threading.Thread(target=self._reap, args=(container,), name=f"reap-{container_id[:8]}",
                         daemon=True).start()
        return container

    def _reap(self, container: Container) -> None:
        try:
            container.returncode = container.process.wait()
        except Exception:  # noqa: BLE001 - the container ends whatever happened
            logger.exception("Reaping container %s failed", container.container_id)
            container.returncode = -int(signal.SIGKILL)
        finally:
            container.exited.set()

    def get(self, container_id: str) -> Container | None:
        with self._lock:
            return self._containers.get(container_id)

    def containers(self) -> list[Container]:
        with self._lock:
            return list(self._containers.values())

    def forget(self, container_id: str) -> None:
        """The agent is done with the container: its isolation goes too."""
        with self._lock:
            container = self._containers.pop(container_id, None)
        if container is not None and container.isolation is not None:
            container.isolation.destroy()

    def destroy(self, container_id: str) -> None:
        """Kill the container's process group, wait for it, forget it (an orphan: no agent
        knows it)."""
        container = self.get(container_id)
        if container is None:
            return
        container.process.signal_group(signal.SIGKILL)
        container.exited.wait(10)
        self.forget(container_id)
