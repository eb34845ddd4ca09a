"""The messages between a master and agents in different processes, sent over HTTP as libprocess
sends them.

A Mesos master and its agents are libprocess processes (``master``, ``slave(1)``) that talk in
one-way messages: a message named after its protobuf type is a ``POST /<process>/<name>`` to the
receiver's ``host:port``, its ``Libprocess-From`` header the sender's pid
(``slave(1)@10.0.0.2:5051``), answered ``202 Accepted`` with no body (3rdparty/libprocess
``src/process.cpp``, ``HttpProxy``/``ProcessManager::handle``). The embedded cluster's master
and agents do the same when they live in different processes, with two differences, said here
once:

* **JSON bodies, names of their own.** A body is a JSON object of named fields, not a protobuf;
  the names are ``disauto.internal.<Mesos' message name without "Message", Slave → Agent>``
  (``disauto.internal.RunTask`` is Mesos' ``mesos.internal.RunTaskMessage``) so that a reader
  of ``src/slave/slave.cpp`` finds each handler by name, while no real Mesos process mistakes
  them for its own (its bodies are protobufs under ``mesos.internal``).
* **Registration is answered in the response.** ``RegisterAgent`` and ``ReregisterAgent`` get
  ``SlaveRegisteredMessage`` / ``SlaveReregisteredMessage`` as the body of a 200 answer rather
  than as a message back (which would need the agent's side to be reachable before it has an
  id); an ignored re-registration (the master is stopping) is answered 202 with no body.

A message that cannot be delivered (no connection, a timeout, an error status) is lost, as on a
real network: nobody retries it (Mesos' master never does; its pings, the agents' re-registration
and their status update retries recover). :class:`Messenger` sends them, in the order it is
called, over one keep-alive connection per receiver.

Agent → master, ``POST /master/<name>`` (:data:`MASTER_MESSAGES`): ``RegisterAgent``,
``ReregisterAgent``, ``StatusUpdate``, ``ExitedExecutor``, ``ExecutorToFramework``,
``PongAgent``. Master → agent, ``POST /slave(N)/<name>`` (:data:`AGENT_MESSAGES`, the methods
of the master's ``AgentLike`` they stand for): ``RunTask``, ``KillTask``,
``StatusUpdateAcknowledgement``, ``UpdateFramework``, ``ShutdownFramework``,
``ShutdownExecutor``, ``FrameworkToExecutor``, ``PingAgent``, ``DrainAgent``, ``Shutdown``.
"""

from __future__ import annotations

from collections.abc import Mapping
import http.client
import json
import logging
import threading
from typing import Any


logger = logging.getLogger(__name__)

#: The namespace of every message name.
PREFIX = "disauto.internal."
#: The header naming the sender's pid, as libprocess sends it.
FROM_HEADER = "Libprocess-From"

REGISTER_AGENT = PREFIX + "RegisterAgent"
REREGISTER_AGENT = PREFIX + "ReregisterAgent"
STATUS_UPDATE = PREFIX + "StatusUpdate"
EXITED_EXECUTOR = PREFIX + "ExitedExecutor"
EXECUTOR_TO_FRAMEWORK = PREFIX + "ExecutorToFramework"
PONG_AGENT = PREFIX + "PongAgent"
#: What agents send the master.
MASTER_MESSAGES = frozenset({REGISTER_AGENT, REREGISTER_AGENT, STATUS_UPDATE, EXITED_EXECUTOR,
                             EXECUTOR_TO_FRAMEWORK, PONG_AGENT})

#: What the master sends an agent: the ``AgentLike`` method each stands for → (its name, the
#: fields of its body, in the method's argument order). ``UpdateFramework`` is sent when a
#: framework subscribes again: the agent re-sends its unacknowledged updates at once
#: (``Slave::updateFramework`` resumes its status update manager).
AGENT_MESSAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "launch_task": (PREFIX + "RunTask", ("framework_info", "task", "launch_executor")),
    "kill_task": (PREFIX + "KillTask", ("framework_id", "task_id", "grace_period")),
    "acknowledge": (PREFIX + "StatusUpdateAcknowledgement",
                    ("framework_id", "task_id", "uuid")),
    "resend_unacknowledged": (PREFIX + "UpdateFramework", ("framework_id",)),
    "shutdown_framework": (PREFIX + "ShutdownFramework", ("framework_id",)),
    "shutdown_executor": (PREFIX + "ShutdownExecutor", ("framework_id", "executor_id")),
    "framework_message": (PREFIX + "FrameworkToExecutor",
                          ("framework_id", "executor_id", "data")),
    "ping": (PREFIX + "PingAgent", ("connected",)),
    "drain": (PREFIX + "DrainAgent", ("config",)),
    "shutdown": (PREFIX + "Shutdown", ("message",)),
}
#: Message name → (the agent's method, the fields of its body).
AGENT_METHODS: dict[str, tuple[str, tuple[str, ...]]] = {
    name: (method, fields) for method, (name, fields) in AGENT_MESSAGES.items()}

