"""The embedded Mesos master: frameworks, offers and tasks, driven by scheduler calls.

:class:`Master` is the state machine behind ``/api/v1/scheduler``. It follows the behaviour of
apache/mesos ``src/master/master.cpp`` that a v1 HTTP framework can observe (Mesos'
scheduler HTTP API documentation):

* SUBSCRIBE mints a FrameworkID (``<master id>-0000``), answers SUBSCRIBED and an immediate
  HEARTBEAT on a new :class:`Subscription`, then a HEARTBEAT every heartbeat interval. A
  re-SUBSCRIBE with the same id fails the old stream over (ERROR "Framework failed over"),
  discards outstanding offers without RESCIND, and un-suppresses the framework.
* A broken subscription connection disconnects the framework: its offers are rescinded, later
  calls get 403, and a failover timer of ``failover_timeout`` seconds starts. Its tasks keep
  running; status updates are not forwarded (the agents keep retrying them). When the timer
  fires, or on TEARDOWN, the framework is removed: agents shut its tasks down, and the master
  marks them TASK_KILLED (REASON_FRAMEWORK_REMOVED) in its state only.
* ACCEPT validates the offers, then each task (TASK_ERROR on failure, TASK_LOST/DROPPED for
  invalid offers, both without uuid), launches valid tasks as TASK_STAGING and recovers unused
  resources with the call's filter (default 5 s).
* Agent status updates update the task (resources are recovered on the first terminal state)
  and are forwarded, with their uuid, only to a connected framework. An ACKNOWLEDGE of the
  terminal update moves the task to the completed tasks.
* RECONCILE answers with master-generated updates (REASON_RECONCILIATION, no uuid); unknown
  tasks are TASK_LOST for frameworks without PARTITION_AWARE.

Threading: one lock guards all state. Nothing that can block is done under it: events are
queued on subscriptions (their writers run on HTTP threads), and every call into an agent is
posted to that agent's :class:`AgentLink`, a queue served by one thread, so calls reach each
agent in the order the master made them and an agent may call back (``receive_status_update``)
from any thread at any time.

Layout: :class:`Master` holds the state, the lifecycle and the call dispatch; each concern is a
mixin in its own module: :mod:`~localmesos.master.subscriptions` (SUBSCRIBE, disconnection,
failover timers), :mod:`~localmesos.master.calls` (the other scheduler calls),
:mod:`~localmesos.master.launch` (ACCEPT), :mod:`~localmesos.master.tasks` (status updates,
removing tasks and frameworks) and :mod:`~localmesos.master.offers` (allocation runs and
offers). :mod:`~localmesos.master.records` holds what the master knows,
:mod:`~localmesos.master.agent_link` its calls into agents and
:mod:`~localmesos.protocol.recordio` its event streams; :mod:`localmesos.master.views` renders
``/master/state``, ``/metrics/snapshot`` and the other read-only endpoints.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import logging
import random
import threading
import time
from typing import Any
import uuid

from disauto.common.resources import Resources
from disauto.localmesos.master import allocator as alloc
from disauto.localmesos.master.agent_link import AgentLike
from disauto.localmesos.master.agent_link import AgentLink
from disauto.localmesos.master.authorizer import Acls
from disauto.localmesos.master.calls import SchedulerCalls
from disauto.localmesos.master.drain import DrainMaster
from disauto.localmesos.master.launch import LaunchCalls
from disauto.localmesos.master.maintenance import InverseOfferRecord
from disauto.localmesos.master.maintenance import Machine
from disauto.localmesos.master.maintenance import MachineKey
from disauto.localmesos.master.maintenance import MaintenanceMaster
from disauto.localmesos.master.offer_filters import InverseOfferFilters
from disauto.localmesos.master.offer_timeout import OfferTimeouts
from disauto.localmesos.master.offers import OfferMaking
from disauto.localmesos.master.partitions import AgentHealth
from disauto.localmesos.master.partitions import UnreachableAgent
from disauto.localmesos.master.quota import Quota
from disauto.localmesos.master.quota import QuotaMaster
from disauto.localmesos.master.records import AgentRecord
from disauto.localmesos.master.records import FrameworkRecord
from disauto.localmesos.master.records import OfferRecord
from disauto.localmesos.master.remote_agent import RemoteAgent
from disauto.localmesos.master.subscriptions import Subscriptions
from disauto.localmesos.master.tasks import TaskBookkeeping
from disauto.localmesos.protocol import registration
from disauto.localmesos.protocol.protojson import CallError
from disauto.localmesos.protocol.recordio import EventObserver


logger = logging.getLogger(__name__)

class Master(Subscriptions, LaunchCalls, SchedulerCalls, TaskBookkeeping, OfferMaking,
             QuotaMaster, MaintenanceMaster, DrainMaster, AgentHealth):
    """The embedded master (see the module docstring).

    Args:
        hostname: the address frameworks reach the master at (for MasterInfo).
        allocation_interval: seconds between batch allocations (Mesos ``--allocation_interval``).
        heartbeat_interval: seconds between HEARTBEAT events.
        weights: role weights for DRF (default 1.0 each).
        min_allocatable: alternative minimum quantities an agent must have free to be offered.
        max_completed_frameworks: bound of the completed-frameworks list (Mesos: 50).
        max_completed_tasks_per_framework: bound of each completed-tasks list (Mesos: 1000).
        max_failover_timeout: if set, caps every framework's ``failover_timeout`` (tests).
        authenticate: whether scheduler calls need HTTP authentication (for the flags).
        flags: extra entries for the ``flags`` object of ``/master/state``.
        rng: random source for the allocator's agent order.
        offer_timeout: seconds after which an outstanding offer is rescinded (Mesos
            ``--offer_timeout``); None (the default) never rescinds for age.
        agent_ping_timeout: seconds between pings of each agent, and the time it has to
            answer one (Mesos ``--agent_ping_timeout``, 15 s).
        max_agent_ping_timeouts: unanswered pings in a row after which an agent is marked
            unreachable (Mesos ``--max_agent_ping_timeouts``, 5).
        agent_reregister_timeout: seconds a disconnected agent has to re-register before it
            is marked unreachable (Mesos ``--agent_reregister_timeout``, 10 min).
        registry_max_agent_age: seconds an unreachable agent is remembered (Mesos
            ``--registry_max_agent_age``, 2 weeks).
        acls: what frameworks may register and run, and readers view (Mesos ``--acls``;
            :mod:`localmesos.master.authorizer`); default: everything.
    """

    def __init__(
        self,
        *,
        hostname: str = "127.0.0.1",
        allocation_interval: float = 1.0,
        heartbeat_interval: float = 15.0,
        weights: Mapping[str, float] | None = None,
        min_allocatable: Sequence[Resources] = alloc.DEFAULT_MIN_ALLOCATABLE,
        max_completed_frameworks: int = 50,
        max_completed_tasks_per_framework: int = 1000,
        max_failover_timeout: float | None = None,
        authenticate: bool = False,
        flags: Mapping[str, str] | None = None,
        rng: random.Random | None = None,
        offer_timeout: float | None = None,
        agent_ping_timeout: float = registration.DEFAULT_AGENT_PING_TIMEOUT,
        max_agent_ping_timeouts: int = registration.DEFAULT_MAX_AGENT_PING_TIMEOUTS,
        agent_reregister_timeout: float = registration.DEFAULT_AGENT_REREGISTER_TIMEOUT,
        registry_max_agent_age: float = registration.DEFAULT_REGISTRY_MAX_AGENT_AGE,
        acls: Acls | None = None,
    ) -> None:
        if not allocation_interval > 0:
            raise ValueError(f"allocation_interval must be > 0, got {allocation_interval}")
        if not heartbeat_interval > 0:
            raise ValueError(f"heartbeat_interval must be > 0, got {heartbeat_interval}")
        self.lock = threading.RLock()
        self.master_id = str(uuid.uuid4())
        self.hostname = hostname
        self.port = 0
        self.allocation_interval = allocation_interval
        self.heartbeat_interval = heartbeat_interval
        self.weights = dict(weights or {})
        self.min_allocatable = tuple(min_allocatable)
        self.max_completed_tasks_per_framework = max_completed_tasks_per_framework
        self.max_failover_timeout = max_failover_timeout
        self.authenticate = authenticate
        self.acls = acls or Acls()
        self.extra_flags = dict(flags or {})
        self.start_time = time.time()
        self.frameworks: dict[str, FrameworkRecord] = {}
        self.completed_frameworks: deque[FrameworkRecord] = deque(
            maxlen=max_completed_frameworks
        )
        self.agents: dict[str, AgentRecord] = {}
        self.offers: dict[str, OfferRecord] = {}
        self.filters = alloc.OfferFilters()
        self.metrics: dict[str, float] = {}
        self._rng = rng or random.Random()
        self._observers: list[EventObserver] = []
        self._next_framework = 0
        self._next_offer = 0
        self._next_agent = 0
        self._removed_ids: set[str] = set()
        self.agent_ping_timeout = agent_ping_timeout
        self.max_agent_ping_timeouts = max_agent_ping_timeouts
        self.agent_reregister_timeout = agent_reregister_timeout
        self.registry_max_agent_age = registry_max_agent_age
        self._init_registry()
        self._init_loops(allocation_interval, offer_timeout)

    def _init_registry(self) -> None:
        """What Mesos keeps in its registry and beside it: quotas, the maintenance schedule,
        unreachable and gone agents, draining and deactivated ones, inverse offers."""
        self.quotas: dict[str, Quota] = {}
        self.schedule: dict[str, Any] = {}
        self.machines: dict[MachineKey, Machine] = {}
        self.inverse_offers: dict[str, InverseOfferRecord] = {}
        self.inverse_statuses: dict[str, dict[str, Any]] = {}
        self.inverse_filters = InverseOfferFilters()
        self.unreachable: dict[str, UnreachableAgent] = {}
        self.gone: dict[str, float] = {}
        self.draining: dict[str, dict[str, Any]] = {}
        self.deactivated: set[str] = set()
        #: Agent ids in order of first registration: ``/slave(N)`` is the N-th, for good.
        self.agent_slots: list[str] = []
        #: Agents a recovered registry admitted (id → AgentInfo), which may re-register
        #: (:mod:`localmesos.master.registrar`).
        self.recovered_agents: dict[str, dict[str, Any]] = {}
        self.recovered_until = 0.0
        #: Whether this master leads (always, alone; through ZooKeeper, once elected:
        #: :mod:`localmesos.master.contender`), and ``host:port`` of the one that does.
        self.elected = True
        self.leader_address: str | None = None
        #: Elected, and recovering its registry: its APIs answer 503 meanwhile.
        self.recovering = False
        #: Writes the registry of an elected master at once (after an operator call).
        self.commit_registry: Callable[[], bool] | None = None

    def _init_loops(self, allocation_interval: float, offer_timeout: float | None) -> None:
        """The allocation loop, the failover timers' thread, the offer timeouts and the
        allocation and event counters (nothing runs before :meth:`start`)."""
        self._loop = alloc.AllocationLoop(self._allocate, allocation_interval)
        self._timer_cond = threading.Condition(self.lock)
        self._timer_thread = threading.Thread(
            target=self._timer_loop, name="localmesos-master-timers", daemon=True
        )
        self._started = False
        self._stopped = False
        self.offer_timeout = offer_timeout
        self._offer_timeouts = (
            None if offer_timeout is None else OfferTimeouts(self, offer_timeout)
        )
        self.allocation_runs = 0
        self.last_allocation_ms = 0.0
        #: Durations (ms) of the most recent allocation runs, for timer percentiles.
        self.allocation_run_ms: deque[float] = deque(maxlen=1000)
        self._event_count_lock = threading.Lock()
        self._observers.append(self._count_event)

    # -- lifecycle -----------------------------------------------------------------------

    def set_address(self, hostname: str, port: int) -> None:
        """Record where the master is reachable (known once the HTTP server is bound)."""
        with self.lock:
            self.hostname = hostname
            self.port = port

    @property
    def pid(self) -> str:
        """The libprocess PID (``master@host:port``)."""
        return f"master@{self.hostname}:{self.port}"

    def start(self) -> None:
        """Start the allocation loop and the failover timers (idempotent)."""
        with self.lock:
            if self._started:
                return
            self._started = True
        self._loop.start()
        self._timer_thread.start()
        self._start_health()
        if self._offer_timeouts is not None:
            self._offer_timeouts.start()
        self._loop.trigger()

    def close_streams(self) -> None:
        """Close every event stream (the first step of shutting down)."""
        with self.lock:
            for fw in self.frameworks.values():
                if fw.subscription is not None:
                    fw.subscription.close()

    def stop(self) -> None:
        """Stop the allocator and timers, close streams, stop the agent links (idempotent).

        The agents themselves are stopped by their owner
        (:class:`localmesos.cluster.LocalCluster`).
        """
        with self.lock:
            if self._stopped:
                return
            self._stopped = True
            self._timer_cond.notify_all()
            if self._started:
                self._health_cond.notify_all()
            links = [record.link for record in self.agents.values()]
        self.close_streams()
        if self._offer_timeouts is not None:
            self._offer_timeouts.stop()
        self._loop.stop()
        if self._timer_thread.is_alive():
            self._timer_thread.join()
        if self._started and self._health_thread.is_alive():
            self._health_thread.join()
        for link in links:
            link.stop()

    def add_event_observer(self, observer: EventObserver) -> None:
        """Call ``observer(framework_id, event)`` for every event sent to any framework.

        Observers run on master and HTTP threads and must be quick and never raise.
        """
        with self.lock:
            self._observers.append(observer)

    # -- agents --------------------------------------------------------------------------

    def next_agent_id(self) -> str:
        """Mint an agent id (``<master id>-S<n>``)."""
        with self.lock:
            agent_id = f"{self.master_id}-S{self._next_agent}"
            self._next_agent += 1
            return agent_id

    def add_agent(self, agent: AgentLike) -> None:
        """Register an agent and trigger an allocation for it.

        An embedded agent is advertised (offer ``url``, ``pid`` in ``/master/state``) at the
        master's own port, which serves its endpoints; a :class:`RemoteAgent` at its host's.

        Raises:
            ValueError: when it is registered already.
        """
        with self.lock:
            if agent.id in self.agents:
                raise ValueError(f"agent {agent.id} is already registered")
            self._register(agent, agent.info())
            self._count("messages_register_slave")
            self._count("slave_registrations")
        logger.info("Added agent %s (%s)", agent.id, agent.total)
        self._loop.trigger()

    def _register(self, agent: AgentLike, info: dict[str, Any]) -> AgentRecord:
        """Under the lock: a registered agent record with its link to the agent.

        An embedded agent is served on the master's address (its ``port``, the IP of its pid);
        an agent of another process (:class:`RemoteAgent`) on its host's.
        """
        info = dict(info)
        remote = agent if isinstance(agent, RemoteAgent) else None
        if remote is not None:
            info["port"] = remote.port
        elif self.port:
            info["port"] = self.port
        link = AgentLink(agent)
        link.start()
        record = AgentRecord(agent, link, info, time.time(), agent.total,
                             ip=self.hostname if remote is None else remote.host,
                             pid=None if remote is None else remote.pid)
        self.agents[agent.id] = record
        if agent.id not in self.agent_slots:
            self.agent_slots.append(agent.id)
        return record

    @property
    def total_ping_timeout(self) -> float:
        """``agent_ping_timeout × max_agent_ping_timeouts``: how long an agent waits for a
        ping before it re-registers (``MasterSlaveConnection``)."""
        return self.agent_ping_timeout * self.max_agent_ping_timeouts

    # -- calls ---------------------------------------------------------------------------

    def awaits_recovered_agents(self) -> bool:
        """Whether the agents of a recovered registry may still re-register (within
        ``agent_reregister_timeout`` of the recovery)."""
        return bool(self.recovered_agents) and time.monotonic() < self.recovered_until

    def check_call(
        self, call: Mapping[str, Any], stream_id: str | None, principal: str | None = None
    ) -> FrameworkRecord:
        """The checks Mesos makes before dispatching a non-SUBSCRIBE call, in its order.

        Args:
            call: the validated call.
            stream_id: its ``Mesos-Stream-Id`` header, if any.
            principal: the HTTP-authenticated principal, if any.

        Raises:
            CallError: 400 "Framework cannot be found", 400 for an authenticated principal
                other than the framework's, 403 "Framework is not subscribed", 400 for a
                missing or wrong ``Mesos-Stream-Id``.
        """
        fid = str(call["framework_id"]["value"])
        fw = self.frameworks.get(fid)
        if fw is None:
            raise CallError("Framework cannot be found")
        owner = str(fw.info.get("principal", ""))
        if principal is not None and principal != owner:
            raise CallError(
                f"Authenticated principal '{principal}' does not match principal '{owner}' "
                "set in `FrameworkInfo`"
            )
        if not fw.connected or fw.subscription is None:
            raise CallError("Framework is not subscribed", 403)
        if stream_id is None:
            raise CallError(
                "All non-subscribe calls should include the 'Mesos-Stream-Id' header"
            )
        if stream_id != fw.subscription.stream_id:
            raise CallError(
                f"The stream ID '{stream_id}' included in this request didn't match the "
                f"stream ID currently associated with framework ID {fid}"
            )
        return fw

    def handle_call(
        self, call: Mapping[str, Any], stream_id: str | None, principal: str | None = None
    ) -> tuple[int, dict[str, Any] | None]:
        """Dispatch a validated non-SUBSCRIBE call (the table: :mod:`localmesos.master.calls`).

        Returns:
            ``(HTTP status, JSON body or None)``: 202 for most calls, 200 for UPDATE_FRAMEWORK
            and RECONCILE_OPERATIONS, 501 for UNKNOWN.

        Raises:
            CallError: see :meth:`check_call`; also 400 for an invalid UPDATE_FRAMEWORK.
        """
        kind = call["type"]
        with self.lock:
            fw = self.check_call(call, stream_id, principal)
            fw.count("calls")
            fw.count(f"calls/{kind.lower()}")
            status, body, trigger = self._dispatch(fw, call)
        if trigger:
            self._loop.trigger()
        return status, body

    def _count(self, metric: str, n: float = 1) -> None:
        self.metrics[metric] = self.metrics.get(metric, 0) + n

    def _count_task_state(
        self, fw: FrameworkRecord, state: str, source: str | None, reason: str | None
    ) -> None:
        """Under the lock: a task of ``fw`` reached the terminal ``state``; as Mesos, count
        ``tasks_<state>``, the framework's ``tasks/terminal/<state>`` and, for a status with a
        reason, ``<state>/<source>/<reason>``."""
        self._count(state.replace("TASK_", "tasks_").lower())
        fw.count(f"tasks/terminal/{state.lower()}")
        if reason:
            self._count(f"{state}/{source or 'SOURCE_MASTER'}/{reason}".lower())

    @property
    def allocation_latency_ms(self) -> tuple[float, ...]:
        """Recent allocation-run latencies (request to start), for the timer metric."""
        return tuple(self._loop.latency_ms)

    def _count_event(self, framework_id: str, event: Mapping[str, Any]) -> None:
        """Event observer: the per-framework ``events`` and ``events/<type>`` counters."""
        fw = self.frameworks.get(framework_id)
        if fw is None:
            return
        with self._event_count_lock:
            fw.count("events")
            fw.count(f"events/{str(event.get('type', 'unknown')).lower()}")
