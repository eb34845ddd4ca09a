"""When a Mesos event stream counts as lost: the heartbeat watch (a test's clock) and the address
that makes pymesos reconnect to the same master."""

from __future__ import annotations

from disauto.common.heartbeats import HEARTBEAT_MISSES
from disauto.common.heartbeats import HeartbeatWatch
from disauto.common.heartbeats import SameAddress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_stream_silent_for_five_heartbeats_is_lost_and_any_event_resets_it() -> None:
    clock = Clock()
    watch = HeartbeatWatch(clock=clock)
    clock.now += 1000
    assert not watch.lost() and watch.silent_for() == 0.0  # nothing heard yet: registering
    watch.expect(2.0)
    watch.heard()
    assert watch.patience == HEARTBEAT_MISSES * 2.0 == 10.0
    clock.now += 10.0
    assert not watch.lost() and watch.silent_for() == 10.0  # exactly five: not yet
    clock.now += 0.5
    assert watch.lost() and watch.overdue()
    watch.heard()  # a HEARTBEAT (or any event)
    assert not watch.lost() and watch.silent_for() == 0.0


def test_no_interval_announced_means_never_lost_and_a_bad_one_is_ignored() -> None:
    clock = Clock()
    watch = HeartbeatWatch(clock=clock)
    watch.heard()
    watch.expect(None)
    watch.expect(0.0)
    clock.now += 1e6
    assert watch.interval is None and not watch.lost()
    watch.expect(15.0)  # the SUBSCRIBED of a master that announces one
    assert watch.lost()


def test_an_overdue_stream_is_dropped_once_per_patience() -> None:
    clock = Clock()
    watch = HeartbeatWatch(1.0, clock=clock)
    watch.heard()
    clock.now += 6.0
    assert watch.overdue()
    watch.dropped()
    clock.now += 4.0
    assert watch.lost() and not watch.overdue()  # the new subscription is given its time
    clock.now += 1.5
    assert watch.overdue()  # it got no answer either: subscribe again


def test_the_same_address_equals_only_itself_and_reads_as_the_address() -> None:
    again = SameAddress("127.0.0.1:5050")
    assert again != "127.0.0.1:5050" and "127.0.0.1:5050" != again
    assert again != SameAddress("127.0.0.1:5050")
    assert again == again  # noqa: PLR0124 - what pymesos compares after the reconnect
    assert again.split(":", 2) == ["127.0.0.1", "5050"] and f"{again}" == "127.0.0.1:5050"
    assert hash(again) == hash("127.0.0.1:5050")
