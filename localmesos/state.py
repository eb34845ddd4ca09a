"""``/master/state`` and ``/metrics/snapshot`` in the JSON shapes of a Mesos 1.11 master.

The shapes follow apache/mesos ``src/master/readonly_handler.cpp`` (``FullFrameworkWriter``,
``SlaveWriter``, ``json(Task)``, ``json(Offer)``) and ``src/master/metrics.cpp``, as summarized
in Mesos' endpoint documentation, so the Mesos web UI and tools written against a real
master read them unchanged. Resources appear in the object form
(``{"cpus": 4, "gpus": 0, "mem": 1024, "disk": 0, "ports": "[31000-32000]"}``).

Both builders take a consistent snapshot under the master's lock and return plain dicts; the
HTTP layer serializes them (with JSONP when asked).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
import time
from typing import TYPE_CHECKING
from typing import Any

from disauto.common.resources import Resources
from disauto.localmesos.records import MESOS_VERSION


if TYPE_CHECKING:
    from disauto.localmesos.master import Master
    from disauto.localmesos.records import AgentRecord
    from disauto.localmesos.records import FrameworkRecord
    from disauto.localmesos.records import OfferRecord
    from disauto.localmesos.records import TaskRecord

#: Mesos 1.11.0 was tagged on this date; the embedded master reports it as its build.
BUILD_DATE = "2020-11-16 00:00:00"
BUILD_TIME = 1605484800.0
BUILD_USER = "localmesos"

_ACTIVE_STATES = ("staging", "starting", "running", "killing", "unreachable")
_TERMINAL_COUNTERS = (
    "finished",
    "failed",
    "killed",
    "lost",
    "error",
    "dropped",
    "gone",
    "gone_by_operator",
)


def format_duration(seconds: float) -> str:
    """A duration as Mesos (stout ``Duration``) prints it: ``1secs``, ``500ms``, ``1.5mins``."""
    units = (
        (7 * 86400.0, "weeks"),
        (86400.0, "days"),
        (3600.0, "hrs"),
        (60.0, "mins"),
        (1.0, "secs"),
        (1e-3, "ms"),
        (1e-6, "us"),
    )
    for size, name in units:
        if seconds >= size:
            return f"{seconds / size:.10g}{name}"
    return f"{seconds * 1e9:.10g}ns"


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


def _sum(items: Iterable[Resources]) -> Resources:
    total = Resources()
    for item in items:
        total = total + item
    return total


def framework_resources(fw: FrameworkRecord) -> tuple[Resources, Resources]:
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
    out["unreachable_tasks"] = []
    out["completed_tasks"] = [task_json(t) for t in fw.completed_tasks]
    out["offers"] = [offer_json(o) for o in fw.offers.values()]
    out["executors"] = [
        dict(executor.info, slave_id=executor.agent_id) for executor in fw.executors.values()
    ]
    if info.get("labels"):
        out["labels"] = _labels(info["labels"])
    out["offer_constraints"] = fw.offer_constraints
    return out


def agent_json(
    master: Master, record: AgentRecord, used: Resources, offered: Resources
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
    return {
        "id": record.agent_id,
        "pid": f"{master.agent_path(record.agent_id).lstrip('/')}@{hostname}:{port}",
        "hostname": hostname,
        "port": port,
        "registered_time": record.registered_time,
        "resources": record.total.to_state(),
        "used_resources": used.to_state(),
        "offered_resources": offered.to_state(),
        "reserved_resources": {},
        "unreserved_resources": record.total.to_state(),
        "reserved_resources_full": {},
        "unreserved_resources_full": record.total.to_json(),
        "used_resources_full": used.to_json(),
        "offered_resources_full": offered.to_json(),
        "attributes": attributes,
        "active": True,
        "deactivated": False,
        "version": MESOS_VERSION,
        "capabilities": ["MULTI_ROLE", "HIERARCHICAL_ROLE", "RESERVATION_REFINEMENT"],
    }


def _flags(master: Master) -> dict[str, str]:
    flags = {
        "allocation_interval": format_duration(master.allocation_interval),
        "allocator": "hierarchical",
        "authenticate_http_frameworks": "true" if master.authenticate else "false",
        "filter_gpu_resources": "true",
        "framework_sorter": "drf",
        "hostname": master.hostname,
        "max_completed_frameworks": str(master.completed_frameworks.maxlen),
        "max_completed_tasks_per_framework": str(master.max_completed_tasks_per_framework),
        "min_allocatable_resources": "|".join(
            ";".join(f"{k}:{v:g}" for k, v in sorted(r.scalars.items()))
            for r in master.min_allocatable
        ),
        "port": str(master.port),
        "role_sorter": "drf",
    }
    if master.offer_timeout is not None:
        flags["offer_timeout"] = format_duration(master.offer_timeout)
    if master.weights:
        flags["weights"] = ",".join(f"{k}={v:g}" for k, v in sorted(master.weights.items()))
    flags.update(master.extra_flags)
    return flags


def _agent_usage(master: Master) -> tuple[dict[str, Resources], dict[str, Resources]]:
    """Under the master's lock: (used, offered) resources per agent."""
    used: dict[str, Resources] = {a: Resources() for a in master.agents}
    offered: dict[str, Resources] = {a: Resources() for a in master.agents}
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


