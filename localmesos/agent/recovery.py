"""An embedded agent's restart: what it checkpoints, how it dies, how the next one recovers.

Embedded agents live in the cluster's process, so an agent restart is its :class:`Agent`
object dying (:meth:`AgentRecovery.crash`) and a new one, with the same id and work dir,
recovering from the checkpoint (:meth:`AgentRecovery.recover`). What outlives the object is
what outlives a real agent's process: the processes it started (kept by the agent's
:class:`~localmesos.containerizer.launcher.Launcher`, the machine's process table), their
sandboxes and log pipes, and the meta directory (:mod:`localmesos.agent.checkpoint`).

As Mesos 1.11 (apache/mesos ``src/slave/slave.cpp``: ``recover``, ``recoverFramework``,
``Framework::recoverExecutor``, ``Executor::recoverTask``, ``_recover``,
``reregisterExecutorTimeout``, ``reregister``; ``src/slave/task_status_update_manager.cpp``):

* Only frameworks with ``checkpoint: true`` are checkpointed: their info, each executor and
  its latest run (a command task is the run of its own command executor), each task's
  TaskInfo, its status updates and their acknowledgements.
* Dying, the agent sends nothing more; the executors' connections break; the command tasks of
  frameworks that do not checkpoint die with it (their command executor exits with its agent).
* Recovering, the new agent rebuilds the checkpointed frameworks, executors and tasks (terminal
  and acknowledged ones are complete), queues again the updates not acknowledged, waits again
  for the processes that still run, kills what it does not know (orphan containers), and lets
  custom executors subscribe again for ``executor_reregistration_timeout`` (2 s); an executor
  that does not is killed, its tasks TASK_GONE (TASK_LOST without PARTITION_AWARE),
  ``REASON_EXECUTOR_REREGISTRATION_TIMEOUT``. A task whose process is gone meanwhile becomes
  TASK_FAILED, ``REASON_EXECUTOR_TERMINATED``, "Abnormal executor termination: unknown
  container". Then it re-registers with the master and sends its held updates.
"""

from __future__ import annotations

from collections.abc import Mapping
import logging
import signal
import time
from typing import Any

from disauto.localmesos.agent import sandbox as sandbox_mod
from disauto.localmesos.agent.agent_task import AgentTask
from disauto.localmesos.agent.checkpoint import RunState
from disauto.localmesos.agent.executor_run import REGISTERING
from disauto.localmesos.agent.executor_run import ExecutorRun
from disauto.localmesos.agent.executor_run import mesos_duration
from disauto.localmesos.agent.executor_run import partition_aware
from disauto.localmesos.agent.launch import sweep_sandbox
from disauto.localmesos.agent.parts import AgentParts
from disauto.localmesos.agent.state import DISCONNECTED
from disauto.localmesos.agent.state import AgentState
from disauto.localmesos.containerizer.launcher import Container
from disauto.localmesos.protocol.registration import AgentTaskReport
from disauto.localmesos.protocol.registration import ReregisterAgent


logger = logging.getLogger("disauto.localmesos.agent")


def checkpoints(framework_info: Mapping[str, Any]) -> bool:
    return bool(framework_info.get("checkpoint"))


def command_executor_info(framework_id: str, task: Mapping[str, Any]) -> dict[str, Any]:
    """The ExecutorInfo of a command task's executor (``Slave::getExecutorInfo``)."""
    task_id = str(task["task_id"]["value"])
    command = str((task.get("command") or {}).get("value", ""))
    return {"executor_id": {"value": task_id}, "framework_id": {"value": framework_id},
            "name": f"Command Executor (Task: {task_id}) (Command: sh -c '{command[:15]}')",
            "source": task_id, "command": dict(task.get("command") or {})}


