"""An agent in another process, as the master reaches it: over HTTP, as libprocess messages.

A :class:`RemoteAgent` is the master's :class:`~localmesos.master.agent_link.AgentLike` for an
agent that registered over HTTP (``disauto.internal.RegisterAgent``/``ReregisterAgent``;
:mod:`localmesos.protocol.libprocess`) from its host's process. Each call the master makes
becomes one message ``POST``\\ed to ``/slave(N)/disauto.internal.<name>`` at the agent's
``host:port``; the master's :class:`~localmesos.master.agent_link.AgentLink` makes the calls one
at a time on its own thread, so they arrive in order and none blocks the master. A message that
cannot be delivered is lost (logged): as Mesos' master, this one never re-sends; its pings and
the agent's re-registration recover (``src/master/master.cpp``).

What the master reads of an agent comes from what the agent sent when it (re-)registered (its
``AgentInfo``, and so its total resources), or, for its ``/state``, from its host, with a
timeout: never under the master's lock. Its sandboxes are served by its host (``/files`` of the
host's address; ``pid`` says where), not by the master: it has no ``file_roots``.
"""

from __future__ import annotations

from typing import Any

from disauto.common.resources import RoleResources
from disauto.localmesos.protocol import libprocess


class RemoteAgent:
    """The master's side of an agent in another process (see the module docstring).

    Args:
        agent_id: its id (the master's, or the one it re-registered with).
        pid: its libprocess pid, ``slave(N)@host:port``: where its messages and reads go.
        info: its ``AgentInfo`` (with ``id``).
        sender: the master's pid (``master@host:port``), sent with each message.
        timeout: seconds a message or a read may take before it counts as lost.

    Raises:
        ValueError: for a malformed ``pid`` or resources.

    Thread safety: messages are sent one at a time (on the agent's link thread); ``info`` and
    ``state`` may be called from any thread.
    """

    def __init__(self, agent_id: str, pid: str, info: dict[str, Any], sender: str,
                 timeout: float = libprocess.DEFAULT_TIMEOUT) -> None:
        self.id = agent_id
        self.pid = pid
        self.process, self.address = libprocess.split_pid(pid)
        self._info = dict(info)
        self.total = RoleResources.from_json(self._info.get("resources") or [])
        self._timeout = timeout
        self._messenger = libprocess.Messenger(sender, timeout)
        self._closed = False

    def __repr__(self) -> str:
        return f"RemoteAgent({self.id!r}, {self.pid!r})"

    # -- reads -----------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """Its ``AgentInfo``, as it last (re-)registered."""
        return dict(self._info)

    @property
    def host(self) -> str:
        """The host of its pid (the IP of its libprocess address)."""
        return self.address.rpartition(":")[0]

    @property
    def port(self) -> int:
        return int(self.address.rpartition(":")[2])

    def state(self) -> dict[str, Any]:
        """Its ``/state``, asked of its host.

        Raises:
            OSError: the host did not answer within the timeout.
            ValueError: nor with JSON.
        """
        return dict(libprocess.get_json(self.address, f"/{self.process}/state", self._timeout))

    # -- messages (each one lost when it cannot be delivered) ------------------------------

    def _send(self, method: str, *args: Any) -> None:
        if self._closed:
            return
        name, fields = libprocess.AGENT_MESSAGES[method]
        body = dict(zip(fields, args, strict=False))
        self._messenger.send(self.address, self.process, name, body)

    def launch_task(self, framework_info: dict[str, Any], task: dict[str, Any],
                    launch_executor: bool | None = None) -> None:
        self._send("launch_task", framework_info, task, launch_executor)

    def kill_task(
        self, framework_id: str, task_id: str, grace_period: float | None = None
    ) -> None:
        self._send("kill_task", framework_id, task_id, grace_period)

    def acknowledge(self, framework_id: str, task_id: str, uuid_b64: str) -> bool:
        """Sent; True (the agent's answer of a duplicate does not come back)."""
        self._send("acknowledge", framework_id, task_id, uuid_b64)
        return True

    def resend_unacknowledged(self, framework_id: str) -> None:
        self._send("resend_unacknowledged", framework_id)

    def shutdown_framework(self, framework_id: str) -> None:
        self._send("shutdown_framework", framework_id)

    def shutdown_executor(self, framework_id: str, executor_id: str) -> None:
        self._send("shutdown_executor", framework_id, executor_id)

    def framework_message(self, framework_id: str, executor_id: str, data: str) -> None:
        self._send("framework_message", framework_id, executor_id, data)

    def ping(self, connected: bool) -> None:
        self._send("ping", connected)

    def drain(self, config: dict[str, Any]) -> None:
        self._send("drain", config)

    def shutdown(self, message: str) -> None:
        self._send("shutdown", message)

    def close(self) -> None:
        """Close its connection and send nothing more (the master no longer talks to it
        through this object)."""
        self._closed = True
        self._messenger.close()
