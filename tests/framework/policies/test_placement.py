"""Placement by measured capability (``placement=capability``) on constructed offers.

The measurements come from a real job store: each test records trials (their agents, start and
end), task updates and ``agent_cpu_utilization`` samples as the controller and the telemetry
collector would, builds the snapshot the scheduler hands the policy (:func:`agent_measures`) and
checks what the policy launches and declines.
"""

from __future__ import annotations

from pathlib import Path
import re
import time

import pytest

from disauto.common.resources import Resources
from disauto.common.telemetry import AGENT_CPU_UTILIZATION
from disauto.common.telemetry import Sample
from disauto.common.telemetry import TrialUsage
from disauto.framework._agent_measures import AgentMeasures
from disauto.framework._agent_measures import agent_measures
from disauto.framework._agent_measures import is_infrastructure_failure
from disauto.framework._offers import OfferView
from disauto.framework._spec import TaskResources
from disauto.framework._store import JobStore
from disauto.framework.policies import LaunchRequest
from disauto.framework.policies import OfferPolicy
from disauto.framework.policies import PolicySettingsError
from disauto.framework.policies import create_policy


RUNNER = TaskResources(cpus=1.0, mem_mb=256.0)


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    db = JobStore(tmp_path / "job.db")
    yield db
    db.close()


def ran(store: JobStore, number: int, agent: str, seconds: float, *, state: str = "COMPLETED",
        cpu_seconds: float | None = None, ended: float = 1000.0) -> None:
    """Record trial ``number`` as having run ``seconds`` on ``agent`` (ended at ``ended``)."""
    store.add_trial(number, {"x": number}, 0)
    store.update_trial(number, state=state, agent_id=agent, started_at=ended - seconds,
                       ended_at=None if state == "RUNNING" else ended,
                       task_id=f"trial-{number:04d}")
    if cpu_seconds is not None:
        store.set_trial_usage(number, TrialUsage(cpu_seconds=cpu_seconds))


def update(store: JobStore, task: str, state: str, reason: str = "", agent: str = "") -> None:
    store.add_task_update({"task_id": {"value": task}, "state": state, "reason": reason,
                           "agent_id": {"value": agent} if agent else {}})


def measures(store: JobStore, now: float, remaining: float = 10.0) -> AgentMeasures:
    return agent_measures(store.trials(), store.task_updates(), store.samples(), now, remaining)


def view(agent: str, cpus: float = 2.0) -> OfferView:
    return OfferView(id=f"offer-{agent}", agent_id=agent, hostname=agent,
                     available=Resources({"cpus": cpus, "mem": 4096.0}), raw={})


def trials(count: int, first: int = 100) -> list[LaunchRequest]:
    return [LaunchRequest(key=f"trial-{n:04d}", resources=RUNNER, trial_number=n)
            for n in range(first, first + count)]


def placed(name: str = "fifo", **settings: str) -> OfferPolicy:
    return create_policy(name, {"placement": "capability", **settings}, runner=RUNNER)


def launched_on(plan: object, offers: list[OfferView]) -> list[str]:
    return [o.agent_id for o in offers for _ in plan.launches.get(o.id, [])]  # type: ignore[attr-defined]


# -- the measurements -------------------------------------------------------------------------

def test_time_ratios_are_relative_to_the_jobs_median_trial(store: JobStore) -> None:
    for number, (agent, seconds) in enumerate([("fast", 10), ("fast", 12), ("slow", 20),
                                               ("slow", 24), ("mid", 12)]):
        ran(store, number, agent, seconds)
    got = measures(store, now=1000.0)
    assert got.base_seconds == 12
    assert got.agents["fast"].time_ratio == pytest.approx(11 / 12)
    assert got.agents["slow"].time_ratio == pytest.approx(22 / 12)
    assert got.agents["mid"].time_ratio == pytest.approx(1.0)


