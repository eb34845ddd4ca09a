"""Network partitions (the framework is PARTITION_AWARE): a trial whose agent Mesos marks
unreachable waits for it up to --unreachable-timeout, goes on if its task comes back, runs again
(same number and assignment, a new task id, counted once) past the bound, and its old task is
killed if it ever shows up alive. Fed as Mesos 1.11 sends it, checked on the record."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
import time

import pytest

from disauto.common.report import Report
from disauto.framework._errors import FailedPreconditionError
from disauto.framework._job.progress import unreachable_note
from disauto.protos import framework_pb2
from tests.framework import mesos_1_11 as mesos
from tests.framework.cluster_setup import Cluster


BOUND = 300.0


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path, parallelism=1, unreachable_timeout=BOUND)
    yield made
    made.store.close()


def running_trial(job: Cluster, agent: str = "a2") -> str:
    """AppCore on a1, trial 1 running on ``agent``: its task id."""
    job.start_appcore(mesos.offer("O1", "a1", "*", mesos.unreserved("*", cpus=0.5,
                                                                    mem=256.0)))
    job.submit(1)
    (task,) = job.offers(mesos.offer("O2", agent, "*", mesos.unreserved("*")))
    task_id = task["task_id"]["value"]
    job.update(mesos.status(task_id, "TASK_RUNNING", agent))
    job.driver.clear()
    return task_id


def final(job: Cluster, value: float = 0.9) -> None:
    job.controller.record_report(Report(1, {"accuracy": value}, final=True))


def test_an_unreachable_trial_keeps_running_and_goes_on_when_its_task_comes_back(
        job: Cluster) -> None:
    task = running_trial(job)
    since = time.time() - 80.0
    job.update(mesos.unreachable(task, "a2", since))
    recorded = job.trial(1)
    assert recorded.state == "RUNNING" and recorded.task_id == task
    assert recorded.unreachable_since == pytest.approx(since)
    assert recorded.message.startswith("its agent has been unreachable since "
                                       f"{time.strftime('%H:%M:%S', time.localtime(since))}")
    assert "--unreachable-timeout 5m" in recorded.message
    assert job.driver.calls == [] and job.killed == []  # the master's: no uuid, no ack
    assert task in job.controller.tasks.live_task_ids()  # still the job's, killed at its end
    # The periodic reconciliation asks for it; the master answers it is still unreachable.
    assert job.controller.unreachable_tasks() == [(task, "a2")]
    job.update(mesos.reconciled_unreachable(task, "a2", since))
    assert job.trial(1).unreachable_since == pytest.approx(since)
    assert job.controller.expire_unreachable(now=since + BOUND - 1).abandoned == ()
    # The partition heals: the master forwards the re-registered agent's task state.
    job.update(mesos.back(task, "a2"))
    recorded = job.trial(1)
    assert recorded.state == "RUNNING" and recorded.unreachable_since is None
    assert recorded.message.startswith("its agent came back after ")
    assert job.controller.unreachable_tasks() == []
    final(job)
    job.update(mesos.status(task, "TASK_FINISHED", "a2"))
    assert job.trial(1).state == "COMPLETED" and job.trial(1).retries == 0


def test_past_the_bound_the_trial_runs_again_and_its_old_task_is_killed_when_it_returns(
        job: Cluster) -> None:
    task = running_trial(job)
    since = time.time() - BOUND - 5.0
    job.update(mesos.unreachable(task, "a2", since))
    effects = job.controller.expire_unreachable()
    assert effects.abandoned == (task,) and effects.pending
    job.scheduler.abandon(effects.abandoned)
    assert job.driver.of("kill") == [{"value": task}]
    recorded = job.trial(1)
    assert recorded.state == "PENDING" and recorded.retries == 1 and recorded.task_id == ""
    assert recorded.message.startswith("launched again: its agent was unreachable for longer "
                                       "than --unreachable-timeout 5m (since ")
    assert len(job.controller.trials()) == 1  # counted once toward the budget
    assert job.controller.unreachable_tasks() == [(task, "a2")]  # still reconciled
    assert job.controller.expire_unreachable().abandoned == ()  # given up on once
    (again,) = job.offers(mesos.offer("O3", "a3", "*", mesos.unreserved("*")))
    assert again["task_id"]["value"] == "trial-0001.1" and again["name"] == "trial-0001"
    job.update(mesos.status("trial-0001.1", "TASK_RUNNING", "a3"))
    # The partition heals: the old task is alive. Never two live tasks of one trial.
    job.driver.clear()
    job.update(mesos.back(task, "a2"))
    assert job.driver.calls[0] == ("kill", {"value": task})
    assert job.trial(1).task_id == "trial-0001.1" and job.trial(1).state == "RUNNING"
    job.update(mesos.status(task, "TASK_KILLED", "a2"))
    assert job.controller.unreachable_tasks() == []  # seen to end: forgotten
    final(job)
    job.update(mesos.status("trial-0001.1", "TASK_FINISHED", "a3"))
    assert job.trial(1).state == "COMPLETED"


def test_a_report_of_the_old_task_is_the_trials_result_once(job: Cluster) -> None:
    """The partition cut the agent off the master only: the old task reports through AppCore.
    Reports are the trial's (its number), so its final report is recorded once and is the
    trial's result; the new launch's is refused."""
    task = running_trial(job)
    job.update(mesos.unreachable(task, "a2", time.time() - BOUND - 5.0))
    job.scheduler.abandon(job.controller.expire_unreachable().abandoned)
    job.offers(mesos.offer("O3", "a3", "*", mesos.unreserved("*")))
    final(job, 0.8)  # from the old task
    with pytest.raises(FailedPreconditionError, match="already reported its final result"):
        final(job, 0.7)  # from the new one
    assert [r["metrics"] for r in job.store.reports(1)] == [{"accuracy": 0.8}]
    job.update(mesos.status("trial-0001.1", "TASK_KILLED", "a3"))
    assert job.trial(1).state == "COMPLETED" and job.trial(1).objective == 0.8


def test_an_old_tasks_final_report_completes_a_trial_still_waiting_to_run_again(
        job: Cluster) -> None:
    task = running_trial(job)
    job.update(mesos.unreachable(task, "a2", time.time() - BOUND - 5.0))
    job.controller.expire_unreachable()
    assert job.trial(1).state == "PENDING"
    final(job)
    assert job.trial(1).state == "COMPLETED"
    assert job.offers(mesos.offer("O3", "a3", "*", mesos.unreserved("*"))) == []


def test_a_runner_that_still_reports_is_waited_for_and_a_result_completes_it(
        job: Cluster) -> None:
    task = running_trial(job)
    since = time.time() - BOUND - 5.0
    job.update(mesos.unreachable(task, "a2", since))
    job.controller.record_report(Report(1, {"accuracy": 0.5}, step=1))  # alive
    assert job.controller.expire_unreachable().abandoned == ()
    final(job)
    effects = job.controller.expire_unreachable(now=time.time() + BOUND + 1)
    assert effects.abandoned == (task,) and not effects.pending
    assert job.trial(1).state == "COMPLETED"
    assert job.trial(1).message.startswith("completed; then its agent was unreachable")


def test_a_script_that_failed_while_its_agent_was_cut_off_is_a_failure_not_a_loss(
        job: Cluster) -> None:
    """The script exited non-zero during the partition: the re-registered agent's TASK_FAILED
    reaches the framework first as the master's update, with REASON_AGENT_REREGISTERED (Mesos
    1.11 ``Master::__reregisterSlave``). It is the script's failure, kept with its message, not
    a lost task to run again; the agent's own update of it changes nothing after."""
    task = running_trial(job)
    job.update(mesos.unreachable(task, "a2", time.time() - 80.0))
    job.update(mesos.back(task, "a2", "TASK_FAILED"))
    recorded = job.trial(1)
    assert (recorded.state, recorded.retries, recorded.task_id) == ("FAILED", 0, task)
    assert recorded.message == ("TASK_FAILED REASON_AGENT_REREGISTERED: Unreachable agent "
                                "re-reregistered")
    assert recorded.unreachable_since is None
    assert job.offers(mesos.offer("O3", "a3", "*", mesos.unreserved("*"))) == []
    job.update(mesos.status(task, "TASK_FAILED", "a2", reason="REASON_COMMAND_EXECUTOR_FAILED",
                            message="Command exited with status 3"))
    assert job.trial(1).state == "FAILED" and job.trial(1).retries == 0
    assert task not in job.controller.tasks.live_task_ids()


