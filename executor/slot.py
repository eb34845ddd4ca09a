"""The slot's pymesos executor: each LAUNCH runs one trial's command, each KILL ends one.

Status updates are those of Mesos' command executor: TASK_STARTING when the command is about to
start, TASK_RUNNING once it runs, then TASK_FINISHED (status 0) or TASK_FAILED with the exit in
the message ("Command exited with status 3"), TASK_KILLED after a KILL. A terminal update of a
task whose process the executor reaped carries what it used in its ``data``
(``common/task_usage.py``). SHUTDOWN kills every
task (SIGTERM, a grace period shorter than the executor's own, SIGKILL), reports them
TASK_KILLED, and returns, after which pymesos ends the process.

A task's sandbox is ``<executor sandbox>/tasks/<task id>/`` (``common.slots``): its stdout and
stderr are there, and it sees the job's files the agent fetched once into the executor's sandbox
through symbolic links (shared by the slot's trials: a trial that changes one changes it for
the next; the links are relative, so they resolve inside a slot's container too).

With a :class:`executor.container.SlotContainer` (``--docker-image``) each task's command runs
in the slot's one container instead of on the host, and SHUTDOWN removes the container; with
``--slot-preload`` too, the pre-imported interpreter is the container's Python, and each trial
is forked there.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
import logging
import os
from pathlib import Path
import threading
from typing import Any

from pymesos import Executor

from disauto.common import slots
from disauto.common import task_env
from disauto.common import task_usage
from disauto.common.auto_preload import DENIED
from disauto.executor.container import ContainerError
from disauto.executor.container import ContainerTaskProcess
from disauto.executor.container import SlotContainer
from disauto.executor.container import task_limits
from disauto.executor.forkserver import ZYGOTE_COPY
from disauto.executor.forkserver import ZYGOTE_LOG
from disauto.executor.forkserver import ZYGOTE_SOCKET
from disauto.executor.forkserver import ForkServer
from disauto.executor.forkserver import ForkServerError
from disauto.executor.process import GroupProcess
from disauto.executor.process import TaskProcess
from disauto.executor.process import describe_exit
from disauto.executor.task_output import FIFO_DIR
from disauto.executor.task_output import TaskOutput


logger = logging.getLogger("disauto.executor")

SHUTDOWN_GRACE_SHARE = 0.5
"""The part of the executor's shutdown grace period its tasks get between SIGTERM and SIGKILL
(the rest is for reporting them before the agent kills the executor)."""
ENDED_KEPT = 1024
"""Ended task ids remembered: a slot's memory stays flat however many trials it runs."""
TRIAL_OWN = frozenset({task_env.TRIAL_NUMBER, task_env.TRIAL_TOKEN, task_env.PARAMS,
                       task_env.OUTPUT_DIR, "MESOS_TASK_ID"})
"""Variables of one trial, left out of the slot's pre-imported interpreter."""
OWN_FILES = frozenset({"stdout", "stderr", slots.TASKS_DIR, ZYGOTE_LOG, ZYGOTE_COPY,
                       ZYGOTE_SOCKET, FIFO_DIR})


READY = "the slot is ready"
"""A warm-up's message when its slot is ready with all it was asked to preload."""


def ready_message(skipped: list[tuple[str, str]]) -> str:
    """A finished warm-up's message: ready, and the optional modules it did not preload."""
    if not skipped:
        return READY
    text = "; ".join(f"{name} ({why})" for name, why in skipped)
    return f"{READY}; not preloaded: {text}"[:400]


def _grace_of(task: Mapping[str, Any]) -> float:
    nanos = (task.get("kill_policy") or {}).get("grace_period", {}).get("nanoseconds")
    return int(nanos) / 1e9 if nanos is not None else slots.DEFAULT_KILL_GRACE


