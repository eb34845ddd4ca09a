"""DisAuto at scale: a 10,000-trial job, 50 jobs on one cluster, 500 agents (issue 29).

One command, three parts (``python -m bench.scale``; ``--short`` runs each small, as the test
suite does; ``--parts`` picks some)::

    python -m bench.scale                      # the full run (docs/benchmarks.md, "At scale")
    python -m bench.scale --short              # small: 300 trials, 6 jobs of 4 agents, 50 agents
    python -m bench.scale --parts job --trials 1000 --parallelism 8 --algorithms random

1. **job**: one ``da-submit --master local`` job of ``--trials`` trials (10,000) at
   ``--parallelism`` (16) on preloaded warm slots (``--slot-preload apprunner_sdk``), with random
   search and with TPE. Each trial reports ``--steps`` (3) intermediate values, sleeps
   ``--seconds`` (0.05) and reports its final value. Measured from the record and ``/proc``:
   wall against ideal, trials per second, the turnaround per slot (one trial's end to the next
   one's start on the same slot, median and p99), AppCore's suggestion latency at 1k, 5k and 10k
   trials (its own log), the peak memory of ``da-submit`` and of AppCore (and their resident
   memory at each thousand trials: flat after the first 1,000?), ``job.db``'s size, the time of
   ``da-job status`` and ``da-job results --format json`` and the job page's periodic data call
   (time and bytes) during the job (at each of ``--probes``) and after it, and report.html's
   size; the time ``da-submit`` spends outside its trials' span (start and end).
2. **cluster** (``bench/scale_cluster.py``): ``--jobs`` (50) small jobs submitted at once to one
   ``da-cluster`` of ``--agents`` (20) agents.
3. **offers** (``bench/scale_offers.py``): the embedded master's allocation time with
   ``--offer-agents`` (500) agents and ``--offer-frameworks`` (50) frameworks, and each offer
   policy's time to answer one round of 500 offers.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
import json
import math
import os
from pathlib import Path
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

from bench.scale_record import Throughput
from bench.scale_record import cpu_seconds
from bench.scale_record import ended_count
from bench.scale_record import find_process
from bench.scale_record import read_spans
from bench.scale_record import rss_bytes
from bench.scale_record import steady_cpu
from bench.scale_record import suggestion_latency
from bench.scale_record import throughput


ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable

TRIAL = '''
import sys, time
from apprunner_sdk import get_params, report
params = get_params()
value = (params["x"] - 0.3) ** 2 + abs(params["y"] - 0.01) + 0.1 * params["n"] \\
    + (0.0 if params["kind"] == "b" else 0.5)
for step in range(int(sys.argv[1])):
    report(loss=value + 1.0 / (step + 1), step=step)
time.sleep(float(sys.argv[2]))
report(loss=value, final=True)
'''

SPACE = {"parameters": [
    {"name": "x", "type": "bound", "value": [0.0, 1.0]},
    {"name": "y", "type": "bound", "value": [1e-4, 1.0], "log": True},
    {"name": "n", "type": "int", "value": [1, 8]},
    {"name": "kind", "type": "choice", "value": ["a", "b", "c"]},
]}

ALGORITHMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "random": ("random-search", ()), "tpe": ("bayesian", ("--bayes-backend", "tpe"))}


@dataclass
class Probe:
    """What ``da-job`` and the job page answered at one point of the job."""

    at: int
    """Trials ended when it was taken (-1: after the job)."""
    status_s: float = math.nan
    results_s: float = math.nan
    results_bytes: int = 0
    page_s: float = math.nan
    page_bytes: int = 0
    page_next_s: float = math.nan
    page_next_bytes: int = 0
    """The page's next periodic call (what changed since the first)."""
    submit_rss: int = 0
    appcore_rss: int = 0


