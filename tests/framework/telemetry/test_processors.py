"""The built-in processors, on samples as a real job store returns them."""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.common import telemetry
from disauto.common.telemetry import Sample
from disauto.framework._store import JobStore
from disauto.framework._telemetry.processors import LAST_KEPT
from disauto.framework._telemetry.processors import CpuUtilization


def cpu(node: str, trial: int, when: float, user: float, system: float) -> list[Sample]:
    return [Sample(telemetry.CPUS_USER_TIME, node, when, user, trial),
            Sample(telemetry.CPUS_SYSTEM_TIME, node, when, system, trial)]


def test_cpu_utilization_is_cpu_seconds_over_wall_seconds(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "job.db")
    store.add_samples([*cpu("a1", 1, 10.0, 1.0, 0.5), *cpu("a2", 2, 10.0, 0.0, 0.0),
                       *cpu("a1", 1, 12.0, 3.0, 1.5), *cpu("a2", 2, 12.0, 0.5, 0.0)])
    process = CpuUtilization()
    batch, cursor = store.samples_after(0, CpuUtilization.INPUTS)
    assert process(batch) == [Sample(telemetry.CPU_UTILIZATION, "a1", 12.0, 1.5, 1),
                              Sample(telemetry.CPU_UTILIZATION, "a2", 12.0, 0.25, 2)]
    # The next run sees only the newer samples, and continues from what it remembers; a
    # counter that went back (a new executor) starts again instead of going negative.
    store.add_samples([*cpu("a1", 1, 16.0, 4.0, 2.5), *cpu("a2", 2, 13.0, 0.1, 0.0)])
    batch, _ = store.samples_after(cursor, CpuUtilization.INPUTS)
    assert len(batch) == 4
    assert process(batch) == [Sample(telemetry.CPU_UTILIZATION, "a1", 16.0, 0.5, 1)]


def test_a_half_measurement_waits_for_its_other_half() -> None:
    process = CpuUtilization()
    first, second = cpu("a", 1, 1.0, 1.0, 0.0), cpu("a", 1, 2.0, 1.5, 0.5)
    assert process([*first, second[0]]) == []
    assert process([second[1]]) == [
        Sample(telemetry.CPU_UTILIZATION, "a", 2.0, pytest.approx(1.0), 1)]


def test_the_last_measurements_kept_are_the_live_series_not_every_ended_trials() -> None:
    # 10,000 trials measured twice each, one after another: the processor keeps the last
    # measurement of the most recent series (LAST_KEPT), not of every trial the job ran, and a
    # live series still gives its utilisation.
    process = CpuUtilization()
    for trial in range(10_000):
        process([*cpu("a", trial, 1.0, 0.0, 0.0), *cpu("a", trial, 2.0, 1.0, 0.0)])
    assert len(process._last) == LAST_KEPT
    assert process(cpu("a", 9_999, 4.0, 2.0, 1.0)) == [
        Sample(telemetry.CPU_UTILIZATION, "a", 4.0, 1.0, 9_999)]
