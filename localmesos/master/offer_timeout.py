"""Mesos' ``--offer_timeout``: rescind every offer a framework holds longer than the timeout.

As in apache/mesos ``src/master/master.cpp`` (``Master::offerTimeout`` → ``rescindOffer``): the
framework gets a RESCIND, its ``offers/rescinded`` counter grows, and the resources go back to
the allocator with no filter (they may be offered again at the next allocation run). Unset (the
Mesos default), offers never time out and no thread runs.
"""

from __future__ import annotations

from collections.abc import Callable
import logging
import threading
import time

from disauto.localmesos.master.records import OfferRecord
from disauto.localmesos.master.state import MasterState


logger = logging.getLogger("disauto.localmesos.master")


class OfferTimeouts:
    """A thread that rescinds offers older than ``timeout`` seconds (by ``OfferRecord.made``)."""

    def __init__(
        self, state: MasterState, rescind: Callable[[OfferRecord], None], timeout: float
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"offer_timeout must be > 0, got {timeout}")
        self._state = state
        self._rescind = rescind
        self.timeout = timeout
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="localmesos-offer-timeouts", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def rescind_expired(self, now: float) -> float:
        """Rescind the expired offers; returns the seconds until the next one expires."""
        with self._state.lock:
            wait = self.timeout
            for offer in list(self._state.offers.values()):
                left = offer.made + self.timeout - now
                if left <= 0:
                    logger.info("Offer %s timed out; rescinding it", offer.offer_id)
                    self._rescind(offer)
                else:
                    wait = min(wait, left)
            return wait

    def _run(self) -> None:
        while not self._stop.is_set():
            wait = self.rescind_expired(time.monotonic())
            self._stop.wait(max(wait, 0.01))
