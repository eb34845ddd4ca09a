"""``/metrics/snapshot``: the names a Mesos 1.11 master publishes, with this master's values.

The names are those Mesos registers (``src/master/metrics.cpp``, the hierarchical allocator's
``src/master/allocator/mesos/metrics.cpp`` and its DRF role sorter, libprocess' ``System``
process) and documents in ``docs/monitoring.md``. A value is real where the embedded master
knows the fact (task and framework gauges, message counters, agent registrations, allocation
timers, role shares, ``system/*`` from the host) and 0 where the concept does not exist here
(libprocess event queues, agent removals and shutdowns, operations, the HTTP cache); the list is
in ``docs/local-mode.md``. Counters the master keeps under names Mesos does not have are not
published.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence
import os
import time
from typing import TYPE_CHECKING
from urllib.parse import quote

from disauto.common.resources import RoleResources
from disauto.localmesos.master import allocator as alloc
from disauto.localmesos.master.quota import consumed


if TYPE_CHECKING:
    from disauto.localmesos.master.master import Master
    from disauto.localmesos.master.records import FrameworkRecord


#: Counters a Mesos master registers at start (besides ``tasks_*``), without ``master/``.
MASTER_COUNTERS = (
    "dropped_messages",
    "http_cache_hits",
    "messages_register_framework",
    "messages_reregister_framework",
    "messages_unregister_framework",
    "messages_deactivate_framework",
    "messages_kill_task",
    "messages_status_update_acknowledgement",
    "messages_operation_status_update_acknowledgement",
    "messages_resource_request",
    "messages_launch_tasks",
    "messages_decline_offers",
    "messages_revive_offers",
    "messages_suppress_offers",
    "messages_reconcile_operations",
    "messages_reconcile_tasks",
    "messages_framework_to_executor",
    "messages_executor_to_framework",
    "messages_register_slave",
    "messages_reregister_slave",
    "messages_unregister_slave",
    "messages_status_update",
    "messages_operation_status_update",
    "messages_exited_executor",
    "messages_update_slave",
    "messages_authenticate",
    "valid_framework_to_executor_messages",
    "invalid_framework_to_executor_messages",
    "valid_executor_to_framework_messages",
    "invalid_executor_to_framework_messages",
    "valid_status_updates",
    "invalid_status_updates",
    "valid_status_update_acknowledgements",
    "invalid_status_update_acknowledgements",
    "valid_operation_status_updates",
    "invalid_operation_status_updates",
    "valid_operation_status_update_acknowledgements",
    "invalid_operation_status_update_acknowledgements",
    "recovery_slave_removals",
    "slave_registrations",
    "slave_reregistrations",
    "slave_removals",
    "slave_removals/reason_unhealthy",
    "slave_removals/reason_unregistered",
    "slave_removals/reason_registered",
    "slave_shutdowns_scheduled",
    "slave_shutdowns_completed",
    "slave_shutdowns_canceled",
    "slave_unreachable_scheduled",
    "slave_unreachable_completed",
    "slave_unreachable_canceled",
)
#: Gauges of concepts this master lacks (no libprocess event queue, no operator event stream).
ZERO_GAUGES = (
    "event_queue_messages",
    "event_queue_dispatches",
    "event_queue_http_requests",
    "operator_event_stream_subscribers",
)
ACTIVE_TASK_STATES = ("staging", "starting", "running", "killing", "unreachable")
TERMINAL_TASK_STATES = (
    "finished", "failed", "killed", "lost", "error", "dropped", "gone", "gone_by_operator",
)  # fmt: skip
#: ``Offer.Operation.Type`` values with ``master/operations/<type>/`` metrics (not LAUNCH*).
OPERATION_TYPES = (
    "reserve", "unreserve", "create", "destroy", "grow_volume", "shrink_volume", "create_disk",
    "destroy_disk",
)  # fmt: skip
OPERATION_STATES = (
    "total", "pending", "recovering", "finished", "failed", "error", "dropped", "unreachable",
    "gone_by_operator",
)  # fmt: skip
#: ``scheduler::Call::Type`` and ``Event::Type`` values (UNKNOWN excluded), for frameworks.
CALL_TYPES = (
    "subscribe", "teardown", "accept", "decline", "accept_inverse_offers",
    "decline_inverse_offers", "revive", "kill", "shutdown", "acknowledge",
    "acknowledge_operation_status", "reconcile", "reconcile_operations", "message", "request",
    "suppress", "update_framework",
)  # fmt: skip
EVENT_TYPES = (
    "subscribed", "offers", "inverse_offers", "rescind", "rescind_inverse_offer", "update",
    "update_operation_status", "message", "failure", "error", "heartbeat",
)  # fmt: skip
ALL_TASK_STATES = (
    "TASK_STAGING", "TASK_STARTING", "TASK_RUNNING", "TASK_KILLING", "TASK_FINISHED",
    "TASK_FAILED", "TASK_KILLED", "TASK_ERROR", "TASK_LOST", "TASK_DROPPED", "TASK_UNREACHABLE",
    "TASK_GONE", "TASK_GONE_BY_OPERATOR", "TASK_UNKNOWN",
)  # fmt: skip
_TERMINAL = frozenset(f"TASK_{s.upper()}" for s in TERMINAL_TASK_STATES)
#: The percentiles libprocess publishes for a timer (``Statistics``).
_QUANTILES = (
    ("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999),
    ("p9999", 0.9999),
)  # fmt: skip
#: Scalar resources of the master's and the allocator's resource gauges.
_MASTER_RESOURCES = ("cpus", "gpus", "mem", "disk")
_ALLOCATOR_RESOURCES = ("cpus", "mem", "disk")


def metrics_snapshot(master: Master) -> dict[str, float]:
    """The body of ``/metrics/snapshot``: one flat object, as Mesos' ``metrics`` process."""
    with master.lock:
        out = _master_metrics(master)
        out.update(_framework_metrics(master))
        out.update(_allocator_metrics(master))
    out.update(system_metrics())
    return out


