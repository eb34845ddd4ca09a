"""A job outlives its terminal and its framework: --detach, da-job, kill -9 and resume.

Real da-submit processes (detached, in sessions of their own) on the embedded cluster; the
record is checked trial by trial after each framework death.
"""

from __future__ import annotations

from collections.abc import Iterator
import json
import os
from pathlib import Path
import re
import signal
import socket

import pytest

from disauto.common.processes import with_environment
from tests.e2e.conftest import DaCluster
from tests.e2e.conftest import common_flags
from tests.e2e.conftest import nothing_left
from tests.e2e.shell import Shell


pytestmark = pytest.mark.slow

RUNNER = '''
import os, time
from apprunner_sdk import get_params, report, trial_number
p = get_params()
print(f"trial {trial_number()} starts", flush=True)
time.sleep(float(os.environ.get("RUNNER_SLEEP", "1.5")))
report(accuracy=1.0 - (float(p["x"]) - 0.3) ** 2 - 0.01 * float(p["n"]), final=True)
'''


@pytest.fixture
def shell(workdir: Path, tmp_path: Path) -> Iterator[Shell]:
    (workdir / "runner.py").write_text(RUNNER)
    made = Shell(tmp_path / "home", workdir, runner_sleep=1.5)
    yield made
    made.kill_leftovers()  # a test that failed midway: no leftovers


def test_a_detached_job_is_listed_followed_and_killed_from_another_shell(
        shell: Shell, workdir: Path) -> None:
    job = shell.submit(*common_flags(workdir, "--trail-steps", "40", "--parallelism", "2"))
    assert f"  da-job status {job}\n" in shell.submitted
    shell.paste(shell.submitted)  # the whole hint pasted into a shell: the job goes on
    assert shell.status(job)["state"] == "running"
    status = shell.wait_until(job, lambda s: s["done"] >= 2)
    assert status["state"] == "running" and status["budget"] == 40
    assert status["appcore"]["address"] and len(status["running"]) <= 2
    listed = json.loads(shell.job("list", "--json").stdout)
    assert [(row["job_id"], row["state"]) for row in listed] == [(job, "running")]
    assert "trial 1 starts" in shell.job("logs", job[:12], "1").stdout
    results = json.loads(shell.job("results", job, "--format", "json").stdout)
    assert {t["number"] for t in results["trials"]} >= {1, 2}
    assert shell.job("results", job, "--format", "csv").stdout.startswith("trial,state,")
    killed = shell.job("kill", job)
    assert killed.returncode == 0 and "ended (killed)" in killed.stdout, killed.stderr
    status = shell.status(job)
    assert status["state"] == "ended" and status["outcome"] == "JOB_KILLED"
    assert status["running"] == [] and status["trials"]["PENDING"] == 0
    assert "job killed: killed with da-job kill" in (
        shell.home / "jobs" / job / "da-submit.out").read_text()
    again = shell.job("kill", job)
    assert again.returncode == 2 and again.stderr.startswith("da-job: error: ")
    assert "has already ended (JOB_KILLED)" in again.stderr
    assert with_environment("DISAUTO_JOB_ID", job) == []  # nothing left running
    mode = (shell.home / "jobs" / job).stat().st_mode & 0o777
    assert mode == 0o700 and (shell.home / "jobs" / job / "job.token").stat().st_mode & 0o77 == 0


