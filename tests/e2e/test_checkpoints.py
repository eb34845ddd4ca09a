"""Checkpoints with real trials on the embedded cluster: a trial that saves one every step and
loses its first try at step 7 of 10 (its script fails under --trial-retries, or its agent is
drained) runs again from step 7, not 0; its steps are run at most 12 times in all and each step
is reported once. Checkpoints through the framework (the default: agents that share no folder)
and written to --checkpoint-dir; an oversized checkpoint and a full disk are one line to the
trial, which goes on, and nothing saved before is lost."""

from __future__ import annotations

from collections.abc import Iterator
import json
import os
from pathlib import Path
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from disauto.framework._store import JobStore
from tests.e2e.conftest import ROOT
from tests.e2e.conftest import DaCluster
from tests.e2e.conftest import Job
from tests.e2e.conftest import common_flags
from tests.e2e.conftest import master_state
from tests.e2e.conftest import operator_call


pytestmark = pytest.mark.slow

# ``python runner.py MODE MARKS``: ten steps, a checkpoint and a report each. On its first try
# the trial stops at step 7: MODE fail exits 1 there; MODE wait writes MARKS/at-7 and waits for
# its agent to be drained. MODE big tries a checkpoint of 200 KB at step 5 (and says why it was
# not kept) before it goes on. Every step run is a line of MARKS/steps.
RUNNER = '''
import os, pathlib, sys, time
from apprunner_sdk import CheckpointError, checkpoint_step, load_checkpoint, report
from apprunner_sdk import save_checkpoint
mode, marks = sys.argv[1], pathlib.Path(sys.argv[2])
first_try = os.environ["DISAUTO_TRIAL_TRY"] == "0"
start = 1
saved = load_checkpoint()
if saved is not None:
    state = int(saved.read_text())
    assert state == checkpoint_step(), (state, checkpoint_step())
    start = state + 1
for step in range(start, 11):
    with open(marks / "steps", "a") as steps:
        steps.write(f"{os.environ['DISAUTO_TRIAL_TRY']} {step}\\n")
    pathlib.Path("state.txt").write_text(str(step))
    save_checkpoint("state.txt", step=step)
    if mode == "big" and step == 5:
        pathlib.Path("big.bin").write_bytes(os.urandom(200_000))
        try:
            save_checkpoint("big.bin", step=step)
        except CheckpointError as err:
            print(f"not kept: {err}", file=sys.stderr, flush=True)
    report(accuracy=step / 10, step=step)
    if step == 7 and first_try and mode == "fail":
        sys.exit("fails at step 7 on purpose")
    if step == 7 and first_try and mode == "wait":
        (marks / "at-7").write_text("")
        time.sleep(300)
report(accuracy=1.0, final=True)
'''

PARAMS = {"parameters": [{"name": "x", "type": "bound", "value": [0.0, 1.0]}]}


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "runner.py").write_text(RUNNER)
    (tmp_path / "params.json").write_text(json.dumps(PARAMS))
    (tmp_path / "marks").mkdir()
    return tmp_path


def flags(workdir: Path, mode: str, *extra: str) -> list[str]:
    args = common_flags(workdir, "--trail-steps", "1", "--quiet", *extra)
    args[args.index("--app-runner-launch-cmd") + 1] = \
        f"python runner.py {mode} {workdir / 'marks'}"
    return args


def steps_run(workdir: Path) -> list[tuple[int, int]]:
    """``(try, step)`` of every step the trial ran, in order."""
    return [(int(t), int(s)) for t, s in (line.split() for line in
                                          (workdir / "marks" / "steps").read_text().split("\n")
                                          if line)]


def recorded(job: Job) -> tuple[Any, list[dict[str, Any]]]:
    store = JobStore(job.job_dir() / "job.db")
    try:
        [trial] = store.trials()
        return trial, store.reports(trial.number)
    finally:
        store.close()


