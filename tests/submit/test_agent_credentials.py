"""Who the job reads its agents as: ``--agent-principal``/``--agent-secret-file``, by default
the framework's ``--principal``/``--secret-file``; only the principal is recorded, so
``da-job resume`` asks for the secret again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from disauto.framework import _meta as meta
from disauto.submit.cli import main
from disauto.submit.exit_status import ExitStatus
from disauto.submit.parser import build_parser
from disauto.submit.resume import submission_of
from disauto.submit.validate import validate
from tests.submit.test_cli import argv as base_argv


def _validated(*extra: str) -> Any:
    return validate(build_parser().parse_args([*base_argv(), *extra]))


def test_the_agents_are_read_as_the_framework_by_default(files: Path) -> None:
    (files / "secret").write_text("s3cret\n")
    same = _validated("--principal", "alice", "--secret-file", "secret")
    assert (same.agent_principal, same.agent_secret) == ("alice", "s3cret")
    none = _validated()
    assert (none.agent_principal, none.agent_secret) == (None, None)


def test_another_principal_for_the_agents(files: Path) -> None:
    (files / "secret").write_text("s3cret\n")
    (files / "reader").write_text("r-secret\n")
    other = _validated("--principal", "alice", "--secret-file", "secret",
                       "--agent-principal", "reader", "--agent-secret-file", "reader")
    assert (other.agent_principal, other.agent_secret) == ("reader", "r-secret")
    only_agents = _validated("--agent-principal", "reader", "--agent-secret-file", "reader")
    assert (only_agents.principal, only_agents.agent_principal) == (None, "reader")


@pytest.mark.parametrize(("extra", "said"), [
    (("--agent-principal", "reader"), "--agent-principal needs --agent-secret-file"),
    (("--agent-secret-file", "reader"), "--agent-secret-file needs --agent-principal"),
    (("--agent-principal", "reader", "--agent-secret-file", "missing"), "--agent-secret-file"),
])
def test_incomplete_agent_credentials_are_one_line_errors(
        files: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...],
        said: str) -> None:
    (files / "reader").write_text("r-secret\n")
    assert main([*base_argv(), *extra]) == ExitStatus.USAGE
    first = capsys.readouterr().err.strip().splitlines()[0]
    assert first.startswith("da-submit: error: ") and said in first


class _Recorded:
    """A job as ``da-job`` reads it: its config and meta."""

    def __init__(self, config: Any, **values: str) -> None:
        self.job_id = "job-1"
        self.config = config
        self.meta = {meta.PRINCIPAL: "", meta.AGENT_PRINCIPAL: "",
                     meta.SUBMITTED_MASTER: "10.0.0.1:5050", meta.MASTER: "",
                     meta.OFFER_POLICY: "fifo", meta.ADVERTISE_HOST: "", meta.BIND_ALL: False,
                     meta.LOCAL_AGENTS: 1}
        for name, value in values.items():
            self.meta[getattr(meta, name.upper())] = value


def test_resume_asks_for_the_agents_secret_when_not_the_frameworks(files: Path) -> None:
    (files / "secret").write_text("s3cret\n")
    (files / "reader").write_text("r-secret\n")
    config = _validated().config
    same = _Recorded(config, principal="alice", agent_principal="alice")
    resumed = submission_of(same, "secret")  # type: ignore[arg-type]
    assert (resumed.agent_principal, resumed.agent_secret) == ("alice", "s3cret")
    other = _Recorded(config, principal="alice", agent_principal="reader")
    with pytest.raises(ValueError, match="reads its agents as 'reader': give --agent-secret"):
        submission_of(other, "secret")  # type: ignore[arg-type]
    resumed = submission_of(other, "secret", "reader")  # type: ignore[arg-type]
    assert (resumed.agent_principal, resumed.agent_secret) == ("reader", "r-secret")