def test_a_running_job_takes_a_larger_budget_and_parallelism_from_another_shell(
        shell: Shell, workdir: Path) -> None:
    shell.env["RUNNER_SLEEP"] = "3"
    # 6 trials of 3 s one at a time: 15 s after the first for two da-job commands to land
    job = shell.submit(*common_flags(workdir, "--trail-steps", "6", "--parallelism", "1"))
    shell.wait_until(job, lambda s: s["done"] >= 1 and s["state"] == "running")
    before = len(shell.db(job).execute("SELECT number FROM trials").fetchall())
    refused = shell.job("update", job, "--trial-steps", "1")
    assert refused.returncode == 2 and refused.stdout == "", refused.stderr
    # The count is the one when the framework checked it (AppCore may submit one meanwhile).
    match = re.fullmatch(r"da-job: error: a trial budget of 1 is below the (\d+) trials already "
                         r"submitted; the smallest valid budget is (\d+)\n", refused.stderr)
    assert match and before <= int(match[1]) == int(match[2]) <= 6, refused.stderr
    status = shell.status(job)
    assert (status["budget"], status["parallelism"]) == (6, 1)  # nothing changed
    updated = shell.job("update", job, "--trial-steps", "8", "--parallelism", "2")
    assert updated.returncode == 0, updated.stderr
    assert updated.stdout == (f"da-job: job {job} updated: trial budget 6 → 8, "
                              "parallelism 1 → 2\n")
    status = shell.status(job)
    assert (status["budget"], status["parallelism"]) == (8, 2)
    status = shell.wait_until(job, lambda s: s["state"] == "ended", timeout=180)
    assert status["outcome"] == "BUDGET_SPENT", status
    with shell.db(job) as db:
        trials = db.execute("SELECT number, state, assignment, started_at, ended_at FROM trials "
                            "ORDER BY number").fetchall()
    assert [t[0] for t in trials] == list(range(1, 9))  # exactly the new budget, contiguous
    assert {t[1] for t in trials} == {"COMPLETED"}
    assert len({t[2] for t in trials}) == 8  # no assignment issued twice
    assert any(a[3] < b[4] and b[3] < a[4] for a in trials for b in trials if a[0] < b[0])
    assert "parallelism 2" in (shell.home / "jobs" / job / "da-submit.out").read_text()
    assert with_environment("DISAUTO_JOB_ID", job) == []


def warm_slots_checked(shell: Shell, job: str) -> list[str]:
    """Check what a warm job's framework incarnations did with its slots: no slot id started
    twice, no task refused (a clashing ExecutorInfo), and after each adoption of a slot by a
    resumed framework the slot took a trial, was shut down before the job's end (idle, or the
    job yielding), or was adopted again by the next incarnation: none held its resources until
    the TEARDOWN. The adopted ids."""
    log = (shell.home / "jobs" / job / "da-submit.log").read_text()
    started = re.findall(r"starting slot (\S+) on", log)
    assert started and len(started) == len(set(started)), started  # never reused
    with shell.db(job) as db:
        refused = db.execute("SELECT task_id, message FROM task_updates "
                             "WHERE state = 'TASK_ERROR'").fetchall()
    assert not refused, refused
    adopted = re.findall(r"adopting slot (\S+) on", log)
    for slot in set(adopted):
        events = []
        for line in log.splitlines():
            if f"adopting slot {slot} on" in line:
                events.append("adopting")
            elif "launching " in line and f"({slot})" in line:
                events.append("launching")
            elif (shut := re.search(rf"shutting slot {re.escape(slot)} down \((.*)\)", line)):
                events.append(shut.group(1))
        for at, event in enumerate(events):
            if event == "adopting":
                after = events[at + 1] if at + 1 < len(events) else "nothing"
                assert after in ("adopting", "launching", "idle", "the job yields"), (
                    slot, events)
    return adopted


@pytest.mark.long  # in make test-long: over 20 s, and make test covers its path otherwise
# Each place and each slot mode once: the embedded cluster inside da-submit with command
# tasks, a da-cluster process with warm slots (the da-cluster task-mode pair adds nothing that
# these two and the adoption tests below do not check, and costs 25 s of `make test`).
@pytest.mark.parametrize(("where", "slot_mode"), [("local", "task"), ("da-cluster", "warm")])
def test_three_framework_deaths_and_resumes_lose_and_double_nothing(
        shell: Shell, workdir: Path, da_cluster: DaCluster, where: str, slot_mode: str) -> None:
    budget = 14
    master = ["--master", da_cluster.start()] if where == "da-cluster" else []
    job = shell.submit(*common_flags(workdir, "--trail-steps", str(budget), "--parallelism", "2",
                                     "--slot-mode", slot_mode, *master))
    done = 0
    for _ in range(3):
        status = shell.wait_until(job, lambda s, d=done: s["done"] >= d + 2 and s["running"])
        done = status["done"]
        pid = int(dict(shell.db(job).execute("SELECT key, value FROM meta"))["pid"])
        os.kill(pid, signal.SIGKILL)  # the framework dies mid-job
        shell.wait_until(job, lambda s: s["state"] == "interrupted", timeout=30)
        if where == "local":
            # Its embedded cluster died with it, and so did every task that cluster ran.
            assert nothing_left(job), "tasks outlived the embedded cluster"
        resumed = shell.job("resume", job, "--detach")
        assert resumed.returncode == 0, resumed.stderr
    status = shell.wait_until(job, lambda s: s["state"] == "ended", timeout=180)
    assert status["outcome"] == "BUDGET_SPENT", status
    with shell.db(job) as db:
        trials = db.execute("SELECT number, state, assignment, retries FROM trials "
                            "ORDER BY number").fetchall()
        finals = {row[0] for row in db.execute("SELECT trial_number FROM reports WHERE final = 1")}
    assert [t[0] for t in trials] == list(range(1, budget + 1))  # exactly the budget
    assert {t[1] for t in trials} == {"COMPLETED"}
    assert len({t[2] for t in trials}) == budget  # no assignment issued twice
    assert finals == set(range(1, budget + 1))  # every result is in the record
    if where == "local":
        assert sum(t[3] for t in trials) >= 1  # trials in flight at a death ran again
    else:
        assert sum(t[3] for t in trials) == 0  # adopted on the cluster that lived on
    framework_id = status["framework_id"]
    assert nothing_left(job, framework_id=framework_id)  # no task, no slot executor
    if slot_mode == "warm":
        assert warm_slots_checked(shell, job), "the resumed frameworks adopted no slot"


