"""The record of several objectives and of constraints: a trial completes once every objective is
reported, its constraints are kept, and an infeasible trial is never the best."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from disauto.common.objectives import Objectives
from disauto.common.report import Report
from disauto.framework._errors import InvalidArgumentError
from disauto.framework._job import JobController
from disauto.framework._job import sorted_trials
from disauto.framework._job.book import trial_proto
from disauto.framework._store import JobStore
from disauto.framework._tasks import trial_task_id
from disauto.testing.inprocess import AGENT
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import task_status


ASSIGN = {"lr": 0.01, "layers": 2, "act": "relu"}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[JobStore]:
    made = JobStore(tmp_path / "job.db")
    yield made
    made.close()


def _controller(store: JobStore, objectives: Objectives | None = None) -> JobController:
    config = job_config(max_trials=10)
    if objectives is not None:
        objectives.write_to(config.search)
    return JobController(config, store, "tok")


def _run(controller: JobController, number: int, *reports: Report,
         state: str = "TASK_FINISHED") -> Any:
    controller.submit_trial(number, ASSIGN, priority=0)
    task = trial_task_id(number, 0)
    controller.trial_launched(number, task, AGENT)
    controller.on_status(task_status(task, "TASK_RUNNING"))
    for report in reports:
        controller.record_report(report)
    controller.on_status(task_status(task, state))
    return {t.number: t for t in controller.trials()}[number]


TWO = Objectives(("accuracy", "latency"), ("maximize", "minimize"))


def test_a_trial_completes_once_every_objective_is_reported(store: JobStore) -> None:
    controller = _controller(store, TWO)
    trial = _run(controller, 1, Report(1, {"latency": 3.0}, step=0),
                 Report(1, {"accuracy": 0.9}, final=True))
    assert trial.state == "COMPLETED" and trial.objective == 0.9
    assert trial.metrics == {"accuracy": 0.9, "latency": 3.0}


def test_a_missing_objective_fails_the_trial_naming_it(store: JobStore) -> None:
    controller = _controller(store, TWO)
    trial = _run(controller, 1, Report(1, {"accuracy": 0.9}, final=True))
    assert trial.state == "FAILED" and trial.objective is None
    assert trial.message == "the runner reported accuracy but not the objective 'latency'"


def test_constraints_are_recorded_with_the_final_report(store: JobStore) -> None:
    controller = _controller(store)
    trial = _run(controller, 1, Report(1, {"accuracy": 0.9}, final=True, constraints=(0.5, -1)))
    assert trial.constraints == (0.5, -1.0)
    assert store.trial(1).constraints == (0.5, -1.0)  # type: ignore[union-attr]
    proto = trial_proto(trial)
    assert list(proto.constraints) == [0.5, -1.0]


@pytest.mark.parametrize(("report", "message"), [
    (Report(1, {"accuracy": 0.5}, step=0, constraints=(1.0,)),
     "constraints go with the final report (final=True) only"),
    (Report(1, {"accuracy": 0.5}, final=True, constraints=(float("inf"),)),
     "constraints[0] must be finite, got inf"),
])
def test_bad_constraints_are_refused_and_nothing_is_recorded(store: JobStore, report: Report,
                                                             message: str) -> None:
    controller = _controller(store)
    controller.submit_trial(1, ASSIGN, priority=0)
    with pytest.raises(InvalidArgumentError) as caught:
        controller.record_report(report)
    assert str(caught.value) == message
    assert store.reports() == []


def test_an_infeasible_trial_is_never_the_best(store: JobStore) -> None:
    controller = _controller(store)
    _run(controller, 1, Report(1, {"accuracy": 0.99}, final=True, constraints=(0.1,)))
    _run(controller, 2, Report(2, {"accuracy": 0.7}, final=True, constraints=(0.0,)))
    _run(controller, 3, Report(3, {"accuracy": 0.8}, final=True))
    best = controller.best_trial()
    assert best is not None and best.number == 3
    order = [t.number for t in sorted_trials(controller.trials(), maximize=True)]
    assert order == [3, 2, 1]


def test_no_feasible_trial_means_no_best(store: JobStore) -> None:
    controller = _controller(store)
    _run(controller, 1, Report(1, {"accuracy": 0.99}, final=True, constraints=(2.0,)))
    assert controller.best_trial() is None


def test_a_store_written_before_constraints_opens(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.db"
    JobStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE trials DROP COLUMN constraints")
    reopened = JobStore(path)
    try:
        reopened.add_trial(1, ASSIGN, 0)
        assert reopened.trial(1).constraints is None  # type: ignore[union-attr]
    finally:
        reopened.close()


def test_the_progress_counts_the_front_with_several_objectives(store: JobStore) -> None:
    controller = _controller(store, TWO)
    assert controller.progress().front == 0
    _run(controller, 1, Report(1, {"accuracy": 0.9, "latency": 5.0}, final=True))
    _run(controller, 2, Report(2, {"accuracy": 0.8, "latency": 3.0}, final=True))
    assert controller.progress().front == 2
    _run(controller, 3, Report(3, {"accuracy": 0.7, "latency": 4.0}, final=True))  # dominated
    assert controller.progress().front == 2
    _run(controller, 4, Report(4, {"accuracy": 0.95, "latency": 1.0}, final=True))  # beats all
    assert controller.progress().front == 1


def test_the_progress_of_one_objective_has_no_front(store: JobStore) -> None:
    assert _controller(store).progress().front is None
