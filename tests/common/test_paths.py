"""Where jobs live: $DISAUTO_HOME, or ~/.disauto."""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.common import paths


def test_home_from_the_environment_or_the_default(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    monkeypatch.setenv("DISAUTO_HOME", str(tmp_path / "h"))
    assert paths.disauto_home() == tmp_path / "h"
    assert paths.job_dir("j-1") == tmp_path / "h" / "jobs" / "j-1"
    monkeypatch.delenv("DISAUTO_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert paths.disauto_home() == tmp_path / ".disauto"
    assert paths.jobs_dir() == tmp_path / ".disauto" / "jobs"


def test_a_relative_home_is_taken_from_the_current_directory_and_pinned(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 40: a relative $DISAUTO_HOME named another folder in every process that ran
    elsewhere (a warm slot's executor, in its sandbox, failed every trial)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DISAUTO_HOME", "rel-home")
    assert paths.disauto_home() == tmp_path / "rel-home"
    paths.pin_disauto_home()
    assert paths.os.environ["DISAUTO_HOME"] == str(tmp_path / "rel-home")
    monkeypatch.chdir("/")
    assert paths.disauto_home() == tmp_path / "rel-home"


def test_pinning_leaves_an_unset_home_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISAUTO_HOME", raising=False)
    paths.pin_disauto_home()
    assert "DISAUTO_HOME" not in paths.os.environ
