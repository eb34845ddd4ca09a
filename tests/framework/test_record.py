"""A job's record through its one door, JobRecord: what one opening writes another reads (the
meta, the spec, trials, results), the control channel through it, a read-only peek that creates
nothing, and a record that cannot be opened said in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.common import paths
from disauto.common.trial_state import TrialState
from disauto.framework.control import Answer
from disauto.framework.control import KillJob
from disauto.framework.record import JobRecord
from disauto.framework.record import StoreError
from disauto.framework.record import meta
from disauto.testing.inprocess import job_config


def test_what_one_opening_writes_another_reads(tmp_path: Path) -> None:
    spec = job_config(max_trials=4, parallelism=2)
    with JobRecord.in_folder(tmp_path / "job") as writing:
        assert writing.path == tmp_path / "job" / paths.JOB_DB
        assert writing.spec() is None
        writing.write({meta.CONFIG: spec, meta.JOB_ID: "job-1", meta.STATE: meta.ENDED})
        writing.store.add_trials([(0, {"x": 0.5}, 0), (1, {"x": 0.25}, 0)])
        writing.store.add_report(0, {"loss": 0.3}, 1, final=True, elapsed_seconds=2.0,
                                 trial_fields={})
        writing.update_trial(1, state=TrialState.KILLED, message="killed")
    with JobRecord.open(tmp_path / "job" / paths.JOB_DB) as reading:
        recorded = reading.meta()
        assert recorded[meta.JOB_ID] == "job-1" and recorded[meta.STATE] == meta.ENDED
        assert reading.spec() == spec
        assert [(t.number, t.assignment, t.state) for t in reading.trials()] == [
            (0, {"x": 0.5}, TrialState.PENDING), (1, {"x": 0.25}, TrialState.KILLED)]
        assert [(r["trial"], r["metrics"]) for r in reading.results()] == [(0, {"loss": 0.3})]
        assert reading.results(1) == []
        assert reading.appcore_runs() == []


def test_the_control_channel_runs_through_the_record(tmp_path: Path) -> None:
    with JobRecord.in_folder(tmp_path) as asking, JobRecord.in_folder(tmp_path) as framework:
        asked = asking.control().ask(KillJob("from da-job"))
        [request] = framework.control().unanswered()
        assert (request.id, request.request) == (asked, KillJob("from da-job"))
        framework.control().answer(asked, Answer(True, "killing"))
        assert asking.control().answer_of(asked) == Answer(True, "killing")


def test_a_peek_reads_without_creating_anything(tmp_path: Path) -> None:
    missing = tmp_path / "none" / paths.JOB_DB
    assert not JobRecord.peek(missing).has(meta.JOB_ID)
    assert not missing.parent.exists()
    with JobRecord.open(tmp_path / paths.JOB_DB) as record:
        record.write({meta.JOB_ID: "peeked"})
    assert JobRecord.peek(tmp_path / paths.JOB_DB)[meta.JOB_ID] == "peeked"


def test_a_record_that_cannot_be_opened_is_one_line(tmp_path: Path) -> None:
    (tmp_path / paths.JOB_DB).write_bytes(b"not a database, " * 100)
    with pytest.raises(StoreError) as raised:
        JobRecord.in_folder(tmp_path)
    assert "\n" not in str(raised.value) and str(tmp_path / paths.JOB_DB) in str(raised.value)
