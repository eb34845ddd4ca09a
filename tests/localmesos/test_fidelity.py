"""Issue 20: what a Mesos 1.11 master does that the embedded one must do too (or refuse as it).

Facts, from apache/mesos 1.11:

* ``src/master/validation.cpp`` ``validateResourceLimits``: a task with ``limits`` on an agent
  without the ``TASK_RESOURCE_LIMITS`` capability is TASK_ERROR "Agent is not capable of
  handling task resource limits" (the embedded agents advertise no such capability).
* ``src/master/master.cpp``: a 1.11 MasterInfo advertises AGENT_UPDATE, AGENT_DRAINING and
  QUOTA_V2; all three are served here (issue 28: DRAIN_AGENT, UPDATE_QUOTA).
* The embedded master speaks JSON only: its 406/415 refusals name JSON only
  (``docs/local-mode.md``).
"""

from __future__ import annotations

from collections.abc import Iterator
import http.client
import json
import time
from typing import Any

import pytest

from disauto.localmesos.cluster import LocalCluster
from tests.localmesos.cluster_support import Drivers
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import RecordingScheduler
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import framework_info
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import running_cluster


pytestmark = pytest.mark.integration  # starts the embedded cluster

LIMITS_ERROR = "Agent is not capable of handling task resource limits"


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    with running_cluster() as started:
        yield started


