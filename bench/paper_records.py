"""The paper's experiments' figures and arithmetic (Li, Lu, Sun 2019, §3, Tables 2-4): what
:mod:`bench.paper` runs and records and :mod:`bench.paper_plots` draws both read, kept apart
from both so that neither imports the other's module back.

* :data:`PAPER`: the paper's own figures;
* :class:`Setup`: a run's fixed settings, as each record holds them (:func:`setup_of`);
* the paper's average (:func:`trimmed_mean`), each cell's run values (:func:`cell_values`), the
  seeds of paired runs (:func:`run_seed`);
* the no-overhead bound on Table 3 (:func:`ideal_job_seconds` and the speed-ups over it).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
import statistics
from typing import Any


ROOT = Path(__file__).resolve().parents[1]
PARAMS = ROOT / "examples" / "synthetic_cnn_params.json"
"""The runner's parameter file (``examples/synthetic_cnn.py``'s search space)."""


#: The paper's figures (seconds), Tables 2-4: {policy: {column: value}}.
PAPER = {
    "2": {"fifo": {1: 213.776, 2: 215.258, 3: 216.328, 4: 217.251},
          "dynamic": {1: 220.523, 2: 223.26, 3: 224.14, 4: 225.516}},
    "3": {"fifo": {1: 213.776, 2: 112.445, 4: 75.42, 8: 42.457},
          "dynamic": {1: 220.523, 2: 120.189, 4: 80.786, 8: 50.98}},
    "4": {"fifo": {1: 75.42, 2: 80.15, 3: 121.239, 4: 156.67},
          "dynamic": {1: 80.786, 2: 82.414, 3: 104.45, 4: 124.725}},
}


@dataclass(frozen=True)
class Setup:
    """The experiment's fixed settings (the paper's, plus the time scale)."""

    time_scale: float = 0.05
    """Real seconds per modelled second of training (a modelled trial takes ~32 s)."""
    allocation_interval: float = 0.1
    """The master's batch allocation interval, scaled like the trials (Mesos: 1 s)."""
    agents: int = 3
    agent_cpus: float = 12.0
    agent_mem_mb: float = 20480.0
    runner_cpus: str = "4"
    runner_memory: str = "5G"
    appcore_cpus: str = "1"
    appcore_memory: str = "1G"
    max_trials: int = 200
    target: float = 0.95
    priority_settings: tuple[tuple[str, str], ...] = ()
    """Extra ``--policy-setting`` items for the dynamic policies."""
    run_timeout: float = 1200.0
    slot_mode: str = "task"
    """How trials run: ``task`` (a Mesos command task each), ``warm`` (warm slots) or
    ``preload`` (warm slots forking each trial from a pre-imported interpreter)."""

    def slot_flags(self) -> list[str]:
        """The da-submit flags of :attr:`slot_mode`."""
        if self.slot_mode == "task":
            return ["--slot-mode", "task"]  # not the default since issue 36
        flags = ["--slot-mode", "warm"]
        if self.slot_mode == "preload":
            flags += ["--slot-preload", "apprunner_sdk"]
        return flags


def ideal_job_seconds(seed: int, parallelism: int, setup: Setup) -> float:
    """The search time of one job on a cluster with no overhead at all: the bound on Table 3.

    AppCore's own random search (same seed, so the same assignments in the same order as the
    real job) and the synthetic runner's model of each trial's duration (scaled as the
    benchmark scales it); ``parallelism`` slots, each refilled the instant a trial ends, no
    offer cycle, no process start, no report round trip. The job ends when a trial that
    reaches the target ends. With ``N`` trials to the target, a job at parallelism ``p`` still
    waits for about ``ceil(N / p)`` trial durations, so the speed-up is below ``p`` even here.
    """
    import heapq

    from disauto.appcore.algorithms import create_algorithm
    from disauto.submit.params import load_parameter_file
    from examples.synthetic_cnn import model

    algorithm = create_algorithm("random-search", load_parameter_file(PARAMS), seed=seed,
                                 direction="maximize", settings={}, parallelism=parallelism)
    running: list[tuple[float, int, float]] = []
    clock, asked = 0.0, 0
    while True:
        while len(running) < parallelism and asked < setup.max_trials:
            asked += 1
            suggestion = algorithm.ask(asked)
            assert isinstance(suggestion, dict)
            accuracy, seconds = model(suggestion)
            heapq.heappush(running, (clock + seconds * setup.time_scale, asked, accuracy))
        if not running:
            return clock
        clock, _, accuracy = heapq.heappop(running)
        if accuracy >= setup.target:
            return clock


def ideal_speedups(records: Sequence[Mapping[str, Any]]) -> dict[int, float]:
    """Table 3's bound: {parallelism: speed-up} with no overhead, over the recorded seeds."""
    runs = sorted({int(r["run"]) for r in records if (r["jobs"], r["parallelism"]) == (1, 1)})
    if not runs:
        return {}
    return _ideal_speedups([run_seed(r) for r in runs], setup_of(records[0]), trimmed_mean)


def expected_ideal_speedups(setup: Setup, runs: int) -> dict[int, float]:
    """The bound in expectation: {parallelism: speed-up} with no overhead over ``runs`` seeds.

    The seeds are the ones runs ``0 .. runs - 1`` would get (:func:`run_seed`), and the times
    are plain means: with enough seeds this is what a cluster with no overhead at all would
    measure on average, whichever ten runs a table happens to use.
    """
    return _ideal_speedups([run_seed(r) for r in range(runs)], setup, statistics.fmean)


def _ideal_speedups(seeds: Sequence[int], setup: Setup,
                    average: Callable[[Sequence[float]], float]) -> dict[int, float]:
    times = {p: average([ideal_job_seconds(seed, p, setup) for seed in seeds])
             for p in (1, 2, 4, 8)}
    return {p: times[1] / times[p] for p in times}


def setup_of(record: Mapping[str, Any]) -> Setup:
    """The setup a record was run with (its trial model and time scale; not the settings)."""
    return Setup(**{k: v for k, v in record["setup"].items() if k != "priority_settings"})


def run_seed(run: int, job: int = 0) -> int:
    """The search seed of job ``job`` in run ``run`` (the same in every cell: paired runs)."""
    return 1000 * (run + 1) + job


def trimmed_mean(values: Sequence[float]) -> float:
    """The paper's average: drop the highest and the lowest (with 3 or more), mean the rest."""
    ordered = sorted(values)
    if len(ordered) >= 3:
        ordered = ordered[1:-1]
    return statistics.fmean(ordered) if ordered else float("nan")


def cell_values(
    records: Sequence[Mapping[str, Any]]
) -> dict[tuple[int, int, str], dict[int, float]]:
    """(jobs, parallelism, policy) -> {run: the run's value (the mean time of its jobs)}."""
    out: dict[tuple[int, int, str], dict[int, float]] = {}
    for record in records:
        if record.get("mean_job_seconds") is None:
            continue
        key = (int(record["jobs"]), int(record["parallelism"]), str(record["policy"]))
        out.setdefault(key, {})[int(record["run"])] = float(record["mean_job_seconds"])
    return out
