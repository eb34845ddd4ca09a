"""``da-job``'s commands, declared once: the parser, ``da-job --help`` and the dispatch all come
from :data:`COMMANDS`.

A new command is a module of this package that defines its ``COMMAND`` (name, help, arguments,
function; ``logs.py`` is one to copy) and one line below; its tests are
``tests/submit/job_cli/test_<name>.py``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from disauto.submit import suggest
from disauto.submit.exit_status import ExitStatus
from disauto.submit.job_cli.base import PROG
from disauto.submit.job_cli.base import Command
from disauto.submit.job_cli.base import JobCommandError
from disauto.submit.job_cli.compare import COMMAND as COMPARE
from disauto.submit.job_cli.export import COMMAND as EXPORT
from disauto.submit.job_cli.importing import COMMAND as IMPORT
from disauto.submit.job_cli.kill import COMMAND as KILL
from disauto.submit.job_cli.listing import COMMAND as LISTING
from disauto.submit.job_cli.logs import COMMAND as LOGS
from disauto.submit.job_cli.results import COMMAND as RESULTS
from disauto.submit.job_cli.resume import COMMAND as RESUME
from disauto.submit.job_cli.rm import COMMAND as RM
from disauto.submit.job_cli.status import COMMAND as STATUS
from disauto.submit.job_cli.ui import COMMAND as UI
from disauto.submit.job_cli.update import COMMAND as UPDATE


COMMANDS: tuple[Command, ...] = (
    LISTING,
    STATUS,
    LOGS,
    RESULTS,
    COMPARE,
    KILL,
    UPDATE,
    RESUME,
    RM,
    EXPORT,
    IMPORT,
    UI,
)
BY_NAME = {command.name: command for command in COMMANDS}

DESCRIPTION = ("List, inspect, compare, follow, change, stop and resume DisAuto jobs; keep "
               "them (export, import) or remove them.")
EPILOG = ("JOB is a job id or any unique start of one. Every error is one line; exit 0 done, "
          "1 an error, 2 bad arguments or no such job, 3 master unreachable. "
          "`da-job COMMAND --help` describes a command. Docs: README.md.")


class _Parser(argparse.ArgumentParser):
    """argparse, its errors one line with the nearest flag or command ("did you mean")."""

    def error(self, message: str) -> Any:
        if message.endswith("the following arguments are required: COMMAND"):
            raise JobCommandError(f"a command is needed ({PROG} --help lists them)")
        raise JobCommandError(suggest.invalid_choice(self, message, "command",
                                                      f"{PROG} --help lists the commands")
                              if "argument COMMAND:" in message
                              else suggest.invalid_choice(self, message))


class _TopParser(_Parser):
    """The parser of ``da-job`` itself: an unknown flag is matched against its command's."""

    commands: dict[str, argparse.ArgumentParser]

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = self.commands.get(getattr(parsed, "command", None) or "", self)
            self.error(suggest.unrecognized(extras, suggest.option_strings(command)))
        return parsed


def build_parser() -> argparse.ArgumentParser:
    """``da-job``'s parser, every command's subparser from its entry in :data:`COMMANDS`."""
    parser = _TopParser(prog=PROG, description=DESCRIPTION, epilog=EPILOG)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                       parser_class=_Parser, title="commands")
    parser.commands = {}
    for command in COMMANDS:
        sub = subparsers.add_parser(command.name, help=command.help,
                                    description=command.description or command.help)
        groups: dict[str, Any] = {}
        for argument in command.arguments:
            target: Any = sub
            if argument.exclusive:
                if argument.exclusive not in groups:
                    groups[argument.exclusive] = sub.add_mutually_exclusive_group()
                target = groups[argument.exclusive]
            target.add_argument(*argument.flags, help=argument.help, **argument.options)
        parser.commands[command.name] = sub
    return parser


def run(argv: Sequence[str], out: Any) -> ExitStatus:
    """Parse ``argv`` and run its command, writing to ``out``.

    Raises:
        JobCommandError: bad arguments, or what the command could not do (one line).
        JobLookupError: no such job, or several.
    """
    args = build_parser().parse_args(list(argv))
    return BY_NAME[args.command].run(args, out)
