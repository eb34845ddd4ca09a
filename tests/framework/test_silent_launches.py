"""A launch Mesos never answers (its ACCEPT lost on the way to a busy master) is reconciled
after ``SILENT_SECONDS``; the master's answer for a task it does not know (TASK_GONE, Mesos
1.11 ``Master::_reconcileTasks`` case 3) runs the trial again, and the first launch is killed
if it shows up after all. Fed as Mesos 1.11 sends it, checked on the record."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from disauto.framework._job import silence
from disauto.framework._job.silence import SilentLaunches
from tests.framework import mesos_1_11 as mesos
from tests.framework.cluster_setup import Cluster


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path, parallelism=1)
    yield made
    made.store.close()


def gone(task_id: str, agent: str) -> dict[str, object]:
    """The master's answer to reconciling a task its registered agent does not know."""
    return mesos.status(task_id, "TASK_GONE", agent, reason="REASON_RECONCILIATION",
                        message="Reconciliation: Task is unknown to the agent",
                        source="SOURCE_MASTER", reliable=False)


def test_a_launch_is_silent_until_its_first_status_and_reconciled_after_the_bound() -> None:
    now = [100.0]
    seen = SilentLaunches(clock=lambda: now[0])
    seen.launched("trial-0001", "a1")
    seen.launched("appcore-1", "a2")
    now[0] += silence.SILENT_SECONDS - 1
    assert seen.silent() == []  # an ACCEPT may take a while on a busy master
    seen.status_heard("appcore-1")
    now[0] += 1
    assert seen.silent() == [("trial-0001", "a1")]
    assert seen.silent() == [("trial-0001", "a1")]  # asked again until Mesos answers
    seen.status_heard("trial-0001")
    assert seen.silent() == []


def test_a_trial_whose_launch_mesos_never_saw_runs_again_and_the_late_task_is_killed(
        job: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    job.start_appcore(mesos.offer("O1", "a1", "*", mesos.unreserved("*", cpus=0.5, mem=256.0)))
    job.update(mesos.status("appcore-1", "TASK_RUNNING", "a1"))
    job.submit(1)
    (task,) = job.offers(mesos.offer("O2", "a2", "*", mesos.unreserved("*")))
    first = task["task_id"]["value"]
    monkeypatch.setattr(silence, "SILENT_SECONDS", 0.0)  # as if a minute went by
    assert job.controller.silent_launches() == [(first, "a2")]  # AppCore was heard of
    job.scheduler.reconcile(job.controller.silent_launches())
    (call,) = job.driver.of("reconcile")
    assert call["reconcile"]["tasks"] == [{"task_id": {"value": first},
                                           "agent_id": {"value": "a2"}}]
    job.update(gone(first, "a2"))
    assert job.controller.silent_launches() == []
    recorded = job.trial(1)
    assert (recorded.state, recorded.retries, recorded.task_id) == ("PENDING", 1, "")
    (lost,) = recorded.tries
    assert lost["outcome"] == "lost" and lost["task_id"] == first
    # It runs again under a new task id; the first launch, arriving late, is killed.
    (again,) = job.offers(mesos.offer("O3", "a3", "*", mesos.unreserved("*")))
    assert again["task_id"]["value"] != first
    job.update(mesos.status(first, "TASK_RUNNING", "a2"))
    assert [call for name, call in job.driver.calls if name == "kill"] == [{"value": first}]
    assert job.trial(1).task_id == again["task_id"]["value"]
