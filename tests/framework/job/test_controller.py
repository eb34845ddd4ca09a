"""The JobController state machine over a real SQLite job store.

The scheduler-facing calls (launch_requests, appcore_launched, trial_launched, on_status) are made
here with Mesos-shaped TaskStatus dicts, as framework._scheduler.JobScheduler makes them.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from pathlib import Path
import threading
import time
from typing import Any

import pytest

from disauto.common.report import Report
from disauto.framework import _meta as meta
from disauto.framework._errors import AlreadyExistsError
from disauto.framework._errors import FailedPreconditionError
from disauto.framework._errors import InvalidArgumentError
from disauto.framework._errors import NotFoundError
from disauto.framework._job import APPCORE_KEY
from disauto.framework._job import JobController
from disauto.framework._spec import JobConfig
from disauto.framework._store import JobStore
from disauto.framework._tasks import task_name
from disauto.framework._tasks import trial_task_id
from disauto.protos import common_pb2
from disauto.protos import framework_pb2
from disauto.testing.inprocess import AGENT
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import task_status


pytestmark = pytest.mark.integration  # starts processes or servers


ASSIGN = {"lr": 0.01, "layers": 2, "act": "relu"}


def assignment(i: int) -> dict[str, Any]:
    return {"lr": 0.001 * i, "layers": 1 + i % 4, "act": "relu" if i % 2 else "tanh"}


class Job:
    """A controller with its store, a pending-callback counter and a settable stderr tail."""

    def __init__(self, job_dir: Path, config: JobConfig) -> None:
        self.db_path = job_dir / "job.db"
        self.store = JobStore(self.db_path)
        self.pending_calls = 0
        self.stderr: str | Exception = ""
        self.tail_requests: list[Mapping[str, Any]] = []
        self.controller = JobController(config, self.store, "tok", on_pending=self._pending,
                                        log_tail=self._tail)

    def _pending(self) -> None:
        self.pending_calls += 1

    def _tail(self, status: Mapping[str, Any]) -> str:
        self.tail_requests.append(status)
        if isinstance(self.stderr, Exception):
            raise self.stderr
        return self.stderr

    def reopened(self) -> JobStore:
        """A second connection to the database file: what a crash would leave."""
        return JobStore(self.db_path)

    def launch(self, number: int, running: bool = True) -> None:
        trial = self.controller.trial_for_launch(number)
        assert trial is not None
        self.controller.trial_launched(number, trial_task_id(number, trial.retries), AGENT)
        if running:
            self.status(number, "TASK_RUNNING")

    def status(self, number: int, state: str, **extra: Any) -> None:
        task_id = self.trial(number).task_id or task_name(number)
        self.controller.on_status(task_status(task_id, state, **extra))

    def state(self, number: int) -> str:
        return {t.number: t for t in self.controller.trials()}[number].state

    def trial(self, number: int) -> Any:
        return {t.number: t for t in self.controller.trials()}[number]


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Callable[..., Job]]:
    jobs: list[Job] = []

    def build(**overrides: Any) -> Job:
        job = Job(tmp_path / f"job{len(jobs)}", job_config(**overrides))
        jobs.append(job)
        return job

    yield build
    for job in jobs:
        job.store.close()


@pytest.fixture
def job(make: Callable[..., Job]) -> Job:
    return make(max_trials=10)


# -- submitting ----------------------------------------------------------------------------------


def test_submit_records_the_trial_before_returning(job: Job) -> None:
    proto = job.controller.submit_trial(1, ASSIGN, priority=3)
    assert proto.number == 1 and proto.state == common_pb2.PENDING and proto.priority == 3
    assert proto.assignment["layers"].integer == 2 and proto.assignment["lr"].real == 0.01
    assert proto.assignment["act"].text == "relu"
    assert job.pending_calls == 1
    reopened = job.reopened()
    try:
        stored = reopened.trial(1)
        assert stored is not None
        assert (stored.state, stored.assignment, stored.priority) == ("PENDING", ASSIGN, 3)
    finally:
        reopened.close()


def test_resubmitting_the_same_trial_is_idempotent(job: Job) -> None:
    first = job.controller.submit_trial(1, ASSIGN, priority=0)
    again = job.controller.submit_trial(1, dict(ASSIGN), priority=5)
    assert again == first
    assert len(job.controller.trials()) == 1 and len(job.store.trials()) == 1
    events, _ = job.controller.events_after(0, timeout=0)
    assert [e.sequence for e in events] == [1]  # no second event for the retry


def test_same_number_with_another_assignment_is_already_exists(job: Job) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    with pytest.raises(AlreadyExistsError, match="trial 1 already exists with another"):
        job.controller.submit_trial(1, {**ASSIGN, "layers": 3}, priority=0)
    assert job.controller.trials()[0].assignment == ASSIGN


@pytest.mark.parametrize("number, assigned, message", [
    (0, ASSIGN, "trial number must be >= 1, got 0"),
    (-3, ASSIGN, "trial number must be >= 1"),
    (1, {"lr": 0.1}, r"assignment is missing parameter '(act|layers)'"),
    (1, {**ASSIGN, "extra": 1}, "assignment has unknown parameter 'extra'"),
    (1, {**ASSIGN, "lr": 99.0}, "'lr'"),
])
def test_invalid_submissions(job: Job, number: int, assigned: dict[str, Any],
                             message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        job.controller.submit_trial(number, assigned, priority=0)
    assert job.controller.trials() == [] and job.store.trials() == []


def test_a_batch_is_recorded_in_one_transaction_and_wakes_the_scheduler_once(
        make: Callable[..., Job]) -> None:
    job = make(max_trials=5)
    trials = job.controller.submit_trials([(n, assignment(n), 1) for n in (1, 2, 3)])
    assert [(t.number, t.state, t.priority) for t in trials] == [
        (1, common_pb2.PENDING, 1), (2, common_pb2.PENDING, 1), (3, common_pb2.PENDING, 1)]
    assert job.pending_calls == 1
    rows = job.reopened().trials()
    assert [r.number for r in rows] == [1, 2, 3] and len({r.created_at for r in rows}) == 1
    events, _ = job.controller.events_after(0, timeout=0)
    assert [e.trial.number for e in events] == [1, 2, 3]
    # A retry of the same call answers the recorded trials and records nothing new.
    again = job.controller.submit_trials([(n, assignment(n), 1) for n in (1, 2, 3)])
    assert again == trials and job.pending_calls == 1
    assert len(job.controller.events_after(0, timeout=0)[0]) == 3


@pytest.mark.parametrize("batch, error, message", [
    ([(4, "ok"), (5, "bad")], InvalidArgumentError,
     r"trial 5: assignment is missing parameter '(act|layers)'"),
    ([(4, "ok"), (4, "ok")], InvalidArgumentError, "trial 4 appears twice in one submission"),
    ([(1, "other"), (4, "ok")], AlreadyExistsError,
     "trial 1 already exists with another assignment"),
    ([(4, "ok"), (5, "ok"), (6, "ok")], FailedPreconditionError,
     r"3 new trials would exceed the trial budget of 5 \(3 recorded\)"),
    ([], InvalidArgumentError, "no trials to submit"),
])
def test_a_batch_with_one_bad_trial_records_none_of_them(
        make: Callable[..., Job], batch: list[tuple[int, str]], error: type[Exception],
        message: str) -> None:
    job = make(max_trials=5)
    job.controller.submit_trials([(n, assignment(n), 0) for n in (1, 2, 3)])
    chosen = {"ok": assignment, "bad": lambda n: {"lr": 0.1},
              "other": lambda n: {**assignment(n), "lr": 2 * assignment(n)["lr"]}}
    with pytest.raises(error, match=message):
        job.controller.submit_trials([(n, chosen[kind](n), 0) for n, kind in batch])
    assert [t.number for t in job.controller.trials()] == [1, 2, 3]
    assert [r.number for r in job.reopened().trials()] == [1, 2, 3]
    assert job.pending_calls == 1


def test_budget_is_enforced_but_retries_still_answer(make: Callable[..., Job]) -> None:
    job = make(max_trials=2)
    job.controller.submit_trial(1, assignment(1), priority=0)
    job.controller.submit_trial(2, assignment(2), priority=0)
    with pytest.raises(FailedPreconditionError, match="the trial budget of 2 is spent"):
        job.controller.submit_trial(3, assignment(3), priority=0)
    assert job.controller.submit_trial(2, assignment(2), priority=0).number == 2


def test_nothing_is_accepted_after_the_job_ended(job: Job) -> None:
    job.controller.finish(framework_pb2.STOPPED, "stopped by the user")
    with pytest.raises(FailedPreconditionError, match="the job has ended"):
        job.controller.submit_trial(1, ASSIGN, priority=0)
    with pytest.raises(FailedPreconditionError, match="the job has ended"):
        job.controller.attach_appcore("h:1")
    assert job.controller.launch_requests() == []
    assert not job.controller.has_pending()


# -- what waits for an offer ----------------------------------------------------------------------


def test_launch_requests_appcore_first_then_trials_by_priority(job: Job) -> None:
    config = job.controller.config
    for number, priority in [(1, 2), (2, 0), (3, 1), (4, 0)]:
        job.controller.submit_trial(number, assignment(number), priority=priority)
    requests = job.controller.launch_requests()
    assert [r.key for r in requests] == [APPCORE_KEY, "trial-0002", "trial-0004",
                                         "trial-0003", "trial-0001"]
    assert requests[0].ports == 1 and requests[0].resources == config.appcore
    assert requests[0].trial_number is None
    assert [(r.trial_number, r.priority) for r in requests[1:]] == [(2, 0), (4, 0), (3, 1),
                                                                    (1, 2)]
    assert all(r.resources == config.runner and r.ports == 0 for r in requests[1:])

    assert job.controller.next_appcore_task_id() == "appcore-1"
    assert job.controller.appcore_launched("appcore-1", AGENT) is True
    assert job.controller.appcore_launched("appcore-1", AGENT) is False  # not wanted twice
    assert APPCORE_KEY not in [r.key for r in job.controller.launch_requests()]

    job.launch(2)
    assert [r.key for r in job.controller.launch_requests()] == ["trial-0004", "trial-0003",
                                                                 "trial-0001"]
    assert job.controller.trial_for_launch(2) is None  # launched already
    assert job.controller.trial_for_launch(99) is None


def test_launching_and_running_are_recorded(job: Job) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.launch(1, running=False)
    assert job.state(1) == "LAUNCHING"
    assert job.trial(1).task_id == "trial-0001" and job.trial(1).agent_id == AGENT
    before = time.time()
    job.status(1, "TASK_STARTING")  # not a state change for a trial
    assert job.state(1) == "LAUNCHING"
    job.status(1, "TASK_RUNNING")
    assert job.state(1) == "RUNNING" and job.trial(1).started_at >= before
    assert job.controller.tasks.live_task_ids() == ["trial-0001"]
    stored = job.store.trial(1)
    assert stored is not None and stored.state == "RUNNING" and stored.task_id == "trial-0001"
    assert [u["state"] for u in job.store.task_updates("trial-0001")] == [
        "TASK_STARTING", "TASK_RUNNING"]


# -- how trials end -------------------------------------------------------------------------------


def test_finished_with_the_objective_completes(job: Job) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.launch(1)
    job.controller.record_report(Report(1, {"accuracy": 0.93, "loss": 0.2}, None, True, 12.5))
    job.status(1, "TASK_FINISHED")
    trial = job.trial(1)
    assert (trial.state, trial.objective, trial.message) == ("COMPLETED", 0.93, "")
    assert trial.ended_at is not None and trial.training_seconds == 12.5
    assert job.controller.tasks.live_task_ids() == []


@pytest.mark.parametrize("state", ["TASK_KILLED", "TASK_FAILED", "TASK_LOST", "TASK_GONE"])
def test_a_recorded_final_result_completes_the_trial_whatever_its_task_does(
        job: Job, state: str) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.launch(1)
    job.controller.record_report(Report(1, {"accuracy": 0.91}, None, True, 3.0))
    job.status(1, state, message="after the report")
    trial = job.trial(1)
    assert (trial.state, trial.objective) == ("COMPLETED", 0.91)
    assert trial.message.startswith(f"completed; then {state}")
    assert job.controller.best_trial().number == 1
    assert job.reopened().trials()[0].state == "COMPLETED"


def test_an_intermediate_value_alone_does_not_survive_a_kill(job: Job) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.launch(1)
    job.controller.record_report(Report(1, {"accuracy": 0.91}, 2, False, 3.0))
    job.status(1, "TASK_KILLED")
    assert job.state(1) == "KILLED"
    assert job.controller.best_trial() is None


def test_the_end_completes_running_trials_with_a_final_result(job: Job) -> None:
    for number in (1, 2, 3):
        job.controller.submit_trial(number, assignment(number), priority=0)
        job.launch(number)
    job.controller.record_report(Report(1, {"accuracy": 0.97}, None, True, 2.0))  # the target
    job.controller.record_report(Report(2, {"accuracy": 0.5}, 1, False, 2.0))  # still training
    job.controller.finish(framework_pb2.TARGET_REACHED, "trial 1 reached accuracy=0.97")
    assert [job.state(n) for n in (1, 2, 3)] == ["COMPLETED", "RUNNING", "RUNNING"]
    # Trial 1's task still runs (writing its output): it is live, and given time to finish.
    assert sorted(job.controller.tasks.live_task_ids()) == [task_name(n) for n in (1, 2, 3)]
    assert job.controller.tasks.finishing_task_ids() == [task_name(1)]
    for number in (1, 2, 3):  # the job's tasks are killed
        job.status(number, "TASK_KILLED")
    assert [job.state(n) for n in (1, 2, 3)] == ["COMPLETED", "KILLED", "KILLED"]
    assert job.controller.best_trial().number == 1
    assert job.controller.tasks.live_task_ids() == job.controller.tasks.finishing_task_ids() == []


def test_a_report_after_the_end_is_not_recorded(job: Job) -> None:
    from disauto.framework._errors import JobEndedError

    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.launch(1)
    job.controller.finish(framework_pb2.STOPPED, "stopped")
    with pytest.raises(JobEndedError, match="the job has ended"):
        job.controller.record_report(Report(1, {"accuracy": 0.99}, None, True, 1.0))
    assert job.store.reports(1) == []
    assert job.trial(1).objective is None


def test_progress_says_how_long_the_oldest_pending_trial_waits(job: Job) -> None:
    assert job.controller.progress().waiting == 0.0
    job.controller.submit_trial(1, ASSIGN, priority=0)
    time.sleep(0.2)
    assert job.controller.progress().waiting >= 0.2
    job.launch(1)
    assert job.controller.progress().waiting == 0.0


@pytest.mark.parametrize(("state", "reason"), [
    ("TASK_LOST", ""), ("TASK_GONE", "REASON_RECONCILIATION"), ("TASK_DROPPED", ""),
    ("TASK_UNKNOWN", "REASON_RECONCILIATION"), ("TASK_FAILED", "REASON_AGENT_REMOVED"),
])
def test_a_lost_task_launches_the_trial_again_with_the_same_assignment(
        job: Job, state: str, reason: str) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.launch(1)
    job.status(1, state, reason=reason, message="agent went away")
    trial = job.trial(1)
    assert (trial.state, trial.retries, trial.task_id) == ("PENDING", 1, "")
    assert trial.message.startswith(f"launched again after {state}")
    assert job.pending_calls == 2  # the scheduler is woken for it
    assert [r.trial_number for r in job.controller.launch_requests()
            if r.trial_number is not None] == [1]
    job.launch(1)
    assert job.trial(1).task_id == "trial-0001.1"
    # A late update of the first launch changes nothing.
    job.controller.on_status(task_status("trial-0001", "TASK_FAILED"))
    assert job.state(1) == "RUNNING"
    job.controller.record_report(Report(1, {"accuracy": 0.8}, None, True, 1.0))
    job.status(1, "TASK_FINISHED")
    assert job.state(1) == "COMPLETED"
    assert len(job.controller.trials()) == 1  # counted once toward the budget
    reopened = job.reopened()
    try:
        assert reopened.trial(1).retries == 1
    finally:
        reopened.close()


def test_a_trial_lost_too_often_fails(make: Callable[..., Job]) -> None:
    job = make(max_trials=10, max_task_retries=1)
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.launch(1)
    job.status(1, "TASK_LOST")
    job.launch(1)
    job.status(1, "TASK_LOST", message="again")
    trial = job.trial(1)
    assert (trial.state, trial.retries) == ("FAILED", 1)
    assert trial.message.startswith("TASK_LOST: again")


def test_a_trial_running_past_its_timeout_is_recorded_timeout_and_killed(
        make: Callable[..., Job]) -> None:
    from dataclasses import replace

    job = Job(make(max_trials=10).db_path.parent / "t", replace(job_config(max_trials=10),
                                                                  trial_timeout=5.0))
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.controller.submit_trial(2, assignment(2), priority=0)
    job.launch(1)
    job.launch(2, running=False)  # launching: its clock has not started
    started = job.trial(1).started_at
    assert job.controller.expire_trials(now=started + 4.0) == []
    assert job.controller.expire_trials(now=started + 6.0) == [task_name(1)]
    trial = job.trial(1)
    assert (trial.state, trial.message) == ("TIMEOUT", "ran longer than --trial-timeout 5s")
    assert task_name(1) in job.controller.tasks.live_task_ids()  # killed, not yet gone
    job.status(1, "TASK_KILLED")
    assert job.state(1) == "TIMEOUT" and task_name(1) not in job.controller.tasks.live_task_ids()
    assert job.state(2) == "LAUNCHING"
    assert job.controller.expire_trials(now=started + 60.0) == []  # nothing else runs
    job.store.close()


def test_a_trial_that_reports_and_does_not_exit_is_killed_after_its_grace_and_completed(
        make: Callable[..., Job]) -> None:
    """A script that reports its final result and then hangs (a leftover non-daemon thread):
    past --trial-exit-grace the trial is COMPLETED with its result (AppCore is told, so its
    slot is refilled) and its task is killed; the kill's TASK_KILLED changes nothing."""
    from dataclasses import replace

    job = Job(make(max_trials=10).db_path.parent / "g", replace(job_config(max_trials=10),
                                                                  trial_exit_grace=2.0))
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.launch(1)
    job.controller.record_report(Report(1, {"accuracy": 0.8}, final=True))
    reported = time.time()
    assert job.controller.expire_trials(now=reported + 1.0) == []
    assert job.state(1) == "RUNNING"
    sequence = job.controller.events_after(0, timeout=0)[0][-1].sequence
    assert job.controller.expire_trials(now=reported + 3.0) == [task_name(1)]
    events, _ = job.controller.events_after(sequence, timeout=0)
    assert [e.trial.state for e in events] == [common_pb2.COMPLETED]
    assert events[0].trial.objective == 0.8
    job.status(1, "TASK_KILLED", message="Command terminated with signal Terminated")
    trial = job.trial(1)
    assert (trial.state, trial.objective, trial.retries) == ("COMPLETED", 0.8, 0)
    assert "--trial-exit-grace 2s" in trial.message
    assert task_name(1) not in job.controller.tasks.live_task_ids()
    assert job.controller.progress().failed == 0
    job.store.close()


