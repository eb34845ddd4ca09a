"""How an embedded agent runs one task: sandbox, resources, GPUs, fetch, then its command as
a process group (:mod:`localmesos.containerizer.command`) or a container
(:mod:`localmesos.containerizer.docker`), and how it ended.

The agent's ``launch`` part (:mod:`localmesos.agent.parts`); each task runs on a thread of its
own.
"""

from __future__ import annotations

from collections.abc import Mapping
import logging
import os
from pathlib import Path
import signal
from typing import Any

from disauto.common.processes import with_environment
from disauto.common.resources import ResourceError
from disauto.common.resources import Resources
from disauto.localmesos.agent import health
from disauto.localmesos.agent.agent_task import AgentTask
from disauto.localmesos.agent.fetcher import FetchCancelled
from disauto.localmesos.agent.fetcher import FetchError
from disauto.localmesos.agent.fetcher import fetch_uris
from disauto.localmesos.agent.health import HealthChecker
from disauto.localmesos.agent.health import health_probe
from disauto.localmesos.agent.parts import AgentParts
from disauto.localmesos.agent.state import AgentState
from disauto.localmesos.agent.task_sandbox import _Abandon
from disauto.localmesos.containerizer import command as command_mod
from disauto.localmesos.containerizer import docker as docker_mod
from disauto.localmesos.containerizer.cgroups import IsolationError
from disauto.localmesos.containerizer.cgroups import memory_limitation
from disauto.localmesos.containerizer.command import CommandProcess
from disauto.localmesos.containerizer.command import LaunchError
from disauto.localmesos.containerizer.command import RunAs
from disauto.localmesos.containerizer.command import TaskIds
from disauto.localmesos.containerizer.cpu_quota import CpuQuotaError
from disauto.localmesos.containerizer.docker import ContainerError
from disauto.localmesos.containerizer.docker import ContainerProcess
from disauto.localmesos.containerizer.launcher import Container
from disauto.localmesos.containerizer.request import ContainerRequest
from disauto.localmesos.protocol.messages import duration_seconds


logger = logging.getLogger("disauto.localmesos.agent")


