"""A job's progress from its trials, the deadline line, and standings through master labels."""

from __future__ import annotations

import dataclasses
import json

from disauto.common.trial_state import TrialState
from disauto.framework.deadline_status import deadline_note
from disauto.framework.job.progress import job_progress
from disauto.framework.peers import STANDING_LABEL
from disauto.framework.peers import standings_from_frameworks
from disauto.framework.peers import with_label
from disauto.framework.policies import Standing
from disauto.framework.spec import JobConfig
from disauto.framework.store import TrialRow
from tests.inprocess import job_config


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
