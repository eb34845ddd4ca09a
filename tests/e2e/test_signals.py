"""The terminal closes (SIGHUP) under an attached da-submit: the job stops cleanly and says so.

The process is started in its own session, as a shell starts a job, and sent SIGHUP as the
terminal would; the record is checked trial by trial and nothing of the job is left running.
"""

from __future__ import annotations

import signal
from typing import Any

import pytest

from disauto.common.processes import with_environment
from tests.e2e.conftest import common_flags
from tests.e2e.outcomes import check_ended


pytestmark = pytest.mark.slow


def test_sighup_stops_the_job_cleanly_with_its_record(submit: Any, workdir: Any) -> None:
    job = submit(*common_flags(workdir, "--trail-steps", "20", "--parallelism", "2"),
                 env={"RUNNER_SLEEP": "30"})
    job.wait_running_trials(2)
    job_id = job.job_dir().name
    job.process.send_signal(signal.SIGHUP)
    ended = check_ended(job, 130, "STOPPED", best=None, logs=False)
    assert ended.results["message"] == "stopped: the terminal closed (SIGHUP)"
    assert set(ended.states().values()) == {"KILLED"}
    assert ended.meta["state"] == "ENDED"
    assert with_environment("DISAUTO_JOB_ID", job_id) == []  # no orphaned trial or AppCore
