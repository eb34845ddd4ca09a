"""``da-job results``: a job's trials, best first, as a table, CSV or JSON."""

from __future__ import annotations

import argparse
import io
import json
from typing import IO

from disauto.common import paths
from disauto.submit import results as results_mod
from disauto.submit.exit_status import ExitStatus
from disauto.submit.job_cli.base import JOB
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import arg
from disauto.submit.jobs import find


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    job = find(args.job)
    config = job.config
    order = [p.name for p in config.search.space.parameters]
    objective = config.search.objective
    if args.format == "json":
        saved = job.folder / paths.RESULTS_JSON
        if job.state == "ended" and saved.exists():
            out.write(saved.read_text() + "\n")
        else:
            print(json.dumps({**job.summary(), "trials": [results_mod.trial_dict(t) for t in
                                                          job.trials]}, indent=2), file=out)
    elif args.format == "csv":
        buffer = io.StringIO()
        results_mod.write_csv(buffer, job.trials, job.maximize, order)
        out.write(buffer.getvalue())
    else:
        print(results_mod.table(job.trials, objective, job.maximize, limit=10_000,
                                param_order=order), file=out)
    return ExitStatus.SUCCESS


COMMAND = Command(
    name="results", help="the trials, best first", run=run,
    arguments=(
        JOB,
        arg("--format", choices=("table", "csv", "json"), default="table",
            help="table (default), csv (as results.csv) or json (as results.json)"),
    ))
