"""The job's lock (submit/job_lock.py): one holder, named to whoever is refused, handed over
to a child without a moment unheld."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from disauto.submit.job_lock import LOCK_ENV
from disauto.submit.job_lock import JobLock
from disauto.submit.job_lock import JobLockedError
from disauto.submit.job_lock import held


def test_a_held_lock_refuses_a_second_taker_naming_its_holder(tmp_path: Path) -> None:
    job_dir = tmp_path / "job-1"
    lock = JobLock.take(job_dir)
    with pytest.raises(JobLockedError, match=rf"^job job-1 is run by process {os.getpid()}$"):
        JobLock.take(job_dir)
    lock.close()
    lock.close()  # closing twice is harmless
    with held(job_dir):  # free again
        with pytest.raises(JobLockedError):
            JobLock.take(job_dir)
    JobLock.take(job_dir).close()


def test_a_handed_over_lock_stays_held_until_its_last_holder_lets_go(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job_dir = tmp_path / "job-2"
    parent = JobLock.take(job_dir)
    fd, env = parent.hand_over()
    copy = os.dup(fd)  # what the child inherits: the same open file, so the same lock
    monkeypatch.setenv(LOCK_ENV, f"{copy}:{job_dir}")
    parent.close()  # the parent exits; the child holds it
    with pytest.raises(JobLockedError):
        JobLock.take(job_dir)
    child = JobLock.acquire(job_dir)
    assert LOCK_ENV not in os.environ and not os.get_inheritable(copy)
    with pytest.raises(JobLockedError):
        JobLock.take(job_dir)
    child.close()
    JobLock.take(job_dir).close()
    assert set(env) == {LOCK_ENV}


def test_an_inherited_lock_of_another_folder_is_not_adopted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = JobLock.take(tmp_path / "other")
    fd, _ = other.hand_over()
    monkeypatch.setenv(LOCK_ENV, f"{fd}:{tmp_path / 'mine'}")
    (tmp_path / "mine").mkdir()
    assert JobLock.inherited(tmp_path / "mine") is None
    monkeypatch.setenv(LOCK_ENV, f"{fd}:{tmp_path / 'mine'}")
    (tmp_path / "mine" / "job.lock").write_text("")  # a lock file, but not the one fd holds
    assert JobLock.inherited(tmp_path / "mine") is None
    mine = JobLock.acquire(tmp_path / "mine")  # taken, not inherited
    mine.close()
    other.close()


def test_a_refused_taker_waits_for_the_new_holder_to_write_its_name(tmp_path: Path) -> None:
    """Between taking the lock and writing its name the file still names the previous holder
    (a dead process): the refused one reads again until the live holder is there."""
    import fcntl
    import threading

    job_dir = tmp_path / "job-3"
    job_dir.mkdir()
    gone = (1 << 22) + 7  # above Linux's largest pid: no such process
    path = job_dir / "job.lock"
    path.write_text(f"{gone} {os.uname().nodename}\n")  # the previous holder, dead
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # the new holder has the lock, not yet its name
    writer = threading.Timer(0.3, lambda: path.write_text(f"{os.getpid()} x\n"))
    writer.start()
    with pytest.raises(JobLockedError, match=rf"is run by process {os.getpid()} on x$"):
        JobLock.take(job_dir)
    writer.join()
    path.write_text(f"{gone} {os.uname().nodename}\n")  # it never writes: said so, in time
    with pytest.raises(JobLockedError, match=r"is run by another process \(starting\)$"):
        JobLock.take(job_dir)
    os.close(fd)
