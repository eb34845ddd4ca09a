"""Early stopping on the digits model: wall time and best accuracy with and without ASHA.

Run with ``python -m bench.early_stopping`` (``make bench-early-stopping``). It runs the same
job twice through ``da-submit`` on the embedded Mesos cluster (``--master local``): the
epoch-by-epoch MLP of ``examples/sklearn_digits_epochs.py`` (60 epochs, a report per epoch),
Bayesian search (TPE, async) with the same seed, the same trial budget and parallelism --
once with ``--early-stopping none`` and once with ``--early-stopping asha`` (rungs at epochs
2, 6, 18, 54: ``min_resource=2``, ``reduction_factor=3``). It reports each job's wall time
(da-submit's start to its exit), best validation accuracy, and trials pruned, and the epochs
trained in all (the work done, from the job store's reports).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import sqlite3
import subprocess
import sys
import tempfile
import time

from disauto.common.trial_state import TrialState


ROOT = Path(__file__).resolve().parents[1]


def run_job(home: Path, rule: str, trials: int, parallelism: int, seed: int) -> dict[str, object]:
    flags = [
        sys.executable, "-m", "disauto.submit.cli", "--app-name", f"es-{rule}", "--quiet",
        "--files", str(ROOT / "examples" / "sklearn_digits_epochs.py"),
        "--app-runner-launch-cmd", "python sklearn_digits_epochs.py",
        "--app-runner-cpus", "1", "--app-runner-memory", "256M",
        "--app-core-cpus", "0.5", "--app-core-memory", "256M",
        "--tuning-type", "bayesian", "--tuning-parameters",
        str(ROOT / "examples" / "sklearn_digits_epochs_params.json"),
        "--trail-steps", str(trials), "--parallelism", str(parallelism), "--seed", str(seed),
        "--early-stopping", rule, "--slot-mode", "task",
    ]
    if rule == "asha":
        flags += ["--early-stopping-setting", "min_resource=2",
                  "--early-stopping-setting", "reduction_factor=3"]
    env = {**os.environ, "DISAUTO_HOME": str(home), "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    done = subprocess.run(flags, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"da-submit failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    job_dir = next((home / "jobs").iterdir())
    results = json.loads((job_dir / "results.json").read_text())
    with sqlite3.connect(job_dir / "job.db") as db:
        epochs = db.execute("SELECT count(*) FROM reports WHERE final = 0").fetchone()[0]
    states = [t["state"] for t in results["trials"]]
    return {"rule": rule, "wall": wall, "best": results["best"]["objective"],
            "pruned": states.count(TrialState.PRUNED),
            "completed": states.count(TrialState.COMPLETED),
            "epochs": epochs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rows = []
    for rule in ("none", "asha"):
        with tempfile.TemporaryDirectory() as tmp:
            row = run_job(Path(tmp), rule, args.trials, args.parallelism, args.seed)
        rows.append(row)
        print(row, file=sys.stderr, flush=True)
    print("| early stopping | wall time s | best accuracy | completed | pruned | epochs trained |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['rule']} | {row['wall']:.1f} | {row['best']:.4f} | {row['completed']} | "
              f"{row['pruned']} | {row['epochs']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
