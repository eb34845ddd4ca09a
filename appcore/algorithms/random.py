"""Random search (``random-search``): independent draws through Optuna's ``RandomSampler``.

The sampling math is Optuna's: each parameter maps to an Optuna distribution
(:class:`~common.space.RealParam` to ``FloatDistribution(low, high, log, step)``,
:class:`~common.space.IntParam` to ``IntDistribution(low, high, log, step)``,
:class:`~common.space.CategoricalParam` to ``CategoricalDistribution(choices)``) and a
``RandomSampler`` draws the assignment through an in-memory study's trial, define-by-run
(:func:`draw`): parameters are suggested in the space's evaluation order and a conditional one
only where it is active, so an assignment has no key for an inactive parameter.

Reproducibility and restarts: trial ``n``'s assignment depends only on ``(seed, n)``. Each ask
derives a per-trial seed with :func:`~appcore.algorithms._base.trial_seed` (independent, well-mixed
streams) and draws with a fresh ``RandomSampler`` seeded with it in a fresh study. So
:meth:`RandomSearch.ask` is a pure function of the trial number and :meth:`RandomSearch.restore`
has nothing to replay; the cost is one small in-memory study per ask (well under a millisecond).
Draws are independent, so a space with few discrete points can see the same assignment under two
trial numbers, as with any random search.

Types: Optuna's floats come back as ``float`` (values of a stepped range are snapped to the
decimal step points, so ``0.30000000000000004`` reads ``0.3``), its ints as ``int``, and
categorical choices as the very objects of the space.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution
from optuna.samplers import RandomSampler

from disauto.appcore.algorithms._base import Finished
from disauto.appcore.algorithms._base import SearchAlgorithm
from disauto.appcore.algorithms._base import SettingSpec
from disauto.appcore.algorithms._base import TrialRecord
from disauto.appcore.algorithms._base import trial_seed
from disauto.common.space import Assignment
from disauto.common.space import IntParam
from disauto.common.space import Param
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.space import Value


__all__ = ["RandomSearch", "draw", "from_optuna_value", "suggest", "to_optuna_distribution"]


def to_optuna_distribution(param: Param) -> BaseDistribution:
    """Map a parameter to the Optuna distribution with the same values.

    A stepped range's ``high`` is lowered to its last step point, as Optuna would do itself
    (but without Optuna's warning).

    Args:
        param: The parameter.

    Returns:
        The distribution.
    """
    if isinstance(param, RealParam):
        if param.step is None:
            return FloatDistribution(param.low, param.high, log=param.log)
        last = param.step_points()[-1]
        return FloatDistribution(param.low, last, step=param.step)
    if isinstance(param, IntParam):
        last = param.high - (param.high - param.low) % param.step
        return IntDistribution(param.low, last, log=param.log, step=param.step)
    return CategoricalDistribution(param.choices)


def from_optuna_value(param: Param, value: object) -> Value:
    """Map a value Optuna drew for ``param`` back to the space's type (and step grid).

    Args:
        param: The parameter.
        value: Optuna's value for it.

    Returns:
        A ``float`` (snapped to the step grid if any), an ``int``, or the choice itself.
    """
    if isinstance(param, RealParam):
        number = float(value)  # type: ignore[arg-type]
        if param.step is None:
            return number
        points = param.step_points()
        index = round((number - param.low) / param.step)
        return points[min(max(index, 0), len(points) - 1)]
    if isinstance(param, IntParam):
        return int(value)  # type: ignore[call-overload]
    # Return the space's own object: same type and value as the choice Optuna picked.
    return param.choices[param.choices.index(value)]  # type: ignore[arg-type]


def suggest(trial: optuna.Trial, name: str, distribution: BaseDistribution) -> Any:
    """Have ``trial`` suggest ``name`` from ``distribution`` (what ``study.ask``'s fixed
    distributions do, through the public suggest API)."""
    if isinstance(distribution, FloatDistribution):
        return trial.suggest_float(name, distribution.low, distribution.high,
                                   step=distribution.step, log=distribution.log)
    if isinstance(distribution, IntDistribution):
        return trial.suggest_int(name, distribution.low, distribution.high,
                                 step=distribution.step, log=distribution.log)
    assert isinstance(distribution, CategoricalDistribution)
    return trial.suggest_categorical(name, distribution.choices)


def draw(trial: optuna.Trial, space: SearchSpace,
         distributions: Mapping[str, BaseDistribution]) -> Assignment:
    """The assignment ``trial`` suggests, define-by-run: each parameter in the evaluation order,
    a conditional one only where it is active; keys in the file's order."""
    values: Assignment = {}
    for param in space.evaluation_order:
        if space.conditions.is_active(param.name, values):
            values[param.name] = from_optuna_value(
                param, suggest(trial, param.name, distributions[param.name]))
    return {name: values[name] for name in space.names if name in values}


class RandomSearch(SearchAlgorithm):
    """Seeded, reproducible random search (see the module docstring). No settings.

    Needs no feedback (:meth:`tell` is ignored), never answers ``None`` or ``FINISHED``: the
    trial budget ends the job. Thread safety and call order: as
    :class:`~appcore.algorithms.SearchAlgorithm`. Asking the same number twice returns the same
    assignment.
    """

    NAME = "random-search"
    SETTINGS: Mapping[str, SettingSpec] = {}

    def _setup(self) -> None:
        # Optuna logs every create_study at INFO; keep AppCore's log about the search.
        if optuna.logging.get_verbosity() < optuna.logging.WARNING:
            optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._distributions = {param.name: to_optuna_distribution(param)
                               for param in self.space}

    def ask(self, trial_number: int) -> Assignment | None | Finished:
        """Draw trial ``trial_number``'s assignment (a function of the seed and the number only).

        Args:
            trial_number: The trial's number, from 1.

        Returns:
            The assignment.

        Raises:
            ValueError: If ``trial_number`` is not a positive int.
        """
        number = self._check_trial_number(trial_number)
        study = optuna.create_study(
            sampler=RandomSampler(seed=trial_seed(self.seed, number)), direction=self.direction
        )
        return draw(study.ask(), self.space, self._distributions)

    def restore(self, history: Sequence[TrialRecord]) -> None:
        """Nothing to rebuild (draws depend on the seed and number only); logs a changed space.

        Args:
            history: The job store's trials, sorted by number.
        """
        self._check_history_replays(history)
