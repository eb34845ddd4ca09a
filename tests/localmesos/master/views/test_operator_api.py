"""The operator API (``POST /api/v1``): every read call, checked strictly against master.proto's
``Response``, and every bad request answered as ``Master::Http::api`` answers it; and
``/files/download``."""

from __future__ import annotations

from collections.abc import Iterator
import http.client
import json
from typing import Any

import pytest

from disauto.localmesos.cluster import LocalCluster
from tests.localmesos import operator_shapes
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import running_cluster


pytestmark = pytest.mark.integration  # starts a cluster

JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with running_cluster(agents=2, cpus=2.0, mem_mb=1024.0) as c:
        yield c


@pytest.fixture(scope="module")
def running(cluster: LocalCluster) -> Iterator[RawFramework]:
    """A framework with a running, labelled task and a finished one."""
    framework = RawFramework(
        cluster.address, name="ops", auto_acknowledge=True, webui_url="http://127.0.0.1:1/ui"
    )
    framework.subscribe()
    offer = framework.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
    labels = {"labels": [{"key": "trial", "value": "7"}]}
    framework.launch(
        offer,
        [
            command_task(offer, "sleeper", "sleep 60", labels=labels),
            command_task(offer, "quick", "echo done"),
        ],
    )
    for task_id, state in (("sleeper", "TASK_RUNNING"), ("quick", "TASK_FINISHED")):
        framework.wait_event(
            lambda e, t=task_id, s=state: e["type"] == "UPDATE"
            and e["update"]["status"]["task_id"]["value"] == t
            and e["update"]["status"]["state"] == s
        )
    yield framework
    framework.call("TEARDOWN")
    framework.close()


def _post(
    cluster: LocalCluster,
    body: bytes | str | dict[str, Any],
    headers: dict[str, str] | None = None,
    *,
    method: str = "POST",
    path: str = "/api/v1",
) -> tuple[int, dict[str, str], bytes]:
    if isinstance(body, dict):
        body = json.dumps(body)
    conn = http.client.HTTPConnection(*cluster.address.split(":"), timeout=10)
    try:
        conn.request(method, path, body, JSON if headers is None else headers)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _call(cluster: LocalCluster, kind: str, path: str = "/api/v1") -> dict[str, Any]:
    status, headers, body = _post(cluster, {"type": kind}, path=path)
    assert status == 200, (kind, status, body)
    assert headers["content-type"] == "application/json"
    response = json.loads(body)
    assert operator_shapes.check("Response", response) == []
    assert response["type"] == kind
    return dict(response)


@pytest.mark.parametrize("path", ["/api/v1", "/master/api/v1"])
def test_get_health_and_version(cluster: LocalCluster, path: str) -> None:
    assert _call(cluster, "GET_HEALTH", path)["get_health"] == {"healthy": True}
    version = _call(cluster, "GET_VERSION", path)["get_version"]["version_info"]
    assert version["version"] == "1.11.0" and version["build_user"]


def test_get_agents_has_totals_allocations_and_offers(
    cluster: LocalCluster, running: RawFramework
) -> None:
    answer = _call(cluster, "GET_AGENTS")["get_agents"]
    assert answer["recovered_agents"] == []
    agents = {a["agent_info"]["id"]["value"]: a for a in answer["agents"]}
    assert set(agents) == {agent.id for agent in cluster.agents}
    busy = next(a for a in agents.values() if a.get("allocated_resources"))
    cpus = [r for r in busy["allocated_resources"] if r["name"] == "cpus"]
    assert cpus == [
        {
            "name": "cpus",
            "type": "SCALAR",
            "scalar": {"value": pytest.approx(0.1)},
            "role": "*",
            "allocation_info": {"role": "*"},
        }
    ]
    total = {r["name"]: r for r in busy["total_resources"]}
    assert total["cpus"]["scalar"]["value"] == 2.0 and total["cpus"]["role"] == "*"
    assert busy["active"] is True and busy["pid"].startswith("slave(")
    assert busy["registered_time"]["nanoseconds"] > 10**18


def test_get_frameworks(cluster: LocalCluster, running: RawFramework) -> None:
    answer = _call(cluster, "GET_FRAMEWORKS")["get_frameworks"]
    fw = next(
        f
        for f in answer["frameworks"]
        if f["framework_info"]["id"]["value"] == running.framework_id
    )
    assert fw["active"] and fw["connected"] and fw["recovered"] is False
    assert fw["framework_info"]["webui_url"] == "http://127.0.0.1:1/ui"
    assert fw["framework_info"]["failover_timeout"] == 0.0
    assert "allocated_resources" in fw and fw["offer_constraints"] == {}
    assert "completed_frameworks" in answer


def test_get_tasks_and_executors(cluster: LocalCluster, running: RawFramework) -> None:
    tasks = _call(cluster, "GET_TASKS")["get_tasks"]
    assert tasks["unreachable_tasks"] == []
    active = {t["task_id"]["value"]: t for t in tasks["tasks"]}
    sleeper = active["sleeper"]
    assert sleeper["state"] == "TASK_RUNNING"
    assert sleeper["framework_id"]["value"] == running.framework_id
    assert sleeper["labels"] == {"labels": [{"key": "trial", "value": "7"}]}
    assert [s["state"] for s in sleeper["statuses"]][-1] == "TASK_RUNNING"
    assert all("data" not in s for s in sleeper["statuses"])
    finished = [t for t in tasks["tasks"] + tasks["completed_tasks"] if t["name"] == "quick"]
    assert finished and finished[0]["state"] == "TASK_FINISHED"
    # Command tasks have no executor of their own, in Mesos as here.
    assert _call(cluster, "GET_EXECUTORS")["get_executors"] == {"executors": []}


