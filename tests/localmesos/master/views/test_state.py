"""``/master/state`` and ``/metrics/snapshot`` in the shapes of a Mesos 1.11 master."""

from __future__ import annotations

import re
from typing import Any

import pytest

from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.master.views.state import format_duration
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration  # starts processes or servers


TOP_LEVEL = {
    "version", "build_date", "build_time", "build_user", "start_time", "elected_time", "id",
    "pid", "hostname", "capabilities", "activated_slaves", "deactivated_slaves",
    "unreachable_slaves", "leader", "leader_info", "flags", "slaves", "recovered_slaves",
    "frameworks", "completed_frameworks", "orphan_tasks", "unregistered_frameworks",
}  # fmt: skip
FRAMEWORK = {
    "id", "name", "used_resources", "offered_resources", "capabilities", "hostname",
    "webui_url", "active", "connected", "recovered", "user", "failover_timeout", "checkpoint",
    "registered_time", "unregistered_time", "resources", "tasks", "unreachable_tasks",
    "completed_tasks", "offers", "executors",
}  # fmt: skip
TASK = {
    "id", "name", "framework_id", "executor_id", "slave_id", "state", "resources", "role",
    "statuses",
}  # fmt: skip
AGENT = {
    "id", "pid", "hostname", "port", "registered_time", "resources", "used_resources",
    "offered_resources", "reserved_resources", "unreserved_resources", "attributes", "active",
    "version", "capabilities",
}  # fmt: skip
RESOURCES = {"cpus", "gpus", "mem", "disk"}


def _is_resources(value: Any) -> bool:
    return isinstance(value, dict) and RESOURCES <= set(value)


def test_state_shapes_with_running_finished_and_completed_frameworks() -> None:
    agent = AgentConfig(cpus=2.0, mem_mb=1024.0, disk_mb=500.0, attributes={"rack": "r1"})
    with running_cluster(agent_configs=(agent, agent)) as cluster:
        raw = RawFramework(
            cluster.address, name="stateful", auto_acknowledge=True,
            webui_url="http://example/ui", labels={"labels": [{"key": "k", "value": "v"}]},
            failover_timeout=42.0,
        )
        fid = raw.subscribe()
        offer = raw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
        tasks = [
            command_task(offer, "runs", "sleep 30", cpus=0.5, mem=128.0,
                         labels={"labels": [{"key": "trial", "value": "7"}]}),
            command_task(offer, "ends", "true", cpus=0.5, mem=128.0),
        ]
        raw.launch(offer, tasks)

        def ready() -> dict[str, Any] | None:
            state = get_json(cluster, "/master/state")
            fw = state["frameworks"][0]
            done = [t["id"] for t in fw["completed_tasks"]] == ["ends"]
            running = [t["state"] for t in fw["tasks"]] == ["TASK_RUNNING"]
            return state if done and running else None

        state = wait_until(ready)
        assert TOP_LEVEL <= set(state)
        assert state["version"] == "1.11.0" and state["leader"] == state["pid"]
        assert state["pid"] == f"master@{cluster.address}"
        assert state["leader_info"]["port"] == cluster.port
        assert state["activated_slaves"] == 2
        assert state["flags"]["allocation_interval"] == "100ms"
        assert state["flags"]["authenticate_http_frameworks"] == "false"
        assert state["orphan_tasks"] == [] and state["unregistered_frameworks"] == []

        slaves = {s["id"]: s for s in state["slaves"]}
        used_agent = slaves[offer["agent_id"]["value"]]
        assert AGENT <= set(used_agent)
        assert used_agent["resources"] == {
            "cpus": 2.0, "gpus": 0.0, "mem": 1024.0, "disk": 500.0,
            "ports": used_agent["resources"]["ports"],
        }
        assert used_agent["used_resources"]["cpus"] == 0.5  # the finished task was recovered
        assert used_agent["attributes"] == {"rack": "r1"}
        assert re.match(r"slave\(\d\)@127\.0\.0\.1:\d+$", used_agent["pid"])

        fw = state["frameworks"][0]
        assert FRAMEWORK <= set(fw)
        assert fw["id"] == fid and fw["name"] == "stateful" and fw["role"] == "*"
        assert fw["webui_url"] == "http://example/ui" and fw["failover_timeout"] == 42.0
        assert fw["active"] and fw["connected"] and "pid" not in fw
        assert fw["labels"] == [{"key": "k", "value": "v"}]
        assert _is_resources(fw["used_resources"]) and fw["used_resources"]["cpus"] == 0.5
        assert "reregistered_time" not in fw

        task = fw["tasks"][0]
        assert TASK <= set(task)
        assert task["executor_id"] == "" and task["slave_id"] == offer["agent_id"]["value"]
        assert task["resources"]["cpus"] == 0.5 and task["role"] == "*"
        assert task["labels"] == [{"key": "trial", "value": "7"}]
        assert [s["state"] for s in task["statuses"]] == ["TASK_STARTING", "TASK_RUNNING"]
        assert all(isinstance(s["timestamp"], float) for s in task["statuses"])
        assert all("uuid" not in s and "data" not in s for s in task["statuses"])
        finished = fw["completed_tasks"][0]
        assert finished["state"] == "TASK_FINISHED"

        for offer_state in fw["offers"]:
            assert set(offer_state) == {
                "id", "framework_id", "allocation_info", "slave_id", "resources",
            }
            assert _is_resources(offer_state["resources"])

        assert raw.call("TEARDOWN") == 202
        state = wait_until(
            lambda: (s := get_json(cluster, "/master/state"))["completed_frameworks"] and s
        )
        gone = state["completed_frameworks"][0]
        assert not gone["active"] and gone["unregistered_time"] >= gone["registered_time"]
        assert sorted(t["id"] for t in gone["completed_tasks"]) == ["ends", "runs"]
        killed = next(t for t in gone["completed_tasks"] if t["id"] == "runs")
        assert killed["state"] == "TASK_KILLED"
        assert state["frameworks"] == []
        raw.close()


