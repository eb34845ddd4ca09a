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
posted to that agent's :class:`_AgentLink`, a queue served by one thread, so calls reach each
agent in the order the master made them and an agent may call back (``receive_status_update``)
from any thread at any time.
"""

from __future__ import annotations

import base64
import binascii
from collections import deque
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import copy
from dataclasses import dataclass
from dataclasses import field
import json
import logging
import queue
import random
import socket
import threading
import time
from typing import Any
from typing import Protocol
import uuid

from common.resources import ResourceError
from common.resources import Resources
from localmesos import allocator as alloc
from localmesos import validation
from localmesos.validation import CallError


logger = logging.getLogger(__name__)

MESOS_VERSION = "1.11.0"

#: States after which a task never changes (TASK_LOST included, as the web UI counts it).
TERMINAL_STATES = frozenset(
    {
        "TASK_FINISHED",
        "TASK_FAILED",
        "TASK_KILLED",
        "TASK_ERROR",
        "TASK_LOST",
        "TASK_DROPPED",
        "TASK_GONE",
        "TASK_GONE_BY_OPERATOR",
    }
)
#: States only PARTITION_AWARE frameworks see; the others get TASK_LOST instead.
PARTITION_AWARE_STATES = frozenset(
    {"TASK_DROPPED", "TASK_UNREACHABLE", "TASK_GONE", "TASK_GONE_BY_OPERATOR", "TASK_UNKNOWN"}
)
MASTER_CAPABILITIES = ("AGENT_UPDATE", "AGENT_DRAINING", "QUOTA_V2")
#: Largest failover timer Python's ``threading`` can wait for; longer ones never fire.
_MAX_TIMER = threading.TIMEOUT_MAX / 2


class AgentLike(Protocol):
    """What the master needs of an agent (:class:`localmesos.agent.Agent` implements it)."""

    id: str
    total: Resources

    def info(self) -> dict[str, Any]: ...

    def launch_task(self, framework_info: dict[str, Any], task: dict[str, Any]) -> None: ...

    def kill_task(
        self, framework_id: str, task_id: str, grace_period: float | None = None
    ) -> None: ...

    def acknowledge(self, framework_id: str, task_id: str, uuid_b64: str) -> bool: ...

    def state(self) -> dict[str, Any]: ...

    def resend_unacknowledged(self, framework_id: str) -> Any: ...

    def shutdown_framework(self, framework_id: str) -> None: ...


EventObserver = Callable[[str, dict[str, Any]], None]


# -- event streams ----------------------------------------------------------------------------


def encode_record(event: Mapping[str, Any]) -> bytes:
    """One RecordIO record: ``<byte length>\\n<json>``."""
    data = json.dumps(event, separators=(",", ":")).encode("utf-8")
    return str(len(data)).encode("ascii") + b"\n" + data


class Subscription:
    """The event stream of one SUBSCRIBE connection.

    The master queues events (:meth:`send`) without ever blocking; the HTTP layer's writer takes
    them (:meth:`take`) and writes them as RecordIO inside HTTP chunks. Heartbeats are produced
    by :meth:`take` when due. :attr:`wake_fd` becomes readable whenever there is something to
    take, so the writer can ``select`` on it together with its socket.

    Args:
        framework_id: the framework the stream belongs to (may be empty for a refused
            SUBSCRIBE that only carries an ERROR).
        heartbeat_interval: seconds between HEARTBEAT events.
        observers: called with ``(framework_id, event)`` for every event sent on this stream.
        max_queued: if the writer falls this many events behind, the stream is closed as a
            slow consumer (the framework then counts as disconnected).
    """

    def __init__(
        self,
        framework_id: str,
        heartbeat_interval: float,
        observers: Sequence[EventObserver] = (),
        *,
        max_queued: int = 100_000,
    ) -> None:
        self.framework_id = framework_id
        self.stream_id = str(uuid.uuid4())
        self.heartbeat_interval = heartbeat_interval
        self._observers = list(observers)
        self._max_queued = max_queued
        self._lock = threading.Lock()
        self._records: deque[bytes] = deque()
        self._closed = False
        self._released = False
        self._wake_pending = False
        self._next_heartbeat = time.monotonic() + heartbeat_interval
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self.events_sent = 0

    @property
    def wake_fd(self) -> int:
        """A file descriptor that is readable while events or a close are pending."""
        return self._wake_r.fileno()

    @property
    def closed(self) -> bool:
        """Whether the master has closed the stream (pending events are still written)."""
        with self._lock:
            return self._closed

    def send(self, event: dict[str, Any]) -> None:
        """Queue an event; dropped silently once the stream is closed."""
        record = encode_record(event)
        with self._lock:
            if self._closed:
                return
            if len(self._records) >= self._max_queued:
                logger.warning(
                    "Closing the event stream of framework %s: the client is %d events behind",
                    self.framework_id,
                    len(self._records),
                )
                self._closed = True
                self._records.clear()
            else:
                self._records.append(record)
                self.events_sent += 1
            self._wake()
        self._notify(event)

    def close(self) -> None:
        """End the stream after the queued events (idempotent)."""
        with self._lock:
            self._closed = True
            self._wake()

    def take(self) -> tuple[list[bytes], bool, float]:
        """Take the queued records, adding a HEARTBEAT when one is due.

        Returns:
            ``(records, closed, seconds until the next heartbeat)``.
        """
        now = time.monotonic()
        heartbeat: dict[str, Any] | None = None
        with self._lock:
            self._clear_wake()
            if not self._closed and now >= self._next_heartbeat:
                heartbeat = {"type": "HEARTBEAT"}
                self._records.append(encode_record(heartbeat))
                missed = int((now - self._next_heartbeat) // self.heartbeat_interval) + 1
                self._next_heartbeat += missed * self.heartbeat_interval
            records = list(self._records)
            self._records.clear()
            closed = self._closed
            wait = max(0.0, self._next_heartbeat - now)
        if heartbeat is not None:
            self._notify(heartbeat)
        return records, closed, wait

    def release(self) -> None:
        """Free the wake-up sockets; the writer calls this when it is done (idempotent)."""
        with self._lock:
            self._closed = True
            if self._released:
                return
            self._released = True
        self._wake_r.close()
        self._wake_w.close()

    def _wake(self) -> None:
        if not self._wake_pending and not self._released:
            self._wake_pending = True
            try:
                self._wake_w.send(b"\0")
            except OSError:
                pass

    def _clear_wake(self) -> None:
        if self._wake_pending and not self._released:
            self._wake_pending = False
            try:
                self._wake_r.recv(64)
            except OSError:
                pass

    def _notify(self, event: dict[str, Any]) -> None:
        for observer in self._observers:
            try:
                observer(self.framework_id, event)
            except Exception:  # noqa: BLE001 - an observer must not break the stream
                logger.exception("event observer failed")


# -- agent links ------------------------------------------------------------------------------


class _AgentLink:
    """Ordered, asynchronous calls from the master into one agent (like libprocess messages)."""

    def __init__(self, agent: AgentLike) -> None:
        self.agent = agent
        self._queue: queue.SimpleQueue[tuple[str, tuple[Any, ...]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(
            target=self._run, name=f"localmesos-link-{agent.id}", daemon=True
        )
        self._stopped = False

    def start(self) -> None:
        self._thread.start()

    def post(self, method: str, *args: Any) -> None:
        """Call ``agent.<method>(*args)`` on the link's thread, after earlier posts."""
        if not self._stopped:
            self._queue.put((method, args))

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self._queue.put(None)
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            method, args = item
            try:
                getattr(self.agent, method)(*args)
            except Exception:  # noqa: BLE001 - one failing call must not stop the link
                logger.exception("agent %s: %s%r failed", self.agent.id, method, args)


