"""Status-update streams: in-order, at-least-once, retried with backoff until acknowledged."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
import threading
import time
from typing import Any
import uuid

import pytest

from disauto.localmesos.agent.status_updates import StatusUpdateManager
from tests.localmesos.cluster_support import wait_until


def status(state: str, task: str = "t1") -> dict[str, Any]:
    return {"task_id": {"value": task}, "state": state, "uuid": uuid.uuid4().hex}


class Outbox:
    """Records what the manager sends, with the time of each send."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, dict[str, Any]]] = []
        self.lock = threading.Lock()
        self.on_send: Callable[[dict[str, Any]], None] | None = None

    def __call__(self, update: dict[str, Any]) -> None:
        with self.lock:
            self.sent.append((time.monotonic(), update))
        if self.on_send is not None:
            self.on_send(update)

    def states(self) -> list[str]:
        with self.lock:
            return [u["state"] for _, u in self.sent]

    def times(self) -> list[float]:
        with self.lock:
            return [t for t, _ in self.sent]


@pytest.fixture
def outbox() -> Outbox:
    return Outbox()


@pytest.fixture
def manager(outbox: Outbox) -> Iterator[StatusUpdateManager]:
    m = StatusUpdateManager(outbox, retry_interval=5.0, retry_interval_max=10.0)
    yield m
    m.stop()


def test_only_the_head_is_in_flight_until_acknowledged(
    manager: StatusUpdateManager, outbox: Outbox
) -> None:
    starting, running, finished = (
        status("TASK_STARTING"),
        status("TASK_RUNNING"),
        status("TASK_FINISHED"),
    )
    for update in (starting, running, finished):
        manager.update("F", "t1", update)

    wait_until(lambda: outbox.states() == ["TASK_STARTING"])
    time.sleep(0.05)
    assert outbox.states() == ["TASK_STARTING"]
    assert [u["state"] for u in manager.pending("F", "t1")] == [
        "TASK_STARTING",
        "TASK_RUNNING",
        "TASK_FINISHED",
    ]

    assert manager.acknowledge("F", "t1", running["uuid"]) is False  # not the head
    assert manager.acknowledge("F", "t1", starting["uuid"]) is True
    wait_until(lambda: outbox.states() == ["TASK_STARTING", "TASK_RUNNING"])
    assert manager.acknowledge("F", "t1", starting["uuid"]) is False  # duplicate
    assert manager.acknowledge("F", "t1", running["uuid"]) is True
    wait_until(lambda: outbox.states()[-1] == "TASK_FINISHED")
    assert manager.acknowledge("F", "t1", finished["uuid"]) is True
    assert manager.streams() == []
    assert manager.acknowledge("F", "t1", finished["uuid"]) is False


def test_unacknowledged_head_is_resent_with_doubling_backoff(outbox: Outbox) -> None:
    manager = StatusUpdateManager(outbox, retry_interval=0.05, retry_interval_max=0.1)
    try:
        head = status("TASK_RUNNING")
        manager.update("F", "t1", head)
        wait_until(lambda: len(outbox.sent) >= 6)
        manager.acknowledge("F", "t1", head["uuid"])
        count = len(outbox.sent)
        time.sleep(0.25)
        assert len(outbox.sent) == count  # acknowledged: no more re-sends
    finally:
        manager.stop()

    assert all(u["uuid"] == head["uuid"] for _, u in outbox.sent)
    times = outbox.times()
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)][:5]
    # Expected 0.05, then doubled to the 0.1 cap: 0.1, 0.1, 0.1, 0.1. Scheduling can only delay a
    # send, so lower bounds are tight; uncapped doubling would make the last gaps 0.4 and 0.8.
    assert gaps[0] >= 0.04
    assert all(gap >= 0.09 for gap in gaps[1:])
    assert all(gap < 0.35 for gap in gaps[2:])