@dataclass
class JobFigures:
    """One job of the job part."""

    algorithm: str
    trials: int
    parallelism: int
    total: float = 0.0
    """da-submit's whole run, seconds."""
    through: Throughput | None = None
    outside: float = 0.0
    """``total`` less the trials' span: start and end."""
    submit_peak: int = 0
    appcore_peak: int = 0
    db_bytes: int = 0
    report_bytes: int = 0
    suggest: dict[int, tuple[float, float, float]] = field(default_factory=dict)
    probes: list[Probe] = field(default_factory=list)
    memory: list[tuple[int, int, int]] = field(default_factory=list)
    """(trials ended, da-submit RSS, AppCore RSS) at each thousand trials."""
    states: dict[str, int] = field(default_factory=dict)
    exit_code: int = 0
    cpu: list[tuple[int, float, float]] = field(default_factory=list)
    """(trials ended, da-submit CPU seconds, AppCore CPU seconds) every half second."""

    def cpu_per_trial(self) -> tuple[float, float]:
        """Steady CPU milliseconds per trial of da-submit and of AppCore."""
        return (steady_cpu([(n, s) for n, s, _ in self.cpu], self.trials) * 1000,
                steady_cpu([(n, a) for n, _, a in self.cpu], self.trials) * 1000)


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "DISAUTO_HOME": str(home),
            "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def submit_command(work: Path, algorithm: str, trials: int, parallelism: int, steps: int,
                   seconds: float, extra: Sequence[str] = ()) -> list[str]:
    """The ``da-submit`` command of one scale job (its files written to ``work``)."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "scale_trial.py").write_text(TRIAL)
    (work / "space.json").write_text(json.dumps(SPACE))
    tuning, settings = ALGORITHMS[algorithm]
    return [
        PYTHON, "-m", "disauto.submit.cli", "--app-name", f"scale-{algorithm}",
        "--files", str(work / "scale_trial.py"),
        "--app-runner-launch-cmd", f"python scale_trial.py {steps} {seconds}",
        "--app-runner-cpus", "0.1", "--app-runner-memory", "64M",
        "--app-core-cpus", "0.5", "--app-core-memory", "512M",
        "--tuning-parameters", str(work / "space.json"), "--tuning-type", tuning, *settings,
        "--trail-steps", str(trials), "--parallelism", str(parallelism), "--seed", "1",
        "--objective", "loss", "--direction", "minimize", "--max-failed-trials", "0",
        "--slot-mode", "warm", "--slot-preload", "apprunner_sdk", "--quiet", *extra,
    ]


def _timed(command: Sequence[str], env: dict[str, str]) -> tuple[float, int, str]:
    """Seconds ``command`` took, its exit code and its output."""
    started = time.monotonic()
    done = subprocess.run(list(command), env=env, capture_output=True, text=True, check=False,
                          timeout=300)
    return time.monotonic() - started, done.returncode, done.stdout


def _get(url: str) -> tuple[float, bytes]:
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=60) as answer:  # noqa: S310 - loopback
        body = answer.read()
    return time.monotonic() - started, body


def page_calls(base: str) -> tuple[float, int, float, int]:
    """The page's first data call and its next periodic one, as ``static/job.js`` makes them:
    (seconds, bytes) of each."""
    first_s, body = _get(base + "api/page")
    versions = json.loads(body).get("versions") or {}
    have = ",".join(f"{name}:{version}" for name, version in versions.items())
    next_s, again = _get(base + "api/page?have=" + urllib.parse.quote(have))
    return first_s, len(body), next_s, len(again)


def probe(job_id: str, env: dict[str, str], page: str, at: int) -> Probe:
    """``da-job status``, ``da-job results --format json`` and the page's data call, timed."""
    found = Probe(at)
    found.status_s, _, _ = _timed([PYTHON, "-m", "disauto.submit.job_cli", "status", job_id],
                                  env)
    found.results_s, code, text = _timed(
        [PYTHON, "-m", "disauto.submit.job_cli", "results", job_id, "--format", "json"], env)
    found.results_bytes = len(text.encode()) if code == 0 else 0
    if page:
        try:
            found.page_s, found.page_bytes, found.page_next_s, found.page_next_bytes = \
                page_calls(page)
        except OSError:
            pass
    return found


