"""Why re-ordering identical random-search jobs cannot shorten their mean time: a simulation.

Run with ``python -m bench.priority_sim``. It models the paper's Table 4 shape -- 4 jobs, each
keeping up to 4 trials in flight, on a cluster with room for ``slots`` trials -- where every trial
takes a random time (mean 1, coefficient of variation 0.3) and reaches the target with
probability ``p`` independently of everything before it (random search towards a fixed
accuracy). A job ends at its first successful trial; its other trials are killed. Freed slots go
to a waiting job by one of two rules:

* ``fair``: the job with the fewest trials running (what FIFO offers under DRF approximate);
* ``priority``: a fixed order of the jobs (what a strict priority scheme does at its extreme).

It prints the mean job time of each rule (over ``--seeds`` simulated clusters) and, for the fair
rule, how it changes with the number of slots (6, 7 or 8: the paper's 3 x 12-CPU agents with 4
jobs' 1-CPU AppCores on 3, 2 or 1 agent). Deterministic for a given ``--seeds``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import heapq
import random
import statistics
import sys


def simulate(rule: str, *, p: float, slots: int, seed: int, jobs: int = 4, parallelism: int = 4,
             cv: float = 0.3, budget: int = 200) -> float:
    """The mean job time of one simulated cluster (time unit: the mean trial duration)."""
    rng = random.Random(seed)
    running: dict[int, set[int]] = {j: set() for j in range(jobs)}
    submitted = dict.fromkeys(range(jobs), 0)
    done: dict[int, float] = {}
    events: list[tuple[float, int, int, bool]] = []
    now = 0.0
    serial = 0

    def fill() -> None:
        nonlocal serial
        while sum(len(r) for r in running.values()) < slots:
            waiting = [j for j in range(jobs) if j not in done
                       and len(running[j]) < parallelism and submitted[j] < budget]
            if not waiting:
                return
            if rule == "fair":
                job = min(waiting, key=lambda j: (len(running[j]), rng.random()))
            else:
                job = min(waiting)
            serial += 1
            submitted[job] += 1
            duration = max(0.05, rng.gauss(1.0, cv))
            heapq.heappush(events, (now + duration, serial, job, rng.random() < p))
            running[job].add(serial)

    fill()
    while events and len(done) < jobs:
        now, serial_id, job, success = heapq.heappop(events)
        if job in done or serial_id not in running[job]:
            continue
        running[job].discard(serial_id)
        if success or (submitted[job] >= budget and not running[job]):
            done[job] = now
            running[job].clear()  # its other trials are killed
        fill()
    return statistics.fmean(done.values())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.priority_sim", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=2000, help="clusters per figure")
    args = parser.parse_args(argv)
    seeds = range(args.seeds)
    print("| p (success per trial) | fair, 8 slots | priority, 8 slots | priority / fair "
          "| fair, 7 slots | fair, 6 slots | 8 / 6 slots |")
    print("|---|---|---|---|---|---|---|")
    for p in (0.02, 0.05, 0.1):
        fair = {s: statistics.fmean(simulate("fair", p=p, slots=s, seed=i) for i in seeds)
                for s in (6, 7, 8)}
        strict = statistics.fmean(simulate("priority", p=p, slots=8, seed=i) for i in seeds)
        print(f"| {p} | {fair[8]:.2f} | {strict:.2f} | {strict / fair[8]:.3f} | {fair[7]:.2f} "
              f"| {fair[6]:.2f} | {fair[8] / fair[6]:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