def _sum(items: Iterable[RoleResources]) -> RoleResources:
    total = RoleResources()
    for item in items:
        total = total + item
    return total


def _used(fw: FrameworkRecord) -> RoleResources:
    used = _sum(t.resources for t in fw.tasks.values() if not t.recovered)
    return used + _sum(e.resources for e in fw.executors.values())


def _master_metrics(master: Master) -> dict[str, float]:
    """Under the lock: every ``master/*`` name of ``src/master/metrics.cpp``."""
    out: dict[str, float] = {}
    total = _sum(record.total for record in master.agents.values())
    used = _sum(_used(fw) for fw in master.frameworks.values())
    for name in _MASTER_RESOURCES:
        whole, part = total.scalar(name), used.scalar(name)
        out[f"master/{name}_total"] = whole
        out[f"master/{name}_used"] = part
        out[f"master/{name}_percent"] = part / whole if whole else 0.0
        for suffix in ("total", "used", "percent"):
            out[f"master/{name}_revocable_{suffix}"] = 0.0
    connected = sum(1 for fw in master.frameworks.values() if fw.connected)
    agents = float(len(master.agents))
    out.update({
        "master/uptime_secs": time.time() - master.start_time,
        "master/elected": 1.0,
        "master/slaves_connected": agents,
        "master/slaves_disconnected": 0.0,
        "master/slaves_active": agents,
        "master/slaves_inactive": 0.0,
        "master/slaves_unreachable": 0.0,
        "master/frameworks_connected": float(connected),
        "master/frameworks_disconnected": float(len(master.frameworks) - connected),
        "master/frameworks_active": float(connected),
        "master/frameworks_inactive": float(len(master.frameworks) - connected),
        "master/outstanding_offers": float(len(master.offers)),
    })  # fmt: skip
    active = {state: 0 for state in ACTIVE_TASK_STATES}
    for fw in master.frameworks.values():
        for task in fw.tasks.values():
            name = task.state.replace("TASK_", "").lower()
            if name in active:
                active[name] += 1
    for state, count in active.items():
        out[f"master/tasks_{state}"] = float(count)
    counters = master.metrics
    for state in TERMINAL_TASK_STATES:
        out[f"master/tasks_{state}"] = float(counters.get(f"tasks_{state}", 0))
    for name in MASTER_COUNTERS:
        out[f"master/{name}"] = float(counters.get(name, 0))
    for name in ZERO_GAUGES:
        out[f"master/{name}"] = 0.0
    for name, value in counters.items():
        if name.startswith("task_"):  # task_<state>/source_<s>/reason_<r>, made on first use
            out[f"master/{name}"] = float(value)
    for prefix in ("master/operations/", *(f"master/operations/{t}/" for t in OPERATION_TYPES)):
        for state in OPERATION_STATES:
            out[f"{prefix}{state}"] = 0.0
    return out


def framework_prefix(fw: FrameworkRecord) -> str:
    """``master/frameworks/<url-encoded name>/<id>/`` (``getFrameworkMetricPrefix``)."""
    return f"master/frameworks/{quote(fw.name, safe='')}/{fw.framework_id}/"


def _framework_metrics(master: Master) -> dict[str, float]:
    """Under the lock: the per-framework metrics of every framework not yet removed."""
    out: dict[str, float] = {}
    for fw in master.frameworks.values():
        prefix = framework_prefix(fw)
        counts = fw.metrics
        names = [
            "calls", *(f"calls/{c}" for c in CALL_TYPES),
            "events", *(f"events/{e}" for e in EVENT_TYPES),
            "offers/sent", "offers/accepted", "offers/declined", "offers/rescinded",
            "operations", "operations/launch", "operations/launch_group",
            *(f"operations/{t}" for t in OPERATION_TYPES),
        ]  # fmt: skip
        for name in names:
            out[prefix + name] = float(counts.get(name, 0))
        out[prefix + "subscribed"] = 1.0 if fw.connected else 0.0
        states = [t.state for t in fw.tasks.values()]
        for state in ALL_TASK_STATES:
            if state in _TERMINAL:
                key = f"tasks/terminal/{state.lower()}"
                out[prefix + key] = float(counts.get(key, 0))
            else:
                out[prefix + f"tasks/active/{state.lower()}"] = float(states.count(state))
        for role in fw.roles:
            suppressed = role in fw.suppressed_roles
            out[f"{prefix}roles/{role}/suppressed"] = 1.0 if suppressed else 0.0
    return out


