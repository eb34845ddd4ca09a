"""Custom executors on an embedded agent: launched once, fed tasks over the v1 executor API.

A mixin of :class:`localmesos.agent.Agent`. What a Mesos 1.11 agent does for a task whose
``TaskInfo.executor`` is a CUSTOM ``ExecutorInfo`` (apache/mesos ``src/slave/slave.cpp``):

* **Launch.** The first task for an ExecutorID of a framework on the agent launches the
  executor: one sandbox ``.../executors/<executor>/runs/<container>/``, the executor command's
  URIs fetched, its command run as its own process group with the executor environment
  (``executorEnvironment``: ``MESOS_FRAMEWORK_ID``, ``MESOS_EXECUTOR_ID``, ``MESOS_DIRECTORY``,
  ``MESOS_SANDBOX``, ``MESOS_SLAVE_ID``, ``MESOS_SLAVE_PID``, ``MESOS_AGENT_ENDPOINT``,
  ``MESOS_CHECKPOINT``, ``MESOS_HTTP_COMMAND_EXECUTOR``,
  ``MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD``, and with checkpointing ``MESOS_RECOVERY_TIMEOUT``
  and ``MESOS_SUBSCRIPTION_BACKOFF_MAX``; no ``MESOS_TASK_ID``). The task waits in the
  executor's queue (REGISTERING) until the executor subscribes.
* **Subscribe.** SUBSCRIBED (executor, framework and agent info, container id), then a LAUNCH
  per queued task. Later tasks for the running executor are LAUNCH events, not processes. An
  executor that does not subscribe within the registration timeout (Mesos: 1 min) is killed
  and its tasks fail with REASON_EXECUTOR_REGISTRATION_TIMEOUT. A re-subscription replaces the
  old connection; its ``unacknowledged_updates`` are handled again and launched tasks still
  STAGING that the executor does not list become TASK_LOST (TASK_DROPPED when partition aware),
  REASON_AGENT_RESTARTED.
* **Updates.** An UPDATE joins the task's reliable stream to the master (retried until the
  scheduler acknowledges it); the agent answers ACKNOWLEDGED as soon as it has taken the update
  over (``___statusUpdate``), not when the scheduler acknowledges. The status keeps the
  executor's fields; the agent sets ``source`` SOURCE_EXECUTOR, ``agent_id`` and ``timestamp``
  when absent, and merges the container's status. An update for a task the agent does not
  know is forwarded but not acknowledged, one naming another agent is dropped.
* **Kill.** A queued task is TASK_KILLED by the agent (REASON_TASK_KILLED_DURING_LAUNCH);
  one delivered to the executor is a KILL event (with the scheduler's ``kill_policy``).
* **Shutdown** (the scheduler's SHUTDOWN, its teardown, the agent stopping): SHUTDOWN event,
  then after the executor's ``shutdown_grace_period`` (agent default 5 s) the process group is
  SIGKILLed, as Mesos destroys the container.
* **Exit.** The executor's non-terminal tasks become TASK_FAILED, REASON_EXECUTOR_TERMINATED,
  "Executor terminated" (from the agent), and the master is told (``ExitedExecutorMessage``:
  it frees the executor's resources and sends the scheduler FAILURE with the wait status).
* **Messages.** A framework MESSAGE reaches a subscribed executor as MESSAGE (dropped
  otherwise); an executor's MESSAGE goes to the master, which sends the scheduler MESSAGE.

* **GPUs.** The ``gpus`` of the ExecutorInfo's resources are assigned to the executor when it
  is launched, for its whole life (its environment names them: ``CUDA_VISIBLE_DEVICES`` and
  ``NVIDIA_VISIBLE_DEVICES``, which its tasks' processes inherit), and freed when it ends. Too
  few free GPUs fail its tasks (REASON_CONTAINER_LAUNCH_FAILED).

Not done: ``gpus`` in the resources of a custom executor's *tasks* are not assigned (hold
them in the executor's), containers (an executor ``ContainerInfo`` image) are refused, and
nothing is checkpointed (an agent restart is the cluster's end).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
import contextlib
from dataclasses import dataclass
from dataclasses import field
import logging
import os
from pathlib import Path
import signal
import threading
import time
from typing import Any
import uuid

from disauto.common.resources import ResourceError
from disauto.common.resources import Resources
from disauto.localmesos.agent import executor_api
from disauto.localmesos.agent import sandbox as sandbox_mod
from disauto.localmesos.agent.fetcher import FetchCancelled
from disauto.localmesos.agent.fetcher import FetchError
from disauto.localmesos.agent.fetcher import fetch_uris
from disauto.localmesos.agent.launch import AgentTask
from disauto.localmesos.agent.launch import sweep_sandbox
from disauto.localmesos.agent.status_updates import TERMINAL_STATES
from disauto.localmesos.containerizer import command as command_mod
from disauto.localmesos.containerizer.command import CommandProcess
from disauto.localmesos.containerizer.command import LaunchError
from disauto.localmesos.containerizer.cpu_quota import CpuQuotaError
from disauto.localmesos.protocol.messages import duration_seconds
from disauto.localmesos.protocol.recordio import Subscription


logger = logging.getLogger("disauto.localmesos.agent")

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

    @property
    def key(self) -> tuple[str, str]:
        return (self.framework_id, self.executor_id)

    def send(self, event: dict[str, Any]) -> None:
        """Queue an event on the executor's connection (dropped when it has none, as Mesos)."""
        if self.stream is not None:
            self.stream.send(event)


