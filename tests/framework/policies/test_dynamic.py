"""The dynamic priority offer policies: decisions on OfferViews, then against the embedded master.

The first half feeds the policies offers as a scheduler would (one ``plan`` per
``resourceOffers`` callback) and checks what they launch and decline. The second half runs the
framework's real :class:`~framework._scheduler.JobScheduler` with a real
:class:`~framework._job.JobController` and job store under pymesos' real driver, against the
embedded master: a low-priority job declines, and another framework gets the resources; alone on
an idle cluster, a job wins its priority back.
"""

from __future__ import annotations

from collections.abc import Iterator
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from disauto.common.resources import Resources
from disauto.framework._job import JobController
from disauto.framework._offers import OfferView
from disauto.framework._scheduler import JobScheduler
from disauto.framework._spec import TaskResources
from disauto.framework._store import JobStore
from disauto.framework.policies import DynamicPriorityPlusPolicy
from disauto.framework.policies import DynamicPriorityPolicy
from disauto.framework.policies import FifoPolicy
from disauto.framework.policies import LaunchRequest
from disauto.framework.policies import OfferPolicy
from disauto.framework.policies import PolicySettingsError
from disauto.framework.policies import create_policy
from disauto.framework.policies.dynamic import trial_slots
from disauto.localmesos.cluster import LocalCluster
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import job_config
from tests.localmesos.cluster_support import DRIVER_LOCK
from tests.localmesos.cluster_support import Drivers
from tests.localmesos.cluster_support import framework_info
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration  # starts processes or servers


RUNNER = TaskResources(cpus=4.0, mem_mb=5120.0)
APPCORE = TaskResources(cpus=1.0, mem_mb=1024.0)


def view(offer_id: str, cpus: float = 12.0, mem: float = 20480.0, agent: str = "",
         gpus: float = 0.0) -> OfferView:
    available = Resources({"cpus": cpus, "mem": mem, "gpus": gpus},
                          {"ports": [(31000, 31009)]})
    return OfferView(id=offer_id, agent_id=agent or f"agent-{offer_id}",
                     hostname=f"host-{offer_id}", available=available, raw={})


def trial(number: int, priority: int = 0) -> LaunchRequest:
    return LaunchRequest(f"trial-{number:04d}", RUNNER, priority=priority, trial_number=number)


def appcore() -> LaunchRequest:
    return LaunchRequest("appcore", APPCORE, ports=1)


def launched(plan: Any) -> dict[str, list[str]]:
    return {offer: [r.key for r, _ in items] for offer, items in plan.launches.items()}


def dynamic(**settings: str) -> DynamicPriorityPolicy:
    return DynamicPriorityPolicy(settings=settings, runner=RUNNER)


# -- decisions ------------------------------------------------------------------------------------


def test_at_priority_zero_it_decides_as_fifo_does() -> None:
    offers = [view("A"), view("B", cpus=4.0)]
    requests = [appcore(), trial(1), trial(2), trial(3)]
    assert launched(dynamic().plan(offers, requests)) == launched(FifoPolicy().plan(offers,
                                                                                   requests))
    assert launched(dynamic().plan(offers, requests)) == {
        "A": ["appcore", "trial-0001", "trial-0002"], "B": ["trial-0003"]}


def test_priority_p_declines_p_fitting_offers_per_level_with_the_filter_before_accepting() -> None:
    policy = dynamic(declines_per_level="2", decline_filter_seconds="3", idle_repeats="99")
    assert policy.declines_before_accept(2) == 4
    for index in range(4):  # one offer per callback, as under contention
        plan = policy.plan([view(f"O{index}")], [trial(7, priority=2)])
        assert plan.launches == {} and plan.refuse_seconds == {f"O{index}": 3.0}
    plan = policy.plan([view("O4")], [trial(7, priority=2)])
    assert launched(plan) == {"O4": ["trial-0007"]} and plan.refuse_seconds == {}
    # The count starts again after an accept; several offers in one callback count one by one.
    plan = policy.plan([view(f"P{i}") for i in range(6)], [trial(8, priority=2)])
    assert launched(plan) == {"P4": ["trial-0008"]}
    # P5 is left over with nothing waiting: the ordinary filter, not a priority decline.
    assert plan.refuse_seconds == {"P0": 3.0, "P1": 3.0, "P2": 3.0, "P3": 3.0, "P5": 5.0}
    assert policy.stats()["priority_declines"] == 8 and policy.stats()["accepts"] == 2