def master_state(master: Master) -> dict[str, Any]:
    """The body of ``/master/state``."""
    with master.lock:
        used, offered = _agent_usage(master)
        leader_info = master.master_info()
        return {
            **version_json(),
            "start_time": master.start_time,
            "elected_time": master.start_time,
            "id": master.master_id,
            "pid": master.pid,
            "hostname": master.hostname,
            "capabilities": [c["type"] for c in leader_info["capabilities"]],
            "activated_slaves": float(len(master.agents)),
            "deactivated_slaves": 0.0,
            "unreachable_slaves": 0.0,
            "leader": master.pid,
            "leader_info": leader_info,
            "flags": _flags(master),
            "slaves": [
                agent_json(master, record, used[agent_id], offered[agent_id])
                for agent_id, record in master.agents.items()
            ],
            "recovered_slaves": [],
            "frameworks": [framework_json(fw) for fw in master.frameworks.values()],
            "completed_frameworks": [
                framework_json(fw, completed=True) for fw in master.completed_frameworks
            ],
            "orphan_tasks": [],
            "unregistered_frameworks": [],
        }


def metrics_snapshot(master: Master) -> dict[str, float]:
    """The body of ``/metrics/snapshot``: a flat object of master and allocator metrics."""
    with master.lock:
        out: dict[str, float] = {}
        total = _sum(record.total for record in master.agents.values())
        used = Resources()
        states: dict[str, int] = {state: 0 for state in _ACTIVE_STATES}
        for fw in master.frameworks.values():
            fw_used, _ = framework_resources(fw)
            used = used + fw_used
            for task in fw.tasks.values():
                name = task.state.replace("TASK_", "").lower()
                if name in states:
                    states[name] += 1
        for name in ("cpus", "gpus", "mem", "disk"):
            whole = total.scalar(name)
            part = used.scalar(name)
            out[f"master/{name}_total"] = whole
            out[f"master/{name}_used"] = part
            out[f"master/{name}_percent"] = part / whole if whole else 0.0
            out[f"master/{name}_revocable_total"] = 0.0
            out[f"master/{name}_revocable_used"] = 0.0
            out[f"master/{name}_revocable_percent"] = 0.0
        connected = sum(1 for fw in master.frameworks.values() if fw.connected)
        out["master/elected"] = 1.0
        out["master/uptime_secs"] = time.time() - master.start_time
        out["master/frameworks_active"] = float(connected)
        out["master/frameworks_inactive"] = float(len(master.frameworks) - connected)
        out["master/frameworks_connected"] = float(connected)
        out["master/frameworks_disconnected"] = float(len(master.frameworks) - connected)
        out["master/slaves_active"] = float(len(master.agents))
        out["master/slaves_inactive"] = 0.0
        out["master/slaves_connected"] = float(len(master.agents))
        out["master/slaves_disconnected"] = 0.0
        out["master/slaves_unreachable"] = 0.0
        out["master/outstanding_offers"] = float(len(master.offers))
        for state, count in states.items():
            out[f"master/tasks_{state}"] = float(count)
        for state in _TERMINAL_COUNTERS:
            out[f"master/tasks_{state}"] = float(master.metrics.get(f"tasks_{state}", 0))
        for name, value in master.metrics.items():
            if not name.startswith("tasks_"):
                out[f"master/{name}"] = float(value)
        for name in (
            "messages_decline_offers",
            "messages_launch_tasks",
            "messages_revive_offers",
            "messages_suppress_offers",
            "messages_kill_task",
            "messages_reconcile_tasks",
            "messages_status_update_acknowledgement",
            "valid_status_updates",
            "invalid_status_updates",
            "valid_status_update_acknowledgements",
            "invalid_status_update_acknowledgements",
        ):
            out.setdefault(f"master/{name}", 0.0)
        out["allocator/mesos/allocation_runs"] = float(master.allocation_runs)
        out["allocator/mesos/allocation_run_ms"] = master.last_allocation_ms
        out.update(timer_stats("allocator/mesos/allocation_run_ms", master.allocation_run_ms))
        out["allocator/mesos/event_queue_dispatches"] = 0.0
        for role, count in master.filters.active(time.monotonic()).items():
            out[f"allocator/mesos/offer_filters/roles/{role}/active"] = float(count)
        for fw in master.frameworks.values():
            prefix = f"master/frameworks/{_url_quote(fw.name)}/{fw.framework_id}"
            out[f"{prefix}/subscribed"] = 1.0 if fw.connected else 0.0
            for name, value in fw.metrics.items():
                if name != "subscribed":
                    out[f"{prefix}/{name}"] = float(value)
        return out


def timer_stats(name: str, samples: Iterable[float]) -> dict[str, float]:
    """Mesos timer metrics over recent samples: ``<name>/count``, ``/min``, ``/p50``..."""
    values = sorted(samples)
    if not values:
        return {f"{name}/count": 0.0}
    out = {
        f"{name}/count": float(len(values)),
        f"{name}/min": values[0],
        f"{name}/max": values[-1],
    }
    for label, quantile in (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99),
                            ("p999", 0.999)):
        out[f"{name}/{label}"] = values[min(len(values) - 1, int(quantile * len(values)))]
    return out


def _url_quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")
