"""``da-job results``: a job's trials, best first, as a table, CSV, JSON or Parquet.

The JSON is results.json's schema whether the job runs or has ended (:func:`results.document`,
README): read from the record each time, with da-submit's exit status once the job ended. The
table and the CSV are da-submit's: with several objectives a column each and the Pareto front
first (marked), infeasible trials marked, and the table's lines on the front after it.
Parquet (:mod:`submit.parquet`) has the CSV's columns, typed, and goes to a file (``-o``); so
does any format with ``-o``, replacing the file once whole.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import IO

from disauto.common import paths
from disauto.common.objectives import Objectives
from disauto.submit import parquet
from disauto.submit import results as results_mod
from disauto.submit.exit_status import ExitStatus
from disauto.submit.fit import columns
from disauto.submit.job_cli.base import JOB
from disauto.submit.job_cli.base import PROG
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.base import arg
from disauto.submit.jobs import Job
from disauto.submit.jobs import find
from disauto.submit.results import replacing


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    if args.format == "parquet":
        _parquet_wanted(args)
    path = None if args.output is None else _output_path(args.output)
    job = find(args.job)
    order = [p.name for p in job.config.search.space.parameters]
    objectives = Objectives.from_spec(job.config.search)
    if path is None:
        _write(args.format, job, order, objectives, out)
        return ExitStatus.SUCCESS
    if args.format == "parquet":
        try:
            parquet.write(path, job.job_id, job.trials, job.maximize, order, objectives)
        except parquet.ParquetUnavailableError as error:
            raise JobCommandError(str(error), ExitStatus.ERROR) from None
    else:
        with replacing(path) as handle:
            _write(args.format, job, order, objectives, handle)
    count = len(job.trials)
    print(f"{PROG}: {count} trial{'' if count == 1 else 's'} of job {job.job_id} written to "
          f"{path}", file=out)
    return ExitStatus.SUCCESS


def _parquet_wanted(args: argparse.Namespace) -> None:
    """Parquet is a file: ``-o`` is needed, and so is pyarrow (checked before the job is read).

    Raises:
        JobCommandError: either is missing (one line saying what to give or install).
    """
    if args.output is None:
        raise JobCommandError("--format parquet writes a file: give -o FILE "
                              "(da-job results JOB --format parquet -o trials.parquet)")
    try:
        parquet.require_pyarrow()
    except parquet.ParquetUnavailableError as error:
        raise JobCommandError(str(error), ExitStatus.ERROR) from None


def _output_path(given: str) -> Path:
    """Where ``-o`` writes: any file but one inside a job's folder, whose files are its record.

    Raises:
        JobCommandError: a folder, a missing folder, or a job's folder.
    """
    path = Path(given).expanduser().absolute()
    if path.is_dir():
        raise JobCommandError(f"-o {given}: is a folder; give a file name")
    if not path.parent.is_dir():
        raise JobCommandError(f"-o {given}: no folder {path.parent}")
    jobs = paths.jobs_dir().resolve()
    if path.resolve().is_relative_to(jobs):
        raise JobCommandError(f"-o {given}: inside {jobs}, where the jobs' records are; "
                              "give a file elsewhere")
    return path


def _write(form: str, job: Job, order: list[str], objectives: Objectives,
           out: IO[str]) -> None:
    config = job.config
    objective = config.search.objective
    if form == "json":
        facts = results_mod.JobFacts(config, job.meta, job.trials, job.state,
                                     results_mod.saved_exit_status(job.folder, job.state))
        print(results_mod.dumps(results_mod.document(facts)), file=out)
    elif form == "csv":
        buffer = io.StringIO()
        results_mod.write_csv(buffer, job.trials, job.maximize, order, objectives)
        out.write(buffer.getvalue())
    else:
        print(results_mod.table(job.trials, objective, job.maximize, limit=10_000,
                                param_order=order, objectives=objectives, width=columns(),
                                all_columns=f"da-job results {job.job_id} --format csv"),
              file=out)
        for line in results_mod.search_lines(results_mod.search_keys(job.trials, objectives),
                                             objectives):
            print(line, file=out)


COMMAND = Command(
    name="results", help="the trials, best first", run=run,
    arguments=(
        JOB,
        arg("--format", choices=("table", "csv", "json", "parquet"), default="table",
            help="table (default), csv (as results.csv), json (as results.json) or parquet "
                 "(the CSV's columns, typed; needs -o and pyarrow: "
                 "pip install 'disauto[dataframe]')"),
        arg("-o", "--output", metavar="FILE",
            help="write to FILE (replaced once whole) instead of printing"),
    ))
