"""The performance targets in a few minutes: each figure beside its target (``make bench-quick``).

Reduced versions of the benches the targets come from, run one after the other on this machine:

1. **default task mode** (``bench.warm_slots``' ``disauto-task``): ``--trials`` (32) trials that
   sleep 1 s, 8 at a time, a command task per trial; the slot's cost per trial from da-submit's
   whole run, ``(whole run - ideal) / waves`` (the target: 64 trials in <= 10.5 s, 8 waves of
   1 s, i.e. <= 0.31 s a wave), and from the trials' own span (start-up left out);
2. **preloaded warm slots**: the same with ``--slot-preload apprunner_sdk`` (<= 10.0 s: <= 0.25
   s a wave), then ``bench.scale``'s job of ``--scale-trials`` (1,600) quick trials at
   parallelism 8: trials per second, the turnaround per slot (p50 and p99) and the CPU a trial
   costs da-submit and AppCore;
3. **memory**: da-submit's resident memory along that job, each ``--scale-trials / 8`` trials,
   and its growth per trial after the first 1,000 (the target; the short job shows the slope,
   not the 10,000-trial peak);
4. **the page and the record**: after that job, the page's periodic data call (ms, bytes) from
   ``da-job ui`` and ``da-job results --format json`` (seconds and CPU), at the job's size (the
   targets are for 10,000 trials; ``tests/framework/webui/test_big_job.py`` checks the bytes
   there), and the page's first paint of its table in a browser, cold (``bench.page_paint``);
5. **16 cores**: not measured here.

Every figure is printed with the load average before and after it: on a machine others share,
times are upper bounds (docs/benchmarks.md); CPU per trial and memory per trial move less.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
import math
import os
from pathlib import Path
import re
import resource
import subprocess
import sys
import tempfile
import time
from typing import TypeVar

from bench.scale import JobFigures
from bench.scale import _env
from bench.scale import page_calls
from bench.scale import run_job
from bench.warm_slots import Result
from bench.warm_slots import run_disauto


T = TypeVar("T")
KB = 1024


@dataclass(frozen=True)
class Line:
    """One figure beside its target."""

    target: str
    figure: str
    goal: str
    met: bool | None
    """None: not measured, or no pass/fail at this size."""
    load: str


def _load() -> float:
    return os.getloadavg()[0]


def measured(run: Callable[[], T]) -> tuple[T, str]:
    """``run()``'s result and the 1-minute load average before and after it."""
    before = _load()
    result = run()
    return result, f"{before:.1f} -> {_load():.1f}"


def per_wave(result: Result) -> tuple[float, float]:
    """Seconds each wave of trials cost a slot beyond its sleep: from da-submit's whole run,
    and from the trials' own span."""
    waves = math.ceil(result.trials / result.parallelism)
    return (result.total - result.ideal) / waves, (result.wall - result.ideal) / waves


def slot_lines(name: str, result: Result, load: str, whole_goal: float) -> list[Line]:
    whole, span = per_wave(result)
    return [
        Line(name, f"{whole:.3f} s a wave from the whole run ({result.total:.1f} s for "
             f"{result.trials} x {result.seconds:g} s, P = {result.parallelism})",
             f"<= {whole_goal:.2f} s", whole <= whole_goal, load),
        Line(name, f"{span:.3f} s a wave within the trials' span", "(start-up left out)",
             None, load),
    ]


AFTER = 1000
"""The growth per trial is measured after this many trials: until then the embedded master's
completed tasks (1,000 a framework, as Mesos keeps) and the first trials' allocations grow."""


def growth_per_trial(memory: Sequence[tuple[int, int, int]], after: int = AFTER) -> float:
    """da-submit's resident bytes per trial from its first sample at ``after`` trials or more
    to its last (NaN without two such samples)."""
    kept = [sample for sample in memory if sample[0] >= after]
    if len(kept) < 2:
        return math.nan
    (first, rss_first, _), (last, rss_last, _) = kept[0], kept[-1]
    return (rss_last - rss_first) / max(1, last - first)


def results_cpu(job_id: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall and user + system CPU seconds of ``da-job results JOB --format json``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "disauto.submit.job_cli", "results", job_id,
                    "--format", "json"], env=env, stdout=subprocess.DEVNULL, check=True,
                   timeout=600)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def job_lines(figures: JobFigures, load: str) -> list[Line]:
    t = figures.through
    assert t is not None
    submit_ms, appcore_ms = figures.cpu_per_trial()
    growth = growth_per_trial(figures.memory)
    return [
        Line("2 preload", f"{t.rate:.1f} trials/s ({t.trials} trials, P = {figures.parallelism})",
             ">= 50 trials/s", t.rate >= 50, load),
        Line("2 preload", f"turnaround p50 {t.turnaround_median * 1000:.0f} ms",
             "<= 20 ms", t.turnaround_median <= 0.020, load),
        Line("2 preload", f"turnaround p99 {t.turnaround_p99 * 1000:.0f} ms",
             "<= 100 ms", t.turnaround_p99 <= 0.100, load),
        Line("2 preload",
             f"CPU a trial: da-submit {submit_ms:.1f} ms, AppCore {appcore_ms:.1f} ms",
             "(what bounds trials/s)", None, load),
        Line("3 memory", f"da-submit +{growth / KB:.1f} KB a trial after trial {AFTER} "
             f"(peak {figures.submit_peak / 1e6:.0f} MB, AppCore {figures.appcore_peak / 1e6:.0f}"
             " MB)", "<= 4 KB a trial", None if math.isnan(growth) else growth <= 4 * KB,
             load),
    ]


