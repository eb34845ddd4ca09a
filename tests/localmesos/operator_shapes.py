"""A strict checker of operator API answers against ``mesos.v1.master.Response``.

The repository holds no copy of Mesos' ``.proto`` files, and the tests cannot fetch them, so
the messages the read calls answer are described here, field by field, as Mesos 1.11 declares
them (``include/mesos/v1/master/master.proto`` and ``include/mesos/v1/mesos.proto``): each
field's label (``req``, ``opt``, ``rep``, ``map``) and type. :func:`check` walks an answer as
protobuf's JSON parser would and reports every key the message does not declare, every
required field that is missing, every value of the wrong JSON kind and every unknown enum name.

Messages the embedded master passes through untouched from a framework (``ContainerInfo``,
``HealthCheck``...) are typed ``any``: checked to be objects only.
"""

from __future__ import annotations

from typing import Any


TASK_STATES = (
    "TASK_STAGING TASK_STARTING TASK_RUNNING TASK_KILLING TASK_FINISHED TASK_FAILED "
    "TASK_KILLED TASK_ERROR TASK_LOST TASK_DROPPED TASK_UNREACHABLE TASK_GONE "
    "TASK_GONE_BY_OPERATOR TASK_UNKNOWN"
).split()

ENUMS: dict[str, tuple[str, ...]] = {
    "Response.Type": tuple(
        "UNKNOWN GET_HEALTH GET_FLAGS GET_VERSION GET_METRICS GET_LOGGING_LEVEL LIST_FILES "
        "READ_FILE GET_STATE GET_AGENTS GET_FRAMEWORKS GET_EXECUTORS GET_OPERATIONS GET_TASKS "
        "GET_ROLES GET_WEIGHTS GET_MASTER GET_MAINTENANCE_STATUS GET_MAINTENANCE_SCHEDULE "
        "GET_QUOTA".split()
    ),
    "TaskState": tuple(TASK_STATES),
    "Value.Type": ("SCALAR", "RANGES", "SET", "TEXT"),
    "TaskStatus.Source": ("SOURCE_MASTER", "SOURCE_AGENT", "SOURCE_EXECUTOR"),
    "AgentInfo.Capability.Type": (
        "UNKNOWN MULTI_ROLE HIERARCHICAL_ROLE RESERVATION_REFINEMENT RESOURCE_PROVIDER "
        "RESIZE_VOLUME AGENT_OPERATION_FEEDBACK AGENT_DRAINING TASK_RESOURCE_LIMITS".split()
    ),
    "FrameworkInfo.Capability.Type": (
        "UNKNOWN REVOCABLE_RESOURCES TASK_KILLING_STATE GPU_RESOURCES SHARED_RESOURCES "
        "PARTITION_AWARE MULTI_ROLE RESERVATION_REFINEMENT REGION_AWARE".split()
    ),
    "ExecutorInfo.Type": ("UNKNOWN", "DEFAULT", "CUSTOM"),
    "DrainState": ("UNKNOWN", "DRAINING", "DRAINED"),
    "ReservationInfo.Type": ("UNKNOWN", "STATIC", "DYNAMIC"),
    "InverseOfferStatus.Status": ("UNKNOWN", "ACCEPT", "DECLINE"),
}

