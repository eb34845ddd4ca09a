"""What the Optuna-based rules share: settings passed to Optuna's pruner, reports filtered."""

from __future__ import annotations

import inspect

import pytest

from disauto.appcore.pruners import pruner_class
from tests.appcore.pruners.curves import make
from tests.appcore.pruners.curves import run_trial


@pytest.mark.parametrize("rule", ["median", "asha"])
def test_an_optuna_rules_settings_are_its_optuna_pruners_keyword_arguments(rule: str) -> None:
    cls = pruner_class(rule)
    accepted = set(inspect.signature(cls.OPTUNA_PRUNER).parameters)  # type: ignore[attr-defined]
    assert set(cls.SETTINGS) <= accepted


def test_reports_out_of_order_or_negative_are_ignored() -> None:
    pruner = make("median", {"n_startup_trials": "0"})
    run_trial(pruner, 1, 0.9)
    assert pruner.report(2, 3, 0.1)  # far below the median: prune
    assert not pruner.report(2, 3, 0.1)  # the same step again is ignored
    assert not pruner.report(2, -1, 0.1)
    assert not pruner.report(3, 0, float("nan"))
