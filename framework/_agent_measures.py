"""What a job has measured of each agent, for placement by capability (docs/placement.md).

The offer policies never read the job store: the scheduler builds an :class:`AgentMeasures`
snapshot from the job's record before each batch of offers (:func:`agent_measures`) and hands it
to the policy (``OfferPolicy.observe_agents``). Per agent it holds

* ``time_ratios``: how long each of this job's trials that completed there took, relative to the
  job's typical trial (the ratio's normalisation is below), so that 2.0 reads "trials take twice
  as long here";
* ``running_elapsed``: how long each of this job's trials running there has run;
* ``failures``: when trial tasks there ended for a reason that is the cluster's, not the
  script's (:func:`is_infrastructure_failure`);
* ``cpu_utilization``: the newest ``agent_cpu_utilization`` sample (0..1 of the agent's CPUs in
  use), written by the telemetry collector, and when it was taken.

Normalisation: a trial's *cost* is its wall time divided by the CPU seconds it used where every
completed trial of the job has its CPU seconds measured (``TrialUsage.cpu_seconds``): a CPU-bound
trial's wall time per CPU second is 1 on a full-speed core and 2 on a half-speed one whatever its
assignment. Otherwise it is its wall time (``ended_at - started_at``). A trial's ratio is its
cost over the median cost of all the job's completed trials; an agent's speed estimate is the
median of its ratios, which one unusually long assignment does not move far. Assignments are
drawn independently of the agent that gets them, so the ratios are unbiased on average.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
import statistics
from typing import Any

from disauto.common.task_states import was_lost
from disauto.common.telemetry import AGENT_CPU_UTILIZATION
from disauto.common.telemetry import Sample
from disauto.common.trial_state import TrialState
from disauto.framework._store import TrialRow


__all__ = ["INFRASTRUCTURE_REASONS", "AgentMeasures", "AgentRecord", "agent_measures",
           "is_infrastructure_failure"]

INFRASTRUCTURE_REASONS = frozenset({
    "REASON_EXECUTOR_TERMINATED", "REASON_EXECUTOR_REGISTRATION_TIMEOUT",
    "REASON_EXECUTOR_REREGISTRATION_TIMEOUT", "REASON_EXECUTOR_UNREGISTERED",
    "REASON_CONTAINER_LAUNCH_FAILED", "REASON_CONTAINER_PREPARATION_FAILED",
    "REASON_CONTAINER_UPDATE_FAILED", "REASON_GC_ERROR", "REASON_TASK_UNKNOWN",
    "REASON_TASK_UNREACHABLE",
})
"""Mesos reasons of a task's end that blame the agent: its executor or container could not run
the task. The script's own end (no reason from Mesos 1.11's command executor,
``src/launcher/executor.cpp`` ``reaped``; ``REASON_COMMAND_EXECUTOR_FAILED`` from older ones) and
``REASON_CONTAINER_LIMITATION*`` (the script outgrew its limits) are the script's and absent."""


def is_infrastructure_failure(state: str, reason: str) -> bool:
    """Whether a trial task that ended in ``state`` for ``reason`` was failed by its agent or
    the cluster (lost, agent gone, executor terminated, container start failed) rather than by
    the script. A kill (the job's own) and a task the master refused (TASK_ERROR) are neither."""
    if state in ("TASK_KILLED", "TASK_ERROR", "TASK_FINISHED"):
        return False
    return was_lost(state, reason) or reason in INFRASTRUCTURE_REASONS


@dataclass(frozen=True)
class AgentRecord:
    """One agent as this job measured it (see the module docstring)."""

    agent_id: str
    time_ratios: tuple[float, ...] = ()
    running_elapsed: tuple[float, ...] = ()
    failures: tuple[float, ...] = ()
    """Unix seconds of each infrastructure failure, oldest first."""
    cpu_utilization: float | None = None
    utilization_time: float = 0.0

    @property
    def time_ratio(self) -> float | None:
        """The median of :attr:`time_ratios` (None: no trial of the job completed here)."""
        return statistics.median(self.time_ratios) if self.time_ratios else None