@pytest.mark.long  # in make test-long: over 20 s, and make test covers its path otherwise
def test_ids_that_name_no_job_or_several_are_one_line_errors(shell: Shell,
                                                             workdir: Path) -> None:
    missing = shell.job("status", "nope")
    assert missing.returncode == 2
    assert missing.stderr.strip().startswith("da-job: error: no job 'nope' under ")
    first = shell.submit(*common_flags(workdir, "--trail-steps", "2"))
    second = shell.submit(*common_flags(workdir, "--trail-steps", "2"))
    for job in (first, second):
        shell.wait_until(job, lambda s: s["state"] == "ended", timeout=90)
    ambiguous = shell.job("results", "e2e-")
    assert ambiguous.returncode == 2 and "is ambiguous" in ambiguous.stderr
    assert len(ambiguous.stderr.strip().splitlines()) == 1
    refused = shell.job("resume", first)
    assert refused.returncode == 2 and "has ended (BUDGET_SPENT)" in refused.stderr


@pytest.mark.long  # in make test-long: over 20 s, and make test covers its path otherwise
def test_two_local_jobs_started_at_the_same_moment_both_complete(shell: Shell,
                                                                 workdir: Path) -> None:
    import threading

    jobs: list[str] = []
    threads = [threading.Thread(target=lambda: jobs.append(
        shell.submit(*common_flags(workdir, "--trail-steps", "4", "--parallelism", "2"))))
        for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(jobs) == 2
    for job in jobs:
        status = shell.wait_until(job, lambda s: s["state"] == "ended", timeout=120)
        assert status["outcome"] == "BUDGET_SPENT", status["message"]
        assert status["trials"]["COMPLETED"] == 4


def test_a_job_whose_offered_port_is_taken_completes(shell: Shell, workdir: Path,
                                                     tmp_path: Path) -> None:
    import socket

    from disauto.localmesos.cluster import ClusterConfig
    from disauto.localmesos.cluster import LocalCluster
    from disauto.submit.local import free_port_range

    low, _ = free_port_range(span=2, low=42000, high=60000)
    cluster = LocalCluster(ClusterConfig(agents=1, cpus=4.0, mem_mb=4096.0,
                                         ports=((low, low + 1),), work_dir=tmp_path / "c"))
    cluster.start()
    taken = socket.socket()
    try:
        taken.bind(("0.0.0.0", low))  # another process holds one of the two offered ports
        taken.listen()
        job = shell.submit(*common_flags(workdir, "--trail-steps", "3", "--master",
                                         cluster.address))
        status = shell.wait_until(job, lambda s: s["state"] == "ended", timeout=120)
    finally:
        taken.close()
        cluster.stop()
    assert status["outcome"] == "BUDGET_SPENT", status["message"]
    with shell.db(job) as db:
        runs = db.execute("SELECT state FROM appcore_runs ORDER BY attempt").fetchall()
    # Each launch that drew the taken port ended at once and was launched again, uncounted.
    assert runs[-1][0] != "TASK_FAILED" and all(r[0] == "TASK_FAILED" for r in runs[:-1])


# Warm slots' adoption does not depend on where the framework's port is, nor command tasks'
# on whether it moved: each mode once (the taken port, with TLS, in task mode), which keeps
# `make test` within its time.
@pytest.mark.parametrize(("port_taken", "slot_mode"), [
    (False, "warm"), pytest.param(True, "task", marks=pytest.mark.long)],
                         ids=["same-port-warm", "port-taken-tls-task"])
def test_on_a_cluster_that_lives_on_the_resumed_framework_adopts_appcore_and_trials(
        shell: Shell, workdir: Path, da_cluster: DaCluster, port_taken: bool,
        slot_mode: str) -> None:
    address = da_cluster.start()  # a da-cluster process: the master outlives the framework
    budget = 10
    # The moved framework serves TLS too: the resumed one keeps the job's certificate, which
    # AppCore and runners already trust.
    tls = ["--tls"] if port_taken else []
    job = shell.submit(*common_flags(workdir, "--trail-steps", str(budget), "--parallelism",
                                     "2", "--master", address, "--slot-mode", slot_mode, *tls))
    before = shell.wait_until(job, lambda s: s["done"] >= 2 and len(s["running"]) == 2)
    framework_id = before["framework_id"]
    meta = dict(shell.db(job).execute("SELECT key, value FROM meta"))
    os.kill(int(meta["pid"]), signal.SIGKILL)
    shell.wait_until(job, lambda s: s["state"] == "interrupted", timeout=30)
    assert with_environment("DISAUTO_JOB_ID", job), "the cluster's tasks live on"
    running = before["running"][0]["trial"]  # its task runs on: its output is read from its agent
    logs = shell.job("logs", job, str(running))
    assert logs.returncode == 0 and f"trial {running} starts" in logs.stdout, logs.stderr
    listed = shell.job("list", "--master", address)  # the master still knows the framework
    assert listed.returncode == 0, listed.stderr
    assert any(line.startswith(f"…{framework_id[-11:]}") and "inactive" in line
               and f"{job} (here)" in line for line in listed.stdout.splitlines()), listed.stdout
    assert max(len(line) for line in listed.stdout.splitlines()) <= 80
    frameworks = json.loads(shell.job("list", "--master", address, "--json").stdout)["frameworks"]
    assert [(f["framework_id"], f["job_id"]) for f in frameworks] == [(framework_id, job)]
    squatter = socket.socket()
    if port_taken:  # another process took the framework's port: it resumes on another one,
        squatter.bind(("0.0.0.0", int(meta["grpc_port"])))  # which AppCore and runners
        squatter.listen()  # learn from the master (the FrameworkInfo's label)
    try:
        resumed = shell.job("resume", job[:20], "--detach")
        assert resumed.returncode == 0, resumed.stderr
        status = shell.wait_until(job, lambda s: s["state"] == "ended", timeout=120)
    finally:
        squatter.close()
    moved = dict(shell.db(job).execute("SELECT key, value FROM meta"))["grpc_port"]
    assert (moved != meta["grpc_port"]) == port_taken
    assert status["outcome"] == "BUDGET_SPENT" and status["framework_id"] == framework_id
    with shell.db(job) as db:
        trials = db.execute("SELECT number, state, retries FROM trials ORDER BY number").fetchall()
        appcores = db.execute("SELECT task_id FROM appcore_runs").fetchall()
        finals = {row[0] for row in db.execute("SELECT trial_number FROM reports WHERE final = 1")}
    assert [t[:2] for t in trials] == [(n, "COMPLETED") for n in range(1, budget + 1)]
    assert [t[2] for t in trials] == [0] * budget  # the running trials were adopted, not re-run
    assert appcores == [("appcore-1",)]  # AppCore kept going: the same task throughout
    assert finals == set(range(1, budget + 1))
    # The running trial's output before and after the framework's death is in its copy.
    copy = (shell.home / "jobs" / job / "logs" / f"trial-{running:04d}.stdout").read_text()
    assert copy.count(f"trial {running} starts") == 1, copy
    assert nothing_left(job, framework_id=framework_id)
    if slot_mode == "warm":
        assert warm_slots_checked(shell, job), "the resumed framework adopted no slot"
