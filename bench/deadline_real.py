"""Deadlines with real jobs: ``bench.deadline_sim``'s workloads on the embedded cluster (issue 19).

Run with ``python -m bench.deadline_real`` (or ``python -m bench.deadline --real``). For each
seed and policy it starts one :class:`~localmesos.cluster.LocalCluster` shaped like the
simulated cluster -- one agent per :class:`~bench.deadline_sim.Agent`, with its CPUs, memory and
GPUs (the embedded agents advertise GPUs they do not have: scheduling only) and its attributes
(``class:fast``, or ``class:edge;slowdown:2``) -- and submits every job as its own ``da-submit``
process (``--master``, ``--offer-policy``, ``--deadline``) at its arrival time x
``--time-scale``. Each trial is :mod:`bench.deadline_trial`: it sleeps the duration
:func:`~bench.deadline_sim.trial_draw` gives it (x its agent's ``slowdown`` attribute, x the time
scale) and reports the drawn objective, so a budget job spends its budget and a target job
(``--target 0.95``) ends at the same trial as in the simulation.

Real trial numbers start at 1, the simulation's at 0: real trial ``n`` is the simulation's
``n - 1``. Time settings are scaled like the trials: the master's allocation interval
(``--allocation-interval``, default 1 s x the scale) is the simulation's 1 s round, and the
deadline policy gets ``decline_filter_seconds`` = the allocation interval and
``patience_seconds`` = 30 s x the scale (the dynamic policies the same decline filter).

A job's time is from its arrival (when its ``da-submit`` starts) to its record's ``ended_at``;
it meets its deadline when it ends by it. Figures are in the workload's (unscaled) seconds,
next to the no-overhead simulation of the same jobs, policy and seed at the same allocation
interval (:class:`~bench.deadline_sim.Simulation`), and the ratio real / sim: the distance to the
ideal. CPU busy is the master's ``cpus_percent`` (allocated CPUs) averaged until the last job
ends; the simulation's is the CPUs its trials hold.

``--jobs N`` keeps the workload's first N jobs and ``--budget-scale F`` scales every budget (each
deadline keeps its slack over the job's time alone, :func:`~bench.deadline_sim.alone_seconds`): the
machine this runs on may not start a few hundred trial processes a minute.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace
import json
import math
import os
from pathlib import Path
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from bench.deadline_sim import ALONE
from bench.deadline_sim import APPCORE
from bench.deadline_sim import WORKLOADS
from bench.deadline_sim import Agent
from bench.deadline_sim import Simulation
from bench.deadline_sim import Workload
from bench.deadline_sim import _number
from bench.deadline_sim import _percentile
from bench.deadline_sim import alone_seconds
from bench.deadline_sim import policy_spec
from bench.deadline_sim import trial_draw
from bench.jobs import kill_all
from bench.jobs import wait_all
from bench.paper import MetricsPoller
from bench.paper import free_port_base
from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster


ROOT = Path(__file__).resolve().parents[1]
TRIAL = ROOT / "bench" / "deadline_trial.py"
TARGET = 0.95
PATIENCE_SECONDS = 30.0
"""The deadline policy's default ``patience_seconds``, in the workload's seconds."""
FINISHED = ("BUDGET_SPENT", "TARGET_REACHED")
"""The job outcomes the simulation knows: any other is a failure of the real run."""
KEYS = ("hit_rate", "mean", "p95", "makespan", "utilisation")


@dataclass(frozen=True)
class Setup:
    """One real run's fixed settings."""

    workload: str = "feasible"
    time_scale: float = 0.05
    """Real seconds per workload second."""
    allocation_interval: float | None = None
    """The master's allocation interval in real seconds (default: 1 workload second)."""
    jobs: int = 0
    """Keep the workload's first ``jobs`` jobs (0: all)."""
    budget_scale: float = 1.0
    run_timeout: float = 1800.0

    @property
    def interval(self) -> float:
        return self.allocation_interval or self.time_scale


# -- the workload ---------------------------------------------------------------------------


