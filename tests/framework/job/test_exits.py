"""How long a trial's task may run (framework/_job/exits.py), on a fake clock: a trial whose
final result is in gets ``--trial-exit-grace`` to exit, then it is COMPLETED (its result kept)
and its task handed back to kill; ``--trial-timeout`` bounds every trial, reported or not."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from disauto.common.report import Report
from disauto.common.trial_state import TrialState
from disauto.framework._job.book import TrialBook
from disauto.framework._job.exits import TaskExits
from disauto.framework._spec import JobConfig
from disauto.framework._store import JobStore
from disauto.testing.inprocess import AGENT
from disauto.testing.inprocess import job_config


GRACE = 30.0


def config(*, timeout: float = 0.0, grace: float = GRACE) -> JobConfig:
    return replace(job_config(), trial_timeout=timeout, trial_exit_grace=grace)


@pytest.fixture
def book(tmp_path: Path) -> TrialBook:
    made = TrialBook(JobStore(tmp_path / "job.db"))
    made.add([(n, {"lr": 0.01 * n, "layers": 1, "act": "relu"}, 0) for n in (1, 2, 3)])
    return made


def running(book: TrialBook, number: int, *, started: bool = True) -> str:
    task_id = f"trial-000{number}"
    book.launched(number, task_id, AGENT, "")
    if started:
        book.started(book.require(number))
    return task_id


def final(book: TrialBook, number: int, value: float = 0.9) -> float:
    """Trial ``number``'s final report; when it was recorded."""
    book.reported(book.require(number), Report(number, {"accuracy": value}, None, True, 1.0),
                  {"accuracy": value}, {"metrics": {"accuracy": value}, "objective": value,
                                        "final_reported": True})
    return book.last_report(number)


def test_only_running_trials_past_the_limit_time_out(book: TrialBook) -> None:
    exits = TaskExits(book)
    for number in (1, 2):
        running(book, number)
    running(book, 3, started=False)  # launching: its clock has not started
    book.require(2).started_at = book.require(1).started_at + 50  # type: ignore[operator]
    now = (book.require(1).started_at or 0.0) + 60
    assert exits.expire(config(timeout=30.0), now) == ["trial-0001"]
    assert [book.require(n).state for n in (1, 2, 3)] == [
        TrialState.TIMEOUT, TrialState.RUNNING, TrialState.LAUNCHING]
    assert book.require(1).message == "ran longer than --trial-timeout 30s"
    assert book.outliving.ended_first("trial-0001")  # to kill; live until its end is seen
    assert exits.expire(config(), now + 3600) == []  # no --trial-timeout: no bound


def test_a_reported_trial_that_does_not_exit_is_completed_after_its_grace(
        book: TrialBook) -> None:
    exits = TaskExits(book)
    task = running(book, 1)
    reported = final(book, 1)
    assert exits.expire(config(), reported + GRACE - 1) == []
    assert book.require(1).state == TrialState.RUNNING  # it may still write its output
    assert exits.expire(config(), reported + GRACE + 1) == [task]
    trial = book.require(1)
    assert (trial.state, trial.objective) == (TrialState.COMPLETED, 0.9)  # its result kept
    assert trial.message == ("completed; its task did not exit within --trial-exit-grace 30s "
                             "of its final report: killed")
    assert book.store.trial(1).state == TrialState.COMPLETED  # recorded
    # Its task is live until its end is seen (the caller kills it), and killed once.
    assert book.outliving.ended_first(task) and task in book.live_task_ids()
    assert exits.expire(config(), reported + GRACE + 60) == []
    book.outliving.task_ended(task)
    assert book.live_task_ids() == []


def test_the_grace_counts_from_the_final_report_not_the_start(book: TrialBook) -> None:
    exits = TaskExits(book)
    running(book, 1)
    book.require(1).started_at = 1000.0  # long ago: no --trial-timeout, so no bound
    reported = final(book, 1)
    assert exits.expire(config(grace=2.0), reported + 1.5) == []
    assert exits.expire(config(grace=2.0), reported + 2.5) == ["trial-0001"]


def test_a_trial_without_its_result_gets_no_grace(book: TrialBook) -> None:
    exits = TaskExits(book)
    running(book, 1)
    book.reported(book.require(1), Report(1, {"accuracy": 0.5}, 3, False, 1.0),
                  {"accuracy": 0.5}, {"metrics": {"accuracy": 0.5}})  # not final
    assert exits.expire(config(), book.last_report(1) + GRACE * 10) == []
    assert book.require(1).state == TrialState.RUNNING


def test_the_trial_timeout_bounds_a_reported_trial_too(book: TrialBook) -> None:
    """Reported, its grace not over, but past --trial-timeout: COMPLETED and killed (a trial
    without a result is TIMEOUT, as before)."""
    exits = TaskExits(book)
    for number in (1, 2):
        running(book, number)
        book.require(number).started_at = 1000.0
    reported = final(book, 1)
    assert sorted(exits.expire(config(timeout=60.0), reported + 1)) == [
        "trial-0001", "trial-0002"]
    one, two = book.require(1), book.require(2)
    assert (one.state, one.objective) == (TrialState.COMPLETED, 0.9)
    assert one.message == "completed; its task ran longer than --trial-timeout 1m: killed"
    assert (two.state, two.message) == (TrialState.TIMEOUT, "ran longer than --trial-timeout 1m")


def test_a_launching_trial_that_reported_gets_its_grace_too(book: TrialBook) -> None:
    """Its TASK_RUNNING not seen yet (a quick script): the grace still bounds it; the timeout
    counts from TASK_RUNNING only."""
    exits = TaskExits(book)
    running(book, 1, started=False)
    reported = final(book, 1)
    assert exits.expire(config(timeout=1.0), reported + 1) == []
    assert exits.expire(config(timeout=1.0), reported + GRACE + 1) == ["trial-0001"]
    assert book.require(1).state == TrialState.COMPLETED


def test_a_reported_trial_on_an_unreachable_agent_is_left_to_the_unreachable_timeout(
        book: TrialBook) -> None:
    exits = TaskExits(book)
    running(book, 1)
    reported = final(book, 1)
    book.mark_unreachable(book.require(1), reported, "its agent has been unreachable since ...")
    assert exits.expire(config(), reported + GRACE + 1) == []
    assert book.require(1).state == TrialState.RUNNING


def test_a_resumed_framework_counts_the_grace_from_when_it_first_sees_the_trial(
        tmp_path: Path) -> None:
    """Its predecessor recorded the final report and died: the report's moment is not known
    here, so the grace runs from the first check (at most one grace more)."""
    store = JobStore(tmp_path / "job.db")
    first = TrialBook(store)
    first.add([(1, {"lr": 0.01, "layers": 1, "act": "relu"}, 0)])
    running(first, 1)
    final(first, 1)
    exits = TaskExits(TrialBook(store))
    assert exits.expire(config(), 5000.0) == []
    assert exits.expire(config(), 5000.0 + GRACE - 1) == []
    assert exits.expire(config(), 5000.0 + GRACE + 1) == ["trial-0001"]
