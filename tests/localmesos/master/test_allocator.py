"""The allocation decision (pure) and the allocation loop's timing."""

from __future__ import annotations

import random
import threading
import time

import pytest

from disauto.common.resources import Resources
from disauto.localmesos.master.allocator import DEFAULT_MIN_ALLOCATABLE
from disauto.localmesos.master.allocator import MAX_REFUSE_SECONDS
from disauto.localmesos.master.allocator import AgentCandidate
from disauto.localmesos.master.allocator import AllocationLoop
from disauto.localmesos.master.allocator import FrameworkCandidate
from disauto.localmesos.master.allocator import OfferFilters
from disauto.localmesos.master.allocator import allocate
from disauto.localmesos.master.allocator import drf_share
from disauto.localmesos.master.allocator import is_allocatable
from disauto.localmesos.master.allocator import refuse_timeout


def res(**scalars: float) -> Resources:
    return Resources(scalars)


AGENT = res(cpus=4, mem=4096)


def agents(n: int, resources: Resources = AGENT, gpus: bool = False) -> list[AgentCandidate]:
    return [AgentCandidate(f"a{i}", resources, gpus) for i in range(n)]


def fw(
    name: str,
    allocation: Resources | None = None,
    *,
    role: str = "*",
    gpu: bool = False,
    count: int = 0,
) -> FrameworkCandidate:
    return FrameworkCandidate(name, (role,), {role: allocation or Resources()}, gpu, count)


def no_filters(framework_id: str, role: str, agent_id: str, resources: Resources) -> bool:
    return False


def run(
    agent_list: list[AgentCandidate], frameworks: list[FrameworkCandidate], **kwargs: object
) -> list[tuple[str, str]]:
    total = Resources()
    for agent in agent_list:
        total = total + agent.available
    grants = allocate(
        agent_list,
        frameworks,
        total=kwargs.pop("total", total),  # type: ignore[arg-type]
        is_filtered=kwargs.pop("is_filtered", no_filters),  # type: ignore[arg-type]
        rng=random.Random(7),
        **kwargs,  # type: ignore[arg-type]
    )
    return [(g.agent_id, g.framework_id) for g in grants]


@pytest.mark.parametrize(
    ("refuse", "interval", "expected"),
    [
        (None, 1.0, 5.0),  # default
        (-3.0, 1.0, 5.0),  # negative → default
        (0.0, 1.0, None),  # 0 → no filter
        (0.2, 1.0, 1.0),  # never shorter than the allocation interval (MESOS-4302)
        (60.0, 1.0, 60.0),
        (1e12, 1.0, MAX_REFUSE_SECONDS),  # capped at 365 days
        (float("inf"), 1.0, MAX_REFUSE_SECONDS),
    ],
)
def test_refuse_timeout(refuse: float | None, interval: float, expected: float | None) -> None:
    assert refuse_timeout(refuse, interval) == expected


def test_filters_match_contained_resources_until_they_expire() -> None:
    filters = OfferFilters()
    filters.add("f", "*", "a0", res(cpus=4, mem=4096), timeout=10.0, now=100.0)
    assert filters.is_filtered("f", "*", "a0", res(cpus=4, mem=4096), now=105.0)
    assert filters.is_filtered("f", "*", "a0", res(cpus=1), now=105.0)  # subset
    assert not filters.is_filtered("f", "*", "a0", res(cpus=8), now=105.0)  # more than refused
    assert not filters.is_filtered("g", "*", "a0", res(cpus=1), now=105.0)  # other framework
    assert not filters.is_filtered("f", "dev", "a0", res(cpus=1), now=105.0)  # other role
    assert not filters.is_filtered("f", "*", "a1", res(cpus=1), now=105.0)  # other agent
    assert filters.active(105.0) == {"*": 1}
    assert not filters.is_filtered("f", "*", "a0", res(cpus=1), now=110.0)  # expired
    assert filters.active(110.0) == {}


def test_filters_clear_by_role_and_whole_framework() -> None:
    filters = OfferFilters()
    for role in ("a", "b"):
        filters.add("f", role, "x", res(cpus=1), timeout=10.0, now=0.0)
    filters.clear("f", ["a"])
    assert not filters.is_filtered("f", "a", "x", res(cpus=1), now=1.0)
    assert filters.is_filtered("f", "b", "x", res(cpus=1), now=1.0)
    filters.clear("f")
    assert not filters.is_filtered("f", "b", "x", res(cpus=1), now=1.0)
    filters.add("f", "a", "x", Resources(), timeout=10.0, now=0.0)  # nothing refused: no filter
    assert filters.active(1.0) == {}


def test_drf_share_is_the_dominant_share_divided_by_weight() -> None:
    total = res(cpus=10, mem=1000)
    assert drf_share(res(cpus=2, mem=500), total) == 0.5
    assert drf_share(res(cpus=2, mem=500), total, weight=2.0) == 0.25
    assert drf_share(res(cpus=5, gpus=1), total) == 0.5  # no gpus in the total: ignored
    assert drf_share(res(cpus=2, mem=500), total, excluded=["mem"]) == 0.2


def test_min_allocatable_is_any_of_the_quantities() -> None:
    assert is_allocatable(res(cpus=0.01), DEFAULT_MIN_ALLOCATABLE)
    assert is_allocatable(res(mem=32), DEFAULT_MIN_ALLOCATABLE)
    assert not is_allocatable(res(cpus=0.005, mem=31, disk=100), DEFAULT_MIN_ALLOCATABLE)
    assert not is_allocatable(Resources(), ())
    assert is_allocatable(res(disk=1), ())


