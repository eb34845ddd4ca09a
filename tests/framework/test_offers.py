"""Reading Mesos offers and fitting tasks into them (pure functions)."""

from __future__ import annotations

import random
from typing import Any

from disauto.common.resources import Resources
from disauto.framework._offers import OfferView
from disauto.framework._offers import fit
from disauto.framework._spec import TaskResources


def scalar(name: str, value: float, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": "SCALAR", "scalar": {"value": value}, **extra}


def ports(*ranges: tuple[int, int], **extra: Any) -> dict[str, Any]:
    return {"name": "ports", "type": "RANGES",
            "ranges": {"range": [{"begin": b, "end": e} for b, e in ranges]}, **extra}


def offer(resources: list[dict[str, Any]], offer_id: str = "O-1",
          agent_id: str = "S-1") -> dict[str, Any]:
    return {"id": {"value": offer_id}, "agent_id": {"value": agent_id},
            "framework_id": {"value": "F-1"}, "hostname": "agent1.example",
            "resources": resources}


def test_offer_view_reads_unreserved_resources_only() -> None:
    raw = offer([
        scalar("cpus", 4.0, role="*"),
        scalar("mem", 2048.0),  # no role at all: unreserved too
        scalar("cpus", 8.0, role="analytics"),  # reserved for a role: not ours
        scalar("mem", 1024.0, reservations=[{"type": "STATIC", "role": "x"}]),
        scalar("cpus", 2.0, revocable={}),
        ports((31000, 31009)),
    ])
    view = OfferView.from_offer(raw)
    assert (view.id, view.agent_id, view.hostname) == ("O-1", "S-1", "agent1.example")
    assert view.available == Resources({"cpus": 4.0, "mem": 2048.0},
                                       {"ports": [(31000, 31009)]})
    assert view.raw is raw
    assert not view.has_gpus
    assert OfferView.from_offer(offer([scalar("gpus", 1.0)])).has_gpus


def test_offer_view_with_malformed_resources_offers_nothing_instead_of_raising() -> None:
    view = OfferView.from_offer(offer([scalar("cpus", -1.0), scalar("mem", 512.0)]))
    assert view.available.is_empty()
    assert fit(view.available, TaskResources(cpus=0.1, mem_mb=1.0)) is None


def test_fit_claims_exactly_what_is_asked() -> None:
    available = Resources({"cpus": 4.0, "mem": 4096.0, "disk": 100.0, "gpus": 2.0})
    assert fit(available, TaskResources(cpus=1.5, mem_mb=512.0)) == Resources(
        {"cpus": 1.5, "mem": 512.0})
    assert fit(available, TaskResources(cpus=1.0, mem_mb=1.0, gpus=1, disk_mb=50.0)) == \
        Resources({"cpus": 1.0, "mem": 1.0, "gpus": 1.0, "disk": 50.0})


def test_fit_refuses_what_does_not_fit() -> None:
    available = Resources({"cpus": 1.0, "mem": 256.0})
    assert fit(available, TaskResources(cpus=2.0, mem_mb=1.0)) is None
    assert fit(available, TaskResources(cpus=1.0, mem_mb=257.0)) is None
    assert fit(available, TaskResources(cpus=1.0, mem_mb=1.0, gpus=1)) is None
    assert fit(available, TaskResources(cpus=1.0, mem_mb=1.0, disk_mb=1.0)) is None
    # The whole offer is a fit.
    assert fit(available, TaskResources(cpus=1.0, mem_mb=256.0)) == available


def test_fit_draws_a_block_of_ports_at_random_from_the_offered_ranges() -> None:
    available = Resources({"cpus": 1.0, "mem": 64.0}, {"ports": [(31005, 31006), (31000, 31000)]})
    need = TaskResources(cpus=0.5, mem_mb=32.0)
    rng = random.Random(3)
    drawn = {fit(available, need, ports=1, rng=rng).ranges("ports")[0] for _ in range(200)}
    assert drawn == {(31000, 31000), (31005, 31005), (31006, 31006)}  # every port, none else
    assert fit(available, need, ports=2, rng=rng).ranges("ports") == [(31005, 31006)]
    # No range holds three: the lowest ports across ranges.
    assert fit(available, need, ports=3, rng=rng).ranges("ports") == [(31000, 31000),
                                                                       (31005, 31006)]
    assert fit(available, need, ports=4, rng=rng) is None
