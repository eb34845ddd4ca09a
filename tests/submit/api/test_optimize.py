"""``optimize(fn, space, ...)`` with real jobs on the embedded cluster: a function of a plain
script's ``__main__`` (the README's example, scikit-learn's digits), one of a notebook cell run
by a real kernel (nbclient), one of this module shipped by value with ``modules=`` (several
objectives, step reports, a trial that raises), and an interrupted ``optimize`` that kills its
job. Each returns the job's record, as ``load_job`` reads it."""

from __future__ import annotations

import json
import os
from pathlib import Path
import re
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from apprunner_sdk import report
from disauto.submit.jobs import all_jobs
from tests.e2e.conftest import ROOT
from tests.e2e.conftest import nothing_left


pytestmark = [pytest.mark.slow, pytest.mark.integration]

SMALL = {"app_runner_cpus": 0.5, "app_runner_memory": "256M", "app_core_cpus": 0.5,
         "app_core_memory": "256M"}
"""Tasks that fit the 2-core machine beside each other."""


@pytest.fixture
def notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A notebook's working folder, its DISAUTO_HOME under it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DISAUTO_HOME", str(tmp_path / "home"))
    return tmp_path


def test_the_readme_example_optimizes_a_function_of_a_scripts_main(tmp_path: Path) -> None:
    from disauto import load_job

    environ = {**os.environ, "DISAUTO_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "optimize_digits.py")],
                          cwd=tmp_path, env=environ, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    said = re.search(r"^job (\S+): BUDGET_SPENT, 6 trials$", done.stdout, re.MULTILINE)
    assert said is not None, done.stdout + done.stderr
    record = load_job(said.group(1), folder=tmp_path / "home" / "jobs" / said.group(1))
    assert [t.state for t in record.trials] == ["COMPLETED"] * 6
    assert all(0.0 < t.objective <= 1.0 for t in record.trials)  # type: ignore[operator]
    assert record.best is not None
    assert f"best: trial {record.best.number} accuracy={record.best.objective:.4f}" \
        in done.stdout
    assert (record.folder / "disauto_function.pkl").is_file()
    assert "values_accuracy" in done.stdout and "params_gamma" in done.stdout  # the DataFrame


def sized(params: dict[str, Any]) -> tuple[float, float]:
    """A model of size ``n``: more accurate and slower as it grows; size 2 does not build."""
    n = int(params["n"])
    if n == 2:
        raise ValueError(f"no model of size {n}")
    for step in range(2):
        report(accuracy=0.1 * n * (step + 1), step=step)
    return 0.2 * n, 10.0 * n


def test_a_function_of_a_module_the_trials_lack_travels_with_modules(notebook: Path) -> None:
    """This module is not importable in the trials: ``modules=`` ships it by value. Two
    objectives come back as a tuple, steps as reported, and the trial that raises is FAILED
    with the exception's last line as the end of its message."""
    from disauto import optimize

    record = optimize(sized, {"parameters": [{"name": "n", "type": "number",
                                               "value": [0, 1, 2, 3]}]},
                      n_trials=4, parallelism=2, tuning_type="grid-search",
                      objective=["accuracy", "latency"], direction=["maximize", "minimize"],
                      modules=[__name__], **SMALL)
    assert (record.state, record.outcome, record.exit_status) == ("ended", "BUDGET_SPENT", 0)
    assert record.app_name == "sized" and record.objectives == ("accuracy", "latency")
    by_size = {int(t.assignment["n"]): t for t in record.trials}
    assert sorted(by_size) == [0, 1, 2, 3]
    failed = by_size.pop(2)
    assert failed.state == "FAILED", failed
    assert failed.message.endswith("stderr: ValueError: no model of size 2"), failed.message
    for n, trial in by_size.items():
        assert trial.state == "COMPLETED", trial
        assert trial.values == pytest.approx((0.2 * n, 10.0 * n))
        assert trial.intermediate_values == pytest.approx({0: 0.1 * n, 1: 0.2 * n})
    assert sorted(int(t.assignment["n"]) for t in record.pareto_front) == [0, 1, 3]
    frame = record.to_dataframe().set_index("number")
    for trial in record.trials:
        row = frame.loc[trial.number]
        expected = trial.values or (None, None)
        for name, value in zip(("accuracy", "latency"), expected, strict=True):
            cell = row[f"values_{name}"]
            assert cell == pytest.approx(value) if value is not None else cell != cell
        assert row["datetime_start"] <= row["datetime_complete"]
        assert row["duration"] == row["datetime_complete"] - row["datetime_start"]


NOTEBOOK_CELLS = [
    "import json\nfrom disauto import list_jobs, optimize\nfrom apprunner_sdk import report",
    # A cell's function, the constant and the helper it uses: all in __main__, by value.
    "SHIFT = 0.3\n\n"
    "def distance(x):\n    return abs(x - SHIFT)\n\n"
    "def objective(params):\n"
    "    report(loss=distance(params['x']) + 1, step=0)\n"
    "    return {'loss': distance(params['x']), 'shift': SHIFT}",
    "record = optimize(objective, {'parameters': [{'name': 'x', 'type': 'bound',\n"
    "                                               'value': [0, 1]}]},\n"
    "                  n_trials=3, parallelism=2, objective='loss', direction='minimize',\n"
    "                  seed=5, **SMALL)\n"
    "print(json.dumps({'job_id': record.job_id, 'outcome': record.outcome,\n"
    "                  'trials': [[t.state, t.assignment['x'], t.metrics]\n"
    "                             for t in record.trials],\n"
    "                  'listed': [s.job_id for s in list_jobs()]}))",
]


def test_a_function_of_a_notebook_cell_runs_in_the_trials(notebook: Path) -> None:
    """A real kernel (ipykernel, driven by nbclient) runs the notebook, as Jupyter would."""
    from nbclient import NotebookClient
    import nbformat

    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(f"SMALL = {SMALL!r}"),
                  *(nbformat.v4.new_code_cell(source) for source in NOTEBOOK_CELLS)]
    NotebookClient(book, timeout=240, startup_timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(notebook)}}).execute()
    printed = [output["text"] for output in book.cells[-1].outputs
               if output.get("output_type") == "stream" and output.get("name") == "stdout"]
    said = json.loads("".join(printed).strip().splitlines()[-1])
    assert said["outcome"] == "BUDGET_SPENT"
    assert said["listed"] == [said["job_id"]]
    assert [state for state, _, _ in said["trials"]] == ["COMPLETED"] * 3
    for _, x, metrics in said["trials"]:
        assert metrics == {"loss": pytest.approx(abs(x - 0.3)), "shift": 0.3}


