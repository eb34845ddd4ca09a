"""The trial book: rows written to the record before they change, every state change an event,
and the tasks the framework still has to see end."""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.common.report import Report
from disauto.common.trial_state import TrialState
from disauto.framework._errors import FailedPreconditionError
from disauto.framework._errors import NotFoundError
from disauto.framework._job.book import TrialBook
from disauto.framework._job.book import has_result
from disauto.framework._job.book import sorted_trials
from disauto.framework._store import JobStore
from disauto.testing.inprocess import AGENT
from disauto.testing.inprocess import task_status


def assignment(i: int) -> dict[str, object]:
    return {"lr": 0.01 * i, "layers": 1, "act": "relu"}


@pytest.fixture
def book(tmp_path: Path) -> TrialBook:
    made = TrialBook(JobStore(tmp_path / "job.db"))
    made.add([(n, assignment(n), 0) for n in (1, 2, 3)])
    return made


def recorded(book: TrialBook, number: int) -> TrialState:
    row = book.store.trial(number)
    assert row is not None
    return row.state


def test_a_state_change_is_recorded_then_announced(book: TrialBook) -> None:
    assert book.events.sequence == 3  # one event per trial added
    trial = book.require(1)
    book.set_state(trial, TrialState.FAILED, "exited with status 1")
    assert recorded(book, 1) == TrialState.FAILED == trial.state
    row = book.store.trial(1)
    assert row is not None and row.message == "exited with status 1" and row.ended_at
    assert book.events.after(3, timeout=0, ended=False) == [(4, 1)]
    with pytest.raises(NotFoundError, match="trial 9 does not exist"):
        book.require(9)


def test_a_launch_is_recorded_and_a_lost_one_counts_as_a_retry(book: TrialBook) -> None:
    book.launched(1, "trial-0001", AGENT, "job-slot-0")
    trial = book.require(1)
    assert (trial.state, trial.task_id, book.executor_of("trial-0001")) == (
        TrialState.LAUNCHING, "trial-0001", "job-slot-0")
    assert book.outliving.on_a_slot("trial-0001") and book.live_task_ids() == ["trial-0001"]
    book.started(trial)
    assert trial.started_at and recorded(book, 1) == TrialState.RUNNING
    book.queue_again(trial, "launched again after TASK_LOST")
    assert (trial.state, trial.retries, trial.task_id) == (TrialState.PENDING, 1, "")
    book.queue_again(book.require(2), "never launched")  # no task: not a retry
    assert book.require(2).retries == 0
    assert [t.number for t in book.pending()] == [1, 2, 3]


def test_a_trial_ended_early_keeps_its_task_live_until_it_ends(book: TrialBook) -> None:
    book.launched(1, "trial-0001", AGENT, "")
    assert book.end_early(1, TrialState.KILLED, "killed from the job page") == "trial-0001"
    assert book.end_early(2, TrialState.PRUNED, "stopped early") == ""  # pending: no task
    assert book.outliving.ended_first("trial-0001") and "trial-0001" in book.live_task_ids()
    book.outliving.task_ended("trial-0001")
    assert not book.outliving.ended_first("trial-0001") and book.live_task_ids() == []
    with pytest.raises(FailedPreconditionError, match=r"trial 1 has already ended \(KILLED\)"):
        book.check_killable(1)


def test_the_jobs_end_kills_the_waiting_and_completes_the_reported(book: TrialBook) -> None:
    book.launched(1, "trial-0001", AGENT, "")
    book.started(book.require(1))
    book.reported(book.require(1), Report(1, {"accuracy": 0.9}, None, True, 2.0),
                  {"accuracy": 0.9}, {"metrics": {"accuracy": 0.9}, "objective": 0.9,
                                      "final_reported": True, "training_seconds": 2.0})
    assert has_result(book.require(1)) and book.store.reports(1)[0]["final"]
    book.close()
    assert [recorded(book, n) for n in (1, 2, 3)] == [TrialState.COMPLETED, TrialState.KILLED,
                                                      TrialState.KILLED]
    assert book.outliving.finishing_ids() == ["trial-0001"]  # its runner may still write output
    book.outliving.task_ended("trial-0001")
    assert book.outliving.finishing_ids() == []


def test_a_resumed_book_knows_its_predecessors_tasks(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "job.db")
    first = TrialBook(store)
    first.add([(n, assignment(n), 0) for n in (1, 2)])
    for number in (1, 2):
        first.launched(number, f"trial-000{number}", AGENT, f"job-slot-{number}")
        first.end_early(number, TrialState.KILLED, "killed")
    store.add_task_update(task_status("trial-0002", "TASK_KILLED"))  # only 2's end recorded
    again = TrialBook(store)
    assert again.outliving.on_a_slot("trial-0001")
    assert again.executor_of("trial-0002") == "job-slot-2"
    assert again.slot_tasks_in_flight() == {"job-slot-1": "trial-0001"}
    assert again.outliving.kills_on_resume() == ["trial-0001"]
    assert again.outliving.kills_on_resume() == []  # once


def test_a_resumed_book_kills_a_completed_trials_task_whose_end_is_not_recorded(
        tmp_path: Path) -> None:
    """Its predecessor completed trial 1 past its exit grace and died before the kill's
    TASK_KILLED: its task may still run (its slot busy), so the resumed framework kills it
    once. Trial 2 completed and its task's end is recorded: left alone."""
    store = JobStore(tmp_path / "job.db")
    first = TrialBook(store)
    first.add([(n, assignment(n), 0) for n in (1, 2)])
    for number in (1, 2):
        first.launched(number, f"trial-000{number}", AGENT, f"job-slot-{number}")
        first.end_early(number, TrialState.COMPLETED, "completed; its task did not exit")
    store.add_task_update(task_status("trial-0002", "TASK_FINISHED"))
    again = TrialBook(store)
    assert again.outliving.kills_on_resume() == ["trial-0001"]
    assert again.slot_tasks_in_flight() == {"job-slot-1": "trial-0001"}


def test_a_book_on_a_new_cluster_waits_for_no_task_of_the_old_one(tmp_path: Path) -> None:
    """A --master local job resumed on a fresh embedded cluster: the tasks its predecessor
    ended first (timed out, completed past their exit grace) died with the old cluster, so
    none is live (the job's end would wait for them in vain)."""
    store = JobStore(tmp_path / "job.db")
    first = TrialBook(store)
    first.add([(n, assignment(n), 0) for n in (1, 2, 3)])
    for number in (1, 2, 3):
        first.launched(number, f"trial-000{number}", AGENT, "")
    first.end_early(1, TrialState.TIMEOUT, "ran longer than --trial-timeout 5s")
    first.end_early(2, TrialState.COMPLETED, "completed; its task did not exit")
    again = TrialBook(store)
    assert sorted(again.live_task_ids()) == ["trial-0001", "trial-0002", "trial-0003"]
    assert again.requeue_in_flight("the job resumed on a new cluster") == [3]
    assert again.live_task_ids() == []


def test_trials_rank_completed_first_by_objective(book: TrialBook) -> None:
    for number, value in ((1, 0.5), (2, 0.9)):
        trial = book.require(number)
        trial.objective = value
        book.set_state(trial, TrialState.COMPLETED, "")
    book.require(3).objective = 0.99  # an intermediate value of a trial not completed
    assert [t.number for t in sorted_trials(book.copies(), maximize=True)] == [2, 1, 3]
    assert [t.number for t in sorted_trials(book.copies(), maximize=False)] == [1, 2, 3]
    best = book.best(maximize=True)
    assert best is not None and best.number == 2
