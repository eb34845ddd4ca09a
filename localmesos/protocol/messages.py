"""The messages of ``mesos.proto`` that the embedded master and agents read, in the schema
language of :mod:`localmesos.protocol.protojson` (apache/mesos ``include/mesos/v1/mesos.proto``).

The scheduler API's calls (``scheduler.proto``) are added by :mod:`localmesos.master.validation`,
the executor API's (``executor.proto``) by :mod:`localmesos.agent.executor_api`; both read the
messages below (``TaskInfo``, ``Labels``...). This module is data, and imports nothing of
localmesos: :mod:`~localmesos.protocol.protojson` registers it when it is imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


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
#: Enum name -> number -> value name.
ENUMS: dict[str, dict[int, str]] = {
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
}
#: Message name -> field name -> spec (see :data:`localmesos.protocol.protojson.FieldSpec`).
MESSAGES: dict[str, dict[str, str | tuple[str, Any]]] = {
    "ID": {"value": "string!"},
    "Request": {"agent_id": "msg:ID", "resources": "[msg:Resource]"},
    "FrameworkInfo": {
        "user": "string!",
        "name": "string!",
        "id": "msg:ID",
        "failover_timeout": ("double", 0.0),
        "checkpoint": ("bool", False),
        "role": "string",
        "roles": "[string]",
        "hostname": "string",
        "principal": "string",
        "webui_url": "string",
        "capabilities": "[msg:FrameworkInfo.Capability]",
        "labels": "msg:Labels",
        "offer_filters": "any",
    },
    "FrameworkInfo.Capability": {"type": "enum:FrameworkInfo.Capability.Type"},
    "Labels": {"labels": "[msg:Label]"},
    "Label": {"key": "string!", "value": "string"},
    "Filters": {"refuse_seconds": ("double", 5.0)},
    "KillPolicy": {"grace_period": "msg:DurationInfo"},
    "DurationInfo": {"nanoseconds": "int64!"},
    "Offer.Operation": {
        "type": "enum:Offer.Operation.Type",
        "id": "msg:ID",
        "launch": "msg:Offer.Operation.Launch",
        "launch_group": "msg:Offer.Operation.LaunchGroup",
        "reserve": "any",
        "unreserve": "any",
        "create": "any",
        "destroy": "any",
        "grow_volume": "any",
        "shrink_volume": "any",
        "create_disk": "any",
        "destroy_disk": "any",
    },
    "Offer.Operation.Launch": {"task_infos": "[msg:TaskInfo]"},
    "Offer.Operation.LaunchGroup": {
        "executor": "msg:ExecutorInfo!",
        "task_group": "msg:TaskGroupInfo!",
    },
    "TaskGroupInfo": {"tasks": "[msg:TaskInfo]"},
    "TaskInfo": {
        "name": "string!",
        "task_id": "msg:ID!",
        "agent_id": "msg:ID!",
        "resources": "[msg:Resource]",
        "executor": "msg:ExecutorInfo",
        "command": "msg:CommandInfo",
        "container": "msg:ContainerInfo",
        "health_check": "any",
        "check": "any",
        "kill_policy": "msg:KillPolicy",
        "data": "bytes",
        "labels": "msg:Labels",
        "discovery": "any",
        "max_completion_time": "msg:DurationInfo",
        "limits": "any",
    },
    "Resource": {
        "provider_id": "msg:ID",  # ResourceProviderID: {value}
        "name": "string!",
        "type": "enum:Value.Type!",
        "scalar": "msg:Value.Scalar",
        "ranges": "msg:Value.Ranges",
        "set": "msg:Value.Set",
        "role": "string",
        "allocation_info": "msg:Resource.AllocationInfo",
        "reservation": "any",
        "reservations": "[any]",
        "disk": "any",
        "revocable": "any",
        "shared": "any",
    },
    "Resource.AllocationInfo": {"role": "string"},
    "Value.Scalar": {"value": "double!"},
    "Value.Ranges": {"range": "[msg:Value.Range]"},
    "Value.Range": {"begin": "uint64!", "end": "uint64!"},
    "Value.Set": {"item": "[string]"},
    "CommandInfo": {
        "uris": "[msg:CommandInfo.URI]",
        "environment": "msg:Environment",
        "shell": ("bool", True),
        "value": "string",
        "arguments": "[string]",
        "user": "string",
    },
    "CommandInfo.URI": {
        "value": "string!",
        "executable": "bool",
        "extract": ("bool", True),
        "cache": "bool",
        "output_file": "string",
    },
    "Environment": {"variables": "[msg:Environment.Variable]"},
    "Environment.Variable": {
        "name": "string!",
        "type": ("enum:Environment.Variable.Type", "VALUE"),
        "value": "string",
        "secret": "any",
    },
    "ExecutorInfo": {
        "type": "enum:ExecutorInfo.Type",
        "executor_id": "msg:ID!",
        "framework_id": "msg:ID",
        "command": "msg:CommandInfo",
        "container": "msg:ContainerInfo",
        "resources": "[msg:Resource]",
        "name": "string",
        "source": "string",
        "data": "bytes",
        "discovery": "any",
        "shutdown_grace_period": "msg:DurationInfo",
        "labels": "msg:Labels",
    },
    "ContainerInfo": {
        "type": "enum:ContainerInfo.Type!",
        "volumes": "[any]",
        "hostname": "string",
        "docker": "msg:DockerInfo",
        "mesos": "any",
        "network_infos": "[any]",
        "linux_info": "any",
        "rlimit_info": "any",
        "tty_info": "any",
    },
    "DockerInfo": {
        "image": "string!",
        "network": ("enum:DockerInfo.Network", "HOST"),
        "port_mappings": "[any]",
        "privileged": ("bool", False),
        "parameters": "[any]",
        "force_pull_image": "bool",
        "volume_driver": "string",
    },

}


def duration_seconds(duration: Any) -> float | None:
    """A Mesos ``DurationInfo`` (``{"nanoseconds": N}``) in seconds, if well formed."""
    if not isinstance(duration, Mapping) or duration.get("nanoseconds") is None:
        return None
    try:
        return float(duration["nanoseconds"]) / 1e9
    except (TypeError, ValueError):
        return None
