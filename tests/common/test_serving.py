"""The serving thread of a standard-library HTTP server: it serves, and ends on shutdown()."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from urllib.request import urlopen

import pytest

from disauto.common.serving import serving_thread


pytestmark = pytest.mark.integration  # a real server on the loopback


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: object) -> None:
        pass


def test_the_thread_serves_until_shutdown_and_then_ends() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = serving_thread(server, "test-serving")
    assert thread.daemon and thread.name == "test-serving" and not thread.is_alive()
    thread.start()
    try:
        with urlopen(f"http://127.0.0.1:{server.server_address[1]}/", timeout=10) as answer:
            assert answer.read() == b"hello"
    finally:
        server.shutdown()
        server.server_close()
    thread.join(10)
    assert not thread.is_alive()
