"""Search quality: trials needed to reach a target on standard test functions.

Run with ``python -m bench.search_quality`` (``make bench-quality``). Each search algorithm
(AppCore's own classes, created through the registry exactly as AppCore creates them) minimizes
Branin (2-D), Hartmann-6 (6-D), Rosenbrock-10 (10-D) and the digits model (an RBF SVM's C and
gamma on scikit-learn's handwritten digits, log scales; the validation error is the objective)
until the best value found reaches the target or the budget is spent, over several seeds.
Three executors:

* **sequential**: ask one trial, tell its result, ask the next;
* **parallel 8 async**: a simulated cluster of 8 slots; each trial takes a random duration
  (uniform 0.5-1.5 time units, seeded), and whenever the earliest running trial ends its
  result is told and a new trial is asked (the algorithm sees the other 7 as pending, as in
  AppCore's async mode). Trials are counted in the order they end;
* **parallel 8 sync** (Bayesian backends only; random search has no modes): the same cluster
  with Bayesian's ``mode=sync``: a batch of 8 is suggested at once and the next one when all 8
  have ended.

The figure is the median, over the seeds, of the number of finished trials when the best value
first reached the target (a search that never does counts as the budget, marked ``>``). No
cluster is involved: this measures the algorithms, not the system.

Two objectives (``--pareto``): AppCore's ``bayesian`` search with a multi-objective backend
(``tpe``, ``nsga2``) minimizes both objectives of ZDT1 (Zitzler, Deb and Thiele 2000, 5-D) and
of Binh-Korn with its two constraints, sequentially, for ``--budget`` trials; Optuna runs the
same problem directly (``study.optimize`` with ``TPESampler(seed=seed)`` -- Optuna's defaults --
or ``NSGAIISampler(population_size=10, seed=seed)``, the population DisAuto's ``nsga2`` has with
its default ``n_startup_trials``; constraints through ``constraints_func``) with the same budget
and seeds. The figure is the hypervolume of each final Pareto front of feasible trials (Optuna's
``compute_hypervolume``, against a fixed reference point), its mean over the seeds, and DisAuto's
mean as a share of Optuna's.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
import heapq
import logging
import math
import statistics
import sys
from typing import Any

import numpy as np

from disauto.appcore.algorithms import SearchAlgorithm
from disauto.appcore.algorithms import create_algorithm
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.trial_state import TrialState


def branin(x: list[float]) -> float:
    x1, x2 = x
    a, b, c = 1.0, 5.1 / (4 * math.pi ** 2), 5 / math.pi
    r, s, t = 6.0, 10.0, 1 / (8 * math.pi)
    return a * (x2 - b * x1 ** 2 + c * x1 - r) ** 2 + s * (1 - t) * math.cos(x1) + s


_H_A = np.array([[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
                 [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]])
_H_P = 1e-4 * np.array([[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
                        [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]])
_H_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])


def hartmann6(x: list[float]) -> float:
    v = np.asarray(x)
    return float(-np.sum(_H_ALPHA * np.exp(-np.sum(_H_A * (v - _H_P) ** 2, axis=1))))


_DIGITS: list[Any] = []


def digits_svm(x: list[float]) -> float:
    """Validation error of an RBF SVM with ``C = x[0]``, ``gamma = x[1]`` on the digits.

    scikit-learn's handwritten digits (shipped with it: no download), scaled to [0, 1], split
    70/30 stratified with a fixed seed -- the data and model of ``examples/sklearn_digits.py``.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.svm import SVC

    if not _DIGITS:
        features, labels = load_digits(return_X_y=True)
        _DIGITS.extend(train_test_split(features / 16.0, labels, test_size=0.3, random_state=0,
                                        stratify=labels))
    x_train, x_val, y_train, y_val = _DIGITS
    model = SVC(C=x[0], gamma=x[1]).fit(x_train, y_train)
    return 1.0 - float(model.score(x_val, y_val))


def rosenbrock(x: list[float]) -> float:
    v = np.asarray(x)
    return float(np.sum(100 * (v[1:] - v[:-1] ** 2) ** 2 + (1 - v[:-1]) ** 2))


@dataclass(frozen=True)
class Problem:
    name: str
    fn: Any
    bounds: list[tuple[float, float]]
    optimum: float
    target: float
    log: bool = False
    """Search every dimension on a log scale."""


PROBLEMS = {
    "branin": Problem("Branin (2-D)", branin, [(-5, 10), (0, 15)], 0.397887, 0.5),
    "hartmann6": Problem("Hartmann-6", hartmann6, [(0, 1)] * 6, -3.32237, -2.5),
    "rosenbrock10": Problem("Rosenbrock-10", rosenbrock, [(-2, 2)] * 10, 0.0, 200.0),
    # At most 2 of the 540 validation images wrong (99.63 %); about 1 % of log-uniform draws.
    "digits": Problem("digits SVM error", digits_svm, [(1e-2, 1e3), (1e-4, 10.0)], 0.0037,
                      0.004, log=True),
}

