"""da-submit's flags for a production cluster: --role and --unreachable-timeout (issue 28)."""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.framework.spec import DEFAULT_UNREACHABLE_TIMEOUT
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
