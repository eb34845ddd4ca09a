"""Early-stopping rule ``median``: Optuna's ``MedianPruner`` (the median stopping rule).

A trial is stopped at a step when its best intermediate value so far is worse than the median
of the completed trials' values at that step (Golovin et al., "Google Vizier", 2017). Settings:

* ``n_startup_trials`` (5): completed trials needed before any trial is stopped;
* ``n_warmup_steps`` (0): steps of each trial never judged;
* ``interval_steps`` (1): judge every this many steps (after the warm-up);
* ``n_min_trials`` (1): completed trials that must have reported the step being judged.
"""

from __future__ import annotations

from collections.abc import Mapping

from optuna.pruners import MedianPruner

from disauto.appcore.pruners._optuna import OptunaPruner
from disauto.common.setting_values import SettingSpec
from disauto.common.setting_values import int_setting


__all__ = ["MedianRule"]


class MedianRule(OptunaPruner):
    """Optuna's median stopping rule (see the module docstring)."""

    NAME = "median"
    OPTUNA_PRUNER = MedianPruner
    SETTINGS: Mapping[str, SettingSpec] = {
        "n_startup_trials": int_setting(5, 0, "completed trials before any is stopped"),
        "n_warmup_steps": int_setting(0, 0, "steps of each trial never judged"),
        "interval_steps": int_setting(1, 1, "judge every this many steps"),
        "n_min_trials": int_setting(1, 1, "completed trials that reported the step judged"),
    }
