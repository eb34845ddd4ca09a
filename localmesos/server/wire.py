"""HTTP/1.1 on one connection: reading a request, writing a response, a file or an event stream.

:class:`RequestReader` reads a request line, headers and a body (``Content-Length`` or chunked,
``Expect: 100-continue`` answered) within a deadline and a body limit; a request that cannot be
parsed is a :class:`BadRequest` with the status to answer. The writers send a complete
:class:`~localmesos.server.messages.Response` (a file with exactly the size announced), and a
:class:`~localmesos.protocol.recordio.Subscription` as chunked RecordIO until either side ends
it, as a Mesos master streams events (``Mesos-Stream-Id`` unless the stream is an executor's).
"""

from __future__ import annotations

from collections.abc import Callable
import io
import os
import select
import socket
import time
from urllib.parse import parse_qs
from urllib.parse import urlsplit

from disauto.localmesos.protocol.media_types import APPLICATION_JSON
from disauto.localmesos.protocol.recordio import Subscription
from disauto.localmesos.server.messages import Request
from disauto.localmesos.server.messages import Response


REASONS = {
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
MAX_LINE = 16 * 1024
MAX_HEADERS = 100


class BadRequest(Exception):
    """A request that cannot be parsed; answered with ``status`` and the connection closed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# -- reading ----------------------------------------------------------------------------------


class RequestReader:
    """Reads the requests of one connection.

    Args:
        conn: the connection (for ``100 Continue``).
        rfile: its buffered reader.
        max_body_bytes: larger bodies are a :class:`BadRequest` 413.
        request_timeout: seconds one request may take to arrive, once it started.
    """

    def __init__(self, conn: socket.socket, rfile: io.BufferedReader, *, max_body_bytes: int,
                 request_timeout: float) -> None:
        self._conn = conn
        self._rfile = rfile
        self._max_body_bytes = max_body_bytes
        self._request_timeout = request_timeout

    def read(self) -> Request:
        """The next request, body included.

        Raises:
            BadRequest: a request that cannot be parsed or is too large.
            TimeoutError: it took longer than the request timeout.
            OSError, ValueError: the connection broke.
        """
        deadline = time.monotonic() + self._request_timeout
        line = self._line(deadline)
        while line in (b"\r\n", b"\n"):  # tolerate stray empty lines between requests
            line = self._line(deadline)
        try:
            method, target, version = line.decode("latin-1").strip().split(" ")
        except ValueError:
            raise BadRequest(400, "Malformed request line") from None
        if not version.startswith("HTTP/1."):
            raise BadRequest(400, f"Unsupported HTTP version {version!r}")
        headers = self._headers(deadline)
        parts = urlsplit(target)
        request = Request(
            method=method,
            target=target,
            version=version,
            headers=headers,
            path=parts.path or "/",
            query=parse_qs(parts.query, keep_blank_values=True),
        )
        request.body = self._body(request, deadline)
        return request

    def _line(self, deadline: float) -> bytes:
        if time.monotonic() > deadline:
            raise TimeoutError("request took too long")
        line: bytes = self._rfile.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise BadRequest(431, "Request header line too long")
        if not line:
            raise ConnectionError("client closed the connection")
        return line

    def _headers(self, deadline: float) -> dict[str, str]:
        headers: dict[str, str] = {}
        while True:
            line = self._line(deadline)
            if line in (b"\r\n", b"\n"):
                return headers
            if len(headers) >= MAX_HEADERS:
                raise BadRequest(431, "Too many request headers")
            name, sep, value = line.decode("latin-1").partition(":")
            if not sep or not name.strip() or name != name.strip():
                raise BadRequest(400, "Malformed request header")
            key = name.strip().lower()
            value = value.strip()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value

    def _body(self, request: Request, deadline: float) -> bytes:
        encoding = (request.header("transfer-encoding") or "").lower()
        length_header = request.header("content-length")
        if "chunked" in encoding:
            self._continue(request)
            return self._chunked(deadline)
        if length_header is None:
            return b""
        if not length_header.isdigit():
            raise BadRequest(400, f"Invalid Content-Length {length_header!r}")
        length = int(length_header)
        if length > self._max_body_bytes:
            raise BadRequest(
                413, f"Request body of {length} bytes exceeds the limit of {self._max_body_bytes}"
            )
        self._continue(request)
        return self._exact(length, deadline)

    def _continue(self, request: Request) -> None:
        if (request.header("expect") or "").lower() == "100-continue":
            self._conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")

    def _exact(self, length: int, deadline: float) -> bytes:
        parts: list[bytes] = []
        remaining = length
        while remaining > 0:
            if time.monotonic() > deadline:
                raise TimeoutError("request body took too long")
            data = self._rfile.read1(min(remaining, 65536))
            if not data:
                raise ConnectionError("client closed the connection mid-body")
            parts.append(data)
            remaining -= len(data)
        return b"".join(parts)

    def _chunked(self, deadline: float) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError("request body took too long")
            line = self._rfile.readline(MAX_LINE + 1)
            if not line:
                raise ConnectionError("client closed the connection mid-body")
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                raise BadRequest(400, "Malformed chunk size") from None
            if size < 0:
                raise BadRequest(400, "Malformed chunk size")
            if size == 0:
                while True:  # trailers
                    line = self._rfile.readline(MAX_LINE + 1)
                    if line in (b"\r\n", b"\n", b""):
                        return b"".join(parts)
            total += size
            if total > self._max_body_bytes:
                raise BadRequest(
                    413, f"Request body exceeds the limit of {self._max_body_bytes} bytes"
                )
            parts.append(self._exact(size, deadline))
            self._exact(2, deadline)  # CRLF after the chunk


# -- writing ----------------------------------------------------------------------------------


def write_response(
    conn: socket.socket, response: Response, *, close: bool, head: bool = False
) -> None:
    """Send a complete response (a file body is sent, then closed)."""
    reason = REASONS.get(response.status, "Unknown")
    lines = [f"HTTP/1.1 {response.status} {reason}"]
    headers = dict(response.headers)
    if response.file is not None:
        try:
            _write_file(conn, response, headers, close=close, head=head)
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
    conn: socket.socket, response: Response, headers: dict[str, str], *, close: bool, head: bool
) -> None:
    assert response.file is not None
    size = os.fstat(response.file.fileno()).st_size
    head_only = Response(response.status, b"", dict(headers, **{"Content-Length": str(size)}))
    write_response(conn, head_only, close=close, head=True)
    if not head and size:
        # The file may grow while it is sent: send exactly the size announced.
        conn.sendfile(response.file, 0, size)


def write_stream(conn: socket.socket, sub: Subscription, stopping: Callable[[], bool]) -> None:
    """Write a subscription's events as chunked RecordIO until the stream closes, the client
    goes away or ``stopping()`` (the server stops); the caller releases the stream.

    Raises:
        OSError, ValueError: the connection broke.
    """
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
        if closed or stopping():
            conn.sendall(b"0\r\n\r\n")
            return
        readable, _, _ = select.select([conn.fileno(), sub.wake_fd], [], [], wait)
        if conn.fileno() in readable:
            data = conn.recv(4096)
            if not data:
                return  # the client went away
