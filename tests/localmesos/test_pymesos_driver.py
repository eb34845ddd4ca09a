"""The embedded cluster driven by pymesos's own, unmodified ``MesosSchedulerDriver``.

Each test uses real agents running real processes; every event the master emits is checked
against the JSON shapes of Mesos' v1 scheduler API by :func:`running_cluster`. Driver calls are
made through ``DRIVER_LOCK`` (see ``cluster_support``: pymesos shares one header dict between
drivers).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
import contextlib
import http.client
import json
import os
import time
from typing import Any

from pymesos import MesosSchedulerDriver  # noqa: F401 - imported in the main thread on purpose
import pytest

from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.cluster import LocalCluster
from tests.localmesos.cluster_support import DRIVER_LOCK
from tests.localmesos.cluster_support import USER
from tests.localmesos.cluster_support import Drivers
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import RecordingScheduler
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import framework_info
from tests.localmesos.cluster_support import framework_state
from tests.localmesos.cluster_support import get_json
from tests.localmesos.cluster_support import offered
from tests.localmesos.cluster_support import running_cluster
from tests.localmesos.cluster_support import scalar
from tests.localmesos.cluster_support import wait_until


pytestmark = pytest.mark.integration  # starts processes or servers


@pytest.fixture
def clusters() -> Iterator[Callable[..., LocalCluster]]:
    with contextlib.ExitStack() as stack:
        yield lambda **kw: stack.enter_context(running_cluster(**kw))


@pytest.fixture
def drivers(clusters: Callable[..., LocalCluster]) -> Iterator[Drivers]:
    # Depends on ``clusters`` so that drivers stop before their cluster does.
    started = Drivers()
    yield started
    started.stop_all()


def _offered(
    cluster: LocalCluster, drivers: Drivers, info: dict[str, Any] | None = None
) -> tuple[RecordingScheduler, Any, dict[str, Any]]:
    """A recording scheduler on a started driver, the driver, and the first offer it gets."""
    sched = RecordingScheduler()
    driver = drivers.start(cluster, sched, info)
    return sched, driver, sched.wait_offers()[0]


def _launch(driver: Any, offer: dict[str, Any], task_id: str, command: str, **task: Any) -> None:
    """Launch one command task on ``offer`` through the driver."""
    with DRIVER_LOCK:
        driver.launchTasks(offer["id"], [command_task(offer, task_id, command, **task)])


def _read(cluster: LocalCluster, path: str) -> dict[str, Any]:
    return dict(get_json(cluster, f"/files/read?path={path}&offset=0"))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_subscribe_offer_launch_finish_and_read_sandbox(
    clusters: Callable[..., LocalCluster], drivers: Drivers
) -> None:
    cluster = clusters(agents=1, cpus=2.0, mem_mb=1024.0)
    sched = RecordingScheduler()
    driver = drivers.start(cluster, sched, framework_info("hello"))
    sched.wait(lambda: sched.framework_id)
    assert sched.calls[0][1]["version"] == "1.11.0"  # registered(masterInfo)
    offer = sched.wait_offers()[0]
    assert offered(offer, "cpus") == 2.0 and offered(offer, "mem") == 1024.0
    assert offer["hostname"] == "127.0.0.1"

    task = command_task(offer, "hello", "echo hello from $MESOS_TASK_ID; echo oops >&2")
    with DRIVER_LOCK:
        driver.launchTasks(offer["id"], [task])
    finished = sched.wait_state("hello", "TASK_FINISHED")
    assert sched.states("hello") == ["TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"]
    assert finished["agent_id"] == offer["agent_id"] and "uuid" in finished
    assert finished["source"] == "SOURCE_EXECUTOR"

    fid = sched.framework_id
    sandbox = f"/frameworks/{fid}/executors/hello/runs/latest"
    assert _read(cluster, f"{sandbox}/stdout")["data"] == "hello from hello\n"
    assert _read(cluster, f"{sandbox}/stderr")["data"] == "oops\n"
    listing = get_json(cluster, f"/files/browse?path={sandbox}")
    names = {entry["path"].rsplit("/", 1)[1] for entry in listing}
    assert {"stdout", "stderr"} <= names

    # The implicit acknowledgement of the terminal update moves the task to completed_tasks.
    def completed() -> bool:
        fw = framework_state(cluster, str(fid))
        return fw is not None and [t["id"] for t in fw["completed_tasks"]] == ["hello"]

    wait_until(completed)
    fw = framework_state(cluster, str(fid))
    assert fw is not None and fw["tasks"] == []
    assert "GPU_RESOURCES" in fw["capabilities"]  # pymesos adds it after reading /version


def test_failed_task_reports_exit_status(
    clusters: Callable[..., LocalCluster], drivers: Drivers
) -> None:
    cluster = clusters()
    sched, driver, offer = _offered(cluster, drivers)
    _launch(driver, offer, "bad", "exit 3")
    failed = sched.wait_state("bad", "TASK_FAILED")
    assert failed["message"] == "Command exited with status 3"
    assert "reason" not in failed  # src/launcher/executor.cpp reaped: no reason
    assert sched.states("bad")[:2] == ["TASK_STARTING", "TASK_RUNNING"]


def test_kill_running_task(clusters: Callable[..., LocalCluster], drivers: Drivers) -> None:
    cluster = clusters(default_kill_grace=0.5)
    sched, driver, offer = _offered(cluster, drivers)
    _launch(driver, offer, "long", "sleep 60")
    running = sched.wait_state("long", "TASK_RUNNING")
    pid = running["container_status"]["executor_pid"]
    with DRIVER_LOCK:
        driver.killTask({"value": "long"})
    killed = sched.wait_state("long", "TASK_KILLED")
    assert killed["agent_id"] == offer["agent_id"]
    wait_until(lambda: not _pid_alive(pid))


def test_invalid_tasks_get_task_error_and_stale_offers_task_lost(
    clusters: Callable[..., LocalCluster], drivers: Drivers
) -> None:
    cluster = clusters(cpus=1.0)
    sched, driver, offer = _offered(cluster, drivers)
    tasks = [
        command_task(offer, "ok", "sleep 30", cpus=0.5),
        command_task(offer, "too-big", "true", cpus=4.0),
        command_task(offer, "ok", "true", cpus=0.1),  # duplicate id
        dict(command_task(offer, "no-resources", "true"), resources=[]),
        command_task(offer, "gpu-fraction", "true", extra=[scalar("gpus", 0.5)]),
    ]
    with DRIVER_LOCK:
        driver.launchTasks(offer["id"], tasks)
    sched.wait_state("ok", "TASK_RUNNING")
    too_big = sched.wait_state("too-big", "TASK_ERROR")
    assert too_big["reason"] == "REASON_TASK_INVALID"
    assert too_big["source"] == "SOURCE_MASTER" and "uuid" not in too_big
    assert too_big["message"].startswith("Total resources cpus(*):4; mem(*):32 required by task")
    duplicate = [s for s in sched.statuses if s["state"] == "TASK_ERROR" and
                 s["task_id"]["value"] == "ok"]
    assert duplicate and duplicate[0]["message"] == "Task has duplicate ID: ok"
    assert sched.wait_state("no-resources", "TASK_ERROR")["message"] == "Task uses no resources"
    assert "unsigned integer" in sched.wait_state("gpu-fraction", "TASK_ERROR")["message"]

    # The offer is used up: launching on it again is TASK_LOST with REASON_INVALID_OFFERS.
    _launch(driver, offer, "late", "true")
    lost = sched.wait_state("late", "TASK_LOST")
    assert lost["reason"] == "REASON_INVALID_OFFERS" and "uuid" not in lost
    assert lost["message"] == f"Task launched with invalid offers: Offer {offer['id']['value']} " \
        "is no longer valid"


def test_decline_with_filter_lets_another_framework_have_the_agent(
    clusters: Callable[..., LocalCluster], drivers: Drivers
) -> None:
    cluster = clusters(agents=1)
    first = RecordingScheduler()
    driver1 = drivers.start(cluster, first, framework_info("first"))
    offer = first.wait_offers()[0]
    second = RecordingScheduler()
    drivers.start(cluster, second, framework_info("second"))
    second.wait(lambda: second.framework_id)
    assert second.offers == []  # the only agent is offered to the first framework
    with DRIVER_LOCK:
        driver1.declineOffer(offer["id"], {"refuse_seconds": 60})
    got = second.wait_offers(timeout=5)[0]
    assert got["agent_id"] == offer["agent_id"]
    time.sleep(0.5)  # several allocation intervals: the filter keeps it from the first
    assert len(first.offers) == 1


def test_drf_shares_agents_between_two_busy_frameworks(
    clusters: Callable[..., LocalCluster], drivers: Drivers
) -> None:
    cluster = clusters(agents=0)

    def busy(driver: Any, offers: list[dict[str, Any]]) -> None:
        tasks = [
            (o, command_task(o, f"t-{o['id']['value']}", "sleep 60", cpus=1.0, mem=256.0))
            for o in offers
        ]
        with DRIVER_LOCK:
            for offer, task in tasks:
                driver.launchTasks(offer["id"], [task])

    a = RecordingScheduler(busy)
    b = RecordingScheduler(busy)
    drivers.start(cluster, a, framework_info("a"), implicit_acknowledgements=False)
    drivers.start(cluster, b, framework_info("b"), implicit_acknowledgements=False)
    a.wait(lambda: a.framework_id)
    b.wait(lambda: b.framework_id)
    for _ in range(4):
        cluster.add_agent(AgentConfig(cpus=1.0, mem_mb=256.0, disk_mb=100.0))
    wait_until(lambda: len(a.offers) + len(b.offers) == 4)
    time.sleep(0.5)  # nothing more to offer: every agent is fully used
    assert len(a.offers) == 2 and len(b.offers) == 2
    state = get_json(cluster, "/master/state")
    used = {fw["name"]: fw["used_resources"]["cpus"] for fw in state["frameworks"]}
    assert used == {"a": 2.0, "b": 2.0}


def test_drf_with_role_weights(clusters: Callable[..., LocalCluster], drivers: Drivers) -> None:
    cluster = clusters(agents=0, weights={"heavy": 3.0})

    def busy(driver: Any, offers: list[dict[str, Any]]) -> None:
        with DRIVER_LOCK:
            for o in offers:
                task = command_task(o, f"t-{o['id']['value']}", "sleep 60", cpus=1.0, mem=64.0)
                driver.launchTasks(o["id"], [task])

    heavy = RecordingScheduler(busy)
    light = RecordingScheduler(busy)
    drivers.start(cluster, heavy, framework_info("heavy", role="heavy"),
                  implicit_acknowledgements=False)
    drivers.start(cluster, light, framework_info("light", role="light"),
                  implicit_acknowledgements=False)
    heavy.wait(lambda: heavy.framework_id)
    light.wait(lambda: light.framework_id)
    for _ in range(4):
        cluster.add_agent(AgentConfig(cpus=1.0, mem_mb=64.0, disk_mb=100.0))
    wait_until(lambda: len(heavy.offers) + len(light.offers) == 4)
    assert (len(heavy.offers), len(light.offers)) == (3, 1)


def test_suppress_and_revive(clusters: Callable[..., LocalCluster], drivers: Drivers) -> None:
    cluster = clusters()
    sched, driver, offer = _offered(cluster, drivers)
    with DRIVER_LOCK:
        driver.suppressOffers()
        driver.declineOffer(offer["id"], {"refuse_seconds": 0})
    time.sleep(0.6)  # six allocation intervals
    assert len(sched.offers) == 1
    with DRIVER_LOCK:
        driver.reviveOffers()
    again = sched.wait_offers(2, timeout=2)[1]
    assert again["agent_id"] == offer["agent_id"]


def test_revive_clears_decline_filters(
    clusters: Callable[..., LocalCluster], drivers: Drivers
) -> None:
    cluster = clusters()
    sched, driver, offer = _offered(cluster, drivers)
    with DRIVER_LOCK:
        driver.declineOffer(offer["id"], {"refuse_seconds": 3600})
    time.sleep(0.4)
    assert len(sched.offers) == 1
    with DRIVER_LOCK:
        driver.reviveOffers()
    sched.wait_offers(2, timeout=2)


def test_gpu_agents_only_for_gpu_capable_frameworks(
    clusters: Callable[..., LocalCluster], drivers: Drivers
) -> None:
    cluster = clusters(
        agent_configs=(
            AgentConfig(cpus=1.0, mem_mb=512.0, disk_mb=100.0, ports=((31000, 31099),)),
            AgentConfig(cpus=1.0, mem_mb=512.0, disk_mb=100.0, gpus=1, ports=((31100, 31199),)),
        )
    )
    gpu_agent = cluster.agents[1].id
    raw = RawFramework(cluster.address, name="no-gpus")
    raw.subscribe()
    sched = RecordingScheduler()
    drivers.start(cluster, sched, framework_info("pymesos"))
    sched.wait_offers()
    # The pymesos framework gets the GPU agent (it declares GPU_RESOURCES after /version);
    # the raw framework, without the capability, never sees it, even once it is free.
    wait_until(lambda: any(o["agent_id"]["value"] == gpu_agent for o in sched.offers))
    gpu_offer = next(o for o in sched.offers if o["agent_id"]["value"] == gpu_agent)
    assert offered(gpu_offer, "gpus") == 1.0
    time.sleep(0.3)
    assert all(o["agent_id"]["value"] != gpu_agent for o in raw.offers())
    raw.close()


def test_failover_keeps_tasks_and_resubscribe_gets_them_back(
    clusters: Callable[..., LocalCluster], drivers: Drivers
) -> None:
    cluster = clusters()
    sched = RecordingScheduler()
    info = framework_info("failover", failover_timeout=60.0)
    driver = drivers.start(cluster, sched, dict(info))
    offer = sched.wait_offers()[0]
    _launch(driver, offer, "keep", "sleep 60")
    pid = sched.wait_state("keep", "TASK_RUNNING")["container_status"]["executor_pid"]
    fid = str(sched.framework_id)

    driver.stop(failover=True)
    driver.join()
    wait_until(lambda: not (framework_state(cluster, fid) or {}).get("connected", True))
    fw = framework_state(cluster, fid)
    assert fw is not None and fw["offers"] == [] and fw["tasks"][0]["state"] == "TASK_RUNNING"
    assert _pid_alive(pid)

    # While disconnected, calls on its behalf are refused with 403.
    raw = RawFramework(cluster.address, framework_id=fid)
    status, _, body = raw.request(
        {"type": "REVIVE", "framework_id": {"value": fid}}, stream_id="whatever"
    )
    assert (status, body) == (403, b"Framework is not subscribed")

    again = RecordingScheduler()
    driver2 = drivers.start(cluster, again, dict(info, id={"value": fid}))
    again.wait(lambda: again.count("reregistered") or again.count("registered"))
    assert again.count("reregistered") == 1  # pymesos knew the id: a re-registration
    fw = framework_state(cluster, fid)
    assert fw is not None and fw["connected"] and fw["tasks"][0]["state"] == "TASK_RUNNING"
    with DRIVER_LOCK:
        driver2.killTask({"value": "keep"})
    again.wait_state("keep", "TASK_KILLED")
    wait_until(lambda: not _pid_alive(pid))


def test_second_stream_fails_over_the_first(
    clusters: Callable[..., LocalCluster], drivers: Drivers
) -> None:
    cluster = clusters()
    old = RawFramework(cluster.address, name="twice", failover_timeout=60.0)
    fid = old.subscribe()
    sched = RecordingScheduler()
    info = framework_info("twice", failover_timeout=60.0, id={"value": fid})
    drivers.start(cluster, sched, info)
    sched.wait(lambda: sched.count("reregistered"))
    error = old.wait_event(lambda e: e["type"] == "ERROR")
    assert error == {"type": "ERROR", "error": {"message": "Framework failed over"}}
    assert old.ended.wait(5)  # and the old stream is closed
    sched.wait_offers()  # the new connection gets the offers
    fw = framework_state(cluster, fid)
    assert fw is not None and "reregistered_time" in fw


def test_failover_timeout_removes_framework_and_kills_tasks(
    clusters: Callable[..., LocalCluster], drivers: Drivers
) -> None:
    cluster = clusters(default_kill_grace=0.5)
    info = framework_info("short", failover_timeout=0.5)
    sched, driver, offer = _offered(cluster, drivers, info)
    _launch(driver, offer, "doomed", "sleep 60")
    pid = sched.wait_state("doomed", "TASK_RUNNING")["container_status"]["executor_pid"]
    fid = str(sched.framework_id)
    driver.stop(failover=True)
    driver.join()
    state = wait_until(
        lambda: (s := get_json(cluster, "/master/state"))["completed_frameworks"] and s, 15
    )
    fw = state["completed_frameworks"][0]
    assert fw["id"] == fid and fw["unregistered_time"] > 0
    task = fw["completed_tasks"][0]
    assert task["state"] == "TASK_KILLED"
    wait_until(lambda: not _pid_alive(pid))
    # The agent forgets the task once it has reaped it, a moment after the process is gone.
    wait_until(lambda: cluster.agents[0].running_tasks() == [])


def test_teardown_kills_tasks(clusters: Callable[..., LocalCluster], drivers: Drivers) -> None:
    cluster = clusters(default_kill_grace=0.5)
    sched, driver, offer = _offered(cluster, drivers)
    _launch(driver, offer, "t", "sleep 60")
    pid = sched.wait_state("t", "TASK_RUNNING")["container_status"]["executor_pid"]
    fid = str(sched.framework_id)
    driver.stop()  # failover=False: TEARDOWN
    driver.join()
    fw = wait_until(lambda: get_json(cluster, "/master/state")["completed_frameworks"])[0]
    assert fw["id"] == fid and not fw["active"]
    assert [t["state"] for t in fw["completed_tasks"]] == ["TASK_KILLED"]
    wait_until(lambda: not _pid_alive(pid))


def test_reconciliation_implicit_and_explicit(
    clusters: Callable[..., LocalCluster], drivers: Drivers
) -> None:
    cluster = clusters()
    sched, driver, offer = _offered(cluster, drivers)
    _launch(driver, offer, "r1", "sleep 30")
    sched.wait_state("r1", "TASK_RUNNING")

    def reconciled(task_id: str) -> list[dict[str, Any]]:
        return [
            s for s in sched.statuses
            if s["task_id"]["value"] == task_id and s.get("reason") == "REASON_RECONCILIATION"
        ]

    with DRIVER_LOCK:
        driver.reconcileTasks([])
    implicit = sched.wait(lambda: reconciled("r1"))[0]
    assert implicit["state"] == "TASK_RUNNING" and "uuid" not in implicit
    assert implicit["source"] == "SOURCE_MASTER"
    assert implicit["message"] == "Reconciliation: Latest task state"
    assert implicit["agent_id"] == offer["agent_id"]

    with DRIVER_LOCK:
        driver.reconcileTasks([{"task_id": {"value": "r1"}}, {"task_id": {"value": "ghost"}}])
    sched.wait(lambda: len(reconciled("r1")) == 2)
    ghost = sched.wait(lambda: reconciled("ghost"))[0]
    assert ghost["state"] == "TASK_LOST" and "uuid" not in ghost
    assert ghost["message"] == "Reconciliation: Task is unknown"

    # Killing an unknown task is answered by reconciliation, too.
    with DRIVER_LOCK:
        driver.killTask({"value": "phantom"})
    assert sched.wait(lambda: reconciled("phantom"))[0]["state"] == "TASK_LOST"


def test_credentials_required_when_configured(
    clusters: Callable[..., LocalCluster], drivers: Drivers
) -> None:
    cluster = clusters(credentials={"alice": "s3cret"})
    body = json.dumps(
        {"type": "SUBSCRIBE", "subscribe": {"framework_info": {"user": USER, "name": "x"}}}
    )
    host, port = cluster.address.split(":")
    for auth in (None, ("alice", "wrong"), ("bob", "s3cret")):
        raw = RawFramework(cluster.address, auth=auth)
        status, headers, _ = raw.request(body.encode(), stream_id=False)
        assert status == 401
        assert headers["www-authenticate"] == 'Basic realm="mesos-master-scheduler"'
        raw.close()
    # Read-only endpoints stay open, as with --authenticate_http_frameworks only.
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    conn.request("GET", "/version")
    assert conn.getresponse().status == 200
    conn.close()

    sched = RecordingScheduler()
    driver = drivers.start(
        cluster, sched, framework_info("auth", principal="alice"), principal="alice",
        secret="s3cret",
    )
    offer = sched.wait_offers()[0]
    _launch(driver, offer, "authed", "true")
    sched.wait_state("authed", "TASK_FINISHED")
    fw = framework_state(cluster, str(sched.framework_id))
    assert fw is not None and fw["principal"] == "alice"


def test_status_updates_wait_for_reconnected_framework(
    clusters: Callable[..., LocalCluster], drivers: Drivers
) -> None:
    """A task that finishes while its framework is away is reported after it comes back,
    and its resources are recovered at once from the agent's latest state."""
    cluster = clusters(cpus=1.0, status_update_retry_interval=30.0,
                       status_update_retry_interval_max=60.0)
    sched = RecordingScheduler()
    info = framework_info("away", failover_timeout=60.0)
    driver = drivers.start(cluster, sched, dict(info))
    offer = sched.wait_offers()[0]
    _launch(driver, offer, "quick", "sleep 0.5", cpus=1.0)
    sched.wait_state("quick", "TASK_RUNNING")
    fid = str(sched.framework_id)
    driver.stop(failover=True)
    driver.join()

    # The task finishes meanwhile: its update cannot be delivered, but the master learns the
    # state and recovers the resources.
    def finished_in_master() -> bool:
        fw = framework_state(cluster, fid)
        return fw is not None and fw["tasks"][0]["state"] == "TASK_FINISHED"

    wait_until(finished_in_master, timeout=5)
    fw = framework_state(cluster, fid)
    assert fw is not None and fw["used_resources"]["cpus"] == 0 and not fw["connected"]
    again = RecordingScheduler()
    drivers.start(cluster, again, dict(info, id={"value": fid}))
    # Re-subscribing makes the agent resend at once (not after the 30 s retry interval).
    again.wait_state("quick", "TASK_FINISHED", timeout=5)

