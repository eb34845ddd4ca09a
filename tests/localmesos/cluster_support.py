"""Shared helpers for the master-side tests: real clusters, real clients, an event shape checker.

* :func:`running_cluster` starts a :class:`LocalCluster` with short intervals and checks **every
  event the master emits** against the JSON shapes of Mesos' v1 scheduler API (``Event``,
  ``Offer``, ``TaskStatus``) with :class:`EventShapeChecker`; the ``with`` block fails if any
  event was malformed.
* :class:`RawFramework` is a scheduler written with ``http.client`` only (transport-level tests).
* :class:`RecordingScheduler` records pymesos callbacks, for tests that drive the cluster with
  pymesos's own ``MesosSchedulerDriver``.

pymesos 0.3.15 keeps the request headers of ``_send`` in a *mutable default argument*, shared by
every driver of the process, so two drivers calling at the same moment can swap their
``Mesos-Stream-Id`` headers. Tests that run several drivers therefore make every driver call
through :data:`DRIVER_LOCK` (and acknowledge explicitly under it).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from collections.abc import Iterator
import contextlib
import http.client
import json
import os
import pwd
import socket
import threading
import time
from typing import Any

from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster


USER = pwd.getpwuid(os.geteuid()).pw_name
DRIVER_LOCK = threading.RLock()

TASK_STATES = {
    "TASK_STAGING",
    "TASK_STARTING",
    "TASK_RUNNING",
    "TASK_KILLING",
    "TASK_FINISHED",
    "TASK_FAILED",
    "TASK_KILLED",
    "TASK_ERROR",
    "TASK_LOST",
    "TASK_DROPPED",
    "TASK_UNREACHABLE",
    "TASK_GONE",
    "TASK_GONE_BY_OPERATOR",
    "TASK_UNKNOWN",
}
SOURCES = {"SOURCE_MASTER", "SOURCE_AGENT", "SOURCE_EXECUTOR"}
EVENT_TYPES = {
    "SUBSCRIBED",
    "OFFERS",
    "INVERSE_OFFERS",
    "RESCIND",
    "RESCIND_INVERSE_OFFER",
    "UPDATE",
    "UPDATE_OPERATION_STATUS",
    "MESSAGE",
    "FAILURE",
    "ERROR",
    "HEARTBEAT",
}


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")
        time.sleep(interval)


# -- event shapes -----------------------------------------------------------------------------


def _is_id(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("value"), str) and bool(value["value"])


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_resource(res: Any, multi_role: bool, refined: bool, where: str) -> list[str]:
    problems = []
    if not isinstance(res, dict) or not isinstance(res.get("name"), str):
        return [f"{where}: resource without name: {res!r}"]
    kind = res.get("type")
    if kind == "SCALAR":
        if not _is_number(res.get("scalar", {}).get("value")):
            problems.append(f"{where}: scalar {res['name']} without scalar.value")
    elif kind == "RANGES":
        ranges = res.get("ranges", {}).get("range")
        if not isinstance(ranges, list) or not all(
            isinstance(r, dict)
            and isinstance(r.get("begin"), int)
            and isinstance(r.get("end"), int)
            for r in ranges
        ):
            problems.append(f"{where}: ranges {res['name']} malformed")
    else:
        problems.append(f"{where}: resource {res['name']} has type {kind!r}")
    reservations = res.get("reservations")
    if not refined and not isinstance(res.get("role"), str):
        problems.append(f"{where}: pre-refinement resource {res['name']} without a role")
    if not refined and reservations is not None:
        problems.append(f"{where}: pre-refinement framework got 'reservations'")
    if refined and "role" in res:
        problems.append(f"{where}: RESERVATION_REFINEMENT framework got pre-refinement 'role'")
    if refined and reservations is not None and not (
        isinstance(reservations, list) and reservations and all(
            isinstance(r, dict) and r.get("type") == "STATIC" and isinstance(r.get("role"), str)
            and r["role"] != "*" for r in reservations)):
        problems.append(f"{where}: malformed reservations {reservations!r}")
    if ("allocation_info" in res) != multi_role:
        problems.append(f"{where}: allocation_info presence wrong for multi_role={multi_role}")
    return problems


def check_offer(offer: Any, multi_role: bool = False, refined: bool = False) -> list[str]:
    """Problems with one Offer: ids, hostname, url, resources, executor_ids."""
    if not isinstance(offer, dict):
        return [f"offer is not an object: {offer!r}"]
    problems = []
    for key in ("id", "framework_id", "agent_id"):
        if not _is_id(offer.get(key)):
            problems.append(f"offer.{key} is not {{'value': str}}")
    if not isinstance(offer.get("hostname"), str):
        problems.append("offer.hostname missing")
    url = offer.get("url", {})
    address = url.get("address", {}) if isinstance(url, dict) else {}
    if not (
        isinstance(url, dict)
        and url.get("scheme") == "http"
        and isinstance(address.get("hostname"), str)
        and isinstance(address.get("ip"), str)
        and isinstance(address.get("port"), int)
        and isinstance(url.get("path"), str)
    ):
        problems.append(f"offer.url malformed: {url!r}")
    resources = offer.get("resources")
    if not isinstance(resources, list) or not resources:
        problems.append("offer.resources missing or empty")
    else:
        for res in resources:
            problems += _check_resource(res, multi_role, refined, "offer.resources")
    if "executor_ids" in offer and not all(_is_id(e) for e in offer["executor_ids"]):
        problems.append("offer.executor_ids malformed")
    if ("allocation_info" in offer) != multi_role:
        problems.append(f"offer.allocation_info presence wrong for multi_role={multi_role}")
    if "ephemeral_ports" in {r.get("name") for r in resources or [] if isinstance(r, dict)}:
        problems.append("offer carries ephemeral_ports")
    return problems


def check_status(status: Any) -> list[str]:
    """Problems with a TaskStatus of an UPDATE event."""
    if not isinstance(status, dict):
        return [f"status is not an object: {status!r}"]
    problems = []
    task_id = status.get("task_id")
    if not isinstance(task_id, dict) or not isinstance(task_id.get("value"), str):
        problems.append("status.task_id missing")  # (empty values echo the framework's own)
    if status.get("state") not in TASK_STATES:
        problems.append(f"status.state invalid: {status.get('state')!r}")
    if status.get("source") not in SOURCES:
        problems.append(f"status.source invalid: {status.get('source')!r}")
    if not _is_number(status.get("timestamp")):
        problems.append("status.timestamp missing")
    for key in ("framework_id", "latest_state"):
        if key in status:
            problems.append(f"status carries internal field {key!r}")
    if "reason" in status and not str(status["reason"]).startswith("REASON_"):
        problems.append(f"status.reason invalid: {status['reason']!r}")
    if "uuid" in status:
        if status.get("source") == "SOURCE_MASTER":
            problems.append("master-generated status carries a uuid")
        try:
            raw = base64.b64decode(status["uuid"], validate=True)
        except (ValueError, TypeError):
            raw = b""
        if len(raw) != 16:
            problems.append(f"status.uuid is not base64 of 16 bytes: {status['uuid']!r}")
        if not _is_id(status.get("agent_id")):
            problems.append("status with uuid lacks agent_id (pymesos acks with it)")
        # A custom executor's own update keeps only the executor_id it set itself (Mesos
        # src/slave/slave.cpp statusUpdate, src/internal/evolve.cpp); the agent's have one.
        if not _is_id(status.get("executor_id")) and status.get("source") != "SOURCE_EXECUTOR":
            problems.append("agent status lacks executor_id")
    if "agent_id" in status and not _is_id(status["agent_id"]):
        problems.append("status.agent_id malformed")
    problems += _check_status_extras(status)
    return problems


def _check_status_extras(status: dict[str, Any]) -> list[str]:
    """``unreachable_time`` and ``limitation`` of a TaskStatus, against ``mesos.v1`` (the
    strict checker of :mod:`tests.localmesos.operator_shapes`)."""
    from tests.localmesos import operator_shapes

    extras = {k: status[k] for k in ("unreachable_time", "limitation") if k in status}
    if not extras:
        return []
    shaped = {"task_id": status.get("task_id"), "state": status.get("state"), **extras}
    return [f"status: {p}" for p in operator_shapes.check("TaskStatus", shaped)]


def _check_inverse_offers(offers: Any) -> list[str]:
    """Problems with the ``inverse_offers`` of an INVERSE_OFFERS event (``InverseOffer``)."""
    if not isinstance(offers, list) or not offers:
        return ["INVERSE_OFFERS must carry a non-empty inverse_offers list"]
    problems = []
    for offer in offers:
        if not all(_is_id(offer.get(k)) for k in ("id", "framework_id", "agent_id")):
            problems.append(f"inverse offer ids malformed: {offer!r}"[:200])
        start = (offer.get("unavailability") or {}).get("start", {})
        if not isinstance(start.get("nanoseconds"), int):
            problems.append("inverse offer without unavailability.start")
        if set(offer) - {"id", "url", "framework_id", "agent_id", "unavailability",
                         "resources"}:
            problems.append(f"inverse offer has unknown fields: {sorted(offer)}")
    return problems


def check_event(event: Any, multi_role: bool = False, refined: bool = False) -> list[str]:
    """Problems with one event against the proto/pymesos shapes (empty list = fine)."""
    if not isinstance(event, dict) or event.get("type") not in EVENT_TYPES:
        return [f"unknown event: {event!r}"[:300]]
    kind = event["type"]
    if kind == "HEARTBEAT":
        return [] if event == {"type": "HEARTBEAT"} else [f"HEARTBEAT with extra fields {event}"]
    body = event.get(kind.lower())
    if not isinstance(body, dict):
        return [f"{kind} lacks its '{kind.lower()}' object (pymesos ignores or crashes)"]
    problems: list[str] = []
    if kind == "SUBSCRIBED":
        if not _is_id(body.get("framework_id")):
            problems.append("subscribed.framework_id missing")
        if not _is_number(body.get("heartbeat_interval_seconds")):
            problems.append("subscribed.heartbeat_interval_seconds missing")
        info = body.get("master_info", {})
        version = info.get("version", "")
        if not all(part.isdigit() for part in str(version).split(".")):
            problems.append(f"master_info.version not numeric: {version!r}")
        if not isinstance(info.get("port"), int) or not isinstance(info.get("hostname"), str):
            problems.append("master_info lacks port/hostname")
        if not isinstance(info.get("id"), str):
            problems.append("master_info.id missing")
    elif kind == "OFFERS":
        offers = body.get("offers")
        if not isinstance(offers, list) or not offers:
            problems.append("OFFERS must be {'offers': {'offers': [...]}} and non-empty")
        else:
            for offer in offers:
                problems += check_offer(offer, multi_role, refined)
    elif kind == "RESCIND":
        if not _is_id(body.get("offer_id")):
            problems.append("rescind.offer_id missing")
    elif kind == "INVERSE_OFFERS":
        problems += _check_inverse_offers(body.get("inverse_offers"))
    elif kind == "RESCIND_INVERSE_OFFER":
        if not _is_id(body.get("inverse_offer_id")):
            problems.append("rescind_inverse_offer.inverse_offer_id missing")
    elif kind == "UPDATE":
        problems += check_status(body.get("status"))
    elif kind == "ERROR":
        if not isinstance(body.get("message"), str):
            problems.append("error.message missing")
    elif kind == "FAILURE":
        if "executor_id" in body and not _is_number(body.get("status")):
            problems.append("executor FAILURE lacks status (pymesos KeyError)")
    elif kind == "UPDATE_OPERATION_STATUS":
        status = body.get("status", {})
        if not _is_id(status.get("operation_id")) or "state" not in status:
            problems.append("update_operation_status.status malformed")
    return [f"{kind}: {p}" for p in problems]


class EventShapeChecker:
    """Collects shape problems of every event a master emits (a master event observer)."""

    def __init__(self, cluster: LocalCluster) -> None:
        self._cluster = cluster
        self._lock = threading.Lock()
        self.problems: list[str] = []
        self.counts: dict[str, int] = {}

    def __call__(self, framework_id: str, event: dict[str, Any]) -> None:
        fw = self._cluster.master.frameworks.get(framework_id)
        multi_role = fw is not None and fw.multi_role
        refined = fw is not None and "RESERVATION_REFINEMENT" in fw.capabilities
        problems = check_event(event, multi_role, refined)
        with self._lock:
            kind = str(event.get("type"))
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.problems.extend(f"[{framework_id}] {p}" for p in problems)

    def executor_event(self, framework_id: str, event: dict[str, Any]) -> None:
        """An agent's executor event observer: strict ``mesos.v1.executor.Event`` shapes."""
        from tests.localmesos.executor_support import check_executor_event

        problems = check_executor_event(event)
        with self._lock:
            kind = f"executor:{event.get('type')}"
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.problems.extend(f"[{framework_id} executor] {p}" for p in problems)

    def assert_clean(self) -> None:
        with self._lock:
            assert not self.problems, "malformed events:\n" + "\n".join(self.problems[:20])


