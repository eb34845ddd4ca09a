"""--trial-retries with real trials on the embedded cluster: a script that fails runs again with
the same number and assignment, each try's failure kept in the record, and the search and
--max-failed-trials count the trial once, by how its last try ended."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from disauto.framework._store import JobStore
from disauto.framework._store import TrialRow
from tests.e2e.conftest import common_flags


pytestmark = pytest.mark.slow

FAILS_FIRST = '''
import os, pathlib
from apprunner_sdk import get_params, report
number = os.environ["DISAUTO_TRIAL_NUMBER"]
mark = pathlib.Path({marks!r}) / f"tried-{{number}}"
x = float(get_params()["x"])
if not mark.exists():
    mark.write_text("once")
    report(accuracy=0.01, step=0)
    raise SystemExit(f"trial {{number}} fails its first try on purpose")
report(accuracy=1.0 - x, step=0)
report(accuracy=1.0 - x, final=True)
'''

ALWAYS_FAILS = '''
import os
raise SystemExit(f"trial {os.environ['DISAUTO_TRIAL_NUMBER']} always fails")
'''


def _record(folder: Path) -> tuple[list[TrialRow], list[dict[str, Any]]]:
    store = JobStore(folder / "job.db")
    try:
        return store.trials(), store.reports()
    finally:
        store.close()


def test_a_script_that_fails_its_first_try_completes_on_its_retry(
        submit: Any, workdir: Path) -> None:
    marks = workdir / "marks"
    marks.mkdir()
    (workdir / "runner.py").write_text(FAILS_FIRST.format(marks=str(marks)))
    job = submit(*common_flags(workdir, "--trail-steps", "3", "--parallelism", "2",
                               "--trial-retries", "1", "--max-failed-trials", "0"))
    assert job.wait(timeout=300) == 0, job.output
    results = job.results()
    assert (results["outcome"], results["trial_retries"]) == ("BUDGET_SPENT", 1), job.output
    assert results["counts"]["COMPLETED"] == 3 and results["counts"]["FAILED"] == 0
    trials, reports = _record(job.job_dir())
    assert [t.number for t in trials] == [1, 2, 3]  # the budget counted each trial once
    for trial in trials:
        name = f"trial-{trial.number:04d}"
        assert (trial.state, trial.task_id, trial.retries) == ("COMPLETED", f"{name}.1", 1)
        assert trial.objective == pytest.approx(1.0 - float(trial.assignment["x"]))
        [first] = trial.tries
        assert (first["task_id"], first["outcome"], first["reports"]) == (name, "failed", 1)
        assert first["message"].startswith("TASK_FAILED")
        assert f"trial {trial.number} fails its first try on purpose" in first["message"]
        assert first["metrics"] == {"accuracy": 0.01}
        # Nothing the first try reported is lost: its step report, then the retry's two.
        mine = [(r["step"], r["final"]) for r in reports if r["trial"] == trial.number]
        assert mine == [(0, False), (0, False), (None, True)]
    shown = {t["number"]: t for t in results["trials"]}
    assert shown[1]["tries"][0]["task_id"] == "trial-0001"


def test_a_script_that_always_fails_is_retried_then_counts_one_failure(
        submit: Any, workdir: Path) -> None:
    """Two retries each: trial 1 fails three times and is one failure (within
    --max-failed-trials 1), so trial 2 runs; its three failures make the second, past it."""
    (workdir / "runner.py").write_text(ALWAYS_FAILS)
    job = submit(*common_flags(workdir, "--trail-steps", "4", "--parallelism", "1",
                               "--trial-retries", "2", "--max-failed-trials", "1"))
    assert job.wait(timeout=300) == 4, job.output  # TOO_MANY_FAILURES
    results = job.results()
    assert results["outcome"] == "TOO_MANY_FAILURES", job.output
    assert results["message"].startswith("2 trials failed (--max-failed-trials 1); last: "
                                         "trial-0002: TASK_FAILED")
    trials, _ = _record(job.job_dir())
    assert [(t.number, t.state, t.task_id) for t in trials] == [
        (1, "FAILED", "trial-0001.2"), (2, "FAILED", "trial-0002.2")]
    for trial in trials:
        name = f"trial-{trial.number:04d}"
        assert [(t["task_id"], t["outcome"]) for t in trial.tries] == [
            (name, "failed"), (f"{name}.1", "failed")]
        assert all(f"trial {trial.number} always fails" in t["message"] for t in trial.tries)
        assert f"trial {trial.number} always fails" in trial.message
