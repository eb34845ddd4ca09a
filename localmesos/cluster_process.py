"""A ``da-cluster`` as a child process: an embedded cluster that outlives the process that
starts it only as long as that process wants, and dies for real when killed (``kill -9``).

Benchmarks and the fault tests use it where the cluster must be another process than the
framework's: a master restarted on the same port, a framework killed while the cluster lives on.
An :class:`AgentsProcess` is the agents of such a master in a process of their own
(``da-cluster --agents-only``), which outlive it.
"""

from __future__ import annotations

import os
from pathlib import Path
import socket
import subprocess
import sys
import time


class ClusterProcess:
    """``python -m disauto.localmesos.cli`` on a port of its own, started and killed at will.

    Args:
        work_dir: each start's sandboxes go to ``work_dir/run-N``.
        flags: more ``da-cluster`` flags (``--agents``, ``--cpus``, ``--ports``, ...).
        port: the master's port; 0 picks one now that stays the same across restarts.
        env: the child's environment (default this process's).
        log: where its standard error goes, each start appended (default: nowhere).
    """

    #: The line it prints once it serves.
    READY = "Master: "

    def __init__(self, work_dir: Path, flags: tuple[str, ...] = (), *, port: int = 0,
                 env: dict[str, str] | None = None, log: Path | None = None) -> None:
        self.log = log
        if not port:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = int(probe.getsockname()[1])
        self.port = port
        self.work_dir = work_dir
        self.flags = flags
        self.env = dict(os.environ if env is None else env)
        self.process: subprocess.Popen[str] | None = None
        self.starts = 0

    @property
    def address(self) -> str:
        """``host:port`` of the master."""
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> str:
        """Start it (again: the same port, a fresh work dir) and wait until it serves; its
        address.

        Raises:
            RuntimeError: it exited or did not serve within ``timeout`` seconds.
        """
        self.starts += 1
        errors = subprocess.DEVNULL if self.log is None else self.log.open("ab")
        try:
            self.process = subprocess.Popen(  # noqa: S603 - our own module, no shell
                [sys.executable, "-m", "disauto.localmesos.cli", "--port", str(self.port),
                 *self.flags, "--work-dir", str(self.run_dir())],
                env=self.env, stdout=subprocess.PIPE, stderr=errors, text=True)
        finally:
            if not isinstance(errors, int):
                errors.close()
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if line.startswith(self.READY):
                return self.address
            if not line and self.process.poll() is not None:
                break
        self.kill()
        raise RuntimeError(f"da-cluster did not start on port {self.port}")

    def run_dir(self) -> Path:
        """The work dir of this start: a fresh one each time."""
        return self.work_dir / f"run-{self.starts}"

    def kill(self) -> None:
        """``kill -9``: the master and its agents die at once (their tasks with them, through
        the cluster's reaper)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


class AgentsProcess(ClusterProcess):
    """``da-cluster --agents-only --master MASTER``: agents in a process of their own,
    registered with the master at ``master`` (:mod:`localmesos.agent_host`); its address is
    theirs. Its work dir is the same at each start (its agents' sandboxes).

    Args:
        work_dir: the agents' work dir.
        master: ``host:port`` of their master.
        flags, port, env, log: as :class:`ClusterProcess`'s.
    """

    READY = "Agents: "

    def __init__(self, work_dir: Path, master: str, flags: tuple[str, ...] = (), *,
                 port: int = 0, env: dict[str, str] | None = None,
                 log: Path | None = None) -> None:
        super().__init__(work_dir, ("--agents-only", "--master", master, *flags), port=port,
                         env=env, log=log)

    def run_dir(self) -> Path:
        return self.work_dir
