"""Issue 30's search through da-submit and the embedded cluster: several objectives and their
Pareto front, conditional parameters, constraints, CMA-ES and Hyperband -- real trials, checked
against the job's record."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
import subprocess
import sys
from typing import Any

import pytest

from disauto.common.objectives import is_feasible
from disauto.framework._store import JobStore
from disauto.framework._store import TrialRow
from disauto.submit.params import load_parameter_file
from tests.e2e.conftest import ROOT
from tests.e2e.conftest import Job
from tests.e2e.conftest import common_flags


pytestmark = pytest.mark.slow

EXAMPLES = ROOT / "examples"

CONSTRAINED_RUNNER = '''
from apprunner_sdk import get_params, report
p = get_params()
x = float(p["x"])
report(accuracy=1.0 - (x - 0.7) ** 2, final=True, constraints=[x - 0.5])
'''

STEPPED_RUNNER = '''
import time
from apprunner_sdk import get_params, report
p = get_params()
acc = 1.0 - (float(p["x"]) - 0.3) ** 2 - 0.1 * float(p["n"])
for step in range(4):
    if report(accuracy=acc * (step + 1) / 4, step=step):
        raise SystemExit(0)
    time.sleep(0.1)
report(accuracy=acc, final=True)
'''


def _example_flags(script: str, params: str, *extra: str) -> list[str]:
    return ["--app-name", "e2e-search", "--files", str(EXAMPLES / script),
            "--app-runner-launch-cmd", f"python {script}",
            "--app-runner-cpus", "0.5", "--app-runner-memory", "256M",
            "--app-core-cpus", "0.5", "--app-core-memory", "256M",
            "--tuning-parameters", str(EXAMPLES / params), "--seed", "5", *extra]


def _record(job: Job) -> list[TrialRow]:
    store = JobStore(job.job_dir() / "job.db")
    try:
        return store.trials()
    finally:
        store.close()


def _states(results: dict[str, Any]) -> list[str]:
    return [t["state"] for t in results["trials"]]


def _dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Accuracy up, latency down: ``a`` is no worse in both and better in one."""
    return a[0] >= b[0] and a[1] <= b[1] and a != b


def test_a_two_objective_tpe_job_records_its_pareto_front(submit: Any) -> None:
    job = submit(*_example_flags(
        "multi_objective.py", "multi_objective_params.json",
        "--objective", "accuracy,latency_ms", "--direction", "maximize,minimize",
        "--tuning-type", "bayesian", "--bayes-backend", "tpe",
        "--tuning-setting", "n_startup_trials=3", "--trail-steps", "8", "--parallelism", "2"),
        env={"COLUMNS": "80"})
    assert job.wait(timeout=400) == 0, job.output
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT", job.output
    assert results["objectives"] == ["accuracy", "latency_ms"]
    trials = _record(job)
    assert [t.state for t in trials] == ["COMPLETED"] * 8
    points = {t.number: (t.metrics["accuracy"], t.metrics["latency_ms"]) for t in trials
              if is_feasible(t.constraints)}
    front = sorted(n for n, p in points.items()
                   if not any(_dominates(q, p) for m, q in points.items() if m != n))
    assert front and results["pareto_front"] == front
    infeasible = sorted(t.number for t in trials if not is_feasible(t.constraints))
    assert results["infeasible_trials"] == infeasible
    assert all(t.constraints is not None for t in trials)
    # Every line says the front, none a best by the first objective (issue 36).
    lines = job.output.splitlines()
    assert max(len(line) for line in lines if "front" in line) <= 80, job.output
    assert "| best " not in job.output and "da-submit: best trial-" not in job.output
    assert any(f"| front {len(front)} trial{'s' if len(front) > 1 else ''}" in line
               or f"| front {len(front)} |" in line or line.endswith(f"| front {len(front)}")
               for line in lines), job.output
    heading = (f"da-submit: front: {len(front)} trial{'s' if len(front) > 1 else ''} of "
               "accuracy (maximize), latency_ms (minimize)")
    assert heading in lines, job.output
    named = lines[lines.index(heading) + 1:lines.index(heading) + 1 + min(len(front), 5)]
    assert sorted(int(line.split("trial-")[1][:4]) for line in named) == sorted(
        sorted(front, key=lambda n: points[n][0], reverse=True)[:5]), job.output
    assert all(" accuracy=" in line and " latency_ms=" in line for line in named)
    csv_rows = (job.job_dir() / "results.csv").read_text().splitlines()
    assert csv_rows[0].endswith("feasible,constraints,pareto_front")


def _valid_combinations(params: Path, points: int) -> set[str]:
    """Every valid assignment of a conditional grid, by brute force over the full product."""
    space = load_parameter_file(params)
    found = set()
    for values in itertools.product(*(p.grid_axis(points) for p in space)):
        full = dict(zip(space.names, values, strict=True))
        kept: dict[str, Any] = {}
        for param in space.evaluation_order:
            if space.conditions.is_active(param.name, kept):
                kept[param.name] = full[param.name]
        found.add(json.dumps(kept, sort_keys=True))
    return found


