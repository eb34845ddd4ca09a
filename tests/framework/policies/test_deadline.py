"""The deadline offer policy's decisions on constructed offers (EdgeFlow's rules; no processes).

Each test builds a job's progress (trial times measured, trials left, slots held) and the other
jobs' published standings, feeds the policy offers as a scheduler would, and checks what it
launches and declines: the minimum satisfying share first, extra slots by marginal gain, the
priority formula between jobs below their share, and slow (edge) agents for jobs that still
meet their deadline on them.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from disauto.common.resources import Resources
from disauto.framework._offers import OfferView
from disauto.framework._spec import TaskResources
from disauto.framework.policies import DeadlinePolicy
from disauto.framework.policies import JobProgress
from disauto.framework.policies import LaunchRequest
from disauto.framework.policies import PolicySettingsError
from disauto.framework.policies import Standing
from disauto.framework.policies import create_policy
from disauto.framework.policies.deadline import needs_share_now
from disauto.framework.policies.deadline import predict_end
from disauto.framework.policies.deadline import rank_key
from disauto.framework.policies.deadline import remaining_work
from disauto.framework.policies.deadline import standing_of
from disauto.framework.policies.deadline import work_class


RUNNER = TaskResources(cpus=4.0, mem_mb=4096.0)
NOW = 1_000_000.0


def progress(*, deadline: float = 0.0, remaining: float = 10, running: int = 0,
             seconds: float = 10.0, parallelism: int = 4, job: str = "me",
             measured: bool = True) -> JobProgress:
    return JobProgress(now=NOW, job=job, deadline=NOW + deadline if deadline else 0.0,
                       parallelism=parallelism, remaining_trials=remaining,
                       running_elapsed=(0.0,) * running,
                       durations=(seconds,) * 3 if measured else (),
                       cpus=RUNNER.cpus, mem_mb=RUNNER.mem_mb)


def view(offer_id: str, cpus: float = 8.0, attributes: list[dict[str, Any]] | None = None,
         ) -> OfferView:
    available = Resources({"cpus": cpus, "mem": 16384.0}, {"ports": [(31000, 31009)]})
    return OfferView(id=offer_id, agent_id=f"agent-{offer_id}", hostname=f"host-{offer_id}",
                     available=available, raw={"attributes": attributes or []})


EDGE = [{"name": "class", "type": "TEXT", "text": {"value": "edge"}},
        {"name": "slowdown", "type": "SCALAR", "scalar": {"value": 3.0}}]


def trials(count: int) -> list[LaunchRequest]:
    return [LaunchRequest(key=f"trial-{n:04d}", resources=RUNNER, trial_number=n)
            for n in range(count)]


def policy(**settings: str) -> DeadlinePolicy:
    made = create_policy("deadline", {"safety": "1", **settings}, runner=RUNNER)
    assert isinstance(made, DeadlinePolicy)
    return made


def peer(**fields: Any) -> Standing:
    return Standing(**{"job": "peer", "waiting": 4, "cpus": 4.0, "mem_mb": 4096.0, **fields})


def launched(plan: Any) -> int:
    return sum(len(items) for items in plan.launches.values())


# -- the prediction --------------------------------------------------------------------------

def test_predict_end_spreads_the_work_over_the_slots() -> None:
    job = progress(remaining=8, seconds=10.0)
    assert predict_end(job, 1, 10.0) == NOW + 80.0
    assert predict_end(job, 4, 10.0) == NOW + 20.0
    assert predict_end(job, 100, 10.0) == NOW + 10.0  # never shorter than one trial
    assert predict_end(job, 0, 10.0) == math.inf
    assert predict_end(job, 2, 10.0, slowdown=3.0) == NOW + 120.0


def test_minimum_satisfying_share_is_the_fewest_slots_that_meet_the_deadline() -> None:
    # 8 trials of 10 s: 2 slots end at +40, 3 at +26.7: a 30 s deadline needs 3.
    own = standing_of(progress(deadline=30, remaining=8), 0, 4, edge_slowdown=2, safety=1)
    assert (own.min_share, own.tier, own.feasible) == (3, 0, True)
    # With 3 slots held it is at its share: tier 1 (extra slots only).
    assert standing_of(progress(deadline=30, remaining=8), 3, 4, edge_slowdown=2,
                       safety=1).tier == 1


def test_priority_is_deadline_minus_the_end_with_one_more_slot() -> None:
    own = standing_of(progress(deadline=30, remaining=8), 1, 4, edge_slowdown=2, safety=1)
    assert own.priority == pytest.approx(30 - 40)  # 2 slots end at +40: misses by 10 s
    assert own.gain == pytest.approx(80 - 40)  # one slot more saves 40 s


def test_a_job_that_cannot_make_it_with_its_whole_parallelism_is_infeasible() -> None:
    own = standing_of(progress(deadline=15, remaining=8, parallelism=2), 0, 2,
                      edge_slowdown=2, safety=1)
    assert not own.feasible and own.tier == 1 and own.min_share == 0


def test_rank_order_tier_then_priority_then_gain() -> None:
    urgent = peer(tier=0, priority=-5.0, gain=10.0)
    relaxed = peer(tier=0, priority=20.0, gain=50.0)
    extra_big = peer(tier=1, gain=30.0, priority=5.0)
    extra_small = peer(tier=1, gain=3.0, priority=5.0)
    assert sorted([extra_small, relaxed, extra_big, urgent], key=rank_key) == \
        [urgent, relaxed, extra_big, extra_small]


# -- decisions on offers -----------------------------------------------------------------------

def test_alone_a_job_takes_every_fitting_slot() -> None:
    p = policy()
    p.observe(progress(deadline=100))
    plan = p.plan([view("a")], trials(4))
    assert launched(plan) == 2  # 8 CPUs: two 4-CPU trials


def test_below_its_minimum_share_a_job_takes_the_offer_over_an_extra_slot_peer() -> None:
    p = policy()
    p.observe(progress(deadline=30, remaining=8), [peer(tier=1, gain=1000.0)])
    assert launched(p.plan([view("a")], trials(4))) == 2


def test_at_its_share_a_job_declines_for_a_peer_below_its_share() -> None:
    p = policy()
    p.observe(progress(deadline=30, remaining=8, running=3), [peer(tier=0, priority=-3.0)])
    plan = p.plan([view("a")], trials(4))
    assert launched(plan) == 0
    assert plan.deliberate == {"a"} and plan.refuse_seconds["a"] == 1.0
    assert p.stats()["peer_declines"] == 1


def test_the_defaults_are_remaining_work_order_and_the_share_just_in_time() -> None:
    assert (policy().settings["leftover"], policy().settings["min_share"],
            policy().settings["jit_margin"], policy().settings["srpt_band"]) == \
        ("srpt", "jit", 2.0, 1.0)


def test_the_priority_formula_decides_between_two_jobs_below_their_share() -> None:
    # Both below their share; the one whose end with one more slot is further past its deadline
    # (smaller priority) goes first.
    p = policy()
    own = progress(deadline=30, remaining=8)  # priority = 30 - 80 = -50 at 0 held
    p.observe(own, [peer(tier=0, priority=-60.0)])
    assert launched(p.plan([view("a", cpus=4)], trials(4))) == 0
    p = policy()
    p.observe(own, [peer(tier=0, priority=-10.0)])
    assert launched(p.plan([view("a", cpus=4)], trials(4))) == 1


def test_paper_extra_slots_go_to_the_job_that_gains_most() -> None:
    p = policy(leftover="gain")
    own = progress(remaining=8, running=4)  # no deadline: gain = 20 - 16 = 4 s
    p.observe(own, [peer(tier=1, gain=30.0)])
    assert launched(p.plan([view("a", cpus=4)], trials(4))) == 0
    p = policy(leftover="gain")
    p.observe(own, [peer(tier=1, gain=1.0)])
    assert launched(p.plan([view("a", cpus=4)], trials(4))) == 1


def test_a_peer_that_waits_for_nothing_or_does_not_fit_is_no_rival() -> None:
    p = policy()
    own = progress(deadline=30, remaining=8, running=3)
    p.observe(own, [peer(tier=0, priority=-3.0, waiting=0), peer(tier=0, cpus=16.0),
                    peer(tier=0, gpus=1)])
    assert launched(p.plan([view("a")], trials(4))) == 2


def test_slots_are_counted_one_by_one_in_one_offer() -> None:
    # 8 trials of 10 s, deadline 30: share 3. Holding 2, a peer below its share waits: the job
    # takes the one slot it still needs and leaves the next one.
    p = policy()
    p.observe(progress(deadline=30, remaining=8, running=2), [peer(tier=0, priority=-3.0)])
    plan = p.plan([view("a", cpus=16)], trials(4))
    assert launched(plan) == 1


def test_patience_bounds_how_long_a_job_declines_for_peers() -> None:
    p = policy(patience_seconds="20")
    rival = [peer(tier=0, priority=-3.0)]
    for now in (NOW, NOW + 10):
        p.observe(dataclasses.replace(progress(deadline=30, remaining=8, running=3), now=now),
                  rival)
        assert launched(p.plan([view("a", cpus=4)], trials(1))) == 0
    p.observe(dataclasses.replace(progress(deadline=30, remaining=8, running=3), now=NOW + 20),
              rival)
    assert launched(p.plan([view("c", cpus=4)], trials(1))) == 1
    assert p.stats()["patience_accepts"] == 1


def test_a_job_without_measured_trials_takes_one_slot_to_learn() -> None:
    p = policy()
    p.observe(progress(deadline=100, measured=False), [peer(tier=1, gain=50.0)])
    assert launched(p.plan([view("a", cpus=16)], trials(4))) == 1


def test_appcore_is_never_delayed() -> None:
    p = policy()
    p.observe(progress(deadline=30, remaining=8, running=3), [peer(tier=0, priority=-3.0)])
    appcore = LaunchRequest(key="appcore", resources=TaskResources(cpus=1.0, mem_mb=512.0))
    plan = p.plan([view("a")], [appcore, *trials(2)])
    assert [r.key for r, _ in plan.launches["a"]] == ["appcore"]


# -- slow (edge) agents --------------------------------------------------------------------------

def test_a_job_that_meets_its_deadline_on_edge_agents_prefers_them() -> None:
    p = policy()
    p.observe(progress(deadline=1000, remaining=4))
    plan = p.plan([view("fast", cpus=4), view("edge", cpus=4, attributes=EDGE)], trials(1))
    assert list(plan.launches) == ["edge"]
    assert p.stats()["edge_launches"] == 1


def test_a_job_that_would_miss_on_edge_agents_declines_them() -> None:
    p = policy()
    p.observe(progress(deadline=30, remaining=8))  # 3x slower: misses
    plan = p.plan([view("edge", attributes=EDGE)], trials(4))
    assert launched(plan) == 0 and plan.deliberate == {"edge"}
    assert p.stats()["edge_declines"] == 1
    plan = p.plan([view("edge", attributes=EDGE), view("fast")], trials(4))
    assert list(plan.launches) == ["fast"]


def test_an_edge_capable_job_leaves_fast_agents_to_a_job_that_needs_them() -> None:
    p = policy()
    p.observe(progress(deadline=1000, remaining=4),
              [peer(tier=0, deadline=NOW + 30, feasible=True, edge_ok=False, priority=-5.0)])
    p.plan([view("edge", cpus=4, attributes=EDGE)], [])  # it has seen that edge agents exist
    plan = p.plan([view("fast", cpus=4)], trials(1))
    assert launched(plan) == 0 and p.stats()["fast_declines"] == 1


def test_edge_agents_are_not_held_for_a_peer_that_cannot_use_them() -> None:
    p = policy()
    p.observe(progress(deadline=1000, remaining=4),
              [peer(tier=0, deadline=NOW + 30, edge_ok=False, priority=-50.0)])
    assert launched(p.plan([view("edge", cpus=4, attributes=EDGE)], trials(1))) == 1


def test_an_infeasible_job_goes_to_edge_agents_first() -> None:
    p = policy()
    p.observe(progress(deadline=15, remaining=8, parallelism=2))
    plan = p.plan([view("fast", cpus=4), view("edge", cpus=4, attributes=EDGE)], trials(1))
    assert list(plan.launches) == ["edge"]
    assert p.standing().feasible is False


# -- settings and publication --------------------------------------------------------------------

def test_unknown_setting_is_refused_with_one_line() -> None:
    with pytest.raises(PolicySettingsError) as err:
        create_policy("deadline", {"patience_x": "1"})
    assert "\n" not in str(err.value) and "patience" in str(err.value)


def test_standing_round_trips_through_json_with_infinities() -> None:
    own = standing_of(progress(), 0, 4, edge_slowdown=2, safety=1)
    assert math.isinf(own.priority)
    assert Standing.from_json(own.to_json()) == own


# -- departures from the paper: tier 1 by remaining work, the minimum share just in time ---------

def test_remaining_work_is_the_running_rest_plus_the_trials_to_start() -> None:
    job = dataclasses.replace(progress(remaining=5, seconds=10.0), running_elapsed=(4.0, 12.0))
    assert remaining_work(job, 10.0) == pytest.approx(6.0 + 0.0 + 50.0)
    own = standing_of(progress(remaining=5, running=2), 2, 3, edge_slowdown=2, safety=1)
    assert own.remaining_work == pytest.approx(70.0)
    assert own.next_end == pytest.approx(NOW + 70.0 / 3)


def test_tier_one_orders_by_gain_remaining_work_or_next_end() -> None:
    short = peer(tier=1, gain=2.0, remaining_work=40.0, next_end=NOW + 40.0)
    long = peer(tier=1, gain=30.0, remaining_work=400.0, next_end=NOW + 100.0)
    wide = peer(tier=1, gain=1.0, remaining_work=200.0, next_end=NOW + 20.0)
    urgent = peer(tier=0, priority=-5.0, remaining_work=1000.0)
    assert sorted([short, long, wide, urgent], key=rank_key) == [urgent, long, short, wide]
    assert sorted([short, long, wide, urgent], key=lambda s: rank_key(s, "srpt")) == \
        [urgent, short, wide, long]
    assert sorted([short, long, wide, urgent], key=lambda s: rank_key(s, "finish")) == \
        [urgent, wide, short, long]


def test_srpt_a_long_job_leaves_the_offer_to_a_shorter_one() -> None:
    # No deadline, 4 trials running and 40 to start, of 10 s (440 s of work), 4 slots held:
    # one more slot gains 110 - 88 = 22 s. The peer has 50 s of work left and gains 5 s.
    own = progress(remaining=40, running=4)
    shorter = peer(tier=1, gain=5.0, remaining_work=50.0)
    p = policy(leftover="srpt")
    p.observe(own, [shorter])
    plan = p.plan([view("a", cpus=4)], trials(4))
    assert launched(plan) == 0 and plan.deliberate == {"a"}
    # The paper's rule gives the slot to the larger gain: the long job takes it.
    p = policy(leftover="gain")
    p.observe(own, [shorter])
    assert launched(p.plan([view("a", cpus=4)], trials(4))) == 1


def test_srpt_a_short_job_takes_the_offer_over_a_longer_one() -> None:
    p = policy(leftover="srpt")
    p.observe(progress(remaining=4, running=4), [peer(tier=1, gain=500.0, remaining_work=900.0)])
    assert launched(p.plan([view("a", cpus=8)], trials(4))) == 2


def test_srpt_band_works_within_a_factor_rank_as_equal_and_then_the_larger_gain() -> None:
    assert work_class(70.0, 2.0) == work_class(100.0, 2.0) == 6.0
    assert work_class(70.0, 1.0) == 70.0 and work_class(math.inf, 2.0) == math.inf
    own = progress(remaining=8, running=2)  # 100 s of work; one more slot gains 50 - 33.3
    shorter = [peer(tier=1, gain=5.0, remaining_work=70.0)]
    p = policy(leftover="srpt")
    p.observe(own, shorter)
    assert launched(p.plan([view("a", cpus=4)], trials(4))) == 0
    p = policy(leftover="srpt", srpt_band="2")
    p.observe(own, shorter)
    assert launched(p.plan([view("a", cpus=4)], trials(4))) == 1


def test_finish_the_job_that_ends_sooner_with_one_more_slot_goes_first() -> None:
    own = progress(remaining=8, running=4)  # 120 s of work: one more slot ends at +24
    p = policy(leftover="finish")
    p.observe(own, [peer(tier=1, remaining_work=60.0, next_end=NOW + 30.0)])
    assert launched(p.plan([view("a", cpus=4)], trials(4))) == 1
    p = policy(leftover="finish")
    p.observe(own, [peer(tier=1, remaining_work=60.0, next_end=NOW + 20.0)])
    assert launched(p.plan([view("a", cpus=4)], trials(4))) == 0


def test_just_in_time_a_deadline_job_with_slack_is_not_yet_in_tier_zero() -> None:
    # 8 trials of 10 s, parallelism 4: 4 slots end at +20. A 100 s deadline leaves 80 s of
    # slack (8 trials' time): with a 2-trial margin the job need not claim its share yet.
    relaxed = progress(deadline=100, remaining=8)
    assert not needs_share_now(relaxed, 10.0, 4, 2.0)
    eager = standing_of(relaxed, 0, 4, edge_slowdown=2, safety=1)
    jit = standing_of(relaxed, 0, 4, edge_slowdown=2, safety=1, jit_margin=2.0)
    assert (eager.tier, eager.min_share) == (0, 1)
    assert (jit.tier, jit.min_share) == (1, 1)
    # 35 s: 15 s of slack, under 2 trials: it claims its share (3 slots end at +26.7).
    tight = progress(deadline=35, remaining=8)
    assert needs_share_now(tight, 10.0, 4, 2.0)
    assert standing_of(tight, 0, 4, edge_slowdown=2, safety=1, jit_margin=2.0).tier == 0


def test_just_in_time_a_relaxed_deadline_job_leaves_the_offer_to_a_shorter_job() -> None:
    relaxed = progress(deadline=100, remaining=8)  # 80 s of work, 80 s of slack
    shorter = [peer(tier=1, gain=5.0, remaining_work=30.0)]
    p = policy(leftover="srpt", min_share="jit")
    p.observe(relaxed, shorter)
    plan = p.plan([view("a", cpus=4)], trials(4))
    assert launched(plan) == 0 and p.standing().tier == 1
    # Eager (the paper): below its share the job is in tier 0 and takes it.
    p = policy(leftover="srpt", min_share="eager")
    p.observe(relaxed, shorter)
    assert launched(p.plan([view("a", cpus=4)], trials(4))) == 1


def test_just_in_time_a_deadline_job_without_slack_takes_the_offer() -> None:
    p = policy(leftover="srpt", min_share="jit")
    p.observe(progress(deadline=35, remaining=8), [peer(tier=1, remaining_work=30.0)])
    assert launched(p.plan([view("a", cpus=8)], trials(4))) == 2
    assert p.standing().tier == 0  # 2 slots of its share of 3


def test_just_in_time_margin_sets_when_the_share_is_claimed() -> None:
    relaxed = progress(deadline=100, remaining=8)  # 80 s of slack = 8 trials
    rival = [peer(tier=1, remaining_work=30.0)]
    for margin, taken in (("7", 0), ("9", 1)):
        p = policy(leftover="srpt", min_share="jit", jit_margin=margin)
        p.observe(relaxed, rival)
        assert launched(p.plan([view("a", cpus=4)], trials(4))) == taken, margin


@pytest.mark.parametrize("name, value", [("leftover", "fastest"), ("min_share", "late"),
                                         ("jit_margin", "-1"), ("srpt_band", "0.5")])
def test_an_invalid_rule_setting_is_refused_with_one_line(name: str, value: str) -> None:
    with pytest.raises(PolicySettingsError) as err:
        create_policy("deadline", {name: value})
    assert "\n" not in str(err.value) and name in str(err.value)
