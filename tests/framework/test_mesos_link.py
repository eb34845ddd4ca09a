"""The framework's link to its master and the offer revival on it: what the scheduler's
callbacks learn, what the job's other parts do through it (a recording driver, no master)."""

from __future__ import annotations

import threading
import time
from typing import Any

from disauto.common.heartbeats import HeartbeatWatch
from disauto.framework._mesos_link import MesosLink
from disauto.framework._revival import REVIVE_WINDOW
from disauto.framework._revival import OfferRevival
from tests.common.test_heartbeats import Clock
from tests.framework.test_scheduler import RecordingDriver


class Driver(RecordingDriver):
    def _send(self, call: dict[str, Any]) -> None:
        self.calls.append(("send", call))


def test_nothing_acts_before_the_first_callback_then_everything_does() -> None:
    link = MesosLink("F-old")  # a resumed job's FrameworkID, known before subscribing
    assert (link.framework_id(), link.master_address(), link.driver()) == ("F-old", "", None)
    link.kill(["trial-0001"])
    link.shutdown_executor("job-slot-0", "S1")  # no driver yet: nothing was launched
    driver = Driver()
    link.subscribed(driver, "F-1", "10.0.0.1:5050")
    assert (link.framework_id(), link.master_address()) == ("F-1", "10.0.0.1:5050")
    link.kill(["trial-0001"])
    link.shutdown_executor("job-slot-0", "S1")
    assert driver.calls == [("kill", {"value": "trial-0001"}), ("send", {
        "type": "SHUTDOWN", "framework_id": {"value": "F-1"},
        "shutdown": {"executor_id": {"value": "job-slot-0"}, "agent_id": {"value": "S1"}}})]


def test_how_long_the_master_has_been_away() -> None:
    link = MesosLink()
    link.subscribed(Driver(), "F-1", "m:5050")
    assert link.away_for() == 0.0 and link.master_away_at == 0.0
    assert link.went_away()  # the scheduler says so once
    first = link.master_away_at
    time.sleep(0.05)
    assert not link.went_away()  # a second disconnect does not restart the count
    assert link.away_for() >= 0.05 and link.master_away_at == first > 0
    link.resubscribed(Driver(), "")
    assert link.away_for() == 0.0 and link.master_address() == "m:5050"
    assert link.went_away()  # away again after it came back


def test_offers_are_suppressed_once_and_revived_when_something_waits() -> None:
    link = MesosLink()
    driver = Driver()
    revival = OfferRevival(link)
    revival.wake()  # no driver yet
    link.subscribed(driver, "F-1", "m:5050")
    revival.wake()  # not suppressed, nothing declined: nothing to revive
    revival.suppress(driver, has_pending=lambda: False)
    revival.suppress(driver, has_pending=lambda: False)  # once
    revival.wake()
    assert [name for name, _ in driver.calls] == ["suppress", "revive"]
    revival.suppress(driver, has_pending=lambda: True)  # a task arrived meanwhile
    assert [name for name, _ in driver.calls][2:] == ["suppress", "revive"]


def test_a_task_waiting_just_after_a_spare_decline_revives_unless_the_job_yields() -> None:
    link = MesosLink()
    driver = Driver()
    link.subscribed(driver, "F-1", "m:5050")
    revival = OfferRevival(link)
    revival.declined_for_want_of_tasks()
    revival.wake()
    assert driver.calls == [("revive", None)]
    revival.declined_on_purpose(REVIVE_WINDOW * 2)
    revival.declined_for_want_of_tasks()
    revival.wake()  # the policy declined on purpose: its filter stands
    assert driver.calls == [("revive", None)]


def _heard_link(interval: float) -> tuple[MesosLink, Clock]:
    clock = Clock()
    link = MesosLink(watch=HeartbeatWatch(clock=clock))
    link.heard(interval)  # SUBSCRIBED announces the heartbeat interval
    link.subscribed(Driver(), "F-1", "m:5050")
    return link, clock


def test_a_master_silent_for_five_heartbeats_is_away_since_its_last_event() -> None:
    link, clock = _heard_link(2.0)
    clock.now += 6.0
    link.heard()  # a HEARTBEAT
    clock.now += 10.0
    assert link.away_for() == 0.0 and link.master_away_at == 0.0  # five heartbeats: not yet
    clock.now += 0.5
    assert link.away_for() == 10.5  # counted from the last event, not from when it was seen
    assert 0 < link.master_away_at <= time.time()
    link.heard()  # the master speaks again: a heartbeat resets it
    assert link.away_for() == 0.0 and link.master_away_at == 0.0


def test_a_broken_stream_counts_from_the_last_event_too() -> None:
    link, clock = _heard_link(15.0)
    clock.now += 12.0
    link.went_away()  # kill -9: the connection breaks 12 s after the last heartbeat
    clock.now += 3.0
    assert link.away_for() == 15.0
    link.heard(15.0)  # SUBSCRIBED again
    link.resubscribed(Driver(), "")
    assert link.away_for() == 0.0


class DroppingDriver(Driver):
    def __init__(self) -> None:
        super().__init__()
        self.drops = threading.Event()

    def drop_stream(self) -> None:
        self.calls.append(("drop", None))
        self.drops.set()


def test_the_stream_of_a_silent_master_is_dropped_once_per_five_heartbeats() -> None:
    clock = Clock()
    link = MesosLink(watch=HeartbeatWatch(clock=clock))
    driver = DroppingDriver()
    link.heard(1.0)
    link.subscribed(driver, "F-1", "m:5050")
    clock.now += 4.0
    assert not link.check_heartbeats()
    clock.now += 1.5
    assert link.check_heartbeats() and driver.drops.wait(5)
    link.went_away()  # pymesos closed it: disconnected
    assert link.away_for() == 5.5
    clock.now += 4.0
    assert not link.check_heartbeats()  # the new subscription gets its five heartbeats
    clock.now += 1.5
    assert link.check_heartbeats()
    assert link.away_for() == 11.0  # still from the last event heard


def test_without_an_announced_interval_nothing_is_ever_dropped() -> None:
    clock = Clock()
    link = MesosLink(watch=HeartbeatWatch(clock=clock))
    driver = DroppingDriver()
    link.heard()  # a SUBSCRIBED without heartbeat_interval_seconds
    link.subscribed(driver, "F-1", "m:5050")
    clock.now += 1e6
    assert not link.check_heartbeats() and link.away_for() == 0.0