SLEEPER = '''
import json, sys, time
from pathlib import Path
from disauto import optimize
MARKS = Path(sys.argv[1])
SMALL = json.loads(sys.argv[2])

def sleeper(params):
    (MARKS / f"started-{params['x']}").write_text("")
    time.sleep(300)
    return 0.0

optimize(sleeper, {"parameters": [{"name": "x", "type": "number", "value": [1, 2]}]},
         n_trials=2, parallelism=2, tuning_type="grid-search", **SMALL)
'''


def test_an_interrupted_optimize_kills_its_job(notebook: Path) -> None:
    script = notebook / "sleepy.py"
    script.write_text(SLEEPER)
    marks = notebook / "marks"
    marks.mkdir()
    process = subprocess.Popen([sys.executable, str(script), str(marks), json.dumps(SMALL)],
                               cwd=notebook, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    try:
        deadline = time.monotonic() + 120
        while len(list(marks.iterdir())) < 2 and time.monotonic() < deadline \
                and process.poll() is None:
            time.sleep(0.2)
        assert len(list(marks.iterdir())) == 2, process.communicate(timeout=30)[0]
        process.send_signal(signal.SIGINT)
        output = process.communicate(timeout=120)[0]
    finally:
        if process.poll() is None:
            process.kill()
    assert "KeyboardInterrupt" in output, output
    [job] = all_jobs()
    assert (job.state, job.outcome) == ("ended", "JOB_KILLED")
    assert {str(t.state) for t in job.trials} == {"KILLED"}
    assert nothing_left(job.job_id)
