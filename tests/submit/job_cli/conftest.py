"""What the tests of ``da-job``'s commands share: a ``$DISAUTO_HOME`` of their own, an
80-column terminal, ``da_job`` (the console script run in this process: exit status, stdout,
stderr), ``job_record`` (a job recorded in that home, running, interrupted or ended) and
``real_jobs`` (the jobs a module's ``REAL_JOBS`` names, run for real on the embedded cluster,
once per module, in a home of the module's own).

A test module per command (``test_<name>.py``); a new command's tests start from a copy of one.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
import json
import os
from pathlib import Path
import subprocess
import sys

import pytest

from disauto.submit import job_cli
from tests.submit.job_cli.records import JobRecord


DaJob = Callable[..., tuple[int, str, str]]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DISAUTO_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "80")
    return tmp_path / "home"


@pytest.fixture
def da_job(home: Path, capsys: pytest.CaptureFixture[str]) -> DaJob:
    """``da_job("status", "job-a")`` → (exit status, stdout, stderr)."""

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = job_cli.main(list(argv))
        out, err = capsys.readouterr()
        return int(code), out, err

    return run


@pytest.fixture
def job_record(home: Path) -> Callable[..., JobRecord]:
    """``job_record("job-a", state="ended")``: a job with trials in every state."""

    def make(job_id: str = "job-a", state: str = "running", **options: object) -> JobRecord:
        return JobRecord(home, job_id, state, **options)  # type: ignore[arg-type]

    return make


# -- real jobs -----------------------------------------------------------------------------------

RUNNER = """
from apprunner_sdk import get_params, report
p = get_params()
x, n = float(p["x"]), int(p["n"])
accuracy = 1.0 - (x - 0.3) ** 2 - 0.01 * n
print(f"trial with x={x} n={n}")
report(accuracy=accuracy, step=0)
report(accuracy=accuracy, loss=x + n, final=True)
"""
"""A trial that prints a line and reports ``accuracy`` (a step, then final) and ``loss``."""

PARAMS = {"parameters": [{"name": "x", "type": "bound", "value": [0.0, 1.0]},
                         {"name": "n", "type": "number", "value": [0, 1, 2]}]}

SMALL = ("--files", "runner.py", "--app-runner-launch-cmd", "python runner.py",
         "--app-runner-memory", "128M", "--app-runner-cpus", "0.5", "--app-core-memory", "128M",
         "--app-core-cpus", "0.5", "--tuning-parameters", "params.json", "--parallelism", "2",
         "--tuning-type", "random-search")
"""Every real job's flags: small tasks of :data:`RUNNER` over :data:`PARAMS`."""


@dataclass(frozen=True)
class RealJobs:
    """Jobs that ran for real: their home, their ids (in ``REAL_JOBS``' order) and the folder
    they were submitted from (``runner.py``, ``params.json``)."""

    home: Path
    ids: list[str]
    workdir: Path


def submit_jobs(home: Path, workdir: Path, jobs: Sequence[Sequence[str]]) -> list[str]:
    """Run each job (da-submit's flags beyond :data:`SMALL`) to its end with ``--master
    local``; their ids, in order."""
    (workdir / "runner.py").write_text(RUNNER)
    (workdir / "params.json").write_text(json.dumps(PARAMS))
    root = Path(__file__).resolve().parents[3]
    environ = {**os.environ, "DISAUTO_HOME": str(home), "COLUMNS": "80",
               "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    ids = []
    for flags in jobs:
        before = set(os.listdir(home / "jobs")) if (home / "jobs").is_dir() else set()
        done = subprocess.run([sys.executable, "-m", "disauto.submit.cli", *SMALL, *flags],
                              cwd=workdir, env=environ, capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        (job_id,) = set(os.listdir(home / "jobs")) - before
        ids.append(job_id)
    return ids


@pytest.fixture(scope="module")
def real_jobs(request: pytest.FixtureRequest,
              tmp_path_factory: pytest.TempPathFactory) -> RealJobs:
    """The module's ``REAL_JOBS`` (each da-submit's flags beyond :data:`SMALL`), run once."""
    workdir = tmp_path_factory.mktemp("real-jobs")
    home = workdir / "home"
    return RealJobs(home, submit_jobs(home, workdir, request.module.REAL_JOBS), workdir)
