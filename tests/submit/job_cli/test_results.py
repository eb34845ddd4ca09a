"""``da-job results``: the trials best first as a table, CSV, or JSON in results.json's one
schema (README), whether the job runs or has ended."""

from __future__ import annotations

from collections.abc import Callable
import csv
import json
from pathlib import Path
import sys
from typing import Any

import pytest

from disauto.common.trial_state import TrialState
from disauto.framework import _meta as meta
from disauto.submit import results
from disauto.submit.jobs import find
from tests.framework.webui.records import INFEASIBLE
from tests.framework.webui.records import PARETO_FRONT
from tests.framework.webui.records import ParetoRecorded
from tests.framework.webui.records import Recorded
from tests.submit.job_cli.conftest import DaJob
from tests.submit.job_cli.records import JobRecord


SCHEMA_KEYS = {"schema", "job_id", "app_name", "state", "outcome", "message", "exit_status",
               "objective", "direction", "seed", "budget", "parallelism", "done", "counts",
               "started_at", "ended_at", "duration_seconds", "best", "usage", "trials",
               "objectives", "directions", "pareto_front", "infeasible_trials", "trial_retries"}
TRIAL_KEYS = {"number", "state", "objective", "assignment", "metrics", "training_seconds",
              "task_id", "message", "usage", "constraints", "feasible", "tries",
              "resumed_from", "parent", "from_step", "explored"}


def shape(document: dict[str, Any]) -> tuple[set[str], set[str], set[str]]:
    """The keys of the document, of its best trial and of every trial."""
    return (set(document), set(document["best"] or {}),
            set().union(*(set(t) for t in document["trials"])))


def test_one_schema_while_the_job_runs_and_after_it_ended(
        da_job: DaJob, job_record: Callable[..., JobRecord]) -> None:
    job = job_record("job-a")
    code, out, err = da_job("results", "job-a", "--format", "json")
    assert (code, err) == (0, "")
    running = json.loads(out)
    assert shape(running) == (SCHEMA_KEYS, {"trial", "objective", "assignment"}, TRIAL_KEYS)
    assert (running["state"], running["outcome"], running["exit_status"]) == ("running", "", None)
    assert running["ended_at"] is None and running["schema"] == results.SCHEMA
    assert (running["done"], running["budget"], running["counts"]["RUNNING"]) == (7, 20, 1)
    assert running["best"]["trial"] == 5 and running["trials"][0]["number"] == 5

    # The job ends; da-submit writes results.json as it does, with its exit status.
    job.controller.kill_trial(job.running, "killed from the job page")
    job.controller.finish(1, "the budget of 20 trials is spent")  # BUDGET_SPENT
    job.store.set_meta(meta.STATE, meta.ENDED)
    ended = find("job-a")
    results.write(ended.folder, results.JobFacts(ended.config, ended.meta, ended.trials,
                                                 "ended", 0))
    code, out, err = da_job("results", "job-a", "--format", "json")
    shown = json.loads(out)
    assert shape(shown) == shape(running)
    assert shown == json.loads((ended.folder / "results.json").read_text())
    assert (shown["state"], shown["outcome"], shown["exit_status"]) == ("ended", "BUDGET_SPENT",
                                                                         0)
    assert shown["message"] == "the budget of 20 trials is spent"
    assert shown["ended_at"] >= shown["started_at"] and shown["counts"]["KILLED"] == 2


def test_an_interrupted_job_says_why(da_job: DaJob,
                                     job_record: Callable[..., JobRecord]) -> None:
    job = job_record("job-a", state="interrupted")
    job.store.set_meta(meta.INTERRUPTED_REASON, "the master at 127.0.0.1:5050 was away for 10m")
    shown = json.loads(da_job("results", "job-a", "--format", "json")[1])
    assert (shown["state"], shown["outcome"], shown["exit_status"]) == (
        "interrupted", "INTERRUPTED", None)
    assert shown["message"] == "the master at 127.0.0.1:5050 was away for 10m"


