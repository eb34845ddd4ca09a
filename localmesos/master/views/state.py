"""``/master/state`` in the JSON shapes of a Mesos 1.11 master.

The shapes follow apache/mesos ``src/master/readonly_handler.cpp`` (``FullFrameworkWriter``,
``SlaveWriter``, ``json(Task)``, ``json(Offer)``), as summarized
in Mesos' endpoint documentation, so the Mesos web UI and tools written against a real
master read them unchanged. Resources appear in the object form
(``{"cpus": 4, "gpus": 0, "mem": 1024, "disk": 0, "ports": "[31000-32000]"}``).

The builder takes a consistent snapshot under the master's lock and return plain dicts; the
HTTP layer serializes it (with JSONP when asked). Flags: :mod:`~localmesos.master.views.flags`;
metrics: :mod:`~localmesos.master.views.metrics`; the other read-only endpoints:
:mod:`~localmesos.master.views.endpoints`.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any

from disauto.common.resources import RoleResources
from disauto.localmesos.master.records import AGENT_CAPABILITIES
from disauto.localmesos.master.records import MESOS_VERSION
from disauto.localmesos.master.views.flags import format_duration as format_duration
from disauto.localmesos.master.views.flags import master_flags


if TYPE_CHECKING:
    from disauto.localmesos.master.master import Master
    from disauto.localmesos.master.records import AgentRecord
    from disauto.localmesos.master.records import ExecutorRecord
    from disauto.localmesos.master.records import FrameworkRecord
    from disauto.localmesos.master.records import OfferRecord
    from disauto.localmesos.master.records import TaskRecord

#: Mesos 1.11.0 was tagged on this date; the embedded master reports it as its build.
BUILD_DATE = "2020-11-16 00:00:00"
BUILD_TIME = 1605484800.0
BUILD_USER = "localmesos"


def version_json() -> dict[str, Any]:
    """The body of ``GET /version``."""
    return {
        "version": MESOS_VERSION,
        "build_date": BUILD_DATE,
        "build_time": BUILD_TIME,
        "build_user": BUILD_USER,
    }


def _labels(labels: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return list((labels or {}).get("labels", []))


def executor_json(framework_id: str, executor: ExecutorRecord) -> dict[str, Any]:
    """An executor as ``/master/state`` lists it: Mesos' ``model(ExecutorInfo)`` (ids as
    strings, resources in the object form) plus the agent's id as ``slave_id``."""
    info = executor.info
    out: dict[str, Any] = {
        "executor_id": str((info.get("executor_id") or {}).get("value", "")),
        "name": str(info.get("name", "")),
        "framework_id": framework_id,
        "command": dict(info.get("command") or {}),
        "resources": executor.resources.to_state(),
        "slave_id": executor.agent_id,
    }
    if info.get("labels"):
        out["labels"] = _labels(info["labels"])
    return out


def _status_json(status: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"state": status.get("state"), "timestamp": status.get("timestamp")}
    if status.get("labels"):
        out["labels"] = _labels(status["labels"])
    if "container_status" in status:
        out["container_status"] = status["container_status"]
    if "healthy" in status:
        out["healthy"] = status["healthy"]
    return out


def task_json(task: TaskRecord) -> dict[str, Any]:
    """A ``Task`` of ``/master/state`` (``json(JSON::ObjectWriter*, const Task&)``)."""
    info = task.info
    out: dict[str, Any] = {
        "id": task.task_id,
        "name": info.get("name", ""),
        "framework_id": task.framework_id,
        "executor_id": task.executor_id,
        "slave_id": task.agent_id,
        "state": task.state,
        "resources": task.resources.to_state(),
        "role": task.role,
        "statuses": [_status_json(s) for s in task.statuses],
    }
    command = info.get("command") or {}
    if "user" in command:
        out["user"] = command["user"]
    if info.get("labels"):
        out["labels"] = _labels(info["labels"])
    for key in ("discovery", "container", "health_check", "kill_policy"):
        if key in info:
            out[key] = info[key]
    return out


