"""GPU samples as they travel: the one validation, the proto round trip, the stored samples."""

from __future__ import annotations

import pytest

from disauto.common import gpu_samples
from disauto.common.gpu_samples import MAX_SAMPLES
from disauto.common.gpu_samples import GpuReading
from disauto.common.gpu_samples import GpuSampleError
from disauto.common.telemetry import GPU_MEMORY_USED
from disauto.common.telemetry import GPU_UTILIZATION
from disauto.common.telemetry import Sample


T = 1_700_000_000.0
NAN = float("nan")


def test_a_batch_survives_the_proto_round_trip_with_absent_figures_absent() -> None:
    readings = [GpuReading(T, 40.0, 2e9), GpuReading(T + 2, None, 3e9),
                GpuReading(T + 4, 55.5, None)]
    message = gpu_samples.to_proto(7, readings)
    assert gpu_samples.from_proto(message) == (7, readings)
    gpu_samples.check_readings(readings)


def test_stored_samples_are_one_per_figure_given() -> None:
    readings = [GpuReading(T, 40.0, 2e9), GpuReading(T + 2, None, 3e9)]
    assert gpu_samples.as_samples(3, "agent-1", readings) == [
        Sample(GPU_UTILIZATION, "agent-1", T, 40.0, 3),
        Sample(GPU_MEMORY_USED, "agent-1", T, 2e9, 3),
        Sample(GPU_MEMORY_USED, "agent-1", T + 2, 3e9, 3),
    ]


@pytest.mark.parametrize(("readings", "message"), [
    ([], "no GPU samples: send at least one"),
    ([GpuReading(T, 1.0)] * (MAX_SAMPLES + 1),
     f"{MAX_SAMPLES + 1} GPU samples in one request; at most {MAX_SAMPLES}"),
    ([GpuReading(NAN, 1.0)], "GPU sample 0: time must be Unix seconds > 0, got nan"),
    ([GpuReading(0.0, 1.0)], "GPU sample 0: time must be Unix seconds > 0, got 0.0"),
    ([GpuReading(T, 1.0), GpuReading(T)],
     "GPU sample 1: neither utilization_percent nor memory_used_bytes is set"),
    ([GpuReading(T, NAN)], "utilization_percent must be a percent from 0 to 100, got nan"),
    ([GpuReading(T, -1.0)], "utilization_percent must be a percent from 0 to 100, got -1.0"),
    ([GpuReading(T, 100.5)], "utilization_percent must be a percent from 0 to 100, got 100.5"),
    ([GpuReading(T, None, -5.0)], "memory_used_bytes must be a finite number of bytes >= 0, "
                                  "got -5.0"),
    ([GpuReading(T, None, float("inf"))], "memory_used_bytes must be a finite number"),
])
def test_a_bad_batch_is_refused_in_one_line(readings: list[GpuReading], message: str) -> None:
    with pytest.raises(GpuSampleError) as caught:
        gpu_samples.check_readings(readings)
    assert message in str(caught.value) and "\n" not in str(caught.value)
