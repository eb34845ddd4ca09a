"""The operator API's calls on quota, maintenance and agents: their messages and handlers.

``mesos.v1.master.Call`` bodies (apache/mesos ``include/mesos/v1/master/master.proto``,
``quota/quota.proto``, ``maintenance/maintenance.proto``) are converted as the master reads
them (:mod:`localmesos.protocol.protojson`: 400 ``Failed to convert JSON into Call protobuf:
...``), then validated (``validation::master::call::validate``: 400 ``Failed to validate
master::Call: Expecting '<field>' to be present``), then handled as ``Master::Http`` does:
200 with no body for the calls that change something, 200 with a ``Response`` for the read
ones, 400/409 with Mesos' messages when refused.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any

from disauto.localmesos.protocol import protojson
from disauto.localmesos.protocol.protojson import CallError


if TYPE_CHECKING:
    from disauto.localmesos.master.master import Master

_MACHINES = {"machines": "[msg:MachineID]"}
_AGENT = {"agent_id": "msg:ID!"}
_MESSAGES = {
    "OperatorCall": {
        "update_quota": "msg:OperatorCall.UpdateQuota",
        "set_quota": "msg:OperatorCall.SetQuota",
        "remove_quota": "msg:OperatorCall.RemoveQuota",
        "update_maintenance_schedule": "msg:OperatorCall.UpdateMaintenanceSchedule",
        "start_maintenance": "msg:OperatorCall.Machines",
        "stop_maintenance": "msg:OperatorCall.Machines",
        "drain_agent": "msg:OperatorCall.DrainAgent",
        "deactivate_agent": "msg:OperatorCall.Agent",
        "reactivate_agent": "msg:OperatorCall.Agent",
    },
    "OperatorCall.UpdateQuota": {"force": ("bool", False), "quota_configs": "[msg:QuotaConfig]"},
    "QuotaConfig": {"role": "string!", "guarantees": "map:Value.Scalar",
                    "limits": "map:Value.Scalar"},
    # Deprecated (``mesos.v1.master.Call.SetQuota``, ``RemoveQuota``; ``quota.QuotaRequest``).
    "OperatorCall.SetQuota": {"quota_request": "msg:QuotaRequest!"},
    "QuotaRequest": {"force": "bool", "role": "string", "guarantee": "[msg:Resource]"},
    "OperatorCall.RemoveQuota": {"role": "string!"},
    "OperatorCall.UpdateMaintenanceSchedule": {"schedule": "msg:MaintenanceSchedule!"},
    "MaintenanceSchedule": {"windows": "[msg:MaintenanceWindow]"},
    "MaintenanceWindow": {"machine_ids": "[msg:MachineID]",
                          "unavailability": "msg:Unavailability!"},
    "MachineID": {"hostname": "string", "ip": "string"},
    "Unavailability": {"start": "msg:TimeInfo!", "duration": "msg:DurationInfo"},
    "TimeInfo": {"nanoseconds": "int64!"},
    "OperatorCall.Machines": _MACHINES,
    "OperatorCall.DrainAgent": {"agent_id": "msg:ID!",
                                "max_grace_period": "msg:google.protobuf.Duration",
                                "mark_gone": ("bool", False)},
    "google.protobuf.Duration": {"seconds": "int64", "nanos": "int32"},
    "OperatorCall.Agent": _AGENT,
}
protojson.add_messages(_MESSAGES, {})

#: The calls served here: type → the ``Call`` field that carries its body (None: no body).
BODIES: dict[str, str | None] = {
    "GET_QUOTA": None, "UPDATE_QUOTA": "update_quota",
    "SET_QUOTA": "set_quota", "REMOVE_QUOTA": "remove_quota",
    "GET_MAINTENANCE_SCHEDULE": None, "GET_MAINTENANCE_STATUS": None,
    "UPDATE_MAINTENANCE_SCHEDULE": "update_maintenance_schedule",
    "START_MAINTENANCE": "start_maintenance", "STOP_MAINTENANCE": "stop_maintenance",
    "DRAIN_AGENT": "drain_agent", "DEACTIVATE_AGENT": "deactivate_agent",
    "REACTIVATE_AGENT": "reactivate_agent",
}  # fmt: skip


def parse(kind: str, value: Mapping[str, Any]) -> dict[str, Any]:
    """The body of a call of type ``kind`` (``{}`` for one without), converted and checked.

    Raises:
        CallError: 400 ``Failed to convert JSON into Call protobuf: ...`` or ``Failed to
            validate master::Call: Expecting '<field>' to be present``.
    """
    field = BODIES[kind]
    if field is None:
        return {}
    try:
        call = protojson.convert("OperatorCall", {field: value[field]} if field in value
                                 else {})
    except ValueError as exc:
        raise CallError(f"Failed to convert JSON into Call protobuf: {exc}") from None
    if field not in call:
        raise CallError(f"Failed to validate master::Call: Expecting '{field}' to be present")
    return dict(call[field])


Handler = Callable[["Master", dict[str, Any]], dict[str, Any] | None]


def _get_quota(master: Master, body: dict[str, Any]) -> dict[str, Any]:
    return {"status": master.quota_status()}


def _update_quota(master: Master, body: dict[str, Any]) -> None:
    master.update_quota(list(body.get("quota_configs", [])), bool(body.get("force")))


def _set_quota(master: Master, body: dict[str, Any]) -> None:
    master.set_quota(body["quota_request"])


def _remove_quota(master: Master, body: dict[str, Any]) -> None:
    master.remove_quota(str(body["role"]))


def _get_schedule(master: Master, body: dict[str, Any]) -> dict[str, Any]:
    return {"schedule": master.maintenance_schedule()}


def _get_status(master: Master, body: dict[str, Any]) -> dict[str, Any]:
    return {"status": master.maintenance_status()}


def _update_schedule(master: Master, body: dict[str, Any]) -> None:
    master.update_maintenance_schedule(body["schedule"])


def _start(master: Master, body: dict[str, Any]) -> None:
    master.start_maintenance(list(body.get("machines", [])))


def _stop(master: Master, body: dict[str, Any]) -> None:
    master.stop_maintenance(list(body.get("machines", [])))


def _drain(master: Master, body: dict[str, Any]) -> None:
    master.drain_agent(body["agent_id"]["value"], body.get("max_grace_period"),
                       bool(body.get("mark_gone")))


def _deactivate(master: Master, body: dict[str, Any]) -> None:
    master.deactivate_agent(body["agent_id"]["value"])


def _reactivate(master: Master, body: dict[str, Any]) -> None:
    master.reactivate_agent(body["agent_id"]["value"])


#: Call type → (``Response`` field for a read call or None, handler).
HANDLERS: dict[str, tuple[str | None, Handler]] = {
    "GET_QUOTA": ("get_quota", _get_quota),
    "UPDATE_QUOTA": (None, _update_quota),
    "SET_QUOTA": (None, _set_quota),
    "REMOVE_QUOTA": (None, _remove_quota),
    "GET_MAINTENANCE_SCHEDULE": ("get_maintenance_schedule", _get_schedule),
    "GET_MAINTENANCE_STATUS": ("get_maintenance_status", _get_status),
    "UPDATE_MAINTENANCE_SCHEDULE": (None, _update_schedule),
    "START_MAINTENANCE": (None, _start),
    "STOP_MAINTENANCE": (None, _stop),
    "DRAIN_AGENT": (None, _drain),
    "DEACTIVATE_AGENT": (None, _deactivate),
    "REACTIVATE_AGENT": (None, _reactivate),
}


def handle(master: Master, kind: str, value: Mapping[str, Any]) -> dict[str, Any] | None:
    """Serve one call: the ``Response`` JSON of a read call, None for the others.

    Raises:
        CallError: with the status and message the master answers.
    """
    body = parse(kind, value)
    field, handler = HANDLERS[kind]
    result = handler(master, body)
    return None if field is None else {"type": kind, field: result}
