"""Backend ``nsga2`` of ``bayesian``: Optuna's NSGA-II, a genetic algorithm for several objectives.

Each generation's children come from parents chosen by non-domination rank and crowding distance
(Deb et al., "A fast and elitist multiobjective genetic algorithm: NSGA-II", 2002); with reported
constraints the ranking is Optuna's constrained domination (a feasible trial beats an infeasible
one, two infeasible ones compare by their violation). It optimizes one objective too.

The population size is ``n_startup_trials`` (at least 2): the first generation is that many random
trials, the backend contract's "random draws before the model is used".

Optuna keeps the algorithm's state in the study: each trial's generation and each generation's
parents. A fresh ``NSGAIISampler`` seeded with :func:`~appcore.algorithms._base.trial_seed` of the
trial's number suggests each trial, so a suggestion depends on the study and the number only. A
restarted AppCore replays the recorded trials with their recorded values and lets the sampler
sample each once, which files them into their generations again
(:attr:`~appcore.algorithms._optuna_study.OptunaBackend.REPLAY_SAMPLES`); with trials running in
parallel a generation may then hold a slightly different set of trials than it did before, as
generations are decided by what had completed when a trial was sampled.
"""

from __future__ import annotations

from optuna.samplers import BaseSampler
from optuna.samplers import NSGAIISampler

from disauto.appcore.algorithms._base import trial_seed
from disauto.appcore.algorithms._optuna_study import OptunaBackend


__all__ = ["NSGA2Backend"]


class NSGA2Backend(OptunaBackend):
    """Optuna's NSGA-II (see the module docstring)."""

    NAME = "nsga2"
    MULTI_OBJECTIVE = True
    USES_CONSTRAINTS = True
    REPLAY_SAMPLES = True

    def _sampler_for(self, number: int) -> BaseSampler:
        return NSGAIISampler(population_size=max(2, self.n_startup_trials),
                             seed=trial_seed(self.seed, number))
