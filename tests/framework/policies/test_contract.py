"""Every registered offer policy keeps the contract (``disauto/testing/policies.py``: its rules are
listed there). A made-up policy that keeps the contract passes every check; one that breaks a
rule fails its check.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence

import pytest

from disauto.common.resources import Resources
from disauto.framework._offers import OfferView
from disauto.framework._offers import fit
from disauto.framework._spec import TaskResources
from disauto.framework.policies import POLICIES
from disauto.framework.policies import LaunchRequest
from disauto.framework.policies import OfferPolicy
from disauto.framework.policies import Plan
from disauto.framework.policies import PolicySetting
from disauto.framework.policies import UnknownPolicyError
from disauto.framework.policies import create_policy
from disauto.testing.policies import CHECKS
from disauto.testing.policies import RUNNER
from disauto.testing.policies import OfferPolicyContract


class TestEveryRegisteredPolicy(OfferPolicyContract):
    """:class:`OfferPolicyContract` (``disauto.testing``, what a plug-in runs too) over every
    registered policy."""

    @pytest.fixture(params=list(POLICIES))
    def policy_class(self, request: pytest.FixtureRequest) -> type[OfferPolicy]:
        return POLICIES[str(request.param)]


@pytest.mark.parametrize("name", list(POLICIES))
def test_create_policy_gives_the_registered_class(name: str) -> None:
    policy = create_policy(name, runner=RUNNER)
    assert type(policy) is POLICIES[name] and policy.NAME == name


def test_an_unknown_policy_is_refused_with_the_valid_ones() -> None:
    with pytest.raises(UnknownPolicyError) as caught:
        create_policy("drf")
    assert str(caught.value) == (
        f"unknown offer policy 'drf'; valid policies: {', '.join(POLICIES)}")
    assert {"fifo", "dynamic", "dynamic-plus", "deadline"} <= set(POLICIES)


# -- the checks are not vacuous -------------------------------------------------------------------


class Sound(OfferPolicy):
    """A made-up policy that keeps the contract: each offer takes what fits, in order."""

    NAME = "sound"
    SETTINGS: Mapping[str, PolicySetting] = {
        "patience": PolicySetting("1", float, "a number", "made up")}

    def claims(self, offer: OfferView, requests: Sequence[LaunchRequest],
               taken: set[str]) -> list[tuple[LaunchRequest, Resources]]:
        left, items = offer.available, []
        for request in requests:
            if request.key in taken or (request.resources.gpus and not offer.has_gpus):
                continue
            claim = fit(left, request.resources, request.ports)
            if claim is not None:
                left = left - claim
                items.append((request, claim))
                taken.add(request.key)
        return items

    def plan(self, offers: Sequence[OfferView], requests: Sequence[LaunchRequest]) -> Plan:
        result, taken = Plan(), set[str]()
        for offer in offers:
            items = self.claims(offer, requests, taken)
            if items:
                result.launches[offer.id] = items
            else:
                result.refuse_seconds[offer.id] = self.decline_seconds
        return result


class Overclaims(Sound):
    def claims(self, offer: OfferView, requests: Sequence[LaunchRequest],
               taken: set[str]) -> list[tuple[LaunchRequest, Resources]]:
        fresh = [r for r in requests if r.key not in taken and not r.ports]
        taken.update(r.key for r in fresh)
        return [(r, Resources({"cpus": r.resources.cpus, "mem": r.resources.mem_mb,
                               "gpus": float(r.resources.gpus)})) for r in fresh]


class ShortChanges(Sound):
    def claims(self, offer: OfferView, requests: Sequence[LaunchRequest],
               taken: set[str]) -> list[tuple[LaunchRequest, Resources]]:
        return [(r, claim - Resources({"cpus": 0.5}))
                for r, claim in super().claims(offer, requests, taken)]


class LaunchesTwice(Sound):
    def claims(self, offer: OfferView, requests: Sequence[LaunchRequest],
               taken: set[str]) -> list[tuple[LaunchRequest, Resources]]:
        return super().claims(offer, requests, set())


class Invents(Sound):
    def plan(self, offers: Sequence[OfferView], requests: Sequence[LaunchRequest]) -> Plan:
        extra = LaunchRequest("trial-9999", TaskResources(cpus=0.1, mem_mb=1.0),
                              trial_number=9999)
        return super().plan(offers, [*requests, extra])


class Forgets(Sound):
    def plan(self, offers: Sequence[OfferView], requests: Sequence[LaunchRequest]) -> Plan:
        result = super().plan(offers, requests)
        result.refuse_seconds.clear()
        return result


class NeedsAnOffer(Sound):
    def plan(self, offers: Sequence[OfferView], requests: Sequence[LaunchRequest]) -> Plan:
        offers[0]  # noqa: B018 - the defect: an empty list raises IndexError
        return super().plan(offers, requests)


class Hoards(Sound):
    def plan(self, offers: Sequence[OfferView], requests: Sequence[LaunchRequest]) -> Plan:
        return Plan(refuse_seconds={offer.id: 5.0 for offer in offers},
                    deliberate={offer.id for offer in offers})


class LeaksAnError(Sound):
    SETTINGS: Mapping[str, PolicySetting] = {
        "patience": PolicySetting("1", lambda text: {"1": 1.0}[text], "1", "made up")}


class SharesItsCounters(Sound):
    def _setup(self) -> None:
        self._counts: dict[str, float] = {"plans": 0.0}

    def stats(self) -> dict[str, float]:
        return self._counts


BROKEN: dict[type[OfferPolicy], str] = {
    Overclaims: "plans", ShortChanges: "plans", LaunchesTwice: "plans", Invents: "plans",
    Forgets: "plans", NeedsAnOffer: "empty", Hoards: "alone", LeaksAnError: "settings",
    SharesItsCounters: "tells",
}


def test_a_made_up_policy_that_keeps_the_contract_passes_every_check() -> None:
    for check in CHECKS.values():
        check(Sound)


@pytest.mark.parametrize("broken", sorted(BROKEN, key=lambda cls: cls.__name__),
                         ids=lambda cls: cls.__name__)
def test_a_policy_that_breaks_a_rule_fails_its_check(broken: type[OfferPolicy]) -> None:
    with pytest.raises(AssertionError):
        CHECKS[BROKEN[broken]](broken)
