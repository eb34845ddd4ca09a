"""One task on an embedded agent, as the agent keeps it from its launch to its end."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
import threading
from typing import Any

from disauto.localmesos.containerizer.command import CommandProcess
from disauto.localmesos.containerizer.docker import ContainerProcess


@dataclass
class AgentTask:
    framework_id: str
    task_id: str
    executor_id: str
    container_id: str
    info: dict[str, Any]
    framework_info: dict[str, Any]
    sandbox: Path | None = None
    state: str = "TASK_STAGING"
    process: CommandProcess | ContainerProcess | None = None
    kill_requested: bool = False
    kill_grace: float = 3.0
    cancel: threading.Event = field(default_factory=threading.Event)
    gpus: tuple[int, ...] = ()
    terminal: bool = False
    timed_out: bool = False
    done: threading.Event = field(default_factory=threading.Event)
    killed_by_health_check: bool = False
    #: TASK_KILLING was considered (it is sent once, when the kill of its process starts).
    killing_announced: bool = False
    #: When (``time.monotonic``) its process got SIGTERM, and when SIGKILL is due: a later
    #: kill with a shorter grace brings the SIGKILL forward (Mesos' command executor).
    kill_started: float | None = None
    kill_deadline: float | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.framework_id, self.task_id)