def test_a_script_that_finished_while_its_agent_was_cut_off_completes_its_trial(
        job: Cluster) -> None:
    task = running_trial(job)
    job.update(mesos.unreachable(task, "a2", time.time() - 80.0))
    final(job)  # the runner reached AppCore; only the agent was cut off from the master
    job.update(mesos.back(task, "a2", "TASK_FINISHED"))
    assert job.trial(1).state == "COMPLETED" and job.trial(1).retries == 0


def test_an_unreachable_trial_whose_retries_are_spent_fails(tmp_path: Path) -> None:
    job = Cluster(tmp_path, parallelism=1, max_task_retries=0)
    try:
        task = running_trial(job)
        job.update(mesos.unreachable(task, "a2", time.time() - 400.0))
        job.controller.expire_unreachable()
        recorded = job.trial(1)
        assert recorded.state == "FAILED"
        assert "(max_task_retries 0)" in recorded.message
    finally:
        job.store.close()


def test_the_job_ending_ends_an_unreachable_trial_without_waiting_for_its_task(
        job: Cluster) -> None:
    task = running_trial(job)
    job.update(mesos.unreachable(task, "a2", time.time() - 10.0))
    job.controller.finish(framework_pb2.STOPPED, "stopped by the user")
    recorded = job.trial(1)
    assert recorded.state == "KILLED" and recorded.unreachable_since is None
    assert recorded.message.startswith("the job ended while its agent was unreachable")
    assert task not in job.controller.tasks.live_task_ids()


