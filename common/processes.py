"""Is a recorded process still the one that was recorded? (Linux ``/proc``.)

A pid alone is not an identity: after the process dies, the kernel reuses it. A process is
identified by its pid and its start time (field 22 of ``/proc/<pid>/stat``, in clock ticks since
boot), which no other process shares while the machine runs.
"""

from __future__ import annotations

import os


def start_time(pid: int) -> str:
    """The start time of process ``pid``, or "" when there is none."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return ""
    return fields[19] if len(fields) > 19 else ""


def is_running(pid: int, started: str) -> bool:
    """Whether process ``pid`` runs (a zombie does not) and is the one that started at
    ``started``."""
    if pid <= 0 or not started or start_time(pid) != started:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def pid_exists(pid: int) -> bool:
    """Whether a process ``pid`` exists (any user's; a zombie too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def with_environment(name: str, value: str) -> list[int]:
    """Pids of this user's processes whose environment sets ``name=value`` (Linux ``/proc``)."""
    wanted = f"{name}={value}".encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as handle:
                variables = handle.read().split(b"\0")
        except OSError:
            continue  # gone, or another user's
        if wanted in variables:
            found.append(int(entry.name))
    return sorted(found)
