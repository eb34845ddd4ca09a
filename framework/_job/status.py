"""How the job takes Mesos' word on its tasks: AppCore's and the trials' status updates.

:class:`TaskStatuses` decides a trial's or AppCore's state from one status update, as
docs/design.md's "How a trial ends" says: a recorded final result wins over whatever Mesos says
later, a lost task runs again (at most ``max_task_retries`` times), a script's failure runs
the trial again (at most ``--trial-retries`` times) and then is a FAILED trial with its stderr's
tail, and AppCore is relaunched until it failed more than
``max_appcore_restarts`` times. It reads and changes the trial book and AppCore's life through
their methods, under the job's lock (the controller holds it around :meth:`TaskStatuses.on`).

What a production cluster adds (the framework is PARTITION_AWARE, TASK_KILLING_STATE):

* TASK_UNREACHABLE (the agent is cut off): the trial keeps its state and its task, its message
  says since when, and it goes on if the task comes back (TASK_RUNNING again, its result);
  past ``--unreachable-timeout`` (:meth:`TaskStatuses.expire_unreachable`) it runs again as a
  lost one, and its old task is abandoned: killed whenever it shows up alive.
* A task of an agent its operator drained (``REASON_AGENT_DRAINING``) or marked gone
  (TASK_GONE_BY_OPERATOR) runs again as a lost one without counting toward
  ``max_task_retries``: an eviction, not a fault (AppCore's does not count as a failure).
* TASK_KILLING is not an end; a task that ended TASK_FINISHED is never "lost" whatever reason
  rides with it, and REASON_AGENT_REREGISTERED makes no end a loss: an agent re-registering
  reports each task in its own state with it, so a TASK_FAILED with it is the script's failure.
* A task of an earlier launch of a trial (or AppCore) that reports itself running is killed:
  one trial never has two live tasks.
* A task its agent could not run as the job's user (:mod:`framework._job.task_user`: no such
  user there, or an agent that cannot switch users) is neither lost nor the script's failure:
  the trial is FAILED with one line saying what to do (``--user``), and AppCore's ends the job
  at once (UNSCHEDULABLE): every launch again would be refused alike.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import replace
import logging
import time
from typing import Any
from typing import Protocol

from disauto.common import slots
from disauto.common import task_env
from disauto.common import task_usage
from disauto.common.durations import format_duration
from disauto.common.objectives import Objectives
from disauto.common.task_states import has_ended_for_framework
from disauto.common.task_states import was_lost
from disauto.common.task_usage import TaskUsage
from disauto.common.telemetry import Sample
from disauto.common.trial_state import TrialState
from disauto.framework._authorization import launch_refusal
from disauto.framework._job import task_user
from disauto.framework._job.appcore import AppCoreLife
from disauto.framework._job.book import TRY_EVICTED
from disauto.framework._job.book import TRY_FAILED
from disauto.framework._job.book import TRY_LOST
from disauto.framework._job.book import TrialBook
from disauto.framework._job.book import failed_tries
from disauto.framework._job.book import has_result
from disauto.framework._job.book import lost_retries
from disauto.framework._job.memory_kill import MEMORY_LIMITATION
from disauto.framework._job.memory_kill import MemoryKill
from disauto.framework._spec import JobConfig
from disauto.framework._store import TrialRow
from disauto.protos import framework_pb2


logger = logging.getLogger("disauto.framework._job")

SLOT_LOST_REASONS = frozenset({"REASON_EXECUTOR_TERMINATED",
                               "REASON_EXECUTOR_REGISTRATION_TIMEOUT"})
"""A warm slot's task that ended for one of these was lost with its slot (the executor died or
never started), not failed by its script: it is queued again as a lost task is."""

EVICTION_REASONS = frozenset({"REASON_AGENT_DRAINING", "REASON_AGENT_REMOVED_BY_OPERATOR",
                              "REASON_SLAVE_REMOVED_BY_OPERATOR"})
"""Reasons of a task's end that its agent's operator caused (DRAIN_AGENT, maintenance, an agent
marked gone): the trial is evicted, not failed."""
EVICTION_STATES = frozenset({"TASK_GONE_BY_OPERATOR"})

UNREACHABLE = "TASK_UNREACHABLE"
LIVE_STATES = frozenset({"TASK_STAGING", "TASK_STARTING", "TASK_RUNNING"})
"""States of a task that runs or is about to (a stale task in one is killed)."""
GOING_ON = LIVE_STATES | {"TASK_KILLING"}
"""States of a task that has not ended: a task heard of in one is reachable."""


@dataclass(frozen=True)
class StatusEffects:
    """What taking a status (or expiring unreachable tasks) asks of the caller, without the
    job's lock held."""

    pending: bool = False
    """Something waits for an offer again (a relaunch, a retry)."""
    kill: tuple[str, ...] = ()
    """Tasks to kill: stale launches that showed up running."""
    abandoned: tuple[str, ...] = ()
    """Tasks given up on while unreachable (to kill, and their warm slots to forget)."""


