"""The master's side of the messages from agents in other processes: ``POST
/master/disauto.internal.<name>`` (:mod:`localmesos.protocol.libprocess`), each turned into the
master's call, as Mesos' master installs a handler per message (``src/master/master.cpp``
``Master::initialize``):

* ``RegisterAgent`` ``{pid, info}``: a new agent (``registerSlave``): the master mints its id
  and registers a :class:`~localmesos.master.remote_agent.RemoteAgent` for it; answered 200
  ``{agent_id, master_id, total_ping_timeout}`` (``SlaveRegisteredMessage``). An agent that
  registers again from the pid of a registered, connected one (its answer was lost) gets that
  agent's id again.
* ``ReregisterAgent`` ``{pid, report}``: ``reregisterSlave`` with the agent's
  :class:`~localmesos.protocol.registration.ReregisterAgent`; answered 200 with the
  :class:`~localmesos.protocol.registration.Reregistered` (``SlaveReregisteredMessage``), or
  202 without a body when the master ignores it.
* ``StatusUpdate`` ``{status, latest_state}``, ``ExitedExecutor`` ``{agent_id, framework_id,
  executor_id, status}``, ``ExecutorToFramework`` ``{agent_id, framework_id, executor_id,
  data}``, ``PongAgent`` ``{agent_id}``: answered 202, as libprocess answers a message.

A malformed body is answered 400, another method than POST 405, an unknown name 404; a master
that does not lead (masters elected through ZooKeeper) ignores them, answering 503, as Mesos'
ignores agents' messages "since not elected yet". The
sender is not checked against the agent a message names (Mesos' master checks ``from``
against the agent's pid, and ``--authenticate_agents``): whoever reaches the master's port may
send them, as whoever reaches it may call its operator API unless it authenticates.

Thread safety: each message is handled on its request's thread; the master's calls are
thread-safe, and registrations are made one at a time.
"""

from __future__ import annotations

from collections.abc import Callable
import json
import logging
import threading
from typing import Any

from disauto.localmesos.master.master import Master
from disauto.localmesos.master.remote_agent import RemoteAgent
from disauto.localmesos.protocol import libprocess
from disauto.localmesos.protocol.registration import ReregisterAgent
from disauto.localmesos.server.messages import Request
from disauto.localmesos.server.messages import Response
from disauto.localmesos.server.messages import json_response
from disauto.localmesos.server.messages import method_not_allowed
from disauto.localmesos.server.messages import text


logger = logging.getLogger(__name__)

_PREFIX = "/master/" + libprocess.PREFIX


class MasterMessages:
    """Turns the agents' messages into the master's calls (see the module docstring).

    Args:
        master: the master.
        timeout: seconds each message to a registered agent, or read of it, may take.
    """

    def __init__(self, master: Master, timeout: float = libprocess.DEFAULT_TIMEOUT) -> None:
        self.master = master
        self.timeout = timeout
        #: One registration at a time: a retry waits for the first one's answer
        #: (``slaves.registering``), then gets the same id.
        self._registering = threading.Lock()
        self._handlers: dict[str, Callable[[dict[str, Any]], Response]] = {
            libprocess.REGISTER_AGENT: self._register,
            libprocess.REREGISTER_AGENT: self._reregister,
            libprocess.STATUS_UPDATE: self._status_update,
            libprocess.EXITED_EXECUTOR: self._exited_executor,
            libprocess.EXECUTOR_TO_FRAMEWORK: self._executor_message,
            libprocess.PONG_AGENT: self._pong,
        }

    def handle(self, request: Request, path: str) -> Response | None:
        """The answer to a message at ``path``, or None when ``path`` is not one."""
        if not path.startswith(_PREFIX):
            return None
        handler = self._handlers.get(path[len("/master/"):])
        if handler is None:
            return text(404)
        if request.method != "POST":
            return method_not_allowed(request, "POST")
        if not self.master.elected:
            # A master that does not lead ignores agents ("since not elected yet"): the
            # message is lost, and the agent's detector names the leader.
            return text(503, "Not the leading master")
        try:
            body = json.loads(request.body or b"null")
            if not isinstance(body, dict):
                raise TypeError("the body is not a JSON object")
            return handler(body)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            sender = request.header(libprocess.FROM_HEADER.lower()) or "?"
            logger.warning("Malformed %s from %s: %s", path, sender, exc)
            return text(400, f"Malformed message: {type(exc).__name__}: {exc}")

    def _remote(self, agent_id: str, pid: str, info: dict[str, Any]) -> RemoteAgent:
        return RemoteAgent(agent_id, pid, info, self.master.pid, self.timeout)

    def _register(self, body: dict[str, Any]) -> Response:
        pid = str(body["pid"])
        info = dict(body["info"])
        with self._registering:
            agent_id = self._registered_at(pid)
            if agent_id is None:
                agent_id = self.master.next_agent_id()
                info["id"] = {"value": agent_id}
                self.master.add_agent(self._remote(agent_id, pid, info))
                logger.info("Registered agent %s at %s", agent_id, pid)
            else:
                logger.info("Agent %s at %s already registered, answering again", agent_id,
                            pid)
        return json_response({"agent_id": agent_id, "master_id": self.master.master_id,
                              "total_ping_timeout": self.master.total_ping_timeout})

    def _registered_at(self, pid: str) -> str | None:
        """The id of the connected agent registered from ``pid``, if any."""
        with self.master.lock:
            for record in self.master.agents.values():
                if record.pid == pid and record.connected:
                    return record.agent_id
        return None

    def _reregister(self, body: dict[str, Any]) -> Response:
        report = ReregisterAgent.from_json(body["report"])
        agent = self._remote(report.agent_id, str(body["pid"]), report.info)
        answer = self.master.reregister_agent(agent, report)
        return Response(202) if answer is None else json_response(answer.to_json())

    def _status_update(self, body: dict[str, Any]) -> Response:
        latest = body.get("latest_state")
        self.master.receive_status_update(dict(body["status"]),
                                          latest_state=None if latest is None else str(latest))
        return Response(202)

    def _exited_executor(self, body: dict[str, Any]) -> Response:
        self.master.exited_executor(str(body["agent_id"]), str(body["framework_id"]),
                                    str(body["executor_id"]), int(body["status"]))
        return Response(202)

    def _executor_message(self, body: dict[str, Any]) -> Response:
        self.master.executor_message(str(body["agent_id"]), str(body["framework_id"]),
                                     str(body["executor_id"]), str(body["data"]))
        return Response(202)

    def _pong(self, body: dict[str, Any]) -> Response:
        self.master.pong(str(body["agent_id"]))
        return Response(202)
