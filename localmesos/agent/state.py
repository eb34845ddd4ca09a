"""What an embedded agent knows: one declared state object that every part of it receives.

:class:`~localmesos.agent.agent.Agent` owns one :class:`AgentState` and hands it to each of its
parts (:mod:`localmesos.agent.parts` names them and what they offer one another). A part reads
any field; the field's comment names the part that writes it. ``lock`` guards the tables
(``tasks``, ``sandboxes``, ``executors``, ``completed_executors``, ``removed_frameworks``,
``free_gpus``, ``threads``, ``drain_config``, ``ran_containers``, ``stopped``): a part takes it
to read or write one, and never blocks under it (a task's work runs on a thread of its own,
started with :meth:`AgentState.start_thread`). ``link_cond`` is the master link's own
condition. The configuration fields are set once, before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
import contextlib
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
import threading
from typing import Any

from disauto.common.logrotate import DEFAULT_SANDBOX_LOGGING
from disauto.common.logrotate import SandboxLogging
from disauto.common.resources import RoleResources
from disauto.localmesos.agent.agent_task import AgentTask
from disauto.localmesos.agent.checkpoint import MetaDir
from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.agent.config import AgentRuntime
from disauto.localmesos.agent.executor_run import EXECUTOR_HEARTBEAT_INTERVAL
from disauto.localmesos.agent.executor_run import ExecutorRun
from disauto.localmesos.agent.status_updates import StatusUpdateManager
from disauto.localmesos.containerizer import cpu_quota
from disauto.localmesos.containerizer.docker import DockerContainerizer
from disauto.localmesos.containerizer.launcher import Launcher
from disauto.localmesos.containerizer.monitor import ResourceMonitor
from disauto.localmesos.protocol.recordio import EventObserver


#: Mesos' agent states (``Slave::State``), the agent's ``link_state``.
RECOVERING, DISCONNECTED, RUNNING, TERMINATING = (
    "RECOVERING", "DISCONNECTED", "RUNNING", "TERMINATING")

ExecutorExited = Callable[[str, str, str, int], None]
"""``(agent_id, framework_id, executor_id, wait status)``: an executor ended."""
ExecutorMessage = Callable[[str, str, str, str], None]
"""``(agent_id, framework_id, executor_id, base64 data)``: an executor's MESSAGE."""


@dataclass(eq=False)
class AgentState:
    """The agent's configuration and tables (see the module docstring for the lock).

    Writers, by part: ``launch`` (``ran_containers``; GPUs a task takes and gives back),
    ``task_sandboxes`` and ``executor_host`` (``sandboxes``), ``executor_host`` and
    ``executor_processes`` (``executors``, ``completed_executors``, an executor's GPUs),
    ``reports`` (a task dropped with its framework, GPUs of a task that ended), ``recovery``
    (what it rebuilds from the checkpoint; ``stopped`` and ``link_state`` of a crash),
    ``master_link`` (``link_state``), ``draining`` (``drain_config``); the façade
    :class:`~localmesos.agent.agent.Agent` (``tasks`` added and forgotten,
    ``removed_frameworks``, ``stopped``, what runs it); the cluster sets ``libprocess_id``.
    """

    # -- configuration (the constructor's arguments; fixed once the agent runs) ---------------
    id: str
    config: AgentConfig
    work_dir: Path
    runtime: AgentRuntime
    default_kill_grace: float = 3.0
    master_endpoint: str = ""
    fetch_timeout: float = 60.0
    environment: Mapping[str, str] | None = None
    sandbox_logging: SandboxLogging | None = DEFAULT_SANDBOX_LOGGING
    on_executor_exited: ExecutorExited | None = None
    on_executor_message: ExecutorMessage | None = None
    executor_registration_timeout: float = 60.0
    executor_shutdown_grace: float = 5.0
    executor_heartbeat_interval: float = EXECUTOR_HEARTBEAT_INTERVAL
    #: The libprocess id executors are told (``MESOS_SLAVE_PID``); the cluster sets it.
    libprocess_id: str = "slave(1)"
    # -- what runs it (made by the façade) -----------------------------------------------------
    launcher: Launcher = field(init=False)
    meta: MetaDir = field(init=False)
    updates: StatusUpdateManager = field(init=False)
    containers: DockerContainerizer = field(init=False)
    monitor: ResourceMonitor = field(default_factory=ResourceMonitor)
    #: The agent's CPU group (None at full speed).
    cpu_group: cpu_quota.CpuGroup | None = None
    link_state: str = ""
    #: The resources it offers (``config.total()``).
    total: RoleResources = field(init=False)
    # -- the tables ----------------------------------------------------------------------------
    lock: threading.Lock = field(default_factory=threading.Lock)
    link_cond: threading.Condition = field(default_factory=threading.Condition)
    crashed: threading.Event = field(default_factory=threading.Event)
    tasks: dict[tuple[str, str], AgentTask] = field(default_factory=dict)
    #: (framework id, executor id) → (executor id, sandbox dir).
    sandboxes: dict[tuple[str, str], tuple[str, Path]] = field(default_factory=dict)
    removed_frameworks: set[str] = field(default_factory=set)
    executors: dict[tuple[str, str], ExecutorRun] = field(default_factory=dict)
    completed_executors: list[ExecutorRun] = field(default_factory=list)
    free_gpus: list[int] = field(default_factory=list)
    threads: set[threading.Thread] = field(default_factory=set)
    executor_observers: list[EventObserver] = field(default_factory=list)
    drain_config: dict[str, Any] | None = None
    ran_containers: bool = False
    stopped: bool = False

    def __post_init__(self) -> None:
        self.total = self.config.total()
        self.free_gpus = list(self.config.gpu_devices)

    @property
    def recovering(self) -> bool:
        """Whether executors must wait (503): the agent died, or recovers from its
        checkpoint."""
        return self.crashed.is_set() or self.link_state == RECOVERING

    def start_thread(self, target: Callable[..., Any], *args: Any, name: str) -> None:
        """Under the lock: start and track a worker thread."""
        self.threads = {t for t in self.threads if t.is_alive()}
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self.threads.add(thread)
        thread.start()

    def in_cpu_group(self) -> contextlib.AbstractContextManager[None]:
        """Processes started in this block get the agent's CPU share (its speed)."""
        if self.cpu_group is None:
            return contextlib.nullcontext()
        return self.cpu_group.attached()