def reduced(jobs: Sequence[Workload], count: int = 0, budget_scale: float = 1.0
            ) -> list[Workload]:
    """The first ``count`` jobs (0: all), budgets x ``budget_scale`` (at least one round of
    trials); each deadline keeps its slack over the job's time alone."""
    kept = list(jobs[:count] if count else jobs)
    if budget_scale == 1.0:
        return kept
    out = []
    for spec in kept:
        budget = max(spec.parallelism, round(spec.budget * budget_scale))
        small = replace(spec, budget=budget)
        if spec.deadline:
            slack = (spec.deadline - spec.arrival) / alone_seconds(spec)
            small = replace(small, deadline=spec.arrival + slack * alone_seconds(small))
        out.append(small)
    return out


def workload_jobs(setup: Setup, seed: int) -> tuple[list[Agent], list[Workload]]:
    cluster, jobs = WORKLOADS[setup.workload]
    return cluster(), reduced(jobs(seed), setup.jobs, setup.budget_scale)


def arrivals(jobs: Sequence[Workload], time_scale: float) -> list[tuple[float, int]]:
    """``(real seconds after the start, job index)`` for every job, in the order they arrive."""
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].arrival, i))
    first = min(j.arrival for j in jobs)
    return [((jobs[i].arrival - first) * time_scale, i) for i in order]


def draws(seed: int, index: int, spec: Workload) -> dict[str, list[float]]:
    """Real trial number -> ``[seconds on a fast agent, objective]``: the simulation's draw of
    trial ``number - 1`` (its trials count from 0, the real job's from 1)."""
    table = {}
    for number in range(1, spec.budget + 1):
        seconds, _, objective = trial_draw(seed, index, number - 1, spec)
        table[str(number)] = [seconds, objective]
    return table


# -- one real run ---------------------------------------------------------------------------


def agent_configs(agents: Sequence[Agent], port_base: int) -> tuple[AgentConfig, ...]:
    """The embedded agents of the simulated ones: resources, fake GPUs and attributes."""
    configs = []
    for index, agent in enumerate(agents):
        attributes: dict[str, str | float] = {"class": "fast"}
        if agent.slowdown > 1.0:
            attributes = {"class": "edge", "slowdown": agent.slowdown}
        low = port_base + 150 * index
        configs.append(AgentConfig(cpus=agent.cpus, mem_mb=agent.mem_mb, disk_mb=100_000.0,
                                   gpus=agent.gpus, ports=((low, low + 149),),
                                   attributes=attributes))
    return tuple(configs)


def policy_flags(policy: str, setup: Setup) -> list[str]:
    """``--offer-policy`` and the ``--policy-setting``s: the policy's own settings, then the
    time settings scaled like the trials."""
    name, settings = policy_spec(policy)
    scaled: dict[str, str] = {}
    if name != "fifo":
        scaled["decline_filter_seconds"] = f"{setup.interval:g}"
    if name == "deadline":
        scaled["patience_seconds"] = f"{PATIENCE_SECONDS * setup.time_scale:g}"
    flags = ["--offer-policy", name]
    for key, value in {**scaled, **settings}.items():
        flags += ["--policy-setting", f"{key}={value}"]
    return flags


def submit_args(spec: Workload, draws_file: Path, params: Path, master: str, policy: str,
                setup: Setup, deadline: float | None) -> list[str]:
    """The ``da-submit`` command line of one job (``deadline``: seconds since the epoch)."""
    runner = spec.runner
    args = [
        sys.executable, "-m", "disauto.submit.cli", "--master", master,
        "--app-name", spec.name, "--files", f"{TRIAL},{draws_file}",
        "--app-runner-launch-cmd",
        f"python {TRIAL.name} --draws {draws_file.name} --time-scale {setup.time_scale:g}",
        "--app-runner-cpus", f"{runner.cpus:g}", "--app-runner-memory",
        f"{runner.mem_mb:g}M", "--app-runner-gpus", str(runner.gpus),
        "--app-core-cpus", f"{APPCORE.cpus:g}", "--app-core-memory", f"{APPCORE.mem_mb:g}M",
        "--trail-steps", str(spec.budget), "--parallelism", str(spec.parallelism),
        "--tuning-type", "random-search", "--tuning-parameters", str(params),
        "--seed", "1", "--telemetry-interval", "0", "--quiet", "--slot-mode", "task",
        *policy_flags(policy, setup),
    ]
    if spec.kind != "budget":
        args += ["--target", f"{TARGET:g}"]
    if deadline is not None:
        # As a duration from now: at a small time scale the absolute moment can pass while a
        # loaded machine starts da-submit, which then refuses it (not in the future). The job's
        # own deadline is then later by its start-up; the hit rate is judged on the workload's
        # deadline (figures()), not on this one.
        args += ["--deadline", f"{max(0.001, deadline - time.time()):.3f}s"]
    return args