def test_cpu_seconds_normalise_assignments_of_different_length(store: JobStore) -> None:
    # A long assignment on the fast agent and a short one on the slow agent: by wall time the
    # slow agent looks faster; per CPU second the half-speed agent takes twice as long.
    ran(store, 0, "fast", 40, cpu_seconds=40)
    ran(store, 1, "slow", 20, cpu_seconds=10)
    ran(store, 2, "fast", 10, cpu_seconds=10)
    got = measures(store, now=1000.0)
    assert got.agents["slow"].time_ratio == pytest.approx(2.0)
    assert got.agents["fast"].time_ratio == pytest.approx(1.0)


def test_running_trials_and_the_newest_utilisation_sample_per_agent(store: JobStore) -> None:
    ran(store, 0, "a", 30, state="RUNNING", ended=1000.0)
    store.add_samples([Sample(AGENT_CPU_UTILIZATION, "a", 990.0, 0.5),
                       Sample(AGENT_CPU_UTILIZATION, "a", 995.0, 0.97),
                       Sample(AGENT_CPU_UTILIZATION, "a", 995.0, 0.3, trial=0),  # a trial's
                       Sample("cpu_utilization", "b", 995.0, 1.0)])
    got = measures(store, now=1000.0)
    assert got.agents["a"].running_elapsed == (30.0,)
    assert got.agents["a"].cpu_utilization == 0.97
    assert got.agents["a"].utilization_time == 995.0
    assert "b" not in got.agents


@pytest.mark.parametrize(("state", "reason", "blamed"), [
    ("TASK_LOST", "REASON_AGENT_REMOVED", True),
    ("TASK_GONE", "", True),
    ("TASK_FAILED", "REASON_EXECUTOR_TERMINATED", True),
    ("TASK_FAILED", "REASON_CONTAINER_LAUNCH_FAILED", True),
    ("TASK_FAILED", "", False),  # the script exited non-zero (Mesos 1.11 sets no reason)
    ("TASK_FAILED", "REASON_COMMAND_EXECUTOR_FAILED", False),  # the same, by an older agent
    ("TASK_FAILED", "REASON_CONTAINER_LIMITATION_MEMORY", False),  # the script outgrew it
    ("TASK_KILLED", "REASON_TASK_KILLED_DURING_LAUNCH", False),
    ("TASK_ERROR", "REASON_TASK_INVALID", False),
    ("TASK_FINISHED", "", False),
])
def test_which_failures_blame_the_agent(state: str, reason: str, blamed: bool) -> None:
    assert is_infrastructure_failure(state, reason) is blamed


def test_failures_are_attributed_to_the_agent_the_task_ran_on(store: JobStore) -> None:
    update(store, "trial-0001", "TASK_RUNNING", agent="a")
    update(store, "trial-0001", "TASK_LOST", "REASON_AGENT_REMOVED")  # the master's: no agent
    update(store, "trial-0002-r1", "TASK_FAILED", "REASON_EXECUTOR_TERMINATED", agent="b")
    update(store, "trial-0003", "TASK_FAILED", "REASON_COMMAND_EXECUTOR_FAILED", agent="b")
    update(store, "appcore-1", "TASK_LOST", "REASON_AGENT_REMOVED", agent="c")  # not a trial
    got = measures(store, now=time.time())
    assert len(got.agents["a"].failures) == 1
    assert len(got.agents["b"].failures) == 1
    assert "c" not in got.agents


# -- preferring faster agents -----------------------------------------------------------------

def test_without_the_setting_placement_changes_nothing(store: JobStore) -> None:
    ran(store, 0, "fast", 10)
    ran(store, 1, "slow", 40)
    policy = create_policy("fifo", {}, runner=RUNNER)
    assert policy.placement is None
    policy.observe_agents(measures(store, now=1000.0))
    offers = [view("slow"), view("fast")]
    assert launched_on(policy.place(offers, trials(1)), offers) == ["slow"]


