"""Shared set-up of the da-submit tests: a folder with a script and a parameter file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``train.py`` and ``params.json`` in the working folder; ``$DISAUTO_HOME`` under it."""
    (tmp_path / "train.py").write_text("print('hi')\n")
    (tmp_path / "params.json").write_text(json.dumps({"parameters": [
        {"name": "lr", "type": "bound", "value": [0.001, 0.1], "log": True},
        {"name": "bs", "type": "number", "value": [32, 64]},
    ]}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DISAUTO_HOME", str(tmp_path / "home"))
    return tmp_path
