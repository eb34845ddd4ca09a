"""A job as one file to keep or move: ``da-job export`` and ``da-job import``.

An export is a gzipped tar archive of an ended job: its folder (the record ``job.db``, copied
whole through SQLite's backup, results, ``report.html``, the log ``da-submit.log``, the task
logs ``logs/``) under ``<job id>/``, the files it shipped to its tasks (``--files``) under
``<job id>/shipped/``, and a manifest, ``disauto-export.json``: the format, the job, where and
when it was exported, every member's size and SHA-256, and what was left out and why.

Left out: what would let the copy act as the job (its token, the lock, its TLS key), what is
not the job's record but its cluster's or its data (the embedded cluster's sandboxes
``cluster/``, packed ``--input`` folders ``inputs/``, ``--input`` data, ``--output`` models).

An import extracts into a folder of its own beside the jobs (``jobs/.import-…``), refusing a
member that would land outside it (tarfile's ``data`` filter), checks every member against the
manifest and reads the record back as ``da-job`` does, and only then renames the job's folder
into place: a damaged archive, or a job id already there, leaves nothing behind and changes
nothing. The job is then an ended job like any other (``da-job status``, ``results``, ``ui``,
``load_job``), with ``imported.json`` saying where it came from.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
import gzip
import hashlib
import io
import json
import os
from pathlib import Path
import re
import shutil
import socket
import sqlite3
import tarfile
import tempfile
import time
from typing import IO
from typing import Any
import zlib

from disauto.common import paths
from disauto.submit.jobs import Job
from disauto.submit.jobs import JobLookupError
from disauto.submit.jobs import UnreadableRecordError
from disauto.submit.jobs import load


FORMAT = 1
"""The archive's format; raised when a member changes meaning (new members may appear)."""
MANIFEST = "disauto-export.json"
"""The manifest's name in the archive (at its top, beside the job's folder)."""

LEFT_OUT = {
    paths.TOKEN: "the job token (it would let the copy's page kill the job)",
    paths.LOCK: "the lock of the process that ran the job",
    paths.TLS: "the job's TLS key",
    paths.CLUSTER: "the embedded cluster's sandboxes (the task logs are in logs/)",
    "inputs": "packed --input folders (the job's data, not its record)",
}
"""What of a job's folder an export leaves out, and why."""
_RECORD_FILES = {paths.JOB_DB, f"{paths.JOB_DB}-wal", f"{paths.JOB_DB}-shm",
                 f"{paths.JOB_DB}-journal"}
"""The record's files: exported as one backup of it."""
_JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_CHUNK = 1 << 20


class ArchiveError(Exception):
    """An export or import that cannot be done (the message says why, in one line; nothing
    was written)."""


@dataclass
class Exported:
    """What an export wrote."""

    path: Path
    job_id: str
    files: int
    size: int
    shipped: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


@dataclass
class Imported:
    """What an import made."""

    job_id: str
    folder: Path
    exported_from: str
    exported_at: float


# -- export ------------------------------------------------------------------------------------


def export_job(job: Job, target: Path) -> Exported:
    """Write ``job`` (ended) to the archive ``target``, which must not exist yet.

    Raises:
        ArchiveError: the job has not ended, ``target`` exists or its folder does not, or the
            record cannot be copied.
        OSError: the archive could not be written (nothing is left of it).
    """
    if job.state != "ended":
        how = (f"it is running: wait for its end, or da-job kill {job.job_id}"
               if job.state == "running" else
               f"it is interrupted: da-job resume {job.job_id} carries it on, "
               f"da-job kill {job.job_id} closes its record")
        raise ArchiveError(f"job {job.job_id} has not ended ({how}); then export it")
    if os.path.lexists(target):
        raise ArchiveError(f"{target} exists; give another -o FILE (nothing is overwritten)")
    if not target.parent.is_dir():
        raise ArchiveError(f"no folder {target.parent} for {target.name}")
    exported = Exported(target, job.job_id, 0, 0)
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    with tempfile.TemporaryDirectory(prefix="disauto-export-") as scratch:
        record = Path(scratch) / paths.JOB_DB
        _backup(job.folder / paths.JOB_DB, record)
        members = [(f"{job.job_id}/{paths.JOB_DB}", record)]
        members += _folder_members(job, exported.left_out)
        if not (job.folder / paths.SHIPPED).is_dir():
            members += _shipped_members(job, exported)
        try:
            manifest = _write_archive(partial, members, job, exported.left_out)
            os.link(partial, target)  # never over a file that appeared meanwhile
        except FileExistsError:
            raise ArchiveError(f"{target} exists; give another -o FILE (nothing is "
                               "overwritten)") from None
        finally:
            partial.unlink(missing_ok=True)
    exported.files = len(manifest["files"])
    exported.size = target.stat().st_size
    return exported


