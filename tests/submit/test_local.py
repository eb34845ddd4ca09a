"""The embedded cluster's size for a job, and the note when it oversubscribes this machine."""

from __future__ import annotations

from dataclasses import replace
import os
from pathlib import Path
import shutil
import tempfile

import pytest

from disauto.framework.spec import JobConfig
from disauto.framework.spec import TaskResources
from disauto.localmesos.agent.config import default_mem_mb
from disauto.submit.local import agent_size
from disauto.submit.local import oversubscription_note
from disauto.submit.local import task_user_note
from tests.inprocess import job_config


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
def test_a_task_user_who_cannot_reach_the_job_is_told_before_it_starts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.executable", "/bin/sh")  # a Python anyone can run
    home = Path(tempfile.mkdtemp(prefix="disauto-home-"))  # 0700, as ~root is
    try:
        job = home / "jobs" / "j1"
        job.mkdir(parents=True)
        config = replace(job_config(), user="nobody")
        note = task_user_note(config, job)
        assert note.startswith(f"the tasks run as user 'nobody' (--user), who cannot reach "
                               f"{home} (mode 700): this Python (/bin/sh) and the job's folder")
        assert task_user_note(replace(config, user="root"), job) == ""  # no switch
        home.chmod(0o755)
        assert task_user_note(config, job) == ""
    finally:
        shutil.rmtree(home)
