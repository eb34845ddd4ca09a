"""Task sandboxes: the Mesos directory layout, and safe browsing/reading for ``/files``.

A sandbox is the working directory of one executor run, laid out as Mesos lays it out::

    <work_dir>/slaves/<agent_id>/frameworks/<framework_id>/executors/<executor_id>/runs/<container_id>/

with a ``runs/latest`` symlink to the newest run. For a command task the executor id is the task
id. The task's ``stdout`` and ``stderr`` files live at the top of its sandbox.

:func:`browse` and :func:`read` implement the semantics of the Mesos ``/files/browse`` and
``/files/read`` endpoints (apache/mesos ``src/files/files.cpp``) over a set of *roots*: directories
that may be served, each under a virtual path (Mesos "attaches" a sandbox both under its real path
and under ``/slaves/.../runs/latest``). A requested path is resolved by the longest matching
virtual prefix; the real path it names must stay inside that root after every symlink is resolved,
so a task cannot make the master read files outside its sandbox through a symlink.

Errors are :class:`SandboxError` (HTTP 400) and its subclass :class:`SandboxNotFound` (HTTP 404);
each carries ``http_status`` so the HTTP layer maps them without a table.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
import contextlib
import grp
import os
from pathlib import Path
import pwd
import stat
from typing import Any


StrPath = str | os.PathLike[str]
Roots = Mapping[str, StrPath] | Iterable[StrPath]

#: Mesos caps one ``/files/read`` answer at 16 pages.
READ_CAP_BYTES = os.sysconf("SC_PAGE_SIZE") * 16 if hasattr(os, "sysconf") else 65536


class SandboxError(Exception):
    """A ``/files`` request that cannot be served; ``http_status`` says how to answer it."""

    http_status = 400


class SandboxNotFound(SandboxError):
    """The path is not under any served root, or does not exist."""

    http_status = 404


# -- layout -----------------------------------------------------------------------------------


def check_id(value: str, *, what: str) -> str:
    """Return ``value`` if it can be used as one path component of a sandbox path.

    Raises:
        ValueError: for an empty id, ``.``/``..``, or an id holding ``/`` or a NUL byte.
    """
    if not value or value in (".", "..") or "/" in value or "\0" in value:
        raise ValueError(f"invalid {what} {value!r}: must be non-empty, not '.' or '..', no '/'")
    return value


def executor_dir(work_dir: StrPath, agent_id: str, framework_id: str, executor_id: str) -> Path:
    """``<work_dir>/slaves/<agent>/frameworks/<fw>/executors/<executor>``."""
    return (
        Path(work_dir)
        / "slaves"
        / check_id(agent_id, what="agent id")
        / "frameworks"
        / check_id(framework_id, what="framework id")
        / "executors"
        / check_id(executor_id, what="executor id")
    )


def sandbox_dir(
    work_dir: StrPath, agent_id: str, framework_id: str, executor_id: str, container_id: str
) -> Path:
    """The sandbox of one run: ``.../executors/<executor>/runs/<container>``."""
    return (
        executor_dir(work_dir, agent_id, framework_id, executor_id)
        / "runs"
        / check_id(container_id, what="container id")
    )


def latest_virtual_path(agent_id: str, framework_id: str, executor_id: str) -> str:
    """The virtual path Mesos attaches the newest run under (``/slaves/.../runs/latest``)."""
    return f"/slaves/{agent_id}/frameworks/{framework_id}/executors/{executor_id}/runs/latest"


class SandboxCreationError(Exception):
    """A run's sandbox could not be made (Mesos ``paths::createExecutorDirectory``); the message
    is Mesos' own: ``Failed to create executor directory '<dir>': <why>``."""


def create_sandbox(
    work_dir: StrPath, agent_id: str, framework_id: str, executor_id: str, container_id: str,
    *, user: str | None = None,
) -> Path:
    """Create a run's sandbox, point ``runs/latest`` at it, and return it.

    As Mesos' ``createSandboxDirectory`` (``src/slave/paths.cpp``): the directory is mode
    0750 (it holds the task's private data) and, given ``user`` (the agent switches users),
    owned by that user and its primary group; when that fails the directory is removed again.

    Raises:
        ValueError: when an id cannot be a path component.
        SandboxCreationError: when the directory cannot be created or given to ``user``.
    """
    path = sandbox_dir(work_dir, agent_id, framework_id, executor_id, container_id)
    try:
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o750)
    except OSError as exc:
        raise SandboxCreationError(f"Failed to create executor directory '{path}': Failed to "
                                   f"create directory: {exc.strerror or exc}") from None
    if user is not None:
        why = _chown(path, user)
        if why:
            with contextlib.suppress(OSError):
                path.rmdir()
            raise SandboxCreationError(f"Failed to create executor directory '{path}': Failed "
                                       f"to chown directory to '{user}': {why}")
    latest = path.parent / "latest"
    tmp = path.parent / f".latest.{container_id}"
    try:
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(container_id)
        os.replace(tmp, latest)
    except OSError:
        # The symlink is a convenience for people browsing the work dir; never fail a task on it.
        tmp.unlink(missing_ok=True)
    return path