# -- state ------------------------------------------------------------------------------------


@dataclass
class TaskRecord:
    """A task as the master knows it (``Task`` in ``/master/state``)."""

    info: dict[str, Any]
    framework_id: str
    agent_id: str
    role: str
    resources: Resources
    executor_id: str = ""
    state: str = "TASK_STAGING"
    statuses: list[dict[str, Any]] = field(default_factory=list)
    status_update_state: str | None = None
    status_update_uuid: bytes | None = None
    recovered: bool = False
    group: tuple[str, ...] = ()
    seen_uuids: set[str] = field(default_factory=set)

    @property
    def task_id(self) -> str:
        return str(self.info["task_id"]["value"])


@dataclass
class ExecutorRecord:
    """A custom (or default) executor the master charged resources for."""

    info: dict[str, Any]
    agent_id: str
    role: str
    resources: Resources
    tasks: set[str] = field(default_factory=set)


@dataclass
class OfferRecord:
    """An outstanding offer."""

    offer_id: str
    framework_id: str
    agent_id: str
    role: str
    resources: Resources
    json: dict[str, Any]


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
    offers: dict[str, OfferRecord] = field(default_factory=dict)
    executors: dict[tuple[str, str], ExecutorRecord] = field(default_factory=dict)
    reregistered_time: float | None = None
    unregistered_time: float | None = None
    failover_deadline: float | None = None
    allocation_count: int = 0
    metrics: dict[str, int] = field(default_factory=dict)

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


@dataclass
class AgentRecord:
    """An agent as the master knows it."""

    agent: AgentLike
    link: _AgentLink
    info: dict[str, Any]
    registered_time: float
    total: Resources

    @property
    def agent_id(self) -> str:
        return self.agent.id

    @property
    def has_gpus(self) -> bool:
        return self.total.scalar("gpus") > 0


# -- helpers ----------------------------------------------------------------------------------


def _fid(value: Mapping[str, Any] | None) -> str | None:
    return None if value is None else str(value["value"])


