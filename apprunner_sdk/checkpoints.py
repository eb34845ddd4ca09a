"""A trial's checkpoints, trial side: ``save_checkpoint`` and ``load_checkpoint``.

A checkpoint is a tar of the file or folder the script names. By default it is uploaded to the
framework over its gRPC service, in chunks, with the trial's token (``SaveCheckpoint``); with
``da-submit --checkpoint-dir DST`` (a folder every agent shares) the trial writes it to
``DST/<job id>/trial-NNNN/`` itself. Either way it is written whole or not at all, at most
``--checkpoint-max-size`` bytes, and only the trial's latest ``--checkpoint-keep`` are kept.

A try that runs because an earlier one was lost (its agent drained, gone, partitioned past the
bound, its task killed) or failed (``--trial-retries``) is launched with the latest checkpoint
(``DISAUTO_RESUME_CHECKPOINT``): ``load_checkpoint()`` fetches it into the sandbox once and
returns its path, and ``checkpoint_step()`` the step it was taken at.

Imported only when the script calls one of them: ``tarfile`` and the rest cost nothing to a
script that never checkpoints.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Mapping
import json
import os
from pathlib import Path
import sys
import tempfile
import time
from typing import Any

import grpc

from disauto.common import task_env
from disauto.common import tls
from disauto.common.checkpoints import CHUNK_BYTES
from disauto.common.checkpoints import CheckpointError
from disauto.common.checkpoints import CheckpointFolder
from disauto.common.checkpoints import pack
from disauto.common.checkpoints import unpack
from disauto.common.rendezvous import framework_address
from disauto.protos import framework_pb2
from disauto.protos import framework_pb2_grpc


UPLOAD_WINDOW = 120.0
"""Seconds an upload or a download is tried again while the framework does not answer (it may
be resuming); then ``save_checkpoint`` raises and the trial goes on."""
LOADED = Path(".disauto") / "checkpoint"
"""Where in the sandbox the checkpoint a try resumes from is unpacked."""
_REFUSED = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED,
            grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND,
            grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED,
            grpc.StatusCode.INTERNAL}

_loaded: Path | None = None


def _int(environ: Mapping[str, str], name: str, default: int) -> int:
    text = environ.get(name, "")
    return int(text) if text.isdigit() else default


def save(source: Path, step: int, environ: Mapping[str, str]) -> str:
    """Save ``source`` as the trial's checkpoint at ``step``; its name. Outside DisAuto a line
    on standard output says it would have been saved."""
    number = environ.get(task_env.TRIAL_NUMBER, "")
    if not number.isdigit():
        print("[disauto] " + json.dumps({"checkpoint": str(source), "step": step}),
              file=sys.stdout, flush=True)
        return ""
    max_bytes = _int(environ, task_env.CHECKPOINT_MAX_BYTES, 2 ** 62)
    with tempfile.TemporaryDirectory(prefix="disauto-checkpoint-") as scratch:
        archive = Path(scratch) / "checkpoint.tar"
        try:
            size = pack(source, archive)
        except OSError as err:
            raise CheckpointError(f"save_checkpoint: cannot pack {source}: "
                                  f"{err.strerror or err}") from None
        if size > max_bytes:
            raise CheckpointError(
                f"save_checkpoint: the checkpoint at step {step} is {size} bytes, over the "
                f"job's --checkpoint-max-size ({max_bytes} bytes); it was not saved")
        shared = environ.get(task_env.CHECKPOINT_DIR, "")
        if shared:
            return _save_shared(Path(shared), int(number), step, archive, max_bytes, environ)
        return _Framework(environ).upload(int(number), step, size, archive)


def _save_shared(root: Path, number: int, step: int, archive: Path, max_bytes: int,
                 environ: Mapping[str, str]) -> str:
    folder = CheckpointFolder(root)
    try:
        saved = folder.write(number, step, _chunks_of(archive), max_bytes)
    except CheckpointError as err:
        raise CheckpointError(f"save_checkpoint: {err}") from None
    folder.prune(number, _int(environ, task_env.CHECKPOINT_KEEP, 2))
    return saved.name


def _chunks_of(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            yield chunk


def resume_point(environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The checkpoint this try resumes from, as the framework launched it; None: none."""
    text = environ.get(task_env.RESUME_CHECKPOINT, "")
    if not text:
        return None
    point = json.loads(text)
    return point if isinstance(point, dict) and point.get("name") else None


