"""What every Optuna-sampler backend shares: one in-memory study driven by ask-and-tell.

Each trial of the job is one Optuna trial, created in trial-number order (warm-start results
first, through ``add_trial``), so the study a restarted AppCore rebuilds by replaying the job
store is the study the original had. Parameters map through
:func:`~appcore.algorithms.random.to_optuna_distribution` and back through
:func:`~appcore.algorithms.random.from_optuna_value`, so log scales, integers, steps and
categorical choices keep their meaning. Outcomes map to Optuna's states: completed ->
``COMPLETE``; pruned -> ``PRUNED`` with its last value reported as the intermediate value of
step 0 (so TPE ranks it among pruned trials); failed and killed -> ``FAIL``.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any
import warnings

import optuna
from optuna.samplers import BaseSampler
from optuna.trial import Trial
from optuna.trial import TrialState as OptunaState

from disauto.appcore.algorithms._backend import Backend
from disauto.appcore.algorithms._base import Direction
from disauto.appcore.algorithms.random import from_optuna_value
from disauto.appcore.algorithms.random import to_optuna_distribution
from disauto.common.space import Assignment
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.trial_state import TrialState


__all__ = ["OptunaBackend"]


class OptunaBackend(Backend):
    """A backend over an Optuna sampler; subclasses say which sampler (see the module doc).

    Subclasses implement :meth:`_sampler_for`, called before each ask with the trial's number.
    """

    def __init__(
        self, space: SearchSpace, *, seed: int, direction: Direction, n_startup_trials: int
    ) -> None:
        super().__init__(space, seed=seed, direction=direction,
                         n_startup_trials=n_startup_trials)
        # Optuna logs every study and trial at INFO; AppCore logs the search itself.
        if optuna.logging.get_verbosity() < optuna.logging.WARNING:
            optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._distributions = {param.name: to_optuna_distribution(param) for param in space}
        self._study = optuna.create_study(direction=direction, sampler=self._sampler_for(0))
        self._trials: dict[int, Trial] = {}

    @abc.abstractmethod
    def _sampler_for(self, number: int) -> BaseSampler:
        """The sampler that suggests trial ``number`` (0: the study's initial sampler)."""

    def _params(self, assignment: Assignment) -> dict[str, Any]:
        """Optuna's values for an assignment, exactly as its samplers store them.

        A stepped real is kept by Optuna as ``k * step + low`` in binary floating point
        (``0.30000000000000004``) where the assignment has the decimal grid point (``0.3``);
        replaying the decimal one would feed the model a slightly different study.
        """
        params: dict[str, Any] = {}
        for param in self.space:
            value = assignment[param.name]
            if isinstance(param, RealParam) and param.step is not None:
                steps = round((float(value) - param.low) / param.step)
                last = param.step_points()[-1]  # the distribution's high (Optuna clips to it)
                value = min(max(float(steps * param.step + param.low), param.low), last)
            params[param.name] = value
        return params

    def add_known(self, assignment: Assignment, value: float) -> None:
        self._study.add_trial(optuna.trial.create_trial(
            params=self._params(assignment), distributions=self._distributions, value=value,
        ))

    def _ask(self, number: int, fixed: Assignment | None) -> Assignment:
        if fixed is not None:
            self._study.enqueue_trial(self._params(fixed))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            self._study.sampler = self._sampler_for(number)
        trial = self._study.ask(self._distributions)
        self._trials[number] = trial
        if fixed is not None:
            return dict(fixed)
        return {param.name: from_optuna_value(param, trial.params[param.name])
                for param in self.space}

    def suggest(
        self, numbers: Sequence[int], fixed: Sequence[Assignment | None]
    ) -> list[Assignment]:
        return [self._ask(number, point) for number, point in zip(numbers, fixed, strict=True)]

    def observe(self, number: int, value: float | None, state: TrialState) -> None:
        trial = self._trials.pop(number, None)
        if trial is None:
            return
        if state == TrialState.COMPLETED and value is not None:
            self._study.tell(trial, value)
        elif state == TrialState.PRUNED:
            if value is not None:
                trial.report(value, step=0)
            self._study.tell(trial, state=OptunaState.PRUNED)
        else:
            self._study.tell(trial, state=OptunaState.FAIL)
