"""Bayesian search: settings, sync batches, pending trials, warm start, parameter scales, and a
restarted AppCore continuing exactly where an uninterrupted one would (in-process framework)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from disauto.appcore.algorithms import SearchAlgorithm
from disauto.appcore.algorithms import TrialRecord
from disauto.appcore.algorithms import algorithm_class
from disauto.appcore.algorithms import create_algorithm
from disauto.appcore.algorithms.bayesian import BACKENDS
from disauto.appcore.algorithms.bayesian import warm_start_setting
from disauto.common.errors import InvalidSettingsError
from disauto.common.report import Report
from disauto.common.space import Assignment
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.trial_state import TrialState
from disauto.protos import framework_pb2
from disauto.testing.inprocess import AppCore
from disauto.testing.inprocess import Framework
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import task_status
from disauto.testing.inprocess import wait_for


pytestmark = pytest.mark.integration  # starts processes or servers


SPACE = SearchSpace((
    RealParam("lr", 1e-4, 1.0, log=True),
    IntParam("units", 1, 1024, log=True),
    RealParam("dropout", 0.0, 0.5, step=0.1),
    CategoricalParam("act", ("relu", "tanh", 3)),
))


def score(assignment: Assignment) -> float:
    """A smooth objective with its best at lr=1e-2, units=64, dropout=0.2, act=relu."""
    return (-(math.log10(float(assignment["lr"])) + 2) ** 2
            - (math.log2(int(assignment["units"])) - 6) ** 2 / 10
            - (float(assignment["dropout"]) - 0.2) ** 2
            + (0.5 if assignment["act"] == "relu" else 0.0))


def make(backend: str = "tpe", mode: str = "async", parallelism: int = 1, seed: int = 5,
         **settings: str) -> SearchAlgorithm:
    return create_algorithm("bayesian", SPACE, seed=seed, direction="maximize",
                            settings={"backend": backend, "mode": mode, **settings},
                            parallelism=parallelism)


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_unknown_backend_or_mode_is_rejected_listing_the_valid_ones() -> None:
    cls = algorithm_class("bayesian")
    with pytest.raises(InvalidSettingsError) as caught:
        cls.validate(SPACE, {"backend": "hyperopt"}, 10)
    assert str(caught.value) == ("setting 'backend' for algorithm 'bayesian' must be one of "
                                 "tpe, gp, qmc, nsga2, cmaes, got 'hyperopt'")
    with pytest.raises(InvalidSettingsError, match="'mode' .* must be one of async, sync"):
        cls.validate(SPACE, {"mode": "batch"}, 10)
    with pytest.raises(InvalidSettingsError, match="parallelism of algorithm 'bayesian' must be"):
        make(parallelism=0)


def test_sync_mode_issues_batches_and_waits_for_them(backend: str) -> None:
    algorithm = make(backend, "sync", parallelism=3, n_startup_trials="3")
    batch = [algorithm.ask(n) for n in (1, 2, 3)]
    assert all(isinstance(a, dict) for a in batch)
    assert algorithm.ask(4) is None
    algorithm.tell(1, 0.5, TrialState.COMPLETED)
    algorithm.tell(2, None, TrialState.FAILED)
    assert algorithm.ask(4) is None  # trial 3 still runs
    algorithm.tell(3, 0.1, TrialState.PRUNED)
    second = [algorithm.ask(n) for n in (4, 5, 6)]
    assert all(isinstance(a, dict) for a in second) and algorithm.ask(7) is None
    assert len({json.dumps(a, sort_keys=True) for a in batch + second}) == 6


def test_pending_trials_spread_suggestions_out(backend: str) -> None:
    """Async with 4 in flight: the constant liar keeps parallel suggestions apart."""
    algorithm = make(backend, "async", parallelism=4, n_startup_trials="6")
    for number in range(1, 9):
        suggestion = algorithm.ask(number)
        assert isinstance(suggestion, dict)
        algorithm.tell(number, score(suggestion), TrialState.COMPLETED)
    pending = [algorithm.ask(n) for n in range(9, 13)]
    assert len({json.dumps(a, sort_keys=True) for a in pending}) == 4


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_log_scales_stay_log_in_the_startup_draws(backend: str, mode: str) -> None:
    algorithm = make(backend, mode, n_startup_trials="10000")
    draws = []
    for number in range(1, 65):
        suggestion = algorithm.ask(number)
        assert isinstance(suggestion, dict)
        draws.append(suggestion)
        algorithm.tell(number, 0.0, TrialState.COMPLETED)
    # Log-uniform on [1e-4, 1]: half the draws are below 1e-2 (uniform: 1 %).
    assert sum(d["lr"] < 1e-2 for d in draws) / len(draws) > 0.3
    assert sum(d["units"] < 32 for d in draws) / len(draws) > 0.3
    assert {d["dropout"] for d in draws} <= {0.0, 0.1, 0.2, 0.3, 0.4, 0.5}
    assert {type(d["act"]) for d in draws} <= {str, int}


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_warm_start_points_come_first_and_known_results_shape_the_model(mode: str) -> None:
    points = [{"lr": 0.01, "units": 64, "dropout": 0.2, "act": "relu"},
              {"lr": 1, "units": 8.0, "dropout": 0.5, "act": 3}]  # JSON-typed: 1 -> 1.0
    setting = warm_start_setting(points, "accuracy", "maximize")
    algorithm = make("tpe", mode, parallelism=2, warm_start=setting)
    assert algorithm.ask(1) == points[0]
    assert algorithm.ask(2) == {"lr": 1.0, "units": 8, "dropout": 0.5, "act": 3}

    results = {"objective": "accuracy", "trials": [
        {"state": "COMPLETED", "objective": score(p), "assignment": p} for p in (
            {"lr": 10 ** -(1 + i / 5), "units": 2 ** (3 + i % 5), "dropout": 0.1 * (i % 6),
             "act": ("relu", "tanh")[i % 2]} for i in range(12))
    ] + [{"state": "FAILED", "objective": None, "assignment": {}}]}
    known = warm_start_setting(results, "accuracy", "maximize")
    assert len(json.loads(known)["known"]) == 12
    warm = make("tpe", mode, n_startup_trials="10", warm_start=known)
    cold = make("tpe", mode, n_startup_trials="10")
    assert warm.ask(1) != cold.ask(1)  # the model is used from the first trial


def test_warm_start_files_are_checked() -> None:
    with pytest.raises(ValueError, match="the results are of objective 'loss', this job "
                                         "maximizes 'accuracy'"):
        warm_start_setting({"objective": "loss", "trials": []}, "accuracy", "maximize")
    with pytest.raises(ValueError, match="expected the results.json of an earlier job"):
        warm_start_setting({"x": 1}, "accuracy", "maximize")
    bad = warm_start_setting([{"lr": 5.0, "units": 8, "dropout": 0.0, "act": "relu"}],
                             "accuracy", "maximize")
    with pytest.raises(InvalidSettingsError,
                       match=r"warm start point 1: parameter 'lr': 5.0 is outside"):
        algorithm_class("bayesian").validate(SPACE, {"warm_start": bad}, 10)
    unknown = warm_start_setting([{"lr": 0.1, "depth": 3}], "accuracy", "maximize")
    with pytest.raises(InvalidSettingsError, match="unknown parameter 'depth'; parameters: lr"):
        algorithm_class("bayesian").validate(SPACE, {"warm_start": unknown}, 10)


def test_sync_restore_finishes_a_partly_issued_batch() -> None:
    original = make("tpe", "sync", parallelism=3, n_startup_trials="3")
    issued = [original.ask(n) for n in (1, 2, 3)]
    for number, assignment in enumerate(issued, 1):
        original.tell(number, score(assignment), TrialState.COMPLETED)
    fourth = original.ask(4)
    rest = [original.ask(5), original.ask(6)]
    history = [TrialRecord(n, a, score(a), TrialState.COMPLETED)
               for n, a in enumerate(issued, 1)]
    history.append(TrialRecord(4, fourth, None, TrialState.RUNNING))
    restored = make("tpe", "sync", parallelism=3, n_startup_trials="3")
    restored.restore(history)
    assert [restored.ask(5), restored.ask(6)] == rest
    assert restored.ask(7) is None


# -- a restarted AppCore, in process ---------------------------------------------------------


def _drive(framework: Framework, appcore: AppCore, until: int, done: int) -> int:
    """Complete the lowest running trial, one at a time, until ``until`` completed."""
    wait_for(framework.in_flight, what="the first trials")
    while done < until and framework.controller.outcome is None:
        framework.launch_trials()
        running = sorted(n for n, s in framework.states().items() if s == "RUNNING")
        number = running[0]
        assignment = {t.number: t.assignment for t in framework.controller.trials()}[number]
        final = Report(number, {"accuracy": score(assignment)}, None, True, 1.0)
        assert appcore.loop.report(final) is False
        framework.end_trial(number, "TASK_FINISHED")
        done += 1
        # The loop handles the event and fills the free slots under one lock.
        wait_for(lambda d=done: appcore.loop.counts[0] == d or appcore.loop.finished,
                 what=f"{done} trials told")
    return done


def _job(tmp_path: Path, mode: str) -> Framework:
    return Framework(tmp_path, job_config(
        space=SPACE, tuning_type="bayesian", max_trials=12, parallelism=3, seed=21,
        settings={"mode": mode, "n_startup_trials": "4"}))


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_restarted_appcore_loses_nothing_and_continues_the_same_sequence(
        tmp_path: Path, mode: str) -> None:
    reference = _job(tmp_path / "reference", mode)
    restarted = _job(tmp_path / "restarted", mode)
    opened: list[Any] = [reference, restarted]
    try:
        reference.launch_appcore()
        uninterrupted = AppCore(reference.address).run()
        opened.append(uninterrupted)
        _drive(reference, uninterrupted, 12, 0)

        restarted.launch_appcore()
        first = AppCore(restarted.address).run()
        opened.append(first)
        done = _drive(restarted, first, 5, 0)  # sync: a batch of 3 half told
        first.crash()
        restarted.controller.on_status(task_status("appcore-1", "TASK_FAILED"))
        restarted.launch_appcore()
        second = AppCore(restarted.address)
        opened.append(second)
        assert len(second.history) == len(restarted.controller.trials())
        second.run()
        _drive(restarted, second, 12, done)

        for framework in (reference, restarted):
            assert wait_for(lambda f=framework: f.controller.outcome,
                            what="the end")[0] == framework_pb2.BUDGET_SPENT
        trials = restarted.controller.trials()
        assert [t.assignment for t in trials] == [
            t.assignment for t in reference.controller.trials()]
        assert len({json.dumps(t.assignment, sort_keys=True) for t in trials}) == 12
        assert all(t.state == "COMPLETED" and t.objective == score(t.assignment)
                   for t in trials)
    finally:
        for item in opened:
            if isinstance(item, Framework) and item.controller.outcome is None:
                item.controller.finish(framework_pb2.STOPPED, "test teardown")
        for item in reversed(opened):
            item.close()
