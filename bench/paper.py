"""The paper's experiments (Li, Lu, Sun 2019, §3, Tables 2-4) on the embedded cluster.

Run with ``python -m bench.paper`` (``make bench-paper``). Each run of a cell starts a fresh
:class:`~localmesos.cluster.LocalCluster` shaped like the paper's (3 agents x 12 CPUs x 20 GB)
and one ``da-submit`` *process* per job against it (``--master 127.0.0.1:PORT``): separate
frameworks, job stores and pymesos drivers, AppCore 1 CPU / 1 GB, AppRunner 4 CPUs / 5 GB,
random search, at most 200 trials, ``--target 0.95``. The runner is
``examples/synthetic_cnn.py`` (a documented model of a CNN on MNIST, time-scaled), so each trial
is a real process that reports through the SDK to a real AppCore.

Cells (jobs x parallelism x offer policy):

* Table 2: 1-4 jobs at parallelism 1 (no contention);
* Table 3: one job at parallelism 1, 2, 4, 8;
* Table 4: 1-4 jobs at parallelism 4 (contention: 16 trials wanted, at most 8 fit).

Method (the paper's): ``--runs`` runs per cell (the paper: 10), drop the highest and the lowest,
average the rest. A run's value is the mean job time of its jobs; a job's time is from its
framework's start (``JobRunner``, recorded ``started_at``) to the end of the job (``ended_at``:
the trial that reached 95 % reported, or the budget was spent). Run ``r`` gives job ``j`` the
seed ``1000 * (r + 1) + j`` in *every* cell, so FIFO and the dynamic policies search the same
sequences (paired comparisons); the synthetic runner is deterministic per assignment.

While a run goes, ``/metrics/snapshot`` is polled for CPU use and each framework's declined
offers. Records go to ``<out>/runs.jsonl`` one line per run (an interrupted bench resumes where
it stopped); ``--report`` rebuilds ``<out>/tables.md`` and the plots from them.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
import json
import logging
import os
from pathlib import Path
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any
from urllib.request import urlopen

from bench.jobs import kill_all
from bench.jobs import wait_all
from bench.paper_plots import plot_all
from bench.paper_records import PAPER
from bench.paper_records import PARAMS
from bench.paper_records import ROOT
from bench.paper_records import Setup
from bench.paper_records import cell_values
from bench.paper_records import expected_ideal_speedups
from bench.paper_records import ideal_speedups
from bench.paper_records import run_seed
from bench.paper_records import setup_of
from bench.paper_records import trimmed_mean
from disauto.common.trial_state import TrialState
from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster
from disauto.submit.local import free_port_range


RUNNER = ROOT / "examples" / "synthetic_cnn.py"
POLICIES = ("fifo", "dynamic", "dynamic-plus")
logger = logging.getLogger("bench.paper")

SLOT_MODES = ("task", "warm", "preload")


@dataclass(frozen=True)
class Cell:
    """One configuration: ``jobs`` jobs at ``parallelism`` under ``policy``."""

    jobs: int
    parallelism: int
    policy: str

    @property
    def key(self) -> str:
        return f"j{self.jobs}-p{self.parallelism}-{self.policy}"


def cells_for(tables: Iterable[str], policies: Sequence[str],
              parallelisms: Iterable[int] = (1, 2, 4, 8)) -> list[Cell]:
    """The distinct cells of the tables (Table 2's one job is Table 3's parallelism 1, ...);
    Table 3's columns narrowed to ``parallelisms``."""
    shapes: list[tuple[int, int]] = []
    for table in tables:
        if table == "2":
            shapes += [(jobs, 1) for jobs in (1, 2, 3, 4)]
        elif table == "3":
            shapes += [(1, p) for p in (1, 2, 4, 8) if p in set(parallelisms)]
        elif table == "4":
            shapes += [(jobs, 4) for jobs in (1, 2, 3, 4)]
        else:
            raise ValueError(f"unknown table {table!r}; valid tables: 2, 3, 4")
    unique = list(dict.fromkeys(shapes))
    return [Cell(jobs, p, policy) for jobs, p in unique for policy in policies]


