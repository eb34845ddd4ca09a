"""The embedded master's HTTP/1.1 server: the scheduler API, state, metrics and sandbox files.

Routes (all on one loopback port, as ``libprocess`` serves a master):

* ``GET /version`` → ``{"version": "1.11.0", ...}``.
* ``POST /api/v1/scheduler`` and ``/master/api/v1/scheduler``: the v1 scheduler API.
* ``GET /master/state`` (also ``.json``), ``/master/state-summary``, ``/master/tasks``,
  ``/master/roles``, ``/master/frameworks``, ``/master/slaves``, ``/master/flags``,
  ``/master/weights``, ``/master/quota``, ``/master/maintenance/status``, ``/master/redirect``
  and ``/master/health``, each also at the root (``/tasks``), JSONP with ``?jsonp=cb``
  (:mod:`localmesos.master.views.endpoints`); ``/metrics/snapshot``
  (:mod:`localmesos.master.views.metrics`).
* ``GET /files/browse``, ``/files/read`` and ``/files/download`` (Mesos query parameters
  ``path``, ``offset``, ``length``, ``jsonp``) over every agent's sandboxes.
* ``POST /api/v1`` and ``/master/api/v1``: the operator API's read calls
  (:mod:`localmesos.master.views.operator_api`).
* ``GET /slave(N)/monitor/statistics`` (also ``.json``): the N-th agent's executors' resource
  usage (:mod:`localmesos.containerizer.monitor`).
* ``GET /`` and ``/static/*``: the web UI (:mod:`localmesos.webui`).

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

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
import io
import json
import logging
import mimetypes
import os
import re
import select
import socket
import threading
import time
from typing import Any
from typing import cast
from urllib.parse import parse_qs
from urllib.parse import urlsplit

from disauto.localmesos.agent import executor_api
from disauto.localmesos.agent import sandbox
from disauto.localmesos.master.master import Master
from disauto.localmesos.master.validation import parse_call
from disauto.localmesos.master.views import endpoints
from disauto.localmesos.master.views import metrics
from disauto.localmesos.master.views import operator_api
from disauto.localmesos.master.views import state
from disauto.localmesos.protocol.media_types import APPLICATION_JSON
from disauto.localmesos.protocol.media_types import JSON_ONLY_ACCEPT
from disauto.localmesos.protocol.media_types import JSON_ONLY_CONTENT_TYPE
from disauto.localmesos.protocol.protojson import CallError
from disauto.localmesos.protocol.recordio import Subscription
from disauto.localmesos.webui import static_file


logger = logging.getLogger(__name__)

#: The realm Mesos uses for ``--authenticate_http_frameworks``.
SCHEDULER_REALM = "mesos-master-scheduler"

_REASONS = {
    100: "Continue",
    200: "OK",
    202: "Accepted",
    307: "Temporary Redirect",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    413: "Request Entity Too Large",
    415: "Unsupported Media Type",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
}
_MAX_LINE = 16 * 1024
_TASK_PARAMS = ("limit", "offset", "order", "framework_id", "task_id")
_MAX_HEADERS = 100
_SCHEDULER_PATHS = ("/api/v1/scheduler", "/master/api/v1/scheduler")
_AGENT_STATE = re.compile(r"^/slave\((\d+)\)/state(?:\.json)?$")
#: An agent's ``/monitor/statistics`` (:mod:`localmesos.containerizer.monitor`), at its
#: libprocess path.
_AGENT_STATISTICS = re.compile(r"^/slave\((\d+)\)/monitor/statistics(?:\.json)?$")
#: The master's read-only endpoints. libprocess hands a request whose first path segment names
#: no process to the master, so each is served at the root too (``/tasks`` is ``/master/tasks``).
_MASTER_ROUTES = frozenset({
    "state", "state.json", "state-summary", "tasks", "roles", "slaves", "frameworks", "flags",
    "health", "redirect", "weights", "quota", "maintenance/status",
})  # fmt: skip


def master_route(path: str) -> str | None:
    """The master endpoint ``path`` names (``/master/<name>`` or ``/<name>``), or None;
    ``redirect/`` for a path under ``redirect`` (Mesos answers it 404 to avoid loops)."""
    for prefix in ("/master/", "/"):
        name = path[len(prefix):] if path.startswith(prefix) else None
        if name in _MASTER_ROUTES:
            return name
        if name is not None and name.startswith("redirect/"):
            return "redirect/"
    return None


#: ``/api/v1/executor`` (where pymesos' executor driver calls: ``MESOS_AGENT_ENDPOINT`` has no
#: path) and ``/slave(N)/api/v1/executor`` (where libmesos calls: ``MESOS_SLAVE_PID``).
_EXECUTOR_PATH = re.compile(r"^(?:/slave\((\d+)\))?/api/v1/executor$")


class _BadRequest(Exception):
    """A request that cannot be parsed; answered with ``status`` and the connection closed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Request:
    """One parsed HTTP request."""

    method: str
    target: str
    version: str
    headers: dict[str, str]
    body: bytes = b""
    path: str = ""
    query: dict[str, list[str]] = field(default_factory=dict)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None

    @property
    def keep_alive(self) -> bool:
        connection = (self.header("connection") or "").lower()
        tokens = {t.strip() for t in connection.split(",")}
        if self.version == "HTTP/1.0":
            return "keep-alive" in tokens
        return "close" not in tokens


