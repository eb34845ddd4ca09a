"""The job page's HTTP server (standard library: ``ThreadingHTTPServer``).

Routes (every answer but the pages and their scripts is JSON; every error is one line,
``{"error": "..."}``, never a traceback)::

    GET  /                                   the index of jobs (or, serving one job, to its page)
    GET  /favicon.ico                        204: no icon (the pages name none, ``data:,``)
    GET  /api/jobs                           every job's facts
    GET  /api/compare?jobs=ID,ID             their best so far by trial number (compare.py)
    GET  /static/<file>                      the page's script and style, plotly.min.js
    GET  /jobs/<id>/                         a job's page
    GET  /jobs/<id>/api/page                 the page's data (views.page_data); ?offset=&limit=
                                             &sort=&dir=&state=&filter= (the table's page,
                                             table.py), &have=section:version,... (sections
                                             the page has are left out when unchanged)
    GET  /jobs/<id>/api/trials/<n>/log       ?stream=stdout|stderr&offset=N: a log's next bytes
    POST /jobs/<id>/api/kill                 end the job             (the job token needed)
    POST /jobs/<id>/api/trials/<n>/kill      kill trial n            (the job token needed)
    *    /jobs/<id>/api/registry[/<name>]    the telemetry registry  (dataservice.py)
    GET  /jobs/<id>/api/data[/names]         the telemetry samples   (dataservice.py)
    *    /api/registry..., /api/data...      the same, on a server of one job (the framework's)

POSTs, PUTs and DELETEs carry the job token as ``Authorization: Bearer <token>``: none is 401,
a wrong one 403. A POST with ``Prefer: status-in-body`` (the page's kills) is answered 200 even
when refused, ``{"ok": false, "status": 409, "error": "..."}``, with ``Preference-Applied``:
a browser logs every answer of 400 or more to its console as an error, and a refusal the page
expects (a trial that ended meanwhile, a missing token) is one line on the page, not that.
Reading needs no token (the page is read-only without it); the server listens where the
framework's other servers do (loopback in local mode).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
import hmac
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from importlib import resources
import json
import logging
from pathlib import Path
import re
import threading
import time
from typing import Any
from urllib.parse import parse_qs
from urllib.parse import urlsplit

from disauto.common.serving import serving_thread
from disauto.framework.webui import dataservice
from disauto.framework.webui.compare import compare_data
from disauto.framework.webui.compare import requested
from disauto.framework.webui.sources import ActionError
from disauto.framework.webui.sources import JobSource
from disauto.framework.webui.table import TableQuery
from disauto.framework.webui.table import TableQueryError
from disauto.framework.webui.views import LIVE_WAIT
from disauto.framework.webui.views import job_view
from disauto.framework.webui.views import page_data
from disauto.framework.webui.views import parse_have
from disauto.framework.webui.views import to_json


logger = logging.getLogger(__name__)

Sources = Callable[[], Mapping[str, JobSource]]
MAX_BODY = 64 << 10
TAIL_BYTES = 32 << 10
"""What a log request without an offset returns: the end of the file."""
MAX_CHUNK = 256 << 10
_STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                 ".css": "text/css; charset=utf-8"}
_JOB_ROUTE = re.compile(r"/jobs/([^/]+)(/.*)?")
_TRIAL_ROUTE = re.compile(r"/api/trials/(\d{1,9})/(log|kill)")
_ENTRY_ROUTE = re.compile(r"/api/registry/([^/]+)")
_SERVICE_ROUTE = re.compile(r"/api/(registry|data)(/.*)?")


IN_BODY = "status-in-body"
"""The ``Prefer`` token (RFC 7240) that asks for a POST's refusal in a 200 answer's body."""


def static_bytes(name: str) -> bytes:
    """A file of the page (``static/``), or plotly.min.js from the plotly package.

    Raises:
        FileNotFoundError: no such file.
    """
    if name == "plotly.min.js":
        return resources.files("plotly").joinpath("package_data", "plotly.min.js").read_bytes()
    if not re.fullmatch(r"[a-z]+\.(html|js|css)", name):
        raise FileNotFoundError(name)
    return resources.files(__package__).joinpath("static", name).read_bytes()


class _Handler(BaseHTTPRequestHandler):
    server: _PageServer
    protocol_version = "HTTP/1.1"

    # -- answers ---------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, content_type: str,
              headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any) -> None:
        self._send(status, to_json(data).encode(), "application/json")

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": message.splitlines()[0] if message else "error"})

    def send_error(self, code: int, message: str | None = None,
                   explain: str | None = None) -> None:
        # The standard library's own errors (a malformed request line) in the same form.
        self.close_connection = True
        self._error(code, message or "bad request")

    # -- dispatch --------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        self._dispatch("GET")

    def do_HEAD(self) -> None:  # noqa: N802
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._dispatch("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self._dispatch("DELETE")

    def do_PATCH(self) -> None:  # noqa: N802
        self._error(405, "method not allowed")

    def _dispatch(self, method: str) -> None:
        try:
            self._route(method)
        except ActionError as err:
            if method == "POST" and self._prefers_in_body():
                self._send(200, to_json({"ok": False, "status": err.status,
                                         "error": str(err).splitlines()[0]}).encode(),
                           "application/json", {"Preference-Applied": IN_BODY})
            else:
                self._error(err.status, str(err))
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as err:  # noqa: BLE001 - one line to the browser, the rest to the log
            logger.exception("job page: %s %s failed", method, self.path)
            self._error(500, f"internal error: {type(err).__name__}: {err}")

    def _prefers_in_body(self) -> bool:
        preferences = ",".join(self.headers.get_all("Prefer") or [])
        return IN_BODY in (p.split(";")[0].strip().lower() for p in preferences.split(","))

    def _route(self, method: str) -> None:
        url = urlsplit(self.path)
        path = url.path
        query = parse_qs(url.query)
        if method == "GET" and path == "/":
            self._index()
        elif method == "GET" and path == "/favicon.ico":
            self._send(204, b"", "image/x-icon")  # none: no 404 in a browser's console
        elif method == "GET" and path == "/api/jobs":
            self._json(200, [_summary(source) for source in self.server.sources().values()])
        elif method == "GET" and path == "/api/compare":
            self._json(200, compare_data(self.server.sources(), requested(query)))
        elif method == "GET" and path.startswith("/static/"):
            self._static(path[len("/static/"):])
        elif (match := _JOB_ROUTE.fullmatch(path)) is not None:
            source = self.server.sources().get(match.group(1))
            if source is None:
                raise ActionError(404, f"no job {match.group(1)!r} here")
            self._job(method, source, match.group(2) or "", query)
        elif _SERVICE_ROUTE.fullmatch(path) is not None:
            # The data service at the root, as the paper has it: a server of one job only.
            source = self.server.sources().get(self.server.single) \
                if self.server.single else None
            if source is None:
                raise ActionError(404, f"this server shows several jobs: use "
                                       f"/jobs/<id>{path} (GET /api/jobs lists them)")
            self._job(method, source, path, query)
        else:
            raise ActionError(404, f"no such page: {path}")

    def _index(self) -> None:
        if self.server.single:
            self._send(302, b"", "text/plain", {"Location": f"/jobs/{self.server.single}/"})
        else:
            self._send(200, static_bytes("index.html"), _STATIC_TYPES[".html"])

    def _static(self, name: str) -> None:
        try:
            body = static_bytes(name)
        except (FileNotFoundError, OSError):
            raise ActionError(404, f"no such file: /static/{name}") from None
        kind = _STATIC_TYPES.get(Path(name).suffix, "application/octet-stream")
        self._send(200, body, kind)

    def _job(self, method: str, source: JobSource, rest: str,
             query: Mapping[str, list[str]]) -> None:
        if rest == "" and method == "GET":
            self._send(301, b"", "text/plain", {"Location": f"/jobs/{source.job_id}/"})
        elif rest == "/" and method == "GET":
            self._send(200, static_bytes("job.html"), _STATIC_TYPES[".html"])
        elif rest == "/api/page" and method == "GET":
            ending = self.server.ending  # type: ignore[attr-defined]
            self.server.last_page_poll = time.monotonic()  # type: ignore[attr-defined]
            try:
                table = TableQuery.from_query(query)
            except TableQueryError as err:
                raise ActionError(400, str(err)) from None
            have = parse_have((query.get("have") or [""])[0])
            self._json(200, page_data(source.record(), wait=LIVE_WAIT, query=table, have=have))
            if ending:
                self.server.final_served.set()  # type: ignore[attr-defined]
        elif rest.startswith(("/api/registry", "/api/data")):
            self._service(method, source, rest, query)
        elif rest == "/api/kill" and method == "POST":
            self._authorize(source)
            self._json(200, {"ok": True, "message": source.kill_job()})
        elif (match := _TRIAL_ROUTE.fullmatch(rest)) is not None:
            number, action = int(match.group(1)), match.group(2)
            if action == "log" and method == "GET":
                self._log(source, number, query)
            elif action == "kill" and method == "POST":
                self._authorize(source)
                self._json(200, {"ok": True, "message": source.kill_trial(number)})
            else:
                raise ActionError(405, f"{method} is not allowed on {self.path}")
        elif rest in ("/", "/api/page", "/api/kill"):
            raise ActionError(405, f"{method} is not allowed on {urlsplit(self.path).path}")
        else:
            raise ActionError(404, f"no such page: {urlsplit(self.path).path}")

    def _service(self, method: str, source: JobSource, rest: str,
                 query: Mapping[str, list[str]]) -> None:
        """The telemetry data service (``dataservice.py``)."""
        entry = _ENTRY_ROUTE.fullmatch(rest)
        if rest == "/api/data":
            allowed = ("GET",)
        elif rest == "/api/data/names":
            allowed = ("GET",)
        elif rest == "/api/registry":
            allowed = ("GET", "POST")
        elif entry is not None:
            allowed = ("GET", "PUT", "DELETE")
        else:
            raise ActionError(404, f"no such page: {urlsplit(self.path).path} (the data "
                                   "service has api/registry, api/registry/<name>, api/data, "
                                   "api/data/names)")
        if method not in allowed:
            raise ActionError(405, f"{method} is not allowed on {urlsplit(self.path).path} "
                                   f"({', '.join(allowed)} is)")
        if rest == "/api/data":
            self._json(200, dataservice.samples(source, query))
        elif rest == "/api/data/names":
            self._json(200, dataservice.names(source))
        elif entry is None and method == "GET":
            self._json(200, dataservice.registry_list(source))
        elif entry is None:
            body = self._authorize(source)
            self._json(201, dataservice.registry_add(source, body))
        elif method == "GET":
            self._json(200, dataservice.registry_entry(source, entry.group(1)))
        elif method == "PUT":
            body = self._authorize(source)
            self._json(200, dataservice.registry_update(source, entry.group(1), body))
        else:
            self._authorize(source)
            self._json(200, dataservice.registry_delete(source, entry.group(1)))

    def _authorize(self, source: JobSource) -> dict[str, Any] | None:
        """Check the job token and the body (empty or a JSON object); the body's object, or
        None when it was empty.

        Raises:
            ActionError: 401 without a token, 403 with a wrong one, 400/413 for the body.
        """
        header = self.headers.get("Authorization", "")
        given = header[len("Bearer "):].strip() if header.startswith("Bearer ") else ""
        body = self._body()
        if not given:
            raise ActionError(401, "this action needs the job token (Authorization: Bearer "
                                   "<token>; it is in the job folder's job.token)")
        expected = source.token()
        if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            raise ActionError(403, "wrong job token")
        if body:
            try:
                parsed = json.loads(body)
            except ValueError:
                raise ActionError(400, "the request body is not valid JSON") from None
            if not isinstance(parsed, dict):
                raise ActionError(400, "the request body must be a JSON object")
            return parsed
        return None

    def _body(self) -> bytes:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise ActionError(400, "bad Content-Length") from None
        if length > MAX_BODY:
            self.close_connection = True
            raise ActionError(413, f"the request body is larger than {MAX_BODY} bytes")
        return self.rfile.read(length) if length > 0 else b""

    def _log(self, source: JobSource, number: int, query: Mapping[str, list[str]]) -> None:
        stream = (query.get("stream") or ["stdout"])[0]
        try:
            offset = int((query.get("offset") or ["-1"])[0])
        except ValueError:
            raise ActionError(400, "offset must be an integer") from None
        path = source.log_path(number, stream)
        self._json(200, read_tail(path, offset))

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        logger.debug("job page: " + format, *args)


def read_tail(path: Path, offset: int) -> dict[str, Any]:
    """The bytes of ``path`` from ``offset`` (< 0: its last ``TAIL_BYTES``), at most
    ``MAX_CHUNK``; the next offset to ask for."""
    try:
        size = path.stat().st_size
    except OSError:
        return {"data": "", "offset": 0, "size": 0, "exists": False}
    start = max(0, size - TAIL_BYTES) if offset < 0 else min(offset, size)
    with path.open("rb") as handle:
        handle.seek(start)
        data = handle.read(min(MAX_CHUNK, size - start))
    return {"data": data.decode("utf-8", "replace"), "offset": start + len(data), "size": size,
            "exists": True, "truncated": start > 0 and offset < 0}


def _summary(source: JobSource) -> dict[str, Any]:
    try:
        return job_view(source.record())
    except Exception as err:  # noqa: BLE001 - one unreadable record must not hide the others
        return {"job_id": source.job_id, "error": f"{type(err).__name__}: {err}"}


PAGE_RECENT_SECONDS = 10.0
"""A page that asked for its data this recently is open (it asks every 1.5 s while its job
runs)."""


class _PageServer(ThreadingHTTPServer):
    daemon_threads = True
    sources: Sources
    single: str
    last_page_poll = float("-inf")
    """When a page last asked for its data (``time.monotonic``)."""
    ending = False
    """Set by :meth:`JobPageServer.stop`: the record is final."""
    final_served: threading.Event


class JobPageServer:
    """Serves job pages at ``http://<advertise_host>:<port>/``.

    Args:
        sources: returns the jobs to serve by id (called on each request).
        bind_host: the interface to listen on (as the framework's file server).
        advertise_host: the host name in the URLs it gives out.
        port: the port (0: any free one; a taken port falls back to any).
        single: the one job this server is for (``/`` leads to it), or "" (an index).
    """

    def __init__(self, sources: Sources, bind_host: str, advertise_host: str, *,
                 port: int = 0, single: str = "") -> None:
        try:
            self._server = _PageServer((bind_host, port), _Handler)
        except OSError:
            if not port:
                raise
            self._server = _PageServer((bind_host, 0), _Handler)
        self._server.sources = sources
        self._server.single = single
        self._server.final_served = threading.Event()
        self._advertise = advertise_host
        self._thread = serving_thread(self._server, "disauto-jobpage")

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The root URL (``http://host:port/``)."""
        host = f"[{self._advertise}]" if ":" in self._advertise else self._advertise
        return f"http://{host}:{self.port}/"

    def job_url(self, job_id: str) -> str:
        return f"{self.url}jobs/{job_id}/"

    def start(self) -> None:
        self._thread.start()

    def serve_forever(self) -> None:
        """Serve in this thread until :meth:`stop` (``da-job ui``)."""
        self._server.serve_forever()

    def stop(self, linger: float = 0.0) -> None:
        """Stop serving. With ``linger``, an open page (one that asked for its data in the last
        :data:`PAGE_RECENT_SECONDS`) gets up to that many seconds to fetch the final record
        first, so that it shows how its job ended instead of the last state it polled."""
        recent = time.monotonic() - self._server.last_page_poll < PAGE_RECENT_SECONDS
        if linger > 0 and recent and self._thread.is_alive():
            self._server.ending = True
            self._server.final_served.wait(linger)
        if self._thread.is_alive():  # shutdown() waits for a serve_forever that never ran
            self._server.shutdown()
        self._server.server_close()
