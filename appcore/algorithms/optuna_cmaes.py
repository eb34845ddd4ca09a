"""Backend ``cmaes`` of ``bayesian``: Optuna's CMA-ES, restarted with a larger population (IPOP).

CMA-ES (Hansen, "The CMA Evolution Strategy: A Tutorial", 2016) adapts a multivariate normal
distribution over the continuous and integer parameters, one generation of ``popsize`` trials at
a time; categorical parameters (and conditional ones outside every trial) are drawn at random,
as Optuna's ``CmaEsSampler`` does. It optimizes one objective; reported constraints are ignored.
The first ``n_startup_trials`` trials are random.

Restarts: Optuna 5.0's ``CmaEsSampler`` no longer restarts (its ``restart_strategy`` argument
"automatically falls back to None" since Optuna 4.4, the restarting sampler having moved to
OptunaHub, which loads its code from the network at run time). This backend keeps Optuna's
sampler and restarts it as IPOP-CMA-ES does (Auger and Hansen, "A restart CMA evolution strategy
with increasing population size", CEC 2005): when the run's CMA-ES says it should stop (the
``cmaes`` library's stopping criteria, ``CMA.should_stop``), the next trial starts a new run --
a new Optuna study, so the sampler starts a new distribution -- with twice the population, its
mean at a uniformly random point of the space (Optuna's ``RandomSampler``) and the default step
size. Trials of an earlier run still running when it ends are told to that run's study.

Optuna keeps CMA-ES's state in the study (each trial's generation, the distribution after each
generation). A fresh sampler seeded with :func:`~appcore.algorithms._base.trial_seed` of the
trial's number suggests each trial, and the restart is decided from the study before a trial is
created, so a suggestion depends on the studies and the number only. A restarted AppCore replays
the recorded trials with their recorded values and lets the sampler sample each once, which files
them into their generations again (:attr:`~appcore.algorithms._optuna_study.OptunaBackend.
REPLAY_SAMPLES`).
"""

from __future__ import annotations

from typing import Any
import warnings

import optuna
from optuna.distributions import CategoricalDistribution
from optuna.samplers import BaseSampler
from optuna.samplers import CmaEsSampler
from optuna.samplers import RandomSampler

from disauto.appcore.algorithms._base import trial_seed
from disauto.appcore.algorithms._optuna_study import OptunaBackend
from disauto.common.space import CategoricalParam
from disauto.common.space import SearchSpace


__all__ = ["CmaEsBackend"]


class _CmaEs(CmaEsSampler):
    """Optuna's CMA-ES that also says whether its run has converged."""

    def converged_population(self, study: optuna.Study) -> int | None:
        """The population size of the run's CMA-ES if it should stop now, else None.

        Reads the distribution Optuna stored after the run's last complete generation (Optuna
        5.0's ``CmaEsSampler`` keeps it in its trials; ``tests/appcore/algorithms/
        test_optuna_cmaes.py`` pins that this still works)."""
        optimizer = self._restore_optimizer(self._get_trials(study))
        if optimizer is None or not optimizer.should_stop():
            return None
        return int(optimizer.population_size)


class CmaEsBackend(OptunaBackend):
    """Optuna's CMA-ES with IPOP restarts (see the module docstring)."""

    NAME = "cmaes"
    REPLAY_SAMPLES = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.restarts = 0
        """How many times the search started a new run."""
        self._popsize: int | None = None  # the current run's; None: CMA-ES's default
        self._x0: dict[str, Any] | None = None  # the current run's mean; None: the centre
        super().__init__(*args, **kwargs)

    @classmethod
    def space_notes(cls, space: SearchSpace) -> tuple[str, ...]:
        """The parameters CMA-ES does not model, named once before the job starts (Optuna's own
        warning, per trial, is off): a choice, and a conditional parameter, which not every
        trial has (Optuna's ``CmaEsSampler`` models the numeric ranges that every finished
        trial has), are sampled by its ``independent_sampler``, a ``RandomSampler``."""
        choices = [p.name for p in space
                   if isinstance(p, CategoricalParam) and len(p.choices) > 1]
        conditional = [p.name for p in space
                       if p.name not in choices and space.conditions.requirement(p.name)]
        if not choices and not conditional:
            return ()
        kinds = " or ".join(f"{', '.join(names)} ({kind})" for names, kind in
                            ((choices, "choice"), (conditional, "conditional")) if names)
        rest = ("it adapts the other parameters" if len(space) > len(choices) + len(conditional)
                else "no parameter is left to it, so this is a random search")
        return (f"--bayes-backend cmaes cannot model {kinds}: Optuna's CMA-ES samples them "
                f"independently, at random in every trial whatever the results; {rest} "
                "(--bayes-backend tpe models them all)",)

    def _sampler_for(self, number: int) -> BaseSampler:
        options: dict[str, Any] = {}
        if self._x0 is not None:
            options["x0"] = self._x0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # x0, deprecated in Optuna 4.9
            return _CmaEs(seed=trial_seed(self.seed, number), popsize=self._popsize,
                          n_startup_trials=self.n_startup_trials if not self.restarts else 0,
                          warn_independent_sampling=False, **options)

    def _prepare(self, number: int) -> None:
        """Start a new run when the current one has converged."""
        sampler = self._sampler_for(number)
        assert isinstance(sampler, _CmaEs)
        population = sampler.converged_population(self._study)
        if population is None:
            return
        self.restarts += 1
        self._popsize = 2 * population
        self._x0 = self._random_point(number)
        self._study = self._new_study(self._sampler_for(number))

    def _random_point(self, number: int) -> dict[str, Any]:
        """A uniformly random point of the numeric parameters (Optuna's ``RandomSampler``)."""
        numeric = {name: distribution for name, distribution in self._distributions.items()
                   if not isinstance(distribution, CategoricalDistribution)}
        seed = trial_seed(trial_seed(self.seed, number), self.restarts)
        study = optuna.create_study(sampler=RandomSampler(seed=seed))
        return dict(study.ask(fixed_distributions=numeric).params)