def test_terminal_ack_removes_the_stream_and_reports_it(outbox: Outbox) -> None:
    forgotten: list[tuple[str, str]] = []
    manager = StatusUpdateManager(
        outbox,
        retry_interval=5.0,
        on_terminal_acknowledged=lambda f, t: forgotten.append((f, t)),
    )
    try:
        running, failed = status("TASK_RUNNING"), status("TASK_FAILED")
        manager.update("F", "t1", running)
        manager.update("F", "t1", failed)
        wait_until(lambda: len(outbox.sent) == 1)
        manager.acknowledge("F", "t1", running["uuid"])
        assert forgotten == []
        assert manager.streams() == [("F", "t1")]
        wait_until(lambda: len(outbox.sent) == 2)
        manager.acknowledge("F", "t1", failed["uuid"])
        assert forgotten == [("F", "t1")]
        assert manager.pending("F", "t1") == []
    finally:
        manager.stop()


def test_send_may_acknowledge_from_inside_the_callback(outbox: Outbox) -> None:
    manager = StatusUpdateManager(outbox, retry_interval=5.0)
    # The master acks synchronously while the update is being delivered: no deadlock, and the
    # whole stream arrives in order.
    outbox.on_send = lambda u: manager.acknowledge("F", u["task_id"]["value"], u["uuid"])
    try:
        states = ["TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"]
        for task in ("a", "b", "c"):
            for state in states:
                manager.update("F", task, status(state, task))
        wait_until(lambda: len(outbox.sent) == 9)
        for task in ("a", "b", "c"):
            with outbox.lock:
                seen = [u["state"] for _, u in outbox.sent if u["task_id"]["value"] == task]
            assert seen == states
        assert manager.streams() == []
    finally:
        manager.stop()


def test_resend_sends_one_frameworks_heads_now(outbox: Outbox) -> None:
    manager = StatusUpdateManager(outbox, retry_interval=30.0, retry_interval_max=60.0)
    try:
        manager.update("F1", "a", status("TASK_RUNNING", "a"))
        manager.update("F2", "b", status("TASK_RUNNING", "b"))
        wait_until(lambda: len(outbox.sent) == 2)
        assert manager.resend("F1") == 1
        wait_until(lambda: len(outbox.sent) == 3)
        assert outbox.sent[-1][1]["task_id"]["value"] == "a"
        assert manager.resend() == 2
        wait_until(lambda: len(outbox.sent) == 5)
    finally:
        manager.stop()


def test_a_failing_send_is_retried(outbox: Outbox) -> None:
    attempts: list[int] = []

    def flaky(update: dict[str, Any]) -> None:
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("master busy")
        outbox(update)

    manager = StatusUpdateManager(flaky, retry_interval=0.02, retry_interval_max=0.04)
    try:
        manager.update("F", "t1", status("TASK_RUNNING"))
        wait_until(lambda: len(outbox.sent) == 1)
        assert len(attempts) == 3
    finally:
        manager.stop()


def test_remove_framework_drops_its_streams(manager: StatusUpdateManager, outbox: Outbox) -> None:
    manager.update("F1", "a", status("TASK_RUNNING", "a"))
    manager.update("F2", "b", status("TASK_RUNNING", "b"))
    assert manager.remove_framework("F1") == 1
    assert manager.streams() == [("F2", "b")]


def test_stop_sends_nothing_more_and_joins(outbox: Outbox) -> None:
    manager = StatusUpdateManager(outbox, retry_interval=0.02, retry_interval_max=0.02)
    manager.update("F", "t1", status("TASK_RUNNING"))
    wait_until(lambda: len(outbox.sent) >= 1)
    manager.stop()
    manager.stop()  # idempotent
    count = len(outbox.sent)
    manager.update("F", "t2", status("TASK_RUNNING", "t2"))
    time.sleep(0.1)
    assert len(outbox.sent) == count
    assert not any(t.name == "status-updates" for t in threading.enumerate())


def test_updates_need_a_uuid_and_intervals_must_make_sense(
    manager: StatusUpdateManager,
) -> None:
    with pytest.raises(ValueError, match="uuid"):
        manager.update("F", "t1", {"state": "TASK_RUNNING"})
    with pytest.raises(ValueError, match="retry"):
        StatusUpdateManager(lambda u: None, retry_interval=0)
    with pytest.raises(ValueError, match="retry"):
        StatusUpdateManager(lambda u: None, retry_interval=5, retry_interval_max=1)
