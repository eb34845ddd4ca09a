"""The master's read-only endpoints besides ``/master/state``, in Mesos 1.11's JSON shapes.

``/master/tasks``, ``/master/state-summary``, ``/master/roles``, ``/master/slaves``,
``/master/frameworks``, ``/master/weights``, ``/master/quota`` and
``/master/maintenance/status`` (Mesos ``src/master/readonly_handler.cpp`` and
``src/master/http.cpp``; shapes as Mesos' endpoint documentation describes them). Each builder
takes the master's lock and returns a plain JSON value; the HTTP layer adds JSONP.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any

from disauto.common.resources import RoleResources
from disauto.localmesos.master.quota import consumed
from disauto.localmesos.master.views import state


if TYPE_CHECKING:
    from disauto.localmesos.master.master import Master
    from disauto.localmesos.master.records import FrameworkRecord
    from disauto.localmesos.master.records import TaskRecord


#: Mesos' default ``limit`` of ``/master/tasks`` (``TASK_LIMIT``).
TASK_LIMIT = 100
#: The task states ``/master/state-summary`` counts per agent and per framework.
SUMMARY_STATES = (
    "TASK_STAGING", "TASK_STARTING", "TASK_RUNNING", "TASK_KILLING", "TASK_FINISHED",
    "TASK_KILLED", "TASK_FAILED", "TASK_LOST", "TASK_ERROR", "TASK_UNREACHABLE",
)  # fmt: skip
_FULL_RESOURCE_KEYS = (
    "reserved_resources_full", "unreserved_resources_full", "used_resources_full",
    "offered_resources_full",
)  # fmt: skip


def _all_tasks(fw: FrameworkRecord) -> list[TaskRecord]:
    return [*fw.tasks.values(), *fw.completed_tasks]


def _number(raw: str | None, default: int) -> int:
    """Mesos ``numify<int>`` with a default: anything that is not an integer is the default."""
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        return default


def _first_timestamp(task: TaskRecord) -> float | None:
    return float(task.statuses[0].get("timestamp") or 0.0) if task.statuses else None


def _order(tasks: list[TaskRecord], ascending: bool) -> list[TaskRecord]:
    """By the first status' timestamp; tasks without statuses first (asc) or last (desc)."""
    timed = [t for t in tasks if t.statuses]
    untimed = [t for t in tasks if not t.statuses]
    timed.sort(key=lambda t: _first_timestamp(t) or 0.0, reverse=not ascending)
    return untimed + timed if ascending else timed + untimed


def tasks(master: Master, query: Mapping[str, str | None]) -> dict[str, Any]:
    """``/master/tasks?limit=&offset=&order=asc|desc&framework_id=&task_id=``."""
    limit = _number(query.get("limit"), TASK_LIMIT)
    offset = _number(query.get("offset"), 0)
    framework_id, task_id = query.get("framework_id"), query.get("task_id")
    with master.lock:
        frameworks = [*master.frameworks.values(), *master.completed_frameworks]
        selected = [
            task
            for fw in frameworks
            if framework_id is None or fw.framework_id == framework_id
            for task in _all_tasks(fw)
            if task_id is None or task.task_id == task_id
        ]
        ordered = _order(selected, query.get("order") == "asc")
        if offset < 0 or offset >= len(ordered):
            return {"tasks": []}  # a negative offset is a huge size_t in Mesos
        end = len(ordered) if limit < 0 else offset + limit
        return {"tasks": [state.task_json(t) for t in ordered[offset:end]]}


def _state_counts(records: list[TaskRecord]) -> dict[str, int]:
    states = [t.state for t in records]
    return {name: states.count(name) for name in SUMMARY_STATES}


def _framework_summary(fw: FrameworkRecord, slave_ids: list[str]) -> dict[str, Any]:
    """``json(Summary<Framework>)`` with the task counts and the agents it has tasks on."""
    full = state.framework_json(fw)
    keys = (
        "id", "name", "used_resources", "offered_resources", "capabilities", "hostname",
        "webui_url", "active", "connected", "recovered",
    )  # fmt: skip
    out = {key: full[key] for key in keys}
    out.update(_state_counts(_all_tasks(fw)))
    out["slave_ids"] = slave_ids
    return out


