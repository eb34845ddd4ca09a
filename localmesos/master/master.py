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

Layout: :class:`Master` is a thin façade. It owns one declared state object,
:class:`~localmesos.master.state.MasterState` (what the master knows, and the lock), and one
object per part, each given the state and the table of the other parts
(:class:`~localmesos.master.parts.MasterParts`, whose protocols are what the parts offer one
another): :mod:`~localmesos.master.subscriptions` (SUBSCRIBE, disconnection, failover timers),
:mod:`~localmesos.master.calls` (the other scheduler calls), :mod:`~localmesos.master.launch`
(ACCEPT), :mod:`~localmesos.master.tasks` (status updates, removing tasks and frameworks),
:mod:`~localmesos.master.offers` (allocation runs and offers),
:mod:`~localmesos.master.quota_master`, :mod:`~localmesos.master.maintenance`,
:mod:`~localmesos.master.drain` and :mod:`~localmesos.master.partitions` (agents' health).
The façade keeps the lifecycle, the call checks and dispatch, and the public methods other code
calls, each handed to its part; ``master.<field>`` reads and writes ``master.state.<field>``.
:mod:`~localmesos.master.records` holds the records,
:mod:`~localmesos.master.agent_link` the calls into agents and
:mod:`~localmesos.protocol.recordio` the event streams; :mod:`localmesos.master.views` renders
``/master/state``, ``/metrics/snapshot`` and the other read-only endpoints.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import logging
import random
import threading
from typing import Any
import uuid

from disauto.common.resources import Resources
from disauto.localmesos.master import allocator as alloc
from disauto.localmesos.master.agent_link import AgentLike
from disauto.localmesos.master.allocation_loop import AllocationLoop
from disauto.localmesos.master.authorizer import Acls
from disauto.localmesos.master.calls import SchedulerCalls
from disauto.localmesos.master.drain import DrainMaster
from disauto.localmesos.master.launch import LaunchCalls
from disauto.localmesos.master.maintenance import MaintenanceMaster
from disauto.localmesos.master.offer_timeout import OfferTimeouts
from disauto.localmesos.master.offers import OfferMaking
from disauto.localmesos.master.partitions import AgentHealth
from disauto.localmesos.master.parts import MasterParts
from disauto.localmesos.master.quota_master import QuotaMaster
from disauto.localmesos.master.records import AgentRecord
from disauto.localmesos.master.records import FrameworkRecord
from disauto.localmesos.master.state import MasterState
from disauto.localmesos.master.subscriptions import Subscriptions
from disauto.localmesos.master.tasks import TaskBookkeeping
from disauto.localmesos.protocol import registration
from disauto.localmesos.protocol.protojson import CallError
from disauto.localmesos.protocol.recordio import EventObserver
from disauto.localmesos.protocol.recordio import Subscription
from disauto.localmesos.protocol.registration import ReregisterAgent
from disauto.localmesos.protocol.registration import Reregistered


logger = logging.getLogger(__name__)


class Master:
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
        self.state = MasterState(
            allocation_interval=allocation_interval, heartbeat_interval=heartbeat_interval,
            weights=dict(weights or {}), min_allocatable=tuple(min_allocatable),
            max_completed_frameworks=max_completed_frameworks,
            max_completed_tasks_per_framework=max_completed_tasks_per_framework,
            max_failover_timeout=max_failover_timeout, authenticate=authenticate,
            acls=acls or Acls(), extra_flags=dict(flags or {}), offer_timeout=offer_timeout,
            agent_ping_timeout=agent_ping_timeout,
            max_agent_ping_timeouts=max_agent_ping_timeouts,
            agent_reregister_timeout=agent_reregister_timeout,
            registry_max_agent_age=registry_max_agent_age, rng=rng or random.Random(),
            master_id=str(uuid.uuid4()), hostname=hostname,
        )
        self._compose()
        self.state.loop = AllocationLoop(self.allocation.allocate, allocation_interval)
        self._offer_timeouts = (
            None if offer_timeout is None
            else OfferTimeouts(self.state, self.tasks.rescind, offer_timeout)
        )
        self._event_count_lock = threading.Lock()
        self.state.observers.append(self._count_event)

    def _compose(self) -> None:
        """Make the parts, each given the state and the table of the others."""
        state, parts = self.state, MasterParts()
        self.parts = parts
        self.subscriptions = parts.subscriptions = Subscriptions(state, parts)
        self.calls = parts.calls = SchedulerCalls(state, parts)
        self.launch = parts.launch = LaunchCalls(state, parts)
        self.tasks = parts.tasks = TaskBookkeeping(state, parts)
        self.allocation = parts.allocation = OfferMaking(state, parts)
        self.quota = QuotaMaster(state, parts)
        self.maintenance = parts.maintenance = MaintenanceMaster(state, parts)
        self.drain = parts.drain = DrainMaster(state, parts)
        self.partitions = parts.partitions = AgentHealth(state, parts)

    # -- lifecycle -----------------------------------------------------------------------

    def set_address(self, hostname: str, port: int) -> None:
        """Record where the master is reachable (known once the HTTP server is bound)."""
        with self.state.lock:
            self.state.hostname = hostname
            self.state.port = port

    @property
    def pid(self) -> str:
        """The libprocess PID (``master@host:port``)."""
        return self.state.pid

    def start(self) -> None:
        """Start the allocation loop and the failover timers (idempotent)."""
        with self.state.lock:
            if self.state.started:
                return
            self.state.started = True
        self.state.loop.start()
        self.subscriptions.start_timers()
        self.partitions.start_health()
        if self._offer_timeouts is not None:
            self._offer_timeouts.start()
        self.state.loop.trigger()

    def close_streams(self) -> None:
        """Close every event stream (the first step of shutting down)."""
        with self.state.lock:
            for fw in self.state.frameworks.values():
                if fw.subscription is not None:
                    fw.subscription.close()

    def stop(self) -> None:
        """Stop the allocator and timers, close streams, stop the agent links (idempotent).

        The agents themselves are stopped by their owner
        (:class:`localmesos.cluster.LocalCluster`).
        """
        with self.state.lock:
            if self.state.stopped:
                return
            self.state.stopped = True
            started = self.state.started
            links = [record.link for record in self.state.agents.values()]
        self.close_streams()
        if self._offer_timeouts is not None:
            self._offer_timeouts.stop()
        self.state.loop.stop()
        self.subscriptions.stop_timers()
        if started:
            self.partitions.stop_health()
        for link in links:
            link.stop()

    def add_event_observer(self, observer: EventObserver) -> None:
        """Call ``observer(framework_id, event)`` for every event sent to any framework.

        Observers run on master and HTTP threads and must be quick and never raise.
        """
        with self.state.lock:
            self.state.observers.append(observer)

    # -- agents --------------------------------------------------------------------------

    def next_agent_id(self) -> str:
        """Mint an agent id (``<master id>-S<n>``)."""
        with self.state.lock:
            agent_id = f"{self.state.master_id}-S{self.state.next_agent}"
            self.state.next_agent += 1
            return agent_id

    def add_agent(self, agent: AgentLike) -> None:
        """Register an agent and trigger an allocation for it.

        An embedded agent is advertised (offer ``url``, ``pid`` in ``/master/state``) at the
        master's own port, which serves its endpoints; a :class:`RemoteAgent` at its host's.

        Raises:
            ValueError: when it is registered already.
        """
        with self.state.lock:
            if agent.id in self.state.agents:
                raise ValueError(f"agent {agent.id} is already registered")
            self.partitions.register(agent, agent.info())
            self.state.count("messages_register_slave")
            self.state.count("slave_registrations")
        logger.info("Added agent %s (%s)", agent.id, agent.total)
        self.state.loop.trigger()

    @property
    def total_ping_timeout(self) -> float:
        """``agent_ping_timeout × max_agent_ping_timeouts`` (:class:`MasterState`)."""
        return self.state.total_ping_timeout

    # -- calls ---------------------------------------------------------------------------

    def awaits_recovered_agents(self) -> bool:
        """Whether the agents of a recovered registry may still re-register."""
        return self.state.awaits_recovered_agents()

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
        fw = self.state.frameworks.get(fid)
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
        with self.state.lock:
            fw = self.check_call(call, stream_id, principal)
            fw.count("calls")
            fw.count(f"calls/{kind.lower()}")
            status, body, trigger = self.calls.dispatch(fw, call)
        if trigger:
            self.state.loop.trigger()
        return status, body

    @property
    def allocation_latency_ms(self) -> tuple[float, ...]:
        """Recent allocation-run latencies (request to start), for the timer metric."""
        return tuple(self.state.loop.latency_ms)

    def _count_event(self, framework_id: str, event: Mapping[str, Any]) -> None:
        """Event observer: the per-framework ``events`` and ``events/<type>`` counters."""
        fw = self.state.frameworks.get(framework_id)
        if fw is None:
            return
        with self._event_count_lock:
            fw.count("events")
            fw.count(f"events/{str(event.get('type', 'unknown')).lower()}")

    # -- the parts' entry points other code calls ------------------------------------------

    # -- subscriptions (subscriptions.py)
    def master_info(self) -> dict[str, Any]:
        return self.subscriptions.master_info()

    def subscribe(self, call: Mapping[str, Any]) -> Subscription:
        return self.subscriptions.subscribe(call)

    def subscription_closed(self, sub: Subscription) -> None:
        self.subscriptions.subscription_closed(sub)

    # -- tasks (tasks.py)
    def receive_status_update(
        self, status: dict[str, Any], latest_state: str | None = None
    ) -> None:
        self.tasks.receive_status_update(status, latest_state)

    def exited_executor(
        self, agent_id: str, framework_id: str, executor_id: str, status: int
    ) -> None:
        self.tasks.exited_executor(agent_id, framework_id, executor_id, status)

    def executor_message(
        self, agent_id: str, framework_id: str, executor_id: str, data: str
    ) -> None:
        self.tasks.executor_message(agent_id, framework_id, executor_id, data)

    # -- allocation (offers.py)
    def agent_path(self, agent_id: str) -> str:
        return self.allocation.agent_path(agent_id)

    def agent_pid(self, record: AgentRecord) -> str:
        return self.allocation.agent_pid(record)

    def agent_list(self) -> list[Any]:
        return self.allocation.agent_list()

    def file_roots(self) -> dict[str, str]:
        return self.allocation.file_roots()

    # -- quota (quota_master.py)
    def quota_status(self) -> dict[str, Any]:
        return self.quota.quota_status()

    def update_quota(self, configs: list[Mapping[str, Any]], force: bool) -> None:
        self.quota.update_quota(configs, force)

    def set_quota(self, request: Mapping[str, Any]) -> None:
        self.quota.set_quota(request)

    def remove_quota(self, role: str) -> None:
        self.quota.remove_quota(role)

    # -- maintenance (maintenance.py)
    def maintenance_schedule(self) -> dict[str, Any]:
        return self.maintenance.maintenance_schedule()

    def update_maintenance_schedule(self, schedule: Mapping[str, Any]) -> None:
        self.maintenance.update_maintenance_schedule(schedule)

    def start_maintenance(self, machine_ids: list[Mapping[str, Any]]) -> None:
        self.maintenance.start_maintenance(machine_ids)

    def stop_maintenance(self, machine_ids: list[Mapping[str, Any]]) -> None:
        self.maintenance.stop_maintenance(machine_ids)

    def maintenance_status(self) -> dict[str, Any]:
        return self.maintenance.maintenance_status()

    # -- drain (drain.py)
    def drain_agent(
        self, agent_id: str, max_grace_period: Mapping[str, Any] | None, mark_gone: bool
    ) -> None:
        self.drain.drain_agent(agent_id, max_grace_period, mark_gone)

    def deactivate_agent(self, agent_id: str) -> None:
        self.drain.deactivate_agent(agent_id)

    def reactivate_agent(self, agent_id: str) -> None:
        self.drain.reactivate_agent(agent_id)

    # -- partitions (partitions.py)
    def pong(self, agent_id: str) -> None:
        self.partitions.pong(agent_id)

    def agent_disconnected(self, agent_id: str) -> None:
        self.partitions.agent_disconnected(agent_id)

    def reregister_agent(self, agent: AgentLike, report: ReregisterAgent) -> Reregistered | None:
        return self.partitions.reregister_agent(agent, report)


def _forwarded(name: str) -> property:
    """``master.<name>``: reads and writes ``master.state.<name>``."""

    def read(master: Master) -> Any:
        return getattr(master.state, name)

    def write(master: Master, value: Any) -> None:
        setattr(master.state, name, value)

    return property(read, write, doc=f"``state.{name}`` (:class:`MasterState`).")


for _field in dataclasses.fields(MasterState):
    setattr(Master, _field.name, _forwarded(_field.name))
