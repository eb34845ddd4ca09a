"""The end-of-job hint when starting trials took longer than running them (task mode).

A trial's **start-up** is the time from its task's start (TASK_RUNNING) to when its script's
clock started: the SDK's clock starts when the script imports ``apprunner_sdk``, and each
report carries how long the script had run by it, so the first report's arrival less that is
the moment, whatever the script reports. Before it: an interpreter starts and imports what the
script imports first. Its **run** is the time from then to its final report (the final report's
own figure, ``training_seconds``). When the median start-up of the completed trials is longer
than their median run in a job of a task per trial, the summary names the flag that starts
trials from a warm, pre-imported interpreter instead (``submit/slot_choice.py``), or says to
drop ``--slot-mode task`` where the default would have done so.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import statistics

from disauto.common.python_command import NotAPythonCommandError
from disauto.common.python_command import parse_python_command
from disauto.common.trial_state import TrialState
from disauto.framework.record import JobConfig
from disauto.framework.record import TrialRow


DEFAULT_APPCORE = "-m disauto.appcore"
"""How da-submit's default AppCore command ends (``--app-core-command`` not given)."""
MIN_TRIALS = 3
"""Completed trials needed before medians say anything."""


def startup_and_run(trials: Sequence[TrialRow],
                    first_reports: Mapping[int, tuple[float, float]]
                    ) -> tuple[list[float], list[float]]:
    """Each completed trial's start-up and run, in seconds (those that ran once, with a
    report and a start)."""
    starts, runs = [], []
    for trial in trials:
        first = first_reports.get(trial.number)
        if trial.state != TrialState.COMPLETED or not trial.started_at or trial.tries \
                or first is None:
            continue
        recorded_at, elapsed = first
        starts.append(max(0.0, recorded_at - elapsed - trial.started_at))
        runs.append(trial.training_seconds)
    return starts, runs


def startup_hint(config: JobConfig, trials: Sequence[TrialRow],
                 first_reports: Mapping[int, tuple[float, float]]) -> str:
    """``hint: start-up 6.9 s, run 0.2 s (medians): --slot-preload auto``, or "" (warm
    slots, too few trials, or start-up shorter than the run)."""
    if config.slot_mode != "task":
        return ""
    starts, runs = startup_and_run(trials, first_reports)
    if len(starts) < MIN_TRIALS:
        return ""
    start, run = statistics.median(starts), statistics.median(runs)
    if start <= run:
        return ""
    return (f"hint: start-up {_seconds(start)}, run {_seconds(run)} (medians): "
            f"{_remedy(config)}")


def _remedy(config: JobConfig) -> str:
    """The flag that would start the trials warm: none for a job the default would have run
    on warm slots (it said ``--slot-mode task``, which ``--slot-preload`` conflicts with),
    ``--slot-preload auto`` (which implies warm slots) for another Python program, warm slots
    alone for a launch command no interpreter can fork."""
    try:
        parse_python_command(config.launch_cmd)
    except NotAPythonCommandError:
        return "--slot-mode warm"
    default_is_warm = not (config.docker_image or config.runner.gpus
                           or config.appcore_docker_image) \
        and config.appcore_command.endswith(DEFAULT_APPCORE)
    return "drop --slot-mode task" if default_is_warm else "--slot-preload auto"


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 10 else f"{value:.0f} s"
