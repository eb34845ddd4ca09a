"""An agent restart: checkpointing frameworks keep their command tasks and DisAuto's custom
executor (re-subscribing), the others lose theirs, as Mesos 1.11 (real processes)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from disauto.common import slots
from disauto.localmesos.cluster import LocalCluster
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import operator_call
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import scalar
from tests.localmesos.cluster_support import wait_until
from tests.localmesos.executor_support import RawExecutor
from tests.localmesos.executor_support import executor_info
from tests.localmesos.executor_support import pid_alive


pytestmark = pytest.mark.integration

SLOT_EXECUTOR = f"{sys.executable} -m {slots.EXECUTOR_MODULE}"


def _statuses(fw: RawFramework, task_id: str) -> list[dict[str, Any]]:
    return fw.updates(task_id)


def _wait_state(fw: RawFramework, task_id: str, state: str, timeout: float = 20
                ) -> dict[str, Any]:
    return dict(fw.wait_event(lambda e: e["type"] == "UPDATE" and e["update"]["status"][
        "task_id"]["value"] == task_id and e["update"]["status"]["state"] == state,
        timeout)["update"]["status"])


def _slot_task(offer: dict[str, Any], task_id: str, command: str, executor_id: str
               ) -> dict[str, Any]:
    task = command_task(offer, task_id, "unused", cpus=0.1, mem=32)
    del task["command"]
    task["executor"] = {"executor_id": {"value": executor_id}, "type": "CUSTOM",
                        "command": {"value": SLOT_EXECUTOR},
                        "resources": [scalar("cpus", 0.1), scalar("mem", 64)]}
    task["data"] = slots.task_data(command, {})
    return task


def _launch_both(fw: RawFramework, prefix: str, seconds: float) -> str:
    """A command task and a DisAuto slot task, each ``sleep seconds`` then ends 0."""
    fw.subscribe()
    offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
    command = f"sleep {seconds}; echo done"
    fw.launch(offer, [command_task(offer, f"{prefix}-cmd", command),
                      _slot_task(offer, f"{prefix}-slot", command, f"{prefix}-executor")])
    for task_id in (f"{prefix}-cmd", f"{prefix}-slot"):
        _wait_state(fw, task_id, "TASK_RUNNING")
    return str(offer["agent_id"]["value"])


def _pids(cluster: LocalCluster) -> dict[str, int]:
    """The pid of each live container of the (only) agent, by container id."""
    launcher = cluster.fleet._launchers[cluster.agents[0].id]  # the machine's process table
    return {c.container_id: c.process.pid for c in launcher.containers()}


def test_checkpointing_frameworks_keep_their_tasks_through_a_restart() -> None:
    with running_cluster(cpus=4.0, mem_mb=4096.0) as cluster:
        kept = RawFramework(cluster.address, name="kept", checkpoint=True,
                            auto_acknowledge=True)
        lost = RawFramework(cluster.address, name="lost", auto_acknowledge=True)
        try:
            agent_id = _launch_both(kept, "k", 6)
            _launch_both(lost, "l", 60)
            before = _pids(cluster)
            assert len(before) == 4
            restart = cluster.restart_agent(agent_id, down_for=0.5)
            for task_id in ("l-cmd", "l-slot"):
                status = _wait_state(lost, task_id, "TASK_LOST")
                assert status["reason"] == "REASON_AGENT_DISCONNECTED"
                assert status["message"] == "Agent 127.0.0.1 disconnected"
                assert status["source"] == "SOURCE_MASTER"
            restart.join(10)
            wait_until(lambda: get_json(cluster, "/master/state")["slaves"][0]["active"],
                       timeout=15)
            for task_id in ("k-cmd", "k-slot"):
                finished = _wait_state(kept, task_id, "TASK_FINISHED", timeout=30)
                assert finished["message"] == "Command exited with status 0"
                assert [s["state"] for s in _statuses(kept, task_id)].count(
                    "TASK_FINISHED") == 1
            after = _pids(cluster)
            # The lost framework's processes are gone, the kept ones ran through.
            assert not any(pid_alive(pid) for cid, pid in before.items() if cid not in after)
            agent = operator_call(cluster, {"type": "GET_AGENTS"})[1]["get_agents"]["agents"][0]
            assert agent["active"] and "reregistered_time" in agent
            assert get_json(cluster, "/metrics/snapshot")["master/slave_reregistrations"] == 1
        finally:
            kept.close()
            lost.close()


def test_reconciliation_during_and_after_the_restart() -> None:
    with running_cluster() as cluster:
        fw = RawFramework(cluster.address, name="kept", checkpoint=True,
                          capabilities=["PARTITION_AWARE"], auto_acknowledge=True)
        try:
            fw.subscribe()
            offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
            fw.launch(offer, [command_task(offer, "t", "sleep 60")])
            _wait_state(fw, "t", "TASK_RUNNING")
            cluster.restart_agent(offer["agent_id"]["value"], down_for=0.3).join(10)
            wait_until(lambda: get_json(cluster, "/master/state")["slaves"][0]["active"],
                       timeout=15)
            start = len(fw.events)
            fw.call("RECONCILE", reconcile={"tasks": []})
            again = fw.wait_event(lambda e: e["type"] == "UPDATE", start=start)
            assert again["update"]["status"]["state"] == "TASK_RUNNING"
            fw.call("KILL", kill={"task_id": {"value": "t"}})
            assert _wait_state(fw, "t", "TASK_KILLED")["source"] == "SOURCE_EXECUTOR"
        finally:
            fw.close()


def test_an_executor_that_does_not_come_back_is_killed() -> None:
    with running_cluster(executor_reregistration_timeout=0.5) as cluster:
        fw = RawFramework(cluster.address, name="kept", checkpoint=True,
                          capabilities=["PARTITION_AWARE"], auto_acknowledge=True)
        try:
            fw.subscribe()
            offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
            task = command_task(offer, "t", "unused")
            del task["command"]
            task["executor"] = executor_info("silent", command="sleep 600")
            fw.launch(offer, [task])
            executor = RawExecutor(cluster.address, fw.framework_id or "", "silent")
            wait_until(lambda: executor.subscribe() == 200)
            executor.wait_event(lambda e: e["type"] == "LAUNCH")
            assert executor.update("t", "TASK_RUNNING", _uuid()) == 202
            _wait_state(fw, "t", "TASK_RUNNING")
            cluster.restart_agent(offer["agent_id"]["value"]).join(10)
            status = _wait_state(fw, "t", "TASK_GONE", timeout=15)
            assert status["reason"] == "REASON_EXECUTOR_REREGISTRATION_TIMEOUT"
            assert status["message"] == "Executor did not reregister within 500ms"
            assert status["source"] == "SOURCE_AGENT"
            # The master forgets the executor either way: with FAILURE when its exit reaches
            # the master after the agent re-registered with it; silently when the agent
            # re-registered once it was gone (Mesos 1.11 ``Master::reconcileKnownSlave``; its
            # exit is then "unknown", ``Master::exitedExecutor``). Which comes first is a race
            # in Mesos too: ``Slave::reregisterExecutorTimeout`` destroys the executor and ends
            # the recovery at once, without waiting for the destroy.
            wait_until(lambda: operator_call(cluster, {"type": "GET_EXECUTORS"})[1][
                "get_executors"].get("executors", []) == [])
            failures = [e for e in fw.events if e["type"] == "FAILURE"]
            assert all(e["failure"]["executor_id"]["value"] == "silent" for e in failures)
        finally:
            fw.close()


def _uuid() -> str:
    import base64
    import uuid

    return base64.b64encode(uuid.uuid4().bytes).decode()


def test_tasks_that_end_while_their_agent_is_down_are_reported_once() -> None:
    # The command task's exit is kept for the next agent; the slot executor keeps its
    # TASK_FINISHED until it has subscribed again (unacknowledged_updates).
    with running_cluster(cpus=4.0, mem_mb=4096.0) as cluster:
        fw = RawFramework(cluster.address, name="kept", checkpoint=True, auto_acknowledge=True)
        try:
            agent_id = _launch_both(fw, "k", 1)
            cluster.restart_agent(agent_id, down_for=3).join(15)
            for task_id in ("k-cmd", "k-slot"):
                finished = _wait_state(fw, task_id, "TASK_FINISHED", timeout=30)
                assert finished["message"] == "Command exited with status 0"
            wait_until(lambda: cluster.agents[0].unacknowledged_updates(
                fw.framework_id or "", "k-slot") == [], timeout=10)
            for task_id in ("k-cmd", "k-slot"):
                assert [s["state"] for s in fw.updates(task_id)].count("TASK_FINISHED") == 1
        finally:
            fw.close()


def test_an_agent_down_past_the_ping_timeouts_is_unreachable_then_readmitted() -> None:
    # A dead agent answers no ping: the master marks it unreachable; recovered, it comes back.
    with running_cluster(agent_ping_timeout=0.2, max_agent_ping_timeouts=3) as cluster:
        fw = RawFramework(cluster.address, name="kept", checkpoint=True,
                          capabilities=["PARTITION_AWARE"], auto_acknowledge=True)
        try:
            fw.subscribe()
            offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
            fw.launch(offer, [command_task(offer, "t", "sleep 60")])
            _wait_state(fw, "t", "TASK_RUNNING")
            cluster.restart_agent(offer["agent_id"]["value"], down_for=2).join(15)
            gone = _wait_state(fw, "t", "TASK_UNREACHABLE")
            assert gone["message"] == "health check timed out"
            back = fw.wait_event(lambda e: e["type"] == "UPDATE" and e["update"]["status"].get(
                "reason") == "REASON_AGENT_REREGISTERED", timeout=15)["update"]["status"]
            assert back["state"] == "TASK_RUNNING"
            fw.call("KILL", kill={"task_id": {"value": "t"}})
            _wait_state(fw, "t", "TASK_KILLED")
        finally:
            fw.close()
