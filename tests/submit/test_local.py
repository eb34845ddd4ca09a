"""The embedded cluster's size for a job, and the note when it oversubscribes this machine."""

from __future__ import annotations

from dataclasses import replace
import os
from pathlib import Path
import pwd
import shutil
import tempfile

import pytest

from disauto.framework._spec import JobConfig
from disauto.framework._spec import TaskResources
from disauto.localmesos.agent.config import default_mem_mb
from disauto.submit.local import agent_size
from disauto.submit.local import cluster_work_dir
from disauto.submit.local import oversubscription_note
from disauto.submit.local import task_user_note
from disauto.testing.inprocess import job_config


pytestmark = pytest.mark.integration  # starts processes or servers


def _config(cpus: float, mem_mb: float, parallelism: int = 4) -> JobConfig:
    return replace(job_config(parallelism=parallelism),
                   runner=TaskResources(cpus=cpus, mem_mb=mem_mb))


def test_a_job_that_fits_the_machine_gets_the_machine_and_no_note() -> None:
    config = _config(cpus=0.1, mem_mb=16, parallelism=2)
    assert agent_size(config) == (float(os.cpu_count() or 1), default_mem_mb())
    assert oversubscription_note(config) == ""


def test_a_larger_job_gets_what_it_needs_and_a_note_that_says_so() -> None:
    config = _config(cpus=1000, mem_mb=16, parallelism=4)
    cpus, _ = agent_size(config)
    assert cpus == 0.5 + 4 * 1000  # AppCore and four runners
    note = oversubscription_note(config)
    assert note.startswith(f"this machine has {os.cpu_count()} CPUs")
    assert "advertises 4000.5 CPUs" in note and "AppCore and 4 trials fit" in note
    # Spread over two agents, each needs AppCore and half the runners.
    assert agent_size(config, agents=2)[0] == 0.5 + 2 * 1000


@pytest.mark.skipif(os.geteuid() != 0, reason="the embedded agents switch users as root only")
def test_tasks_of_another_user_get_sandboxes_it_can_reach(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The job's folder is its owner's alone (0700): the sandboxes of tasks that run as another
    user go to the cluster's own work dir, and a Python out of that user's reach is named."""
    home = Path(tempfile.mkdtemp(prefix="disauto-home-"))  # 0700, as ~root is
    try:
        job = home / "jobs" / "j1"
        config = replace(job_config(), user="nobody")
        assert cluster_work_dir(config, job) is None  # the cluster's own, 0755
        mine = replace(config, user=pwd.getpwuid(os.geteuid()).pw_name)
        assert cluster_work_dir(mine, job) == job / "cluster"
        assert cluster_work_dir(replace(config, user="no-such-user-x"), job) == job / "cluster"
        python = home / "bin" / "python3"
        python.parent.mkdir()
        python.write_text("")
        monkeypatch.setattr("sys.executable", str(python))
        assert task_user_note(config) == (
            f"the tasks run as user 'nobody' (--user), who cannot reach {home} (mode 700) to run "
            f"this Python ({python}): use a Python that user can run, or leave out --user")
        assert task_user_note(mine) == ""  # no switch
        home.chmod(0o755)
        assert task_user_note(config) == ""
    finally:
        shutil.rmtree(home)
