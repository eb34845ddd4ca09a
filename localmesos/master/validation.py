"""Parsing and validating scheduler ``Call`` JSON the way a Mesos 1.11 master does.

A call goes through the stages of ``Master::Http::scheduler`` (apache/mesos
``src/master/http.cpp``), each failing with Mesos' ``400`` message: JSON decoding and JSON →
protobuf conversion (:mod:`localmesos.protocol.protojson`, ``"Failed to convert JSON into Call
protobuf: ..."``), then call validation (``validation::scheduler::call::validate``,
``src/master/validation.cpp``): ``"Failed to validate scheduler::Call: Expecting 'framework_id'
to be present"``. The calls' messages (``include/mesos/v1/scheduler/scheduler.proto``) are added
to the schema here; the messages they carry (``FrameworkInfo``, ``TaskInfo``...) are
:mod:`localmesos.protocol.messages`.

Also here: the pieces of framework and task validation that do not need master state (task IDs,
roles, durations), used by the master's parts.
"""

from __future__ import annotations

from collections.abc import Mapping
import logging
import math
from typing import Any

from disauto.localmesos.protocol import protojson
from disauto.localmesos.protocol.protojson import INT64
from disauto.localmesos.protocol.protojson import CallError
from disauto.localmesos.protocol.protojson import ConvertError
from disauto.localmesos.protocol.protojson import decode_json
from disauto.localmesos.protocol.validation import invalid_id_char
from disauto.localmesos.protocol.validation import valid_uuid
from disauto.localmesos.protocol.validation import validate_id


logger = logging.getLogger("disauto.localmesos.master")

CALL_TYPES = (
    "UNKNOWN",
    "SUBSCRIBE",
    "TEARDOWN",
    "ACCEPT",
    "DECLINE",
    "ACCEPT_INVERSE_OFFERS",
    "DECLINE_INVERSE_OFFERS",
    "REVIVE",
    "KILL",
    "SHUTDOWN",
    "ACKNOWLEDGE",
    "ACKNOWLEDGE_OPERATION_STATUS",
    "RECONCILE",
    "RECONCILE_OPERATIONS",
    "MESSAGE",
    "REQUEST",
    "SUPPRESS",
    "UPDATE_FRAMEWORK",
)
_CALL_TYPE_NUMBERS = {
    0: "UNKNOWN", 1: "SUBSCRIBE", 2: "TEARDOWN", 3: "ACCEPT", 4: "DECLINE", 5: "REVIVE",
    6: "KILL", 7: "SHUTDOWN", 8: "ACKNOWLEDGE", 9: "RECONCILE", 10: "MESSAGE", 11: "REQUEST",
    12: "SUPPRESS", 13: "ACCEPT_INVERSE_OFFERS", 14: "DECLINE_INVERSE_OFFERS",
    15: "ACKNOWLEDGE_OPERATION_STATUS", 16: "RECONCILE_OPERATIONS", 17: "UPDATE_FRAMEWORK",
}  # fmt: skip

#: ``AttributeConstraint.Selector.PseudoattributeType``.
PSEUDOATTRIBUTE_TYPES = {0: "UNKNOWN", 1: "HOSTNAME", 2: "REGION", 3: "ZONE"}

