"""``da-job logs``: a trial named as every output names it, AppCore's log (its stderr), and
without a trial what helps: the running trials (else the best, else the last) and AppCore."""

from __future__ import annotations

from collections.abc import Callable
import io
from pathlib import Path
import threading
import time

from disauto.common.trial_state import TrialState
from disauto.framework import _meta as meta
from disauto.submit.job_cli import table
from tests.submit.job_cli.conftest import DaJob
from tests.submit.job_cli.records import JobRecord


APPCORE_LOG = "".join(f"INFO appcore: line {n}\n" for n in range(1, 31))


def test_a_trial_is_named_by_number_or_as_outputs_name_it(
        da_job: DaJob, job_record: Callable[..., JobRecord]) -> None:
    job = job_record("job-a")
    job.log("trial-0003", "stdout", "three\n")
    job.log("trial-0003", "stderr", "three's errors\n")
    for name in ("3", "trial-0003", "trial-3", "TRIAL-0003", "0003"):
        assert da_job("logs", "job-a", name) == (0, "three\n", ""), name
    assert da_job("logs", "job-a", "trial-0003", "--stderr") == (0, "three's errors\n", "")
    assert da_job("logs", "job-a", "trial-0003.0")[1] == "three\n"


def test_a_retry_is_named_by_its_task(da_job: DaJob,
                                      job_record: Callable[..., JobRecord]) -> None:
    job = job_record("job-a")
    job.store.update_trial(8, retries=1, task_id="trial-0008.1")
    job.log("trial-0008", "stdout", "the first launch\n")
    job.log("trial-0008.1", "stdout", "the retry\n")
    assert da_job("logs", "job-a", "trial-0008")[1] == "the retry\n"
    assert da_job("logs", "job-a", "trial-0008.0")[1] == "the first launch\n"
    assert da_job("logs", "job-a", "trial-0008.1")[1] == "the retry\n"
    assert da_job("logs", "job-a", "trial-0008.2")[2] == (
        "da-job: error: trial-0008 has no retry 2 (it was launched 2 times)\n")


def test_what_is_not_a_trial_is_one_line(da_job: DaJob,
                                         job_record: Callable[..., JobRecord]) -> None:
    job_record("job-a")
    assert da_job("logs", "job-a", "x13") == (
        2, "", "da-job: error: invalid trial 'x13': expected a trial number or trial-NNNN or "
               "'appcore'\n")
    assert da_job("logs", "job-a", "trial-0013") == (
        2, "", "da-job: error: job job-a has no trial-0013 (its trials: trial-0001 to "
               "trial-0009)\n")
    code, out, err = da_job("logs", "job-a", "trial-0009")  # pending: nothing printed yet
    assert code == 1 and err.startswith("da-job: error: no output of trial-0009 (stdout) yet")
    assert da_job("logs", "job-a", "-n", "-1")[2] == "da-job: error: --lines must be 0 or more, "\
                                                     "got -1\n"


def test_appcore_shows_its_log_on_stderr(da_job: DaJob,
                                         job_record: Callable[..., JobRecord]) -> None:
    job = job_record("job-a")
    job.log("appcore-1", "stdout", "")
    job.log("appcore-1", "stderr", APPCORE_LOG)
    assert da_job("logs", "job-a", "appcore") == (0, APPCORE_LOG, "")
    assert da_job("logs", "job-a", "appcore", "--stdout") == (0, "", "")
    assert da_job("logs", "job-a", "appcore", "-n", "2")[1] == "INFO appcore: line 29\n" \
                                                               "INFO appcore: line 30\n"


def test_no_trial_shows_the_running_trials_and_appcore(
        da_job: DaJob, job_record: Callable[..., JobRecord]) -> None:
    job = job_record("job-a")  # trial 8 runs
    job.log("trial-0008", "stdout", "".join(f"epoch {n}\n" for n in range(20)))
    job.log("appcore-1", "stderr", APPCORE_LOG)
    code, out, err = da_job("logs", "job-a")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "==> trial-0008 stdout (running) <==", *(f"epoch {n}" for n in range(10, 20)), "",
        "==> appcore-1 stderr (AppCore) <==", *(f"INFO appcore: line {n}" for n in
                                                range(21, 31)), ""]
    assert da_job("logs", "job-a", "--stderr", "-n", "1")[1].splitlines() == [
        "==> trial-0008 stderr (running) <==", "(nothing yet)", "",
        "==> appcore-1 stderr (AppCore) <==", "INFO appcore: line 30", ""]


def test_no_trial_running_shows_the_best_else_the_last_failure(
        da_job: DaJob, job_record: Callable[..., JobRecord]) -> None:
    job = job_record("job-a", state="ended")
    job.store.update_trial(8, state=TrialState.KILLED)
    job.store.update_trial(9, state=TrialState.KILLED)
    job.log("trial-0005", "stdout", "the best\n")
    out = da_job("logs", "job-a")[1]
    assert out.startswith("==> trial-0005 stdout (best, accuracy=0.6) <==\nthe best\n\n"), out
    failed = job_record("job-b", state="ended", completed=0)  # 1 pruned, 2 failed, 3, 4
    for number in (3, 4):
        failed.store.update_trial(number, state=TrialState.FAILED)
    failed.log("trial-0004", "stderr", "Traceback\nKeyError: 'hidden'\n")
    assert da_job("logs", "job-b")[1].startswith(
        "==> trial-0004 stderr (failed, the last trial) <==\nTraceback\nKeyError: 'hidden'\n")


def test_follow_without_a_trial_takes_in_trials_that_start(
        home: Path, job_record: Callable[..., JobRecord]) -> None:
    job = job_record("job-a")
    job.log("trial-0008", "stdout", "8 before\n")
    out = io.StringIO()
    follower = threading.Thread(target=table.run, args=(["logs", "job-a", "-f"], out))
    follower.start()
    wait_for(lambda: "8 before" in out.getvalue())
    job.log("trial-0008", "stdout", "8 before\n8 after\n")
    wait_for(lambda: "8 after" in out.getvalue())
    job.run(9)
    job.log("trial-0009", "stdout", "9 starts\n")
    wait_for(lambda: "9 starts" in out.getvalue())
    job.log("appcore-1", "stderr", "ending the job\n")
    job.store.set_meta(meta.STATE, meta.ENDED)  # the follower stops once it has read the rest
    follower.join(10)
    assert not follower.is_alive()
    assert out.getvalue() == (
        "==> trial-0008 stdout (running) <==\n8 before\n\n"
        "==> appcore-1 stderr (AppCore) <==\n(nothing yet)\n\n"
        "\n==> trial-0008 stdout (running) <==\n8 after\n"
        "\n==> trial-0009 stdout (running) <==\n9 starts\n"
        "\n==> appcore-1 stderr (AppCore) <==\nending the job\n")


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.05)
