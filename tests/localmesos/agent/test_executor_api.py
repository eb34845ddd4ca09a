"""The v1 executor API of the embedded agents, with pymesos' real ``MesosExecutorDriver``.

Each test runs :mod:`tests.localmesos.executor_program` as a CUSTOM executor's command and drives
it from a scheduler (a raw HTTP one, or pymesos' ``MesosSchedulerDriver``). Every scheduler
event and every executor event is shape-checked (``running_cluster``; executor events strictly
against executor.proto, :mod:`tests.localmesos.executor_support`).

Mesos facts checked (apache/mesos 1.11): ``src/slave/slave.cpp`` (``executorEnvironment``,
``subscribe``, ``statusUpdate``/``___statusUpdate``, ``kill``, ``_shutdownExecutor``,
``executorTerminated``, ``sendExecutorTerminatedStatusUpdate``, ``registerExecutorTimeout``),
``src/master/master.cpp`` (``exitedExecutor``, ``executorMessage``), ``src/internal/evolve.cpp``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
import contextlib
from pathlib import Path
from typing import Any

import pytest

from disauto.localmesos.cluster import LocalCluster
from tests.localmesos.cluster_support import DRIVER_LOCK
from tests.localmesos.cluster_support import Drivers
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import RecordingScheduler
from tests.localmesos.cluster_support import framework_info
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import wait_until
from tests.localmesos.executor_support import PROGRAM_COMMAND
from tests.localmesos.executor_support import b64
from tests.localmesos.executor_support import executor_info
from tests.localmesos.executor_support import executor_task
from tests.localmesos.executor_support import pid_alive


pytestmark = pytest.mark.integration  # starts processes and servers


@contextlib.contextmanager
def framework(**cluster: Any) -> Iterator[tuple[LocalCluster, RawFramework]]:
    with running_cluster(**{"cpus": 2.0, **cluster}) as c:
        raw = RawFramework(c.address, auto_acknowledge=True)
        raw.subscribe()
        try:
            yield c, raw
        finally:
            raw.close()


def next_offer(raw: RawFramework, used: set[str]) -> dict[str, Any]:
    def fresh() -> dict[str, Any] | None:
        for offer in raw.offers():
            if offer["id"]["value"] not in used:
                return offer
        return None

    offer = wait_until(fresh, timeout=10)
    used.add(offer["id"]["value"])
    return offer


def status_of(raw: RawFramework, task_id: str, state: str, timeout: float = 15) -> dict[str, Any]:
    event = raw.wait_event(
        lambda e: e["type"] == "UPDATE"
        and e["update"]["status"]["task_id"]["value"] == task_id
        and e["update"]["status"]["state"] == state,
        timeout,
    )
    return dict(event["update"]["status"])


def running_pid(raw: RawFramework, task_id: str) -> int:
    status = status_of(raw, task_id, "TASK_RUNNING")
    return int(base64.b64decode(status["data"]))


def used_cpus(cluster: LocalCluster) -> float:
    return float(get_json(cluster, "/master/state")["slaves"][0]["used_resources"]["cpus"])


def test_one_executor_runs_three_tasks_in_one_process() -> None:
    with framework() as (cluster, raw):
        used: set[str] = set()
        pids = []
        container_pids = set()
        for n in range(3):
            offer = next_offer(raw, used)
            if n:
                assert offer["executor_ids"] == [{"value": "warm-1"}]
            raw.launch(offer, [executor_task(offer, f"t{n}")], refuse_seconds=0)
            pids.append(running_pid(raw, f"t{n}"))
            finished = status_of(raw, f"t{n}", "TASK_FINISHED")
            assert finished["source"] == "SOURCE_EXECUTOR"
            assert finished["agent_id"] == offer["agent_id"]
            assert "executor_id" not in finished  # pymesos sets none; Mesos adds none
            container_pids.add(finished["container_status"]["executor_pid"])
        # One process ran the three tasks (the executor's pid, and the command's, as Mesos
        # reports it in container_status; /bin/sh -c may stand between the two).
        assert len(set(pids)) == 1 and pid_alive(pids[0])
        assert len(container_pids) == 1
        assert [s["state"] for s in raw.updates("t1")] == ["TASK_RUNNING", "TASK_FINISHED"]
        # The idle executor keeps its resources (0.1 cpus) until it ends, as in Mesos.
        wait_until(lambda: abs(used_cpus(cluster) - 0.1) < 1e-9)
        agent_state = cluster.agents[0].state()
        executors = agent_state["frameworks"][0]["executors"]
        assert [e["id"] for e in executors] == ["warm-1"]
        sandbox = Path(executors[0]["directory"])
        assert (sandbox / "stdout").read_text().count("launch ") == 3
        counts = cluster.shape_checker.counts  # type: ignore[attr-defined]
        assert counts["executor:SUBSCRIBED"] == 1 and counts["executor:LAUNCH"] == 3
        assert counts["executor:ACKNOWLEDGED"] == 6


def test_executor_environment_is_mesos_executor_environment() -> None:
    with framework() as (cluster, raw):
        offer = next_offer(raw, set())
        command = f"env > executor.env; exec {PROGRAM_COMMAND}"
        executor = executor_info(command=command,
                                 shutdown_grace_period={"nanoseconds": 2_500_000_000})
        raw.launch(offer, [executor_task(offer, "env", executor=executor)])
        status_of(raw, "env", "TASK_FINISHED")
        sandbox = Path(cluster.agents[0].state()["frameworks"][0]["executors"][0]["directory"])
        env = dict(line.split("=", 1) for line in
                   (sandbox / "executor.env").read_text().splitlines() if "=" in line)
        assert env["MESOS_FRAMEWORK_ID"] == raw.framework_id
        assert env["MESOS_EXECUTOR_ID"] == "warm-1"
        assert env["MESOS_DIRECTORY"] == env["MESOS_SANDBOX"] == str(sandbox)
        assert env["MESOS_SLAVE_ID"] == offer["agent_id"]["value"]
        assert env["MESOS_AGENT_ENDPOINT"] == cluster.address
        assert env["MESOS_SLAVE_PID"] == f"slave(1)@{cluster.address}"
        assert env["MESOS_CHECKPOINT"] == "0"
        assert env["MESOS_HTTP_COMMAND_EXECUTOR"] == "0"
        assert env["MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD"] == "2.5secs"
        assert "MESOS_TASK_ID" not in env
        assert "MESOS_SUBSCRIPTION_BACKOFF_MAX" not in env  # only with checkpointing
        # Embedded only (a Mesos agent's is a constant): how often the executor hears from it.
        assert env["DISAUTO_EXECUTOR_HEARTBEAT_INTERVAL"] == "30mins"


def test_kill_goes_to_the_executor_which_keeps_running() -> None:
    with framework() as (cluster, raw):
        used: set[str] = set()
        offer = next_offer(raw, used)
        raw.launch(offer, [executor_task(offer, "hang", "hang")], refuse_seconds=0)
        pid = running_pid(raw, "hang")
        assert raw.call("KILL", kill={
            "task_id": {"value": "hang"},
            "kill_policy": {"grace_period": {"nanoseconds": 1_000_000}},
        }) == 202
        killed = status_of(raw, "hang", "TASK_KILLED")
        assert killed["source"] == "SOURCE_EXECUTOR"
        assert killed["message"] == "killed by the test executor"
        offer = next_offer(raw, used)
        raw.launch(offer, [executor_task(offer, "after")], refuse_seconds=0)
        assert running_pid(raw, "after") == pid
        status_of(raw, "after", "TASK_FINISHED")


def test_executor_crash_fails_its_tasks_and_sends_failure() -> None:
    with framework() as (cluster, raw):
        used: set[str] = set()
        offer = next_offer(raw, used)
        raw.launch(offer, [executor_task(offer, "hang", "hang")], refuse_seconds=0)
        pid = running_pid(raw, "hang")
        offer = next_offer(raw, used)
        raw.launch(offer, [executor_task(offer, "crash", "crash", code=3)], refuse_seconds=0)
        for task_id in ("hang", "crash"):
            failed = status_of(raw, task_id, "TASK_FAILED")
            assert failed["source"] == "SOURCE_AGENT"
            assert failed["reason"] == "REASON_EXECUTOR_TERMINATED"
            assert failed["message"] == "Executor terminated"
            assert failed["executor_id"] == {"value": "warm-1"}
        failure = raw.wait_event(lambda e: e["type"] == "FAILURE")["failure"]
        assert failure == {"agent_id": offer["agent_id"], "executor_id": {"value": "warm-1"},
                           "status": 3 << 8}
        assert not pid_alive(pid)
        wait_until(lambda: used_cpus(cluster) == 0.0)
        # The next task of that executor id starts a new executor.
        offer = next_offer(raw, used)
        raw.launch(offer, [executor_task(offer, "again")])
        assert running_pid(raw, "again") != pid
        status_of(raw, "again", "TASK_FINISHED")


def test_scheduler_shutdown_sends_shutdown_then_the_executor_ends() -> None:
    with framework() as (cluster, raw):
        offer = next_offer(raw, set())
        raw.launch(offer, [executor_task(offer, "hang", "hang")])
        pid = running_pid(raw, "hang")
        assert raw.call("SHUTDOWN", shutdown={"executor_id": {"value": "warm-1"},
                                              "agent_id": offer["agent_id"]}) == 202
        failure = raw.wait_event(lambda e: e["type"] == "FAILURE")["failure"]
        assert failure["executor_id"] == {"value": "warm-1"}
        failed = status_of(raw, "hang", "TASK_FAILED")
        assert failed["reason"] == "REASON_EXECUTOR_TERMINATED"
        sandbox = Path(cluster.agents[0].state()["frameworks"][0]["completed_executors"][0]
                       ["directory"])
        assert (sandbox / "shutdown").exists()
        wait_until(lambda: not pid_alive(pid))
        assert cluster.shape_checker.counts["executor:SHUTDOWN"] == 1  # type: ignore[attr-defined]


def test_teardown_shuts_the_executor_down() -> None:
    with framework() as (cluster, raw):
        offer = next_offer(raw, set())
        raw.launch(offer, [executor_task(offer, "hang", "hang")])
        pid = running_pid(raw, "hang")
        sandbox = Path(cluster.agents[0].state()["frameworks"][0]["executors"][0]["directory"])
        assert raw.call("TEARDOWN") == 202
        wait_until(lambda: (sandbox / "shutdown").exists())
        wait_until(lambda: not pid_alive(pid))
        wait_until(lambda: cluster.agents[0].running_tasks() == [])


def test_executor_killed_after_grace_when_it_ignores_shutdown() -> None:
    with framework(executor_registration_timeout=0.5) as (cluster, raw):
        offer = next_offer(raw, set())
        executor = executor_info(command="sleep 30")
        raw.launch(offer, [executor_task(offer, "never", executor=executor)])
        failed = status_of(raw, "never", "TASK_FAILED")
        assert failed["reason"] == "REASON_EXECUTOR_REGISTRATION_TIMEOUT"
        assert failed["message"] == "Executor did not register within 500ms"
        failure = raw.wait_event(lambda e: e["type"] == "FAILURE")["failure"]
        assert failure["status"] == 9  # SIGKILL, as a waitpid status


def test_messages_both_ways_with_pymesos_scheduler() -> None:
    with running_cluster(cpus=2.0) as cluster:
        drivers = Drivers()
        try:
            sched = RecordingScheduler()
            driver = drivers.start(cluster, sched, framework_info("messages"))
            offer = sched.wait_offers()[0]
            with DRIVER_LOCK:
                driver.launchTasks(offer["id"], [executor_task(offer, "talk", "message",
                                                               text="from-task")])
            sched.wait_state("talk", "TASK_FINISHED", timeout=15)
            sched.wait(lambda: sched.count("message") >= 1)
            with DRIVER_LOCK:
                driver.sendFrameworkMessage({"value": "warm-1"}, offer["agent_id"], b64("hi"))
            sched.wait(lambda: sched.count("message") >= 2)
            with sched.cond:
                messages = [args for name, args in sched.calls if name == "message"]
            texts = [base64.b64decode(args[2]).decode() for args in messages]
            assert texts == ["from-task", "echo:hi"]
            assert messages[0][0] == {"value": "warm-1"} and messages[0][1] == offer["agent_id"]
            # pymesos 0.3.15 has no shutdownExecutor: the agent is told directly, as the
            # master's SHUTDOWN does. pymesos turns FAILURE into executorLost(executor_id,
            # agent_id, status).
            cluster.agents[0].shutdown_executor(str(driver.framework_id), "warm-1")
            sched.wait(lambda: sched.count("executor_lost") == 1, timeout=15)
            with sched.cond:
                lost = next(args for name, args in sched.calls if name == "executor_lost")
            assert lost[0] == {"value": "warm-1"} and lost[1] == offer["agent_id"]
            assert isinstance(lost[2], int)
        finally:
            drivers.stop_all()