#: ``scheduler.proto``'s messages, in the schema language of :mod:`localmesos.protocol.protojson`.
_MESSAGES: dict[str, dict[str, protojson.FieldSpec]] = {
    "Call": {
        "framework_id": "msg:ID",
        "type": "enum:Call.Type",
        "subscribe": "msg:Call.Subscribe",
        "accept": "msg:Call.Accept",
        "decline": "msg:Call.Decline",
        "accept_inverse_offers": "msg:Call.InverseOffers",
        "decline_inverse_offers": "msg:Call.InverseOffers",
        "revive": "msg:Call.Roles",
        "suppress": "msg:Call.Roles",
        "kill": "msg:Call.Kill",
        "shutdown": "msg:Call.Shutdown",
        "acknowledge": "msg:Call.Acknowledge",
        "acknowledge_operation_status": "msg:Call.AcknowledgeOperationStatus",
        "reconcile": "msg:Call.Reconcile",
        "reconcile_operations": "msg:Call.ReconcileOperations",
        "message": "msg:Call.Message",
        "request": "msg:Call.Request",
        "update_framework": "msg:Call.UpdateFramework",
    },
    "Call.Subscribe": {
        "framework_info": "msg:FrameworkInfo!",
        "suppressed_roles": "[string]",
        "offer_constraints": "msg:OfferConstraints",
    },
    "Call.UpdateFramework": {
        "framework_info": "msg:FrameworkInfo!",
        "suppressed_roles": "[string]",
        "offer_constraints": "msg:OfferConstraints",
    },
    "OfferConstraints": {"role_constraints": "map:OfferConstraints.RoleConstraints"},
    "OfferConstraints.RoleConstraints": {"groups": "[msg:OfferConstraints.Group]"},
    "OfferConstraints.Group": {"attribute_constraints": "[msg:AttributeConstraint]"},
    "AttributeConstraint": {
        "selector": "msg:AttributeConstraint.Selector!",
        "predicate": "msg:AttributeConstraint.Predicate!",
    },
    "AttributeConstraint.Selector": {
        "pseudoattribute_type": "enum:AttributeConstraint.Selector.PseudoattributeType",
        "attribute_name": "string",
    },
    "AttributeConstraint.Predicate": {
        "exists": "any",
        "not_exists": "any",
        "text_equals": "msg:AttributeConstraint.Text",
        "text_not_equals": "msg:AttributeConstraint.Text",
        "text_matches": "msg:AttributeConstraint.Regex",
        "text_not_matches": "msg:AttributeConstraint.Regex",
    },
    "AttributeConstraint.Text": {"value": "string!"},
    "AttributeConstraint.Regex": {"regex": "string!"},
    "Call.Accept": {
        "offer_ids": "[msg:ID]",
        "operations": "[msg:Offer.Operation]",
        "filters": "msg:Filters",
    },
    "Call.Decline": {"offer_ids": "[msg:ID]", "filters": "msg:Filters"},
    "Call.InverseOffers": {"inverse_offer_ids": "[msg:ID]", "filters": "msg:Filters"},
    "Call.Roles": {"roles": "[string]"},
    "Call.Kill": {
        "task_id": "msg:ID!",
        "agent_id": "msg:ID",
        "kill_policy": "msg:KillPolicy",
    },
    "Call.Shutdown": {"executor_id": "msg:ID!", "agent_id": "msg:ID!"},
    "Call.Acknowledge": {
        "agent_id": "msg:ID!",
        "task_id": "msg:ID!",
        "uuid": "bytes!",
    },
    "Call.AcknowledgeOperationStatus": {
        "agent_id": "msg:ID",
        "resource_provider_id": "msg:ID",
        "uuid": "bytes!",
        "operation_id": "msg:ID!",
    },
    "Call.Reconcile": {"tasks": "[msg:Call.Reconcile.Task]"},
    "Call.Reconcile.Task": {"task_id": "msg:ID!", "agent_id": "msg:ID"},
    "Call.ReconcileOperations": {"operations": "[msg:Call.ReconcileOperations.Operation]"},
    "Call.ReconcileOperations.Operation": {
        "operation_id": "msg:ID!",
        "agent_id": "msg:ID",
        "resource_provider_id": "msg:ID",
    },
    "Call.Message": {
        "agent_id": "msg:ID!",
        "executor_id": "msg:ID!",
        "data": "bytes!",
    },
    "Call.Request": {"requests": "[msg:Request]"},
}
protojson.add_messages(
    _MESSAGES,
    {
        "Call.Type": _CALL_TYPE_NUMBERS,
        "AttributeConstraint.Selector.PseudoattributeType": PSEUDOATTRIBUTE_TYPES,
    },
)


# -- calls ------------------------------------------------------------------------------------

