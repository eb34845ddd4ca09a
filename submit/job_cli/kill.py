"""``da-job kill``: end a running job (its tasks killed, the record kept), or close the record
of an interrupted one."""

from __future__ import annotations

import argparse
import time
from typing import IO

from disauto.common import paths
from disauto.common.trial_state import TrialState
from disauto.framework.store import JobStore
from disauto.submit.exit_status import ExitStatus
from disauto.submit.job_cli.base import JOB
from disauto.submit.job_cli.base import PROG
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.base import arg
from disauto.submit.jobs import find


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    job = find(args.job)
    if job.state == "ended":
        raise JobCommandError(f"job {job.job_id} has already ended ({job.outcome})")
    store = JobStore(job.folder / paths.JOB_DB)
    try:
        if job.state == "interrupted":
            # Nothing runs its framework: close its record here.
            _close_interrupted(store)
            print(f"{PROG}: job {job.job_id} was interrupted; its record is closed (KILLED)",
                  file=out)
            return ExitStatus.SUCCESS
        store.set_meta("control", "kill")
    finally:
        store.close()
    print(f"{PROG}: killing job {job.job_id}…", file=out)
    deadline = time.monotonic() + args.wait
    while time.monotonic() < deadline:
        if find(job.job_id).state != "running":
            print(f"{PROG}: job {job.job_id} ended (killed)", file=out)
            return ExitStatus.SUCCESS
        time.sleep(0.3)
    raise JobCommandError(f"job {job.job_id} did not end within {args.wait:g} s; its "
                          "framework still runs", ExitStatus.ERROR)


def _close_interrupted(store: JobStore) -> None:
    now = time.time()
    for trial in store.trials():
        if trial.state.is_in_flight():
            store.update_trial(trial.number, state=TrialState.KILLED, ended_at=now,
                               message="the job was killed while interrupted")
    store.set_meta_many({"state": "ENDED", "outcome": "JOB_KILLED", "ended_at": str(now),
                         "outcome_message": "killed with da-job kill while interrupted"})


COMMAND = Command(
    name="kill", help="end a running job (tasks killed, record kept)", run=run,
    arguments=(
        JOB,
        arg("--wait", type=float, default=60.0, metavar="SECONDS",
            help="how long to wait for the job to end (default 60)"),
    ))
