"""Hard days (issue 31): two resumes at once, a kill in the window after the last trial, a full
disk, a corrupt record, Ctrl-C pressed again and again, a flood of metrics.

Real ``da-submit`` and ``da-job`` processes on the embedded cluster or a ``da-cluster``; after
each fault the record is read back trial by trial: nothing recorded is lost or doubled.
"""

from __future__ import annotations

from collections.abc import Iterator
import json
import os
from pathlib import Path
import re
import signal
import sqlite3
import subprocess
import sys
import time
from typing import Any

import pytest

from disauto.common.processes import with_environment
from tests.e2e.conftest import ROOT
from tests.e2e.conftest import common_flags
from tests.e2e.conftest import nothing_left
from tests.e2e.outcomes import check_ended
from tests.e2e.shell import Shell


pytestmark = pytest.mark.slow

RUNNER = '''
import os, sys, time
from apprunner_sdk import get_params, report, trial_number
n = trial_number()
p = get_params()
print(f"trial {n} starts", flush=True)
time.sleep(float(os.environ.get("RUNNER_SLEEP", "1")))
flood_from = int(os.environ.get("FLOOD_FROM", "0"))
if flood_from and n >= flood_from:
    line = "x" * 1023 + "\\n"
    for _ in range(3 * 1024):  # 3 MB
        sys.stdout.write(line)
    sys.stdout.flush()
    time.sleep(60)
report(accuracy=1.0 - (float(p["x"]) - 0.3) ** 2 - 0.01 * float(p["n"]), final=True)
'''


def record(folder: Path) -> tuple[list[tuple[Any, ...]], dict[int, int]]:
    """The trials ``(number, state, assignment, objective)`` and each trial's count of final
    reports, as the record holds them."""
    with sqlite3.connect(folder / "job.db") as db:
        trials = db.execute("SELECT number, state, assignment, objective FROM trials "
                            "ORDER BY number").fetchall()
        finals = dict(db.execute("SELECT trial_number, COUNT(*) FROM reports WHERE final = 1 "
                                 "GROUP BY trial_number").fetchall())
    return trials, finals


def check_every_trial_once(folder: Path, budget: int,
                           before: list[tuple[Any, ...]] = ()) -> dict[str, Any]:
    """The job ended BUDGET_SPENT with exactly its budget of trials, each completed once with
    one final report and an assignment of its own; every trial of ``before`` (the record at a
    fault) is still there as it was when it had ended. results.json agrees; its contents."""
    trials, finals = record(folder)
    assert [t[0] for t in trials] == list(range(1, budget + 1)), trials
    assert {t[1] for t in trials} == {"COMPLETED"}, trials
    assert finals == dict.fromkeys(range(1, budget + 1), 1), finals  # none twice
    assert len({t[2] for t in trials}) == budget  # no assignment issued twice
    for kept in before:
        if kept[1] == "COMPLETED":
            assert trials[kept[0] - 1] == kept, (kept, trials[kept[0] - 1])
    results = json.loads((folder / "results.json").read_text())
    assert (results["state"], results["outcome"]) == ("ended", "BUDGET_SPENT"), results
    assert sorted(t["number"] for t in results["trials"]) == list(range(1, budget + 1))
    assert {t["state"] for t in results["trials"]} == {"COMPLETED"}
    assert (folder / "report.html").stat().st_size > 0
    return results


@pytest.fixture
def shell(workdir: Path, tmp_path: Path) -> Iterator[Shell]:
    (workdir / "runner.py").write_text(RUNNER)
    made = Shell(tmp_path / "home", workdir, runner_sleep=1)
    yield made
    made.kill_leftovers()  # a test that failed midway: no leftovers


# -- 1. two resumes at the same moment ----------------------------------------------------------


