"""What one embedded agent offers: its resources, attributes and speed, with the defaults of a
Mesos agent started without ``--resources`` (apache/mesos ``src/slave/containerizer/
containerizer.cpp`` ``Containerizer::resources``).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
import os
from pathlib import Path
import shutil
import tempfile
from typing import Any

from disauto.common.resources import Resources
from disauto.common.resources import RoleResources
from disauto.localmesos.containerizer.launcher import Launcher
from disauto.localmesos.protocol.registration import ReregisterAgent
from disauto.localmesos.protocol.registration import Reregistered


_MB = 1024 * 1024


def default_cpus() -> float:
    """Mesos' default: the number of online cores (1 if unknown)."""
    return float(os.cpu_count() or 1)


def default_mem_mb() -> float:
    """Mesos' default: total memory minus 1 GB, or half of it below 2 GB."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / _MB
    except (ValueError, OSError, AttributeError):
        return 1024.0
    return float(round(total / 2 if total < 2048 else total - 1024))


def default_disk_mb(path: str | os.PathLike[str] | None = None) -> float:
    """Mesos' default for a work dir's file system: its size minus 5 GB, or half below 10 GB.

    Args:
        path: a directory on the file system (default: the temporary directory, where
            mesos-local puts its work dir); the nearest existing parent is measured.
    """
    probe = Path(path) if path is not None else Path(tempfile.gettempdir())
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        total = shutil.disk_usage(probe).total / _MB
    except OSError:
        return 10240.0
    return float(round(total / 2 if total < 10240 else total - 5120))


@dataclass(frozen=True)
class AgentConfig:
    """What one embedded agent offers. Defaults follow a Mesos agent without ``--resources``.

    ``disk_mb`` defaults to the size of the temporary directory's file system (mesos-local's
    work dir lives there); use :func:`default_disk_mb` with another work dir to match it.
    GPUs are whole; ``gpu_indices`` (default ``0..gpus-1``) are the device indices written to
    ``CUDA_VISIBLE_DEVICES``/``NVIDIA_VISIBLE_DEVICES`` of the tasks that get them.

    Raises:
        ValueError: for a non-positive cpus/mem/disk, negative GPUs, ``gpu_indices`` that do not
            match ``gpus``, or invalid port ranges.
    """

    cpus: float = field(default_factory=default_cpus)
    mem_mb: float = field(default_factory=default_mem_mb)
    disk_mb: float = field(default_factory=default_disk_mb)
    gpus: int = 0
    ports: tuple[tuple[int, int], ...] = ((31000, 32000),)
    attributes: Mapping[str, str | float] = field(default_factory=dict)
    hostname: str = "127.0.0.1"
    gpu_indices: tuple[int, ...] | None = None
    speed: float = 1.0
    """The share (0 < speed <= 1) of its CPUs its tasks get: below 1 a cgroup CPU quota makes
    the agent that much slower (:mod:`localmesos.containerizer.cpu_quota`)."""
    resources: RoleResources | None = None
    """Mesos' ``--resources``, reservations included (``cpus(ml):4;mem(*):8192``): a name it
    gives replaces the field of that name (``cpus``, ``mem``, ``disk``, ``ports``; ``gpus``
    sets how many GPUs the agent has); names it does not give keep theirs (Mesos'
    ``Containerizer::resources`` adds the detected defaults for them)."""

    def __post_init__(self) -> None:
        for name in ("cpus", "mem_mb", "disk_mb"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"invalid agent {name} {value!r}: must be a number > 0")
        if isinstance(self.gpus, bool) or not isinstance(self.gpus, int) or self.gpus < 0:
            raise ValueError(f"invalid agent gpus {self.gpus!r}: must be a whole number >= 0")
        if isinstance(self.speed, bool) or not isinstance(self.speed, int | float) or \
                not 0 < self.speed <= 1:
            raise ValueError(f"invalid agent speed {self.speed!r}: must be a number in (0, 1]")
        self._take_resources()
        if self.gpu_indices is not None:
            indices = tuple(self.gpu_indices)
            if len(indices) != self.gpu_count or len(set(indices)) != len(indices):
                raise ValueError(
                    f"invalid gpu_indices {indices!r}: need {self.gpu_count} distinct indices"
                )
            if any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in indices):
                raise ValueError(f"invalid gpu_indices {indices!r}: need indices >= 0")
            object.__setattr__(self, "gpu_indices", indices)
        ports = tuple((int(b), int(e)) for b, e in self.ports)
        if any(b < 0 or e < b or e > 65535 for b, e in ports):
            raise ValueError(f"invalid port ranges {ports!r}: need 0 <= begin <= end <= 65535")
        object.__setattr__(self, "ports", ports)
        object.__setattr__(self, "attributes", dict(self.attributes))

    def _take_resources(self) -> None:
        """Check ``resources``: ports that exist, whole GPUs."""
        if self.resources is None:
            return
        if any(end > 65535 for _, end in self.resources.ranges("ports")):
            raise ValueError(f"invalid resources {self.resources}: ports must be 0..65535")
        gpus = self.resources.scalar("gpus")
        if gpus != int(gpus):
            raise ValueError(f"invalid resources {self.resources}: gpus must be whole, got "
                             f"{gpus:g}")

    @property
    def gpu_count(self) -> int:
        """How many GPUs the agent has: the ``gpus`` of ``resources`` when it names them,
        else ``gpus``."""
        if self.resources is not None and "gpus" in self.resources.names():
            return int(self.resources.scalar("gpus"))
        return self.gpus

    @property
    def gpu_devices(self) -> tuple[int, ...]:
        """The GPU indices this agent hands out."""
        if self.gpu_indices is not None:
            return self.gpu_indices
        return tuple(range(self.gpu_count))

    def total(self) -> RoleResources:
        """The resources the agent offers (``gpus`` only when it has some): ``resources``,
        and the other fields for the names it does not give."""
        given = self.resources or RoleResources()
        named = given.names()
        scalars = {"cpus": self.cpus, "mem": self.mem_mb, "disk": self.disk_mb}
        if self.gpu_count > 0:
            scalars["gpus"] = float(self.gpu_count)
        defaults = Resources({k: v for k, v in scalars.items() if k not in named},
                             {} if "ports" in named else {"ports": self.ports})
        return given + RoleResources.unreserved(defaults)


@dataclass(frozen=True)
class AgentRuntime:
    """What an agent needs beyond its resources to live through restarts and partitions.

    Attributes:
        launcher: the processes it launched, kept across its restarts (default: its own).
        recover: rebuild from the checkpoint when :meth:`Agent.recover` is called (a
            restarted agent); status updates wait until it re-registered.
        total_ping_timeout: how long without a ping from the master before it re-registers
            (the master's ``agent_ping_timeout × max_agent_ping_timeouts``).
        executor_reregistration_timeout: how long recovered executors have to subscribe
            again (Mesos ``--executor_reregistration_timeout``, 2 s).
        on_pong: answers the master's pings (``master.pong``).
        on_reregister: re-registers with the master (``master.reregister_agent``).
        isolation: the isolators of its containers (Mesos ``--isolation``: ``posix/cpu``,
            ``posix/mem``, ``cgroups/cpu``, ``cgroups/mem``).
        cgroups_enable_cfs: a CFS quota from each container's CPUs (Mesos
            ``--cgroups_enable_cfs``), with ``cgroups/cpu``.
        switch_user: run each task as its user, the ``user`` of its CommandInfo or else of its
            framework (Mesos ``--switch_user``, on by default): its sandbox is given to that
            user, which must exist, and its process switches to it when the agent runs as
            another (root). Off: every task runs as the agent's own user.
        executor_secret: the key that signs its executors' tokens (Mesos
            ``--authenticate_http_executors`` with ``--jwt_secret_key``); None, the default:
            executors are not authenticated (:mod:`localmesos.agent.executor_auth`).
    """

    launcher: Launcher | None = None
    recover: bool = False
    total_ping_timeout: float = 75.0
    executor_reregistration_timeout: float = 2.0
    on_pong: Callable[[str], None] | None = None
    on_reregister: Callable[[Any, ReregisterAgent], Reregistered | None] | None = None
    isolation: frozenset[str] = frozenset({"posix/cpu", "posix/mem"})
    cgroups_enable_cfs: bool = False
    switch_user: bool = True
    executor_secret: bytes | None = None