def offer_json(offer: OfferRecord) -> dict[str, Any]:
    """An ``Offer`` of ``/master/state``."""
    return {
        "id": offer.offer_id,
        "framework_id": offer.framework_id,
        "allocation_info": {"role": offer.role},
        "slave_id": offer.agent_id,
        "resources": offer.resources.to_state(),
    }


def _sum(items: Iterable[RoleResources]) -> RoleResources:
    total = RoleResources()
    for item in items:
        total = total + item
    return total


def framework_resources(fw: FrameworkRecord) -> tuple[RoleResources, RoleResources]:
    """(used, offered) resources of a framework."""
    used = _sum(t.resources for t in fw.tasks.values() if not t.recovered)
    used = used + _sum(e.resources for e in fw.executors.values())
    offered = _sum(o.resources for o in fw.offers.values())
    return used, offered


def framework_json(fw: FrameworkRecord, *, completed: bool = False) -> dict[str, Any]:
    """A framework of ``/master/state`` (``FullFrameworkWriter``)."""
    info = fw.info
    used, offered = framework_resources(fw)
    out: dict[str, Any] = {
        "id": fw.framework_id,
        "name": info.get("name", ""),
        "used_resources": used.to_state(),
        "offered_resources": offered.to_state(),
        "capabilities": sorted(fw.capabilities - {""}),
        "hostname": info.get("hostname", ""),
        "webui_url": info.get("webui_url", ""),
        "active": fw.connected and not completed,
        "connected": fw.connected and not completed,
        "recovered": False,
        "user": info.get("user", ""),
        "failover_timeout": float(info.get("failover_timeout", 0.0)),
        "checkpoint": bool(info.get("checkpoint", False)),
        "registered_time": fw.registered_time,
        "unregistered_time": fw.unregistered_time or 0.0,
        "resources": (used + offered).to_state(),
    }
    if "principal" in info:
        out["principal"] = info["principal"]
    if fw.multi_role:
        out["roles"] = list(fw.roles)
    else:
        out["role"] = fw.roles[0] if fw.roles else "*"
    if fw.reregistered_time is not None and fw.reregistered_time != fw.registered_time:
        out["reregistered_time"] = fw.reregistered_time
    out["tasks"] = [task_json(t) for t in fw.tasks.values()]
    out["unreachable_tasks"] = [task_json(t) for t in fw.unreachable_tasks.values()]
    out["completed_tasks"] = [task_json(t) for t in fw.completed_tasks]
    out["offers"] = [offer_json(o) for o in fw.offers.values()]
    out["executors"] = [executor_json(fw.framework_id, e) for e in fw.executors.values()]
    if info.get("labels"):
        out["labels"] = _labels(info["labels"])
    out["offer_constraints"] = fw.offer_constraints
    return out


def agent_json(
    master: Master, record: AgentRecord, used: RoleResources, offered: RoleResources
) -> dict[str, Any]:
    """An agent of ``/master/state`` (``SlaveWriter``)."""
    info = record.info
    attributes: dict[str, Any] = {}
    for attribute in info.get("attributes", []):
        if attribute.get("type") == "SCALAR":
            attributes[attribute["name"]] = attribute["scalar"]["value"]
        elif attribute.get("type") == "TEXT":
            attributes[attribute["name"]] = attribute["text"]["value"]
    hostname = str(info.get("hostname", master.hostname))
    port = int(info.get("port", 5051))
    reserved = {role: record.total.reserved_for(role)
                for role in record.total.reservation_roles}
    out: dict[str, Any] = {
        "id": record.agent_id,
        "pid": master.agent_pid(record),
        "hostname": hostname,
        "port": port,
        "registered_time": record.registered_time,
        "resources": record.total.to_state(),
        "used_resources": used.to_state(),
        "offered_resources": offered.to_state(),
        "reserved_resources": {role: value.to_state() for role, value in reserved.items()},
        "unreserved_resources": record.total.reserved_for("*").to_state(),
        "reserved_resources_full": {
            role: RoleResources({role: value}).to_json(format="endpoint")
            for role, value in reserved.items()},
        "unreserved_resources_full": RoleResources.unreserved(
            record.total.reserved_for("*")).to_json(format="endpoint"),
        "used_resources_full": used.to_json(format="endpoint"),
        "offered_resources_full": offered.to_json(format="endpoint"),
        "attributes": attributes,
        "active": record.active,
        "deactivated": record.agent_id in master.deactivated,
        "version": MESOS_VERSION,
        "capabilities": list(AGENT_CAPABILITIES),
    }
    if record.reregistered_time is not None:
        out["reregistered_time"] = record.reregistered_time
    drain = master.draining.get(record.agent_id)
    if drain is not None:
        out["drain_info"] = drain
        if record.drain_started is not None:
            out["estimated_drain_start_time_seconds"] = record.drain_started
    return out


