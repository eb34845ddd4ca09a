"""Whole jobs through da-submit, the embedded Mesos cluster, AppCore and real runner processes."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from pathlib import Path
import shutil
import signal
import sqlite3
import time
from typing import Any

import pytest

from tests.e2e.conftest import ROOT
from tests.e2e.conftest import common_flags
from tests.e2e.conftest import master_state


pytestmark = pytest.mark.slow


@pytest.mark.long  # in make test-long: over 20 s, and make test covers its path otherwise
def test_paper_fig3_command_runs_to_completion(submit: Any, tmp_path: Path) -> None:
    """The paper's Fig. 3 command (local master), its parameter file and demo.py."""
    data = tmp_path / "data" / "testAutoML"
    data.mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "demo.py", tmp_path / "demo.py")
    import numpy as np
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    np.savez_compressed(data / "digits.npz", x=x, y=y)
    out = tmp_path / "testAutoML_model"
    job = submit(
        "--app-name", "testAutoML",
        "--input", f"{data}#data",
        "--output", f"{out}#model",
        "--files", "demo.py",
        "--app-runner-launch-cmd", "python demo.py",
        "--app-runner-memory", "5G", "--app-runner-cpus", "3",
        "--app-core-memory", "1G", "--app-core-cpus", "2",
        "--trail-steps", "4",
        "--tuning-type", "random-search",
        "--tuning-parameters", str(ROOT / "examples" / "demo-parameters.json"),
        "--parallelism", "2", "--master", "local", "--seed", "11",
    )
    assert job.wait() == 0, job.output
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT"
    assert len(results["trials"]) == 4
    assert all(t["state"] == "COMPLETED" for t in results["trials"])
    best = results["best"]
    assert set(best["assignment"]) == {"momentum", "learningRate"}
    assert 0.1 <= best["assignment"]["momentum"] <= 0.3
    assert best["assignment"]["learningRate"] in (0.1, 0.2, 0.3)
    assert "best trial-" in job.output and "momentum=" in job.output
    # --output: every trial wrote its model; the best one was copied to DST/model.
    assert (out / "model").is_file()
    assert len(list(out.glob("trial-*/model"))) == 4
    best_model = out / f"trial-{best['trial']:04d}" / "model"
    assert (out / "model").read_bytes() == best_model.read_bytes()
    # The job folder has the SQLite record and CSV results.
    job_dir = job.job_dir()
    assert (job_dir / "results.csv").read_text().startswith("trial,state,objective")
    with sqlite3.connect(job_dir / "job.db") as db:
        assert db.execute("SELECT count(*) FROM reports WHERE final = 1").fetchone()[0] == 4


def test_grid_search_runs_exactly_the_cartesian_product(submit: Any, workdir: Path) -> None:
    (workdir / "grid.json").write_text(json.dumps({"parameters": [
        {"name": "x", "type": "number", "value": [0.1, 0.3, 0.9]},
        {"name": "n", "type": "number", "value": [0, 2]},
    ]}))
    flags = common_flags(workdir, "--tuning-type", "grid-search", "--trail-steps", "50",
                         "--parallelism", "3")
    flags[flags.index(str(workdir / "params.json"))] = str(workdir / "grid.json")
    job = submit(*flags)
    assert job.wait() == 0, job.output
    results = job.results()
    assert results["outcome"] == "SPACE_EXHAUSTED"
    seen = sorted((t["assignment"]["x"], t["assignment"]["n"]) for t in results["trials"])
    assert seen == sorted(itertools.product([0.1, 0.3, 0.9], [0, 2]))
    assert results["best"]["assignment"] == {"x": 0.3, "n": 0}


def test_parallelism_keeps_four_named_trials_running(submit: Any, workdir: Path) -> None:
    job = submit(*common_flags(workdir, "--tuning-type", "random-search", "--trail-steps", "8",
                               "--parallelism", "4"), env={"RUNNER_SLEEP": "4"})
    url = job.master_url()
    most = 0
    names: set[str] = set()
    deadline = time.monotonic() + 120
    while job.process.poll() is None and time.monotonic() < deadline:
        state = master_state(url)
        for framework in state["frameworks"]:
            running = [t for t in framework["tasks"] if t["state"] == "TASK_RUNNING"]
            trials = [t for t in running if t["name"].startswith("trial-")]
            most = max(most, len(trials))
            names |= {t["name"] for t in running}
            assert len(trials) <= 4
            if framework["name"] == "e2e" and running:
                labels = {lab["key"] for t in running for lab in t.get("labels", [])}
                assert {"disauto.job", "disauto.role"} <= labels
        time.sleep(0.3)
    assert job.wait() == 0, job.output
    assert most == 4
    assert "appcore" in names
    assert any(n.startswith("trial-000") for n in names)