@dataclass
class Response:
    """A complete HTTP response."""

    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    close: bool = False
    #: A file to send as the body (``/files/download``); the writer closes it.
    file: io.BufferedReader | None = None


def _text(status: int, message: str = "", **headers: str) -> Response:
    body = message.encode("utf-8")
    if body:
        headers.setdefault("Content-Type", "text/plain; charset=utf-8")
    return Response(status, body, dict(headers))


def _json(value: Any, jsonp: str | None = None) -> Response:
    data = json.dumps(value, separators=(",", ":"))
    if jsonp:
        return Response(
            200, f"{jsonp}({data});".encode(), {"Content-Type": "text/javascript"}
        )
    return Response(200, data.encode("utf-8"), {"Content-Type": APPLICATION_JSON})


def _refuse_unless_json_post(request: Request) -> Response | None:
    """Mesos' first checks of a v1 API call (scheduler, executor): 405 unless POST, 400 without a
    ``Content-Type``, 415 unless JSON (this master speaks JSON only); None when it passes."""
    if request.method != "POST":
        return _text(
            405, f"Expecting one of {{ 'POST' }}, but received '{request.method}'", Allow="POST"
        )
    content_type = request.header("content-type")
    if content_type is None:
        return _text(400, "Expecting 'Content-Type' to be present")
    if content_type.strip() != APPLICATION_JSON:
        return _text(415, JSON_ONLY_CONTENT_TYPE)
    return None


def accepts_json(accept: str | None) -> bool:
    """libprocess ``Request::acceptsMediaType("application/json")``: an absent or empty
    ``Accept`` accepts everything; otherwise a media range matching it with q > 0 is needed."""
    if accept is None or not accept.strip():
        return True
    for item in accept.split(","):
        parts = [p.strip() for p in item.split(";")]
        media = parts[0].lower()
        quality = 1.0
        for param in parts[1:]:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality > 0 and media in ("application/json", "application/*", "*/*"):
            return True
    return False


