"""Reliable task status updates: one ordered stream per task, retried until acknowledged.

This is the embedded agent's version of Mesos' task status update manager
(apache/mesos ``src/slave/task_status_update_manager.cpp``):

* Each task has one stream. Only its head is in flight: it is sent at once, then re-sent after
  ``retry_interval`` seconds, the interval doubling up to ``retry_interval_max`` (Mesos: 10 s to
  10 min), until an acknowledgement carrying the head's uuid arrives. Then the next queued
  update becomes the head and is sent.
* An acknowledgement for an unknown stream, of a uuid other than the head's, or a duplicate,
  is refused (``acknowledge`` returns ``False``), as Mesos refuses "Duplicate task status
  acknowledgement".
* Once the terminal update of a task is acknowledged, its stream is removed.

Thread safety: every method may be called from any thread. All sends happen on one dispatcher
thread, in order, and **never while a lock of this module is held**, so ``send`` may call back
into :meth:`StatusUpdateManager.acknowledge` (the embedded master does). Because one thread
sends, an update is never delivered before the one queued ahead of it in its stream.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
import copy
from dataclasses import dataclass
from dataclasses import field
import logging
import threading
import time
from typing import Any


logger = logging.getLogger(__name__)

#: States after which Mesos never sends another update for the task.
TERMINAL_STATES = frozenset(
    {
        "TASK_FINISHED",
        "TASK_FAILED",
        "TASK_KILLED",
        "TASK_ERROR",
        "TASK_LOST",
        "TASK_DROPPED",
        "TASK_GONE",
        "TASK_GONE_BY_OPERATOR",
    }
)

StreamKey = tuple[str, str]  # (framework id, task id)


@dataclass
class _Stream:
    pending: deque[dict[str, Any]] = field(default_factory=deque)
    next_send: float = 0.0  # monotonic time at which the head is (re)sent
    interval: float = 0.0  # wait after the next send
    sends: int = 0  # how often the current head has been sent


class StatusUpdateManager:
    """Per-task status-update streams with at-least-once, in-order delivery.

    Args:
        send: called with each status dict to deliver (on the dispatcher thread, no lock held).
            An exception it raises is logged and the update is retried on schedule.
        retry_interval: seconds before the first re-send of an unacknowledged head.
        retry_interval_max: cap of the doubling re-send interval.
        on_terminal_acknowledged: called with ``(framework_id, task_id)`` once the terminal
            update of a task has been acknowledged and its stream removed (no lock held).
        name: name of the dispatcher thread.
        paused: start without sending (an agent that recovers sends once it re-registered).

    Raises:
        ValueError: when an interval is not positive or the maximum is below the minimum.
    """

    def __init__(
        self,
        send: Callable[[dict[str, Any]], None],
        *,
        retry_interval: float = 10.0,
        retry_interval_max: float = 600.0,
        on_terminal_acknowledged: Callable[[str, str], None] | None = None,
        name: str = "status-updates",
        paused: bool = False,
    ) -> None:
        if retry_interval <= 0 or retry_interval_max < retry_interval:
            raise ValueError(
                f"invalid retry intervals {retry_interval} .. {retry_interval_max}: need "
                "0 < retry_interval <= retry_interval_max"
            )
        self._send = send
        self._retry_interval = retry_interval
        self._retry_interval_max = retry_interval_max
        self._on_terminal_acknowledged = on_terminal_acknowledged
        self._cond = threading.Condition()
        self._streams: dict[StreamKey, _Stream] = {}
        self._stopped = False
        self._paused = paused
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    # -- producer side -------------------------------------------------------------------

    def update(self, framework_id: str, task_id: str, status: dict[str, Any]) -> None:
        """Queue ``status`` (which must carry a ``uuid``) on the task's stream.

        Raises:
            ValueError: when ``status`` has no ``uuid``: only acknowledgeable updates belong
                in a stream.
        """
        if not status.get("uuid"):
            raise ValueError("a status update in a stream needs a 'uuid'")
        with self._cond:
            if self._stopped:
                logger.debug("Dropping %s for task %s: updates stopped", status["state"], task_id)
                return
            stream = self._streams.setdefault((framework_id, task_id), _Stream())
            stream.pending.append(status)
            if len(stream.pending) == 1:
                self._make_due(stream)
                self._cond.notify_all()

    def acknowledge(self, framework_id: str, task_id: str, uuid_b64: str) -> bool:
        """Acknowledge the head of a task's stream.

        Returns:
            ``True`` when ``uuid_b64`` is the head's uuid (the next update is then sent);
            ``False`` for an unknown task or any other uuid (e.g. a duplicate ack).
        """
        removed = False
        with self._cond:
            key = (framework_id, task_id)
            stream = self._streams.get(key)
            if stream is None or not stream.pending or stream.pending[0]["uuid"] != uuid_b64:
                logger.debug("Refusing acknowledgement %s for task %s", uuid_b64, task_id)
                return False
            head = stream.pending.popleft()
            if stream.pending:
                self._make_due(stream)
                self._cond.notify_all()
            elif head["state"] in TERMINAL_STATES:
                del self._streams[key]
                removed = True
        if removed and self._on_terminal_acknowledged is not None:
            self._on_terminal_acknowledged(framework_id, task_id)
        return True

    def resend(self, framework_id: str | None = None) -> int:
        """Send the head of every stream (of one framework, or all) now; reset their backoff.

        Returns:
            How many heads were scheduled.
        """
        count = 0
        with self._cond:
            for (fid, _), stream in self._streams.items():
                if stream.pending and (framework_id is None or fid == framework_id):
                    self._make_due(stream)
                    count += 1
            self._cond.notify_all()
        return count

    def pause(self) -> None:
        """Stop sending (the master is gone: ``TaskStatusUpdateManager::pause``); updates
        keep being queued."""
        with self._cond:
            self._paused = True

    def resume(self) -> None:
        """Send again, every head at once (``resume``, on (re-)registration)."""
        with self._cond:
            self._paused = False
        self.resend()

    def remove_framework(self, framework_id: str) -> int:
        """Drop every stream of a framework (it was removed); returns how many were dropped."""
        with self._cond:
            keys = [key for key in self._streams if key[0] == framework_id]
            for key in keys:
                del self._streams[key]
        return len(keys)

    # -- queries -------------------------------------------------------------------------

    def pending(self, framework_id: str, task_id: str) -> list[dict[str, Any]]:
        """Copies of the task's unacknowledged updates, head first."""
        with self._cond:
            stream = self._streams.get((framework_id, task_id))
            return [dict(s) for s in stream.pending] if stream else []

    def streams(self) -> list[StreamKey]:
        """Keys of the streams that still hold unacknowledged updates."""
        with self._cond:
            return [key for key, stream in self._streams.items() if stream.pending]

    # -- lifecycle -----------------------------------------------------------------------

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop sending (nothing is sent afterwards) and join the dispatcher; idempotent."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    # -- dispatcher ----------------------------------------------------------------------

    def _make_due(self, stream: _Stream) -> None:
        stream.next_send = 0.0
        stream.interval = self._retry_interval
        stream.sends = 0

    def _take_due(self) -> list[tuple[StreamKey, dict[str, Any], int]]:
        """Under the lock: the heads due now, rescheduled with backoff; waits when none is."""
        while not self._stopped:
            if self._paused:
                self._cond.wait()
                continue
            now = time.monotonic()
            due: list[tuple[StreamKey, dict[str, Any], int]] = []
            wake: float | None = None
            for key, stream in self._streams.items():
                if not stream.pending:
                    continue
                if stream.next_send <= now:
                    stream.sends += 1
                    due.append((key, stream.pending[0], stream.sends))
                    stream.next_send = now + stream.interval
                    stream.interval = min(stream.interval * 2, self._retry_interval_max)
                if wake is None or stream.next_send < wake:
                    wake = stream.next_send
            if due:
                return due
            self._cond.wait(None if wake is None else max(0.0, wake - now))
        return []

    def _run(self) -> None:
        while True:
            with self._cond:
                due = self._take_due()
                if self._stopped:
                    return
            for (_, task_id), status, sends in due:
                if sends > 1:
                    logger.info(
                        "Resending %s for task %s (attempt %d, not yet acknowledged)",
                        status["state"],
                        task_id,
                        sends,
                    )
                try:
                    self._send(copy.deepcopy(status))
                except Exception:  # A failed send is retried like a lost one.
                    logger.exception("Sending %s for task %s failed", status["state"], task_id)
