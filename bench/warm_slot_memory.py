"""The memory of one warm slot over many trials: does the DisAuto executor grow?

Run with ``python -m bench.warm_slot_memory`` (``--trials 500``). It starts an embedded cluster
(one agent) and a pymesos scheduler that runs ``--trials`` tasks of one slot executor
(``python -m disauto.executor``), ``--concurrency`` at a time, each the command ``true`` through
the executor's normal path (its own sandbox, process group, status updates). Every
``--every`` finished tasks it prints the executor process' resident memory (``VmRSS``) and its
threads; a slot that leaks grows with the count. With ``--preload`` each task is instead a
fork of the slot's pre-imported interpreter (``--slot-preload``; the program ``python -m abc``,
which defines a module and exits), and the interpreter's memory is printed too.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import logging
import os
from pathlib import Path
import pwd
import sys
import threading
import time
from typing import Any

from pymesos import MesosSchedulerDriver
from pymesos import Scheduler

from disauto.common import slots
from disauto.common.python_command import PythonCommand
from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster


EXECUTOR_ID = "memory-slot-0"
TERMINAL = {"TASK_FINISHED", "TASK_FAILED", "TASK_KILLED", "TASK_LOST", "TASK_ERROR"}


def _scalar(name: str, value: float) -> dict[str, Any]:
    return {"name": name, "type": "SCALAR", "scalar": {"value": value}}


class SlotScheduler(Scheduler):  # type: ignore[misc]  # pymesos is untyped
    def __init__(self, trials: int, concurrency: int, preload: bool = False) -> None:
        self.trials = trials
        self.concurrency = concurrency
        self.launched = 0
        self.finished = 0
        self.failed = 0
        self.cond = threading.Condition()
        self.data = slots.task_data("true", {}) if not preload else slots.task_data(
            f"{sys.executable} -m abc", dict(os.environ),
            slots.Preload(PythonCommand(sys.executable, "abc", True), ("json",)))
        self.executor = {
            "executor_id": {"value": EXECUTOR_ID}, "type": "CUSTOM",
            "command": {"value": f"{sys.executable} -m {slots.EXECUTOR_MODULE}"},
            "resources": [_scalar("cpus", 0.05), _scalar("mem", 64)],
        }

    def resourceOffers(self, driver: Any, offers: Sequence[Any]) -> None:  # noqa: N802
        for offer in offers:
            offered = {r["name"]: r.get("scalar", {}).get("value", 0.0)
                       for r in offer["resources"]}
            fits = int(min(offered.get("cpus", 0.0) / 0.01, offered.get("mem", 0.0) / 4) + 1e-9)
            with self.cond:
                room = min(self.concurrency - (self.launched - self.finished),
                           self.trials - self.launched, fits)
                numbers = range(self.launched, self.launched + max(room, 0))
                self.launched += len(numbers)
            tasks = [{
                "name": f"t{n}", "task_id": {"value": f"t{n}"}, "agent_id": offer["agent_id"],
                "resources": [_scalar("cpus", 0.01), _scalar("mem", 4)],
                "executor": self.executor, "data": self.data,
            } for n in numbers]
            if tasks:
                driver.launchTasks(offer["id"], tasks, {"refuse_seconds": 0})
            else:
                driver.declineOffer(offer["id"], {"refuse_seconds": 0})

    def statusUpdate(self, driver: Any, status: Any) -> None:  # noqa: N802
        if "uuid" in status:
            driver.acknowledgeStatusUpdate(status)
        if status["state"] in TERMINAL:
            with self.cond:
                self.finished += 1
                self.failed += status["state"] != "TASK_FINISHED"
                self.cond.notify_all()
            driver.reviveOffers()


def _pid_of(word: bytes) -> int | None:
    """The process with ``word`` as one of its arguments (the Python itself, not the agent's
    ``sh -c`` around it)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if word in (entry / "cmdline").read_bytes().split(b"\0"):
                    return int(entry.name)
            except OSError:
                continue
    return None


def _status(pid: int) -> tuple[int, int]:
    fields = dict(line.split(":", 1) for line in
                  Path(f"/proc/{pid}/status").read_text().splitlines())
    return int(fields["VmRSS"].split()[0]), int(fields["Threads"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--preload", action="store_true",
                        help="fork each task from the slot's pre-imported interpreter")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    config = ClusterConfig(agent_configs=(AgentConfig(cpus=2.0, mem_mb=2048.0, disk_mb=1024.0,
                                                      ports=((31000, 31009),)),),
                           allocation_interval=0.1)
    sched = SlotScheduler(args.trials, args.concurrency, args.preload)
    with LocalCluster(config) as cluster:
        driver = MesosSchedulerDriver(sched, {"user": pwd.getpwuid(os.geteuid()).pw_name,
                                              "name": "slot-memory"}, cluster.address,
                                      implicit_acknowledgements=False)
        driver.start()
        print("| trials done | executor RSS KiB | threads |"
              + (" interpreter RSS KiB |\n|---|---|---|---|" if args.preload
                 else "\n|---|---|---|"), flush=True)
        zygote = str(Path(slots.__file__).parents[1] / "executor" / "zygote.py").encode()
        started = time.monotonic()
        try:
            mark = 0
            while True:
                with sched.cond:
                    sched.cond.wait_for(lambda m=mark: sched.finished >= m, timeout=600)
                    done = sched.finished
                pid = _pid_of(slots.EXECUTOR_MODULE.encode())
                if pid is not None and done >= mark:
                    rss, threads = _status(pid)
                    row = f"| {done} | {rss} | {threads} |"
                    if args.preload and (forker := _pid_of(zygote)) is not None:
                        row += f" {_status(forker)[0]} |"
                    print(row, flush=True)
                if done >= args.trials:
                    break
                mark = min(args.trials, (done // args.every + 1) * args.every)
        finally:
            driver.stop()
            driver.join()
        print(f"\n{sched.finished} tasks ({sched.failed} not finished) in "
              f"{time.monotonic() - started:.1f} s through one executor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
