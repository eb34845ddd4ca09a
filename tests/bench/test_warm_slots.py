"""The warm-slot benchmark's arithmetic (no system is run here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.warm_slots import Result
from bench.warm_slots import _measured
from bench.warm_slots import _spans


def test_ideal_efficiency_and_overhead_per_slot() -> None:
    result = Result("disauto-warm", parallelism=8, seconds=1.0, trials=64, wall=8.8)
    assert result.ideal == 8.0
    assert result.efficiency == pytest.approx(8.0 / 8.8)
    assert result.overhead == pytest.approx(0.1)  # 0.8 s over 8 trials per slot
    assert result.row().startswith("| disauto-warm | 8 | 1 | 8.80 | 8.00 | 0.909 | 0.100 |")
    assert "not installed" in Result("ray-tune", 8, 1.0, 64, note="not installed").row()


def test_wall_runs_from_the_first_beginning_to_the_last_end(tmp_path: Path) -> None:
    times = tmp_path / "times.txt"
    times.write_text("10.0 11.2\n10.1 11.3\n11.3 12.6\n")
    measured = _measured(_spans(times, 3), seconds=1.0)
    assert measured["wall"] == pytest.approx(2.6)
    assert measured["in_trial"] == pytest.approx((1.2 + 1.2 + 1.3) / 3 - 1.0)
    times.write_text("1 2\n3 4\n")
    with pytest.raises(RuntimeError, match="2 trials recorded their times, not 3"):
        _spans(times, 3)
