"""Agents scheduled for maintenance (Mesos maintenance primitives, apache/mesos
docs/maintenance.md): no new task where the unavailability falls within the time a trial may
take, running trials finish, inverse offers declined while the job has tasks there and
accepted once it has none."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
import time

import pytest

from disauto.framework._maintenance import INVERSE_REFUSE_SECONDS
from disauto.framework._maintenance import REFUSE_SECONDS
from disauto.framework._maintenance import Unavailability
from disauto.framework._maintenance import refuse_seconds
from tests.framework import mesos_1_11 as mesos
from tests.framework.cluster_setup import Cluster


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path, parallelism=2)
    yield made
    made.store.close()


def with_appcore(job: Cluster) -> None:
    job.start_appcore(mesos.offer("O1", "a1", "*", mesos.unreserved("*", cpus=0.5,
                                                                    mem=256.0)))


def draining(offer_id: str, agent: str, starts_in: float,
             duration: float | None = 3600.0) -> dict[str, object]:
    """An offer with room for one trial of an agent scheduled for maintenance."""
    return mesos.offer(offer_id, agent, "*", mesos.unreserved("*", cpus=1.0, mem=512.0),
                       unavailability=mesos.unavailability(time.time() + starts_in, duration))


def test_no_trial_starts_on_an_agent_whose_maintenance_is_within_the_horizon(
        job: Cluster) -> None:
    with_appcore(job)
    job.submit(1)
    tasks = job.offers(draining("O2", "a2", starts_in=600.0),
                       mesos.offer("O3", "a3", "*", mesos.unreserved("*")))
    assert [t["agent_id"]["value"] for t in tasks] == ["a3"]
    assert ("decline", ([{"value": "O2"}], {"refuse_seconds": REFUSE_SECONDS})) \
        in job.driver.calls
    job.submit(2)
    assert job.offers(draining("O4", "a2", starts_in=600.0)) == []
    assert job.trial(2).state == "PENDING"


def test_maintenance_beyond_the_horizon_or_past_does_not_keep_trials_off(job: Cluster) -> None:
    with_appcore(job)
    job.submit(1, 2)
    tasks = job.offers(draining("O2", "a2", starts_in=2 * 3600.0),  # after an hour
                       draining("O3", "a3", starts_in=-7200.0, duration=3600.0))  # over
    assert sorted(t["agent_id"]["value"] for t in tasks) == ["a2", "a3"]


def test_the_horizon_is_the_trial_timeout_when_there_is_one(tmp_path: Path) -> None:
    job = Cluster(tmp_path, parallelism=2, trial_timeout=600.0)
    try:
        with_appcore(job)
        job.submit(1, 2)
        tasks = job.offers(draining("O2", "a2", starts_in=1800.0),  # after the trial's end
                           draining("O3", "a3", starts_in=300.0))  # before it
        assert [t["agent_id"]["value"] for t in tasks] == ["a2"]
    finally:
        job.store.close()


def test_appcore_does_not_start_on_an_agent_about_to_go_either(job: Cluster) -> None:
    job.offers(draining("O1", "a1", starts_in=60.0, duration=None))
    assert job.driver.launched() == []
    assert job.controller.tasks.appcore_task_id() == ""


def test_an_offer_kept_off_a_window_that_ends_soon_is_declined_until_then() -> None:
    now = time.time()
    assert refuse_seconds(Unavailability(now - 100.0, now + 20.0), now) == pytest.approx(20.0)
    assert refuse_seconds(Unavailability(now + 10.0, None), now) == REFUSE_SECONDS
    assert Unavailability.read({"start": {"nanoseconds": "x"}}) is None


def test_an_inverse_offer_is_declined_while_a_trial_runs_there_then_accepted(
        job: Cluster) -> None:
    with_appcore(job)
    job.submit(1)
    (task,) = job.offers(mesos.offer("O2", "a2", "*", mesos.unreserved("*")))
    job.update(mesos.status("trial-0001", "TASK_RUNNING", "a2"))
    job.driver.clear()
    inverse = mesos.inverse_offer("I1", "a2", time.time() + 600.0, 3600.0)
    job.scheduler.inverseOffers(job.driver, [inverse])
    assert job.driver.calls == [("decline_inverse", ([{"value": "I1"}],
                                                     {"refuse_seconds": INVERSE_REFUSE_SECONDS}))]
    assert job.trial(1).state == "RUNNING" and job.killed == []  # it finishes
    job.update(mesos.status("trial-0001", "TASK_FINISHED", "a2"))
    job.driver.clear()
    job.scheduler.inverseOffers(job.driver, [mesos.inverse_offer("I2", "a2",
                                                                 time.time() + 500.0)])
    assert job.driver.calls == [("accept_inverse", ([{"value": "I2"}], None))]


def test_idle_warm_slots_leave_an_agent_scheduled_for_maintenance(tmp_path: Path) -> None:
    job = Cluster(tmp_path, warm=True, parallelism=1)
    try:
        with_appcore(job)
        job.submit(1)
        (task,) = job.offers(mesos.offer("O2", "a2", "*", mesos.unreserved("*")))
        slot = task["executor"]["executor_id"]["value"]
        job.update(mesos.status("trial-0001", "TASK_FINISHED", "a2", executor=slot))
        job.driver.clear()
        job.scheduler.inverseOffers(job.driver, [mesos.inverse_offer("I1", "a2",
                                                                     time.time() + 60.0)])
        (shutdown,) = job.driver.of("shutdown")
        assert shutdown["shutdown"]["executor_id"] == {"value": slot}
        assert job.driver.of("accept_inverse") == [([{"value": "I1"}], None)]
    finally:
        job.store.close()
