"""The job's event log: what WatchTrials streams to AppCore, in order.

Each change of a trial (submitted, launched, running, ended) and of the job's spec (``da-job
update``) is one event with the next sequence number; AppCore asks for the events after the last
it saw and gets each trial (or the spec) as it is *now*, so events that came together arrive as
one batch. The log waits on the job's lock (a condition of it): whoever changes the job holds
the lock, so an event and the change it announces are seen together.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from collections.abc import Iterator
import threading

from disauto.protos import framework_pb2


SPEC_CHANGED = 0
"""The event "the job's spec changed" (trial numbers start at 1)."""


class EventLog:
    """The events of one job.

    Args:
        lock: the job's lock (held by whoever emits).
    """

    def __init__(self, lock: threading.RLock) -> None:
        self._changed = threading.Condition(lock)
        # What changed at each sequence number (a trial's number or SPEC_CHANGED): event n is
        # entry n - 1, so the events after a sequence are a slice, not a scan of every event
        # (a 10,000-trial job has 50,000), and each takes 8 bytes.
        self._events = array("q")
        self._sequence = 0

    @property
    def sequence(self) -> int:
        """The last event's sequence number (0: none yet)."""
        return self._sequence

    def trial_changed(self, number: int) -> None:
        self._emit(number)

    def spec_changed(self) -> None:
        self._emit(SPEC_CHANGED)

    def wake(self) -> None:
        """Wake the waiting watchers without an event (the job ended)."""
        with self._changed:
            self._changed.notify_all()

    def after(self, sequence: int, timeout: float, ended: bool) -> list[tuple[int, int]]:
        """``(sequence, what changed)`` of the events after ``sequence``, waiting up to
        ``timeout`` seconds for one unless the job has ``ended``. Call it holding the lock."""
        with self._changed:
            if self._sequence <= sequence and not ended:
                self._changed.wait(timeout)
            start = max(0, sequence)
            return list(enumerate(self._events[start:], start + 1))

    def _emit(self, number: int) -> None:
        with self._changed:
            self._sequence += 1
            self._events.append(number)
            self._changed.notify_all()


def stream(events_after: Callable[[int, float], tuple[list[framework_pb2.TrialEvent], bool]],
           after: int, is_active: Callable[[], bool]) -> Iterator[framework_pb2.TrialEvent]:
    """WatchTrials: the events ``events_after(sequence, timeout)`` gives after ``after``, as
    they come, until the job ends or the caller goes away (``is_active()`` turns false)."""
    sequence = after
    while is_active():
        events, ended = events_after(sequence, 1.0)
        for event in events:
            sequence = event.sequence
            yield event
        if ended and not events:
            return