_ID = {"value": "req string"}
MESSAGES: dict[str, dict[str, str]] = {
    "Response": {
        "type": "opt enum:Response.Type",
        "get_health": "opt GetHealth",
        "get_version": "opt GetVersion",
        "get_state": "opt GetState",
        "get_agents": "opt GetAgents",
        "get_frameworks": "opt GetFrameworks",
        "get_executors": "opt GetExecutors",
        "get_tasks": "opt GetTasks",
        "get_quota": "opt GetQuota",
        "get_maintenance_schedule": "opt GetMaintenanceSchedule",
        "get_maintenance_status": "opt GetMaintenanceStatus",
    },
    "GetQuota": {"status": "req QuotaStatus"},
    "QuotaStatus": {"infos": "rep QuotaInfo", "configs": "rep QuotaConfig"},
    "QuotaInfo": {"role": "opt string", "principal": "opt string", "guarantee": "rep Resource"},
    "QuotaConfig": {"role": "req string", "guarantees": "map Scalar", "limits": "map Scalar"},
    "GetMaintenanceSchedule": {"schedule": "req Schedule"},
    "Schedule": {"windows": "rep Window"},
    "Window": {"machine_ids": "rep MachineID", "unavailability": "req Unavailability"},
    "MachineID": {"hostname": "opt string", "ip": "opt string"},
    "Unavailability": {"start": "req TimeInfo", "duration": "opt DurationInfo"},
    "DurationInfo": {"nanoseconds": "req int64"},
    "GetMaintenanceStatus": {"status": "req ClusterStatus"},
    "ClusterStatus": {"draining_machines": "rep DrainingMachine",
                      "down_machines": "rep MachineID"},
    "DrainingMachine": {"id": "req MachineID", "statuses": "rep InverseOfferStatus"},
    "InverseOfferStatus": {"status": "req enum:InverseOfferStatus.Status",
                           "framework_id": "req ID", "timestamp": "req TimeInfo"},
    "DrainInfo": {"state": "req enum:DrainState", "config": "req DrainConfig"},
    "DrainConfig": {"max_grace_period": "opt DurationInfo", "mark_gone": "opt bool"},
    "ReservationInfo": {"type": "opt enum:ReservationInfo.Type", "role": "opt string",
                        "principal": "opt string", "labels": "opt Labels",
                        "resource_provider_id": "opt ID"},
    "GetHealth": {"healthy": "req bool"},
    "GetVersion": {"version_info": "req VersionInfo"},
    "VersionInfo": {
        "version": "req string",
        "build_date": "opt string",
        "build_time": "opt double",
        "build_user": "opt string",
        "git_sha": "opt string",
        "git_branch": "opt string",
        "git_tag": "opt string",
    },
    "GetState": {
        "get_tasks": "opt GetTasks",
        "get_executors": "opt GetExecutors",
        "get_frameworks": "opt GetFrameworks",
        "get_agents": "opt GetAgents",
    },
    "GetAgents": {"agents": "rep Agent", "recovered_agents": "rep AgentInfo"},
    "Agent": {
        "agent_info": "req AgentInfo",
        "active": "req bool",
        "deactivated": "opt bool",
        "version": "req string",
        "pid": "opt string",
        "registered_time": "opt TimeInfo",
        "reregistered_time": "opt TimeInfo",
        "total_resources": "rep Resource",
        "allocated_resources": "rep Resource",
        "offered_resources": "rep Resource",
        "capabilities": "rep AgentCapability",
        "resource_providers": "rep any",
        "drain_info": "opt DrainInfo",
        "estimated_drain_start_time": "opt TimeInfo",
    },
    "AgentInfo": {
        "hostname": "req string",
        "port": "opt int32",
        "resources": "rep Resource",
        "attributes": "rep Attribute",
        "id": "opt ID",
        "domain": "opt any",
    },
    "AgentCapability": {"type": "opt enum:AgentInfo.Capability.Type"},
    "GetFrameworks": {
        "frameworks": "rep Framework",
        "completed_frameworks": "rep Framework",
        "recovered_frameworks": "rep FrameworkInfo",
    },
    "Framework": {
        "framework_info": "req FrameworkInfo",
        "active": "req bool",
        "connected": "req bool",
        "recovered": "req bool",
        "registered_time": "opt TimeInfo",
        "reregistered_time": "opt TimeInfo",
        "unregistered_time": "opt TimeInfo",
        "offers": "rep Offer",
        "inverse_offers": "rep any",
        "allocated_resources": "rep Resource",
        "offered_resources": "rep Resource",
        "offer_constraints": "opt OfferConstraints",
    },
    "OfferConstraints": {"role_constraints": "map any"},
    "FrameworkInfo": {
        "user": "req string",
        "name": "req string",
        "id": "opt ID",
        "failover_timeout": "opt double",
        "checkpoint": "opt bool",
        "role": "opt string",
        "roles": "rep string",
        "hostname": "opt string",
        "principal": "opt string",
        "webui_url": "opt string",
        "capabilities": "rep FrameworkCapability",
        "labels": "opt Labels",
        "offer_filters": "map any",
    },
    "FrameworkCapability": {"type": "opt enum:FrameworkInfo.Capability.Type"},
    "Offer": {
        "id": "req ID",
        "framework_id": "req ID",
        "agent_id": "req ID",
        "hostname": "req string",
        "url": "opt URL",
        "domain": "opt any",
        "resources": "rep Resource",
        "attributes": "rep Attribute",
        "executor_ids": "rep ID",
        "unavailability": "opt Unavailability",
        "allocation_info": "opt AllocationInfo",
    },
    "URL": {
        "scheme": "req string",
        "address": "req Address",
        "path": "opt string",
        "query": "rep any",
        "fragment": "opt string",
    },
    "Address": {"hostname": "opt string", "ip": "opt string", "port": "req int32"},
    "GetExecutors": {"executors": "rep Executor", "orphan_executors": "rep Executor"},
    "Executor": {"executor_info": "req ExecutorInfo", "agent_id": "req ID"},
    "ExecutorInfo": {
        "type": "opt enum:ExecutorInfo.Type",
        "executor_id": "req ID",
        "framework_id": "opt ID",
        "command": "opt any",
        "container": "opt any",
        "resources": "rep Resource",
        "name": "opt string",
        "source": "opt string",
        "data": "opt bytes",
        "discovery": "opt any",
        "shutdown_grace_period": "opt any",
        "labels": "opt Labels",
    },
    "GetTasks": {
        "pending_tasks": "rep Task",
        "tasks": "rep Task",
        "unreachable_tasks": "rep Task",
        "completed_tasks": "rep Task",
        "orphan_tasks": "rep Task",
    },
    "Task": {
        "name": "req string",
        "task_id": "req ID",
        "framework_id": "req ID",
        "executor_id": "opt ID",
        "agent_id": "req ID",
        "state": "req enum:TaskState",
        "resources": "rep Resource",
        "statuses": "rep TaskStatus",
        "status_update_state": "opt enum:TaskState",
        "status_update_uuid": "opt bytes",
        "labels": "opt Labels",
        "discovery": "opt any",
        "container": "opt any",
        "health_check": "opt any",
        "kill_policy": "opt any",
        "user": "opt string",
        "limits": "map any",
    },
    "TaskStatus": {
        "task_id": "req ID",
        "state": "req enum:TaskState",
        "message": "opt string",
        "source": "opt enum:TaskStatus.Source",
        "reason": "opt string",
        "data": "opt bytes",
        "agent_id": "opt ID",
        "executor_id": "opt ID",
        "timestamp": "opt double",
        "uuid": "opt bytes",
        "healthy": "opt bool",
        "check_status": "opt any",
        "labels": "opt Labels",
        "container_status": "opt any",
        "unreachable_time": "opt TimeInfo",
        "limitation": "opt TaskResourceLimitation",
    },
    "TaskResourceLimitation": {"resources": "rep Resource"},
    "Labels": {"labels": "rep Label"},
    "Label": {"key": "req string", "value": "opt string"},
    "TimeInfo": {"nanoseconds": "req int64"},
    "ID": _ID,
    "Resource": {
        "provider_id": "opt ID",
        "name": "req string",
        "type": "req enum:Value.Type",
        "scalar": "opt Scalar",
        "ranges": "opt Ranges",
        "set": "opt Set",
        "role": "opt string",
        "allocation_info": "opt AllocationInfo",
        "reservation": "opt any",
        "reservations": "rep ReservationInfo",
        "disk": "opt any",
        "revocable": "opt any",
        "shared": "opt any",
    },
    "AllocationInfo": {"role": "opt string"},
    "Scalar": {"value": "req double"},
    "Ranges": {"range": "rep Range"},
    "Range": {"begin": "req uint64", "end": "req uint64"},
    "Set": {"item": "rep string"},
    "Text": {"value": "req string"},
    "Attribute": {
        "name": "req string",
        "type": "req enum:Value.Type",
        "scalar": "opt Scalar",
        "ranges": "opt Ranges",
        "set": "opt Set",
        "text": "opt Text",
    },
}


