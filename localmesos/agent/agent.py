"""An embedded Mesos agent: runs the tasks the embedded master places on it.

One :class:`Agent` per simulated agent. It owns a slice of the machine (:class:`AgentConfig`:
cpus, mem, disk, GPUs, ports, attributes), creates a Mesos-style sandbox per task
(:mod:`localmesos.agent.sandbox`), fetches the task's URIs (:mod:`localmesos.agent.fetcher`),
runs its command as its own process group (:mod:`localmesos.containerizer.command`) and reports
status updates through reliable per-task streams (:mod:`localmesos.agent.status_updates`),
exactly as a Mesos agent with the command executor would.

A command task goes TASK_STARTING -> TASK_RUNNING -> TASK_FINISHED (exit 0) / TASK_FAILED
(``Command exited with status N`` or ``Command terminated with signal X``, no reason, as
Mesos' command executor) / TASK_KILLED (after a kill). A fetch failure is TASK_FAILED with
REASON_CONTAINER_LAUNCH_FAILED; a kill before the command started is TASK_KILLED with
REASON_TASK_KILLED_DURING_LAUNCH. Updates the agent itself generates carry ``SOURCE_AGENT``, those
of the (built-in) command executor ``SOURCE_EXECUTOR``; every update carries ``uuid``,
``agent_id``, ``executor_id`` and, for the master's routing only, ``framework_id``.

A container task (``ContainerInfo`` of type DOCKER, or MESOS with a Docker image) runs through
the Docker Engine API (:mod:`localmesos.containerizer.docker`): same sandbox, fetch, GPUs, kill
and status updates, with the command in a container of its image. A task with
``max_completion_time`` that outlives it is killed and ends TASK_FAILED with
REASON_MAX_COMPLETION_TIME_REACHED.

A task with a CUSTOM ``ExecutorInfo`` goes to its executor, launched once per executor id and
served over the v1 executor HTTP API (:mod:`localmesos.agent.executors`,
:mod:`localmesos.agent.executor_api`).

Layout: :class:`Agent` holds the tables, the lifecycle and the calls from the master; each
concern is a mixin in its own module: :mod:`~localmesos.agent.launch` (one task's launch path),
:mod:`~localmesos.agent.killing` (a task's kill and its escalation),
:mod:`~localmesos.agent.executors` (the executor host), :mod:`~localmesos.agent.reports` (status
updates of its tasks) and :mod:`~localmesos.agent.views` (its info, state and usage);
:mod:`~localmesos.agent.config` is what it offers.

Thread safety: every public method may be called from any thread and returns quickly; the work
of a task runs on a thread of its own. ``send_update`` is always called on the status-update
dispatcher thread with no lock of the agent held, so it may call back into the agent.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
import contextlib
import logging
from pathlib import Path
import threading
from typing import Any
import uuid

from disauto.common.logrotate import DEFAULT_SANDBOX_LOGGING
from disauto.common.logrotate import SandboxLogging
from disauto.localmesos.agent import sandbox as sandbox_mod
from disauto.localmesos.agent.agent_task import AgentTask
from disauto.localmesos.agent.checkpoint import MetaDir
from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.agent.config import AgentRuntime
from disauto.localmesos.agent.draining import AgentDraining
from disauto.localmesos.agent.executor_run import EXECUTOR_HEARTBEAT_INTERVAL
from disauto.localmesos.agent.executor_run import ExecutorRun
from disauto.localmesos.agent.executors import ExecutorHost
from disauto.localmesos.agent.isolation import AgentIsolation
from disauto.localmesos.agent.killing import TaskKilling
from disauto.localmesos.agent.launch import TaskLauncher
from disauto.localmesos.agent.master_link import DISCONNECTED
from disauto.localmesos.agent.master_link import RECOVERING
from disauto.localmesos.agent.master_link import MasterLink
from disauto.localmesos.agent.recovery import AgentRecovery
from disauto.localmesos.agent.reports import TaskReports
from disauto.localmesos.agent.status_updates import StatusUpdateManager
from disauto.localmesos.agent.views import AgentViews
from disauto.localmesos.containerizer import cpu_quota
from disauto.localmesos.containerizer import docker as docker_mod
from disauto.localmesos.containerizer.docker import DockerContainerizer
from disauto.localmesos.containerizer.launcher import Launcher
from disauto.localmesos.containerizer.monitor import ResourceMonitor
from disauto.localmesos.protocol.recordio import EventObserver


logger = logging.getLogger(__name__)


# -- tasks ------------------------------------------------------------------------------------


ExecutorExited = Callable[[str, str, str, int], None]
"""``(agent_id, framework_id, executor_id, wait status)``: an executor ended."""
ExecutorMessage = Callable[[str, str, str, str], None]
"""``(agent_id, framework_id, executor_id, base64 data)``: an executor's MESSAGE."""