def test_two_resumes_started_together_run_exactly_one_framework(shell: Shell,
                                                                workdir: Path) -> None:
    budget = 8
    job = shell.submit(*common_flags(workdir, "--trail-steps", str(budget), "--parallelism", "2"))
    shell.wait_until(job, lambda s: s["done"] >= 2 and s["running"])
    shell.kill_framework(job)
    before, _ = record(shell.folder(job))
    # At the same moment: one in the background, one attached to this terminal.
    detached = shell.start("disauto.submit.job_cli", "resume", job, "--detach")
    attached = shell.start("disauto.submit.job_cli", "resume", job)
    detached_out, detached_err = detached.communicate(timeout=120)
    if detached.returncode == 0:  # the background one won: the attached one is refused
        loser_err = attached.communicate(timeout=60)[1]
        assert attached.returncode == 2
        shell.wait_until(job, lambda s: s["state"] == "ended", timeout=180)
    else:  # the attached one won and runs the job to its end
        assert detached.returncode == 2, detached_out + detached_err
        loser_err = detached_err
        attached.communicate(timeout=180)
        assert attached.returncode == 0
    assert re.fullmatch(rf"da-job: error: job {job} is run by process \d+; nothing to "
                        r"resume\n", loser_err), loser_err
    check_every_trial_once(shell.folder(job), budget, before)
    log = (shell.folder(job) / "da-submit.log").read_text()
    assert log.count("registered as framework") == 2, "more than one framework resumed the job"


# -- 5. Ctrl-C pressed again while the job stops ----------------------------------------------


def test_ctrl_c_three_times_stops_the_job_once_with_its_record(submit: Any,
                                                               workdir: Path) -> None:
    (workdir / "runner.py").write_text(RUNNER)
    job = submit(*common_flags(workdir, "--trail-steps", "20", "--parallelism", "2"),
                 env={"RUNNER_SLEEP": "60"})
    job.wait_running_trials(2)
    for _ in range(3):  # the second and third arrive while the first one's stop runs
        job.process.send_signal(signal.SIGINT)
        time.sleep(0.4)
    ended = check_ended(job, 130, "STOPPED", best=None, logs=False)
    assert ended.meta["state"] == "ENDED"
    assert ended.results["message"] == "stopped with Ctrl-C"
    assert set(ended.states().values()) == {"KILLED"}
    assert job.output.count("stopping the job") == 1
    assert nothing_left(job.job_dir().name)


# -- 4. a corrupt record ------------------------------------------------------------------------


def test_a_corrupt_or_truncated_record_is_one_line_and_hides_no_other_job(
        shell: Shell, workdir: Path) -> None:
    import shutil

    job = shell.submit(*common_flags(workdir, "--trail-steps", "3", "--parallelism", "3"))
    shell.wait_until(job, lambda s: s["state"] == "ended", timeout=120)
    good = shell.folder(job)
    kept, _ = record(good)
    # The record whole in job.db (its framework is gone): a copy without its write-ahead log
    # is the record, and random bytes of its size are no database (an empty job.db beside a
    # copied log would read as the good job's record under another folder's name).
    with sqlite3.connect(good / "job.db") as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = (good / "job.db").stat().st_size
    assert size > 16384
    bad = {"job-random": os.urandom(size),
           "job-truncated": (good / "job.db").read_bytes()[:16384]}
    for name, data in bad.items():
        shutil.copytree(good, shell.home / "jobs" / name,
                        ignore=shutil.ignore_patterns("job.db-wal", "job.db-shm"))
        (shell.home / "jobs" / name / "job.db").write_bytes(data)
    listed = shell.job("list")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines() if line.strip()}
    assert rows[job].split()[1] == "ended"  # the others are shown
    for name in bad:
        assert rows[name].split()[1] == "unreadable", listed.stdout
        assert f"{name}: its record " in " ".join(listed.stdout.split())
    as_json = {row["job_id"]: row for row in json.loads(shell.job("list", "--json").stdout)}
    assert as_json[job]["state"] == "ended" and as_json[job]["done"] == 3
    assert {as_json[name]["state"] for name in bad} == {"unreadable"}
    for name, data in bad.items():
        for command in (("status", name), ("results", name), ("logs", name, "1"),
                        ("resume", name), ("kill", name), ("update", name, "--parallelism", "1")):
            done = shell.job(*command)
            assert done.returncode == 1, (command, done.stdout, done.stderr)
            path = shell.home / "jobs" / name / "job.db"
            assert re.fullmatch(rf"da-job: error: the record of job {name} is unreadable: "
                                rf"{re.escape(str(path))}: (database disk image is malformed|"
                                r"file is not a database) \(left as it is\)\n",
                                done.stderr), (command, done.stderr)
        assert (shell.home / "jobs" / name / "job.db").read_bytes() == data  # left as it was
    assert record(good)[0] == kept  # the good record is untouched
    assert shell.status(job)["trials"]["COMPLETED"] == 3


