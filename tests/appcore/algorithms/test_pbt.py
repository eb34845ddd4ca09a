"""Population Based Training's schedule: who is replaced, by whom, with what assignment."""

from __future__ import annotations

import pytest

from disauto.appcore.algorithms import TrialRecord
from disauto.appcore.algorithms import create_algorithm
from disauto.appcore.algorithms.pbt import PopulationBasedTraining
from disauto.appcore.algorithms.pbt import perturb
from disauto.common.errors import InvalidSettingsError
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.trial_state import TrialState


SPACE = SearchSpace((RealParam("lr", 1e-4, 1.0, log=True), IntParam("units", 8, 64),
                     CategoricalParam("act", ("relu", "tanh"))))


def _pbt(population: int = 4, seed: int = 3, direction: str = "maximize",
         **settings: str) -> PopulationBasedTraining:
    algorithm = create_algorithm("pbt", SPACE, seed=seed, direction=direction,
                                 settings=settings, parallelism=population)
    assert isinstance(algorithm, PopulationBasedTraining)
    for number in range(1, population + 1):
        assert isinstance(algorithm.ask(number), dict)
    return algorithm


def _report_all(algorithm: PopulationBasedTraining, step: int, scores: dict[int, float],
                may_replace: bool = True) -> list[int]:
    """Each trial reports its score at ``step``, in number order; the trials replaced."""
    return [number for number, score in sorted(scores.items())
            if algorithm.intermediate(number, step, score, may_replace=may_replace)]


def test_the_bottom_quantile_is_replaced_by_a_top_trials_perturbed_copy() -> None:
    algorithm = _pbt(perturbation_interval="2", quantile_fraction="0.25",
                     resample_probability="0")
    scores = {1: 0.9, 2: 0.1, 3: 0.5, 4: 0.6}
    assert _report_all(algorithm, 1, scores) == []  # before the first interval
    assert _report_all(algorithm, 2, scores) == [2]  # the worst of 4 (a quarter: one)
    child = algorithm.ask(5)
    assert isinstance(child, dict)
    assert algorithm.parent_of(5) == 1  # the top quarter is trial 1 alone
    parent = algorithm._assignments[1]  # noqa: SLF001
    assert child["act"] == parent["act"]
    assert child["lr"] in (pytest.approx(parent["lr"] * 0.8), pytest.approx(parent["lr"] * 1.2))
    assert child["units"] != parent["units"]
    exploit = algorithm.exploits[5]
    assert (exploit.replaced, exploit.step, exploit.parent, exploit.parent_step) == (2, 2, 1, 2)
    assert algorithm.parent_of(6) is None


def test_minimize_replaces_the_highest() -> None:
    algorithm = _pbt(direction="minimize", perturbation_interval="2")
    scores = {1: 0.9, 2: 0.1, 3: 0.5, 4: 0.6}
    assert _report_all(algorithm, 1, scores) == []
    assert _report_all(algorithm, 2, scores) == [1]


def test_the_child_waits_an_interval_after_its_parents_step() -> None:
    algorithm = _pbt(perturbation_interval="3")
    scores = {1: 1.0, 2: 0.0, 3: 0.5, 4: 0.6}
    assert _report_all(algorithm, 1, scores) == []
    assert _report_all(algorithm, 3, scores) == [2]
    algorithm.ask(5)
    scores = {1: 1.0, 3: 0.5, 4: 0.6, 5: -1.0}
    assert _report_all(algorithm, 4, scores) == []  # the child started at step 3
    assert _report_all(algorithm, 6, scores) == [5]


def test_no_replacement_without_budget_or_peers() -> None:
    algorithm = _pbt(perturbation_interval="1")
    scores = {1: 1.0, 2: 0.0, 3: 0.5, 4: 0.6}
    assert _report_all(algorithm, 1, scores, may_replace=False) == []
    assert _report_all(algorithm, 2, scores, may_replace=False) == []
    alone = _pbt(population=1, perturbation_interval="1")
    assert _report_all(alone, 1, {1: 0.0}) == []
    assert not alone.intermediate(1, 2, float("nan"), may_replace=True)
    assert not alone.intermediate(9, 2, 1.0, may_replace=True)  # never asked


