"""What an embedded cluster's tasks do when the process that runs the cluster dies.

A Mesos agent that dies leaves its tasks to its next incarnation (agent recovery, checkpointing);
the embedded agents have no next incarnation: they live and die with their process (the
``da-submit --master local`` job or the ``da-cluster`` command). Without this module a ``kill -9``
of that process left every task it had started running with no agent, no master and no one to
report to (an orphaned AppCore still attached to a framework that carries on elsewhere, trials
holding memory and GPUs).

So a cluster starts one small *reaper* process, in a session of its own (a Ctrl-C in the terminal
does not reach it), with a pipe from the cluster's process as its standard input. The write end
stays in the cluster's process alone (pipes are not inherited by tasks), so the reaper reads end
of file exactly when that process is gone, whichever way it died. It then kills every process
whose environment names a sandbox under the cluster's work dir (``MESOS_SANDBOX``, set for every
command task and inherited by everything a task starts), and exits. A cluster that stops normally
has killed its tasks already and tells the reaper to exit without a sweep.

Container tasks are not swept here: their containers carry their agent's owner label and are
removed by the next embedded agent that starts on the same Docker engine
(``DockerContainerizer.reap_orphans``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
import signal
import subprocess
import sys
from typing import IO

from disauto.localmesos.containerizer import cgroups
from disauto.localmesos.containerizer import cpu_quota


logger = logging.getLogger(__name__)

SANDBOX_VARIABLE = "MESOS_SANDBOX"
QUIT = b"quit\n"
"""What a cluster that stops normally writes before closing the pipe: exit without a sweep."""


def processes_under(work_dir: Path) -> list[int]:
    """Pids of this user's processes whose ``MESOS_SANDBOX`` lies under ``work_dir``."""
    prefix = f"{SANDBOX_VARIABLE}={str(work_dir).rstrip('/')}/".encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as handle:
                variables = handle.read().split(b"\0")
        except OSError:
            continue  # gone meanwhile, or another user's
        if any(variable.startswith(prefix) for variable in variables):
            found.append(int(entry.name))
    return sorted(found)


def sweep(work_dir: Path) -> list[int]:
    """Kill (SIGKILL) every process of a task of the cluster in ``work_dir``; their pids.

    Repeated until none is left, so that a process forked while the sweep ran is caught too.
    """
    killed: list[int] = []
    for _ in range(5):
        pids = [pid for pid in processes_under(work_dir) if pid not in killed]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
            killed.append(pid)
    return killed


class Reaper:
    """The cluster's side: starts the reaper process and tells it how the cluster ended.

    Args:
        work_dir: the cluster's work dir (every sandbox lies under it).
    """

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self._process: subprocess.Popen[bytes] | None = None
        self._pipe: IO[bytes] | None = None

    def start(self) -> None:
        """Start the reaper process (idempotent)."""
        if self._process is not None:
            return
        self._process = subprocess.Popen(  # noqa: S603 - our own module, no shell
            [sys.executable, "-m", "disauto.localmesos.reaper", str(self.work_dir)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True,
        )
        self._pipe = self._process.stdin

    @property
    def pid(self) -> int | None:
        """The reaper's pid while it runs."""
        return None if self._process is None else self._process.pid

    def stop(self) -> None:
        """The cluster stopped normally (its tasks are killed): let the reaper exit, no sweep."""
        if self._process is None or self._pipe is None:
            return
        try:
            self._pipe.write(QUIT)
            self._pipe.close()
        except OSError:
            pass  # it died already: nothing to tell
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None
        self._pipe = None


def main(argv: list[str] | None = None) -> int:
    """``python -m disauto.localmesos.reaper WORK_DIR``: wait for end of file on standard input
    (the cluster's process is gone), then kill the cluster's tasks unless told ``quit``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m disauto.localmesos.reaper WORK_DIR", file=sys.stderr)
        return 2
    owner = os.getppid()  # the cluster's process, before it dies and we are re-parented
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)  # only the pipe ends the reaper
    told = b""
    while True:
        chunk = os.read(0, 64)
        if not chunk:
            break
        told += chunk
    if told.startswith(QUIT):
        return 0
    sweep(Path(args[0]))
    cpu_quota.remove_stale(owner=owner)  # the slowed agents' CPU groups, emptied by the sweep
    cgroups.remove_stale(owner=owner)  # the containers' memory and cpu groups
    return 0


if __name__ == "__main__":
    sys.exit(main())
