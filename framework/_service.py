"""The framework's gRPC service for AppCore (thin: proto ↔ controller, errors ↔ status codes)."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
import itertools
import logging
from typing import NoReturn
from typing import TypeVar

import grpc

from disauto.common import gpu_samples
from disauto.common import grpc_server
from disauto.common.checkpoints import CheckpointDiskFullError
from disauto.common.checkpoints import CheckpointError
from disauto.common.checkpoints import CheckpointTooLargeError
from disauto.common.errors import InvalidAssignmentError
from disauto.common.report import Report
from disauto.common.space import Assignment
from disauto.common.space import assignment_from_proto
from disauto.common.task_env import TOKEN_METADATA
from disauto.common.tls import ServerTls
from disauto.common.tokens import check_job_token
from disauto.common.tokens import check_trial_token
from disauto.framework import _errors as errors
from disauto.framework._checkpoints import JobCheckpoints
from disauto.framework._checkpoints import StaleTryError
from disauto.framework._job.ports import TrialService
from disauto.framework._lineage import start_points
from disauto.protos import common_pb2
from disauto.protos import framework_pb2
from disauto.protos import framework_pb2_grpc


logger = logging.getLogger(__name__)

T = TypeVar("T")

_CODES: list[tuple[type[Exception], grpc.StatusCode]] = [
    (errors.InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT),
    (InvalidAssignmentError, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.NotFoundError, grpc.StatusCode.NOT_FOUND),
    (errors.AlreadyExistsError, grpc.StatusCode.ALREADY_EXISTS),
    (errors.JobEndedError, grpc.StatusCode.ABORTED),
    (errors.FailedPreconditionError, grpc.StatusCode.FAILED_PRECONDITION),
    (errors.UnauthenticatedError, grpc.StatusCode.UNAUTHENTICATED),
]


def token_of(context: grpc.ServicerContext) -> str:
    for key, value in context.invocation_metadata():
        if key == TOKEN_METADATA:
            return str(value)
    return ""


def abort_for(context: grpc.ServicerContext, err: Exception) -> NoReturn:
    for kind, code in _CODES:
        if isinstance(err, kind):
            context.abort(code, str(err))
    raise err


def handle(context: grpc.ServicerContext, fn: Callable[[], T]) -> T:
    """Run ``fn`` and map the controller's domain errors to gRPC status codes."""
    try:
        return fn()
    except tuple(kind for kind, _ in _CODES) as err:
        abort_for(context, err)


