"""``da-job results``: a job's trials, best first, as a table, CSV or JSON.

The JSON is results.json's schema whether the job runs or has ended (:func:`results.document`,
README): read from the record each time, with da-submit's exit status once the job ended.
"""

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
from disauto.submit.jobs import Job
from disauto.submit.jobs import find


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    job = find(args.job)
    config = job.config
    order = [p.name for p in config.search.space.parameters]
    objective = config.search.objective
    if args.format == "json":
        facts = results_mod.JobFacts(config, job.meta, job.trials, job.state,
                                     _exit_status(job))
        print(results_mod.dumps(results_mod.document(facts)), file=out)
    elif args.format == "csv":
        buffer = io.StringIO()
        results_mod.write_csv(buffer, job.trials, job.maximize, order)
        out.write(buffer.getvalue())
    else:
        print(results_mod.table(job.trials, objective, job.maximize, limit=10_000,
                                param_order=order), file=out)
    return ExitStatus.SUCCESS


def _exit_status(job: Job) -> int | None:
    """da-submit's exit status, from the results.json it wrote when the job ended (None while
    the job runs, or when it ended without one)."""
    if job.state != "ended":
        return None
    try:
        saved = json.loads((job.folder / paths.RESULTS_JSON).read_text())
    except (OSError, ValueError):
        return None
    status = saved.get("exit_status") if isinstance(saved, dict) else None
    return status if isinstance(status, int) else None


COMMAND = Command(
    name="results", help="the trials, best first", run=run,
    arguments=(
        JOB,
        arg("--format", choices=("table", "csv", "json"), default="table",
            help="table (default), csv (as results.csv) or json (as results.json)"),
    ))
