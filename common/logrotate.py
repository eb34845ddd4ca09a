"""Capped, rotated sandbox logs: what Mesos' ``LogrotateContainerLogger`` does for a task.

Mesos (src/slave/container_loggers/lib_logrotate.hpp, logrotate.cpp, docs/logging.md) pipes a
container's stdout and stderr into a companion process that appends to the sandbox's
``stdout``/``stderr`` and, before a write would take the file past ``max_stdout_size`` /
``max_stderr_size`` (default 10 MB, at least one memory page), has ``logrotate`` rename it
``stdout.1`` (older ones ``stdout.2``, ...), keeping as many as the ``rotate N`` of
``logrotate_stdout_options`` says (``logrotate``'s own default is 0: the old file is deleted).

Here a thread per stream does the same without ``logrotate``: the task writes into a pipe, so a
task printing as fast as it can is never blocked by more than the pipe's buffer, and each file
stays within its cap. Only the ``rotate N`` option is understood; any other is refused.

Shared by the embedded agent (command and container tasks) and the warm slots' executor (its
tasks' ``stdout``/``stderr``, the same caps and file names), which hands a task that opens its
files itself (a forked trial, a ``docker exec``) a named pipe instead (:meth:`LogPump.fifo`).
"""

from __future__ import annotations

from dataclasses import dataclass
import logging
import os
from pathlib import Path
import threading


logger = logging.getLogger(__name__)

DEFAULT_MAX_SIZE = 10 * 1024 * 1024
"""Mesos' default ``max_stdout_size``/``max_stderr_size``: 10 MB."""
DEFAULT_OPTIONS = "rotate 1"
"""The embedded agent keeps one rotated file (``stdout.1``) besides ``stdout``, so the last
``max_size`` bytes are always there (``logrotate``'s own default, 0, drops them at a rotation)."""
MIN_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
"""Mesos refuses sizes under one memory page."""
UNCAPPED = 2**62
"""A size no log reaches: no rotation (Mesos' default sandbox logger)."""
_READ_SIZE = 1024 * 1024
_PIPE_SIZE = 1024 * 1024
"""Asked of the kernel for each pipe (``F_SETPIPE_SZ``; an unprivileged process gets up to
``/proc/sys/fs/pipe-max-size``, 1 MiB by default): fewer, larger reads for a task that floods."""
_F_SETPIPE_SZ = 1031


class LogRotateError(ValueError):
    """A bad size or options string; the message is one line."""


@dataclass(frozen=True)
class Rotation:
    """How one stream is capped: ``max_size`` bytes per file, ``rotate`` older files kept."""

    max_size: int = DEFAULT_MAX_SIZE
    rotate: int = 1

    def __post_init__(self) -> None:
        if self.max_size < MIN_SIZE:
            raise LogRotateError(
                f"max size {self.max_size} is below one memory page ({MIN_SIZE} bytes)")
        if self.rotate < 0:
            raise LogRotateError(f"rotate {self.rotate} must be >= 0")

    @property
    def bound(self) -> int:
        """The most bytes the stream's files ever hold together."""
        return self.max_size * (self.rotate + 1)


def parse_options(options: str) -> int:
    """The ``rotate N`` count of a ``logrotate_*_options`` string ("" means logrotate's 0).

    Raises:
        LogRotateError: an option other than ``rotate N``.
    """
    rotate = 0
    for line in options.replace(";", "\n").splitlines():
        words = line.split()
        if not words:
            continue
        if len(words) != 2 or words[0] != "rotate" or not words[1].isdigit():
            raise LogRotateError(
                f"unsupported logrotate option {line.strip()!r}: only 'rotate N' is understood")
        rotate = int(words[1])
    return rotate


