"""Backend ``tpe`` of ``bayesian`` (the default): Optuna's Tree-structured Parzen Estimator.

The sampler is Optuna's ``TPESampler`` with ``multivariate=True`` (one joint model of all
parameters, which Optuna's benchmarks show beats independent ones on correlated objectives) and
``constant_liar=True``: trials still running count as the worst result seen, so parallel
suggestions (asynchronous slots, or the members of a synchronous batch) spread out instead of
collapsing onto one point. The first ``n_startup_trials`` results are drawn at random (Optuna's
own ``RandomSampler``). Warm-start results count toward them.

Determinism: a fresh ``TPESampler`` seeded with :func:`~appcore.algorithms._base.trial_seed`
of the trial's number suggests each trial, so the suggestion depends on the study's trials and
the number only -- the property :meth:`~appcore.algorithms.bayesian.BayesianSearch.restore`
relies on. Building the sampler costs microseconds; the model is rebuilt on every ask anyway.

Several objectives: the same sampler is Optuna's multi-objective TPE (MOTPE: the good trials are
the first non-domination ranks), for ``--objective a,b``. Constraints: a trial's reported
constraints are set on its Optuna trial, and Optuna's TPE ranks infeasible trials below the
feasible ones (c-TPE), in either case.

Conditional spaces (``"when"``): a trial has only its active parameters, so the joint model is
Optuna's ``group=True`` one -- the space is split into the groups of parameters that occur
together, each modelled jointly -- and the sampler infers the space from the trials as Optuna
does for define-by-run searches.

Speed: the job's search space is fixed and, without conditions, every trial has all of its
parameters, so the sampler is told the space instead of inferring it: Optuna's ``TPESampler``
otherwise intersects the distributions of every finished trial on each ask (its cache of that
intersection lives in the sampler, which is fresh for each trial here) -- about a fifth of an
ask at 1000 trials. Once the model is used (``n_startup_trials >= 1`` results in) that
intersection *is* the space, so the suggestions are the same.

Speed, the normal log-CDF: Optuna's TPE scores each candidate against every trial's truncated
normal kernel, and for that it needs ``log Phi(x)`` -- which Optuna, having no SciPy dependency,
computes by its own scalar port of SciPy's ``log_ndtr`` called element by element from Python
(``optuna.samplers._tpe._truncnorm._log_ndtr``; about 24,000 calls, three quarters of an ask at
1000 trials). Importing this module points that one function at SciPy's vectorized
``scipy.special.log_ndtr``, the function it ports: everything else, the search math included,
stays Optuna's. The two agree to 6e-8 relative (Optuna's branch for ``x > 6`` uses
``log(1 - q) ~ -q``; SciPy is the exact one), and a whole search suggests the same assignments:
the same integers and choices, reals equal to the last few bits (``tests/appcore/algorithms/
test_optuna_tpe.py``). Through AppCore's gRPC path a suggestion at 1000
trials went from 101 ms to 22 ms (p50; ``docs/benchmarks.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
import warnings

import numpy as np
from numpy.typing import ArrayLike
from optuna.distributions import BaseDistribution
from optuna.exceptions import ExperimentalWarning
from optuna.samplers import BaseSampler
from optuna.samplers import TPESampler
from optuna.samplers._tpe import _truncnorm
from optuna.study import Study
from optuna.trial import FrozenTrial
from scipy.special import log_ndtr

from disauto.appcore.algorithms._base import trial_seed
from disauto.appcore.algorithms._optuna_study import OptunaBackend


__all__ = ["TPEBackend"]


def _vectorized_log_ndtr(a: ArrayLike) -> np.ndarray:
    """``log Phi(a)`` element-wise, by SciPy (what Optuna's scalar loop ports)."""
    return np.asarray(log_ndtr(np.asarray(a, dtype=float)), dtype=float)


_OPTUNAS_LOG_NDTR = _truncnorm._log_ndtr
"""Optuna's own element-by-element function, kept for the test that compares the two."""
_truncnorm._log_ndtr = _vectorized_log_ndtr


class _KnownSpaceTPESampler(TPESampler):
    """Optuna's TPE, told the (fixed) search space rather than inferring it on every ask."""

    def __init__(self, space: Mapping[str, BaseDistribution], **options: Any) -> None:
        super().__init__(**options)
        # As Optuna's intersection search space returns it: sorted by name, single values out.
        self._known = {name: space[name] for name in sorted(space) if not space[name].single()}

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return dict(self._known)


class TPEBackend(OptunaBackend):
    """Optuna's multivariate TPE with the constant liar (see the module docstring)."""

    NAME = "tpe"
    MULTI_OBJECTIVE = True
    USES_CONSTRAINTS = True

    def _sampler_for(self, number: int) -> BaseSampler:
        options: dict[str, Any] = {"seed": trial_seed(self.seed, number),
                                   "n_startup_trials": self.n_startup_trials,
                                   "multivariate": True, "constant_liar": True}
        if self.space.conditional:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ExperimentalWarning)  # for group=True
                return TPESampler(group=True, **options)
        return _KnownSpaceTPESampler(self._distributions, **options)
