"""Agents in another process than their master (``da-cluster --agents-only``), talking to it over
HTTP as libprocess messages (:mod:`localmesos.agent_host`, :mod:`localmesos.protocol.libprocess`).

Real processes where the point is a process' death: a master ``da-cluster --agents 0`` and an
agents' ``da-cluster --agents-only`` run a command task end to end; the master is killed with
``kill -9`` and started again on its port, and its agent comes back with its running task, whose
updates reach the framework through the new master. In one process (real HTTP, the same
messages): a new master named by the detector gets the agents at once; a cut network drops the
master's messages; the master's message endpoints refuse what is not a message.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import http.client
import json
from pathlib import Path
import time
from typing import Any

import pytest

from disauto.framework._sandbox_logs import SandboxLogs
from disauto.localmesos.agent_host import AgentHost
from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster
from disauto.localmesos.cluster_process import AgentsProcess
from disauto.localmesos.cluster_process import ClusterProcess
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration

#: The master's agent health flags: an agent takes the master for lost 3 s after its last ping.
QUICK_PINGS = ("--agent-ping-timeout", "1secs", "--max-agent-ping-timeouts", "3")
POSIX = "posix/cpu,posix/mem"


def _get(address: str, path: str) -> Any:
    conn = http.client.HTTPConnection(*address.split(":"), timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    assert response.status == 200, (path, response.status, body)
    return json.loads(body)


def _post(address: str, path: str, body: bytes, method: str = "POST") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(*address.split(":"), timeout=10)
    try:
        conn.request(method, path, body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _task_update(fw: RawFramework, task_id: str, state: str, start: int = 0,
                 timeout: float = 20.0) -> dict[str, Any]:
    event = fw.wait_event(lambda e: e["type"] == "UPDATE" and e["update"]["status"][
        "task_id"]["value"] == task_id and e["update"]["status"]["state"] == state,
        timeout=timeout, start=start)
    return dict(event["update"]["status"])


def _agents_of(master: str) -> list[dict[str, Any]]:
    return list(_get(master, "/master/slaves")["slaves"])


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[tuple[ClusterProcess, AgentsProcess]]:
    """A master alone (``--agents 0``) and one agent in a process of its own."""
    master = ClusterProcess(tmp_path / "master", ("--agents", "0", "--allocation-interval",
                                                  "200ms", *QUICK_PINGS, "--verbose"),
                            log=tmp_path / "master.log")
    agents = AgentsProcess(tmp_path / "agents", master.address,
                           ("--agents", "1", "--cpus", "2", "--mem", "1GB", "--gpus", "0",
                            "--isolation", POSIX, "--verbose"), log=tmp_path / "agents.log")
    try:
        yield master, agents
    finally:
        agents.kill()
        master.kill()


def _logs(tmp_path: Path) -> str:
    return "\n".join(f"--- {name}\n" + (tmp_path / name).read_text()[-4000:]
                     for name in ("master.log", "agents.log") if (tmp_path / name).exists())


def test_an_agent_of_another_process_registers_at_its_own_pid_and_runs_a_command_task(
        processes: tuple[ClusterProcess, AgentsProcess], tmp_path: Path) -> None:
    master, agents = processes
    master.start()
    agents.start()
    slaves = wait_until(lambda: _agents_of(master.address), timeout=20)
    assert [agent["pid"] for agent in slaves] == [f"slave(1)@{agents.address}"], _logs(tmp_path)
    assert slaves[0]["port"] == agents.port
    state = _get(master.address, "/master/state")
    assert [agent["pid"] for agent in state["slaves"]] == [f"slave(1)@{agents.address}"]
    fw = RawFramework(master.address, auto_acknowledge=True)
    try:
        fw.subscribe()
        offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
        address = offer["url"]["address"]
        assert (address["ip"], address["port"], offer["url"]["path"]) == (
            "127.0.0.1", agents.port, "/slave(1)")
        fw.launch(offer, [command_task(offer, "hello", "echo hello from $MESOS_AGENT_ENDPOINT")])
        status = _task_update(fw, "hello", "TASK_FINISHED")
        assert [u["state"] for u in fw.updates("hello")] == [
            "TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"], _logs(tmp_path)
        # The framework's own reader finds the sandbox through the offer's url: the agents'
        # process serves the agent's /state and /files.
        logs = SandboxLogs()
        logs.remember([offer])
        assert logs.tail(status, fw.framework_id or "", "stdout") == (
            f"hello from {agents.address}")
    finally:
        fw.close()


def test_an_agent_outlives_its_master_and_reregisters_its_running_task_with_the_next_one(
        processes: tuple[ClusterProcess, AgentsProcess], tmp_path: Path) -> None:
    master, agents = processes
    master.start()
    agents.start()
    wait_until(lambda: _agents_of(master.address), timeout=20)
    go = tmp_path / "go"
    command = f"echo started; while [ ! -e {go} ]; do sleep 0.1; done; echo done"
    fw = RawFramework(master.address, auto_acknowledge=True, failover_timeout=300.0)
    fw.subscribe()
    offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
    fw.launch(offer, [command_task(offer, "survivor", command)])
    _task_update(fw, "survivor", "TASK_RUNNING")
    framework_id = fw.framework_id
    fw.close()
    master.kill()  # kill -9: the master is gone, its agent and the task live on
    master.start()  # the same port, a new master that knows nothing
    lost_at = time.monotonic()
    # No pings for 3 s: the agent takes the master for lost and re-registers (backoff ~1 s).
    slaves = wait_until(lambda: _agents_of(master.address), timeout=20)
    assert time.monotonic() - lost_at < 15, _logs(tmp_path)
    assert [agent["pid"] for agent in slaves] == [f"slave(1)@{agents.address}"]
    again = RawFramework(master.address, framework_id=framework_id, auto_acknowledge=True,
                         failover_timeout=300.0)
    try:
        assert again.subscribe() == framework_id  # the framework fails over to the new master
        state = _get(master.address, "/master/state")
        tasks = {t["id"]: t["state"] for f in state["frameworks"] for t in f["tasks"]}
        assert tasks == {"survivor": "TASK_RUNNING"}, _logs(tmp_path)
        go.touch()  # the task ends now: its updates go to the new master and on
        status = _task_update(again, "survivor", "TASK_FINISHED")
        assert status["agent_id"]["value"] == slaves[0]["id"]
        wait_until(lambda: {t["id"]: t["state"] for f in _get(
            master.address, "/master/state")["frameworks"] for t in f["completed_tasks"]} == {
            "survivor": "TASK_FINISHED"}, timeout=10)
    finally:
        again.close()


# -- in one process -------------------------------------------------------------------------


def _master(**overrides: Any) -> LocalCluster:
    settings: dict[str, Any] = {"agents": 0, "allocation_interval": 0.1, "isolation": POSIX}
    settings.update(overrides)
    return LocalCluster(ClusterConfig(**settings))


def _host(leader: Any, **overrides: Any) -> AgentHost:
    settings: dict[str, Any] = {"agents": 1, "cpus": 2.0, "mem_mb": 1024.0,
                                "disk_mb": 4096.0, "isolation": POSIX,
                                "status_update_retry_interval": 1.0}
    settings.update(overrides)
    return AgentHost(ClusterConfig(**settings), leader, detect_interval=0.2)


def test_agents_reregister_at_once_with_a_new_master_the_detector_names() -> None:
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(_master())
        second = stack.enter_context(_master())
        leading = [first.address]
        host = stack.enter_context(_host(lambda: leading[0]))
        assert host.wait_registered(10)
        fw = RawFramework(first.address, auto_acknowledge=True, failover_timeout=300.0)
        stack.callback(fw.close)
        fw.subscribe()
        offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
        fw.launch(offer, [command_task(offer, "long", "sleep 60")])
        _task_update(fw, "long", "TASK_RUNNING")
        leading[0] = second.address  # the election's detector names another master
        wait_until(lambda: second.master.agents, timeout=5)  # not a ping timeout: at once
        again = RawFramework(second.address, framework_id=fw.framework_id,
                             auto_acknowledge=True, failover_timeout=300.0)
        stack.callback(again.close)
        again.subscribe()
        with second.master.lock:
            tasks = {t.task_id: t.state for f in second.master.frameworks.values()
                     for t in f.tasks.values()}
        assert tasks == {"long": "TASK_RUNNING"}
        start = len(again.events)
        assert again.call("KILL", kill={"task_id": {"value": "long"},
                                        "agent_id": offer["agent_id"]}) == 202
        _task_update(again, "long", "TASK_KILLED", start=start)


def test_a_restarted_agent_of_a_host_reregisters_its_task_and_takes_messages_again() -> None:
    with _master() as master, _host(lambda: master.address) as host:
        assert host.wait_registered(10)
        fw = RawFramework(master.address, auto_acknowledge=True, checkpoint=True)
        try:
            fw.subscribe()
            offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
            fw.launch(offer, [command_task(offer, "kept", "sleep 60")])
            _task_update(fw, "kept", "TASK_RUNNING")
            agent_id = host.agents[0].id
            before = master.master.agents[agent_id].agent
            host.admin_act("restart", agent_id, 0.2)
            # No connection broke: the master learns of the restart from the re-registration.
            wait_until(lambda: master.master.agents[agent_id].agent is not before, timeout=10)
            start = len(fw.events)
            assert fw.call("KILL", kill={"task_id": {"value": "kept"},
                                         "agent_id": offer["agent_id"]}) == 202
            _task_update(fw, "kept", "TASK_KILLED", start=start)
        finally:
            fw.close()


def test_a_cut_network_drops_the_masters_messages_until_it_heals() -> None:
    with _master(agent_ping_timeout=0.2, max_agent_ping_timeouts=3) as master, \
            _host(lambda: master.address) as host:
        assert host.wait_registered(10)
        agent_id = host.agents[0].id
        host.fleet.partition(agent_id)
        # Pings (messages to the agent's host) and pongs are lost: unreachable.
        wait_until(lambda: agent_id in master.master.unreachable, timeout=10)
        assert host.admin_agents() == [{"id": agent_id, "hostname": "127.0.0.1",
                                         "partitioned": True}]
        host.fleet.heal(agent_id)
        wait_until(lambda: agent_id in master.master.agents, timeout=10)


def test_the_masters_message_endpoints_answer_as_libprocess_and_a_retried_registration(
) -> None:
    with _master() as cluster:
        info = {"hostname": "127.0.0.1", "port": 5051, "attributes": [],
                "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 1},
                               "role": "*"}]}
        body = json.dumps({"pid": "slave(1)@127.0.0.1:9", "info": info}).encode()
        path = "/master/disauto.internal.RegisterAgent"
        status, first = _post(cluster.address, path, body)
        assert status == 200
        status, second = _post(cluster.address, path, body)  # its answer was lost: again
        assert status == 200
        assert json.loads(first)["agent_id"] == json.loads(second)["agent_id"]
        assert json.loads(first)["total_ping_timeout"] == cluster.master.total_ping_timeout
        [agent] = _get(cluster.address, "/master/slaves")["slaves"]
        assert agent["pid"] == "slave(1)@127.0.0.1:9" and agent["port"] == 9
        assert _post(cluster.address, path, b"[]")[0] == 400
        assert _post(cluster.address, path, b'{"pid": "nowhere", "info": {}}')[0] == 400
        assert _post(cluster.address, path, b"", method="PUT")[0] == 405
        assert _post(cluster.address, "/master/disauto.internal.Nothing", b"{}")[0] == 404
        status, _ = _post(cluster.address, "/master/disauto.internal.PongAgent",
                          b'{"agent_id": "unknown"}')
        assert status == 202
        cluster.master.elected = False  # another master leads: agents are ignored
        assert _post(cluster.address, path, body)[0] == 503


def test_the_agents_host_serves_its_agents_and_refuses_what_is_not_theirs() -> None:
    with _master() as master, _host(lambda: master.address, agents=2) as host:
        assert host.wait_registered(10)
        state = _get(host.address, "/slave(2)/state")
        assert state["id"] == host.agents[1].id
        assert _get(host.address, "/slave(1)/monitor/statistics") == []
        assert _post(host.address, "/slave(3)/disauto.internal.PingAgent",
                     b'{"connected": true}')[0] == 404
        assert _post(host.address, "/slave(1)/disauto.internal.Nothing", b"{}")[0] == 404
        assert _post(host.address, "/slave(1)/disauto.internal.PingAgent", b"[]")[0] == 400
        assert _post(host.address, "/slave(1)/state", b"")[0] == 405
        assert _post(host.address, "/master/state", b"", method="GET")[0] == 404
        assert _get(host.address, "/localmesos/agents")["agents"][0]["id"] == host.agents[0].id