def test_the_trial_timeout_kills_a_reported_trial_that_does_not_exit(
        make: Callable[..., Job]) -> None:
    """--trial-timeout bounds every trial: one whose final result is in and whose task
    outlives the timeout is killed and stays COMPLETED (not TIMEOUT), by default grace too."""
    from dataclasses import replace

    job = Job(make(max_trials=10).db_path.parent / "t", replace(job_config(max_trials=10),
                                                                  trial_timeout=5.0))
    assert job.controller.config.trial_exit_grace == 30.0  # the default
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.launch(1)
    job.controller.record_report(Report(1, {"accuracy": 0.8}, final=True))
    started = job.trial(1).started_at
    assert job.controller.expire_trials(now=started + 4.0) == []
    assert job.controller.expire_trials(now=started + 6.0) == [task_name(1)]
    job.status(1, "TASK_KILLED")
    trial = job.trial(1)
    assert (trial.state, trial.objective) == ("COMPLETED", 0.8)
    assert trial.message == "completed; its task ran longer than --trial-timeout 5s: killed"
    job.store.close()


def test_a_resumed_framework_kills_what_its_predecessor_ended_but_may_not_have_killed(
        make: Callable[..., Job]) -> None:
    """A framework that timed a trial out (or pruned or killed it) and died before its kill
    took effect: the record says the trial ended, but its task may run on. The next framework
    of the job kills it once, keeps its slot busy until it ends, and counts it as live (to
    reconcile); a task whose end is recorded is left alone."""
    from dataclasses import replace

    job = Job(make(max_trials=10).db_path.parent / "r", replace(job_config(max_trials=10),
                                                                  trial_timeout=5.0))
    for number in (1, 2, 3):
        job.controller.submit_trial(number, assignment(number), priority=0)
        trial = job.controller.trial_for_launch(number)
        assert trial is not None
        job.controller.trial_launched(number, task_name(number), AGENT,
                                      executor_id=f"{job.controller.config.job_id}-slot-{number}")
        job.status(number, "TASK_RUNNING")
    started = job.trial(1).started_at
    assert sorted(job.controller.expire_trials(now=started + 6.0)) == [
        task_name(1), task_name(2), task_name(3)]
    job.status(2, "TASK_KILLED")  # trial 2's kill took effect; 1's and 3's never came back
    resumed = JobController(job.controller.config, job.store, "tok")
    assert resumed.tasks.kills_on_resume() == [task_name(1), task_name(3)]
    assert resumed.tasks.kills_on_resume() == []  # once
    assert {task_name(1), task_name(3)} <= set(resumed.tasks.live_task_ids())
    assert task_name(2) not in resumed.tasks.live_task_ids()
    slot = f"{job.controller.config.job_id}-slot-"
    assert resumed.tasks.slot_tasks_in_flight() == {f"{slot}1": task_name(1),
                                                    f"{slot}3": task_name(3)}
    resumed.on_status(task_status(task_name(1), "TASK_KILLED"))
    assert task_name(1) not in resumed.tasks.live_task_ids()
    assert resumed.tasks.slot_tasks_in_flight() == {f"{slot}3": task_name(3)}
    assert {t.number: t.state for t in resumed.trials()} == {1: "TIMEOUT", 2: "TIMEOUT",
                                                             3: "TIMEOUT"}
    job.store.close()