NOTHING = StatusEffects()


def was_evicted(state: str, reason: str) -> bool:
    """Whether the cluster's operator took the task's agent away (drained, marked gone)."""
    return state in EVICTION_STATES or reason in EVICTION_REASONS


def unreachable_time(status: Mapping[str, Any]) -> float | None:
    """``TaskStatus.unreachable_time`` (a TimeInfo) in seconds since the epoch, if set."""
    try:
        return int(status["unreachable_time"]["nanoseconds"]) / 1e9
    except (KeyError, TypeError, ValueError):
        return None


def clock(seconds: float) -> str:
    """``14:03:07``: a time of day, local, for a message."""
    return time.strftime("%H:%M:%S", time.localtime(seconds))


class Measures(Protocol):
    """What telemetry measures of the trials (``framework/_telemetry/monitor.py``'s loop)."""

    def memory_note(self, trial: int) -> str:
        """What was measured of a trial's memory ("" when nothing was)."""

    def record_exact(self, trial: int, exact: TaskUsage) -> None:
        """Take what an executor measured of a trial's task when it ended."""

    def record_samples(self, samples: list[Sample]) -> None:
        """Store samples measured elsewhere (a runner's GPU samples) and fold them in."""

    def record_memory_kill(self, trial: int, used_bytes: float | None,
                           limit_bytes: float | None) -> None:
        """Take what the kernel said when the trial's memory limit killed it: the most it
        used, and its container's limit."""

    def trial_ended(self, trial: int) -> None:
        """The trial's task ended and what was measured of it is recorded."""


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

    def on(self, status: Mapping[str, Any]) -> StatusEffects:
        """Take one status update (recorded already): what it asks of the caller. A launch
        the master's ACLs refused ends the job at once (every launch would be refused)."""
        task_id = str(status.get("task_id", {}).get("value", ""))
        state = str(status.get("state", ""))
        refused = launch_refusal(status)
        if refused is not None and not self._ended():
            self._finish(framework_pb2.UNSCHEDULABLE, refused)
        if task_id == self._appcore.task_id or task_id.startswith("appcore-"):
            return self._on_appcore(task_id, state, status)
        trial = self._book.of_task(task_id)
        if trial is not None and trial.task_id == task_id:
            return self._on_trial(trial, state, status)
        if trial is not None or self._book.outliving.is_abandoned(task_id):
            return self._on_stale(task_id, state, trial.number if trial is not None else 0)
        if slots.is_warmup_task(task_id):
            if state in ("TASK_FAILED", "TASK_ERROR", "TASK_LOST", "TASK_DROPPED"):
                logger.warning("slot warm-up %s: %s", task_id, describe_status(status))
            elif state == "TASK_FINISHED" and "not preloaded" in str(status.get("message")):
                logger.info("slot warm-up %s: %s", task_id, status.get("message"))
        else:
            logger.warning("status %s for unknown task %s", state, task_id)
        return NOTHING

    def _on_stale(self, task_id: str, state: str, number: int) -> StatusEffects:
        """A task of an earlier launch of a trial (or given up on while unreachable): killed if
        it runs, forgotten once it ended."""
        what = f"an earlier launch of trial {number}" if number else "a task given up on"
        if has_ended_for_framework(state):
            self._book.outliving.task_ended(task_id)
            logger.info("status %s of %s, %s", state, task_id, what)
        elif state in LIVE_STATES:
            logger.warning("%s, %s, runs again (its agent came back): killing it", task_id,
                           what)
            return StatusEffects(kill=(task_id,))
        return NOTHING

    def _on_appcore(self, task_id: str, state: str, status: Mapping[str, Any]) -> StatusEffects:
        life = self._appcore
        if task_id != life.task_id:  # an earlier attempt, already replaced
            if state in LIVE_STATES:
                logger.warning("%s, an earlier AppCore, runs again: killing it", task_id)
                return StatusEffects(kill=(task_id,))
            return NOTHING
        if state == UNREACHABLE:
            life.mark_unreachable(unreachable_time(status) or time.time())
            return NOTHING
        if state in GOING_ON:
            life.mark_reachable()
            if state == "TASK_RUNNING":
                life.running()
            return NOTHING
        if not has_ended_for_framework(state):
            return NOTHING
        life.task_ended(state)
        if self._ended():
            life.end()
            return NOTHING
        refusal = task_user.read(status)
        if refusal is not None:  # it would be refused again: the job cannot run
            life.end()
            self._finish(framework_pb2.UNSCHEDULABLE, refusal.describe())
            return NOTHING
        why = describe_status(status) + self._tail(status)
        if was_evicted(state, str(status.get("reason", ""))) or (
                port_was_taken(status) and life.port_taken()):
            # Its agent was drained or taken away, or another process on the agent holds the
            # offered port: not AppCore's failure.
            logger.warning("AppCore %s ended (%s); launching it again", task_id, why)
            life.relaunch_on_next_offer()
            return StatusEffects(pending=True)
        failures = life.failed()
        if failures > self._config().max_appcore_restarts:
            life.end()
            self._finish(framework_pb2.ERROR, f"AppCore failed {failures} times; last: {why}")
            return NOTHING
        logger.warning("AppCore %s ended (%s); relaunching it", task_id, why)
        life.relaunch_on_next_offer()
        return StatusEffects(pending=True)

    def _on_trial(self, trial: TrialRow, state: str,
                  status: Mapping[str, Any]) -> StatusEffects:
        """Record a status of the trial's task."""
        ended = has_ended_for_framework(state)
        if ended and self._measures is not None:
            exact = task_usage.read_status_data(status.get("data"))
            if exact is not None:  # the executor measured the task when it ended
                self._measures.record_exact(trial.number, exact)
            self._measures.trial_ended(trial.number)
        if trial.terminal:
            if ended:
                self._book.outliving.task_ended(trial.task_id)
            return NOTHING
        if state == UNREACHABLE:
            self._unreachable(trial, unreachable_time(status) or time.time())
            return NOTHING
        if state in GOING_ON:
            if trial.unreachable_since is not None:
                away = format_duration(max(1, round(time.time() - trial.unreachable_since)))
                self._book.mark_reachable(trial, f"its agent came back after {away} "
                                                 "unreachable")
            if state == "TASK_RUNNING" and trial.state != TrialState.RUNNING:
                self._book.started(trial)
            return NOTHING
        if not ended:
            return NOTHING
        refusal = task_user.read(status)
        if refusal is not None and not has_result(trial):
            # Its agent cannot run it as the job's user: not lost, not the script's failure.
            self._book.set_state(trial, TrialState.FAILED, refusal.describe())
            return NOTHING
        if self._retry_lost(trial, state, status):
            return StatusEffects(pending=True)
        verdict = self._verdict(trial, state, status)
        if self._retry_failed(trial, state, status, verdict):
            return StatusEffects(pending=True)
        self._book.set_state(trial, *verdict)
        return NOTHING

    def _unreachable(self, trial: TrialRow, since: float) -> None:
        """Its agent is unreachable since ``since``: the trial waits for it, up to the bound."""
        if trial.unreachable_since is not None:
            since = min(since, trial.unreachable_since)  # a reconciliation repeats it
        bound = self._config().unreachable_timeout
        self._book.mark_unreachable(
            trial, since, f"its agent has been unreachable since {clock(since)}; it runs "
                          f"again from {clock(since + bound)} unless the agent comes back "
                          f"(--unreachable-timeout {format_duration(bound)})")

    def expire_unreachable(self, now: float) -> StatusEffects:
        """Give up on the tasks unreachable for longer than ``--unreachable-timeout`` (counted
        from when their agent was lost, or their runner last reported, whichever is later):
        their trials run again as lost ones (COMPLETED when their result is in), AppCore is
        launched again unless it still talks to the framework."""
        bound = self._config().unreachable_timeout
        abandoned: list[str] = []
        pending = False
        for trial in self._book.unreachable():
            since = trial.unreachable_since or now
            if now - max(since, self._book.last_report(trial.number)) < bound:
                continue
            abandoned.append(trial.task_id)
            pending |= self._give_up(trial, since, bound)
        life = self._appcore
        if life.unreachable_since is not None and life.live_task_id() and \
                now - max(life.unreachable_since, life.heard_at) >= bound:
            abandoned.append(life.task_id)
            self._book.outliving.abandon(life.task_id, life.agent_id)
            logger.warning("AppCore %s: its agent has been unreachable since %s; launching "
                           "it again", life.task_id, clock(life.unreachable_since))
            life.task_ended(UNREACHABLE)
            if not self._ended():
                life.relaunch_on_next_offer()
                pending = True
        return StatusEffects(pending=pending, abandoned=tuple(abandoned))

    def unreachable_tasks(self) -> list[tuple[str, str]]:
        """``(task_id, agent_id)`` of the tasks on unreachable agents, waited for or given up
        on (AppCore's too)."""
        tasks = [(t.task_id, t.agent_id) for t in self._book.unreachable()]
        tasks += sorted(self._book.outliving.abandoned().items())
        life = self._appcore
        if life.unreachable_since is not None and life.live_task_id():
            tasks.append((life.task_id, life.agent_id))
        return tasks

    def _give_up(self, trial: TrialRow, since: float, bound: float) -> bool:
        """Abandon the trial's unreachable task; whether the trial waits for an offer again."""
        self._book.outliving.abandon(trial.task_id, trial.agent_id)
        why = (f"its agent was unreachable for longer than --unreachable-timeout "
               f"{format_duration(bound)} (since {clock(since)})")
        retries = self._config().max_task_retries
        if has_result(trial):
            self._book.set_state(trial, TrialState.COMPLETED, f"completed; then {why}")
            return False
        if self._ended():
            self._book.set_state(trial, TrialState.KILLED, why)
            return False
        if lost_retries(trial) >= retries:
            self._book.set_state(trial, TrialState.FAILED,
                                 f"{why}; its launches again are spent "
                                 f"(max_task_retries {retries})")
            return False
        logger.warning("trial %d: %s; launching it again", trial.number, why)
        self._book.queue_again(trial, f"launched again: {why}")
        return True

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
        kill = MemoryKill.read(status)
        if kill is not None:
            return TrialState.FAILED, (f"{state} {MEMORY_LIMITATION}: "
                                       f"{self._memory(trial, kill)}{self._tail(status)}")
        return TrialState.FAILED, describe_status(status) + self._tail(status)

    def _memory(self, trial: TrialRow, kill: MemoryKill) -> str:
        """A trial its memory limit killed: how much it used against its limit, what
        telemetry measured of it, and the ``--app-runner-memory`` to try (the kernel's figure
        is kept as its peak, for the job's summary). Mesos' ``memory.stat`` dump stays in the
        record's task updates only."""
        note = ""
        if self._measures is not None:  # what its polls saw, then the kernel's figure
            note = self._measures.memory_note(trial.number)
            self._measures.record_memory_kill(trial.number, kill.used_bytes, kill.limit_bytes)
        elif kill.used_bytes is not None:
            peak = max(trial.usage.peak_rss_bytes or 0.0, kill.used_bytes)
            self._book.set_trial_usage(trial.number,
                                       replace(trial.usage, peak_rss_bytes=peak))
        logger.warning("trial %d was killed by its memory limit", trial.number)
        described = kill.describe(self._config().runner.mem_mb)
        return described + (f"; {note}" if note else "")

    def _retry_lost(self, trial: TrialRow, state: str, status: Mapping[str, Any]) -> bool:
        """Queue a trial again when its task was lost or evicted (not failed by its script)."""
        reason = str(status.get("reason", ""))
        evicted = was_evicted(state, reason)
        lost = evicted or (state != "TASK_FINISHED" and (was_lost(state, reason) or (
            reason in SLOT_LOST_REASONS and _on_a_slot(trial.task_id, status, self._book))))
        if not lost or has_result(trial) or self._ended():
            return False
        retries = self._config().max_task_retries
        if not evicted and lost_retries(trial) >= retries:
            return False
        if evicted:
            why = (f"launched again after {describe_status(status)}: its agent was taken away "
                   "by the cluster's operator (drained or marked gone), not counted toward "
                   "max_task_retries")
        else:
            why = f"launched again after {describe_status(status)}"
        logger.warning("trial %d: %s (retry %d)", trial.number, why, trial.retries + 1)
        self._book.queue_again(trial, why, outcome=TRY_EVICTED if evicted else TRY_LOST)
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
    return book.outliving.on_a_slot(task_id) or bool(executor_id and executor_id != task_id)


def port_was_taken(status: Mapping[str, Any]) -> bool:
    """Whether a task's status says its command exited with EXIT_PORT_TAKEN."""
    return str(status.get("state")) == "TASK_FAILED" and str(status.get("message", "")) \
        .endswith(f"exited with status {task_env.EXIT_PORT_TAKEN}")


NO_IMAGE_PROVIDER = "Unsupported container image type"
"""What a Mesos agent says of a MESOS container's image it has no store for
(``src/slave/containerizer/mesos/provisioner/provisioner.cpp`` ``provision``)."""
IMAGE_PROVIDER_HINT = (
    "the agent runs no Docker image in a Mesos container: use --containerizer docker, or "
    "start the agents with --image_providers=docker "
    "--isolation=filesystem/linux,docker/runtime")


def describe_status(status: Mapping[str, Any]) -> str:
    state = str(status.get("state", "?"))
    parts = [state]
    if status.get("reason"):
        parts.append(str(status["reason"]))
    text = " ".join(parts)
    message = str(status.get("message") or "")
    if message:
        text += f": {message}"
    if NO_IMAGE_PROVIDER in message:  # what to do first: the job's last line is cut at 3 lines
        text = f"{IMAGE_PROVIDER_HINT} ({text})"
    return text
