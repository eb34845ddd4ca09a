"""``da-job import``: a job exported from one ``$DISAUTO_HOME`` (a real job, run on the
embedded cluster) made a job of another, as another machine would: ``da-job status``,
``results``, ``logs``, ``da-job ui`` and ``load_job`` read it there as they read it where it ran,
trial by trial. A job id already there, or a damaged archive, is one line and changes
nothing."""

from __future__ import annotations

import io
import json
from pathlib import Path
import tarfile

import pytest

from disauto.submit.api.record import load_job
from disauto.submit.ui import RecordedJobs
from tests.submit.job_cli.conftest import RUNNER
from tests.submit.job_cli.conftest import DaJob
from tests.submit.job_cli.conftest import RealJobs


pytestmark = [pytest.mark.integration, pytest.mark.slow]  # real jobs on the embedded cluster

REAL_JOBS = (("--app-name", "keep", "--trail-steps", "5", "--seed", "5"),)


@pytest.fixture
def exported(real_jobs: RealJobs, da_job: DaJob, tmp_path: Path,
             monkeypatch: pytest.MonkeyPatch) -> Path:
    """The real job exported from its home to an archive in ``tmp_path``."""
    monkeypatch.setenv("DISAUTO_HOME", str(real_jobs.home))
    archive = tmp_path / "keep.tar.gz"
    code, out, err = da_job("export", real_jobs.ids[0], "-o", str(archive))
    assert (code, err) == (0, ""), out
    return archive


