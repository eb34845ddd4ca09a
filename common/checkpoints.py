"""A trial's checkpoints on disk, as both sides keep them: one folder a trial, one file each.

The framework keeps them in the job's folder (``checkpoints/trial-NNNN/``, uploaded over its
gRPC service); with ``--checkpoint-dir DST`` the trial writes them itself to
``DST/<job id>/trial-NNNN/``, a folder the agents and the framework share. Both write and read
them with :class:`CheckpointFolder`, so the layout is defined once:

* a checkpoint is a tar of what the trial saved (a file or a folder, under its own name),
  ``SSSSSS-step-N.ckpt``: ``SSSSSS`` counts the trial's saves (the latest has the highest),
  ``N`` is the training step it was taken at; one copied from another trial (Population Based
  Training's exploit) ends ``-of-trial-MMMM.ckpt``;
* it is written to a temporary file beside it and renamed once whole, so a reader never sees
  half a checkpoint, and a write that fails (the disk full) leaves the ones before as they were;
* past ``keep`` checkpoints of a trial, the oldest are removed.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Iterator
from dataclasses import dataclass
import errno
import os
from pathlib import Path
import re
from typing import Any


DEFAULT_MAX_BYTES = 1024 ** 3
"""``--checkpoint-max-size``'s default: a checkpoint of at most 1 GB."""
DEFAULT_KEEP = 2
"""``--checkpoint-keep``'s default: the latest two of a trial's checkpoints are kept (the one
before the latest is there while the latest is written)."""
CHUNK_BYTES = 1024 * 1024
"""The bytes of one chunk of an upload or a download (gRPC's messages are at most 4 MiB)."""

_NAME = re.compile(r"^(\d{6,})-step-(\d+)(?:-of-trial-(\d+))?\.ckpt$")


class CheckpointError(RuntimeError):
    """A checkpoint could not be saved or loaded: one line that says why. The trial can go on;
    the checkpoints saved before are kept."""


class CheckpointTooLargeError(CheckpointError):
    """The checkpoint is over the job's ``--checkpoint-max-size``."""


class CheckpointDiskFullError(CheckpointError):
    """The disk that holds the checkpoints is full."""


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint of a trial, as its folder holds it."""

    name: str
    sequence: int
    step: int
    origin: int | None
    """The trial it was copied from; None: the trial's own."""
    size: int

    def point(self, trial: int) -> dict[str, Any]:
        """What a try that resumes from it records and is told: the trial whose training it
        continues, the step and the file's name in ``trial``'s folder."""
        return {"trial": trial if self.origin is None else self.origin, "step": self.step,
                "name": self.name}


def checkpoint_name(sequence: int, step: int, origin: int | None = None) -> str:
    suffix = "" if origin is None else f"-of-trial-{origin:04d}"
    return f"{sequence:06d}-step-{step}{suffix}.ckpt"


def parse_name(name: str) -> tuple[int, int, int | None] | None:
    """``(sequence, step, origin)`` of a checkpoint's file name; None for any other name."""
    match = _NAME.match(name)
    if match is None:
        return None
    origin = match.group(3)
    return int(match.group(1)), int(match.group(2)), None if origin is None else int(origin)


def disk_full_line(path: Path, error: OSError) -> str:
    """One line naming the full disk's free space and the checkpoint that did not fit."""
    try:
        stats = os.statvfs(path.parent)
        free = f", {stats.f_bavail * stats.f_frsize // 1024} KiB free"
    except OSError:
        free = ""
    return f"the disk is full: cannot write checkpoint {path} ({error.strerror}{free})"


