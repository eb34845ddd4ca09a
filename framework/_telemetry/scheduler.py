"""The telemetry scheduler: one thread that starts each registry entry at its interval.

Each run goes on a short-lived thread of its own (``TelemetryRegistry.launch``), so that a slow or
hanging collector delays nobody: a command past its timeout is killed, a built-in callable past
its timeout is reported slow and not started again until it returns.
"""

from __future__ import annotations

import logging
import threading
import time

from disauto.framework._telemetry.registry import TelemetryRegistry


logger = logging.getLogger(__name__)


class TelemetryScheduler:
    """Runs the registry's entries while started.

    Args:
        registry: the entries to run.
        tick: how often (seconds) it looks for entries that are due.
    """

    def __init__(self, registry: TelemetryRegistry, tick: float = 0.1) -> None:
        self.registry = registry
        self._tick = tick
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="disauto-telemetry",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop starting runs and kill the commands that run."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        self.registry.stop()

    def _loop(self) -> None:
        while not self._stopped.is_set():
            try:
                for name in self.registry.due(time.time()):
                    self.registry.launch(name)
            except Exception:  # noqa: BLE001 - the schedule must outlive any one failure
                logger.exception("telemetry scheduler")
            self._stopped.wait(self._tick)
