"""The runner's gRPC client for AppCore: report metrics, learn whether to stop.

It maps gRPC status codes back to Python exceptions, retries while AppCore is unreachable (for
:data:`REPORT_WINDOW` seconds by default: AppCore answers UNAVAILABLE while its framework is away,
and a framework killed and resumed with ``da-job resume`` may take minutes to come back), and asks
the framework where AppCore is now when it was relaunched, and the Mesos master where the
framework is now when it moved (:mod:`common.rendezvous`).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import logging
import time
from typing import TypeVar

import grpc

from disauto.common import gpu_samples
from disauto.common import tls
from disauto.common.gpu_samples import GpuReading
from disauto.common.rendezvous import framework_address
from disauto.common.report import Report
from disauto.common.task_env import TOKEN_METADATA
from disauto.protos import appcore_pb2_grpc
from disauto.protos import framework_pb2
from disauto.protos import framework_pb2_grpc


logger = logging.getLogger(__name__)

T = TypeVar("T")

_RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}

RESOLVE_TIMEOUT = 2.0
"""Seconds one question to the framework (where is AppCore?) may take: an address whose port
another process took after the framework moved may never answer."""

REPORT_WINDOW = 600.0
"""Seconds a report is retried while AppCore is unreachable or answers UNAVAILABLE: as long as
AppCore waits for a framework that went away (``appcore.__main__.FRAMEWORK_WAIT``)."""


GPU_SAMPLES_TIMEOUT = 3.0
"""Seconds one sending of GPU samples may take: telemetry must not hold the trial's exit."""


class AppCoreUnreachableError(ConnectionError):
    """AppCore could not be reached within the retry budget."""


class ReportRejectedError(ValueError):
    """AppCore refused a report (bad metric, unknown trial)."""


def raise_for_rpc_error(err: grpc.RpcError, what: str) -> None:
    """Turn a non-retryable gRPC error into the matching Python exception."""
    code = err.code()
    details = err.details() or code.name
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        raise ReportRejectedError(f"{what}: {details}") from None
    if code == grpc.StatusCode.UNAUTHENTICATED or code == grpc.StatusCode.PERMISSION_DENIED:
        raise PermissionError(f"{what}: {details}") from None
    if code == grpc.StatusCode.NOT_FOUND:
        raise LookupError(f"{what}: {details}") from None
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        raise RuntimeError(f"{what}: {details}") from None
    raise RuntimeError(f"{what}: {code.name}: {details}") from None


