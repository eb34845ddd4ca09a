"""Agents of unequal speed: a cgroup v1 ``cpu`` group per embedded agent with a CFS quota.

An agent declared with speed ``s`` (0 < s < 1, ``da-cluster --agent-speed``) gets a group
``<mount>/disauto-<pid>-<agent id>`` whose ``cpu.cfs_quota_us`` is
``s × cpus × cpu.cfs_period_us``:
all the processes of its tasks and executors together get at most that share of the agent's
declared CPUs per period, so a CPU-bound trial runs about ``1/s`` times as long as on a
full-speed agent with the same load.

How a task gets into the group without a race: cgroup v1 keeps membership per *thread* and a
forked child starts in its parent thread's group. The agent's launching thread moves itself into
the group (its thread id into ``tasks``), starts the task's process, and moves itself back
(:meth:`CpuGroup.attached`); the child, and everything it starts later, is in the group from its
first instruction. The group is removed when the agent stops (any process left in it goes back
to the parent group first); when the cluster's process is killed, its reaper
(:mod:`localmesos.reaper`) removes them after killing the tasks, and the next cluster that slows
agents down removes any left by a process that died some other way (:func:`remove_stale`).

Docker containers are not covered: the engine puts them in groups of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import logging
import os
from pathlib import Path
import re
import threading
import time

from disauto.common.processes import pid_exists


__all__ = ["CPU_MOUNT", "CpuGroup", "CpuQuotaError", "check_available", "group_name",
           "remove_group", "remove_stale"]

logger = logging.getLogger(__name__)

CPU_MOUNT = Path("/sys/fs/cgroup/cpu")
"""Where the cgroup v1 ``cpu`` controller is mounted."""
PERIOD_US = 100_000
PREFIX = "disauto-"


class CpuQuotaError(ValueError):
    """The agent's CPU group cannot be made or used; the message says why in one line."""


def check_available(mount: Path = CPU_MOUNT) -> None:
    """Raise :class:`CpuQuotaError` naming why agents cannot get CPU groups here."""
    if not (mount / "cpu.cfs_quota_us").exists():
        raise CpuQuotaError(f"no cgroup v1 'cpu' controller with CFS quotas at {mount}")
    if not os.access(mount, os.W_OK):
        raise CpuQuotaError(f"cannot create cgroups under {mount} (needs root or a delegated "
                            "hierarchy)")


class CpuGroup:
    """The CPU group of one agent.

    Args:
        name: the group's directory name (see :func:`group_name`).
        cores: how many cores' worth of CPU time its processes get together (speed × cpus).
        mount: the ``cpu`` controller's mount point.

    Raises:
        CpuQuotaError: when the group cannot be made or its quota set.
    """

    def __init__(self, name: str, cores: float, mount: Path = CPU_MOUNT) -> None:
        if not cores > 0:
            raise CpuQuotaError(f"a CPU group needs a share > 0 of a core, got {cores}")
        check_available(mount)
        self.mount = mount
        self.path = mount / name
        self.cores = cores
        quota = max(1000, round(cores * PERIOD_US))  # the kernel's minimum quota is 1 ms
        try:
            self.path.mkdir(exist_ok=True)
            (self.path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (self.path / "cpu.cfs_quota_us").write_text(str(quota))
        except OSError as exc:
            with contextlib.suppress(OSError):
                self.path.rmdir()
            raise CpuQuotaError(f"cannot make the CPU group {self.path}: "
                                f"{exc.strerror or exc}") from None
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def attached(self) -> Iterator[None]:
        """The calling thread in the group while the block runs: processes it starts stay in
        it."""
        tid = str(threading.get_native_id())
        home = _thread_group(self.mount)
        try:
            (self.path / "tasks").write_text(tid)
        except OSError as exc:
            raise CpuQuotaError(f"cannot join the CPU group {self.path}: "
                                f"{exc.strerror or exc}") from None
        try:
            yield
        finally:
            (home / "tasks").write_text(tid)

    def pids(self) -> list[int]:
        """The processes in the group."""
        try:
            text = (self.path / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(line) for line in text.split()]

    def remove(self) -> None:
        """Move what is left in the group to its parent and remove it. Idempotent."""
        with self._lock:
            remove_group(self.path)


def group_name(agent_id: str, owner: int | None = None) -> str:
    """The group of ``agent_id`` in the cluster process ``owner`` (default: this one)."""
    return f"{PREFIX}{os.getpid() if owner is None else owner}-{agent_id}"


def remove_group(path: Path, attempts: int = 20) -> None:
    """Remove one group and every group under it (deepest first: a group with children cannot
    be removed), moving their processes to its parent first. ``attempts`` 50 ms apart: a
    process just killed leaves its group only once it is fully gone; a sweep of long-gone
    processes' groups tries once."""
    if not path.is_dir():
        return
    with contextlib.suppress(OSError):
        for child in path.iterdir():
            if child.is_dir():
                remove_group(child, attempts)
    error: OSError | None = None
    for attempt in range(attempts):
        if attempt:
            time.sleep(0.05)  # a killed process leaves its group when it is fully gone
        try:
            for pid in (path / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):  # it may have exited meanwhile
                    (path.parent / "cgroup.procs").write_text(pid)
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            error = exc
    if error is not None:
        logger.warning("cannot remove the CPU group %s: %s", path, error.strerror or error)


_OWNED = re.compile(rf"^{PREFIX}(\d+)-")


def remove_stale(mount: Path = CPU_MOUNT, owner: int | None = None) -> list[Path]:
    """Remove the groups of cluster processes that no longer run (or of ``owner``, gone or
    not: the reaper's cluster, which may not be reaped yet); the paths removed."""
    removed: list[Path] = []
    with contextlib.suppress(OSError):
        for path in mount.iterdir():
            found = _OWNED.match(path.name)
            if not found or not path.is_dir():
                continue
            pid = int(found.group(1))
            if pid == owner or (owner is None and not pid_exists(pid)):
                remove_group(path, attempts=1 if owner is None else 20)
                removed.append(path)
    return removed


def _thread_group(mount: Path) -> Path:
    """The ``cpu`` group the calling thread is in now."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/thread-self/cgroup").read_text().splitlines():
            _, controllers, where = line.split(":", 2)
            if "cpu" in controllers.split(","):
                return mount / where.lstrip("/")
    return mount
