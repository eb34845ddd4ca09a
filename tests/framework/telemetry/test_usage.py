"""Per-trial usage summaries and the memory suggestion."""

from __future__ import annotations

from disauto.common import telemetry
from disauto.common.task_usage import TaskUsage
from disauto.common.telemetry import Sample
from disauto.framework._telemetry.usage import UsageAccumulator
from disauto.framework._telemetry.usage import suggested_memory_mb


_MB = 1 << 20


def _sample(name: str, value: float) -> Sample:
    return Sample(name, "agent-1", 1.0, value, trial=3)


def test_accumulator_summarises_memory_and_cpu() -> None:
    accumulator = UsageAccumulator()
    for rss, user, system in ((100 * _MB, 0.5, 0.1), (300 * _MB, 1.5, 0.2), (200 * _MB, 2.0, 0.3)):
        accumulator.add(_sample(telemetry.MEM_RSS, rss))
        accumulator.add(_sample(telemetry.CPUS_USER_TIME, user))
        accumulator.add(_sample(telemetry.CPUS_SYSTEM_TIME, system))
    usage = accumulator.usage()
    assert usage.peak_rss_bytes == 300 * _MB and usage.mean_rss_bytes == 200 * _MB
    assert usage.cpu_seconds == 2.3
    assert usage.mean_gpu_utilization is None and usage.peak_gpu_memory_bytes is None


def test_a_slot_trial_counts_cpu_from_its_baseline() -> None:
    accumulator = UsageAccumulator(cpu_baseline=5.0)
    accumulator.add(_sample(telemetry.CPUS_USER_TIME, 6.0))
    accumulator.add(_sample(telemetry.CPUS_SYSTEM_TIME, 0.5))
    assert accumulator.usage().cpu_seconds == 1.5


def test_nothing_sampled_is_all_none() -> None:
    assert set(UsageAccumulator().usage().as_columns().values()) == {None}


def test_gpu_samples_make_mean_and_peak() -> None:
    accumulator = UsageAccumulator()
    for percent, used in ((40.0, 1e9), (60.0, 3e9)):
        accumulator.add(_sample(telemetry.GPU_UTILIZATION, percent))
        accumulator.add(_sample(telemetry.GPU_MEMORY_USED, used))
    usage = accumulator.usage()
    assert usage.mean_gpu_utilization == 50.0 and usage.peak_gpu_memory_bytes == 3e9


def test_suggested_memory_is_1_2_times_the_peak_rounded_up_to_64_mb() -> None:
    assert suggested_memory_mb([]) is None
    assert suggested_memory_mb([200 * _MB, 100 * _MB]) == 256  # 240 MB -> 256
    assert suggested_memory_mb([320 * _MB]) == 384  # 384 exactly


def test_the_executors_exact_figures_win_over_the_sampled_ones() -> None:
    accumulator = UsageAccumulator(cpu_baseline=5.0)  # a slot: sampled figures mix trials
    accumulator.add(_sample(telemetry.MEM_RSS, 260 * _MB))
    accumulator.add(_sample(telemetry.CPUS_USER_TIME, 6.5))
    accumulator.add(_sample(telemetry.CPUS_SYSTEM_TIME, 0.5))
    accumulator.exact = TaskUsage(1.0, 0.25, 210 * _MB)
    usage = accumulator.usage()
    assert usage.peak_rss_bytes == 210 * _MB and usage.cpu_seconds == 1.25
    # The sampled mean includes the slot's own processes: never more than the trial's peak.
    assert usage.mean_rss_bytes == 210 * _MB
    accumulator.add(_sample(telemetry.MEM_RSS, 400 * _MB))  # a later poll changes neither
    assert accumulator.usage().peak_rss_bytes == 210 * _MB
    accumulator.exact = TaskUsage(1.0, 0.25, 500 * _MB)
    assert accumulator.usage().mean_rss_bytes == 330 * _MB  # the sampled mean where lower


def test_exact_figures_alone_make_a_summary() -> None:
    accumulator = UsageAccumulator(exact=TaskUsage(0.5, 0.0, 64 * _MB))
    usage = accumulator.usage()
    assert (usage.peak_rss_bytes, usage.cpu_seconds, usage.mean_rss_bytes) == (64 * _MB, 0.5,
                                                                                None)
