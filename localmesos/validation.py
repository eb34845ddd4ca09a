"""Parsing and validating scheduler ``Call`` JSON the way a Mesos 1.11 master does.

A call goes through the same three stages as in ``Master::Http::scheduler``
(apache/mesos ``src/master/http.cpp``), and each failure gives the same kind of ``400`` message:

1. JSON decoding: ``"Failed to parse body into JSON: ..."``.
2. JSON → protobuf conversion (stout's ``protobuf::parse``): field types are checked against the
   proto schema, unknown keys are dropped, ``null`` means unset, unknown names of optional enums
   are dropped, numbers may come as numeric strings, ``bytes`` must be base64, and required
   fields must be present: ``"Failed to convert JSON into Call protobuf: ..."``.
3. Call validation (``validation::scheduler::call::validate``, ``src/master/validation.cpp``):
   ``"Failed to validate scheduler::Call: Expecting 'framework_id' to be present"``.

The result of :func:`parse_call` is a *normalized* call: a plain dict holding only the fields the
schema knows, with the defaults Mesos writes back out (``CommandInfo.shell: true``,
``URI.extract: true``, ``Filters.refuse_seconds: 5``...). The master acts on that dict only, so
nothing it reads can have an unexpected type.

Only the messages the master reads are described field by field; message fields the master
passes through untouched (health checks, discovery, volumes...) are accepted as any JSON object,
as long as they are not nested absurdly deep (see :data:`MAX_NESTING`).

Also here: the pieces of framework and task validation that do not need master state (IDs,
roles, durations), used by :mod:`localmesos.master.master`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
import json
import logging
import math
from typing import Any

from disauto.common.json_kind import json_kind


logger = logging.getLogger("disauto.localmesos.master")


#: Deepest JSON nesting accepted in a body. No Mesos message is nested anywhere near this deep,
#: so a deeper body can only be garbage; refusing it keeps every later ``json.dumps`` safe.
MAX_NESTING = 64

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
UINT32 = (0, 2**32 - 1)
UINT64 = (0, 2**64 - 1)

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

FRAMEWORK_CAPABILITIES = (
    "UNKNOWN",
    "REVOCABLE_RESOURCES",
    "TASK_KILLING_STATE",
    "GPU_RESOURCES",
    "SHARED_RESOURCES",
    "PARTITION_AWARE",
    "MULTI_ROLE",
    "RESERVATION_REFINEMENT",
    "REGION_AWARE",
)
OPERATION_TYPES = (
    "UNKNOWN",
    "LAUNCH",
    "LAUNCH_GROUP",
    "RESERVE",
    "UNRESERVE",
    "CREATE",
    "DESTROY",
    "GROW_VOLUME",
    "SHRINK_VOLUME",
    "CREATE_DISK",
    "DESTROY_DISK",
)
_ENUMS: dict[str, tuple[str, ...]] = {
    "Call.Type": CALL_TYPES,
    "FrameworkInfo.Capability.Type": FRAMEWORK_CAPABILITIES,
    "Offer.Operation.Type": OPERATION_TYPES,
    "Value.Type": ("SCALAR", "RANGES", "SET", "TEXT"),
    "Environment.Variable.Type": ("UNKNOWN", "VALUE", "SECRET"),
    "ExecutorInfo.Type": ("UNKNOWN", "DEFAULT", "CUSTOM"),
    "ContainerInfo.Type": ("DOCKER", "MESOS"),
    "DockerInfo.Network": ("HOST", "BRIDGE", "NONE", "USER"),
    "AttributeConstraint.Selector.PseudoattributeType": ("UNKNOWN", "HOSTNAME", "REGION", "ZONE"),
}
_ENUM_NUMBERS: dict[str, dict[int, str]] = {
    "Call.Type": _CALL_TYPE_NUMBERS,
    "FrameworkInfo.Capability.Type": dict(enumerate(FRAMEWORK_CAPABILITIES)),
    "Offer.Operation.Type": {
        0: "UNKNOWN", 1: "LAUNCH", 6: "LAUNCH_GROUP", 2: "RESERVE", 3: "UNRESERVE",
        4: "CREATE", 5: "DESTROY", 11: "GROW_VOLUME", 12: "SHRINK_VOLUME", 13: "CREATE_DISK",
        14: "DESTROY_DISK",
    },  # fmt: skip
    "Value.Type": {0: "SCALAR", 1: "RANGES", 2: "SET", 3: "TEXT"},
    "Environment.Variable.Type": {0: "UNKNOWN", 1: "VALUE", 2: "SECRET"},
    "ExecutorInfo.Type": {0: "UNKNOWN", 1: "DEFAULT", 2: "CUSTOM"},
    "ContainerInfo.Type": {1: "DOCKER", 2: "MESOS"},
    "DockerInfo.Network": {1: "HOST", 2: "BRIDGE", 3: "NONE", 4: "USER"},
    "AttributeConstraint.Selector.PseudoattributeType": {
        0: "UNKNOWN", 1: "HOSTNAME", 2: "REGION", 3: "ZONE",
    },
}


class CallError(ValueError):
    """A call the master answers with an HTTP error; ``str()`` is the response body.

    Attributes:
        status: the HTTP status code (400 unless said otherwise).
    """

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class _ConvertError(ValueError):
    """A JSON value that does not fit the proto schema (stout's conversion errors)."""


# -- the schema --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Field:
    kind: str  # string, bytes, double, int32, int64, uint32, uint64, bool, enum:<E>, msg:<M>,
    # map:<M> (map<string, M>), any
    repeated: bool = False
    required: bool = False
    default: Any = None


def _f(spec: str, default: Any = None) -> _Field:
    """``"string!"`` required, ``"[msg:Resource]"`` repeated, ``"double"`` optional."""
    repeated = spec.startswith("[")
    kind = spec.strip("[]")
    required = kind.endswith("!")
    return _Field(kind.rstrip("!"), repeated, required, default)


_ID = {"value": _f("string!")}
_SCHEMA: dict[str, dict[str, _Field]] = {
    "ID": _ID,
    "Call": {
        "framework_id": _f("msg:ID"),
        "type": _f("enum:Call.Type"),
        "subscribe": _f("msg:Call.Subscribe"),
        "accept": _f("msg:Call.Accept"),
        "decline": _f("msg:Call.Decline"),
        "accept_inverse_offers": _f("msg:Call.InverseOffers"),
        "decline_inverse_offers": _f("msg:Call.InverseOffers"),
        "revive": _f("msg:Call.Roles"),
        "suppress": _f("msg:Call.Roles"),
        "kill": _f("msg:Call.Kill"),
        "shutdown": _f("msg:Call.Shutdown"),
        "acknowledge": _f("msg:Call.Acknowledge"),
        "acknowledge_operation_status": _f("msg:Call.AcknowledgeOperationStatus"),
        "reconcile": _f("msg:Call.Reconcile"),
        "reconcile_operations": _f("msg:Call.ReconcileOperations"),
        "message": _f("msg:Call.Message"),
        "request": _f("msg:Call.Request"),
        "update_framework": _f("msg:Call.UpdateFramework"),
    },
    "Call.Subscribe": {
        "framework_info": _f("msg:FrameworkInfo!"),
        "suppressed_roles": _f("[string]"),
        "offer_constraints": _f("msg:OfferConstraints"),
    },
    "Call.UpdateFramework": {
        "framework_info": _f("msg:FrameworkInfo!"),
        "suppressed_roles": _f("[string]"),
        "offer_constraints": _f("msg:OfferConstraints"),
    },
    "OfferConstraints": {"role_constraints": _f("map:OfferConstraints.RoleConstraints")},
    "OfferConstraints.RoleConstraints": {"groups": _f("[msg:OfferConstraints.Group]")},
    "OfferConstraints.Group": {"attribute_constraints": _f("[msg:AttributeConstraint]")},
    "AttributeConstraint": {
        "selector": _f("msg:AttributeConstraint.Selector!"),
        "predicate": _f("msg:AttributeConstraint.Predicate!"),
    },
    "AttributeConstraint.Selector": {
        "pseudoattribute_type": _f("enum:AttributeConstraint.Selector.PseudoattributeType"),
        "attribute_name": _f("string"),
    },
    "AttributeConstraint.Predicate": {
        "exists": _f("any"),
        "not_exists": _f("any"),
        "text_equals": _f("msg:AttributeConstraint.Text"),
        "text_not_equals": _f("msg:AttributeConstraint.Text"),
        "text_matches": _f("msg:AttributeConstraint.Regex"),
        "text_not_matches": _f("msg:AttributeConstraint.Regex"),
    },
    "AttributeConstraint.Text": {"value": _f("string!")},
    "AttributeConstraint.Regex": {"regex": _f("string!")},
    "Call.Accept": {
        "offer_ids": _f("[msg:ID]"),
        "operations": _f("[msg:Offer.Operation]"),
        "filters": _f("msg:Filters"),
    },
    "Call.Decline": {"offer_ids": _f("[msg:ID]"), "filters": _f("msg:Filters")},
    "Call.InverseOffers": {"inverse_offer_ids": _f("[msg:ID]"), "filters": _f("msg:Filters")},
    "Call.Roles": {"roles": _f("[string]")},
    "Call.Kill": {
        "task_id": _f("msg:ID!"),
        "agent_id": _f("msg:ID"),
        "kill_policy": _f("msg:KillPolicy"),
    },
    "Call.Shutdown": {"executor_id": _f("msg:ID!"), "agent_id": _f("msg:ID!")},
    "Call.Acknowledge": {
        "agent_id": _f("msg:ID!"),
        "task_id": _f("msg:ID!"),
        "uuid": _f("bytes!"),
    },
    "Call.AcknowledgeOperationStatus": {
        "agent_id": _f("msg:ID"),
        "resource_provider_id": _f("msg:ID"),
        "uuid": _f("bytes!"),
        "operation_id": _f("msg:ID!"),
    },
    "Call.Reconcile": {"tasks": _f("[msg:Call.Reconcile.Task]")},
    "Call.Reconcile.Task": {"task_id": _f("msg:ID!"), "agent_id": _f("msg:ID")},
    "Call.ReconcileOperations": {"operations": _f("[msg:Call.ReconcileOperations.Operation]")},
    "Call.ReconcileOperations.Operation": {
        "operation_id": _f("msg:ID!"),
        "agent_id": _f("msg:ID"),
        "resource_provider_id": _f("msg:ID"),
    },
    "Call.Message": {
        "agent_id": _f("msg:ID!"),
        "executor_id": _f("msg:ID!"),
        "data": _f("bytes!"),
    },
    "Call.Request": {"requests": _f("[msg:Request]")},
    "Request": {"agent_id": _f("msg:ID"), "resources": _f("[msg:Resource]")},
    "FrameworkInfo": {
        "user": _f("string!"),
        "name": _f("string!"),
        "id": _f("msg:ID"),
        "failover_timeout": _f("double", 0.0),
        "checkpoint": _f("bool", False),
        "role": _f("string"),
        "roles": _f("[string]"),
        "hostname": _f("string"),
        "principal": _f("string"),
        "webui_url": _f("string"),
        "capabilities": _f("[msg:FrameworkInfo.Capability]"),
        "labels": _f("msg:Labels"),
        "offer_filters": _f("any"),
    },
    "FrameworkInfo.Capability": {"type": _f("enum:FrameworkInfo.Capability.Type")},
    "Labels": {"labels": _f("[msg:Label]")},
    "Label": {"key": _f("string!"), "value": _f("string")},
    "Filters": {"refuse_seconds": _f("double", 5.0)},
    "KillPolicy": {"grace_period": _f("msg:DurationInfo")},
    "DurationInfo": {"nanoseconds": _f("int64!")},
    "Offer.Operation": {
        "type": _f("enum:Offer.Operation.Type"),
        "id": _f("msg:ID"),
        "launch": _f("msg:Offer.Operation.Launch"),
        "launch_group": _f("msg:Offer.Operation.LaunchGroup"),
        "reserve": _f("any"),
        "unreserve": _f("any"),
        "create": _f("any"),
        "destroy": _f("any"),
        "grow_volume": _f("any"),
        "shrink_volume": _f("any"),
        "create_disk": _f("any"),
        "destroy_disk": _f("any"),
    },
    "Offer.Operation.Launch": {"task_infos": _f("[msg:TaskInfo]")},
    "Offer.Operation.LaunchGroup": {
        "executor": _f("msg:ExecutorInfo!"),
        "task_group": _f("msg:TaskGroupInfo!"),
    },
    "TaskGroupInfo": {"tasks": _f("[msg:TaskInfo]")},
    "TaskInfo": {
        "name": _f("string!"),
        "task_id": _f("msg:ID!"),
        "agent_id": _f("msg:ID!"),
        "resources": _f("[msg:Resource]"),
        "executor": _f("msg:ExecutorInfo"),
        "command": _f("msg:CommandInfo"),
        "container": _f("msg:ContainerInfo"),
        "health_check": _f("any"),
        "check": _f("any"),
        "kill_policy": _f("msg:KillPolicy"),
        "data": _f("bytes"),
        "labels": _f("msg:Labels"),
        "discovery": _f("any"),
        "max_completion_time": _f("msg:DurationInfo"),
        "limits": _f("any"),
    },
    "Resource": {
        "provider_id": _f("any"),
        "name": _f("string!"),
        "type": _f("enum:Value.Type!"),
        "scalar": _f("msg:Value.Scalar"),
        "ranges": _f("msg:Value.Ranges"),
        "set": _f("msg:Value.Set"),
        "role": _f("string"),
        "allocation_info": _f("any"),
        "reservation": _f("any"),
        "reservations": _f("[any]"),
        "disk": _f("any"),
        "revocable": _f("any"),
        "shared": _f("any"),
    },
    "Value.Scalar": {"value": _f("double!")},
    "Value.Ranges": {"range": _f("[msg:Value.Range]")},
    "Value.Range": {"begin": _f("uint64!"), "end": _f("uint64!")},
    "Value.Set": {"item": _f("[string]")},
    "CommandInfo": {
        "uris": _f("[msg:CommandInfo.URI]"),
        "environment": _f("msg:Environment"),
        "shell": _f("bool", True),
        "value": _f("string"),
        "arguments": _f("[string]"),
        "user": _f("string"),
    },
    "CommandInfo.URI": {
        "value": _f("string!"),
        "executable": _f("bool"),
        "extract": _f("bool", True),
        "cache": _f("bool"),
        "output_file": _f("string"),
    },
    "Environment": {"variables": _f("[msg:Environment.Variable]")},
    "Environment.Variable": {
        "name": _f("string!"),
        "type": _f("enum:Environment.Variable.Type", "VALUE"),
        "value": _f("string"),
        "secret": _f("any"),
    },
    "ExecutorInfo": {
        "type": _f("enum:ExecutorInfo.Type"),
        "executor_id": _f("msg:ID!"),
        "framework_id": _f("msg:ID"),
        "command": _f("msg:CommandInfo"),
        "container": _f("msg:ContainerInfo"),
        "resources": _f("[msg:Resource]"),
        "name": _f("string"),
        "source": _f("string"),
        "data": _f("bytes"),
        "discovery": _f("any"),
        "shutdown_grace_period": _f("msg:DurationInfo"),
        "labels": _f("msg:Labels"),
    },
    "ContainerInfo": {
        "type": _f("enum:ContainerInfo.Type!"),
        "volumes": _f("[any]"),
        "hostname": _f("string"),
        "docker": _f("msg:DockerInfo"),
        "mesos": _f("any"),
        "network_infos": _f("[any]"),
        "linux_info": _f("any"),
        "rlimit_info": _f("any"),
        "tty_info": _f("any"),
    },
    "DockerInfo": {
        "image": _f("string!"),
        "network": _f("enum:DockerInfo.Network", "HOST"),
        "port_mappings": _f("[any]"),
        "privileged": _f("bool", False),
        "parameters": _f("[any]"),
        "force_pull_image": _f("bool"),
        "volume_driver": _f("string"),
    },
}


def add_messages(
    messages: Mapping[str, Mapping[str, str]],
    enums: Mapping[str, Mapping[int, str]] | None = None,
) -> None:
    """Teach :func:`convert` more messages (another API's calls, e.g. the executor API's).

    Args:
        messages: message name -> field name -> spec (``"string!"`` required,
            ``"[msg:Resource]"`` repeated, ``"enum:TaskState!"``...); names already known are
            replaced.
        enums: enum name -> number -> value name, for the ``enum:`` specs.
    """
    for name, numbers in (enums or {}).items():
        _ENUM_NUMBERS[name] = dict(numbers)
        _ENUMS[name] = tuple(numbers.values())
    for name, fields in messages.items():
        _SCHEMA[name] = {key: _f(spec) for key, spec in fields.items()}


def _not_expecting(value: Any, name: str) -> _ConvertError:
    return _ConvertError(f"Not expecting a JSON {json_kind(value)} for field '{name}'")


def _convert_scalar(field: _Field, value: Any, name: str) -> Any:
    """One non-repeated value of a non-message field; ``None`` means "drop it"."""
    kind = field.kind
    if kind == "string":
        if isinstance(value, str):
            return value
        raise _not_expecting(value, name)
    if kind == "bytes":
        if not isinstance(value, str):
            raise _not_expecting(value, name)
        try:
            base64.b64decode(value.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
            raise _ConvertError(f"Failed to base64 decode bytes field '{name}': {exc}") from None
        return value
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value in ("true", "false"):
            return value == "true"
        raise _not_expecting(value, name)
    if kind == "double":
        if isinstance(value, bool):
            raise _not_expecting(value, name)
        if isinstance(value, int | float):
            number = float(value)
        elif isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                raise _ConvertError(
                    f"Failed to convert '{value}' to number for field '{name}'"
                ) from None
        else:
            raise _not_expecting(value, name)
        if math.isnan(number):
            raise _ConvertError(f"Failed to convert '{value}' to number for field '{name}'")
        return number
    if kind in ("int32", "int64", "uint32", "uint64"):
        low, high = {"int32": INT32, "int64": INT64, "uint32": UINT32, "uint64": UINT64}[kind]
        if isinstance(value, bool):
            raise _not_expecting(value, name)
        if isinstance(value, str):
            try:
                value = int(value.strip())
            except ValueError:
                raise _ConvertError(
                    f"Failed to convert '{value}' to integer for field '{name}'"
                ) from None
        if isinstance(value, float):
            if not value.is_integer():
                raise _ConvertError(f"Failed to convert '{value}' to integer for field '{name}'")
            value = int(value)
        if not isinstance(value, int):
            raise _not_expecting(value, name)
        if not low <= value <= high:
            raise _ConvertError(f"Value {value} out of range for field '{name}'")
        return value
    if kind.startswith("enum:"):
        enum = kind[5:]
        if isinstance(value, str):
            if value in _ENUMS[enum]:
                return value
        elif isinstance(value, int) and not isinstance(value, bool):
            if value in _ENUM_NUMBERS[enum]:
                return _ENUM_NUMBERS[enum][value]
        else:
            raise _not_expecting(value, name)
        if field.required:
            raise _ConvertError(f"Failed to find enum for '{value}'")
        return None  # stout drops unknown values of optional enums
    if kind == "any":
        if not isinstance(value, dict):
            raise _not_expecting(value, name)
        return value
    raise AssertionError(f"unknown field kind {kind}")  # pragma: no cover


def _convert_map(message: str, value: Any, name: str) -> dict[str, Any]:
    """A ``map<string, message>`` field: a JSON object of messages (stout's map support)."""
    if not isinstance(value, dict):
        raise _not_expecting(value, name)
    return {key: _convert_message(message, item, name) for key, item in value.items()}


def _convert_message(message: str, value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _not_expecting(value, name)
    schema = _SCHEMA[message]
    out: dict[str, Any] = {}
    for key, raw in value.items():
        field = schema.get(key)
        if field is None or raw is None:
            continue  # unknown keys are ignored; null means unset
        if field.repeated:
            if not isinstance(raw, list):
                raise _not_expecting(raw, key)
            items = []
            for item in raw:
                if item is None:
                    continue
                if field.kind.startswith("msg:"):
                    items.append(_convert_message(field.kind[4:], item, key))
                else:
                    converted = _convert_scalar(field, item, key)
                    if converted is not None:
                        items.append(converted)
            out[key] = items
        elif isinstance(raw, list):
            raise _not_expecting(raw, key)
        elif field.kind.startswith("map:"):
            out[key] = _convert_map(field.kind[4:], raw, key)
        elif field.kind.startswith("msg:"):
            out[key] = _convert_message(field.kind[4:], raw, key)
        else:
            converted = _convert_scalar(field, raw, key)
            if converted is not None:
                out[key] = converted
    missing = [key for key, field in schema.items() if field.required and key not in out]
    if missing:
        raise _ConvertError("Missing required fields: " + ", ".join(missing))
    for key, field in schema.items():
        if field.default is not None and key not in out:
            out[key] = field.default
    return out


def convert(message: str, value: Any) -> dict[str, Any]:
    """Convert a JSON value into the normalized form of the proto message named ``message``.

    Raises:
        ValueError: with stout's wording when the value does not fit the schema.
    """
    if not isinstance(value, dict):
        raise _ConvertError("Expecting a JSON object")
    return _convert_message(message, value, message)


# -- decoding ---------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid literal {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


def _depth(value: Any) -> int:
    """Nesting depth of a decoded JSON value, computed without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
    return deepest


def decode_json(body: bytes) -> Any:
    """Decode a request body as JSON.

    Raises:
        CallError: ``"Failed to parse body into JSON: ..."`` for bodies that are not UTF-8
            JSON, use ``NaN``/``Infinity`` literals, or nest deeper than :data:`MAX_NESTING`.
    """
    try:
        value = json.loads(
            body.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        text = str(exc) if not isinstance(exc, RecursionError) else "nesting too deep"
        raise CallError(f"Failed to parse body into JSON: {text}") from None
    if _depth(value) > MAX_NESTING:
        raise CallError(
            f"Failed to parse body into JSON: nesting deeper than {MAX_NESTING} levels"
        )
    return value


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


def valid_uuid(b64: str) -> bool:
    """True when ``b64`` decodes to the 16 bytes of a UUID (Mesos ``UUID::fromBytes``)."""
    try:
        return len(base64.b64decode(b64.encode("ascii"), validate=True)) == 16
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return False


def validate_call(call: Mapping[str, Any], principal: str | None = None) -> str | None:
    """Mesos ``validation::scheduler::call::validate`` on a converted call.

    Args:
        call: a call as returned by :func:`convert`.
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
        call = convert("Call", value)
    except _ConvertError as exc:
        raise CallError(f"Failed to convert JSON into Call protobuf: {exc}") from None
    error = validate_call(call, principal)
    if error is not None:
        raise CallError(f"Failed to validate scheduler::Call: {error}")
    return call


# -- IDs, roles, durations --------------------------------------------------------------------

NAME_MAX = 255


def validate_id(value: str) -> str | None:
    """Mesos ``common::validation::validateID``: the error, or ``None`` for a valid ID."""
    if not value:
        return "ID must not be empty"
    if len(value) > NAME_MAX:
        return f"ID must not be greater than {NAME_MAX} characters"
    if value in (".", ".."):
        return f"'{value}' is disallowed"
    if any(_invalid_char(c) for c in value):
        return f"'{value}' contains invalid characters"
    return None


def _invalid_char(char: str) -> bool:
    return ord(char) < 32 or ord(char) == 127 or char in "/\\"


def validate_task_id(value: str) -> str | None:
    """The master's ``validateTaskID`` plus the common ID rules."""
    if any(_invalid_char(c) for c in value):
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
