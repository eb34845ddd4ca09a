"""The job store: one SQLite database per job, the job's system of record.

Lives at ``$DISAUTO_HOME/jobs/<job-id>/job.db`` (WAL, one writer: this process). Every trial,
assignment, task status and report is written here *before* the framework acknowledges it to
Mesos or replies to AppCore, so a crash loses nothing that was acknowledged.

Thread safety: all methods may be called from any thread; one lock serializes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from contextlib import closing
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import field
import errno
import json
import logging
import os
from pathlib import Path
import sqlite3
import threading
import time
from typing import Any
from typing import TypeVar

from disauto.common.telemetry import USAGE_COLUMNS
from disauto.common.telemetry import Sample
from disauto.common.telemetry import TrialUsage
from disauto.common.trial_state import TrialState
from disauto.framework import _meta as meta_keys
from disauto.framework._meta import JobMeta
from disauto.framework._meta import MetaKey


logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS trials (
    number INTEGER PRIMARY KEY,
    assignment TEXT NOT NULL,
    state TEXT NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0,
    task_id TEXT NOT NULL DEFAULT '',
    agent_id TEXT NOT NULL DEFAULT '',
    executor_id TEXT NOT NULL DEFAULT '',
    objective REAL,
    metrics TEXT NOT NULL DEFAULT '{}',
    message TEXT NOT NULL DEFAULT '',
    training_seconds REAL NOT NULL DEFAULT 0,
    final_reported INTEGER NOT NULL DEFAULT 0,
    retries INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    started_at REAL,
    ended_at REAL
);
CREATE TABLE IF NOT EXISTS reports (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    trial_number INTEGER NOT NULL REFERENCES trials(number),
    step INTEGER,
    metrics TEXT NOT NULL,
    final INTEGER NOT NULL,
    elapsed_seconds REAL NOT NULL,
    recorded_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS task_updates (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL,
    state TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT '',
    message TEXT NOT NULL DEFAULT '',
    agent_id TEXT NOT NULL DEFAULT '',
    uuid TEXT NOT NULL DEFAULT '',
    timestamp REAL,
    recorded_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS appcore_runs (
    attempt INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL,
    agent_id TEXT NOT NULL DEFAULT '',
    address TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL,
    launched_at REAL NOT NULL,
    ended_at REAL
);
CREATE TABLE IF NOT EXISTS telemetry (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    data_name TEXT NOT NULL,
    node TEXT NOT NULL,
    trial INTEGER,
    time REAL NOT NULL,
    value REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS control (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    asked_at REAL NOT NULL,
    answered_at REAL,
    ok INTEGER,
    answer TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS telemetry_by_name ON telemetry(data_name, node, trial);
CREATE INDEX IF NOT EXISTS reports_by_trial ON reports(trial_number);
CREATE INDEX IF NOT EXISTS updates_by_task ON task_updates(task_id);
"""



@dataclass
class TrialRow:
    """One trial as stored."""

    number: int
    assignment: dict[str, Any]
    state: TrialState
    priority: int = 0
    task_id: str = ""
    agent_id: str = ""
    executor_id: str = ""
    """The warm slot's executor its task runs on ("" for a command task)."""
    objective: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    message: str = ""
    training_seconds: float = 0.0
    final_reported: bool = False
    retries: int = 0
    """How many times the trial was launched again: its task lost, its agent taken away by
    the operator, or its script failed (``--trial-retries``); its task id is
    ``trial-NNNN.<retries>``."""
    evictions: int = 0
    """How many of those relaunches the cluster's operator caused (the agent drained for
    maintenance, or marked gone): they do not count toward ``max_task_retries``."""
    unreachable_since: float | None = None
    """Since when (seconds since the epoch) Mesos says its task's agent is unreachable
    (TASK_UNREACHABLE); None while it is reachable."""
    created_at: float = 0.0
    started_at: float | None = None
    ended_at: float | None = None
    usage: TrialUsage = field(default_factory=TrialUsage)
    """What the trial's task was measured to use (``common/telemetry.py``)."""
    constraints: tuple[float, ...] | None = None
    """The constraints its final report carried (None: none; ``<= 0`` is satisfied)."""
    tries: list[dict[str, Any]] = field(default_factory=list)
    """Its earlier tries, oldest first, each ``{"task_id", "outcome" ("failed": its script
    failed; "lost": the cluster lost its task), "message", "ended_at", "metrics", "reports"}``
    (framework/_job/book.py); the trial's own task, state and message are its last try's."""
    resumed_from: dict[str, Any] | None = None
    """The checkpoint its current try resumes from, ``{"trial", "step", "name"}`` (its own
    trial's, or the trial a copied one came from); None: it starts from scratch. An earlier
    try's is in its ``tries``."""
    lineage: dict[str, Any] | None = None
    """Where it descends from when it started from another trial's checkpoint (Population
    Based Training's exploit): ``{"parent", "from_step" (None: the parent had no checkpoint,
    it started from scratch), "parent_assignment"}``; None: it did not."""

    @property
    def terminal(self) -> bool:
        return self.state.is_finished()


