"""A trial's GPU samples as they travel: runner (``apprunner_sdk.gpu``) → AppCore → framework.

:class:`GpuReading` is one measurement over every GPU the trial holds (the mean utilisation of
its devices, their used memory summed); a figure NVML could not give is ``None``, never zero.
:func:`check_readings` is the one validation every hop applies (AppCore before it forwards,
the framework before it stores): a batch that fails it is refused whole, with a one-line
message, and nothing of it is recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math

from disauto.common.telemetry import GPU_MEMORY_USED
from disauto.common.telemetry import GPU_UTILIZATION
from disauto.common.telemetry import Sample
from disauto.protos import common_pb2


MAX_SAMPLES = 100
"""The most samples one request may carry (a runner sends every few seconds; a backlog after
AppCore was away is sent in batches of this size)."""


class GpuSampleError(ValueError):
    """A batch of GPU samples that cannot be recorded (the message says why, on one line)."""


@dataclass(frozen=True)
class GpuReading:
    """One GPU measurement of a trial.

    Attributes:
        time: Unix seconds when it was measured.
        utilization_percent: the mean over the trial's GPUs of
            ``nvmlDeviceGetUtilizationRates().gpu`` (percent of time a kernel ran), or None.
        memory_used_bytes: the used memory of the trial's GPUs, summed, or None.
    """

    time: float
    utilization_percent: float | None = None
    memory_used_bytes: float | None = None

    def to_proto(self) -> common_pb2.GpuSample:
        message = common_pb2.GpuSample(time=self.time)
        if self.utilization_percent is not None:
            message.utilization_percent = self.utilization_percent
        if self.memory_used_bytes is not None:
            message.memory_used_bytes = self.memory_used_bytes
        return message

    @classmethod
    def from_proto(cls, message: common_pb2.GpuSample) -> GpuReading:
        return cls(
            time=message.time,
            utilization_percent=message.utilization_percent
            if message.HasField("utilization_percent") else None,
            memory_used_bytes=message.memory_used_bytes
            if message.HasField("memory_used_bytes") else None,
        )


def to_proto(trial: int, readings: Sequence[GpuReading]) -> common_pb2.GpuSamples:
    return common_pb2.GpuSamples(trial_number=trial,
                                 samples=[reading.to_proto() for reading in readings])


def from_proto(message: common_pb2.GpuSamples) -> tuple[int, list[GpuReading]]:
    """``(trial number, readings)`` of a message (unchecked: see :func:`check_readings`)."""
    return message.trial_number, [GpuReading.from_proto(sample) for sample in message.samples]


def check_readings(readings: Sequence[GpuReading]) -> None:
    """Raise :class:`GpuSampleError` naming the first thing wrong with a batch.

    A batch has 1 to :data:`MAX_SAMPLES` samples; each has a finite time > 0 and at least one
    figure; a utilisation is a finite percent from 0 to 100, a memory a finite number of bytes
    >= 0.
    """
    if not readings:
        raise GpuSampleError("no GPU samples: send at least one")
    if len(readings) > MAX_SAMPLES:
        raise GpuSampleError(f"{len(readings)} GPU samples in one request; at most "
                             f"{MAX_SAMPLES} (send the rest in another)")
    for index, reading in enumerate(readings):
        where = f"GPU sample {index}"
        if not math.isfinite(reading.time) or reading.time <= 0:
            raise GpuSampleError(f"{where}: time must be Unix seconds > 0, got {reading.time!r}")
        if reading.utilization_percent is None and reading.memory_used_bytes is None:
            raise GpuSampleError(f"{where}: neither utilization_percent nor memory_used_bytes "
                                 "is set (a sample carries at least one)")
        utilization = reading.utilization_percent
        if utilization is not None and not (math.isfinite(utilization)
                                            and 0.0 <= utilization <= 100.0):
            raise GpuSampleError(f"{where}: utilization_percent must be a percent from 0 to "
                                 f"100, got {utilization!r}")
        memory = reading.memory_used_bytes
        if memory is not None and not (math.isfinite(memory) and memory >= 0.0):
            raise GpuSampleError(f"{where}: memory_used_bytes must be a finite number of bytes "
                                 f">= 0, got {memory!r}")


def as_samples(trial: int, node: str, readings: Sequence[GpuReading]) -> list[Sample]:
    """The telemetry samples of a trial's GPU readings, measured on ``node`` (its agent id):
    ``gpu_utilization_percent`` and ``gpu_memory_used_bytes``, one per figure given."""
    samples: list[Sample] = []
    for reading in readings:
        if reading.utilization_percent is not None:
            samples.append(Sample(GPU_UTILIZATION, node, reading.time,
                                  reading.utilization_percent, trial))
        if reading.memory_used_bytes is not None:
            samples.append(Sample(GPU_MEMORY_USED, node, reading.time,
                                  reading.memory_used_bytes, trial))
    return samples
