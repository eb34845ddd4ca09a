"""Backend ``tpe`` of ``bayesian`` (the default): Optuna's Tree-structured Parzen Estimator.

The sampler is Optuna's ``TPESampler`` with ``multivariate=True`` (one joint model of all
parameters, which Optuna's benchmarks show beats independent ones on correlated objectives) and
``constant_liar=True``: trials still running count as the worst result seen, so parallel
suggestions (asynchronous slots, or the members of a synchronous batch) spread out instead of
collapsing onto one point. The first ``n_startup_trials`` results are drawn at random (Optuna's
own ``RandomSampler``). Warm-start results count toward them.

Determinism: a fresh ``TPESampler`` seeded with :func:`~appcore.algorithms._backend.trial_seed`
of the trial's number suggests each trial, so the suggestion depends on the study's trials and
the number only -- the property :meth:`~appcore.algorithms.bayesian.BayesianSearch.restore`
relies on. Building the sampler costs microseconds; the model is rebuilt on every ask anyway.
"""

from __future__ import annotations

from optuna.samplers import BaseSampler
from optuna.samplers import TPESampler

from appcore.algorithms._backend import trial_seed
from appcore.algorithms._optuna_study import OptunaBackend


__all__ = ["TPEBackend"]


class TPEBackend(OptunaBackend):
    """Optuna's multivariate TPE with the constant liar (see the module docstring)."""

    NAME = "tpe"

    def _sampler_for(self, number: int) -> BaseSampler:
        return TPESampler(
            seed=trial_seed(self.seed, number),
            n_startup_trials=self.n_startup_trials,
            multivariate=True,
            constant_liar=True,
        )