_JSON_COLUMNS = ("metrics", "assignment", "constraints", "tries", "resumed_from", "lineage")
"""Trial columns kept as JSON text."""


class StoreError(RuntimeError):
    """The job store cannot be opened or used."""


class DiskFullError(StoreError):
    """The disk that holds the job's folder is full: nothing more can be recorded (the message
    names the disk and the path, in one line). What was recorded before is kept whole: the
    transaction that did not fit was rolled back."""


def is_disk_full(error: BaseException) -> bool:
    """Whether ``error`` is a write that failed for want of space (SQLite's SQLITE_FULL, or
    ENOSPC / EDQUOT from the file system)."""
    if isinstance(error, sqlite3.Error):
        return getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL \
            or "disk is full" in str(error)
    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)


def disk_full_message(path: Path, error: BaseException) -> str:
    """One line naming the full disk (its mount point and free space) and the path that could
    not be written."""
    mount = path.parent
    while not os.path.ismount(mount) and mount != mount.parent:
        mount = mount.parent
    try:
        stats = os.statvfs(mount)
        free = f", {stats.f_bavail * stats.f_frsize // 1024} KiB free"
    except OSError:
        free = ""
    why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    return f"the disk is full: cannot write {path} ({why}; the disk at {mount}{free})"


class JobStore:
    """The SQLite record of one job.

    Args:
        path: the database file (its folder is created).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            _add_missing_columns(self._db)
        except sqlite3.Error as err:
            raise StoreError(f"cannot open job store {path}: {err}") from None
        for private in (path, *(path.with_name(path.name + end) for end in ("-wal", "-shm"))):
            if private.exists():
                private.chmod(0o600)  # the record is its user's alone
        self._lock = threading.RLock()
        self.full = ""
        """Once a write found the job's disk full: the one line that says so ("" till then).
        The run loop reads it to stop the job at once."""
        if not self.meta().has(meta_keys.SCHEMA_VERSION):
            self.set_meta(meta_keys.SCHEMA_VERSION, SCHEMA_VERSION)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def note_full(self, path: Path, error: BaseException) -> DiskFullError:
        """Keep that the job's disk is full (the first time says where), for the run loop;
        the error to raise."""
        with self._lock:
            if not self.full:
                self.full = disk_full_message(path, error)
            return DiskFullError(self.full)

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self.full:  # the disk is full: every write fails, none is tried
                raise DiskFullError(self.full)
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:
                        try:
                            self._db.execute("ROLLBACK")
                        except sqlite3.Error:
                            logger.debug("cannot roll back", exc_info=True)
                    raise
            except sqlite3.Error as err:
                if is_disk_full(err):
                    raise self.note_full(self.path, err) from None
                raise

    # -- meta (typed: framework/_meta.py) -----------------------------------------------------

    def get_meta(self, key: MetaKey[T]) -> T:
        """The value of ``key`` as recorded now (its default when not recorded)."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?",
                                   (key.name,)).fetchone()
        return key.read(None if row is None else str(row[0]))

    def set_meta(self, key: MetaKey[T], value: T) -> None:
        self.set_meta_many({key: value})

    def set_meta_many(self, values: Mapping[MetaKey[Any], Any]) -> None:
        """Record several values in one transaction."""
        rows = [(key.name, key.text(value)) for key, value in values.items()]
        with self._tx() as db:
            db.executemany(
                "INSERT INTO meta(key, value) VALUES(?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value", rows)

    def meta(self) -> JobMeta:
        """Every meta value as recorded now, read at once."""
        with self._lock:
            rows = self._db.execute("SELECT key, value FROM meta").fetchall()
        return JobMeta({str(key): str(value) for key, value in rows})

    # -- trials ------------------------------------------------------------------------------

    def add_trial(self, number: int, assignment: Mapping[str, Any], priority: int) -> TrialRow:
        return self.add_trials([(number, assignment, priority)])[0]

    def add_trials(
        self, trials: Sequence[tuple[int, Mapping[str, Any], int]]
    ) -> list[TrialRow]:
        """Record new PENDING trials ``(number, assignment, priority)`` in one transaction."""
        now = time.time()
        with self._tx() as db:
            db.executemany(
                "INSERT INTO trials(number, assignment, state, priority, created_at) "
                "VALUES(?, ?, 'PENDING', ?, ?)",
                [(number, json.dumps(dict(assignment), sort_keys=True), priority, now)
                 for number, assignment, priority in trials],
            )
        return [TrialRow(number, dict(assignment), TrialState.PENDING, priority, created_at=now)
                for number, assignment, priority in trials]

    def update_trial(self, number: int, **fields: Any) -> None:
        """Set columns of a trial (``metrics``/``assignment`` are JSON-encoded)."""
        if not fields:
            return
        for key in _JSON_COLUMNS:
            if key in fields and fields[key] is not None:  # None: NULL (no constraints)
                fields[key] = json.dumps(fields[key], sort_keys=True)
        if "final_reported" in fields:
            fields["final_reported"] = int(bool(fields["final_reported"]))
        columns = ", ".join(f"{name} = ?" for name in fields)
        with self._tx() as db:
            db.execute(
                f"UPDATE trials SET {columns} WHERE number = ?", (*fields.values(), number)
            )

    def trial(self, number: int) -> TrialRow | None:
        with self._lock:
            row = self._db.execute(
                "SELECT * FROM trials WHERE number = ?", (number,)
            ).fetchone()
            names = [d[0] for d in self._db.execute("SELECT * FROM trials LIMIT 0").description]
        return None if row is None else _trials_from_rows(names, [row])[0]

    def trials(self) -> list[TrialRow]:
        with self._lock:
            cursor = self._db.execute("SELECT * FROM trials ORDER BY number")
            names = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
        return _trials_from_rows(names, rows)

    def trials_since(self, after: int, numbers: Sequence[int],
                     ended_after: float) -> list[TrialRow]:
        """The trials a reader that has trials up to ``after`` must read again: those numbered
        above it, those in ``numbers`` (the ones it holds in flight), and those that ended
        after ``ended_after`` (their measured usage may be kept a moment after their end).
        Every other trial ended earlier and does not change (the job page's mirror of a
        record, ``framework/webui/mirror.py``)."""
        marks = ", ".join("?" for _ in numbers) or "NULL"
        with self._lock:
            cursor = self._db.execute(
                f"SELECT * FROM trials WHERE number > ? OR number IN ({marks}) "
                "OR ended_at > ? ORDER BY number", (after, *numbers, ended_after))
            names = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
        return _trials_from_rows(names, rows)

    # -- reports and task updates --------------------------------------------------------------

    def add_report(
        self,
        trial_number: int,
        metrics: Mapping[str, float],
        step: int | None,
        final: bool,
        elapsed_seconds: float,
        trial_fields: Mapping[str, Any],
    ) -> None:
        """Record a report and the trial columns it changes, in one transaction."""
        encoded = dict(trial_fields)
        for key in _JSON_COLUMNS:
            if key in encoded:
                encoded[key] = json.dumps(encoded[key], sort_keys=True)
        if "final_reported" in encoded:
            encoded["final_reported"] = int(bool(encoded["final_reported"]))
        columns = ", ".join(f"{name} = ?" for name in encoded)
        with self._tx() as db:
            db.execute(
                "INSERT INTO reports(trial_number, step, metrics, final, elapsed_seconds, "
                "recorded_at) VALUES(?, ?, ?, ?, ?, ?)",
                (trial_number, step, json.dumps(dict(metrics), sort_keys=True), int(final),
                 elapsed_seconds, time.time()),
            )
            if encoded:
                db.execute(
                    f"UPDATE trials SET {columns} WHERE number = ?",
                    (*encoded.values(), trial_number),
                )

    def first_reports(self) -> dict[int, tuple[float, float]]:
        """Each trial's first report, by trial number: ``(recorded_at, elapsed_seconds)``,
        when it was recorded and how long the trial's script had run then by its own clock."""
        with self._lock:
            rows = self._db.execute(
                "SELECT trial_number, recorded_at, elapsed_seconds FROM reports WHERE id IN "
                "(SELECT MIN(id) FROM reports GROUP BY trial_number)").fetchall()
        return {int(number): (float(at), float(elapsed)) for number, at, elapsed in rows}

    def reports(self, trial_number: int | None = None) -> list[dict[str, Any]]:
        rows = self._select("SELECT trial_number, step, metrics, final, elapsed_seconds "
                            "FROM reports", "trial_number", trial_number)
        return [
            {"trial": r[0], "step": r[1], "metrics": json.loads(r[2]), "final": bool(r[3]),
             "elapsed_seconds": r[4]}
            for r in rows
        ]

    def reports_of(self, numbers: Sequence[int]) -> list[dict[str, Any]]:
        """The reports of these trials (as :meth:`reports` gives them), in the order recorded:
        one query for the few trials a page shows, not one per trial nor every report."""
        if not numbers:
            return []
        marks = ", ".join("?" for _ in numbers)
        with self._lock:
            rows = self._db.execute(
                "SELECT trial_number, step, metrics, final, elapsed_seconds FROM reports "
                f"WHERE trial_number IN ({marks}) ORDER BY id", tuple(numbers)).fetchall()
        return [{"trial": r[0], "step": r[1], "metrics": json.loads(r[2]), "final": bool(r[3]),
                 "elapsed_seconds": r[4]} for r in rows]

    def _select(self, query: str, column: str, value: Any) -> list[tuple[Any, ...]]:
        """Rows of ``query`` in the order recorded, those where ``column = value`` if given."""
        params: tuple[Any, ...] = ()
        if value is not None:
            query += f" WHERE {column} = ?"
            params = (value,)
        with self._lock:
            return list(self._db.execute(query + " ORDER BY id", params).fetchall())

    # -- telemetry -----------------------------------------------------------------------------

    def add_samples(self, samples: Sequence[Sample]) -> None:
        """Record measured or derived samples, in one transaction."""
        if not samples:
            return
        with self._tx() as db:
            db.executemany(
                "INSERT INTO telemetry(data_name, node, trial, time, value) VALUES(?, ?, ?, ?, ?)",
                [(s.data_name, s.node, s.trial, s.time, s.value) for s in samples],
            )

    def samples(self, data_name: str | None = None, node: str | None = None,
                trial: int | None = None, since: float | None = None) -> list[Sample]:
        """The samples recorded, oldest first, narrowed by any of name, node, trial and time."""
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("data_name", data_name), ("node", node), ("trial", trial)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if since is not None:
            clauses.append("time >= ?")
            params.append(since)
        query = "SELECT data_name, node, trial, time, value FROM telemetry"
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        with self._lock:
            rows = self._db.execute(query + " ORDER BY time, id", params).fetchall()
        return [Sample(data_name=r[0], node=r[1], trial=r[2], time=r[3], value=r[4])
                for r in rows]

    def samples_after(self, after_id: int, data_names: Sequence[str],
                      limit: int = 100_000) -> tuple[list[Sample], int]:
        """The samples of ``data_names`` recorded after row ``after_id`` (in the order
        recorded, at most ``limit``), and the row id to ask after next time (a processor's
        cursor: it sees every sample once, whatever time the sample carries)."""
        if not data_names:
            return [], after_id
        marks = ", ".join("?" for _ in data_names)
        with self._lock:
            rows = self._db.execute(
                "SELECT id, data_name, node, trial, time, value FROM telemetry "
                f"WHERE id > ? AND data_name IN ({marks}) ORDER BY id LIMIT ?",
                (after_id, *data_names, limit)).fetchall()
        cursor = int(rows[-1][0]) if rows else after_id
        return [Sample(data_name=r[1], node=r[2], trial=r[3], time=r[4], value=r[5])
                for r in rows], cursor

    def sample_series(self) -> list[dict[str, Any]]:
        """What the telemetry table holds, per data name and node: how many samples, the
        trials they belong to, the first and last time."""
        with self._lock:
            rows = self._db.execute(
                "SELECT data_name, node, COUNT(*), MIN(time), MAX(time), "
                "GROUP_CONCAT(DISTINCT trial) FROM telemetry "
                "GROUP BY data_name, node ORDER BY data_name, node").fetchall()
        return [{"data_name": r[0], "node": r[1], "count": int(r[2]), "first": r[3],
                 "last": r[4], "trials": sorted(int(t) for t in (r[5] or "").split(",") if t)}
                for r in rows]

    def set_trial_usage(self, number: int, usage: TrialUsage) -> None:
        """Keep a trial's measured usage with it (replacing what was there)."""
        columns = usage.as_columns()
        with self._tx() as db:
            db.execute(f"UPDATE trials SET {', '.join(f'{c} = ?' for c in columns)} "
                       "WHERE number = ?", (*columns.values(), number))

    def add_task_update(self, status: Mapping[str, Any]) -> None:
        """Record a Mesos TaskStatus (JSON form) as received."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO task_updates(task_id, state, reason, source, message, agent_id, "
                "uuid, timestamp, recorded_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    str(status.get("task_id", {}).get("value", "")),
                    str(status.get("state", "")),
                    str(status.get("reason", "")),
                    str(status.get("source", "")),
                    str(status.get("message", "")),
                    str(status.get("agent_id", {}).get("value", "")),
                    str(status.get("uuid", "")),
                    status.get("timestamp"),
                    time.time(),
                ),
            )

    def task_updates(self, task_id: str | None = None) -> list[dict[str, Any]]:
        rows = self._select("SELECT task_id, state, reason, source, message, agent_id, "
                            "recorded_at FROM task_updates", "task_id", task_id)
        keys = ("task_id", "state", "reason", "source", "message", "agent_id", "recorded_at")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    # -- the control channel (framework/control.py) -------------------------------------------

    def add_control_request(self, kind: str, body: str) -> int:
        """Record a request for the job's framework; its id."""
        with self._tx() as db:
            cursor = db.execute("INSERT INTO control(kind, body, asked_at) VALUES(?, ?, ?)",
                                (kind, body, time.time()))
            return int(cursor.lastrowid or 0)

    def unanswered_control_requests(self) -> list[tuple[int, str, str]]:
        """``(id, kind, body)`` of the requests not answered yet, oldest first."""
        with self._lock:
            rows = self._db.execute("SELECT id, kind, body FROM control "
                                    "WHERE answered_at IS NULL ORDER BY id").fetchall()
        return [(int(row[0]), str(row[1]), str(row[2])) for row in rows]

    def answer_control_request(self, request: int, ok: bool, message: str) -> None:
        """Record the answer to request ``request`` (only its first answer counts)."""
        with self._tx() as db:
            db.execute("UPDATE control SET answered_at = ?, ok = ?, answer = ? "
                       "WHERE id = ? AND answered_at IS NULL",
                       (time.time(), int(ok), message, request))

    def control_answer(self, request: int) -> tuple[bool, str] | None:
        """``(ok, message)`` of the answer to request ``request``; None while unanswered."""
        with self._lock:
            row = self._db.execute("SELECT ok, answer FROM control "
                                   "WHERE id = ? AND answered_at IS NOT NULL",
                                   (request,)).fetchone()
        return None if row is None else (bool(row[0]), str(row[1]))

    # -- AppCore runs --------------------------------------------------------------------------

    def add_appcore_run(self, attempt: int, task_id: str, agent_id: str) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO appcore_runs(attempt, task_id, agent_id, state, launched_at) "
                "VALUES(?, ?, ?, 'LAUNCHING', ?)",
                (attempt, task_id, agent_id, time.time()),
            )

    def update_appcore_run(self, attempt: int, **fields: Any) -> None:
        columns = ", ".join(f"{name} = ?" for name in fields)
        with self._tx() as db:
            db.execute(
                f"UPDATE appcore_runs SET {columns} WHERE attempt = ?", (*fields.values(), attempt)
            )

    def appcore_runs(self) -> list[dict[str, Any]]:
        with self._lock:
            cursor = self._db.execute("SELECT * FROM appcore_runs ORDER BY attempt")
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _decoded(texts: Iterable[str]) -> list[Any]:
    """The JSON values of ``texts``, decoded in one call (as an array): 10,000 calls of
    ``json.loads`` cost more in Python than the decoding itself (``da-job results`` of a
    10,000-trial record)."""
    return list(json.loads("[" + ",".join(texts) + "]"))