def _value(kind: str, value: Any, where: str) -> list[str]:
    if kind == "string":
        ok = isinstance(value, str)
    elif kind == "bytes":
        ok = isinstance(value, str)  # base64 in JSON
    elif kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "double":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif kind in ("int32", "int64", "uint32", "uint64"):
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and kind.startswith("u") and value < 0:
            return [f"{where}: negative {kind} {value}"]
    elif kind.startswith("enum:"):
        if value not in ENUMS[kind[5:]]:
            return [f"{where}: {value!r} is not a {kind[5:]}"]
        return []
    elif kind == "any":
        ok = isinstance(value, dict)
    else:
        return check(kind, value, where)
    return [] if ok else [f"{where}: {value!r} is not a {kind}"]


def check(message: str, value: Any, where: str = "") -> list[str]:
    """Every way ``value`` fails to be the JSON form of ``message``; empty when it fits."""
    where = where or message
    if not isinstance(value, dict):
        return [f"{where}: not an object"]
    schema = MESSAGES[message]
    errors = [f"{where}.{key}: not a field of {message}" for key in value if key not in schema]
    for name, spec in schema.items():
        label, kind = spec.split(" ")
        here = f"{where}.{name}"
        if name not in value:
            if label == "req":
                errors.append(f"{here}: required field missing")
            continue
        item = value[name]
        if label == "rep":
            if not isinstance(item, list):
                errors.append(f"{here}: not a list")
                continue
            for index, element in enumerate(item):
                errors.extend(_value(kind, element, f"{here}[{index}]"))
        elif label == "map":
            if not isinstance(item, dict):
                errors.append(f"{here}: not an object")
                continue
            for key, element in item.items():
                errors.extend(_value(kind, element, f"{here}[{key!r}]"))
        else:
            errors.extend(_value(kind, item, here))
    return errors
