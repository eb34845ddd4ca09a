"""How the job takes Mesos' word on its tasks: AppCore's and the trials' status updates.

:class:`TaskStatuses` decides a trial's or AppCore's state from one status update, as
docs/design.md's "How a trial ends" says: a recorded final result wins over whatever Mesos says
later, a lost task runs again (at most ``max_task_retries`` times), a script's failure runs
the trial again (at most ``--trial-retries`` times) and then is a FAILED trial with its stderr's
tail, and AppCore is relaunched until it failed more than
``max_appcore_restarts`` times. It reads and changes the trial book and AppCore's life through
their methods, under the job's lock (the controller holds it around :meth:`TaskStatuses.on`).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
import logging
from typing import Any
from typing import Protocol

from disauto.common import slots
from disauto.common import task_env
from disauto.common import task_usage
from disauto.common.objectives import Objectives
from disauto.common.task_states import has_ended_for_framework
from disauto.common.task_states import was_lost
from disauto.common.task_usage import TaskUsage
from disauto.common.telemetry import Sample
from disauto.common.trial_state import TrialState
from disauto.framework.job.appcore import AppCoreLife
from disauto.framework.job.book import TRY_FAILED
from disauto.framework.job.book import TrialBook
from disauto.framework.job.book import failed_tries
from disauto.framework.job.book import has_result
from disauto.framework.job.book import lost_retries
from disauto.framework.spec import JobConfig
from disauto.framework.store import TrialRow
from disauto.protos import framework_pb2


logger = logging.getLogger("disauto.framework.job")

SLOT_LOST_REASONS = frozenset({"REASON_EXECUTOR_TERMINATED",
                               "REASON_EXECUTOR_REGISTRATION_TIMEOUT"})
"""A warm slot's task that ended for one of these was lost with its slot (the executor died or
never started), not failed by its script: it is queued again as a lost task is."""

MEMORY_LIMITATION = "REASON_CONTAINER_LIMITATION_MEMORY"
"""The reason of a task its container's memory limit killed (Mesos' cgroups/mem isolator)."""


class Measures(Protocol):
    """What telemetry measures of the trials (``framework/telemetry/monitor.py``'s loop)."""

    def memory_note(self, trial: int) -> str:
        """What was measured of a trial's memory ("" when nothing was)."""

    def record_exact(self, trial: int, exact: TaskUsage) -> None:
        """Take what an executor measured of a trial's task when it ended."""

    def record_samples(self, samples: list[Sample]) -> None:
        """Store samples measured elsewhere (a runner's GPU samples) and fold them in."""


class TaskStatuses:
    """The status updates of one job's tasks.

    Args:
        config: the job's configuration as it is now.
        book: the job's trials.
        appcore: AppCore's life.
        ended: whether the job has ended.
        finish: ends the job (an outcome, a message).
        log_tail: given a terminal TaskStatus, the tail of the task's stderr ("" if none).
        measures: the job's telemetry, or None while it is off.
    """

    def __init__(self, config: Callable[[], JobConfig], book: TrialBook, appcore: AppCoreLife,
                 *, ended: Callable[[], bool], finish: Callable[[int, str], None],
                 log_tail: Callable[[Mapping[str, Any]], str],
                 measures: Measures | None) -> None:
        self._config = config
        self._book = book
        self._appcore = appcore
        self._ended = ended
        self._finish = finish
        self._log_tail = log_tail
        self._measures = measures

    def on(self, status: Mapping[str, Any]) -> bool:
        """Take one status update (recorded already); True when something waits for an offer
        again (a relaunch, a retry)."""
        task_id = str(status.get("task_id", {}).get("value", ""))
        state = str(status.get("state", ""))
        if task_id == self._appcore.task_id or task_id.startswith("appcore-"):
            return self._on_appcore(task_id, state, status)
        trial = self._book.of_task(task_id)
        if trial is not None and trial.task_id == task_id:
            return self._on_trial(trial, state, status)
        if trial is not None:
            logger.info("status %s of %s, an earlier launch of trial %d", state, task_id,
                        trial.number)
        elif slots.is_warmup_task(task_id):
            if state in ("TASK_FAILED", "TASK_ERROR", "TASK_LOST", "TASK_DROPPED"):
                logger.warning("slot warm-up %s: %s", task_id, describe_status(status))
        else:
            logger.warning("status %s for unknown task %s", state, task_id)
        return False

    def _on_appcore(self, task_id: str, state: str, status: Mapping[str, Any]) -> bool:
        life = self._appcore
        if task_id != life.task_id:
            return False  # an earlier attempt, already replaced
        if state == "TASK_RUNNING":
            life.running()
            return False
        if not has_ended_for_framework(state):
            return False
        life.task_ended(state)
        if self._ended():
            life.end()
            return False
        why = describe_status(status) + self._tail(status)
        if port_was_taken(status) and life.port_taken():
            # Another process on the agent holds the offered port: not AppCore's failure.
            logger.warning("AppCore %s found its port taken (%s); launching it again",
                           task_id, why)
            life.wait_again()
            return True
        failures = life.failed()
        if failures > self._config().max_appcore_restarts:
            life.end()
            self._finish(framework_pb2.ERROR, f"AppCore failed {failures} times; last: {why}")
            return False
        logger.warning("AppCore %s ended (%s); relaunching it", task_id, why)
        life.wait_again()
        return True

    def _on_trial(self, trial: TrialRow, state: str, status: Mapping[str, Any]) -> bool:
        """Record a status of the trial's task; True when the trial waits for an offer again."""
        ended = has_ended_for_framework(state)
        if ended and self._measures is not None:
            exact = task_usage.read_status_data(status.get("data"))
            if exact is not None:  # the executor measured the task when it ended
                self._measures.record_exact(trial.number, exact)
        if trial.terminal:
            if ended:
                self._book.task_ended(trial.task_id)
            return False
        if state == "TASK_RUNNING":
            if trial.state != TrialState.RUNNING:
                self._book.started(trial)
            return False
        if not ended:
            return False
        if self._retry_lost(trial, state, status):
            return True
        verdict = self._verdict(trial, state, status)
        if self._retry_failed(trial, state, status, verdict):
            return True
        self._book.set_state(trial, *verdict)
        return False

    def _verdict(self, trial: TrialRow, state: str,
                 status: Mapping[str, Any]) -> tuple[TrialState, str]:
        """How the trial ended, by its task's terminal ``state``: its state and message."""
        if has_result(trial):
            # A recorded final result is the trial's result whatever Mesos later says of its
            # task (killed at the job's end, lost with its agent, failed after reporting).
            note = "" if state == "TASK_FINISHED" else f"completed; then {describe_status(status)}"
            return TrialState.COMPLETED, note
        search = self._config().search
        objective = search.objective
        if state == "TASK_FINISHED":
            if trial.objective is not None:
                return TrialState.COMPLETED, ""
            if trial.metrics:
                missing = Objectives.from_spec(search).missing(trial.metrics)
                return TrialState.FAILED, (
                    f"the runner reported {', '.join(sorted(trial.metrics))} but not the "
                    f"objective {', '.join(repr(name) for name in missing)}")
            return TrialState.FAILED, (
                "the runner exited without reporting a result (call "
                f"apprunner_sdk.report({objective}=..., final=True))")
        if state == "TASK_KILLED":
            return TrialState.KILLED, describe_status(status)
        return TrialState.FAILED, (describe_status(status) + self._memory(trial, status)
                                   + self._tail(status))

    def _memory(self, trial: TrialRow, status: Mapping[str, Any]) -> str:
        """For a trial killed for its memory: what telemetry measured of it, and the limit."""
        if status.get("reason") != MEMORY_LIMITATION or self._measures is None:
            return ""
        note = self._measures.memory_note(trial.number)
        return f"; {note}" if note else ""

    def _retry_lost(self, trial: TrialRow, state: str, status: Mapping[str, Any]) -> bool:
        """Queue a trial again when its task was lost (not failed by its script)."""
        reason = str(status.get("reason", ""))
        lost = was_lost(state, reason) or (
            reason in SLOT_LOST_REASONS and _on_a_slot(trial.task_id, status, self._book))
        retries = self._config().max_task_retries
        if not lost or has_result(trial) or self._ended() or lost_retries(trial) >= retries:
            return False
        logger.warning("trial %d: %s; launching it again (retry %d of %d)", trial.number,
                       describe_status(status), lost_retries(trial) + 1, retries)
        self._book.queue_again(trial, f"launched again after {describe_status(status)}")
        return True

    def _retry_failed(self, trial: TrialRow, state: str, status: Mapping[str, Any],
                      verdict: tuple[TrialState, str]) -> bool:
        """Queue a trial again whose script failed (``verdict``: FAILED, its task failed or
        exited without a result; not lost, not refused by Mesos), at most ``--trial-retries``
        times: the try's failure is kept in the trial's tries, and AppCore, which sees the trial
        wait again, is told only how its last try ended."""
        allowed = self._config().trial_retries
        scripted = state in ("TASK_FAILED", "TASK_FINISHED") and not (
            was_lost(state, str(status.get("reason", "")))
            or str(status.get("reason", "")) in SLOT_LOST_REASONS)
        if verdict[0] != TrialState.FAILED or not scripted or self._ended() \
                or failed_tries(trial) >= allowed:
            return False
        retry = failed_tries(trial) + 1
        logger.warning("trial %d: its script failed (%s); launching it again (retry %d of %d)",
                       trial.number, verdict[1], retry, allowed)
        self._book.queue_again(trial, f"launched again after try {trial.retries + 1} failed "
                               f"(retry {retry} of --trial-retries {allowed}): {verdict[1]}",
                               outcome=TRY_FAILED, failure=verdict[1])
        return True

    def _tail(self, status: Mapping[str, Any]) -> str:
        try:
            tail = self._log_tail(status).strip()
        except Exception as err:  # noqa: BLE001 - best effort, never fatal
            logger.debug("cannot read the task's stderr: %s", err)
            return ""
        return f"; stderr: {tail}" if tail else ""


def _on_a_slot(task_id: str, status: Mapping[str, Any], book: TrialBook) -> bool:
    """Whether the task ran on a warm slot: launched so by this framework, or (a framework
    resumed since) the agent names a custom executor other than the task's own command
    executor, whose id is the task's (Mesos)."""
    executor_id = str((status.get("executor_id") or {}).get("value", ""))
    return book.on_a_slot(task_id) or bool(executor_id and executor_id != task_id)


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
