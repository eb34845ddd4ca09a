"""The framework's built-in processors (``registry.BuiltinProcessor``).

``cpu_utilization``: from the cumulative CPU seconds of a trial's executor
(``cpus_user_time_secs`` + ``cpus_system_time_secs``, as ``/monitor/statistics`` gives them),
the CPUs it used (1.0 = one core busy) between two of its samples. The two counters of one
measurement share its timestamp; a measurement counts once both have arrived.
"""

from __future__ import annotations

from collections.abc import Sequence

from disauto.common import telemetry
from disauto.common.telemetry import Sample
from disauto.framework._telemetry.registry import BuiltinProcessor


_Key = tuple[str, int | None]

LAST_KEPT = 4096
"""The (node, trial) series whose last measurement a processor keeps, the most recently measured
(live trials and nodes): an ended trial's series gets no more samples, and keeping every one
grew da-submit by every trial of the job."""


class CpuUtilization:
    """Derives ``cpu_utilization`` from the executors' cumulative CPU seconds.

    It remembers the last complete measurement of each (node, trial) between runs; a counter
    that went back (the executor restarted) starts the series again.
    """

    INPUTS = (telemetry.CPUS_USER_TIME, telemetry.CPUS_SYSTEM_TIME)

    def __init__(self) -> None:
        self._partial: dict[tuple[_Key, float], dict[str, float]] = {}
        self._last: dict[_Key, tuple[float, float]] = {}

    def __call__(self, samples: Sequence[Sample]) -> list[Sample]:
        derived: list[Sample] = []
        for sample in samples:
            key = (sample.node, sample.trial)
            parts = self._partial.setdefault((key, sample.time), {})
            parts[sample.data_name] = sample.value
            if len(parts) < len(self.INPUTS):
                continue
            del self._partial[(key, sample.time)]
            seconds = sum(parts.values())
            previous = self._last.pop(key, None)
            self._last[key] = (sample.time, seconds)  # the most recent last
            if previous is None or sample.time <= previous[0] or seconds < previous[1]:
                continue
            derived.append(Sample(telemetry.CPU_UTILIZATION, sample.node, sample.time,
                                  (seconds - previous[1]) / (sample.time - previous[0]),
                                  sample.trial))
        if len(self._partial) > 10_000:  # halves that never got their other half
            self._partial.clear()
        while len(self._last) > LAST_KEPT:  # the series measured longest ago: ended trials'
            del self._last[next(iter(self._last))]
        return derived


def builtin_processors(interval: float = 2.0) -> list[BuiltinProcessor]:
    """The processors every job's registry has."""
    return [BuiltinProcessor(telemetry.CPU_UTILIZATION, interval, CpuUtilization.INPUTS,
                             CpuUtilization())]