class CheckpointFolder:
    """The checkpoints of a job's trials under ``root`` (``.../checkpoints`` or
    ``DST/<job id>``)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def trial_dir(self, trial: int) -> Path:
        return self.root / f"trial-{trial:04d}"

    def checkpoints(self, trial: int) -> list[Checkpoint]:
        """The trial's checkpoints, oldest first (none when its folder does not exist)."""
        found: list[Checkpoint] = []
        try:
            entries = list(os.scandir(self.trial_dir(trial)))
        except FileNotFoundError:
            return []
        for entry in entries:
            parsed = parse_name(entry.name)
            if parsed is None:
                continue  # a temporary file being written, or anything else
            try:
                size = entry.stat().st_size
            except FileNotFoundError:
                continue  # dropped meanwhile
            found.append(Checkpoint(entry.name, parsed[0], parsed[1], parsed[2], size))
        return sorted(found, key=lambda c: c.sequence)

    def latest(self, trial: int) -> Checkpoint | None:
        found = self.checkpoints(trial)
        return found[-1] if found else None

    def path(self, trial: int, name: str) -> Path:
        """The file of the trial's checkpoint ``name``.

        Raises:
            CheckpointError: ``name`` is no checkpoint's name, or the trial has no such one.
        """
        if parse_name(name) is None:
            raise CheckpointError(f"{name!r} is not the name of a checkpoint")
        path = self.trial_dir(trial) / name
        if not path.is_file():
            raise CheckpointError(f"trial {trial} has no checkpoint {name}")
        return path

    def write(self, trial: int, step: int, chunks: Iterable[bytes], max_bytes: int,
              origin: int | None = None) -> Checkpoint:
        """Write a new checkpoint of the trial from ``chunks``: whole, or not at all.

        Raises:
            CheckpointTooLargeError: more than ``max_bytes`` came.
            CheckpointDiskFullError: the disk is full (nothing of it is left behind).
        """
        folder = self.trial_dir(trial)
        latest = self.latest(trial)
        name = checkpoint_name((latest.sequence if latest else 0) + 1, step, origin)
        final = folder / name
        temporary = folder / f".{name}.{os.getpid()}.tmp"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            size = _write_all(temporary, chunks, max_bytes)
            os.replace(temporary, final)
        except OSError as err:
            temporary.unlink(missing_ok=True)
            if err.errno in (errno.ENOSPC, errno.EDQUOT):
                raise CheckpointDiskFullError(disk_full_line(final, err)) from None
            raise CheckpointError(f"cannot write checkpoint {final}: {err.strerror or err}") \
                from None
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        return Checkpoint(name, (latest.sequence if latest else 0) + 1, step, origin, size)

    def prune(self, trial: int, keep: int) -> list[str]:
        """Remove the trial's oldest checkpoints beyond ``keep``; their names."""
        dropped = [c.name for c in self.checkpoints(trial)[:-keep]] if keep > 0 else []
        for name in dropped:
            (self.trial_dir(trial) / name).unlink(missing_ok=True)
        return dropped

    def read(self, trial: int, name: str) -> Iterator[bytes]:
        """The bytes of the trial's checkpoint ``name``, a chunk at a time."""
        with self.path(trial, name).open("rb") as handle:
            while chunk := handle.read(CHUNK_BYTES):
                yield chunk

    def copy(self, from_trial: int, to_trial: int, name: str | None = None,
             max_bytes: int = 2 ** 62) -> Checkpoint:
        """Copy ``from_trial``'s checkpoint ``name`` (its latest when None) into ``to_trial``'s
        folder as its newest, marked as copied: a trial launched with it resumes from there
        (Population Based Training's exploit).

        Raises:
            CheckpointError: ``from_trial`` has no such checkpoint (or none at all).
        """
        if name is None:
            latest = self.latest(from_trial)
            if latest is None:
                raise CheckpointError(f"trial {from_trial} has no checkpoint")
            name = latest.name
        parsed = parse_name(name)
        if parsed is None:
            raise CheckpointError(f"{name!r} is not the name of a checkpoint")
        origin = parsed[2] if parsed[2] is not None else from_trial
        return self.write(to_trial, parsed[1], self.read(from_trial, name), max_bytes, origin)


def _write_all(path: Path, chunks: Iterable[bytes], max_bytes: int) -> int:
    size = 0
    with path.open("wb") as handle:
        for chunk in chunks:
            size += len(chunk)
            if size > max_bytes:
                raise CheckpointTooLargeError(
                    f"the checkpoint is over the job's --checkpoint-max-size ({max_bytes} "
                    "bytes); it was not saved")
            handle.write(chunk)
        handle.flush()
        os.fsync(handle.fileno())
    return size


def pack(source: Path, archive: Path) -> int:
    """Write ``source`` (a file or a folder) into the tar ``archive`` under its own name; the
    archive's size."""
    import tarfile  # here: the SDK imports this module, and most trials never checkpoint

    with tarfile.open(archive, "w") as tar:
        tar.add(source, arcname=source.name)
    return archive.stat().st_size


def unpack(archive: Path, into: Path) -> Path:
    """Extract a checkpoint into the empty folder ``into`` (replaced if there); the path of
    what was saved (the file or the folder under its own name).

    Raises:
        CheckpointError: the archive is not a checkpoint (no member, or not one top name).
    """
    import shutil
    import tarfile

    if into.exists():
        shutil.rmtree(into)
    into.mkdir(parents=True)
    try:
        with tarfile.open(archive, "r") as tar:
            tops = {Path(member.name).parts[0] for member in tar.getmembers()
                    if Path(member.name).parts}
            if len(tops) != 1:
                raise CheckpointError(f"{archive.name} holds {len(tops)} top-level names, "
                                      "not the one a checkpoint holds")
            tar.extractall(into, filter="data")
    except tarfile.TarError as err:
        raise CheckpointError(f"{archive.name} is not a checkpoint: {err}") from None
    return into / tops.pop()
