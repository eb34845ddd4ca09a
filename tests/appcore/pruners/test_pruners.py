"""The early-stopping rules' registry, and the rules in the trial loop. What every rule must do is
its contract, ``test_contract.py``."""

from __future__ import annotations

from pathlib import Path
import subprocess
import sys

import pytest

import apprunner_sdk
from disauto.appcore.pruners import PRUNERS
from disauto.appcore.pruners import pruner_class
from disauto.common.errors import UnknownRuleError
from disauto.testing.inprocess import RunningJob
from disauto.testing.inprocess import wait_for


pytestmark = pytest.mark.integration  # starts processes or servers


def test_an_unknown_rule_is_refused_with_the_valid_ones() -> None:
    with pytest.raises(UnknownRuleError) as caught:
        pruner_class("bohb")
    assert str(caught.value) == (
        f"unknown early-stopping rule 'bohb'; valid rules: {', '.join(PRUNERS)}")
    assert {"none", "median", "asha"} <= set(PRUNERS)
    assert pruner_class("") is pruner_class("none")


def test_registry_imports_rules_lazily() -> None:
    code = (
        "import sys, appcore.pruners as p\n"
        "assert 'optuna' not in sys.modules, 'optuna imported eagerly'\n"
        "p.pruner_class('none')\n"
        "assert 'optuna' not in sys.modules, 'no early stopping needs no optuna'\n"
        "p.pruner_class('median')\n"
        "assert 'optuna' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- in the trial loop, against the in-process framework ---------------------------------------


def test_a_pruned_runner_is_told_to_stop_and_its_slot_refills_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = RunningJob(tmp_path, max_trials=4, parallelism=1, early_stopping="median",
                     early_stopping_settings={"n_startup_trials": "1"})
    framework = job.framework
    try:
        job.enter_trial(monkeypatch, 1)
        for step, value in enumerate([0.5, 0.7, 0.9]):
            assert apprunner_sdk.report(accuracy=value, step=step) is False
        assert apprunner_sdk.report(accuracy=0.9, final=True) is False
        framework.end_trial(1, "TASK_FINISHED")
        wait_for(lambda: 2 in framework.states(), what="trial 2")
        framework.launch_trials()

        job.enter_trial(monkeypatch, 2)
        assert apprunner_sdk.report(accuracy=0.6, step=0) is False  # above the median (0.5)
        assert apprunner_sdk.report(accuracy=0.3, step=1) is True  # below it (0.7): stop
        assert apprunner_sdk.should_stop()
        trial = {t.number: t for t in framework.controller.trials()}[2]
        assert trial.state == "PRUNED"
        assert trial.message == "stopped early by the median rule at step 1 (accuracy=0.3)"
        # The slot is free at once: trial 3 waits for an offer while trial 2's task still runs.
        wait_for(lambda: framework.states().get(3) == "PENDING", what="trial 3")
        assert "trial-0002" in framework.controller.tasks.live_task_ids()
        assert job.appcore.loop.counts == (1, 0, 1)
        # A late report of the pruned runner is told to stop too; its exit changes nothing.
        assert apprunner_sdk.report(accuracy=0.31, step=2) is True
        framework.end_trial(2, "TASK_FINISHED")
        assert framework.states()[2] == "PRUNED"
        assert framework.controller.progress().done == 2
    finally:
        job.close()


def test_no_early_stopping_never_stops_a_runner(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = RunningJob(tmp_path, max_trials=2, parallelism=2)
    try:
        job.enter_trial(monkeypatch, 1)
        assert apprunner_sdk.report(accuracy=0.9, step=0) is False
        assert apprunner_sdk.report(accuracy=0.9, final=True) is False
        job.framework.end_trial(1, "TASK_FINISHED")
        job.enter_trial(monkeypatch, 2)
        assert apprunner_sdk.report(accuracy=0.01, step=0) is False
    finally:
        job.close()