_SUB_MESSAGE = {
    "ACCEPT": "accept",
    "DECLINE": "decline",
    "ACCEPT_INVERSE_OFFERS": "accept_inverse_offers",
    "DECLINE_INVERSE_OFFERS": "decline_inverse_offers",
    "KILL": "kill",
    "SHUTDOWN": "shutdown",
    "ACKNOWLEDGE": "acknowledge",
    "ACKNOWLEDGE_OPERATION_STATUS": "acknowledge_operation_status",
    "RECONCILE": "reconcile",
    "RECONCILE_OPERATIONS": "reconcile_operations",
    "MESSAGE": "message",
    "REQUEST": "request",
    "UPDATE_FRAMEWORK": "update_framework",
}


def validate_call(call: Mapping[str, Any], principal: str | None = None) -> str | None:
    """Mesos ``validation::scheduler::call::validate`` on a converted call.

    Args:
        call: a call as returned by :func:`~localmesos.protocol.protojson.convert`.
        principal: the HTTP-authenticated principal, if any.

    Returns:
        The error message, or ``None`` when the call is valid.
    """
    kind = call.get("type")
    if kind is None:
        return "Expecting 'type' to be present"
    if kind == "SUBSCRIBE":
        subscribe = call.get("subscribe")
        if subscribe is None:
            return "Expecting 'subscribe' to be present"
        info = subscribe["framework_info"]
        if info.get("id") != call.get("framework_id"):
            return "'framework_id' differs from 'subscribe.framework_info.id'"
        if (
            principal is not None
            and "principal" in info
            and info["principal"] != principal
        ):
            return (
                f"Authenticated principal '{principal}' does not match principal "
                f"'{info['principal']}' set in `FrameworkInfo`"
            )
        return None
    if "framework_id" not in call:
        return "Expecting 'framework_id' to be present"
    sub = _SUB_MESSAGE.get(kind)
    if sub is not None and sub not in call:
        return f"Expecting '{sub}' to be present"
    if kind == "ACKNOWLEDGE" and not valid_uuid(call["acknowledge"]["uuid"]):
        return "Not a valid UUID"
    if kind == "ACKNOWLEDGE_OPERATION_STATUS":
        ack = call["acknowledge_operation_status"]
        if not valid_uuid(ack["uuid"]):
            return "Not a valid UUID"
        if "agent_id" not in ack:
            return "Expecting 'agent_id' to be present"
    if kind == "UPDATE_FRAMEWORK":
        info = call["update_framework"]["framework_info"]
        if info.get("id") != call["framework_id"]:
            return "'framework_id' differs from 'update_framework.framework_info.id'"
    return None


def parse_call(body: bytes, principal: str | None = None) -> dict[str, Any]:
    """Decode, convert and validate one scheduler call body (``application/json``).

    Args:
        body: the raw request body.
        principal: the HTTP-authenticated principal, if any.

    Returns:
        The normalized call.

    Raises:
        CallError: (status 400) with Mesos' message for the first stage that fails.
    """
    value = decode_json(body)
    try:
        call = protojson.convert("Call", value)
    except ConvertError as exc:
        raise CallError(f"Failed to convert JSON into Call protobuf: {exc}") from None
    error = validate_call(call, principal)
    if error is not None:
        raise CallError(f"Failed to validate scheduler::Call: {error}")
    return call


# -- task IDs, roles, durations ---------------------------------------------------------------


def validate_task_id(value: str) -> str | None:
    """The master's ``validateTaskID`` plus the common ID rules."""
    if any(invalid_id_char(c) for c in value):
        return f"TaskID '{value}' contains invalid characters"
    error = validate_id(value)
    if error is not None:
        return f"'TaskInfo.task_id' is invalid: {error}"
    return None


