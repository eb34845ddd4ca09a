"""TPE's window at scale: its ask time against the study's size, and its effect on the search.

Run with ``python -m bench.tpe_window`` (``--latency`` or ``--quality`` for one part).

* **Latency** (issue 29's "TPE's suggestion p99 <= 200 ms at 10,000 trials"): AppCore's
  ``bayesian`` search with the ``tpe`` backend, created through the registry as AppCore does,
  at parallelism 16 async, restored from a history of ``N`` completed trials (random points of
  Hartmann-6 with their values, as an AppCore restarted on a job of ``N`` trials rebuilds its
  study) plus 15 running ones; then ``--reps`` times: tell one running trial's result and ask
  the next (the cycle of a freed slot). The figure is the ask+tell time, p50 and p99 in ms,
  with the window (``tpe_window`` 1000, the default) and without (``tpe_window`` 0).
* **Quality**: the same search minimizes the problems of :mod:`bench.search_quality` on its
  simulated cluster of 8 async slots for ``--budget`` trials, once with a window of
  ``--window`` trials and once with none, on the same seeds; the figure is the median (over
  seeds) of the best value after 25 %, 50 % and 100 % of the budget, and how many seeds the
  window did at least as well as no window at the end. A window of 200 at 1,000 trials keeps a
  fifth of the study, a harsher cut than the default 1,000 at 10,000 trials (a tenth kept
  there, but the same 100 best), at a cost that fits a 2-core machine.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
import heapq
import logging
import math
import statistics
import sys
import time

import numpy as np

from bench.search_quality import PROBLEMS
from bench.search_quality import _print_table
from bench.search_quality import _space
from disauto.appcore.algorithms import SearchAlgorithm
from disauto.appcore.algorithms import TrialRecord
from disauto.appcore.algorithms import create_algorithm
from disauto.common.trial_state import TrialState


PARALLELISM_LATENCY = 16
"""Slots of the latency part (issue 29's 10,000-trial job runs at parallelism 16)."""


def _tpe(problem: str, seed: int, window: int, parallelism: int) -> SearchAlgorithm:
    return create_algorithm(
        "bayesian", _space(PROBLEMS[problem]), seed=seed, direction="minimize",
        settings={"backend": "tpe", "tpe_window": str(window)}, parallelism=parallelism)


def _value(problem: str, assignment: dict[str, object]) -> float:
    spec = PROBLEMS[problem]
    return float(spec.fn([float(assignment[f"x{i}"]) for i in range(len(spec.bounds))]))


def latency(history: int, window: int, reps: int, problem: str = "hartmann6") -> list[float]:
    """Seconds of each tell + ask at ``history`` completed trials (see the module doc)."""
    rng = np.random.default_rng(history)
    bounds = PROBLEMS[problem].bounds
    records = []
    for number in range(1, history + PARALLELISM_LATENCY):
        point = {f"x{i}": float(rng.uniform(lo, hi)) for i, (lo, hi) in enumerate(bounds)}
        done = number <= history
        records.append(TrialRecord(number, point, _value(problem, point) if done else None,
                                   TrialState.COMPLETED if done else TrialState.RUNNING))
    search = _tpe(problem, 0, window, PARALLELISM_LATENCY)
    search.restore(records)
    running = [r.number for r in records if r.state == TrialState.RUNNING]
    pending = {r.number: r.assignment for r in records if r.state == TrialState.RUNNING}
    times = []
    number = history + PARALLELISM_LATENCY
    for _ in range(reps):
        ended = running.pop(0)
        start = time.perf_counter()
        search.tell(ended, _value(problem, pending.pop(ended)), TrialState.COMPLETED)
        suggestion = search.ask(number)
        times.append(time.perf_counter() - start)
        assert isinstance(suggestion, dict)
        pending[number] = suggestion
        running.append(number)
        number += 1
    return times


def quality(args: tuple[str, int, int, int]) -> list[float]:
    """The best value after a quarter, half and all of the budget (one seed, one window)."""
    problem, seed, window, budget = args
    logging.disable(logging.WARNING)
    search = _tpe(problem, seed, window, 8)
    rng = np.random.default_rng(seed)
    running: list[tuple[float, int, float]] = []
    clock, asked, finished, best = 0.0, 0, 0, math.inf
    marks, bests = {budget // 4, budget // 2, budget}, []
    while finished < budget:
        while len(running) < 8 and asked < budget:
            asked += 1
            suggestion = search.ask(asked)
            assert isinstance(suggestion, dict)
            heapq.heappush(running, (clock + float(rng.uniform(0.5, 1.5)), asked,
                                     _value(problem, suggestion)))
        clock, number, value = heapq.heappop(running)
        search.tell(number, value, TrialState.COMPLETED)
        finished += 1
        best = min(best, value)
        if finished in marks:
            bests.append(best)
    return bests


def _ms(times: list[float], q: float) -> str:
    return f"{1000 * float(np.quantile(times, q)):.0f}"


def latency_rows(histories: list[int], reps: int) -> list[list[str]]:
    rows = [["finished trials", "window", "ask+tell p50 ms", "p99 ms"]]
    for history in histories:
        for window in (1000, 0):
            times = latency(history, window, reps)
            rows.append([str(history), str(window or "none"), _ms(times, 0.5),
                         _ms(times, 0.99)])
            print(" ".join(rows[-1]), file=sys.stderr, flush=True)
    return rows


def quality_rows(problems: list[str], seeds: int, window: int, budget: int,
                 workers: int) -> list[list[str]]:
    jobs = [(p, s, w, budget) for p in problems for w in (window, 0) for s in range(seeds)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(quality, jobs))
    header = [f"best after {budget // 4}", f"after {budget // 2}", f"after {budget}"]
    rows = [["problem", "window", *[f"median {h}" for h in header], "window >= none"]]
    for index, problem in enumerate(problems):
        windowed = results[2 * index * seeds:(2 * index + 1) * seeds]
        whole = results[(2 * index + 1) * seeds:(2 * index + 2) * seeds]
        wins = sum(w[-1] <= n[-1] for w, n in zip(windowed, whole, strict=True))
        for label, runs in ((str(window), windowed), ("none", whole)):
            medians = [f"{statistics.median(r[k] for r in runs):.4g}" for k in range(3)]
            rows.append([PROBLEMS[problem].name, label, *medians,
                         f"{wins}/{seeds}" if label != "none" else ""])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", action="store_true", help="the latency part only")
    parser.add_argument("--quality", action="store_true", help="the quality part only")
    parser.add_argument("--histories", type=int, nargs="*", default=[1000, 5000, 10000])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--problems", nargs="*", default=["branin", "hartmann6", "rosenbrock10"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--window", type=int, default=200)
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    both = not args.latency and not args.quality
    if args.latency or both:
        _print_table(latency_rows(args.histories, args.reps))
    if args.quality or both:
        _print_table(quality_rows(args.problems, args.seeds, args.window, args.budget,
                                  args.workers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
