"""``load_job``: a job's record as Python objects, from a constructed record (no process):
trials with their intermediate values split among their tries, the best, the Pareto front, and
``to_dataframe()`` (or one line when pandas is missing); ``list_jobs()`` and ``dir(disauto)``."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
import sys

import pandas as pd
import pytest

from disauto import load_job
from disauto.framework import _meta as meta
from disauto.submit.jobs import JobLookupError
from tests.framework.webui.records import INFEASIBLE
from tests.framework.webui.records import PARETO_FRONT
from tests.framework.webui.records import PARETO_POINTS
from tests.framework.webui.records import ParetoRecorded


@pytest.fixture
def made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ParetoRecorded:
    monkeypatch.setenv("DISAUTO_HOME", str(tmp_path / "home"))
    return ParetoRecorded(tmp_path / "home" / "jobs" / "job-pareto-1", state=meta.ENDED)


def test_the_trials_best_and_front_are_the_records(made: ParetoRecorded) -> None:
    record = load_job("job-pareto")  # a unique prefix, as da-job takes
    assert (record.job_id, record.state, record.folder) == ("job-pareto-1", "ended", made.folder)
    assert (record.objectives, record.directions) == (("accuracy", "latency"),
                                                      ("maximize", "minimize"))
    rows = {t.number: t for t in made.store.trials()}
    assert [t.number for t in record.trials] == sorted(rows)
    for trial in record.trials:
        row = rows[trial.number]
        assert (trial.state, trial.assignment, trial.metrics, trial.objective) == (
            str(row.state), row.assignment, row.metrics, row.objective)
        assert (trial.constraints, trial.usage, trial.task_id) == (
            row.constraints, row.usage.as_columns(), row.task_id)
    assert record.trial(1).values == PARETO_POINTS[1]
    assert record.trial(INFEASIBLE).feasible is False
    assert record.best is not None and record.best.number == 4
    assert [t.number for t in record.pareto_front] == sorted(PARETO_FRONT)
    with pytest.raises(KeyError, match="job job-pareto-1 has no trial 42"):
        record.trial(42)


def test_intermediate_values_are_the_last_trys_and_each_try_keeps_its_own(
        made: ParetoRecorded) -> None:
    # Trial 10 runs: its first try reports two steps, fails, and its second reports one.
    made.report(10, {"accuracy": 0.2}, step=0)
    made.report(10, {"accuracy": 0.3}, step=1)
    made.status(10, 0, "TASK_FAILED", message="exited with status 3")
    made.run(10, 1)
    made.report(10, {"accuracy": 0.25}, step=0)
    trial = load_job("job-pareto-1").trial(10)
    assert (trial.state, trial.task_id, trial.intermediate_values) == (
        "RUNNING", "trial-0010.1", {0: 0.25})
    [first] = trial.tries
    assert (first.task_id, first.outcome, first.message) == (
        "trial-0010", "failed", "TASK_FAILED: exited with status 3")
    assert first.intermediate_values == {0: 0.2, 1: 0.3}
    assert first.metrics == {"accuracy": 0.3}
    # A completed trial's steps: its one step report, not its final one.
    assert load_job("job-pareto-1").trial(1).intermediate_values == {
        0: pytest.approx(PARETO_POINTS[1][0] - 0.1)}


def test_a_try_that_resumed_from_a_checkpoint_continues_the_curve_it_resumed(
        made: ParetoRecorded) -> None:
    # Trial 10's first try reports steps 0-2 and fails; its second resumes from step 1's
    # checkpoint and reports step 2 again: the curve is the first try's up to 1, then its own.
    for step, value in enumerate((0.2, 0.3, 0.35)):
        made.report(10, {"accuracy": value}, step=step)
    made.status(10, 0, "TASK_FAILED", message="exited with status 3")
    made.store.update_trial(10, resumed_from={"trial": 10, "step": 1,
                                              "name": "000002-step-1.ckpt"})
    made.run(10, 1)
    made.report(10, {"accuracy": 0.5}, step=2)
    trial = load_job("job-pareto-1").trial(10)
    assert (trial.resumed_from_step, trial.intermediate_values) == (1, {0: 0.2, 1: 0.3, 2: 0.5})
    [first] = trial.tries
    assert (first.resumed_from_step, first.intermediate_values) == (None, {0: 0.2, 1: 0.3,
                                                                           2: 0.35})


def test_to_dataframe_has_a_row_per_trial(made: ParetoRecorded) -> None:
    record = load_job("job-pareto-1")
    frame = record.to_dataframe()
    assert list(frame["number"]) == [t.number for t in record.trials]
    assert list(frame["params_lr"]) == [t.assignment["lr"] for t in record.trials]
    front = frame[frame["pareto_front"]]
    assert sorted(front["number"]) == sorted(PARETO_FRONT)
    assert list(frame.loc[frame["number"] == 8, "tries"]) == [2]
    assert list(frame.loc[frame["number"] == INFEASIBLE, "feasible"]) == [False]
    assert frame.loc[frame["number"] == 4, "metrics_latency"].item() == 40.0


def test_without_pandas_to_dataframe_says_how_to_get_it(
        made: ParetoRecorded, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas fails, as uninstalled
    with pytest.raises(ImportError) as raised:
        load_job("job-pareto-1").to_dataframe()
    assert str(raised.value) == ("to_dataframe() needs pandas, which is not installed: "
                                 "pip install pandas")


def test_an_unknown_job_is_one_line(made: ParetoRecorded) -> None:
    with pytest.raises(JobLookupError, match="no job 'nope' under .*"):
        load_job("nope")


def test_to_dataframe_has_optunas_times_and_a_value_column_per_objective(
        made: ParetoRecorded) -> None:
    """``values_<objective>``, ``datetime_start``, ``datetime_complete`` and ``duration``, as
    Optuna's ``trials_dataframe()`` names them: local times, and their difference."""
    record = load_job("job-pareto-1")
    frame = record.to_dataframe().set_index("number")
    for trial in record.trials:
        row = frame.loc[trial.number]
        for index, name in enumerate(record.objectives):
            expected = trial.values[index] if trial.values else None
            assert (row[f"values_{name}"] == expected) if expected is not None \
                else pd.isna(row[f"values_{name}"]), (trial.number, name)
        if trial.started_at is None:
            assert pd.isna(row["datetime_start"])
        else:
            assert row["datetime_start"] == datetime.fromtimestamp(trial.started_at)
        if trial.ended_at is None or trial.started_at is None:
            assert pd.isna(row["datetime_complete"]) or pd.isna(row["duration"])
        else:
            assert row["datetime_complete"] == datetime.fromtimestamp(trial.ended_at)
            assert row["duration"] == row["datetime_complete"] - row["datetime_start"]
    assert record.trial(1).values == PARETO_POINTS[1]
    assert frame.loc[1, "values_latency"] == PARETO_POINTS[1][1]
    running = frame.loc[10]  # still running: started, not complete
    assert pd.isna(running["datetime_complete"]) and pd.isna(running["duration"])
    assert str(frame["datetime_start"].dtype).startswith("datetime64")
    assert str(frame["duration"].dtype).startswith("timedelta64")


