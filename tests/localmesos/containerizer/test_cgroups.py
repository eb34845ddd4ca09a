"""The cgroups/mem and cgroups/cpu isolators on this machine's cgroup v1 hierarchies, and a
command task over its memory on a real cluster (skipped where cgroup v1 cannot be used)."""

from __future__ import annotations

from pathlib import Path
import signal
import sys
import threading
import time

import pytest

from disauto.localmesos.cluster import resolve_isolation
from disauto.localmesos.containerizer import cgroups
from disauto.localmesos.containerizer.cgroups import ContainerCgroups
from disauto.localmesos.containerizer.cgroups import format_bytes
from disauto.localmesos.containerizer.cgroups import memory_limitation
from disauto.localmesos.containerizer.command import CommandProcess
from disauto.localmesos.containerizer.launcher import Launcher
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import running_cluster


BOTH = frozenset({"cgroups/cpu", "cgroups/mem"})
needs_cgroups = pytest.mark.skipif(cgroups.unavailable(BOTH) is not None,
                                   reason=f"cgroup v1: {cgroups.unavailable(BOTH)}")
HOG = f"{sys.executable} -c \"x = bytearray(300 * 1024 * 1024); import time; time.sleep(30)\""


@pytest.mark.parametrize(("value", "text"), [
    (0, "0B"), (1, "1B"), (1536, "1536B"), (2048, "2KB"), (64 << 20, "64MB"),
    ((64 << 20) + 4096, "65540KB"), (3 << 30, "3GB"), (1 << 40, "1TB")])
def test_bytes_as_stout_writes_them(value: int, text: str) -> None:
    assert format_bytes(value) == text or (value == 0 and format_bytes(value) == "0B")


def test_the_limitation_message_is_mesos() -> None:
    limitation = memory_limitation(64 << 20, 64 << 20, "cache 0\nrss 4096\n")
    assert limitation["message"] == (
        "Memory limit exceeded: Requested: 64MB Maximum Used: 64MB\n\n"
        "MEMORY STATISTICS: \ncache 0\nrss 4096\n\n")
    assert limitation["reason"] == "REASON_CONTAINER_LIMITATION_MEMORY"
    assert limitation["resources"] == [
        {"name": "mem", "type": "SCALAR", "scalar": {"value": 64.0}, "role": "*"}]


def test_unknown_isolators_are_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="invalid isolation 'cgroups/gpu'"):
        resolve_isolation("cgroups/gpu")
    assert resolve_isolation("posix/cpu,posix/mem") == {"posix/cpu", "posix/mem"}


@pytest.mark.integration
@needs_cgroups
def test_a_container_gets_its_groups_limits_and_is_killed_over_its_memory(
        tmp_path: Path) -> None:
    groups = ContainerCgroups("test-container", BOTH, cfs=True)
    try:
        groups.update(0.5, 64)
        assert groups.memory is not None and groups.cpu is not None
        assert (groups.memory / "memory.limit_in_bytes").read_text().strip() == str(64 << 20)
        assert (groups.cpu / "cpu.shares").read_text().strip() == "512"
        assert (groups.cpu / "cpu.cfs_quota_us").read_text().strip() == "50000"
        groups.update(0.5, 48)  # the hard limit never shrinks
        assert (groups.memory / "memory.limit_in_bytes").read_text().strip() == str(64 << 20)
        with groups.attached():
            process = CommandProcess.spawn(
                "/bin/sh", ["sh", "-c", HOG], env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path,
                stdout=tmp_path / "stdout", stderr=tmp_path / "stderr")
        home = Path(f"/proc/{threading.get_native_id()}/cgroup").read_text()
        assert "test-container" not in home  # the launching thread is back home
        assert str(process.pid) in (groups.memory / "cgroup.procs").read_text().split()
        container = Launcher("agent").launched("test-container", process, groups)
        groups.watch(container)
        assert container.exited.wait(20)
        assert container.returncode == -signal.SIGKILL
        limitation = groups.limitation(container)
        assert limitation is not None
        assert limitation["message"].startswith(
            "Memory limit exceeded: Requested: 64MB Maximum Used: 64MB\n\nMEMORY STATISTICS:")
    finally:
        groups.destroy()
    assert not groups.memory.exists() and not groups.cpu.exists()


@pytest.mark.integration
@needs_cgroups
def test_a_task_over_its_memory_fails_as_mesos_reports_it() -> None:
    with running_cluster(isolation="cgroups/cpu,cgroups/mem") as cluster:
        fw = RawFramework(cluster.address, name="fw", auto_acknowledge=True)
        try:
            fw.subscribe()
            offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
            fw.launch(offer, [command_task(offer, "hog", HOG, mem=64),
                              command_task(offer, "small", "sleep 0.5", mem=64)])
            failed = fw.wait_event(lambda e: e["type"] == "UPDATE" and e["update"]["status"][
                "task_id"]["value"] == "hog" and e["update"]["status"]["state"] not in (
                "TASK_STARTING", "TASK_RUNNING"), timeout=30)["update"]["status"]
            assert failed["state"] == "TASK_FAILED"
            assert failed["reason"] == "REASON_CONTAINER_LIMITATION_MEMORY", failed.get("message")
            assert failed["source"] == "SOURCE_AGENT"
            # 64 MB for the task, 32 MB for its command executor (Slave::getExecutorInfo).
            assert failed["message"].startswith(
                "Memory limit exceeded: Requested: 96MB Maximum Used: 96MB\n\n"
                "MEMORY STATISTICS: \n")
            assert "\nrss " in failed["message"] or "\ntotal_rss " in failed["message"]
            used = failed["limitation"]["resources"][0]
            assert used["name"] == "mem" and used["scalar"]["value"] == pytest.approx(96, abs=1)
            done = fw.wait_event(lambda e: e["type"] == "UPDATE" and e["update"]["status"][
                "task_id"]["value"] == "small" and e["update"]["status"]["state"] not in (
                "TASK_STARTING", "TASK_RUNNING"), timeout=30)["update"]["status"]
            assert done["state"] == "TASK_FINISHED"  # under its limit: untouched
        finally:
            fw.close()
        time.sleep(0.2)


@needs_cgroups
def test_a_dead_clusters_nested_groups_are_swept_at_once() -> None:
    """``disauto-<pid>`` of a process that is gone, with groups nested two deep (a cluster
    started from inside another's group): removed deepest first, in one pass, without the
    second of retries a just-killed task's group gets."""
    gone = (1 << 22) + 11  # above Linux's largest pid: no such process
    made = []
    for controller in ("memory", "cpu"):
        family = cgroups.own_group(controller) / f"disauto-{gone}"
        nested = family / f"disauto-{gone}" / "container-1"
        nested.mkdir(parents=True)
        made.append(family)
    try:
        started = time.monotonic()
        cgroups.remove_stale()
        assert time.monotonic() - started < 1.0
        assert [family for family in made if family.exists()] == []
    finally:
        for family in made:  # left by a failing run: deepest first
            for path in sorted(family.rglob("*"), key=lambda p: -len(p.parts)):
                if path.is_dir():
                    path.rmdir()
            if family.exists():
                family.rmdir()
