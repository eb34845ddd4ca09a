"""How long ``da-submit`` takes to exit once its job ended, with many jobs on one cluster.

``--jobs`` jobs of ``--trials`` instant trials each (3 at a time) run at once on one
``da-cluster`` process (one agent of 16 CPUs), as users sharing a cluster would. For each job
the time from its end (the record's ``ended_at``) to its ``da-submit`` process's exit is
printed, and how long the whole job ran. What happens in that time: the job's live tasks are
killed, AppCore stops, the log collector copies what is new of every task (through the agent's
``/files`` API), the framework tears down.

    python -m bench.shared_exit [--jobs 6] [--trials 40]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import json
import os
from pathlib import Path
import sqlite3
import subprocess
import sys
import tempfile
import time

from disauto.localmesos.cluster_process import ClusterProcess


TRIAL = ("from apprunner_sdk import get_params, report\n"
         "report(loss=float(get_params()['x']), final=True)\n")


def run(jobs: int, trials: int, work: Path) -> list[tuple[float, float]]:
    """(exit after the job's end, the job's whole run) in seconds, for each job."""
    (work / "t.py").write_text(TRIAL)
    (work / "p.json").write_text(json.dumps(
        {"parameters": [{"name": "x", "type": "bound", "value": [0.0, 1.0]}]}))
    env = {**os.environ, "DISAUTO_HOME": str(work / "home")}
    cluster = ClusterProcess(work / "cluster", (
        "--agents", "1", "--cpus", "16", "--mem", "16GB", "--ports", "[52000-52999]",
        "--allocation-interval", "200ms"), env=env)
    address = cluster.start()
    processes = []
    try:
        for number in range(jobs):
            processes.append(subprocess.Popen(  # noqa: S603 - our own module, no shell
                [sys.executable, "-m", "disauto.submit.cli", "--app-name", f"job{number}",
                 "--files", str(work / "t.py"), "--app-runner-launch-cmd", "python t.py",
                 "--app-runner-cpus", "0.2", "--app-runner-memory", "64M",
                 "--app-core-cpus", "0.2", "--app-core-memory", "128M",
                 "--tuning-parameters", str(work / "p.json"), "--trail-steps", str(trials),
                 "--parallelism", "3", "--objective", "loss", "--direction", "minimize",
                 "--master", address, "--quiet", "--slot-mode", "task"],
                cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True))
        exited: dict[int, float] = {}
        while len(exited) < jobs:
            for process in processes:
                if process.pid not in exited and process.poll() is not None:
                    exited[process.pid] = time.time()
                    if process.returncode != 0:
                        raise RuntimeError(f"da-submit exited {process.returncode}: "
                                           f"{process.stderr.read() if process.stderr else ''}")
            time.sleep(0.05)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
        cluster.kill()
    out = []
    for db_path in sorted((work / "home" / "jobs").glob("*/job.db")):
        with sqlite3.connect(db_path) as db:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        ended, started = float(meta["ended_at"]), float(meta["started_at"])
        out.append((exited[int(meta["pid"])] - ended, ended - started))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=6)
    parser.add_argument("--trials", type=int, default=40)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-exit-") as scratch:
        figures = sorted(run(args.jobs, args.trials, Path(scratch)))
    print("| job | exit after its end, s | job's run, s |")
    print("|---|---|---|")
    for number, (lag, ran) in enumerate(figures, 1):
        print(f"| {number} | {lag:.2f} | {ran:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
