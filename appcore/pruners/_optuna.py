"""What the Optuna-based rules share: an in-memory study whose pruner decides.

Each trial of the job that reports becomes one Optuna trial (created on its first report); its
reports are Optuna intermediate values and its end is told to the study (completed ->
``COMPLETE`` with its final value, pruned -> ``PRUNED``, failed and killed -> ``FAIL``), which
is all Optuna's pruners look at.

A rule's settings are named as its Optuna pruner's keyword arguments, so the pruner is built
from the parsed settings as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
import math
from typing import ClassVar

import optuna
from optuna.pruners import BasePruner
from optuna.trial import Trial
from optuna.trial import TrialState as OptunaState

from disauto.appcore.algorithms import Direction
from disauto.appcore.pruners._base import Pruner
from disauto.common.trial_state import TrialState


__all__ = ["STUDY_NAME", "OptunaPruner"]

STUDY_NAME = "disauto-early-stopping"
"""The name of every rule's in-memory study (Optuna's own would be random)."""


def auto_or_positive_int(raw: str) -> str | int:
    """A rung setting: ``auto`` (learnt from the first completed trial) or an integer >= 1.

    Raises:
        ValueError: anything else (the setting's check says what is valid).
    """
    text = raw.strip()
    if text == "auto":
        return text
    value = int(text)
    if value < 1:
        raise ValueError(raw)
    return value


class OptunaPruner(Pruner):
    """A rule that delegates to an Optuna pruner: :attr:`OPTUNA_PRUNER` with the settings."""

    OPTUNA_PRUNER: ClassVar[type[BasePruner]]
    """Optuna's pruner class; :attr:`SETTINGS` names its keyword arguments."""

    def __init__(self, *, direction: Direction, settings: Mapping[str, str]) -> None:
        super().__init__(direction=direction, settings=settings)
        if optuna.logging.get_verbosity() < optuna.logging.WARNING:
            optuna.logging.set_verbosity(optuna.logging.WARNING)
        # A fixed name: Hyperband picks a trial's bracket by hashing it with the trial's number.
        self._study = optuna.create_study(study_name=STUDY_NAME, direction=direction,
                                          pruner=self.OPTUNA_PRUNER(**self.settings))
        self._trials: dict[int, Trial] = {}
        self._last_step: dict[int, int] = {}

    def report(self, trial: int, step: int, value: float) -> bool:
        if step < 0 or not math.isfinite(value) or step <= self._last_step.get(trial, -1):
            return False  # Optuna's steps start at 0 and each is reported once
        optuna_trial = self._trials.get(trial)
        if optuna_trial is None:
            optuna_trial = self._trials[trial] = self._study.ask()
        self._last_step[trial] = step
        optuna_trial.report(value, step)
        return bool(optuna_trial.should_prune())

    def finish(self, trial: int, state: TrialState, value: float | None) -> None:
        optuna_trial = self._trials.pop(trial, None)
        self._last_step.pop(trial, None)
        if optuna_trial is None:
            return
        if state == TrialState.COMPLETED and value is not None and math.isfinite(value):
            self._study.tell(optuna_trial, value)
        elif state == TrialState.PRUNED:
            self._study.tell(optuna_trial, state=OptunaState.PRUNED)
        else:
            self._study.tell(optuna_trial, state=OptunaState.FAIL)
