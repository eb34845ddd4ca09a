"""Helpers to run ``da-submit`` for real (a subprocess, the embedded cluster, real tasks)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
import json
import os
from pathlib import Path
import re
import subprocess
import sys
import threading
import time
from typing import Any
from urllib.request import Request
from urllib.request import urlopen

import pytest

from disauto.common.processes import with_environment
from disauto.localmesos.cluster_process import ClusterProcess


ROOT = Path(__file__).resolve().parents[2]
DA_SUBMIT = [sys.executable, "-m", "disauto.submit.cli"]

# A runner whose accuracy is a smooth function of the assignment, after an optional sleep.
RUNNER = '''
import os, time
from apprunner_sdk import get_params, report
p = get_params()
time.sleep(float(os.environ.get("RUNNER_SLEEP", "0")))
acc = 1.0 - (float(p.get("x", 0.5)) - 0.3) ** 2 - 0.01 * float(p.get("n", 0))
report(accuracy=acc, step=0)
report(accuracy=acc, final=True)
'''

PARAMS = {"parameters": [
    {"name": "x", "type": "bound", "value": [0.0, 1.0]},
    {"name": "n", "type": "number", "value": [0, 1, 2]},
]}


@dataclass
class Job:
    """A da-submit process and what it printed."""

    process: subprocess.Popen[str]
    home: Path
    lines: list[str] = field(default_factory=list)
    _reader: threading.Thread | None = None

    def start_reading(self) -> None:
        def read() -> None:
            assert self.process.stdout is not None
            for line in self.process.stdout:
                self.lines.append(line.rstrip("\n"))

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()

    def wait(self, timeout: float = 180.0) -> int:
        code = self.process.wait(timeout=timeout)
        if self._reader is not None:
            self._reader.join(10)
        return code

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    @property
    def words(self) -> str:
        """The output word by word, one space apart: what da-submit said whatever the lines
        it wrapped its prose into (80 columns)."""
        return " ".join(self.output.split())

    def wait_for_line(self, pattern: str, timeout: float = 60.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                match = re.search(pattern, line)
                if match:
                    return match
            if self.process.poll() is not None and self._reader is not None:
                self._reader.join(5)
                for line in self.lines:
                    match = re.search(pattern, line)
                    if match:
                        return match
                break
            time.sleep(0.1)
        raise AssertionError(f"no line matching {pattern!r} in:\n{self.output}")

    def master_url(self) -> str:
        return self.wait_for_line(r"embedded Mesos master at (http://[\d.:]+)/").group(1)

    def wait_running_trials(self, count: int, timeout: float = 60.0) -> None:
        """Wait until the embedded master shows ``count`` of the job's trials running."""
        url = self.master_url()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            tasks = [t for f in master_state(url)["frameworks"] for t in f["tasks"]
                     if t["name"].startswith("trial-") and t["state"] == "TASK_RUNNING"]
            if len(tasks) == count:
                return
            time.sleep(0.2)
        raise AssertionError(f"{count} trials never ran at once:\n{self.output}")

    def job_dir(self) -> Path:
        return Path(self.wait_for_line(r"job folder (\S+)").group(1))

    def results(self) -> dict[str, Any]:
        return json.loads((self.job_dir() / "results.json").read_text())

    def trial_processes(self, number: int, script: str = "runner.py") -> list[int]:
        """Pids of this job's trial ``number`` running ``script`` (never another job's: tests
        run two at a time)."""
        from disauto.common.processes import with_environment

        ours = set(with_environment("DISAUTO_JOB_ID", self.job_dir().name))
        found = []
        for pid in with_environment("DISAUTO_TRIAL_NUMBER", str(number)):
            try:
                if pid in ours and script.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(pid)
            except OSError:
                continue  # gone meanwhile
        return found


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "runner.py").write_text(RUNNER)
    (tmp_path / "params.json").write_text(json.dumps(PARAMS))
    return tmp_path


