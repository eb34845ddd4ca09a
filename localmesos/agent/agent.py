"""An embedded Mesos agent: runs the tasks the embedded master places on it.

One :class:`Agent` per simulated agent. It owns a slice of the machine (:class:`AgentConfig`:
cpus, mem, disk, GPUs, ports, attributes), creates a Mesos-style sandbox per task
(:mod:`localmesos.agent.sandbox`), fetches the task's URIs (:mod:`localmesos.agent.fetcher`),
runs its command as its own process group (:mod:`localmesos.containerizer.command`) and reports
status updates through reliable per-task streams (:mod:`localmesos.agent.status_updates`),
exactly as a Mesos agent with the command executor would.

A command task goes TASK_STARTING -> TASK_RUNNING -> TASK_FINISHED (exit 0) / TASK_FAILED
(``Command exited with status N`` or ``Command terminated with signal X``,
REASON_COMMAND_EXECUTOR_FAILED) / TASK_KILLED (after a kill). A fetch failure is TASK_FAILED with
REASON_CONTAINER_LAUNCH_FAILED; a kill before the command started is TASK_KILLED with
REASON_TASK_KILLED_DURING_LAUNCH. Updates the agent itself generates carry ``SOURCE_AGENT``, those
of the (built-in) command executor ``SOURCE_EXECUTOR``; every update carries ``uuid``,
``agent_id``, ``executor_id`` and, for the master's routing only, ``framework_id``.

A container task (``ContainerInfo`` of type DOCKER, or MESOS with a Docker image) runs through
the Docker Engine API (:mod:`localmesos.containerizer.docker`): same sandbox, fetch, GPUs, kill and
status updates, with the command in a container of its image. A task with
``max_completion_time`` that outlives it is killed and ends TASK_FAILED with
REASON_MAX_COMPLETION_TIME_REACHED.

A task with a CUSTOM ``ExecutorInfo`` goes to its executor, launched once per executor id and
served over the v1 executor HTTP API (:mod:`localmesos.agent.executors`,
:mod:`localmesos.agent.executor_api`).

Thread safety: every public method may be called from any thread and returns quickly; the work
of a task runs on a thread of its own. ``send_update`` is always called on the status-update
dispatcher thread with no lock of the agent held, so it may call back into the agent.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from collections.abc import Mapping
import contextlib
from dataclasses import dataclass
from dataclasses import field
import logging
import os
from pathlib import Path
import shutil
import tempfile
import threading
import time
from typing import Any
import uuid

from disauto.common.logrotate import DEFAULT_SANDBOX_LOGGING
from disauto.common.logrotate import SandboxLogging
from disauto.common.resources import Resources
from disauto.localmesos.agent import sandbox as sandbox_mod
from disauto.localmesos.agent.executor_run import EXECUTOR_HEARTBEAT_INTERVAL
from disauto.localmesos.agent.executor_run import ExecutorRun
from disauto.localmesos.agent.executors import ExecutorHost
from disauto.localmesos.agent.launch import AgentTask
from disauto.localmesos.agent.launch import TaskLauncher
from disauto.localmesos.agent.status_updates import TERMINAL_STATES
from disauto.localmesos.agent.status_updates import StatusUpdateManager
from disauto.localmesos.containerizer import cpu_quota
from disauto.localmesos.containerizer import docker as docker_mod
from disauto.localmesos.containerizer.docker import ContainerProcess
from disauto.localmesos.containerizer.docker import DockerContainerizer
from disauto.localmesos.containerizer.monitor import ExecutorEntry
from disauto.localmesos.containerizer.monitor import ResourceMonitor
from disauto.localmesos.containerizer.monitor import mem_limit_bytes
from disauto.localmesos.protocol.messages import duration_seconds
from disauto.localmesos.protocol.recordio import EventObserver


logger = logging.getLogger(__name__)

AGENT_PORT = 5051  # AgentInfo.port default
_MB = 1024 * 1024


# -- configuration ----------------------------------------------------------------------------


def default_cpus() -> float:
    """Mesos' default: the number of online cores (1 if unknown)."""
    return float(os.cpu_count() or 1)