def test_an_imported_job_reads_as_where_it_ran_trial_by_trial(
        real_jobs: RealJobs, exported: Path, da_job: DaJob, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    (job_id,) = real_jobs.ids
    there = tmp_path / "elsewhere"
    original = {command: da_job(*command.split(), job_id)[1] for command in
                ("status --json", "results --format json", "results --format csv", "results",
                 "logs")}
    reference = load_job(job_id)

    monkeypatch.setenv("DISAUTO_HOME", str(there))
    code, out, err = da_job("import", str(exported))
    assert (code, err) == (0, "")
    said = " ".join(out.split())
    assert said.startswith(f"da-job: imported job {job_id} (exported on ")
    assert said.endswith(f"/jobs/{job_id}; da-job status {job_id} shows it")
    assert max(len(line) for line in out.splitlines()) <= 80

    for command, before in original.items():
        code, now, err = da_job(*command.split(), job_id)
        assert (code, err) == (0, ""), command
        if command == "status --json":
            before_status, now_status = json.loads(before), json.loads(now)
            assert now_status.pop("folder") == str(there / "jobs" / job_id)
            before_status.pop("folder")
            assert now_status == before_status
        elif command == "results":
            assert now == before
        else:
            assert now == before, command
    imported = load_job(job_id)
    assert imported.folder == there / "jobs" / job_id
    assert len(imported.trials) == 5 and imported.state == "ended"
    for mine, theirs in zip(imported.trials, reference.trials, strict=True):
        assert mine == theirs
    assert (imported.best, imported.pareto_front, imported.exit_status) == (
        reference.best, reference.pareto_front, reference.exit_status)

    # da-job ui's page of it, and the files that travelled with it.
    record = RecordedJobs(there / "jobs")[job_id].record()
    assert record.state == "ended" and len(record.trials) == 5
    folder = there / "jobs" / job_id
    assert (folder / "shipped" / "runner.py").read_text() == RUNNER
    assert (folder / "report.html").stat().st_size > 100_000
    provenance = json.loads((folder / "imported.json").read_text())
    assert provenance["job_id"] == job_id and provenance["archive"] == str(exported)
    assert (folder.stat().st_mode & 0o777, (folder / "job.db").stat().st_mode & 0o777) == (
        0o700, 0o600)
    assert not (folder / "job.token").exists() and not (folder / "cluster").exists()
    assert sorted(p.name for p in (there / "jobs").iterdir()) == [job_id]

    # Parquet of the imported job: the same rows as where it ran, and as the CSV.
    code, _, err = da_job("results", job_id, "--format", "parquet", "-o",
                          str(tmp_path / "there.parquet"))
    assert (code, err) == (0, "")
    monkeypatch.setenv("DISAUTO_HOME", str(real_jobs.home))
    da_job("results", job_id, "--format", "parquet", "-o", str(tmp_path / "here.parquet"))
    from pyarrow import parquet

    there_rows = parquet.read_table(tmp_path / "there.parquet").to_pylist()
    assert there_rows == parquet.read_table(tmp_path / "here.parquet").to_pylist()
    assert [row["trial"] for row in there_rows] == [
        int(line.split(",")[0]) for line in original["results --format csv"].splitlines()[1:]]
    assert reference.best is not None and there_rows[0]["trial"] == reference.best.number
    assert (there_rows[0]["x"], there_rows[0]["n"]) == (reference.best.assignment["x"],
                                                        reference.best.assignment["n"])


def test_a_job_already_here_is_one_line_and_nothing_is_overwritten(
        real_jobs: RealJobs, exported: Path, da_job: DaJob, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    (job_id,) = real_jobs.ids
    folder = real_jobs.home / "jobs" / job_id
    before = {p: p.stat().st_mtime_ns for p in folder.rglob("*")}
    code, out, err = da_job("import", str(exported))  # into the home it came from
    assert (code, out) == (1, "")
    assert err == (f"da-job: error: job {job_id} already exists in {real_jobs.home}/jobs; "
                   f"nothing was imported (da-job rm {job_id} removes it first)\n")
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*")} == before
    assert not [p for p in (real_jobs.home / "jobs").iterdir() if p.name.startswith(".")]


def damaged_copies(archive: Path, tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Archives damaged in each way an import must catch, and what its one line says of it."""
    data = archive.read_bytes()
    tmp_path.mkdir()
    made: dict[str, tuple[Path, str]] = {}

    def put(name: str, body: bytes, why: str) -> None:
        path = tmp_path / f"{name}.tar.gz"
        path.write_bytes(body)
        made[name] = (path, why)

    put("truncated", data[: len(data) // 2],
        "compressed file ended before the end-of-stream marker was reached")
    flipped = bytearray(data)
    flipped[len(data) // 3] ^= 0xFF
    put("flipped", bytes(flipped), "")  # gzip's checksum or its stream: either is damage
    put("not-gzip", b"hello\n" * 10, "not a gzipped file")
    members = tmp_path / "members"
    with tarfile.open(archive) as tar:
        tar.extractall(members, filter="data")
    (job_id,) = [p.name for p in members.iterdir() if p.is_dir()]

    def repack(name: str, why: str, change: str) -> None:
        path = tmp_path / f"{name}.tar.gz"
        with tarfile.open(path, "w:gz") as tar:
            for member in sorted(members.rglob("*")):
                relative = member.relative_to(members).as_posix()
                if member.is_file() and not (change == "no-manifest"
                                             and relative == "disauto-export.json"):
                    body = member.read_bytes()
                    if change == "edited" and relative == f"{job_id}/results.json":
                        body = body.replace(b'"schema": 1', b'"schema": 2')
                    info = tarfile.TarInfo(relative)
                    info.size = len(body)
                    tar.addfile(info, io.BytesIO(body))
            if change == "extra":
                info = tarfile.TarInfo(f"{job_id}/logs/planted.stdout")
                tar.addfile(info, io.BytesIO(b""))
            if change == "escape":
                info = tarfile.TarInfo("../escaped.txt")
                tar.addfile(info, io.BytesIO(b""))
        made[name] = (path, why)

    repack("edited", f"{job_id}/results.json differs from what was exported", "edited")
    repack("no-manifest", "no disauto-export.json", "no-manifest")
    repack("extra", f"{job_id}/logs/planted.stdout is not in its manifest", "extra")
    repack("escape", "'../escaped.txt' would be extracted to", "escape")
    return made


def test_a_damaged_archive_is_one_line_and_leaves_nothing(
        exported: Path, da_job: DaJob, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "fresh"
    monkeypatch.setenv("DISAUTO_HOME", str(home))
    for name, (path, why) in damaged_copies(exported, tmp_path / "damaged").items():
        code, out, err = da_job("import", str(path))
        assert (code, out) == (1, ""), name
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert err.startswith(f"da-job: error: {path} is damaged or not a DisAuto job export ("),\
            err
        assert err.endswith("); nothing was imported\n") and why in err, (name, err)
        assert list((home / "jobs").iterdir()) == [], name
    assert not (tmp_path / "damaged" / "escaped.txt").exists()
    assert not (tmp_path / "escaped.txt").exists()
    code, _, err = da_job("import", str(tmp_path / "nothing.tar.gz"))
    assert (code, err) == (1, f"da-job: error: no archive {tmp_path}/nothing.tar.gz\n")