def test_a_script_that_fails_is_not_retried(job: Job) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.launch(1)
    job.status(1, "TASK_FAILED", reason="REASON_COMMAND_EXECUTOR_FAILED")
    assert (job.state(1), job.trial(1).retries) == ("FAILED", 0)


def test_finished_with_other_metrics_only_fails_naming_the_objective(job: Job) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.launch(1)
    job.controller.record_report(Report(1, {"loss": 0.2, "val_loss": 0.3}, 0, False, 1.0))
    job.status(1, "TASK_FINISHED")
    trial = job.trial(1)
    assert trial.state == "FAILED"
    assert trial.message == ("the runner reported loss, val_loss but not the objective "
                             "'accuracy'")


def test_finished_without_reporting_fails_saying_how_to_report(job: Job) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.launch(1)
    job.status(1, "TASK_FINISHED")
    trial = job.trial(1)
    assert trial.state == "FAILED"
    assert trial.message == ("the runner exited without reporting a result (call "
                             "apprunner_sdk.report(accuracy=..., final=True))")
    assert job.store.trial(1).message == trial.message  # type: ignore[union-attr]


@pytest.mark.parametrize("state", ["TASK_FAILED", "TASK_LOST", "TASK_ERROR", "TASK_DROPPED",
                                   "TASK_GONE", "TASK_UNKNOWN"])
