"""What the embedded master knows of tasks, executors, offers, frameworks and agents.

Plain records, read and changed only under the master's lock (``MasterState.lock``). Invariants
the master's parts keep:

* A task stays in ``FrameworkRecord.tasks`` until its terminal update is acknowledged (or its
  framework is removed); then it moves to the bounded ``completed_tasks``. ``recovered`` turns
  true once, when its resources are given back.
* An :class:`ExecutorRecord` exists while it has a task whose resources are not recovered, or,
  for an executor the agent runs itself (``hosted``), until the agent reports its exit.
* An outstanding offer is in both ``Master.offers`` and its framework's ``offers``.
"""

from __future__ import annotations

import base64
import binascii
from collections import deque
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
import logging
import threading
import time
from typing import Any

from disauto.common.resources import RoleResources
from disauto.common.task_states import TERMINAL_TASK_STATES
from disauto.localmesos.master.agent_link import AgentLike
from disauto.localmesos.master.agent_link import AgentLink
from disauto.localmesos.master.offer_constraints import NO_CONSTRAINTS
from disauto.localmesos.master.offer_constraints import OfferConstraintsFilter
from disauto.localmesos.protocol.recordio import Subscription


logger = logging.getLogger("disauto.localmesos.master")

MESOS_VERSION = "1.11.0"

#: States after which a task never changes (TASK_LOST included, as the web UI counts it).
TERMINAL_STATES = TERMINAL_TASK_STATES
#: States only PARTITION_AWARE frameworks see; the others get TASK_LOST instead.
PARTITION_AWARE_STATES = frozenset(
    {"TASK_DROPPED", "TASK_UNREACHABLE", "TASK_GONE", "TASK_GONE_BY_OPERATOR", "TASK_UNKNOWN"}
)
#: What a 1.11 master advertises (``MasterInfo.Capability``): agents may change their
#: AgentInfo, may be drained (DRAIN_AGENT) and quota has limits (UPDATE_QUOTA).
MASTER_CAPABILITIES = ("AGENT_UPDATE", "AGENT_DRAINING", "QUOTA_V2")
#: ``AgentInfo.Capability`` types the embedded agents have.
AGENT_CAPABILITIES = ("MULTI_ROLE", "HIERARCHICAL_ROLE", "RESERVATION_REFINEMENT",
                      "AGENT_DRAINING")
#: Largest failover timer Python's ``threading`` can wait for; longer ones never fire.
MAX_TIMER = threading.TIMEOUT_MAX / 2


@dataclass
class TaskRecord:
    """A task as the master knows it (``Task`` in ``/master/state``)."""

    info: dict[str, Any]
    framework_id: str
    agent_id: str
    role: str
    resources: RoleResources
    executor_id: str = ""
    state: str = "TASK_STAGING"
    statuses: list[dict[str, Any]] = field(default_factory=list)
    status_update_state: str | None = None
    status_update_uuid: bytes | None = None
    recovered: bool = False
    group: tuple[str, ...] = ()
    seen_uuids: set[str] = field(default_factory=set)
    #: The master asked its agent to kill it (``Slave::killedTasks``): killed again if the
    #: agent re-registers with it still running.
    kill_sent: bool = False

    @property
    def task_id(self) -> str:
        return str(self.info["task_id"]["value"])


@dataclass
class ExecutorRecord:
    """A custom (or default) executor the master charged resources for."""

    info: dict[str, Any]
    agent_id: str
    role: str
    resources: RoleResources
    tasks: set[str] = field(default_factory=set)
    #: Run by the agent as a process of its own (a LAUNCH's CUSTOM executor): it holds its
    #: resources until the agent reports that it exited. Otherwise (LAUNCH_GROUP, whose tasks
    #: the agent runs as command tasks) until its last task ends.
    hosted: bool = False


@dataclass
class OfferRecord:
    """An outstanding offer."""

    offer_id: str
    framework_id: str
    agent_id: str
    role: str
    resources: RoleResources
    json: dict[str, Any]
    #: ``time.monotonic()`` when the offer was made (for ``--offer_timeout``).
    made: float = field(default_factory=time.monotonic)


