"""The master's read-only endpoints and their root aliases through raw HTTP, in Mesos' shapes."""

from __future__ import annotations

import http.client
from typing import Any

import pytest

from disauto.localmesos.cluster import LocalCluster
from disauto.localmesos.server.master_routes import master_route
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration  # starts processes or servers

#: Endpoints of the master process; libprocess serves each at the root as well.
ENDPOINTS = (
    "state", "state-summary", "tasks", "roles", "slaves", "frameworks", "flags", "weights",
    "quota", "maintenance/status",
)  # fmt: skip
#: A sample of the flags every Mesos 1.11 master reports (``src/master/flags.cpp`` defaults).
MESOS_FLAGS = {
    "agent_ping_timeout": "15secs", "allocator": "hierarchical", "authenticators": "crammd5",
    "framework_sorter": "drf", "help": "false", "logging_level": "INFO",
    "max_agent_ping_timeouts": "5", "publish_per_framework_metrics": "true",
    "registry_max_agent_age": "2weeks", "registry_max_agent_count": "102400",
    "offer_constraints_re2_max_mem": "4KB", "zk_session_timeout": "10secs",
}  # fmt: skip


def raw_get(cluster: LocalCluster, path: str, method: str = "GET") -> tuple[int, Any, bytes]:
    """(status, headers, body) of one request, redirects not followed."""
    conn = http.client.HTTPConnection(*cluster.address.split(":"), timeout=10)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        return resp.status, resp.headers, resp.read()
    finally:
        conn.close()


def _launch(cluster: LocalCluster) -> tuple[RawFramework, str, str]:
    """A framework with a finished task and two running ones; (framework, its id, agent id)."""
    raw = RawFramework(cluster.address, name="viewer", auto_acknowledge=True)
    fid = raw.subscribe()
    agent_id = ""
    for task_id, command, state in (
        ("first", "true", "TASK_FINISHED"), ("second", "sleep 30", "TASK_RUNNING"),
        ("third", "sleep 30", "TASK_RUNNING"),
    ):  # fmt: skip
        offer = wait_until(lambda: raw.of_type("OFFERS"))[-1]["offers"]["offers"][0]
        seen = len(raw.of_type("OFFERS"))
        agent_id = str(offer["agent_id"]["value"])
        raw.launch(offer, [command_task(offer, task_id, command)], refuse_seconds=0.0)
        wait_until(lambda t=task_id, s=state: any(u["state"] == s for u in raw.updates(t)))
        # The next allocation run: on a machine as busy as make test's three workers make it,
        # a run can wait seconds for the CPU (a fresh clone's run waited more than 10 s).
        wait_until(lambda n=seen: len(raw.of_type("OFFERS")) > n, timeout=30)
    return raw, fid, agent_id


def test_master_route_names_the_endpoint_under_master_and_at_the_root() -> None:
    assert master_route("/master/tasks") == master_route("/tasks") == "tasks"
    assert master_route("/maintenance/status") == "maintenance/status"
    assert master_route("/master/redirect/x") == master_route("/redirect/x") == "redirect/"
    assert master_route("/metrics/snapshot") is None and master_route("/version") is None
    assert master_route("/master/version") is None  # Mesos' master has no /version route


def test_every_endpoint_answers_under_master_and_at_the_root_with_jsonp() -> None:
    with running_cluster() as cluster:
        raw, fid, _ = _launch(cluster)
        for name in ENDPOINTS:
            under = get_json(cluster, f"/master/{name}")
            root = get_json(cluster, f"/{name}")
            assert type(under) is type(root), name
            if isinstance(under, dict):
                assert set(under) == set(root), name
            status, headers, body = raw_get(cluster, f"/{name}?jsonp=cb")
            assert status == 200 and headers["Content-Type"] == "text/javascript", name
            assert body.startswith(b"cb(") and body.endswith(b");"), name
            assert raw_get(cluster, f"/master/{name}", "POST")[0] == 405, name
        assert raw_get(cluster, "/master/version")[0] == 404
        assert raw_get(cluster, "/health")[0] == 200
        assert get_json(cluster, "/master/quota") == {}
        assert get_json(cluster, "/maintenance/status") == {}
        assert get_json(cluster, "/weights") == []
        raw.close()


