"""``da-job import``: a job exported with ``da-job export`` made a job under this
``$DISAUTO_HOME`` (:mod:`submit.archive`)."""

from __future__ import annotations

import argparse
from pathlib import Path
import time
from typing import IO

from disauto.common import paths
from disauto.submit.archive import ArchiveError
from disauto.submit.archive import import_job
from disauto.submit.exit_status import ExitStatus
from disauto.submit.fit import columns
from disauto.submit.fit import short_path
from disauto.submit.fit import wrap
from disauto.submit.job_cli.base import PROG
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.base import arg


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    archive = Path(args.archive).expanduser().absolute()
    try:
        imported = import_job(archive, paths.jobs_dir())
    except ArchiveError as error:
        raise JobCommandError(str(error), ExitStatus.ERROR) from None
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(imported.exported_at))
    origin = f" on {imported.exported_from}" if imported.exported_from else ""
    print("\n".join(wrap(f"{PROG}: imported job {imported.job_id} (exported{origin} {when}) "
                         f"into {short_path(imported.folder, columns() - 4)}; da-job status "
                         f"{imported.job_id} shows it")), file=out)
    return ExitStatus.SUCCESS


COMMAND = Command(
    name="import", help="make an exported job (da-job export) a job here", run=run,
    description="Make the job in ARCHIVE (written by `da-job export`) a job under this "
                "$DISAUTO_HOME, read by da-job status, results, logs, ui and load_job as any "
                "other. The archive is checked whole (every file against its manifest, the "
                "record read back) before the job appears; a damaged archive, or a job id "
                "already here, changes nothing.",
    arguments=(
        arg("archive", metavar="ARCHIVE", help="a .tar.gz written by da-job export"),
    ))
