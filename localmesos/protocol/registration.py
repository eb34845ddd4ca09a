"""What an agent and the master tell each other when the agent re-registers, and how long
each waits for the other: Mesos' ``ReregisterSlaveMessage`` and ``SlaveReregisteredMessage``
(apache/mesos ``src/messages/messages.proto``) and the ping timeouts of
``src/master/constants.hpp`` / ``src/slave/constants.hpp``.

The embedded master and agents meet only here and through the cluster's callbacks: an agent
hands the master a :class:`ReregisterAgent` (its info, the tasks and executors it runs, the
checkpointing frameworks they belong to) and gets a :class:`Reregistered` back (the tasks it
must reconcile), or ``None`` when the message was lost or refused. Between processes both
travel as JSON (``to_json``/``from_json``; :mod:`localmesos.protocol.libprocess`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any


#: Mesos master ``--agent_ping_timeout`` default.
DEFAULT_AGENT_PING_TIMEOUT = 15.0
#: Mesos master ``--max_agent_ping_timeouts`` default.
DEFAULT_MAX_AGENT_PING_TIMEOUTS = 5
#: Mesos master ``--agent_reregister_timeout`` default (10 minutes).
DEFAULT_AGENT_REREGISTER_TIMEOUT = 600.0
#: Mesos master ``--registry_max_agent_age`` default (14 days).
DEFAULT_REGISTRY_MAX_AGENT_AGE = 14 * 24 * 3600.0
#: Mesos agent ``--executor_reregistration_timeout`` default.
DEFAULT_EXECUTOR_REREGISTRATION_TIMEOUT = 2.0
#: Mesos agent ``--registration_backoff_factor`` default: the first re-registration attempts
#: come within this many seconds, backing off to a minute.
REGISTRATION_BACKOFF = 1.0
REGISTRATION_BACKOFF_MAX = 60.0


@dataclass(frozen=True)
class AgentTaskReport:
    """A task the agent has (``Task`` of ``ReregisterSlaveMessage.tasks``)."""

    framework_id: str
    info: dict[str, Any]
    state: str
    executor_id: str = ""
    #: The latest status the agent holds (for its health and container status).
    status: dict[str, Any] = field(default_factory=dict)

    @property
    def task_id(self) -> str:
        return str(self.info["task_id"]["value"])

    def to_json(self) -> dict[str, Any]:
        return {"framework_id": self.framework_id, "info": self.info, "state": self.state,
                "executor_id": self.executor_id, "status": self.status}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> AgentTaskReport:
        """Raises: KeyError, TypeError, ValueError for a malformed report."""
        return cls(str(body["framework_id"]), dict(body["info"]), str(body["state"]),
                   str(body.get("executor_id", "")), dict(body.get("status") or {}))


@dataclass(frozen=True)
class ReregisterAgent:
    """An agent re-registering (after a restart, or when the master stopped pinging it)."""

    agent_id: str
    info: dict[str, Any]
    tasks: tuple[AgentTaskReport, ...] = ()
    #: ``ExecutorInfo`` of each custom executor it runs (with ``framework_id``).
    executors: tuple[dict[str, Any], ...] = ()
    #: ``FrameworkInfo`` of each framework it has tasks or executors of.
    frameworks: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"agent_id": self.agent_id, "info": self.info,
                "tasks": [task.to_json() for task in self.tasks],
                "executors": list(self.executors), "frameworks": list(self.frameworks)}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> ReregisterAgent:
        """Raises: KeyError, TypeError, ValueError for a malformed message."""
        return cls(str(body["agent_id"]), dict(body["info"]),
                   tuple(AgentTaskReport.from_json(t) for t in body.get("tasks") or ()),
                   tuple(dict(e) for e in body.get("executors") or ()),
                   tuple(dict(f) for f in body.get("frameworks") or ()))


@dataclass(frozen=True)
class Reregistered:
    """The master's answer (``SlaveReregisteredMessage``): the tasks the master knows on the
    agent that the agent did not report, to reconcile (``(framework_info, task_id)``), and
    the master's total ping timeout."""

    reconcile: tuple[tuple[dict[str, Any], str], ...] = ()
    total_ping_timeout: float = DEFAULT_AGENT_PING_TIMEOUT * DEFAULT_MAX_AGENT_PING_TIMEOUTS
    #: Set when the master refuses the agent and tells it to shut down (``ShutdownMessage``):
    #: it was marked gone, or its machine is DOWN.
    shutdown: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"reconcile": [{"framework_info": info, "task_id": task_id}
                              for info, task_id in self.reconcile],
                "total_ping_timeout": self.total_ping_timeout, "shutdown": self.shutdown}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Reregistered:
        """Raises: KeyError, TypeError, ValueError for a malformed answer."""
        return cls(tuple((dict(item["framework_info"]), str(item["task_id"]))
                         for item in body.get("reconcile") or ()),
                   float(body["total_ping_timeout"]), str(body.get("shutdown", "")))
