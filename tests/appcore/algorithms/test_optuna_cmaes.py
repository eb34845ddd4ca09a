"""Backend ``cmaes``: Optuna's CMA-ES restarts with twice the population when it has converged
(IPOP), and a restored search restarts at the same trial."""

from __future__ import annotations

import optuna
import pytest

from disauto.appcore.algorithms import TrialRecord
from disauto.appcore.algorithms import create_algorithm
from disauto.appcore.algorithms.bayesian import BayesianSearch
from disauto.appcore.algorithms.optuna_cmaes import CmaEsBackend
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.trial_state import TrialState


SPACE = SearchSpace((RealParam("x", -5.0, 5.0), RealParam("y", -5.0, 5.0), IntParam("k", 1, 8)))


def _search() -> BayesianSearch:
    algorithm = create_algorithm("bayesian", SPACE, seed=1, direction="minimize",
                                 settings={"backend": "cmaes", "n_startup_trials": "1"})
    assert isinstance(algorithm, BayesianSearch)
    return algorithm


def _backend(algorithm: BayesianSearch) -> CmaEsBackend:
    backend = algorithm._backend
    assert isinstance(backend, CmaEsBackend)
    return backend


def test_a_converged_run_restarts_with_twice_the_population() -> None:
    """A flat objective makes CMA-ES's function-value criterion stop the run early."""
    algorithm = _search()
    backend = _backend(algorithm)
    first_restart = None
    for number in range(1, 260):
        assignment = algorithm.ask(number)
        assert isinstance(assignment, dict)
        SPACE.validate_assignment(assignment)
        algorithm.tell(number, 1.0, TrialState.COMPLETED)
        if backend.restarts and first_restart is None:
            first_restart = number
            population = backend._popsize
    assert first_restart is not None, "CMA-ES never said it should stop"
    assert population == 2 * 7  # cmaes' default for 3 dimensions is 4 + floor(3 ln 3) = 7
    assert backend._x0 is not None and set(backend._x0) == {"x", "y", "k"}


def test_a_restored_search_restarts_at_the_same_trial() -> None:
    original = _search()
    history = []
    for number in range(1, 200):
        assignment = original.ask(number)
        assert isinstance(assignment, dict)
        history.append(TrialRecord(number, assignment, 1.0, TrialState.COMPLETED))
        original.tell(number, 1.0, TrialState.COMPLETED)
    assert _backend(original).restarts == 1
    restored = _search()
    restored.restore(history)
    assert _backend(restored).restarts == 1
    for number in range(200, 215):
        assert restored.ask(number) == original.ask(number)
        for algorithm in (original, restored):
            algorithm.tell(number, 2.0, TrialState.COMPLETED)


def test_optunas_cmaes_still_keeps_its_distribution_in_the_study() -> None:
    """What the restart reads (``converged_population``) is Optuna 5.0's own bookkeeping."""
    assert optuna.__version__ == "5.0.0"
    with pytest.warns(FutureWarning, match="restart_strategy"):
        optuna.samplers.CmaEsSampler(restart_strategy="ipop")  # gone from Optuna itself


def test_the_parameters_cmaes_cannot_model_are_named_once_before_the_job() -> None:
    """Optuna's CMA-ES samples a choice, and a parameter not every trial has, independently (at
    random); its own warning, per trial, is off, so the search says so once (issue 36)."""
    conditional = SearchSpace(
        (CategoricalParam("optimizer", ("sgd", "adam")), RealParam("lr", 1e-4, 1e-1),
         RealParam("momentum", 0.5, 0.99)), when={"momentum": {"optimizer": "sgd"}})
    notes = BayesianSearch.notes(conditional, {"backend": "cmaes"})
    assert notes == (
        "--bayes-backend cmaes cannot model optimizer (choice) or momentum (conditional): "
        "Optuna's CMA-ES samples them independently, at random in every trial whatever the "
        "results; it adapts the other parameters (--bayes-backend tpe models them all)",)
    only_choices = SearchSpace((CategoricalParam("act", ("relu", "tanh")),))
    assert "so this is a random search" in BayesianSearch.notes(only_choices,
                                                                {"backend": "cmaes"})[0]
    assert BayesianSearch.notes(SPACE, {"backend": "cmaes"}) == ()  # all numeric: nothing
    assert BayesianSearch.notes(conditional, {"backend": "tpe"}) == ()
