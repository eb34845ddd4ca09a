"""What the embedded master knows: one declared state object that every part of it receives.

:class:`~localmesos.master.master.Master` owns one :class:`MasterState` and hands it to each of
its parts (:mod:`localmesos.master.parts` names them and what they offer one another). A part
reads any field; the field's comment names the part that writes it. ``lock`` guards every
mutable field: a part takes it before it reads or writes one, and never blocks under it (calls
into agents are posted to their :class:`~localmesos.master.agent_link.AgentLink`, events are
queued on subscriptions). The configuration fields are set once, before anything runs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
import random
import threading
import time
from typing import Any

from disauto.common.resources import Resources
from disauto.localmesos.master import allocator as alloc
from disauto.localmesos.master.allocation_loop import AllocationLoop
from disauto.localmesos.master.authorizer import Acls
from disauto.localmesos.master.offer_filters import InverseOfferFilters
from disauto.localmesos.master.quota import Quota
from disauto.localmesos.master.records import AgentRecord
from disauto.localmesos.master.records import FrameworkRecord
from disauto.localmesos.master.records import InverseOfferRecord
from disauto.localmesos.master.records import Machine
from disauto.localmesos.master.records import MachineKey
from disauto.localmesos.master.records import OfferRecord
from disauto.localmesos.master.records import UnreachableAgent
from disauto.localmesos.protocol import registration
from disauto.localmesos.protocol.recordio import EventObserver


@dataclass(eq=False)
class MasterState:
    """The master's configuration and tables (see the module docstring for the lock).

    Writers, by part: ``subscriptions`` (frameworks added, failed over, disconnected;
    ``next_framework``), ``calls`` and ``launch`` (framework suppression, filters, tasks of
    frameworks), ``tasks`` (tasks, offers and frameworks removed: ``completed_frameworks``,
    ``removed_ids``), ``allocation`` (``offers``, ``next_offer`` and the allocation
    counters), ``quota`` (``quotas``), ``maintenance`` (``schedule``, ``machines``,
    ``inverse_*``), ``drain`` (``draining``, ``deactivated``), ``partitions`` (``agents``,
    ``agent_slots``, ``unreachable``, ``gone``); the façade :class:`Master` (``hostname``,
    ``port``, ``next_agent``, ``started``, ``stopped``, ``observers``), an elected master
    (``localmesos/elected.py``: ``elected``, ``leader_address``, ``recovering``,
    ``commit_registry``) and the registrar it recovers with (``recovered_*`` and the tables of
    the registry). Every part counts into ``metrics``.
    """

    # -- configuration (the constructor's arguments; fixed once the master runs) --------------
    allocation_interval: float = 1.0
    heartbeat_interval: float = 15.0
    weights: dict[str, float] = field(default_factory=dict)
    min_allocatable: tuple[Resources, ...] = alloc.DEFAULT_MIN_ALLOCATABLE
    max_completed_tasks_per_framework: int = 1000
    max_failover_timeout: float | None = None
    authenticate: bool = False
    acls: Acls = field(default_factory=Acls)
    extra_flags: dict[str, str] = field(default_factory=dict)
    offer_timeout: float | None = None
    agent_ping_timeout: float = registration.DEFAULT_AGENT_PING_TIMEOUT
    max_agent_ping_timeouts: int = registration.DEFAULT_MAX_AGENT_PING_TIMEOUTS
    agent_reregister_timeout: float = registration.DEFAULT_AGENT_REREGISTER_TIMEOUT
    registry_max_agent_age: float = registration.DEFAULT_REGISTRY_MAX_AGENT_AGE
    rng: random.Random = field(default_factory=random.Random)
    max_completed_frameworks: int = 50
    # -- identity and lifecycle (the façade) ---------------------------------------------------
    lock: threading.RLock = field(default_factory=threading.RLock)
    master_id: str = ""
    hostname: str = "127.0.0.1"
    port: int = 0
    start_time: float = field(default_factory=time.time)
    started: bool = False
    stopped: bool = False
    #: Called with every event sent to any framework (``Master.add_event_observer``).
    observers: list[EventObserver] = field(default_factory=list)
    next_agent: int = 0
    #: The allocation loop (made by the façade around ``allocation.allocate``).
    loop: AllocationLoop = field(init=False)
    # -- frameworks, agents, offers, tasks -----------------------------------------------------
    frameworks: dict[str, FrameworkRecord] = field(default_factory=dict)
    completed_frameworks: deque[FrameworkRecord] = field(init=False)
    agents: dict[str, AgentRecord] = field(default_factory=dict)
    offers: dict[str, OfferRecord] = field(default_factory=dict)
    filters: alloc.OfferFilters = field(default_factory=alloc.OfferFilters)
    metrics: dict[str, float] = field(default_factory=dict)
    next_framework: int = 0
    next_offer: int = 0
    #: Ids of removed frameworks: they may not subscribe again.
    removed_ids: set[str] = field(default_factory=set)
    allocation_runs: int = 0
    last_allocation_ms: float = 0.0
    #: Durations (ms) of the most recent allocation runs, for timer percentiles.
    allocation_run_ms: deque[float] = field(default_factory=lambda: deque(maxlen=1000))
    # -- the registry and beside it ------------------------------------------------------------
    quotas: dict[str, Quota] = field(default_factory=dict)
    schedule: dict[str, Any] = field(default_factory=dict)
    machines: dict[MachineKey, Machine] = field(default_factory=dict)
    inverse_offers: dict[str, InverseOfferRecord] = field(default_factory=dict)
    inverse_statuses: dict[str, dict[str, Any]] = field(default_factory=dict)
    inverse_filters: InverseOfferFilters = field(default_factory=InverseOfferFilters)
    unreachable: dict[str, UnreachableAgent] = field(default_factory=dict)
    gone: dict[str, float] = field(default_factory=dict)
    draining: dict[str, dict[str, Any]] = field(default_factory=dict)
    deactivated: set[str] = field(default_factory=set)
    #: Agent ids in order of first registration: ``/slave(N)`` is the N-th, for good.
    agent_slots: list[str] = field(default_factory=list)
    #: Agents a recovered registry admitted (id → AgentInfo), which may re-register
    #: (:mod:`localmesos.master.registrar`).
    recovered_agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    recovered_until: float = 0.0
    #: Whether this master leads (always, alone; through ZooKeeper, once elected:
    #: :mod:`localmesos.master.contender`), and ``host:port`` of the one that does.
    elected: bool = True
    leader_address: str | None = None
    #: Elected, and recovering its registry: its APIs answer 503 meanwhile.
    recovering: bool = False
    #: Writes the registry of an elected master at once (after an operator call).
    commit_registry: Callable[[], bool] | None = None

    def __post_init__(self) -> None:
        self.completed_frameworks = deque(maxlen=self.max_completed_frameworks)

    @property
    def pid(self) -> str:
        """The libprocess PID (``master@host:port``)."""
        return f"master@{self.hostname}:{self.port}"

    @property
    def total_ping_timeout(self) -> float:
        """``agent_ping_timeout × max_agent_ping_timeouts``: how long an agent waits for a
        ping before it re-registers (``MasterSlaveConnection``)."""
        return self.agent_ping_timeout * self.max_agent_ping_timeouts

    def awaits_recovered_agents(self) -> bool:
        """Whether the agents of a recovered registry may still re-register (within
        ``agent_reregister_timeout`` of the recovery)."""
        return bool(self.recovered_agents) and time.monotonic() < self.recovered_until

    def count(self, metric: str, n: float = 1) -> None:
        """Under the lock: add ``n`` to a master metric."""
        self.metrics[metric] = self.metrics.get(metric, 0) + n

    def count_task_state(
        self, fw: FrameworkRecord, state: str, source: str | None, reason: str | None
    ) -> None:
        """Under the lock: a task of ``fw`` reached the terminal ``state``; as Mesos, count
        ``tasks_<state>``, the framework's ``tasks/terminal/<state>`` and, for a status with a
        reason, ``<state>/<source>/<reason>``."""
        self.count(state.replace("TASK_", "tasks_").lower())
        fw.count(f"tasks/terminal/{state.lower()}")
        if reason:
            self.count(f"{state}/{source or 'SOURCE_MASTER'}/{reason}".lower())

