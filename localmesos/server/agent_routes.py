"""The agents' routes: the v1 executor API, each agent's state and its executors' usage.

Every embedded agent is served on the master's port under its libprocess id ``/slave(N)``
(the N-th agent the master added):

* ``POST /api/v1/executor`` (where pymesos' executor driver calls: ``MESOS_AGENT_ENDPOINT`` has
  no path) and ``/slave(N)/api/v1/executor`` (where libmesos calls: ``MESOS_SLAVE_PID``): the v1
  executor API (:mod:`localmesos.agent.executor_api`; Mesos' ``Http::executor``); with
  executor authentication, 401 for a call without its executor's valid token and 403 for a
  token of another executor (:mod:`localmesos.agent.executor_auth`).
* ``GET /slave(N)/state`` (also ``.json``): the agent's state.
* ``GET /slave(N)/monitor/statistics`` (also ``.json``): its executors' resource usage
  (:mod:`localmesos.containerizer.monitor`); GET alone, as Mesos serves it.

The agents are those the cluster runs, in the order the master first registered them
(``/slave(N)`` stays the N-th also while it restarts or is unreachable); without a list of
its own, the router asks the master for its registered ones (``Master.agent_list``).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import re
from typing import Any

from disauto.localmesos.agent import executor_api
from disauto.localmesos.agent import executor_auth
from disauto.localmesos.master.master import Master
from disauto.localmesos.protocol.media_types import JSON_ONLY_ACCEPT
from disauto.localmesos.protocol.protojson import CallError
from disauto.localmesos.protocol.recordio import Subscription
from disauto.localmesos.server.http_auth import AGENT_READONLY_REALM
from disauto.localmesos.server.http_auth import Refused
from disauto.localmesos.server.http_auth import principal_of
from disauto.localmesos.server.messages import Request
from disauto.localmesos.server.messages import Response
from disauto.localmesos.server.messages import accepts_json
from disauto.localmesos.server.messages import json_response
from disauto.localmesos.server.messages import method_not_allowed
from disauto.localmesos.server.messages import refuse_unless_json_post
from disauto.localmesos.server.messages import text


_EXECUTOR_PATH = re.compile(r"^(?:/slave\((\d+)\))?/api/v1/executor$")
_AGENT_STATE = re.compile(r"^/slave\((\d+)\)/state(?:\.json)?$")
_AGENT_STATISTICS = re.compile(r"^/slave\((\d+)\)/monitor/statistics(?:\.json)?$")


class AgentRoutes:
    """Answers the agents' requests.

    Args:
        master: the master that knows the agents (None in a process of agents alone).
        agents: the running agents, the N-th being ``/slave(N)`` (default: the master's
            registered agents; required without a master).
        readonly: principal → secret; when given, ``/slave(N)/state`` and
            ``/slave(N)/monitor/statistics`` need HTTP Basic authentication (Mesos
            ``--authenticate_http_readonly`` with the agent's ``--http_credentials``).
    """

    def __init__(self, master: Master | None,
                 agents: Callable[[], Sequence[Any]] | None = None,
                 readonly: Mapping[str, str] | None = None) -> None:
        self.master = master
        if agents is None:
            if master is None:
                raise ValueError("AgentRoutes needs a master or its agents")
            agents = master.agent_list
        self._agents = agents
        self._readonly = readonly

    def _refusal(self, request: Request) -> Response | None:
        """401 for a read without the agents' credentials (``--authenticate_http_readonly``),
        None when it may go on."""
        try:
            principal_of(request, self._readonly, AGENT_READONLY_REALM)
        except Refused as refused:
            return refused.response
        return None

    def api(self, request: Request, path: str) -> Response | Subscription | None:
        """The answer of the executor API or an agent's ``/monitor/statistics`` at ``path``
        (any method: each refuses the methods it does not take), or None for another path."""
        executor_path = _EXECUTOR_PATH.match(path)
        if executor_path is not None:
            index = executor_path.group(1)
            return self._executor(request, None if index is None else int(index))
        statistics = _AGENT_STATISTICS.match(path)
        if statistics is not None:
            return self._statistics(request, int(statistics.group(1)))
        return None

    def read(self, request: Request, path: str) -> Response | None:
        """``/slave(N)/state`` (404 for an agent that does not exist), or None for another
        path."""
        agent = _AGENT_STATE.match(path)
        if agent is None:
            return None
        agents = self._agents()
        index = int(agent.group(1))
        if not 1 <= index <= len(agents):
            return text(404)
        refused = self._refusal(request)
        if refused is not None:
            return refused
        return json_response(agents[index - 1].state(), request.param("jsonp"))

    def _statistics(self, request: Request, index: int) -> Response:
        """``/slave(N)/monitor/statistics``: the N-th agent's executors' resource usage.
        Mesos serves it to GET alone (405 naming GET otherwise), JSONP with ``?jsonp=cb``."""
        if request.method != "GET":
            return method_not_allowed(request, "GET")
        agents = self._agents()
        if not 1 <= index <= len(agents) or not hasattr(agents[index - 1],
                                                        "monitor_statistics"):
            return text(404)
        refused = self._refusal(request)
        if refused is not None:
            return refused
        return json_response(agents[index - 1].monitor_statistics(), request.param("jsonp"))

    def _executor(self, request: Request, index: int | None) -> Response | Subscription:
        """The v1 executor API of an agent (:mod:`localmesos.agent.executor_api`)."""
        agents = self._agents()
        if index is not None and not 1 <= index <= len(agents):
            return text(404)
        authorization = request.header("authorization")
        keys = [agent.executor_secret for agent in
                (agents if index is None else [agents[index - 1]])
                if getattr(agent, "executor_secret", None) is not None]
        if keys:
            # libprocess authenticates before the handler runs: 401 before anything else
            # (the token's claims are checked against the call once its executor is found).
            try:
                executor_auth.authenticate_any(authorization, keys)
            except executor_auth.Unauthorized as exc:
                return _unauthorized(exc)
        refused = refuse_unless_json_post(request)
        if refused is not None:
            return refused
        try:
            call = executor_api.parse_call(request.body)
        except CallError as exc:
            return text(exc.status, str(exc))
        if call["type"] == "SUBSCRIBE" and not accepts_json(request.header("accept")):
            return text(406, JSON_ONLY_ACCEPT)
        if call["type"] == "HEARTBEAT":
            return Response(202)
        found = executor_api.find_agent(agents, index, call)
        if isinstance(found, tuple):
            return text(*found)
        try:
            answer = found.executor_call(call, authorization)
        except executor_auth.Unauthorized as exc:
            return _unauthorized(exc)
        if isinstance(answer, Subscription):
            return answer
        status, message = answer
        return text(status, message) if message else Response(status)


def _unauthorized(refusal: executor_auth.Unauthorized) -> Response:
    """401 with the executor realm's challenge (libprocess' ``Unauthorized``)."""
    return Response(401, b"", {"WWW-Authenticate": refusal.challenge})