# -- 2. kill -9 in the window after the last trial ---------------------------------------------


def _peek(folder: Path) -> dict[str, str]:
    try:
        with sqlite3.connect(f"file:{folder / 'job.db'}?mode=ro", uri=True, timeout=1) as db:
            return dict(db.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.Error:
        return {}


def _removed(master: str, framework_id: str) -> bool:
    """Whether the master lists the framework as completed (torn down)."""
    from disauto.submit.jobs import master_frameworks

    return any(row["framework_id"] == framework_id and row["state"] == "completed"
               for row in master_frameworks(master, timeout=1))


def _importance_worker(pid: int, within: float = 120.0) -> int:
    """The importance worker ``pid`` started (its child running the worker's module): at the
    job's end, for report.html, in a job whose page nobody opened."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
                command = (stat.parent / "cmdline").read_bytes()
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile
            if parent == pid and b"importance_worker" in command:
                return int(stat.parent.name)
        time.sleep(0.1)
    raise AssertionError(f"da-submit {pid} started no importance worker")


@pytest.mark.parametrize(("where", "moment"), [
    ("da-cluster", "torn-down"), pytest.param("da-cluster", "outcome", marks=pytest.mark.long),
    ("local", "outcome")])
def test_a_kill_in_the_window_after_the_last_trial_is_finished_by_resume(
        shell: Shell, workdir: Path, da_cluster: Any, where: str, moment: str) -> None:
    budget = 4
    master = ["--master", da_cluster.start()] if where == "da-cluster" else []
    job = shell.submit(*common_flags(workdir, "--trail-steps", str(budget), "--parallelism", "2",
                                     *master))
    folder = shell.folder(job)
    worker = 0
    if moment == "torn-down":
        # After the teardown, report.html is made, which waits up to REPORT_WAIT (10 s) for
        # the parameter importance of the worker it starts: with the worker stopped the window
        # lasts that long (else a few milliseconds on a quick machine, which polling misses).
        worker = _importance_worker(int(shell.meta(job)["pid"]))
        os.kill(worker, signal.SIGSTOP)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the moment the end is recorded, or torn down
        recorded = _peek(folder)
        # torn down: the master removed the framework and the record says so (the framework
        # records it once TEARDOWN returns; killed before that, the resume asks the master)
        if recorded.get("outcome") and (moment == "outcome" or (
                recorded.get("torn_down") == "1"
                and _removed(master[1], recorded["framework_id"]))):
            break
        time.sleep(0.02)
    os.kill(int(recorded["pid"]), signal.SIGKILL)
    if worker:
        os.kill(worker, signal.SIGKILL)
    status = shell.wait_until(job, lambda s: s["state"] != "running", timeout=30)
    assert status["state"] == "interrupted", status  # killed before it closed the record
    assert not (folder / "results.json").exists()
    started = time.monotonic()
    resumed = shell.job("resume", job, timeout=120)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert time.monotonic() - started < 45  # it finishes, not a minute's wait for a master
    assert "Traceback" not in resumed.stdout + resumed.stderr
    assert "budget spent" in resumed.stdout
    if where == "local" or moment == "torn-down":
        assert "no master needed" in " ".join(resumed.stdout.split())
    status = shell.status(job)
    assert (status["state"], status["outcome"]) == ("ended", "BUDGET_SPENT"), status
    check_every_trial_once(folder, budget)
    assert json.loads((folder / "results.json").read_text())["exit_status"] == 0
    assert nothing_left(job, framework_id=status["framework_id"])
    if where == "da-cluster":
        assert _removed(master[1], status["framework_id"])


def _tear_down(master: str, framework_id: str) -> None:
    """Remove the framework from its master as an operator's scheduler would: subscribe with
    its id (it is disconnected), then TEARDOWN on that subscription's stream."""
    import http.client

    host, port = master.split(":")
    subscription = http.client.HTTPConnection(host, int(port), timeout=10)
    framework_info = {"user": "root", "name": "operator", "id": {"value": framework_id}}
    subscription.request("POST", "/api/v1/scheduler", json.dumps(
        {"type": "SUBSCRIBE", "framework_id": {"value": framework_id},
         "subscribe": {"framework_info": framework_info}}),
        {"Content-Type": "application/json"})
    answer = subscription.getresponse()
    assert answer.status == 200, answer.read()
    teardown = http.client.HTTPConnection(host, int(port), timeout=10)
    teardown.request("POST", "/api/v1/scheduler", json.dumps(
        {"type": "TEARDOWN", "framework_id": {"value": framework_id}}),
        {"Content-Type": "application/json",
         "Mesos-Stream-Id": answer.getheader("Mesos-Stream-Id") or ""})
    assert teardown.getresponse().status == 202
    teardown.close()
    subscription.close()


def test_resuming_a_job_whose_framework_was_removed_says_so_at_once_exit_7(
        shell: Shell, workdir: Path, da_cluster: Any) -> None:
    master = da_cluster.start()
    job = shell.submit(*common_flags(workdir, "--trail-steps", "10", "--parallelism", "2",
                                     "--master", master))
    status = shell.wait_until(job, lambda s: s["done"] >= 2 and len(s["running"]) == 2)
    shell.kill_framework(job)
    before, _ = record(shell.folder(job))
    _tear_down(master, status["framework_id"])
    started = time.monotonic()
    resumed = shell.job("resume", job, timeout=120)
    assert resumed.returncode == 7, resumed.stdout + resumed.stderr
    assert time.monotonic() - started < 30  # no minute's wait for a registration
    said = [line for line in resumed.stderr.splitlines() if "taken away" in line]
    assert len(said) == 1 and said[0].startswith("da-submit: error: the framework was taken "
                                                 "away: the Mesos master removed it"), resumed
    assert "Traceback" not in resumed.stdout + resumed.stderr
    status = shell.status(job)
    assert (status["state"], status["outcome"]) == ("ended", "FRAMEWORK_LOST")
    trials, _ = record(shell.folder(job))
    assert not [t for t in trials if t[1] in ("PENDING", "LAUNCHING", "RUNNING")], trials
    for kept in before:  # what was recorded complete stays so
        if kept[1] == "COMPLETED":
            assert trials[kept[0] - 1] == kept
    results = json.loads((shell.folder(job) / "results.json").read_text())
    assert (results["outcome"], results["exit_status"]) == ("FRAMEWORK_LOST", 7)


# -- 3. a full disk -------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs (root only), unmounted at the end."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], check=True)
    yield mount
    for pid in with_environment("DISAUTO_HOME", str(mount)):  # whatever still uses it
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if subprocess.run(["umount", str(mount)], check=False).returncode:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_stops_the_job_in_seconds_with_one_line_and_loses_nothing(
        submit: Any, workdir: Path, small_disk: Path) -> None:
    budget = 6
    (workdir / "runner.py").write_text(RUNNER)
    env = {"DISAUTO_HOME": str(small_disk), "FLOOD_FROM": "3"}  # trials 3 on print 3 MB
    started = time.monotonic()
    job = submit(*common_flags(workdir, "--trail-steps", str(budget), "--parallelism", "2"),
                 env=env)
    assert job.wait(timeout=120) == 1, job.output
    assert time.monotonic() - started < 60, "not stopped within seconds"
    errors = [line for line in job.lines if line.startswith("da-submit: error:")]
    assert len(errors) == 1, job.output
    folder = job.job_dir()
    assert errors[0].startswith(f"da-submit: error: the disk is full: cannot write {folder}/")
    assert f"the disk at {small_disk}" in errors[0]
    assert errors[0].endswith(f"make room, then da-job resume {folder.name} carries it on")
    assert "Traceback" not in job.output and "Logging error" not in job.output
    assert len(job.lines) < 25, job.output
    assert nothing_left(folder.name)  # its trials were killed
    # The record is whole and keeps what was recorded: the trials that completed first.
    before, finals = record(folder)
    completed = [t for t in before if t[1] == "COMPLETED"]
    assert [t[0] for t in completed] == [1, 2] and finals == {1: 1, 2: 1}, before
    assert not (folder / "results.json").exists() or json.loads(
        (folder / "results.json").read_text())
    # Once there is room, the job resumes and ends with every trial once.
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    resumed = subprocess.run(
        [sys.executable, "-m", "disauto.submit.job_cli", "resume", folder.name], cwd=workdir,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env, "FLOOD_FROM": "0"},
        capture_output=True, text=True, timeout=180, check=False)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    check_every_trial_once(folder, budget, before)