def default_mem_mb() -> float:
    """Mesos' default: total memory minus 1 GB, or half of it below 2 GB."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / _MB
    except (ValueError, OSError, AttributeError):
        return 1024.0
    return float(round(total / 2 if total < 2048 else total - 1024))


def default_disk_mb(path: str | os.PathLike[str] | None = None) -> float:
    """Mesos' default for a work dir's file system: its size minus 5 GB, or half below 10 GB.

    Args:
        path: a directory on the file system (default: the temporary directory, where
            mesos-local puts its work dir); the nearest existing parent is measured.
    """
    probe = Path(path) if path is not None else Path(tempfile.gettempdir())
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        total = shutil.disk_usage(probe).total / _MB
    except OSError:
        return 10240.0
    return float(round(total / 2 if total < 10240 else total - 5120))


@dataclass(frozen=True)
class AgentConfig:
    """What one embedded agent offers. Defaults follow a Mesos agent without ``--resources``.

    ``disk_mb`` defaults to the size of the temporary directory's file system (mesos-local's
    work dir lives there); use :func:`default_disk_mb` with another work dir to match it.
    GPUs are whole; ``gpu_indices`` (default ``0..gpus-1``) are the device indices written to
    ``CUDA_VISIBLE_DEVICES``/``NVIDIA_VISIBLE_DEVICES`` of the tasks that get them.

    Raises:
        ValueError: for a non-positive cpus/mem/disk, negative GPUs, ``gpu_indices`` that do not
            match ``gpus``, or invalid port ranges.
    """

    cpus: float = field(default_factory=default_cpus)
    mem_mb: float = field(default_factory=default_mem_mb)
    disk_mb: float = field(default_factory=default_disk_mb)
    gpus: int = 0
    ports: tuple[tuple[int, int], ...] = ((31000, 32000),)
    attributes: Mapping[str, str | float] = field(default_factory=dict)
    hostname: str = "127.0.0.1"
    gpu_indices: tuple[int, ...] | None = None
    speed: float = 1.0
    """The share (0 < speed <= 1) of its CPUs its tasks get: below 1 a cgroup CPU quota makes
    the agent that much slower (:mod:`localmesos.containerizer.cpu_quota`)."""

    def __post_init__(self) -> None:
        for name in ("cpus", "mem_mb", "disk_mb"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"invalid agent {name} {value!r}: must be a number > 0")
        if isinstance(self.gpus, bool) or not isinstance(self.gpus, int) or self.gpus < 0:
            raise ValueError(f"invalid agent gpus {self.gpus!r}: must be a whole number >= 0")
        if isinstance(self.speed, bool) or not isinstance(self.speed, int | float) or \
                not 0 < self.speed <= 1:
            raise ValueError(f"invalid agent speed {self.speed!r}: must be a number in (0, 1]")
        if self.gpu_indices is not None:
            indices = tuple(self.gpu_indices)
            if len(indices) != self.gpus or len(set(indices)) != len(indices):
                raise ValueError(
                    f"invalid gpu_indices {indices!r}: need {self.gpus} distinct indices"
                )
            if any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in indices):
                raise ValueError(f"invalid gpu_indices {indices!r}: need indices >= 0")
            object.__setattr__(self, "gpu_indices", indices)
        ports = tuple((int(b), int(e)) for b, e in self.ports)
        if any(b < 0 or e < b or e > 65535 for b, e in ports):
            raise ValueError(f"invalid port ranges {ports!r}: need 0 <= begin <= end <= 65535")
        object.__setattr__(self, "ports", ports)
        object.__setattr__(self, "attributes", dict(self.attributes))

    @property
    def gpu_devices(self) -> tuple[int, ...]:
        """The GPU indices this agent hands out."""
        return self.gpu_indices if self.gpu_indices is not None else tuple(range(self.gpus))


# -- tasks ------------------------------------------------------------------------------------


def _grace_seconds(kill_policy: Any) -> float | None:
    """``KillPolicy.grace_period`` in seconds, if set."""
    if not isinstance(kill_policy, Mapping):
        return None
    return duration_seconds(kill_policy.get("grace_period"))


def _scalars(infos: list[Mapping[str, Any]]) -> dict[str, float]:
    """The summed scalar resources of TaskInfos/ExecutorInfos (malformed ones count 0)."""
    total: dict[str, float] = {}
    for info in infos:
        for resource in info.get("resources") or []:
            value = (resource.get("scalar") or {}).get("value") if isinstance(resource, Mapping) \
                else None
            if isinstance(value, int | float) and not isinstance(value, bool):
                name = str(resource.get("name"))
                total[name] = total.get(name, 0.0) + float(value)
    return total


def _new_uuid() -> str:
    return base64.b64encode(uuid.uuid4().bytes).decode("ascii")


ExecutorExited = Callable[[str, str, str, int], None]
"""``(agent_id, framework_id, executor_id, wait status)``: an executor ended."""
ExecutorMessage = Callable[[str, str, str, str], None]
"""``(agent_id, framework_id, executor_id, base64 data)``: an executor's MESSAGE."""


