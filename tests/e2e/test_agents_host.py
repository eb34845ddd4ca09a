"""A real DisAuto job on a master and agents that run in two processes (``da-cluster --agents 0``
and ``da-cluster --agents-only --master``), as Mesos agents run apart from their master: the
master reaches its agent over HTTP at the agent's own pid, and the framework reads the agent's
endpoints (telemetry, sandbox logs) at the address the offers give."""

from __future__ import annotations

from collections.abc import Iterator
import os
from pathlib import Path
import sqlite3
from typing import Any

import pytest

from disauto.localmesos.cluster_process import AgentsProcess
from disauto.localmesos.cluster_process import ClusterProcess
from disauto.submit.local import free_port_range
from tests.e2e.conftest import ROOT
from tests.e2e.conftest import common_flags
from tests.e2e.conftest import master_state


pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.fixture
def two_processes(tmp_path: Path) -> Iterator[tuple[ClusterProcess, AgentsProcess]]:
    """A master alone and its agent (4 CPUs, 4 GB) in a process of its own whose tasks import
    this checkout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    low, high = free_port_range(600, low=42000, high=60000)
    master = ClusterProcess(tmp_path / "master", ("--agents", "0", "--allocation-interval",
                                                  "200ms"), env=env)
    agents = AgentsProcess(tmp_path / "agents", master.address,
                           ("--agents", "1", "--cpus", "4", "--mem", "4GB", "--gpus", "0",
                            "--ports", f"[{low}-{high}]"), env=env)
    try:
        yield master, agents
    finally:
        agents.kill()
        master.kill()


# Command tasks, and warm slots: custom executors on the agents' process' executor API, the
# framework's messages to them and theirs back through the master.
@pytest.mark.parametrize("slot_mode", ["task", "warm"])
def test_a_job_on_a_master_and_agents_of_two_processes_runs_every_trial_once(
        submit: Any, workdir: Path, two_processes: tuple[ClusterProcess, AgentsProcess],
        slot_mode: str) -> None:
    master, agents = two_processes
    address = master.start()
    agents.start()
    budget = 4
    job = submit(*common_flags(workdir, "--trail-steps", str(budget), "--parallelism", "2",
                               "--slot-mode", slot_mode, "--master", address))
    assert job.wait() == 0, job.output
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT", results
    assert sorted(t["number"] for t in results["trials"]) == list(range(1, budget + 1))
    assert all(t["state"] == "COMPLETED" for t in results["trials"])
    with sqlite3.connect(job.job_dir() / "job.db") as db:
        trials = db.execute("SELECT number, assignment, retries FROM trials").fetchall()
        finals = {row[0] for row in db.execute(
            "SELECT trial_number FROM reports WHERE final = 1")}
    assert len({t[1] for t in trials}) == budget and sum(t[2] for t in trials) == 0
    assert finals == set(range(1, budget + 1))  # every result once, from the agent's process
    [agent] = master_state(f"http://{address}")["slaves"]
    assert agent["pid"] == f"slave(1)@{agents.address}"
