"""The early-stopping rules: registry, settings, decisions on real curves, restore."""

from __future__ import annotations

from collections.abc import Mapping
import inspect
from pathlib import Path
import subprocess
import sys

import pytest

import apprunner_sdk
from disauto.appcore.pruners import PRUNERS
from disauto.appcore.pruners import Pruner
from disauto.appcore.pruners import PrunerRecord
from disauto.appcore.pruners import create_pruner
from disauto.appcore.pruners import pruner_class
from disauto.common.errors import InvalidSettingsError
from disauto.common.errors import UnknownRuleError
from disauto.common.trial_state import TrialState
from tests.inprocess import RunningJob
from tests.inprocess import wait_for


pytestmark = pytest.mark.integration  # starts processes or servers


def _curve(final: float, steps: int = 9) -> list[tuple[int, float]]:
    """A learning curve rising towards ``final``."""
    return [(step, final * (1 - 0.5 ** (step + 1))) for step in range(steps)]


def _run_trial(pruner: Pruner, number: int, final: float, steps: int = 9) -> int | None:
    """Report the curve until pruned; the step it was pruned at, or None if it completed."""
    for step, value in _curve(final, steps):
        if pruner.report(number, step, value):
            pruner.finish(number, TrialState.PRUNED, value)
            return step
    pruner.finish(number, TrialState.COMPLETED, final)
    return None


@pytest.fixture(params=sorted(PRUNERS))
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _make(name: str, settings: Mapping[str, str] | None = None,
          direction: str = "maximize") -> Pruner:
    return create_pruner(name, direction=direction, settings=settings or {})


def test_registry_names_match_classes(name: str) -> None:
    assert pruner_class(name).NAME == name
    assert pruner_class("") is pruner_class("none")


def test_unknown_rules_and_settings_are_rejected_with_the_valid_ones(name: str) -> None:
    with pytest.raises(UnknownRuleError) as caught:
        pruner_class("hyperband")
    assert str(caught.value) == (
        "unknown early-stopping rule 'hyperband'; valid rules: none, median, asha")
    cls = pruner_class(name)
    valid = ", ".join(sorted(cls.SETTINGS)) or "none"
    with pytest.raises(InvalidSettingsError) as caught_setting:
        _make(name, {"bogus": "1"})
    assert str(caught_setting.value) == (
        f"unknown setting 'bogus' for early-stopping rule '{name}'; valid settings: {valid}")
    for setting, spec in cls.SETTINGS.items():
        with pytest.raises(InvalidSettingsError, match=f"must be {spec.valid}, got '-7'"):
            _make(name, {setting: "-7"})


@pytest.mark.parametrize("rule", ["median", "asha"])
def test_an_optuna_rules_settings_are_its_optuna_pruners_keyword_arguments(rule: str) -> None:
    cls = pruner_class(rule)
    accepted = set(inspect.signature(cls.OPTUNA_PRUNER).parameters)  # type: ignore[attr-defined]
    assert set(cls.SETTINGS) <= accepted


def test_asha_bootstrap_needs_an_explicit_min_resource() -> None:
    with pytest.raises(InvalidSettingsError, match="bootstrap_count > 0 needs an explicit"):
        _make("asha", {"bootstrap_count": "2"})
    _make("asha", {"bootstrap_count": "2", "min_resource": "1"})


def test_none_never_prunes() -> None:
    pruner = _make("none")
    assert [_run_trial(pruner, n, final) for n, final in enumerate([0.9, 0.1, 0.05], 1)] == [
        None, None, None]


@pytest.mark.parametrize("direction", ["maximize", "minimize"])
def test_median_stops_a_trial_below_the_median_of_completed_ones(direction: str) -> None:
    sign = 1.0 if direction == "maximize" else -1.0
    pruner = _make("median", {"n_startup_trials": "3"}, direction)
    for number, final in enumerate([0.8, 0.9, 0.85], start=1):
        assert _run_trial(pruner, number, sign * final) is None
    assert _run_trial(pruner, 4, sign * 0.95) is None  # better: runs to the end
    assert _run_trial(pruner, 5, sign * 0.3) == 0  # worse: stopped at its first step


def test_median_respects_startup_and_warmup() -> None:
    pruner = _make("median", {"n_startup_trials": "2", "n_warmup_steps": "4"})
    assert _run_trial(pruner, 1, 0.9) is None
    assert _run_trial(pruner, 2, 0.1) is None  # only one completed trial before it
    assert _run_trial(pruner, 3, 0.2) == 4  # judged only after the warm-up


def test_asha_stops_at_rungs_and_keeps_the_top_share() -> None:
    pruner = _make("asha", {"min_resource": "1", "reduction_factor": "3"})
    # The first trial at a rung has nobody to lose against.
    assert _run_trial(pruner, 1, 0.9) is None
    pruned = [_run_trial(pruner, n, final) for n, final in enumerate([0.2, 0.3, 0.1], 2)]
    assert pruned and all(step in (1, 3) for step in pruned), pruned  # rungs at steps 1, 3, 9
    assert _run_trial(pruner, 5, 0.95) is None


def test_reports_out_of_order_or_negative_are_ignored() -> None:
    pruner = _make("median", {"n_startup_trials": "0"})
    _run_trial(pruner, 1, 0.9)
    assert pruner.report(2, 3, 0.1)  # far below the median: prune
    assert not pruner.report(2, 3, 0.1)  # the same step again is ignored
    assert not pruner.report(2, -1, 0.1)
    assert not pruner.report(3, 0, float("nan"))


def test_restore_rebuilds_the_decisions(name: str) -> None:
    settings = {"none": {}, "median": {"n_startup_trials": "2"},
                "asha": {"min_resource": "1"}}[name]
    original = _make(name, settings)
    history = []
    for number, final in enumerate([0.9, 0.7, 0.8], start=1):
        stopped = _run_trial(original, number, final)
        curve = _curve(final)[: None if stopped is None else stopped + 1]
        state = TrialState.COMPLETED if stopped is None else TrialState.PRUNED
        history.append(PrunerRecord(number, state, tuple(curve),
                                    final if stopped is None else None))
    # Trial 4 was running with two reports when AppCore restarted.
    running = _curve(0.2)[:2]
    for step, value in running:
        original.report(4, step, value)
    history.append(PrunerRecord(4, TrialState.RUNNING, tuple(running)))

    restored = _make(name, settings)
    restored.restore(history)
    for step, value in _curve(0.2)[2:]:
        decision = original.report(4, step, value)
        assert restored.report(4, step, value) == decision
        if decision:
            break
    assert _run_trial(original, 5, 0.3) == _run_trial(restored, 5, 0.3)


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
        assert "trial-0002" in framework.controller.live_task_ids()
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