def _chown(path: Path, user: str) -> str:
    """Give ``path`` and what is below it (not following links) to ``user`` and its primary
    group, as stout's ``os::chown(user, path)``: "" once done, else why not, in stout's words
    (``No such user 'x'``, or the system's error, ``Operation not permitted`` when the agent
    is not root)."""
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return f"No such user '{user}'"
    try:
        os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                os.chown(os.path.join(root, name), entry.pw_uid, entry.pw_gid,
                         follow_symlinks=False)
    except OSError as exc:
        return exc.strerror or str(exc)
    return ""


# -- resolving request paths ------------------------------------------------------------------


def _virtual(name: StrPath) -> str:
    """A served name as a virtual prefix: absolute, no trailing or doubled '/'."""
    return "/" + "/".join(p for p in str(name).split("/") if p)


def _named_roots(root_dirs: Roots) -> Iterable[tuple[str, StrPath]]:
    """``(virtual prefix, root as given)`` for each served root, without touching the disk for
    a mapping (an agent serves one root per sandbox it ever made: resolving every one of them
    on every request made ``/files/read`` slow in proportion to the tasks ever run)."""
    if isinstance(root_dirs, Mapping):
        for name, real in root_dirs.items():
            yield _virtual(name), real
        return
    for root in root_dirs:
        # Serve a directory under the path it was given and under its canonical path, so a
        # work dir reached through a symlink (macOS /tmp) is found either way.
        yield _virtual(os.path.abspath(root)), root
        yield _virtual(os.path.realpath(root)), root


def _inside(path: str, root: str) -> bool:
    return path == root or os.path.commonpath([path, root]) == root


def resolve(root_dirs: Roots, path: str) -> Path:
    """Resolve a request path to an existing real path inside one of ``root_dirs``.

    Args:
        root_dirs: served directories, either a mapping of virtual path to real directory or an
            iterable of real directories (each served under its own path).
        path: the requested path (``/files/*?path=``).

    Returns:
        The canonical real path.

    Raises:
        SandboxError: for an empty path or one that resolves outside its root.
        SandboxNotFound: when no root matches or the path does not exist.
    """
    return _resolve(root_dirs, path)[0]


def _resolve(root_dirs: Roots, path: str) -> tuple[Path, str]:
    """:func:`resolve`, with the canonical root the path was found in (the longest served
    prefix of the request: only that root is resolved on disk)."""
    if not path or "\0" in path:
        raise SandboxError("Expecting 'path=value' in query")
    parts = [p for p in path.split("/") if p and p != "."]
    virtual = "/" + "/".join(parts)
    best: tuple[str, StrPath] | None = None
    for prefix, root in _named_roots(root_dirs):
        if virtual == prefix or virtual.startswith(prefix.rstrip("/") + "/"):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, root)
    if best is None:
        raise SandboxNotFound(f"'{path}' is not in any sandbox")
    prefix, root = best
    real_root = os.path.realpath(root)
    suffix = virtual[len(prefix) :].lstrip("/")
    if not os.path.isdir(real_root):
        # An attached file (or a root that is gone): only the exact path names it.
        if suffix or not os.path.exists(real_root):
            raise SandboxNotFound(f"'{path}' does not exist")
        return Path(real_root), real_root
    real = os.path.realpath(os.path.join(real_root, suffix))
    if not _inside(real, real_root):
        raise SandboxError(f"'{path}' is inaccessible")
    if not os.path.exists(real):
        raise SandboxNotFound(f"'{path}' does not exist")
    return Path(real), real_root


