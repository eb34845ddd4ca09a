"""AppCore's trial loop against the real framework, in process.

A JobController and JobStore (tmp_path) behind the framework's real gRPC server; AppCore's real
FrameworkClient, TrialLoop and search algorithm (``random-search``, ``grid-search``). The tests
play the Mesos side through the controller's scheduler-facing API (launch_requests,
trial_launched, on_status with Mesos TaskStatus dicts), as the pymesos scheduler does, and the
runners' side through ``TrialLoop.report`` (what AppCore's gRPC servicer calls).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
import itertools
from pathlib import Path
from typing import Any

import pytest

from disauto.appcore.algorithms import create_algorithm
from disauto.appcore.loop import TrialLoop
from disauto.common.report import Report
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import SearchSpace
from disauto.common.space import assignment_from_proto
from disauto.common.trial_state import TrialState
from disauto.framework._job import APPCORE_KEY
from disauto.protos import common_pb2
from disauto.protos import framework_pb2
from disauto.testing.inprocess import AGENT
from disauto.testing.inprocess import DEFAULT_SPACE
from disauto.testing.inprocess import AppCore
from disauto.testing.inprocess import Framework
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import task_status
from disauto.testing.inprocess import wait_for


pytestmark = pytest.mark.integration  # starts processes or servers


GRID = SearchSpace((
    CategoricalParam("optimizer", ("sgd", "adam", "rmsprop")),
    IntParam("layers", 1, 2),
    CategoricalParam("lr", (0.1, 0.01)),
))


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Callable[..., tuple[Framework, AppCore]]]:
    """Builds a framework for a job and attaches a running AppCore to it."""
    opened: list[Any] = []

    def build(**config: Any) -> tuple[Framework, AppCore]:
        framework = Framework(tmp_path, job_config(**config))
        opened.append(framework)
        appcore = AppCore(framework.address)
        opened.append(appcore)
        return framework, appcore.run()

    yield build
    for item in opened:  # end the job first, so AppCore's loop returns on its own
        if isinstance(item, Framework) and item.controller.outcome is None:
            item.controller.finish(framework_pb2.STOPPED, "test teardown")
    for item in reversed(opened):
        item.close()


def complete(framework: Framework, appcore: AppCore, number: int, value: float) -> None:
    """A runner reports its final result and its task finishes."""
    assert appcore.loop.report(Report(number, {"accuracy": value}, None, True, 1.0)) is False
    framework.end_trial(number, "TASK_FINISHED")


def wait_in_flight(framework: Framework, count: int) -> list[int]:
    wait_for(lambda: len(framework.in_flight()) == count, what=f"{count} trials in flight")
    return framework.in_flight()


def wait_outcome(framework: Framework) -> tuple[int, str]:
    return wait_for(lambda: framework.controller.outcome, what="the end of the job")


def run_to_end(framework: Framework, appcore: AppCore) -> int:
    """Launch and complete whatever AppCore submits until the job ends; how many completed."""
    completed = 0
    while True:
        wait_for(lambda: framework.controller.outcome or framework.in_flight(),
                 what="a trial in flight or the end of the job")
        if framework.controller.outcome is not None:
            return completed
        framework.launch_trials()
        for number, state in framework.states().items():
            if state == "RUNNING":
                complete(framework, appcore, number, 0.01 * number)
                completed += 1


def test_parallelism_slots_stay_full_until_the_budget_is_spent(stack: Any) -> None:
    framework, appcore = stack(max_trials=7, parallelism=3, seed=11)
    assert wait_in_flight(framework, 3) == [1, 2, 3]
    assert framework.launch_trials() == [1, 2, 3]
    values = iter([0.3, 0.9, 0.5, 0.7, 0.2, 0.4, 0.6])
    finished = 0
    while finished < 7:
        running = [n for n, s in framework.states().items() if s == "RUNNING"]
        complete(framework, appcore, running[0], next(values))
        finished += 1
        submitted = min(7, 3 + finished)
        expected_in_flight = submitted - finished
        wait_for(lambda s=submitted: len(framework.states()) == s,
                 what=f"{submitted} trials submitted")
        assert len(wait_in_flight(framework, expected_in_flight)) == expected_in_flight
        framework.launch_trials()
    outcome = wait_outcome(framework)
    assert outcome == (framework_pb2.BUDGET_SPENT, "the budget of 7 trials is spent")
    appcore.join()
    assert appcore.loop.finished
    trials = framework.controller.trials()
    assert [t.number for t in trials] == list(range(1, 8))
    assert all(t.state == "COMPLETED" for t in trials)
    best = framework.controller.best_trial()
    assert best is not None and best.number == 2 and best.objective == 0.9
    # Random search is seeded: the same seed asks the same assignment for each number.
    again = create_algorithm("random-search", DEFAULT_SPACE, seed=11, direction="maximize",
                             settings={})
    assert [t.assignment for t in trials] == [again.ask(n) for n in range(1, 8)]
    for trial in trials:
        DEFAULT_SPACE.validate_assignment(trial.assignment)


def test_free_slots_are_filled_with_one_submission(stack: Any) -> None:
    framework, appcore = stack(max_trials=10, parallelism=4, seed=5)
    assert wait_in_flight(framework, 4) == [1, 2, 3, 4]
    assert framework.pending_calls == 1  # one SubmitTrials call, one transaction
    assert len({row.created_at for row in framework.store.trials()}) == 1
    framework.launch_trials()
    for number in (1, 2, 3, 4):  # four slots free at about the same time
        complete(framework, appcore, number, 0.1 * number)
    assert wait_in_flight(framework, 4) == [5, 6, 7, 8]
    assert 2 <= framework.pending_calls <= 5  # one per batch of events AppCore saw together
    framework.launch_trials()
    for number in (5, 6, 7, 8):
        complete(framework, appcore, number, 0.1)
    assert wait_in_flight(framework, 2) == [9, 10]  # the budget caps the last batch
    framework.launch_trials()
    for number in (9, 10):
        complete(framework, appcore, number, 0.1)
    assert wait_outcome(framework)[0] == framework_pb2.BUDGET_SPENT
    appcore.join()
    again = create_algorithm("random-search", DEFAULT_SPACE, seed=5, direction="maximize",
                             settings={})
    assert [t.assignment for t in framework.controller.trials()] == [
        again.ask(n) for n in range(1, 11)]


def test_a_restarted_appcore_fills_every_free_slot_in_one_submission(tmp_path: Path) -> None:
    framework = Framework(tmp_path, job_config(max_trials=20, parallelism=3, seed=2))
    first = AppCore(framework.address).run()
    try:
        wait_in_flight(framework, 3)
        framework.launch_trials()
        first.crash()
        for number in (1, 2, 3):
            framework.end_trial(number, "TASK_FAILED", message="lost")
        calls = framework.pending_calls
        second = AppCore(framework.address).run()
        try:
            assert wait_in_flight(framework, 3) == [4, 5, 6]
            assert framework.pending_calls == calls + 1
        finally:
            framework.controller.finish(framework_pb2.STOPPED, "test teardown")
            second.close()
    finally:
        framework.close()


def test_grid_exhausted_ends_the_job_after_exactly_the_cartesian_product(stack: Any) -> None:
    framework, appcore = stack(space=GRID, tuning_type="grid-search", max_trials=50,
                               parallelism=4)
    done = run_to_end(framework, appcore)
    assert framework.controller.outcome == (
        framework_pb2.SPACE_EXHAUSTED, "the search space is exhausted after 12 trials")
    appcore.join()
    trials = framework.controller.trials()
    assert done == 12 and len(trials) == 12
    product = [dict(zip(GRID.names, values, strict=True))
               for values in itertools.product(("sgd", "adam", "rmsprop"), (1, 2), (0.1, 0.01))]
    assert [t.assignment for t in trials] == product  # in order, each point once
    assert all(type(t.assignment["layers"]) is int and type(t.assignment["lr"]) is float
               for t in trials)


def test_target_reached_ends_the_job_and_later_reports_are_told_to_stop(stack: Any) -> None:
    framework, appcore = stack(max_trials=10, parallelism=3, target=0.95)
    wait_in_flight(framework, 3)
    framework.launch_trials()
    # Only a final result counts: an intermediate value above the target does not end the job.
    assert appcore.loop.report(Report(1, {"accuracy": 0.97}, 3, False, 1.0)) is False
    assert appcore.loop.report(Report(2, {"accuracy": 0.5}, None, True, 1.0)) is False
    assert appcore.loop.report(Report(1, {"accuracy": 0.96}, None, True, 2.0)) is True
    outcome = wait_outcome(framework)
    assert outcome == (framework_pb2.TARGET_REACHED,
                       "trial 1 reached accuracy=0.96 (target 0.95)")
    assert appcore.loop.finished
    # The winner is COMPLETED at once (its task has not exited yet), and so is trial 2.
    states = {t.number: (t.state, t.objective) for t in framework.controller.trials()}
    assert states[1] == ("COMPLETED", 0.96) and states[2] == ("COMPLETED", 0.5)
    assert framework.controller.best_trial().number == 1
    # Trial 3 still runs: even a better final result is not recorded now, and it is told to
    # stop: the job's answer is what it knew when it ended.
    assert appcore.loop.report(Report(3, {"accuracy": 0.99}, None, True, 1.0)) is True
    assert framework.store.reports(3) == []
    framework.end_trial(1, "TASK_KILLED")  # killed at the job's end: still the result
    framework.end_trial(3, "TASK_KILLED")
    appcore.join()
    trials = {t.number: t for t in framework.controller.trials()}
    assert len(trials) == 3  # nothing was submitted after the end
    assert trials[1].state == "COMPLETED" and trials[3].state == "KILLED"
    assert framework.controller.best_trial().number == 1
    assert [r["metrics"]["accuracy"] for r in framework.store.reports(1)] == [0.97, 0.96]


def test_target_for_a_minimized_objective(stack: Any) -> None:
    framework, appcore = stack(max_trials=10, parallelism=1, target=0.1, objective="loss",
                               direction=common_pb2.MINIMIZE)
    wait_in_flight(framework, 1)
    framework.launch_trials()
    assert appcore.loop.report(Report(1, {"loss": 0.2}, None, True, 1.0)) is False
    framework.end_trial(1, "TASK_FINISHED")
    wait_in_flight(framework, 1)
    framework.launch_trials()
    assert appcore.loop.report(Report(2, {"loss": 0.05}, None, True, 1.0)) is True
    assert wait_outcome(framework)[0] == framework_pb2.TARGET_REACHED
    assert "trial 2 reached loss=0.05 (target 0.1)" in wait_outcome(framework)[1]


def test_too_many_failures_ends_the_job_with_the_last_failure(stack: Any) -> None:
    framework, appcore = stack(max_trials=10, parallelism=1, max_failed_trials=1)
    wait_in_flight(framework, 1)
    framework.launch_trials()
    framework.end_trial(1, "TASK_FAILED", message="Command exited with status 1")
    wait_for(lambda: framework.in_flight() == [2], what="trial 2 after one failure")
    framework.launch_trials()
    framework.end_trial(2, "TASK_ERROR", reason="REASON_TASK_INVALID", message="bad task")
    outcome = wait_outcome(framework)
    assert outcome == (
        framework_pb2.TOO_MANY_FAILURES,
        "2 trials failed (--max-failed-trials 1); last: trial-0002: TASK_ERROR "
        "REASON_TASK_INVALID: bad task")
    appcore.join()
    assert len(framework.controller.trials()) == 2


def test_killed_trials_free_their_slot_without_counting_as_failures(stack: Any) -> None:
    framework, appcore = stack(max_trials=3, parallelism=1, max_failed_trials=0)
    for number in (1, 2, 3):
        wait_for(lambda n=number: framework.in_flight() == [n], what=f"trial {number}")
        framework.launch_trials()
        if number == 2:
            framework.end_trial(2, "TASK_KILLED")
        else:
            complete(framework, appcore, number, 0.5)
    assert wait_outcome(framework)[0] == framework_pb2.BUDGET_SPENT
    appcore.join()
    assert [t.state for t in framework.controller.trials()] == ["COMPLETED", "KILLED",
                                                                "COMPLETED"]


def test_a_restarted_appcore_resumes_without_reissuing_anything(tmp_path: Path) -> None:
    """AppCore dies mid-job; Mesos relaunches it; the new one rebuilds from the record."""
    framework = Framework(tmp_path, job_config(space=GRID, tuning_type="grid-search",
                                               max_trials=7, parallelism=3))
    first: AppCore | None = None
    second: AppCore | None = None
    try:
        framework.launch_appcore()
        first = AppCore(framework.address).run()
        wait_in_flight(framework, 3)
        framework.launch_trials()
        complete(framework, first, 1, 0.4)
        assert first.loop.report(Report(2, {"accuracy": 0.1}, 0, False, 1.0)) is False
        wait_for(lambda: len(framework.states()) == 4, what="trial 4")
        first.crash()
        framework.controller.on_status(task_status("appcore-1", "TASK_FAILED",
                                                   message="OOM killed"))
        # Meanwhile trial 3 finishes without anybody watching.
        assert framework.controller.launch_requests()[0].key == APPCORE_KEY
        framework.launch_appcore()  # appcore-2
        framework.controller.record_report(Report(3, {"accuracy": 0.8}, None, True, 1.0))
        framework.end_trial(3, "TASK_FINISHED")

        second = AppCore(framework.address)
        assert [t.number for t in second.history] == [1, 2, 3, 4]
        assert second.loop.report(Report(2, {"accuracy": 0.6}, None, True, 2.0)) is False
        second.run()
        # Trials 2 and 4 are still in flight: exactly one new trial, number 5, fills the slot.
        wait_for(lambda: len(framework.states()) == 5, what="trial 5")
        assert sorted(framework.in_flight()) == [2, 4, 5]
        framework.end_trial(2, "TASK_FINISHED")
        run_to_end(framework, second)
        outcome = wait_outcome(framework)
        assert outcome == (framework_pb2.BUDGET_SPENT, "the budget of 7 trials is spent")
        second.join()
        trials = framework.controller.trials()
        assert [t.number for t in trials] == list(range(1, 8))
        grid = create_algorithm("grid-search", GRID, seed=0, direction="maximize", settings={})
        assert [t.assignment for t in trials] == [grid.ask(n) for n in range(1, 8)]
        assert len({tuple(sorted(t.assignment.items())) for t in trials}) == 7
        assert [r["attempt"] for r in framework.store.appcore_runs()] == [1, 2]
        assert framework.store.appcore_runs()[1]["address"] == second.address
        assert {t.number: t.objective for t in trials}[2] == 0.6
    finally:
        for appcore in (second, first):
            if appcore is not None:
                appcore.close()
        framework.close()


def test_records_for_restore() -> None:
    trials = [
        common_pb2.Trial(number=2, state=common_pb2.COMPLETED, objective=0.5),
        common_pb2.Trial(number=1, state=common_pb2.RUNNING, objective=0.2),
        common_pb2.Trial(number=3, state=common_pb2.FAILED, objective=0.9),
        common_pb2.Trial(number=4, state=common_pb2.PENDING),
        common_pb2.Trial(number=5, state=common_pb2.KILLED),
    ]
    trials[0].assignment["x"].integer = 3
    records = TrialLoop.records(trials)
    assert [(r.number, r.state, r.value) for r in records] == [
        (1, TrialState.RUNNING, None), (2, TrialState.COMPLETED, 0.5),
        (3, TrialState.FAILED, None), (4, TrialState.RUNNING, None), (5, TrialState.KILLED, None)]
    assert records[1].assignment == assignment_from_proto(trials[0].assignment) == {"x": 3}


def test_a_retried_try_is_no_failure_to_the_search(tmp_path: Path) -> None:
    """--trial-retries 1 and --max-failed-trials 0: each trial's first try fails. AppCore sees
    each trial wait again (nothing to tell), is told each one completed, counts no failure and
    spends its budget of three."""
    from dataclasses import replace

    from disauto.framework._tasks import trial_task_id

    framework = Framework(tmp_path, replace(job_config(max_trials=3, parallelism=1,
                                                       max_failed_trials=0), trial_retries=1))
    appcore = AppCore(framework.address).run()
    try:
        for number in (1, 2, 3):
            for retries in (0, 1):
                wait_for(lambda n=number: [r.trial_number for r in
                                           framework.controller.launch_requests()] == [n],
                         what=f"trial {number}, try {retries + 1}, waiting for an offer")
                task = trial_task_id(number, retries)
                framework.controller.trial_launched(number, task, AGENT)
                framework.controller.on_status(task_status(task, "TASK_RUNNING"))
                if retries == 0:
                    framework.controller.on_status(task_status(task, "TASK_FAILED"))
                else:
                    assert appcore.loop.report(Report(number, {"accuracy": 0.5}, None, True,
                                                      1.0)) is False
                    framework.controller.on_status(task_status(task, "TASK_FINISHED"))
        assert wait_outcome(framework)[0] == framework_pb2.BUDGET_SPENT
        appcore.join()
        assert appcore.loop.counts == (3, 0, 0)  # completed, failed, pruned
        assert [(t.state, len(t.tries)) for t in framework.controller.trials()] == [
            ("COMPLETED", 1)] * 3
    finally:
        appcore.close()
        framework.close()
