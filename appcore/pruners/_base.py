"""The early-stopping interface every rule implements."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from disauto.appcore.algorithms import Direction
from disauto.common.errors import InvalidSettingsError
from disauto.common.setting_values import Configurable
from disauto.common.trial_state import TrialState


__all__ = ["Pruner", "PrunerRecord"]


@dataclass(frozen=True)
class PrunerRecord:
    """One trial as the job store holds it, for :meth:`Pruner.restore`.

    Attributes:
        number: The trial number.
        state: ``TrialState.RUNNING``, or how it ended.
        intermediate: ``(step, value)`` of each intermediate report of the objective, in order.
        value: The final objective of a completed trial, else ``None``.
    """

    number: int
    state: TrialState
    intermediate: Sequence[tuple[int, float]] = field(default_factory=tuple)
    value: float | None = None


class Pruner(Configurable, abc.ABC):
    """Decides from a trial's intermediate values whether to stop it early.

    Call order: construction; :meth:`restore` once if AppCore is restarting; then any
    interleaving of :meth:`report` (a trial's steps in increasing order) and :meth:`finish`
    (once per trial that reported, when it ends).

    Thread safety: not thread-safe; the trial loop calls it under its lock.

    Settings: :data:`SETTINGS` declares every accepted setting (strings); anything else is
    rejected with :class:`~common.errors.InvalidSettingsError` naming the valid ones.

    Args:
        direction: ``"maximize"`` or ``"minimize"`` the objective.
        settings: The rule's settings by name, as strings.

    Raises:
        InvalidSettingsError: If a setting is unknown or invalid.
    """

    KIND = "early-stopping rule"
    SETTINGS_ERROR = InvalidSettingsError

    def __init__(self, *, direction: Direction, settings: Mapping[str, str]) -> None:
        self.direction: Direction = direction
        self.settings: Mapping[str, Any] = self.parse_settings(settings)

    @abc.abstractmethod
    def report(self, trial: int, step: int, value: float) -> bool:
        """Learn trial ``trial``'s objective at ``step``; True if the trial should stop now.

        Args:
            trial: The trial number.
            step: The training step (epoch...), from 0, increasing per trial.
            value: The objective's value at that step.

        Returns:
            Whether to prune the trial.
        """

    @abc.abstractmethod
    def finish(self, trial: int, state: TrialState, value: float | None) -> None:
        """Learn how trial ``trial`` ended (its final objective if completed).

        Args:
            trial: The trial number.
            state: How it ended.
            value: The final objective of a completed trial, else ``None``.
        """

    def restore(self, history: Sequence[PrunerRecord]) -> None:
        """Rebuild the rule's state from the job store after AppCore restarts.

        The default replays every record: its intermediate values through :meth:`report`
        (decisions ignored: they were taken), then :meth:`finish` if it ended.

        Args:
            history: Every trial so far, sorted by number.
        """
        for record in history:
            for step, value in record.intermediate:
                self.report(record.number, step, value)
            if record.state.is_finished():
                self.finish(record.number, record.state, record.value)

    def describe(self) -> str:
        """A short description for messages, e.g. ``"the median rule"``."""
        return f"the {self.NAME} rule"
