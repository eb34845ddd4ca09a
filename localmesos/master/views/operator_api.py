"""The master's operator API (``POST /api/v1``, ``/master/api/v1``): its read calls.

Requests go through the stages of ``Master::Http::api`` (apache/mesos ``src/master/http.cpp``)
in its order, each failure with Mesos' status and message:

1. method: anything but POST → 405 ``Expecting one of { 'POST' }, but received '<M>'``;
2. ``Content-Type``: absent → 400 ``Expecting 'Content-Type' to be present``; neither JSON nor
   protobuf → 415; protobuf → 415 too (localmesos speaks JSON only, as on the scheduler API);
3. JSON → 400 ``Failed to parse body into JSON: ...``; a body that is no object, or a ``type``
   of the wrong JSON kind → 400 ``Failed to convert JSON into Call protobuf: ...``;
4. validation (``validation::master::call::validate``): a missing ``type`` — also an unknown
   type name, which stout drops as it drops any unknown value of an optional enum → 400
   ``Failed to validate master::Call: Expecting 'type' to be present``;
5. ``Accept`` that allows no JSON → 406;
6. ``UNKNOWN`` → 501 (as Mesos); a known call localmesos does not support → 400 with a line
   naming it and the supported ones; the read calls answer 200 with a ``Response`` (``type``
   and its sub-message).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
import json
from typing import TYPE_CHECKING
from typing import Any

from disauto.common.json_kind import json_kind
from disauto.localmesos.master import operator_calls
from disauto.localmesos.master.views import operator_views as views
from disauto.localmesos.master.views import state
from disauto.localmesos.protocol.media_types import APPLICATION_JSON
from disauto.localmesos.protocol.media_types import JSON_ONLY_ACCEPT
from disauto.localmesos.protocol.media_types import JSON_ONLY_CONTENT_TYPE
from disauto.localmesos.protocol.protojson import CallError
from disauto.localmesos.protocol.protojson import decode_json


if TYPE_CHECKING:
    from disauto.localmesos.master.master import Master

PATHS = ("/api/v1", "/master/api/v1")

#: ``mesos.v1.master.Call.Type`` of Mesos 1.11 (name → number).
CALL_TYPES: dict[str, int] = {
    "UNKNOWN": 0, "GET_HEALTH": 1, "GET_FLAGS": 2, "GET_VERSION": 3, "GET_METRICS": 4,
    "GET_LOGGING_LEVEL": 5, "SET_LOGGING_LEVEL": 6, "LIST_FILES": 7, "READ_FILE": 8,
    "GET_STATE": 9, "GET_AGENTS": 10, "GET_FRAMEWORKS": 11, "GET_EXECUTORS": 12,
    "GET_OPERATIONS": 33, "GET_TASKS": 13, "GET_ROLES": 14, "GET_WEIGHTS": 15,
    "UPDATE_WEIGHTS": 16, "GET_MASTER": 17, "SUBSCRIBE": 18, "RESERVE_RESOURCES": 19,
    "UNRESERVE_RESOURCES": 20, "CREATE_VOLUMES": 21, "DESTROY_VOLUMES": 22, "GROW_VOLUME": 34,
    "SHRINK_VOLUME": 35, "GET_MAINTENANCE_STATUS": 23, "GET_MAINTENANCE_SCHEDULE": 24,
    "UPDATE_MAINTENANCE_SCHEDULE": 25, "START_MAINTENANCE": 26, "STOP_MAINTENANCE": 27,
    "DRAIN_AGENT": 37, "DEACTIVATE_AGENT": 38, "REACTIVATE_AGENT": 39, "GET_QUOTA": 28,
    "UPDATE_QUOTA": 36, "SET_QUOTA": 29, "REMOVE_QUOTA": 30, "TEARDOWN": 31,
    "MARK_AGENT_GONE": 32,
}  # fmt: skip
_BY_NUMBER = {number: name for name, number in CALL_TYPES.items()}


@dataclass(frozen=True)
class Answer:
    """What the HTTP layer writes back: a status, a body and extra headers."""

    status: int
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()


def _text(status: int, message: str = "", *headers: tuple[str, str]) -> Answer:
    extra = (("Content-Type", "text/plain; charset=utf-8"),) if message else ()
    return Answer(status, message.encode("utf-8"), extra + headers)


def _health(master: Master) -> dict[str, Any]:
    return {"healthy": True}


def _version(master: Master) -> dict[str, Any]:
    return {"version_info": state.version_json()}


#: Implemented calls: call type → (``Response`` field, builder of its sub-message).
READ_CALLS: dict[str, tuple[str, Callable[[Master], dict[str, Any]]]] = {
    "GET_HEALTH": ("get_health", _health),
    "GET_VERSION": ("get_version", _version),
    "GET_STATE": ("get_state", views.get_state),
    "GET_AGENTS": ("get_agents", views.get_agents),
    "GET_FRAMEWORKS": ("get_frameworks", views.get_frameworks),
    "GET_EXECUTORS": ("get_executors", views.get_executors),
    "GET_TASKS": ("get_tasks", views.get_tasks),
}


def call_type(body: bytes) -> str | None:
    """Decode a ``master::Call`` body and return its type; ``None`` when it has none.

    Raises:
        CallError: 400 with Mesos' message for a body that is not JSON or not a Call.
    """
    return _decode(body)[0]


def _decode(body: bytes) -> tuple[str | None, dict[str, Any]]:
    """The call's type (None when it has none) and its JSON object."""
    value = decode_json(body)
    if not isinstance(value, dict):
        raise CallError("Failed to convert JSON into Call protobuf: Expecting a JSON object")
    kind = value.get("type")
    if kind is None:
        return None, value
    if isinstance(kind, str):
        return (kind if kind in CALL_TYPES else None), value
    if isinstance(kind, int) and not isinstance(kind, bool):
        return _BY_NUMBER.get(kind), value
    raise CallError(
        "Failed to convert JSON into Call protobuf: "
        f"Not expecting a JSON {json_kind(kind)} for field 'type'"
    )


