"""``da-job export``: an ended job as one archive to keep or move (:mod:`submit.archive`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import IO

from disauto.submit.archive import ArchiveError
from disauto.submit.archive import export_job
from disauto.submit.exit_status import ExitStatus
from disauto.submit.fit import columns
from disauto.submit.fit import short_path
from disauto.submit.fit import wrap
from disauto.submit.job_cli.base import JOB
from disauto.submit.job_cli.base import PROG
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.base import arg
from disauto.submit.job_lock import JobLockedError
from disauto.submit.job_lock import held
from disauto.submit.jobs import find


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    job = find(args.job)
    target = Path(args.output or f"{job.job_id}.tar.gz").expanduser().absolute()
    try:
        with held(job.folder):  # no resume may start, and its own process has finished
            exported = export_job(find(job.job_id), target)
    except JobLockedError as error:
        raise JobCommandError(f"{error}; export it once that process has finished") from None
    except ArchiveError as error:
        raise JobCommandError(str(error)) from None
    shipped = ", ".join(Path(name).name for name in exported.shipped)
    said = (f"{PROG}: job {job.job_id} exported to {short_path(target, columns() - 4)} "
            f"({exported.files} files, "
            f"{_size(exported.size)}" + (f"; its --files: {shipped}" if shipped else "") + ")")
    print("\n".join(wrap(said)), file=out)
    for note in exported.left_out:
        if "--files" in note:
            print("\n".join(wrap(f"{PROG}: left out {note}")), file=out)
    return ExitStatus.SUCCESS


def _size(size: int) -> str:
    """``1.4 MB``, ``820 kB``."""
    if size >= 1 << 20:
        return f"{size / (1 << 20):.1f} MB"
    return f"{max(1, round(size / 1024))} kB"


COMMAND = Command(
    name="export", help="an ended job as one archive (.tar.gz) to keep or move", run=run,
    description="Write an ended job to one archive: its record, results, report.html, logs and "
                "the files it shipped to its tasks (--files), with a manifest of every file "
                "and its SHA-256. Left out: the job token, its TLS key, the embedded cluster's "
                "sandboxes and the job's --input and --output data. `da-job import ARCHIVE` "
                "makes it a job under another DISAUTO_HOME.",
    arguments=(
        JOB,
        arg("-o", "--output", metavar="FILE",
            help="the archive to write (default: JOB.tar.gz here); never over an existing "
                 "file"),
    ))
