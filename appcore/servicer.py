"""AppCore's gRPC service for runners (thin: proto ↔ the trial loop, trial tokens checked)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

import grpc

from disauto.appcore.loop import TrialLoop
from disauto.common import gpu_samples
from disauto.common import grpc_server
from disauto.common.metrics import MetricError
from disauto.common.metrics import check_constraints
from disauto.common.metrics import check_metrics
from disauto.common.report import Report
from disauto.common.task_env import TOKEN_METADATA
from disauto.common.tls import ServerTls
from disauto.common.tokens import check_trial_token
from disauto.protos import appcore_pb2
from disauto.protos import appcore_pb2_grpc
from disauto.protos import common_pb2


_PASSED_THROUGH = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION,
}


_T = TypeVar("_T")


class AppCoreServicer(appcore_pb2_grpc.AppCoreServiceServicer):
    """Receives runners' reports.

    Args:
        job_token: the job's token (trial tokens derive from it).
        loop: the trial loop; may be set later with :meth:`set_loop` (reports until then are
            answered UNAVAILABLE, which runners retry).
    """

    def __init__(self, job_token: str, loop: TrialLoop | None = None) -> None:
        self._loop = loop
        self._job_token = job_token

    def set_loop(self, loop: TrialLoop | None) -> None:
        """Serve reports through ``loop``; None while the framework is away (reports are then
        answered UNAVAILABLE at once, and runners retry)."""
        self._loop = loop

    def ReportMetrics(  # noqa: N802 - gRPC method name
        self, request: common_pb2.Report, context: grpc.ServicerContext
    ) -> appcore_pb2.ReportMetricsReply:
        self._check_token(request.trial_number, context)
        report = Report.from_proto(request)
        try:
            report = replace(report, metrics=check_metrics(report.metrics),
                             constraints=check_constraints(report.constraints, report.final))
        except MetricError as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        loop = self._loop_or_abort(context)
        stop = self._forward(context, "the report", lambda: loop.report(report))
        return appcore_pb2.ReportMetricsReply(should_stop=stop)

    def ReportGpuSamples(  # noqa: N802 - gRPC method name
        self, request: common_pb2.GpuSamples, context: grpc.ServicerContext
    ) -> common_pb2.GpuSamplesReply:
        self._check_token(request.trial_number, context)
        number, readings = gpu_samples.from_proto(request)
        try:
            gpu_samples.check_readings(readings)
        except gpu_samples.GpuSampleError as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        loop = self._loop_or_abort(context)
        recorded = self._forward(context, "the GPU samples",
                                 lambda: loop.record_gpu_samples(number, readings))
        return common_pb2.GpuSamplesReply(recorded=recorded)

    def _check_token(self, trial_number: int, context: grpc.ServicerContext) -> None:
        token = dict(context.invocation_metadata()).get(TOKEN_METADATA, "")
        if not check_trial_token(self._job_token, trial_number, str(token)):
            context.abort(grpc.StatusCode.UNAUTHENTICATED,
                          f"missing or wrong token for trial {trial_number}")

    def _loop_or_abort(self, context: grpc.ServicerContext) -> TrialLoop:
        loop = self._loop
        if loop is None:
            context.abort(grpc.StatusCode.UNAVAILABLE,
                          "AppCore is starting or waits for its framework")
        assert loop is not None  # abort raises
        return loop

    @staticmethod
    def _forward(context: grpc.ServicerContext, what: str, call: Callable[[], _T]) -> _T:
        """``call()`` (a call to the framework), its errors as the runner should see them."""
        try:
            return call()
        except grpc.RpcError as err:
            if err.code() in _PASSED_THROUGH:
                context.abort(err.code(), err.details() or err.code().name)
            context.abort(grpc.StatusCode.UNAVAILABLE,
                          f"the framework could not record {what}: {err.details()}")
            raise  # abort raises; for the type checker


def make_server(servicer: AppCoreServicer, host: str, port: int, *,
                tls: ServerTls | None = None) -> grpc.Server:
    """A (not started) server for the runners, bound to ``host:port``; TLS alone with
    ``tls`` (key PEM, certificate PEM).

    Raises:
        OSError: the port cannot be bound.
    """
    server, _ = grpc_server.make_server(
        lambda server: appcore_pb2_grpc.add_AppCoreServiceServicer_to_server(servicer, server),
        host, port, what="AppCore", tls=tls)
    return server
