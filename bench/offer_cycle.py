"""Offer-cycle benchmark of the embedded master: 10 pymesos frameworks × 100 agents.

Run with ``python -m bench.offer_cycle`` (``make bench``). It starts a :class:`LocalCluster`
with the default 1 s allocation interval and measures, with pymesos's real driver:

1. **Allocation run**: how long one steady-state batch allocation (100 agents offered to 10
   frameworks by DRF) takes in the master (its own timer).
2. **Offer cycle**: every framework declines every offer with ``refuse_seconds: 0``; after a
   warm-up of two intervals, the time from a DECLINE until that agent is offered again (a
   DECLINE does not trigger an allocation, so this is about one batch interval), the master's
   allocation runs in that window, and how many OFFERS events each framework receives per run.
3. **ACCEPT → TASK_RUNNING**: from the ``launchTasks`` call to the TASK_RUNNING callback.
4. **Task exit → re-offered**: a task taking a whole agent exits; from the exit (the agent's
   TASK_FINISHED timestamp) until that agent's resources arrive in an OFFERS event.

Results are printed as a table. Driver calls go through one lock, with explicit
acknowledgements, because pymesos 0.3.15 shares its request headers between drivers.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
import logging
import os
import pwd
import statistics
import sys
import threading
import time
from typing import Any

from pymesos import MesosSchedulerDriver

from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster
from disauto.localmesos.master.views.state import format_duration


CALL_LOCK = threading.Lock()
USER = pwd.getpwuid(os.geteuid()).pw_name


@dataclass
class Samples:
    """Latency samples (seconds) of one metric."""

    name: str
    values: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, value: float) -> None:
        with self.lock:
            self.values.append(value)

    def row(self, unit: float = 1000.0) -> str:
        values = sorted(self.values)
        if not values:
            return f"{self.name:<38} {0:>6}" + "       -" * 5

        def pick(q: float) -> float:
            return values[min(len(values) - 1, int(q * len(values)))] * unit

        return (
            f"{self.name:<38} {len(values):>6} {statistics.fmean(values) * unit:>7.1f} "
            f"{pick(0.5):>7.1f} {pick(0.9):>7.1f} {pick(0.99):>7.1f} {values[-1] * unit:>7.1f}"
        )


class BenchScheduler:
    """One framework of the benchmark (pymesos callbacks on its driver's IO thread)."""

    def __init__(self, bench: Bench, index: int) -> None:
        self.bench = bench
        self.index = index
        self.driver: Any = None
        self.ready = threading.Event()
        self.launched = 0
        self.pending_launch: dict[str, float] = {}
        self.offer_events = 0

    # -- pymesos callbacks ---------------------------------------------------------------

    def registered(self, driver: Any, framework_id: Any, master_info: Any) -> None:
        self.ready.set()

    def reregistered(self, driver: Any, master_info: Any) -> None:
        self.ready.set()

    def disconnected(self, driver: Any) -> None:
        pass

    def processHeartBeat(self, driver: Any) -> None:  # noqa: N802 - pymesos API
        pass

    def offerRescinded(self, driver: Any, offer_id: Any) -> None:  # noqa: N802
        pass

    def error(self, driver: Any, message: str) -> None:
        logging.getLogger(__name__).error("framework %d: %s", self.index, message)

    def resourceOffers(self, driver: Any, offers: list[dict[str, Any]]) -> None:  # noqa: N802
        now = time.monotonic()
        self.offer_events += 1
        bench = self.bench
        for offer in offers:
            bench.offered(offer["agent_id"]["value"], now)
        if bench.phase == "launch" and self.launched < bench.tasks_per_framework:
            launch = offers[: bench.tasks_per_framework - self.launched]
            rest = offers[len(launch):]
        else:
            launch, rest = [], offers
        with CALL_LOCK:
            for offer in launch:
                self.launched += 1
                task_id = f"f{self.index}-t{self.launched}"
                resources = [
                    r for r in offer["resources"]
                    if r["name"] in ("cpus", "mem") and r["type"] == "SCALAR"
                ]
                task = {
                    "name": task_id,
                    "task_id": {"value": task_id},
                    "agent_id": offer["agent_id"],
                    "resources": resources,
                    "command": {"value": f"sleep {bench.task_seconds}"},
                }
                self.pending_launch[task_id] = time.monotonic()
                driver.launchTasks(offer["id"], [task], {"refuse_seconds": 0})
            if rest:
                declined = time.monotonic()
                for offer in rest:
                    bench.declined(offer["agent_id"]["value"], declined)
                driver.declineOffer([o["id"] for o in rest], {"refuse_seconds": 0})

    def statusUpdate(self, driver: Any, status: dict[str, Any]) -> None:  # noqa: N802
        now = time.monotonic()
        task_id = status["task_id"]["value"]
        state = status["state"]
        if state == "TASK_RUNNING" and task_id in self.pending_launch:
            self.bench.accept_to_running.add(now - self.pending_launch.pop(task_id))
        elif state == "TASK_FINISHED":
            # The agent stamps the update when the command exits (wall clock).
            exited = now - (time.time() - float(status["timestamp"]))
            self.bench.exited(status["agent_id"]["value"], exited)
        elif state in ("TASK_FAILED", "TASK_ERROR", "TASK_LOST", "TASK_KILLED"):
            self.bench.failures += 1
        if "uuid" in status:
            with CALL_LOCK:
                driver.acknowledgeStatusUpdate(status)


class Bench:
    """Drives the phases and keeps the samples."""

    def __init__(self, tasks_per_framework: int, task_seconds: float) -> None:
        self.phase = "warmup"
        self.tasks_per_framework = tasks_per_framework
        self.task_seconds = task_seconds
        self.lock = threading.Lock()
        self.decline_times: dict[str, float] = {}
        self.exit_times: dict[str, float] = {}
        self.decline_to_offer = Samples("decline -> offered again")
        self.accept_to_running = Samples("ACCEPT -> TASK_RUNNING")
        self.exit_to_offer = Samples("task exit -> resources offered again")
        self.failures = 0

    def declined(self, agent_id: str, when: float) -> None:
        with self.lock:
            if self.phase == "decline":
                self.decline_times[agent_id] = when

    def exited(self, agent_id: str, when: float) -> None:
        with self.lock:
            self.exit_times[agent_id] = when

    def offered(self, agent_id: str, when: float) -> None:
        with self.lock:
            declined = self.decline_times.pop(agent_id, None)
            exited = self.exit_times.pop(agent_id, None)
        if declined is not None and self.phase == "decline":
            self.decline_to_offer.add(when - declined)
        if exited is not None:
            self.exit_to_offer.add(when - exited)


def run(
    *,
    frameworks: int,
    agents: int,
    interval: float,
    decline_seconds: float,
    tasks_per_framework: int,
    task_seconds: float,
) -> int:
    """Run the benchmark and print its table; returns an exit status."""
    bench = Bench(tasks_per_framework, task_seconds)
    config = ClusterConfig(
        agent_configs=tuple(
            AgentConfig(
                cpus=4.0, mem_mb=4096.0, disk_mb=1024.0, ports=((31000 + i * 10, 31009 + i * 10),)
            )
            for i in range(agents)
        ),
        allocation_interval=interval,
    )
    schedulers = [BenchScheduler(bench, i) for i in range(frameworks)]
    with LocalCluster(config) as cluster:
        for sched in schedulers:
            info = {"user": USER, "name": f"bench-{sched.index}"}
            sched.driver = MesosSchedulerDriver(
                sched, info, cluster.address, implicit_acknowledgements=False
            )
            sched.driver.start()
        try:
            for sched in schedulers:
                if not sched.ready.wait(30):
                    print("a framework did not register", file=sys.stderr)
                    return 1
            # Phase 1: decline everything; measure after a warm-up of two batch intervals, so
            # that only the steady state counts (not the runs triggered by registrations).
            time.sleep(2 * interval)
            master = cluster.master
            with master.lock:
                runs_before = master.allocation_runs
            events_before = [s.offer_events for s in schedulers]
            bench.phase = "decline"
            time.sleep(decline_seconds)
            with master.lock:
                new_runs = master.allocation_runs - runs_before
                runs = list(master.allocation_run_ms)[-new_runs:] if new_runs else []
            events = [s.offer_events - e for s, e in zip(schedulers, events_before, strict=True)]
            cycles = max(1, new_runs)
            # Phase 2: launch whole-agent tasks; measure launch and exit-to-offer latencies.
            bench.phase = "launch"
            deadline = time.monotonic() + 60
            wanted = frameworks * tasks_per_framework
            while time.monotonic() < deadline and (
                len(bench.exit_to_offer.values) < wanted
                or len(bench.accept_to_running.values) < wanted
            ):
                time.sleep(0.1)
            bench.phase = "done"
        finally:
            for sched in schedulers:
                sched.driver.stop()
            for sched in schedulers:
                sched.driver.join()

    allocation = Samples("allocation run (in the master)", [r / 1000.0 for r in runs])
    per_cycle = statistics.fmean(events) / cycles
    print()
    print(
        f"localmesos offer cycle: {frameworks} frameworks x {agents} agents, allocation "
        f"interval {format_duration(interval)}, {os.cpu_count()} CPUs, "
        f"Python {sys.version.split()[0]}"
    )
    print(f"{'metric':<38} {'n':>6} {'mean':>7} {'p50':>7} {'p90':>7} {'p99':>7} {'max':>7}"
          "  (ms)")
    for samples in (allocation, bench.decline_to_offer, bench.accept_to_running,
                    bench.exit_to_offer):
        print(samples.row())
    print(f"OFFERS events per framework per allocation run: {per_cycle:.2f} "
          f"(over {cycles} runs of the decline phase)")
    if bench.failures:
        print(f"unexpected task failures: {bench.failures}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m bench.offer_cycle [--frameworks N] [--agents N] ...``."""
    parser = argparse.ArgumentParser(prog="python -m bench.offer_cycle", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frameworks", type=int, default=10)
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--allocation-interval", dest="interval", type=float, default=1.0,
                        help="seconds")
    parser.add_argument("--decline-seconds", type=float, default=10.0,
                        help="length of the decline phase (seconds)")
    parser.add_argument("--tasks", dest="tasks_per_framework", type=int, default=5,
                        help="tasks per framework")
    parser.add_argument("--task-seconds", type=float, default=0.5)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    return run(**vars(args))  # each flag's dest is a parameter of run()


if __name__ == "__main__":
    sys.exit(main())
