"""Property-based abuse of a running master: bad input must never crash it or lose state.

Hypothesis throws malformed bodies, wrong types, unknown call types, garbage headers, huge
bodies and *well-typed random calls* (generated from the validation schema, aimed at a real
subscribed framework with its real stream id and real offer ids) at one master. Every answer
must be one a Mesos master gives (never a 500), and afterwards the master must still serve
``/version``, keep consistent books, and run a pymesos framework's task to completion.

Random tasks only ever run a few harmless shell commands and fetch nothing.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
import http.client
import json
from typing import Any
import uuid

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from disauto.localmesos.cluster import LocalCluster
from disauto.localmesos.master import validation
from disauto.localmesos.protocol import protojson
from tests.localmesos.cluster_support import DRIVER_LOCK
from tests.localmesos.cluster_support import USER
from tests.localmesos.cluster_support import Drivers
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import RecordingScheduler
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import framework_info
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import running_cluster


pytestmark = pytest.mark.integration  # starts processes or servers


ANSWERS = {200, 202, 400, 401, 403, 404, 405, 406, 413, 415, 431, 501}
FUZZ = settings(
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SAFE_COMMANDS = ["true", "exit 3", "sleep 0.05", "echo fuzz", "printf x > out"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with running_cluster(
        agents=2, cpus=4.0, mem_mb=4096.0, allocation_interval=0.05, default_kill_grace=0.2,
        request_timeout=2.0, max_body_bytes=1024 * 1024,
    ) as c:
        yield c


@pytest.fixture(scope="module")
def target(cluster: LocalCluster) -> Iterator[RawFramework]:
    raw = RawFramework(cluster.address, name="target", auto_acknowledge=True,
                       failover_timeout=3600.0)
    raw.subscribe()
    yield raw
    raw.close()


def post(
    cluster: LocalCluster,
    body: bytes,
    headers: dict[str, str] | None = None,
    method: str = "POST",
    path: str = "/api/v1/scheduler",
) -> int:
    """Send one request; for a successful SUBSCRIBE only the headers are read."""
    host, port = cluster.address.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request(method, path, body, headers if headers is not None else
                     {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.getheader("Transfer-Encoding") != "chunked":
            resp.read()
        return resp.status
    finally:
        conn.close()


def check(status: int) -> None:
    assert status in ANSWERS, f"unexpected HTTP {status}"


# -- strategies -------------------------------------------------------------------------------

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_value = st.recursive(
    json_leaf,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
call_type = st.sampled_from(validation.CALL_TYPES) | st.text(max_size=10) | st.integers(-1, 20)
ID_POOL = ["t1", "t2", "e1", "x", "", ".", "a/b", "S0", "M-0001"]
UUID_B64 = base64.b64encode(uuid.uuid4().bytes).decode()


def _id() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"value": st.sampled_from(ID_POOL) | st.text(max_size=6)})


def _scalar(kind: str, name: str) -> st.SearchStrategy[Any]:
    if kind == "string":
        if name == "value":
            return st.sampled_from(SAFE_COMMANDS)
        if name == "user":
            return st.sampled_from([USER, "no-such-user-xyz"])
        if name == "name":
            return st.sampled_from(["cpus", "mem", "disk", "gpus", "ports", "zz"]) | st.text(
                max_size=6
            )
        if name == "role":
            return st.sampled_from(["*", "dev", "a b", ""])
        return st.text(max_size=10)
    if kind == "bytes":
        return st.sampled_from(["", "aGk=", UUID_B64, "!!not base64"])
    if kind == "bool":
        return st.booleans()
    if kind == "double":
        return (
            st.floats(min_value=-5, max_value=1e6, allow_nan=False)
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.sampled_from(["Infinity", "-Infinity", "1.5", "abc", "1e308", 1e308])
        )
    if kind in ("int32", "int64", "uint32", "uint64"):
        return st.integers(min_value=-(2**65), max_value=2**65) | st.integers(0, 40000)
    if kind.startswith("enum:"):
        values = protojson.enum_values(kind[5:])
        return st.sampled_from(values) | st.text(max_size=5)
    return st.dictionaries(st.text(max_size=5), json_leaf, max_size=3)  # "any"


def message(name: str, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Random instances of a schema message: required fields always, optional ones maybe."""
    if name == "ID":
        return _id()
    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for key, field in protojson.message_fields(name).items():
        if name == "CommandInfo" and key == "uris":
            continue  # fetch nothing
        if key == "arguments":
            strategy: st.SearchStrategy[Any] = st.lists(st.sampled_from(SAFE_COMMANDS), max_size=2)
        elif field.kind.startswith("msg:"):
            if depth > 6:
                continue
            inner = message(field.kind[4:], depth + 1)
            strategy = st.lists(inner, max_size=2) if field.repeated else inner
        else:
            inner = _scalar(field.kind, key)
            strategy = st.lists(inner, max_size=2) if field.repeated else inner
        (required if field.required else optional)[key] = strategy
    return st.fixed_dictionaries(required, optional=optional)


