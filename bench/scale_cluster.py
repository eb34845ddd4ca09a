"""bench.scale's cluster part: many small jobs submitted at once to one cluster (issue 29).

One ``da-cluster`` process of ``agents`` agents (2 CPUs and 2 GB each, one wide port range:
jobs on different agents of one host draw their ports at random from it) and ``jobs``
``da-submit`` processes started together, each a job of ``trials`` trials at parallelism 2
(random search; a trial reports its value and exits). Measured:

* every job's record: it ended with its budget spent, every trial ``COMPLETED`` with an
  objective, ``da-submit`` exited 0;
* submission to first trial: from the ``da-submit`` process's start to its first trial's start
  in the record (mean and max over the jobs);
* the master's allocation time: its ``allocator/mesos/allocation_run_ms`` timer
  (``/metrics/snapshot``: p50, p99 and max of its last 1,000 runs), read at the end;
* the peak resident memory of each ``da-submit`` (``/proc``'s VmHWM, polled; mean and max).
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from dataclasses import field
import json
import os
from pathlib import Path
import sqlite3
import statistics
import subprocess
import sys
import time
import urllib.request

from bench.jobs import kill_all
from bench.scale_record import rss_bytes
from disauto.localmesos.cluster_process import ClusterProcess


TRIAL = ("from apprunner_sdk import get_params, report\n"
         "report(loss=float(get_params()['x']), final=True)\n")


@dataclass
class ClusterFigures:
    """The cluster part's measures."""

    jobs: int
    agents: int
    trials: int
    wall: float = 0.0
    correct: int = 0
    problems: list[str] = field(default_factory=list)
    first_trial: list[float] = field(default_factory=list)
    """Seconds from each da-submit's start to its first trial's start."""
    peaks: list[int] = field(default_factory=list)
    """Each da-submit's peak resident memory, bytes."""
    allocation_ms: dict[str, float] = field(default_factory=dict)


def _submit(work: Path, number: int, trials: int, address: str,
            env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(  # noqa: S603 - our own module, no shell
        [sys.executable, "-m", "disauto.submit.cli", "--app-name", f"job{number}",
         "--files", str(work / "t.py"), "--app-runner-launch-cmd", "python t.py",
         "--app-runner-cpus", "0.2", "--app-runner-memory", "64M",
         "--app-core-cpus", "0.2", "--app-core-memory", "128M",
         "--tuning-parameters", str(work / "p.json"), "--trail-steps", str(trials),
         "--parallelism", "2", "--objective", "loss", "--direction", "minimize",
         "--max-failed-trials", "0", "--master", address, "--quiet",
         "--slot-mode", "task"],
        cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _check(db_path: Path, trials: int) -> tuple[str, float, int]:
    """(what is wrong with the record or "", its first trial's start, its pid)."""
    with closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)) as db:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        rows = db.execute("SELECT state, objective, started_at FROM trials").fetchall()
    done = [r for r in rows if r[0] == "COMPLETED" and r[1] is not None]
    wrong = ""
    if meta.get("outcome") != "BUDGET_SPENT" or len(rows) != trials or len(done) != trials:
        wrong = (f"{db_path.parent.name}: outcome {meta.get('outcome')}, {len(done)} of "
                 f"{len(rows)} trials completed (budget {trials})")
    starts = [float(r[2]) for r in rows if r[2] is not None]
    return wrong, min(starts) if starts else float("nan"), int(meta.get("pid", 0))


def run_cluster(work: Path, jobs: int, agents: int, trials: int = 20) -> ClusterFigures:
    """Run the cluster part in ``work`` (see the module doc)."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "t.py").write_text(TRIAL)
    (work / "p.json").write_text(json.dumps(
        {"parameters": [{"name": "x", "type": "bound", "value": [0.0, 1.0]}]}))
    env = {**os.environ, "DISAUTO_HOME": str(work / "home")}
    cluster = ClusterProcess(work / "cluster", (
        "--agents", str(agents), "--cpus", "2", "--mem", "2GB", "--ports", "[20000-59999]",
        "--gpus", "0"), env=env)
    address = cluster.start(timeout=120)
    figures = ClusterFigures(jobs, agents, trials)
    started: dict[int, float] = {}
    peaks: dict[int, int] = {}
    processes: list[subprocess.Popen[bytes]] = []
    began = time.monotonic()
    try:
        for number in range(jobs):
            process = _submit(work, number, trials, address, env)
            started[process.pid] = time.time()
            processes.append(process)
        while any(p.poll() is None for p in processes):
            for process in processes:
                peaks[process.pid] = max(peaks.get(process.pid, 0), rss_bytes(process.pid)[1])
            time.sleep(0.5)
            if time.monotonic() - began > 3600:
                raise RuntimeError("the jobs did not end within an hour")
        figures.wall = time.monotonic() - began
        with urllib.request.urlopen(f"http://{address}/metrics/snapshot",  # noqa: S310
                                    timeout=30) as answer:
            snapshot = json.loads(answer.read())
    finally:
        kill_all(processes)
        cluster.kill()
    prefix = "allocator/mesos/allocation_run_ms"
    figures.allocation_ms = {key[len(prefix) + 1:]: float(value)
                             for key, value in snapshot.items()
                             if key.startswith(prefix + "/")}
    figures.problems = [f"da-submit {p.pid} exited {p.returncode}" for p in processes
                        if p.returncode != 0]
    for db_path in sorted((work / "home" / "jobs").glob("*/job.db")):
        wrong, first, pid = _check(db_path, trials)
        if wrong:
            figures.problems.append(wrong)
        else:
            figures.correct += 1
        if pid in started and first == first:  # NaN: no trial started
            figures.first_trial.append(first - started[pid])
    figures.peaks = [peak for peak in peaks.values() if peak]
    return figures


def cluster_table(figures: ClusterFigures) -> str:
    """The cluster part's figures, as docs/benchmarks.md has them."""
    first, peaks, alloc = figures.first_trial, figures.peaks, figures.allocation_ms
    lines = [
        "| jobs | agents | trials each | correct records | wall s | submit→first trial mean s "
        "| max s | allocation run p50 ms | p99 ms | max ms | runs | da-submit peak mean MB "
        "| max MB |", "|" + "---|" * 13,
        f"| {figures.jobs} | {figures.agents} | {figures.trials} | "
        f"{figures.correct}/{figures.jobs} | {figures.wall:.0f} | "
        f"{statistics.fmean(first) if first else float('nan'):.1f} | "
        f"{max(first) if first else float('nan'):.1f} | {alloc.get('p50', float('nan')):.2f} | "
        f"{alloc.get('p99', float('nan')):.2f} | {alloc.get('max', float('nan')):.2f} | "
        f"{alloc.get('count', 0):.0f} | "
        f"{statistics.fmean(peaks) / 1e6 if peaks else float('nan'):.0f} | "
        f"{max(peaks) / 1e6 if peaks else float('nan'):.0f} |"]
    lines += [f"problem: {problem}" for problem in figures.problems]
    return "\n".join(lines)
