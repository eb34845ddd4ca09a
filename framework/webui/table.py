"""The job page's trials table, one page at a time: filtered, sorted and cut on the server.

A job of 10,000 trials cannot send every row on each 1.5 s poll: the page asks for
one page of the table (``offset``, ``limit``), sorted by a column (``sort``, ``dir``) and
filtered by state and by text, and gets those rows with how many matched. ``static/job.js``
does the same over the rows report.html carries, so both sort and filter alike:

* a column's value is the trial's number, state, a parameter's value (``p:<name>``), its
  objective, duration, peak memory, CPU seconds, mean GPU, agent or message (its cause first);
* empty values sort last, numbers by value, text by its characters; ``dir`` -1 reverses the
  order (empty values first); equal values keep the trials' order (by number);
* the text filter keeps a trial when any column's value, as text, holds it (case ignored).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
import operator
from typing import Any

from disauto.common.trial_state import TrialState
from disauto.framework._store import TrialRow


PAGE_ROWS = 50
"""Rows per page unless the page asks for another number."""
MAX_ROWS = 500
"""The most rows one request gets."""
COLUMNS = ("number", "state", "objective", "duration", "peak_rss", "cpu_seconds", "gpu", "agent",
           "message")
"""The columns besides the parameters (``p:<name>``) a table sorts by."""


class TableQueryError(ValueError):
    """A table request the page cannot answer (one line)."""


@dataclass(frozen=True)
class TableQuery:
    """Which page of the trials table: where it starts, how many rows, sorted and filtered."""

    offset: int = 0
    limit: int = PAGE_ROWS
    sort: str = "number"
    dir: int = 1
    state: str = ""
    filter: str = ""

    @classmethod
    def from_query(cls, query: Mapping[str, Sequence[str]]) -> TableQuery:
        """The query of a request's parameters (``?offset=&limit=&sort=&dir=&state=&filter=``).

        Raises:
            TableQueryError: a value out of range or of the wrong kind.
        """
        def one(name: str, default: str) -> str:
            values = query.get(name) or [default]
            return str(values[0])

        try:
            offset, limit, direction = (int(one("offset", "0")), int(one("limit", str(PAGE_ROWS))),
                                        int(one("dir", "1")))
        except ValueError:
            raise TableQueryError("offset, limit and dir must be integers") from None
        sort, state = one("sort", "number"), one("state", "")
        if offset < 0 or not 1 <= limit <= MAX_ROWS or direction not in (1, -1):
            raise TableQueryError(f"offset must be >= 0, limit 1-{MAX_ROWS} and dir 1 or -1")
        if sort not in COLUMNS and not sort.startswith("p:"):
            raise TableQueryError(f"cannot sort by {sort!r}: one of {', '.join(COLUMNS)} or "
                                  "p:<parameter>")
        if state and state not in {str(s) for s in TrialState}:
            raise TableQueryError(f"no trial state {state!r}")
        return cls(offset, limit, sort, direction, state, one("filter", "")[:200])

    def as_json(self) -> dict[str, Any]:
        return {"offset": self.offset, "limit": self.limit, "sort": self.sort, "dir": self.dir,
                "state": self.state, "filter": self.filter}


def duration(trial: TrialRow, now: float) -> float | None:
    """How long the trial ran (so far, while it runs), or None before it started."""
    end = trial.ended_at if trial.ended_at is not None else (
        now if trial.state == TrialState.RUNNING else None)
    return round(end - trial.started_at, 2) if end is not None and trial.started_at else None


def column_value(trial: TrialRow, key: str, now: float) -> Any:
    """The value of column ``key`` of a trial (None: empty)."""
    if key.startswith("p:"):
        return trial.assignment.get(key[2:])
    values: dict[str, Callable[[], Any]] = {
        "number": lambda: trial.number, "state": lambda: str(trial.state),
        "objective": lambda: trial.objective, "duration": lambda: duration(trial, now),
        "peak_rss": lambda: trial.usage.peak_rss_bytes,
        "cpu_seconds": lambda: trial.usage.cpu_seconds,
        "gpu": lambda: trial.usage.mean_gpu_utilization, "agent": lambda: trial.agent_id,
        "message": lambda: trial.message,
    }
    return values[key]() if key in values else None


def _sort_key(value: Any) -> tuple[int, int, float, str]:
    if value is None or value == "":
        return (1, 0, 0.0, "")
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int | float):
        return (0, 0, float(value), "")
    return (0, 1, 0.0, str(value))


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _matches(trial: TrialRow, needle: str, parameters: Sequence[str], now: float) -> bool:
    keys = [*COLUMNS, *(f"p:{name}" for name in parameters)]
    return any(needle in _text(column_value(trial, key, now)).lower() for key in keys)


_NUMBER = operator.attrgetter("number")


def select(trials: Sequence[TrialRow], query: TableQuery, parameters: Sequence[str],
           now: float) -> tuple[list[TrialRow], int]:
    """The rows of the page ``query`` asks for, and how many trials matched its filters."""
    rows = [t for t in trials if not query.state or str(t.state) == query.state]
    needle = query.filter.strip().lower()
    if needle:
        rows = [t for t in rows if _matches(t, needle, parameters, now)]
    rows.sort(key=_NUMBER)  # a C key: 10,000 rows on each poll of the page
    if query.sort != "number" or query.dir != 1:
        keyed = [(_sort_key(column_value(t, query.sort, now)), t) for t in rows]
        if query.dir == 1:
            keyed.sort(key=lambda pair: pair[0])
        else:  # reversed values, equal ones still by number (as a stable sort keeps them)
            keyed.sort(key=lambda pair: _Reversed(pair[0]))
        rows = [t for _, t in keyed]
    return rows[query.offset:query.offset + query.limit], len(rows)


class _Reversed:
    """Orders sort keys the other way round (empty values first), equal ones unmoved."""

    __slots__ = ("key",)

    def __init__(self, key: tuple[int, int, float, str]) -> None:
        self.key = key

    def __lt__(self, other: _Reversed) -> bool:
        return other.key < self.key