def _post(cluster: LocalCluster, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(*cluster.address.split(":"), timeout=10)
    try:
        conn.request("POST", "/api/v1/scheduler", body, headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


# -- item 3: task limits ----------------------------------------------------------------------


def test_raw_task_with_limits_is_task_error(cluster: LocalCluster) -> None:
    fw = RawFramework(cluster.address)
    try:
        fw.subscribe()
        offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
        task = command_task(offer, "limited", "sleep 30", limits={"cpus": {"value": 1.0}})
        assert fw.launch(offer, [task]) == 202
        status = fw.wait_event(lambda e: e["type"] == "UPDATE")["update"]["status"]
        assert status["state"] == "TASK_ERROR"
        assert status["reason"] == "REASON_TASK_INVALID"
        assert status["message"] == LIMITS_ERROR
        assert "uuid" not in status and status["source"] == "SOURCE_MASTER"
        agents = get_json(cluster, "/master/state")["slaves"]
        assert all("TASK_RESOURCE_LIMITS" not in a["capabilities"] for a in agents)
    finally:
        fw.close()


def test_pymesos_task_with_limits_is_task_error(cluster: LocalCluster) -> None:
    drivers = Drivers()
    sched = RecordingScheduler()
    try:
        driver = drivers.start(cluster, sched)
        offer = sched.wait_offers()[0]
        task = command_task(offer, "limited", "true", limits={"mem": {"value": 64.0}})
        driver.launchTasks(offer["id"], [task])
        status = sched.wait_state("limited", "TASK_ERROR")
        assert status["message"] == LIMITS_ERROR
    finally:
        drivers.stop_all()


def test_empty_limits_are_no_limits(cluster: LocalCluster) -> None:
    fw = RawFramework(cluster.address, auto_acknowledge=True)
    try:
        fw.subscribe()
        offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
        assert fw.launch(offer, [command_task(offer, "plain", "true", limits={})]) == 202
        fw.wait_event(lambda e: e.get("update", {}).get("status", {}).get("state")
                      == "TASK_FINISHED")  # fmt: skip
    finally:
        fw.close()


# -- item 7: JSON only, honest capabilities --------------------------------------------------

SUBSCRIBE = {"type": "SUBSCRIBE", "subscribe": {"framework_info": framework_info()}}


def test_protobuf_only_accept_is_406_naming_json_only(cluster: LocalCluster) -> None:
    status, body = _post(
        cluster, json.dumps(SUBSCRIBE).encode(),
        {"Content-Type": "application/json", "Accept": "application/x-protobuf"},
    )
    assert status == 406
    assert body.decode() == (
        "Expecting 'Accept' to allow 'application/json' (localmesos speaks JSON only, "
        "not 'application/x-protobuf')"
    )


def test_protobuf_body_is_415_naming_json_only(cluster: LocalCluster) -> None:
    status, body = _post(cluster, b"\x08\x01", {"Content-Type": "application/x-protobuf"})
    assert status == 415
    assert b"or application/x-protobuf" not in body and b"application/json" in body


def _capabilities(info: dict[str, Any]) -> list[str]:
    return [c["type"] for c in info.get("capabilities", [])]


def test_master_info_advertises_draining_and_quota(cluster: LocalCluster) -> None:
    # A 1.11 master advertises both, and this one serves DRAIN_AGENT and UPDATE_QUOTA now.
    fw = RawFramework(cluster.address)
    drivers = Drivers()
    sched = RecordingScheduler()
    expected = ["AGENT_UPDATE", "AGENT_DRAINING", "QUOTA_V2"]
    try:
        fw.subscribe()
        subscribed = fw.of_type("SUBSCRIBED")[0]["subscribed"]
        assert _capabilities(subscribed["master_info"]) == expected
        assert get_json(cluster, "/master/state")["capabilities"] == expected
        drivers.start(cluster, sched)
        master_info = sched.wait(lambda: [v for c, v in sched.calls if c == "registered"])[0]
        assert master_info["version"] == "1.11.0"  # pymesos keeps no capabilities of it
    finally:
        fw.close()
        drivers.stop_all()


# -- item 4: --offer_timeout ------------------------------------------------------------------


def test_offers_are_rescinded_after_the_offer_timeout_and_offered_again() -> None:
    with running_cluster(offer_timeout=0.5) as cluster:
        fw = RawFramework(cluster.address)
        try:
            fw.subscribe()
            offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
            made = time.monotonic()
            rescind = fw.wait_event(lambda e: e["type"] == "RESCIND", timeout=5)
            assert time.monotonic() - made >= 0.4
            assert rescind == {"type": "RESCIND", "rescind": {"offer_id": offer["id"]}}
            start = fw.events.index(rescind)
            fw.wait_event(lambda e: e["type"] == "OFFERS", start=start)  # no filter on it
            assert fw.launch(offer, [command_task(offer, "late", "true")]) == 202
            status = fw.wait_event(lambda e: e["type"] == "UPDATE")["update"]["status"]
            assert status["state"] == "TASK_LOST" and status["reason"] == "REASON_INVALID_OFFERS"
            metrics = get_json(cluster, "/metrics/snapshot")
            assert metrics[f"master/frameworks/raw/{fw.framework_id}/offers/rescinded"] >= 1
            assert get_json(cluster, "/master/flags")["flags"]["offer_timeout"] == "500ms"
            assert cluster.shape_checker.counts["RESCIND"] >= 1  # type: ignore[attr-defined]
        finally:
            fw.close()


def test_no_offer_timeout_by_default(cluster: LocalCluster) -> None:
    fw = RawFramework(cluster.address)
    try:
        fw.subscribe()
        fw.wait_event(lambda e: e["type"] == "OFFERS")
        time.sleep(1.0)
        assert fw.of_type("RESCIND") == []
        assert "offer_timeout" not in get_json(cluster, "/master/flags")["flags"]
    finally:
        fw.close()


def test_pymesos_sees_offer_rescinded_and_launches_on_the_next_offer() -> None:
    drivers = Drivers()

    def launch_after_a_rescind(driver: Any, offers: list[dict[str, Any]]) -> None:
        if sched.rescinded and not sched.states("on-time"):  # launch at once, on the IO thread
            offer = offers[0]
            driver.launchTasks(offer["id"], [command_task(offer, "on-time", "true")])

    sched = RecordingScheduler(on_offers=launch_after_a_rescind)
    with running_cluster(offer_timeout=0.3) as cluster:
        try:
            drivers.start(cluster, sched)
            first = sched.wait_offers()[0]
            sched.wait(lambda: first["id"]["value"] in sched.rescinded, timeout=5)
            sched.wait_state("on-time", "TASK_FINISHED")
        finally:
            drivers.stop_all()


# -- issue 34: a KILL's kill_policy ------------------------------------------------------------


def _kill_after(fw: RawFramework, task_id: str, kills: list[dict[str, Any]]) -> float:
    """Send ``kills`` (KILL bodies beyond the task id) one after another; seconds from the
    first to TASK_KILLED."""
    started = time.monotonic()
    for extra in kills:
        assert fw.call("KILL", kill={"task_id": {"value": task_id}, **extra}) == 202
        time.sleep(0.2)
    fw.wait_event(lambda e: e["type"] == "UPDATE" and e["update"]["status"]["task_id"][
        "value"] == task_id and e["update"]["status"]["state"] == "TASK_KILLED", timeout=15)
    return time.monotonic() - started


def test_a_kills_policy_overrides_the_tasks_and_a_second_kill_escalates(
        cluster: LocalCluster) -> None:
    """``src/launcher/executor.cpp`` ``kill(taskId, override)``: the KILL's ``kill_policy``
    takes precedence over the task's; ``include/mesos/v1/scheduler/scheduler.proto``: it "can
    be used to forcefully kill a task which is already being killed". On the embedded cluster
    a task with a 20 s grace killed with 1 s died after 20 s, and a second KILL changed
    nothing."""
    fw = RawFramework(cluster.address, name="killer", auto_acknowledge=True,
                      capabilities=["TASK_KILLING_STATE"])
    try:
        fw.subscribe()
        offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
        policy = {"kill_policy": {"grace_period": {"nanoseconds": 20 * 10**9}}}
        stubborn = "trap '' TERM; while :; do sleep 0.05; done"
        fw.launch(offer, [command_task(offer, "overridden", stubborn, **policy),
                          command_task(offer, "escalated", stubborn, **policy)])
        for task_id in ("overridden", "escalated"):
            fw.wait_event(lambda e, t=task_id: e["type"] == "UPDATE" and e["update"]["status"][
                "task_id"]["value"] == t and e["update"]["status"]["state"] == "TASK_RUNNING")
        time.sleep(0.2)  # the shells' traps are in place
        one_second = {"kill_policy": {"grace_period": {"nanoseconds": 10**9}}}
        assert 1.0 <= _kill_after(fw, "overridden", [one_second]) < 6.0
        assert _kill_after(fw, "escalated", [{}, one_second]) < 6.0
        states = [s["state"] for s in fw.updates("escalated")]
        assert states.count("TASK_KILLING") == 1 and states[-1] == "TASK_KILLED"
    finally:
        fw.close()
