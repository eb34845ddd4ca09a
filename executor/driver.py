"""The slot executor's driver: pymesos' ``MesosExecutorDriver`` that lives through agent
restarts as a Mesos v1 executor does when its framework checkpoints.

What Mesos' executor library does (apache/mesos ``src/executor/executor.cpp``; the agent's
side is ``src/slave/slave.cpp`` ``Slave::subscribe``), and pymesos 0.3.15 does not:

* ``MESOS_CHECKPOINT`` is ``1`` or ``0`` (pymesos takes any non-empty value, ``0`` too, for
  checkpointing).
* Without checkpointing, losing the agent ends the executor (its tasks are killed), as
  before. With it, the executor keeps its tasks running and subscribes again, backing off
  (a random wait up to ``MESOS_SUBSCRIPTION_BACKOFF_MAX``, 2 s by default, doubling from
  there), for at most ``MESOS_RECOVERY_TIMEOUT`` (15 min); after that it shuts down.
* Every status update is kept until the agent acknowledges it: one sent while the agent is
  away is not lost, and every update not acknowledged goes with the next SUBSCRIBE
  (``unacknowledged_updates``, with the tasks not acknowledged, ``unacknowledged_tasks``).
  One made after that SUBSCRIBE left and before its SUBSCRIBED came back (the agent took the
  SUBSCRIBE without it) is sent once subscribed: Mesos' library drops an UPDATE while the
  executor is SUBSCRIBING (``src/executor/executor.cpp`` ``MesosProcess::send``), so it is
  the executor's to send again, and nothing would until the next restart.
* An agent that authenticates its executors (``--authenticate_http_executors``) gives each
  one a token in ``MESOS_EXECUTOR_AUTHENTICATION_TOKEN``; every call carries it as
  ``Authorization: Bearer <token>``, and it is taken out of the environment at once, so the
  trials (and anything else the executor starts) never see it (``MesosProcess`` reads and
  erases it the same way). pymesos 0.3.15 never reads it: its SUBSCRIBE is a hand-written
  request and its other calls share one headers dict, so neither would carry a token.
* An agent that sends nothing for 5 heartbeat intervals (a frozen one: ``kill -STOP``, whose
  connection stays open) counts as lost, as a closed connection does (``common/heartbeats.py``):
  the executor closes the stream, then subscribes again with checkpointing or shuts down
  without. The interval is Mesos' ``DEFAULT_EXECUTOR_HEARTBEAT_INTERVAL`` (30 min, a constant
  of every Mesos agent), or what the embedded agent says in
  ``DISAUTO_EXECUTOR_HEARTBEAT_INTERVAL``. Mesos' own executor library has no such check.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from typing import Any
import uuid

from pymesos import MesosExecutorDriver
from pymesos.process import Process
from pymesos.utils import decode_data
from pymesos.utils import encode_data

from disauto.common.durations import DurationError
from disauto.common.durations import parse_duration
from disauto.common.heartbeats import EXECUTOR_HEARTBEAT_ENV
from disauto.common.heartbeats import MESOS_EXECUTOR_HEARTBEAT_INTERVAL
from disauto.common.heartbeats import HeartbeatWatch
from disauto.common.heartbeats import SameAddress


logger = logging.getLogger("disauto.executor")

DEFAULT_RECOVERY_TIMEOUT = 15 * 60.0
DEFAULT_BACKOFF_MAX = 2.0
#: Where the agent puts the executor's token (apache/mesos ``src/slave/slave.cpp``).
TOKEN_VARIABLE = "MESOS_EXECUTOR_AUTHENTICATION_TOKEN"


def with_authorization(request: bytes, token: str) -> bytes:
    """A hand-written HTTP request with ``Authorization: Bearer <token>`` after its request
    line (unchanged without a token)."""
    if not token:
        return request
    line, sep, rest = request.partition(b"\r\n")
    return line + sep + f"Authorization: Bearer {token}\r\n".encode("ascii") + rest


def _duration(name: str, default: float) -> float:
    text = os.environ.get(name, "")
    try:
        return parse_duration(text) if text else default
    except DurationError:
        logger.warning("%s=%r is not a duration: using %gs", name, text, default)
        return default


class CheckpointingExecutorDriver(MesosExecutorDriver):  # type: ignore[misc]  # untyped
    """A ``MesosExecutorDriver`` that re-subscribes after an agent restart (see the module
    docstring). Its ``executor`` is a pymesos ``Executor``."""

    def __init__(self, executor: Any, **kwargs: Any) -> None:
        self._token = os.environ.pop(TOKEN_VARIABLE, "")
        super().__init__(executor, **kwargs)
        self.checkpoint = os.environ.get("MESOS_CHECKPOINT", "0") == "1"
        self.recovery_timeout = _duration("MESOS_RECOVERY_TIMEOUT", DEFAULT_RECOVERY_TIMEOUT)
        self.backoff_max = _duration("MESOS_SUBSCRIPTION_BACKOFF_MAX", DEFAULT_BACKOFF_MAX)
        self._updates_lock = threading.Lock()
        self._lost_since: float | None = None
        self._carried: set[uuid.UUID] = set()
        """The updates the last SUBSCRIBE carried."""
        self.resubscriptions = 0
        self.heartbeats = HeartbeatWatch(
            _duration(EXECUTOR_HEARTBEAT_ENV, MESOS_EXECUTOR_HEARTBEAT_INTERVAL))
        """When the agent was last heard from."""

    # -- the agent's heartbeats -------------------------------------------------------------

    def start(self) -> None:
        super().start()
        threading.Thread(target=self._watch_heartbeats, name="heartbeats", daemon=True).start()

    def on_event(self, event: dict[str, Any]) -> None:
        self.heartbeats.heard()  # a HEARTBEAT or any other event
        super().on_event(event)

    def check_heartbeats(self) -> bool:
        """Treat an agent silent for 5 heartbeats as lost (at most once every 5); whether it
        did: :meth:`on_close` does what it does for a connection the agent closed (without
        checkpointing, or past the recovery timeout, the executor shuts down), then the stream
        is dropped, and pymesos subscribes again.

        Not the other way round: pymesos' I/O loop, dropping the stream, would call
        :meth:`on_close` itself, but the stop that a shutdown asks for there is lost (the loop
        reads its wake-up after closing) and the loop connects again instead of ending.
        """
        if not self.heartbeats.overdue():
            return False
        self.heartbeats.dropped()
        logger.warning("nothing heard from the agent for %.0fs (%d heartbeats of %gs): "
                       "the agent is lost", self.heartbeats.silent_for(),
                       self.heartbeats.misses, self.heartbeats.interval)
        self.on_close()
        master = self.master
        if master is not None and not self.aborted:
            # pymesos' I/O loop reconnects when told an address unequal to the one it holds.
            Process.change_master(self, SameAddress(master))
        return True

    def _watch_heartbeats(self) -> None:
        pace = min(1.0, (self.heartbeats.patience or 10.0) / 10)
        while not self.aborted:
            self.check_heartbeats()
            time.sleep(pace)

    # -- updates ---------------------------------------------------------------------------

    def sendStatusUpdate(self, status: dict[str, Any]) -> None:  # noqa: N802 - pymesos API
        """Send ``status``, kept until the agent acknowledges it; while the agent is away it
        waits for the next SUBSCRIBE (which carries it)."""
        status = dict(status)
        status.setdefault("timestamp", time.time())
        status.setdefault("source", "SOURCE_EXECUTOR")
        status.setdefault("uuid", encode_data(uuid.uuid4().bytes))
        key = uuid.UUID(bytes=decode_data(status["uuid"]))
        with self._updates_lock:
            self.updates[key] = {"status": status}
        try:
            super().sendStatusUpdate(status)
        except Exception as exc:
            if not self.checkpoint:
                raise
            logger.warning("status update %s of %s waits for the agent: %s",
                           status.get("state"), status["task_id"]["value"], exc)

    def gen_request(self) -> bytes:
        with self._updates_lock:
            request: bytes = super().gen_request()
            self._carried = set(self.updates)
        return with_authorization(request, self._token)

    def _send(self, body: Any, path: str = "/api/v1/executor", method: str = "POST",
              headers: dict[str, str] | None = None) -> Any:
        """pymesos' call, with a headers dict of its own and the executor's token."""
        own = dict(headers or {})
        if self._token:
            own["Authorization"] = f"Bearer {self._token}"
        return super()._send(body, path, method, own)

    # -- the agent comes and goes -----------------------------------------------------------

    def on_subscribed(self, info: dict[str, Any]) -> None:
        if self._lost_since is not None:
            logger.info("subscribed again after %.1fs without the agent",
                        time.monotonic() - self._lost_since)
            self.resubscriptions += 1
        self._lost_since = None
        super().on_subscribed(info)
        with self._updates_lock:
            late = [u["status"] for key, u in self.updates.items() if key not in self._carried]
        for status in late:  # made while subscribing: the agent has not seen them
            try:
                MesosExecutorDriver.sendStatusUpdate(self, status)
            except Exception as exc:  # noqa: BLE001 - kept; the next SUBSCRIBE carries it
                logger.warning("status update %s of %s waits for the agent: %s",
                               status.get("state"), status["task_id"]["value"], exc)

    def on_close(self) -> None:
        """The connection to the agent ended."""
        if not self.checkpoint or self.aborted:
            super().on_close()
            return
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        now = time.monotonic()
        if self._lost_since is None:
            self._lost_since = now
            self.executor.disconnected(self)
            logger.warning("lost the agent; subscribing again for up to %gs",
                           self.recovery_timeout)
        if now - self._lost_since > self.recovery_timeout:
            logger.error("the agent did not come back within %gs: shutting down",
                         self.recovery_timeout)
            self.on_shutdown()
            return
        time.sleep(random.uniform(0, self.backoff_max))  # a linear backoff, as Mesos' library
