"""AppCore's trial loop: keep ``parallelism`` trials in flight and decide when the job ends.

The loop asks its search algorithm for assignments and submits them to the framework; it
follows the framework's trial events (a trial ran, completed, failed…) and tells the algorithm;
runners' reports reach it through :meth:`TrialLoop.report`. It ends the job when the budget is
spent, the target is reached, the space is exhausted or too many trials failed.

``da-job update`` reaches it as a spec event on the same stream: the loop goes on with the new
budget and parallelism at once. More parallelism fills the new slots in the same batch; less
lets the running trials finish and does not refill their slots until fewer run than the new
parallelism; a larger budget continues the search, and the job's end is judged by the new one.

Thread safety: ``report`` runs on gRPC threads, ``run`` on the main thread; one lock guards the
state, and the algorithm is only called under it.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Sequence
from dataclasses import dataclass
import logging
import queue
import threading
import time

import grpc

from disauto.appcore.algorithms import FINISHED
from disauto.appcore.algorithms import ObjectiveValue
from disauto.appcore.algorithms import SearchAlgorithm
from disauto.appcore.algorithms import TrialRecord
from disauto.appcore.framework_client import FrameworkClient
from disauto.appcore.priority import priority_for
from disauto.appcore.pruners import PrunerRecord
from disauto.appcore.pruners import create_pruner
from disauto.common.gpu_samples import GpuReading
from disauto.common.objectives import Objectives
from disauto.common.objectives import is_feasible
from disauto.common.report import Report
from disauto.common.space import Assignment
from disauto.common.space import assignment_from_proto
from disauto.common.trial_state import IN_FLIGHT as TRIAL_IN_FLIGHT
from disauto.common.trial_state import TrialState
from disauto.protos import common_pb2
from disauto.protos import framework_pb2


logger = logging.getLogger(__name__)

IN_FLIGHT = frozenset(state.to_proto() for state in TRIAL_IN_FLIGHT)


def _replayed(history: list[common_pb2.Trial]) -> list[tuple[common_pb2.Trial, TrialState]]:
    """Recorded trials by number, each with its state as the search sees it."""
    return [(trial, _told_state(trial)) for trial in sorted(history, key=lambda t: t.number)]


def _value_if(trial: common_pb2.Trial, state: TrialState,
              states: tuple[TrialState, ...]) -> float | None:
    """The trial's objective when its state is one of ``states``."""
    return trial.objective if trial.HasField("objective") and state in states else None


def _metrics(trial: common_pb2.Trial) -> dict[str, float]:
    return {metric.name: metric.value for metric in trial.metrics}


def _told_value(trial: common_pb2.Trial, state: TrialState,
                objectives: Objectives) -> ObjectiveValue | None:
    """What the search is told of a trial's result: its objective (completed, or a pruned
    trial's last intermediate value), or with several objectives every value (completed)."""
    if not objectives.several:
        return _value_if(trial, state, (TrialState.COMPLETED, TrialState.PRUNED))
    if state != TrialState.COMPLETED:
        return None
    return objectives.values(_metrics(trial))


def _told_state(trial: common_pb2.Trial) -> TrialState:
    """A recorded trial's state as the search and the pruner see it (in flight: RUNNING)."""
    state = TrialState.from_proto(trial.state)
    return TrialState.RUNNING if state.is_in_flight() else state


ASK_REPORT_EVERY = 1000
"""AppCore logs the latency of its algorithm's ``ask`` over each this many suggestions."""


class AskTimes:
    """How long the algorithm took to suggest, logged over every :data:`ASK_REPORT_EVERY`
    suggestions (``bench.scale`` reads the lines from AppCore's log; a user sees whether the
    search itself slows the job as its history grows). Bounded: one float per suggestion
    until the next line."""

    def __init__(self, every: int = ASK_REPORT_EVERY) -> None:
        self._every = every
        self._seconds: list[float] = []

    def add(self, seconds: float, submitted: int) -> None:
        """One ``ask`` took ``seconds``; ``submitted`` trials are numbered so far."""
        self._seconds.append(seconds)
        if submitted % self._every == 0 and self._seconds:
            ordered = sorted(self._seconds)

            def at(q: float) -> float:
                return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

            logger.info("suggestions at %d trials: %d asked, p50 %.1f ms, p99 %.1f ms, "
                        "max %.1f ms", submitted, len(ordered), at(0.5), at(0.99), at(1.0))
            self._seconds.clear()


@dataclass
class _Counts:
    submitted: int = 0
    completed: int = 0
    failed: int = 0
    pruned: int = 0
    last_failure: str = ""


