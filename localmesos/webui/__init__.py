"""The embedded master's web UI: static files (package data) served by the master.

``index.html`` loads ``app.css`` and ``app.js``; the script polls the master's own endpoints
(``/master/state``, ``/metrics/snapshot``, ``/master/roles``, ``/master/maintenance/schedule``
and ``/status``, ``/files/browse|read|download``) and draws the pages in the browser. Nothing
is fetched from outside the master.
"""

from __future__ import annotations

from functools import cache
from importlib import resources


#: URL path → (file in this package, Content-Type).
FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/app.css": ("app.css", "text/css; charset=utf-8"),
}


@cache
def _read(name: str) -> bytes:
    return resources.files(__name__).joinpath(name).read_bytes()


def static_file(path: str) -> tuple[bytes, str] | None:
    """The body and Content-Type served at ``path``, or None when the UI has no such file."""
    entry = FILES.get(path)
    if entry is None:
        return None
    name, content_type = entry
    return _read(name), content_type
