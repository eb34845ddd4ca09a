"""The default demo search before and after issue 36's item 4: a task per trial against the new
default (warm slots with ``--slot-preload auto``), interleaved.

Run with ``python -m bench.default_path`` (``make bench-default-path``). It runs ``make
demo``'s search (``examples/sklearn_digits.py``: an SVM on scikit-learn's digits, 16 trials, 4
at a time, seed 7; ``--trials`` and ``--parallelism`` change it) as ``da-submit --master
local``, ``--runs`` times in each mode, alternating: task, default, task, default, ... so that
a change in the machine's load falls on both modes alike. ``task`` adds ``--slot-mode task``
(what the demo ran before); ``default`` adds nothing.

For each run it prints da-submit's wall time (cluster start, the search and the report: what
the user waits for), the job's own duration (``results.json``), the median start-up and run of
its trials (``submit/startup_hint.py``: from a trial's task start to its script's clock, and
from there to its final report) and the machine's 1-minute load average before and after the
run (``os.getloadavg``); then each mode's min, median and max with the load averages seen.
Figures taken while other work loads the machine are not final: say so beside them.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
import json
import os
from pathlib import Path
import statistics
import subprocess
import sys
import tempfile
import time

from disauto.framework.record import JobStore
from disauto.submit.startup_hint import startup_and_run


ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
MODES = {"task": ("--slot-mode", "task"), "default": ()}


@dataclass
class Run:
    mode: str
    wall: float
    job: float
    start_up: float
    ran: float
    load_before: float
    load_after: float


def demo_command(trials: int, parallelism: int, mode: str) -> list[str]:
    """``make demo``'s da-submit command (its paths absolute), with ``mode``'s flags."""
    return [
        sys.executable, "-m", "disauto.submit.cli", "--app-name", f"digits-demo-{mode}",
        "--files", str(EXAMPLES / "sklearn_digits.py"),
        "--app-runner-launch-cmd", "python sklearn_digits.py",
        "--app-runner-cpus", "0.5", "--app-runner-memory", "256M",
        "--app-core-cpus", "0.5", "--app-core-memory", "256M",
        "--trail-steps", str(trials), "--parallelism", str(parallelism),
        "--tuning-type", "random-search",
        "--tuning-parameters", str(EXAMPLES / "sklearn_digits_params.json"), "--seed", "7",
        "--quiet", *MODES[mode]]


def run_once(mode: str, trials: int, parallelism: int) -> Run:
    """One da-submit run of the demo in a home of its own, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix=f"bench-default-{mode}-") as folder:
        home = Path(folder)
        env = {**os.environ, "DISAUTO_HOME": str(home),
               "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        before = os.getloadavg()[0]
        started = time.monotonic()
        done = subprocess.run(demo_command(trials, parallelism, mode), cwd=home, env=env,
                              capture_output=True, text=True, timeout=1800, check=False)
        wall = time.monotonic() - started
        after = os.getloadavg()[0]
        if done.returncode != 0:
            raise RuntimeError(f"{mode}: da-submit exited {done.returncode}: "
                               f"{(done.stderr or done.stdout)[-2000:]}")
        (job_dir,) = (home / "jobs").iterdir()
        results = json.loads((job_dir / "results.json").read_text())
        completed = [t for t in results["trials"] if t["state"] == "COMPLETED"]
        if len(completed) != trials or any(t["tries"] for t in completed):
            raise RuntimeError(f"{mode}: {len(completed)} of {trials} trials completed once")
        store = JobStore(job_dir / "job.db")
        try:
            starts, runs = startup_and_run(store.trials(), store.first_reports())
        finally:
            store.close()
        return Run(mode, wall, float(results["duration_seconds"]), statistics.median(starts),
                   statistics.median(runs), before, after)


def summary(runs: Sequence[Run]) -> list[str]:
    """Each mode's min, median and max wall time, job time and start-up, with its loads."""
    lines = [f"{'mode':<8} {'runs':>4}  {'wall s min/median/max':>22}  "
             f"{'job s min/median/max':>21}  {'start-up s':>10}  load avg (1 min)"]
    for mode in MODES:
        mine = [r for r in runs if r.mode == mode]
        if not mine:
            continue
        walls, jobs = [r.wall for r in mine], [r.job for r in mine]
        loads = [r.load_before for r in mine] + [r.load_after for r in mine]
        lines.append(
            f"{mode:<8} {len(mine):>4}  {_spread(walls):>22}  {_spread(jobs):>21}  "
            f"{statistics.median(r.start_up for r in mine):>10.2f}  "
            f"{min(loads):.2f}-{max(loads):.2f}")
    return lines


def _spread(values: Sequence[float]) -> str:
    return f"{min(values):.1f}/{statistics.median(values):.1f}/{max(values):.1f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.default_path",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each mode (default 3)")
    parser.add_argument("--trials", type=int, default=16, help="the budget (default 16)")
    parser.add_argument("--parallelism", type=int, default=4, help="default 4")
    parser.add_argument("--json", type=Path, help="also write the runs to this file")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.trials < 1 or args.parallelism < 1:
        parser.error("--runs, --trials and --parallelism must be at least 1")
    print(f"{os.cpu_count()} CPUs; the demo search: {args.trials} trials, parallelism "
          f"{args.parallelism}; modes interleaved, {args.runs} runs each", flush=True)
    runs: list[Run] = []
    for index in range(args.runs):
        for mode in MODES:
            try:
                run = run_once(mode, args.trials, args.parallelism)
            except (RuntimeError, subprocess.TimeoutExpired) as err:
                print(f"bench.default_path: error: {err}", file=sys.stderr)
                return 1
            runs.append(run)
            print(f"run {index + 1} {mode:<8} wall {run.wall:6.1f} s  job {run.job:6.1f} s  "
                  f"start-up {run.start_up:5.2f} s, run {run.ran:4.2f} s (medians)  "
                  f"load {run.load_before:.2f} -> {run.load_after:.2f}", flush=True)
    print()
    print("\n".join(summary(runs)))
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in runs], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
