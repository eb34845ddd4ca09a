"""Warm slots against a task per trial, Optuna's ``n_jobs`` and Ray Tune's reused actors.

Run with ``python -m bench.warm_slots`` (Ray Tune is in the ``bench`` extra; without it the
Ray rows are skipped with the reason). The workload is the issue's sleep trial: ``--trials``
trials (64) that each sleep ``S`` seconds, ``P`` at a time; ideal wall time
``ceil(trials / P) * S``. Each cell (P, S) runs, in the same process, one after the other:

* ``disauto-task`` and ``disauto-warm``: ``da-submit --master local`` (random search) with
  ``--slot-mode task`` / ``warm``; each trial is the user's script in a fresh Python process
  that imports ``apprunner_sdk``, sleeps and reports ``final=True``;
* ``disauto-preload``: warm slots with ``--slot-preload apprunner_sdk``: each trial is the same
  script, forked from the slot's interpreter that imported the SDK once;
* with ``--docker``, also ``disauto-task-docker``, ``disauto-warm-docker`` and
  ``disauto-preload-docker``: the same with ``--docker-image`` (``--image``, default the
  runner image ``make images`` builds): a container per trial, one container per slot that
  runs each trial with ``docker exec``, or one per slot whose Python forks each trial;
* ``optuna``: ``study.optimize(n_jobs=P)`` of the same sleep (threads, in this process);
* ``ray-tune``: a function trainable, ``reuse_actors=True``, ``max_concurrent_trials=P``.

Every trial writes when it began (before any import) and when it ended (after its final
report) to one file; **wall** is the first beginning to the last end, so the systems' start-up
(cluster boot, AppCore, ``ray.init``) is left out and every per-trial cost is in. **Overhead
per slot** is ``(wall - ideal) / ceil(trials / P)``: what each trial cost a slot besides its
sleep. **Efficiency** is ``ideal / wall``. ``total`` is da-submit's whole run, for reference.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
import json
import math
import os
from pathlib import Path
import sqlite3
import subprocess
import sys
import tempfile
import time


ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ("disauto-task", "disauto-warm", "disauto-preload", "optuna", "ray-tune")
DOCKER_SYSTEMS = ("disauto-task-docker", "disauto-warm-docker", "disauto-preload-docker")
RUNNER_IMAGE = "disauto/apprunner-small:latest"

SLEEP_TRIAL = '''
import time
began = time.time()
import os, sys
from apprunner_sdk import get_params, report
x = float(get_params()["x"])
time.sleep(float(sys.argv[2]))
report(loss=x, final=True)
with open(sys.argv[1], "a") as out:
    out.write(f"{began} {time.time()} {os.environ['DISAUTO_TRIAL_NUMBER']}\\n")
'''


@dataclass
class Result:
    system: str
    parallelism: int
    seconds: float
    trials: int
    wall: float = 0.0
    total: float = 0.0
    in_trial: float = 0.0
    """Mean seconds a trial took beyond its sleep (imports, reporting)."""
    note: str = ""
    phases: dict[str, float] | None = None
    """DisAuto only: the mean seconds of each phase of a trial (:func:`phases`)."""

    @property
    def ideal(self) -> float:
        return math.ceil(self.trials / self.parallelism) * self.seconds

    @property
    def efficiency(self) -> float:
        return self.ideal / self.wall if self.wall else 0.0

    @property
    def overhead(self) -> float:
        return (self.wall - self.ideal) / math.ceil(self.trials / self.parallelism)

    def row(self) -> str:
        if self.note:
            return f"| {self.system} | {self.parallelism} | {self.seconds:g} | {self.note} |"
        total = f"{self.total:.1f}" if self.total else "-"
        return (f"| {self.system} | {self.parallelism} | {self.seconds:g} | {self.wall:.2f} | "
                f"{self.ideal:.2f} | {self.efficiency:.3f} | {self.overhead:.3f} | "
                f"{self.in_trial:.3f} | {total} |")


HEADER = ("| system | P | trial s | wall s | ideal s | efficiency | overhead s/slot | "
          "in-trial s | total s |\n|---|---|---|---|---|---|---|---|---|")


def _spans(times: Path, expected: int) -> list[tuple[float, float]]:
    spans = [(float(fields[0]), float(fields[1])) for fields in
             (line.split() for line in times.read_text().splitlines() if line)]
    if len(spans) != expected:
        raise RuntimeError(f"{len(spans)} trials recorded their times, not {expected}")
    return spans


def _measured(spans: list[tuple[float, float]], seconds: float) -> dict[str, float]:
    """wall (first beginning to last end) and in_trial (mean time beyond the sleep)."""
    wall = max(end for _, end in spans) - min(begin for begin, _ in spans)
    return {"wall": wall,
            "in_trial": sum(end - begin for begin, end in spans) / len(spans) - seconds}


def run_disauto(mode: str, parallelism: int, seconds: float, trials: int, work: Path,
                image: str = "", extra: tuple[str, ...] = (), system: str = "") -> Result:
    """One DisAuto cell; with ``image`` its trials run in containers of it (the times file is
    in the ``--output`` folder, which is mounted in them, and the trials' settings are in the
    launch command: a container gets only the task's environment); ``extra`` flags added."""
    work.mkdir(parents=True)
    (work / "sleep_trial.py").write_text(SLEEP_TRIAL)
    (work / "params.json").write_text(json.dumps(
        {"parameters": [{"name": "x", "type": "bound", "value": [0.0, 1.0]}]}))
    (work / "out").mkdir()
    times = work / "out" / "times.txt"
    env = {**os.environ, "DISAUTO_HOME": str(work / "home"),
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    launch = f"python sleep_trial.py {times} {seconds}"
    docker = ["--docker-image", image, "--output", f"{work / 'out'}#unused"] if image else []
    command = [
        sys.executable, "-m", "disauto.submit.cli", "--app-name", f"bench-{mode}",
        "--files", str(work / "sleep_trial.py"), "--app-runner-launch-cmd", launch, *docker,
        "--app-runner-cpus", "0.1", "--app-runner-memory", "64M",
        "--app-core-cpus", "0.5", "--app-core-memory", "256M",
        "--tuning-parameters", str(work / "params.json"), "--tuning-type", "random-search",
        "--trail-steps", str(trials), "--parallelism", str(parallelism), "--seed", "1",
        "--objective", "loss", "--direction", "minimize", "--slot-mode", mode, "--quiet",
        *extra,
    ]
    started = time.monotonic()
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True,
                          check=False, timeout=1800)
    total = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"da-submit exited {done.returncode}: {done.stderr[-2000:]}")
    return Result(system or f"disauto-{mode}{'-docker' if image else ''}", parallelism,
                  seconds, trials, total=total,
                  phases=phases(work / "home", times, seconds),
                  **_measured(_spans(times, trials), seconds))


