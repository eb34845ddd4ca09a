"""How long a resume takes: from ``da-job resume`` to the job's first new trial (issue 14).

For each mode (``--master local``; a ``da-cluster`` process that outlives the framework, the
framework's port free again or taken by another process) and each repeat: a detached job of 1 s
trials runs until it has results, its framework is killed (``kill -9``), and ``da-job resume
--detach`` is timed until a trial that was not running before the death starts (its task
reaches the record as LAUNCHING or later). Prints a table of the median and worst.

    python -m bench.resume [--repeats 5]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import json
import os
from pathlib import Path
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

from disauto.localmesos.cluster_process import ClusterProcess
from disauto.submit.local import free_port_range


ROOT = Path(__file__).resolve().parents[1]
RUNNER = '''
import time
from apprunner_sdk import get_params, report
time.sleep(1.0)
report(accuracy=float(get_params()["x"]), final=True)
'''


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "DISAUTO_HOME": str(home),
            "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _cli(home: Path, module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], env=_env(home), cwd=home,
                          capture_output=True, text=True, check=True, timeout=180)


def _rows(db: Path, query: str) -> list[tuple]:
    with sqlite3.connect(db) as connection:
        return connection.execute(query).fetchall()


def one_resume(master: str, work: Path, *, take_port: bool = False) -> float:
    """Seconds from ``da-job resume`` to the first trial started after it (``take_port``:
    another process holds the dead framework's port, so it resumes on another one)."""
    home = work / f"home-{time.monotonic_ns()}"
    home.mkdir(parents=True)
    (home / "runner.py").write_text(RUNNER)
    (home / "params.json").write_text(json.dumps(
        {"parameters": [{"name": "x", "type": "bound", "value": [0, 1]}]}))
    out = _cli(home, "disauto.submit.cli", "--app-name", "resume-bench", "--files",
               str(home / "runner.py"), "--app-runner-launch-cmd", "python runner.py",
               "--app-runner-cpus", "0.5", "--app-runner-memory", "128M", "--app-core-cpus",
               "0.5", "--app-core-memory", "128M", "--tuning-parameters",
               str(home / "params.json"), "--trail-steps", "40", "--parallelism", "2",
               "--master", master, "--slot-mode", "task", "--detach").stdout
    job = out.split("job ", 1)[1].split()[0]
    db = home / "jobs" / job / "job.db"
    while len(_rows(db, "SELECT 1 FROM trials WHERE state = 'COMPLETED'")) < 2:
        time.sleep(0.2)
    os.kill(int(dict(_rows(db, "SELECT key, value FROM meta"))["pid"]), signal.SIGKILL)
    time.sleep(0.5)
    seen = {row[0] for row in _rows(db, "SELECT number FROM trials WHERE started_at IS NOT NULL")}
    squatter = socket.socket()
    if take_port:
        port = int(dict(_rows(db, "SELECT key, value FROM meta"))["grpc_port"])
        squatter.bind(("0.0.0.0", port))
        squatter.listen()
    started = time.time()
    _cli(home, "disauto.submit.job_cli", "resume", job, "--detach")
    while True:
        fresh = _rows(db, "SELECT number, started_at FROM trials WHERE started_at IS NOT NULL "
                          f"AND started_at > {started}")
        fresh = [(n, t) for n, t in fresh if n not in seen or t > started]
        if fresh:
            took = min(t for _, t in fresh) - started
            break
        time.sleep(0.1)
    _cli(home, "disauto.submit.job_cli", "kill", job)
    squatter.close()
    return took


MODES = ("--master local", "a da-cluster that lives on",
         "a da-cluster, the framework's port taken")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--modes", nargs="+", type=int, choices=range(len(MODES)),
                        default=list(range(len(MODES))),
                        help="which modes, by number: " + "; ".join(
                            f"{n} {mode}" for n, mode in enumerate(MODES)))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="disauto-resume-") as tmp:
        work = Path(tmp)
        low, high = free_port_range(600, low=42000, high=60000)
        cluster = ClusterProcess(work / "cluster", (
            "--agents", "1", "--cpus", "4", "--mem", "4GB", "--gpus", "0",
            "--ports", f"[{low}-{high}]"), env=_env(work))
        cluster.start()
        try:
            results = {}
            for mode in (MODES[n] for n in args.modes):
                master = "local" if mode == MODES[0] else cluster.address
                times = []
                for repeat in range(args.repeats):
                    times.append(one_resume(master, work, take_port=mode == MODES[2]))
                    print(f"{mode}: resume {repeat + 1}/{args.repeats}: {times[-1]:.2f} s",
                          flush=True)
                results[mode] = times
        finally:
            cluster.kill()
    print("\n| mode | resumes | median s | worst s |\n|---|---|---|---|")
    for mode, times in results.items():
        print(f"| {mode} | {len(times)} | {statistics.median(times):.2f} | {max(times):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
