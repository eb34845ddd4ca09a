"""One framework a job: an exclusive lock on the job's folder, held by the process that runs it.

``da-submit`` and ``da-job resume`` take it before they touch the job (a resume before it kills
what an old embedded cluster left running) and hold it until their process ends; the kernel
releases it when that process dies, however it dies (``flock`` on ``job.lock``). So of two
resumes started at the same moment exactly one runs, and the other says who holds the job.

A ``--detach`` ed run leaves no moment when nobody holds it: the parent takes the lock before it
starts its child and hands the locked file over (an inherited descriptor shares the lock; its
number travels in ``DISAUTO_JOB_LOCK``), and the child adopts it before anything else. The
holder's pid and host are written in the file, for the message of whoever is refused.

``da-job kill`` and ``da-job update`` of an interrupted job take it too while they change the
record, so that they never write under a framework that is starting.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
import errno
import fcntl
import os
from pathlib import Path
import socket
import time

from disauto.common import paths
from disauto.common.processes import pid_exists


LOCK_ENV = "DISAUTO_JOB_LOCK"
"""``<fd>:<job folder>`` of a lock a ``--detach`` ed child inherits from its parent."""


class JobLockedError(RuntimeError):
    """Another process holds the job's lock (the message names it, in one line)."""


class JobLock:
    """The job's lock, held through an open descriptor of ``job.lock`` in its folder.

    Closing the descriptor (:meth:`close`, or the process's end) releases it unless a child
    holds a copy (:meth:`hand_over`).
    """

    def __init__(self, fd: int, job_dir: Path) -> None:
        self._fd = fd
        self.job_dir = job_dir

    # -- taking it ----------------------------------------------------------------------------

    @classmethod
    def acquire(cls, job_dir: Path) -> JobLock:
        """The lock this process inherited for ``job_dir`` (a ``--detach`` ed run), else the
        lock taken now.

        Raises:
            JobLockedError: another process holds it.
            OSError: the folder cannot hold the lock file.
        """
        inherited = cls.inherited(job_dir)
        return inherited if inherited is not None else cls.take(job_dir)

    @classmethod
    def take(cls, job_dir: Path) -> JobLock:
        """Take the lock of ``job_dir`` (created if need be), without waiting.

        Raises:
            JobLockedError: another process holds it.
            OSError: the folder cannot hold the lock file.
        """
        job_dir.mkdir(parents=True, exist_ok=True)
        path = job_dir / paths.LOCK
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise JobLockedError(f"job {job_dir.name} is run by {holder(job_dir)}") \
                    from None
            raise
        lock = cls(fd, job_dir)
        lock._write_holder()
        return lock

    @classmethod
    def inherited(cls, job_dir: Path) -> JobLock | None:
        """The lock of ``job_dir`` a parent handed to this process, adopted (no process this
        one starts inherits it in turn), or None."""
        fd_text, _, folder = os.environ.get(LOCK_ENV, "").partition(":")
        if not fd_text.isdigit() or Path(folder) != job_dir:
            return None
        fd = int(fd_text)
        try:
            mine, expected = os.fstat(fd), os.stat(job_dir / paths.LOCK)
        except OSError:
            return None
        if (mine.st_dev, mine.st_ino) != (expected.st_dev, expected.st_ino):
            return None
        del os.environ[LOCK_ENV]
        os.set_inheritable(fd, False)
        lock = cls(fd, job_dir)
        lock._write_holder()
        return lock

    # -- handing it over and letting it go ----------------------------------------------------

    def hand_over(self) -> tuple[int, dict[str, str]]:
        """What a child needs to inherit the lock: the descriptor for ``Popen(pass_fds=...)``
        and the environment that names it."""
        return self._fd, {LOCK_ENV: f"{self._fd}:{self.job_dir}"}

    def close(self) -> None:
        """Close this process's descriptor: the lock is released unless a child shares it
        (never unlocked explicitly, which would take it from that child too)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _write_holder(self) -> None:
        # Written over the last holder's line, then cut to length: the file is never empty.
        text = f"{os.getpid()} {socket.gethostname()}\n".encode()
        try:
            os.pwrite(self._fd, text, 0)
            os.ftruncate(self._fd, len(text))
        except OSError:
            pass  # a full disk: the lock holds all the same, its holder goes unnamed


HOLDER_WAIT = 2.0
"""Seconds a refused process waits for the new holder to write its name (it takes the lock,
then writes; until then the file names the previous holder)."""


def holder(job_dir: Path, wait: float = HOLDER_WAIT) -> str:
    """Who holds the lock of ``job_dir``, as the file says: ``process 123 on host``.

    A holder on this host that is not alive is the previous one: the new holder has the lock
    but has not written its name yet, so it is read again for up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        try:
            pid, _, host = (job_dir / paths.LOCK).read_text().strip().partition(" ")
        except OSError:
            pid = host = ""
        here = not host or host == socket.gethostname()
        if pid.isdigit() and (not here or pid_exists(int(pid))):
            return f"process {pid}" + ("" if here else f" on {host}")
        if time.monotonic() >= deadline:
            return "another process (starting)"
        time.sleep(0.05)


@contextmanager
def held(job_dir: Path) -> Iterator[JobLock]:
    """The job's lock for the time of a ``with`` block.

    Raises:
        JobLockedError: another process holds it.
    """
    lock = JobLock.take(job_dir)
    try:
        yield lock
    finally:
        lock.close()
