"""A job's progress from its trials, the deadline line, and standings through master labels."""

from __future__ import annotations

import dataclasses
import json

import pytest

from disauto.common.trial_state import TrialState
from disauto.framework._deadline_status import deadline_forms
from disauto.framework._deadline_status import deadline_note
from disauto.framework._job import Progress
from disauto.framework._job.pace import Pace
from disauto.framework._job.progress import job_progress
from disauto.framework._peers import STANDING_LABEL
from disauto.framework._peers import standings_from_frameworks
from disauto.framework._peers import with_label
from disauto.framework._spec import JobConfig
from disauto.framework._store import TrialRow
from disauto.framework.policies import Standing
from disauto.submit.results import progress_line
from disauto.testing.inprocess import job_config


NOW = 1_800_000_000.0


def row(number: int, state: TrialState, started: float | None = None,
        ended: float | None = None, agent: str = "a1") -> TrialRow:
    return TrialRow(number=number, assignment={}, state=state, agent_id=agent,
                    started_at=started, ended_at=ended)


def config(deadline: float = 0.0, parallelism: int = 2, target: bool = False) -> JobConfig:
    made = job_config(max_trials=10, parallelism=parallelism, target=0.9 if target else None)
    return dataclasses.replace(made, deadline=deadline)


def trials() -> list[TrialRow]:
    return [row(0, TrialState.COMPLETED, NOW - 40, NOW - 30),
            row(1, TrialState.COMPLETED, NOW - 40, NOW - 10, agent="edge"),
            row(2, TrialState.RUNNING, NOW - 4), row(3, TrialState.PENDING)]


def test_progress_measures_trials_and_normalises_slow_agents() -> None:
    progress = job_progress(config(deadline=NOW + 60), trials(), NOW,
                            lambda agent: 3.0 if agent == "edge" else 1.0)
    assert progress.durations == (10.0, 10.0)
    assert progress.running_elapsed == (4.0,)
    assert progress.remaining_trials == 7  # 10 - 4 submitted + 1 pending
    assert progress.deadline == NOW + 60


def test_a_target_job_expects_as_many_trials_again_as_it_completed() -> None:
    progress = job_progress(config(target=True, parallelism=4), trials(), NOW)
    assert progress.remaining_trials == 3  # max(4, 2 completed) - 1 running


def test_deadline_note_says_early_when_it_cannot_be_met() -> None:
    assert deadline_note(config(), trials(), NOW) == ""
    assert "on track" in deadline_note(config(deadline=NOW + 3600), trials(), NOW)
    note = deadline_note(config(deadline=NOW + 20), trials(), NOW)
    assert "cannot be met: even 2 slots end about" in note
    assert "met (" in deadline_note(config(deadline=NOW + 20), trials(), NOW, ended_at=NOW)
    assert "missed by 10s" in deadline_note(config(deadline=NOW), trials(), NOW,
                                            ended_at=NOW + 10)


@pytest.mark.parametrize(("deadline", "ended_at", "shortest"), [
    (NOW + 3600, None, "deadline on track"),
    (NOW + 20, None, "deadline cannot be met"),
    (NOW - 5, None, "deadline missed"),
    (NOW + 20, NOW, "deadline met"),
    (NOW, NOW + 10, "deadline missed"),
])
def test_the_deadline_note_has_shorter_forms_that_name_its_standing(
        deadline: float, ended_at: float | None, shortest: str) -> None:
    forms = deadline_forms(config(deadline=deadline), trials(), NOW, ended_at)
    assert forms[0] == deadline_note(config(deadline=deadline), trials(), NOW, ended_at)
    assert forms[-1] == shortest
    assert [len(form) for form in forms] == sorted((len(form) for form in forms), reverse=True)
    assert deadline_forms(config(), trials(), NOW) == ()


def test_before_a_trial_is_measured_the_note_says_how_long_is_left() -> None:
    young = [row(0, TrialState.RUNNING, NOW - 4), row(1, TrialState.PENDING)]
    forms = deadline_forms(config(deadline=NOW + 7200), young, NOW)
    assert forms[0].endswith(" (in 2h): no trial measured yet")
    assert forms[1:] == ("deadline in 2h",)


def test_the_progress_line_shows_the_deadline_and_the_eta_in_80_columns() -> None:
    # With --deadline the note took the line's room and the rate and ETA gave way (issue 36).
    forms = deadline_forms(config(deadline=NOW + 3600), trials(), NOW)
    progress = Progress(done=2, running=1, pending=1, failed=0, best=None, submitted=4,
                        budget=10, elapsed=40.0, parallelism=2,
                        pace=Pace(per_minute=3.0, eta=80.0, trial_seconds=10.0))
    line = progress_line(progress, "accuracy", note=forms, width=80)
    assert len(line) <= 80 and "ETA 1m20s" in line and "| deadline on track" in line, line
    wide = progress_line(progress, "accuracy", note=forms, width=200)
    assert wide.endswith("| 3 trials/min, ETA 1m20s | " + forms[0]), wide  # room for all


def test_standings_travel_in_framework_labels() -> None:
    info = with_label({"name": "j", "labels": {"labels": [{"key": "x", "value": "1"}]}}, "{}")
    assert [label["key"] for label in info["labels"]["labels"]] == ["x", STANDING_LABEL]
    mine = Standing(job="other", tier=0, priority=-3.0, waiting=2, updated=NOW)
    body = {"frameworks": [
        {"id": "fw-1", "active": True,
         "labels": [{"key": STANDING_LABEL, "value": json.dumps(mine.to_json())}]},
        {"id": "fw-self", "labels": [{"key": STANDING_LABEL, "value": "{}"}]},
        {"id": "fw-old", "labels": [{"key": STANDING_LABEL,
                                     "value": json.dumps({"updated": NOW - 100})}]},
        {"id": "fw-bad", "labels": [{"key": STANDING_LABEL, "value": "not json"}]},
    ]}
    assert standings_from_frameworks(body, "fw-self", NOW, 15.0) == [mine]