def read_jobs(home: Path) -> dict[str, dict[str, Any]]:
    """app name -> ``ended_at``, ``deadline``, ``outcome``, ``trials`` from each job's record."""
    found: dict[str, dict[str, Any]] = {}
    for db in sorted(home.glob("jobs/*/job.db")):
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            trials = conn.execute("SELECT count(*) FROM trials").fetchone()[0]
        config = json.loads(meta.get("config", "{}"))
        found[config.get("app_name", "")] = {
            "ended_at": float(meta.get("ended_at", "nan")),
            "deadline": float(config.get("deadline", 0.0) or 0.0),
            "outcome": meta.get("outcome", "UNKNOWN"),
            "trials": int(trials),
        }
    return found


def figures(jobs: Sequence[Workload], records: Mapping[str, Mapping[str, Any]], start: float,
            time_scale: float, stopped: float) -> dict[str, float]:
    """The simulation's figures of a real run, in workload seconds.

    ``start`` is the wall time of the first arrival; a job with no end (no record, or killed at
    the run's timeout) or that did not end as the simulation's do (its budget spent or its
    target reached; a failed job) counts as ending at ``stopped`` and missing its deadline.
    """
    first = min(j.arrival for j in jobs)
    times, hits, ends = [], [], []
    for spec in jobs:
        record = records.get(spec.name, {})
        ended = record.get("ended_at", math.nan)
        done = not math.isnan(ended) and record.get("outcome") in FINISHED
        end = ((ended if done else stopped) - start) / time_scale + first
        ends.append(end)
        times.append(end - spec.arrival)
        if spec.deadline:
            hits.append(done and end <= spec.deadline + 1e-6)
    return {"hit_rate": statistics.fmean(hits) if hits else math.nan,
            "mean": statistics.fmean(times), "p95": _percentile(times, 0.95),
            "makespan": max(ends) - first, "utilisation": math.nan}


def _busy(poller: MetricsPoller, until: float) -> float:
    values = [s.cpus_percent for s in poller.samples if s.t <= until]
    return statistics.fmean(values) if values else math.nan