class FrameworkServicer(framework_pb2_grpc.FrameworkServiceServicer):
    """Serves AppCore (job token) and runners' ResolveAppCore (trial token).

    With ``tls`` (the job uses TLS) an AppCore that attaches without its certificate is
    refused: its runners would otherwise report in plain text.
    """

    def __init__(self, controller: TrialService, *, tls: bool = False,
                 checkpoints: JobCheckpoints | None = None) -> None:
        self._job = controller
        self._tls = tls
        self._checkpoints = checkpoints

    def _require_job_token(self, context: grpc.ServicerContext) -> None:
        if not check_job_token(self._job.job_token, token_of(context)):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong job token")

    def AttachAppCore(  # noqa: N802 - gRPC method name
        self, request: framework_pb2.AttachAppCoreRequest, context: grpc.ServicerContext
    ) -> framework_pb2.AttachAppCoreReply:
        self._require_job_token(context)
        if not request.address or ":" not in request.address:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "address must be host:port")
        if self._tls and not request.certificate:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          "the job uses TLS: AppCore must serve TLS and send its certificate "
                          "(is DisAuto in its image older than the framework's?)")
        return handle(context, lambda: self._job.attach_appcore(request.address,
                                                                request.certificate))

    def SubmitTrials(  # noqa: N802
        self, request: framework_pb2.SubmitTrialsRequest, context: grpc.ServicerContext
    ) -> framework_pb2.SubmitTrialsReply:
        self._require_job_token(context)
        starts = handle(context, lambda: start_points(request.trials, self._job.rows_to_read,
                                                      self._checkpoints))
        trials = handle(context, lambda: self._job.submit_trials(
            [_submission(item) for item in request.trials], starts))
        return framework_pb2.SubmitTrialsReply(trials=trials)

    def RecordReport(  # noqa: N802
        self, request: common_pb2.Report, context: grpc.ServicerContext
    ) -> framework_pb2.RecordReportReply:
        self._require_job_token(context)
        trial = handle(context, lambda: self._job.record_report(Report.from_proto(request)))
        return framework_pb2.RecordReportReply(trial=trial)

    def WatchTrials(  # noqa: N802
        self, request: framework_pb2.WatchTrialsRequest, context: grpc.ServicerContext
    ) -> Iterator[framework_pb2.TrialEvent]:
        self._require_job_token(context)
        yield from self._job.watch(request.after_sequence, context.is_active)

    def FinishJob(  # noqa: N802
        self, request: framework_pb2.FinishJobRequest, context: grpc.ServicerContext
    ) -> framework_pb2.FinishJobReply:
        self._require_job_token(context)
        if request.outcome == framework_pb2.JOB_OUTCOME_UNSPECIFIED:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "outcome must be set")
        handle(context, lambda: self._job.finish_search(request.outcome, request.message))
        return framework_pb2.FinishJobReply()

    def PruneTrial(  # noqa: N802
        self, request: framework_pb2.PruneTrialRequest, context: grpc.ServicerContext
    ) -> framework_pb2.PruneTrialReply:
        self._require_job_token(context)
        trial = handle(context, lambda: self._job.prune_trial(request.trial_number,
                                                              request.message))
        return framework_pb2.PruneTrialReply(trial=trial)

    def RecordGpuSamples(  # noqa: N802
        self, request: common_pb2.GpuSamples, context: grpc.ServicerContext
    ) -> common_pb2.GpuSamplesReply:
        self._require_job_token(context)
        number, readings = gpu_samples.from_proto(request)
        recorded = handle(context, lambda: self._job.record_gpu_samples(number, readings))
        return common_pb2.GpuSamplesReply(recorded=recorded)

    def ResolveAppCore(  # noqa: N802
        self, request: framework_pb2.ResolveAppCoreRequest, context: grpc.ServicerContext
    ) -> framework_pb2.ResolveAppCoreReply:
        self._require_trial_token(request.trial_number, context)
        address, certificate = self._job.tasks.appcore_endpoint()
        return framework_pb2.ResolveAppCoreReply(address=address, certificate=certificate)

    def SaveCheckpoint(  # noqa: N802
        self, request_iterator: Iterator[framework_pb2.CheckpointChunk],
        context: grpc.ServicerContext,
    ) -> framework_pb2.SaveCheckpointReply:
        checkpoints = self._checkpoints_or_abort(context)
        chunks = iter(request_iterator)
        first = next(chunks, None)
        if first is None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "a checkpoint without a chunk")
        assert first is not None  # abort raises
        self._require_trial_token(first.trial_number, context)
        if first.step < 0 or first.size < 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          "a checkpoint's step and size are not negative")
        data = itertools.chain((first.data,), (chunk.data for chunk in chunks))
        try:
            saved, dropped = checkpoints.save(first.trial_number, first.try_index, first.step,
                                              first.size, data)
        except CheckpointError as err:
            logger.warning("trial %d: checkpoint at step %d not kept: %s", first.trial_number,
                           first.step, err)
            context.abort(_checkpoint_code(err), str(err))
        return framework_pb2.SaveCheckpointReply(name=saved.name, dropped=dropped)

    def LoadCheckpoint(  # noqa: N802
        self, request: framework_pb2.LoadCheckpointRequest, context: grpc.ServicerContext
    ) -> Iterator[framework_pb2.CheckpointChunk]:
        checkpoints = self._checkpoints_or_abort(context)
        self._require_trial_token(request.trial_number, context)
        try:
            chunks = checkpoints.chunks(request.trial_number, request.name)
        except CheckpointError as err:
            context.abort(grpc.StatusCode.NOT_FOUND, str(err))
        for data in chunks:
            yield framework_pb2.CheckpointChunk(trial_number=request.trial_number, data=data)

    def _checkpoints_or_abort(self, context: grpc.ServicerContext) -> JobCheckpoints:
        if self._checkpoints is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                          "this framework keeps no checkpoints")
        assert self._checkpoints is not None  # abort raises
        return self._checkpoints

    def _require_trial_token(self, number: int, context: grpc.ServicerContext) -> None:
        if not check_trial_token(self._job.job_token, number, token_of(context)):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong trial token")


def _checkpoint_code(err: CheckpointError) -> grpc.StatusCode:
    """How a refused checkpoint is answered: too large INVALID_ARGUMENT, the disk full
    RESOURCE_EXHAUSTED, a try that is over FAILED_PRECONDITION."""
    if isinstance(err, CheckpointTooLargeError):
        return grpc.StatusCode.INVALID_ARGUMENT
    if isinstance(err, CheckpointDiskFullError):
        return grpc.StatusCode.RESOURCE_EXHAUSTED
    if isinstance(err, StaleTryError):
        return grpc.StatusCode.FAILED_PRECONDITION
    return grpc.StatusCode.INTERNAL


def make_server(controller: TrialService, host: str, port: int = 0, *,
                tls: ServerTls | None = None,
                checkpoints: JobCheckpoints | None = None) -> tuple[grpc.Server, int]:
    """A (not started) gRPC server for ``controller`` on ``host``, and the port it bound;
    TLS only with ``tls`` (key PEM, certificate PEM).

    Raises:
        OSError: the port cannot be bound.
    """
    servicer = FrameworkServicer(controller, tls=tls is not None, checkpoints=checkpoints)
    return grpc_server.make_server(
        lambda server: framework_pb2_grpc.add_FrameworkServiceServicer_to_server(servicer, server),
        host, port, what="the framework's gRPC server", tls=tls)


def _submission(request: framework_pb2.SubmitTrialRequest) -> tuple[int, Assignment, int]:
    """``(number, assignment, priority)`` of a submitted trial (assignment checked later)."""
    return request.number, assignment_from_proto(request.assignment), request.priority
