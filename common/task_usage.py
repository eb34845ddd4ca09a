"""What a task used, measured exactly when it ended: the executor's word in ``TaskStatus.data``.

Mesos' ``/monitor/statistics`` is per executor and sampled, so a warm slot's figures mix the
executor, its pre-imported interpreter and the trial it runs now, and a sampled figure misses
what happened after the last poll. The DisAuto slot executor (``disauto.executor``) knows each
trial's exact use when it reaps the trial's process: the kernel's ``rusage`` of that child
(``os.wait4``: its CPU seconds and those of the descendants it waited for, and the largest
resident set among them). It sends it in the terminal status update's ``data`` (Mesos'
``TaskStatus.data``, bytes: here base64 JSON, :func:`status_data`), and the framework takes it
as the trial's CPU seconds and peak memory (:func:`read_status_data`).

The contract is versioned (``"v": 1``): a reader takes only the versions it knows and ignores
anything else (an older executor, another executor's data), never failing a status update on it.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
import json
import math
from typing import Any


VERSION = 1
"""The version of the ``data`` this module writes and reads."""
KIND = "disauto.task_usage"
"""The ``kind`` field, so that other executors' JSON is never mistaken for it."""

SOURCE_WAIT4 = "wait4"
"""Measured from the reaped process's ``rusage`` (its own and its waited-for descendants')."""


@dataclass(frozen=True)
class TaskUsage:
    """A task's exact use, measured when it ended."""

    cpu_user_seconds: float
    cpu_system_seconds: float
    max_rss_bytes: int
    """The largest resident set of the process or of a descendant it waited for."""
    source: str = SOURCE_WAIT4

    @property
    def cpu_seconds(self) -> float:
        return self.cpu_user_seconds + self.cpu_system_seconds


def from_rusage(rusage: Any) -> TaskUsage:
    """A :class:`TaskUsage` of ``os.wait4``'s ``resource.struct_rusage`` (Linux: ``ru_maxrss``
    in kilobytes)."""
    return TaskUsage(round(float(rusage.ru_utime), 6), round(float(rusage.ru_stime), 6),
                     int(rusage.ru_maxrss) * 1024)


def to_json(usage: TaskUsage) -> dict[str, Any]:
    return {"kind": KIND, "v": VERSION, "source": usage.source,
            "cpu_user_seconds": usage.cpu_user_seconds,
            "cpu_system_seconds": usage.cpu_system_seconds,
            "max_rss_bytes": usage.max_rss_bytes}


def from_json(body: Any) -> TaskUsage | None:
    """The usage a :func:`to_json` object describes; None for anything else."""
    if not isinstance(body, dict) or body.get("kind") != KIND or body.get("v") != VERSION:
        return None
    try:
        user = float(body["cpu_user_seconds"])
        system = float(body["cpu_system_seconds"])
        rss = int(body["max_rss_bytes"])
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    if not all(math.isfinite(v) and v >= 0 for v in (user, system)) or rss < 0:
        return None
    return TaskUsage(user, system, rss, str(body.get("source") or SOURCE_WAIT4))


def status_data(usage: TaskUsage) -> str:
    """``TaskStatus.data`` (bytes, base64 in Mesos' JSON) carrying ``usage``."""
    text = json.dumps(to_json(usage), sort_keys=True)
    return base64.b64encode(text.encode()).decode("ascii")


def read_status_data(data: Any) -> TaskUsage | None:
    """The usage a status update's ``data`` carries; None when it carries none (absent, not
    base64 JSON, another kind or version)."""
    if not isinstance(data, str) or not data:
        return None
    try:
        body = json.loads(base64.b64decode(data, validate=True))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    return from_json(body)
