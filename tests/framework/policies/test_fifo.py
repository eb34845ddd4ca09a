"""The FIFO offer policy's decisions on real OfferViews (what every policy must do is the
contract, ``test_contract.py``)."""

from __future__ import annotations

from disauto.common.resources import Resources
from disauto.framework._offers import OfferView
from disauto.framework._spec import TaskResources
from disauto.framework.policies import FifoPolicy
from disauto.framework.policies import LaunchRequest


CPU_TASK = TaskResources(cpus=1.0, mem_mb=256.0)
GPU_TASK = TaskResources(cpus=1.0, mem_mb=256.0, gpus=1)


def view(offer_id: str, cpus: float, mem: float = 1024.0, gpus: float = 0.0,
         ports: tuple[int, int] | None = (31000, 31009)) -> OfferView:
    scalars = {"cpus": cpus, "mem": mem, "gpus": gpus}
    ranges = {"ports": [ports]} if ports else {}
    return OfferView(id=offer_id, agent_id=f"agent-{offer_id}", hostname=f"host-{offer_id}",
                     available=Resources(scalars, ranges), raw={})


def request(key: str, resources: TaskResources = CPU_TASK, ports: int = 0) -> LaunchRequest:
    number = int(key.rsplit("-", 1)[1]) if key.startswith("trial-") else None
    return LaunchRequest(key, resources, ports=ports, trial_number=number)


Launches = dict[str, list[tuple[LaunchRequest, Resources]]]


def launched(launches: Launches) -> dict[str, list[str]]:
    """Offer id -> the keys launched on it, in order."""
    return {offer: [r.key for r, _ in items] for offer, items in launches.items()}


def test_fifo_launches_in_request_order_and_packs_an_offer() -> None:
    requests = [request("appcore", TaskResources(cpus=0.5, mem_mb=128.0), ports=1),
                request("trial-0001"), request("trial-0002"), request("trial-0003")]
    plan = FifoPolicy().plan([view("A", cpus=2.5), view("B", cpus=1.0)], requests)
    assert launched(plan.launches) == {"A": ["appcore", "trial-0001", "trial-0002"],
                                       "B": ["trial-0003"]}
    claims = {r.key: claim for items in plan.launches.values() for r, claim in items}
    (port, last), = claims["appcore"].ranges("ports")  # one port of the offered range
    assert port == last and 31000 <= port <= 31009
    assert claims["appcore"] == Resources({"cpus": 0.5, "mem": 128.0},
                                          {"ports": [(port, port)]})
    assert claims["trial-0001"] == Resources({"cpus": 1.0, "mem": 256.0})
    assert plan.refuse_seconds == {}


def test_fifo_skips_a_request_that_fits_nowhere_but_serves_later_ones() -> None:
    big = request("trial-0001", TaskResources(cpus=8.0, mem_mb=256.0))
    plan = FifoPolicy().plan([view("A", cpus=2.0)], [big, request("trial-0002")])
    assert launched(plan.launches) == {"A": ["trial-0002"]}


def test_fifo_declines_offers_it_does_not_use_with_its_filter() -> None:
    plan = FifoPolicy(decline_seconds=7.0).plan(
        [view("A", cpus=1.0), view("B", cpus=0.5), view("C", cpus=4.0)], [request("trial-0001")])
    assert launched(plan.launches) == {"A": ["trial-0001"]}
    assert plan.refuse_seconds == {"B": 7.0, "C": 7.0}
    nothing = FifoPolicy().plan([view("A", cpus=1.0)], [])
    assert nothing.launches == {} and nothing.refuse_seconds == {"A": 5.0}


def test_cpu_tasks_leave_gpu_agents_alone_while_others_fit() -> None:
    offers = [view("GPU", cpus=4.0, gpus=2.0), view("CPU", cpus=1.0)]
    plan = FifoPolicy().plan(offers, [request("trial-0001"), request("trial-0002")])
    # The first CPU task takes the CPU-only agent; the second spills onto the GPU agent.
    assert launched(plan.launches) == {"CPU": ["trial-0001"], "GPU": ["trial-0002"]}


def test_gpu_tasks_only_go_where_gpus_are_offered() -> None:
    offers = [view("CPU", cpus=8.0), view("GPU", cpus=1.0, gpus=1.0)]
    plan = FifoPolicy().plan(offers, [request("trial-0001", GPU_TASK),
                                      request("trial-0002", GPU_TASK)])
    assert launched(plan.launches) == {"GPU": ["trial-0001"]}
    claim = plan.launches["GPU"][0][1]
    assert claim.scalar("gpus") == 1.0
    assert plan.refuse_seconds == {"CPU": 5.0}
    assert FifoPolicy().plan([view("CPU", cpus=8.0)], [request("trial-0001", GPU_TASK)]) \
        .launches == {}


def test_a_request_needing_a_port_skips_offers_without_one() -> None:
    offers = [view("A", cpus=4.0, ports=None), view("B", cpus=4.0)]
    plan = FifoPolicy().plan(offers, [request("appcore", ports=1)])
    assert launched(plan.launches) == {"B": ["appcore"]}


def test_plan_does_not_mutate_its_inputs() -> None:
    offers = [view("A", cpus=2.0)]
    before = offers[0].available
    requests = [request("trial-0001"), request("trial-0002")]
    FifoPolicy().plan(offers, requests)
    assert offers[0].available == before
    assert [r.key for r in requests] == ["trial-0001", "trial-0002"]
