"""Helpers for the executor-API tests: a strict ``mesos.v1.executor.Event`` checker, a raw
HTTP executor, and CUSTOM-executor tasks running :mod:`tests.localmesos.executor_program`.

The checker parses each event against ``include/mesos/v1/executor/executor.proto`` (apache/mesos
1.11): the type is an ``Event.Type``, the body of the type is present with its required fields,
and no key is unknown to the proto; TaskInfo, ExecutorInfo, FrameworkInfo and KillPolicy are
converted with the shared schema (:func:`localmesos.protocol.protojson.convert`) and must lose
no key.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
from pathlib import Path
import socket
import sys
import threading
from typing import Any

from disauto.common.processes import pid_exists
from disauto.localmesos.agent import executor_api
from disauto.localmesos.protocol import protojson
from tests.localmesos.cluster_support import EventWaiting
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import scalar


PROGRAM = Path(__file__).with_name("executor_program.py")
PROGRAM_COMMAND = f"{sys.executable} {PROGRAM}"

# Event body: field -> (required, message for protojson.convert or a checker name).
_BODIES: dict[str, dict[str, tuple[bool, str]]] = {
    "SUBSCRIBED": {"executor_info": (True, "ExecutorInfo"), "framework_info": (True,
                   "FrameworkInfo"), "agent_info": (True, "agent"), "container_id": (False, "ID")},
    "LAUNCH": {"task": (True, "TaskInfo")},
    "LAUNCH_GROUP": {"task_group": (True, "TaskGroupInfo")},
    "KILL": {"task_id": (True, "ID"), "kill_policy": (False, "KillPolicy")},
    "ACKNOWLEDGED": {"task_id": (True, "ID"), "uuid": (True, "uuid")},
    "MESSAGE": {"data": (True, "bytes")},
    "ERROR": {"message": (True, "string")},
}
_EVENT_KEYS = {"type", "subscribed", "acknowledged", "launch", "launch_group", "kill",
               "message", "error"}


def _lost_keys(sent: Any, parsed: Any, where: str) -> list[str]:
    """Keys of ``sent`` that the conversion dropped (unknown to the proto), recursively."""
    if isinstance(sent, dict) and isinstance(parsed, dict):
        problems = [f"{where}.{key}: not in the proto" for key in sent if key not in parsed]
        for key in sent:
            if key in parsed:
                problems += _lost_keys(sent[key], parsed[key], f"{where}.{key}")
        return problems
    if isinstance(sent, list) and isinstance(parsed, list) and len(sent) == len(parsed):
        problems = []
        for i, (a, b) in enumerate(zip(sent, parsed, strict=True)):
            problems += _lost_keys(a, b, f"{where}[{i}]")
        return problems
    return []


def _check_value(kind: str, value: Any, where: str) -> list[str]:
    if kind == "string":
        return [] if isinstance(value, str) else [f"{where} is not a string"]
    if kind in ("bytes", "uuid"):
        try:
            raw = base64.b64decode(value, validate=True)
        except (ValueError, TypeError):
            return [f"{where} is not base64"]
        return [f"{where} is not 16 bytes"] if kind == "uuid" and len(raw) != 16 else []
    if kind == "agent":
        if not isinstance(value, dict) or not isinstance(value.get("hostname"), str):
            return [f"{where} lacks hostname"]
        extra = set(value) - {"hostname", "port", "resources", "attributes", "id", "domain"}
        problems = [f"{where}.{key}: not in AgentInfo" for key in sorted(extra)]
        if not isinstance(value.get("id", {}).get("value"), str):
            problems.append(f"{where}.id missing")
        return problems
    try:
        parsed = protojson.convert(kind, value)
    except ValueError as exc:
        return [f"{where}: not a {kind}: {exc}"]
    return _lost_keys(value, parsed, where)


def check_executor_event(event: Any) -> list[str]:
    """Problems of one executor event against executor.proto (empty list = fine)."""
    if not isinstance(event, dict):
        return [f"event is not an object: {event!r}"[:200]]
    kind = event.get("type")
    if kind not in executor_api.EVENT_TYPES.values() or kind == "UNKNOWN":
        return [f"unknown event type {kind!r}"]
    problems = [f"{kind}: unknown key {key!r}" for key in event if key not in _EVENT_KEYS]
    if kind in ("SHUTDOWN", "HEARTBEAT"):
        if set(event) != {"type"}:
            problems.append(f"{kind} with extra fields {sorted(event)}")
        return problems
    field = kind.lower()
    body = event.get(field)
    if not isinstance(body, dict):
        return problems + [f"{kind} lacks its '{field}' object"]
    others = [key for key in event if key not in ("type", field)]
    if others:
        problems.append(f"{kind} carries other bodies {others}")
    spec = _BODIES[kind]
    for key, (required, checker) in spec.items():
        if key not in body:
            if required:
                problems.append(f"{kind}: {field}.{key} missing")
            continue
        problems += _check_value(checker, body[key], f"{kind}: {field}.{key}")
    problems += [f"{kind}: unknown {field}.{key}" for key in body if key not in spec]
    return problems


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def executor_info(executor_id: str = "warm-1", command: str = PROGRAM_COMMAND,
                  **fields: Any) -> dict[str, Any]:
    info: dict[str, Any] = {
        "executor_id": {"value": executor_id},
        "type": "CUSTOM",
        "command": {"value": command},
        "resources": [scalar("cpus", 0.1), scalar("mem", 32)],
    }
    info.update(fields)
    return info


def executor_task(offer: dict[str, Any], task_id: str, action: str = "finish",
                  executor: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """A TaskInfo for the test executor (see :mod:`tests.localmesos.executor_program`)."""
    task = command_task(offer, task_id, "unused", cpus=0.1, mem=32)
    del task["command"]
    task["executor"] = executor or executor_info()
    task["data"] = b64(json.dumps(dict(action=action, **spec)))
    return task


def pid_alive(pid: int) -> bool:
    if not pid_exists(pid):
        return False
    # A zombie is dead for our purposes.
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True


class RawExecutor(EventWaiting):
    """An executor written with ``http.client`` only: it subscribes on behalf of an executor
    the agent launched (whose own program never subscribes) and records its events."""

    def __init__(self, address: str, framework_id: str, executor_id: str,
                 path: str = "/api/v1/executor") -> None:
        self.host, port = address.split(":")
        self.port = int(port)
        self.framework_id = framework_id
        self.executor_id = executor_id
        self.path = path
        self.events: list[dict[str, Any]] = []
        self.headers: dict[str, str] = {}
        #: Sent as ``Authorization`` with every call when set (``Bearer <token>``).
        self.authorization: str | None = None
        self._cond = threading.Condition()
        self._stream: http.client.HTTPConnection | None = None
        self.ended = threading.Event()

    def body(self, kind: str, **fields: Any) -> dict[str, Any]:
        call: dict[str, Any] = {"type": kind, "framework_id": {"value": self.framework_id},
                                "executor_id": {"value": self.executor_id}}
        call.update(fields)
        return call

    def post(self, body: dict[str, Any] | bytes, headers: dict[str, str] | None = None,
             method: str = "POST") -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            sent = {"Content-Type": "application/json"} if headers is None else dict(headers)
            if self.authorization is not None:
                sent["Authorization"] = self.authorization
            conn.request(method, self.path, data, sent)
            resp = conn.getresponse()
            if resp.getheader("Transfer-Encoding") == "chunked":
                return resp.status, b""
            return resp.status, resp.read()
        finally:
            conn.close()

    def subscribe(self, **subscribe: Any) -> int:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.authorization is not None:
            headers["Authorization"] = self.authorization
        conn.request("POST", self.path, json.dumps(self.body("SUBSCRIBE", subscribe=subscribe)),
                     headers)
        resp = conn.getresponse()
        self.headers = {k.lower(): v for k, v in resp.getheaders()}
        if resp.status != 200:
            resp.read()
            conn.close()
            return resp.status
        self._stream = conn
        assert conn.sock is not None
        conn.sock.settimeout(None)
        threading.Thread(target=self._read, args=(resp,), daemon=True).start()
        return 200

    def _read(self, resp: http.client.HTTPResponse) -> None:
        try:
            while True:
                line = resp.readline()
                if not line:
                    break
                event = json.loads(resp.read(int(line)))
                with self._cond:
                    self.events.append(event)
                    self._cond.notify_all()
        except (OSError, ValueError, AttributeError, http.client.HTTPException):
            pass
        finally:
            self.ended.set()
            with self._cond:
                self._cond.notify_all()

    def update(self, task_id: str, state: str, uuid_b64: str, **status: Any) -> int:
        status.update(task_id={"value": task_id}, state=state, uuid=uuid_b64,
                      source=status.get("source", "SOURCE_EXECUTOR"))
        code, _ = self.post(self.body("UPDATE", update={"status": status}))
        return code

    def close(self) -> None:
        if self._stream is not None and self._stream.sock is not None:
            with contextlib.suppress(OSError):
                self._stream.sock.shutdown(socket.SHUT_RDWR)
            self._stream.close()
        self.ended.wait(5)