PHASES = ("launch", "process start", "in trial", "exit + update")


def phases(home: Path, times: Path, seconds: float) -> dict[str, float]:
    """Mean seconds of a DisAuto trial's phases, from the job's record and the trials' own
    times: **launch** (submitted → TASK_RUNNING recorded: offer, ACCEPT, executor), **process
    start** (TASK_RUNNING → the script's first line: shell and interpreter), **in trial** (the
    script's time beyond its sleep: ``apprunner_sdk`` import and reports), **exit + update**
    (the script's last line → TASK_FINISHED recorded: interpreter exit, status update path)."""
    (db_path,) = home.glob("jobs/*/job.db")
    with sqlite3.connect(db_path) as db:
        created = dict(db.execute("SELECT number, created_at FROM trials").fetchall())
        recorded: dict[tuple[int, str], float] = {}
        for task_id, state, at in db.execute(
                "SELECT task_id, state, recorded_at FROM task_updates "
                "WHERE task_id LIKE 'trial-%'"):
            number = int(str(task_id).split("-")[1].split(".")[0])
            recorded.setdefault((number, str(state)), float(at))
    sums = dict.fromkeys(PHASES, 0.0)
    rows = [line.split() for line in times.read_text().splitlines() if line]
    for began, ended, number in ((float(a), float(b), int(n)) for a, b, n in rows):
        running = recorded[(number, "TASK_RUNNING")]
        sums["launch"] += running - created[number]
        sums["process start"] += began - running
        sums["in trial"] += ended - began - seconds
        sums["exit + update"] += recorded[(number, "TASK_FINISHED")] - ended
    return {name: total / len(rows) for name, total in sums.items()}


def run_optuna(parallelism: int, seconds: float, trials: int, work: Path) -> Result:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    spans: list[tuple[float, float]] = []

    def objective(trial: optuna.Trial) -> float:
        began = time.time()
        x = trial.suggest_float("x", 0.0, 1.0)
        time.sleep(seconds)
        spans.append((began, time.time()))
        return x

    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    study.optimize(objective, n_trials=trials, n_jobs=parallelism)
    return Result("optuna", parallelism, seconds, trials, **_measured(spans, seconds))


