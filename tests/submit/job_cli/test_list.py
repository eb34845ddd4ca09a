"""``da-job list``: every job under ``$DISAUTO_HOME``, in an 80-column terminal."""

from __future__ import annotations

from collections.abc import Callable
import json
from pathlib import Path
from typing import Any

from disauto.common.trial_state import TrialState
from tests.submit.job_cli.conftest import DaJob
from tests.submit.job_cli.records import JobRecord


def test_the_list_fits_80_columns(da_job: DaJob,
                                  job_record: Callable[..., JobRecord]) -> None:
    job_record("tests-20261126-060756-33fd")
    job_record("tests-of-a-much-longer-name-than-most-20261126-070000-abcd", state="ended",
               outcome="TOO_MANY_FAILURES", message="4 trials failed")
    job_record("tests-20261126-080000-0123", state="interrupted")
    code, out, err = da_job("list")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, out
    assert lines[0].split()[:4] == ["job", "state", "trials", "best"]
    assert lines[2].split()[0] == "tests-20261126-060756-33fd"
    assert lines[3].split()[0].startswith("tests-of-a-much-longer-")  # clipped last
    assert "interrupted" in lines[4] and "ended (too" in lines[3]
    assert "7/20 (1 failed)" in lines[2] and "0.6 (#5)" in lines[2]
    wide = da_job_wide(da_job)
    assert wide[0].split() == ["job", "state", "trials", "best", "started", "duration"]
    assert "tests-of-a-much-longer-name-than-most-20261126-070000-abcd" in wide[3]
    assert "ended (too many failures)" in wide[3]


def da_job_wide(da_job: DaJob) -> list[str]:
    import os

    os.environ["COLUMNS"] = "200"  # the fixture's monkeypatch restores it
    return da_job("list")[1].splitlines()


def test_the_name_is_shown_where_it_does_not_start_the_id(
        da_job: DaJob, job_record: Callable[..., JobRecord]) -> None:
    job_record("tests-20261126-060756-33fd")
    job_record("renamed-20261126-070000-abcd")
    lines = da_job("list")[1].splitlines()
    assert lines[0].split() == ["job", "name", "state", "trials", "best"]
    assert lines[3].split()[:2] == ["renamed-20261126-070000-abcd", "tests"]


def test_a_job_whose_trials_all_failed_says_so(da_job: DaJob,
                                               job_record: Callable[..., JobRecord]) -> None:
    job = job_record("tests-all-failed", state="ended", completed=0)
    for number in range(1, 5):
        job.store.update_trial(number, state=TrialState.FAILED)
    row = da_job("list")[1].splitlines()[2]
    assert "4/20 (4 failed)  -  " in row, row  # and no best
    listed = json.loads(da_job("list", "--json")[1])
    assert listed[0]["done"] == 4 and listed[0]["best"] is None


def test_an_unreadable_record_is_marked_and_the_others_are_listed(
        da_job: DaJob, job_record: Callable[..., JobRecord], home: Any) -> None:
    job_record("tests-20261126-060756-33fd", state="ended")
    broken = job_record("tests-20261126-070000-abcd")
    broken.store.close()
    db = broken.folder / "job.db"
    garbage = b"not a database, whatever it was" * 100
    db.write_bytes(garbage)
    code, out, err = da_job("list")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, out
    assert lines[2].split()[:2] == ["tests-20261126-060756-33fd", "ended"]
    assert lines[3].split()[:2] == ["tests-20261126-070000-abcd", "unreadable"]
    said = " ".join(" ".join(lines[4:]).split())
    assert said.startswith("tests-20261126-070000-abcd: its record /") and said.endswith(
        "/jobs/tests-20261126-070000-abcd/job.db is unreadable: file is not a database (left "
        "as it is)"), said
    rows = json.loads(da_job("list", "--json")[1])
    assert [(row["job_id"], row["state"]) for row in rows] == [
        ("tests-20261126-060756-33fd", "ended"), ("tests-20261126-070000-abcd", "unreadable")]
    code, out, err = da_job("status", "tests-20261126-07")
    assert (code, out) == (1, "") and err == (
        f"da-job: error: the record of job tests-20261126-070000-abcd is unreadable: {db}: "
        "file is not a database (left as it is)\n")
    assert db.read_bytes() == garbage  # left as it was


def test_a_job_of_several_objectives_shows_its_fronts_size_not_a_best(
        da_job: DaJob, home: Path, job_record: Callable[..., JobRecord]) -> None:
    from disauto.framework import _meta as meta
    from tests.framework.webui.records import ParetoRecorded

    ParetoRecorded(home / "jobs" / "job-pareto-20261126-060756-33fd", state=meta.ENDED)
    job_record("tests-20261126-080000-0123", state="ended")
    lines = da_job("list")[1].splitlines()
    assert max(len(line) for line in lines) <= 80
    pareto = next(line for line in lines if line.startswith("job-pareto"))
    assert "front 4" in pareto
    assert "0.6 (#5)" in next(line for line in lines if line.startswith("tests-"))
