"""Early-stopping rule ``hyperband``: Optuna's ``HyperbandPruner`` (Li et al., "Hyperband: A Novel
Bandit-Based Approach to Hyperparameter Optimization", JMLR 2018).

Trials are spread over brackets; each bracket is an asynchronous successive halving with its own
first rung (``min_early_stopping_rate`` 0, 1, ...), so some brackets stop trials early and
aggressively and others give every trial more steps before judging it -- Hyperband's hedge over
how early a curve says something. Which bracket a trial joins is Optuna's hash of the study's
name and the trial's number in it (the study here has one fixed name, so it is the same after
AppCore restarts). Settings, named as Optuna's:

* ``min_resource`` (1): the first rung's step of the most aggressive bracket;
* ``max_resource`` (``auto``): the most steps a trial reports; ``auto`` takes it from the first
  completed trial (nothing is stopped before one completes);
* ``reduction_factor`` (3): keep the top 1/3 at each rung, and the bracket count
  ``floor(log_3(max_resource / min_resource)) + 1``;
* ``bootstrap_count`` (0): trials that must reach a rung before it stops any (needs an explicit
  ``max_resource``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optuna.pruners import HyperbandPruner

from disauto.appcore.pruners._optuna import OptunaPruner
from disauto.appcore.pruners._optuna import auto_or_positive_int
from disauto.common.errors import InvalidSettingsError
from disauto.common.setting_values import SettingSpec
from disauto.common.setting_values import int_setting


__all__ = ["Hyperband"]


class Hyperband(OptunaPruner):
    """Optuna's Hyperband (see the module docstring)."""

    NAME = "hyperband"
    OPTUNA_PRUNER = HyperbandPruner
    SETTINGS: Mapping[str, SettingSpec] = {
        "min_resource": int_setting(1, 1, "the first rung's step of the most aggressive bracket"),
        "max_resource": SettingSpec("auto", auto_or_positive_int, "'auto' or an integer >= 1",
                                    "the most steps a trial reports"),
        "reduction_factor": int_setting(3, 2, "keep the top 1/reduction_factor at each rung"),
        "bootstrap_count": int_setting(0, 0, "trials at a rung before it stops any"),
    }

    @classmethod
    def _check_settings(cls, settings: Mapping[str, Any]) -> None:
        top = settings["max_resource"]
        if settings["bootstrap_count"] > 0 and top == "auto":
            raise InvalidSettingsError(
                "early-stopping rule 'hyperband': bootstrap_count > 0 needs an explicit "
                "max_resource (an integer >= 1), not 'auto'")
        if top != "auto" and top < settings["min_resource"]:
            raise InvalidSettingsError(
                f"early-stopping rule 'hyperband': max_resource ({top}) must be at least "
                f"min_resource ({settings['min_resource']})")

    def describe(self) -> str:
        return "Hyperband"
