"""The trials of a job folder's record, kept for the page and read again only as they change.

``da-job ui`` serves jobs from their folders: an ended job's record does not change, and one
that another process runs changes a few trials at a time. Reading every trial of a
10,000-trial record on each 1.5 s poll cost a second, so the page keeps a mirror of
each record it serves: read whole once, then, when the database's files changed, only the
trials that can have changed (``JobStore.trials_since``: those added, those in flight, those
that ended in the last :data:`SETTLE_SECONDS`). Ended trials never change again, except their
measured usage, which telemetry keeps within moments of their end.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
import threading
import time

from disauto.framework._store import JobStore
from disauto.framework._store import TrialRow


SETTLE_SECONDS = 120.0
"""Trials that ended this recently are read again (their usage may still be recorded)."""
MIRRORS = 32
"""Records mirrored at most (the oldest is dropped)."""


def _stamp(db: Path) -> tuple[tuple[int, int], ...]:
    """What changes when the record does: the database's and its WAL's mtime and size. An
    empty WAL counts as none: SQLite makes one afresh each time the record is opened with
    no other connection (the page's own read), and a new mtime there changed nothing, while
    every poll then read again the trials of the last :data:`SETTLE_SECONDS`."""
    found = []
    for path in (db, db.with_name(db.name + "-wal")):
        try:
            stat = path.stat()
        except OSError:
            found.append((0, 0))
            continue
        found.append((stat.st_mtime_ns, stat.st_size) if stat.st_size else (0, 0))
    return tuple(found)


@dataclass
class RecordMirror:
    """The trials of the record at ``db``, by number, and a version that changes with them."""

    db: Path
    rows: dict[int, TrialRow] = field(default_factory=dict)
    version: int = 0
    stamp: tuple[tuple[int, int], ...] = ()
    read_at: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def trials(self, store: JobStore) -> tuple[list[TrialRow], int]:
        """The trials now (by number) and the version, read from ``store`` (this record's) as
        far as they can have changed since the last call."""
        with self.lock:
            stamp = _stamp(self.db)
            if stamp != self.stamp or not self.rows:
                now = time.time()
                if not self.rows:
                    fresh = store.trials()
                else:
                    open_ = [n for n, t in self.rows.items() if t.ended_at is None]
                    fresh = store.trials_since(max(self.rows), open_,
                                               self.read_at - SETTLE_SECONDS)
                changed = False
                for trial in fresh:
                    if self.rows.get(trial.number) != trial:
                        self.rows[trial.number] = trial
                        changed = True
                self.stamp, self.read_at = stamp, now
                if changed or self.version == 0:
                    self.version += 1
            # Read by number, new numbers after the rest: the dict keeps that order.
            return list(self.rows.values()), self.version


_MIRRORS: dict[Path, RecordMirror] = {}
_LOCK = threading.Lock()


def mirror_of(db: Path) -> RecordMirror:
    """The mirror of the record at ``db`` (made on first use)."""
    with _LOCK:
        mirror = _MIRRORS.get(db)
        if mirror is None:
            if len(_MIRRORS) >= MIRRORS:
                _MIRRORS.pop(next(iter(_MIRRORS)))
            mirror = _MIRRORS[db] = RecordMirror(db)
        return mirror
