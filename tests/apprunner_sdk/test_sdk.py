"""The runner SDK: standalone (JSON lines on stdout) and against a real in-process AppCore.

For the connected tests a JobController and JobStore (tmp_path) run behind the framework's real
gRPC server, and a real AppCore (FrameworkClient, TrialLoop, random search, AppCoreServicer on a
free port) is attached to it. The SDK is configured only through the task environment the
framework sets (monkeypatched here) and re-reads it after ``apprunner_sdk._reset_for_tests()``.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
import json
import os
from pathlib import Path
import re
import time
from typing import Any

import numpy as np
import pytest

import apprunner_sdk
from apprunner_sdk.client import AppCoreClient
from apprunner_sdk.client import AppCoreUnreachableError
from apprunner_sdk.client import ReportRejectedError
from disauto.common import task_env
from disauto.common.report import Report
from disauto.common.tokens import trial_token
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import RunningJob
from disauto.testing.inprocess import free_port
from disauto.testing.inprocess import task_status


pytestmark = pytest.mark.integration  # starts processes or servers


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts outside any trial and leaves no trial behind."""
    for name in list(os.environ):
        if name.startswith("DISAUTO_"):
            monkeypatch.delenv(name)
    apprunner_sdk._reset_for_tests()
    yield
    apprunner_sdk._reset_for_tests()


def printed(out: str) -> list[dict[str, Any]]:
    return [json.loads(line[len("[disauto] "):]) for line in out.splitlines()
            if line.startswith("[disauto] ")]


# -- standalone ---------------------------------------------------------------------------------


