"""AppCore's client of the framework's gRPC service (job token on every call)."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
import logging
import time
from typing import Any
from typing import TypeVar

import grpc

from disauto.common import gpu_samples
from disauto.common import tls
from disauto.common.gpu_samples import GpuReading
from disauto.common.report import Report
from disauto.common.space import Assignment
from disauto.common.space import assignment_to_proto
from disauto.common.task_env import TOKEN_METADATA
from disauto.protos import common_pb2
from disauto.protos import framework_pb2
from disauto.protos import framework_pb2_grpc


logger = logging.getLogger(__name__)
R = TypeVar("R")


class FrameworkClient:
    """Calls FrameworkService for AppCore.

    Args:
        address: host:port of the framework.
        job_token: the job's token.
        timeout: deadline of unary calls, in seconds.
        trust: the framework's certificate (PEM) and the name to check in it: TLS trusting it
            alone; ``("", "")`` for plain gRPC.
    """

    def __init__(self, address: str, job_token: str, timeout: float = 30.0,
                 trust: tuple[str, str] = ("", "")) -> None:
        self.address = address
        self._job_token = job_token
        self._trust = trust
        self._channel = tls.channel(address, *trust)
        self._stub = framework_pb2_grpc.FrameworkServiceStub(self._channel)
        self._metadata = ((TOKEN_METADATA, job_token),)
        self._timeout = timeout

    def close(self) -> None:
        self._channel.close()

    def moved_to(self, address: str) -> FrameworkClient:
        """A client of the same job's framework at its new address (this one is closed)."""
        self.close()
        return FrameworkClient(address, self._job_token, self._timeout, self._trust)

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait until the framework answers.

        Raises:
            ConnectionError: it did not within ``timeout`` seconds.
        """
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise ConnectionError(f"the framework did not answer within {timeout:.0f} s") from None

    def attach(self, address: str, certificate: str = "") -> framework_pb2.AttachAppCoreReply:
        return self._stub.AttachAppCore(
            framework_pb2.AttachAppCoreRequest(address=address, certificate=certificate),
            metadata=self._metadata, timeout=self._timeout,
        )

    def submit_many(
        self, trials: Sequence[tuple[int, Assignment]], priority: int,
        parents: Mapping[int, int] | None = None,
    ) -> list[common_pb2.Trial]:
        """Submit several trials in one call (one transaction: all are recorded or none); a
        trial in ``parents`` starts from that trial's latest checkpoint (PBT's exploit)."""
        parents = parents or {}
        request = framework_pb2.SubmitTrialsRequest(
            trials=[_submit_request(number, assignment, priority, parents.get(number, 0))
                    for number, assignment in trials])
        return list(self._retrying(self._stub.SubmitTrials, request).trials)

    def _retrying(self, method: Callable[..., R], request: Any) -> R:
        """Call an idempotent method, retrying while the framework is unavailable."""
        delay, attempt = 0.2, 0
        while True:
            try:
                return method(request, metadata=self._metadata, timeout=self._timeout)
            except grpc.RpcError as err:
                attempt += 1
                if err.code() != grpc.StatusCode.UNAVAILABLE or attempt >= 5:
                    raise
                time.sleep(delay)
                delay *= 2

    def record(self, report: Report) -> common_pb2.Trial:
        """Have the framework record a runner's report; the trial as it is then."""
        return self._stub.RecordReport(report.to_proto(), metadata=self._metadata,
                                       timeout=self._timeout).trial

    def record_gpu_samples(self, number: int, readings: Sequence[GpuReading]) -> int:
        """Have the framework record a trial's GPU samples; how many it recorded."""
        return self._stub.RecordGpuSamples(gpu_samples.to_proto(number, readings),
                                           metadata=self._metadata,
                                           timeout=self._timeout).recorded

    def prune(self, number: int, message: str) -> common_pb2.Trial:
        """Tell the framework that the early-stopping rule stopped trial ``number``."""
        return self._stub.PruneTrial(
            framework_pb2.PruneTrialRequest(trial_number=number, message=message),
            metadata=self._metadata, timeout=self._timeout,
        ).trial

    def watch(self, after: int) -> Iterator[framework_pb2.TrialEvent]:
        return iter(self._stub.WatchTrials(
            framework_pb2.WatchTrialsRequest(after_sequence=after), metadata=self._metadata,
        ))

    def finish(self, outcome: int, message: str) -> None:
        self._stub.FinishJob(
            framework_pb2.FinishJobRequest(outcome=outcome, message=message),
            metadata=self._metadata, timeout=self._timeout,
        )


def _submit_request(
    number: int, assignment: Assignment, priority: int, parent: int = 0
) -> framework_pb2.SubmitTrialRequest:
    request = framework_pb2.SubmitTrialRequest(number=number, priority=priority, parent=parent)
    for name, value in assignment_to_proto(assignment).items():
        request.assignment[name].CopyFrom(value)
    return request
