"""Early-stopping rule ``none`` (the default): never stops a trial."""

from __future__ import annotations

from disauto.appcore.pruners._base import Pruner
from disauto.common.trial_state import TrialState


__all__ = ["NoPruner"]


class NoPruner(Pruner):
    """Never prunes. No settings."""

    NAME = "none"

    def report(self, trial: int, step: int, value: float) -> bool:
        return False

    def finish(self, trial: int, state: TrialState, value: float | None) -> None:
        pass
