"""Transport rules of the scheduler API and the other endpoints, seen with raw HTTP clients."""

from __future__ import annotations

from collections.abc import Iterator
import http.client
import json
import socket
import threading
import time
from typing import Any

import pytest

from disauto.localmesos.cluster import LocalCluster
from disauto.localmesos.server.messages import accepts_json
from disauto.localmesos.server.messages import parse_basic_auth
from tests.localmesos.cluster_support import USER
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration  # starts processes or servers


SUBSCRIBE = {"type": "SUBSCRIBE", "subscribe": {"framework_info": {"user": USER, "name": "h"}}}


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with running_cluster(agents=1, heartbeat_interval=0.3, request_timeout=1.0) as c:
        yield c


@pytest.fixture
def framework(cluster: LocalCluster) -> Iterator[RawFramework]:
    raw = RawFramework(cluster.address, auto_acknowledge=True)
    raw.subscribe()
    yield raw
    raw.call("TEARDOWN")
    raw.close()


def _connect(cluster: LocalCluster) -> http.client.HTTPConnection:
    host, port = cluster.address.split(":")
    return http.client.HTTPConnection(host, int(port), timeout=5)


def _request(
    cluster: LocalCluster,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    conn = _connect(cluster)
    try:
        conn.request(method, path, body, headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _raw_socket(cluster: LocalCluster) -> socket.socket:
    host, port = cluster.address.split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    return sock


def _read_until(sock: socket.socket, marker: bytes, limit: float = 5.0) -> bytes:
    data = b""
    deadline = time.monotonic() + limit
    while marker not in data and time.monotonic() < deadline:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


# -- the event stream -------------------------------------------------------------------------


def test_subscribe_is_a_chunked_recordio_stream(cluster: LocalCluster) -> None:
    sock = _raw_socket(cluster)
    body = json.dumps(SUBSCRIBE).encode()
    sock.sendall(
        b"POST /api/v1/scheduler HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Accept: application/json\r\nConnection: close\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    data = _read_until(sock, b"HEARTBEAT")
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 200 OK"
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert headers["transfer-encoding"] == "chunked"
    assert "content-length" not in headers
    assert headers["content-type"] == "application/json"
    assert len(headers["mesos-stream-id"]) == 36  # a UUID
    # Decode the chunks, then the RecordIO records inside them.
    payload = b""
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        if not size_line:
            break
        size = int(size_line, 16)
        if len(rest) < size + 2:
            rest = size_line + b"\r\n" + rest + _read_until(sock, b"\r\n", 1)
            continue
        payload += rest[:size]
        rest = rest[size + 2:]
    events = []
    while payload:
        length, _, payload = payload.partition(b"\n")
        events.append(json.loads(payload[: int(length)]))
        payload = payload[int(length):]
    assert [e["type"] for e in events[:2]] == ["SUBSCRIBED", "HEARTBEAT"]
    subscribed = events[0]["subscribed"]
    assert subscribed["heartbeat_interval_seconds"] == 0.3
    assert subscribed["master_info"]["version"] == "1.11.0"
    assert subscribed["master_info"]["port"] == cluster.port
    sock.close()


def test_heartbeats_keep_coming(cluster: LocalCluster, framework: RawFramework) -> None:
    wait_until(lambda: len(framework.of_type("HEARTBEAT")) >= 4, timeout=3)


def test_subscribe_with_stream_id_is_refused(cluster: LocalCluster) -> None:
    status, _, body = _request(
        cluster, "POST", "/api/v1/scheduler", json.dumps(SUBSCRIBE).encode(),
        {"Content-Type": "application/json", "Mesos-Stream-Id": "x"},
    )
    assert (status, body) == (
        400, b"Subscribe calls should not include the 'Mesos-Stream-Id' header"
    )


def test_master_api_path_alias_serves_subscribe(cluster: LocalCluster) -> None:
    conn = _connect(cluster)
    conn.request(
        "POST", "/master/api/v1/scheduler", json.dumps(SUBSCRIBE),
        {"Content-Type": "application/json"},
    )
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Mesos-Stream-Id")
    first = json.loads(resp.read(int(resp.readline())))
    assert first["type"] == "SUBSCRIBED"
    conn.close()


def test_refused_framework_gets_error_event_then_end_of_stream(cluster: LocalCluster) -> None:
    raw = RawFramework(cluster.address, roles=["a"])  # roles without MULTI_ROLE
    with pytest.raises(AssertionError, match="subscription refused"):
        raw.subscribe()
    assert raw.ended.wait(5)
    error = raw.of_type("ERROR")[0]["error"]["message"]
    assert "MULTI_ROLE" in error


# -- calls ------------------------------------------------------------------------------------


def test_calls_get_202_with_content_length_zero_on_one_keep_alive_connection(
    cluster: LocalCluster, framework: RawFramework
) -> None:
    for _ in range(3):
        status, headers, body = framework.request(
            {"type": "REVIVE", "framework_id": {"value": framework.framework_id}}
        )
        assert (status, body) == (202, b"")
        assert headers["content-length"] == "0"
        assert headers.get("connection") != "close"
    assert framework._calls is not None and framework._calls.sock is not None  # still open


@pytest.mark.parametrize(
    ("body", "headers", "status", "message"),
    [
        (b"{}", {}, 400, b"Expecting 'Content-Type' to be present"),
        (b"{}", {"Content-Type": "text/plain"}, 415, b"Expecting 'Content-Type' of"),
        (b"{}", {"Content-Type": "application/json; charset=utf-8"}, 415, b"Expecting"),
        (b"{", {"Content-Type": "application/json"}, 400, b"Failed to parse body into JSON"),
        (
            b'{"type": "TEARDOWN"}',
            {"Content-Type": "application/json"},
            400,
            b"Failed to validate scheduler::Call: Expecting 'framework_id' to be present",
        ),
        (
            b'{"type": "TEARDOWN", "framework_id": {"value": "nope"}}',
            {"Content-Type": "application/json"},
            400,
            b"Framework cannot be found",
        ),
    ],
)
def test_call_errors(
    cluster: LocalCluster, body: bytes, headers: dict[str, str], status: int, message: bytes
) -> None:
    got, _, content = _request(cluster, "POST", "/api/v1/scheduler", body, headers)
    assert got == status and message in content


def test_protobuf_is_not_spoken(cluster: LocalCluster) -> None:
    status, _, body = _request(
        cluster, "POST", "/api/v1/scheduler", b"\x08\x01",
        {"Content-Type": "application/x-protobuf"},
    )
    assert status == 415 and b"application/json" in body


def test_non_post_is_405_with_allow(cluster: LocalCluster) -> None:
    status, headers, body = _request(cluster, "GET", "/api/v1/scheduler")
    assert status == 405 and headers["allow"] == "POST"
    assert body == b"Expecting one of { 'POST' }, but received 'GET'"


def test_subscribe_needing_protobuf_is_406(cluster: LocalCluster) -> None:
    for accept in ("application/x-protobuf", "text/html", "application/json;q=0"):
        status, _, body = _request(
            cluster, "POST", "/api/v1/scheduler", json.dumps(SUBSCRIBE).encode(),
            {"Content-Type": "application/json", "Accept": accept},
        )
        assert status == 406 and b"Expecting 'Accept' to allow" in body


def test_stream_id_is_required_and_checked(
    cluster: LocalCluster, framework: RawFramework
) -> None:
    revive = {"type": "REVIVE", "framework_id": {"value": framework.framework_id}}
    status, _, body = framework.request(revive, stream_id=False)
    assert status == 400
    assert body == b"All non-subscribe calls should include the 'Mesos-Stream-Id' header"
    status, _, body = framework.request(revive, stream_id="not-the-one")
    assert status == 400 and b"didn't match the stream ID" in body


def test_disconnected_framework_is_403(cluster: LocalCluster) -> None:
    raw = RawFramework(cluster.address, failover_timeout=30.0)
    raw.subscribe()
    raw.disconnect()
    revive = {"type": "REVIVE", "framework_id": {"value": raw.framework_id}}

    def refused() -> bool:
        return raw.request(revive)[0] == 403

    wait_until(refused, timeout=5)
    status, _, body = raw.request(revive)
    assert (status, body) == (403, b"Framework is not subscribed")
    # Re-subscribing with the id brings it back; then TEARDOWN answers 202.
    again = RawFramework(cluster.address, framework_id=raw.framework_id, failover_timeout=30.0)
    again.subscribe()
    assert again.call("TEARDOWN") == 202
    again.close()
    raw.close()


def test_update_framework_is_200_and_unknown_call_501(
    cluster: LocalCluster, framework: RawFramework
) -> None:
    info = dict(framework.info, id={"value": framework.framework_id}, name="renamed")
    assert framework.call("UPDATE_FRAMEWORK", update_framework={"framework_info": info}) == 200
    fw = [f for f in get_json(cluster, "/master/state")["frameworks"]
          if f["id"] == framework.framework_id][0]
    assert fw["name"] == "renamed"
    bad = dict(info, user="someone-else")
    status, _, body = framework.request(
        {
            "type": "UPDATE_FRAMEWORK",
            "framework_id": {"value": framework.framework_id},
            "update_framework": {"framework_info": bad},
        }
    )
    assert status == 400 and b"Updating 'FrameworkInfo.user' is unsupported" in body
    unknown = {"type": "UNKNOWN", "framework_id": {"value": framework.framework_id}}
    assert framework.request(unknown)[0] == 501


def test_reconcile_operations_answers_with_a_body(
    cluster: LocalCluster, framework: RawFramework
) -> None:
    status, headers, body = framework.request(
        {
            "type": "RECONCILE_OPERATIONS",
            "framework_id": {"value": framework.framework_id},
            "reconcile_operations": {"operations": [{"operation_id": {"value": "op"}}]},
        }
    )
    assert status == 200 and headers["content-type"] == "application/json"
    answer = json.loads(body)
    assert answer["reconcile_operations"]["operation_statuses"] == [
        {"operation_id": {"value": "op"}, "state": "OPERATION_UNKNOWN"}
    ]


def test_huge_body_is_413_and_server_lives_on(cluster: LocalCluster) -> None:
    sock = _raw_socket(cluster)
    sock.sendall(
        b"POST /api/v1/scheduler HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 999999999999\r\n\r\n{"
    )
    assert _read_until(sock, b"\r\n").startswith(b"HTTP/1.1 413")
    sock.close()
    assert _request(cluster, "GET", "/version")[0] == 200


def test_chunked_request_bodies_and_expect_continue(
    cluster: LocalCluster, framework: RawFramework
) -> None:
    body = json.dumps({"type": "REVIVE", "framework_id": {"value": framework.framework_id}})
    data = body.encode()
    sock = _raw_socket(cluster)
    sock.sendall(
        b"POST /api/v1/scheduler HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Mesos-Stream-Id: {framework.stream_id}\r\n".encode()
        + b"Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
    )
    assert _read_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 100 Continue")
    sock.sendall(
        f"{len(data[:5]):x}\r\n".encode() + data[:5] + b"\r\n"
        + f"{len(data[5:]):x}\r\n".encode() + data[5:] + b"\r\n0\r\n\r\n"
    )
    assert _read_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 202 Accepted")
    sock.close()


def test_slow_or_broken_clients_do_not_wedge_the_server(cluster: LocalCluster) -> None:
    slow = [_raw_socket(cluster) for _ in range(5)]
    for sock in slow:
        sock.sendall(b"POST /api/v1/scheduler HTTP/1.1\r\nHost: x\r\nContent-Le")
    # Others are served while those dawdle...
    assert _request(cluster, "GET", "/version")[0] == 200
    # ...and the dawdlers are dropped once the request timeout (1 s here) passes.
    for sock in slow:
        sock.settimeout(5)
        assert sock.recv(100) == b""
        sock.close()
    bad = _raw_socket(cluster)
    bad.sendall(b"THIS IS NOT HTTP\r\n\r\n")
    assert _read_until(bad, b"\r\n").startswith(b"HTTP/1.1 400")
    bad.close()
    garbage = _raw_socket(cluster)
    garbage.sendall(b"\x00\xff" * 5000 + b"\r\n\r\n")
    assert _read_until(garbage, b"\r\n").startswith(b"HTTP/1.1 4")
    garbage.close()
    assert _request(cluster, "GET", "/version")[0] == 200


def test_idle_keep_alive_connections_are_not_dropped(
    cluster: LocalCluster, framework: RawFramework
) -> None:
    """pymesos reuses one connection for calls and cannot survive it being closed idle."""
    assert framework.call("REVIVE") == 202
    time.sleep(1.5)  # longer than the request timeout
    assert framework.call("REVIVE") == 202


def test_many_concurrent_clients(cluster: LocalCluster) -> None:
    errors: list[Any] = []

    def hammer() -> None:
        try:
            conn = _connect(cluster)
            for _ in range(20):
                conn.request("GET", "/master/state")
                resp = conn.getresponse()
                json.loads(resp.read())
                assert resp.status == 200
            conn.close()
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


# -- other endpoints --------------------------------------------------------------------------


def test_version_is_numeric(cluster: LocalCluster) -> None:
    status, headers, body = _request(cluster, "GET", "/version")
    version = json.loads(body)["version"]
    assert status == 200 and headers["content-type"] == "application/json"
    assert tuple(int(n) for n in version.split(".")) == (1, 11, 0)


@pytest.mark.parametrize("path", ["/health", "/master/health"])
def test_health(cluster: LocalCluster, path: str) -> None:
    assert _request(cluster, "GET", path)[:1] == (200,)


def test_head_has_headers_only(cluster: LocalCluster) -> None:
    status, headers, body = _request(cluster, "HEAD", "/version")
    assert status == 200 and body == b"" and int(headers["content-length"]) > 0


def test_unknown_paths_and_methods(cluster: LocalCluster) -> None:
    assert _request(cluster, "GET", "/nope")[0] == 404
    status, headers, _ = _request(cluster, "DELETE", "/master/state")
    assert status == 405 and "GET" in headers["allow"]


def test_jsonp(cluster: LocalCluster) -> None:
    for path in ("/master/state", "/state", "/metrics/snapshot", "/version"):
        status, headers, body = _request(cluster, "GET", f"{path}?jsonp=cb")
        assert status == 200 and headers["content-type"] == "text/javascript"
        assert body.startswith(b"cb(") and body.endswith(b");")
        json.loads(body[3:-2])


def test_index_page_is_the_web_ui(cluster: LocalCluster) -> None:
    status, headers, body = _request(cluster, "GET", "/")
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    assert b'<script src="/static/app.js">' in body
    for path, kind in (("/static/app.js", "text/javascript"), ("/static/app.css", "text/css")):
        status, headers, _ = _request(cluster, "GET", path)
        assert status == 200 and headers["content-type"].startswith(kind)
    assert _request(cluster, "GET", "/static/missing.js")[0] == 404


def test_files_endpoints(cluster: LocalCluster, framework: RawFramework) -> None:
    offer = framework.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
    framework.launch(offer, [command_task(offer, "writer", "printf 0123456789 > out.txt")])
    finished = framework.wait_event(
        lambda e: e["type"] == "UPDATE" and e["update"]["status"]["state"] == "TASK_FINISHED"
    )
    assert finished["update"]["status"]["task_id"]["value"] == "writer"
    sandbox = f"/frameworks/{framework.framework_id}/executors/writer/runs/latest"
    listing = get_json(cluster, f"/files/browse?path={sandbox}")
    entry = next(e for e in listing if e["path"].endswith("/out.txt"))
    assert entry["size"] == 10 and entry["mode"].startswith("-")
    assert get_json(cluster, f"/files/read?path={sandbox}/out.txt&offset=2&length=3") == {
        "data": "234",
        "offset": 2,
    }
    # offset -1 (the default) answers the size, as the web UI's log tailer expects.
    assert get_json(cluster, f"/files/read?path={sandbox}/out.txt") == {"data": "", "offset": 10}
    # The agent's own virtual path and the real path work too.
    agent_id = cluster.agents[0].id
    fid = framework.framework_id
    agent_path = f"/slaves/{agent_id}/frameworks/{fid}/executors/writer/runs/latest"
    assert get_json(cluster, f"/files/read?path={agent_path}/out.txt&offset=0")["data"] == (
        "0123456789"
    )
    assert _request(cluster, "GET", "/files/read")[0] == 400
    assert _request(cluster, "GET", f"/files/read?path={sandbox}/out.txt&offset=x")[0] == 400
    assert _request(cluster, "GET", f"/files/read?path={sandbox}/missing")[0] == 404
    assert _request(cluster, "GET", "/files/read?path=/etc/passwd")[0] == 404
    escape = f"/files/read?path={sandbox}/../../../../../../../../etc/passwd"
    assert _request(cluster, "GET", escape)[0] in (400, 404)
    status, _, body = _request(cluster, "GET", f"/files/browse?path={sandbox}&jsonp=f")
    assert status == 200 and body.startswith(b"f(")


def test_helpers() -> None:
    assert accepts_json(None) and accepts_json("") and accepts_json("*/*")
    assert accepts_json("text/html, application/json;q=0.5")
    assert not accepts_json("application/x-protobuf")
    assert parse_basic_auth("Basic YWxpY2U6czNjcmV0") == ("alice", "s3cret")
    assert parse_basic_auth("Bearer x") is None and parse_basic_auth("Basic !!") is None
