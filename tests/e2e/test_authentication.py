"""DisAuto on a cluster that authenticates and authorizes, end to end: a real ``da-cluster``
with Mesos' ``--authenticate_http_executors``, ``--authenticate_http_readonly`` (with
``--credentials``) and ``--acls``, and real ``da-submit`` jobs: warm slots whose executors must
present their token, telemetry and task logs read from agents that refuse anonymous reads, and
ACLs that refuse a role, a task's user, or hide a reservation from the job's principal.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import subprocess
import sys
from typing import Any

import pytest

from tests.e2e.conftest import ROOT
from tests.e2e.conftest import DaCluster
from tests.e2e.conftest import common_flags


pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Says hello on stdout, and lives long enough for the collector to measure it.
RUNNER = '''
import time
from apprunner_sdk import get_params, report
p = get_params()
print("hello from the trial", flush=True)
time.sleep(1.5)
report(accuracy=float(p.get("x", 0.5)), final=True)
'''


def _credentials(folder: Path) -> tuple[str, str]:
    """The cluster's credentials file and the job's secret file (principal ``alice``)."""
    (folder / "creds.json").write_text(json.dumps(
        {"credentials": [{"principal": "alice", "secret": "a-secret"}]}))
    (folder / "secret").write_text("a-secret\n")
    return str(folder / "creds.json"), str(folder / "secret")


def _one_error_line(job: Any) -> str:
    errors = [line for line in job.lines if "error:" in line]
    assert len(errors) == 1, job.output
    return job.words


def test_warm_slots_telemetry_and_logs_on_an_authenticating_cluster(
        submit: Any, workdir: Path, tmp_path: Path) -> None:
    creds, secret = _credentials(tmp_path)
    cluster = DaCluster(tmp_path / "da-cluster", extra=(
        "--credentials", creds, "--authenticate-http-executors",
        "--authenticate-http-readonly"))
    (workdir / "runner.py").write_text(RUNNER)
    try:
        address = cluster.start()
        auth = ("--master", address, "--principal", "alice", "--secret-file", secret)
        warm = submit(*common_flags(workdir, "--trail-steps", "2", "--slot-mode", "warm",
                                    "--quiet", *auth))
        assert warm.wait(120) == 0, warm.output
        assert [t["state"] for t in warm.results()["trials"]] == ["COMPLETED"] * 2
        measured = submit(*common_flags(workdir, "--trail-steps", "1", "--quiet",
                                        "--telemetry-interval", "0.3s", *auth))
        assert measured.wait(120) == 0, measured.output
    finally:
        cluster.kill()
    (trial,) = measured.results()["trials"]
    assert trial["state"] == "COMPLETED" and trial["usage"]["peak_rss_bytes"] > 0, trial
    for job in (warm, measured):  # copied through the agents' /files while the job ran
        logs = subprocess.run(
            [sys.executable, "-m", "disauto.submit.job_cli", "logs", job.job_dir().name, "1"],
            env={**_env(job), "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
            timeout=60, check=False)
        assert logs.returncode == 0 and "hello from the trial" in logs.stdout, logs


def _env(job: Any) -> dict[str, str]:
    return {**os.environ, "DISAUTO_HOME": str(job.home)}


def test_acls_refuse_a_role_and_a_user_and_hide_a_reservation(
        submit: Any, workdir: Path, tmp_path: Path) -> None:
    creds, secret = _credentials(tmp_path)
    (tmp_path / "creds.json").write_text(json.dumps({"credentials": [
        {"principal": name, "secret": "a-secret"} for name in ("alice", "bob")]}))
    (tmp_path / "acls.json").write_text(json.dumps({
        "register_frameworks": [
            {"principals": {"type": "ANY"}, "roles": {"values": ["ml", "dev"]}},
            {"principals": {"type": "ANY"}, "roles": {"type": "NONE"}}],
        "run_tasks": [{"principals": {"values": ["bob"]}, "users": {"type": "NONE"}}],
        "view_roles": [{"principals": {"type": "ANY"}, "roles": {"values": ["*"]}},
                       {"principals": {"type": "ANY"}, "roles": {"type": "NONE"}}],
    }))
    # Every CPU and all memory reserved for ml, which no reader may view.
    cluster = DaCluster(tmp_path / "da-cluster", extra=(
        "--credentials", creds, "--acls", str(tmp_path / "acls.json"),
        "--resources", "cpus(ml):4;mem(ml):4096"))
    try:
        address = cluster.start()

        def job(principal: str, role: str) -> Any:
            return submit(*common_flags(workdir, "--trail-steps", "2", "--role", role,
                                        "--master", address, "--principal", principal,
                                        "--secret-file", secret))

        refused = job("alice", "prod")
        assert refused.wait(60) == 2, refused.output
        said = _one_error_line(refused)
        assert "register_frameworks" in said and "{ prod }" in said, said
        # The master shows alice none of ml's reservation: the job is not judged unable to
        # run, and Mesos offers it ml's resources.
        hidden = job("alice", "ml")
        assert hidden.wait(120) == 0, hidden.output
        assert [t["state"] for t in hidden.results()["trials"]] == ["COMPLETED"] * 2
        # bob may register, but run no task as any user: its first launch ends the job.
        unauthorized = job("bob", "ml")
        assert unauthorized.wait(60) == 2, unauthorized.output
        said = _one_error_line(unauthorized)
        assert "run_tasks" in said and "Not authorized to launch task appcore" in said, said
    finally:
        cluster.kill()
