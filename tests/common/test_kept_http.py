"""Kept-alive GETs against a real HTTP/1.1 server that counts its connections."""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
import socket
import threading
import time
from urllib.error import HTTPError

import pytest

from disauto.common.kept_http import KeptConnections


pytestmark = pytest.mark.integration  # starts an HTTP server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections += 1
            self.server.open.append(self.connection)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        with self.server.lock:
            self.server.requests += 1
        if self.path == "/slow":
            time.sleep(1.5)
        if self.path == "/missing":
            body, status = b'{"error": "no such file"}', 404
        else:
            body, status = self.path.encode() + b"|" + \
                (self.headers.get("Authorization") or "").encode(), 200
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        if self.path == "/close":
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.connections = 0
        self.requests = 0
        self.open: list[object] = []

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gave up on /slow: its broken pipe is expected

    def drop_idle(self) -> None:
        """Close every connection it holds, as a server dropping idle keep-alive ones."""
        with self.lock:
            for conn in self.open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)  # type: ignore[attr-defined]
            self.open.clear()


@pytest.fixture
def server() -> Iterator[_Server]:
    made = _Server()
    thread = threading.Thread(target=made.serve_forever, daemon=True)
    thread.start()
    yield made
    made.shutdown()
    made.server_close()


def _url(server: _Server, path: str) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


def test_calls_in_a_row_share_one_connection(server: _Server) -> None:
    kept = KeptConnections()
    for n in range(20):
        answer = kept.get(_url(server, f"/files/read?n={n}"), {"Authorization": "Basic eDp5"})
        assert answer == f"/files/read?n={n}|Basic eDp5".encode()
    assert server.connections == 1 and kept.opened == 1
    kept.close()


def test_a_connection_the_server_dropped_is_replaced_and_the_get_sent_again(
        server: _Server) -> None:
    kept = KeptConnections()
    assert kept.get(_url(server, "/a")) == b"/a|"
    server.drop_idle()
    assert kept.get(_url(server, "/b")) == b"/b|"
    assert server.connections == 2
    # An answer that says "Connection: close" is not kept.
    assert kept.get(_url(server, "/close")) == b"/close|"
    assert kept.get(_url(server, "/c")) == b"/c|"
    assert server.connections == 3
    kept.close()


def test_an_error_answer_is_urlopens_http_error_and_no_answer_an_os_error(
        server: _Server) -> None:
    kept = KeptConnections()
    with pytest.raises(HTTPError) as raised:
        kept.get(_url(server, "/missing"))
    assert raised.value.code == 404 and raised.value.read() == b'{"error": "no such file"}'
    assert kept.get(_url(server, "/after")) == b"/after|"  # the connection stayed usable
    assert server.connections == 1
    port = server.server_address[1]
    server.shutdown()
    server.server_close()
    server.drop_idle()
    with pytest.raises(OSError):
        kept.get(f"http://127.0.0.1:{port}/gone", timeout=2.0)


def test_a_server_that_does_not_answer_in_time_is_asked_once(server: _Server) -> None:
    kept = KeptConnections()
    assert kept.get(_url(server, "/a")) == b"/a|"  # a kept connection, as for a poll
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        kept.get(_url(server, "/slow"), timeout=0.5)
    assert time.monotonic() - started < 1.4
    assert server.requests == 2
    kept.close()
