"""The trial book: one job's trials, as recorded, and the tasks that run them.

The book holds each trial's row (written to the store before it changes here), which task runs
it now, and the tasks the framework still has to see end: those of trials it ended itself
(pruned, timed out, killed, completed past their exit grace: ``exits.py``) and those of trials
completed at the job's end while their runner still writes its output. Every change of a
trial's state is an event in the job's event log.

The book's lock is the job's: every method takes it (it is re-entrant), and the controller holds
it across the book, AppCore's life and the event log when one step changes several.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import math
import threading
import time
from typing import Any

from disauto.common.objectives import is_feasible
from disauto.common.report import Report
from disauto.common.space import assignment_to_proto
from disauto.common.task_states import has_ended_for_framework
from disauto.common.telemetry import Sample
from disauto.common.telemetry import TrialUsage
from disauto.common.trial_state import IN_FLIGHT
from disauto.common.trial_state import TrialState
from disauto.framework._errors import FailedPreconditionError
from disauto.framework._errors import NotFoundError
from disauto.framework._job.events import EventLog
from disauto.framework._job.index import TrialIndex
from disauto.framework._job.outliving import OutlivingTasks
from disauto.framework._store import JobStore
from disauto.framework._store import TrialRow
from disauto.protos import common_pb2


ON_AN_AGENT = frozenset({TrialState.LAUNCHING, TrialState.RUNNING})
"""Trial states whose task is launched and not yet ended."""
ENDED_BY_THE_FRAMEWORK = frozenset({TrialState.TIMEOUT, TrialState.PRUNED, TrialState.KILLED})
"""Trial states the framework records before its task ends (and kills the task)."""


def tasks_left_running(trials: Iterable[TrialRow], store: JobStore) -> set[str]:
    """The tasks of trials an earlier framework of the job ended itself (timed out, pruned,
    killed, or completed while the task ran on: past its exit grace, at the job's end) and of
    which no terminal status is recorded: its kill may have died with it, and the task may
    still run (on a warm slot, which must not look idle while it does)."""
    ended = {str(u["task_id"]) for u in store.task_updates()
             if has_ended_for_framework(str(u["state"]))}
    return {t.task_id for t in trials if t.task_id and t.task_id not in ended
            and (t.state in ENDED_BY_THE_FRAMEWORK or t.state == TrialState.COMPLETED)}


TRY_FAILED = "failed"
"""A try whose script failed: ``--trial-retries`` runs the trial again."""
TRY_LOST = "lost"
"""A try whose task the cluster lost: ``max_task_retries`` runs the trial again."""
TRY_EVICTED = "evicted"
"""A try whose agent the cluster's operator took away (drained, marked gone): it runs again,
not counted toward ``max_task_retries``."""


def failed_tries(trial: TrialRow) -> int:
    """How many of the trial's earlier tries its script failed (each spent a retry of
    ``--trial-retries``)."""
    return sum(1 for done in trial.tries if done.get("outcome") == TRY_FAILED)


def lost_retries(trial: TrialRow) -> int:
    """How many times the trial was launched again after its task was lost, its operator's
    evictions aside (a record of an earlier version has retries and no tries: every one of them
    was a lost task): what ``max_task_retries`` bounds."""
    return trial.retries - failed_tries(trial) - trial.evictions


def has_result(trial: TrialRow) -> bool:
    """Whether the trial's final report, with the objective, is recorded."""
    return trial.final_reported and trial.objective is not None


def trial_proto(trial: TrialRow) -> common_pb2.Trial:
    """The trial as AppCore sees it."""
    proto = common_pb2.Trial(
        number=trial.number,
        state=trial.state.to_proto(),
        message=trial.message,
        priority=trial.priority,
        task_id=trial.task_id,
        training_seconds=trial.training_seconds,
        metrics=[common_pb2.Metric(name=k, value=v) for k, v in sorted(trial.metrics.items())],
        constraints=trial.constraints or (),
    )
    for name, value in assignment_to_proto(trial.assignment).items():
        proto.assignment[name].CopyFrom(value)
    if trial.objective is not None:
        proto.objective = trial.objective
    if trial.lineage:
        proto.parent = int(trial.lineage["parent"])
    return proto


