"""Which part of the cluster answers a request: one port, routed as libprocess routes a master's.

In this order:

0. On a master that does not lead (masters elected through ZooKeeper), the master's APIs and
   endpoints redirect to the leader, or answer 503 while none leads (:meth:`Router._not_leading`).
1. The APIs, whatever the method (each refuses the methods it does not take): the messages of
   agents in other processes (``/master/disauto.internal.*``, ignored by a master that does
   not lead; :mod:`~localmesos.server.master_messages`), the scheduler and operator APIs
   (:mod:`~localmesos.server.master_routes`), the executor API and an agent's
   ``/monitor/statistics`` (:mod:`~localmesos.server.agent_routes`).
2. Any other method than ``GET``/``HEAD``: 405 on a path of the master's, the metrics, the
   files or the web UI; 404 elsewhere.
3. The read-only endpoints: the master's (``/version``, ``/metrics/snapshot``,
   ``/master/state``...), an agent's ``/slave(N)/state``, the sandboxes' ``/files/*``
   (:mod:`~localmesos.server.files_routes`).
4. The web UI: ``GET /`` and ``/static/*``, the files of :mod:`localmesos.webui`
   (``webui.FILES`` lists what is served, and where).
5. 404.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from disauto.localmesos.master.master import Master
from disauto.localmesos.master.views import operator_api
from disauto.localmesos.protocol.recordio import Subscription
from disauto.localmesos.server.admin_routes import Admin
from disauto.localmesos.server.admin_routes import AdminRoutes
from disauto.localmesos.server.agent_routes import AgentRoutes
from disauto.localmesos.server.files_routes import FilesRoutes
from disauto.localmesos.server.http_auth import ReadonlyAuth
from disauto.localmesos.server.master_messages import MasterMessages
from disauto.localmesos.server.master_routes import SCHEDULER_PATHS
from disauto.localmesos.server.master_routes import MasterRoutes
from disauto.localmesos.server.master_routes import master_route
from disauto.localmesos.server.messages import Request
from disauto.localmesos.server.messages import Response
from disauto.localmesos.server.messages import method_not_allowed
from disauto.localmesos.server.messages import text
from disauto.localmesos.webui import static_file


#: Prefixes of the paths that take ``GET``/``HEAD`` only (405 for another method).
_READ_ONLY_PREFIXES = ("/metrics", "/files", "/master", "/health", "/static")


class Router:
    """Routes each request to the master's, the agents', the files' or the web UI's answer.

    Args:
        master: the master (and, through it, its agents).
        credentials: principal → secret for the scheduler API (see
            :class:`~localmesos.server.master_routes.MasterRoutes`).
        agents: the running agents, ``/slave(N)`` the N-th (default: the master's).
        readonly: who may read the read-only endpoints (Mesos ``--authenticate_http_readonly``;
            :mod:`localmesos.server.http_auth`); default: everyone.
    """

    def __init__(self, master: Master, credentials: Mapping[str, str] | None = None,
                 agents: Callable[[], Sequence[Any]] | None = None,
                 admin: Admin | None = None, readonly: ReadonlyAuth | None = None) -> None:
        readonly = readonly or ReadonlyAuth()
        self.master_routes = MasterRoutes(master, credentials, readonly.master)
        self.agent_routes = AgentRoutes(master, agents, readonly.agents)
        self.admin_routes = None if admin is None else AdminRoutes(admin, credentials)
        self.files_routes = FilesRoutes(master, readonly.agents)
        self.master_messages = MasterMessages(master)

    def dispatch(self, request: Request) -> Response | Subscription:
        """The answer to ``request`` (see the module docstring for the order)."""
        path = request.path.rstrip("/") or "/"
        if self.admin_routes is not None:
            admin = self.admin_routes.handle(request, path)
            if admin is not None:
                return admin
        answer = self._not_leading(request, path)
        if answer is None:
            answer = self.master_messages.handle(request, path)
        if answer is None:
            answer = self.master_routes.api(request, path)
        if answer is None:
            answer = self.agent_routes.api(request, path)
        if answer is not None:
            return answer
        if request.method not in ("GET", "HEAD"):
            if path == "/version" or master_route(path) is not None or path.startswith(
                _READ_ONLY_PREFIXES
            ):
                return method_not_allowed(request, "GET", "HEAD")
            return text(404)
        read = (self.master_routes.read(request, path) or self.agent_routes.read(request, path)
                or self.files_routes.read(request, path))
        if read is not None:
            return read
        return self._webui(path)

    def _not_leading(self, request: Request, path: str) -> Response | None:
        """On a master that does not lead, the answer of the master's APIs and endpoints
        (Mesos ``Master::Http::redirect``): 307 to the same path on the leader
        (protocol-relative), ``/master/redirect`` to the leader's base URL, 503 "No leader
        elected" while none leads, and 503 "Master has not finished recovery" on an elected
        master still reading its registry (it no longer redirects to the leader it replaces,
        which may be frozen); None on the leader and for what any master serves
        (``/version``, ``/health``, the metrics, the web UI)."""
        master = self.master_routes.master
        if master.elected:
            return None
        route = master_route(path)
        if not (path in SCHEDULER_PATHS or path in operator_api.PATHS
                or route not in (None, "health")):
            return None
        if master.recovering:  # elected, its registry not read yet
            return text(503, "Master has not finished recovery")
        leader = master.leader_address
        if leader is None:
            return text(503, "No leader elected")
        if route == "redirect":
            return Response(307, headers={"Location": f"//{leader}"})
        if route == "redirect/":
            return text(404)
        return Response(307, headers={"Location": f"//{leader}{request.target}"})

    @staticmethod
    def _webui(path: str) -> Response:
        """A file of the web UI (:data:`localmesos.webui.FILES`), or 404."""
        page = static_file(path)
        if page is None:
            return text(404)
        body, content_type = page
        return Response(200, body, {"Content-Type": content_type})
