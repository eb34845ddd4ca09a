"""What a process of agents alone serves (:mod:`localmesos.agent_host`), routed as libprocess
routes an agent's: the master's messages to its agents, their endpoints and sandboxes.

In this order:

1. The master's messages, ``POST /slave(N)/disauto.internal.<name>``
   (:data:`~localmesos.protocol.libprocess.AGENT_METHODS`): the N-th agent's method, called
   with the body's fields, answered 202 (400 for a malformed body, 404 for no such agent or
   message, 405 for another method). A message to an agent still being registered waits for
   it a moment (the master may send one before the host has made the agent it registered); a
   message to an agent whose network is cut is dropped, and answered 202 all the same (the
   master cannot tell). The agent's method runs on the request's thread: they all return at
   once, and the master sends each agent one message at a time, so they run in its order.
2. The admin endpoint (``/localmesos/agents``: restart, partition, heal; :mod:`~localmesos.
   server.admin_routes`).
3. The executor API and each agent's ``/monitor/statistics``, as on the master's port
   (:mod:`~localmesos.server.agent_routes`).
4. ``GET``/``HEAD``: each agent's ``/slave(N)/state`` and the sandboxes' ``/files/*``
   (:mod:`~localmesos.server.files_routes`); 405 for another method there; else 404.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import json
import logging
import re
from typing import Any
from typing import Protocol

from disauto.localmesos.protocol import libprocess
from disauto.localmesos.protocol.recordio import Subscription
from disauto.localmesos.server.admin_routes import Admin
from disauto.localmesos.server.admin_routes import AdminRoutes
from disauto.localmesos.server.agent_routes import AgentRoutes
from disauto.localmesos.server.files_routes import FilesRoutes
from disauto.localmesos.server.http_auth import ReadonlyAuth
from disauto.localmesos.server.messages import Request
from disauto.localmesos.server.messages import Response
from disauto.localmesos.server.messages import method_not_allowed
from disauto.localmesos.server.messages import text


logger = logging.getLogger(__name__)

_MESSAGE = re.compile(r"^/slave\((\d+)\)/(" + re.escape(libprocess.PREFIX) + r"[A-Za-z]+)$")
#: Seconds a message waits for an agent that is being registered.
PENDING_AGENT_WAIT = 10.0


class HostedAgents(Protocol):
    """The agents a host serves (:class:`localmesos.agent_host.AgentHost`)."""

    @property
    def agents(self) -> Sequence[Any]:
        """The running agents, the N-th being ``/slave(N)``."""

    def in_slot(self, slot: int, wait: float = 0.0) -> Any | None:
        """The agent of ``/slave(slot)``, waiting up to ``wait`` s for one being registered."""

    def is_cut(self, agent_id: str) -> bool:
        """Whether the network between the agent and the master is cut."""

    def file_roots(self) -> dict[str, str]:
        """Virtual path → real directory of every agent's sandboxes."""


class AgentHostRouter:
    """Routes one agents' host's requests (see the module docstring).

    Args:
        host: its agents.
        readonly: who may read the agents' read-only endpoints.
        admin: carries out the admin endpoint's actions (None: no admin endpoint).
        credentials: principal → secret of the admin endpoint.
        pending_wait: seconds a message waits for an agent being registered.
    """

    def __init__(self, host: HostedAgents, readonly: ReadonlyAuth | None = None,
                 admin: Admin | None = None, credentials: Mapping[str, str] | None = None,
                 pending_wait: float = PENDING_AGENT_WAIT) -> None:
        readonly = readonly or ReadonlyAuth()
        self._host = host
        self._pending_wait = pending_wait
        self.agent_routes = AgentRoutes(None, lambda: host.agents, readonly.agents)
        self.files_routes = FilesRoutes(host, readonly.agents)
        self.admin_routes = None if admin is None else AdminRoutes(admin, credentials)

    def dispatch(self, request: Request) -> Response | Subscription:
        """The answer to ``request`` (see the module docstring for the order)."""
        path = request.path.rstrip("/") or "/"
        message = _MESSAGE.match(path)
        if message is not None:
            return self._message(request, int(message.group(1)), message.group(2))
        if self.admin_routes is not None:
            admin = self.admin_routes.handle(request, path)
            if admin is not None:
                return admin
        answer = self.agent_routes.api(request, path)
        if answer is not None:
            return answer
        if request.method not in ("GET", "HEAD"):
            if path.startswith(("/files", "/slave(")):
                return method_not_allowed(request, "GET", "HEAD")
            return text(404)
        read = self.agent_routes.read(request, path) or self.files_routes.read(request, path)
        return read if read is not None else text(404)

    def _message(self, request: Request, slot: int, name: str) -> Response:
        """A message of the master to the agent of ``/slave(slot)``."""
        target = libprocess.AGENT_METHODS.get(name)
        if target is None:
            return text(404)
        if request.method != "POST":
            return method_not_allowed(request, "POST")
        try:
            body = json.loads(request.body or b"null")
        except ValueError as exc:
            return text(400, f"Malformed message: {exc}")
        if not isinstance(body, dict):
            return text(400, "Malformed message: the body is not a JSON object")
        agent = self._host.in_slot(slot, self._pending_wait)
        if agent is None:
            return text(404, f"no agent slave({slot})")
        if self._host.is_cut(agent.id):
            logger.debug("master -> agent %s: %s dropped (partition)", agent.id, name)
            return Response(202)
        method, fields = target
        getattr(agent, method)(*(body.get(field) for field in fields))
        return Response(202)