class AgentRecovery:
    """Checkpoints, death and recovery (part of :class:`localmesos.agent.agent.Agent`)."""

    def __init__(self, state: AgentState, parts: AgentParts) -> None:
        self.state = state
        self.parts = parts

    # -- checkpoints -----------------------------------------------------------------------

    def checkpoint_launch(self, task: AgentTask, executor_info: Mapping[str, Any] | None,
                           gpus: tuple[int, ...] = ()) -> None:
        """Under the lock: a task given to the agent (and its executor's run when new)."""
        if not checkpoints(task.framework_info) or self.state.crashed.is_set():
            return
        info = executor_info or command_executor_info(task.framework_id, task.info)
        run = self.state.meta.run(task.framework_id, task.executor_id, task.container_id)
        if not run.exists():
            self.state.meta.write_run(task.framework_info, info, task.container_id, gpus)
        self.state.meta.write_task(task.framework_id, task.executor_id, task.container_id,
                              task.info)

    def checkpoint_pid(self, framework_info: Mapping[str, Any], framework_id: str,
                        executor_id: str, container_id: str, pid: int) -> None:
        if checkpoints(framework_info) and not self.state.crashed.is_set():
            self.state.meta.write_pid(framework_id, executor_id, container_id, pid)

    def checkpoint_update(self, task: AgentTask, status: Mapping[str, Any]) -> None:
        """Under the lock: an update of the task, before it is sent."""
        if checkpoints(task.framework_info) and not self.state.crashed.is_set():
            record = {k: v for k, v in status.items() if k != "framework_id"}
            self.state.meta.append_update(task.framework_id, task.executor_id, task.container_id,
                                     task.task_id, {"update": record})

    def checkpoint_ack(self, framework_id: str, task_id: str, uuid_b64: str) -> None:
        with self.state.lock:
            task = self.state.tasks.get((framework_id, task_id))
            if task is None or not checkpoints(task.framework_info) or self.state.crashed.is_set():
                return
            self.state.meta.append_update(framework_id, task.executor_id, task.container_id,
                                     task_id, {"ack": uuid_b64})

    def forget_checkpoint(self, framework_id: str, executor_id: str) -> None:
        """Under the lock: an executor that ended with every task's end acknowledged."""
        if self.state.crashed.is_set() or (framework_id, executor_id) in self.state.executors:
            return
        if any(t.framework_id == framework_id and t.executor_id == executor_id
               for t in self.state.tasks.values()):
            return
        self.state.meta.remove_executor(framework_id, executor_id)

    # -- death -----------------------------------------------------------------------------

    def crash(self) -> None:
        """The agent's process dies: nothing more is sent or checkpointed, the executors'
        connections break, the tasks of frameworks that do not checkpoint are killed; what
        runs for the others runs on, for the next agent to recover."""
        with self.state.lock:
            if self.state.stopped:
                return
            self.state.stopped = True
            self.state.crashed.set()
            runs = list(self.state.executors.values())
            tasks = list(self.state.tasks.values())
        logger.warning("Agent %s dies (its process is gone)", self.state.id)
        self.state.updates.stop()
        for run in runs:
            run.settled.set()
            if run.stream is not None:
                run.stream.close()
        for task in tasks:
            task.cancel.set()
            task.done.set()
            process = task.process
            if not checkpoints(task.framework_info) and not task.info.get("executor") and (
                    process is not None):
                process.signal_group(signal.SIGKILL)
                if task.sandbox is not None:
                    sweep_sandbox(task.sandbox)
        with self.state.link_cond:
            self.state.link_cond.notify_all()

    # -- recovery --------------------------------------------------------------------------

    def recover(self) -> None:
        """Rebuild the checkpointed frameworks, executors and tasks, kill the orphans, then
        (after the executors' re-registration window) re-register with the master."""
        drain = self.state.meta.drain_config()
        if drain is not None:
            self.state.drain_config = drain
        recovered: set[str] = set()
        for framework in self.state.meta.frameworks():
            for run in framework.runs:
                recovered.add(run.container_id)
                if any("executor" in task.info for task in run.tasks):
                    self._recover_executor(framework.info, run)
                else:
                    self._recover_command(framework.info, run)
        for container in self.state.launcher.containers():
            if container.container_id not in recovered:
                logger.info("Agent %s: destroying orphan container %s", self.state.id,
                            container.container_id)
                self.state.launcher.destroy(container.container_id)
        self.state.link_state = DISCONNECTED
        with self.state.lock:
            wait = (self.state.runtime.executor_reregistration_timeout if self.state.executors
                    else 0.0)
            self.state.start_thread(self._finish_recovery, wait, name=f"recovery-{self.state.id}")

    def _finish_recovery(self, wait: float) -> None:
        """``reregisterExecutorTimeout``, then re-registration with the master."""
        deadline = time.monotonic() + wait
        while not self.state.stopped and time.monotonic() < deadline:
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
        if self.state.stopped:
            return
        self._executors_not_back()
        if self.state.drain_config is not None:
            self.parts.draining.drain(self.state.drain_config)
        self.parts.master_link.start_reregistration()

    def _executors_not_back(self) -> None:
        """Kill the recovered executors that did not subscribe again."""
        with self.state.lock:
            late = [r for r in self.state.executors.values() if r.state == REGISTERING
                    and r.recovered]
            for run in late:
                state = "TASK_GONE" if partition_aware(run.framework_info) else "TASK_LOST"
                run.pending_termination = (
                    state, "REASON_EXECUTOR_REREGISTRATION_TIMEOUT",
                    "Executor did not reregister within "
                    f"{mesos_duration(self.state.runtime.executor_reregistration_timeout)}")
        for run in late:
            logger.info("Killing un-reregistered executor %s", run.executor_id)
            self.parts.executor_host.destroy(run)

    def _recover_task(self, framework_info: dict[str, Any], run: RunState,
                      state: Any) -> AgentTask | None:
        """Under the lock: the agent's record of a checkpointed task, its unacknowledged
        updates queued again; None for a completed one."""
        framework_id = str(framework_info["id"]["value"])
        executor_id = str(run.executor_info["executor_id"]["value"])
        sandbox = sandbox_mod.sandbox_dir(self.state.work_dir, self.state.id, framework_id,
                                          executor_id, run.container_id)
        self.state.sandboxes[(framework_id, state.task_id)] = (executor_id, sandbox)
        if state.completed:
            return None
        task = AgentTask(framework_id=framework_id, task_id=state.task_id,
                         executor_id=executor_id, container_id=run.container_id,
                         info=state.info, framework_info=framework_info, sandbox=sandbox,
                         state=state.state, kill_grace=self.state.default_kill_grace)
        task.terminal = state.state in ("TASK_FINISHED", "TASK_FAILED", "TASK_KILLED",
                                        "TASK_ERROR", "TASK_LOST", "TASK_DROPPED", "TASK_GONE",
                                        "TASK_GONE_BY_OPERATOR")
        self.state.tasks[task.key] = task
        for update in state.pending:
            self.state.updates.update(framework_id, task.task_id,
                                 {**update, "framework_id": {"value": framework_id}})
        return task

    def _recover_command(self, framework_info: dict[str, Any], run: RunState) -> None:
        """A command task: its process waited for again, or its end reported."""
        container = self.state.launcher.get(run.container_id)
        with self.state.lock:
            tasks = [t for t in (self._recover_task(framework_info, run, s) for s in run.tasks)
                     if t is not None]
            for task in tasks:
                if task.terminal:
                    continue
                task.gpus = run.gpus
                self.state.free_gpus = [g for g in self.state.free_gpus if g not in run.gpus]
                if container is not None:
                    task.process = container.process
                    self.state.start_thread(self._resume_command, task, container,
                                       name=f"task-{task.task_id}")
        for task in tasks:
            if not task.terminal and container is None:
                self.parts.reports.emit(task, "TASK_FAILED", source="SOURCE_AGENT",
                           message="Abnormal executor termination: unknown container",
                           reason="REASON_EXECUTOR_TERMINATED")

    def _resume_command(self, task: AgentTask, container: Container) -> None:
        returncode = self.parts.launch.await_exit(container)
        if returncode is not None:
            self.parts.launch.command_ended(task, container, returncode)
        task.done.set()

    def _recover_executor(self, framework_info: dict[str, Any], run: RunState) -> None:
        """A custom executor: REGISTERING again, its process waited for again."""
        framework_id = str(framework_info["id"]["value"])
        container = self.state.launcher.get(run.container_id)
        executor_id = str(run.executor_info["executor_id"]["value"])
        sandbox = sandbox_mod.sandbox_dir(self.state.work_dir, self.state.id, framework_id,
                                          executor_id, run.container_id)
        record = ExecutorRun(framework_id, executor_id, run.executor_info, framework_info,
                             run.container_id, sandbox, recovered=True, ever_sent=True,
                             gpus=run.gpus)
        with self.state.lock:
            for state in run.tasks:
                task = self._recover_task(framework_info, run, state)
                if task is not None and not task.terminal:
                    record.launched.add(task.task_id)
            self.state.free_gpus = [g for g in self.state.free_gpus if g not in run.gpus]
            self.state.executors[record.key] = record
            if container is not None:
                record.process = container.process
                self.state.start_thread(self._resume_executor, record, container,
                                   name=f"executor-{executor_id}")
        if container is None:
            record.pending_termination = (
                "TASK_FAILED", "REASON_EXECUTOR_TERMINATED",
                "Abnormal executor termination: unknown container")
            self.parts.executor_processes.executor_terminated(record, None)

    def _resume_executor(self, run: ExecutorRun, container: Container) -> None:
        returncode = self.parts.launch.await_exit(container)
        if returncode is not None or not self.state.crashed.is_set():
            self.parts.executor_processes.executor_terminated(run, returncode)

    # -- the report ------------------------------------------------------------------------

    def reregistration(self) -> ReregisterAgent:
        """What the agent tells the master when it re-registers (``ReregisterSlaveMessage``)."""
        with self.state.lock:
            tasks = tuple(
                AgentTaskReport(t.framework_id, dict(t.info), t.state,
                                t.executor_id if t.info.get("executor") else "",
                                dict(self._latest_status(t)))
                for t in self.state.tasks.values())
            executors = tuple({**run.info, "framework_id": {"value": run.framework_id}}
                              for run in self.state.executors.values())
            frameworks: dict[str, dict[str, Any]] = {}
            for t in self.state.tasks.values():
                frameworks[t.framework_id] = dict(t.framework_info)
            for run in self.state.executors.values():
                frameworks[run.framework_id] = dict(run.framework_info)
        return ReregisterAgent(self.state.id, self.parts.views.info(), tasks, executors,
                               tuple(frameworks.values()))

    def _latest_status(self, task: AgentTask) -> Mapping[str, Any]:
        pending = self.state.updates.pending(task.framework_id, task.task_id)
        return pending[-1] if pending else {}
