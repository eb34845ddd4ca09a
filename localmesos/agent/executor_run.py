"""One run of a custom executor on an embedded agent, as the agent keeps it (Mesos'
``Executor`` of ``src/slave/slave.hpp``: its state, its queued and launched tasks, its
connection).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
import threading
from typing import Any

from disauto.localmesos.containerizer.command import CommandProcess
from disauto.localmesos.protocol.recordio import Subscription


# Mesos' Executor::State.
REGISTERING, RUNNING = "REGISTERING", "RUNNING"
TERMINATING, TERMINATED = "TERMINATING", "TERMINATED"
#: Mesos' ``DEFAULT_EXECUTOR_HEARTBEAT_INTERVAL``.
EXECUTOR_HEARTBEAT_INTERVAL = 1800.0


def mesos_duration(seconds: float) -> str:
    """A Duration as Mesos prints it in messages: ``1mins``, ``5secs``, ``500ms``."""
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g}mins"
    if seconds >= 1 or seconds == 0:
        return f"{seconds:g}secs"
    return f"{seconds * 1000:g}ms"


@dataclass
class ExecutorRun:
    """One run (container) of a custom executor on the agent."""

    framework_id: str
    executor_id: str
    info: dict[str, Any]
    framework_info: dict[str, Any]
    container_id: str
    sandbox: Path
    state: str = REGISTERING
    process: CommandProcess | None = None
    stream: Subscription | None = None
    queued: dict[str, dict[str, Any]] = field(default_factory=dict)  # task id -> TaskInfo
    launched: set[str] = field(default_factory=set)
    ever_sent: bool = False
    #: (state, reason, message) its live tasks get when it ends, if not Mesos' default.
    pending_termination: tuple[str, str, str] | None = None
    returncode: int | None = None
    #: The GPU indices assigned to it (its ExecutorInfo's ``gpus``), held while it lives.
    gpus: tuple[int, ...] = ()
    #: Why its GPUs could not be assigned ("" when they were): its launch fails with it.
    gpu_error: str = ""
    cancel: threading.Event = field(default_factory=threading.Event)
    exited: threading.Event = field(default_factory=threading.Event)
    #: Set once the executor subscribed or ended: the registration timeout's wake-up.
    settled: threading.Event = field(default_factory=threading.Event)
    #: Rebuilt from the checkpoint by a restarted agent: it must subscribe again in time.
    recovered: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return (self.framework_id, self.executor_id)

    def send(self, event: dict[str, Any]) -> None:
        """Queue an event on the executor's connection (dropped when it has none, as Mesos)."""
        if self.stream is not None:
            self.stream.send(event)


def partition_aware(framework_info: Mapping[str, Any]) -> bool:
    """Whether the framework is PARTITION_AWARE (it gets TASK_DROPPED rather than TASK_LOST)."""
    return any(c.get("type") == "PARTITION_AWARE"
               for c in framework_info.get("capabilities") or [] if isinstance(c, Mapping))
