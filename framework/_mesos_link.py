"""The framework's link to its Mesos master, as every part that acts through it sees it.

The pymesos scheduler's callbacks (``framework/_scheduler.py``) write it: the driver they are
called with, the FrameworkID and the master's HTTP address once registered, and when the
subscription broke; the driver (``framework/_scheduler_driver.py``) tells it of every event it
hears, the heartbeats included. Everyone else reads it through its methods — the runner's parts
get them before anything is subscribed (``framework_id`` as a getter, ``kill`` as a function),
so nothing needs the scheduler to exist first. Before the first callback there is no driver to
act with: kills and calls are dropped, as nothing was launched yet.

The master is away from the last event heard: once the stream broke, or once it has been silent
for :data:`~common.heartbeats.HEARTBEAT_MISSES` heartbeat intervals (the one SUBSCRIBED
announced; ``common/heartbeats.py``), a frozen master whose connection stays open. The run loop
(:meth:`check_heartbeats`) then drops such a stream, and pymesos subscribes again.
"""

from __future__ import annotations

from collections.abc import Sequence
import logging
import threading
import time
from typing import Any

from disauto.common.heartbeats import HeartbeatWatch


logger = logging.getLogger(__name__)


class MesosLink:
    """One framework's subscription.

    Args:
        framework_id: the FrameworkID to subscribe with (a resumed job's, for Mesos failover);
            "" for a new framework.
        watch: when the master was last heard from (by default its own, on the monotonic
            clock; a test's with its own clock).
    """

    def __init__(self, framework_id: str = "", watch: HeartbeatWatch | None = None) -> None:
        self._lock = threading.Lock()
        self._driver: Any = None
        self._framework_id = framework_id
        self._master_address = ""
        self._away_since: float | None = None
        self._away_at = 0.0
        self._heard_at = 0.0
        self._watch = watch if watch is not None else HeartbeatWatch()
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
            self._away_at = 0.0

    def resubscribed(self, driver: Any, master_address: str) -> None:
        """The master registered the framework again (``master_address`` "" when unknown)."""
        with self._lock:
            self._driver = driver
            self._master_address = master_address or self._master_address
            self._away_since = None
            self._away_at = 0.0

    def called(self, driver: Any) -> None:
        """A callback came with ``driver``."""
        self._driver = driver

    def heard(self, heartbeat_interval: float | None = None) -> None:
        """The master sent an event (a HEARTBEAT or any other); SUBSCRIBED with the heartbeat
        interval it announced."""
        self._watch.expect(heartbeat_interval)
        self._watch.heard()
        self._heard_at = time.time()

    def went_away(self) -> bool:
        """The subscription broke (pymesos subscribes again): the master is away since the
        last event heard from it. Whether it was not away already (a master that redirects
        pymesos to itself, as a restarted one does while ZooKeeper still holds its old
        session's znode, breaks it thousands of times before a leader is elected)."""
        with self._lock:
            if self._away_since is not None:
                return False
            heard = self._watch.last_heard()
            if heard is None:
                self._away_since, self._away_at = self._watch.now(), time.time()
            else:
                self._away_since, self._away_at = heard, self._heard_at
            return True

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
        """Seconds the master has been away: since the last event heard, once the subscription
        broke and none took its place, or once it has been silent for too many heartbeats (0
        while subscribed and heard from)."""
        with self._lock:
            if self._away_since is not None:
                return max(0.0, self._watch.now() - self._away_since)
        return self._watch.silent_for() if self._watch.lost() else 0.0

    @property
    def master_away_at(self) -> float:
        """When (wall clock) the master went away (see :meth:`away_for`); 0 while it is not."""
        with self._lock:
            if self._away_since is not None:
                return self._away_at
        return self._heard_at if self._watch.lost() else 0.0

    def check_heartbeats(self) -> bool:
        """Drop the event stream of a master silent for too many heartbeats, so that pymesos
        subscribes again (at most once every that many heartbeats); whether it did.

        A driver's call to a frozen master holds its lock until the call times out (10 s in
        pymesos), so the drop is asked for in a thread of its own.
        """
        driver = self._driver
        drop = getattr(driver, "drop_stream", None)
        if drop is None or not self._watch.overdue():
            return False
        self._watch.dropped()
        logger.warning("nothing heard from the Mesos master for %.0fs (%d heartbeats of %gs): "
                       "closing the connection and subscribing again",
                       self._watch.silent_for(), self._watch.misses, self._watch.interval)
        threading.Thread(target=drop, name="drop-stream", daemon=True).start()
        return True

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
