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
