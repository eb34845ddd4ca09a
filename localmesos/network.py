"""The network between the embedded master and one agent, which a partition cuts.

A real master and agent exchange libprocess messages; when the network splits, those
messages are lost both ways while each side goes on. An :class:`AgentWire` stands between the
master and one agent: the master calls the agent through :meth:`AgentWire.master_side` (the
agent as the master sees it) and the agent calls the master through
:meth:`AgentWire.to_master`; while the wire is cut, every message is dropped (a call into
the agent returns None, a callback into the master too), and what the agent and its tasks do
on their side of the split goes on. Reads the HTTP server makes of the agent (its state, its
sandboxes) are not messages and pass.

Not a Mesos part: on a real cluster a partition is the network's doing. Tests and operators cut
and heal a wire through the cluster (:meth:`localmesos.cluster.LocalCluster.partition_agent`,
``da-cluster agent partition``).
"""

from __future__ import annotations

from collections.abc import Callable
import logging
import threading
import time
from typing import Any


logger = logging.getLogger(__name__)

#: The agent's methods the master calls as messages (``AgentLink`` posts them).
MESSAGES = frozenset({
    "launch_task", "kill_task", "acknowledge", "resend_unacknowledged", "shutdown_framework",
    "shutdown_executor", "framework_message", "ping", "drain", "shutdown",
})


class AgentWire:
    """The link of one agent (see the module docstring). Thread-safe.

    Args:
        agent_id: the agent.
    """

    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id
        self._lock = threading.Lock()
        self._cut_until: float | None = None
        self._agent: Any = None

    # -- the split -------------------------------------------------------------------------

    def cut(self, seconds: float | None = None) -> None:
        """Split the network, for ``seconds`` (None: until :meth:`heal`)."""
        with self._lock:
            self._cut_until = float("inf") if seconds is None else time.monotonic() + seconds
        logger.warning("Network to agent %s cut%s", self.agent_id,
                       "" if seconds is None else f" for {seconds:g}s")

    def heal(self) -> None:
        with self._lock:
            self._cut_until = None
        logger.warning("Network to agent %s healed", self.agent_id)

    @property
    def is_cut(self) -> bool:
        with self._lock:
            if self._cut_until is not None and time.monotonic() >= self._cut_until:
                self._cut_until = None
            return self._cut_until is not None

    # -- both sides ------------------------------------------------------------------------

    def connect(self, agent: Any) -> MasterSideAgent:
        """The agent as the master reaches it (through this wire)."""
        with self._lock:
            self._agent = agent
        return MasterSideAgent(self, agent)

    def to_master(self, callback: Callable[..., Any]) -> Callable[..., Any]:
        """``callback`` (into the master) through this wire: dropped while it is cut."""
        def send(*args: Any) -> Any:
            if self.is_cut:
                logger.debug("Agent %s -> master: %s dropped (partition)", self.agent_id,
                             getattr(callback, "__name__", "message"))
                return None
            return callback(*args)
        return send


class MasterSideAgent:
    """An agent as the master sees it: its messages pass through the wire."""

    def __init__(self, wire: AgentWire, agent: Any) -> None:
        self._wire = wire
        self._agent = agent
        self.id = agent.id
        self.total = agent.total

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._agent, name)
        if name not in MESSAGES:
            return target

        def message(*args: Any) -> Any:
            if self._wire.is_cut:
                logger.debug("master -> agent %s: %s dropped (partition)", self.id, name)
                return None
            return target(*args)
        return message
