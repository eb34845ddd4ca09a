"""``da-job``: list, inspect, compare, follow, change, stop and resume DisAuto jobs from any
shell; export them to keep or move, import them, remove them.

Each command is a module of this package with its entry in the table of commands
(:data:`~disauto.submit.job_cli.table.COMMANDS`: name, help, arguments, function); the parser,
``da-job --help`` and the dispatch come from that table, so ``da-job --help`` is the list of
commands. JOB is a job id or any unique prefix of one. Every error is one line and a documented
exit status (:class:`~disauto.submit.exit_status.ExitStatus`).
"""

from __future__ import annotations

from collections.abc import Sequence
import csv
import os
import sys

from disauto.common import paths
from disauto.submit.exit_status import ExitStatus
from disauto.submit.job_cli.base import PROG
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.table import COMMANDS
from disauto.submit.job_cli.table import build_parser
from disauto.submit.job_cli.table import run
from disauto.submit.jobs import JobLookupError


__all__ = ["COMMANDS", "PROG", "JobCommandError", "build_parser", "main", "run"]


def main(argv: Sequence[str] | None = None) -> int:
    """The da-job console script: one error funnel, one line per error."""
    paths.pin_disauto_home()
    try:
        return run(list(sys.argv[1:] if argv is None else argv), sys.stdout)
    except JobLookupError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return ExitStatus.USAGE
    except JobCommandError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return error.status
    except KeyboardInterrupt:
        return ExitStatus.CTRL_C
    except BrokenPipeError:  # `da-job results JOB | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitStatus.SUCCESS
    except (OSError, ValueError, csv.Error) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return ExitStatus.ERROR
