"""Resources reserved for the job's roles: read from Mesos 1.11 offers, used by the policy, and
answered with each resource's reservation and the offer's ``allocation_info``, as
``src/master/validation.cpp`` checks a MULTI_ROLE framework's tasks and new executors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from disauto.common.resources import Resources
from disauto.framework import _meta as meta
from disauto.framework._offer_claims import OfferClaims
from disauto.framework._offers import OfferView
from tests.framework import mesos_1_11 as mesos
from tests.framework.cluster_setup import Cluster


def gpu_offer(offer_id: str = "O2", agent: str = "gpu1", role: str = "ml",
              gpus: float = 2.0) -> dict[str, Any]:
    """A GPU agent whose GPUs, 4 CPUs and 8 GB are statically reserved for ``ml``."""
    return mesos.offer(offer_id, agent, role, [
        mesos.scalar("cpus", 4.0, role, mesos.static("ml")),
        mesos.scalar("gpus", gpus, role, mesos.static("ml")),
        mesos.scalar("mem", 8192.0, role, mesos.static("ml")),
        *mesos.unreserved(role, cpus=2.0, mem=1024.0),
    ])


def by_name(resources: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [r for r in resources if r["name"] == name]


def test_the_view_keeps_what_the_jobs_roles_may_use_by_reservation() -> None:
    raw = mesos.offer("O1", "a1", "eng/ml", [
        mesos.scalar("cpus", 2.0, "eng/ml", mesos.static("eng")),  # an ancestor's: usable
        mesos.scalar("cpus", 3.0, "eng/ml", mesos.dynamic("eng/ml")),
        mesos.scalar("gpus", 1.0, "eng/ml", mesos.static("analytics")),  # not ours
        *mesos.unreserved("eng/ml", cpus=1.0, mem=512.0),
        {**mesos.scalar("disk", 100.0, "eng/ml"), "disk": {"persistence": {"id": "v"}}},
    ])
    view = OfferView.from_offer(raw, ("eng/ml",))
    assert view.role == "eng/ml"
    assert view.available == Resources({"cpus": 6.0, "mem": 512.0},
                                       {"ports": [(31000, 31010)]})
    assert sorted(p.reserved_for for p in view.pools) == ["*", "eng", "eng/ml"]
    # An offer to the role "*" of a job without the role: the unreserved part only.
    assert OfferView.from_offer({**raw, "allocation_info": {"role": "*"}}
                                ).available.scalar("cpus") == 1.0


def test_pre_refinement_resources_are_read_too() -> None:
    raw = mesos.offer("O1", "a1", "ml", [
        {"name": "gpus", "type": "SCALAR", "scalar": {"value": 1.0}, "role": "ml"},
        {"name": "cpus", "type": "SCALAR", "scalar": {"value": 1.0}, "role": "*"},
    ])
    view = OfferView.from_offer(raw, ("ml",))
    assert view.available == Resources({"gpus": 1.0, "cpus": 1.0})
    drawn = OfferClaims(view).draw(Resources({"gpus": 1.0, "cpus": 0.5}).to_json())
    assert {(r["name"], r["role"]) for r in drawn} == {("gpus", "ml"), ("cpus", "*")}


def test_claims_draw_reserved_first_split_across_pools_and_never_twice() -> None:
    view = OfferView.from_offer(gpu_offer(), ("ml",))
    claims = OfferClaims(view)
    first = claims.draw(Resources({"cpus": 3.0, "mem": 512.0, "gpus": 1.0},
                                  {"ports": [(31000, 31000)]}).to_json())
    assert by_name(first, "cpus") == [mesos.scalar("cpus", 3.0, "ml", mesos.static("ml"))]
    assert by_name(first, "ports") == [mesos.ports(31000, 31000, "ml")]
    second = claims.draw(Resources({"cpus": 2.0, "gpus": 1.0}).to_json())
    # The reserved CPUs left (1) first, then unreserved ones; every one allocated to "ml".
    assert sorted((r["scalar"]["value"], "reservations" in r) for r in by_name(second, "cpus")
                  ) == [(1.0, False), (1.0, True)]
    assert all(r["allocation_info"] == {"role": "ml"} for r in first + second)
    assert by_name(second, "gpus")[0]["reservations"] == mesos.static("ml")


@pytest.fixture
def gpu_job(tmp_path: Path) -> Iterator[Cluster]:
    job = Cluster(tmp_path, roles=("ml",), gpus=1)
    yield job
    job.store.close()


def test_a_gpu_trial_runs_on_gpus_reserved_for_the_jobs_role(gpu_job: Cluster) -> None:
    appcore = gpu_job.start_appcore(mesos.offer("O1", "cpu1", "ml", mesos.unreserved("ml")))
    assert all(r["allocation_info"] == {"role": "ml"} for r in appcore["resources"])
    gpu_job.submit(1, 2)
    tasks = gpu_job.offers(gpu_offer())
    assert [t["name"] for t in tasks] == ["trial-0001", "trial-0002"]
    for task in tasks:
        (gpu,) = by_name(task["resources"], "gpus")
        assert gpu == mesos.scalar("gpus", 1.0, "ml", mesos.static("ml"))
        assert all(r["allocation_info"] == {"role": "ml"} for r in task["resources"])
        assert all("role" not in r for r in task["resources"])  # post-refinement format
    assert [gpu_job.trial(n).state for n in (1, 2)] == ["LAUNCHING", "LAUNCHING"]
    assert gpu_job.trial(1).agent_id == "gpu1"


@pytest.mark.parametrize("policy", ["fifo", "dynamic", "dynamic-plus", "deadline"])
def test_every_policy_places_trials_on_reserved_resources(tmp_path: Path, policy: str) -> None:
    job = Cluster(tmp_path, roles=("ml",), gpus=1, policy=policy, parallelism=1)
    try:
        job.start_appcore(mesos.offer("O1", "cpu1", "ml", mesos.unreserved("ml")))
        job.submit(1)
        (task,) = job.offers(gpu_offer())
        assert by_name(task["resources"], "gpus")[0]["reservations"] == mesos.static("ml")
    finally:
        job.store.close()


def test_gpus_reserved_for_another_role_are_never_claimed(tmp_path: Path) -> None:
    job = Cluster(tmp_path, gpus=1)  # no --role: the default role "*"
    try:
        job.start_appcore(mesos.offer("O1", "cpu1", "*", mesos.unreserved("*")))
        job.submit(1)
        # A master would not offer them; if it did, they are still not the job's.
        tasks = job.offers(gpu_offer(role="*"))
        assert tasks == [] and job.driver.kinds()[0] == "decline"
        assert job.trial(1).state == "PENDING"
    finally:
        job.store.close()


def test_a_warm_slot_lives_on_its_offers_role_and_takes_trials_of_that_role_only(
        tmp_path: Path) -> None:
    job = Cluster(tmp_path, roles=("ml", "*"), warm=True, parallelism=1)
    try:
        job.start_appcore(mesos.offer("O1", "cpu1", "*", mesos.unreserved("*", cpus=0.5,
                                                                          mem=256.0)))
        job.submit(1)
        (task,) = job.offers(gpu_offer("O2", role="ml"))
        executor = task["executor"]
        assert all(r["allocation_info"] == {"role": "ml"}
                   for r in executor["resources"] + task["resources"])
        slot = executor["executor_id"]["value"]
        recorded = job.store.get_meta(meta.SLOT_EXECUTOR.key(slot))
        assert recorded == executor  # a resumed framework sends exactly this one
        job.update(mesos.status(task["task_id"]["value"], "TASK_FINISHED", "gpu1",
                                executor=slot))
        job.submit(2)
        # The same agent offered to "*": the "ml" slot is not reused; a new slot starts.
        (other,) = job.offers(mesos.offer("O3", "gpu1", "*", mesos.unreserved("*")))
        assert other["executor"]["executor_id"]["value"] != slot
        assert all(r["allocation_info"] == {"role": "*"}
                   for r in other["executor"]["resources"] + other["resources"])
    finally:
        job.store.close()
