"""The job controller: the framework's state machine for one job.

It owns the job's trials and AppCore's life, writes every change to the :class:`JobStore` before
anyone is told of it, and answers three callers:

* AppCore, through the gRPC servicer (attach, submit trials, record reports, watch, finish);
* the Mesos scheduler (what waits for an offer, what was launched, task status updates);
* ``da-submit`` (progress, the end of the job).

Thread safety: every public method takes the controller's lock; waiting methods release it.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace
import logging
import math
import threading
import time
from typing import Any

from disauto.common import gpu_samples
from disauto.common.durations import format_duration
from disauto.common.errors import InvalidAssignmentError
from disauto.common.gpu_samples import GpuReading
from disauto.common.metrics import MetricError
from disauto.common.metrics import check_metrics
from disauto.common.report import Report
from disauto.common.space import assignment_to_proto
from disauto.common.space import space_from_proto
from disauto.common.task_usage import TaskUsage
from disauto.common.telemetry import Sample
from disauto.common.telemetry import TrialUsage
from disauto.common.trial_state import TrialState
from disauto.framework.errors import AlreadyExistsError
from disauto.framework.errors import FailedPreconditionError
from disauto.framework.errors import InvalidArgumentError
from disauto.framework.errors import JobEndedError
from disauto.framework.errors import NotFoundError
from disauto.framework.job_status import ON_AN_AGENT
from disauto.framework.job_status import TaskStatusHandling
from disauto.framework.job_status import tasks_left_running
from disauto.framework.job_update import UpdateRefusedError
from disauto.framework.job_update import UpdateRequest
from disauto.framework.job_update import check_update
from disauto.framework.job_update import describe_change
from disauto.framework.job_update import updated_spec
from disauto.framework.policies import LaunchRequest
from disauto.framework.spec import JobConfig
from disauto.framework.store import JobStore
from disauto.framework.store import TrialRow
from disauto.framework.tasks import task_name
from disauto.protos import common_pb2
from disauto.protos import framework_pb2


logger = logging.getLogger(__name__)

APPCORE_KEY = "appcore"
"""AppCore launches again, beyond its restarts, when another process took its offered port."""
# The event "the job's spec changed" (da-job update) in the event list; trial numbers start at 1.
_SPEC_CHANGED = 0

Outcome = int  # framework_pb2.JobOutcome value


@dataclass(frozen=True)
class Progress:
    """A snapshot for the progress line."""

    done: int
    running: int
    pending: int
    failed: int
    best: TrialRow | None
    submitted: int
    budget: int
    elapsed: float
    waiting: float = 0.0
    """Seconds the oldest pending trial has waited for an offer (0: none waits)."""
    parallelism: int = 0
    """Trials in flight at once, as the job's spec says now (0: not known)."""


