"""What telemetry costs: CPU per agent of serving ``/monitor/statistics``, and of the
framework's poller, at a 1 s interval (goal: under 1 % of a CPU each).

Run with ``python -m bench.telemetry_overhead`` (``--executors 8 --polls 200``). It starts
``--executors`` real command-executor-like processes (each a session of ``sh -c 'sleep …'``
with one child, as an AppRunner task's shell and script), then:

* **agent side**: builds the endpoint's answer (:class:`localmesos.monitor.ResourceMonitor`:
  one pass over ``/proc``, the sessions' figures) and encodes it as JSON, ``--polls`` times;
* **poller side**: the framework's :class:`framework._telemetry.monitor.StatisticsCollector`
  polls a real HTTP server (a thread of this process) that serves that answer, ``--polls``
  times, mapping every executor to a trial.

Each side's CPU is the thread CPU time (``time.thread_time``) of the thread doing it, divided by
the polls: CPU seconds per poll, which at one poll a second is the share of one CPU. The HTTP
server's own parsing is not in the agent figure (the embedded agent's HTTP server is shared with
the master and serves every endpoint).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
import json
import os
import subprocess
import threading
import time
from typing import Any

from disauto.framework.run import StatisticsCollector
from disauto.framework.run import TaskPlace
from disauto.localmesos.containerizer.monitor import ExecutorEntry
from disauto.localmesos.containerizer.monitor import ResourceMonitor


def _executors(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen(["sh", "-c", "sleep 600; true"], start_new_session=True)
            for _ in range(count)]


def agent_side(processes: Sequence[subprocess.Popen[bytes]], polls: int) -> tuple[float, Any]:
    """CPU seconds per answer of the agent; the last answer."""
    monitor = ResourceMonitor()
    entries = [ExecutorEntry("fw", f"trial-{i:04d}", f"Command Executor (Task: trial-{i:04d})",
                             f"trial-{i:04d}", p.pid, False, 1.0, 512 << 20)
               for i, p in enumerate(processes)]
    answer: Any = []
    started = time.thread_time()
    for _ in range(polls):
        answer = monitor.statistics(entries)
        json.dumps(answer)
    return (time.thread_time() - started) / polls, answer


def poller_side(answer: Any, polls: int) -> float:
    """CPU seconds per poll of the framework's collector against a real HTTP server."""
    body = json.dumps(answer).encode()
    state = json.dumps({"resources": {"cpus": 4.0}}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            payload = body if self.path.endswith("/monitor/statistics") else state
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}/slave(1)"
    places = [TaskPlace("agent-1", entry["executor_id"], i) for i, entry in enumerate(answer)]
    collector = StatisticsCollector(lambda: {"agent-1": endpoint}, lambda: "fw", lambda: places)
    collector.collect()
    started = time.thread_time()
    for _ in range(polls):
        collector.collect()
    spent = (time.thread_time() - started) / polls
    server.shutdown()
    return spent


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executors", type=int, default=8)
    parser.add_argument("--polls", type=int, default=200)
    args = parser.parse_args(argv)
    processes = _executors(args.executors)
    try:
        time.sleep(0.5)  # the shells have started their sleeps
        entries = sum(1 for entry in os.scandir("/proc") if entry.name.isdigit())
        agent, answer = agent_side(processes, args.polls)
        poller = poller_side(answer, args.polls)
    finally:
        for process in processes:
            process.kill()
            process.wait()
    with open("/proc/loadavg") as handle:
        load = handle.read().split()[0]
    print(f"executors {args.executors}, polls {args.polls}, processes on the machine "
          f"{entries}, load {load}")
    print(f"agent  /monitor/statistics: {agent * 1000:.2f} ms CPU per answer = "
          f"{agent * 100:.2f} % of a CPU at a 1 s interval")
    print(f"poller StatisticsCollector: {poller * 1000:.2f} ms CPU per poll   = "
          f"{poller * 100:.2f} % of a CPU at a 1 s interval")


if __name__ == "__main__":
    main()
