"""Heartbeats on a Mesos event stream: when a subscriber that hears nothing counts it as lost.

A Mesos master sends its schedulers a HEARTBEAT every ``heartbeat_interval_seconds`` (the
SUBSCRIBED event says how often; ``DEFAULT_HEARTBEAT_INTERVAL``, 15 s, in apache/mesos
``src/master/constants.hpp``), and an agent its HTTP executors one every
``DEFAULT_EXECUTOR_HEARTBEAT_INTERVAL`` (30 min, ``src/slave/constants.hpp``; no flag changes
it). Mesos' scheduler API (``docs/scheduler-http-api.md``, its HEARTBEAT event) says a
subscriber that hears nothing for about 5 intervals should treat the connection as lost and
subscribe again: a master or agent that is frozen (``kill -STOP``), or cut off without the TCP
connection being closed, sends nothing and breaks nothing. pymesos 0.3.15 only calls its
heartbeat hook.

The framework (``framework/_mesos_link.py``) and a warm slot's executor (``executor/driver.py``)
each keep a :class:`HeartbeatWatch` and, once it is :meth:`~HeartbeatWatch.overdue`, hand their
pymesos driver the master's address as a :class:`SameAddress`: pymesos' I/O loop closes the
stream and subscribes again when it is told a master address that differs from the one it holds
(``pymesos/process.py`` ``Process._run``, the path a ZooKeeper leader change takes).
"""

from __future__ import annotations

from collections.abc import Callable
import threading
import time


HEARTBEAT_MISSES = 5
"""Heartbeat intervals without any event after which the stream counts as lost."""

MESOS_EXECUTOR_HEARTBEAT_INTERVAL = 30 * 60.0
"""Mesos' ``DEFAULT_EXECUTOR_HEARTBEAT_INTERVAL`` (``src/slave/constants.hpp``): what every Mesos
agent uses, a constant no flag changes."""

EXECUTOR_HEARTBEAT_ENV = "DISAUTO_EXECUTOR_HEARTBEAT_INTERVAL"
"""The executor environment variable with the agent's executor heartbeat interval (a duration).
Only the embedded agent sets it (its interval can be made shorter than Mesos' constant); a
Mesos agent does not, and the executor then expects Mesos' constant."""


class SameAddress(str):
    """A master address equal to nothing but itself.

    pymesos' I/O loop reconnects when the master it is told (``change_master``) is not equal to
    the one it holds; told the same address as a ``SameAddress`` it closes the stream and
    subscribes again to the same master. Everything else reads it as the plain string.
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    __hash__ = str.__hash__


class HeartbeatWatch:
    """When a stream was last heard from, and whether it has been silent too long.

    Args:
        interval: the heartbeat interval expected before one is announced (:meth:`expect`);
            None: none, and the stream is never overdue until one is.
        misses: heartbeat intervals of silence after which the stream is lost.
        clock: the monotonic clock (a test's).
    """

    def __init__(self, interval: float | None = None, misses: int = HEARTBEAT_MISSES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._interval = interval
        self._misses = misses
        self._heard: float | None = None
        self._dropped: float | None = None

    @property
    def interval(self) -> float | None:
        """The heartbeat interval expected (None: unknown)."""
        return self._interval

    @property
    def misses(self) -> int:
        """Heartbeat intervals of silence after which the stream is lost."""
        return self._misses

    @property
    def patience(self) -> float | None:
        """Seconds of silence after which the stream is lost (None: never)."""
        interval = self._interval
        return None if interval is None else interval * self._misses

    def now(self) -> float:
        return self._clock()

    def expect(self, interval: float | None) -> None:
        """The stream announced (or the agent told) its heartbeat interval; None or not > 0
        keeps the one expected so far."""
        if interval is not None and interval > 0:
            self._interval = float(interval)

    def heard(self) -> None:
        """An event came (a HEARTBEAT or any other)."""
        with self._lock:
            self._heard = self.now()

    def last_heard(self) -> float | None:
        """When (this watch's clock) the last event came; None before the first."""
        return self._heard

    def silent_for(self) -> float:
        """Seconds since the last event (0 before the first)."""
        heard = self._heard
        return 0.0 if heard is None else max(0.0, self.now() - heard)

    def lost(self) -> bool:
        """Whether the stream has been silent longer than :attr:`patience` since its last
        event (never before the first event, nor without an interval)."""
        patience = self.patience
        return patience is not None and self._heard is not None and \
            self.silent_for() > patience

    def overdue(self) -> bool:
        """Whether the stream should be dropped now: :meth:`lost`, and not dropped within the
        last :attr:`patience` seconds (a subscription that gets no answer is tried again at
        that pace, not at every look)."""
        if not self.lost():
            return False
        patience = self.patience or 0.0
        dropped = self._dropped
        return dropped is None or self.now() - dropped > patience

    def dropped(self) -> None:
        """The stream was dropped because it was :meth:`overdue`."""
        with self._lock:
            self._dropped = self.now()
