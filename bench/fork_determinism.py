"""Issue 31: do forked trials (``--slot-preload``) compute what exec'd trials compute?

Runs the same seeded random search of :mod:`bench.fork_trial` (a deterministic PyTorch CNN on
the digits: fixed seed, ``torch.use_deterministic_algorithms(True)``, one thread) as real
``da-submit --master local`` jobs: ``--runs`` times with ``--slot-mode task`` (each trial a
fresh ``python -m bench.fork_trial``) and ``--runs`` times with ``--slot-mode warm
--slot-preload torch,sklearn.datasets`` (each trial forked from its slot's interpreter). Then,
trial by trial, it prints each job's accuracy and weights' digest, and for each job what its
trials inherited: how many distinct unseeded draws of PyTorch's and NumPy's generators and of
Python's string hash seed its trials saw, their thread counts and how many interpreters forked
them. Needs PyTorch in the venv (``pip install`` the CPU wheel; it is no DisAuto requirement)::

    python -m bench.fork_determinism --runs 2 --trials 8 [--json FILE]

On the 2-core development machine a run of the four jobs takes about 10 minutes.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import json
import os
from pathlib import Path
import re
import subprocess
import sys
import tempfile
import time
from typing import Any


ROOT = Path(__file__).resolve().parents[1]
PRELOAD = "torch,sklearn.datasets"
PARAMS = {"parameters": [
    {"name": "lr", "type": "bound", "value": [0.001, 0.5], "log": True},
    {"name": "momentum", "type": "bound", "value": [0.0, 0.95]},
]}


def run_job(mode: str, run: int, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """One job; its trials (number, assignment, accuracy, the trial's own JSON line) and
    seconds."""
    folder = work / f"{mode}-{run}"
    folder.mkdir(parents=True)
    (folder / "params.json").write_text(json.dumps(PARAMS))
    env = {**os.environ, "DISAUTO_HOME": str(folder / "home"),
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    slots = ["--slot-mode", "warm", "--slot-preload", args.preload] if mode == "preload" \
        else ["--slot-mode", "task"]
    launch = (f"python -m bench.fork_trial --seed {args.train_seed} --epochs {args.epochs} "
              f"--threads {args.threads}")
    command = [
        sys.executable, "-m", "disauto.submit.cli", "--app-name", f"fork-{mode}-{run}",
        "--app-runner-launch-cmd", launch, "--app-runner-cpus", "0.5",
        "--app-runner-memory", "1G", "--app-core-cpus", "0.5", "--app-core-memory", "256M",
        "--tuning-parameters", str(folder / "params.json"), "--tuning-type", "random-search",
        "--trail-steps", str(args.trials), "--parallelism", str(args.parallelism),
        "--seed", str(args.seed), "--objective", "accuracy", "--direction", "maximize",
        "--trial-timeout", "600", *slots,
    ]
    started = time.monotonic()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True,
                          check=False, timeout=3600)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"{mode} run {run}: da-submit exited {done.returncode}: "
                           f"{done.stdout[-1500:]}{done.stderr[-1500:]}")
    job_dir = Path(re.search(r"job folder (\S+)", done.stdout + done.stderr).group(1))
    results = json.loads((job_dir / "results.json").read_text())
    trials = []
    for trial in sorted(results["trials"], key=lambda t: t["number"]):
        stdout = (job_dir / "logs" / f"trial-{trial['number']:04d}.stdout").read_text()
        own = json.loads([line for line in stdout.splitlines() if line.startswith("{")][-1])
        trials.append({"number": trial["number"], "state": trial["state"],
                       "assignment": trial["assignment"], **own})
    return {"mode": mode, "run": run, "seconds": seconds, "trials": trials}


def trial_table(jobs: Sequence[dict[str, Any]]) -> str:
    """Markdown: per trial, its assignment and each job's accuracy and digest."""
    head = "| trial | lr | momentum | " + " | ".join(
        f"{j['mode']} {j['run']}" for j in jobs) + " | identical |"
    lines = [head, "|" + "---|" * (len(jobs) + 4)]
    for index, first in enumerate(jobs[0]["trials"]):
        params = first["assignment"]
        cells, digests = [], set()
        for job in jobs:
            outcome = job["trials"][index]["outcome"]
            digests.add((outcome["accuracy"], outcome["digest"]))
            cells.append(f"{outcome['accuracy']:.4f} `{outcome['digest'][:8]}`")
        lines.append(f"| {first['number']} | {params['lr']:.4g} | {params['momentum']:.3f} | "
                     + " | ".join(cells) + f" | {'yes' if len(digests) == 1 else 'NO'} |")
    return "\n".join(lines)


def inherited_table(jobs: Sequence[dict[str, Any]]) -> str:
    """Markdown: per job, how many distinct values its trials inherited."""
    keys = ("torch_initial_seed", "torch_draw", "numpy_draw", "random_draw", "hash_of_a_str")
    lines = ["| job | trials | " + " | ".join(f"distinct {k}" for k in keys)
             + " | torch threads | interpreters that forked them |",
             "|" + "---|" * (len(keys) + 4)]
    for job in jobs:
        states = [t["inherited"] for t in job["trials"]]
        distinct = [str(len({s[k] for s in states})) for k in keys]
        threads = sorted({s["torch_threads"] for s in states})
        parents = len({s["ppid"] for s in states}) if job["mode"] == "preload" else "-"
        lines.append(f"| {job['mode']} {job['run']} | {len(states)} | " + " | ".join(distinct)
                     + f" | {threads} | {parents} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--seed", type=int, default=31, help="the search's seed")
    parser.add_argument("--train-seed", type=int, default=0, help="every trial's torch seed")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--preload", default=PRELOAD)
    parser.add_argument("--modes", default="task,preload", help="task, preload or both")
    parser.add_argument("--json", type=Path, help="also write every job's trials here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fork-determinism-") as work:
        jobs = [run_job(mode, run, args, Path(work))
                for run in range(1, args.runs + 1) for mode in args.modes.split(",")]
    jobs.sort(key=lambda j: (j["mode"] != "task", j["run"]))
    if args.json:
        args.json.write_text(json.dumps(jobs, indent=1))
    print(trial_table(jobs))
    print()
    print(inherited_table(jobs))
    print()
    print(" ".join(f"{j['mode']} {j['run']}: {j['seconds']:.0f} s." for j in jobs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
