"""Serves the job's files and inputs over HTTP so Mesos' fetcher can pull them (CommandInfo.uris).

Every URL carries a random prefix, so only tasks told the URL can fetch. A folder given as an
``--input`` is packed once into a ``.tar.gz`` (under the job folder) whose top folder is the
input's NAME; the fetcher extracts it, so the folder appears as NAME in the sandbox.
"""

from __future__ import annotations

from collections.abc import Sequence
from http.server import SimpleHTTPRequestHandler
from http.server import ThreadingHTTPServer
import logging
import os
from pathlib import Path
import secrets
import shutil
import stat
import tarfile
from typing import Any
from urllib.parse import quote
from urllib.parse import unquote

from disauto.common.serving import serving_thread
from disauto.framework._spec import InputSpec


logger = logging.getLogger(__name__)

REMOTE_SCHEMES = ("http://", "https://", "hdfs://", "s3://", "s3a://", "s3n://", "ftp://")


class _Handler(SimpleHTTPRequestHandler):
    server: _FileServer

    def translate_path(self, path: str) -> str:
        path = unquote(path.split("?", 1)[0])
        prefix = f"/{self.server.secret}/"
        if not path.startswith(prefix):
            return ""
        name = path[len(prefix):]
        target = self.server.published.get(name)
        return str(target) if target else ""

    def list_directory(self, path: str | os.PathLike[str]) -> None:  # type: ignore[override]
        self.send_error(404, "not found")
        return None

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        logger.debug("fileserver: " + format, *args)


class _FileServer(ThreadingHTTPServer):
    daemon_threads = True
    secret: str
    published: dict[str, Path]


class FileServer:
    """Publishes files at ``http://<advertise_host>:<port>/<secret>/<name>``.

    Args:
        work_dir: where folder inputs are packed.
        advertise_host: the host name tasks use to reach this machine.
        bind_host: the interface to listen on (``127.0.0.1`` in local mode, the advertised
            address on a cluster, ``0.0.0.0`` only with ``da-submit --bind-all``).
    """

    def __init__(self, work_dir: Path, advertise_host: str, bind_host: str,
                 *, port: int = 0, secret: str = "") -> None:
        self._work_dir = work_dir
        try:
            self._server = _FileServer((bind_host, port), _Handler)
        except OSError:  # the port asked for (a resumed job's) is taken: any other
            self._server = _FileServer((bind_host, 0), _Handler)
        self._server.secret = secret or secrets.token_urlsafe(16)
        self._server.published = {}
        self._advertise = advertise_host
        self._thread = serving_thread(self._server, "disauto-fileserver")

    @property
    def secret(self) -> str:
        return str(self._server.secret)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def publish(self, name: str, path: Path) -> str:
        self._server.published[name] = path
        return f"http://{self._advertise}:{self.port}/{self._server.secret}/{quote(name)}"

    def uris(self, files: Sequence[str], inputs: Sequence[InputSpec]) -> list[dict[str, Any]]:
        """The CommandInfo.uris that put ``files`` and ``inputs`` into each sandbox."""
        uris: list[dict[str, Any]] = []
        for index, file in enumerate(files):
            path = Path(file).resolve()
            url = self.publish(f"files/{index}/{path.name}", path)
            executable = bool(path.stat().st_mode & stat.S_IXUSR)
            uris.append({"value": url, "extract": False, "executable": executable,
                         "output_file": path.name})
        for index, spec in enumerate(inputs):
            if spec.source.startswith(REMOTE_SCHEMES):
                uris.append({"value": spec.source, "extract": False, "output_file": spec.name})
                continue
            path = Path(spec.source).resolve()
            if path.is_dir():
                archive = self._pack(path, spec.name)
                url = self.publish(f"inputs/{index}/{archive.name}", archive)
                uris.append({"value": url, "extract": True})
            else:
                url = self.publish(f"inputs/{index}/{path.name}", path)
                uris.append({"value": url, "extract": False, "output_file": spec.name})
        return uris

    def _pack(self, folder: Path, name: str) -> Path:
        target = self._work_dir / "inputs" / f"{name}.tar.gz"
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        with tarfile.open(tmp, "w:gz") as tar:
            tar.add(folder, arcname=name)
        shutil.move(tmp, target)
        return target
