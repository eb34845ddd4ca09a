"""What an embedded agent's executors use: ``/monitor/statistics`` in Mesos' shape.

A Mesos agent answers ``GET /monitor/statistics`` (also ``.json``, also under ``/slave(1)/``)
with a JSON array, one object per executor running on it::

    [{"executor_id": "...", "executor_name": "...", "framework_id": "...", "source": "...",
      "statistics": {"timestamp": 1700000000.0, "cpus_user_time_secs": 1.2, ...}}]

where ``statistics`` is a ``ResourceStatistics`` (``mesos.proto``). Its isolators measure a
container's cgroups; the embedded agent has none for a command task, so it measures the task's
**process tree** from ``/proc`` (Mesos' ``posix/cpu`` and ``posix/mem`` isolators do the same):
a command task leads its own session (``start_new_session``), so its processes are those whose
session id is the task's pid. CPU time is the sum, over the session's live processes, of
``utime + stime`` plus ``cutime + cstime`` (what their exited, reaped children were charged), so
nothing that ran in the tree and was waited for is lost; a process that leaves the session
(``setsid``) still counts while it descends from the leader (a warm slot's tasks, each in a
session of its own under the executor). ``mem_rss_bytes`` is the sum of the processes' resident
sets. A
container is measured from its cgroup (v1, as Docker's cgroupfs driver makes it:
``cpuacct.stat``, ``memory.stat``, ``memory.limit_in_bytes``), which counts every process in
it. The container's cgroups are read once, from its init process right after it starts, and only
paths that name the container are kept: the init's pid is not the agent's child, so once the
container ends the kernel may give that pid to any process, whose cgroup (the agent's, the
machine's) must never be taken for the container's. A container that ended has no cgroup left
to read, and is left out. Counters are kept monotonic per executor, as cgroup counters are.

Only what is measured is served: a figure that cannot be read is left out, never invented.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
import os
from pathlib import Path
import threading
import time
from typing import Any


CGROUP_ROOT = Path("/sys/fs/cgroup")
_MB = 1024 * 1024


@dataclass(frozen=True)
class ProcessFigures:
    """One process as ``/proc/<pid>/stat`` describes it."""

    pid: int
    session: int
    cpu_seconds: float
    """utime + stime + cutime + cstime."""
    user_seconds: float
    system_seconds: float
    threads: int
    rss_bytes: int
    ppid: int = 0


def read_processes(proc: Path = Path("/proc")) -> list[ProcessFigures]:
    """Every live (not zombie) process of the machine, from one pass over ``/proc``."""
    ticks = float(os.sysconf("SC_CLK_TCK"))
    page = os.sysconf("SC_PAGE_SIZE")
    found = []
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"{entry.path}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if len(fields) < 22 or fields[0] in (b"Z", b"X"):
            continue
        utime, stime, cutime, cstime = (int(fields[i]) / ticks for i in (11, 12, 13, 14))
        found.append(ProcessFigures(
            pid=int(entry.name), session=int(fields[3]),
            cpu_seconds=utime + stime + cutime + cstime,
            user_seconds=utime + cutime, system_seconds=stime + cstime,
            threads=int(fields[17]), rss_bytes=int(fields[21]) * page, ppid=int(fields[1]),
        ))
    return found


def session_statistics(processes: Iterable[ProcessFigures], session: int) -> dict[str, Any]:
    """ResourceStatistics figures of the processes of session ``session`` and of every
    process descended from its leader (a warm slot's tasks run in sessions of their own, under
    the executor: they are the executor's, as they are in its container on a real agent)."""
    everyone = list(processes)
    children: dict[int, list[ProcessFigures]] = {}
    for process in everyone:
        children.setdefault(process.ppid, []).append(process)
    chosen = {p.pid: p for p in everyone if p.session == session}
    stack, visited = [session], {session}
    while stack:
        for child in children.get(stack.pop(), ()):
            if child.pid not in visited:
                visited.add(child.pid)
                chosen[child.pid] = child
                stack.append(child.pid)
    members = list(chosen.values())
    return {
        "processes": len(members),
        "threads": sum(p.threads for p in members),
        "cpus_user_time_secs": round(sum(p.user_seconds for p in members), 3),
        "cpus_system_time_secs": round(sum(p.system_seconds for p in members), 3),
        "mem_rss_bytes": sum(p.rss_bytes for p in members),
    }


def _read_keyed(path: Path) -> dict[str, int]:
    """``key value`` lines (``memory.stat``, ``cpuacct.stat``) as a dict."""
    values = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            values[key] = int(value)
    return values


def process_cgroups(pid: int, proc: Path = Path("/proc")) -> dict[str, str]:
    """Controller → cgroup path of process ``pid`` (cgroup v1), empty when unreadable."""
    try:
        lines = (proc / str(pid) / "cgroup").read_text().splitlines()
    except OSError:
        return {}
    found = {}
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(","):
                if controller:
                    found[controller] = parts[2]
    return found


def container_cgroups(pid: int, container_id: str, proc: Path = Path("/proc")) -> dict[str, str]:
    """Controller → cgroup path of a container whose init process is ``pid``, only those paths
    that name ``container_id`` (Docker's cgroupfs driver makes ``/docker/<id>``, its systemd
    driver ``.../docker-<id>.scope``). Empty when ``pid`` is no longer the container's."""
    return {controller: path for controller, path in process_cgroups(pid, proc).items()
            if container_id and container_id in path}


def cgroup_statistics(cgroups: dict[str, str], root: Path = CGROUP_ROOT) -> dict[str, Any]:
    """ResourceStatistics figures of a container's cgroups (v1), what of them can be read."""
    stats: dict[str, Any] = {}
    cpu = cgroups.get("cpuacct")
    if cpu is not None:
        try:
            ticks = float(os.sysconf("SC_CLK_TCK"))
            cpuacct = _read_keyed(root / "cpuacct" / cpu.lstrip("/") / "cpuacct.stat")
            stats["cpus_user_time_secs"] = round(cpuacct["user"] / ticks, 3)
            stats["cpus_system_time_secs"] = round(cpuacct["system"] / ticks, 3)
        except (OSError, KeyError, ValueError):
            pass
    memory = cgroups.get("memory")
    if memory is not None:
        folder = root / "memory" / memory.lstrip("/")
        try:
            mstat = _read_keyed(folder / "memory.stat")
            stats["mem_rss_bytes"] = mstat.get("total_rss", mstat.get("rss", 0))
            stats["mem_anon_bytes"] = mstat.get("total_rss", mstat.get("rss", 0))
            stats["mem_cache_bytes"] = mstat.get("total_cache", mstat.get("cache", 0))
            stats["mem_file_bytes"] = mstat.get("total_cache", mstat.get("cache", 0))
            stats["mem_mapped_file_bytes"] = mstat.get("total_mapped_file",
                                                       mstat.get("mapped_file", 0))
            stats["mem_total_bytes"] = int((folder / "memory.usage_in_bytes").read_text())
        except (OSError, ValueError):
            pass
    pids = cgroups.get("pids") or memory
    if pids is not None:
        controller = "pids" if "pids" in cgroups else "memory"
        folder = root / controller / pids.lstrip("/")
        try:
            stats["processes"] = len((folder / "cgroup.procs").read_text().split())
            stats["threads"] = len((folder / "tasks").read_text().split())
        except OSError:
            pass
    return stats


@dataclass(frozen=True)
class ExecutorEntry:
    """One executor to measure: who it is, and how to find its processes."""

    framework_id: str
    executor_id: str
    executor_name: str
    source: str
    pid: int | None
    """The session leader of a command executor; a container's init process."""
    container: bool
    cpus_limit: float | None
    mem_limit_bytes: int | None
    cgroups: Mapping[str, str] | None = None
    """A container's cgroups (:func:`container_cgroups`), read when it started."""


class ResourceMonitor:
    """Builds ``/monitor/statistics`` of one agent's executors (see the module docstring)."""

    def __init__(self, proc: Path = Path("/proc"), cgroup_root: Path = CGROUP_ROOT) -> None:
        self._proc = proc
        self._cgroup_root = cgroup_root
        self._lock = threading.Lock()
        self._high: dict[tuple[str, str], tuple[float, float]] = {}

    def statistics(self, executors: Iterable[ExecutorEntry]) -> list[dict[str, Any]]:
        """The endpoint's JSON array for ``executors`` (those whose process is gone are left
        out, as Mesos lists only executors it can measure)."""
        entries = list(executors)
        processes = read_processes(self._proc) if any(
            e.pid and not e.container for e in entries) else []
        answer = []
        seen = set()
        for entry in entries:
            if entry.container:
                if not entry.cgroups:
                    continue
                figures = cgroup_statistics(dict(entry.cgroups), self._cgroup_root)
            elif not entry.pid:
                continue
            else:
                figures = session_statistics(processes, entry.pid)
                if not figures["processes"]:
                    continue
            if "cpus_user_time_secs" not in figures and "mem_rss_bytes" not in figures:
                continue
            key = (entry.framework_id, entry.executor_id)
            seen.add(key)
            self._monotonic(key, figures)
            stats: dict[str, Any] = {"timestamp": round(time.time(), 3), **figures}
            if entry.cpus_limit is not None:
                stats["cpus_limit"] = entry.cpus_limit
            if entry.mem_limit_bytes is not None:
                stats["mem_limit_bytes"] = entry.mem_limit_bytes
            answer.append({
                "executor_id": entry.executor_id,
                "executor_name": entry.executor_name,
                "framework_id": entry.framework_id,
                "source": entry.source,
                "statistics": stats,
            })
        with self._lock:
            for key in set(self._high) - seen:
                del self._high[key]
        return answer

    def _monotonic(self, key: tuple[str, str], figures: dict[str, Any]) -> None:
        """Keep the CPU counters from going back (a child exited, not yet reaped: its time is
        in neither its own nor its parent's figures for a moment)."""
        if "cpus_user_time_secs" not in figures:
            return
        with self._lock:
            user, system = self._high.get(key, (0.0, 0.0))
            user = max(user, figures["cpus_user_time_secs"])
            system = max(system, figures["cpus_system_time_secs"])
            self._high[key] = (user, system)
        figures["cpus_user_time_secs"] = user
        figures["cpus_system_time_secs"] = system


def mem_limit_bytes(mem_mb: float) -> int | None:
    """A ``mem`` resource in MB as ``mem_limit_bytes`` (None for none)."""
    return int(mem_mb * _MB) if mem_mb > 0 else None