def check_resumed_at_7(job: Job, workdir: Path, outcome: str, ended: bool = False) -> Any:
    """The trial completed on its second try, which resumed from step 7; its steps and reports
    each once; its record and results.json say which try resumed from which step."""
    assert ended or job.wait(timeout=300) == 0, job.output
    assert steps_run(workdir) == [(0, s) for s in range(1, 8)] + [(1, s) for s in (8, 9, 10)]
    trial, reports = recorded(job)
    assert (trial.state, trial.retries, trial.objective) == ("COMPLETED", 1, 1.0)
    assert [r["step"] for r in reports if not r["final"]] == list(range(1, 11))
    assert trial.resumed_from is not None
    assert (trial.resumed_from["trial"], trial.resumed_from["step"]) == (1, 7)
    [first] = trial.tries
    assert (first["outcome"], first["reports"], first["resumed_from"]) == (outcome, 7, None)
    [shown] = job.results()["trials"]
    assert shown["resumed_from"] == trial.resumed_from
    assert shown["tries"][0]["resumed_from"] is None
    return trial


def test_a_trial_retried_by_trial_retries_resumes_from_its_checkpoint_in_the_job_folder(
        submit: Any, workdir: Path) -> None:
    job = submit(*flags(workdir, "fail", "--trial-retries", "1", "--checkpoint-keep", "3"))
    check_resumed_at_7(job, workdir, "failed")
    kept = sorted(p.name for p in (job.job_dir() / "checkpoints" / "trial-0001").iterdir())
    assert kept == ["000008-step-8.ckpt", "000009-step-9.ckpt", "000010-step-10.ckpt"]


def test_with_checkpoint_dir_the_trial_writes_them_there_and_resumes_from_there(
        submit: Any, workdir: Path) -> None:
    shared = workdir / "shared"
    job = submit(*flags(workdir, "fail", "--trial-retries", "1",
                        "--checkpoint-dir", str(shared)))
    check_resumed_at_7(job, workdir, "failed")
    folder = shared / job.job_dir().name / "trial-0001"
    assert sorted(p.name for p in folder.iterdir()) == ["000009-step-9.ckpt",
                                                        "000010-step-10.ckpt"]
    assert not (job.job_dir() / "checkpoints").exists()


def test_a_trial_whose_process_an_operator_kills_at_step_7_resumes_on_its_retry(
        submit: Any, workdir: Path) -> None:
    job = submit(*flags(workdir, "wait", "--trial-retries", "1"))
    wait_for_step_7(workdir, job)
    pids = job.trial_processes(1)
    assert pids, job.output
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    check_resumed_at_7(job, workdir, "failed")


def agent_of(url: str, name: str) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for framework in master_state(url)["frameworks"]:
            for task in framework["tasks"]:
                if task["name"] == name and task["state"] == "TASK_RUNNING":
                    return str(task.get("agent_id") or task["slave_id"])
        time.sleep(0.2)
    raise AssertionError(f"{name} never ran")


@pytest.mark.long
@pytest.mark.parametrize("mark_gone", [False, True], ids=["drained", "drained and gone"])
def test_a_trial_whose_agent_is_drained_or_gone_at_step_7_runs_again_from_step_7(
        submit: Any, workdir: Path, mark_gone: bool) -> None:
    job = submit(*flags(workdir, "wait", "--local-agents", "2"))
    wait_for_step_7(workdir, job)
    url = job.master_url()
    agent = agent_of(url, "trial-0001")
    operator_call(url, {"type": "DRAIN_AGENT", "drain_agent": {
        "agent_id": {"value": agent}, "mark_gone": mark_gone}})
    trial = check_resumed_at_7(job, workdir, "evicted")
    assert trial.evictions == 1 and trial.agent_id != agent
    assert "REASON_AGENT_DRAINING" in trial.tries[0]["message"], trial.tries[0]


def wait_for_step_7(workdir: Path, job: Job) -> None:
    gate = workdir / "marks" / "at-7"
    deadline = time.monotonic() + 120
    while not gate.exists():
        assert time.monotonic() < deadline and job.process.poll() is None, job.output
        time.sleep(0.1)