ALGORITHMS: dict[str, tuple[str, dict[str, str]]] = {
    "random": ("random-search", {}),
    "tpe": ("bayesian", {"backend": "tpe"}),
    "gp": ("bayesian", {"backend": "gp"}),
}


def _space(problem: Problem) -> SearchSpace:
    return SearchSpace(tuple(RealParam(f"x{i}", lo, hi, log=problem.log)
                             for i, (lo, hi) in enumerate(problem.bounds)))


EXECUTORS: dict[str, tuple[int, str]] = {
    "sequential": (1, "async"),
    "parallel 8 async": (8, "async"),
    "parallel 8 sync": (8, "sync"),
}
"""Executor name to (parallelism, Bayesian mode)."""


def _make(algorithm: str, problem: Problem, seed: int, parallelism: int,
          mode: str) -> SearchAlgorithm:
    name, settings = ALGORITHMS[algorithm]
    if mode == "sync":
        settings = {**settings, "mode": "sync"}
    return create_algorithm(name, _space(problem), seed=seed, direction="minimize",
                            settings=settings, parallelism=parallelism)


def executors_for(algorithm: str, chosen: list[str]) -> list[str]:
    """The chosen executors that apply to ``algorithm`` (sync needs a Bayesian backend)."""
    bayesian = ALGORITHMS[algorithm][0] == "bayesian"
    return [name for name in chosen if bayesian or EXECUTORS[name][1] != "sync"]


def run(args: tuple[str, str, int, str, int]) -> int | None:
    """Trials to reach the problem's target (None if the budget ran out)."""
    algorithm_name, problem_key, seed, executor, budget = args
    parallelism, mode = EXECUTORS[executor]
    logging.disable(logging.WARNING)
    problem = PROBLEMS[problem_key]
    algorithm = _make(algorithm_name, problem, seed, parallelism, mode)
    rng = np.random.default_rng(seed)
    running: list[tuple[float, int, float]] = []  # (end time, number, value)
    clock, asked, finished, best = 0.0, 0, 0, math.inf
    while finished < budget:
        while len(running) < parallelism and asked < budget:
            asked += 1
            suggestion = algorithm.ask(asked)
            if not isinstance(suggestion, dict):
                asked -= 1
                break
            value = problem.fn([suggestion[f"x{i}"] for i in range(len(problem.bounds))])
            duration = 1.0 if parallelism == 1 else float(rng.uniform(0.5, 1.5))
            heapq.heappush(running, (clock + duration, asked, value))
        clock, number, value = heapq.heappop(running)
        algorithm.tell(number, value, TrialState.COMPLETED)
        finished += 1
        best = min(best, value)
        if best <= problem.target:
            return finished
    return None


# --- two objectives: the hypervolume of the Pareto front, DisAuto against Optuna ------------


def zdt1(x: list[float]) -> tuple[tuple[float, float], tuple[float, ...]]:
    """ZDT1 on [0, 1]^n: its two objectives (both minimized), no constraint."""
    g = 1 + 9 * sum(x[1:]) / (len(x) - 1)
    return (x[0], g * (1 - math.sqrt(x[0] / g))), ()


def binh_korn(x: list[float]) -> tuple[tuple[float, float], tuple[float, ...]]:
    """Binh and Korn's problem on [0, 5] x [0, 3]: two objectives and two constraints (<= 0)."""
    a, b = x
    objectives = (4 * a ** 2 + 4 * b ** 2, (a - 5) ** 2 + (b - 5) ** 2)
    return objectives, ((a - 5) ** 2 + b ** 2 - 25, 7.7 - (a - 8) ** 2 - (b + 3) ** 2)


@dataclass(frozen=True)
class ParetoProblem:
    name: str
    fn: Any
    bounds: list[tuple[float, float]]
    reference: tuple[float, float]
    """The hypervolume's reference point (worse than every point of the front)."""


PARETO_PROBLEMS = {
    "zdt1": ParetoProblem("ZDT1 (5-D)", zdt1, [(0.0, 1.0)] * 5, (1.1, 11.0)),
    "binh-korn": ParetoProblem("Binh-Korn (2 constraints)", binh_korn, [(0.0, 5.0), (0.0, 3.0)],
                               (140.0, 55.0)),
}

PARETO_BACKENDS = ("tpe", "nsga2")


def _hypervolume(points: list[tuple[float, ...]], reference: tuple[float, float]) -> float:
    from optuna._hypervolume import compute_hypervolume

    inside = [p for p in points if all(v < r for v, r in zip(p, reference, strict=True))]
    if not inside:
        return 0.0
    return float(compute_hypervolume(np.asarray(inside), np.asarray(reference)))


def _disauto_front(backend: str, problem: ParetoProblem, seed: int,
                   budget: int) -> list[tuple[float, ...]]:
    space = SearchSpace(tuple(RealParam(f"x{i}", lo, hi)
                              for i, (lo, hi) in enumerate(problem.bounds)))
    algorithm = create_algorithm("bayesian", space, seed=seed, direction=("minimize",) * 2,
                                 settings={"backend": backend})
    feasible = []
    for number in range(1, budget + 1):
        suggestion = algorithm.ask(number)
        assert isinstance(suggestion, dict)
        values, constraints = problem.fn([suggestion[f"x{i}"]
                                          for i in range(len(problem.bounds))])
        algorithm.tell(number, values, TrialState.COMPLETED, constraints)
        if all(c <= 0 for c in constraints):
            feasible.append(values)
    return feasible


