"""AppCore's trial loop taking ``da-job update``'s spec events, against a stand-in framework.

No server: the stand-in records what the loop submits and how it ends the job, and feeds the
WatchTrials stream from a queue, as the framework's events would arrive.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
import queue
import threading
from typing import Any

import grpc
import pytest

from disauto.appcore.algorithms import create_algorithm
from disauto.appcore.loop import TrialLoop
from disauto.common.space import Assignment
from disauto.common.space import space_from_proto
from disauto.protos import common_pb2
from disauto.protos import framework_pb2
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import wait_for


class Refused(grpc.RpcError):
    """What a stub raises for FAILED_PRECONDITION."""

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.FAILED_PRECONDITION

    def details(self) -> str:
        return "refused"


class StandIn:
    """The framework as the loop sees it: submissions, the end, and the event stream."""

    def __init__(self) -> None:
        self.submitted: list[list[tuple[int, Assignment]]] = []
        self.finished: list[int] = []
        self.refuse_submit = 0
        self.refuse_finish = 0
        self._events: queue.SimpleQueue[framework_pb2.TrialEvent | None] = queue.SimpleQueue()
        self._sequence = 0

    def submit_many(self, trials: Sequence[tuple[int, Assignment]], priority: int,
                    parents: Mapping[int, int] | None = None) -> list[common_pb2.Trial]:
        if self.refuse_submit:
            self.refuse_submit -= 1
            raise Refused()
        self.submitted.append(list(trials))
        return []

    def finish(self, outcome: int, message: str) -> None:
        if self.refuse_finish:
            self.refuse_finish -= 1
            raise Refused()
        self.finished.append(outcome)
        self._events.put(None)  # the framework closes the stream when the job ends

    def watch(self, after: int) -> Iterator[framework_pb2.TrialEvent]:
        return iter(self._events.get, None)

    def numbers(self) -> list[list[int]]:
        return [[number for number, _ in batch] for batch in self.submitted]

    def send(self, **change: Any) -> None:
        self._sequence += 1
        self._events.put(framework_pb2.TrialEvent(sequence=self._sequence, **change))

    def complete(self, *numbers: int) -> None:
        for number in numbers:
            self.send(trial=common_pb2.Trial(number=number, state=common_pb2.COMPLETED,
                                             objective=0.5))

    def update(self, spec: common_pb2.JobSpec, **values: int) -> None:
        new = common_pb2.JobSpec()
        new.CopyFrom(spec)
        for name, value in values.items():
            setattr(new, name, value)
        self.send(spec=new)


class Job:
    """A loop running in a thread against a stand-in."""

    def __init__(self, max_trials: int, parallelism: int) -> None:
        self.spec = job_config(max_trials=max_trials, parallelism=parallelism).search
        self.framework = StandIn()
        self.algorithm = create_algorithm("random-search", space_from_proto(self.spec.space),
                                          seed=3, direction="maximize", settings={},
                                          parallelism=parallelism)
        self.asked: list[int] = []
        ask = self.algorithm.ask
        self.algorithm.ask = lambda number: self.asked.append(number) or ask(number)  # type: ignore[method-assign]
        self.loop = TrialLoop(self.framework, self.spec, self.algorithm, [])  # type: ignore[arg-type]
        self.thread = threading.Thread(target=self.loop.run, args=(0,), daemon=True)
        self.thread.start()

    def submitted(self, *batches: list[int]) -> None:
        wait_for(lambda: self.framework.numbers() == list(batches),
                 what=f"batches {list(batches)}, got {self.framework.numbers()}")

    def ends(self, outcome: int = framework_pb2.BUDGET_SPENT) -> None:
        self.thread.join(5)
        assert not self.thread.is_alive() and self.framework.finished == [outcome]


@pytest.fixture
def jobs() -> Iterator[list[Job]]:
    made: list[Job] = []
    yield made
    for job in made:
        job.framework._events.put(None)
        job.thread.join(5)


def test_more_budget_and_parallelism_fill_the_new_slots_at_once(jobs: list[Job]) -> None:
    job = Job(max_trials=2, parallelism=1)
    jobs.append(job)
    job.submitted([1])
    job.framework.update(job.spec, max_trials=4, parallelism=2)
    job.submitted([1], [2])  # the new slot, before any trial ended
    job.framework.complete(1)
    job.submitted([1], [2], [3])
    job.framework.complete(2, 3)
    job.submitted([1], [2], [3], [4])
    assert job.algorithm.parallelism == 2
    job.framework.complete(4)
    job.ends()
    assert job.asked == [1, 2, 3, 4]


def test_less_parallelism_lets_running_trials_finish_and_does_not_refill(
        jobs: list[Job]) -> None:
    job = Job(max_trials=5, parallelism=3)
    jobs.append(job)
    job.submitted([1, 2, 3])
    job.framework.update(job.spec, parallelism=1)
    job.framework.complete(1)
    job.framework.complete(2)
    job.framework.complete(3)
    job.submitted([1, 2, 3], [4])  # only once one trial ran, one slot at a time
    job.framework.complete(4)
    job.submitted([1, 2, 3], [4], [5])


def test_a_spec_without_a_slot_is_refused_and_the_job_goes_on_as_it_was(
        jobs: list[Job], caplog: pytest.LogCaptureFixture) -> None:
    """The framework refuses parallelism 0 (framework/job_update.py); a spec that still says so
    on the wire changes nothing: the budget it also carries included."""
    job = Job(max_trials=3, parallelism=2)
    jobs.append(job)
    job.submitted([1, 2])
    with caplog.at_level("ERROR", logger="disauto.appcore.loop"):
        job.framework.update(job.spec, max_trials=10, parallelism=0)
        job.framework.complete(1)
        job.submitted([1, 2], [3])
    assert "ignoring a job update to parallelism 0: it must be at least 1" in caplog.text
    assert job.algorithm.parallelism == 2
    job.framework.complete(2, 3)
    job.ends()
    assert job.asked == [1, 2, 3]


def test_a_lowered_budget_ends_the_job_when_it_is_reached(jobs: list[Job]) -> None:
    job = Job(max_trials=10, parallelism=2)
    jobs.append(job)
    job.submitted([1, 2])
    job.framework.update(job.spec, max_trials=3)
    job.framework.complete(1, 2)
    job.submitted([1, 2], [3])
    job.framework.complete(3)
    job.ends()


def test_a_budget_spent_refused_because_the_budget_grew_goes_on(jobs: list[Job]) -> None:
    job = Job(max_trials=1, parallelism=1)
    jobs.append(job)
    job.submitted([1])
    job.framework.refuse_finish = 1  # the framework took da-job update's new budget first
    job.framework.complete(1)
    wait_for(lambda: job.framework.refuse_finish == 0, what="a refused BUDGET_SPENT")
    assert job.thread.is_alive() and not job.loop.finished
    job.framework.update(job.spec, max_trials=2)
    job.submitted([1], [2])
    job.framework.complete(2)
    job.ends()


def test_a_batch_refused_over_a_lowered_budget_is_submitted_when_it_fits(
        jobs: list[Job]) -> None:
    job = Job(max_trials=6, parallelism=2)
    jobs.append(job)
    job.submitted([1, 2])
    job.framework.refuse_submit = 1  # the budget was lowered to 2 meanwhile
    job.framework.complete(1)
    wait_for(lambda: job.framework.refuse_submit == 0, what="a refused submission")
    refused = job.asked[-1]
    job.framework.update(job.spec, max_trials=3)  # then raised to 3
    job.submitted([1, 2], [3])
    assert refused == 3 and job.asked == [1, 2, 3]  # asked once, submitted when it fit
    job.framework.complete(2, 3)
    job.ends()