@pytest.mark.long
def test_a_trial_partitioned_past_the_bound_at_step_7_runs_again_from_step_7(
        submit: Any, workdir: Path) -> None:
    """A da-cluster of two agents that marks one unreachable within 3 s; the trial's agent is
    cut off for 20 s, past --unreachable-timeout 2s: the trial runs again on the other agent
    from its checkpoint, and its old task, back after the heal, is killed."""
    cluster = DaCluster(workdir / "da-cluster", extra=(
        "--agents", "2", "--agent-ping-timeout", "1secs", "--max-agent-ping-timeouts", "3"))
    cluster.start()
    try:
        job = submit(*flags(workdir, "wait", "--master", cluster.address,
                            "--unreachable-timeout", "2s"), env=cluster.env)
        wait_for_step_7(workdir, job)
        agent = agent_of(f"http://{cluster.address}", "trial-0001")
        cut = subprocess.run(
            [sys.executable, "-m", "disauto.localmesos.cli", "agent", "partition", agent,
             "--master", cluster.address, "--for", "20s"], capture_output=True, text=True,
            env={**os.environ, **cluster.env}, timeout=60, check=False)
        assert cut.returncode == 0, cut.stderr
        trial = check_resumed_at_7(job, workdir, "lost")
        assert trial.agent_id != agent
    finally:
        cluster.kill()


@pytest.mark.long
def test_a_trial_found_gone_by_da_job_resume_runs_again_from_its_checkpoint(
        submit: Any, workdir: Path) -> None:
    """The framework is killed (-9) at step 7: its embedded cluster and the trial's task die
    with it; ``da-job resume`` starts a new cluster, finds the trial gone and runs it again
    from step 7."""
    job = submit(*flags(workdir, "wait"))
    wait_for_step_7(workdir, job)
    job_id = job.job_dir().name
    job.process.kill()
    job.wait(timeout=60)
    env = {**os.environ, "DISAUTO_HOME": str(workdir / "home"),
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    resumed = subprocess.run([sys.executable, "-m", "disauto.submit.job_cli", "resume", job_id],
                             cwd=workdir, env=env, capture_output=True, text=True, timeout=300,
                             check=False)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    resumed_job = Job(job.process, job.home, lines=[f"da-submit: job folder {job.job_dir()}"])
    check_resumed_at_7(resumed_job, workdir, "lost", ended=True)


def trial_stderr(job: Job) -> str:
    return "".join(p.read_text() for p in (job.job_dir() / "logs").glob("trial-0001*.stderr"))


def test_an_oversized_checkpoint_is_one_line_to_the_trial_which_goes_on(
        submit: Any, workdir: Path) -> None:
    job = submit(*flags(workdir, "big", "--checkpoint-max-size", "100KB"))
    assert job.wait(timeout=300) == 0, job.output
    trial, reports = recorded(job)
    assert trial.state == "COMPLETED" and len(reports) == 11
    [line] = [x for x in trial_stderr(job).splitlines() if x.startswith("not kept")]
    assert "over the job's --checkpoint-max-size (102400 bytes); it was not saved" in line
    kept = sorted(p.name for p in (job.job_dir() / "checkpoints" / "trial-0001").iterdir())
    assert kept == ["000009-step-9.ckpt", "000010-step-10.ckpt"]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on a disk of 64 KiB (a tmpfs mounted for the test)."""
    folder = tmp_path / "small-disk"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"a tmpfs cannot be mounted here (root and mount(8) are needed): "
                    f"{mounted.stderr.strip()}")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.parametrize("where", ["job folder", "checkpoint dir"])
def test_a_full_disk_is_one_line_to_the_trial_and_loses_nothing(
        submit: Any, workdir: Path, small_disk: Path, where: str) -> None:
    job_id = "ck-full-disk"
    if where == "job folder":  # the job folder's checkpoints on the small disk, its record not
        home = workdir / "home" / "jobs" / job_id
        home.mkdir(parents=True)
        (home / "checkpoints").symlink_to(small_disk)
        extra: tuple[str, ...] = ()
    else:
        extra = ("--checkpoint-dir", str(small_disk))
    job = submit(*flags(workdir, "big", "--job-id", job_id, *extra))
    assert job.wait(timeout=300) == 0, job.output
    trial, reports = recorded(job)
    assert trial.state == "COMPLETED" and len(reports) == 11
    [line] = [x for x in trial_stderr(job).splitlines() if x.startswith("not kept")]
    assert "the disk is full: cannot write checkpoint" in line, line
    assert "No space left on device" in line
    folder = small_disk / ("" if where == "job folder" else job_id) / "trial-0001"
    assert sorted(p.name for p in folder.iterdir()) == ["000009-step-9.ckpt",
                                                        "000010-step-10.ckpt"]
