"""The slot executor's driver without an agent: checkpointing read as Mesos means it, updates
kept until acknowledged and carried by the next SUBSCRIBE, the recovery timeout (the restart
itself, with real processes: tests/localmesos/test_agent_restart.py)."""

from __future__ import annotations

import json
import time
from typing import Any

from pymesos import Executor
import pytest

from disauto.executor.driver import CheckpointingExecutorDriver
from tests.framework.test_scheduler_driver import SilentMaster


class Recorder(Executor):  # type: ignore[misc]  # pymesos is untyped
    def __init__(self) -> None:
        self.calls: list[str] = []

    def disconnected(self, driver: Any) -> None:
        self.calls.append("disconnected")

    def shutdown(self, driver: Any) -> None:
        self.calls.append("shutdown")


def _driver(monkeypatch: pytest.MonkeyPatch, checkpoint: str, **env: str
            ) -> tuple[CheckpointingExecutorDriver, Recorder]:
    monkeypatch.setenv("MESOS_AGENT_ENDPOINT", "127.0.0.1:1")
    monkeypatch.setenv("MESOS_FRAMEWORK_ID", "fw")
    monkeypatch.setenv("MESOS_EXECUTOR_ID", "slot")
    monkeypatch.setenv("MESOS_CHECKPOINT", checkpoint)
    monkeypatch.setenv("MESOS_LOCAL", "1")  # no delayed self-kill on shutdown
    monkeypatch.setenv("MESOS_SUBSCRIPTION_BACKOFF_MAX", "1ms")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    recorder = Recorder()
    return CheckpointingExecutorDriver(recorder), recorder


def _subscribe_body(driver: CheckpointingExecutorDriver) -> dict[str, Any]:
    request = driver.gen_request().decode()
    return dict(json.loads(request.split("\r\n\r\n", 1)[1]))