TYPED_CALL_TYPES = [t for t in validation.CALL_TYPES if t not in ("TEARDOWN", "SUBSCRIBE")]
SUB_MESSAGE = {
    "ACCEPT": ("accept", "Call.Accept"),
    "DECLINE": ("decline", "Call.Decline"),
    "ACCEPT_INVERSE_OFFERS": ("accept_inverse_offers", "Call.InverseOffers"),
    "DECLINE_INVERSE_OFFERS": ("decline_inverse_offers", "Call.InverseOffers"),
    "REVIVE": ("revive", "Call.Roles"),
    "SUPPRESS": ("suppress", "Call.Roles"),
    "KILL": ("kill", "Call.Kill"),
    "SHUTDOWN": ("shutdown", "Call.Shutdown"),
    "ACKNOWLEDGE": ("acknowledge", "Call.Acknowledge"),
    "ACKNOWLEDGE_OPERATION_STATUS": (
        "acknowledge_operation_status", "Call.AcknowledgeOperationStatus",
    ),
    "RECONCILE": ("reconcile", "Call.Reconcile"),
    "RECONCILE_OPERATIONS": ("reconcile_operations", "Call.ReconcileOperations"),
    "MESSAGE": ("message", "Call.Message"),
    "REQUEST": ("request", "Call.Request"),
    "UPDATE_FRAMEWORK": ("update_framework", "Call.UpdateFramework"),
}
SUB_STRATEGIES = {kind: message(schema) for kind, (_, schema) in SUB_MESSAGE.items()}


def _pick(data: st.DataObject, choices: list[str]) -> str:
    # Draw an index, not from the (changing) list itself, so that generation stays replayable.
    return choices[data.draw(st.integers(0, 10_000)) % len(choices)]


def _aim(value: Any, data: st.DataObject, real: dict[str, list[str]]) -> Any:
    """Point some ids of a generated call at real offers, agents and tasks."""
    if isinstance(value, list):
        return [_aim(v, data, real) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if key in ("offer_ids", "inverse_offer_ids") and isinstance(item, list):
            choices = real["offers"] + ["no-such-offer"]
            out[key] = [{"value": _pick(data, choices)} for _ in item or [0]]
        elif key == "agent_id" and data.draw(st.booleans()):
            out[key] = {"value": _pick(data, real["agents"])}
        elif key == "task_id" and data.draw(st.booleans()):
            out[key] = {"value": _pick(data, real["tasks"] + ["t1"])}
        else:
            out[key] = _aim(item, data, real)
    return out


# -- properties -------------------------------------------------------------------------------


@FUZZ
@given(body=json_value)
def test_arbitrary_json_bodies(cluster: LocalCluster, body: Any) -> None:
    check(post(cluster, json.dumps(body).encode()))


@FUZZ
@given(body=st.fixed_dictionaries(
    {"type": call_type},
    optional={
        "framework_id": json_value,
        "subscribe": json_value,
        "accept": json_value,
        "kill": json_value,
        "acknowledge": json_value,
        "reconcile": json_value,
        "decline": json_value,
    },
))
def test_call_shaped_bodies_with_wrong_types(cluster: LocalCluster, body: Any) -> None:
    check(post(cluster, json.dumps(body).encode()))


@FUZZ
@given(body=st.binary(max_size=2000))
def test_random_bytes(cluster: LocalCluster, body: bytes) -> None:
    check(post(cluster, body))


@FUZZ
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]),
    path=st.sampled_from(
        ["/api/v1/scheduler", "/master/api/v1/scheduler", "/master/state", "/files/read",
         "/files/browse", "/metrics/snapshot", "/", "/version", "/nope"]
    ),
    query=st.text(alphabet="abcpathoffsetlength=&-1x/.%", max_size=30),
    headers=st.dictionaries(
        st.sampled_from(["Content-Type", "Accept", "Mesos-Stream-Id", "Authorization",
                         "Connection", "Expect"]),
        st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
        max_size=4,
    ),
    body=st.binary(max_size=200),
)
def test_random_methods_paths_and_headers(
    cluster: LocalCluster,
    method: str,
    path: str,
    query: str,
    headers: dict[str, str],
    body: bytes,
) -> None:
    headers.pop("Expect", None)  # http.client does not do 100-continue
    status = post(cluster, body, headers, method=method, path=f"{path}?{query}")
    assert status in ANSWERS | {200}, status


