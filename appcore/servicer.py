"""AppCore's gRPC service for runners (thin: proto ↔ the trial loop, trial tokens checked)."""

from __future__ import annotations

from concurrent import futures
import math

import grpc

from appcore.loop import TrialLoop
from common.task_env import TOKEN_METADATA
from common.tokens import check_trial_token
from protos import appcore_pb2
from protos import appcore_pb2_grpc


_PASSED_THROUGH = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION,
}


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

    def set_loop(self, loop: TrialLoop) -> None:
        self._loop = loop

    def ReportMetrics(  # noqa: N802 - gRPC method name
        self, request: appcore_pb2.ReportMetricsRequest, context: grpc.ServicerContext
    ) -> appcore_pb2.ReportMetricsReply:
        token = dict(context.invocation_metadata()).get(TOKEN_METADATA, "")
        if not check_trial_token(self._job_token, request.trial_number, str(token)):
            context.abort(grpc.StatusCode.UNAUTHENTICATED,
                          f"missing or wrong token for trial {request.trial_number}")
        if not request.metrics:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "a report needs at least one metric")
        metrics: dict[str, float] = {}
        for metric in request.metrics:
            if not metric.name or not math.isfinite(metric.value):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                              f"metric {metric.name!r} must have a name and a finite value")
            metrics[metric.name] = metric.value
        step = request.step if request.HasField("step") else None
        if self._loop is None:
            context.abort(grpc.StatusCode.UNAVAILABLE, "AppCore is starting")
        try:
            stop = self._loop.report(request.trial_number, metrics, step, request.final,
                                     request.elapsed_seconds)
        except grpc.RpcError as err:
            if err.code() in _PASSED_THROUGH:
                context.abort(err.code(), err.details() or err.code().name)
            context.abort(grpc.StatusCode.UNAVAILABLE,
                          f"the framework could not record the report: {err.details()}")
        return appcore_pb2.ReportMetricsReply(should_stop=stop)


def make_server(servicer: AppCoreServicer, host: str, port: int) -> grpc.Server:
    """A (not started) server for the runners, bound to ``host:port``.

    Raises:
        OSError: the port cannot be bound.
    """
    # gRPC sets SO_REUSEPORT by default, so a second server could bind a port another one
    # (e.g. a stale AppCore on the same agent) still serves, and the kernel would split the
    # connections between them. Turn it off: a taken port is an error (OSError below).
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16),
                         options=[("grpc.so_reuseport", 0)])
    appcore_pb2_grpc.add_AppCoreServiceServicer_to_server(servicer, server)
    # grpcio >= 1.5x raises RuntimeError when the bind fails (older releases returned 0);
    # either way callers get the documented OSError.
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError:
        bound = 0
    if bound == 0:
        raise OSError(f"AppCore cannot bind {host}:{port}")
    return server