def record_lines(work: Path, trials: int) -> list[Line]:
    """The page's periodic call and ``da-job results`` of the job just run, from its record."""
    home = work / "home"
    env = _env(home)
    (db,) = home.glob("jobs/*/job.db")
    job_id = db.parent.name
    lines: list[Line] = []
    ((wall, cpu), load) = measured(lambda: results_cpu(job_id, env))
    lines.append(Line("4 record", f"da-job results --format json: {wall:.2f} s, {cpu:.2f} s CPU "
                      f"({trials} trials)", "<= 1 s at 10,000", None, load))
    server = subprocess.Popen([sys.executable, "-m", "disauto.submit.job_cli", "ui"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        base = ""
        for line in server.stdout:
            if "http://" in line:
                base = line[line.index("http://"):].split()[0].rstrip("/") + f"/jobs/{job_id}/"
                break
        ((first_s, first_b, next_s, next_b), load) = measured(lambda: page_calls(base))
    finally:
        server.terminate()
        server.wait(10)
    lines.append(Line("4 page", f"first data call {first_s * 1000:.0f} ms, {first_b / 1000:.0f} "
                      f"KB; periodic call {next_s * 1000:.0f} ms, {next_b / 1000:.1f} KB "
                      f"({trials} trials)", "<= 100 ms, <= 100 KB at 10,000",
                      next_b <= 100_000 and first_b <= 100_000 and next_s <= 0.1, load))
    lines.append(paint_line(db.parent, trials))
    return lines


def painted_ms(output: str) -> float | None:
    """The cold load's paint in ``bench.page_paint``'s output (ms; None: not there)."""
    found = re.search(r"cold load: table painted (\d+) ms", output)
    return float(found.group(1)) if found else None


def paint_line(folder: Path, trials: int) -> Line:
    """The page's first paint of the job in ``folder``, a cold server in a process of its own."""
    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # noqa: S603 - our own module
            [sys.executable, "-m", "bench.page_paint", str(folder), "--loads", "0"],
            capture_output=True, text=True, timeout=600, check=False)

    done, load = measured(run)
    painted = painted_ms(done.stdout)
    if painted is None:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return Line("4 paint", f"not measured: {why}", "<= 2 s at 10,000", None, load)
    return Line("4 paint", f"table painted {painted:.0f} ms after navigation, cold ({trials} "
                           "trials)", "<= 2 s at 10,000", painted <= 2000, load)


def table(lines: Sequence[Line]) -> str:
    out = ["| target | figure | goal | met | load (1 min) |", "|---|---|---|---|---|"]
    for line in lines:
        met = "-" if line.met is None else ("yes" if line.met else "no")
        out.append(f"| {line.target} | {line.figure} | {line.goal} | {met} | {line.load} |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=32,
                        help="sleep trials of the slot runs (targets 1 and 2)")
    parser.add_argument("--scale-trials", type=int, default=1600,
                        help="quick trials of the scale job (targets 2 to 4)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-quick-"))
    print(f"bench-quick in {work}; {os.cpu_count()} cores, load average {_load():.1f}",
          flush=True)
    lines: list[Line] = []
    task, load = measured(lambda: run_disauto("task", 8, 1.0, args.trials, work / "task"))
    lines += slot_lines("1 task mode", task, load, 2.5 / 8)
    print(table(lines[-2:]), flush=True)
    preload, load = measured(lambda: run_disauto(
        "warm", 8, 1.0, args.trials, work / "preload", extra=("--slot-preload", "apprunner_sdk"),
        system="disauto-preload"))
    lines += slot_lines("2 preload", preload, load, 2.0 / 8)
    print(table(lines[-2:]), flush=True)
    step = max(1, args.scale_trials // 8)
    figures, load = measured(lambda: run_job(work / "scale", "random", args.scale_trials, 8, 3,
                                             0.0, probes=(), memory_step=step))
    lines += job_lines(figures, load)
    lines += record_lines(work / "scale", args.scale_trials)
    lines.append(Line("5 cores", "not measured here: needs 16 cores", "16 slots >= 1.8 x 8",
                      None, "-"))
    print()
    print(table(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
