"""Agents the operator takes away: a drained agent's tasks (TASK_KILLING, then TASK_KILLED with
REASON_AGENT_DRAINING), a gone agent's (TASK_GONE_BY_OPERATOR), a launch refused by a draining
agent (TASK_LOST, REASON_AGENT_DRAINING). Their trials run again as lost ones, not failures,
not toward max_task_retries, and the record says why."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from disauto.common.report import Report
from tests.framework import mesos_1_11 as mesos
from tests.framework.cluster_setup import Cluster


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path, parallelism=1, max_task_retries=0, max_appcore_restarts=0)
    yield made
    made.store.close()


def running_trial(job: Cluster) -> str:
    job.start_appcore(mesos.offer("O1", "a1", "*", mesos.unreserved("*", cpus=0.5,
                                                                    mem=256.0)))
    job.submit(1)
    (task,) = job.offers(mesos.offer("O2", "a2", "*", mesos.unreserved("*")))
    job.update(mesos.status(task["task_id"]["value"], "TASK_RUNNING", "a2"))
    return str(task["task_id"]["value"])


EVICTIONS: list[tuple[str, dict[str, Any]]] = [
    ("drained", {"state": "TASK_KILLED", "reason": "REASON_AGENT_DRAINING",
                 "source": "SOURCE_EXECUTOR", "message": "Command terminated with signal 15"}),
    ("gone", {"state": "TASK_GONE_BY_OPERATOR", "reason": "REASON_AGENT_REMOVED_BY_OPERATOR",
              "source": "SOURCE_MASTER", "message": "Agent a2 marked gone"}),
    ("refused by a draining agent", {"state": "TASK_LOST", "reason": "REASON_AGENT_DRAINING",
                                     "source": "SOURCE_AGENT",
                                     "message": "Agent is draining"}),
]


@pytest.mark.parametrize(("why", "end"), EVICTIONS, ids=[why for why, _ in EVICTIONS])
def test_an_evicted_trial_runs_again_even_without_retries_left(
        job: Cluster, why: str, end: dict[str, Any]) -> None:
    task = running_trial(job)
    job.update(mesos.status(task, "TASK_KILLING", "a2", reason="REASON_AGENT_DRAINING",
                            source="SOURCE_AGENT"))
    assert job.trial(1).state == "RUNNING"  # TASK_KILLING is not an end
    job.update(mesos.status(task, end["state"], "a2", reason=end["reason"],
                            source=end["source"], message=end["message"]))
    recorded = job.trial(1)
    assert recorded.state == "PENDING", why
    assert (recorded.retries, recorded.evictions) == (1, 1)
    assert recorded.message.startswith(f"launched again after {end['state']} {end['reason']}")
    assert "taken away by the cluster's operator" in recorded.message
    assert job.controller.progress().failed == 0
    (again,) = job.offers(mesos.offer("O3", "a3", "*", mesos.unreserved("*")))
    assert again["task_id"]["value"] == "trial-0001.1"
    assert len(job.controller.trials()) == 1  # the same trial: the budget counts it once
    # The history says why: each launch's statuses are in the record.
    assert [u["reason"] for u in job.store.task_updates(task)][-1] == end["reason"]


def test_an_eviction_does_not_use_up_the_retries_of_real_losses(tmp_path: Path) -> None:
    job = Cluster(tmp_path, parallelism=1, max_task_retries=1)
    try:
        task = running_trial(job)
        job.update(mesos.status(task, "TASK_KILLED", "a2", reason="REASON_AGENT_DRAINING"))
        job.offers(mesos.offer("O3", "a3", "*", mesos.unreserved("*")))
        job.update(mesos.status("trial-0001.1", "TASK_LOST", "a3",
                                reason="REASON_AGENT_REMOVED", source="SOURCE_MASTER"))
        assert job.trial(1).state == "PENDING" and job.trial(1).retries == 2
        job.offers(mesos.offer("O4", "a4", "*", mesos.unreserved("*")))
        job.update(mesos.status("trial-0001.2", "TASK_LOST", "a4",
                                reason="REASON_AGENT_REMOVED", source="SOURCE_MASTER"))
        assert job.trial(1).state == "FAILED"  # the second real loss is past max_task_retries
    finally:
        job.store.close()


def test_a_drained_appcore_is_launched_again_without_counting_a_failure(job: Cluster) -> None:
    job.start_appcore(mesos.offer("O1", "a1", "*", mesos.unreserved("*")))
    job.update(mesos.status("appcore-1", "TASK_KILLED", "a1", reason="REASON_AGENT_DRAINING"))
    assert job.controller.outcome is None  # max_appcore_restarts 0, yet no failure
    (task,) = job.offers(mesos.offer("O2", "a2", "*", mesos.unreserved("*")))
    assert task["task_id"]["value"] == "appcore-2"


def test_a_finished_task_of_a_re_registered_agent_is_not_lost(job: Cluster) -> None:
    task = running_trial(job)
    job.controller.record_report(Report(1, {"accuracy": 0.9}, final=True))
    job.update(mesos.back(task, "a2", state="TASK_FINISHED"))
    assert job.trial(1).state == "COMPLETED" and job.trial(1).retries == 0


def test_a_failed_task_with_a_lost_reason_is_still_a_loss(tmp_path: Path) -> None:
    job = Cluster(tmp_path, parallelism=1)
    try:
        task = running_trial(job)
        job.update(mesos.status(task, "TASK_FAILED", "a2", reason="REASON_AGENT_RESTARTED",
                                source="SOURCE_AGENT"))
        assert job.trial(1).state == "PENDING" and job.trial(1).evictions == 0
    finally:
        job.store.close()


GONE_AT_KILL_START = {"reason": "REASON_AGENT_DRAINING", "source": "SOURCE_EXECUTOR",
                      "message": ""}
"""A drain with ``mark_gone`` on Mesos 1.11 (``src/slave/slave.cpp`` ``Slave::statusUpdate``):
the TASK_KILLING of a partition-aware framework's task arrives as TASK_GONE_BY_OPERATOR, while
its process still has its grace period; the TASK_KILLED at its end may follow, as
TASK_GONE_BY_OPERATOR again (or TASK_KILLED from an agent that is not told to mark it gone)."""


@pytest.mark.parametrize("later", ["TASK_GONE_BY_OPERATOR", "TASK_KILLED"])
@pytest.mark.parametrize("relaunched_first", [False, True], ids=["pending", "relaunched"])
def test_a_task_gone_at_its_kill_start_then_again_counts_the_trial_once(
        job: Cluster, later: str, relaunched_first: bool) -> None:
    task = running_trial(job)
    job.update(mesos.status(task, "TASK_GONE_BY_OPERATOR", "a2", **GONE_AT_KILL_START))
    assert job.trial(1).state == "PENDING"
    again: list[dict[str, Any]] = []
    if relaunched_first:  # the new try runs while the old one runs out its grace period
        (launched,) = job.offers(mesos.offer("O3", "a3", "*", mesos.unreserved("*")))
        again.append(launched)
        job.update(mesos.status("trial-0001.1", "TASK_RUNNING", "a3"))
    job.update(mesos.status(task, later, "a2", reason="REASON_AGENT_DRAINING",
                            source="SOURCE_EXECUTOR",
                            message="Command terminated with signal Killed"))
    if not relaunched_first:
        again.extend(job.offers(mesos.offer("O3", "a3", "*", mesos.unreserved("*"))))
        job.update(mesos.status("trial-0001.1", "TASK_RUNNING", "a3"))
    assert [t["task_id"]["value"] for t in again] == ["trial-0001.1"]
    recorded = job.trial(1)
    assert (recorded.state, recorded.task_id) == ("RUNNING", "trial-0001.1")
    assert (recorded.retries, recorded.evictions) == (1, 1)
    assert [t["task_id"] for t in recorded.tries] == [task]  # one earlier try, not two
    assert len(job.controller.trials()) == 1
    progress = job.controller.progress()
    assert (progress.failed, progress.running) == (0, 1)
    assert job.killed == []  # the old task ended: nothing to kill, the new one untouched
    job.controller.record_report(Report(1, {"accuracy": 0.9}, final=True))
    job.update(mesos.status("trial-0001.1", "TASK_FINISHED", "a3"))
    assert job.trial(1).state == "COMPLETED" and job.trial(1).retries == 1


def test_an_appcore_gone_at_its_kill_start_then_again_is_launched_once(job: Cluster) -> None:
    job.start_appcore(mesos.offer("O1", "a1", "*", mesos.unreserved("*")))
    job.update(mesos.status("appcore-1", "TASK_GONE_BY_OPERATOR", "a1", **GONE_AT_KILL_START))
    job.update(mesos.status("appcore-1", "TASK_GONE_BY_OPERATOR", "a1",
                            reason="REASON_AGENT_DRAINING"))
    assert job.controller.outcome is None
    (task,) = job.offers(mesos.offer("O2", "a2", "*", mesos.unreserved("*")))
    assert task["task_id"]["value"] == "appcore-2"
    job.update(mesos.status("appcore-1", "TASK_KILLED", "a1", reason="REASON_AGENT_DRAINING"))
    assert job.offers(mesos.offer("O3", "a3", "*", mesos.unreserved("*"))) == []
    assert job.controller.outcome is None
