"""Every way a job ends, run for real, with everything it leaves behind checked.

Each test runs ``da-submit`` as a process on an embedded cluster with real runner processes and
checks (``tests.e2e.outcomes.check_ended``) the exit code, the printed summary, the record
trial by trial, ``results.json``/``results.csv``, the copied ``--output`` and the collected logs.
"""

from __future__ import annotations

from collections.abc import Iterator
import json
import os
from pathlib import Path
import shlex
import shutil
import signal
import sys
from typing import Any

import pytest

from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster
from disauto.submit.local import free_port_range
from disauto.testing.inprocess import wait_for
from tests.e2e.conftest import ROOT
from tests.e2e.conftest import common_flags
from tests.e2e.outcomes import check_ended


pytestmark = pytest.mark.slow

# One runner for every outcome, steered by environment variables the tasks inherit.
RUNNER = '''
import os, sys, time
from apprunner_sdk import get_params, output_path, report, trial_number
n = trial_number()
p = get_params()
print(f"trial {n} starts with {p}", flush=True)
acc = 1.0 - (float(p["x"]) - 0.3) ** 2 - 0.01 * float(p["n"])
mode = os.environ.get("MODE", "normal")
if mode == "target":
    winner = n == int(os.environ["WINNER"])
    if not winner:
        time.sleep(120)
    report(accuracy=0.99 if winner else acc, final=True)
    time.sleep(1)  # the model is written after the result, as scripts often do
    output_path().write_text(f"model of trial {n}")
    sys.exit(0)
slow_after = int(os.environ.get("SLOW_AFTER", "0"))
time.sleep(60 if slow_after and n > slow_after else float(os.environ.get("RUNNER_SLEEP", "0")))
output_path().write_text(f"model of trial {n}")
if mode == "fail":
    print("cannot train", file=sys.stderr)
    sys.exit(3)
report(accuracy=acc, final=True)
'''


@pytest.fixture
def job_flags(workdir: Path, tmp_path: Path) -> Any:
    (workdir / "runner.py").write_text(RUNNER)
    out = tmp_path / "out"

    def flags(*extra: str) -> list[str]:
        return common_flags(workdir, "--output", f"{out}#model", *extra)

    flags.out = out  # type: ignore[attr-defined]
    return flags


def best_of(ended: Any) -> int:
    completed = {n: t["objective"] for n, t in ended.db_trials.items()
                 if t["state"] == "COMPLETED"}
    return max(completed, key=lambda n: completed[n])


def test_budget_spent(submit: Any, job_flags: Any) -> None:
    job = submit(*job_flags("--trail-steps", "6", "--parallelism", "2"))
    ended = check_ended(job, 0, "BUDGET_SPENT", best=_wait_best(job), output=job_flags.out)
    assert set(ended.states().values()) == {"COMPLETED"} and len(ended.db_trials) == 6


def _wait_best(job: Any) -> int:
    """The best trial's number, read from the finished job's results."""
    job.wait()
    return int(job.results()["best"]["trial"])


def test_target_reached_keeps_the_winner_and_its_model(submit: Any, job_flags: Any) -> None:
    job = submit(*job_flags("--trail-steps", "20", "--parallelism", "4", "--target", "0.95"),
                 env={"MODE": "target", "WINNER": "3"})
    ended = check_ended(job, 0, "TARGET_REACHED", best=3, output=job_flags.out)
    assert ended.states() == {1: "KILLED", 2: "KILLED", 3: "COMPLETED", 4: "KILLED"}
    assert ended.results["message"] == "trial 3 reached accuracy=0.99 (target 0.95)"
    assert (job_flags.out / "model").read_text() == "model of trial 3"
    assert "trial 3 starts" in (ended.job_dir / "logs" / "trial-0003.stdout").read_text()


def test_grid_exhausted(submit: Any, job_flags: Any, workdir: Path) -> None:
    (workdir / "grid.json").write_text(json.dumps({"parameters": [
        {"name": "x", "type": "number", "value": [0.1, 0.3, 0.9]},
        {"name": "n", "type": "number", "value": [0, 2]},
    ]}))
    flags = job_flags("--tuning-type", "grid-search", "--trail-steps", "50", "--parallelism", "3")
    flags[flags.index(str(workdir / "params.json"))] = str(workdir / "grid.json")
    job = submit(*flags)
    job.wait()
    best = next(n for n, t in enumerate(job.results()["trials"])
                if t["assignment"] == {"x": 0.3, "n": 0})
    ended = check_ended(job, 0, "SPACE_EXHAUSTED", best=job.results()["trials"][best]["number"],
                        output=job_flags.out)
    assert len(ended.db_trials) == 6


