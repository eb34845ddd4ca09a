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

Layout: :class:`Agent` is a thin façade. It owns one declared state object,
:class:`~localmesos.agent.state.AgentState` (its tables, their lock, its configuration), and one
object per part, each given the state and the table of the other parts
(:class:`~localmesos.agent.parts.AgentParts`, whose protocols are what the parts offer one
another): :mod:`~localmesos.agent.launch` (one task's launch path),
:mod:`~localmesos.agent.task_sandbox`, :mod:`~localmesos.agent.killing` (a task's kill and its
escalation), :mod:`~localmesos.agent.executors`, :mod:`~localmesos.agent.executor_calls` and
:mod:`~localmesos.agent.executor_process` (the executor host),
:mod:`~localmesos.agent.reports` (status updates of its tasks), :mod:`~localmesos.agent.views`
(its info, state and usage), :mod:`~localmesos.agent.recovery`,
:mod:`~localmesos.agent.master_link`, :mod:`~localmesos.agent.draining` and
:mod:`~localmesos.agent.isolation`. The façade keeps the calls from the master and the
lifecycle, and hands the other public methods to their part; :mod:`~localmesos.agent.config` is
what it offers.

Thread safety: every public method may be called from any thread and returns quickly; the work
of a task runs on a thread of its own. ``send_update`` is always called on the status-update
dispatcher thread with no lock of the agent held, so it may call back into the agent.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
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
from disauto.localmesos.agent.executor_calls import ExecutorCalls
from disauto.localmesos.agent.executor_process import ExecutorProcesses
from disauto.localmesos.agent.executor_run import EXECUTOR_HEARTBEAT_INTERVAL
from disauto.localmesos.agent.executors import ExecutorHost
from disauto.localmesos.agent.isolation import AgentIsolation
from disauto.localmesos.agent.killing import TaskKilling
from disauto.localmesos.agent.launch import TaskLauncher
from disauto.localmesos.agent.master_link import MasterLink
from disauto.localmesos.agent.parts import AgentParts
from disauto.localmesos.agent.recovery import AgentRecovery
from disauto.localmesos.agent.reports import TaskReports
from disauto.localmesos.agent.state import DISCONNECTED
from disauto.localmesos.agent.state import RECOVERING
from disauto.localmesos.agent.state import AgentState
from disauto.localmesos.agent.state import ExecutorExited
from disauto.localmesos.agent.state import ExecutorMessage
from disauto.localmesos.agent.status_updates import StatusUpdateManager
from disauto.localmesos.agent.task_sandbox import TaskSandboxes
from disauto.localmesos.agent.views import AgentViews
from disauto.localmesos.containerizer import cpu_quota
from disauto.localmesos.containerizer import docker as docker_mod
from disauto.localmesos.containerizer.docker import DockerContainerizer
from disauto.localmesos.containerizer.launcher import Launcher
from disauto.localmesos.protocol.recordio import EventObserver
from disauto.localmesos.protocol.recordio import Subscription
from disauto.localmesos.protocol.registration import ReregisterAgent


logger = logging.getLogger(__name__)


class Agent:
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
        runtime = runtime or AgentRuntime()
        self.agent_state = state = AgentState(
            agent_id, config, Path(work_dir), runtime, default_kill_grace=default_kill_grace,
            master_endpoint=master_endpoint, fetch_timeout=fetch_timeout,
            environment=environment, sandbox_logging=sandbox_logging,
            on_executor_exited=on_executor_exited, on_executor_message=on_executor_message,
            executor_registration_timeout=executor_registration_timeout,
            executor_shutdown_grace=executor_shutdown_grace,
            executor_heartbeat_interval=executor_heartbeat_interval,
        )
        self._compose()
        state.updates = StatusUpdateManager(
            send_update,
            retry_interval=retry_interval,
            retry_interval_max=retry_interval_max,
            on_terminal_acknowledged=self._forget_task,
            name=f"status-updates-{agent_id}",
            paused=runtime.recover,
        )
        self._start_runtime(runtime)
        self._start_isolation(containerizer)

    def _compose(self) -> None:
        """Make the parts, each given the state and the table of the others."""
        state, parts = self.agent_state, AgentParts()
        self.parts = parts
        self.launch = parts.launch = TaskLauncher(state, parts)
        self.task_sandboxes = parts.task_sandboxes = TaskSandboxes(state, parts)
        self.killing = parts.killing = TaskKilling(state, parts)
        self.executor_host = parts.executor_host = ExecutorHost(state, parts)
        self.executor_calls = ExecutorCalls(state, parts)
        self.executor_processes = parts.executor_processes = ExecutorProcesses(state, parts)
        self.reports = parts.reports = TaskReports(state, parts)
        self.views = parts.views = AgentViews(state, parts)
        self.recovery = parts.recovery = AgentRecovery(state, parts)
        self.master_link = parts.master_link = MasterLink(state, parts)
        self.draining = parts.draining = AgentDraining(state, parts)
        self.isolator = parts.isolator = AgentIsolation(state, parts)
        parts.stop = self.stop
        parts.agent = self

    def _start_runtime(self, runtime: AgentRuntime) -> None:
        """Its launcher, checkpoint and link to the master."""
        state = self.agent_state
        state.launcher = runtime.launcher or Launcher(state.id)
        state.meta = MetaDir(state.work_dir, state.id)
        # Registered by the cluster (``registered``) or, recovering, by re-registering.
        state.link_state = RECOVERING if runtime.recover else DISCONNECTED
        if not runtime.recover:
            state.meta.write_agent(self.info())
        self.master_link.start_master_link(runtime.total_ping_timeout)

    def _start_isolation(self, containerizer: DockerContainerizer | None) -> None:
        """The agent's CPU group (below full speed), containerizer and usage monitor; containers
        of dead agents are removed when the engine is reachable."""
        state = self.agent_state
        if state.config.speed < 1:
            state.cpu_group = cpu_quota.CpuGroup(cpu_quota.group_name(state.id),
                                                 state.config.speed * state.config.cpus)
        state.containers = containerizer or DockerContainerizer(state.id)
        if docker_mod.engine_available():
            with state.lock:
                state.start_thread(state.containers.reap_orphans, name=f"reap-{state.id}")

    # -- task lifecycle ------------------------------------------------------------------

    def launch_task(self, framework_info: dict[str, Any], task: dict[str, Any],
                    launch_executor: bool | None = None) -> None:
        """Start running a (master-validated) TaskInfo; returns at once.

        A task with an ``executor`` goes to that custom executor; ``launch_executor`` says
        whether the master charged a new executor for it (see
        :meth:`ExecutorHost.launch_on_executor`).

        Raises:
            ValueError: when the TaskInfo has no ``task_id.value`` or the framework info no
                ``id.value`` (the master always sets both).
        """
        state = self.agent_state
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
            kill_grace=state.default_kill_grace,
        )
        if self.draining.dropped_while_draining(record):
            return
        with state.lock:
            if state.stopped:
                logger.warning("Agent %s is stopped: not launching task %s", state.id, task_id)
                return
            existing = state.tasks.get(record.key)
            if existing is not None:
                logger.warning(
                    "Ignoring duplicate launch of task %s of framework %s", task_id, framework_id
                )
                return
            state.removed_frameworks.discard(framework_id)
            state.tasks[record.key] = record
            if not executor_info:
                self.recovery.checkpoint_launch(record, None)
                state.start_thread(self.launch.run_task, record, name=f"task-{task_id}")
        if executor_info:
            self.executor_host.launch_on_executor(record, launch_executor)

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
        with self.agent_state.lock:
            task = self.agent_state.tasks.get((framework_id, task_id))
            if task is None or task.terminal:
                logger.info("Ignoring kill of unknown or finished task %s", task_id)
                return
            if not task.info.get("executor"):
                self.killing.request_kill(task, grace_period)
                return
        self.executor_host.kill_on_executor(task, grace_period)

    def acknowledge(self, framework_id: str, task_id: str, uuid_b64: str) -> bool:
        """Acknowledge a status update (checkpointed first); ``False`` for an unknown or
        duplicate uuid."""
        pending = self.agent_state.updates.pending(framework_id, task_id)
        if not pending or pending[0]["uuid"] != uuid_b64:
            return False
        self.recovery.checkpoint_ack(framework_id, task_id, uuid_b64)
        return self.agent_state.updates.acknowledge(framework_id, task_id, uuid_b64)

    def resend_unacknowledged(self, framework_id: str) -> int:
        """Re-send now the unacknowledged head update of each of the framework's tasks (on
        re-subscription); returns how many."""
        return self.agent_state.updates.resend(framework_id)

    def shutdown_framework(self, framework_id: str) -> None:
        """The framework was removed: kill its tasks and drop its pending updates.

        Updates its tasks produce afterwards are dropped too, as the master has forgotten it.
        """
        state = self.agent_state
        with state.lock:
            state.removed_frameworks.add(framework_id)
            for task in list(state.tasks.values()):
                if task.framework_id != framework_id:
                    continue
                if task.terminal:
                    del state.tasks[task.key]
                elif not task.info.get("executor"):
                    self.killing.request_kill(task, None)
            self.executor_host.shutdown_framework_executors(framework_id)
        dropped = state.updates.remove_framework(framework_id)
        logger.info(
            "Shut down framework %s on agent %s (%d update streams dropped)",
            framework_id,
            state.id,
            dropped,
        )

    @property
    def recovering(self) -> bool:
        """Whether executors must wait (503): the agent died, or recovers from its
        checkpoint."""
        return self.agent_state.recovering

    @property
    def executor_observers(self) -> list[EventObserver]:
        """The observers of executor events (a restarted agent takes them over)."""
        with self.agent_state.lock:
            return list(self.agent_state.executor_observers)

    def add_executor_event_observer(self, observer: EventObserver) -> None:
        """Call ``observer(framework_id, event)`` for every event sent to an executor (from
        streams opened afterwards)."""
        with self.agent_state.lock:
            self.agent_state.executor_observers.append(observer)

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
        state = self.agent_state
        with state.lock:
            first = not state.stopped
            state.stopped = True
            crashed = state.crashed.is_set()
        with state.link_cond:
            state.link_cond.notify_all()
        if first:
            state.updates.stop()
            with state.lock:
                for task in state.tasks.values():
                    if not task.terminal and not task.info.get("executor"):
                        self.killing.request_kill(task, grace_period)
                self.executor_host.stop_executors(grace_period)
        while True:
            with state.lock:
                alive = [t for t in state.threads if t.is_alive()]
                state.threads = set(alive)
            alive = [t for t in alive if t is not threading.current_thread()]
            if not alive:
                break
            for thread in alive:
                thread.join(timeout)
            if any(t.is_alive() for t in alive):
                logger.warning("Agent %s: threads still running after stop", state.id)
                break
        with state.lock:
            ran_containers, state.ran_containers = state.ran_containers, False
        if ran_containers:
            state.containers.remove_own()
        if state.cpu_group is not None and not crashed:
            state.cpu_group.remove()

    @property
    def cpu_group(self) -> cpu_quota.CpuGroup | None:
        """The agent's CPU group (None at full speed)."""
        return self.agent_state.cpu_group

    # -- internals -----------------------------------------------------------------------

    def _forget_task(self, framework_id: str, task_id: str) -> None:
        """The terminal update was acknowledged: forget the task (its sandbox stays), and its
        executor's checkpoint once nothing of it is left; a draining agent may be drained."""
        state = self.agent_state
        with state.lock:
            task = state.tasks.get((framework_id, task_id))
            if task is not None and task.terminal:
                del state.tasks[task.key]
                self.recovery.forget_checkpoint(framework_id, task.executor_id)
        self.draining.update_drain_status()

    # -- the parts' entry points other code calls ------------------------------------------

    def shutdown_executor(self, framework_id: str, executor_id: str) -> None:
        self.executor_host.shutdown_executor(framework_id, executor_id)

    def framework_message(self, framework_id: str, executor_id: str, data: str) -> None:
        self.executor_host.framework_message(framework_id, executor_id, data)

    @property
    def executor_secret(self) -> bytes | None:
        return self.executor_calls.executor_secret

    def executor_call(
        self, call: Mapping[str, Any], authorization: str | None = None
    ) -> Subscription | tuple[int, str]:
        return self.executor_calls.executor_call(call, authorization)

    def knows_executor(self, framework_id: str, executor_id: str) -> bool:
        return self.executor_calls.knows_executor(framework_id, executor_id)

    def knows_framework(self, framework_id: str) -> bool:
        return self.executor_calls.knows_framework(framework_id)

    def info(self) -> dict[str, Any]:
        return self.views.info()

    def task_sandbox(self, framework_id: str, task_id: str) -> Path | None:
        return self.views.task_sandbox(framework_id, task_id)

    def file_roots(self) -> dict[str, Path]:
        return self.views.file_roots()

    def monitor_statistics(self) -> list[dict[str, Any]]:
        return self.views.monitor_statistics()

    def running_tasks(self) -> list[tuple[str, str]]:
        return self.views.running_tasks()

    def state(self) -> dict[str, Any]:
        return self.views.state_json()

    def latest_state(self, framework_id: str, task_id: str) -> str | None:
        return self.views.latest_state(framework_id, task_id)

    def unacknowledged_updates(self, framework_id: str, task_id: str) -> list[dict[str, Any]]:
        return self.views.unacknowledged_updates(framework_id, task_id)

    @property
    def free_gpus(self) -> tuple[int, ...]:
        return self.views.free_gpus

    def crash(self) -> None:
        self.recovery.crash()

    def recover(self) -> None:
        self.recovery.recover()

    def reregistration(self) -> ReregisterAgent:
        return self.recovery.reregistration()

    def registered(self) -> None:
        self.master_link.registered()

    def ping(self, connected: bool) -> None:
        self.master_link.ping(connected)

    def master_detected(self) -> None:
        self.master_link.master_detected()

    def shutdown(self, message: str) -> None:
        self.master_link.shutdown(message)

    def drain(self, config: dict[str, Any]) -> None:
        self.draining.drain(config)


def _forwarded(name: str) -> property:
    """``agent.<name>``: reads and writes ``agent.agent_state.<name>``."""

    def read(agent: Agent) -> Any:
        return getattr(agent.agent_state, name)

    def write(agent: Agent, value: Any) -> None:
        setattr(agent.agent_state, name, value)

    return property(read, write, doc=f"``agent_state.{name}`` (:class:`AgentState`).")


#: What other code reads (and the cluster sets) of an agent: its state's public fields.
FORWARDED = ("id", "config", "work_dir", "total", "libprocess_id", "link_state")
for _name in FORWARDED:
    setattr(Agent, _name, _forwarded(_name))