def agent_usage(master: Master) -> tuple[dict[str, RoleResources], dict[str, RoleResources]]:
    """Under the master's lock: (used, offered) resources per agent."""
    used: dict[str, RoleResources] = {a: RoleResources() for a in master.agents}
    offered: dict[str, RoleResources] = {a: RoleResources() for a in master.agents}
    for fw in master.frameworks.values():
        for task in fw.tasks.values():
            if not task.recovered and task.agent_id in used:
                used[task.agent_id] = used[task.agent_id] + task.resources
        for executor in fw.executors.values():
            if executor.agent_id in used:
                used[executor.agent_id] = used[executor.agent_id] + executor.resources
        for offer in fw.offers.values():
            if offer.agent_id in offered:
                offered[offer.agent_id] = offered[offer.agent_id] + offer.resources
    return used, offered


def _viewable(resource: Mapping[str, Any], may_view: Callable[[str], bool]) -> bool:
    """``approved<VIEW_ROLE>(resource)`` (src/common/http.hpp): its role, every reservation's
    and its allocation role must be viewable."""
    roles = [str(r.get("role")) for r in resource.get("reservations") or []]
    if resource.get("role", "*") != "*":
        roles.append(str(resource["role"]))
    if "allocation_info" in resource:
        roles.append(str(resource["allocation_info"].get("role", "")))
    return all(may_view(role) for role in roles)


def hide_roles(agent: dict[str, Any], may_view: Callable[[str], bool]) -> dict[str, Any]:
    """An agent of ``/master/state`` as a reader who may view only some roles sees it
    (``SlaveWriter``, ``SlavesWriter::writeSlave``): the reservations of the other roles are
    left out of ``reserved_resources(_full)``, and their resources out of the ``*_full`` lists;
    ``resources`` and ``used_resources`` stay whole, as in Mesos."""
    out = dict(agent)
    out["reserved_resources"] = {role: value for role, value in agent[
        "reserved_resources"].items() if may_view(role)}
    out["reserved_resources_full"] = {
        role: [r for r in value if _viewable(r, may_view)]
        for role, value in agent["reserved_resources_full"].items() if may_view(role)}
    for key in ("unreserved_resources_full", "used_resources_full", "offered_resources_full"):
        out[key] = [r for r in agent[key] if _viewable(r, may_view)]
    return out


def master_state(master: Master,
                 may_view: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """The body of ``/master/state``; with ``may_view``, its agents as :func:`hide_roles`
    shows them to a reader who may view only the roles it allows."""
    with master.lock:
        used, offered = agent_usage(master)
        leader_info = master.master_info()
        return {
            **version_json(),
            "start_time": master.start_time,
            "elected_time": master.start_time,
            "id": master.master_id,
            "pid": master.pid,
            "hostname": master.hostname,
            "capabilities": [c["type"] for c in leader_info["capabilities"]],
            "activated_slaves": float(sum(a.active for a in master.agents.values())),
            "deactivated_slaves": float(sum(not a.active for a in master.agents.values())),
            "unreachable_slaves": float(len(master.unreachable)),
            "leader": master.pid,
            "leader_info": leader_info,
            "flags": master_flags(master),
            "slaves": [
                agent if may_view is None else hide_roles(agent, may_view)
                for agent in (agent_json(master, record, used[agent_id], offered[agent_id])
                              for agent_id, record in master.agents.items())
            ],
            "recovered_slaves": [],
            "frameworks": [framework_json(fw) for fw in master.frameworks.values()],
            "completed_frameworks": [
                framework_json(fw, completed=True) for fw in master.completed_frameworks
            ],
            "orphan_tasks": [],
            "unregistered_frameworks": [],
        }
