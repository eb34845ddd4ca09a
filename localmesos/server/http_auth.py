"""HTTP Basic authentication of the read-only endpoints (Mesos ``--authenticate_http_readonly``).

A Mesos master and agent each guard their read-only endpoints with their own credentials when
the flag is on (apache/mesos ``src/master/master.cpp`` and ``src/slave/slave.cpp``
``initialize``: the realm ``mesos-master-readonly`` with the master's ``--credentials``,
``mesos-agent-readonly`` with the agent's ``--http_credentials``); libprocess' basic
authenticator answers 401 with ``WWW-Authenticate: Basic realm="..."`` to a request without
valid credentials (``3rdparty/libprocess/src/authenticator.cpp``). The embedded cluster serves
both on one port, so which realm guards a path decides which credentials it takes:

* the master's (``/master/state``, ``/master/slaves``, ``/master/frameworks``, ``/master/tasks``,
  ``/master/roles``, ``/master/flags``, ``/master/state-summary``,
  ``/master/maintenance/status`` and their root aliases); ``/version``, ``/health`` and
  ``/metrics/snapshot`` stay open, as in Mesos;
* the agents' (``/slave(N)/state``, ``/slave(N)/monitor/statistics`` and the sandboxes'
  ``/files/browse``, ``/files/read``, ``/files/download``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from disauto.localmesos.server.messages import Request
from disauto.localmesos.server.messages import Response
from disauto.localmesos.server.messages import parse_basic_auth


MASTER_READONLY_REALM = "mesos-master-readonly"
AGENT_READONLY_REALM = "mesos-agent-readonly"
#: The master endpoints of Mesos' read-only realm (``Master::initialize``'s routes).
MASTER_READONLY_ROUTES = frozenset({
    "state", "state.json", "state-summary", "tasks", "roles", "slaves", "frameworks", "flags",
    "maintenance/status",
})  # fmt: skip


@dataclass(frozen=True)
class ReadonlyAuth:
    """Who may read the read-only endpoints: principal → secret of each realm; None leaves a
    realm open."""

    master: Mapping[str, str] | None = None
    agents: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        for name in ("master", "agents"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, MappingProxyType(dict(value)))


class Refused(Exception):
    """A request the realm does not let in; ``response`` is the 401 to send."""

    def __init__(self, response: Response) -> None:
        super().__init__("unauthorized")
        self.response = response


def principal_of(request: Request, credentials: Mapping[str, str] | None,
                 realm: str) -> str | None:
    """The authenticated principal of ``request`` (None when the realm is open).

    Raises:
        Refused: the realm has credentials and the request none of them.
    """
    if credentials is None:
        return None
    parsed = parse_basic_auth(request.header("authorization"))
    if parsed is None or credentials.get(parsed[0]) != parsed[1]:
        raise Refused(Response(401, b"", {"WWW-Authenticate": f'Basic realm="{realm}"'}))
    return parsed[0]
