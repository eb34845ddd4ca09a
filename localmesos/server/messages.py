"""One HTTP request and its answer, and the header rules every route shares.

:class:`Request` is what :mod:`localmesos.server.wire` parsed; a route answers a
:class:`Response` (or a :class:`~localmesos.protocol.recordio.Subscription` for an event
stream). The helpers are libprocess' and Mesos' first checks of a v1 API call: the method, the
``Content-Type`` and ``Accept`` headers and HTTP Basic credentials.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from dataclasses import field
import io
import json
from typing import Any

from disauto.localmesos.protocol.media_types import APPLICATION_JSON
from disauto.localmesos.protocol.media_types import JSON_ONLY_CONTENT_TYPE


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


def text(status: int, message: str = "", **headers: str) -> Response:
    """A plain-text answer (no body, and no ``Content-Type``, for an empty message)."""
    body = message.encode("utf-8")
    if body:
        headers.setdefault("Content-Type", "text/plain; charset=utf-8")
    return Response(status, body, dict(headers))


def json_response(value: Any, jsonp: str | None = None) -> Response:
    """``value`` as JSON, or as the JSONP call ``<jsonp>(...)`` when asked."""
    data = json.dumps(value, separators=(",", ":"))
    if jsonp:
        return Response(
            200, f"{jsonp}({data});".encode(), {"Content-Type": "text/javascript"}
        )
    return Response(200, data.encode("utf-8"), {"Content-Type": APPLICATION_JSON})


def method_not_allowed(request: Request, *allowed: str) -> Response:
    """405 naming the methods an endpoint takes, as libprocess words it."""
    names = ", ".join(f"'{method}'" for method in allowed)
    return text(405, f"Expecting one of {{ {names} }}, but received '{request.method}'",
                Allow=", ".join(allowed))


def refuse_unless_json_post(request: Request) -> Response | None:
    """Mesos' first checks of a v1 API call (scheduler, executor): 405 unless POST, 400 without a
    ``Content-Type``, 415 unless JSON (this master speaks JSON only); None when it passes."""
    if request.method != "POST":
        return method_not_allowed(request, "POST")
    content_type = request.header("content-type")
    if content_type is None:
        return text(400, "Expecting 'Content-Type' to be present")
    if content_type.strip() != APPLICATION_JSON:
        return text(415, JSON_ONLY_CONTENT_TYPE)
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


def int_param(request: Request, name: str) -> int | None:
    """An integer query parameter, or None; Mesos' message for one that is not an integer.

    Raises:
        ValueError: ``Failed to parse <name>: Failed to convert '<raw>'``.
    """
    raw = request.param(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"Failed to parse {name}: Failed to convert '{raw}'") from None
