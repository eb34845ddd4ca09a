"""What an agent and the master tell each other when the agent re-registers, and how long
each waits for the other: Mesos' ``ReregisterSlaveMessage`` and ``SlaveReregisteredMessage``
(apache/mesos ``src/messages/messages.proto``) and the ping timeouts of
``src/master/constants.hpp`` / ``src/slave/constants.hpp``.

The embedded master and agents meet only here and through the cluster's callbacks: an agent
hands the master a :class:`ReregisterAgent` (its info, the tasks and executors it runs, the
checkpointing frameworks they belong to) and gets a :class:`Reregistered` back (the tasks it
must reconcile), or ``None`` when the message was lost or refused.
"""

from __future__ import annotations

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
