"""How the master reaches an agent: what it needs of one, and the ordered queue of its calls.

The master knows an agent only as an :class:`AgentLike` (the embedded
:class:`localmesos.agent.agent.Agent` is one, the cluster hands it over; an agent of another
process is a :class:`~localmesos.master.remote_agent.RemoteAgent`). Nothing here blocks
the master: an :class:`AgentLink` only queues calls for the one thread that makes them, so each
agent sees the master's calls in the order they were made, as libprocess delivers messages.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any
from typing import Protocol

from disauto.common.resources import RoleResources
from disauto.localmesos.master.remote_agent import RemoteAgent


logger = logging.getLogger("disauto.localmesos.master")


class AgentLike(Protocol):
    """What the master needs of an agent (:class:`localmesos.agent.agent.Agent` implements it)."""

    id: str
    total: RoleResources

    def info(self) -> dict[str, Any]: ...

    def launch_task(self, framework_info: dict[str, Any], task: dict[str, Any],
                    launch_executor: bool | None = None) -> None: ...

    def kill_task(
        self, framework_id: str, task_id: str, grace_period: float | None = None
    ) -> None: ...

    def acknowledge(self, framework_id: str, task_id: str, uuid_b64: str) -> bool: ...

    def state(self) -> dict[str, Any]: ...

    def resend_unacknowledged(self, framework_id: str) -> Any: ...

    def shutdown_framework(self, framework_id: str) -> None: ...


class AgentLink:
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

    def stop_later(self) -> None:
        """Stop after the calls already posted, without waiting (from any thread)."""
        if not self._stopped:
            self._stopped = True
            self._queue.put(None)

    def stop(self) -> None:
        """Stop now (the master stops): an agent of another process gets none of the calls
        still queued (each could wait for a dead host's timeout)."""
        if isinstance(self.agent, RemoteAgent):
            self.agent.close()
        if not self._stopped:
            self._stopped = True
            self._queue.put(None)
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                if isinstance(self.agent, RemoteAgent):
                    self.agent.close()  # the master talks to it no more through this link
                return
            method, args = item
            try:
                getattr(self.agent, method)(*args)
            except Exception:  # noqa: BLE001 - one failing call must not stop the link
                logger.exception("agent %s: %s%r failed", self.agent.id, method, args)