def _trials_from_rows(names: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[TrialRow]:
    dicts = [dict(zip(names, row, strict=True)) for row in rows]
    assignments = _decoded(d["assignment"] for d in dicts)
    metrics = _decoded(d["metrics"] for d in dicts)
    return [_trial_from_row(d, a, m) for d, a, m in zip(dicts, assignments, metrics, strict=True)]


_STATES = {str(state): state for state in TrialState}
"""Each stored state name's :class:`TrialState` (a dict read, not the enum's call, per row)."""
_NO_USAGE = TrialUsage()
"""The usage of every trial nothing was measured of (one shared, frozen instance)."""


def _usage(row: dict[str, Any]) -> TrialUsage:
    values = [row.get(name) for name in USAGE_COLUMNS]
    if not any(value is not None for value in values):
        return _NO_USAGE
    return TrialUsage(**dict(zip(USAGE_COLUMNS, values, strict=True)))


def _trial_from_row(row: dict[str, Any], assignment: dict[str, Any],
                    metrics: dict[str, float]) -> TrialRow:
    """A trial's row, its assignment's and metrics' JSON decoded already."""
    tries = row.get("tries") or "[]"
    return TrialRow(
        number=int(row["number"]),
        assignment=assignment,
        state=_STATES.get(row["state"]) or TrialState(row["state"]),
        priority=int(row["priority"]),
        task_id=str(row["task_id"]),
        agent_id=str(row["agent_id"]),
        executor_id=str(row.get("executor_id") or ""),
        objective=row["objective"],
        metrics=metrics,
        message=str(row["message"]),
        training_seconds=float(row["training_seconds"]),
        final_reported=bool(row["final_reported"]),
        retries=int(row.get("retries") or 0),
        evictions=int(row.get("evictions") or 0),
        unreachable_since=row.get("unreachable_since"),
        created_at=float(row["created_at"]),
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        usage=_usage(row),
        constraints=tuple(json.loads(row["constraints"])) if row.get("constraints") else None,
        tries=[] if tries == "[]" else json.loads(tries),
        resumed_from=json.loads(row["resumed_from"]) if row.get("resumed_from") else None,
        lineage=json.loads(row["lineage"]) if row.get("lineage") else None,
    )


# Columns added after a job store's first version: (table, column, definition).
_ADDED_COLUMNS = (("trials", "retries", "INTEGER NOT NULL DEFAULT 0"),
                  ("trials", "executor_id", "TEXT NOT NULL DEFAULT ''"),
                  ("trials", "constraints", "TEXT"),
                  ("trials", "evictions", "INTEGER NOT NULL DEFAULT 0"),
                  ("trials", "unreachable_since", "REAL"),
                  ("trials", "tries", "TEXT NOT NULL DEFAULT '[]'"),
                  ("trials", "resumed_from", "TEXT"),
                  ("trials", "lineage", "TEXT"),
                  *(("trials", name, "REAL") for name in USAGE_COLUMNS))


def _add_missing_columns(db: sqlite3.Connection) -> None:
    """Bring a job store written by an earlier DisAuto up to the current columns."""
    for table, column, definition in _ADDED_COLUMNS:
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if column not in have:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")


def peek_meta(path: Path) -> JobMeta:
    """The meta of the record at ``path`` read-only, creating and changing nothing (a record
    another process is writing); empty when it cannot be read (yet)."""
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)) as db:
            rows = db.execute("SELECT key, value FROM meta").fetchall()
    except sqlite3.Error:
        return JobMeta()
    return JobMeta({str(key): str(value) for key, value in rows})
