"""The reaper kills an embedded cluster's tasks when the cluster's process dies, and only then."""

from __future__ import annotations

import os
from pathlib import Path
import subprocess
import sys
import textwrap
import time

import pytest

from disauto.common.processes import is_running
from disauto.common.processes import start_time
from disauto.localmesos.reaper import Reaper
from disauto.localmesos.reaper import processes_under


pytestmark = pytest.mark.integration


def _task(work_dir: Path, *args: str) -> subprocess.Popen[bytes]:
    """A process that looks like a task of the cluster in ``work_dir``."""
    sandbox = work_dir / "slaves" / "S0" / "frameworks" / "F" / "executors" / "t" / "runs" / "r"
    sandbox.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "MESOS_SANDBOX": str(sandbox)}
    return subprocess.Popen([*args], env=env, start_new_session=True)


def _gone(pid: int, started: str, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not is_running(pid, started):
            return True
        time.sleep(0.05)
    return False


def test_processes_under_finds_only_the_clusters_tasks(tmp_path: Path) -> None:
    ours = _task(tmp_path / "a", "sleep", "30")
    other = _task(tmp_path / "ab", "sleep", "30")  # a sibling whose path shares the prefix
    try:
        found = processes_under(tmp_path / "a")
        assert ours.pid in found
        assert other.pid not in found
    finally:
        for process in (ours, other):
            process.kill()
            process.wait()


def test_a_cluster_process_that_dies_takes_its_tasks_along(tmp_path: Path) -> None:
    # The cluster's process, killed with SIGKILL: its reaper sees the pipe close.
    script = textwrap.dedent(f"""
        import os, subprocess, sys, time
        from pathlib import Path
        from disauto.localmesos.reaper import Reaper
        work = Path({str(tmp_path)!r})
        Reaper(work).start()
        sandbox = work / "slaves" / "S0" / "runs" / "r"
        sandbox.mkdir(parents=True)
        env = dict(os.environ, MESOS_SANDBOX=str(sandbox))
        # A task, and what it started outside its own session (setsid).
        task = subprocess.Popen(["sleep", "60"], env=env, start_new_session=True)
        escaped = subprocess.Popen(["setsid", "sleep", "61"], env=env)
        print(task.pid, flush=True)
        time.sleep(60)
    """)
    cluster = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert cluster.stdout is not None
    task_pid = int(cluster.stdout.readline())
    deadline = time.monotonic() + 10
    while len(processes_under(tmp_path)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = processes_under(tmp_path)
    assert task_pid in pids and len(pids) == 2
    starts = {pid: start_time(pid) for pid in pids}
    cluster.kill()
    cluster.wait()
    for pid, started in starts.items():
        assert _gone(pid, started), f"process {pid} outlived its cluster"


def test_a_cluster_that_stops_normally_sweeps_nothing(tmp_path: Path) -> None:
    reaper = Reaper(tmp_path)
    reaper.start()
    reaper_pid = reaper.pid
    assert reaper_pid is not None
    survivor = _task(tmp_path, "sleep", "30")
    try:
        reaper.stop()
        assert reaper.pid is None
        time.sleep(0.3)
        assert survivor.poll() is None, "a normal stop must not sweep"
    finally:
        survivor.kill()
        survivor.wait()
