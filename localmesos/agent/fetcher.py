"""The Mesos fetcher for the embedded agent: ``CommandInfo.uris`` into a task's sandbox.

Supported ``URI.value`` forms: an absolute local path, a ``file://`` URL, and ``http://`` or
``https://`` URLs (streamed to disk through :mod:`urllib`, any size, with a socket timeout).
As in Mesos (``src/launcher/fetcher.cpp``):

* the file is saved under its base name, or under ``output_file`` (a path relative to the
  sandbox) when that is set;
* ``executable: true`` makes it executable (``chmod +x``) and skips extraction;
* otherwise ``extract`` (default true) unpacks ``.tar``, ``.tar.gz``/``.tgz``,
  ``.tar.bz2``/``.tbz2``, ``.tar.xz``/``.txz`` and ``.zip`` archives into the sandbox, and
  decompresses a single ``.gz`` file next to itself; the archive itself is kept.

Extraction is safe: tar members go through :mod:`tarfile`'s ``data`` filter (no absolute paths,
no ``..``, no links leaving the sandbox, no devices), zip members must resolve inside the sandbox.
``cache`` is accepted and ignored (there is no fetcher cache).

Every failure is a :class:`FetchError` whose message is one line naming the URI and why.
A fetch can be cancelled between chunks through a :class:`threading.Event`
(:class:`FetchCancelled`).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
import gzip
import http.client
import logging
import os
from pathlib import Path
import shutil
import stat
import tarfile
import threading
from typing import Any
from typing import BinaryIO
import urllib.error
import urllib.parse
import urllib.request
import zipfile


logger = logging.getLogger(__name__)

CHUNK_BYTES = 1024 * 1024
DEFAULT_TIMEOUT = 60.0

_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")


class FetchError(Exception):
    """A URI could not be fetched; the message is one line naming the URI."""


class FetchCancelled(FetchError):
    """The fetch was cancelled (the task was killed while fetching)."""


def fetch_uris(
    uris: Iterable[Mapping[str, Any]],
    sandbox: Path,
    *,
    cancel: threading.Event | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Path]:
    """Fetch every URI of a ``CommandInfo`` into ``sandbox``, in order.

    Args:
        uris: ``CommandInfo.uris`` (each ``{"value", "executable"?, "extract"?, "cache"?,
            "output_file"?}``).
        sandbox: the existing sandbox directory.
        cancel: when set, the fetch stops at the next chunk with :class:`FetchCancelled`.
        timeout: socket timeout in seconds for HTTP(S).

    Returns:
        The fetched files (before extraction), in order.

    Raises:
        FetchError: for the first URI that fails.
        FetchCancelled: when ``cancel`` is set.
    """
    return [fetch_uri(uri, sandbox, cancel=cancel, timeout=timeout) for uri in uris]


def fetch_uri(
    uri: Mapping[str, Any],
    sandbox: Path,
    *,
    cancel: threading.Event | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Path:
    """Fetch one ``CommandInfo.URI`` into ``sandbox`` (see :func:`fetch_uris`).

    Returns:
        The path of the fetched file inside the sandbox.

    Raises:
        FetchError: naming the URI and why it failed.
        FetchCancelled: when ``cancel`` is set.
    """
    value = uri.get("value")
    if not isinstance(value, str) or not value:
        raise FetchError(f"Failed to fetch URI {dict(uri)!r}: it has no 'value'")
    try:
        return _fetch(uri, value, sandbox.resolve(), cancel, timeout)
    except FetchError:
        raise
    except OSError as exc:
        raise FetchError(f"Failed to fetch '{value}': {_os_reason(exc)}") from None
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, gzip.BadGzipFile) as exc:
        raise FetchError(f"Failed to extract '{value}': {exc}") from None


def _fetch(
    uri: Mapping[str, Any],
    value: str,
    sandbox: Path,
    cancel: threading.Event | None,
    timeout: float,
) -> Path:
    parsed = urllib.parse.urlsplit(value)
    scheme = parsed.scheme.lower()
    if scheme in ("http", "https"):
        name = urllib.parse.unquote(parsed.path.rsplit("/", 1)[-1])
    elif scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise FetchError(f"Failed to fetch '{value}': only local file:// URLs are supported")
        source = urllib.parse.unquote(parsed.path)
        name = os.path.basename(source)
    elif scheme == "" and value.startswith("/"):
        source = value
        name = os.path.basename(value)
    elif scheme == "":
        raise FetchError(
            f"Failed to fetch '{value}': a relative path needs a frameworks home, which the "
            "embedded agent does not have; use an absolute path or a URL"
        )
    else:
        raise FetchError(
            f"Failed to fetch '{value}': unsupported scheme '{scheme}': "
            "expected an absolute path, file://, http:// or https://"
        )

    output_file = uri.get("output_file")
    if output_file:
        destination = _inside_sandbox(sandbox, str(output_file), value, "output_file")
    else:
        if not name or name in (".", ".."):
            raise FetchError(
                f"Failed to fetch '{value}': cannot tell a file name from it; set 'output_file'"
            )
        destination = sandbox / name
    destination.parent.mkdir(parents=True, exist_ok=True)

    partial = destination.with_name(f".{destination.name}.fetching")
    try:
        if scheme in ("http", "https"):
            _download(value, partial, cancel, timeout)
        else:
            _copy_local(source, value, partial, cancel)
        os.replace(partial, destination)
    finally:
        partial.unlink(missing_ok=True)
    logger.debug("Fetched '%s' to %s", value, destination)

    if uri.get("executable", False):
        mode = destination.stat().st_mode
        destination.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    elif uri.get("extract", True):
        _extract(destination, sandbox, value)
    return destination


def _inside_sandbox(sandbox: Path, relative: str, value: str, what: str) -> Path:
    if os.path.isabs(relative):
        raise FetchError(f"Failed to fetch '{value}': {what} '{relative}' must be relative")
    target = Path(os.path.normpath(sandbox / relative))
    if target == sandbox or sandbox not in target.parents:
        raise FetchError(f"Failed to fetch '{value}': {what} '{relative}' leaves the sandbox")
    return target


def _check_cancel(cancel: threading.Event | None, value: str) -> None:
    if cancel is not None and cancel.is_set():
        raise FetchCancelled(f"Fetching '{value}' was cancelled")


def _stream(src: BinaryIO, dst: Path, cancel: threading.Event | None, value: str) -> None:
    # read1 returns what one underlying read gives, so a slow download still notices `cancel`.
    read = getattr(src, "read1", src.read)
    with open(dst, "wb") as out:
        while True:
            _check_cancel(cancel, value)
            chunk = read(CHUNK_BYTES)
            if not chunk:
                return
            out.write(chunk)


def _copy_local(source: str, value: str, dst: Path, cancel: threading.Event | None) -> None:
    if os.path.isdir(source):
        raise FetchError(f"Failed to fetch '{value}': '{source}' is a directory")
    with open(source, "rb") as src:
        _stream(src, dst, cancel, value)


def _download(url: str, dst: Path, cancel: threading.Event | None, timeout: float) -> None:
    _check_cancel(cancel, url)
    request = urllib.request.Request(url, headers={"User-Agent": "disauto-localmesos-fetcher"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            _stream(response, dst, cancel, url)
    except urllib.error.HTTPError as exc:
        raise FetchError(f"Failed to fetch '{url}': HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        why = _os_reason(reason) if isinstance(reason, OSError) else str(reason)
        raise FetchError(f"Failed to fetch '{url}': {why}") from None
    except TimeoutError:
        raise FetchError(f"Failed to fetch '{url}': timed out after {timeout:g} s") from None
    except http.client.HTTPException as exc:
        raise FetchError(f"Failed to fetch '{url}': {type(exc).__name__}: {exc}") from None


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    return exc.strerror or str(exc)


# -- extraction -------------------------------------------------------------------------------


def _extract(archive: Path, sandbox: Path, value: str) -> None:
    name = archive.name.lower()
    if name.endswith(_TAR_SUFFIXES):
        with tarfile.open(archive) as tar:
            try:
                tar.extractall(sandbox, filter="data")
            except tarfile.FilterError as exc:
                raise FetchError(f"Failed to extract '{value}': unsafe member: {exc}") from None
    elif name.endswith(".zip"):
        _extract_zip(archive, sandbox, value)
    elif name.endswith(".gz"):
        target = archive.with_name(archive.name[: -len(".gz")])
        with gzip.open(archive, "rb") as src, open(target, "wb") as out:
            shutil.copyfileobj(src, out, CHUNK_BYTES)
    else:
        return
    logger.debug("Extracted %s into %s", archive, sandbox)


def _extract_zip(archive: Path, sandbox: Path, value: str) -> None:
    with zipfile.ZipFile(archive) as zf:
        members = zf.infolist()
        for member in members:
            if os.path.isabs(member.filename) or "\0" in member.filename:
                raise FetchError(f"Failed to extract '{value}': unsafe member '{member.filename}'")
            target = Path(os.path.normpath(sandbox / member.filename))
            if target != sandbox and sandbox not in target.parents:
                raise FetchError(
                    f"Failed to extract '{value}': member '{member.filename}' leaves the sandbox"
                )
        for member in members:
            extracted = Path(zf.extract(member, sandbox))
            mode = (member.external_attr >> 16) & 0o777
            if mode and not member.is_dir():
                extracted.chmod(mode)