class _Watch:
    """Follows a running job: its processes' memory and, at each probe point, a probe."""

    def __init__(self, process: subprocess.Popen[bytes], home: Path, env: dict[str, str],
                 probes: Sequence[int], figures: JobFigures, memory_step: int = 1000) -> None:
        self._process = process
        self._memory_step = memory_step
        self._home = home
        self._env = env
        self._probes = sorted(probes)
        self._figures = figures
        self._appcore: int | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self) -> None:
        self._thread.join(30)

    def _db(self) -> Path | None:
        found = sorted(self._home.glob("jobs/*/job.db"))
        return found[0] if found else None

    def _run(self) -> None:
        figures = self._figures
        step = self._memory_step
        next_thousand = step
        while self._process.poll() is None:
            time.sleep(0.5)
            db = self._db()
            if db is None:
                continue
            if self._appcore is None:
                self._appcore = find_process(self._process.pid, "disauto.appcore")
            submit_now, submit_peak = rss_bytes(self._process.pid)
            appcore_now, appcore_peak = rss_bytes(self._appcore) if self._appcore else (0, 0)
            figures.submit_peak = max(figures.submit_peak, submit_peak)
            figures.appcore_peak = max(figures.appcore_peak, appcore_peak)
            ended = ended_count(db)
            figures.cpu.append((ended, cpu_seconds(self._process.pid),
                                cpu_seconds(self._appcore) if self._appcore else 0.0))
            if ended >= next_thousand and submit_now:
                figures.memory.append((ended, submit_now, appcore_now))
                next_thousand = (ended // step + 1) * step
            if self._probes and ended >= self._probes[0] and submit_now:
                self._probes.pop(0)
                taken = probe(db.parent.name, self._env, _page_url(db), ended)
                taken.submit_rss, taken.appcore_rss = submit_now, appcore_now
                figures.probes.append(taken)


def _page_url(db: Path) -> str:
    """The job page's address from the record ("" before it is recorded)."""
    from contextlib import closing
    import sqlite3

    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)) as con:
            row = con.execute("SELECT value FROM meta WHERE key = 'webui_url'").fetchone()
    except sqlite3.Error:
        return ""
    url = str(row[0]) if row else ""
    return url if not url or url.endswith("/") else url + "/"


def run_job(work: Path, algorithm: str, trials: int, parallelism: int, steps: int,
            seconds: float, probes: Sequence[int], memory_step: int = 1000) -> JobFigures:
    """One job of the job part, followed while it runs and measured after (the processes'
    memory each ``memory_step`` trials)."""
    home = work / "home"
    env = _env(home)
    command = submit_command(work, algorithm, trials, parallelism, steps, seconds)
    figures = JobFigures(algorithm, trials, parallelism)
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    watch = _Watch(process, home, env, probes, figures, memory_step)
    watch.start()
    _, err = process.communicate(timeout=6 * 3600)
    figures.total = time.monotonic() - started
    figures.exit_code = process.returncode
    watch.join()
    if process.returncode != 0:
        raise RuntimeError(f"da-submit exited {process.returncode}: {err.decode()[-2000:]}")
    (db,) = home.glob("jobs/*/job.db")
    folder = db.parent
    spans = read_spans(db)
    figures.states = {state: sum(1 for s in spans if s.state == state)
                      for state in sorted({s.state for s in spans})}
    figures.through = throughput(spans, parallelism, seconds)
    figures.outside = figures.total - figures.through.span
    figures.db_bytes = sum(p.stat().st_size for p in folder.glob("job.db*"))
    report = folder / "report.html"
    figures.report_bytes = report.stat().st_size if report.exists() else 0
    figures.suggest = suggestion_latency(folder / "logs" / "appcore-1.stderr")
    figures.probes.append(_after(folder.name, env))
    return figures