def test_an_accepted_offer_takes_every_waiting_trial_that_fits() -> None:
    policy = dynamic(declines_per_level="1")
    plan = policy.plan([view("A"), view("B")], [trial(1, 1), trial(2, 1), trial(3, 1)])
    assert launched(plan) == {"B": ["trial-0001", "trial-0002", "trial-0003"]}


def test_appcore_is_never_delayed_and_unfit_offers_do_not_count() -> None:
    policy = dynamic(declines_per_level="3")
    plan = policy.plan([view("small", cpus=0.5), view("A")], [appcore()])
    assert launched(plan) == {"A": ["appcore"]}
    assert plan.refuse_seconds == {"small": 5.0}  # nothing fits it: the ordinary filter
    plan = policy.plan([view("small", cpus=2.0)], [trial(1, priority=1)])
    assert plan.refuse_seconds == {"small": 5.0} and policy.stats()["priority_declines"] == 0


def test_the_job_priority_is_its_first_waiting_trials() -> None:
    policy = dynamic()
    plan = policy.plan([view("A", agent="S1")], [trial(3, priority=1), trial(4, priority=2)])
    assert plan.launches == {} and policy.stats()["max_priority"] == 1


def test_undiminished_re_offers_raise_the_priority_and_the_raise_is_kept() -> None:
    policy = dynamic(declines_per_level="2", idle_repeats="2")
    waiting = [trial(1, priority=3)]  # d = 6 without raises
    outcomes = []
    for index in range(5):  # the same agent, re-offered whole after each decline
        plan = policy.plan([view(f"O{index}", agent="S1")], waiting)
        outcomes.append("launch" if plan.launches else "decline")
    # Re-offers 2 and 4 complete a pair of undiminished repeats: P_eff 3 -> 2 -> 1 (d 6 -> 4 -> 2).
    assert outcomes == ["decline", "decline", "decline", "decline", "launch"]
    assert policy.boost == 2 and policy.stats()["idle_raises"] == 2
    # Kept: the next trial at AppCore's priority 3 needs only d = 2 declines.
    outcomes = ["launch" if policy.plan([view(f"Q{i}", agent=f"T{i}")], [trial(2, 3)]).launches
                else "decline" for i in range(3)]
    assert outcomes == ["decline", "decline", "launch"]


def test_a_smaller_re_offer_means_contention_and_restarts_the_idle_count() -> None:
    policy = dynamic(declines_per_level="4", idle_repeats="2")
    policy.plan([view("O1", agent="S1")], [trial(1, priority=1)])  # declined whole
    policy.plan([view("O2", agent="S1", cpus=8.0)], [trial(1, priority=1)])  # someone took 4
    policy.plan([view("O3", agent="S1", cpus=8.0)], [trial(1, priority=1)])  # repeat 1
    assert policy.boost == 0 and policy.stats()["contention_seen"] == 1
    policy.plan([view("O4", agent="S1", cpus=8.0)], [trial(1, priority=1)])  # repeat 2: raise
    assert policy.boost == 1


def test_the_idle_raise_never_goes_past_the_jobs_priority() -> None:
    policy = dynamic(declines_per_level="5", idle_repeats="1")
    for index in range(3):
        policy.plan([view(f"O{index}", agent="S1")], [trial(1, priority=1)])
    assert policy.boost == 1 and policy.effective_priority(1) == 0


def test_settings_are_validated_with_one_line_errors() -> None:
    own = {key: value for key, value in DynamicPriorityPolicy().settings.items()
           if not key.startswith("placement")}  # every policy's placement settings aside
    assert own == {"declines_per_level": 1,
                                                "decline_filter_seconds": 1.0,
                                                "idle_repeats": 2}
    with pytest.raises(PolicySettingsError, match=r"unknown setting 'x' for offer policy "
                                                  r"'dynamic'; valid settings: "
                                                  r"decline_filter_seconds, declines_per_level"):
        DynamicPriorityPolicy(settings={"x": "1"})
    with pytest.raises(PolicySettingsError, match=r"setting 'idle_repeats' for offer policy "
                                                  r"'dynamic' must be an integer"):
        DynamicPriorityPolicy(settings={"idle_repeats": "0"})
    with pytest.raises(PolicySettingsError, match=r"must be a number of seconds >= 0, got '-1'"):
        create_policy("dynamic-plus", {"decline_filter_seconds": "-1"})
    policy = create_policy("dynamic", {"idle_repeats": "4"})
    assert isinstance(policy, DynamicPriorityPolicy) and policy.settings["idle_repeats"] == 4
    with pytest.raises(PolicySettingsError, match="unknown setting 'k' for offer policy 'fifo'"):
        create_policy("fifo", {"k": "3"})
    assert FifoPolicy.uses_priority is False and DynamicPriorityPlusPolicy.uses_priority


