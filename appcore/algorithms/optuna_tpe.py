"""Backend ``tpe`` of ``bayesian`` (the default): Optuna's Tree-structured Parzen Estimator.

Optuna's ``TPESampler`` (``multivariate=True``, ``constant_liar=True``; MOTPE with several
objectives, c-TPE with constraints, ``group=True`` for conditional spaces), a fresh one seeded
by :func:`~appcore.algorithms._base.trial_seed` for each trial so that a restored search suggests
as the original did. For speed it is told the fixed space, scores with SciPy's vectorized
``log_ndtr`` during its ask, and learns from a window of the study (``tpe_window``,
:data:`WINDOW`; :data:`KEPT_BEST` best kept): docs/design.md, "The tpe backend"; the figures
are in docs/benchmarks.md.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import copy
import heapq
import threading
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
"""Optuna's own element-by-element function."""


class _ScipyLogCdf:
    """While entered (by any thread), Optuna's TPE math computes ``log Phi`` by SciPy: the swap
    is scoped to this sampler's asks, so no other use of Optuna in the process is changed.
    ``enabled`` False leaves Optuna's own function in place (the test that compares them)."""

    enabled = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._saved: Any = None

    def __enter__(self) -> None:
        with self._lock:
            if self._depth == 0 and self.enabled:
                self._saved = _truncnorm._log_ndtr
                _truncnorm._log_ndtr = _vectorized_log_ndtr
            self._depth += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._saved is not None:
                _truncnorm._log_ndtr, self._saved = self._saved, None


_SCIPY_LOG_CDF = _ScipyLogCdf()


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
        with _SCIPY_LOG_CDF:
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