def test_too_many_failures(submit: Any, job_flags: Any) -> None:
    job = submit(*job_flags("--trail-steps", "10", "--parallelism", "2",
                            "--max-failed-trials", "1"), env={"MODE": "fail"})
    ended = check_ended(job, 4, "TOO_MANY_FAILURES", best=None)
    assert "cannot train" in ended.results["message"]
    assert "FAILED" in ended.states().values()
    assert not (job_flags.out / "model").exists()


def test_time_budget(submit: Any, job_flags: Any) -> None:
    job = submit(*job_flags("--trail-steps", "50", "--parallelism", "2",
                            "--max-duration", "8s"), env={"SLOW_AFTER": "2", "RUNNER_SLEEP": "0"})
    job.wait()
    best = int(job.results()["best"]["trial"])
    ended = check_ended(job, 0, "TIME_LIMIT_REACHED", best=best, output=job_flags.out)
    assert ended.results["message"].startswith("the time budget of 8s (--max-duration) is spent")
    states = ended.states()
    assert states[1] == states[2] == "COMPLETED"
    assert {states[n] for n in states if n > 2} == {"KILLED"}


def test_ctrl_c(submit: Any, job_flags: Any) -> None:
    job = submit(*job_flags("--trail-steps", "20", "--parallelism", "2"),
                 env={"SLOW_AFTER": "2"})
    job.wait_for_line(r"trials 2/20 done, 2 running", timeout=90)
    # Trial 3 sleeps: what it printed is already in the job folder while it runs.
    log = job.job_dir() / "logs" / "trial-0003.stdout"
    wait_for(lambda: log.exists() and "trial 3 starts" in log.read_text(), timeout=30,
             what="trial 3's stdout in the job folder")
    job.process.send_signal(signal.SIGINT)
    job.wait(60)
    best = int(job.results()["best"]["trial"])
    ended = check_ended(job, 130, "STOPPED", best=best, output=job_flags.out)
    assert ended.states() == {1: "COMPLETED", 2: "COMPLETED", 3: "KILLED", 4: "KILLED"}


def test_appcore_that_cannot_run_ends_the_job_with_an_error(submit: Any, job_flags: Any) -> None:
    job = submit(*job_flags("--trail-steps", "4", "--app-core-command",
                            f"{sys.executable} -c 'import sys; print(\"no appcore\", "
                            "file=sys.stderr); sys.exit(7)'"))
    ended = check_ended(job, 1, "ERROR", best=None)
    assert ended.results["message"].startswith("AppCore failed 4 times; last: TASK_FAILED")
    assert "no appcore" in ended.results["message"]
    assert ended.db_trials == {}
    assert "no appcore" in (ended.job_dir / "logs" / "appcore-4.stderr").read_text()


@pytest.fixture
def small_cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    made = LocalCluster(ClusterConfig(
        agents=2, cpus=2.0, mem_mb=2048.0, ports=(free_port_range(600, low=42000, high=60000),),
        allocation_interval=0.2, work_dir=tmp_path / "cluster",
    ))
    made.start()
    yield made
    made.stop()


def test_a_trial_that_fits_no_agent_ends_the_job_at_once(submit: Any, job_flags: Any,
                                                          small_cluster: LocalCluster) -> None:
    flags = job_flags("--master", small_cluster.address, "--trail-steps", "4")
    flags[flags.index("--app-runner-cpus") + 1] = "8"
    job = submit(*flags)
    ended = check_ended(job, 2, "UNSCHEDULABLE", best=None, logs=False)
    assert ended.results["message"] == (
        "no agent of the cluster can ever run a --app-runner task (cpus=8, mem=128 MB): the "
        "largest agent has cpus=2, mem=2048 MB; lower --app-runner-cpus or add larger agents "
        "(2 agent(s) registered)")
    assert ended.db_trials == {}


