"""One slot task's process: the user's command in its own session and process group.

The command runs under ``/bin/sh -c`` in the task's sandbox, with stdout and stderr in files
there. It is its own process group, so a kill reaches every process it started (SIGTERM, a
grace period, SIGKILL). On Linux the shell also gets SIGKILL when the executor's thread that
started it dies (``PR_SET_PDEATHSIG``), so a slot killed with ``kill -9`` leaves no trial
running behind it; what the command starts in sessions of its own escapes that (Mesos' cgroups
catch it on a real agent).
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path
import signal
import subprocess
import sys
import threading
from typing import Any

from disauto.common.task_usage import TaskUsage
from disauto.common.task_usage import from_rusage
from disauto.executor.task_output import TaskOutput


_PR_SET_PDEATHSIG = 1


def _find_prctl() -> Any:
    """libc's ``prctl``, looked up once in the parent (no loader work after fork)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _find_prctl()


def die_with_parent() -> None:
    """In the child before exec: SIGKILL when the executor's thread that forked it dies."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)


def describe_exit(returncode: int) -> str:
    """Mesos' command-executor wording of an exit: ``Command exited with status 3``."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return f"Command terminated with signal {name}"
    return f"Command exited with status {returncode}"


class GroupProcess:
    """A task's process that leads its own process group: how it is waited for differs (a
    child of the executor, or of the slot's pre-imported interpreter), how it is killed not.

    Args:
        pid: the process (and its group's) id.
        sandbox: its working directory.
    """

    def __init__(self, pid: int, sandbox: Path) -> None:
        self.pid = pid
        self.sandbox = sandbox
        self.killed = threading.Event()
        self.usage: TaskUsage | None = None
        """What it used, measured when it was reaped (``os.wait4``); None until then, or
        when it could not be measured."""

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the command; its return code (negative: the signal that ended it).
        Raises ``TimeoutError`` after ``timeout`` seconds."""
        raise NotImplementedError

    def poll(self) -> int | None:
        try:
            return self.wait(timeout=0)
        except TimeoutError:
            return None

    def kill(self, grace: float) -> None:
        """SIGTERM the process group, then SIGKILL it after ``grace`` seconds (at once when the
        command already exited: what it left running in its group goes too)."""
        self.killed.set()
        self._signal(signal.SIGTERM)
        try:
            self.wait(timeout=max(grace, 0.0))
        except TimeoutError:
            pass
        self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        try:
            os.killpg(self.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


class TaskProcess(GroupProcess):
    """The running command of one task, ``/bin/sh -c`` as a child of the executor.

    It is reaped with ``os.wait4`` (on a thread of its own, the only one that waits for it),
    so its exact use is known when it ends (:attr:`GroupProcess.usage`): the shell's and its
    waited-for descendants' CPU seconds and their largest resident set.

    Args:
        command: the shell command.
        env: its whole environment.
        sandbox: its working directory, where ``stdout`` and ``stderr`` are written.
        output: the capped pipes its stdout and stderr go through (drained by the caller once
            it ended); None: straight into the files, uncapped.
    """

    def __init__(self, command: str, env: dict[str, str], sandbox: Path,
                 output: TaskOutput | None = None) -> None:
        with open(sandbox / "stdout", "ab") as out, open(sandbox / "stderr", "ab") as err:
            # The preexec hook only calls prctl (no locks, no allocation worth fearing).
            self._popen = subprocess.Popen(  # noqa: S603 - the user's own launch command
                ["/bin/sh", "-c", command], cwd=sandbox, env=env, stdin=subprocess.DEVNULL,
                stdout=output.fds[0] if output else out,
                stderr=output.fds[1] if output else err, start_new_session=True,
                preexec_fn=die_with_parent,  # noqa: PLW1509 - see above
            )
        if output is not None:
            output.started()
        super().__init__(self._popen.pid, sandbox)
        self._ended = threading.Event()
        self._returncode = 0
        threading.Thread(target=self._reap, name=f"wait4-{self.pid}", daemon=True).start()

    def _reap(self) -> None:
        while True:
            try:
                _, status, rusage = os.wait4(self.pid, 0)
                break
            except InterruptedError:
                continue
            except ChildProcessError:  # reaped elsewhere: nothing to measure
                status, rusage = 0, None
                break
        self._returncode = os.waitstatus_to_exitcode(status) if rusage is not None else 0
        self._popen.returncode = self._returncode  # Popen must not wait for it again
        if rusage is not None:
            self.usage = from_rusage(rusage)
        self._ended.set()

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise TimeoutError(f"process {self.pid} still runs")
        return self._returncode