def test_failure_states_fail_the_trial_with_the_status_and_stderr(
        make: Callable[..., Job], state: str) -> None:
    job = make(max_trials=10, max_task_retries=0)  # a lost task is not launched again
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.launch(1)
    job.stderr = "Traceback ...\nZeroDivisionError: division by zero\n"
    job.status(1, state, reason="REASON_COMMAND_EXECUTOR_FAILED", message="Command exited 1")
    trial = job.trial(1)
    assert trial.state == "FAILED"
    assert trial.message == (f"{state} REASON_COMMAND_EXECUTOR_FAILED: Command exited 1; "
                             "stderr: Traceback ...\nZeroDivisionError: division by zero")
    assert job.tail_requests[-1]["state"] == state


def test_a_script_failure_without_a_reason_shows_its_message(
        make: Callable[..., Job]) -> None:
    """Mesos 1.11's command executor reports a command's non-zero exit or signal with no
    reason (``src/launcher/executor.cpp`` ``reaped``): the trial still says how it ended."""
    job = make(max_trials=10, max_task_retries=0)
    for number, message in ((1, "Command exited with status 1"),
                            (2, "Command terminated with signal Segmentation fault")):
        job.controller.submit_trial(number, assignment(number), priority=0)
        job.launch(number)
        job.stderr = "Traceback ...\nZeroDivisionError: division by zero\n"
        job.status(number, "TASK_FAILED", message=message, source="SOURCE_EXECUTOR")
        trial = job.trial(number)
        assert (trial.state, trial.retries) == ("FAILED", 0)
        assert trial.message == (f"TASK_FAILED: {message}; stderr: Traceback ...\n"
                                 "ZeroDivisionError: division by zero")


