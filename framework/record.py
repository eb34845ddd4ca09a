"""A job's record, read and written through one door: :class:`JobRecord`.

A job's folder holds its record (``job.db``, SQLite): the meta (typed keys, :data:`meta`), the
spec it runs with (:class:`JobConfig`, kept in the meta), its trials (:class:`TrialRow`), their
reports, AppCore's runs and the control channel's requests. ``da-submit``, ``da-job`` and the
Python API (``submit/``) read and write it here only; the framework's own parts (the store, the
controller) stay behind this module. The readings of a record that ``da-job status`` and the
results share (the pace, the deadline, a memory kill's need, the update rules of a recorded
spec) are named here too, so that ``submit/`` asks one module about a job's record.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING
from typing import Any

from disauto.common import paths
from disauto.common.registry import lazy_attributes
from disauto.framework import _meta as meta
from disauto.framework._meta import JobMeta
from disauto.framework._meta import MetaKey
from disauto.framework._spec import JobConfig
from disauto.framework._store import JobStore
from disauto.framework._store import TrialRow
from disauto.framework._store import peek_meta
from disauto.framework.control import ControlChannel


if TYPE_CHECKING:
    from disauto.framework._deadline_status import deadline_note
    from disauto.framework._job.book import sorted_trials
    from disauto.framework._job.memory_kill import KILLED_NEED
    from disauto.framework._job.memory_kill import MEMORY_LIMITATION
    from disauto.framework._job.memory_kill import killed_need_bytes
    from disauto.framework._job.pace import RATE_WINDOW
    from disauto.framework._job.pace import Pace
    from disauto.framework._job.progress import Progress
    from disauto.framework._job.progress import job_pace
    from disauto.framework._job.progress import job_progress
    from disauto.framework._job.progress import unreachable_note
    from disauto.framework._job.update import UpdateRefusedError
    from disauto.framework._job.update import check_update
    from disauto.framework._job.update import describe_change
    from disauto.framework._job.update import updated_spec
    from disauto.framework._lineage import explored
    from disauto.framework._recorded_end import RecordedEnd
    from disauto.framework._recorded_end import needs_no_master
    from disauto.framework._spec import DEFAULT_MASTER_TIMEOUT
    from disauto.framework._spec import DEFAULT_TRIAL_EXIT_GRACE
    from disauto.framework._spec import DEFAULT_UNREACHABLE_TIMEOUT
    from disauto.framework._spec import InputSpec
    from disauto.framework._spec import OutputSpec
    from disauto.framework._spec import TaskResources
    from disauto.framework._store import DiskFullError
    from disauto.framework._store import StoreError
    from disauto.framework._store import is_disk_full
    from disauto.framework._telemetry.usage import megabytes
    from disauto.framework._telemetry.usage import suggested_memory_mb


__all__ = [
    "DEFAULT_MASTER_TIMEOUT", "DEFAULT_TRIAL_EXIT_GRACE", "DEFAULT_UNREACHABLE_TIMEOUT",
    "KILLED_NEED", "MEMORY_LIMITATION", "RATE_WINDOW", "DiskFullError", "InputSpec",
    "JobConfig", "JobMeta", "JobRecord", "JobStore", "MetaKey", "OutputSpec", "Pace",
    "Progress", "RecordedEnd", "StoreError", "TaskResources", "TrialRow", "UpdateRefusedError",
    "check_update", "deadline_note", "describe_change", "explored", "is_disk_full", "job_pace",
    "job_progress", "killed_need_bytes", "megabytes", "meta", "needs_no_master", "peek_meta",
    "sorted_trials", "suggested_memory_mb", "unreachable_note", "updated_spec",
]

# Loaded on first use: a reader of one name does not import every part behind the others.
__getattr__, __dir__ = lazy_attributes(__name__, {
    "DEFAULT_MASTER_TIMEOUT": "disauto.framework._spec:DEFAULT_MASTER_TIMEOUT",
    "DEFAULT_TRIAL_EXIT_GRACE": "disauto.framework._spec:DEFAULT_TRIAL_EXIT_GRACE",
    "DEFAULT_UNREACHABLE_TIMEOUT": "disauto.framework._spec:DEFAULT_UNREACHABLE_TIMEOUT",
    "DiskFullError": "disauto.framework._store:DiskFullError",
    "InputSpec": "disauto.framework._spec:InputSpec",
    "KILLED_NEED": "disauto.framework._job.memory_kill:KILLED_NEED",
    "MEMORY_LIMITATION": "disauto.framework._job.memory_kill:MEMORY_LIMITATION",
    "OutputSpec": "disauto.framework._spec:OutputSpec",
    "Pace": "disauto.framework._job.pace:Pace",
    "Progress": "disauto.framework._job.progress:Progress",
    "RATE_WINDOW": "disauto.framework._job.pace:RATE_WINDOW",
    "RecordedEnd": "disauto.framework._recorded_end:RecordedEnd",
    "StoreError": "disauto.framework._store:StoreError",
    "TaskResources": "disauto.framework._spec:TaskResources",
    "UpdateRefusedError": "disauto.framework._job.update:UpdateRefusedError",
    "check_update": "disauto.framework._job.update:check_update",
    "deadline_note": "disauto.framework._deadline_status:deadline_note",
    "describe_change": "disauto.framework._job.update:describe_change",
    "explored": "disauto.framework._lineage:explored",
    "is_disk_full": "disauto.framework._store:is_disk_full",
    "job_pace": "disauto.framework._job.progress:job_pace",
    "job_progress": "disauto.framework._job.progress:job_progress",
    "killed_need_bytes": "disauto.framework._job.memory_kill:killed_need_bytes",
    "megabytes": "disauto.framework._telemetry.usage:megabytes",
    "needs_no_master": "disauto.framework._recorded_end:needs_no_master",
    "sorted_trials": "disauto.framework._job.book:sorted_trials",
    "suggested_memory_mb": "disauto.framework._telemetry.usage:suggested_memory_mb",
    "unreachable_note": "disauto.framework._job.progress:unreachable_note",
    "updated_spec": "disauto.framework._job.update:updated_spec",
})


class JobRecord:
    """One job's record, open for reading and writing; a context manager that closes it.

    Args:
        store: the record's store (:meth:`open` and :meth:`in_folder` make one).
    """

    def __init__(self, store: JobStore) -> None:
        self.store = store
        """The store itself, for the framework's parts that are given one (the runner, the
        control channel)."""

    @classmethod
    def open(cls, path: Path) -> JobRecord:
        """The record in the database file ``path`` (made, with its folder, if missing).

        Raises:
            StoreError: it cannot be opened (its one line says why).
        """
        return cls(JobStore(path))

    @classmethod
    def in_folder(cls, folder: Path) -> JobRecord:
        """The record of the job whose folder is ``folder``."""
        return cls.open(folder / paths.JOB_DB)

    @staticmethod
    def peek(path: Path) -> JobMeta:
        """The meta of the record file ``path`` read-only, creating and changing nothing; empty
        when it cannot be read (yet)."""
        return peek_meta(path)

    def __enter__(self) -> JobRecord:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.store.close()

    @property
    def path(self) -> Path:
        return self.store.path

    def meta(self) -> JobMeta:
        """Every meta value as recorded now, read at once."""
        return self.store.meta()

    def spec(self) -> JobConfig | None:
        """The spec the job runs with (None before one is recorded)."""
        return self.store.get_meta(meta.CONFIG)

    def trials(self) -> list[TrialRow]:
        """Every trial as recorded now, by number."""
        return self.store.trials()

    def results(self, trial: int | None = None) -> list[dict[str, Any]]:
        """The reports of every trial (or of trial ``trial``), in the order they came."""
        return self.store.reports(trial)

    def appcore_runs(self) -> list[dict[str, Any]]:
        """AppCore's attempts, oldest first."""
        return self.store.appcore_runs()

    def write(self, values: Mapping[MetaKey[Any], Any]) -> None:
        """Record meta ``values`` (the spec under :data:`meta.CONFIG` among them) at once."""
        self.store.set_meta_many(values)

    def update_trial(self, number: int, **fields: Any) -> None:
        """Change recorded fields of trial ``number`` (its state, its end)."""
        self.store.update_trial(number, **fields)

    def control(self) -> ControlChannel:
        """The control channel through the record: ask the running job, read its answer."""
        return ControlChannel(self.store)