@FUZZ
@given(info=message("FrameworkInfo"), suppressed=st.lists(st.text(max_size=4), max_size=2))
def test_random_subscriptions(
    cluster: LocalCluster, info: dict[str, Any], suppressed: list[str]
) -> None:
    body: dict[str, Any] = {
        "type": "SUBSCRIBE",
        "subscribe": {"framework_info": info, "suppressed_roles": suppressed},
    }
    if "id" in info:
        body["framework_id"] = info["id"]
    check(post(cluster, json.dumps(body).encode()))


@settings(FUZZ, max_examples=250)
@given(kind=st.sampled_from(TYPED_CALL_TYPES), data=st.data())
def test_well_typed_random_calls_on_a_subscribed_framework(
    cluster: LocalCluster, target: RawFramework, kind: str, data: st.DataObject
) -> None:
    body: dict[str, Any] = {"type": kind, "framework_id": {"value": target.framework_id}}
    if kind in SUB_MESSAGE:
        field, _ = SUB_MESSAGE[kind]
        if kind not in ("REVIVE", "SUPPRESS") or data.draw(st.booleans()):
            body[field] = data.draw(SUB_STRATEGIES[kind])
    if kind == "UPDATE_FRAMEWORK":
        body["update_framework"]["framework_info"]["id"] = {"value": target.framework_id}
        body["update_framework"]["framework_info"]["user"] = USER
    with cluster.master.lock:
        fw = cluster.master.frameworks.get(str(target.framework_id))
        real = {
            "offers": list(fw.offers) if fw else [],
            "agents": [a.id for a in cluster.agents],
            "tasks": list(fw.tasks) if fw else [],
        }
    body = _aim(body, data, real)
    status, _, content = target.request(body)
    assert status in ANSWERS, (status, content)


def test_huge_and_deep_bodies(cluster: LocalCluster) -> None:
    assert post(cluster, b"{" + b" " * (2 * 1024 * 1024) + b"}") == 413
    assert post(cluster, b"[" * 50_000 + b"]" * 50_000) == 400
    nested: Any = 1
    for _ in range(500):
        nested = {"type": nested}
    assert post(cluster, json.dumps(nested).encode()) == 400


def test_master_survives_with_consistent_books(
    cluster: LocalCluster, target: RawFramework
) -> None:
    """Runs after the fuzzing above (file order): the master still works and adds up."""
    assert post(cluster, b"", {}, method="GET", path="/version") == 200
    state = get_json(cluster, "/master/state")
    for slave in state["slaves"]:
        for name in ("cpus", "mem", "disk", "gpus"):
            used = slave["used_resources"][name] + slave["offered_resources"][name]
            assert -1e-6 <= used <= slave["resources"][name] + 1e-6, (slave["id"], name)
    json.dumps(state, allow_nan=False)  # nothing non-finite leaked into the state
    metrics = get_json(cluster, "/metrics/snapshot")
    assert metrics["master/slaves_active"] == 2

    # The fuzzed framework can still talk; then a pymesos framework runs a task to the end.
    assert target.call("REVIVE") == 202
    assert target.call("TEARDOWN") == 202
    drivers = Drivers()
    try:
        sched = RecordingScheduler()
        driver = drivers.start(cluster, sched, framework_info("after-fuzz"))
        offer = sched.wait_offers(timeout=10)[0]
        with DRIVER_LOCK:
            driver.launchTasks(offer["id"], [command_task(offer, "survivor", "echo ok")])
        sched.wait_state("survivor", "TASK_FINISHED")
    finally:
        drivers.stop_all()
