"""``da-job update``: change a job's trial budget or parallelism while it runs (through its
record; the framework checks and answers), or an interrupted job's record for ``da-job
resume``."""

from __future__ import annotations

import argparse
from typing import IO

from disauto.submit.exit_status import ExitStatus
from disauto.submit.job_cli.base import JOB
from disauto.submit.job_cli.base import PROG
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.base import arg
from disauto.submit.job_lock import JobLockedError
from disauto.submit.job_lock import held
from disauto.submit.jobs import find


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    from disauto.submit import update  # da-submit's validators: imported when needed

    job = find(args.job)
    if job.state == "ended":
        raise JobCommandError(f"job {job.job_id} has ended ({job.outcome}); nothing to update")
    try:
        request = update.requested(job, args.trial_steps, args.parallelism)
        if job.state == "interrupted":
            with held(job.folder):  # no framework of it starts while its record changes
                change = update.update_interrupted(find(job.job_id), request)
            print(f"{PROG}: job {job.job_id} is interrupted; its record now says {change} "
                  "(da-job resume carries it on with it)", file=out)
            return ExitStatus.SUCCESS
        change = update.update_running(job, request, args.wait)
    except update.UpdateError as error:
        raise JobCommandError(str(error), error.status) from None
    except JobLockedError as error:
        raise JobCommandError(f"{error}; try again once it runs") from None
    print(f"{PROG}: job {job.job_id} updated: {change}", file=out)
    return ExitStatus.SUCCESS


COMMAND = Command(
    name="update", help="change a job's trial budget or parallelism", run=run,
    arguments=(
        JOB,
        arg("--trail-steps", "--trial-steps", dest="trial_steps", metavar="N",
            help="the new trial budget"),
        arg("--parallelism", metavar="P", help="the new number of trials at once"),
        arg("--wait", type=float, default=60.0, metavar="SECONDS",
            help="how long to wait for the job to take it (default 60)"),
    ))