class TaskLauncher:
    """Runs one task's steps (part of :class:`localmesos.agent.agent.Agent`)."""

    def __init__(self, state: AgentState, parts: AgentParts) -> None:
        self.state = state
        self.parts = parts

    """The caps of the sandbox's ``stdout``/``stderr`` (None: uncapped, written directly)."""
    """A block whose new processes get the agent's CPU share
    (:mod:`localmesos.containerizer.cpu_quota`)."""
    """``--executor_reregistration_timeout`` (``MESOS_SUBSCRIPTION_BACKOFF_MAX``)."""

    def run_task(self, task: AgentTask) -> None:
        """The thread of one task: prepare, fetch, run, wait, report."""
        try:
            self._run_task_steps(task)
        except Exception as exc:
            logger.exception("Task %s: agent error", task.task_id)
            with self.state.lock:
                terminal = task.terminal
            if not terminal:
                self.parts.reports.fail(
                    task,
                    f"Embedded agent error: {type(exc).__name__}: {exc}",
                    "REASON_EXECUTOR_TERMINATED",
                )
        finally:
            task.done.set()
            with self.state.lock:
                if task.gpus:  # Never leak GPUs, whatever happened.
                    self.state.free_gpus.extend(task.gpus)
                    task.gpus = ()

    def _run_task_steps(self, task: AgentTask) -> None:
        try:
            command, container, executor_info = self._task_command(task)
            sandbox = self.parts.task_sandboxes.prepare_sandbox(task)
            resources = self._task_resources(task, executor_info)
            self._fetch(task, command, sandbox)
        except _Abandon:
            return
        if docker_mod.is_container_task(container) and container is not None:
            self._run_container(task, container, command, sandbox, resources)
        else:
            self._run_command(task, command, executor_info, sandbox, resources)

    def _task_command(self, task: AgentTask) -> tuple[Mapping[str, Any], Any, Any]:
        """The task's CommandInfo, ContainerInfo and ExecutorInfo (the sandbox comes first)."""
        info = task.info
        executor_info = info.get("executor") or None
        command = (executor_info or {}).get("command") if executor_info else info.get("command")
        container = info.get("container") or (executor_info or {}).get("container")
        # The sandbox first, so that even a task refused here leaves its stdout/stderr to read.
        self.parts.task_sandboxes.prepare_sandbox(task, command)
        if executor_info and not command:
            self.abandon(task, "The custom executor has no 'command'; the embedded agent only "
                                "runs command executors", "REASON_CONTAINER_LAUNCH_FAILED")
        if not command:
            self.abandon(task, "The task has neither 'command' nor 'executor'",
                          "REASON_TASK_INVALID")
        return command, container, executor_info

    def abandon(self, task: AgentTask, message: str, reason: str) -> None:
        self.parts.reports.fail(task, message, reason)
        raise _Abandon

    def _task_resources(self, task: AgentTask, executor_info: Any) -> Resources:
        try:
            resources = Resources.from_json(
                list(task.info.get("resources") or [])
                + list((executor_info or {}).get("resources") or [])
            )
        except ResourceError as exc:
            self.abandon(task, f"Invalid task resources: {exc}", "REASON_TASK_INVALID")
        if not self._assign_gpus(task, resources.scalar("gpus")):
            raise _Abandon
        return resources

    def _fetch(self, task: AgentTask, command: Mapping[str, Any], sandbox: Path) -> None:
        try:
            fetch_uris(command.get("uris") or [], sandbox, cancel=task.cancel,
                       timeout=self.state.fetch_timeout)
        except FetchCancelled:
            self.parts.reports.killed_during_launch(task)
            raise _Abandon from None
        except FetchError as exc:
            self.abandon(task, str(exc), "REASON_CONTAINER_LAUNCH_FAILED")
        with self.state.lock:
            killed = task.kill_requested
        if killed:
            self.parts.reports.killed_during_launch(task)
            raise _Abandon

    def _ids(self, task: AgentTask) -> TaskIds:
        return TaskIds(task.framework_id, task.executor_id, task.task_id, self.state.id)

    def _run_command(self, task: AgentTask, command: Mapping[str, Any], executor_info: Any,
                     sandbox: Path, resources: Resources) -> None:
        """Run a command task as its own process group, as Mesos' command executor does."""
        shutdown_grace = duration_seconds((executor_info or {}).get("shutdown_grace_period"))
        try:
            run_as = self.parts.task_sandboxes.run_as(task, command)
            executable, argv = command_mod.command_line(command)
            env = command_mod.task_environment(
                base=os.environ if self.state.environment is None else self.state.environment,
                command=command,
                sandbox=sandbox,
                ids=self._ids(task),
                agent_endpoint=self.state.master_endpoint,
                ports=resources.ranges("ports"),
                gpus=task.gpus if self.state.config.gpu_count > 0 else None,
                shutdown_grace_period=5.0 if shutdown_grace is None else shutdown_grace,
                run_as=run_as,
                checkpoint=command_mod.checkpoint_environment(
                    bool(task.framework_info.get("checkpoint")),
                    self.state.runtime.executor_reregistration_timeout),
                role=command_mod.allocation_role(task.info, task.framework_info),
            )
            if run_as is not None:
                command_mod.chown_tree(sandbox, run_as)
        except (LaunchError, OSError) as exc:
            self.parts.reports.fail(task, str(exc), "REASON_CONTAINER_LAUNCH_FAILED")
            return
        self.parts.reports.emit(task, "TASK_STARTING")
        container = self._spawn_command(task, executable, argv, env, run_as, resources)
        if container is None:
            return
        self._running(task, container.process)
        checker = self._start_health_checks(task, container.process.pid, command, env, sandbox,
                                            run_as)
        returncode = self.await_exit(container)
        if checker is not None:
            checker.stop()
        if returncode is not None:
            self.command_ended(task, container, returncode)

    def _spawn_command(self, task: AgentTask, executable: str, argv: list[str],
                       env: dict[str, str], run_as: RunAs | None,
                       resources: Resources) -> Container | None:
        """Start the command in its container (its process group, its cgroups), kept by the
        launcher; None when it could not start (the task has failed)."""
        sandbox = task.sandbox
        assert sandbox is not None
        try:
            isolation = self.parts.isolator.isolate(task.container_id, resources, executor=False)
        except IsolationError as exc:
            self.parts.reports.fail(task, str(exc), "REASON_CONTAINER_LAUNCH_FAILED")
            return None
        try:
            with self.state.in_cpu_group(), isolation.attached():
                process = CommandProcess.spawn(executable, argv, env=env, cwd=sandbox,
                                               stdout=sandbox / "stdout",
                                               stderr=sandbox / "stderr",
                                               run_as=run_as, logs=self.state.sandbox_logging)
        except (LaunchError, CpuQuotaError, IsolationError) as exc:
            isolation.destroy()
            # Mesos' launch helper fails to exec the command and exits 1: the command
            # executor reports that end with no reason (src/launcher/executor.cpp reaped).
            self.parts.reports.fail(task, str(exc), None, "SOURCE_EXECUTOR")
            return None
        with self.state.lock:
            if self.state.crashed.is_set():  # died meanwhile: the next agent will not know it
                process.signal_group(signal.SIGKILL)
                isolation.destroy()
                return None
            container = self.state.launcher.launched(task.container_id, process, isolation)
        isolation.watch(container)
        self.parts.recovery.checkpoint_pid(task.framework_info, task.framework_id,
                                           task.executor_id, task.container_id, process.pid)
        return container

    def await_exit(self, container: Container) -> int | None:
        """The container's exit status once it ended; None when this agent died first (the
        next one reports the end)."""
        while not container.exited.wait(0.1):
            if self.state.crashed.is_set():
                return None
        return None if self.state.crashed.is_set() else container.returncode

    def command_ended(self, task: AgentTask, container: Container, returncode: int) -> None:
        """A command task's process ended: what it left is killed, its output flushed, its end
        reported (a limitation's, if an isolator killed it), the container forgotten."""
        if task.sandbox is not None:
            sweep_sandbox(task.sandbox)
        if isinstance(container.process, CommandProcess):
            container.process.drain_logs()
        limitation = (container.isolation.limitation(container)
                      if container.isolation is not None else container.limitation)
        if limitation is not None:
            self.parts.reports.emit(task, "TASK_FAILED", source="SOURCE_AGENT",
                       message=limitation["message"], reason=limitation["reason"],
                       limitation={"resources": limitation["resources"]})
        else:
            self._finish(task, returncode == 0, command_mod.describe_exit(returncode))
        self.state.launcher.forget(container.container_id)

    def _running(self, task: AgentTask, process: CommandProcess | ContainerProcess) -> None:
        """The task's process runs: a kill that came meanwhile is carried out, TASK_RUNNING is
        reported, and its ``max_completion_time`` is watched."""
        with self.state.lock:
            task.process = process
            if task.kill_requested:
                self.parts.killing.start_killer(task)
        self.parts.reports.emit(task, "TASK_RUNNING", pid=process.pid)
        self._watch_deadline(task)

    def _finish(self, task: AgentTask, succeeded: bool, message: str) -> None:
        """Report how a started task ended: KILLED when killed, FAILED past its
        ``max_completion_time``, else FINISHED or FAILED. Only the last carries a reason: Mesos'
        command executor (``src/launcher/executor.cpp`` ``reaped``) and docker executor
        (``src/docker/executor.cpp``) set none for the command's own end, only ``message``
        (``Command exited with status N``, ``Command terminated with signal X``)."""
        with self.state.lock:
            killed, timed_out = task.kill_requested, task.timed_out
        if timed_out:
            limit = duration_seconds(task.info.get("max_completion_time")) or 0.0
            self.parts.reports.emit(
                task,
                "TASK_FAILED",
                message=f"Task exceeded its max_completion_time of {limit:g}s ({message})",
                reason="REASON_MAX_COMPLETION_TIME_REACHED",
            )
        elif killed:
            healthy = False if task.killed_by_health_check else None
            self.parts.reports.emit(task, "TASK_KILLED", message=message, healthy=healthy)
        elif succeeded:
            self.parts.reports.emit(task, "TASK_FINISHED", message=message)
        else:
            self.parts.reports.emit(task, "TASK_FAILED", message=message)

    def _start_health_checks(self, task: AgentTask, pid: int, command: Mapping[str, Any],
                             env: Mapping[str, str], sandbox: Path,
                             run_as: RunAs | None) -> HealthChecker | None:
        """Run the task's ``health_check`` (:mod:`localmesos.agent.health`), if it has one."""
        spec = task.info.get("health_check")
        if not isinstance(spec, Mapping):
            return None
        check = health.HealthCheck.from_json(spec)
        checker = HealthChecker(
            check, health_probe(check, env, sandbox, run_as),
            lambda healthy, kill: self._health_update(task, pid, healthy, kill),
            name=f"health-{task.task_id}",
        )
        checker.start()
        return checker

    def _health_update(self, task: AgentTask, pid: int, healthy: bool, kill: bool) -> None:
        """A health result to report: TASK_RUNNING again with ``healthy``; kill if told to."""
        with self.state.lock:
            if task.terminal or task.kill_requested:
                return  # Mesos sends no health update once the task is being killed
        self.parts.reports.emit(task, "TASK_RUNNING", pid=pid, reason=health.HEALTH_REASON,
                                healthy=healthy)
        if kill:
            with self.state.lock:
                logger.info("Task %s failed its health check too often; killing it",
                            task.task_id)
                task.killed_by_health_check = True
                self.parts.killing.request_kill(task, None)

    def _watch_deadline(self, task: AgentTask) -> None:
        """Kill the task if it runs past its ``max_completion_time``."""
        limit = duration_seconds(task.info.get("max_completion_time"))
        if limit is None:
            return
        with self.state.lock:
            self.state.start_thread(self._deadline, task, limit, name=f"deadline-{task.task_id}")

    def _deadline(self, task: AgentTask, limit: float) -> None:
        if task.done.wait(limit) or self.state.crashed.is_set():
            return
        with self.state.lock:
            if task.terminal or task.kill_requested:
                return
            task.timed_out = True
            logger.info("Task %s exceeded its max_completion_time of %gs", task.task_id, limit)
            self.parts.killing.request_kill(task, None)

    def _run_container(
        self,
        task: AgentTask,
        container: Mapping[str, Any],
        command: Mapping[str, Any],
        sandbox: Path,
        resources: Resources,
    ) -> None:
        """Run a container task through the Docker engine
        (:mod:`localmesos.containerizer.docker`)."""
        request = self._container_request(task, container, command, sandbox, resources)
        if request is None:
            return
        self.parts.reports.emit(task, "TASK_STARTING")
        with self.state.lock:
            self.state.ran_containers = True
        try:
            process = self.state.containers.launch(request, sandbox / "stdout", sandbox / "stderr",
                                              self.state.sandbox_logging)
        except ContainerError as exc:
            self.parts.reports.fail(task, str(exc), "REASON_CONTAINER_LAUNCH_FAILED")
            return
        with self.state.lock:
            killed = task.kill_requested
        if killed:
            process.remove()
            self.parts.reports.killed_during_launch(task)
            return
        try:
            process.start()
        except ContainerError as exc:
            process.remove()
            self.parts.reports.fail(task, str(exc), "REASON_CONTAINER_LAUNCH_FAILED",
                                    "SOURCE_EXECUTOR")
            return
        self._running(task, process)
        try:
            result = process.wait()
        except ContainerError as exc:
            process.remove()
            self.parts.reports.fail(task, str(exc), "REASON_EXECUTOR_TERMINATED",
                                    "SOURCE_EXECUTOR")
            return
        process.remove()  # the output is in the sandbox by now
        with self.state.lock:
            killed = task.kill_requested
        if result.oom_killed and not killed:
            # As the cgroups/mem isolator reports it; the engine tells no peak usage (an OOM
            # kill means it reached the limit) and no statistics once the container is gone.
            limitation = memory_limitation(request.mem_bytes, request.mem_bytes, "")
            self.parts.reports.emit(task, "TASK_FAILED", source="SOURCE_AGENT",
                       message=limitation["message"], reason=limitation["reason"],
                       limitation={"resources": limitation["resources"]})
            return
        self._finish(task, result.status == 0, docker_mod.describe_exit(result))

    def _container_request(
        self,
        task: AgentTask,
        container: Mapping[str, Any],
        command: Mapping[str, Any],
        sandbox: Path,
        resources: Resources,
    ) -> ContainerRequest | None:
        """What the engine is asked for; None, the task failed, when the task cannot say."""
        try:
            return docker_mod.build_request(
                info=task.info,
                container=container,
                command=command,
                sandbox=sandbox,
                ids=self._ids(task),
                container_id=task.container_id,
                resources=resources,
                gpus=task.gpus,
                run_as=self.parts.task_sandboxes.run_as(task, command),
                stop_grace=task.kill_grace,
                extra_labels=self.state.containers.labels,
            )
        except (ContainerError, LaunchError) as exc:
            self.parts.reports.fail(task, str(exc), "REASON_CONTAINER_LAUNCH_FAILED")
            return None

    def _assign_gpus(self, task: AgentTask, wanted: float) -> bool:
        """Give the task ``wanted`` GPUs from the free pool; fail it (``False``) if impossible."""
        if wanted <= 0:
            return True
        if wanted != int(wanted):
            self.parts.reports.fail(
                task,
                f"The 'gpus' resource must be a whole number, got {wanted:g}",
                "REASON_TASK_INVALID",
            )
            return False
        count = int(wanted)
        with self.state.lock:
            if count <= len(self.state.free_gpus):
                self.state.free_gpus.sort()
                task.gpus = tuple(self.state.free_gpus[:count])
                del self.state.free_gpus[:count]
                return True
            free = len(self.state.free_gpus)
        self.parts.reports.fail(
            task,
            f"The task needs {count} GPUs but only {free} of agent {self.state.id}'s "
            f"{self.state.config.gpu_count} are free",
            "REASON_CONTAINER_LAUNCH_FAILED",
        )
        return False


def sweep_sandbox(sandbox: Path) -> list[int]:
    """Kill what a command task left running outside its process group (``setsid``,
    daemons): every process whose environment names the task's sandbox.

    A Mesos agent kills a task's whole cgroup (its launcher's freezer); the embedded agent runs
    without cgroups, and finds the task's processes by the ``MESOS_SANDBOX`` each inherits. A
    process that rewrites its environment escapes this. Returns the pids killed.
    """
    pids = with_environment("MESOS_SANDBOX", str(sandbox))
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
    if pids:
        logger.info("killed %d process(es) the task left in %s", len(pids), sandbox)
    return pids