class Agent(TaskLauncher, TaskKilling, ExecutorHost, TaskReports, AgentViews, AgentRecovery,
            MasterLink, AgentDraining, AgentIsolation):
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
        runtime: its launcher, pings and re-registration, recovery (:class:`AgentRuntime`).
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
        runtime: AgentRuntime | None = None,
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
        self.total = config.total()
        self._init_tables()
        runtime = runtime or AgentRuntime()
        self._updates = StatusUpdateManager(
            send_update,
            retry_interval=retry_interval,
            retry_interval_max=retry_interval_max,
            on_terminal_acknowledged=self._forget_task,
            name=f"status-updates-{agent_id}",
            paused=runtime.recover,
        )
        self._start_runtime(runtime)
        self._start_isolation(containerizer)

    def _init_tables(self) -> None:
        """What the agent knows: its tasks, sandboxes, executors, free GPUs, threads."""
        self._lock = threading.Lock()
        self._tasks: dict[tuple[str, str], AgentTask] = {}
        self._sandboxes: dict[tuple[str, str], tuple[str, Path]] = {}  # -> (executor id, dir)
        self._removed_frameworks: set[str] = set()
        self._executors: dict[tuple[str, str], ExecutorRun] = {}
        self._completed_executors: list[ExecutorRun] = []
        self._free_gpus: list[int] = list(self.config.gpu_devices)
        self._threads: set[threading.Thread] = set()
        self._stopped = False

    def _start_runtime(self, runtime: AgentRuntime) -> None:
        """Its launcher, checkpoint, link to the master and draining state."""
        self._launcher = runtime.launcher or Launcher(self.id)
        self._meta = MetaDir(self.work_dir, self.id)
        self._crashed = threading.Event()
        self._executor_reregistration_timeout = runtime.executor_reregistration_timeout
        self._on_pong = runtime.on_pong
        self._on_reregister = runtime.on_reregister
        self._drain_config: dict[str, Any] | None = None
        self._isolation = runtime.isolation
        self._cgroups_enable_cfs = runtime.cgroups_enable_cfs
        self._switch_user = runtime.switch_user
        self._executor_secret = runtime.executor_secret
        # Registered by the cluster (``registered``) or, recovering, by re-registering.
        self.link_state = RECOVERING if runtime.recover else DISCONNECTED
        if not runtime.recover:
            self._meta.write_agent(self.info())
        self._start_master_link(runtime.total_ping_timeout)

    def _start_isolation(self, containerizer: DockerContainerizer | None) -> None:
        """The agent's CPU group (below full speed), containerizer and usage monitor; containers
        of dead agents are removed when the engine is reachable."""
        self._cpu_group: cpu_quota.CpuGroup | None = None
        if self.config.speed < 1:
            self._cpu_group = cpu_quota.CpuGroup(cpu_quota.group_name(self.id),
                                                 self.config.speed * self.config.cpus)
        self._containers = containerizer or DockerContainerizer(self.id)
        self._ran_containers = False
        self._monitor = ResourceMonitor()
        if docker_mod.engine_available():
            with self._lock:
                self._start_thread(self._containers.reap_orphans, name=f"reap-{self.id}")

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
        if self._dropped_while_draining(record):
            return
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
                self._checkpoint_launch(record, None)
                self._start_thread(self._run_task, record, name=f"task-{task_id}")
        if executor_info:
            self._launch_on_executor(record, launch_executor)

    def kill_task(
        self, framework_id: str, task_id: str, grace_period: float | None = None
    ) -> None:
        """Kill a task: SIGTERM its process group, SIGKILL after the grace period.

        As Mesos' command executor (``src/launcher/executor.cpp`` ``kill``): the grace period
        is ``grace_period`` (the KILL's ``kill_policy``, which overrides the task's), else the
        task's ``kill_policy.grace_period``, else the agent's default; a kill of a task being
        killed only ever brings its SIGKILL forward. A task still fetching is not started and
        ends TASK_KILLED. Unknown and already finished tasks are ignored.
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

    def acknowledge(self, framework_id: str, task_id: str, uuid_b64: str) -> bool:
        """Acknowledge a status update (checkpointed first); ``False`` for an unknown or
        duplicate uuid."""
        pending = self._updates.pending(framework_id, task_id)
        if not pending or pending[0]["uuid"] != uuid_b64:
            return False
        self._checkpoint_ack(framework_id, task_id, uuid_b64)
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

    @property
    def recovering(self) -> bool:
        """Whether executors must wait (503): the agent died, or recovers from its
        checkpoint."""
        return self._crashed.is_set() or self.link_state == RECOVERING

    @property
    def executor_observers(self) -> list[EventObserver]:
        """The observers of executor events (a restarted agent takes them over)."""
        with self._lock:
            return list(self._executor_observers)

    def add_executor_event_observer(self, observer: EventObserver) -> None:
        """Call ``observer(framework_id, event)`` for every event sent to an executor (from
        streams opened afterwards)."""
        with self._lock:
            self._executor_observers.append(observer)

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
            crashed = self._crashed.is_set()
        with self._link_cond:
            self._link_cond.notify_all()
        if first:
            self._updates.stop()
            with self._lock:
                for task in self._tasks.values():
                    if not task.terminal and not task.info.get("executor"):
                        self._request_kill(task, grace_period)
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
        if self._cpu_group is not None and not crashed:
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
        """The terminal update was acknowledged: forget the task (its sandbox stays), and its
        executor's checkpoint once nothing of it is left; a draining agent may be drained."""
        with self._lock:
            task = self._tasks.get((framework_id, task_id))
            if task is not None and task.terminal:
                del self._tasks[task.key]
                self._forget_checkpoint(framework_id, task.executor_id)
        self._update_drain_status()

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
