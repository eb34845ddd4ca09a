"""Telemetry of real trials: what a trial that uses a known amount of memory and CPU is
recorded to have used, on ``--master local`` and on a ``da-cluster``."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import DaCluster
from tests.e2e.conftest import common_flags
from tests.e2e.conftest import nothing_left


pytestmark = [pytest.mark.integration, pytest.mark.slow]

# 200 MB touched, about 1 s of CPU, then it reports what the kernel says it used (its own peak
# resident set and CPU time) and stays a while so that the collector sees the final figures.
LOAD_RUNNER = '''
import resource, time
from apprunner_sdk import get_params, report
p = get_params()
block = bytearray(200 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
end = time.process_time() + 1.0
while time.process_time() < end:
    pass
time.sleep(2.5)
own = resource.getrusage(resource.RUSAGE_SELF)
report(accuracy=float(p.get("x", 0.5)), own_peak_mb=own.ru_maxrss / 1024,
       own_cpu_seconds=own.ru_utime + own.ru_stime, final=True)
'''


def _check_usage(trials: list[dict[str, Any]]) -> None:
    for trial in trials:
        assert trial["state"] == "COMPLETED", trial
        usage, metrics = trial["usage"], trial["metrics"]
        peak_mb = usage["peak_rss_bytes"] / (1 << 20)
        assert abs(peak_mb - metrics["own_peak_mb"]) <= 0.2 * metrics["own_peak_mb"], trial
        cpu = usage["cpu_seconds"]
        assert abs(cpu - metrics["own_cpu_seconds"]) <= 0.3 * metrics["own_cpu_seconds"], trial
        assert usage["mean_rss_bytes"] <= usage["peak_rss_bytes"]
        assert usage["mean_gpu_utilization"] is None  # no GPU here: absent, not zero


def _run(submit: Any, workdir: Path, *extra: str) -> Any:
    (workdir / "runner.py").write_text(LOAD_RUNNER)
    job = submit(*common_flags(workdir, "--trail-steps", "2", "--parallelism", "2",
                               "--app-runner-memory", "512M", "--telemetry-interval", "0.5s",
                               *extra))
    assert job.wait(240) == 0, job.output
    return job


def test_local_job_records_what_its_trials_used(submit: Any, workdir: Path) -> None:
    job = _run(submit, workdir)
    results = job.results()
    _check_usage(results["trials"])
    usage = results["usage"]
    largest = max(t["usage"]["peak_rss_bytes"] for t in results["trials"])
    assert usage["largest_peak_rss_bytes"] == largest
    assert usage["suggested_app_runner_memory_mb"] >= 1.2 * largest / (1 << 20)
    assert "fits the trials seen" in job.words and "largest peak memory" in job.words
    with (job.job_dir() / "results.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert all(float(row["peak_rss_mb"]) > 150 and float(row["cpu_seconds"]) > 0.5
               for row in rows)
    assert all(row["mean_gpu_utilization"] == "" for row in rows)


def test_da_cluster_job_records_what_its_trials_used(submit: Any, workdir: Path,
                                                    tmp_path: Path) -> None:
    cluster = DaCluster(tmp_path / "da-cluster")
    try:
        address = cluster.start()
        job = _run(submit, workdir, "--master", address)
        results = job.results()
        _check_usage(results["trials"])
        assert nothing_left(results["job_id"])
    finally:
        cluster.kill()


# The same work without the wait: a warm slot's executor measures the trial when it reaps it,
# so its figures are exact without a poll after the work.
QUICK_RUNNER = LOAD_RUNNER.replace("time.sleep(2.5)\n", "")


@pytest.mark.parametrize("preload", [(), ("--slot-preload", "json")], ids=["shell", "preload"])
def test_warm_slot_trials_are_measured_exactly_one_by_one(submit: Any, workdir: Path,
                                                          preload: tuple[str, ...]) -> None:
    (workdir / "runner.py").write_text(QUICK_RUNNER)
    job = submit(*common_flags(workdir, "--trail-steps", "3", "--parallelism", "1",
                               "--app-runner-memory", "512M", "--telemetry-interval", "0.5s",
                               "--slot-mode", "warm", *preload))
    assert job.wait(240) == 0, job.output
    trials = job.results()["trials"]
    assert len(trials) == 3
    # One slot ran the three one after another: the second and third trials' figures are
    # their own, not the slot's running total nor the executor's or interpreter's.
    log = (job.job_dir() / "da-submit.log").read_text()
    assert log.count("starting slot") == 1, log
    _check_usage(trials)


def test_telemetry_off(submit: Any, workdir: Path) -> None:
    job = submit(*common_flags(workdir, "--trail-steps", "1", "--telemetry-interval", "0"))
    assert job.wait(240) == 0, job.output
    (trial,) = job.results()["trials"]
    assert set(trial["usage"].values()) == {None}
    assert "largest peak memory" not in job.output


def test_bad_telemetry_interval_is_one_line(submit: Any, workdir: Path) -> None:
    job = submit(*common_flags(workdir, "--telemetry-interval", "often"))
    assert job.wait(60) == 2
    errors = [line for line in job.lines if line.startswith("da-submit: error:")]
    assert len(errors) == 1 and errors[0].startswith(
        "da-submit: error: --telemetry-interval: invalid duration 'often'"), job.output
    assert json.dumps(job.lines).count("Traceback") == 0


def test_container_trials_record_what_they_used(submit: Any, workdir: Path, runner_image: str,
                                                docker_engine: Any) -> None:
    """A ``--docker-image`` trial is measured from its container's cgroup (the engine's
    accounting), against what the process inside says it used."""
    job = _run(submit, workdir, "--docker-image", runner_image)
    _check_usage(job.results()["trials"])