#: Seconds to connect to a receiver, and to wait for its answer.
DEFAULT_TIMEOUT = 5.0

_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


def split_pid(pid: str) -> tuple[str, str]:
    """``slave(1)@host:port`` → (``slave(1)``, ``host:port``).

    Raises:
        ValueError: for a pid that is not ``<process>@<host>:<port>``.
    """
    process, at, address = pid.partition("@")
    host, colon, port = address.rpartition(":")
    if not at or not process or not colon or not host or not port.isdigit():
        raise ValueError(f"invalid pid {pid!r}: expected <process>@<host>:<port>")
    return process, address


class Messenger:
    """Sends messages to other processes (see the module docstring).

    Args:
        sender: the sending process' pid (``Libprocess-From``).
        timeout: seconds to connect, and to wait for an answer.

    Thread safety: thread-safe; sends are made one at a time, in the order they were called,
    each over the receiver's keep-alive connection (a new one when it broke).
    """

    def __init__(self, sender: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.sender = sender
        self.timeout = timeout
        self._lock = threading.Lock()
        self._connections: dict[str, http.client.HTTPConnection] = {}

    def send(self, address: str, process: str, name: str, body: Mapping[str, Any]) -> bool:
        """Deliver one message to ``process`` at ``address``: whether it was accepted (a lost
        one is logged)."""
        return self.call(address, process, name, body) is not None

    def call(self, address: str, process: str, name: str,
             body: Mapping[str, Any]) -> tuple[int, Any] | None:
        """Deliver one message and return (the 2xx status, its JSON answer or None when it has
        no body); None when it was lost."""
        path = f"/{process}/{name}"
        data = json.dumps(body).encode()
        with self._lock:
            try:
                status, answer = self._post(address, path, data)
            except (OSError, http.client.HTTPException, ValueError) as exc:
                self._drop(address)
                logger.warning("%s -> %s%s lost: %s", self.sender, address, path, exc)
                return None
        if not 200 <= status < 300:
            logger.warning("%s -> %s%s refused: %d %s", self.sender, address, path, status,
                           answer[:200].decode("utf-8", "replace"))
            return None
        try:
            return status, json.loads(answer) if answer else None
        except ValueError:
            logger.warning("%s -> %s%s: an answer that is not JSON", self.sender, address, path)
            return None

    def close(self) -> None:
        """Close every connection (a later send opens a new one)."""
        with self._lock:
            for address in list(self._connections):
                self._drop(address)

    def _post(self, address: str, path: str, data: bytes) -> tuple[int, bytes]:
        """Under the lock: POST over the kept connection; once more over a new one when the
        kept one turns out closed by the receiver (an idle keep-alive connection it dropped,
        or that of a receiver that restarted) before any answer came."""
        headers = {"Content-Type": "application/json", FROM_HEADER: self.sender,
                   "User-Agent": f"libprocess/{self.sender}"}
        reused = address in self._connections
        for _attempt in range(2 if reused else 1):
            connection = self._connection(address)
            try:
                connection.request("POST", path, data, headers)
                response = connection.getresponse()
                answer = response.read()
            except _STALE:
                self._drop(address)
                if not reused:
                    raise
                reused = False
                continue
            if response.will_close:
                self._drop(address)
            return response.status, answer
        raise ConnectionError(f"no connection to {address}")

    def _connection(self, address: str) -> http.client.HTTPConnection:
        connection = self._connections.get(address)
        if connection is None:
            host, _, port = address.rpartition(":")
            connection = http.client.HTTPConnection(host, int(port), timeout=self.timeout)
            self._connections[address] = connection
        return connection

    def _drop(self, address: str) -> None:
        connection = self._connections.pop(address, None)
        if connection is not None:
            connection.close()


def get_json(address: str, path: str, timeout: float = DEFAULT_TIMEOUT) -> Any:
    """``GET http://<address><path>``'s JSON answer (an agent's ``/state``).

    Raises:
        OSError: no answer within ``timeout`` seconds, or not a 200 one.
        ValueError: an answer that is not JSON.
    """
    host, _, port = address.rpartition(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        connection.request("GET", path, headers={"Accept": "application/json"})
        response = connection.getresponse()
        body = response.read()
    except http.client.HTTPException as exc:
        raise OSError(f"GET {address}{path}: {exc}") from exc
    finally:
        connection.close()
    if response.status != 200:
        raise OSError(f"GET {address}{path}: {response.status}")
    return json.loads(body)
