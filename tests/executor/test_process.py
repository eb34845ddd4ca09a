from __future__ import annotations

import json
import os
from pathlib import Path
import resource
import signal
import sys

import pytest

from disauto.executor.process import TaskProcess
from disauto.executor.process import describe_exit


def test_exit_is_worded_as_mesos_command_executor() -> None:
    assert describe_exit(0) == "Command exited with status 0"
    assert describe_exit(3) == "Command exited with status 3"
    assert describe_exit(-9) == "Command terminated with signal SIGKILL"


LOAD = ("import resource, time, json\n"
        "block = bytearray(80 * 1024 * 1024)\n"
        "for i in range(0, len(block), 4096): block[i] = 1\n"
        "end = time.process_time() + 0.5\n"
        "while time.process_time() < end: pass\n"
        "own = resource.getrusage(resource.RUSAGE_SELF)\n"
        "print(json.dumps([own.ru_utime + own.ru_stime, own.ru_maxrss * 1024]))\n")


@pytest.mark.integration  # starts processes
def test_a_reaped_task_says_exactly_what_it_used(tmp_path: Path) -> None:
    (tmp_path / "load.py").write_text(LOAD)
    # Two commands, so the shell does not exec the last one: the usage is of its descendants.
    # Linux counts in a child's peak the resident set it was forked with (exec keeps the old
    # image's high-water mark): the forking process's own, here this test process's.
    forker = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    process = TaskProcess(f"true; {sys.executable} load.py; true", dict(os.environ), tmp_path)
    assert process.wait(timeout=60) == 0
    own_cpu, own_peak = json.loads((tmp_path / "stdout").read_text())
    usage = process.usage
    assert usage is not None
    assert own_cpu <= usage.cpu_seconds <= own_cpu + 0.2
    # The largest resident set: the Python's, unless the process that forked it was larger.
    assert own_peak <= usage.max_rss_bytes <= max(own_peak, forker) + 4 * 1024 * 1024


@pytest.mark.integration  # starts processes
def test_a_killed_task_is_measured_and_waiting_again_answers_the_same(tmp_path: Path) -> None:
    process = TaskProcess("echo $$ > pid; exec sleep 60", dict(os.environ), tmp_path)
    with pytest.raises(TimeoutError):
        process.wait(timeout=0.2)
    process.kill(grace=5)
    assert process.wait(timeout=10) == -signal.SIGTERM == process.poll()
    assert process.usage is not None and process.usage.max_rss_bytes > 0