def test_appcore_on_an_unreachable_agent_is_relaunched_only_once_it_is_silent(
        job: Cluster) -> None:
    job.start_appcore(mesos.offer("O1", "a1", "*", mesos.unreserved("*")))
    job.update(mesos.status("appcore-1", "TASK_RUNNING", "a1"))
    since = time.time() - BOUND - 5.0
    job.update(mesos.unreachable("appcore-1", "a1", since))
    assert job.controller.unreachable_tasks() == [("appcore-1", "a1")]
    # It attached just now (the partition is between its agent and the master only).
    assert job.controller.expire_unreachable().abandoned == ()
    assert job.controller.tasks.appcore_address()
    effects = job.controller.expire_unreachable(now=time.time() + BOUND + 1)
    assert effects.abandoned == ("appcore-1",) and effects.pending
    assert [r.key for r in job.controller.launch_requests()] == ["appcore"]
    assert job.store.appcore_runs()[-1]["state"] == "TASK_UNREACHABLE"
    (task,) = job.offers(mesos.offer("O2", "a2", "*", mesos.unreserved("*")))
    assert task["task_id"]["value"] == "appcore-2"
    job.driver.clear()
    job.update(mesos.back("appcore-1", "a1"))
    assert ("kill", {"value": "appcore-1"}) in job.driver.calls


def test_the_progress_line_names_the_unreachable_trials(job: Cluster) -> None:
    task = running_trial(job)
    since = time.mktime((2026, 11, 26, 14, 3, 7, 0, 0, -1))
    job.update(mesos.unreachable(task, "a2", since))
    assert unreachable_note(job.controller.trials(), BOUND) == (
        "trial-0001 is unreachable since 14:03:07 (runs again from 14:08:07, "
        "--unreachable-timeout 5m)")
    assert unreachable_note([], BOUND) == ""


def test_a_warm_slot_lost_with_its_agent_is_forgotten_and_shut_down_if_it_returns(
        tmp_path: Path) -> None:
    job = Cluster(tmp_path, warm=True, parallelism=1)
    try:
        job.start_appcore(mesos.offer("O1", "a1", "*", mesos.unreserved("*", cpus=0.5,
                                                                        mem=256.0)))
        job.submit(1)
        (task,) = job.offers(mesos.offer("O2", "a2", "*", mesos.unreserved("*")))
        slot = task["executor"]["executor_id"]["value"]
        job.update(mesos.status("trial-0001", "TASK_RUNNING", "a2", executor=slot))
        job.update(mesos.unreachable("trial-0001", "a2", time.time() - 400.0))
        job.scheduler.abandon(job.controller.expire_unreachable().abandoned)
        assert job.scheduler.slots is not None and not job.scheduler.slots.holds(slot)
        job.driver.clear()
        job.update({**mesos.back("trial-0001", "a2"), "executor_id": {"value": slot}})
        assert ("kill", {"value": "trial-0001"}) in job.driver.calls
        (shutdown,) = job.driver.of("shutdown")
        assert shutdown["shutdown"] == {"executor_id": {"value": slot},
                                        "agent_id": {"value": "a2"}}
    finally:
        job.store.close()
