"""Running several ``da-submit`` processes of one benchmark run."""

from __future__ import annotations

from collections.abc import Sequence
import subprocess
import time


def wait_all(processes: Sequence[subprocess.Popen[bytes]], timeout: float) -> None:
    """Wait for every process until ``timeout`` seconds from now; kill what still runs then."""
    deadline = time.monotonic() + timeout
    for process in processes:
        try:
            process.wait(max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def kill_all(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    """Kill what still runs (a run that failed half way)."""
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait(10)
