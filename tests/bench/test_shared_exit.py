"""The shared-cluster exit benchmark, run small: two jobs of two trials on one da-cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.shared_exit import run


pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_each_job_is_measured_from_its_end_to_its_exit(tmp_path: Path) -> None:
    figures = run(jobs=2, trials=2, work=tmp_path)
    assert len(figures) == 2
    for lag, ran in figures:
        assert 0.0 <= lag < 60.0 and ran > 0.0, figures
