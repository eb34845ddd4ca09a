"""Placement by measured capability on agents of unequal speed (issue 18).

Run with ``python -m bench.placement`` (about 2 minutes per configuration and seed on a loaded
2-core machine; ``--seeds 2`` for more). Needs root and cgroup v1 ``cpu`` (agent speeds are CPU
quotas, docs/local-mode.md).

For each configuration -- FIFO, dynamic-plus, and each with ``placement=capability`` -- and each
seed: a fresh embedded cluster of 4 agents (1.2 CPUs each, one trial slot) whose speeds are
``--speeds`` (default ``0.5,0.5,0.25,0.125``: relative speeds 1, 1, 0.5, 0.25, every agent slowed
so that the ratios do not depend on how busy the shared machine is), and ``--jobs`` da-submit
processes started together, each a random search of ``--trials`` CPU-bound trials
(``bench/cpu_trial.py``: about ``--work`` seconds of one free core, times the assignment's
``work`` in [0.8, 1.2]) at parallelism 2, with the same seeds under every configuration. Prints
each run as it ends and, at the end, the mean job time and the makespan per configuration, and
the ratio to its baseline.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import json
import os
from pathlib import Path
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from bench.jobs import kill_all
from bench.jobs import wait_all
from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster
from disauto.localmesos.containerizer.cpu_quota import CpuQuotaError
from disauto.localmesos.containerizer.cpu_quota import check_available


ROOT = Path(__file__).resolve().parents[1]
TRIAL = ROOT / "bench" / "cpu_trial.py"
CONFIGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "fifo": ("fifo", ()),
    "fifo+placement": ("fifo", ("placement=capability",)),
    "dynamic-plus": ("dynamic-plus", ()),
    "dynamic-plus+placement": ("dynamic-plus", ("placement=capability",)),
}


def calibrate(seconds: float) -> int:
    """Loop iterations that take about ``seconds`` of one free core here."""
    started = time.process_time()
    n = 0
    while n < 3_000_000:
        n += 1
    return int(seconds * 3_000_000 / max(time.process_time() - started, 1e-3))


def read_job(db: Path) -> dict[str, Any]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        rows = conn.execute("SELECT state, agent_id, started_at, ended_at FROM trials").fetchall()
    started, ended = float(meta.get("started_at", "nan")), float(meta.get("ended_at", "nan"))
    return {"seconds": ended - started, "started_at": started, "ended_at": ended,
            "outcome": meta.get("outcome", ""), "trials": len(rows),
            "agents": [r[1] for r in rows],
            "offer_counts": json.loads(meta.get("offer_counts", "{}"))}


def run_once(config: str, seed: int, args: argparse.Namespace, loops: int,
             work: Path) -> dict[str, Any]:
    """One configuration and seed on a fresh cluster: the jobs' records."""
    policy, settings = CONFIGS[config]
    speeds = [float(s) for s in args.speeds.split(",")]
    cluster = LocalCluster(ClusterConfig(
        agent_configs=tuple(AgentConfig(cpus=1.2, mem_mb=2048.0, disk_mb=2048.0, speed=s,
                                        ports=((41000 + 100 * i, 41099 + 100 * i),))
                            for i, s in enumerate(speeds)),
        allocation_interval=1.0, work_dir=work / "cluster",
        status_update_retry_interval=2.0, status_update_retry_interval_max=10.0))
    cluster.start()
    speed_of = {agent.id: agent.config.speed for agent in cluster.agents}
    home = work / "home"
    env = {**os.environ, "DISAUTO_HOME": str(home),
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    params = work / "params.json"
    params.write_text(json.dumps({"parameters": [
        {"name": "work", "type": "bound", "value": [0.8, 1.2]}]}))
    processes = []
    started = time.time()
    try:
        for job in range(args.jobs):
            command = [
                sys.executable, "-m", "disauto.submit.cli", "--master", cluster.address,
                "--app-name", f"placement-job{job}", "--files", str(TRIAL),
                "--app-runner-launch-cmd", f"python {TRIAL.name} --loops {loops}",
                "--app-runner-cpus", "1", "--app-runner-memory", "256MB",
                "--app-core-cpus", "0.1", "--app-core-memory", "256MB",
                "--trail-steps", str(args.trials), "--tuning-type", "random-search",
                "--tuning-parameters", str(params), "--objective", "objective",
                "--parallelism", "2", "--seed", str(seed * 100 + job),
                "--offer-policy", policy, "--quiet", "--slot-mode", "task",
            ]
            for setting in settings:
                command += ["--priority-setting", setting]
            log = (work / f"job{job}.log").open("wb")
            processes.append(subprocess.Popen(command, cwd=work, env=env, stdout=log,
                                              stderr=subprocess.STDOUT))
        wait_all(processes, args.timeout)
    finally:
        kill_all(processes)
        cluster.stop()
    jobs = [read_job(db) for db in sorted(home.glob("jobs/*/job.db"))]
    for job in jobs:
        job["slow_trials"] = sum(1 for a in job["agents"] if speed_of.get(a, 1.0) < max(speeds))
    return {"config": config, "seed": seed, "jobs": jobs,
            "exit_codes": [p.returncode for p in processes],
            "makespan": max((j["ended_at"] for j in jobs), default=float("nan")) - started,
            "mean_job_seconds": statistics.fmean(j["seconds"] for j in jobs) if jobs
            else float("nan")}


def table(records: Sequence[dict[str, Any]]) -> str:
    lines = ["| configuration | runs | mean job time (s) | makespan (s) | vs. baseline (mean / "
             "makespan) | trials on slower agents | placement declines |",
             "|---|---|---|---|---|---|---|"]
    by: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by.setdefault(record["config"], []).append(record)
    means = {c: statistics.fmean(r["mean_job_seconds"] for r in rs) for c, rs in by.items()}
    spans = {c: statistics.fmean(r["makespan"] for r in rs) for c, rs in by.items()}
    for config, runs in by.items():
        base = config.split("+")[0]
        ratio = (f"{means[config] / means[base]:.2f} / {spans[config] / spans[base]:.2f}"
                 if base != config and base in means else "—")
        slow = sum(j["slow_trials"] for r in runs for j in r["jobs"])
        total = sum(j["trials"] for r in runs for j in r["jobs"])
        declines = sum(v for r in runs for j in r["jobs"]
                       for k, v in j["offer_counts"].items()
                       if k in ("placement_held", "placement_excluded", "placement_saturated"))
        lines.append(f"| {config} | {len(runs)} | {means[config]:.1f} | {spans[config]:.1f} | "
                     f"{ratio} | {slow}/{total} | {declines:g} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.placement", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--speeds", default="0.5,0.5,0.25,0.125")
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--trials", type=int, default=6, help="trials per job")
    parser.add_argument("--work", type=float, default=1.0,
                        help="seconds of one free core per trial (before the speed)")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--timeout", type=float, default=300.0, help="per run")
    parser.add_argument("--out", type=Path, help="write the records as JSON here")
    args = parser.parse_args(argv)
    try:
        check_available()
    except CpuQuotaError as exc:
        parser.error(f"agents of unequal speed need CPU groups: {exc}")
    configs = [c.strip() for c in args.configs.split(",")]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        parser.error(f"--configs: unknown {', '.join(unknown)}; valid: {', '.join(CONFIGS)}")
    loops = calibrate(args.work)
    print(f"{loops} loops ≈ {args.work:g} s of a free core; speeds {args.speeds}", flush=True)
    records = []
    for seed in range(1, args.seeds + 1):
        for config in configs:  # interleaved, so that the machine's load hits all alike
            with tempfile.TemporaryDirectory(prefix="bench-placement-") as work:
                record = run_once(config, seed, args, loops, Path(work))
            records.append(record)
            print(f"seed {seed} {config:24s} mean job {record['mean_job_seconds']:6.1f} s  "
                  f"makespan {record['makespan']:6.1f} s  exit codes {record['exit_codes']}  "
                  f"slow-agent trials {[j['slow_trials'] for j in record['jobs']]}", flush=True)
    print()
    print(table(records))
    if args.out:
        args.out.write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
