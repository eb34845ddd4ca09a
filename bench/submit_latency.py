"""How long ``submit(...)`` of the Python API takes to return, and where the time goes.

Run with ``python -m bench.submit_latency`` (``--runs N``, default 5). Each run is a fresh
Python process, as a notebook's first call is: it imports the API (``from disauto import
submit`` and its first use), then submits a two-trial random search of a trivial script on the
embedded cluster (``master="local"``) and waits for the job's end, which is not counted. A
thread of the same process reads the job's folder and record every 5 ms and notes when each
step of the start happened, counted from the call:

* ``checked``: the job's folder exists (the keywords went through da-submit's parser and
  validators in this process, and its process is about to start);
* ``recorded``: the job's process has recorded the job (its pid in the record: it validated
  the job again, booted the embedded cluster and built its framework);
* ``page``: the job page's address is in the record;
* ``registered``: the framework registered with the master;
* ``returned``: ``submit(...)`` returned its handle.

The machine's load average (1 minute) is printed before and after each run: the project's
2-core machine is shared, and a loaded one stretches every phase.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import statistics
import subprocess
import sys
import tempfile


PROBE = r'''
import json, os, sys, threading, time
started = time.perf_counter()
from disauto import submit
import disauto.submit.api
imported = time.perf_counter() - started
from disauto.common import paths
from disauto.framework.record import meta
from disauto.framework.record import peek_meta

seen = {}
done = threading.Event()

def watch(t0):
    jobs = paths.jobs_dir()
    while not done.is_set():
        now = time.perf_counter() - t0
        folders = list(jobs.iterdir()) if jobs.is_dir() else []
        if folders:
            seen.setdefault("checked", now)
            db = folders[0] / paths.JOB_DB
            try:
                recorded = peek_meta(db) if db.exists() else None
            except Exception:
                recorded = None
            if recorded is not None and recorded[meta.PID]:
                seen.setdefault("recorded", now)
            if recorded is not None and recorded[meta.WEBUI_URL]:
                seen.setdefault("page", now)
            if recorded is not None and recorded[meta.FRAMEWORK_REGISTERED]:
                seen.setdefault("registered", now)
                return
        time.sleep(0.005)

t0 = time.perf_counter()
watcher = threading.Thread(target=watch, args=(t0,), daemon=True)
watcher.start()
job = submit(app_name="latency", files=["train.py"], app_runner_launch_cmd="python train.py",
             app_runner_cpus=0.5, app_runner_memory="128M", app_core_cpus=0.5,
             app_core_memory="128M", tuning_parameters={"parameters": [
                 {"name": "x", "type": "bound", "value": [0, 1]}]},
             trail_steps=2, parallelism=2, seed=1, **json.loads(sys.argv[1]))
returned = time.perf_counter() - t0
page = job.page
watcher.join(30)
done.set()
status = job.wait(120)
print(json.dumps({"import": imported, "returned": returned, **seen,
                  "outcome": status.outcome, "has_page": bool(page)}))
'''

TRAIN = '''
from apprunner_sdk import get_params, report
report(accuracy=float(get_params()["x"]), final=True)
'''

STEPS = ("import", "checked", "recorded", "page", "registered", "returned")


def load_average() -> float:
    return os.getloadavg()[0]


SEARCHES = {
    "random": {"tuning_type": "random-search"},
    # The README's example: Optuna's TPE, which da-submit's checks import (with SciPy).
    "tpe": {"tuning_type": "bayesian", "bayes_backend": "tpe",
            "tuning_setting": {"n_startup_trials": 3}},
}


def one_run(work: Path, search: str) -> dict[str, float | str | bool]:
    home = Path(tempfile.mkdtemp(prefix="home-", dir=work))
    (work / "train.py").write_text(TRAIN)
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(SEARCHES[search])],
                          cwd=work, capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "DISAUTO_HOME": str(home)})
    if done.returncode != 0:
        raise RuntimeError(f"the probe failed:\n{done.stdout}{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--search", choices=sorted(SEARCHES), default="random",
                        help="random-search (default) or Bayesian TPE (the README's example)")
    args = parser.parse_args(argv)
    print("| run | load before | import s | checked s | recorded s | page s | registered s | "
          "submit() s | load after |\n|---|---|---|---|---|---|---|---|---|")
    results = []
    with tempfile.TemporaryDirectory(prefix="submit-latency-") as scratch:
        for number in range(1, args.runs + 1):
            before = load_average()
            result = one_run(Path(scratch), args.search)
            results.append(result)
            cells = " | ".join(_cell(result.get(step)) for step in STEPS)
            print(f"| {number} | {before:.2f} | {cells} | {load_average():.2f} |", flush=True)
    medians = " | ".join(_cell(_median(results, step)) for step in STEPS)
    print(f"| median | | {medians} | |")


def _median(results: list[dict[str, float | str | bool]], step: str) -> float | None:
    values = [float(r[step]) for r in results if isinstance(r.get(step), int | float)
              and not isinstance(r.get(step), bool)]
    return statistics.median(values) if values else None


def _cell(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "-"


if __name__ == "__main__":
    main()
