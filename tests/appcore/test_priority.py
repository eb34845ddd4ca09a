"""Algorithm 1 (appcore/priority.py) on constructed result sequences, and in AppCore's loop."""

from __future__ import annotations

from collections.abc import Sequence
import math
from pathlib import Path

import pytest

from disauto.appcore.priority import SETTINGS
from disauto.appcore.priority import ConvergencePriority
from disauto.appcore.priority import FixedPriority
from disauto.appcore.priority import PrioritySettings
from disauto.appcore.priority import parse_priority_settings
from disauto.appcore.priority import priority_for
from disauto.common.errors import InvalidSettingsError
from disauto.common.report import Report
from disauto.protos import framework_pb2
from disauto.testing.inprocess import AppCore
from disauto.testing.inprocess import Framework
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import wait_for


pytestmark = pytest.mark.integration  # starts processes or servers


SMALL = PrioritySettings(k=2, m=3, thresholds=(0.01, 0.005), tolerance=0.1)


def feed(tracker: ConvergencePriority, values: Sequence[float]) -> list[int]:
    """Tell every value; the priority after each."""
    out = []
    for value in values:
        tracker.tell(value)
        out.append(tracker.priority)
    return out


def test_nothing_is_evaluated_until_more_than_k_times_m_results() -> None:
    tracker = ConvergencePriority(SMALL)
    # Six identical results (k*m = 6) would have g = 0 < G, but n > k*m is not yet true.
    assert feed(tracker, [0.9] * 6) == [0] * 6
    assert tracker.evaluations == []
    evaluation = tracker.tell(0.9)
    assert evaluation is not None and evaluation.results == 7
    assert evaluation.gap == 0.0 and evaluation.lowered and tracker.priority == 1


def test_the_gap_is_the_smallest_among_the_best_m_only() -> None:
    tracker = ConvergencePriority(SMALL)
    # Best three: 0.99, 0.95, 0.90 (gaps 0.04, 0.05); the close pair 0.50/0.5001 is not in them.
    evaluation = None
    for value in [0.5, 0.5001, 0.99, 0.3, 0.95, 0.2, 0.90]:
        evaluation = tracker.tell(value)
    assert evaluation is not None
    assert evaluation.gap == pytest.approx(0.04)
    assert evaluation.mean_gap is None  # the first evaluation has no g'
    assert evaluation.threshold == 0.01
    assert not evaluation.lowered and tracker.priority == 0


def test_a_gap_below_the_threshold_lowers_the_priority_and_moves_to_the_next_threshold() -> None:
    tracker = ConvergencePriority(SMALL)
    feed(tracker, [0.5, 0.6, 0.99, 0.3, 0.95, 0.2, 0.90])  # g = 0.04: stays at 0
    # 0.97 makes the best three 0.99, 0.97, 0.95: g = 0.02, g' = 0.04 -> not within 10 %.
    first = tracker.tell(0.97)
    assert first is not None and not first.lowered and first.gap == pytest.approx(0.02)
    # 0.985: best three 0.99, 0.985, 0.97 -> g = 0.005 < G_0 = 0.01: P = 1, G becomes 0.005.
    second = tracker.tell(0.985)
    assert second is not None and second.lowered and second.threshold == 0.01
    assert tracker.priority == 1 and tracker.threshold == 0.005


def test_a_gap_close_to_the_mean_of_earlier_gaps_lowers_the_priority() -> None:
    settings = PrioritySettings(k=1, m=2, thresholds=(0.001, 0.001, 0.001), tolerance=0.1)
    tracker = ConvergencePriority(settings)
    # Best two stay 0.98 and 0.96 (g = 0.02 >= G) while worse results arrive.
    tracker.tell(0.98)
    tracker.tell(0.96)
    first = tracker.tell(0.5)  # n = 3 > 2: g = 0.02, no g' yet
    assert first is not None and not first.lowered
    second = tracker.tell(0.4)  # g = 0.02 again, g' = 0.02: g ≈ g'
    assert second is not None and second.mean_gap == pytest.approx(0.02)
    assert second.lowered and tracker.priority == 1
    # A new best reopens the gap: 0.99/0.98 -> g = 0.01, g' = 0.02: not close, not below G.
    third = tracker.tell(0.99)
    assert third is not None and not third.lowered and tracker.priority == 1


def test_the_tolerance_decides_what_is_close() -> None:
    values = [0.98, 0.96, 0.5, 0.1]  # g = 0.02 then 0.02 (exactly g')
    strict = ConvergencePriority(PrioritySettings(k=1, m=2, thresholds=(1e-6,), tolerance=0.0))
    assert feed(strict, values)[-1] == 1  # |g - g'| = 0 <= 0
    strict = ConvergencePriority(PrioritySettings(k=1, m=2, thresholds=(1e-6,), tolerance=0.0))
    assert feed(strict, [0.98, 0.96, 0.5, 0.9701])[-1] == 0  # g = 0.0099 vs g' = 0.02


def test_the_threshold_sequence_bounds_the_lowest_priority() -> None:
    tracker = ConvergencePriority(SMALL)  # two thresholds
    priorities = feed(tracker, [0.9] * 20)
    assert priorities[6:9] == [1, 2, 2]
    assert tracker.priority == SMALL.lowest == 2 and tracker.threshold is None
    assert not tracker.evaluations[-1].lowered
    assert math.isnan(tracker.evaluations[-1].threshold)