def test_whole_agent_goes_to_one_framework() -> None:
    grants = allocate(
        agents(1), [fw("f1"), fw("f2")], total=AGENT, is_filtered=no_filters,
        rng=random.Random(1),
    )
    assert len(grants) == 1 and grants[0].resources == AGENT


def test_drf_alternates_between_equal_frameworks() -> None:
    grants = run(agents(4), [fw("f1"), fw("f2")])
    owners = [owner for _, owner in grants]
    assert owners.count("f1") == 2 and owners.count("f2") == 2


def test_drf_prefers_the_framework_with_the_lower_share() -> None:
    total = res(cpus=16, mem=16384)
    grants = run(agents(2), [fw("rich", res(cpus=8)), fw("poor", res(cpus=1))], total=total)
    # After "poor" gets one agent its share (5/16) is still below "rich"'s (8/16).
    assert [owner for _, owner in grants] == ["poor", "poor"]


def test_ties_break_on_allocation_count_then_name() -> None:
    assert run(agents(1), [fw("b"), fw("a")]) == [("a0", "a")]
    assert run(agents(1), [fw("b"), fw("a", count=3)]) == [("a0", "b")]


def test_role_weights_divide_shares() -> None:
    frameworks = [fw("h", role="heavy"), fw("l", role="light")]
    grants = run(agents(4), frameworks, weights={"heavy": 3.0})
    owners = [owner for _, owner in grants]
    assert owners.count("h") == 3 and owners.count("l") == 1


def test_gpu_agents_only_go_to_gpu_capable_frameworks() -> None:
    gpu_agent = AgentCandidate("gpu", res(cpus=4, mem=4096, gpus=1), has_gpus=True)
    cpu_agent = AgentCandidate("cpu", AGENT)
    assert run([gpu_agent], [fw("plain")]) == []
    assert run([gpu_agent], [fw("plain"), fw("gpu", gpu=True)]) == [("gpu", "gpu")]
    # has_gpus is about the agent's total: a GPU agent with its GPUs in use stays hidden.
    busy_gpu_agent = AgentCandidate("gpu", AGENT, has_gpus=True)
    assert run([busy_gpu_agent, cpu_agent], [fw("plain")]) == [("cpu", "plain")]


def test_agents_below_min_allocatable_are_not_offered() -> None:
    scraps = AgentCandidate("scraps", res(cpus=0.005, mem=16, disk=1000))
    assert run([scraps], [fw("f")]) == []
    assert run([scraps], [fw("f")], min_allocatable=()) == [("scraps", "f")]


def test_filtered_framework_is_skipped_for_that_agent() -> None:
    def filtered(framework_id: str, role: str, agent_id: str, resources: Resources) -> bool:
        return framework_id == "f1" and agent_id == "a0"

    assert sorted(run(agents(2), [fw("f1"), fw("f2")], is_filtered=filtered)) == [
        ("a0", "f2"),
        ("a1", "f1"),
    ]
    assert run(agents(1), [fw("f1")], is_filtered=filtered) == []


def test_agent_order_is_random_but_seedable() -> None:
    many = agents(20)
    first = [g.agent_id for g in allocate(many, [fw("f")], total=AGENT,
                                          is_filtered=no_filters, rng=random.Random(1))]
    again = [g.agent_id for g in allocate(many, [fw("f")], total=AGENT,
                                          is_filtered=no_filters, rng=random.Random(1))]
    other = [g.agent_id for g in allocate(many, [fw("f")], total=AGENT,
                                          is_filtered=no_filters, rng=random.Random(2))]
    assert first == again and first != other and sorted(first) == sorted(a.agent_id for a in many)


def test_inputs_are_not_modified() -> None:
    frameworks = [fw("f1", res(cpus=1))]
    agent_list = agents(2)
    run(agent_list, frameworks)
    assert frameworks[0].allocations == {"*": res(cpus=1)}
    assert [a.available for a in agent_list] == [AGENT, AGENT]


def test_multi_role_framework_competes_in_each_role() -> None:
    multi = FrameworkCandidate("m", ("a", "b"), {}, False, 0)
    grants = allocate(agents(2), [multi], total=AGENT, is_filtered=no_filters,
                      rng=random.Random(3))
    assert sorted(g.role for g in grants) == ["a", "b"]


def test_allocation_loop_runs_periodically_and_on_trigger() -> None:
    runs: list[float] = []
    done = threading.Event()

    def record() -> None:
        runs.append(time.monotonic())
        if len(runs) >= 3:
            done.set()

    loop = AllocationLoop(record, 0.05)
    loop.start()
    try:
        assert done.wait(2)
    finally:
        loop.stop()
    count = len(runs)
    time.sleep(0.15)
    assert len(runs) == count  # stopped: no more runs

    slow = AllocationLoop(lambda: runs.append(time.monotonic()), 60.0)
    runs.clear()
    slow.start()
    try:
        slow.trigger()
        deadline = time.monotonic() + 2
        while not runs and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(runs) == 1  # immediate, not after 60 s
    finally:
        slow.stop()


def test_allocation_loop_coalesces_triggers_and_survives_errors() -> None:
    started = threading.Event()
    release = threading.Event()
    runs: list[int] = []

    def run_once() -> None:
        runs.append(1)
        started.set()
        release.wait(2)
        if len(runs) == 1:
            raise RuntimeError("boom")  # the loop logs it and goes on

    loop = AllocationLoop(run_once, 60.0)
    loop.start()
    try:
        loop.trigger()
        assert started.wait(2)
        for _ in range(10):  # while a run is in progress: coalesced into one more run
            loop.trigger()
        release.set()
        time.sleep(0.2)
        assert len(runs) == 2
    finally:
        loop.stop()


def test_allocation_loop_rejects_bad_interval() -> None:
    with pytest.raises(ValueError, match="positive"):
        AllocationLoop(lambda: None, 0)
