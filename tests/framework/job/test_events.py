"""The event log: numbered in order, read after a sequence, and a waiting watcher woken."""

from __future__ import annotations

import threading
import time

from disauto.framework._job.events import SPEC_CHANGED
from disauto.framework._job.events import EventLog


def test_events_are_numbered_in_order_and_read_after_a_sequence() -> None:
    log = EventLog(threading.RLock())
    assert log.sequence == 0 and log.after(0, timeout=0, ended=False) == []
    log.trial_changed(3)
    log.spec_changed()
    log.trial_changed(3)
    assert log.sequence == 3
    assert log.after(0, timeout=0, ended=False) == [(1, 3), (2, SPEC_CHANGED), (3, 3)]
    assert log.after(2, timeout=0, ended=False) == [(3, 3)]


def test_a_watcher_waits_for_the_next_event_under_the_jobs_lock() -> None:
    lock = threading.RLock()
    log = EventLog(lock)
    threading.Timer(0.2, log.trial_changed, args=(1,)).start()
    started = time.monotonic()
    with lock:  # the controller holds the lock while it waits; the wait releases it
        assert log.after(0, timeout=10, ended=False) == [(1, 1)]
    assert time.monotonic() - started < 5


def test_an_ended_job_does_not_wait_and_a_wake_ends_a_wait_without_an_event() -> None:
    log = EventLog(threading.RLock())
    started = time.monotonic()
    assert log.after(0, timeout=10, ended=True) == []
    threading.Timer(0.2, log.wake).start()
    assert log.after(0, timeout=10, ended=False) == []
    assert time.monotonic() - started < 5
