"""Custom executors on an embedded agent: launched once, fed tasks over the v1 executor API.

The executor host, the agent's ``executor_host`` part: this module takes the
master's word (launch, kill, shutdown, message), :mod:`~localmesos.agent.executor_process` runs
the executors' processes and :mod:`~localmesos.agent.executor_calls` serves their calls; each
run is an :class:`~localmesos.agent.executor_run.ExecutorRun`. What a Mesos 1.11 agent does for
a task whose ``TaskInfo.executor`` is a CUSTOM ``ExecutorInfo`` (apache/mesos
``src/slave/slave.cpp``):

* **Launch.** The first task for an ExecutorID of a framework on the agent launches the
  executor: one sandbox ``.../executors/<executor>/runs/<container>/``, the executor command's
  URIs fetched, its command run as its own process group with the executor environment
  (``executorEnvironment``: ``MESOS_FRAMEWORK_ID``, ``MESOS_EXECUTOR_ID``, ``MESOS_DIRECTORY``,
  ``MESOS_SANDBOX``, ``MESOS_SLAVE_ID``, ``MESOS_SLAVE_PID``, ``MESOS_AGENT_ENDPOINT``,
  ``MESOS_CHECKPOINT``, ``MESOS_HTTP_COMMAND_EXECUTOR``,
  ``MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD``, and with checkpointing ``MESOS_RECOVERY_TIMEOUT``
  and ``MESOS_SUBSCRIPTION_BACKOFF_MAX``; no ``MESOS_TASK_ID``; an embedded-only extra,
  ``DISAUTO_EXECUTOR_HEARTBEAT_INTERVAL``, the interval of its HEARTBEATs to executors, which
  a Mesos agent has as the constant ``DEFAULT_EXECUTOR_HEARTBEAT_INTERVAL``). The task waits in the
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
them in the executor's), and containers (an executor ``ContainerInfo`` image) are refused. An
agent restart recovers the executors of checkpointing frameworks
(:mod:`localmesos.agent.recovery`).
"""

from __future__ import annotations

import logging
import signal
from typing import Any
import uuid

from disauto.common.resources import ResourceError
from disauto.common.resources import Resources
from disauto.localmesos.agent import executor_api
from disauto.localmesos.agent import sandbox as sandbox_mod
from disauto.localmesos.agent.agent_task import AgentTask
from disauto.localmesos.agent.executor_run import REGISTERING
from disauto.localmesos.agent.executor_run import RUNNING
from disauto.localmesos.agent.executor_run import TERMINATED
from disauto.localmesos.agent.executor_run import TERMINATING
from disauto.localmesos.agent.executor_run import ExecutorRun
from disauto.localmesos.agent.executor_run import partition_aware
from disauto.localmesos.agent.launch import sweep_sandbox
from disauto.localmesos.agent.parts import AgentParts
from disauto.localmesos.agent.sandbox import SandboxCreationError
from disauto.localmesos.agent.state import AgentState
from disauto.localmesos.agent.task_sandbox import task_user
from disauto.localmesos.protocol.messages import duration_seconds


logger = logging.getLogger("disauto.localmesos.agent")