@pytest.mark.long  # in make test-long: over 20 s, and make test covers its path otherwise
def test_a_conditional_grid_runs_exactly_the_valid_combinations(submit: Any) -> None:
    job = submit(*_example_flags(
        "conditional.py", "conditional_params.json", "--tuning-type", "grid-search",
        "--tuning-setting", "grid_points_per_range=2", "--trail-steps", "100",
        "--parallelism", "4"))
    assert job.wait(timeout=400) == 0, job.output
    results = job.results()
    assert results["outcome"] == "SPACE_EXHAUSTED", job.output
    ran = [json.dumps(t.assignment, sort_keys=True) for t in _record(job)]
    expected = _valid_combinations(EXAMPLES / "conditional_params.json", 2)
    assert len(ran) == len(set(ran)) == len(expected) == 13  # sgd 8, adam 4, lbfgs 1
    assert set(ran) == expected
    assert set(_states(results)) == {"COMPLETED"}


_ACTIVE = {"sgd": {"optimizer", "momentum", "nesterov", "learning_rate"},
           "adam": {"optimizer", "beta_1", "learning_rate"}, "lbfgs": {"optimizer"}}


def test_a_conditional_tpe_job_gives_each_trial_only_its_active_parameters(
        submit: Any) -> None:
    job = submit(*_example_flags(
        "conditional.py", "conditional_params.json", "--tuning-type", "bayesian",
        "--tuning-setting", "n_startup_trials=3", "--trail-steps", "8", "--parallelism", "2"))
    assert job.wait(timeout=400) == 0, job.output
    trials = _record(job)
    assert [t.state for t in trials] == ["COMPLETED"] * 8, job.output
    for trial in trials:
        assert set(trial.assignment) == _ACTIVE[trial.assignment["optimizer"]], trial.assignment
    assert len({t.assignment["optimizer"] for t in trials}) > 1


def test_a_constrained_job_marks_infeasible_trials_and_picks_a_feasible_best(
        submit: Any, workdir: Path) -> None:
    (workdir / "runner.py").write_text(CONSTRAINED_RUNNER)
    job = submit(*common_flags(workdir, "--trail-steps", "8", "--parallelism", "4"))
    assert job.wait() == 0, job.output
    results = job.results()
    trials = _record(job)
    infeasible = [t.number for t in trials if float(t.assignment["x"]) > 0.5]
    assert infeasible and len(infeasible) < 8, "the draws must fall on both sides"
    assert results["infeasible_trials"] == infeasible
    by_number = {t["number"]: t for t in results["trials"]}
    assert all(by_number[n]["feasible"] is (n not in infeasible) for n in by_number)
    assert all(by_number[n]["constraints"] == [pytest.approx(float(
        by_number[n]["assignment"]["x"]) - 0.5)] for n in by_number)
    best = results["best"]
    assert best["trial"] not in infeasible and best["assignment"]["x"] <= 0.5
    feasible = [t.objective for t in trials if t.number not in infeasible]
    assert best["objective"] == max(feasible)  # type: ignore[type-var]
    assert "infeasible (a constraint above 0):" in job.output
    listed = _da_job(job, "results", results["job_id"])
    assert "infeasible" in listed


def _da_job(job: Job, *args: str) -> str:
    environ = {**os.environ, "DISAUTO_HOME": str(job.home),
               "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "disauto.submit.job_cli", *args], env=environ,
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def test_a_cmaes_job_runs_to_its_budget(submit: Any, workdir: Path) -> None:
    job = submit(*common_flags(workdir, "--tuning-type", "bayesian", "--bayes-backend", "cmaes",
                               "--tuning-setting", "n_startup_trials=2", "--trail-steps", "8",
                               "--parallelism", "2"))
    assert job.wait() == 0, job.output
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT", job.output
    assert _states(results) == ["COMPLETED"] * 8
    assert len({json.dumps(t["assignment"], sort_keys=True) for t in results["trials"]}) == 8


def test_a_hyperband_job_stops_trials_early_and_completes(submit: Any, workdir: Path) -> None:
    (workdir / "runner.py").write_text(STEPPED_RUNNER)
    job = submit(*common_flags(workdir, "--trail-steps", "12", "--parallelism", "1",
                               "--early-stopping", "hyperband", "--early-stopping-setting",
                               "max_resource=4", "--early-stopping-setting",
                               "reduction_factor=2"))
    assert job.wait(timeout=400) == 0, job.output
    results = job.results()
    states = _states(results)
    assert results["outcome"] == "BUDGET_SPENT", job.output
    assert "FAILED" not in states and len(states) == 12
    assert "PRUNED" in states, job.output
    pruned = [t for t in results["trials"] if t["state"] == "PRUNED"]
    assert all(t["objective"] < results["best"]["objective"] for t in pruned)
