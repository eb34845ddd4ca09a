"""``da-job results``: the trials best first as a table, CSV, or JSON in results.json's one
schema (README), whether the job runs or has ended."""

from __future__ import annotations

from collections.abc import Callable
import json
from typing import Any

from disauto.common.trial_state import TrialState
from disauto.framework import meta
from disauto.submit import results
from disauto.submit.jobs import find
from tests.submit.job_cli.conftest import DaJob
from tests.submit.job_cli.records import JobRecord


SCHEMA_KEYS = {"schema", "job_id", "app_name", "state", "outcome", "message", "exit_status",
               "objective", "direction", "seed", "budget", "parallelism", "done", "counts",
               "started_at", "ended_at", "duration_seconds", "best", "usage", "trials",
               "objectives", "directions", "pareto_front", "infeasible_trials"}
TRIAL_KEYS = {"number", "state", "objective", "assignment", "metrics", "training_seconds",
              "task_id", "message", "usage", "constraints", "feasible"}


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