def test_table_and_csv_are_best_first(da_job: DaJob,
                                      job_record: Callable[..., JobRecord]) -> None:
    job_record("job-a")
    table = da_job("results", "job-a")[1].splitlines()
    assert table[0].split()[:3] == ["trial", "state", "accuracy"]
    assert [line.split()[0] for line in table[2:5]] == ["trial-0005", "trial-0004",
                                                         "trial-0003"]
    rows = da_job("results", "job-a", "--format", "csv")[1].splitlines()
    assert rows[0].startswith("trial,state,objective,") and rows[1].startswith("5,COMPLETED,")
    assert str(TrialState.PRUNED) in "".join(rows)


def test_two_objectives_have_a_column_each_the_front_first_and_the_infeasible_marked(
        da_job: DaJob, home: Path) -> None:
    ParetoRecorded(home / "jobs" / "job-p", state=meta.ENDED)
    code, out, err = da_job("results", "job-p")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, out
    assert lines[0].split()[:5] == ["trial", "state", "note", "accuracy", "latency"]
    rows = {line.split()[0]: line.split() for line in lines[2:] if line.startswith("trial-")}
    order = [line.split()[0] for line in lines[2:] if line.startswith("trial-")]
    # The front first (best accuracy first), then the rest best first, infeasible after them.
    assert order[:4] == ["trial-0004", "trial-0007", "trial-0002", "trial-0001"]
    assert order[4:8] == ["trial-0003", "trial-0008", "trial-0005", f"trial-{INFEASIBLE:04d}"]
    assert [rows[f"trial-{n:04d}"][2] for n in PARETO_FRONT] == ["front"] * 4
    assert rows[f"trial-{INFEASIBLE:04d}"][2] == "infeasible"
    assert rows["trial-0004"][3:5] == ["0.9", "40"]
    said = " ".join(out.split())
    assert ("Pareto front of accuracy (maximize), latency (minimize): trial-0001, trial-0002, "
            "trial-0004, trial-0007") in said
    assert f"infeasible (a constraint above 0): trial-{INFEASIBLE:04d}" in said

    table = list(csv.DictReader(da_job("results", "job-p", "--format", "csv")[1]
                                .splitlines()))
    assert [int(row["trial"]) for row in table[:4]] == [4, 7, 2, 1]
    assert {int(row["trial"]) for row in table if row["pareto_front"] == "1"} == \
        set(PARETO_FRONT)
    assert {int(row["trial"]) for row in table if row["feasible"] == "0"} == {INFEASIBLE}
    assert table[0]["metric:latency"] == "40.0"


def test_json_keeps_each_try_of_a_retried_trial(da_job: DaJob, home: Path) -> None:
    ParetoRecorded(home / "jobs" / "job-p", state=meta.ENDED)
    shown = json.loads(da_job("results", "job-p", "--format", "json")[1])
    assert shown["trial_retries"] == 1
    trials = {t["number"]: t for t in shown["trials"]}
    assert (trials[8]["state"], trials[8]["task_id"], trials[8]["message"]) == (
        "COMPLETED", "trial-0008.1", "")
    [first] = trials[8]["tries"]
    assert {k: first[k] for k in ("task_id", "outcome", "message", "metrics", "reports")} == {
        "task_id": "trial-0008", "outcome": "failed",
        "message": "TASK_FAILED: exited with status 1", "metrics": {}, "reports": 0}
    assert (trials[9]["state"], [t["task_id"] for t in trials[9]["tries"]]) == (
        "FAILED", ["trial-0009"])
    assert trials[9]["message"] == "TASK_FAILED: exited with status 2"
    assert all(t["tries"] == [] for n, t in trials.items() if n not in (8, 9))
    assert shown["counts"]["FAILED"] == 1  # trial 9 once, however many tries it took


