"""One embedded agent alone, driven as its master would: a stand-in master that records (and
acknowledges) the agent's status updates, TaskInfos and an agent on a temporary work dir.

Shared by the agent's tests and the container tests (``tests/localmesos/agent/``,
``tests/localmesos/containerizer/``).
"""

from __future__ import annotations

import os
from pathlib import Path
import pwd
import threading
import time
from typing import Any

from disauto.common.resources import Resources
from disauto.localmesos.agent.agent import Agent
from disauto.localmesos.agent.config import AgentConfig


FW = {"id": {"value": "M-0000"}, "user": pwd.getpwuid(os.geteuid()).pw_name, "name": "test"}
FID = "M-0000"


class Master:
    """Records every update the agent sends; acknowledges them when ``auto_ack``."""

    def __init__(self, auto_ack: bool = True) -> None:
        self.auto_ack = auto_ack
        self.agent: Agent | None = None
        self.updates: list[dict[str, Any]] = []
        self.cond = threading.Condition()

    def __call__(self, status: dict[str, Any]) -> None:
        with self.cond:
            self.updates.append(status)
            self.cond.notify_all()
        if self.auto_ack and self.agent is not None:
            self.agent.acknowledge(status["framework_id"]["value"], tid(status), status["uuid"])

    def of(self, task_id: str) -> list[dict[str, Any]]:
        with self.cond:
            return [u for u in self.updates if tid(u) == task_id]

    def states(self, task_id: str) -> list[str]:
        return [u["state"] for u in self.of(task_id)]

    def wait(self, task_id: str, state: str, timeout: float = 5.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for update in self.updates:
                    if tid(update) == task_id and update["state"] == state:
                        return update
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"{task_id} never reached {state}: {self.states_locked(task_id)}"
                    )
                self.cond.wait(left)

    def states_locked(self, task_id: str) -> list[str]:
        return [u["state"] for u in self.updates if tid(u) == task_id]


def tid(status: dict[str, Any]) -> str:
    return status["task_id"]["value"]


def task(task_id: str, command: str | dict[str, Any], **extra: Any) -> dict[str, Any]:
    info: dict[str, Any] = {
        "name": task_id,
        "task_id": {"value": task_id},
        "agent_id": {"value": "M-S0"},
        "resources": Resources({"cpus": 0.1, "mem": 32}).to_json(),
        "command": {"value": command} if isinstance(command, str) else command,
    }
    info.update(extra)
    return info


def make_agent(tmp_path: Path, master: Master, **kwargs: Any) -> Agent:
    config = kwargs.pop("config", AgentConfig(cpus=2, mem_mb=1024, disk_mb=1024))
    agent = Agent(
        "M-S0",
        config,
        tmp_path / "work",
        master,
        retry_interval=kwargs.pop("retry_interval", 5.0),
        retry_interval_max=kwargs.pop("retry_interval_max", 10.0),
        master_endpoint="127.0.0.1:5050",
        **kwargs,
    )
    master.agent = agent
    return agent
