"""A trial its container's memory limit killed, as a Mesos agent with the cgroups memory
isolator reports it, and what to tell the user.

The isolator (apache/mesos ``src/slave/containerizer/mesos/isolators/cgroups/subsystems/
memory.cpp`` ``oomWaited``) destroys the container and the agent fails its task with
``REASON_CONTAINER_LIMITATION_MEMORY``, the message ``Memory limit exceeded: Requested: 1056MB
Maximum Used: 1056MB`` followed by the cgroup's ``memory.stat`` (sizes as stout's ``Bytes``
prints them: ``B``, ``KB``, ``MB``, ``GB``, ``TB``), and ``limitation.resources``: the ``mem``
it used, in MB. The container's limit is the task's memory and its executor's (a command task's
adds Mesos' 32 MB), so ``--app-runner-memory`` is named beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
import re
from typing import Any

from disauto.framework._telemetry.usage import suggested_memory_mb


MEMORY_LIMITATION = "REASON_CONTAINER_LIMITATION_MEMORY"
"""The reason of a task its container's memory limit killed (Mesos' cgroups/mem isolator)."""

KILLED_NEED = 2.0
"""A trial its memory limit killed counts as needing this many times its ``--app-runner-memory``
(the kernel stopped it at the limit: how much more it wanted cannot be measured): in the
trial's message here and in the job summary (``submit/results.py``)."""

_MB = 1024 * 1024
_UNITS = {"B": 1, "KB": 1024, "MB": _MB, "GB": 1024 * _MB, "TB": 1024 * 1024 * _MB}
_SIZE = r"(\d+)(B|KB|MB|GB|TB)\b"
_REQUESTED = re.compile(r"Requested: " + _SIZE)
_USED = re.compile(r"Maximum Used: " + _SIZE)


@dataclass(frozen=True)
class MemoryKill:
    """What a memory-limit kill says: bytes used at most, and the container's limit."""

    used_bytes: float | None
    limit_bytes: float | None

    @classmethod
    def read(cls, status: Mapping[str, Any]) -> MemoryKill | None:
        """The kill a TaskStatus reports, or None when it is not one."""
        if status.get("reason") != MEMORY_LIMITATION:
            return None
        message = str(status.get("message", ""))
        used = _size(_USED.search(message))
        if used is None:
            used = _limited_mem(status.get("limitation"))
        return cls(used, _size(_REQUESTED.search(message)))

    def describe(self, memory_mb: float) -> str:
        """``killed by its memory limit: it used 1056 MB of its container's 1056 MB
        (--app-runner-memory 1024M); give it more: --app-runner-memory 2496M``."""
        parts = []
        if self.used_bytes is not None:
            parts.append(f"it used {self.used_bytes / _MB:.0f} MB")
        if self.limit_bytes is not None:
            parts.append(f"of its container's {self.limit_bytes / _MB:.0f} MB")
        used = ": " + " ".join(parts) if parts else ""
        suggested = suggested_memory_mb([killed_need_bytes(memory_mb)])
        return (f"killed by its memory limit{used} (--app-runner-memory {memory_mb:g}M); "
                f"give it more: --app-runner-memory {suggested}M")


def killed_need_bytes(memory_mb: float) -> float:
    """What a trial its ``memory_mb`` limit killed counts as needing, in bytes."""
    return KILLED_NEED * memory_mb * _MB


def _size(match: re.Match[str] | None) -> float | None:
    return None if match is None else float(int(match.group(1)) * _UNITS[match.group(2)])


def _limited_mem(limitation: Any) -> float | None:
    """The ``mem`` of ``TaskStatus.limitation.resources`` (MB), in bytes."""
    if not isinstance(limitation, Mapping):
        return None
    for resource in limitation.get("resources") or []:
        if isinstance(resource, Mapping) and resource.get("name") == "mem":
            try:
                return float(resource["scalar"]["value"]) * _MB
            except (KeyError, TypeError, ValueError):
                return None
    return None