class Agent(TaskLauncher, ExecutorHost):
    """One embedded Mesos agent (see the module docstring).

    Args:
        agent_id: the id the master minted (``<master>-S<n>``).
        config: the resources and attributes it offers.
        work_dir: the agent's work dir; sandboxes go under ``<work_dir>/slaves/<agent_id>/``.
        send_update: delivers a TaskStatus dict (plus ``framework_id``) to the master.
        retry_interval: seconds before an unacknowledged update is re-sent (Mesos: 10 s).
        retry_interval_max: cap of the doubling re-send interval (Mesos: 10 min).
        default_kill_grace: SIGTERM-to-SIGKILL grace when neither the task's kill policy nor
            the kill call gives one (Mesos: 3 s).
        master_endpoint: ``host:port`` given to tasks as ``MESOS_AGENT_ENDPOINT``.
        fetch_timeout: socket timeout in seconds of HTTP fetches.
        environment: the environment tasks inherit (default: this process' ``os.environ``,
            read at each launch).
        containerizer: runs container tasks (default: a :class:`DockerContainerizer` on the
            engine of ``DOCKER_HOST``); when the engine is reachable, containers left by dead
            agents are removed as the agent starts.
        on_executor_exited: told when a custom executor ended (the master's
            ``exited_executor``), on the executor's thread, no lock held.
        on_executor_message: given an executor's MESSAGE (the master's ``executor_message``).
        executor_registration_timeout: seconds a custom executor has to subscribe (Mesos
            ``--executor_registration_timeout``, 1 min).
        executor_shutdown_grace: seconds between SHUTDOWN and the kill when the ExecutorInfo
            has no ``shutdown_grace_period`` (Mesos ``--executor_shutdown_grace_period``, 5 s).
        executor_heartbeat_interval: seconds between HEARTBEAT events on executor streams
            (Mesos: 30 min).
    """

    def __init__(
        self,
        agent_id: str,
        config: AgentConfig,
        work_dir: Path,
        send_update: Callable[[dict[str, Any]], None],
        *,
        retry_interval: float = 10.0,
        retry_interval_max: float = 600.0,
        default_kill_grace: float = 3.0,
        master_endpoint: str = "",
        fetch_timeout: float = 60.0,
        environment: Mapping[str, str] | None = None,
        containerizer: DockerContainerizer | None = None,
        sandbox_logging: SandboxLogging | None = DEFAULT_SANDBOX_LOGGING,
        on_executor_exited: ExecutorExited | None = None,
        on_executor_message: ExecutorMessage | None = None,
        executor_registration_timeout: float = 60.0,
        executor_shutdown_grace: float = 5.0,
        executor_heartbeat_interval: float = EXECUTOR_HEARTBEAT_INTERVAL,
    ) -> None:
        sandbox_mod.check_id(agent_id, what="agent id")
        self._sandbox_logging = sandbox_logging
        self.id = agent_id
        self.config = config
        self.work_dir = Path(work_dir)
        self._default_kill_grace = default_kill_grace
        self._master_endpoint = master_endpoint
        self._fetch_timeout = fetch_timeout
        self._environment = environment
        self._on_executor_exited = on_executor_exited
        self._on_executor_message = on_executor_message
        self._executor_registration_timeout = executor_registration_timeout
        self._executor_shutdown_grace = executor_shutdown_grace
        self._executor_heartbeat_interval = executor_heartbeat_interval
        self._executor_observers: list[EventObserver] = []
        #: The libprocess id executors are told (``MESOS_SLAVE_PID``); the cluster sets it.
        self.libprocess_id = "slave(1)"
        scalars = {"cpus": config.cpus, "mem": config.mem_mb, "disk": config.disk_mb}
        if config.gpus > 0:
            scalars["gpus"] = float(config.gpus)
        self.total = Resources(scalars, {"ports": config.ports})

        self._lock = threading.Lock()
        self._tasks: dict[tuple[str, str], AgentTask] = {}
        self._sandboxes: dict[tuple[str, str], tuple[str, Path]] = {}  # -> (executor id, dir)
        self._removed_frameworks: set[str] = set()
        self._executors: dict[tuple[str, str], ExecutorRun] = {}
        self._completed_executors: list[ExecutorRun] = []
        self._free_gpus: list[int] = list(config.gpu_devices)
        self._threads: set[threading.Thread] = set()
        self._stopped = False
        self._updates = StatusUpdateManager(
            send_update,
            retry_interval=retry_interval,
            retry_interval_max=retry_interval_max,
            on_terminal_acknowledged=self._forget_task,
            name=f"status-updates-{agent_id}",
        )
        self._cpu_group: cpu_quota.CpuGroup | None = None
        if config.speed < 1:
            self._cpu_group = cpu_quota.CpuGroup(cpu_quota.group_name(agent_id),
                                                 config.speed * config.cpus)
        self._containers = containerizer or DockerContainerizer(agent_id)
        self._ran_containers = False
        self._monitor = ResourceMonitor()
        if docker_mod.engine_available():
            with self._lock:
                self._start_thread(self._containers.reap_orphans, name=f"reap-{agent_id}")

    # -- description ---------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """The ``AgentInfo`` JSON of this agent."""
        attributes: list[dict[str, Any]] = []
        for name, value in self.config.attributes.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                attributes.append({"name": name, "type": "SCALAR", "scalar": {"value": value}})
            else:
                text = str(value).lower() if isinstance(value, bool) else str(value)
                attributes.append({"name": name, "type": "TEXT", "text": {"value": text}})
        return {
            "id": {"value": self.id},
            "hostname": self.config.hostname,
            "port": AGENT_PORT,
            "resources": self.total.to_json(),
            "attributes": attributes,
        }

    # -- task lifecycle ------------------------------------------------------------------

    def launch_task(self, framework_info: dict[str, Any], task: dict[str, Any],
                    launch_executor: bool | None = None) -> None:
        """Start running a (master-validated) TaskInfo; returns at once.

        A task with an ``executor`` goes to that custom executor; ``launch_executor`` says
        whether the master charged a new executor for it (see
        :meth:`ExecutorHost._launch_on_executor`).

        Raises:
            ValueError: when the TaskInfo has no ``task_id.value`` or the framework info no
                ``id.value`` (the master always sets both).
        """
        framework_id = (framework_info.get("id") or {}).get("value")
        task_id = (task.get("task_id") or {}).get("value")
        if not isinstance(framework_id, str) or not framework_id:
            raise ValueError("framework_info has no 'id.value'")
        if not isinstance(task_id, str) or not task_id:
            raise ValueError("TaskInfo has no 'task_id.value'")
        executor_info = task.get("executor")
        if executor_info:
            executor_id = str((executor_info.get("executor_id") or {}).get("value") or "")
        else:
            executor_id = task_id
        record = AgentTask(
            framework_id=framework_id,
            task_id=task_id,
            executor_id=executor_id,
            container_id=str(uuid.uuid4()),
            info=task,
            framework_info=framework_info,
            kill_grace=self._default_kill_grace,
        )
        with self._lock:
            if self._stopped:
                logger.warning("Agent %s is stopped: not launching task %s", self.id, task_id)
                return
            existing = self._tasks.get(record.key)
            if existing is not None:
                logger.warning(
                    "Ignoring duplicate launch of task %s of framework %s", task_id, framework_id
                )
                return
            self._removed_frameworks.discard(framework_id)
            self._tasks[record.key] = record
            if not executor_info:
                self._start_thread(self._run_task, record, name=f"task-{task_id}")
        if executor_info:
            self._launch_on_executor(record, launch_executor)

    def kill_task(
        self, framework_id: str, task_id: str, grace_period: float | None = None
    ) -> None:
        """Kill a task: SIGTERM its process group, SIGKILL after the grace period.

        The grace period is the task's ``kill_policy.grace_period``, else ``grace_period``, else
        the agent's default. A task still fetching is not started and ends TASK_KILLED.
        Unknown and already finished tasks are ignored.
        """
        with self._lock:
            task = self._tasks.get((framework_id, task_id))
            if task is None or task.terminal:
                logger.info("Ignoring kill of unknown or finished task %s", task_id)
                return
            if not task.info.get("executor"):
                self._request_kill(task, grace_period)
                return
        self._kill_on_executor(task, grace_period)

    def _request_kill(
        self, task: AgentTask, grace_period: float | None, *, override: bool = False
    ) -> None:
        """Under the lock: mark the task killed and start killing its process if it has one.

        With ``override`` the given grace period replaces the task's own, and a kill already
        under way is escalated with it.
        """
        if task.kill_requested and not override:
            return
        policy_grace = _grace_seconds(task.info.get("kill_policy"))
        if override and grace_period is not None:
            task.kill_grace = max(0.0, grace_period)
        elif policy_grace is not None:
            task.kill_grace = policy_grace
        elif grace_period is not None:
            task.kill_grace = max(0.0, grace_period)
        task.kill_requested = True
        task.cancel.set()
        if task.process is not None:
            self._start_killer(task)

    def _start_killer(self, task: AgentTask) -> None:
        """Under the lock: kill ``task.process`` on a thread of its own."""
        process = task.process
        if process is None:
            return
        logger.info("Killing task %s (grace %.3g s)", task.task_id, task.kill_grace)
        self._start_thread(process.kill, task.kill_grace, name=f"kill-{task.task_id}")

    def acknowledge(self, framework_id: str, task_id: str, uuid_b64: str) -> bool:
        """Acknowledge a status update; ``False`` for an unknown or duplicate uuid."""
        return self._updates.acknowledge(framework_id, task_id, uuid_b64)

    def resend_unacknowledged(self, framework_id: str) -> int:
        """Re-send now the unacknowledged head update of each of the framework's tasks (on
        re-subscription); returns how many."""
        return self._updates.resend(framework_id)

    def shutdown_framework(self, framework_id: str) -> None:
        """The framework was removed: kill its tasks and drop its pending updates.

        Updates its tasks produce afterwards are dropped too, as the master has forgotten it.
        """
        with self._lock:
            self._removed_frameworks.add(framework_id)
            for task in list(self._tasks.values()):
                if task.framework_id != framework_id:
                    continue
                if task.terminal:
                    del self._tasks[task.key]
                elif not task.info.get("executor"):
                    self._request_kill(task, None)
            self._shutdown_framework_executors(framework_id)
        dropped = self._updates.remove_framework(framework_id)
        logger.info(
            "Shut down framework %s on agent %s (%d update streams dropped)",
            framework_id,
            self.id,
            dropped,
        )

    # -- queries -------------------------------------------------------------------------

    def task_sandbox(self, framework_id: str, task_id: str) -> Path | None:
        """The sandbox directory of a task launched here (kept after it ends), if any."""
        with self._lock:
            entry = self._sandboxes.get((framework_id, task_id))
        return entry[1] if entry else None

    def file_roots(self) -> dict[str, Path]:
        """Virtual path -> sandbox, for :func:`localmesos.sandbox.browse`/``read``.

        Every sandbox is served under its real path and under Mesos'
        ``/slaves/<agent>/frameworks/<fw>/executors/<executor>/runs/latest``.
        """
        roots: dict[str, Path] = {}
        with self._lock:
            entries = [
                (key[0], executor, path) for key, (executor, path) in self._sandboxes.items()
            ]
        for framework_id, executor_id, path in entries:
            roots[str(path)] = path
            roots[sandbox_mod.latest_virtual_path(self.id, framework_id, executor_id)] = (
                path.parent / "latest"
            )
        return roots

    def monitor_statistics(self) -> list[dict[str, Any]]:
        """``/monitor/statistics``: what each executor running here uses (Mesos'
        ``ResourceUsage`` per executor; :mod:`localmesos.containerizer.monitor`).

        A command task is its own executor (the executor id is the task id), measured as its
        process session; a custom executor is measured as its own session, which holds the
        processes of the tasks it runs; a container task from its cgroup. ``cpus_limit`` and
        ``mem_limit_bytes`` are the resources of the executor and its live tasks.
        """
        entries = []
        with self._lock:
            for task in self._tasks.values():
                if task.terminal or task.process is None or task.info.get("executor"):
                    continue
                scalars = _scalars([task.info])
                entries.append(ExecutorEntry(
                    framework_id=task.framework_id, executor_id=task.executor_id,
                    executor_name=f"Command Executor (Task: {task.task_id})",
                    source=task.task_id, pid=task.process.pid,
                    container=isinstance(task.process, ContainerProcess),
                    cpus_limit=scalars.get("cpus"),
                    mem_limit_bytes=mem_limit_bytes(scalars.get("mem", 0.0)),
                    cgroups=task.process.cgroups
                    if isinstance(task.process, ContainerProcess) else None,
                ))
            for run in self._executors.values():
                if run.process is None or run.process.exited:
                    continue
                infos = [run.info] + [
                    self._tasks[(run.framework_id, task_id)].info for task_id in run.launched
                    if (run.framework_id, task_id) in self._tasks
                    and not self._tasks[(run.framework_id, task_id)].terminal
                ]
                scalars = _scalars(infos)
                entries.append(ExecutorEntry(
                    framework_id=run.framework_id, executor_id=run.executor_id,
                    executor_name=str(run.info.get("name", "")),
                    source=str(run.info.get("source", "")), pid=run.process.pid,
                    container=False, cpus_limit=scalars.get("cpus"),
                    mem_limit_bytes=mem_limit_bytes(scalars.get("mem", 0.0)),
                ))
        return self._monitor.statistics(entries)

    def running_tasks(self) -> list[tuple[str, str]]:
        """``(framework_id, task_id)`` of every task that has not reached a terminal state."""
        with self._lock:
            return [key for key, task in self._tasks.items() if not task.terminal]

    def state(self) -> dict[str, Any]:
        """The agent's ``/state`` as a Mesos agent serves it (the parts tools read).

        ``frameworks[].executors[]`` lists executors with a live task and
        ``completed_executors[]`` the others, each with its sandbox ``directory`` — what the
        web UI and DisAuto's framework use to find a task's stdout/stderr.
        """
        with self._lock:
            sandboxes = dict(self._sandboxes)
            live = {key: task.state for key, task in self._tasks.items() if not task.terminal}
            runs = {run.sandbox: run for run in self._executors.values()}
            for run in runs.values():  # an executor with no task yet is listed too
                sandboxes.setdefault((run.framework_id, ""), (run.executor_id, run.sandbox))
        frameworks: dict[str, dict[str, Any]] = {}
        executors: dict[tuple[str, Path], dict[str, Any]] = {}
        for (framework_id, task_id), (executor_id, path) in sorted(
            sandboxes.items(), key=lambda item: (item[0][0], item[0][1], str(item[1][1]))
        ):
            framework = frameworks.setdefault(
                framework_id,
                {"id": framework_id, "executors": [], "completed_executors": []},
            )
            executor = executors.get((framework_id, path))
            if executor is None:
                run = runs.get(path)
                source = str(run.info.get("source", "")) if run is not None else task_id
                executor = {"id": executor_id, "directory": str(path), "source": source,
                            "tasks": []}
                executors[(framework_id, path)] = executor
                active = run is not None or (framework_id, task_id) in live
                framework["executors" if active else "completed_executors"].append(executor)
            if (framework_id, task_id) in live:
                executor["tasks"].append({"id": task_id, "state": live[(framework_id, task_id)]})
        return {
            "id": self.id,
            "hostname": self.config.hostname,
            "resources": self.total.to_state(),
            "frameworks": list(frameworks.values()),
            "completed_frameworks": [],
        }

    def latest_state(self, framework_id: str, task_id: str) -> str | None:
        """The task's current state on this agent (which may be ahead of the updates the
        framework has acknowledged), or ``None`` once forgotten."""
        with self._lock:
            task = self._tasks.get((framework_id, task_id))
            return task.state if task else None

    def unacknowledged_updates(self, framework_id: str, task_id: str) -> list[dict[str, Any]]:
        """Copies of the task's updates not yet acknowledged, oldest first."""
        return self._updates.pending(framework_id, task_id)

    def add_executor_event_observer(self, observer: EventObserver) -> None:
        """Call ``observer(framework_id, event)`` for every event sent to an executor (from
        streams opened afterwards)."""
        with self._lock:
            self._executor_observers.append(observer)

    @property
    def free_gpus(self) -> tuple[int, ...]:
        """GPU indices not assigned to a running task."""
        with self._lock:
            return tuple(sorted(self._free_gpus))

    # -- shutdown ------------------------------------------------------------------------

    def stop(self, grace_period: float | None = None, timeout: float | None = 60.0) -> None:
        """Kill every task (SIGTERM, then SIGKILL after the grace period), stop sending updates
        and join every thread of the agent. Idempotent.

        Updates are no longer sent once ``stop`` begins: the master goes away with its agents.

        Args:
            grace_period: SIGTERM-to-SIGKILL grace for every task; by default each task's own
                (kill policy, else the agent's default).
            timeout: upper bound in seconds on the wait for each thread.
        """
        with self._lock:
            first = not self._stopped
            self._stopped = True
        if first:
            self._updates.stop()
            with self._lock:
                for task in self._tasks.values():
                    if not task.terminal and not task.info.get("executor"):
                        self._request_kill(task, grace_period, override=grace_period is not None)
                self._stop_executors(grace_period)
        while True:
            with self._lock:
                alive = [t for t in self._threads if t.is_alive()]
                self._threads = set(alive)
            alive = [t for t in alive if t is not threading.current_thread()]
            if not alive:
                break
            for thread in alive:
                thread.join(timeout)
            if any(t.is_alive() for t in alive):
                logger.warning("Agent %s: threads still running after stop", self.id)
                break
        with self._lock:
            ran_containers, self._ran_containers = self._ran_containers, False
        if ran_containers:
            self._containers.remove_own()
        if self._cpu_group is not None:
            self._cpu_group.remove()

    def _in_cpu_group(self) -> contextlib.AbstractContextManager[None]:
        """Processes started in this block get the agent's CPU share (its speed)."""
        if self._cpu_group is None:
            return contextlib.nullcontext()
        return self._cpu_group.attached()

    @property
    def cpu_group(self) -> cpu_quota.CpuGroup | None:
        """The agent's CPU group (None at full speed)."""
        return self._cpu_group

    # -- internals -----------------------------------------------------------------------

    def _start_thread(self, target: Callable[..., Any], *args: Any, name: str) -> None:
        """Under the lock: start and track a worker thread."""
        self._threads = {t for t in self._threads if t.is_alive()}
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.add(thread)
        thread.start()

    def _forget_task(self, framework_id: str, task_id: str) -> None:
        """The terminal update was acknowledged: forget the task (its sandbox stays)."""
        with self._lock:
            task = self._tasks.get((framework_id, task_id))
            if task is not None and task.terminal:
                del self._tasks[task.key]

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
    ) -> dict[str, Any]:
        status: dict[str, Any] = {
            "task_id": {"value": task.task_id},
            "state": state,
            "source": source,
            "agent_id": {"value": self.id},
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
        container_status: dict[str, Any] = {"container_id": {"value": task.container_id}}
        if pid is not None:
            container_status["executor_pid"] = pid
        status["container_status"] = container_status
        return status

    def _emit(
        self,
        task: AgentTask,
        state: str,
        *,
        source: str = "SOURCE_EXECUTOR",
        message: str | None = None,
        reason: str | None = None,
        pid: int | None = None,
        healthy: bool | None = None,
    ) -> None:
        status = self._status(task, state, source=source, message=message, reason=reason, pid=pid,
                              healthy=healthy)
        with self._lock:
            task.state = state
            if state in TERMINAL_STATES:
                task.terminal = True
                self._free_gpus.extend(task.gpus)
                task.gpus = ()
            dropped = task.framework_id in self._removed_frameworks
            if dropped and task.terminal:
                self._tasks.pop(task.key, None)
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
        self._updates.update(task.framework_id, task.task_id, status)

    def _fail(self, task: AgentTask, message: str, reason: str,
              source: str = "SOURCE_AGENT") -> None:
        """Fail a launch; the reason also goes to the sandbox's stderr, as Mesos' fetcher does."""
        if task.sandbox is not None:
            try:
                with open(task.sandbox / "stderr", "a", encoding="utf-8") as err:
                    err.write(f"{message}\n")
            except OSError:
                pass
        self._emit(task, "TASK_FAILED", source=source, message=message, reason=reason)

    def _killed_during_launch(self, task: AgentTask) -> None:
        self._emit(
            task,
            "TASK_KILLED",
            source="SOURCE_AGENT",
            message="Killed before the command was started",
            reason="REASON_TASK_KILLED_DURING_LAUNCH",
        )

    def _run_task(self, task: AgentTask) -> None:
        """The thread of one task: prepare, fetch, run, wait, report."""
        try:
            self._run_task_steps(task)
        except Exception as exc:
            logger.exception("Task %s: agent error", task.task_id)
            with self._lock:
                terminal = task.terminal
            if not terminal:
                self._fail(
                    task,
                    f"Embedded agent error: {type(exc).__name__}: {exc}",
                    "REASON_EXECUTOR_TERMINATED",
                )
        finally:
            task.done.set()
            with self._lock:
                if task.gpus:  # Never leak GPUs, whatever happened.
                    self._free_gpus.extend(task.gpus)
                    task.gpus = ()