# -- a flood of metrics -------------------------------------------------------------------------

METRIC_FLOOD = '''
import apprunner_sdk
from apprunner_sdk import report, trial_number
n = trial_number()
flood = {f"m{i}": 0.5 for i in range(200_000)}
if n == 1:  # the SDK refuses it at this line
    report(**flood, accuracy=0.5, final=True)
elif n == 2:  # past the SDK's check: AppCore checks what arrives
    apprunner_sdk._current().client.report({**flood, "accuracy": 0.5}, step=None, final=True,
                                           elapsed_seconds=1.0)
elif n == 3:  # 200 names, then 200 others: the framework keeps at most 256 metrics a trial
    report(**{f"a{i}": 0.5 for i in range(200)}, step=0)
    report(**{f"b{i}": 0.5 for i in range(200)}, accuracy=0.5, final=True)
else:
    report(accuracy=0.9, final=True)
'''


def test_a_report_of_200000_metrics_is_refused_with_one_line_and_the_record_stays_small(
        submit: Any, workdir: Path) -> None:
    (workdir / "runner.py").write_text(METRIC_FLOOD)
    # 200,000 metrics take ~150 MB in the runner before they are sent: room for that, so the
    # refusal tested is the report's, not the container's memory limit
    job = submit(*common_flags(workdir, "--trail-steps", "4", "--parallelism", "2",
                               "--max-failed-trials", "3", "--app-runner-memory", "512M"))
    ended = check_ended(job, 0, "BUDGET_SPENT", best=4, logs=False)
    states = ended.states()
    assert states == {1: "FAILED", 2: "FAILED", 3: "FAILED", 4: "COMPLETED"}, states
    messages = {n: ended.db_trials[n]["message"] for n in (1, 2, 3)}
    assert "report() carries 200001 metrics; at most 256 in a report" in messages[1]
    assert "a report carries 200001 metrics; at most 256 in a report" in messages[2]
    assert "trial 3 would have 401 metrics; at most 256 in a trial" in messages[3]
    assert len(json.loads(ended.db_trials[3]["metrics"])) == 200  # the first report, kept
    assert (ended.job_dir / "job.db").stat().st_size < 2 << 20
    assert (ended.job_dir / "results.json").stat().st_size < 100_000


