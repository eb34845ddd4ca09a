"""An embedded agent's side of its link to the master: pings, losing the master and
re-registering.

As a Mesos 1.11 agent (apache/mesos ``src/slave/slave.cpp``: ``ping``, ``pingTimeout``,
``doReliableRegistration``, ``reregistered``):

* The master pings; the agent answers each ping and notes when it came. An agent that hears
  no ping for the master's total ping timeout (``agent_ping_timeout ×
  max_agent_ping_timeouts``) takes the master for lost: it stops sending status updates and
  tries to re-register, backing off from about a second (``registration_backoff_factor``) to
  a minute, until the master answers.
* A ping saying the master takes the agent for disconnected also makes it re-register, and
  so does a new leading master (:meth:`MasterLink.master_detected`, from the agents' host
  when its detector names another master).
* Re-registered, it sends the updates it held back, and answers the master's reconciliation:
  each task the master knows but the agent does not becomes TASK_DROPPED (TASK_LOST for a
  framework without PARTITION_AWARE), "Reconciliation: task unknown to the agent",
  ``REASON_RECONCILIATION``. Told to shut down (it was marked gone, its machine is DOWN), it
  stops, killing its tasks.

The agent's ``master_link`` part (:mod:`localmesos.agent.parts`); the messages travel through the
callbacks the cluster wires (``on_pong``, ``on_reregister``), which a partition cuts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
import logging
import random
import threading
import time
from typing import Any

from disauto.localmesos.agent.executor_run import partition_aware
from disauto.localmesos.agent.parts import AgentParts
from disauto.localmesos.agent.state import DISCONNECTED
from disauto.localmesos.agent.state import RUNNING
from disauto.localmesos.agent.state import TERMINATING
from disauto.localmesos.agent.state import AgentState
from disauto.localmesos.protocol.registration import REGISTRATION_BACKOFF
from disauto.localmesos.protocol.registration import REGISTRATION_BACKOFF_MAX
from disauto.localmesos.protocol.registration import ReregisterAgent
from disauto.localmesos.protocol.registration import Reregistered


logger = logging.getLogger("disauto.localmesos.agent")

Reregister = Callable[[Any, ReregisterAgent], Reregistered | None]
"""``(agent, report) -> answer``: the master's ``reregister_agent``, None when lost."""


@dataclass(frozen=True)
class MasterCallbacks:
    """What an agent sends its master, the master in this process or in another
    (:class:`localmesos.agent.master_client.MasterClient`); the cluster wires each through the
    agent's network (a partition drops them)."""

    #: A TaskStatus with ``framework_id`` (the master's ``receive_status_update``).
    status_update: Callable[[dict[str, Any]], None]
    #: ``(agent_id, framework_id, executor_id, wait status)`` (``exited_executor``).
    executor_exited: Callable[[str, str, str, int], None]
    #: ``(agent_id, framework_id, executor_id, base64 data)`` (``executor_message``).
    executor_message: Callable[[str, str, str, str], None]
    #: ``(agent_id)``: the answer to a ping (``pong``).
    pong: Callable[[str], None]
    reregister: Reregister