def test_trial_slots_count_by_the_scarcest_resource() -> None:
    assert trial_slots(Resources({"cpus": 12.0, "mem": 20480.0}), RUNNER) == 3
    assert trial_slots(Resources({"cpus": 11.0, "mem": 19456.0}), RUNNER) == 2
    assert trial_slots(Resources({"cpus": 12.0, "mem": 9000.0}), RUNNER) == 1
    assert trial_slots(Resources({"cpus": 3.0}), RUNNER) == 0


# -- the improved variant -------------------------------------------------------------------------


def plus(**settings: str) -> DynamicPriorityPlusPolicy:
    return DynamicPriorityPlusPolicy(settings=settings, runner=RUNNER)


def test_plus_places_appcore_where_it_costs_no_trial_slot() -> None:
    policy = plus()
    # A whole agent fits 3 trials, only 2 beside AppCore; 11 CPUs fit 2 either way.
    assert policy.appcore_cost(Resources({"cpus": 12.0, "mem": 20480.0}, {"ports": [(1, 9)]}),
                               appcore()) == 1
    assert policy.appcore_cost(Resources({"cpus": 11.0, "mem": 19456.0}, {"ports": [(1, 9)]}),
                               appcore()) == 0
    plan = policy.plan([view("fresh"), view("shared", cpus=11.0, mem=19456.0)], [appcore()])
    assert launched(plan) == {"shared": ["appcore"]} and plan.refuse_seconds == {"fresh": 5.0}
    assert policy.stats()["pack_declines"] == 0


def test_plus_declines_costly_appcore_places_up_to_its_patience() -> None:
    policy = plus(pack_patience="2", decline_filter_seconds="0.5")
    for index in range(2):
        plan = policy.plan([view(f"F{index}")], [appcore()])
        assert plan.launches == {} and plan.refuse_seconds == {f"F{index}": 0.5}
    assert launched(policy.plan([view("F2")], [appcore()])) == {"F2": ["appcore"]}
    assert policy.stats()["pack_declines"] == 2
    faithful = dynamic()
    assert launched(faithful.plan([view("F0")], [appcore()])) == {"F0": ["appcore"]}


def test_plus_puts_trials_on_the_fullest_agent_first() -> None:
    plan = plus().plan([view("empty"), view("half", cpus=4.0, mem=5120.0)], [trial(1)])
    assert launched(plan) == {"half": ["trial-0001"]}
    assert launched(dynamic().plan([view("empty"), view("half", cpus=4.0, mem=5120.0)],
                                   [trial(1)])) == {"empty": ["trial-0001"]}


def test_plus_forgets_idle_raises_when_contention_returns() -> None:
    policy = plus(declines_per_level="4", idle_repeats="1")
    policy.plan([view("O1", agent="S1")], [trial(1, priority=2)])
    policy.plan([view("O2", agent="S1")], [trial(1, priority=2)])  # undiminished: raise
    assert policy.boost == 1
    policy.plan([view("O3", agent="S1", cpus=4.0)], [trial(1, priority=2)])  # taken: contention
    assert policy.boost == 0
    faithful = dynamic(declines_per_level="4", idle_repeats="1")
    for offer in (view("O1", agent="S1"), view("O2", agent="S1"), view("O3", agent="S1",
                                                                       cpus=4.0)):
        faithful.plan([offer], [trial(1, priority=2)])
    assert faithful.boost == 1


# -- against the embedded master ------------------------------------------------------------------