# -- one run ------------------------------------------------------------------------------------


@dataclass
class Sample:
    """One poll of /metrics/snapshot."""

    t: float
    cpus_percent: float
    mem_percent: float
    declined: dict[str, float] = field(default_factory=dict)
    """Framework name -> offers it declined so far."""


class MetricsPoller(threading.Thread):
    """Polls the master's ``/metrics/snapshot`` every ``interval`` seconds."""

    def __init__(self, address: str, interval: float = 0.5) -> None:
        super().__init__(name="bench-metrics", daemon=True)
        self.address = address
        self.interval = interval
        self.samples: list[Sample] = []
        self._halt = threading.Event()
        self._t0 = time.time()

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                with urlopen(f"http://{self.address}/metrics/snapshot",  # noqa: S310 - loopback
                             timeout=5) as response:
                    metrics = json.loads(response.read())
            except OSError:
                metrics = None
            if metrics is not None:
                declined: dict[str, float] = {}
                for key, value in metrics.items():
                    if key.startswith("master/frameworks/") and key.endswith("/offers/declined"):
                        name = key.split("/")[2]
                        declined[name] = declined.get(name, 0.0) + float(value)
                self.samples.append(Sample(time.time() - self._t0,
                                           float(metrics.get("master/cpus_percent", 0.0)),
                                           float(metrics.get("master/mem_percent", 0.0)),
                                           declined))
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join(10)


def free_port_base(span: int = 1000) -> int:
    """A base port whose ``span`` ports nothing listens on (above the 31000 others take)."""
    return free_port_range(span, low=40000, high=60000)[0]


def _read_job(db: Path) -> dict[str, Any]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        rows = conn.execute("SELECT state, priority, objective FROM trials").fetchall()
        first = conn.execute("SELECT min(created_at) FROM trials").fetchone()[0]
        appcores = [r[0] for r in conn.execute(
            "SELECT agent_id FROM appcore_runs ORDER BY attempt").fetchall()]
    config = json.loads(meta.get("config", "{}"))
    started = float(meta.get("started_at", "nan"))
    ended = float(meta.get("ended_at", "nan"))
    return {
        "job_id": meta.get("job_id", ""),
        "app_name": config.get("app_name", ""),
        "seed": int(config.get("search", {}).get("seed", 0)),
        "outcome": meta.get("outcome", "UNKNOWN"),
        "started_at": started,
        "ended_at": ended,
        "seconds": ended - started,
        "search_seconds": ended - float(first) if first is not None else None,
        "trials": len(rows),
        "completed": sum(1 for r in rows if r[0] == TrialState.COMPLETED),
        "max_priority": max((int(r[1]) for r in rows), default=0),
        "best": max((float(r[2]) for r in rows if r[2] is not None), default=None),
        "framework_id": meta.get("framework_id", ""),
        "appcore_agents": appcores,
        "offer_counts": json.loads(meta.get("offer_counts", "{}")),
    }