@pytest.fixture
def submit(tmp_path: Path) -> Iterator[Any]:
    jobs: list[Job] = []

    def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Job:
        environ = {**os.environ, "DISAUTO_HOME": str(tmp_path / "home"), **(env or {})}
        environ["PYTHONPATH"] = str(ROOT) + os.pathsep + environ.get("PYTHONPATH", "")
        process = subprocess.Popen(
            [*DA_SUBMIT, *args], cwd=cwd or tmp_path, env=environ, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )
        job = Job(process, tmp_path / "home")
        job.start_reading()
        jobs.append(job)
        return job

    yield run
    for job in jobs:
        if job.process.poll() is None:
            job.process.kill()
            job.process.wait(10)


def common_flags(workdir: Path, *extra: str, slot_mode: str | None = "task") -> list[str]:
    """A small job of :data:`RUNNER`. ``--slot-mode task`` unless ``slot_mode`` says otherwise
    (None: da-submit's default, warm slots with ``--slot-preload auto`` for this runner): the
    tests written when a task per trial was the default look at tasks (their processes,
    sandboxes, executors and timings); a test of warm slots passes ``--slot-mode warm`` among
    ``extra``, which comes later and wins."""
    mode = ["--slot-mode", slot_mode] if slot_mode else []
    return [
        "--app-name", "e2e", "--files", str(workdir / "runner.py"),
        "--app-runner-launch-cmd", "python runner.py",
        "--app-runner-cpus", "0.5", "--app-runner-memory", "128M",
        "--app-core-cpus", "0.5", "--app-core-memory", "128M",
        "--tuning-parameters", str(workdir / "params.json"), "--seed", "3", *mode, *extra,
    ]


def operator_call(url: str, call: dict[str, Any]) -> dict[str, Any]:
    """One call of the operator API of the master at ``url`` (``/api/v1``); its JSON answer
    ({} when empty)."""
    request = Request(f"{url}/api/v1", data=json.dumps(call).encode(),
                      headers={"Content-Type": "application/json", "Accept": "application/json"})
    with urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
        body = response.read()
    return json.loads(body) if body else {}


def master_state(url: str) -> dict[str, Any]:
    """The master's state; empty once the job ended and da-submit stopped the cluster."""
    try:
        with urlopen(f"{url}/master/state", timeout=5) as response:  # noqa: S310 - loopback
            return json.loads(response.read())
    except OSError:
        return {"frameworks": []}


class DaCluster(ClusterProcess):
    """A ``da-cluster`` process (one agent of 4 CPUs and 4 GB, quick allocations) whose tasks
    import this checkout, to kill -9 and start again on the same port."""

    def __init__(self, work_dir: Path, *, extra: tuple[str, ...] = ()) -> None:
        from disauto.submit.local import free_port_range

        low, high = free_port_range(600, low=42000, high=60000)
        super().__init__(
            work_dir,
            ("--agents", "1", "--cpus", "4", "--mem", "4GB", "--ports", f"[{low}-{high}]",
             "--gpus", "0", "--allocation-interval", "200ms", *extra),
            env={**os.environ,
                 "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")})


@pytest.fixture
def da_cluster(tmp_path: Path) -> Iterator[DaCluster]:
    made = DaCluster(tmp_path / "da-cluster")
    yield made
    made.kill()


def nothing_left(job: str, within: float = 15.0, framework_id: str = "") -> bool:
    """Whether every process of the job (its tasks) is gone within ``within`` seconds; with
    ``framework_id`` also every executor an agent started for it (a warm slot's executor has
    no ``DISAUTO_JOB_ID``, but the agent gives it ``MESOS_FRAMEWORK_ID``)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not with_environment("DISAUTO_JOB_ID", job) and not (
                framework_id and with_environment("MESOS_FRAMEWORK_ID", framework_id)):
            return True
        time.sleep(0.2)
    return False
