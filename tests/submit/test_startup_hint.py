"""The end-of-job hint when starting trials takes longer than running them in task mode
(``submit/startup_hint.py``): the figures it compares, when it speaks and the flag it names."""

from __future__ import annotations

from dataclasses import replace

import pytest

from disauto.common.trial_state import TrialState
from disauto.framework._store import TrialRow
from disauto.submit.startup_hint import startup_and_run
from disauto.submit.startup_hint import startup_hint
from disauto.testing.inprocess import job_config


TASK = replace(job_config(), slot_mode="task", docker_image="disauto/apprunner:1")
"""Task mode by default: a trial image."""


def _trials(start: float, run: float, count: int = 4) -> tuple[list[TrialRow], dict[int, tuple[
        float, float]]]:
    """``count`` completed trials whose task started at 100 s, whose script's clock started
    ``start`` s later and whose first report came 0.1 s after that, final ``run`` s in."""
    trials = [TrialRow(number, {}, TrialState.COMPLETED, started_at=100.0, ended_at=200.0,
                       training_seconds=run) for number in range(1, count + 1)]
    return trials, {t.number: (100.0 + start + 0.1, 0.1) for t in trials}


def test_start_up_is_the_task_start_to_the_scripts_clock_and_run_its_final_figure() -> None:
    trials, first = _trials(6.9, 0.2)
    starts, runs = startup_and_run(trials, first)
    assert starts == pytest.approx([6.9] * 4) and runs == [0.2] * 4


def test_a_job_whose_trials_mostly_start_is_told_the_flag() -> None:
    assert startup_hint(TASK, *_trials(6.9, 0.2)) == (
        "hint: start-up 6.9 s, run 0.2 s (medians): --slot-preload auto")
    assert startup_hint(TASK, *_trials(12.3, 10.2)) == (
        "hint: start-up 12 s, run 10 s (medians): --slot-preload auto")
    line = "da-submit: " + startup_hint(TASK, *_trials(99.4, 88.0))
    assert len(line) <= 80


def test_a_job_the_default_would_have_run_warm_is_told_to_drop_slot_mode_task() -> None:
    chosen = replace(TASK, docker_image="", appcore_command="/venv/bin/python -m disauto.appcore")
    assert startup_hint(chosen, *_trials(6.9, 0.2)).endswith("(medians): drop --slot-mode task")
    for start, run in ((12.3, 10.2), (0.1, 0.0), (123.4, 100.1)):
        assert len("da-submit: " + startup_hint(chosen, *_trials(start, run))) <= 80
    for other in (replace(chosen, runner=replace(chosen.runner, gpus=1)),
                  replace(chosen, appcore_docker_image="disauto/apprunner:1"),
                  replace(chosen, appcore_command="my-appcore")):
        assert startup_hint(other, *_trials(6.9, 0.2)).endswith(": --slot-preload auto")


def test_a_launch_command_no_interpreter_can_fork_is_told_warm_slots() -> None:
    shell = replace(TASK, launch_cmd="sh train.sh")
    assert startup_hint(shell, *_trials(3.0, 0.5)).endswith("(medians): --slot-mode warm")


@pytest.mark.parametrize("config", [
    replace(TASK, slot_mode="warm"),
    replace(TASK, slot_mode="warm", slot_preload_auto=True),
])
def test_warm_slots_get_no_hint(config: object) -> None:
    assert startup_hint(config, *_trials(6.9, 0.2)) == ""  # type: ignore[arg-type]


def test_no_hint_when_trials_run_longer_than_they_start_or_are_too_few() -> None:
    assert startup_hint(TASK, *_trials(2.0, 30.0)) == ""
    assert startup_hint(TASK, *_trials(6.9, 0.2, count=2)) == ""


def test_only_completed_trials_that_started_reported_and_ran_once_count() -> None:
    trials, first = _trials(6.9, 0.2, count=3)
    others = [TrialRow(4, {}, TrialState.FAILED, started_at=100.0),
              TrialRow(5, {}, TrialState.COMPLETED, started_at=None),
              TrialRow(6, {}, TrialState.COMPLETED, started_at=100.0),  # no report
              TrialRow(7, {}, TrialState.COMPLETED, started_at=100.0,
                       tries=[{"task_id": "trial-0007", "outcome": "lost"}])]
    first.update({4: (110.0, 0.1), 5: (110.0, 0.1), 7: (300.0, 0.1)})
    starts, runs = startup_and_run([*trials, *others], first)
    assert len(starts) == len(runs) == 3