@dataclass(frozen=True)
class AgentMeasures:
    """A snapshot of every agent the job measured, at ``now``."""

    now: float
    agents: Mapping[str, AgentRecord] = field(default_factory=dict)
    base_seconds: float | None = None
    """The job's median completed-trial wall time (what a time ratio of 1 takes); None: none."""
    remaining_trials: float = 0.0
    """Trials still to start, waiting ones included (``JobProgress.remaining_trials``)."""

    def agent(self, agent_id: str) -> AgentRecord:
        return self.agents.get(agent_id) or AgentRecord(agent_id)


def _cost(trial: TrialRow, per_cpu_second: bool) -> float:
    assert trial.started_at is not None and trial.ended_at is not None
    wall = max(0.0, trial.ended_at - trial.started_at)
    if per_cpu_second:
        return wall / max(float(trial.usage.cpu_seconds or 0.0), 1e-6)
    return wall


def agent_measures(trials: Sequence[TrialRow], updates: Iterable[Mapping[str, Any]],
                   samples: Iterable[Sample], now: float,
                   remaining_trials: float = 0.0) -> AgentMeasures:
    """The snapshot of a job's ``trials``, its recorded task ``updates`` (``JobStore.
    task_updates()``: ``task_id, state, reason, agent_id, recorded_at``) and telemetry
    ``samples`` (any; only ``agent_cpu_utilization`` is read)."""
    completed = [t for t in trials if t.state == TrialState.COMPLETED and t.agent_id
                 and t.started_at and t.ended_at]
    per_cpu = bool(completed) and all((t.usage.cpu_seconds or 0.0) > 0 for t in completed)
    costs = [_cost(t, per_cpu) for t in completed]
    median_cost = statistics.median(costs) if costs else 0.0
    ratios: dict[str, list[float]] = {}
    if median_cost > 0:
        for trial, cost in zip(completed, costs, strict=True):
            ratios.setdefault(trial.agent_id, []).append(cost / median_cost)
    running: dict[str, list[float]] = {}
    for trial in trials:
        if trial.state in (TrialState.LAUNCHING, TrialState.RUNNING) and trial.agent_id:
            elapsed = max(0.0, now - trial.started_at) if trial.started_at else 0.0
            running.setdefault(trial.agent_id, []).append(elapsed)
    failures = _failures(updates)
    utilization: dict[str, Sample] = {}
    for sample in samples:
        if sample.data_name == AGENT_CPU_UTILIZATION and sample.trial is None:
            newest = utilization.get(sample.node)
            if newest is None or sample.time >= newest.time:
                utilization[sample.node] = sample
    names = {*ratios, *running, *failures, *utilization}
    agents = {
        name: AgentRecord(
            agent_id=name, time_ratios=tuple(ratios.get(name, ())),
            running_elapsed=tuple(running.get(name, ())),
            failures=tuple(sorted(failures.get(name, ()))),
            cpu_utilization=utilization[name].value if name in utilization else None,
            utilization_time=utilization[name].time if name in utilization else 0.0,
        )
        for name in names
    }
    walls = [max(0.0, t.ended_at - t.started_at) for t in completed]  # type: ignore[operator]
    return AgentMeasures(now=now, agents=agents,
                         base_seconds=statistics.median(walls) if walls else None,
                         remaining_trials=remaining_trials)


def _failures(updates: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    """Agent id → times of trial tasks' infrastructure failures. A status the master makes up
    for a lost agent may not name the agent: the task's earlier updates do."""
    agent_of: dict[str, str] = {}
    found: dict[str, list[float]] = {}
    for update in updates:
        task_id = str(update.get("task_id", ""))
        if not task_id.startswith("trial-"):
            continue
        agent = str(update.get("agent_id", "")) or agent_of.get(task_id, "")
        if agent:
            agent_of[task_id] = agent
        if agent and is_infrastructure_failure(str(update.get("state", "")),
                                               str(update.get("reason", ""))):
            found.setdefault(agent, []).append(float(update.get("recorded_at") or 0.0))
    return found