@pytest.mark.parametrize("name", ["fifo", "dynamic-plus", "deadline"])
def test_every_policy_puts_a_trial_on_the_faster_agent(store: JobStore, name: str) -> None:
    ran(store, 0, "fast", 10)
    ran(store, 1, "slow", 40)
    ran(store, 2, "typical", 20)
    policy = placed(name)
    policy.observe_agents(measures(store, now=1000.0))
    offers = [view("slow"), view("typical"), view("fast")]
    plan = policy.place(offers, trials(1))
    assert launched_on(plan, offers) == ["fast"]
    assert not plan.deliberate


def test_unmeasured_agents_count_as_typical(store: JobStore) -> None:
    ran(store, 0, "fast", 10)
    ran(store, 1, "slow", 40)
    ran(store, 2, "typical", 20)
    policy = placed()
    policy.observe_agents(measures(store, now=1000.0))
    offers = [view("slow"), view("new")]
    assert launched_on(policy.place(offers, trials(1)), offers) == ["new"]


def test_dynamic_plus_ranks_speed_before_best_fit(store: JobStore) -> None:
    ran(store, 0, "fast", 10)
    ran(store, 1, "slow", 40)
    policy = placed("dynamic-plus")
    policy.observe_agents(measures(store, now=1000.0))
    # Best fit alone would pick the slow agent (fewer free slots).
    offers = [view("slow", cpus=1.0), view("fast", cpus=4.0)]
    assert launched_on(policy.place(offers, trials(1)), offers) == ["fast"]
    fast_classes = [view("fast", cpus=4.0), view("fast2", cpus=1.0)]
    ran(store, 2, "fast2", 11)
    policy.observe_agents(measures(store, now=1000.0))
    assert launched_on(policy.place(fast_classes, trials(1)), fast_classes) == ["fast2"]


# -- excluding agents that keep failing trials ------------------------------------------------

def test_an_agent_that_keeps_losing_trials_is_excluded_for_a_while(store: JobStore) -> None:
    update(store, "trial-0001", "TASK_LOST", "REASON_AGENT_DISCONNECTED", agent="flaky")
    update(store, "trial-0002", "TASK_FAILED", "REASON_EXECUTOR_TERMINATED", agent="flaky")
    policy = placed(placement_exclude_seconds="120")
    now = time.time()
    policy.observe_agents(measures(store, now=now))
    offers = [view("flaky"), view("other")]
    plan = policy.place(offers, trials(2))
    assert launched_on(plan, offers) == ["other", "other"]
    assert "offer-flaky" in plan.deliberate
    assert 110 < plan.refuse_seconds["offer-flaky"] <= 120
    # Only the flaky agent offered: still declined, on purpose.
    plan = policy.place([view("flaky")], trials(1))
    assert plan.launches == {} and "offer-flaky" in plan.deliberate
    # Once the window has passed since the last failure, it is used again.
    policy.observe_agents(measures(store, now=now + 121))
    assert launched_on(policy.place([view("flaky")], trials(1)), [view("flaky")]) == ["flaky"]
    assert policy.placement_stats()["placement_excluded"] == 2


def test_one_failure_or_the_scripts_failures_do_not_exclude(store: JobStore) -> None:
    update(store, "trial-0001", "TASK_LOST", "REASON_AGENT_DISCONNECTED", agent="a")
    for number in range(2, 6):
        update(store, f"trial-{number:04d}", "TASK_FAILED", "REASON_COMMAND_EXECUTOR_FAILED",
               agent="a")
    policy = placed()
    policy.observe_agents(measures(store, now=time.time()))
    assert launched_on(policy.place([view("a")], trials(1)), [view("a")]) == ["a"]
    stricter = placed(placement_failures="1")
    stricter.observe_agents(measures(store, now=time.time()))
    assert stricter.place([view("a")], trials(1)).launches == {}


# -- not stacking trials onto a saturated agent -----------------------------------------------

