"""An agent the master cannot reach: TASK_UNREACHABLE or TASK_LOST by capability, and what
happens when the network heals (real cluster, raw v1 frameworks, the cluster's partition)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import operator_call
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration


def _update(fw: RawFramework, task_id: str, *, start: int = 0, **fields: Any) -> dict[str, Any]:
    """The first update of ``task_id`` (from event ``start``) with ``fields``."""
    event = fw.wait_event(lambda e: e["type"] == "UPDATE" and e["update"]["status"]["task_id"][
        "value"] == task_id and all(e["update"]["status"].get(k) == v for k, v in fields.items()),
        timeout=15, start=start)
    return dict(event["update"]["status"])


def _start(fw: RawFramework, task_id: str) -> str:
    fw.subscribe()
    offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
    fw.launch(offer, [command_task(offer, task_id, "sleep 60")])
    _update(fw, task_id, state="TASK_RUNNING")
    return str(offer["agent_id"]["value"])


def test_unreachable_agents_tasks_by_capability_and_their_return() -> None:
    with running_cluster(agent_ping_timeout=0.2, max_agent_ping_timeouts=3) as cluster:
        aware = RawFramework(cluster.address, name="aware", capabilities=["PARTITION_AWARE"],
                             auto_acknowledge=True)
        plain = RawFramework(cluster.address, name="plain", auto_acknowledge=True)
        try:
            agent_id = _start(aware, "a")
            _start(plain, "p")
            cluster.partition_agent(agent_id)
            gone = _update(aware, "a", state="TASK_UNREACHABLE")
            lost = _update(plain, "p", state="TASK_LOST")
            for status in (gone, lost):
                assert status["reason"] == "REASON_AGENT_REMOVED"
                assert status["source"] == "SOURCE_MASTER" and "uuid" not in status
                assert status["message"] == "health check timed out"
                assert status["unreachable_time"]["nanoseconds"] > 0
            for fw in (aware, plain):  # pymesos' slaveLost
                fw.wait_event(lambda e: e["type"] == "FAILURE"
                              and e["failure"] == {"agent_id": {"value": agent_id}})
            _while_unreachable(cluster, aware, plain, agent_id)
            mark = len(aware.events), len(plain.events)
            cluster.heal_agent(agent_id)
            for fw, task_id, start in ((aware, "a", mark[0]), (plain, "p", mark[1])):
                back = _update(fw, task_id, start=start, reason="REASON_AGENT_REREGISTERED")
                assert back["state"] == "TASK_RUNNING" and back["source"] == "SOURCE_MASTER"
                assert back["message"] == "Unreachable agent re-reregistered"
            _after_healing(cluster, aware, plain, agent_id)
        finally:
            aware.close()
            plain.close()


def _while_unreachable(cluster: Any, aware: RawFramework, plain: RawFramework,
                       agent_id: str) -> None:
    """Reconciliation, the endpoints and the operator API while the agent is unreachable."""
    for fw, task_id, state in ((aware, "a", "TASK_UNREACHABLE"), (plain, "p", "TASK_LOST")):
        start = len(fw.events)
        fw.call("RECONCILE", reconcile={"tasks": [{"task_id": {"value": task_id},
                                                   "agent_id": {"value": agent_id}}]})
        status = _update(fw, task_id, start=start, reason="REASON_RECONCILIATION")
        assert status["state"] == state and status["message"] == (
            "Reconciliation: Task is unreachable")
        assert status["unreachable_time"]["nanoseconds"] > 0
    state = get_json(cluster, "/master/state")
    assert state["unreachable_slaves"] == 1 and state["slaves"] == []
    unreachable = operator_call(cluster, {"type": "GET_TASKS"})[1]["get_tasks"]
    assert sorted(t["task_id"]["value"] for t in unreachable["unreachable_tasks"]) == ["a", "p"]
    assert operator_call(cluster, {"type": "GET_AGENTS"})[1]["get_agents"]["agents"] == []
    metrics = get_json(cluster, "/metrics/snapshot")
    assert metrics["master/slave_removals/reason_unhealthy"] >= 1
    assert metrics["master/slave_unreachable_completed"] >= 1


def _after_healing(cluster: Any, aware: RawFramework, plain: RawFramework,
                   agent_id: str) -> None:
    """The agent is back: its tasks run (reconciliation says so) and can be killed."""
    wait_until(lambda: get_json(cluster, "/master/state")["slaves"])
    assert get_json(cluster, "/master/state")["unreachable_slaves"] == 0
    for fw, task_id in ((aware, "a"), (plain, "p")):
        start = len(fw.events)
        fw.call("RECONCILE", reconcile={"tasks": [{"task_id": {"value": task_id}}]})
        assert _update(fw, task_id, start=start, reason="REASON_RECONCILIATION")[
            "state"] == "TASK_RUNNING"
        fw.call("KILL", kill={"task_id": {"value": task_id}})
        assert _update(fw, task_id, start=start, state="TASK_KILLED")["source"] == (
            "SOURCE_EXECUTOR")
    assert get_json(cluster, "/metrics/snapshot")["master/slave_reregistrations"] >= 1


def test_a_short_partition_is_forgiven() -> None:
    # Fewer missed pings than the limit: the agent is never marked unreachable.
    with running_cluster(agent_ping_timeout=0.5, max_agent_ping_timeouts=5) as cluster:
        fw = RawFramework(cluster.address, name="aware", capabilities=["PARTITION_AWARE"],
                          auto_acknowledge=True)
        try:
            agent_id = _start(fw, "t")
            cluster.partition_agent(agent_id, 0.6)
            wait_until(lambda: not cluster.fleet.state()[agent_id]["partitioned"], timeout=5)
            wait_until(lambda: cluster.master.allocation_runs > 0)
            assert not [e for e in fw.events if e["type"] == "UPDATE"
                        and e["update"]["status"]["state"] == "TASK_UNREACHABLE"]
            assert get_json(cluster, "/master/state")["unreachable_slaves"] == 0
        finally:
            fw.close()


def test_a_task_that_ends_while_its_agent_is_unreachable_is_reported_when_it_heals() -> None:
    with running_cluster(agent_ping_timeout=0.2, max_agent_ping_timeouts=3) as cluster:
        fw = RawFramework(cluster.address, name="aware", capabilities=["PARTITION_AWARE"],
                          auto_acknowledge=True)
        try:
            fw.subscribe()
            offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
            agent_id = offer["agent_id"]["value"]
            fw.launch(offer, [command_task(offer, "t", "sleep 1.5")], refuse_seconds=0)
            _update(fw, "t", state="TASK_RUNNING")
            cluster.partition_agent(agent_id)
            _update(fw, "t", state="TASK_UNREACHABLE")
            wait_until(lambda: cluster.agents[0].latest_state(fw.framework_id or "", "t")
                       == "TASK_FINISHED", timeout=10)
            start = len(fw.events)
            cluster.heal_agent(agent_id)
            finished = _update(fw, "t", start=start, state="TASK_FINISHED",
                               source="SOURCE_EXECUTOR")
            assert finished["message"] == "Command exited with status 0"
            # Its resources are the agent's again: the whole agent is offered.
            wait_until(lambda: any(o["agent_id"]["value"] == agent_id
                                   and sum(r["scalar"]["value"] for r in o["resources"]
                                           if r["name"] == "cpus") == 2.0
                                   for o in fw.offers(start)), timeout=10)
            wait_until(lambda: [t["id"] for f in get_json(cluster, "/master/state")["frameworks"]
                                for t in f["completed_tasks"]] == ["t"])  # once acknowledged
        finally:
            fw.close()


def test_the_registry_forgets_unreachable_agents_after_their_age() -> None:
    with running_cluster(agent_ping_timeout=0.2, max_agent_ping_timeouts=3,
                         registry_max_agent_age=1.0) as cluster:
        fw = RawFramework(cluster.address, name="aware", capabilities=["PARTITION_AWARE"],
                          auto_acknowledge=True)
        try:
            agent_id = _start(fw, "t")
            cluster.partition_agent(agent_id)
            _update(fw, "t", state="TASK_UNREACHABLE")
            wait_until(lambda: get_json(cluster, "/master/state")["unreachable_slaves"] == 0,
                       timeout=10)
            tasks = operator_call(cluster, {"type": "GET_TASKS"})[1]["get_tasks"]
            assert tasks.get("unreachable_tasks", []) == []  # dropped with the agent
            start = len(fw.events)
            fw.call("RECONCILE", reconcile={"tasks": [{"task_id": {"value": "t"},
                                                       "agent_id": {"value": agent_id}}]})
            assert _update(fw, "t", start=start, reason="REASON_RECONCILIATION")[
                "state"] == "TASK_UNKNOWN"
            start = len(fw.events)
            cluster.heal_agent(agent_id)  # an agent the registry no longer knows is admitted
            back = _update(fw, "t", start=start, reason="REASON_AGENT_REREGISTERED")
            assert back["message"] == "Unknown agent reregistered"
        finally:
            fw.close()
