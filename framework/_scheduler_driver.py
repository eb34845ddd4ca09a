"""The job's pymesos scheduler driver: pymesos' own, which tells the job's link of every event
it hears and can drop its event stream.

pymesos 0.3.15 reads nothing of SUBSCRIBED's ``heartbeat_interval_seconds`` and has no heartbeat
timeout: a frozen master, whose connection stays open, is never noticed. This driver hands every
event, heartbeats included, to :meth:`MesosLink.heard` first (SUBSCRIBED with its interval),
and :meth:`drop_stream` closes the stream the way pymesos does when the master changes, after
which pymesos subscribes again (``common/heartbeats.py``).

Under a ``zk://`` URL it follows the leader ZooKeeper names and no other: a master's 307 is
not followed, as Mesos' own scheduler library does not (``src/scheduler/scheduler.cpp``: "This
could happen if the detector detects a new leading master before master itself realizes it
(e.g., ZK watch delay)"). pymesos follows it, and a master that had not seen the election yet
sent it to the frozen leader it replaced, where it stayed until its heartbeats were overdue.
The SUBSCRIBE to the leader is tried again every :data:`REDIRECT_RETRY` seconds instead.

Its calls (ACCEPT, REVIVE, KILL, ...) time out after :data:`CALL_TIMEOUT`: pymesos means 10 s
(``MesosSchedulerDriver._timeout``), but its constructor's ``timeout`` (a day by default, also
how long it retries connecting) shadows it, so a call to a frozen master waited a day, holding
the driver's lock (and the job's, for a REVIVE made as AppCore submits trials) all along.
"""

from __future__ import annotations

from http.client import HTTPConnection
import logging
import threading
import time
from typing import Any

from pymesos import MesosSchedulerDriver
from pymesos.process import Process

from disauto.common.heartbeats import SameAddress
from disauto.common.zk_masters import is_zk
from disauto.common.zk_masters import leading_master
from disauto.framework._mesos_link import MesosLink


logger = logging.getLogger(__name__)

CALL_TIMEOUT = 10.0
"""Seconds a call to the master may take (connecting, sending, the answer)."""

REDIRECT_RETRY = 0.5
"""Seconds before a SUBSCRIBE that a master redirected is tried again at the leader that
ZooKeeper names (under ``zk://``)."""


class JobSchedulerDriver(MesosSchedulerDriver):  # type: ignore[misc]  # untyped
    """``MesosSchedulerDriver`` that tells ``link`` of each event it hears.

    Args:
        sched, framework, master_uri, kwargs: as ``MesosSchedulerDriver``'s.
        link: the job's link to its master.
    """

    def __init__(self, sched: Any, framework: dict[str, Any], master_uri: str, *,
                 link: MesosLink, **kwargs: Any) -> None:
        super().__init__(sched, framework, master_uri, **kwargs)
        self._link = link
        self._detector_calls = threading.local()
        self._redirects = 0

    def on_event(self, event: dict[str, Any]) -> None:
        interval = None
        if event.get("type") == "SUBSCRIBED":
            interval = (event.get("subscribed") or {}).get("heartbeat_interval_seconds")
        self._link.heard(float(interval) if isinstance(interval, (int, float)) else None)
        super().on_event(event)

    def onNewMasterDetectedMessage(self, data: Any) -> None:  # noqa: N802 - pymesos' name
        self._detector_calls.active = True
        try:
            super().onNewMasterDetectedMessage(data)
        finally:
            self._detector_calls.active = False

    def onNoMasterDetectedMessage(self) -> None:  # noqa: N802 - pymesos' name
        self._detector_calls.active = True
        try:
            super().onNoMasterDetectedMessage()
        finally:
            self._detector_calls.active = False

    def change_master(self, master: str | None) -> None:
        """The master to subscribe to: as pymesos does, except that under ``zk://`` a
        redirect (any call but the detector's) is not followed; the I/O thread, which is
        not subscribed while it is redirected, waits :data:`REDIRECT_RETRY` and subscribes
        to the detected leader again."""
        if is_zk(self.master_uri) and not getattr(self._detector_calls, "active", False):
            self._redirects += 1
            if self._redirects % 100 == 1:
                logger.info("master %s redirected the subscription to %s; subscribing to the "
                            "leader ZooKeeper names once it leads", self.master, master)
            time.sleep(REDIRECT_RETRY)
            return
        super().change_master(master)

    @property
    def redirects_ignored(self) -> int:
        """How many redirects were not followed (under ``zk://``)."""
        return self._redirects

    def _get_conn(self) -> HTTPConnection | None:
        """The calls' connection (None while not subscribed), made with :data:`CALL_TIMEOUT`."""
        made = self._conn is None
        conn: HTTPConnection | None = super()._get_conn()
        if made and conn is not None:
            conn.timeout = CALL_TIMEOUT  # read when it connects, on its first request
        return conn

    def drop_stream(self) -> None:
        """Close the event stream; pymesos subscribes again to the same master, or under a
        ``zk://`` URL to the one ZooKeeper says leads now (its backoff starts afresh). Calls
        made meanwhile fail as while disconnected. It waits for the driver's lock, which a call
        to a frozen master holds until it times out (10 s)."""
        master = self.master
        if master is None or self.aborted:
            return
        if is_zk(self.master_uri):
            # Masters elected through ZooKeeper: subscribe to the one that leads now. The one
            # that went silent may be a frozen old leader a redirect pointed at (a master that
            # had not seen the election yet redirects to the leader it knew, as Mesos' does),
            # which pymesos' detector, having fired already, would never leave.
            try:
                master = leading_master(self.master_uri, timeout=5.0) or master
            except (ValueError, ConnectionError):
                pass  # ZooKeeper out of reach: the same master again
        # Process's change_master, not the driver's: that one first asks the master's /version
        # (10 s against a frozen master) and forgets the version it knew when it gets none.
        Process.change_master(self, SameAddress(master))
