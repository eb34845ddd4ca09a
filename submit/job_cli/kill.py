"""``da-job kill``: end a running job (its tasks killed, the record kept), or close the record
of an interrupted one."""

from __future__ import annotations

import argparse
import time
from typing import IO

from disauto.common.trial_state import TrialState
from disauto.framework.control import KillJob
from disauto.framework.control import NoAnswerError
from disauto.framework.record import JobRecord
from disauto.framework.record import meta
from disauto.submit.exit_status import ExitStatus
from disauto.submit.job_cli.base import JOB
from disauto.submit.job_cli.base import PROG
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.base import arg
from disauto.submit.job_lock import JobLockedError
from disauto.submit.job_lock import held
from disauto.submit.jobs import ask
from disauto.submit.jobs import find


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    job = find(args.job)
    if job.state == "ended":
        raise JobCommandError(f"job {job.job_id} has already ended ({job.outcome})")
    if job.state == "interrupted" and _closed_interrupted(job.job_id):
        print(f"{PROG}: job {job.job_id} was interrupted; its record is closed (KILLED)",
              file=out)
        return ExitStatus.SUCCESS
    print(f"{PROG}: killing job {job.job_id}…", file=out)
    deadline = time.monotonic() + args.wait
    try:  # the run loop answers within a second, then kills the job's tasks
        answer = ask(job, KillJob(), args.wait)
    except NoAnswerError:
        answer = None  # it ended meanwhile, or never answered: its state says which
    if answer is not None and not answer.ok:
        raise JobCommandError(f"job {job.job_id} refused to end: {answer.message}",
                              ExitStatus.ERROR)
    while time.monotonic() < deadline:
        if find(job.job_id).state != "running":
            print(f"{PROG}: job {job.job_id} ended (killed)", file=out)
            return ExitStatus.SUCCESS
        time.sleep(0.3)
    raise JobCommandError(f"job {job.job_id} did not end within {args.wait:g} s; its "
                          "framework still runs", ExitStatus.ERROR)


def _closed_interrupted(job_id: str) -> bool:
    """Close the record of an interrupted job here, holding its lock (no framework of it may
    start meanwhile); False when it runs again after all.

    Raises:
        JobCommandError: a resume of it is starting (it holds the lock).
    """
    folder = find(job_id).folder
    try:
        with held(folder):
            if find(job_id).state != "interrupted":
                return False
            with JobRecord.in_folder(folder) as record:  # nothing runs its framework
                _close_interrupted(record)
    except JobLockedError as error:
        raise JobCommandError(f"{error}; try again once it runs") from None
    return True


def _close_interrupted(record: JobRecord) -> None:
    now = time.time()
    for trial in record.trials():
        if trial.state.is_in_flight():
            record.update_trial(trial.number, state=TrialState.KILLED, ended_at=now,
                                message="the job was killed while interrupted")
    record.write({meta.STATE: meta.ENDED, meta.OUTCOME: "JOB_KILLED",
                  meta.ENDED_AT: now,
                  meta.OUTCOME_MESSAGE: "killed with da-job kill while interrupted"})


COMMAND = Command(
    name="kill", help="end a running job (tasks killed, record kept)", run=run,
    arguments=(
        JOB,
        arg("--wait", type=float, default=60.0, metavar="SECONDS",
            help="how long to wait for the job to end (default 60)"),
    ))