@pytest.mark.parametrize("width", [80, 300])
def test_the_table_fits_the_terminal_and_says_what_it_left_out(
        da_job: DaJob, home: Path, monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    Recorded(home / "jobs" / "job-test", extra=6)  # six long-named parameters more
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, _ = da_job("results", "job-test")
    lines = out.splitlines()
    assert code == 0 and max(len(line) for line in lines) <= width, out
    rows = [line.split() for line in lines if line.startswith("trial-")]
    assert not any("…" in cell for row in rows for cell in row), out  # numbers whole
    assert {row[0]: row[3] for row in rows}["trial-0005"] == "0.006"  # lr: 0.001 * (5 + 1)
    said = " ".join(out.split())
    if width == 80:
        assert lines[-1] == "(6 columns left out: da-job results job-test --format csv shows all)"
    else:
        assert "left out" not in said and lines[0].split()[-1] == "time(s)"


def test_parquet_is_the_csvs_columns_typed_in_a_file(
        da_job: DaJob, home: Path, tmp_path: Path) -> None:
    from pyarrow import parquet

    ParetoRecorded(home / "jobs" / "job-p", state=meta.ENDED)
    target = tmp_path / "trials.parquet"
    assert da_job("results", "job-p", "--format", "parquet", "-o", str(target)) == (
        0, f"da-job: 10 trials of job job-p written to {target}\n", "")
    table = parquet.read_table(target)
    rows = list(csv.DictReader(da_job("results", "job-p", "--format", "csv")[1].splitlines()))
    assert table.column_names == list(rows[0])
    for row, typed in zip(rows, table.to_pylist(), strict=True):
        for name, text in row.items():
            value = typed[name]
            if text == "":
                assert value in (None, ""), name
            elif isinstance(value, float):
                assert value == pytest.approx(float(text)), name
            else:
                assert str(value) == text, name
    assert str(table.schema.field("trial").type) == "int64"
    assert str(table.schema.field("metric:latency").type) == "double"
    assert str(table.schema.field("peak_rss_mb").type) == "double"
    described = json.loads(table.schema.metadata[b"disauto"])
    assert described == {"job_id": "job-p", "objectives": ["accuracy", "latency"],
                         "directions": ["maximize", "minimize"], "schema": results.SCHEMA}
    assert [p.name for p in tmp_path.iterdir() if p.name != "home"] == ["trials.parquet"]


def test_o_writes_any_format_to_a_file_and_refuses_a_jobs_folder(
        da_job: DaJob, job_record: Callable[..., JobRecord], home: Path, tmp_path: Path) -> None:
    job_record("job-a", state="ended")
    printed = da_job("results", "job-a", "--format", "csv")[1]
    target = tmp_path / "a.csv"
    target.write_text("what was there\n")
    assert da_job("results", "job-a", "--format", "csv", "-o", str(target)) == (
        0, f"da-job: 9 trials of job job-a written to {target}\n", "")
    assert target.read_bytes().decode() == printed
    inside = home / "jobs" / "job-a" / "job.db"
    record = inside.read_bytes()
    for given, why in ((str(inside), f"inside {home}/jobs, where the jobs' records are; give a "
                                     "file elsewhere"),
                       (str(tmp_path), "is a folder; give a file name"),
                       (str(tmp_path / "no" / "a.csv"), f"no folder {tmp_path}/no")):
        assert da_job("results", "job-a", "--format", "parquet", "-o", given) == (
            2, "", f"da-job: error: -o {given}: {why}\n")
    assert inside.read_bytes() == record
    assert da_job("results", "job-a", "--format", "parquet") == (
        2, "", "da-job: error: --format parquet writes a file: give -o FILE (da-job results "
               "JOB --format parquet -o trials.parquet)\n")


def test_parquet_without_pyarrow_says_what_to_install(
        da_job: DaJob, job_record: Callable[..., JobRecord], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    job_record("job-a", state="ended")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    assert da_job("results", "job-a", "--format", "parquet", "-o", str(tmp_path / "a")) == (
        1, "", "da-job: error: --format parquet needs pyarrow: pip install "
               "'disauto[dataframe]'\n")
    assert not (tmp_path / "a").exists()
