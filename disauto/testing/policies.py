"""The offer-policy contract (:class:`~framework.policies.OfferPolicy`) as checks that any policy
can be put through, and :class:`OfferPolicyContract`, a pytest base class that runs them all on
one registered policy (a plug-in's, outside the tree, too). The rules are those the scheduler
relies on (``framework/_scheduler.py``: one ``place`` per ``resourceOffers``
callback, each planned claim launched as is, each other offer declined with its filter):

* it plans only resources an offer holds: the claims on an offer fit in it together (no port
  twice), each claim is exactly what its request asks (cpus, mem, gpus, disk, ports);
* it launches only what was asked, each request at most once;
* it answers every offer, by a launch or a decline filter (finite, >= 0), never both; an offer
  declined on purpose (``deliberate``) is declined;
* it takes an empty offer list and an empty request list, with and without its placement step
  (``placement=capability``), over many rounds of mixed offers (GPUs, ports, slow agents);
* alone on a cluster it launches what waits within a few rounds: declining for priority or for
  peers is bounded;
* its settings (the placement ones included) are refused in one line naming the setting and
  what is valid, never by another exception; ``stats`` is a copy; a policy that ranks jobs
  (``uses_progress``) publishes a standing that is JSON.

The tree's ``tests/framework/policies/test_contract.py`` runs every check on every registered
policy, and shows that a made-up policy that keeps the contract passes every check and one that
breaks a rule fails its check. A check raises ``AssertionError`` saying which rule was broken.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import json
import math
import random
from typing import ClassVar

import pytest

from disauto.common.resources import Resources
from disauto.framework.policies import PLACEMENT_SETTINGS
from disauto.framework.policies import POLICIES
from disauto.framework.policies import AgentMeasures
from disauto.framework.policies import AgentRecord
from disauto.framework.policies import JobProgress
from disauto.framework.policies import LaunchRequest
from disauto.framework.policies import OfferPolicy
from disauto.framework.policies import OfferView
from disauto.framework.policies import Plan
from disauto.framework.policies import PolicySettingsError
from disauto.framework.record import TaskResources


RUNNER = TaskResources(cpus=2.0, mem_mb=1024.0)
GPU_RUNNER = TaskResources(cpus=1.0, mem_mb=512.0, gpus=1)
APPCORE = TaskResources(cpus=1.0, mem_mb=512.0)
AGENTS = ("a1", "a2", "a3", "edge")
ROUNDS = 60
BAD_VALUES = ("not a value", "", "-7", "1e400", "nan", "0")

Make = Callable[..., OfferPolicy]
"""A fresh policy: ``make(settings=None, runner=RUNNER)``."""


def _offer(rng: random.Random, offer_id: str) -> OfferView:
    agent = rng.choice(AGENTS)
    scalars = {"cpus": rng.choice((0.5, 1.0, 2.0, 3.0, 8.0, 12.0)),
               "mem": rng.choice((256.0, 1024.0, 4096.0, 16384.0)),
               "gpus": rng.choice((0.0, 0.0, 1.0, 2.0)), "disk": rng.choice((0.0, 4096.0))}
    begin = rng.choice((31000, 32000))
    ranges = {"ports": [(begin, begin + rng.choice((0, 1, 9)))]} if rng.random() < 0.8 else {}
    attributes = [{"name": "class", "type": "TEXT", "text": {"value": "edge"}},
                  {"name": "slowdown", "type": "SCALAR", "scalar": {"value": 2.0}}] \
        if agent == "edge" else []
    return OfferView(id=offer_id, agent_id=agent, hostname=f"host-{agent}",
                     available=Resources(scalars, ranges),
                     raw={"id": {"value": offer_id}, "attributes": attributes})


def _requests(rng: random.Random, first: int) -> list[LaunchRequest]:
    waiting = [LaunchRequest("appcore", APPCORE, ports=1)] if rng.random() < 0.3 else []
    for number in range(first, first + rng.choice((0, 1, 2, 5))):
        resources = GPU_RUNNER if rng.random() < 0.2 else RUNNER
        waiting.append(LaunchRequest(f"trial-{number:04d}", resources,
                                     ports=rng.choice((0, 0, 1)), priority=rng.choice((0, 1, 3)),
                                     trial_number=number))
    return waiting


def _progress(now: float, waiting: int) -> JobProgress:
    return JobProgress(now=now, job="contract", deadline=now + 600.0, parallelism=4,
                       remaining_trials=10.0, running_elapsed=(30.0,),
                       durations=(60.0, 80.0), waiting=waiting, cpus=RUNNER.cpus,
                       mem_mb=RUNNER.mem_mb)


def _ports(claim: Resources) -> list[int]:
    return [port for begin, end in claim.ranges("ports") for port in range(begin, end + 1)]


def check_plan(offers: Sequence[OfferView], requests: Sequence[LaunchRequest],
               plan: Plan) -> None:
    """The rules every plan keeps (see the module docstring)."""
    ids = {offer.id for offer in offers}
    launched_on, declined = set(plan.launches), set(plan.refuse_seconds)
    assert launched_on <= ids and declined <= ids, \
        f"the plan names offers it was not given: {(launched_on | declined) - ids}"
    assert not launched_on & declined, f"offers both launched on and declined: " \
        f"{launched_on & declined}"
    assert launched_on | declined == ids, f"offers left unanswered: {ids - launched_on - declined}"
    assert plan.deliberate <= declined, "an offer declined on purpose is not declined"
    for offer_id, seconds in plan.refuse_seconds.items():
        assert math.isfinite(seconds) and seconds >= 0, f"offer {offer_id}: filter {seconds}"
    seen: list[str] = []
    for offer in offers:
        items = plan.launches.get(offer.id)
        if items is None:
            continue
        assert items, f"offer {offer.id}: an empty launch"
        total = Resources()
        ports: list[int] = []
        for request, claim in items:
            assert any(request is asked for asked in requests), \
                f"{request.key} was launched but not asked for"
            seen.append(request.key)
            need = request.resources
            for name, amount in (("cpus", need.cpus), ("mem", need.mem_mb),
                                 ("gpus", float(need.gpus)), ("disk", need.disk_mb)):
                assert math.isclose(claim.scalar(name), amount, abs_tol=1e-9), \
                    f"{request.key} asks {name} {amount}, its claim holds {claim.scalar(name)}"
            assert len(_ports(claim)) == request.ports, \
                f"{request.key} asks {request.ports} ports, its claim holds {_ports(claim)}"
            total = total + claim
            ports += _ports(claim)
        assert offer.available.contains(total), \
            f"offer {offer.id} holds {offer.available}, the plan claims {total}"
        assert len(ports) == len(set(ports)), f"offer {offer.id}: a port claimed twice"
    assert len(seen) == len(set(seen)), f"a request launched twice: {sorted(seen)}"


def check_plans_over_many_rounds(make: Make, placement: bool = False) -> None:
    """Mixed rounds, as a scheduler would run them, empty offer and request lists among them."""
    rng = random.Random(27)
    settings = {"placement": "capability"} if placement else {}
    policy = make(settings=settings)
    number = 1
    for round_ in range(ROUNDS):
        offers = [] if round_ % 11 == 5 else \
            [_offer(rng, f"o{round_}-{i}") for i in range(rng.choice((1, 2, 4)))]
        requests = [] if round_ % 13 == 7 else _requests(rng, number)
        number += len(requests)
        if policy.uses_progress:
            policy.observe(_progress(1000.0 + round_, len(requests)))
        if placement:
            policy.observe_agents(AgentMeasures(now=1000.0 + round_, agents={
                "a2": AgentRecord("a2", cpu_utilization=0.99, utilization_time=999.0 + round_),
                "a3": AgentRecord("a3", failures=(990.0, 995.0)),
                "a1": AgentRecord("a1", time_ratios=(1.0,))}, base_seconds=60.0,
                remaining_trials=1.0))
        before = [offer.available for offer in offers], list(requests)
        plan = policy.place(offers, requests)
        check_plan(offers, requests, plan)
        assert ([offer.available for offer in offers], list(requests)) == before, \
            "the plan changed its inputs"


def check_empty_lists(make: Make) -> None:
    policy = make()
    requests = [LaunchRequest("appcore", APPCORE, ports=1),
                LaunchRequest("trial-0001", RUNNER, trial_number=1, priority=2)]
    offers = [OfferView("o1", "a1", "host-a1", Resources({"cpus": 4.0, "mem": 4096.0},
                                                         {"ports": [(31000, 31009)]}), {})]
    for given_offers, given_requests in (([], requests), (offers, []), ([], [])):
        try:
            plan = policy.place(given_offers, given_requests)
        except Exception as err:  # noqa: BLE001 - what escapes is what is wrong
            raise AssertionError(f"{len(given_offers)} offers, {len(given_requests)} requests: "
                                 f"{type(err).__name__}: {err}") from None
        check_plan(given_offers, given_requests, plan)
        assert not plan.launches, "launched with nothing to launch or nothing offered"


def check_alone_it_launches_what_waits(make: Make) -> None:
    """Alone on a cluster with room, every waiting request (priority 3: the dynamic policies
    decline for it) is launched within 20 rounds."""
    policy = make()
    waiting = [LaunchRequest("appcore", APPCORE, ports=1)] + [
        LaunchRequest(f"trial-{n:04d}", RUNNER, priority=3, trial_number=n) for n in (1, 2, 3)]
    for round_ in range(20):
        if not waiting:
            return
        offers = [OfferView(f"o{round_}", "a1", "host-a1",
                            Resources({"cpus": 12.0, "mem": 16384.0},
                                      {"ports": [(31000, 31009)]}), {})]
        if policy.uses_progress:
            policy.observe(_progress(1000.0 + round_, len(waiting)))
        plan = policy.place(offers, waiting)
        check_plan(offers, waiting, plan)
        launched = {request.key for items in plan.launches.values() for request, _ in items}
        waiting = [request for request in waiting if request.key not in launched]
    assert not waiting, f"alone, still waiting after 20 rounds: {[r.key for r in waiting]}"


def check_settings_are_checked(cls: type[OfferPolicy]) -> None:
    parsed = cls.parse_settings({})
    assert set(parsed) == set(cls.SETTINGS), "the defaults do not give every setting"
    assert set(PLACEMENT_SETTINGS) <= set(cls.SETTINGS), "the placement settings are missing"
    cls(settings={key: spec.default for key, spec in cls.SETTINGS.items()}, runner=RUNNER)
    valid = ", ".join(sorted(cls.SETTINGS))
    try:
        cls(settings={"bogus": "1"})
    except PolicySettingsError as err:
        assert str(err) == (f"unknown setting 'bogus' for offer policy '{cls.NAME}'; "
                            f"valid settings: {valid}"), str(err)
    else:
        raise AssertionError("an unknown setting was accepted")
    for name, spec in cls.SETTINGS.items():
        assert spec.valid and spec.help, f"setting {name!r} has no valid text or no help"
        for text in BAD_VALUES:
            try:
                cls(settings={name: text}, runner=RUNNER)
            except PolicySettingsError as err:
                assert "\n" not in str(err) and f"setting {name!r}" in str(err) \
                    and spec.valid in str(err), f"setting {name!r} = {text!r}: {err}"
            except Exception as err:  # noqa: BLE001 - what escapes is what is wrong
                raise AssertionError(f"setting {name!r} = {text!r} raised "
                                     f"{type(err).__name__}: {err}") from None


def check_what_it_tells(make: Make) -> None:
    """``stats`` is a copy of numbers; a ranking policy's standing is JSON; without a runner
    (a job recorded before the runner was passed) it plans too."""
    policy = make()
    check_alone_it_launches_what_waits(make)
    stats = policy.stats()
    assert all(isinstance(value, int | float) for value in stats.values()), stats
    stats["injected"] = 1.0
    assert "injected" not in policy.stats(), "stats() is not a copy"
    assert isinstance(policy.uses_priority, bool) and isinstance(policy.uses_progress, bool)
    if policy.uses_progress:
        policy.observe(_progress(1000.0, 1))
        json.dumps(policy.standing().to_json())
    bare = make(runner=None)
    offers = [OfferView("o1", "a1", "host-a1", Resources({"cpus": 4.0, "mem": 4096.0}), {})]
    requests = [LaunchRequest("trial-0001", RUNNER, trial_number=1)]
    check_plan(offers, requests, bare.place(offers, requests))


CHECKS: dict[str, Callable[[type[OfferPolicy]], None]] = {
    "plans": lambda cls: check_plans_over_many_rounds(maker(cls)),
    "plans placed": lambda cls: check_plans_over_many_rounds(maker(cls), placement=True),
    "empty": lambda cls: check_empty_lists(maker(cls)),
    "alone": lambda cls: check_alone_it_launches_what_waits(maker(cls)),
    "settings": check_settings_are_checked,
    "tells": lambda cls: check_what_it_tells(maker(cls)),
}


def maker(cls: type[OfferPolicy]) -> Make:
    def make(settings: Mapping[str, str] | None = None,
             runner: TaskResources | None = RUNNER) -> OfferPolicy:
        return cls(settings=settings, runner=runner)

    return make


class OfferPolicyContract:
    """Every check of this module, as the tests of a subclass (pytest collects ``Test*``).

    Name the registered policy in ``NAME``::

        class TestMyPolicy(OfferPolicyContract):
            NAME = "my-policy"

    A suite over several policies overrides the ``policy_class`` fixture with parameters (the
    tree's ``tests/framework/policies/test_contract.py`` does).
    """

    NAME: ClassVar[str] = ""

    @pytest.fixture
    def policy_class(self) -> type[OfferPolicy]:
        """What the checks run on: the policy registered as ``NAME``."""
        return POLICIES[self.NAME]

    def test_the_registry_names_the_policy_by_its_name(self, policy_class: type[OfferPolicy]
                                                       ) -> None:
        policy = policy_class(settings={}, runner=RUNNER)
        assert isinstance(policy, OfferPolicy) and POLICIES[policy.NAME] is policy_class, \
            f"{policy_class!r} is not registered as its NAME {policy.NAME!r}"

    @pytest.mark.parametrize("check", list(CHECKS))
    def test_it_keeps_the_contract(self, policy_class: type[OfferPolicy], check: str) -> None:
        CHECKS[check](policy_class)
