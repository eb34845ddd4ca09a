"""The job controller: the facade over one job's state machine.

It answers three callers and writes every change to the :class:`JobStore` before anyone is told
of it:

* AppCore, through the gRPC servicer (attach, submit trials, record reports, watch, finish);
* the Mesos scheduler (what waits for an offer, what was launched, task status updates);
* ``da-submit``'s run loop and the job page (progress, kills, updates, the end of the job).

Behind it each part has one job (``framework/_job/``): the trial book holds the trials and their
tasks, AppCore's life its launches, the event log what WatchTrials streams, the intake checks what
AppCore and runners send in, and the status handling decides from Mesos' word how a trial or
AppCore ended, and the task view (``controller.tasks``, read only) where the job's tasks are and
which still run. The controller owns the job's outcome and the lock (the book's) that makes each
of its calls one step.

Thread safety: every public method takes the lock; waiting methods release it.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import replace
import logging
import threading
import time
from typing import Any

from disauto.common.gpu_samples import GpuReading
from disauto.common.objectives import Objectives
from disauto.common.report import Report
from disauto.common.space import space_from_proto
from disauto.common.telemetry import Sample
from disauto.common.telemetry import TrialUsage
from disauto.common.trial_state import TrialState
from disauto.framework import _meta as meta
from disauto.framework._errors import FailedPreconditionError
from disauto.framework._errors import InvalidArgumentError
from disauto.framework._errors import JobEndedError
from disauto.framework._job.appcore import AppCoreLife
from disauto.framework._job.book import TrialBook
from disauto.framework._job.book import trial_proto
from disauto.framework._job.events import SPEC_CHANGED
from disauto.framework._job.events import stream
from disauto.framework._job.exits import TaskExits
from disauto.framework._job.intake import Intake
from disauto.framework._job.intake import Start
from disauto.framework._job.intake import Submission
from disauto.framework._job.progress import FrontSize
from disauto.framework._job.progress import Progress
from disauto.framework._job.progress import job_pace
from disauto.framework._job.progress import snapshot
from disauto.framework._job.silence import SilentLaunches
from disauto.framework._job.status import Measures
from disauto.framework._job.status import StatusEffects
from disauto.framework._job.status import TaskStatuses
from disauto.framework._job.stops import TrialStopper
from disauto.framework._job.task_view import JobTasks
from disauto.framework._job.update import UpdateRefusedError
from disauto.framework._job.update import check_update
from disauto.framework._job.update import describe_change
from disauto.framework._job.update import updated_spec
from disauto.framework._spec import JobConfig
from disauto.framework._store import JobStore
from disauto.framework._store import TrialRow
from disauto.framework._tasks import task_name
from disauto.framework.control import UpdateSearch
from disauto.framework.policies import LaunchRequest
from disauto.protos import common_pb2
from disauto.protos import framework_pb2


logger = logging.getLogger("disauto.framework._job")

APPCORE_KEY = "appcore"
"""AppCore's launch request's key (trials' are their task names)."""


def recorded_end(store: JobStore) -> tuple[int, str] | None:
    """The job's outcome and its message if its end is recorded, else None."""
    recorded = store.get_meta(meta.OUTCOME)
    if not recorded:
        return None
    try:
        outcome = framework_pb2.JobOutcome.Value(recorded)
    except ValueError:
        outcome = framework_pb2.ERROR
    return outcome, store.get_meta(meta.OUTCOME_MESSAGE)


class JobController:
    """One job's trials and AppCore, recorded in a :class:`JobStore`.

    Args:
        config: the job.
        store: its record.
        job_token: the token AppCore must present.
        on_pending: called (without the lock held) when something starts waiting for an offer.
        log_tail: given a terminal Mesos TaskStatus, returns the tail of the task's stderr
            (best effort; "" when it cannot be read).
        on_kill: called (without the lock held) with task ids to kill: a pruned trial's task
            still running ``prune_grace`` seconds after :meth:`prune_trial`.
        prune_grace: seconds a pruned trial's runner has to exit on its own.
        book: the job's trial book, when its maker needs it first (telemetry keeps the usage
            of its trials); by default one read from ``store``.
        measures: the job's telemetry (framework/_telemetry/monitor.py's loop); None: off.
    """

    def __init__(
        self,
        config: JobConfig,
        store: JobStore,
        job_token: str,
        *,
        on_pending: Callable[[], None] = lambda: None,
        log_tail: Callable[[Mapping[str, Any]], str] = lambda status: "",
        on_kill: Callable[[list[str]], None] = lambda task_ids: None,
        prune_grace: float = 10.0,
        book: TrialBook | None = None,
        measures: Measures | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.job_token = job_token
        self._on_pending = on_pending
        self._book = book if book is not None else TrialBook(store)
        self._lock = self._book.lock
        self._events = self._book.events
        self._appcore = AppCoreLife(store)
        self._silence = SilentLaunches()
        self.tasks = JobTasks(self._book, self._appcore)
        """Where the job's tasks are and which still run (read only)."""
        self._intake = Intake(self._book, space_from_proto(config.search.space))
        self._stops = TrialStopper(self._book, on_kill, prune_grace)
        self._exits = TaskExits(self._book)
        self._front = FrontSize(Objectives.from_spec(config.search))
        self._statuses = TaskStatuses(self._config, self._book, self._appcore,
                                      ended=self._ended, finish=self.finish,
                                      log_tail=log_tail, measures=measures)
        # The job's start, not this framework's: a resumed job's progress line and time budget
        # count from it, and a trial waiting since before the resume waits from before zero.
        self._started = store.get_meta(meta.STARTED_AT) or time.time()
        self._outcome: int | None = None
        self._outcome_message = ""
        self._done = threading.Event()
        recorded = recorded_end(store)
        if recorded is not None:  # its framework died between its last trial and its report:
            self._outcome, self._outcome_message = recorded  # da-job resume only finishes it
            self._book.close()
            self._done.set()
        self.gpu_samples: Callable[[list[Sample]], None] | None = (
            measures.record_samples if measures is not None else None)
        """Stores a trial's GPU samples and folds them into its usage (telemetry); None while
        the job's telemetry is off."""

    def _config(self) -> JobConfig:
        return self.config

    def _ended(self) -> bool:
        return self._outcome is not None

    # -- reading -------------------------------------------------------------------------------

    @property
    def outcome(self) -> tuple[int, str] | None:
        with self._lock:
            return None if self._outcome is None else (self._outcome, self._outcome_message)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the job to end; True once it has."""
        return self._done.wait(timeout)

    def trials(self) -> list[TrialRow]:
        return self._book.copies()

    def rows_to_read(self) -> list[TrialRow]:
        """The trials by number, not copied: read them, never change them (the job page)."""
        return self._book.rows_to_read()

    def version(self) -> int:
        """Changes whenever a trial does (added, its state, a report, its usage)."""
        return self._book.version

    def best_trial(self) -> TrialRow | None:
        return self._book.best(self.config.search.direction != common_pb2.MINIMIZE)

    def progress(self) -> Progress:
        front = self._front.of(self._book)  # outside the lock: Optuna is slow on big jobs
        pace = job_pace(self.config, self._book.rows_to_read(), time.time())  # 10k: 7 ms
        with self._lock:
            return snapshot(self.config, self._book.counts(), self.best_trial(), self._started,
                            self._book.oldest_pending_since(), front, pace)

    # -- AppCore -------------------------------------------------------------------------------

    def attach_appcore(self, address: str,
                       certificate: str = "") -> framework_pb2.AttachAppCoreReply:
        """AppCore serves runners at ``address`` (with TLS: trusting ``certificate``): what it
        restores from (the spec, every trial with its intermediate values)."""
        with self._lock:
            if self._ended():
                raise FailedPreconditionError("the job has ended")
            self._appcore.called_framework()
            self._appcore.attach(address, certificate)
            return framework_pb2.AttachAppCoreReply(
                spec=self.config.search_spec(),
                trials=self._book.history(self.config.search.objective),
                sequence=self._events.sequence)

    def submit_trial(self, number: int, assignment: Mapping[str, Any],
                     priority: int) -> common_pb2.Trial:
        return self.submit_trials([(number, assignment, priority)])[0]

    def submit_trials(self, trials: Sequence[Submission],
                      starts: Mapping[int, Start] | None = None) -> list[common_pb2.Trial]:
        """Record new trials ``(number, assignment, priority)``: all of them, or none (those in
        ``starts`` from another trial's checkpoint, ``framework/_lineage.py``).

        Idempotent per number: a number already recorded with the same assignment answers the
        recorded trial (a retried call), with another assignment it is refused. Every trial is
        checked before any is written, and the new ones are written in one transaction.
        """
        if not trials:
            raise InvalidArgumentError("no trials to submit")
        with self._lock:
            if self._ended():
                raise FailedPreconditionError("the job has ended; no trial can be submitted")
            fresh = self._intake.submit(trials, self.config.search.max_trials, starts)
            protos = [trial_proto(self._book.require(number)) for number, _, _ in trials]
        if fresh:
            self._on_pending()
        return protos

    def record_report(self, report: Report) -> common_pb2.Trial:
        """Record a runner's report (before anyone is told); the trial after it.

        Raises:
            NotFoundError: no such trial.
            JobEndedError: the job has ended (the record is closed).
            FailedPreconditionError: the trial already sent its final result.
            InvalidArgumentError: a metric that is not a named, finite number.
        """
        with self._lock:
            self._book.require(report.trial)
            self._appcore.called_framework()  # AppCore relays every report
            if self._ended():
                # The job's answer is fixed when it ends: a result that arrives after the end
                # (a trial still running when another reached the target) is not recorded.
                raise JobEndedError(
                    f"the job has ended; trial {report.trial}'s report is not recorded")
            objectives = Objectives.from_spec(self.config.search)
            return trial_proto(self._intake.report(report, objectives))

    def prune_trial(self, number: int, message: str) -> common_pb2.Trial:
        """Record that AppCore's early-stopping rule stopped trial ``number``.

        The trial becomes PRUNED at once (an event frees its slot); later status updates of its
        task do not change that. A task still live after the grace period is killed through
        ``on_kill``. A trial that already ended is returned unchanged.

        Raises:
            NotFoundError: no such trial.
        """
        with self._lock:
            return trial_proto(self._stops.prune(number, message))

    def kill_trial(self, number: int, message: str = "killed from the job page") -> list[str]:
        """Kill trial ``number`` at a user's request (the job page): it is recorded KILLED at
        once, so its slot is refilled, and its task (if launched) is returned for the caller
        to kill. Like a trial killed at the job's end it is told to the search as a failure
        but does not count toward ``--max-failed-trials``: the user stopped it, it did not
        crash.

        Raises:
            NotFoundError: no such trial.
            FailedPreconditionError: the job or the trial has ended, or the trial already
                reported its final result (it is COMPLETED whatever happens to its task).
        """
        with self._lock:
            self._book.require(number)
            if self._ended():
                raise FailedPreconditionError("the job has ended")
            return self._stops.kill(number, message)

    def events_after(self, sequence: int,
                     timeout: float) -> tuple[list[framework_pb2.TrialEvent], bool]:
        """Events after ``sequence`` (waiting up to ``timeout`` for one); and whether it ended."""
        with self._lock:
            self._appcore.called_framework()  # AppCore's WatchTrials stream asks again
            changes = self._events.after(sequence, timeout, ended=self._ended())
            return [self._event(seq, number) for seq, number in changes], self._ended()

    def _event(self, sequence: int, number: int) -> framework_pb2.TrialEvent:
        """The event: a trial as it is now, or the job's spec as it is now."""
        if number == SPEC_CHANGED:
            return framework_pb2.TrialEvent(sequence=sequence, spec=self.config.search_spec())
        return framework_pb2.TrialEvent(sequence=sequence,
                                        trial=trial_proto(self._book.require(number)))

    def watch(self, after: int,
              is_active: Callable[[], bool]) -> Iterator[framework_pb2.TrialEvent]:
        """Stream events after ``after`` until the job ends or the caller goes away."""
        return stream(self.events_after, after, is_active)

    def update_search(self, request: UpdateSearch) -> str:
        """Apply ``da-job update``: check it against the live job, record the new spec (so a
        relaunched AppCore and ``da-job resume`` keep it), tell AppCore; what changed.

        Raises:
            UpdateRefusedError: the job has ended, or the budget is below the trials submitted.
        """
        with self._lock:
            if self._ended():
                raise UpdateRefusedError("the job has ended")
            check_update(self.config.search, len(self._book), request)
            old = self.config.search
            config = replace(self.config, search=updated_spec(old, request))
            self.store.set_meta(meta.CONFIG, config)
            self.config = config
            self._events.spec_changed()
            change = describe_change(old, config.search)
        logger.info("da-job update: %s", change)
        return change

    def finish_search(self, outcome: int, message: str) -> None:
        """AppCore ends the job: as :meth:`finish`, but a BUDGET_SPENT decided on a budget that
        ``da-job update`` has raised meanwhile is refused (AppCore goes on with the new spec).

        Raises:
            FailedPreconditionError: the budget is not spent.
        """
        with self._lock:
            budget = self.config.search.max_trials
            if outcome == framework_pb2.BUDGET_SPENT and not self._ended() \
                    and len(self._book) < budget:
                raise FailedPreconditionError(
                    f"the trial budget is {budget} now ({len(self._book)} trials submitted)")
            self.finish(outcome, message)

    def finish(self, outcome: int, message: str) -> None:
        """End the job (idempotent: the first outcome wins)."""
        with self._lock:
            if self._ended():
                return
            self.store.set_meta_many({  # first: a job whose end is not recorded is not ended
                meta.OUTCOME: framework_pb2.JobOutcome.Name(outcome),
                meta.OUTCOME_MESSAGE: message,
                meta.ENDED_AT: time.time(),
            })
            self._outcome = outcome
            self._outcome_message = message
            self._book.close()
            logger.info("job ends: %s: %s", framework_pb2.JobOutcome.Name(outcome), message)
            self._events.wake()
        self._done.set()

    def framework_lost(self, message: str) -> None:
        """The job's framework was taken away (removed by the master, or failed over by another
        scheduler): end the job with FRAMEWORK_LOST and record every trial and AppCore still on
        an agent as KILLED with ``message``; no status update will ever come for them here."""
        self.finish(framework_pb2.FRAMEWORK_LOST, message)
        with self._lock:
            self._book.lose_tasks(message)
            self._appcore.lost()
            self._events.wake()

    # -- the scheduler's side ------------------------------------------------------------------

    def launch_requests(self) -> list[LaunchRequest]:
        """What waits for an offer: AppCore first, then pending trials by priority."""
        with self._lock:
            if self._ended():
                return []
            requests: list[LaunchRequest] = []
            if self._appcore.waiting():
                requests.append(LaunchRequest(APPCORE_KEY, self.config.appcore, ports=1))
            return requests + [
                LaunchRequest(task_name(t.number), self.config.runner, priority=t.priority,
                              trial_number=t.number)
                for t in self._book.pending()]

    def has_pending(self) -> bool:
        """Whether anything waits for an offer (what :meth:`launch_requests` would list)."""
        with self._lock:
            return not self._ended() and (self._appcore.waiting() or self._book.has_pending())

    def in_flight(self) -> list[TrialRow]:
        """Copies of the trials waiting, launching or running, by number."""
        return self._book.in_flight()

    def next_appcore_task_id(self) -> str:
        with self._lock:
            return self._appcore.next_task_id()

    def appcore_launched(self, task_id: str, agent_id: str) -> bool:
        """Record AppCore's launch; False if it is no longer wanted."""
        with self._lock:
            launched = not self._ended() and self._appcore.launched(task_id, agent_id)
        if launched:
            self._silence.launched(task_id, agent_id)
        return launched

    def adopt_appcore(self) -> bool:
        """Wait for the AppCore the record says runs to attach again (a framework failing over
        on the same master; reconciliation ends it if its task is gone); True if there was one."""
        with self._lock:
            return self._appcore.adopt()

    def trial_for_launch(self, number: int) -> TrialRow | None:
        with self._lock:
            trial = self._book.get(number)
            if trial is None or trial.state != TrialState.PENDING or self._ended():
                return None
            return self._book.copy(number)

    def trial_launched(self, number: int, task_id: str, agent_id: str,
                       executor_id: str = "") -> None:
        """Record a trial's launch as ``task_id`` (on the warm slot ``executor_id``, if any)."""
        self._book.launched(number, task_id, agent_id, executor_id)
        self._silence.launched(task_id, agent_id)

    def on_status(self, status: Mapping[str, Any]) -> StatusEffects:
        """Record a Mesos status update (before the scheduler acknowledges it); what the
        scheduler must do about it (the stale tasks to kill)."""
        self.store.add_task_update(status)
        self._silence.status_heard(str(status.get("task_id", {}).get("value", "")))
        with self._lock:
            effects = self._statuses.on(status)
        if effects.pending:
            self._on_pending()
        return effects

    def expire_unreachable(self, now: float | None = None) -> StatusEffects:
        """Give up on the tasks whose agent has been unreachable longer than
        ``--unreachable-timeout``: their trials (or AppCore) run again; the tasks abandoned
        (the caller kills them and forgets their slots)."""
        with self._lock:
            effects = self._statuses.expire_unreachable(time.time() if now is None else now)
        if effects.pending:
            self._on_pending()
        return effects

    def unreachable_tasks(self) -> list[tuple[str, str]]:
        """``(task_id, agent_id)`` of the tasks on unreachable agents, waited for or given up
        on: what the framework reconciles until Mesos says where they are."""
        with self._lock:
            return self._statuses.unreachable_tasks()

    def silent_launches(self) -> list[tuple[str, str]]:
        """``(task_id, agent_id)`` of the launches Mesos has said nothing of for a minute
        (``silence.py``): the framework reconciles them."""
        return self._silence.silent()

    def expire_trials(self, now: float | None = None) -> list[str]:
        """End the trials past ``--trial-timeout`` (TIMEOUT) or, their result in, past
        ``--trial-exit-grace`` (COMPLETED): their slots free at once (``exits.py``); the tasks
        to kill."""
        return self._exits.expire(self.config, time.time() if now is None else now)

    def requeue_in_flight(self, why: str) -> list[int]:
        """Queue again the trials in flight when the framework died, on a new cluster (a resumed
        ``--master local`` job): same number and assignment, a new task; the numbers queued."""
        return self._book.requeue_in_flight(why)

    # -- measured usage (telemetry) ------------------------------------------------------------

    def add_samples(self, samples: Sequence[Sample]) -> None:
        """Keep telemetry samples (framework/_telemetry) in the job store."""
        self._book.add_samples(samples)

    def set_trial_usage(self, number: int, usage: TrialUsage) -> None:
        """Keep a trial's measured usage with it, here and in the job store."""
        self._book.set_trial_usage(number, usage)

    def record_gpu_samples(self, number: int, readings: Sequence[GpuReading]) -> int:
        """Record a trial's GPU samples (``apprunner_sdk.gpu``) as telemetry of its agent; how
        many were stored.

        Raises:
            InvalidArgumentError, NotFoundError: see :meth:`Intake.gpu_samples`.
            FailedPreconditionError: telemetry is off, or the trial was never launched.
        """
        samples = self._intake.gpu_samples(number, readings)
        record = self.gpu_samples
        if record is None:
            raise FailedPreconditionError(
                "telemetry is off for this job (--telemetry-interval 0): GPU samples are not "
                "recorded")
        record(samples)
        return len(samples)

