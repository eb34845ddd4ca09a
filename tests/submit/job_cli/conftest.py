"""What the tests of ``da-job``'s commands share: a ``$DISAUTO_HOME`` of their own, an
80-column terminal, ``da_job`` (the console script run in this process: exit status, stdout,
stderr) and ``job_record`` (a job recorded in that home, running, interrupted or ended).

A test module per command (``test_<name>.py``); a new command's tests start from a copy of one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

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