def state_summary(master: Master) -> dict[str, Any]:
    """``/master/state-summary``: agents and frameworks with task counts, no tasks."""
    with master.lock:
        used, offered = state.agent_usage(master)
        frameworks = list(master.frameworks.values())
        by_agent: dict[str, list[TaskRecord]] = {agent_id: [] for agent_id in master.agents}
        agent_frameworks: dict[str, list[str]] = {agent_id: [] for agent_id in master.agents}
        slaves = []
        for fw in frameworks:
            for task in _all_tasks(fw):
                by_agent.setdefault(task.agent_id, []).append(task)
                ids = agent_frameworks.setdefault(task.agent_id, [])
                if fw.framework_id not in ids:
                    ids.append(fw.framework_id)
        for agent_id, record in master.agents.items():
            agent = state.agent_json(master, record, used[agent_id], offered[agent_id])
            for key in _FULL_RESOURCE_KEYS:
                agent.pop(key, None)
            agent.update(_state_counts(by_agent[agent_id]))
            agent["framework_ids"] = agent_frameworks[agent_id]
            slaves.append(agent)
        summaries = [
            _framework_summary(fw, sorted({t.agent_id for t in _all_tasks(fw)}))
            for fw in frameworks
        ]
        out: dict[str, Any] = {"hostname": master.hostname}
        if "cluster" in master.extra_flags:
            out["cluster"] = master.extra_flags["cluster"]
        out.update({"slaves": slaves, "frameworks": summaries})
        return out


def _quantities(resources: RoleResources) -> dict[str, float]:
    """A ``ResourceQuantities`` object: the non-zero scalars."""
    return {name: value for name, value in sorted(resources.scalars.items()) if value}


def _ancestors(role: str) -> list[str]:
    parts = role.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def known_roles(master: Master) -> list[str]:
    """Under the lock: roles with frameworks or allocations, weighted roles, their ancestors."""
    names: set[str] = set(master.weights)
    for fw in master.frameworks.values():
        names.update(fw.roles)
        names.update(t.role for t in fw.tasks.values())
        names.update(o.role for o in fw.offers.values())
    for role in list(names):
        names.update(_ancestors(role))
    return sorted(names)


def _role_resources(master: Master, role: str) -> tuple[RoleResources, RoleResources, list[str]]:
    """Under the lock: (allocated, offered, subscribed framework ids) of ``role`` and its
    subroles (Mesos' ``RoleResourceBreakdown`` counts the subtree)."""
    allocated, offered = RoleResources(), RoleResources()
    frameworks: list[str] = []

    def inside(name: str) -> bool:
        return name == role or name.startswith(role + "/")

    for fw in master.frameworks.values():
        if role in fw.roles:
            frameworks.append(fw.framework_id)
        for task in fw.tasks.values():
            if inside(task.role) and not task.recovered:
                allocated = allocated + task.resources
        for executor in fw.executors.values():
            if inside(executor.role):
                allocated = allocated + executor.resources
        for offer in fw.offers.values():
            if inside(offer.role):
                offered = offered + offer.resources
    return allocated, offered, frameworks


def roles(master: Master) -> dict[str, Any]:
    """``/master/roles``: every known role with weight, (empty) quota and resources."""
    with master.lock:
        out = []
        for name in known_roles(master):
            allocated, offered, frameworks = _role_resources(master, name)
            quota = master.quotas.get(name)
            reserved = RoleResources()
            for agent in master.agents.values():
                for role in agent.total.reservation_roles:
                    if role == name or role.startswith(name + "/"):
                        reserved = reserved + RoleResources({role: agent.total.reserved_for(
                            role)})
            out.append({
                "name": name,
                "weight": float(master.weights.get(name, 1.0)),
                "quota": {
                    "role": name,
                    "guarantee": dict(quota.guarantees) if quota else {},
                    "limit": dict(quota.limits) if quota else {},
                    "consumed": consumed(name, master.agents.values(),
                                         master.frameworks.values()),
                },
                "resources": _quantities(allocated + offered),
                "allocated": _quantities(allocated),
                "offered": _quantities(offered),
                "reserved": _quantities(reserved),
                "frameworks": frameworks,
            })  # fmt: skip
        return {"roles": out}


def weights(master: Master) -> list[dict[str, Any]]:
    """``/master/weights``: the configured ``WeightInfo``s."""
    with master.lock:
        return [{"weight": float(w), "role": r} for r, w in sorted(master.weights.items())]


def slaves(master: Master, slave_id: str | None,
           may_view: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """``/master/slaves[?slave_id=]``: registered agents (their reservations as ``may_view``
    lets the reader see them, :func:`state.hide_roles`); none is ever recovered here."""
    full = state.master_state(master, may_view)
    agents = [s for s in full["slaves"] if slave_id is None or s["id"] == slave_id]
    return {"slaves": agents, "recovered_slaves": []}


def frameworks(master: Master, framework_id: str | None) -> dict[str, Any]:
    """``/master/frameworks[?framework_id=]``."""
    full = state.master_state(master)

    def pick(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [f for f in items if framework_id is None or f["id"] == framework_id]

    return {
        "frameworks": pick(full["frameworks"]),
        "completed_frameworks": pick(full["completed_frameworks"]),
        "unregistered_frameworks": [],
    }


def quota_status(master: Master) -> dict[str, Any]:
    """``GET /master/quota``: the ``QuotaStatus`` (``{}`` without quota: Mesos'
    protobuf-to-JSON omits empty repeated fields)."""
    return master.quota_status()


def maintenance_status(master: Master) -> dict[str, Any]:
    """``/master/maintenance/status``: the ``ClusterStatus``."""
    return master.maintenance_status()
