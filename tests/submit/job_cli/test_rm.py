"""``da-job rm``: ended jobs' folders removed for good (a real job's, its embedded cluster's
sandboxes with it); every job named checked first, so a running, interrupted or unknown one
removes nothing; asked on a terminal, refused without one unless ``--yes``."""

from __future__ import annotations

from collections.abc import Callable
import io
from pathlib import Path
import sys

import pytest

from disauto.submit.job_lock import JobLock
from tests.submit.job_cli.conftest import DaJob
from tests.submit.job_cli.conftest import RealJobs
from tests.submit.job_cli.records import JobRecord


REAL_JOBS = (("--app-name", "gone", "--trail-steps", "2", "--seed", "1"),
             ("--app-name", "stays", "--trail-steps", "2", "--seed", "2"))


class Terminal(io.StringIO):
    """stdin as a terminal that answers ``answer``."""

    def isatty(self) -> bool:
        return True


def jobs_in(home: Path) -> list[str]:
    return sorted(p.name for p in (home / "jobs").iterdir())


@pytest.mark.integration
@pytest.mark.slow  # real jobs on the embedded cluster
def test_a_real_ended_job_is_removed_whole_and_the_others_stay(
        real_jobs: RealJobs, da_job: DaJob, monkeypatch: pytest.MonkeyPatch) -> None:
    gone, stays = real_jobs.ids
    monkeypatch.setenv("DISAUTO_HOME", str(real_jobs.home))
    assert (real_jobs.home / "jobs" / gone / "cluster").is_dir()
    assert da_job("rm", gone, "--yes") == (0, f"da-job: removed job {gone}\n", "")
    assert jobs_in(real_jobs.home) == [stays]
    code, out, _ = da_job("list")
    assert code == 0 and gone not in out and stays in out
    assert da_job("status", gone)[0] == 2


def test_every_job_is_checked_before_any_is_removed(
        da_job: DaJob, job_record: Callable[..., JobRecord], home: Path) -> None:
    job_record("job-a", state="ended")
    job_record("job-run", state="running")
    job_record("job-int", state="interrupted")
    assert da_job("rm", "job-a", "job-run", "--yes") == (
        2, "", "da-job: error: job job-run is running: da-job kill job-run ends it first; "
               "nothing was removed\n")
    assert da_job("rm", "job-a", "job-int", "--yes") == (
        2, "", "da-job: error: job job-int is interrupted (its tasks may still run): da-job "
               "resume job-int carries it on, da-job kill job-int closes its record; nothing "
               "was removed\n")
    assert da_job("rm", "job-a", "nothing", "--yes")[2] == (
        f"da-job: error: no job 'nothing' under {home}/jobs (da-job list shows them)\n")
    assert jobs_in(home) == ["job-a", "job-int", "job-run"]
    # The same job twice (an id and a start of it) is removed once.
    assert da_job("rm", "job-a", "job-", "-y")[2].startswith("da-job: error: job id 'job-' is "
                                                             "ambiguous")
    assert da_job("rm", "job-a", "job-a", "-y") == (0, "da-job: removed job job-a\n", "")
    assert jobs_in(home) == ["job-int", "job-run"]


def test_it_asks_on_a_terminal_and_needs_yes_without_one(
        da_job: DaJob, job_record: Callable[..., JobRecord], home: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    job_record("job-a", state="ended")
    job_record("job-b", state="ended")
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # a pipe: never asked
    assert da_job("rm", "job-a") == (
        2, "", "da-job: error: da-job rm asks before it removes, and stdin is no terminal: "
               "give --yes to remove without asking\n")
    for answer in ("\n", "n\n", "", "yes please\n"):
        monkeypatch.setattr(sys, "stdin", Terminal(answer))
        code, out, err = da_job("rm", "job-a", "job-b")
        assert (code, err) == (0, "") and out.endswith("da-job: nothing removed\n"), answer
    assert jobs_in(home) == ["job-a", "job-b"]
    monkeypatch.setattr(sys, "stdin", Terminal("Y\n"))
    code, out, err = da_job("rm", "job-a", "job-b")
    lines = out.splitlines()
    said = " ".join(out.split())
    assert said.startswith("job-a: ended (budget spent), 7 trials, /tmp/…/")
    assert "/home/jobs/job-a job-b: ended (budget spent), 7 trials, /tmp/…/" in said
    assert lines[-2] == ("da-job: remove these 2 jobs and their folders for good? [y/N] "
                         "da-job: removed job job-a")
    assert lines[-1] == "da-job: removed job job-b"
    assert max(len(line) for line in lines[:-2]) <= 80  # on a terminal the answer ends a line
    assert jobs_in(home) == []


def test_a_job_whose_lock_is_held_is_not_removed(
        da_job: DaJob, job_record: Callable[..., JobRecord], home: Path) -> None:
    job = job_record("job-a", state="ended")
    lock = JobLock.take(job.folder)  # a da-job resume that finishes it, say
    try:
        code, out, err = da_job("rm", "job-a", "--yes")
    finally:
        lock.close()
    assert (code, out) == (2, "")
    assert err.startswith("da-job: error: job job-a is run by process ")
    assert err.endswith("; job job-a was not removed\n")
    assert jobs_in(home) == ["job-a"] and (job.folder / "job.db").is_file()
