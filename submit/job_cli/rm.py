"""``da-job rm``: remove ended jobs' folders (their records, results, logs) for good.

Every job named is checked before any is removed: a running job (``da-job kill`` it first),
an interrupted one (``da-job resume`` or ``da-job kill`` it first) or an unknown id removes
nothing. Without ``--yes`` it asks on the terminal, listing them; where stdin is no terminal (a
script, a pipe) it removes nothing without ``--yes``. Each folder is first renamed out of the
jobs (``jobs/.removing-…``, under the job's lock, so no resume can start meanwhile), then
deleted: a job is there whole or gone, never half. A job's ``--output`` folder is not touched.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import shutil
import sys
from typing import IO

from disauto.common import paths
from disauto.submit.exit_status import ExitStatus
from disauto.submit.fit import short_path
from disauto.submit.fit import wrap
from disauto.submit.job_cli.base import PROG
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.base import arg
from disauto.submit.job_cli.base import state_text
from disauto.submit.job_lock import JobLockedError
from disauto.submit.job_lock import held
from disauto.submit.jobs import Job
from disauto.submit.jobs import find


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    jobs: dict[str, Job] = {}
    for given in args.jobs:
        job = find(given)
        _removable(job)
        jobs.setdefault(job.job_id, job)
    if not args.yes:
        if not sys.stdin.isatty():
            raise JobCommandError("da-job rm asks before it removes, and stdin is no terminal: "
                                  "give --yes to remove without asking")
        if not _confirmed(list(jobs.values()), out):
            print(f"{PROG}: nothing removed", file=out)
            return ExitStatus.SUCCESS
    for job in jobs.values():
        _remove(job, out)
    return ExitStatus.SUCCESS


def _removable(job: Job) -> None:
    """Raises JobCommandError unless ``job`` has ended."""
    if job.state == "running":
        raise JobCommandError(f"job {job.job_id} is running: da-job kill {job.job_id} ends it "
                              "first; nothing was removed")
    if job.state == "interrupted":
        raise JobCommandError(f"job {job.job_id} is interrupted (its tasks may still run): "
                              f"da-job resume {job.job_id} carries it on, da-job kill "
                              f"{job.job_id} closes its record; nothing was removed")


def _confirmed(jobs: list[Job], out: IO[str]) -> bool:
    """Whether the user answers yes to removing ``jobs`` (each listed with its folder)."""
    for job in jobs:
        done = sum(1 for t in job.trials if t.state.is_finished())
        print("\n".join(wrap(f"  {job.job_id}: {state_text(job)}, {done} trial"
                             f"{'' if done == 1 else 's'}, {short_path(job.folder)}")),
              file=out)
    count = f"these {len(jobs)} jobs and their folders" if len(jobs) > 1 \
        else "this job and its folder"
    print(f"{PROG}: remove {count} for good? [y/N] ", end="", file=out, flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def _remove(job: Job, out: IO[str]) -> None:
    """Take ``job``'s folder out of the jobs (renamed, under its lock), then delete it.

    Raises:
        JobCommandError: it runs again, a process holds its lock, or it cannot be removed.
    """
    gone = paths.jobs_dir() / f".removing-{job.job_id}-{os.getpid()}"
    try:
        with held(job.folder):
            _removable(find(job.job_id))  # it did not start again meanwhile
            os.rename(job.folder, gone)
    except JobLockedError as error:
        raise JobCommandError(f"{error}; job {job.job_id} was not removed") from None
    except OSError as error:
        raise JobCommandError(f"cannot remove job {job.job_id}: {error.strerror or error}",
                              ExitStatus.ERROR) from None
    failed: list[str] = []
    shutil.rmtree(gone, onerror=lambda _f, path, _e: failed.append(path))
    if failed:
        raise JobCommandError(f"job {job.job_id} is removed from the jobs, but {len(failed)} "
                              f"of its files could not be deleted: {Path(failed[0])} ...",
                              ExitStatus.ERROR)
    print(f"{PROG}: removed job {job.job_id}", file=out)


COMMAND = Command(
    name="rm", help="remove ended jobs (their folders) for good", run=run,
    description="Remove ended jobs' folders under $DISAUTO_HOME: their records, results, "
                "report and logs. A running or interrupted job is refused (kill it first), and "
                "so is every other job named with it. Without --yes it lists them and asks on "
                "the terminal; without a terminal it needs --yes. A job's --output folder is "
                "not touched.",
    arguments=(
        arg("jobs", metavar="JOB", nargs="+",
            help="a job id, or any unique start of one (da-job list shows them); several may "
                 "be given"),
        arg("--yes", "-y", action="store_true",
            help="remove without asking"),
    ))
