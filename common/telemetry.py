"""Telemetry's shared vocabulary: what a sample is and the names of the built-in data.

A **sample** is one figure of one data name, measured on one node (a Mesos agent id) at one
time, and belonging to one trial when it measures a trial's task (``trial`` is ``None`` for a
figure of the whole node). Collectors produce samples; processors derive samples from samples;
the job store keeps them (``framework/_store.py``: table ``telemetry``) and the data service
serves them by name, node and trial. A trial's *usage* is the summary kept with the trial
itself (its columns in the job store, ``results.json``/``.csv``, ``da-job status``).

The raw names are those of Mesos' ``ResourceStatistics`` (``mesos.proto``), as an agent's
``/monitor/statistics`` serves them per executor, so the same collector reads an embedded agent
and a real one.
"""

from __future__ import annotations

from dataclasses import dataclass


# Raw figures of a trial's executor (Mesos' ResourceStatistics field names).
CPUS_USER_TIME = "cpus_user_time_secs"
CPUS_SYSTEM_TIME = "cpus_system_time_secs"
CPUS_LIMIT = "cpus_limit"
MEM_RSS = "mem_rss_bytes"
MEM_LIMIT = "mem_limit_bytes"

# Figures of a GPU collector (NVML), per trial where the trial holds GPUs.
GPU_UTILIZATION = "gpu_utilization_percent"
GPU_MEMORY_USED = "gpu_memory_used_bytes"

# Derived figures (processors).
CPU_UTILIZATION = "cpu_utilization"
"""CPUs in use (1.0 = one core busy) over the interval since the previous sample."""
AGENT_CPU_UTILIZATION = "agent_cpu_utilization"
"""The share (0..1) of a node's CPUs its tasks used over the last interval (``trial`` None)."""


@dataclass(frozen=True)
class Sample:
    """One measured or derived figure."""

    data_name: str
    node: str
    """The Mesos agent id the figure was measured on."""
    time: float
    """Unix seconds when it was measured."""
    value: float
    trial: int | None = None
    """The trial whose task it measures; None for a node-wide figure."""


@dataclass(frozen=True)
class TrialUsage:
    """The summary of a trial's measured use, kept with the trial (None: not measured)."""

    peak_rss_bytes: float | None = None
    mean_rss_bytes: float | None = None
    cpu_seconds: float | None = None
    """User plus system CPU seconds of the trial's processes."""
    mean_gpu_utilization: float | None = None
    """Percent, over the trial's samples; None where the trial had no GPU."""
    peak_gpu_memory_bytes: float | None = None

    def as_columns(self) -> dict[str, float | None]:
        """The job store's trial columns of this usage (``framework/_store.py``)."""
        return {name: getattr(self, name) for name in USAGE_COLUMNS}


USAGE_COLUMNS = ("peak_rss_bytes", "mean_rss_bytes", "cpu_seconds", "mean_gpu_utilization",
                 "peak_gpu_memory_bytes")
"""TrialUsage's fields, in the order results tables show them."""