def test_metrics_snapshot_counts() -> None:
    with running_cluster(agents=2, cpus=2.0) as cluster:
        raw = RawFramework(cluster.address, auto_acknowledge=True)
        raw.subscribe()
        offer = raw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
        raw.launch(
            offer,
            [
                command_task(offer, "ok", "true"),
                command_task(offer, "bad", "exit 1"),
                command_task(offer, "long", "sleep 30", cpus=1.0),
                command_task(offer, "huge", "true", cpus=99.0),
            ],
        )

        def settled() -> dict[str, Any] | None:
            metrics = get_json(cluster, "/metrics/snapshot")
            ok = metrics["master/tasks_finished"] == 1 and metrics["master/tasks_failed"] == 1
            # Acknowledgements trail the updates they answer: wait for them too.
            ok = ok and metrics["master/valid_status_update_acknowledgements"] >= 6
            return metrics if ok and metrics["master/tasks_running"] == 1 else None

        metrics = wait_until(settled)
        assert metrics["master/tasks_error"] == 1
        assert metrics["master/cpus_total"] == 4.0 and metrics["master/cpus_used"] == 1.0
        assert metrics["master/cpus_percent"] == 0.25
        assert metrics["master/slaves_active"] == 2 and metrics["master/elected"] == 1
        assert metrics["master/frameworks_connected"] == 1
        assert metrics["master/messages_launch_tasks"] == 1
        assert metrics["master/valid_status_updates"] >= 6
        assert metrics["master/valid_status_update_acknowledgements"] >= 6
        assert metrics["allocator/mesos/allocation_runs"] >= 1
        assert metrics["allocator/mesos/allocation_run_ms/count"] >= 1
        assert (
            metrics["allocator/mesos/allocation_run_ms/min"]
            <= metrics["allocator/mesos/allocation_run_ms/p50"]
            <= metrics["allocator/mesos/allocation_run_ms/max"]
        )
        for state in ("staging", "starting", "killing", "lost", "killed", "dropped"):
            assert f"master/tasks_{state}" in metrics
        prefix = f"master/frameworks/raw/{raw.framework_id}"
        assert metrics[f"{prefix}/subscribed"] == 1 and metrics[f"{prefix}/calls"] >= 2
        assert all(isinstance(v, int | float) for v in metrics.values())
        raw.close()


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(1.0, "1secs"), (0.5, "500ms"), (15.0, "15secs"), (90.0, "1.5mins"), (0.1, "100ms"),
     (7200.0, "2hrs"), (2e-9, "2ns")],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
