"""Early-stopping rule ``none`` (the default): never stops a trial."""

from __future__ import annotations

from appcore.algorithms._base import TrialOutcome
from appcore.pruners._base import Pruner


__all__ = ["NoPruner"]


class NoPruner(Pruner):
    """Never prunes. No settings."""

    NAME = "none"

    def report(self, trial: int, step: int, value: float) -> bool:
        return False

    def finish(self, trial: int, state: TrialOutcome, value: float | None) -> None:
        pass
