"""``da-job resume``: carry on a job whose framework died, from its record."""

from __future__ import annotations

import argparse
import sys
from typing import IO

from disauto.framework.record import meta
from disauto.submit.exit_status import ExitStatus
from disauto.submit.job_cli.base import JOB
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.base import arg
from disauto.submit.job_lock import JobLock
from disauto.submit.job_lock import JobLockedError
from disauto.submit.jobs import find


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    from disauto.submit.resume import resume

    job = find(args.job)
    # The lock first, the state after: of two resumes started together exactly one passes.
    try:
        lock = JobLock.acquire(job.folder)
    except JobLockedError as error:
        raise JobCommandError(f"{error}; nothing to resume") from None
    try:
        job = find(job.job_id)  # as recorded now that no other framework can start
        if job.state == "running":
            raise JobCommandError(f"job {job.job_id} is running (pid {job.meta[meta.PID]}); "
                                  "nothing to resume")
        if job.state == "ended":
            raise JobCommandError(f"job {job.job_id} has ended ({job.outcome}); nothing to "
                                  "resume")
        return resume(job, detach_it=args.detach, secret_file=args.secret_file, out=out,
                      err=sys.stderr, lock=lock, agent_secret_file=args.agent_secret_file)
    finally:
        lock.close()


COMMAND = Command(
    name="resume", help="carry on a job whose framework died", run=run,
    arguments=(
        JOB,
        arg("--detach", action="store_true", help="in the background"),
        arg("--secret-file", metavar="FILE",
            help="the principal's secret, for a master that authenticates"),
        arg("--agent-secret-file", metavar="FILE",
            help="the agents' principal's secret, when the job reads its agents as another "
                 "principal (--agent-principal)"),
    ))
