"""Backend ``qmc`` of ``bayesian``: Optuna's quasi-Monte Carlo sampler (scrambled Sobol).

Not a model: a low-discrepancy sequence that covers the space more evenly than random draws,
a strong baseline for small budgets and a good first phase before a model. It ignores results
(and ``n_startup_trials``), so parallel and synchronous runs issue the same points.

Optuna numbers the sequence's points with a counter in the study, advanced by each draw, and
suggests the job's first trial with its independent (random) sampler. A restart therefore
replays the recorded trials by drawing again (:meth:`QMCBackend.replay`), which moves the
counter to where it was and shows whether the recorded points are the ones it would issue.
"""

from __future__ import annotations

import warnings

from optuna.exceptions import ExperimentalWarning
from optuna.samplers import BaseSampler
from optuna.samplers import QMCSampler
from optuna.samplers import RandomSampler

from disauto.appcore.algorithms._base import trial_seed
from disauto.appcore.algorithms._optuna_study import OptunaBackend
from disauto.common.space import Assignment


__all__ = ["QMCBackend"]


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
                sampler = QMCSampler(qmc_type="sobol", scramble=True, seed=seed,
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
