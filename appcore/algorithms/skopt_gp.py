"""Backend ``gp`` of ``bayesian``: scikit-optimize's Gaussian-process optimizer (``gp_hedge``).

Needs the ``skopt`` extra (``pip install 'disauto[skopt]'``: scikit-optimize 0.10.2, which works
with NumPy 2 and this project's scikit-learn).

Mapping of the space to scikit-optimize's dimensions:

* real -> ``Real(low, high)``, with ``prior="log-uniform"`` on a log scale; a stepped real
  range -> ``Integer`` over its step indices (``low + k * step``), so every value is on the grid;
* integer -> ``Integer(low, high)`` (``log-uniform`` on a log scale); a stepped one -> ``Integer``
  over its step indices;
* categorical -> ``Categorical`` over the choices' indices (one-hot encoded by scikit-optimize),
  so mixed-type choices (``1``, ``0.5``, ``"auto"``) come back as the very objects of the space.

scikit-optimize minimizes, so a maximized objective is negated. It optimizes one objective and
has no constraints (a trial's reported constraints are ignored).

Conditional spaces (``"when"``): scikit-optimize has no conditional dimensions, so the model
sees every parameter; an inactive one is held at its first grid value (its low bound, or its
first choice) in every point the model is told, and dropped from the assignment it suggests.

Each suggestion builds a fresh ``Optimizer`` (``base_estimator="GP"``, ``acq_func="gp_hedge"``,
``random_state`` = :func:`~appcore.algorithms._base.trial_seed` of the first number), tells
it every known result in trial-number order, and asks. Trials still pending are told as the
best value seen so far -- scikit-optimize's own ``"cl_min"`` constant liar -- and a batch is
asked with ``ask(n_points, strategy="cl_min")``, so parallel suggestions spread out. This makes
every suggestion a function of the seed, the number and the results, as the backend contract
asks (a restart replays the job store and continues the same sequence). The price: one GP fit
per suggestion (plus one per extra batch member), and ``gp_hedge``'s portfolio gains start from
zero each time (each suggestion draws its acquisition function from an unweighted hedge).

Outcomes: a pruned trial's last intermediate value is told as its result (a pessimistic
estimate of where the trial was heading); failed and killed trials are dropped, since
scikit-optimize has no notion of a failed point.
"""

from __future__ import annotations

from collections.abc import Sequence
import logging
import math
from typing import Any
import warnings

from disauto.appcore.algorithms._backend import Backend
from disauto.appcore.algorithms._base import Directions
from disauto.appcore.algorithms._base import ObjectiveValue
from disauto.appcore.algorithms._base import trial_seed
from disauto.common.space import Assignment
from disauto.common.space import IntParam
from disauto.common.space import Param
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.space import Value
from disauto.common.trial_state import TrialState


__all__ = ["GPBackend"]

_logger = logging.getLogger(__name__)

Point = list[Any]
"""A point in scikit-optimize's terms: one value per dimension."""


