"""The typed meta keys of a job record: each value reads back as written, the record keeps the
text other versions read, and a value written badly reads as its key's default."""

from __future__ import annotations

from pathlib import Path
import sqlite3

import pytest

from disauto.framework import _meta as meta
from disauto.framework._store import JobStore
from disauto.framework._store import peek_meta
from disauto.testing.inprocess import job_config


def test_every_key_has_its_own_name() -> None:
    names = [key.name for key in meta.KEYS]
    assert len(names) == len(set(names)) and len(names) > 30
    assert all(not name.startswith(meta.SLOT_EXECUTOR.prefix) for name in names)


def test_values_round_trip_and_keep_the_text_other_versions_read(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "job.db")
    config = job_config(max_trials=3)
    store.set_meta_many({meta.CONFIG: config, meta.PID: 4242, meta.STARTED_AT: 12.5,
                         meta.BIND_ALL: True, meta.FRAMEWORK_REGISTERED: False,
                         meta.AGENT_ENDPOINTS: {"S1": "127.0.0.1:5051/slave(1)"},
                         meta.OFFER_COUNTS: {"offers_seen": 3},
                         meta.SLOT_EXECUTOR.key("job-slot-0"): {"executor_id": {"value": "x"}}})
    assert store.get_meta(meta.CONFIG) == config
    assert store.get_meta(meta.PID) == 4242 and store.get_meta(meta.STARTED_AT) == 12.5
    assert store.get_meta(meta.BIND_ALL) and not store.get_meta(meta.FRAMEWORK_REGISTERED)
    assert store.get_meta(meta.AGENT_ENDPOINTS) == {"S1": "127.0.0.1:5051/slave(1)"}
    assert store.get_meta(meta.OFFER_COUNTS) == {"offers_seen": 3.0}
    assert store.get_meta(meta.SLOT_EXECUTOR.key("job-slot-0")) == {
        "executor_id": {"value": "x"}}
    store.close()
    with sqlite3.connect(tmp_path / "job.db") as db:
        text = dict(db.execute("SELECT key, value FROM meta"))
    assert (text["pid"], text["started_at"], text["bind_all"], text["framework_registered"]) \
        == ("4242", "12.5", "1", "")
    assert text["offer_counts"] == '{"offers_seen": 3}'
    assert text["config"] == config.to_json()


def test_what_is_missing_or_garbled_reads_as_the_default(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "job.db") as db:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.executemany("INSERT INTO meta VALUES (?, ?)", [
            ("pid", "not a pid"), ("started_at", "yesterday"), ("agent_endpoints", "[1, 2]"),
            ("offer_counts", "{broken"), ("local_agents", ""),
            ("slot_executor:s", "nope")])
    recorded = peek_meta(tmp_path / "job.db")
    assert recorded[meta.PID] == 0 and recorded[meta.STARTED_AT] is None
    assert recorded[meta.AGENT_ENDPOINTS] == {} and recorded[meta.OFFER_COUNTS] == {}
    assert recorded[meta.LOCAL_AGENTS] == 1 and recorded[meta.OFFER_POLICY] == "fifo"
    assert recorded[meta.SLOT_EXECUTOR.key("s")] is None and recorded[meta.CONFIG] is None
    assert not recorded.has(meta.LOCAL_AGENTS) and recorded.has(meta.PID)


def test_a_garbled_configuration_is_an_error_not_a_default() -> None:
    with pytest.raises(ValueError):
        meta.JobMeta({"config": "{not json"})[meta.CONFIG]


def test_peeking_changes_nothing_and_an_unreadable_record_is_empty(tmp_path: Path) -> None:
    assert not any(peek_meta(tmp_path / "missing.db").has(key) for key in meta.KEYS)
    assert not (tmp_path / "missing.db").exists()
    store = JobStore(tmp_path / "job.db")
    store.set_meta(meta.WEBUI_URL, "http://h:1/jobs/j/")
    assert peek_meta(tmp_path / "job.db")[meta.WEBUI_URL] == "http://h:1/jobs/j/"
    store.close()


def test_a_value_of_the_wrong_kind_is_refused_before_it_is_written(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "job.db")
    with pytest.raises(TypeError):
        store.set_meta(meta.OUTCOME, 3)  # type: ignore[arg-type]
    assert store.get_meta(meta.OUTCOME) == ""
    store.close()
