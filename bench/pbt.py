"""Population Based Training against random search on a problem whose best learning rate
changes during training.

Run with ``python -m bench.pbt`` (``make bench-pbt``). The toy model (in the spirit of Ray Tune's
PBT example, written here) trains a score from 0 to at most 100, one step at a time, with a
learning rate ``lr`` in [0.001, 1] (log). The best ``lr`` falls as the score grows: 0.3 below
40, 0.05 below 70, 0.005 above. A step gains ``3/q`` (times a uniform 0.5-1 draw) when ``lr``
is within a factor ``q < 4`` of the best, loses ground when ``lr`` is far too large and gains
little when it is far too small; plus Gaussian noise. A fixed ``lr`` (random search) cannot
follow the schedule; PBT's exploit/explore can.

Both searches run through the real algorithm classes (``create_algorithm("pbt" |
"random-search")``) in a loop that does what AppCore's does with a population of
``--population`` trials in flight, stepping together: every trial trains a step, saves its
state (the checkpoint) and reports its score; a trial PBT replaces is told PRUNED and its
replacement (the next trial asked) continues the parent's saved state and step. Each search
gets the same trial-steps: ``population x steps`` (a lineage ends at ``steps``, and a trial that
ends is refilled only while a whole trial's steps are left). The final objective is the best
completed trial's score, as the job's best. Objectives are compared, not time, so the machine's
load does not bias the figures.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
import statistics

import numpy as np

from disauto.appcore.algorithms import FINISHED
from disauto.appcore.algorithms import SearchAlgorithm
from disauto.appcore.algorithms import create_algorithm
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.trial_state import TrialState


SPACE = SearchSpace((RealParam("lr", 1e-3, 1.0, log=True),))
SCHEDULE = ((40.0, 0.3), (70.0, 0.05), (float("inf"), 0.005))
"""The best learning rate below each score."""


@dataclass(frozen=True)
class State:
    """A trial's model: its score after ``step`` steps (what a checkpoint holds)."""

    step: int = 0
    score: float = 0.0


def best_lr(score: float) -> float:
    return next(lr for below, lr in SCHEDULE if score < below)


def train(state: State, lr: float, rng: np.random.Generator) -> State:
    """One step of the toy model."""
    best = best_lr(state.score)
    q = max(lr, best) / min(lr, best)
    luck = rng.uniform(0.5, 1.0)
    if q < 4:
        gain = 3.0 / q * luck
    elif lr > best:
        gain = -(q - 4) * 0.1 * luck
    else:
        gain = 0.1 * luck
    score = min(100.0, max(0.0, state.score + gain + rng.normal(0.0, 0.3)))
    return State(state.step + 1, score)


@dataclass
class Outcome:
    best: float
    trial_steps: int
    trials: int
    exploits: int


def run(name: str, seed: int, population: int, steps: int,
        settings: dict[str, str] | None = None) -> Outcome:
    """One search as the module docstring says; its best final score and the work done."""
    algorithm = create_algorithm(name, SPACE, seed=seed, direction="maximize",
                                 settings=settings or {}, parallelism=population)
    rng = np.random.default_rng(seed + 10_000)
    budget, spent, exploits = population * steps, 0, 0
    live: dict[int, tuple[float, State]] = {}
    saved: dict[int, State] = {}
    finals: list[float] = []
    number = 0

    def start() -> None:
        nonlocal number
        number += 1
        assignment = ask(algorithm, number)
        origin = algorithm.parent_of(number)
        # A replacement continues its parent's checkpoint (State is immutable: a copy).
        live[number] = (float(assignment["lr"]), State() if origin is None else saved[origin])

    for _ in range(population):
        start()
    while live:
        for trial, (lr, state) in list(live.items()):
            live[trial] = (lr, train(state, lr, rng))
            saved[trial] = live[trial][1]
            spent += 1
        for trial, (_, state) in sorted(live.items()):
            if state.step >= steps:
                del live[trial]
                algorithm.tell(trial, state.score, TrialState.COMPLETED)
                finals.append(state.score)
                if budget - spent - sum(steps - s.step for _, s in live.values()) >= steps:
                    start()
            elif algorithm.intermediate(trial, state.step, state.score, may_replace=True):
                del live[trial]
                algorithm.tell(trial, state.score, TrialState.PRUNED)
                exploits += 1
                start()
    return Outcome(max(finals), spent, number, exploits)


def ask(algorithm: SearchAlgorithm, number: int) -> dict[str, float]:
    assignment = algorithm.ask(number)
    assert assignment is not None and assignment is not FINISHED
    return assignment  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--population", type=int, default=8)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--perturbation-interval", type=int, default=4)
    args = parser.parse_args(argv)
    settings = {"perturbation_interval": str(args.perturbation_interval)}
    print(f"population {args.population}, {args.steps} steps a trial, "
          f"{args.population * args.steps} trial-steps each; PBT {settings}")
    print(f"{'seed':>4}  {'random':>8}  {'pbt':>8}  {'steps r/p':>10}  {'trials r/p':>10}  "
          f"{'exploits':>8}")
    rows = []
    for seed in range(args.seeds):
        rand = run("random-search", seed, args.population, args.steps)
        pbt = run("pbt", seed, args.population, args.steps, settings)
        rows.append((rand.best, pbt.best))
        print(f"{seed:>4}  {rand.best:>8.2f}  {pbt.best:>8.2f}  "
              f"{f'{rand.trial_steps}/{pbt.trial_steps}':>10}  "
              f"{f'{rand.trials}/{pbt.trials}':>10}  {pbt.exploits:>8}")
    print(f"{'mean':>4}  {statistics.mean(r for r, _ in rows):>8.2f}  "
          f"{statistics.mean(p for _, p in rows):>8.2f}")


if __name__ == "__main__":
    main()
