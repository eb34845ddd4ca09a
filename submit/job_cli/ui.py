"""``da-job ui``: every job's page, served from the records (:mod:`disauto.submit.ui`)."""

from __future__ import annotations

import argparse
from typing import IO

from disauto.submit.exit_status import ExitStatus
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.base import arg


def run(args: argparse.Namespace, out: IO[str]) -> ExitStatus:
    from disauto.submit.ui import serve

    if not 0 <= args.port <= 65535:
        raise JobCommandError(f"--port must be 0-65535, got {args.port}")
    try:
        serve(args.host, args.port, out, open_browser=args.open)
    except OSError as error:
        raise JobCommandError(f"cannot serve on {args.host}:{args.port}: {error}",
                              ExitStatus.ERROR) from None
    return ExitStatus.SUCCESS


COMMAND = Command(
    name="ui", help="serve every job's page, from the records, to a browser", run=run,
    description="Serve every job under $DISAUTO_HOME (an index, then each job's page, as the "
                "framework serves it while the job runs) until Ctrl-C, and print the address "
                "to open in a browser; --open opens it.",
    arguments=(
        arg("--open", action="store_true",
            help="also open the address in this machine's web browser ($BROWSER, else the "
                 "desktop's)"),
        arg("--port", type=int, default=0, metavar="N",
            help="the port to listen on (default: any free one, printed)"),
        arg("--host", default="127.0.0.1", metavar="H",
            help="the address to listen on (default 127.0.0.1: this machine only)"),
    ))
