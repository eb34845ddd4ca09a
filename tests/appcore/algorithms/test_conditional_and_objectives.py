"""Conformance for conditional spaces, several objectives and constraints: every algorithm (and
every Bayesian backend in each mode) suggests only active parameters, restores to the same
sequence, and either optimizes several objectives or refuses them in one line."""

from __future__ import annotations

from collections.abc import Iterator
import math

import pytest

from disauto.appcore.algorithms import FINISHED
from disauto.appcore.algorithms import SearchAlgorithm
from disauto.appcore.algorithms import TrialRecord
from disauto.appcore.algorithms import algorithm_class
from disauto.appcore.algorithms import create_algorithm
from disauto.appcore.algorithms.bayesian import backend_class
from disauto.common.errors import InvalidSettingsError
from disauto.common.space import Assignment
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.trial_state import TrialState
from tests.appcore.algorithms.test_contract import VARIANTS


SPACE = SearchSpace((
    CategoricalParam("optimizer", ("sgd", "adam", "rmsprop")),
    RealParam("momentum", 0.5, 0.99),
    CategoricalParam("nesterov", ("yes", "no")),
    RealParam("dampening", 0.0, 0.2, step=0.05),
    RealParam("lr", 1e-4, 1e-1, log=True),
    IntParam("layers", 1, 4),
), {"momentum": {"optimizer": "sgd"}, "nesterov": {"optimizer": "sgd"},
    "dampening": {"nesterov": "no"}})

TWO = ("maximize", "minimize")


@pytest.fixture(params=sorted(VARIANTS))
def variant(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _multi(variant: str) -> bool:
    name, settings = VARIANTS[variant]
    return name != "bayesian" or backend_class(settings["backend"]).MULTI_OBJECTIVE


def _make(variant: str, direction: str | tuple[str, ...] = "maximize") -> SearchAlgorithm:
    name, settings = VARIANTS[variant]
    return create_algorithm(name, SPACE, seed=5, direction=direction,  # type: ignore[arg-type]
                            settings={**settings, "n_startup_trials": "4"}
                            if name == "bayesian" else settings)


def _result(assignment: Assignment, objectives: int) -> tuple[float | tuple[float, ...], tuple[
        float, ...]]:
    """A score (a pair with two objectives) and one constraint (feasible when lr <= 0.01)."""
    accuracy = -(math.log10(float(assignment["lr"])) + 2.5) ** 2 + 0.2 * (
        assignment["optimizer"] == "sgd") + 0.1 * float(assignment.get("momentum", 0.0))
    cost = float(assignment["layers"]) + float(assignment.get("dampening", 0.0))
    return (accuracy if objectives == 1 else (accuracy, cost)), (
        math.log10(float(assignment["lr"])) + 2.0,)


def _run(algorithm: SearchAlgorithm, numbers: range,
         objectives: int) -> Iterator[tuple[int, Assignment]]:
    for number in numbers:
        suggestion = algorithm.ask(number)
        if suggestion is FINISHED:
            return
        assert suggestion is not None
        yield number, suggestion
        value, constraints = _result(suggestion, objectives)
        algorithm.tell(number, value, TrialState.COMPLETED, constraints)


def _count(variant: str, wanted: int) -> int:
    """scikit-optimize's GP fits for about a second a suggestion here: 4 random, 4 from it."""
    return min(wanted, 8) if "-gp-" in variant else wanted


def test_only_active_parameters_are_suggested(variant: str) -> None:
    seen = [a for _, a in _run(_make(variant), range(1, _count(variant, 30) + 1), 1)]
    for assignment in seen:
        SPACE.validate_assignment(assignment)  # no inactive key, every active one
    if VARIANTS[variant][0] == "grid-search":
        points = SPACE.grid_size(5)
        assert len(list(_run(_make(variant), range(1, points + 2), 1))) == points
    else:
        assert any("momentum" in a for a in seen) and any("momentum" not in a for a in seen)


def test_restore_continues_the_sequence_in_a_conditional_space(variant: str) -> None:
    done = 5 if "-gp-" in variant else 8
    original = _make(variant)
    history = [TrialRecord(n, a, _result(a, 1)[0], TrialState.COMPLETED, _result(a, 1)[1])
               for n, a in _run(original, range(1, done + 1), 1)]
    restored = _make(variant)
    restored.restore(history)
    more = range(done + 1, done + 1 + (2 if "-gp-" in variant else 12))
    assert list(_run(restored, more, 1)) == list(_run(original, more, 1))


def test_several_objectives_are_optimized_or_refused_in_one_line(variant: str) -> None:
    if not _multi(variant):
        with pytest.raises(InvalidSettingsError) as caught:
            _make(variant, TWO)
        backend = VARIANTS[variant][1]["backend"]
        assert str(caught.value) == (f"backend {backend!r} optimizes one objective; for 2 use "
                                     "one of tpe, qmc, nsga2")
        with pytest.raises(InvalidSettingsError):
            algorithm_class("bayesian").validate(SPACE, VARIANTS[variant][1], 10, objectives=2)
        return
    algorithm_class(VARIANTS[variant][0]).validate(SPACE, VARIANTS[variant][1], 10,
                                                    objectives=2)
    original = _make(variant, TWO)
    history: list[TrialRecord] = []
    for number, assignment in _run(original, range(1, 13), 2):
        value, constraints = _result(assignment, 2)
        history.append(TrialRecord(number, assignment, value, TrialState.COMPLETED,
                                   constraints))
    restored = _make(variant, TWO)
    restored.restore(history)
    assert list(_run(restored, range(13, 25), 2)) == list(_run(original, range(13, 25), 2))


@pytest.mark.parametrize("several", [v for v in sorted(VARIANTS) if _multi(v)])
def test_every_outcome_is_accepted_with_several_objectives(several: str) -> None:
    variant = several
    algorithm = _make(variant, TWO)
    outcomes: list[tuple[TrialState, tuple[float, float] | None]] = [
        (TrialState.COMPLETED, (0.5, 2.0)), (TrialState.FAILED, None),
        (TrialState.PRUNED, None), (TrialState.KILLED, None)]
    for number, (state, value) in enumerate(outcomes, start=1):
        algorithm.ask(number)
        algorithm.tell(number, value, state)


def test_a_warm_start_from_results_teaches_one_objective_only() -> None:
    settings = {"warm_start": '{"known": [{"assignment": {"optimizer": "adam", "lr": 0.01, '
                              '"layers": 2}, "value": 0.5}], "points": []}'}
    with pytest.raises(InvalidSettingsError, match="teach one objective"):
        create_algorithm("bayesian", SPACE, seed=1, direction=TWO, settings=settings)