class ExecutorHost:
    """Runs custom executors as the master asks (part of :class:`localmesos.agent.agent.Agent`):
    launches, kills, shutdowns and messages; their processes are
    :class:`~localmesos.agent.executor_process.ExecutorProcesses`, their calls
    :class:`~localmesos.agent.executor_calls.ExecutorCalls`."""

    def __init__(self, state: AgentState, parts: AgentParts) -> None:
        self.state = state
        self.parts = parts

    # -- from the master -------------------------------------------------------------------

    def launch_on_executor(self, task: AgentTask, launch_executor: bool | None) -> None:
        """Give a task of a custom executor to its executor, launching it when needed.

        ``launch_executor`` is the master's word (Mesos ``RunTaskMessage.launch_executor``):
        True when it charged a new executor, False when it expects one to run; None launches
        one if there is none.
        """
        info = task.info["executor"]
        drop: str | None = None
        shutdown: ExecutorRun | None = None
        launch: ExecutorRun | None = None
        never_launched = False
        with self.state.lock:
            run = self.state.executors.get((task.framework_id, task.executor_id))
            if launch_executor is True and run is not None:
                drop, shutdown = "Master wants to launch executor, but one already exists", run
            elif launch_executor is False and run is None:
                drop = "No executor is expected to launch and there is none running"
            elif run is not None and run.state in (TERMINATING, TERMINATED):
                drop = "Executor is terminating"
            elif run is None:
                try:
                    launch = run = self._new_run(task, info)
                except SandboxCreationError as exc:  # its user cannot have it (addExecutor)
                    drop, never_launched = str(exc), launch_executor is True
            if drop is None and run is not None:
                task.container_id = run.container_id
                task.sandbox = run.sandbox
                self.state.sandboxes[task.key] = (run.executor_id, run.sandbox)
                self.parts.recovery.checkpoint_launch(task, info, run.gpus)
                self.parts.isolator.update_executor_isolation(run)
                if run.state == RUNNING and run.stream is not None:
                    self.deliver(run, task)
                else:
                    run.queued[task.task_id] = task.info
        if drop is not None:
            state = "TASK_DROPPED" if partition_aware(task.framework_info) else "TASK_LOST"
            self.parts.reports.emit(task, state, source="SOURCE_AGENT", message=drop,
                       reason="REASON_EXECUTOR_TERMINATED")
            if shutdown is not None:
                self.shutdown_executor(shutdown.framework_id, shutdown.executor_id)
            if never_launched and self.state.on_executor_exited is not None:
                # The master charged the executor: it is told none runs (status -1, as Mesos).
                self.state.on_executor_exited(self.state.id, task.framework_id,
                                              task.executor_id, -1)
        if launch is not None:
            with self.state.lock:
                self.state.start_thread(self.parts.executor_processes.run_executor, launch,
                                   name=f"executor-{launch.executor_id}")

    def _new_run(self, task: AgentTask, info: dict[str, Any]) -> ExecutorRun:
        """Under the lock: a new REGISTERING executor run with its sandbox, made for the user
        the executor runs as (:func:`~localmesos.agent.launch.task_user`).

        Raises:
            SandboxCreationError: the sandbox cannot be made or given to that user.
        """
        container_id = str(uuid.uuid4())
        user = task_user(task.framework_info, info.get("command"),
                         switch=self.state.runtime.switch_user)
        path = sandbox_mod.create_sandbox(self.state.work_dir, self.state.id, task.framework_id,
                                          task.executor_id, container_id, user=user)
        run = ExecutorRun(task.framework_id, task.executor_id, info, task.framework_info,
                          container_id, path)
        self._assign_executor_gpus(run)
        self.state.executors[run.key] = run
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
        if int(wanted) > len(self.state.free_gpus):
            run.gpu_error = (f"The executor needs {int(wanted)} GPUs but only "
                             f"{len(self.state.free_gpus)} of agent {self.state.id}'s "
                             f"{self.state.config.gpu_count} are free")
            return
        self.state.free_gpus.sort()
        run.gpus = tuple(self.state.free_gpus[:int(wanted)])
        del self.state.free_gpus[:int(wanted)]

    def deliver(self, run: ExecutorRun, task: AgentTask) -> None:
        """Under the lock: LAUNCH a task on the subscribed executor."""
        run.launched.add(task.task_id)
        run.ever_sent = True
        run.send(executor_api.launch(task.info))

    def kill_on_executor(self, task: AgentTask, grace_period: float | None) -> None:
        """Kill a task of a custom executor (Mesos ``Slave::kill``)."""
        killed = False
        shutdown = False
        with self.state.lock:
            run = self.state.executors.get((task.framework_id, task.executor_id))
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
            self.parts.reports.emit(task, "TASK_KILLED", source="SOURCE_AGENT",
                       message="Killed before delivery to the executor",
                       reason="REASON_TASK_KILLED_DURING_LAUNCH")
        if shutdown:
            self.shutdown_executor(task.framework_id, task.executor_id)

    def shutdown_executor(self, framework_id: str, executor_id: str) -> None:
        """SHUTDOWN the executor, then kill it after its grace period (Mesos
        ``_shutdownExecutor``). Unknown and terminating executors are ignored."""
        with self.state.lock:
            run = self.state.executors.get((framework_id, executor_id))
            if run is None or run.state not in (REGISTERING, RUNNING):
                logger.info("Ignoring shutdown of unknown or terminating executor %s",
                            executor_id)
                return
            self.begin_shutdown(run, None)

    def begin_shutdown(self, run: ExecutorRun, grace_period: float | None) -> None:
        """Under the lock: TERMINATING, SHUTDOWN sent, the kill scheduled."""
        run.state = TERMINATING
        run.send(executor_api.SHUTDOWN)
        run.cancel.set()
        if grace_period is None:
            grace_period = duration_seconds(run.info.get("shutdown_grace_period"))
        if grace_period is None:
            grace_period = self.state.executor_shutdown_grace
        logger.info("Shutting down executor %s of framework %s (grace %gs)", run.executor_id,
                    run.framework_id, grace_period)
        self.state.start_thread(self._kill_after, run, grace_period,
                                name=f"shutdown-{run.executor_id}")

    def _kill_after(self, run: ExecutorRun, seconds: float) -> None:
        if run.exited.wait(max(0.0, seconds)):
            return
        logger.info("Executor %s outlived its grace period: killing it", run.executor_id)
        self.destroy(run)

    def destroy(self, run: ExecutorRun) -> None:
        """SIGKILL the executor's process group and what it left in its sandbox (not once the
        agent died: its executors outlive it)."""
        if self.state.crashed.is_set():
            return
        run.cancel.set()
        process = run.process
        if process is not None:
            process.signal_group(signal.SIGKILL)
        sweep_sandbox(run.sandbox)

    def framework_message(self, framework_id: str, executor_id: str, data: str) -> None:
        """A scheduler's MESSAGE: to the executor if it is subscribed (dropped otherwise)."""
        with self.state.lock:
            run = self.state.executors.get((framework_id, executor_id))
            if run is None or run.state != RUNNING or run.stream is None:
                logger.warning("Dropping message for executor %s: it is not running",
                               executor_id)
                return
            run.send(executor_api.message(data))

    def shutdown_framework_executors(self, framework_id: str) -> None:
        """Under the lock: shut down every executor of a removed framework."""
        for run in list(self.state.executors.values()):
            if run.framework_id == framework_id and run.state in (REGISTERING, RUNNING):
                self.begin_shutdown(run, None)

    def stop_executors(self, grace_period: float | None) -> None:
        """Under the lock (agent stop): shut every executor down."""
        for run in list(self.state.executors.values()):
            if run.state in (REGISTERING, RUNNING):
                self.begin_shutdown(run, grace_period)
