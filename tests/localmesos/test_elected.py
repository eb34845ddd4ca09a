"""Embedded masters elected through a real ZooKeeper (``da-cluster --zk --master-only``): who
leads, what a master that does not lead answers, the registry a new leader recovers, and a
frozen leader that exits when thawed. Each master is a real process; ZooKeeper is Debian's."""

from __future__ import annotations

from collections.abc import Iterator
import http.client
import json
import os
from pathlib import Path
import random
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from disauto.common.zk_masters import contenders
from disauto.localmesos.master.master import Master
from disauto.localmesos.server.messages import Request
from disauto.localmesos.server.routes import Router
from tests.e2e.conftest import operator_call
from tests.zookeeper import free_port


pytestmark = [pytest.mark.integration]


def test_a_master_that_does_not_lead_redirects_or_says_none_leads() -> None:
    """``Master::Http::redirect``: 307 to the same path on the leader, ``/master/redirect`` to
    its base, 503 while none leads; ``/version`` and ``/health`` are any master's."""
    master = Master()
    router = Router(master)

    def answer(path: str, method: str = "GET") -> tuple[int, str | None, bytes]:
        response = router.dispatch(Request(method, path, "HTTP/1.1", {}, path=path.split("?")[0]))
        assert not hasattr(response, "events")
        return response.status, response.headers.get("Location"), response.body

    master.elected = False
    assert answer("/master/state")[:2] == (503, None)
    assert answer("/api/v1/scheduler", "POST")[2] == b"No leader elected"
    master.leader_address = "10.0.0.7:5050"
    assert answer("/master/state?jsonp=f")[:2] == (307, "//10.0.0.7:5050/master/state?jsonp=f")
    assert answer("/api/v1", "POST")[:2] == (307, "//10.0.0.7:5050/api/v1")
    assert answer("/master/redirect")[:2] == (307, "//10.0.0.7:5050")
    assert answer("/master/redirect/x")[0] == 404
    assert answer("/version")[0] == 200
    assert answer("/health")[0] == 200
    # Elected, reading its registry: not a redirect to the leader it replaces (maybe frozen).
    master.recovering, master.leader_address = True, None
    assert answer("/api/v1/scheduler", "POST")[:3:2] == (503, b"Master has not finished recovery")
    master.recovering = False
    master.elected = True
    assert answer("/master/state")[0] == 200


