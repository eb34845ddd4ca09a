"""Suggestion latency per search algorithm through AppCore's real gRPC path, as history grows.

Run with ``python -m bench.suggest_latency`` (``make bench-suggest``). For each algorithm and
each history size (10, 100, 1000 finished trials) it builds, in this process, the real framework
side of a job (:class:`~framework._job.JobController`, SQLite :class:`JobStore`, the framework's
gRPC server on loopback) whose store already holds that many COMPLETED trials, and starts a real
AppCore for it: ``python -m disauto.appcore`` in its own process with the environment the framework
gives its task (``--appcore thread`` runs the same code on a thread of this process instead, the
wiring of ``disauto/testing/inprocess.py``). Then, ``reps`` times, it launches ``batch`` trials and
records their final reports, lets them run for :data:`SETTLE_SECONDS` (AppCore handles the
events of their launch meanwhile, as in a job whose trials run for minutes), ends them with
Mesos TASK_FINISHED statuses through the controller (as the scheduler would), and measures the
time until the framework has recorded ``batch`` new trials: the WatchTrials events reaching
AppCore, the algorithm's tell and ask, and the SubmitTrials round trips with their SQLite
writes. A batch of 8 runs with ``--parallelism 8``: in async mode the 8 freed slots are refilled
as the events arrive; the ``... sync`` rows run Bayesian's synchronous mode (the paper's Table 1
has it for Bayesian optimization only), where AppCore suggests the next batch when its last
member has ended and submits it in one call. Latencies are reported as p50 / p99 in
milliseconds.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
import logging
import os
from pathlib import Path
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from disauto.common import task_env
from disauto.common.report import Report
from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.common.trial_state import TrialState
from disauto.protos import common_pb2
from disauto.protos import framework_pb2
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import AppCore
from disauto.testing.inprocess import Framework
from disauto.testing.inprocess import free_port
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import wait_for


ROOT = Path(__file__).resolve().parents[1]
SPACE = SearchSpace((
    RealParam("lr", 1e-4, 1e-1, log=True),
    RealParam("momentum", 0.0, 0.99),
    RealParam("dropout", 0.0, 0.5, step=0.05),
    IntParam("units", 16, 1024, log=True),
    IntParam("layers", 1, 8),
    CategoricalParam("act", ("relu", "tanh", "gelu")),
))

SETTLE_SECONDS = 0.1
"""How long the measured trials run before they end (AppCore catches up with their events)."""

ALGORITHMS: dict[str, tuple[str, dict[str, str]]] = {
    "grid-search": ("grid-search", {}),
    "random-search": ("random-search", {}),
    "bayesian tpe": ("bayesian", {"backend": "tpe"}),
    "bayesian qmc": ("bayesian", {"backend": "qmc"}),
    "bayesian gp": ("bayesian", {"backend": "gp"}),
    "bayesian tpe sync": ("bayesian", {"backend": "tpe", "mode": "sync"}),
    "bayesian qmc sync": ("bayesian", {"backend": "qmc", "mode": "sync"}),
}


@dataclass
class Row:
    algorithm: str
    history: int
    batch: int
    samples: list[float]

    def cells(self) -> list[str]:
        values = sorted(self.samples)
        p50 = statistics.median(values)
        p99 = float(np.percentile(values, 99))
        return [self.algorithm, str(self.history), str(self.batch), str(len(values)),
                f"{p50 * 1000:.1f}", f"{p99 * 1000:.1f}"]


def _prefill(framework: Framework, count: int, seed: int) -> None:
    """Record ``count`` completed trials with random valid assignments."""
    rng = np.random.default_rng(seed)
    for number in range(1, count + 1):
        assignment = {
            "lr": float(10 ** rng.uniform(-4, -1)), "momentum": float(rng.uniform(0, 0.99)),
            "dropout": round(0.05 * int(rng.integers(0, 11)), 2),
            "units": int(2 ** rng.uniform(4, 10)), "layers": int(rng.integers(1, 9)),
            "act": ("relu", "tanh", "gelu")[int(rng.integers(0, 3))],
        }
        framework.store.add_trial(number, assignment, 0)
        framework.store.update_trial(number, state=TrialState.COMPLETED,
                                     objective=float(rng.uniform()), final_reported=True)


class _AppCoreProcess:
    """``python -m disauto.appcore`` in its own process, set up as the framework sets it up."""

    def __init__(self, framework: Framework) -> None:
        env = {**os.environ, task_env.FRAMEWORK_ADDR: framework.address,
               task_env.JOB_TOKEN: JOB_TOKEN, task_env.APPCORE_PORT: str(free_port()),
               task_env.APPCORE_HOST: "127.0.0.1",
               "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.process = subprocess.Popen([sys.executable, "-m", "disauto.appcore"], cwd=ROOT,
                                        env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def close(self) -> None:
        try:
            self.process.wait(10)  # the job has ended: AppCore's loop returns
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


def measure(name: str, history: int, batch: int, reps: int, mode: str = "process") -> Row:
    tuning_type, settings = ALGORITHMS[name]
    with tempfile.TemporaryDirectory() as tmp:
        config = job_config(space=SPACE, tuning_type=tuning_type, settings=settings,
                            max_trials=history + batch * (reps + 2), parallelism=batch,
                            direction=common_pb2.MAXIMIZE, seed=1)
        seeding = Framework(Path(tmp), config)
        _prefill(seeding, history, seed=history)
        seeding.close()
        framework = Framework(Path(tmp), config)  # reads the prefilled store
        framework.launch_appcore()
        appcore: AppCore | _AppCoreProcess = (
            _AppCoreProcess(framework) if mode == "process" else AppCore(framework.address).run())
        samples = []
        try:
            # Sync mode issues batches by trial number: the one the prefilled trials end in is
            # completed first.
            expected = history + (batch - history % batch
                                  if settings.get("mode") == "sync" else batch)
            wait_for(lambda: len(framework.states()) == expected, timeout=120,
                     what="the first batch")
            rng = np.random.default_rng(0)
            for _ in range(reps):
                running = framework.launch_trials()
                for number in running:
                    framework.controller.record_report(Report(number, {"accuracy": rng.uniform()},
                                                       None, True, 1.0))
                expected += batch
                # The trials "run" a moment, so AppCore has handled the events of their launch
                # and reports (as in a job, where trials run for minutes) before they end.
                time.sleep(SETTLE_SECONDS)
                sequence = framework.controller.events_after(0, 0)[0][-1].sequence
                started = time.perf_counter()
                for number in running:
                    framework.end_trial(number, "TASK_FINISHED")
                newest = 0
                while newest < expected:  # new trials arrive as PENDING events
                    events, _ = framework.controller.events_after(sequence, timeout=60)
                    if events:
                        sequence = events[-1].sequence
                        newest = max(newest, *(e.trial.number for e in events))
                samples.append(time.perf_counter() - started)
        finally:
            framework.controller.finish(framework_pb2.STOPPED, "benchmark done")
            appcore.close()
            framework.close()
    return Row(name, history, batch, samples)


def table(rows: list[Row]) -> str:
    header = ["algorithm", "finished trials", "batch", "n", "p50 ms", "p99 ms"]
    lines = [header] + [row.cells() for row in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = ["| " + " | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) + " |"
           for line in lines]
    out.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100,
                        help="measured batch-1 suggestions per cell (a third as many "
                             "batches of 8)")
    parser.add_argument("--gp-max-history", type=int, default=100,
                        help="largest history the GP backend is measured at (its fit is "
                             "cubic in the history)")
    parser.add_argument("--algorithms", nargs="*", default=list(ALGORITHMS))
    parser.add_argument("--appcore", choices=("process", "thread"), default="process",
                        help="AppCore as its own `python -m disauto.appcore` process, as in a job "
                             "(default), or on a thread of this process (sharing its GIL with "
                             "the framework side)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    rows = []
    for name in args.algorithms:
        for history in (10, 100, 1000):
            if name == "bayesian gp" and history > args.gp_max_history:
                continue
            for batch in (1, 8):
                reps = args.reps if batch == 1 else max(5, args.reps // 3)
                if name == "bayesian gp":
                    reps = max(3, reps // 5)
                row = measure(name, history, batch, reps, args.appcore)
                rows.append(row)
                print(" ".join(row.cells()), file=sys.stderr, flush=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
