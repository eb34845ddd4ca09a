"""Hostile tenants on one master: a principal cannot take, tear down or drive another's
framework (Mesos 1.11: ``Master::Http::scheduler`` in src/master/http.cpp, ``validateUpdate`` in
src/master/validation.cpp, ``Master::_subscribe`` in src/master/master.cpp).

Checked with raw HTTP (the exact statuses and messages) and with pymesos's own driver (what a
real scheduler sees).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
import contextlib
import json
from typing import Any

import pytest

from disauto.localmesos.cluster import LocalCluster
from tests.localmesos.cluster_support import DRIVER_LOCK
from tests.localmesos.cluster_support import Drivers
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import RecordingScheduler
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import framework_info
from tests.localmesos.cluster_support import framework_state
from tests.localmesos.cluster_support import running_cluster


pytestmark = pytest.mark.integration  # starts processes or servers

CREDENTIALS = {"alice": "a-secret", "bob": "b-secret"}
ALICE = ("alice", "a-secret")
BOB = ("bob", "b-secret")
CHANGED = "Changing framework's principal is not allowed."


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    with running_cluster(credentials=CREDENTIALS, heartbeat_interval=0.3) as c:
        yield c


@pytest.fixture
def alice(cluster: LocalCluster) -> Iterator[RawFramework]:
    raw = RawFramework(cluster.address, name="alice-job", auth=ALICE, principal="alice",
                       failover_timeout=60.0, auto_acknowledge=True)
    raw.subscribe()
    yield raw
    raw.close()


def _subscribe_body(info: dict[str, Any], framework_id: str) -> dict[str, Any]:
    info = dict(info, id={"value": framework_id})
    return {"type": "SUBSCRIBE", "framework_id": {"value": framework_id},
            "subscribe": {"framework_info": info}}


def _records(body: bytes) -> list[dict[str, Any]]:
    """The events of a RecordIO body (a refused subscription's whole stream)."""
    events = []
    while body:
        size, _, rest = body.partition(b"\n")
        events.append(json.loads(rest[: int(size)]))
        body = rest[int(size):]
    return events


def _refused_stream(address: str, auth: tuple[str, str] | None,
                    body: dict[str, Any]) -> list[dict[str, Any]]:
    """SUBSCRIBE expecting 200 and a stream that ends after its events; those events."""
    raw = RawFramework(address, auth=auth)
    try:
        status, _, content = raw.request(body, stream_id=False,
                                         headers={"Accept": "application/json"})
    finally:
        raw.close()
    assert status == 200, content
    return _records(content)


def _launch_sleeper(fw: RawFramework, task_id: str) -> None:
    offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
    task = command_task(offer, task_id, "sleep 30", cpus=0.5, mem=32.0)
    launch = {"type": "LAUNCH", "launch": {"task_infos": [task]}}
    assert fw.accept([offer["id"]["value"]], [launch]) == 202
    fw.wait_event(lambda e: e["type"] == "UPDATE"
                  and e["update"]["status"]["state"] == "TASK_RUNNING")


def _not_failed_over(cluster: LocalCluster, alice: RawFramework) -> None:
    fw = framework_state(cluster, str(alice.framework_id))
    assert fw is not None and fw["active"] and fw["principal"] == "alice"
    assert not alice.of_type("ERROR")
    assert not alice.ended.is_set()
    beats = len(alice.of_type("HEARTBEAT"))
    alice.wait_event(lambda e: e["type"] == "HEARTBEAT", start=len(alice.events))
    assert len(alice.of_type("HEARTBEAT")) > beats


def test_subscribe_naming_another_principal_is_refused(
    cluster: LocalCluster, alice: RawFramework
) -> None:
    """bob claiming alice's principal in FrameworkInfo: 400 from the call validation."""
    body = _subscribe_body(dict(alice.info, principal="alice"), str(alice.framework_id))
    bob = RawFramework(cluster.address, auth=BOB)
    status, _, content = bob.request(body, stream_id=False,
                                     headers={"Accept": "application/json"})
    bob.close()
    assert status == 400
    assert content.decode() == (
        "Failed to validate scheduler::Call: Authenticated principal 'bob' does not match "
        "principal 'alice' set in `FrameworkInfo`"
    )
    _not_failed_over(cluster, alice)


@pytest.mark.parametrize("principal", ["bob", None])
def test_resubscribe_with_another_principal_is_an_error_not_a_failover(
    cluster: LocalCluster, alice: RawFramework, principal: str | None
) -> None:
    """bob with alice's id, as himself (or naming no principal, which becomes his)."""
    _launch_sleeper(alice, "alices-task")
    info = {k: v for k, v in alice.info.items() if k != "principal"}
    if principal is not None:
        info["principal"] = principal
    events = _refused_stream(cluster.address, BOB, _subscribe_body(info, str(alice.framework_id)))
    assert events == [{"type": "ERROR", "error": {"message": CHANGED}}]
    _not_failed_over(cluster, alice)
    fw = framework_state(cluster, str(alice.framework_id))
    assert fw is not None and [t["state"] for t in fw["tasks"]] == ["TASK_RUNNING"]


def test_resubscribe_changing_the_principal_without_authentication(
    running: Callable[..., LocalCluster],
) -> None:
    """No credentials on the master: the principal in FrameworkInfo still cannot change."""
    cluster = running()
    owner = RawFramework(cluster.address, name="owner", principal="alice", failover_timeout=60.0)
    fid = owner.subscribe()
    for changed in ({**owner.info, "principal": "bob"},
                    {k: v for k, v in owner.info.items() if k != "principal"}):
        events = _refused_stream(cluster.address, None, _subscribe_body(changed, fid))
        assert events == [{"type": "ERROR", "error": {"message": CHANGED}}]
    assert not owner.of_type("ERROR")
    # The same principal fails over as before.
    again = RawFramework(cluster.address, name="owner", framework_id=fid, principal="alice",
                         failover_timeout=60.0)
    assert again.subscribe() == fid
    owner.wait_event(lambda e: e["type"] == "ERROR")
    assert owner.of_type("ERROR")[0]["error"]["message"] == "Framework failed over"
    assert again.call("TEARDOWN") == 202
    again.close()
    owner.close()


def test_calls_on_another_principals_framework_are_refused(
    cluster: LocalCluster, alice: RawFramework
) -> None:
    """TEARDOWN (and any call) by bob, with or without alice's stream id: 400, nothing done."""
    _launch_sleeper(alice, "alices-task")
    fid = str(alice.framework_id)
    bob = RawFramework(cluster.address, auth=BOB, framework_id=fid)
    mismatch = (
        "Authenticated principal 'bob' does not match principal 'alice' set in `FrameworkInfo`"
    )
    for stream_id in (False, str(alice.stream_id)):
        for kind in ("TEARDOWN", "REVIVE", "SUPPRESS"):
            status, _, content = bob.request({"type": kind, "framework_id": {"value": fid}},
                                             stream_id=stream_id)
            assert (status, content.decode()) == (400, mismatch)
    bob.close()
    _not_failed_over(cluster, alice)
    fw = framework_state(cluster, fid)
    assert fw is not None and [t["state"] for t in fw["tasks"]] == ["TASK_RUNNING"]


def test_alices_own_calls_need_her_current_stream_id(
    cluster: LocalCluster, alice: RawFramework
) -> None:
    fid = str(alice.framework_id)
    teardown = {"type": "TEARDOWN", "framework_id": {"value": fid}}
    status, _, content = alice.request(teardown, stream_id=False)
    assert (status, content.decode()) == (
        400, "All non-subscribe calls should include the 'Mesos-Stream-Id' header")
    status, _, content = alice.request(teardown, stream_id="not-the-stream")
    assert (status, content.decode()) == (
        400, "The stream ID 'not-the-stream' included in this request didn't match the stream "
        f"ID currently associated with framework ID {fid}")
    _not_failed_over(cluster, alice)
    assert alice.request(teardown)[0] == 202
    fw = framework_state(cluster, fid)
    assert fw is None or not fw["active"]


def test_an_authenticated_framework_gets_its_principal(cluster: LocalCluster) -> None:
    """A FrameworkInfo without a principal takes the authenticated one (Mesos sets it)."""
    raw = RawFramework(cluster.address, name="silent", auth=ALICE)
    fid = raw.subscribe()
    fw = framework_state(cluster, fid)
    assert fw is not None and fw["principal"] == "alice"
    assert raw.call("TEARDOWN") == 202
    raw.close()


def test_update_framework_cannot_change_the_principal(
    cluster: LocalCluster, alice: RawFramework
) -> None:
    info = dict(alice.info, id={"value": alice.framework_id}, principal="bob")
    status, _, content = alice.request({
        "type": "UPDATE_FRAMEWORK", "framework_id": {"value": alice.framework_id},
        "update_framework": {"framework_info": info},
    })
    # The authenticated principal (alice) is checked against the framework's, not the update's.
    assert (status, content.decode()) == (
        400, f"FrameworkInfo update is not valid: {CHANGED}")


def test_pymesos_driver_of_another_principal_cannot_take_a_framework(
    cluster: LocalCluster, drivers: Drivers
) -> None:
    """pymesos's driver: alice's job keeps running and finishes, bob only gets ERRORs."""
    owner = RecordingScheduler()
    driver = drivers.start(cluster, owner, framework_info("alice-job", principal="alice",
                                                          failover_timeout=60.0),
                           principal="alice", secret="a-secret")
    offer = owner.wait_offers()[0]
    with DRIVER_LOCK:
        driver.launchTasks(offer["id"], [command_task(offer, "work", "sleep 1.5")])
    owner.wait_state("work", "TASK_RUNNING")
    fid = str(owner.framework_id)

    thief = RecordingScheduler()
    stolen = drivers.start(cluster, thief, framework_info("alice-job", id={"value": fid},
                                                          failover_timeout=60.0),
                           principal="bob", secret="b-secret")
    thief.wait(lambda: thief.errors)
    stolen.stop(failover=True)  # pymesos would otherwise subscribe again, and be refused again
    stolen.join()
    assert set(thief.errors) == {CHANGED}
    assert thief.framework_id is None and thief.count("registered") == 0

    owner.wait_state("work", "TASK_FINISHED", timeout=15)
    assert not owner.errors
    fw = framework_state(cluster, fid)
    assert fw is not None and fw["active"] and fw["principal"] == "alice"


@pytest.fixture
def running() -> Iterator[Callable[..., LocalCluster]]:
    with contextlib.ExitStack() as stack:
        yield lambda **kw: stack.enter_context(running_cluster(**kw))


@pytest.fixture
def drivers(cluster: LocalCluster) -> Iterator[Drivers]:
    started = Drivers()
    yield started
    started.stop_all()

