"""The master of agents that run in another process than it: found through a detector, reached
over HTTP (:mod:`localmesos.protocol.libprocess`).

As a Mesos agent (apache/mesos ``src/slave/slave.cpp``) each agent registers with the master its
detector names (``detected``, ``doReliableRegistration``: ``RegisterSlaveMessage`` until the
master answers, backing off from about a second to a minute), then sends it its messages
(status updates, exited executors, executors' messages, pongs) and re-registers, when it lost
the master, with whichever master the detector names then. The detector here is a callable
``leader() -> "host:port" | None``, asked at each (re-)registration: a fixed address, or one
that follows an election.

Each agent's messages to the master go out in order on a thread of its own (an
:class:`_Outbox`), to the master it last (re-)registered with; one that cannot be delivered is
lost (the agent's status update retries and re-registration recover, as in Mesos).
"""

from __future__ import annotations

from collections.abc import Callable
import logging
import queue
import random
import threading
from typing import Any

from disauto.localmesos.agent.master_link import MasterCallbacks
from disauto.localmesos.protocol import libprocess
from disauto.localmesos.protocol.registration import DEFAULT_AGENT_PING_TIMEOUT
from disauto.localmesos.protocol.registration import DEFAULT_MAX_AGENT_PING_TIMEOUTS
from disauto.localmesos.protocol.registration import REGISTRATION_BACKOFF
from disauto.localmesos.protocol.registration import REGISTRATION_BACKOFF_MAX
from disauto.localmesos.protocol.registration import ReregisterAgent
from disauto.localmesos.protocol.registration import Reregistered


logger = logging.getLogger("disauto.localmesos.agent")

Leader = Callable[[], str | None]
"""The master detector: ``host:port`` of the leading master, None while there is none."""
LatestState = Callable[[str, str], str | None]
"""``(framework_id, task_id) -> the agent's latest state of the task``."""


