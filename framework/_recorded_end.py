"""A job whose end is recorded but whose record was never closed: its framework died between its
last trial and its report (``kill -9`` while it wrote ``report.html``).

When nothing of the job can still run — its framework was torn down (``meta.TORN_DOWN``), or
its embedded cluster died with it — ``da-job resume`` needs no master to finish it: the report
is written from the record and the record closed, as :meth:`JobRunner.stop` and
:meth:`JobRunner.close_record` would have. (A job whose framework may still hold tasks is
resumed on its master instead, to kill them and tear it down.)
"""

from __future__ import annotations

from pathlib import Path

from disauto.common import paths
from disauto.framework import _meta as meta
from disauto.framework._job import JobController
from disauto.framework._spec import JobConfig
from disauto.framework._store import JobStore
from disauto.framework._store import peek_meta
from disauto.framework.webui import report
from disauto.framework.webui.views import read_record


def needs_no_master(job_dir: Path, embedded: bool) -> bool:
    """Whether the job recorded in ``job_dir`` has its end recorded and nothing of it can
    still run (torn down, or on an ``embedded`` cluster, which died with its framework)."""
    recorded = peek_meta(job_dir / paths.JOB_DB)
    return bool(recorded[meta.OUTCOME]) and (recorded[meta.TORN_DOWN] or embedded)


class RecordedEnd:
    """Finishes such a job from its record alone; read as a runner's ``config``, ``store``
    and ``controller`` (its outcome, trials and best, as recorded)."""

    def __init__(self, config: JobConfig, job_dir: Path) -> None:
        self.config = config
        self.job_dir = job_dir
        self.store = JobStore(job_dir / paths.JOB_DB)
        self.controller = JobController(config, self.store, job_token="")

    def stop(self) -> None:
        """Write the job's report (the record says it ended: the controller keeps it so)."""
        report.write(self.job_dir, read_record(self.store, "ended"))

    def close_record(self) -> None:
        """Say in the record that the job ended, its report and results written."""
        self.store.set_meta(meta.STATE, meta.ENDED)
