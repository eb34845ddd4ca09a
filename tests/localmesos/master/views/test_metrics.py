"""``/metrics/snapshot`` against the names Mesos 1.11 documents, and what a few values mean.

The name lists are facts written down from Mesos' ``docs/monitoring.md`` (1.11.0), not code.
"""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

from disauto.localmesos.master.views.metrics import percentile
from disauto.localmesos.master.views.metrics import timer_metrics
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import wait_until


#: The fixed ``master/*`` names of Mesos 1.11 ``docs/monitoring.md`` (without ``master/``).
DOCUMENTED_MASTER = {
    "cpus_percent", "cpus_revocable_percent", "cpus_revocable_total", "cpus_revocable_used",
    "cpus_total", "cpus_used", "disk_percent", "disk_revocable_percent", "disk_revocable_total",
    "disk_revocable_used", "disk_total", "disk_used", "dropped_messages", "elected",
    "event_queue_dispatches", "event_queue_http_requests", "event_queue_messages",
    "frameworks_active", "frameworks_connected", "frameworks_disconnected", "frameworks_inactive",
    "gpus_percent", "gpus_revocable_percent", "gpus_revocable_total", "gpus_revocable_used",
    "gpus_total", "gpus_used", "invalid_executor_to_framework_messages",
    "invalid_framework_to_executor_messages", "invalid_operation_status_update_acknowledgements",
    "invalid_status_update_acknowledgements", "invalid_status_updates", "mem_percent",
    "mem_revocable_percent", "mem_revocable_total", "mem_revocable_used", "mem_total", "mem_used",
    "messages_authenticate", "messages_deactivate_framework", "messages_decline_offers",
    "messages_executor_to_framework", "messages_exited_executor",
    "messages_framework_to_executor", "messages_kill_task", "messages_launch_tasks",
    "messages_operation_status_update_acknowledgement", "messages_reconcile_operations",
    "messages_reconcile_tasks", "messages_register_framework", "messages_register_slave",
    "messages_reregister_framework", "messages_reregister_slave", "messages_resource_request",
    "messages_revive_offers", "messages_status_update", "messages_status_update_acknowledgement",
    "messages_unregister_framework", "messages_unregister_slave", "messages_update_slave",
    "operations/total", "operator_event_stream_subscribers", "outstanding_offers",
    "recovery_slave_removals", "slave_registrations", "slave_removals",
    "slave_removals/reason_registered", "slave_removals/reason_unhealthy",
    "slave_removals/reason_unregistered", "slave_reregistrations", "slave_unreachable_canceled",
    "slave_unreachable_completed", "slave_unreachable_scheduled", "slaves_active",
    "slaves_connected", "slaves_disconnected", "slaves_inactive", "slaves_unreachable",
    "tasks_error", "tasks_failed", "tasks_finished", "tasks_killed", "tasks_killing",
    "tasks_lost", "tasks_running", "tasks_staging", "tasks_starting", "tasks_unreachable",
    "uptime_secs", "valid_executor_to_framework_messages", "valid_framework_to_executor_messages",
    "valid_operation_status_update_acknowledgements", "valid_status_update_acknowledgements",
    "valid_status_updates",
}  # fmt: skip
#: Registered by ``src/master/metrics.cpp`` at start but missing from the documentation.
UNDOCUMENTED_MASTER = {
    "http_cache_hits", "invalid_operation_status_updates", "messages_operation_status_update",
    "messages_suppress_offers", "slave_shutdowns_canceled", "slave_shutdowns_completed",
    "slave_shutdowns_scheduled", "tasks_dropped", "tasks_gone", "tasks_gone_by_operator",
    "valid_operation_status_updates",
}  # fmt: skip
_TIMER = ("", "/count", "/max", "/min", "/p50", "/p90", "/p95", "/p99", "/p999", "/p9999")
#: The allocator's documented names (``allocator/mesos/...``), timers with their statistics.
DOCUMENTED_ALLOCATOR = {
    *(f"allocator/mesos/allocation_run_ms{s}" for s in _TIMER),
    *(f"allocator/mesos/allocation_run_latency_ms{s}" for s in _TIMER),
    "allocator/mesos/allocation_runs",
    "allocator/mesos/event_queue_dispatches",
    *(f"allocator/mesos/resources/{r}/{k}" for r in ("cpus", "mem", "disk")
      for k in ("total", "offered_or_allocated")),
}  # fmt: skip
DOCUMENTED_SYSTEM = {
    "system/cpus_total", "system/load_1min", "system/load_5min", "system/load_15min",
    "system/mem_free_bytes", "system/mem_total_bytes",
}  # fmt: skip
#: Templated names of the documentation (``<TASK_STATE>``, ``<OPERATION_TYPE>``, ...).
TEMPLATES = (
    r"master/frameworks/[^/]+/[^/]+/(subscribed|calls|events|operations|offers/(sent|accepted"
    r"|declined|rescinded)|calls/[a-z_]+|events/[a-z_]+|operations/[a-z_]+"
    r"|tasks/(active|terminal)/task_[a-z_]+|roles/[^/]+/suppressed)",
    r"master/operations/([a-z_]+/)?[a-z_]+",
    r"master/task_[a-z_]+/source_[a-z_]+/reason_[a-z_]+",
    r"allocator/mesos/roles/[^/]+/shares/dominant",
    r"allocator/mesos/offer_filters/roles/[^/]+/active",
    r"allocator/event_queue_dispatches",
)


