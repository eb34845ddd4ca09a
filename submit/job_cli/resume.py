"""``da-job resume``: carry on a job whose framework died, from its record."""

from __future__ import annotations

import argparse
import sys
from typing import IO

from disauto.submit.exit_status import ExitStatus
from disauto.submit.job_cli.base import JOB
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.base import arg
from disauto.submit.jobs import find


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    from disauto.submit.resume import resume

    job = find(args.job)
    if job.state == "running":
        raise JobCommandError(f"job {job.job_id} is running (pid {job.meta.get('pid')}); "
                              "nothing to resume")
    if job.state == "ended":
        raise JobCommandError(f"job {job.job_id} has ended ({job.outcome}); nothing to resume")
    return resume(job, detach_it=args.detach, secret_file=args.secret_file, out=out,
                  err=sys.stderr)


COMMAND = Command(
    name="resume", help="carry on a job whose framework died", run=run,
    arguments=(
        JOB,
        arg("--detach", action="store_true", help="in the background"),
        arg("--secret-file", metavar="FILE",
            help="the principal's secret, for a master that authenticates"),
    ))