class AppCoreClient:
    """Talks to AppCore for one trial.

    Args:
        appcore_address: host:port of AppCore.
        framework_address: host:port of the framework (to re-resolve AppCore), or "".
        trial_number: this trial's number.
        token: this trial's token.
        attempts: how many times one call is tried while AppCore is unreachable; None: for
            ``window`` seconds.
        backoff: the first wait between attempts in seconds; it doubles up to 8 s.
        timeout: the deadline of one call in seconds.
        window: with ``attempts=None``, how long one call is retried, in seconds.
        master_address: host:port of the Mesos master, where the framework's address is
            looked up when the framework moved (or "").
        framework_id: the job's FrameworkID, for that look-up.
        appcore_certificate: AppCore's TLS certificate (PEM) when the job uses TLS: AppCore is
            reached over TLS trusting it alone; "" for plain gRPC.
        framework_trust: the framework's certificate and the name to check in it, likewise.
    """

    def __init__(
        self,
        appcore_address: str,
        framework_address: str,
        trial_number: int,
        token: str,
        *,
        attempts: int | None = None,
        backoff: float = 0.5,
        timeout: float = 10.0,
        window: float = REPORT_WINDOW,
        master_address: str = "",
        framework_id: str = "",
        appcore_certificate: str = "",
        framework_trust: tuple[str, str] = ("", ""),
    ) -> None:
        self._address = appcore_address
        self._certificate = appcore_certificate
        self._framework_trust = framework_trust
        self._framework_address = framework_address
        self._trial_number = trial_number
        self._metadata = ((TOKEN_METADATA, token),)
        self._attempts = None if attempts is None else max(1, attempts)
        self._window = window
        self._backoff = backoff
        self._timeout = timeout
        self._master_address = master_address
        self._framework_id = framework_id
        self._channel: grpc.Channel | None = None
        self._stub: appcore_pb2_grpc.AppCoreServiceStub | None = None

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None
            self._stub = None

    def _appcore(self) -> appcore_pb2_grpc.AppCoreServiceStub:
        if self._stub is None:
            self._channel = tls.channel(self._address, self._certificate,
                                        tls.APPCORE_SERVER_NAME)
            self._stub = appcore_pb2_grpc.AppCoreServiceStub(self._channel)
        return self._stub

    def _reresolve(self) -> None:
        """Ask the framework where AppCore is now (it may have been relaunched elsewhere); when
        the framework does not answer, ask the master where the framework is now first."""
        if not self._framework_address:
            return
        reply = self._resolve_appcore()
        if reply is None:
            moved = framework_address(self._master_address, self._framework_id)
            if not moved or moved == self._framework_address:
                return
            logger.info("the framework moved from %s to %s", self._framework_address, moved)
            self._framework_address = moved
            reply = self._resolve_appcore()
        if reply is not None and reply.address and (reply.address, reply.certificate) != (
                self._address, self._certificate):
            logger.info("AppCore moved from %s to %s", self._address, reply.address)
            self.close()
            self._address = reply.address
            self._certificate = reply.certificate

    def _resolve_appcore(self) -> framework_pb2.ResolveAppCoreReply | None:
        try:
            with tls.channel(self._framework_address, *self._framework_trust) as channel:
                stub = framework_pb2_grpc.FrameworkServiceStub(channel)
                return stub.ResolveAppCore(
                    framework_pb2.ResolveAppCoreRequest(trial_number=self._trial_number),
                    metadata=self._metadata,
                    timeout=RESOLVE_TIMEOUT,
                )
        except grpc.RpcError as err:
            logger.debug("could not re-resolve AppCore: %s", err)
            return None

    def _call(self, what: str, fn: Callable[[appcore_pb2_grpc.AppCoreServiceStub], T]) -> T:
        delay = self._backoff
        last: grpc.RpcError | None = None
        deadline = time.monotonic() + self._window
        attempt = 0
        while True:
            attempt += 1
            try:
                return fn(self._appcore())
            except grpc.RpcError as err:
                if err.code() not in _RETRYABLE:
                    raise_for_rpc_error(err, what)
                last = err
                logger.warning(
                    "%s: AppCore at %s unreachable (attempt %d%s): %s", what, self._address,
                    attempt, "" if self._attempts is None else f"/{self._attempts}",
                    err.code().name,
                )
            if self._attempts is not None and attempt >= self._attempts:
                break
            if self._attempts is None and time.monotonic() + delay > deadline:
                break
            time.sleep(delay)
            delay = min(delay * 2, 8.0)
            self._reresolve()
        detail = last.details() if last is not None else "no attempt made"
        raise AppCoreUnreachableError(
            f"{what}: AppCore at {self._address} unreachable after {attempt} attempts "
            f"({detail})"
        )

    def report(
        self,
        metrics: Mapping[str, float],
        *,
        step: int | None,
        final: bool,
        elapsed_seconds: float,
        constraints: tuple[float, ...] = (),
    ) -> bool:
        """Send one report; return True when the trial should stop."""
        request = Report(self._trial_number, metrics, step, final, elapsed_seconds,
                         constraints).to_proto()
        reply = self._call(
            "report",
            lambda stub: stub.ReportMetrics(
                request, metadata=self._metadata, timeout=self._timeout
            ),
        )
        return bool(reply.should_stop)

    def send_gpu_samples(self, readings: Sequence[GpuReading]) -> None:
        """Send the trial's GPU samples (``apprunner_sdk.gpu``): one attempt, no retries (the
        sampler keeps them for its next interval).

        Raises:
            AppCoreUnreachableError: AppCore did not answer, or answered UNAVAILABLE.
            ReportRejectedError, PermissionError, LookupError, RuntimeError: AppCore refused
                them (see :func:`raise_for_rpc_error`).
        """
        request = gpu_samples.to_proto(self._trial_number, readings)
        try:
            self._appcore().ReportGpuSamples(request, metadata=self._metadata,
                                             timeout=min(self._timeout, GPU_SAMPLES_TIMEOUT))
        except grpc.RpcError as err:
            if err.code() in _RETRYABLE:
                raise AppCoreUnreachableError(
                    f"GPU samples: AppCore at {self._address} unreachable "
                    f"({err.details() or err.code().name})") from None
            raise_for_rpc_error(err, "GPU samples")
