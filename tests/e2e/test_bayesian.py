"""Bayesian jobs through da-submit and the embedded cluster: sync and async, early stopping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import common_flags


pytestmark = pytest.mark.slow

# Reports a rising curve step by step and stops when AppCore says so (early stopping).
STEPPED_RUNNER = '''
import time
from apprunner_sdk import get_params, report
p = get_params()
acc = 1.0 - (float(p["x"]) - 0.3) ** 2 - 0.01 * float(p["n"])
for step in range(4):
    if report(accuracy=acc * (step + 1) / 4, step=step):
        raise SystemExit(0)  # pruned: exit at once
    time.sleep(0.2)
report(accuracy=acc, final=True)
'''


def _states(results: dict[str, Any]) -> list[str]:
    return [t["state"] for t in sorted(results["trials"], key=lambda t: t["number"])]


@pytest.mark.parametrize(("backend", "mode"), [pytest.param("gp", "sync", marks=pytest.mark.long),
                                               ("tpe", "async")])
def test_a_bayesian_job_runs_to_its_budget(submit: Any, workdir: Path, backend: str,
                                           mode: str) -> None:
    job = submit(*common_flags(workdir, "--tuning-type", "bayesian", "--bayes-backend", backend,
                               "--bayes-mode", mode, "--tuning-setting", "n_startup_trials=2",
                               "--trail-steps", "6", "--parallelism", "2"))
    assert job.wait() == 0, job.output
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT", job.output
    assert _states(results) == ["COMPLETED"] * 6
    assignments = [json.dumps(t["assignment"], sort_keys=True) for t in results["trials"]]
    assert len(set(assignments)) == 6
    assert all(0.0 <= t["assignment"]["x"] <= 1.0 and t["assignment"]["n"] in (0, 1, 2)
               for t in results["trials"])
    assert "(bayesian, 6 trials, parallelism 2" in job.words


def test_early_stopping_prunes_trials_and_the_job_still_completes(
        submit: Any, workdir: Path) -> None:
    (workdir / "runner.py").write_text(STEPPED_RUNNER)
    job = submit(*common_flags(workdir, "--tuning-type", "bayesian", "--trail-steps", "8",
                               "--parallelism", "2", "--early-stopping", "median",
                               "--early-stopping-setting", "n_startup_trials=2"))
    assert job.wait() == 0, job.output
    results = job.results()
    states = _states(results)
    assert results["outcome"] == "BUDGET_SPENT", job.output
    assert "FAILED" not in states and len(states) == 8
    assert "PRUNED" in states, job.output
    pruned = [t for t in results["trials"] if t["state"] == "PRUNED"]
    best = results["best"]["objective"]
    assert all(t["objective"] < best for t in pruned)  # their last intermediate value
    assert "PRUNED" in job.output  # the table shows them
