"""The telemetry data service over real HTTP against a real job store: the registry (list, add,
change, delete, the job token), the samples by name, node, trial and time, and every bad
request answered with one line of JSON naming what is wrong and what is valid."""

from __future__ import annotations

from collections.abc import Iterator
import json
from pathlib import Path
from typing import Any

import pytest

from disauto.common import telemetry
from disauto.framework._telemetry.processors import builtin_processors
from disauto.framework._telemetry.registry import TelemetryRegistry
from disauto.framework.webui.server import JobPageServer
from disauto.framework.webui.sources import LiveJob
from disauto.framework.webui.sources import RecordedJob
from disauto.testing.inprocess import AGENT
from tests.framework.webui.records import TOKEN
from tests.framework.webui.records import Client
from tests.framework.webui.records import Recorded
from tests.framework.webui.records import record_telemetry


pytestmark = pytest.mark.integration  # starts an HTTP server

ENTRY = {"name": "disk", "kind": "collector", "interval": 5,
         "command": "echo '{\"data_name\": \"disk\", \"node\": \"n\", \"value\": 1}'"}


@pytest.fixture
def recorded(tmp_path: Path) -> Recorded:
    recorded = Recorded(tmp_path / "job-test")
    record_telemetry(recorded, start=1_000.0)
    return recorded


@pytest.fixture
def registry(recorded: Recorded) -> TelemetryRegistry:
    return TelemetryRegistry(recorded.store, processors=builtin_processors(),
                             workdir=recorded.folder)


@pytest.fixture
def client(recorded: Recorded, registry: TelemetryRegistry) -> Iterator[Client]:
    source = LiveJob(recorded.controller, recorded.folder, lambda _: None, registry)
    server = JobPageServer(lambda: {"job-test": source}, "127.0.0.1", "127.0.0.1",
                           single="job-test")
    server.start()
    yield Client(server.port)
    server.stop()


def send(client: Client, method: str, path: str, body: Any = None,
         token: str | None = TOKEN) -> tuple[int, Any]:
    raw = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    status, data, headers = client.request(method, path, raw, token)
    assert headers["Content-Type"] == "application/json"
    return status, data


@pytest.mark.parametrize("prefix", ["/jobs/job-test", ""])
def test_the_registry_is_listed_added_to_changed_and_deleted(
        client: Client, registry: TelemetryRegistry, prefix: str) -> None:
    status, data = send(client, "GET", f"{prefix}/api/registry", token=None)
    assert status == 200 and data["live"] is True
    assert [(e["name"], e["builtin"]) for e in data["entries"]] == [("cpu_utilization", True)]
    assert data["entries"][0]["status"]["runs"] == 0
    assert send(client, "POST", f"{prefix}/api/registry", ENTRY) == (
        201, {**ENTRY, "interval": 5.0, "timeout": 10.0, "inputs": [], "builtin": False})
    status, data = send(client, "PUT", f"{prefix}/api/registry/disk", {"interval": 2})
    assert (status, data["interval"]) == (200, 2.0)
    status, data = send(client, "GET", f"{prefix}/api/registry/disk", token=None)
    assert (status, data["interval"], data["status"]["last_error"]) == (200, 2.0, "")
    assert send(client, "DELETE", f"{prefix}/api/registry/disk") == (
        200, {"ok": True, "message": "disk deleted"})
    assert [e.name for e in registry.entries()] == ["cpu_utilization"]


def test_the_samples_by_name_node_trial_and_time(client: Client) -> None:
    path = f"/api/data?dataName={telemetry.MEM_RSS}&node={AGENT}&trial=3"
    status, data = send(client, "GET", "/jobs/job-test" + path, token=None)
    assert status == 200 and data["count"] == 10 and not data["truncated"]
    assert data["samples"][0] == {"data_name": telemetry.MEM_RSS, "node": AGENT, "trial": 3,
                                  "time": 1300.0, "value": 30.0 * 2**20}
    status, data = send(client, "GET", path + "&since=1305", token=None)
    assert [s["time"] for s in data["samples"]] == [1305.0 + i for i in range(5)]
    status, data = send(client, "GET", f"/api/data?dataName={telemetry.CPU_UTILIZATION}")
    assert data["count"] == 80 and {s["trial"] for s in data["samples"]} == set(range(1, 9))
    status, data = send(client, "GET", "/api/data/names", token=None)
    assert status == 200
    assert data["names"] == [telemetry.AGENT_CPU_UTILIZATION, telemetry.CPU_UTILIZATION,
                             telemetry.MEM_RSS]
    assert data["nodes"] == ["agent-2", AGENT]
    rss = next(s for s in data["series"] if s["data_name"] == telemetry.MEM_RSS)
    assert (rss["node"], rss["count"], rss["trials"]) == (AGENT, 80, list(range(1, 9)))


NAMES = "agent_cpu_utilization, cpu_utilization, mem_rss_bytes"


