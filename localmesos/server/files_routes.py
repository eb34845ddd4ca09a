"""``/files``: the agents' sandboxes, browsed, read and downloaded as a Mesos master serves them.

``GET /files/browse`` (also ``.json``), ``/files/read`` (also ``.json``) and
``/files/download`` take Mesos' query parameters (``path``, ``offset``, ``length``, ``jsonp``)
over the virtual paths of every agent's sandboxes (``Master.file_roots``;
:mod:`localmesos.agent.sandbox` resolves and reads them). A download is an attachment typed by
the file's extension.
"""

from __future__ import annotations

from collections.abc import Mapping
import mimetypes
import os
from typing import Protocol

from disauto.localmesos.agent import sandbox
from disauto.localmesos.server.http_auth import AGENT_READONLY_REALM
from disauto.localmesos.server.http_auth import Refused
from disauto.localmesos.server.http_auth import principal_of
from disauto.localmesos.server.messages import Request
from disauto.localmesos.server.messages import Response
from disauto.localmesos.server.messages import int_param
from disauto.localmesos.server.messages import json_response
from disauto.localmesos.server.messages import text


_FILES_PATHS = frozenset({"/files/browse", "/files/browse.json", "/files/read",
                          "/files/read.json", "/files/download"})


class FileRoots(Protocol):
    """Whose sandboxes ``/files`` serves (:meth:`localmesos.master.master.Master.file_roots`)."""

    def file_roots(self) -> dict[str, str]: ...


class FilesRoutes:
    """Answers ``/files`` requests.

    Args:
        master: whose agents' sandboxes are served (the master, or the host of agents of
            another process than their master's: anything with ``file_roots``).
        readonly: principal → secret; when given, every ``/files`` read needs HTTP Basic
            authentication (the agents' ``--authenticate_http_readonly``).
    """

    def __init__(self, master: FileRoots, readonly: Mapping[str, str] | None = None) -> None:
        self.master = master
        self._readonly = readonly

    def read(self, request: Request, path: str) -> Response | None:
        """The answer at ``path`` (``GET``/``HEAD``), or None when it is not a ``/files`` path."""
        if path in _FILES_PATHS:
            try:
                principal_of(request, self._readonly, AGENT_READONLY_REALM)
            except Refused as refused:
                return refused.response
        if path in ("/files/browse", "/files/browse.json"):
            return self._files(request, browse=True)
        if path in ("/files/read", "/files/read.json"):
            return self._files(request, browse=False)
        if path == "/files/download":
            return self._download(request)
        return None

    def _files(self, request: Request, *, browse: bool) -> Response:
        jsonp = request.param("jsonp")
        path = request.param("path")
        if not path:
            return text(400, "Expecting 'path=value' in query.")
        roots = self.master.file_roots()
        try:
            if browse:
                return json_response(sandbox.browse(roots, path), jsonp)
            try:
                offset = int_param(request, "offset")
                length = int_param(request, "length")
            except ValueError as exc:
                return text(400, str(exc))
            return json_response(
                sandbox.read(roots, path, -1 if offset is None else offset, length), jsonp
            )
        except sandbox.SandboxError as exc:
            return text(exc.http_status, str(exc))

    def _download(self, request: Request) -> Response:
        """Mesos ``/files/download``: the file as an attachment, typed by its extension."""
        path = request.param("path")
        if not path:
            return text(400, "Expecting 'path=value' in query.")
        try:
            real = sandbox.resolve(self.master.file_roots(), path)
            if real.is_dir():
                return text(400, "Cannot download a directory.")
            fd, real = sandbox.open_file(self.master.file_roots(), path)
        except sandbox.SandboxNotFound:
            return text(404)
        except sandbox.SandboxError as exc:
            return text(exc.http_status, str(exc))
        content_type = "application/octet-stream"
        if real.suffix:
            content_type = mimetypes.types_map.get(real.suffix.lower(), content_type)
        headers = {
            "Content-Type": content_type,
            "Content-Disposition": f"attachment; filename={real.name}",
        }
        return Response(200, headers=headers, file=os.fdopen(fd, "rb"))