def test_a_saturated_agent_gets_no_more_trials(store: JobStore) -> None:
    store.add_samples([Sample(AGENT_CPU_UTILIZATION, "busy", 995.0, 0.95),
                       Sample(AGENT_CPU_UTILIZATION, "calm", 995.0, 0.40)])
    policy = placed(placement_saturation="0.9", placement_filter_seconds="3")
    policy.observe_agents(measures(store, now=1000.0))
    offers = [view("busy"), view("calm")]
    plan = policy.place(offers, trials(1))
    assert launched_on(plan, offers) == ["calm"]
    assert plan.refuse_seconds["offer-busy"] == 3 and "offer-busy" in plan.deliberate
    lenient = placed(placement_saturation="1")
    lenient.observe_agents(measures(store, now=1000.0))
    assert launched_on(lenient.place([view("busy")], trials(1)), [view("busy")]) == ["busy"]


def test_an_old_utilisation_sample_does_not_count(store: JobStore) -> None:
    store.add_samples([Sample(AGENT_CPU_UTILIZATION, "busy", 900.0, 1.0)])
    policy = placed(placement_sample_age="30")
    policy.observe_agents(measures(store, now=1000.0))
    assert launched_on(policy.place([view("busy")], trials(1)), [view("busy")]) == ["busy"]


# -- holding a slow agent back at the job's end -----------------------------------------------

def _fast_and_slow(store: JobStore) -> None:
    """Trials take 10 s on ``fast``, 40 s on ``slow``; one trial runs on ``fast`` for 8 s."""
    ran(store, 0, "fast", 10)
    ran(store, 1, "fast", 10)
    ran(store, 2, "slow", 40)
    ran(store, 3, "fast", 8, state="RUNNING", ended=1000.0)


def test_the_last_trial_waits_for_a_faster_agent(store: JobStore) -> None:
    _fast_and_slow(store)
    policy = placed(placement_patience_seconds="60")
    policy.observe_agents(measures(store, now=1000.0, remaining=1))
    plan = policy.place([view("slow")], trials(1))
    assert plan.launches == {} and "offer-slow" in plan.deliberate
    assert policy.placement_stats()["placement_held"] == 1


def test_mid_job_a_slow_agent_still_adds_throughput(store: JobStore) -> None:
    _fast_and_slow(store)
    policy = placed()
    policy.observe_agents(measures(store, now=1000.0, remaining=5))
    assert launched_on(policy.place([view("slow")], trials(1)), [view("slow")]) == ["slow"]


def test_a_hold_ends_after_its_patience(store: JobStore) -> None:
    _fast_and_slow(store)
    policy = placed(placement_patience_seconds="20")
    policy.observe_agents(measures(store, now=1000.0, remaining=1))
    assert policy.place([view("slow")], trials(1)).launches == {}
    policy.observe_agents(measures(store, now=1015.0, remaining=1))
    assert policy.place([view("slow")], trials(1)).launches == {}
    policy.observe_agents(measures(store, now=1021.0, remaining=1))
    assert launched_on(policy.place([view("slow")], trials(1)), [view("slow")]) == ["slow"]
    assert policy.placement_stats()["placement_patience_accepts"] == 1


def test_no_hold_when_the_faster_agent_would_not_be_sooner(store: JobStore) -> None:
    ran(store, 0, "fast", 10)
    ran(store, 1, "mid", 12)  # not slower by placement_slower (1.5)
    ran(store, 2, "mid", 12, state="RUNNING", ended=1000.0)
    ran(store, 3, "fast", 1, state="RUNNING", ended=1000.0)
    policy = placed()
    policy.observe_agents(measures(store, now=1000.0, remaining=1))
    assert launched_on(policy.place([view("mid")], trials(1)), [view("mid")]) == ["mid"]


# -- settings -------------------------------------------------------------------------------

@pytest.mark.parametrize(("setting", "value", "message"), [
    ("placement", "fastest", "must be 'none' or 'capability'"),
    ("placement_saturation", "1.5", "must be a number in (0, 1]"),
    ("placement_failures", "0", "must be an integer >= 1"),
    ("placement_slower", "1", "must be a number > 1"),
])
def test_bad_placement_settings_are_named(setting: str, value: str, message: str) -> None:
    with pytest.raises(PolicySettingsError, match=rf"setting '{setting}' .*{re.escape(message)}"):
        create_policy("dynamic", {setting: value})
