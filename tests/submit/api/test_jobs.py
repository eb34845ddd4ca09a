"""The Python API with real jobs on the embedded cluster, as a notebook uses it: ``submit(...)``
starts the job in the background, ``wait()`` follows it to its end and ``load_job(...)`` reads
it back (checked against the record); ``kill()`` ends a running one through the control
channel; the README's example runs; and ``import disauto`` loads nothing heavy."""

from __future__ import annotations

import json
import os
from pathlib import Path
import re
import subprocess
import sys
from typing import Any

import pytest

from disauto.framework._store import JobStore
from tests.e2e.conftest import ROOT
from tests.e2e.conftest import nothing_left


pytestmark = [pytest.mark.slow, pytest.mark.integration]

STEPPED = '''
from apprunner_sdk import get_params, report
x = float(get_params()["x"])
accuracy = 1.0 - (x - 0.3) ** 2
for step in range(3):
    report(accuracy=accuracy * (step + 1) / 3, loss=x * step, step=step)
report(accuracy=accuracy, loss=x, final=True)
'''

SLEEPER = '''
import time
from apprunner_sdk import report
report(accuracy=0.1, step=0)
time.sleep(300)
'''

SPACE = {"parameters": [{"name": "x", "type": "bound", "value": [0.0, 1.0]}]}


@pytest.fixture
def notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A notebook's working folder, its DISAUTO_HOME under it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DISAUTO_HOME", str(tmp_path / "home"))
    return tmp_path


def options(script: Path, **extra: Any) -> dict[str, Any]:
    return {"app_name": "notebook", "files": [script.name],
            "app_runner_launch_cmd": f"python {script.name}", "app_runner_cpus": 0.5,
            "app_runner_memory": "128M", "app_core_cpus": 0.5, "app_core_memory": "128M",
            "tuning_type": "random-search", "tuning_parameters": SPACE, "seed": 3, **extra}


def test_submit_wait_and_load_a_job_as_a_notebook_does(notebook: Path) -> None:
    from disauto import load_job
    from disauto import submit

    script = notebook / "stepped.py"
    script.write_text(STEPPED)
    job = submit(**options(script, trail_steps=4, parallelism=2))
    assert job.folder == notebook / "home" / "jobs" / job.job_id
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/jobs/\S+/", job.page), job.page
    assert json.loads((job.folder / "parameters.json").read_text()) == SPACE
    status = job.wait(timeout=300)
    assert (status.state, status.outcome, status.done, status.budget) == (
        "ended", "BUDGET_SPENT", 4, 4), (job.folder / "da-submit.out").read_text()
    assert status.counts["COMPLETED"] == 4

    record = load_job(job.job_id)
    store = JobStore(job.folder / "job.db")
    try:
        rows, reports = store.trials(), store.reports()
    finally:
        store.close()
    assert [t.number for t in record.trials] == [r.number for r in rows] == [1, 2, 3, 4]
    for trial, row in zip(record.trials, rows, strict=True):
        assert (trial.state, trial.assignment, trial.metrics, trial.objective) == (
            "COMPLETED", row.assignment, row.metrics, row.objective)
        steps = {r["step"]: r["metrics"]["accuracy"] for r in reports
                 if r["trial"] == row.number and not r["final"]}
        assert trial.intermediate_values == steps and sorted(steps) == [0, 1, 2]
        assert trial.usage == row.usage.as_columns() and trial.tries == ()
    saved = json.loads((job.folder / "results.json").read_text())
    assert record.exit_status == saved["exit_status"] == 0
    assert record.best is not None and record.best.number == saved["best"]["trial"]
    assert [t.number for t in record.pareto_front] == saved["pareto_front"]

    frame = record.to_dataframe()
    assert list(frame["number"]) == [1, 2, 3, 4]
    assert list(frame["params_x"]) == [r.assignment["x"] for r in rows]
    assert list(frame["metrics_accuracy"]) == [r.metrics["accuracy"] for r in rows]
    assert list(frame["metrics_loss"]) == [r.metrics["loss"] for r in rows]
    assert list(frame["state"]) == ["COMPLETED"] * 4


def test_kill_ends_a_running_job_through_the_control_channel(notebook: Path) -> None:
    from disauto import JobError
    from disauto import load_job
    from disauto import submit

    script = notebook / "sleeper.py"
    script.write_text(SLEEPER)
    job = submit(**options(script, trail_steps=4, parallelism=2))
    assert job.status().state == "running"
    status = job.kill(wait=60)
    assert (status.state, status.outcome) == ("ended", "JOB_KILLED")
    assert status.message == "killed with Job.kill() of the Python API"
    record = load_job(job.job_id)
    assert record.state == "ended" and record.exit_status == 5
    assert all(t.state in ("KILLED", "COMPLETED") for t in record.trials)
    assert nothing_left(job.job_id)
    with pytest.raises(JobError, match=f"job {job.job_id} has already ended \\(JOB_KILLED\\)"):
        job.kill()


def test_the_readme_example_runs(tmp_path: Path) -> None:
    environ = {**os.environ, "DISAUTO_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "python_api.py")],
                          cwd=tmp_path, env=environ, capture_output=True, text=True,
                          timeout=500, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    job_id = re.search(r"^submitted (\S+);", done.stdout, re.MULTILINE)
    assert job_id is not None, done.stdout
    assert "BUDGET_SPENT: 8 trials" in done.stdout
    saved = json.loads((tmp_path / "home" / "jobs" / job_id.group(1) / "results.json")
                       .read_text())
    printed = [int(n) for n in re.findall(r"^front: trial (\d+) ", done.stdout, re.MULTILINE)]
    assert printed == saved["pareto_front"] and printed
    assert "metrics_latency_ms" in done.stdout  # the DataFrame


def test_importing_disauto_loads_nothing_heavy() -> None:
    probe = ("import sys, disauto\n"
             "from disauto import submit\n"
             "heavy = ('grpc', 'pymesos', 'optuna', 'disauto.framework', 'disauto.submit.api')\n"
             "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
             "print(callable(submit), submit.__name__)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.splitlines() == ["[]", "True disauto.submit"]


def test_a_job_whose_process_ends_before_recording_it_raises_its_line(notebook: Path) -> None:
    """submit() returns once the job's process started; a process that ends before it recorded
    the job (nothing the checks could see: a cluster that would not boot...) makes the
    handle's first call raise the line it printed, as submit() did when it waited."""
    from disauto import SubmitError
    from disauto.common import paths
    from disauto.submit.api.handle import Job
    from disauto.submit.api.handle import _Starting
    from disauto.submit.run import spawn

    job_id = "failing-1"
    process, offset = spawn(job_id, ["-c", "print('da-submit: error: the cluster did not "
                                           "boot'); raise SystemExit(1)"])
    job = Job(job_id, paths.job_dir(job_id), _Starting(process, offset))
    with pytest.raises(SubmitError) as raised:
        job.status()
    assert str(raised.value) == "the cluster did not boot"
    with pytest.raises(SubmitError, match="^the cluster did not boot$"):
        job.wait()