def test_a_trial_that_ends_is_replaced_by_a_fresh_draw() -> None:
    algorithm = _pbt()
    algorithm.tell(2, 0.3, TrialState.COMPLETED)
    assert isinstance(algorithm.ask(5), dict)
    assert algorithm.parent_of(5) is None
    # The ended trial is no longer ranked: 4 reporting members, one in the bottom quarter.
    scores = {1: 1.0, 3: 0.0, 4: 0.5, 5: 0.7}
    assert _report_all(algorithm, 1, scores, may_replace=False) == []
    assert _report_all(algorithm, 4, scores) == [3]


def test_the_same_reports_give_the_same_search() -> None:
    def run(seed: int) -> list[object]:
        algorithm = _pbt(population=8, seed=seed, perturbation_interval="1",
                         resample_probability="0.5")
        out: list[object] = []
        number = 9
        for step in range(1, 4):
            scores = {n: float((n * 7 + step) % 5) for n in list(algorithm._members)}  # noqa: SLF001
            for _ in _report_all(algorithm, step, scores):
                out.append((number, algorithm.ask(number), algorithm.parent_of(number)))
                number += 1
        return out

    assert run(1) == run(1)
    assert run(1) and run(1) != run(2)


@pytest.mark.parametrize(("param", "value", "factor", "expected"), [
    (RealParam("x", 0.0, 1.0), 0.5, 1.2, 0.6),
    (RealParam("x", 0.0, 1.0), 0.9, 1.2, 1.0),  # clipped
    (RealParam("x", 0.0, 1.0, step=0.25), 0.5, 1.2, 0.5),  # snapped back
    (IntParam("n", 1, 10), 1, 1.2, 2),  # would stay: moves one step
    (IntParam("n", 1, 10), 1, 0.8, 1),  # and stays in range
    (IntParam("n", 32, 128, step=32), 96, 1.2, 128),
    (IntParam("n", 0, 100), 50, 0.8, 40),
])
def test_perturb(param: RealParam | IntParam, value: float, factor: float,
                 expected: float) -> None:
    assert perturb(param, value, factor) == pytest.approx(expected)


@pytest.mark.parametrize(("settings", "needle"), [
    ({"perturbation_interval": "0"}, "setting 'perturbation_interval'"),
    ({"quantile_fraction": "0.6"}, "a number > 0 and <= 0.5"),
    ({"quantile_fraction": "0"}, "a number > 0 and <= 0.5"),
    ({"resample_probability": "1.5"}, "a number from 0 to 1"),
    ({"interval": "4"}, "unknown setting 'interval'"),
])
def test_bad_settings_are_one_line(settings: dict[str, str], needle: str) -> None:
    with pytest.raises(InvalidSettingsError) as caught:
        PopulationBasedTraining.validate(SPACE, settings, 10)
    assert needle in str(caught.value) and "\n" not in str(caught.value)


def test_restore_keeps_the_lineage_and_the_population() -> None:
    original = _pbt(perturbation_interval="1")
    scores = {1: 1.0, 2: 0.0, 3: 0.5, 4: 0.6}
    assert _report_all(original, 1, scores, may_replace=False) == []
    assert _report_all(original, 2, scores) == [2]
    child = original.ask(5)
    assert isinstance(child, dict)
    history = [TrialRecord(n, original._assignments[n], None, TrialState.RUNNING)  # noqa: SLF001
               for n in (1, 3, 4)]
    history.insert(1, TrialRecord(2, original._assignments[2], 0.0,  # noqa: SLF001
                                  TrialState.PRUNED))
    history.append(TrialRecord(5, child, None, TrialState.RUNNING, parent=1))
    restored = create_algorithm(
        "pbt", SPACE, seed=3, direction="maximize", settings={"perturbation_interval": "1"},
        parallelism=4)
    restored.restore(history)
    assert restored.parent_of(5) == 1
    scores = {1: 1.0, 3: 0.5, 4: 0.6, 5: -1.0}
    assert _report_all(restored, 3, scores, may_replace=False) == []
    assert _report_all(restored, 4, scores) == [5]
    assert restored.ask(6) is not None and restored.parent_of(6) in (1, 4)