def _optuna_front(backend: str, problem: ParetoProblem, seed: int,
                  budget: int) -> list[tuple[float, ...]]:
    import optuna

    constraints: dict[int, tuple[float, ...]] = {}
    use = {"constraints_func": lambda trial: constraints[trial.number]}
    sampler = optuna.samplers.TPESampler(seed=seed, **use) if backend == "tpe" \
        else optuna.samplers.NSGAIISampler(population_size=10, seed=seed, **use)

    def objective(trial: optuna.Trial) -> tuple[float, float]:
        x = [trial.suggest_float(f"x{i}", lo, hi) for i, (lo, hi) in enumerate(problem.bounds)]
        values, constraints[trial.number] = problem.fn(x)
        return values

    study = optuna.create_study(directions=["minimize"] * 2, sampler=sampler)
    study.optimize(objective, n_trials=budget)
    return [tuple(t.values) for t in study.trials if all(c <= 0 for c in constraints[t.number])]


def pareto_run(args: tuple[str, str, int, int, str]) -> float:
    """The hypervolume one side (``disauto`` or ``optuna``) reaches on one seed."""
    backend, problem_key, seed, budget, side = args
    import warnings

    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")  # Optuna's FutureWarning for constraints_func
    problem = PARETO_PROBLEMS[problem_key]
    front = (_disauto_front if side == "disauto" else _optuna_front)(backend, problem, seed,
                                                                     budget)
    return _hypervolume(front, problem.reference)


def pareto_main(args: argparse.Namespace) -> list[list[str]]:
    """The two-objective rows: DisAuto's and Optuna's mean hypervolume, and their ratio."""
    cells = [(problem, backend) for problem in PARETO_PROBLEMS for backend in PARETO_BACKENDS]
    jobs = [(backend, problem, seed, args.budget, side) for problem, backend in cells
            for side in ("disauto", "optuna") for seed in range(args.seeds)]
    rows = [["problem", "backend", "DisAuto hypervolume", "Optuna hypervolume", "ratio"]]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        results = pool.map(pareto_run, jobs)
        for problem, backend in cells:
            ours = statistics.mean(next(results) for _ in range(args.seeds))
            theirs = statistics.mean(next(results) for _ in range(args.seeds))
            rows.append([PARETO_PROBLEMS[problem].name, backend, f"{ours:.4g}", f"{theirs:.4g}",
                         f"{ours / theirs:.3f}"])
            print(f"[{len(rows) - 1}/{len(cells)}]", " ".join(rows[-1]), file=sys.stderr,
                  flush=True)
    return rows


def _row(problem: str, algorithm: str, executor: str, budget: int,
         outcome: list[int | None]) -> list[str]:
    counts = [budget + 1 if r is None else r for r in outcome]
    median = statistics.median(counts)
    text = f">{budget}" if median > budget else f"{median:g}"
    spec = PROBLEMS[problem]
    return [f"{spec.name} (<= {spec.target:g})", algorithm, executor, text,
            f"{sum(r is not None for r in outcome)}/{len(outcome)}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--gp-budget", type=int, default=40,
                        help="budget of the GP backend (one GP fit per trial; ~0.2-1 s each)")
    parser.add_argument("--problems", nargs="*", default=list(PROBLEMS))
    parser.add_argument("--algorithms", nargs="*", default=list(ALGORITHMS))
    parser.add_argument("--executors", nargs="*", default=list(EXECUTORS),
                        choices=list(EXECUTORS), metavar="EXECUTOR",
                        help=f"which executors (default all: {', '.join(EXECUTORS)})")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pareto", action="store_true",
                        help="the two-objective rows instead: hypervolume against Optuna's")
    args = parser.parse_args(argv)
    if args.pareto:
        _print_table(pareto_main(args))
        return 0
    cells = []
    for problem in args.problems:
        for algorithm in args.algorithms:
            budget = args.gp_budget if algorithm == "gp" else args.budget
            for executor in executors_for(algorithm, args.executors):
                cells.append((problem, algorithm, executor, budget))
    jobs = [(a, p, seed, executor, budget) for p, a, executor, budget in cells
            for seed in range(args.seeds)]
    rows = [["problem (target)", "algorithm", "executor", "median trials", "reached"]]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        results = pool.map(run, jobs)  # in order, each as soon as it (and those before) ended
        for problem, algorithm, executor, budget in cells:
            outcome = [next(results) for _ in range(args.seeds)]
            rows.append(_row(problem, algorithm, executor, budget, outcome))
            print(f"[{len(rows) - 1}/{len(cells)}]", " ".join(rows[-1]), file=sys.stderr,
                  flush=True)
    _print_table(rows)
    return 0


def _print_table(rows: list[list[str]]) -> None:
    """``rows`` (a header first) as a Markdown table."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"
             for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
