"""AppCore's trial loop with Population Based Training, against the stand-in framework of
``test_loop_update``: a report in the bottom of the population stops the trial (recorded as
pruned, the message saying it was replaced) and its replacement is submitted with its parent;
once the budget has no trial left, nothing is replaced."""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
import threading

import pytest

from disauto.appcore.algorithms import create_algorithm
from disauto.appcore.loop import TrialLoop
from disauto.common.report import Report
from disauto.common.space import Assignment
from disauto.common.space import space_from_proto
from disauto.protos import common_pb2
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import wait_for
from tests.appcore.test_loop_update import StandIn


class Population(StandIn):
    """The stand-in, also recording reports, prunes and each submission's parents."""

    def __init__(self) -> None:
        super().__init__()
        self.parents: list[dict[int, int]] = []
        self.pruned: list[tuple[int, str]] = []

    def submit_many(self, trials: Sequence[tuple[int, Assignment]], priority: int,
                    parents: Mapping[int, int] | None = None) -> list[common_pb2.Trial]:
        self.parents.append(dict(parents or {}))
        return super().submit_many(trials, priority)

    def record(self, report: Report) -> common_pb2.Trial:
        return common_pb2.Trial(number=report.trial, state=common_pb2.RUNNING)

    def prune(self, number: int, message: str) -> None:
        self.pruned.append((number, message))
        self.send(trial=common_pb2.Trial(number=number, state=common_pb2.PRUNED))


class PbtJob:
    def __init__(self, max_trials: int) -> None:
        self.spec = job_config(max_trials=max_trials, parallelism=4).search
        self.framework = Population()
        self.algorithm = create_algorithm("pbt", space_from_proto(self.spec.space), seed=3,
                                          direction="maximize",
                                          settings={"perturbation_interval": "2"},
                                          parallelism=4)
        self.loop = TrialLoop(self.framework, self.spec, self.algorithm, [])  # type: ignore[arg-type]
        self.thread = threading.Thread(target=self.loop.run, args=(0,), daemon=True)
        self.thread.start()
        wait_for(lambda: self.framework.numbers() == [[1, 2, 3, 4]], what="the population")

    def report_all(self, step: int, scores: dict[int, float]) -> list[int]:
        """Each trial reports its score at ``step``; those the loop tells to stop."""
        return [number for number, score in sorted(scores.items())
                if self.loop.report(Report(number, {"accuracy": score}, step, False, 1.0))]


@pytest.fixture
def jobs() -> Iterator[list[PbtJob]]:
    made: list[PbtJob] = []
    yield made
    for job in made:
        job.framework._events.put(None)
        job.thread.join(5)


def test_the_bottom_trial_is_stopped_and_its_replacement_submitted_with_its_parent(
        jobs: list[PbtJob]) -> None:
    job = PbtJob(max_trials=6)
    jobs.append(job)
    scores = {1: 0.9, 2: 0.1, 3: 0.5, 4: 0.6}
    assert job.report_all(1, scores) == []
    assert job.report_all(2, scores) == [2]
    [(number, message)] = job.framework.pruned
    assert number == 2 and message.startswith("replaced at step 2 (accuracy=0.1)")
    wait_for(lambda: job.framework.numbers() == [[1, 2, 3, 4], [5]], what="the replacement")
    assert job.framework.parents == [{}, {5: 1}]


def test_no_trial_is_replaced_once_the_budget_has_none_left(jobs: list[PbtJob]) -> None:
    job = PbtJob(max_trials=4)
    jobs.append(job)
    scores = {1: 0.9, 2: 0.1, 3: 0.5, 4: 0.6}
    assert job.report_all(1, scores) == []
    assert job.report_all(2, scores) == []
    assert job.framework.pruned == []


def test_a_restarted_appcore_is_told_each_trial_s_parent() -> None:
    history = [common_pb2.Trial(number=1, state=common_pb2.RUNNING),
               common_pb2.Trial(number=5, state=common_pb2.RUNNING, parent=1)]
    assert [r.parent for r in TrialLoop.records(history)] == [None, 1]
