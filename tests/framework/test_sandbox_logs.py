"""Reading a failed task's stderr through an agent's HTTP API.

The agent here is a small ``http.server`` on 127.0.0.1 standing in for a *remote* Mesos agent: it
serves ``/slave(1)/state`` (frameworks -> executors -> sandbox ``directory``) and ``/files/read``
(``offset=-1`` answers the file's length, otherwise ``data`` from ``offset`` for ``length``
bytes) over files in a real temporary folder, shaped as a Mesos agent answers them. It records
the requests it gets so the tests can check that only the tail is read. The embedded agent's own
``/files`` endpoints are tested with local mode (tests/localmesos); here only the client side is.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
import json
from pathlib import Path
import threading
from typing import Any
from urllib.parse import parse_qs
from urllib.parse import urlsplit

import pytest

from disauto.common import slots
from disauto.framework._sandbox_logs import SandboxLogs
from disauto.testing.inprocess import free_port
from disauto.testing.inprocess import task_status


pytestmark = pytest.mark.integration  # starts processes or servers


FRAMEWORK = "F-0001"


class FakeAgent(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: Path) -> None:
        super().__init__(("127.0.0.1", 0), _AgentHandler)
        self.root = root
        self.state: dict[str, Any] = {"frameworks": [], "completed_frameworks": []}
        self.requests: list[str] = []
        #: ``Authorization`` a read must carry (an agent with --authenticate_http_readonly).
        self.authorization: str | None = None

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def sandbox(self, executor_id: str, text: str, completed: bool = False,
                framework_id: str = FRAMEWORK) -> Path:
        """Create an executor's sandbox with this stderr and list it in /state."""
        directory = self.root / framework_id / executor_id
        directory.mkdir(parents=True)
        (directory / "stderr").write_text(text)
        (directory / "stdout").write_text("stdout of " + executor_id)
        key = "completed_frameworks" if completed else "frameworks"
        ekey = "completed_executors" if completed else "executors"
        self.state[key].append({"id": framework_id, ekey: [
            {"id": "someone-else", "directory": str(self.root / "nope")},
            {"id": executor_id, "directory": str(directory)},
        ]})
        return directory


class _AgentHandler(BaseHTTPRequestHandler):
    server: FakeAgent

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self.server.requests.append(self.path)
        wanted = self.server.authorization
        if wanted is not None and self.headers.get("Authorization") != wanted:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="mesos-agent-readonly"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/slave(1)/state":
            return self._json(self.server.state)
        if url.path == "/files/browse":
            folder = Path(query["path"])
            if not folder.is_dir():
                return self._json({}, 404)
            return self._json([{"path": f"{query['path']}/{entry.name}",
                                "size": entry.stat().st_size}
                               for entry in sorted(folder.iterdir())])
        if url.path == "/files/read":
            path = Path(query["path"])
            if not path.is_file():
                return self._json({}, 404)
            data = path.read_bytes()
            offset = int(query["offset"])
            if offset == -1:
                return self._json({"data": "", "offset": len(data)})
            length = int(query.get("length", len(data)))
            return self._json({"data": data[offset:offset + length].decode(), "offset": offset})
        return self._json({}, 404)

    def _json(self, body: Any, code: int = 200) -> None:
        payload = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass


@contextmanager
def serving(root: Path) -> Iterator[FakeAgent]:
    """A :class:`FakeAgent` over ``root``, answering on a thread until the block ends."""
    server = FakeAgent(root)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01},
                              daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[FakeAgent]:
    with serving(tmp_path) as server:
        yield server


def offer_from(agent_id: str, port: int, host_key: str = "ip", path: str = "/slave(1)",
               ) -> dict[str, Any]:
    return {"id": {"value": "O1"}, "agent_id": {"value": agent_id},
            "url": {"scheme": "http", "address": {host_key: "127.0.0.1", "port": port},
                    "path": path}}