def _backup(db: Path, copy: Path) -> None:
    """A consistent copy of the record ``db`` in one file (its write-ahead log folded in).

    Raises:
        ArchiveError: it cannot be read.
    """
    try:
        source = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            target = sqlite3.connect(str(copy))
            try:
                source.backup(target)
                target.execute("PRAGMA journal_mode=DELETE")
            finally:
                target.close()
        finally:
            source.close()
    except sqlite3.Error as err:
        raise ArchiveError(f"cannot copy the record {db}: {err}") from None


def _folder_members(job: Job, left_out: list[str]) -> list[tuple[str, Path]]:
    """The job folder's files to export, as ``(name in the archive, path)``; what is left out
    of it named in ``left_out``."""
    members = []
    for top, folders, files in os.walk(job.folder):
        here = Path(top)
        if here == job.folder:
            left_out += [f"{name}/: {LEFT_OUT[name]}" for name in sorted(folders)
                         if name in LEFT_OUT]
            folders[:] = [name for name in folders if name not in LEFT_OUT]
            files = [name for name in files if name not in _RECORD_FILES]
        folders.sort()
        for name in sorted(files):
            path = here / name
            relative = path.relative_to(job.folder)
            if relative.as_posix() in LEFT_OUT:
                left_out.append(f"{relative}: {LEFT_OUT[relative.as_posix()]}")
            elif path.is_symlink() or not path.is_file():
                left_out.append(f"{relative}: not a plain file")
            elif not name.endswith(".partial"):
                members.append((f"{job.job_id}/{relative.as_posix()}", path))
    return members


def _shipped_members(job: Job, exported: Exported) -> list[tuple[str, Path]]:
    """The files the job shipped (``--files``), as its tasks saw them: ``shipped/<name>``."""
    members, names = [], set()
    for given in job.config.files:
        path = Path(given)
        if not path.is_file():
            exported.left_out.append(f"{given}: a --files file no longer there")
            continue
        if path.name in names:
            exported.left_out.append(f"{given}: a second --files file named {path.name}")
            continue
        names.add(path.name)
        exported.shipped.append(given)
        members.append((f"{job.job_id}/{paths.SHIPPED}/{path.name}", path))
    return members


def _write_archive(archive: Path, members: list[tuple[str, Path]], job: Job,
                   left_out: list[str]) -> dict[str, Any]:
    """Write the members, then the manifest that lists them, to ``archive``; the manifest."""
    listed = []
    with tarfile.open(archive, "w:gz") as tar:
        for name, path in members:
            with path.open("rb") as handle:
                info = tar.gettarinfo(arcname=name, fileobj=handle)
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                if name.endswith(f"/{paths.JOB_DB}"):
                    info.mode = 0o600  # the record is its user's alone
                digest = _Hashing(handle)
                tar.addfile(info, digest)
            listed.append({"name": name, "size": info.size, "sha256": digest.hexdigest()})
        manifest = {"format": FORMAT, "job_id": job.job_id, "app_name": job.config.app_name,
                    "outcome": job.outcome, "exported_at": time.time(),
                    "exported_from": socket.gethostname(), "files": listed,
                    "shipped": list(job.config.files), "left_out": left_out}
        body = json.dumps(manifest, indent=1, sort_keys=True).encode()
        info = tarfile.TarInfo(MANIFEST)
        info.size, info.mtime, info.mode = len(body), int(time.time()), 0o644
        tar.addfile(info, io.BytesIO(body))
    with archive.open("rb") as handle:
        os.fsync(handle.fileno())
    return manifest


class _Hashing(io.RawIOBase):
    """A file read through SHA-256."""

    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle
        self._sha = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(size)
        self._sha.update(data)
        return data

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


# -- import ------------------------------------------------------------------------------------


