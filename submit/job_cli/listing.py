"""``da-job list``: every job under ``$DISAUTO_HOME``; with ``--master``, also the frameworks
that Mesos master knows and the DisAuto job each runs.

The tables fit the terminal: the job's name appears only where it is not the start of its id,
long cells are clipped and the start time, then the duration, left out before a row wraps;
a job's trials say how many failed (``6/6 (6 failed)``), its best the value and the trial (with
several objectives: the Pareto front's size, ``front 4``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import json
from pathlib import Path
import time
from typing import IO
from typing import Any

from disauto.common import paths
from disauto.common.objectives import Objectives
from disauto.common.trial_state import TrialState
from disauto.submit.exit_status import ExitStatus
from disauto.submit.fit import Column
from disauto.submit.fit import columns
from disauto.submit.fit import fit_table
from disauto.submit.fit import short_path
from disauto.submit.fit import wrap
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.base import arg
from disauto.submit.job_cli.base import fmt_seconds
from disauto.submit.job_cli.base import state_text
from disauto.submit.jobs import Job
from disauto.submit.jobs import MasterQueryError
from disauto.submit.jobs import UnreadableRecordError
from disauto.submit.jobs import master_frameworks
from disauto.submit.jobs import scan


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    jobs, unreadable = scan()
    rows = [job.summary() for job in jobs]
    frameworks = _master_frameworks(args) if args.master else None
    if args.json:
        every = rows + [{"job_id": bad.job_id, "state": "unreadable", "error": str(bad)}
                        for bad in unreadable]
        listed: Any = every if frameworks is None else {"jobs": every, "master": args.master,
                                                        "frameworks": frameworks}
        print(json.dumps(listed, indent=2), file=out)
        return ExitStatus.SUCCESS
    if not jobs and not unreadable:
        print(f"no jobs under {short_path(paths.jobs_dir(), columns() - 14)}", file=out)
    else:
        _print_jobs(jobs, rows, out, unreadable)
    if frameworks is not None:
        _print_frameworks(args.master, frameworks, {job.job_id for job in jobs}, out)
    return ExitStatus.SUCCESS


def _master_frameworks(args: argparse.Namespace) -> list[dict[str, Any]]:
    secret = None
    if args.secret_file:
        try:
            secret = Path(args.secret_file).read_text().strip()
        except OSError as err:
            raise JobCommandError(f"--secret-file: cannot read {args.secret_file}: "
                                  f"{err.strerror}") from None
    try:
        return master_frameworks(args.master, args.principal, secret)
    except MasterQueryError as err:
        raise JobCommandError(str(err), ExitStatus.MASTER_UNREACHABLE) from None


def _print_frameworks(master: str, frameworks: Sequence[dict[str, Any]], here: set[str],
                      out: IO[str]) -> None:
    print(f"\nframeworks on the Mesos master at {master}:", file=out)
    if not frameworks:
        print("  none", file=out)
        return
    rows = []
    for row in frameworks:
        job = row["job_id"] or "-"
        if row["job_id"]:
            job += " (here)" if row["job_id"] in here else " (elsewhere)"
        rows.append([row["framework_id"], row["name"], row["state"], str(row["running_tasks"]),
                     job])
    # A framework id is its master's id and a number: the end tells them apart.
    table = [Column("framework", narrowest=12, keep_end=True, first=1),
             Column("name", narrowest=8), Column("state", narrowest=8), Column("tasks"),
             Column("DisAuto job")]
    print("\n".join(fit_table(table, rows)), file=out)


def _best_cell(job: Job, best: dict[str, Any] | None) -> str:
    """The best's value and trial; with several objectives the Pareto front's size instead
    (``front 4``): no one trial is the best."""
    objectives = Objectives.from_spec(job.config.search)
    if objectives.several:
        return f"front {len(objectives.front(job.trials))}"
    return "-" if best is None else f"{best['value']:.6g} (#{best['trial']})"


def _print_jobs(jobs: Sequence[Job], rows: Sequence[dict[str, Any]], out: IO[str],
                unreadable: Sequence[UnreadableRecordError] = ()) -> None:
    # The name is the start of the job's id (da-submit makes it so): shown only where not.
    named = any(not job.job_id.startswith(row["name"]) for job, row in
                zip(jobs, rows, strict=True))
    today = time.strftime("%Y-%m-%d")
    cells = []
    for job, row in zip(jobs, rows, strict=True):
        best = row["best"]
        failed = job.counts().get(str(TrialState.FAILED), 0)
        started = time.localtime(row["started_at"])
        cells.append([
            row["job_id"], row["name"], state_text(job),
            f"{row['done']}/{row['budget']}" + (f" ({failed} failed)" if failed else ""),
            _best_cell(job, best),
            time.strftime("%H:%M" if time.strftime("%Y-%m-%d", started) == today
                          else "%m-%d %H:%M", started),
            fmt_seconds(row["duration_seconds"]),
        ])
    # A record that cannot be read is a row of its own, after the others (the error: below).
    cells += [[bad.job_id, "-", "unreadable", "-", "-", "-", "-"] for bad in unreadable]
    # An id is clipped last (any unique start of it names the job in every da-job command).
    table = [Column("job", narrowest=24, last=True), Column("name", narrowest=6),
             Column("state", narrowest=11),
             Column("trials"), Column("best", narrowest=8), Column("started", drop=1),
             Column("duration", drop=2)]
    if not named:
        table, cells = table[:1] + table[2:], [row[:1] + row[2:] for row in cells]
    print("\n".join(fit_table(table, cells)), file=out)
    for bad in unreadable:
        db = short_path(bad.folder / paths.JOB_DB, columns() - 2)
        print("\n".join(wrap(f"{bad.job_id}: its record {db} is unreadable: {bad.why} "
                             "(left as it is)")), file=out)


COMMAND = Command(
    name="list", help="every job under $DISAUTO_HOME", run=run,
    arguments=(
        arg("--json", action="store_true", help="as JSON (one object per job)"),
        arg("--master", metavar="HOST:PORT",
            help="also the frameworks this Mesos master knows"),
        arg("--principal", help="with --master: Mesos principal (HTTP basic auth)"),
        arg("--secret-file", metavar="FILE", help="with --master: its secret"),
    ))
