"""``da-job list``: every job under ``$DISAUTO_HOME``; with ``--master``, also the frameworks
that Mesos master knows and the DisAuto job each runs."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import json
from pathlib import Path
import time
from typing import IO
from typing import Any

from disauto.common import paths
from disauto.submit.exit_status import ExitStatus
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.base import arg
from disauto.submit.job_cli.base import fmt_seconds
from disauto.submit.job_cli.base import state_text
from disauto.submit.jobs import Job
from disauto.submit.jobs import MasterQueryError
from disauto.submit.jobs import all_jobs
from disauto.submit.jobs import master_frameworks


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    jobs = all_jobs()
    rows = [job.summary() for job in jobs]
    frameworks = _master_frameworks(args) if args.master else None
    if args.json:
        listed: Any = rows if frameworks is None else {"jobs": rows, "master": args.master,
                                                       "frameworks": frameworks}
        print(json.dumps(listed, indent=2), file=out)
        return ExitStatus.SUCCESS
    if not jobs:
        print(f"no jobs under {paths.jobs_dir()}", file=out)
    else:
        _print_jobs(jobs, rows, out)
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
    table = [["framework", "name", "state", "running tasks", "DisAuto job"]]
    for row in frameworks:
        job = row["job_id"] or "-"
        if row["job_id"]:
            job += " (here)" if row["job_id"] in here else " (another machine or home)"
        table.append([row["framework_id"], row["name"], row["state"],
                      str(row["running_tasks"]), job])
    _print_table(table, out)


def _print_jobs(jobs: Sequence[Job], rows: Sequence[dict[str, Any]], out: IO[str]) -> None:
    table = [["job", "name", "state", "trials", "best", "started", "duration"]]
    for job, row in zip(jobs, rows, strict=True):
        best = row["best"]
        table.append([
            row["job_id"], row["name"], state_text(job), f"{row['done']}/{row['budget']}",
            "-" if best is None else f"{row['objective']}={best['value']:.6g} (#{best['trial']})",
            time.strftime("%Y-%m-%d %H:%M", time.localtime(row["started_at"])),
            fmt_seconds(row["duration_seconds"]),
        ])
    _print_table(table, out)


def _print_table(table: Sequence[Sequence[str]], out: IO[str]) -> None:
    widths = [max(len(str(row[i])) for row in table) for i in range(len(table[0]))]
    for index, row in enumerate(table):
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(),
              file=out)
        if index == 0:
            print("  ".join("-" * w for w in widths), file=out)


COMMAND = Command(
    name="list", help="every job under $DISAUTO_HOME", run=run,
    arguments=(
        arg("--json", action="store_true", help="as JSON (one object per job)"),
        arg("--master", metavar="HOST:PORT",
            help="also the frameworks this Mesos master knows"),
        arg("--principal", help="with --master: Mesos principal (HTTP basic auth)"),
        arg("--secret-file", metavar="FILE", help="with --master: its secret"),
    ))
