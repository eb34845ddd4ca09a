"""The status handling on its own: a real trial book and AppCore life, Mesos' updates as
pymesos hands them over, and the job's end and telemetry as the controller gives them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from disauto.common.task_usage import TaskUsage
from disauto.common.task_usage import status_data
from disauto.common.telemetry import Sample
from disauto.common.trial_state import TrialState
from disauto.framework.job.appcore import AppCoreLife
from disauto.framework.job.book import TrialBook
from disauto.framework.job.status import MEMORY_LIMITATION
from disauto.framework.job.status import TaskStatuses
from disauto.framework.store import JobStore
from disauto.protos import framework_pb2
from tests.inprocess import AGENT
from tests.inprocess import job_config
from tests.inprocess import task_status


class Telemetry:
    """What telemetry would give: a memory note, and the exact usage it was handed."""

    def __init__(self) -> None:
        self.exact: list[tuple[int, TaskUsage]] = []
        self.killed: list[tuple[int, float | None, float | None]] = []

    def memory_note(self, trial: int) -> str:
        return f"measured peak 612 MB of trial {trial}"

    def record_exact(self, trial: int, exact: TaskUsage) -> None:
        self.exact.append((trial, exact))

    def record_samples(self, samples: list[Sample]) -> None:
        raise AssertionError("not a status update's business")

    def record_memory_kill(self, trial: int, used_bytes: float | None,
                           limit_bytes: float | None) -> None:
        self.killed.append((trial, used_bytes, limit_bytes))


class Statuses:
    def __init__(self, folder: Path, **config: Any) -> None:
        self.config = job_config(**config)
        self.book = TrialBook(JobStore(folder / "job.db"))
        self.appcore = AppCoreLife(self.book.store)
        self.finished: list[tuple[int, str]] = []
        self.telemetry = Telemetry()
        self.handler = TaskStatuses(lambda: self.config, self.book, self.appcore,
                                    ended=lambda: bool(self.finished), finish=self._finish,
                                    log_tail=lambda status: "Traceback: boom",
                                    measures=self.telemetry)
        self.book.add([(1, {"lr": 0.1, "layers": 1, "act": "relu"}, 0)])

    def _finish(self, outcome: int, message: str) -> None:
        self.finished.append((outcome, message))

    def run_trial(self, task_id: str = "trial-0001") -> None:
        self.book.launched(1, task_id, AGENT, "")
        assert not self.handler.on(task_status(task_id, "TASK_RUNNING")).pending


@pytest.fixture
def statuses(tmp_path: Path) -> Statuses:
    return Statuses(tmp_path)


def test_a_lost_task_is_queued_again_until_its_retries_are_spent(tmp_path: Path) -> None:
    made = Statuses(tmp_path, max_task_retries=1)
    made.run_trial()
    assert made.handler.on(task_status("trial-0001", "TASK_LOST",
                                      reason="REASON_AGENT_REMOVED")).pending
    assert made.book.require(1).state == TrialState.PENDING
    made.run_trial("trial-0001.1")
    assert not made.handler.on(task_status("trial-0001.1", "TASK_LOST")).pending
    assert made.book.require(1).state == TrialState.FAILED
    # A status of the earlier launch changes nothing now.
    assert not made.handler.on(task_status("trial-0001", "TASK_FINISHED")).pending
    assert made.book.require(1).state == TrialState.FAILED


def test_a_trial_killed_for_its_memory_says_what_was_measured(statuses: Statuses) -> None:
    statuses.run_trial()
    statuses.handler.on({**task_status("trial-0001", "TASK_FAILED", reason=MEMORY_LIMITATION,
                                       message="Memory limit exceeded"),
                         "data": status_data(TaskUsage(1.0, 0.5, 2**29))})
    message = statuses.book.require(1).message
    assert message == ("TASK_FAILED REASON_CONTAINER_LIMITATION_MEMORY: killed by its memory "
                       "limit (--app-runner-memory 128M); give it more: --app-runner-memory "
                       "320M; measured peak 612 MB of trial 1; stderr: Traceback: boom")
    assert [(n, u.cpu_seconds) for n, u in statuses.telemetry.exact] == [(1, 1.5)]
    assert statuses.telemetry.killed == [(1, None, None)]


def test_appcore_is_relaunched_until_it_failed_past_its_restarts(tmp_path: Path) -> None:
    made = Statuses(tmp_path, max_appcore_restarts=1)
    for attempt in (1, 2):
        assert made.appcore.launched(f"appcore-{attempt}", AGENT)
        relaunch = made.handler.on(task_status(f"appcore-{attempt}", "TASK_FAILED",
                                               message="exited with status 1")).pending
        assert relaunch == (attempt == 1)
    assert made.finished == [(framework_pb2.ERROR, "AppCore failed 2 times; last: TASK_FAILED: "
                                                   "exited with status 1; stderr: Traceback: "
                                                   "boom")]
    assert not made.appcore.waiting() and made.appcore.live_task_id() == ""


def test_after_the_jobs_end_appcores_end_is_no_failure(statuses: Statuses) -> None:
    statuses.appcore.launched("appcore-1", AGENT)
    statuses.finished.append((framework_pb2.STOPPED, "stopped"))
    assert not statuses.handler.on(task_status("appcore-1", "TASK_KILLED")).pending
    assert statuses.finished == [(framework_pb2.STOPPED, "stopped")]
    assert not statuses.appcore.waiting()