class TrialLoop:
    """Runs the search of one job against the framework.

    Args:
        framework: the framework client.
        spec: the job.
        algorithm: the search algorithm (already restored from ``history``).
        history: the trials recorded before this AppCore attached.
    """

    def __init__(
        self,
        framework: FrameworkClient,
        spec: common_pb2.JobSpec,
        algorithm: SearchAlgorithm,
        history: list[common_pb2.Trial],
    ) -> None:
        self._framework = framework
        self._spec = spec
        self._algorithm = algorithm
        self._lock = threading.RLock()
        self._in_flight: set[int] = set()
        self._counts = _Counts()
        self._exhausted = False
        self._finished = threading.Event()
        self._next_number = 1
        # Trials asked of the algorithm whose submission the framework refused (the budget was
        # lowered meanwhile): submitted first when the budget allows, as each number is asked
        # only once.
        self._held: list[tuple[int, Assignment]] = []
        self._objectives = Objectives.from_spec(spec)
        self._ask_times = AskTimes()
        # Early stopping (--early-stopping): rebuilt from the recorded intermediate values.
        self._pruner = create_pruner(
            spec.early_stopping,
            direction=self._objectives.directions[0],
            settings=dict(spec.early_stopping_settings),
        )
        self._pruner.restore(self.pruner_records(history))
        # The paper's Algorithm 1 (appcore/priority.py): the priority each trial is submitted with.
        self.priority = priority_for(
            spec.dynamic_priority, spec.priority_settings,
            maximize=spec.direction != common_pb2.MINIMIZE,
            history=[t.objective for t in sorted(history, key=lambda t: t.number)
                     if t.state == common_pb2.COMPLETED and t.HasField("objective")],
        )
        for trial in history:
            self._next_number = max(self._next_number, trial.number + 1)
            self._counts.submitted += 1
            if trial.state in IN_FLIGHT:
                self._in_flight.add(trial.number)
            else:
                self._count_terminal(trial)

    @staticmethod
    def records(history: list[common_pb2.Trial],
                objectives: Objectives | None = None) -> list[TrialRecord]:
        """The algorithm's view of recorded trials (for ``restore``): a pruned trial keeps its
        last intermediate value; with several ``objectives`` a completed one has every value."""
        objectives = objectives or Objectives(("objective",), ("maximize",))
        return [TrialRecord(trial.number, assignment_from_proto(trial.assignment),
                            _told_value(trial, state, objectives), state,
                            tuple(trial.constraints), trial.parent or None)
                for trial, state in _replayed(history)]

    @staticmethod
    def pruner_records(history: list[common_pb2.Trial]) -> list[PrunerRecord]:
        """The early-stopping rule's view of recorded trials (for ``restore``)."""
        return [PrunerRecord(trial.number, state,
                             tuple((v.step, v.value) for v in trial.intermediate_values),
                             _value_if(trial, state, (TrialState.COMPLETED,)))
                for trial, state in _replayed(history)]

    @property
    def counts(self) -> tuple[int, int, int]:
        """Trials completed, failed and pruned so far."""
        with self._lock:
            return self._counts.completed, self._counts.failed, self._counts.pruned

    @property
    def finished(self) -> bool:
        return self._finished.is_set()

    # -- the loop ------------------------------------------------------------------------------

    def run(self, after_sequence: int) -> None:
        """Fill the slots, then follow trial events until the job ends.

        Events that arrived together (several trials ending at once) are handled as one batch:
        each is told to the algorithm, then the freed slots are filled with one submission.
        """
        with self._lock:
            self._check_end()
            self._fill()
        if self.finished:
            return
        stream = self._framework.watch(after_sequence)
        events: queue.SimpleQueue[framework_pb2.TrialEvent | BaseException | None] = \
            queue.SimpleQueue()
        reader = threading.Thread(target=_read_stream, args=(stream, events),
                                  name="appcore-watch", daemon=True)
        reader.start()
        try:
            while not self.finished:
                batch = [events.get()]
                while not events.empty():
                    batch.append(events.get())
                with self._lock:
                    for item in batch:
                        if item is None:  # the framework closed the stream
                            self._finished.set()
                            break
                        if isinstance(item, BaseException):
                            if isinstance(item, grpc.RpcError) and (
                                    self.finished or item.code() == grpc.StatusCode.CANCELLED):
                                self._finished.set()
                                break
                            raise item
                        self._on_event(item)
                    self._check_end()
                    self._fill()
        finally:
            cancel = getattr(stream, "cancel", None)
            if cancel is not None:
                cancel()
        self._finished.set()

    def _free_slots(self) -> int:
        """Trials to submit now: free slots, within what is left of the budget."""
        if self.finished:
            return 0
        return max(0, min(self._spec.parallelism - len(self._in_flight),
                          self._spec.max_trials - self._counts.submitted))

    def _fill(self) -> None:
        """Ask for as many trials as there are free slots, and submit them in one call."""
        slots = self._free_slots()
        batch = self._held[:slots]
        while not self._exhausted and len(batch) < slots:
            number = self._next_number + len(batch)
            asked = time.perf_counter()
            suggestion = self._algorithm.ask(number)
            self._ask_times.add(time.perf_counter() - asked, number)
            if suggestion is FINISHED:
                logger.info("the search space is exhausted after %d trials", number - 1)
                self._exhausted = True
                break
            if suggestion is None:
                break  # nothing now (e.g. a synchronous batch is still running)
            batch.append((number, suggestion))
        if batch:
            try:
                self._framework.submit_many(batch, priority=self.priority.priority,
                                            parents=self._parents(batch))
            except grpc.RpcError as err:
                if err.code() == grpc.StatusCode.FAILED_PRECONDITION:
                    # The budget was lowered (its spec event follows) or the job ended (the
                    # stream closes): either way the next event says what to do.
                    logger.info("the framework refused trials %d-%d: %s", batch[0][0],
                                batch[-1][0], err.details())
                    self._held = batch + self._held[len(batch):]
                    return
                raise
            self._held = self._held[len(batch):]
            self._next_number = max(self._next_number, batch[-1][0] + 1)
            self._counts.submitted += len(batch)
            self._in_flight.update(number for number, _ in batch)
        if self._exhausted:
            self._check_end()

    def _parents(self, batch: Sequence[tuple[int, Assignment]]) -> dict[int, int]:
        """The trials of ``batch`` that start from another trial's checkpoint, and which."""
        parents = {number: self._algorithm.parent_of(number) for number, _ in batch}
        return {number: parent for number, parent in parents.items() if parent}

    def _count_terminal(self, trial: common_pb2.Trial) -> None:
        if trial.state == common_pb2.COMPLETED:
            self._counts.completed += 1
        elif trial.state == common_pb2.FAILED:
            self._counts.failed += 1
            self._counts.last_failure = f"trial-{trial.number:04d}: {trial.message}"
        elif trial.state == common_pb2.PRUNED:
            self._counts.pruned += 1

    def _on_event(self, event: framework_pb2.TrialEvent) -> None:
        if event.WhichOneof("change") == "spec":
            self._on_spec(event.spec)
        else:
            self._on_trial(event.trial)

    def _on_spec(self, spec: common_pb2.JobSpec) -> None:
        """Go on with the job's spec as ``da-job update`` changed it (budget, parallelism); a
        spec without a trial in flight (parallelism < 1, which the framework refuses) is
        refused in one line and the job goes on as it was."""
        if spec.parallelism < 1:
            logger.error("ignoring a job update to parallelism %d: it must be at least 1",
                         spec.parallelism)
            return
        logger.info("the job was updated: trial budget %d → %d, parallelism %d → %d",
                    self._spec.max_trials, spec.max_trials, self._spec.parallelism,
                    spec.parallelism)
        self._spec = spec
        # Sizes a synchronous Bayesian search's next batches.
        self._algorithm.parallelism = spec.parallelism

    def _on_trial(self, trial: common_pb2.Trial) -> None:
        if trial.state in IN_FLIGHT or trial.number not in self._in_flight:
            return
        self._in_flight.discard(trial.number)
        self._count_terminal(trial)
        value = trial.objective if (trial.state == common_pb2.COMPLETED
                                    and trial.HasField("objective")) else None
        outcome = _told_state(trial)
        # A pruned trial is told its last intermediate value, where the algorithm can use it.
        told = _told_value(trial, outcome, self._objectives)
        self._algorithm.tell(trial.number, told, outcome, tuple(trial.constraints))
        self._pruner.finish(trial.number, outcome, value)
        if value is not None and (evaluation := self.priority.tell(value)) is not None \
                and evaluation.lowered:
            logger.info("results converge (g=%g, g'=%s, G=%g): priority %d for the next trials",
                        evaluation.gap, evaluation.mean_gap, evaluation.threshold,
                        evaluation.priority)
        logger.info("trial %d ended %s%s", trial.number, common_pb2.TrialState.Name(trial.state),
                    f" with {self._spec.objective}={value:g}" if value is not None else "")

    def _check_end(self) -> None:
        if self.finished:
            return
        limit = self._spec.max_failed_trials
        if self._counts.failed > limit:
            self._finish(framework_pb2.TOO_MANY_FAILURES,
                         f"{self._counts.failed} trials failed (--max-failed-trials {limit}); "
                         f"last: {self._counts.last_failure}")
        elif self._in_flight:
            return
        elif self._exhausted:
            self._finish(framework_pb2.SPACE_EXHAUSTED,
                         f"the search space is exhausted after {self._counts.submitted} trials")
        elif self._counts.submitted >= self._spec.max_trials:
            self._finish(framework_pb2.BUDGET_SPENT,
                         f"the budget of {self._spec.max_trials} trials is spent")

    def _finish(self, outcome: int, message: str) -> None:
        self._finished.set()
        logger.info("ending the job: %s", message)
        try:
            self._framework.finish(outcome, message)
        except grpc.RpcError as err:
            if outcome != framework_pb2.BUDGET_SPENT \
                    or err.code() != grpc.StatusCode.FAILED_PRECONDITION:
                raise
            # da-job update raised the budget meanwhile; its spec event is on the stream.
            logger.info("the framework keeps the job going: %s", err.details())
            self._finished.clear()

    # -- reports from runners --------------------------------------------------------------------

    def record_gpu_samples(self, number: int, readings: Sequence[GpuReading]) -> int:
        """Have the framework record a runner's GPU samples; how many it recorded. AppCore
        itself does nothing with them (they are the trial's telemetry, not its metrics)."""
        return self._framework.record_gpu_samples(number, readings)

    def report(self, report: Report) -> bool:
        """Record a runner's report through the framework; True when the runner should stop.

        An intermediate report of the objective (with a step) goes to the early-stopping rule;
        when it prunes the trial, the framework records it PRUNED (freeing its slot at once)
        and the runner is told to stop.
        """
        number, metrics, step = report.trial, report.metrics, report.step
        try:
            trial = self._framework.record(report)
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.ABORTED:
                raise
            # The job has ended (the framework's record is closed): the runner stops.
            logger.info("trial %d reported after the job ended: %s", number, err.details())
            self._finished.set()
            return True
        objective = self._spec.objective
        with self._lock:
            if trial.state == common_pb2.PRUNED:
                return True
            if report.final and trial.HasField("objective") and self._reaches_target(trial):
                self._finish(framework_pb2.TARGET_REACHED,
                             f"trial {number} reached {self._target_text(trial)}")
            intermediate = (not report.final and step is not None and objective in metrics
                            and not self.finished)
            prune = intermediate and self._pruner.report(number, step, metrics[objective])
            replace = intermediate and not prune and self._algorithm.intermediate(
                number, step, metrics[objective], may_replace=self._may_add_trial())
            if not (prune or replace):
                return self.finished
            message = (f"replaced at step {step} ({objective}={metrics[objective]:g}): in the "
                       "bottom of the population, a new trial continues a better trial's "
                       "checkpoint" if replace else
                       f"stopped early by {self._pruner.describe()} at step {step} "
                       f"({objective}={metrics[objective]:g})")
        logger.info("trial %d: %s", number, message)
        self._framework.prune(number, message)
        return True

    def _may_add_trial(self) -> bool:
        """Whether the budget allows one more trial than those submitted and held."""
        return self._counts.submitted + len(self._held) < self._spec.max_trials

    def _reaches_target(self, trial: common_pb2.Trial) -> bool:
        """Whether a feasible trial's result reaches the target (every objective's)."""
        values = self._objectives.values(_metrics(trial))
        return (values is not None and is_feasible(trial.constraints)
                and self._objectives.reached(values))

    def _target_text(self, trial: common_pb2.Trial) -> str:
        """``accuracy=0.93 (target 0.9)``, one per objective."""
        metrics = _metrics(trial)
        return ", ".join(f"{name}={metrics[name]:g} (target {target:g})"
                         for name, target in zip(self._objectives.names,
                                                 self._objectives.targets, strict=True))


def _read_stream(
    stream: Iterator[framework_pb2.TrialEvent],
    events: queue.SimpleQueue[framework_pb2.TrialEvent | BaseException | None],
) -> None:
    """Move the events of a WatchTrials stream to ``events``; then None, or the error."""
    try:
        for event in stream:
            events.put(event)
    except BaseException as err:  # noqa: BLE001 -- handed to the loop's thread
        events.put(err)
    else:
        events.put(None)
