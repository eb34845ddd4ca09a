"""``da-job export``: an ended job (a real one, run on the embedded cluster) as one archive of
its record, results, report, logs and shipped files, with a manifest of each; what would let
a copy act as the job (its token, lock, TLS key) and its cluster's sandboxes stay out. A job
that has not ended, or an archive that exists, is one line and writes nothing."""

from __future__ import annotations

from collections.abc import Callable
import hashlib
import json
from pathlib import Path
import sqlite3
import tarfile

import pytest

from disauto.submit.archive import MANIFEST
from tests.submit.job_cli.conftest import RUNNER
from tests.submit.job_cli.conftest import DaJob
from tests.submit.job_cli.conftest import RealJobs
from tests.submit.job_cli.records import JobRecord


REAL_JOBS = (("--app-name", "kept", "--trail-steps", "3", "--seed", "3"),)


@pytest.mark.integration
@pytest.mark.slow  # a real job on the embedded cluster
def test_an_ended_job_is_one_archive_with_a_manifest_of_every_file(
        real_jobs: RealJobs, da_job: DaJob, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    (job_id,) = real_jobs.ids
    monkeypatch.setenv("DISAUTO_HOME", str(real_jobs.home))
    monkeypatch.chdir(tmp_path)
    code, out, err = da_job("export", job_id[:8])  # a unique start of its id
    assert (code, err) == (0, "")
    archive = tmp_path / f"{job_id}.tar.gz"  # the default: JOB.tar.gz here
    said = " ".join(out.split())
    assert said.startswith(f"da-job: job {job_id} exported to ")
    assert said.endswith("; its --files: runner.py)") and f"{job_id}.tar.gz (" in said
    assert max(len(line) for line in out.splitlines()) <= 80

    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
        manifest = json.loads(tar.extractfile(MANIFEST).read())  # type: ignore[union-attr]
        tar.extractall(tmp_path / "out", filter="data")
    names = set(members) - {MANIFEST}
    assert {f"{job_id}/{name}" for name in (
        "job.db", "results.json", "results.csv", "report.html", "da-submit.log",
        "logs/trial-0001.stdout", "logs/appcore-1.stderr", "shipped/runner.py")} <= names
    assert not [n for n in names if n.split("/")[1] in ("job.token", "job.lock", "cluster",
                                                         "tls", "job.db-wal", "job.db-shm")]
    assert (manifest["format"], manifest["job_id"], manifest["app_name"]) == (1, job_id, "kept")
    assert manifest["outcome"] == "BUDGET_SPENT"
    assert manifest["shipped"] == [str(real_jobs.workdir / "runner.py")]
    assert {entry["name"] for entry in manifest["files"]} == names
    for entry in manifest["files"]:
        body = (tmp_path / "out" / entry["name"]).read_bytes()
        assert (len(body), hashlib.sha256(body).hexdigest()) == (entry["size"],
                                                                  entry["sha256"])
    assert any("cluster/" in note for note in manifest["left_out"])
    assert members[f"{job_id}/job.db"].mode == 0o600
    assert (tmp_path / "out" / job_id / "shipped" / "runner.py").read_text() == RUNNER
    assert "trial with x=" in (tmp_path / "out" / job_id / "logs" / "trial-0001.stdout"
                               ).read_text()
    with sqlite3.connect(tmp_path / "out" / job_id / "job.db") as db:  # whole, WAL folded in
        assert db.execute("SELECT COUNT(*) FROM trials").fetchone() == (3,)

    # Never over a file: the archive is there already.
    before = archive.read_bytes()
    code, out, err = da_job("export", job_id, "-o", str(archive))
    assert (code, out) == (2, "")
    assert err == (f"da-job: error: {archive} exists; give another -o FILE (nothing is "
                   "overwritten)\n")
    assert archive.read_bytes() == before


@pytest.mark.parametrize(("state", "why"), [
    ("running", "it is running: wait for its end, or da-job kill job-a"),
    ("interrupted", "it is interrupted: da-job resume job-a carries it on, da-job kill job-a "
                    "closes its record"),
])
def test_a_job_that_has_not_ended_is_not_exported(
        da_job: DaJob, job_record: Callable[..., JobRecord], tmp_path: Path,
        state: str, why: str) -> None:
    job_record("job-a", state=state)
    target = tmp_path / "a.tar.gz"
    assert da_job("export", "job-a", "-o", str(target)) == (
        2, "", f"da-job: error: job job-a has not ended ({why}); then export it\n")
    assert not target.exists() and [p.name for p in tmp_path.iterdir()] == ["home"]


def test_bad_places_and_jobs_are_one_line(da_job: DaJob,
                                          job_record: Callable[..., JobRecord],
                                          tmp_path: Path) -> None:
    job_record("job-a", state="ended")
    assert da_job("export", "job-a", "-o", str(tmp_path / "no" / "a.tar.gz")) == (
        2, "", f"da-job: error: no folder {tmp_path}/no for a.tar.gz\n")
    assert da_job("export", "nothing") == (
        2, "", f"da-job: error: no job 'nothing' under {tmp_path}/home/jobs (da-job list "
               "shows them)\n")