class MasterClient:
    """How the agents of one process reach their master (see the module docstring).

    Args:
        leader: the master detector.
        address: ``host:port`` where this process serves its agents (their pids' address).
        timeout: seconds a message may take before it counts as lost.

    Thread safety: thread-safe.
    """

    def __init__(self, leader: Leader, address: str,
                 timeout: float = libprocess.DEFAULT_TIMEOUT) -> None:
        self.leader = leader
        self.address = address
        self.timeout = timeout
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._total_ping_timeout = DEFAULT_AGENT_PING_TIMEOUT * DEFAULT_MAX_AGENT_PING_TIMEOUTS
        self._masters: dict[str, str] = {}  # agent id -> the master it registered with
        self._channels: dict[str, tuple[libprocess.Messenger, _Outbox]] = {}

    @property
    def total_ping_timeout(self) -> float:
        """The master's ``agent_ping_timeout × max_agent_ping_timeouts``, as it last said."""
        with self._lock:
            return self._total_ping_timeout

    def master_of(self, agent_id: str) -> str | None:
        """``host:port`` of the master the agent last (re-)registered with."""
        with self._lock:
            return self._masters.get(agent_id)

    def pid(self, process: str) -> str:
        """The pid of one of this process' agents (``slave(N)@host:port``)."""
        return f"{process}@{self.address}"

    # -- registration ----------------------------------------------------------------------

    def register(self, process: str, info: dict[str, Any]) -> str | None:
        """Register a new agent (``RegisterSlaveMessage`` with its ``AgentInfo``, no id) with the
        leading master, again and again with a growing backoff until one answers; its id, or
        None once :meth:`stop` was called."""
        messenger = libprocess.Messenger(self.pid(process), self.timeout)
        backoff = REGISTRATION_BACKOFF
        try:
            while not self._stopped.is_set():
                master = self.leader()
                answer = None if master is None else messenger.call(
                    master, "master", libprocess.REGISTER_AGENT,
                    {"pid": self.pid(process), "info": info})
                if answer is not None and isinstance(answer[1], dict):
                    body = answer[1]
                    agent_id = str(body["agent_id"])
                    with self._lock:
                        self._total_ping_timeout = float(body["total_ping_timeout"])
                        self._masters[agent_id] = master or ""
                    logger.info("Agent %s registered with master %s at %s", agent_id,
                                body.get("master_id"), master)
                    return agent_id
                logger.info("Agent %s: no master answered (%s); registering again",
                            process, master or "none detected")
                self._stopped.wait(random.uniform(0.5, 1.0) * backoff)
                backoff = min(backoff * 2, REGISTRATION_BACKOFF_MAX)
        finally:
            messenger.close()
        return None

    def _reregister(self, messenger: libprocess.Messenger, report: ReregisterAgent
                    ) -> Reregistered | None:
        """One ``ReregisterSlaveMessage`` to the leading master: its answer, None when there is
        no master, it was lost or ignored."""
        master = self.leader()
        if master is None or self._stopped.is_set():
            return None
        answer = messenger.call(master, "master", libprocess.REREGISTER_AGENT,
                                {"pid": messenger.sender, "report": report.to_json()})
        if answer is None or not isinstance(answer[1], dict):
            return None
        try:
            reregistered = Reregistered.from_json(answer[1])
        except (KeyError, TypeError, ValueError) as exc:
            logger.warning("Malformed answer of master %s to re-registration: %s", master, exc)
            return None
        with self._lock:
            self._masters[report.agent_id] = master
            self._total_ping_timeout = reregistered.total_ping_timeout
        return reregistered

    # -- messages --------------------------------------------------------------------------

    def callbacks(self, agent_id: str, process: str,
                  latest_state: LatestState) -> MasterCallbacks:
        """The agent's messages to its master, each sent in order (one lost when it cannot be
        delivered); a status update carries the agent's latest state of its task."""
        messenger, outbox = self._channel(agent_id, process)

        def status_update(status: dict[str, Any]) -> None:
            framework_id = status.get("framework_id") or ""
            if isinstance(framework_id, dict):
                framework_id = framework_id.get("value", "")
            task_id = (status.get("task_id") or {}).get("value", "")
            outbox.post(libprocess.STATUS_UPDATE, {
                "status": status, "latest_state": latest_state(framework_id, task_id)})

        def executor_exited(agent: str, framework_id: str, executor_id: str,
                            status: int) -> None:
            outbox.post(libprocess.EXITED_EXECUTOR, {
                "agent_id": agent, "framework_id": framework_id, "executor_id": executor_id,
                "status": status})

        def executor_message(agent: str, framework_id: str, executor_id: str,
                             data: str) -> None:
            outbox.post(libprocess.EXECUTOR_TO_FRAMEWORK, {
                "agent_id": agent, "framework_id": framework_id, "executor_id": executor_id,
                "data": data})

        return MasterCallbacks(
            status_update=status_update, executor_exited=executor_exited,
            executor_message=executor_message,
            pong=lambda agent: outbox.post(libprocess.PONG_AGENT, {"agent_id": agent}),
            reregister=lambda agent, report: self._reregister(messenger, report))

    def _channel(self, agent_id: str, process: str) -> tuple[libprocess.Messenger, _Outbox]:
        """The agent's messenger and outbox (the same for the agent its restart makes)."""
        with self._lock:
            channel = self._channels.get(agent_id)
            if channel is None:
                messenger = libprocess.Messenger(self.pid(process), self.timeout)
                outbox = _Outbox(agent_id, lambda name, body: self._deliver(
                    agent_id, messenger, name, body))
                channel = self._channels[agent_id] = (messenger, outbox)
            return channel

    def _deliver(self, agent_id: str, messenger: libprocess.Messenger, name: str,
                 body: dict[str, Any]) -> None:
        master = self.master_of(agent_id)
        if master:
            messenger.send(master, "master", name, body)

    def stop(self) -> None:
        """Stop registering and sending (messages not sent yet are dropped)."""
        self._stopped.set()
        with self._lock:
            channels = list(self._channels.values())
        for messenger, outbox in channels:
            outbox.stop()
            messenger.close()


class _Outbox:
    """One agent's messages to the master, sent in order on a thread of its own."""

    def __init__(self, agent_id: str, deliver: Callable[[str, dict[str, Any]], None]) -> None:
        self._deliver = deliver
        self._queue: queue.SimpleQueue[tuple[str, dict[str, Any]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=f"to-master-{agent_id}",
                                        daemon=True)
        self._thread.start()

    def post(self, name: str, body: dict[str, Any]) -> None:
        self._queue.put((name, body))

    def stop(self) -> None:
        self._queue.put(None)
        if self._thread is not threading.current_thread():
            self._thread.join(10)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                self._deliver(*item)
            except Exception:  # noqa: BLE001 - one failing message must not stop the rest
                logger.exception("Sending %s to the master failed", item[0])
