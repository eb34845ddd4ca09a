"""Task health checks, as Mesos 1.11's command executor runs them (``localmesos/agent/health.py``).

Facts (apache/mesos 1.11 ``src/checks/health_checker.cpp``, ``src/launcher/executor.cpp``,
``src/common/validation.cpp``, ``include/mesos/v1/mesos.proto``): updates are TASK_RUNNING again
with ``healthy`` and ``REASON_TASK_HEALTH_CHECK_STATUS_UPDATED``; healthy is reported on the
first success and the first after failures, unhealthy on every counted failure; failures in the
grace period before the first success are ignored; ``consecutive_failures`` failures kill the
task, whose TASK_KILLED carries ``healthy: false``.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from disauto.localmesos.agent.health import HealthCheck
from disauto.localmesos.agent.health import HealthChecker
from disauto.localmesos.protocol.validation import validate_health_check
from tests.localmesos.cluster_support import Drivers
from tests.localmesos.cluster_support import RawFramework
from tests.localmesos.cluster_support import RecordingScheduler
from tests.localmesos.cluster_support import command_task
from tests.localmesos.cluster_support import framework_state
from tests.localmesos.cluster_support import running_cluster


REASON = "REASON_TASK_HEALTH_CHECK_STATUS_UPDATED"


def _checker(**fields: Any) -> tuple[HealthChecker, list[tuple[bool, bool]]]:
    reports: list[tuple[bool, bool]] = []
    spec = HealthCheck(kind="COMMAND", **fields)
    checker = HealthChecker(spec, lambda: True, lambda h, k: reports.append((h, k)))
    return checker, reports


def test_defaults_are_mesos_defaults() -> None:
    spec = HealthCheck.from_json({"type": "TCP", "tcp": {"port": 1}})
    assert (spec.delay, spec.interval, spec.timeout, spec.consecutive_failures,
            spec.grace_period) == (15.0, 10.0, 20.0, 3, 10.0)


def test_results_follow_the_mesos_health_checker() -> None:
    checker, reports = _checker(grace_period=5.0, consecutive_failures=2)
    start = checker._started  # noqa: SLF001
    checker.result(False, start + 1)  # in the grace period, never healthy: ignored
    assert reports == []
    checker.result(True, start + 2)
    checker.result(True, start + 3)  # still healthy: nothing new
    assert reports == [(True, False)]
    checker.result(False, start + 4)  # the grace period only covers the start
    checker.result(False, start + 5)
    assert reports[1:] == [(False, False), (False, True)]
    checker.result(True, start + 6)
    assert reports[-1] == (True, False) and checker.failures == 0


def test_failures_after_the_grace_period_count() -> None:
    checker, reports = _checker(grace_period=0.0, consecutive_failures=1)
    checker.result(False, checker._started)  # noqa: SLF001
    assert reports == [(False, True)]


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ({}, "HealthCheck must specify 'type'"),
        ({"type": "COMMAND"}, "Expecting 'command' to be set for COMMAND health check"),
        ({"type": "COMMAND", "command": {"shell": True}},
         "Command health check must contain 'shell command'"),
        ({"type": "HTTP"}, "Expecting 'http' to be set for HTTP health check"),
        ({"type": "HTTP", "http": {"port": 1, "scheme": "ftp"}},
         "Unsupported HTTP health check scheme: 'ftp'"),
        ({"type": "HTTP", "http": {"port": 1, "path": "x"}},
         "The path 'x' of HTTP health check must start with '/'"),
        ({"type": "TCP"}, "Expecting 'tcp' to be set for TCP health check"),
        ({"type": "UNKNOWN"}, "'UNKNOWN' is not a valid health check type"),
        ({"type": "TCP", "tcp": {"port": 1}, "interval_seconds": -1},
         "Expecting 'interval_seconds' to be non-negative"),
    ],
)  # fmt: skip
def test_invalid_health_checks_have_mesos_messages(spec: dict[str, Any], error: str) -> None:
    assert validate_health_check(spec) == f"Task uses invalid health check: {error}"
    assert validate_health_check({"type": "TCP", "tcp": {"port": 1}}) is None


def _health(command: str, **fields: Any) -> dict[str, Any]:
    spec = {"type": "COMMAND", "command": {"value": command}, "delay_seconds": 0.0,
            "interval_seconds": 0.2, "grace_period_seconds": 0.0, "timeout_seconds": 5.0}
    spec.update(fields)
    return spec


@pytest.mark.integration
def test_raw_healthy_command_check_sends_one_healthy_update() -> None:
    with running_cluster() as cluster:
        fw = RawFramework(cluster.address, auto_acknowledge=True)
        try:
            fw.subscribe()
            offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
            task = command_task(offer, "fine", "sleep 30", health_check=_health("true"))
            assert fw.launch(offer, [task]) == 202
            update = fw.wait_event(lambda e: "healthy" in e.get("update", {}).get("status", {}))
            status = update["update"]["status"]
            assert status["state"] == "TASK_RUNNING" and status["healthy"] is True
            assert status["reason"] == REASON and status["source"] == "SOURCE_EXECUTOR"
            assert "uuid" in status
            state = framework_state(cluster, fw.framework_id)
            assert state is not None
            assert state["tasks"][0]["statuses"][-1]["healthy"] is True
            assert state["tasks"][0]["health_check"]["type"] == "COMMAND"
            time.sleep(1.0)  # more successful checks: no more updates
            assert len([s for s in fw.updates("fine") if "healthy" in s]) == 1
        finally:
            fw.close()


@pytest.mark.integration
@pytest.mark.parametrize(("extra", "message"), [
    ({"health_check": {"type": "TCP", "tcp": {"port": 1}},
      "container": {"type": "DOCKER", "docker": {"image": "busybox"}}},
     "localmesos runs health checks of command tasks only, not of container or custom-executor "
     "tasks (docs/local-mode.md)"),
    ({"check": {"type": "COMMAND", "command": {"command": {"value": "true"}}}},
     "localmesos does not run general checks (TaskInfo.check; docs/local-mode.md)"),
], ids=["container-health-check", "general-check"])
def test_checks_that_would_never_run_here_are_refused(extra: dict[str, Any],
                                                      message: str) -> None:
    with running_cluster() as cluster:
        fw = RawFramework(cluster.address)
        try:
            fw.subscribe()
            offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
            task = {**command_task(offer, "unchecked", "true"), **extra}
            fw.launch(offer, [task])
            status = fw.wait_event(lambda e: e["type"] == "UPDATE")["update"]["status"]
            assert (status["state"], status["message"]) == ("TASK_ERROR", message)
        finally:
            fw.close()


@pytest.mark.integration
def test_raw_invalid_health_check_is_task_error() -> None:
    with running_cluster() as cluster:
        fw = RawFramework(cluster.address)
        try:
            fw.subscribe()
            offer = fw.wait_event(lambda e: e["type"] == "OFFERS")["offers"]["offers"][0]
            task = command_task(offer, "bad", "true", health_check={"type": "TCP"})
            fw.launch(offer, [task])
            status = fw.wait_event(lambda e: e["type"] == "UPDATE")["update"]["status"]
            assert status["state"] == "TASK_ERROR"
            assert status["message"] == (
                "Task uses invalid health check: Expecting 'tcp' to be set for TCP health check")
        finally:
            fw.close()


@pytest.mark.integration
def test_pymesos_failing_check_kills_the_task_after_consecutive_failures() -> None:
    drivers = Drivers()
    with running_cluster() as cluster:
        sched = RecordingScheduler()
        try:
            driver = drivers.start(cluster, sched)
            offer = sched.wait_offers()[0]
            task = command_task(offer, "sick", "sleep 30",
                                health_check=_health("exit 1", consecutive_failures=2))
            driver.launchTasks(offer["id"], [task])
            killed = sched.wait_state("sick", "TASK_KILLED", timeout=15)
            assert killed["healthy"] is False
            health = [s for s in sched.statuses if s.get("reason") == REASON]
            assert [(s["state"], s["healthy"]) for s in health] == [
                ("TASK_RUNNING", False), ("TASK_RUNNING", False)]
        finally:
            drivers.stop_all()


@pytest.mark.integration
def test_pymesos_tcp_check_against_a_listening_port_is_healthy() -> None:
    drivers = Drivers()
    with running_cluster() as cluster:
        sched = RecordingScheduler()
        try:
            driver = drivers.start(cluster, sched)
            offer = sched.wait_offers()[0]
            port = int(cluster.address.split(":")[1])  # the master listens there
            spec = {"type": "TCP", "tcp": {"port": port}, "delay_seconds": 0.0,
                    "interval_seconds": 0.2}
            driver.launchTasks(offer["id"], [command_task(offer, "tcp", "sleep 30",
                                                          health_check=spec)])
            sched.wait(lambda: [s for s in sched.statuses if s.get("healthy") is True])
            driver.killTask({"value": "tcp"})
            killed = sched.wait_state("tcp", "TASK_KILLED")
            assert "healthy" not in killed  # killed by the framework, not by its health check
        finally:
            drivers.stop_all()
