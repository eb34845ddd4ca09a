"""The page's mirror of a record (``framework/webui/mirror.py``) reads trials again only when
the record changed."""

from __future__ import annotations

from pathlib import Path
import sqlite3

from disauto.framework._store import JobStore
from disauto.framework.webui.mirror import RecordMirror
from tests.framework.webui.records import big_record


def _poll(mirror: RecordMirror, db: Path) -> int:
    """One poll as ``da-job ui`` makes it: the record opened, read through the mirror,
    closed; the mirror's version."""
    store = JobStore(db)
    try:
        return mirror.trials(store)[1]
    finally:
        store.close()


def test_a_poll_of_a_record_nobody_writes_reads_no_trial_again(tmp_path: Path) -> None:
    # Its trials ended a moment ago (within the settling time): opening the record makes a new
    # empty WAL each time, which once counted as a change and read them all again on every poll.
    db = tmp_path / "job" / "job.db"
    big_record(db.parent, 50).close()
    mirror = RecordMirror(db)
    version = _poll(mirror, db)
    read_at, rows = mirror.read_at, dict(mirror.rows)
    for _ in range(3):
        assert _poll(mirror, db) == version
    assert mirror.read_at == read_at  # not read again
    assert all(mirror.rows[n] is row for n, row in rows.items())


def test_a_poll_after_a_write_reads_the_changed_trial(tmp_path: Path) -> None:
    db = tmp_path / "job" / "job.db"
    big_record(db.parent, 50).close()
    mirror = RecordMirror(db)
    version = _poll(mirror, db)
    with sqlite3.connect(db) as writer:  # another process's write: a trial's message
        writer.execute("UPDATE trials SET message = 'read again' WHERE number = 3")
    assert _poll(mirror, db) == version + 1
    assert mirror.rows[3].message == "read again"
