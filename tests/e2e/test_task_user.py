"""Issue 34 (5): ``da-submit --user``, the user Mesos runs the job's tasks as.

The embedded agents switch users as Mesos agents do (``--switch_user``, on): as root they run
AppCore, the trials and the warm slots' executors (and the trials they fork) as ``--user``; a
user the machine lacks ends the job at once with one line naming it and saying what to do.
"""

from __future__ import annotations

from collections.abc import Iterator
import os
from pathlib import Path
import pwd
import shutil
import subprocess
import sys
import tempfile
from typing import Any

import pytest

from tests.e2e.conftest import ROOT
from tests.e2e.conftest import common_flags


pytestmark = pytest.mark.slow

GHOST = f"disauto-ghost-{os.getpid()}"
RUNNER_UID = '''
import os
from apprunner_sdk import get_params, report
get_params()
report(accuracy=0.5, uid=os.getuid(), gid=os.getgid(), final=True)
'''


def test_a_user_the_agents_lack_ends_the_job_in_one_line(submit: Any, workdir: Path) -> None:
    job = submit(*common_flags(workdir, "--trail-steps", "1", "--user", GHOST))
    assert job.wait() == 2, job.output
    assert "Traceback" not in job.output
    assert job.lines[-1] == (
        f"da-submit: error: Mesos cannot run the job's tasks as user '{GHOST}': agent "
        f"{job.lines[-1].split('agent ')[1].split()[0]} has no such user; pass --user NAME of "
        "a user the agents have (default: your login), or run the agents with "
        "--switch_user=false"), job.output
    results = job.results()
    assert (results["outcome"], results["exit_status"]) == ("UNSCHEDULABLE", 2)
    assert results["done"] == 0  # no trial ran


def nobody_runs_this_python() -> bool:
    """Whether ``nobody`` can run this checkout's Python and import DisAuto (a venv under
    ``/root`` is not: its base interpreter is out of reach)."""
    if os.geteuid() != 0:
        return False
    probe = [sys.executable, "-c", "import disauto.appcore, disauto.executor, apprunner_sdk"]
    nobody = pwd.getpwnam("nobody")
    try:
        done = subprocess.run(probe, user=nobody.pw_uid, group=nobody.pw_gid, extra_groups=[],
                              cwd="/", capture_output=True, check=False,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    except OSError:  # cannot even execute it
        return False
    return done.returncode == 0


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder nobody can reach (pytest's tmp_path is 0700): the job's home and files."""
    path = Path(tempfile.mkdtemp(prefix="disauto-user-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.skipif(not nobody_runs_this_python(),
                    reason="nobody cannot run this Python (a venv of an interpreter under "
                           "/root, mode 0700; making /root readable is not the test's to do): "
                           "tests/localmesos/test_switch_user.py runs tasks as nobody here")
@pytest.mark.parametrize("mode", [(), ("--slot-mode", "warm", "--slot-preload", "apprunner_sdk")],
                         ids=["task", "warm"])
def test_a_job_of_nobody_runs_its_tasks_as_nobody(submit: Any, open_folder: Path,
                                                  mode: tuple[str, ...]) -> None:
    (open_folder / "params.json").write_text('{"parameters": [{"name": "x", "type": "bound", '
                                             '"value": [0, 1]}]}')
    (open_folder / "runner.py").write_text(RUNNER_UID)
    job = submit(*common_flags(open_folder, "--trail-steps", "1", "--user", "nobody", *mode),
                 env={"DISAUTO_HOME": str(open_folder / "home")})
    assert job.wait() == 0, job.output
    nobody = pwd.getpwnam("nobody")
    [trial] = job.results()["trials"]
    assert trial["state"] == "COMPLETED", job.output
    assert (trial["metrics"]["uid"], trial["metrics"]["gid"]) == (nobody.pw_uid, nobody.pw_gid)