def failed(task_id: str, agent_id: str = "S1", executor_id: str = "") -> dict[str, Any]:
    status = task_status(task_id, "TASK_FAILED", agent_id=agent_id)
    if executor_id:
        status["executor_id"] = {"value": executor_id}
    return status


def test_tail_reads_the_last_lines_of_stderr(agent: FakeAgent) -> None:
    agent.sandbox("trial-0003", "\n".join(f"line {i}" for i in range(1, 9)) + "\n\n   \n")
    logs = SandboxLogs()
    logs.remember([offer_from("S1", agent.port)])
    assert logs.tail(failed("trial-0003"), FRAMEWORK) == (
        "line 4 | line 5 | line 6 | line 7 | line 8")
    assert logs.tail(failed("trial-0003"), FRAMEWORK, name="stdout") == "stdout of trial-0003"


def test_only_the_last_max_bytes_are_fetched(agent: FakeAgent) -> None:
    directory = agent.sandbox("trial-0001", "x" * 5000 + "\nValueError: bad lr\n")
    logs = SandboxLogs(max_bytes=100)
    logs.remember([offer_from("S1", agent.port)])
    tail = logs.tail(failed("trial-0001"), FRAMEWORK)
    assert tail.endswith("x | ValueError: bad lr") and len(tail) <= 100
    reads = [r for r in agent.requests if r.startswith("/files/read")]
    size = (directory / "stderr").stat().st_size
    assert len(reads) == 2
    assert "offset=-1" in reads[0]
    assert f"offset={size - 100}" in reads[1] and "length=100" in reads[1]


def test_completed_executors_and_explicit_executor_ids(agent: FakeAgent) -> None:
    agent.sandbox("exec-7", "it broke\n", completed=True)
    logs = SandboxLogs()
    logs.remember([offer_from("S1", agent.port, host_key="hostname")])
    assert logs.tail(failed("trial-0007", executor_id="exec-7"), FRAMEWORK) == "it broke"


def test_a_warm_slot_task_is_read_from_its_own_folder(agent: FakeAgent) -> None:
    directory = agent.sandbox("job-slot-2", "the slot's own log\n")
    own = directory / slots.task_sandbox("trial-0004")
    own.mkdir(parents=True)
    (own / "stderr").write_text("Traceback\nValueError: bad x\n")
    logs = SandboxLogs()
    logs.remember([offer_from("S1", agent.port)])
    status = failed("trial-0004", executor_id="job-slot-2")
    assert logs.tail(status, FRAMEWORK, slot="job-slot-2") == "Traceback | ValueError: bad x"
    assert logs.task_sandbox("S1", FRAMEWORK, "trial-0004", "job-slot-2")[1] == str(own)


def test_one_state_lists_every_executor_of_the_framework(agent: FakeAgent) -> None:
    live = agent.sandbox("trial-0001", "")
    done = agent.sandbox("trial-0002", "", completed=True)
    agent.sandbox("trial-0003", "", framework_id="F-9999")
    logs = SandboxLogs()
    logs.remember([offer_from("S1", agent.port)])
    root = f"http://127.0.0.1:{agent.port}"
    assert logs.executor_sandboxes("S1", FRAMEWORK) == {
        "trial-0001": (root, str(live)), "trial-0002": (root, str(done)),
        "someone-else": (root, str(agent.root / "nope"))}
    assert agent.requests == ["/slave(1)/state"]
    assert logs.executor_sandboxes("S9", FRAMEWORK) == {}  # an agent never offered: no request
    assert agent.requests == ["/slave(1)/state"]


def test_another_frameworks_executor_is_not_read(agent: FakeAgent) -> None:
    agent.sandbox("trial-0001", "not ours\n", framework_id="F-9999")
    logs = SandboxLogs()
    logs.remember([offer_from("S1", agent.port)])
    assert logs.tail(failed("trial-0001"), FRAMEWORK) == ""