def sorted_trials(trials: Sequence[TrialRow], maximize: bool) -> list[TrialRow]:
    """Trials best first: completed by objective, the feasible first (equal ones in the order
    they completed, so the best so far stays the best until another beats it), then the rest
    by number."""
    sign = -1.0 if maximize else 1.0

    def key(t: TrialRow) -> tuple[bool, bool, float, float, int]:
        # Only a completed trial's objective ranks it: a killed or failed trial may carry an
        # intermediate value, and "the rest" sort by number, not by that value.
        ranked = t.state == TrialState.COMPLETED and t.objective is not None
        return (not ranked, ranked and not is_feasible(t.constraints),
                sign * (t.objective or 0.0) if ranked else 0.0,
                (t.ended_at or math.inf) if ranked else 0.0, t.number)

    return sorted(trials, key=key)


def _copy(trial: TrialRow) -> TrialRow:
    return TrialRow(**{**trial.__dict__, "assignment": dict(trial.assignment),
                       "metrics": dict(trial.metrics)})


class TrialBook:
    """The trials of the job recorded in ``store`` (a resumed job's are read back).

    Args:
        store: the job's record.
        resume_point: the checkpoint a trial's next try resumes from (its latest), or None.
    """

    def __init__(self, store: JobStore,
                 resume_point: Callable[[int], dict[str, Any] | None] = lambda number: None
                 ) -> None:
        self.store = store
        self._resume_point = resume_point
        self.lock = threading.RLock()
        self.events = EventLog(self.lock)
        self._trials: dict[int, TrialRow] = {t.number: t for t in store.trials()}
        self._index = TrialIndex(self._trials.values())
        self._task_to_trial = {t.task_id: t.number for t in self._trials.values() if t.task_id}
        self.outliving = OutlivingTasks(
            tasks_left_running(self._trials.values(), store),
            (t.task_id for t in self._trials.values() if t.task_id and t.executor_id))
        """The tasks kept beyond their trials' states (read and told under :attr:`lock`)."""
        # When each trial's runner last reported (it is alive, wherever Mesos lost it).
        self._last_report: dict[int, float] = {}
        self.version = 0
        """Counts the changes of the trials (added, state, report, usage): readers that keep
        what they computed from them (the job page) know when to compute it again."""

    # -- reading -----------------------------------------------------------------------------

    def __len__(self) -> int:
        with self.lock:
            return len(self._trials)

    def get(self, number: int) -> TrialRow | None:
        """The live row of trial ``number`` (change it only through the book)."""
        with self.lock:
            return self._trials.get(number)

    def require(self, number: int) -> TrialRow:
        """The live row of trial ``number``.

        Raises:
            NotFoundError: no such trial.
        """
        trial = self.get(number)
        if trial is None:
            raise NotFoundError(f"trial {number} does not exist")
        return trial

    def rows(self) -> list[TrialRow]:
        """The live rows, by number."""
        with self.lock:
            return sorted(self._trials.values(), key=lambda t: t.number)

    def copies(self) -> list[TrialRow]:
        """Copies of the rows, by number (for readers outside the lock)."""
        with self.lock:
            return [_copy(t) for t in self.rows()]

    def rows_to_read(self) -> list[TrialRow]:
        """The live rows by number, not copied, for readers that only read them outside the
        lock (the job page, which would otherwise copy 10,000 trials each poll): a row may
        change while it is read."""
        with self.lock:
            return list(self._trials.values())

    def copy(self, number: int) -> TrialRow | None:
        with self.lock:
            trial = self._trials.get(number)
            return None if trial is None else _copy(trial)

    def best(self, maximize: bool) -> TrialRow | None:
        """The feasible completed trial with the best objective (of equal ones, the first to
        complete)."""
        with self.lock:
            best = self._index.best_completed(maximize, sorted_trials)
        if best is None or best.state != TrialState.COMPLETED or best.objective is None \
                or not is_feasible(best.constraints):
            return None
        return best

    def history(self, objective: str) -> list[common_pb2.Trial]:
        """Every trial as AppCore restores from it: with its objective's values by step, from
        the recorded reports."""
        with self.lock:
            trials = [trial_proto(t) for t in self.rows()]
        by_number = {t.number: t for t in trials}
        for report in self.store.reports():
            trial = by_number.get(report["trial"])
            if (trial is not None and report["step"] is not None and not report["final"]
                    and objective in report["metrics"]):
                trial.intermediate_values.add(step=int(report["step"]),
                                              value=float(report["metrics"][objective]))
        return trials

    def pending(self) -> list[TrialRow]:
        """Trials waiting for an offer, by priority, then number."""
        with self.lock:
            return sorted(self._index.in_state(TrialState.PENDING),
                          key=lambda t: (t.priority, t.number))

    def has_pending(self) -> bool:
        with self.lock:
            return self._index.count(TrialState.PENDING) > 0

    def counts(self) -> dict[TrialState, int]:
        """How many trials are in each state now."""
        with self.lock:
            return self._index.counts()

    def in_flight(self) -> list[TrialRow]:
        """Copies of the trials waiting, launching or running, by number."""
        with self.lock:
            return sorted((_copy(t) for t in self._index.in_state(*IN_FLIGHT)),
                          key=lambda t: t.number)

    def oldest_pending_since(self) -> float | None:
        """When the longest-waiting pending trial was submitted (None: none waits)."""
        with self.lock:
            return min((t.created_at for t in self._index.in_state(TrialState.PENDING)
                        if t.created_at), default=None)

    def of_task(self, task_id: str) -> TrialRow | None:
        """The trial ``task_id`` was launched for (its current task or an earlier one)."""
        with self.lock:
            number = self._task_to_trial.get(task_id)
            return None if number is None else self._trials.get(number)

    def executor_of(self, task_id: str) -> str:
        """The warm slot's executor that ran a trial's current task, as recorded ("" for a
        command task, AppCore's, or a task of no trial): it outlives the framework that
        launched the task, so a resumed one still finds the task's sandbox."""
        with self.lock:
            trial = self.of_task(task_id)
            return trial.executor_id if trial is not None and trial.task_id == task_id else ""

    def live_task_ids(self) -> list[str]:
        """Trials' tasks launched and not yet seen to end."""
        with self.lock:
            ids = [t.task_id for t in sorted(self._index.in_state(*ON_AN_AGENT),
                                             key=lambda t: t.number) if t.task_id]
            return ids + self.outliving.live()

    def task_locations(self, live: set[str]) -> list[tuple[str, str, bool]]:
        """``(task_id, agent_id, whether in live)`` of each trial's current task, by number."""
        with self.lock:
            return [(t.task_id, t.agent_id, t.task_id in live) for t in self.rows()
                    if t.task_id and t.agent_id]

    def on_agents(self) -> list[TrialRow]:
        """The live rows of trials whose task is launched and not yet ended, by number."""
        with self.lock:
            return sorted(self._index.in_state(*ON_AN_AGENT), key=lambda t: t.number)

    def unreachable(self) -> list[TrialRow]:
        """The live rows of trials whose task's agent Mesos says is unreachable."""
        with self.lock:
            return [t for t in self._index.in_state(*sorted(ON_AN_AGENT))
                    if t.unreachable_since is not None]

    def last_report(self, number: int) -> float:
        """When trial ``number``'s runner last reported to this framework (0: not yet)."""
        with self.lock:
            return self._last_report.get(number, 0.0)

    def slot_tasks_in_flight(self) -> dict[str, str]:
        """Executor id → the task the record says runs on it (what a resumed framework's
        adopted slots are busy with): a trial's in flight, or one ended by the framework whose
        task has not ended yet."""
        with self.lock:
            return {t.executor_id: t.task_id for t in self._trials.values()
                    if t.executor_id and t.task_id
                    and (t.state in ON_AN_AGENT or self.outliving.ended_first(t.task_id))}

    # -- changing ----------------------------------------------------------------------------

    def add(self, fresh: Sequence[tuple[int, Mapping[str, Any], int]]) -> None:
        """Record new PENDING trials ``(number, assignment, priority)`` (one transaction)."""
        with self.lock:
            for row in self.store.add_trials(fresh):
                self._trials[row.number] = row
                self._index.added(row)
                self.version += 1
                self.events.trial_changed(row.number)

    def set_state(self, trial: TrialRow, state: TrialState, message: str) -> None:
        """Record ``trial``'s new state (and message), then tell the event log. A trial that
        leaves its agent is no longer unreachable."""
        with self.lock:
            fields: dict[str, Any] = {"state": state}
            if message:
                fields["message"] = message
            if state.is_finished():
                fields["ended_at"] = time.time()
            if trial.unreachable_since is not None and state not in ON_AN_AGENT:
                fields["unreachable_since"] = None
            self.store.update_trial(trial.number, **fields)
            before, trial.state = trial.state, state
            if message:
                trial.message = message
            if "ended_at" in fields:
                trial.ended_at = fields["ended_at"]
            if "unreachable_since" in fields:
                trial.unreachable_since = None
            self._index.changed(trial, before)
            self.version += 1
            self.events.trial_changed(trial.number)

    def queue_again(self, trial: TrialRow, message: str, *, outcome: str = TRY_LOST,
                    failure: str = "") -> None:
        """Wait for an offer again under a new task id (same number and assignment), with
        ``message``. A launch that had a task counts as a retry: that try is kept in the
        trial's ``tries`` (how it ended, ``outcome``: lost, evicted by the cluster's operator or
        failed by its script; why, ``failure`` or else ``message``; what it reported) and the
        trial starts over, its metrics and unfinished result gone with the try (its reports
        stay recorded), from its latest checkpoint if it saved one (``resumed_from``)."""
        with self.lock:
            fields: dict[str, Any] = {"task_id": "", "agent_id": ""}
            if trial.task_id:
                trial.tries = [*trial.tries, self._try_of(trial, outcome, failure or message)]
                trial.retries += 1
                trial.evictions += int(outcome == TRY_EVICTED)
                trial.metrics, trial.objective, trial.training_seconds = {}, None, 0.0
                trial.final_reported, trial.constraints = False, None
                trial.resumed_from = self._resume_point(trial.number) or trial.resumed_from
                fields.update(retries=trial.retries, evictions=trial.evictions,
                              tries=trial.tries, metrics={}, objective=None,
                              training_seconds=0.0, final_reported=False, constraints=None,
                              resumed_from=trial.resumed_from)
            trial.task_id = ""
            trial.agent_id = ""
            self.store.update_trial(trial.number, **fields)
            self.set_state(trial, TrialState.PENDING, message)

    def resume_from(self, number: int, point: dict[str, Any] | None) -> None:
        """Launch trial ``number``'s next try from ``point`` (``copy_checkpoint``'s)."""
        with self.lock:
            trial = self.require(number)
            trial.resumed_from = point
            self.store.update_trial(number, resumed_from=point)

    def mark_unreachable(self, trial: TrialRow, since: float, message: str) -> None:
        """Mesos says the agent of the trial's task has been unreachable since ``since``: the
        trial stays as it is (its task may come back), its message says so."""
        with self.lock:
            trial.unreachable_since = since
            trial.message = message
            self.store.update_trial(trial.number, unreachable_since=since, message=message)

    def mark_reachable(self, trial: TrialRow, message: str) -> None:
        """The trial's task is back (its agent re-registered): it goes on."""
        with self.lock:
            trial.unreachable_since = None
            trial.message = message
            self.store.update_trial(trial.number, unreachable_since=None, message=message)

    def _try_of(self, trial: TrialRow, outcome: str, message: str) -> dict[str, Any]:
        """The record of the trial's try that just ended (its task still set): its task, how
        and when it ended, its metrics, how many of the trial's reports it made and the
        checkpoint it resumed from (None: from scratch)."""
        earlier = sum(int(done.get("reports", 0)) for done in trial.tries)
        return {"task_id": trial.task_id, "outcome": outcome, "message": message,
                "ended_at": time.time(), "metrics": dict(trial.metrics),
                "reports": max(0, len(self.store.reports(trial.number)) - earlier),
                "resumed_from": trial.resumed_from}

    def reported(self, trial: TrialRow, report: Report, metrics: Mapping[str, float],
                 fields: Mapping[str, Any]) -> None:
        """Record a runner's report (its checked ``metrics``) and the trial's columns it
        changes (``fields``), in one transaction."""
        with self.lock:
            self._last_report[trial.number] = time.time()
            self.store.add_report(trial.number, metrics, report.step, report.final,
                                  report.elapsed_seconds, fields)
            for name, value in fields.items():
                setattr(trial, name, value)
            self.version += 1

    def launched(self, number: int, task_id: str, agent_id: str, executor_id: str) -> None:
        """Record a trial's launch as ``task_id`` (on the warm slot ``executor_id``, or a
        command task); a try after the first starts without the message of the one before
        (which its ``tries`` keep)."""
        with self.lock:
            if executor_id:
                self.outliving.launched_on_a_slot(task_id)
            trial = self._trials[number]
            trial.task_id, trial.agent_id, trial.executor_id = task_id, agent_id, executor_id
            self._task_to_trial[task_id] = number
            cleared = {"message": ""} if trial.tries and trial.message else {}
            self.store.update_trial(number, task_id=task_id, agent_id=agent_id,
                                    executor_id=executor_id, **cleared)
            if cleared:
                trial.message = ""
            self.set_state(trial, TrialState.LAUNCHING, "")

    def started(self, trial: TrialRow) -> None:
        """Its task runs: RUNNING from now."""
        with self.lock:
            trial.started_at = time.time()
            self.store.update_trial(trial.number, started_at=trial.started_at)
            self.set_state(trial, TrialState.RUNNING, "")

    def end_early(self, number: int, state: TrialState, message: str) -> str:
        """End a trial before its task (pruned, killed by the user, timed out, completed while
        its task does not exit: ``exits.py``): ``state`` at once, so its slot is refilled; the
        task it still runs, to kill ("" if it has none)."""
        with self.lock:
            trial = self.require(number)
            task_id = trial.task_id if trial.state in ON_AN_AGENT else ""
            self.set_state(trial, state, message)
            if task_id:
                self.outliving.trial_ended_first(task_id)
            return task_id

    def requeue_in_flight(self, why: str) -> list[int]:
        """Queue again every trial launched or waiting (their cluster is gone), COMPLETED
        those whose final result is recorded; the numbers queued again. The tasks of trials
        ended before them died with that cluster: none will be seen to end."""
        requeued = []
        with self.lock:
            self.outliving.lose_all()
            for trial in self.rows():
                if not trial.state.is_in_flight():
                    continue
                if has_result(trial):
                    self.set_state(trial, TrialState.COMPLETED, "")
                    continue
                self.queue_again(trial, f"launched again: {why}")
                requeued.append(trial.number)
        return requeued

    def close(self) -> None:
        """The job ended: trials still waiting are KILLED; running ones whose final result is
        recorded are COMPLETED, their tasks given time to exit on their own; those on an
        unreachable agent end now (nothing can be heard of their tasks: the TEARDOWN ends
        them when their agent comes back)."""
        with self.lock:
            for trial in self._trials.values():
                if trial.state == TrialState.PENDING:
                    self.set_state(trial, TrialState.KILLED,
                                   "the job ended before the trial ran")
                elif trial.unreachable_since is not None and trial.state in ON_AN_AGENT:
                    self._close_unreachable(trial)
                elif has_result(trial) and not trial.terminal:
                    # Its final report is in the record: the trial is done, whatever happens
                    # to its task when the job's tasks are killed.
                    if trial.state in ON_AN_AGENT and trial.task_id:
                        self.outliving.finishing(trial.task_id)
                    self.set_state(trial, TrialState.COMPLETED, "")

    def _close_unreachable(self, trial: TrialRow) -> None:
        since = time.strftime("%H:%M:%S", time.localtime(trial.unreachable_since or 0.0))
        self.outliving.abandon(trial.task_id, trial.agent_id)
        if has_result(trial):
            self.set_state(trial, TrialState.COMPLETED, "")
        else:
            self.set_state(trial, TrialState.KILLED,
                           f"the job ended while its agent was unreachable (since {since})")

    def lose_tasks(self, message: str) -> None:
        """The framework was taken away: every trial on an agent is KILLED with ``message``,
        and no task of the job will be seen to end here."""
        with self.lock:
            for trial in self._trials.values():
                if trial.state in ON_AN_AGENT:
                    self.set_state(trial, TrialState.KILLED,
                                   f"its task's end is unknown: {message}")
            self.outliving.lose_all()

    # -- measured usage (telemetry) ------------------------------------------------------------

    def set_trial_usage(self, number: int, usage: TrialUsage) -> None:
        """Keep a trial's measured usage with it, here and in the job store."""
        with self.lock:
            trial = self._trials.get(number)
            if trial is None:
                return
            trial.usage = usage
            self.store.set_trial_usage(number, usage)
            self.version += 1

    def add_samples(self, samples: Sequence[Sample]) -> None:
        """Keep telemetry samples (framework/_telemetry) in the job store."""
        self.store.add_samples(samples)

    def check_killable(self, number: int) -> None:
        """Whether a user may kill trial ``number`` now.

        Raises:
            NotFoundError: no such trial.
            FailedPreconditionError: it has ended, or already reported its final result (it
                is COMPLETED whatever happens to its task).
        """
        trial = self.require(number)
        if trial.terminal:
            raise FailedPreconditionError(f"trial {number} has already ended ({trial.state})")
        if has_result(trial):
            raise FailedPreconditionError(f"trial {number} already reported its final result")
