"""What a Mesos 1.11 master sends a MULTI_ROLE, RESERVATION_REFINEMENT, PARTITION_AWARE
framework, written as it writes it (v1 JSON, as pymesos hands it to the scheduler's callbacks):
offers with ``allocation_info`` on the offer and on each resource and ``reservations`` stacks
(apache/mesos ``src/master/master.cpp`` ``Master::offer``, ``include/mesos/v1/mesos.proto``
Resource Format), an agent's ``unavailability``, inverse offers, and task statuses with their
``reason``, ``source`` and ``unreachable_time`` (``protobuf::createStatusUpdate``).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import time
from typing import Any
import uuid


FRAMEWORK_ID = "F-1"
NANOS = 1_000_000_000


def static(role: str) -> list[dict[str, Any]]:
    """A static reservation's stack (an agent's ``--resources 'gpus(ml):2'``)."""
    return [{"type": "STATIC", "role": role}]


def dynamic(role: str, principal: str = "ops") -> list[dict[str, Any]]:
    """A dynamic reservation's stack (RESERVE by an operator), labels and all."""
    return [{"type": "DYNAMIC", "role": role, "principal": principal,
             "labels": {"labels": [{"key": "team", "value": role}]}}]


def scalar(name: str, value: float, role: str, reservations: Sequence[Mapping[str, Any]] = ()
           ) -> dict[str, Any]:
    """A scalar resource of an offer allocated to ``role``."""
    resource: dict[str, Any] = {"name": name, "type": "SCALAR", "scalar": {"value": value},
                                "allocation_info": {"role": role}}
    if reservations:
        resource["reservations"] = [dict(r) for r in reservations]
    return resource


def ports(begin: int, end: int, role: str,
          reservations: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    resource: dict[str, Any] = {"name": "ports", "type": "RANGES",
                                "ranges": {"range": [{"begin": begin, "end": end}]},
                                "allocation_info": {"role": role}}
    if reservations:
        resource["reservations"] = [dict(r) for r in reservations]
    return resource


def offer(offer_id: str, agent: str, role: str, resources: Sequence[Mapping[str, Any]],
          unavailability: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An offer of ``agent`` allocated to ``role``."""
    made: dict[str, Any] = {
        "id": {"value": offer_id}, "framework_id": {"value": FRAMEWORK_ID},
        "agent_id": {"value": agent}, "hostname": f"host-{agent}",
        "url": {"scheme": "http", "address": {"hostname": f"host-{agent}", "ip": "10.0.0.9",
                                              "port": 5051}, "path": "/slave(1)"},
        "allocation_info": {"role": role},
        "resources": [dict(r) for r in resources],
    }
    if unavailability is not None:
        made["unavailability"] = dict(unavailability)
    return made


def unreserved(role: str, cpus: float = 4.0, mem: float = 4096.0,
               port_range: tuple[int, int] = (31000, 31010)) -> list[dict[str, Any]]:
    """An agent's unreserved cpus, mem and ports, offered to ``role``."""
    return [scalar("cpus", cpus, role), scalar("mem", mem, role),
            ports(*port_range, role)]


def unavailability(start: float, duration: float | None = None) -> dict[str, Any]:
    """An ``Unavailability`` (start, optional duration) from seconds since the epoch."""
    made: dict[str, Any] = {"start": {"nanoseconds": int(start * NANOS)}}
    if duration is not None:
        made["duration"] = {"nanoseconds": int(duration * NANOS)}
    return made


def inverse_offer(offer_id: str, agent: str, start: float,
                  duration: float | None = None) -> dict[str, Any]:
    """An inverse offer for ``agent``'s resources, scheduled for maintenance at ``start``."""
    return {"id": {"value": offer_id}, "framework_id": {"value": FRAMEWORK_ID},
            "agent_id": {"value": agent},
            "url": {"scheme": "http", "address": {"hostname": f"host-{agent}",
                                                  "ip": "10.0.0.9", "port": 5051},
                    "path": "/slave(1)"},
            "unavailability": unavailability(start, duration), "resources": []}


def status(task_id: str, state: str, agent: str, *, reason: str = "", message: str = "",
           source: str = "SOURCE_EXECUTOR", executor: str = "",
           unreachable_at: float | None = None, reliable: bool = True,
           limitation: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """A TaskStatus; ``reliable`` ones (from an agent) carry a uuid to acknowledge, the
    master's reconciliation answers none."""
    made: dict[str, Any] = {"task_id": {"value": task_id}, "state": state, "source": source,
                            "agent_id": {"value": agent}, "timestamp": time.time()}
    if reason:
        made["reason"] = reason
    if message:
        made["message"] = message
    if executor:
        made["executor_id"] = {"value": executor}
    if unreachable_at is not None:
        made["unreachable_time"] = {"nanoseconds": int(unreachable_at * NANOS)}
    if limitation:
        made["limitation"] = {"resources": [dict(r) for r in limitation]}
    if reliable:
        made["uuid"] = uuid.uuid4().hex
    return made


def unreachable(task_id: str, agent: str, since: float) -> dict[str, Any]:
    """The master's TASK_UNREACHABLE of a task on an agent it marked unreachable
    (``Master::__removeSlave``: REASON_AGENT_REMOVED, with ``unreachable_time``; the master
    makes it without a uuid: nothing to acknowledge)."""
    return status(task_id, "TASK_UNREACHABLE", agent, reason="REASON_AGENT_REMOVED",
                  message="Agent host-" + agent + " is unreachable: health check timed out",
                  source="SOURCE_MASTER", unreachable_at=since, reliable=False)


def reconciled_unreachable(task_id: str, agent: str, since: float) -> dict[str, Any]:
    """The answer to reconciling a task whose agent is still unreachable (``reconcile``'s
    case 4: no uuid, REASON_RECONCILIATION)."""
    return status(task_id, "TASK_UNREACHABLE", agent, reason="REASON_RECONCILIATION",
                  message="Reconciliation: Task is unreachable", source="SOURCE_MASTER",
                  unreachable_at=since, reliable=False)


def back(task_id: str, agent: str, state: str = "TASK_RUNNING") -> dict[str, Any]:
    """The master's update when an unreachable agent re-registers with the task
    (``Master::__reregisterSlave``: the agent's state, REASON_AGENT_REREGISTERED, no uuid)."""
    return status(task_id, state, agent, reason="REASON_AGENT_REREGISTERED",
                  message="Unreachable agent re-reregistered", source="SOURCE_MASTER",
                  reliable=False)
