"""The embedded cluster's HTTP/1.1 server: one loopback port for the master, its agents and the
web UI, as ``libprocess`` serves a master.

What each path answers is :mod:`localmesos.server.routes` (the master's routes, the agents', the
sandboxes' ``/files`` and the web UI's); how a request is read and an answer written is
:mod:`localmesos.server.wire`. This module holds the server itself: its socket, one thread per
connection, and the rules of a connection's life.

Transport rules are a Mesos master's (Mesos' scheduler HTTP API documentation): SUBSCRIBE is
answered ``200`` with ``Transfer-Encoding: chunked``, ``Mesos-Stream-Id`` and no
``Content-Length``, and the connection then carries RecordIO events; every other call gets a
complete response on the keep-alive connection (``202`` with ``Content-Length: 0``), or
400/401/403/405/406/415 with Mesos' messages. Bodies over the size limit get 413.

Robustness: one thread per connection. An idle keep-alive connection may wait forever between
requests (a real master never drops it, and pymesos cannot survive that), but once a request
has started, reading it must finish within ``request_timeout``; writes time out after
``write_timeout``, and an event stream that cannot be written is closed, which disconnects its
framework. Any error inside a handler answers 500 and closes only that connection.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import io
import logging
import socket
import threading
import time
from typing import Any
from typing import Protocol
from typing import cast

from disauto.localmesos.master.master import Master
from disauto.localmesos.protocol.recordio import Subscription
from disauto.localmesos.server.admin_routes import Admin
from disauto.localmesos.server.http_auth import ReadonlyAuth
from disauto.localmesos.server.messages import Request
from disauto.localmesos.server.messages import Response
from disauto.localmesos.server.messages import text
from disauto.localmesos.server.routes import Router
from disauto.localmesos.server.wire import BadRequest
from disauto.localmesos.server.wire import RequestReader
from disauto.localmesos.server.wire import write_response
from disauto.localmesos.server.wire import write_stream


logger = logging.getLogger(__name__)


class Dispatcher(Protocol):
    """What answers each request (:class:`~localmesos.server.routes.Router`)."""

    def dispatch(self, request: Request) -> Response | Subscription: ...


class HttpServer:
    """The cluster's HTTP server (see the module docstring).

    Args:
        master: the master whose API and state are served (None with a ``router`` of
            another process' agents alone).
        host: the address to bind (loopback by default).
        port: the port to bind; 0 picks a free one.
        credentials: principal → secret; when given, scheduler calls need HTTP Basic
            authentication (Mesos ``--authenticate_http_frameworks``).
        max_body_bytes: larger request bodies are refused with 413.
        request_timeout: seconds a client has to send a whole request once it started.
        write_timeout: seconds a single socket write may block.
        max_connections: further connections are answered 503 and closed.
        readonly: who may read the read-only endpoints (:mod:`localmesos.server.http_auth`).
        router: what answers each request (default: the master's
            :class:`~localmesos.server.routes.Router`; ``credentials``, ``agents``, ``admin``
            and ``readonly`` are its).
    """

    def __init__(
        self,
        master: Master | None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        credentials: Mapping[str, str] | None = None,
        max_body_bytes: int = 16 * 1024 * 1024,
        request_timeout: float = 30.0,
        write_timeout: float = 30.0,
        max_connections: int = 1024,
        agents: Callable[[], Sequence[Any]] | None = None,
        admin: Admin | None = None,
        readonly: ReadonlyAuth | None = None,
        router: Dispatcher | None = None,
    ) -> None:
        self.master = master
        self._host = host
        self._port = port
        if router is None:
            if master is None:
                raise ValueError("HttpServer needs a master or a router")
            router = Router(master, credentials, agents, admin, readonly)
        self.router = router
        self.max_body_bytes = max_body_bytes
        self.request_timeout = request_timeout
        self.write_timeout = write_timeout
        self.max_connections = max_connections
        self._listener: socket.socket | None = None
        self._accept_thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._stopping = threading.Event()
        self._accepting = True
        self._counter = 0

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` actually bound."""
        if self._listener is None:
            raise RuntimeError("the HTTP server is not started")
        host, port = self._listener.getsockname()[:2]
        return str(host), int(port)

    def start(self) -> None:
        """Bind and start accepting connections.

        Raises:
            OSError: when the address cannot be bound (e.g. the port is in use).
        """
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((self._host, self._port))
            listener.listen(128)
        except OSError:
            listener.close()
            raise
        listener.settimeout(0.2)
        self._listener = listener
        self._accept_thread = threading.Thread(
            target=self._accept_loop, name="localmesos-http-accept", daemon=True
        )
        self._accept_thread.start()

    def stop_accepting(self, timeout: float = 10.0) -> None:
        """Close the listening socket; connections already open are still served."""
        self._accepting = False
        if self._accept_thread is not None and self._accept_thread.is_alive():
            self._accept_thread.join(timeout)
        if self._listener is not None:
            self._listener.close()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting, close every connection and join their threads (idempotent)."""
        self.stop_accepting(timeout)
        self._stopping.set()
        with self._lock:
            connections = dict(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        for thread in connections.values():
            thread.join(max(0.0, deadline - time.monotonic()))

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while self._accepting:
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if not self._accepting:
                    return
                time.sleep(0.05)
                continue
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                too_many = len(self._connections) >= self.max_connections
                if not too_many:
                    self._counter += 1
                    thread = threading.Thread(
                        target=self._serve_connection,
                        args=(conn,),
                        name=f"localmesos-http-{self._counter}",
                        daemon=True,
                    )
                    self._connections[conn] = thread
            if too_many:
                self._refuse(conn)
                continue
            thread.start()

    def _refuse(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(1.0)
            write_response(conn, text(503, "Too many connections"), close=True)
        except OSError:
            pass
        finally:
            conn.close()

    # -- connections ---------------------------------------------------------------------

    def _serve_connection(self, conn: socket.socket) -> None:
        rfile = cast(io.BufferedReader, conn.makefile("rb", buffering=65536))
        reader = RequestReader(conn, rfile, max_body_bytes=self.max_body_bytes,
                               request_timeout=self.request_timeout)
        try:
            while not self._stopping.is_set():
                conn.settimeout(None)  # idle keep-alive: wait for the next request
                try:
                    if not rfile.peek(1):
                        return
                except (OSError, ValueError):
                    return
                conn.settimeout(self.request_timeout)
                try:
                    request = reader.read()
                except BadRequest as exc:
                    write_response(conn, text(exc.status, str(exc)), close=True)
                    self._linger(conn)
                    return
                except (TimeoutError, OSError, ValueError):
                    return
                conn.settimeout(self.write_timeout)
                try:
                    result = self.router.dispatch(request)
                except Exception:  # noqa: BLE001 - never let a handler kill the server
                    logger.exception("error handling %s %s", request.method, request.target)
                    result = text(500, "Internal Server Error")
                    result.close = True
                if isinstance(result, Subscription):
                    self._stream(conn, result)
                    return
                close = result.close or not request.keep_alive
                write_response(conn, result, close=close, head=request.method == "HEAD")
                if close:
                    return
        except OSError:
            return
        finally:
            try:
                rfile.close()
            except OSError:
                pass
            try:
                conn.close()
            except OSError:
                pass
            with self._lock:
                self._connections.pop(conn, None)

    def _linger(self, conn: socket.socket) -> None:
        """After an early error answer, read and drop what the client still sends (bounded),
        so that it can finish its request and read the answer instead of a reset."""
        try:
            conn.shutdown(socket.SHUT_WR)
            conn.settimeout(0.5)
            deadline = time.monotonic() + min(5.0, self.request_timeout)
            budget = 4 * self.max_body_bytes
            while budget > 0 and time.monotonic() < deadline:
                data = conn.recv(65536)
                if not data:
                    return
                budget -= len(data)
        except OSError:
            return

    # -- event streams -------------------------------------------------------------------

    def _stream(self, conn: socket.socket, sub: Subscription) -> None:
        """Write a subscription's events as chunked RecordIO until either side ends it."""
        try:
            write_stream(conn, sub, self._stopping.is_set)
        except (OSError, ValueError):
            return
        finally:
            if sub.on_closed is not None:
                sub.on_closed(sub)
            elif self.master is not None:
                self.master.subscription_closed(sub)
            sub.release()