def test_target_ends_the_job_early(submit: Any, workdir: Path) -> None:
    job = submit(*common_flags(workdir, "--trail-steps", "40", "--parallelism", "2",
                               "--target", "0.5"))
    assert job.wait() == 0, job.output
    results = job.results()
    assert results["outcome"] == "TARGET_REACHED"
    assert len(results["trials"]) < 40


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("import sys\nprint('boom: cannot train', file=sys.stderr)\nsys.exit(3)\n",
         "boom: cannot train"),
        ("print('done, but forgot to report')\n", "exited without reporting"),
        ("from apprunner_sdk import report\nreport(accuracy='high', final=True)\n",
         "must be a number"),
    ],
    ids=["crash", "no-report", "non-numeric-metric"],
)
def test_failing_runners_stop_the_job_with_the_reason(submit: Any, workdir: Path, script: str,
                                                       expected: str) -> None:
    (workdir / "runner.py").write_text(script)
    job = submit(*common_flags(workdir, "--trail-steps", "10", "--parallelism", "2",
                               "--max-failed-trials", "1"))
    assert job.wait() == 4, job.output  # ExitStatus.TOO_MANY_FAILURES
    results = job.results()
    assert results["outcome"] == "TOO_MANY_FAILURES"
    assert expected in results["message"], results["message"]
    assert all(t["state"] in ("FAILED", "KILLED") for t in results["trials"])
    assert "Traceback" not in job.output.split("trial ")[0]


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(entry.name))
    return out


def _appcore_pids(root: int) -> list[int]:
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        for child in _children(pid):
            todo.append(child)
            try:
                cmd = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"disauto.appcore" in cmd and b"-m" in cmd:
                found.append(child)
    return found


def test_appcore_dying_is_relaunched_and_nothing_is_lost(submit: Any, workdir: Path) -> None:
    job = submit(*common_flags(workdir, "--trail-steps", "8", "--parallelism", "2"),
                 env={"RUNNER_SLEEP": "1.5"})
    job.wait_for_line(r"trials [1-9]\d*/8 done", timeout=90)
    pids = _appcore_pids(job.process.pid)
    assert pids, "AppCore process not found"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    assert job.wait() == 0, job.output
    results = job.results()
    assert results["outcome"] == "BUDGET_SPENT"
    numbers = [t["number"] for t in results["trials"]]
    assert sorted(numbers) == list(range(1, 9))
    completed = [t for t in results["trials"] if t["state"] == "COMPLETED"]
    assert len(completed) >= 6  # trials in flight when AppCore died may fail their reports
    with sqlite3.connect(job.job_dir() / "job.db") as db:
        attempts = db.execute("SELECT count(*) FROM appcore_runs").fetchone()[0]
        assignments = [r[0] for r in db.execute("SELECT assignment FROM trials")]
    assert attempts == 2
    assert len(set(assignments)) == len(assignments)


def test_unreachable_master_is_a_one_line_error(submit: Any, workdir: Path) -> None:
    job = submit(*common_flags(workdir, "--master", "127.0.0.1:9"))
    assert job.wait(60) == 3
    errors = [line for line in job.lines if "error" in line]
    assert errors and "cannot reach the Mesos master at 127.0.0.1:9" in errors[0]
    assert "Traceback" not in job.output
    results = job.results()  # the record agrees with the exit status
    assert results["exit_status"] == 3 and results["outcome"] == "ERROR"
    assert "cannot reach the Mesos master" in results["message"]


def test_ctrl_c_kills_the_tasks_and_keeps_the_record(submit: Any, workdir: Path) -> None:
    job = submit(*common_flags(workdir, "--trail-steps", "20", "--parallelism", "2"),
                 env={"RUNNER_SLEEP": "30"})
    job.wait_running_trials(2)
    job.process.send_signal(signal.SIGINT)
    assert job.wait(60) == 130, job.output
    results = job.results()
    assert results["outcome"] == "STOPPED"
    states = {t["state"] for t in results["trials"]}
    assert states <= {"KILLED"}, states
    assert "Traceback" not in job.output


KILLED_RUNNER = '''
import os, sys, time
from apprunner_sdk import get_params, report, trial_number
print(f"trial {trial_number()} warming up", file=sys.stderr, flush=True)
if trial_number() == 2:
    time.sleep(60)  # the test kills this one with SIGKILL
time.sleep(0.5)
report(accuracy=float(get_params()["x"]), final=True)
'''


def test_a_trial_killed_with_sigkill_is_failed_with_its_stderr(submit: Any,
                                                               workdir: Path) -> None:
    (workdir / "runner.py").write_text(KILLED_RUNNER)
    job = submit(*common_flags(workdir, "--trail-steps", "4", "--parallelism", "2"))
    deadline = time.monotonic() + 90
    victims: list[int] = []
    while not victims and time.monotonic() < deadline:
        victims = job.trial_processes(2)
        time.sleep(0.2)
    assert victims, job.output

    def warmed_up() -> bool:  # its stderr line is written (its sandbox is its working dir)
        for pid in victims:
            with contextlib.suppress(OSError):
                if "warming up" in (Path(f"/proc/{pid}/cwd") / "stderr").read_text():
                    return True
        return False

    while not warmed_up() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert warmed_up(), job.output
    for pid in victims:
        os.kill(pid, signal.SIGKILL)  # the trial's process dies, as with the OOM killer
    assert job.wait() == 0, job.output
    trials = {t["number"]: t for t in job.results()["trials"]}
    assert sorted(trials) == [1, 2, 3, 4]
    assert trials[2]["state"] == "FAILED"
    assert "TASK_FAILED" in trials[2]["message"] and "trial 2 warming up" in trials[2]["message"]
    assert {trials[n]["state"] for n in (1, 3, 4)} == {"COMPLETED"}