def run_real(setup: Setup, policy: str, seed: int, work: Path) -> dict[str, Any]:
    """One real run: a fresh cluster, a ``da-submit`` per job at its arrival; its figures and
    per-job records."""
    agents, jobs = workload_jobs(setup, seed)
    params = work / "params.json"
    params.write_text(json.dumps({"parameters": [
        {"name": "x", "type": "bound", "value": [0.0, 1.0]}]}))
    for index, spec in enumerate(jobs):
        (work / f"draws-{spec.name}.json").write_text(json.dumps(draws(seed, index, spec)))
    base = free_port_base(1000)
    cluster = LocalCluster(ClusterConfig(
        agent_configs=agent_configs(agents, base), allocation_interval=setup.interval,
        work_dir=work / "cluster", status_update_retry_interval=2.0,
        status_update_retry_interval_max=10.0))
    cluster.start()
    home = work / "home"
    env = {**os.environ, "DISAUTO_HOME": str(home),
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    poller = MetricsPoller(cluster.address, interval=0.5)
    processes: list[subprocess.Popen[bytes]] = []
    poller.start()
    start = time.time()
    first = min(j.arrival for j in jobs)
    try:
        for offset, index in arrivals(jobs, setup.time_scale):
            time.sleep(max(0.0, start + offset - time.time()))
            spec = jobs[index]
            deadline = start + (spec.deadline - first) * setup.time_scale \
                if spec.deadline else None
            args = submit_args(spec, work / f"draws-{spec.name}.json", params, cluster.address,
                               policy, setup, deadline)
            log = (work / f"{spec.name}.log").open("wb")
            processes.append(subprocess.Popen(args, cwd=work, env=env, stdout=log,
                                              stderr=subprocess.STDOUT))
        wait_all(processes, max(1.0, start + setup.run_timeout - time.time()))
    finally:
        kill_all(processes)
        stopped = time.time()
        poller.stop()
        cluster.stop()
    records = read_jobs(home)
    result = figures(jobs, records, start, setup.time_scale, stopped)
    last = max((r["ended_at"] for r in records.values() if not math.isnan(r["ended_at"])),
               default=stopped)
    result["utilisation"] = _busy(poller, last - start)  # a fraction; the poller starts at start
    return {"figures": result, "jobs": records, "exit_codes": [p.returncode for p in processes],
            "start": start, "wall_seconds": stopped - start}


def run_sim(setup: Setup, policy: str, seed: int) -> dict[str, float]:
    """The no-overhead simulation of the same jobs, policy and seed, at the same allocation
    interval in workload seconds."""
    agents, jobs = workload_jobs(setup, seed)
    return Simulation(agents, jobs, policy, seed,
                      interval=setup.interval / setup.time_scale).run()


# -- the command ----------------------------------------------------------------------------


def _setup_key(setup: Setup) -> dict[str, Any]:
    return {k: v for k, v in setup.__dict__.items() if k != "run_timeout"}


def load_records(path: Path, setup: Setup) -> list[dict[str, Any]]:
    """The recorded real runs of ``setup`` (an interrupted bench resumes where it stopped)."""
    if not path.exists():
        return []
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in records if r.get("setup") == _setup_key(setup)]