def validate_role(role: str) -> str | None:
    """Mesos ``roles::validate``: the error, or ``None`` for a valid (possibly nested) role."""
    if role == "*":
        return None
    if not role:
        return "Empty role name is invalid"
    if role.startswith("/") or role.endswith("/"):
        return f"Role '{role}' cannot start or end with '/'"
    for part in role.split("/"):
        if part in (".", ".."):
            return f"Role '{role}' cannot include '.' or '..' as a path segment"
        if not part:
            return f"Role '{role}' cannot contain '//'"
        if part == "*":
            return f"Role '{role}' cannot contain '*' as a path segment"
        if part.startswith("-"):
            return f"Role '{role}' cannot start a path segment with '-'"
        if any(ord(c) <= 32 or ord(c) == 127 or c == "\\" for c in part):
            return f"Role '{role}' cannot include whitespace, control or backslash characters"
    return None


#: Largest duration Mesos' ``Duration`` can hold, in seconds (int64 nanoseconds).
MAX_DURATION_SECONDS = INT64[1] / 1e9


def validate_framework_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """Mesos ``framework::validateUpdate``: what a known framework's new FrameworkInfo may not
    change (its principal, unset included; its user; checkpointing).

    Returns:
        The error, or ``None`` when the update is allowed.
    """
    if old.get("principal") != new.get("principal"):
        # Mesos does not tell the caller the principal it holds (only its log does).
        logger.warning(
            "Framework %s with principal %r was asked to change it to %r",
            (old.get("id") or {}).get("value"), old.get("principal"), new.get("principal"),
        )
        return "Changing framework's principal is not allowed."
    if old.get("user") != new.get("user"):
        return (
            "Updating 'FrameworkInfo.user' is unsupported; attempted to update from "
            f"'{old.get('user', '')}' to '{new.get('user', '')}'"
        )
    old_checkpoint = bool(old.get("checkpoint", False))
    new_checkpoint = bool(new.get("checkpoint", False))
    if old_checkpoint != new_checkpoint:
        return (
            "Updating 'FrameworkInfo.checkpoint' is unsupported; attempted to update from "
            f"'{str(old_checkpoint).lower()}' to '{str(new_checkpoint).lower()}'"
        )
    return None


def validate_framework_info(info: Mapping[str, Any]) -> str | None:
    """The parts of Mesos ``framework::validate`` that need no master state.

    Returns:
        The error for an ERROR event, or ``None``.
    """
    fid = info.get("id")
    if fid is not None:
        error = validate_id(fid["value"])
        if error is not None:
            return f"'FrameworkInfo.id' is invalid: {error}"
    capabilities = {c.get("type") for c in info.get("capabilities", [])}
    multi_role = "MULTI_ROLE" in capabilities
    if multi_role:
        if "role" in info:
            return (
                "'FrameworkInfo.role' must not be set when the framework is MULTI_ROLE capable"
            )
        roles = info.get("roles", [])
        duplicates = sorted({r for r in roles if roles.count(r) > 1})
        if duplicates:
            return f"'FrameworkInfo.roles' contains duplicate items: {{ {', '.join(duplicates)} }}"
        for role in roles:
            error = validate_role(role)
            if error is not None:
                return f"'FrameworkInfo.roles' contains invalid role: {error}"
    else:
        if info.get("roles"):
            return (
                "'FrameworkInfo.roles' must not be set when the framework is not MULTI_ROLE"
                " capable"
            )
        error = validate_role(info.get("role", "*"))
        if error is not None:
            return f"'FrameworkInfo.role' is not a valid role: {error}"
    timeout = info.get("failover_timeout", 0.0)
    if not math.isfinite(timeout) or abs(timeout) > MAX_DURATION_SECONDS:
        return f"Invalid 'FrameworkInfo.failover_timeout': {timeout} is not a valid duration"
    return None


def framework_roles(info: Mapping[str, Any]) -> list[str]:
    """The framework's roles: ``roles`` (MULTI_ROLE) or ``[role]`` (default ``*``)."""
    capabilities = {c.get("type") for c in info.get("capabilities", [])}
    if "MULTI_ROLE" in capabilities:
        return list(dict.fromkeys(info.get("roles", [])))
    return [info.get("role", "*")]