def test_redirect_on_the_leader_points_at_itself() -> None:
    with running_cluster() as cluster:
        for path in ("/master/redirect", "/redirect"):
            status, headers, _ = raw_get(cluster, path)
            assert status == 307 and headers["Location"] == f"//{cluster.address}"
        assert raw_get(cluster, "/master/redirect/anything")[0] == 404


def test_tasks_filter_order_and_page() -> None:
    with running_cluster(cpus=4.0) as cluster:
        raw, fid, _ = _launch(cluster)

        def ids(query: str) -> list[str]:
            return [t["id"] for t in get_json(cluster, f"/master/tasks{query}")["tasks"]]

        assert ids("") == ["third", "second", "first"]  # newest first
        assert ids("?order=asc") == ["first", "second", "third"]
        assert ids("?limit=1&offset=1") == ["second"]
        assert ids("?offset=5") == [] and ids("?limit=x") == ids("")
        assert ids(f"?framework_id={fid}&task_id=second") == ["second"]
        assert ids("?framework_id=nobody") == []
        task = get_json(cluster, "/tasks?task_id=first")["tasks"][0]
        assert task["state"] == "TASK_FINISHED" and task["framework_id"] == fid
        assert {"id", "name", "slave_id", "state", "resources", "statuses"} <= set(task)
        raw.close()


def test_state_summary_roles_slaves_and_frameworks() -> None:
    with running_cluster(cpus=4.0, weights={"*": 2.0}) as cluster:
        raw, fid, agent_id = _launch(cluster)
        summary = get_json(cluster, "/master/state-summary")
        assert summary["hostname"] == "127.0.0.1" and "cluster" not in summary
        agent = summary["slaves"][0]
        assert agent["id"] == agent_id and agent["framework_ids"] == [fid]
        assert agent["TASK_RUNNING"] == 2 and agent["TASK_FINISHED"] == 1
        assert "used_resources_full" not in agent and agent["used_resources"]["cpus"] > 0
        framework = summary["frameworks"][0]
        assert framework["id"] == fid and framework["slave_ids"] == [agent_id]
        assert framework["TASK_RUNNING"] == 2 and "tasks" not in framework
        assert {"name", "active", "connected", "recovered", "offered_resources"} <= set(framework)

        role = get_json(cluster, "/roles")["roles"][0]
        assert role["name"] == "*" and role["weight"] == 2.0 and role["frameworks"] == [fid]
        assert role["allocated"]["cpus"] == pytest.approx(0.2)
        assert role["quota"] == {
            "role": "*", "guarantee": {}, "limit": {}, "consumed": role["allocated"],
        }  # fmt: skip
        assert role["reserved"] == {} and set(role["resources"]) >= set(role["allocated"])
        assert get_json(cluster, "/master/weights") == [{"weight": 2.0, "role": "*"}]

        slaves = get_json(cluster, "/slaves")
        assert slaves["recovered_slaves"] == [] and slaves["slaves"][0]["id"] == agent_id
        assert get_json(cluster, "/master/slaves?slave_id=other")["slaves"] == []
        frameworks = get_json(cluster, f"/frameworks?framework_id={fid}")
        assert [f["id"] for f in frameworks["frameworks"]] == [fid]
        assert get_json(cluster, "/master/frameworks?framework_id=x")["frameworks"] == []
        raw.close()


def test_flags_are_those_of_a_mesos_master() -> None:
    with running_cluster() as cluster:
        flags = get_json(cluster, "/master/flags")["flags"]
        assert flags == get_json(cluster, "/flags")["flags"]
        assert flags == get_json(cluster, "/master/state")["flags"]
        assert MESOS_FLAGS.items() <= flags.items()
        assert flags["allocation_interval"] == "100ms" and flags["registry"] == "in_memory"
        assert flags["port"] == str(cluster.port) and len(flags) >= 50
        assert list(flags) == sorted(flags)
        assert all(isinstance(v, str) for v in flags.values())
