"""Learning curves fed to a rule as a runner would, for the rules' tests."""

from __future__ import annotations

from collections.abc import Mapping

from disauto.appcore.pruners import Pruner
from disauto.appcore.pruners import create_pruner
from disauto.common.trial_state import TrialState


def curve(final: float, steps: int = 9) -> list[tuple[int, float]]:
    """A learning curve rising towards ``final``."""
    return [(step, final * (1 - 0.5 ** (step + 1))) for step in range(steps)]


def run_trial(pruner: Pruner, number: int, final: float, steps: int = 9) -> int | None:
    """Report the curve until pruned; the step it was pruned at, or None if it completed."""
    for step, value in curve(final, steps):
        if pruner.report(number, step, value):
            pruner.finish(number, TrialState.PRUNED, value)
            return step
    pruner.finish(number, TrialState.COMPLETED, final)
    return None


def make(name: str, settings: Mapping[str, str] | None = None,
         direction: str = "maximize") -> Pruner:
    """The rule ``name`` with ``settings``, for an objective maximized unless ``direction``."""
    return create_pruner(name, direction=direction, settings=settings or {})