@dataclass(frozen=True)
class SandboxLogging:
    """The agent's caps for a task's ``stdout`` and ``stderr`` (Mesos' module parameters)."""

    stdout: Rotation = Rotation()
    stderr: Rotation = Rotation()

    @classmethod
    def from_flags(cls, max_stdout_size: int = DEFAULT_MAX_SIZE,
                   stdout_options: str = DEFAULT_OPTIONS,
                   max_stderr_size: int = DEFAULT_MAX_SIZE,
                   stderr_options: str = DEFAULT_OPTIONS) -> SandboxLogging:
        """From Mesos-named settings.

        Raises:
            LogRotateError: a size under one page or an unsupported option.
        """
        return cls(Rotation(max_stdout_size, parse_options(stdout_options)),
                   Rotation(max_stderr_size, parse_options(stderr_options)))


DEFAULT_SANDBOX_LOGGING = SandboxLogging()
"""10 MB per file and one rotated file kept, for stdout and for stderr."""


class RotatingFile:
    """Appends to ``path``, renaming it ``path.1`` (``.1`` to ``.2``, ...) before it would pass
    its cap; files beyond ``rotate`` are deleted. Not thread-safe: one writer per stream."""

    def __init__(self, path: Path, rotation: Rotation) -> None:
        self.path = path
        self.rotation = rotation
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self._written = os.fstat(self._fd).st_size

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            room = self.rotation.max_size - self._written
            if room <= 0:
                self._rotate()
                continue
            written = os.write(self._fd, view[:room])
            self._written += written
            view = view[written:]

    def _rotate(self) -> None:
        os.close(self._fd)
        keep = self.rotation.rotate
        if not keep:
            _unlink(self.path)
        for number in range(keep, 0, -1):  # os.replace drops the oldest kept
            source = self.path if number == 1 else self._numbered(number - 1)
            if source.exists():
                os.replace(source, self._numbered(number))
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                           0o644)
        self._written = 0

    def _numbered(self, number: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{number}")

    def close(self) -> None:
        os.close(self._fd)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


class LogPump:
    """A pipe whose read end a thread copies into a :class:`RotatingFile` until EOF.

    Hand :attr:`write_fd` to the child, then call :meth:`started` (which closes the agent's copy
    of it), and :meth:`drain` once the child exited.
    """

    def __init__(self, path: Path, rotation: Rotation, *, fifo: Path | None = None) -> None:
        self._fifo = fifo
        if fifo is None:
            self._read_fd, self.write_fd = os.pipe()
        else:
            # Opened for reading first (without waiting for a writer), then for writing: the
            # pump's own write end keeps the pipe open until drain(), so it reads to the end
            # of what every writer wrote, however late the task opens it.
            os.mkfifo(fifo, 0o622)
            self._read_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            self.write_fd = os.open(fifo, os.O_WRONLY | os.O_CLOEXEC)
            os.set_blocking(self._read_fd, True)
        os.set_inheritable(self._read_fd, False)
        _grow(self._read_fd)
        self._file = RotatingFile(path, rotation)
        self._thread = threading.Thread(target=self._copy, name=f"log-{path.name}", daemon=True)
        self._thread.start()

    @classmethod
    def fifo(cls, path: Path, rotation: Rotation, fifo: Path) -> LogPump:
        """A pump that reads the named pipe ``fifo`` (made here), for a task that opens its
        output by path; :meth:`drain` once it exited (which removes ``fifo``)."""
        return cls(path, rotation, fifo=fifo)

    def _copy(self) -> None:
        try:
            while True:
                data = os.read(self._read_fd, _READ_SIZE)
                if not data:
                    return
                self._file.write(data)
        except OSError as exc:
            logger.warning("Sandbox log %s: %s", self._file.path, exc)
        finally:
            os.close(self._read_fd)
            self._file.close()

    def started(self) -> None:
        """The child holds the write end now (or never will): close the agent's copy."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def drain(self, timeout: float = 5.0) -> bool:
        """Wait until everything the task wrote is in the files (EOF); whether it was.

        A process the task left behind that still holds the pipe keeps it open: after
        ``timeout`` the copy goes on in the background.
        """
        self.started()
        self._thread.join(timeout)
        if self._fifo is not None:
            _unlink(self._fifo)
        return not self._thread.is_alive()


def _grow(fd: int) -> None:
    """Ask for a larger pipe buffer (best effort: the default one works, only slower)."""
    try:
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_SIZE)
    except (ImportError, OSError):
        pass
