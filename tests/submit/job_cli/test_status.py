"""``da-job status``: a job's trials, best and tasks, fitted to an 80-column terminal."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
import json
import os
from pathlib import Path
import time

from disauto.common.processes import start_time
from disauto.framework import _meta as meta
from disauto.testing.inprocess import AGENT
from tests.framework.webui.records import ParetoRecorded
from tests.framework.webui.records import record_pace
from tests.submit.job_cli.conftest import DaJob
from tests.submit.job_cli.records import JobRecord


SANDBOX = ("/home/someone/.disauto/jobs/mnist-20261126-060756-33fd/cluster/slaves/"
           "04fbafe2-db01-4433-89a2-0b6909d05e8e-S0/frameworks/04fbafe2-db01-4433-89a2-"
           "0b6909d05e8e-0000/executors/trial-0003/runs/925b64d6-2996-4671-8e89-7a0fa20c9f37")
FAILURE = ("4 trials failed (--max-failed-trials 3); last: trial-0007: TASK_FAILED "
           "REASON_COMMAND_EXECUTOR_FAILED: Command exited with status 1; stderr: Traceback "
           f'(most recent call last): |   File "{SANDBOX}/train.py", line 3, in <module> |     '
           'print(p["hidden"]) |           ~^^^^^^^^^^ | KeyError: \'hidden\'')


def test_a_failed_jobs_cause_comes_first_and_every_line_fits(
        da_job: DaJob, job_record: Callable[..., JobRecord]) -> None:
    job_record("job-a", state="ended", outcome="TOO_MANY_FAILURES", message=FAILURE)
    code, out, err = da_job("status", "job-a")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, out
    assert lines[0] == "job job-a (tests): ended (too many failures)"
    assert lines[1] == ("  outcome: KeyError: 'hidden' (4 trials failed (--max-failed-trials 3); "
                        "last:")
    assert lines[3].endswith("…") and lines[4].startswith("  trials: ")
    assert "/runs/" not in out and 'File "train.py"' in out
    # The record and --json keep the message whole.
    assert json.loads(da_job("status", "job-a", "--json")[1])["message"] == FAILURE


def test_running_trials_name_their_agent_short(da_job: DaJob,
                                               job_record: Callable[..., JobRecord]) -> None:
    job = job_record("job-a")
    agent = "04fbafe2-db01-4433-89a2-0b6909d05e8e-S12"
    job.store.update_trial(job.running, agent_id=agent)
    lines = da_job("status", "job-a")[1].splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "  running: trial-0008 on agent …-S12 (RUNNING)" in lines
    assert "  master 127.0.0.1:5050, framework …-0000, role *, elapsed 0:01:00" in lines
    shown = json.loads(da_job("status", "job-a", "--json")[1])
    assert shown["running"][0]["agent"] == agent


def test_an_interrupted_job_says_what_its_framework_last_knew(
        da_job: DaJob, job_record: Callable[..., JobRecord]) -> None:
    job = job_record("job-a", state="interrupted")
    job.store.update_appcore_run(1, state="ATTACHED", address="127.0.0.1:31473")
    lines = da_job("status", "job-a")[1].splitlines()
    assert max(len(line) for line in lines) <= 80
    assert ("  AppCore: appcore-1 127.0.0.1:31473 (unknown: ATTACHED when its framework "
            "died)") in lines, lines
    assert "  was running: trial-0008 on agent agent-S0 (RUNNING)" in lines
    shown = json.loads(da_job("status", "job-a", "--json")[1])["appcore"]
    assert (shown["state"], shown["recorded_state"]) == ("UNKNOWN", "ATTACHED")
    job.store.set_meta(meta.PID, os.getpid())  # the same record, its framework alive
    job.store.set_meta(meta.PID_START, start_time(os.getpid()))
    lines = da_job("status", "job-a")[1].splitlines()
    assert "  AppCore: appcore-1 127.0.0.1:31473 ATTACHED" in lines
    assert "  running: trial-0008 on agent agent-S0 (RUNNING)" in lines


def test_the_roles_and_a_trial_whose_agent_is_unreachable_are_shown(
        da_job: DaJob, job_record: Callable[..., JobRecord]) -> None:
    job = job_record("job-a")
    job.store.set_meta(meta.CONFIG, replace(job.config, roles=("ml", "dev"),
                                            unreachable_timeout=300.0))
    since = time.time() - 30
    job.store.update_trial(job.running, unreachable_since=since)
    lines = da_job("status", "job-a")[1].splitlines()
    assert max(len(line) for line in lines) <= 80
    clock = time.strftime("%H:%M:%S", time.localtime(since))
    said = " ".join(" ".join(lines).split())
    assert (f"unreachable: trial-0008 is unreachable since {clock} (runs again from "
            f"{time.strftime('%H:%M:%S', time.localtime(since + 300))}, --unreachable-timeout "
            "5m)") in said
    assert (f"running: trial-0008 on agent {AGENT} (RUNNING, agent unreachable since "
            f"{clock})") in said
    assert "framework …-0000, roles ml, dev, elapsed" in said
    shown = json.loads(da_job("status", "job-a", "--json")[1])
    assert shown["roles"] == ["ml", "dev"]
    assert shown["running"][0]["unreachable_since"] == since
    assert shown["unreachable"].startswith("trial-0008 is unreachable since")
    job.store.update_trial(job.running, unreachable_since=None)
    shown = json.loads(da_job("status", "job-a", "--json")[1])
    assert shown["unreachable"] == "" and shown["running"][0]["unreachable_since"] is None


def test_a_retried_trial_shows_each_earlier_try(da_job: DaJob, home: Path) -> None:
    ParetoRecorded(home / "jobs" / "job-p", state=meta.ENDED)
    lines = da_job("status", "job-p")[1].splitlines()
    assert max(len(line) for line in lines) <= 80
    said = " ".join(" ".join(lines).split())
    assert ("retried: trial-0008 COMPLETED on try 2; try 1 (trial-0008) failed: TASK_FAILED: "
            "exited with status 1") in said
    assert ("retried: trial-0009 FAILED on try 2; try 1 (trial-0009) failed: TASK_FAILED: "
            "exited with status 2") in said
    shown = json.loads(da_job("status", "job-p", "--json")[1])
    assert shown["trial_retries"] == 1
    assert [(r["trial"], r["state"], r["task"], [t["task_id"] for t in r["tries"]])
            for r in shown["retried"]] == [(8, "COMPLETED", "trial-0008.1", ["trial-0008"]),
                                           (9, "FAILED", "trial-0009.1", ["trial-0009"])]


def test_a_retried_trial_that_resumed_from_a_checkpoint_says_from_which_step(
        da_job: DaJob, home: Path) -> None:
    made = ParetoRecorded(home / "jobs" / "job-p", state=meta.ENDED)
    point = {"trial": 8, "step": 7, "name": "000007-step-7.ckpt"}
    made.store.update_trial(8, resumed_from=point)
    said = " ".join(da_job("status", "job-p")[1].split())
    assert "retried: trial-0008 COMPLETED on try 2 (resumed from step 7); try 1 (trial-0008) " \
        "failed: TASK_FAILED: exited with status 1" in said
    shown = json.loads(da_job("status", "job-p", "--json")[1])
    assert [r["resumed_from"] for r in shown["retried"]] == [point, None]


def test_a_job_of_several_objectives_lists_its_front_not_a_best(da_job: DaJob,
                                                                home: Path) -> None:
    ParetoRecorded(home / "jobs" / "job-p", state=meta.ENDED)
    out = da_job("status", "job-p")[1]
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, out
    assert "best:" not in out
    at = lines.index("  front: 4 trials of accuracy (maximize), latency (minimize)")
    assert lines[at + 1:at + 5] == ["    trial-0004 accuracy=0.9 latency=40",
                                    "    trial-0007 accuracy=0.85 latency=35",
                                    "    trial-0002 accuracy=0.8 latency=20",
                                    "    trial-0001 accuracy=0.7 latency=10"]
    shown = json.loads(da_job("status", "job-p", "--json")[1])
    assert shown["front"] == [{"trial": n, "values": {"accuracy": a, "latency": lat}}
                              for n, (a, lat) in ((1, (0.7, 10.0)), (2, (0.8, 20.0)),
                                                  (4, (0.9, 40.0)), (7, (0.85, 35.0)))]


def test_a_job_of_one_objective_still_says_its_best(da_job: DaJob,
                                                    job_record: Callable[..., JobRecord]) -> None:
    job_record("job-a", state="ended")
    out = da_job("status", "job-a")[1]
    assert "  best: trial-" in out and "front" not in out
    assert "front" not in json.loads(da_job("status", "job-a", "--json")[1])


def test_the_rate_and_eta_are_a_line_and_in_json(
        da_job: DaJob, job_record: Callable[..., JobRecord]) -> None:
    job = job_record("job-a")
    now = time.time()
    record_pace(job, now)  # 0.6 trials a minute, trials of 60 s, an ETA of 60 s
    lines = da_job("status", "job-a")[1].splitlines()
    assert max(len(line) for line in lines) <= 80
    assert ("  pace: 0.6 trials/min in the last 10m, ETA 1m (trials of 1m on average)"
            in lines), lines
    shown = json.loads(da_job("status", "job-a", "--json")[1])["pace"]
    assert shown == {"trials_per_minute": 0.6, "eta_seconds": 60.0, "eta_at": shown["eta_at"],
                     "trial_seconds": 60.0, "window_seconds": 600.0}
    assert now + 59.9 <= shown["eta_at"] <= time.time() + 60.1  # rounded to 0.1 s


def test_no_eta_before_a_trial_ends_nor_after_the_job_did(
        da_job: DaJob, job_record: Callable[..., JobRecord], home: Path) -> None:
    young = job_record("job-a", completed=0)
    young.store.update_trial(young.running, started_at=time.time() - 20, ended_at=None)
    young.store.update_trial(young.running - 1, state="PENDING", started_at=None,
                             ended_at=None)
    young.store.update_trial(young.running - 2, state="PENDING", started_at=None,
                             ended_at=None)
    lines = da_job("status", "job-a")[1].splitlines()
    assert "  pace: no trial has ended yet, ETA —" in lines, lines
    shown = json.loads(da_job("status", "job-a", "--json")[1])["pace"]
    assert (shown["trials_per_minute"], shown["eta_seconds"], shown["eta_at"]) == (
        None, None, None)
    ended = job_record("job-b", state="ended")
    record_pace(ended, ended.store.meta()[meta.ENDED_AT])
    lines = da_job("status", "job-b")[1].splitlines()
    assert "  pace: 0.6 trials/min in its last 10m" in lines, lines
    assert json.loads(da_job("status", "job-b", "--json")[1])["pace"]["eta_seconds"] is None
