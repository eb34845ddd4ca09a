"""A custom executor's process on an embedded agent: launched with Mesos' executor
environment, given a registration deadline, and what happens when it ends.

The agent's ``executor_processes`` part (:mod:`localmesos.agent.parts`; apache/mesos
``src/slave/slave.cpp``: ``launchExecutor``, ``executorEnvironment``,
``registerExecutorTimeout``, ``executorTerminated``); each run has a thread of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
import logging
import os
from typing import Any

from disauto.common.heartbeats import EXECUTOR_HEARTBEAT_ENV
from disauto.common.resources import Resources
from disauto.localmesos.agent import executor_api
from disauto.localmesos.agent import executor_auth
from disauto.localmesos.agent.executor_run import REGISTERING
from disauto.localmesos.agent.executor_run import TERMINATED
from disauto.localmesos.agent.executor_run import TERMINATING
from disauto.localmesos.agent.executor_run import ExecutorRun
from disauto.localmesos.agent.executor_run import mesos_duration
from disauto.localmesos.agent.fetcher import FetchCancelled
from disauto.localmesos.agent.fetcher import FetchError
from disauto.localmesos.agent.fetcher import fetch_uris
from disauto.localmesos.agent.launch import sweep_sandbox
from disauto.localmesos.agent.parts import AgentParts
from disauto.localmesos.agent.state import AgentState
from disauto.localmesos.agent.task_sandbox import task_user
from disauto.localmesos.containerizer import command as command_mod
from disauto.localmesos.containerizer.cgroups import IsolationError
from disauto.localmesos.containerizer.command import CommandProcess
from disauto.localmesos.containerizer.command import LaunchError
from disauto.localmesos.containerizer.cpu_quota import CpuQuotaError
from disauto.localmesos.containerizer.launcher import Container
from disauto.localmesos.protocol.messages import duration_seconds


logger = logging.getLogger("disauto.localmesos.agent")


class ExecutorProcesses:
    """Starts, times and ends custom executors' processes (part of
    :class:`localmesos.agent.agent.Agent`)."""

    def __init__(self, state: AgentState, parts: AgentParts) -> None:
        self.state = state
        self.parts = parts

    """A block whose new processes get the agent's CPU share
    (:mod:`localmesos.containerizer.cpu_quota`)."""
    """SIGKILL an executor's process group (:class:`localmesos.agent.executors.ExecutorHost`)."""
    """``--executor_reregistration_timeout`` (``MESOS_SUBSCRIPTION_BACKOFF_MAX``)."""
    """Run executors as their users (Mesos ``--switch_user``), or as the agent's own."""
    """The key of its executors' tokens (:mod:`localmesos.agent.executor_auth`), or None."""

    def run_executor(self, run: ExecutorRun) -> None:
        """The thread of one executor run: sandbox, fetch, spawn, wait, clean up."""
        returncode: int | None = None
        try:
            container = self._spawn_executor(run)
            if container is not None:
                returncode = self.parts.launch.await_exit(container)
        except Exception as exc:  # noqa: BLE001 - the run must end, whatever happened
            logger.exception("Executor %s: agent error", run.executor_id)
            run.pending_termination = ("TASK_FAILED", "REASON_EXECUTOR_TERMINATED",
                                       f"Embedded agent error: {type(exc).__name__}: {exc}")
        finally:
            self.executor_terminated(run, returncode)

    def _spawn_executor(self, run: ExecutorRun) -> Container | None:
        """Start the executor's command in its container; None (with
        ``pending_termination``) if it cannot."""
        command = run.info.get("command") or {}
        try:  # its sandbox was made, for its user, when the master launched it
            for name in ("stdout", "stderr"):
                (run.sandbox / name).touch()
            if run.gpu_error:
                raise LaunchError(run.gpu_error)
            image = (run.info.get("container") or {})
            if image:
                raise LaunchError("The embedded agent runs custom executors as processes only: "
                                  "'ExecutorInfo.container' is not supported")
            fetch_uris(command.get("uris") or [], run.sandbox, cancel=run.cancel,
                       timeout=self.state.fetch_timeout)
            run_as = command_mod.resolve_user(
                task_user(run.framework_info, command, switch=self.state.runtime.switch_user))
            executable, argv = command_mod.command_line(command)
            env = self._executor_environment(run, command, run_as)
            if run_as is not None:
                command_mod.chown_tree(run.sandbox, run_as)
            return self._start_executor(run, executable, argv, env, run_as)
        except FetchCancelled:
            logger.info("Executor %s was shut down before it was launched", run.executor_id)
        except (FetchError, LaunchError, ValueError, OSError, CpuQuotaError,
                IsolationError) as exc:
            message = f"Failed to launch container: {exc}"
            run.pending_termination = ("TASK_FAILED", "REASON_CONTAINER_LAUNCH_FAILED", message)
            try:
                with open(run.sandbox / "stderr", "a", encoding="utf-8") as err:
                    err.write(message + "\n")
            except OSError:
                pass
        return None

    def _start_executor(self, run: ExecutorRun, executable: str, argv: list[str],
                        env: dict[str, str], run_as: command_mod.RunAs | None) -> Container:
        """Start the executor's process in its container (its isolation made first), kept by
        the launcher, its registration timed.

        Raises:
            FetchCancelled: it was shut down (or the agent died) meanwhile.
            LaunchError, CpuQuotaError, IsolationError: it could not start.
        """
        isolation = self.parts.isolator.isolate(run.container_id, self._executor_resources(run),
                                  executor=True)
        with self.state.lock:
            if run.cancel.is_set() or self.state.crashed.is_set():
                isolation.destroy()
                raise FetchCancelled("the executor was shut down while it was launched")
            try:
                with self.state.in_cpu_group(), isolation.attached():
                    process = CommandProcess.spawn(
                        executable, argv, env=env, cwd=run.sandbox,
                        stdout=run.sandbox / "stdout", stderr=run.sandbox / "stderr",
                        run_as=run_as)
            except (LaunchError, CpuQuotaError, IsolationError):
                isolation.destroy()
                raise
            run.process = process
            container = self.state.launcher.launched(run.container_id, process, isolation)
            self.parts.isolator.update_executor_isolation(run)
            self.state.start_thread(self._registration_timeout, run,
                               name=f"register-{run.executor_id}")
        isolation.watch(container)
        self.parts.recovery.checkpoint_pid(run.framework_info, run.framework_id, run.executor_id,
                             run.container_id, process.pid)
        logger.info("Launched executor %s of framework %s (pid %d)", run.executor_id,
                    run.framework_id, process.pid)
        return container

    def _executor_environment(self, run: ExecutorRun, command: Mapping[str, Any],
                              run_as: command_mod.RunAs | None) -> dict[str, str]:
        """Mesos ``executorEnvironment`` (plus the sandbox variables of the containerizer)."""
        grace = duration_seconds(run.info.get("shutdown_grace_period"))
        ids = command_mod.TaskIds(run.framework_id, run.executor_id, "", self.state.id)
        env = command_mod.task_environment(
            base=os.environ if self.state.environment is None else self.state.environment,
            command=command, sandbox=run.sandbox, ids=ids,
            agent_endpoint=self.state.master_endpoint,
            shutdown_grace_period=self.state.executor_shutdown_grace if grace is None else grace,
            run_as=run_as, gpus=run.gpus if self.state.config.gpu_count > 0 else None,
        )
        env.pop("MESOS_TASK_ID", None)
        env.update({
            "MESOS_SLAVE_PID": f"{self.state.libprocess_id}@{self.state.master_endpoint}",
            **command_mod.checkpoint_environment(bool(run.framework_info.get("checkpoint")),
                                                 self.state.runtime.executor_reregistration_timeout),
            "MESOS_HTTP_COMMAND_EXECUTOR": "0",
            "LIBPROCESS_PORT": "0",
            # Embedded only: a Mesos agent's interval is a constant the executor knows.
            EXECUTOR_HEARTBEAT_ENV: mesos_duration(self.state.executor_heartbeat_interval),
        })
        if self.state.runtime.executor_secret is not None:
            env[executor_auth.TOKEN_VARIABLE] = executor_auth.token_for(
                self.state.runtime.executor_secret, run.framework_id, run.executor_id,
                run.container_id)
        env.update(command_mod.command_environment(command))
        return env

    def _registration_timeout(self, run: ExecutorRun) -> None:
        timeout = self.state.executor_registration_timeout
        if run.settled.wait(timeout):
            return
        with self.state.lock:
            if run.state != REGISTERING:
                return
            logger.info("Killing executor %s: it did not subscribe within %gs",
                        run.executor_id, timeout)
            run.state = TERMINATING
            run.pending_termination = (
                "TASK_FAILED", "REASON_EXECUTOR_REGISTRATION_TIMEOUT",
                f"Executor did not register within {mesos_duration(timeout)}")
        self.parts.executor_host.destroy(run)

    def _executor_resources(self, run: ExecutorRun) -> Resources:
        """The resources of the executor itself (its tasks' are added as they come)."""
        return Resources.from_json(list(run.info.get("resources") or []))

    def executor_terminated(self, run: ExecutorRun, returncode: int | None) -> None:
        """The executor ended: fail its live tasks, tell the master (Mesos
        ``executorTerminated``); a dead agent does nothing (the next one does it)."""
        if self.state.crashed.is_set():
            return
        run.returncode = returncode
        container = self.state.launcher.get(run.container_id)
        limitation = None
        if container is not None and container.isolation is not None:
            limitation = container.isolation.limitation(container)
        if limitation is not None:
            run.pending_termination = ("TASK_FAILED", limitation["reason"],
                                       limitation["message"])
        sweep_sandbox(run.sandbox)
        with self.state.lock:
            run.state = TERMINATED
            self.state.free_gpus.extend(run.gpus)
            run.gpus = ()
            run.exited.set()
            run.settled.set()
            if run.stream is not None:
                run.stream.close()
                run.stream = None
            if self.state.executors.get(run.key) is run:
                del self.state.executors[run.key]
            self.state.completed_executors.append(run)
            live = [t for t in self.state.tasks.values()
                    if t.framework_id == run.framework_id and t.executor_id == run.executor_id
                    and t.info.get("executor") and not t.terminal]
            live = [t for t in live if t.container_id == run.container_id]
        state, reason, message = run.pending_termination or (
            "TASK_FAILED", "REASON_EXECUTOR_TERMINATED", "Executor terminated")
        for task in live:
            self.parts.reports.emit(
                task, state, source="SOURCE_AGENT", message=message, reason=reason,
                limitation=None if limitation is None else {"resources": limitation["resources"]})
        self.state.launcher.forget(run.container_id)
        with self.state.lock:
            self.parts.recovery.forget_checkpoint(run.framework_id, run.executor_id)
        self.parts.draining.update_drain_status()
        status = executor_api.wait_status(returncode)
        logger.info("Executor %s of framework %s terminated (wait status %d)", run.executor_id,
                    run.framework_id, status)
        if self.state.on_executor_exited is not None:
            try:
                self.state.on_executor_exited(self.state.id, run.framework_id, run.executor_id,
                                              status)
            except Exception:  # noqa: BLE001 - the master's problem, not the run's
                logger.exception("Reporting the exit of executor %s failed", run.executor_id)
