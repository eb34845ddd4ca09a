"""The embedded cluster's admin endpoint: restart, partition and heal an agent from outside.

Not a Mesos endpoint: on a real cluster one restarts an agent's process or cuts its network
cable; these are how the embedded cluster's operators and tests do it (docs/local-mode.md,
``da-cluster agent``). Mesos uses no path under ``/localmesos``.

* ``GET /localmesos/agents``: ``{"agents": [{"id", "hostname", "partitioned"}]}``.
* ``POST /localmesos/agents/<agent id>/restart[?for=DURATION]``: the agent dies now and a new
  one recovers after DURATION (default at once).
* ``POST /localmesos/agents/<agent id>/partition[?for=DURATION]``: cut the network between the
  master and the agent (for DURATION, or until healed).
* ``POST /localmesos/agents/<agent id>/heal``.

Answers 200 with ``{"agent_id", "action", "for"}``; 404 for an unknown agent, 400 for a bad
duration or action, 405 for another method; with the cluster's credentials, 401 without a
valid HTTP Basic principal (realm ``localmesos-admin``).
"""

from __future__ import annotations

from collections.abc import Mapping
import re
from typing import Any
from typing import Protocol

from disauto.common import durations
from disauto.localmesos.server.messages import Request
from disauto.localmesos.server.messages import Response
from disauto.localmesos.server.messages import json_response
from disauto.localmesos.server.messages import method_not_allowed
from disauto.localmesos.server.messages import parse_basic_auth
from disauto.localmesos.server.messages import text


PREFIX = "/localmesos/agents"
REALM = "localmesos-admin"
ACTIONS = ("restart", "partition", "heal")
_ACTION_PATH = re.compile(r"^/localmesos/agents/([^/]+)/([a-z]+)$")

class Admin(Protocol):
    """What carries the actions out (:class:`localmesos.cluster.LocalCluster`)."""

    def admin_act(self, action: str, agent_id: str, seconds: float | None) -> None:
        """Raises KeyError for an unknown agent."""

    def admin_agents(self) -> list[dict[str, Any]]: ...


class AdminRoutes:
    """Answers ``/localmesos/agents...``.

    Args:
        admin: carries the actions out and lists the agents.
        credentials: principal → secret; when given, requests need HTTP Basic.
    """

    def __init__(self, admin: Admin, credentials: Mapping[str, str] | None) -> None:
        self._admin = admin
        self._credentials = dict(credentials) if credentials is not None else None

    def handle(self, request: Request, path: str) -> Response | None:
        """The answer for a path under :data:`PREFIX`, None for another path."""
        if path != PREFIX and not path.startswith(PREFIX + "/"):
            return None
        if self._credentials is not None:
            parsed = parse_basic_auth(request.header("authorization"))
            if parsed is None or self._credentials.get(parsed[0]) != parsed[1]:
                return Response(401, b"", {"WWW-Authenticate": f'Basic realm="{REALM}"'})
        if path == PREFIX:
            if request.method not in ("GET", "HEAD"):
                return method_not_allowed(request, "GET", "HEAD")
            return json_response({"agents": self._admin.admin_agents()})
        found = _ACTION_PATH.match(path)
        if found is None or found.group(2) not in ACTIONS:
            return text(404, f"no such admin path {path}: POST {PREFIX}/<agent id>/"
                             f"{{{','.join(ACTIONS)}}}[?for=DURATION]")
        if request.method != "POST":
            return method_not_allowed(request, "POST")
        return self._act(found.group(2), found.group(1), request.param("for"))

    def _act(self, action: str, agent_id: str, duration: str | None) -> Response:
        seconds: float | None = None
        if duration is not None:
            if action == "heal":
                return text(400, "heal takes no 'for'")
            try:
                seconds = durations.parse_duration(duration)
            except durations.DurationError as exc:
                return text(400, f"for: {exc}")
        try:
            self._admin.admin_act(action, agent_id, seconds)
        except KeyError as exc:
            return text(404, str(exc.args[0]) if exc.args else f"no agent {agent_id}")
        return json_response({"agent_id": agent_id, "action": action, "for": seconds})