def test_failure_without_stderr_or_with_a_broken_reader(make: Callable[..., Job]) -> None:
    job = make(max_trials=10, max_task_retries=0)
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.controller.submit_trial(2, assignment(2), priority=0)
    job.launch(1)
    job.launch(2)
    job.status(1, "TASK_LOST", message="agent removed")
    assert job.trial(1).message == "TASK_LOST: agent removed"
    job.stderr = OSError("agent unreachable")  # the reader is best effort: adds nothing
    job.status(2, "TASK_FAILED")
    assert job.trial(2).message == "TASK_FAILED"


def test_killed_is_killed(job: Job) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.launch(1)
    job.status(1, "TASK_KILLED", message="killed by the operator")
    assert job.state(1) == "KILLED"
    assert job.trial(1).message == "TASK_KILLED: killed by the operator"


def test_a_terminal_trial_ignores_later_updates(job: Job) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.launch(1)
    job.controller.record_report(Report(1, {"accuracy": 0.5}, None, True, 1.0))
    job.status(1, "TASK_FINISHED")
    job.status(1, "TASK_LOST")  # a late duplicate
    job.status(1, "TASK_RUNNING")
    assert job.state(1) == "COMPLETED"
    assert [u["state"] for u in job.store.task_updates("trial-0001")][-2:] == [
        "TASK_LOST", "TASK_RUNNING"]  # still recorded as received


def test_status_of_an_unknown_task_is_recorded_and_changes_nothing(job: Job) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.controller.on_status(task_status("someone-else", "TASK_FAILED"))
    assert job.state(1) == "PENDING"
    assert job.store.task_updates("someone-else")[0]["state"] == "TASK_FAILED"


# -- AppCore's life -------------------------------------------------------------------------------


def test_appcore_attach_and_address(job: Job) -> None:
    task_id = job.controller.next_appcore_task_id()
    job.controller.appcore_launched(task_id, AGENT)
    assert job.controller.tasks.appcore_address() == ""
    job.controller.on_status(task_status(task_id, "TASK_RUNNING"))
    assert job.controller.tasks.appcore_address() == ""  # running, not attached yet
    job.controller.submit_trial(1, ASSIGN, priority=0)
    reply = job.controller.attach_appcore("agent1:31000")
    assert job.controller.tasks.appcore_address() == "agent1:31000"
    assert reply.spec == job.controller.config.search
    assert [t.number for t in reply.trials] == [1] and reply.sequence == 1
    run = job.store.appcore_runs()[0]
    assert (run["attempt"], run["task_id"], run["address"], run["state"]) == (
        1, "appcore-1", "agent1:31000", "ATTACHED")
    assert "appcore-1" in job.controller.tasks.live_task_ids()


