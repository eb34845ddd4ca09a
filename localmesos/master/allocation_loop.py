"""When the allocator runs: every batch interval, and as soon as possible when triggered
(Mesos' ``--allocation_interval`` and its coalesced ``allocate()`` requests,
``src/master/allocator/mesos/hierarchical.cpp``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
import logging
import threading
import time


logger = logging.getLogger("disauto.localmesos.master.allocator")


class AllocationLoop:
    """Runs ``run()`` every ``interval`` seconds and as soon as possible after :meth:`trigger`.

    Triggers that arrive while a run is pending are coalesced into that run, as Mesos does.
    ``run`` is called on the loop's own thread; an exception it raises is logged, and the loop
    goes on.

    Args:
        run: one allocation run.
        interval: the batch allocation interval in seconds (Mesos ``--allocation_interval``).
        name: the thread name.
    """

    def __init__(
        self, run: Callable[[], None], interval: float, *, name: str = "localmesos-allocator"
    ) -> None:
        if not interval > 0:
            raise ValueError(f"allocation interval must be positive, got {interval}")
        self._run = run
        self.interval = interval
        self._cond = threading.Condition()
        self._triggered = False
        self._requested: float | None = None
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        #: Milliseconds from each run's request (a trigger or the batch beat) to its start:
        #: Mesos' ``allocator/mesos/allocation_run_latency`` timer.
        self.latency_ms: deque[float] = deque(maxlen=1000)

    def start(self) -> None:
        """Start the loop thread."""
        self._thread.start()

    def trigger(self) -> None:
        """Ask for a run as soon as possible (coalesced with any pending one)."""
        with self._cond:
            if not self._triggered:
                self._requested = time.monotonic()
            self._triggered = True
            self._cond.notify()

    def stop(self) -> None:
        """Stop the loop and wait for its thread (idempotent)."""
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _loop(self) -> None:
        next_batch = time.monotonic() + self.interval
        while True:
            with self._cond:
                while not self._stopped and not self._triggered:
                    remaining = next_batch - time.monotonic()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
                if self._stopped:
                    return
                due = next_batch
                if self._triggered and self._requested is not None:
                    due = min(due, self._requested)
                self._triggered = False
                self._requested = None
            now = time.monotonic()
            self.latency_ms.append(max(0.0, now - due) * 1000.0)
            if now >= next_batch:
                # Keep the batch cadence; skip beats that were missed entirely.
                next_batch += self.interval * max(1, int((now - next_batch) // self.interval) + 1)
            try:
                self._run()
            except Exception:  # noqa: BLE001 - the loop must survive a bad run
                logger.exception("allocation run failed")
