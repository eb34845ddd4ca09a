"""Backend ``qmc`` of ``bayesian``: Optuna's quasi-Monte Carlo sampler (scrambled Sobol).

Not a model: a low-discrepancy sequence that covers the space more evenly than random draws,
a strong baseline for small budgets and a good first phase before a model. It ignores results
(and ``n_startup_trials``), so parallel and synchronous runs issue the same points.

Optuna numbers the sequence's points with a counter in the study, advanced by each draw. A
restart therefore replays the recorded trials by drawing again (:meth:`QMCBackend.replay`), which
moves the counter to where it was and shows whether the recorded points are the ones it would
issue.

The sampler is told the job's (fixed) search space, so every trial, the first one too, is the
next point of the sequence. Left to infer it, Optuna's ``QMCSampler`` draws at random (its
independent sampler, which does not advance the counter) whenever no trial has completed or been
pruned and none is pending -- after a first trial that failed, say -- so which trials were random
depended on the order results arrived in, which a restart does not replay: a restarted AppCore
then continued another sequence than the original (found by the algorithms' contract,
``tests/appcore/algorithms/test_contract.py``, at parallelism 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
import warnings

from optuna.distributions import BaseDistribution
from optuna.exceptions import ExperimentalWarning
from optuna.samplers import BaseSampler
from optuna.samplers import QMCSampler
from optuna.samplers import RandomSampler
from optuna.study import Study
from optuna.trial import FrozenTrial

from disauto.appcore.algorithms._base import trial_seed
from disauto.appcore.algorithms._optuna_study import OptunaBackend
from disauto.common.space import Assignment


__all__ = ["QMCBackend"]


class _KnownSpaceQMCSampler(QMCSampler):
    """Optuna's QMC, told the (fixed) search space rather than inferring it from the trials."""

    def __init__(self, space: Mapping[str, BaseDistribution], **options: Any) -> None:
        super().__init__(**options)
        self._known = dict(space)

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return dict(self._known)


class QMCBackend(OptunaBackend):
    """Optuna's scrambled Sobol sequence (see the module docstring)."""

    NAME = "qmc"
    MULTI_OBJECTIVE = True  # the sequence ignores results, however many objectives they have

    def _sampler_for(self, number: int) -> BaseSampler:
        # One sampler for the whole search: the sequence's scramble comes from the seed, and
        # the point index from the study, so the same object must draw every point.
        sampler = getattr(self, "_qmc", None)
        if sampler is None:
            seed = trial_seed(self.seed, 0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ExperimentalWarning)
                sampler = _KnownSpaceQMCSampler(
                    self._distributions, qmc_type="sobol", scramble=True, seed=seed,
                    independent_sampler=RandomSampler(seed=seed),
                    warn_independent_sampling=False)
            self._qmc: QMCSampler = sampler
        return sampler

    def replay(self, number: int, assignment: Assignment) -> Assignment:
        """Draw trial ``number`` again (advancing the sequence); return what was drawn.

        Args:
            number: The recorded trial's number.
            assignment: Its recorded assignment (not used: warm-start points are not replayed
                through this method).

        Returns:
            The point the sequence gives this trial.
        """
        return self.suggest([number], [None])[0]