@dataclass
class FrameworkRecord:
    """A framework as the master knows it."""

    framework_id: str
    info: dict[str, Any]
    roles: list[str]
    capabilities: set[str]
    registered_time: float
    subscription: Subscription | None = None
    connected: bool = False
    suppressed_roles: set[str] = field(default_factory=set)
    tasks: dict[str, TaskRecord] = field(default_factory=dict)
    completed_tasks: deque[TaskRecord] = field(default_factory=lambda: deque(maxlen=1000))
    #: Tasks of unreachable agents (TASK_UNREACHABLE, or TASK_LOST without PARTITION_AWARE):
    #: they come back if their agent re-registers.
    unreachable_tasks: dict[str, TaskRecord] = field(default_factory=dict)
    offers: dict[str, OfferRecord] = field(default_factory=dict)
    executors: dict[tuple[str, str], ExecutorRecord] = field(default_factory=dict)
    reregistered_time: float | None = None
    unregistered_time: float | None = None
    failover_deadline: float | None = None
    allocation_count: int = 0
    metrics: dict[str, int] = field(default_factory=dict)
    #: ``offer_constraints`` as subscribed (normalized JSON; ``{}`` for none) and compiled.
    offer_constraints: dict[str, Any] = field(default_factory=dict)
    constraints_filter: OfferConstraintsFilter = NO_CONSTRAINTS

    @property
    def name(self) -> str:
        return str(self.info.get("name", ""))

    @property
    def partition_aware(self) -> bool:
        return "PARTITION_AWARE" in self.capabilities

    @property
    def multi_role(self) -> bool:
        return "MULTI_ROLE" in self.capabilities

    def count(self, metric: str, n: int = 1) -> None:
        self.metrics[metric] = self.metrics.get(metric, 0) + n

    def held_by_role(self, *, offered: bool = True) -> dict[str, RoleResources]:
        """What the framework uses (tasks not yet recovered, executors) and, with
        ``offered``, is offered, by the role it was allocated to."""
        held: dict[str, RoleResources] = {}
        items = [(t.role, t.resources) for t in self.tasks.values() if not t.recovered]
        items += [(e.role, e.resources) for e in self.executors.values()]
        if offered:
            items += [(o.role, o.resources) for o in self.offers.values()]
        for role, resources in items:
            held[role] = held.get(role, RoleResources()) + resources
        return held


@dataclass
class AgentRecord:
    """An agent as the master knows it."""

    agent: AgentLike
    link: AgentLink
    info: dict[str, Any]
    registered_time: float
    total: RoleResources
    #: False once the master's connection to the agent broke (its process restarted), until it
    #: re-registers (Mesos ``Slave::connected``).
    connected: bool = True
    #: Whether the allocator offers it: connected and not deactivated (``Slave::active``).
    active: bool = True
    reregistered_time: float | None = None
    #: The IP of its libprocess pid: the master's own (every embedded agent is served on its
    #: port), or its host's.
    ip: str = "127.0.0.1"
    #: Its own libprocess pid (``slave(N)@host:port``) when it runs in another process
    #: (:class:`~localmesos.master.remote_agent.RemoteAgent`); None for an embedded agent,
    #: ``slave(N)`` of the master's address by order of registration.
    pid: str | None = None
    #: A ping is unanswered, and how many in a row were (``SlaveObserver``).
    pinged: bool = False
    ping_timeouts: int = 0
    #: ``time.monotonic()`` by which a disconnected agent must re-register.
    reregister_deadline: float | None = None
    #: When the master told it to drain (``estimated_drain_start_time``).
    drain_started: float | None = None

    @property
    def agent_id(self) -> str:
        return self.agent.id

    @property
    def machine_id(self) -> tuple[str, str]:
        """Mesos' ``MachineID`` of the agent: (its hostname, the IP of its pid). Every embedded
        agent is served at the master's address, so those differ by hostname only."""
        return (str(self.info.get("hostname", "")), self.ip)

    @property
    def has_gpus(self) -> bool:
        return self.total.scalar("gpus") > 0


# -- helpers ----------------------------------------------------------------------------------


def id_value(value: Mapping[str, Any] | None) -> str | None:
    return None if value is None else str(value["value"])


def uuid_bytes(b64: str | None) -> bytes | None:
    if not b64:
        return None
    try:
        return base64.b64decode(b64.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return None


def mesos_resources_str(resources: RoleResources) -> str:
    """Resources as Mesos stringifies them: ``cpus(*):1; mem(ml):128; ports(*):[31000-31000]``."""
    return str(resources)


def resources_of(items: Iterable[Mapping[str, Any]]) -> RoleResources:
    """Task/executor resources with their reservations (allocation info ignored)."""
    return RoleResources.from_json(items)


@dataclass
class UnreachableAgent:
    """An agent in the registry's unreachable list."""

    record: AgentRecord
    time: float
    #: framework id → ids of its tasks that were on the agent.
    tasks: dict[str, set[str]] = field(default_factory=dict)


MachineKey = tuple[str, str]


@dataclass
class Machine:
    """A machine in the maintenance schedule (``MachineInfo``)."""

    id: dict[str, str]
    mode: str = "DRAINING"
    unavailability: dict[str, Any] | None = None


@dataclass
class InverseOfferRecord:
    """An outstanding inverse offer."""

    offer_id: str
    framework_id: str
    agent_id: str
    json: dict[str, Any]
    statuses: dict[str, Any] = field(default_factory=dict)
