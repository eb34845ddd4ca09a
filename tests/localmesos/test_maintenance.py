"""Maintenance schedules and inverse offers, agent draining and TASK_KILLING, on the operator
API of a real cluster with raw v1 frameworks."""

from __future__ import annotations

import time
from typing import Any

import pytest

from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.cluster import LocalCluster
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import operator_call
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration

START = {"nanoseconds": int((time.time() + 3600) * 1e9)}
HOUR = {"nanoseconds": 3600 * 10**9}


def _agents(hostnames: list[str]) -> tuple[AgentConfig, ...]:
    return tuple(AgentConfig(cpus=1.0, mem_mb=512.0, disk_mb=100.0, hostname=name,
                             ports=((31000 + 10 * i, 31009 + 10 * i),))
                 for i, name in enumerate(hostnames))


def _schedule(hostname: str) -> dict[str, Any]:
    return {"type": "UPDATE_MAINTENANCE_SCHEDULE", "update_maintenance_schedule": {
        "schedule": {"windows": [{"machine_ids": [{"hostname": hostname, "ip": "127.0.0.1"}],
                                  "unavailability": {"start": START, "duration": HOUR}}]}}}


def _wait_status(fw: RawFramework, task_id: str, state: str, start: int = 0
                 ) -> dict[str, Any]:
    return dict(fw.wait_event(lambda e: e["type"] == "UPDATE" and e["update"]["status"][
        "task_id"]["value"] == task_id and e["update"]["status"]["state"] == state,
        timeout=15, start=start)["update"]["status"])


def test_maintenance_inverse_offers_and_unavailability() -> None:
    configs = _agents(["localhost", "127.0.0.1"])  # two machines of this host
    with running_cluster(agent_configs=configs) as cluster:
        fw = RawFramework(cluster.address, name="fw", auto_acknowledge=True)
        try:
            fw.subscribe()
            wait_until(lambda: len(fw.offers()) == 2)
            offer = next(o for o in fw.offers() if o["hostname"] == "localhost")
            fw.launch(offer, [command_task(offer, "t", "sleep 60")])
            _wait_status(fw, "t", "TASK_RUNNING")
            assert operator_call(cluster, _schedule("localhost")) == (200, "")
            inverse = fw.wait_event(lambda e: e["type"] == "INVERSE_OFFERS")["inverse_offers"][
                "inverse_offers"][0]
            assert inverse["agent_id"] == offer["agent_id"]
            assert inverse["unavailability"] == {"start": START, "duration": HOUR}
            # Offers of the machine now say when it goes away.
            wait_until(lambda: any("unavailability" in o for o in fw.offers()))
            later = [o for o in fw.offers() if "unavailability" in o]
            assert {o["hostname"] for o in later} == {"localhost"}
            fw.call("DECLINE_INVERSE_OFFERS", decline_inverse_offers={
                "inverse_offer_ids": [inverse["id"]], "filters": {"refuse_seconds": 60}})
            status = wait_until(lambda: operator_call(cluster, {
                "type": "GET_MAINTENANCE_STATUS"})[1]["get_maintenance_status"]["status"].get(
                "draining_machines", [{}])[0].get("statuses"))
            assert status[0]["status"] == "DECLINE"
            assert status[0]["framework_id"]["value"] == fw.framework_id
            schedule = operator_call(cluster, {"type": "GET_MAINTENANCE_SCHEDULE"})[1]
            assert schedule["get_maintenance_schedule"]["schedule"]["windows"][0][
                "machine_ids"] == [{"hostname": "localhost", "ip": "127.0.0.1"}]
            assert get_json(cluster, "/master/maintenance/status")["draining_machines"][0][
                "id"] == {"hostname": "localhost", "ip": "127.0.0.1"}
            _machine_down_and_up(cluster, fw)
        finally:
            fw.close()


