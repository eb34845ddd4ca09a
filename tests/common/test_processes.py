"""A process is its pid and its start time; processes can be found by their environment."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

from disauto.common.processes import is_running
from disauto.common.processes import start_time
from disauto.common.processes import with_environment


def test_this_process_is_running_and_a_reused_pid_is_not_it() -> None:
    pid = os.getpid()
    started = start_time(pid)
    assert started
    assert is_running(pid, started)
    assert not is_running(pid, str(int(started) + 1))  # same pid, another process
    assert not is_running(2**22 + 7, started) and not is_running(pid, "")
    assert start_time(-1) == ""


@pytest.mark.integration
def test_processes_are_found_by_their_environment() -> None:
    marker = uuid.uuid4().hex
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                             env={"DISAUTO_PROBE": marker})
    try:
        assert with_environment("DISAUTO_PROBE", marker) == [child.pid]
        assert with_environment("DISAUTO_PROBE", "other") == []
    finally:
        child.kill()
        child.wait()


@pytest.mark.integration
def test_pid_exists_until_the_process_is_reaped() -> None:
    from disauto.common.processes import pid_exists

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    assert pid_exists(child.pid)  # running, or a zombie until it is waited for
    child.wait()
    assert not pid_exists(child.pid)
    assert pid_exists(1)  # init: another user's process exists too
