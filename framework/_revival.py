"""Whether the job wants offers: SUPPRESS while nothing waits, REVIVE when something does.

A suppressed framework gets no offers until it revives, so a task that starts waiting revives
them (``wake``). So does a task that starts waiting just after the job filtered spare resources
(declined an offer, or left part of one unused, for want of a task): the master's filter on
them — even a 0 s one — lasts until its next batch allocation, up to an allocation interval,
and reviving clears it (:data:`REVIVE_WINDOW`). Never while a deliberate decline of the offer
policy (the job yields to others) is in force. A re-subscription un-suppresses, as Mesos'
allocator does.
"""

from __future__ import annotations

from collections.abc import Callable
import logging
import threading
import time
from typing import Any

from disauto.framework._mesos_link import MesosLink


logger = logging.getLogger("disauto.framework._scheduler")

REVIVE_WINDOW = 5.0
"""Seconds after the job last declined an offer for want of a task (or left part of one
unused) during which a newly waiting task REVIVEs, so that the master's filter on those
resources (a 0 s filter still lasts until its next batch allocation, up to an allocation
interval) does not keep it waiting; never while a deliberate decline (the policy yields) is in
force."""


class OfferRevival:
    """Suppresses and revives the offers of the framework ``link`` subscribes.

    Args:
        link: the framework's link to its master (its driver).
    """

    def __init__(self, link: MesosLink) -> None:
        self._link = link
        self._lock = threading.Lock()
        self._suppressed = False
        self._spare_declined_at = float("-inf")
        """When an offer (or part of one) was last declined only because no task waited."""
        self._yielding_until = float("-inf")
        """Until when a deliberate decline of the policy is in force (no REVIVE before)."""

    def suppress(self, driver: Any, has_pending: Callable[[], bool]) -> None:
        """Nothing waits: SUPPRESS (once), then REVIVE if a task arrived meanwhile."""
        with self._lock:
            if self._suppressed:
                return
            self._suppressed = True
        logger.debug("nothing waits: suppressing offers")
        driver.suppressOffers()
        if has_pending():  # a task arrived after we looked: its wake() saw no suppress
            self.wake()

    def declined_for_want_of_tasks(self) -> None:
        """Resources were declined (or left unused) for want of a task, just now."""
        with self._lock:
            self._spare_declined_at = time.monotonic()

    def declined_on_purpose(self, seconds: float) -> None:
        """The policy declined on purpose, for ``seconds``: no REVIVE clears that filter."""
        with self._lock:
            self._yielding_until = max(self._yielding_until, time.monotonic() + seconds)

    def resubscribed(self) -> None:
        """A re-subscription un-suppresses (Mesos allocator semantics)."""
        with self._lock:
            self._suppressed = False

    def wake(self) -> None:
        """Something waits for an offer: revive if offers are suppressed, or if the job
        filtered resources for want of a task a moment ago (:data:`REVIVE_WINDOW`)."""
        now = time.monotonic()
        with self._lock:
            driver = self._link.driver()
            if driver is None:
                return
            filtered = (now - self._spare_declined_at < REVIVE_WINDOW
                        and now >= self._yielding_until)
            if not self._suppressed and not filtered:
                return
            self._suppressed = False
            self._spare_declined_at = float("-inf")
        logger.debug("reviving offers")
        driver.reviveOffers()