def _dimension(param: Param) -> Any:
    from skopt.space import Categorical
    from skopt.space import Integer
    from skopt.space import Real

    if isinstance(param, RealParam):
        if param.step is not None:
            return Integer(0, len(param.step_points()) - 1, name=param.name)
        return Real(param.low, param.high, prior="log-uniform" if param.log else "uniform",
                    name=param.name)
    if isinstance(param, IntParam):
        if param.step > 1:
            return Integer(0, (param.high - param.low) // param.step, name=param.name)
        return Integer(param.low, param.high, prior="log-uniform" if param.log else "uniform",
                       name=param.name)
    return Categorical(list(range(len(param.choices))), name=param.name)


def _to_point(param: Param, value: Value) -> Any:
    if isinstance(param, RealParam):
        if param.step is not None:
            return round((float(value) - param.low) / param.step)
        return float(value)
    if isinstance(param, IntParam):
        return (int(value) - param.low) // param.step if param.step > 1 else int(value)
    return next(i for i, choice in enumerate(param.choices)
                if type(choice) is type(value) and choice == value)


def _from_point(param: Param, value: Any) -> Value:
    if isinstance(param, RealParam):
        if param.step is not None:
            points = param.step_points()
            return points[min(max(int(value), 0), len(points) - 1)]
        return min(max(float(value), param.low), param.high)
    if isinstance(param, IntParam):
        if param.step > 1:
            return param.low + int(value) * param.step
        return min(max(int(value), param.low), param.high)
    return param.choices[int(value)]


class GPBackend(Backend):
    """scikit-optimize's GP with ``gp_hedge`` and the ``cl_min`` liar (see the module doc)."""

    NAME = "gp"
    REQUIRES = ("skopt", "pip install 'disauto[skopt]' (scikit-optimize==0.10.2)")

    def __init__(
        self, space: SearchSpace, *, seed: int, direction: Directions, n_startup_trials: int
    ) -> None:
        super().__init__(space, seed=seed, direction=direction,
                         n_startup_trials=n_startup_trials)
        self._dimensions = [_dimension(param) for param in space]
        self._sign = -1.0 if direction == "maximize" else 1.0
        self._known: list[tuple[Point, float]] = []
        self._told: dict[int, tuple[Point, float]] = {}
        self._pending: dict[int, Point] = {}

    def _point(self, assignment: Assignment) -> Point:
        """The model's point of an assignment: an inactive parameter at its first grid value."""
        return [_to_point(param, assignment[param.name] if param.name in assignment
                          else param.grid_axis(2)[0])
                for param in self.space]

    def _assignment(self, point: Sequence[Any]) -> Assignment:
        """The assignment of a model's point: its active parameters only."""
        values = {param.name: _from_point(param, value)
                  for param, value in zip(self.space, point, strict=True)}
        active: Assignment = {}
        for param in self.space.evaluation_order:
            if self.space.conditions.is_active(param.name, active):
                active[param.name] = values[param.name]
        return {name: active[name] for name in self.space.names if name in active}

    def add_known(self, assignment: Assignment, value: ObjectiveValue) -> None:
        assert isinstance(value, float | int)  # one objective (checked by BayesianSearch)
        self._known.append((self._point(assignment), self._sign * value))

    def suggest(
        self, numbers: Sequence[int], fixed: Sequence[Assignment | None]
    ) -> list[Assignment]:
        points: dict[int, Point] = {}
        for number, point in zip(numbers, fixed, strict=True):
            if point is not None:
                points[number] = self._point(point)
        free = [number for number in numbers if number not in points]
        if free:
            self._pending.update(points)  # fixed members of the batch are pending too
            for number, point in zip(free, self._ask(numbers[0], len(free)), strict=True):
                # What is told later is the suggestion with its inactive parameters held.
                points[number] = self._point(self._assignment(point))
        self._pending.update(points)
        return [self._assignment(points[number]) for number in numbers]

    def _ask(self, first: int, count: int) -> list[Point]:
        from skopt import Optimizer

        optimizer = Optimizer(
            self._dimensions,
            base_estimator="GP",
            acq_func="gp_hedge",
            n_initial_points=self.n_startup_trials,
            random_state=trial_seed(self.seed, first),
        )
        results = self._known + [self._told[number] for number in sorted(self._told)]
        xs = [point for point, _ in results]
        ys = [value for _, value in results]
        if self._pending:
            lie = min(ys) if ys else 0.0
            xs += [self._pending[number] for number in sorted(self._pending)]
            ys += [lie] * len(self._pending)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if xs:
                optimizer.tell(xs, ys)
            asked = optimizer.ask(n_points=count, strategy="cl_min") if count > 1 \
                else [optimizer.ask()]
        for warning in caught:
            _logger.debug("scikit-optimize: %s", warning.message)
        return [list(point) for point in asked]

    def observe(self, number: int, value: ObjectiveValue | None, state: TrialState,
                constraints: Sequence[float] = ()) -> None:
        point = self._pending.pop(number, None)
        if point is None:
            return
        if (state in (TrialState.COMPLETED, TrialState.PRUNED)
                and isinstance(value, float | int) and math.isfinite(value)):
            self._told[number] = (point, self._sign * value)