def test_appcore_failure_asks_for_a_relaunch(make: Callable[..., Job]) -> None:
    job = make(max_appcore_restarts=2)
    job.controller.appcore_launched("appcore-1", AGENT)
    job.controller.attach_appcore("agent1:31000")
    calls = job.pending_calls
    job.controller.on_status(task_status("appcore-1", "TASK_FAILED", message="exit 1"))
    assert job.controller.outcome is None
    assert job.pending_calls == calls + 1  # the scheduler is woken to revive offers
    assert job.controller.tasks.appcore_address() == ""
    assert job.controller.launch_requests()[0].key == APPCORE_KEY
    assert job.controller.next_appcore_task_id() == "appcore-2"
    assert job.store.appcore_runs()[0]["state"] == "TASK_FAILED"
    assert job.store.appcore_runs()[0]["ended_at"] is not None

    job.controller.appcore_launched("appcore-2", AGENT)
    job.controller.on_status(task_status("appcore-1", "TASK_LOST"))  # the old one: ignored
    assert APPCORE_KEY not in [r.key for r in job.controller.launch_requests()]
    assert [r["task_id"] for r in job.store.appcore_runs()] == ["appcore-1", "appcore-2"]


def test_appcore_failing_beyond_its_restarts_ends_the_job_in_error(
        make: Callable[..., Job]) -> None:
    job = make(max_appcore_restarts=1)
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.controller.appcore_launched("appcore-1", AGENT)
    job.controller.on_status(task_status("appcore-1", "TASK_FAILED"))
    assert job.controller.outcome is None
    job.controller.appcore_launched("appcore-2", AGENT)
    job.stderr = "ImportError: no module named appcore"
    job.controller.on_status(task_status("appcore-2", "TASK_ERROR",
                                         reason="REASON_TASK_INVALID", message="bad"))
    outcome = job.controller.outcome
    assert outcome is not None and outcome[0] == framework_pb2.ERROR
    assert outcome[1] == ("AppCore failed 2 times; last: TASK_ERROR REASON_TASK_INVALID: bad; "
                          "stderr: ImportError: no module named appcore")
    assert job.controller.wait(0)
    assert job.controller.launch_requests() == []
    assert job.state(1) == "KILLED"  # pending trials die with the job
    assert job.store.get_meta(meta.OUTCOME) == "ERROR"


def test_appcore_whose_port_was_taken_launches_again_without_counting_a_failure(
        make: Callable[..., Job]) -> None:
    from disauto.framework._job.appcore import MAX_PORT_RETRIES

    job = make(max_appcore_restarts=0)  # a single real failure would end the job
    for attempt in range(1, MAX_PORT_RETRIES + 1):
        job.controller.appcore_launched(f"appcore-{attempt}", AGENT)
        job.controller.on_status(task_status(f"appcore-{attempt}", "TASK_FAILED",
                                             message="Command exited with status 75"))
        assert job.controller.outcome is None, attempt
        assert job.controller.launch_requests()[0].key == APPCORE_KEY
    # Past the bound, a taken port is a failure like any other.
    attempt = MAX_PORT_RETRIES + 1
    job.controller.appcore_launched(f"appcore-{attempt}", AGENT)
    job.controller.on_status(task_status(f"appcore-{attempt}", "TASK_FAILED",
                                         message="Command exited with status 75"))
    assert job.controller.outcome is not None
    assert job.controller.outcome[0] == framework_pb2.ERROR


def test_a_failed_over_framework_adopts_the_appcore_still_running(job: Job) -> None:
    job.controller.appcore_launched("appcore-1", AGENT)
    job.controller.attach_appcore("agent1:31000")
    # The framework dies; a new controller takes the same record over (da-job resume).
    resumed = JobController(job.controller.config, job.store, "tok")
    assert resumed.adopt_appcore()
    assert APPCORE_KEY not in [r.key for r in resumed.launch_requests()]
    assert resumed.attach_appcore("agent1:31000").spec.job_id == job.controller.config.job_id
    assert resumed.tasks.appcore_address() == "agent1:31000"
    # Reconciliation says it is gone after all: it is launched again, as any AppCore.
    resumed.on_status(task_status("appcore-1", "TASK_LOST"))
    assert resumed.launch_requests()[0].key == APPCORE_KEY
    assert resumed.next_appcore_task_id() == "appcore-2"


def test_nothing_to_adopt_when_appcore_had_ended(job: Job) -> None:
    job.controller.appcore_launched("appcore-1", AGENT)
    job.controller.on_status(task_status("appcore-1", "TASK_FAILED"))
    assert not JobController(job.controller.config, job.store, "tok").adopt_appcore()


def test_appcore_ending_after_the_job_is_not_relaunched(job: Job) -> None:
    job.controller.appcore_launched("appcore-1", AGENT)
    job.controller.attach_appcore("h:1")
    job.controller.finish(framework_pb2.BUDGET_SPENT, "done")
    calls = job.pending_calls
    job.controller.on_status(task_status("appcore-1", "TASK_FINISHED"))
    assert job.controller.outcome == (framework_pb2.BUDGET_SPENT, "done")
    assert job.pending_calls == calls
    assert job.controller.tasks.live_task_ids() == []


# -- the end of the job ---------------------------------------------------------------------------


