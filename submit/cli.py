"""``da-submit``: submit a hyperparameter-search job to a Mesos cluster (or the embedded one).

    da-submit --app-name mnist --files train.py --app-runner-launch-cmd "python train.py" \\
      --app-runner-cpus 4 --app-runner-memory 5G --app-core-cpus 1 --app-core-memory 1G \\
      --trail-steps 200 --tuning-type random-search --tuning-parameters params.json

Everything is validated before the cluster is touched. The job runs in this process (the
framework is here); a progress line shows while it runs, a table of trials at the end, and the
results are written to ``$DISAUTO_HOME/jobs/<job-id>/results.{json,csv}``.
"""

from __future__ import annotations

from collections.abc import Sequence
import sys

from disauto.common import paths
from disauto.submit.errors import DisAutoUsageError
from disauto.submit.exit_status import ExitStatus
from disauto.submit.job_lock import JobLockedError
from disauto.submit.parser import PROG
from disauto.submit.parser import UsageError
from disauto.submit.parser import build_parser
from disauto.submit.run import detach
from disauto.submit.run import run
from disauto.submit.validate import validate


def main(argv: Sequence[str] | None = None) -> int:
    """The da-submit console script."""
    paths.pin_disauto_home()
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
        submission = validate(args)
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        print(f"Try '{PROG} --help' for help.", file=sys.stderr)
        return ExitStatus.USAGE
    except DisAutoUsageError as error:  # the parameter file
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return ExitStatus.USAGE
    try:
        if submission.detach:
            argv_child = [a for a in args_list if a != "--detach"]
            return detach(submission.config.job_id,
                          ["-m", "disauto.submit.cli", *argv_child, "--job-id",
                           submission.config.job_id], sys.stdout)
        return run(submission, sys.stdout, sys.stderr)
    except JobLockedError as error:  # --detach with a --job-id that another process runs
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return ExitStatus.USAGE
    except Exception as error:  # noqa: BLE001 - the one error funnel
        if debug:
            raise
        print(f"{PROG}: error: {error} (run with --debug for details)", file=sys.stderr)
        return ExitStatus.ERROR


if __name__ == "__main__":
    sys.exit(main())
