"""Mesos' ``--offer_timeout``: rescind every offer a framework holds longer than the timeout.

As in apache/mesos ``src/master/master.cpp`` (``Master::offerTimeout`` → ``rescindOffer``): the
framework gets a RESCIND, its ``offers/rescinded`` counter grows, and the resources go back to
the allocator with no filter (they may be offered again at the next allocation run). Unset (the
Mesos default), offers never time out and no thread runs.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Protocol

from disauto.localmesos.master.records import OfferRecord


logger = logging.getLogger("disauto.localmesos.master")


class _Rescinder(Protocol):
    lock: threading.RLock
    offers: dict[str, OfferRecord]

    def _rescind(self, offer: OfferRecord) -> None: ...


class OfferTimeouts:
    """A thread that rescinds offers older than ``timeout`` seconds (by ``OfferRecord.made``)."""

    def __init__(self, master: _Rescinder, timeout: float) -> None:
        if not timeout > 0:
            raise ValueError(f"offer_timeout must be > 0, got {timeout}")
        self._master = master
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
        with self._master.lock:
            wait = self.timeout
            for offer in list(self._master.offers.values()):
                left = offer.made + self.timeout - now
                if left <= 0:
                    logger.info("Offer %s timed out; rescinding it", offer.offer_id)
                    self._master._rescind(offer)  # noqa: SLF001 - the master's own step
                else:
                    wait = min(wait, left)
            return wait

    def _run(self) -> None:
        while not self._stop.is_set():
            wait = self.rescind_expired(time.monotonic())
            self._stop.wait(max(wait, 0.01))