@pytest.mark.parametrize(("method", "path", "body", "status", "error"), [
    ("GET", "/api/data", None, 400, f"missing dataName: one of {NAMES} (api/data/names)"),
    ("GET", "/api/data?dataName=nope", None, 404, f"no data named 'nope' (there is: {NAMES})"),
    ("GET", "/api/data?dataName=mem_rss_bytes&node=x", None, 404,
     "no mem_rss_bytes from node 'x' (nodes with mem_rss_bytes: agent-S0)"),
    ("GET", "/api/data?dataName=mem_rss_bytes&trial=three", None, 400,
     "trial must be a trial number (an integer), not 'three'"),
    ("GET", "/api/data?dataName=mem_rss_bytes&since=nan", None, 400,
     "since must be Unix seconds (a number), not 'nan'"),
    ("GET", "/api/data?dataName=a&dataName=b", None, 400, "dataName is given 2 times: give "
                                                          "it once"),
    ("GET", "/api/data?data_name=mem_rss_bytes", None, 400,
     "unknown parameter data_name (valid: dataName, node, trial, since)"),
    ("POST", "/api/data", b"{}", 405, "POST is not allowed on /jobs/job-test/api/data (GET is)"),
    ("GET", "/api/data/nodes", None, 404, "no such page: /jobs/job-test/api/data/nodes (the "
     "data service has api/registry, api/registry/<name>, api/data, api/data/names)"),
    ("GET", "/api/registry/nope", None, 404,
     "no collector or processor named 'nope' (there are: cpu_utilization)"),
    ("PUT", "/api/registry", b"{}", 405,
     "PUT is not allowed on /jobs/job-test/api/registry (GET, POST is)"),
    ("POST", "/api/registry/disk", b"{}", 405,
     "POST is not allowed on /jobs/job-test/api/registry/disk (GET, PUT, DELETE is)"),
    ("POST", "/api/registry", b"{nope", 400, "the request body is not valid JSON"),
    ("POST", "/api/registry", b"[1]", 400, "the request body must be a JSON object"),
    ("POST", "/api/registry", None, 400, "the request body must be a JSON object with the "
     "entry's fields (name, kind, command, interval, timeout, inputs)"),
    ("POST", "/api/registry", {**ENTRY, "interval": "often"}, 400,
     "bad interval 'often': seconds from 0.2 to 86400"),
    ("POST", "/api/registry", {"name": "x"}, 400, "missing kind, command, interval (an entry "
     "needs name, kind, command and interval; timeout and, for a processor, inputs)"),
    ("POST", "/api/registry", {**ENTRY, "name": "cpu_utilization"}, 409,
     "a built-in named 'cpu_utilization' exists already (PUT /api/registry/cpu_utilization "
     "changes it)"),
    ("PUT", "/api/registry/nope", {"interval": 1}, 404,
     "no collector or processor named 'nope' (there are: cpu_utilization)"),
    ("PUT", "/api/registry/cpu_utilization", {"command": "x"}, 400,
     "'cpu_utilization' is built in: only its interval can change"),
    ("DELETE", "/api/registry/cpu_utilization", None, 409,
     "'cpu_utilization' is built in and cannot be deleted (PUT can change its interval)"),
    ("DELETE", "/api/registry/nope", None, 404,
     "no collector or processor named 'nope' (there are: cpu_utilization)"),
])
def test_bad_requests_are_one_line_json_errors(client: Client, method: str, path: str,
                                               body: Any, status: int, error: str) -> None:
    assert send(client, method, "/jobs/job-test" + path, body) == (status, {"error": error})


def test_a_duplicate_name_is_refused(client: Client) -> None:
    assert send(client, "POST", "/api/registry", ENTRY)[0] == 201
    assert send(client, "POST", "/api/registry", ENTRY) == (409, {
        "error": "an entry named 'disk' exists already (PUT /api/registry/disk changes it)"})


@pytest.mark.parametrize(("method", "path"), [("POST", "/api/registry"),
                                              ("PUT", "/api/registry/cpu_utilization"),
                                              ("DELETE", "/api/registry/cpu_utilization")])
def test_writes_need_the_job_token(client: Client, registry: TelemetryRegistry, method: str,
                                   path: str) -> None:
    status, data = send(client, method, path, {"interval": 9}, token=None)
    assert status == 401 and data["error"].startswith("this action needs the job token")
    assert send(client, method, path, {"interval": 9}, token="wrong") == (
        403, {"error": "wrong job token"})
    assert [(e.name, e.interval) for e in registry.entries()] == [("cpu_utilization", 2.0)]


def test_a_job_served_from_its_record_reads_the_data_and_the_kept_registry(
        recorded: Recorded, registry: TelemetryRegistry) -> None:
    registry.add(ENTRY)
    registry.run("disk")
    source = RecordedJob("job-test", recorded.folder, lambda: "ended")
    server = JobPageServer(lambda: {"job-test": source}, "127.0.0.1", "127.0.0.1")
    server.start()
    try:
        client = Client(server.port)
        status, data = send(client, "GET", "/jobs/job-test/api/data?dataName=disk", token=None)
        assert (status, [s["value"] for s in data["samples"]]) == (200, [1.0])
        status, data = send(client, "GET", "/jobs/job-test/api/registry", token=None)
        assert status == 200 and data["live"] is False
        assert {e["name"]: e["status"]["runs"] for e in data["entries"]} == {
            "cpu_utilization": 0, "disk": 1}
        status, data = send(client, "DELETE", "/jobs/job-test/api/registry/disk")
        assert status == 409 and data["error"].startswith(
            "cannot delete a collector or processor here: this server reads job job-test "
            "from its record")
        # This server shows every job: the root's data service names the way to a job's.
        assert send(client, "GET", "/api/registry", token=None) == (404, {
            "error": "this server shows several jobs: use /jobs/<id>/api/registry "
                     "(GET /api/jobs lists them)"})
    finally:
        server.stop()
