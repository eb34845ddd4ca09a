"""``da-job``'s table of commands: the parser, its help and the dispatch come from it; a
mistyped command or flag gets the nearest one ("did you mean")."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from disauto.submit.exit_status import ExitStatus
from disauto.submit.job_cli import COMMANDS
from disauto.submit.job_cli import build_parser
from disauto.submit.job_cli import listing
from disauto.submit.job_cli import table
from tests.submit.job_cli.conftest import DaJob


def test_every_command_of_the_table_is_in_the_help() -> None:
    help_text = build_parser().format_help()
    for command in COMMANDS:
        assert f"    {command.name.ljust(8)}  {command.help}" in help_text
    assert len({command.name for command in COMMANDS}) == len(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_every_argument_has_a_help_text(command: table.Command) -> None:
    sub = build_parser().commands[command.name]  # type: ignore[attr-defined]
    text = sub.format_help()
    for argument in command.arguments:
        assert argument.help.strip(), argument.flags
        assert " ".join(argument.help.split()[:3]) in " ".join(text.split())


def test_job_and_format_say_what_they_are() -> None:
    text = " ".join(build_parser().commands["results"].format_help().split())  # type: ignore
    assert "JOB a job id, or any unique start of one (da-job list shows them)" in text
    assert ("table (default), csv (as results.csv), json (as results.json) or parquet (the "
            "CSV's columns, typed; needs -o and pyarrow: pip install 'disauto[dataframe]')"
            ) in text


def test_a_mistyped_command_names_the_nearest(da_job: DaJob) -> None:
    assert da_job("stauts", "x") == (2, "", "da-job: error: unknown command 'stauts' (did you "
                                            "mean status?)\n")
    assert da_job("lst")[2] == "da-job: error: unknown command 'lst' (did you mean list?)\n"
    assert da_job("zzzz")[2] == ("da-job: error: unknown command 'zzzz' (da-job --help lists "
                                 "the commands)\n")
    assert da_job() == (2, "", "da-job: error: a command is needed (da-job --help lists them)\n")


def test_a_mistyped_flag_names_the_nearest_of_its_command(da_job: DaJob) -> None:
    assert da_job("status", "x", "--jsn")[2] == ("da-job: error: unrecognized arguments: --jsn "
                                                 "(did you mean --json?)\n")
    assert da_job("update", "x", "--paralelism", "3")[2] == (
        "da-job: error: unrecognized arguments: --paralelism 3 (did you mean --parallelism?)\n")
    assert da_job("results", "x", "--format", "jsn")[2] == (
        "da-job: error: argument --format: invalid choice 'jsn' (did you mean json?)\n")
    assert da_job("list", "--nothing-like-it")[2] == (
        "da-job: error: unrecognized arguments: --nothing-like-it\n")


def test_the_table_dispatches_to_the_commands_function(home: Path) -> None:
    out = io.StringIO()
    assert table.run(["list"], out) == ExitStatus.SUCCESS
    said = out.getvalue()
    assert said.startswith("no jobs under /") and said.endswith("/home/jobs\n")
    assert table.BY_NAME["list"].run is listing.run