def parse_basic_auth(header: str | None) -> tuple[str, str] | None:
    """``Authorization: Basic base64(principal:secret)`` → ``(principal, secret)``."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    principal, sep, secret = decoded.partition(":")
    if not sep:
        return None
    return principal, secret


class HttpServer:
    """The master's HTTP server (see the module docstring).

    Args:
        master: the master whose API and state are served.
        host: the address to bind (loopback by default).
        port: the port to bind; 0 picks a free one.
        credentials: principal → secret; when given, scheduler calls need HTTP Basic
            authentication (Mesos ``--authenticate_http_frameworks``).
        max_body_bytes: larger request bodies are refused with 413.
        request_timeout: seconds a client has to send a whole request once it started.
        write_timeout: seconds a single socket write may block.
        max_connections: further connections are answered 503 and closed.
    """

    def __init__(
        self,
        master: Master,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        credentials: Mapping[str, str] | None = None,
        max_body_bytes: int = 16 * 1024 * 1024,
        request_timeout: float = 30.0,
        write_timeout: float = 30.0,
        max_connections: int = 1024,
    ) -> None:
        self.master = master
        self._host = host
        self._port = port
        self._credentials = dict(credentials) if credentials is not None else None
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
            self._write_response(conn, _text(503, "Too many connections"), close=True)
        except OSError:
            pass
        finally:
            conn.close()

    # -- connections ---------------------------------------------------------------------

    def _serve_connection(self, conn: socket.socket) -> None:
        rfile = cast(io.BufferedReader, conn.makefile("rb", buffering=65536))
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
                    request = self._read_request(conn, rfile)
                except _BadRequest as exc:
                    self._write_response(conn, _text(exc.status, str(exc)), close=True)
                    self._linger(conn)
                    return
                except (TimeoutError, OSError, ValueError):
                    return
                conn.settimeout(self.write_timeout)
                try:
                    result = self._dispatch(request)
                except Exception:  # noqa: BLE001 - never let a handler kill the server
                    logger.exception("error handling %s %s", request.method, request.target)
                    result = _text(500, "Internal Server Error")
                    result.close = True
                if isinstance(result, Subscription):
                    self._stream(conn, result)
                    return
                close = result.close or not request.keep_alive
                self._write_response(conn, result, close=close, head=request.method == "HEAD")
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

    def _read_request(self, conn: socket.socket, rfile: io.BufferedReader) -> Request:
        deadline = time.monotonic() + self.request_timeout

        def readline() -> bytes:
            if time.monotonic() > deadline:
                raise TimeoutError("request took too long")
            line: bytes = rfile.readline(_MAX_LINE + 1)
            if len(line) > _MAX_LINE:
                raise _BadRequest(431, "Request header line too long")
            if not line:
                raise ConnectionError("client closed the connection")
            return line

        line = readline()
        while line in (b"\r\n", b"\n"):  # tolerate stray empty lines between requests
            line = readline()
        try:
            method, target, version = line.decode("latin-1").strip().split(" ")
        except ValueError:
            raise _BadRequest(400, "Malformed request line") from None
        if not version.startswith("HTTP/1."):
            raise _BadRequest(400, f"Unsupported HTTP version {version!r}")
        headers: dict[str, str] = {}
        while True:
            line = readline()
            if line in (b"\r\n", b"\n"):
                break
            if len(headers) >= _MAX_HEADERS:
                raise _BadRequest(431, "Too many request headers")
            name, sep, value = line.decode("latin-1").partition(":")
            if not sep or not name.strip() or name != name.strip():
                raise _BadRequest(400, "Malformed request header")
            key = name.strip().lower()
            value = value.strip()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        parts = urlsplit(target)
        request = Request(
            method=method,
            target=target,
            version=version,
            headers=headers,
            path=parts.path or "/",
            query=parse_qs(parts.query, keep_blank_values=True),
        )
        request.body = self._read_body(conn, rfile, request, deadline)
        return request

    def _read_body(
        self, conn: socket.socket, rfile: io.BufferedReader, request: Request, deadline: float
    ) -> bytes:
        encoding = (request.header("transfer-encoding") or "").lower()
        length_header = request.header("content-length")
        if "chunked" in encoding:
            self._continue(conn, request)
            return self._read_chunked(rfile, deadline)
        if length_header is None:
            return b""
        if not length_header.isdigit():
            raise _BadRequest(400, f"Invalid Content-Length {length_header!r}")
        length = int(length_header)
        if length > self.max_body_bytes:
            raise _BadRequest(
                413, f"Request body of {length} bytes exceeds the limit of {self.max_body_bytes}"
            )
        self._continue(conn, request)
        return self._read_exact(rfile, length, deadline)

    def _continue(self, conn: socket.socket, request: Request) -> None:
        if (request.header("expect") or "").lower() == "100-continue":
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")

    @staticmethod
    def _read_exact(rfile: io.BufferedReader, length: int, deadline: float) -> bytes:
        parts: list[bytes] = []
        remaining = length
        while remaining > 0:
            if time.monotonic() > deadline:
                raise TimeoutError("request body took too long")
            data = rfile.read1(min(remaining, 65536))
            if not data:
                raise ConnectionError("client closed the connection mid-body")
            parts.append(data)
            remaining -= len(data)
        return b"".join(parts)

    def _read_chunked(self, rfile: io.BufferedReader, deadline: float) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError("request body took too long")
            line = rfile.readline(_MAX_LINE + 1)
            if not line:
                raise ConnectionError("client closed the connection mid-body")
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                raise _BadRequest(400, "Malformed chunk size") from None
            if size < 0:
                raise _BadRequest(400, "Malformed chunk size")
            if size == 0:
                while True:  # trailers
                    line = rfile.readline(_MAX_LINE + 1)
                    if line in (b"\r\n", b"\n", b""):
                        return b"".join(parts)
            total += size
            if total > self.max_body_bytes:
                raise _BadRequest(
                    413, f"Request body exceeds the limit of {self.max_body_bytes} bytes"
                )
            parts.append(self._read_exact(rfile, size, deadline))
            self._read_exact(rfile, 2, deadline)  # CRLF after the chunk

    def _write_response(
        self, conn: socket.socket, response: Response, *, close: bool, head: bool = False
    ) -> None:
        reason = _REASONS.get(response.status, "Unknown")
        lines = [f"HTTP/1.1 {response.status} {reason}"]
        headers = dict(response.headers)
        if response.file is not None:
            try:
                self._write_file(conn, response, headers, close=close, head=head)
            finally:
                response.file.close()
            return
        headers.setdefault("Content-Length", str(len(response.body)))
        headers.setdefault("Date", time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime()))
        if close:
            headers["Connection"] = "close"
        lines.extend(f"{k}: {v}" for k, v in headers.items())
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        conn.sendall(data if head else data + response.body)

    def _write_file(
        self,
        conn: socket.socket,
        response: Response,
        headers: dict[str, str],
        *,
        close: bool,
        head: bool,
    ) -> None:
        assert response.file is not None
        size = os.fstat(response.file.fileno()).st_size
        head_only = Response(response.status, b"", dict(headers, **{"Content-Length": str(size)}))
        self._write_response(conn, head_only, close=close, head=True)
        if not head and size:
            # The file may grow while it is sent: send exactly the size announced.
            conn.sendfile(response.file, 0, size)

    # -- event streams -------------------------------------------------------------------

    def _stream(self, conn: socket.socket, sub: Subscription) -> None:
        """Write a subscription's events as chunked RecordIO until either side ends it."""
        try:
            stream_id = f"Mesos-Stream-Id: {sub.stream_id}\r\n" if sub.send_stream_id else ""
            head = (
                "HTTP/1.1 200 OK\r\n"
                f"Content-Type: {APPLICATION_JSON}\r\n"
                f"{stream_id}"
                "Transfer-Encoding: chunked\r\n"
                "Cache-Control: no-cache\r\n"
                "\r\n"
            )
            conn.sendall(head.encode("ascii"))
            while True:
                records, closed, wait = sub.take()
                if records:
                    payload = b"".join(records)
                    conn.sendall(f"{len(payload):x}\r\n".encode("ascii") + payload + b"\r\n")
                if closed:
                    conn.sendall(b"0\r\n\r\n")
                    return
                if self._stopping.is_set():
                    conn.sendall(b"0\r\n\r\n")
                    return
                readable, _, _ = select.select([conn.fileno(), sub.wake_fd], [], [], wait)
                if conn.fileno() in readable:
                    data = conn.recv(4096)
                    if not data:
                        return  # the client went away
        except (OSError, ValueError):
            return
        finally:
            if sub.on_closed is not None:
                sub.on_closed(sub)
            else:
                self.master.subscription_closed(sub)
            sub.release()

    # -- routing -------------------------------------------------------------------------

    def _dispatch(self, request: Request) -> Response | Subscription:
        path = request.path.rstrip("/") or "/"
        if path in _SCHEDULER_PATHS:
            return self._scheduler(request)
        if path in operator_api.PATHS:
            return self._operator(request)
        executor_path = _EXECUTOR_PATH.match(path)
        if executor_path is not None:
            index = executor_path.group(1)
            return self._executor(request, None if index is None else int(index))
        statistics = _AGENT_STATISTICS.match(path)
        if statistics is not None:
            return self._statistics(request, int(statistics.group(1)))
        if request.method not in ("GET", "HEAD"):
            if path == "/version" or master_route(path) is not None or path.startswith(
                ("/metrics", "/files", "/master", "/health", "/static")
            ):
                return _text(
                    405,
                    f"Expecting one of {{ 'GET', 'HEAD' }}, but received '{request.method}'",
                    Allow="GET, HEAD",
                )
            return _text(404)
        jsonp = request.param("jsonp")
        if path == "/version":
            return _json(state.version_json(), jsonp)
        if path in ("/metrics/snapshot", "/master/metrics/snapshot"):
            return _json(metrics.metrics_snapshot(self.master), jsonp)
        route = master_route(path)
        if route is not None:
            return self._master_endpoint(route, request)
        agent = _AGENT_STATE.match(path)
        if agent is not None:
            agent_state = self.master.agent_state(int(agent.group(1)))
            if agent_state is None:
                return _text(404)
            return _json(agent_state, jsonp)
        if path in ("/files/browse", "/files/browse.json"):
            return self._files(request, browse=True)
        if path in ("/files/read", "/files/read.json"):
            return self._files(request, browse=False)
        if path == "/files/download":
            return self._download(request)
        page = static_file(path)
        if page is not None:
            body, content_type = page
            return Response(200, body, {"Content-Type": content_type})
        return _text(404)

    def _master_endpoint(self, route: str, request: Request) -> Response:
        """A read-only master endpoint (see :data:`_MASTER_ROUTES`), JSONP when asked."""
        jsonp = request.param("jsonp")
        master = self.master
        if route in ("state", "state.json"):
            return _json(state.master_state(master), jsonp)
        if route == "health":
            return Response(200)
        if route.startswith("redirect"):
            return self._redirect(route)
        builders = {
            "state-summary": lambda: endpoints.state_summary(master),
            "tasks": lambda: endpoints.tasks(master, {k: request.param(k) for k in _TASK_PARAMS}),
            "roles": lambda: endpoints.roles(master),
            "slaves": lambda: endpoints.slaves(master, request.param("slave_id")),
            "frameworks": lambda: endpoints.frameworks(master, request.param("framework_id")),
            "flags": lambda: {"flags": state.master_state(master)["flags"]},
            "weights": lambda: endpoints.weights(master),
            "quota": endpoints.quota_status,
            "maintenance/status": endpoints.maintenance_status,
        }
        return _json(builders[route](), jsonp)

    def _statistics(self, request: Request, index: int) -> Response:
        """``/slave(N)/monitor/statistics``: the N-th agent's executors' resource usage.
        Mesos serves it to GET alone (405 naming GET otherwise), JSONP with ``?jsonp=cb``."""
        if request.method != "GET":
            return _text(405, f"Expecting one of {{ 'GET' }}, but received '{request.method}'",
                         Allow="GET")
        agents = self.master.agent_list()
        if not 1 <= index <= len(agents) or not hasattr(agents[index - 1],
                                                        "monitor_statistics"):
            return _text(404)
        return _json(agents[index - 1].monitor_statistics(), request.param("jsonp"))

    def _redirect(self, route: str) -> Response:
        """``/master/redirect`` on the leader (this master is always one): 307 to its own base
        URL, protocol-relative as Mesos writes it; a path under ``redirect/`` is 404."""
        if route != "redirect":
            return _text(404)
        with self.master.lock:
            location = f"//{self.master.hostname}:{self.master.port}"
        return Response(307, headers={"Location": location})

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
        refused = _refuse_unless_json_post(request)
        if refused is not None:
            return refused
        try:
            call = parse_call(request.body, principal)
        except CallError as exc:
            return _text(exc.status, str(exc))
        kind = call["type"]
        if kind in ("SUBSCRIBE", "RECONCILE_OPERATIONS") and not accepts_json(
            request.header("accept")
        ):
            return _text(406, JSON_ONLY_ACCEPT)
        if kind == "SUBSCRIBE":
            if request.header("mesos-stream-id") is not None:
                return _text(
                    400, "Subscribe calls should not include the 'Mesos-Stream-Id' header"
                )
            info = call["subscribe"]["framework_info"]
            if principal is not None and "principal" not in info:
                # As Mesos: the authenticated principal becomes the framework's.
                info["principal"] = principal
            return self.master.subscribe(call)
        try:
            status, body = self.master.handle_call(
                call, request.header("mesos-stream-id"), principal
            )
        except CallError as exc:
            return _text(exc.status, str(exc))
        if body is not None:
            return _json(body)
        return Response(status)

    def _executor(self, request: Request, index: int | None) -> Response | Subscription:
        """The v1 executor API of an agent (:mod:`localmesos.agent.executor_api`)."""
        agents = self.master.agent_list()
        if index is not None and not 1 <= index <= len(agents):
            return _text(404)
        refused = _refuse_unless_json_post(request)
        if refused is not None:
            return refused
        try:
            call = executor_api.parse_call(request.body)
        except CallError as exc:
            return _text(exc.status, str(exc))
        if call["type"] == "SUBSCRIBE" and not accepts_json(request.header("accept")):
            return _text(406, JSON_ONLY_ACCEPT)
        if call["type"] == "HEARTBEAT":
            return Response(202)
        found = executor_api.find_agent(agents, index, call)
        if isinstance(found, tuple):
            return _text(*found)
        answer = found.executor_call(call)
        if isinstance(answer, Subscription):
            return answer
        status, message = answer
        return _text(status, message) if message else Response(status)

    def _files(self, request: Request, *, browse: bool) -> Response:
        jsonp = request.param("jsonp")
        path = request.param("path")
        if not path:
            return _text(400, "Expecting 'path=value' in query.")
        roots = self.master.file_roots()
        try:
            if browse:
                return _json(sandbox.browse(roots, path), jsonp)
            try:
                offset = _int_param(request, "offset")
                length = _int_param(request, "length")
            except ValueError as exc:
                return _text(400, str(exc))
            return _json(sandbox.read(roots, path, -1 if offset is None else offset, length),
                         jsonp)
        except sandbox.SandboxError as exc:
            return _text(exc.http_status, str(exc))

    def _operator(self, request: Request) -> Response:
        answer = operator_api.handle(
            self.master,
            request.method,
            request.header("content-type"),
            accepts_json(request.header("accept")),
            request.body,
        )
        return Response(answer.status, answer.body, dict(answer.headers))

    def _download(self, request: Request) -> Response:
        """Mesos ``/files/download``: the file as an attachment, typed by its extension."""
        path = request.param("path")
        if not path:
            return _text(400, "Expecting 'path=value' in query.")
        try:
            real = sandbox.resolve(self.master.file_roots(), path)
            if real.is_dir():
                return _text(400, "Cannot download a directory.")
            fd, real = sandbox.open_file(self.master.file_roots(), path)
        except sandbox.SandboxNotFound:
            return _text(404)
        except sandbox.SandboxError as exc:
            return _text(exc.http_status, str(exc))
        content_type = "application/octet-stream"
        if real.suffix:
            content_type = mimetypes.types_map.get(real.suffix.lower(), content_type)
        headers = {
            "Content-Type": content_type,
            "Content-Disposition": f"attachment; filename={real.name}",
        }
        return Response(200, headers=headers, file=os.fdopen(fd, "rb"))


def _int_param(request: Any, name: str) -> int | None:
    """An integer query parameter, or None; Mesos' message for one that is not an integer."""
    raw = request.param(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"Failed to parse {name}: Failed to convert '{raw}'") from None
