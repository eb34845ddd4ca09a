"""The job store: a real SQLite file, written through and read back from a new connection."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
import sqlite3
import threading
import time

import pytest

from disauto.common import telemetry
from disauto.common.telemetry import Sample
from disauto.common.telemetry import TrialUsage
from disauto.framework import _meta as meta
from disauto.framework._store import SCHEMA_VERSION
from disauto.framework._store import JobStore
from disauto.framework._store import StoreError
from disauto.testing.inprocess import task_status


pytestmark = pytest.mark.integration  # starts processes or servers


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "jobs" / "job-1" / "job.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[JobStore]:
    opened = JobStore(db_path)
    yield opened
    opened.close()


def test_creates_its_folder_in_wal_mode_with_a_schema_version(db_path: Path) -> None:
    store = JobStore(db_path)
    try:
        assert db_path.is_file()
        assert store.get_meta(meta.SCHEMA_VERSION) == SCHEMA_VERSION
        with sqlite3.connect(db_path) as other:  # the record's text, as other versions read it
            assert other.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                                 ).fetchone() == (str(SCHEMA_VERSION),)
        with sqlite3.connect(db_path) as other:
            assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        store.close()


def test_unopenable_path_raises_store_error_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder.db"
    folder.mkdir()
    with pytest.raises(StoreError, match="cannot open job store .*a-folder.db"):
        JobStore(folder)


def test_meta_set_overwrite_and_many(store: JobStore) -> None:
    assert store.get_meta(meta.ENDED_AT) is None and store.get_meta(meta.OUTCOME) == ""
    store.set_meta(meta.OUTCOME, "BUDGET_SPENT")
    store.set_meta(meta.OUTCOME, "STOPPED")
    store.set_meta_many({meta.PID: 42, meta.BIND_ALL: True, meta.ENDED_AT: 1.5})
    assert store.get_meta(meta.OUTCOME) == "STOPPED"
    assert (store.get_meta(meta.PID), store.get_meta(meta.BIND_ALL),
            store.get_meta(meta.ENDED_AT)) == (42, True, 1.5)
    recorded = store.meta()
    assert (recorded[meta.PID], recorded[meta.OUTCOME]) == (42, "STOPPED")


def test_trials_keep_assignment_types_and_survive_reopening(store: JobStore,
                                                             db_path: Path) -> None:
    row = store.add_trial(2, {"lr": 0.5, "layers": 3, "act": "relu"}, priority=1)
    store.add_trial(1, {"lr": 2.0, "layers": 1, "act": "tanh"}, priority=0)
    assert row.state == "PENDING" and not row.terminal
    store.update_trial(2, state="RUNNING", task_id="trial-0002", agent_id="S1", started_at=5.0,
                       metrics={"accuracy": 0.25}, final_reported=True)

    reopened = JobStore(db_path)
    try:
        trials = reopened.trials()
        assert [t.number for t in trials] == [1, 2]  # ordered by number
        first, second = trials
        assert first.assignment == {"lr": 2.0, "layers": 1, "act": "tanh"}
        assert type(first.assignment["lr"]) is float and type(first.assignment["layers"]) is int
        assert (second.state, second.task_id, second.agent_id, second.started_at) == (
            "RUNNING", "trial-0002", "S1", 5.0)
        assert second.metrics == {"accuracy": 0.25}
        assert second.final_reported is True and second.priority == 1
        assert reopened.trial(2) == second
        assert reopened.trial(99) is None
    finally:
        reopened.close()


def test_duplicate_trial_number_is_rejected_and_leaves_the_first(store: JobStore) -> None:
    store.add_trial(1, {"x": 1}, priority=0)
    with pytest.raises(sqlite3.IntegrityError):
        store.add_trial(1, {"x": 2}, priority=0)
    assert store.trial(1).assignment == {"x": 1}  # type: ignore[union-attr]
    # The failed transaction was rolled back: the store still writes.
    store.add_trial(2, {"x": 2}, priority=0)
    assert [t.number for t in store.trials()] == [1, 2]


def test_each_trials_first_report_is_when_it_came_and_the_trials_clock_then(
        store: JobStore) -> None:
    for number in (1, 2, 3):
        store.add_trial(number, {"x": number}, priority=0)
    before = time.time()
    store.add_report(1, {"loss": 0.5}, step=0, final=False, elapsed_seconds=0.25,
                     trial_fields={})
    store.add_report(2, {"loss": 0.4}, step=None, final=True, elapsed_seconds=2.0,
                     trial_fields={})
    store.add_report(1, {"loss": 0.1}, step=1, final=True, elapsed_seconds=9.0,
                     trial_fields={})
    first = store.first_reports()
    assert sorted(first) == [1, 2]  # trial 3 never reported
    assert [first[1][1], first[2][1]] == [0.25, 2.0]
    assert before <= first[1][0] <= first[2][0] <= time.time()


def test_terminal_states(store: JobStore) -> None:
    store.add_trial(1, {"x": 1}, priority=0)
    for state, terminal in [("LAUNCHING", False), ("RUNNING", False), ("COMPLETED", True),
                            ("FAILED", True), ("KILLED", True), ("PRUNED", True)]:
        store.update_trial(1, state=state)
        assert store.trial(1).terminal is terminal, state  # type: ignore[union-attr]


def test_report_and_trial_columns_are_one_transaction(store: JobStore, db_path: Path) -> None:
    store.add_trial(1, {"x": 1}, priority=0)
    store.add_report(1, {"loss": 0.5}, step=0, final=False, elapsed_seconds=1.5,
                     trial_fields={"metrics": {"loss": 0.5}, "training_seconds": 1.5})
    store.add_report(1, {"accuracy": 0.9}, step=None, final=True, elapsed_seconds=3.0,
                     trial_fields={"metrics": {"loss": 0.5, "accuracy": 0.9},
                                   "objective": 0.9, "final_reported": True,
                                   "training_seconds": 3.0})
    with pytest.raises(sqlite3.OperationalError):
        # A bad column aborts the whole report: neither the row nor the update is kept.
        store.add_report(1, {"accuracy": 0.1}, step=None, final=True, elapsed_seconds=4.0,
                         trial_fields={"no_such_column": 1})

    reopened = JobStore(db_path)
    try:
        assert reopened.reports(1) == [
            {"trial": 1, "step": 0, "metrics": {"loss": 0.5}, "final": False,
             "elapsed_seconds": 1.5},
            {"trial": 1, "step": None, "metrics": {"accuracy": 0.9}, "final": True,
             "elapsed_seconds": 3.0},
        ]
        assert reopened.reports(2) == []
        assert len(reopened.reports()) == 2
        trial = reopened.trial(1)
        assert trial is not None
        assert (trial.objective, trial.final_reported, trial.training_seconds) == (0.9, True, 3.0)
        assert trial.metrics == {"loss": 0.5, "accuracy": 0.9}
    finally:
        reopened.close()


def test_task_updates_are_recorded_as_received(store: JobStore) -> None:
    store.add_task_update(task_status("trial-0001", "TASK_RUNNING"))
    store.add_task_update(task_status("trial-0001", "TASK_FAILED", message="exit 3",
                                      reason="REASON_COMMAND_EXECUTOR_FAILED"))
    store.add_task_update(task_status("appcore-1", "TASK_RUNNING", agent_id="S9"))
    updates = store.task_updates("trial-0001")
    assert all(abs(u.pop("recorded_at") - time.time()) < 60 for u in updates)
    assert updates == [
        {"task_id": "trial-0001", "state": "TASK_RUNNING", "reason": "",
         "source": "SOURCE_EXECUTOR", "message": "", "agent_id": "agent-S0"},
        {"task_id": "trial-0001", "state": "TASK_FAILED",
         "reason": "REASON_COMMAND_EXECUTOR_FAILED", "source": "SOURCE_EXECUTOR",
         "message": "exit 3", "agent_id": "agent-S0"},
    ]
    assert [u["task_id"] for u in store.task_updates()] == ["trial-0001", "trial-0001",
                                                            "appcore-1"]
    assert store.task_updates("appcore-1")[0]["agent_id"] == "S9"


def test_appcore_runs(store: JobStore) -> None:
    store.add_appcore_run(1, "appcore-1", "S0")
    store.update_appcore_run(1, state="TASK_FAILED", ended_at=10.0)
    store.add_appcore_run(2, "appcore-2", "S1")
    store.update_appcore_run(2, address="10.0.0.2:31000", state="ATTACHED")
    runs = store.appcore_runs()
    assert [(r["attempt"], r["task_id"], r["agent_id"], r["state"]) for r in runs] == [
        (1, "appcore-1", "S0", "TASK_FAILED"), (2, "appcore-2", "S1", "ATTACHED")]
    assert runs[0]["ended_at"] == 10.0 and runs[1]["address"] == "10.0.0.2:31000"


def test_concurrent_writers_from_threads_lose_nothing(store: JobStore) -> None:
    store.add_trial(1, {"x": 1}, priority=0)

    def write(offset: int) -> None:
        for step in range(25):
            store.add_report(1, {"m": float(step)}, step=offset + step, final=False,
                             elapsed_seconds=0.0, trial_fields={})
            store.add_task_update(task_status(f"t-{offset}", "TASK_RUNNING"))

    threads = [threading.Thread(target=write, args=(i * 100,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    steps = sorted(r["step"] for r in store.reports(1))
    assert steps == sorted(i * 100 + s for i in range(4) for s in range(25))
    assert len(store.task_updates()) == 100


def test_the_record_is_private_to_its_user(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "job.db")
    try:
        store.set_meta(meta.OUTCOME, "STOPPED")
        for name in ("job.db", "job.db-wal", "job.db-shm"):
            if (tmp_path / name).exists():
                assert (tmp_path / name).stat().st_mode & 0o077 == 0, name
    finally:
        store.close()


def test_samples_are_kept_and_narrowed_by_name_node_trial_and_time(store: JobStore,
                                                                   db_path: Path) -> None:
    store.add_trial(0, {"x": 1}, priority=0)
    samples = [Sample(telemetry.MEM_RSS, "agent-1", 10.0, 1e6, trial=0),
               Sample(telemetry.MEM_RSS, "agent-1", 11.0, 2e6, trial=0),
               Sample(telemetry.CPUS_USER_TIME, "agent-1", 11.0, 0.5, trial=0),
               Sample(telemetry.AGENT_CPU_UTILIZATION, "agent-2", 11.5, 0.25)]
    store.add_samples(samples)
    store.add_samples([])
    assert store.samples() == samples[:2] + [samples[2], samples[3]]
    assert store.samples(data_name=telemetry.MEM_RSS) == samples[:2]
    assert store.samples(node="agent-2") == [samples[3]]
    assert store.samples(trial=0, since=11.0) == samples[1:3]
    store.close()
    assert JobStore(db_path).samples(data_name=telemetry.MEM_RSS, trial=0) == samples[:2]


def test_a_trials_usage_is_kept_with_it_and_unmeasured_is_none(store: JobStore) -> None:
    store.add_trial(0, {"x": 1}, priority=0)
    store.add_trial(1, {"x": 2}, priority=0)
    usage = TrialUsage(peak_rss_bytes=3e8, mean_rss_bytes=2e8, cpu_seconds=4.5)
    store.set_trial_usage(0, usage)
    first, second = store.trials()
    assert first.usage == usage
    assert first.usage.mean_gpu_utilization is None
    assert second.usage == TrialUsage()


def test_the_trials_nothing_was_measured_of_share_one_usage(store: JobStore) -> None:
    # 10,000 rows read (da-job results, the page's mirror) hold one empty usage, not 10,000.
    for number in range(4):
        store.add_trial(number, {"x": number}, priority=0)
    store.set_trial_usage(3, TrialUsage(cpu_seconds=1.0))
    rows = store.trials()
    assert len({id(row.usage) for row in rows[:3]}) == 1 and rows[0].usage == TrialUsage()
    assert rows[3].usage is not rows[0].usage and rows[3].usage.cpu_seconds == 1.0


def test_an_older_store_gains_the_usage_columns(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db = sqlite3.connect(str(db_path))
    db.execute("CREATE TABLE trials (number INTEGER PRIMARY KEY, assignment TEXT NOT NULL, "
               "state TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 0, "
               "task_id TEXT NOT NULL DEFAULT '', agent_id TEXT NOT NULL DEFAULT '', "
               "objective REAL, metrics TEXT NOT NULL DEFAULT '{}', "
               "message TEXT NOT NULL DEFAULT '', training_seconds REAL NOT NULL DEFAULT 0, "
               "final_reported INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL, "
               "started_at REAL, ended_at REAL)")
    db.execute("INSERT INTO trials(number, assignment, state, created_at) "
               "VALUES(0, '{}', 'COMPLETED', 1.0)")
    db.commit()
    db.close()
    (row,) = JobStore(db_path).trials()
    assert row.retries == 0
    assert row.usage == TrialUsage()


def test_a_full_disk_is_one_error_naming_it_and_keeps_what_was_recorded(
        store: JobStore, db_path: Path) -> None:
    from disauto.framework._store import DiskFullError

    store.add_trials([(n, {"x": n / 10}, 0) for n in range(1, 4)])
    store.set_meta(meta.OUTCOME, "")
    # SQLite's own "database or disk is full", as a full file system gives it: no page more.
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]  # noqa: SLF001
    store._db.execute(f"PRAGMA max_page_count = {pages}")  # noqa: SLF001
    with pytest.raises(DiskFullError) as caught:
        store.add_trials([(n, {"x": "y" * 50_000}, 0) for n in range(4, 40)])
    said = str(caught.value)
    assert said.startswith(f"the disk is full: cannot write {db_path} (database or disk is "
                           "full; the disk at /") and "\n" not in said
    assert store.full == said
    with pytest.raises(DiskFullError):  # every later write fails at once, none is tried
        store.set_meta(meta.OUTCOME, "BUDGET_SPENT")
    assert [t.number for t in store.trials()] == [1, 2, 3]  # reads go on
    reopened = JobStore(db_path)  # what was recorded is whole, the failed writes are not in
    try:
        assert [t.assignment for t in reopened.trials()] == [{"x": 0.1}, {"x": 0.2}, {"x": 0.3}]
        assert reopened.get_meta(meta.OUTCOME) == "" and reopened.full == ""
    finally:
        reopened.close()