def _is_mesos_name(name: str) -> bool:
    if name.startswith("master/") and name[len("master/"):] in (
        DOCUMENTED_MASTER | UNDOCUMENTED_MASTER
    ):
        return True
    if name in DOCUMENTED_ALLOCATOR | DOCUMENTED_SYSTEM:
        return True
    return any(re.fullmatch(pattern, name) for pattern in TEMPLATES)


@pytest.mark.integration
def test_snapshot_names_are_mesos_names_and_values_mean_what_they_say() -> None:
    with running_cluster(agents=2, cpus=2.0) as cluster:
        before = get_json(cluster, "/metrics/snapshot")
        raw = RawFramework(cluster.address, name="metered", auto_acknowledge=True)
        fid = raw.subscribe()
        offer = raw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
        raw.launch(
            offer,
            [
                command_task(offer, "ok", "true"),
                command_task(offer, "long", "sleep 30", cpus=1.0),
                command_task(offer, "huge", "true", cpus=99.0),
            ],
        )

        def settled() -> dict[str, Any] | None:
            metrics = get_json(cluster, "/metrics/snapshot")
            done = metrics["master/tasks_finished"] == 1 and metrics["master/tasks_running"] == 1
            return metrics if done else None

        metrics = wait_until(settled)
        missing = {f"master/{n}" for n in DOCUMENTED_MASTER | UNDOCUMENTED_MASTER} - set(metrics)
        missing |= (DOCUMENTED_ALLOCATOR | DOCUMENTED_SYSTEM) - set(metrics)
        assert not missing, sorted(missing)
        assert [n for n in metrics if not _is_mesos_name(n)] == []
        assert all(isinstance(v, int | float) for v in metrics.values())

        # Agents registered, a framework subscribed, status updates arrived from the agents.
        assert metrics["master/slave_registrations"] == 2
        assert metrics["master/messages_register_slave"] == 2
        assert metrics["master/messages_register_framework"] == 1
        assert before["master/messages_status_update"] == 0
        assert metrics["master/messages_status_update"] >= 4  # STARTING, RUNNING x2, FINISHED
        assert metrics["master/messages_status_update"] >= metrics["master/valid_status_updates"]
        assert metrics["master/event_queue_messages"] == 0
        assert metrics["master/task_error/source_master/reason_task_invalid"] == 1
        assert metrics["master/operations/reserve/total"] == 0

        prefix = f"master/frameworks/metered/{fid}/"
        assert metrics[prefix + "tasks/active/task_running"] == 1
        assert metrics[prefix + "tasks/terminal/task_finished"] == 1
        assert metrics[prefix + "tasks/terminal/task_error"] == 1
        assert metrics[prefix + "events/subscribed"] == 1
        assert metrics[prefix + "events/update"] >= 4
        assert metrics[prefix + "events"] >= metrics[prefix + "events/offers"] + 5
        assert metrics[prefix + "roles/*/suppressed"] == 0

        share = metrics["allocator/mesos/roles/*/shares/dominant"]
        assert 0.25 <= share <= 1.0  # at least the running task's cpu out of 4
        assert metrics["allocator/mesos/resources/cpus/total"] == 4.0
        assert metrics["allocator/mesos/resources/cpus/offered_or_allocated"] >= 1.0

        latency = "allocator/mesos/allocation_run_latency_ms"
        count = metrics[f"{latency}/count"]
        later = wait_until(
            lambda: (m := get_json(cluster, "/metrics/snapshot"))[f"{latency}/count"] > count
            and m
        )
        assert later[f"{latency}/min"] <= later[f"{latency}/p50"] <= later[f"{latency}/max"]
        runs = "allocator/mesos/allocation_runs"
        assert later[runs] > metrics[runs]

        assert metrics["system/cpus_total"] == os.cpu_count()
        assert metrics["system/mem_total_bytes"] > metrics["system/mem_free_bytes"] > 0
        assert metrics["system/load_1min"] >= 0
        raw.close()


def test_timer_metrics_follow_libprocess() -> None:
    assert timer_metrics("t_ms", []) == {}
    assert timer_metrics("t_ms", [3.0]) == {"t_ms": 3.0}  # statistics need two samples
    stats = timer_metrics("t_ms", [4.0, 1.0, 3.0, 2.0])
    assert stats["t_ms"] == 2.0  # the last value
    assert stats["t_ms/count"] == 4 and stats["t_ms/min"] == 1.0 and stats["t_ms/max"] == 4.0
    assert stats["t_ms/p50"] == 2.5  # linear interpolation between ranks
    assert percentile([1.0, 2.0], 0.9999) == pytest.approx(1.9999)