def mean_figures(runs: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Each figure averaged over runs (NaNs left out)."""
    out = {}
    for key in KEYS:
        values = [r[key] for r in runs if not math.isnan(r[key])]
        out[key] = statistics.fmean(values) if values else math.nan
    return out


def _ratio(real: float, sim: float) -> float:
    return real / sim if sim and not math.isnan(real) and not math.isnan(sim) else math.nan


def markdown(setup: Setup, real: Mapping[str, Mapping[str, float]],
             sim: Mapping[str, Mapping[str, float]], seeds: Sequence[int]) -> str:
    """Per policy: the real figures, the simulation's and real / sim."""
    lines = [f"Workload `{setup.workload}`"
             + (f", first {setup.jobs} jobs" if setup.jobs else "")
             + (f", budgets x {setup.budget_scale:g}" if setup.budget_scale != 1.0 else "")
             + f", time scale {setup.time_scale:g}, allocation interval {setup.interval:g} s, "
             f"seeds {', '.join(map(str, seeds))} (workload seconds):", "",
             "| policy | run | deadline hit rate | mean job s | p95 job s | makespan s "
             "| CPU busy |", "|---|---|---|---|---|---|---|"]
    for policy in real:
        r, s = real[policy], sim[policy]
        for label, f, digits in (("real", r, (3, 1)), ("sim", s, (3, 1))):
            lines.append(f"| {policy} | {label} | {_number(f['hit_rate'], digits[0])} | "
                         f"{_number(f['mean'], digits[1])} | {_number(f['p95'], digits[1])} | "
                         f"{_number(f['makespan'], digits[1])} | "
                         f"{_number(f['utilisation'], 3)} |")
        ratios = {k: _ratio(r[k], s[k]) for k in KEYS}
        lines.append(f"| {policy} | real / sim | {_number(ratios['hit_rate'], 2)} | "
                     f"{_number(ratios['mean'], 3)} | {_number(ratios['p95'], 3)} | "
                     f"{_number(ratios['makespan'], 3)} | {_number(ratios['utilisation'], 3)} |")
    return "\n".join(lines)


def run_all(setup: Setup, policies: Sequence[str], seeds: Sequence[int], out: Path,
            keep: bool = False) -> list[dict[str, Any]]:
    """Every (seed, policy) not yet in ``out`` (JSON lines), appended as it completes."""
    done = {(r["policy"], r["seed"]) for r in load_records(out, setup)}
    for seed in seeds:
        for policy in policies:
            if (policy, seed) in done:
                continue
            work = Path(tempfile.mkdtemp(prefix=f"bench-deadline-{seed}-"))
            try:
                record = run_real(setup, policy, seed, work)
            finally:
                if not keep:
                    shutil.rmtree(work, ignore_errors=True)
            record.update(policy=policy, seed=seed, setup=_setup_key(setup))
            with out.open("a") as stream:
                stream.write(json.dumps(record) + "\n")
            f = record["figures"]
            print(f"seed {seed} {policy}: hit {_number(f['hit_rate'], 3)}, mean "
                  f"{f['mean']:.1f} s, makespan {f['makespan']:.1f} s, wall "
                  f"{record['wall_seconds']:.0f} s", file=sys.stderr, flush=True)
    return load_records(out, setup)


def report(setup: Setup, policies: Sequence[str], seeds: Sequence[int],
           records: Sequence[Mapping[str, Any]]) -> str:
    real, sim = {}, {}
    for policy in policies:
        runs = [r["figures"] for r in records if r["policy"] == policy and r["seed"] in seeds]
        if not runs:
            continue
        real[policy] = mean_figures(runs)
        sim[policy] = mean_figures([run_sim(setup, policy, seed) for seed in seeds])
    return markdown(setup, real, sim, seeds)


def parse_seeds(text: str) -> list[int]:
    """``N``: seeds ``0..N-1``; ``A,B,...``: those seeds."""
    if "," not in text:
        count = int(text)
        if count < 1:
            raise ValueError(text)
        return list(range(count))
    return [int(s) for s in text.split(",") if s.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.deadline_real", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="feasible")
    parser.add_argument("--policies", default="fifo,deadline",
                        help="comma-separated NAME[:SETTING=VALUE...] (default fifo,deadline)")
    parser.add_argument("--seeds", default="2",
                        help="N: seeds 0..N-1, as bench.deadline's --seeds; or a comma-separated "
                             "list of seeds, e.g. 3,5 (default 2)")
    parser.add_argument("--time-scale", type=float, default=Setup.time_scale,
                        help="real seconds per workload second (default 0.05)")
    parser.add_argument("--allocation-interval", type=float, default=None,
                        help="the master's allocation interval, real seconds (default: one "
                             "workload second, the time scale)")
    parser.add_argument("--jobs", type=int, default=0, help="keep the first N jobs (default all)")
    parser.add_argument("--budget-scale", type=float, default=1.0,
                        help="scale every job's trial budget (default 1)")
    parser.add_argument("--timeout", type=float, default=Setup.run_timeout,
                        help="real seconds a run may take (default 1800)")
    parser.add_argument("--out", type=Path,
                        default=ROOT / "bench" / "results" / "deadline" / "runs.jsonl",
                        help="the runs' records, JSON lines (resumed; default "
                             "bench/results/deadline/runs.jsonl)")
    parser.add_argument("--keep", action="store_true", help="keep each run's work directory")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if ALONE in policies:
        parser.error(f"--policies: {ALONE!r} is simulated only (python -m bench.deadline)")
    for policy in policies:
        try:
            policy_spec(policy)
        except ValueError as err:
            parser.error(f"--policies: {err}")
    try:
        seeds = parse_seeds(args.seeds)
    except ValueError:
        parser.error(f"--seeds: invalid value {args.seeds!r}: expected N or a list, e.g. 3,5")
    if not args.time_scale > 0 or not args.budget_scale > 0 or args.jobs < 0:
        parser.error("--time-scale and --budget-scale must be > 0, --jobs >= 0")
    setup = Setup(workload=args.workload, time_scale=args.time_scale,
                  allocation_interval=args.allocation_interval, jobs=args.jobs,
                  budget_scale=args.budget_scale, run_timeout=args.timeout)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    records = run_all(setup, policies, seeds, args.out, keep=args.keep)
    print(report(setup, policies, seeds, records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
