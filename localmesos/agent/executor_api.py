"""The v1 executor HTTP API of the embedded agents: calls, their validation, and events.

What a Mesos 1.11 agent does at ``/api/v1/executor`` (apache/mesos ``src/slave/http.cpp``
``Http::executor``, ``src/common/validation.cpp`` ``validateExecutorCall``,
``include/mesos/v1/executor/executor.proto``), in the order it checks:

1. ``POST`` only (405); ``Content-Type`` present (400 ``Expecting 'Content-Type' to be
   present``) and JSON (415; this agent speaks no protobuf).
2. The body parses as JSON (400 ``Failed to parse body into JSON: ...``) and converts into a
   ``mesos.v1.executor.Call`` (400 ``Failed to convert JSON into Call protobuf: ...``;
   ``executor_id`` and ``framework_id`` are required fields).
3. ``validateExecutorCall`` (400 ``Failed to validate Executor::Call: ...``): ``type``
   present; ``subscribe``/``update``/``message`` present for their type; an UPDATE's status
   has a 16-byte ``uuid``, the call's ``executor_id`` if any, ``source`` SOURCE_EXECUTOR and a
   state other than TASK_STAGING.
4. SUBSCRIBE needs an ``Accept`` that allows JSON (406); HEARTBEAT is answered 202 at once.
5. The framework must be known to the agent (400 ``Framework cannot be found``), the executor
   to the framework (400 ``Executor cannot be found``), and a call other than SUBSCRIBE needs a
   subscribed executor (403 ``Executor is not subscribed``). UNKNOWN is 501.

Events (``mesos.v1.executor.Event``) are written as RecordIO on the SUBSCRIBE response, as on
the scheduler stream, but with no ``Mesos-Stream-Id`` (Mesos sends none to executors).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import Protocol
from typing import TypeVar

from disauto.localmesos.protocol import protojson
from disauto.localmesos.protocol.protojson import CallError
from disauto.localmesos.protocol.validation import valid_uuid


#: ``mesos.v1.executor.Call.Type``.
CALL_TYPES = {0: "UNKNOWN", 1: "SUBSCRIBE", 2: "UPDATE", 3: "MESSAGE", 4: "HEARTBEAT"}
#: ``mesos.v1.executor.Event.Type``.
EVENT_TYPES = {
    0: "UNKNOWN", 1: "SUBSCRIBED", 2: "LAUNCH", 8: "LAUNCH_GROUP", 3: "KILL",
    4: "ACKNOWLEDGED", 5: "MESSAGE", 6: "ERROR", 7: "SHUTDOWN", 9: "HEARTBEAT",
}  # fmt: skip
#: ``mesos.v1.TaskState``.
TASK_STATES = {
    6: "TASK_STAGING", 0: "TASK_STARTING", 1: "TASK_RUNNING", 8: "TASK_KILLING",
    2: "TASK_FINISHED", 3: "TASK_FAILED", 4: "TASK_KILLED", 7: "TASK_ERROR", 5: "TASK_LOST",
    9: "TASK_DROPPED", 10: "TASK_UNREACHABLE", 11: "TASK_GONE", 12: "TASK_GONE_BY_OPERATOR",
    13: "TASK_UNKNOWN",
}  # fmt: skip
#: ``mesos.v1.TaskStatus.Source``.
SOURCES = {0: "SOURCE_MASTER", 1: "SOURCE_AGENT", 2: "SOURCE_EXECUTOR"}
#: ``mesos.v1.TaskStatus.Reason``.
REASONS = {
    0: "REASON_COMMAND_EXECUTOR_FAILED", 21: "REASON_CONTAINER_LAUNCH_FAILED",
    19: "REASON_CONTAINER_LIMITATION", 20: "REASON_CONTAINER_LIMITATION_DISK",
    8: "REASON_CONTAINER_LIMITATION_MEMORY", 17: "REASON_CONTAINER_PREEMPTED",
    22: "REASON_CONTAINER_UPDATE_FAILED", 33: "REASON_MAX_COMPLETION_TIME_REACHED",
    23: "REASON_EXECUTOR_REGISTRATION_TIMEOUT", 24: "REASON_EXECUTOR_REREGISTRATION_TIMEOUT",
    1: "REASON_EXECUTOR_TERMINATED", 2: "REASON_EXECUTOR_UNREGISTERED",
    3: "REASON_FRAMEWORK_REMOVED", 4: "REASON_GC_ERROR", 5: "REASON_INVALID_FRAMEWORKID",
    6: "REASON_INVALID_OFFERS", 27: "REASON_IO_SWITCHBOARD_EXITED",
    7: "REASON_MASTER_DISCONNECTED", 9: "REASON_RECONCILIATION", 18: "REASON_RESOURCES_UNKNOWN",
    10: "REASON_AGENT_DISCONNECTED", 34: "REASON_AGENT_DRAINING", 11: "REASON_AGENT_REMOVED",
    31: "REASON_AGENT_REMOVED_BY_OPERATOR", 32: "REASON_AGENT_REREGISTERED",
    12: "REASON_AGENT_RESTARTED", 13: "REASON_AGENT_UNKNOWN",
    30: "REASON_TASK_KILLED_DURING_LAUNCH", 28: "REASON_TASK_CHECK_STATUS_UPDATED",
    29: "REASON_TASK_HEALTH_CHECK_STATUS_UPDATED", 25: "REASON_TASK_GROUP_INVALID",
    26: "REASON_TASK_GROUP_UNAUTHORIZED", 14: "REASON_TASK_INVALID",
    15: "REASON_TASK_UNAUTHORIZED", 16: "REASON_TASK_UNKNOWN",
}  # fmt: skip

# The executor API's messages, in the schema language of :mod:`localmesos.protocol.protojson`
# (``ExecutorCall`` is ``mesos.v1.executor.Call``; TaskInfo, Labels... are shared).
_MESSAGES = {
    "ExecutorCall": {
        "executor_id": "msg:ID!",
        "framework_id": "msg:ID!",
        "type": "enum:ExecutorCall.Type",
        "subscribe": "msg:ExecutorCall.Subscribe",
        "update": "msg:ExecutorCall.Update",
        "message": "msg:ExecutorCall.Message",
    },
    "ExecutorCall.Subscribe": {
        "unacknowledged_tasks": "[msg:TaskInfo]",
        "unacknowledged_updates": "[msg:ExecutorCall.Update]",
    },
    "ExecutorCall.Update": {"status": "msg:TaskStatus!"},
    "ExecutorCall.Message": {"data": "bytes!"},
    "TaskStatus": {
        "task_id": "msg:ID!",
        "state": "enum:TaskState!",
        "message": "string",
        "source": "enum:TaskStatus.Source",
        "reason": "enum:TaskStatus.Reason",
        "data": "bytes",
        "agent_id": "msg:ID",
        "executor_id": "msg:ID",
        "timestamp": "double",
        "uuid": "bytes",
        "healthy": "bool",
        "check_status": "any",
        "labels": "msg:Labels",
        "container_status": "any",
        "unreachable_time": "msg:TimeInfo",
        "limitation": "msg:TaskResourceLimitation",
    },
    # Checked as Mesos parses them (an executor's fields reach the framework as sent): the
    # fuzz test found a TimeInfo without nanoseconds and a limitation of unknown fields
    # forwarded in an UPDATE.
    "TimeInfo": {"nanoseconds": "int64!"},
    "TaskResourceLimitation": {"resources": "[msg:Resource]"},
}
protojson.add_messages(
    _MESSAGES,
    {
        "ExecutorCall.Type": CALL_TYPES,
        "TaskState": TASK_STATES,
        "TaskStatus.Source": SOURCES,
        "TaskStatus.Reason": REASONS,
    },
)

_SUB_MESSAGE = {"SUBSCRIBE": "subscribe", "UPDATE": "update", "MESSAGE": "message"}


def validate_call(call: Mapping[str, Any]) -> str | None:
    """Mesos ``validateExecutorCall`` on a converted call; the error, or ``None``."""
    kind = call.get("type")
    if kind is None:
        return "Expecting 'type' to be present"
    sub = _SUB_MESSAGE.get(kind)
    if sub is not None and sub not in call:
        return f"Expecting '{sub}' to be present"
    if kind != "UPDATE":
        return None
    status = call["update"]["status"]
    executor_id = call["executor_id"]["value"]
    framework_id = call["framework_id"]["value"]
    if "uuid" not in status:
        return "Expecting 'uuid' to be present"
    if not valid_uuid(status["uuid"]):
        return "Not a valid UUID"
    if "executor_id" in status and status["executor_id"]["value"] != executor_id:
        return (
            f"ExecutorID in Call: {executor_id} does not match ExecutorID in TaskStatus: "
            f"{status['executor_id']['value']}"
        )
    # An unset source reads as its default, SOURCE_MASTER.
    if status.get("source", "SOURCE_MASTER") != "SOURCE_EXECUTOR":
        return (
            f"Received Call from executor {executor_id} of framework {framework_id} with "
            "invalid source, expecting 'SOURCE_EXECUTOR'"
        )
    if status["state"] == "TASK_STAGING":
        return (
            f"Received TASK_STAGING from executor {executor_id} of framework {framework_id} "
            "which is not allowed"
        )
    return None


def parse_call(body: bytes) -> dict[str, Any]:
    """Decode, convert and validate one executor call body (``application/json``).

    Returns:
        The normalized call.

    Raises:
        CallError: (400) with Mesos' message for the first stage that fails.
    """
    value = protojson.decode_json(body)
    try:
        call = protojson.convert("ExecutorCall", value)
    except ValueError as exc:
        raise CallError(f"Failed to convert JSON into Call protobuf: {exc}") from None
    error = validate_call(call)
    if error is not None:
        raise CallError(f"Failed to validate Executor::Call: {error}")
    return call


class ExecutorAgent(Protocol):
    """What the executor API needs of an agent (:class:`localmesos.agent.agent.Agent`)."""

    @property
    def recovering(self) -> bool: ...

    def knows_executor(self, framework_id: str, executor_id: str) -> bool: ...

    def knows_framework(self, framework_id: str) -> bool: ...


A = TypeVar("A", bound=ExecutorAgent)


def find_agent(
    agents: Sequence[A], index: int | None, call: Mapping[str, Any]
) -> A | tuple[int, str]:
    """The agent a validated call is for, or the ``(status, message)`` refusing it.

    ``/slave(N)/api/v1/executor`` names the agent (``index`` N). ``/api/v1/executor`` (what
    ``MESOS_AGENT_ENDPOINT`` leads to: every agent is on the master's port) is the agent that
    runs the call's executor; when several agents run an executor of that id for the framework,
    the call must name its agent.
    """
    framework_id = call["framework_id"]["value"]
    executor_id = call["executor_id"]["value"]
    if index is not None:
        return agents[index - 1]
    hosts = [agent for agent in agents if agent.knows_executor(framework_id, executor_id)]
    if len(hosts) == 1:
        return hosts[0]
    if hosts:
        return 400, (
            f"Executor '{executor_id}' of framework {framework_id} runs on {len(hosts)} agents "
            "of this cluster: call /slave(N)/api/v1/executor (MESOS_SLAVE_PID names it)"
        )
    if any(agent.recovering for agent in agents):
        return 503, "Agent has not finished recovery"  # its executors are not known yet
    if any(agent.knows_framework(framework_id) for agent in agents):
        return 400, "Executor cannot be found"
    return 400, "Framework cannot be found"


# -- events -----------------------------------------------------------------------------------


def subscribed(
    executor_info: Mapping[str, Any],
    framework_info: Mapping[str, Any],
    agent_info: Mapping[str, Any],
    container_id: str,
) -> dict[str, Any]:
    """SUBSCRIBED: what the executor runs as, for whom and where."""
    return {
        "type": "SUBSCRIBED",
        "subscribed": {
            "executor_info": dict(executor_info),
            "framework_info": dict(framework_info),
            "agent_info": dict(agent_info),
            "container_id": {"value": container_id},
        },
    }


def launch(task: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "LAUNCH", "launch": {"task": dict(task)}}


def kill(task_id: str, grace_period: float | None) -> dict[str, Any]:
    """KILL, with the scheduler's ``kill_policy`` when its KILL call had one."""
    body: dict[str, Any] = {"task_id": {"value": task_id}}
    if grace_period is not None:
        body["kill_policy"] = {"grace_period": {"nanoseconds": round(grace_period * 1e9)}}
    return {"type": "KILL", "kill": body}


def acknowledged(task_id: str, uuid_b64: str) -> dict[str, Any]:
    return {"type": "ACKNOWLEDGED", "acknowledged": {"task_id": {"value": task_id},
                                                     "uuid": uuid_b64}}


def message(data_b64: str) -> dict[str, Any]:
    return {"type": "MESSAGE", "message": {"data": data_b64}}


SHUTDOWN: dict[str, Any] = {"type": "SHUTDOWN"}


def wait_status(returncode: int | None) -> int:
    """The ``waitpid`` status Mesos reports in FAILURE (``ExitedExecutorMessage.status``) for a
    Python return code: ``exit(n)`` is ``n << 8``, death by signal ``s`` is ``s``, and an
    executor that never ran (``None``) is ``-1``, Mesos' "unknown"."""
    if returncode is None:
        return -1
    if returncode < 0:
        return -returncode
    return (returncode & 0xFF) << 8