def test_standalone_reads_params_and_prints_reports(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(task_env.PARAMS, '{"lr": 0.1, "layers": 3, "act": "relu"}')
    params = apprunner_sdk.get_params()
    assert params == {"lr": 0.1, "layers": 3, "act": "relu"}
    params["lr"] = 99  # a copy
    assert apprunner_sdk.get_params()["lr"] == 0.1
    assert apprunner_sdk.trial_number() is None
    assert apprunner_sdk.report(loss=0.5, accuracy=1, step=0) is False
    assert apprunner_sdk.report(accuracy=np.float32(0.75), final=True) is False
    assert apprunner_sdk.should_stop() is False
    lines = printed(capsys.readouterr().out)
    assert [(line["step"], line["final"], line["metrics"], line["trial"]) for line in lines] == [
        (0, False, {"loss": 0.5, "accuracy": 1.0}, None),
        (None, True, {"accuracy": 0.75}, None),
    ]
    assert all(line["elapsed_seconds"] >= 0 for line in lines)
    with pytest.raises(RuntimeError, match=r"already reported its final result; "
                                           r"report\(final=True\) must come last"):
        apprunner_sdk.report(accuracy=0.8)


def test_no_params_is_an_empty_assignment() -> None:
    assert apprunner_sdk.get_params() == {}


@pytest.mark.parametrize("text, message", [
    ("{lr: 1}", "DISAUTO_PARAMS is not valid JSON"),
    ("[1, 2]", "DISAUTO_PARAMS must be a JSON object, got list"),
])
def test_bad_params_are_a_clear_error(monkeypatch: pytest.MonkeyPatch, text: str,
                                      message: str) -> None:
    monkeypatch.setenv(task_env.PARAMS, text)
    with pytest.raises(ValueError, match=message):
        apprunner_sdk.get_params()


@pytest.mark.parametrize("value, error, message", [
    ("0.9", TypeError, "report(): metric 'accuracy' must be a number (int or float), "
                       "got str '0.9'"),
    (None, TypeError, "report(): metric 'accuracy' must be a number (int or float), "
                      "got NoneType None"),
    (True, TypeError, "report(): metric 'accuracy' must be a number (int or float), "
                      "got bool True"),
    (b"1", TypeError, "got bytes b'1'"),
    ([0.9], TypeError, "got list [0.9]"),
    (float("nan"), ValueError, "report(): metric 'accuracy' must be finite, got nan"),
    (float("-inf"), ValueError, "report(): metric 'accuracy' must be finite, got -inf"),
    (np.float64("nan"), ValueError, "must be finite, got nan"),
])
def test_metric_type_errors(value: Any, error: type[Exception], message: str,
                            capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(error, match=re.escape(message)):
        apprunner_sdk.report(accuracy=value)
    assert printed(capsys.readouterr().out) == []
    # A rejected report does not count as final: the real one can still come.
    apprunner_sdk.report(accuracy=0.5, final=True)


def test_numbers_of_other_types_are_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    apprunner_sdk.report(a=np.int64(3), b=Decimal("0.25"), c=7, d=np.float16(0.5))
    assert printed(capsys.readouterr().out)[0]["metrics"] == {"a": 3.0, "b": 0.25, "c": 7.0,
                                                             "d": 0.5}


def test_reports_need_a_metric_and_a_valid_step() -> None:
    with pytest.raises(ValueError, match=r"report\(\) needs at least one metric"):
        apprunner_sdk.report(step=1)
    for step in (-1, True, 1.5, "2", np.float64(2.0), np.int64(-1)):
        with pytest.raises(TypeError, match="step must be a non-negative int"):
            apprunner_sdk.report(accuracy=0.5, step=step)


def test_a_numpy_integer_is_a_step(capsys: pytest.CaptureFixture[str]) -> None:
    apprunner_sdk.report(accuracy=0.5, step=np.int64(3))
    apprunner_sdk.report(accuracy=0.6, step=np.uint8(4))
    lines = printed(capsys.readouterr().out)
    assert [line["step"] for line in lines] == [3, 4]
    assert all(type(line["step"]) is int for line in lines)


def test_output_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert apprunner_sdk.output_path() == tmp_path / "output"
    assert apprunner_sdk.output_path("model.h5") == tmp_path / "model.h5"
    apprunner_sdk._reset_for_tests()
    monkeypatch.setenv(task_env.OUTPUT_DIR, str(tmp_path / "out" / "trial-0004"))
    monkeypatch.setenv(task_env.OUTPUT_NAME, "model")
    path = apprunner_sdk.output_path()
    assert path == tmp_path / "out" / "trial-0004" / "model"
    assert path.parent.is_dir()


# -- against a real AppCore ---------------------------------------------------------------------


@pytest.fixture
def job(tmp_path: Path) -> Iterator[RunningJob]:
    running = RunningJob(tmp_path, max_trials=6, parallelism=2, target=0.99)
    yield running
    running.close()


def test_reports_reach_the_job_store(job: RunningJob, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    job.enter_trial(monkeypatch, 1)
    assignment = job.framework.controller.trials()[0].assignment
    assert apprunner_sdk.get_params() == assignment
    assert apprunner_sdk.trial_number() == 1
    assert apprunner_sdk.report(loss=0.9, accuracy=0.3, step=0) is False
    assert apprunner_sdk.report(loss=0.4, accuracy=0.6, step=1) is False
    assert apprunner_sdk.report(accuracy=0.7, train_seconds=3.5, final=True) is False
    reports = job.framework.store.reports(1)
    assert [(r["step"], r["final"], r["metrics"]) for r in reports] == [
        (0, False, {"loss": 0.9, "accuracy": 0.3}),
        (1, False, {"loss": 0.4, "accuracy": 0.6}),
        (None, True, {"accuracy": 0.7, "train_seconds": 3.5}),
    ]
    assert reports[0]["elapsed_seconds"] <= reports[2]["elapsed_seconds"]
    trial = job.framework.store.trial(1)
    assert trial is not None and trial.objective == 0.7 and trial.final_reported
    assert printed(capsys.readouterr().out) == []  # sent, not printed
    with pytest.raises(RuntimeError, match="trial 1 already reported its final result"):
        apprunner_sdk.report(accuracy=0.8)
    assert len(job.framework.store.reports(1)) == 3


def test_a_wrong_token_is_a_permission_error(job: RunningJob,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    job.enter_trial(monkeypatch, 1, token=trial_token(JOB_TOKEN, 2))
    with pytest.raises(PermissionError, match="report: missing or wrong token for trial 1"):
        apprunner_sdk.report(accuracy=0.5)
    assert job.framework.store.reports() == []


def test_should_stop_when_appcore_says_so(job: RunningJob,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    job.enter_trial(monkeypatch, 2)
    assert apprunner_sdk.report(accuracy=0.2, step=0) is False
    assert apprunner_sdk.should_stop() is False
    job.appcore.loop.report(Report(1, {"accuracy": 0.995}, None, True, 1.0))  # another runner wins
    assert apprunner_sdk.report(accuracy=0.3, step=1) is True
    assert apprunner_sdk.should_stop() is True
    # After the job's end a report is not recorded (step 1 neither); the call still succeeds.
    assert apprunner_sdk.report(accuracy=0.3, final=True) is True
    assert [r["final"] for r in job.framework.store.reports(2)] == [False]


def test_errors_from_appcore_map_to_python_exceptions(job: RunningJob) -> None:
    unknown = AppCoreClient(job.appcore.address, "", 99, trial_token(JOB_TOKEN, 99),
                            attempts=1)
    rejected = AppCoreClient(job.appcore.address, "", 1, trial_token(JOB_TOKEN, 1), attempts=1)
    try:
        with pytest.raises(LookupError, match="report: trial 99 does not exist"):
            unknown.report({"accuracy": 0.5}, step=None, final=False, elapsed_seconds=0.0)
        with pytest.raises(ReportRejectedError, match="report: metric 'accuracy' must be "
                                                      "finite, got inf"):
            rejected.report({"accuracy": float("inf")}, step=None, final=False,
                            elapsed_seconds=0.0)
    finally:
        unknown.close()
        rejected.close()


def test_unreachable_appcore_gives_up_after_bounded_retries() -> None:
    dead = f"127.0.0.1:{free_port()}"
    client = AppCoreClient(dead, "", 1, "token", attempts=3, backoff=0.05, timeout=2.0)
    started = time.monotonic()
    try:
        with pytest.raises(AppCoreUnreachableError,
                           match=f"report: AppCore at {dead} unreachable after 3 attempts"):
            client.report({"accuracy": 0.5}, step=None, final=True, elapsed_seconds=1.0)
    finally:
        client.close()
    elapsed = time.monotonic() - started
    assert 0.15 <= elapsed < 3.0  # waited 0.05 + 0.1 between the three attempts
    assert issubclass(AppCoreUnreachableError, ConnectionError)


def test_report_surfaces_unreachable_and_can_be_retried(job: RunningJob,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """report() raises AppCoreUnreachableError; the failed final report can be sent again."""
    dead = f"127.0.0.1:{free_port()}"
    job.enter_trial(monkeypatch, 1, appcore=dead)
    monkeypatch.delenv(task_env.FRAMEWORK_ADDR)  # nobody to ask where AppCore went
    apprunner_sdk._reset_for_tests()
    trial = apprunner_sdk._current()
    assert trial.client is not None
    # The task's client, with a small retry budget (the default waits about 15 s in all).
    trial.client = AppCoreClient(dead, "", 1, trial_token(JOB_TOKEN, 1), attempts=2,
                                 backoff=0.01, timeout=2.0)
    with pytest.raises(AppCoreUnreachableError, match="unreachable after 2 attempts"):
        apprunner_sdk.report(accuracy=0.5, final=True)
    trial.client = AppCoreClient(job.appcore.address, "", 1, trial_token(JOB_TOKEN, 1))
    assert apprunner_sdk.report(accuracy=0.5, final=True) is False  # not marked final before
    assert [r["final"] for r in job.framework.store.reports(1)] == [True]


def test_a_moved_appcore_is_found_through_the_framework(job: RunningJob,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner was told an address where AppCore no longer is (it was relaunched)."""
    dead = f"127.0.0.1:{free_port()}"
    job.enter_trial(monkeypatch, 1, appcore=dead)
    assert apprunner_sdk.report(accuracy=0.4, step=0) is False
    assert apprunner_sdk.report(accuracy=0.5, final=True) is False
    assert [r["metrics"]["accuracy"] for r in job.framework.store.reports(1)] == [0.4, 0.5]


def test_while_appcore_is_being_relaunched_the_runner_keeps_trying(job: RunningJob) -> None:
    """ResolveAppCore answers "" (no AppCore attached): retries run out, nothing is lost."""
    assert job.framework.controller.tasks.appcore_address() == job.appcore.address
    job.framework.controller.on_status(task_status("appcore-1", "TASK_FAILED"))
    assert job.framework.controller.tasks.appcore_address() == ""
    dead = f"127.0.0.1:{free_port()}"
    client = AppCoreClient(dead, job.framework.address, 1, trial_token(JOB_TOKEN, 1),
                           attempts=3, backoff=0.01, timeout=2.0)
    try:
        with pytest.raises(AppCoreUnreachableError, match=f"AppCore at {dead} unreachable"):
            client.report({"accuracy": 0.5}, step=None, final=True, elapsed_seconds=1.0)
    finally:
        client.close()
    assert job.framework.store.reports() == []
