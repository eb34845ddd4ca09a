"""Static reservations and roles: what frameworks of each role are offered, in which format,
and how an ACCEPT is checked against it (real clusters, raw v1 frameworks)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from disauto.common.resources import RoleResources
from disauto.localmesos.cluster import LocalCluster
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import offered
from tests.localmesos.cluster_support import operator_call
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration

RESERVED = "cpus(ml):2;mem(ml):512;cpus(*):1;mem(*):256;disk(*):1024;ports(*):[31000-31009]"


def _roles_of(offer: dict[str, Any]) -> set[str]:
    """The reservation role of each resource of an offer (``*`` unreserved)."""
    roles = set()
    for item in offer["resources"]:
        reservations = item.get("reservations")
        roles.add(reservations[-1]["role"] if reservations else item.get("role", "*"))
    return roles


def _task(offer: dict[str, Any], task_id: str, resources: list[dict[str, Any]]
          ) -> dict[str, Any]:
    return {"name": task_id, "task_id": {"value": task_id}, "agent_id": offer["agent_id"],
            "resources": resources, "command": {"value": "sleep 30"}}


def _picked(offer: dict[str, Any], role: str, **amounts: float) -> list[dict[str, Any]]:
    """Resources of ``offer`` reserved for ``role``, cut to ``amounts``, as offered."""
    out = []
    for item in offer["resources"]:
        reservations = item.get("reservations") or []
        held = reservations[-1]["role"] if reservations else item.get("role", "*")
        if held == role and item["name"] in amounts:
            picked = copy.deepcopy(item)
            picked["scalar"] = {"value": amounts[item["name"]]}
            out.append(picked)
    return out


@pytest.fixture
def cluster() -> Any:
    with running_cluster(resources=RoleResources.parse(RESERVED)) as started:
        yield started


def test_reserved_resources_go_only_to_their_role_with_allocation_info(
        cluster: LocalCluster) -> None:
    other = RawFramework(cluster.address, name="other", role="dev")
    ml = RawFramework(cluster.address, name="ml", roles=["ml"],
                      capabilities=["MULTI_ROLE", "RESERVATION_REFINEMENT"])
    try:
        other.subscribe()
        legacy = other.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
        # The deprecated single role: pre-refinement format, no allocation info, no
        # reservation of another role.
        assert _roles_of(legacy) == {"*"} and "allocation_info" not in legacy
        assert offered(legacy, "cpus") == 1 and offered(legacy, "mem") == 256
        assert all(item["role"] == "*" and "reservations" not in item
                   for item in legacy["resources"])
        ml.subscribe()
        offer = ml.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
        assert offer["allocation_info"] == {"role": "ml"}
        assert _roles_of(offer) == {"ml"}  # the unreserved part is offered to "dev"
        assert all(item["allocation_info"] == {"role": "ml"} and "role" not in item
                   and item["reservations"] == [{"type": "STATIC", "role": "ml"}]
                   for item in offer["resources"])
        assert offered(offer, "cpus") == 2 and offered(offer, "mem") == 512
        # As offered: runs. Without allocation_info: the master injects the offer's.
        plain = [{k: v for k, v in item.items() if k != "allocation_info"}
                 for item in _picked(offer, "ml", cpus=1, mem=128)]
        ml.launch(offer, [_task(offer, "as-offered", _picked(offer, "ml", cpus=0.5, mem=64)),
                          _task(offer, "injected", plain)])
        for task_id in ("as-offered", "injected"):
            running = ml.wait_event(lambda e, t=task_id: e["type"] == "UPDATE" and e["update"][
                "status"]["task_id"]["value"] == t)["update"]["status"]
            assert running["state"] in ("TASK_STARTING", "TASK_RUNNING"), running
        task = next(t for fw in get_json(cluster, "/master/state")["frameworks"]
                    if fw["id"] == ml.framework_id for t in fw["tasks"])
        assert task["resources"]["cpus"] > 0
    finally:
        ml.close()
        other.close()


def test_accept_is_checked_against_the_offered_reservations(cluster: LocalCluster) -> None:
    ml = RawFramework(cluster.address, name="ml", roles=["ml", "dev"],
                      capabilities=["MULTI_ROLE", "RESERVATION_REFINEMENT"])
    try:
        ml.subscribe()
        wait_until(lambda: any(o["allocation_info"]["role"] == "ml" for o in ml.offers()))
        offer = next(o for o in ml.offers() if o["allocation_info"]["role"] == "ml")
        # One run offers the agent to both roles: the unreserved part to one, the reserved
        # part to "ml" (which only "ml" may have).
        assert _roles_of(offer) == {"ml"}
        unreserved = [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.5},
                       "allocation_info": {"role": "ml"}}]
        other_role = _picked(offer, "ml", cpus=0.5)
        other_role[0]["allocation_info"] = {"role": "dev"}
        mixed = _picked(offer, "ml", cpus=0.5, mem=32)
        mixed[1]["allocation_info"] = {"role": "dev"}
        ml.launch(offer, [_task(offer, "unreserved", unreserved),
                          _task(offer, "other-role", other_role),
                          _task(offer, "mixed", mixed)])
        errors = {s["task_id"]["value"]: s for s in (
            ml.wait_event(lambda e, t=t: e["type"] == "UPDATE" and e["update"]["status"][
                "task_id"]["value"] == t)["update"]["status"]
            for t in ("unreserved", "other-role", "mixed"))}
        assert {s["state"] for s in errors.values()} == {"TASK_ERROR"}
        assert errors["unreserved"]["message"].startswith(
            "Total resources cpus(*):0.5 required by task and its executor is more than "
            "available")
        assert "more than available" in errors["other-role"]["message"]
        assert errors["mixed"]["message"] == (
            "Invalid task resources: The resources have multiple allocation roles ('dev' and "
            "'ml') but only one allocation role is allowed")
    finally:
        ml.close()


def test_reservations_in_the_endpoints_and_the_operator_api(cluster: LocalCluster) -> None:
    agent = get_json(cluster, "/master/state")["slaves"][0]
    assert agent["reserved_resources"]["ml"]["cpus"] == 2
    assert agent["unreserved_resources"]["cpus"] == 1 and agent["resources"]["cpus"] == 3
    full = agent["reserved_resources_full"]["ml"]
    assert {item["role"] for item in full} == {"ml"}
    assert all(item["reservations"] == [{"type": "STATIC", "role": "ml"}] for item in full)
    status, answer = operator_call(cluster, {"type": "GET_AGENTS"})
    assert status == 200
    total = answer["get_agents"]["agents"][0]["total_resources"]
    reserved = [item for item in total if item["role"] == "ml"]
    assert {item["name"] for item in reserved} == {"cpus", "mem"}
    assert all(item["reservations"][0]["role"] == "ml" for item in reserved)


def test_a_reserved_agent_is_offered_to_nobody_else() -> None:
    with running_cluster(resources=RoleResources.parse(
            "cpus(ml):2;mem(ml):512;disk(ml):100;ports(ml):[31000-31001]")) as cluster:
        other = RawFramework(cluster.address, name="other")
        ml = RawFramework(cluster.address, name="ml-legacy", role="ml")
        try:
            other.subscribe()
            ml.subscribe()
            offer = ml.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
            # Not MULTI_ROLE, not RESERVATION_REFINEMENT: the old format, role "ml".
            assert {item["role"] for item in offer["resources"]} == {"ml"}
            assert "allocation_info" not in offer
            wait_until(lambda: cluster.master.allocation_runs > 5)
            assert other.offers() == []
        finally:
            ml.close()
            other.close()