def _machine_down_and_up(cluster: LocalCluster, fw: RawFramework) -> None:
    """START_MAINTENANCE takes the agent away (its task TASK_LOST), STOP brings the machine
    back UP and out of the schedule."""
    machines = [{"hostname": "localhost", "ip": "127.0.0.1"}]
    assert operator_call(cluster, {"type": "STOP_MAINTENANCE", "stop_maintenance": {
        "machines": machines}}) == (400, "Machine '{\"hostname\":\"localhost\",\"ip\":"
                                         "\"127.0.0.1\"}' is not in DOWN mode and cannot be "
                                         "brought up")
    assert operator_call(cluster, {"type": "START_MAINTENANCE", "start_maintenance": {
        "machines": machines}}) == (200, "")
    lost = _wait_status(fw, "t", "TASK_LOST")
    assert lost["reason"] == "REASON_AGENT_REMOVED"
    assert lost["message"] == "Operator initiated 'Machine DOWN'"
    status = operator_call(cluster, {"type": "GET_MAINTENANCE_STATUS"})[1]
    assert status["get_maintenance_status"]["status"] == {"down_machines": machines}
    assert len(get_json(cluster, "/master/state")["slaves"]) == 1
    assert operator_call(cluster, {"type": "STOP_MAINTENANCE", "stop_maintenance": {
        "machines": machines}}) == (200, "")
    assert operator_call(cluster, {"type": "GET_MAINTENANCE_SCHEDULE"})[1][
        "get_maintenance_schedule"] == {"schedule": {}}


@pytest.mark.parametrize(("call", "message"), [
    ({"windows": [{"machine_ids": [], "unavailability": {"start": START}}]},
     "List of machines in the maintenance window is empty"),
    ({"windows": [{"machine_ids": [{}], "unavailability": {"start": START}}]},
     "Both 'hostname' and 'ip' for a machine are empty"),
    ({"windows": [{"machine_ids": [{"hostname": "a"}, {"hostname": "A"}],
                   "unavailability": {"start": START}}]},
     "Machine '{\"hostname\":\"A\"}' appears more than once in the schedule"),
    ({"windows": [{"machine_ids": [{"hostname": "a"}],
                   "unavailability": {"start": START, "duration": {"nanoseconds": -1}}}]},
     "Unavailability 'duration' is negative"),
])
def test_bad_schedules_are_refused(call: dict[str, Any], message: str) -> None:
    with running_cluster() as cluster:
        body = {"type": "UPDATE_MAINTENANCE_SCHEDULE",
                "update_maintenance_schedule": {"schedule": call}}
        assert operator_call(cluster, body) == (400, message)


def test_drain_kills_with_agent_draining_and_marks_gone() -> None:
    with running_cluster() as cluster:
        aware = RawFramework(cluster.address, name="aware", auto_acknowledge=True,
                             capabilities=["PARTITION_AWARE", "TASK_KILLING_STATE"])
        plain = RawFramework(cluster.address, name="plain", auto_acknowledge=True)
        try:
            agent_id = _run(aware, "a", "sleep 60")
            _run(plain, "p", "trap '' TERM; sleep 60", kill_policy={
                "grace_period": {"nanoseconds": 30 * 10**9}})
            body = {"type": "DRAIN_AGENT", "drain_agent": {
                "agent_id": {"value": agent_id}, "max_grace_period": {"seconds": 1},
                "mark_gone": True}}
            assert operator_call(cluster, body) == (200, "")
            # src/slave/slave.cpp Slave::statusUpdate: with mark_gone a partition-aware
            # framework's TASK_KILLING is TASK_GONE_BY_OPERATOR too (no TASK_KILLING).
            gone = _wait_status(aware, "a", "TASK_GONE_BY_OPERATOR")
            assert gone["reason"] == "REASON_AGENT_DRAINING"
            assert [s["state"] for s in aware.updates("a")][:3] == [
                "TASK_STARTING", "TASK_RUNNING", "TASK_GONE_BY_OPERATOR"]
            # Not partition aware: TASK_KILLED, its 30 s grace period cut to 1 s.
            killed = _wait_status(plain, "p", "TASK_KILLED")
            assert killed["reason"] == "REASON_AGENT_DRAINING"
            assert not [s for s in plain.updates("p") if s["state"] == "TASK_KILLING"]
            wait_until(lambda: not get_json(cluster, "/master/state")["slaves"], timeout=10)
            start = len(aware.events)
            aware.call("RECONCILE", reconcile={"tasks": [
                {"task_id": {"value": "x"}, "agent_id": {"value": agent_id}}]})
            assert _wait_status(aware, "x", "TASK_GONE_BY_OPERATOR", start)["message"] == (
                "Reconciliation: Task is gone")
        finally:
            aware.close()
            plain.close()


