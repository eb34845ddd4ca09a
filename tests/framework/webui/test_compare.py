"""The comparison plot's data (``GET /api/compare``): each job's best so far by trial number,
its points only where the best changed and at its last trial; one bad job hides no other."""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.common.trial_state import TrialState
from disauto.framework import _meta as meta
from disauto.framework._store import TrialRow
from disauto.framework.webui.compare import MOST
from disauto.framework.webui.compare import best_so_far
from disauto.framework.webui.compare import compare_data
from disauto.framework.webui.compare import requested
from disauto.framework.webui.sources import ActionError
from disauto.submit.ui import RecordedJobs
from tests.framework.webui.records import ParetoRecorded
from tests.submit.job_cli.records import JobRecord


def trial(number: int, value: float | None, state: TrialState = TrialState.COMPLETED,
          constraints: tuple[float, ...] | None = None) -> TrialRow:
    return TrialRow(number, {}, state, objective=value, constraints=constraints)


def test_the_line_changes_where_a_trial_beats_the_best_and_reaches_the_last_trial() -> None:
    trials = [trial(2, 0.5), trial(1, 0.4), trial(3, 0.5), trial(4, None, TrialState.FAILED),
              trial(5, 0.9, constraints=(0.5,)), trial(6, 0.7), trial(7, 0.1),
              trial(8, None, TrialState.RUNNING)]
    # Equal (3) does not take over, infeasible (5) and unfinished ones are never the best.
    assert best_so_far(trials, maximize=True) == [[1, 0.4], [2, 0.5], [6, 0.7], [8, 0.7]]
    assert best_so_far(trials, maximize=False) == [[1, 0.4], [7, 0.1], [8, 0.1]]
    assert best_so_far([trial(1, 0.3), trial(2, 0.6)], maximize=True) == [[1, 0.3], [2, 0.6]]
    assert best_so_far([trial(1, None, TrialState.PENDING)], maximize=True) == []
    assert best_so_far([], maximize=True) == []


def test_the_jobs_asked_for_each_once_in_order() -> None:
    assert requested({"jobs": ["b,a", "a", "c"]}) == ["b", "a", "c"]
    with pytest.raises(ActionError, match=r"name the jobs to compare: /api/compare\?jobs="):
        requested({})
    with pytest.raises(ActionError, match=f"compare {MOST} jobs at most \\(got 27\\)"):
        requested({"jobs": [",".join(f"j{i}" for i in range(27))]})
    assert requested({"jobs": [",,x,"]}) == ["x"]


def test_each_jobs_line_or_why_it_has_none(tmp_path: Path) -> None:
    home = tmp_path / "home"
    JobRecord(home, "job-a", state="ended")
    JobRecord(home, "job-b", state="ended", completed=2)
    ParetoRecorded(home / "jobs" / "job-p", state=meta.ENDED)
    (home / "jobs" / "job-bad").mkdir()
    (home / "jobs" / "job-bad" / "job.db").write_bytes(b"not a database" * 100)
    lines = compare_data(RecordedJobs(home / "jobs"),
                         ["job-b", "job-a", "job-p", "nothing", "job-bad"])
    assert [line["job_id"] for line in lines] == ["job-b", "job-a", "job-p", "nothing",
                                                  "job-bad"]
    b, a, p, nothing, bad = lines
    # Recorded's completed trials end at 0.5 + 0.1 * i / completed, each better; 9 is the last.
    assert a["points"] == [[i, pytest.approx(0.5 + 0.1 * i / 5)] for i in range(1, 6)] + [
        [9, pytest.approx(0.6)]]
    assert b["points"][-1] == [6, pytest.approx(0.6)] and len(b["points"]) == 3
    assert (a["objective"], a["direction"], a["several"], a["state"], a["trials"]) == (
        "accuracy", "maximize", False, "ended", 9)
    assert p["several"] and p["objective"] == "accuracy" and p["points"]
    assert nothing == {"job_id": "nothing", "error": "no job 'nothing' here"}
    assert bad["error"].startswith("StoreError: cannot open job store ")
    assert bad["error"].endswith("job-bad/job.db: file is not a database")
