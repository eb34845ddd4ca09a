"""Trials that report their final result and do not exit, run for real: a script that leaves a
non-daemon thread sleeping after ``report(..., final=True)`` holds its slot only for
``--trial-exit-grace`` (or up to ``--trial-timeout``); then its task is killed, the trial stays
COMPLETED with its result, and the next trial starts. In both slot modes."""

from __future__ import annotations

import os
from pathlib import Path
import re
import sqlite3
from typing import Any

import pytest

from tests.e2e.conftest import Job
from tests.e2e.conftest import common_flags
from tests.e2e.outcomes import Ended
from tests.e2e.outcomes import check_ended


pytestmark = pytest.mark.slow

# Reports its result, then hangs: Python waits for a non-daemon thread before it exits.
HANGING_RUNNER = '''
import threading, time
from apprunner_sdk import get_params, report
p = get_params()
report(accuracy=1.0 - (float(p["x"]) - 0.3) ** 2 - 0.01 * float(p["n"]), final=True)
print("reported; a worker thread lingers", flush=True)
threading.Thread(target=time.sleep, args=(600,)).start()
'''


@pytest.fixture
def hanging(workdir: Path) -> Path:
    (workdir / "runner.py").write_text(HANGING_RUNNER)
    return workdir


def run_two(submit: Any, workdir: Path, *extra: str) -> tuple[Job, Ended]:
    """Two trials one at a time, each hanging after its final report; both must complete.

    A trial asks for every CPU of the machine, so the embedded agent (sized to the machine, or
    to AppCore and one trial when that is more) holds one trial at a time: the second can only
    start once the first's task has ended."""
    cpus = str(os.cpu_count() or 1)
    job = submit(*common_flags(workdir, "--parallelism", "1", "--trail-steps", "2",
                               "--app-runner-cpus", cpus, *extra))
    assert job.wait(timeout=150) == 0, job.output
    best = int(job.results()["best"]["trial"])
    ended = check_ended(job, 0, "BUDGET_SPENT", best=best)
    assert ended.states() == {1: "COMPLETED", 2: "COMPLETED"}, ended.db_trials
    assert all(t["objective"] is not None and t["retries"] == 0
               for t in ended.db_trials.values())
    return job, ended


def times(job_dir: Path) -> dict[str, float]:
    """When trial 1 reported its result and its task was killed, from the record."""
    with sqlite3.connect(job_dir / "job.db") as db:
        (reported,) = db.execute("SELECT recorded_at FROM reports WHERE trial_number = 1 "
                                 "AND final = 1").fetchone()
        killed = db.execute("SELECT recorded_at FROM task_updates WHERE task_id = "
                            "'trial-0001' AND state = 'TASK_KILLED'").fetchone()
    assert killed is not None, "trial 1's task was never killed"
    return {"reported": reported, "killed": killed[0]}


def check_killed_then_next(ended: Ended, at_least: float) -> None:
    """Trial 1 was completed ``at_least`` seconds after its final report, then its task was
    killed, and trial 2 started only once that task had ended."""
    one, two = ended.db_trials[1], ended.db_trials[2]
    seen = times(ended.job_dir)
    assert one["ended_at"] - seen["reported"] >= at_least, (one, seen)
    assert two["started_at"] > seen["killed"] >= one["ended_at"], (one, two, seen)
    assert one["message"].endswith(": killed"), one["message"]


def test_a_trial_that_hangs_after_its_result_is_killed_after_its_grace(
        submit: Any, hanging: Path) -> None:
    job, ended = run_two(submit, hanging, "--trial-exit-grace", "2s")
    check_killed_then_next(ended, 2.0)
    assert "--trial-exit-grace 2s" in ended.db_trials[1]["message"]
    assert "lingers" in (ended.job_dir / "logs" / "trial-0001.stdout").read_text()


def test_the_trial_timeout_bounds_a_trial_that_hangs_after_its_result(
        submit: Any, hanging: Path) -> None:
    """No grace flag (30 s): the 4 s timeout kills each, and each stays COMPLETED."""
    job, ended = run_two(submit, hanging, "--trial-timeout", "4s")
    check_killed_then_next(ended, 0.0)
    for trial in ended.db_trials.values():
        assert trial["message"] == "completed; its task ran longer than --trial-timeout 4s: " \
                                   "killed"
        assert trial["ended_at"] - trial["started_at"] >= 4.0


def test_a_warm_slot_is_freed_for_the_next_trial(submit: Any, hanging: Path) -> None:
    job, ended = run_two(submit, hanging, "--slot-mode", "warm", "--trial-exit-grace", "2s")
    check_killed_then_next(ended, 2.0)
    log = (ended.job_dir / "da-submit.log").read_text()
    assert len(set(re.findall(r"starting slot (\S+) on", log))) == 1, log  # one slot, reused
    assert ended.db_trials[1]["executor_id"] == ended.db_trials[2]["executor_id"] != ""
