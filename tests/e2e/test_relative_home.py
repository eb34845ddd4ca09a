"""Issue 40: a relative ``DISAUTO_HOME``, and trials that fail before they write anything.

Tried as a new user would: ``DISAUTO_HOME=rel-home da-submit ...`` in the folder of the files.
Before, every warm-slot trial failed (its executor, run in its sandbox, was told a sandbox path
relative to another folder), and a slot whose executor failed at its start left nothing to read.
"""

from __future__ import annotations

import os
from pathlib import Path
import subprocess
import sys
from typing import Any

import pytest

from tests.e2e.conftest import ROOT
from tests.e2e.conftest import common_flags


pytestmark = pytest.mark.slow

MODES = {
    "task": (),
    "warm": ("--slot-mode", "warm"),
    "warm-preload": ("--slot-mode", "warm", "--slot-preload", "apprunner_sdk"),
}
RELATIVE = {"DISAUTO_HOME": "rel-home"}
BROKEN = "import apprunner_sdk\ndef broken(:\n    pass\n"


def da_job(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``da-job ARGS`` as the user runs it: in ``folder``, with the same relative home."""
    environ = {**os.environ, **RELATIVE,
               "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "disauto.submit.job_cli", *args], cwd=folder,
                          env=environ, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_relative_home_runs_every_trial_in_every_mode(submit: Any, workdir: Path,
                                                        mode: str) -> None:
    job = submit(*common_flags(workdir, "--trail-steps", "2", "--parallelism", "2",
                               *MODES[mode]), env=RELATIVE)
    assert job.wait() == 0, job.output
    assert job.job_dir().parent == workdir / "rel-home" / "jobs"
    trials = job.results()["trials"]
    assert [t["state"] for t in trials] == ["COMPLETED", "COMPLETED"], job.output


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_script_that_fails_at_import_shows_its_traceback(submit: Any, workdir: Path,
                                                          mode: str) -> None:
    (workdir / "bad.py").write_text(BROKEN)
    flags = common_flags(workdir, "--trail-steps", "1", *MODES[mode])
    flags[flags.index(str(workdir / "runner.py"))] = str(workdir / "bad.py")
    flags[flags.index("python runner.py")] = "python bad.py"
    job = submit(*flags, env=RELATIVE)
    assert job.wait() != 0
    assert "SyntaxError" in job.words, job.output
    shown = da_job(workdir, "logs", job.job_dir().name, "trial-0001", "--stderr")
    assert shown.returncode == 0, shown.stderr
    assert "def broken(:" in shown.stdout and "SyntaxError: invalid syntax" in shown.stdout


def test_a_slot_whose_executor_fails_at_its_start_says_why(submit: Any, workdir: Path) -> None:
    """A user's ``disauto.py`` among the job's files shadows DisAuto's executor in the slot's
    sandbox: the executor exits before it runs a trial, writing only to its own stderr."""
    shadow = workdir / "mine"
    shadow.mkdir()
    (shadow / "disauto.py").write_text("x = 1\n")
    job = submit(*common_flags(workdir, "--trail-steps", "1", "--slot-mode", "warm",
                               "--files", str(shadow / "disauto.py")), env=RELATIVE)
    assert job.wait() != 0
    why = "Error while finding module specification for 'disauto.executor'"
    # da-submit's last words name the cause ...
    assert "its slot's executor" in job.words and "Error while finding" in job.words, job.output
    # ... the slot's executor's own output is in the job folder ...
    folder = job.job_dir()
    copies = sorted((folder / "logs").glob(f"{folder.name}-slot-*.stderr"))
    assert copies and all(why in copy.read_text() for copy in copies), copies
    # ... and da-job logs and status show it.
    shown = da_job(workdir, "logs", folder.name, "1", "--stderr")
    assert shown.returncode == 0, shown.stderr
    assert "wrote nothing to stderr" in shown.stdout and why in shown.stdout, shown.stdout
    overview = da_job(workdir, "logs", folder.name)
    assert "the warm slot's executor that trial-0001 ran on" in overview.stdout
    assert why in overview.stdout
    status = da_job(workdir, "status", folder.name)
    assert "last failure: trial-0001" in status.stdout, status.stdout
    assert all(len(line) <= 80 for line in status.stdout.splitlines()), status.stdout
