"""GETs that reuse their HTTP/1.1 connections (keep-alive), as a browser polling an agent does.

``urllib.request.urlopen`` opens a connection for every call and closes it: against the
embedded cluster each call then cost a TCP connection and a server thread, and the framework's
log collector alone made two or three per trial (``/files/browse``, ``/files/read``). Here each
``host:port`` keeps its idle connections (at most :data:`IDLE_PER_HOST`) for the next call; a
kept connection the server closed meanwhile (an idle keep-alive connection it dropped) is
replaced and the GET sent again once (a GET changes nothing); one that timed out is not (the
caller waits one timeout, not two). ``https`` URLs are left to
``urlopen`` (their certificate checks are its). Errors are ``urlopen``'s: an answer other than
2xx raises :class:`urllib.error.HTTPError` with its code; no answer an :class:`OSError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from email.message import Message
from http.client import HTTPConnection
from http.client import HTTPException
import io
import threading
from urllib.error import HTTPError
from urllib.parse import urlsplit
from urllib.request import Request
from urllib.request import urlopen


IDLE_PER_HOST = 4
"""Idle connections kept per ``host:port`` (the framework's readers seldom overlap more)."""


class KeptConnections:
    """A pool of kept-alive HTTP/1.1 connections, one set per ``host:port``; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[tuple[str, int], list[HTTPConnection]] = {}
        self.opened = 0
        """Connections made so far (what keep-alive saves shows here)."""

    def get(self, url: str, headers: Mapping[str, str] | None = None,
            timeout: float = 5.0) -> bytes:
        """The body of ``GET url``.

        Raises:
            HTTPError: the server answered with a status other than 2xx.
            OSError: no answer (refused, reset, timed out).
        """
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            request = Request(url, headers=dict(headers or {}))  # noqa: S310 - see above
            with urlopen(request, timeout=timeout) as response:  # noqa: S310
                return bytes(response.read())
        key = (parts.hostname, parts.port or 80)
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        conn, kept = self._take(key, timeout)
        try:
            status, reason, answer_headers, body, reusable = _exchange(conn, target, headers)
        except (OSError, HTTPException) as err:
            conn.close()
            if not kept or isinstance(err, TimeoutError):
                raise  # a server that does not answer in time is not asked twice
            conn, kept = self._new(key, timeout), False  # the server dropped the idle one
            try:
                status, reason, answer_headers, body, reusable = _exchange(conn, target, headers)
            except (OSError, HTTPException) as err:
                conn.close()
                raise OSError(f"GET {url}: {err}") from err
        self._give_back(key, conn, reusable)
        if not 200 <= status < 300:
            raise HTTPError(url, status, reason, answer_headers, io.BytesIO(body))
        return body

    def close(self) -> None:
        """Close every idle connection."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()

    def _take(self, key: tuple[str, int], timeout: float) -> tuple[HTTPConnection, bool]:
        with self._lock:
            conns = self._idle.get(key)
            if conns:
                conn = conns.pop()
                conn.timeout = timeout
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
                return conn, True
        return self._new(key, timeout), False

    def _new(self, key: tuple[str, int], timeout: float) -> HTTPConnection:
        with self._lock:
            self.opened += 1
        return HTTPConnection(key[0], key[1], timeout=timeout)

    def _give_back(self, key: tuple[str, int], conn: HTTPConnection, reusable: bool) -> None:
        if reusable:
            with self._lock:
                conns = self._idle.setdefault(key, [])
                if len(conns) < IDLE_PER_HOST:
                    conns.append(conn)
                    return
        conn.close()


def _exchange(conn: HTTPConnection, target: str, headers: Mapping[str, str] | None,
              ) -> tuple[int, str, Message, bytes, bool]:
    """One GET on ``conn``: (status, reason, headers, body, whether the connection stays)."""
    conn.request("GET", target, headers=dict(headers or {}))
    response = conn.getresponse()
    body = response.read()
    return response.status, response.reason, response.msg, body, not response.will_close