def _role_allocations(master: Master) -> dict[str, RoleResources]:
    """Under the lock: used and offered resources per role, every subscribed role included."""
    per_role: dict[str, RoleResources] = {}
    for fw in master.frameworks.values():
        for role in fw.roles:
            per_role.setdefault(role, RoleResources())
        for role, held in fw.held_by_role().items():
            per_role[role] = per_role.get(role, RoleResources()) + held
    return per_role


def _allocator_metrics(master: Master) -> dict[str, float]:
    """Under the lock: the hierarchical allocator's metrics and its role sorter's shares."""
    out: dict[str, float] = {
        "allocator/mesos/allocation_runs": float(master.allocation_runs),
        "allocator/mesos/event_queue_dispatches": 0.0,
        "allocator/event_queue_dispatches": 0.0,
    }
    out.update(timer_metrics("allocator/mesos/allocation_run_ms", master.allocation_run_ms))
    out.update(
        timer_metrics("allocator/mesos/allocation_run_latency_ms", master.allocation_latency_ms)
    )
    total = _sum(record.total for record in master.agents.values())
    per_role = _role_allocations(master)
    allocated = _sum(per_role.values())
    for name in _ALLOCATOR_RESOURCES:
        out[f"allocator/mesos/resources/{name}/total"] = total.scalar(name)
        out[f"allocator/mesos/resources/{name}/offered_or_allocated"] = allocated.scalar(name)
    for role, resources in per_role.items():
        share = alloc.drf_share(resources, total, master.weights.get(role, 1.0))
        out[f"allocator/mesos/roles/{role}/shares/dominant"] = share
    for role, count in master.filters.active(time.monotonic()).items():
        out[f"allocator/mesos/offer_filters/roles/{role}/active"] = float(count)
    out.update(_quota_metrics(master))
    return out


def _quota_metrics(master: Master) -> dict[str, float]:
    """Under the lock: ``allocator/mesos/quota/roles/<role>/resources/<name>/...`` of each
    role with a quota: ``guarantee``, ``limit``, ``consumed`` and ``offered_or_allocated``
    (``src/master/allocator/mesos/metrics.cpp``)."""
    out: dict[str, float] = {}
    for role, quota in master.quotas.items():
        prefix = f"allocator/mesos/quota/roles/{role}/resources/"
        for name, value in quota.guarantees.items():
            out[f"{prefix}{name}/guarantee"] = float(value)
        for name, value in quota.limits.items():
            out[f"{prefix}{name}/limit"] = float(value)
        used = consumed(role, master.agents.values(), master.frameworks.values())
        for name, value in used.items():
            out[f"{prefix}{name}/consumed"] = float(value)
        held = consumed(role, master.agents.values(), master.frameworks.values(),
                        offered=True)
        for name in {*quota.guarantees, *quota.limits}:
            out[f"{prefix}{name}/offered_or_allocated"] = float(held.get(name, 0.0))
    return out


def timer_metrics(name: str, samples: Sequence[float]) -> dict[str, float]:
    """A libprocess ``Timer``: ``<name>`` (the last value) once there is one, and ``/count``,
    ``/min``, ``/max`` and interpolated percentiles once there are two samples."""
    if not samples:
        return {}
    out = {name: float(samples[-1])}
    if len(samples) < 2:
        return out
    values = sorted(samples)
    out[f"{name}/count"] = float(len(values))
    out[f"{name}/min"] = values[0]
    out[f"{name}/max"] = values[-1]
    for label, quantile in _QUANTILES:
        out[f"{name}/{label}"] = percentile(values, quantile)
    return out


def percentile(values: Sequence[float], quantile: float) -> float:
    """Linear interpolation between the two closest ranks of sorted ``values`` (>= 2)."""
    position = quantile * (len(values) - 1)
    index = min(int(position), len(values) - 2)
    delta = position - index
    return values[index] + (values[index + 1] - values[index]) * delta


def system_metrics() -> dict[str, float]:
    """libprocess' ``system/*`` gauges, read from this host (``sysinfo`` memory, load)."""
    out: dict[str, float] = {"system/cpus_total": float(os.cpu_count() or 1)}
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        out["system/mem_total_bytes"] = float(os.sysconf("SC_PHYS_PAGES") * page)
        out["system/mem_free_bytes"] = float(os.sysconf("SC_AVPHYS_PAGES") * page)
    except (OSError, ValueError):
        pass  # Mesos leaves a gauge out when it cannot be read
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return out
    out.update({"system/load_1min": one, "system/load_5min": five, "system/load_15min": fifteen})
    return out
