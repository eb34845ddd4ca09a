"""A loopback HTTP server for the fetch tests of the fetcher and the agent.

It serves the files of one directory; a path that starts with ``/slow`` instead dribbles bytes
for seconds (and announces far more than it sends), so only a cancel ends its download early.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import functools
import http.server
from pathlib import Path
import threading
import time


class _Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self.path.startswith("/slow"):
            self.send_response(200)
            self.send_header("Content-Length", str(10_000_000))
            self.end_headers()
            try:
                for _ in range(400):
                    self.wfile.write(b"x" * 10)
                    self.wfile.flush()
                    time.sleep(0.01)
            except OSError:
                pass
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@contextlib.contextmanager
def serving(root: Path) -> Iterator[str]:
    """Serve ``root`` on a free loopback port; yields the base URL (``http://127.0.0.1:N``)."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Handler, directory=str(root))
    )
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
