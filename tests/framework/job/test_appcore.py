"""AppCore's life: its attempts counted on from the record, each transition recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.framework._job.appcore import MAX_PORT_RETRIES
from disauto.framework._job.appcore import AppCoreLife
from disauto.framework._store import JobStore


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / "job.db")


def last_run(store: JobStore) -> dict[str, object]:
    return store.appcore_runs()[-1]


def test_a_launch_runs_attaches_and_is_recorded(store: JobStore) -> None:
    life = AppCoreLife(store)
    assert life.waiting() and life.next_task_id() == "appcore-1" and life.live_task_id() == ""
    assert life.launched("appcore-1", "S1")
    assert not life.launched("appcore-2", "S1")  # launching: no second one
    assert (life.task_id, life.live_task_id(), last_run(store)["state"]) == (
        "appcore-1", "appcore-1", "LAUNCHING")
    life.running()
    assert last_run(store)["state"] == "RUNNING" and life.endpoint() == ("", "")
    life.attach("10.0.0.2:31001", "PEM")
    assert life.endpoint() == ("10.0.0.2:31001", "PEM")
    assert (last_run(store)["state"], last_run(store)["address"]) == ("ATTACHED",
                                                                      "10.0.0.2:31001")
    life.running()  # a late TASK_RUNNING changes nothing once attached
    assert life.endpoint()[0] == "10.0.0.2:31001"


def test_an_ended_task_waits_again_and_counts_its_failures(store: JobStore) -> None:
    life = AppCoreLife(store)
    life.launched("appcore-1", "S1")
    life.attach("h:1", "")
    life.task_ended("TASK_FAILED")
    assert last_run(store)["state"] == "TASK_FAILED" and last_run(store)["ended_at"]
    assert life.endpoint()[0] == ""  # no address to give runners until it attaches again
    assert (life.failed(), life.failed()) == (1, 2)
    life.relaunch_on_next_offer()
    assert life.waiting() and life.live_task_id() == "" and life.next_task_id() == "appcore-2"
    assert [life.port_taken() for _ in range(MAX_PORT_RETRIES + 1)] == [
        *([True] * MAX_PORT_RETRIES), False]
    life.end()
    assert not life.waiting() and not life.launched("appcore-2", "S1")


def test_a_resumed_life_counts_on_and_adopts_a_running_appcore(store: JobStore) -> None:
    first = AppCoreLife(store)
    first.launched("appcore-1", "S1")
    first.running()
    again = AppCoreLife(store)  # a framework failing over on the same master
    assert again.next_task_id() == "appcore-2"
    assert again.adopt() and again.task_id == "appcore-1" and not again.waiting()
    again.lost()  # then taken away: its end unknown, recorded as killed
    assert last_run(store)["state"] == "TASK_KILLED" and again.live_task_id() == ""


def test_nothing_to_adopt_when_the_last_run_ended(store: JobStore) -> None:
    life = AppCoreLife(store)
    assert not life.adopt()
    life.launched("appcore-1", "S1")
    life.task_ended("TASK_FINISHED")
    assert not AppCoreLife(store).adopt()
