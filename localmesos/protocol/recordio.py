"""Event streams: RecordIO framing and the stream of one subscription (a scheduler's or an
executor's), as apache/mesos ``src/common/recordio.hpp`` frames them.

Nothing here blocks the side that sends: a :class:`Subscription` only queues events for the
HTTP thread that writes them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import json
import logging
import socket
import threading
import time
from typing import Any
import uuid


logger = logging.getLogger(__name__)


EventObserver = Callable[[str, dict[str, Any]], None]


def encode_record(event: Mapping[str, Any]) -> bytes:
    """One RecordIO record: ``<byte length>\\n<json>``."""
    data = json.dumps(event, separators=(",", ":")).encode("utf-8")
    return str(len(data)).encode("ascii") + b"\n" + data


class Subscription:
    """The event stream of one SUBSCRIBE connection.

    The master queues events (:meth:`send`) without ever blocking; the HTTP layer's writer takes
    them (:meth:`take`) and writes them as RecordIO inside HTTP chunks. Heartbeats are produced
    by :meth:`take` when due. :attr:`wake_fd` becomes readable whenever there is something to
    take, so the writer can ``select`` on it together with its socket.

    Args:
        framework_id: the framework the stream belongs to (may be empty for a refused
            SUBSCRIBE that only carries an ERROR).
        heartbeat_interval: seconds between HEARTBEAT events.
        observers: called with ``(framework_id, event)`` for every event sent on this stream.
        max_queued: if the writer falls this many events behind, the stream is closed as a
            slow consumer (the framework then counts as disconnected).
    """

    def __init__(
        self,
        framework_id: str,
        heartbeat_interval: float,
        observers: Sequence[EventObserver] = (),
        *,
        max_queued: int = 100_000,
    ) -> None:
        self.framework_id = framework_id
        self.stream_id = str(uuid.uuid4())
        self.heartbeat_interval = heartbeat_interval
        self._observers = list(observers)
        self._max_queued = max_queued
        self._lock = threading.Lock()
        self._records: deque[bytes] = deque()
        self._closed = False
        self._released = False
        self._wake_pending = False
        self._next_heartbeat = time.monotonic() + heartbeat_interval
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self.events_sent = 0
        #: Whether the response names the stream (Mesos sends no ``Mesos-Stream-Id`` to
        #: executors).
        self.send_stream_id = True
        #: Called by the HTTP writer when the stream ends (default: the master's
        #: ``subscription_closed``).
        self.on_closed: Callable[[Subscription], None] | None = None

    @property
    def wake_fd(self) -> int:
        """A file descriptor that is readable while events or a close are pending."""
        return self._wake_r.fileno()

    @property
    def closed(self) -> bool:
        """Whether the master has closed the stream (pending events are still written)."""
        with self._lock:
            return self._closed

    def send(self, event: dict[str, Any]) -> None:
        """Queue an event; dropped silently once the stream is closed."""
        record = encode_record(event)
        with self._lock:
            if self._closed:
                return
            if len(self._records) >= self._max_queued:
                logger.warning(
                    "Closing the event stream of framework %s: the client is %d events behind",
                    self.framework_id,
                    len(self._records),
                )
                self._closed = True
                self._records.clear()
            else:
                self._records.append(record)
                self.events_sent += 1
            self._wake()
        self._notify(event)

    def close(self) -> None:
        """End the stream after the queued events (idempotent)."""
        with self._lock:
            self._closed = True
            self._wake()

    def take(self) -> tuple[list[bytes], bool, float]:
        """Take the queued records, adding a HEARTBEAT when one is due.

        Returns:
            ``(records, closed, seconds until the next heartbeat)``.
        """
        now = time.monotonic()
        heartbeat: dict[str, Any] | None = None
        with self._lock:
            self._clear_wake()
            if not self._closed and now >= self._next_heartbeat:
                heartbeat = {"type": "HEARTBEAT"}
                self._records.append(encode_record(heartbeat))
                missed = int((now - self._next_heartbeat) // self.heartbeat_interval) + 1
                self._next_heartbeat += missed * self.heartbeat_interval
            records = list(self._records)
            self._records.clear()
            closed = self._closed
            wait = max(0.0, self._next_heartbeat - now)
        if heartbeat is not None:
            self._notify(heartbeat)
        return records, closed, wait

    def release(self) -> None:
        """Free the wake-up sockets; the writer calls this when it is done (idempotent)."""
        with self._lock:
            self._closed = True
            if self._released:
                return
            self._released = True
        self._wake_r.close()
        self._wake_w.close()

    def _wake(self) -> None:
        if not self._wake_pending and not self._released:
            self._wake_pending = True
            try:
                self._wake_w.send(b"\0")
            except OSError:
                pass

    def _clear_wake(self) -> None:
        if self._wake_pending and not self._released:
            self._wake_pending = False
            try:
                self._wake_r.recv(64)
            except OSError:
                pass

    def _notify(self, event: dict[str, Any]) -> None:
        for observer in self._observers:
            try:
                observer(self.framework_id, event)
            except Exception:  # noqa: BLE001 - an observer must not break the stream
                logger.exception("event observer failed")