def run_once(cell: Cell, run: int, setup: Setup, work: Path,
             port_base: int | None = None) -> dict[str, Any]:
    """One run of ``cell``: a fresh cluster, ``cell.jobs`` da-submit processes; its record.

    The cluster's agents share the ports ``port_base`` to ``port_base + 899`` (default: a free
    range), so runs side by side on this machine never clash.
    """
    base = free_port_base() if port_base is None else port_base
    cluster = LocalCluster(ClusterConfig(
        agents=setup.agents, cpus=setup.agent_cpus, mem_mb=setup.agent_mem_mb,
        ports=((base, base + 899),), allocation_interval=setup.allocation_interval,
        work_dir=work / "cluster", status_update_retry_interval=2.0,
        status_update_retry_interval_max=10.0,
    ))
    cluster.start()
    home = work / "home"
    env = {**os.environ, "DISAUTO_HOME": str(home),
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    poller = MetricsPoller(cluster.address)
    poller.start()
    processes: list[subprocess.Popen[bytes]] = []
    started = time.time()
    try:
        for job in range(cell.jobs):
            args = [
                sys.executable, "-m", "disauto.submit.cli", "--master", cluster.address,
                "--app-name", f"paper-job{job}", "--files", str(RUNNER),
                "--app-runner-launch-cmd",
                f"python {RUNNER.name} --time-scale {setup.time_scale:g}",
                "--app-runner-cpus", setup.runner_cpus, "--app-runner-memory",
                setup.runner_memory, "--app-core-cpus", setup.appcore_cpus,
                "--app-core-memory", setup.appcore_memory,
                "--trail-steps", str(setup.max_trials), "--tuning-type", "random-search",
                "--tuning-parameters", str(PARAMS), "--parallelism", str(cell.parallelism),
                "--target", f"{setup.target:g}", "--seed", str(run_seed(run, job)),
                "--offer-policy", cell.policy, "--quiet", *setup.slot_flags(),
            ]
            if cell.policy != "fifo":
                for name, value in setup.priority_settings:
                    args += ["--policy-setting", f"{name}={value}"]
            log = (work / f"job{job}.log").open("wb")
            processes.append(subprocess.Popen(args, cwd=work, env=env, stdout=log,
                                              stderr=subprocess.STDOUT))
        wait_all(processes, setup.run_timeout)
    finally:
        kill_all(processes)
        poller.stop()
        cluster.stop()
    jobs = [_read_job(db) for db in sorted(home.glob("jobs/*/job.db"))]
    jobs.sort(key=lambda j: j["app_name"])
    for job in jobs:
        job["relative_start"] = job["started_at"] - started
    samples = [asdict(s) for s in poller.samples]
    return {
        "cell": cell.key, "jobs": cell.jobs, "parallelism": cell.parallelism,
        "policy": cell.policy, "run": run, "setup": asdict(setup),
        "job_records": jobs, "exit_codes": [p.returncode for p in processes],
        "samples": samples, "wall_seconds": time.time() - started,
        "mean_job_seconds": statistics.fmean(j["seconds"] for j in jobs) if jobs else None,
    }


# -- aggregation ------------------------------------------------------------------------------


def _setup_key(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record's setup, with the fields added since it was written at their defaults (a
    record without ``slot_mode`` ran a command task per trial)."""
    return {"slot_mode": "task", **record["setup"]}


def load_records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def busy_cpus_under_contention(record: Mapping[str, Any]) -> float | None:
    """Mean CPUs in use while at least three of a run's jobs were running (None: never).

    The window opens when the last job has started and closes when the third-to-last ends; the
    CPUs are the master's ``cpus_percent`` samples times the cluster's CPUs.
    """
    jobs = record["job_records"]
    if len(jobs) < 3:
        return None
    opens = max(job["relative_start"] for job in jobs)
    closes = sorted(job["relative_start"] + job["seconds"] for job in jobs)[len(jobs) - 3]
    setup = record["setup"]
    total = float(setup["agents"]) * float(setup["agent_cpus"])
    busy = [sample["cpus_percent"] * total for sample in record["samples"]
            if opens <= sample["t"] <= closes]
    return statistics.fmean(busy) if busy else None


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None or value != value:
        return "-"
    return f"{value:.{digits}f}"


def tables_markdown(records: Sequence[Mapping[str, Any]], policies: Sequence[str],
                    bound_runs: int = 0) -> str:
    """Tables 2-4 in Markdown, ours beside the paper's, with ratios and speed-ups.

    With ``bound_runs``, Table 3 also shows the no-overhead bound in expectation over that
    many seeds (:func:`expected_ideal_speedups`).
    """
    values = cell_values(records)

    def value(jobs: int, p: int, policy: str, runs: set[int] | None = None) -> float | None:
        cell = values.get((jobs, p, policy), {})
        chosen = [v for r, v in cell.items() if runs is None or r in runs]
        return trimmed_mean(chosen) if chosen else None

    def paired(a: tuple[int, int, str], b: tuple[int, int, str]) -> float | None:
        """value(a) / value(b) over the runs both cells have (the same seeds)."""
        common = set(values.get(a, {})) & set(values.get(b, {}))
        top, bottom = value(*a, runs=common), value(*b, runs=common)
        return top / bottom if common and top and bottom else None

    def records_of(jobs: int, p: int, policy: str) -> list[Mapping[str, Any]]:
        return [r for r in records
                if (r["jobs"], r["parallelism"], r["policy"]) == (jobs, p, policy)]

    def runs_of(jobs: int, p: int, policy: str) -> int:
        return len(values.get((jobs, p, policy), []))

    lines: list[str] = []
    specs = [
        ("2", "Table 2: 1-4 jobs at parallelism 1 (no contention), seconds", "jobs",
         [(j, 1) for j in (1, 2, 3, 4)], lambda c: c[0]),
        ("3", "Table 3: one job at parallelism 1, 2, 4, 8, seconds", "parallelism",
         [(1, p) for p in (1, 2, 4, 8)], lambda c: c[1]),
        ("4", "Table 4: 1-4 jobs at parallelism 4 (contention), seconds", "jobs",
         [(j, 4) for j in (1, 2, 3, 4)], lambda c: c[0]),
    ]
    for table, title, column, shapes, label in specs:
        if not any(value(j, p, pol) is not None for j, p in shapes for pol in policies):
            continue
        lines += [f"### {title}", ""]
        lines.append(f"| {column} | " + " | ".join(str(label(s)) for s in shapes) + " |")
        lines.append("|---|" + "---|" * len(shapes))
        for policy in policies:
            row = [_fmt(value(j, p, policy)) for j, p in shapes]
            lines.append(f"| {policy} (ours) | " + " | ".join(row) + " |")
        for policy in policies:
            if policy == "fifo":
                continue
            ratios = []
            for j, p in shapes:
                ratios.append(_fmt(paired((j, p, policy), (j, p, "fifo")), 3))
            lines.append(f"| {policy} / fifo (ours) | " + " | ".join(ratios) + " |")
        if table == "4":
            for policy in policies:
                spread = []
                for j, p in shapes:
                    agents = [len({job["appcore_agents"][0] for job in r["job_records"]
                                   if job["appcore_agents"]})
                              for r in records_of(j, p, policy)]
                    spread.append(_fmt(statistics.fmean(agents), 2) if agents else "-")
                lines.append(f"| agents holding AppCores, {policy} (mean) | "
                             + " | ".join(spread) + " |")
            for policy in policies:
                busy = []
                for j, p in shapes:
                    cpus = [c for r in records_of(j, p, policy)
                            if (c := busy_cpus_under_contention(r)) is not None]
                    busy.append(_fmt(statistics.fmean(cpus)) if cpus else "-")
                lines.append(f"| CPUs busy while 3 or more jobs run, {policy} (mean) | "
                             + " | ".join(busy) + " |")
        if table == "3":
            for policy in policies:
                speed = [_fmt(paired((1, 1, policy), (j, p, policy)), 2) for j, p in shapes]
                lines.append(f"| speed-up, {policy} (ours) | " + " | ".join(speed) + " |")
            bound = ideal_speedups(records)
            if bound:
                lines.append("| speed-up with no overhead at all (the bound: same seeds, the "
                             "model's trial times) | " + " | ".join(
                                 _fmt(bound[p], 2) for _, p in shapes) + " |")
            if bound and bound_runs:
                expected = expected_ideal_speedups(setup_of(records[0]), bound_runs)
                lines.append(f"| speed-up with no overhead at all, expected (the bound over "
                             f"{bound_runs} seeds, plain means) | " + " | ".join(
                                 _fmt(expected[p], 2) for _, p in shapes) + " |")
            for policy in policies:
                search: dict[int, dict[int, float]] = {}
                for j, p in shapes:
                    search[p] = {
                        int(r["run"]): statistics.fmean(job["search_seconds"]
                                                        for job in r["job_records"])
                        for r in records_of(j, p, policy)
                        if all(job.get("search_seconds") is not None
                               for job in r["job_records"])}
                speed = []
                for _, p in shapes:
                    common = sorted(set(search[1]) & set(search[p]))
                    speed.append(_fmt(trimmed_mean([search[1][r] for r in common])
                                      / trimmed_mean([search[p][r] for r in common]), 2)
                                 if common else "-")
                lines.append(f"| speed-up of the search alone (first trial submitted to the "
                             f"end), {policy} | " + " | ".join(speed) + " |")
        for policy, row in PAPER[table].items():
            lines.append(f"| {policy} (paper) | " + " | ".join(
                _fmt(row.get(label(s))) for s in shapes) + " |")
        paper = PAPER[table]
        if table == "3":
            lines.append("| speed-up, fifo (paper) | " + " | ".join(
                _fmt(paper["fifo"][1] / paper["fifo"][label(s)], 2) for s in shapes) + " |")
        else:
            lines.append("| dynamic / fifo (paper) | " + " | ".join(
                _fmt(paper["dynamic"][label(s)] / paper["fifo"][label(s)], 3)
                for s in shapes) + " |")
        counts = sorted({runs_of(j, p, pol) for j, p in shapes for pol in policies})
        lines += ["", f"Runs per cell: {', '.join(map(str, counts))} (highest and lowest "
                      "dropped from 3 or more). Ratios and speed-ups are taken over the runs "
                      "both cells have (the same seeds).", ""]
    outcomes = [j["outcome"] for r in records for j in r["job_records"]]
    missed = sum(1 for o in outcomes if o != "TARGET_REACHED")
    lines.append(f"Jobs that ended without reaching 95 % (budget of 200 trials spent, or "
                 f"failed): {missed} of {len(outcomes)}.")
    return "\n".join(lines) + "\n"


# -- the command --------------------------------------------------------------------------------


def run_groups(todo: Sequence[tuple[int, Cell]], setup: Setup, runs_path: Path,
               side_by_side: int) -> None:
    """Run ``todo`` in order, appending each record to ``runs_path`` as it completes.

    The policies of one parallelism-1 cell and run go side by side (up to ``side_by_side``, each
    on its own cluster and ports); everything else runs alone on the machine.
    """
    groups: list[list[tuple[int, Cell]]] = []
    for run, cell in todo:
        last = groups[-1] if groups else None
        if (last is not None and cell.parallelism == 1 and len(last) < side_by_side
                and all(r == run and (c.jobs, c.parallelism) == (cell.jobs, 1)
                        for r, c in last)):
            last.append((run, cell))
        else:
            groups.append([(run, cell)])
    lock = threading.Lock()
    finished = 0

    def one(run: int, cell: Cell, base: int) -> None:
        nonlocal finished
        work = Path(tempfile.mkdtemp(prefix=f"bench-paper-{cell.key}-r{run}-"))
        try:
            record = run_once(cell, run, setup, work, port_base=base)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        with lock:
            with runs_path.open("a") as out:
                out.write(json.dumps(record) + "\n")
            finished += 1
            logger.info("[%d/%d] %s run %d: mean job %.1f s (%s), wall %.0f s", finished,
                        len(todo), cell.key, run, record["mean_job_seconds"] or float("nan"),
                        ", ".join(f"{j['seconds']:.1f}" for j in record["job_records"]),
                        record["wall_seconds"])

    for group in groups:
        base = free_port_base(1000 * len(group))
        threads = [threading.Thread(target=one, args=(run, cell, base + 1000 * index),
                                    name=f"bench-{cell.key}-r{run}")
                   for index, (run, cell) in enumerate(group)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def _settings(items: Sequence[str]) -> tuple[tuple[str, str], ...]:
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SystemExit(f"bench.paper: error: --priority-setting: invalid value {item!r}: "
                             "expected KEY=VALUE")
        out.append((name.strip(), value.strip()))
    return tuple(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.paper", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", default="2,3,4", help="which tables (default 2,3,4)")
    parser.add_argument("--runs", type=int, default=3,
                        help="runs per cell (default 3, a reduced matrix; the paper: 10)")
    parser.add_argument("--policies", default=",".join(POLICIES),
                        help=f"offer policies (default {','.join(POLICIES)})")
    parser.add_argument("--time-scale", type=float, default=Setup.time_scale,
                        help="real seconds per modelled training second (default 0.05)")
    parser.add_argument("--allocation-interval", type=float,
                        default=Setup.allocation_interval,
                        help="the master's allocation interval, seconds (default 0.1)")
    parser.add_argument("--priority-setting", action="append", default=[],
                        metavar="KEY=VALUE", help="passed to the dynamic policies' jobs")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "paper",
                        help="where runs.jsonl and tables.md go")
    parser.add_argument("--plots", type=Path, default=None,
                        help="where the PNG plots go (default docs/, or --out with a "
                             "--slot-mode other than task)")
    parser.add_argument("--slot-mode", default="task", choices=SLOT_MODES,
                        help="task (default): a Mesos command task per trial; warm: warm "
                             "slots; preload: warm slots with --slot-preload apprunner_sdk")
    parser.add_argument("--parallelisms", default="1,2,4,8",
                        help="Table 3's columns to run (default 1,2,4,8)")
    parser.add_argument("--side-by-side", type=int, default=3, metavar="N",
                        help="run up to N policies of one parallelism-1 cell at once, each on "
                             "its own cluster (they use little CPU; default 3, 1 = never)")
    parser.add_argument("--fresh", action="store_true",
                        help="discard earlier runs in --out instead of resuming")
    parser.add_argument("--bound-runs", type=int, default=300, metavar="N",
                        help="Table 3's no-overhead bound in expectation over the seeds of N "
                             "runs (default 300, about a minute; 0 leaves the row out)")
    parser.add_argument("--report", action="store_true",
                        help="only rebuild tables and plots from --out/runs.jsonl")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    logger.setLevel(logging.INFO)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        parser.error(f"--policies: unknown policy {unknown[0]!r}; valid: {', '.join(POLICIES)}")
    if args.runs < 1:
        parser.error(f"--runs: invalid value {args.runs}: expected an integer >= 1")
    if args.bound_runs < 0:
        parser.error(f"--bound-runs: invalid value {args.bound_runs}: expected an integer >= 0")
    try:
        parallelisms = [int(p) for p in args.parallelisms.split(",") if p.strip()]
    except ValueError:
        parser.error(f"--parallelisms: invalid value {args.parallelisms!r}: expected numbers "
                     "from 1, 2, 4, 8 separated by commas")
    try:
        cells = cells_for([t.strip() for t in args.tables.split(",") if t.strip()], policies,
                          parallelisms)
    except ValueError as err:
        parser.error(f"--tables: {err}")
    default_settings = (("decline_filter_seconds", f"{args.allocation_interval:g}"),)
    setup = Setup(time_scale=args.time_scale, allocation_interval=args.allocation_interval,
                  priority_settings=default_settings + _settings(args.priority_setting),
                  slot_mode=args.slot_mode)
    if args.plots is None:
        args.plots = ROOT / "docs" if args.slot_mode == "task" else args.out
    setup_key = json.loads(json.dumps(asdict(setup)))  # as the records hold it
    args.out.mkdir(parents=True, exist_ok=True)
    runs_path = args.out / "runs.jsonl"
    if args.fresh and runs_path.exists():
        runs_path.unlink()
    if not args.report:
        done = {(r["cell"], r["run"]) for r in load_records(runs_path)
                if _setup_key(r) == setup_key}
        todo = [(run, cell) for run in range(args.runs) for cell in cells
                if (cell.key, run) not in done]
        logger.info("%d runs to do (%d cells x %d runs; %d already recorded)", len(todo),
                    len(cells), args.runs, len(done))
        run_groups(todo, setup, runs_path, max(1, args.side_by_side))
    records = [r for r in load_records(runs_path) if _setup_key(r) == setup_key
               and r["policy"] in policies]
    text = tables_markdown(records, policies, bound_runs=args.bound_runs)
    (args.out / "tables.md").write_text(text)
    print(text)
    for path in plot_all(records, policies, args.plots):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
