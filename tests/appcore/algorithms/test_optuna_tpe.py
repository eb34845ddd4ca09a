"""The TPE backend's two speed-ups change no suggestion: the known space, SciPy's log-CDF."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from optuna.samplers import TPESampler
from optuna.samplers._tpe import _truncnorm
import pytest

from disauto.appcore.algorithms import create_algorithm
from disauto.appcore.algorithms import optuna_tpe
from disauto.appcore.algorithms._base import trial_seed
from disauto.common.space import Assignment
from disauto.common.trial_state import TrialState
from tests.appcore.algorithms.test_bayesian import SPACE
from tests.appcore.algorithms.test_bayesian import score


def _search(parallelism: int, trials: int = 40) -> list[Assignment]:
    """A TPE search told its results as trials end in order, every 7th pruned."""
    algorithm = create_algorithm("bayesian", SPACE, seed=7, direction="maximize",
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
            algorithm.tell(done, score(asked[done - 1]) + math.sin(done) / 10,
                           TrialState.PRUNED if done % 7 == 0 else TrialState.COMPLETED)
    return asked


@pytest.mark.parametrize("parallelism", [1, 4])
def test_told_the_space_it_suggests_what_optunas_own_inference_would(
        monkeypatch: pytest.MonkeyPatch, parallelism: int) -> None:
    # Optuna's own sampler has no SciPy log-CDF: compare the two with Optuna's alone.
    monkeypatch.setattr(optuna_tpe._ScipyLogCdf, "enabled", False)
    told = _search(parallelism)
    monkeypatch.setattr(optuna_tpe.TPEBackend, "_sampler_for", lambda self, number: TPESampler(
        seed=trial_seed(self.seed, number), n_startup_trials=self.n_startup_trials,
        multivariate=True, constant_liar=True))
    assert _search(parallelism) == told


def test_optunas_trial_math_uses_the_vectorized_log_cdf_while_this_sampler_asks_only() -> None:
    seen = []
    real = optuna_tpe._vectorized_log_ndtr

    def spy(a: Any) -> Any:
        seen.append(_truncnorm._log_ndtr is spy)
        return real(a)

    assert _truncnorm._log_ndtr is optuna_tpe._OPTUNAS_LOG_NDTR  # importing changed nothing
    optuna_tpe._vectorized_log_ndtr = spy
    try:
        _search(1, trials=15)
    finally:
        optuna_tpe._vectorized_log_ndtr = real
    assert seen and all(seen)
    assert _truncnorm._log_ndtr is optuna_tpe._OPTUNAS_LOG_NDTR  # and it is back


def test_the_vectorized_log_cdf_agrees_with_optunas_over_the_whole_range() -> None:
    x = np.concatenate([np.linspace(-60.0, 40.0, 20_001), -np.logspace(-8, 3, 200),
                        np.logspace(-8, 3, 200), [0.0, -0.0, 6.0, -20.0, 1e6, -1e6]])
    ours = optuna_tpe._vectorized_log_ndtr(x)
    theirs = optuna_tpe._OPTUNAS_LOG_NDTR(x)
    assert ours.shape == x.shape and ours.dtype == np.float64
    # Far right the values are subnormal (-5e-311 against -0.0): log Phi there is 0 to 1e-300.
    np.testing.assert_allclose(ours, theirs, rtol=1e-7, atol=1e-300)
    assert optuna_tpe._vectorized_log_ndtr(x[:12].reshape(3, 4)).shape == (3, 4)


@pytest.mark.parametrize("parallelism", [1, 4])
def test_with_the_vectorized_log_cdf_a_search_suggests_the_same_assignments(
        monkeypatch: pytest.MonkeyPatch, parallelism: int) -> None:
    fast = _search(parallelism, trials=80)
    monkeypatch.setattr(optuna_tpe._ScipyLogCdf, "enabled", False)
    slow = _search(parallelism, trials=80)
    for ours, theirs in zip(fast, slow, strict=True):
        assert ours.keys() == theirs.keys()
        for name, value in theirs.items():
            if isinstance(value, float):
                assert ours[name] == pytest.approx(value, rel=1e-9)
            else:
                assert ours[name] == value