def _after(job_id: str, env: dict[str, str]) -> Probe:
    """The probe of an ended job: its page served by ``da-job ui`` from the record."""
    server = subprocess.Popen([PYTHON, "-m", "disauto.submit.job_cli", "ui"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = ""
        assert server.stdout is not None
        for line in server.stdout:
            match = re.search(r"(http://\S+)", line)
            if match:
                url = match.group(1).rstrip("/") + f"/jobs/{job_id}/"
                break
        return probe(job_id, env, url, -1)
    finally:
        server.terminate()
        server.wait(10)


def _mb(value: float) -> str:
    return f"{value / 1e6:.0f} MB"


def job_table(results: Sequence[JobFigures]) -> str:
    """The job part's tables, as docs/benchmarks.md has them."""
    lines = ["| algorithm | trials | P | total s | span s | ideal s | outside s | trials/s | "
             "run p50 ms | turnaround p50 ms | p99 ms | da-submit peak | AppCore peak | "
             "job.db | report.html | CPU ms/trial: da-submit | AppCore |", "|" + "---|" * 17]
    for f in results:
        t = f.through
        assert t is not None
        lines.append(
            f"| {f.algorithm} | {t.trials} | {f.parallelism} | {f.total:.1f} | {t.span:.1f} | "
            f"{t.ideal:.1f} | {f.outside:.1f} | {t.rate:.1f} | {t.run_median * 1000:.0f} | "
            f"{t.turnaround_median * 1000:.0f} | {t.turnaround_p99 * 1000:.0f} | "
            f"{_mb(f.submit_peak)} | {_mb(f.appcore_peak)} | {_mb(f.db_bytes)} | "
            f"{_mb(f.report_bytes)} | {f.cpu_per_trial()[0]:.1f} | "
            f"{f.cpu_per_trial()[1]:.1f} |")
    lines += ["", "| algorithm | suggestions at | p50 ms | p99 ms | max ms |",
              "|---|---|---|---|---|"]
    for f in results:
        for at, (p50, p99, top) in sorted(f.suggest.items()):
            lines.append(f"| {f.algorithm} | {at} | {p50:.1f} | {p99:.1f} | {top:.1f} |")
    lines += ["", "| algorithm | trials ended | da-job status s | da-job results json s | "
              "results bytes | page call ms | bytes | next call ms | bytes | da-submit RSS | "
              "AppCore RSS |", "|" + "---|" * 11]
    for f in results:
        for p in f.probes:
            at = "after" if p.at < 0 else str(p.at)
            lines.append(
                f"| {f.algorithm} | {at} | {p.status_s:.2f} | {p.results_s:.2f} | "
                f"{p.results_bytes} | {p.page_s * 1000:.0f} | {p.page_bytes} | "
                f"{p.page_next_s * 1000:.0f} | {p.page_next_bytes} | "
                f"{_mb(p.submit_rss) if p.submit_rss else '-'} | "
                f"{_mb(p.appcore_rss) if p.appcore_rss else '-'} |")
    lines += ["", "| algorithm | trials ended | da-submit RSS | AppCore RSS |",
              "|---|---|---|---|"]
    for f in results:
        for ended, submit, appcore in f.memory:
            lines.append(f"| {f.algorithm} | {ended} | {_mb(submit)} | {_mb(appcore)} |")
    return "\n".join(lines)


def load_note() -> str:
    """The machine's cores and load, to print with the figures."""
    one, five, _ = os.getloadavg()
    return f"{os.cpu_count()} cores, load average {one:.1f} (1 min) {five:.1f} (5 min)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--short", action="store_true",
                        help="every part small (the test suite's size)")
    parser.add_argument("--parts", nargs="+", default=["job", "cluster", "offers"],
                        choices=["job", "cluster", "offers"])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--parallelism", type=int, default=16)
    parser.add_argument("--algorithms", nargs="+", default=["random", "tpe"],
                        choices=sorted(ALGORITHMS))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=0.05)
    parser.add_argument("--probes", type=int, nargs="*", default=[1000, 5000])
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--offer-agents", type=int, default=500)
    parser.add_argument("--offer-frameworks", type=int, default=50)
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep the jobs' folders under this folder")
    args = parser.parse_args(argv)
    if args.short:
        args.trials, args.parallelism, args.probes = 300, 8, [100]
        args.jobs, args.agents = 6, 4
        args.offer_agents, args.offer_frameworks = 50, 5
    print(f"bench.scale on {load_note()}", flush=True)
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    if "job" in args.parts:
        results = []
        for algorithm in args.algorithms:
            results.append(run_job(scratch / f"job-{algorithm}", algorithm, args.trials,
                                   args.parallelism, args.steps, args.seconds, args.probes))
        print(job_table(results), flush=True)
    if "cluster" in args.parts:
        from bench.scale_cluster import cluster_table
        from bench.scale_cluster import run_cluster

        print(cluster_table(run_cluster(scratch / "cluster", args.jobs, args.agents)),
              flush=True)
    if "offers" in args.parts:
        from bench.scale_offers import run_offers

        print(run_offers(args.offer_agents, args.offer_frameworks), flush=True)
    print(f"load after: {load_note()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
