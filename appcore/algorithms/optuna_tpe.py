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

Speed at thousands of trials, the window: Optuna's TPE builds its two densities from every
finished trial on each ask, in Python loops (the trials' internal values, the split into good
and bad, the constraints), so an ask grew with the study: 280 ms p50, 530 ms p99 at 10,000
trials. The sampler here learns from a window of the study (the ``tpe_window``
setting, :data:`WINDOW` by default; 0 turns it off): the :data:`KEPT_BEST` best completed trials,
the most recent finished ones up to the window, and the trials still running (the constant
liar's); a window under :data:`KEPT_BEST` holds those best alone. Optuna's split takes the good
trials as the best ``min(ceil(0.1 n), 25)``, which the kept best always hold (feasible ones,
when most of the best 100 broke a constraint, may fall out), so the good density is the same as
without a window; the bad one is learnt from the recent trials instead of all. Its effect on
the search, measured on test functions: ``bench/tpe_window.py`` and ``docs/benchmarks.md``
(Scale). With several
objectives the window is the most recent trials and the running ones (a "best" needs one
objective). The window depends on the study's trials only, so a restored search suggests as the
original did.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import copy
import heapq
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

from disauto.appcore.algorithms._base import ObjectiveValue
from disauto.appcore.algorithms._base import trial_seed
from disauto.appcore.algorithms._optuna_study import OptunaBackend
from disauto.common.space import Assignment
from disauto.common.trial_state import TrialState


__all__ = ["TPEBackend"]


def _vectorized_log_ndtr(a: ArrayLike) -> np.ndarray:
    """``log Phi(a)`` element-wise, by SciPy (what Optuna's scalar loop ports)."""
    return np.asarray(log_ndtr(np.asarray(a, dtype=float)), dtype=float)


_OPTUNAS_LOG_NDTR = _truncnorm._log_ndtr
"""Optuna's own element-by-element function, kept for the test that compares the two."""
_truncnorm._log_ndtr = _vectorized_log_ndtr


WINDOW = 1000
"""The finished trials the model learns from at most, by default (``tpe_window``)."""
KEPT_BEST = 100
"""The best completed trials always in the window (Optuna's good trials are at most 25)."""


class WindowBook:
    """Which of the study's trials the model learns from, kept as they finish (the backend
    tells it), so that choosing them costs the window, not the study: the :data:`KEPT_BEST`
    best completed ones (one objective: ``minimize`` True or False; None: several, no best),
    the most recent finished ones by study order up to ``window`` in all, and every running
    one. Both sets depend only on which trials finished how, not on the order they were told
    (a restored search learns from the same window)."""

    def __init__(self, window: int, minimize: bool | None, kept_best: int = KEPT_BEST) -> None:
        self.window = window
        self._minimize = minimize
        self._kept_best = kept_best
        self._finished: list[int] = []
        """Optuna numbers of the completed and pruned trials, ascending."""
        self._best: list[tuple[float, int]] = []
        """A heap of the best completed trials' (worst first) keys: (-value or value, -number)."""

    def finished(self, number: int, value: float | None, complete: bool) -> None:
        """Optuna trial ``number`` completed (with ``value``) or was pruned."""
        bisect.insort(self._finished, number)
        if complete and value is not None and self._minimize is not None:
            key = (-value if self._minimize else value, -number)
            if len(self._best) < self._kept_best:
                heapq.heappush(self._best, key)
            elif key > self._best[0]:
                heapq.heapreplace(self._best, key)

    def numbers(self, running: Iterable[int]) -> set[int] | None:
        """The Optuna numbers of the trials in the window and of the ``running`` ones (None:
        no window, or it holds every finished trial)."""
        if not self.window or len(self._finished) <= self.window:
            return None
        keep = {-number for _, number in self._best}
        for number in reversed(self._finished):
            if len(keep) >= self.window:
                break
            keep.add(number)
        keep.update(running)
        return keep


Keep = Callable[[], "set[int] | None"]
"""The window's trials now (:meth:`WindowBook.numbers`), or None for every trial."""


class _Window:
    """A study as the sampler's model sees it: its trials cut to the window (everything else
    is the study's own)."""

    def __init__(self, study: Study, keep: set[int]) -> None:
        self._study = study
        self._keep = sorted(keep)

    def _get_trials(self, deepcopy: bool, states: Any = None,
                    use_cache: bool = False) -> list[FrozenTrial]:
        every = self._study._get_trials(deepcopy=False, states=None, use_cache=use_cache)
        chosen = [every[n] for n in self._keep if n < len(every)]
        if any(trial.number != n for trial, n in zip(chosen, self._keep, strict=False)):
            chosen = every  # not a study numbered by position: no window, rather than a wrong one
        chosen = [t for t in chosen if states is None or t.state in states]
        return copy.deepcopy(chosen) if deepcopy else chosen

    def __getattr__(self, name: str) -> Any:
        return getattr(self._study, name)


class _WindowedTPESampler(TPESampler):
    """Optuna's TPE whose densities are learnt from a window of the study (module doc)."""

    def __init__(self, keep: Keep, **options: Any) -> None:
        super().__init__(**options)
        self._keep = keep

    def _sample(self, study: Study, trial: FrozenTrial,
                search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        keep = self._keep()
        seen: Any = study if keep is None else _Window(study, keep)
        return super()._sample(seen, trial, search_space)


class _KnownSpaceTPESampler(_WindowedTPESampler):
    """Optuna's TPE, told the (fixed) search space rather than inferring it on every ask."""

    def __init__(self, space: Mapping[str, BaseDistribution], keep: Keep,
                 **options: Any) -> None:
        super().__init__(keep, **options)
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
    model_window: int | None = WINDOW

    def _sampler_for(self, number: int) -> BaseSampler:
        options: dict[str, Any] = {"seed": trial_seed(self.seed, number),
                                   "n_startup_trials": self.n_startup_trials,
                                   "multivariate": True, "constant_liar": True}
        if self.space.conditional:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ExperimentalWarning)  # for group=True
                return _WindowedTPESampler(self._window_now, group=True, **options)
        return _KnownSpaceTPESampler(self._distributions, self._window_now, **options)

    def _book(self) -> WindowBook:
        book = getattr(self, "_window_book", None)
        if book is None:
            minimize = None if len(self.directions) > 1 else self.direction == "minimize"
            book = self._window_book = WindowBook(self.model_window or 0, minimize, KEPT_BEST)
        book.window = self.model_window or 0
        return book

    def _window_now(self) -> set[int] | None:
        """The Optuna numbers the model learns from now (None: every trial)."""
        return self._book().numbers(trial.number for trial in self._trials.values())

    def add_known(self, assignment: Assignment, value: ObjectiveValue) -> None:
        super().add_known(assignment, value)
        known = self._study._get_trials(deepcopy=False, use_cache=False)[-1]
        self._book().finished(known.number, known.values[0] if known.values else None, True)

    def observe(self, number: int, value: ObjectiveValue | None, state: TrialState,
                constraints: Sequence[float] = ()) -> None:
        trial = self._trials.get(number)
        super().observe(number, value, state, constraints)
        if trial is None:
            return
        if state == TrialState.COMPLETED and value is not None:  # Optuna's COMPLETE
            first = value[0] if isinstance(value, tuple) else value
            self._book().finished(trial.number, float(first), True)
        elif state == TrialState.PRUNED:
            self._book().finished(trial.number, None, False)