def test_finish_kills_pending_trials_only_and_first_outcome_wins(job: Job) -> None:
    for number in (1, 2, 3):
        job.controller.submit_trial(number, assignment(number), priority=0)
    job.controller.appcore_launched("appcore-1", AGENT)
    job.launch(1)
    job.controller.finish(framework_pb2.TARGET_REACHED, "trial 1 reached accuracy=0.99")
    job.controller.finish(framework_pb2.STOPPED, "too late")
    assert job.controller.outcome == (framework_pb2.TARGET_REACHED,
                                      "trial 1 reached accuracy=0.99")
    assert [job.state(n) for n in (1, 2, 3)] == ["RUNNING", "KILLED", "KILLED"]
    assert job.trial(2).message == "the job ended before the trial ran"
    # The running trial and AppCore are left for the runtime to kill through Mesos.
    assert sorted(job.controller.tasks.live_task_ids()) == ["appcore-1", "trial-0001"]
    assert job.controller.wait(timeout=0)
    reopened = job.reopened()
    try:
        assert reopened.get_meta(meta.OUTCOME) == "TARGET_REACHED"
        assert reopened.get_meta(meta.OUTCOME_MESSAGE) == "trial 1 reached accuracy=0.99"
        assert reopened.get_meta(meta.ENDED_AT) is not None
        assert [t.state for t in reopened.trials()] == ["RUNNING", "KILLED", "KILLED"]
    finally:
        reopened.close()


def test_wait_times_out_while_the_job_runs(job: Job) -> None:
    started = time.monotonic()
    assert job.controller.wait(timeout=0.05) is False
    assert time.monotonic() - started >= 0.05


# -- reports --------------------------------------------------------------------------------------


def test_reports_are_recorded_before_returning(job: Job) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.launch(1)
    job.controller.record_report(Report(1, {"loss": 0.9, "accuracy": 0.4}, 0, False, 1.0))
    reopened = job.reopened()
    try:
        assert reopened.reports(1) == [{"trial": 1, "step": 0,
                                        "metrics": {"loss": 0.9, "accuracy": 0.4},
                                        "final": False, "elapsed_seconds": 1.0}]
        assert reopened.trial(1).objective == 0.4  # type: ignore[union-attr]
    finally:
        reopened.close()

    proto = job.controller.record_report(Report(1, {"accuracy": 0.8}, None, True, 2.5))
    assert proto.objective == 0.8 and proto.training_seconds == 2.5
    assert {m.name: m.value for m in proto.metrics} == {"loss": 0.9, "accuracy": 0.8}
    reopened = job.reopened()
    try:
        assert [r["final"] for r in reopened.reports(1)] == [False, True]
        stored = reopened.trial(1)
        assert stored is not None
        assert (stored.objective, stored.final_reported, stored.training_seconds) == (
            0.8, True, 2.5)
        assert stored.metrics == {"loss": 0.9, "accuracy": 0.8}
    finally:
        reopened.close()


@pytest.mark.parametrize("number, metrics, error, message", [
    (9, {"accuracy": 1.0}, NotFoundError, "trial 9 does not exist"),
    (1, {}, InvalidArgumentError, "a report needs at least one metric"),
    (1, {"accuracy": float("nan")}, InvalidArgumentError,
     "metric 'accuracy' must be finite, got nan"),
    (1, {"loss": float("inf")}, InvalidArgumentError, "metric 'loss' must be finite"),
    (1, {"": 1.0}, InvalidArgumentError, "a metric needs a name, got ''"),
])
def test_bad_reports_are_refused_and_not_recorded(job: Job, number: int,
                                                  metrics: dict[str, float],
                                                  error: type[Exception], message: str) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    with pytest.raises(error, match=message):
        job.controller.record_report(Report(number, metrics, None, False, 0.0))
    assert job.store.reports() == []


def test_a_trials_metrics_over_its_reports_are_bounded_as_a_reports(job: Job) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.controller.record_report(Report(1, {f"a{i}": 0.5 for i in range(200)}, 0, False, 1.0))
    with pytest.raises(InvalidArgumentError,
                       match="^trial 1 would have 257 metrics; at most 256 in a trial$"):
        job.controller.record_report(Report(1, {f"b{i}": 0.5 for i in range(57)}, 1, False,
                                            2.0))
    assert len(job.store.reports(1)) == 1 and len(job.trial(1).metrics) == 200
    job.controller.record_report(Report(1, {f"a{i}": 0.7 for i in range(200)}, 2, False, 3.0))
    assert len(job.trial(1).metrics) == 200  # the same names again: no more


def test_no_report_after_the_final_one(job: Job) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.controller.record_report(Report(1, {"accuracy": 0.5}, None, True, 1.0))
    with pytest.raises(FailedPreconditionError, match="trial 1 already reported its final"):
        job.controller.record_report(Report(1, {"accuracy": 0.9}, None, False, 2.0))
    assert job.trial(1).objective == 0.5 and len(job.store.reports(1)) == 1


# -- events and watching --------------------------------------------------------------------------


def test_events_follow_every_state_change_in_order(job: Job) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.controller.submit_trial(2, assignment(2), priority=0)
    job.launch(1)
    job.controller.record_report(Report(1, {"accuracy": 0.7}, None, True, 1.0))
    job.status(1, "TASK_FINISHED")
    events, ended = job.controller.events_after(0, timeout=0)
    assert not ended
    assert [e.sequence for e in events] == [1, 2, 3, 4, 5]
    # submitted 1, submitted 2, 1 launching, 1 running, 1 completed; each event carries the
    # trial as it is now, so a watcher that fell behind catches up with the latest state.
    assert [e.trial.number for e in events] == [1, 2, 1, 1, 1]
    assert events[-1].trial.state == common_pb2.COMPLETED
    assert events[1].trial.state == common_pb2.PENDING
    later, _ = job.controller.events_after(3, timeout=0)
    assert [e.sequence for e in later] == [4, 5]
    assert later[-1].trial.objective == 0.7