def test_an_agent_url_without_a_path(agent: FakeAgent) -> None:
    """A url whose path is empty: /state and /files are read from the root."""
    logs = SandboxLogs()
    logs.remember([offer_from("S1", agent.port, path="")])
    assert logs.tail(failed("trial-0001"), FRAMEWORK) == ""  # /state 404: best effort
    assert agent.requests == ["/state"]


def test_best_effort_when_nothing_can_be_read(agent: FakeAgent) -> None:
    logs = SandboxLogs(timeout=1.0)
    # Offers without a usable url are skipped.
    logs.remember([{"id": {"value": "O"}, "agent_id": {"value": "S2"}},
                   {"id": {"value": "O"}, "agent_id": {"value": "S3"},
                    "url": {"address": {"ip": "127.0.0.1"}}}])
    assert logs.tail(failed("trial-0001", agent_id="S2"), FRAMEWORK) == ""
    assert logs.tail(failed("trial-0001", agent_id="unknown"), FRAMEWORK) == ""
    # An agent that is gone.
    logs.remember([offer_from("S4", free_port())])
    assert logs.tail(failed("trial-0001", agent_id="S4"), FRAMEWORK) == ""
    # A sandbox listed in /state whose stderr is missing.
    directory = agent.sandbox("trial-0002", "")
    (directory / "stderr").unlink()
    logs.remember([offer_from("S1", agent.port)])
    assert logs.tail(failed("trial-0002"), FRAMEWORK) == ""
    # It got as far as asking for the file's length, which the agent answered 404.
    assert [r.split("?")[0] for r in agent.requests] == ["/slave(1)/state", "/files/read"]


def test_a_slot_task_that_wrote_nothing_is_answered_with_its_executors_stderr(
        agent: FakeAgent) -> None:
    """Issue 40: a slot whose executor fails before it runs the task (a user's disauto.py
    shadowing DisAuto's executor) leaves no folder of the task: its failure's reason is the
    executor's own stderr."""
    agent.sandbox("job-slot-0", "python: Error while finding module specification for "
                  "'disauto.executor'\n")
    logs = SandboxLogs()
    logs.remember([offer_from("S1", agent.port)])
    status = failed("trial-0001", executor_id="job-slot-0")
    assert logs.tail(status, FRAMEWORK, slot="job-slot-0") == (
        "(its slot's executor job-slot-0) python: Error while finding module specification "
        "for 'disauto.executor'")


def test_a_slot_task_with_its_own_stderr_is_answered_with_it_alone(agent: FakeAgent) -> None:
    directory = agent.sandbox("job-slot-1", "the slot's own log\n")
    own = directory / slots.task_sandbox("trial-0002")
    own.mkdir(parents=True)
    (own / "stderr").write_text("ValueError: bad x\n")
    logs = SandboxLogs()
    logs.remember([offer_from("S1", agent.port)])
    status = failed("trial-0002", executor_id="job-slot-1")
    assert logs.tail(status, FRAMEWORK, slot="job-slot-1") == "ValueError: bad x"


def test_an_agent_that_authenticates_reads_is_read_with_the_jobs_credentials(
        agent: FakeAgent) -> None:
    agent.sandbox("trial-0004", "boom\n")
    agent.authorization = "Basic " + base64.b64encode(b"reader:r-secret").decode()
    anonymous = SandboxLogs()
    anonymous.remember([offer_from("S1", agent.port)])
    assert anonymous.tail(failed("trial-0004"), FRAMEWORK) == ""  # 401: best effort
    logs = SandboxLogs(auth=("reader", "r-secret"))
    logs.remember([offer_from("S1", agent.port)])
    assert logs.tail(failed("trial-0004"), FRAMEWORK) == "boom"
    directory = logs.sandbox("S1", FRAMEWORK, "trial-0004")[1]
    assert logs.read_from(f"http://127.0.0.1:{agent.port}", f"{directory}/stderr", 0) == (
        "boom\n", 5)
