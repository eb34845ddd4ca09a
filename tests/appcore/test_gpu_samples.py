"""GPU samples over real gRPC: AppCore's ReportGpuSamples (trial token) and the framework's
RecordGpuSamples (job token), with the real loop, controller, telemetry loop and store behind.

Every bad request gets its status and a one-line message, and records nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
import time

import grpc
import pytest

from disauto.common import gpu_samples
from disauto.common.gpu_samples import MAX_SAMPLES
from disauto.common.gpu_samples import GpuReading
from disauto.common.tokens import trial_token
from disauto.framework._telemetry.monitor import TelemetryLoop
from disauto.protos import appcore_pb2_grpc
from disauto.protos import common_pb2
from disauto.protos import framework_pb2_grpc
from disauto.testing.inprocess import AGENT
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import RunningJob
from disauto.testing.inprocess import trial_metadata


pytestmark = pytest.mark.integration  # starts gRPC servers

NAN = float("nan")


@pytest.fixture
def job(tmp_path: Path) -> Iterator[RunningJob]:
    running = RunningJob(tmp_path, max_trials=4, parallelism=2)
    running.framework.controller.gpu_samples = TelemetryLoop(
        [], running.framework.controller).record_samples
    yield running
    running.close()


@pytest.fixture
def appcore(job: RunningJob) -> Iterator[appcore_pb2_grpc.AppCoreServiceStub]:
    with grpc.insecure_channel(job.appcore.address) as channel:
        yield appcore_pb2_grpc.AppCoreServiceStub(channel)


def _request(trial: int, *readings: GpuReading) -> common_pb2.GpuSamples:
    return gpu_samples.to_proto(trial, readings)


def _fails(call: object, request: common_pb2.GpuSamples, token: str) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call(request, metadata=trial_metadata(token), timeout=10)  # type: ignore[operator]
    return caught.value


def test_good_samples_are_stored_as_the_trials_agents(
        job: RunningJob, appcore: appcore_pb2_grpc.AppCoreServiceStub) -> None:
    now = time.time()
    reply = appcore.ReportGpuSamples(
        _request(1, GpuReading(now, 20.0, 5e8), GpuReading(now + 1, None, 7e8)),
        metadata=trial_metadata(trial_token(JOB_TOKEN, 1)), timeout=10)
    assert reply.recorded == 3
    stored = job.framework.store.samples(trial=1)
    assert [(s.data_name, s.node, s.value) for s in stored] == [
        ("gpu_utilization_percent", AGENT, 20.0), ("gpu_memory_used_bytes", AGENT, 5e8),
        ("gpu_memory_used_bytes", AGENT, 7e8)]
    usage = job.framework.store.trial(1).usage  # type: ignore[union-attr]
    assert (usage.mean_gpu_utilization, usage.peak_gpu_memory_bytes) == (20.0, 7e8)


@pytest.mark.parametrize(("trial", "token_of", "readings", "code", "message"), [
    (1, 2, [GpuReading(1e9, 20.0)], grpc.StatusCode.UNAUTHENTICATED,
     "missing or wrong token for trial 1"),
    (99, 99, [GpuReading(1e9, 20.0)], grpc.StatusCode.NOT_FOUND, "trial 99 does not exist"),
    (1, 1, [GpuReading(1e9, NAN)], grpc.StatusCode.INVALID_ARGUMENT,
     "GPU sample 0: utilization_percent must be a percent from 0 to 100, got nan"),
    (1, 1, [GpuReading(1e9, 10.0), GpuReading(1e9, None, -1.0)],
     grpc.StatusCode.INVALID_ARGUMENT,
     "GPU sample 1: memory_used_bytes must be a finite number of bytes >= 0, got -1.0"),
    (1, 1, [GpuReading(1e9, 10.0)] * (MAX_SAMPLES + 1), grpc.StatusCode.INVALID_ARGUMENT,
     f"{MAX_SAMPLES + 1} GPU samples in one request; at most {MAX_SAMPLES}"),
    (1, 1, [], grpc.StatusCode.INVALID_ARGUMENT, "no GPU samples: send at least one"),
    (1, 1, [GpuReading(1e9)], grpc.StatusCode.INVALID_ARGUMENT,
     "neither utilization_percent nor memory_used_bytes is set"),
])
def test_a_bad_report_is_refused_and_records_nothing(
        job: RunningJob, appcore: appcore_pb2_grpc.AppCoreServiceStub, trial: int,
        token_of: int, readings: list[GpuReading], code: grpc.StatusCode,
        message: str) -> None:
    error = _fails(appcore.ReportGpuSamples, _request(trial, *readings),
                   trial_token(JOB_TOKEN, token_of))
    assert error.code() == code and message in (error.details() or "")
    assert "\n" not in (error.details() or "")
    assert job.framework.store.samples() == []


def test_a_job_without_telemetry_refuses_them(
        job: RunningJob, appcore: appcore_pb2_grpc.AppCoreServiceStub) -> None:
    job.framework.controller.gpu_samples = None  # --telemetry-interval 0
    error = _fails(appcore.ReportGpuSamples, _request(1, GpuReading(1e9, 20.0)),
                   trial_token(JOB_TOKEN, 1))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert error.details() == ("telemetry is off for this job (--telemetry-interval 0): GPU "
                               "samples are not recorded")
    assert job.framework.store.samples() == []


def test_the_framework_wants_the_job_token_and_checks_too(job: RunningJob) -> None:
    with grpc.insecure_channel(job.framework.address) as channel:
        framework = framework_pb2_grpc.FrameworkServiceStub(channel)
        error = _fails(framework.RecordGpuSamples, _request(1, GpuReading(1e9, 20.0)),
                       trial_token(JOB_TOKEN, 1))
        assert error.code() == grpc.StatusCode.UNAUTHENTICATED
        error = _fails(framework.RecordGpuSamples, _request(1, GpuReading(1e9, -3.0)),
                       JOB_TOKEN)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "utilization_percent must be a percent from 0 to 100, got -3.0" in (
            error.details() or "")
    assert job.framework.store.samples() == []