def test_events_after_waits_for_news_then_gives_up(job: Job) -> None:
    started = time.monotonic()
    events, ended = job.controller.events_after(0, timeout=0.1)
    assert (events, ended) == ([], False)
    assert time.monotonic() - started >= 0.09

    def submit_soon() -> None:
        time.sleep(0.05)
        job.controller.submit_trial(1, ASSIGN, priority=0)

    threading.Thread(target=submit_soon).start()
    started = time.monotonic()
    events, _ = job.controller.events_after(0, timeout=5.0)
    assert [e.trial.number for e in events] == [1]
    assert time.monotonic() - started < 2.0  # woken by the event, not the timeout


def test_watch_streams_until_the_job_ends(job: Job) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    seen: list[tuple[int, str]] = []

    def consume() -> None:
        for event in job.controller.watch(0, lambda: True):
            seen.append((event.sequence, common_pb2.TrialState.Name(event.trial.state)))

    watcher = threading.Thread(target=consume)
    watcher.start()
    job.controller.submit_trial(2, assignment(2), priority=0)
    job.controller.finish(framework_pb2.STOPPED, "stop")
    watcher.join(5.0)
    assert not watcher.is_alive()
    # Both submissions, then both pending trials killed by the end of the job.
    assert [s for s, _ in seen] == [1, 2, 3, 4]
    assert all(state == "KILLED" for _, state in seen[2:])


def test_watch_stops_when_the_caller_goes_away(job: Job) -> None:
    active = threading.Event()
    active.set()
    out: list[int] = []

    def consume() -> None:
        out.extend(e.sequence for e in job.controller.watch(0, active.is_set))

    watcher = threading.Thread(target=consume)
    watcher.start()
    job.controller.submit_trial(1, ASSIGN, priority=0)
    active.clear()
    watcher.join(5.0)
    assert not watcher.is_alive() and job.controller.outcome is None


# -- reading: best, progress, a restarted framework --------------------------------------------


def complete(job: Job, number: int, value: float) -> None:
    job.controller.submit_trial(number, assignment(number), priority=0)
    job.launch(number)
    job.controller.record_report(Report(number, {"accuracy": value}, None, True, float(number)))
    job.status(number, "TASK_FINISHED")


@pytest.mark.parametrize("direction, best", [(common_pb2.MAXIMIZE, 2),
                                             (common_pb2.MINIMIZE, 3)])
def test_best_trial_and_progress(make: Callable[..., Job], direction: int, best: int) -> None:
    job = make(direction=direction, max_trials=8)
    complete(job, 1, 0.5)
    complete(job, 2, 0.9)
    complete(job, 3, 0.1)
    complete(job, 4, 0.9)  # ties go to the earlier trial
    job.controller.submit_trial(5, assignment(5), priority=0)
    job.launch(5)
    job.controller.record_report(Report(5, {"accuracy": 5.0}, 0, False, 1.0))  # not completed
    job.status(5, "TASK_FAILED")
    job.controller.submit_trial(6, assignment(6), priority=0)
    job.launch(6)
    job.controller.submit_trial(7, assignment(7), priority=0)
    best_trial = job.controller.best_trial()
    assert best_trial is not None and best_trial.number == best
    progress = job.controller.progress()
    assert (progress.done, progress.running, progress.pending, progress.failed) == (4, 1, 1, 1)
    assert (progress.submitted, progress.budget) == (7, 8)
    assert progress.best is not None and progress.best.number == best
    assert progress.elapsed >= 0


def test_no_best_before_a_trial_completes(job: Job) -> None:
    assert job.controller.best_trial() is None
    assert job.controller.progress().best is None


def test_a_restarted_controller_continues_from_the_store(job: Job) -> None:
    job.controller.submit_trial(1, ASSIGN, priority=0)
    job.controller.submit_trial(2, assignment(2), priority=0)
    job.launch(1)
    job.controller.appcore_launched("appcore-1", AGENT)
    job.controller.on_status(task_status("appcore-1", "TASK_FAILED"))
    job.controller.appcore_launched("appcore-2", AGENT)

    again = JobController(job.controller.config, job.store, "tok")
    assert [(t.number, t.state) for t in again.trials()] == [(1, "RUNNING"), (2, "PENDING")]
    assert again.next_appcore_task_id() == "appcore-3"
    again.on_status(task_status("trial-0001", "TASK_FAILED", message="agent lost"))
    assert {t.number: t.state for t in again.trials()}[1] == "FAILED"
    with pytest.raises(AlreadyExistsError):
        again.submit_trial(2, assignment(3), priority=0)


def test_a_resumed_jobs_progress_counts_from_the_jobs_start(tmp_path: Path) -> None:
    first = Job(tmp_path / "job", job_config(max_trials=10))
    first.store.set_meta(meta.STARTED_AT, time.time() - 600)  # started 10 minutes ago
    first.controller.submit_trial(1, ASSIGN, priority=0)  # waits since then, at 00:00
    first.store.update_trial(1, created_at=time.time() - 590)
    first.store.close()
    resumed = Job(tmp_path / "job", job_config(max_trials=10))  # a framework of now
    try:
        progress = resumed.controller.progress()
        assert 599 <= progress.elapsed <= 630 and 589 <= progress.waiting <= 620
        assert 9 <= progress.elapsed - progress.waiting <= 11  # since [00:10], not [-9:50]
    finally:
        resumed.store.close()
