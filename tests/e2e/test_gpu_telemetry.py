"""GPU figures of real trials, end to end: the runner's sampler → AppCore → the framework → the
job store, ``results.json``, ``results.csv`` and ``da-job status``.

The test machines have no GPU, so NVML cannot be real here: the trial script feeds the SDK's
sampler known figures in place of NVML's (``apprunner_sdk.gpu._use_measure_for_tests``, the
one stand-in). Everything else is real: a ``da-cluster`` whose agent declares one GPU
(``--gpus 1``) hands it to each ``--app-runner-gpus 1`` trial (``CUDA_VISIBLE_DEVICES=0``,
which is what makes the SDK start its sampler), in task mode and in a warm slot whose
pre-imported interpreter forks each trial (``--slot-preload apprunner_sdk``). A
``--master local`` trial on this machine, without the stand-in, goes the real NVML way:
``pynvml`` installed, no driver, no figures.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
import sqlite3
import subprocess
import sys
from typing import Any

import pytest

from tests.e2e.conftest import ROOT
from tests.e2e.conftest import DaCluster
from tests.e2e.conftest import common_flags


pytestmark = [pytest.mark.integration, pytest.mark.slow]

GIB = 1 << 30

# Trial n is "measured" at 30 + 10 n % busy using n GiB, every 0.2 s, for about 1.5 s.
GPU_RUNNER = '''
import os, time
from apprunner_sdk import get_params, gpu, report
n = int(os.environ["DISAUTO_TRIAL_NUMBER"])
gpu._use_measure_for_tests(lambda: (30.0 + 10 * n, float(n * (1 << 30))), interval=0.2)
p = get_params()
time.sleep(1.5)
report(accuracy=float(p.get("x", 0.5)), final=True)
'''


def _gpu_samples(job_dir: Path) -> list[tuple[str, str, int, float]]:
    with sqlite3.connect(job_dir / "job.db") as db:
        return db.execute("SELECT data_name, node, trial, value FROM telemetry "
                          "WHERE data_name LIKE 'gpu%' ORDER BY id").fetchall()


def _agents(job_dir: Path) -> dict[int, str]:
    with sqlite3.connect(job_dir / "job.db") as db:
        return dict(db.execute("SELECT number, agent_id FROM trials").fetchall())


def _status(home: Path, job_id: str) -> str:
    env = {**os.environ, "DISAUTO_HOME": str(home),
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "disauto.submit.job_cli", "status", job_id],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize("mode", [(), ("--slot-mode", "warm", "--slot-preload", "apprunner_sdk")],
                         ids=["task", "warm-preload"])
def test_gpu_trials_figures_reach_the_store_results_and_status(
        submit: Any, workdir: Path, tmp_path: Path, mode: tuple[str, ...]) -> None:
    (workdir / "runner.py").write_text(GPU_RUNNER)
    cluster = DaCluster(tmp_path / "da-cluster", extra=("--gpus", "1"))
    try:
        address = cluster.start()
        job = submit(*common_flags(workdir, "--trail-steps", "2", "--parallelism", "1",
                                   "--app-runner-gpus", "1", "--telemetry-interval", "0.5s",
                                   "--master", address, *mode))
        assert job.wait(240) == 0, job.output
    finally:
        cluster.kill()
    job_dir = job.job_dir()
    results = job.results()
    trials = {t["number"]: t for t in results["trials"]}
    assert sorted(trials) == [1, 2] and all(t["state"] == "COMPLETED" for t in trials.values())

    # The store: every sample of trial n is n's figure, from the agent that ran it.
    samples = _gpu_samples(job_dir)
    agents = _agents(job_dir)
    for number in (1, 2):
        mine = [(name, value) for name, node, trial, value in samples
                if trial == number and node == agents[number]]
        utilization = [v for name, v in mine if name == "gpu_utilization_percent"]
        memory = [v for name, v in mine if name == "gpu_memory_used_bytes"]
        assert len(utilization) >= 3 and set(utilization) == {30.0 + 10 * number}, samples
        assert len(memory) == len(utilization) and set(memory) == {float(number * GIB)}
    assert len(samples) == sum(1 for _, node, trial, _ in samples if node == agents[trial])

    # results.json and results.csv.
    for number, trial in trials.items():
        assert trial["usage"]["mean_gpu_utilization"] == 30.0 + 10 * number
        assert trial["usage"]["peak_gpu_memory_bytes"] == number * GIB
    usage = results["usage"]
    assert (usage["mean_gpu_utilization"], usage["gpu_trials"]) == (45.0, 2)
    assert usage["largest_peak_gpu_memory_bytes"] == 2 * GIB
    assert usage["largest_peak_gpu_memory_trial"] == 2
    with (job_dir / "results.csv").open() as handle:
        rows = {int(row["trial"]): row for row in csv.DictReader(handle)}
    assert rows[1]["mean_gpu_utilization"] == "40.0" and rows[2]["mean_gpu_utilization"] == "50.0"
    assert rows[1]["peak_gpu_memory_mb"] == "1024.0" and rows[2]["peak_gpu_memory_mb"] == "2048.0"

    # da-job status, and the job's own summary.
    # (Each wrapped to 80 columns: compared word by word.)
    line = "GPU 45 % busy on average (2 trials), largest GPU memory 2048 MB (trial-0002)"
    assert f"usage: {line}" in " ".join(_status(tmp_path / "home", results["job_id"]).split())
    assert f"da-submit: {line}" in job.words


# The real NVML path, no stand-in: the test extra installs nvidia-ml-py, and there is no driver.
NVML_RUNNER = '''
import importlib.util, time
from apprunner_sdk import get_params, report
p = get_params()
time.sleep(1.0)
report(accuracy=0.5, pynvml_installed=float(importlib.util.find_spec("pynvml") is not None),
       final=True)
'''


def test_without_a_driver_a_trial_has_no_gpu_figures(submit: Any, workdir: Path) -> None:
    """``--master local`` on a machine without GPUs (its agent sets no GPU variable, as a real
    agent does): the trial's SDK finds ``pynvml`` but ``nvmlInit`` fails, so it starts no
    sampler; the trial is measured otherwise, its GPU figures absent, not zero."""
    (workdir / "runner.py").write_text(NVML_RUNNER)
    job = submit(*common_flags(workdir, "--trail-steps", "1", "--telemetry-interval", "0.5s"))
    assert job.wait(240) == 0, job.output
    (trial,) = job.results()["trials"]
    assert trial["state"] == "COMPLETED"
    assert trial["metrics"]["pynvml_installed"] == 1.0  # the no-driver path, not the no-pynvml one
    assert trial["usage"]["mean_gpu_utilization"] is None
    assert trial["usage"]["peak_gpu_memory_bytes"] is None
    assert trial["usage"]["cpu_seconds"] is not None  # measured, only not the GPU
    assert _gpu_samples(job.job_dir()) == []
    assert "GPU" not in job.output