class JobController(TaskStatusHandling):
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
    ) -> None:
        self.config = config
        self._space = space_from_proto(config.search.space)
        self.store = store
        self.job_token = job_token
        self._on_pending = on_pending
        self._log_tail = log_tail
        self._on_kill = on_kill
        self._prune_grace = prune_grace
        self._trials: dict[int, TrialRow] = {t.number: t for t in store.trials()}
        # Tasks of trials that ended before them (pruned, timed out) and have not reported a
        # terminal Mesos state yet; a resumed framework kills its predecessor's.
        self._ended_trial_tasks = tasks_left_running(list(self._trials.values()), store)
        self._kills_on_resume = set(self._ended_trial_tasks)
        # Tasks of trials COMPLETED by their final report at the job's end, still running
        # (writing their --output, say): they get a grace period before they are killed.
        self._finishing_tasks: set[str] = set()
        self._slot_tasks: set[str] = set()
        """Tasks launched on warm slots: their executor's end is the cluster's, not theirs."""
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._started = time.time()
        # (sequence, trial number or _SPEC_CHANGED)
        self._events: list[tuple[int, int]] = []
        self._sequence = 0
        self._task_to_trial: dict[str, int] = {
            t.task_id: t.number for t in self._trials.values() if t.task_id
        }
        # A resumed framework knows its predecessor's slot tasks from the record.
        self._slot_tasks.update(t.task_id for t in self._trials.values()
                                if t.task_id and t.executor_id)
        runs = store.appcore_runs()
        self._appcore_attempt = max((r["attempt"] for r in runs), default=0)
        self._appcore_task_id = ""
        self._appcore_state = "WAITING"  # WAITING → LAUNCHING → RUNNING → (ATTACHED)
        self._appcore_address = ""
        self._appcore_certificate = ""
        self._appcore_failures = 0
        self._port_retries = 0
        self._outcome: int | None = None
        self._outcome_message = ""
        self._done = threading.Event()
        self.memory_note: Callable[[int], str] = lambda number: ""
        """What telemetry measured of a trial's memory (its OOM failure message names it)."""
        self.exact_usage: Callable[[int, TaskUsage], None] = lambda number, usage: None
        """Takes what an executor measured of a trial's task when it ended (telemetry)."""
        self.gpu_samples: Callable[[list[Sample]], None] | None = None
        """Stores a trial's GPU samples and folds them into its usage (telemetry); None while
        the job's telemetry is off."""

    # -- reading -------------------------------------------------------------------------------

    @property
    def outcome(self) -> tuple[int, str] | None:
        with self._lock:
            return None if self._outcome is None else (self._outcome, self._outcome_message)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the job to end; True once it has."""
        return self._done.wait(timeout)

    def trials(self) -> list[TrialRow]:
        with self._lock:
            return [self._copy(t) for t in sorted(self._trials.values(), key=lambda t: t.number)]

    def best_trial(self) -> TrialRow | None:
        with self._lock:
            return self._best()

    def _best(self) -> TrialRow | None:
        maximize = self.config.search.direction != common_pb2.MINIMIZE
        ranked = sorted_trials(list(self._trials.values()), maximize)
        best = ranked[0] if ranked else None
        return best if best is not None and best.state == TrialState.COMPLETED \
            and best.objective is not None else None

    def progress(self) -> Progress:
        with self._lock:
            states = [t.state for t in self._trials.values()]
            now = time.time()
            waiting = max((now - t.created_at for t in self._trials.values()
                           if t.state == TrialState.PENDING and t.created_at), default=0.0)
            return Progress(
                done=states.count(TrialState.COMPLETED) + states.count(TrialState.PRUNED),
                running=states.count(TrialState.RUNNING) + states.count(TrialState.LAUNCHING),
                pending=states.count(TrialState.PENDING),
                failed=states.count(TrialState.FAILED),
                best=self._best(),
                submitted=len(states),
                budget=int(self.config.search.max_trials),
                elapsed=now - self._started,
                waiting=waiting,
                parallelism=int(self.config.search.parallelism),
            )

    @staticmethod
    def _copy(trial: TrialRow) -> TrialRow:
        return TrialRow(**{**trial.__dict__, "assignment": dict(trial.assignment),
                           "metrics": dict(trial.metrics)})

    def trial_proto(self, trial: TrialRow) -> common_pb2.Trial:
        proto = common_pb2.Trial(
            number=trial.number,
            state=trial.state.to_proto(),
            message=trial.message,
            priority=trial.priority,
            task_id=trial.task_id,
            training_seconds=trial.training_seconds,
            metrics=[common_pb2.Metric(name=k, value=v) for k, v in sorted(trial.metrics.items())],
        )
        for name, value in assignment_to_proto(trial.assignment).items():
            proto.assignment[name].CopyFrom(value)
        if trial.objective is not None:
            proto.objective = trial.objective
        return proto

    # -- AppCore -------------------------------------------------------------------------------

    def attach_appcore(self, address: str,
                       certificate: str = "") -> framework_pb2.AttachAppCoreReply:
        """AppCore serves runners at ``address`` (with TLS: trusting ``certificate``)."""
        with self._lock:
            if self._outcome is not None:
                raise FailedPreconditionError("the job has ended")
            self._appcore_address = address
            self._appcore_certificate = certificate
            self._appcore_state = "ATTACHED"
            if self._appcore_attempt:
                self.store.update_appcore_run(self._appcore_attempt, address=address,
                                              state="ATTACHED")
            logger.info("AppCore attached from %s (attempt %d)", address, self._appcore_attempt)
            trials = [self.trial_proto(t) for t in sorted(self._trials.values(),
                                                           key=lambda t: t.number)]
            self._add_intermediate_values(trials)
            return framework_pb2.AttachAppCoreReply(
                spec=self.config.search_spec(), trials=trials, sequence=self._sequence,
            )

    def _add_intermediate_values(self, trials: Sequence[common_pb2.Trial]) -> None:
        """Fill each trial's objective values by step, from the recorded reports."""
        objective = self.config.search.objective
        by_number = {t.number: t for t in trials}
        for report in self.store.reports():
            trial = by_number.get(report["trial"])
            if (trial is not None and report["step"] is not None and not report["final"]
                    and objective in report["metrics"]):
                trial.intermediate_values.add(step=int(report["step"]),
                                              value=float(report["metrics"][objective]))

    def appcore_address(self) -> str:
        return self.appcore_endpoint()[0]

    def appcore_endpoint(self) -> tuple[str, str]:
        """``(address, certificate PEM)`` of the attached AppCore; ``("", "")`` while none is
        (the certificate is "" without TLS)."""
        with self._lock:
            if self._appcore_state != "ATTACHED":
                return "", ""
            return self._appcore_address, self._appcore_certificate

    def submit_trial(
        self, number: int, assignment: Mapping[str, Any], priority: int
    ) -> common_pb2.Trial:
        return self.submit_trials([(number, assignment, priority)])[0]

    def submit_trials(
        self, trials: Sequence[tuple[int, Mapping[str, Any], int]]
    ) -> list[common_pb2.Trial]:
        """Record new trials ``(number, assignment, priority)``: all of them, or none.

        Idempotent per number: a number already recorded with the same assignment answers the
        recorded trial (a retried call), with another assignment it is refused. Every trial is
        checked before any is written, and the new ones are written in one transaction.
        """
        if not trials:
            raise InvalidArgumentError("no trials to submit")
        with self._lock:
            if self._outcome is not None:
                raise FailedPreconditionError("the job has ended; no trial can be submitted")
            fresh: list[tuple[int, Mapping[str, Any], int]] = []
            seen: set[int] = set()
            for number, assignment, priority in trials:
                if number < 1:
                    raise InvalidArgumentError(f"trial number must be >= 1, got {number}")
                if number in seen:
                    raise InvalidArgumentError(f"trial {number} appears twice in one submission")
                seen.add(number)
                existing = self._trials.get(number)
                if existing is not None:
                    if existing.assignment != dict(assignment):
                        raise AlreadyExistsError(
                            f"trial {number} already exists with another assignment"
                        )
                    continue
                try:
                    self._space.validate_assignment(assignment)
                except InvalidAssignmentError as err:
                    which = f"trial {number}: " if len(trials) > 1 else ""
                    raise InvalidArgumentError(f"{which}{err}") from None
                fresh.append((number, assignment, priority))
            budget = self.config.search.max_trials
            if fresh and len(self._trials) + len(fresh) > budget:
                raise FailedPreconditionError(
                    f"the trial budget of {budget} is spent" if len(self._trials) >= budget
                    else f"{len(fresh)} new trials would exceed the trial budget of {budget} "
                         f"({len(self._trials)} recorded)"
                )
            for row in self.store.add_trials(fresh):
                self._trials[row.number] = row
                self._emit(row.number)
            protos = [self.trial_proto(self._trials[number]) for number, _, _ in trials]
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
        number, step, final = report.trial, report.step, report.final
        metrics, elapsed_seconds = report.metrics, report.elapsed_seconds
        with self._lock:
            trial = self._trials.get(number)
            if trial is None:
                raise NotFoundError(f"trial {number} does not exist")
            if self._outcome is not None:
                # The job's answer is fixed when it ends: a result that arrives after the end
                # (a trial still running when another reached the target) is not recorded.
                raise JobEndedError(f"the job has ended; trial {number}'s report is not recorded")
            if trial.final_reported:
                raise FailedPreconditionError(
                    f"trial {number} already reported its final result"
                )
            try:
                metrics = check_metrics(metrics)
            except (MetricError, TypeError) as err:
                raise InvalidArgumentError(str(err)) from None
            merged = {**trial.metrics, **metrics}
            fields: dict[str, Any] = {
                "metrics": merged,
                "training_seconds": max(0.0, float(elapsed_seconds)),
                "final_reported": final,
            }
            objective = self.config.search.objective
            if objective in metrics:
                fields["objective"] = float(metrics[objective])
            self.store.add_report(number, metrics, step, final, elapsed_seconds, fields)
            trial.metrics = merged
            trial.training_seconds = fields["training_seconds"]
            trial.final_reported = final
            if "objective" in fields:
                trial.objective = fields["objective"]
            return self.trial_proto(trial)

    def prune_trial(self, number: int, message: str) -> common_pb2.Trial:
        """Record that AppCore's early-stopping rule stopped trial ``number``.

        The trial becomes PRUNED at once (an event frees its slot); later status updates of its
        task do not change that. A task still live after the grace period is killed through
        ``on_kill``. A trial that already ended is returned unchanged.

        Raises:
            NotFoundError: no such trial.
        """
        with self._lock:
            trial = self._trials.get(number)
            if trial is None:
                raise NotFoundError(f"trial {number} does not exist")
            if trial.terminal:
                return self.trial_proto(trial)
            task_id = trial.task_id if trial.state in ON_AN_AGENT else ""
            self._set_state(trial, TrialState.PRUNED, message or "stopped early by the pruner")
            if task_id:
                self._ended_trial_tasks.add(task_id)
            proto = self.trial_proto(trial)
        if task_id:
            timer = threading.Timer(self._prune_grace, self._kill_if_live, args=(task_id,))
            timer.daemon = True
            timer.start()
        return proto

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
            trial = self._trials.get(number)
            if trial is None:
                raise NotFoundError(f"trial {number} does not exist")
            if self._outcome is not None:
                raise FailedPreconditionError("the job has ended")
            if trial.terminal:
                raise FailedPreconditionError(
                    f"trial {number} has already ended ({trial.state})")
            if self._has_result(trial):
                raise FailedPreconditionError(
                    f"trial {number} already reported its final result")
            task_id = trial.task_id if trial.state in ON_AN_AGENT else ""
            self._set_state(trial, TrialState.KILLED, message)
            if task_id:
                self._ended_trial_tasks.add(task_id)  # live until its terminal status
            logger.info("trial %d: %s", number, message)
            return [task_id] if task_id else []

    def _kill_if_live(self, task_id: str) -> None:
        with self._lock:
            live = task_id in self._ended_trial_tasks
        if live:
            logger.info("pruned task %s did not exit within %.0f s; killing it", task_id,
                        self._prune_grace)
            self._on_kill([task_id])

    def events_after(self, sequence: int, timeout: float) -> tuple[list[framework_pb2.TrialEvent],
                                                                   bool]:
        """Events after ``sequence`` (waiting up to ``timeout`` for one); and whether it ended."""
        with self._cond:
            if self._sequence <= sequence and self._outcome is None:
                self._cond.wait(timeout)
            events = [self._event(seq, number) for seq, number in self._events if seq > sequence]
            return events, self._outcome is not None

    def _event(self, sequence: int, number: int) -> framework_pb2.TrialEvent:
        """The event: a trial as it is now, or the job's spec as it is now."""
        if number == _SPEC_CHANGED:
            return framework_pb2.TrialEvent(sequence=sequence, spec=self.config.search_spec())
        return framework_pb2.TrialEvent(sequence=sequence,
                                        trial=self.trial_proto(self._trials[number]))

    def watch(self, after: int, is_active: Callable[[], bool]) -> Iterator[
            framework_pb2.TrialEvent]:
        """Stream events after ``after`` until the job ends or the caller goes away."""
        sequence = after
        while is_active():
            events, ended = self.events_after(sequence, timeout=1.0)
            for event in events:
                sequence = event.sequence
                yield event
            if ended and not events:
                return

    def update_search(self, request: UpdateRequest) -> str:
        """Apply ``da-job update``: check it against the live job, record the new spec (so a
        relaunched AppCore and ``da-job resume`` keep it), tell AppCore; what changed.

        Raises:
            UpdateRefusedError: the job has ended, or the budget is below the trials submitted.
        """
        with self._lock:
            if self._outcome is not None:
                raise UpdateRefusedError("the job has ended")
            check_update(self.config.search, len(self._trials), request)
            old = self.config.search
            config = replace(self.config, search=updated_spec(old, request))
            self.store.set_meta("config", config.to_json())
            self.config = config
            self._emit(_SPEC_CHANGED)
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
            if (outcome == framework_pb2.BUDGET_SPENT and self._outcome is None
                    and len(self._trials) < budget):
                raise FailedPreconditionError(
                    f"the trial budget is {budget} now ({len(self._trials)} trials submitted)")
            self.finish(outcome, message)

    def finish(self, outcome: int, message: str) -> None:
        """End the job (idempotent: the first outcome wins)."""
        with self._lock:
            if self._outcome is not None:
                return
            self._outcome = outcome
            self._outcome_message = message
            self.store.set_meta_many({
                "outcome": framework_pb2.JobOutcome.Name(outcome),
                "outcome_message": message,
                "ended_at": str(time.time()),
            })
            for trial in self._trials.values():
                if trial.state == TrialState.PENDING:
                    self._set_state(trial, TrialState.KILLED, "the job ended before the trial ran")
                elif self._has_result(trial) and not trial.terminal:
                    # Its final report is in the record: the trial is done, whatever happens
                    # to its task when the job's tasks are killed.
                    if trial.state in ON_AN_AGENT and trial.task_id:
                        self._finishing_tasks.add(trial.task_id)
                    self._set_state(trial, TrialState.COMPLETED, "")
            logger.info("job ends: %s: %s", framework_pb2.JobOutcome.Name(outcome), message)
            self._cond.notify_all()
        self._done.set()

    def framework_lost(self, message: str) -> None:
        """The job's framework was taken away (removed by the master, or failed over by another
        scheduler): end the job with FRAMEWORK_LOST and record every trial and AppCore still on
        an agent as KILLED with ``message``; no status update will ever come for them here."""
        self.finish(framework_pb2.FRAMEWORK_LOST, message)
        with self._lock:
            for trial in self._trials.values():
                if trial.state in ON_AN_AGENT:
                    self._set_state(trial, TrialState.KILLED, f"its task's end is unknown: "
                                    f"{message}")
            self._ended_trial_tasks.clear()
            self._finishing_tasks.clear()
            if self._appcore_task_id and self._appcore_state not in ("WAITING", "ENDED"):
                self.store.update_appcore_run(self._appcore_attempt, state="TASK_KILLED",
                                              ended_at=time.time())
            self._appcore_state = "ENDED"
            self._appcore_address = ""
            self._cond.notify_all()

    # -- the scheduler's side ------------------------------------------------------------------

    def launch_requests(self) -> list[LaunchRequest]:
        """What waits for an offer: AppCore first, then pending trials by priority."""
        with self._lock:
            if self._outcome is not None:
                return []
            requests: list[LaunchRequest] = []
            if self._appcore_state == "WAITING":
                requests.append(LaunchRequest(APPCORE_KEY, self.config.appcore, ports=1))
            pending = sorted(
                (t for t in self._trials.values() if t.state == TrialState.PENDING),
                key=lambda t: (t.priority, t.number),
            )
            requests += [
                LaunchRequest(task_name(t.number), self.config.runner, priority=t.priority,
                              trial_number=t.number)
                for t in pending
            ]
            return requests

    def has_pending(self) -> bool:
        return bool(self.launch_requests())

    def next_appcore_task_id(self) -> str:
        with self._lock:
            return f"appcore-{self._appcore_attempt + 1}"

    def appcore_launched(self, task_id: str, agent_id: str) -> bool:
        """Record AppCore's launch; False if it is no longer wanted."""
        with self._lock:
            if self._appcore_state != "WAITING" or self._outcome is not None:
                return False
            self._appcore_attempt += 1
            self._appcore_task_id = task_id
            self._appcore_state = "LAUNCHING"
            self._appcore_address = ""
            self.store.add_appcore_run(self._appcore_attempt, task_id, agent_id)
            return True

    def add_samples(self, samples: Sequence[Sample]) -> None:
        """Keep telemetry samples (framework/telemetry) in the job store."""
        self.store.add_samples(samples)

    def record_gpu_samples(self, number: int, readings: Sequence[GpuReading]) -> int:
        """Record a trial's GPU samples (its runner measured them; ``apprunner_sdk.gpu``) as
        telemetry of the agent it runs on; how many samples were stored. Any trial that was
        launched may send them, also after it ended (a batch that waited for AppCore).

        Raises:
            InvalidArgumentError: a bad batch (:func:`common.gpu_samples.check_readings`).
            NotFoundError: no such trial.
            FailedPreconditionError: telemetry is off, or the trial was never launched.
        """
        try:
            gpu_samples.check_readings(readings)
        except gpu_samples.GpuSampleError as err:
            raise InvalidArgumentError(str(err)) from None
        with self._lock:
            trial = self._trials.get(number)
            if trial is None:
                raise NotFoundError(f"trial {number} does not exist")
            node = trial.agent_id
        record = self.gpu_samples
        if record is None:
            raise FailedPreconditionError(
                "telemetry is off for this job (--telemetry-interval 0): GPU samples are not "
                "recorded")
        if not node:
            raise FailedPreconditionError(
                f"trial {number} was never launched: it has no agent to record GPU samples of")
        samples = gpu_samples.as_samples(number, node, readings)
        record(samples)
        return len(samples)

    def set_trial_usage(self, number: int, usage: TrialUsage) -> None:
        """Keep a trial's measured usage with it, here and in the job store."""
        with self._lock:
            trial = self._trials.get(number)
            if trial is None:
                return
            trial.usage = usage
            self.store.set_trial_usage(number, usage)

    def trial_for_launch(self, number: int) -> TrialRow | None:
        with self._lock:
            trial = self._trials.get(number)
            if trial is None or trial.state != TrialState.PENDING or self._outcome is not None:
                return None
            return self._copy(trial)

    def trial_launched(self, number: int, task_id: str, agent_id: str,
                       executor_id: str = "") -> None:
        """Record a trial's launch as ``task_id`` (a task of the warm slot ``executor_id``, or
        a command task)."""
        with self._lock:
            if executor_id:
                self._slot_tasks.add(task_id)
            trial = self._trials[number]
            trial.task_id = task_id
            trial.agent_id = agent_id
            trial.executor_id = executor_id
            self._task_to_trial[task_id] = number
            self.store.update_trial(number, task_id=task_id, agent_id=agent_id,
                                    executor_id=executor_id)
            self._set_state(trial, TrialState.LAUNCHING, "")

    def executor_of(self, task_id: str) -> str:
        """The warm slot's executor that ran a trial's current task, as recorded ("" for a
        command task, AppCore's, or a task of no trial): it outlives the framework that
        launched the task, so a resumed one still finds the task's sandbox."""
        with self._lock:
            number = self._task_to_trial.get(task_id)
            trial = self._trials.get(number) if number is not None else None
            return trial.executor_id if trial is not None and trial.task_id == task_id else ""

    def live_task_ids(self) -> list[str]:
        """Tasks launched and not yet terminal (to kill when the job ends)."""
        with self._lock:
            ids = [t.task_id for t in self._trials.values()
                   if t.task_id and t.state in ON_AN_AGENT]
            ids += sorted(self._ended_trial_tasks | self._finishing_tasks)
            # An AppCore that ended (terminal status after the job ended, or past its restarts)
            # is not live: JobRunner.stop waits for live tasks until its grace period ends.
            if self._appcore_task_id and self._appcore_state not in ("WAITING", "ENDED"):
                ids.append(self._appcore_task_id)
            return ids

    def adopt_appcore(self) -> bool:
        """Take over the AppCore the record says runs (a framework failing over on the same
        master): wait for it to attach again instead of launching another; reconciliation ends
        it as usual if its task is gone. True when there was one to adopt."""
        with self._lock:
            runs = self.store.appcore_runs()
            last = runs[-1] if runs else None
            if last is None or last["state"] not in ("LAUNCHING", "RUNNING", "ATTACHED"):
                return False
            self._appcore_task_id = str(last["task_id"])
            self._appcore_state = "RUNNING"
            self._task_to_trial.pop(self._appcore_task_id, None)
            logger.info("adopting AppCore %s (attempt %d)", self._appcore_task_id,
                        self._appcore_attempt)
            return True

    def expire_trials(self, now: float | None = None) -> list[str]:
        """Record TIMEOUT for trials running past ``trial_timeout`` (their slots free at once);
        the tasks to kill."""
        limit = self.config.trial_timeout
        if not limit:
            return []
        now = time.time() if now is None else now
        expired = []
        with self._lock:
            for trial in self._trials.values():
                if trial.state == TrialState.RUNNING and trial.started_at \
                        and now - trial.started_at > limit and not self._has_result(trial):
                    self._set_state(trial, TrialState.TIMEOUT,
                                    f"ran longer than --trial-timeout {format_duration(limit)}")
                    self._ended_trial_tasks.add(trial.task_id)  # to kill; its task still runs
                    expired.append(trial.task_id)
        return expired

    def requeue_in_flight(self, why: str) -> list[int]:
        """Queue again every trial that was launched or waiting when the framework died, for a
        cluster that never ran them (a resumed ``--master local`` job): the same number and
        assignment, a new task id; each still counts once toward the budget. Trials whose
        final result is recorded are COMPLETED instead. Returns the requeued numbers."""
        requeued = []
        with self._lock:
            for trial in sorted(self._trials.values(), key=lambda t: t.number):
                if not trial.state.is_in_flight():
                    continue
                if self._has_result(trial):
                    self._set_state(trial, TrialState.COMPLETED, "")
                    continue
                self._queue_again(trial, f"launched again: {why}")
                requeued.append(trial.number)
        return requeued

    def live_tasks(self) -> list[tuple[str, str]]:
        """``(task_id, agent_id)`` of the tasks launched and not yet ended (to reconcile)."""
        live = set(self.live_task_ids())
        return [(task_id, agent) for task_id, agent, _ in self.task_locations()
                if task_id in live and agent]

    def appcore_task_id(self) -> str:
        """AppCore's current task (its latest launch), or "" before the first."""
        with self._lock:
            return self._appcore_task_id

    def finishing_task_ids(self) -> list[str]:
        """Live tasks of trials whose final result is recorded (given time to exit)."""
        with self._lock:
            return sorted(self._finishing_tasks)

    def task_locations(self) -> list[tuple[str, str, bool]]:
        """``(task_id, agent_id, live)`` of every task launched for this job, AppCore's too."""
        with self._lock:
            live = set(self.live_task_ids())
            out = [(t.task_id, t.agent_id, t.task_id in live)
                   for t in sorted(self._trials.values(), key=lambda t: t.number)
                   if t.task_id and t.agent_id]
        out += [(str(run["task_id"]), str(run["agent_id"]), str(run["task_id"]) in live)
                for run in self.store.appcore_runs() if run["agent_id"]]
        return out

    def _queue_again(self, trial: TrialRow, message: str) -> None:
        """Wait for an offer again under a new task id (same number and assignment); a launch
        that had a task counts as a retry."""
        if trial.task_id:
            trial.retries += 1
        trial.task_id = ""
        trial.agent_id = ""
        self.store.update_trial(trial.number, retries=trial.retries, task_id="", agent_id="")
        self._set_state(trial, TrialState.PENDING, message)

    def _set_state(self, trial: TrialRow, state: TrialState, message: str) -> None:
        fields: dict[str, Any] = {"state": state}
        if message:
            fields["message"] = message
        if state.is_finished():
            fields["ended_at"] = time.time()
        self.store.update_trial(trial.number, **fields)
        trial.state = state
        if message:
            trial.message = message
        if "ended_at" in fields:
            trial.ended_at = fields["ended_at"]
        self._emit(trial.number)

    def _emit(self, number: int) -> None:
        self._sequence += 1
        self._events.append((self._sequence, number))
        self._cond.notify_all()


def sorted_trials(trials: Sequence[TrialRow], maximize: bool) -> list[TrialRow]:
    """Trials best first: completed by objective (equal ones in the order they completed, so
    the best so far stays the best until another beats it), then the rest by number."""
    sign = -1.0 if maximize else 1.0

    def key(t: TrialRow) -> tuple[bool, float, float, int]:
        # Only a completed trial's objective ranks it: a killed or failed trial may carry an
        # intermediate value, and "the rest" sort by number, not by that value.
        ranked = t.state == TrialState.COMPLETED and t.objective is not None
        return (not ranked, sign * (t.objective or 0.0) if ranked else 0.0,
                (t.ended_at or math.inf) if ranked else 0.0, t.number)

    return sorted(trials, key=key)
