"""The framework's collector of ``/monitor/statistics`` against real agents: an embedded agent
running a real busy task, an agent that cannot be reached (a closed port) and servers that
answer garbage."""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path
import socket
import sys
import threading
import time

import pytest

from disauto.common import telemetry
from disauto.common.telemetry import Sample
from disauto.framework._job.book import TrialBook
from disauto.framework._store import JobStore
from disauto.framework._telemetry import monitor
from disauto.framework._telemetry.monitor import StatisticsCollector
from disauto.framework._telemetry.monitor import TaskPlace
from disauto.framework._telemetry.monitor import TelemetryLoop
from disauto.framework._telemetry.processors import CpuUtilization
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration  # starts agents, processes and HTTP servers

BUSY = f"exec {sys.executable} -c 'while True: pass'"
GARBAGE = {
    "/html/monitor/statistics": (b"<html>not JSON</html>", "text/html"),
    "/object/monitor/statistics": (b'{"unexpected": 1}', "application/json"),
    "/entries/monitor/statistics": (b'[1, "x", {"statistics": "nope"}, {"executor_id": 3}]',
                                    "application/json"),
    "/truncated/monitor/statistics": (b'[{"executor_id": "t", "statis', "application/json"),
}


class _Garbage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's API
        body, kind = GARBAGE.get(self.path, (b'{"resources": {"cpus": 2}}', "application/json"))
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def garbage_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Garbage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def busy_task() -> Iterator[tuple[str, str, str]]:
    """A real task spinning one CPU on an embedded agent of 2 CPUs: (endpoint, agent id,
    framework id)."""
    with running_cluster(cpus=2.0) as cluster:
        raw = RawFramework(cluster.address, auto_acknowledge=True)
        try:
            framework_id = raw.subscribe()
            offer = raw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
            assert raw.launch(offer, [command_task(offer, "busy", BUSY, cpus=1.0)]) == 202
            wait_until(lambda: any(s["state"] == "TASK_RUNNING" for s in raw.updates("busy")),
                       timeout=30)
            yield (f"http://{cluster.address}/slave(1)", offer["agent_id"]["value"],
                   framework_id)
        finally:
            raw.close()


def _named(samples: list[Sample], name: str) -> list[Sample]:
    return [s for s in samples if s.data_name == name]


def _poll_twice(collector: StatisticsCollector) -> list[Sample]:
    """Two polls a measuring interval apart (utilisation is a rate between two polls): the
    second poll's samples, with the per-trial ``cpu_utilization`` that the built-in processor
    derives from both."""
    first = collector.collect()
    assert _named(first, telemetry.MEM_RSS), first
    threading.Event().wait(1.5)
    second = collector.collect()
    inputs = [s for s in first + second if s.data_name in CpuUtilization.INPUTS]
    return second + CpuUtilization()(inputs)


def test_agent_cpu_utilization_of_a_busy_task_is_about_busy_over_cpus() -> None:
    with busy_task() as (endpoint, agent_id, framework_id):
        collector = StatisticsCollector(lambda: {agent_id: endpoint}, lambda: framework_id,
                                        lambda: [TaskPlace(agent_id, "busy", 1)])
        samples = _poll_twice(collector)
    (agent,) = _named(samples, telemetry.AGENT_CPU_UTILIZATION)
    assert agent.trial is None and agent.node == agent_id
    (trial,) = _named(samples, telemetry.CPU_UTILIZATION)
    # The spinning task uses at most its one core (how much of it depends on the machine's
    # load, which this test does not own); the agent's utilisation is its tasks' busy time
    # over its 2 CPUs, from the same two polls.
    assert trial.trial == 1 and 0.02 <= trial.value <= 1.1, trial
    assert agent.value == pytest.approx(trial.value / 2, abs=0.01), (agent, trial)


def test_unreachable_and_garbage_agents_are_skipped_and_the_others_read() -> None:
    with busy_task() as (endpoint, agent_id, framework_id), garbage_server() as garbage:
        endpoints = {agent_id: endpoint,
                     "closed": f"http://127.0.0.1:{closed_port()}/slave(1)",
                     **{name: garbage + "/" + name for name in ("html", "object", "entries",
                                                                "truncated")}}
        places = [TaskPlace(agent_id, "busy", 1)] + [
            TaskPlace(name, "t", n) for n, name in enumerate(sorted(endpoints), start=2)
            if name != agent_id]
        collector = StatisticsCollector(lambda: endpoints, lambda: framework_id,
                                        lambda: places, timeout=5.0)
        started = time.monotonic()
        samples = _poll_twice(collector)
        assert time.monotonic() - started < 30  # a closed port is refused, not waited on
    assert {s.node for s in samples} == {agent_id}
    assert {s.trial for s in samples} == {1, None}
    assert _named(samples, telemetry.MEM_RSS) and _named(samples, telemetry.CPU_UTILIZATION)


def test_the_loop_holds_its_live_trials_and_the_last_ended_not_every_finished_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(monitor, "ENDED_KEPT", 50)
    store = JobStore(tmp_path / "job.db")
    book = TrialBook(store)
    book.add([(n, {"lr": 0.1}, 0) for n in range(1, 302)])
    loop = TelemetryLoop([], book)
    mb = 1 << 20
    try:
        loop.record_samples([Sample(telemetry.MEM_RSS, "agent-1", 0.0, 7 * mb, trial=1)])
        for n in range(2, 302):  # trial 1 runs on; 300 trials end one after the other
            loop.record_samples([Sample(telemetry.MEM_RSS, "agent-1", float(n), n * mb,
                                        trial=n)])
            loop.trial_ended(n)
            assert loop.held <= 1 + 50
        assert loop.held == 1 + 50
        # What went is in the record; the live trial and the last ended ones are still held.
        assert [book.require(n).usage.peak_rss_bytes for n in (1, 2, 301)] == \
            [7 * mb, 2 * mb, 301 * mb]
        assert loop.memory_note(301) == "measured peak 301 MB"
        assert loop.memory_note(1) == "measured peak 7 MB"
        assert loop.memory_note(2) == ""
        # A trial launched again after its summary went starts a new one.
        loop.record_samples([Sample(telemetry.MEM_RSS, "agent-1", 400.0, 3 * mb, trial=2)])
        assert loop.memory_note(2) == "measured peak 3 MB"
    finally:
        store.close()
