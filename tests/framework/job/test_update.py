"""``da-job update`` on the framework's side: the rules and the controller (the request's way
through the control channel is tests/framework/test_control.py's).

A JobController over a JobStore in tmp_path, no server.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.framework import _meta as meta
from disauto.framework._errors import FailedPreconditionError
from disauto.framework._job import JobController
from disauto.framework._job.update import UpdateRefusedError
from disauto.framework._job.update import check_update
from disauto.framework._job.update import describe_change
from disauto.framework._job.update import updated_spec
from disauto.framework._store import JobStore
from disauto.framework.control import UpdateSearch
from disauto.protos import common_pb2
from disauto.protos import framework_pb2
from disauto.testing.inprocess import job_config


@pytest.fixture
def controller(tmp_path: Path) -> JobController:
    store = JobStore(tmp_path / "job.db")
    config = job_config(max_trials=4, parallelism=1)
    store.set_meta(meta.CONFIG, config)
    made = JobController(config, store, "token")
    made.submit_trials([(1, {"lr": 0.01, "layers": 1, "act": "relu"}, 0),
                        (2, {"lr": 0.02, "layers": 2, "act": "tanh"}, 0)])
    return made


def recorded(controller: JobController) -> common_pb2.JobSpec:
    config = controller.store.get_meta(meta.CONFIG)
    assert config is not None
    return config.search


def test_a_budget_below_the_trials_submitted_is_refused_naming_the_smallest_valid_one() -> None:
    spec = job_config(max_trials=10).search
    with pytest.raises(UpdateRefusedError) as refused:
        check_update(spec, 5, UpdateSearch(max_trials=4))
    assert str(refused.value) == ("a trial budget of 4 is below the 5 trials already "
                                  "submitted; the smallest valid budget is 5")
    check_update(spec, 5, UpdateSearch(max_trials=5))  # exactly what was submitted
    check_update(spec, 5, UpdateSearch(parallelism=1))  # the budget is left alone


@pytest.mark.parametrize("parallelism", [0, -2])
def test_a_parallelism_below_one_is_refused_in_one_line(controller: JobController,
                                                        parallelism: int) -> None:
    """da-job refuses it before it asks; a request on the control channel that still says so
    is refused by the run loop (tests/framework/job/test_desk.py)."""
    with pytest.raises(UpdateRefusedError) as refused:
        check_update(controller.config.search, 2, UpdateSearch(parallelism=parallelism))
    assert str(refused.value) == (f"a parallelism of {parallelism} runs no trial; it must be "
                                  "at least 1")


def test_the_new_spec_and_what_changed() -> None:
    old = job_config(max_trials=4, parallelism=1).search
    new = updated_spec(old, UpdateSearch(max_trials=8, parallelism=2))
    assert (new.max_trials, new.parallelism, new.seed) == (8, 2, old.seed)
    assert (old.max_trials, old.parallelism) == (4, 1)  # a copy
    assert describe_change(old, new) == "trial budget 4 → 8, parallelism 1 → 2"
    only = updated_spec(old, UpdateSearch(parallelism=3))
    assert describe_change(old, only) == "parallelism 1 → 3"
    assert describe_change(old, old) == "nothing changed (trial budget 4, parallelism 1)"


def test_the_controller_records_the_new_spec_and_sends_it_to_appcore(
        controller: JobController) -> None:
    sequence = controller.events_after(0, timeout=0)[0][-1].sequence
    change = controller.update_search(UpdateSearch(max_trials=6, parallelism=3))
    assert change == "trial budget 4 → 6, parallelism 1 → 3"
    assert (recorded(controller).max_trials, recorded(controller).parallelism) == (6, 3)
    events, ended = controller.events_after(sequence, timeout=0)
    assert not ended and [e.WhichOneof("change") for e in events] == ["spec"]
    assert (events[0].spec.max_trials, events[0].spec.parallelism) == (6, 3)
    progress = controller.progress()
    assert (progress.budget, progress.parallelism) == (6, 3)
    reply = controller.attach_appcore("127.0.0.1:1")  # a relaunched AppCore gets it too
    assert (reply.spec.max_trials, reply.spec.parallelism) == (6, 3)
    controller.submit_trials([(n, {"lr": 0.01 * n, "layers": 1, "act": "relu"}, 0)
                              for n in range(3, 7)])  # the new budget holds 6


def test_the_controller_refuses_a_budget_below_the_trials_submitted_and_changes_nothing(
        controller: JobController) -> None:
    before = controller.store.meta()[meta.CONFIG]
    with pytest.raises(UpdateRefusedError, match="the smallest valid budget is 2"):
        controller.update_search(UpdateSearch(max_trials=1, parallelism=2))
    assert controller.store.meta()[meta.CONFIG] == before
    assert controller.config.search.parallelism == 1


def test_an_ended_job_takes_no_change(controller: JobController) -> None:
    controller.finish(framework_pb2.STOPPED, "stopped")
    with pytest.raises(UpdateRefusedError, match="the job has ended"):
        controller.update_search(UpdateSearch(max_trials=8))


def test_budget_spent_is_refused_while_a_raised_budget_has_room(
        controller: JobController) -> None:
    controller.update_search(UpdateSearch(max_trials=3))
    with pytest.raises(FailedPreconditionError, match="the trial budget is 3 now"):
        controller.finish_search(framework_pb2.BUDGET_SPENT, "the budget of 2 trials is spent")
    assert controller.outcome is None
    controller.finish_search(framework_pb2.TARGET_REACHED, "trial 1 reached it")
    assert controller.outcome == (framework_pb2.TARGET_REACHED, "trial 1 reached it")


def test_budget_spent_ends_the_job_once_the_budget_is_submitted(
        controller: JobController) -> None:
    controller.update_search(UpdateSearch(max_trials=2))
    controller.finish_search(framework_pb2.BUDGET_SPENT, "spent")
    assert controller.outcome == (framework_pb2.BUDGET_SPENT, "spent")
