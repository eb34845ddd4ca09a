"""The ``cgroups/mem`` and ``cgroups/cpu`` isolators: one cgroup v1 ``memory`` and ``cpu``
group per container, as Mesos' (apache/mesos ``src/slave/containerizer/mesos/isolators/
cgroups/subsystems/memory.cpp`` and ``cpu.cpp``, ``cgroups/constants.hpp``).

* ``memory``: ``memory.soft_limit_in_bytes`` and ``memory.limit_in_bytes`` are the
  container's memory, at least 32 MB (``MIN_MEMORY``); an update raises the hard limit, never
  lowers it (Mesos sets it once, then only raises it), and swap is not limited (Mesos'
  ``--cgroups_limit_swap`` is off by default). An OOM in the group (``memory.oom_control``
  through ``cgroup.event_control``) is a *limitation*: the container is destroyed and its
  task fails with ``REASON_CONTAINER_LIMITATION_MEMORY`` and Mesos' message, "Memory limit
  exceeded: Requested: 64MB Maximum Used: 64MB" then the group's ``memory.stat``.
* ``cpu``: ``cpu.shares`` is 1024 per CPU (at least 2); with ``cfs`` (Mesos'
  ``--cgroups_enable_cfs``) ``cpu.cfs_quota_us`` is the CPUs × the 100 ms period (at least
  1 ms).

Where the groups are: under the cluster process's own group of each hierarchy, in
``disauto-<pid>/<container id>`` (``memory``) and under the agent's speed group
(:mod:`localmesos.containerizer.cpu_quota`) or ``disauto-<pid>/`` (``cpu``). A process joins
its groups from its first instruction: the launching thread enters them, starts it, and leaves
(cgroup v1 keeps membership per thread and a child starts in its parent thread's groups), as
the speed groups do.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import logging
import os
from pathlib import Path
import select
import signal
import threading
from typing import TYPE_CHECKING
from typing import Any

from disauto.localmesos.containerizer import cpu_quota


if TYPE_CHECKING:
    from disauto.localmesos.containerizer.launcher import Container

logger = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
MIN_MEMORY_BYTES = 32 * 1024 * 1024
CPU_SHARES_PER_CPU = 1024
MIN_CPU_SHARES = 2
CFS_PERIOD_US = 100_000
MIN_CFS_QUOTA_US = 1_000
MEM_ISOLATORS = frozenset({"cgroups/mem"})
ISOLATORS = ("posix/cpu", "posix/mem", "cgroups/cpu", "cgroups/mem")


class IsolationError(ValueError):
    """A container's cgroups cannot be made or joined; the message says why in one line."""