@contextlib.contextmanager
def running_cluster(**overrides: Any) -> Iterator[LocalCluster]:
    """A started cluster with test-friendly defaults whose every event is shape-checked."""
    settings: dict[str, Any] = {
        "agents": 1,
        "cpus": 2.0,
        "mem_mb": 2048.0,
        "disk_mb": 4096.0,
        "allocation_interval": 0.1,
        "status_update_retry_interval": 1.0,
        "status_update_retry_interval_max": 2.0,
        "default_kill_grace": 1.0,
        "executor_shutdown_grace_period": 1.0,
    }
    settings.update(overrides)
    cluster = LocalCluster(ClusterConfig(**settings))
    checker = EventShapeChecker(cluster)
    cluster.start()
    cluster.master.add_event_observer(checker)
    for agent in cluster.agents:
        agent.add_executor_event_observer(checker.executor_event)
    cluster.shape_checker = checker  # type: ignore[attr-defined]
    try:
        yield cluster
    finally:
        cluster.stop()
    checker.assert_clean()


def get_json(cluster: LocalCluster, path: str) -> Any:
    """GET a JSON endpoint of the cluster's master."""
    conn = http.client.HTTPConnection(*cluster.address.split(":"), timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        assert resp.status == 200, (path, resp.status, body)
        return json.loads(body)
    finally:
        conn.close()


def operator_call(cluster: LocalCluster, body: dict[str, Any]) -> tuple[int, Any]:
    """POST an operator API call: ``(status, JSON answer or text)``; JSON answers are checked
    against ``mesos.v1.master.Response`` (:mod:`tests.localmesos.operator_shapes`)."""
    from tests.localmesos import operator_shapes

    conn = http.client.HTTPConnection(*cluster.address.split(":"), timeout=10)
    try:
        conn.request("POST", "/api/v1", json.dumps(body),
                     {"Content-Type": "application/json", "Accept": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
    finally:
        conn.close()
    if resp.getheader("Content-Type") == "application/json":
        answer = json.loads(data)
        problems = operator_shapes.check("Response", answer)
        assert not problems, problems
        return resp.status, answer
    return resp.status, data.decode()


def framework_state(cluster: LocalCluster, framework_id: str) -> dict[str, Any] | None:
    """The framework's object in /master/state (active or completed), if any."""
    state = get_json(cluster, "/master/state")
    for fw in state["frameworks"] + state["completed_frameworks"]:
        if fw["id"] == framework_id:
            return dict(fw)
    return None


def scalar(name: str, value: float) -> dict[str, Any]:
    return {"name": name, "type": "SCALAR", "scalar": {"value": value}}


def command_task(
    offer: dict[str, Any],
    task_id: str,
    command: str,
    *,
    cpus: float = 0.1,
    mem: float = 32.0,
    extra: list[dict[str, Any]] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A TaskInfo running ``command`` with the shell on the offer's agent."""
    task = {
        "name": task_id,
        "task_id": {"value": task_id},
        "agent_id": offer["agent_id"],
        "resources": [scalar("cpus", cpus), scalar("mem", mem)] + (extra or []),
        "command": {"value": command},
    }
    task.update(fields)
    return task


def offered(offer: dict[str, Any], name: str) -> float:
    """The amount of scalar ``name`` in an offer."""
    return sum(
        r["scalar"]["value"] for r in offer["resources"] if r["name"] == name and "scalar" in r
    )


# -- a raw HTTP scheduler ---------------------------------------------------------------------


class EventWaiting:
    """Waiting on a list of events that a reader thread appends to (``events``, under
    ``_cond``): what the raw framework and the raw executor share."""

    events: list[dict[str, Any]]
    _cond: threading.Condition

    def wait_event(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10.0, start: int = 0
    ) -> dict[str, Any]:
        """The first event (from index ``start``) matching ``predicate``; waits for it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self.events[start:]:
                    if predicate(event):
                        return event
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"no matching event in {timeout}s; got {[e['type'] for e in self.events]}"
                    )
                self._cond.wait(remaining)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        with self._cond:
            return [e for e in self.events if e["type"] == kind]


class RawFramework(EventWaiting):
    """A v1 scheduler built on ``http.client`` only.

    :meth:`subscribe` opens the event stream and reads it on a thread; :meth:`call` sends calls
    on a separate keep-alive connection with the ``Mesos-Stream-Id``.
    """

    def __init__(
        self,
        address: str,
        *,
        name: str = "raw",
        framework_id: str | None = None,
        capabilities: list[str] | None = None,
        auth: tuple[str, str] | None = None,
        auto_acknowledge: bool = False,
        **info: Any,
    ) -> None:
        self.auto_acknowledge = auto_acknowledge
        self._request_lock = threading.Lock()
        self.host, port = address.split(":")
        self.port = int(port)
        self.info: dict[str, Any] = {"user": USER, "name": name}
        if capabilities:
            self.info["capabilities"] = [{"type": c} for c in capabilities]
        self.info.update(info)
        self.framework_id = framework_id
        self.auth = auth
        self.stream_id: str | None = None
        self.events: list[dict[str, Any]] = []
        self.ended = threading.Event()
        self._cond = threading.Condition()
        self._stream: http.client.HTTPConnection | None = None
        self._calls: http.client.HTTPConnection | None = None
        self._reader: threading.Thread | None = None

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.auth is not None:
            token = base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        return headers

    def subscribe(self, timeout: float = 10.0, **subscribe_fields: Any) -> str:
        """SUBSCRIBE and wait for SUBSCRIBED; returns the framework id.

        ``subscribe_fields`` go into ``Call.Subscribe`` (``offer_constraints``...).
        """
        subscribe: dict[str, Any] = {"framework_info": self.info, **subscribe_fields}
        body: dict[str, Any] = {"type": "SUBSCRIBE", "subscribe": subscribe}
        if self.framework_id is not None:
            self.info["id"] = {"value": self.framework_id}
            body["framework_id"] = {"value": self.framework_id}
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        headers = dict(self._headers(), Accept="application/json", Connection="close")
        conn.request("POST", "/api/v1/scheduler", json.dumps(body), headers)
        resp = conn.getresponse()
        assert resp.status == 200, (resp.status, resp.read())
        assert resp.getheader("Content-Length") is None
        assert resp.getheader("Transfer-Encoding") == "chunked"
        self.stream_id = resp.getheader("Mesos-Stream-Id")
        assert self.stream_id
        self._stream = conn
        assert conn.sock is not None
        conn.sock.settimeout(None)
        self._reader = threading.Thread(target=self._read, args=(resp,), daemon=True)
        self._reader.start()
        event = self.wait_event(lambda e: e["type"] in ("SUBSCRIBED", "ERROR"), timeout)
        if event["type"] == "ERROR":
            raise AssertionError(f"subscription refused: {event}")
        self.framework_id = event["subscribed"]["framework_id"]["value"]
        return self.framework_id

    def _read(self, resp: http.client.HTTPResponse) -> None:
        try:
            while True:
                line = resp.readline()
                if not line:
                    break
                data = resp.read(int(line))
                event = json.loads(data)
                with self._cond:
                    self.events.append(event)
                    self._cond.notify_all()
                status = event.get("update", {}).get("status", {})
                if self.auto_acknowledge and "uuid" in status:
                    self.acknowledge(status)
        except (OSError, ValueError, AttributeError, http.client.HTTPException):
            pass  # the stream ended (or the test closed it under the reader's feet)
        finally:
            self.ended.set()
            with self._cond:
                self._cond.notify_all()

    def offers(self, start: int = 0) -> list[dict[str, Any]]:
        with self._cond:
            return [
                offer
                for e in self.events[start:]
                if e["type"] == "OFFERS"
                for offer in e["offers"]["offers"]
            ]

    def updates(self, task_id: str | None = None) -> list[dict[str, Any]]:
        with self._cond:
            statuses = [e["update"]["status"] for e in self.events if e["type"] == "UPDATE"]
        return [s for s in statuses if task_id is None or s["task_id"]["value"] == task_id]

    def request(
        self,
        body: dict[str, Any] | bytes,
        *,
        headers: dict[str, str] | None = None,
        stream_id: str | None | bool = True,
    ) -> tuple[int, dict[str, str], bytes]:
        """POST a call; returns ``(status, headers, body)``."""
        sent = dict(self._headers())
        if stream_id is True and self.stream_id:
            sent["Mesos-Stream-Id"] = self.stream_id
        elif isinstance(stream_id, str):
            sent["Mesos-Stream-Id"] = stream_id
        sent.update(headers or {})
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        with self._request_lock:
            if self._calls is None:
                self._calls = http.client.HTTPConnection(self.host, self.port, timeout=10)
            try:
                self._calls.request("POST", "/api/v1/scheduler", data, sent)
                resp = self._calls.getresponse()
                content = resp.read()
            except (OSError, http.client.HTTPException):
                self._calls.close()
                self._calls = None
                raise
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, content

    def call(self, kind: str, **fields: Any) -> int:
        """Send a call of ``kind`` for this framework and return the HTTP status."""
        body: dict[str, Any] = {"type": kind, "framework_id": {"value": self.framework_id}}
        body.update(fields)
        status, _, content = self.request(body)
        assert status < 500, content
        return status

    def accept(
        self, offer_ids: list[str], operations: list[dict[str, Any]], **filters: float
    ) -> int:
        accept: dict[str, Any] = {
            "offer_ids": [{"value": o} for o in offer_ids],
            "operations": operations,
        }
        if filters:
            accept["filters"] = filters
        return self.call("ACCEPT", accept=accept)

    def launch(self, offer: dict[str, Any], tasks: list[dict[str, Any]], **filters: float) -> int:
        operation = {"type": "LAUNCH", "launch": {"task_infos": tasks}}
        return self.accept([offer["id"]["value"]], [operation], **filters)

    def decline(self, offer_ids: list[str], **filters: float) -> int:
        decline: dict[str, Any] = {"offer_ids": [{"value": o} for o in offer_ids]}
        if filters:
            decline["filters"] = filters
        return self.call("DECLINE", decline=decline)

    def acknowledge(self, status: dict[str, Any]) -> int:
        return self.call(
            "ACKNOWLEDGE",
            acknowledge={
                "agent_id": status["agent_id"],
                "task_id": status["task_id"],
                "uuid": status["uuid"],
            },
        )

    def disconnect(self) -> None:
        """Drop the event stream connection (like a crashed scheduler)."""
        if self._stream is not None and self._stream.sock is not None:
            with contextlib.suppress(OSError):
                self._stream.sock.shutdown(socket.SHUT_RDWR)
            self._stream.close()
        if self._reader is not None:
            self.ended.wait(5)

    def close(self) -> None:
        self.disconnect()
        with self._request_lock:
            if self._calls is not None:
                self._calls.close()
                self._calls = None


# -- pymesos ----------------------------------------------------------------------------------


class RecordingScheduler:
    """A pymesos ``Scheduler`` that records every callback; thread-safe.

    ``on_offers(driver, offers)`` (optional) is called for each OFFERS batch on the driver's IO
    thread; by default offers are only recorded and left outstanding.
    """

    def __init__(
        self, on_offers: Callable[[Any, list[dict[str, Any]]], None] | None = None
    ) -> None:
        self.on_offers = on_offers
        self.cond = threading.Condition()
        self.calls: list[tuple[str, Any]] = []
        self.framework_id: str | None = None
        self.offers: list[dict[str, Any]] = []
        self.rescinded: list[str] = []
        self.statuses: list[dict[str, Any]] = []
        self.errors: list[str] = []

    def _record(self, name: str, value: Any = None) -> None:
        with self.cond:
            self.calls.append((name, value))
            self.cond.notify_all()

    # pymesos callbacks (camelCase as the Mesos API)
    def registered(self, driver: Any, framework_id: dict[str, str], master_info: Any) -> None:
        with self.cond:
            self.framework_id = framework_id["value"]
        self._record("registered", master_info)

    def reregistered(self, driver: Any, master_info: Any) -> None:
        self._record("reregistered", master_info)

    def disconnected(self, driver: Any) -> None:
        self._record("disconnected")

    def processHeartBeat(self, driver: Any) -> None:  # noqa: N802 - pymesos API
        self._record("heartbeat")

    def resourceOffers(self, driver: Any, offers: list[dict[str, Any]]) -> None:  # noqa: N802
        with self.cond:
            self.offers.extend(offers)
        self._record("offers", offers)
        if self.on_offers is not None:
            self.on_offers(driver, offers)

    def offerRescinded(self, driver: Any, offer_id: dict[str, str]) -> None:  # noqa: N802
        with self.cond:
            self.rescinded.append(offer_id["value"])
        self._record("rescinded", offer_id)

    def statusUpdate(self, driver: Any, status: dict[str, Any]) -> None:  # noqa: N802
        with self.cond:
            self.statuses.append(status)
        self._record("status", status)

    def frameworkMessage(self, driver: Any, *args: Any) -> None:  # noqa: N802
        self._record("message", args)

    def slaveLost(self, driver: Any, agent_id: Any) -> None:  # noqa: N802
        self._record("slave_lost", agent_id)

    def executorLost(self, driver: Any, *args: Any) -> None:  # noqa: N802
        self._record("executor_lost", args)

    def error(self, driver: Any, message: str) -> None:
        with self.cond:
            self.errors.append(message)
        self._record("error", message)

    def inverseOffers(self, driver: Any, offers: Any) -> None:  # noqa: N802
        self._record("inverse_offers", offers)

    def inverseOfferRescinded(self, driver: Any, offer_id: Any) -> None:  # noqa: N802
        self._record("inverse_rescinded", offer_id)

    def operationStatusUpdate(self, driver: Any, status: Any) -> None:  # noqa: N802
        self._record("operation_status", status)

    # queries
    def count(self, name: str) -> int:
        with self.cond:
            return sum(1 for call, _ in self.calls if call == name)

    def wait(self, predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                value = predicate()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    names = [c for c, _ in self.calls]
                    raise AssertionError(f"timed out waiting; callbacks so far: {names[-30:]}")
                self.cond.wait(remaining)

    def states(self, task_id: str) -> list[str]:
        with self.cond:
            return [s["state"] for s in self.statuses if s["task_id"]["value"] == task_id]

    def wait_state(self, task_id: str, state: str, timeout: float = 10.0) -> dict[str, Any]:
        def find() -> dict[str, Any] | None:
            for status in self.statuses:
                if status["task_id"]["value"] == task_id and status["state"] == state:
                    return status
            return None

        return dict(self.wait(find, timeout))

    def wait_offers(self, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Wait until at least ``count`` offers arrived in total; returns all so far."""
        self.wait(lambda: len(self.offers) >= count, timeout)
        with self.cond:
            return list(self.offers)


def framework_info(name: str = "test", **fields: Any) -> dict[str, Any]:
    info: dict[str, Any] = {"user": USER, "name": name}
    info.update(fields)
    return info


class Drivers:
    """Starts pymesos drivers and stops them all (before the cluster stops)."""

    def __init__(self) -> None:
        self._drivers: list[Any] = []

    def start(
        self,
        cluster: LocalCluster,
        scheduler: RecordingScheduler,
        info: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        from pymesos import MesosSchedulerDriver

        driver = MesosSchedulerDriver(
            scheduler, info or framework_info(), cluster.address, **kwargs
        )
        self._drivers.append(driver)
        driver.start()
        return driver

    def stop_all(self) -> None:
        for driver in self._drivers:
            with contextlib.suppress(Exception):
                driver.stop()
        for driver in self._drivers:
            with contextlib.suppress(Exception):
                driver.join()
        self._drivers.clear()
