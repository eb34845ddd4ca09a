"""The master's routes: the v1 scheduler API, the operator API and the read-only endpoints.

* ``POST /api/v1/scheduler`` and ``/master/api/v1/scheduler``: every scheduler call (Mesos'
  ``Master::Http::scheduler``): HTTP Basic authentication when credentials are configured
  (401 with ``WWW-Authenticate``), the JSON-only POST checks, the call parsed and validated
  (:mod:`localmesos.master.validation`), 406 for a SUBSCRIBE or RECONCILE_OPERATIONS that
  cannot take JSON; SUBSCRIBE answers an event stream, every other call 202 (or its body).
* ``POST /api/v1`` and ``/master/api/v1``: the operator API's read calls
  (:mod:`localmesos.master.views.operator_api`).
* ``GET /version``, ``/metrics/snapshot``, ``/master/state`` (also ``.json``) and the other
  read-only endpoints of :data:`MASTER_ROUTES`, each also at the root (``/tasks``), JSONP with
  ``?jsonp=cb`` (:mod:`localmesos.master.views`).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

from disauto.localmesos.master.master import Master
from disauto.localmesos.master.validation import parse_call
from disauto.localmesos.master.views import endpoints
from disauto.localmesos.master.views import metrics
from disauto.localmesos.master.views import operator_api
from disauto.localmesos.master.views import state
from disauto.localmesos.protocol.media_types import JSON_ONLY_ACCEPT
from disauto.localmesos.protocol.protojson import CallError
from disauto.localmesos.protocol.recordio import Subscription
from disauto.localmesos.server.http_auth import MASTER_READONLY_REALM
from disauto.localmesos.server.http_auth import MASTER_READONLY_ROUTES
from disauto.localmesos.server.http_auth import Refused
from disauto.localmesos.server.http_auth import principal_of
from disauto.localmesos.server.messages import Request
from disauto.localmesos.server.messages import Response
from disauto.localmesos.server.messages import accepts_json
from disauto.localmesos.server.messages import json_response
from disauto.localmesos.server.messages import parse_basic_auth
from disauto.localmesos.server.messages import refuse_unless_json_post
from disauto.localmesos.server.messages import text


#: The realm Mesos uses for ``--authenticate_http_frameworks``.
SCHEDULER_REALM = "mesos-master-scheduler"
SCHEDULER_PATHS = ("/api/v1/scheduler", "/master/api/v1/scheduler")
METRICS_PATHS = ("/metrics/snapshot", "/master/metrics/snapshot")
_TASK_PARAMS = ("limit", "offset", "order", "framework_id", "task_id")
#: The master's read-only endpoints. libprocess hands a request whose first path segment names
#: no process to the master, so each is served at the root too (``/tasks`` is ``/master/tasks``).
MASTER_ROUTES = frozenset({
    "state", "state.json", "state-summary", "tasks", "roles", "slaves", "frameworks", "flags",
    "health", "redirect", "weights", "quota", "maintenance/status", "maintenance/schedule",
})  # fmt: skip


def master_route(path: str) -> str | None:
    """The master endpoint ``path`` names (``/master/<name>`` or ``/<name>``), or None;
    ``redirect/`` for a path under ``redirect`` (Mesos answers it 404 to avoid loops)."""
    for prefix in ("/master/", "/"):
        name = path[len(prefix):] if path.startswith(prefix) else None
        if name in MASTER_ROUTES:
            return name
        if name is not None and name.startswith("redirect/"):
            return "redirect/"
    return None


class MasterRoutes:
    """Answers the master's requests.

    Args:
        master: the master whose API and state are served.
        credentials: principal → secret; when given, scheduler calls need HTTP Basic
            authentication (Mesos ``--authenticate_http_frameworks``).
        readonly: principal → secret; when given, the read-only endpoints of Mesos'
            ``mesos-master-readonly`` realm need HTTP Basic authentication (Mesos
            ``--authenticate_http_readonly``), and the reader's principal decides which
            reservations ``/master/state`` and ``/master/slaves`` show (``view_roles``).
    """

    def __init__(self, master: Master, credentials: Mapping[str, str] | None,
                 readonly: Mapping[str, str] | None = None) -> None:
        self.master = master
        self._credentials = dict(credentials) if credentials is not None else None
        self._readonly = dict(readonly) if readonly is not None else None

    def api(self, request: Request, path: str) -> Response | Subscription | None:
        """The answer of the scheduler or operator API at ``path`` (any method), or None when
        ``path`` is neither."""
        if path in SCHEDULER_PATHS:
            return self._scheduler(request)
        if path in operator_api.PATHS:
            return self._operator(request)
        return None

    def read(self, request: Request, path: str) -> Response | None:
        """The answer of a read-only endpoint (``GET``/``HEAD``) at ``path``, or None when the
        master has none there."""
        jsonp = request.param("jsonp")
        if path == "/version":
            return json_response(state.version_json(), jsonp)
        if path in METRICS_PATHS:
            return json_response(metrics.metrics_snapshot(self.master), jsonp)
        route = master_route(path)
        if route is None:
            return None
        principal = None
        if route in MASTER_READONLY_ROUTES:
            try:
                principal = principal_of(request, self._readonly, MASTER_READONLY_REALM)
            except Refused as refused:
                return refused.response
        return self._endpoint(route, request, principal)

    # -- read-only endpoints -------------------------------------------------------------

    def _endpoint(self, route: str, request: Request, principal: str | None) -> Response:
        """A read-only master endpoint (see :data:`MASTER_ROUTES`) as ``principal`` may see
        it, JSONP when asked."""
        jsonp = request.param("jsonp")
        master = self.master

        def may_view(role: str) -> bool:
            return master.acls.may_view_role(principal, role)

        if route in ("state", "state.json"):
            return json_response(state.master_state(master, may_view), jsonp)
        if route == "health":
            return Response(200)
        if route.startswith("redirect"):
            return self._redirect(route)
        builders: dict[str, Callable[[], Any]] = {
            "state-summary": lambda: endpoints.state_summary(master),
            "tasks": lambda: endpoints.tasks(master, {k: request.param(k) for k in _TASK_PARAMS}),
            "roles": lambda: endpoints.roles(master),
            "slaves": lambda: endpoints.slaves(master, request.param("slave_id"), may_view),
            "frameworks": lambda: endpoints.frameworks(master, request.param("framework_id")),
            "flags": lambda: {"flags": state.master_state(master)["flags"]},
            "weights": lambda: endpoints.weights(master),
            "quota": lambda: endpoints.quota_status(master),
            "maintenance/status": lambda: endpoints.maintenance_status(master),
            "maintenance/schedule": master.maintenance_schedule,
        }
        return json_response(builders[route](), jsonp)

    def _redirect(self, route: str) -> Response:
        """``/master/redirect`` on the leader (this master is always one): 307 to its own base
        URL, protocol-relative as Mesos writes it; a path under ``redirect/`` is 404."""
        if route != "redirect":
            return text(404)
        with self.master.lock:
            location = f"//{self.master.hostname}:{self.master.port}"
        return Response(307, headers={"Location": location})

    # -- the APIs ------------------------------------------------------------------------

    def _authenticate(self, request: Request) -> tuple[str | None, Response | None]:
        if self._credentials is None:
            return None, None
        challenge = {"WWW-Authenticate": f'Basic realm="{SCHEDULER_REALM}"'}
        parsed = parse_basic_auth(request.header("authorization"))
        if parsed is None or self._credentials.get(parsed[0]) != parsed[1]:
            return None, Response(401, b"", challenge)
        return parsed[0], None

    def _scheduler(self, request: Request) -> Response | Subscription:
        principal, refusal = self._authenticate(request)
        if refusal is not None:
            return refusal
        refused = refuse_unless_json_post(request)
        if refused is not None:
            return refused
        try:
            call = parse_call(request.body, principal)
        except CallError as exc:
            return text(exc.status, str(exc))
        kind = call["type"]
        if kind in ("SUBSCRIBE", "RECONCILE_OPERATIONS") and not accepts_json(
            request.header("accept")
        ):
            return text(406, JSON_ONLY_ACCEPT)
        if kind == "SUBSCRIBE":
            return self._subscribe(request, call, principal)
        try:
            status, body = self.master.handle_call(
                call, request.header("mesos-stream-id"), principal
            )
        except CallError as exc:
            return text(exc.status, str(exc))
        if body is not None:
            return json_response(body)
        return Response(status)

    def _subscribe(self, request: Request, call: dict[str, Any],
                   principal: str | None) -> Response | Subscription:
        if request.header("mesos-stream-id") is not None:
            return text(400, "Subscribe calls should not include the 'Mesos-Stream-Id' header")
        info = call["subscribe"]["framework_info"]
        if principal is not None and "principal" not in info:
            # As Mesos: the authenticated principal becomes the framework's.
            info["principal"] = principal
        return self.master.subscribe(call)

    def _operator(self, request: Request) -> Response:
        answer = operator_api.handle(
            self.master,
            request.method,
            request.header("content-type"),
            accepts_json(request.header("accept")),
            request.body,
        )
        commit = self.master.commit_registry
        if commit is not None and request.method == "POST" and answer.status == 200:
            commit()  # what the call changed is in the registry before it is answered
        return Response(answer.status, answer.body, dict(answer.headers))
