"""AppCore's gRPC service for runners, on a real server, with the real loop and framework behind.

Runners call ReportMetrics with their trial token; the servicer checks it, checks the metrics,
and hands the report to the TrialLoop, which records it through the framework (a JobController
and JobStore in tmp_path behind the framework's real gRPC server).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
import socket
from typing import Any

import grpc
import pytest

from disauto.appcore.servicer import AppCoreServicer
from disauto.appcore.servicer import make_server
from disauto.common.report import Report
from disauto.common.tokens import trial_token
from disauto.protos import appcore_pb2
from disauto.protos import appcore_pb2_grpc
from disauto.protos import common_pb2
from disauto.protos import framework_pb2
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import AppCore
from disauto.testing.inprocess import Framework
from disauto.testing.inprocess import free_port
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import trial_metadata
from disauto.testing.inprocess import wait_for


pytestmark = pytest.mark.integration  # starts processes or servers


class Stack:
    def __init__(self, tmp_path: Path, **config: Any) -> None:
        self.framework = Framework(tmp_path, job_config(**config))
        self.appcore = AppCore(self.framework.address).run()
        self.channel = grpc.insecure_channel(self.appcore.address)
        self.stub = appcore_pb2_grpc.AppCoreServiceStub(self.channel)
        wait_for(lambda: len(self.framework.in_flight()) == config.get("parallelism", 2),
                 what="the first trials")
        self.framework.launch_trials()

    def report(self, number: int, *, token: str | None = None, step: int | None = None,
               final: bool = False, **metrics: float) -> appcore_pb2.ReportMetricsReply:
        request = request_for(number, step=step, final=final, **metrics)
        token = trial_token(JOB_TOKEN, number) if token is None else token
        return self.stub.ReportMetrics(request, metadata=trial_metadata(token), timeout=5)

    def close(self) -> None:
        self.channel.close()
        if self.framework.controller.outcome is None:
            self.framework.controller.finish(framework_pb2.STOPPED, "teardown")
        self.appcore.close()
        self.framework.close()


def request_for(number: int, *, step: int | None = None, final: bool = False,
                **metrics: float) -> common_pb2.Report:
    return Report(number, metrics, step, final, elapsed_seconds=4.5).to_proto()


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    running = Stack(tmp_path, max_trials=5, parallelism=2, target=0.99)
    yield running
    running.close()


def error_of(fn: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as caught:
        fn()
    return caught.value.code(), caught.value.details()


def test_reports_are_recorded_through_the_framework(stack: Stack) -> None:
    reply = stack.report(1, step=0, loss=0.7, accuracy=0.4)
    assert reply.should_stop is False
    stack.report(1, final=True, accuracy=0.8)
    assert stack.framework.store.reports(1) == [
        {"trial": 1, "step": 0, "metrics": {"loss": 0.7, "accuracy": 0.4}, "final": False,
         "elapsed_seconds": 4.5},
        {"trial": 1, "step": None, "metrics": {"accuracy": 0.8}, "final": True,
         "elapsed_seconds": 4.5},
    ]
    trial = stack.framework.store.trial(1)
    assert trial is not None and trial.objective == 0.8 and trial.training_seconds == 4.5


@pytest.mark.parametrize("token", ["", "garbage", trial_token(JOB_TOKEN, 2), JOB_TOKEN,
                                   trial_token("another-job", 1)],
                         ids=["missing", "garbage", "other-trial", "job-token", "other-job"])
def test_a_report_needs_its_own_trial_token(stack: Stack, token: str) -> None:
    code, details = error_of(lambda: stack.report(1, token=token, accuracy=0.5))
    assert (code, details) == (grpc.StatusCode.UNAUTHENTICATED,
                               "missing or wrong token for trial 1")
    assert stack.framework.store.reports() == []


@pytest.mark.parametrize("metrics, details", [
    ({}, "a report needs at least one metric, e.g. accuracy=0.93"),
    ({"accuracy": float("nan")}, "metric 'accuracy' must be finite, got nan"),
    ({"loss": float("-inf")}, "metric 'loss' must be finite, got -inf"),
    ({"": 1.0}, "a metric needs a name, got ''"),
])
def test_bad_metrics_are_invalid_argument(stack: Stack, metrics: dict[str, float],
                                          details: str) -> None:
    assert error_of(lambda: stack.report(1, **metrics)) == (grpc.StatusCode.INVALID_ARGUMENT,
                                                            details)
    assert stack.framework.store.reports() == []


def test_framework_errors_pass_through_with_their_code(stack: Stack) -> None:
    assert error_of(lambda: stack.report(9, accuracy=0.5)) == (
        grpc.StatusCode.NOT_FOUND, "trial 9 does not exist")
    stack.report(1, final=True, accuracy=0.5)
    assert error_of(lambda: stack.report(1, accuracy=0.6)) == (
        grpc.StatusCode.FAILED_PRECONDITION, "trial 1 already reported its final result")


def test_should_stop_once_the_target_is_reached(stack: Stack) -> None:
    assert stack.report(2, step=1, accuracy=0.3).should_stop is False
    assert stack.report(1, final=True, accuracy=0.995).should_stop is True
    assert stack.report(2, step=2, accuracy=0.4).should_stop is True
    assert stack.framework.controller.outcome is not None
    assert stack.framework.controller.outcome[0] == framework_pb2.TARGET_REACHED


def test_an_unreachable_framework_is_unavailable_so_runners_retry(stack: Stack) -> None:
    stack.framework.server.stop(grace=None).wait()
    code, details = error_of(lambda: stack.report(1, accuracy=0.5))
    assert code == grpc.StatusCode.UNAVAILABLE
    assert details.startswith("the framework could not record the report")


def test_reports_before_the_loop_exists_are_unavailable() -> None:
    port = free_port()
    server = make_server(AppCoreServicer(JOB_TOKEN), "127.0.0.1", port)
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = appcore_pb2_grpc.AppCoreServiceStub(channel)
            call = lambda: stub.ReportMetrics(  # noqa: E731
                request_for(1, accuracy=0.5),
                metadata=trial_metadata(trial_token(JOB_TOKEN, 1)), timeout=5)
            assert error_of(call) == (grpc.StatusCode.UNAVAILABLE,
                                      "AppCore is starting or waits for its framework")
            # The token is still checked first.
            wrong = lambda: stub.ReportMetrics(  # noqa: E731
                request_for(1, accuracy=0.5), metadata=trial_metadata("x"), timeout=5)
            assert error_of(wrong)[0] == grpc.StatusCode.UNAUTHENTICATED
    finally:
        server.stop(None)


def test_make_server_on_a_taken_port_is_an_os_error(tmp_path: Path) -> None:
    """Also when another gRPC server holds it: two AppCores must never share a port."""
    framework = Framework(tmp_path, job_config())
    try:
        with socket.socket() as plain:
            plain.bind(("127.0.0.1", 0))
            plain.listen()
            for port in (int(framework.address.rsplit(":", 1)[1]), plain.getsockname()[1]):
                with pytest.raises(OSError, match=f"cannot bind AppCore to 127.0.0.1:{port}"):
                    make_server(AppCoreServicer(JOB_TOKEN), "127.0.0.1", port)
    finally:
        framework.close()