def test_get_state_holds_the_four_answers(cluster: LocalCluster, running: RawFramework) -> None:
    state = _call(cluster, "GET_STATE")["get_state"]
    assert set(state) == {"get_tasks", "get_executors", "get_frameworks", "get_agents"}
    assert {t["task_id"]["value"] for t in state["get_tasks"]["tasks"]} >= {"sleeper"}
    assert len(state["get_agents"]["agents"]) == 2


def test_shape_checker_catches_what_master_proto_does_not_allow() -> None:
    bad = {"type": "GET_HEALTH", "get_health": {"healthy": "yes"}, "extra": 1}
    assert operator_shapes.check("Response", bad) == [
        "Response.extra: not a field of Response",
        "Response.get_health.healthy: 'yes' is not a bool",
    ]
    assert operator_shapes.check("Task", {"name": "t"})[0].endswith("required field missing")


@pytest.mark.parametrize(
    ("body", "headers", "status", "message"),
    [
        ({"type": "GET_STATE"}, {}, 400, "Expecting 'Content-Type' to be present"),
        (
            {"type": "GET_STATE"},
            {"Content-Type": "text/plain"},
            415,
            "Expecting 'Content-Type' of application/json (localmesos speaks JSON only, not "
            "application/x-protobuf)",
        ),
        (
            b"\x08\x09",
            {"Content-Type": "application/x-protobuf"},
            415,
            "Expecting 'Content-Type' of application/json (localmesos speaks JSON only, not "
            "application/x-protobuf)",
        ),
        (b"{nope", JSON, 400, "Failed to parse body into JSON: "),
        (b"[1]", JSON, 400, "Failed to convert JSON into Call protobuf: Expecting a JSON object"),
        (
            {"type": True},
            JSON,
            400,
            "Failed to convert JSON into Call protobuf: Not expecting a JSON boolean for field "
            "'type'",
        ),
        ({}, JSON, 400, "Failed to validate master::Call: Expecting 'type' to be present"),
        # stout drops an unknown name of an optional enum, so the call has no type.
        (
            {"type": "GET_EVERYTHING"},
            JSON,
            400,
            "Failed to validate master::Call: Expecting 'type' to be present",
        ),
        (
            {"type": "GET_STATE"},
            dict(JSON, Accept="application/x-protobuf"),
            406,
            "Expecting 'Accept' to allow 'application/json' (localmesos speaks JSON only, not "
            "'application/x-protobuf')",
        ),
        ({"type": "UNKNOWN"}, JSON, 501, ""),
        (
            {"type": "GET_FLAGS"},
            JSON,
            400,
            "localmesos does not support the operator call GET_FLAGS; supported: "
            "DEACTIVATE_AGENT, DRAIN_AGENT, GET_AGENTS, GET_EXECUTORS, GET_FRAMEWORKS, "
            "GET_HEALTH, GET_MAINTENANCE_SCHEDULE, GET_MAINTENANCE_STATUS, GET_QUOTA, "
            "GET_STATE, GET_TASKS, GET_VERSION, REACTIVATE_AGENT, REMOVE_QUOTA, SET_QUOTA, "
            "START_MAINTENANCE, STOP_MAINTENANCE, UPDATE_MAINTENANCE_SCHEDULE, UPDATE_QUOTA",
        ),
        ({"type": 9}, JSON, 200, '{"type":"GET_STATE"'),
    ],
)
def test_bad_requests(
    cluster: LocalCluster,
    body: Any,
    headers: dict[str, str],
    status: int,
    message: str,
) -> None:
    got, _, answer = _post(cluster, body, headers)
    assert (got, answer.decode()[: len(message)]) == (status, message)


def test_wrong_method(cluster: LocalCluster) -> None:
    for path in ("/api/v1", "/master/api/v1"):
        status, headers, body = _post(cluster, b"", {}, method="GET", path=path)
        assert (status, headers["allow"]) == (405, "POST")
        assert body == b"Expecting one of { 'POST' }, but received 'GET'"


def test_files_download(cluster: LocalCluster, running: RawFramework) -> None:
    agent = next(a for a in cluster.agents if any(True for _ in a.file_roots()))
    fid = running.framework_id
    sandbox = f"/slaves/{agent.id}/frameworks/{fid}/executors/quick/runs/latest"
    conn = http.client.HTTPConnection(*cluster.address.split(":"), timeout=10)
    try:
        conn.request("GET", f"/files/download?path={sandbox}/stdout")
        resp = conn.getresponse()
        body = resp.read()
        assert resp.status == 200, body
        assert resp.getheader("Content-Disposition") == "attachment; filename=stdout"
        assert resp.getheader("Content-Type") == "application/octet-stream"
        assert b"done" in body and int(resp.getheader("Content-Length") or -1) == len(body)
        for path, status, text in (
            ("/files/download", 400, b"Expecting 'path=value' in query."),
            (f"/files/download?path={sandbox}", 400, b"Cannot download a directory."),
            (f"/files/download?path={sandbox}/missing", 404, b""),
            ("/files/download?path=/etc/passwd", 404, b""),
        ):
            conn.request("GET", path)
            resp = conn.getresponse()
            assert (resp.status, resp.read()) == (status, text), path
    finally:
        conn.close()
