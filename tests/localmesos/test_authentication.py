"""Authentication and authorization on the embedded cluster, against its real HTTP server and
executor processes: executor tokens (``--authenticate_http_executors``), authenticated
read-only endpoints (``--authenticate_http_readonly``) and the master's ACLs (``--acls``) —
Mesos 1.11's ``src/slave/http.cpp`` ``Http::executor``, libprocess' authenticators,
``src/master/master.cpp`` ``checkSubscribeAuthorization`` and ``_accept``,
``src/master/readonly_handler.cpp``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
import http.client
import json
from pathlib import Path
from typing import Any

import pytest

from disauto.common.resources import RoleResources
from disauto.localmesos.cluster import LocalCluster
from disauto.localmesos.master.authorizer import parse_acls
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import wait_until
from tests.localmesos.executor_support import RawExecutor
from tests.localmesos.executor_support import executor_info
from tests.localmesos.executor_support import executor_task


pytestmark = pytest.mark.integration  # starts processes and servers

ALICE = ("alice", "a-secret")
READER = ("reader", "r-secret")
#: Writes its token into its sandbox, then waits: the test subscribes in its place.
TOKEN_WRITER = 'sh -c \'printf %s "$MESOS_EXECUTOR_AUTHENTICATION_TOKEN" > token; sleep 300\''


def _get(cluster: LocalCluster, path: str,
         auth: tuple[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(*cluster.address.split(":"), timeout=10)
    headers = {}
    if auth is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(":".join(auth).encode()).decode()
    try:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _token(cluster: LocalCluster, executor_id: str) -> str:
    """The token the agent gave ``executor_id`` (its program wrote it into its sandbox)."""
    def written() -> str:
        found = list(cluster.work_dir.glob(f"slaves/*/frameworks/*/executors/{executor_id}/"
                                           "runs/latest/token"))
        return found[0].read_text() if found and found[0].stat().st_size else ""
    return str(wait_until(written, timeout=20))


@pytest.fixture(scope="module")
def executors() -> Iterator[tuple[LocalCluster, RawFramework]]:
    with running_cluster(cpus=4.0, executor_registration_timeout=600.0,
                         authenticate_http_executors=True) as cluster:
        raw = RawFramework(cluster.address, auto_acknowledge=True)
        raw.subscribe()
        offer = wait_until(lambda: raw.offers(), timeout=10)[0]
        tasks = [executor_task(offer, f"for-{name}", executor=executor_info(
            name, command=TOKEN_WRITER)) for name in ("mine", "theirs")]
        assert raw.launch(offer, tasks, refuse_seconds=0) == 202
        try:
            yield cluster, raw
        finally:
            raw.close()


def test_each_executor_gets_a_jwt_naming_its_framework_executor_and_container(
        executors: tuple[LocalCluster, RawFramework]) -> None:
    cluster, raw = executors
    token = _token(cluster, "mine")
    header, payload, _ = token.split(".")
    assert json.loads(base64.urlsafe_b64decode(header + "==")) == {"alg": "HS256", "typ": "JWT"}
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    (run,) = [run for run in cluster.work_dir.glob("slaves/*/frameworks/*/executors/mine/runs/*")
              if run.name != "latest"]
    assert claims == {"fid": raw.framework_id, "eid": "mine", "cid": run.name}


def test_calls_without_the_executors_own_token_are_refused(
        executors: tuple[LocalCluster, RawFramework]) -> None:
    cluster, raw = executors
    mine, theirs = _token(cluster, "mine"), _token(cluster, "theirs")
    ex = RawExecutor(cluster.address, str(raw.framework_id), "mine")
    heartbeat = ex.body("HEARTBEAT")
    status, _ = ex.post(heartbeat)
    assert status == 401
    ex.authorization = "Basic YTpi"
    assert ex.post(heartbeat)[0] == 401
    ex.authorization = f"Bearer {mine[:-2]}AA"  # signature changed
    assert ex.subscribe() == 401
    ex.authorization = f"Bearer {theirs}"  # a valid token of another executor
    status, body = ex.post(ex.body("MESSAGE", message={"data": ""}))
    assert status == 403
    assert b"does not contain an 'eid' claim with the executor ID mine" in body
    ex.authorization = f"Bearer {mine}"
    try:
        assert ex.subscribe() == 200
        ex.wait_event(lambda e: e["type"] == "SUBSCRIBED")
    finally:
        ex.close()


def test_the_challenge_is_the_executor_realms(
        executors: tuple[LocalCluster, RawFramework]) -> None:
    cluster, raw = executors
    conn = http.client.HTTPConnection(*cluster.address.split(":"), timeout=10)
    try:
        conn.request("POST", "/api/v1/executor", b"{}", {"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 401
        assert resp.getheader("WWW-Authenticate") == 'Bearer realm="mesos-agent-executor"'
        token = _token(cluster, "mine")
        conn.request("POST", "/api/v1/executor", json.dumps({
            "type": "MESSAGE", "framework_id": {"value": raw.framework_id},
            "executor_id": {"value": "mine"}, "message": {"data": ""}}),
            {"Content-Type": "application/json", "Authorization": f"Bearer {token}x"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 401
        assert resp.getheader("WWW-Authenticate").startswith(
            'Bearer realm="mesos-agent-executor", error="invalid_token", '
            'error_description="Invalid JWT: ')
    finally:
        conn.close()


@pytest.fixture(scope="module")
def guarded() -> Iterator[LocalCluster]:
    acls = parse_acls({"permissive": True, "view_roles": [
        {"principals": {"values": ["alice"]}, "roles": {"values": ["*"]}},
        {"principals": {"values": ["alice"]}, "roles": {"type": "NONE"}}]})
    with running_cluster(credentials=dict([ALICE]), http_credentials=dict([READER]),
                         authenticate_http_readonly=True, acls=acls,
                         resources=RoleResources.parse("cpus(ml):1;cpus(*):1")) as cluster:
        yield cluster


@pytest.mark.parametrize("path", ["/slave(1)/state", "/slave(1)/monitor/statistics",
                                  "/files/browse?path=/", "/files/read?path=/x&offset=0"])
def test_agent_reads_need_the_agents_credentials(guarded: LocalCluster, path: str) -> None:
    for auth in (None, ALICE, ("reader", "wrong")):
        status, headers, _ = _get(guarded, path, auth)
        assert status == 401, (path, auth)
        assert headers["www-authenticate"] == 'Basic realm="mesos-agent-readonly"'
    status, _, _ = _get(guarded, path, READER)
    assert status in (200, 400, 404), path  # no longer refused by authentication


def test_master_reads_need_the_masters_credentials(guarded: LocalCluster) -> None:
    for path in ("/master/state", "/master/slaves", "/master/frameworks", "/state"):
        status, headers, _ = _get(guarded, path, READER)
        assert status == 401 and headers["www-authenticate"] == \
            'Basic realm="mesos-master-readonly"'
        assert _get(guarded, path, ALICE)[0] == 200
    for path in ("/version", "/health", "/metrics/snapshot"):  # open in Mesos too
        assert _get(guarded, path)[0] == 200


def test_reservations_of_roles_the_reader_may_not_view_are_hidden(
        guarded: LocalCluster) -> None:
    status, _, body = _get(guarded, "/master/slaves", ALICE)
    (agent,) = json.loads(body)["slaves"]
    assert status == 200 and agent["reserved_resources"] == {}
    assert agent["reserved_resources_full"] == {}
    assert agent["resources"]["cpus"] == 2  # the totals stay whole, as in Mesos
    assert agent["unreserved_resources"]["cpus"] == 1
    (state_agent,) = json.loads(_get(guarded, "/master/state", ALICE)[2])["slaves"]
    assert state_agent["reserved_resources"] == {}


def test_denied_registration_and_launch(tmp_path: Path) -> None:
    acls = parse_acls({"register_frameworks": [
        {"principals": {"values": ["alice"]}, "roles": {"values": ["dev"]}},
        {"principals": {"type": "ANY"}, "roles": {"type": "NONE"}}],
        "run_tasks": [{"principals": {"values": ["alice"]}, "users": {"values": ["nobody"]}},
                      {"principals": {"type": "ANY"}, "users": {"type": "NONE"}}]})
    with running_cluster(credentials=dict([ALICE]), acls=acls) as cluster:
        refused = RawFramework(cluster.address, auth=ALICE, roles=["ml"],
                               capabilities=["MULTI_ROLE"])
        with pytest.raises(AssertionError) as err:
            refused.subscribe()
        assert "Not authorized to register framework  with roles { ml }" in str(err.value)
        refused.close()
        raw = RawFramework(cluster.address, auth=ALICE, roles=["dev"],
                           capabilities=["MULTI_ROLE"], auto_acknowledge=True)
        raw.subscribe()
        try:
            offer = wait_until(lambda: raw.offers(), timeout=10)[0]
            task: dict[str, Any] = command_task(offer, "as-root", "true", cpus=0.1, mem=32)
            task["command"]["user"] = "root"
            assert raw.launch(offer, [task]) == 202
            (status,) = wait_until(lambda: raw.updates("as-root"), timeout=10)
            assert status["state"] == "TASK_ERROR" and status["source"] == "SOURCE_MASTER"
            assert status["reason"] == "REASON_TASK_UNAUTHORIZED"
            assert status["message"] == (f"Not authorized to launch task as-root of framework "
                                         f"{raw.framework_id} under user 'root'")
        finally:
            raw.close()
