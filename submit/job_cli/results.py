"""``da-job results``: a job's trials, best first, as a table, CSV or JSON.

The JSON is results.json's schema whether the job runs or has ended (:func:`results.document`,
README): read from the record each time, with da-submit's exit status once the job ended. The
table and the CSV are da-submit's: with several objectives a column each and the Pareto front
first (marked), infeasible trials marked, and the table's lines on the front after it.
"""

from __future__ import annotations

import argparse
import io
from typing import IO

from disauto.common.objectives import Objectives
from disauto.submit import results as results_mod
from disauto.submit.exit_status import ExitStatus
from disauto.submit.fit import columns
from disauto.submit.job_cli.base import JOB
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import arg
from disauto.submit.jobs import find


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    job = find(args.job)
    config = job.config
    order = [p.name for p in config.search.space.parameters]
    objective = config.search.objective
    objectives = Objectives.from_spec(config.search)
    if args.format == "json":
        facts = results_mod.JobFacts(config, job.meta, job.trials, job.state,
                                     results_mod.saved_exit_status(job.folder, job.state))
        print(results_mod.dumps(results_mod.document(facts)), file=out)
    elif args.format == "csv":
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
    return ExitStatus.SUCCESS


COMMAND = Command(
    name="results", help="the trials, best first", run=run,
    arguments=(
        JOB,
        arg("--format", choices=("table", "csv", "json"), default="table",
            help="table (default), csv (as results.csv) or json (as results.json)"),
    ))
