"""The TPE backend's SciPy log-CDF: the same function as Optuna's, the same search."""

from __future__ import annotations

import math

import numpy as np
import pytest

from appcore.algorithms import create_algorithm
from appcore.algorithms import optuna_tpe
from appcore.space import Assignment
from appcore.space import CategoricalParam
from appcore.space import IntParam
from appcore.space import RealParam
from appcore.space import SearchSpace


SPACE = SearchSpace((
    RealParam("lr", 1e-4, 1e-1, log=True),
    RealParam("momentum", 0.0, 0.99),
    RealParam("dropout", 0.0, 0.5, step=0.05),
    IntParam("units", 16, 1024, log=True),
    IntParam("layers", 1, 8),
    CategoricalParam("act", ("relu", "tanh", "gelu")),
))


def _objective(a: Assignment) -> float:
    return (-(math.log10(a["lr"]) + 2.5) ** 2 - (a["momentum"] - 0.9) ** 2 - a["dropout"]
            + math.log2(a["units"]) / a["layers"] + (a["act"] == "gelu"))


def test_optunas_trial_math_uses_the_vectorized_function() -> None:
    from optuna.samplers._tpe import _truncnorm

    assert _truncnorm._log_ndtr is optuna_tpe._vectorized_log_ndtr


def test_it_agrees_with_optunas_own_log_ndtr_over_the_whole_range() -> None:
    x = np.concatenate([np.linspace(-60.0, 40.0, 20_001), -np.logspace(-8, 3, 200),
                        np.logspace(-8, 3, 200), [0.0, -0.0, 6.0, -20.0, 1e6, -1e6]])
    ours = optuna_tpe._vectorized_log_ndtr(x)
    theirs = optuna_tpe._OPTUNAS_LOG_NDTR(x)
    assert ours.shape == x.shape and ours.dtype == np.float64
    # Far right the values are subnormal (-5e-311 against -0.0): log Phi there is 0 to 1e-300.
    np.testing.assert_allclose(ours, theirs, rtol=1e-7, atol=1e-300)
    grid = x[:12].reshape(3, 4)
    assert optuna_tpe._vectorized_log_ndtr(grid).shape == (3, 4)


def _search(parallelism: int, trials: int) -> list[Assignment]:
    algorithm = create_algorithm("bayesian", SPACE, seed=3, direction="maximize",
                                 settings={"backend": "tpe", "n_startup_trials": "5"},
                                 parallelism=parallelism)
    asked: list[Assignment] = []
    pending: list[int] = []
    for number in range(1, trials + 1):
        suggestion = algorithm.ask(number)
        assert isinstance(suggestion, dict)
        asked.append(suggestion)
        pending.append(number)
        if len(pending) >= parallelism:
            done = pending.pop(0)
            algorithm.tell(done, _objective(asked[done - 1]),
                           "pruned" if done % 9 == 0 else "completed")
    return asked


@pytest.mark.parametrize("parallelism", [1, 4])
def test_a_search_suggests_what_it_would_with_optunas_function(
        monkeypatch: pytest.MonkeyPatch, parallelism: int) -> None:
    from optuna.samplers._tpe import _truncnorm

    fast = _search(parallelism, 80)
    monkeypatch.setattr(_truncnorm, "_log_ndtr", optuna_tpe._OPTUNAS_LOG_NDTR)
    slow = _search(parallelism, 80)
    for ours, theirs in zip(fast, slow, strict=True):
        assert ours.keys() == theirs.keys()
        for name, value in theirs.items():
            if isinstance(value, float):
                assert ours[name] == pytest.approx(value, rel=1e-9)
            else:
                assert ours[name] == value
