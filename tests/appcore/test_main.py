"""``python -m disauto.appcore`` as its Mesos task runs it: a real process against an in-process
framework.

The framework side is a real JobController and gRPC service; the test gives the process the
environment the framework's TaskInfo gives it (framework/_tasks.py) and plays Mesos and the
runners.
"""

from __future__ import annotations

import os
from pathlib import Path
import subprocess
import sys

import pytest

from apprunner_sdk.client import AppCoreClient
from disauto.appcore.algorithms import ALGORITHMS
from disauto.common import task_env
from disauto.common.tokens import trial_token
from disauto.framework._spec import JobConfig
from disauto.protos import framework_pb2
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import Framework
from disauto.testing.inprocess import free_port
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import wait_for


pytestmark = pytest.mark.integration  # starts processes or servers


ROOT = Path(__file__).resolve().parents[2]


def appcore_env(**variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISAUTO_")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(variables)
    return env


def start(framework: Framework, port: int) -> subprocess.Popen[str]:
    env = appcore_env(**{task_env.FRAMEWORK_ADDR: framework.address, task_env.JOB_TOKEN: JOB_TOKEN,
                         task_env.APPCORE_PORT: str(port), task_env.APPCORE_HOST: "127.0.0.1"})
    return subprocess.Popen([sys.executable, "-m", "disauto.appcore"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_without_its_environment_it_says_what_is_missing() -> None:
    result = subprocess.run([sys.executable, "-m", "disauto.appcore"], cwd=ROOT, env=appcore_env(),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip().endswith(
        "appcore: error: DISAUTO_FRAMEWORK_ADDR is not set (AppCore runs as a DisAuto task)")
    assert "Traceback" not in result.stderr


def test_a_whole_job(tmp_path: Path) -> None:
    framework = Framework(tmp_path, job_config(max_trials=2, parallelism=2))
    port = free_port()
    process = start(framework, port)
    try:
        framework.launch_appcore()
        wait_for(lambda: framework.controller.tasks.appcore_address() == f"127.0.0.1:{port}",
                 timeout=30, what="AppCore to attach")
        wait_for(lambda: len(framework.in_flight()) == 2, what="two trials")
        framework.launch_trials()
        for number in (1, 2):
            runner = AppCoreClient(framework.controller.tasks.appcore_address(), framework.address,
                                   number, trial_token(JOB_TOKEN, number), attempts=20,
                                   backoff=0.05, timeout=5)
            try:
                assert runner.report({"accuracy": 0.5 + number / 10}, step=None, final=True,
                                     elapsed_seconds=1.0) is False
            finally:
                runner.close()
            framework.end_trial(number, "TASK_FINISHED")
        assert process.wait(timeout=30) == 0
        assert framework.controller.outcome == (framework_pb2.BUDGET_SPENT,
                                                "the budget of 2 trials is spent")
        assert [t.objective for t in framework.controller.trials()] == [0.6, 0.7]
        output = process.stdout.read() if process.stdout else ""
        assert "AppCore serving runners on 127.0.0.1:" in output
    finally:
        process.kill()
        process.wait()
        framework.close()


@pytest.mark.parametrize(("config", "message"), [
    (job_config(tuning_type="annealing"),
     "unknown search algorithm 'annealing'; valid algorithms: " + ", ".join(ALGORITHMS)),
    (job_config(parallelism=0),  # not from da-submit, which refuses it: from a stray record
     "the parallelism of algorithm 'random-search' must be a positive integer, got 0"),
])
def test_a_search_it_cannot_run_ends_the_job_in_error(tmp_path: Path, config: JobConfig,
                                                      message: str) -> None:
    framework = Framework(tmp_path, config)
    process = start(framework, free_port())
    try:
        assert process.wait(timeout=60) == 1
        assert framework.controller.outcome == (
            framework_pb2.ERROR, f"AppCore cannot run the search: {message}")
    finally:
        process.kill()
        process.wait()
        framework.close()


def test_a_taken_port_is_a_clear_error(tmp_path: Path) -> None:
    framework = Framework(tmp_path, job_config())
    port = int(framework.address.rsplit(":", 1)[1])  # the framework's gRPC server holds it
    process = start(framework, port)
    try:
        assert process.wait(timeout=60) != 0
        output = process.stdout.read() if process.stdout else ""
        assert f"cannot bind AppCore to 127.0.0.1:{port}" in output  # its host: loopback
        assert framework.controller.tasks.appcore_address() == ""  # it never attached
    finally:
        process.kill()
        process.wait()
        framework.close()
