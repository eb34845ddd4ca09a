"""The master's hard days: a ``da-cluster`` killed with ``kill -9`` mid-job, then started again
on the same port, or not for longer than the job's ``--master-timeout``; or frozen
(``kill -STOP``), its connections open and silent, until the job gives up on it.

Real processes throughout: a da-cluster (master and agent), a detached da-submit, AppCore and
the trials; the record is checked trial by trial.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import signal
import sqlite3
import time

import pytest

from tests.e2e.conftest import DaCluster
from tests.e2e.conftest import common_flags
from tests.e2e.conftest import nothing_left
from tests.e2e.test_job_lifecycle import Shell
from tests.e2e.test_job_lifecycle import shell  # noqa: F401 - the fixture


pytestmark = pytest.mark.slow


def _trials(db: Path) -> list[tuple[int, str, str, int]]:
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT number, state, assignment, retries FROM trials "
                                  "ORDER BY number").fetchall()


def _finals(db: Path) -> set[int]:
    with sqlite3.connect(db) as connection:
        return {row[0] for row in connection.execute(
            "SELECT trial_number FROM reports WHERE final = 1")}


def test_a_restarted_master_loses_no_result_and_the_job_goes_on(
        shell: Shell, workdir: Path, da_cluster: DaCluster) -> None:  # noqa: F811
    budget = 8
    address = da_cluster.start()
    job = shell.submit(*common_flags(workdir, "--trail-steps", str(budget), "--parallelism", "2",
                                     "--master", address))
    shell.wait_until(job, lambda s: s["done"] >= 2 and len(s["running"]) == 2)
    da_cluster.kill()  # the master and its agent die; so do the tasks they ran
    assert nothing_left(job), "tasks outlived their agent"
    time.sleep(1.0)
    da_cluster.start()  # the operator starts the master again, on the same port
    status = shell.wait_until(job, lambda s: s["state"] == "ended", timeout=240)
    assert status["outcome"] == "BUDGET_SPENT", status
    db = shell.home / "jobs" / job / "job.db"
    trials = _trials(db)
    assert [t[:2] for t in trials] == [(n, "COMPLETED") for n in range(1, budget + 1)]
    assert len({t[2] for t in trials}) == budget  # no assignment issued twice
    assert _finals(db) == set(range(1, budget + 1))  # every result is in the record
    assert sum(t[3] for t in trials) >= 1  # the trials lost with the agent ran again
    results = json.loads((shell.home / "jobs" / job / "results.json").read_text())
    assert results["exit_status"] == 0 and len(results["trials"]) == budget
    assert nothing_left(job)


@pytest.mark.long  # in make test-long: over 20 s, and make test covers its path otherwise
def test_a_master_away_too_long_interrupts_the_job_and_resume_finishes_it(
        shell: Shell, workdir: Path, da_cluster: DaCluster) -> None:  # noqa: F811
    budget = 6
    address = da_cluster.start()
    job = shell.submit(*common_flags(workdir, "--trail-steps", str(budget), "--parallelism", "2",
                                     "--master", address, "--master-timeout", "4s"))
    shell.wait_until(job, lambda s: s["done"] >= 1 and s["running"])
    da_cluster.kill()
    status = shell.wait_until(job, lambda s: s["state"] == "interrupted", timeout=60)
    assert "has been away for" in status["interrupted_reason"]
    assert f"da-job resume {job}" in status["interrupted_reason"]
    folder = shell.home / "jobs" / job
    out = (folder / "da-submit.out").read_text().splitlines()
    errors = [line for line in out if line.startswith("da-submit: error: ")]
    assert len(errors) == 1 and "--master-timeout 4s" in errors[0], out
    results = json.loads((folder / "results.json").read_text())
    assert results["exit_status"] == 3 and results["outcome"] == "INTERRUPTED"
    listed = shell.job("status", job)
    assert "interrupted: the Mesos master at" in listed.stdout
    # Nothing was recorded as ended that did not end: the trials in flight are still in flight.
    assert all(t[1] in ("COMPLETED", "RUNNING", "LAUNCHING", "PENDING") for t in _trials(
        folder / "job.db"))
    da_cluster.start()
    resumed = shell.job("resume", job, "--detach")
    assert resumed.returncode == 0, resumed.stderr
    status = shell.wait_until(job, lambda s: s["state"] == "ended", timeout=240)
    assert status["outcome"] == "BUDGET_SPENT", status
    trials = _trials(folder / "job.db")
    assert [t[:2] for t in trials] == [(n, "COMPLETED") for n in range(1, budget + 1)]
    assert len({t[2] for t in trials}) == budget
    assert _finals(folder / "job.db") == set(range(1, budget + 1))
    assert nothing_left(job)


HEARTBEAT = 1.0
"""The frozen master's heartbeat interval (``da-cluster --heartbeat-interval``)."""


