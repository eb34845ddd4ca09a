"""Early-stopping rule ``asha``: Optuna's ``SuccessiveHalvingPruner`` (asynchronous successive
halving, Li et al., "A System for Massively Parallel Hyperparameter Tuning", MLSys 2020).

Rungs sit at steps ``min_resource * reduction_factor ** (min_early_stopping_rate + k)``. A trial
reaching a rung is stopped unless its value there is in the top ``1 / reduction_factor`` of
all trials that reached that rung so far -- decided at once, without waiting for a full bracket,
which is what makes it asynchronous. Settings:

* ``min_resource`` (``auto``): the first rung's step; ``auto`` estimates it from the first
  completed trial's number of steps (nothing is stopped before a trial completes);
* ``reduction_factor`` (3): keep the top 1/3 at each rung;
* ``min_early_stopping_rate`` (0): skip this many rungs;
* ``bootstrap_count`` (0): trials that must reach a rung before it stops any (needs an explicit
  ``min_resource``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optuna.pruners import SuccessiveHalvingPruner

from disauto.appcore.pruners._optuna import OptunaPruner
from disauto.appcore.pruners._optuna import auto_or_positive_int
from disauto.common.errors import InvalidSettingsError
from disauto.common.setting_values import SettingSpec
from disauto.common.setting_values import int_setting


__all__ = ["AsynchronousSuccessiveHalving"]


class AsynchronousSuccessiveHalving(OptunaPruner):
    """Optuna's asynchronous successive halving (see the module docstring)."""

    NAME = "asha"
    OPTUNA_PRUNER = SuccessiveHalvingPruner
    SETTINGS: Mapping[str, SettingSpec] = {
        "min_resource": SettingSpec("auto", auto_or_positive_int, "'auto' or an integer >= 1",
                                    "the first rung's step"),
        "reduction_factor": int_setting(3, 2, "keep the top 1/reduction_factor at each rung"),
        "min_early_stopping_rate": int_setting(0, 0, "rungs skipped"),
        "bootstrap_count": int_setting(0, 0, "trials at a rung before it stops any"),
    }

    @classmethod
    def _check_settings(cls, settings: Mapping[str, Any]) -> None:
        if settings["bootstrap_count"] > 0 and settings["min_resource"] == "auto":
            raise InvalidSettingsError(
                "early-stopping rule 'asha': bootstrap_count > 0 needs an explicit "
                "min_resource (an integer >= 1), not 'auto'"
            )

    def describe(self) -> str:
        return "asynchronous successive halving"
