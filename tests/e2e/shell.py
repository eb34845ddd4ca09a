"""DisAuto's commands run as a user runs them: each its own process, one ``$DISAUTO_HOME``."""

from __future__ import annotations

import json
import os
from pathlib import Path
import signal
import sqlite3
import subprocess
import sys
import time
from typing import Any

from disauto.common.processes import with_environment
from tests.e2e.conftest import ROOT


class Shell:
    """A user's shell: ``da-submit --detach``, ``da-job``, pasting what they print."""

    def __init__(self, home: Path, cwd: Path, runner_sleep: float) -> None:
        self.env = {**os.environ, "DISAUTO_HOME": str(home), "RUNNER_SLEEP": str(runner_sleep),
                    "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.cwd = cwd
        self.home = home
        self.submitted = ""  # what the last --detach printed

    def start(self, module: str, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", module, *args], cwd=self.cwd,
                                env=self.env, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)

    def run(self, module: str, *args: str,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", module, *args], cwd=self.cwd, env=self.env,
                              capture_output=True, text=True, timeout=timeout, check=False)

    def submit(self, *args: str) -> str:
        """``da-submit ARGS --detach``; the job's id."""
        done = self.run("disauto.submit.cli", *args, "--detach", timeout=90)
        assert done.returncode == 0, done.stdout + done.stderr
        self.submitted = done.stdout
        return done.stdout.split("job ", 1)[1].split()[0]

    def paste(self, text: str) -> None:
        """Paste ``text`` into a shell as a user would: every line runs (da-job on the PATH), a
        line that follows forever stopped after a few seconds."""
        env = {**self.env, "PATH": str(Path(sys.executable).parent) + os.pathsep
               + self.env.get("PATH", "")}
        for line in text.splitlines():
            subprocess.run(["timeout", "5", "bash", "-c", line], cwd=self.cwd, env=env,
                           capture_output=True, check=False)

    def job(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return self.run("disauto.submit.job_cli", *args, timeout=timeout)

    def status(self, job: str) -> dict[str, Any]:
        done = self.job("status", job, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def wait_until(self, job: str, predicate: Any, timeout: float = 120) -> dict[str, Any]:
        """Poll ``da-job status --json`` until ``predicate`` holds; the status."""
        deadline = time.monotonic() + timeout
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            status = self.status(job)
            if predicate(status):
                return status
            time.sleep(0.3)
        raise AssertionError(f"{job}: condition not met; last status {status}")

    def folder(self, job: str) -> Path:
        return self.home / "jobs" / job

    def db(self, job: str) -> sqlite3.Connection:
        return sqlite3.connect(self.folder(job) / "job.db")

    def meta(self, job: str) -> dict[str, str]:
        with self.db(job) as db:
            return dict(db.execute("SELECT key, value FROM meta").fetchall())

    def kill_framework(self, job: str) -> None:
        os.kill(int(self.meta(job)["pid"]), signal.SIGKILL)
        self.wait_until(job, lambda s: s["state"] == "interrupted", timeout=30)

    def kill_leftovers(self) -> None:
        """Kill every job's framework and task processes (a test that failed midway)."""
        for job_dir in (self.home / "jobs").glob("*"):
            try:
                os.kill(int(self.meta(job_dir.name).get("pid", "0")), signal.SIGKILL)
            except (ProcessLookupError, ValueError, sqlite3.Error):
                pass
            for pid in with_environment("DISAUTO_JOB_ID", job_dir.name):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