def test_minimize_sorts_the_smallest_values_first() -> None:
    tracker = ConvergencePriority(PrioritySettings(k=1, m=2, thresholds=(0.01,)), maximize=False)
    # Best two by loss: 0.100 and 0.105 (g = 0.005 < 0.01); the largest values are far apart.
    feed(tracker, [5.0, 0.100])
    evaluation = tracker.tell(0.105)
    assert evaluation is not None and evaluation.gap == pytest.approx(0.005)
    assert tracker.priority == 1
    maximize = ConvergencePriority(PrioritySettings(k=1, m=2, thresholds=(0.01,)))
    feed(maximize, [5.0, 0.100, 0.105])  # best two by value: 5.0 and 0.105
    assert maximize.priority == 0


def test_non_finite_values_are_ignored() -> None:
    tracker = ConvergencePriority(SMALL)
    assert tracker.tell(math.nan) is None and tracker.tell(math.inf) is None
    assert feed(tracker, [0.9] * 6) == [0] * 6  # still not more than k*m results


def test_settings_parse_with_defaults_and_one_line_errors() -> None:
    assert parse_priority_settings({}) == PrioritySettings()
    assert {name: spec.default for name, spec in SETTINGS.items()} == {
        "k": "2", "m": "5", "thresholds": "0.01,0.005,0.0025", "tolerance": "0.1"}
    parsed = parse_priority_settings({"k": "3", "m": "4", "thresholds": "0.02, 0.01",
                                      "tolerance": "0", "declines_per_level": "9"})
    assert parsed == PrioritySettings(k=3, m=4, thresholds=(0.02, 0.01), tolerance=0.0)
    for name, value, valid in [("k", "0", "an integer >= 1"), ("m", "1", "an integer >= 2"),
                               ("m", "two", "an integer >= 2"),
                               ("thresholds", "0.1,-1", "comma-separated numbers > 0"),
                               ("thresholds", "", "comma-separated numbers > 0"),
                               ("tolerance", "nan", "a number >= 0")]:
        with pytest.raises(InvalidSettingsError,
                           match=rf"setting '{name}' for the dynamic priority strategy must be "
                                 rf"{valid}(, e.g. [\d.,]+)?, got '{value}'"):
            parse_priority_settings({name: value})


def test_priority_for_is_fixed_when_off_and_replays_history_when_on() -> None:
    off = priority_for(False, {"k": "1"}, maximize=True, history=[0.9] * 30)
    assert isinstance(off, FixedPriority) and off.priority == 0 and off.tell(0.5) is None
    on = priority_for(True, {"k": "1", "m": "2", "thresholds": "0.01,0.01"}, maximize=True,
                      history=[0.9, 0.9, 0.9])
    assert isinstance(on, ConvergencePriority) and on.priority == 1


def _complete_next(framework: Framework, appcore: AppCore, value: float) -> int:
    """Launch the pending trial, let its runner report ``value`` and finish; its number."""
    wait_for(lambda: framework.controller.launch_requests(), what="a pending trial")
    (number,) = framework.launch_trials()
    assert appcore.loop.report(Report(number, {"accuracy": value}, None, True, 1.0)) is False
    framework.end_trial(number, "TASK_FINISHED")
    return number


def _framework_with_algorithm_1(tmp_path: Path) -> Framework:
    """A framework whose job runs Algorithm 1 (k=1, m=2, two thresholds of 0.01), AppCore
    launched: its priority drops once the best two of three results are within 0.01."""
    config = job_config(max_trials=8, parallelism=1)
    config.search.dynamic_priority = True
    config.search.priority_settings.update({"k": "1", "m": "2", "thresholds": "0.01,0.01"})
    framework = Framework(tmp_path, config)
    framework.launch_appcore()
    return framework


def test_appcore_submits_each_trial_with_the_priority_algorithm_1_holds(tmp_path: Path) -> None:
    framework = _framework_with_algorithm_1(tmp_path)
    appcore = AppCore(framework.address).run()
    try:
        # Results 0.90, 0.95, 0.951: after the third (n = 3 > k*m = 2) g = 0.001 < 0.01.
        for value in (0.90, 0.95, 0.951, 0.2, 0.952):
            _complete_next(framework, appcore, value)
        wait_for(lambda: len(framework.controller.trials()) == 6, what="trial 6")
        priorities = {t.number: t.priority for t in framework.controller.trials()}
        # Trials 1-3 were submitted before the third result; trial 4 after it (P = 1); trial 5
        # after 0.2 (g = 0.001 again: P = 2); trial 6 after 0.952 (no threshold left: still 2).
        assert priorities == {1: 0, 2: 0, 3: 0, 4: 1, 5: 2, 6: 2}
        assert framework.store.trial(4) is not None and framework.store.trial(4).priority == 1
    finally:
        framework.controller.finish(framework_pb2.STOPPED, "test teardown")
        appcore.close()
        framework.close()


def test_a_relaunched_appcore_resumes_at_the_recorded_priority(tmp_path: Path) -> None:
    framework = _framework_with_algorithm_1(tmp_path)
    first = AppCore(framework.address).run()
    try:
        for value in (0.90, 0.95, 0.951):
            _complete_next(framework, first, value)
        wait_for(lambda: len(framework.controller.trials()) == 4, what="trial 4")
        first.crash()
        framework.controller.on_status(
            {"task_id": {"value": "appcore-1"}, "state": "TASK_FAILED", "message": "killed"})
        framework.launch_appcore()
        second = AppCore(framework.address, serve=False)  # as `python -m disauto.appcore` does
        assert second.loop.priority.priority == 1
        second.client.close()
    finally:
        framework.controller.finish(framework_pb2.STOPPED, "test teardown")
        first.close()
        framework.close()