def run_ray(parallelism: int, seconds: float, trials: int, work: Path) -> Result:
    try:
        import ray
        from ray import tune
    except ImportError as err:
        return Result("ray-tune", parallelism, seconds, trials, 0.0,
                      note=f"not installed ({err}); pip install -e '.[bench]'")
    work.mkdir(parents=True)
    times = work / "times.txt"

    def trainable(config: dict[str, float]) -> None:
        began = time.time()
        time.sleep(config["seconds"])
        tune.report({"loss": config["x"]})
        with open(config["times"], "a") as out:  # type: ignore[call-overload]
            out.write(f"{began} {time.time()}\n")

    ray.init(num_cpus=parallelism, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        tuner = tune.Tuner(
            tune.with_resources(trainable, {"cpu": 1}),
            param_space={"x": tune.uniform(0.0, 1.0), "seconds": seconds,
                         "times": str(times)},
            tune_config=tune.TuneConfig(num_samples=trials, max_concurrent_trials=parallelism,
                                        reuse_actors=True, metric="loss", mode="min"),
            run_config=tune.RunConfig(storage_path=str(work / "ray"), verbose=0),
        )
        tuner.fit()
    finally:
        ray.shutdown()
    return Result("ray-tune", parallelism, seconds, trials,
                  **_measured(_spans(times, trials), seconds))


def run(system: str, parallelism: int, seconds: float, trials: int, work: Path,
        image: str = RUNNER_IMAGE) -> Result:
    runners: dict[str, Callable[[], Result]] = {
        "disauto-task": lambda: run_disauto("task", parallelism, seconds, trials, work),
        "disauto-warm": lambda: run_disauto("warm", parallelism, seconds, trials, work),
        "disauto-preload": lambda: run_disauto("warm", parallelism, seconds, trials, work,
                                               extra=("--slot-preload", "apprunner_sdk"),
                                               system="disauto-preload"),
        "disauto-task-docker": lambda: run_disauto("task", parallelism, seconds, trials, work,
                                                   image),
        "disauto-warm-docker": lambda: run_disauto("warm", parallelism, seconds, trials, work,
                                                   image),
        "disauto-preload-docker": lambda: run_disauto(
            "warm", parallelism, seconds, trials, work, image,
            extra=("--slot-preload", "apprunner_sdk"), system="disauto-preload-docker"),
        "optuna": lambda: run_optuna(parallelism, seconds, trials, work),
        "ray-tune": lambda: run_ray(parallelism, seconds, trials, work),
    }
    return runners[system]()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--parallelism", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--seconds", type=float, nargs="+", default=[1.0, 0.1])
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS),
                        choices=SYSTEMS + DOCKER_SYSTEMS)
    parser.add_argument("--docker", action="store_true",
                        help="also run the DisAuto rows with --docker-image (every mode)")
    parser.add_argument("--image", default=RUNNER_IMAGE,
                        help=f"the image of the docker rows (default {RUNNER_IMAGE})")
    args = parser.parse_args(argv)
    if args.docker:
        args.systems += [f"{s}-docker" for s in ("disauto-task", "disauto-warm",
                                                  "disauto-preload")
                         if s in args.systems and f"{s}-docker" not in args.systems]
    print(HEADER, flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-warm-") as scratch:
        for seconds in args.seconds:
            for parallelism in args.parallelism:
                for system in args.systems:
                    work = Path(scratch) / f"{system}-{parallelism}-{seconds:g}"
                    try:
                        result = run(system, parallelism, seconds, args.trials, work,
                                     args.image)
                    except Exception as err:  # noqa: BLE001 - one failed cell, not the table
                        result = Result(system, parallelism, seconds, args.trials, 0.0,
                                        note=f"failed: {str(err).splitlines()[-1][:200]}")
                    print(result.row(), flush=True)
                    results.append(result)
    print("\nDisAuto's trial phases, mean seconds (bench.warm_slots.phases):\n")
    print("| system | P | trial s | " + " | ".join(PHASES) + " |")
    print("|---|---|---|" + "---|" * len(PHASES))
    for result in results:
        if result.phases:
            print(f"| {result.system} | {result.parallelism} | {result.seconds:g} | "
                  + " | ".join(f"{result.phases[name]:.3f}" for name in PHASES) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
