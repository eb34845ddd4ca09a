"""The thread that serves a standard-library HTTP server in the background."""

from __future__ import annotations

import socketserver
import threading


STOP_POLL_SECONDS = 0.05
"""How often the serving thread looks whether it was told to stop: ``socketserver``'s default,
half a second, was half a second of every job's end (the job page's and the file server's)."""


def serving_thread(server: socketserver.BaseServer, name: str) -> threading.Thread:
    """A daemon thread (not started) that serves ``server`` until its ``shutdown()``, which
    then returns within :data:`STOP_POLL_SECONDS`."""
    return threading.Thread(target=server.serve_forever, name=name, daemon=True,
                            kwargs={"poll_interval": STOP_POLL_SECONDS})
