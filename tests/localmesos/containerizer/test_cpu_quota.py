"""Agents of unequal speed: each slowed agent's tasks share a cgroup CPU quota.

The integration tests run real CPU-bound tasks on a real embedded cluster and read their wall
time, with a generous band (the machine is shared); they are skipped where cgroup v1 ``cpu``
cannot be used (not root, cgroup v2 only).
"""

from __future__ import annotations

import os
from pathlib import Path
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.cli import UsageError
from disauto.localmesos.cli import build_parser
from disauto.localmesos.cli import config_from_args
from disauto.localmesos.cli import parse_speeds
from disauto.localmesos.containerizer import cpu_quota
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import wait_until


def _usable() -> str:
    try:
        cpu_quota.check_available()
    except cpu_quota.CpuQuotaError as exc:
        return str(exc)
    return ""


needs_cgroups = pytest.mark.skipif(bool(_usable()), reason=f"no CPU groups here: {_usable()}")


def our_groups(owner: int | None = None) -> list[Path]:
    prefix = f"{cpu_quota.PREFIX}{os.getpid() if owner is None else owner}-"
    return [p for p in cpu_quota.CPU_MOUNT.iterdir() if p.name.startswith(prefix)]


# -- flags and configuration --------------------------------------------------------------------

def test_speeds_parse_one_per_agent_with_the_rest_at_full_speed() -> None:
    assert parse_speeds("1, 0.5", 4) == [1.0, 0.5, 1.0, 1.0]
    for bad, message in (("0", "invalid value '0'"), ("1.5", "invalid value '1.5'"),
                         ("x", "invalid value 'x'"), ("1,1,1", "3 speeds for 2 agent")):
        with pytest.raises(UsageError, match=re.escape(message)):
            parse_speeds(bad, 2)
    with pytest.raises(ValueError, match="invalid agent speed 2"):
        AgentConfig(cpus=1.0, mem_mb=64.0, disk_mb=64.0, speed=2)


@needs_cgroups
def test_the_flag_sets_each_agents_speed() -> None:
    args = build_parser().parse_args(["--agents", "3", "--cpus", "1", "--agent-speed", "1,0.25"])
    assert [a.speed for a in config_from_args(args).agent_list()] == [1.0, 0.25, 1.0]


def test_without_a_cpu_controller_the_group_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(cpu_quota.CpuQuotaError, match="no cgroup v1 'cpu' controller with CFS"):
        cpu_quota.CpuGroup("disauto-test", 0.5, mount=tmp_path)


@pytest.mark.integration
@needs_cgroups
def test_a_group_gets_its_quota_and_goes_away(tmp_path: Path) -> None:
    group = cpu_quota.CpuGroup(cpu_quota.group_name("probe"), 0.25)
    try:
        assert (group.path / "cpu.cfs_quota_us").read_text().strip() == "25000"
        assert (group.path / "cpu.cfs_period_us").read_text().strip() == "100000"
        with group.attached():
            child = subprocess.Popen(["sleep", "30"])  # noqa: S607 - a test's child
        assert group.pids() == [child.pid]
        assert f"cpu:/{group.path.name}" in Path(f"/proc/{child.pid}/cgroup").read_text()
        assert "cpu:/\n" in Path("/proc/thread-self/cgroup").read_text() or \
            group.path.name not in Path("/proc/thread-self/cgroup").read_text()
        group.remove()  # the sleeper goes back to the parent group, the group away
        assert not group.path.exists()
        assert group.path.name not in Path(f"/proc/{child.pid}/cgroup").read_text()
        child.kill()
        child.wait()
    finally:
        group.remove()


# -- on a running cluster -----------------------------------------------------------------------

BURN = textwrap.dedent("""
    import time
    started = time.monotonic()
    n = 0
    while n < {loops}:
        n += 1
    print("took", time.monotonic() - started, flush=True)
""")


def _loops_for(seconds: float) -> int:
    """About ``seconds`` of one free core's CPU work (measured here, now)."""
    started = time.process_time()
    n = 0
    while n < 2_000_000:
        n += 1
    per_loop = max(time.process_time() - started, 1e-3) / 2_000_000
    return int(seconds / per_loop)


@pytest.mark.integration
@pytest.mark.slow
@needs_cgroups
def test_a_cpu_bound_task_on_a_half_speed_agent_takes_about_twice_as_long(
        tmp_path: Path) -> None:
    # Both agents slowed (0.5 and 0.25 of one CPU), so that the faster one does not depend on
    # how busy the shared machine is: the slower one should take about twice as long.
    script = tmp_path / "burn.py"
    script.write_text(BURN.format(loops=_loops_for(0.4)))
    with running_cluster(agents=2, cpus=1.0) as cluster:
        fast, slow = cluster.agents
        assert fast.cpu_group is None and slow.cpu_group is None  # full speed: no group
    configs = [AgentConfig(cpus=1.0, mem_mb=512.0, disk_mb=512.0, speed=s) for s in (0.5, 0.25)]
    with running_cluster(agent_configs=tuple(configs)) as cluster:
        groups = {a.id: a.cpu_group for a in cluster.agents}
        assert all(g is not None and g.path.is_dir() for g in groups.values())
        raw = RawFramework(cluster.address, auto_acknowledge=True)
        raw.subscribe()
        wait_until(lambda: len(raw.offers()) == 2, timeout=30)
        # The task is a shell that starts Python: the child must be limited too.
        for offer in raw.offers()[:2]:
            agent = offer["agent_id"]["value"]
            raw.launch(offer, [command_task(offer, f"burn-{agent}",
                                            f"{sys.executable} {script}", cpus=1.0)])
        finished = {}
        for _ in range(2):
            event = raw.wait_event(
                lambda e: e["type"] == "UPDATE" and e["update"]["status"]["state"]
                in ("TASK_FINISHED", "TASK_FAILED") and
                e["update"]["status"]["task_id"]["value"] not in finished, timeout=120)
            status = event["update"]["status"]
            assert status["state"] == "TASK_FINISHED", status
            finished[status["task_id"]["value"]] = status["agent_id"]["value"]
        took = {agent: float(_stdout_of(cluster.work_dir, task_id).split("took")[-1])
                for task_id, agent in finished.items()}
        raw.close()
        half, quarter = (took[a.id] for a in cluster.agents)
        assert 1.4 < quarter / half < 3.5, took
        paths = [g.path for g in groups.values() if g is not None]
    assert not any(p.exists() for p in paths), "the agents' CPU groups outlived the cluster"


def _stdout_of(work_dir: Path, task_id: str) -> str:
    for path in work_dir.rglob("stdout"):
        if task_id in path.parts:
            return path.read_text()
    raise AssertionError(f"no stdout of {task_id} under {work_dir}")


@pytest.mark.integration
@pytest.mark.slow
@needs_cgroups
def test_a_killed_cluster_process_leaves_no_group_behind(tmp_path: Path) -> None:
    cluster = subprocess.Popen(  # noqa: S603 - da-cluster itself
        [sys.executable, "-m", "disauto.localmesos.cli", "--port", "0", "--agents", "2",
         "--cpus", "1", "--mem", "256MB", "--agent-speed", "0.5,0.25",
         "--work-dir", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    try:
        wait_until(lambda: len(our_groups(cluster.pid)) == 2, timeout=60)
    finally:
        cluster.send_signal(signal.SIGKILL)
        cluster.wait()
    wait_until(lambda: not our_groups(cluster.pid), timeout=30)