def format_bytes(value: int) -> str:
    """stout's ``Bytes`` text: the largest unit that loses nothing (``64MB``, ``1536KB``)."""
    for unit, size in (("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if value and value % size == 0:
            return f"{value // size}{unit}"
    return f"{value}B"


def own_group(controller: str, root: Path = CGROUP_ROOT) -> Path:
    """This process' group in the ``controller`` hierarchy (``/proc/self/cgroup``)."""
    return _listed_group(Path("/proc/self/cgroup"), controller, root)


def _listed_group(listing: Path, controller: str, root: Path) -> Path:
    """The ``controller`` group a ``/proc/.../cgroup`` listing names (its root when none)."""
    with contextlib.suppress(OSError):
        for line in listing.read_text().splitlines():
            _, controllers, where = line.split(":", 2)
            if controller in controllers.split(","):
                return root / controller / where.lstrip("/")
    return root / controller


def unavailable(isolation: frozenset[str], root: Path = CGROUP_ROOT) -> str | None:
    """Why the cgroups isolators of ``isolation`` cannot run here (None when they can)."""
    for controller, isolator, probe in (("memory", "cgroups/mem", "memory.oom_control"),
                                        ("cpu", "cgroups/cpu", "cpu.shares")):
        if isolator not in isolation:
            continue
        parent = own_group(controller, root)
        if not (parent / probe).exists():
            return f"no cgroup v1 '{controller}' controller at {root / controller}"
        if not os.access(parent, os.W_OK):
            return f"cannot create cgroups under {parent} (needs root or a delegated hierarchy)"
    return None


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        raise IsolationError(f"cannot write {value} to {path}: {exc.strerror or exc}") from None


class ContainerCgroups:
    """The memory and cpu groups of one container (the isolators of ``isolation``).

    Args:
        container_id: the container.
        isolation: the isolators (``cgroups/mem``, ``cgroups/cpu``; ``posix/*`` make none).
        cfs: set a CFS quota from the CPUs (``--cgroups_enable_cfs``).
        cpu_parent: the group to put the container's cpu group in (the agent's speed group).
        root: where the cgroup hierarchies are mounted.

    Raises:
        IsolationError: when a group cannot be made.
    """

    def __init__(self, container_id: str, isolation: frozenset[str], *, cfs: bool = False,
                 cpu_parent: Path | None = None, root: Path = CGROUP_ROOT) -> None:
        self.container_id = container_id
        self.cfs = cfs
        self.memory: Path | None = None
        self.cpu: Path | None = None
        self._hard_limit = 0
        self._oom_seen = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        family = f"disauto-{os.getpid()}"
        if "cgroups/mem" in isolation:
            self.memory = self._make(own_group("memory", root) / family / container_id)
        if "cgroups/cpu" in isolation:
            parent = cpu_parent if cpu_parent is not None else own_group("cpu", root) / family
            self.cpu = self._make(parent / container_id)

    @staticmethod
    def _make(path: Path) -> Path:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise IsolationError(f"cannot make the cgroup {path}: {exc.strerror or exc}"
                                 ) from None
        return path

    def update(self, cpus: float, mem_mb: float) -> None:
        """Set the container's share and limits (``update``); the hard memory limit only
        grows once set."""
        if self.memory is not None:
            mem = max(int(mem_mb * 1024 * 1024), MIN_MEMORY_BYTES)
            _write(self.memory / "memory.soft_limit_in_bytes", str(mem))
            with self._lock:
                if mem > self._hard_limit:
                    _write(self.memory / "memory.limit_in_bytes", str(mem))
                    self._hard_limit = mem
        if self.cpu is not None:
            shares = max(int(CPU_SHARES_PER_CPU * cpus), MIN_CPU_SHARES)
            _write(self.cpu / "cpu.shares", str(shares))
            if self.cfs:
                _write(self.cpu / "cpu.cfs_period_us", str(CFS_PERIOD_US))
                quota = max(int(CFS_PERIOD_US * cpus), MIN_CFS_QUOTA_US)
                _write(self.cpu / "cpu.cfs_quota_us", str(quota))

    @contextlib.contextmanager
    def attached(self) -> Iterator[None]:
        """The calling thread in the container's groups while the block runs."""
        tid = str(threading.get_native_id())
        joined: list[Path] = []
        try:
            for group, controller in ((self.memory, "memory"), (self.cpu, "cpu")):
                if group is None:
                    continue
                home = _thread_group(controller)
                _write(group / "tasks", tid)
                joined.append(home)
            yield
        finally:
            for home in joined:
                with contextlib.suppress(OSError):
                    (home / "tasks").write_text(tid)

    # -- the OOM listener ------------------------------------------------------------------

    def watch(self, container: Container) -> None:
        """Listen for an OOM in the memory group: then the container is destroyed with its
        limitation (``oomListen``, ``oomWaited``)."""
        if self.memory is None:
            return
        try:
            event_fd = os.eventfd(0, os.EFD_CLOEXEC)
            control = os.open(self.memory / "memory.oom_control", os.O_RDONLY | os.O_CLOEXEC)
            (self.memory / "cgroup.event_control").write_text(f"{event_fd} {control}")
        except OSError as exc:
            logger.warning("Cannot listen for OOMs of container %s: %s", self.container_id,
                           exc.strerror or exc)
            return
        threading.Thread(target=self._wait_oom, args=(container, event_fd, control),
                         name=f"oom-{self.container_id[:8]}", daemon=True).start()

    def _wait_oom(self, container: Container, event_fd: int, control: int) -> None:
        try:
            while not self._stop.is_set() and not container.exited.is_set():
                ready, _, _ = select.select([event_fd], [], [], 0.2)
                if ready and not self._stop.is_set():  # (removing the group signals too)
                    os.eventfd_read(event_fd)
                    logger.info("OOM detected for container %s", self.container_id)
                    self._oom_seen = True  # before the kernel's kill is counted
                    self.limitation(container)
                    container.process.signal_group(signal.SIGKILL)
                    return
        finally:
            os.close(control)
            os.close(event_fd)

    def oom_killed(self) -> bool:
        """Whether the kernel killed something in the group for lack of memory."""
        if self.memory is None:
            return False
        with contextlib.suppress(OSError, ValueError):
            for line in (self.memory / "memory.oom_control").read_text().splitlines():
                name, _, value = line.partition(" ")
                if name == "oom_kill" and int(value) > 0:
                    return True
        return False

    def limitation(self, container: Container) -> dict[str, Any] | None:
        """The container's memory limitation once it hit its limit (set on ``container``),
        else None: Mesos' message and the memory it used at most."""
        with self._lock:
            if container.limitation is not None:
                return container.limitation
            if self.memory is None or not (self._oom_seen or self.oom_killed()):
                return None
            limit = _read_int(self.memory / "memory.limit_in_bytes")
            used = _read_int(self.memory / "memory.max_usage_in_bytes")
            try:
                stat = (self.memory / "memory.stat").read_text()
            except OSError:
                stat = ""
            container.limitation = memory_limitation(limit, used, stat)
            return container.limitation

    def destroy(self) -> None:
        """Remove the groups (what is still in them goes to the parent first)."""
        self._stop.set()
        for group in (self.memory, self.cpu):
            if group is not None:
                cpu_quota.remove_group(group)


def memory_limitation(limit: int | None, used: int | None, stat: str) -> dict[str, Any]:
    """A ``ContainerLimitation`` of memory as Mesos' memory isolator makes it."""
    message = "Memory limit exceeded: "
    if limit is not None:
        message += f"Requested: {format_bytes(limit)} "
    if used is not None:
        message += f"Maximum Used: {format_bytes(used)}\n"
    if stat:
        message += f"\nMEMORY STATISTICS: \n{stat}\n"
    used_mb = (used or 0) / (1024 * 1024)
    return {
        "message": message,
        "reason": "REASON_CONTAINER_LIMITATION_MEMORY",
        "resources": [{"name": "mem", "type": "SCALAR", "scalar": {"value": used_mb},
                       "role": "*"}],
    }


def _read_int(path: Path) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int(path.read_text().strip())
    return None


def _thread_group(controller: str, root: Path = CGROUP_ROOT) -> Path:
    """The ``controller`` group the calling thread is in now."""
    return _listed_group(Path("/proc/thread-self/cgroup"), controller, root)


class NoIsolation:
    """The ``posix/*`` isolators: nothing confines the container (a no-op isolation)."""

    def update(self, cpus: float, mem_mb: float) -> None:
        return None

    def attached(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def watch(self, container: Container) -> None:
        return None

    def limitation(self, container: Container) -> dict[str, Any] | None:
        return container.limitation

    def destroy(self) -> None:
        return None


def remove_stale(root: Path = CGROUP_ROOT, owner: int | None = None) -> None:
    """Remove the container groups of cluster processes that no longer run (or of
    ``owner``): ``disauto-<pid>`` under this process' memory and cpu groups."""
    for controller in ("memory", "cpu"):
        parent = own_group(controller, root)
        with contextlib.suppress(OSError):
            for family in parent.iterdir():
                name = family.name
                if not name.startswith("disauto-") or not name[8:].isdigit():
                    continue
                pid = int(name[8:])
                if pid == owner or (owner is None and pid != os.getpid()
                                    and not Path(f"/proc/{pid}").exists()):
                    # its processes are gone: once (a stale group left busy is said and
                    # skipped, not waited on at every cluster's start)
                    cpu_quota.remove_group(family, attempts=1 if owner is None else 20)


def remove_family(root: Path = CGROUP_ROOT) -> None:
    """Remove this process' ``disauto-<pid>`` parents where they are empty (a cluster of
    this process stopped; another one may still use them)."""
    for controller in ("memory", "cpu"):
        with contextlib.suppress(OSError):
            (own_group(controller, root) / f"disauto-{os.getpid()}").rmdir()
