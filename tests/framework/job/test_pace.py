"""A job's rate and ETA from its trials' recorded times (issue 36)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from disauto.common.trial_state import TrialState
from disauto.framework._deadline_status import deadline_note
from disauto.framework._job.pace import Pace
from disauto.framework._job.pace import completion_rate
from disauto.framework._job.progress import job_pace
from disauto.framework._job.progress import pace_basis
from disauto.framework._spec import JobConfig
from disauto.framework._store import TrialRow
from disauto.testing.inprocess import job_config
from tests.framework.webui.records import Recorded


NOW = 1_800_000_000.0


def row(number: int, state: TrialState, started: float | None = None,
        ended: float | None = None) -> TrialRow:
    return TrialRow(number=number, assignment={}, state=state, agent_id="a1",
                    started_at=started, ended_at=ended)


def config(parallelism: int = 2, max_trials: int = 10, deadline: float = 0.0) -> JobConfig:
    return dataclasses.replace(job_config(max_trials=max_trials, parallelism=parallelism),
                               deadline=deadline)


def trials() -> list[TrialRow]:
    """Two trials of 60 s ended, one running for 20 s, one pending: 10 - 4 + 1 = 7 to start."""
    return [row(1, TrialState.COMPLETED, NOW - 120, NOW - 60),
            row(2, TrialState.COMPLETED, NOW - 60, NOW),
            row(3, TrialState.RUNNING, NOW - 20), row(4, TrialState.PENDING)]


def test_no_rate_nor_eta_before_a_trial_has_ended() -> None:
    started = [row(1, TrialState.RUNNING, NOW - 30), row(2, TrialState.PENDING)]
    pace = job_pace(config(), started, NOW)
    assert pace == Pace(None, None, None)
    assert (pace.rate_text(), pace.eta_text()) == ("—", "—")
    assert pace.as_json(NOW)["eta_seconds"] is None


def test_the_rate_counts_ended_trials_since_the_first_started_when_young() -> None:
    # 2 trials ended within the 120 s since the first started: 1 per minute.
    assert completion_rate(trials(), NOW) == pytest.approx(1.0)
    # Pruned, failed and timed-out trials end too; a killed one does not count.
    more = [*trials(), row(5, TrialState.PRUNED, NOW - 30, NOW - 10),
            row(6, TrialState.KILLED, NOW - 30, NOW - 5)]
    assert completion_rate(more, NOW) == pytest.approx(1.5)


def test_the_rate_is_of_the_last_ten_minutes_once_the_job_is_older() -> None:
    old = [row(n, TrialState.COMPLETED, NOW - 3600 + 60 * n, NOW - 3540 + 60 * n)
           for n in range(50)]  # one a minute, ended from NOW - 3540 to NOW - 600
    assert completion_rate(old, NOW - 600) == pytest.approx(1.0)  # 10 in (NOW - 1200, NOW - 600]
    assert completion_rate(old, NOW - 300) == pytest.approx(0.5)
    assert completion_rate(old, NOW) == 0.0  # a stalled job says so


def test_the_eta_spreads_the_work_left_over_the_parallelism() -> None:
    # Mean trial 60 s; 7 trials to start (420 s) + the running one's 40 s left = 460 s over
    # 2 slots: 230 s.
    pace = job_pace(config(parallelism=2), trials(), NOW)
    assert pace.trial_seconds == pytest.approx(60.0)
    assert pace.eta == pytest.approx(230.0)
    assert pace.eta_text() == "3m50s"
    assert pace.rate_text() == "1 trials/min"
    assert pace.as_json(NOW) == {"trials_per_minute": 1.0, "eta_seconds": 230.0,
                                 "eta_at": NOW + 230, "trial_seconds": 60.0,
                                 "window_seconds": 600.0}
    # Four slots: 115 s, more than one trial (60 s) and the running one's rest (40 s).
    assert job_pace(config(parallelism=4), trials(), NOW).eta == pytest.approx(115.0)


def test_the_eta_is_never_shorter_than_what_is_left_to_run() -> None:
    # A budget all submitted: only the running trial's rest (40 s), however many slots.
    last = job_pace(config(parallelism=8, max_trials=3), trials()[:3], NOW)
    assert last.eta == pytest.approx(40.0)
    # A trial running longer than the mean is due any moment: 0, not negative.
    late = [*trials()[:2], row(3, TrialState.RUNNING, NOW - 90)]
    assert job_pace(config(max_trials=3), late, NOW).eta == 0.0


def test_an_ended_job_has_a_rate_and_no_eta() -> None:
    pace = job_pace(config(), trials(), NOW, ended=True)
    assert pace.eta is None and pace.per_minute == pytest.approx(1.0)


def test_the_eta_agrees_with_the_deadline_prediction() -> None:
    # With every slot running, the deadline line predicts the same end as the ETA.
    running = [*trials()[:2], row(3, TrialState.RUNNING, NOW - 20),
               row(4, TrialState.RUNNING, NOW - 20)]
    eta = job_pace(config(parallelism=2), running, NOW).eta
    assert eta is not None
    assert "on track" in deadline_note(config(deadline=NOW + eta + 1), running, NOW)
    assert "cannot be met" in deadline_note(config(deadline=NOW + eta - 1), running, NOW)


def test_the_controllers_progress_carries_the_pace(tmp_path: Path) -> None:
    # What da-submit's progress line reads: 7 trials ended (their times a moment apart).
    pace = Recorded(tmp_path / "job").controller.progress().pace
    assert pace is not None and pace.per_minute is not None and pace.eta is not None


def test_the_eta_is_said_in_whole_seconds() -> None:
    """Seen on a quick job's line: ``ETA 0.738162s``."""
    assert [Pace(1.0, eta, 2.0).eta_text() for eta in (0.2, 0.738, 59.2, 750.4)] == [
        "1s", "1s", "1m", "12m31s"]


def test_a_basis_read_once_gives_the_pace_at_any_later_time_without_the_trials() -> None:
    # The job page keeps one basis per change of the record: what it says at a later time is
    # what reading every trial again would say (the running trial older, the window moved).
    basis = pace_basis(config(parallelism=2), trials())
    for later in (NOW, NOW + 30, NOW + 500, NOW + 5000):
        assert basis.pace(later) == job_pace(config(parallelism=2), trials(), later)
        assert basis.pace(later, ended=True) == job_pace(config(parallelism=2), trials(), later,
                                                        ended=True)
    assert basis.pace(NOW + 5000).per_minute == 0.0  # nothing ended in its last 10 minutes
