"""A slot task's ``stdout`` and ``stderr``: capped and rotated as the agent caps a command task's.

A command task's output goes through the agent's container logger (Mesos'
``LogrotateContainerLogger``, the embedded agent's ``common/logrotate.py``): at most
``max_size`` bytes per file (10 MB), one rotated ``stdout.1``/``stderr.1`` kept. A slot task's
process is the executor's (or its pre-imported interpreter's, or a ``docker exec``), so the
executor does the same for it, with the same sizes and file names in the task's sandbox: the
framework's log collector and ``/files`` readers read them unchanged.

A plain process writes into an anonymous pipe; a forked trial and a container's exec open their
output by path, so they get named pipes in the slot's sandbox (:data:`FIFO_DIR`), removed once
the task's output is drained.
"""

from __future__ import annotations

from pathlib import Path

from disauto.common.logrotate import DEFAULT_SANDBOX_LOGGING
from disauto.common.logrotate import LogPump
from disauto.common.logrotate import SandboxLogging


FIFO_DIR = ".task-output"
"""The folder of the slot's sandbox that holds its tasks' named pipes while they run."""
DRAIN_SECONDS = 3.0
"""How long the task's end waits for its last output (a process it left behind that holds the
pipe keeps it open: the copy goes on in the background)."""


class TaskOutput:
    """The two pumps of one task.

    Args:
        sandbox: the task's sandbox, where ``stdout`` and ``stderr`` are written.
        fifo_dir: where to make named pipes for a task that opens its output by path; None
            for a child of the executor, which gets the pipes' write ends.
        logging: the caps.
    """

    def __init__(self, sandbox: Path, fifo_dir: Path | None = None,
                 logging: SandboxLogging = DEFAULT_SANDBOX_LOGGING) -> None:
        self.fifos: tuple[Path, Path] | None = None
        if fifo_dir is None:
            self.stdout = LogPump(sandbox / "stdout", logging.stdout)
            self.stderr = LogPump(sandbox / "stderr", logging.stderr)
            return
        fifo_dir.mkdir(exist_ok=True)
        fifos = (fifo_dir / f"{sandbox.name}.stdout", fifo_dir / f"{sandbox.name}.stderr")
        for stale in fifos:  # a task id is launched once; a leftover is a killed executor's
            stale.unlink(missing_ok=True)
        self.stdout = LogPump.fifo(sandbox / "stdout", logging.stdout, fifos[0])
        try:
            self.stderr = LogPump.fifo(sandbox / "stderr", logging.stderr, fifos[1])
        except OSError:
            self.stdout.drain(0)
            raise
        self.fifos = fifos

    @property
    def fds(self) -> tuple[int, int]:
        """The write ends to hand a child as its stdout and stderr."""
        return self.stdout.write_fd, self.stderr.write_fd

    def started(self) -> None:
        """The child holds its write ends now: close the executor's (anonymous pipes only; a
        named pipe's own write end is held until :meth:`drain`)."""
        if self.fifos is None:
            self.stdout.started()
            self.stderr.started()

    def drain(self, timeout: float = DRAIN_SECONDS) -> None:
        """The task ended: wait until what it wrote is in its files."""
        self.stdout.drain(timeout)
        self.stderr.drain(timeout)
