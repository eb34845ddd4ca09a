"""What ``bench.scale`` reads of a finished job: its record's figures and its processes' memory.

Everything here is read from the job folder (``job.db`` read-only, the copied AppCore log) or
``/proc``; nothing changes the job.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
import math
import os
from pathlib import Path
import re
import sqlite3


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values``, nearest rank; NaN when there are none."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass(frozen=True)
class Span:
    """One trial as the record has it (seconds since the epoch)."""

    number: int
    state: str
    executor: str
    created: float
    started: float | None
    ended: float | None


def read_spans(db_path: Path) -> list[Span]:
    """Every trial of the record at ``db_path`` (opened read-only)."""
    with closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)) as db:
        rows = db.execute("SELECT number, state, executor_id, created_at, started_at, ended_at "
                          "FROM trials ORDER BY number").fetchall()
    return [Span(int(r[0]), str(r[1]), str(r[2] or ""), float(r[3]), r[4], r[5]) for r in rows]


def ended_count(db_path: Path) -> int:
    """Trials whose end is recorded (0 while the record cannot be read yet)."""
    try:
        with closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=1)) as db:
            row = db.execute("SELECT COUNT(*) FROM trials WHERE ended_at IS NOT NULL").fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0])


@dataclass(frozen=True)
class Throughput:
    """How fast the record says the trials went."""

    trials: int
    span: float
    """First start to last end, seconds."""
    rate: float
    """Trials per second over the span."""
    run_median: float
    """A trial's own run (started → ended in the record), median seconds."""
    turnaround_median: float
    """On one slot, one trial's end → the next one's start, median seconds."""
    turnaround_p99: float
    ideal: float
    """``ceil(trials / parallelism) * seconds``: the span with nothing but the trials' sleep."""


def throughput(spans: Sequence[Span], parallelism: int, seconds: float) -> Throughput:
    """The record's throughput and turnaround per slot (trials grouped by warm slot)."""
    ran = [s for s in spans if s.started is not None and s.ended is not None]
    if not ran:
        return Throughput(0, 0.0, 0.0, math.nan, math.nan, math.nan, 0.0)
    first = min(float(s.started or 0) for s in ran)
    last = max(float(s.ended or 0) for s in ran)
    by_slot: dict[str, list[Span]] = {}
    for span in ran:
        by_slot.setdefault(span.executor or f"task-{span.number}", []).append(span)
    gaps: list[float] = []
    for slot in by_slot.values():
        slot.sort(key=lambda s: float(s.started or 0))
        gaps += [float(b.started or 0) - float(a.ended or 0)
                 for a, b in zip(slot, slot[1:], strict=False)]
    width = last - first
    return Throughput(
        trials=len(ran), span=width, rate=len(ran) / width if width > 0 else math.nan,
        run_median=percentile([float(s.ended or 0) - float(s.started or 0) for s in ran], 0.5),
        turnaround_median=percentile(gaps, 0.5), turnaround_p99=percentile(gaps, 0.99),
        ideal=math.ceil(len(ran) / parallelism) * seconds)


SUGGEST_LINE = re.compile(
    r"suggestions? at (\d+) trials: (\d+) asked, p50 ([\d.]+) ms, p99 ([\d.]+) ms, "
    r"max ([\d.]+) ms")


def suggestion_latency(log: Path) -> dict[int, tuple[float, float, float]]:
    """AppCore's own figures (``appcore/loop.py`` logs them every 1,000 trials): trials
    submitted → (p50, p99, max) milliseconds of ``ask`` over the last thousand."""
    found: dict[int, tuple[float, float, float]] = {}
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return found
    for match in SUGGEST_LINE.finditer(text):
        found[int(match.group(1))] = (float(match.group(3)), float(match.group(4)),
                                      float(match.group(5)))
    return found


def rss_bytes(pid: int) -> tuple[int, int]:
    """(resident now, peak resident) of process ``pid`` in bytes; (0, 0) once it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0, 0
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)

    def kib(name: str) -> int:
        return int(fields.get(name, "0 kB").split()[0]) * 1024

    return kib("VmRSS"), kib("VmHWM")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process ``pid`` used so far (its threads'); 0 once gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def steady_cpu(samples: Sequence[tuple[int, float]], total: int) -> float:
    """CPU seconds per trial between 10 % and 90 % of ``total`` trials ended, from
    ``(trials ended, CPU seconds so far)`` samples (NaN with too few)."""
    inside = [(n, c) for n, c in samples if 0.1 * total <= n <= 0.9 * total and c > 0]
    if len(inside) < 2 or inside[-1][0] == inside[0][0]:
        return math.nan
    return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])


def descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (children first), from ``/proc``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def find_process(root: int, marker: str) -> int | None:
    """The first process below ``root`` whose command line has ``marker`` (not a shell)."""
    for pid in descendants(root):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and not argv[0].endswith(b"sh") and any(marker.encode() in a for a in argv):
            return pid
    return None
