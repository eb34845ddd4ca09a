"""The framework's link to its Mesos master, as every part that acts through it sees it.

The pymesos scheduler's callbacks (``framework/scheduler.py``) write it: the driver they are
called with, the FrameworkID and the master's HTTP address once registered, and when the
subscription broke. Everyone else reads it through its methods — the runner's parts get them
before anything is subscribed (``framework_id`` as a getter, ``kill`` as a function), so nothing
needs the scheduler to exist first. Before the first callback there is no driver to act with:
kills and calls are dropped, as nothing was launched yet.
"""

from __future__ import annotations

from collections.abc import Sequence
import logging
import threading
import time
from typing import Any


logger = logging.getLogger(__name__)


class MesosLink:
    """One framework's subscription.

    Args:
        framework_id: the FrameworkID to subscribe with (a resumed job's, for Mesos failover);
            "" for a new framework.
    """

    def __init__(self, framework_id: str = "") -> None:
        self._lock = threading.Lock()
        self._driver: Any = None
        self._framework_id = framework_id
        self._master_address = ""
        self._away_since: float | None = None
        self.master_away_at = 0.0
        """When (wall clock) the subscription broke; 0 while subscribed."""
        self.registered = threading.Event()
        """Set once the master registered (or re-registered) the framework."""

    # -- what the callbacks learn ----------------------------------------------------------

    def subscribed(self, driver: Any, framework_id: str, master_address: str) -> None:
        """The master registered the framework as ``framework_id``."""
        with self._lock:
            self._driver = driver
            self._framework_id = framework_id
            self._master_address = master_address
            self._away_since = None
            self.master_away_at = 0.0

    def resubscribed(self, driver: Any, master_address: str) -> None:
        """The master registered the framework again (``master_address`` "" when unknown)."""
        with self._lock:
            self._driver = driver
            self._master_address = master_address or self._master_address
            self._away_since = None
            self.master_away_at = 0.0

    def called(self, driver: Any) -> None:
        """A callback came with ``driver``."""
        self._driver = driver

    def went_away(self) -> None:
        """The subscription broke (pymesos subscribes again)."""
        with self._lock:
            if self._away_since is None:
                self._away_since = time.monotonic()
                self.master_away_at = time.time()

    # -- what the others read --------------------------------------------------------------

    def driver(self) -> Any:
        """The pymesos driver of the callbacks so far (None before the first)."""
        return self._driver

    def framework_id(self) -> str:
        return self._framework_id

    def master_address(self) -> str:
        """``host:port`` of the master's HTTP API ("" before registration)."""
        return self._master_address

    def away_for(self) -> float:
        """Seconds since the subscription broke and none took its place (0 while subscribed)."""
        with self._lock:
            return 0.0 if self._away_since is None else time.monotonic() - self._away_since

    # -- acting through it -----------------------------------------------------------------

    def kill(self, task_ids: Sequence[str]) -> None:
        """KILL each task (dropped before the first callback: nothing was launched)."""
        driver = self._driver
        if driver is None:
            return
        for task_id in task_ids:
            driver.killTask({"value": task_id})

    def reconcile(self, tasks: Sequence[tuple[str, str]]) -> None:
        """Explicit reconciliation of ``(task_id, agent_id)`` pairs, with their agent ids (the
        raw v1 RECONCILE: pymesos 0.3.15's ``reconcileTasks`` sends the task ids only).

        The agent id is what lets the master answer for a task it no longer holds: a task of an
        unreachable agent is TASK_UNREACHABLE with the agent id and TASK_UNKNOWN without it,
        a task its registered agent does not know TASK_GONE without it too (Mesos 1.11
        ``src/master/master.cpp`` ``Master::_reconcileTasks``, cases 3, 4 and 6). Dropped
        while no driver is subscribed, as pymesos drops it; best effort while the master is
        away (the next reconciliation asks again).
        """
        driver = self._driver
        if driver is None or not tasks or not self._framework_id or \
                not getattr(driver, "connected", True):
            return
        try:
            driver._send({  # noqa: SLF001 - pymesos' reconcileTasks drops agent_id
                "type": "RECONCILE",
                "framework_id": {"value": self._framework_id},
                "reconcile": {"tasks": [{"task_id": {"value": task_id},
                                         "agent_id": {"value": agent_id}}
                                        for task_id, agent_id in tasks]},
            })
        except Exception:  # noqa: BLE001 - the master is away; asked again later
            logger.warning("cannot reconcile %d task(s)", len(tasks), exc_info=True)

    def shutdown_executor(self, executor_id: str, agent_id: str) -> None:
        """SHUTDOWN an executor (pymesos 0.3.15 has no shutdownExecutor: the raw v1 call);
        best effort: a master that is away ends it with the TEARDOWN, or the executor its
        idle self."""
        driver = self._driver
        if driver is None or not self._framework_id:
            return
        try:
            driver._send({  # noqa: SLF001 - the call pymesos lacks
                "type": "SHUTDOWN",
                "framework_id": {"value": self._framework_id},
                "shutdown": {"executor_id": {"value": executor_id},
                             "agent_id": {"value": agent_id}},
            })
        except Exception:  # noqa: BLE001 - the master is away; TEARDOWN or it ends them
            logger.warning("cannot shut executor %s down", executor_id, exc_info=True)
