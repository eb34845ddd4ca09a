"""What every Optuna-sampler backend shares: one in-memory study driven by ask-and-tell.

Each trial of the job is one Optuna trial, created in trial-number order (warm-start results
first, through ``add_trial``), so the study a restarted AppCore rebuilds by replaying the job
store is the study the original had. Parameters map through
:func:`~appcore.algorithms.random.to_optuna_distribution` and back through
:func:`~appcore.algorithms.random.from_optuna_value`, so log scales, integers, steps and
categorical choices keep their meaning; a trial suggests them define-by-run
(:func:`~appcore.algorithms.random.draw`), so a conditional parameter is suggested only where it
is active and the sampler sees the conditional space as Optuna's own define-by-run code would.

Outcomes map to Optuna's states: completed -> ``COMPLETE`` with its value (one per objective in
a search of several: the study then has one direction per objective) and, for a sampler that
uses them (TPE, NSGA-II), its constraints set with ``Trial.set_constraint`` (Optuna treats a
trial with a constraint above 0 as infeasible); pruned -> ``PRUNED`` with its last value
reported as the intermediate value of step 0 (so TPE ranks it among pruned trials); failed and
killed -> ``FAIL``.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any
from typing import ClassVar
import warnings

import optuna
from optuna.samplers import BaseSampler
from optuna.trial import Trial
from optuna.trial import TrialState as OptunaState

from disauto.appcore.algorithms._backend import Backend
from disauto.appcore.algorithms._base import Directions
from disauto.appcore.algorithms._base import ObjectiveValue
from disauto.appcore.algorithms.random import draw
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

    REPLAY_SAMPLES: ClassVar[bool] = False
    """True for a sampler that keeps per-trial state in the study when it samples (a genetic
    algorithm's generation, CMA-ES's distribution): a replayed trial, whose recorded values are
    fixed, still lets the sampler sample once so that state is there for the trials after it."""

    USES_CONSTRAINTS: ClassVar[bool] = False
    """True for a sampler that uses reported constraints (they are set on its trials)."""

    def __init__(
        self, space: SearchSpace, *, seed: int, direction: Directions, n_startup_trials: int
    ) -> None:
        super().__init__(space, seed=seed, direction=direction,
                         n_startup_trials=n_startup_trials)
        # Optuna logs every study and trial at INFO; AppCore logs the search itself.
        if optuna.logging.get_verbosity() < optuna.logging.WARNING:
            optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._distributions = {param.name: to_optuna_distribution(param) for param in space}
        self._study = self._new_study(self._sampler_for(0))
        self._trials: dict[int, Trial] = {}

    def _new_study(self, sampler: BaseSampler) -> optuna.Study:
        """An in-memory study with the search's directions."""
        if len(self.directions) == 1:
            return optuna.create_study(direction=self.direction, sampler=sampler)
        return optuna.create_study(directions=list(self.directions), sampler=sampler)

    @abc.abstractmethod
    def _sampler_for(self, number: int) -> BaseSampler:
        """The sampler that suggests trial ``number`` (0: the study's initial sampler)."""

    def _prepare(self, number: int) -> None:
        """Hook run before trial ``number`` is created (a restarting backend may start a new
        study here); the default does nothing."""

    def _params(self, assignment: Assignment) -> dict[str, Any]:
        """Optuna's values for an assignment, exactly as its samplers store them.

        A stepped real is kept by Optuna as ``k * step + low`` in binary floating point
        (``0.30000000000000004``) where the assignment has the decimal grid point (``0.3``);
        replaying the decimal one would feed the model a slightly different study.
        """
        params: dict[str, Any] = {}
        for param in self.space:
            if param.name not in assignment:  # an inactive conditional parameter
                continue
            value = assignment[param.name]
            if isinstance(param, RealParam) and param.step is not None:
                steps = round((float(value) - param.low) / param.step)
                last = param.step_points()[-1]  # the distribution's high (Optuna clips to it)
                value = min(max(float(steps * param.step + param.low), param.low), last)
            params[param.name] = value
        return params

    def add_known(self, assignment: Assignment, value: ObjectiveValue) -> None:
        params = self._params(assignment)
        values = list(value) if isinstance(value, tuple) else [value]
        self._study.add_trial(optuna.trial.create_trial(
            params=params, distributions={name: self._distributions[name] for name in params},
            values=values,
        ))

    def _ask(self, number: int, fixed: Assignment | None, *, replay: bool = False) -> Assignment:
        self._prepare(number)
        if fixed is not None:
            self._study.enqueue_trial(self._params(fixed))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            self._study.sampler = self._sampler_for(number)
        trial = self._study.ask()
        self._trials[number] = trial
        if replay and self.REPLAY_SAMPLES:
            _ = trial.relative_params  # the sampler's per-trial bookkeeping, as when it drew
        drawn = draw(trial, self.space, self._distributions)
        return dict(fixed) if fixed is not None else drawn

    def suggest(
        self, numbers: Sequence[int], fixed: Sequence[Assignment | None]
    ) -> list[Assignment]:
        return [self._ask(number, point) for number, point in zip(numbers, fixed, strict=True)]

    def replay(self, number: int, assignment: Assignment) -> Assignment:
        self._ask(number, assignment, replay=True)
        return assignment

    def observe(self, number: int, value: ObjectiveValue | None, state: TrialState,
                constraints: Sequence[float] = ()) -> None:
        trial = self._trials.pop(number, None)
        if trial is None:
            return
        study = trial.study  # a restarting backend may have moved on to another study
        if state == TrialState.COMPLETED and value is not None:
            for index, constraint in enumerate(constraints if self.USES_CONSTRAINTS else ()):
                trial.set_constraint(str(index), constraint)
            study.tell(trial, list(value) if isinstance(value, tuple) else value)
        elif state == TrialState.PRUNED:
            if isinstance(value, float) and len(self.directions) == 1:
                trial.report(value, step=0)
            study.tell(trial, state=OptunaState.PRUNED)
        else:
            study.tell(trial, state=OptunaState.FAIL)