class LockedScheduler(JobScheduler):
    """The real JobScheduler; its callbacks hold DRIVER_LOCK (two pymesos drivers, one process).

    pymesos 0.3.15 shares one request-header dict between the drivers of a process, so two
    drivers' calls must not interleave (tests/localmesos/cluster_support.py); da-submit runs one
    driver per process and needs none of this.
    """

    def resourceOffers(self, driver: Any, offers: Any) -> None:  # noqa: N802
        with DRIVER_LOCK:
            super().resourceOffers(driver, offers)

    def statusUpdate(self, driver: Any, status: Any) -> None:  # noqa: N802
        with DRIVER_LOCK:
            super().statusUpdate(driver, status)

    def wake(self) -> None:
        with DRIVER_LOCK:
            super().wake()


@dataclasses.dataclass
class Job:
    controller: JobController
    scheduler: LockedScheduler
    store: JobStore

    def submit(self, number: int, priority: int) -> None:
        self.controller.submit_trial(number, {"lr": 0.01, "layers": 1, "act": "relu"}, priority)

    def state(self, number: int) -> str:
        return {t.number: t.state for t in self.controller.trials()}[number]


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    with running_cluster(agents=1, cpus=2.0, mem_mb=1024.0, allocation_interval=0.1) as made:
        yield made


@pytest.fixture
def jobs(tmp_path: Path, cluster: LocalCluster) -> Iterator[Any]:
    drivers = Drivers()
    made: list[Job] = []

    def start(name: str, policy: OfferPolicy, sleep: float) -> Job:
        config = dataclasses.replace(
            job_config(max_trials=5, parallelism=1, job_id=name),
            launch_cmd=f"sleep {sleep}", runner=TaskResources(cpus=2.0, mem_mb=256.0))
        store = JobStore(tmp_path / name / "job.db")
        holder: dict[str, LockedScheduler] = {}
        controller = JobController(config, store, JOB_TOKEN,
                                   on_pending=lambda: holder["s"].wake())
        controller.attach_appcore("127.0.0.1:9")  # trials need an address to report to
        scheduler = LockedScheduler(controller, policy, "127.0.0.1:1")
        holder["s"] = scheduler
        with DRIVER_LOCK:
            drivers.start(cluster, scheduler, framework_info(name), use_addict=False,
                          implicit_acknowledgements=False)
        assert scheduler.registered_event.wait(10)
        job = Job(controller, scheduler, store)
        made.append(job)
        return job

    yield start
    drivers.stop_all()
    for job in made:
        job.store.close()


def declined_by_master(cluster: LocalCluster, framework_id: str) -> float:
    metrics = get_json(cluster, "/metrics/snapshot")
    return sum(v for k, v in metrics.items()
               if k.endswith(f"/{framework_id}/offers/declined"))


def test_a_low_priority_job_declines_and_the_other_framework_gets_the_agent(
        cluster: LocalCluster, jobs: Any) -> None:
    low = jobs("low", dynamic(declines_per_level="3", decline_filter_seconds="0.3",
                              idle_repeats="99"), sleep=30)
    low.submit(1, priority=2)  # d = 6 fitting offers declined before one is accepted
    wait_until(lambda: low.scheduler.policy_stats()["priority_declines"] >= 1, timeout=10)
    high = jobs("high", FifoPolicy(), sleep=1)
    high.submit(1, priority=0)
    # The agent the low-priority job declined is offered to the other framework, which runs.
    wait_until(lambda: high.state(1) != "PENDING", timeout=15)
    assert low.state(1) == "PENDING"
    # When that trial ends, and after its sixth decline, the low-priority job takes the agent.
    wait_until(lambda: low.state(1) == "RUNNING", timeout=15)
    assert high.state(1) == "FAILED"  # `sleep` reports no result: the trial ran and ended
    stats = low.scheduler.policy_stats()
    assert stats["priority_declines"] == 6 and stats["boost"] == 0
    assert declined_by_master(cluster, low.scheduler.framework_id) >= 6
    assert high.scheduler.policy_stats() == {}


def test_alone_on_an_idle_cluster_a_job_wins_its_priority_back(
        cluster: LocalCluster, jobs: Any) -> None:
    alone = jobs("alone", dynamic(declines_per_level="2", decline_filter_seconds="0.2",
                                  idle_repeats="2"), sleep=30)
    alone.submit(1, priority=3)  # d = 6 without the idle test
    wait_until(lambda: alone.state(1) == "RUNNING", timeout=15)
    stats = alone.scheduler.policy_stats()
    # The agent came back whole after every decline: two repeats raise the priority by one.
    assert stats["idle_raises"] == 2 and stats["boost"] == 2
    assert stats["priority_declines"] == 4 and stats["contention_seen"] == 0
