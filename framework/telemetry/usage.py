"""A trial's usage summary, built up sample by sample (:class:`common.telemetry.TrialUsage`).

CPU seconds are the last cumulative figure of the trial's executor less what that executor had
used before the trial started on it (zero for a command task, whose executor is the task; the
warm slot's figure at the poll before the trial's first, for a slot's task). Memory figures are
the peak and the mean of the sampled resident sets; GPU figures those of the GPU samples.
"""

from __future__ import annotations

from dataclasses import dataclass

from disauto.common import telemetry
from disauto.common.telemetry import Sample
from disauto.common.telemetry import TrialUsage


_MB = 1024 * 1024


@dataclass
class UsageAccumulator:
    """The running summary of one trial's samples."""

    cpu_baseline: float = 0.0
    """The trial's executor's cumulative CPU seconds before the trial started on it."""
    cpu_total: float | None = None
    rss_peak: float | None = None
    rss_sum: float = 0.0
    rss_count: int = 0
    mem_limit: float | None = None
    gpu_sum: float = 0.0
    gpu_count: int = 0
    gpu_memory_peak: float | None = None
    cpu_user: float = 0.0

    def add(self, sample: Sample) -> None:
        """Take one sample of the trial into the summary (other names are ignored)."""
        name, value = sample.data_name, sample.value
        if name == telemetry.MEM_RSS:
            self.rss_peak = value if self.rss_peak is None else max(self.rss_peak, value)
            self.rss_sum += value
            self.rss_count += 1
        elif name == telemetry.CPUS_USER_TIME:
            self.cpu_user = value
        elif name == telemetry.CPUS_SYSTEM_TIME:
            self.cpu_total = self.cpu_user + value
        elif name == telemetry.MEM_LIMIT:
            self.mem_limit = value
        elif name == telemetry.GPU_UTILIZATION:
            self.gpu_sum += value
            self.gpu_count += 1
        elif name == telemetry.GPU_MEMORY_USED:
            self.gpu_memory_peak = value if self.gpu_memory_peak is None \
                else max(self.gpu_memory_peak, value)

    def usage(self) -> TrialUsage:
        """The summary so far (None where nothing of a kind was sampled)."""
        return TrialUsage(
            peak_rss_bytes=self.rss_peak,
            mean_rss_bytes=self.rss_sum / self.rss_count if self.rss_count else None,
            cpu_seconds=None if self.cpu_total is None
            else round(max(0.0, self.cpu_total - self.cpu_baseline), 3),
            mean_gpu_utilization=self.gpu_sum / self.gpu_count if self.gpu_count else None,
            peak_gpu_memory_bytes=self.gpu_memory_peak,
        )


def megabytes(value: float) -> str:
    """Bytes as whole megabytes, for people (``213 MB``)."""
    return f"{value / _MB:.0f} MB"


def suggested_memory_mb(peaks: list[float]) -> int | None:
    """The ``--app-runner-memory`` (MB) that fits the measured peaks: 1.2 x the largest,
    rounded up to a multiple of 64 MB; None without a measured peak."""
    if not peaks:
        return None
    wanted = max(peaks) * 1.2 / _MB
    return int(-(-wanted // 64) * 64)
