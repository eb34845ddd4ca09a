"""The job's trial checkpoints, framework side: kept, bounded, and where a new try resumes.

A trial saves a checkpoint with ``apprunner_sdk.save_checkpoint``: uploaded over the
framework's gRPC service (``SaveCheckpoint``, the trial's token) into the job's folder,
``checkpoints/trial-NNNN/`` (:mod:`common.checkpoints`), or, with ``--checkpoint-dir DST``,
written by the trial itself to ``DST/<job id>/trial-NNNN/``. When a try of the trial ends and
the trial runs again (its task lost, its agent drained or gone, its script failed under
``--trial-retries``), the book asks :meth:`JobCheckpoints.resume_point` for its latest
checkpoint: the next try is launched with it (``DISAUTO_RESUME_CHECKPOINT``), and
``apprunner_sdk.load_checkpoint()`` returns it.

Another trial's checkpoint may start a trial (Population Based Training's exploit):
:meth:`JobCheckpoints.copy_checkpoint` copies it into the new trial's folder, marked with the
trial it came from, before the new trial is launched; its first try then resumes from it like a
retried one (docs/design.md, "Checkpoints").
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
import json
import os
from pathlib import Path
import threading
from typing import Any

from disauto.common import paths
from disauto.common import task_env
from disauto.common.checkpoints import Checkpoint
from disauto.common.checkpoints import CheckpointDiskFullError
from disauto.common.checkpoints import CheckpointError
from disauto.common.checkpoints import CheckpointFolder
from disauto.common.checkpoints import CheckpointTooLargeError
from disauto.framework._job.book import TrialBook
from disauto.framework._spec import JobConfig
from disauto.framework._store import TrialRow


RESERVE_BYTES = 64 * 1024 * 1024
"""Room a checkpoint must leave on the disk that holds the job's record: the record's own
writes (reports, states) must never be the ones that find the disk full."""


class StaleTryError(CheckpointError):
    """The checkpoint comes from a try that is over: a later try of its trial runs (or the
    trial ended)."""


def checkpoint_root(config: JobConfig, job_dir: Path) -> Path:
    """Where the job's checkpoints are: ``--checkpoint-dir``'s folder of the job, or the job
    folder's."""
    if config.checkpoint_dir:
        return Path(config.checkpoint_dir) / config.job_id
    return job_dir / paths.CHECKPOINTS


def running_try(book: TrialBook, number: int) -> int | None:
    """The try of trial ``number`` that may save checkpoints now (its retries), or None when
    the trial has ended or does not exist."""
    trial = book.get(number)
    return None if trial is None or trial.terminal else trial.retries


def checkpoint_env(config: JobConfig, trial: TrialRow) -> dict[str, str]:
    """What a trial's task is told of checkpoints: its try, the bounds, the shared folder with
    ``--checkpoint-dir``, and the checkpoint it resumes from, if any."""
    env = {task_env.TRIAL_TRY: str(trial.retries),
           task_env.CHECKPOINT_MAX_BYTES: str(config.checkpoint_max_bytes),
           task_env.CHECKPOINT_KEEP: str(config.checkpoint_keep)}
    if config.checkpoint_dir:
        env[task_env.CHECKPOINT_DIR] = str(Path(config.checkpoint_dir) / config.job_id)
    if trial.resumed_from:
        env[task_env.RESUME_CHECKPOINT] = json.dumps(trial.resumed_from, sort_keys=True)
    return env


class JobCheckpoints:
    """The checkpoints of one job's trials.

    Args:
        config: the job (its checkpoint folder and bounds).
        job_dir: the job's folder (its record's disk keeps :data:`RESERVE_BYTES` free).
        current_try: the try of a trial that runs now (its retries), or None when the trial
            has ended or does not exist.
    """

    def __init__(self, config: JobConfig, job_dir: Path,
                 current_try: Callable[[int], int | None]) -> None:
        self.folder = CheckpointFolder(checkpoint_root(config, job_dir))
        self.max_bytes = config.checkpoint_max_bytes
        self.keep = config.checkpoint_keep
        self._record_dir = job_dir
        self._current_try = current_try
        self._lock = threading.Lock()

    def resume_point(self, trial: int) -> dict[str, Any] | None:
        """The checkpoint the trial's next try resumes from: its latest, or None."""
        latest = self.folder.latest(trial)
        return None if latest is None else latest.point(trial)

    def save(self, trial: int, try_index: int, step: int, size: int,
             chunks: Iterable[bytes]) -> tuple[Checkpoint, list[str]]:
        """Keep a checkpoint the trial uploads; it and the names of those dropped for it.

        Raises:
            StaleTryError: ``try_index`` is not the trial's running try.
            CheckpointTooLargeError: over ``--checkpoint-max-size``.
            CheckpointDiskFullError: the disk is full, or would leave the record too little.
        """
        current = self._current_try(trial)
        if current is None:
            raise StaleTryError(f"trial {trial} is not running; its checkpoint is not kept")
        if try_index != current:
            raise StaleTryError(f"try {try_index} of trial {trial} is over (try {current} "
                                "runs); its checkpoint is not kept")
        if size > self.max_bytes:
            raise CheckpointTooLargeError(
                f"a checkpoint of {size} bytes is over the job's --checkpoint-max-size "
                f"({self.max_bytes} bytes); it was not saved")
        self._check_room(trial, size)
        with self._lock:
            saved = self.folder.write(trial, step, chunks, self.max_bytes)
            return saved, self.folder.prune(trial, self.keep)

    def _check_room(self, trial: int, size: int) -> None:
        """Refuse a checkpoint that would leave the record's disk less than its reserve."""
        target = self.folder.trial_dir(trial)
        place = next((p for p in (target, *target.parents) if p.exists()), self._record_dir)
        try:
            if os.stat(place).st_dev != os.stat(self._record_dir).st_dev:
                return  # another disk: its own ENOSPC is the answer
            stats = os.statvfs(self._record_dir)
        except OSError:
            return
        free = stats.f_bavail * stats.f_frsize
        if free - size < RESERVE_BYTES:
            raise CheckpointDiskFullError(
                f"the disk is full: a checkpoint of {size} bytes would leave "
                f"{max(0, free - size) // 1024} KiB on the disk of the job's record "
                f"{self._record_dir} (it keeps {RESERVE_BYTES // (1024 * 1024)} MiB free)")

    def chunks(self, trial: int, name: str) -> Iterator[bytes]:
        """The bytes of the trial's checkpoint ``name``.

        Raises:
            CheckpointError: it has no such checkpoint.
        """
        self.folder.path(trial, name)  # raises before the first chunk is asked for
        return self.folder.read(trial, name)

    def copy_checkpoint(self, from_trial: int, to_trial: int,
                        name: str | None = None) -> dict[str, Any]:
        """Start ``to_trial`` from ``from_trial``'s checkpoint ``name`` (its latest when None):
        copied into ``to_trial``'s folder before ``to_trial`` is launched, its first try
        resumes from it; the resume point, naming ``from_trial``.

        Raises:
            CheckpointError: ``from_trial`` has no such checkpoint, or it does not fit.

        The caller records the point as the new trial's (``TrialBook.resume_from``) before it
        is launched.
        """
        with self._lock:
            copied = self.folder.copy(from_trial, to_trial, name, self.max_bytes)
            self.folder.prune(to_trial, self.keep)
        return copied.point(to_trial)