def handle(
    master: Master, method: str, content_type: str | None, json_accepted: bool, body: bytes
) -> Answer:
    """Answer one operator API request (see the module docstring for the stages).

    ``json_accepted`` says whether the request's ``Accept`` header allows JSON.
    """
    if method != "POST":
        return _text(
            405, f"Expecting one of {{ 'POST' }}, but received '{method}'", ("Allow", "POST")
        )
    if content_type is None:
        return _text(400, "Expecting 'Content-Type' to be present")
    if content_type.strip() != APPLICATION_JSON:
        return _text(415, JSON_ONLY_CONTENT_TYPE)
    try:
        kind, value = _decode(body)
    except CallError as exc:
        return _text(exc.status, str(exc))
    if kind is None:
        return _text(400, "Failed to validate master::Call: Expecting 'type' to be present")
    if not json_accepted:
        return _text(406, JSON_ONLY_ACCEPT)
    if kind == "UNKNOWN":
        return Answer(501)
    if kind in operator_calls.HANDLERS:
        try:
            answer = operator_calls.handle(master, kind, value)
        except CallError as exc:
            return _text(exc.status, str(exc))
        return _json(answer) if answer is not None else Answer(200)
    if kind not in READ_CALLS:
        supported = sorted([*READ_CALLS, *operator_calls.HANDLERS])
        return _text(400, f"localmesos does not support the operator call {kind}; supported: "
                          f"{', '.join(supported)}")
    field, build = READ_CALLS[kind]
    return _json({"type": kind, field: build(master)})


def _json(response: dict[str, Any]) -> Answer:
    data = json.dumps(response, separators=(",", ":")).encode("utf-8")
    return Answer(200, data, (("Content-Type", APPLICATION_JSON),))