def _partition_aware(framework_info: Mapping[str, Any]) -> bool:
    return any(c.get("type") == "PARTITION_AWARE"
               for c in framework_info.get("capabilities") or [] if isinstance(c, Mapping))


class ExecutorHost:
    """Runs custom executors and serves their calls (part of :class:`localmesos.agent.Agent`)."""

    _in_cpu_group: Callable[[], contextlib.AbstractContextManager[None]]
    """A block whose new processes get the agent's CPU share
    (:mod:`localmesos.containerizer.cpu_quota`)."""

    # -- from the master -------------------------------------------------------------------

    def _launch_on_executor(self, task: AgentTask, launch_executor: bool | None) -> None:
        """Give a task of a custom executor to its executor, launching it when needed.

        ``launch_executor`` is the master's word (Mesos ``RunTaskMessage.launch_executor``):
        True when it charged a new executor, False when it expects one to run; None launches
        one if there is none.
        """
        info = task.info["executor"]
        drop: str | None = None
        shutdown: ExecutorRun | None = None
        launch: ExecutorRun | None = None
        with self._lock:
            run = self._executors.get((task.framework_id, task.executor_id))
            if launch_executor is True and run is not None:
                drop, shutdown = "Master wants to launch executor, but one already exists", run
            elif launch_executor is False and run is None:
                drop = "No executor is expected to launch and there is none running"
            elif run is not None and run.state in (TERMINATING, TERMINATED):
                drop = "Executor is terminating"
            elif run is None:
                launch = run = self._new_run(task, info)
            if drop is None and run is not None:
                task.container_id = run.container_id
                task.sandbox = run.sandbox
                self._sandboxes[task.key] = (run.executor_id, run.sandbox)
                if run.state == RUNNING and run.stream is not None:
                    self._deliver(run, task)
                else:
                    run.queued[task.task_id] = task.info
        if drop is not None:
            state = "TASK_DROPPED" if _partition_aware(task.framework_info) else "TASK_LOST"
            self._emit(task, state, source="SOURCE_AGENT", message=drop,
                       reason="REASON_EXECUTOR_TERMINATED")
            if shutdown is not None:
                self.shutdown_executor(shutdown.framework_id, shutdown.executor_id)
        if launch is not None:
            with self._lock:
                self._start_thread(self._run_executor, launch,
                                   name=f"executor-{launch.executor_id}")

    def _new_run(self, task: AgentTask, info: dict[str, Any]) -> ExecutorRun:
        """Under the lock: a new REGISTERING executor run with its sandbox."""
        container_id = str(uuid.uuid4())
        path = sandbox_mod.sandbox_dir(self.work_dir, self.id, task.framework_id,
                                       task.executor_id, container_id)
        run = ExecutorRun(task.framework_id, task.executor_id, info, task.framework_info,
                          container_id, path)
        self._assign_executor_gpus(run)
        self._executors[run.key] = run
        return run

    def _assign_executor_gpus(self, run: ExecutorRun) -> None:
        """Under the lock: give the run the ``gpus`` of its ExecutorInfo's resources."""
        try:
            wanted = Resources.from_json(list(run.info.get("resources") or [])).scalar("gpus")
        except ResourceError as exc:
            run.gpu_error = f"Invalid executor resources: {exc}"
            return
        if wanted <= 0:
            return
        if wanted != int(wanted):
            run.gpu_error = f"The 'gpus' resource must be a whole number, got {wanted:g}"
            return
        if int(wanted) > len(self._free_gpus):
            run.gpu_error = (f"The executor needs {int(wanted)} GPUs but only "
                             f"{len(self._free_gpus)} of agent {self.id}'s {self.config.gpus} "
                             "are free")
            return
        self._free_gpus.sort()
        run.gpus = tuple(self._free_gpus[:int(wanted)])
        del self._free_gpus[:int(wanted)]

    def _deliver(self, run: ExecutorRun, task: AgentTask) -> None:
        """Under the lock: LAUNCH a task on the subscribed executor."""
        run.launched.add(task.task_id)
        run.ever_sent = True
        run.send(executor_api.launch(task.info))

    def _kill_on_executor(self, task: AgentTask, grace_period: float | None) -> None:
        """Kill a task of a custom executor (Mesos ``Slave::kill``)."""
        killed = False
        shutdown = False
        with self._lock:
            run = self._executors.get((task.framework_id, task.executor_id))
            if run is None or run.state in (TERMINATING, TERMINATED):
                logger.info("Ignoring kill of task %s: its executor is gone or terminating",
                            task.task_id)
                return
            task.kill_requested = True
            if task.task_id in run.queued:
                del run.queued[task.task_id]
                killed = True
                shutdown = run.state == RUNNING and not run.ever_sent and not run.queued
            elif run.state == RUNNING:
                run.send(executor_api.kill(task.task_id, grace_period))
            else:  # queued: REGISTERING runs hold every task they were given
                killed = True
        if killed:
            self._emit(task, "TASK_KILLED", source="SOURCE_AGENT",
                       message="Killed before delivery to the executor",
                       reason="REASON_TASK_KILLED_DURING_LAUNCH")
        if shutdown:
            self.shutdown_executor(task.framework_id, task.executor_id)

    def shutdown_executor(self, framework_id: str, executor_id: str) -> None:
        """SHUTDOWN the executor, then kill it after its grace period (Mesos
        ``_shutdownExecutor``). Unknown and terminating executors are ignored."""
        with self._lock:
            run = self._executors.get((framework_id, executor_id))
            if run is None or run.state not in (REGISTERING, RUNNING):
                logger.info("Ignoring shutdown of unknown or terminating executor %s",
                            executor_id)
                return
            self._begin_shutdown(run, None)

    def _begin_shutdown(self, run: ExecutorRun, grace_period: float | None) -> None:
        """Under the lock: TERMINATING, SHUTDOWN sent, the kill scheduled."""
        run.state = TERMINATING
        run.send(executor_api.SHUTDOWN)
        run.cancel.set()
        if grace_period is None:
            grace_period = duration_seconds(run.info.get("shutdown_grace_period"))
        if grace_period is None:
            grace_period = self._executor_shutdown_grace
        logger.info("Shutting down executor %s of framework %s (grace %gs)", run.executor_id,
                    run.framework_id, grace_period)
        self._start_thread(self._kill_after, run, grace_period, name=f"shutdown-{run.executor_id}")

    def _kill_after(self, run: ExecutorRun, seconds: float) -> None:
        if run.exited.wait(max(0.0, seconds)):
            return
        logger.info("Executor %s outlived its grace period: killing it", run.executor_id)
        self._destroy(run)

    def _destroy(self, run: ExecutorRun) -> None:
        """SIGKILL the executor's process group and what it left in its sandbox."""
        run.cancel.set()
        process = run.process
        if process is not None:
            process.signal_group(signal.SIGKILL)
        sweep_sandbox(run.sandbox)

    def framework_message(self, framework_id: str, executor_id: str, data: str) -> None:
        """A scheduler's MESSAGE: to the executor if it is subscribed (dropped otherwise)."""
        with self._lock:
            run = self._executors.get((framework_id, executor_id))
            if run is None or run.state != RUNNING or run.stream is None:
                logger.warning("Dropping message for executor %s: it is not running",
                               executor_id)
                return
            run.send(executor_api.message(data))

    def _shutdown_framework_executors(self, framework_id: str) -> None:
        """Under the lock: shut down every executor of a removed framework."""
        for run in list(self._executors.values()):
            if run.framework_id == framework_id and run.state in (REGISTERING, RUNNING):
                self._begin_shutdown(run, None)

    def _stop_executors(self, grace_period: float | None) -> None:
        """Under the lock (agent stop): shut every executor down."""
        for run in list(self._executors.values()):
            if run.state in (REGISTERING, RUNNING):
                self._begin_shutdown(run, grace_period)

    # -- the executor's process ------------------------------------------------------------

    def _run_executor(self, run: ExecutorRun) -> None:
        """The thread of one executor run: sandbox, fetch, spawn, wait, clean up."""
        returncode: int | None = None
        try:
            process = self._spawn_executor(run)
            if process is not None:
                returncode = process.wait()
        except Exception as exc:  # noqa: BLE001 - the run must end, whatever happened
            logger.exception("Executor %s: agent error", run.executor_id)
            run.pending_termination = ("TASK_FAILED", "REASON_EXECUTOR_TERMINATED",
                                       f"Embedded agent error: {type(exc).__name__}: {exc}")
        finally:
            self._executor_terminated(run, returncode)

    def _spawn_executor(self, run: ExecutorRun) -> CommandProcess | None:
        """Start the executor's command; None (with ``pending_termination``) if it cannot."""
        command = run.info.get("command") or {}
        try:
            sandbox_mod.create_sandbox(self.work_dir, self.id, run.framework_id,
                                       run.executor_id, run.container_id)
            for name in ("stdout", "stderr"):
                (run.sandbox / name).touch()
            if run.gpu_error:
                raise LaunchError(run.gpu_error)
            image = (run.info.get("container") or {})
            if image:
                raise LaunchError("The embedded agent runs custom executors as processes only: "
                                  "'ExecutorInfo.container' is not supported")
            fetch_uris(command.get("uris") or [], run.sandbox, cancel=run.cancel,
                       timeout=self._fetch_timeout)
            run_as = command_mod.resolve_user(command.get("user")
                                               or run.framework_info.get("user"))
            executable, argv = command_mod.command_line(command)
            env = self._executor_environment(run, command, run_as)
            if run_as is not None:
                command_mod.chown_tree(run.sandbox, run_as)
            with self._lock:
                if run.cancel.is_set():
                    raise FetchCancelled("the executor was shut down while it was launched")
                with self._in_cpu_group():
                    process = CommandProcess.spawn(
                        executable, argv, env=env, cwd=run.sandbox,
                        stdout=run.sandbox / "stdout", stderr=run.sandbox / "stderr",
                        run_as=run_as)
                run.process = process
                self._start_thread(self._registration_timeout, run,
                                   name=f"register-{run.executor_id}")
            logger.info("Launched executor %s of framework %s (pid %d)", run.executor_id,
                        run.framework_id, process.pid)
            return process
        except FetchCancelled:
            logger.info("Executor %s was shut down before it was launched", run.executor_id)
        except (FetchError, LaunchError, ValueError, OSError, CpuQuotaError) as exc:
            message = f"Failed to launch container: {exc}"
            run.pending_termination = ("TASK_FAILED", "REASON_CONTAINER_LAUNCH_FAILED", message)
            try:
                with open(run.sandbox / "stderr", "a", encoding="utf-8") as err:
                    err.write(message + "\n")
            except OSError:
                pass
        return None

    def _executor_environment(self, run: ExecutorRun, command: Mapping[str, Any],
                              run_as: command_mod.RunAs | None) -> dict[str, str]:
        """Mesos ``executorEnvironment`` (plus the sandbox variables of the containerizer)."""
        grace = duration_seconds(run.info.get("shutdown_grace_period"))
        ids = command_mod.TaskIds(run.framework_id, run.executor_id, "", self.id)
        env = command_mod.task_environment(
            base=os.environ if self._environment is None else self._environment,
            command=command, sandbox=run.sandbox, ids=ids,
            agent_endpoint=self._master_endpoint,
            shutdown_grace_period=self._executor_shutdown_grace if grace is None else grace,
            run_as=run_as, gpus=run.gpus if self.config.gpus > 0 else None,
        )
        env.pop("MESOS_TASK_ID", None)
        checkpoint = bool(run.framework_info.get("checkpoint"))
        env.update({
            "MESOS_SLAVE_PID": f"{self.libprocess_id}@{self._master_endpoint}",
            "MESOS_CHECKPOINT": "1" if checkpoint else "0",
            "MESOS_HTTP_COMMAND_EXECUTOR": "0",
            "LIBPROCESS_PORT": "0",
        })
        if checkpoint:
            env["MESOS_RECOVERY_TIMEOUT"] = "15mins"
            env["MESOS_SUBSCRIPTION_BACKOFF_MAX"] = "2secs"
        env.update(command_mod.command_environment(command))
        return env

    def _registration_timeout(self, run: ExecutorRun) -> None:
        timeout = self._executor_registration_timeout
        if run.settled.wait(timeout):
            return
        with self._lock:
            if run.state != REGISTERING:
                return
            logger.info("Killing executor %s: it did not subscribe within %gs",
                        run.executor_id, timeout)
            run.state = TERMINATING
            run.pending_termination = (
                "TASK_FAILED", "REASON_EXECUTOR_REGISTRATION_TIMEOUT",
                f"Executor did not register within {mesos_duration(timeout)}")
        self._destroy(run)

    def _executor_terminated(self, run: ExecutorRun, returncode: int | None) -> None:
        """The executor ended: fail its live tasks, tell the master (Mesos
        ``executorTerminated``)."""
        run.returncode = returncode
        sweep_sandbox(run.sandbox)
        with self._lock:
            run.state = TERMINATED
            self._free_gpus.extend(run.gpus)
            run.gpus = ()
            run.exited.set()
            run.settled.set()
            if run.stream is not None:
                run.stream.close()
                run.stream = None
            if self._executors.get(run.key) is run:
                del self._executors[run.key]
            self._completed_executors.append(run)
            live = [t for t in self._tasks.values()
                    if t.framework_id == run.framework_id and t.executor_id == run.executor_id
                    and t.info.get("executor") and not t.terminal]
            live = [t for t in live if t.container_id == run.container_id]
        state, reason, message = run.pending_termination or (
            "TASK_FAILED", "REASON_EXECUTOR_TERMINATED", "Executor terminated")
        for task in live:
            self._emit(task, state, source="SOURCE_AGENT", message=message, reason=reason)
        status = executor_api.wait_status(returncode)
        logger.info("Executor %s of framework %s terminated (wait status %d)", run.executor_id,
                    run.framework_id, status)
        if self._on_executor_exited is not None:
            try:
                self._on_executor_exited(self.id, run.framework_id, run.executor_id, status)
            except Exception:  # noqa: BLE001 - the master's problem, not the run's
                logger.exception("Reporting the exit of executor %s failed", run.executor_id)

    # -- calls from the executor -----------------------------------------------------------

    def executor_call(self, call: Mapping[str, Any]) -> Subscription | tuple[int, str]:
        """Serve a validated executor call (``/api/v1/executor``).

        Returns:
            The event stream for SUBSCRIBE; otherwise ``(HTTP status, body)``: 202, or
            400 ``Framework cannot be found``/``Executor cannot be found``, 403 ``Executor is
            not subscribed``, 501 for UNKNOWN.
        """
        framework_id = call["framework_id"]["value"]
        executor_id = call["executor_id"]["value"]
        with self._lock:
            run = self._executors.get((framework_id, executor_id))
            if run is None:
                known = any(key[0] == framework_id for key in self._executors) or any(
                    task.framework_id == framework_id for task in self._tasks.values())
                return 400, "Executor cannot be found" if known else "Framework cannot be found"
            if run.state == REGISTERING and call["type"] != "SUBSCRIBE":
                return 403, "Executor is not subscribed"
        kind = call["type"]
        if kind == "SUBSCRIBE":
            return self._subscribe(run, call["subscribe"])
        if kind == "UPDATE":
            self._executor_update(run, call["update"]["status"])
            return 202, ""
        if kind == "MESSAGE":
            if self._on_executor_message is not None:
                self._on_executor_message(self.id, framework_id, executor_id,
                                          call["message"]["data"])
            return 202, ""
        logger.warning("Received 'UNKNOWN' call from executor %s", executor_id)
        return 501, ""

    def knows_executor(self, framework_id: str, executor_id: str) -> bool:
        """Whether an executor of that id runs (or is launched) here for the framework."""
        with self._lock:
            return (framework_id, executor_id) in self._executors

    def knows_framework(self, framework_id: str) -> bool:
        with self._lock:
            return any(key[0] == framework_id for key in self._executors) or any(
                task.framework_id == framework_id for task in self._tasks.values())

    def _subscribe(self, run: ExecutorRun, subscribe: Mapping[str, Any]) -> Subscription:
        stream = Subscription(run.framework_id, self._executor_heartbeat_interval,
                              list(self._executor_observers))
        stream.send_stream_id = False
        stream.on_closed = lambda closed: self._executor_disconnected(run, closed)
        dropped: list[AgentTask] = []
        with self._lock:
            removed = run.framework_id in self._removed_frameworks
            if removed or run.state in (TERMINATING, TERMINATED) or self._stopped:
                logger.warning("Shutting down executor %s: it subscribed while %s",
                               run.executor_id, "terminating" if not removed else "removed")
                stream.send(executor_api.SHUTDOWN)
                stream.close()
                return stream
            if run.stream is not None:
                logger.warning("Closing the earlier connection of executor %s", run.executor_id)
                run.stream.close()
            run.state = RUNNING
            run.stream = stream
            run.settled.set()
            unacked = {t["task_id"]["value"] for t in subscribe.get("unacknowledged_tasks", [])}
            for task_id in sorted(run.launched):
                task = self._tasks.get((run.framework_id, task_id))
                if task is not None and task.state == "TASK_STAGING" and task_id not in unacked:
                    dropped.append(task)
        for update in subscribe.get("unacknowledged_updates", []):
            self._executor_update(run, update["status"])
        for task in dropped:
            state = "TASK_DROPPED" if _partition_aware(task.framework_info) else "TASK_LOST"
            self._emit(task, state, source="SOURCE_AGENT",
                       message="Task launched during agent restart",
                       reason="REASON_AGENT_RESTARTED")
        with self._lock:
            if run.stream is not stream:
                return stream
            if not run.ever_sent and not run.queued:
                logger.warning("Shutting down executor %s: all its tasks were killed before "
                               "delivery", run.executor_id)
                self._begin_shutdown(run, None)
                return stream
            stream.send(executor_api.subscribed(run.info, run.framework_info,
                                                self._advertised_info(), run.container_id))
            for task_id in list(run.queued):
                task = self._tasks.get((run.framework_id, task_id))
                del run.queued[task_id]
                if task is not None:
                    self._deliver(run, task)
        logger.info("Executor %s of framework %s subscribed", run.executor_id, run.framework_id)
        return stream

    def _advertised_info(self) -> dict[str, Any]:
        """AgentInfo as the master advertises it: the port is the one it is served on."""
        info = self.info()
        port = self._master_endpoint.rpartition(":")[2]
        if port.isdigit():
            info["port"] = int(port)
        return info

    def _executor_disconnected(self, run: ExecutorRun, stream: Subscription) -> None:
        """The executor's connection ended: forget it (the executor may subscribe again)."""
        with self._lock:
            if run.stream is stream:
                run.stream = None

    def _executor_update(self, run: ExecutorRun, status: Mapping[str, Any]) -> None:
        """An executor's status update: into the task's reliable stream, then ACKNOWLEDGED."""
        status = dict(status)
        task_id = status["task_id"]["value"]
        if status.get("agent_id", {"value": self.id})["value"] != self.id:
            logger.warning("Ignoring status update of task %s: agent id %s is not %s", task_id,
                           status["agent_id"]["value"], self.id)
            return
        status["agent_id"] = {"value": self.id}
        status["source"] = "SOURCE_EXECUTOR"
        status.setdefault("timestamp", time.time())
        container = dict(status.get("container_status") or {})
        container.setdefault("container_id", {"value": run.container_id})
        if run.process is not None:
            container.setdefault("executor_pid", run.process.pid)
        if not container.get("network_infos"):
            container["network_infos"] = [{"ip_addresses": [{"ip_address": self.config.hostname}]}]
        status["container_status"] = container
        state = status["state"]
        acknowledge = True
        with self._lock:
            if run.framework_id in self._removed_frameworks:
                logger.info("Ignoring status update of task %s: framework removed", task_id)
                return
            task = self._tasks.get((run.framework_id, task_id))
            if task is None:
                acknowledge = False  # Mesos forwards it but has no executor to acknowledge
            duplicate = any(u["uuid"] == status["uuid"]
                            for u in self._updates.pending(run.framework_id, task_id))
            if task is not None and task.terminal and not duplicate:
                logger.warning("Dropping %s of task %s: it is already terminal", state, task_id)
                duplicate = True
            if task is not None and not duplicate:
                task.state = state
                if state in TERMINAL_STATES:
                    task.terminal = True
                    run.launched.discard(task_id)
        if not duplicate:
            status["framework_id"] = {"value": run.framework_id}
            self._updates.update(run.framework_id, task_id, status)
        if acknowledge:
            with self._lock:
                run.send(executor_api.acknowledged(task_id, status["uuid"]))