# -- /files/browse ----------------------------------------------------------------------------


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def file_info(path: str, st: os.stat_result) -> dict[str, Any]:
    """One entry of a ``/files/browse`` answer (Mesos ``jsonFileInfo``)."""
    return {
        "path": path,
        "nlink": st.st_nlink,
        "size": st.st_size,
        "mtime": int(st.st_mtime),
        "mode": stat.filemode(st.st_mode),
        "uid": _user_name(st.st_uid),
        "gid": _group_name(st.st_gid),
    }


def browse(root_dirs: Roots, path: str) -> list[dict[str, Any]]:
    """List a directory like Mesos ``/files/browse``: entries sorted by path.

    Each entry is ``{"path", "nlink", "size", "mtime", "mode", "uid", "gid"}``, where ``path`` is
    the requested path joined with the entry name. Browsing a file answers that one file. An
    entry that is a symlink leading outside the root is described by the link itself, never by
    its target.

    Raises:
        SandboxError: see :func:`resolve`.
        SandboxNotFound: see :func:`resolve`.
    """
    real, root = _resolve(root_dirs, path)
    shown = path.rstrip("/") or "/"
    if not real.is_dir():
        return [file_info(shown, real.stat())]
    listing: list[dict[str, Any]] = []
    try:
        names = sorted(os.listdir(real))
    except OSError as exc:
        raise SandboxError(f"Failed to list '{path}': {exc.strerror or exc}") from None
    for name in names:
        full = os.path.join(real, name)
        try:
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode) and _inside(os.path.realpath(full), root):
                try:
                    st = os.stat(full)
                except OSError:
                    pass  # A dangling link inside the root: describe the link.
        except OSError:
            continue  # Vanished between listdir and stat, as Mesos skips it.
        listing.append(file_info(shown.rstrip("/") + "/" + name, st))
    return listing


# -- /files/read ------------------------------------------------------------------------------


def open_file(root_dirs: Roots, path: str) -> tuple[int, Path]:
    """Open a served regular file read-only and return ``(fd, real path)``; caller closes fd.

    After opening, the descriptor itself is checked to still be inside the root (through
    ``/proc/self/fd`` where it exists), so a symlink swapped in after :func:`resolve` cannot
    redirect the read.

    Raises:
        SandboxError: for a directory, an escape, or a file that cannot be opened.
        SandboxNotFound: when the path does not exist.
    """
    real, root = _resolve(root_dirs, path)
    if real.is_dir():
        raise SandboxError("Cannot read a directory")
    try:
        fd = os.open(real, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise SandboxNotFound(f"'{path}' does not exist") from None
    except OSError as exc:
        raise SandboxError(f"Failed to open file at '{path}': {exc.strerror or exc}") from None
    proc_link = f"/proc/self/fd/{fd}"
    if os.path.islink(proc_link):
        opened = os.readlink(proc_link)
        if not _inside(opened, root):
            os.close(fd)
            raise SandboxError(f"'{path}' is inaccessible")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SandboxError(f"'{path}' is not a regular file")
    return fd, real


def read(
    root_dirs: Roots, path: str, offset: int = -1, length: int | None = None
) -> dict[str, Any]:
    """Read part of a file like Mesos ``/files/read``.

    Args:
        root_dirs: served directories (see :func:`resolve`).
        path: the requested path.
        offset: byte offset; ``-1`` (the default, as in Mesos) answers the current size with no
            data, which is how the web UI's pailer finds the end of a log.
        length: bytes to read; ``None`` or ``-1`` means to the end. Answers are capped at 16
            pages (64 KiB), as in Mesos.

    Returns:
        ``{"data": str, "offset": int}``; at or past the end ``offset`` is the file size and
        ``data`` is empty. Bytes that are not UTF-8 are replaced with U+FFFD.

    Raises:
        SandboxError: for a negative offset or length (other than -1), a directory, or an
            escape from the root.
        SandboxNotFound: when the path does not exist.
    """
    if offset < -1:
        raise SandboxError("Negative offset provided")
    if length is not None and length < -1:
        raise SandboxError("Negative length provided")
    fd, _ = open_file(root_dirs, path)
    try:
        size = os.fstat(fd).st_size
        if offset == -1:
            offset = size
        if length is None or length == -1:
            length = size - offset
        length = min(length, READ_CAP_BYTES)
        if offset >= size:
            return {"data": "", "offset": size}
        if length <= 0:
            return {"data": "", "offset": offset}
        data = os.pread(fd, length, offset)
    finally:
        os.close(fd)
    return {"data": data.decode("utf-8", errors="replace"), "offset": offset}
