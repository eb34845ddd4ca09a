"""The operator API's read responses in the JSON shapes of Mesos' ``v1/master/master.proto``.

Each builder returns the body of one ``Response`` sub-message (``GetAgents``, ``GetFrameworks``,
``GetExecutors``, ``GetTasks``, ``GetState``) as Mesos 1.11 serializes it
(apache/mesos ``src/master/readonly_handler.cpp``, ``jsonifyGet*``):

* the top-level lists of each answer (``agents``, ``recovered_agents``, ``frameworks``,
  ``completed_frameworks``, ``executors``, ``tasks``, ``unreachable_tasks``,
  ``completed_tasks``) are always written, empty or not;
* inside a message, empty repeated fields are left out and unset optional fields too (stout's
  protobuf-to-JSON), while optional fields with a default are written (``port``,
  ``failover_timeout``, ``checkpoint``);
* resources are ``Resource`` lists: agent and framework totals in the endpoint format
  (``role: "*"``), allocated and offered ones with ``allocation_info``; times are
  ``TimeInfo`` (``{"nanoseconds": N}``).

Builders take a consistent snapshot under the master's lock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from disauto.common.resources import RoleResources
from disauto.localmesos.master.records import AGENT_CAPABILITIES
from disauto.localmesos.master.records import MESOS_VERSION


if TYPE_CHECKING:
    from disauto.localmesos.master.master import Master
    from disauto.localmesos.master.records import AgentRecord
    from disauto.localmesos.master.records import FrameworkRecord
    from disauto.localmesos.master.records import TaskRecord


ByRole = dict[str, RoleResources]


def time_info(seconds: float) -> dict[str, int]:
    """A ``TimeInfo``: whole nanoseconds since the epoch."""
    return {"nanoseconds": int(round(seconds * 1e9))}


def allocated(by_role: ByRole) -> list[dict[str, Any]]:
    """Resources per role as a ``Resource`` list with ``allocation_info`` (endpoint format)."""
    out: list[dict[str, Any]] = []
    for role in sorted(by_role):
        out += by_role[role].to_json(format="endpoint", allocation_role=role)
    return out


def _add(by_role: ByRole, role: str, resources: RoleResources) -> None:
    by_role[role] = by_role.get(role, RoleResources()) + resources


def _set(message: dict[str, Any], key: str, items: list[Any]) -> None:
    """Write a repeated field only when it has members (stout leaves empty ones out)."""
    if items:
        message[key] = items


# -- tasks and executors ----------------------------------------------------------------------


def task_v1(task: TaskRecord) -> dict[str, Any]:
    """A ``Task`` message."""
    info = task.info
    out: dict[str, Any] = {
        "name": info.get("name", ""),
        "task_id": {"value": task.task_id},
        "framework_id": {"value": task.framework_id},
    }
    if task.executor_id:
        out["executor_id"] = {"value": task.executor_id}
    out["agent_id"] = {"value": task.agent_id}
    out["state"] = task.state
    _set(out, "resources", allocated({task.role: task.resources}))
    _set(out, "statuses", [{k: v for k, v in s.items() if k != "data"} for s in task.statuses])
    if task.status_update_state is not None:
        out["status_update_state"] = task.status_update_state
    for key in ("labels", "discovery", "container", "health_check", "kill_policy"):
        if key in info:
            out[key] = info[key]
    command = info.get("command") or {}
    if "user" in command:
        out["user"] = command["user"]
    return out


def _frameworks(master: Master) -> list[FrameworkRecord]:
    return list(master.frameworks.values()) + list(master.completed_frameworks)


def get_tasks(master: Master) -> dict[str, Any]:
    """``Response.GetTasks`` over active and completed frameworks."""
    with master.lock:
        frameworks = _frameworks(master)
        return {
            "tasks": [task_v1(t) for fw in frameworks for t in fw.tasks.values()],
            "unreachable_tasks": [task_v1(t) for fw in frameworks
                                  for t in fw.unreachable_tasks.values()],
            "completed_tasks": [task_v1(t) for fw in frameworks for t in fw.completed_tasks],
        }


def get_executors(master: Master) -> dict[str, Any]:
    """``Response.GetExecutors``: each executor with the agent it runs on."""
    with master.lock:
        return {
            "executors": [
                {"executor_info": dict(e.info), "agent_id": {"value": e.agent_id}}
                for fw in _frameworks(master)
                for e in fw.executors.values()
            ]
        }


# -- frameworks -------------------------------------------------------------------------------


def _framework_usage(fw: FrameworkRecord) -> tuple[ByRole, ByRole]:
    used: ByRole = {}
    offered: ByRole = {}
    for task in fw.tasks.values():
        if not task.recovered:
            _add(used, task.role, task.resources)
    for executor in fw.executors.values():
        _add(used, executor.role, executor.resources)
    for offer in fw.offers.values():
        _add(offered, offer.role, offer.resources)
    return used, offered


def framework_v1(fw: FrameworkRecord, *, completed: bool) -> dict[str, Any]:
    """A ``Response.GetFrameworks.Framework`` (Mesos ``model(const Framework&)``)."""
    info = dict(fw.info)
    info.setdefault("id", {"value": fw.framework_id})
    info.setdefault("failover_timeout", 0.0)
    info.setdefault("checkpoint", False)
    connected = fw.connected and not completed
    out: dict[str, Any] = {
        "framework_info": info,
        "active": connected,
        "connected": connected,
        "recovered": False,
    }
    if fw.registered_time:
        out["registered_time"] = time_info(fw.registered_time)
    if fw.reregistered_time:
        out["reregistered_time"] = time_info(fw.reregistered_time)
    if fw.unregistered_time:
        out["unregistered_time"] = time_info(fw.unregistered_time)
    used, offered = _framework_usage(fw)
    _set(out, "offers", [o.json for o in fw.offers.values()])
    _set(out, "allocated_resources", allocated(used))
    _set(out, "offered_resources", allocated(offered))
    out["offer_constraints"] = {}
    return out


def get_frameworks(master: Master) -> dict[str, Any]:
    """``Response.GetFrameworks``: connected and disconnected first, then completed ones."""
    with master.lock:
        return {
            "frameworks": [framework_v1(f, completed=False) for f in master.frameworks.values()],
            "completed_frameworks": [
                framework_v1(f, completed=True) for f in master.completed_frameworks
            ],
        }


# -- agents -----------------------------------------------------------------------------------


def _agent_usage(master: Master) -> tuple[dict[str, ByRole], dict[str, ByRole]]:
    used: dict[str, ByRole] = {a: {} for a in master.agents}
    offered: dict[str, ByRole] = {a: {} for a in master.agents}
    for fw in master.frameworks.values():
        for task in fw.tasks.values():
            if not task.recovered and task.agent_id in used:
                _add(used[task.agent_id], task.role, task.resources)
        for executor in fw.executors.values():
            if executor.agent_id in used:
                _add(used[executor.agent_id], executor.role, executor.resources)
        for offer in fw.offers.values():
            if offer.agent_id in offered:
                _add(offered[offer.agent_id], offer.role, offer.resources)
    return used, offered


def agent_v1(
    master: Master, record: AgentRecord, used: ByRole, offered: ByRole
) -> dict[str, Any]:
    """A ``Response.GetAgents.Agent`` (Mesos ``createAgentResponse``)."""
    info = dict(record.info)
    info.setdefault("port", 5051)
    out: dict[str, Any] = {
        "agent_info": info,
        "active": record.active,
        "deactivated": record.agent_id in master.deactivated,
        "version": MESOS_VERSION,
        "pid": master.agent_pid(record),
        "registered_time": time_info(record.registered_time),
    }
    if record.reregistered_time is not None:
        out["reregistered_time"] = time_info(record.reregistered_time)
    _set(out, "total_resources", record.total.to_json(format="endpoint"))
    _set(out, "allocated_resources", allocated(used))
    _set(out, "offered_resources", allocated(offered))
    out["capabilities"] = [{"type": c} for c in AGENT_CAPABILITIES]
    drain = master.draining.get(record.agent_id)
    if drain is not None:
        out["drain_info"] = drain
        if record.drain_started is not None:
            out["estimated_drain_start_time"] = time_info(record.drain_started)
    return out


def get_agents(master: Master) -> dict[str, Any]:
    """``Response.GetAgents``: every registered agent (none is ever only recovered here)."""
    with master.lock:
        used, offered = _agent_usage(master)
        return {
            "agents": [
                agent_v1(master, record, used[agent_id], offered[agent_id])
                for agent_id, record in master.agents.items()
            ],
            "recovered_agents": [],
        }


def get_state(master: Master) -> dict[str, Any]:
    """``Response.GetState``: the four answers above from one snapshot."""
    with master.lock:  # re-entrant: the four parts see the same master state
        return {
            "get_tasks": get_tasks(master),
            "get_executors": get_executors(master),
            "get_frameworks": get_frameworks(master),
            "get_agents": get_agents(master),
        }