class SlotExecutor(Executor):  # type: ignore[misc]  # pymesos is untyped
    """Runs the tasks of one slot, each in a fresh process group.

    Args:
        sandbox: the executor's sandbox (its working directory).
        shutdown_grace: the executor's shutdown grace period, in seconds.
        container: the slot's container, when its trials run in one (``--docker-image``).
    """

    def __init__(self, sandbox: Path, shutdown_grace: float,
                 container: SlotContainer | None = None) -> None:
        self.sandbox = sandbox
        self.shutdown_grace = shutdown_grace
        self.container = container
        self._lock = threading.Lock()
        self._tasks: dict[str, tuple[GroupProcess | ContainerTaskProcess, float]] = {}
        self._outputs: dict[str, TaskOutput] = {}
        self._forkserver: ForkServer | None = None
        """The slot's pre-imported interpreter (``--slot-preload``), started by its first
        trial that asks for one."""
        self._forkserver_key: tuple[object, ...] = ()
        """What its trials asked of it (a trial that asks otherwise gets another)."""
        self._ended: OrderedDict[str, None] = OrderedDict()
        """The latest ended tasks (at most :data:`ENDED_KEPT`), so a late KILL is ignored."""
        self.launched = 0

    def registered(self, driver: Any, executor_info: Any, framework_info: Any,
                   agent_info: Any) -> None:
        logger.info("slot %s registered on %s (pid %d)", executor_info["executor_id"]["value"],
                    agent_info.get("hostname"), os.getpid())

    def launchTask(self, driver: Any, task: Any) -> None:  # noqa: N802 - pymesos API
        # Runs on pymesos' thread, which lives as long as the executor: the task's shell dies
        # with the thread that forked it (PR_SET_PDEATHSIG), so it must not be a short one.
        task_id = str(task["task_id"]["value"])
        output: TaskOutput | None = None
        try:
            slot_task = slots.read_slot_task(str(task.get("data") or ""))
            if slot_task.warmup is not None:
                self._warm_up(driver, task_id, slot_task)
                return
            sandbox = self._task_sandbox(task_id)
            self._update(driver, task_id, "TASK_STARTING")
            # Capped and rotated as the agent caps a command task's output; a task that opens
            # its output by path (a fork, an exec in the container) gets named pipes.
            plain = self.container is None and slot_task.preload is None
            output = TaskOutput(sandbox, None if plain else self.sandbox / FIFO_DIR)
            process: GroupProcess | ContainerTaskProcess
            if self.container is not None and slot_task.preload is not None:
                self.container.ensure(*task_limits(task.get("resources") or ()))
                env = self.container.task_environment(task_id, slot_task.environment, sandbox)
                process = self._fork(slot_task.preload, env, sandbox, output)
            elif self.container is not None:
                process = self.container.run(task_id, slot_task.command,
                                             slot_task.environment, sandbox,
                                             task.get("resources") or (), output.fifos)
            else:
                env = self._environment(task_id, sandbox, slot_task.environment)
                process = (self._fork(slot_task.preload, env, sandbox, output)
                           if slot_task.preload is not None
                           else TaskProcess(slot_task.command, env, sandbox, output))
        except (slots.TaskDataError, ForkServerError, OSError, ContainerError) as err:
            if output is not None:
                output.drain(0)
            logger.warning("task %s cannot start: %s", task_id, err)
            self._update(driver, task_id, "TASK_FAILED", message=f"cannot start: {err}")
            return
        with self._lock:
            self._outputs[task_id] = output
            self._tasks[task_id] = (process, _grace_of(task))
            self.launched += 1
        logger.info("task %s runs as process group %d", task_id, process.pid)
        self._update(driver, task_id, "TASK_RUNNING")
        threading.Thread(target=self._reap, args=(driver, task_id, process),
                         name=f"reap-{task_id}", daemon=True).start()

    def _warm_up(self, driver: Any, task_id: str, slot_task: slots.SlotTask) -> None:
        """Start what the slot's trials share -- its container, its pre-imported interpreter
        -- and end the warm-up task: FINISHED, or FAILED with why the slot cannot run them
        (its trials would fail the same way). On pymesos' thread, as a trial's start: the
        agent's next LAUNCH for this slot waits until the slot is ready."""
        assert slot_task.warmup is not None
        self._update(driver, task_id, "TASK_RUNNING")
        skipped: list[tuple[str, str]] = []
        try:
            if self.container is not None:
                self.container.ensure(slot_task.warmup.cpus, slot_task.warmup.mem_mb)
            if slot_task.preload is not None:
                env = self._environment(task_id, self.sandbox, slot_task.environment) \
                    if self.container is None else self.container.task_environment(
                        task_id, slot_task.environment, self.sandbox)
                skipped = self._preloaded(slot_task.preload, env).skipped
        except (ForkServerError, OSError, ContainerError) as err:
            logger.warning("slot warm-up %s failed: %s", task_id, err)
            self._remember_ended(task_id)
            self._update(driver, task_id, "TASK_FAILED", message=f"cannot warm up: {err}")
            return
        logger.info("slot warmed up (%s)", task_id)
        self._remember_ended(task_id)
        self._update(driver, task_id, "TASK_FINISHED", message=ready_message(skipped))

    def _preloaded(self, preload: slots.Preload, env: Mapping[str, str]) -> ForkServer:
        """The slot's pre-imported interpreter for ``preload`` (started, or started again
        after it ended or when the trial wants another interpreter, here)."""
        program = preload.program
        key = (program.python, program.options, preload.modules, preload.optional)
        server = self._forkserver
        if server is None or not server.alive or self._forkserver_key != key:
            if server is not None:
                server.close()
            self._forkserver = None
            server = self._forkserver = self._start_forkserver(preload,
                                                               self._slot_environment(env))
            self._forkserver_key = key
        return server

    def _start_forkserver(self, preload: slots.Preload, env: Mapping[str, str]) -> ForkServer:
        """Start the interpreter; without each optional module that made it unsafe to fork,
        and without any when it died importing them (``--slot-preload auto``: the trials
        import those themselves). Each one left out is one line of the executor's log."""
        optional, left_out = list(preload.optional), []
        while True:
            try:
                server = ForkServer(preload.program, preload.modules, env, self.sandbox,
                                    self.container, tuple(optional), tuple(DENIED))
                break
            except ForkServerError as err:
                if err.module in optional:
                    optional.remove(str(err.module))
                    left_out.append((str(err.module), err.why))
                elif optional and err.died:
                    left_out += [(name, f"the interpreter died importing the script's modules "
                                        f"({err})") for name in optional]
                    optional = []
                else:
                    raise
        server.skipped = [*left_out, *server.skipped]
        for name, why in server.skipped:
            logger.warning("--slot-preload auto: %s is not preloaded (%s); its trials import "
                           "it themselves", name, why)
        return server

    def _fork(self, preload: slots.Preload, env: dict[str, str], sandbox: Path,
              output: TaskOutput) -> GroupProcess:
        """The trial forked from the slot's pre-imported interpreter."""
        program = preload.program
        server = self._preloaded(preload, env)
        return server.launch(program.target, program.is_module, program.args, env, sandbox,
                             output.fifos)

    def _slot_environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """The interpreter's environment: a trial's, less what is the trial's own, with the
        slot's sandbox as ``MESOS_SANDBOX`` (a forked trial's ``/proc/<pid>/environ`` shows
        this one: it belongs to the slot, not to the trial that started it)."""
        out = {k: v for k, v in env.items() if k not in TRIAL_OWN}
        sandbox = str(self.sandbox) if self.container is None \
            else self.container.inside(self.sandbox)
        out.update({"MESOS_SANDBOX": sandbox, "MESOS_DIRECTORY": sandbox})
        return out

    def _task_sandbox(self, task_id: str) -> Path:
        sandbox = self.sandbox / slots.task_sandbox(task_id)
        sandbox.mkdir(parents=True, exist_ok=True)
        for entry in self.sandbox.iterdir():
            if entry.name in OWN_FILES or entry.name.startswith(("stdout.", "stderr.")):
                continue
            link = sandbox / entry.name
            if not link.exists() and not link.is_symlink():
                link.symlink_to(os.path.relpath(entry, sandbox))
        return sandbox

    @staticmethod
    def _environment(task_id: str, sandbox: Path, extra: Mapping[str, str]) -> dict[str, str]:
        """The executor's environment (the agent's, as a command task's) for one task: its own
        sandbox and task id in Mesos' variables, the executor's own ones removed."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("MESOS_EXECUTOR_", "LIBPROCESS_"))}
        env.update({"MESOS_SANDBOX": str(sandbox), "MESOS_DIRECTORY": str(sandbox),
                    "MESOS_TASK_ID": task_id})
        env.update(extra)
        return env

    def _reap(self, driver: Any, task_id: str,
              process: GroupProcess | ContainerTaskProcess) -> None:
        returncode = process.wait()
        with self._lock:
            output = self._outputs.pop(task_id, None)
        if output is not None:
            output.drain()  # its last output is in its files before its end is reported
        self._remember_ended(task_id)
        try:
            self._report_end(driver, task_id, process, returncode)
        finally:
            with self._lock:  # only now: SHUTDOWN waits for the report to be sent
                self._tasks.pop(task_id, None)

    def _remember_ended(self, task_id: str) -> None:
        with self._lock:
            self._ended[task_id] = None  # a late KILL is ignored from now on
            while len(self._ended) > ENDED_KEPT:
                self._ended.popitem(last=False)

    def _report_end(self, driver: Any, task_id: str,
                    process: GroupProcess | ContainerTaskProcess, returncode: int) -> None:
        message = describe_exit(returncode)
        if getattr(process, "orphaned", False) and not process.killed.is_set():
            # Not the script's doing: the slot broke. Its trial is lost with the slot (the
            # framework runs it again), and the executor ends, as a slot that died would.
            self._update(driver, task_id, "TASK_FAILED", reason="REASON_EXECUTOR_TERMINATED",
                         message=f"the slot's pre-imported interpreter died ({message})")
            logger.error("task %s: the pre-imported interpreter died; the slot ends", task_id)
            driver.stop()
            return
        usage = getattr(process, "usage", None)
        data = task_usage.status_data(usage) if usage is not None else ""
        if process.killed.is_set():
            self._update(driver, task_id, "TASK_KILLED", message=message, data=data)
        elif returncode == 0:
            self._update(driver, task_id, "TASK_FINISHED", message=message, data=data)
        else:
            self._update(driver, task_id, "TASK_FAILED", message=message, data=data)
        logger.info("task %s: %s", task_id, message)

    def killTask(self, driver: Any, task_id: Any) -> None:  # noqa: N802 - pymesos API
        key = str(task_id["value"])
        with self._lock:
            entry = self._tasks.get(key)
            ended = key in self._ended
        if ended:
            logger.info("kill of %s, which already ended: its last update stands", key)
            return
        if entry is None:
            # Not running here (ended, or never launched): Mesos' executors answer KILLED.
            self._update(driver, key, "TASK_KILLED", message="not running on this executor")
            return
        process, grace = entry
        threading.Thread(target=process.kill, args=(grace,), name=f"kill-{key}",
                         daemon=True).start()

    def shutdown(self, driver: Any) -> None:
        """Kill every task, wait for their reports, and return (pymesos then exits)."""
        with self._lock:
            running = list(self._tasks.items())
        grace = min(slots.DEFAULT_KILL_GRACE, self.shutdown_grace * SHUTDOWN_GRACE_SHARE)
        logger.info("shutdown: killing %d task(s)", len(running))
        killers = [threading.Thread(target=process.kill, args=(grace,), daemon=True)
                   for _, (process, _) in running]
        for killer in killers:
            killer.start()
        for killer in killers:
            killer.join()
        for task_id, (process, _) in running:
            process.wait()
            # The reaper reports it; wait a moment for that report to be sent.
            for _ in range(50):
                with self._lock:
                    if task_id not in self._tasks:
                        break
                threading.Event().wait(0.01)
        if self._forkserver is not None:
            self._forkserver.close()
        if self.container is not None:
            self.container.remove()

    def frameworkMessage(self, driver: Any, message: Any) -> None:  # noqa: N802 - pymesos API
        logger.info("framework message ignored (%d bytes)", len(str(message)))

    def error(self, driver: Any, message: str) -> None:
        logger.error("agent error: %s", message)

    @staticmethod
    def _update(driver: Any, task_id: str, state: str, message: str = "",
                reason: str | None = None, data: str = "") -> None:
        status: dict[str, Any] = {"task_id": {"value": task_id}, "state": state}
        if message:
            status["message"] = message
        if data:
            status["data"] = data  # what the task used (common/task_usage.py)
        if reason:
            status["reason"] = reason
        try:
            driver.sendStatusUpdate(status)
        except Exception:  # noqa: BLE001 - the agent went away; the executor ends with it
            logger.exception("cannot send %s of %s", state, task_id)