def import_job(archive: Path, jobs_root: Path) -> Imported:
    """Make the job exported to ``archive`` a job under ``jobs_root``.

    Raises:
        ArchiveError: no such archive, a damaged one or not an export, or its job id is
            taken (nothing was written).
    """
    if not archive.is_file():
        raise ArchiveError(f"no archive {archive}" if not archive.exists()
                           else f"{archive} is not a file")
    jobs_root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".import-", dir=jobs_root))
    try:
        manifest = _extract(archive, scratch)
        job_id = manifest["job_id"]
        target = jobs_root / job_id
        _refuse_taken(target)
        _check_members(archive, scratch, manifest)
        folder = scratch / job_id
        folder.chmod(0o700)  # a job's folder is its user's alone, as da-submit makes it
        job = _readable(archive, folder, job_id)
        (folder / paths.IMPORTED).write_text(json.dumps(
            {**{k: v for k, v in manifest.items() if k != "files"},
             "archive": str(archive.absolute()), "imported_at": time.time()},
            indent=1, sort_keys=True) + "\n")
        _refuse_taken(target)
        os.rename(folder, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Imported(job.job_id, target, str(manifest.get("exported_from", "")),
                    float(manifest.get("exported_at", 0.0)))


def _damaged(archive: Path, why: str) -> ArchiveError:
    return ArchiveError(f"{archive} is damaged or not a DisAuto job export ({why}); nothing "
                        "was imported")


def _extract(archive: Path, scratch: Path) -> dict[str, Any]:
    """Extract ``archive`` into ``scratch``; its manifest, checked.

    Raises:
        ArchiveError: a damaged archive, or not an export.
    """
    try:
        with gzip.open(archive, "rb") as stream:  # every byte against gzip's checksum first
            while stream.read(_CHUNK):
                pass
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(scratch, filter="data")
    except (tarfile.TarError, EOFError, zlib.error, UnicodeError) as err:
        raise _damaged(archive, _why(err)) from None
    except OSError as err:
        if err.errno is None:  # gzip's own: a bad header or checksum
            raise _damaged(archive, _why(err)) from None
        raise ArchiveError(f"cannot extract {archive} into {scratch.parent}: "
                           f"{err.strerror}; nothing was imported") from None
    try:
        manifest = json.loads((scratch / MANIFEST).read_text())
    except FileNotFoundError:
        raise _damaged(archive, f"no {MANIFEST}") from None
    except (OSError, ValueError) as err:
        raise _damaged(archive, f"{MANIFEST}: {err}") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), list):
        raise _damaged(archive, f"{MANIFEST} lists no files")
    if manifest.get("format") != FORMAT:
        raise ArchiveError(f"{archive} is an export of format {manifest.get('format')!r}; this "
                           f"DisAuto reads format {FORMAT}; nothing was imported")
    if not isinstance(manifest.get("job_id"), str) or not _JOB_ID.fullmatch(manifest["job_id"]):
        raise _damaged(archive, f"{MANIFEST} names no valid job id")
    return manifest


def _why(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return text[0].lower() + text[1:] if text[1:2].islower() else text


def _refuse_taken(target: Path) -> None:
    if os.path.lexists(target):
        raise ArchiveError(f"job {target.name} already exists in {target.parent}; nothing was "
                           f"imported (da-job rm {target.name} removes it first)")


def _check_members(archive: Path, scratch: Path, manifest: dict[str, Any]) -> None:
    """Every file the manifest lists is there, whole, and nothing else is.

    Raises:
        ArchiveError: a file is missing, differs or was not listed.
    """
    listed = {}
    for entry in manifest["files"]:
        if not isinstance(entry, dict) or not str(entry.get("name", "")).startswith(
                f"{manifest['job_id']}/"):
            raise _damaged(archive, f"{MANIFEST} lists a file outside the job's folder")
        listed[entry["name"]] = entry
    found = {path.relative_to(scratch).as_posix() for path in _files(scratch)} - {MANIFEST}
    if found - set(listed):
        raise _damaged(archive, f"{sorted(found - set(listed))[0]} is not in its manifest")
    for name, entry in listed.items():
        path = scratch / name
        if name not in found:
            raise _damaged(archive, f"{name} is missing")
        if path.stat().st_size != entry.get("size") or _sha256(path) != entry.get("sha256"):
            raise _damaged(archive, f"{name} differs from what was exported")


def _files(folder: Path) -> Iterator[Path]:
    for path in folder.rglob("*"):
        if path.is_file() or path.is_symlink():
            yield path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _readable(archive: Path, folder: Path, job_id: str) -> Job:
    """The job in ``folder``, read as ``da-job`` reads it.

    Raises:
        ArchiveError: its record cannot be read, or is another job's.
    """
    try:
        job = load(folder)
        job.config  # noqa: B018 - its configuration parses
    except (JobLookupError, UnreadableRecordError, ValueError) as err:
        raise _damaged(archive, str(err).replace(str(folder), job_id)) from None
    if job.job_id != job_id:
        raise _damaged(archive, f"the record is of job {job.job_id}, not {job_id}")
    return job