def _run(fw: RawFramework, task_id: str, command: str, **fields: Any) -> str:
    """Launch one task; what is left of the agent goes to the next framework."""
    fw.subscribe()
    offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
    fw.launch(offer, [command_task(offer, task_id, command, **fields)], refuse_seconds=3600)
    _wait_status(fw, task_id, "TASK_RUNNING")
    return str(offer["agent_id"]["value"])


def test_drain_then_reactivate_and_get_agents_shows_it() -> None:
    with running_cluster() as cluster:
        fw = RawFramework(cluster.address, name="fw", auto_acknowledge=True)
        try:
            # A task that ignores SIGTERM: it dies at the end of its 3 s kill grace, and the
            # agent stays DRAINING meanwhile (a plain sleep could be DRAINED before the check).
            agent_id = _run(fw, "t", "trap '' TERM; sleep 60")
            reactivate = {"type": "REACTIVATE_AGENT",
                          "reactivate_agent": {"agent_id": {"value": agent_id}}}
            assert operator_call(cluster, reactivate) == (400, "Agent is not deactivated")
            assert operator_call(cluster, {"type": "DRAIN_AGENT", "drain_agent": {
                "agent_id": {"value": "nope"}}}) == (400, "Unknown agent")
            assert operator_call(cluster, {"type": "DRAIN_AGENT", "drain_agent": {
                "agent_id": {"value": agent_id}}}) == (200, "")
            agent = operator_call(cluster, {"type": "GET_AGENTS"})[1]["get_agents"]["agents"][0]
            assert agent["deactivated"] and not agent["active"]
            assert agent["drain_info"]["config"] == {"mark_gone": False}
            assert operator_call(cluster, reactivate) == (
                400, "Agent is still in the DRAINING state")
            killed = _wait_status(fw, "t", "TASK_KILLED")
            assert killed["reason"] == "REASON_AGENT_DRAINING"
            wait_until(lambda: operator_call(cluster, {"type": "GET_AGENTS"})[1]["get_agents"][
                "agents"][0]["drain_info"]["state"] == "DRAINED")
            start = len(fw.events)
            # DRAINED: offers stay away until the agent is reactivated.
            wait_until(lambda: cluster.master.allocation_runs > 5)
            assert fw.offers(start) == []
            assert operator_call(cluster, reactivate) == (200, "")
            wait_until(lambda: fw.offers(start))
            agent = operator_call(cluster, {"type": "GET_AGENTS"})[1]["get_agents"]["agents"][0]
            assert agent["active"] and not agent["deactivated"] and "drain_info" not in agent
        finally:
            fw.close()


def test_task_killing_goes_to_frameworks_that_can_take_it() -> None:
    with running_cluster() as cluster:
        capable = RawFramework(cluster.address, name="capable", auto_acknowledge=True,
                               capabilities=["TASK_KILLING_STATE"])
        plain = RawFramework(cluster.address, name="plain", auto_acknowledge=True)
        try:
            for fw in (capable, plain):
                _run(fw, "t", "sleep 60")
                fw.call("KILL", kill={"task_id": {"value": "t"}})
                _wait_status(fw, "t", "TASK_KILLED")
                # Gone, so that the next framework gets the agent: the freed resources are more
                # than those this one refused, and an offer of them could wait in its hands.
                assert fw.call("TEARDOWN") == 202
            states = [s["state"] for s in capable.updates("t")]
            assert states[-2:] == ["TASK_KILLING", "TASK_KILLED"]
            killing = capable.updates("t")[-2]
            assert killing["source"] == "SOURCE_EXECUTOR" and "reason" not in killing
            assert "TASK_KILLING" not in [s["state"] for s in plain.updates("t")]
        finally:
            capable.close()
            plain.close()