class MasterLink:
    """Pings and re-registration (part of :class:`localmesos.agent.agent.Agent`)."""

    def __init__(self, state: AgentState, parts: AgentParts) -> None:
        self.state = state
        self.parts = parts

    def start_master_link(self, total_ping_timeout: float) -> None:
        """Watch the master's pings, when there is a master to re-register with."""
        self._total_ping_timeout = total_ping_timeout
        self._last_ping = time.monotonic()
        self._reregistering = False
        self._redetected = threading.Event()
        if self.state.runtime.on_reregister is not None:
            with self.state.lock:
                self.state.start_thread(self._watch_pings, name=f"pings-{self.state.id}")

    def registered(self) -> None:
        """The master registered the agent (``SlaveRegisteredMessage``): from now on it expects
        the master's pings."""
        self._last_ping = time.monotonic()
        self.state.link_state = RUNNING

    def ping(self, connected: bool) -> None:
        """The master's ping (``PingSlaveMessage``): answer it (``PongSlaveMessage``); a dead
        agent answers nothing."""
        if self.state.crashed.is_set():
            return
        self._last_ping = time.monotonic()
        if self.state.runtime.on_pong is not None:
            self.state.runtime.on_pong(self.state.id)
        if not connected and self.state.link_state == RUNNING:
            logger.info("Agent %s: the master takes it for disconnected; re-registering",
                        self.state.id)
            self._lose_master()

    def master_detected(self) -> None:
        """A new leading master was detected (``Slave::detected``): DISCONNECTED, the agent
        re-registers with it (a dead or terminating agent does nothing)."""
        if self.state.crashed.is_set() or self.state.link_state not in (RUNNING, DISCONNECTED):
            return
        logger.info("Agent %s: new master detected; re-registering", self.state.id)
        self._redetected.set()  # a re-registration under way starts its backoff again
        self._lose_master()

    def _watch_pings(self) -> None:
        """Take the master for lost when no ping came for the total ping timeout."""
        with self.state.link_cond:
            while not self.state.stopped:
                self.state.link_cond.wait(min(1.0, self._total_ping_timeout / 4))
                silent = time.monotonic() - self._last_ping
                if self.state.link_state == RUNNING and silent > self._total_ping_timeout:
                    logger.info("Agent %s: no pings from the master within %.3gs; "
                                "re-registering", self.state.id, self._total_ping_timeout)
                    self._lose_master()

    def _lose_master(self) -> None:
        """DISCONNECTED: hold status updates back and re-register."""
        self.state.link_state = DISCONNECTED
        self.state.updates.pause()
        self.start_reregistration()

    def start_reregistration(self) -> None:
        with self.state.lock:
            if self._reregistering or self.state.stopped:
                return
            self._reregistering = True
            self.state.start_thread(self._reregister_loop, name=f"reregister-{self.state.id}")

    def _reregister_loop(self) -> None:
        """Re-register until the master answers (``doReliableRegistration``)."""
        backoff = REGISTRATION_BACKOFF
        self._redetected.clear()  # this first attempt goes to the master detected
        try:
            while not self.state.stopped:
                answer = None
                if self.state.runtime.on_reregister is not None:
                    answer = self.state.runtime.on_reregister(
                        self.parts.agent, self.parts.recovery.reregistration())
                if answer is not None:
                    self._reregistered(answer)
                    return
                if self._redetected.wait(random.uniform(0.5, 1.0) * backoff):
                    self._redetected.clear()
                    backoff = REGISTRATION_BACKOFF
                else:
                    backoff = min(backoff * 2, REGISTRATION_BACKOFF_MAX)
        finally:
            with self.state.lock:
                self._reregistering = False

    def _reregistered(self, answer: Reregistered) -> None:
        """The master's answer (``Slave::reregistered``)."""
        if answer.shutdown:
            logger.warning("Agent %s is told to shut down: %s", self.state.id, answer.shutdown)
            self.state.link_state = TERMINATING
            self._start_stop()
            return
        self._total_ping_timeout = answer.total_ping_timeout
        self._last_ping = time.monotonic()
        self.state.link_state = RUNNING
        logger.info("Agent %s re-registered with the master", self.state.id)
        for framework_info, task_id in answer.reconcile:
            self._reconcile_unknown(framework_info, task_id)
        self.state.updates.resume()

    def _reconcile_unknown(self, framework_info: dict[str, Any], task_id: str) -> None:
        """A task the master knows here and the agent does not."""
        with self.state.lock:
            known = (framework_info["id"]["value"], task_id) in self.state.tasks
        if known:
            return
        state = "TASK_DROPPED" if partition_aware(framework_info) else "TASK_LOST"
        logger.warning("Agent %s reconciling task %s in state %s: task unknown to the agent",
                       self.state.id, task_id, state)
        status = self.parts.reports.bare_status(framework_info["id"]["value"], task_id, state,
                                   "Reconciliation: task unknown to the agent",
                                   "REASON_RECONCILIATION")
        self.state.updates.update(framework_info["id"]["value"], task_id, status)

    def shutdown(self, message: str) -> None:
        """The master tells the agent to shut down (``ShutdownMessage``)."""
        logger.warning("Agent %s shuts down: %s", self.state.id, message)
        self.state.link_state = TERMINATING
        self._start_stop()

    def _start_stop(self) -> None:
        """Stop on a thread of its own (``stop`` joins the agent's threads, this one too)."""
        threading.Thread(target=self.parts.stop, name=f"shutdown-{self.state.id}",
                         daemon=True).start()