def _uuid_bytes(b64: str | None) -> bytes | None:
    if not b64:
        return None
    try:
        return base64.b64decode(b64.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return None


def mesos_resources_str(resources: Resources) -> str:
    """Resources as Mesos stringifies them: ``cpus(*):1; mem(*):128; ports(*):[31000-31000]``."""
    parts = []
    for item in resources.to_json():
        if item["type"] == "SCALAR":
            parts.append(f"{item['name']}(*):{item['scalar']['value']:g}")
        else:
            ranges = ", ".join(f"{r['begin']}-{r['end']}" for r in item["ranges"]["range"])
            parts.append(f"{item['name']}(*):[{ranges}]")
    return "; ".join(parts) if parts else "{}"


def _resources_of(items: Iterable[Mapping[str, Any]]) -> Resources:
    """Task/executor resources, ignoring roles and allocation info (all unreserved here)."""
    return Resources.from_json(items)


def _duration_seconds(duration: Mapping[str, Any] | None) -> float | None:
    if not duration:
        return None
    return float(duration["nanoseconds"]) / 1e9


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
        self._loop = alloc.AllocationLoop(self._allocate, allocation_interval)
        self._timer_cond = threading.Condition(self.lock)
        self._timer_thread = threading.Thread(
            target=self._timer_loop, name="localmesos-master-timers", daemon=True
        )
        self._started = False
        self._stopped = False
        self.allocation_runs = 0
        self.last_allocation_ms = 0.0
        #: Durations (ms) of the most recent allocation runs, for timer percentiles.
        self.allocation_run_ms: deque[float] = deque(maxlen=1000)

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
            links = [record.link for record in self.agents.values()]
        self.close_streams()
        self._loop.stop()
        if self._timer_thread.is_alive():
            self._timer_thread.join()
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

        The agent is advertised (offer ``url``, ``pid`` in ``/master/state``) at the master's
        own port, which serves the agent endpoints that exist here (``/files/*``).
        """
        info = agent.info()
        link = _AgentLink(agent)
        link.start()
        with self.lock:
            if self.port:
                info["port"] = self.port
            if agent.id in self.agents:
                raise ValueError(f"agent {agent.id} is already registered")
            self.agents[agent.id] = AgentRecord(agent, link, info, time.time(), agent.total)
        logger.info("Added agent %s (%s)", agent.id, agent.total)
        self._loop.trigger()

    # -- subscriptions -------------------------------------------------------------------

    def _master_info(self) -> dict[str, Any]:
        try:
            ip = int.from_bytes(socket.inet_aton(self.hostname), "little")
        except OSError:
            ip = 0
        return {
            "id": self.master_id,
            "ip": ip,
            "port": self.port,
            "pid": self.pid,
            "hostname": self.hostname,
            "version": MESOS_VERSION,
            "address": {"hostname": self.hostname, "ip": self.hostname, "port": self.port},
            "capabilities": [{"type": c} for c in MASTER_CAPABILITIES],
        }

    def _new_subscription(self, framework_id: str) -> Subscription:
        return Subscription(framework_id, self.heartbeat_interval, self._observers)

    def subscribe(self, call: Mapping[str, Any]) -> Subscription:
        """Handle a (validated) SUBSCRIBE call and return its event stream.

        A framework the master refuses (invalid FrameworkInfo, removed id) gets a stream that
        holds one ERROR event and is already closed, as Mesos answers 200 and then ERROR.
        """
        info = copy.deepcopy(dict(call["subscribe"]["framework_info"]))
        suppressed = set(call["subscribe"].get("suppressed_roles", []))
        error = validation.validate_framework_info(info)
        with self.lock:
            registered = "id" in info
            self._count(
                "messages_reregister_framework" if registered else "messages_register_framework"
            )
            if self._stopped:
                error = error or "Master is shutting down"
            fid = _fid(info.get("id"))
            if error is None and fid is not None and fid in self._removed_ids:
                error = "Framework has been removed"
            if error is not None:
                sub = self._new_subscription(fid or "")
                sub.send({"type": "ERROR", "error": {"message": error}})
                sub.close()
                logger.info("Refused subscription of framework %r: %s", info.get("name"), error)
                return sub
            if fid is None:
                fid = f"{self.master_id}-{self._next_framework:04d}"
                self._next_framework += 1
                info["id"] = {"value": fid}
            fw = self.frameworks.get(fid)
            now = time.time()
            sub = self._new_subscription(fid)
            resend = False
            if fw is None:
                fw = FrameworkRecord(
                    framework_id=fid,
                    info=info,
                    roles=validation.framework_roles(info),
                    capabilities={c.get("type", "") for c in info.get("capabilities", [])},
                    registered_time=now,
                )
                fw.completed_tasks = deque(maxlen=self.max_completed_tasks_per_framework)
                if "id" in call["subscribe"]["framework_info"]:
                    fw.reregistered_time = now  # recovered after a master failover
                self.frameworks[fid] = fw
                logger.info("Framework %s (%s) subscribed", fid, fw.name)
            else:
                old = fw.subscription
                if old is not None:
                    old.send({"type": "ERROR", "error": {"message": "Framework failed over"}})
                    old.close()
                for offer in list(fw.offers.values()):
                    self._remove_offer(offer)  # discarded, no RESCIND
                self._apply_framework_info(fw, info)
                fw.reregistered_time = now
                resend = True
                logger.info("Framework %s (%s) re-subscribed", fid, fw.name)
            # A subscribe (re)sets the suppressed roles; pymesos never sends any, so this
            # revives every role and clears the filters of those that were suppressed.
            revived = fw.suppressed_roles - suppressed
            fw.suppressed_roles = suppressed & set(fw.roles)
            if revived:
                self.filters.clear(fid, revived)
            fw.subscription = sub
            fw.connected = True
            fw.failover_deadline = None
            fw.count("subscribed")
            sub.send(
                {
                    "type": "SUBSCRIBED",
                    "subscribed": {
                        "framework_id": {"value": fid},
                        "heartbeat_interval_seconds": float(self.heartbeat_interval),
                        "master_info": self._master_info(),
                    },
                }
            )
            sub.send({"type": "HEARTBEAT"})
            if resend:
                for record in self.agents.values():
                    record.link.post("resend_unacknowledged", fid)
        self._loop.trigger()
        return sub

    def _apply_framework_info(self, fw: FrameworkRecord, info: dict[str, Any]) -> None:
        """Take a new FrameworkInfo, keeping the immutable fields (user, principal, checkpoint)."""
        new = copy.deepcopy(info)
        for key in ("user", "principal", "checkpoint"):
            if key in fw.info:
                new[key] = fw.info[key]
            else:
                new.pop(key, None)
        new["id"] = {"value": fw.framework_id}
        old_roles = set(fw.roles)
        fw.info = new
        fw.roles = validation.framework_roles(new)
        fw.capabilities = {c.get("type", "") for c in new.get("capabilities", [])}
        dropped = old_roles - set(fw.roles)
        if dropped:
            for offer in [o for o in fw.offers.values() if o.role in dropped]:
                self._rescind(offer)
            self.filters.clear(fw.framework_id, dropped)

    def subscription_closed(self, sub: Subscription) -> None:
        """The HTTP layer reports that a subscription's connection is gone."""
        with self.lock:
            fw = self.frameworks.get(sub.framework_id)
            if fw is None or fw.subscription is not sub:
                return
            self._disconnect(fw)

    def _disconnect(self, fw: FrameworkRecord) -> None:
        fw.subscription = None
        fw.connected = False
        for offer in list(fw.offers.values()):
            self._rescind(offer)
        timeout = float(fw.info.get("failover_timeout", 0.0))
        if self.max_failover_timeout is not None:
            timeout = min(timeout, self.max_failover_timeout)
        timeout = max(0.0, timeout)
        logger.info(
            "Framework %s (%s) disconnected; failover timeout %gs", fw.framework_id, fw.name,
            timeout,
        )
        if timeout <= _MAX_TIMER:
            fw.failover_deadline = time.monotonic() + timeout
        self._timer_cond.notify_all()

    def _timer_loop(self) -> None:
        with self.lock:
            while not self._stopped:
                now = time.monotonic()
                deadlines = [
                    fw.failover_deadline
                    for fw in self.frameworks.values()
                    if fw.failover_deadline is not None and not fw.connected
                ]
                for fw in list(self.frameworks.values()):
                    if (
                        not fw.connected
                        and fw.failover_deadline is not None
                        and fw.failover_deadline <= now
                    ):
                        logger.info(
                            "Framework %s (%s) failover timeout expired",
                            fw.framework_id,
                            fw.name,
                        )
                        self._remove_framework(fw)
                pending = [d for d in deadlines if d > now]
                self._timer_cond.wait(min(pending) - now if pending else None)

    # -- calls ---------------------------------------------------------------------------

    def check_call(self, call: Mapping[str, Any], stream_id: str | None) -> FrameworkRecord:
        """The checks Mesos makes before dispatching a non-SUBSCRIBE call.

        Raises:
            CallError: 400 "Framework cannot be found", 403 "Framework is not subscribed",
                400 for a missing or wrong ``Mesos-Stream-Id``.
        """
        fid = str(call["framework_id"]["value"])
        fw = self.frameworks.get(fid)
        if fw is None:
            raise CallError("Framework cannot be found")
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
        self, call: Mapping[str, Any], stream_id: str | None
    ) -> tuple[int, dict[str, Any] | None]:
        """Dispatch a validated non-SUBSCRIBE call.

        Returns:
            ``(HTTP status, JSON body or None)``: 202 for most calls, 200 for UPDATE_FRAMEWORK
            and RECONCILE_OPERATIONS, 501 for UNKNOWN.

        Raises:
            CallError: see :meth:`check_call`; also 400 for an invalid UPDATE_FRAMEWORK.
        """
        kind = call["type"]
        trigger = False
        with self.lock:
            fw = self.check_call(call, stream_id)
            fw.count("calls")
            fw.count(f"calls/{kind.lower()}")
            if kind == "TEARDOWN":
                self._count("messages_unregister_framework")
                logger.info("Framework %s (%s) tears down", fw.framework_id, fw.name)
                self._remove_framework(fw)
            elif kind == "ACCEPT":
                self._accept(fw, call["accept"])
            elif kind == "DECLINE":
                self._decline(fw, call["decline"])
            elif kind == "REVIVE":
                trigger = self._revive(fw, call.get("revive", {}).get("roles", []))
            elif kind == "SUPPRESS":
                self._suppress(fw, call.get("suppress", {}).get("roles", []))
            elif kind == "KILL":
                self._kill(fw, call["kill"])
            elif kind == "SHUTDOWN":
                self._shutdown_executor(fw, call["shutdown"])
            elif kind == "ACKNOWLEDGE":
                self._acknowledge(fw, call["acknowledge"])
            elif kind == "RECONCILE":
                self._reconcile(fw, call["reconcile"].get("tasks", []))
            elif kind == "MESSAGE":
                self._message(fw, call["message"])
            elif kind == "REQUEST":
                self._count("messages_resource_request")
            elif kind in ("ACCEPT_INVERSE_OFFERS", "DECLINE_INVERSE_OFFERS"):
                self._count(f"messages_{kind.lower()}")  # no inverse offers are ever made
            elif kind == "ACKNOWLEDGE_OPERATION_STATUS":
                self._count("messages_operation_status_update_acknowledgement")
            elif kind == "RECONCILE_OPERATIONS":
                ops = call["reconcile_operations"].get("operations", [])
                return 200, self._reconcile_operations(ops)
            elif kind == "UPDATE_FRAMEWORK":
                self._update_framework(fw, call["update_framework"])
                trigger = True
            else:  # UNKNOWN
                logger.warning("Received 'UNKNOWN' call from framework %s", fw.framework_id)
                return 501, None
        if trigger:
            self._loop.trigger()
        return (200 if kind == "UPDATE_FRAMEWORK" else 202), None

    def _count(self, metric: str, n: float = 1) -> None:
        self.metrics[metric] = self.metrics.get(metric, 0) + n

    # -- ACCEPT --------------------------------------------------------------------------

    def _offers_error(self, fw: FrameworkRecord, offer_ids: list[str]) -> str | None:
        if not offer_ids:
            return "No offers specified"
        seen: set[str] = set()
        for oid in offer_ids:
            if oid in seen:
                return f"Duplicate offer {oid} in offer list"
            seen.add(oid)
        for oid in offer_ids:
            if oid not in self.offers:
                return f"Offer {oid} is no longer valid"
        agent_id: str | None = None
        role: str | None = None
        for oid in offer_ids:
            offer = self.offers[oid]
            if offer.framework_id != fw.framework_id:
                return (
                    f"Offer {oid} has invalid framework {offer.framework_id} while framework "
                    f"{fw.framework_id} is expected"
                )
            if agent_id is None:
                agent_id, role = offer.agent_id, offer.role
            elif offer.agent_id != agent_id:
                return (
                    f"Aggregated offers must belong to one single agent. Offer {oid} uses "
                    f"agent {offer.agent_id} and agent {agent_id}"
                )
            elif offer.role != role:
                return (
                    f"Aggregated offers must be allocated to the same role. Offer {oid} uses "
                    f"role {offer.role} and role {role}"
                )
        return None

    def _accept(self, fw: FrameworkRecord, accept: Mapping[str, Any]) -> None:
        self._count("messages_launch_tasks")
        offer_ids = [str(o["value"]) for o in accept.get("offer_ids", [])]
        operations = accept.get("operations", [])
        error = self._offers_error(fw, offer_ids)
        if error is not None:
            for oid in offer_ids:
                offer = self.offers.get(oid)
                if offer is not None and offer.framework_id == fw.framework_id:
                    self._remove_offer(offer)  # recovered without a filter
            logger.warning(
                "ACCEPT call of framework %s used invalid offers %s: %s",
                fw.framework_id, offer_ids, error,
            )
            state = "TASK_DROPPED" if fw.partition_aware else "TASK_LOST"
            for operation in operations:
                for task in self._operation_tasks(operation):
                    self._count("tasks_dropped" if fw.partition_aware else "tasks_lost")
                    self._send_master_update(
                        fw,
                        task_id=task["task_id"]["value"],
                        agent_id=task["agent_id"]["value"],
                        state=state,
                        reason="REASON_INVALID_OFFERS",
                        message=f"Task launched with invalid offers: {error}",
                    )
            return

        offers = [self.offers[oid] for oid in offer_ids]
        for offer in offers:
            self._remove_offer(offer)
        fw.count("offers/accepted", len(offers))
        agent_id = offers[0].agent_id
        role = offers[0].role
        agent = self.agents[agent_id]
        available = Resources()
        for offer in offers:
            available = available + offer.resources

        for operation in operations:
            kind = operation.get("type")
            if kind == "LAUNCH":
                for task in operation.get("launch", {}).get("task_infos", []):
                    available = self._launch(fw, agent, role, task, available)
            elif kind == "LAUNCH_GROUP":
                group = operation.get("launch_group")
                if group is not None:
                    available = self._launch_group(fw, agent, role, group, available)
            else:
                self._operation_unsupported(fw, operation, agent_id)

        refuse = accept.get("filters", {}).get("refuse_seconds", alloc.DEFAULT_REFUSE_SECONDS)
        self._recover_with_filter(fw, role, agent_id, available, refuse)

    @staticmethod
    def _operation_tasks(operation: Mapping[str, Any]) -> list[dict[str, Any]]:
        if operation.get("type") == "LAUNCH":
            return list(operation.get("launch", {}).get("task_infos", []))
        if operation.get("type") == "LAUNCH_GROUP" and "launch_group" in operation:
            return list(operation["launch_group"]["task_group"].get("tasks", []))
        return []

    def _operation_unsupported(
        self, fw: FrameworkRecord, operation: Mapping[str, Any], agent_id: str
    ) -> None:
        kind = operation.get("type", "UNKNOWN")
        message = f"Operation {kind} is not supported by localmesos (no reservations or volumes)"
        logger.warning("Framework %s: %s", fw.framework_id, message)
        if "id" in operation and fw.subscription is not None:
            fw.subscription.send(
                {
                    "type": "UPDATE_OPERATION_STATUS",
                    "update_operation_status": {
                        "status": {
                            "operation_id": operation["id"],
                            "state": "OPERATION_ERROR",
                            "message": message,
                            "agent_id": {"value": agent_id},
                        }
                    },
                }
            )

    def _recover_with_filter(
        self,
        fw: FrameworkRecord,
        role: str,
        agent_id: str,
        unused: Resources,
        refuse_seconds: float | None,
    ) -> None:
        timeout = alloc.refuse_timeout(refuse_seconds, self.allocation_interval)
        if timeout is not None and not unused.is_empty():
            self.filters.add(
                fw.framework_id, role, agent_id, unused, timeout, time.monotonic()
            )

    def _task_error(self, task: Mapping[str, Any], fw: FrameworkRecord) -> str | None:
        """Mesos ``task::internal::validateTask`` (the part before the executor checks)."""
        task_id = task["task_id"]["value"]
        error = validation.validate_task_id(task_id)
        if error is not None:
            return error
        if task_id in fw.tasks:
            return f"Task has duplicate ID: {task_id}"
        return None

    def _task_resources_error(self, resources_json: list[dict[str, Any]]) -> str | None:
        try:
            resources = _resources_of(resources_json)
        except ResourceError as exc:
            return f"Invalid resources: {exc}"
        gpus = resources.scalar("gpus")
        if round(gpus * 1000) % 1000 != 0:
            return "Invalid 'gpus' resource: The 'gpus' resource must be an unsigned integer"
        return None

    def _validate_task(
        self,
        fw: FrameworkRecord,
        agent: AgentRecord,
        task: Mapping[str, Any],
    ) -> str | None:
        error = self._task_error(task, fw)
        if error is not None:
            return error
        if task["agent_id"]["value"] != agent.agent_id:
            return (
                f"Task uses invalid agent {task['agent_id']['value']} while agent "
                f"{agent.agent_id} is expected"
            )
        grace = _duration_seconds(task.get("kill_policy", {}).get("grace_period"))
        if grace is not None and grace < 0:
            return "Task's 'kill_policy.grace_period' must be non-negative"
        max_time = _duration_seconds(task.get("max_completion_time"))
        if max_time is not None and max_time < 0:
            return "Task's `max_completion_time` must be non-negative"
        if not task.get("resources"):
            return "Task uses no resources"
        error = self._task_resources_error(task["resources"])
        if error is not None:
            return f"Task uses invalid resources: {error}"
        return None

    def _validate_executor(
        self, fw: FrameworkRecord, agent: AgentRecord, executor: dict[str, Any]
    ) -> str | None:
        """Mesos ``executor::internal::validate``."""
        kind = executor.get("type")
        if kind == "DEFAULT" and "command" in executor:
            return "'ExecutorInfo.command' must not be set for 'DEFAULT' executor"
        if kind == "CUSTOM" and "command" not in executor:
            return "'ExecutorInfo.command' must be set for 'CUSTOM' executor"
        executor.setdefault("framework_id", {"value": fw.framework_id})
        if executor["framework_id"]["value"] != fw.framework_id:
            return (
                "ExecutorInfo has an invalid FrameworkID (Actual: "
                f"{executor['framework_id']['value']} vs Expected: {fw.framework_id})"
            )
        grace = _duration_seconds(executor.get("shutdown_grace_period"))
        if grace is not None and grace < 0:
            return "ExecutorInfo's 'shutdown_grace_period' must be non-negative"
        error = self._task_resources_error(executor.get("resources", []))
        if error is not None:
            return f"Executor uses invalid resources: {error}"
        existing = fw.executors.get((agent.agent_id, executor["executor_id"]["value"]))
        if existing is not None and existing.info != executor:
            return (
                "ExecutorInfo is not compatible with existing ExecutorInfo with same "
                "ExecutorID)"
            )
        return None

    def _launch(
        self,
        fw: FrameworkRecord,
        agent: AgentRecord,
        role: str,
        task: dict[str, Any],
        available: Resources,
    ) -> Resources:
        """Validate and launch one LAUNCH task; returns what is left of the offered resources."""
        task = copy.deepcopy(task)
        error = self._validate_task(fw, agent, task)
        executor = task.get("executor")
        if error is None and ("executor" in task) == ("command" in task):
            error = (
                "Task should have at least one (but not both) of CommandInfo or ExecutorInfo "
                "present"
            )
        total = Resources()
        new_executor = False
        if error is None:
            total = _resources_of(task["resources"])
            if executor is not None:
                error = self._validate_executor(fw, agent, executor)
                if error is None and executor.get("type", "CUSTOM") != "CUSTOM":
                    error = "'ExecutorInfo.type' must be 'CUSTOM'"
                if error is None and "command" not in executor:
                    error = "'ExecutorInfo.command' must be set"
                if error is None:
                    key = (agent.agent_id, executor["executor_id"]["value"])
                    new_executor = key not in fw.executors
                    if new_executor:
                        total = total + _resources_of(executor.get("resources", []))
        if error is None and not available.contains(total):
            error = (
                f"Total resources {mesos_resources_str(total)} required by task and its "
                f"executor is more than available {mesos_resources_str(available)}"
            )
        if error is not None:
            self._task_invalid(fw, task, error)
            return available
        executor_id = executor["executor_id"]["value"] if executor else ""
        if executor is not None and new_executor:
            fw.executors[(agent.agent_id, executor_id)] = ExecutorRecord(
                info=executor,
                agent_id=agent.agent_id,
                role=role,
                resources=_resources_of(executor.get("resources", [])),
            )
        self._add_task(fw, agent, role, task, executor_id)
        agent.link.post("launch_task", copy.deepcopy(fw.info), copy.deepcopy(task))
        return available - total

    def _launch_group(
        self,
        fw: FrameworkRecord,
        agent: AgentRecord,
        role: str,
        group: Mapping[str, Any],
        available: Resources,
    ) -> Resources:
        """Validate and launch a task group atomically (LAUNCH_GROUP)."""
        executor = copy.deepcopy(group["executor"])
        tasks = [copy.deepcopy(t) for t in group["task_group"].get("tasks", [])]
        error: str | None = None
        if not tasks:
            error = "Task group is empty"
        ids = [t["task_id"]["value"] for t in tasks]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if error is None and duplicates:
            error = f"Task group has duplicate task IDs: {', '.join(duplicates)}"
        for task in tasks:
            if error is not None:
                break
            task_executor = task.get("executor")
            if task_executor is not None:
                task_executor.setdefault("framework_id", {"value": fw.framework_id})
            executor.setdefault("framework_id", {"value": fw.framework_id})
            if task_executor is not None and task_executor != executor:
                error = (
                    f"The `ExecutorInfo` of task '{task['task_id']['value']}' is different "
                    f"from executor '{executor['executor_id']['value']}'"
                )
                break
            task["executor"] = executor
            task_error = self._validate_task(fw, agent, task)
            if task_error is None and "container" in task:
                if task["container"].get("type") == "DOCKER":
                    task_error = "Docker ContainerInfo is not supported on the task"
            if task_error is not None:
                error = f"Task '{task['task_id']['value']}' is invalid: {task_error}"
        total = Resources()
        if error is None:
            error = self._validate_executor(fw, agent, executor)
        if error is None:
            kind = executor.get("type")
            if kind is None:
                error = "'ExecutorInfo.type' must be set"
            elif kind == "UNKNOWN":
                error = "Unknown executor type"
            elif executor.get("container", {}).get("type") == "DOCKER":
                error = "Docker ContainerInfo is not supported on the executor"
        executor_id = executor["executor_id"]["value"]
        if error is None:
            exec_resources = _resources_of(executor.get("resources", []))
            cpus = exec_resources.scalar("cpus")
            mem = exec_resources.scalar("mem")
            if cpus < 0.01:
                shown = f"{cpus:g}" if cpus else "None"
                error = (
                    f"Executor '{executor_id}' uses less CPUs ({shown}) than the minimum "
                    "required (0.01)"
                )
            elif mem < 32:
                shown = f"{mem:g}" if mem else "None"
                error = (
                    f"Executor '{executor_id}' uses less memory ({shown}) than the minimum "
                    "required (32)"
                )
            elif exec_resources.scalar("disk") <= 0:
                error = f"Executor '{executor_id}' uses no disk"
            else:
                for task in tasks:
                    total = total + _resources_of(task["resources"])
                key = (agent.agent_id, executor_id)
                new_executor = key not in fw.executors
                if new_executor:
                    total = total + exec_resources
                if not available.contains(total):
                    error = (
                        f"Total resources {mesos_resources_str(total)} required by task group "
                        f"and its executor are more than available "
                        f"{mesos_resources_str(available)}"
                    )
        if error is not None:
            for task in tasks:
                self._task_invalid(fw, task, error)
            return available
        key = (agent.agent_id, executor_id)
        if key not in fw.executors:
            fw.executors[key] = ExecutorRecord(
                info=executor,
                agent_id=agent.agent_id,
                role=role,
                resources=_resources_of(executor.get("resources", [])),
            )
        members = tuple(ids)
        for task in tasks:
            record = self._add_task(fw, agent, role, task, executor_id)
            record.group = members
        for task in tasks:
            # The embedded agent runs each task of a group as a command task; the master keeps
            # the group's all-or-nothing semantics (see _end_group).
            agent_task = {k: v for k, v in task.items() if k != "executor"}
            agent.link.post("launch_task", copy.deepcopy(fw.info), agent_task)
        return available - total

    def _add_task(
        self,
        fw: FrameworkRecord,
        agent: AgentRecord,
        role: str,
        task: dict[str, Any],
        executor_id: str,
    ) -> TaskRecord:
        record = TaskRecord(
            info=task,
            framework_id=fw.framework_id,
            agent_id=agent.agent_id,
            role=role,
            resources=_resources_of(task["resources"]),
            executor_id=executor_id,
        )
        fw.tasks[record.task_id] = record
        if executor_id:
            executor_record = fw.executors.get((agent.agent_id, executor_id))
            if executor_record is not None:
                executor_record.tasks.add(record.task_id)
        self._count("tasks_launched")
        logger.info(
            "Launching task %s of framework %s on agent %s with %s",
            record.task_id, fw.framework_id, agent.agent_id, record.resources,
        )
        return record

    def _task_invalid(self, fw: FrameworkRecord, task: Mapping[str, Any], error: str) -> None:
        self._count("tasks_error")
        logger.warning(
            "Task %s of framework %s is invalid: %s",
            task["task_id"]["value"], fw.framework_id, error,
        )
        self._send_master_update(
            fw,
            task_id=task["task_id"]["value"],
            agent_id=task["agent_id"]["value"],
            state="TASK_ERROR",
            reason="REASON_TASK_INVALID",
            message=error,
        )

    def _send_master_update(
        self,
        fw: FrameworkRecord,
        *,
        task_id: str,
        state: str,
        reason: str,
        message: str,
        agent_id: str | None = None,
        executor_id: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Forward a master-generated update (no uuid, ``SOURCE_MASTER``)."""
        if state in PARTITION_AWARE_STATES and not fw.partition_aware:
            state = "TASK_LOST"
        status: dict[str, Any] = {
            "task_id": {"value": task_id},
            "state": state,
            "message": message,
            "source": "SOURCE_MASTER",
            "reason": reason,
            "timestamp": time.time(),
        }
        if agent_id:
            status["agent_id"] = {"value": agent_id}
        if executor_id:
            status["executor_id"] = {"value": executor_id}
        if extra:
            status.update(extra)
        if fw.subscription is not None:
            fw.subscription.send({"type": "UPDATE", "update": {"status": status}})
            fw.count("events/update")

    # -- DECLINE / REVIVE / SUPPRESS -----------------------------------------------------

    def _decline(self, fw: FrameworkRecord, decline: Mapping[str, Any]) -> None:
        self._count("messages_decline_offers")
        refuse = decline.get("filters", {}).get("refuse_seconds", alloc.DEFAULT_REFUSE_SECONDS)
        for oid in (str(o["value"]) for o in decline.get("offer_ids", [])):
            offer = self.offers.get(oid)
            if offer is None or offer.framework_id != fw.framework_id:
                continue  # unknown offers are ignored
            self._remove_offer(offer)
            fw.count("offers/declined")
            self._recover_with_filter(fw, offer.role, offer.agent_id, offer.resources, refuse)

    def _valid_roles(self, fw: FrameworkRecord, roles: list[str]) -> set[str] | None:
        if not roles:
            return set(fw.roles)
        for role in roles:
            if validation.validate_role(role) is not None or role not in fw.roles:
                return None
        return set(roles)

    def _revive(self, fw: FrameworkRecord, roles: list[str]) -> bool:
        self._count("messages_revive_offers")
        wanted = self._valid_roles(fw, roles)
        if wanted is None:
            logger.warning("Dropping REVIVE of framework %s: invalid roles %s", fw.framework_id,
                           roles)
            return False
        fw.suppressed_roles -= wanted
        self.filters.clear(fw.framework_id, wanted)
        return True

    def _suppress(self, fw: FrameworkRecord, roles: list[str]) -> None:
        self._count("messages_suppress_offers")
        wanted = self._valid_roles(fw, roles)
        if wanted is None:
            logger.warning(
                "Dropping SUPPRESS of framework %s: invalid roles %s", fw.framework_id, roles
            )
            return
        fw.suppressed_roles |= wanted

    def _update_framework(self, fw: FrameworkRecord, update: Mapping[str, Any]) -> None:
        info = copy.deepcopy(dict(update["framework_info"]))
        error = validation.validate_framework_info(info)
        if error is None:
            for key in ("user", "principal", "checkpoint"):
                if info.get(key) != fw.info.get(key):
                    error = f"Updating 'FrameworkInfo.{key}' is unsupported"
                    break
        if error is not None:
            raise CallError(f"Failed to update framework: {error}")
        suppressed = set(update.get("suppressed_roles", []))
        self._apply_framework_info(fw, info)
        revived = fw.suppressed_roles - suppressed
        fw.suppressed_roles = suppressed & set(fw.roles)
        if revived:
            self.filters.clear(fw.framework_id, revived)
        self._count("messages_update_framework")

    # -- KILL / SHUTDOWN / MESSAGE -------------------------------------------------------

    def _kill(self, fw: FrameworkRecord, kill: Mapping[str, Any]) -> None:
        self._count("messages_kill_task")
        task_id = str(kill["task_id"]["value"])
        agent_id = _fid(kill.get("agent_id"))
        task = fw.tasks.get(task_id)
        if task is None:
            logger.warning(
                "Cannot kill task %s of framework %s: it is unknown; performing reconciliation",
                task_id, fw.framework_id,
            )
            entry: dict[str, Any] = {"task_id": {"value": task_id}}
            if agent_id is not None:
                entry["agent_id"] = {"value": agent_id}
            self._reconcile(fw, [entry], count=False)
            return
        if agent_id is not None and agent_id != task.agent_id:
            logger.warning(
                "Ignoring kill of task %s: agent %s does not match %s",
                task_id, agent_id, task.agent_id,
            )
            return
        if task.state in TERMINAL_STATES:
            return
        grace = _duration_seconds(kill.get("kill_policy", {}).get("grace_period"))
        self.agents[task.agent_id].link.post("kill_task", fw.framework_id, task_id, grace)

    def _shutdown_executor(self, fw: FrameworkRecord, shutdown: Mapping[str, Any]) -> None:
        self._count("messages_shutdown_executor")
        agent_id = str(shutdown["agent_id"]["value"])
        executor_id = str(shutdown["executor_id"]["value"])
        record = self.agents.get(agent_id)
        if record is None:
            logger.warning("Ignoring SHUTDOWN on unknown agent %s", agent_id)
            return
        if hasattr(record.agent, "shutdown_executor"):
            record.link.post("shutdown_executor", fw.framework_id, executor_id)
            return
        # The embedded agent has no executor processes of its own: shutting the executor
        # down is killing its tasks.
        for task in fw.tasks.values():
            if (
                task.agent_id == agent_id
                and task.executor_id == executor_id
                and task.state not in TERMINAL_STATES
            ):
                record.link.post("kill_task", fw.framework_id, task.task_id, None)

    def _message(self, fw: FrameworkRecord, message: Mapping[str, Any]) -> None:
        self._count("messages_framework_to_executor")
        agent_id = str(message["agent_id"]["value"])
        record = self.agents.get(agent_id)
        if record is not None and hasattr(record.agent, "framework_message"):
            record.link.post(
                "framework_message",
                fw.framework_id,
                str(message["executor_id"]["value"]),
                message["data"],
            )
        else:
            logger.info(
                "Dropping framework message of %s to executor %s (best effort)",
                fw.framework_id, message["executor_id"]["value"],
            )

    # -- ACKNOWLEDGE ---------------------------------------------------------------------

    def _acknowledge(self, fw: FrameworkRecord, ack: Mapping[str, Any]) -> None:
        self._count("messages_status_update_acknowledgement")
        agent_id = str(ack["agent_id"]["value"])
        task_id = str(ack["task_id"]["value"])
        uuid_b64 = str(ack["uuid"])
        record = self.agents.get(agent_id)
        if record is None:
            logger.warning(
                "Cannot send status update acknowledgement for task %s of framework %s to "
                "unknown agent %s", task_id, fw.framework_id, agent_id,
            )
            self._count("invalid_status_update_acknowledgements")
            return
        task = fw.tasks.get(task_id)
        if task is not None:
            if task.status_update_state is None:
                self._count("invalid_status_update_acknowledgements")
                return
            if (
                task.status_update_state in TERMINAL_STATES
                and task.status_update_uuid == _uuid_bytes(uuid_b64)
            ):
                self._remove_task(fw, task)
        self._count("valid_status_update_acknowledgements")
        record.link.post("acknowledge", fw.framework_id, task_id, uuid_b64)

    # -- RECONCILE -----------------------------------------------------------------------

    def _reconcile(
        self, fw: FrameworkRecord, tasks: list[Mapping[str, Any]], *, count: bool = True
    ) -> None:
        if count:
            self._count("messages_reconcile_tasks")
        if not tasks:
            for task in fw.tasks.values():
                self._reconcile_known(fw, task)
            return
        for entry in tasks:
            task_id = str(entry["task_id"]["value"])
            agent_id = _fid(entry.get("agent_id"))
            known = fw.tasks.get(task_id)
            if known is not None:
                self._reconcile_known(fw, known)
            elif agent_id is not None and agent_id in self.agents:
                self._send_master_update(
                    fw,
                    task_id=task_id,
                    agent_id=agent_id,
                    state="TASK_GONE",
                    reason="REASON_RECONCILIATION",
                    message="Reconciliation: Task is unknown to the agent",
                )
            else:
                self._send_master_update(
                    fw,
                    task_id=task_id,
                    agent_id=agent_id,
                    state="TASK_UNKNOWN",
                    reason="REASON_RECONCILIATION",
                    message="Reconciliation: Task is unknown",
                )

    def _reconcile_known(self, fw: FrameworkRecord, task: TaskRecord) -> None:
        state = task.status_update_state or task.state
        extra: dict[str, Any] = {}
        if task.statuses and "healthy" in task.statuses[-1]:
            extra["healthy"] = task.statuses[-1]["healthy"]
        self._send_master_update(
            fw,
            task_id=task.task_id,
            agent_id=task.agent_id,
            executor_id=task.executor_id or None,
            state=state,
            reason="REASON_RECONCILIATION",
            message="Reconciliation: Latest task state",
            extra=extra,
        )

    def _reconcile_operations(self, operations: list[Mapping[str, Any]]) -> dict[str, Any]:
        self._count("messages_reconcile_operations")
        statuses = []
        for op in operations:
            status: dict[str, Any] = {
                "operation_id": op["operation_id"],
                "state": "OPERATION_UNKNOWN",
            }
            if "agent_id" in op:
                status["agent_id"] = op["agent_id"]
            statuses.append(status)
        return {
            "type": "RECONCILE_OPERATIONS",
            "reconcile_operations": {"operation_statuses": statuses},
        }

    # -- status updates from agents ------------------------------------------------------

    def receive_status_update(self, status: dict[str, Any]) -> None:
        """Take a status update from an agent (any thread; the agent holds no lock).

        ``status`` is a TaskStatus carrying ``uuid``, ``agent_id``, ``executor_id`` and the
        routing-only ``framework_id`` (stripped before the update is forwarded).
        """
        status = dict(status)
        fid = status.pop("framework_id", None)
        framework_id = fid.get("value") if isinstance(fid, Mapping) else fid
        agent_id = str((status.get("agent_id") or {}).get("value", ""))
        task_id = str((status.get("task_id") or {}).get("value", ""))
        # Mesos status updates carry the agent's latest state of the task, so the master learns
        # of a terminal state even while an earlier update waits for its acknowledgement.
        latest: str | None = None
        with self.lock:
            record = self.agents.get(agent_id)
        if record is not None and hasattr(record.agent, "latest_state") and framework_id:
            try:
                latest = record.agent.latest_state(str(framework_id), task_id)
            except Exception:  # noqa: BLE001 - best effort
                latest = None
        with self.lock:
            fw = self.frameworks.get(str(framework_id)) if framework_id else None
            if fw is None:
                logger.info(
                    "Ignoring status update %s of task %s: unknown framework %s",
                    status.get("state"), task_id, framework_id,
                )
                self._count("invalid_status_updates")
                return
            if fw.connected and fw.subscription is not None:
                fw.subscription.send({"type": "UPDATE", "update": {"status": status}})
                fw.count("events/update")
            task = fw.tasks.get(task_id)
            if task is None:
                self._count("invalid_status_updates")
                return
            self._count("valid_status_updates")
            # Recovered resources wait for the next batch allocation, as in Mesos.
            self._update_task(fw, task, status, latest)

    def _update_task(
        self,
        fw: FrameworkRecord,
        task: TaskRecord,
        status: Mapping[str, Any],
        latest: str | None,
    ) -> None:
        state = str(status.get("state"))
        was_terminal = task.state in TERMINAL_STATES
        if not was_terminal:
            task.state = latest or state
        task.status_update_state = state
        task.status_update_uuid = _uuid_bytes(status.get("uuid"))
        uuid_b64 = str(status.get("uuid", ""))
        if not uuid_b64 or uuid_b64 not in task.seen_uuids:
            # A re-sent update is recorded once; ``data`` is never stored (Mesos strips it).
            task.seen_uuids.add(uuid_b64)
            task.statuses.append({k: v for k, v in status.items() if k not in ("data", "uuid")})
        if not was_terminal and task.state in TERMINAL_STATES:
            self._count(task.state.replace("TASK_", "tasks_").lower())
            self._recover_task(fw, task)
            if task.group and task.state != "TASK_FINISHED":
                self._end_group(fw, task)

    def _end_group(self, fw: FrameworkRecord, failed: TaskRecord) -> None:
        """A task of a group failed or was killed: kill the rest (as the default executor)."""
        for task_id in failed.group:
            task = fw.tasks.get(task_id)
            if task is not None and task is not failed and task.state not in TERMINAL_STATES:
                self.agents[task.agent_id].link.post("kill_task", fw.framework_id, task_id, None)

    def _recover_task(self, fw: FrameworkRecord, task: TaskRecord) -> None:
        """Return a task's resources (and its executor's, when it was the last task)."""
        if task.recovered:
            return
        task.recovered = True
        if task.executor_id:
            key = (task.agent_id, task.executor_id)
            executor = fw.executors.get(key)
            if executor is not None:
                executor.tasks.discard(task.task_id)
                if not executor.tasks:
                    del fw.executors[key]

    def _remove_task(self, fw: FrameworkRecord, task: TaskRecord) -> None:
        """Move a task whose terminal update was acknowledged to the completed tasks."""
        self._recover_task(fw, task)
        fw.tasks.pop(task.task_id, None)
        fw.completed_tasks.append(task)

    # -- removal -------------------------------------------------------------------------

    def _remove_framework(self, fw: FrameworkRecord) -> None:
        now = time.time()
        for offer in list(fw.offers.values()):
            self._remove_offer(offer)
        for task in list(fw.tasks.values()):
            if task.state not in TERMINAL_STATES:
                task.state = "TASK_KILLED"
                task.statuses.append(
                    {
                        "task_id": {"value": task.task_id},
                        "state": "TASK_KILLED",
                        "source": "SOURCE_MASTER",
                        "reason": "REASON_FRAMEWORK_REMOVED",
                        "message": f"Framework {fw.framework_id} removed",
                        "timestamp": now,
                    }
                )
                self._count("tasks_killed")
            self._remove_task(fw, task)
        fw.executors.clear()
        for record in self.agents.values():
            record.link.post("shutdown_framework", fw.framework_id)
        if fw.subscription is not None:
            fw.subscription.close()
        fw.subscription = None
        fw.connected = False
        fw.failover_deadline = None
        fw.unregistered_time = now
        self.filters.clear(fw.framework_id)
        self.frameworks.pop(fw.framework_id, None)
        self.completed_frameworks.append(fw)
        self._removed_ids.add(fw.framework_id)
        logger.info("Removed framework %s (%s)", fw.framework_id, fw.name)

    # -- offers --------------------------------------------------------------------------

    def _remove_offer(self, offer: OfferRecord) -> None:
        self.offers.pop(offer.offer_id, None)
        fw = self.frameworks.get(offer.framework_id)
        if fw is not None:
            fw.offers.pop(offer.offer_id, None)

    def _rescind(self, offer: OfferRecord) -> None:
        self._remove_offer(offer)
        self._count("offers_rescinded")
        fw = self.frameworks.get(offer.framework_id)
        if fw is not None:
            fw.count("offers/rescinded")
            if fw.subscription is not None:
                fw.subscription.send(
                    {"type": "RESCIND", "rescind": {"offer_id": {"value": offer.offer_id}}}
                )

    def _allocations(self) -> tuple[dict[str, Resources], dict[str, dict[str, Resources]]]:
        """Under the lock: (used + offered per agent, allocation per framework per role)."""
        per_agent: dict[str, Resources] = {agent_id: Resources() for agent_id in self.agents}
        per_fw: dict[str, dict[str, Resources]] = {}
        for fw in self.frameworks.values():
            roles = per_fw.setdefault(fw.framework_id, {})
            for task in fw.tasks.values():
                if not task.recovered:
                    per_agent[task.agent_id] = per_agent[task.agent_id] + task.resources
                    roles[task.role] = roles.get(task.role, Resources()) + task.resources
            for executor in fw.executors.values():
                per_agent[executor.agent_id] = per_agent[executor.agent_id] + executor.resources
                roles[executor.role] = roles.get(executor.role, Resources()) + executor.resources
            for offer in fw.offers.values():
                per_agent[offer.agent_id] = per_agent[offer.agent_id] + offer.resources
                roles[offer.role] = roles.get(offer.role, Resources()) + offer.resources
        return per_agent, per_fw

    def _allocate(self) -> None:
        """One allocation run (on the allocation loop's thread)."""
        started = time.perf_counter()
        with self.lock:
            if self._stopped:
                return
            per_agent, per_fw = self._allocations()
            agents = [
                alloc.AgentCandidate(
                    agent_id, record.total - per_agent[agent_id], record.has_gpus
                )
                for agent_id, record in self.agents.items()
            ]
            frameworks = []
            for fw in self.frameworks.values():
                roles = tuple(r for r in fw.roles if r not in fw.suppressed_roles)
                if not fw.connected or not roles:
                    continue
                frameworks.append(
                    alloc.FrameworkCandidate(
                        framework_id=fw.framework_id,
                        roles=roles,
                        allocations=per_fw.get(fw.framework_id, {}),
                        gpu_capable="GPU_RESOURCES" in fw.capabilities,
                        allocation_count=fw.allocation_count,
                    )
                )
            total = Resources()
            for record in self.agents.values():
                total = total + record.total
            now = time.monotonic()
            grants = alloc.allocate(
                agents,
                frameworks,
                total=total,
                is_filtered=lambda f, r, a, res: self.filters.is_filtered(f, r, a, res, now),
                weights=self.weights,
                min_allocatable=self.min_allocatable,
                rng=self._rng,
            )
            by_framework: dict[str, list[alloc.Grant]] = {}
            for grant in grants:
                by_framework.setdefault(grant.framework_id, []).append(grant)
            for fid, fw_grants in by_framework.items():
                fw = self.frameworks[fid]
                if fw.subscription is None:
                    continue
                offers = [self._make_offer(fw, grant) for grant in fw_grants]
                fw.allocation_count += len(fw_grants)
                fw.count("offers/sent", len(offers))
                fw.subscription.send({"type": "OFFERS", "offers": {"offers": offers}})
                fw.count("events/offers")
            self.allocation_runs += 1
            self.last_allocation_ms = (time.perf_counter() - started) * 1000.0
            self.allocation_run_ms.append(self.last_allocation_ms)

    def agent_path(self, agent_id: str) -> str:
        """The agent's libprocess path, ``/slave(N)``: N counts agents in order of addition.

        Every embedded agent is served on the master's port, so each gets its own N (a real
        agent is always ``slave(1)`` on its own host:port).
        """
        for index, known in enumerate(self.agents, start=1):
            if known == agent_id:
                return f"/slave({index})"
        return "/slave(1)"

    def agent_state(self, index: int) -> dict[str, Any] | None:
        """``/slave(N)/state`` of the N-th agent, or None."""
        with self.lock:
            records = list(self.agents.values())
        if not 1 <= index <= len(records):
            return None
        return records[index - 1].agent.state()

    def _make_offer(self, fw: FrameworkRecord, grant: alloc.Grant) -> dict[str, Any]:
        offer_id = f"{self.master_id}-O{self._next_offer}"
        self._next_offer += 1
        agent = self.agents[grant.agent_id]
        refined = "RESERVATION_REFINEMENT" in fw.capabilities
        resources = grant.resources.to_json(role=None if refined else "*")
        hostname = str(agent.info.get("hostname", self.hostname))
        port = int(agent.info.get("port", 5051))
        offer: dict[str, Any] = {
            "id": {"value": offer_id},
            "framework_id": {"value": fw.framework_id},
            "agent_id": {"value": grant.agent_id},
            "hostname": hostname,
            "url": {
                "scheme": "http",
                "address": {"hostname": hostname, "ip": hostname, "port": port},
                "path": self.agent_path(grant.agent_id),
            },
            "resources": resources,
        }
        if agent.info.get("attributes"):
            offer["attributes"] = copy.deepcopy(agent.info["attributes"])
        executor_ids = [
            {"value": executor_id}
            for (agent_id, executor_id) in fw.executors
            if agent_id == grant.agent_id
        ]
        if executor_ids:
            offer["executor_ids"] = executor_ids
        if fw.multi_role:
            offer["allocation_info"] = {"role": grant.role}
            for item in resources:
                item["allocation_info"] = {"role": grant.role}
        record = OfferRecord(
            offer_id, fw.framework_id, grant.agent_id, grant.role, grant.resources, offer
        )
        self.offers[offer_id] = record
        fw.offers[offer_id] = record
        return offer

    # -- files -----------------------------------------------------------------------------

    def file_roots(self) -> dict[str, str]:
        """Virtual path → real directory for ``/files``: every agent's sandboxes.

        Each sandbox is served under its real path, under Mesos' virtual path
        ``/frameworks/<fw>/executors/<executor>/runs/latest`` and under the agent's
        ``/slaves/<agent>/frameworks/<fw>/executors/<executor>/runs/latest``. Must not be
        called with the master lock held (it asks the agents).
        """
        with self.lock:
            agents = [record.agent for record in self.agents.values()]
        roots: dict[str, str] = {}
        for agent in agents:
            file_roots = getattr(agent, "file_roots", None)
            if file_roots is None:
                continue
            for virtual, real in file_roots().items():
                roots[str(virtual)] = str(real)
                parts = str(virtual).split("/")
                # /slaves/<a>/frameworks/<f>/executors/<e>/runs/latest -> /frameworks/...
                if len(parts) == 9 and parts[1] == "slaves" and parts[3] == "frameworks":
                    roots["/" + "/".join(parts[3:])] = str(real)
        return roots