# -- memory per trial ---------------------------------------------------------------------------

PER_TRIAL_BYTES = 64 * 1024
"""What da-submit may grow by per trial, measured on its resident memory between two points
of a warm job (issue 31 saw 0.3 MB a trial: 100 MB to 195 MB over 300 trials)."""


@pytest.mark.long  # in make test-long: 400 trials; docs/benchmarks.md measures 3,000
def test_da_submit_keeps_little_per_trial_over_hundreds_of_warm_trials(tmp_path: Path) -> None:
    from bench.scale import submit_command
    from bench.scale_record import ended_count
    from bench.scale_record import rss_bytes

    work, home = tmp_path / "work", tmp_path / "home"
    env = {**os.environ, "DISAUTO_HOME": str(home),
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    process = subprocess.Popen(submit_command(work, "random", 400, 4, 1, 0.0), cwd=work,
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    marks: dict[int, tuple[int, int]] = {}  # first ended count past each mark: (ended, RSS)
    while process.poll() is None:
        time.sleep(0.2)
        found = list(home.glob("jobs/*/job.db"))
        ended = ended_count(found[0]) if found else 0
        resident, _ = rss_bytes(process.pid)
        for mark in (100, 350):
            if ended >= mark and mark not in marks and resident:
                marks[mark] = (ended, resident)
    assert process.wait() == 0, process.stderr.read() if process.stderr else ""
    (first, before), (last, after) = marks[100], marks[350]
    per_trial = (after - before) / (last - first)
    assert per_trial < PER_TRIAL_BYTES, (
        f"da-submit grew {(after - before) / 1e6:.1f} MB over trials {first}-{last}: "
        f"{per_trial / 1024:.0f} KiB a trial")