def _gone(pid: int, timeout: float) -> bool:
    """Whether process ``pid`` (not a child of this one) ended within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.long  # in make test-long: over 20 s, and make test covers its path otherwise
def test_a_frozen_master_interrupts_the_job_within_its_timeout_and_resume_finishes_it(
        shell: Shell, workdir: Path, tmp_path: Path) -> None:  # noqa: F811
    budget, timeout = 6, 4.0
    cluster = DaCluster(tmp_path / "frozen",
                        extra=("--heartbeat-interval", f"{HEARTBEAT:g}s"))
    address = cluster.start()
    assert cluster.process is not None
    try:
        job = shell.submit(*common_flags(
            workdir, "--trail-steps", str(budget), "--parallelism", "2", "--master", address,
            "--master-timeout", f"{timeout:g}s"))
        shell.wait_until(job, lambda s: s["done"] >= 1 and s["running"])
        framework = int(shell.meta(job)["pid"])
        os.kill(cluster.process.pid, signal.SIGSTOP)  # its connections stay open, silent
        frozen = time.monotonic()
        # Gone within the timeout plus 5 heartbeats (the last one heard came up to one
        # interval before the freeze), and the few seconds of ending on a busy machine.
        assert _gone(framework, timeout + 5 * HEARTBEAT + HEARTBEAT + 10.0), \
            "da-submit did not notice the frozen master"
        took = time.monotonic() - frozen
        print(f"da-submit ended {took:.1f} s after the master froze")  # noqa: T201 - measured
        folder = shell.home / "jobs" / job
        out = (folder / "da-submit.out").read_text()
        errors = [line for line in out.splitlines() if line.startswith("da-submit: error: ")]
        assert len(errors) == 1 and "has been away for" in errors[0], out
        assert f"--master-timeout {timeout:g}s" in errors[0] and "Traceback" not in out, out
        results = json.loads((folder / "results.json").read_text())
        assert results["exit_status"] == 3 and results["outcome"] == "INTERRUPTED", results
        assert shell.status(job)["state"] == "interrupted"
        os.kill(cluster.process.pid, signal.SIGCONT)
        resumed = shell.job("resume", job, "--detach")
        assert resumed.returncode == 0, resumed.stderr
        status = shell.wait_until(job, lambda s: s["state"] == "ended", timeout=240)
        assert status["outcome"] == "BUDGET_SPENT", status
        trials = _trials(folder / "job.db")
        # Every trial ran once: those in flight during the freeze were adopted, not re-run.
        assert [t[:2] for t in trials] == [(n, "COMPLETED") for n in range(1, budget + 1)]
        assert [t[3] for t in trials] == [0] * budget, trials
        assert len({t[2] for t in trials}) == budget
        assert _finals(folder / "job.db") == set(range(1, budget + 1))
        assert nothing_left(job)
    finally:
        os.kill(cluster.process.pid, signal.SIGCONT)
        cluster.kill()
