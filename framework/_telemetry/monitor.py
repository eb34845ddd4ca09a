"""The built-in collector: polls ``/monitor/statistics`` of the agents that run the job's tasks.

A Mesos agent serves, per executor running on it, a ``ResourceStatistics`` (embedded agents:
:mod:`localmesos.monitor`; a real agent: its isolators). The collector maps each executor of
this job's framework to its trial — a command task's executor is the task itself (executor id
= task id); a warm slot's executor runs one trial at a time, so its figures are the trial's
that holds it now, CPU time counted from the slot's figure before the trial's first sample —
and turns the figures into :class:`common.telemetry.Sample` s: the raw ResourceStatistics
names, ``cpu_utilization`` per trial (CPUs busy over the last interval) and
``agent_cpu_utilization`` per agent (the share of the agent's CPUs that *every* executor it
lists, any framework's, used over the last interval).

Only what Mesos serves is used (``/monitor/statistics`` and the agent's ``/state`` for its
CPUs), so the collector works against real agents as against embedded ones. An agent that
cannot be read is skipped for that poll; a poll never raises.

:class:`StatisticsCollector` makes one poll (``collect``); :class:`TelemetryLoop` drives it at
its interval, stores the samples and keeps each trial's usage summary current in the job
store.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
import json
import logging
import threading
import time
from typing import Any
from urllib.request import urlopen

from disauto.common import telemetry
from disauto.common.kept_http import KeptConnections
from disauto.common.task_usage import TaskUsage
from disauto.common.telemetry import Sample
from disauto.framework._telemetry.usage import UsageAccumulator
from disauto.framework._telemetry.usage import megabytes


logger = logging.getLogger(__name__)

COLLECTOR_NAME = "mesos_monitor_statistics"
"""The collector's name in the registry of collectors."""


@dataclass(frozen=True)
class TaskPlace:
    """Where a live task of the job runs."""

    agent_id: str
    executor_id: str
    """The task id for a command task; the slot's executor id for a warm slot's task."""
    trial: int
    shared: bool = False
    """Whether the executor ran something before this trial (a warm slot)."""


def get_json(url: str, timeout: float, kept: KeptConnections | None = None) -> Any:
    """GET ``url`` and parse its JSON answer (on one of ``kept``'s connections, if given)."""
    if kept is not None:
        return json.loads(kept.get(url, timeout=timeout).decode("utf-8", "replace"))
    with urlopen(url, timeout=timeout) as response:  # noqa: S310 - an agent's URL
        return json.loads(response.read().decode("utf-8", "replace"))