def test_list_jobs_lists_what_da_job_list_does(made: ParetoRecorded, tmp_path: Path) -> None:
    from disauto import list_jobs
    from disauto.submit.jobs import scan

    other = ParetoRecorded(tmp_path / "home" / "jobs" / "job-pareto-2", state=meta.ENDED)
    broken = tmp_path / "home" / "jobs" / "job-broken"
    broken.mkdir()
    (broken / "job.db").write_bytes(b"not a database, not at all" * 100)
    listed = list_jobs()
    jobs, unreadable = scan()
    assert [s.job_id for s in listed] == [j.job_id for j in jobs] + ["job-broken"]
    assert {s.job_id for s in listed[:2]} == {"job-pareto-1", other.folder.name}
    for status, job in zip(listed, jobs, strict=False):
        row = job.summary()
        assert (status.state, status.outcome, status.done, status.budget, status.app_name) == (
            row["state"], row["outcome"], row["done"], row["budget"], row["name"])
        assert status.started_at == row["started_at"]
        assert status.best == (row["best"] or {}).get("trial")
    assert (listed[-1].state, listed[-1].message) == ("unreadable", str(unreadable[0]))


def test_dir_of_disauto_shows_the_public_names() -> None:
    import disauto

    public = [name for name in dir(disauto) if not name.startswith("_")]
    assert public == sorted(disauto.__all__)
    assert {"optimize", "list_jobs", "load_job", "submit", "JobRecord"} <= set(public)
    assert "importlib" not in dir(disauto) and "__version__" in dir(disauto)