class Masters:
    """``da-cluster --zk URL --master-only`` processes on ports of their own."""

    def __init__(self, zk: str, work: Path) -> None:
        self.zk = zk
        self.work = work
        self.processes: dict[int, subprocess.Popen[str]] = {}

    def start(self, port: int = 0) -> int:
        port = port or free_port()
        process = subprocess.Popen(  # noqa: S603 - our own module
            [sys.executable, "-m", "disauto.localmesos.cli", "--zk", self.zk, "--master-only",
             "--port", str(port), "--zk-session-timeout", "3secs"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith(f"Master: 127.0.0.1:{port} (contending under {self.zk}"), line
        self.processes[port] = process
        return port

    def leader(self, within: float = 30.0) -> int:
        """The port of the master that leads and serves as the leader."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            found = contenders(self.zk)
            if found:
                port = int(found[0].address.rsplit(":", 1)[1])
                if get(port, "/master/state")[0] == 200:
                    return port
            time.sleep(0.1)
        raise AssertionError(f"no master led within {within}s")

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGCONT)
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


def get(port: int, path: str) -> tuple[int, str | None]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status, response.getheader("Location")
    except OSError:
        return 0, None
    finally:
        conn.close()


@pytest.fixture
def masters(zookeeper: Any, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Masters]:
    group = Masters(zookeeper.url(f"/elected-{request.node.name[:40]}"), tmp_path)
    yield group
    group.stop()


QUOTA = {"type": "UPDATE_QUOTA", "update_quota": {"force": True, "quota_configs": [
    {"role": "dev", "guarantees": {"cpus": {"value": 1}}, "limits": {"cpus": {"value": 2}}}]}}
MAINTENANCE = {"type": "UPDATE_MAINTENANCE_SCHEDULE", "update_maintenance_schedule": {
    "schedule": {"windows": [{"machine_ids": [{"hostname": "rack1-host"}],
                              "unavailability": {"start": {"nanoseconds": 1}}}]}}}


def test_a_new_leader_recovers_the_registry_after_a_kill_9(masters: Masters) -> None:
    first = masters.start()
    second = masters.start()
    assert masters.leader() == first
    assert get(second, "/master/state") == (307, f"//127.0.0.1:{first}/master/state")
    assert get(second, "/master/redirect") == (307, f"//127.0.0.1:{first}")
    operator_call(f"http://127.0.0.1:{first}", QUOTA)
    operator_call(f"http://127.0.0.1:{first}", MAINTENANCE)
    masters.processes[first].kill()  # kill -9: its ZooKeeper session lapses after 3 s
    assert masters.leader() == second
    url = f"http://127.0.0.1:{second}"
    quota = operator_call(url, {"type": "GET_QUOTA"})["get_quota"]["status"]["configs"]
    assert quota == [{"role": "dev", "guarantees": {"cpus": {"value": 1.0}},
                      "limits": {"cpus": {"value": 2.0}}}]
    schedule = operator_call(url, {"type": "GET_MAINTENANCE_SCHEDULE"})
    windows = schedule["get_maintenance_schedule"]["schedule"]["windows"]
    assert windows[0]["machine_ids"] == [{"hostname": "rack1-host"}]
    listed = subprocess.run(
        [sys.executable, "-m", "disauto.localmesos.cli", "master", "list", "--zk", masters.zk],
        capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    assert listed[0].split() == ["ADDRESS", "LEADS", "ZNODE", "PID"]
    assert listed[1].split()[:2] == [f"127.0.0.1:{second}", "yes"] and len(listed) == 2


def test_a_frozen_leader_is_replaced_and_exits_in_one_line_when_thawed(masters: Masters) -> None:
    first = masters.start()
    second = masters.start()
    assert masters.leader() == first
    frozen = masters.processes[first]
    os.killpg(frozen.pid, signal.SIGSTOP)
    assert masters.leader() == second  # once the frozen one's session expired
    os.killpg(frozen.pid, signal.SIGCONT)
    assert frozen.wait(30) == 1
    assert frozen.stderr is not None
    said = frozen.stderr.read().strip().splitlines()
    assert said[-1].startswith("da-cluster: error: lost candidacy as a leading master: "), said
    assert "Traceback" not in "\n".join(said)
    assert masters.leader() == second


def test_no_zookeeper_and_bad_flags_are_one_line(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "disauto.localmesos.cli", *args],
                              capture_output=True, text=True, timeout=60, check=False)

    unreachable = run("--zk", "zk://127.0.0.1:1/mesos", "--master-only", "--port", "0")
    assert unreachable.returncode == 1
    assert unreachable.stderr.strip() == (
        "da-cluster: error: --zk: no ZooKeeper server answers at 127.0.0.1:1 within 10s")
    assert run("--masters", "3").stderr.strip() == (
        "da-cluster: error: --masters and --master-only need --zk zk://HOST:PORT/PATH")
    assert run("--zk", "zk://x/mesos").stderr.strip() == (
        "da-cluster: error: --zk: 'zk://x/mesos': 'x' is not HOST:PORT")
    listed = run("master", "list", "--zk", "zk://127.0.0.1:1/m", "--timeout", "1s")
    assert (listed.returncode, listed.stderr.strip()) == (
        1, "da-cluster master: error: no ZooKeeper server answers at 127.0.0.1:1 within 1s")
    assert json.loads(run("master", "list", "--zk", "zk://127.0.0.1:1/m", "--json",
                          "--timeout", "1s").stdout or "{}") == {}


def master_child(port: int) -> int:
    """The pid of the ``--master-only`` process serving ``port`` (from /proc)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--master-only" in argv and str(port).encode() in argv:
            return int(entry.name)
    raise AssertionError(f"no master process on port {port}")


def active_agents(port: int) -> int:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/master/slaves")
        agents = json.loads(conn.getresponse().read())["slaves"]
    except (OSError, ValueError, KeyError):
        return 0
    return sum(1 for agent in agents if agent.get("active"))


def test_da_cluster_masters_3_elects_restarts_a_killed_master_and_moves_the_agents(
        zookeeper: Any, tmp_path: Path) -> None:
    zk = zookeeper.url("/elected-masters-3")
    base = consecutive_free_ports(4)
    cluster = subprocess.Popen(  # noqa: S603 - our own module
        [sys.executable, "-m", "disauto.localmesos.cli", "--zk", zk, "--masters", "3",
         "--port", str(base), "--agents", "2", "--zk-session-timeout", "3secs",
         "--work-dir", str(tmp_path / "agents")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert cluster.stdout is not None
        masters = cluster.stdout.readline().strip()
        if not masters:
            cluster.wait(30)
            raise AssertionError(cluster.stderr.read() if cluster.stderr else "")
        assert masters == (f"Masters: 127.0.0.1:{base}, 127.0.0.1:{base + 1}, "
                           f"127.0.0.1:{base + 2} (elected through {zk})")
        assert cluster.stdout.readline().strip() == f"Agents: 127.0.0.1:{base + 3}"
        group = Masters(zk, tmp_path)
        first = group.leader()
        until_true(lambda: active_agents(first) == 2, 30)
        assert len(contenders(zk)) == 3
        os.kill(master_child(first), signal.SIGKILL)
        second = group.leader()
        assert second != first
        until_true(lambda: active_agents(second) == 2, 30)  # the agents moved at once
        until_true(lambda: len(contenders(zk)) == 3, 30)  # the killed one was started again
        assert get(first, "/master/state") == (307, f"//127.0.0.1:{second}/master/state")
    finally:
        os.killpg(cluster.pid, signal.SIGTERM)
        assert cluster.wait(60) == 0
    assert cluster.stderr is not None
    said = cluster.stderr.read()
    assert f"the master on port {first} exited (-9); starting it again" in said, said
    assert "Traceback" not in said


def consecutive_free_ports(count: int) -> int:
    """The first of ``count`` consecutive free ports below the kernel's ephemeral range (one
    in it could be taken by an outgoing connection before the master binds it, and the
    masters restarted on theirs must find them free again)."""
    for base in random.sample(range(21000, 30000 - count), 200):
        probes = [socket.socket() for _ in range(count)]
        try:
            for offset, probe in enumerate(probes):
                probe.bind(("127.0.0.1", base + offset))
        except OSError:
            continue
        finally:
            for probe in probes:
                probe.close()
        return base
    raise RuntimeError(f"no {count} consecutive free ports")


def until_true(predicate: Any, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {within}s")
