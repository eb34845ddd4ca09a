"""What AppCore and the runners send in: submitted trials and reported metrics, checked before
anything is recorded, then written to the trial book.

A submission is all or nothing and idempotent per number (a retried SubmitTrials answers the
recorded trials); a report is recorded before anyone is told of it, and the record closes when
the job ends. Methods run under the job's lock (the controller's).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from disauto.common import gpu_samples
from disauto.common.errors import InvalidAssignmentError
from disauto.common.gpu_samples import GpuReading
from disauto.common.metrics import MetricError
from disauto.common.metrics import check_constraints
from disauto.common.metrics import check_metric_count
from disauto.common.metrics import check_metrics
from disauto.common.objectives import Objectives
from disauto.common.report import Report
from disauto.common.space import SearchSpace
from disauto.common.telemetry import Sample
from disauto.common.trial_state import TrialState
from disauto.framework._errors import AlreadyExistsError
from disauto.framework._errors import FailedPreconditionError
from disauto.framework._errors import InvalidArgumentError
from disauto.framework._job.book import TrialBook
from disauto.framework._job.book import has_result
from disauto.framework._store import TrialRow


Submission = tuple[int, Mapping[str, Any], int]
"""A submitted trial: ``(number, assignment, priority)``."""

Start = tuple[dict[str, Any], dict[str, Any] | None]
"""How a new trial starts from another's checkpoint (Population Based Training's exploit,
``framework/_lineage.py``): its lineage and the resume point of the copied checkpoint (None:
the parent had none; it starts from scratch)."""


def descend(book: TrialBook, number: int, start: Start) -> None:
    """Record new trial ``number``'s lineage and the checkpoint its first try resumes from,
    before it can be launched (under the job's lock)."""
    lineage, point = start
    book.require(number).lineage = lineage
    book.store.update_trial(number, lineage=lineage)
    if point is not None:
        book.resume_from(number, point)


class Intake:
    """Checks and records what is sent in for the job whose trials ``book`` holds.

    Args:
        book: the job's trials.
        space: the job's search space (what an assignment must fit).
    """

    def __init__(self, book: TrialBook, space: SearchSpace) -> None:
        self._book = book
        self._space = space

    def submit(self, trials: Sequence[Submission], budget: int,
               starts: Mapping[int, Start] | None = None) -> list[Submission]:
        """Record the new trials of a submission (within ``budget`` trials in all), each in
        ``starts`` descending from another trial; the new.

        Raises:
            InvalidArgumentError: a number below 1 or given twice, an assignment outside the
                space.
            AlreadyExistsError: a recorded number with another assignment.
            FailedPreconditionError: the new trials would exceed the budget.
        """
        fresh: list[Submission] = []
        seen: set[int] = set()
        for number, assignment, priority in trials:
            if number < 1:
                raise InvalidArgumentError(f"trial number must be >= 1, got {number}")
            if number in seen:
                raise InvalidArgumentError(f"trial {number} appears twice in one submission")
            seen.add(number)
            existing = self._book.get(number)
            if existing is not None:
                if existing.assignment != dict(assignment):
                    raise AlreadyExistsError(
                        f"trial {number} already exists with another assignment")
                continue
            try:
                self._space.validate_assignment(assignment)
            except InvalidAssignmentError as err:
                which = f"trial {number}: " if len(trials) > 1 else ""
                raise InvalidArgumentError(f"{which}{err}") from None
            fresh.append((number, assignment, priority))
        recorded = len(self._book)
        if fresh and recorded + len(fresh) > budget:
            raise FailedPreconditionError(
                f"the trial budget of {budget} is spent" if recorded >= budget
                else f"{len(fresh)} new trials would exceed the trial budget of {budget} "
                     f"({recorded} recorded)")
        self._book.add(fresh)
        for number, _, _ in fresh:
            if starts and number in starts:
                descend(self._book, number, starts[number])
        return fresh

    def gpu_samples(self, number: int, readings: Sequence[GpuReading]) -> list[Sample]:
        """A trial's GPU samples (its runner measured them) as telemetry of the agent it ran
        on; any trial that was launched may send them, also after it ended.

        Raises:
            InvalidArgumentError: a bad batch (:func:`common.gpu_samples.check_readings`).
            NotFoundError: no such trial.
            FailedPreconditionError: the trial was never launched.
        """
        try:
            gpu_samples.check_readings(readings)
        except gpu_samples.GpuSampleError as err:
            raise InvalidArgumentError(str(err)) from None
        node = self._book.require(number).agent_id
        if not node:
            raise FailedPreconditionError(
                f"trial {number} was never launched: it has no agent to record GPU samples of")
        return gpu_samples.as_samples(number, node, readings)

    def report(self, report: Report, objectives: Objectives) -> TrialRow:
        """Record a runner's report and the trial's columns it changes; the trial after it.

        Raises:
            NotFoundError: no such trial.
            FailedPreconditionError: the trial already sent its final result.
            InvalidArgumentError: a metric that is not a named, finite number.
        """
        trial = self._book.require(report.trial)
        if trial.final_reported:
            raise FailedPreconditionError(
                f"trial {report.trial} already reported its final result")
        try:
            metrics = check_metrics(report.metrics)
            constraints = check_constraints(report.constraints, report.final)
        except (MetricError, TypeError) as err:
            raise InvalidArgumentError(str(err)) from None
        merged = {**trial.metrics, **metrics}
        try:  # the trial's row keeps every metric it reported: bounded as a report is
            check_metric_count(len(merged), f"trial {report.trial} would have", "a trial")
        except MetricError as err:
            raise InvalidArgumentError(str(err)) from None
        fields: dict[str, Any] = {
            "metrics": merged,
            "training_seconds": max(0.0, float(report.elapsed_seconds)),
            "final_reported": report.final,
            **({"constraints": tuple(constraints)} if constraints else {}),
        }
        values = objectives.values(merged)
        if values is not None:  # the first objective, once every objective is reported
            fields["objective"] = values[0]
        self._book.reported(trial, report, metrics, fields)
        if trial.state == TrialState.PENDING and has_result(trial):
            # The final report of an earlier launch given up on while its agent was
            # unreachable (it ran on): the trial's result; it need not run again.
            self._book.set_state(trial, TrialState.COMPLETED,
                                 "completed by an earlier launch's final report")
        return trial