def load(environ: Mapping[str, str]) -> Path | None:
    """The path of the checkpoint this try resumes from, fetched and unpacked once; None when
    it starts from scratch (or runs outside DisAuto)."""
    global _loaded
    point = resume_point(environ)
    number = environ.get(task_env.TRIAL_NUMBER, "")
    if point is None or not number.isdigit():
        return None
    if _loaded is not None and _loaded.exists():
        return _loaded
    into = Path.cwd() / LOADED
    into.mkdir(parents=True, exist_ok=True)
    archive = into.parent / "checkpoint.tar"
    shared = environ.get(task_env.CHECKPOINT_DIR, "")
    if shared:
        chunks: Iterator[bytes] = CheckpointFolder(Path(shared)).read(int(number),
                                                                      str(point["name"]))
        try:
            _write(archive, chunks)
        except OSError as err:
            raise CheckpointError(f"load_checkpoint: cannot read {point['name']} in {shared}: "
                                  f"{err.strerror or err}") from None
    else:
        _Framework(environ).download(int(number), str(point["name"]), archive)
    try:
        _loaded = unpack(archive, into)
    finally:
        archive.unlink(missing_ok=True)
    return _loaded


def forget() -> None:
    """Forget the checkpoint fetched (a forked trial, tests)."""
    global _loaded
    _loaded = None


def _write(path: Path, chunks: Iterator[bytes]) -> None:
    with path.open("wb") as handle:
        for chunk in chunks:
            handle.write(chunk)


class _Framework:
    """The framework's gRPC service, as the trial reaches it (its token, TLS, and the master
    to ask where the framework moved)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.address = environ.get(task_env.FRAMEWORK_ADDR, "")
        self._trust = tls.framework_trust(environ)
        self._metadata = ((task_env.TOKEN_METADATA, environ.get(task_env.TRIAL_TOKEN, "")),)
        self._try = _int(environ, task_env.TRIAL_TRY, 0)
        self._master = environ.get(task_env.MASTER_ADDR, "")
        self._framework_id = environ.get(task_env.FRAMEWORK_ID, "")

    def upload(self, number: int, step: int, size: int, archive: Path) -> str:
        def chunks() -> Iterator[framework_pb2.CheckpointChunk]:
            yield framework_pb2.CheckpointChunk(trial_number=number, try_index=self._try,
                                                step=step, size=size)
            for data in _chunks_of(archive):
                yield framework_pb2.CheckpointChunk(data=data)

        reply = self._call("save_checkpoint", lambda stub: stub.SaveCheckpoint(
            chunks(), metadata=self._metadata, timeout=60 + size / 1e6))
        return str(reply.name)

    def download(self, number: int, name: str, archive: Path) -> None:
        request = framework_pb2.LoadCheckpointRequest(trial_number=number, name=name)
        self._call("load_checkpoint", lambda stub: _write(archive, (
            chunk.data for chunk in stub.LoadCheckpoint(request, metadata=self._metadata,
                                                        timeout=600))))

    def _call(self, what: str, fn: Any) -> Any:
        if not self.address:
            raise CheckpointError(f"{what}: the task has no {task_env.FRAMEWORK_ADDR}")
        deadline, delay = time.monotonic() + UPLOAD_WINDOW, 0.5
        while True:
            try:
                with tls.channel(self.address, *self._trust) as channel:
                    return fn(framework_pb2_grpc.FrameworkServiceStub(channel))
            except grpc.RpcError as err:
                code = err.code()
                if code in _REFUSED or time.monotonic() + delay > deadline:
                    raise CheckpointError(f"{what}: {err.details() or code.name}") from None
            time.sleep(delay)
            delay = min(delay * 2, 8.0)
            moved = framework_address(self._master, self._framework_id)
            if moved:
                self.address = moved


os.register_at_fork(after_in_child=forget)
