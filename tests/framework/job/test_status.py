"""The status handling on its own: a real trial book and AppCore life, Mesos' updates as
pymesos hands them over, and the job's end and telemetry as the controller gives them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from disauto.common.report import Report
from disauto.common.task_usage import TaskUsage
from disauto.common.task_usage import status_data
from disauto.common.telemetry import Sample
from disauto.common.trial_state import TrialState
from disauto.framework._job.appcore import AppCoreLife
from disauto.framework._job.book import TrialBook
from disauto.framework._job.status import MEMORY_LIMITATION
from disauto.framework._job.status import TaskStatuses
from disauto.framework._job.status import describe_status
from disauto.framework._store import JobStore
from disauto.protos import framework_pb2
from disauto.testing.inprocess import AGENT
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import task_status


class Telemetry:
    """What telemetry would give: a memory note, and the exact usage it was handed."""

    def __init__(self) -> None:
        self.exact: list[tuple[int, TaskUsage]] = []
        self.killed: list[tuple[int, float | None, float | None]] = []
        self.ended: list[int] = []

    def memory_note(self, trial: int) -> str:
        return f"measured peak 612 MB of trial {trial}"

    def record_exact(self, trial: int, exact: TaskUsage) -> None:
        self.exact.append((trial, exact))

    def record_samples(self, samples: list[Sample]) -> None:
        raise AssertionError("not a status update's business")

    def record_memory_kill(self, trial: int, used_bytes: float | None,
                           limit_bytes: float | None) -> None:
        self.killed.append((trial, used_bytes, limit_bytes))

    def trial_ended(self, trial: int) -> None:
        self.ended.append(trial)


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
    assert statuses.telemetry.ended == [1]  # telemetry may let its summary go in time


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


def _with_retries(folder: Path, trial_retries: int, **config: Any) -> Statuses:
    made = Statuses(folder, **config)
    made.config = replace(made.config, trial_retries=trial_retries)
    return made


def test_a_failed_script_runs_again_until_its_retries_are_spent(tmp_path: Path) -> None:
    """Each failed try is kept (its task, its failure, what it reported) and the trial starts
    over under the next task id; the last try's failure is the trial's."""
    made = _with_retries(tmp_path, 2)
    made.run_trial()
    made.book.reported(made.book.require(1), Report(1, {"accuracy": 0.3}, 0, False, 1.0),
                       {"accuracy": 0.3}, {"metrics": {"accuracy": 0.3}, "objective": 0.3})
    failed = task_status("trial-0001", "TASK_FAILED", message="exited with status 1")
    assert made.handler.on(failed).pending
    trial = made.book.require(1)
    assert (trial.state, trial.retries, trial.task_id) == (TrialState.PENDING, 1, "")
    assert (trial.metrics, trial.objective) == ({}, None)  # the next try starts over
    assert trial.message.startswith("launched again after try 1 failed (retry 1 of "
                                    "--trial-retries 2): TASK_FAILED: exited with status 1")
    first = trial.tries[0]
    assert {k: first[k] for k in ("task_id", "outcome", "message", "metrics", "reports")} == {
        "task_id": "trial-0001", "outcome": "failed", "metrics": {"accuracy": 0.3},
        "message": "TASK_FAILED: exited with status 1; stderr: Traceback: boom", "reports": 1}
    made.run_trial("trial-0001.1")
    assert made.book.require(1).message == ""  # the new try's own (the tries keep the last's)
    # No result: failed, and run again.
    assert made.handler.on(task_status("trial-0001.1", "TASK_FINISHED")).pending
    made.run_trial("trial-0001.2")
    assert not made.handler.on(task_status("trial-0001.2", "TASK_FAILED", message="again")).pending
    trial = made.book.require(1)
    assert (trial.state, trial.retries) == (TrialState.FAILED, 2)
    assert trial.message == "TASK_FAILED: again; stderr: Traceback: boom"
    assert [(t["task_id"], t["reports"]) for t in trial.tries] == [
        ("trial-0001", 1), ("trial-0001.1", 0)]
    assert trial.tries[1]["message"].startswith("the runner exited without reporting")
    stored = made.book.store.trial(1)
    assert stored is not None and stored.tries == trial.tries  # in the record


def test_a_try_that_failed_after_its_final_result_is_completed_not_retried(
        tmp_path: Path) -> None:
    made = _with_retries(tmp_path, 1)
    made.run_trial()
    made.book.reported(made.book.require(1), Report(1, {"accuracy": 0.9}, None, True, 1.0),
                       {"accuracy": 0.9}, {"metrics": {"accuracy": 0.9}, "objective": 0.9,
                                           "final_reported": True})
    assert not made.handler.on(task_status("trial-0001", "TASK_FAILED")).pending
    trial = made.book.require(1)
    assert (trial.state, trial.tries, trial.objective) == (TrialState.COMPLETED, [], 0.9)


def test_lost_tasks_and_failed_scripts_spend_their_own_budgets(tmp_path: Path) -> None:
    """One loss and one failure with a retry of each: both run again; a second loss is past
    the loss budget (not retried as a failure either: the script did not fail)."""
    made = _with_retries(tmp_path, 1, max_task_retries=1)
    made.run_trial()
    assert made.handler.on(task_status("trial-0001", "TASK_LOST")).pending
    made.run_trial("trial-0001.1")
    assert made.handler.on(task_status("trial-0001.1", "TASK_FAILED")).pending
    made.run_trial("trial-0001.2")
    assert not made.handler.on(task_status("trial-0001.2", "TASK_LOST", message="gone")).pending
    trial = made.book.require(1)
    assert trial.state == TrialState.FAILED and trial.message.startswith("TASK_LOST: gone")
    assert [t["outcome"] for t in trial.tries] == ["lost", "failed"]


@pytest.mark.parametrize(("state", "reason"), [("TASK_ERROR", ""), ("TASK_KILLED", ""),
                                               ("TASK_FAILED", "REASON_AGENT_REMOVED")])
def test_what_is_not_the_scripts_failure_is_not_retried(tmp_path: Path, state: str,
                                                        reason: str) -> None:
    made = _with_retries(tmp_path, 3, max_task_retries=0)
    made.run_trial()
    assert not made.handler.on(task_status("trial-0001", state, reason=reason)).pending
    trial = made.book.require(1)
    assert trial.state in (TrialState.FAILED, TrialState.KILLED) and trial.tries == []


def test_no_retry_once_the_job_has_ended(tmp_path: Path) -> None:
    made = _with_retries(tmp_path, 3)
    made.run_trial()
    made.finished.append((framework_pb2.STOPPED, "stopped"))
    assert not made.handler.on(task_status("trial-0001", "TASK_FAILED")).pending
    assert made.book.require(1).state == TrialState.FAILED


def refused(task_id: str, user: str, why: str, state: str = "TASK_DROPPED") -> dict[str, Any]:
    """What a Mesos 1.11 agent says of a task whose sandbox its user cannot have."""
    sandbox = f"/var/lib/mesos/slaves/{AGENT}/frameworks/F/executors/{task_id}/runs/C"
    return task_status(task_id, state, source="SOURCE_AGENT", reason="REASON_EXECUTOR_TERMINATED",
                       message=f"Failed to create executor directory '{sandbox}': Failed to "
                               f"chown directory to '{user}': {why}")


def test_a_trial_whose_agent_lacks_the_jobs_user_fails_with_what_to_do(
        tmp_path: Path) -> None:
    made = _with_retries(tmp_path, 2, max_task_retries=2)
    made.run_trial()
    effects = made.handler.on(refused("trial-0001", "ghost", "No such user 'ghost'"))
    assert not effects.pending  # not run again: every launch would be refused alike
    trial = made.book.require(1)
    assert trial.state == TrialState.FAILED and trial.retries == 0
    assert trial.message == (
        f"Mesos cannot run the job's tasks as user 'ghost': agent {AGENT} has no such user; "
        "pass --user NAME of a user the agents have (default: your login), or run the agents "
        "with --switch_user=false")


def test_appcore_whose_agent_cannot_switch_users_ends_the_job_at_once(statuses: Statuses) -> None:
    statuses.appcore.launched("appcore-1", AGENT)
    effects = statuses.handler.on(refused("appcore-1", "nobody", "Operation not permitted",
                                          state="TASK_LOST"))
    assert not effects.pending and not statuses.appcore.waiting()
    assert statuses.finished == [(
        framework_pb2.UNSCHEDULABLE,
        f"Mesos cannot run the job's tasks as user 'nobody': agent {AGENT} is not root and "
        "cannot switch users (Operation not permitted); pass --user NAME of the user the "
        "agent runs as, or run the agent as root")]


def test_a_docker_image_no_agent_can_provision_says_what_to_do_first() -> None:
    """A Mesos agent without ``--image_providers=docker`` fails a MESOS container's Docker
    image at its launch (seen on a real agent: tests/conformance, docs/real-mesos.md)."""
    said = describe_status({
        "state": "TASK_FAILED", "reason": "REASON_CONTAINER_LAUNCH_FAILED",
        "message": "Failed to launch container: Unsupported container image type: 2"})
    assert said.startswith("the agent runs no Docker image in a Mesos container: use "
                           "--containerizer docker")
    assert said.endswith("(TASK_FAILED REASON_CONTAINER_LAUNCH_FAILED: Failed to launch "
                         "container: Unsupported container image type: 2)")
    assert describe_status({"state": "TASK_FAILED", "message": "Command exited with status 1"}) \
        == "TASK_FAILED: Command exited with status 1"
