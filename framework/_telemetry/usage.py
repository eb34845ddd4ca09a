"""A trial's usage summary, built up sample by sample (:class:`common.telemetry.TrialUsage`).

When the executor measured the trial exactly when it ended (a warm slot's task: the
``TaskStatus.data`` of ``common/task_usage.py``), its CPU seconds and peak memory are those
figures. Otherwise:
CPU seconds are the last cumulative figure of the trial's executor less what that executor had
used before the trial started on it (zero for a command task, whose executor is the task; the
warm slot's figure at the poll before the trial's first, for a slot's task). Memory figures are
the peak and the mean of the sampled resident sets; GPU figures those of the GPU samples.
"""

from __future__ import annotations

from dataclasses import dataclass

from disauto.common import telemetry
from disauto.common.task_usage import TaskUsage
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
    exact: TaskUsage | None = None
    """What the executor measured when it reaped the trial (``common/task_usage.py``): when
    known, the trial's CPU seconds and peak memory are these, not the sampled ones."""
    killed_at: float | None = None
    """The most memory the kernel counted when the trial's memory limit killed it (bytes):
    its peak is at least this."""

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

    def peak(self) -> float | None:
        """The trial's peak resident set: the exact one when known, else the sampled one; at
        least what it used when its memory limit killed it."""
        peak = float(self.exact.max_rss_bytes) if self.exact is not None else self.rss_peak
        if self.killed_at is None:
            return peak
        return self.killed_at if peak is None else max(peak, self.killed_at)

    def cpu_seconds(self) -> float | None:
        if self.exact is not None:
            return round(self.exact.cpu_seconds, 3)
        if self.cpu_total is None:
            return None
        return round(max(0.0, self.cpu_total - self.cpu_baseline), 3)

    def mean_rss(self) -> float | None:
        """The mean of the sampled resident sets. A warm slot's samples include its executor
        and pre-imported interpreter, so where they exceed the trial's exact peak the mean is
        that peak: the trial's own mean can be no more."""
        if not self.rss_count:
            return None
        mean = self.rss_sum / self.rss_count
        return min(mean, float(self.exact.max_rss_bytes)) if self.exact is not None else mean

    def usage(self) -> TrialUsage:
        """The summary so far (None where nothing of a kind was measured)."""
        return TrialUsage(
            peak_rss_bytes=self.peak(),
            mean_rss_bytes=self.mean_rss(),
            cpu_seconds=self.cpu_seconds(),
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
