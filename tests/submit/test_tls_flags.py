"""--tls, --tls-cert/--tls-key and --bind-all: checked before anything starts, one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.common.certificates import generate
from disauto.submit.cli import main
from disauto.submit.exit_status import ExitStatus
from disauto.submit.parser import build_parser
from disauto.submit.run import bind_host
from disauto.submit.validate import validate
from tests.submit.test_cli import argv as base_argv


def argv(*extra: str) -> list[str]:
    """The standard flags plus ``extra`` as given (switches included)."""
    return [*base_argv(), *extra]


def pair(folder: Path, name: str) -> tuple[str, str]:
    identity = generate(name)
    (folder / f"{name}.crt").write_bytes(identity.cert_pem)
    (folder / f"{name}.key").write_bytes(identity.key_pem)
    return str(folder / f"{name}.crt"), str(folder / f"{name}.key")


def one_line_error(capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    assert main(argv(*extra)) == ExitStatus.USAGE
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("da-submit: error: ") and lines[1:] in ([], [
        "Try 'da-submit --help' for help."]), lines
    return lines[0]


def test_a_mismatched_pair_is_a_one_line_error(files: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    cert, _ = pair(files, "one")
    _, key = pair(files, "two")
    err = one_line_error(capsys, "--tls-cert", cert, "--tls-key", key)
    assert "is not the key of the certificate" in err
    assert not (files / "home" / "jobs").exists()  # nothing was started or recorded


def test_a_missing_certificate_is_a_one_line_error(files: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _, key = pair(files, "one")
    assert "no such file" in one_line_error(capsys, "--tls-cert", "nope.crt", "--tls-key", key)


def test_a_certificate_needs_its_key(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cert, _ = pair(files, "one")
    assert "go together" in one_line_error(capsys, "--tls-cert", cert)


def test_bind_all_is_refused_in_local_mode(files: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert "127.0.0.1 only" in one_line_error(capsys, "--bind-all")


def test_the_tls_choice_and_the_binding(files: Path) -> None:
    cert, key = pair(files, "node-1.example")
    own = validate(build_parser().parse_args(argv("--tls-cert", cert, "--tls-key", key)))
    assert own.tls is not None and own.tls.identity is not None
    assert own.tls.identity.server_name == "node-1.example"
    made = validate(build_parser().parse_args(argv("--tls")))
    assert made.tls is not None and made.tls.identity is None
    assert validate(build_parser().parse_args(argv())).tls is None
    assert bind_host(made) == "127.0.0.1"
    cluster = validate(build_parser().parse_args(argv("--master", "10.0.0.1:5050")))
    assert bind_host(cluster) is None  # the advertised address, AppCore its agent's name
    everywhere = validate(build_parser().parse_args(
        argv("--master", "10.0.0.1:5050", "--bind-all")))
    assert bind_host(everywhere) == "0.0.0.0"  # noqa: S104