class StatisticsCollector:
    """One poll of the agents' ``/monitor/statistics`` (see the module docstring).

    Args:
        endpoints: agent id -> its endpoint (``http://host:port/slave(1)``, from offers).
        framework_id: the job's framework id ("" before registration).
        places: the job's live tasks.
        timeout: seconds per HTTP request.
    """

    name = COLLECTOR_NAME

    def __init__(self, endpoints: Callable[[], Mapping[str, str]],
                 framework_id: Callable[[], str], places: Callable[[], Iterable[TaskPlace]],
                 *, timeout: float = 2.0,
                 fetch: Callable[[str, float], Any] | None = None) -> None:
        self._endpoints = endpoints
        self._framework_id = framework_id
        self._places = places
        self._timeout = timeout
        self._kept = KeptConnections()
        """The polls' connections, kept alive from one poll to the next (one a second)."""
        self._fetch = fetch or (lambda url, timeout: get_json(url, timeout, self._kept))
        self._previous: dict[tuple[str, str, str], tuple[float, float]] = {}
        self._agent_cpus: dict[str, float] = {}
        self._baselines: dict[int, float] = {}

    def baseline(self, trial: int) -> float:
        """CPU seconds the trial's executor had used before the trial (0 for its own)."""
        return self._baselines.get(trial, 0.0)

    def collect(self) -> list[Sample]:
        """Poll every agent that runs a task of the job once; the samples measured."""
        framework_id = self._framework_id()
        places = list(self._places())
        if not framework_id or not places:
            return []
        endpoints = self._endpoints()
        by_executor = {(p.agent_id, p.executor_id): p for p in places}
        samples: list[Sample] = []
        seen: set[tuple[str, str, str]] = set()
        for agent_id in sorted({p.agent_id for p in places}):
            endpoint = endpoints.get(agent_id)
            if not endpoint:
                continue
            try:
                answer = self._fetch(endpoint + "/monitor/statistics", self._timeout)
            except Exception as err:  # noqa: BLE001 - an unreadable agent is skipped
                logger.debug("cannot read /monitor/statistics of %s: %s", agent_id, err)
                continue
            if not isinstance(answer, list):
                continue
            samples += self._agent_samples(agent_id, endpoint, framework_id, answer,
                                           by_executor, seen)
        for key in set(self._previous) - seen:
            del self._previous[key]
        return samples

    def _agent_samples(self, agent_id: str, endpoint: str, framework_id: str,
                       answer: list[Any], by_executor: Mapping[tuple[str, str], TaskPlace],
                       seen: set[tuple[str, str, str]]) -> list[Sample]:
        samples: list[Sample] = []
        busy, measured, latest = 0.0, False, 0.0
        for entry in answer:
            stats = entry.get("statistics") if isinstance(entry, dict) else None
            if not isinstance(stats, dict) or "cpus_user_time_secs" not in stats:
                continue
            when = float(stats.get("timestamp") or time.time())
            latest = max(latest, when)
            cpu = float(stats["cpus_user_time_secs"]) + float(
                stats.get("cpus_system_time_secs", 0.0))
            key = (agent_id, str(entry.get("framework_id", "")), str(entry.get("executor_id")))
            seen.add(key)
            previous = self._previous.get(key)
            self._previous[key] = (when, cpu)
            rate = None
            if previous is not None and when > previous[0]:
                rate = max(0.0, cpu - previous[1]) / (when - previous[0])
                busy += rate
                measured = True
            place = by_executor.get((agent_id, key[2]))
            if key[1] != framework_id or place is None:
                continue
            if place.trial not in self._baselines:
                self._baselines[place.trial] = (previous[1] if previous else 0.0) \
                    if place.shared else 0.0
            for name in (telemetry.CPUS_USER_TIME, telemetry.CPUS_SYSTEM_TIME,
                         telemetry.CPUS_LIMIT, telemetry.MEM_RSS, telemetry.MEM_LIMIT):
                if isinstance(stats.get(name), int | float):
                    samples.append(Sample(name, agent_id, when, float(stats[name]), place.trial))
        cpus = self._cpus_of(agent_id, endpoint)
        if measured and cpus:
            samples.append(Sample(telemetry.AGENT_CPU_UTILIZATION, agent_id, latest,
                                  round(min(1.0, busy / cpus), 4)))
        return samples

    def _cpus_of(self, agent_id: str, endpoint: str) -> float | None:
        """The agent's CPUs, from its ``/state`` (asked once)."""
        if agent_id not in self._agent_cpus:
            try:
                cpus = self._fetch(endpoint + "/state", self._timeout)["resources"]["cpus"]
                self._agent_cpus[agent_id] = float(cpus)
            except Exception as err:  # noqa: BLE001 - unknown: no agent figure
                logger.debug("cannot read the CPUs of %s: %s", agent_id, err)
                return None
        return self._agent_cpus[agent_id]


ENDED_KEPT = 1000
"""Ended trials whose usage summary the loop keeps (Mesos' master keeps as many completed tasks
of a framework, ``max_completed_tasks_per_framework``)."""


