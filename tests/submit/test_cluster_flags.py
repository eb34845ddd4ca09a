"""da-submit's flags for a production cluster: --role and --unreachable-timeout (issue 28)."""

from __future__ import annotations

import os
from pathlib import Path
import pwd

import pytest

from disauto.framework._spec import DEFAULT_UNREACHABLE_TIMEOUT
from disauto.submit.cli import main
from disauto.submit.exit_status import ExitStatus
from disauto.submit.parser import build_parser
from disauto.submit.validate import validate
from tests.submit.test_cli import argv


def test_roles_are_in_the_job_config_and_kept_by_its_record(files: Path) -> None:
    config = validate(build_parser().parse_args(
        [*argv(), "--role", "ml", "--role", "eng/vision"])).config
    assert config.roles == ("ml", "eng/vision")
    assert config.subscribed_roles == ("ml", "eng/vision")
    assert type(config).from_json(config.to_json()) == config  # resume keeps them


def test_without_a_role_the_job_runs_in_the_default_role(files: Path) -> None:
    config = validate(build_parser().parse_args(argv())).config
    assert config.roles == () and config.subscribed_roles == ("*",)
    assert config.unreachable_timeout == DEFAULT_UNREACHABLE_TIMEOUT == 300.0


def test_unreachable_timeout_is_a_duration(files: Path) -> None:
    config = validate(build_parser().parse_args(
        [*argv(), "--unreachable-timeout", "90s"])).config
    assert config.unreachable_timeout == 90.0
    assert type(config).from_json(config.to_json()) == config


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--role", "ml", "--role", "ml"), "--role: role 'ml' is given twice"),
        (("--role", "/ml"), "--role: role '/ml' cannot start with a slash"),
        (("--role", "ml/"), "--role: role 'ml/' cannot end with a slash"),
        (("--role", "a//b"), "two adjacent slashes"),
        (("--role", "eng/.."), "cannot include '..' as a component"),
        (("--role", "eng/*"), "cannot include '*' as a component"),
        (("--role=-ml",), "starts with a dash"),
        (("--role", "m l"), "contains whitespace"),
        (("--role", ""), "role names cannot be the empty string"),
        (("--unreachable-timeout", "soon"), "--unreachable-timeout: invalid duration"),
        (("--unreachable-timeout", "0"), "must be greater than zero"),
    ],
)
def test_bad_cluster_flags_are_one_line_errors(files: Path, capsys: pytest.CaptureFixture[str],
                                               extra: tuple[str, ...], message: str) -> None:
    code = main([*argv(), *extra])
    captured = capsys.readouterr()
    assert code == ExitStatus.USAGE
    first = captured.err.splitlines()[0]
    assert first.startswith("da-submit: error: ") and message in first, first
    assert "Traceback" not in captured.err
    assert not (files / "home").exists(), "nothing may be started or recorded"


def test_the_task_user_is_the_submitters_own_unless_given(
        files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The process's own user (its passwd entry), not a LOGNAME it inherited (sudo keeps
    one): agents that switch user would run the tasks as that name."""
    monkeypatch.setenv("LOGNAME", "alice")
    config = validate(build_parser().parse_args(argv())).config
    assert config.user == pwd.getpwuid(os.getuid()).pw_name  # recorded: a resume keeps it
    config = validate(build_parser().parse_args([*argv(), "--user", "nobody"])).config
    assert config.user == "nobody"
    assert type(config).from_json(config.to_json()) == config  # da-job resume keeps it


@pytest.mark.parametrize("name", ["nobody", "svc.ml-runner", "ml_1", "john@corp.example",
                                  "HOST$"])
def test_user_names_as_systems_spell_them_are_taken(files: Path, name: str) -> None:
    assert validate(build_parser().parse_args([*argv(), "--user", name])).config.user == name


@pytest.mark.parametrize(("name", "message"), [
    ("", "--user: '' is not a user name"),
    ("bad name", "--user: 'bad name' is not a user name: letters, digits"),
    ("-x", "--user: '-x' is not a user name"),
    ("a/b", "--user: 'a/b' is not a user name"),
    ("x" * 257, "at most 256 characters"),
    ("1000", "--user: '1000' is a uid; give the user's name"),
])
def test_a_bad_user_is_one_line(files: Path, capsys: pytest.CaptureFixture[str], name: str,
                                message: str) -> None:
    assert main([*argv(), f"--user={name}"]) == ExitStatus.USAGE
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first.startswith("da-submit: error: ") and message in first, first
    assert "Traceback" not in err