def readme_command() -> list[str]:
    """The README's Fig. 3 commands (data, then da-submit), as a newcomer copies them."""
    text = (ROOT / "README.md").read_text()
    block = text.split("## Submitting a job", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    joined = block.replace("\\\n", " ")
    lines = [line.split("  #", 1)[0].strip() for line in joined.splitlines()]
    return [line for line in lines if line and not line.startswith("make ")]


def test_the_readme_fig3_command_ends_with_the_trial_that_reached_the_target(
        submit: Any, tmp_path: Path) -> None:
    """The README's commands as written (only /tmp/ moved under the test's folder)."""
    data_cmd, submit_cmd = readme_command()
    repo = tmp_path / "repo"
    (repo / "examples").mkdir(parents=True)
    for name in ("demo.py", "demo-parameters.json", "make_digits_data.py"):
        shutil.copy(ROOT / "examples" / name, repo / "examples" / name)
    here = str(tmp_path) + "/"
    data_argv = shlex.split(data_cmd.replace("/tmp/", here))
    assert data_argv[0] == ".venv/bin/python"
    import subprocess

    subprocess.run([sys.executable, *data_argv[1:]], cwd=repo, check=True)
    argv = shlex.split(submit_cmd.replace("/tmp/", here))
    assert argv[0] == ".venv/bin/da-submit"
    job = submit(*argv[1:], "--seed", "7", cwd=repo)
    job.wait(300)
    results = job.results()
    winner = int(results["best"]["trial"])
    ended = check_ended(job, 0, "TARGET_REACHED", best=winner,
                        output=tmp_path / "testAutoML_model")
    assert results["message"].startswith(f"trial {winner} reached accuracy=")
    assert results["best"]["objective"] >= 0.95
    if (os.cpu_count() or 1) < 4 * 3 + 2:  # four 3-CPU trials and a 2-CPU AppCore
        assert job.output.count("da-submit: note: this machine has") == 1
    assert {s for n, s in ended.states().items() if n != winner} <= {"COMPLETED", "KILLED"}


def test_a_job_in_which_every_trial_failed_exits_6_naming_the_first_failure(
        submit: Any, job_flags: Any) -> None:
    job = submit(*job_flags("--trail-steps", "3", "--parallelism", "1",
                            "--max-failed-trials", "10"), env={"MODE": "fail"})
    ended = check_ended(job, 6, "BUDGET_SPENT", best=None)
    assert set(ended.states().values()) == {"FAILED"}
    lines = list(job.lines)
    at = next(i for i, line in enumerate(lines) if "no trial produced a result" in line)
    assert lines[at] == "da-submit: error: no trial produced a result; the first failure, " \
                        "trial-0001:"
    assert lines[at + 1].startswith("  cannot train (TASK_FAILED: Command exited with status 3"), \
        lines[at + 1]
    assert len(lines[at + 1]) <= 80


def test_a_master_that_requires_authentication_is_one_line_at_once(
        submit: Any, job_flags: Any, tmp_path: Path) -> None:
    import time

    secured = LocalCluster(ClusterConfig(agents=1, cpus=2.0, mem_mb=2048.0,
                                         work_dir=tmp_path / "secured",
                                         credentials={"alice": "s3cret"}))
    secured.start()
    address = secured.address
    try:
        started = time.monotonic()
        job = submit(*job_flags("--master", address, "--trail-steps", "2"))
        assert job.wait(60) == 3, job.output
        took = time.monotonic() - started
    finally:
        secured.stop()
    errors = [line for line in job.lines if line.startswith("da-submit: error: ")]
    assert errors == [f"da-submit: error: the Mesos master at {address} requires "
                      "authentication; give --principal and --secret-file"]
    assert took < 30 and "Traceback" not in job.output
    results = job.results()
    assert results["exit_status"] == 3 and results["outcome"] == "ERROR"


def test_trials_that_run_too_long_are_timed_out_and_their_slots_refilled(
        submit: Any, job_flags: Any) -> None:
    job = submit(*job_flags("--trail-steps", "4", "--parallelism", "2", "--trial-timeout",
                            "3s"), env={"SLOW_AFTER": "2"})  # trials 3 and 4 sleep 60 s
    ended = check_ended(job, 0, "BUDGET_SPENT", best=_wait_best(job), output=job_flags.out)
    assert ended.states() == {1: "COMPLETED", 2: "COMPLETED", 3: "TIMEOUT", 4: "TIMEOUT"}
    assert ended.db_trials[3]["message"] == "ran longer than --trial-timeout 3s"
    assert ended.results["message"] == "the budget of 4 trials is spent"