class TelemetryLoop:
    """The built-in collector as the registry runs it: polls ``collectors``, keeps each
    measured trial's usage (:class:`common.telemetry.TrialUsage`) in the store, so that it is
    current while the trial runs and final once it ended, and returns the samples (the
    registry, ``registry.BuiltinCollector``, stores them and runs it at its interval).

    Args:
        collectors: objects with ``collect() -> list[Sample]``; the first may also have
            ``baseline(trial)`` (see :class:`StatisticsCollector`).
        store: where samples and usage go (``add_samples``, ``set_trial_usage``: the job
            store, or the job controller, which keeps the usage with its trials too).
    """

    def __init__(self, collectors: list[Any], store: Any) -> None:
        self._collectors = collectors
        self._store = store
        self._lock = threading.Lock()
        self._usage: dict[int, UsageAccumulator] = {}
        self._ended: OrderedDict[int, None] = OrderedDict()
        """Trials whose task ended, oldest first: their summaries go after :data:`ENDED_KEPT`."""

    @property
    def held(self) -> int:
        """How many trials' summaries the loop holds (live ones and the last ended ones)."""
        with self._lock:
            return len(self._usage)

    def trial_ended(self, trial: int) -> None:
        """The trial's task ended and its usage is in the store: its summary stays for the
        last :data:`ENDED_KEPT` ended trials (what a memory kill's note reads, a sample still
        on its way), then goes, so that what the loop holds does not grow with the job's
        finished trials. A trial launched again starts a summary afresh."""
        with self._lock:
            if trial not in self._usage:
                return
            self._ended[trial] = None
            self._ended.move_to_end(trial)
            while len(self._ended) > ENDED_KEPT:
                gone, _ = self._ended.popitem(last=False)
                self._usage.pop(gone, None)

    def poll(self) -> list[Sample]:
        """One measurement, its samples stored too (the last one, when the job ends)."""
        samples = self.measure()
        try:
            self._store.add_samples(samples)
        except Exception:  # noqa: BLE001 - a store error must not end the job
            logger.exception("cannot store telemetry")
        return samples

    def measure(self) -> list[Sample]:
        """One poll of every collector; each trial's usage updated, the samples returned."""
        samples: list[Sample] = []
        for collector in self._collectors:
            try:
                samples += collector.collect()
            except Exception:  # noqa: BLE001 - a broken collector must not end the job
                logger.exception("telemetry collector %s failed",
                                 getattr(collector, "name", collector))
        self._fold(samples)
        return samples

    def record_samples(self, samples: list[Sample]) -> None:
        """Store samples measured elsewhere (a runner's GPU samples, sent over gRPC) and fold
        them into their trials' usage.

        Raises:
            Exception: the store could not keep them (the caller answers the sender).
        """
        self._store.add_samples(samples)
        self._fold(samples)

    def _fold(self, samples: list[Sample]) -> None:
        """Take samples into their trials' usage and keep the new summaries in the store."""
        if not samples:
            return
        baseline = getattr(self._collectors[0], "baseline", lambda trial: 0.0) \
            if self._collectors else (lambda trial: 0.0)
        touched: set[int] = set()
        with self._lock:
            for sample in samples:
                if sample.trial is None:
                    continue
                accumulator = self._usage.setdefault(sample.trial, UsageAccumulator())
                accumulator.cpu_baseline = baseline(sample.trial)
                accumulator.add(sample)
                touched.add(sample.trial)
            summaries = {number: self._usage[number].usage() for number in touched}
        try:
            for number, usage in sorted(summaries.items()):
                self._store.set_trial_usage(number, usage)
        except Exception:  # noqa: BLE001 - a store error must not end the job
            logger.exception("cannot store telemetry")

    def record_exact(self, trial: int, exact: TaskUsage) -> None:
        """Take what the executor measured when the trial's task ended (``TaskStatus.data``)
        as the trial's CPU seconds and peak memory, now and after any later poll."""
        with self._lock:
            accumulator = self._usage.setdefault(trial, UsageAccumulator())
            accumulator.exact = exact
            usage = accumulator.usage()
        try:
            self._store.set_trial_usage(trial, usage)
        except Exception:  # noqa: BLE001 - a store error must not end the job
            logger.exception("cannot store the usage of trial %d", trial)

    def record_memory_kill(self, trial: int, used_bytes: float | None,
                           limit_bytes: float | None) -> None:
        """The trial's memory limit killed it having used ``used_bytes`` of ``limit_bytes``
        (the kernel's figures, in the task's status): its peak is at least that."""
        with self._lock:
            accumulator = self._usage.setdefault(trial, UsageAccumulator())
            if used_bytes is not None:
                accumulator.killed_at = used_bytes
            if limit_bytes is not None and accumulator.mem_limit is None:
                accumulator.mem_limit = limit_bytes
            usage = accumulator.usage()
        try:
            self._store.set_trial_usage(trial, usage)
        except Exception:  # noqa: BLE001 - a store error must not end the job
            logger.exception("cannot store the usage of trial %d", trial)

    def memory_note(self, trial: int) -> str:
        """``measured peak 612 MB of the 512 MB limit`` for a trial, "" when not measured."""
        with self._lock:
            accumulator = self._usage.get(trial)
            peak = accumulator.peak() if accumulator is not None else None
            if accumulator is None or peak is None:
                return ""
            note = f"measured peak {megabytes(peak)}"
            if accumulator.mem_limit:
                note += f" of the {megabytes(accumulator.mem_limit)} limit"
            return note