def test_checkpointing_is_what_mesos_checkpoint_says(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not _driver(monkeypatch, "0")[0].checkpoint  # pymesos took "0" for true
    driver, _ = _driver(monkeypatch, "1", MESOS_RECOVERY_TIMEOUT="15mins")
    assert driver.checkpoint and driver.recovery_timeout == 900
    assert driver.backoff_max == pytest.approx(0.001)


def test_updates_wait_for_the_agent_and_go_with_the_next_subscribe(
        monkeypatch: pytest.MonkeyPatch) -> None:
    driver, _ = _driver(monkeypatch, "1")
    driver.sendStatusUpdate({"task_id": {"value": "t"}, "state": "TASK_FINISHED"})
    body = _subscribe_body(driver)
    assert body["type"] == "SUBSCRIBE"
    (update,) = body["subscribe"]["unacknowledged_updates"]
    status = update["status"]
    assert status["state"] == "TASK_FINISHED" and status["source"] == "SOURCE_EXECUTOR"
    driver.on_acknowledged({"task_id": {"value": "t"}, "uuid": status["uuid"]})
    assert _subscribe_body(driver)["subscribe"]["unacknowledged_updates"] == []


def test_an_update_made_while_subscribing_is_sent_once_subscribed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The SUBSCRIBE left without it, so the agent never saw it: once SUBSCRIBED, it is sent
    (and only it: the agent has those the SUBSCRIBE carried)."""
    driver, _ = _driver(monkeypatch, "1")
    driver.sendStatusUpdate({"task_id": {"value": "early"}, "state": "TASK_RUNNING"})
    (carried,) = _subscribe_body(driver)["subscribe"]["unacknowledged_updates"]
    driver.sendStatusUpdate({"task_id": {"value": "t"}, "state": "TASK_FINISHED"})
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(driver, "_send", sent.append)
    driver.on_subscribed({"executor_info": {"executor_id": driver.executor_id},
                          "framework_info": {"id": driver.framework_id},
                          "agent_info": {"hostname": "h"}})
    assert [s["update"]["status"]["task_id"]["value"] for s in sent] == ["t"]
    assert sent[0]["type"] == "UPDATE"
    assert carried["status"]["task_id"]["value"] == "early"
    # Both stay kept until acknowledged.
    assert len(_subscribe_body(driver)["subscribe"]["unacknowledged_updates"]) == 2


def test_without_checkpointing_an_update_without_the_agent_fails(
        monkeypatch: pytest.MonkeyPatch) -> None:
    driver, _ = _driver(monkeypatch, "0")
    with pytest.raises(RuntimeError, match="Not connected"):
        driver.sendStatusUpdate({"task_id": {"value": "t"}, "state": "TASK_RUNNING"})


def test_losing_the_agent_waits_for_it_then_gives_up(monkeypatch: pytest.MonkeyPatch) -> None:
    driver, recorder = _driver(monkeypatch, "1", MESOS_RECOVERY_TIMEOUT="50ms")
    driver._started = True  # as when running (pymesos' Process)
    driver.on_close()
    assert recorder.calls == ["disconnected"]  # and it subscribes again
    driver.on_subscribed({"executor_info": {"executor_id": {"value": "slot"}},
                          "framework_info": {"id": {"value": "fw"}}, "agent_info": {}})
    driver.on_close()
    assert recorder.calls == ["disconnected", "disconnected"]
    time.sleep(0.1)
    driver.on_close()  # still away past MESOS_RECOVERY_TIMEOUT: shut down
    assert recorder.calls[-1] == "shutdown" and driver.aborted


def test_without_checkpointing_losing_the_agent_shuts_down(
        monkeypatch: pytest.MonkeyPatch) -> None:
    driver, recorder = _driver(monkeypatch, "0")
    driver._started = True
    driver.on_close()
    assert recorder.calls == ["disconnected", "shutdown"] and driver.aborted


def test_the_executors_token_goes_with_every_call_and_leaves_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    driver, _ = _driver(monkeypatch, "1", MESOS_EXECUTOR_AUTHENTICATION_TOKEN="a.b.c")
    import os

    assert "MESOS_EXECUTOR_AUTHENTICATION_TOKEN" not in os.environ  # trials never see it
    head, _, body = driver.gen_request().decode().partition("\r\n\r\n")
    lines = head.split("\r\n")
    assert lines[0] == "POST /api/v1/executor HTTP/1.1"
    assert "Authorization: Bearer a.b.c" in lines[1:] and json.loads(body)["type"] == "SUBSCRIBE"
    sent: list[dict[str, str]] = []

    class Connection:
        def request(self, method: str, path: str, body: Any, headers: dict[str, str]) -> None:
            sent.append(dict(headers))

        def getresponse(self) -> Any:
            class Response:
                status = 202

                def read(self) -> bytes:
                    return b""
            return Response()

    monkeypatch.setattr(driver, "_get_conn", lambda: Connection())
    driver._send({"type": "MESSAGE"})  # noqa: SLF001 - pymesos' own call path
    driver._send({"type": "MESSAGE"})  # noqa: SLF001
    assert [h["Authorization"] for h in sent] == ["Bearer a.b.c"] * 2


def test_without_a_token_nothing_is_added(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MESOS_EXECUTOR_AUTHENTICATION_TOKEN", raising=False)
    driver, _ = _driver(monkeypatch, "1")
    assert b"Authorization" not in driver.gen_request()


def test_the_agent_s_heartbeat_interval_is_mesos_constant_unless_the_agent_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert _driver(monkeypatch, "1")[0].heartbeats.interval == 30 * 60  # a Mesos agent's
    driver, _ = _driver(monkeypatch, "1", DISAUTO_EXECUTOR_HEARTBEAT_INTERVAL="2secs")
    assert driver.heartbeats.interval == 2.0 and driver.heartbeats.patience == 10.0


def _silent_agent() -> SilentMaster:
    return SilentMaster(b"/api/v1/executor", [{"type": "SUBSCRIBED", "subscribed": {
        "executor_info": {"executor_id": {"value": "slot"}},
        "framework_info": {"id": {"value": "fw"}}, "agent_info": {}}}, {"type": "HEARTBEAT"}])


@pytest.mark.integration
def test_a_silent_agent_is_lost_and_a_checkpointing_executor_subscribes_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    agent = _silent_agent()
    driver, recorder = _driver(monkeypatch, "1", MESOS_AGENT_ENDPOINT=agent.address,
                               DISAUTO_EXECUTOR_HEARTBEAT_INTERVAL="100ms")
    driver.start()
    try:
        deadline = time.monotonic() + 20
        while len(agent.subscribes) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(agent.subscribes) >= 2 and "disconnected" in recorder.calls
        assert "shutdown" not in recorder.calls and driver.resubscriptions >= 1
    finally:
        driver.stop()
        driver.join()
        agent.close()


@pytest.mark.integration
def test_a_silent_agent_is_lost_and_an_executor_without_checkpointing_shuts_down(
        monkeypatch: pytest.MonkeyPatch) -> None:
    agent = _silent_agent()
    driver, recorder = _driver(monkeypatch, "0", MESOS_AGENT_ENDPOINT=agent.address,
                               DISAUTO_EXECUTOR_HEARTBEAT_INTERVAL="100ms")
    driver.start()
    try:
        deadline = time.monotonic() + 20
        while not driver.aborted and time.monotonic() < deadline:
            time.sleep(0.05)
        assert recorder.calls[:2] == ["disconnected", "shutdown"] and driver.aborted
    finally:
        driver.join()  # the I/O loop ends (pymesos' own close may say both once more)
        agent.close()
    assert set(recorder.calls) == {"disconnected", "shutdown"} and len(agent.subscribes) == 1
