"""How the job controller takes Mesos' word on its tasks: AppCore's and the trials' status
updates (a mixin of :class:`framework.job.JobController`).

Every method here runs under the controller's lock (``on_status`` takes it); each decides a
trial's or AppCore's state from one status update, as docs/design.md's "How a trial ends" says:
a recorded final result wins over whatever Mesos says later, a lost task runs again (at most
``max_task_retries`` times), a script's failure is a FAILED trial with its stderr's tail.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
import logging
import threading
import time
from typing import TYPE_CHECKING
from typing import Any

from disauto.common import slots
from disauto.common import task_env
from disauto.common import task_usage
from disauto.common.task_states import has_ended_for_framework
from disauto.common.task_states import was_lost
from disauto.common.trial_state import TrialState
from disauto.framework.store import TrialRow
from disauto.protos import framework_pb2


if TYPE_CHECKING:
    from disauto.common.task_usage import TaskUsage
    from disauto.framework.spec import JobConfig
    from disauto.framework.store import JobStore


logger = logging.getLogger("disauto.framework.job")

SLOT_LOST_REASONS = frozenset({"REASON_EXECUTOR_TERMINATED",
                               "REASON_EXECUTOR_REGISTRATION_TIMEOUT"})
"""A warm slot's task that ended for one of these was lost with its slot (the executor died or
never started), not failed by its script: it is queued again as a lost task is."""

MEMORY_LIMITATION = "REASON_CONTAINER_LIMITATION_MEMORY"
"""The reason of a task its container's memory limit killed (Mesos' cgroups/mem isolator)."""

MAX_PORT_RETRIES = 10
"""Launches of AppCore again, uncounted, after it found its offered port taken."""


ON_AN_AGENT = frozenset({TrialState.LAUNCHING, TrialState.RUNNING})
"""Trial states whose task is launched and not yet ended."""
ENDED_BY_THE_FRAMEWORK = frozenset({TrialState.TIMEOUT, TrialState.PRUNED, TrialState.KILLED})
"""Trial states the framework records before its task ends (and kills the task)."""


def tasks_left_running(trials: list[TrialRow], store: JobStore) -> set[str]:
    """The tasks of trials an earlier framework of the job ended itself (timed out, pruned,
    killed) and of which no terminal status is recorded: its kill may have died with it, and
    the task may still run (on a warm slot, which must not look idle while it does)."""
    ended = {str(u["task_id"]) for u in store.task_updates()
             if has_ended_for_framework(str(u["state"]))}
    return {t.task_id for t in trials
            if t.task_id and t.state in ENDED_BY_THE_FRAMEWORK and t.task_id not in ended}


class TaskStatusHandling:
    """Mesos status updates of the job's tasks (part of :class:`framework.job.JobController`)."""

    if TYPE_CHECKING:
        config: JobConfig
        store: JobStore
        _lock: threading.RLock
        _trials: dict[int, TrialRow]
        _task_to_trial: dict[str, int]
        _appcore_task_id: str
        _appcore_state: str
        _appcore_attempt: int
        _appcore_address: str
        _appcore_failures: int
        _port_retries: int
        _outcome: int | None
        _ended_trial_tasks: set[str]
        _finishing_tasks: set[str]
        _slot_tasks: set[str]
        _on_pending: Callable[[], None]
        _log_tail: Callable[[Mapping[str, Any]], str]
        memory_note: Callable[[int], str]
        exact_usage: Callable[[int, TaskUsage], None]

        _kills_on_resume: set[str]

        def finish(self, outcome: int, message: str) -> None: ...
        def _queue_again(self, trial: TrialRow, message: str) -> None: ...
        def _set_state(self, trial: TrialRow, state: TrialState, message: str) -> None: ...

    def kills_on_resume(self) -> list[str]:
        """Once: the tasks an earlier framework of the job ended and may not have killed
        (:func:`tasks_left_running`), for the resumed framework to kill."""
        with self._lock:
            out = sorted(self._kills_on_resume & self._ended_trial_tasks)
            self._kills_on_resume.clear()
            return out

    def slot_tasks_in_flight(self) -> dict[str, str]:
        """Executor id → the task the record says runs on it (what a resumed framework's
        adopted slots are busy with): a trial's in flight, or one ended by the framework whose
        task has not ended yet."""
        with self._lock:
            return {t.executor_id: t.task_id for t in self._trials.values()
                    if t.executor_id and t.task_id
                    and (t.state in ON_AN_AGENT or t.task_id in self._ended_trial_tasks)}

    def on_status(self, status: Mapping[str, Any]) -> None:
        """Record a Mesos status update (before the scheduler acknowledges it)."""
        task_id = str(status.get("task_id", {}).get("value", ""))
        state = str(status.get("state", ""))
        self.store.add_task_update(status)
        pending = False
        with self._lock:
            if task_id == self._appcore_task_id or task_id.startswith("appcore-"):
                pending = self._on_appcore_status(task_id, state, status)
            elif task_id in self._task_to_trial:
                trial = self._trials[self._task_to_trial[task_id]]
                if trial.task_id == task_id:
                    pending = self._on_trial_status(trial, state, status)
                else:
                    logger.info("status %s of %s, an earlier launch of trial %d", state,
                                task_id, trial.number)
            elif slots.is_warmup_task(task_id):
                if state in ("TASK_FAILED", "TASK_ERROR", "TASK_LOST", "TASK_DROPPED"):
                    logger.warning("slot warm-up %s: %s", task_id, describe_status(status))
            else:
                logger.warning("status %s for unknown task %s", state, task_id)
        if pending:
            self._on_pending()

    def _on_appcore_status(self, task_id: str, state: str, status: Mapping[str, Any]) -> bool:
        if task_id != self._appcore_task_id:
            return False  # an earlier attempt, already replaced
        if state == "TASK_RUNNING" and self._appcore_state == "LAUNCHING":
            self._appcore_state = "RUNNING"
            self.store.update_appcore_run(self._appcore_attempt, state="RUNNING")
            return False
        if not has_ended_for_framework(state):
            return False
        self.store.update_appcore_run(self._appcore_attempt, state=state, ended_at=time.time())
        self._appcore_address = ""
        if self._outcome is not None:
            self._appcore_state = "ENDED"
            return False
        why = describe_status(status) + self._tail(status)
        if port_was_taken(status) and self._port_retries < MAX_PORT_RETRIES:
            # Another process on the agent holds the offered port: not AppCore's failure.
            self._port_retries += 1
            logger.warning("AppCore %s found its port taken (%s); launching it again",
                           task_id, why)
            self._appcore_state = "WAITING"
            return True
        self._appcore_failures += 1
        if self._appcore_failures > self.config.max_appcore_restarts:
            self._appcore_state = "ENDED"
            self.finish(framework_pb2.ERROR,
                        f"AppCore failed {self._appcore_failures} times; last: {why}")
            return False
        logger.warning("AppCore %s ended (%s); relaunching it", task_id, why)
        self._appcore_state = "WAITING"
        return True

    @staticmethod
    def _has_result(trial: TrialRow) -> bool:
        """Whether the trial's final report, with the objective, is recorded."""
        return trial.final_reported and trial.objective is not None

    def _on_trial_status(self, trial: TrialRow, state: str, status: Mapping[str, Any]) -> bool:
        """Record a status of the trial's task; True when the trial waits for an offer again."""
        if has_ended_for_framework(state):
            exact = task_usage.read_status_data(status.get("data"))
            if exact is not None:  # the executor measured the task when it ended
                self.exact_usage(trial.number, exact)
        if trial.terminal:
            if has_ended_for_framework(state):
                self._ended_trial_tasks.discard(trial.task_id)
                self._finishing_tasks.discard(trial.task_id)
            return False
        if state == "TASK_RUNNING":
            if trial.state != TrialState.RUNNING:
                trial.started_at = time.time()
                self.store.update_trial(trial.number, started_at=trial.started_at)
                self._set_state(trial, TrialState.RUNNING, "")
            return False
        if not has_ended_for_framework(state):
            return False
        if self._retry_lost(trial, state, status):
            return True
        if self._has_result(trial):
            # A recorded final result is the trial's result whatever Mesos later says of its
            # task (killed at the job's end, lost with its agent, failed after reporting).
            note = "" if state == "TASK_FINISHED" else f"completed; then {describe_status(status)}"
            self._set_state(trial, TrialState.COMPLETED, note)
        elif state == "TASK_FINISHED":
            if trial.objective is not None:
                self._set_state(trial, TrialState.COMPLETED, "")
            elif trial.metrics:
                self._set_state(trial, TrialState.FAILED, (
                    f"the runner reported {', '.join(sorted(trial.metrics))} but not the "
                    f"objective {self.config.search.objective!r}"
                ))
            else:
                self._set_state(trial, TrialState.FAILED, (
                    "the runner exited without reporting a result (call "
                    f"apprunner_sdk.report({self.config.search.objective}=..., final=True))"
                ))
        elif state == "TASK_KILLED":
            self._set_state(trial, TrialState.KILLED, describe_status(status))
        else:
            self._set_state(trial, TrialState.FAILED, describe_status(status)
                            + self._memory(trial, status) + self._tail(status))
        return False

    def _memory(self, trial: TrialRow, status: Mapping[str, Any]) -> str:
        """For a trial killed for its memory: what telemetry measured of it, and the limit."""
        if status.get("reason") != MEMORY_LIMITATION:
            return ""
        note = self.memory_note(trial.number)
        return f"; {note}" if note else ""

    def _retry_lost(self, trial: TrialRow, state: str, status: Mapping[str, Any]) -> bool:
        """Queue a trial again when its task was lost (not failed by its script)."""
        reason = str(status.get("reason", ""))
        lost = was_lost(state, reason) or (
            reason in SLOT_LOST_REASONS and _on_a_slot(trial.task_id, status, self._slot_tasks))
        if (not lost or self._has_result(trial) or self._outcome is not None
                or trial.retries >= self.config.max_task_retries):
            return False
        logger.warning("trial %d: %s; launching it again (retry %d of %d)", trial.number,
                       describe_status(status), trial.retries + 1, self.config.max_task_retries)
        self._queue_again(trial, f"launched again after {describe_status(status)}")
        return True

    def _tail(self, status: Mapping[str, Any]) -> str:
        try:
            tail = self._log_tail(status).strip()
        except Exception as err:  # noqa: BLE001 - best effort, never fatal
            logger.debug("cannot read the task's stderr: %s", err)
            return ""
        return f"; stderr: {tail}" if tail else ""


def _on_a_slot(task_id: str, status: Mapping[str, Any], slot_tasks: set[str]) -> bool:
    """Whether the task ran on a warm slot: launched so by this framework, or (a framework
    resumed since) the agent names a custom executor other than the task's own command
    executor, whose id is the task's (Mesos)."""
    executor_id = str((status.get("executor_id") or {}).get("value", ""))
    return task_id in slot_tasks or bool(executor_id and executor_id != task_id)


def port_was_taken(status: Mapping[str, Any]) -> bool:
    """Whether a task's status says its command exited with EXIT_PORT_TAKEN."""
    return str(status.get("state")) == "TASK_FAILED" and str(status.get("message", "")) \
        .endswith(f"exited with status {task_env.EXIT_PORT_TAKEN}")


def describe_status(status: Mapping[str, Any]) -> str:
    state = str(status.get("state", "?"))
    parts = [state]
    if status.get("reason"):
        parts.append(str(status["reason"]))
    text = " ".join(parts)
    if status.get("message"):
        text += f": {status['message']}"
    return text
