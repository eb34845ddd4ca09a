"""Offers and AppCore's submissions cross: what the scheduler declines, with which filter.

AppCore submits trials from gRPC threads while the pymesos IO thread handles an OFFERS event. A
trial that arrives after the policy planned must not find the offer it fits declined with a
5-second filter (it would wait that long), nor the framework suppressed with nobody to revive it.
The concurrency is reproduced by submitting through the real controller at the moment it
happens: during the policy's ``plan`` or during the driver's decline call.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from disauto.framework._offers import OfferView
from disauto.framework._scheduler import SPARE_REFUSE_SECONDS
from disauto.framework.policies import DynamicPriorityPolicy
from disauto.framework.policies import FifoPolicy
from disauto.framework.policies import LaunchRequest
from disauto.framework.policies import OfferPolicy
from disauto.framework.policies import Plan
from tests.framework.test_scheduler import RecordingDriver
from tests.framework.test_scheduler import Setup


class SubmitsDuringPlan(FifoPolicy):
    """FIFO; while it plans, AppCore submits trial ``number`` (as its gRPC thread would)."""

    def __init__(self, setup: Setup, number: int) -> None:
        super().__init__(decline_seconds=5.0)
        self._setup, self._number = setup, number

    def plan(self, offers: Sequence[OfferView], requests: Sequence[LaunchRequest]) -> Plan:
        self._setup.submit(self._number)
        return super().plan(offers, requests)


class SubmitsOnDecline(RecordingDriver):
    """A recording driver; when the scheduler declines, AppCore submits trial ``number``."""

    def __init__(self, setup: Setup, number: int) -> None:
        super().__init__()
        self._setup, self._number = setup, number

    def declineOffer(self, offer_ids: Any, filters: Any = None) -> None:  # noqa: N802
        super().declineOffer(offer_ids, filters)
        if self._number:
            number, self._number = self._number, 0
            self._setup.submit(number)


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    made = Setup(tmp_path, max_trials=10, parallelism=2)
    made.controller.attach_appcore("host-S1:31000")
    yield made
    made.store.close()


def use(setup: Setup, policy: OfferPolicy) -> None:
    setup.scheduler._policy = policy  # noqa: SLF001 - the scheduler under test, another policy


def filters(driver: RecordingDriver) -> dict[str, float]:
    return {ids[0]["value"]: f["refuse_seconds"] for kind, (ids, f) in
            ((k, a) for k, a in driver.calls if k == "decline")}


def test_an_offer_a_trial_submitted_meanwhile_fits_is_declined_without_a_filter(
        setup: Setup) -> None:
    setup.submit(1)
    use(setup, SubmitsDuringPlan(setup, 2))
    setup.driver.clear()
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O1", cpus=1.0, agent="S1"),
                                                  setup.offer("O2", cpus=1.0, agent="S2")])
    assert [t["name"] for t in setup.driver.launched()] == ["trial-0001"]
    # Trial 2 arrived after the plan: O2 comes back at the next allocation run, not in 5 s.
    assert filters(setup.driver) == {"O2": SPARE_REFUSE_SECONDS}
    assert "suppress" not in setup.driver.kinds()


def test_an_offer_no_waiting_trial_fits_keeps_the_policys_filter(setup: Setup) -> None:
    setup.submit(1)
    use(setup, SubmitsDuringPlan(setup, 2))
    setup.driver.clear()
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O1", cpus=1.0, agent="S1"),
                                                  setup.offer("O2", cpus=0.5, agent="S2")])
    assert filters(setup.driver) == {"O2": 5.0}


def test_deliberate_declines_keep_their_filter(setup: Setup) -> None:
    use(setup, DynamicPriorityPolicy(settings={"decline_filter_seconds": "2"}))
    setup.controller.submit_trial(1, {"lr": 0.01, "layers": 1, "act": "relu"}, priority=1)
    setup.driver.clear()
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O1", cpus=1.0)])
    assert setup.driver.kinds() == ["decline"] and filters(setup.driver) == {"O1": 2.0}


def test_a_trial_arriving_while_the_scheduler_suppresses_revives_offers(setup: Setup) -> None:
    driver = SubmitsOnDecline(setup, 1)
    setup.scheduler.registered(driver, {"value": "F-1"}, {"hostname": "master", "port": 5050})
    setup.scheduler.resourceOffers(driver, [setup.offer("O1")])  # nothing waits yet
    # The trial came while the offer was declined: the framework suppresses, then revives.
    assert driver.kinds() == ["decline", "suppress", "revive"]
    setup.scheduler.resourceOffers(driver, [setup.offer("O2")])
    assert [t["name"] for t in driver.launched()] == ["trial-0001"]


def test_a_trial_submitted_while_an_offer_is_planned_revives_for_what_it_left(
        setup: Setup) -> None:
    setup.scheduler.registered(setup.driver, {"value": "F-1"},
                               {"hostname": "master", "port": 5050})
    setup.submit(1)
    use(setup, SubmitsDuringPlan(setup, 2))
    setup.driver.clear()
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O1", cpus=4.0)])
    assert [t["name"] for t in setup.driver.launched()] == ["trial-0001"]
    # Trial 2 came after the plan: the rest of O1 is filtered until the master's next batch
    # allocation, so the framework revives instead of letting trial 2 wait for it.
    assert setup.driver.kinds() == ["launch", "revive"]
    use(setup, FifoPolicy(decline_seconds=5.0))
    setup.scheduler.resourceOffers(setup.driver, [setup.offer("O2", cpus=4.0)])
    assert [t["name"] for t in setup.driver.launched()] == ["trial-0001", "trial-0002"]
    assert setup.driver.kinds().count("revive") == 1
